/* sc_cstate: the coordinator's replicated state, changed only by applying decision-log entries.
 *
 * What the leader decided, and nothing else: the members as decided (fault and update domain,
 * gone), the events (their content as last decided, who saw them, started / ended and how),
 * every VM's drain and attempt, every event's approval and open intent, the alerts raised, the
 * operator's pause, the term. sc_cstate_apply() is the only way it changes: the leader applies
 * each entry it appends (sc_store_on_decide), a restart applies the entries after its last
 * snapshot, a follower the entries its leader sends — the same function, so the same state.
 * What is not replicated (connections, liveness, the agents' reports, timers, counters) is the
 * coordinator's and stays out of it.
 *
 * Two tables drive it, each with its diagram in sc_cstate.c: the drain of one VM for one event
 * (sc_cstate_drain_next) and the approval of one event (sc_cstate_approval_next). The store's
 * projection of drains and the coordinator's live reports use the same tables.
 *
 * Deterministic: apply reads only the entry (its index, term, wall_ms and data) and the state.
 * Entries must come in index order without gaps. sc_cstate_to_json() is the snapshot (and the
 * comparison of two states); sc_cstate_from_json() loads one. Does not log. */
#ifndef SC_CSTATE_H
#define SC_CSTATE_H

#include "sc_dlog.h"
#include "sc_event.h"
#include "sc_members.h"
#include "sc_msg.h"
#include "sc_plan.h"
#include "sc_registry.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SC_CSTATE_NONE ((size_t)-1) /* "no member" */
#define SC_CSTATE_MAX_ALERTS 10000  /* alert keys remembered (de-duplication) */
#define SC_CSTATE_MAX_CLOSED 65536  /* closed events remembered (tombstones) */
#define SC_CSTATE_ALERT_KEY_MAX 511 /* bytes of an alert key */

/* What happens to one VM's drain: an order, or a hook report (sc_cstate_drain_input). */
typedef enum {
    SC_DIN_PREPARE_ORDERED,     /* PREPARE ordered (a new attempt after a rollback too) */
    SC_DIN_PREPARE_STARTED,     /* prepare hook started */
    SC_DIN_PREPARE_DONE,        /* prepare done or skipped: drained */
    SC_DIN_PREPARE_FAILED,      /* prepare failed or timed out */
    SC_DIN_PREPARE_INTERRUPTED, /* the agent restarted during the prepare */
    SC_DIN_RECOVER_ORDERED,     /* RECOVER ordered */
    SC_DIN_RECOVER_STARTED,     /* recover hook started */
    SC_DIN_RECOVER_DONE_LISTED, /* recover done while the event is still listed: a rollback */
    SC_DIN_RECOVER_DONE_OVER,   /* recover done after the event is over */
    SC_DIN_RECOVER_FAILED,      /* recover failed, timed out or interrupted (final: ALERT) */
    SC_DIN_REFUSED,             /* the agent did not run the order: it is sent again */
    SC_DIN_MAX
} sc_drain_input_t;

/* What happens to one event's approval. */
typedef enum {
    SC_AIN_INTENT,         /* an approval intent names it (POST or delegation under way) */
    SC_AIN_ANSWER_OK,      /* its intent was answered 2xx (or resolved as done) */
    SC_AIN_ANSWER_FAILED,  /* its intent failed (or timed out, or resolved as not done) */
    SC_AIN_STARTED,        /* Azure started it */
    SC_AIN_ANSWER_UNKNOWN, /* its intent got no HTTP status: the POST may still land */
    SC_AIN_MAX
} sc_approval_input_t;

/* One member as decided. */
typedef struct sc_cs_member {
    char name[SC_NAME_MAX + 1];                /* from the members list */
    char endpoint[SC_MEMBER_ENDPOINT_MAX + 1]; /* as recorded ("" until recorded) */
    int fault_domain;                          /* -1 unknown */
    int update_domain;                         /* -1 unknown */
    bool gone;                                 /* left after a Preempt / Terminate */
    char gone_boot_id[SC_MSG_BOOT_ID_MAX + 1]; /* agent boot id it was gone with ("") */
} sc_cs_member_t;

/* One event as decided. drain[] and attempt[] have one entry per member. */
typedef struct sc_cs_event {
    sc_event_t ev;                /* content as last decided (EVENT_SEEN) */
    char **seen_by;               /* members whose documents held it */
    size_t n_seen_by;             /* entries */
    int64_t observed_ms;          /* when that content was read from IMDS (merge rule), 0 */
    int64_t first_seen_ms;        /* wall ms of its first EVENT_SEEN */
    int64_t started_ms;           /* wall ms of EVENT_STARTED, 0 */
    int64_t ended_ms;             /* wall ms of EVENT_ENDED, 0 */
    sc_reg_phase_t phase;         /* ACTIVE until EVENT_ENDED */
    sc_start_kind_t start_kind;   /* how it started (NONE until EVENT_STARTED) */
    sc_approval_state_t approval; /* sc_cstate_approval_next */
    int64_t intent;               /* index of its open APPROVAL_INTENT, 0 */
    size_t via;                   /* that intent's delegate, SC_CSTATE_NONE: the leader POSTs */
    int64_t approved_ms;          /* wall ms of the answer that approved it, 0 */
    bool unsure;                  /* a POST of it got no answer (may still land): a later
                                     definite failure of another POST is unknown too, until an
                                     OK answer (the model's counterexample, tests/model) */
    sc_drain_state_t *drain;      /* per member: sc_cstate_drain_next */
    int *attempt;                 /* per member: drain attempt of its last order, 0 */
    int64_t rehearsal;            /* the rehearsal it was made for (0: a real event) */
} sc_cs_event_t;

/* An event closed (nothing owed any more): its tombstone. */
typedef struct sc_cs_closed {
    char id[SC_EVENT_ID_MAX + 1]; /* EventId */
    sc_reg_phase_t phase;         /* ENDED or CANCELLED (ACTIVE: closed while listed) */
    int64_t ended_ms;             /* wall ms it ended (0: never ended) */
} sc_cs_closed_t;

/* A rehearsal's state (SC_DLOG_REHEARSAL entries):
 *
 *   (none) ─started─▶ running ─stopped─▶ stopped ─finished─▶ finished ─started─▶ running ...
 *                        └──────────────finished──────────────▲
 *
 * A new one starts only when the last one is finished (or none was). */
typedef enum {
    SC_REHEARSAL_NONE,     /* none yet */
    SC_REHEARSAL_RUNNING,  /* its events are planned as real ones, nothing is POSTed */
    SC_REHEARSAL_STOPPED,  /* a real event arrived: its events end, what it prepared recovers */
    SC_REHEARSAL_FINISHED, /* all its events are closed: the report is final */
    SC_REHEARSAL_STATE_MAX
} sc_rehearsal_state_t;

/* One synthetic event of a rehearsal: the VMs of one domain (rule 2's), or of one VM whose
 * domain is unknown. */
typedef struct sc_cs_rh_group {
    char event_id[SC_EVENT_ID_MAX + 1]; /* its EventId ("rehearsal-N-fdD") */
    int domain;                         /* its domain, -1 unknown */
    char **vms;                         /* member names */
    size_t n_vms;                       /* entries */
} sc_cs_rh_group_t;

/* The last rehearsal. */
typedef struct sc_cs_rehearsal {
    int64_t id;                 /* 1, 2, ... (0: none yet) */
    int64_t index;              /* log index of its "started" entry */
    sc_rehearsal_state_t state; /* see above */
    sc_event_type_t type;       /* the event type rehearsed */
    char scope[128];            /* what was rehearsed, for humans ("the whole set") */
    int64_t recover_after_s;    /* its events end this long after they start */
    int64_t not_before;         /* unix s: its events' NotBefore (start + the type's notice) */
    int64_t started_ms;         /* wall ms of its "started" entry */
    int64_t stopped_ms;         /* wall ms of its "stopped" entry, 0 */
    int64_t finished_ms;        /* wall ms of its "finished" entry, 0 */
    char why[256];              /* stopped: why ("real event X arrived") */
    sc_cs_rh_group_t *groups;   /* its events, in the order they are released */
    size_t n_groups;            /* entries */
    size_t n_released;          /* groups whose event was seen (EVENT_SEEN naming it) */
} sc_cs_rehearsal_t;

typedef struct sc_cstate sc_cstate_t;

/* The drain table: the state after input in, from cur (a failed action — an input that does not
 * apply — leaves it unchanged). */
sc_drain_state_t sc_cstate_drain_next(sc_drain_state_t cur, sc_drain_input_t in);
/* The input a hook report is: phase, its state, and whether the event is still listed.
 * SC_DIN_MAX for a phase or state out of range. */
sc_drain_input_t sc_cstate_drain_input(sc_msg_phase_t phase, sc_msg_hook_state_t st, bool listed);
/* The approval table. */
sc_approval_state_t sc_cstate_approval_next(sc_approval_state_t cur, sc_approval_input_t in);
/* "prepare_ordered", ...; "unknown" out of range. */
const char *sc_drain_input_name(sc_drain_input_t in);
const char *sc_approval_input_name(sc_approval_input_t in);

/* An empty state for the members names[n] (the --members list, in its order; copied). 0,
 * -EINVAL (no member, a name too long) or -ENOMEM. */
int sc_cstate_new(const char *const *names, size_t n, sc_cstate_t **ret_cs);
/* Frees; takes NULL; nulls. */
void sc_cstate_destroy(sc_cstate_t **cs);

/* Applies entry e. data: e->data already parsed (borrowed), or NULL to parse it here. e->index
 * must be the next one (sc_cstate_applied + 1). 0; -EINVAL with the reason in err (may be
 * NULL) for an entry out of order or of the wrong shape — then nothing changed; -ENOMEM. An
 * entry naming a member or an event the state does not have changes nothing and returns 0 (a
 * leader logs hook progress only for events it has). */
int sc_cstate_apply(sc_cstate_t *cs, const sc_dlog_entry_t *e, json_object *data, char *err,
                    size_t errlen);

/* Counts entry index (the next one) as applied without applying it: a replay passing over an
 * entry sc_cstate_apply refused (the same on every replica: apply is deterministic). 0 or
 * -EINVAL when index is not the next one. */
int sc_cstate_skip(sc_cstate_t *cs, int64_t index);

/* The index of the last entry applied (0: none), and the newest term. */
int64_t sc_cstate_applied(const sc_cstate_t *cs);
int64_t sc_cstate_term(const sc_cstate_t *cs);
/* Whether the operator's last pause / resume was a pause. */
bool sc_cstate_paused(const sc_cstate_t *cs);

/* Members, in --members order. */
size_t sc_cstate_n_members(const sc_cstate_t *cs);
const sc_cs_member_t *sc_cstate_member(const sc_cstate_t *cs, size_t i);
/* The member named n (a leading '_' of api 2017-03-01 ignored), SC_CSTATE_NONE if none. */
size_t sc_cstate_member_find(const sc_cstate_t *cs, const char *n);

/* Events not closed, in the order they were first seen. Borrowed: valid until the next apply. */
size_t sc_cstate_n_events(const sc_cstate_t *cs);
const sc_cs_event_t *sc_cstate_event_at(const sc_cstate_t *cs, size_t i);
const sc_cs_event_t *sc_cstate_event_find(const sc_cstate_t *cs, const char *id);
/* Closed events, oldest first (at most SC_CSTATE_MAX_CLOSED). */
size_t sc_cstate_n_closed(const sc_cstate_t *cs);
const sc_cs_closed_t *sc_cstate_closed_at(const sc_cstate_t *cs, size_t i);

/* The last rehearsal (its state NONE when there was none). Borrowed: valid until the next
 * apply. */
const sc_cs_rehearsal_t *sc_cstate_rehearsal(const sc_cstate_t *cs);
/* "none", "running", "stopped", "finished"; "unknown" out of range. */
const char *sc_rehearsal_state_name(sc_rehearsal_state_t s);

/* The de-duplication key of an alert: "KIND|EVENT|DEDUP|ATTEMPT" (event NULL: "-"). */
void sc_cstate_alert_key(char *buf, size_t len, const char *kind, const char *event_id,
                         const char *dedup, int attempt);
/* Whether an alert of that key was raised (and remembered). */
bool sc_cstate_alert_raised(const sc_cstate_t *cs, const char *key);

/* The whole state as JSON (the snapshot; two states are equal when these are):
 *   {"applied","term","paused","members":[{"name","endpoint","fault_domain","update_domain",
 *    "gone","gone_boot_id"}],"events":[{"event":{IMDS shape},"seen_by","observed_ms",
 *    "first_seen_ms","started_ms","ended_ms","phase","start_kind","approval","intent","via",
 *    "approved_ms","drains":{"VM":{"state","attempt"}},"rehearsal"?}],"closed":[{"id","phase",
 *    "ended_ms"}],"alerts":[keys],"rehearsal":{"id","index","state","event_type","scope",
 *    "recover_after_s","not_before","started_ms","stopped_ms","finished_ms","why","released",
 *    "groups":[{"event_id","domain","vms"}]} or null}
 * *ret_json is the caller's. 0 or -ENOMEM. */
int sc_cstate_to_json(const sc_cstate_t *cs, json_object **ret_json);
/* Loads a snapshot made by sc_cstate_to_json into cs, which must be empty (nothing applied).
 * A member of the snapshot that cs does not have is skipped (--members changed); a drain of
 * one too. 0; -EINVAL with the reason in err; -ENOMEM. On error cs is unchanged. */
int sc_cstate_from_json(sc_cstate_t *cs, json_object *snap, char *err, size_t errlen);

#endif
