/* sc_coord: the coordinator daemon — sockets, loop, membership and liveness, wiring of the
 * registry, the planner, the decision log / store, the approver and the control socket.
 *
 * One loop (sc_coord_step): receive every pending agent message (hello, heartbeat, document,
 * hook_progress, approve_result) on the ZMQ_ROUTER bound to our own endpoint of --members,
 * apply documents to the registry and hook progress to the drain states (each change an entry
 * of the decision log, applied to the store), then run the planner and carry out its actions:
 * every decision is logged and applied before it is carried out (orders are sent for applied
 * entries only; unacknowledged orders are sent again every resend interval — agents
 * de-duplicate). Approvals: one POST per round for every event approved in that round.
 *
 * Roles: the election is a separate issue. Here a coordinator is leader of a new term at each
 * start (term persisted in the store, +1 per start) and says so to every agent every second in
 * a `leader` message. Every order and approval first checks sc_coord_may_act()
 * (coordinator/sc_coord_int.h): we lead, and the start grace is over.
 *
 * Restart: the registry, drain states and approvals are rebuilt from the store, agents are
 * asked for their documents again; an approval intent without an answer is resolved: event
 * Started or gone in the registry: done; else, for an intent of ours (not delegated), our own
 * IMDS is read once (GET): every event Started or absent there: answered as approved, no POST;
 * some still Scheduled, or the GET failed (logged): POSTed again in the next round (Azure
 * answers 200 for an already approved id). A delegated intent is approved again (not read). */
#ifndef SC_COORD_H
#define SC_COORD_H

#include "sc_cstate.h"
#include "sc_policy.h"
#include "sc_sdnotify.h"

#include <json-c/json.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sc_members.h"

#define SC_COORD_MAX_MEMBERS SC_MEMBERS_MAX /* entries of --members (proto/sc_members.h) */

typedef struct sc_coord sc_coord_t;

typedef struct sc_coord_opts {
    const char *name;       /* our member name (must be in members) */
    const char *imds_url;   /* our own IMDS base URL (approvals) */
    const char *members;    /* "NAME=HOST:PORT,..." */
    const char *state_dir;  /* coordinator.db, control.sock */
    sc_policy_t policy;     /* parsed policy */
    bool insecure;          /* plain-text ZMQ (loopback demo/tests) */
    const char *key_file;   /* our CURVE key pair (unless insecure) */
    const char *keys_file;  /* the members' keyring (unless insecure) */
    int64_t dead_after_ms;  /* member dead after this long without a message (default 15000) */
    int64_t imds_stale_ms;  /* member blind when its IMDS has been failing this long
                             * (its heartbeat's imds_down_ms; default 15000) */
    int64_t resend_ms;      /* unacknowledged orders re-sent after (default 2000) */
    int64_t leader_ms;      /* leader message interval (default 5000) */
    int64_t start_grace_ms; /* after a start, no order, approval or alert until every member
                             * reported or this long passed (default 5000) */
    int64_t stall_ms;       /* a loop step that began this long after the last (or a wall clock
                             * jump of as much): a stall (Freeze, SIGSTOP), then the same grace
                             * as after a start (--stall-s; default 2000) */
    int64_t tombstone_ms;   /* an ended event's reports are ignored this long after its end
                             * (--tombstone-s; default 7 days) */
    int64_t snapshot_every; /* a snapshot of the state every this many log entries (1000) */
    int64_t log_keep;       /* after one, the log keeps this many entries behind it (5000) */
    int64_t snapshot_chunk; /* a snapshot goes to a follower in chunks of this many bytes */
    bool snapshot_at_stop;  /* and one at a clean stop (true; tests: false, as after a crash) */
    int64_t keep_closed;    /* tests: closed events whose rows the store keeps (0: its own
                             * SC_STORE_KEEP_CLOSED; every member must use the same) */
    sc_sdnotify_t *sd;      /* NULL, or systemd's notify socket (borrowed): sc_coord_run says
                             * READY, STATUS, WATCHDOG and STOPPING */
    /* Told after each entry is applied to the state, with the state (tests, tracing): NULL. */
    void (*on_apply)(void *ud, const sc_dlog_entry_t *e, const sc_cstate_t *cs);
    void *on_apply_ud; /* its argument */
    /* Told at the end of each loop step how long its work took in µs, from the poll's return
     * (the wait for messages left out; a commit's wait for the voters counted), on the loop's
     * thread (bench_coord_approve's turn times): NULL. */
    void (*on_step)(void *ud, int64_t busy_us);
    void *on_step_ud;     /* its argument */
    const char *notify;   /* --notify FORMAT:URL[,FORMAT:URL...]: the leader tells people; NULL */
    int voters;           /* --voters: 0 (the default choice), 1, 3, 5, 7 */
    int64_t election_ms;  /* --election-ms: the election timeout T (default 1000) */
    int64_t heartbeat_ms; /* --heartbeat-ms: the leader's heartbeat (default 100) */
} sc_coord_opts_t;

/* Fills defaults (policy defaults too). */
void sc_coord_opts_init(sc_coord_opts_t *o);
/* Opens the store, rebuilds the state, binds the ROUTER and the control socket. Errors name
 * what went wrong in err. *ret_coord is the caller's. */
int sc_coord_new(const sc_coord_opts_t *o, sc_coord_t **ret_coord, char *err, size_t errlen);
/* Closes everything; takes NULL; nulls the pointer. */
void sc_coord_destroy(sc_coord_t **coord);
/* One loop round: waits up to timeout_ms for messages, handles them, plans, acts.
 * 0 or a fatal error (store failure). */
int sc_coord_step(sc_coord_t *c, int timeout_ms);
/* Loops until *stop becomes non-zero; with o.sd, READY=1 first (sc_coord_new has returned:
 * the store is replayed, the sockets are bound), STOPPING=1 last. */
int sc_coord_run(sc_coord_t *c, volatile sig_atomic_t *stop);
/* Whether we lead (and so may order and approve). */
bool sc_coord_is_leader(const sc_coord_t *c);
/* Whether we lead with our term's first entry committed (the election won and confirmed). */
bool sc_coord_leads(const sc_coord_t *c);
/* Steps the loop (10 ms at a time) until we lead, at most max_ms (tests). Whether we lead. */
bool sc_coord_wait_lead(sc_coord_t *c, int max_ms);
/* The current term. */
int64_t sc_coord_term(const sc_coord_t *c);
/* The status document of schedcoordctl status --json (the caller's). */
json_object *sc_coord_status(sc_coord_t *c);
/* The replicated state (sc_cstate_to_json): the caller's, NULL on ENOMEM. */
json_object *sc_coord_state_json(const sc_coord_t *c);
/* A follower takes an entry of its leader's log: appended to its own log and applied to its
 * store and its state, as the leader applied it (the election's replication calls this; tests
 * hand entries over directly). 0; SC_E_STATE on a leader (it appends only its own decisions);
 * -EINVAL for an entry out of order or refused, with the reason in err. */
int sc_coord_follow(sc_coord_t *c, const sc_dlog_entry_t *e, char *err, size_t errlen);
/* The snapshot a leader sends a follower whose next entry was compacted: the text of
 * {"index","term","state","tables"} as of its applied index, *ret_index and *ret_term what it
 * includes; the caller's (free), NULL on error. Tests (the wire sends it in chunks). */
char *sc_coord_snapshot_text(sc_coord_t *c, int64_t *ret_index, int64_t *ret_term);
/* A follower installs a leader's snapshot text that includes the log up to index (of term),
 * as when its last chunk arrives: 0, or an error with the reason in err and the follower's
 * state and store as they were. Tests. */
int sc_coord_install_snapshot(sc_coord_t *c, const char *text, int64_t index, int64_t term,
                              char *err, size_t errlen);
/* Answers one control request as the control socket does ({"cmd":"status"|"pause"|"rehearse"|
 * "plan"|...}, schedcoordctl's): the answer is the caller's, {"error":...} for a bad one. For
 * tests that drive a coordinator in their own thread. */
json_object *sc_coord_control(sc_coord_t *c, json_object *req);
/* POSTs made so far (tests, bench). */
uint64_t sc_coord_posts(const sc_coord_t *c);
/* Monotonic ms of the last approval POST (bench), 0 if none. */
int64_t sc_coord_last_post_mono_ms(const sc_coord_t *c);

/* The daemon: flags / --config (see --help). Returns the exit status. */
int sc_coord_main(int argc, char **argv);

#endif
