/* Forecasts: the hooks' history read from the store, the forecast of every plan round (an
 * input of the planner, sc_forecast.h), and what the last round decided and why (schedcoordctl
 * plan, the status' forecast fields and their metrics). */
#include "sc_coord_int.h"

#include "sc_error.h"
#include "sc_forecast.h"
#include "sc_log.h"
#include "sc_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#define S_HISTORY_EVERY_MS 1000    /* the hooks under way are read again at most this often */
#define S_DURATIONS_EVERY_MS 60000 /* and the durations of those that ended, at most this often */
#define S_RUNNING_MS (24LL * 3600 * 1000) /* a hook under way started within this */

struct sc_coord_fc {
    int64_t read_ms;               /* monotonic ms of the last history read, 0: never */
    int64_t durations_ms;          /* of the last that read the durations too, 0: never */
    uint64_t events_sig;           /* the events planned then (FNV-1a of their ids) */
    sc_forecast_member_t *members; /* per member: its hooks' history (names borrowed) */
    struct s_run *running;         /* prepares under way, by member: */
    size_t *run_off;               /* member m's are running[run_off[m] .. run_off[m + 1]) */
    sc_forecast_t *fc;             /* per event of the last round's input */
    size_t n_fc;                   /* entries */
    json_object *plan;             /* the last round: what it decided and why */
    json_object *by_id;            /* the last round's forecast of each event, by EventId */
};

static sc_coord_fc_t *s_fc(sc_coord_t *c)
{
    if (!c->fc && (c->fc = calloc(1, sizeof(*c->fc))) &&
        !(c->fc->members = calloc(c->n_members, sizeof(*c->fc->members))))
        sc_coord_forecast_free(c);
    return c->fc;
}

void sc_coord_forecast_free(sc_coord_t *c)
{
    if (!c->fc)
        return;
    free(c->fc->members);
    free(c->fc->running);
    free(c->fc->run_off);
    free(c->fc->fc);
    json_object_put(c->fc->plan);
    json_object_put(c->fc->by_id);
    free(c->fc);
    c->fc = NULL;
}

/* ---- history ------------------------------------------------------------------------------ */

/* A run read from the store: its member and phase (0 prepare, 1 recover), or under way. */
typedef struct s_run {
    size_t m;
    int ph;
    double dur_s;                       /* ended: its duration */
    int64_t started_ms;                 /* under way: since when */
    char event_id[SC_EVENT_ID_MAX + 1]; /* under way: its event */
} s_run_t;

typedef struct s_runs {
    sc_coord_t *c;
    s_run_t *v;
    size_t n, cap;
} s_runs_t;

static int s_run_add(void *ud, const char *vm, const char *phase, const char *event_id,
                     int64_t started_ms, int64_t finished_ms)
{
    s_runs_t *rs = ud;
    size_t m = sc_coord_members_find(rs->c, vm);
    int ph = !strcmp(phase, "prepare") ? 0 : !strcmp(phase, "recover") ? 1 : -1;

    if (m == SC_PLAN_NONE || ph < 0 || strcmp(rs->c->members[m].name, vm) != 0 ||
        (finished_ms < 0 && ph != 0)) /* only prepares under way are told (s_elapsed) */
        return 0;
    if (rs->n == rs->cap) {
        size_t cap = rs->cap ? 2 * rs->cap : 256;
        s_run_t *nv = realloc(rs->v, cap * sizeof(*nv));
        if (!nv)
            return -ENOMEM;
        rs->v = nv;
        rs->cap = cap;
    }
    s_run_t *r = &rs->v[rs->n++];
    r->m = m;
    r->ph = finished_ms < 0 ? -1 : ph; /* -1: under way */
    r->dur_s = finished_ms < 0 ? 0 : (double)(finished_ms - started_ms) / 1000.0;
    r->started_ms = started_ms;
    snprintf(r->event_id, sizeof(r->event_id), "%s", event_id);
    return 0;
}

/* Reads the hooks' history again: the prepares under way, by member, at most every
 * S_HISTORY_EVERY_MS; per member and phase, the durations of its newest runs that ended done,
 * at most every S_DURATIONS_EVERY_MS (statistics of up to 64 runs a VM: a minute late changes
 * little, and their query sorts every run: 18 ms of a loop turn for 4,000 at 1,000 members,
 * every second). Forced (a person or a scrape asks): both, as they are now. One pass over the
 * runs (a member found by name), no JSON built. A failure keeps the last read (logged). */
static void s_read_history(sc_coord_t *c, sc_coord_fc_t *f, int64_t now, bool force,
                           uint64_t events_sig)
{
    s_runs_t rs = {.c = c};
    size_t nm = c->n_members, *cnt, *off, *roff;
    s_run_t *running;
    double *v;
    int rc;

    /* and when the events to plan changed: a forecast matters most at notice time */
    bool durations = force || !f->durations_ms || events_sig != f->events_sig ||
                     now - f->durations_ms >= S_DURATIONS_EVERY_MS;

    if (f->read_ms && now - f->read_ms < S_HISTORY_EVERY_MS && !force)
        return;
    f->read_ms = now;
    if ((rc = sc_store_hook_runs_each(c->store, durations ? SC_FORECAST_SAMPLES_MAX : 0,
                                      sc_wall_ms() - S_RUNNING_MS, s_run_add, &rs)) < 0) {
        sc_log_warn("hook history not read: forecasts use the last one", "rc=%s why=\"%s\"",
                    sc_errname(rc),
                    sc_log_q(rc == -ENOMEM ? "out of memory" : sc_store_errmsg(c->store)));
        free(rs.v);
        return;
    }
    v = calloc(rs.n + 1, sizeof(*v));
    running = calloc(rs.n + 1, sizeof(*running));
    cnt = calloc(2 * nm + 1, sizeof(*cnt));
    off = calloc(2 * nm + 1, sizeof(*off));
    roff = calloc(nm + 1, sizeof(*roff));
    if (!v || !running || !cnt || !off || !roff) {
        free(v);
        free(running);
        free(cnt);
        free(off);
        free(roff);
        free(rs.v);
        return;
    }
    /* counted per slot (2m + phase; under way: per member), then placed */
    for (size_t i = 0; i < rs.n; i++) {
        if (rs.v[i].ph < 0)
            roff[rs.v[i].m + 1]++;
        else
            cnt[2 * rs.v[i].m + (size_t)rs.v[i].ph]++;
    }
    for (size_t k = 1; k < 2 * nm; k++)
        off[k] = off[k - 1] + cnt[k - 1];
    for (size_t m = 0; m < nm; m++)
        roff[m + 1] += roff[m];
    memset(cnt, 0, 2 * nm * sizeof(*cnt));
    {
        size_t *rn = calloc(nm + 1, sizeof(*rn));
        for (size_t i = 0; rn && i < rs.n; i++) {
            const s_run_t *r = &rs.v[i];
            if (r->ph < 0)
                running[roff[r->m] + rn[r->m]++] = *r;
            else {
                size_t sl = 2 * r->m + (size_t)r->ph;
                v[off[sl] + cnt[sl]++] = r->dur_s;
            }
        }
        if (!rn)
            memset(roff, 0, (nm + 1) * sizeof(*roff)); /* none told under way */
        free(rn);
    }
    if (durations) {
        f->durations_ms = now;
        f->events_sig = events_sig;
    }
    for (size_t m = 0; durations && m < nm; m++) {
        sc_forecast_stat(v + off[2 * m], cnt[2 * m], &f->members[m].prepare);
        sc_forecast_stat(v + off[2 * m + 1], cnt[2 * m + 1], &f->members[m].recover);
        f->members[m].name = c->members[m].name;
    }
    free(v);
    free(cnt);
    free(off);
    free(rs.v);
    free(f->running);
    free(f->run_off);
    f->running = running;
    f->run_off = roff;
}

/* How long member m's prepare for event id has run (s), 0 when not known. */
static double s_elapsed(const sc_coord_fc_t *f, const char *id, size_t m, int64_t wall)
{
    for (size_t i = f->run_off ? f->run_off[m] : 0; f->run_off && i < f->run_off[m + 1]; i++)
        if (sc_event_id_equal(f->running[i].event_id, id))
            return (double)(wall - f->running[i].started_ms) / 1000.0;
    return 0;
}

/* ---- the forecast of a round ---------------------------------------------------------------- */

/* Whether event e occupies domains now: started, or drains under way; over, with VMs not yet
 * recovered. */
static bool s_occupies(const sc_plan_event_t *e)
{
    bool over = e->phase != SC_REG_ACTIVE;

    if (!over && (e->start_kind != SC_START_NONE || sc_event_is_started(e->ev)))
        return true;
    for (size_t j = 0; j < e->n_vms; j++) {
        sc_drain_state_t d = e->vms[j].drain;
        if (d != SC_DRAIN_NONE && d != SC_DRAIN_ROLLED_BACK && d != SC_DRAIN_RECOVERED &&
            d != SC_DRAIN_RECOVER_FAILED && (!over || d != SC_DRAIN_PREPARE_FAILED))
            return true;
    }
    return false;
}

int sc_coord_forecast_fill(sc_coord_t *c, sc_plan_input_t *in, sc_plan_event_t *pe)
{
    sc_coord_fc_t *f = s_fc(c);
    sc_forecast_input_t fi = {0};
    sc_forecast_event_t *fe = NULL;
    sc_forecast_vm_t *fv = NULL;
    size_t *order = NULL, *queue = NULL, n_queue = 0, n = 0, nv = 0, n_vms = 0;
    int64_t wall = sc_wall_ms();
    int rc = -ENOMEM;

    if (!f)
        return -ENOMEM;
    free(f->fc);
    f->fc = NULL;
    f->n_fc = 0;
    if (!in->n_events)
        return 0;
    {
        uint64_t sig = 1469598103934665603ULL;
        for (size_t i = 0; i < in->n_events; i++)
            for (const char *p = in->events[i].ev->id; *p; p++)
                sig = (sig ^ (unsigned char)(*p | 0x20)) * 1099511628211ULL;
        s_read_history(c, f, sc_mono_ms(), false, sig);
    }
    for (size_t i = 0; i < in->n_events; i++)
        n_vms += in->events[i].n_vms;
    fe = calloc(in->n_events, sizeof(*fe));
    fv = calloc(n_vms + 1, sizeof(*fv));
    order = calloc(in->n_events, sizeof(*order));
    queue = calloc(in->n_events, sizeof(*queue));
    f->fc = calloc(in->n_events, sizeof(*f->fc));
    if (!fe || !fv || !order || !queue || !f->fc)
        goto out;
    if ((rc = sc_plan_queue(in, queue, &n_queue)) < 0)
        goto out;
    /* what occupies domains now first (started, or drains under way), then the queue */
    for (size_t i = 0; i < in->n_events; i++)
        if (s_occupies(&in->events[i]))
            order[n++] = i;
    for (size_t k = 0; k < n_queue; k++) {
        bool seen = false;
        for (size_t j = 0; j < n; j++)
            seen = seen || order[j] == queue[k];
        if (!seen)
            order[n++] = queue[k];
    }
    for (size_t k = 0; k < n; k++) {
        const sc_plan_event_t *e = &in->events[order[k]];
        const sc_cs_event_t *ce = sc_coord_exec_cs(c, e->ev->id);
        sc_forecast_event_t *x = &fe[k];
        double dur = e->ev->has_duration && e->ev->duration_s > 0 ? (double)e->ev->duration_s : 0;

        x->id = e->ev->id;
        x->cls = sc_plan_event_class(e->ev, in->policy);
        /* over: out until its recovers are done */
        x->impacted = e->phase != SC_REG_ACTIVE || e->start_kind != SC_START_NONE ||
                      sc_event_is_started(e->ev);
        x->end_s = e->phase == SC_REG_ACTIVE && ce && ce->started_ms
                       ? (double)ce->started_ms / 1000.0 + dur
                       : (double)wall / 1000.0;
        x->impact_s = dur;
        x->has_not_before = e->ev->has_not_before;
        x->not_before_s = e->ev->not_before;
        x->vms = &fv[nv];
        for (size_t j = 0; j < e->n_vms; j++) {
            const sc_plan_member_t *m = &in->members[e->vms[j].member];
            /* as the planner: gone and dropped VMs are not the event's, a dead one never
             * ordered is skipped */
            if (m->gone || e->vms[j].dropped || (!m->alive && e->vms[j].drain == SC_DRAIN_NONE))
                continue;
            fv[nv + x->n_vms] =
                (sc_forecast_vm_t){.member = e->vms[j].member,
                                   .drain = e->vms[j].drain,
                                   .elapsed_s = s_elapsed(f, e->ev->id, e->vms[j].member, wall)};
            x->n_vms++;
        }
        nv += x->n_vms;
    }
    for (size_t m = 0; m < c->n_members; m++)
        f->members[m].domain =
            in->policy->serialise_by == SC_SERIALISE_UPDATE_DOMAIN ? in->members[m].update_domain
            : in->policy->serialise_by == SC_SERIALISE_VM          ? -1 /* a domain of its own */
                                                                   : in->members[m].fault_domain;
    fi = (sc_forecast_input_t){f->members,
                               c->n_members,
                               fe,
                               n,
                               in->policy->max_fault_domains,
                               in->policy->deadline_margin_s,
                               (double)wall / 1000.0,
                               in->policy->serialise_by == SC_SERIALISE_UPDATE_DOMAIN};
    {
        sc_forecast_t *tmp = calloc(n ? n : 1, sizeof(*tmp));
        if (!tmp || (rc = sc_forecast_run(&fi, tmp)) < 0) {
            free(tmp);
            rc = tmp ? rc : -ENOMEM;
            goto out;
        }
        /* back in the input's order, for the planner (its why borrowed from here) */
        for (size_t k = 0; k < n; k++)
            f->fc[order[k]] = tmp[k];
        free(tmp);
    }
    f->n_fc = in->n_events;
    for (size_t i = 0; i < in->n_events; i++) {
        pe[i].forecast_late = f->fc[i].made && !f->fc[i].fits;
        pe[i].forecast_why = pe[i].forecast_late ? f->fc[i].why : NULL;
    }
    rc = 0;
out:
    if (rc < 0) {
        sc_log_warn("no forecast this round", "rc=%s", sc_errname(rc));
        free(f->fc);
        f->fc = NULL;
        f->n_fc = 0;
    }
    free(fe);
    free(fv);
    free(order);
    free(queue);
    return rc;
}

/* ---- what the round decided ----------------------------------------------------------------- */

static json_object *s_stat_json(const sc_forecast_stat_t *st)
{
    json_object *o = json_object_new_object();

    json_object_object_add(o, "median_s", json_object_new_double(st->median_s));
    json_object_object_add(o, "p95_s", json_object_new_double(st->p95_s));
    json_object_object_add(o, "count", json_object_new_int64((int64_t)st->count));
    return o;
}

json_object *sc_coord_forecast_history_json(sc_coord_t *c)
{
    sc_coord_fc_t *f = s_fc(c);
    json_object *o = json_object_new_object();

    if (!f)
        return o;
    s_read_history(c, f, sc_mono_ms(), true, f->events_sig); /* a person (or a scrape) asks */
    for (size_t m = 0; m < c->n_members; m++) {
        json_object *jm = json_object_new_object();
        json_object_object_add(jm, "prepare", s_stat_json(&f->members[m].prepare));
        json_object_object_add(jm, "recover", s_stat_json(&f->members[m].recover));
        json_object_object_add(o, c->members[m].name, jm);
    }
    return o;
}

static json_object *s_ms(double wall_s)
{
    return json_object_new_int64((int64_t)(wall_s * 1000.0));
}

/* One forecast as JSON (NULL when none was made). */
static json_object *s_forecast_json(const sc_coord_t *c, const sc_forecast_t *x)
{
    json_object *o, *risk;

    if (!x->made)
        return NULL;
    o = json_object_new_object();
    risk = json_object_new_array();
    json_object_object_add(o, "drain_start_ms", s_ms(x->start_s));
    json_object_object_add(o, "drained_ms", s_ms(x->drained_s));
    json_object_object_add(o, "deadline_ms", x->deadline_s > 0 ? s_ms(x->deadline_s) : NULL);
    json_object_object_add(o, "fits", json_object_new_boolean(x->fits));
    for (size_t k = 0; k < x->n_risk; k++)
        json_object_array_add(risk, json_object_new_string(c->members[x->risk[k]].name));
    json_object_object_add(o, "at_risk", risk);
    json_object_object_add(o, "without_history", json_object_new_int64((int64_t)x->n_unknown));
    json_object_object_add(o, "fits_with_max_fault_domains",
                           x->fits_with > 0 ? json_object_new_int(x->fits_with) : NULL);
    json_object_object_add(o, "why", x->why[0] ? json_object_new_string(x->why) : NULL);
    return o;
}

void sc_coord_forecast_note(sc_coord_t *c, const sc_plan_input_t *in, const sc_plan_output_t *out)
{
    sc_coord_fc_t *f = s_fc(c);
    json_object *plan, *events, *actions, *by_id;

    if (!f)
        return;
    plan = json_object_new_object();
    events = json_object_new_array();
    actions = json_object_new_array();
    by_id = json_object_new_object();
    json_object_object_add(plan, "planned_ms", json_object_new_int64(sc_wall_ms()));
    json_object_object_add(plan, "leader", json_object_new_string(c->name));
    json_object_object_add(plan, "term", json_object_new_int64(c->term));
    json_object_object_add(plan, "paused", json_object_new_boolean(in->policy->pause));
    json_object_object_add(plan, "serialise_by",
                           json_object_new_string(sc_serialise_by_name(in->policy->serialise_by)));
    json_object_object_add(plan, "max_fault_domains",
                           json_object_new_int(in->policy->max_fault_domains));
    for (size_t i = 0; i < in->n_events && i < out->n_events; i++) {
        const sc_plan_event_t *e = &in->events[i];
        const sc_cs_event_t *ce = sc_coord_exec_cs(c, e->ev->id);
        json_object *je = json_object_new_object(), *vms = json_object_new_object(), *fj;

        json_object_object_add(je, "EventId", json_object_new_string(e->ev->id));
        json_object_object_add(je, "type", json_object_new_string(sc_event_type_name(e->ev->type)));
        json_object_object_add(je, "status",
                               json_object_new_string(sc_event_status_name(e->ev->status)));
        json_object_object_add(je, "phase", json_object_new_string(sc_reg_phase_name(e->phase)));
        json_object_object_add(je, "class",
                               json_object_new_string(sc_event_class_name(out->ev_class[i])));
        json_object_object_add(je, "queue_position",
                               out->drain_rank[i] == SC_PLAN_NONE
                                   ? NULL
                                   : json_object_new_int64((int64_t)out->drain_rank[i] + 1));
        json_object_object_add(je, "approval",
                               json_object_new_string(sc_approval_state_name(e->approval)));
        json_object_object_add(je, "not_before",
                               e->ev->has_not_before ? json_object_new_int64(e->ev->not_before)
                                                     : NULL);
        json_object_object_add(je, "rehearsal",
                               ce && ce->rehearsal ? json_object_new_int64(ce->rehearsal) : NULL);
        json_object_object_add(
            je, "waiting_for",
            json_object_new_string(out->waiting_for[i] ? out->waiting_for[i] : ""));
        for (size_t j = 0; j < e->n_vms; j++)
            json_object_object_add(vms, in->members[e->vms[j].member].name,
                                   json_object_new_string(sc_drain_state_name(e->vms[j].drain)));
        json_object_object_add(je, "vms", vms);
        fj = i < f->n_fc ? s_forecast_json(c, &f->fc[i]) : NULL;
        json_object_object_add(je, "forecast", fj);
        if (fj)
            json_object_object_add(by_id, e->ev->id, json_object_get(fj));
        json_object_array_add(events, je);
    }
    for (size_t k = 0; k < out->n_actions; k++) {
        const sc_action_t *a = &out->actions[k];
        json_object *ja = json_object_new_object();

        json_object_object_add(ja, "action", json_object_new_string(sc_action_kind_name(a->kind)));
        json_object_object_add(ja, "member",
                               a->member != SC_PLAN_NONE && a->member < in->n_members
                                   ? json_object_new_string(in->members[a->member].name)
                                   : NULL);
        json_object_object_add(ja, "event",
                               a->event != SC_PLAN_NONE && a->event < in->n_events
                                   ? json_object_new_string(in->events[a->event].ev->id)
                                   : NULL);
        json_object_object_add(
            ja, "alert",
            a->kind == SC_ACT_ALERT ? json_object_new_string(sc_alert_name(a->alert)) : NULL);
        json_object_object_add(ja, "reason", json_object_new_string(a->reason));
        json_object_array_add(actions, ja);
    }
    json_object_object_add(plan, "events", events);
    json_object_object_add(plan, "actions", actions);
    json_object_put(f->plan);
    f->plan = plan;
    json_object_put(f->by_id);
    f->by_id = by_id;
}

void sc_coord_forecast_status_event(sc_coord_t *c, json_object *je, const char *id)
{
    json_object *fj = NULL;

    if (c->fc && c->fc->by_id && id && json_object_object_get_ex(c->fc->by_id, id, &fj))
        json_object_object_add(je, "forecast", json_object_get(fj));
}

json_object *sc_coord_forecast_ctl(sc_coord_t *c, const char *cmd, json_object *req)
{
    json_object *o;

    (void)req;
    if (strcmp(cmd, "plan") != 0)
        return NULL;
    o = json_object_new_object();
    if (!sc_coord_is_leader(c)) {
        char msg[SC_NAME_MAX + 96];
        snprintf(msg, sizeof(msg), "this coordinator follows and plans nothing: run it on %s",
                 c->members[0].name);
        json_object_object_add(o, "error", json_object_new_string(msg));
        return o;
    }
    json_object_put(o);
    o = NULL;
    if (!c->fc || !c->fc->plan) {
        o = json_object_new_object();
        json_object_object_add(o, "planned_ms", NULL);
        json_object_object_add(o, "leader", json_object_new_string(c->name));
        json_object_object_add(o, "starting", json_object_new_boolean(c->in_grace));
        json_object_object_add(o, "events", json_object_new_array());
        json_object_object_add(o, "actions", json_object_new_array());
    } else if (json_object_deep_copy(c->fc->plan, &o, NULL) < 0) {
        return NULL;
    }
    json_object_object_add(o, "history", sc_coord_forecast_history_json(c));
    return o;
}
