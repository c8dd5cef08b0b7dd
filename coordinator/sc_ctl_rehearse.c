/* schedcoordctl rehearse and plan: the requests, the wait for a rehearsal to end, and the text
 * renderings of a rehearsal's report and of the last plan round (see sc_ctl.h). */
#include "sc_ctl.h"

#include "sc_error.h"
#include "sc_forecast.h"
#include "sc_time.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define S_POLL_MS 500 /* how often a waiting rehearse asks for the report */
#define S_UNREACHABLE_MS                                                                           \
    60000 /* rehearse gives up waiting after the coordinator is gone this long */

static const char *s_s(json_object *o, const char *key, const char *def)
{
    json_object *v;

    if (!o || !json_object_object_get_ex(o, key, &v) || !v)
        return def;
    return json_object_get_string(v);
}

static json_object *s_a(json_object *o, const char *key)
{
    json_object *v;

    if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_array))
        return NULL;
    return v;
}

/* A duration in seconds (a JSON number or null) for humans. */
static const char *s_dur(json_object *o, const char *key, char *buf, size_t len)
{
    json_object *v;

    if (!o || !json_object_object_get_ex(o, key, &v) || !v)
        return "-";
    sc_forecast_duration(json_object_get_double(v), buf, len);
    return buf;
}

static void s_clock(int64_t ms, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    if (ms <= 0 || !gmtime_r(&t, &tm) || !strftime(buf, len, "%H:%M:%S UTC", &tm))
        snprintf(buf, len, "-");
}

/* ---- requests ------------------------------------------------------------------------------ */

/* The coordinator's answer to req (a JSON object, consumed), or NULL with err (unreachable: *ret_rc
 * < 0; the coordinator's own refusal: *ret_rc 0). */
static json_object *s_ask(const char *dir, json_object *req, int *ret_rc, char *err, size_t errlen)
{
    char path[4096];
    json_object *ans = NULL, *e;
    int rc;

    snprintf(path, sizeof(path), "%s/%s", dir, SC_CTL_SOCKET_NAME);
    rc = sc_ctl_request(path, json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN), 5000,
                        &ans, err, errlen);
    json_object_put(req);
    *ret_rc = rc < 0 ? rc : 0;
    if (rc < 0)
        return NULL;
    if (json_object_object_get_ex(ans, "error", &e)) {
        snprintf(err, errlen, "coordinator says: %s", json_object_get_string(e));
        json_object_put(ans);
        return NULL;
    }
    return ans;
}

static json_object *s_cmd(const char *cmd)
{
    json_object *o = json_object_new_object();

    json_object_object_add(o, "cmd", json_object_new_string(cmd));
    return o;
}

int sc_ctl_rehearse_arg(json_object **req, const char *opt, const char *val, char *err,
                        size_t errlen)
{
    char *end = NULL;

    if (strcmp(opt, "--event-type") && strcmp(opt, "--fault-domain") && strcmp(opt, "--vms") &&
        strcmp(opt, "--recover-after"))
        return 0;
    if (!val || !val[0])
        return sc_errf(err, errlen, -EINVAL, "%s: missing value", opt);
    if (!*req)
        *req = s_cmd("rehearse");
    if (!strcmp(opt, "--event-type")) {
        json_object_object_add(*req, "event_type", json_object_new_string(val));
    } else if (!strcmp(opt, "--fault-domain")) {
        long fd = strtol(val, &end, 10);
        if (*end || fd < 0 || fd > 1023)
            return sc_errf(err, errlen, -EINVAL, "--fault-domain: \"%s\" is not 0..1023", val);
        json_object_object_add(*req, "fault_domain", json_object_new_int((int)fd));
    } else if (!strcmp(opt, "--recover-after")) {
        double s = strtod(val, &end);
        if (*end || !(s >= 0 && s <= 86400))
            return sc_errf(err, errlen, -EINVAL, "--recover-after: \"%s\" is not 0..86400 seconds",
                           val);
        json_object_object_add(*req, "recover_after_s", json_object_new_double(s));
    } else {
        json_object *vms = json_object_new_array();
        for (const char *p = val; *p;) {
            size_t n = strcspn(p, ",");
            if (!n || n > 128) {
                json_object_put(vms);
                return sc_errf(err, errlen, -EINVAL, "--vms: \"%s\" is not a list of names", val);
            }
            json_object_array_add(vms, json_object_new_string_len(p, (int)n));
            p += n + (p[n] == ',');
        }
        json_object_object_add(*req, "vms", vms);
    }
    if (strlen(json_object_to_json_string_ext(*req, JSON_C_TO_STRING_PLAIN)) + 2 >
        SC_CTL_REQUEST_MAX)
        return sc_errf(err, errlen, -EINVAL, "%s: too long for one request", opt);
    return 1;
}

/* ---- renderings ---------------------------------------------------------------------------- */

void sc_ctl_print_report(json_object *r, FILE *out)
{
    json_object *vms = s_a(r, "vms"), *doms = s_a(r, "fault_domains"), *text = s_a(r, "text");
    json_object *fails = s_a(r, "failures"), *verdicts = s_a(r, "verdicts");
    const char *dk = "fault_domain";
    char a[32], b[32];

    if (!doms) {
        doms = s_a(r, "update_domains");
        dk = "update_domain";
    }
    fprintf(out, "%s\n\n",
            text && json_object_array_length(text)
                ? json_object_get_string(json_object_array_get_idx(text, 0))
                : "Rehearsal");
    fprintf(out, "%-16s %3s %3s %10s %10s  %s\n", "VM", "FD", "UD", "PREPARE", "RECOVER", "RESULT");
    for (size_t i = 0; vms && i < json_object_array_length(vms); i++) {
        json_object *v = json_object_array_get_idx(vms, i);
        fprintf(out, "%-16s %3s %3s %10s %10s  %s\n", s_s(v, "name", "?"),
                s_s(v, "fault_domain", "-"), s_s(v, "update_domain", "-"),
                s_dur(v, "prepare_s", a, sizeof(a)), s_dur(v, "recover_s", b, sizeof(b)),
                s_s(v, "status", ""));
    }
    fprintf(out, "\n%-13s %10s %10s  %s\n",
            strcmp(dk, "fault_domain") ? "UPDATE DOMAIN" : "FAULT DOMAIN", "PREPARE", "RECOVER",
            "VMS");
    for (size_t i = 0; doms && i < json_object_array_length(doms); i++) {
        json_object *d = json_object_array_get_idx(doms, i), *dv = s_a(d, "vms");
        int dom = (int)json_object_get_int64(json_object_object_get(d, dk));
        char name[16] = "?";
        if (dom >= 0)
            snprintf(name, sizeof(name), "%d", dom);
        fprintf(out, "%-13s %10s %10s  ", name, s_dur(d, "prepare_s", a, sizeof(a)),
                s_dur(d, "recover_s", b, sizeof(b)));
        for (size_t k = 0; dv && k < json_object_array_length(dv); k++)
            fprintf(out, "%s%s", k ? ", " : "",
                    json_object_get_string(json_object_array_get_idx(dv, k)));
        fprintf(out, "\n");
    }
    if (fails && json_object_array_length(fails)) {
        fprintf(out, "\nFailures:\n");
        for (size_t i = 0; i < json_object_array_length(fails); i++) {
            json_object *f = json_object_array_get_idx(fails, i);
            fprintf(out, "  %s: %s %s (exit %s): %s\n", s_s(f, "vm", "?"), s_s(f, "phase", "?"),
                    s_s(f, "result", "?"), s_s(f, "exit_status", "?"),
                    s_s(f, "output_tail", "")[0] ? s_s(f, "output_tail", "") : "(no output)");
        }
    }
    fprintf(out, "\nVerdicts (against each event type's notice):\n");
    for (size_t i = 0; verdicts && i < json_object_array_length(verdicts); i++)
        fprintf(out, "  %s\n", s_s(json_object_array_get_idx(verdicts, i), "text", ""));
}

void sc_ctl_print_plan(json_object *p, FILE *out)
{
    json_object *events = s_a(p, "events"), *actions = s_a(p, "actions"), *hist;
    char t[32], a[32], b[32];

    s_clock(json_object_get_int64(json_object_object_get(p, "planned_ms")), t, sizeof(t));
    fprintf(out,
            "leader %s, term %s; last plan round %s; serialise-by %s, max-fault-domains %s%s\n",
            s_s(p, "leader", "?"), s_s(p, "term", "?"), t, s_s(p, "serialise_by", "?"),
            s_s(p, "max_fault_domains", "?"),
            json_object_get_boolean(json_object_object_get(p, "paused")) ? "; PAUSED" : "");
    fprintf(out, "\n%-38s %-9s %-9s %5s  %s\n", "EVENT", "TYPE", "CLASS", "QUEUE", "FORECAST");
    if (!events || !json_object_array_length(events))
        fprintf(out, "(no events)\n");
    for (size_t i = 0; events && i < json_object_array_length(events); i++) {
        json_object *e = json_object_array_get_idx(events, i), *f = NULL;
        char fc[96] = "-";

        json_object_object_get_ex(e, "forecast", &f);
        if (f) {
            s_clock(json_object_get_int64(json_object_object_get(f, "drained_ms")), a, sizeof(a));
            snprintf(fc, sizeof(fc), "drained %s: %s", a,
                     json_object_get_boolean(json_object_object_get(f, "fits")) ? "fits"
                                                                                : "DOES NOT FIT");
        }
        fprintf(out, "%-38s %-9s %-9s %5s  %s\n", s_s(e, "EventId", "?"), s_s(e, "type", "?"),
                s_s(e, "class", "?"), s_s(e, "queue_position", "-"), fc);
        fprintf(out, "  waiting for: %s\n", s_s(e, "waiting_for", "-"));
        if (f && s_s(f, "why", NULL))
            fprintf(out, "  forecast: %s\n", s_s(f, "why", ""));
    }
    if (actions && json_object_array_length(actions)) {
        fprintf(out, "\nactions of that round:\n");
        for (size_t i = 0; i < json_object_array_length(actions); i++) {
            json_object *x = json_object_array_get_idx(actions, i);
            fprintf(out, "  %s%s%s%s%s: %s\n", s_s(x, "action", "?"),
                    s_s(x, "alert", NULL) ? " " : "", s_s(x, "alert", ""),
                    s_s(x, "member", NULL) ? " " : "", s_s(x, "member", ""), s_s(x, "reason", ""));
        }
    }
    if (json_object_object_get_ex(p, "history", &hist) && hist) {
        fprintf(out, "\n%-16s %-28s %s\n", "HOOKS (history)", "PREPARE median / p95 (runs)",
                "RECOVER median / p95 (runs)");
        json_object_object_foreach(hist, vm, h)
        {
            json_object *pr = json_object_object_get(h, "prepare");
            json_object *rc = json_object_object_get(h, "recover");
            char x[112], y[112], m1[32], m2[32];
            snprintf(x, sizeof(x), "%s / %s (%s)", s_dur(pr, "median_s", m1, sizeof(m1)),
                     s_dur(pr, "p95_s", m2, sizeof(m2)), s_s(pr, "count", "0"));
            snprintf(y, sizeof(y), "%s / %s (%s)", s_dur(rc, "median_s", a, sizeof(a)),
                     s_dur(rc, "p95_s", b, sizeof(b)), s_s(rc, "count", "0"));
            if (!json_object_get_int64(json_object_object_get(pr, "count")))
                snprintf(x, sizeof(x), "no history");
            if (!json_object_get_int64(json_object_object_get(rc, "count")))
                snprintf(y, sizeof(y), "no history");
            fprintf(out, "%-16s %-28s %s\n", vm, x, y);
        }
    }
}

/* ---- the commands -------------------------------------------------------------------------- */

int sc_ctl_plan(const char *dir, bool as_json, FILE *out, FILE *errf)
{
    char err[600] = "";
    int rc;
    json_object *ans = s_ask(dir, s_cmd("plan"), &rc, err, sizeof(err));

    if (!ans) {
        fprintf(errf, "schedcoordctl: %s\n", err);
        return 1;
    }
    if (as_json)
        fprintf(out, "%s\n", json_object_to_json_string_ext(ans, JSON_C_TO_STRING_PRETTY));
    else
        sc_ctl_print_plan(ans, out);
    json_object_put(ans);
    return 0;
}

static void s_sleep_ms(int ms)
{
    poll(NULL, 0, ms);
}

int sc_ctl_rehearse(const char *dir, json_object *req, bool as_json, FILE *out, FILE *errf)
{
    char err[600] = "";
    int64_t id, lost = 0;
    json_object *ans, *rep = NULL, *q;
    bool ok = true;
    int rc;

    if (!(ans = s_ask(dir, req ? req : s_cmd("rehearse"), &rc, err, sizeof(err)))) {
        fprintf(errf, "schedcoordctl: %s\n", err);
        return 1;
    }
    id = json_object_get_int64(json_object_object_get(ans, "rehearsal"));
    fprintf(errf,
            "rehearsal %lld: %s of %s, %zu event%s; nothing is POSTed. Waiting for it to end "
            "(Ctrl-C leaves it running).\n",
            (long long)id, s_s(ans, "event_type", "?"), s_s(ans, "scope", "?"),
            s_a(ans, "events") ? json_object_array_length(s_a(ans, "events")) : 0,
            s_a(ans, "events") && json_object_array_length(s_a(ans, "events")) == 1 ? "" : "s");
    fflush(errf);
    json_object_put(ans);
    for (;;) {
        q = s_cmd("rehearsal");
        json_object_object_add(q, "id", json_object_new_int64(id));
        json_object_put(rep);
        if ((rep = s_ask(dir, q, &rc, err, sizeof(err))) &&
            json_object_get_boolean(json_object_object_get(rep, "over")))
            break;
        if (!rep && rc == 0) { /* the coordinator refused: it lost the rehearsal */
            fprintf(errf, "schedcoordctl: %s\n", err);
            return 1;
        }
        if (!rep && !lost)
            lost = sc_mono_ms();
        else if (rep)
            lost = 0;
        if (lost && sc_mono_ms() - lost > S_UNREACHABLE_MS) {
            fprintf(errf,
                    "schedcoordctl: %s; the rehearsal goes on without us (schedcoordctl history)\n",
                    err);
            return 1;
        }
        s_sleep_ms(S_POLL_MS);
    }
    if (as_json)
        fprintf(out, "%s\n", json_object_to_json_string_ext(rep, JSON_C_TO_STRING_PRETTY));
    else
        sc_ctl_print_report(rep, out);
    ok = !json_object_get_boolean(json_object_object_get(rep, "stopped"));
    for (size_t i = 0; s_a(rep, "vms") && i < json_object_array_length(s_a(rep, "vms")); i++)
        ok = ok && json_object_get_boolean(
                       json_object_object_get(json_object_array_get_idx(s_a(rep, "vms"), i), "ok"));
    json_object_put(rep);
    return ok ? 0 : 1;
}
