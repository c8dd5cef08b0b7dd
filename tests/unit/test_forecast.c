/* Table-driven tests of the forecast (coordinator/sc_forecast.h): pure functions, so each row
 * is members with their hook durations, events in drain order, policy and time, and the
 * forecast expected, rendered per event as
 *   "ID +START/+DRAINED fits|late[ risk=vm,vm][ with=K][ unknown=N]" (seconds from now), or
 *   "ID -" when nothing is forecast (no drain, impacted),
 * joined by "; ". Then the statistics, the verdicts of a rehearsal, and the texts. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sc_forecast.h"
#include "sc_test.h"

#define NOW 1000000.0   /* wall seconds of every scenario */
#define NB_NONE INT_MIN /* no NotBefore */
#define MAX_M 12
#define MAX_E 6

typedef struct ev_row {
    const char *id;   /* EventId */
    const char *type; /* "Reboot" when NULL */
    int nb;           /* NotBefore - NOW in s; 0 = +900; NB_NONE = none */
    const char *vms;  /* "a0=none,a1=preparing+3" (+S: its prepare ran S s) */
    bool impacted;    /* Started: out until end_in, then recovered */
    int end_in;       /* impacted: ends NOW + this */
    int impact;       /* expected s from approval to end */
    const char *dur;  /* DurationInSeconds (Freeze classes), NULL = absent */
} ev_row_t;

typedef struct row {
    const char *name;    /* scenario */
    const char *members; /* "a0:0=10/2 b0:1 c0:-1=5/1": name:domain[=prepare p95/recover p95],
                            no "=": no history */
    ev_row_t ev[MAX_E];  /* events in drain order (id NULL ends) */
    int max_domains;     /* 0 = 1 */
    double margin;       /* deadline-margin-s */
    const char *expect;  /* the rendered forecasts */
    const char *why;     /* a text expected in the first late event's why (NULL: not checked) */
} row_t;

typedef struct world {
    sc_forecast_member_t m[MAX_M];
    char mname[MAX_M][8];
    size_t n_m;
    sc_event_t ev[MAX_E];
    sc_forecast_event_t fe[MAX_E];
    sc_forecast_vm_t vms[MAX_E][MAX_M];
    size_t n_e;
    sc_policy_t pol;
} world_t;

static size_t s_member(const world_t *w, const char *name, size_t len)
{
    for (size_t i = 0; i < w->n_m; i++)
        if (strlen(w->mname[i]) == len && strncmp(w->mname[i], name, len) == 0)
            return i;
    return SIZE_MAX;
}

static int s_build(const row_t *r, world_t *w)
{
    const char *p = r->members;

    memset(w, 0, sizeof(*w));
    sc_policy_defaults(&w->pol);
    while (*p) {
        sc_forecast_member_t *m = &w->m[w->n_m];
        size_t len = strcspn(p, ":");
        char *end;

        if (w->n_m >= MAX_M || len >= sizeof(w->mname[0]) || !p[len])
            return -1;
        memcpy(w->mname[w->n_m], p, len);
        m->name = w->mname[w->n_m];
        m->domain = (int)strtol(p + len + 1, &end, 10);
        if (*end == '=') {
            m->prepare.p95_s = strtod(end + 1, &end);
            if (*end != '/')
                return -1;
            m->recover.p95_s = strtod(end + 1, &end);
            m->prepare.count = m->recover.count = 5;
            m->prepare.median_s = m->prepare.p95_s;
            m->recover.median_s = m->recover.p95_s;
        }
        for (p = end; *p == ' '; p++)
            ;
        w->n_m++;
    }
    for (size_t i = 0; i < MAX_E && r->ev[i].id; i++) {
        const ev_row_t *x = &r->ev[i];
        sc_forecast_event_t *e = &w->fe[i];
        sc_event_t *ev = &w->ev[i];
        const char *type = x->type ? x->type : "Reboot";

        for (int t = 0; t < SC_EVENT_TYPE_MAX; t++)
            if (strcmp(sc_event_type_name((sc_event_type_t)t), type) == 0)
                ev->type = (sc_event_type_t)t;
        ev->has_duration = x->dur != NULL;
        ev->duration_s = x->dur ? atoi(x->dur) : 0;
        e->id = x->id;
        e->cls = sc_plan_event_class(ev, &w->pol);
        e->impacted = x->impacted;
        e->end_s = NOW + x->end_in;
        e->impact_s = x->impact;
        e->has_not_before = x->nb != NB_NONE;
        e->not_before_s = (int64_t)NOW + (x->nb ? x->nb : 900);
        e->vms = w->vms[i];
        for (const char *v = x->vms ? x->vms : ""; *v;) {
            size_t len = strcspn(v, "="), slen, mi = s_member(w, v, len);
            char state[32], *plus;
            sc_forecast_vm_t *fv = &w->vms[i][e->n_vms];

            if (mi == SIZE_MAX || !v[len])
                return -1;
            v += len + 1;
            slen = strcspn(v, ",");
            if (slen >= sizeof(state))
                return -1;
            memcpy(state, v, slen);
            state[slen] = '\0';
            if ((plus = strchr(state, '+'))) {
                fv->elapsed_s = atof(plus + 1);
                *plus = '\0';
            }
            fv->member = mi;
            if (sc_drain_state_from_name(state, &fv->drain) < 0)
                return -1;
            e->n_vms++;
            v += slen;
            if (*v == ',')
                v++;
        }
        w->n_e++;
    }
    return 0;
}

static void s_render(const world_t *w, const sc_forecast_t *f, char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t i = 0; i < w->n_e; i++) {
        size_t off = strlen(buf);

        if (!f[i].made) {
            snprintf(buf + off, len - off, "%s%s -", i ? "; " : "", w->fe[i].id);
            continue;
        }
        snprintf(buf + off, len - off, "%s%s +%g/+%g %s", i ? "; " : "", w->fe[i].id,
                 f[i].start_s - NOW, f[i].drained_s - NOW, f[i].fits ? "fits" : "late");
        for (size_t k = 0; k < f[i].n_risk; k++) {
            off = strlen(buf);
            snprintf(buf + off, len - off, "%s%s", k ? "," : " risk=", w->mname[f[i].risk[k]]);
        }
        off = strlen(buf);
        if (f[i].fits_with)
            snprintf(buf + off, len - off, " with=%d", f[i].fits_with);
        off = strlen(buf);
        if (f[i].n_unknown)
            snprintf(buf + off, len - off, " unknown=%zu", f[i].n_unknown);
    }
}

#define FD3 "a0:0=10/2 a1:0=8/2 b0:1=10/2 b1:1=10/2 c0:2=41/1 c1:2=5/1"

static const row_t rows[] = {
    {"one_event_drains_now_and_fits",
     FD3,
     {{.id = "E1", .vms = "a0=none,a1=none"}},
     .expect = "E1 +0/+10 fits"},
    {"queued_behind_a_busy_domain_until_its_recover",
     FD3,
     {{.id = "E1", .vms = "a0=none,a1=none", .impact = 30},
      {.id = "E2", .vms = "b0=none,b1=none", .impact = 30}},
     /* E1: drained +10, ends +40, recovered +42 */
     .expect = "E1 +0/+10 fits; E2 +42/+52 fits"},
    {"queued_too_long_parallel_would_fit",
     FD3,
     {{.id = "E1", .vms = "a0=none,a1=none", .impact = 30},
      {.id = "E2", .nb = 40, .vms = "b0=none,b1=none"}},
     .expect = "E1 +0/+10 fits; E2 +42/+52 late risk=b0,b1 with=2",
     .why = "draining fault domain 1 in parallel with fault domain 0 would fit, but breaks "
            "max-fault-domains=1"},
    {"preempt_slower_than_its_notice_no_margin",
     FD3,
     {{.id = "P1", .type = "Preempt", .nb = 30, .vms = "c0=none"}},
     .expect = "P1 +0/+41 late risk=c0 with=-1",
     .why = "nothing would fit: c0's prepare alone (41 s) ends after the deadline"},
    {"preempt_within_its_notice_fits",
     FD3,
     {{.id = "P1", .type = "Preempt", .nb = 30, .vms = "c1=none"}},
     .expect = "P1 +0/+5 fits"},
    {"preempt_drains_whatever_else_is_busy",
     FD3,
     {{.id = "E1", .vms = "a0=preparing,a1=prepared"},
      {.id = "P1", .type = "Preempt", .nb = 30, .vms = "b0=none"}},
     .expect = "E1 +0/+10 fits; P1 +0/+10 fits"},
    {"a_prepare_under_way_counts_what_is_left",
     FD3,
     {{.id = "E1", .vms = "a0=preparing+8,a1=prepared"}},
     .expect = "E1 +0/+2 fits"},
    {"a_prepare_over_its_p95_counts_zero",
     FD3,
     {{.id = "E1", .vms = "a0=preparing+30"}},
     .expect = "E1 +0/+0 fits"},
    {"impacted_event_holds_its_domain_until_recovered",
     FD3,
     {{.id = "H1", .impacted = true, .end_in = 20, .vms = "a0=none"},
      {.id = "E2", .vms = "b0=none"}},
     .expect = "H1 -; E2 +22/+32 fits"},
    {"same_domain_events_drain_together",
     FD3,
     {{.id = "E1", .vms = "a0=none", .impact = 100}, {.id = "E2", .vms = "a1=none"}},
     .expect = "E1 +0/+10 fits; E2 +0/+8 fits"},
    {"two_domains_at_once",
     FD3,
     {{.id = "E1", .vms = "a0=none", .impact = 30},
      {.id = "E2", .vms = "b0=none", .impact = 30},
      {.id = "E3", .vms = "c1=none"}},
     .max_domains = 2,
     .expect = "E1 +0/+10 fits; E2 +0/+10 fits; E3 +42/+47 fits"},
    {"too_wide_waits_until_all_is_quiet",
     FD3,
     {{.id = "E1", .vms = "c1=none", .impact = 10}, {.id = "W1", .vms = "a0=none,b0=none"}},
     .expect = "E1 +0/+5 fits; W1 +16/+26 fits"},
    {"no_history_counts_zero_and_says_so",
     "a0:0 a1:0=3/1 b0:1",
     {{.id = "E1", .vms = "a0=none,a1=none"}},
     .expect = "E1 +0/+3 fits unknown=1"},
    {"nothing_to_run_still_waits_for_a_busy_domain",
     "a0:0=10/2 b0:1",
     {{.id = "E1", .vms = "a0=none"}, {.id = "E2", .vms = "b0=none"}},
     .expect = "E1 +0/+10 fits; E2 +12/+12 fits unknown=1"},
    {"no_not_before_always_fits",
     FD3,
     {{.id = "E1", .nb = NB_NONE, .vms = "c0=none"}},
     .expect = "E1 +0/+41 fits"},
    {"short_freeze_is_not_forecast",
     FD3,
     {{.id = "F1", .type = "Freeze", .dur = "5", .vms = "a0=none"}, {.id = "E2", .vms = "b0=none"}},
     .expect = "F1 -; E2 +0/+10 fits"},
    {"rolled_back_counts_a_whole_prepare_again",
     FD3,
     {{.id = "E1", .vms = "b0=rolled_back"}},
     .expect = "E1 +0/+10 fits"},
    {"margin_counts_for_platform_events",
     FD3,
     {{.id = "E1", .nb = 65, .vms = "a0=none"}},
     .margin = 60,
     .expect = "E1 +0/+10 late risk=a0 with=-1",
     .why = "after NotBefore - margin,"},
    {"deadline_passed_nothing_would_fit",
     FD3,
     {{.id = "E1", .nb = 30, .vms = "a0=none"}},
     .margin = 60,
     .expect = "E1 +0/+10 late risk=a0 with=-1",
     .why = "nothing would fit: its deadline has passed"},
    {"unknown_domain_is_its_own",
     "a0:-1=4/1 b0:-1=4/1",
     {{.id = "E1", .vms = "a0=none", .impact = 10}, {.id = "E2", .vms = "b0=none"}},
     .expect = "E1 +0/+4 fits; E2 +15/+19 fits"},
};

static void s_run_row(const row_t *r)
{
    world_t w;
    sc_forecast_input_t in = {0};
    sc_forecast_t f[MAX_E];
    const char *want = r->why;
    char got[2048];
    int rc;

    if (s_build(r, &w) < 0) {
        SC_FAILF("row %s: bad row", r->name);
        return;
    }
    in.members = w.m;
    in.n_members = w.n_m;
    in.events = w.fe;
    in.n_events = w.n_e;
    in.max_domains = r->max_domains ? r->max_domains : 1;
    in.margin_s = r->margin;
    in.now_s = NOW;
    if ((rc = sc_forecast_run(&in, f)) != 0) {
        SC_FAILF("row %s: sc_forecast_run returned %d", r->name, rc);
        return;
    }
    s_render(&w, f, got, sizeof(got));
    if (strcmp(got, r->expect) != 0)
        SC_FAILF("row %s:\n    got      \"%s\"\n    expected \"%s\"", r->name, got, r->expect);
    for (size_t i = 0; i < w.n_e; i++) {
        /* a late event always says why, one that fits never */
        SC_CHECK(!f[i].made || f[i].fits == (f[i].why[0] == '\0'));
        if (want && f[i].made && !f[i].fits) {
            if (!strstr(f[i].why, want))
                SC_FAILF("row %s: why \"%s\" lacks \"%s\"", r->name, f[i].why, want);
            want = NULL; /* the first late one only */
        }
    }
}

SC_TEST(table)
{
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        s_run_row(&rows[i]);
    printf("  %zu scenarios\n", sizeof(rows) / sizeof(rows[0]));
}

/* The alert's text names the VM at risk, its p95 and runs, and the deadline. */
SC_TEST(why_names_the_vm_and_its_history)
{
    world_t w;
    sc_forecast_t f[MAX_E];
    static const row_t r = {
        .name = "why",
        .members = FD3,
        .ev = {{.id = "P1", .type = "Preempt", .nb = 30, .vms = "c0=none,c1=none"}}};
    sc_forecast_input_t in = {0};

    SC_REQUIRE(s_build(&r, &w) == 0);
    in = (sc_forecast_input_t){w.m, w.n_m, w.fe, w.n_e, 1, 60, NOW, false};
    SC_REQUIRE(sc_forecast_run(&in, f) == 0);
    SC_CHECK(strstr(f[0].why, "drained at 13:47:21 UTC (in 41 s), after NotBefore "
                              "13:47:10 UTC") != NULL);
    SC_CHECK(strstr(f[0].why, "; at risk: c0 (prepare p95 41 s of 5 runs)") != NULL);
    SC_CHECK(strstr(f[0].why, "c1") == NULL); /* 5 s: not at risk */
    SC_CHECK_INT(f[0].n_risk, 1);
    in.by_update_domain = true;
    w.fe[0] = (sc_forecast_event_t){.id = "E1", .cls = SC_CLASS_PLATFORM};
    SC_REQUIRE(sc_forecast_run(&in, f) == 0);
    SC_CHECK(f[0].fits);
}

SC_TEST(bad_input)
{
    world_t w;
    sc_forecast_t f[MAX_E];
    static const row_t r = {.name = "bad", .members = FD3, .ev = {{.id = "E1", .vms = "a0=none"}}};
    sc_forecast_input_t in;

    SC_REQUIRE(s_build(&r, &w) == 0);
    in = (sc_forecast_input_t){w.m, w.n_m, w.fe, w.n_e, 1, 0, NOW, false};
    SC_CHECK_INT(sc_forecast_run(NULL, f), -EINVAL);
    SC_CHECK_INT(sc_forecast_run(&in, NULL), -EINVAL);
    in.max_domains = 0;
    SC_CHECK_INT(sc_forecast_run(&in, f), -EINVAL);
    in.max_domains = 1;
    w.vms[0][0].member = w.n_m; /* out of range: the daemon's bug */
    SC_CHECK_INT(sc_forecast_run(&in, f), -EINVAL);
}

SC_TEST(statistics)
{
    static const struct {
        double v[24];
        size_t n;
        double median, p95;
        int rc;
    } t[] = {
        {{0}, 0, 0, 0, 0},
        {{5}, 1, 5, 5, 0},
        {{3, 1, 2}, 3, 2, 3, 0},
        {{4, 1, 3, 2}, 4, 2.5, 4, 0},
        /* 1..20: the 19th of 20 is the smallest with 95 % at or below it */
        {{20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, 20, 10.5, 19, 0},
        {{1, -1}, 2, 0, 0, -EINVAL},
        {{1, NAN}, 2, 0, 0, -EINVAL},
        {{1, INFINITY}, 2, 0, 0, -EINVAL},
    };
    sc_forecast_stat_t st;

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        int rc = sc_forecast_stat(t[i].v, t[i].n, &st);

        SC_CHECK_INT(rc, t[i].rc);
        if (rc < 0)
            continue;
        SC_CHECK_INT(st.count, t[i].n);
        if (st.median_s != t[i].median || st.p95_s != t[i].p95)
            SC_FAILF("stat %zu: median %g p95 %g, expected %g %g", i, st.median_s, st.p95_s,
                     t[i].median, t[i].p95);
    }
    SC_CHECK_INT(sc_forecast_stat(NULL, 1, &st), -EINVAL);
    SC_CHECK_INT(sc_forecast_stat(t[1].v, 1, NULL), -EINVAL);
}

/* Verdicts: a rehearsal's durations against each type's notice. */
SC_TEST(verdicts)
{
    static const sc_forecast_measured_t set[] = {
        {"vm_0", 0, true, false, 10, 2}, {"vm_1", 0, true, false, 12, 3},
        {"vm_2", 1, true, false, 20, 1}, {"vm_3", 2, true, false, 41, 5},
        {"vm_4", 2, true, false, 5, 5},
    };
    static const sc_forecast_measured_t slow[] = {
        {"vm_0", 0, true, false, 300, 10},
        {"vm_1", 1, true, false, 300, 10},
        {"vm_2", 2, true, false, 300, 10},
    };
    static const sc_forecast_measured_t failed[] = {
        {"vm_0", 0, true, false, 3, 1},
        {"vm_1", 1, false, true, 2, 1},
    };
    static const sc_forecast_measured_t alone[] = {{"vm_0", 0, true, false, 870, 1}};
    static const sc_forecast_measured_t none[] = {{"vm_0", 0, false, false, 0, 0}};
    static const struct {
        const sc_forecast_measured_t *vms;
        size_t n;
        sc_event_type_t type;
        bool no_drain;
        double impact;
        int max_domains;
        const char *scope;
        double needed;
        bool fits;
        const char *text;
    } t[] = {
        /* (12 + 3) + (20 + 1) + 41 */
        {set, 5, SC_EVENT_REBOOT, false, 0, 1, "the whole set", 77, true,
         "Reboot: the whole set drains in 1 min 17 s fault domain by fault domain; fits 15 min."},
        /* + 10 s of impact after each round but the last */
        {set, 5, SC_EVENT_REDEPLOY, false, 10, 1, "the whole set", 97, true,
         "Redeploy: the whole set drains in 1 min 37 s fault domain by fault domain; fits 10 min."},
        {set, 5, SC_EVENT_PREEMPT, false, 0, 1, "the whole set", 41, false,
         "Preempt: the slowest prepare, vm_3's, took 41 s; does not fit 30 s."},
        {set + 3, 1, SC_EVENT_PREEMPT, false, 0, 1, "vm_3", 41, false,
         "Preempt: vm_3's prepare took 41 s; does not fit 30 s."},
        {set, 5, SC_EVENT_TERMINATE, false, 0, 1, "the whole set", 41, true,
         "Terminate: the slowest prepare, vm_3's, took 41 s; fits 5 min."},
        {set, 5, SC_EVENT_FREEZE, true, 0, 1, "the whole set", 0, true,
         "Freeze: approved at once, without a drain (approve-without-drain); fits 15 min."},
        {set, 2, SC_EVENT_REBOOT, false, 0, 1, "fault domain 0", 12, true,
         "Reboot: fault domain 0 drains in 12 s; fits 15 min."},
        /* 300 + 10 + 300 + 10 + 300 = 920 > 900 - 60; two at a time: 610 */
        {slow, 3, SC_EVENT_REBOOT, false, 0, 1, "the whole set", 920, false,
         "Reboot: the whole set drains in 15 min 20 s fault domain by fault domain; does not "
         "fit 15 min (NotBefore - 1 min margin); it would with max-fault-domains=2 (it is 1)."},
        {slow, 3, SC_EVENT_REBOOT, false, 0, 2, "the whole set", 610, true,
         "Reboot: the whole set drains in 10 min 10 s, 2 fault domains at a time; fits 15 min."},
        {alone, 1, SC_EVENT_REBOOT, false, 0, 1, "vm_0", 870, false,
         "Reboot: vm_0 drains in 14 min 30 s; does not fit 15 min (NotBefore - 1 min margin): "
         "vm_0's prepare alone takes 14 min 30 s."},
        {failed, 2, SC_EVENT_REBOOT, false, 0, 1, "the whole set", 3, false,
         "Reboot: vm_1's prepare failed; the event would not be approved (Azure starts it at "
         "NotBefore, undrained)."},
        {none, 1, SC_EVENT_REBOOT, false, 0, 1, "vm_0", 0, false,
         "Reboot: no prepare ran: nothing measured."},
    };
    sc_forecast_verdict_t v;

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        SC_CHECK_INT(sc_forecast_verdict(t[i].vms, t[i].n, t[i].type,
                                         sc_forecast_notice_s(t[i].type, 300), t[i].no_drain,
                                         t[i].impact, t[i].max_domains, 60, false, t[i].scope, &v),
                     0);
        if ((v.needed_s > t[i].needed ? v.needed_s - t[i].needed : t[i].needed - v.needed_s) >
                1e-9 ||
            v.fits != t[i].fits || strcmp(v.text, t[i].text) != 0)
            SC_FAILF("verdict %zu: needed %g fits %d \"%s\"\n    expected %g %d \"%s\"", i,
                     v.needed_s, v.fits, v.text, t[i].needed, t[i].fits, t[i].text);
    }
    SC_CHECK_INT(sc_forecast_verdict(set, 5, SC_EVENT_REBOOT, 900, false, 0, 0, 60, false, "x", &v),
                 -EINVAL);
}

SC_TEST(notices_and_durations)
{
    static const struct {
        double s;
        const char *text;
    } d[] = {{0, "0.0 s"},        {4.24, "4.2 s"}, {41, "41 s"},  {59.6, "1 min"},
             {250, "4 min 10 s"}, {900, "15 min"}, {3600, "1 h"}, {7500, "2 h 5 min"},
             {-3, "0.0 s"},       {NAN, "0.0 s"}};
    char buf[32];

    for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
        sc_forecast_duration(d[i].s, buf, sizeof(buf));
        if (strcmp(buf, d[i].text) != 0)
            SC_FAILF("duration %g: \"%s\", expected \"%s\"", d[i].s, buf, d[i].text);
    }
    SC_CHECK(sc_forecast_notice_s(SC_EVENT_REBOOT, 300) == 900);
    SC_CHECK(sc_forecast_notice_s(SC_EVENT_FREEZE, 300) == 900);
    SC_CHECK(sc_forecast_notice_s(SC_EVENT_REDEPLOY, 300) == 600);
    SC_CHECK(sc_forecast_notice_s(SC_EVENT_PREEMPT, 300) == 30);
    SC_CHECK(sc_forecast_notice_s(SC_EVENT_TERMINATE, 720) == 720);
    SC_CHECK(sc_forecast_notice_s(SC_EVENT_TYPE_UNKNOWN, 300) == 0);
}

int main(void)
{
    SC_RUN(table);
    SC_RUN(why_names_the_vm_and_its_history);
    SC_RUN(bad_input);
    SC_RUN(statistics);
    SC_RUN(verdicts);
    SC_RUN(notices_and_durations);
    return sc_test_done();
}
