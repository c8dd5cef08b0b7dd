/* sc_plan: the decision, as a pure function (see sc_plan.h for the rules it keeps). */
#include "sc_plan.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_WAIT_MAX 512       /* bytes of one waiting_for text */
#define S_MULTI ((size_t)-2) /* busy_ev: busy for more than one event */

/* Per-event facts computed once per round. */
typedef struct s_ev {
    sc_event_class_t cls;  /* class under the policy */
    bool over;             /* ENDED or CANCELLED */
    bool started;          /* EventStatus Started */
    bool scheduled;        /* active and not started: may still be drained / approved */
    bool unknown;          /* active, not started, EventStatus unknown: held, never approved */
    bool admitted;         /* some VM's drain was ordered */
    bool rollback;         /* Scheduled, and a prepare failed: its drain is rolled back */
    bool in_flight;        /* some VM prepares, is prepared, failed, or recovers */
    bool retry_ready;      /* rolled back, every VM's retry time come, attempts left */
    bool closable;         /* over, nothing owed (s_plan_over) */
    char wait[S_WAIT_MAX]; /* waiting_for text being built */
} s_ev_t;

typedef struct s_plan {
    const sc_plan_input_t *in; /* the input */
    const sc_policy_t *p;      /* in->policy */
    s_ev_t *ev;                /* per input event */
    sc_member_state_t *mstate; /* per input member */
    sc_action_t *acts;         /* actions so far */
    size_t n_acts;             /* entries in acts */
    size_t cap_acts;           /* capacity of acts */
    int *busy_fd;              /* busy fault-domain keys (distinct) */
    size_t n_busy_fd;          /* entries in busy_fd */
    int *scratch_fd;           /* one event's fault-domain keys (room for n_members) */
    int *other_fd;             /* fault domains busy for other events (room for n_members) */
    size_t *busy_ev;           /* per member: the event that makes it busy, SC_PLAN_NONE when
                                  healthy, S_MULTI when more than one */
    int healthy;               /* members alive, not gone, HEALTHY */
    int min_healthy;           /* members that must stay healthy */
    bool *gone_sent;           /* MEMBER_GONE already planned for this member */
    size_t *reserved;          /* per member: the drain-queue rank of the first event left to
                                  Azure (past NotBefore - margin) with this member undrained,
                                  SC_PLAN_NONE when none (s_reserve) */
} s_plan_t;

/* ---- names ------------------------------------------------------------------------------- */

static const char *const s_drain_names[SC_DRAIN_MAX] = {
    "none",           "prepare_ordered",     "preparing",       "prepared",
    "prepare_failed", "prepare_interrupted", "recover_ordered", "recovering",
    "recovered",      "recover_failed",      "rolled_back"};
static const char *const s_approval_names[SC_APPROVAL_MAX] = {"none",   "intent",     "approved",
                                                              "failed", "not_needed", "unknown"};
static const char *const s_action_names[SC_ACT_MAX] = {"PREPARE",     "RECOVER", "APPROVE",
                                                       "APPROVE_VIA", "ALERT",   "MEMBER_GONE"};
static const char *const s_alert_names[SC_ALERT_MAX] = {
    "none",          "deadline",        "prepare_failed",        "recover_failed",
    "forced",        "member_down",     "no_approver",           "user_deadline",
    "too_wide",      "drain_retry",     "user_deadline_blocked", "unknown_status",
    "strangers",     "malformed_event", "forecast_late",         "members_mismatch",
    "domains_hidden"};
static const char *const s_member_names[SC_MEMBER_STATE_MAX] = {"healthy",  "draining",   "drained",
                                                                "impacted", "recovering", "gone"};
static const char *const s_class_names[SC_CLASS_MAX] = {"no_drain", "evict", "user", "platform"};

const char *sc_drain_state_name(sc_drain_state_t s)
{
    return s >= 0 && s < SC_DRAIN_MAX ? s_drain_names[s] : "unknown";
}

const char *sc_approval_state_name(sc_approval_state_t s)
{
    return s >= 0 && s < SC_APPROVAL_MAX ? s_approval_names[s] : "invalid";
}

const char *sc_action_kind_name(sc_action_kind_t k)
{
    return k >= 0 && k < SC_ACT_MAX ? s_action_names[k] : "unknown";
}

const char *sc_alert_name(sc_alert_t a)
{
    return a >= 0 && a < SC_ALERT_MAX ? s_alert_names[a] : "unknown";
}

const char *sc_member_state_name(sc_member_state_t s)
{
    return s >= 0 && s < SC_MEMBER_STATE_MAX ? s_member_names[s] : "unknown";
}

const char *sc_event_class_name(sc_event_class_t c)
{
    return c >= 0 && c < SC_CLASS_MAX ? s_class_names[c] : "unknown";
}

int sc_drain_state_from_name(const char *s, sc_drain_state_t *ret)
{
    for (int i = 0; s && i < SC_DRAIN_MAX; i++) {
        if (strcmp(s, s_drain_names[i]) == 0) {
            *ret = (sc_drain_state_t)i;
            return 0;
        }
    }
    return -EINVAL;
}

int sc_approval_state_from_name(const char *s, sc_approval_state_t *ret)
{
    for (int i = 0; s && i < SC_APPROVAL_MAX; i++) {
        if (strcmp(s, s_approval_names[i]) == 0) {
            *ret = (sc_approval_state_t)i;
            return 0;
        }
    }
    return -EINVAL;
}

sc_event_class_t sc_plan_event_class(const sc_event_t *ev, const sc_policy_t *policy)
{
    if (ev->type == SC_EVENT_PREEMPT || ev->type == SC_EVENT_TERMINATE)
        return SC_CLASS_EVICT;
    if (ev->type == SC_EVENT_FREEZE && ev->has_duration && ev->duration_s >= 0 &&
        (double)ev->duration_s < policy->freeze_threshold_s)
        return SC_CLASS_NO_DRAIN;
    if (ev->type > SC_EVENT_TYPE_UNKNOWN && ev->type < SC_EVENT_TYPE_MAX &&
        (policy->approve_without_drain & (1u << ev->type)))
        return SC_CLASS_NO_DRAIN;
    if (ev->source == SC_EVENT_SOURCE_USER)
        return SC_CLASS_USER;
    return SC_CLASS_PLATFORM;
}

/* ---- helpers ----------------------------------------------------------------------------- */

static void s_wait(s_ev_t *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends "; text" (or text) to the event's waiting_for. */
static void s_wait(s_ev_t *e, const char *fmt, ...)
{
    size_t len = strlen(e->wait);
    va_list ap;

    if (len + 3 >= sizeof(e->wait))
        return;
    if (len) {
        memcpy(e->wait + len, "; ", 3);
        len += 2;
    }
    va_start(ap, fmt);
    vsnprintf(e->wait + len, sizeof(e->wait) - len, fmt, ap);
    va_end(ap);
}

static int s_act(s_plan_t *pl, sc_action_kind_t kind, size_t member, size_t event, sc_alert_t alert,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Appends an action; for APPROVE / APPROVE_VIA the events are added with s_act_add_event. */
static int s_act(s_plan_t *pl, sc_action_kind_t kind, size_t member, size_t event, sc_alert_t alert,
                 const char *fmt, ...)
{
    sc_action_t *a;
    va_list ap;

    if (pl->n_acts == pl->cap_acts) {
        size_t cap = pl->cap_acts ? pl->cap_acts * 2 : 16;
        sc_action_t *grown = realloc(pl->acts, cap * sizeof(*grown));

        if (!grown)
            return -ENOMEM;
        pl->acts = grown;
        pl->cap_acts = cap;
    }
    a = &pl->acts[pl->n_acts++];
    memset(a, 0, sizeof(*a));
    a->kind = kind;
    a->member = member;
    a->event = event;
    a->alert = alert;
    va_start(ap, fmt);
    vsnprintf(a->reason, sizeof(a->reason), fmt, ap);
    va_end(ap);
    return 0;
}

static int s_act_add_event(sc_action_t *a, size_t event)
{
    size_t *grown = realloc(a->events, (a->n_events + 1) * sizeof(*grown));

    if (!grown)
        return -ENOMEM;
    a->events = grown;
    a->events[a->n_events++] = event;
    return 0;
}

/* A domain key (serialise-by: the fault or the update domain), or a key of its own for a member
 * whose domain is unknown, and for every member when serialised by VM. (The caller resolves
 * serialise-by auto; here it means fault domains.) */
static int s_fd_key(const s_plan_t *pl, size_t m)
{
    int fd = pl->p->serialise_by == SC_SERIALISE_UPDATE_DOMAIN ? pl->in->members[m].update_domain
             : pl->p->serialise_by == SC_SERIALISE_VM          ? -1
                                                               : pl->in->members[m].fault_domain;

    return fd >= 0 ? fd : -2 - (int)m;
}

static bool s_fd_in(const int *set, size_t n, int key)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == key)
            return true;
    return false;
}

static void s_fd_add(int *set, size_t *n, int key)
{
    if (!s_fd_in(set, *n, key))
        set[(*n)++] = key;
}

/* "fault domain" or "update domain": what s_fd_key() counts, for texts. */
static const char *s_domain(const s_plan_t *pl)
{
    return pl->p->serialise_by == SC_SERIALISE_UPDATE_DOMAIN ? "update domain"
           : pl->p->serialise_by == SC_SERIALISE_VM          ? "VM"
                                                             : "fault domain";
}

/* Lists the busy fault domains as text ("1, 2", unknown ones as "?"; serialised by VM, the
 * VMs' names). */
static void s_fd_text(const s_plan_t *pl, const int *set, size_t n, char *buf, size_t len)
{
    bool vm = pl->p->serialise_by == SC_SERIALISE_VM;
    size_t off = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < n && off + 8 < len; i++) {
        size_t m = set[i] <= -2 ? (size_t)(-2 - set[i]) : SC_PLAN_NONE;
        int w = set[i] >= 0 ? snprintf(buf + off, len - off, "%s%d", i ? ", " : "", set[i])
                : vm && m < pl->in->n_members
                    ? snprintf(buf + off, len - off, "%s%s", i ? ", " : "", pl->in->members[m].name)
                    : snprintf(buf + off, len - off, "%s?", i ? ", " : "");
        if (w < 0)
            break;
        off += (size_t)w;
    }
}

static bool s_prepare_touched(sc_drain_state_t s)
{
    return s == SC_DRAIN_PREPARE_ORDERED || s == SC_DRAIN_PREPARING || s == SC_DRAIN_PREPARED ||
           s == SC_DRAIN_PREPARE_FAILED || s == SC_DRAIN_PREPARE_INTERRUPTED;
}

/* Whether event i, a Preempt or Terminate, is over with its VMs gone: it ended — or it was
 * decided "cancelled" although it had started (witnesses whose views differed, the deleted VM's
 * among them: nemesis seed 99 held a started, approved Preempt as cancelled, and its deleted
 * VM was owed a recover for good, its fault domain busy). An event that started cannot have
 * been cancelled — except a rehearsal's Preempt or Terminate, which ends so: its VM is not
 * going away (sc_coord_rehearse.c). */
static bool s_evicted(const s_plan_t *pl, size_t i)
{
    const sc_plan_event_t *e = &pl->in->events[i];

    return pl->ev[i].cls == SC_CLASS_EVICT &&
           (e->phase == SC_REG_ENDED ||
            (e->phase == SC_REG_CANCELLED && e->start_kind != SC_START_NONE && !e->rehearsal));
}

/* Whether the VM needs a RECOVER now that event i is over (rule 3). */
static bool s_needs_recover(const s_plan_t *pl, size_t i, const sc_plan_vm_t *vm)
{
    const sc_plan_event_t *e = &pl->in->events[i];

    if (s_prepare_touched(vm->drain))
        return true;
    /* impacted without drain (forced, or approved undrained at a user deadline, or after its
     * failed drain was rolled back); a VM dropped from Resources was not impacted, nor was one
     * of an event that needs no drain (a short Freeze) */
    return (vm->drain == SC_DRAIN_NONE || vm->drain == SC_DRAIN_ROLLED_BACK) && !vm->dropped &&
           e->phase == SC_REG_ENDED && pl->ev[i].started && pl->ev[i].cls != SC_CLASS_NO_DRAIN;
}

/* Whether the VM may be ordered to prepare for event i now: never ordered, or rolled back
 * with the whole event's drain rolled back, attempts left and the retry time come (not under
 * pause: a retry is a new drain). */
static bool s_orderable(const s_plan_t *pl, size_t i, const sc_plan_vm_t *vm)
{
    if (pl->ev[i].rollback)
        return (vm->drain == SC_DRAIN_ROLLED_BACK || vm->drain == SC_DRAIN_NONE) &&
               pl->ev[i].retry_ready && !pl->p->pause;
    return vm->drain == SC_DRAIN_NONE;
}

static const char *s_mname(const s_plan_t *pl, size_t m)
{
    const char *n = pl->in->members[m].name;

    return n ? n : "?";
}

static int s_state_rank(sc_member_state_t s)
{
    static const int rank[SC_MEMBER_STATE_MAX] = {0, 1, 2, 4, 3, 5};

    return rank[s];
}

/* Member m is (at least) in state s because of event i. */
static void s_mark(s_plan_t *pl, size_t m, sc_member_state_t s, size_t i)
{
    if (s_state_rank(s) > s_state_rank(pl->mstate[m]))
        pl->mstate[m] = s;
    if (s != SC_MEMBER_HEALTHY && s != SC_MEMBER_GONE)
        pl->busy_ev[m] = pl->busy_ev[m] == SC_PLAN_NONE || pl->busy_ev[m] == i ? i : S_MULTI;
}

/* ---- validation -------------------------------------------------------------------------- */

static int s_validate(const sc_plan_input_t *in)
{
    if (!in->policy || in->n_members > SC_PLAN_MAX_MEMBERS || in->n_events > SC_PLAN_MAX_EVENTS ||
        (in->n_members && !in->members) || (in->n_events && !in->events))
        return -EINVAL;
    for (size_t i = 0; i < in->n_events; i++) {
        const sc_plan_event_t *e = &in->events[i];

        if (!e->ev || e->phase < 0 || e->phase >= SC_REG_PHASE_MAX || e->approval < 0 ||
            e->approval >= SC_APPROVAL_MAX || (e->n_vms && !e->vms) ||
            (e->n_seen_by && !e->seen_by) || e->n_vms > in->n_members ||
            e->n_seen_by > in->n_members || (e->n_strangers && !e->strangers) ||
            e->n_strangers > SC_EVENT_MAX_RESOURCES)
            return -EINVAL;
        for (size_t j = 0; j < e->n_strangers; j++)
            if (!e->strangers[j])
                return -EINVAL;
        for (size_t j = 0; j < e->n_vms; j++)
            if (e->vms[j].member >= in->n_members || e->vms[j].drain < 0 ||
                e->vms[j].drain >= SC_DRAIN_MAX)
                return -EINVAL;
        for (size_t j = 0; j < e->n_seen_by; j++)
            if (e->seen_by[j] >= in->n_members)
                return -EINVAL;
    }
    return 0;
}

/* The facts of event i every part of the round starts from: class, over, started, unknown,
 * scheduled. */
static void s_facts(const sc_plan_input_t *in, size_t i, s_ev_t *x)
{
    const sc_plan_event_t *e = &in->events[i];

    x->cls = sc_plan_event_class(e->ev, in->policy);
    x->over = e->phase != SC_REG_ACTIVE;
    x->started = sc_event_is_started(e->ev) || e->start_kind != SC_START_NONE;
    x->unknown = !x->over && !x->started && e->ev->status == SC_EVENT_STATUS_UNKNOWN;
    x->scheduled = !x->over && !x->started && !x->unknown;
}

/* ---- the round --------------------------------------------------------------------------- */

/* Member states and busy fault domains from what is going on (rule 2's "busy"). */
static void s_compute_states(s_plan_t *pl)
{
    const sc_plan_input_t *in = pl->in;

    for (size_t m = 0; m < in->n_members; m++)
        pl->mstate[m] = in->members[m].gone ? SC_MEMBER_GONE : SC_MEMBER_HEALTHY;
    for (size_t i = 0; i < in->n_events; i++) {
        const sc_plan_event_t *e = &in->events[i];
        s_ev_t *x = &pl->ev[i];

        /* An event that needs no drain (a short Freeze) makes nobody busy, unless it needed
         * one before (its DurationInSeconds changed, or the policy across a restart): the VMs
         * drained then stay busy until recovered (rule 3). */
        if (x->cls == SC_CLASS_NO_DRAIN && !x->admitted)
            continue;
        for (size_t j = 0; j < e->n_vms; j++) {
            size_t m = e->vms[j].member;
            sc_drain_state_t s = e->vms[j].drain;

            if (in->members[m].gone ||
                (x->cls == SC_CLASS_NO_DRAIN && (s == SC_DRAIN_NONE || s == SC_DRAIN_ROLLED_BACK)))
                continue;
            if (x->over) {
                if (s_evicted(pl, i) && !e->vms[j].dropped)
                    continue; /* leaving: MEMBER_GONE */
                if (s == SC_DRAIN_RECOVER_ORDERED || s == SC_DRAIN_RECOVERING ||
                    s_needs_recover(pl, i, &e->vms[j]))
                    s_mark(pl, m, SC_MEMBER_RECOVERING, i);
            } else if (x->started && !e->vms[j].dropped) {
                s_mark(pl, m, SC_MEMBER_IMPACTED, i);
            } else if (s == SC_DRAIN_NONE && !e->vms[j].dropped &&
                       (e->approval == SC_APPROVAL_INTENT || e->approval == SC_APPROVAL_APPROVED ||
                        e->approval == SC_APPROVAL_UNKNOWN)) {
                /* approved undrained (User deadline): impacted as soon as Azure starts it */
                s_mark(pl, m, SC_MEMBER_IMPACTED, i);
            } else if (s == SC_DRAIN_PREPARED) {
                s_mark(pl, m, SC_MEMBER_DRAINED, i);
            } else if (s_prepare_touched(s)) {
                s_mark(pl, m, SC_MEMBER_DRAINING, i);
            } else if (s == SC_DRAIN_RECOVER_ORDERED || s == SC_DRAIN_RECOVERING) {
                s_mark(pl, m, SC_MEMBER_RECOVERING, i);
            }
        }
    }
    pl->healthy = 0;
    for (size_t m = 0; m < in->n_members; m++) {
        sc_member_state_t s = pl->mstate[m];

        if (s == SC_MEMBER_HEALTHY && in->members[m].alive)
            pl->healthy++;
        else if (s != SC_MEMBER_HEALTHY && s != SC_MEMBER_GONE)
            s_fd_add(pl->busy_fd, &pl->n_busy_fd, s_fd_key(pl, m));
    }
}

/* Rule 3 for events that are over: RECOVER, or MEMBER_GONE after Preempt/Terminate. */
static int s_plan_over(s_plan_t *pl, size_t i)
{
    const sc_plan_event_t *e = &pl->in->events[i];
    s_ev_t *x = &pl->ev[i];
    const char *what = e->phase == SC_REG_ENDED ? "ended" : "was cancelled";
    size_t pending = 0;
    int rc;

    if (x->cls == SC_CLASS_NO_DRAIN && !x->admitted) {
        s_wait(x, "done (no drain)");
        x->closable = true;
        return 0;
    }
    for (size_t j = 0; j < e->n_vms; j++) {
        size_t m = e->vms[j].member;
        sc_drain_state_t s = e->vms[j].drain;

        if (pl->in->members[m].gone)
            continue;
        if (s_evicted(pl, i) && !e->vms[j].dropped) {
            pending++; /* until the member is gone */
            if (!pl->gone_sent[m]) {
                pl->gone_sent[m] = true;
                if ((rc = s_act(pl, SC_ACT_MEMBER_GONE, m, i, SC_ALERT_NONE,
                                "%s event %s ended: %s is gone", sc_event_type_name(e->ev->type),
                                e->ev->id, s_mname(pl, m))) < 0)
                    return rc;
            }
            continue;
        }
        if (s == SC_DRAIN_RECOVER_FAILED) {
            if ((rc = s_act(pl, SC_ACT_ALERT, m, i, SC_ALERT_RECOVER_FAILED,
                            "recover hook failed on %s after event %s", s_mname(pl, m),
                            e->ev->id)) < 0)
                return rc;
            s_wait(x, "recover failed on %s", s_mname(pl, m));
        } else if (s == SC_DRAIN_RECOVER_ORDERED || s == SC_DRAIN_RECOVERING) {
            pending++;
            s_wait(x, "recovering %s", s_mname(pl, m));
        } else if (s_needs_recover(pl, i, &e->vms[j])) {
            pending++;
            if (pl->in->members[m].alive) {
                rc = s_act(pl, SC_ACT_RECOVER, m, i, SC_ALERT_NONE, "event %s %s; %s was %s",
                           e->ev->id, what, s_mname(pl, m),
                           s == SC_DRAIN_NONE ? "impacted" : sc_drain_state_name(s));
                s_wait(x, "recover ordered for %s", s_mname(pl, m));
            } else {
                rc = s_act(pl, SC_ACT_ALERT, m, i, SC_ALERT_MEMBER_DOWN,
                           "%s must recover after event %s but is not alive", s_mname(pl, m),
                           e->ev->id);
                s_wait(x, "%s must recover when it comes back", s_mname(pl, m));
            }
            if (rc < 0)
                return rc;
        }
    }
    if (!pending && !x->wait[0])
        s_wait(x, "done");
    /* a VM down that owes a recover (impacted, or drained) keeps the event: it gets its
     * recover when it comes back (rule 3) */
    x->closable = !pending;
    return 0;
}

/* Rule 4: a failed or interrupted prepare blocks its event's approval, never the cluster. On
 * an event still Scheduled, the event's drain is rolled back at once: every VM of it that
 * prepared (or failed to) gets RECOVER — its recover hook undoes what the prepare did — so
 * that its fault domain is released (VMs still preparing are waited for, then rolled back).
 * Once every VM is recovered (ROLLED_BACK) the drain is tried again as a whole, as a new
 * attempt, after a backoff (sc_policy_retry_delay_ms), while attempts are left; then it is
 * queued like any event. Not for Preempt/Terminate (the VM goes away: bringing it back into
 * service just before is worse), nor once the event Started (its VMs are impacted: they are
 * recovered when it is over). */
static int s_plan_rollbacks(s_plan_t *pl, size_t i)
{
    const sc_plan_event_t *e = &pl->in->events[i];
    s_ev_t *x = &pl->ev[i];
    int rc = 0;

    if (!x->rollback)
        return 0;
    for (size_t j = 0; j < e->n_vms && rc >= 0; j++)
        if (e->vms[j].drain == SC_DRAIN_RECOVER_FAILED && !pl->in->members[e->vms[j].member].gone)
            rc = s_act(pl, SC_ACT_ALERT, e->vms[j].member, i, SC_ALERT_RECOVER_FAILED,
                       "recover hook failed on %s while rolling back event %s: not tried again",
                       s_mname(pl, e->vms[j].member), e->ev->id);
    if (rc < 0)
        return rc;
    if (!x->in_flight) {
        if (x->retry_ready && pl->p->pause)
            s_wait(x, "rolled back after a failed prepare; paused: not tried again");
        else if (!x->retry_ready)
            s_wait(x,
                   "rolled back after a failed prepare; next attempt at its retry time, "
                   "if attempts are left (prepare-attempts %d)",
                   pl->p->prepare_attempts);
        return 0;
    }
    s_wait(x, "rolling back after a failed prepare");
    for (size_t j = 0; j < e->n_vms && rc >= 0; j++) {
        size_t m = e->vms[j].member;
        sc_drain_state_t s = e->vms[j].drain;

        if (pl->in->members[m].gone)
            continue;
        if (s != SC_DRAIN_PREPARED && s != SC_DRAIN_PREPARE_FAILED &&
            s != SC_DRAIN_PREPARE_INTERRUPTED)
            continue;
        if (pl->in->members[m].alive)
            rc = s_act(pl, SC_ACT_RECOVER, m, i, SC_ALERT_NONE,
                       "event %s: a prepare failed (attempt %d); %s was %s: rolled back", e->ev->id,
                       e->vms[j].attempt, s_mname(pl, m), sc_drain_state_name(s));
        else
            rc = s_act(pl, SC_ACT_ALERT, m, i, SC_ALERT_MEMBER_DOWN,
                       "%s must be rolled back after a failed prepare for %s but is not alive",
                       s_mname(pl, m), e->ev->id);
    }
    return rc;
}

/* Orders PREPARE for the VMs of event i that need it (NONE, or ROLLED_BACK with its retry
 * due, and alive). A failed or interrupted prepare is never ordered again as such: it is
 * rolled back first (s_plan_rollbacks), and the retry is a new attempt (the agent runs each
 * (event, phase, attempt) once). */
static int s_order_prepares(s_plan_t *pl, size_t i, const char *why)
{
    const sc_plan_event_t *e = &pl->in->events[i];
    int rc;

    for (size_t j = 0; j < e->n_vms; j++) {
        size_t m = e->vms[j].member;
        sc_drain_state_t s = e->vms[j].drain;

        if (pl->in->members[m].gone || !pl->in->members[m].alive ||
            !s_orderable(pl, i, &e->vms[j]) || e->vms[j].dropped)
            continue;
        if (s == SC_DRAIN_ROLLED_BACK) {
            int next = e->vms[j].attempt + 1;

            if ((rc = s_act(pl, SC_ACT_PREPARE, m, i, SC_ALERT_NONE,
                            "%s %s: %s; attempt %d of %d after a rolled-back prepare",
                            sc_event_type_name(e->ev->type), e->ev->id, why, next,
                            pl->p->prepare_attempts)) < 0)
                return rc;
            pl->acts[pl->n_acts - 1].attempt = next;
            if ((rc = s_act(pl, SC_ACT_ALERT, m, i, SC_ALERT_DRAIN_RETRY,
                            "drain of %s for event %s tried again: attempt %d of %d",
                            s_mname(pl, m), e->ev->id, next, pl->p->prepare_attempts)) < 0)
                return rc;
            pl->acts[pl->n_acts - 1].attempt = next;
        } else {
            if ((rc = s_act(pl, SC_ACT_PREPARE, m, i, SC_ALERT_NONE, "%s %s: %s",
                            sc_event_type_name(e->ev->type), e->ev->id, why)) < 0)
                return rc;
            pl->acts[pl->n_acts - 1].attempt = 1;
        }
        if (pl->mstate[m] == SC_MEMBER_HEALTHY)
            pl->healthy--;
        s_mark(pl, m, SC_MEMBER_DRAINING, i);
        s_fd_add(pl->busy_fd, &pl->n_busy_fd, s_fd_key(pl, m));
    }
    pl->ev[i].admitted = true;
    return 0;
}

static bool s_user_deadline_passed(const s_plan_t *pl, size_t i)
{
    const sc_plan_event_t *e = &pl->in->events[i];

    return (double)(pl->in->now_ms - e->first_seen_ms) >= pl->p->user_event_deadline_s * 1000.0;
}

static bool s_platform_deadline_passed(const s_plan_t *pl, size_t i)
{
    const sc_event_t *ev = pl->in->events[i].ev;

    return ev->has_not_before &&
           (double)pl->in->now_wall_s >= (double)ev->not_before - pl->p->deadline_margin_s;
}

/* Whether Platform event i is past its NotBefore itself (not only the margin). */
static bool s_platform_not_before_passed(const s_plan_t *pl, size_t i)
{
    const sc_event_t *ev = pl->in->events[i].ev;

    return ev->has_not_before && pl->in->now_wall_s >= ev->not_before;
}

/* Whether member m's own document says event i is not coming for it: m is alive, its IMDS
 * answers (not blind), and its latest document does not hold i. */
static bool s_seen_by(const sc_plan_event_t *e, size_t m);

static bool s_unseen_by_live(const sc_plan_event_t *e, const sc_plan_member_t *mm, size_t m)
{
    return mm->alive && !mm->gone && !mm->blind && !s_seen_by(e, m);
}

/* Whether a live member sees event i (its latest document holds it). */
static bool s_live_witness(const s_plan_t *pl, size_t i)
{
    const sc_plan_event_t *e = &pl->in->events[i];

    for (size_t j = 0; j < e->n_seen_by; j++) {
        const sc_plan_member_t *m = &pl->in->members[e->seen_by[j]];
        if (m->alive && !m->gone)
            return true;
    }
    return false;
}

/* Whether User event i, past its deadline, passes the gates of s_approval_due() other than
 * rule 2: it would be approved undrained this round if rule 2 allows. */
static bool s_user_deadline_may_approve(const s_plan_t *pl, size_t i)
{
    const sc_plan_event_t *e = &pl->in->events[i];

    return pl->ev[i].cls == SC_CLASS_USER && s_user_deadline_passed(pl, i) && !pl->p->pause &&
           pl->p->approve_user_events && !(e->n_strangers && !pl->p->approve_with_strangers) &&
           (e->approval == SC_APPROVAL_NONE ||
            ((e->approval == SC_APPROVAL_FAILED || e->approval == SC_APPROVAL_UNKNOWN) &&
             pl->in->now_ms >= e->retry_at_ms));
}

/* Rule 2 for an approval without a full drain (a User event at its deadline): its VMs are
 * impacted at once, so as for a new drain the busy domains other than its own, plus its own,
 * stay within max_fault_domains (an event wider than that alone: no other busy domain), and
 * min_healthy members stay healthy. Its own domains never block it. When not allowed, why
 * says what blocks it. Uses pl->scratch_fd. */
static bool s_undrained_allowed(const s_plan_t *pl, size_t i, char *why, size_t len)
{
    const sc_plan_event_t *e = &pl->in->events[i];
    int *own = pl->scratch_fd;
    size_t n_own = 0, n_other = 0;
    int newly_unhealthy = 0;
    char buf[96];

    for (size_t j = 0; j < e->n_vms; j++) {
        size_t m = e->vms[j].member;

        if (pl->in->members[m].gone || e->vms[j].dropped)
            continue;
        s_fd_add(own, &n_own, s_fd_key(pl, m));
        if (pl->mstate[m] == SC_MEMBER_HEALTHY && pl->in->members[m].alive)
            newly_unhealthy++;
    }
    /* the other busy domains after the event's own (own and other are disjoint: both fit) */
    for (size_t k = 0; k < pl->n_busy_fd; k++)
        if (!s_fd_in(own, n_own, pl->busy_fd[k]))
            own[n_own + n_other++] = pl->busy_fd[k];
    if (n_own > (size_t)pl->p->max_fault_domains
            ? n_other > 0
            : n_own + n_other > (size_t)pl->p->max_fault_domains) {
        s_fd_text(pl, own + n_own, n_other, buf, sizeof(buf));
        snprintf(why, len, "%s(s) %s busy (max-fault-domains %d)", s_domain(pl), buf,
                 pl->p->max_fault_domains);
        return false;
    }
    if (pl->healthy - newly_unhealthy < pl->min_healthy) {
        snprintf(why, len, "%d impacted would leave %d healthy (min-healthy %d)", newly_unhealthy,
                 pl->healthy - newly_unhealthy, pl->min_healthy);
        return false;
    }
    return true;
}

/* A User event approved undrained this round: its VMs count as impacted from now on, so that
 * no event after it in the queue starts draining another domain. */
static void s_undrained_reserve(s_plan_t *pl, size_t i)
{
    const sc_plan_event_t *e = &pl->in->events[i];

    for (size_t j = 0; j < e->n_vms; j++) {
        size_t m = e->vms[j].member;

        if (pl->in->members[m].gone || e->vms[j].dropped)
            continue;
        if (pl->mstate[m] == SC_MEMBER_HEALTHY && pl->in->members[m].alive)
            pl->healthy--;
        s_mark(pl, m, SC_MEMBER_IMPACTED, i);
        s_fd_add(pl->busy_fd, &pl->n_busy_fd, s_fd_key(pl, m));
    }
}

/* Events past NotBefore - margin whose VMs are not drained are left to Azure, which may start
 * them any moment: their undrained VMs' domains are reserved against every event after them in
 * the drain queue, which may not start draining another domain (nemesis seed 11: FD 0 was
 * ordered 0.4 s before FD 2's event, its prepare rolled back, went at NotBefore: rule 2). An
 * event is never blocked by the reservation of one after it, so two events past their deadline
 * never block each other: the first drains best effort, the other waits behind its busy
 * domain as before. queue holds the drain queue, in order. */
static void s_reserve(s_plan_t *pl, const size_t *queue, size_t n_queue)
{
    const sc_plan_input_t *in = pl->in;

    for (size_t k = 0; k < n_queue; k++) {
        size_t i = queue[k];
        const sc_plan_event_t *e = &in->events[i];

        if (pl->ev[i].cls == SC_CLASS_NO_DRAIN || !s_platform_deadline_passed(pl, i))
            continue;
        for (size_t j = 0; j < e->n_vms; j++) {
            size_t m = e->vms[j].member;
            sc_drain_state_t s = e->vms[j].drain;

            /* past NotBefore, a VM alive whose own document no longer holds the event is not
             * going down for it: over, or cancelled, its view only not yet confirmed by the
             * registry (nemesis seeds 68 and 93: a restart's fresh view waits confirm_ms) */
            if (s_platform_not_before_passed(pl, i) && s_unseen_by_live(e, &in->members[m], m))
                continue;
            if (!in->members[m].gone && !e->vms[j].dropped &&
                (s == SC_DRAIN_NONE || s == SC_DRAIN_ROLLED_BACK) &&
                pl->busy_ev[m] == SC_PLAN_NONE && pl->reserved[m] == SC_PLAN_NONE)
                pl->reserved[m] = k;
        }
    }
}

/* Rule 2: decides whether event i may start draining now, and orders it. The event's own
 * busy domains (VMs it drained already) count for it, never against it: an event that gains a
 * VM in another fault domain (Resources grew, a member came back) is then as wide as both, and
 * goes like any event that wide — at once if that is allowed, or alone when nothing else is
 * busy (ALERT too_wide). Without that, its own drained domain would block its new VM, and its
 * approval would wait for that VM forever. */
static int s_admit(s_plan_t *pl, size_t i, size_t rank)
{
    const sc_plan_input_t *in = pl->in;
    const sc_plan_event_t *e = &in->events[i];
    s_ev_t *x = &pl->ev[i];
    int *fds = pl->scratch_fd, *other = pl->other_fd;
    size_t n_fds = 0, n_other = 0, n_order = 0, n_fd_union;
    int newly_unhealthy = 0;
    bool too_wide;
    char buf[128];
    int rc;

    for (size_t j = 0; j < e->n_vms; j++) {
        size_t m = e->vms[j].member;
        sc_drain_state_t s = e->vms[j].drain;

        if (in->members[m].gone || e->vms[j].dropped)
            continue;
        if (s != SC_DRAIN_NONE)
            x->admitted = true;
        if (s == SC_DRAIN_NONE && !in->members[m].alive) {
            if ((rc = s_act(pl, SC_ACT_ALERT, m, i, SC_ALERT_MEMBER_DOWN,
                            "%s is not alive: not drained for event %s", s_mname(pl, m),
                            e->ev->id)) < 0)
                return rc;
            continue;
        }
        if (!in->members[m].alive || !s_orderable(pl, i, &e->vms[j]))
            continue;
        n_order++;
        if (pl->mstate[m] == SC_MEMBER_HEALTHY)
            newly_unhealthy++;
        s_fd_add(fds, &n_fds, s_fd_key(pl, m));
    }
    if (!n_order)
        return 0;

    if (x->cls == SC_CLASS_EVICT)
        return s_order_prepares(pl, i, "the VM is going away: drain at once");
    if (in->policy->pause && !x->admitted) {
        s_wait(x, "paused: no new drain");
        return 0;
    }
    if (x->cls == SC_CLASS_USER && s_user_deadline_passed(pl, i)) {
        char why[160];

        /* no drain that late: approved undrained below if rule 2 allows (fds is clobbered) */
        if (s_user_deadline_may_approve(pl, i) && s_undrained_allowed(pl, i, why, sizeof(why)))
            s_undrained_reserve(pl, i);
        return 0;
    }

    for (size_t m = 0; m < in->n_members; m++) {
        if (pl->busy_ev[m] == i)
            s_fd_add(fds, &n_fds, s_fd_key(pl, m));
        else if (pl->busy_ev[m] != SC_PLAN_NONE ||
                 (pl->reserved[m] != SC_PLAN_NONE && pl->reserved[m] < rank))
            s_fd_add(other, &n_other, s_fd_key(pl, m));
    }
    n_fd_union = n_other;
    for (size_t k = 0; k < n_fds; k++)
        if (!s_fd_in(other, n_other, fds[k]))
            n_fd_union++;
    /* An event whose own VMs span more domains than allowed may go only when all is quiet. */
    too_wide = n_fds > (size_t)pl->p->max_fault_domains;
    if (too_wide ? n_other > 0 : n_fd_union > (size_t)pl->p->max_fault_domains) {
        s_fd_text(pl, other, n_other, buf, sizeof(buf));
        s_wait(x, "queued: %s(s) %s busy (max-fault-domains %d)", s_domain(pl), buf,
               pl->p->max_fault_domains);
        return 0;
    }
    if (pl->healthy - newly_unhealthy < pl->min_healthy) {
        s_wait(x, "queued: draining %d more would leave %d healthy (min-healthy %d)",
               newly_unhealthy, pl->healthy - newly_unhealthy, pl->min_healthy);
        return 0;
    }
    if (too_wide && (rc = s_act(pl, SC_ACT_ALERT, SC_PLAN_NONE, i, SC_ALERT_TOO_WIDE,
                                "event %s alone spans %zu %ss (max %d): drained alone", e->ev->id,
                                n_fds, s_domain(pl), pl->p->max_fault_domains)) < 0)
        return rc;
    /* past NotBefore and no live member sees it: it started (its VMs are down already) or it
     * is over, its end not yet confirmed (a restart's fresh views wait confirm_ms); a drain now
     * helps nobody and holds its domain, the others queued behind it (nemesis seeds 68, 93) */
    if (x->cls == SC_CLASS_PLATFORM && !x->admitted && s_platform_not_before_passed(pl, i) &&
        !s_live_witness(pl, i)) {
        s_wait(x, "past NotBefore and no live member sees it: not drained (started, or over)");
        return 0;
    }
    if (x->cls == SC_CLASS_PLATFORM && s_platform_deadline_passed(pl, i) && !x->admitted)
        s_wait(x, "its turn came after NotBefore - margin: drained best effort");
    snprintf(buf, sizeof(buf), "its %s's turn", s_domain(pl));
    return s_order_prepares(pl, i, x->admitted ? "prepare again" : buf);
}

/* An event whose EventStatus this version does not know: we cannot tell whether it may still
 * be approved or is already under way, so it is never approved and nothing new is drained for
 * it; what was ordered before is held (its domain busy, rule 2) and recovered when it is over. */
static int s_plan_unknown(s_plan_t *pl, size_t i)
{
    const sc_plan_event_t *e = &pl->in->events[i];
    const char *raw = e->ev->status_raw ? e->ev->status_raw : "";
    size_t held = 0;

    for (size_t j = 0; j < e->n_vms; j++)
        held += !pl->in->members[e->vms[j].member].gone && s_prepare_touched(e->vms[j].drain);
    s_wait(&pl->ev[i],
           "EventStatus \"%.40s\" unknown: never approved, no new drain (%zu held "
           "until it is over); Azure starts it at NotBefore",
           raw, held);
    return s_act(pl, SC_ACT_ALERT, SC_PLAN_NONE, i, SC_ALERT_UNKNOWN_STATUS,
                 "event %s has EventStatus \"%.40s\", unknown to this version: never approved, "
                 "no new drain (%zu VMs held as they are)",
                 e->ev->id, raw, held);
}

/* Drain queue order: Preempt/Terminate first, then NotBefore, first seen, input index. */
static bool s_queue_before(const sc_plan_input_t *in, size_t i, size_t j)
{
    const sc_plan_event_t *x = &in->events[i], *y = &in->events[j];
    bool ex = x->ev->type == SC_EVENT_PREEMPT || x->ev->type == SC_EVENT_TERMINATE;
    bool ey = y->ev->type == SC_EVENT_PREEMPT || y->ev->type == SC_EVENT_TERMINATE;
    int64_t nx = x->ev->has_not_before ? x->ev->not_before : INT64_MIN;
    int64_t ny = y->ev->has_not_before ? y->ev->not_before : INT64_MIN;

    if (ex != ey)
        return ex;
    if (nx != ny)
        return nx < ny;
    if (x->first_seen_ms != y->first_seen_ms)
        return x->first_seen_ms < y->first_seen_ms;
    return i < j;
}

/* Insertion sort (no global comparator state: sc_plan stays reentrant). */
static void s_sort_queue(const sc_plan_input_t *in, size_t *q, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        size_t v = q[i], j = i;

        while (j > 0 && s_queue_before(in, v, q[j - 1])) {
            q[j] = q[j - 1];
            j--;
        }
        q[j] = v;
    }
}

/* The drain queue (sc_plan_queue) from the events' facts. */
static void s_queue(const sc_plan_input_t *in, const s_ev_t *ev, size_t *q, size_t *ret_n)
{
    size_t n = 0;

    for (size_t i = 0; i < in->n_events; i++)
        if (ev[i].scheduled && ev[i].cls != SC_CLASS_NO_DRAIN)
            q[n++] = i;
    s_sort_queue(in, q, n);
    *ret_n = n;
}

int sc_plan_queue(const sc_plan_input_t *in, size_t *ret_order, size_t *ret_n)
{
    s_ev_t *ev;
    int rc;

    if (!in || !ret_order || !ret_n)
        return -EINVAL;
    if ((rc = s_validate(in)) < 0)
        return rc;
    if (!(ev = calloc(in->n_events ? in->n_events : 1, sizeof(*ev))))
        return -ENOMEM;
    for (size_t i = 0; i < in->n_events; i++)
        s_facts(in, i, &ev[i]);
    s_queue(in, ev, ret_order, ret_n);
    free(ev);
    return 0;
}

/* An event the forecast says will not be drained in time (sc_forecast.h, from the hooks'
 * history): said once, at notice time, while it can still be acted on — Scheduled, to be
 * drained, not approved yet. */
static int s_plan_forecast(s_plan_t *pl, size_t i)
{
    const sc_plan_event_t *e = &pl->in->events[i];
    const char *why = e->forecast_why ? e->forecast_why : "";

    if (!e->forecast_late || !pl->ev[i].scheduled || pl->ev[i].cls == SC_CLASS_NO_DRAIN ||
        (e->approval != SC_APPROVAL_NONE && e->approval != SC_APPROVAL_FAILED &&
         e->approval != SC_APPROVAL_UNKNOWN))
        return 0;
    s_wait(&pl->ev[i], "forecast: %s", why);
    return s_act(pl, SC_ACT_ALERT, SC_PLAN_NONE, i, SC_ALERT_FORECAST_LATE,
                 "event %s (%s) will not be drained in time, by the forecast: %s", e->ev->id,
                 sc_event_type_name(e->ev->type), why);
}

/* Event i's strangers as text: "x1, x2" or "x1, x2 and 5 more" when they do not fit. */
static void s_strangers_text(const sc_plan_event_t *e, char *buf, size_t len)
{
    size_t off = 0, k;

    buf[0] = '\0';
    for (k = 0; k < e->n_strangers; k++) {
        size_t n = strlen(e->strangers[k]);

        if (off + n + 2 + 20 >= len)
            break;
        off += (size_t)snprintf(buf + off, len - off, "%s%s", k ? ", " : "", e->strangers[k]);
    }
    if (k < e->n_strangers)
        snprintf(buf + off, len - off, "%s%zu more", k ? " and " : "", e->n_strangers - k);
}

/* Rule 1 (+ 4): whether event i is to be approved now; adds alerts and waiting text. */
/* Appends "name (state[note])" to the list of VMs an approval waits for (cut when full). */
static void s_missing(char *buf, size_t len, size_t *off, const char *name, sc_drain_state_t s,
                      const char *note)
{
    int w;

    if (*off + 1 >= len)
        return;
    w = snprintf(buf + *off, len - *off, "%s%s (%s%s)", *off ? ", " : "", name,
                 sc_drain_state_name(s), note);
    if (w > 0)
        *off += (size_t)w;
}

static int s_approval_due(s_plan_t *pl, size_t i, bool *ret_due)
{
    const sc_plan_input_t *in = pl->in;
    const sc_plan_event_t *e = &in->events[i];
    s_ev_t *x = &pl->ev[i];
    size_t n_vms = 0, n_in_resources = 0, n_prepared = 0, n_failed = 0, n_dropped_busy = 0;
    char missing[160] = "";
    size_t off = 0;
    int rc;

    *ret_due = false;
    switch (e->approval) {
    case SC_APPROVAL_APPROVED: s_wait(x, "approved; waiting for Azure to start it"); return 0;
    case SC_APPROVAL_INTENT: s_wait(x, "approval in flight"); return 0;
    case SC_APPROVAL_NOT_NEEDED:
        s_wait(x, "left to Azure (NotBefore %s)",
               e->ev->not_before_raw ? e->ev->not_before_raw : "");
        return 0;
    default: break;
    }
    for (size_t j = 0; j < e->n_vms; j++) {
        size_t m = e->vms[j].member;
        sc_drain_state_t s = e->vms[j].drain;

        /* No longer in Resources: not waited for once its prepare has reported. Until then
         * (ordered, or its hook running) it holds the approval: the copy that dropped it may
         * be a stale one (sc_registry.h), and a POST now would cut its prepare short. */
        if (e->vms[j].dropped && (s == SC_DRAIN_PREPARE_ORDERED || s == SC_DRAIN_PREPARING)) {
            n_dropped_busy++;
            s_missing(missing, sizeof(missing), &off, s_mname(pl, m), s, " left Resources");
            continue;
        }
        if (e->vms[j].dropped) {
            s_wait(x, "%s left Resources after its prepare: recovered when the event is over",
                   s_mname(pl, m));
            continue;
        }
        n_in_resources++;
        if (in->members[m].gone ||
            (s == SC_DRAIN_NONE && !in->members[m].alive && !in->members[m].unheard))
            continue; /* dead and undrained: skipped (alerted in s_admit), does not block */
        n_vms++;
        if (s == SC_DRAIN_PREPARED) {
            n_prepared++;
        } else {
            bool last = e->vms[j].attempt >= in->policy->prepare_attempts;

            if (s == SC_DRAIN_PREPARE_FAILED || s == SC_DRAIN_PREPARE_INTERRUPTED) {
                n_failed += last;
                if ((rc = s_act(pl, SC_ACT_ALERT, m, i, SC_ALERT_PREPARE_FAILED,
                                "prepare hook %s on %s (attempt %d of %d): %s",
                                s == SC_DRAIN_PREPARE_FAILED ? "failed" : "interrupted",
                                s_mname(pl, m), e->vms[j].attempt, in->policy->prepare_attempts,
                                last ? "no attempt left, rolled back; event not approved, "
                                       "left to Azure"
                                     : "rolled back, its fault domain released; tried again "
                                       "later")) < 0)
                    return rc;
                pl->acts[pl->n_acts - 1].attempt = e->vms[j].attempt;
            } else if (s == SC_DRAIN_ROLLED_BACK) {
                n_failed += last;
                if (!last)
                    s_wait(x, "%s rolled back after attempt %d; attempt %d in %lld ms",
                           s_mname(pl, m), e->vms[j].attempt, e->vms[j].attempt + 1,
                           (long long)(e->vms[j].retry_at_ms > in->now_ms
                                           ? e->vms[j].retry_at_ms - in->now_ms
                                           : 0));
            }
            s_missing(missing, sizeof(missing), &off, s_mname(pl, m), s, "");
        }
    }
    if (n_in_resources == 0) {
        s_wait(x, "no member in Resources: left to Azure");
        return 0;
    }
    if (n_vms == 0) {
        s_wait(x, "no live member to drain: left to Azure");
        return 0;
    }
    if (x->rollback)
        return 0; /* rolling back or rolled back: never approved meanwhile (rule 1) */
    if (e->n_strangers) {
        char names[80];

        s_strangers_text(e, names, sizeof(names));
        if ((rc = s_act(pl, SC_ACT_ALERT, SC_PLAN_NONE, i, SC_ALERT_STRANGERS,
                        "event %s also names VMs outside the cluster (%s): %s", e->ev->id, names,
                        in->policy->approve_with_strangers
                            ? "approved once its members are drained, which starts it for them "
                              "too (approve-with-strangers)"
                            : "members drained, not approved; Azure starts it at NotBefore")) < 0)
            return rc;
        if (!in->policy->approve_with_strangers) {
            s_wait(x,
                   "%zu/%zu drained; Resources name VMs outside the cluster (%s): not approved "
                   "(approve-with-strangers is off), Azure starts it at NotBefore",
                   n_prepared, n_vms, names);
            return 0;
        }
    }
    if (in->policy->pause) {
        s_wait(x, "paused: no approval");
        return 0;
    }
    if (x->cls == SC_CLASS_USER && !in->policy->approve_user_events) {
        s_wait(x, "user event: approve-user-events is off, waiting for NotBefore");
        return 0;
    }
    if ((e->approval == SC_APPROVAL_FAILED || e->approval == SC_APPROVAL_UNKNOWN) &&
        in->now_ms < e->retry_at_ms) {
        s_wait(x, "approval %s; retry in %lld ms",
               e->approval == SC_APPROVAL_FAILED ? "failed" : "unknown (the POST may still land)",
               (long long)(e->retry_at_ms - in->now_ms));
        return 0;
    }
    if (x->cls == SC_CLASS_NO_DRAIN) {
        *ret_due = true;
        return 0;
    }
    if (n_prepared == n_vms && !n_dropped_busy) {
        *ret_due = true;
        return 0;
    }
    if (x->cls == SC_CLASS_USER && s_user_deadline_passed(pl, i)) {
        char why[160];

        if (!s_undrained_allowed(pl, i, why, sizeof(why))) {
            s_wait(x, "past its user deadline, %zu/%zu drained: waiting for %s, or NotBefore",
                   n_prepared, n_vms, why);
            return s_act(pl, SC_ACT_ALERT, SC_PLAN_NONE, i, SC_ALERT_USER_DEADLINE_BLOCKED,
                         "user event %s not approved at its %g s deadline (%zu/%zu drained): %s; "
                         "waiting for them, or for Azure to start it at NotBefore",
                         e->ev->id, in->policy->user_event_deadline_s, n_prepared, n_vms, why);
        }
        *ret_due = true;
        return s_act(pl, SC_ACT_ALERT, SC_PLAN_NONE, i, SC_ALERT_USER_DEADLINE,
                     "user event %s approved at its %g s deadline with %zu/%zu drained", e->ev->id,
                     in->policy->user_event_deadline_s, n_prepared, n_vms);
    }
    if (n_failed) {
        s_wait(x, "prepare failed (%s): not approved, left to Azure", missing);
        return 0;
    }
    if (x->cls == SC_CLASS_PLATFORM && s_platform_deadline_passed(pl, i)) {
        if ((rc = s_act(pl, SC_ACT_ALERT, SC_PLAN_NONE, i, SC_ALERT_DEADLINE,
                        "event %s: drain not done by NotBefore - %g s (%s): left to Azure",
                        e->ev->id, in->policy->deadline_margin_s,
                        x->admitted ? missing : "its turn has not come")) < 0)
            return rc;
        s_wait(x, "past NotBefore - margin: left to Azure unless drained first");
    }
    if (x->admitted)
        s_wait(x, "draining: %zu/%zu prepared; waiting for %s", n_prepared, n_vms, missing);
    if (x->cls == SC_CLASS_USER)
        s_wait(x, "approved at the latest in %lld ms",
               (long long)(e->first_seen_ms + (int64_t)(in->policy->user_event_deadline_s * 1000) -
                           in->now_ms));
    return 0;
}

static bool s_seen_by(const sc_plan_event_t *e, size_t m)
{
    for (size_t j = 0; j < e->n_seen_by; j++)
        if (e->seen_by[j] == m)
            return true;
    return false;
}

/* Chooses who POSTs event i: ourselves if our own member sees it, else a live member that
 * does (preferring one in Resources). SC_PLAN_NONE for ourselves, n_members for nobody. */
/* Whether member m may be asked to POST: alive, not gone, not ourselves (we POST through our
 * own IMDS, without asking), and — unless blind_ok — with an IMDS that answers. */
static bool s_can_post(const sc_plan_member_t *m, bool blind_ok)
{
    return m->alive && !m->gone && !m->is_self && (blind_ok || !m->blind);
}

static size_t s_approver(const s_plan_t *pl, size_t i)
{
    const sc_plan_input_t *in = pl->in;
    const sc_plan_event_t *e = &in->events[i];
    bool self_sees = false;

    /* Ourselves first, through our own IMDS, unless that IMDS is failing (blind): then a
     * member whose IMDS answers, in Resources first; ourselves only if there is none; and a
     * blind member as the last resort. */
    for (size_t j = 0; j < e->n_seen_by; j++) {
        const sc_plan_member_t *m = &in->members[e->seen_by[j]];

        if (m->is_self && !m->blind)
            return SC_PLAN_NONE;
        self_sees |= m->is_self;
    }
    for (size_t j = 0; j < e->n_vms; j++)
        if (!e->vms[j].dropped && s_seen_by(e, e->vms[j].member) &&
            s_can_post(&in->members[e->vms[j].member], false))
            return e->vms[j].member;
    for (int blind_ok = 0; blind_ok < 2; blind_ok++) {
        if (blind_ok && self_sees)
            return SC_PLAN_NONE;
        for (size_t j = 0; j < e->n_seen_by; j++)
            if (s_can_post(&in->members[e->seen_by[j]], blind_ok))
                return e->seen_by[j];
    }
    return in->n_members;
}

/* Adds event i to the APPROVE (member SC_PLAN_NONE) or APPROVE_VIA(member) action. */
static int s_approve(s_plan_t *pl, size_t i, size_t via)
{
    const sc_plan_event_t *e = &pl->in->events[i];
    sc_action_kind_t kind = via == SC_PLAN_NONE ? SC_ACT_APPROVE : SC_ACT_APPROVE_VIA;
    sc_action_t *a = NULL;
    size_t len;
    int rc;

    for (size_t k = 0; k < pl->n_acts; k++)
        if (pl->acts[k].kind == kind && pl->acts[k].member == via)
            a = &pl->acts[k];
    if (!a) {
        if ((rc = s_act(pl, kind, via, SC_PLAN_NONE, SC_ALERT_NONE, "%s", "approve:")) < 0)
            return rc;
        a = &pl->acts[pl->n_acts - 1];
    }
    if ((rc = s_act_add_event(a, i)) < 0)
        return rc;
    len = strlen(a->reason);
    snprintf(a->reason + len, sizeof(a->reason) - len, " %s (%s)", e->ev->id,
             pl->ev[i].cls == SC_CLASS_NO_DRAIN                      ? "no drain needed"
             : pl->ev[i].cls == SC_CLASS_USER && !pl->ev[i].admitted ? "user deadline"
                                                                     : "all drained");
    if (via == SC_PLAN_NONE)
        s_wait(&pl->ev[i], "approving now");
    else
        s_wait(&pl->ev[i], "approving now via %s", s_mname(pl, via));
    return 0;
}

static int s_action_rank(const sc_action_t *a)
{
    static const int rank[SC_ACT_MAX] = {
        [SC_ACT_MEMBER_GONE] = 0, [SC_ACT_RECOVER] = 1,     [SC_ACT_PREPARE] = 2,
        [SC_ACT_APPROVE] = 3,     [SC_ACT_APPROVE_VIA] = 4, [SC_ACT_ALERT] = 5};

    return rank[a->kind];
}

/* Stable sort of the actions into the documented order (insertion sort: lists are short). */
static void s_sort_actions(s_plan_t *pl)
{
    for (size_t i = 1; i < pl->n_acts; i++) {
        sc_action_t tmp = pl->acts[i];
        size_t j = i;

        while (j > 0 && s_action_rank(&pl->acts[j - 1]) > s_action_rank(&tmp)) {
            pl->acts[j] = pl->acts[j - 1];
            j--;
        }
        pl->acts[j] = tmp;
    }
}

void sc_plan_output_release(sc_plan_output_t *out)
{
    if (!out)
        return;
    for (size_t i = 0; i < out->n_actions; i++)
        free(out->actions[i].events);
    free(out->actions);
    for (size_t i = 0; out->waiting_for && i < out->n_events; i++)
        free(out->waiting_for[i]);
    free(out->waiting_for);
    free(out->closable);
    free(out->member_state);
    free(out->drain_rank);
    free(out->ev_class);
    memset(out, 0, sizeof(*out));
}

int sc_plan(const sc_plan_input_t *in, sc_plan_output_t *ret_out)
{
    s_plan_t pl = {0};
    sc_plan_output_t out = {0};
    size_t *queue = NULL, n_queue = 0, n_live = 0;
    int rc = -ENOMEM;

    if (!in || !ret_out)
        return -EINVAL;
    if ((rc = s_validate(in)) < 0)
        return rc;
    rc = -ENOMEM;
    pl.in = in;
    pl.p = in->policy;
    pl.ev = calloc(in->n_events ? in->n_events : 1, sizeof(*pl.ev));
    pl.mstate = calloc(in->n_members ? in->n_members : 1, sizeof(*pl.mstate));
    pl.busy_fd = calloc(in->n_members ? in->n_members : 1, sizeof(*pl.busy_fd));
    pl.gone_sent = calloc(in->n_members ? in->n_members : 1, sizeof(*pl.gone_sent));
    pl.reserved = calloc(in->n_members ? in->n_members : 1, sizeof(*pl.reserved));
    pl.scratch_fd = calloc(in->n_members ? in->n_members : 1, sizeof(*pl.scratch_fd));
    pl.other_fd = calloc(in->n_members ? in->n_members : 1, sizeof(*pl.other_fd));
    pl.busy_ev = calloc(in->n_members ? in->n_members : 1, sizeof(*pl.busy_ev));
    queue = calloc(in->n_events ? in->n_events : 1, sizeof(*queue));
    if (!pl.ev || !pl.mstate || !pl.busy_fd || !pl.gone_sent || !pl.scratch_fd || !pl.other_fd ||
        !pl.busy_ev || !pl.reserved || !queue)
        goto out;
    for (size_t m = 0; m < in->n_members; m++)
        pl.busy_ev[m] = pl.reserved[m] = SC_PLAN_NONE;

    for (size_t i = 0; i < in->n_events; i++) {
        const sc_plan_event_t *e = &in->events[i];
        s_ev_t *x = &pl.ev[i];

        s_facts(in, i, x);
        x->retry_ready = true;
        for (size_t j = 0; j < e->n_vms; j++) {
            sc_drain_state_t s = e->vms[j].drain;

            if (s != SC_DRAIN_NONE)
                x->admitted = true;
            if (in->members[e->vms[j].member].gone)
                continue;
            /* a VM that left Resources is not the event's any more: its failure is not the
             * event's (it is recovered when the event is over, like any dropped VM) */
            if (!e->vms[j].dropped &&
                (s == SC_DRAIN_PREPARE_FAILED || s == SC_DRAIN_PREPARE_INTERRUPTED ||
                 s == SC_DRAIN_ROLLED_BACK))
                x->rollback = true;
            if (s_prepare_touched(s) || s == SC_DRAIN_RECOVER_ORDERED || s == SC_DRAIN_RECOVERING)
                x->in_flight = true;
            /* a rollback that failed leaves the VM in an unknown state: no new attempt */
            if (s == SC_DRAIN_RECOVER_FAILED ||
                (s == SC_DRAIN_ROLLED_BACK && (e->vms[j].attempt >= pl.p->prepare_attempts ||
                                               in->now_ms < e->vms[j].retry_at_ms)))
                x->retry_ready = false;
        }
        /* not for an event that needs no drain (approved at once anyway), nor for one whose
         * VMs go away (bringing one back into service just before is worse) */
        x->rollback =
            x->rollback && x->scheduled && x->cls != SC_CLASS_EVICT && x->cls != SC_CLASS_NO_DRAIN;
        /* an approval made, in flight, or whose POST may still land (unknown) is irreversible
         * while the event is listed: none of its VMs is recovered, its fault domain is not
         * released (proto/README.md, Fencing) */
        if (e->approval == SC_APPROVAL_INTENT || e->approval == SC_APPROVAL_APPROVED ||
            e->approval == SC_APPROVAL_UNKNOWN)
            x->rollback = false;
        x->retry_ready = x->rollback && !x->in_flight && x->retry_ready;
    }
    for (size_t m = 0; m < in->n_members; m++)
        if (!in->members[m].gone)
            n_live++;
    pl.min_healthy = sc_policy_min_healthy_count(pl.p, n_live);
    s_compute_states(&pl);

    /* rule 3 first: what is over is recovered whatever else happens */
    for (size_t i = 0; i < in->n_events; i++) {
        if (pl.ev[i].over && (rc = s_plan_over(&pl, i)) < 0)
            goto out;
    }
    /* events under way: forced ones are alerted, and wait for their end */
    for (size_t i = 0; i < in->n_events; i++) {
        const sc_plan_event_t *e = &in->events[i];
        s_ev_t *x = &pl.ev[i];

        if (x->over || !x->started)
            continue;
        if (x->cls != SC_CLASS_NO_DRAIN &&
            (e->start_kind == SC_START_FORCED || e->start_kind == SC_START_DIRECT) &&
            (rc = s_act(&pl, SC_ACT_ALERT, SC_PLAN_NONE, i, SC_ALERT_FORCED,
                        "event %s (%s) started without our approval (%s)", e->ev->id,
                        sc_event_type_name(e->ev->type),
                        e->start_kind == SC_START_DIRECT ? "first seen Started: host failure"
                                                         : "NotBefore passed")) < 0)
            goto out;
        s_wait(x, "started (%s); waiting for it to end", sc_start_kind_name(e->start_kind));
    }
    /* rule 4: failed prepares of events still Scheduled are rolled back */
    for (size_t i = 0; i < in->n_events; i++)
        if ((rc = s_plan_rollbacks(&pl, i)) < 0)
            goto out;
    /* unknown EventStatus: held as it is, never approved */
    for (size_t i = 0; i < in->n_events; i++)
        if (pl.ev[i].unknown && (rc = s_plan_unknown(&pl, i)) < 0)
            goto out;
    /* rule 2: the drain queue */
    s_queue(in, pl.ev, queue, &n_queue);
    s_reserve(&pl, queue, n_queue);
    for (size_t k = 0; k < n_queue; k++)
        if ((rc = s_admit(&pl, queue[k], k)) < 0)
            goto out;
    /* forecasts: a drain that cannot be done in time is said at notice time */
    for (size_t i = 0; i < in->n_events; i++)
        if ((rc = s_plan_forecast(&pl, i)) < 0)
            goto out;
    /* rule 1: approvals, one action (one POST) per approver */
    for (size_t i = 0; i < in->n_events; i++) {
        bool due;
        size_t via;

        if (!pl.ev[i].scheduled)
            continue;
        if ((rc = s_approval_due(&pl, i, &due)) < 0)
            goto out;
        if (!due)
            continue;
        via = s_approver(&pl, i);
        if (via == in->n_members) {
            rc = s_act(&pl, SC_ACT_ALERT, SC_PLAN_NONE, i, SC_ALERT_NO_APPROVER,
                       "event %s is ready but no live member sees it", in->events[i].ev->id);
            s_wait(&pl.ev[i], "ready, but no live member sees it to approve");
        } else {
            rc = s_approve(&pl, i, via);
        }
        if (rc < 0)
            goto out;
    }
    s_sort_actions(&pl);

    rc = -ENOMEM;
    out.waiting_for = calloc(in->n_events ? in->n_events : 1, sizeof(char *));
    out.closable = calloc(in->n_events ? in->n_events : 1, sizeof(bool));
    out.drain_rank = calloc(in->n_events ? in->n_events : 1, sizeof(size_t));
    if (!out.waiting_for || !out.closable || !out.drain_rank)
        goto out;
    out.n_events = in->n_events;
    for (size_t i = 0; i < in->n_events; i++)
        out.drain_rank[i] = SC_PLAN_NONE;
    for (size_t k = 0; k < n_queue; k++)
        out.drain_rank[queue[k]] = k;
    if (!(out.ev_class = calloc(in->n_events ? in->n_events : 1, sizeof(*out.ev_class))))
        goto out;
    for (size_t i = 0; i < in->n_events; i++) {
        out.ev_class[i] = pl.ev[i].cls;
        out.closable[i] = pl.ev[i].over && pl.ev[i].closable;
        if (!(out.waiting_for[i] = strdup(pl.ev[i].wait[0] ? pl.ev[i].wait : "nothing")))
            goto out;
    }
    out.member_state = pl.mstate;
    out.n_members = in->n_members;
    pl.mstate = NULL;
    out.actions = pl.acts;
    out.n_actions = pl.n_acts;
    pl.acts = NULL;
    pl.n_acts = 0;
    *ret_out = out;
    memset(&out, 0, sizeof(out));
    rc = 0;
out:
    sc_plan_output_release(&out);
    for (size_t k = 0; k < pl.n_acts; k++)
        free(pl.acts[k].events);
    free(pl.acts);
    free(pl.ev);
    free(pl.mstate);
    free(pl.busy_fd);
    free(pl.gone_sent);
    free(pl.reserved);
    free(pl.scratch_fd);
    free(pl.other_fd);
    free(pl.busy_ev);
    free(queue);
    return rc;
}
