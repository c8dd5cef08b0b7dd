/* A rehearsal's report (schedcoordctl rehearse): per VM and per domain how long its prepare and
 * recover took — from the store's drains rows, i.e. when its agent said the hook started and
 * ended —, the failures with their output tail, and the verdict for each event type against its
 * notice (sc_forecast_verdict). */
#include "sc_coord_int.h"

#include "sc_forecast.h"
#include "sc_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const sc_event_type_t s_types[] = {SC_EVENT_REBOOT, SC_EVENT_REDEPLOY, SC_EVENT_FREEZE,
                                          SC_EVENT_PREEMPT, SC_EVENT_TERMINATE};

static const char *s_str(json_object *o, const char *key)
{
    json_object *v;

    return o && json_object_object_get_ex(o, key, &v) && v ? json_object_get_string(v) : NULL;
}

static int64_t s_int(json_object *o, const char *key)
{
    json_object *v;

    return o && json_object_object_get_ex(o, key, &v) && v ? json_object_get_int64(v) : 0;
}

/* The drains row of (event, vm, phase), or NULL. */
static json_object *s_row(json_object *rows, const char *id, const char *vm, const char *phase)
{
    for (size_t i = 0; i < json_object_array_length(rows); i++) {
        json_object *r = json_object_array_get_idx(rows, i);
        const char *rid = s_str(r, "event_id"), *rvm = s_str(r, "vm"), *ph = s_str(r, "phase");

        if (rid && rvm && ph && sc_event_id_equal(rid, id) && !strcmp(rvm, vm) &&
            !strcmp(ph, phase))
            return r;
    }
    return NULL;
}

/* Whether the row's hook ended (with any result): its duration into *ret (s). */
static bool s_took(json_object *row, double *ret)
{
    int64_t s = s_int(row, "started_ms"), f = s_int(row, "finished_ms");

    if (!row || !s || !f || f < s)
        return false;
    *ret = (double)(f - s) / 1000.0;
    return true;
}

static bool s_result_is(json_object *row, const char *r)
{
    const char *res = s_str(row, "result");

    return res && strcmp(res, r) == 0;
}

/* The row's result when it is a failure ("failed", "timed_out", "interrupted"), else NULL. */
static const char *s_failed(json_object *row)
{
    const char *res = s_str(row, "result");

    return res && (!strcmp(res, "failed") || !strcmp(res, "timed_out") ||
                   !strcmp(res, "interrupted"))
               ? res
               : NULL;
}

/* The last line of a hook's output, at most 200 bytes ("" when none). */
static void s_tail(const char *out, char *buf, size_t len)
{
    size_t n = out ? strlen(out) : 0;
    const char *p;

    while (n && (out[n - 1] == '\n' || out[n - 1] == ' '))
        n--;
    for (p = out ? out + n : NULL; p && p > out && p[-1] != '\n'; p--)
        ;
    if (!p || !n) {
        buf[0] = '\0';
        return;
    }
    if ((size_t)(out + n - p) > 200)
        p = out + n - 200;
    snprintf(buf, len, "%.*s", (int)(out + n - p), p);
}

static json_object *s_secs(bool known, double s)
{
    return known ? json_object_new_double((double)(int64_t)(s * 1000.0 + 0.5) / 1000.0) : NULL;
}

/* One VM: its line of the report, what was measured into *m, a failure added to failures. */
static json_object *s_vm(sc_coord_t *c, const sc_cs_rehearsal_t *rh, const sc_cs_rh_group_t *g,
                         const char *vm, json_object *rows, sc_forecast_measured_t *m,
                         json_object *failures)
{
    size_t mi = sc_coord_members_find(c, vm);
    const sc_cs_member_t *cm = mi != SC_PLAN_NONE ? sc_cstate_member(c->cs, mi) : NULL;
    json_object *o = json_object_new_object(), *p = s_row(rows, g->event_id, vm, "prepare");
    json_object *r = s_row(rows, g->event_id, vm, "recover");
    double ps = 0, rs = 0;
    bool has_p = s_took(p, &ps), has_r = s_took(r, &rs);
    bool no_drain = c->o.policy.approve_without_drain & (1u << rh->type);
    bool ok = s_result_is(p, "done") && (s_result_is(r, "done") || s_result_is(r, "skipped"));
    char status[160], tail[256];

    if (!p && no_drain) {
        ok = true; /* the policy approves this type at once: nothing to drain */
        snprintf(status, sizeof(status), "no drain: approved at once (approve-without-drain)");
    } else if (!p)
        snprintf(status, sizeof(status), "%s",
                 rh->state == SC_REHEARSAL_STOPPED || rh->stopped_ms
                     ? "not drained: the rehearsal stopped before its turn"
                 : mi != SC_PLAN_NONE && !c->members[mi].alive ? "not drained: its agent is down"
                 : rh->state == SC_REHEARSAL_FINISHED          ? "not drained"
                                                               : "waiting for its turn");
    else if (!s_str(p, "result") || s_result_is(p, "refused"))
        snprintf(status, sizeof(status), "preparing");
    else if (s_failed(p))
        snprintf(status, sizeof(status), "prepare %s (exit %lld)%s", s_failed(p),
                 (long long)s_int(p, "exit_status"), s_result_is(r, "done") ? "; rolled back" : "");
    else if (s_failed(r))
        snprintf(status, sizeof(status), "prepared; recover %s (exit %lld)", s_failed(r),
                 (long long)s_int(r, "exit_status"));
    else if (ok)
        snprintf(status, sizeof(status), "prepared and recovered");
    else
        snprintf(status, sizeof(status), "prepared; %s", r ? "recovering" : "waiting to recover");
    for (json_object *fr = s_failed(p) ? p : s_failed(r) ? r : NULL; fr; fr = NULL) {
        json_object *f = json_object_new_object();
        s_tail(s_str(fr, "detail"), tail, sizeof(tail));
        json_object_object_add(f, "vm", json_object_new_string(vm));
        json_object_object_add(f, "phase", json_object_new_string(s_str(fr, "phase")));
        json_object_object_add(f, "result", json_object_new_string(s_str(fr, "result")));
        json_object_object_add(f, "exit_status", json_object_new_int64(s_int(fr, "exit_status")));
        json_object_object_add(
            f, "output", json_object_new_string(s_str(fr, "detail") ? s_str(fr, "detail") : ""));
        json_object_object_add(f, "output_tail", json_object_new_string(tail));
        json_object_object_add(o, "failure", json_object_get(f));
        json_object_array_add(failures, f);
    }
    json_object_object_add(o, "name", json_object_new_string(vm));
    json_object_object_add(o, "fault_domain", json_object_new_int(cm ? cm->fault_domain : -1));
    json_object_object_add(o, "update_domain", json_object_new_int(cm ? cm->update_domain : -1));
    json_object_object_add(o, "event_id", json_object_new_string(g->event_id));
    json_object_object_add(o, "prepare_s", s_secs(has_p, ps));
    json_object_object_add(o, "recover_s", s_secs(has_r, rs));
    json_object_object_add(o, "prepare_result",
                           p && s_str(p, "result") ? json_object_new_string(s_str(p, "result"))
                                                   : NULL);
    json_object_object_add(o, "recover_result",
                           r && s_str(r, "result") ? json_object_new_string(s_str(r, "result"))
                                                   : NULL);
    json_object_object_add(o, "attempt", p ? json_object_new_int64(s_int(p, "attempt")) : NULL);
    json_object_object_add(o, "ok", json_object_new_boolean(ok));
    json_object_object_add(o, "status", json_object_new_string(status));
    *m = (sc_forecast_measured_t){.name = c->members[mi != SC_PLAN_NONE ? mi : 0].name,
                                  .domain = g->domain,
                                  .prepared = s_result_is(p, "done"),
                                  .failed = s_failed(p) != NULL,
                                  .prepare_s = ps,
                                  .recover_s = has_r ? rs : 0};
    return o;
}

/* The wall span of a phase over a domain's VMs (first start to last end), into *ret. */
static bool s_span(json_object *rows, const sc_cs_rh_group_t *g, const char *phase, double *ret)
{
    int64_t lo = 0, hi = 0;

    for (size_t i = 0; i < g->n_vms; i++) {
        json_object *r = s_row(rows, g->event_id, g->vms[i], phase);
        int64_t s = s_int(r, "started_ms"), f = s_int(r, "finished_ms");
        if (!s || !f)
            continue;
        lo = !lo || s < lo ? s : lo;
        hi = f > hi ? f : hi;
    }
    if (!lo)
        return false;
    *ret = (double)(hi - lo) / 1000.0;
    return true;
}

json_object *sc_coord_rehearse_report(sc_coord_t *c)
{
    const sc_cs_rehearsal_t *rh = sc_cstate_rehearsal(c->cs);
    bool ud = sc_coord_serialise_by(c) == SC_SERIALISE_UPDATE_DOMAIN;
    json_object *o, *rows = NULL, *vms, *doms, *verdicts, *failures, *text;
    sc_forecast_measured_t *m;
    const char **ids;
    size_t n_m = 0, n_vms = 0, not_recovered = 0;
    char line[600], took[32];
    int64_t end;

    for (size_t k = 0; k < rh->n_groups; k++)
        n_vms += rh->groups[k].n_vms;
    if (!(ids = calloc(rh->n_groups + 1, sizeof(*ids))) || !(m = calloc(n_vms + 1, sizeof(*m)))) {
        free(ids);
        return NULL;
    }
    for (size_t k = 0; k < rh->n_groups; k++)
        ids[k] = rh->groups[k].event_id;
    if (sc_store_drains_of(c->store, ids, rh->n_groups, rh->index, &rows) < 0) {
        free(ids);
        free(m);
        o = json_object_new_object();
        json_object_object_add(o, "error", json_object_new_string("the store could not be read"));
        return o;
    }
    free(ids);
    o = json_object_new_object();
    vms = json_object_new_array();
    doms = json_object_new_array();
    verdicts = json_object_new_array();
    failures = json_object_new_array();
    text = json_object_new_array();
    for (size_t k = 0; k < rh->n_groups; k++) {
        const sc_cs_rh_group_t *g = &rh->groups[k];
        json_object *d = json_object_new_object(), *dv = json_object_new_array();
        double ps = 0, rs = 0;
        bool hp = s_span(rows, g, "prepare", &ps), hr = s_span(rows, g, "recover", &rs), ok = true;

        for (size_t i = 0; i < g->n_vms; i++) {
            json_object *jv = s_vm(c, rh, g, g->vms[i], rows, &m[n_m], failures);
            json_object *pr = json_object_object_get(jv, "prepare_result");
            const char *rr = s_str(jv, "recover_result");
            ok = ok && json_object_get_boolean(json_object_object_get(jv, "ok"));
            if (pr && !(rr && (!strcmp(rr, "done") || !strcmp(rr, "skipped"))))
                not_recovered++;
            json_object_array_add(dv, json_object_new_string(g->vms[i]));
            json_object_array_add(vms, jv);
            n_m++;
        }
        json_object_object_add(d, ud ? "update_domain" : "fault_domain",
                               json_object_new_int(g->domain));
        json_object_object_add(d, "event_id", json_object_new_string(g->event_id));
        json_object_object_add(d, "vms", dv);
        json_object_object_add(d, "prepare_s", s_secs(hp, ps));
        json_object_object_add(d, "recover_s", s_secs(hr, rs));
        json_object_object_add(d, "ok", json_object_new_boolean(ok));
        json_object_array_add(doms, d);
    }
    end = rh->finished_ms ? rh->finished_ms : sc_wall_ms();
    sc_forecast_duration((double)(end - rh->started_ms) / 1000.0, took, sizeof(took));
    if (rh->stopped_ms)
        snprintf(line, sizeof(line),
                 "Rehearsal %lld (%s, %s): stopped after %s: %s; %s nothing was POSTed to IMDS.",
                 (long long)rh->id, sc_event_type_name(rh->type), rh->scope, took, rh->why,
                 rh->state != SC_REHEARSAL_FINISHED ? "recovering what it prepared;"
                 : not_recovered                    ? "NOT every VM it prepared recovered;"
                                                    : "every VM it prepared was recovered;");
    else
        snprintf(line, sizeof(line), "Rehearsal %lld (%s, %s): %s %s; nothing %s POSTed to IMDS.",
                 (long long)rh->id, sc_event_type_name(rh->type), rh->scope,
                 rh->state == SC_REHEARSAL_FINISHED ? "over in" : "running for", took,
                 rh->state == SC_REHEARSAL_FINISHED ? "was" : "is");
    json_object_array_add(text, json_object_new_string(line));
    for (size_t k = 0; k < json_object_array_length(failures); k++) {
        json_object *f = json_object_array_get_idx(failures, k);
        snprintf(line, sizeof(line), "%s: %s %s (exit %lld): %s", s_str(f, "vm"), s_str(f, "phase"),
                 s_str(f, "result"), (long long)s_int(f, "exit_status"),
                 s_str(f, "output_tail")[0] ? s_str(f, "output_tail") : "(no output)");
        json_object_array_add(text, json_object_new_string(line));
    }
    for (size_t t = 0; t < sizeof(s_types) / sizeof(s_types[0]); t++) {
        sc_forecast_verdict_t v;
        json_object *jv;
        if (sc_forecast_verdict(m, n_m, s_types[t],
                                sc_forecast_notice_s(s_types[t], c->o.policy.terminate_notice_s),
                                c->o.policy.approve_without_drain & (1u << s_types[t]),
                                (double)rh->recover_after_s, c->o.policy.max_fault_domains,
                                c->o.policy.deadline_margin_s, ud, rh->scope, &v) < 0)
            continue;
        jv = json_object_new_object();
        json_object_object_add(jv, "event_type",
                               json_object_new_string(sc_event_type_name(s_types[t])));
        json_object_object_add(jv, "notice_s", json_object_new_double(v.notice_s));
        json_object_object_add(jv, "needed_s", s_secs(true, v.needed_s));
        json_object_object_add(jv, "fits", json_object_new_boolean(v.fits));
        json_object_object_add(jv, "text", json_object_new_string(v.text));
        json_object_array_add(verdicts, jv);
        json_object_array_add(text, json_object_new_string(v.text));
    }
    free(m);
    json_object_put(rows);
    json_object_object_add(o, "rehearsal", json_object_new_int64(rh->id));
    json_object_object_add(o, "event_type", json_object_new_string(sc_event_type_name(rh->type)));
    json_object_object_add(o, "scope", json_object_new_string(rh->scope));
    json_object_object_add(o, "state", json_object_new_string(sc_rehearsal_state_name(rh->state)));
    json_object_object_add(o, "over", json_object_new_boolean(rh->state == SC_REHEARSAL_FINISHED));
    json_object_object_add(o, "stopped", json_object_new_boolean(rh->stopped_ms != 0));
    json_object_object_add(o, "why", rh->why[0] ? json_object_new_string(rh->why) : NULL);
    json_object_object_add(o, "not_recovered", json_object_new_int64((int64_t)not_recovered));
    json_object_object_add(o, "started_ms", json_object_new_int64(rh->started_ms));
    json_object_object_add(o, "finished_ms",
                           rh->finished_ms ? json_object_new_int64(rh->finished_ms) : NULL);
    json_object_object_add(o, "duration_s", s_secs(true, (double)(end - rh->started_ms) / 1000.0));
    json_object_object_add(o, "recover_after_s", json_object_new_int64(rh->recover_after_s));
    json_object_object_add(o, "not_before", json_object_new_int64(rh->not_before));
    json_object_object_add(o, "vms", vms);
    json_object_object_add(o, ud ? "update_domains" : "fault_domains", doms);
    json_object_object_add(o, "failures", failures);
    json_object_object_add(o, "verdicts", verdicts);
    json_object_object_add(o, "text", text);
    return o;
}
