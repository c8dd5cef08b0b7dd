/* The agent's document handling: a new incarnation is one report, the same body none (and
 * is not even parsed), an incarnation going backwards is a new document, a body that does
 * not parse is refused with the parser's reason and the last good document kept, a malformed
 * event is left out of a document that keeps the others, its reason new once per
 * incarnation. */
#include "sc_agent_doc.h"
#include "sc_test.h"

static const char s_doc1[] = "{\"DocumentIncarnation\":1,\"Events\":[]}";
static const char s_doc2[] =
    "{\"DocumentIncarnation\":2,\"Events\":[{\"EventId\":\"C7061BAC-AFDC-4513-B24B-AA5F13A16123\","
    "\"EventStatus\":\"Scheduled\",\"EventType\":\"Freeze\",\"ResourceType\":\"VirtualMachine\","
    "\"Resources\":[\"WestNO_0\"],\"NotBefore\":\"Mon, 11 Apr 2022 22:26:58 GMT\"}]}";
static const char s_doc2_spaced[] =
    "{ \"DocumentIncarnation\": 2, \"Events\": [ "
    "{\"EventId\":\"C7061BAC-AFDC-4513-B24B-AA5F13A16123\","
    "\"EventStatus\":\"Scheduled\",\"EventType\":\"Freeze\",\"ResourceType\":\"VirtualMachine\","
    "\"Resources\":[\"WestNO_0\"],\"NotBefore\":\"Mon, 11 Apr 2022 22:26:58 GMT\"}]}";

static sc_agent_doc_verdict_t s_feed(sc_agent_doc_t *d, const char *body, char *err)
{
    sc_agent_doc_verdict_t v = SC_AGENT_DOC_VERDICT_MAX;
    SC_CHECK_INT(sc_agent_doc_feed(d, body, strlen(body), &v, err, 256), 0);
    return v;
}

SC_TEST(incarnations)
{
    sc_agent_doc_t *d = NULL;
    char err[256] = "";

    SC_REQUIRE(sc_agent_doc_new(&d) == 0);
    SC_CHECK(sc_agent_doc_current(d) == NULL);
    SC_CHECK_INT(sc_agent_doc_incarnation(d), -1);
    SC_CHECK_INT(s_feed(d, s_doc1, err), SC_AGENT_DOC_NEW);
    SC_CHECK_INT(sc_agent_doc_incarnation(d), 1);
    SC_CHECK_INT(s_feed(d, s_doc1, err), SC_AGENT_DOC_SAME);
    SC_CHECK_INT(s_feed(d, s_doc1, err), SC_AGENT_DOC_SAME);
    SC_CHECK_INT(sc_agent_doc_parses(d), 1); /* identical bytes are never parsed again */
    SC_CHECK_INT(s_feed(d, s_doc2, err), SC_AGENT_DOC_NEW);
    SC_CHECK_INT(sc_agent_doc_current(d)->n_events, 1);
    /* other bytes, same document: parsed, but not a new document */
    SC_CHECK_INT(s_feed(d, s_doc2_spaced, err), SC_AGENT_DOC_SAME);
    SC_CHECK_INT(sc_agent_doc_parses(d), 3);
    /* IMDS restarted: the incarnation goes down; a new document, flagged */
    SC_CHECK_INT(s_feed(d, s_doc1, err), SC_AGENT_DOC_BACKWARDS);
    SC_CHECK_INT(sc_agent_doc_incarnation(d), 1);
    SC_CHECK_INT(sc_agent_doc_current(d)->n_events, 0);
    sc_agent_doc_destroy(&d);
    SC_CHECK(d == NULL);
    sc_agent_doc_destroy(&d);
}

SC_TEST(bad_body_keeps_last_good)
{
    sc_agent_doc_t *d = NULL;
    char err[256] = "";

    SC_REQUIRE(sc_agent_doc_new(&d) == 0);
    SC_CHECK_INT(s_feed(d, s_doc2, err), SC_AGENT_DOC_NEW);
    SC_CHECK_INT(s_feed(d, "{\"DocumentIncarnation\":\"3\",\"Events\":[]}", err), SC_AGENT_DOC_BAD);
    SC_CHECK(strstr(err, "DocumentIncarnation") != NULL); /* the parser's reason names it */
    SC_CHECK_INT(sc_agent_doc_incarnation(d), 2);
    SC_CHECK_INT(sc_agent_doc_current(d)->n_events, 1);
    /* the same bad bytes again: reported as "again" so the caller logs once */
    SC_CHECK_INT(s_feed(d, "{\"DocumentIncarnation\":\"3\",\"Events\":[]}", err),
                 SC_AGENT_DOC_BAD_AGAIN);
    SC_CHECK_INT(s_feed(d, "", err), SC_AGENT_DOC_BAD);
    SC_CHECK_INT(s_feed(d, "{\"DocumentIncarnation\":2,", err), SC_AGENT_DOC_BAD);
    SC_CHECK_INT(s_feed(d, "<html>", err), SC_AGENT_DOC_BAD);
    SC_CHECK_INT(sc_agent_doc_incarnation(d), 2);
    /* back to the good document: the same one as before, so nothing new */
    SC_CHECK_INT(s_feed(d, s_doc2, err), SC_AGENT_DOC_SAME);
    SC_CHECK_STR(sc_agent_doc_verdict_name(SC_AGENT_DOC_BACKWARDS), "backwards");
    sc_agent_doc_destroy(&d);
}

/* s_doc2 plus a bad event after the good one. */
#define S_BAD_EVENT(inc, bad)                                                                      \
    "{\"DocumentIncarnation\":" inc ",\"Events\":[{\"EventId\":"                                   \
    "\"C7061BAC-AFDC-4513-B24B-AA5F13A16123\",\"EventStatus\":\"Scheduled\",\"EventType\":"        \
    "\"Freeze\",\"ResourceType\":\"VirtualMachine\",\"Resources\":[\"WestNO_0\"],\"NotBefore\":"   \
    "\"Mon, 11 Apr 2022 22:26:58 GMT\"}," bad "]}"

SC_TEST(malformed_event_left_out)
{
    sc_agent_doc_t *d = NULL;
    const char *const *bad;
    const bool *fresh = NULL;
    size_t n = 0;
    char err[256] = "";

    SC_REQUIRE(sc_agent_doc_new(&d) == 0);
    SC_CHECK_INT(s_feed(d, s_doc2, err), SC_AGENT_DOC_NEW);
    bad = sc_agent_doc_malformed(d, &n, &fresh);
    SC_CHECK(n == 0 && bad == NULL);
    /* the same incarnation with a bad event: a new document (its reasons are content), the
     * good event kept */
    SC_CHECK_INT(s_feed(d, S_BAD_EVENT("2", "{\"EventId\":5}"), err), SC_AGENT_DOC_NEW);
    SC_CHECK_INT(sc_agent_doc_current(d)->n_events, 1);
    bad = sc_agent_doc_malformed(d, &n, &fresh);
    SC_REQUIRE(n == 1);
    SC_CHECK_STR(bad[0], "Events[1].EventId: must be a string, got int");
    SC_CHECK(fresh[0]);
    /* other bytes, same events and reasons: nothing new */
    SC_CHECK_INT(s_feed(d, S_BAD_EVENT("2", "{ \"EventId\": 5 }"), err), SC_AGENT_DOC_SAME);
    /* a second bad event in the same incarnation: only it is new */
    SC_CHECK_INT(s_feed(d, S_BAD_EVENT("2", "{\"EventId\":5},{}"), err), SC_AGENT_DOC_NEW);
    bad = sc_agent_doc_malformed(d, &n, &fresh);
    SC_REQUIRE(n == 2);
    SC_CHECK(!fresh[0] && fresh[1]);
    SC_CHECK_STR(bad[1], "Events[2].EventId: missing");
    /* a new incarnation: every reason is new again */
    SC_CHECK_INT(s_feed(d, S_BAD_EVENT("3", "{\"EventId\":5},{}"), err), SC_AGENT_DOC_NEW);
    bad = sc_agent_doc_malformed(d, &n, &fresh);
    SC_CHECK(n == 2 && fresh[0] && fresh[1]);
    /* the bad events gone */
    SC_CHECK_INT(s_feed(d,
                        S_BAD_EVENT("3", "{\"EventId\":\"x\",\"EventType\":\"Reboot\","
                                         "\"EventStatus\":\"Scheduled\",\"ResourceType\":\"V\","
                                         "\"Resources\":[],\"NotBefore\":\"\"}"),
                        err),
                 SC_AGENT_DOC_NEW);
    SC_CHECK_INT(sc_agent_doc_current(d)->n_events, 2);
    sc_agent_doc_malformed(d, &n, NULL);
    SC_CHECK_INT(n, 0);
    sc_agent_doc_destroy(&d);
}

SC_TEST(fixtures)
{
    sc_agent_doc_t *d = NULL;
    const char *names[] = {"westno-1.json", "westno-2.json", "westno-3.json", "westno-4.json"};
    int64_t last = -1;

    SC_REQUIRE(sc_agent_doc_new(&d) == 0);
    for (size_t i = 0; i < 4; i++) {
        size_t len = 0;
        char *body = sc_test_fixture(names[i], &len);
        sc_agent_doc_verdict_t v;
        char err[256] = "";
        SC_REQUIRE(body);
        SC_CHECK_INT(sc_agent_doc_feed(d, body, len, &v, err, sizeof(err)), 0);
        if (sc_agent_doc_incarnation(d) != last)
            SC_CHECK(v == SC_AGENT_DOC_NEW || v == SC_AGENT_DOC_BACKWARDS);
        last = sc_agent_doc_incarnation(d);
        SC_CHECK(v != SC_AGENT_DOC_BAD);
        /* the fixtures are incarnations 1..4, each a new document */
        SC_CHECK_INT(v, SC_AGENT_DOC_NEW);
        SC_CHECK_INT(last, (int64_t)i + 1);
        free(body);
    }
    sc_agent_doc_destroy(&d);
}

int main(void)
{
    SC_RUN(incarnations);
    SC_RUN(bad_body_keeps_last_good);
    SC_RUN(malformed_event_left_out);
    SC_RUN(fixtures);
    return sc_test_done();
}
