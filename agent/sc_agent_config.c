/* sc_agent_config: the agent's settings table. */
#include "sc_agent_config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sc_config.h"
#include "sc_net.h"
#include "sc_error.h"
#include "sc_log.h"

#define S_OFF(f) offsetof(sc_agent_settings_t, f)

static const sc_cfg_key_t s_keys[] = {
    {"imds-url", SC_CFG_STRING, S_OFF(imds_url), NULL,
     "IMDS base URL (e.g. http://169.254.169.254)", 0, 0, true},
    {"api-version", SC_CFG_STRING, S_OFF(api_version), "2020-07-01", "scheduled events api-version",
     0, 0, false},
    {"members", SC_CFG_STRING, S_OFF(members), NULL,
     "every member and its coordinator endpoint: NAME=HOST:PORT,...", 0, 0, true},
    {"state-dir", SC_CFG_STRING, S_OFF(state_dir), NULL,
     "directory of the agent's state (agent.db)", 0, 0, true},
    {"prepare-hook", SC_CFG_STRING, S_OFF(prepare_hook), NULL,
     "executable run to prepare this VM for an event", 0, 0, true},
    {"recover-hook", SC_CFG_STRING, S_OFF(recover_hook), NULL,
     "executable run to bring this VM back after an event", 0, 0, true},
    {"name", SC_CFG_STRING, S_OFF(name), NULL,
     "this VM's member name (default: name of the compute metadata)", 0, 0, false},
    {"hook-timeout", SC_CFG_SECONDS, S_OFF(hook_timeout), "300",
     "seconds before a hook's process group is killed", 1, 86400, false},
    {"poll-interval", SC_CFG_SECONDS, S_OFF(poll_interval), "1", "seconds between IMDS polls", 0,
     3600, false},
    {"standalone-after", SC_CFG_SECONDS, S_OFF(standalone_after), "30",
     "seconds without a leader before the safety net may run the hooks itself", 0, 86400, false},
    {"standalone-approve", SC_CFG_BOOL, S_OFF(standalone_approve), "false",
     "let the safety net approve the event itself once THIS VM is prepared. Trade-off: one "
     "approval starts the event for every VM in its Resources, neighbours still preparing or "
     "cut off too (safety rule 1 is broken); without it the event starts at NotBefore, when "
     "each VM's own safety net had its time to prepare",
     0, 0, false},
    {"freeze-threshold-s", SC_CFG_SECONDS, S_OFF(freeze_threshold_s), "9",
     "the coordinator's policy key, read by the safety net: a Freeze with 0 <= "
     "DurationInSeconds below this is not prepared (put it before any section of a shared "
     "file, so that both programs read the same value)",
     0, 3600, false},
    {"safety-margin", SC_CFG_SECONDS, S_OFF(safety_margin), "30",
     "seconds added to hook-timeout: the safety net prepares when NotBefore is that close", 0,
     86400, false},
    {"heartbeat-interval", SC_CFG_SECONDS, S_OFF(heartbeat_interval), "5",
     "seconds between heartbeats to each voter: liveness only, not on the failover path (the "
     "coordinators' --dead-after is three of these)",
     0, 3600, false},
    {"voters", SC_CFG_INT, S_OFF(voters), "0",
     "the coordinators' voters, the only ones this agent reports to (the leader is one): 1, 3, "
     "5 or 7, chosen from --members as the coordinators choose them (0: 3, or 5 when the "
     "members span 5 fault domains); give both programs the same value",
     0, 7, false},
    {"insecure", SC_CFG_BOOL, S_OFF(insecure), "false",
     "plain-text ZeroMQ without CURVE (single-machine demo only)", 0, 0, false},
    {"key", SC_CFG_STRING, S_OFF(key), NULL, "this VM's CURVE key pair file (schedcoordctl keygen)",
     0, 0, false},
    {"keys", SC_CFG_STRING, S_OFF(keys), NULL, "keyring file: one \"NAME PUBLIC\" per member", 0, 0,
     false},
    {"log-level", SC_CFG_STRING, S_OFF(log_level), "info", "debug, info, notice, warn or err", 0, 0,
     false},
    {"imds-timeout", SC_CFG_SECONDS, S_OFF(imds_timeout), "5", "seconds of one IMDS request", 0, 60,
     false},
    {"imds-first-timeout", SC_CFG_SECONDS, S_OFF(imds_first_timeout), "120",
     "seconds of the scheduled-events requests until one succeeds: IMDS enables the service on "
     "the first one and may take up to two minutes to answer it (never shorter than "
     "imds-timeout; SIGTERM still stops the agent at once)",
     0, 600, false},
};

#define S_NKEYS (sizeof(s_keys) / sizeof(s_keys[0]))

static const char s_usage[] =
    "schedcoord-agent --imds-url URL --members NAME=HOST:PORT,... --state-dir DIR "
    "--prepare-hook PATH --recover-hook PATH [--name NAME] [--hook-timeout S] "
    "[--poll-interval S] [--standalone-after S] [--standalone-approve] [--freeze-threshold-s S] "
    "[--insecure | --key FILE --keys FILE] [--config FILE: keys before any section and under "
    "[agent]]";

/* YYYY-MM-DD: it goes into the query string of every IMDS request. */
static bool s_api_version_valid(const char *v)
{
    if (!v || strlen(v) != 10)
        return false;
    for (int i = 0; i < 10; i++)
        if (i == 4 || i == 7 ? v[i] != '-' : (v[i] < '0' || v[i] > '9'))
            return false;
    return true;
}

/* A hook must be an executable regular file when the agent starts (it is checked again, and
 * reported as failed, at each run: an operator may break it later). */
static int s_hook_check(const char *key, const char *path, char *err, size_t errlen)
{
    struct stat sb;

    if (stat(path, &sb) != 0)
        return sc_errf(err, errlen, SC_E_CONFIG, "--%s: %s: %s (expected an executable file)", key,
                       path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return sc_errf(err, errlen, SC_E_CONFIG,
                       "--%s: %s is not a regular file (expected an executable file)", key, path);
    if (access(path, X_OK) != 0)
        return sc_errf(err, errlen, SC_E_CONFIG,
                       "--%s: %s is not executable (expected an executable file)", key, path);
    return 0;
}

int sc_agent_settings_parse(sc_agent_settings_t *s, int argc, char **argv, FILE *out, char *err,
                            size_t errlen)
{
    sc_log_level_t lvl;
    sc_member_spec_t *members = NULL;
    size_t n = 0;
    int rc =
        sc_config_parse_section(s_keys, S_NKEYS, s, argc, argv, out, s_usage, "agent", err, errlen);

    if (rc != 0)
        return rc;
    if (sc_log_level_parse(s->log_level, &lvl) != 0)
        return sc_errf(err, errlen, SC_E_CONFIG,
                       "--log-level: \"%s\" is not a level (expected debug, info, notice, warn "
                       "or err)",
                       s->log_level);
    if (s->poll_interval < 0.05)
        return sc_errf(err, errlen, SC_E_CONFIG,
                       "--poll-interval: %s must be at least 0.05 seconds", "");
    if (s->voters != 0 && s->voters != 1 && s->voters != 3 && s->voters != 5 && s->voters != 7)
        return sc_errf(err, errlen, SC_E_CONFIG,
                       "--voters %ld: expected 1, 3, 5 or 7 (0: the default)", s->voters);
    if (s->heartbeat_interval < 0.05)
        return sc_errf(err, errlen, SC_E_CONFIG,
                       "--heartbeat-interval: %s must be at least 0.05 seconds", "");
    if (strncmp(s->imds_url, "http://", 7) != 0 && strncmp(s->imds_url, "https://", 8) != 0)
        return sc_errf(err, errlen, SC_E_CONFIG,
                       "--imds-url: \"%s\" is not an http:// or https:// URL", s->imds_url);
    if (!s_api_version_valid(s->api_version))
        return sc_errf(err, errlen, SC_E_CONFIG,
                       "--api-version: \"%.64s\" is not an api-version (expected "
                       "YYYY-MM-DD, e.g. 2020-07-01)",
                       s->api_version);
    if (s->name && !sc_msg_name_valid(s->name))
        return sc_errf(err, errlen, SC_E_CONFIG,
                       "--name: \"%s\" is not a member name (expected 1..128 of [A-Za-z0-9._-])",
                       s->name);
    if (s->insecure && (s->key || s->keys))
        return sc_errf(err, errlen, SC_E_CONFIG,
                       "--insecure: %scannot be combined with --key / --keys", "");
    if (!s->insecure && (!s->key || !s->keys))
        return sc_errf(err, errlen, SC_E_CONFIG,
                       "--key/--keys: %sboth are required unless --insecure (expected --key FILE "
                       "--keys FILE)",
                       "");
    if ((rc = s_hook_check("prepare-hook", s->prepare_hook, err, errlen)) != 0 ||
        (rc = s_hook_check("recover-hook", s->recover_hook, err, errlen)) != 0)
        return rc;
    rc = sc_members_parse(s->members, &members, &n, err, errlen);
    for (size_t i = 0; rc == 0 && s->insecure && i < n; i++)
        if (!sc_endpoint_is_local(members[i].endpoint))
            rc = sc_errf(err, errlen, SC_E_CONFIG,
                         "--insecure: member %s's endpoint %s is not on this machine (plain text "
                         "is for a single-machine demo only; use --key FILE --keys FILE)",
                         members[i].name, members[i].endpoint);
    free(members);
    return rc;
}

void sc_agent_settings_free(sc_agent_settings_t *s)
{
    if (s)
        sc_config_free(s_keys, S_NKEYS, s);
}
