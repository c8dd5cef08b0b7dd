/* sc_metrics: Prometheus text from a coordinator status; one HTTP request answered. */
#include "sc_metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sc_time.h"

/* ---- rendering ----------------------------------------------------------------------- */

static json_object *s_get(json_object *o, const char *key, json_type type)
{
    json_object *v;
    if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, type))
        return NULL;
    return v;
}

/* A label value, escaped as the format wants (backslash, double quote, newline). */
static void s_label(FILE *f, const char *name, const char *value)
{
    fprintf(f, "%s=\"", name);
    for (const char *p = value; *p; p++) {
        if (*p == '\\' || *p == '"')
            fputc('\\', f), fputc(*p, f);
        else if (*p == '\n')
            fputs("\\n", f);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void s_head(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{label="key"} value for every integer member of obj (a JSON object of counts). */
static void s_by_key(FILE *f, const char *name, const char *label, json_object *obj)
{
    if (!obj)
        return;
    json_object_object_foreach(obj, k, v)
    {
        if (!json_object_is_type(v, json_type_int))
            continue;
        fprintf(f, "%s{", name);
        s_label(f, label, k);
        fprintf(f, "} %" PRId64 "\n", json_object_get_int64(v));
    }
}

/* counts[key] += 1 (counts: a JSON object of ints) */
static void s_bump(json_object *counts, const char *key)
{
    json_object *v;
    if (json_object_object_get_ex(counts, key, &v))
        json_object_set_int64(v, json_object_get_int64(v) + 1);
    else
        json_object_object_add(counts, key, json_object_new_int64(1));
}

static void s_scalar(FILE *f, json_object *st, const char *key, const char *name, const char *type,
                     const char *help)
{
    json_object *v = s_get(st, key, json_type_int);
    if (!v)
        return;
    s_head(f, name, type, help);
    fprintf(f, "%s %" PRId64 "\n", name, json_object_get_int64(v));
}

/* Starts a sample of family for member m: "family{member=\"NAME\"" (the caller adds labels and
 * closes it), or false (nothing written) when m has no name. */
static bool s_member_open(FILE *f, const char *family, json_object *m)
{
    json_object *name = s_get(m, "name", json_type_string);
    if (!name)
        return false;
    fprintf(f, "%s{", family);
    s_label(f, "member", json_object_get_string(name));
    return true;
}

static void s_members(FILE *f, json_object *members)
{
    json_object *by_state = json_object_new_object();
    size_t n = json_object_array_length(members);

    s_head(f, "schedcoord_member_up", "gauge",
           "1 while the member's agent reports (heartbeats within --dead-after)");
    for (size_t i = 0; i < n; i++) {
        json_object *m = json_object_array_get_idx(members, i);
        json_object *fd = s_get(m, "fault_domain", json_type_int);
        json_object *ud = s_get(m, "update_domain", json_type_int);
        json_object *state = s_get(m, "state", json_type_string);
        if (!s_member_open(f, "schedcoord_member_up", m))
            continue;
        fprintf(f, ",fault_domain=\"%" PRId64 "\",update_domain=\"%" PRId64 "\"} %d\n",
                fd ? json_object_get_int64(fd) : -1, ud ? json_object_get_int64(ud) : -1,
                json_object_get_boolean(s_get(m, "alive", json_type_boolean)) ? 1 : 0);
        if (state)
            s_bump(by_state, json_object_get_string(state));
    }
    s_head(f, "schedcoord_member_blind", "gauge",
           "1 while the member's agent runs but its IMDS has failed for longer than --imds-stale");
    for (size_t i = 0; i < n; i++) {
        json_object *m = json_object_array_get_idx(members, i);
        if (s_member_open(f, "schedcoord_member_blind", m))
            fprintf(f, "} %d\n",
                    json_object_get_boolean(s_get(m, "imds_stale", json_type_boolean)) ? 1 : 0);
    }
    s_head(f, "schedcoord_member_state", "gauge",
           "1 for the member's state (healthy, draining, drained, impacted, recovering, gone...)");
    for (size_t i = 0; i < n; i++) {
        json_object *m = json_object_array_get_idx(members, i);
        json_object *state = s_get(m, "state", json_type_string);
        if (!state || !s_member_open(f, "schedcoord_member_state", m))
            continue;
        fputc(',', f);
        s_label(f, "state", json_object_get_string(state));
        fputs("} 1\n", f);
    }
    s_head(f, "schedcoord_members", "gauge", "members by state");
    s_by_key(f, "schedcoord_members", "state", by_state);
    json_object_put(by_state);
}

/* Opens a sample "family{event_id=\"ID\"" of event e (false: no id, nothing written). */
static bool s_event_open(FILE *f, const char *family, json_object *e)
{
    json_object *id = s_get(e, "EventId", json_type_string);

    if (!id)
        return false;
    fprintf(f, "%s{", family);
    s_label(f, "event_id", json_object_get_string(id));
    return true;
}

/* The last plan round's forecast of each event that has one (the same as schedcoordctl plan). */
static void s_forecasts(FILE *f, json_object *events)
{
    size_t n = json_object_array_length(events);

    s_head(f, "schedcoord_forecast_fits", "gauge",
           "1 when the forecast (from the hooks' history) has the event drained by its deadline "
           "(NotBefore - deadline-margin-s; NotBefore for Preempt/Terminate), 0 when not");
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(events, i);
        json_object *fc = s_get(e, "forecast", json_type_object);
        json_object *type = s_get(e, "type", json_type_string);
        if (!fc || !s_event_open(f, "schedcoord_forecast_fits", e))
            continue;
        fputc(',', f);
        s_label(f, "type", type ? json_object_get_string(type) : "unknown");
        fprintf(f, "} %d\n", json_object_get_boolean(s_get(fc, "fits", json_type_boolean)) ? 1 : 0);
    }
    s_head(f, "schedcoord_forecast_slack_seconds", "gauge",
           "deadline minus the forecast time the event is drained (negative: late)");
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(events, i);
        json_object *fc = s_get(e, "forecast", json_type_object);
        json_object *dl = fc ? s_get(fc, "deadline_ms", json_type_int) : NULL;
        json_object *dr = fc ? s_get(fc, "drained_ms", json_type_int) : NULL;
        int64_t ms;
        if (!dl || !dr || !s_event_open(f, "schedcoord_forecast_slack_seconds", e))
            continue;
        ms = json_object_get_int64(dl) - json_object_get_int64(dr);
        fprintf(f, "} %s%" PRId64 ".%03" PRId64 "\n", ms < 0 ? "-" : "", (ms < 0 ? -ms : ms) / 1000,
                (ms < 0 ? -ms : ms) % 1000);
    }
    s_head(f, "schedcoord_forecast_at_risk", "gauge",
           "1 for each VM forecast drained after its event's deadline");
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(events, i);
        json_object *fc = s_get(e, "forecast", json_type_object);
        json_object *risk = fc ? s_get(fc, "at_risk", json_type_array) : NULL;
        for (size_t k = 0; risk && k < json_object_array_length(risk); k++) {
            json_object *vm = json_object_array_get_idx(risk, k);
            if (!json_object_is_type(vm, json_type_string) ||
                !s_event_open(f, "schedcoord_forecast_at_risk", e))
                continue;
            fputc(',', f);
            s_label(f, "member", json_object_get_string(vm));
            fputs("} 1\n", f);
        }
    }
}

/* Per member and phase, its hooks' durations (the forecasts' history). */
static void s_hook_durations(FILE *f, json_object *h)
{
    static const char *const phases[] = {"prepare", "recover"};

    s_head(f, "schedcoord_hook_duration_seconds", "gauge",
           "a member's hook durations over its newest runs that succeeded (real events and "
           "rehearsals), by phase and stat (median, p95)");
    json_object_object_foreach(h, vm, per)
    {
        for (int p = 0; p < 2; p++) {
            json_object *st = s_get(per, phases[p], json_type_object);
            json_object *cnt = st ? s_get(st, "count", json_type_int) : NULL;
            static const char *const stats[] = {"median", "p95"};
            static const char *const keys[] = {"median_s", "p95_s"};
            if (!cnt || !json_object_get_int64(cnt))
                continue;
            for (int k = 0; k < 2; k++) {
                json_object *v = s_get(st, keys[k], json_type_double);
                fputs("schedcoord_hook_duration_seconds{", f);
                s_label(f, "member", vm);
                fputc(',', f);
                s_label(f, "phase", phases[p]);
                fputc(',', f);
                s_label(f, "stat", stats[k]);
                fprintf(f, "} %.3f\n", v ? json_object_get_double(v) : 0.0);
            }
        }
    }
    s_head(f, "schedcoord_hook_duration_runs", "gauge",
           "runs the hook durations are computed from, by member and phase");
    json_object_object_foreach(h, vm2, per2)
    {
        for (int p = 0; p < 2; p++) {
            json_object *st = s_get(per2, phases[p], json_type_object);
            json_object *cnt = st ? s_get(st, "count", json_type_int) : NULL;
            if (!cnt)
                continue;
            fputs("schedcoord_hook_duration_runs{", f);
            s_label(f, "member", vm2);
            fputc(',', f);
            s_label(f, "phase", phases[p]);
            fprintf(f, "} %" PRId64 "\n", json_object_get_int64(cnt));
        }
    }
}

static void s_events(FILE *f, json_object *events)
{
    json_object *by_drain = json_object_new_object(), *by_labels = json_object_new_object();
    size_t n = json_object_array_length(events), waiting = 0;

    s_head(f, "schedcoord_events", "gauge",
           "events not yet over (the platform's document still holds them), by type, status, "
           "source and approval");
    for (size_t i = 0; i < n; i++) {
        char *labels = NULL;
        size_t llen = 0;
        FILE *lf;
        json_object *e = json_object_array_get_idx(events, i), *drains;
        json_object *type = s_get(e, "type", json_type_string);
        json_object *status = s_get(e, "status", json_type_string);
        json_object *source = s_get(e, "source", json_type_string);
        json_object *approval = s_get(e, "approval", json_type_string);

        if ((drains = s_get(e, "drains", json_type_object))) {
            json_object_object_foreach(drains, vm, d)
            {
                (void)vm;
                if (json_object_is_type(d, json_type_string) &&
                    strcmp(json_object_get_string(d), "none") != 0)
                    s_bump(by_drain, json_object_get_string(d));
            }
        }
        if (s_get(e, "ended_ms", json_type_int))
            continue; /* over: kept in the status a while, no longer an event */
        if (s_get(e, "waiting_for", json_type_string))
            waiting++;
        /* one series per label set: events alike are counted, never repeated */
        if (!(lf = open_memstream(&labels, &llen)))
            continue;
        s_label(lf, "type", type ? json_object_get_string(type) : "unknown");
        fputc(',', lf);
        s_label(lf, "status", status ? json_object_get_string(status) : "unknown");
        fputc(',', lf);
        s_label(lf, "source", source ? json_object_get_string(source) : "unknown");
        fputc(',', lf);
        s_label(lf, "approval", approval ? json_object_get_string(approval) : "unknown");
        if (fclose(lf) == 0 && labels)
            s_bump(by_labels, labels);
        free(labels);
    }
    json_object_object_foreach(by_labels, labels, count)
    {
        fprintf(f, "schedcoord_events{%s} %" PRId64 "\n", labels, json_object_get_int64(count));
    }
    json_object_put(by_labels);
    s_head(f, "schedcoord_events_waiting", "gauge",
           "events not yet over that wait for something (schedcoordctl events says what)");
    fprintf(f, "schedcoord_events_waiting %zu\n", waiting);
    s_head(f, "schedcoord_drains", "gauge",
           "VMs of recent events by drain state (prepare_ordered, preparing, prepared, "
           "recovering, recovered...)");
    s_by_key(f, "schedcoord_drains", "state", by_drain);
    json_object_put(by_drain);
    s_forecasts(f, events);
}

/* The notifier's counters per target ("notify": sc_notify_stats_json's array): one series per
 * target, labelled by its place in --notify (1, 2...: two targets may share a host), its
 * format and its scheme and host (the URL's path is the webhook's secret). */
static void s_notify(FILE *f, json_object *targets)
{
    static const struct {
        const char *key, *name, *type, *help;
    } fam[] = {
        {"sent", "schedcoord_notify_sent_total", "counter", "notifications delivered (2xx)"},
        {"failed", "schedcoord_notify_failed_total", "counter",
         "notifications given up: attempts used up, or an answer not worth a retry"},
        {"dropped", "schedcoord_notify_dropped_total", "counter",
         "notifications dropped: the target's queue was full, or left at stop"},
        {"retried", "schedcoord_notify_retried_total", "counter",
         "attempts after a notification's first (network errors, 5xx, 408, 429)"},
        {"queued", "schedcoord_notify_queued", "gauge",
         "notifications waiting for the target, the one in flight included"},
    };
    size_t n = json_object_array_length(targets);

    for (size_t k = 0; k < sizeof(fam) / sizeof(fam[0]); k++) {
        s_head(f, fam[k].name, fam[k].type, fam[k].help);
        for (size_t i = 0; i < n; i++) {
            json_object *t = json_object_array_get_idx(targets, i);
            json_object *fmt = s_get(t, "format", json_type_string);
            json_object *label = s_get(t, "target", json_type_string);
            json_object *v = s_get(t, fam[k].key, json_type_int);
            const char *host = label ? strchr(json_object_get_string(label), ' ') : NULL;
            char idx[24];

            if (!v)
                continue;
            snprintf(idx, sizeof(idx), "%zu", i + 1);
            fprintf(f, "%s{", fam[k].name);
            s_label(f, "target", idx);
            fputc(',', f);
            s_label(f, "format", fmt ? json_object_get_string(fmt) : "");
            fputc(',', f);
            s_label(f, "endpoint", host ? host + 1 : "");
            fprintf(f, "} %" PRId64 "\n", json_object_get_int64(v));
        }
    }
}

/* The members digest (issue 20): how many members disagree with ours now and, when one does,
 * who and with which digests; left out when the status has no such field (older coordinator). */
static void s_members_mismatch(FILE *f, json_object *st)
{
    json_object *mm, *others, *peer, *ours, *theirs;
    int64_t n = 0;

    if (!json_object_object_get_ex(st, "members_mismatch", &mm))
        return;
    if (mm && json_object_is_type(mm, json_type_object)) {
        others = s_get(mm, "others", json_type_array);
        n = 1 + (others ? (int64_t)json_object_array_length(others) : 0);
    }
    s_head(f, "schedcoord_members_mismatch", "gauge",
           "members whose coordinator runs with another members digest (--members, --voters) "
           "than this one's: their messages are refused");
    fprintf(f, "schedcoord_members_mismatch %" PRId64 "\n", n);
    if (!n || !(peer = s_get(mm, "peer", json_type_string)) ||
        !(ours = s_get(mm, "ours", json_type_string)) ||
        !(theirs = s_get(mm, "theirs", json_type_string)))
        return;
    s_head(f, "schedcoord_members_mismatch_info", "gauge",
           "the member that disagrees (one of our voters first) and both digests");
    fputs("schedcoord_members_mismatch_info{", f);
    s_label(f, "peer", json_object_get_string(peer));
    fputc(',', f);
    s_label(f, "ours", json_object_get_string(ours));
    fputc(',', f);
    s_label(f, "theirs", json_object_get_string(theirs));
    fputs("} 1\n", f);
}

static void s_counters(FILE *f, json_object *c)
{
    json_object *notify = s_get(c, "notify", json_type_array);

    json_object *hooks = s_get(c, "hook_reports", json_type_object);

    s_head(f, "schedcoord_approval_posts_total", "counter",
           "approval POSTs through this VM's IMDS, by result (a failed one is retried)");
    s_by_key(f, "schedcoord_approval_posts_total", "result",
             s_get(c, "approval_posts", json_type_object));
    s_scalar(f, c, "approvals_delegated", "schedcoord_approvals_delegated_total", "counter",
             "approvals handed to a member whose IMDS answers (approve_via)");
    s_head(f, "schedcoord_orders_total", "counter", "prepare and recover orders sent to agents");
    s_by_key(f, "schedcoord_orders_total", "phase", s_get(c, "orders", json_type_object));
    s_head(f, "schedcoord_hook_reports_total", "counter",
           "hook reports received from agents, by phase and state");
    if (hooks) {
        json_object_object_foreach(hooks, phase, by)
        {
            if (!json_object_is_type(by, json_type_object))
                continue;
            json_object_object_foreach(by, state, n)
            {
                if (!json_object_is_type(n, json_type_int))
                    continue;
                fputs("schedcoord_hook_reports_total{", f);
                s_label(f, "phase", phase);
                fputc(',', f);
                s_label(f, "state", state);
                fprintf(f, "} %" PRId64 "\n", json_object_get_int64(n));
            }
        }
    }
    s_head(f, "schedcoord_alerts_total", "counter",
           "alerts raised (schedcoordctl history shows each), by kind");
    s_by_key(f, "schedcoord_alerts_total", "alert", s_get(c, "alerts", json_type_object));
    s_scalar(f, c, "events_new", "schedcoord_events_seen_total", "counter", "events first seen");
    s_scalar(f, c, "members_mismatch_refused", "schedcoord_members_mismatch_refused_total",
             "counter",
             "coordinator messages refused: their sender runs with another members digest");
    s_head(f, "schedcoord_imds_malformed_events_total", "counter",
           "malformed IMDS events a member's agent left out of its document (the other events "
           "kept), once per incarnation");
    s_by_key(f, "schedcoord_imds_malformed_events_total", "member",
             s_get(c, "imds_malformed_events", json_type_object));
    if (notify)
        s_notify(f, notify);
}

int sc_metrics_render(json_object *st, char **ret_text)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    json_object *v, *self, *role;

    if (!ret_text)
        return -EINVAL;
    *ret_text = NULL;
    if (!st || !json_object_is_type(st, json_type_object))
        return -EINVAL;
    if (!(f = open_memstream(&buf, &len)))
        return -ENOMEM;
    self = s_get(st, "self", json_type_string);
    role = s_get(st, "role", json_type_string);
    s_head(f, "schedcoord_info", "gauge", "this coordinator: its member name and role");
    fputs("schedcoord_info{", f);
    s_label(f, "member", self ? json_object_get_string(self) : "");
    fputc(',', f);
    s_label(f, "role", role ? json_object_get_string(role) : "");
    fputc(',', f);
    v = s_get(st, "leader", json_type_string);
    s_label(f, "leader", v ? json_object_get_string(v) : "");
    fputs("} 1\n", f);
    s_head(f, "schedcoord_leader", "gauge", "1 while this coordinator leads (it alone approves)");
    fprintf(f, "schedcoord_leader %d\n", role && !strcmp(json_object_get_string(role), "leader"));
    s_scalar(f, st, "term", "schedcoord_term", "gauge", "this coordinator's term");
    if ((v = s_get(st, "paused", json_type_boolean))) {
        s_head(f, "schedcoord_paused", "gauge",
               "1 while approvals and new drains are paused (schedcoordctl pause)");
        fprintf(f, "schedcoord_paused %d\n", json_object_get_boolean(v) ? 1 : 0);
    }
    if ((v = s_get(st, "started_ms", json_type_int))) {
        int64_t ms = json_object_get_int64(v);
        s_head(f, "schedcoord_start_time_seconds", "gauge",
               "when this coordinator process started (Unix time)");
        fprintf(f, "schedcoord_start_time_seconds %" PRId64 ".%03" PRId64 "\n", ms / 1000,
                ms % 1000);
    }
    s_scalar(f, st, "rejected_messages", "schedcoord_rejected_messages_total", "counter",
             "wire messages refused (malformed, unauthenticated, stale)");
    s_members_mismatch(f, st);
    if ((v = s_get(st, "members", json_type_array)))
        s_members(f, v);
    if ((v = s_get(st, "events", json_type_array)))
        s_events(f, v);
    if ((v = s_get(st, "counters", json_type_object)))
        s_counters(f, v);
    if ((v = s_get(st, "hook_durations", json_type_object)))
        s_hook_durations(f, v);
    if (fclose(f) != 0 || !buf) {
        free(buf);
        return -ENOMEM;
    }
    *ret_text = buf;
    return 0;
}

/* ---- one HTTP request ---------------------------------------------------------------- */

int sc_metrics_http_status(const char *req, size_t len, bool *head)
{
    const char *end = NULL, *sp1, *sp2, *eol;
    size_t line;

    if (head)
        *head = false;
    for (size_t i = 0; i + 1 < len; i++) {
        if (req[i] == '\n' && req[i + 1] == '\n') {
            end = req + i;
            break;
        }
        if (i + 3 < len && !memcmp(req + i, "\r\n\r\n", 4)) {
            end = req + i;
            break;
        }
    }
    if (!end)
        return len >= SC_METRICS_REQ_MAX ? 400 : 0;
    if (memchr(req, '\0', (size_t)(end - req)))
        return 400;
    eol = memchr(req, '\n', len); /* found: the head ends with one */
    line = (size_t)(eol - req);
    if (line && req[line - 1] == '\r')
        line--;
    /* METHOD SP TARGET SP HTTP/1.x */
    if (!(sp1 = memchr(req, ' ', line)) || sp1 == req)
        return 400;
    if (!(sp2 = memchr(sp1 + 1, ' ', line - (size_t)(sp1 + 1 - req))) || sp2 == sp1 + 1)
        return 400;
    if ((size_t)(req + line - (sp2 + 1)) != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0 ||
        (sp2[8] != '0' && sp2[8] != '1'))
        return 400;
    for (const char *p = req; p < sp1; p++)
        if (*p < 'A' || *p > 'Z')
            return 400;
    for (const char *p = sp1 + 1; p < sp2; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
            return 400;
    bool is_get = sp1 - req == 3 && !memcmp(req, "GET", 3);
    bool is_head = sp1 - req == 4 && !memcmp(req, "HEAD", 4);
    if (!is_get && !is_head)
        return 405;
    size_t tlen = (size_t)(sp2 - sp1 - 1);
    if (!(tlen >= 8 && !memcmp(sp1 + 1, "/metrics", 8) && (tlen == 8 || sp1[9] == '?')))
        return 404;
    if (head)
        *head = is_head;
    return 200;
}

static int s_write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -errno;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void s_answer(int out, int status, const char *body, bool head)
{
    const char *reason = status == 200   ? "OK"
                         : status == 400 ? "Bad Request"
                         : status == 404 ? "Not Found"
                         : status == 405 ? "Method Not Allowed"
                                         : "Service Unavailable";
    char hdr[512];
    size_t blen = strlen(body);
    int n = snprintf(hdr, sizeof(hdr),
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
                     "Connection: close\r\n\r\n",
                     status, reason,
                     status == 200 ? "text/plain; version=0.0.4; charset=utf-8"
                                   : "text/plain; charset=utf-8",
                     blen, status == 405 ? "Allow: GET, HEAD\r\n" : "");
    if (s_write_all(out, hdr, (size_t)n) == 0 && !head)
        (void)s_write_all(out, body, blen);
}

int sc_metrics_serve_one(int in, int out, int timeout_ms, sc_metrics_render_fn render,
                         const void *userdata)
{
    char req[SC_METRICS_REQ_MAX], err[512] = "";
    size_t len = 0;
    int64_t deadline = sc_mono_ms() + timeout_ms;
    int status = 0;
    bool head = false;

    while ((status = sc_metrics_http_status(req, len, &head)) == 0) {
        int64_t left = deadline - sc_mono_ms();
        struct pollfd p = {.fd = in, .events = POLLIN};
        ssize_t r;

        if (left <= 0) {
            status = len ? 400 : 0;
            break;
        }
        if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
            return -errno;
        if (p.revents & POLLNVAL)
            return -EBADF;
        if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        r = read(in, req + len, sizeof(req) - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) { /* closed before the end of its head */
            status = len ? 400 : 0;
            break;
        }
        len += (size_t)r;
    }
    if (status == 0)
        return 0;
    if (status != 200) {
        char body[64];
        snprintf(body, sizeof(body), "%s\n",
                 status == 404   ? "not found: the metrics are at /metrics"
                 : status == 405 ? "method not allowed: GET or HEAD"
                                 : "bad request: not an HTTP/1.x request");
        s_answer(out, status, body, false);
        return status;
    }
    char *text = NULL;
    if (render(userdata, &text, err, sizeof(err)) < 0 || !text) {
        char body[600];
        snprintf(body, sizeof(body), "schedcoord coordinator unavailable: %s\n",
                 err[0] ? err : "no status");
        free(text);
        s_answer(out, 503, body, head);
        return 503;
    }
    s_answer(out, 200, text, head);
    free(text);
    return 200;
}
