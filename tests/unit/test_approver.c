/* The approver against a fake IMDS (libmicrohttpd): one POST per call listing every EventId,
 * the intent in the store before the POST and the answer after, failures recorded (not
 * retried here), delegated intents open until answered, bad ids refused before any POST. */
#include "imds_test_server.h"
#include "sc_approver.h"
#include "sc_dlog.h"
#include "sc_error.h"
#include "sc_store.h"
#include "sc_store_test.h"
#include "sc_test.h"
#include "sc_time.h"

#include <poll.h>
#include <string.h>

static int s_requests(sc_ts_t *ts)
{
    int n;
    sc_ts_lock(ts);
    n = ts->requests;
    sc_ts_unlock(ts);
    return n;
}

static int64_t s_count(sc_store_t *s, const char *sql)
{
    int64_t n = -1;
    sc_db_query_int64(sc_store_test_db(s), &n, sql, NULL);
    return n;
}

SC_TEST(one_post_per_round_with_intent_and_answer)
{
    sc_ts_t *ts = sc_ts_start("/vm_0");
    sc_store_t *s = NULL;
    sc_approver_t *a = NULL;
    sc_approval_outcome_t out;
    char err[256];
    const char *ids[] = {"E1", "e2-abc"};
    SC_REQUIRE(ts);
    SC_REQUIRE(sc_store_open(":memory:", &s, err, sizeof(err)) == 0);
    SC_REQUIRE(sc_approver_new(s, ts->url, "vm_0", &a) == 0);

    SC_CHECK_INT(sc_approver_approve(a, 3, ids, 2, "all drained", &out), 0);
    SC_CHECK_INT(out.rc, 0);
    SC_CHECK_INT(out.http_status, 200);
    SC_CHECK_INT(s_requests(ts), 1); /* one POST for both events */
    SC_CHECK_INT(sc_approver_posts(a), 1);
    sc_ts_lock(ts);
    SC_CHECK_STR(ts->last.method, "POST");
    SC_CHECK_STR(ts->last.body,
                 "{\"StartRequests\":[{\"EventId\":\"E1\"},{\"EventId\":\"e2-abc\"}]}");
    sc_ts_unlock(ts);
    /* Intent, then answer, in the log and in approvals. */
    SC_CHECK_INT(
        s_count(s, "SELECT count(*) FROM dlog WHERE kind = 'approval_intent' AND term = 3"), 1);
    SC_CHECK_INT(s_count(s, "SELECT min(idx) FROM dlog WHERE kind = 'approval_answer'") >
                     s_count(s, "SELECT min(idx) FROM dlog WHERE kind = 'approval_intent'"),
                 1);
    SC_CHECK_INT(s_count(s, "SELECT count(*) FROM approvals WHERE rc = 0 AND http_status = 200 "
                            "AND answered_ms IS NOT NULL AND body LIKE '%E1%e2-abc%'"),
                 1);
    json_object *pend = NULL;
    SC_CHECK_INT(sc_approver_unanswered(a, &pend), 0);
    SC_CHECK_INT(json_object_array_length(pend), 0);
    json_object_put(pend);

    sc_approver_destroy(&a);
    SC_CHECK(a == NULL);
    sc_store_close(&s);
    sc_ts_stop(&ts);
}

SC_TEST(failure_recorded_not_retried)
{
    sc_ts_t *ts = sc_ts_start("/vm_0");
    sc_store_t *s = NULL;
    sc_approver_t *a = NULL;
    sc_approval_outcome_t out;
    char err[256];
    const char *ids[] = {"E1"};
    SC_REQUIRE(ts);
    SC_REQUIRE(sc_store_open(":memory:", &s, err, sizeof(err)) == 0);
    SC_REQUIRE(sc_approver_new(s, ts->url, "vm_0", &a) == 0);
    sc_ts_cfg_t cfg = {.status = 429, .retry_after = "2"};
    sc_ts_set(ts, &cfg);
    SC_CHECK_INT(sc_approver_approve(a, 1, ids, 1, "r", &out), 0);
    SC_CHECK_INT(out.rc, SC_E_HTTP_429);
    SC_CHECK_INT(out.http_status, 429);
    SC_CHECK(out.retry_after_ms >= 2000);
    SC_CHECK_INT(s_requests(ts), 1); /* the caller retries, with backoff, in a later round */
    SC_CHECK_INT(s_count(s, "SELECT count(*) FROM approvals WHERE rc != 0 AND http_status = 429"),
                 1);
    /* A failed answer does not mark the event approved. */
    SC_CHECK_INT(s_count(s, "SELECT count(*) FROM events WHERE approved_ms IS NOT NULL"), 0);

    /* Nobody listening: the intent is still closed with the error. */
    sc_approver_destroy(&a);
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/vm_0", sc_ts_closed_port());
    SC_REQUIRE(sc_approver_new(s, url, "vm_0", &a) == 0);
    SC_CHECK_INT(sc_approver_approve(a, 1, ids, 1, "r", &out), 0);
    SC_CHECK_INT(out.rc, SC_E_CONNREFUSED);
    SC_CHECK_INT(s_count(s, "SELECT count(*) FROM approvals WHERE answered_ms IS NULL"), 0);
    sc_approver_destroy(&a);
    sc_store_close(&s);
    sc_ts_stop(&ts);
}

SC_TEST(bad_ids_refused_before_anything)
{
    sc_ts_t *ts = sc_ts_start("/vm_0");
    sc_store_t *s = NULL;
    sc_approver_t *a = NULL;
    sc_approval_outcome_t out;
    char err[256];
    const char *dup[] = {"E1", "e1"};
    const char *bad[] = {"not an id"};
    SC_REQUIRE(ts);
    SC_REQUIRE(sc_store_open(":memory:", &s, err, sizeof(err)) == 0);
    SC_REQUIRE(sc_approver_new(s, ts->url, "vm_0", &a) == 0);
    SC_CHECK(sc_approver_approve(a, 1, dup, 2, "r", &out) < 0);
    SC_CHECK(sc_approver_approve(a, 1, bad, 1, "r", &out) < 0);
    SC_CHECK(sc_approver_approve(a, 1, dup, 0, "r", &out) < 0);
    SC_CHECK_INT(s_requests(ts), 0);
    SC_CHECK_INT(s_count(s, "SELECT count(*) FROM dlog"), 0);
    SC_CHECK(sc_approver_new(s, "ftp://x", "vm_0", &(sc_approver_t *){NULL}) < 0);
    sc_approver_destroy(&a);
    sc_store_close(&s);
    sc_ts_stop(&ts);
}

SC_TEST(delegated_intent_open_until_answered)
{
    sc_store_t *s = NULL;
    sc_approver_t *a = NULL;
    char err[256];
    const char *ids[] = {"E9"};
    int64_t idx = 0;
    json_object *pend = NULL;
    SC_REQUIRE(sc_store_open(":memory:", &s, err, sizeof(err)) == 0);
    SC_REQUIRE(sc_approver_new(s, "http://127.0.0.1:1/vm_0", "vm_0", &a) == 0);
    SC_CHECK_INT(sc_approver_intent_via(a, 2, "vm_5", ids, 1, "only vm_5 sees it", &idx), 0);
    SC_CHECK(idx > 0);
    SC_CHECK_INT(sc_approver_posts(a), 0);
    /* As after a crash: the intent is there without an answer. */
    SC_CHECK_INT(sc_approver_unanswered(a, &pend), 0);
    SC_REQUIRE(pend && json_object_array_length(pend) == 1);
    json_object *p = json_object_array_get_idx(pend, 0);
    SC_CHECK_INT(json_object_get_int64(json_object_object_get(p, "id")), idx);
    SC_CHECK_STR(json_object_get_string(json_object_object_get(p, "via")), "vm_5");
    SC_CHECK_STR(json_object_get_string(
                     json_object_array_get_idx(json_object_object_get(p, "event_ids"), 0)),
                 "E9");
    json_object_put(pend);
    SC_CHECK_INT(sc_approver_record_answer(a, 2, idx, 0, 200, "OK"), 0);
    SC_CHECK_INT(sc_approver_unanswered(a, &pend), 0);
    SC_CHECK_INT(json_object_array_length(pend), 0);
    json_object_put(pend);
    SC_CHECK_INT(s_count(s, "SELECT count(*) FROM approvals WHERE via = 'vm_5' AND rc = 0"), 1);
    /* An answer for an intent that does not exist is refused. */
    SC_CHECK(sc_approver_record_answer(a, 2, idx + 100, 0, 200, "OK") < 0);
    sc_approver_destroy(&a);
    sc_store_close(&s);
}

/* POSTs off the caller's thread: post_async returns while the IMDS sleeps; the outcomes come
 * back in the order asked, each with its intent, the fd readable while one waits and not
 * after the last is taken. */
SC_TEST(async_posts_in_order_and_outcomes_through_the_fd)
{
    sc_ts_t *ts = sc_ts_start("/vm_0");
    sc_store_t *s = NULL;
    sc_approver_t *a = NULL;
    sc_approval_outcome_t out;
    char err[256];
    struct pollfd pfd;
    int64_t t0;
    SC_REQUIRE(ts);
    SC_REQUIRE(sc_store_open(":memory:", &s, err, sizeof(err)) == 0);
    SC_REQUIRE(sc_approver_new(s, ts->url, "vm_0", &a) == 0);
    sc_ts_cfg_t cfg = {.post_sleep_ms = 400};
    sc_ts_set(ts, &cfg);
    pfd = (struct pollfd){.fd = sc_approver_fd(a), .events = POLLIN};
    SC_REQUIRE(pfd.fd >= 0);
    t0 = sc_mono_ms();
    SC_CHECK_INT(sc_approver_post_async(a, 7, "{\"StartRequests\":[{\"EventId\":\"E7\"}]}"), 0);
    SC_CHECK_INT(sc_approver_post_async(a, 9, "{\"StartRequests\":[{\"EventId\":\"E9\"}]}"), 0);
    SC_CHECK(sc_mono_ms() - t0 < 200); /* not waited for */
    SC_CHECK(!sc_approver_take(a, &out));
    SC_CHECK_INT((long long)sc_approver_in_flight(a), 2);
    SC_CHECK_INT(poll(&pfd, 1, 0), 0);
    SC_CHECK_INT(poll(&pfd, 1, 3000), 1); /* the first outcome */
    SC_CHECK(sc_approver_take(a, &out));
    SC_CHECK_INT(out.intent_index, 7);
    SC_CHECK_INT(out.rc, 0);
    SC_CHECK_INT(out.http_status, 200);
    SC_CHECK(sc_mono_ms() - t0 >= 380);
    SC_CHECK_INT(poll(&pfd, 1, 3000), 1);
    SC_CHECK(sc_approver_take(a, &out));
    SC_CHECK_INT(out.intent_index, 9);
    SC_CHECK_INT(poll(&pfd, 1, 0), 0); /* nothing left: not readable */
    SC_CHECK(!sc_approver_take(a, &out));
    SC_CHECK_INT((long long)sc_approver_in_flight(a), 0);
    SC_CHECK_INT(s_requests(ts), 2);
    sc_ts_lock(ts);
    SC_CHECK(strstr(ts->last.body, "E9") != NULL);
    sc_ts_unlock(ts);
    SC_CHECK_INT((long long)sc_approver_posts(a), 2);
    /* destroyed with a POST under way and one queued: the queued one is never sent */
    SC_CHECK_INT(sc_approver_post_async(a, 11, "{\"StartRequests\":[{\"EventId\":\"E11\"}]}"), 0);
    SC_CHECK_INT(sc_approver_post_async(a, 12, "{\"StartRequests\":[{\"EventId\":\"E12\"}]}"), 0);
    for (t0 = sc_mono_ms(); s_requests(ts) < 3 && sc_mono_ms() - t0 < 5000;)
        sc_sleep_ms(5); /* POST 11 reached the server: it sleeps there, 12 waits its turn */
    sc_approver_destroy(&a);
    SC_CHECK_INT(s_requests(ts), 3);
    sc_store_close(&s);
    sc_ts_stop(&ts);
}

int main(void)
{
    SC_RUN(one_post_per_round_with_intent_and_answer);
    SC_RUN(failure_recorded_not_retried);
    SC_RUN(bad_ids_refused_before_anything);
    SC_RUN(delegated_intent_open_until_answered);
    SC_RUN(async_posts_in_order_and_outcomes_through_the_fd);
    return sc_test_done();
}
