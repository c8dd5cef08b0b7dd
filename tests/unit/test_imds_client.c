/* sc_imds against a fake IMDS (tests/unit/imds_test_server.h) on 127.0.0.1, and sc_backoff. */
#include "imds_test_server.h"
#include "sc_backoff.h"
#include "sc_error.h"
#include "sc_imds.h"
#include "sc_test.h"
#include "sc_time.h"

#include <errno.h>
#include <signal.h>
#include <sys/time.h>

static sc_ts_t *s_ts; /* the fake IMDS, serving under /vm_3 */

#define CHECK_SUB(hay, needle)                                                                     \
    do {                                                                                           \
        if (!strstr((hay), (needle)))                                                              \
            SC_FAILF("\"%s\" does not contain \"%s\"", (hay), (needle));                           \
    } while (0)

#define CHECK_NOSUB(hay, needle)                                                                   \
    do {                                                                                           \
        if (strstr((hay), (needle)))                                                               \
            SC_FAILF("\"%s\" contains \"%s\"", (hay), (needle));                                   \
    } while (0)

#define CHECK_RANGE(v, lo, hi)                                                                     \
    do {                                                                                           \
        long long v_ = (long long)(v);                                                             \
        if (v_ < (long long)(lo) || v_ > (long long)(hi))                                          \
            SC_FAILF("%s == %lld, expected in [%lld, %lld]", #v, v_, (long long)(lo),              \
                     (long long)(hi));                                                             \
    } while (0)

/* A client of the fake IMDS with short timeouts. */
static sc_imds_t *s_client(const char *base, long total_ms)
{
    sc_imds_opts_t o;
    sc_imds_t *c = NULL;

    sc_imds_opts_init(&o);
    o.base_url = base ? base : s_ts->url;
    o.connect_timeout_ms = 1000;
    o.total_timeout_ms = total_ms ? total_ms : 3000;
    if (sc_imds_new(&o, &c) < 0)
        return NULL;
    return c;
}

/* GETs scheduledevents with the server answering cfg; returns rc, fills st. */
static int s_get_with(const sc_ts_cfg_t *cfg, sc_imds_status_t *st)
{
    sc_imds_t *c = s_client(NULL, 0);
    char *body = (char *)"untouched";
    size_t len = 12345;
    int rc;

    if (!c)
        return -999;
    sc_ts_set(s_ts, cfg);
    rc = sc_imds_get_events(c, &body, &len, st);
    if (rc == 0)
        free(body);
    else if (strcmp(body, "untouched") != 0 || len != 12345)
        SC_FAILF("ret_body/ret_len written on failure");
    sc_imds_destroy(&c);
    return rc;
}

SC_TEST(get_events_ok)
{
    sc_imds_t *c = s_client(NULL, 0);
    sc_imds_status_t st;
    char *body = NULL;
    size_t len = 0;

    SC_REQUIRE(c);
    SC_CHECK_STR(sc_imds_base_url(c), s_ts->url);
    sc_ts_set(s_ts, NULL);
    SC_CHECK_INT(sc_imds_get_events(c, &body, &len, &st), 0);
    SC_CHECK_INT(st.rc, 0);
    SC_CHECK_INT(st.http_status, 200);
    SC_CHECK_INT(st.retry_after_ms, 0);
    CHECK_SUB(st.message, "HTTP 200");
    SC_CHECK(body != NULL);
    SC_CHECK_STR(body, SC_TS_EVENTS_DOC);
    SC_CHECK_INT(len, strlen(SC_TS_EVENTS_DOC));
    sc_ts_lock(s_ts);
    SC_CHECK_STR(s_ts->last.method, "GET");
    SC_CHECK_STR(s_ts->last.path, "/vm_3/metadata/scheduledevents");
    SC_CHECK_STR(s_ts->last.api_version, "2020-07-01");
    SC_CHECK_STR(s_ts->last.metadata, "true");
    SC_CHECK(!s_ts->last.has_xff);
    SC_CHECK(!s_ts->last.has_via);
    sc_ts_unlock(s_ts);
    free(body);
    sc_imds_destroy(&c);
    SC_CHECK(c == NULL);
}

SC_TEST(api_version_and_trailing_slash)
{
    sc_imds_opts_t o;
    sc_imds_t *c = NULL;
    sc_imds_status_t st;
    char base[160], *body = NULL;

    snprintf(base, sizeof(base), "%s/", s_ts->url);
    sc_imds_opts_init(&o);
    o.base_url = base;
    o.api_version = "2019-08-01";
    SC_REQUIRE(sc_imds_new(&o, &c) == 0);
    SC_CHECK_STR(sc_imds_base_url(c), s_ts->url);
    sc_ts_set(s_ts, NULL);
    SC_CHECK_INT(sc_imds_get_events(c, &body, NULL, &st), 0);
    free(body);
    sc_ts_lock(s_ts);
    SC_CHECK_STR(s_ts->last.path, "/vm_3/metadata/scheduledevents");
    SC_CHECK_STR(s_ts->last.api_version, "2019-08-01");
    sc_ts_unlock(s_ts);
    sc_imds_destroy(&c);
}

SC_TEST(wrong_base_path_is_404)
{
    char base[160];
    sc_imds_t *c;
    sc_imds_status_t st;
    char *body = NULL;

    snprintf(base, sizeof(base), "http://127.0.0.1:%u/vm_4", (unsigned)s_ts->port);
    SC_REQUIRE((c = s_client(base, 0)));
    sc_ts_set(s_ts, NULL);
    SC_CHECK_INT(sc_imds_get_events(c, &body, NULL, &st), SC_E_HTTP_404);
    SC_CHECK(body == NULL);
    SC_CHECK_INT(st.http_status, 404);
    CHECK_RANGE(st.retry_after_ms, 1000, 60000);
    CHECK_SUB(st.message, "/vm_4/metadata/scheduledevents: HTTP 404 (not found)");
    CHECK_SUB(st.message, "Not found"); /* the server's own words */
    sc_imds_destroy(&c);
}

SC_TEST(http_400)
{
    sc_ts_cfg_t cfg = {.status = 400, .body = "{\"error\": \"Bad request\"}"};
    sc_imds_status_t st;

    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_HTTP_400);
    SC_CHECK_INT(st.rc, SC_E_HTTP_400);
    SC_CHECK_INT(st.http_status, 400);
    CHECK_RANGE(st.retry_after_ms, 30000, 3600000); /* our bug: no quick retry */
    CHECK_SUB(st.message, "HTTP 400");
    CHECK_SUB(st.message, "Bad request");
    CHECK_NOSUB(st.message, "retry in"); /* the hint is retry_after_ms, not in the message */
}

SC_TEST(http_404_405_410)
{
    sc_ts_cfg_t cfg = {.status = 404, .body = ""};
    sc_imds_status_t st;

    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_HTTP_404);
    SC_CHECK_INT(st.http_status, 404);
    CHECK_RANGE(st.retry_after_ms, 1000, 60000);
    CHECK_SUB(st.message, "HTTP 404");

    cfg.status = 405;
    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_HTTP_405);
    SC_CHECK_INT(st.http_status, 405);
    CHECK_RANGE(st.retry_after_ms, 30000, 3600000);
    CHECK_SUB(st.message, "HTTP 405 (method not allowed)");

    cfg.status = 410;
    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_HTTP_410);
    SC_CHECK_INT(st.http_status, 410);
    CHECK_RANGE(st.retry_after_ms, 500, 2000); /* retry soon, for up to 70 s */
    CHECK_SUB(st.message, "HTTP 410 (gone");
}

SC_TEST(http_429)
{
    sc_ts_cfg_t cfg = {.status = 429, .body = "{\"error\": \"Too many requests\"}"};
    sc_imds_status_t st;
    char date[64];

    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_HTTP_429);
    SC_CHECK_INT(st.http_status, 429);
    SC_CHECK_INT(st.retry_after_ms, 1000); /* no Retry-After: the default */
    CHECK_SUB(st.message, "HTTP 429 (throttled");
    CHECK_NOSUB(st.message, "retry in");

    cfg.retry_after = "7";
    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_HTTP_429);
    SC_CHECK_INT(st.retry_after_ms, 7000);
    CHECK_SUB(st.message, "Retry-After");
    CHECK_NOSUB(st.message, "retry in");

    sc_time_rfc1123(sc_wall_ms() / 1000 + 4, date, sizeof(date));
    cfg.retry_after = date;
    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_HTTP_429);
    CHECK_RANGE(st.retry_after_ms, 2000, 4000);

    cfg.retry_after = "99999999999999999999"; /* hostile: capped at an hour */
    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_HTTP_429);
    SC_CHECK_INT(st.retry_after_ms, 3600000);

    cfg.retry_after = "soon"; /* unparseable: ignored */
    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_HTTP_429);
    SC_CHECK_INT(st.retry_after_ms, 1000);
}

SC_TEST(http_5xx)
{
    sc_ts_cfg_t cfg = {.status = 500, .body = "internal"};
    sc_imds_status_t st;

    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_HTTP_5XX);
    SC_CHECK_INT(st.http_status, 500);
    CHECK_RANGE(st.retry_after_ms, 500, 10000);
    CHECK_SUB(st.message, "HTTP 500 (server error): internal");

    cfg.status = 503;
    cfg.retry_after = "2";
    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_HTTP_5XX);
    SC_CHECK_INT(st.http_status, 503);
    SC_CHECK_INT(st.retry_after_ms, 2000);
    CHECK_SUB(st.message, "HTTP 503");

    cfg.status = 302; /* redirects are not followed */
    cfg.retry_after = NULL;
    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_HTTP_OTHER);
    SC_CHECK_INT(st.http_status, 302);
    CHECK_SUB(st.message, "unexpected HTTP 302");
}

SC_TEST(timeout)
{
    sc_ts_cfg_t cfg = {.sleep_ms = 3000};
    sc_imds_t *c = s_client(NULL, 300);
    sc_imds_status_t st;
    char *body = NULL;
    int64_t t0, dt;

    SC_REQUIRE(c);
    sc_ts_set(s_ts, &cfg);
    t0 = sc_mono_ms();
    SC_CHECK_INT(sc_imds_get_events(c, &body, NULL, &st), SC_E_TIMEOUT);
    dt = sc_mono_ms() - t0;
    CHECK_RANGE(dt, 250, 300 + 800); /* the server sleeps 3000 ms */
    SC_CHECK(body == NULL);
    SC_CHECK_INT(st.http_status, 0);
    CHECK_RANGE(st.retry_after_ms, 100, 5000);
    CHECK_SUB(st.message, "timed out");
    sc_imds_destroy(&c);
    sc_ts_set(s_ts, NULL);
}

/* A client with first_timeout_ms (or none: 0) and total_timeout_ms. */
static sc_imds_t *s_first_client(long total_ms, long first_ms, volatile sig_atomic_t *abort)
{
    sc_imds_opts_t o;
    sc_imds_t *c = NULL;

    sc_imds_opts_init(&o);
    o.base_url = s_ts->url;
    o.connect_timeout_ms = 300;
    o.total_timeout_ms = total_ms;
    o.first_timeout_ms = first_ms;
    o.abort = abort;
    return sc_imds_new(&o, &c) < 0 ? NULL : c;
}

/* One GET of c against a server answering after sleep_ms (or status at once): rc, its duration
 * in *ret_ms and the server's request count in *ret_requests. */
static int s_timed_get(sc_imds_t *c, int sleep_ms, int status, int64_t *ret_ms, int *ret_requests)
{
    sc_ts_cfg_t cfg = {.sleep_ms = sleep_ms, .status = status};
    sc_imds_status_t st;
    char *body = NULL;
    int64_t t0 = sc_mono_ms();
    int rc;

    sc_ts_set(s_ts, &cfg);
    sc_ts_lock(s_ts);
    s_ts->requests = 0;
    sc_ts_unlock(s_ts);
    rc = sc_imds_get_events(c, &body, NULL, &st);
    *ret_ms = sc_mono_ms() - t0;
    free(body);
    sc_ts_lock(s_ts);
    *ret_requests = s_ts->requests;
    sc_ts_unlock(s_ts);
    return rc;
}

/* The first scheduled-events request may take minutes (IMDS enables the service on it): until
 * one succeeds, the client waits first_timeout_ms; later ones keep the short timeout. */
SC_TEST(first_request_waits_longer)
{
    sc_imds_t *c = s_first_client(400, 3000, NULL);
    int64_t ms;
    int n;

    SC_REQUIRE(c);
    /* a quick failure does not count as the first answer */
    SC_CHECK_INT(s_timed_get(c, 0, 503, &ms, &n), SC_E_HTTP_5XX);
    SC_CHECK_INT(s_timed_get(c, 1000, 0, &ms, &n), 0);
    SC_CHECK_INT(n, 1); /* one request, answered after 1 s: no retry */
    CHECK_RANGE(ms, 900, 2900);
    SC_CHECK_INT(s_timed_get(c, 1000, 0, &ms, &n), SC_E_TIMEOUT);
    CHECK_RANGE(ms, 350, 900);
    sc_imds_destroy(&c);
    /* without it, the first request gives up at the short timeout (the behaviour before) */
    SC_REQUIRE((c = s_first_client(400, 0, NULL)));
    SC_CHECK_INT(s_timed_get(c, 1000, 0, &ms, &n), SC_E_TIMEOUT);
    sc_imds_destroy(&c);
    /* never shorter than the total timeout */
    SC_REQUIRE((c = s_first_client(1500, 200, NULL)));
    SC_CHECK_INT(s_timed_get(c, 600, 0, &ms, &n), 0);
    sc_imds_destroy(&c);
    sc_ts_set(s_ts, NULL);
}

static volatile sig_atomic_t s_abort;

static void s_on_alarm(int sig)
{
    (void)sig;
    s_abort = 1;
}

/* The abort flag (set by a signal handler, as SIGTERM does) ends a long request within about a
 * second, and no request starts while it is set. */
SC_TEST(abort_flag_stops_a_request)
{
    struct sigaction sa = {.sa_handler = s_on_alarm};
    struct itimerval it = {.it_value = {.tv_usec = 300000}};
    sc_imds_t *c = s_first_client(400, 60000, &s_abort);
    int64_t ms;
    int n;

    SC_REQUIRE(c);
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    s_abort = 0;
    setitimer(ITIMER_REAL, &it, NULL);
    SC_CHECK_INT(s_timed_get(c, 30000, 0, &ms, &n), -EINTR);
    SC_CHECK(s_abort);
    CHECK_RANGE(ms, 250, 2000); /* the server would answer after 30 s, the timeout is 60 s */
    SC_CHECK_INT(s_timed_get(c, 0, 0, &ms, &n), -EINTR);
    SC_CHECK_INT(n, 0);
    s_abort = 0;
    SC_CHECK_INT(s_timed_get(c, 0, 0, &ms, &n), 0);
    sc_imds_destroy(&c);
    sc_ts_set(s_ts, NULL);
}

/* on_wait: called about once a second while a request waits (the agent's watchdog goes on
 * through IMDS's first request, which may take two minutes), from the caller's thread. */
static void s_count_wait(void *ud)
{
    (*(int *)ud)++;
}

SC_TEST(on_wait_called_while_a_request_waits)
{
    sc_imds_opts_t o;
    sc_imds_t *c = NULL;
    int64_t ms;
    int n, waits = 0;

    sc_imds_opts_init(&o);
    o.base_url = s_ts->url;
    o.first_timeout_ms = 10000;
    o.on_wait = s_count_wait;
    o.on_wait_ud = &waits;
    SC_REQUIRE(sc_imds_new(&o, &c) == 0);
    SC_CHECK_INT(s_timed_get(c, 2500, 0, &ms, &n), 0);
    SC_CHECK(waits >= 2); /* at least once a second over 2.5 s */
    sc_imds_destroy(&c);
    sc_ts_set(s_ts, NULL);
}

SC_TEST(connection_refused)
{
    char base[128];
    sc_imds_t *c;
    sc_imds_status_t st;
    char *body = NULL;
    uint16_t port = sc_ts_closed_port();

    SC_REQUIRE(port);
    snprintf(base, sizeof(base), "http://127.0.0.1:%u/vm_3", (unsigned)port);
    SC_REQUIRE((c = s_client(base, 0)));
    SC_CHECK_INT(sc_imds_get_events(c, &body, NULL, &st), SC_E_CONNREFUSED);
    SC_CHECK_INT(st.http_status, 0);
    CHECK_RANGE(st.retry_after_ms, 100, 5000);
    CHECK_SUB(st.message, "connection refused");
    CHECK_SUB(st.message, base);
    sc_imds_destroy(&c);
}

SC_TEST(connection_dropped)
{
    sc_ts_cfg_t cfg = {.drop = true};
    sc_imds_status_t st;

    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_NET);
    SC_CHECK_INT(st.http_status, 0);
    CHECK_RANGE(st.retry_after_ms, 100, 5000);
    CHECK_SUB(st.message, "network error");
}

SC_TEST(bad_bodies)
{
    sc_ts_cfg_t cfg = {.body = ""};
    sc_imds_status_t st;

    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_EMPTY);
    SC_CHECK_INT(st.http_status, 200);
    CHECK_RANGE(st.retry_after_ms, 100, 5000);
    CHECK_SUB(st.message, "empty body");

    cfg.body = " \r\n ";
    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_EMPTY);

    cfg.body = "<html>maintenance</html>";
    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_NOT_JSON);
    SC_CHECK_INT(st.http_status, 200);
    CHECK_RANGE(st.retry_after_ms, 100, 5000);
    CHECK_SUB(st.message, "not JSON");
    CHECK_SUB(st.message, "<html>maintenance");

    cfg.body = "[1, 2]";
    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_NOT_JSON);
    CHECK_SUB(st.message, "not an object");

    cfg.body = "{\"DocumentIncarnation\": 1} trailing";
    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_NOT_JSON);
    CHECK_SUB(st.message, "data after the object");

    cfg.body = "{\"DocumentIncarnation\": 2, \"Events\": [{\"EventId\": \"C7";
    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_TRUNCATED);
    SC_CHECK_INT(st.http_status, 200);
    CHECK_RANGE(st.retry_after_ms, 100, 5000);
    CHECK_SUB(st.message, "ends early");
}

SC_TEST(body_cut_short)
{
    sc_ts_cfg_t cfg = {.body = "{\"DocumentIncarnation\": 2, \"Eve", .declared_len = 500};
    sc_imds_status_t st;

    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_TRUNCATED);
    SC_CHECK_INT(st.http_status, 200);
    CHECK_RANGE(st.retry_after_ms, 100, 5000);
    CHECK_SUB(st.message, "cut short");

    /* Even a complete JSON document is refused when fewer bytes came than announced. */
    cfg.body = "{}";
    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_TRUNCATED);
}

SC_TEST(body_too_big)
{
    sc_ts_cfg_t cfg = {.body = "{}", .declared_len = 5 * 1024 * 1024};
    sc_imds_status_t st;

    /* Announced too big: refused from the header. */
    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_TOO_BIG);
    CHECK_SUB(st.message, "larger than 4194304 bytes");
    CHECK_RANGE(st.retry_after_ms, 1000, 60000);

    /* Chunked, no length: cut at the limit. */
    cfg.declared_len = 0;
    cfg.stream_len = SC_IMDS_MAX_BODY + 100000;
    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_TOO_BIG);
    SC_CHECK_INT(st.http_status, 200);
    CHECK_SUB(st.message, "larger than");

    /* Just under the limit is fine as far as size goes (spaces only: empty). */
    cfg.stream_len = SC_IMDS_MAX_BODY - 10;
    SC_CHECK_INT(s_get_with(&cfg, &st), SC_E_EMPTY);
}

SC_TEST(post_approval)
{
    static const char approval[] =
        "{\"StartRequests\": [{\"EventId\": \"f020ba2e-3bc0-4c40-a10b-86575a9eabd5\"}]}";
    sc_imds_t *c = s_client(NULL, 0);
    sc_imds_status_t st;
    sc_ts_cfg_t cfg = {.status = 400, .body = "{\"error\": \"Bad request\"}"};
    char *big, *body = NULL;
    size_t n = 3000;

    SC_REQUIRE(c);
    sc_ts_set(s_ts, NULL);
    SC_CHECK_INT(sc_imds_post_events(c, approval, &st), 0);
    SC_CHECK_INT(st.http_status, 200);
    SC_CHECK_INT(st.retry_after_ms, 0);
    CHECK_SUB(st.message, "POST ");
    sc_ts_lock(s_ts);
    SC_CHECK_STR(s_ts->last.method, "POST");
    SC_CHECK_STR(s_ts->last.path, "/vm_3/metadata/scheduledevents");
    SC_CHECK_STR(s_ts->last.api_version, "2020-07-01");
    SC_CHECK_STR(s_ts->last.metadata, "true");
    SC_CHECK_STR(s_ts->last.content_type, "application/json");
    SC_CHECK(!s_ts->last.has_xff);
    SC_CHECK_STR(s_ts->last.body, approval);
    SC_CHECK_INT(s_ts->last.body_len, strlen(approval));
    sc_ts_unlock(s_ts);

    /* A larger body (curl would ask for 100-continue) arrives intact too. */
    SC_REQUIRE((big = malloc(n + 1)));
    memset(big, 'x', n);
    big[0] = '{';
    big[n - 1] = '}';
    big[n] = '\0';
    SC_CHECK_INT(sc_imds_post_events(c, big, &st), 0);
    sc_ts_lock(s_ts);
    SC_CHECK_INT(s_ts->last.body_len, n);
    SC_CHECK(memcmp(s_ts->last.body, big, n) == 0);
    sc_ts_unlock(s_ts);
    free(big);

    /* The same handle then GETs (not a POST with a stale body). */
    SC_CHECK_INT(sc_imds_get_events(c, &body, NULL, &st), 0);
    free(body);
    sc_ts_lock(s_ts);
    SC_CHECK_STR(s_ts->last.method, "GET");
    SC_CHECK_INT(s_ts->last.body_len, 0);
    sc_ts_unlock(s_ts);

    sc_ts_set(s_ts, &cfg);
    SC_CHECK_INT(sc_imds_post_events(c, approval, &st), SC_E_HTTP_400);
    SC_CHECK_INT(st.http_status, 400);
    CHECK_SUB(st.message, "POST ");
    CHECK_SUB(st.message, "HTTP 400");

    SC_CHECK_INT(sc_imds_post_events(c, "", &st), -EINVAL);
    CHECK_SUB(st.message, "empty");
    SC_CHECK_INT(sc_imds_post_events(c, NULL, NULL), -EINVAL);
    sc_imds_destroy(&c);
    sc_ts_set(s_ts, NULL);
}

/* The POST in two halves (sc_imds_post_begin in one thread, sc_imds_post_end in another: the
 * approver's): the same request, the same answers as sc_imds_post_events, one at a time, and
 * the handle GETs after it. */
SC_TEST(post_in_two_halves)
{
    static const char approval[] =
        "{\"StartRequests\": [{\"EventId\": \"f020ba2e-3bc0-4c40-a10b-86575a9eabd5\"}]}";
    sc_imds_t *c = s_client(NULL, 0);
    sc_imds_status_t st;
    sc_ts_cfg_t cfg = {.status = 429, .retry_after = "7"};
    char *body = NULL;

    SC_REQUIRE(c);
    sc_ts_set(s_ts, NULL);
    SC_CHECK_INT(sc_imds_post_begin(c, approval), 0);
    SC_CHECK_INT(sc_imds_post_begin(c, approval), -EINVAL); /* one at a time */
    SC_CHECK_INT(sc_imds_post_end(c, &st), 0);
    SC_CHECK_INT(st.http_status, 200);
    sc_ts_lock(s_ts);
    SC_CHECK_STR(s_ts->last.method, "POST");
    SC_CHECK_STR(s_ts->last.content_type, "application/json");
    SC_CHECK_STR(s_ts->last.body, approval);
    sc_ts_unlock(s_ts);
    SC_CHECK_INT(sc_imds_post_end(c, &st), -EINVAL); /* none begun */
    sc_ts_set(s_ts, &cfg);
    SC_CHECK_INT(sc_imds_post_begin(c, approval), 0);
    SC_CHECK_INT(sc_imds_post_end(c, &st), SC_E_HTTP_429);
    SC_CHECK_INT(st.http_status, 429);
    SC_CHECK(st.retry_after_ms >= 7000);
    sc_ts_set(s_ts, NULL);
    SC_CHECK_INT(sc_imds_get_events(c, &body, NULL, &st), 0);
    free(body);
    sc_ts_lock(s_ts);
    SC_CHECK_STR(s_ts->last.method, "GET");
    SC_CHECK_INT(s_ts->last.body_len, 0);
    sc_ts_unlock(s_ts);
    SC_CHECK_INT(sc_imds_post_begin(c, ""), -EINVAL);
    /* begun and never ended: destroy cleans up */
    SC_CHECK_INT(sc_imds_post_begin(c, approval), 0);
    sc_imds_destroy(&c);
    sc_ts_set(s_ts, NULL);
}

SC_TEST(compute_parse)
{
    static const char ok[] = "{\"name\": \"vm_3\", \"platformFaultDomain\": \"1\", "
                             "\"platformUpdateDomain\": \"12\", \"zone\": \"\"}  \n";
    char err[256], big[400];
    sc_compute_t cp;

    SC_CHECK_INT(sc_compute_parse(ok, strlen(ok), &cp, err, sizeof(err)), 0);
    SC_CHECK_STR(cp.name, "vm_3");
    SC_CHECK_INT(cp.fault_domain, 1);
    SC_CHECK_INT(cp.update_domain, 12);
    SC_CHECK_STR(cp.resource_id, "");
    /* each refusal names what was wrong and leaves the result as it was */
    SC_CHECK_INT(sc_compute_parse("{\"name\":\"a\"} x", 14, &cp, err, sizeof(err)), SC_E_NOT_JSON);
    CHECK_SUB(err, "data after the object at byte 13");
    SC_CHECK_INT(sc_compute_parse("[1]", 3, &cp, err, sizeof(err)), SC_E_NOT_JSON);
    CHECK_SUB(err, "not a JSON object");
    SC_CHECK_INT(sc_compute_parse("{\"name\"\0:1}", 11, &cp, err, sizeof(err)), SC_E_NOT_JSON);
    CHECK_SUB(err, "NUL byte");
    SC_CHECK_INT(sc_compute_parse("{\"name\":", 8, &cp, err, sizeof(err)), SC_E_NOT_JSON);
    SC_CHECK_INT(
        sc_compute_parse("{\"platformUpdateDomain\": \"123456\"}", 34, &cp, err, sizeof(err)),
        SC_E_PARSE);
    CHECK_SUB(err, "compute.platformUpdateDomain is out of range");
    snprintf(big, sizeof(big), "{\"zone\": \"%0300d\"}", 0);
    SC_CHECK_INT(sc_compute_parse(big, strlen(big), &cp, err, sizeof(err)), SC_E_TOO_BIG);
    CHECK_SUB(err, "compute.zone is too long");
    SC_CHECK_STR(cp.name, "vm_3");
    SC_CHECK_INT(cp.update_domain, 12);
}

SC_TEST(compute)
{
    sc_imds_t *c = s_client(NULL, 0);
    sc_imds_status_t st;
    sc_compute_t cp;
    sc_ts_cfg_t cfg = {0};

    SC_REQUIRE(c);
    sc_ts_set(s_ts, NULL);
    memset(&cp, 0, sizeof(cp));
    snprintf(cp.name, sizeof(cp.name), "untouched");
    SC_CHECK_INT(sc_imds_get_compute(c, &cp, &st), 0);
    SC_CHECK_INT(st.http_status, 200);
    SC_CHECK_STR(cp.name, "vm_3");
    SC_CHECK_INT(cp.fault_domain, 1);
    SC_CHECK_INT(cp.update_domain, 2);
    SC_CHECK_STR(cp.vm_scale_set_name, "");
    SC_CHECK_STR(cp.zone, "");
    SC_CHECK_STR(cp.resource_id,
                 "/subscriptions/0000/resourceGroups/rg/providers/Microsoft.Compute/"
                 "virtualMachines/vm_3");
    sc_ts_lock(s_ts);
    SC_CHECK_STR(s_ts->last.path, "/vm_3/metadata/instance/compute");
    SC_CHECK_STR(s_ts->last.api_version, "2021-02-01");
    SC_CHECK_STR(s_ts->last.metadata, "true");
    SC_CHECK(!s_ts->last.has_xff);
    sc_ts_unlock(s_ts);

    /* Absent domains are -1; integers are taken too; a scale set and a zone. */
    cfg.body = "{\"name\": \"vmss_7\", \"platformUpdateDomain\": 4, \"vmScaleSetName\": \"ss\", "
               "\"zone\": \"2\"}";
    sc_ts_set(s_ts, &cfg);
    SC_CHECK_INT(sc_imds_get_compute(c, &cp, &st), 0);
    SC_CHECK_STR(cp.name, "vmss_7");
    SC_CHECK_INT(cp.fault_domain, -1);
    SC_CHECK_INT(cp.update_domain, 4);
    SC_CHECK_STR(cp.vm_scale_set_name, "ss");
    SC_CHECK_STR(cp.zone, "2");
    SC_CHECK_STR(cp.resource_id, "");

    /* Bad values are named; *ret_compute is untouched. */
    cfg.body = "{\"name\": \"vm_3\", \"platformFaultDomain\": \"one\"}";
    sc_ts_set(s_ts, &cfg);
    SC_CHECK_INT(sc_imds_get_compute(c, &cp, &st), SC_E_PARSE);
    CHECK_SUB(st.message, "compute.platformFaultDomain is not a number");
    SC_CHECK_STR(cp.name, "vmss_7");

    cfg.body = "{\"name\": 7}";
    sc_ts_set(s_ts, &cfg);
    SC_CHECK_INT(sc_imds_get_compute(c, &cp, &st), SC_E_PARSE);
    CHECK_SUB(st.message, "compute.name is not a string");

    cfg.body = "{\"platformUpdateDomain\": \"99999999999\"}";
    sc_ts_set(s_ts, &cfg);
    SC_CHECK_INT(sc_imds_get_compute(c, &cp, &st), SC_E_PARSE);
    CHECK_SUB(st.message, "out of range");

    cfg.body = "{\"zone\": \"0123456789012345678901234567890123456789012345678901234567890123\"}";
    sc_ts_set(s_ts, &cfg);
    SC_CHECK_INT(sc_imds_get_compute(c, &cp, &st), SC_E_TOO_BIG);
    CHECK_SUB(st.message, "compute.zone is too long");

    cfg.body = "not json";
    sc_ts_set(s_ts, &cfg);
    SC_CHECK_INT(sc_imds_get_compute(c, &cp, &st), SC_E_NOT_JSON);

    cfg.body = NULL;
    cfg.status = 410;
    sc_ts_set(s_ts, &cfg);
    SC_CHECK_INT(sc_imds_get_compute(c, &cp, &st), SC_E_HTTP_410);
    CHECK_SUB(st.message, "/vm_3/metadata/instance/compute: HTTP 410");
    sc_imds_destroy(&c);
    sc_ts_set(s_ts, NULL);
}

SC_TEST(proxy_env_ignored)
{
    static const char *const vars[] = {"http_proxy",  "HTTP_PROXY", "https_proxy",
                                       "HTTPS_PROXY", "ALL_PROXY",  "all_proxy"};
    sc_imds_t *c;
    sc_imds_status_t st;
    char *body = NULL;
    size_t i;
    int before;

    for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        setenv(vars[i], "http://127.0.0.1:1", 1);
    unsetenv("no_proxy");
    unsetenv("NO_PROXY");
    sc_ts_set(s_ts, NULL);
    sc_ts_lock(s_ts);
    before = s_ts->requests;
    sc_ts_unlock(s_ts);
    c = s_client(NULL, 0);
    SC_CHECK(c);
    if (c) {
        SC_CHECK_INT(sc_imds_get_events(c, &body, NULL, &st), 0);
        CHECK_SUB(st.message, "HTTP 200");
        free(body);
    }
    for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
    sc_ts_lock(s_ts);
    SC_CHECK_INT(s_ts->requests, before + 1);
    SC_CHECK(!s_ts->last.has_via);
    sc_ts_unlock(s_ts);
    sc_imds_destroy(&c);
}

SC_TEST(keep_alive)
{
    sc_imds_t *c = s_client(NULL, 0);
    sc_imds_status_t st;
    sc_compute_t cp;
    char *body;
    int i, before;

    SC_REQUIRE(c);
    sc_ts_set(s_ts, NULL);
    sc_ts_lock(s_ts);
    before = s_ts->connections;
    sc_ts_unlock(s_ts);
    for (i = 0; i < 5; i++) {
        body = NULL;
        SC_CHECK_INT(sc_imds_get_events(c, &body, NULL, &st), 0);
        free(body);
    }
    SC_CHECK_INT(sc_imds_post_events(c, "{\"StartRequests\": []}", &st), 0);
    body = NULL;
    SC_CHECK_INT(sc_imds_get_events(c, &body, NULL, &st), 0);
    free(body);
    sc_ts_lock(s_ts);
    SC_CHECK_INT(s_ts->connections - before, 1); /* seven requests, one connection */
    sc_ts_unlock(s_ts);
    for (i = 0; i < 3; i++)
        SC_CHECK_INT(sc_imds_get_compute(c, &cp, &st), 0);
    sc_ts_lock(s_ts);
    SC_CHECK_INT(s_ts->connections - before, 2); /* compute has its own */
    sc_ts_unlock(s_ts);
    sc_imds_destroy(&c);
}

SC_TEST(null_status_ok)
{
    sc_imds_t *c = s_client(NULL, 0);
    char *body = NULL;
    sc_compute_t cp;

    SC_REQUIRE(c);
    sc_ts_set(s_ts, NULL);
    SC_CHECK_INT(sc_imds_get_events(c, &body, NULL, NULL), 0);
    free(body);
    SC_CHECK_INT(sc_imds_get_compute(c, &cp, NULL), 0);
    sc_imds_destroy(&c);
}

SC_TEST(bad_options)
{
    sc_imds_opts_t o;
    sc_imds_t *c = NULL;
    char longurl[SC_IMDS_MAX_URL + 20];

    sc_imds_opts_init(&o);
    SC_CHECK_STR(o.base_url, "http://169.254.169.254");
    SC_CHECK_STR(o.api_version, "2020-07-01");
    SC_CHECK_STR(o.compute_api_version, "2021-02-01");
    SC_CHECK_INT(o.connect_timeout_ms, 2000);
    SC_CHECK_INT(o.total_timeout_ms, 5000);

    o.base_url = "ftp://127.0.0.1/x";
    SC_CHECK_INT(sc_imds_new(&o, &c), -EINVAL);
    o.base_url = "http://127.0.0.1/a b";
    SC_CHECK_INT(sc_imds_new(&o, &c), -EINVAL);
    o.base_url = "http://127.0.0.1/x?y=1";
    SC_CHECK_INT(sc_imds_new(&o, &c), -EINVAL);
    memset(longurl, 'a', sizeof(longurl) - 1);
    memcpy(longurl, "http://", 7);
    longurl[sizeof(longurl) - 1] = '\0';
    o.base_url = longurl;
    SC_CHECK_INT(sc_imds_new(&o, &c), -EINVAL);
    sc_imds_opts_init(&o);
    o.api_version = "2020-07-01&x=1";
    SC_CHECK_INT(sc_imds_new(&o, &c), -EINVAL);
    o.api_version = "";
    SC_CHECK_INT(sc_imds_new(&o, &c), -EINVAL);
    sc_imds_opts_init(&o);
    o.total_timeout_ms = -1;
    SC_CHECK_INT(sc_imds_new(&o, &c), -EINVAL);
    sc_imds_opts_init(&o);
    SC_CHECK_INT(o.first_timeout_ms, 0);
    o.first_timeout_ms = 11 * 60 * 1000;
    SC_CHECK_INT(sc_imds_new(&o, &c), -EINVAL);
    SC_CHECK(c == NULL);

    /* NULL opts: the defaults (no request is made). */
    SC_CHECK_INT(sc_imds_new(NULL, &c), 0);
    SC_REQUIRE(c);
    SC_CHECK_STR(sc_imds_base_url(c), "http://169.254.169.254");
    sc_imds_destroy(&c);
    sc_imds_destroy(&c);
    sc_imds_destroy(NULL);
}

SC_TEST(backoff_growth_and_cap)
{
    sc_backoff_t b;
    int64_t base = 100, d;
    int i;

    sc_backoff_init(&b, 100, 5000);
    for (i = 0; i < 12; i++) {
        d = sc_backoff_next(&b, 0);
        CHECK_RANGE(d, base / 2, base);
        base = base * 2 > 5000 ? 5000 : base * 2;
    }
    SC_CHECK_INT(b.attempts, 12);
    for (i = 0; i < 200; i++)
        CHECK_RANGE(sc_backoff_next(&b, 0), 2500, 5000);
}

SC_TEST(backoff_hint_and_reset)
{
    sc_backoff_t b;

    sc_backoff_init(&b, 100, 10000);
    SC_CHECK_INT(sc_backoff_next(&b, 4000), 4000);   /* hint above the exponential */
    CHECK_RANGE(sc_backoff_next(&b, 50), 100, 200);  /* hint below: the exponential */
    SC_CHECK_INT(sc_backoff_next(&b, 60000), 10000); /* capped */
    SC_CHECK_INT(b.attempts, 3);
    sc_backoff_reset(&b);
    SC_CHECK_INT(b.attempts, 0);
    CHECK_RANGE(sc_backoff_next(&b, 0), 50, 100);

    sc_backoff_init(&b, 0, -5); /* clamped to 1..1 */
    SC_CHECK_INT(sc_backoff_next(&b, 0), 1);
    sc_backoff_init(&b, INT64_MAX / 2, INT64_MAX); /* no overflow when doubling */
    SC_CHECK(sc_backoff_next(&b, 0) > 0);
    SC_CHECK(sc_backoff_next(&b, 0) > 0);
    SC_CHECK(sc_backoff_next(&b, 0) > 0);
}

SC_TEST(backoff_jitter_varies)
{
    sc_backoff_t b;
    int64_t first, d;
    int i, differ = 0;

    sc_backoff_init(&b, 1000, 1000);
    first = sc_backoff_next(&b, 0);
    for (i = 0; i < 50; i++) {
        d = sc_backoff_next(&b, 0);
        CHECK_RANGE(d, 500, 1000);
        differ += d != first;
    }
    SC_CHECK(differ > 0);
}

int main(void)
{
    s_ts = sc_ts_start("/vm_3");
    if (!s_ts) {
        printf("cannot start the fake IMDS\n");
        return 1;
    }
    SC_RUN(get_events_ok);
    SC_RUN(api_version_and_trailing_slash);
    SC_RUN(wrong_base_path_is_404);
    SC_RUN(http_400);
    SC_RUN(http_404_405_410);
    SC_RUN(http_429);
    SC_RUN(http_5xx);
    SC_RUN(timeout);
    SC_RUN(first_request_waits_longer);
    SC_RUN(abort_flag_stops_a_request);
    SC_RUN(on_wait_called_while_a_request_waits);
    SC_RUN(connection_refused);
    SC_RUN(connection_dropped);
    SC_RUN(bad_bodies);
    SC_RUN(body_cut_short);
    SC_RUN(body_too_big);
    SC_RUN(post_approval);
    SC_RUN(post_in_two_halves);
    SC_RUN(compute_parse);
    SC_RUN(compute);
    SC_RUN(proxy_env_ignored);
    SC_RUN(keep_alive);
    SC_RUN(null_status_ok);
    SC_RUN(bad_options);
    SC_RUN(backoff_growth_and_cap);
    SC_RUN(backoff_hint_and_reset);
    SC_RUN(backoff_jitter_varies);
    sc_ts_stop(&s_ts);
    return sc_test_done();
}
