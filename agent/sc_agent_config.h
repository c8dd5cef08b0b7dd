/* sc_agent_config: the agent's settings — one typed table (common/sc_config.h) that is both
 * the command line and the config file (the member list: proto/sc_members.h).
 *
 *   schedcoord-agent --imds-url URL --members NAME=HOST:PORT,... --state-dir DIR
 *       --prepare-hook PATH --recover-hook PATH [--name NAME] [--hook-timeout S]
 *       [--poll-interval S] [--standalone-after S] [--standalone-approve]
 *       [--freeze-threshold-s S]
 *       [--insecure | --key FILE --keys FILE] [--config FILE]
 */
#ifndef SC_AGENT_CONFIG_H
#define SC_AGENT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "sc_members.h"
#include "sc_msg.h"

typedef struct sc_agent_settings {
    char *imds_url;            /* IMDS base URL, "/metadata/..." is appended */
    char *api_version;         /* scheduled events api-version */
    char *members;             /* NAME=HOST:PORT,... (the coordinators of the set) */
    char *state_dir;           /* directory of agent.db */
    char *prepare_hook;        /* executable run for the prepare phase */
    char *recover_hook;        /* executable run for the recover phase */
    char *name;                /* this VM's member name (default: compute metadata name) */
    double hook_timeout;       /* seconds before a hook's process group is killed */
    double poll_interval;      /* seconds between two IMDS polls */
    double standalone_after;   /* seconds without a leader before the safety net may act */
    bool standalone_approve;   /* the safety net may POST approvals itself */
    double freeze_threshold_s; /* Freeze shorter than this: no drain (the policy's key) */
    double safety_margin;      /* seconds added to hook-timeout for the safety net */
    double heartbeat_interval; /* seconds between two heartbeats */
    long voters;               /* --voters: the coordinators' election voters we report to (0:
                                  the default choice; 1, 3, 5, 7), as the coordinators' */
    bool insecure;             /* plain-text ZeroMQ (no CURVE) */
    char *key;                 /* this VM's key pair file */
    char *keys;                /* keyring file: NAME PUBLIC per member */
    char *log_level;           /* debug, info, notice, warn, err */
    double imds_timeout;       /* seconds of one IMDS request */
    double imds_first_timeout; /* seconds of the scheduled-events requests until one succeeds */
} sc_agent_settings_t;

/* Parses argv (and --config FILE) into *s (zeroed by the caller; sc_agent_settings_free it
 * on every return). 0, 1 when --help was printed to out, SC_E_CONFIG with a message naming
 * the key and the expected form in err (also for cross-key rules: --insecure with --key,
 * neither, a bad --log-level...). */
int sc_agent_settings_parse(sc_agent_settings_t *s, int argc, char **argv, FILE *out, char *err,
                            size_t errlen);
/* Frees the strings of *s. */
void sc_agent_settings_free(sc_agent_settings_t *s);

#endif
