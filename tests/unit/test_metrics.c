/* sc_metrics: Prometheus text from a coordinator status, and the one-request HTTP answer of
 * `schedcoordctl metrics --http`. */
#include "sc_metrics.h"
#include "sc_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>

/* A status as sc_coord_status() gives it (trimmed to what the metrics read). */
static const char s_status[] =
    "{\"term\": 7, \"self\": \"vm_0\", \"role\": \"leader\", \"leader\": \"vm_0\","
    " \"paused\": true, \"rejected_messages\": 3, \"started_ms\": 1795336176473,"
    " \"members\": ["
    "  {\"name\": \"vm_0\", \"fault_domain\": 0, \"update_domain\": 0, \"state\": \"healthy\","
    "   \"alive\": true, \"imds_stale\": false},"
    "  {\"name\": \"vm_1\", \"fault_domain\": 1, \"update_domain\": 1, \"state\": \"drained\","
    "   \"alive\": true, \"imds_stale\": true},"
    "  {\"name\": \"vm_2\", \"fault_domain\": 2, \"update_domain\": 2, \"state\": \"healthy\","
    "   \"alive\": false, \"imds_stale\": false}],"
    " \"events\": ["
    "  {\"EventId\": \"a\", \"type\": \"Reboot\", \"status\": \"Scheduled\","
    "   \"source\": \"Platform\", \"approval\": \"none\", \"ended_ms\": null,"
    "   \"waiting_for\": \"paused\", \"drains\": {\"vm_1\": \"prepared\", \"vm_4\": \"prepared\"}},"
    "  {\"EventId\": \"b\", \"type\": \"Freeze\", \"status\": \"Started\", \"source\": \"User\","
    "   \"approval\": \"approved\", \"ended_ms\": null, \"waiting_for\": null,"
    "   \"drains\": {\"vm_2\": \"none\"}},"
    "  {\"EventId\": \"c\", \"type\": \"Reboot\", \"status\": \"Started\","
    "   \"source\": \"Platform\", \"approval\": \"approved\", \"ended_ms\": 1795336170000,"
    "   \"waiting_for\": null, \"drains\": {\"vm_0\": \"recovering\"}}],"
    " \"counters\": {\"approval_posts\": {\"ok\": 5, \"failed\": 2}, \"approvals_delegated\": 1,"
    "   \"orders\": {\"prepare\": 4, \"recover\": 3},"
    "   \"hook_reports\": {\"prepare\": {\"done\": 4, \"failed\": 1},"
    "                      \"recover\": {\"done\": 3}},"
    "   \"alerts\": {\"deadline\": 0, \"forced\": 2}, \"events_new\": 9,"
    "   \"imds_malformed_events\": {\"vm_0\": 0, \"vm_1\": 3},"
    "   \"notify\": ["
    "    {\"format\": \"slack\", \"target\": \"slack https://hooks.slack.com\", \"sent\": 12,"
    "     \"failed\": 1, \"dropped\": 0, \"retried\": 4, \"queued\": 2, \"last_status\": 500,"
    "     \"last_error\": \"HTTP 500\"},"
    "    {\"format\": \"json\", \"target\": \"json https://hooks.slack.com\", \"sent\": 13,"
    "     \"failed\": 0, \"dropped\": 3, \"retried\": 0, \"queued\": 0, \"last_status\": 200,"
    "     \"last_error\": \"\"}]}}";

static bool s_has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p++)
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return true;
    return false;
}

/* The exposition rules a scraper relies on, checked line by line: each family's HELP and TYPE
 * once, before its samples; a family's samples together; no series twice; every line ends. */
static void s_check_exposition(const char *text)
{
    char fam[64][128], series[256][512];
    size_t nfam = 0, nser = 0;
    const char *cur = NULL;

    for (const char *l = text; *l;) {
        const char *nl = strchr(l, '\n');
        char line[512], name[128];
        if (!nl) {
            SC_FAILF("last line without its newline: \"%s\"", l);
            return;
        }
        snprintf(line, sizeof(line), "%.*s", (int)(nl - l), l);
        l = nl + 1;
        if (strncmp(line, "# HELP ", 7) == 0)
            continue;
        if (strncmp(line, "# TYPE ", 7) == 0) {
            sscanf(line + 7, "%127s", name);
            for (size_t i = 0; i < nfam; i++)
                if (strcmp(fam[i], name) == 0)
                    SC_FAILF("family %s declared twice", name);
            if (nfam < 64)
                snprintf(fam[nfam++], sizeof(fam[0]), "%s", name);
            cur = fam[nfam - 1];
            continue;
        }
        size_t n = strcspn(line, "{ ");
        snprintf(name, sizeof(name), "%.*s", (int)n, line);
        if (!cur || strcmp(cur, name) != 0)
            SC_FAILF("sample \"%s\" outside its family's block (current: %s)", line,
                     cur ? cur : "none");
        const char *sp = strrchr(line, ' ');
        char key[512];
        snprintf(key, sizeof(key), "%.*s", sp ? (int)(sp - line) : 0, line);
        for (size_t i = 0; i < nser; i++)
            if (strcmp(series[i], key) == 0)
                SC_FAILF("series %s twice", key);
        if (nser < 256)
            snprintf(series[nser++], sizeof(series[0]), "%s", key);
    }
}

#define CHECK_LINE(text, line)                                                                     \
    do {                                                                                           \
        if (!s_has_line((text), (line)))                                                           \
            SC_FAILF("no line \"%s\" in:\n%s", (line), (text));                                    \
    } while (0)

SC_TEST(renders_status)
{
    json_object *st = json_tokener_parse(s_status);
    char *t = NULL;

    SC_CHECK(st != NULL);
    SC_CHECK_INT(sc_metrics_render(st, &t), 0);
    SC_CHECK(t != NULL);
    if (!t) {
        json_object_put(st);
        return;
    }
    CHECK_LINE(t, "schedcoord_info{member=\"vm_0\",role=\"leader\",leader=\"vm_0\"} 1");
    CHECK_LINE(t, "schedcoord_leader 1");
    CHECK_LINE(t, "schedcoord_term 7");
    CHECK_LINE(t, "schedcoord_paused 1");
    CHECK_LINE(t, "schedcoord_start_time_seconds 1795336176.473");
    CHECK_LINE(t, "schedcoord_rejected_messages_total 3");
    CHECK_LINE(t, "schedcoord_member_up{member=\"vm_0\",fault_domain=\"0\",update_domain=\"0\"} 1");
    CHECK_LINE(t, "schedcoord_member_up{member=\"vm_2\",fault_domain=\"2\",update_domain=\"2\"} 0");
    CHECK_LINE(t, "schedcoord_member_blind{member=\"vm_1\"} 1");
    CHECK_LINE(t, "schedcoord_member_blind{member=\"vm_0\"} 0");
    CHECK_LINE(t, "schedcoord_member_state{member=\"vm_1\",state=\"drained\"} 1");
    CHECK_LINE(t, "schedcoord_members{state=\"healthy\"} 2");
    CHECK_LINE(t, "schedcoord_members{state=\"drained\"} 1");
    /* events not over: a and b; c ended (its drain still counts) */
    CHECK_LINE(t, "schedcoord_events{type=\"Reboot\",status=\"Scheduled\",source=\"Platform\","
                  "approval=\"none\"} 1");
    CHECK_LINE(t, "schedcoord_events{type=\"Freeze\",status=\"Started\",source=\"User\","
                  "approval=\"approved\"} 1");
    SC_CHECK(!strstr(t, "status=\"Started\",source=\"Platform\""));
    CHECK_LINE(t, "schedcoord_events_waiting 1");
    CHECK_LINE(t, "schedcoord_drains{state=\"prepared\"} 2");
    CHECK_LINE(t, "schedcoord_drains{state=\"recovering\"} 1");
    SC_CHECK(!strstr(t, "schedcoord_drains{state=\"none\"}"));
    CHECK_LINE(t, "schedcoord_approval_posts_total{result=\"ok\"} 5");
    CHECK_LINE(t, "schedcoord_approval_posts_total{result=\"failed\"} 2");
    CHECK_LINE(t, "schedcoord_approvals_delegated_total 1");
    CHECK_LINE(t, "schedcoord_orders_total{phase=\"recover\"} 3");
    CHECK_LINE(t, "schedcoord_hook_reports_total{phase=\"prepare\",state=\"failed\"} 1");
    CHECK_LINE(t, "schedcoord_hook_reports_total{phase=\"recover\",state=\"done\"} 3");
    CHECK_LINE(t, "schedcoord_alerts_total{alert=\"forced\"} 2");
    CHECK_LINE(t, "schedcoord_events_seen_total 9");
    CHECK_LINE(t, "schedcoord_imds_malformed_events_total{member=\"vm_1\"} 3");
    CHECK_LINE(t, "schedcoord_imds_malformed_events_total{member=\"vm_0\"} 0");
    /* two targets on one host: told apart by their place in --notify */
    CHECK_LINE(t, "schedcoord_notify_sent_total{target=\"1\",format=\"slack\","
                  "endpoint=\"https://hooks.slack.com\"} 12");
    CHECK_LINE(t, "schedcoord_notify_sent_total{target=\"2\",format=\"json\","
                  "endpoint=\"https://hooks.slack.com\"} 13");
    CHECK_LINE(t, "schedcoord_notify_failed_total{target=\"1\",format=\"slack\","
                  "endpoint=\"https://hooks.slack.com\"} 1");
    CHECK_LINE(t, "schedcoord_notify_dropped_total{target=\"2\",format=\"json\","
                  "endpoint=\"https://hooks.slack.com\"} 3");
    CHECK_LINE(t, "schedcoord_notify_retried_total{target=\"1\",format=\"slack\","
                  "endpoint=\"https://hooks.slack.com\"} 4");
    CHECK_LINE(t, "schedcoord_notify_queued{target=\"1\",format=\"slack\","
                  "endpoint=\"https://hooks.slack.com\"} 2");
    CHECK_LINE(t, "# TYPE schedcoord_notify_sent_total counter");
    CHECK_LINE(t, "# TYPE schedcoord_notify_queued gauge");
    CHECK_LINE(t, "# TYPE schedcoord_imds_malformed_events_total counter");
    CHECK_LINE(t, "# TYPE schedcoord_approval_posts_total counter");
    CHECK_LINE(t, "# TYPE schedcoord_member_up gauge");
    s_check_exposition(t);
    free(t);
    json_object_put(st);
}

/* Label values are escaped; what is missing or mistyped is left out, never invented. */
SC_TEST(escapes_and_omits)
{
    json_object *st = json_tokener_parse(
        "{\"self\": \"a\\\"b\\\\c\\nd\", \"role\": 3, \"term\": \"seven\","
        " \"members\": [{\"name\": \"x\\\"y\", \"alive\": true}, {\"alive\": true}, 5],"
        " \"events\": \"none\", \"counters\": {\"orders\": {\"prepare\": \"many\"}}}");
    char *t = NULL;

    SC_CHECK(st != NULL);
    SC_CHECK_INT(sc_metrics_render(st, &t), 0);
    if (!t) {
        json_object_put(st);
        return;
    }
    CHECK_LINE(t, "schedcoord_info{member=\"a\\\"b\\\\c\\nd\",role=\"\",leader=\"\"} 1");
    CHECK_LINE(t, "schedcoord_leader 0");
    SC_CHECK(!strstr(t, "schedcoord_term "));
    SC_CHECK(!strstr(t, "schedcoord_paused "));
    CHECK_LINE(
        t, "schedcoord_member_up{member=\"x\\\"y\",fault_domain=\"-1\",update_domain=\"-1\"} 1");
    SC_CHECK(!strstr(t, "schedcoord_events{"));
    SC_CHECK(!strstr(t, "schedcoord_orders_total{"));
    s_check_exposition(t);
    free(t);
    json_object_put(st);

    SC_CHECK_INT(sc_metrics_render(NULL, &t), -EINVAL);
    SC_CHECK(t == NULL);
    st = json_object_new_array();
    SC_CHECK_INT(sc_metrics_render(st, &t), -EINVAL);
    json_object_put(st);
}

/* The members digest (issue 20): the number of members that disagree (0 when none), who and
 * with which digests, and the messages refused; left out for a status without the field. */
SC_TEST(members_mismatch)
{
    json_object *st = json_tokener_parse(
        "{\"self\": \"vm_3\", \"role\": \"voter\", \"members_mismatch\": {\"peer\": \"vm_0\","
        " \"ours\": \"470ad10d583c2ccb\", \"theirs\": \"5096dc405e143c87\", \"since_ms\": 1,"
        " \"voter\": true, \"others\": [\"vm_1\"]},"
        " \"counters\": {\"members_mismatch_refused\": 17,"
        "   \"alerts\": {\"members_mismatch\": 2}}}");
    char *t = NULL;

    SC_REQUIRE(st != NULL);
    SC_CHECK_INT(sc_metrics_render(st, &t), 0);
    if (t) {
        CHECK_LINE(t, "schedcoord_members_mismatch 2");
        CHECK_LINE(t, "schedcoord_members_mismatch_info{peer=\"vm_0\",ours=\"470ad10d583c2ccb\","
                      "theirs=\"5096dc405e143c87\"} 1");
        CHECK_LINE(t, "schedcoord_members_mismatch_refused_total 17");
        CHECK_LINE(t, "schedcoord_alerts_total{alert=\"members_mismatch\"} 2");
        CHECK_LINE(t, "# TYPE schedcoord_members_mismatch gauge");
        s_check_exposition(t);
    }
    free(t);
    json_object_put(st);
    /* none now: 0, no info; no field at all: nothing */
    st = json_tokener_parse("{\"self\": \"vm_3\", \"members_mismatch\": null}");
    SC_REQUIRE(st != NULL);
    SC_CHECK_INT(sc_metrics_render(st, &t), 0);
    if (t) {
        CHECK_LINE(t, "schedcoord_members_mismatch 0");
        SC_CHECK(!strstr(t, "schedcoord_members_mismatch_info"));
    }
    free(t);
    json_object_put(st);
    st = json_tokener_parse("{\"self\": \"vm_3\"}");
    SC_REQUIRE(st != NULL);
    SC_CHECK_INT(sc_metrics_render(st, &t), 0);
    if (t)
        SC_CHECK(!strstr(t, "schedcoord_members_mismatch"));
    free(t);
    json_object_put(st);
}

/* Events alike are one series with their count, never the same series twice. */
SC_TEST(events_alike_counted)
{
    json_object *st = json_tokener_parse(
        "{\"events\": [{\"type\": \"Reboot\", \"status\": \"Scheduled\", \"source\": \"User\","
        " \"approval\": \"none\"}, {\"type\": \"Reboot\", \"status\": \"Scheduled\","
        " \"source\": \"User\", \"approval\": \"none\"}, {\"type\": \"Reboot\","
        " \"status\": \"Scheduled\", \"source\": \"User\", \"approval\": \"none\"},"
        " {\"type\": \"Freeze\", \"status\": \"Scheduled\", \"source\": \"User\","
        " \"approval\": \"none\"}]}");
    char *t = NULL;

    SC_CHECK_INT(sc_metrics_render(st, &t), 0);
    if (t) {
        CHECK_LINE(t, "schedcoord_events{type=\"Reboot\",status=\"Scheduled\",source=\"User\","
                      "approval=\"none\"} 3");
        CHECK_LINE(t, "schedcoord_events{type=\"Freeze\",status=\"Scheduled\",source=\"User\","
                      "approval=\"none\"} 1");
        s_check_exposition(t);
    }
    free(t);
    json_object_put(st);
}

/* The forecasts (the last plan round's, as schedcoordctl plan shows them) and the hooks'
 * history: one series per event and VM at risk, durations per member, phase and stat. */
SC_TEST(forecasts_and_hook_durations)
{
    json_object *st = json_tokener_parse(
        "{\"events\": [{\"EventId\": \"P1\", \"type\": \"Preempt\", \"status\": \"Scheduled\","
        "  \"source\": \"Platform\", \"approval\": \"none\", \"forecast\": {\"fits\": false,"
        "  \"drained_ms\": 1000041500, \"deadline_ms\": 1000030000, \"at_risk\": [\"vm_3\"]}},"
        " {\"EventId\": \"E2\", \"type\": \"Reboot\", \"status\": \"Scheduled\","
        "  \"source\": \"Platform\", \"approval\": \"none\", \"forecast\": {\"fits\": true,"
        "  \"drained_ms\": 1000010000, \"deadline_ms\": null, \"at_risk\": []}},"
        " {\"EventId\": \"E3\", \"type\": \"Reboot\", \"status\": \"Started\","
        "  \"source\": \"Platform\", \"approval\": \"approved\"}],"
        " \"hook_durations\": {\"vm_3\": {\"prepare\": {\"median_s\": 10.5, \"p95_s\": 41.25,"
        "  \"count\": 5}, \"recover\": {\"median_s\": 0.0, \"p95_s\": 0.0, \"count\": 0}}}}");
    char *t = NULL;

    SC_CHECK_INT(sc_metrics_render(st, &t), 0);
    if (t) {
        CHECK_LINE(t, "schedcoord_forecast_fits{event_id=\"P1\",type=\"Preempt\"} 0");
        CHECK_LINE(t, "schedcoord_forecast_fits{event_id=\"E2\",type=\"Reboot\"} 1");
        CHECK_LINE(t, "schedcoord_forecast_slack_seconds{event_id=\"P1\"} -11.500");
        CHECK_LINE(t, "schedcoord_forecast_at_risk{event_id=\"P1\",member=\"vm_3\"} 1");
        CHECK_LINE(t, "schedcoord_hook_duration_seconds{member=\"vm_3\",phase=\"prepare\","
                      "stat=\"p95\"} 41.250");
        CHECK_LINE(t, "schedcoord_hook_duration_runs{member=\"vm_3\",phase=\"recover\"} 0");
        SC_CHECK(strstr(t, "event_id=\"E3\"") == NULL); /* no forecast: no series */
        SC_CHECK(strstr(t, "schedcoord_forecast_slack_seconds{event_id=\"E2\"") == NULL);
        s_check_exposition(t);
    }
    free(t);
    json_object_put(st);
}

SC_TEST(http_request_heads)
{
    static const struct {
        const char *req;
        int status;
        bool head;
    } rows[] = {
        {"GET /metrics HTTP/1.1\r\nHost: vm_0:9466\r\nAccept: */*\r\n\r\n", 200, false},
        {"GET /metrics HTTP/1.0\r\n\r\n", 200, false},
        {"HEAD /metrics HTTP/1.1\r\n\r\n", 200, true},
        {"GET /metrics?name[]=x HTTP/1.1\r\n\r\n", 200, false},
        {"GET /metrics HTTP/1.1\n\n", 200, false},
        {"GET /metrics HTTP/1.1\r\nHost: x\r\n", 0, false}, /* head not complete yet */
        {"GET /metr", 0, false},
        {"", 0, false},
        {"GET / HTTP/1.1\r\n\r\n", 404, false},
        {"GET /metricsx HTTP/1.1\r\n\r\n", 404, false},
        {"GET /other/metrics HTTP/1.1\r\n\r\n", 404, false},
        {"POST /metrics HTTP/1.1\r\n\r\n", 405, false},
        {"DELETE /metrics HTTP/1.1\r\n\r\n", 405, false},
        {"get /metrics HTTP/1.1\r\n\r\n", 400, false},
        {"GET /metrics HTTP/2.0\r\n\r\n", 400, false},
        {"GET /metrics HTTP/1.1 extra\r\n\r\n", 400, false},
        {"GET  /metrics HTTP/1.1\r\n\r\n", 400, false},
        {"GET /metrics\r\n\r\n", 400, false},
        {"\r\n\r\n", 400, false},
        {"GET /met\x01rics HTTP/1.1\r\n\r\n", 400, false},
        {"SSH-2.0-OpenSSH_9.2\r\n\r\n", 400, false},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        bool head = !rows[i].head;
        int got = sc_metrics_http_status(rows[i].req, strlen(rows[i].req), &head);
        if (got != rows[i].status)
            SC_FAILF("row %zu \"%s\": %d, expected %d", i, rows[i].req, got, rows[i].status);
        if (got == 200 && head != rows[i].head)
            SC_FAILF("row %zu: head %d", i, head);
    }
    /* a NUL inside the head; a head that never ends within the limit */
    static const char nul[] = "GET /metrics HTTP/1.1\r\nX: a\0b\r\n\r\n";
    SC_CHECK_INT(sc_metrics_http_status(nul, sizeof(nul) - 1, NULL), 400);
    char big[SC_METRICS_REQ_MAX];
    memset(big, 'a', sizeof(big));
    SC_CHECK_INT(sc_metrics_http_status(big, sizeof(big) - 1, NULL), 0);
    SC_CHECK_INT(sc_metrics_http_status(big, sizeof(big), NULL), 400);
}

static int s_render_ok(const void *ud, char **ret_text, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    *ret_text = strdup(ud);
    return *ret_text ? 0 : -ENOMEM;
}

static int s_render_down(const void *ud, char **ret_text, char *err, size_t errlen)
{
    (void)ud, (void)ret_text;
    snprintf(err, errlen, "cannot connect to /x/control.sock");
    return -1;
}

/* serve: request into a pipe, answer read from another */
static int s_serve(const char *req, bool close_in, sc_metrics_render_fn fn, const char *ud,
                   char *ans, size_t anslen)
{
    int in[2], out[2], status;
    ssize_t n;

    if (pipe(in) || pipe(out))
        return -999;
    if (write(in[1], req, strlen(req)) != (ssize_t)strlen(req))
        return -998;
    if (close_in)
        close(in[1]);
    status = sc_metrics_serve_one(in[0], out[1], 300, fn, ud);
    close(out[1]);
    n = read(out[0], ans, anslen - 1);
    ans[n > 0 ? n : 0] = '\0';
    close(in[0]);
    if (!close_in)
        close(in[1]);
    close(out[0]);
    return status;
}

SC_TEST(serve_one)
{
    char ans[4096];

    SC_CHECK_INT(
        s_serve("GET /metrics HTTP/1.1\r\n\r\n", false, s_render_ok, "m 1\n", ans, sizeof(ans)),
        200);
    SC_CHECK(strncmp(ans, "HTTP/1.1 200 OK\r\n", 17) == 0);
    SC_CHECK(strstr(ans, "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
    SC_CHECK(strstr(ans, "\r\nContent-Length: 4\r\n"));
    SC_CHECK(strstr(ans, "\r\n\r\nm 1\n") && ans[strlen(ans) - 1] == '\n');

    /* HEAD: the same head, no body */
    SC_CHECK_INT(
        s_serve("HEAD /metrics HTTP/1.1\r\n\r\n", false, s_render_ok, "m 1\n", ans, sizeof(ans)),
        200);
    SC_CHECK(strstr(ans, "\r\nContent-Length: 4\r\n"));
    SC_CHECK(strcmp(ans + strlen(ans) - 4, "\r\n\r\n") == 0);

    /* the coordinator is down: 503 naming why */
    SC_CHECK_INT(
        s_serve("GET /metrics HTTP/1.1\r\n\r\n", false, s_render_down, NULL, ans, sizeof(ans)),
        503);
    SC_CHECK(strncmp(ans, "HTTP/1.1 503 Service Unavailable\r\n", 34) == 0);
    SC_CHECK(strstr(ans, "control.sock"));
    SC_CHECK_INT(
        s_serve("HEAD /metrics HTTP/1.1\r\n\r\n", false, s_render_down, NULL, ans, sizeof(ans)),
        503);
    SC_CHECK(strcmp(ans + strlen(ans) - 4, "\r\n\r\n") == 0); /* HEAD: no body */
    /* stdin not open: an error, not a busy loop until the timeout */
    SC_CHECK_INT(sc_metrics_serve_one(1000, 1001, 5000, s_render_ok, "m 1\n"), -EBADF);

    SC_CHECK_INT(
        s_serve("PUT /metrics HTTP/1.1\r\n\r\n", false, s_render_ok, "m 1\n", ans, sizeof(ans)),
        405);
    SC_CHECK(strstr(ans, "\r\nAllow: GET, HEAD\r\n"));
    SC_CHECK_INT(s_serve("GET /x HTTP/1.1\r\n\r\n", false, s_render_ok, "m 1\n", ans, sizeof(ans)),
                 404);
    /* a head cut short by the client, or never finished (timeout): 400; nothing at all: 0 */
    SC_CHECK_INT(s_serve("GET /metrics HTTP/1.1\r\n", true, s_render_ok, "m 1\n", ans, sizeof(ans)),
                 400);
    SC_CHECK(strncmp(ans, "HTTP/1.1 400 Bad Request\r\n", 26) == 0);
    SC_CHECK_INT(s_serve("GET /metrics", false, s_render_ok, "m 1\n", ans, sizeof(ans)), 400);
    SC_CHECK_INT(s_serve("", true, s_render_ok, "m 1\n", ans, sizeof(ans)), 0);
    SC_CHECK_STR(ans, "");
}

int main(void)
{
    SC_RUN(renders_status);
    SC_RUN(escapes_and_omits);
    SC_RUN(members_mismatch);
    SC_RUN(events_alike_counted);
    SC_RUN(forecasts_and_hook_durations);
    SC_RUN(http_request_heads);
    SC_RUN(serve_one);
    return sc_test_done();
}
