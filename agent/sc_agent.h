/* sc_agent: the agent daemon's logic — IMDS polling, reports to the coordinators, orders,
 * hooks, durable state and the standalone safety net — as a library, so that tests drive it
 * without a process (main.c is only flags, signals and sc_agent_run).
 *
 * One agent talks to every coordinator of --members through one DEALER socket each (CURVE
 * client unless --insecure, ZMQ_IMMEDIATE so nothing is queued for a coordinator that is not
 * connected). A socket monitor tells when a coordinator's handshake succeeds: the agent then
 * sends hello, its current document and its recent hook runs, so a restarted coordinator
 * learns everything again. Every report goes to every connected coordinator; answers
 * (approve_result, nack) go to the sender. */
#ifndef SC_AGENT_H
#define SC_AGENT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sc_agent_config.h"
#include "sc_imds.h"
#include "sc_msg.h"
#include "sc_sdnotify.h"

typedef struct sc_agent sc_agent_t;

/* Where a message goes instead of a socket (tests): member index, or -1 for "every
 * coordinator". The message is borrowed for the call. */
typedef void (*sc_agent_send_fn)(void *data, int member, const sc_msg_t *msg);

typedef struct sc_agent_opts {
    const sc_agent_settings_t *settings; /* parsed settings (copied what is needed) */
    const char *name;                    /* this VM's member name (sc_msg_name_valid) */
    int fault_domain;                    /* platformFaultDomain, -1 unknown */
    int update_domain;                   /* platformUpdateDomain, -1 unknown */
    sc_agent_send_fn send;               /* tests: capture messages, create no socket */
    void *send_data;                     /* passed to send */
    bool manual_imds;                    /* tests: never poll IMDS (use sc_agent_feed_body) */
    volatile sig_atomic_t *stop;         /* NULL, or the flag sc_agent_run watches (SIGTERM): an
                                            IMDS request in progress gives up when it is set */
    sc_sdnotify_t *sdnotify;             /* NULL, or systemd's notify socket (borrowed):
                                            sc_agent_run says READY, STATUS, WATCHDOG, STOPPING */
} sc_agent_opts_t;

typedef struct sc_agent_stats {
    uint64_t polls;            /* IMDS GETs made */
    uint64_t poll_errors;      /* GETs that failed */
    uint64_t doc_parses;       /* bodies parsed (a body equal to the last one is not) */
    uint64_t documents_sent;   /* new documents reported (counted once per document) */
    uint64_t bad_documents;    /* bodies refused by the parser */
    uint64_t malformed_events; /* events left out of documents (counted once per incarnation) */
    uint64_t stale_orders;     /* orders / approve_via refused for an old term */
    uint64_t late_orders;      /* prepares refused past their order's until_ms */
    uint64_t other_claimants;  /* leader messages or orders of a term from another member than
                                  the one that won it (the first to claim it) */
    uint64_t rejected_msgs;    /* messages refused by the decoder or the checks */
    uint64_t hooks_started;    /* hook processes started */
    uint64_t standalone_runs;  /* hooks started by the safety net */
    uint64_t send_dropped;     /* messages not sent (coordinator not connected) */
} sc_agent_stats_t;

/* Creates the agent: opens the state (reporting runs interrupted by a previous crash), the
 * IMDS client, the ZeroMQ context and sockets (keys loaded unless --insecure). 0 or an error
 * with the reason in err. The caller destroys it. */
int sc_agent_new(const sc_agent_opts_t *opts, sc_agent_t **ret_agent, char *err, size_t errlen);
/* Kills a running hook (recorded as interrupted), closes everything; takes NULL; nulls. */
void sc_agent_destroy(sc_agent_t **agent);
/* Runs until *stop is set. 0, or a fatal error (state database unusable). With
 * opts.sdnotify: READY=1 first (the state is open, the sockets are set up), then the status
 * line (sc_agent_describe) when it changes and WATCHDOG=1 on time, STOPPING=1 at the end. */
int sc_agent_run(sc_agent_t *agent, volatile sig_atomic_t *stop);
/* One turn of the loop: due polls and heartbeats, hook progress, then waits up to
 * max_wait_ms for messages. 0 or a fatal error. */
int sc_agent_step(sc_agent_t *agent, int max_wait_ms);
/* Handles one IMDS body as if a poll had returned it. 0 or -ENOMEM. */
int sc_agent_feed_body(sc_agent_t *agent, const char *body, size_t len);
/* Handles one received message from member (index into --members), as if read from its
 * socket; user_id is the ZAP User-Id (NULL when none). Refusals are logged and counted.
 * Returns 0 (handled or refused) or a fatal error. */
int sc_agent_receive(sc_agent_t *agent, size_t member, const void *buf, size_t len);
/* Whether a hook is running or queued. */
bool sc_agent_busy(const sc_agent_t *agent);
/* Whether the standalone safety net is armed (no leader for --standalone-after). */
bool sc_agent_standalone(const sc_agent_t *agent);
/* The newest term seen. */
uint64_t sc_agent_max_term(const sc_agent_t *agent);
/* One line for a human (systemd's STATUS): the leader followed and the coordinators
 * connected, whether the last IMDS poll was good, the hook running and queued, e.g.
 *   "leader vm_0 (term 3), 3/3 coordinators connected; IMDS ok; no hook running" */
void sc_agent_describe(const sc_agent_t *agent, char *buf, size_t len);
/* Counters. */
void sc_agent_get_stats(const sc_agent_t *agent, sc_agent_stats_t *ret_stats);

#endif
