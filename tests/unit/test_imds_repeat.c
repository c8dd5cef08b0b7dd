/* sc_imds_get_events on one client across changing answers: a body byte-identical to the last
 * valid one skips the JSON check, any other body is checked again (tests/unit/imds_test_server.h
 * on 127.0.0.1). */
#include "imds_test_server.h"
#include "sc_error.h"
#include "sc_imds.h"
#include "sc_test.h"

static sc_ts_t *s_ts; /* the fake IMDS, serving under /vm_3 */

static sc_imds_t *s_client(void)
{
    sc_imds_opts_t o;
    sc_imds_t *c = NULL;

    sc_imds_opts_init(&o);
    o.base_url = s_ts->url;
    o.connect_timeout_ms = 1000;
    o.total_timeout_ms = 3000;
    return sc_imds_new(&o, &c) < 0 ? NULL : c;
}

/* One GET with the server answering body; on success the body must come back unchanged. */
static int s_get(sc_imds_t *c, const char *body, sc_imds_status_t *st)
{
    sc_ts_cfg_t cfg = {.body = body};
    char *got = NULL;
    size_t len = 0;
    int rc;

    sc_ts_set(s_ts, &cfg);
    rc = sc_imds_get_events(c, &got, &len, st);
    if (rc == 0) {
        SC_CHECK_STR(got, body);
        SC_CHECK_INT(len, strlen(body));
        free(got);
    } else if (got)
        SC_FAILF("ret_body written on failure");
    return rc;
}

SC_TEST(changed_bodies_are_checked_again)
{
    static const char doc_a[] = "{\"DocumentIncarnation\": 1, \"Events\": []}";
    static const char doc_b[] = "{\"DocumentIncarnation\": 2, \"Events\": [], \"X\": \"longer\"}";
    static const char doc_s[] = "{\"DocumentIncarnation\": 3}";
    sc_imds_t *c = s_client();
    sc_imds_status_t st;

    SC_REQUIRE(c);
    SC_CHECK_INT(s_get(c, doc_a, &st), 0);
    SC_CHECK_INT(s_get(c, doc_a, &st), 0); /* the same bytes again */
    SC_CHECK_INT(st.http_status, 200);
    /* same length as doc_a, one byte different: not JSON any more */
    SC_CHECK_INT(s_get(c, "{\"DocumentIncarnation\": 1, \"Events\": [[}", &st), SC_E_NOT_JSON);
    /* a prefix of the last valid body: cut short */
    SC_CHECK_INT(s_get(c, "{\"DocumentIncarnation\": 1, \"Eve", &st), SC_E_TRUNCATED);
    SC_CHECK_INT(s_get(c, doc_a, &st), 0);
    SC_CHECK_INT(s_get(c, doc_b, &st), 0); /* longer */
    SC_CHECK_INT(s_get(c, doc_s, &st), 0); /* shorter */
    SC_CHECK_INT(s_get(c, doc_s, &st), 0);
    SC_CHECK_INT(s_get(c, "[1, 2]", &st), SC_E_NOT_JSON);
    SC_CHECK_INT(s_get(c, "{\"DocumentIncarnation\": 3} x", &st), SC_E_NOT_JSON);
    SC_CHECK_INT(s_get(c, "", &st), SC_E_EMPTY);
    SC_CHECK_INT(s_get(c, doc_b, &st), 0);
    sc_imds_destroy(&c);
}

SC_TEST(invalid_body_is_never_remembered)
{
    static const char bad[] = "{\"DocumentIncarnation\": 4, \"Ev";
    sc_imds_t *c = s_client();
    sc_imds_status_t st;

    SC_REQUIRE(c);
    /* the first answer is bad, then the same bad bytes again: refused both times */
    SC_CHECK_INT(s_get(c, bad, &st), SC_E_TRUNCATED);
    SC_CHECK_INT(s_get(c, bad, &st), SC_E_TRUNCATED);
    SC_CHECK_INT(s_get(c, "{}", &st), 0);
    SC_CHECK_INT(s_get(c, bad, &st), SC_E_TRUNCATED);
    SC_CHECK_INT(s_get(c, "{}", &st), 0);
    sc_imds_destroy(&c);
}

int main(void)
{
    s_ts = sc_ts_start("/vm_3");
    if (!s_ts) {
        printf("cannot start the fake IMDS\n");
        return 1;
    }
    SC_RUN(changed_bodies_are_checked_again);
    SC_RUN(invalid_body_is_never_remembered);
    sc_ts_stop(&s_ts);
    return sc_test_done();
}
