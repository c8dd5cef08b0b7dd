/* Rehearsals (schedcoordctl rehearse): the leader makes up one event per domain (rule 2's), as
 * Azure would send them, and plans them exactly as real ones — same classes, same domain order,
 * same min-healthy — so the agents run the real hooks on the real VMs. Nothing is POSTed: the
 * planner's approval of a rehearsal's event is simulated (an EVENT_STARTED entry), its NotBefore
 * passing starts it as Azure would, and it ends --recover-after seconds after it started; then
 * the planner recovers its VMs and the next domain drains. A real event arriving wins: the
 * rehearsal is stopped, its events end (cancelled while Scheduled), what it prepared recovers,
 * and the real event is planned under the safety rules. Everything is a decision-log entry
 * (SC_DLOG_REHEARSAL, and the events' own); the report is built from the store's drains rows.
 *
 * Preempt and Terminate drain at once whatever else is busy: their rehearsal releases one
 * domain's event at a time, so that it never takes out more than a platform event would. */
#include "sc_coord_int.h"

#include "sc_error.h"
#include "sc_forecast.h"
#include "sc_log.h"
#include "sc_time.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define S_RECOVER_AFTER_MAX_S 86400 /* longest --recover-after */

/* When a rehearsal's event started (monotonic): its --recover-after timer. Not replicated: a
 * restart starts it again. */
typedef struct s_timer {
    char id[SC_EVENT_ID_MAX + 1]; /* EventId */
    int64_t started_ms;           /* monotonic ms */
} s_timer_t;

struct sc_coord_rh {
    s_timer_t *t; /* timers */
    size_t n;     /* entries */
};

void sc_coord_rehearse_free(sc_coord_t *c)
{
    if (!c->rh)
        return;
    free(c->rh->t);
    free(c->rh);
    c->rh = NULL;
}

bool sc_coord_rehearse_owns(const sc_coord_t *c, const char *id)
{
    const sc_cs_event_t *ce = sc_cstate_event_find(c->cs, id);

    return ce && ce->rehearsal;
}

static bool s_evict(sc_event_type_t t)
{
    return t == SC_EVENT_PREEMPT || t == SC_EVENT_TERMINATE;
}

/* Whether an event of rehearsal id is still held by the state (not closed). */
static bool s_has_events(const sc_coord_t *c, int64_t id)
{
    for (size_t i = 0; i < sc_cstate_n_events(c->cs); i++)
        if (sc_cstate_event_at(c->cs, i)->rehearsal == id)
            return true;
    return false;
}

/* A real event the state holds and that is not over, or NULL. */
static const sc_cs_event_t *s_real_event(const sc_coord_t *c)
{
    for (size_t i = 0; i < sc_cstate_n_events(c->cs); i++) {
        const sc_cs_event_t *e = sc_cstate_event_at(c->cs, i);
        if (!e->rehearsal && e->phase == SC_REG_ACTIVE)
            return e;
    }
    return NULL;
}

/* The domain rule 2 counts for member mi (decided, else as its hello said), -1 unknown. */
static int s_domain(const sc_coord_t *c, size_t mi, bool fault)
{
    const sc_cs_member_t *cm = sc_cstate_member(c->cs, mi);
    int d = fault ? cm->fault_domain : cm->update_domain;

    if (sc_coord_serialise_by(c) == SC_SERIALISE_VM)
        return -1; /* each VM a group of its own */
    if (d < 0)
        d = fault ? c->members[mi].fault_domain : c->members[mi].update_domain;
    return d;
}

/* ---- the registry follows the state -------------------------------------------------------- */

/* A rehearsal's events are the leader's own: no agent reports them, so the registry (which the
 * plan round reads) is told of them from the state — made, started, ended — with no witness, so
 * that no agent's document ever ends them. Done outside plan rounds (the round borrows the
 * registry's events). */
static void s_sync_registry(sc_coord_t *c, int64_t now)
{
    for (size_t i = 0; i < sc_cstate_n_events(c->cs); i++) {
        const sc_cs_event_t *e = sc_cstate_event_at(c->cs, i);
        const sc_reg_event_t *re;
        sc_reg_restore_t r = {0};
        int rc;

        if (!e->rehearsal)
            continue;
        re = sc_registry_find(c->reg, e->ev.id);
        if (re && re->phase == e->phase && re->start_kind == e->start_kind &&
            re->ev.status == e->ev.status)
            continue;
        r.ev = &e->ev;
        r.phase = e->phase;
        r.start_kind = e->start_kind;
        r.approved = e->start_kind == SC_START_APPROVED;
        r.first_seen_ms = re ? re->first_seen_ms : now;
        r.last_seen_ms = now;
        r.started_ms = e->start_kind == SC_START_NONE ? 0
                       : re && re->started_ms         ? re->started_ms
                                                      : now;
        r.ended_ms = e->phase == SC_REG_ACTIVE ? 0 : now;
        if ((rc = sc_registry_restore_event(c->reg, &r)) < 0)
            sc_log_warn("rehearsal event not in the registry", "event=%s rc=%s", e->ev.id,
                        sc_errname(rc));
        if (!sc_coord_exec_ev_get(c, e->ev.id))
            sc_log_warn("rehearsal event without its timers", "event=%s", e->ev.id);
        c->dirty = true;
    }
}

/* ---- decisions ------------------------------------------------------------------------------ */

/* "Mon, 11 Apr 2022 22:26:58 GMT" (IMDS's NotBefore). */
static void s_rfc1123(int64_t unix_s, char *buf, size_t len)
{
    static const char *const day[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char *const mon[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t t = (time_t)unix_s;
    struct tm tm;

    if (!gmtime_r(&t, &tm)) {
        snprintf(buf, len, "%s", "");
        return;
    }
    snprintf(buf, len, "%s, %02d %s %04d %02d:%02d:%02d GMT", day[tm.tm_wday], tm.tm_mday,
             mon[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* Releases group k of the running rehearsal: its event, seen by no one but us. */
static int s_release(sc_coord_t *c, const sc_cs_rehearsal_t *rh, size_t k)
{
    const sc_cs_rh_group_t *g = &rh->groups[k];
    json_object *d = json_object_new_object(), *ev = json_object_new_object();
    json_object *res = json_object_new_array();
    char nb[64], desc[128], why[160];
    /* a Freeze shorter than the threshold would need no drain: nothing to rehearse */
    int64_t dur =
        rh->type == SC_EVENT_FREEZE && (double)rh->recover_after_s < c->o.policy.freeze_threshold_s
            ? -1
            : rh->recover_after_s;

    s_rfc1123(rh->not_before, nb, sizeof(nb));
    snprintf(desc, sizeof(desc), "schedcoord rehearsal %lld: nothing is approved through IMDS",
             (long long)rh->id);
    for (size_t i = 0; i < g->n_vms; i++)
        json_object_array_add(res, json_object_new_string(g->vms[i]));
    json_object_object_add(ev, "EventId", json_object_new_string(g->event_id));
    json_object_object_add(ev, "EventType", json_object_new_string(sc_event_type_name(rh->type)));
    json_object_object_add(ev, "ResourceType", json_object_new_string("VirtualMachine"));
    json_object_object_add(ev, "Resources", res);
    json_object_object_add(ev, "EventStatus", json_object_new_string("Scheduled"));
    json_object_object_add(ev, "NotBefore", json_object_new_string(nb));
    json_object_object_add(ev, "Description", json_object_new_string(desc));
    json_object_object_add(ev, "EventSource", json_object_new_string("Platform"));
    json_object_object_add(ev, "DurationInSeconds", json_object_new_int64(dur));
    json_object_object_add(d, "event", ev);
    json_object_object_add(d, "seen_by", json_object_new_array());
    json_object_object_add(d, "not_before", json_object_new_int64(rh->not_before));
    json_object_object_add(d, "rehearsal", json_object_new_int64(rh->id));
    snprintf(why, sizeof(why), "rehearsal %lld: %s of %zu VM%s made up", (long long)rh->id,
             sc_event_type_name(rh->type), g->n_vms, g->n_vms == 1 ? "" : "s");
    sc_log_info("rehearsal event", "rehearsal=%lld event=%s vms=%zu", (long long)rh->id,
                g->event_id, g->n_vms);
    return sc_coord_exec_decide(c, SC_DLOG_EVENT_SEEN, d, why);
}

static int s_event_entry(sc_coord_t *c, sc_dlog_kind_t kind, const char *id, const char *how,
                         const char *reason)
{
    json_object *d = json_object_new_object();

    json_object_object_add(d, "event_id", json_object_new_string(id));
    json_object_object_add(d, "how", json_object_new_string(how));
    c->dirty = true;
    return sc_coord_exec_decide(c, kind, d, reason);
}

static int s_rh_entry(sc_coord_t *c, int64_t id, const char *state, const char *why)
{
    json_object *d = json_object_new_object();

    json_object_object_add(d, "rehearsal", json_object_new_int64(id));
    json_object_object_add(d, "state", json_object_new_string(state));
    if (why)
        json_object_object_add(d, "why", json_object_new_string(why));
    sc_log_notice(strcmp(state, "stopped") == 0 ? "rehearsal stopped" : "rehearsal finished",
                  "rehearsal=%lld why=\"%s\"", (long long)id, sc_log_q(why ? why : "over"));
    return sc_coord_exec_decide(c, SC_DLOG_REHEARSAL, d, why ? why : "every event closed");
}

int sc_coord_rehearse_approve(sc_coord_t *c, const char *id, const char *reason)
{
    const sc_cs_event_t *e = sc_cstate_event_find(c->cs, id);
    char why[SC_PLAN_REASON_MAX + 64];

    if (!e || !e->rehearsal || e->start_kind != SC_START_NONE || !sc_coord_may_act(c))
        return 0;
    snprintf(why, sizeof(why), "rehearsal: approval simulated, nothing POSTed (%s)", reason);
    sc_log_notice("rehearsal approval simulated", "event=%s why=\"%s\"", id, sc_log_q(reason));
    return s_event_entry(c, SC_DLOG_EVENT_STARTED, id, "approved", why);
}

/* The timer of event id (started now when it has none). */
static int64_t s_started(sc_coord_t *c, const char *id, int64_t now)
{
    s_timer_t *grown;

    if (!c->rh && !(c->rh = calloc(1, sizeof(*c->rh))))
        return now;
    for (size_t i = 0; i < c->rh->n; i++)
        if (sc_event_id_equal(c->rh->t[i].id, id))
            return c->rh->t[i].started_ms;
    if (!(grown = realloc(c->rh->t, (c->rh->n + 1) * sizeof(*grown))))
        return now;
    c->rh->t = grown;
    snprintf(grown[c->rh->n].id, sizeof(grown[c->rh->n].id), "%s", id);
    grown[c->rh->n++].started_ms = now;
    return now;
}

/* How a rehearsal's event ends: as Azure ends it (completed after it started, else cancelled),
 * except a Preempt or Terminate, which always ends cancelled: its VM is not going away, so the
 * planner recovers it (rule 3) instead of taking it out of the members (MEMBER_GONE). */
static const char *s_end_how(const sc_cs_event_t *e)
{
    if (s_evict(e->ev.type))
        return "cancelled";
    return e->start_kind != SC_START_NONE ? "completed" : "cancelled";
}

/* Ends every event of the rehearsal still listed: what started completes, the rest is
 * cancelled (rule 3 recovers every VM whose prepare was ordered). */
static int s_end_all(sc_coord_t *c, int64_t id, const char *why)
{
    int rc = 0;

    for (size_t i = 0; rc >= 0 && i < sc_cstate_n_events(c->cs); i++) {
        const sc_cs_event_t *e = sc_cstate_event_at(c->cs, i);
        char idbuf[SC_EVENT_ID_MAX + 1];

        if (e->rehearsal != id || e->phase != SC_REG_ACTIVE)
            continue;
        snprintf(idbuf, sizeof(idbuf), "%s", e->ev.id);
        rc = s_event_entry(c, SC_DLOG_EVENT_ENDED, idbuf, s_end_how(e), why);
    }
    return rc;
}

/* Whether the planner left rehearsal event e to Azure (its drain failed for good: rolled back
 * after its last attempt, a rollback whose recover failed, a Preempt's prepare failed): Azure
 * would start it at NotBefore, undrained — the rehearsal does so at once instead of waiting
 * for a NotBefore that may be 15 minutes away. */
static bool s_left_to_azure(const sc_coord_t *c, const sc_cs_event_t *e)
{
    bool failed = false;

    for (size_t m = 0; m < c->n_members; m++) {
        sc_drain_state_t d = e->drain[m];
        if (d == SC_DRAIN_PREPARE_ORDERED || d == SC_DRAIN_PREPARING ||
            d == SC_DRAIN_RECOVER_ORDERED || d == SC_DRAIN_RECOVERING)
            return false;
        if (s_evict(e->ev.type)
                ? d == SC_DRAIN_PREPARE_FAILED || d == SC_DRAIN_PREPARE_INTERRUPTED
                : d == SC_DRAIN_RECOVER_FAILED ||
                      (d == SC_DRAIN_ROLLED_BACK && e->attempt[m] >= c->o.policy.prepare_attempts))
            failed = true;
    }
    return failed;
}

/* The running rehearsal's events: released in turn, started at NotBefore as Azure would,
 * ended --recover-after seconds after they started. */
static int s_run(sc_coord_t *c, const sc_cs_rehearsal_t *rh, int64_t now)
{
    int64_t wall_s = sc_wall_ms() / 1000;
    int rc = 0;

    /* Preempt / Terminate: one domain at a time, the next once the last is closed. One group
     * a call: its entry releases it once applied, and the tick runs again once it is (the
     * planner's fence) */
    if (rh->n_released < rh->n_groups &&
        (!s_evict(rh->type) || !rh->n_released ||
         !sc_cstate_event_find(c->cs, rh->groups[rh->n_released - 1].event_id)))
        rc = s_release(c, rh, rh->n_released);
    for (size_t i = 0; rc >= 0 && i < sc_cstate_n_events(c->cs); i++) {
        const sc_cs_event_t *e = sc_cstate_event_at(c->cs, i);
        char id[SC_EVENT_ID_MAX + 1];

        if (e->rehearsal != rh->id || e->phase != SC_REG_ACTIVE)
            continue;
        snprintf(id, sizeof(id), "%s", e->ev.id);
        if (e->start_kind == SC_START_NONE && wall_s >= rh->not_before)
            rc = s_event_entry(c, SC_DLOG_EVENT_STARTED, id, "not_before",
                               "rehearsal: NotBefore passed, Azure would start it now");
        else if (e->start_kind == SC_START_NONE && s_left_to_azure(c, e))
            rc = s_event_entry(c, SC_DLOG_EVENT_STARTED, id, "not_before",
                               "rehearsal: left to Azure after its drain failed; Azure would "
                               "start it at NotBefore, undrained: started now");
        else if (e->start_kind != SC_START_NONE &&
                 now - s_started(c, id, now) >= rh->recover_after_s * 1000)
            rc = s_event_entry(c, SC_DLOG_EVENT_ENDED, id, s_end_how(e),
                               "rehearsal: its --recover-after passed, the event is over");
    }
    if (rc >= 0 && rh->n_released == rh->n_groups && !s_has_events(c, rh->id))
        rc = s_rh_entry(c, rh->id, "finished", NULL);
    return rc;
}

int sc_coord_rehearse_tick(sc_coord_t *c, int64_t now)
{
    const sc_cs_rehearsal_t *rh = sc_cstate_rehearsal(c->cs);
    const sc_cs_event_t *real;
    char why[SC_EVENT_ID_MAX + 96];
    int rc = 0;

    if (!sc_coord_may_act(c) || rh->state == SC_REHEARSAL_NONE ||
        rh->state == SC_REHEARSAL_FINISHED)
        return 0;
    if (rh->state == SC_REHEARSAL_RUNNING && (real = s_real_event(c))) {
        /* a real event wins: stop, end what was made up, recover what it prepared */
        snprintf(why, sizeof(why), "real event %s (%s) arrived", real->ev.id,
                 sc_event_type_name(real->ev.type));
        rc = s_rh_entry(c, rh->id, "stopped", why);
    }
    if (rc >= 0 && rh->state == SC_REHEARSAL_STOPPED) {
        rc = s_end_all(c, rh->id, "rehearsal stopped: a real event arrived");
        if (rc >= 0 && !s_has_events(c, rh->id))
            rc = s_rh_entry(c, rh->id, "finished", NULL);
    } else if (rc >= 0 && rh->state == SC_REHEARSAL_RUNNING) {
        rc = s_run(c, rh, now);
    }
    if (rc >= 0)
        s_sync_registry(c, now);
    if (rh->state == SC_REHEARSAL_FINISHED && c->rh)
        c->rh->n = 0;
    return rc;
}

/* ---- starting one --------------------------------------------------------------------------- */

static json_object *s_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static json_object *s_error(const char *fmt, ...)
{
    json_object *o = json_object_new_object();
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    json_object_object_add(o, "error", json_object_new_string(msg));
    return o;
}

/* Why no rehearsal can start now ("" when one can), into buf. */
static void s_refusal(const sc_coord_t *c, char *buf, size_t len)
{
    const sc_cs_rehearsal_t *rh = sc_cstate_rehearsal(c->cs);
    const sc_cs_event_t *real = s_real_event(c);

    buf[0] = '\0';
    if (!sc_coord_is_leader(c))
        snprintf(buf, len, "this coordinator follows: rehearse on %s, which leads",
                 c->members[0].name);
    else if (c->in_grace)
        snprintf(buf, len, "starting: the members are reporting, try again in a few seconds");
    else if (c->o.policy.pause)
        snprintf(buf, len, "approvals are paused (schedcoordctl resume): a rehearsal would wait");
    else if (rh->state == SC_REHEARSAL_RUNNING || rh->state == SC_REHEARSAL_STOPPED)
        snprintf(buf, len, "rehearsal %lld is still %s", (long long)rh->id,
                 rh->state == SC_REHEARSAL_RUNNING ? "running" : "recovering");
    else if (real)
        snprintf(buf, len, "a real event is under way (%s, %s): rehearse once it is over",
                 real->ev.id, sc_event_type_name(real->ev.type));
    else
        for (size_t i = 0; i < sc_cstate_n_events(c->cs); i++)
            if (!sc_cstate_event_at(c->cs, i)->rehearsal) {
                snprintf(buf, len, "event %s is over but its VMs are not all recovered yet",
                         sc_cstate_event_at(c->cs, i)->ev.id);
                break;
            }
}

/* The members to rehearse (chosen[i]) from the request; NULL, or an error answer. */
static json_object *s_choose(sc_coord_t *c, json_object *req, bool *chosen, char *scope, size_t len)
{
    json_object *vms = NULL, *fd = NULL;
    size_t n = 0, more = 0;

    json_object_object_get_ex(req, "vms", &vms);
    json_object_object_get_ex(req, "fault_domain", &fd);
    if (vms && fd)
        return s_error("--fault-domain and --vms: choose one");
    if (fd && (!json_object_is_type(fd, json_type_int) || json_object_get_int64(fd) < 0 ||
               json_object_get_int64(fd) > SC_MSG_DOMAIN_MAX))
        return s_error("--fault-domain: not a fault domain (0..%d)", SC_MSG_DOMAIN_MAX);
    if (vms && (!json_object_is_type(vms, json_type_array) || !json_object_array_length(vms)))
        return s_error("--vms: a comma-separated list of members is needed");
    for (size_t k = 0; vms && k < json_object_array_length(vms); k++) {
        const char *name = json_object_get_string(json_object_array_get_idx(vms, k));
        size_t mi = name ? sc_coord_members_find(c, name) : SC_PLAN_NONE;
        if (mi == SC_PLAN_NONE)
            return s_error("--vms: %s is not a member (--members)", name ? name : "(none)");
        if (sc_cstate_member(c->cs, mi)->gone)
            return s_error("--vms: %s is gone (left after a Preempt or Terminate)", name);
        if (chosen[mi])
            return s_error("--vms: %s named twice", name);
        chosen[mi] = true;
        /* the scope names the first few, "and N more" */
        if (!more && strlen(scope) + strlen(name) + 24 < len)
            snprintf(scope + strlen(scope), len - strlen(scope), "%s%.*s", k ? ", " : "",
                     (int)(len - strlen(scope) - 24), c->members[mi].name);
        else
            more++;
        n++;
    }
    if (more)
        snprintf(scope + strlen(scope), len - strlen(scope), " and %zu more", more);
    for (size_t mi = 0; !vms && mi < c->n_members; mi++) {
        if (sc_cstate_member(c->cs, mi)->gone ||
            (fd && s_domain(c, mi, true) != (int)json_object_get_int64(fd)))
            continue;
        chosen[mi] = true;
        n++;
    }
    if (fd)
        snprintf(scope, len, "fault domain %d", (int)json_object_get_int64(fd));
    else if (!vms)
        snprintf(scope, len, "the whole set");
    if (!n)
        return fd ? s_error("--fault-domain %d: no member there (schedcoordctl status)",
                            (int)json_object_get_int64(fd))
                  : s_error("no member to rehearse");
    return NULL;
}

static json_object *s_start(sc_coord_t *c, json_object *req)
{
    const sc_cs_rehearsal_t *rh = sc_cstate_rehearsal(c->cs);
    bool ud = sc_coord_serialise_by(c) == SC_SERIALISE_UPDATE_DOMAIN;
    json_object *v, *err, *d, *groups, *events, *o;
    sc_event_type_t type = SC_EVENT_REBOOT;
    const char *tn = "Reboot";
    double after = 0;
    bool *chosen = NULL, *done = NULL;
    char scope[120] = "", why[512];
    int64_t id = rh->id + 1, nb;
    int rc;

    s_refusal(c, why, sizeof(why));
    if (why[0])
        return s_error("%s", why);
    if (!sc_coord_raft_settled(c)) /* decided from the applied state: nothing in flight */
        return s_error("decisions in flight (not committed yet): try again");
    if (json_object_object_get_ex(req, "event_type", &v)) {
        tn = json_object_get_string(v);
        type = SC_EVENT_TYPE_UNKNOWN;
        for (int t = SC_EVENT_TYPE_UNKNOWN + 1; tn && t < SC_EVENT_TYPE_MAX; t++)
            if (strcasecmp(tn, sc_event_type_name((sc_event_type_t)t)) == 0)
                type = (sc_event_type_t)t;
        if (type == SC_EVENT_TYPE_UNKNOWN)
            return s_error("--event-type %.64s: one of Reboot, Redeploy, Freeze, Preempt, "
                           "Terminate",
                           tn ? tn : "");
    }
    if (json_object_object_get_ex(req, "recover_after_s", &v) &&
        (!(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)) ||
         !((after = json_object_get_double(v)) >= 0 && after <= S_RECOVER_AFTER_MAX_S)))
        return s_error("--recover-after: seconds from 0 to %d", S_RECOVER_AFTER_MAX_S);
    if (!(chosen = calloc(c->n_members, sizeof(*chosen))) ||
        !(done = calloc(c->n_members, sizeof(*done)))) {
        free(chosen);
        return NULL;
    }
    if ((err = s_choose(c, req, chosen, scope, sizeof(scope)))) {
        free(chosen);
        free(done);
        return err;
    }
    /* one group per domain, in domain order (an unknown domain: each VM its own, last) */
    groups = json_object_new_array();
    events = json_object_new_array();
    for (int pass = 0; pass < 2; pass++) {
        for (;;) {
            int best = -1;
            size_t first = SC_PLAN_NONE;
            for (size_t mi = 0; mi < c->n_members; mi++) {
                int dm = s_domain(c, mi, !ud);
                if (!chosen[mi] || done[mi] || (pass == 0) != (dm >= 0))
                    continue;
                if (first == SC_PLAN_NONE || (pass == 0 && dm < best)) {
                    first = mi;
                    best = dm;
                }
            }
            if (first == SC_PLAN_NONE)
                break;
            json_object *g = json_object_new_object(), *gv = json_object_new_array();
            char eid[SC_EVENT_ID_MAX + 1];
            if (pass == 0)
                snprintf(eid, sizeof(eid), "rehearsal-%lld-%s%d", (long long)id, ud ? "ud" : "fd",
                         best);
            else
                snprintf(eid, sizeof(eid), "rehearsal-%lld-vm%zu", (long long)id, first);
            for (size_t mi = 0; mi < c->n_members; mi++) {
                if (!chosen[mi] || done[mi] ||
                    (pass == 0 ? s_domain(c, mi, !ud) != best : mi != first))
                    continue;
                done[mi] = true;
                json_object_array_add(gv, json_object_new_string(c->members[mi].name));
            }
            json_object_object_add(g, "event_id", json_object_new_string(eid));
            json_object_object_add(g, "domain", json_object_new_int(pass == 0 ? best : -1));
            json_object_object_add(g, "vms", gv);
            json_object_array_add(groups, g);
            json_object_array_add(events, json_object_new_string(eid));
        }
    }
    free(chosen);
    free(done);
    nb = sc_wall_ms() / 1000 + (int64_t)sc_forecast_notice_s(type, c->o.policy.terminate_notice_s);
    d = json_object_new_object();
    json_object_object_add(d, "rehearsal", json_object_new_int64(id));
    json_object_object_add(d, "state", json_object_new_string("started"));
    json_object_object_add(d, "event_type", json_object_new_string(sc_event_type_name(type)));
    json_object_object_add(d, "scope", json_object_new_string(scope));
    json_object_object_add(d, "recover_after_s", json_object_new_int64((int64_t)(after + 0.5)));
    json_object_object_add(d, "not_before", json_object_new_int64(nb));
    json_object_object_add(d, "groups", groups);
    snprintf(why, sizeof(why), "schedcoordctl rehearse: %s of %s", sc_event_type_name(type), scope);
    /* its events are released by the tick once this entry is applied */
    if ((rc = sc_coord_exec_decide(c, SC_DLOG_REHEARSAL, d, why)) < 0) {
        json_object_put(events);
        return s_error("not recorded: the store failed (%s)", sc_errname(rc));
    }
    s_sync_registry(c, sc_mono_ms());
    c->dirty = true;
    sc_log_notice("rehearsal started", "rehearsal=%lld type=%s scope=\"%s\" events=%zu",
                  (long long)id, sc_event_type_name(type), sc_log_q(scope),
                  json_object_array_length(events));
    o = json_object_new_object();
    json_object_object_add(o, "rehearsal", json_object_new_int64(id));
    json_object_object_add(o, "event_type", json_object_new_string(sc_event_type_name(type)));
    json_object_object_add(o, "scope", json_object_new_string(scope));
    json_object_object_add(o, "not_before", json_object_new_int64(nb));
    json_object_object_add(o, "events", events);
    return o;
}

json_object *sc_coord_rehearse_ctl(sc_coord_t *c, const char *cmd, json_object *req)
{
    json_object *v;

    if (strcmp(cmd, "rehearse") == 0)
        return s_start(c, req);
    if (strcmp(cmd, "rehearsal") != 0)
        return NULL;
    /* asked for the rehearsal just started, whose entry is not applied yet (the next request
     * on the control socket can come in the same loop turn): under way, not over (a clean
     * clone's coord_forecast got "no rehearsal yet" and failed) */
    if (json_object_object_get_ex(req, "id", &v) &&
        json_object_get_int64(v) == sc_cstate_rehearsal(c->cs)->id + 1 && c->raft &&
        c->raft->applied < c->raft->last_index) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "rehearsal", json_object_new_int64(json_object_get_int64(v)));
        json_object_object_add(o, "over", json_object_new_boolean(false));
        json_object_object_add(o, "starting", json_object_new_boolean(true));
        return o;
    }
    if (sc_cstate_rehearsal(c->cs)->state == SC_REHEARSAL_NONE)
        return s_error("no rehearsal yet");
    if (json_object_object_get_ex(req, "id", &v) &&
        json_object_get_int64(v) != sc_cstate_rehearsal(c->cs)->id)
        return s_error("only the last rehearsal (%lld) is kept here; schedcoordctl history has "
                       "the others",
                       (long long)sc_cstate_rehearsal(c->cs)->id);
    return sc_coord_rehearse_report(c);
}

json_object *sc_coord_control(sc_coord_t *c, json_object *req)
{
    json_object *cmd;

    if (!c || !req || !json_object_object_get_ex(req, "cmd", &cmd) ||
        !json_object_is_type(cmd, json_type_string))
        return s_error("request has no \"cmd\" string");
    return sc_coord_status_ctl_handler(c, json_object_get_string(cmd), req);
}
