/* sc_notify: the --notify setting, each kind in each format as a receiver sees it, retries,
 * a hung receiver (posts never wait, a full queue drops and counts, stop is bounded). */
#include "sc_error.h"
#include "sc_notify.h"
#include "sc_test.h"
#include "sc_time.h"
#include "webhook_receiver.h"

#include <errno.h>
#include <json-c/json.h>

#define S_WAIT_MS 10000 /* deadline of a wait for something that takes milliseconds */

/* 2026-11-23 13:00:00 UTC: the messages' time; the deadline is 14:05, the drain 13:50. */
#define S_TS_MS 1795438800000LL
#define S_DEADLINE_MS (S_TS_MS + 65 * 60 * 1000LL)
#define S_DRAIN_AT_MS (S_TS_MS + 50 * 60 * 1000LL)

static const char *const s_vms[] = {"vm_1", "vm_2"};
static const char *const s_vm2[] = {"vm_2"};
static const int s_order[] = {1, 2};

/* One message of each kind, for a Reboot of vm_1 and vm_2 in fault domain 1. */
static void s_msg(sc_notify_kind_t kind, sc_notify_msg_t *m)
{
    sc_notify_msg_init(m, kind);
    m->ts_ms = S_TS_MS;
    if (kind == SC_NOTIFY_LEADER_CHANGED) {
        m->leader = "vm_0";
        m->prev_leader = "vm_2";
        m->term = 4;
        return;
    }
    m->event_id = "C7061BAC-AFDC-4513-B24B-AA5F13A16123";
    m->event_type = "Reboot";
    m->vms = s_vms;
    m->n_vms = 2;
    m->fault_domain = 1;
    m->deadline_ms = S_DEADLINE_MS;
    if (kind == SC_NOTIFY_EVENT_SCHEDULED) {
        m->drain_order = s_order;
        m->n_drain_order = 2;
        m->drain_at_ms = S_DRAIN_AT_MS;
    } else if (kind == SC_NOTIFY_HOOK_FAILED) {
        m->vms = s_vm2;
        m->n_vms = 1;
        m->phase = "prepare";
        m->detail = "exit status 3";
    }
}

/* What people read for each of those messages. */
static const char *const s_lines[SC_NOTIFY_KIND_MAX] = {
    "Reboot of vm_1, vm_2 (FD 1) scheduled for 14:05 UTC; drain at 13:50 UTC; drain order: FD 1 "
    "then FD 2",
    "Draining vm_1, vm_2 (FD 1) for Reboot due 14:05 UTC",
    "Reboot of vm_1, vm_2 (FD 1) approved: it may start now",
    "Reboot of vm_1, vm_2 (FD 1) started",
    "Reboot of vm_1, vm_2 (FD 1) ended",
    "Prepare hook failed on vm_2 (FD 1) for Reboot: exit status 3",
    "Reboot of vm_1, vm_2 (FD 1) not drained by 14:05 UTC: left to Azure",
    "Leader is now vm_0 (term 4), was vm_2",
};

/* Options for tests: short backoff, short grace. */
static void s_opts(sc_notify_opts_t *o, const char *spec)
{
    sc_notify_opts_init(o);
    o->spec = spec;
    o->retry_initial_ms = 20;
    o->retry_max_ms = 100;
    o->stop_grace_ms = 200;
}

static sc_notify_t *s_new(const sc_notify_opts_t *o)
{
    sc_notify_t *n = NULL;
    char err[256] = "";
    int rc = sc_notify_new(o, err, sizeof(err), &n);

    if (rc != 0)
        printf("  sc_notify_new: %d %s\n", rc, err);
    return n;
}

static sc_notify_stats_t s_stats(const sc_notify_t *n, size_t i)
{
    sc_notify_stats_t st;

    memset(&st, 0, sizeof(st));
    sc_notify_stats(n, i, &st);
    return st;
}

/* Waits until target i has sent + failed == done messages (they are counted after the
 * receiver recorded them). */
static bool s_wait_done(const sc_notify_t *n, size_t i, uint64_t done)
{
    int64_t until = sc_mono_ms() + S_WAIT_MS;
    sc_notify_stats_t st;

    do {
        st = s_stats(n, i);
        if (st.sent + st.failed >= done)
            return true;
        sc_sleep_ms(2);
    } while (sc_mono_ms() < until);
    return false;
}

static int s_post_kind(sc_notify_t *n, sc_notify_kind_t kind)
{
    sc_notify_msg_t m;

    s_msg(kind, &m);
    return sc_notify_post(n, &m);
}

/* A json message whose detail is tag (to tell messages apart at the receiver). */
static int s_post_tag(sc_notify_t *n, const char *tag)
{
    sc_notify_msg_t m;

    s_msg(SC_NOTIFY_EVENT_STARTED, &m);
    m.detail = tag;
    return sc_notify_post(n, &m);
}

/* The detail of request i's json body ("" when none or not JSON). */
static void s_req_tag(sc_wr_t *wr, size_t i, char *out, size_t len)
{
    const sc_wr_req_t *r = sc_wr_req(wr, i);
    json_object *o = r ? json_tokener_parse(r->body) : NULL, *d;

    snprintf(out, len, "%s",
             o && json_object_object_get_ex(o, "detail", &d) ? json_object_get_string(d) : "");
    json_object_put(o);
}

static const char *s_get_str(json_object *o, const char *path0, const char *path1)
{
    json_object *v;

    if (!json_object_object_get_ex(o, path0, &v))
        return NULL;
    if (path1 && !json_object_object_get_ex(v, path1, &v))
        return NULL;
    return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* ---- (d) the setting ------------------------------------------------------------------- */

typedef struct s_bad_case {
    const char *spec; /* the --notify value */
    const char *says; /* what the error must contain */
} s_bad_case_t;

SC_TEST(spec_bad_names_the_problem)
{
    static const s_bad_case_t cases[] = {
        {"mail:http://h/x", "notify target 1: unknown format \"mail\""},
        {"json:http://h/x,Slack:https://h/y", "notify target 2: unknown format \"Slack\""},
        {"http://hooks.slack.com/x", "unknown format \"http\""},
        {"slack", "notify target 1 (slack): missing URL"},
        {"teams:  ", "notify target 1 (teams): missing URL"},
        {"json:ftp://h/SECRET", "URL must start with http:// or https:// (got \"ftp:\")"},
        {"json:hooks.slack.com/SECRET", "URL must start with http:// or https:// (no scheme)"},
        {"json:http:///SECRET", "notify target 1: URL has no host"},
        {"json:http://user:pw@/SECRET", "URL has no host"},
        {"json:http://h:99999/SECRET", "URL has a bad port"},
        {"json:http://h:/SECRET", "URL has a bad port"},
        {"json:http://h/a b", "URL has a space or a control or non-ASCII character at byte 11"},
        {"json:http://h/x,,json:http://h/y", "notify target 2 is empty"},
        {"json:http://h/x,", "notify target 2 is empty"},
        {"json:http://a/1,json:http://a/2,json:http://a/3,json:http://a/4,json:http://a/5,"
         "json:http://a/6,json:http://a/7,json:http://a/8,json:http://a/9",
         "too many notify targets: 9 (at most 8)"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[256] = "";
        sc_notify_opts_t o;
        sc_notify_t *n = NULL;
        int rc = sc_notify_spec_check(cases[i].spec, err, sizeof(err));

        if (rc != SC_E_CONFIG || !strstr(err, cases[i].says))
            SC_FAILF("\"%s\": rc %d, \"%s\", expected \"%s\"", cases[i].spec, rc, err,
                     cases[i].says);
        if (strstr(err, "SECRET"))
            SC_FAILF("\"%s\": the error shows the URL's path: %s", cases[i].spec, err);
        /* the constructor refuses it with the same words */
        s_opts(&o, cases[i].spec);
        err[0] = '\0';
        SC_CHECK_INT(sc_notify_new(&o, err, sizeof(err), &n), SC_E_CONFIG);
        SC_CHECK(n == NULL);
        SC_CHECK(strstr(err, cases[i].says) != NULL);
    }
}

SC_TEST(spec_good_and_labels_without_secrets)
{
    char err[256] = "";
    const char *spec = " slack:https://hooks.slack.com/services/T0/B0/SECRET , "
                       "teams:https://contoso.webhook.office.com/webhookb2/SECRET?x=1,"
                       "json:http://user:SECRET@[::1]:8080/p";
    sc_notify_opts_t o;
    sc_notify_t *n;

    SC_CHECK_INT(sc_notify_spec_check(NULL, err, sizeof(err)), 0);
    SC_CHECK_INT(sc_notify_spec_check("", err, sizeof(err)), 0);
    SC_CHECK_INT(sc_notify_spec_check(" ", err, sizeof(err)), 0);
    SC_CHECK_INT(sc_notify_spec_check("json:HTTP://127.0.0.1:1/x", err, sizeof(err)), 1);
    SC_CHECK_INT(sc_notify_spec_check(" json : http://h/x ", err, sizeof(err)), 1);
    SC_CHECK_INT(sc_notify_spec_check(spec, err, sizeof(err)), 3);

    s_opts(&o, spec);
    SC_REQUIRE((n = s_new(&o)) != NULL);
    SC_CHECK_INT(sc_notify_targets(n), 3);
    SC_CHECK_INT(sc_notify_target_format(n, 0), SC_NOTIFY_SLACK);
    SC_CHECK_INT(sc_notify_target_format(n, 1), SC_NOTIFY_TEAMS);
    SC_CHECK_INT(sc_notify_target_format(n, 2), SC_NOTIFY_JSON);
    SC_CHECK_INT(sc_notify_target_format(n, 3), SC_NOTIFY_FORMAT_MAX);
    SC_CHECK_STR(sc_notify_target_label(n, 0), "slack https://hooks.slack.com");
    SC_CHECK_STR(sc_notify_target_label(n, 1), "teams https://contoso.webhook.office.com");
    SC_CHECK_STR(sc_notify_target_label(n, 2), "json http://[::1]:8080");
    SC_CHECK(sc_notify_target_label(n, 3) == NULL);
    sc_notify_destroy(&n);
    SC_CHECK(n == NULL);
    sc_notify_destroy(&n); /* takes NULL */

    /* no target: a notifier whose posts do nothing */
    s_opts(&o, NULL);
    SC_REQUIRE((n = s_new(&o)) != NULL);
    SC_CHECK_INT(sc_notify_targets(n), 0);
    SC_CHECK_INT(s_post_kind(n, SC_NOTIFY_APPROVED), 0);
    SC_CHECK_INT(sc_notify_stop(n), 0);
    sc_notify_destroy(&n);

    /* options out of range */
    s_opts(&o, "json:http://h/x");
    o.queue_max = 0;
    SC_CHECK_INT(sc_notify_new(&o, err, sizeof(err), &n), SC_E_CONFIG);
    SC_CHECK(strstr(err, "notify queue") != NULL);
}

SC_TEST(bad_messages_are_refused)
{
    sc_notify_opts_t o;
    sc_notify_msg_t m;
    sc_notify_t *n;
    char *body = NULL;

    s_opts(&o, "json:http://127.0.0.1:1/x");
    SC_REQUIRE((n = s_new(&o)) != NULL);
    sc_notify_msg_init(&m, SC_NOTIFY_KIND_MAX);
    SC_CHECK_INT(sc_notify_post(n, &m), -EINVAL);
    sc_notify_msg_init(&m, SC_NOTIFY_APPROVED);
    m.n_vms = 2; /* without vms */
    SC_CHECK_INT(sc_notify_post(n, &m), -EINVAL);
    SC_CHECK_INT(sc_notify_render(SC_NOTIFY_FORMAT_MAX, &m, NULL, NULL, 0, &body), -EINVAL);
    SC_CHECK_INT(s_stats(n, 0).queued, 0);
    sc_notify_destroy(&n);
}

/* ---- rendering of odd input ---------------------------------------------------------- */

SC_TEST(render_cleans_and_cuts)
{
    const char *many[40];
    char names[40][8];
    sc_notify_msg_t m;
    char *body = NULL;
    json_object *o, *v;

    for (int i = 0; i < 40; i++) {
        snprintf(names[i], sizeof(names[i]), "vm_%d", i);
        many[i] = names[i];
    }
    s_msg(SC_NOTIFY_EVENT_STARTED, &m);
    m.vms = many;
    m.n_vms = 40;
    m.event_type = "Re\x01"
                   "boot\xff<&>";
    SC_REQUIRE(sc_notify_render(SC_NOTIFY_SLACK, &m, "c", NULL, S_TS_MS, &body) == 0);
    SC_REQUIRE((o = json_tokener_parse(body)) != NULL);
    SC_CHECK_STR(s_get_str(o, "text", NULL),
                 "[c] Re?boot?&lt;&amp;&gt; of vm_0, vm_1, vm_2, vm_3, vm_4, vm_5, vm_6, vm_7, "
                 "vm_8, vm_9 and 30 more (FD 1) started");
    json_object_put(o);
    free(body);

    SC_REQUIRE(sc_notify_render(SC_NOTIFY_JSON, &m, NULL, NULL, S_TS_MS, &body) == 0);
    SC_REQUIRE((o = json_tokener_parse(body)) != NULL);
    SC_CHECK(json_object_object_get_ex(o, "vms", &v) && json_object_array_length(v) == 40);
    SC_CHECK_STR(s_get_str(o, "event_type", NULL), "Re?boot?<&>");
    SC_CHECK_STR(s_get_str(o, "ts", NULL), "2026-11-23T13:00:00.000Z");
    SC_CHECK(!json_object_object_get_ex(o, "cluster", &v)); /* unknown: left out */
    json_object_put(o);
    free(body);

    /* a deadline more than a day away carries its date */
    s_msg(SC_NOTIFY_DEADLINE_MISSED, &m);
    m.deadline_ms = S_DEADLINE_MS + 3 * 86400000LL;
    SC_REQUIRE(sc_notify_render(SC_NOTIFY_JSON, &m, NULL, NULL, S_TS_MS, &body) == 0);
    SC_REQUIRE((o = json_tokener_parse(body)) != NULL);
    SC_CHECK_STR(s_get_str(o, "text", NULL),
                 "Reboot of vm_1, vm_2 (FD 1) not drained by 2026-11-26 14:05 UTC: left to Azure");
    json_object_put(o);
    free(body);

    /* no leader */
    sc_notify_msg_init(&m, SC_NOTIFY_LEADER_CHANGED);
    m.prev_leader = "vm_0";
    SC_REQUIRE(sc_notify_render(SC_NOTIFY_JSON, &m, NULL, NULL, S_TS_MS, &body) == 0);
    SC_REQUIRE((o = json_tokener_parse(body)) != NULL);
    SC_CHECK_STR(s_get_str(o, "text", NULL), "No leader, was vm_0");
    SC_CHECK(json_object_object_get_ex(o, "leader", &v) && v == NULL); /* null: none */
    json_object_put(o);
    free(body);
}

/* The longest and most escaped input still fits SC_NOTIFY_BODY_MAX in every format. */
SC_TEST(render_worst_case_fits)
{
    static char quote[300], amp[300], detail[2000];
    static const char *vms[500];
    static int order[100];
    sc_notify_msg_t m;

    memset(quote, '"', sizeof(quote) - 1);
    memset(amp, '&', sizeof(amp) - 1);
    memset(detail, '<', sizeof(detail) - 1);
    for (size_t i = 0; i < 500; i++)
        vms[i] = i % 2 ? quote : amp;
    for (int k = 0; k < SC_NOTIFY_KIND_MAX; k++) {
        sc_notify_msg_init(&m, (sc_notify_kind_t)k);
        m.ts_ms = S_TS_MS;
        m.event_id = m.event_type = m.phase = m.leader = m.prev_leader = amp;
        m.detail = detail;
        m.vms = vms;
        m.n_vms = 500;
        m.fault_domain = 1000000;
        m.drain_order = order;
        m.n_drain_order = 100;
        m.drain_at_ms = m.deadline_ms = S_DEADLINE_MS;
        m.term = INT64_MAX;
        for (int f = 0; f < SC_NOTIFY_FORMAT_MAX; f++) {
            char *body = NULL;
            json_object *o;

            SC_CHECK_INT(sc_notify_render((sc_notify_format_t)f, &m, quote, amp, S_TS_MS, &body),
                         0);
            if (!body)
                continue;
            SC_CHECK(strlen(body) <= SC_NOTIFY_BODY_MAX);
            SC_CHECK((o = json_tokener_parse(body)) != NULL);
            json_object_put(o);
            free(body);
        }
    }
}

/* ---- (a) every kind, every format, in order ---------------------------------------------- */

static void s_check_json(json_object *o, sc_notify_kind_t k)
{
    json_object *v;

    SC_CHECK_STR(s_get_str(o, "kind", NULL), sc_notify_kind_name(k));
    SC_CHECK_STR(s_get_str(o, "text", NULL), s_lines[k]);
    SC_CHECK_STR(s_get_str(o, "ts", NULL), "2026-11-23T13:00:00.000Z");
    SC_CHECK_STR(s_get_str(o, "cluster", NULL), "prod-db");
    SC_CHECK_STR(s_get_str(o, "from", NULL), "vm_0");
    if (k == SC_NOTIFY_LEADER_CHANGED) {
        SC_CHECK_STR(s_get_str(o, "leader", NULL), "vm_0");
        SC_CHECK_STR(s_get_str(o, "prev_leader", NULL), "vm_2");
        SC_CHECK(json_object_object_get_ex(o, "term", &v) && json_object_get_int(v) == 4);
        return;
    }
    SC_CHECK_STR(s_get_str(o, "event_id", NULL), "C7061BAC-AFDC-4513-B24B-AA5F13A16123");
    SC_CHECK_STR(s_get_str(o, "event_type", NULL), "Reboot");
    SC_CHECK_STR(s_get_str(o, "deadline", NULL), "2026-11-23T14:05:00.000Z");
    SC_CHECK(json_object_object_get_ex(o, "fault_domain", &v) && json_object_get_int(v) == 1);
    SC_CHECK(json_object_object_get_ex(o, "vms", &v) &&
             json_object_array_length(v) == (k == SC_NOTIFY_HOOK_FAILED ? 1u : 2u));
    if (k == SC_NOTIFY_EVENT_SCHEDULED) {
        SC_CHECK_STR(s_get_str(o, "drain_at", NULL), "2026-11-23T13:50:00.000Z");
        SC_CHECK(json_object_object_get_ex(o, "drain_order", &v) &&
                 json_object_array_length(v) == 2 &&
                 json_object_get_int(json_object_array_get_idx(v, 1)) == 2);
    }
    if (k == SC_NOTIFY_HOOK_FAILED) {
        SC_CHECK_STR(s_get_str(o, "phase", NULL), "prepare");
        SC_CHECK_STR(s_get_str(o, "detail", NULL), "exit status 3");
    }
}

static void s_check_slack(json_object *o, sc_notify_kind_t k)
{
    char want[512];
    json_object *blocks;

    snprintf(want, sizeof(want), "[prod-db] %s", s_lines[k]);
    SC_CHECK_STR(s_get_str(o, "text", NULL), want);
    SC_REQUIRE(json_object_object_get_ex(o, "blocks", &blocks));
    SC_REQUIRE(json_object_array_length(blocks) == 2);
    SC_CHECK_STR(s_get_str(json_object_array_get_idx(blocks, 0), "type", NULL), "section");
    SC_CHECK_STR(s_get_str(json_object_array_get_idx(blocks, 0), "text", "text"), want);
    /* the details are lines: "*Title:* value" each */
    SC_CHECK(strstr(s_get_str(json_object_array_get_idx(blocks, 1), "text", "text"),
                    "\n*Time:* 2026-11-23 13:00:00 UTC") != NULL);
    SC_CHECK(strchr(s_get_str(json_object_array_get_idx(blocks, 1), "text", "text"), '?') == NULL);
}

static void s_check_teams(json_object *o, sc_notify_kind_t k)
{
    char want[512];
    json_object *atts, *att, *card, *body, *facts, *v;

    snprintf(want, sizeof(want), "[prod-db] %s", s_lines[k]);
    SC_CHECK_STR(s_get_str(o, "type", NULL), "message");
    SC_REQUIRE(json_object_object_get_ex(o, "attachments", &atts));
    SC_REQUIRE(json_object_array_length(atts) == 1);
    att = json_object_array_get_idx(atts, 0);
    SC_CHECK_STR(s_get_str(att, "contentType", NULL), "application/vnd.microsoft.card.adaptive");
    SC_REQUIRE(json_object_object_get_ex(att, "content", &card));
    SC_CHECK_STR(s_get_str(card, "type", NULL), "AdaptiveCard");
    SC_CHECK_STR(s_get_str(card, "version", NULL), "1.2");
    SC_REQUIRE(json_object_object_get_ex(card, "body", &body));
    SC_REQUIRE(json_object_array_length(body) == 2);
    SC_CHECK_STR(s_get_str(json_object_array_get_idx(body, 0), "type", NULL), "TextBlock");
    SC_CHECK_STR(s_get_str(json_object_array_get_idx(body, 0), "text", NULL), want);
    SC_CHECK_STR(s_get_str(json_object_array_get_idx(body, 1), "type", NULL), "FactSet");
    SC_REQUIRE(json_object_object_get_ex(json_object_array_get_idx(body, 1), "facts", &facts));
    v = json_object_array_get_idx(facts, json_object_array_length(facts) - 1);
    SC_CHECK_STR(s_get_str(v, "title", NULL), "Time");
    SC_CHECK_STR(s_get_str(v, "value", NULL), "2026-11-23 13:00:00 UTC");
}

SC_TEST(every_kind_in_every_format_in_order)
{
    static const char *const paths[SC_NOTIFY_FORMAT_MAX] = {"/json", "/slack", "/teams"};
    char spec[512], u[3][128];
    sc_notify_opts_t o;
    sc_notify_t *n;
    sc_wr_t *wr;
    size_t seen[SC_NOTIFY_FORMAT_MAX] = {0};

    SC_REQUIRE((wr = sc_wr_start()) != NULL);
    snprintf(spec, sizeof(spec), "json:%s,slack:%s,teams:%s",
             sc_wr_url(wr, paths[0], u[0], sizeof(u[0])),
             sc_wr_url(wr, paths[1], u[1], sizeof(u[1])),
             sc_wr_url(wr, paths[2], u[2], sizeof(u[2])));
    s_opts(&o, spec);
    o.cluster = "prod-db";
    o.from = "vm_0";
    n = s_new(&o);
    if (!n) {
        sc_wr_stop(&wr);
        SC_REQUIRE(n != NULL);
    }
    for (int k = 0; k < SC_NOTIFY_KIND_MAX; k++)
        SC_CHECK_INT(s_post_kind(n, (sc_notify_kind_t)k), 0);
    SC_CHECK_INT(sc_wr_wait(wr, 3 * SC_NOTIFY_KIND_MAX, S_WAIT_MS), 3 * SC_NOTIFY_KIND_MAX);
    for (size_t i = 0; i < 3; i++)
        SC_CHECK(s_wait_done(n, i, SC_NOTIFY_KIND_MAX));

    /* each target got the kinds in the order posted, each in its format's shape */
    for (size_t r = 0; r < sc_wr_count(wr); r++) {
        const sc_wr_req_t *req = sc_wr_req(wr, r);
        json_object *body = json_tokener_parse(req->body);
        int f;

        for (f = 0; f < SC_NOTIFY_FORMAT_MAX && strcmp(req->path, paths[f]) != 0; f++)
            ;
        if (f == SC_NOTIFY_FORMAT_MAX || !body || seen[f] >= SC_NOTIFY_KIND_MAX) {
            SC_FAILF("request %zu to %s: unexpected (%s)", r, req->path, req->body);
            json_object_put(body);
            continue;
        }
        SC_CHECK_STR(req->content_type, "application/json");
        if (f == SC_NOTIFY_JSON)
            s_check_json(body, (sc_notify_kind_t)seen[f]);
        else if (f == SC_NOTIFY_SLACK)
            s_check_slack(body, (sc_notify_kind_t)seen[f]);
        else
            s_check_teams(body, (sc_notify_kind_t)seen[f]);
        seen[f]++;
        json_object_put(body);
    }
    for (size_t i = 0; i < 3; i++) {
        sc_notify_stats_t st = s_stats(n, i);

        SC_CHECK_INT(seen[i], SC_NOTIFY_KIND_MAX);
        SC_CHECK_INT(st.sent, SC_NOTIFY_KIND_MAX);
        SC_CHECK_INT(st.failed + st.dropped + st.retried + st.queued, 0);
        SC_CHECK_INT(st.last_status, 200);
    }
    SC_CHECK_INT(sc_notify_stop(n), 0);
    sc_notify_destroy(&n);
    sc_wr_stop(&wr);
}

/* ---- (b) retries ----------------------------------------------------------------------- */

/* A notifier with one json target on wr, answering from script. */
static sc_notify_t *s_one(sc_wr_t *wr, sc_notify_opts_t *o, const sc_wr_answer_t *script,
                          size_t n_script)
{
    static char spec[160];
    char u[128];

    snprintf(spec, sizeof(spec), "json:%s", sc_wr_url(wr, "/hook", u, sizeof(u)));
    o->spec = spec;
    sc_wr_script(wr, script, n_script);
    return s_new(o);
}

/* Checks that the receiver got the messages tagged tags[0..n-1], in that order. */
static void s_check_tags(sc_wr_t *wr, const char *const *tags, size_t n)
{
    char tag[64];

    SC_CHECK_INT(sc_wr_count(wr), n);
    for (size_t i = 0; i < n && i < sc_wr_count(wr); i++) {
        s_req_tag(wr, i, tag, sizeof(tag));
        if (strcmp(tag, tags[i]) != 0)
            SC_FAILF("request %zu is \"%s\", expected \"%s\"", i, tag, tags[i]);
    }
}

SC_TEST(server_errors_are_retried_in_order)
{
    static const sc_wr_answer_t script[] = {{.status = 500}, {.status = 500}};
    static const char *const want[] = {"A", "A", "A", "B"};
    sc_notify_opts_t o;
    sc_notify_stats_t st;
    sc_notify_t *n;
    sc_wr_t *wr;

    SC_REQUIRE((wr = sc_wr_start()) != NULL);
    s_opts(&o, NULL);
    if (!(n = s_one(wr, &o, script, 2))) {
        sc_wr_stop(&wr);
        SC_REQUIRE(n != NULL);
    }
    SC_CHECK_INT(s_post_tag(n, "A"), 0);
    SC_CHECK_INT(s_post_tag(n, "B"), 0);
    SC_CHECK(s_wait_done(n, 0, 2));
    st = s_stats(n, 0);
    SC_CHECK_INT(st.sent, 2);
    SC_CHECK_INT(st.retried, 2);
    SC_CHECK_INT(st.failed, 0);
    SC_CHECK_INT(st.queued, 0);
    SC_CHECK_INT(st.last_status, 200);
    SC_CHECK_STR(st.last_error, "");
    s_check_tags(wr, want, 4); /* B waited for A's retries */
    sc_notify_destroy(&n);
    sc_wr_stop(&wr);
}

SC_TEST(retry_after_is_honoured)
{
    static const sc_wr_answer_t script[] = {{.status = 429, .retry_after = "1"}};
    sc_notify_opts_t o;
    sc_notify_t *n;
    sc_wr_t *wr;

    SC_REQUIRE((wr = sc_wr_start()) != NULL);
    s_opts(&o, NULL);
    o.retry_initial_ms = 10;
    o.retry_max_ms = 5000;
    if (!(n = s_one(wr, &o, script, 1))) {
        sc_wr_stop(&wr);
        SC_REQUIRE(n != NULL);
    }
    SC_CHECK_INT(s_post_tag(n, "A"), 0);
    SC_CHECK(s_wait_done(n, 0, 1));
    SC_CHECK_INT(s_stats(n, 0).sent, 1);
    SC_CHECK_INT(s_stats(n, 0).retried, 1);
    SC_REQUIRE(sc_wr_count(wr) == 2);
    /* the backoff alone would have waited 10 ms at most */
    SC_CHECK(sc_wr_req(wr, 1)->at_ms - sc_wr_req(wr, 0)->at_ms >= 1000);
    sc_notify_destroy(&n);
    sc_wr_stop(&wr);
}

SC_TEST(attempts_run_out_and_client_errors_are_not_retried)
{
    static const sc_wr_answer_t script[] = {
        {.status = 503},
        {.status = 503},
        {.status = 503},                       /* A: three attempts, all 503 */
        {.status = 200},                       /* B */
        {.status = 404, .body = "no_service"}, /* C: not worth a retry */
        {.status = 302},                       /* D: not followed */
    };
    static const char *const want[] = {"A", "A", "A", "B", "C", "D", "E"};
    sc_notify_opts_t o;
    sc_notify_stats_t st;
    sc_notify_t *n;
    sc_wr_t *wr;

    SC_REQUIRE((wr = sc_wr_start()) != NULL);
    s_opts(&o, NULL);
    o.max_attempts = 3;
    if (!(n = s_one(wr, &o, script, 6))) {
        sc_wr_stop(&wr);
        SC_REQUIRE(n != NULL);
    }
    SC_CHECK_INT(s_post_tag(n, "A"), 0);
    SC_CHECK_INT(s_post_tag(n, "B"), 0);
    SC_CHECK(s_wait_done(n, 0, 2));
    st = s_stats(n, 0);
    SC_CHECK_INT(st.failed, 1);
    SC_CHECK_INT(st.sent, 1);
    SC_CHECK_INT(st.retried, 2);

    SC_CHECK_INT(s_post_tag(n, "C"), 0);
    SC_CHECK(s_wait_done(n, 0, 3));
    st = s_stats(n, 0);
    SC_CHECK_INT(st.failed, 2);
    SC_CHECK_INT(st.retried, 2);
    SC_CHECK_INT(st.last_status, 404);
    SC_CHECK_STR(st.last_error, "HTTP 404: no_service");

    SC_CHECK_INT(s_post_tag(n, "D"), 0);
    SC_CHECK_INT(s_post_tag(n, "E"), 0);
    SC_CHECK(s_wait_done(n, 0, 5));
    st = s_stats(n, 0);
    SC_CHECK_INT(st.failed, 3);
    SC_CHECK_INT(st.sent, 2);
    SC_CHECK_INT(st.retried, 2);
    s_check_tags(wr, want, 7);
    sc_notify_destroy(&n);
    sc_wr_stop(&wr);
}

SC_TEST(network_errors_are_retried_then_counted)
{
    char spec[160], u[128];
    sc_notify_opts_t o;
    sc_notify_stats_t st;
    sc_notify_t *n;
    sc_wr_t *wr;

    /* a port nothing listens on any more */
    SC_REQUIRE((wr = sc_wr_start()) != NULL);
    snprintf(spec, sizeof(spec), "json:%s", sc_wr_url(wr, "/hook", u, sizeof(u)));
    sc_wr_stop(&wr);
    s_opts(&o, spec);
    o.max_attempts = 3;
    SC_REQUIRE((n = s_new(&o)) != NULL);
    SC_CHECK_INT(s_post_kind(n, SC_NOTIFY_APPROVED), 0);
    SC_CHECK(s_wait_done(n, 0, 1));
    st = s_stats(n, 0);
    SC_CHECK_INT(st.failed, 1);
    SC_CHECK_INT(st.retried, 2);
    SC_CHECK_INT(st.sent, 0);
    SC_CHECK_INT(st.last_status, 0);
    SC_CHECK(strncmp(st.last_error, "gave up after 3 attempts: ", 26) == 0);
    sc_notify_destroy(&n);
}

/* ---- (c), (e) a receiver that hangs ---------------------------------------------------- */

SC_TEST(hung_receiver_never_blocks_post_and_full_queue_drops)
{
    static const sc_wr_answer_t script[] = {{.hang = true, .path = "/hang"}};
    char spec[320], u[2][128];
    sc_notify_opts_t o;
    sc_notify_stats_t st;
    sc_notify_t *n;
    sc_wr_t *wr;
    int64_t t0, took;
    int full = 0;

    SC_REQUIRE((wr = sc_wr_start()) != NULL);
    /* target 0 hangs (its first request); target 1 answers */
    snprintf(spec, sizeof(spec), "json:%s,json:%s", sc_wr_url(wr, "/hang", u[0], sizeof(u[0])),
             sc_wr_url(wr, "/fine", u[1], sizeof(u[1])));
    sc_wr_script(wr, script, 1);
    s_opts(&o, spec);
    o.queue_max = 4;
    o.timeout_ms = 60000; /* the hung attempt outlives the test */
    n = s_new(&o);
    if (!n) {
        sc_wr_stop(&wr);
        SC_REQUIRE(n != NULL);
    }
    /* the first message, so that the hang has begun before the others are posted */
    SC_CHECK_INT(s_post_tag(n, "0"), 0);
    SC_CHECK_INT(sc_wr_wait(wr, 2, S_WAIT_MS), 2);
    /* room for 3 more behind the one in flight; the other target is not held up by it */
    for (int i = 1; i < 4; i++) {
        char tag[8];

        snprintf(tag, sizeof(tag), "%d", i);
        SC_CHECK_INT(s_post_tag(n, tag), 0);
    }
    SC_CHECK(s_wait_done(n, 1, 4));
    SC_CHECK_INT(s_stats(n, 1).sent, 4);

    /* now the hung target's queue is full: each post returns at once, dropped there */
    t0 = sc_mono_ms();
    for (int i = 4; i < 10; i++) {
        char tag[8];

        snprintf(tag, sizeof(tag), "%d", i);
        full += s_post_tag(n, tag) == -ENOBUFS;
    }
    took = sc_mono_ms() - t0;
    SC_CHECK(took < 1000); /* 6 posts, while one attempt may take 60 s */
    SC_CHECK_INT(full, 6);
    st = s_stats(n, 0);
    SC_CHECK_INT(st.queued, 4); /* the one in flight and 3 waiting */
    SC_CHECK_INT(st.dropped, 6);
    SC_CHECK_INT(st.sent + st.failed + st.retried, 0);

    /* stop: bounded by the grace, drops what the hung target holds */
    t0 = sc_mono_ms();
    SC_CHECK_INT(sc_notify_stop(n), 4);
    took = sc_mono_ms() - t0;
    SC_CHECK(took >= 150 && took < 200 + 2000);
    st = s_stats(n, 0);
    SC_CHECK_INT(st.dropped, 10);
    SC_CHECK_INT(st.queued, 0);
    SC_CHECK_INT(st.sent, 0);
    SC_CHECK_INT(s_post_tag(n, "late"), -ESHUTDOWN);
    SC_CHECK_INT(sc_notify_stop(n), 0);
    sc_notify_destroy(&n);
    sc_wr_stop(&wr);
}

SC_TEST(destroy_with_a_hung_receiver_is_bounded)
{
    static const sc_wr_answer_t script[] = {{.hang = true}};
    sc_notify_opts_t o;
    sc_notify_t *n;
    sc_wr_t *wr;
    int64_t t0, took;

    SC_REQUIRE((wr = sc_wr_start()) != NULL);
    s_opts(&o, NULL);
    o.timeout_ms = 60000;
    o.stop_grace_ms = 300;
    if (!(n = s_one(wr, &o, script, 1))) {
        sc_wr_stop(&wr);
        SC_REQUIRE(n != NULL);
    }
    SC_CHECK_INT(s_post_tag(n, "A"), 0);
    SC_CHECK_INT(s_post_tag(n, "B"), 0);
    SC_CHECK_INT(sc_wr_wait(wr, 1, S_WAIT_MS), 1);
    t0 = sc_mono_ms();
    sc_notify_destroy(&n);
    took = sc_mono_ms() - t0;
    SC_CHECK(n == NULL);
    SC_CHECK(took < 300 + 2000);
    sc_wr_stop(&wr);
}

/* Stop lets what is queued go when the receiver answers. */
SC_TEST(stop_delivers_what_is_queued_within_the_grace)
{
    static const char *const want[] = {"A", "B", "C"};
    sc_notify_opts_t o;
    sc_notify_t *n;
    sc_wr_t *wr;

    SC_REQUIRE((wr = sc_wr_start()) != NULL);
    s_opts(&o, NULL);
    o.stop_grace_ms = 5000;
    if (!(n = s_one(wr, &o, NULL, 0))) {
        sc_wr_stop(&wr);
        SC_REQUIRE(n != NULL);
    }
    SC_CHECK_INT(s_post_tag(n, "A"), 0);
    SC_CHECK_INT(s_post_tag(n, "B"), 0);
    SC_CHECK_INT(s_post_tag(n, "C"), 0);
    SC_CHECK_INT(sc_notify_stop(n), 0);
    SC_CHECK_INT(s_stats(n, 0).sent, 3);
    s_check_tags(wr, want, 3);
    sc_notify_destroy(&n);
    sc_wr_stop(&wr);
}

SC_TEST(stats_json_names_no_secret)
{
    sc_notify_opts_t o;
    sc_notify_t *n;
    json_object *a = NULL, *t;

    s_opts(&o, "slack:https://hooks.slack.com/services/T0/B0/SECRET");
    SC_REQUIRE((n = s_new(&o)) != NULL);
    SC_REQUIRE(sc_notify_stats_json(n, &a) == 0);
    SC_REQUIRE(json_object_array_length(a) == 1);
    t = json_object_array_get_idx(a, 0);
    SC_CHECK_STR(s_get_str(t, "format", NULL), "slack");
    SC_CHECK_STR(s_get_str(t, "target", NULL), "slack https://hooks.slack.com");
    SC_CHECK(strstr(json_object_to_json_string(a), "SECRET") == NULL);
    json_object_put(a);
    sc_notify_destroy(&n);
}

int main(void)
{
    SC_RUN(spec_bad_names_the_problem);
    SC_RUN(spec_good_and_labels_without_secrets);
    SC_RUN(bad_messages_are_refused);
    SC_RUN(render_cleans_and_cuts);
    SC_RUN(render_worst_case_fits);
    SC_RUN(every_kind_in_every_format_in_order);
    SC_RUN(server_errors_are_retried_in_order);
    SC_RUN(retry_after_is_honoured);
    SC_RUN(attempts_run_out_and_client_errors_are_not_retried);
    SC_RUN(network_errors_are_retried_then_counted);
    SC_RUN(hung_receiver_never_blocks_post_and_full_queue_drops);
    SC_RUN(destroy_with_a_hung_receiver_is_bounded);
    SC_RUN(stop_delivers_what_is_queued_within_the_grace);
    SC_RUN(stats_json_names_no_secret);
    return sc_test_done();
}
