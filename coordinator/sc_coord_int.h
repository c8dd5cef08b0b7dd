/* sc_coord_int: what the coordinator's files (coordinator/sc_coord*.c) share, and nothing
 * outside them may include: the coordinator's struct, its member and per-event state, and the
 * functions one file calls in another. Each file holds one job:
 *
 *   sc_coord.c           life cycle: new, destroy, the loop (sc_coord_step), accessors
 *   sc_coord_cli.c       the daemon's command line (sc_coord_main)
 *   sc_coord_sd.c        systemd's notify protocol: READY, STATUS, WATCHDOG, STOPPING
 *   sc_coord_members.c   membership and liveness: --members, hello, heartbeat, dead-after,
 *                        a newer term, the start grace
 *   sc_coord_dispatch.c  messages: sending, receiving (the ROUTER and its batch transaction)
 *   sc_coord_exec.c      the executor: decisions, per-event state, alerts, approvals, the plan
 *                        round and its orders, re-sent orders, delegated approvals' timeout
 *   sc_coord_restart.c   restart recovery from the store
 *   sc_coord_status.c    status, counters, the control socket's handler
 *   sc_coord_notify.c    notifications (--notify): what each decision applied on the leader
 *                        tells people, and when
 *   sc_coord_forecast.c  the hooks' history, each round's forecast, what the round decided
 *                        (schedcoordctl plan)
 *   sc_coord_rehearse.c  rehearsals: made-up events planned as real ones, nothing POSTed
 *   sc_coord_report.c    a rehearsal's report
 *   sc_coord_raft.c      the election (sc_elect) and the decision log's replication: peer
 *                        sockets, votes, appends and their answers
 *   sc_coord_log.c       the decision log as a pipeline: proposals in the turn's transaction,
 *                        the flush (one fsync, appends sent), commit, apply, effects queued
 *   sc_coord_effect.c    effects of committed entries: orders, approval POSTs, delegations
 *   sc_coord_elect.c     the election's life: new, destroy, status, a newer term adopted
 *   sc_coord_handover.c  leadership handed over: before approving our own VM's event, and
 *                        back to the preferred member when nothing is in flight
 *   sc_coord_snap.c      the log compacted behind snapshots; a snapshot sent to a follower
 *                        too far behind, and installed
 *   sc_coord_digest.c    the members digest between coordinators: stamped on what we send,
 *                        compared on what we receive; members that disagree refused and said,
 *                        and no lead while a voter disagrees
 */
#ifndef SC_COORD_INT_H
#define SC_COORD_INT_H

#include "sc_coord.h"

#include "sc_approver.h"
#include "sc_backoff.h"
#include "sc_cstate.h"
#include "sc_curve.h"
#include "sc_dirlock.h"
#include "sc_event.h"
#include "sc_msg.h"
#include "sc_plan.h"
#include "sc_registry.h"
#include "sc_store.h"
#include "sc_elect.h"
#include "sc_voters.h"

#include <json-c/json.h>
#include <zmq.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SC_COORD_RID_MAX 256 /* bytes of a ZMQ routing id */

typedef struct sc_cmember {
    char name[SC_NAME_MAX + 1];                /* member name */
    char endpoint[SC_MEMBER_ENDPOINT_MAX + 1]; /* tcp://HOST:PORT of its coordinator */
    int fault_domain;    /* from its hello (reported; the decided one is the state's), -1 */
    int update_domain;   /* from its hello (reported), -1 unknown */
    bool alive;          /* messages arriving */
    bool blind;          /* alive, but its IMDS has been silent too long */
    bool is_self;        /* our own member */
    bool knows_until;    /* its agent said SC_CAP_ORDER_UNTIL in its last hello */
    int64_t last_msg_ms; /* monotonic ms of its last message (0: none since we started, so not
                          * known to be down) */
    unsigned char rid[SC_COORD_RID_MAX];     /* ROUTER routing id of its agent's connection */
    size_t rid_len;                          /* 0: not connected yet */
    char boot_id[SC_MSG_BOOT_ID_MAX + 1];    /* its agent's boot id */
    char saved_boot[SC_MSG_BOOT_ID_MAX + 1]; /* the boot id stored for it (sc_store_save_boots) */
    int64_t boot_inc, boot_obs;              /* that boot's document stored: incarnation, time */
    bool boot_dirty;                         /* to be stored (sc_coord_members_save_boots) */
    bool have_doc;                           /* a document arrived since we started */
    int64_t doc_req_ms;                      /* last doc_request sent */
    sc_member_state_t state;                 /* from the last plan */
    uint64_t malformed;                      /* malformed IMDS events its agent reported */
    uint64_t malformed_key;                  /* hash of the last malformed list counted */
} sc_cmember_t;

/* What the executor keeps of an event beside the state (sc_cs_event_t, replicated): timers
 * and the last plan's words, none of it replicated. */
typedef struct sc_cevstate {
    char id[SC_EVENT_ID_MAX + 1]; /* EventId */
    int64_t retry_at_ms;          /* approval FAILED: no new POST before */
    sc_backoff_t backoff;         /* approval retries */
    int64_t intent_ms;            /* when its delegated intent was made (0: not by us) */
    int64_t *sent_ms;             /* per member: last order sent */
    int64_t *held_ms;             /* per member: a rollback's recover held since (its event
                                     started: sc_coord_effect_recover_held), 0: not held */
    int64_t *unasked_ms;          /* per member: a hook under way whose ask in this tenure did
                                     not go out (held, not connected), when; 0: none */
    int64_t *drain_retry_ms;      /* per member, ROLLED_BACK: not drained again before */
    char *waiting_for;            /* from the last plan */
    bool touched;                 /* referred to by an action (not an alert) this round */
} sc_cevstate_t;

typedef struct sc_cnotify sc_cnotify_t;   /* notifications: sc_coord_notify.c's own */
typedef struct sc_coord_fc sc_coord_fc_t; /* sc_coord_forecast.c's */
typedef struct sc_coord_rh sc_coord_rh_t; /* sc_coord_rehearse.c's */
typedef struct sc_craft sc_craft_t;       /* sc_coord_raft.c's */
typedef struct sc_csnap sc_csnap_t;       /* sc_coord_snap.c's */
typedef struct sc_cdigest sc_cdigest_t;   /* sc_coord_digest.c's */

struct sc_coord {
    sc_coord_opts_t o;   /* options (strings borrowed from the caller... copied below) */
    char *name;          /* our member name */
    char *state_dir;     /* state directory */
    char ctl_path[4096]; /* control socket path */
    char members_hash[SC_MEMBERS_DIGEST_LEN + 1]; /* of --members and --voters (sc_voters.h) */
    char list_hash[SC_MEMBERS_DIGEST_LEN + 1];    /* of --members alone: told to agents */
    int64_t term;                                 /* our term */
    uint64_t seq;                                 /* our message sequence */
    sc_cmember_t *members;                        /* --members, in order */
    size_t n_members;                             /* entries */
    size_t *by_name;                              /* member indexes sorted by name */
    struct sc_name_slot { /* members by name, hashed (sc_coord_members_find) */
        uint32_t hash;    /* FNV-1a of the name (without Azure's leading '_') */
        uint32_t member;  /* its index + 1; 0: an empty slot */
    } * name_slots;
    size_t name_mask;        /* slots - 1 (a power of two, at least twice the members) */
    size_t self;             /* our index */
    void *zctx;              /* ZMQ context */
    void *router;            /* ROUTER bound to our endpoint */
    sc_zap_t *zap;           /* ZAP handler (CURVE) */
    int ctl_fd;              /* control socket */
    sc_store_t *store;       /* the store */
    sc_dirlock_t *lock;      /* coordinator.lock: one coordinator per state directory */
    sc_approver_t *approver; /* approvals */
    sc_registry_t *reg;      /* merged events */
    sc_cstate_t *cs;         /* the replicated state: changed only by applying entries */
    struct {                 /* the last prepare moment computed (sc_coord_dispatch.c): valid
                                while the state, the turn, the event and the domain are the same */
        const sc_cstate_t *cs;
        int64_t applied, turn; /* turn: its turn_end_us */
        char id[SC_EVENT_ID_MAX + 1];
        int dom;
        int64_t until;
    } until_memo;
    int64_t snapshot_at;    /* index of the last snapshot saved */
    sc_cnotify_t *notify;   /* notifications (sc_coord_notify.c); NULL: none */
    sc_cevstate_t **ev;     /* per event: what is not replicated */
    size_t n_ev;            /* entries */
    bool dirty;             /* something changed: plan now */
    bool domains_hidden;    /* every member (2 or more) reports the same fault domain */
    int64_t last_plan_ms;   /* last plan round */
    int64_t view_ms;        /* the plan's view built (sc_coord_forecast_note) */
    int64_t last_leader_ms; /* last leader broadcast */
    int64_t last_tick_ms;   /* last registry tick / liveness check */
    uint64_t rejected;      /* messages refused */
    int64_t last_post_ms;   /* monotonic ms of the last approval POST */
    struct sc_coord_post {  /* our approval POSTs handed to the approver's worker */
        int64_t intent;     /* the intent's index */
        json_object *ids;   /* its EventIds (owned) */
        char *reason;       /* the intent's reason (owned) */
    } * posts;
    size_t n_posts, cap_posts;
    int64_t started_wall_ms; /* when this process started (wall clock) */
    bool in_grace;           /* just started: members have not all had a chance to report */
    int64_t grace_until_ms;  /* monotonic ms the start grace ends at the latest */
    bool stalled;            /* in the grace because the loop stalled (TILT), not a start */
    int64_t step_mono_ms;    /* monotonic ms the last loop step began (0: none yet) */
    int64_t step_wall_ms;    /* wall ms at that moment */
    int64_t turn_end_us;     /* monotonic µs: the turn's budget ends (sc_coord_turn_over) */
    /* Since this process started (Prometheus counters: reset by a restart). */
    struct {
        uint64_t posts_ok, posts_failed;   /* approval POSTs through our IMDS, by outcome */
        uint64_t delegated;                /* approvals handed to another member (approve_via) */
        uint64_t orders[SC_MSG_PHASE_MAX]; /* prepare/recover orders */
        uint64_t hooks[SC_MSG_PHASE_MAX][SC_MSG_HOOK_STATE_MAX]; /* hook reports, by state */
        uint64_t alerts[SC_ALERT_MAX];                           /* alerts raised */
        uint64_t events_new;                                     /* events first seen */
    } count;
    sc_coord_fc_t *fc;    /* forecasts and the last round's explanation (NULL until needed) */
    sc_coord_rh_t *rh;    /* rehearsals' timers (NULL until needed) */
    sc_voters_t voters;   /* the election's voters, from --members and --voters */
    sc_craft_t *raft;     /* the election and the replication (sc_coord_raft.c) */
    sc_cdigest_t *digest; /* members that disagree on the digest (NULL until one is heard) */
};

/* ---- sc_coord_digest.c: the members digest between coordinators ---------------------- */

/* Stamps our members digest (c->members_hash) on a coordinator-to-coordinator message about to
 * leave: sc_coord_raft_send, the one way they leave. */
void sc_coord_digest_stamp(const sc_coord_t *c, sc_msg_t *msg);
/* A coordinator-to-coordinator message from member mi, before anything else looks at it (the
 * top of sc_coord_raft.c's s_on_peer). 0: its digest is ours, or absent (an older build): go on.
 * 1: another digest: refused (dropped by the caller), said (a warning naming the peer and both
 * digests, ALERT members_mismatch once per peer and digest), counted, shown in status, answered
 * with our digest when a request, and while mi is one of our voters we are held back from
 * leading (sc_elect_hold) until it is heard agreeing. <0: a fatal error (an election output
 * not carried out). */
int sc_coord_digest_check(sc_coord_t *c, size_t mi, const sc_msg_t *msg);
/* After the election was made anew (a newer term adopted): held back again while a voter
 * disagrees. 0 or a fatal error. */
int sc_coord_digest_rehold(sc_coord_t *c);
/* The status field "members_mismatch": {"peer", "ours", "theirs", "since_ms" (wall), "voter",
 * "others": [names]} of the member that disagrees (a voter of ours first), or NULL when none
 * does. The caller's. */
json_object *sc_coord_digest_status(sc_coord_t *c);
/* Peer messages refused for their digest since the process started. */
uint64_t sc_coord_digest_refused(const sc_coord_t *c);
/* Frees c->digest; takes NULL. */
void sc_coord_digest_free(sc_coord_t *c);

/* ---- sc_coord_sd.c: systemd's notify protocol (c->o.sd; nothing when NULL) --------------- */

/* The status line: role, term, the leader, events in flight (the registry's), members alive,
 * e.g. "leader, term 3; 2 events in flight; 5/6 members alive". */
void sc_coord_sd_describe(const sc_coord_t *c, char *buf, size_t len);
/* The status line while sc_coord_main waits for IMDS's compute metadata (no sc_coord yet). */
void sc_coord_sd_starting(sc_sdnotify_t *sd);
/* READY=1 with the status line (sc_coord_run, once sc_coord_new returned). */
void sc_coord_sd_ready(sc_coord_t *c);
/* The status line when it changed, WATCHDOG=1 when due: after every loop round. */
void sc_coord_sd_tick(sc_coord_t *c);
/* STOPPING=1 as the loop ends (rc: its outcome). */
void sc_coord_sd_stopping(sc_coord_t *c, int rc);

/* ---- sc_coord_members.c: membership and liveness ------------------------------------- */

/* Parses --members ("NAME=HOST:PORT,...") into c->members and c->by_name (c's, freed by
 * sc_coord_destroy), with its digests: c->members_hash (with --voters: what decides the voters,
 * which peers compare) and c->list_hash (the list alone, which agents compare). 0, or an error
 * named in err. */
int sc_coord_members_parse(sc_coord_t *c, const char *spec, char *err, size_t errlen);
/* The index of the member named n (exactly as Azure writes it; tolerant of api 2017-03-01's
 * leading '_'), or SC_PLAN_NONE. */
size_t sc_coord_members_find(const sc_coord_t *c, const char *n);
/* A hello from member mi: a new agent process (boot id) asks for its document again and
 * brings a gone member back; new fault/update domains are recorded. 0 or a store error. */
int sc_coord_members_on_hello(sc_coord_t *c, size_t mi, const sc_msg_hello_t *h);
/* Member mi's domain as rule 2 counts it (the update domain under serialise-by update_domain),
 * as decided; -1 unknown, and always under serialise-by vm (a domain of its own). */
int sc_coord_members_domain(const sc_coord_t *c, size_t mi);
/* serialise-by in force: auto resolved (vm while the fault domains are hidden, else
 * fault_domain). */
sc_serialise_by_t sc_coord_serialise_by(const sc_coord_t *c);
/* Whether every member not gone that reported a fault domain (two or more) reported the same:
 * a flexible or zonal scale set's max spreading, which hides the domains Azure spreads them
 * over. Sets c->domains_hidden and says a change (log; ALERT domains_hidden when they become
 * hidden). Each plan round calls it, once the start grace is over. */
void sc_coord_members_spread_check(sc_coord_t *c);
/* The leader decides member mi's fault and update domain as reported, when not what the state
 * holds (why: how we heard them, for the log). 0 or an error. */
int sc_coord_members_decide_domains(sc_coord_t *c, size_t mi, const char *why);
/* Whether heartbeat hb says its member is blind: its IMDS failing for over --imds-stale. */
bool sc_coord_members_is_blind(const sc_coord_t *c, const sc_msg_heartbeat_t *hb);
/* A heartbeat of m: a change of blindness goes to the registry (a blind member is no
 * witness). 0 or a fatal error. */
int sc_coord_members_on_heartbeat(sc_coord_t *c, sc_cmember_t *m, const sc_msg_heartbeat_t *hb,
                                  int64_t now);
/* A term seen (from an agent of member `from`) newer than ours: adopted (Raft's rule; a leader
 * steps down and campaigns past it). 0 or a store error. */
int sc_coord_members_adopt_term(sc_coord_t *c, uint64_t seen, const char *from);
/* The liveness tick: members silent for --dead-after are dead; then the registry's tick.
 * Changes are recorded. 0 or a fatal error. */
int sc_coord_members_tick(sc_coord_t *c, int64_t now);
/* A document of member m was applied (incarnation, observed_at_ms): a boot id not stored yet is
 * marked to be, so that after our restart its documents are not taken for a rebooted VM's fresh
 * view (sc_registry_seed_member; nemesis seed 1: ended events held for a minute). */
void sc_coord_members_note_boot(sc_coord_t *c, sc_cmember_t *m, int64_t incarnation,
                                int64_t observed_ms);
/* The marked boots stored, in one transaction (at every tick and at the end); a failure is
 * logged and tried again: it only costs fresh views after a restart. */
void sc_coord_members_save_boots(sc_coord_t *c);
/* At start, after the registry is rebuilt: the stored boots seed it. 0 or a fatal error. */
int sc_coord_members_load_boots(sc_coord_t *c);
/* Ends the start grace once every member not gone is alive with a document, or
 * --start-grace has passed (c->in_grace, c->grace_until_ms). */
void sc_coord_members_grace_check(sc_coord_t *c, int64_t now);

/* ---- sc_coord_dispatch.c: messages ---------------------------------------------------- */

/* Sends msg (the caller's, not consumed) to m's agent. 0, -ENOTCONN (never connected) or an
 * encode / ZMQ error. */
int sc_coord_dispatch_send(sc_coord_t *c, sc_cmember_t *m, sc_msg_t *msg);
/* Sends member mi an order: run phase for event id, drain attempt (1..SC_MSG_ATTEMPT_MAX),
 * with the event's document from the registry. 0, SC_E_STATE when we may not act
 * (sc_coord_may_act), or a send error. */
int sc_coord_dispatch_send_order(sc_coord_t *c, size_t mi, const char *id, sc_msg_phase_t phase,
                                 int attempt);
/* The leader message to every connected member not gone (nothing on a follower). */
void sc_coord_dispatch_broadcast_leader(sc_coord_t *c);
/* Reads and handles every message waiting on the ROUTER; the batch's decisions are committed
 * in one transaction, opened only when a message may write. 0 or a fatal error (the batch is
 * rolled back). */
int sc_coord_dispatch_drain_router(sc_coord_t *c);

/* ---- sc_coord_exec.c: the executor ---------------------------------------------------- */

/* Whether this process may order or POST now: it leads, and its start grace is over. The one
 * check in front of every order sent (first or again), every approval POST or delegation, and
 * the plan round that decides them. */
bool sc_coord_may_act(const sc_coord_t *c);
/* The state of event id (borrowed from c), or NULL. */
sc_cevstate_t *sc_coord_exec_ev_find(sc_coord_t *c, const char *id);
/* The state of event id, created if new (c owns it); NULL when the id is invalid, the table
 * full or memory short. */
sc_cevstate_t *sc_coord_exec_ev_get(sc_coord_t *c, const char *id);
/* The state (sc_cstate) of event id, or NULL. Borrowed: valid until the next decision. */
const sc_cs_event_t *sc_coord_exec_cs(const sc_coord_t *c, const char *id);
/* Frees an event state; takes NULL. */
void sc_coord_exec_ev_free(sc_cevstate_t *e);
/* Appends a decision of kind with data (consumed) to the log and the store. 0 or a store
 * error, which is fatal for the daemon: it must not act on what it could not record. */
int sc_coord_exec_decide(sc_coord_t *c, sc_dlog_kind_t kind, json_object *data, const char *reason);
/* Records what the registry changed (ch is released). 0 or a store error. */
int sc_coord_exec_handle_changes(sc_coord_t *c, sc_registry_changes_t *ch);
/* A new leader decides what the agents reported and nobody decided (events first seen,
 * started, over while it followed). 0 or a store error. */
int sc_coord_exec_sync_registry(sc_coord_t *c);
/* After the EVENT_CLOSED of event id was applied: it leaves the registry, with a tombstone. */
void sc_coord_exec_forget_closed(sc_coord_t *c, const char *id);
/* Raises an alert once per (kind, event, dedup, attempt): a decision, a log line, a count.
 * event_id and member may be NULL; attempt: the drain attempt it is about, else 0. 0 or a
 * store error. */
int sc_coord_exec_alert(sc_coord_t *c, sc_alert_t kind, const char *event_id, const char *member,
                        const char *dedup, const char *message, int attempt);
/* Builds the planner's input, runs it, carries out its actions (orders, approvals, alerts,
 * members gone) and closes events that owe nothing. With act false (a follower, or a leader
 * that may not act), only what the plan says is kept (members' states, waiting for): the
 * status and watch of every member show it. 0 or a fatal error. */
int sc_coord_exec_plan_round(sc_coord_t *c, bool act);
/* Delegated approvals unanswered for S_VIA_TIMEOUT_MS fail (retried by the next plan).
 * 0 or a store error. */
int sc_coord_exec_expire_via(sc_coord_t *c, int64_t now);
/* Sends again the orders not acknowledged within --resend to members alive. */
void sc_coord_effect_resend_orders(sc_coord_t *c, int64_t now);

/* ---- sc_coord_effect.c: effects of committed entries ------------------------------------- */

/* What committed entry e (data: parsed), applied on the leader of its term that may act, makes
 * it do: an order sent (PREPARE_ORDERED, RECOVER_ORDERED), an approval POSTed or delegated
 * (APPROVAL_INTENT; the POST's answer proposed). Nothing for other kinds. */
void sc_coord_effect_run(sc_coord_t *c, const sc_dlog_entry_t *e, json_object *data);
/* The outcomes of our approval POSTs made meanwhile by the approver's worker: counted, logged,
 * the retry set, the answer proposed (while we lead and may act; else the next leader resolves
 * the intent). Called each loop turn. */
void sc_coord_effect_answers(sc_coord_t *c);
/* Frees what sc_coord_effect_answers still waits for (destroy). */
void sc_coord_effect_free(sc_coord_t *c);

/* ---- sc_coord_restart.c: restart recovery -------------------------------------------- */

/* Rebuilds the state from the store's last snapshot and the log after it (sc_cstate_apply of
 * each entry), and tells the store to apply every decision to it from now on. 0 or an error,
 * named in err. */
int sc_coord_restart_replay(sc_coord_t *c, char *err, size_t errlen);
/* Saves a snapshot of the state when every entries were applied since the last (every: 0 saves
 * whenever anything was applied since). Failures are logged, not fatal (the log is whole). */
void sc_coord_restart_snapshot(sc_coord_t *c, int64_t every);
/* After the replay: the registry from the state (events still owing something; tombstones for
 * the others), members' endpoints recorded, approval intents left without an answer resolved
 * (our own IMDS read once if needed). A follower only rebuilds. 0 or an error. */
int sc_coord_restart_restore(sc_coord_t *c);

/* Events the state holds (and still owe something) that the registry lacks are restored into it,
 * as a restart would: a snapshot installed, entries followed that no agent of ours reported.
 * The planner plans the registry's events: without this their drains would be invisible to it
 * (rule 1, rule 3). 0 or -ENOMEM. */
int sc_coord_restart_reconcile_registry(sc_coord_t *c);
/* The leader's work on taking the lead (its term's first entry committed): members recorded,
 * approval intents left without an answer resolved. 0 or an error. */
int sc_coord_restart_take_lead(sc_coord_t *c);
/* Approval intents without an answer resolved: done when their events started or are gone
 * (our own IMDS read once if needed), else answered failed so that the plan approves again
 * (IMDS answers 200 to a repeat). 0 or an error. */
int sc_coord_restart_resolve_intents(sc_coord_t *c);

/* ---- sc_coord_raft.c, sc_coord_elect.c: the election and the replication -------------- */

/* An entry applied on the leader, whose effect (order, approval POST or delegation,
 * notification) waits for the end of the turn (sc_coord_raft_flush). */
typedef struct sc_coord_effect {
    sc_dlog_entry_t e; /* its index, term, kind, wall_ms, reason (ours); data unused */
    json_object *data; /* its data (a reference) */
} sc_coord_effect_t;

/* A hook's progress the leader proposed (sc_coord_raft_progress_proposed), which the planner
 * counts before it is applied (sc_coord_raft_progress_drain). */
typedef struct sc_coord_progress {
    int64_t index, term;             /* its entry */
    char event[SC_EVENT_ID_MAX + 1]; /* EventId */
    size_t member;                   /* the VM's member index */
    sc_msg_phase_t phase;            /* prepare or recover */
    sc_msg_hook_state_t state;       /* started, done, failed... */
    int attempt;                     /* the drain's attempt it reports */
} sc_coord_progress_t;

/* The election and the replication's state (sc_coord_raft.c). */
struct sc_craft {
    sc_elect_t *e;                 /* the election */
    void *dealer[SC_VOTERS_MAX];   /* our DEALER to voters.index[k] (NULL: ourselves) */
    int64_t *next;                 /* leader: per member, the next index to send */
    int64_t *match;                /* leader: per member, the last index known stored */
    int64_t *sent_ms;              /* leader: per member, the last append sent */
    int64_t *ack_ms;               /* leader: per member, its last append_ack */
    int64_t led_since_ms;          /* leader: when our term's first entry committed */
    int64_t handover_ms;           /* leader: when we last started a handover (0: never) */
    int64_t nonvoters_ms;          /* leader: the last pass over the non-voters */
    int64_t last_index, last_term; /* our log's end */
    int64_t commit;                /* the commit index known */
    int64_t applied;               /* applied through */
    int64_t term_entry;            /* index of our term's first entry (leader; 0: not yet) */
    bool need_term_entry;          /* just won: our term's first entry is due */
    int64_t durable;               /* leader: our log is durable through (fsynced) */
    int64_t plan_fence;            /* leader: the planner plans again once applied through */
    bool txn;                      /* leader: the turn's transaction is open */
    sc_coord_effect_t *fx;         /* effects of entries applied, carried out by the flush */
    size_t n_fx, cap_fx;           /* their number, and room */
    sc_coord_progress_t *pg;       /* leader: hook progress proposed, not applied yet */
    size_t n_pg, cap_pg;           /* their number, and room */
    bool may_act;                  /* as last logged */
    bool resolve;                  /* intents may be left without a POST: resolve them */
    int chan_dealer;               /* the message being handled came on dealer k (-1) */
    const unsigned char *chan_rid; /* ... or on the ROUTER from this routing id */
    size_t chan_rid_len;           /* its length */
    int64_t base_index, base_term; /* our log's base: compaction took the entries up to it */
    int64_t answer_received;       /* a snapshot's answer: bytes held (-1: an append's) */
    sc_csnap_t *snap;              /* snapshots sent and received (sc_coord_snap.c) */
};

/* Carries out the election's outputs in order (a PERSIST that fails stops them). */
int sc_coord_raft_outputs(sc_coord_t *c, const sc_elect_outputs_t *out);
/* Tells the election the log's end and commit index. */
void sc_coord_raft_set_log(sc_coord_t *c);
/* sc_coord_log.c: the pipeline. Leader: the highest index a majority stored (ours once
 * durable), if of our term, is committed. */
void sc_coord_log_advance_commit(sc_coord_t *c);
/* Applies what is committed and not applied yet. 0 or a store error. */
int sc_coord_log_apply_committed(sc_coord_t *c);
/* An append to member to with what it is owed from its next index (a heartbeat when nothing;
 * round: the heartbeat round, 0 none; answer: on the channel of the message being handled). */
void sc_coord_raft_send_append(sc_coord_t *c, size_t to, int64_t round, bool answer);
/* The leader proposes a decision: appended to the log in the turn's transaction, not applied
 * (applied once committed: with one voter, once durable, at the flush). Never waits. *ret_index
 * (may be NULL) gets its index. 0, SC_E_NOT_COMMITTED when we do not lead (nothing written), or a
 * store error (fatal). */
int sc_coord_raft_propose(sc_coord_t *c, sc_dlog_kind_t kind, json_object *data, const char *reason,
                          int64_t *ret_index);
/* The end of a loop turn: the turn's transaction committed (one fsync), the new entries sent
 * to the voters, the effects of the entries applied carried out. 0 or a fatal error. */
int sc_coord_raft_flush(sc_coord_t *c);
/* Commits the turn's transaction now (before a vote or an append is answered). 0 or an error. */
int sc_coord_raft_txn_commit(sc_coord_t *c);
/* Leader: the HOOK_PROGRESS entry just proposed (the log's last), remembered until applied. */
void sc_coord_raft_progress_proposed(sc_coord_t *c, const char *event, size_t member,
                                     sc_msg_phase_t phase, sc_msg_hook_state_t state, int attempt);
/* The drain state of member for event ce as the planner counts it: the state's, moved on by the
 * hook progress proposed in this term and not applied yet, in log order. Every decision the
 * planner makes from it is an entry after theirs: it commits with them or not at all (Raft's
 * log matching), so a drain is approved in the same commit round as its last "done" (issue 20:
 * two rounds were the floor of the approval's latency). */
sc_drain_state_t sc_coord_raft_progress_drain(sc_coord_t *c, const sc_cs_event_t *ce,
                                              size_t member);
/* Forgets the progress remembered (a new tenure, the end). */
void sc_coord_raft_progress_free(sc_coord_t *c);
/* Whether everything the planner proposed is applied (it may plan again: it derives from the
 * applied state, and would otherwise decide twice what is in flight). */
bool sc_coord_raft_settled(const sc_coord_t *c);
/* The log's end now (0 without an election): a mark for sc_coord_raft_fence. */
int64_t sc_coord_raft_last(const sc_coord_t *c);
/* The planner (a plan round, a rehearsal's tick, a take-over) proposed the entries after index
 * since: it plans again once they are applied. Nothing proposed since, no fence: what others
 * proposed meanwhile (the agents' hook progress, events) does not hold it back. */
void sc_coord_raft_fence(sc_coord_t *c, int64_t since);
/* The state applied entry e (data: parsed): its effect queued, on the leader. */
void sc_coord_raft_effect_push(sc_coord_t *c, const sc_dlog_entry_t *e, json_object *data);
/* Whether the loop turn used up its budget (S_TURN_BUDGET_US): what can wait for the next turn
 * (agents' messages, effects, orders beyond the first) waits; the loop takes it at once. */
bool sc_coord_turn_over(const sc_coord_t *c);
/* Carries out the effects queued so far (the flush does it too): as soon as what commits them
 * is applied, before the turn's other work; those the turn's budget leaves stay queued, in
 * order. */
void sc_coord_raft_effects_run(sc_coord_t *c);
/* Frees the effects not carried out (destroy). */
void sc_coord_raft_effects_free(sc_coord_t *c);
/* What stepping down from the lead leaves to do: no term entry due, intents to resolve. */
void sc_coord_raft_stepped_down(sc_coord_t *c);
/* Logs "may act" when sc_coord_may_act changed. */
void sc_coord_raft_log_may_act(sc_coord_t *c);
/* Sends msg to member to: an answer on the channel of the message being handled, else a
 * request (on our DEALER to a voter, on the ROUTER to a non-voter). */
void sc_coord_raft_send(sc_coord_t *c, size_t to, sc_msg_t *msg, bool answer);

/* ---- sc_coord_snap.c: snapshots between members, compaction ------------------------------ */

/* Its state, and the log's base read from the store. 0 or an error. */
int sc_coord_snap_new(sc_coord_t *c);
void sc_coord_snap_destroy(sc_coord_t *c);
/* After a snapshot saved: the log's entries more than --log-keep behind it go. */
void sc_coord_snap_compact(sc_coord_t *c);
/* Leader: the chunk of our snapshot member to needs next, when the entry before its next one
 * was compacted (round: a heartbeat's, 0: none). */
void sc_coord_snap_send(sc_coord_t *c, size_t to, int64_t round, bool answer);
/* Leader: an append_ack of member mi; true when it answered a snapshot chunk (handled here:
 * the next chunk sent), false when the append path goes on (an append's answer, or the
 * snapshot installed: its match index, which sets r->match[mi] and r->next[mi] as it says,
 * lower than before too, when it answers the transfer under way). */
bool sc_coord_snap_on_ack(sc_coord_t *c, size_t mi, const sc_msg_append_ack_t *a);
/* Follower: an append from *prev (of *prev_term) with *n_ent entries at *ent: those our
 * compaction took are passed over (committed: the leader's are the same), *prev and *prev_term
 * moved to our base. True when all of them were (nothing left to store; *prev their last). */
bool sc_coord_snap_skip_compacted(const sc_coord_t *c, int64_t *prev, int64_t *prev_term,
                                  const sc_msg_entry_t **ent, size_t *n_ent);
/* Follower: a chunk of the leader's snapshot; the whole installed once held. False when it
 * could not be (logged). *ret_match: the log's last index once installed (0 before),
 * *ret_received: the bytes held. */
bool sc_coord_snap_on_chunk(sc_coord_t *c, const sc_msg_snapshot_t *m, int64_t *ret_match,
                            int64_t *ret_received);

/* Before approving evs[n]: when one of them impacts our own VM, hands the lead to a voter
 * outside them (sc_elect_transfer: TimeoutNow) and returns true: the successor approves, alive
 * to see the event through. False (approve now): our VM is not in them, a Freeze shorter than
 * the election timeout, or no voter outside them is caught up (said in the log). */
/* Hands the lead over (to a voter outside the event, caught up) when our own VM is being
 * drained for an event not approved yet; true when a handover started. Quiet when none can be
 * started yet: the next round tries again. */
bool sc_coord_handover_in_drain(sc_coord_t *c);
/* Whether a recover order to member mi for ce waits: ce started and is not over, and mi is
 * one of its Resources (a rollback's recover, ordered before the start, would put the VM back
 * in service during the event). Sent again once the event is over. */
bool sc_coord_effect_recover_held(const sc_coord_t *c, const sc_cs_event_t *ce, size_t mi);
bool sc_coord_handover_before_approval(sc_coord_t *c, const sc_event_t *const *evs, size_t n);
/* Leader, no event in flight, leading for 10 s: the lead goes back to the preferred member
 * (the first voter of --members) when it is caught up — by transfer, never by an election, so
 * a member coming back does not flap the lead mid-drain (keepalived's nopreempt lesson). */
void sc_coord_handover_prefer(sc_coord_t *c, int64_t now);

/* The election from the store's hard state and log, DEALERs to the other voters (CURVE with
 * kp and ring, or plain when kp is NULL), and the store's commit gate. 0 or an error in err. */
int sc_coord_raft_new(sc_coord_t *c, const sc_curve_keypair_t *kp, const sc_keyring_t *ring,
                      char *err, size_t errlen);
void sc_coord_raft_destroy(sc_coord_t *c);
/* Whether msg is a coordinator-to-coordinator message (vote_request, vote, append, append_ack,
 * timeout_now). */
bool sc_coord_raft_is_peer_msg(const sc_msg_t *msg);
/* A peer message received on the ROUTER from member mi (its routing id: the answer's way).
 * 0 or a fatal error. */
int sc_coord_raft_on_router(sc_coord_t *c, size_t mi, const unsigned char *rid, size_t rid_len,
                            const sc_msg_t *msg);
/* Every message waiting on our DEALERs. 0 or a fatal error. */
int sc_coord_raft_drain(sc_coord_t *c);
/* Our DEALERs as poll items (at most max); how many. */
size_t sc_coord_raft_pollitems(sc_coord_t *c, zmq_pollitem_t *items, size_t max);
/* Timers: the election's, the leader's term entry, non-voters' appends, intents to resolve.
 * 0 or a fatal error. */
int sc_coord_raft_tick(sc_coord_t *c);
/* The loop stalled (TILT): the leader stops acting until a quorum round confirms it. */
void sc_coord_raft_stall(sc_coord_t *c);
/* The election's role name ("leader", "voter", ...) for logs. */
const char *sc_coord_role(const sc_coord_t *c);
/* TILT: true when the loop stood still since the last check (waited_ms: what the wait between
 * them may take); a leader then acts on nothing until a quorum confirms its lead. Called around
 * the loop's poll and after each wait inside a commit gate. */
bool sc_coord_stall_check(sc_coord_t *c, int64_t waited_ms);
/* How long the loop may sleep before the election's next timer. */
int sc_coord_raft_next_ms(const sc_coord_t *c);
/* The election's part of may-act: our term's first entry committed, everything in our log
 * applied, a majority's lease (sc_elect_may_act). */
bool sc_coord_raft_may_act(const sc_coord_t *c);
/* Whether we lead with our term's first entry committed (we tell the agents so). */
bool sc_coord_raft_leads(const sc_coord_t *c);
/* The commit index (the fence that orders and leader messages carry). */
int64_t sc_coord_raft_commit(const sc_coord_t *c);
/* Adopts a newer term an agent told us of. 0 or a store error. */
int sc_coord_raft_adopt_term(sc_coord_t *c, int64_t seen, const char *from);
/* Adds role, leader, voters, commit_index, last_index, applied_index, leader_contact_ms,
 * may_act, tilted and members_mismatch to the status st; returns st. */
json_object *sc_coord_raft_status(sc_coord_t *c, json_object *st);

/* ---- sc_coord_notify.c: notifications ------------------------------------------------ */

/* The notifier of --notify (spec; NULL or "": none, and every call below does nothing), sent
 * from c's member. 0, or SC_E_CONFIG / an error named in err. */
int sc_coord_notify_new(sc_coord_t *c, const char *spec, char *err, size_t errlen);
/* Posts what is held, then stops the notifier (what is queued gets its stop grace, 2 s) and
 * frees it; takes c->notify NULL. */
void sc_coord_notify_destroy(sc_coord_t *c);
/* Entry e (data: its data parsed) was just applied live to the state (s_on_decide; never for the
 * entries a restart replays). On the leader, says what it means, once: leader_changed (TERM),
 * event_scheduled (EVENT_SEEN of a new event: held for the next plan round, which knows the
 * plan), drain_started (the first PREPARE_ORDERED of an event in a domain; the domain's next
 * orders join it), approved (APPROVAL_ANSWER rc 0), event_started, event_ended, hook_failed
 * (HOOK_PROGRESS failed, timed out, interrupted), deadline_missed (ALERT deadline, forced). */
void sc_coord_notify_entry(sc_coord_t *c, const sc_dlog_entry_t *e, json_object *data);
/* A plan round's input and output, before its actions are carried out: the event_scheduled
 * held are posted with the plan (drain order, drain time when it drains now, deadline). */
void sc_coord_notify_plan(sc_coord_t *c, const sc_plan_input_t *in, const sc_plan_output_t *out);
/* Posts the drain_started being gathered (end of a plan round). */
void sc_coord_notify_flush(sc_coord_t *c);
/* Logs what failed or was dropped since the last call (the notifier does not log). */
void sc_coord_notify_tick(sc_coord_t *c);
/* Every target's counters (sc_notify_stats_json; [] without a notifier), the caller's. */
json_object *sc_coord_notify_stats_json(const sc_coord_t *c);

/* ---- sc_coord_status.c: status and control ------------------------------------------- */

/* The control socket's handler (sc_ctl_handler_fn; ud is the sc_coord_t): status, events,
 * pause, resume. Returns the answer (the caller's). */
json_object *sc_coord_status_ctl_handler(void *ud, const char *cmd, json_object *req);

/* ---- sc_coord_forecast.c: forecasts and the plan's explanation ------------------------- */

/* Before a plan round's sc_plan: forecasts its events from the hooks' history (read from the
 * store at most once a second) and sets pe[i].forecast_late / forecast_why (borrowed from c
 * until the next call). A failure leaves the round without forecasts (logged). 0 or -errno. */
int sc_coord_forecast_fill(sc_coord_t *c, sc_plan_input_t *in, sc_plan_event_t *pe);
/* After it: keeps what the round decided and why, for schedcoordctl plan and the status. */
void sc_coord_forecast_note(sc_coord_t *c, const sc_plan_input_t *in, const sc_plan_output_t *out);
/* The control command "plan" (NULL for other commands): the last round, and the history. */
json_object *sc_coord_forecast_ctl(sc_coord_t *c, const char *cmd, json_object *req);
/* Adds the last round's forecast of event id to its status object je (if there is one). */
void sc_coord_forecast_status_event(sc_coord_t *c, json_object *je, const char *id);
/* Per member and phase: median, p95 and count of its hooks' durations (the caller's). */
json_object *sc_coord_forecast_history_json(sc_coord_t *c);
/* Frees c->fc. */
void sc_coord_forecast_free(sc_coord_t *c);

/* ---- sc_coord_rehearse.c / sc_coord_report.c: rehearsals --------------------------------- */

/* Whether event id is a rehearsal's (made up by the leader: never POSTed). */
bool sc_coord_rehearse_owns(const sc_coord_t *c, const char *id);
/* The plan approved rehearsal event id: the approval is simulated (EVENT_STARTED, nothing
 * POSTed). 0 or a store error. */
int sc_coord_rehearse_approve(sc_coord_t *c, const char *id, const char *reason);
/* The rehearsal's timers (leader, outside plan rounds): events released, started at NotBefore,
 * ended after --recover-after; stopped when a real event arrives; finished when all its events
 * are closed; the registry told of its events. 0 or a store error. */
int sc_coord_rehearse_tick(sc_coord_t *c, int64_t now);
/* The control commands "rehearse" (start one) and "rehearsal" (its report); NULL for others. */
json_object *sc_coord_rehearse_ctl(sc_coord_t *c, const char *cmd, json_object *req);
/* The last rehearsal's report (the caller's; NULL on ENOMEM). */
json_object *sc_coord_rehearse_report(sc_coord_t *c);
/* Frees c->rh. */
void sc_coord_rehearse_free(sc_coord_t *c);

#endif
