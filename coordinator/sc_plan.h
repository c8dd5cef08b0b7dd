/* sc_plan: the decision, as a pure function (DESIGN.md).
 *
 *   sc_plan(members, events with per-VM drain and approval state, policy, now) -> actions
 *
 * No I/O, no clocks, no logs: everything comes in through sc_plan_input_t. The daemon builds
 * the input from the registry (sc_registry.h), membership and the store, calls sc_plan() every
 * round, and carries out the actions (logging each decision first). The planner is stateless:
 * an action whose effect is not yet visible in the input comes back the next round, so the
 * daemon must move the state on as soon as it acts (PREPARE -> drain PREPARE_ORDERED, APPROVE ->
 * approval INTENT, RECOVER -> RECOVER_ORDERED, MEMBER_GONE -> member gone) and must deduplicate
 * ALERTs by (alert code, event, member).
 *
 * Event classes (policy keys in sc_policy.h):
 *  - NO_DRAIN: Freeze with 0 <= Duration < freeze_threshold_s, or a type in
 *    approve_without_drain: approve at once (unless pause); no drain, no recover, not busy.
 *  - EVICT: Preempt, Terminate: drain at once whatever else is happening (no fault-domain or
 *    min_healthy check, also under pause); approve when drained (not under pause); when the
 *    event ends its VMs get MEMBER_GONE instead of RECOVER (cancelled: RECOVER).
 *  - USER: EventSource User (Reboot/Redeploy/long Freeze): queued like PLATFORM, but once
 *    user_event_deadline_s has passed since first seen, approved (if approve_user_events and
 *    not pause) whatever its drain state (ALERT user_deadline) — if rule 2 allows it as for a
 *    new drain: the busy domains other than its own, plus its own, within max_fault_domains
 *    (an event wider than that alone: no other busy domain) and min_healthy kept. Otherwise it
 *    waits (ALERT user_deadline_blocked naming the busy domains; Azure starts it at NotBefore
 *    anyway). From the round it is approved, its undrained VMs count as impacted.
 *  - PLATFORM: everything else: queued by NotBefore; drained when its fault domain's turn
 *    comes; approved when every drained VM reported prepared, before NotBefore - margin.
 *
 * Safety rules (DESIGN.md):
 *  1. One approval per event: APPROVE only Scheduled, ACTIVE events whose approval is NONE
 *     (or FAILED with retry_at_ms <= now_ms), when every VM the policy drains is PREPARED.
 *     All events approved in one round go in ONE APPROVE action (one POST).
 *  2. Busy fault domains (members draining, drained, impacted, or needing/doing recover) never
 *     span more than max_fault_domains, and at least min_healthy members stay healthy: a new
 *     drain starts only if both hold afterwards. A forced event (Started without approval)
 *     makes its VMs impacted: their FD is busy, so nothing new starts until it is over; so
 *     does an approval (INTENT or APPROVED) of a VM left undrained (User deadline).
 *     A member with an unknown fault domain (-1) counts as a domain of its own. Under
 *     policy serialise_by UPDATE_DOMAIN every "fault domain" here is an update domain.
 *  3. Nothing forgotten: when an event is over (ENDED or CANCELLED), every VM whose drain was
 *     ever ordered (PREPARE_ORDERED, PREPARING, PREPARED, PREPARE_FAILED, PREPARE_INTERRUPTED)
 *     gets RECOVER; for an ENDED event that Started, also its VMs still in NONE (impacted
 *     without drain). Dead members get theirs when they come back (ALERT meanwhile).
 *  4. Deadlines: a PLATFORM event not fully drained at NotBefore - margin (queued too long, or
 *     a hook still running) gets ALERT DEADLINE and is left to Azure: it is approved only if
 *     its drain still completes before Azure starts it. When its turn comes after that point
 *     its drain is still ordered (best effort: a drained VM loses less).
 *     A PREPARE_FAILED or PREPARE_INTERRUPTED VM blocks its event's approval (ALERT
 *     prepare_failed), not the cluster: on an event still Scheduled (not Preempt/Terminate)
 *     the event's drain is rolled back (RECOVER every VM that prepared or failed), which frees
 *     its fault domain; once all are ROLLED_BACK it is drained again as a new attempt after
 *     sc_policy_retry_delay_ms, while prepare_attempts allow (ALERT drain_retry); else it is
 *     left to Azure. A rollback whose recover failed is not tried again.
 *  An event's own busy fault domains count for it, never against it (rule 2): an event that
 *  gained a VM in another domain goes as wide as both (alone if wider than allowed). An event
 *  whose class became NO_DRAIN after it was drained keeps its drained VMs busy and recovers
 *  them when it is over (rule 3).
 *
 * Strangers: names in Resources that are not members (sc_plan_event_t.strangers). Our one
 * POST would start the event for them too, cutting their own preparation short, so such an
 * event is never approved (ALERT strangers naming them; Azure starts it at NotBefore), unless
 * policy approve_with_strangers: then approved as usual once every member VM is drained (the
 * ALERT says so). Its members are drained as usual either way. An event naming no member at
 * all is left to Azure without an alert.
 *
 * Unknown EventStatus (neither Scheduled nor Started, ev->status_raw says what): never
 * approved, whatever its class; no new drain (not even Preempt/Terminate); VMs already ordered
 * to prepare are held (draining/drained: their domain busy) and recovered when it is over, like
 * a cancelled event's; its undrained VMs are not counted impacted. ALERT unknown_status.
 *
 * Drain progress of a VM on an admitted event, per attempt (1, 2, ...):
 *
 *   NONE ─PREPARE─▶ PREPARE_ORDERED ─▶ PREPARING ─▶ PREPARED ──(event over)──▶ RECOVER ...
 *                                            │
 *                                            └─▶ PREPARE_FAILED / _INTERRUPTED
 *                                                  │ event still Scheduled: RECOVER
 *                                                  ▼
 *                        ROLLED_BACK ──retry due, attempts left──▶ PREPARE (attempt + 1)
 *
 * Agents run each (event, phase, attempt) once and answer a new order of that attempt with
 * the recorded result. A dead member in NONE is skipped (not drained, not waited for, ALERT);
 * a dead member already ordered/preparing is waited for.
 */
#ifndef SC_PLAN_H
#define SC_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sc_event.h"
#include "sc_policy.h"
#include "sc_registry.h"

#define SC_PLAN_NONE ((size_t)-1) /* "no member" / "no event" in an action */
#define SC_PLAN_REASON_MAX 400    /* bytes of an action's reason, NUL included */
#define SC_PLAN_MAX_MEMBERS SC_REGISTRY_MAX_MEMBERS
#define SC_PLAN_MAX_EVENTS SC_REGISTRY_MAX_EVENTS

/* One VM's drain for one event (stored by the daemon per (event, member)). */
typedef enum {
    SC_DRAIN_NONE,                /* nothing ordered */
    SC_DRAIN_PREPARE_ORDERED,     /* PREPARE sent, not acknowledged */
    SC_DRAIN_PREPARING,           /* prepare hook running */
    SC_DRAIN_PREPARED,            /* prepare hook done (exit 0): drained */
    SC_DRAIN_PREPARE_FAILED,      /* prepare hook failed or timed out */
    SC_DRAIN_PREPARE_INTERRUPTED, /* the agent restarted during the hook */
    SC_DRAIN_RECOVER_ORDERED,     /* RECOVER sent, not acknowledged */
    SC_DRAIN_RECOVERING,          /* recover hook running */
    SC_DRAIN_RECOVERED,           /* recover hook done */
    SC_DRAIN_RECOVER_FAILED,      /* recover hook failed (ALERT; not retried) */
    SC_DRAIN_ROLLED_BACK,         /* a failed/interrupted prepare was recovered while its event
                                     was still listed: drained again (attempt + 1) after
                                     retry_at_ms, while attempts are left; after the event, a
                                     Started one's VM is recovered again (it was impacted) */
    SC_DRAIN_MAX
} sc_drain_state_t;

/* The approval of one event. */
typedef enum {
    SC_APPROVAL_NONE,       /* not approved */
    SC_APPROVAL_INTENT,     /* intent logged, POST in flight: never approved again meanwhile.
                               After a restart the daemon turns a dangling INTENT into APPROVED
                               (event Started or gone) or FAILED with retry_at = now. */
    SC_APPROVAL_APPROVED,   /* POST answered 200: never again */
    SC_APPROVAL_FAILED,     /* POST failed: retried when now_ms >= retry_at_ms */
    SC_APPROVAL_NOT_NEEDED, /* will not be approved (left to Azure, or started on its own) */
    SC_APPROVAL_UNKNOWN,    /* a POST that may still land (no HTTP status: a timeout, a delegate
                               that never answered, a tenure that ended before the answer): as
                               FAILED it is POSTed again (Azure answers 200 to a repeat), as
                               INTENT it blocks rollback, until a definite answer (an HTTP
                               status) or the event is Started or gone (proto/README.md) */
    SC_APPROVAL_MAX
} sc_approval_state_t;

/* A member as the planner sees it. */
typedef struct sc_plan_member {
    const char *name;  /* member name (borrowed) */
    int fault_domain;  /* platformFaultDomain, -1 when unknown */
    int update_domain; /* platformUpdateDomain, -1 when unknown */
    bool alive;        /* heartbeats arriving */
    bool gone;         /* left after Preempt/Terminate: ignored everywhere */
    bool is_self;      /* the leader's own member (approves through its own IMDS) */
    bool blind;        /* alive, but its IMDS has been failing (--imds-stale): its POSTs would
                        * fail, so it approves only when no other member can */
    bool unheard;      /* not alive, but never heard since the coordinator started: not known
                        * to be down (its agent may report to other coordinators: a members
                        * roll), so an event it is in waits for its drain, never skips it */
} sc_plan_member_t;

/* One VM in an event's Resources that is a member, or one Azure dropped from Resources (the
 * event was updated) after its prepare was ordered. A dropped VM is no longer affected: it is
 * not ordered, not waited for, not impacted, not evicted; but it stays draining/drained (its
 * fault domain busy) and is recovered when the event is over, like any prepared VM (rule 3).
 * Not at once: Azure may add it back, and agents never run a phase twice. */
typedef struct sc_plan_vm {
    size_t member;          /* index into sc_plan_input_t.members */
    sc_drain_state_t drain; /* its drain for this event */
    bool dropped;           /* no longer in Resources (only with a drain other than NONE) */
    int attempt;            /* attempt number of its last prepare order (0: none yet) */
    int64_t retry_at_ms;    /* ROLLED_BACK: monotonic ms before which it is not drained again */
} sc_plan_vm_t;

/* One event as the planner sees it. */
typedef struct sc_plan_event {
    const sc_event_t *ev;         /* latest content (borrowed): id, type, source, status, ... */
    sc_reg_phase_t phase;         /* ACTIVE, ENDED, CANCELLED (registry) */
    sc_start_kind_t start_kind;   /* how it started (registry) */
    int64_t first_seen_ms;        /* monotonic ms first seen (User deadline counts from it) */
    sc_approval_state_t approval; /* approval state */
    int64_t retry_at_ms;          /* FAILED: monotonic ms before which no new POST */
    const sc_plan_vm_t *vms;      /* the members named in Resources, with their drain */
    size_t n_vms;                 /* entries in vms */
    const size_t *seen_by;        /* indexes of members whose latest document holds it */
    size_t n_seen_by;             /* entries in seen_by */
    const char *const *strangers; /* names in Resources that are not members (borrowed) */
    size_t n_strangers;           /* entries in strangers */
    bool forecast_late;           /* the forecast (sc_forecast.h, from history) says its drain
                                     cannot be done in time: ALERT forecast_late while it is
                                     Scheduled and not approved */
    const char *forecast_why;     /* then: the VMs at risk and what would fit (borrowed) */
    bool rehearsal;               /* a rehearsal's: a Preempt or Terminate of it takes no VM */
} sc_plan_event_t;

typedef struct sc_plan_input {
    const sc_plan_member_t *members; /* every member of the cluster list */
    size_t n_members;                /* entries in members (<= SC_PLAN_MAX_MEMBERS) */
    const sc_plan_event_t *events;   /* active events, and final ones not yet recovered */
    size_t n_events;                 /* entries in events (<= SC_PLAN_MAX_EVENTS) */
    const sc_policy_t *policy;       /* the policy */
    int64_t now_wall_s;              /* unix seconds, only compared with NotBefore */
    int64_t now_ms;                  /* monotonic ms, compared with first_seen / retry_at */
} sc_plan_input_t;

typedef enum {
    SC_ACT_PREPARE,     /* order member to prepare (drain) for event */
    SC_ACT_RECOVER,     /* order member to recover after event */
    SC_ACT_APPROVE,     /* one POST through our own IMDS listing events[] */
    SC_ACT_APPROVE_VIA, /* delegate one POST listing events[] to member's agent */
    SC_ACT_ALERT,       /* tell the operator: alert, event, member (may be SC_PLAN_NONE) */
    SC_ACT_MEMBER_GONE, /* member left for good (Preempt/Terminate ended) */
    SC_ACT_MAX
} sc_action_kind_t;

typedef enum {
    SC_ALERT_NONE,                  /* not an alert */
    SC_ALERT_DEADLINE,              /* drain not done by NotBefore - margin: left to Azure */
    SC_ALERT_PREPARE_FAILED,        /* a prepare hook failed: event not approved */
    SC_ALERT_RECOVER_FAILED,        /* a recover hook failed */
    SC_ALERT_FORCED,                /* the event started without our approval */
    SC_ALERT_MEMBER_DOWN,           /* a member to drain/recover is not alive */
    SC_ALERT_NO_APPROVER,           /* no live member sees the event: cannot POST */
    SC_ALERT_USER_DEADLINE,         /* User event approved at its deadline without a full drain */
    SC_ALERT_TOO_WIDE,              /* the event alone spans more fault domains than allowed */
    SC_ALERT_DRAIN_RETRY,           /* a rolled-back drain is tried again (attempt k of N) */
    SC_ALERT_USER_DEADLINE_BLOCKED, /* User event past its deadline, undrained, not approved:
                                       another domain is busy (rule 2 wins) */
    SC_ALERT_UNKNOWN_STATUS,        /* an EventStatus this version does not know: never
                                       approved, no new drain */
    SC_ALERT_STRANGERS,             /* Resources name VMs outside the cluster: not approved
                                       (unless approve_with_strangers) */
    SC_ALERT_MALFORMED_EVENT,       /* an agent left a malformed IMDS event out (not the
                                       planner's) */
    SC_ALERT_FORECAST_LATE,         /* the forecast says the event's drain will not be done by
                                       its deadline (sc_plan_event_t.forecast_late) */
    SC_ALERT_MEMBERS_MISMATCH,      /* a coordinator runs with other --members (not the
                                       planner's: sc_coord_digest.c, log and counter only) */
    SC_ALERT_DOMAINS_HIDDEN,        /* every member reports the same fault domain (max
                                       spreading): serialised by VM (serialise-by auto) */
    SC_ALERT_MAX
} sc_alert_t;

typedef struct sc_action {
    sc_action_kind_t kind;           /* what to do */
    size_t member;                   /* PREPARE, RECOVER, APPROVE_VIA, MEMBER_GONE; ALERT or NONE */
    size_t event;                    /* PREPARE, RECOVER, ALERT (index into input events) or NONE */
    size_t *events;                  /* APPROVE, APPROVE_VIA: indexes into input events (owned) */
    size_t n_events;                 /* entries in events */
    sc_alert_t alert;                /* ALERT: which one */
    int attempt;                     /* PREPARE: the VM's attempt number for this order (1, 2..);
                                        ALERT prepare_failed / drain_retry: the attempt it is
                                        about (part of its de-duplication key); else 0 */
    char reason[SC_PLAN_REASON_MAX]; /* why, for the decision log and humans */
} sc_action_t;

/* The class of an event under the policy (see above; sc_plan_event_class). */
typedef enum {
    SC_CLASS_NO_DRAIN, /* short Freeze or approve_without_drain type */
    SC_CLASS_EVICT,    /* Preempt, Terminate */
    SC_CLASS_USER,     /* EventSource User */
    SC_CLASS_PLATFORM, /* the rest */
    SC_CLASS_MAX
} sc_event_class_t;

/* Member states for status (derived by the planner). */
typedef enum {
    SC_MEMBER_HEALTHY,    /* nothing going on */
    SC_MEMBER_DRAINING,   /* prepare ordered/running, or failed on a live event */
    SC_MEMBER_DRAINED,    /* prepared, event not started */
    SC_MEMBER_IMPACTED,   /* in an event that Started and has not ended */
    SC_MEMBER_RECOVERING, /* its event is over, recover pending or running */
    SC_MEMBER_GONE,       /* left after Preempt/Terminate */
    SC_MEMBER_STATE_MAX
} sc_member_state_t;

typedef struct sc_plan_output {
    sc_action_t *actions;            /* in order: MEMBER_GONE, RECOVER, PREPARE, APPROVE(_VIA),
                                        ALERT */
    size_t n_actions;                /* entries in actions */
    char **waiting_for;              /* per input event: what it waits for (owned strings) */
    bool *closable;                  /* per input event: over, and nothing owed any more (every
                                        VM that needed a recover reported it, or is gone): the
                                        daemon may forget it */
    sc_member_state_t *member_state; /* per input member */
    size_t n_events;                 /* entries in waiting_for (= input n_events) */
    size_t n_members;                /* entries in member_state (= input n_members) */
    size_t *drain_rank;              /* per input event: its place in the drain queue (0: drains
                                        first; rule 2's order: Preempt/Terminate, NotBefore,
                                        first seen), SC_PLAN_NONE when not queued (over,
                                        started, no drain, unknown status) */
    sc_event_class_t *ev_class;      /* per input event: its class under the policy */
} sc_plan_output_t;

/* The class of an event under the policy (see above). */
sc_event_class_t sc_plan_event_class(const sc_event_t *ev, const sc_policy_t *policy);
/* "no_drain", "evict", "user", "platform". */
const char *sc_event_class_name(sc_event_class_t c);

/* Plans one round. On success *ret_out is filled (release with sc_plan_output_release()).
 * -EINVAL for a NULL or inconsistent input (an index out of range, a NULL ev, a bad enum,
 * too many members/events, no policy), naming nothing (it is the daemon's bug); -ENOMEM. */
int sc_plan(const sc_plan_input_t *in, sc_plan_output_t *ret_out);
/* The drain queue: the events of in that are Scheduled and of a class that drains, in the
 * order the planner considers them for rule 2 (Preempt / Terminate first, then NotBefore, first
 * seen, input order) — the order sc_forecast_run() takes. Indexes into in->events go to
 * ret_order (room for in->n_events), their number to *ret_n. 0, or -EINVAL as sc_plan(). */
int sc_plan_queue(const sc_plan_input_t *in, size_t *ret_order, size_t *ret_n);
/* Frees what sc_plan() allocated and zeroes *out; takes NULL and zeroed outputs. */
void sc_plan_output_release(sc_plan_output_t *out);

/* Names for logs, JSON and the CLI ("prepare_ordered", "approved", "PREPARE", "deadline",
 * "draining"...). Never NULL. */
const char *sc_drain_state_name(sc_drain_state_t s);
const char *sc_approval_state_name(sc_approval_state_t s);
const char *sc_action_kind_name(sc_action_kind_t k);
const char *sc_alert_name(sc_alert_t a);
const char *sc_member_state_name(sc_member_state_t s);
/* Parses the names above back (for the store); -EINVAL when unknown. */
int sc_drain_state_from_name(const char *s, sc_drain_state_t *ret);
int sc_approval_state_from_name(const char *s, sc_approval_state_t *ret);

#endif
