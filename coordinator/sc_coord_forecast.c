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

#define S_HISTORY_EVERY_MS 1000           /* the hooks' history is read again at most this often */
#define S_RUNNING_MS (24LL * 3600 * 1000) /* a hook under way started within this */

struct sc_coord_fc {
    int64_t read_ms;               /* monotonic ms of the last history read, 0: never */
    sc_forecast_member_t *members; /* per member: its hooks' history (names borrowed) */
    json_object *running;          /* hook runs under way (sc_store_hook_runs) */
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
    json_object_put(c->fc->running);
    free(c->fc->fc);
    json_object_put(c->fc->plan);
    json_object_put(c->fc->by_id);
    free(c->fc);
    c->fc = NULL;
}

/* ---- history ------------------------------------------------------------------------------ */

/* Reads the hooks' history again (at most every S_HISTORY_EVERY_MS, unless forced): per member
 * and phase, the durations of its newest runs that ended done; the prepares under way. One pass
 * over the runs (a member found by name), not one per member: at 1,000 members the pass per
 * member took most of the leader's loop. A failure keeps the last read (logged). */
static void s_read_history(sc_coord_t *c, sc_coord_fc_t *f, int64_t now, bool force)
{
    json_object *runs = NULL, *running;
    size_t nr, *cnt, *off;
    double *v;
    int rc;

    if (f->read_ms && now - f->read_ms < S_HISTORY_EVERY_MS && !force)
        return;
    f->read_ms = now;
    if ((rc = sc_store_hook_runs(c->store, SC_FORECAST_SAMPLES_MAX, sc_wall_ms() - S_RUNNING_MS,
                                 &runs)) < 0) {
        sc_log_warn("hook history not read: forecasts use the last one", "rc=%s why=\"%s\"",
                    sc_errname(rc), sc_log_q(sc_store_errmsg(c->store)));
        return;
    }
    nr = json_object_array_length(runs);
    v = calloc(nr + 1, sizeof(*v));
    cnt = calloc(2 * c->n_members + 1, sizeof(*cnt));
    off = calloc(2 * c->n_members + 1, sizeof(*off));
    running = json_object_new_array();
    if (!v || !cnt || !off || !running) {
        free(v);
        free(cnt);
        free(off);
        json_object_put(running);
        json_object_put(runs);
        return;
    }
    /* slot 2m + phase of each run that ended (SIZE_MAX: none), counted, then placed */
    size_t *slot = calloc(nr + 1, sizeof(*slot));
    for (size_t i = 0; slot && i < nr; i++) {
        json_object *r = json_object_array_get_idx(runs, i), *fin = NULL;
        const char *vm = json_object_get_string(json_object_object_get(r, "vm"));
        const char *p = json_object_get_string(json_object_object_get(r, "phase"));
        size_t m = vm ? sc_coord_members_find(c, vm) : SC_PLAN_NONE;
        int ph = p && !strcmp(p, "prepare") ? 0 : p && !strcmp(p, "recover") ? 1 : -1;

        slot[i] = SIZE_MAX;
        if (m == SC_PLAN_NONE || ph < 0 || strcmp(c->members[m].name, vm) != 0)
            continue;
        if (!json_object_object_get_ex(r, "finished_ms", &fin) || !fin) {
            if (ph == 0) /* under way: s_elapsed */
                json_object_array_add(running, json_object_get(r));
            continue;
        }
        slot[i] = 2 * m + (size_t)ph;
        cnt[slot[i]]++;
    }
    for (size_t k = 1; k < 2 * c->n_members; k++)
        off[k] = off[k - 1] + cnt[k - 1];
    memset(cnt, 0, 2 * c->n_members * sizeof(*cnt));
    for (size_t i = 0; slot && i < nr; i++) {
        json_object *r = json_object_array_get_idx(runs, i);
        if (slot[i] == SIZE_MAX)
            continue;
        v[off[slot[i]] + cnt[slot[i]]++] =
            (double)(json_object_get_int64(json_object_object_get(r, "finished_ms")) -
                     json_object_get_int64(json_object_object_get(r, "started_ms"))) /
            1000.0;
    }
    for (size_t m = 0; slot && m < c->n_members; m++) {
        sc_forecast_stat(v + off[2 * m], cnt[2 * m], &f->members[m].prepare);
        sc_forecast_stat(v + off[2 * m + 1], cnt[2 * m + 1], &f->members[m].recover);
        f->members[m].name = c->members[m].name;
    }
    free(slot);
    free(v);
    free(cnt);
    free(off);
    json_object_put(runs);
    json_object_put(f->running);
    f->running = running;
}

/* How long member m's prepare for event id has run (s), 0 when not known. */
static double s_elapsed(const sc_coord_fc_t *f, const char *id, const char *vm, int64_t wall)
{
    for (size_t i = 0; f->running && i < json_object_array_length(f->running); i++) {
        json_object *r = json_object_array_get_idx(f->running, i);
        const char *rid = json_object_get_string(json_object_object_get(r, "event_id"));
        const char *rvm = json_object_get_string(json_object_object_get(r, "vm"));

        if (!rid || !rvm || !sc_event_id_equal(rid, id) || strcmp(rvm, vm) != 0)
            continue;
        return (double)(wall - json_object_get_int64(json_object_object_get(r, "started_ms"))) /
               1000.0;
    }
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
    s_read_history(c, f, sc_mono_ms(), false);
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
                                   .elapsed_s = s_elapsed(f, e->ev->id, m->name, wall)};
            x->n_vms++;
        }
        nv += x->n_vms;
    }
    for (size_t m = 0; m < c->n_members; m++)
        f->members[m].domain = in->policy->serialise_by == SC_SERIALISE_UPDATE_DOMAIN
                                   ? in->members[m].update_domain
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
    s_read_history(c, f, sc_mono_ms(), true); /* a person (or a scrape) asks: as it is now */
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
