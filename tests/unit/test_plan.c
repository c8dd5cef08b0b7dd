/* Table-driven tests of the planner (coordinator/sc_plan.h): each row is a scenario — members,
 * events with their drain and approval states, policy, time — and the exact set of actions
 * expected. Actions are rendered as "KIND args" strings, sorted and joined with "; ":
 *   PREPARE vm ev | RECOVER vm ev | APPROVE ev,ev | APPROVE_VIA vm ev,ev | ALERT code ev [vm] |
 *   MEMBER_GONE vm
 * Rows are named for the DESIGN.md table row or safety rule they check (see docs/planner.md). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "sc_plan.h"
#include "sc_test.h"

#define NOW_WALL 1000000 /* unix seconds of every scenario */
#define NOW_MS 50000000  /* monotonic ms of every scenario */
#define NB_NONE INT_MIN  /* no NotBefore ("" once Started) */
#define MAX_M 16
#define MAX_E 8

typedef struct ev_row {
    const char *id;   /* EventId */
    const char *type; /* "Reboot" when NULL */
    bool user;        /* EventSource User (else Platform) */
    bool started;     /* EventStatus Started */
    sc_reg_phase_t phase;
    sc_start_kind_t start;
    int nb;                   /* NotBefore - NOW_WALL in s; 0 = +900; NB_NONE = none */
    const char *dur;          /* DurationInSeconds, NULL = absent */
    int seen_ago_s;           /* first seen NOW - this */
    sc_approval_state_t appr; /* approval */
    int retry_in_ms;          /* FAILED: retry_at - NOW */
    const char *vms;          /* "a0=prepared,a1=none"; "^a1=..." a1 left Resources; a state
                                 may end with "/N" (attempt N, else 1 unless none) and "@MS"
                                 (retry_at = NOW + MS, may be negative) */
    const char *seen;         /* members seeing it, "a0,b0"; NULL = every member */
    bool unknown_status;      /* EventStatus "Pending": unknown to this version */
    const char *strangers;    /* names in Resources that are not members, "x8,x9" */
    bool late;                /* the forecast says its drain will not be done in time */
    bool rehearsal;           /* a rehearsal's event */
} ev_row_t;

typedef struct row {
    const char *name;          /* scenario */
    const char *members;       /* "a0:0! a1:0 b0:1- c0:2x d0:3?": name:fd, ! self, - dead,
                                * ~ never heard since our start, x gone, ? blind (its IMDS
                                * failing); "a0:0/2" fd 0, ud 2 */
    ev_row_t ev[MAX_E];        /* events (id NULL ends) */
    int max_fd;                /* 0 = default */
    const char *min_healthy;   /* NULL = default */
    bool pause;                /* policy pause */
    bool no_user_approve;      /* approve-user-events false */
    const char *without_drain; /* approve-without-drain */
    const char *expect;        /* sorted actions joined by "; " ("" = none) */
    bool by_update_domain;     /* serialise-by update_domain */
    bool by_vm;                /* serialise-by vm (auto, when the domains are hidden) */
    bool with_strangers;       /* approve-with-strangers */
} row_t;

/* ---- scenario building ------------------------------------------------------------------- */

typedef struct world {
    sc_plan_member_t m[MAX_M];
    char mname[MAX_M][16];
    size_t n_m;
    sc_event_t ev[MAX_E];
    sc_plan_event_t pe[MAX_E];
    sc_plan_vm_t vms[MAX_E][MAX_M];
    size_t seen[MAX_E][MAX_M];
    char stranger[MAX_E][MAX_M][16]; /* names of strangers */
    const char *strangers[MAX_E][MAX_M];
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
    while (*p) {
        sc_plan_member_t *m = &w->m[w->n_m];
        size_t len = strcspn(p, ":");
        char *end;

        if (w->n_m >= MAX_M || len >= sizeof(w->mname[0]) || !p[len])
            return -1;
        memcpy(w->mname[w->n_m], p, len);
        m->name = w->mname[w->n_m];
        p += len + 1;
        m->fault_domain = (int)strtol(p, &end, 10);
        m->update_domain = -1;
        if (*end == '/')
            m->update_domain = (int)strtol(end + 1, &end, 10);
        m->alive = true;
        for (p = end; *p && *p != ' '; p++) {
            if (*p == '!')
                m->is_self = true;
            else if (*p == '-')
                m->alive = false;
            else if (*p == '~')
                m->alive = false, m->unheard = true;
            else if (*p == 'x')
                m->gone = true;
            else if (*p == '?')
                m->blind = true;
            else
                return -1;
        }
        while (*p == ' ')
            p++;
        w->n_m++;
    }
    sc_policy_defaults(&w->pol);
    if (r->max_fd)
        w->pol.max_fault_domains = r->max_fd;
    if (r->min_healthy &&
        sc_policy_parse_min_healthy(r->min_healthy, &w->pol.min_healthy, &w->pol.min_healthy_pct))
        return -1;
    if (r->without_drain && sc_policy_parse_types(r->without_drain, &w->pol.approve_without_drain))
        return -1;
    w->pol.pause = r->pause;
    w->pol.approve_user_events = !r->no_user_approve;
    if (r->by_update_domain)
        w->pol.serialise_by = SC_SERIALISE_UPDATE_DOMAIN;
    if (r->by_vm)
        w->pol.serialise_by = SC_SERIALISE_VM;
    w->pol.approve_with_strangers = r->with_strangers;

    for (size_t i = 0; i < MAX_E && r->ev[i].id; i++) {
        const ev_row_t *x = &r->ev[i];
        sc_event_t *ev = &w->ev[i];
        sc_plan_event_t *pe = &w->pe[i];
        const char *type = x->type ? x->type : "Reboot";

        snprintf(ev->id, sizeof(ev->id), "%s", x->id);
        ev->type = SC_EVENT_TYPE_UNKNOWN;
        for (int t = 0; t < SC_EVENT_TYPE_MAX; t++)
            if (strcmp(sc_event_type_name((sc_event_type_t)t), type) == 0)
                ev->type = (sc_event_type_t)t;
        ev->status = x->started ? SC_EVENT_STARTED : SC_EVENT_SCHEDULED;
        if (x->unknown_status) {
            ev->status = SC_EVENT_STATUS_UNKNOWN;
            ev->status_raw = (char *)"Pending";
        }
        ev->source = x->user ? SC_EVENT_SOURCE_USER : SC_EVENT_SOURCE_PLATFORM;
        ev->has_not_before = x->nb != NB_NONE && !x->started;
        ev->not_before = NOW_WALL + (x->nb ? x->nb : 900);
        ev->not_before_raw = (char *)"(time)";
        ev->has_duration = x->dur != NULL;
        ev->duration_s = x->dur ? atoi(x->dur) : 0;
        pe->ev = ev;
        pe->phase = x->phase;
        pe->start_kind = x->start;
        pe->rehearsal = x->rehearsal;
        pe->first_seen_ms = NOW_MS - (int64_t)x->seen_ago_s * 1000;
        pe->approval = x->appr;
        pe->retry_at_ms = NOW_MS + x->retry_in_ms;
        pe->vms = w->vms[i];
        pe->seen_by = w->seen[i];
        for (const char *v = x->vms ? x->vms : ""; *v;) {
            bool dropped = *v == '^'; /* "^a1=prepared": a1 left Resources after its prepare */
            size_t len, slen, mi;
            char state[32];

            v += dropped;
            len = strcspn(v, "=");
            mi = s_member(w, v, len);

            if (mi == SIZE_MAX || !v[len])
                return -1;
            v += len + 1;
            slen = strcspn(v, ",");
            if (slen >= sizeof(state))
                return -1;
            memcpy(state, v, slen);
            state[slen] = '\0';
            w->vms[i][pe->n_vms].member = mi;
            w->vms[i][pe->n_vms].dropped = dropped;
            w->vms[i][pe->n_vms].retry_at_ms = NOW_MS;
            if (strchr(state, '@')) {
                w->vms[i][pe->n_vms].retry_at_ms =
                    NOW_MS + strtol(strchr(state, '@') + 1, NULL, 10);
                *strchr(state, '@') = '\0';
            }
            w->vms[i][pe->n_vms].attempt = strcmp(state, "none") ? 1 : 0;
            if (strchr(state, '/')) {
                w->vms[i][pe->n_vms].attempt = atoi(strchr(state, '/') + 1);
                *strchr(state, '/') = '\0';
            }
            if (sc_drain_state_from_name(state, &w->vms[i][pe->n_vms].drain) < 0)
                return -1;
            pe->n_vms++;
            v += slen;
            if (*v == ',')
                v++;
        }
        pe->forecast_late = x->late;
        pe->forecast_why = x->late ? "at risk: a0 (prepare p95 41 s of 5 runs)" : NULL;
        pe->strangers = w->strangers[i];
        for (const char *v = x->strangers ? x->strangers : ""; *v;) {
            size_t len = strcspn(v, ",");

            if (pe->n_strangers >= MAX_M || len >= sizeof(w->stranger[0][0]))
                return -1;
            memcpy(w->stranger[i][pe->n_strangers], v, len);
            w->strangers[i][pe->n_strangers] = w->stranger[i][pe->n_strangers];
            pe->n_strangers++;
            v += len;
            if (*v == ',')
                v++;
        }
        if (!x->seen) {
            for (size_t m = 0; m < w->n_m; m++)
                w->seen[i][pe->n_seen_by++] = m;
        } else {
            for (const char *v = x->seen; *v;) {
                size_t len = strcspn(v, ","), mi = s_member(w, v, len);

                if (mi == SIZE_MAX)
                    return -1;
                w->seen[i][pe->n_seen_by++] = mi;
                v += len;
                if (*v == ',')
                    v++;
            }
        }
        w->n_e++;
    }
    return 0;
}

static int s_strcmp_p(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Renders the actions as a sorted "; "-joined list into buf. */
static void s_render(const world_t *w, const sc_plan_output_t *out, char *buf, size_t len)
{
    char items[64][160];
    char *ptrs[64];
    size_t n = 0, off = 0;

    for (size_t i = 0; i < out->n_actions && n < 64; i++) {
        const sc_action_t *a = &out->actions[i];
        char *s = items[n];
        size_t so = 0;

        so += (size_t)snprintf(s, 160, "%s", sc_action_kind_name(a->kind));
        if (a->kind == SC_ACT_ALERT)
            so += (size_t)snprintf(s + so, 160 - so, " %s", sc_alert_name(a->alert));
        if (a->kind != SC_ACT_ALERT && a->member != SC_PLAN_NONE)
            so += (size_t)snprintf(s + so, 160 - so, " %s", w->mname[a->member]);
        if (a->kind != SC_ACT_MEMBER_GONE && a->event != SC_PLAN_NONE)
            so += (size_t)snprintf(s + so, 160 - so, " %s", w->ev[a->event].id);
        if (a->kind == SC_ACT_ALERT && a->member != SC_PLAN_NONE)
            so += (size_t)snprintf(s + so, 160 - so, " %s", w->mname[a->member]);
        if (a->kind == SC_ACT_PREPARE && a->attempt != 1)
            so += (size_t)snprintf(s + so, 160 - so, " #%d", a->attempt);
        if (a->n_events) {
            /* event lists in id order */
            const char *ids[MAX_E];

            for (size_t k = 0; k < a->n_events && k < MAX_E; k++)
                ids[k] = w->ev[a->events[k]].id;
            qsort(ids, a->n_events, sizeof(ids[0]), s_strcmp_p);
            for (size_t k = 0; k < a->n_events && k < MAX_E; k++)
                so += (size_t)snprintf(s + so, 160 - so, "%s%s", k ? "," : " ", ids[k]);
        }
        ptrs[n++] = s;
    }
    qsort(ptrs, n, sizeof(ptrs[0]), s_strcmp_p);
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? "; " : "", ptrs[i]);
}

/* ---- the table --------------------------------------------------------------------------- */

#define FD2 "a0:0! a1:0 b0:1 b1:1"
#define FD3 "a0:0! a1:0 b0:1 b1:1 c0:2 c1:2"
/* update domains across fault domains, as in an availability set: UD 0 = {a0, a1} spans
 * FD 0 and 1, UD 1 = {b0, b1} too */
#define UD2 "a0:0/0! a1:1/0 b0:0/1 b1:1/1"

static const row_t rows[] = {
    /* DESIGN table: short Freeze -> approve at once, no drain */
    {"freeze_short_approved_undrained",
     FD2,
     {{.id = "F1", .type = "Freeze", .dur = "5", .vms = "a0=none,a1=none"}},
     .expect = "APPROVE F1"},
    {"freeze_zero_duration_approved",
     FD2,
     {{.id = "F1", .type = "Freeze", .dur = "0", .vms = "b0=none"}},
     .expect = "APPROVE F1"},
    {"freeze_at_threshold_is_drained",
     FD2,
     {{.id = "F1", .type = "Freeze", .dur = "9", .vms = "b0=none"}},
     .expect = "PREPARE b0 F1"},
    {"freeze_unknown_duration_is_drained",
     FD2,
     {{.id = "F1", .type = "Freeze", .dur = "-1", .vms = "b0=none"}},
     .expect = "PREPARE b0 F1"},
    {"short_freeze_not_blocked_by_busy_fd",
     FD2,
     {{.id = "E1", .vms = "a0=preparing"},
      {.id = "F1", .type = "Freeze", .dur = "3", .vms = "b0=none"}},
     .expect = "APPROVE F1"},
    {"approve_without_drain_type",
     FD2,
     {{.id = "R1", .vms = "b0=none"}},
     .without_drain = "Reboot",
     .expect = "APPROVE R1"},
    /* DESIGN table: Reboot/Redeploy/long Freeze queued by NotBefore, FD turn, approve drained */
    {"reboot_drain_its_fd",
     FD2,
     {{.id = "E1", .vms = "a0=none,a1=none"}},
     .expect = "PREPARE a0 E1; PREPARE a1 E1"},
    {"redeploy_long_freeze_drained",
     FD3,
     {{.id = "D1", .type = "Redeploy", .vms = "a0=none"},
      {.id = "F1", .type = "Freeze", .dur = "30", .vms = "a1=none"}},
     .expect = "PREPARE a0 D1; PREPARE a1 F1"},
    {"reboot_partially_prepared_waits",
     FD2,
     {{.id = "E1", .vms = "a0=prepared,a1=preparing"}},
     .expect = ""},
    {"reboot_all_prepared_approved",
     FD2,
     {{.id = "E1", .vms = "a0=prepared,a1=prepared"}},
     .expect = "APPROVE E1"},
    /* an interrupted prepare is final (the agent never re-runs it): no order loop, no
     * approval, an alert; recovered when the event is over */
    {"interrupted_prepare_blocks_approval_rolled_back",
     FD2,
     {{.id = "E1", .vms = "a0=prepared,a1=prepare_interrupted"}},
     .expect = "ALERT prepare_failed E1 a1; RECOVER a0 E1; RECOVER a1 E1"},
    {"interrupted_prepare_recovered_when_over",
     FD2,
     {{.id = "E1",
       .started = true,
       .phase = SC_REG_ENDED,
       .vms = "a0=prepared,a1=prepare_interrupted"}},
     .expect = "RECOVER a0 E1; RECOVER a1 E1"},
    /* rule 2: two FDs with events at once: one waits (earliest NotBefore first) */
    {"two_fds_one_waits",
     FD2,
     {{.id = "E1", .nb = 600, .vms = "a0=none,a1=none"},
      {.id = "E2", .nb = 900, .vms = "b0=none,b1=none"}},
     .expect = "PREPARE a0 E1; PREPARE a1 E1"},
    {"two_fds_earliest_notbefore_first",
     FD2,
     {{.id = "E1", .nb = 900, .vms = "a0=none,a1=none"},
      {.id = "E2", .nb = 300, .vms = "b0=none,b1=none"}},
     .expect = "PREPARE b0 E2; PREPARE b1 E2"},
    {"second_fd_waits_while_first_drains",
     FD2,
     {{.id = "E1", .vms = "a0=prepared,a1=preparing"},
      {.id = "E2", .nb = 100, .vms = "b0=none,b1=none"}},
     .expect = ""},
    {"second_fd_waits_for_recover",
     FD2,
     {{.id = "E1",
       .phase = SC_REG_ENDED,
       .started = true,
       .start = SC_START_APPROVED,
       .appr = SC_APPROVAL_APPROVED,
       .vms = "a0=recovering,a1=recovered"},
      {.id = "E2", .vms = "b0=none,b1=none"}},
     .expect = ""},
    {"second_fd_goes_after_recovered",
     FD2,
     {{.id = "E1",
       .phase = SC_REG_ENDED,
       .started = true,
       .start = SC_START_APPROVED,
       .appr = SC_APPROVAL_APPROVED,
       .vms = "a0=recovered,a1=recovered"},
      {.id = "E2", .vms = "b0=none,b1=none"}},
     .expect = "PREPARE b0 E2; PREPARE b1 E2"},
    {"same_fd_events_drain_together",
     FD2,
     {{.id = "E1", .vms = "a0=preparing"}, {.id = "E2", .vms = "a1=none"}},
     .expect = "PREPARE a1 E2"},
    {"max_fault_domains_two",
     FD3,
     {{.id = "E1", .nb = 100, .vms = "a0=none"},
      {.id = "E2", .nb = 200, .vms = "b0=none"},
      {.id = "E3", .nb = 300, .vms = "c0=none"}},
     .max_fd = 2,
     .expect = "PREPARE a0 E1; PREPARE b0 E2"},
    {"impacted_counts_as_busy",
     FD2,
     {{.id = "E1",
       .started = true,
       .start = SC_START_APPROVED,
       .appr = SC_APPROVAL_APPROVED,
       .nb = NB_NONE,
       .vms = "a0=prepared"},
      {.id = "E2", .vms = "b0=none"}},
     .expect = ""},
    {"unknown_fd_is_its_own_domain",
     "a0:0! u0:-1",
     {{.id = "E1", .vms = "a0=preparing"}, {.id = "E2", .vms = "u0=none"}},
     .expect = ""},
    {"event_spanning_fds_alone_when_quiet",
     FD2,
     {{.id = "E1", .vms = "a0=none,b0=none"}},
     .expect = "ALERT too_wide E1; PREPARE a0 E1; PREPARE b0 E1"},
    {"event_spanning_fds_waits_when_busy",
     FD2,
     {{.id = "E1", .vms = "a1=preparing"}, {.id = "E2", .vms = "a0=none,b0=none"}},
     .expect = ""},
    /* rule 2 + forced: host failure in FD 1 while FD 0 is drained by us: nothing new starts */
    {"host_failure_while_drained_nothing_new",
     FD3,
     {{.id = "E1", .nb = 300, .vms = "a0=prepared,a1=prepared"},
      {.id = "H1",
       .started = true,
       .start = SC_START_DIRECT,
       .nb = NB_NONE,
       .vms = "b0=none,b1=none"},
      {.id = "E3", .nb = 400, .vms = "c0=none,c1=none"}},
     .expect = "ALERT forced H1; APPROVE E1"},
    {"host_failure_first_fd_back_still_waits",
     FD3,
     {{.id = "E1",
       .phase = SC_REG_ENDED,
       .started = true,
       .start = SC_START_APPROVED,
       .appr = SC_APPROVAL_APPROVED,
       .vms = "a0=recovered,a1=recovered"},
      {.id = "H1",
       .started = true,
       .start = SC_START_DIRECT,
       .nb = NB_NONE,
       .vms = "b0=none,b1=none"},
      {.id = "E3", .vms = "c0=none,c1=none"}},
     .expect = "ALERT forced H1"},
    {"host_failure_ended_recovers_impacted",
     FD3,
     {{.id = "H1",
       .phase = SC_REG_ENDED,
       .started = true,
       .start = SC_START_DIRECT,
       .nb = NB_NONE,
       .vms = "b0=none,b1=none"},
      {.id = "E3", .vms = "c0=none,c1=none"}},
     .expect = "RECOVER b0 H1; RECOVER b1 H1"},
    {"host_failure_both_back_next_starts",
     FD3,
     {{.id = "H1",
       .phase = SC_REG_ENDED,
       .started = true,
       .start = SC_START_DIRECT,
       .nb = NB_NONE,
       .vms = "b0=recovered,b1=recovered"},
      {.id = "E3", .vms = "c0=none,c1=none"}},
     .expect = "PREPARE c0 E3; PREPARE c1 E3"},
    {"forced_notbefore_passed_while_preparing",
     FD2,
     {{.id = "E1",
       .started = true,
       .start = SC_START_FORCED,
       .nb = NB_NONE,
       .vms = "a0=prepared,a1=preparing"},
      {.id = "E2", .vms = "b0=none"}},
     .expect = "ALERT forced E1"},
    /* rule 4 + hook failure: no approval, alert, left to NotBefore, cluster not stuck */
    {"hook_failed_no_approval_rolled_back",
     FD2,
     {{.id = "E1", .vms = "a0=prepared,a1=prepare_failed"}, {.id = "E2", .vms = "b0=none"}},
     .expect = "ALERT prepare_failed E1 a1; RECOVER a0 E1; RECOVER a1 E1"},
    /* issue 11: an approval made (or in flight) is irreversible while the event is listed: a
     * prepare that fails late (an interrupted report after the intent) rolls nothing back —
     * no VM of it recovered, its fault domain not released to E2 */
    {"hook_failed_after_approval_no_rollback",
     FD2,
     {{.id = "E1", .appr = SC_APPROVAL_INTENT, .vms = "a0=prepared,a1=prepare_failed"},
      {.id = "E2", .vms = "b0=none"}},
     .expect = ""},
    {"hook_failed_after_approved_no_rollback",
     FD2,
     {{.id = "E1", .appr = SC_APPROVAL_APPROVED, .vms = "a0=prepared,a1=prepare_interrupted"},
      {.id = "E2", .vms = "b0=none"}},
     .expect = ""},
    /* issue 20, finding 4: an approval whose POST may still land (unknown: a client timeout,
     * a delegate that never answered) blocks rollback exactly as an intent does — rolled
     * back while it was "failed", a late POST started the event on VMs back in service */
    {"hook_failed_approval_unknown_no_rollback",
     FD2,
     {{.id = "E1", .appr = SC_APPROVAL_UNKNOWN, .vms = "a0=prepared,a1=prepare_failed"},
      {.id = "E2", .vms = "b0=none"}},
     .expect = "ALERT prepare_failed E1 a1"},
    {"hook_failed_approval_failed_rolled_back",
     FD2,
     {{.id = "E1", .appr = SC_APPROVAL_FAILED, .vms = "a0=prepared,a1=prepare_failed"},
      {.id = "E2", .vms = "b0=none"}},
     .expect = "ALERT prepare_failed E1 a1; RECOVER a0 E1; RECOVER a1 E1"},
    {"approval_unknown_posted_again_after_retry_time",
     FD2,
     {{.id = "E1", .appr = SC_APPROVAL_UNKNOWN, .retry_in_ms = -1, .vms = "a0=prepared"}},
     .expect = "APPROVE E1"},
    {"approval_unknown_waits_for_retry_time",
     FD2,
     {{.id = "E1", .appr = SC_APPROVAL_UNKNOWN, .retry_in_ms = 500, .vms = "a0=prepared"}},
     .expect = ""},
    {"approval_unknown_keeps_its_domain_busy",
     FD2,
     {{.id = "E1", .appr = SC_APPROVAL_UNKNOWN, .retry_in_ms = 500, .vms = "a0=prepared"},
      {.id = "E2", .vms = "b0=none"}},
     .expect = ""},
    {"hook_failed_event_forced_recovers",
     FD2,
     {{.id = "E1",
       .phase = SC_REG_ENDED,
       .started = true,
       .start = SC_START_FORCED,
       .nb = NB_NONE,
       .vms = "a0=prepared,a1=prepare_failed"},
      {.id = "E2", .vms = "b0=none"}},
     .expect = "RECOVER a0 E1; RECOVER a1 E1"},
    {"hook_failed_then_next_fd_proceeds",
     FD2,
     {{.id = "E1",
       .phase = SC_REG_ENDED,
       .started = true,
       .start = SC_START_FORCED,
       .nb = NB_NONE,
       .vms = "a0=recovered,a1=recovered"},
      {.id = "E2", .vms = "b0=none"}},
     .expect = "PREPARE b0 E2"},
    {"recover_failed_alerts_not_blocks",
     FD2,
     {{.id = "E1",
       .phase = SC_REG_ENDED,
       .started = true,
       .start = SC_START_APPROVED,
       .appr = SC_APPROVAL_APPROVED,
       .vms = "a0=recover_failed,a1=recovered"},
      {.id = "E2", .vms = "b0=none"}},
     .expect = "ALERT recover_failed E1 a0; PREPARE b0 E2"},
    /* rule 4: deadlines */
    {"deadline_too_close_when_turn_comes",
     FD2,
     {{.id = "E1", .nb = 30, .vms = "a0=none"}},
     .expect = "ALERT deadline E1; PREPARE a0 E1"},
    {"deadline_hook_still_running",
     FD2,
     {{.id = "E1", .nb = 50, .vms = "a0=prepared,a1=preparing"}},
     .expect = "ALERT deadline E1"},
    {"deadline_passed_while_queued",
     FD2,
     {{.id = "E1", .nb = 300, .vms = "a0=preparing"}, {.id = "E2", .nb = 40, .vms = "b0=none"}},
     .expect = "ALERT deadline E2"},
    /* nemesis seed 11: an event left to Azure (past NotBefore - margin, its VM rolled back and
     * not due again yet) keeps its domain: Azure may start it any moment, so no event after it
     * in the queue starts draining another domain (FD 0 was ordered 0.4 s before FD 2's event
     * went at NotBefore: rule 2) */
    {"deadline_passed_reserves_its_domain",
     FD2,
     {{.id = "E1", .nb = 40, .vms = "b0=rolled_back/1@5000"},
      {.id = "E2", .nb = 300, .vms = "a0=none"}},
     .expect = ""},
    /* ... but two events past their deadlines never block each other (deploy_package, with the
     * first version of the reservation): the first in the queue drains best effort, the second
     * waits behind its busy domain */
    {"deadlines_passed_first_in_queue_drains",
     FD2,
     {{.id = "E2", .nb = 50, .vms = "a0=none"}, {.id = "E1", .nb = 40, .vms = "b0=none"}},
     .expect = "ALERT deadline E1; ALERT deadline E2; PREPARE b0 E1"},
    /* nemesis seeds 68 and 93: past NotBefore, no live member sees G1 (its VM a1 alive, its
     * fresh document without it; its last witness b0 dead): it started or is over, the
     * registry only waits to confirm it. Not drained, its domain not reserved: E2 goes. Seen
     * failing without it: "PREPARE a1 G1", E2 queued behind FD 0 for confirm_ms (60 s). */
    {"past_not_before_unseen_not_drained_nor_reserved",
     "a0:0! a1:0 b0:1- b1:1",
     {{.id = "G1", .nb = -15, .vms = "a1=none", .seen = "b0"},
      {.id = "E2", .nb = 300, .vms = "b1=none"}},
     .expect = "ALERT deadline G1; PREPARE b1 E2"},
    /* ... but a VM of it that is not alive may be down for it: its domain stays reserved */
    {"past_not_before_unseen_dead_vm_keeps_its_domain",
     "a0:0! a1:0- b0:1- b1:1",
     {{.id = "G1", .nb = -15, .vms = "a1=none", .seen = "b0"},
      {.id = "E2", .nb = 300, .vms = "b1=none"}},
     .expect = "ALERT member_down G1 a1"},
    /* ... and one a live member sees is drained best effort, as before */
    {"past_not_before_seen_drained_best_effort",
     "a0:0! a1:0 b0:1 b1:1",
     {{.id = "G1", .nb = -15, .vms = "a1=none", .seen = "a1"},
      {.id = "E2", .nb = 300, .vms = "b1=none"}},
     .expect = "ALERT deadline G1; PREPARE a1 G1"},
    {"deadline_margin_not_yet_reached",
     FD2,
     {{.id = "E1", .nb = 61, .vms = "a0=preparing"}},
     .expect = ""},
    {"deadline_drained_in_time_approved",
     FD2,
     {{.id = "E1", .nb = 20, .vms = "a0=prepared"}},
     .expect = "APPROVE E1"},
    /* DESIGN table: User events */
    {"user_reboot_drained_then_approved",
     FD2,
     {{.id = "U1", .user = true, .vms = "a0=prepared"}},
     .expect = "APPROVE U1"},
    {"user_reboot_during_rollout_waits_within_deadline",
     FD2,
     {{.id = "P1", .vms = "a0=preparing,a1=prepared"},
      {.id = "U1", .user = true, .seen_ago_s = 10, .vms = "b0=none"}},
     .expect = ""},
    {"user_reboot_during_rollout_blocked_at_deadline",
     FD2,
     {{.id = "P1", .vms = "a0=preparing,a1=prepared"},
      {.id = "U1", .user = true, .seen_ago_s = 121, .vms = "b0=none"}},
     .expect = "ALERT user_deadline_blocked U1"},
    {"user_hook_slow_approved_at_deadline",
     FD2,
     {{.id = "U1", .user = true, .seen_ago_s = 200, .vms = "a0=preparing"}},
     .expect = "ALERT user_deadline U1; APPROVE U1"},
    {"user_events_not_approved_when_off",
     FD2,
     {{.id = "U1", .user = true, .seen_ago_s = 500, .vms = "a0=prepared"}},
     .no_user_approve = true,
     .expect = ""},
    /* DESIGN table: cancelled -> recover its VMs */
    {"cancelled_recovers_prepared",
     FD2,
     {{.id = "E1", .phase = SC_REG_CANCELLED, .vms = "a0=prepared,a1=preparing"}},
     .expect = "RECOVER a0 E1; RECOVER a1 E1"},
    {"cancelled_untouched_vms_not_recovered",
     FD2,
     {{.id = "E1", .phase = SC_REG_CANCELLED, .vms = "a0=prepare_ordered,a1=none"}},
     .expect = "RECOVER a0 E1"},
    {"cancelled_short_freeze_nothing",
     FD2,
     {{.id = "F1", .type = "Freeze", .dur = "2", .phase = SC_REG_CANCELLED, .vms = "a0=none"}},
     .expect = ""},
    {"recover_in_flight_not_reordered",
     FD2,
     {{.id = "E1",
       .phase = SC_REG_ENDED,
       .started = true,
       .start = SC_START_APPROVED,
       .vms = "a0=recover_ordered,a1=recovering"}},
     .expect = ""},
    {"recover_dead_member_alerts",
     "a0:0! a1:0-",
     {{.id = "E1",
       .phase = SC_REG_ENDED,
       .started = true,
       .start = SC_START_APPROVED,
       .vms = "a0=prepared,a1=prepared"}},
     .expect = "ALERT member_down E1 a1; RECOVER a0 E1"},
    /* DESIGN table: Preempt / Terminate: drain at once, approve when drained, member leaves */
    {"preempt_drains_at_once_despite_busy_fd",
     FD2,
     {{.id = "E1", .vms = "a0=preparing,a1=preparing"},
      {.id = "P1", .type = "Preempt", .nb = 30, .vms = "b0=none"}},
     .expect = "PREPARE b0 P1"},
    /* T1 has the later NotBefore yet goes first; its FD is then busy, so E1 waits */
    {"terminate_jumps_queue",
     FD2,
     {{.id = "E1", .nb = 100, .vms = "a0=none"},
      {.id = "T1", .type = "Terminate", .nb = 600, .vms = "b0=none"}},
     .expect = "PREPARE b0 T1"},
    {"preempt_drained_approved",
     FD2,
     {{.id = "P1", .type = "Preempt", .nb = 20, .vms = "b0=prepared"}},
     .expect = "APPROVE P1"},
    {"preempt_ended_member_gone",
     FD2,
     {{.id = "P1",
       .type = "Preempt",
       .phase = SC_REG_ENDED,
       .started = true,
       .start = SC_START_APPROVED,
       .vms = "b0=prepared"}},
     .expect = "MEMBER_GONE b0"},
    {"terminate_ended_members_gone",
     FD2,
     {{.id = "T1",
       .type = "Terminate",
       .phase = SC_REG_ENDED,
       .started = true,
       .start = SC_START_FORCED,
       .vms = "b0=prepared,b1=none"}},
     .expect = "MEMBER_GONE b0; MEMBER_GONE b1"},
    /* nemesis seed 99: a started (approved) Preempt decided "cancelled" by a leader whose
     * witnesses' views differed: its VM was deleted all the same; it leaves, and is not owed a
     * recover that would keep its fault domain busy for good (the planner before: "RECOVER b0
     * P1", E2 queued behind it) */
    {"preempt_started_then_cancelled_member_gone",
     FD2,
     {{.id = "P1",
       .type = "Preempt",
       .phase = SC_REG_CANCELLED,
       .started = true,
       .start = SC_START_APPROVED,
       .appr = SC_APPROVAL_APPROVED,
       .vms = "b0=prepared"},
      {.id = "E2", .vms = "a0=none"}},
     .expect = "MEMBER_GONE b0; PREPARE a0 E2"},
    /* ... but a rehearsal's Preempt always ends cancelled, started or not: its VM is not going
     * away and is recovered (coord_rehearse, with the rule above and no exception for it) */
    {"rehearsal_preempt_started_cancelled_recovers",
     FD2,
     {{.id = "P1",
       .type = "Preempt",
       .phase = SC_REG_CANCELLED,
       .started = true,
       .start = SC_START_FORCED,
       .rehearsal = true,
       .vms = "b0=prepared"}},
     .expect = "RECOVER b0 P1"},
    {"terminate_cancelled_recovers",
     FD2,
     {{.id = "T1", .type = "Terminate", .phase = SC_REG_CANCELLED, .vms = "b0=prepared"}},
     .expect = "RECOVER b0 T1"},
    {"preempt_during_pause_still_drained",
     FD2,
     {{.id = "P1", .type = "Preempt", .vms = "b0=none"}},
     .pause = true,
     .expect = "PREPARE b0 P1"},
    {"gone_member_ignored",
     "a0:0! a1:0x b0:1",
     {{.id = "E1", .vms = "a0=prepared,a1=none"}},
     .expect = "APPROVE E1"},
    /* rule 2: min_healthy */
    {"min_healthy_holds_drain_back",
     FD2,
     {{.id = "E1", .vms = "a0=none,a1=none"}},
     .min_healthy = "3",
     .expect = ""},
    {"min_healthy_allows_drain",
     FD2,
     {{.id = "E1", .vms = "a0=none,a1=none"}},
     .min_healthy = "2",
     .expect = "PREPARE a0 E1; PREPARE a1 E1"},
    {"min_healthy_percent_holds_back",
     FD2,
     {{.id = "E1", .vms = "a0=none,a1=none"}},
     .min_healthy = "75%",
     .expect = ""},
    {"min_healthy_counts_dead_as_unhealthy",
     "a0:0! a1:0 b0:1 b1:1-",
     {{.id = "E1", .vms = "a0=none"}},
     .min_healthy = "3",
     .expect = ""},
    /* rule 1: one approval per event, one POST per round */
    {"one_post_for_several_ready_events",
     FD2,
     {{.id = "E1", .vms = "a0=prepared"},
      {.id = "E2", .vms = "a1=prepared"},
      {.id = "F1", .type = "Freeze", .dur = "1", .vms = "b0=none"}},
     .expect = "APPROVE E1,E2,F1"},
    {"no_reapproval_after_200",
     FD2,
     {{.id = "E1", .appr = SC_APPROVAL_APPROVED, .vms = "a0=prepared,a1=prepared"}},
     .expect = ""},
    {"no_reapproval_while_in_flight",
     FD2,
     {{.id = "E1", .appr = SC_APPROVAL_INTENT, .vms = "a0=prepared"}},
     .expect = ""},
    {"no_approval_once_started",
     FD2,
     {{.id = "E1",
       .started = true,
       .start = SC_START_APPROVED,
       .appr = SC_APPROVAL_FAILED,
       .retry_in_ms = -5,
       .nb = NB_NONE,
       .vms = "a0=prepared"}},
     .expect = ""},
    {"failed_post_waits_for_retry_time",
     FD2,
     {{.id = "E1", .appr = SC_APPROVAL_FAILED, .retry_in_ms = 500, .vms = "a0=prepared"}},
     .expect = ""},
    {"failed_post_retried_after_retry_time",
     FD2,
     {{.id = "E1", .appr = SC_APPROVAL_FAILED, .retry_in_ms = -1, .vms = "a0=prepared"}},
     .expect = "APPROVE E1"},
    {"not_needed_never_approved",
     FD2,
     {{.id = "E1", .appr = SC_APPROVAL_NOT_NEEDED, .vms = "a0=prepared"}},
     .expect = ""},
    {"dead_undrained_vm_skipped",
     "a0:0! a1:0- b0:1",
     {{.id = "E1", .vms = "a0=prepared,a1=none"}},
     .expect = "ALERT member_down E1 a1; APPROVE E1"},
    /* nemesis seed 11 (a members roll): a leader restarted with the new list never heard the
     * VMs whose agents still reported to the old list's voters; once its start grace was
     * over it took them for dead, skipped them and approved the event: they were rebooted
     * serving. A member not heard since the start is not known to be down: it is waited for */
    {"unheard_undrained_vm_waited_for",
     "a0:0! a1:0~ b0:1",
     {{.id = "E1", .vms = "a0=prepared,a1=none"}},
     .expect = "ALERT member_down E1 a1"},
    {"dead_preparing_vm_waited_for",
     "a0:0! a1:0- b0:1",
     {{.id = "E1", .vms = "a0=prepared,a1=preparing"}},
     .expect = ""},
    {"event_without_members_left_alone", FD2, {{.id = "E1", .vms = ""}}, .expect = ""},
    /* APPROVE_VIA: the leader's own member does not see the event (GPU one-FD case) */
    {"approve_via_affected_vm",
     FD2,
     {{.id = "G1", .vms = "b0=prepared", .seen = "b0"}},
     .expect = "APPROVE_VIA b0 G1"},
    {"approve_via_grouped_and_self_separate",
     FD2,
     {{.id = "G1", .vms = "b0=prepared", .seen = "b0"},
      {.id = "G2", .vms = "b1=prepared", .seen = "b0,b1"},
      {.id = "E3", .vms = "b0=prepared", .seen = "a0,b0"}},
     .expect = "APPROVE E3; APPROVE_VIA b0 G1; APPROVE_VIA b1 G2"},
    /* our own IMDS is failing (blind): a member whose IMDS answers approves, one in Resources
     * first; ourselves only when every other witness is blind too */
    {"approve_via_when_self_blind",
     "a0:0!? a1:0 b0:1 b1:1",
     {{.id = "E1", .vms = "b1=prepared"}},
     .expect = "APPROVE_VIA b1 E1"},
    {"approve_via_when_self_blind_not_a_blind_vm",
     "a0:0!? a1:0 b0:1? b1:1",
     {{.id = "E1", .vms = "b0=prepared"}},
     .expect = "APPROVE_VIA a1 E1"},
    {"approve_self_when_every_witness_blind",
     "a0:0!? b0:1?",
     {{.id = "E1", .vms = "b0=prepared"}},
     .expect = "APPROVE E1"},
    {"own_only_event_still_goes_to_its_vm",
     FD2,
     {{.id = "G1", .vms = "b0=prepared", .seen = "b0"}},
     .expect = "APPROVE_VIA b0 G1"},
    {"no_live_member_sees_it",
     "a0:0! b0:1-",
     {{.id = "G1", .vms = "a0=prepared", .seen = "b0"}},
     .expect = "ALERT no_approver G1"},
    /* pause */
    {"pause_no_approval_no_new_drain",
     FD2,
     {{.id = "E1", .vms = "a0=prepared"},
      {.id = "F1", .type = "Freeze", .dur = "1", .vms = "a1=none"},
      {.id = "E2", .vms = "a1=none"}},
     .pause = true,
     .expect = ""},
    {"pause_still_recovers",
     FD2,
     {{.id = "E1", .phase = SC_REG_CANCELLED, .vms = "a0=prepared"}},
     .pause = true,
     .expect = "RECOVER a0 E1"},
    /* Azure shrank Resources after a prepare: the dropped VM is not waited for once its
     * prepare reported (dropped_*_blocks_approval below: until then it is), stays busy, is
     * recovered when the event is over (not at once), and is not evicted with the rest. */
    {"shrunk_dropped_vm_not_waited_for",
     FD2,
     {{.id = "E1", .vms = "a0=prepared,^a1=prepared"}},
     .expect = "APPROVE E1"},
    {"shrunk_dropped_vm_keeps_its_fd_busy",
     FD2,
     {{.id = "E1", .appr = SC_APPROVAL_APPROVED, .vms = "a0=prepared,^a1=prepared"},
      {.id = "E2", .vms = "b0=none"}},
     .expect = ""},
    {"shrunk_dropped_vm_not_recovered_before_the_end",
     FD2,
     {{.id = "E1",
       .started = true,
       .start = SC_START_APPROVED,
       .appr = SC_APPROVAL_APPROVED,
       .nb = NB_NONE,
       .vms = "^a1=prepared"},
      {.id = "E2", .vms = "b0=none"}},
     .expect = ""},
    {"shrunk_dropped_vm_recovered_when_ended",
     FD2,
     {{.id = "E1",
       .phase = SC_REG_ENDED,
       .started = true,
       .start = SC_START_APPROVED,
       .appr = SC_APPROVAL_APPROVED,
       .vms = "a0=none,^a1=prepared"}},
     .expect = "RECOVER a0 E1; RECOVER a1 E1"},
    {"shrunk_dropped_vm_recovered_when_cancelled",
     FD2,
     {{.id = "E1", .phase = SC_REG_CANCELLED, .vms = "a0=none,^a1=prepare_failed"}},
     .expect = "RECOVER a1 E1"},
    {"shrunk_preempt_dropped_vm_recovered_not_gone",
     FD2,
     {{.id = "P1",
       .type = "Preempt",
       .phase = SC_REG_ENDED,
       .started = true,
       .start = SC_START_APPROVED,
       .vms = "b0=prepared,^b1=prepared"}},
     .expect = "MEMBER_GONE b0; RECOVER b1 P1"},
    /* issue 9 case 2: an event whose class became "no drain" (a Freeze whose duration went
     * from -1 to 5, or the policy across a restart) still recovers what it drained, and the
     * drained VMs keep their fault domain busy until then */
    {"no_drain_now_recovers_what_was_drained",
     FD2,
     {{.id = "E1",
       .type = "Freeze",
       .dur = "5",
       .phase = SC_REG_ENDED,
       .started = true,
       .start = SC_START_APPROVED,
       .appr = SC_APPROVAL_APPROVED,
       .vms = "a0=prepared,a1=none"}},
     .expect = "RECOVER a0 E1"},
    {"no_drain_now_drained_vm_keeps_its_fd_busy",
     FD2,
     {{.id = "E1", .type = "Freeze", .dur = "5", .vms = "a0=prepared,a1=none"},
      {.id = "E2", .vms = "b0=none"}},
     .expect = "APPROVE E1"},
    {"no_drain_now_cancelled_recovers_preparing",
     FD2,
     {{.id = "E1",
       .type = "Freeze",
       .dur = "5",
       .phase = SC_REG_CANCELLED,
       .vms = "a0=preparing,a1=none"}},
     .expect = "RECOVER a0 E1"},
    /* issue 9 case 5: an event's own drained domain never blocks its new VM in another one */
    {"grown_into_another_fd_drains_alone",
     FD2,
     {{.id = "E1", .vms = "a0=prepared,b0=none"}},
     .expect = "ALERT too_wide E1; PREPARE b0 E1"},
    {"grown_into_another_fd_waits_for_other_events",
     FD3,
     {{.id = "E1", .vms = "a0=prepared,b0=none"}, {.id = "E2", .vms = "c0=preparing"}},
     .expect = ""},
    {"grown_into_another_fd_within_max_fault_domains",
     FD3,
     {{.id = "E1", .vms = "a0=prepared,b0=none"}, {.id = "E2", .vms = "c0=none"}},
     .max_fd = 2,
     .expect = "PREPARE b0 E1"},
    {"grown_in_its_own_fd",
     FD2,
     {{.id = "E1", .vms = "a0=prepared,a1=none"}},
     .expect = "PREPARE a1 E1"},
    /* issue 9 case 6: a failed prepare is rolled back (its FD released), retried with backoff */
    {"rollback_waits_for_vms_still_preparing",
     FD2,
     {{.id = "E1", .vms = "a0=preparing,a1=prepare_failed"}},
     .expect = "ALERT prepare_failed E1 a1; RECOVER a1 E1"},
    {"rolled_back_releases_its_fd",
     FD2,
     {{.id = "E1", .vms = "a0=rolled_back/1@30000,a1=rolled_back/1@30000"},
      {.id = "E2", .nb = 1000, .vms = "b0=none"}},
     .expect = "PREPARE b0 E2"},
    {"rolling_back_holds_its_fd",
     FD2,
     {{.id = "E1", .vms = "a0=recovering,a1=rolled_back/1@30000"},
      {.id = "E2", .nb = 1000, .vms = "b0=none"}},
     .expect = ""},
    {"rolled_back_tried_again_when_due",
     FD2,
     {{.id = "E1", .vms = "a0=rolled_back/1@-1,a1=rolled_back/1@-1"}},
     .expect = "ALERT drain_retry E1 a0; ALERT drain_retry E1 a1; PREPARE a0 E1 #2; "
               "PREPARE a1 E1 #2"},
    {"rolled_back_not_before_every_vm_is_due",
     FD2,
     {{.id = "E1", .vms = "a0=rolled_back/1@-1,a1=rolled_back/1@500"}},
     .expect = ""},
    {"rolled_back_retry_queued_behind_other_fd",
     FD2,
     {{.id = "E1", .vms = "a0=rolled_back/1@-1,a1=rolled_back/1@-1"},
      {.id = "E2", .vms = "b0=prepared"}},
     .expect = "APPROVE E2"},
    {"rolled_back_no_attempt_left_left_to_azure",
     FD2,
     {{.id = "E1", .vms = "a0=rolled_back/3@-1,a1=rolled_back/3@-1"},
      {.id = "E2", .nb = 1000, .vms = "b0=none"}},
     .expect = "PREPARE b0 E2"},
    {"rolled_back_paused_not_tried_again",
     FD2,
     {{.id = "E1", .vms = "a0=rolled_back/1@-1,a1=rolled_back/1@-1"}},
     .pause = true,
     .expect = ""},
    {"rolled_back_then_forced_recovered_when_ended",
     FD2,
     {{.id = "E1",
       .phase = SC_REG_ENDED,
       .started = true,
       .start = SC_START_FORCED,
       .nb = NB_NONE,
       .vms = "a0=rolled_back/1,a1=rolled_back/2"}},
     .expect = "RECOVER a0 E1; RECOVER a1 E1"},
    {"rollback_failed_not_tried_again",
     FD2,
     {{.id = "E1", .vms = "a0=recover_failed/1,a1=rolled_back/1@-1"},
      {.id = "E2", .nb = 1000, .vms = "b0=none"}},
     .expect = "ALERT recover_failed E1 a0; PREPARE b0 E2"},
    {"rolled_back_cancelled_is_done",
     FD2,
     {{.id = "E1", .phase = SC_REG_CANCELLED, .vms = "a0=rolled_back/1,a1=none"}},
     .expect = ""},
    {"failed_prepare_of_a_started_event_waits_for_its_end",
     FD2,
     {{.id = "E1",
       .started = true,
       .start = SC_START_FORCED,
       .nb = NB_NONE,
       .vms = "a0=prepared,a1=prepare_failed"}},
     .expect = "ALERT forced E1"},
    {"no_drain_now_failed_prepare_not_rolled_back_approved",
     FD2,
     {{.id = "E1", .type = "Freeze", .dur = "5", .vms = "a0=prepared,a1=prepare_failed"}},
     .expect = "ALERT prepare_failed E1 a1; APPROVE E1"},
    {"failed_preempt_prepare_not_rolled_back",
     FD2,
     {{.id = "P1", .type = "Preempt", .nb = 30, .vms = "b0=prepare_failed"}},
     .expect = "ALERT prepare_failed P1 b0"},
    {"last_attempt_failed_rolled_back_not_retried",
     FD2,
     {{.id = "E1", .vms = "a0=prepared/3,a1=prepare_failed/3"}},
     .expect = "ALERT prepare_failed E1 a1; RECOVER a0 E1; RECOVER a1 E1"},
    /* Rule 2 wins over a User event's deadline (issue 9, case 4): approved undrained only if
     * no other domain is busy (draining, drained, impacted, recovering) and min-healthy holds;
     * else it waits (Azure starts it at NotBefore) with an alert; once approved, its domains are
     * busy, from that very round on. */
    {"user_deadline_blocked_by_drained_fd",
     FD2,
     {{.id = "P1", .appr = SC_APPROVAL_APPROVED, .vms = "a0=prepared,a1=prepared"},
      {.id = "U1", .user = true, .seen_ago_s = 121, .vms = "b0=none"}},
     .expect = "ALERT user_deadline_blocked U1"},
    {"user_deadline_blocked_by_impacted_fd",
     FD2,
     {{.id = "H1", .started = true, .start = SC_START_DIRECT, .nb = NB_NONE, .vms = "a0=none"},
      {.id = "U1", .user = true, .seen_ago_s = 121, .vms = "b0=none"}},
     .expect = "ALERT forced H1; ALERT user_deadline_blocked U1"},
    {"user_deadline_blocked_by_recovering_fd",
     FD2,
     {{.id = "E0",
       .phase = SC_REG_ENDED,
       .started = true,
       .start = SC_START_APPROVED,
       .appr = SC_APPROVAL_APPROVED,
       .vms = "a0=recovering"},
      {.id = "U1", .user = true, .seen_ago_s = 121, .vms = "b0=none"}},
     .expect = "ALERT user_deadline_blocked U1"},
    {"user_deadline_blocked_by_evict_drain",
     FD2,
     {{.id = "P1", .type = "Preempt", .nb = 30, .vms = "a1=preparing"},
      {.id = "U1", .user = true, .seen_ago_s = 121, .vms = "b0=none"}},
     .expect = "ALERT user_deadline_blocked U1"},
    {"user_deadline_own_fd_busy_approved",
     FD2,
     {{.id = "P1", .vms = "a0=preparing"},
      {.id = "U1", .user = true, .seen_ago_s = 121, .vms = "a1=none"}},
     .expect = "ALERT user_deadline U1; APPROVE U1"},
    {"user_deadline_max_fault_domains_two_allows_one_other",
     FD3,
     {{.id = "P1", .vms = "a0=preparing"},
      {.id = "U1", .user = true, .seen_ago_s = 121, .vms = "b0=none"}},
     .max_fd = 2,
     .expect = "ALERT user_deadline U1; APPROVE U1"},
    {"user_deadline_max_fault_domains_two_full",
     FD3,
     {{.id = "P1", .vms = "a0=preparing"},
      {.id = "P2", .vms = "c0=prepared"},
      {.id = "U1", .user = true, .seen_ago_s = 121, .vms = "b0=none"}},
     .max_fd = 2,
     .expect = "ALERT user_deadline_blocked U1; APPROVE P2"},
    {"user_deadline_too_wide_waits_for_quiet",
     FD3,
     {{.id = "P1", .vms = "c0=preparing"},
      {.id = "U1", .user = true, .seen_ago_s = 121, .vms = "a1=none,b1=none"}},
     .expect = "ALERT user_deadline_blocked U1"},
    {"user_deadline_too_wide_approved_when_quiet",
     FD3,
     {{.id = "U1", .user = true, .seen_ago_s = 121, .vms = "a1=none,b1=none"}},
     .expect = "ALERT user_deadline U1; APPROVE U1"},
    {"user_deadline_blocked_by_min_healthy",
     FD2,
     {{.id = "U1", .user = true, .seen_ago_s = 121, .vms = "b0=none,b1=none"}},
     .min_healthy = "3",
     .expect = "ALERT user_deadline_blocked U1"},
    {"user_deadline_approval_keeps_other_fds_out",
     FD3,
     {{.id = "U1", .user = true, .nb = 300, .seen_ago_s = 121, .vms = "b0=none"},
      {.id = "E2", .nb = 900, .vms = "c0=none"}},
     .expect = "ALERT user_deadline U1; APPROVE U1"},
    {"user_deadline_approved_undrained_keeps_fd_busy",
     FD3,
     {{.id = "U1", .user = true, .appr = SC_APPROVAL_APPROVED, .seen_ago_s = 122, .vms = "b0=none"},
      {.id = "E2", .vms = "c0=none"}},
     .expect = ""},
    {"user_deadline_intent_undrained_keeps_fd_busy",
     FD3,
     {{.id = "U1", .user = true, .appr = SC_APPROVAL_INTENT, .seen_ago_s = 122, .vms = "b0=none"},
      {.id = "E2", .vms = "c0=none"}},
     .expect = ""},
    {"user_deadline_not_approvable_keeps_nothing_busy",
     FD3,
     {{.id = "U1", .user = true, .nb = 300, .seen_ago_s = 121, .vms = "b0=none"},
      {.id = "E2", .nb = 900, .vms = "c0=none"}},
     .no_user_approve = true,
     .expect = "PREPARE c0 E2"},
    /* serialise-by update_domain (issue 9, case 13): rule 2 counts update domains */
    {"serialise_by_ud_event_of_one_ud_across_fds",
     UD2,
     {{.id = "E1", .nb = 600, .vms = "a0=none,a1=none"},
      {.id = "E2", .nb = 900, .vms = "b0=none,b1=none"}},
     .by_update_domain = true,
     .expect = "PREPARE a0 E1; PREPARE a1 E1"},
    {"serialise_by_fd_same_event_too_wide",
     UD2,
     {{.id = "E1", .nb = 600, .vms = "a0=none,a1=none"},
      {.id = "E2", .nb = 900, .vms = "b0=none,b1=none"}},
     .expect = "ALERT too_wide E1; PREPARE a0 E1; PREPARE a1 E1"},
    {"serialise_by_ud_same_fd_other_ud_waits",
     UD2,
     {{.id = "E1", .vms = "a0=preparing"}, {.id = "E2", .vms = "b0=none"}},
     .by_update_domain = true,
     .expect = ""},
    {"serialise_by_fd_same_fd_other_ud_drains",
     UD2,
     {{.id = "E1", .vms = "a0=preparing"}, {.id = "E2", .vms = "b0=none"}},
     .expect = "PREPARE b0 E2"},
    {"serialise_by_ud_same_ud_drains_together",
     UD2,
     {{.id = "E1", .vms = "a0=preparing"}, {.id = "E2", .vms = "a1=none"}},
     .by_update_domain = true,
     .expect = "PREPARE a1 E2"},
    {"serialise_by_ud_unknown_ud_is_its_own_domain",
     "a0:0/0! a1:0 b0:1/1",
     {{.id = "E1", .vms = "a0=preparing"}, {.id = "E2", .vms = "a1=none"}},
     .by_update_domain = true,
     .expect = ""},
    {"serialise_by_ud_impacted_ud_busy",
     UD2,
     {{.id = "H1", .started = true, .start = SC_START_DIRECT, .nb = NB_NONE, .vms = "a0=none"},
      {.id = "E2", .vms = "b0=none"},
      {.id = "E3", .vms = "a1=none"}},
     .by_update_domain = true,
     .expect = "ALERT forced H1; PREPARE a1 E3"},
    /* serialise-by vm (issue 21: max spreading shows every VM in fault domain 0; auto takes
     * each VM for a domain of its own): one VM at a time, where fault domains drain together */
    {"serialise_by_fd_same_fd_drains_together",
     "a0:0! a1:0 a2:0",
     {{.id = "E1", .vms = "a0=preparing"}, {.id = "E2", .vms = "a1=none"}},
     .expect = "PREPARE a1 E2"},
    {"serialise_by_vm_same_fd_waits",
     "a0:0! a1:0 a2:0",
     {{.id = "E1", .vms = "a0=preparing"}, {.id = "E2", .vms = "a1=none"}},
     .by_vm = true,
     .expect = ""},
    {"serialise_by_vm_one_at_a_time_in_notbefore_order",
     "a0:0! a1:0 a2:0",
     {{.id = "E2", .nb = 900, .vms = "a1=none"}, {.id = "E1", .nb = 600, .vms = "a0=none"}},
     .by_vm = true,
     .expect = "PREPARE a0 E1"},
    {"serialise_by_vm_event_of_two_vms_goes_alone",
     "a0:0! a1:0 a2:0",
     {{.id = "E1", .nb = 600, .vms = "a0=none,a1=none"}, {.id = "E2", .nb = 900, .vms = "a2=none"}},
     .by_vm = true,
     .expect = "ALERT too_wide E1; PREPARE a0 E1; PREPARE a1 E1"},
    {"serialise_by_vm_recovering_vm_busy",
     "a0:0! a1:0 a2:0",
     {{.id = "E1",
       .phase = SC_REG_ENDED,
       .started = true,
       .start = SC_START_APPROVED,
       .vms = "a0=recovering"},
      {.id = "E2", .vms = "a1=none"}},
     .by_vm = true,
     .expect = ""},
    {"serialise_by_ud_user_deadline_blocked",
     UD2,
     {{.id = "E1", .vms = "a0=preparing"},
      {.id = "U1", .user = true, .seen_ago_s = 121, .vms = "b0=none"}},
     .by_update_domain = true,
     .expect = "ALERT user_deadline_blocked U1"},
    /* An EventStatus this version does not know (issue 9, case 12): never approved, no new
     * drain; what is prepared is held (its domain busy) and recovered when it is over. */
    {"unknown_status_not_drained",
     FD2,
     {{.id = "E1", .unknown_status = true, .vms = "a0=none,a1=none"}},
     .expect = "ALERT unknown_status E1"},
    {"unknown_status_prepared_never_approved",
     FD2,
     {{.id = "E1", .unknown_status = true, .vms = "a0=prepared,a1=prepared"}},
     .expect = "ALERT unknown_status E1"},
    {"unknown_status_prepared_keeps_fd_busy",
     FD2,
     {{.id = "E1", .unknown_status = true, .vms = "a0=prepared,a1=preparing"},
      {.id = "E2", .vms = "b0=none"}},
     .expect = "ALERT unknown_status E1"},
    {"unknown_status_short_freeze_not_approved",
     FD2,
     {{.id = "F1", .type = "Freeze", .dur = "5", .unknown_status = true, .vms = "a0=none"}},
     .expect = "ALERT unknown_status F1"},
    {"unknown_status_user_deadline_not_approved",
     FD2,
     {{.id = "U1", .user = true, .seen_ago_s = 200, .unknown_status = true, .vms = "b0=none"}},
     .expect = "ALERT unknown_status U1"},
    {"unknown_status_preempt_not_drained",
     FD2,
     {{.id = "P1", .type = "Preempt", .nb = 30, .unknown_status = true, .vms = "b0=none"}},
     .expect = "ALERT unknown_status P1"},
    {"unknown_status_undrained_does_not_block",
     FD2,
     {{.id = "E1", .unknown_status = true, .vms = "a0=none"}, {.id = "E2", .vms = "b0=none"}},
     .expect = "ALERT unknown_status E1; PREPARE b0 E2"},
    {"unknown_status_cancelled_recovers_prepared",
     FD2,
     {{.id = "E1",
       .phase = SC_REG_CANCELLED,
       .unknown_status = true,
       .vms = "a0=prepared,a1=none"}},
     .expect = "RECOVER a0 E1"},
    /* Resources naming VMs outside the cluster (issue 9, case 10): members drained as usual;
     * the one POST would start it for the strangers too, so by default it is not approved
     * (Azure starts it at NotBefore), alert; approve-with-strangers approves once drained. */
    {"strangers_drained_not_approved",
     FD2,
     {{.id = "E1", .strangers = "x9", .vms = "a0=prepared"}},
     .expect = "ALERT strangers E1"},
    {"strangers_members_still_drained",
     FD2,
     {{.id = "E1", .strangers = "x8,x9", .vms = "a0=none,a1=none"}},
     .expect = "ALERT strangers E1; PREPARE a0 E1; PREPARE a1 E1"},
    {"strangers_setting_on_approved_when_drained",
     FD2,
     {{.id = "E1", .strangers = "x9", .vms = "a0=prepared"}},
     .with_strangers = true,
     .expect = "ALERT strangers E1; APPROVE E1"},
    {"strangers_setting_on_waits_for_drain",
     FD2,
     {{.id = "E1", .strangers = "x9", .vms = "a0=prepared,a1=preparing"}},
     .with_strangers = true,
     .expect = "ALERT strangers E1"},
    {"strangers_short_freeze_not_approved",
     FD2,
     {{.id = "F1", .type = "Freeze", .dur = "5", .strangers = "x9", .vms = "a0=none"}},
     .expect = "ALERT strangers F1"},
    {"strangers_user_deadline_not_approved_nothing_reserved",
     FD3,
     {{.id = "U1", .user = true, .nb = 300, .seen_ago_s = 200, .strangers = "x9", .vms = "b0=none"},
      {.id = "E2", .nb = 900, .vms = "c0=none"}},
     .expect = "ALERT strangers U1; PREPARE c0 E2"},
    {"strangers_preempt_drained_not_approved",
     FD2,
     {{.id = "P1", .type = "Preempt", .nb = 30, .strangers = "x9", .vms = "b0=prepared"}},
     .expect = "ALERT strangers P1"},
    {"strangers_only_left_to_azure_silently", FD2, {{.id = "E1", .strangers = "x9"}}, .expect = ""},
    /* Resources never shrink below what was ordered to prepare (issue 9, safety 1): a VM that
     * left Resources — Azure's update, or a stale copy of the event — while its prepare was
     * ordered or running holds the approval until it reports; once it did (prepared, failed,
     * interrupted) it is not waited for. */
    {"dropped_preparing_vm_blocks_approval",
     FD2,
     {{.id = "E1", .vms = "a0=prepared,^a1=preparing"}},
     .expect = ""},
    {"dropped_ordered_vm_blocks_approval",
     FD2,
     {{.id = "E1", .vms = "a0=prepared,^a1=prepare_ordered"}},
     .expect = ""},
    {"dropped_preparing_dead_vm_blocks_approval",
     "a0:0! a1:0- b0:1 b1:1",
     {{.id = "E1", .vms = "a0=prepared,^a1=preparing"}},
     .expect = ""},
    {"dropped_vm_failed_prepare_not_waited_for",
     FD2,
     {{.id = "E1", .vms = "a0=prepared,^a1=prepare_failed"}},
     .expect = "APPROVE E1"},
    {"dropped_vm_interrupted_prepare_not_waited_for",
     FD2,
     {{.id = "E1", .vms = "a0=prepared,^a1=prepare_interrupted"}},
     .expect = "APPROVE E1"},
    {"dropped_preparing_vm_blocks_approval_via",
     FD2,
     {{.id = "E1", .vms = "b0=prepared,^b1=preparing", .seen = "b0"}},
     .expect = ""},
    /* forecasts (sc_forecast.h): a drain that will not be done in time is said at notice time,
     * and planned as any other (the forecast decides nothing) */
    {"forecast_late_alerted_at_notice",
     FD2,
     {{.id = "E1", .late = true, .vms = "a0=none,a1=none"}},
     .expect = "ALERT forecast_late E1; PREPARE a0 E1; PREPARE a1 E1"},
    {"forecast_late_queued_event_alerted",
     FD2,
     {{.id = "E1", .vms = "a0=preparing,a1=prepared"},
      {.id = "E2", .late = true, .vms = "b0=none,b1=none"}},
     .expect = "ALERT forecast_late E2"},
    {"forecast_late_preempt_alerted_and_drained",
     FD2,
     {{.id = "P1", .type = "Preempt", .late = true, .nb = 30, .vms = "b0=none"}},
     .expect = "ALERT forecast_late P1; PREPARE b0 P1"},
    {"forecast_late_not_alerted_once_approved",
     FD2,
     {{.id = "E1", .late = true, .appr = SC_APPROVAL_APPROVED, .vms = "a0=prepared"}},
     .expect = ""},
    {"forecast_late_not_alerted_for_a_short_freeze",
     FD2,
     {{.id = "F1", .type = "Freeze", .dur = "5", .late = true, .vms = "a0=none"}},
     .expect = "APPROVE F1"},
    {"forecast_late_not_alerted_once_started",
     FD2,
     {{.id = "E1",
       .late = true,
       .started = true,
       .start = SC_START_APPROVED,
       .nb = NB_NONE,
       .vms = "a0=prepared"}},
     .expect = ""},
};

static void s_run_row(const row_t *r)
{
    world_t w;
    sc_plan_input_t in = {0};
    sc_plan_output_t out = {0};
    char got[4096];
    int rc;

    if (s_build(r, &w) < 0) {
        SC_FAILF("row %s: bad row", r->name);
        return;
    }
    in.members = w.m;
    in.n_members = w.n_m;
    in.events = w.pe;
    in.n_events = w.n_e;
    in.policy = &w.pol;
    in.now_wall_s = NOW_WALL;
    in.now_ms = NOW_MS;
    rc = sc_plan(&in, &out);
    if (rc != 0) {
        SC_FAILF("row %s: sc_plan returned %d", r->name, rc);
        return;
    }
    s_render(&w, &out, got, sizeof(got));
    if (strcmp(got, r->expect) != 0)
        SC_FAILF("row %s:\n    got      \"%s\"\n    expected \"%s\"", r->name, got, r->expect);
    SC_CHECK_INT(out.n_events, w.n_e);
    SC_CHECK_INT(out.n_members, w.n_m);
    for (size_t i = 0; i < out.n_events; i++)
        SC_CHECK(out.waiting_for[i] && out.waiting_for[i][0]);
    /* at most one APPROVE per round, and no event approved twice (rule 1) */
    {
        size_t n_approve = 0, count[MAX_E] = {0};

        for (size_t i = 0; i < out.n_actions; i++) {
            const sc_action_t *a = &out.actions[i];

            SC_CHECK(a->reason[0] != '\0');
            n_approve += a->kind == SC_ACT_APPROVE;
            for (size_t k = 0; k < a->n_events; k++)
                count[a->events[k]]++;
        }
        SC_CHECK(n_approve <= 1);
        for (size_t i = 0; i < MAX_E; i++)
            SC_CHECK(count[i] <= 1);
    }
    sc_plan_output_release(&out);
}

SC_TEST(table)
{
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        s_run_row(&rows[i]);
    printf("  %zu scenarios\n", sizeof(rows) / sizeof(rows[0]));
}

/* Member states for status: drained, impacted, recovering, gone, healthy. */
SC_TEST(member_states)
{
    static const row_t r = {
        "states",
        "a0:0! a1:0 b0:1 b1:1 c0:2x c1:2",
        {{.id = "E1", .vms = "a0=prepared,a1=preparing"},
         {.id = "H1", .started = true, .start = SC_START_DIRECT, .nb = NB_NONE, .vms = "b0=none"},
         {.id = "E0",
          .phase = SC_REG_ENDED,
          .started = true,
          .start = SC_START_APPROVED,
          .vms = "b1=recovering"}},
        .expect = ""};
    world_t w;
    sc_plan_input_t in = {0};
    sc_plan_output_t out = {0};

    SC_REQUIRE(s_build(&r, &w) == 0);
    in = (sc_plan_input_t){w.m, w.n_m, w.pe, w.n_e, &w.pol, NOW_WALL, NOW_MS};
    SC_REQUIRE(sc_plan(&in, &out) == 0);
    SC_CHECK_STR(sc_member_state_name(out.member_state[0]), "drained");
    SC_CHECK_STR(sc_member_state_name(out.member_state[1]), "draining");
    SC_CHECK_STR(sc_member_state_name(out.member_state[2]), "impacted");
    SC_CHECK_STR(sc_member_state_name(out.member_state[3]), "recovering");
    SC_CHECK_STR(sc_member_state_name(out.member_state[4]), "gone");
    SC_CHECK_STR(sc_member_state_name(out.member_state[5]), "healthy");
    SC_CHECK(strstr(out.waiting_for[0], "a1 (preparing)") != NULL);
    SC_CHECK(strstr(out.waiting_for[1], "waiting for it to end") != NULL);
    sc_plan_output_release(&out);
    sc_plan_output_release(&out); /* idempotent on a zeroed output */
}

/* The waiting text names the busy fault domain for a queued event. */
SC_TEST(waiting_for_queued)
{
    static const row_t r = {"q",
                            FD2,
                            {{.id = "E1", .vms = "a0=preparing"}, {.id = "E2", .vms = "b0=none"}},
                            .expect = ""};
    world_t w;
    sc_plan_input_t in;
    sc_plan_output_t out = {0};

    SC_REQUIRE(s_build(&r, &w) == 0);
    in = (sc_plan_input_t){w.m, w.n_m, w.pe, w.n_e, &w.pol, NOW_WALL, NOW_MS};
    SC_REQUIRE(sc_plan(&in, &out) == 0);
    SC_CHECK(strstr(out.waiting_for[1], "queued: fault domain(s) 0 busy") != NULL);
    sc_plan_output_release(&out);
}

/* The drain queue's order for each event (the coordinator's event_scheduled notification
 * tells it): Preempt/Terminate first, then by NotBefore, the drained one keeping its place;
 * events not queued (started, no drain) have none. */
SC_TEST(drain_rank)
{
    static const row_t r = {"rank",
                            FD3 " d0:3",
                            {{.id = "E1", .nb = 900, .vms = "a0=preparing"},
                             {.id = "E2", .nb = 800, .vms = "b0=none"},
                             {.id = "E3", .type = "Preempt", .nb = 1000, .vms = "c0=none"},
                             {.id = "E4",
                              .started = true,
                              .start = SC_START_APPROVED,
                              .nb = NB_NONE,
                              .vms = "a1=prepared"},
                             {.id = "E5", .type = "Freeze", .dur = "5", .vms = "d0=none"}},
                            .expect = ""};
    world_t w;
    sc_plan_input_t in;
    sc_plan_output_t out = {0};

    SC_REQUIRE(s_build(&r, &w) == 0);
    in = (sc_plan_input_t){w.m, w.n_m, w.pe, w.n_e, &w.pol, NOW_WALL, NOW_MS};
    SC_REQUIRE(sc_plan(&in, &out) == 0);
    SC_REQUIRE(out.drain_rank != NULL);
    SC_CHECK_INT(out.drain_rank[0], 2);
    SC_CHECK_INT(out.drain_rank[1], 1);
    SC_CHECK_INT(out.drain_rank[2], 0);
    SC_CHECK(out.drain_rank[3] == SC_PLAN_NONE);
    SC_CHECK(out.drain_rank[4] == SC_PLAN_NONE);
    sc_plan_output_release(&out);
}

/* Stateless rounds: carrying out each round's actions walks a 3-FD rollout to the end,
 * never with two FDs busy, each event approved exactly once, every prepared VM recovered. */
SC_TEST(rollout_simulation)
{
    static const row_t r = {"rollout",
                            FD3,
                            {{.id = "E0", .nb = 900, .vms = "a0=none,a1=none"},
                             {.id = "E1", .nb = 905, .vms = "b0=none,b1=none"},
                             {.id = "E2", .nb = 910, .vms = "c0=none,c1=none"}},
                            .expect = ""};
    world_t w;
    int approvals[MAX_E] = {0};
    int round;

    SC_REQUIRE(s_build(&r, &w) == 0);
    for (round = 0; round < 100; round++) {
        sc_plan_input_t in = {w.m, w.n_m, w.pe, w.n_e, &w.pol, NOW_WALL, NOW_MS + round};
        sc_plan_output_t out = {0};
        int busy_fds = 0;
        bool busy[3] = {false, false, false}, all_done = true;

        SC_REQUIRE(sc_plan(&in, &out) == 0);
        for (size_t m = 0; m < w.n_m; m++) {
            if (out.member_state[m] != SC_MEMBER_HEALTHY && !busy[w.m[m].fault_domain]) {
                busy[w.m[m].fault_domain] = true;
                busy_fds++;
            }
        }
        SC_CHECK(busy_fds <= 1);
        /* carry out: orders complete at once; approved events start, then end */
        for (size_t i = 0; i < w.n_e; i++) {
            sc_plan_event_t *pe = &w.pe[i];

            if (pe->phase == SC_REG_ACTIVE && w.ev[i].status == SC_EVENT_STARTED) {
                pe->phase = SC_REG_ENDED;
            } else if (pe->approval == SC_APPROVAL_APPROVED && pe->phase == SC_REG_ACTIVE) {
                w.ev[i].status = SC_EVENT_STARTED;
                pe->start_kind = SC_START_APPROVED;
            }
        }
        for (size_t k = 0; k < out.n_actions; k++) {
            const sc_action_t *a = &out.actions[k];

            for (size_t i = 0; i < w.n_e; i++) {
                for (size_t j = 0; j < w.pe[i].n_vms; j++) {
                    if (w.vms[i][j].member != a->member || a->event != i)
                        continue;
                    if (a->kind == SC_ACT_PREPARE)
                        w.vms[i][j].drain = SC_DRAIN_PREPARED;
                    if (a->kind == SC_ACT_RECOVER)
                        w.vms[i][j].drain = SC_DRAIN_RECOVERED;
                }
            }
            if (a->kind == SC_ACT_APPROVE) {
                for (size_t e = 0; e < a->n_events; e++) {
                    size_t i = a->events[e];

                    approvals[i]++;
                    /* every VM prepared before its approval (rule 1) */
                    for (size_t j = 0; j < w.pe[i].n_vms; j++)
                        SC_CHECK(w.vms[i][j].drain == SC_DRAIN_PREPARED);
                    w.pe[i].approval = SC_APPROVAL_APPROVED;
                }
            }
        }
        sc_plan_output_release(&out);
        for (size_t i = 0; i < w.n_e; i++)
            for (size_t j = 0; j < w.pe[i].n_vms; j++)
                all_done &= w.vms[i][j].drain == SC_DRAIN_RECOVERED;
        if (all_done)
            break;
    }
    SC_CHECK(round < 100);
    for (size_t i = 0; i < w.n_e; i++)
        SC_CHECK_INT(approvals[i], 1);
}

/* Builds row r into *w and plans it into *out (its actions index w's events): 0, or -1. */
static int s_plan_row(const row_t *r, world_t *w, sc_plan_output_t *out)
{
    sc_plan_input_t in;

    if (s_build(r, w) < 0)
        return -1;
    in = (sc_plan_input_t){w->m, w->n_m, w->pe, w->n_e, &w->pol, NOW_WALL, NOW_MS};
    return sc_plan(&in, out) == 0 ? 0 : -1;
}

/* An event that is over may be forgotten only once it owes nothing: a VM impacted unprepared
 * (or drained) whose member is down keeps it until it comes back and recovers (issue 9 case 9:
 * the recover hook runs after every impact); recovered, failed or gone VMs do not. */
SC_TEST(closable_only_when_nothing_is_owed)
{
    static const row_t rows_c[] = {
        {"down_impacted_vm_keeps_it",
         "a0:0! a1:0- b0:1",
         {{.id = "E1",
           .phase = SC_REG_ENDED,
           .started = true,
           .start = SC_START_FORCED,
           .nb = NB_NONE,
           .vms = "a0=recovered,a1=none"}},
         .expect = "0"},
        {"down_drained_vm_keeps_it",
         "a0:0! a1:0- b0:1",
         {{.id = "E1", .phase = SC_REG_CANCELLED, .vms = "a1=prepared"}},
         .expect = "0"},
        {"all_recovered_or_failed",
         "a0:0! a1:0- b0:1",
         {{.id = "E1",
           .phase = SC_REG_ENDED,
           .started = true,
           .start = SC_START_FORCED,
           .nb = NB_NONE,
           .vms = "a0=recovered,a1=recover_failed"}},
         .expect = "1"},
        {"evicted_member_not_gone_yet",
         "a0:0! a1:0 b0:1",
         {{.id = "P1",
           .type = "Preempt",
           .phase = SC_REG_ENDED,
           .started = true,
           .start = SC_START_APPROVED,
           .nb = NB_NONE,
           .vms = "a1=prepared"}},
         .expect = "0"},
        {"evicted_member_gone",
         "a0:0! a1:0x b0:1",
         {{.id = "P1",
           .type = "Preempt",
           .phase = SC_REG_ENDED,
           .started = true,
           .start = SC_START_APPROVED,
           .nb = NB_NONE,
           .vms = "a1=prepared"}},
         .expect = "1"},
        {"active_never", "a0:0! a1:0 b0:1", {{.id = "E1", .vms = "a1=none"}}, .expect = "0"},
    };

    for (size_t i = 0; i < sizeof(rows_c) / sizeof(rows_c[0]); i++) {
        world_t w;
        sc_plan_output_t out = {0};

        SC_REQUIRE(s_plan_row(&rows_c[i], &w, &out) == 0);
        if (out.closable[0] != (rows_c[i].expect[0] == '1'))
            SC_FAILF("row %s: closable %d", rows_c[i].name, out.closable[0]);
        sc_plan_output_release(&out);
    }
}

/* With serialise-by update_domain the texts name update domains. */
SC_TEST(waiting_for_update_domain)
{
    static const row_t r = {"ud",
                            UD2,
                            {{.id = "E1", .vms = "a0=preparing"}, {.id = "E2", .vms = "b0=none"}},
                            .expect = "",
                            .by_update_domain = true};
    world_t w;
    sc_plan_output_t out = {0};

    SC_REQUIRE(s_plan_row(&r, &w, &out) == 0);
    SC_CHECK(strstr(out.waiting_for[1], "queued: update domain(s) 0 busy (max-fault-domains 1)") !=
             NULL);
    sc_plan_output_release(&out);
}

/* A User event held at its deadline and an event of unknown status say why they wait. */
SC_TEST(waiting_for_held)
{
    static const row_t r = {"held",
                            FD3,
                            {{.id = "E1", .vms = "a0=preparing"},
                             {.id = "U1", .user = true, .seen_ago_s = 121, .vms = "b0=none"},
                             {.id = "E2", .unknown_status = true, .vms = "c0=prepared,c1=none"}},
                            .expect = ""};
    world_t w;
    sc_plan_output_t out = {0};

    SC_REQUIRE(s_plan_row(&r, &w, &out) == 0);
    SC_CHECK(strstr(out.waiting_for[1], "past its user deadline, 0/1 drained: waiting for fault "
                                        "domain(s) 0, 2 busy (max-fault-domains 1), or "
                                        "NotBefore") != NULL);
    SC_CHECK(strstr(out.waiting_for[2], "EventStatus \"Pending\" unknown: never approved, no new "
                                        "drain (1 held until it is over)") != NULL);
    SC_CHECK_STR(sc_member_state_name(out.member_state[4]), "drained");
    SC_CHECK_STR(sc_member_state_name(out.member_state[5]), "healthy");
    sc_plan_output_release(&out);
}

SC_TEST(bad_input)
{
    sc_policy_t pol;
    sc_plan_member_t m = {.name = "a0", .alive = true, .is_self = true};
    sc_event_t ev = {.id = "E1", .type = SC_EVENT_REBOOT};
    sc_plan_vm_t vm = {.member = 5, .drain = SC_DRAIN_NONE};
    sc_plan_event_t pe = {.ev = &ev, .vms = &vm, .n_vms = 1};
    sc_plan_input_t in = {&m, 1, &pe, 1, &pol, NOW_WALL, NOW_MS};
    sc_plan_output_t out = {0};

    sc_policy_defaults(&pol);
    SC_CHECK_INT(sc_plan(NULL, &out), -EINVAL);
    SC_CHECK_INT(sc_plan(&in, NULL), -EINVAL);
    SC_CHECK_INT(sc_plan(&in, &out), -EINVAL); /* member index out of range */
    vm.member = 0;
    vm.drain = SC_DRAIN_MAX;
    SC_CHECK_INT(sc_plan(&in, &out), -EINVAL);
    vm.drain = SC_DRAIN_NONE;
    in.policy = NULL;
    SC_CHECK_INT(sc_plan(&in, &out), -EINVAL);
    in.policy = &pol;
    pe.ev = NULL;
    SC_CHECK_INT(sc_plan(&in, &out), -EINVAL);
    pe.ev = &ev;
    SC_CHECK_INT(sc_plan(&in, &out), 0);
    sc_plan_output_release(&out);
    /* empty input is fine */
    in.n_events = 0;
    in.n_members = 0;
    SC_CHECK_INT(sc_plan(&in, &out), 0);
    SC_CHECK_INT(out.n_actions, 0);
    sc_plan_output_release(&out);
}

SC_TEST(names_round_trip)
{
    for (int s = 0; s < SC_DRAIN_MAX; s++) {
        sc_drain_state_t back;

        SC_CHECK_INT(sc_drain_state_from_name(sc_drain_state_name((sc_drain_state_t)s), &back), 0);
        SC_CHECK_INT(back, s);
    }
    for (int s = 0; s < SC_APPROVAL_MAX; s++) {
        sc_approval_state_t back;

        SC_CHECK_INT(
            sc_approval_state_from_name(sc_approval_state_name((sc_approval_state_t)s), &back), 0);
        SC_CHECK_INT(back, s);
    }
    {
        sc_drain_state_t d;

        SC_CHECK_INT(sc_drain_state_from_name("drained!", &d), -EINVAL);
    }
}

SC_TEST(policy_parsing)
{
    sc_policy_cfg_t cfg = {.freeze_threshold_s = 9,
                           .max_fault_domains = 1,
                           .min_healthy = (char *)"50%",
                           .user_event_deadline_s = 120,
                           .deadline_margin_s = 60,
                           .approve_user_events = true,
                           .approve_without_drain = (char *)"freeze, Redeploy",
                           .prepare_attempts = 3,
                           .prepare_retry_s = 30};
    sc_policy_t p;
    char err[256] = "";
    int v;
    bool pct;
    uint32_t mask;

    SC_CHECK_INT(sc_policy_from_cfg(&cfg, &p, err, sizeof(err)), 0);
    SC_CHECK(p.min_healthy_pct && p.min_healthy == 50);
    SC_CHECK_INT(p.approve_without_drain, (1u << SC_EVENT_FREEZE) | (1u << SC_EVENT_REDEPLOY));
    SC_CHECK_INT(sc_policy_min_healthy_count(&p, 5), 3);
    cfg.min_healthy = (char *)"5x";
    SC_CHECK(sc_policy_from_cfg(&cfg, &p, err, sizeof(err)) < 0);
    SC_CHECK(strstr(err, "min-healthy") != NULL);
    cfg.min_healthy = (char *)"2";
    cfg.approve_without_drain = (char *)"Freeze,Reboots";
    SC_CHECK(sc_policy_from_cfg(&cfg, &p, err, sizeof(err)) < 0);
    SC_CHECK(strstr(err, "approve-without-drain") != NULL);
    cfg.approve_without_drain = (char *)"";
    cfg.max_fault_domains = 0;
    SC_CHECK(sc_policy_from_cfg(&cfg, &p, err, sizeof(err)) < 0);
    SC_CHECK(strstr(err, "max-fault-domains") != NULL);
    cfg.max_fault_domains = 1;
    cfg.prepare_attempts = 0;
    SC_CHECK(sc_policy_from_cfg(&cfg, &p, err, sizeof(err)) < 0);
    SC_CHECK(strstr(err, "prepare-attempts") != NULL);
    cfg.prepare_attempts = 3;
    cfg.prepare_retry_s = -1;
    SC_CHECK(sc_policy_from_cfg(&cfg, &p, err, sizeof(err)) < 0);
    SC_CHECK(strstr(err, "prepare-retry-s") != NULL);
    cfg.prepare_retry_s = 30;
    SC_CHECK_INT(sc_policy_from_cfg(&cfg, &p, err, sizeof(err)), 0);
    SC_CHECK_INT(sc_policy_retry_delay_ms(&p, 1), 30000);
    SC_CHECK_INT(sc_policy_retry_delay_ms(&p, 3), 120000);
    SC_CHECK_INT(sc_policy_retry_delay_ms(&p, 30), 600000);
    SC_CHECK(p.terminate_notice_s == 300); /* not set: the default */
    cfg.terminate_notice_s = 200;
    SC_CHECK(sc_policy_from_cfg(&cfg, &p, err, sizeof(err)) < 0);
    SC_CHECK(strstr(err, "terminate-notice-s") != NULL);
    cfg.terminate_notice_s = 720;
    SC_CHECK_INT(sc_policy_from_cfg(&cfg, &p, err, sizeof(err)), 0);
    SC_CHECK(p.terminate_notice_s == 720);
    SC_CHECK(sc_policy_parse_min_healthy("101%", &v, &pct) < 0);
    SC_CHECK(sc_policy_parse_min_healthy("", &v, &pct) < 0);
    SC_CHECK(sc_policy_parse_min_healthy("-1", &v, &pct) < 0);
    SC_CHECK_INT(sc_policy_parse_min_healthy(" 7 ", &v, &pct), 0);
    SC_CHECK(v == 7 && !pct);
    SC_CHECK_INT(sc_policy_parse_types("", &mask), 0);
    SC_CHECK_INT(mask, 0);
    SC_CHECK(sc_policy_parse_types("Unknown", &mask) < 0);
    /* the key table has every key with a default, and rebases */
    {
        sc_cfg_key_t keys[16];

        SC_REQUIRE(sc_policy_n_keys == 13);
        sc_policy_keys_rebase(100, keys);
        for (size_t i = 0; i < sc_policy_n_keys; i++) {
            SC_CHECK(sc_policy_keys[i].def != NULL);
            SC_CHECK_INT(keys[i].offset, sc_policy_keys[i].offset + 100);
        }
    }
    sc_policy_defaults(&p);
    SC_CHECK(p.freeze_threshold_s == 9 && p.max_fault_domains == 1 && p.approve_user_events &&
             !p.pause && p.min_healthy == 0);
}

/* serialise-by: the two values, a bad one refused naming the key. */
SC_TEST(policy_serialise_by)
{
    sc_policy_cfg_t cfg = {.freeze_threshold_s = 9,
                           .max_fault_domains = 1,
                           .user_event_deadline_s = 120,
                           .deadline_margin_s = 60,
                           .prepare_attempts = 3,
                           .prepare_retry_s = 30};
    sc_policy_t p;
    char err[256] = "";

    SC_CHECK_INT(sc_policy_from_cfg(&cfg, &p, err, sizeof(err)), 0);
    SC_CHECK_INT(p.serialise_by, SC_SERIALISE_AUTO);
    cfg.serialise_by = (char *)"vm";
    SC_CHECK_INT(sc_policy_from_cfg(&cfg, &p, err, sizeof(err)), 0);
    SC_CHECK_INT(p.serialise_by, SC_SERIALISE_VM);
    cfg.serialise_by = (char *)"update_domain";
    SC_CHECK_INT(sc_policy_from_cfg(&cfg, &p, err, sizeof(err)), 0);
    SC_CHECK_INT(p.serialise_by, SC_SERIALISE_UPDATE_DOMAIN);
    SC_CHECK_STR(sc_serialise_by_name(p.serialise_by), "update_domain");
    cfg.serialise_by = (char *)"rack";
    SC_CHECK(sc_policy_from_cfg(&cfg, &p, err, sizeof(err)) < 0);
    SC_CHECK(strstr(err, "serialise-by: \"rack\" is not one of auto, fault_domain, update_domain, "
                         "vm") != NULL);
}

/* Strangers: the alert and the waiting text name them (the rest counted when too many); the
 * policy key reaches the parsed policy. */
SC_TEST(strangers_named)
{
    static const row_t r = {
        "strangers",
        FD2,
        {{.id = "E1", .strangers = "x9", .vms = "a0=prepared"},
         {.id = "E2",
          .strangers = "stranger_00,stranger_01,stranger_02,stranger_03,stranger_04,stranger_05",
          .vms = "a1=prepared"}},
        .expect = ""};
    sc_policy_cfg_t cfg = {.freeze_threshold_s = 9,
                           .max_fault_domains = 1,
                           .user_event_deadline_s = 120,
                           .deadline_margin_s = 60,
                           .approve_with_strangers = true,
                           .prepare_attempts = 3,
                           .prepare_retry_s = 30};
    world_t w;
    sc_plan_output_t out = {0};
    sc_policy_t p;
    char err[256] = "";

    SC_REQUIRE(s_plan_row(&r, &w, &out) == 0);
    SC_CHECK(strstr(out.waiting_for[0],
                    "1/1 drained; Resources name VMs outside the cluster "
                    "(x9): not approved (approve-with-strangers is off)") != NULL);
    SC_CHECK(strstr(out.waiting_for[1],
                    "(stranger_00, stranger_01, stranger_02, stranger_03 and 2 more)") != NULL);
    for (size_t k = 0; k < out.n_actions; k++)
        if (out.actions[k].event == 0)
            SC_CHECK(strstr(out.actions[k].reason, "outside the cluster (x9): members drained, "
                                                   "not approved") != NULL);
    sc_plan_output_release(&out);
    {
        /* a NULL list or a NULL name is the daemon's bug */
        sc_plan_input_t in = {w.m, w.n_m, w.pe, w.n_e, &w.pol, NOW_WALL, NOW_MS};

        w.strangers[0][0] = NULL;
        SC_CHECK_INT(sc_plan(&in, &out), -EINVAL);
        w.pe[0].strangers = NULL;
        SC_CHECK_INT(sc_plan(&in, &out), -EINVAL);
    }
    SC_CHECK_INT(sc_policy_from_cfg(&cfg, &p, err, sizeof(err)), 0);
    SC_CHECK(p.approve_with_strangers);
    sc_policy_defaults(&p);
    SC_CHECK(!p.approve_with_strangers);
}

/* The drain queue the planner considers (and the forecast takes): Preempt first, then
 * NotBefore, first seen; not what drains nothing, is over or started. Its classes and queue
 * positions are in the output. */
SC_TEST(queue_order_and_classes)
{
    static const row_t r = {
        "queue",
        FD2,
        {{.id = "E1", .nb = 600, .vms = "a0=none"},
         {.id = "E2", .nb = 300, .vms = "b0=none"},
         {.id = "F1", .type = "Freeze", .dur = "5", .vms = "a1=none"},
         {.id = "P1", .type = "Preempt", .nb = 30, .vms = "b1=none"},
         {.id = "E3", .nb = 300, .seen_ago_s = 10, .vms = "a1=none"},
         {.id = "U1", .user = true, .started = true, .start = SC_START_APPROVED, .nb = NB_NONE}},
        .expect = ""};
    static const size_t want[] = {3, 4, 1, 0};
    world_t w;
    sc_plan_output_t out = {0};
    size_t order[MAX_E], n = 99;

    SC_REQUIRE(s_plan_row(&r, &w, &out) == 0);
    {
        sc_plan_input_t in = {w.m, w.n_m, w.pe, w.n_e, &w.pol, NOW_WALL, NOW_MS};
        SC_CHECK_INT(sc_plan_queue(&in, order, &n), 0);
        SC_CHECK_INT(sc_plan_queue(NULL, order, &n), -EINVAL);
    }
    SC_REQUIRE(n == 4);
    for (size_t k = 0; k < n; k++) {
        SC_CHECK_INT(order[k], want[k]);
        SC_CHECK_INT(out.drain_rank[want[k]], k);
    }
    SC_CHECK_INT(out.drain_rank[2], SC_PLAN_NONE);
    SC_CHECK_INT(out.drain_rank[5], SC_PLAN_NONE);
    SC_CHECK_INT(out.ev_class[2], SC_CLASS_NO_DRAIN);
    SC_CHECK_INT(out.ev_class[3], SC_CLASS_EVICT);
    SC_CHECK_INT(out.ev_class[5], SC_CLASS_USER);
    SC_CHECK_INT(out.ev_class[0], SC_CLASS_PLATFORM);
    sc_plan_output_release(&out);
}

/* The forecast's why is the alert's reason and in the waiting text. */
SC_TEST(forecast_late_says_why)
{
    static const row_t r = {
        "why",
        FD2,
        {{.id = "P1", .type = "Preempt", .late = true, .nb = 30, .vms = "b0=none"}},
        .expect = ""};
    world_t w;
    sc_plan_output_t out = {0};
    bool alerted = false;

    SC_REQUIRE(s_plan_row(&r, &w, &out) == 0);
    for (size_t k = 0; k < out.n_actions; k++)
        if (out.actions[k].alert == SC_ALERT_FORECAST_LATE) {
            alerted = true;
            SC_CHECK_STR(out.actions[k].reason,
                         "event P1 (Preempt) will not be drained in time, by the forecast: "
                         "at risk: a0 (prepare p95 41 s of 5 runs)");
        }
    SC_CHECK(alerted);
    SC_CHECK(strstr(out.waiting_for[0], "forecast: at risk: a0") != NULL);
    sc_plan_output_release(&out);
}

int main(void)
{
    SC_RUN(table);
    SC_RUN(queue_order_and_classes);
    SC_RUN(forecast_late_says_why);
    SC_RUN(member_states);
    SC_RUN(waiting_for_queued);
    SC_RUN(drain_rank);
    SC_RUN(rollout_simulation);
    SC_RUN(waiting_for_update_domain);
    SC_RUN(waiting_for_held);
    SC_RUN(bad_input);
    SC_RUN(names_round_trip);
    SC_RUN(policy_parsing);
    SC_RUN(policy_serialise_by);
    SC_RUN(strangers_named);
    SC_RUN(closable_only_when_nothing_is_owed);
    return sc_test_done();
}
