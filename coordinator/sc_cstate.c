#include "sc_cstate.h"

#include "sc_error.h"
#include "sc_json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct sc_cstate {
    sc_cs_member_t *members; /* --members, in order */
    size_t n_members;        /* entries */
    sc_cs_event_t **ev;      /* events not closed, first seen first */
    size_t n_ev;             /* entries */
    sc_cs_closed_t *closed;  /* closed events, a ring of SC_CSTATE_MAX_CLOSED */
    size_t n_closed;         /* entries held */
    size_t closed_head;      /* index of the oldest when full */
    char **alerts;           /* alert keys raised, in order */
    size_t n_alerts;         /* entries */
    int64_t applied;         /* index of the last entry applied */
    int64_t term;            /* newest term */
    bool paused;             /* the operator's pause */
    sc_cs_rehearsal_t rh;    /* the last rehearsal */
};

/* ---- the drain table ----------------------------------------------------------------------
 *
 * One VM's drain for one event. Orders come from the leader's plan; reports from the VM's
 * agent (sc_cstate_drain_input). A report of an older attempt never gets here (the apply
 * drops it), and a late prepare report never moves a drain that reached its recover back.
 *
 *              prepare:   ORD    START  DONE   FAIL   INTR | recover: ORD  START  DONE   DONE
 *                                                          |                      listed over
 *                                                          |                             FAIL
 *   none                  P_ORD  PREP   PREPD  P_FL   P_IN |           R_ORD RECOV RB   RECD R_FL
 *   prepare_ordered       P_ORD  PREP   PREPD  P_FL   P_IN |           R_ORD RECOV RB   RECD R_FL
 *   preparing             P_ORD  PREP   PREPD  P_FL   P_IN |           R_ORD RECOV RB   RECD R_FL
 *   prepared              P_ORD  PREP   PREPD  P_FL   P_IN |           R_ORD RECOV RB   RECD R_FL
 *   prepare_failed        P_ORD  PREP   PREPD  P_FL   P_IN |           R_ORD RECOV RB   RECD R_FL
 *   prepare_interrupted   P_ORD  PREP   PREPD  P_FL   P_IN |           R_ORD RECOV RB   RECD R_FL
 *   recover_ordered       P_ORD  .      .      .      .    |           R_ORD RECOV RB   RECD R_FL
 *   recovering            P_ORD  .      .      .      .    |           R_ORD RECOV RB   RECD R_FL
 *   recovered             P_ORD  .      .      .      .    |           R_ORD RECOV RB   RECD R_FL
 *   recover_failed        P_ORD  .      .      .      .    |           R_ORD RECOV RB   RECD R_FL
 *   rolled_back           P_ORD  .      .      .      .    |           R_ORD RECOV RB   RECD R_FL
 *
 *   "." unchanged; REFUSED (the agent did not run the order; it is sent again): unchanged.
 *
 *   none ─ORD─▶ prepare_ordered ─START─▶ preparing ─DONE─▶ prepared ──────┐
 *                                              └──FAIL/INTR─▶ prepare_failed|interrupted
 *   any ─recover ORD─▶ recover_ordered ─START─▶ recovering ─DONE─▶ recovered (event over)
 *                                                         ├─DONE─▶ rolled_back (still listed:
 *                                                         │        drained again, a new attempt)
 *                                                         ├─FAIL─▶ recover_failed (ALERT)
 *                                                         └─INTR─▶ recover_ordered (again: the
 *                                                                  agent runs it again)
 */
#define P_ORD SC_DRAIN_PREPARE_ORDERED
#define PREP SC_DRAIN_PREPARING
#define PREPD SC_DRAIN_PREPARED
#define P_FL SC_DRAIN_PREPARE_FAILED
#define P_IN SC_DRAIN_PREPARE_INTERRUPTED
#define R_ORD SC_DRAIN_RECOVER_ORDERED
#define RECOV SC_DRAIN_RECOVERING
#define RECD SC_DRAIN_RECOVERED
#define R_FL SC_DRAIN_RECOVER_FAILED
#define RB SC_DRAIN_ROLLED_BACK
#define SAME SC_DRAIN_MAX /* in the table: unchanged */

/* One row per state, the inputs in sc_drain_input_t order. */
#define S_PREPARE_ROW P_ORD, PREP, PREPD, P_FL, P_IN, R_ORD, RECOV, RB, RECD, R_FL, SAME
#define S_RECOVER_ROW P_ORD, SAME, SAME, SAME, SAME, R_ORD, RECOV, RB, RECD, R_FL, SAME
static const sc_drain_state_t s_drain_table[SC_DRAIN_MAX][SC_DIN_MAX] = {
    [SC_DRAIN_NONE] = {S_PREPARE_ROW},
    [SC_DRAIN_PREPARE_ORDERED] = {S_PREPARE_ROW},
    [SC_DRAIN_PREPARING] = {S_PREPARE_ROW},
    [SC_DRAIN_PREPARED] = {S_PREPARE_ROW},
    [SC_DRAIN_PREPARE_FAILED] = {S_PREPARE_ROW},
    [SC_DRAIN_PREPARE_INTERRUPTED] = {S_PREPARE_ROW},
    [SC_DRAIN_RECOVER_ORDERED] = {S_RECOVER_ROW},
    [SC_DRAIN_RECOVERING] = {S_RECOVER_ROW},
    [SC_DRAIN_RECOVERED] = {S_RECOVER_ROW},
    [SC_DRAIN_RECOVER_FAILED] = {S_RECOVER_ROW},
    [SC_DRAIN_ROLLED_BACK] = {S_RECOVER_ROW},
};
#undef S_PREPARE_ROW
#undef S_RECOVER_ROW

/* A hook report as a drain input: [phase][hook state]; recover DONE is split by "listed". */
static const sc_drain_input_t s_report_input[SC_MSG_PHASE_MAX][SC_MSG_HOOK_STATE_MAX] = {
    [SC_MSG_PHASE_PREPARE] =
        {
            [SC_MSG_HOOK_STARTED] = SC_DIN_PREPARE_STARTED,
            [SC_MSG_HOOK_DONE] = SC_DIN_PREPARE_DONE,
            [SC_MSG_HOOK_SKIPPED] = SC_DIN_PREPARE_DONE,
            [SC_MSG_HOOK_FAILED] = SC_DIN_PREPARE_FAILED,
            [SC_MSG_HOOK_TIMED_OUT] = SC_DIN_PREPARE_FAILED,
            [SC_MSG_HOOK_INTERRUPTED] = SC_DIN_PREPARE_INTERRUPTED,
            [SC_MSG_HOOK_REFUSED] = SC_DIN_REFUSED,
        },
    [SC_MSG_PHASE_RECOVER] =
        {
            [SC_MSG_HOOK_STARTED] = SC_DIN_RECOVER_STARTED,
            [SC_MSG_HOOK_DONE] = SC_DIN_RECOVER_DONE_OVER,
            /* older agents: prepare never ran */
            [SC_MSG_HOOK_SKIPPED] = SC_DIN_RECOVER_DONE_OVER,
            [SC_MSG_HOOK_FAILED] = SC_DIN_RECOVER_FAILED,
            [SC_MSG_HOOK_TIMED_OUT] = SC_DIN_RECOVER_FAILED,
            /* the agent stopped before or while it ran: ordered again (sent again after
             * --resend), which the agent runs again (nemesis seed 65: taken as final, like a
             * failure, it freed the fault domain while the VM stayed out of service) */
            [SC_MSG_HOOK_INTERRUPTED] = SC_DIN_RECOVER_ORDERED,
            [SC_MSG_HOOK_REFUSED] = SC_DIN_REFUSED,
        },
};

static const char *const s_din_names[SC_DIN_MAX] = {
    "prepare_ordered",     "prepare_started", "prepare_done",    "prepare_failed",
    "prepare_interrupted", "recover_ordered", "recover_started", "recover_done_listed",
    "recover_done_over",   "recover_failed",  "refused"};

sc_drain_state_t sc_cstate_drain_next(sc_drain_state_t cur, sc_drain_input_t in)
{
    sc_drain_state_t next;

    if ((unsigned)cur >= SC_DRAIN_MAX || (unsigned)in >= SC_DIN_MAX)
        return cur;
    next = s_drain_table[cur][in];
    return next == SAME ? cur : next;
}

sc_drain_input_t sc_cstate_drain_input(sc_msg_phase_t phase, sc_msg_hook_state_t st, bool listed)
{
    sc_drain_input_t in;

    if ((unsigned)phase >= SC_MSG_PHASE_MAX || (unsigned)st >= SC_MSG_HOOK_STATE_MAX)
        return SC_DIN_MAX;
    in = s_report_input[phase][st];
    /* a recover done while the event is still listed was the rollback of a failed drain
     * (sc_plan.h rule 4), not the end of it */
    if (in == SC_DIN_RECOVER_DONE_OVER && listed)
        in = SC_DIN_RECOVER_DONE_LISTED;
    return in;
}

const char *sc_drain_input_name(sc_drain_input_t in)
{
    return (unsigned)in < SC_DIN_MAX ? s_din_names[in] : "unknown";
}

#undef P_ORD
#undef PREP
#undef PREPD
#undef P_FL
#undef P_IN
#undef R_ORD
#undef RECOV
#undef RECD
#undef R_FL
#undef RB
#undef SAME

/* ---- the approval table -------------------------------------------------------------------
 *
 *                  INTENT     ANSWER_OK   ANSWER_FAILED   STARTED      ANSWER_UNKNOWN
 *   none           intent     .           .               not_needed   .
 *   intent         .          approved    failed          .            unknown
 *   approved       .          .           .               .            .
 *   failed         intent     .           .               not_needed   .
 *   not_needed     .          .           .               .            .
 *   unknown        intent     .           .               not_needed   .
 *
 *   none ─INTENT─▶ intent ─OK─▶ approved (never again)
 *     │              ├─FAILED─▶ failed ─INTENT─▶ intent (retried with backoff)
 *     │              └─UNKNOWN─▶ unknown ─INTENT─▶ intent (POSTed again; blocks rollback)
 *     └─STARTED─▶ not_needed ◀─STARTED─┘ (Azure started it: never POSTed again)
 *
 * An intent in flight when the event starts stays an intent: its answer decides, and a failed
 * answer of an event that started is then STARTED's (not_needed). FAILED is only a definite
 * answer (an HTTP status from IMDS, or a delegate's): a POST that may still land is UNKNOWN,
 * which the planner treats as an intent for rollback (never recovered into service while the
 * event is listed) and as a failure for the next POST (Azure answers 200 to a repeat). */
#define SAME SC_APPROVAL_MAX
static const sc_approval_state_t s_approval_table[SC_APPROVAL_MAX][SC_AIN_MAX] = {
    [SC_APPROVAL_NONE] = {SC_APPROVAL_INTENT, SAME, SAME, SC_APPROVAL_NOT_NEEDED, SAME},
    [SC_APPROVAL_INTENT] = {SAME, SC_APPROVAL_APPROVED, SC_APPROVAL_FAILED, SAME,
                            SC_APPROVAL_UNKNOWN},
    [SC_APPROVAL_APPROVED] = {SAME, SAME, SAME, SAME, SAME},
    [SC_APPROVAL_FAILED] = {SC_APPROVAL_INTENT, SAME, SAME, SC_APPROVAL_NOT_NEEDED, SAME},
    [SC_APPROVAL_NOT_NEEDED] = {SAME, SAME, SAME, SAME, SAME},
    [SC_APPROVAL_UNKNOWN] = {SC_APPROVAL_INTENT, SAME, SAME, SC_APPROVAL_NOT_NEEDED, SAME},
};

static const char *const s_ain_names[SC_AIN_MAX] = {"intent", "answer_ok", "answer_failed",
                                                    "started", "answer_unknown"};

sc_approval_state_t sc_cstate_approval_next(sc_approval_state_t cur, sc_approval_input_t in)
{
    sc_approval_state_t next;

    if ((unsigned)cur >= SC_APPROVAL_MAX || (unsigned)in >= SC_AIN_MAX)
        return cur;
    next = s_approval_table[cur][in];
    return next == SAME ? cur : next;
}
#undef SAME

const char *sc_approval_input_name(sc_approval_input_t in)
{
    return (unsigned)in < SC_AIN_MAX ? s_ain_names[in] : "unknown";
}

/* ---- life cycle ---------------------------------------------------------------------------- */

static const char *s_strip(const char *n)
{
    return n[0] == '_' ? n + 1 : n;
}

int sc_cstate_new(const char *const *names, size_t n, sc_cstate_t **ret_cs)
{
    sc_cstate_t *cs;

    if (!names || !n || !ret_cs)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!names[i] || strlen(names[i]) > SC_NAME_MAX)
            return -EINVAL;
    if (!(cs = calloc(1, sizeof(*cs))))
        return -ENOMEM;
    if (!(cs->members = calloc(n, sizeof(*cs->members)))) {
        free(cs);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        snprintf(cs->members[i].name, sizeof(cs->members[i].name), "%s", names[i]);
        cs->members[i].fault_domain = cs->members[i].update_domain = -1;
    }
    cs->n_members = n;
    *ret_cs = cs;
    return 0;
}

static void s_event_free(sc_cs_event_t *e)
{
    if (!e)
        return;
    sc_event_clear(&e->ev);
    sc_strv_free(e->seen_by, e->n_seen_by);
    free(e->drain);
    free(e->attempt);
    free(e);
}

static void s_rh_clear(sc_cs_rehearsal_t *rh)
{
    for (size_t i = 0; i < rh->n_groups; i++)
        sc_strv_free(rh->groups[i].vms, rh->groups[i].n_vms);
    free(rh->groups);
    rh->groups = NULL;
    rh->n_groups = 0;
}

void sc_cstate_destroy(sc_cstate_t **csp)
{
    sc_cstate_t *cs;

    if (!csp || !*csp)
        return;
    cs = *csp;
    for (size_t i = 0; i < cs->n_ev; i++)
        s_event_free(cs->ev[i]);
    free(cs->ev);
    sc_strv_free(cs->alerts, cs->n_alerts);
    s_rh_clear(&cs->rh);
    free(cs->closed);
    free(cs->members);
    free(cs);
    *csp = NULL;
}

/* ---- reading ------------------------------------------------------------------------------- */

int sc_cstate_skip(sc_cstate_t *cs, int64_t index)
{
    if (!cs || index != cs->applied + 1)
        return -EINVAL;
    cs->applied = index;
    return 0;
}

int64_t sc_cstate_applied(const sc_cstate_t *cs)
{
    return cs ? cs->applied : 0;
}

int64_t sc_cstate_term(const sc_cstate_t *cs)
{
    return cs ? cs->term : 0;
}

bool sc_cstate_paused(const sc_cstate_t *cs)
{
    return cs && cs->paused;
}

static const char *const s_rh_state_names[SC_REHEARSAL_STATE_MAX] = {"none", "running", "stopped",
                                                                     "finished"};

const char *sc_rehearsal_state_name(sc_rehearsal_state_t s)
{
    return (unsigned)s < SC_REHEARSAL_STATE_MAX ? s_rh_state_names[s] : "unknown";
}

const sc_cs_rehearsal_t *sc_cstate_rehearsal(const sc_cstate_t *cs)
{
    return cs ? &cs->rh : NULL;
}

size_t sc_cstate_n_members(const sc_cstate_t *cs)
{
    return cs ? cs->n_members : 0;
}

const sc_cs_member_t *sc_cstate_member(const sc_cstate_t *cs, size_t i)
{
    return cs && i < cs->n_members ? &cs->members[i] : NULL;
}

size_t sc_cstate_member_find(const sc_cstate_t *cs, const char *n)
{
    if (!cs || !n)
        return SC_CSTATE_NONE;
    for (size_t i = 0; i < cs->n_members; i++)
        if (strcmp(s_strip(cs->members[i].name), s_strip(n)) == 0)
            return i;
    return SC_CSTATE_NONE;
}

size_t sc_cstate_n_events(const sc_cstate_t *cs)
{
    return cs ? cs->n_ev : 0;
}

const sc_cs_event_t *sc_cstate_event_at(const sc_cstate_t *cs, size_t i)
{
    return cs && i < cs->n_ev ? cs->ev[i] : NULL;
}

static size_t s_event_index(const sc_cstate_t *cs, const char *id)
{
    for (size_t i = 0; id && i < cs->n_ev; i++)
        if (sc_event_id_equal(cs->ev[i]->ev.id, id))
            return i;
    return SC_CSTATE_NONE;
}

const sc_cs_event_t *sc_cstate_event_find(const sc_cstate_t *cs, const char *id)
{
    size_t i = cs ? s_event_index(cs, id) : SC_CSTATE_NONE;
    return i == SC_CSTATE_NONE ? NULL : cs->ev[i];
}

size_t sc_cstate_n_closed(const sc_cstate_t *cs)
{
    return cs ? cs->n_closed : 0;
}

const sc_cs_closed_t *sc_cstate_closed_at(const sc_cstate_t *cs, size_t i)
{
    if (!cs || i >= cs->n_closed)
        return NULL;
    return &cs->closed[(cs->closed_head + i) % SC_CSTATE_MAX_CLOSED];
}

void sc_cstate_alert_key(char *buf, size_t len, const char *kind, const char *event_id,
                         const char *dedup, int attempt)
{
    snprintf(buf, len, "%s|%s|%s|%d", kind ? kind : "-", event_id ? event_id : "-",
             dedup ? dedup : "-", attempt);
}

bool sc_cstate_alert_raised(const sc_cstate_t *cs, const char *key)
{
    for (size_t i = 0; cs && key && i < cs->n_alerts; i++)
        if (strcmp(cs->alerts[i], key) == 0)
            return true;
    return false;
}

/* ---- applying ------------------------------------------------------------------------------ */

static sc_cs_event_t *s_event_new(const sc_cstate_t *cs)
{
    sc_cs_event_t *e = calloc(1, sizeof(*e));

    if (!e || !(e->drain = calloc(cs->n_members, sizeof(*e->drain))) ||
        !(e->attempt = calloc(cs->n_members, sizeof(*e->attempt)))) {
        s_event_free(e);
        return NULL;
    }
    e->via = SC_CSTATE_NONE;
    return e;
}

/* A copy of the strings of array arr (NULL: none) into *ret_v / *ret_n. */
static int s_strv_from(json_object *arr, char ***ret_v, size_t *ret_n)
{
    size_t n = arr ? json_object_array_length(arr) : 0;
    char **v = n ? calloc(n, sizeof(*v)) : NULL;

    if (n && !v)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        json_object *s = json_object_array_get_idx(arr, i);
        if (!json_object_is_type(s, json_type_string)) {
            sc_strv_free(v, i);
            return -EINVAL;
        }
        if (!(v[i] = strdup(json_object_get_string(s)))) {
            sc_strv_free(v, i);
            return -ENOMEM;
        }
    }
    *ret_v = v;
    *ret_n = n;
    return 0;
}

static int s_apply_member(sc_cstate_t *cs, json_object *d, char *err, size_t errlen)
{
    const char *name = sc_json_str(d, "name"), *state = sc_json_str(d, "state"),
               *ep = sc_json_str(d, "endpoint");
    const char *boot = sc_json_str(d, "boot_id");
    int64_t fd, ud;
    size_t mi;
    sc_cs_member_t *m;

    if (!name)
        return sc_errf(err, errlen, -EINVAL, "member: no \"name\"");
    if ((mi = sc_cstate_member_find(cs, name)) == SC_CSTATE_NONE ||
        strcmp(cs->members[mi].name, name) != 0)
        return 0; /* not in our --members */
    m = &cs->members[mi];
    if (ep)
        snprintf(m->endpoint, sizeof(m->endpoint), "%s", ep);
    if (sc_json_int(d, "fault_domain", &fd))
        m->fault_domain = (int)fd;
    if (sc_json_int(d, "update_domain", &ud))
        m->update_domain = (int)ud;
    if (state) {
        m->gone = strcmp(state, "gone") == 0;
        snprintf(m->gone_boot_id, sizeof(m->gone_boot_id), "%s", m->gone && boot ? boot : "");
    }
    return 0;
}

static int s_apply_event_seen(sc_cstate_t *cs, const sc_dlog_entry_t *en, json_object *d, char *err,
                              size_t errlen)
{
    json_object *jev;
    sc_event_t ev = {0};
    char perr[256] = "";
    char **seen = NULL;
    size_t n_seen = 0, i;
    sc_cs_event_t *e, **nv;
    int64_t observed = 0, rehearsal = 0;
    int rc;

    if (!json_object_object_get_ex(d, "event", &jev) || !json_object_is_type(jev, json_type_object))
        return sc_errf(err, errlen, -EINVAL, "event_seen: no \"event\" object");
    if ((rc = sc_event_from_json(jev, &ev, perr, sizeof(perr))) < 0)
        return rc == -ENOMEM ? rc : sc_errf(err, errlen, -EINVAL, "event_seen: %s", perr);
    if ((rc = s_strv_from(sc_json_arr(d, "seen_by"), &seen, &n_seen)) < 0) {
        sc_event_clear(&ev);
        return rc == -ENOMEM ? rc
                             : sc_errf(err, errlen, -EINVAL, "event_seen: \"seen_by\" not strings");
    }
    sc_json_int(d, "observed_ms", &observed);
    sc_json_int(d, "rehearsal", &rehearsal);
    if ((i = s_event_index(cs, ev.id)) != SC_CSTATE_NONE) {
        e = cs->ev[i];
    } else {
        if (cs->n_ev >= SC_REGISTRY_MAX_EVENTS || !(e = s_event_new(cs)) ||
            !(nv = realloc(cs->ev, (cs->n_ev + 1) * sizeof(*nv)))) {
            if (cs->n_ev < SC_REGISTRY_MAX_EVENTS)
                s_event_free(e);
            sc_event_clear(&ev);
            sc_strv_free(seen, n_seen);
            return cs->n_ev >= SC_REGISTRY_MAX_EVENTS
                       ? sc_errf(err, errlen, -EINVAL, "event_seen: more than %d events",
                                 SC_REGISTRY_MAX_EVENTS)
                       : -ENOMEM;
        }
        cs->ev = nv;
        cs->ev[cs->n_ev++] = e;
        e->first_seen_ms = en->wall_ms;
        e->phase = SC_REG_ACTIVE;
        e->rehearsal = rehearsal;
        /* the running rehearsal's next group is released */
        if (rehearsal && rehearsal == cs->rh.id && cs->rh.state == SC_REHEARSAL_RUNNING &&
            cs->rh.n_released < cs->rh.n_groups &&
            sc_event_id_equal(cs->rh.groups[cs->rh.n_released].event_id, ev.id))
            cs->rh.n_released++;
    }
    sc_event_clear(&e->ev);
    e->ev = ev; /* taken */
    if (seen || json_object_object_get_ex(d, "seen_by", NULL)) {
        sc_strv_free(e->seen_by, e->n_seen_by);
        e->seen_by = seen;
        e->n_seen_by = n_seen;
    }
    if (observed)
        e->observed_ms = observed;
    return 0;
}

/* The event an entry's "event_id" names, NULL (and *ret_rc) when absent or not held. */
static sc_cs_event_t *s_entry_event(sc_cstate_t *cs, json_object *d, const char *kind, char *err,
                                    size_t errlen, int *ret_rc)
{
    const char *id = sc_json_str(d, "event_id");
    size_t i;

    *ret_rc = 0;
    if (!id) {
        *ret_rc = sc_errf(err, errlen, -EINVAL, "%s: no \"event_id\"", kind);
        return NULL;
    }
    i = s_event_index(cs, id);
    return i == SC_CSTATE_NONE ? NULL : cs->ev[i];
}

static int s_apply_started(sc_cstate_t *cs, const sc_dlog_entry_t *en, json_object *d, char *err,
                           size_t errlen)
{
    const char *how = sc_json_str(d, "how");
    int rc;
    sc_cs_event_t *e = s_entry_event(cs, d, "event_started", err, errlen, &rc);

    if (rc < 0)
        return rc;
    if (!how)
        return sc_errf(err, errlen, -EINVAL, "event_started: no \"how\"");
    if (!e)
        return 0;
    if (e->start_kind == SC_START_NONE)
        e->start_kind = !strcmp(how, "approved")       ? SC_START_APPROVED
                        : !strcmp(how, "host_failure") ? SC_START_DIRECT
                                                       : SC_START_FORCED;
    if (!e->started_ms)
        e->started_ms = en->wall_ms;
    e->ev.status = SC_EVENT_STARTED;
    e->approval = sc_cstate_approval_next(e->approval, SC_AIN_STARTED);
    return 0;
}

static int s_apply_ended(sc_cstate_t *cs, const sc_dlog_entry_t *en, json_object *d, char *err,
                         size_t errlen)
{
    const char *how = sc_json_str(d, "how");
    int rc;
    sc_cs_event_t *e = s_entry_event(cs, d, "event_ended", err, errlen, &rc);

    if (rc < 0)
        return rc;
    if (!how)
        return sc_errf(err, errlen, -EINVAL, "event_ended: no \"how\"");
    if (!e || e->phase != SC_REG_ACTIVE)
        return 0;
    e->phase = strcmp(how, "cancelled") == 0 ? SC_REG_CANCELLED : SC_REG_ENDED;
    e->ended_ms = en->wall_ms;
    return 0;
}

static int s_apply_orders(sc_cstate_t *cs, json_object *d, bool prepare, char *err, size_t errlen)
{
    json_object *vms = sc_json_arr(d, "vms");
    const char *kind = prepare ? "prepare_ordered" : "recover_ordered";
    int64_t attempt = 1;
    int rc;
    sc_cs_event_t *e = s_entry_event(cs, d, kind, err, errlen, &rc);

    if (rc < 0)
        return rc;
    if (!vms)
        return sc_errf(err, errlen, -EINVAL, "%s: no \"vms\" array", kind);
    if (sc_json_int(d, "attempt", &attempt) && (attempt < 1 || attempt > SC_MSG_ATTEMPT_MAX))
        return sc_errf(err, errlen, -EINVAL, "%s: attempt %" PRId64 " out of 1..%d", kind, attempt,
                       SC_MSG_ATTEMPT_MAX);
    for (size_t i = 0; i < json_object_array_length(vms); i++)
        if (!json_object_is_type(json_object_array_get_idx(vms, i), json_type_string))
            return sc_errf(err, errlen, -EINVAL, "%s: \"vms\" not strings", kind);
    for (size_t i = 0; e && i < json_object_array_length(vms); i++) {
        size_t mi =
            sc_cstate_member_find(cs, json_object_get_string(json_object_array_get_idx(vms, i)));
        if (mi == SC_CSTATE_NONE)
            continue;
        e->drain[mi] = sc_cstate_drain_next(e->drain[mi], prepare ? SC_DIN_PREPARE_ORDERED
                                                                  : SC_DIN_RECOVER_ORDERED);
        e->attempt[mi] = (int)attempt;
    }
    return 0;
}

static int s_apply_progress(sc_cstate_t *cs, json_object *d, char *err, size_t errlen)
{
    const char *vm = sc_json_str(d, "vm"), *phase = sc_json_str(d, "phase"),
               *state = sc_json_str(d, "state");
    sc_msg_phase_t ph;
    sc_msg_hook_state_t st;
    int64_t attempt = 0;
    size_t mi;
    int rc;
    sc_cs_event_t *e = s_entry_event(cs, d, "hook_progress", err, errlen, &rc);

    if (rc < 0)
        return rc;
    if (!vm || !phase || !state)
        return sc_errf(err, errlen, -EINVAL,
                       "hook_progress: \"vm\", \"phase\" and \"state\" needed");
    if (sc_msg_phase_parse(phase, &ph) < 0 || sc_msg_hook_state_parse(state, &st) < 0)
        return sc_errf(err, errlen, -EINVAL, "hook_progress: phase \"%s\" / state \"%s\" unknown",
                       phase, state);
    if (!e || (mi = sc_cstate_member_find(cs, vm)) == SC_CSTATE_NONE)
        return 0;
    /* a report of an older attempt is history: it must not move the new attempt's drain */
    if (sc_json_int(d, "attempt", &attempt) && attempt < e->attempt[mi])
        return 0;
    e->drain[mi] = sc_cstate_drain_next(e->drain[mi],
                                        sc_cstate_drain_input(ph, st, e->phase == SC_REG_ACTIVE));
    return 0;
}

static int s_apply_intent(sc_cstate_t *cs, const sc_dlog_entry_t *en, json_object *d, char *err,
                          size_t errlen)
{
    json_object *ids = sc_json_arr(d, "event_ids");
    const char *via = sc_json_str(d, "via");
    size_t vi = via ? sc_cstate_member_find(cs, via) : SC_CSTATE_NONE;

    if (!ids || !sc_json_str(d, "body"))
        return sc_errf(err, errlen, -EINVAL, "approval_intent: \"event_ids\" and \"body\" needed");
    for (size_t k = 0; k < json_object_array_length(ids); k++) {
        size_t i = s_event_index(cs, json_object_get_string(json_object_array_get_idx(ids, k)));
        if (i == SC_CSTATE_NONE)
            continue;
        cs->ev[i]->approval = sc_cstate_approval_next(cs->ev[i]->approval, SC_AIN_INTENT);
        cs->ev[i]->intent = en->index;
        cs->ev[i]->via = vi;
    }
    return 0;
}

static int s_apply_answer(sc_cstate_t *cs, const sc_dlog_entry_t *en, json_object *d, char *err,
                          size_t errlen)
{
    int64_t intent, arc;
    json_object *unk = NULL;
    bool unknown;

    if (!sc_json_int(d, "intent", &intent) || !sc_json_int(d, "rc", &arc))
        return sc_errf(err, errlen, -EINVAL, "approval_answer: \"intent\" and \"rc\" needed");
    /* "unknown": no HTTP status, the POST may still land (absent in logs written before) */
    unknown =
        arc != 0 && json_object_object_get_ex(d, "unknown", &unk) && json_object_get_boolean(unk);
    for (size_t i = 0; i < cs->n_ev; i++) {
        sc_cs_event_t *e = cs->ev[i];
        if (!intent || e->intent != intent)
            continue;
        /* an error answering this POST says nothing of an earlier one that got no answer: it
         * may still land, so the approval stays unknown (never failed: rollback) */
        bool may_land = unknown || (arc != 0 && e->unsure);
        e->approval = sc_cstate_approval_next(e->approval, arc == 0   ? SC_AIN_ANSWER_OK
                                                           : may_land ? SC_AIN_ANSWER_UNKNOWN
                                                                      : SC_AIN_ANSWER_FAILED);
        e->unsure = arc != 0 && may_land;
        /* answered after it started: a failure is never retried */
        if (e->start_kind != SC_START_NONE)
            e->approval = sc_cstate_approval_next(e->approval, SC_AIN_STARTED);
        if (arc == 0 && !e->approved_ms)
            e->approved_ms = en->wall_ms;
        e->intent = 0;
        e->via = SC_CSTATE_NONE;
    }
    return 0;
}

static int s_apply_alert(sc_cstate_t *cs, json_object *d, char *err, size_t errlen)
{
    const char *alert = sc_json_str(d, "alert"), *key = sc_json_str(d, "key");
    char buf[SC_CSTATE_ALERT_KEY_MAX + 1], **nv;
    int64_t attempt = 0;

    if (!sc_json_str(d, "message"))
        return sc_errf(err, errlen, -EINVAL, "alert: no \"message\"");
    if (alert && (!strcmp(alert, "paused") || !strcmp(alert, "resumed"))) {
        cs->paused = strcmp(alert, "paused") == 0;
        return 0;
    }
    if (!key) { /* logs written before keys were: the key they were de-duplicated by */
        sc_json_int(d, "attempt", &attempt);
        sc_cstate_alert_key(buf, sizeof(buf), alert, sc_json_str(d, "event_id"),
                            sc_json_str(d, "member"), (int)attempt);
        key = buf;
    }
    if (sc_cstate_alert_raised(cs, key) || cs->n_alerts >= SC_CSTATE_MAX_ALERTS)
        return 0;
    if (!(nv = realloc(cs->alerts, (cs->n_alerts + 1) * sizeof(*nv))))
        return -ENOMEM;
    cs->alerts = nv;
    if (!(cs->alerts[cs->n_alerts] = strdup(key)))
        return -ENOMEM;
    cs->n_alerts++;
    return 0;
}

/* The groups of a "started" entry into rh (empty). */
static int s_rh_groups(sc_cs_rehearsal_t *rh, json_object *groups, char *err, size_t errlen)
{
    size_t n = json_object_array_length(groups);

    if (!n || n > SC_REGISTRY_MAX_MEMBERS)
        return sc_errf(err, errlen, -EINVAL, "rehearsal: \"groups\" empty or too many");
    if (!(rh->groups = calloc(n, sizeof(*rh->groups))))
        return -ENOMEM;
    for (size_t k = 0; k < n; k++) {
        json_object *g = json_object_array_get_idx(groups, k);
        const char *id = sc_json_str(g, "event_id");
        sc_cs_rh_group_t *rg = &rh->groups[rh->n_groups];
        int64_t dom = -1;
        int rc;

        if (!id || !sc_event_id_valid(id) || !sc_json_arr(g, "vms"))
            return sc_errf(err, errlen, -EINVAL,
                           "rehearsal: a group without a valid \"event_id\" or \"vms\"");
        if ((rc = s_strv_from(sc_json_arr(g, "vms"), &rg->vms, &rg->n_vms)) < 0)
            return rc == -ENOMEM ? rc
                                 : sc_errf(err, errlen, -EINVAL, "rehearsal: \"vms\" not strings");
        snprintf(rg->event_id, sizeof(rg->event_id), "%s", id);
        sc_json_int(g, "domain", &dom);
        rg->domain = dom >= -1 && dom <= 100000 ? (int)dom : -1;
        rh->n_groups++;
    }
    return 0;
}

static int s_rh_type(const char *name, sc_event_type_t *ret)
{
    for (int t = SC_EVENT_TYPE_UNKNOWN + 1; name && t < SC_EVENT_TYPE_MAX; t++)
        if (strcmp(name, sc_event_type_name((sc_event_type_t)t)) == 0) {
            *ret = (sc_event_type_t)t;
            return 0;
        }
    return -EINVAL;
}

/* A rehearsal begins (the last one finished), is stopped, or is over. An entry about another
 * rehearsal than the last, or out of turn, changes nothing (as an entry naming an event the
 * state does not hold). */
static int s_apply_rehearsal(sc_cstate_t *cs, const sc_dlog_entry_t *en, json_object *d, char *err,
                             size_t errlen)
{
    const char *state = sc_json_str(d, "state"), *why = sc_json_str(d, "why");
    sc_cs_rehearsal_t rh = {0};
    int64_t id;
    int rc;

    if (!sc_json_int(d, "rehearsal", &id) || id < 1 || !state)
        return sc_errf(err, errlen, -EINVAL,
                       "rehearsal: \"rehearsal\" (>= 1) and \"state\" needed");
    if (strcmp(state, "stopped") == 0 || strcmp(state, "finished") == 0) {
        bool stop = state[0] == 's';
        if (id != cs->rh.id ||
            (stop ? cs->rh.state != SC_REHEARSAL_RUNNING
                  : cs->rh.state != SC_REHEARSAL_RUNNING && cs->rh.state != SC_REHEARSAL_STOPPED))
            return 0;
        if (stop) {
            cs->rh.state = SC_REHEARSAL_STOPPED;
            cs->rh.stopped_ms = en->wall_ms;
            snprintf(cs->rh.why, sizeof(cs->rh.why), "%s", why ? why : "");
        } else {
            cs->rh.state = SC_REHEARSAL_FINISHED;
            cs->rh.finished_ms = en->wall_ms;
        }
        return 0;
    }
    if (strcmp(state, "started") != 0)
        return sc_errf(err, errlen, -EINVAL, "rehearsal: state \"%s\" unknown", state);
    if (s_rh_type(sc_json_str(d, "event_type"), &rh.type) < 0 || !sc_json_arr(d, "groups"))
        return sc_errf(err, errlen, -EINVAL,
                       "rehearsal: started without a known \"event_type\" or \"groups\"");
    if (cs->rh.state == SC_REHEARSAL_RUNNING || cs->rh.state == SC_REHEARSAL_STOPPED ||
        id != cs->rh.id + 1)
        return 0; /* one at a time, numbered in turn */
    if ((rc = s_rh_groups(&rh, sc_json_arr(d, "groups"), err, errlen)) < 0) {
        s_rh_clear(&rh);
        return rc;
    }
    rh.id = id;
    rh.index = en->index;
    rh.state = SC_REHEARSAL_RUNNING;
    snprintf(rh.scope, sizeof(rh.scope), "%s",
             sc_json_str(d, "scope") ? sc_json_str(d, "scope") : "");
    sc_json_int(d, "recover_after_s", &rh.recover_after_s);
    sc_json_int(d, "not_before", &rh.not_before);
    rh.started_ms = en->wall_ms;
    s_rh_clear(&cs->rh);
    cs->rh = rh;
    return 0;
}

static int s_close(sc_cstate_t *cs, size_t i)
{
    sc_cs_event_t *e = cs->ev[i];
    sc_cs_closed_t *t;

    if (!cs->closed && !(cs->closed = calloc(SC_CSTATE_MAX_CLOSED, sizeof(*cs->closed))))
        return -ENOMEM;
    if (cs->n_closed < SC_CSTATE_MAX_CLOSED) {
        t = &cs->closed[cs->n_closed++];
    } else { /* the oldest goes */
        t = &cs->closed[cs->closed_head];
        cs->closed_head = (cs->closed_head + 1) % SC_CSTATE_MAX_CLOSED;
    }
    snprintf(t->id, sizeof(t->id), "%s", e->ev.id);
    t->phase = e->phase;
    t->ended_ms = e->ended_ms;
    memmove(&cs->ev[i], &cs->ev[i + 1], (cs->n_ev - i - 1) * sizeof(*cs->ev));
    cs->n_ev--;
    s_event_free(e);
    return 0;
}

static int s_apply_data(sc_cstate_t *cs, const sc_dlog_entry_t *e, json_object *d, char *err,
                        size_t errlen)
{
    int64_t t;
    int rc;
    sc_cs_event_t *ev;

    switch (e->kind) {
    case SC_DLOG_TERM:
        if (!sc_json_int(d, "term", &t))
            return sc_errf(err, errlen, -EINVAL, "term: no \"term\"");
        if (t > cs->term)
            cs->term = t;
        return 0;
    case SC_DLOG_MEMBER: return s_apply_member(cs, d, err, errlen);
    case SC_DLOG_EVENT_SEEN: return s_apply_event_seen(cs, e, d, err, errlen);
    case SC_DLOG_EVENT_STARTED: return s_apply_started(cs, e, d, err, errlen);
    case SC_DLOG_EVENT_ENDED: return s_apply_ended(cs, e, d, err, errlen);
    case SC_DLOG_PREPARE_ORDERED: return s_apply_orders(cs, d, true, err, errlen);
    case SC_DLOG_RECOVER_ORDERED: return s_apply_orders(cs, d, false, err, errlen);
    case SC_DLOG_HOOK_PROGRESS: return s_apply_progress(cs, d, err, errlen);
    case SC_DLOG_APPROVAL_INTENT: return s_apply_intent(cs, e, d, err, errlen);
    case SC_DLOG_APPROVAL_ANSWER: return s_apply_answer(cs, e, d, err, errlen);
    case SC_DLOG_ALERT: return s_apply_alert(cs, d, err, errlen);
    case SC_DLOG_EVENT_CLOSED:
        ev = s_entry_event(cs, d, "event_closed", err, errlen, &rc);
        if (rc < 0 || !ev)
            return rc;
        return s_close(cs, s_event_index(cs, ev->ev.id));
    case SC_DLOG_REHEARSAL: return s_apply_rehearsal(cs, e, d, err, errlen);
    default: return sc_errf(err, errlen, -EINVAL, "entry kind %d unknown", (int)e->kind);
    }
}

int sc_cstate_apply(sc_cstate_t *cs, const sc_dlog_entry_t *e, json_object *data, char *err,
                    size_t errlen)
{
    json_object *own = NULL;
    int rc;

    if (err && errlen)
        err[0] = '\0';
    if (!cs || !e)
        return -EINVAL;
    if (e->index != cs->applied + 1)
        return sc_errf(err, errlen, -EINVAL, "entry %" PRId64 " out of order: %" PRId64 " applied",
                       e->index, cs->applied);
    if (e->term < cs->term && e->kind != SC_DLOG_TERM)
        return sc_errf(err, errlen, -EINVAL,
                       "entry %" PRId64 " of term %" PRId64 " after term %" PRId64, e->index,
                       e->term, cs->term);
    if (!data) {
        if (!e->data || !(own = json_tokener_parse(e->data)))
            return sc_errf(err, errlen, -EINVAL, "entry %" PRId64 ": data is not JSON", e->index);
        data = own;
    }
    if (!json_object_is_type(data, json_type_object))
        rc = sc_errf(err, errlen, -EINVAL, "entry %" PRId64 ": data is not an object", e->index);
    else
        rc = s_apply_data(cs, e, data, err, errlen);
    json_object_put(own);
    if (rc < 0)
        return rc;
    if (e->term > cs->term)
        cs->term = e->term;
    cs->applied = e->index;
    return 0;
}

/* ---- snapshots ----------------------------------------------------------------------------- */

static json_object *s_i64(int64_t v)
{
    return json_object_new_int64(v);
}

static json_object *s_member_json(const sc_cs_member_t *m)
{
    json_object *o = json_object_new_object();

    json_object_object_add(o, "name", json_object_new_string(m->name));
    json_object_object_add(o, "endpoint", json_object_new_string(m->endpoint));
    json_object_object_add(o, "fault_domain", json_object_new_int(m->fault_domain));
    json_object_object_add(o, "update_domain", json_object_new_int(m->update_domain));
    json_object_object_add(o, "gone", json_object_new_boolean(m->gone));
    json_object_object_add(o, "gone_boot_id", json_object_new_string(m->gone_boot_id));
    return o;
}

static int s_event_json(const sc_cstate_t *cs, const sc_cs_event_t *e, json_object **ret)
{
    json_object *o = json_object_new_object(), *jev = NULL, *seen = json_object_new_array();
    json_object *drains = json_object_new_object();

    if (sc_event_to_json(&e->ev, &jev) < 0) {
        json_object_put(o);
        json_object_put(seen);
        json_object_put(drains);
        return -ENOMEM;
    }
    for (size_t i = 0; i < e->n_seen_by; i++)
        json_object_array_add(seen, json_object_new_string(e->seen_by[i]));
    for (size_t i = 0; i < cs->n_members; i++) {
        json_object *d;
        if (e->drain[i] == SC_DRAIN_NONE && !e->attempt[i])
            continue;
        d = json_object_new_object();
        json_object_object_add(d, "state",
                               json_object_new_string(sc_drain_state_name(e->drain[i])));
        json_object_object_add(d, "attempt", json_object_new_int(e->attempt[i]));
        json_object_object_add(drains, cs->members[i].name, d);
    }
    json_object_object_add(o, "event", jev);
    json_object_object_add(o, "seen_by", seen);
    json_object_object_add(o, "observed_ms", s_i64(e->observed_ms));
    json_object_object_add(o, "first_seen_ms", s_i64(e->first_seen_ms));
    json_object_object_add(o, "started_ms", s_i64(e->started_ms));
    json_object_object_add(o, "ended_ms", s_i64(e->ended_ms));
    json_object_object_add(o, "phase", json_object_new_string(sc_reg_phase_name(e->phase)));
    json_object_object_add(o, "start_kind",
                           json_object_new_string(sc_start_kind_name(e->start_kind)));
    json_object_object_add(o, "approval",
                           json_object_new_string(sc_approval_state_name(e->approval)));
    json_object_object_add(o, "intent", s_i64(e->intent));
    json_object_object_add(
        o, "via",
        e->via == SC_CSTATE_NONE ? NULL : json_object_new_string(cs->members[e->via].name));
    json_object_object_add(o, "approved_ms", s_i64(e->approved_ms));
    if (e->unsure)
        json_object_object_add(o, "unsure", json_object_new_boolean(1));
    json_object_object_add(o, "drains", drains);
    if (e->rehearsal)
        json_object_object_add(o, "rehearsal", s_i64(e->rehearsal));
    *ret = o;
    return 0;
}

static json_object *s_rh_json(const sc_cs_rehearsal_t *rh)
{
    json_object *o = json_object_new_object(), *groups = json_object_new_array();

    json_object_object_add(o, "id", s_i64(rh->id));
    json_object_object_add(o, "index", s_i64(rh->index));
    json_object_object_add(o, "state", json_object_new_string(sc_rehearsal_state_name(rh->state)));
    json_object_object_add(o, "event_type", json_object_new_string(sc_event_type_name(rh->type)));
    json_object_object_add(o, "scope", json_object_new_string(rh->scope));
    json_object_object_add(o, "recover_after_s", s_i64(rh->recover_after_s));
    json_object_object_add(o, "not_before", s_i64(rh->not_before));
    json_object_object_add(o, "started_ms", s_i64(rh->started_ms));
    json_object_object_add(o, "stopped_ms", s_i64(rh->stopped_ms));
    json_object_object_add(o, "finished_ms", s_i64(rh->finished_ms));
    json_object_object_add(o, "why", json_object_new_string(rh->why));
    json_object_object_add(o, "released", s_i64((int64_t)rh->n_released));
    for (size_t i = 0; i < rh->n_groups; i++) {
        json_object *g = json_object_new_object(), *vms = json_object_new_array();
        for (size_t k = 0; k < rh->groups[i].n_vms; k++)
            json_object_array_add(vms, json_object_new_string(rh->groups[i].vms[k]));
        json_object_object_add(g, "event_id", json_object_new_string(rh->groups[i].event_id));
        json_object_object_add(g, "domain", json_object_new_int(rh->groups[i].domain));
        json_object_object_add(g, "vms", vms);
        json_object_array_add(groups, g);
    }
    json_object_object_add(o, "groups", groups);
    return o;
}

int sc_cstate_to_json(const sc_cstate_t *cs, json_object **ret_json)
{
    json_object *o, *members, *events, *closed, *alerts;

    if (!cs || !ret_json)
        return -EINVAL;
    o = json_object_new_object();
    members = json_object_new_array();
    events = json_object_new_array();
    closed = json_object_new_array();
    alerts = json_object_new_array();
    json_object_object_add(o, "applied", s_i64(cs->applied));
    json_object_object_add(o, "term", s_i64(cs->term));
    json_object_object_add(o, "paused", json_object_new_boolean(cs->paused));
    json_object_object_add(o, "members", members);
    json_object_object_add(o, "events", events);
    json_object_object_add(o, "closed", closed);
    json_object_object_add(o, "alerts", alerts);
    for (size_t i = 0; i < cs->n_members; i++)
        json_object_array_add(members, s_member_json(&cs->members[i]));
    for (size_t i = 0; i < cs->n_ev; i++) {
        json_object *je = NULL;
        if (s_event_json(cs, cs->ev[i], &je) < 0) {
            json_object_put(o);
            return -ENOMEM;
        }
        json_object_array_add(events, je);
    }
    for (size_t i = 0; i < cs->n_closed; i++) {
        const sc_cs_closed_t *t = sc_cstate_closed_at(cs, i);
        json_object *jt = json_object_new_object();
        json_object_object_add(jt, "id", json_object_new_string(t->id));
        json_object_object_add(jt, "phase", json_object_new_string(sc_reg_phase_name(t->phase)));
        json_object_object_add(jt, "ended_ms", s_i64(t->ended_ms));
        json_object_array_add(closed, jt);
    }
    for (size_t i = 0; i < cs->n_alerts; i++)
        json_object_array_add(alerts, json_object_new_string(cs->alerts[i]));
    json_object_object_add(o, "rehearsal", cs->rh.id ? s_rh_json(&cs->rh) : NULL);
    *ret_json = o;
    return 0;
}

static int s_phase_parse(const char *s, sc_reg_phase_t *ret)
{
    for (int p = 0; s && p < SC_REG_PHASE_MAX; p++)
        if (strcmp(s, sc_reg_phase_name((sc_reg_phase_t)p)) == 0) {
            *ret = (sc_reg_phase_t)p;
            return 0;
        }
    return -EINVAL;
}

static int s_start_kind_parse(const char *s, sc_start_kind_t *ret)
{
    for (int k = 0; s && k < SC_START_MAX; k++)
        if (strcmp(s, sc_start_kind_name((sc_start_kind_t)k)) == 0) {
            *ret = (sc_start_kind_t)k;
            return 0;
        }
    return -EINVAL;
}

static int64_t s_get(json_object *o, const char *key)
{
    int64_t v = 0;
    sc_json_int(o, key, &v);
    return v;
}

/* One event of a snapshot into *ret (the caller's). */
static int s_event_from(const sc_cstate_t *cs, json_object *je, sc_cs_event_t **ret, char *err,
                        size_t errlen)
{
    sc_cs_event_t *e = s_event_new(cs);
    json_object *jev, *drains;
    const char *via = sc_json_str(je, "via");
    char perr[256] = "";
    int rc;

    if (!e)
        return -ENOMEM;
    if (!json_object_object_get_ex(je, "event", &jev) ||
        (rc = sc_event_from_json(jev, &e->ev, perr, sizeof(perr))) < 0) {
        s_event_free(e);
        return sc_errf(err, errlen, -EINVAL, "snapshot: an event unreadable: %s",
                       perr[0] ? perr : "none");
    }
    if ((rc = s_strv_from(sc_json_arr(je, "seen_by"), &e->seen_by, &e->n_seen_by)) < 0 ||
        s_phase_parse(sc_json_str(je, "phase"), &e->phase) < 0 ||
        s_start_kind_parse(sc_json_str(je, "start_kind"), &e->start_kind) < 0 ||
        sc_approval_state_from_name(sc_json_str(je, "approval"), &e->approval) < 0) {
        rc = rc == -ENOMEM ? rc
                           : sc_errf(err, errlen, -EINVAL,
                                     "snapshot: event %s: seen_by, phase, start_kind "
                                     "or approval unreadable",
                                     e->ev.id);
        s_event_free(e);
        return rc;
    }
    e->observed_ms = s_get(je, "observed_ms");
    e->first_seen_ms = s_get(je, "first_seen_ms");
    e->started_ms = s_get(je, "started_ms");
    e->ended_ms = s_get(je, "ended_ms");
    e->intent = s_get(je, "intent");
    e->approved_ms = s_get(je, "approved_ms");
    e->unsure = json_object_get_boolean(json_object_object_get(je, "unsure"));
    e->rehearsal = s_get(je, "rehearsal");
    e->via = via ? sc_cstate_member_find(cs, via) : SC_CSTATE_NONE;
    if (json_object_object_get_ex(je, "drains", &drains) &&
        json_object_is_type(drains, json_type_object)) {
        json_object_object_foreach(drains, vm, d)
        {
            size_t mi = sc_cstate_member_find(cs, vm);
            if (mi == SC_CSTATE_NONE)
                continue;
            if (sc_drain_state_from_name(sc_json_str(d, "state"), &e->drain[mi]) < 0) {
                rc = sc_errf(err, errlen, -EINVAL, "snapshot: event %s: drain of %s unreadable",
                             e->ev.id, vm);
                s_event_free(e);
                return rc;
            }
            e->attempt[mi] = (int)s_get(d, "attempt");
        }
    }
    *ret = e;
    return 0;
}

/* A snapshot's rehearsal into rh (empty). */
static int s_rh_from(json_object *j, sc_cs_rehearsal_t *rh, char *err, size_t errlen)
{
    const char *state = sc_json_str(j, "state");
    int64_t released = 0;
    int rc;

    rh->id = s_get(j, "id");
    for (int k = 0; state && k < SC_REHEARSAL_STATE_MAX; k++)
        if (strcmp(state, s_rh_state_names[k]) == 0)
            rh->state = (sc_rehearsal_state_t)k;
    if (rh->id < 1 || !state || rh->state == SC_REHEARSAL_NONE ||
        s_rh_type(sc_json_str(j, "event_type"), &rh->type) < 0 || !sc_json_arr(j, "groups"))
        return sc_errf(err, errlen, -EINVAL, "snapshot: the rehearsal unreadable");
    if ((rc = s_rh_groups(rh, sc_json_arr(j, "groups"), err, errlen)) < 0)
        return rc;
    rh->index = s_get(j, "index");
    snprintf(rh->scope, sizeof(rh->scope), "%s",
             sc_json_str(j, "scope") ? sc_json_str(j, "scope") : "");
    rh->recover_after_s = s_get(j, "recover_after_s");
    rh->not_before = s_get(j, "not_before");
    rh->started_ms = s_get(j, "started_ms");
    rh->stopped_ms = s_get(j, "stopped_ms");
    rh->finished_ms = s_get(j, "finished_ms");
    snprintf(rh->why, sizeof(rh->why), "%s", sc_json_str(j, "why") ? sc_json_str(j, "why") : "");
    sc_json_int(j, "released", &released);
    rh->n_released = released > 0 && (size_t)released <= rh->n_groups ? (size_t)released : 0;
    return 0;
}

int sc_cstate_from_json(sc_cstate_t *cs, json_object *snap, char *err, size_t errlen)
{
    json_object *members = NULL, *events = NULL, *closed = NULL, *alerts = NULL, *rh = NULL;
    sc_cstate_t *tmp = NULL;
    const char **names;
    int rc;

    if (!cs || !snap)
        return -EINVAL;
    if (cs->applied || cs->n_ev)
        return sc_errf(err, errlen, -EINVAL, "snapshot: loaded into a state that is not empty");
    if (!json_object_is_type(snap, json_type_object) || !(members = sc_json_arr(snap, "members")) ||
        !(events = sc_json_arr(snap, "events")) || !(closed = sc_json_arr(snap, "closed")) ||
        !(alerts = sc_json_arr(snap, "alerts")))
        return sc_errf(err, errlen, -EINVAL, "snapshot: members, events, closed and alerts needed");
    /* built aside, swapped in whole: on error cs is unchanged */
    if (!(names = calloc(cs->n_members, sizeof(*names))))
        return -ENOMEM;
    for (size_t i = 0; i < cs->n_members; i++)
        names[i] = cs->members[i].name;
    rc = sc_cstate_new(names, cs->n_members, &tmp);
    free(names);
    if (rc < 0)
        return rc;
    tmp->applied = s_get(snap, "applied");
    tmp->term = s_get(snap, "term");
    tmp->paused = json_object_get_boolean(json_object_object_get(snap, "paused"));
    for (size_t k = 0; k < json_object_array_length(members); k++) {
        json_object *jm = json_object_array_get_idx(members, k);
        const char *name = sc_json_str(jm, "name");
        size_t mi = name ? sc_cstate_member_find(tmp, name) : SC_CSTATE_NONE;
        sc_cs_member_t *m;
        if (mi == SC_CSTATE_NONE)
            continue;
        m = &tmp->members[mi];
        snprintf(m->endpoint, sizeof(m->endpoint), "%s",
                 sc_json_str(jm, "endpoint") ? sc_json_str(jm, "endpoint") : "");
        m->fault_domain =
            sc_json_int(jm, "fault_domain", &(int64_t){0}) ? (int)s_get(jm, "fault_domain") : -1;
        m->update_domain =
            sc_json_int(jm, "update_domain", &(int64_t){0}) ? (int)s_get(jm, "update_domain") : -1;
        m->gone = json_object_get_boolean(json_object_object_get(jm, "gone"));
        snprintf(m->gone_boot_id, sizeof(m->gone_boot_id), "%s",
                 sc_json_str(jm, "gone_boot_id") ? sc_json_str(jm, "gone_boot_id") : "");
    }
    for (size_t k = 0; rc >= 0 && k < json_object_array_length(events); k++) {
        sc_cs_event_t *e = NULL, **nv;
        if (tmp->n_ev >= SC_REGISTRY_MAX_EVENTS) {
            rc = sc_errf(err, errlen, -EINVAL, "snapshot: more than %d events",
                         SC_REGISTRY_MAX_EVENTS);
            break;
        }
        if ((rc = s_event_from(tmp, json_object_array_get_idx(events, k), &e, err, errlen)) < 0)
            break;
        if (!(nv = realloc(tmp->ev, (tmp->n_ev + 1) * sizeof(*nv)))) {
            s_event_free(e);
            rc = -ENOMEM;
            break;
        }
        tmp->ev = nv;
        tmp->ev[tmp->n_ev++] = e;
    }
    if (rc >= 0 && json_object_array_length(closed) &&
        !(tmp->closed = calloc(SC_CSTATE_MAX_CLOSED, sizeof(*tmp->closed))))
        rc = -ENOMEM;
    for (size_t k = 0; rc >= 0 && k < json_object_array_length(closed); k++) {
        json_object *jt = json_object_array_get_idx(closed, k);
        sc_cs_closed_t *t;
        if (tmp->n_closed >= SC_CSTATE_MAX_CLOSED)
            break;
        t = &tmp->closed[tmp->n_closed];
        if (!sc_json_str(jt, "id") || s_phase_parse(sc_json_str(jt, "phase"), &t->phase) < 0) {
            rc = sc_errf(err, errlen, -EINVAL, "snapshot: a closed event unreadable");
            break;
        }
        snprintf(t->id, sizeof(t->id), "%s", sc_json_str(jt, "id"));
        t->ended_ms = s_get(jt, "ended_ms");
        tmp->n_closed++;
    }
    if (rc >= 0 && json_object_array_length(alerts) &&
        (rc = s_strv_from(alerts, &tmp->alerts, &tmp->n_alerts)) == -EINVAL)
        rc = sc_errf(err, errlen, -EINVAL, "snapshot: alerts not strings");
    if (rc >= 0 && json_object_object_get_ex(snap, "rehearsal", &rh) && rh)
        rc = s_rh_from(rh, &tmp->rh, err, errlen);
    if (rc < 0) {
        sc_cstate_destroy(&tmp);
        return rc;
    }
    /* swap */
    {
        sc_cstate_t t = *cs;
        *cs = *tmp;
        *tmp = t;
    }
    sc_cstate_destroy(&tmp);
    return 0;
}
