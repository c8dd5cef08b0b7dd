/* sc_forecast: drain-time forecasts from history (see sc_forecast.h for the model). */
#include "sc_forecast.h"

#include <errno.h>
#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- texts ----------------------------------------------------------------------------- */

void sc_forecast_duration(double s, char *buf, size_t len)
{
    long t;

    if (!buf || !len)
        return;
    if (!(s >= 0))
        s = 0;
    if (s < 9.95) {
        snprintf(buf, len, "%.1f s", s);
        return;
    }
    t = (long)(s + 0.5);
    if (t < 60)
        snprintf(buf, len, "%ld s", t);
    else if (t < 3600 && t % 60)
        snprintf(buf, len, "%ld min %ld s", t / 60, t % 60);
    else if (t < 3600)
        snprintf(buf, len, "%ld min", t / 60);
    else if ((t % 3600) / 60)
        snprintf(buf, len, "%ld h %ld min", t / 3600, (t % 3600) / 60);
    else
        snprintf(buf, len, "%ld h", t / 3600);
}

/* A wall time for humans: "14:05:07 UTC". */
static void s_clock(double wall_s, char *buf, size_t len)
{
    time_t t = (time_t)wall_s;
    struct tm tm;

    if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%H:%M:%S UTC", &tm))
        snprintf(buf, len, "?");
}

static void s_add(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends to buf (cut when full). */
static void s_add(char *buf, size_t len, const char *fmt, ...)
{
    size_t off = strlen(buf);
    va_list ap;

    if (off + 1 >= len)
        return;
    va_start(ap, fmt);
    vsnprintf(buf + off, len - off, fmt, ap);
    va_end(ap);
}

static const char *s_domain_word(bool by_update_domain)
{
    return by_update_domain ? "update domain" : "fault domain";
}

/* ---- statistics ------------------------------------------------------------------------ */

static int s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

int sc_forecast_stat(const double *samples, size_t n, sc_forecast_stat_t *ret)
{
    double *v;
    size_t rank;

    if ((n && !samples) || !ret)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!(samples[i] >= 0) || samples[i] > DBL_MAX)
            return -EINVAL;
    memset(ret, 0, sizeof(*ret));
    if (!n)
        return 0;
    if (!(v = malloc(n * sizeof(*v))))
        return -ENOMEM;
    memcpy(v, samples, n * sizeof(*v));
    qsort(v, n, sizeof(*v), s_cmp_double);
    ret->median_s = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    /* nearest rank: the smallest value with at least 95 % of the samples at or below it */
    rank = (n * 95 + 99) / 100;
    ret->p95_s = v[rank ? rank - 1 : 0];
    ret->count = n;
    free(v);
    return 0;
}

/* ---- the forecast ---------------------------------------------------------------------- */

/* What occupies domains, from start_s to free_s. */
typedef struct s_occ {
    const int *doms; /* its domain keys (distinct) */
    size_t n;        /* entries */
    double start_s;  /* its drain starts */
    double free_s;   /* its last recover ends */
    size_t ev;       /* the event's index */
} s_occ_t;

/* A member's domain key: its domain, or one of its own when unknown (as the planner). */
static int s_key(const sc_forecast_input_t *in, size_t m)
{
    int d = in->members[m].domain;

    return d >= 0 ? d : -2 - (int)m;
}

static bool s_has(const int *set, size_t n, int key)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == key)
            return true;
    return false;
}

/* The prepare time VM v still needs (its p95 less what already ran); unknown: 0. */
static double s_prep_left(const sc_forecast_input_t *in, const sc_forecast_vm_t *v)
{
    const sc_forecast_stat_t *st = &in->members[v->member].prepare;

    switch (v->drain) {
    case SC_DRAIN_NONE:
    case SC_DRAIN_ROLLED_BACK: return st->p95_s;
    case SC_DRAIN_PREPARE_ORDERED:
    case SC_DRAIN_PREPARING: return st->p95_s > v->elapsed_s ? st->p95_s - v->elapsed_s : 0;
    default: return 0;
    }
}

static bool s_under_way(const sc_forecast_event_t *e)
{
    for (size_t j = 0; j < e->n_vms; j++)
        if (e->vms[j].drain == SC_DRAIN_PREPARE_ORDERED || e->vms[j].drain == SC_DRAIN_PREPARING ||
            e->vms[j].drain == SC_DRAIN_PREPARED)
            return true;
    return false;
}

/* Whether an event with domains own[n_own] may occupy [t, t + dur) beside the occupants:
 * rule 2 (an event's own domains never count against it). other: room for the keys. */
static bool s_allowed(const s_occ_t *occ, size_t n_occ, const int *own, size_t n_own, double t,
                      double dur, int max_domains, int *other)
{
    size_t n_other = 0, n_union;

    for (size_t k = 0; k < n_occ; k++) {
        /* overlapping [t, t + dur], t itself included (an event with nothing to run) */
        if (!((occ[k].start_s < t + dur || occ[k].start_s <= t) && occ[k].free_s > t))
            continue;
        for (size_t d = 0; d < occ[k].n; d++)
            if (!s_has(other, n_other, occ[k].doms[d]))
                other[n_other++] = occ[k].doms[d];
    }
    if (n_own > (size_t)max_domains)
        return n_other == 0;
    n_union = n_other;
    for (size_t d = 0; d < n_own; d++)
        n_union += !s_has(other, n_other, own[d]);
    return n_union <= (size_t)max_domains;
}

/* The first moment from now, in the occupants' order, when the event may start. */
static double s_earliest(const sc_forecast_input_t *in, const s_occ_t *occ, size_t n_occ,
                         const int *own, size_t n_own, double dur, int max_domains, int *other)
{
    double t = in->now_s;

    for (;;) {
        double next = DBL_MAX;

        if (s_allowed(occ, n_occ, own, n_own, t, dur, max_domains, other))
            return t;
        for (size_t k = 0; k < n_occ; k++)
            if (occ[k].free_s > t && occ[k].free_s < next)
                next = occ[k].free_s;
        if (next == DBL_MAX) /* nothing ends later: nothing blocks it any more */
            return t;
        t = next;
    }
}

/* The events' forecasts with max_domains: everything but the texts and the risk list.
 * keys: room for every VM of every event; other: room for as many; occ: for every event. */
static size_t s_simulate(const sc_forecast_input_t *in, int max_domains, sc_forecast_t *ret,
                         int *keys, int *other, s_occ_t *occ)
{
    size_t n_occ = 0, off = 0;

    for (size_t i = 0; i < in->n_events; i++) {
        const sc_forecast_event_t *e = &in->events[i];
        sc_forecast_t *r = &ret[i];
        int *own = keys + off;
        size_t n_own = 0;
        double prep = 0, rec = 0, start;

        memset(r, 0, sizeof(*r));
        for (size_t j = 0; j < e->n_vms; j++) {
            const sc_forecast_member_t *m = &in->members[e->vms[j].member];
            double left = s_prep_left(in, &e->vms[j]);
            int key = s_key(in, e->vms[j].member);

            if (!s_has(own, n_own, key))
                own[n_own++] = key;
            prep = left > prep ? left : prep;
            rec = m->recover.p95_s > rec ? m->recover.p95_s : rec;
            r->n_unknown += m->prepare.count == 0;
        }
        off += n_own;
        if (e->cls == SC_CLASS_NO_DRAIN && !s_under_way(e))
            continue; /* approved at once, nobody busy */
        if (e->impacted) {
            occ[n_occ++] = (s_occ_t){own, n_own, in->now_s,
                                     (e->end_s > in->now_s ? e->end_s : in->now_s) + rec, i};
            continue;
        }
        if (e->cls == SC_CLASS_EVICT || s_under_way(e))
            start = in->now_s;
        else
            start = s_earliest(in, occ, n_occ, own, n_own, prep + e->impact_s + rec, max_domains,
                               other);
        r->made = true;
        r->start_s = start;
        r->drained_s = start + prep;
        occ[n_occ++] = (s_occ_t){own, n_own, start,
                                 r->drained_s + (e->impact_s > 0 ? e->impact_s : 0) + rec, i};
        r->deadline_s = e->has_not_before ? (double)e->not_before_s -
                                                (e->cls == SC_CLASS_EVICT ? 0 : in->margin_s)
                                          : 0;
        r->fits = !e->has_not_before || r->drained_s <= r->deadline_s;
    }
    return n_occ;
}

/* The VMs of event e at risk (drained after the deadline), slowest first, into r. */
static void s_risk(const sc_forecast_input_t *in, const sc_forecast_event_t *e, sc_forecast_t *r)
{
    double left[SC_FORECAST_RISK_MAX];

    for (size_t j = 0; j < e->n_vms; j++) {
        double l = s_prep_left(in, &e->vms[j]);
        size_t k;

        if (r->start_s + l <= r->deadline_s)
            continue;
        for (k = r->n_risk; k > 0 && left[k - 1] < l; k--)
            if (k < SC_FORECAST_RISK_MAX) {
                left[k] = left[k - 1];
                r->risk[k] = r->risk[k - 1];
            }
        if (k < SC_FORECAST_RISK_MAX) {
            left[k] = l;
            r->risk[k] = e->vms[j].member;
            if (r->n_risk < SC_FORECAST_RISK_MAX)
                r->n_risk++;
        }
    }
}

/* Domain keys as text ("1, 2"; unknown ones "?"). */
static void s_domains_text(const int *set, size_t n, char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (set[i] >= 0)
            s_add(buf, len, "%s%d", i ? ", " : "", set[i]);
        else
            s_add(buf, len, "%s?", i ? ", " : "");
    }
}

/* The why of event i that does not fit: when, the VMs at risk, what would fit. occ[n_occ]: the
 * occupants of the forecast made (read only); n_keys: room for every VM of every event. */
static int s_explain(const sc_forecast_input_t *in, size_t i, sc_forecast_t *r, const s_occ_t *occ,
                     size_t n_occ, size_t n_keys)
{
    const sc_forecast_event_t *e = &in->events[i];
    const char *dw = s_domain_word(in->by_update_domain);
    char a[32], b[32], d[32], own_txt[96], wait_txt[96];
    double slowest = 0;
    size_t slow_vm = SIZE_MAX, n_own = 0, n_waits = 0;
    int *own = NULL, *waits = NULL, *keys = NULL, *other = NULL;
    s_occ_t *occ2 = NULL;
    sc_forecast_t *tmp = NULL;
    int rc = 0;

    s_risk(in, e, r);
    for (size_t j = 0; j < e->n_vms; j++) {
        double l = s_prep_left(in, &e->vms[j]);
        if (slow_vm == SIZE_MAX || l > slowest) {
            slowest = l;
            slow_vm = e->vms[j].member;
        }
    }
    s_clock(r->drained_s, a, sizeof(a));
    s_clock(r->deadline_s, b, sizeof(b));
    sc_forecast_duration(r->drained_s - in->now_s, d, sizeof(d));
    snprintf(r->why, sizeof(r->why), "drained at %s (in %s), after %s %s", a, d,
             e->cls == SC_CLASS_EVICT ? "NotBefore" : "NotBefore - margin,", b);
    for (size_t k = 0; k < r->n_risk; k++) {
        const sc_forecast_member_t *m = &in->members[r->risk[k]];
        sc_forecast_duration(m->prepare.p95_s, a, sizeof(a));
        s_add(r->why, sizeof(r->why), "%s%s (prepare p95 %s of %zu run%s)",
              k ? ", " : "; at risk: ", m->name, a, m->prepare.count,
              m->prepare.count == 1 ? "" : "s");
    }
    if (r->n_unknown)
        s_add(r->why, sizeof(r->why), "; %zu VM%s without history", r->n_unknown,
              r->n_unknown == 1 ? "" : "s");
    r->fits_with = -1;
    if (r->deadline_s <= in->now_s) {
        s_add(r->why, sizeof(r->why), "; nothing would fit: its deadline has passed");
        return 0;
    }
    if (slow_vm != SIZE_MAX && in->now_s + slowest > r->deadline_s) {
        sc_forecast_duration(slowest, a, sizeof(a));
        s_add(r->why, sizeof(r->why),
              "; nothing would fit: %s's prepare alone (%s) ends after the deadline",
              in->members[slow_vm].name, a);
        return 0;
    }
    if (!(own = calloc(e->n_vms + 1, sizeof(*own))) || !(waits = calloc(n_keys, sizeof(*waits))) ||
        !(keys = calloc(n_keys, sizeof(*keys))) || !(other = calloc(n_keys, sizeof(*other))) ||
        !(occ2 = calloc(in->n_events + 1, sizeof(*occ2))) ||
        !(tmp = calloc(in->n_events, sizeof(*tmp)))) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t j = 0; j < e->n_vms; j++)
        if (!s_has(own, n_own, s_key(in, e->vms[j].member)))
            own[n_own++] = s_key(in, e->vms[j].member);
    /* the domains it waits for: those of the events out before its drain starts */
    for (size_t k = 0; k < n_occ; k++) {
        if (occ[k].ev == i || !(occ[k].start_s < r->start_s && occ[k].free_s > in->now_s))
            continue;
        for (size_t q = 0; q < occ[k].n; q++)
            if (!s_has(own, n_own, occ[k].doms[q]) && !s_has(waits, n_waits, occ[k].doms[q]))
                waits[n_waits++] = occ[k].doms[q];
    }
    /* the smallest max-fault-domains with which it would fit */
    for (int k = in->max_domains + 1; k <= (int)in->n_members + 1; k++) {
        s_simulate(in, k, tmp, keys, other, occ2);
        if (tmp[i].fits) {
            r->fits_with = k;
            break;
        }
    }
    s_domains_text(own, n_own, own_txt, sizeof(own_txt));
    s_domains_text(waits, n_waits, wait_txt, sizeof(wait_txt));
    if (r->fits_with > 0 && n_waits)
        s_add(r->why, sizeof(r->why),
              "; draining %s %s in parallel with %s %s would fit, but breaks "
              "max-fault-domains=%d",
              dw, own_txt, dw, wait_txt, in->max_domains);
    else if (r->fits_with > 0)
        s_add(r->why, sizeof(r->why), "; it would fit with max-fault-domains=%d (it is %d)",
              r->fits_with, in->max_domains);
    else
        s_add(r->why, sizeof(r->why), "; nothing would fit, even every %s at once", dw);
out:
    free(own);
    free(waits);
    free(keys);
    free(other);
    free(occ2);
    free(tmp);
    return rc;
}

int sc_forecast_run(const sc_forecast_input_t *in, sc_forecast_t *ret)
{
    size_t n_keys = 1, n_occ;
    int *keys = NULL, *other = NULL;
    s_occ_t *occ = NULL;
    int rc = 0;

    if (!in || !ret || in->max_domains < 1 || (in->n_members && !in->members) ||
        (in->n_events && !in->events))
        return -EINVAL;
    for (size_t i = 0; i < in->n_events; i++) {
        if (in->events[i].n_vms && !in->events[i].vms)
            return -EINVAL;
        for (size_t j = 0; j < in->events[i].n_vms; j++)
            if (in->events[i].vms[j].member >= in->n_members)
                return -EINVAL;
        n_keys += in->events[i].n_vms;
    }
    if (!(keys = calloc(n_keys, sizeof(*keys))) || !(other = calloc(n_keys, sizeof(*other))) ||
        !(occ = calloc(in->n_events + 1, sizeof(*occ)))) {
        rc = -ENOMEM;
        goto out;
    }
    n_occ = s_simulate(in, in->max_domains, ret, keys, other, occ);
    for (size_t i = 0; i < in->n_events && rc >= 0; i++)
        if (ret[i].made && !ret[i].fits)
            rc = s_explain(in, i, &ret[i], occ, n_occ, n_keys);
out:
    free(keys);
    free(other);
    free(occ);
    return rc;
}

/* ---- notices and verdicts -------------------------------------------------------------- */

double sc_forecast_notice_s(sc_event_type_t type, double terminate_notice_s)
{
    switch (type) {
    case SC_EVENT_FREEZE:
    case SC_EVENT_REBOOT: return 900;
    case SC_EVENT_REDEPLOY: return 600;
    case SC_EVENT_PREEMPT: return 30;
    case SC_EVENT_TERMINATE: return terminate_notice_s;
    default: return 0;
    }
}

static int s_cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;

    /* known domains in order, unknown ones (negative keys) after */
    if ((x < 0) != (y < 0))
        return x < 0 ? 1 : -1;
    return (x > y) - (x < y);
}

/* The time until the last round's slowest prepare ends, max_domains domains (dom[n_dom], in
 * order) at a time; the VMs' domain keys in key[]. */
static double s_needed(const sc_forecast_measured_t *vms, size_t n, const int *key, const int *dom,
                       size_t n_dom, int max_domains, double impact_s)
{
    double needed = 0;

    for (size_t first = 0; first < n_dom; first += (size_t)max_domains) {
        size_t last = first + (size_t)max_domains;
        double prep = 0, rec = 0;

        for (size_t j = 0; j < n; j++) {
            bool in_round = false;
            for (size_t d = first; d < last && d < n_dom; d++)
                in_round = in_round || key[j] == dom[d];
            if (!in_round || (!vms[j].prepared && !vms[j].failed))
                continue;
            prep = vms[j].prepare_s > prep ? vms[j].prepare_s : prep;
            rec = vms[j].recover_s > rec ? vms[j].recover_s : rec;
        }
        needed += prep;
        if (last < n_dom)
            needed += (impact_s > 0 ? impact_s : 0) + rec;
    }
    return needed;
}

int sc_forecast_verdict(const sc_forecast_measured_t *vms, size_t n, sc_event_type_t type,
                        double notice_s, bool no_drain, double impact_s, int max_domains,
                        double margin_s, bool by_update_domain, const char *scope,
                        sc_forecast_verdict_t *ret)
{
    const char *tn = sc_event_type_name(type), *dw = s_domain_word(by_update_domain);
    bool evict = type == SC_EVENT_PREEMPT || type == SC_EVENT_TERMINATE;
    char nt[32], dt[32], mt[32];
    size_t slow = SIZE_MAX, failed = SIZE_MAX, n_ran = 0, n_dom = 0;
    double limit;
    int *key = NULL, *dom = NULL;

    if ((n && !vms) || !ret || max_domains < 1 || !scope)
        return -EINVAL;
    memset(ret, 0, sizeof(*ret));
    ret->type = type;
    ret->notice_s = notice_s;
    sc_forecast_duration(notice_s, nt, sizeof(nt));
    if (no_drain) {
        ret->fits = true;
        snprintf(ret->text, sizeof(ret->text),
                 "%s: approved at once, without a drain (approve-without-drain); fits %s.", tn, nt);
        return 0;
    }
    for (size_t j = 0; j < n; j++) {
        if (vms[j].failed && failed == SIZE_MAX)
            failed = j;
        if (!vms[j].prepared && !vms[j].failed)
            continue;
        n_ran++;
        if (slow == SIZE_MAX || vms[j].prepare_s > vms[slow].prepare_s)
            slow = j;
    }
    if (failed != SIZE_MAX) {
        snprintf(ret->text, sizeof(ret->text),
                 "%s: %s's prepare failed; the event would not be approved (Azure starts it at "
                 "NotBefore, undrained).",
                 tn, vms[failed].name);
        ret->needed_s = slow != SIZE_MAX ? vms[slow].prepare_s : 0;
        return 0;
    }
    if (!n_ran) {
        snprintf(ret->text, sizeof(ret->text), "%s: no prepare ran: nothing measured.", tn);
        return 0;
    }
    sc_forecast_duration(vms[slow].prepare_s, dt, sizeof(dt));
    if (evict) {
        /* every VM drains at once, each against its own notice */
        ret->needed_s = vms[slow].prepare_s;
        ret->fits = ret->needed_s <= notice_s;
        if (n_ran == 1)
            snprintf(ret->text, sizeof(ret->text), "%s: %s's prepare took %s; %s %s.", tn,
                     vms[slow].name, dt, ret->fits ? "fits" : "does not fit", nt);
        else
            snprintf(ret->text, sizeof(ret->text), "%s: the slowest prepare, %s's, took %s; %s %s.",
                     tn, vms[slow].name, dt, ret->fits ? "fits" : "does not fit", nt);
        return 0;
    }
    if (!(key = calloc(n, sizeof(*key))) || !(dom = calloc(n, sizeof(*dom)))) {
        free(key);
        return -ENOMEM;
    }
    for (size_t j = 0; j < n; j++) {
        key[j] = vms[j].domain >= 0 ? vms[j].domain : -2 - (int)j;
        if (!s_has(dom, n_dom, key[j]))
            dom[n_dom++] = key[j];
    }
    qsort(dom, n_dom, sizeof(*dom), s_cmp_int);
    limit = notice_s - margin_s;
    ret->needed_s = s_needed(vms, n, key, dom, n_dom, max_domains, impact_s);
    ret->fits = ret->needed_s <= limit;
    sc_forecast_duration(ret->needed_s, dt, sizeof(dt));
    snprintf(ret->text, sizeof(ret->text), "%s: %s drains in %s", tn, scope, dt);
    if (n_dom > (size_t)max_domains && max_domains == 1)
        s_add(ret->text, sizeof(ret->text), " %s by %s", dw, dw);
    else if (n_dom > (size_t)max_domains)
        s_add(ret->text, sizeof(ret->text), ", %d %ss at a time", max_domains, dw);
    if (ret->fits) {
        s_add(ret->text, sizeof(ret->text), "; fits %s.", nt);
    } else {
        sc_forecast_duration(margin_s, mt, sizeof(mt));
        s_add(ret->text, sizeof(ret->text), "; does not fit %s (NotBefore - %s margin)", nt, mt);
        if (vms[slow].prepare_s > limit) {
            sc_forecast_duration(vms[slow].prepare_s, dt, sizeof(dt));
            s_add(ret->text, sizeof(ret->text), ": %s's prepare alone takes %s.", vms[slow].name,
                  dt);
        } else {
            for (int k = max_domains + 1; k <= (int)n_dom; k++)
                if (s_needed(vms, n, key, dom, n_dom, k, impact_s) <= limit) {
                    s_add(ret->text, sizeof(ret->text),
                          "; it would with max-fault-domains=%d (it is %d).", k, max_domains);
                    break;
                }
            if (ret->text[strlen(ret->text) - 1] != '.')
                s_add(ret->text, sizeof(ret->text), ".");
        }
    }
    free(key);
    free(dom);
    return 0;
}
