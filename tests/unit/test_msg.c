/* sc_msg: round trip of every message type, every rejection, the limits. */
#include "sc_test.h"

#include <errno.h>
#include <stdint.h>

#include "sc_error.h"
#include "sc_msg.h"

#define EV1 "C7061BAC-AFDC-4513-B24B-AA5F13A16123"
#define EV2 "0d1c2f3e-aaaa-bbbb-cccc-000000000002"

/* encode -> decode -> equal; returns the decoded copy (caller destroys) or NULL. */
static sc_msg_t *s_round_trip(const sc_msg_t *m)
{
    char *buf = NULL, err[512] = "";
    size_t len = 0;
    sc_msg_t *back = NULL;
    int rc = sc_msg_encode(m, &buf, &len);

    if (rc != 0) {
        sc_msg_validate(m, err, sizeof(err));
        SC_FAILF("encode %s: %s (%s)", sc_msg_type_name(m->type), sc_strerror(rc), err);
        return NULL;
    }
    SC_CHECK(len == strlen(buf));
    SC_CHECK(len <= SC_MSG_MAX_BYTES);
    rc = sc_msg_decode(buf, len, &back, err, sizeof(err));
    if (rc != 0) {
        SC_FAILF("decode %s: %s: %s\n  %s", sc_msg_type_name(m->type), sc_strerror(rc), err, buf);
        free(buf);
        return NULL;
    }
    if (!sc_msg_equal(m, back))
        SC_FAILF("round trip of %s differs: %s", sc_msg_type_name(m->type), buf);
    free(buf);
    return back;
}

static sc_msg_t *s_new(sc_msg_type_t t, uint64_t term, uint64_t seq)
{
    sc_msg_t *m = NULL;

    if (sc_msg_new(t, "vm-1", term, seq, &m) != 0)
        return NULL;
    return m;
}

SC_TEST(round_trip_hello)
{
    sc_msg_t *m = s_new(SC_MSG_HELLO, 0, 1), *b;

    SC_REQUIRE(m);
    SC_CHECK_STR(m->hello.name, "vm-1");
    SC_CHECK_INT(m->hello.incarnation, -1);
    m->hello.fault_domain = 2;
    m->hello.update_domain = 17;
    snprintf(m->hello.agent_version, sizeof(m->hello.agent_version), "0.1.0 (git abc)");
    m->hello.proto_min = 1;
    m->hello.proto_max = 3;
    SC_CHECK_INT(sc_msg_add_capability(m, SC_CAP_HOOKS), 0);
    SC_CHECK_INT(sc_msg_add_capability(m, SC_CAP_APPROVE_VIA), 0);
    SC_CHECK_INT(sc_msg_add_capability(m, "future-thing"), 0);
    SC_CHECK_INT(sc_msg_add_capability(m, SC_CAP_HOOKS), -EINVAL);
    SC_CHECK_INT(sc_msg_add_capability(m, "Bad Cap"), -EINVAL);
    snprintf(m->hello.boot_id, sizeof(m->hello.boot_id), "6f1e2d3c-0000-4000-8000-123456789abc");
    m->hello.incarnation = 42;
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK_INT(b->hello.fault_domain, 2);
    SC_CHECK_INT(b->hello.update_domain, 17);
    SC_CHECK_INT(b->hello.n_capabilities, 3);
    SC_CHECK(sc_msg_has_capability(b, SC_CAP_APPROVE_VIA));
    SC_CHECK(!sc_msg_has_capability(b, SC_CAP_STANDALONE));
    SC_CHECK_INT(b->hello.incarnation, 42);
    SC_CHECK_STR(b->from, "vm-1");
    SC_CHECK_INT(b->seq, 1);
    SC_CHECK_INT(b->version, SC_PROTO_VERSION);
    sc_msg_destroy(&b);
    SC_CHECK(b == NULL);
    sc_msg_destroy(&m);
}

SC_TEST(round_trip_heartbeat_doc_request_ack_nack)
{
    sc_msg_t *m = s_new(SC_MSG_HEARTBEAT, 3, INT64_MAX), *b;

    SC_REQUIRE(m);
    m->heartbeat.incarnation = 7;
    m->heartbeat.running_hooks = 2;
    m->heartbeat.standalone = true;
    m->heartbeat.imds_down_ms = 12345;
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK(b->heartbeat.standalone);
    SC_CHECK_INT(b->heartbeat.running_hooks, 2);
    SC_CHECK_INT(b->heartbeat.imds_down_ms, 12345);
    SC_CHECK(b->seq == INT64_MAX);
    sc_msg_destroy(&b);
    sc_msg_destroy(&m);
    {
        /* imds_down_ms is optional (older agents): absent reads as -1, "not said" */
        static const char old_hb[] = "{\"v\":1,\"type\":\"heartbeat\",\"from\":\"vm-1\",\"term\":3,"
                                     "\"seq\":1,\"incarnation\":1,\"running_hooks\":0,"
                                     "\"standalone\":false}";
        char err[256];

        SC_REQUIRE(sc_msg_decode(old_hb, sizeof(old_hb) - 1, &b, err, sizeof(err)) == 0);
        SC_CHECK_INT(b->heartbeat.imds_down_ms, -1);
        sc_msg_destroy(&b);
    }

    SC_REQUIRE((m = s_new(SC_MSG_DOC_REQUEST, 4, 9)));
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK_INT(b->type, SC_MSG_DOC_REQUEST);
    SC_CHECK_INT(b->term, 4);
    sc_msg_destroy(&b);
    sc_msg_destroy(&m);

    SC_REQUIRE((m = s_new(SC_MSG_APPEND_ACK, 4, 10)));
    m->append_ack.success = true;
    m->append_ack.match_index = 1234;
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK(b->append_ack.success);
    SC_CHECK_INT(b->append_ack.match_index, 1234);
    sc_msg_destroy(&b);
    sc_msg_destroy(&m);

    SC_REQUIRE((m = s_new(SC_MSG_NACK, 4, 11)));
    m->nack.ref_seq = 77;
    SC_CHECK_INT(sc_msg_set_text(&m->nack.reason, "stale term 3 < 4", 16, false), 0);
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK_INT(b->nack.ref_seq, 77);
    SC_CHECK_STR(b->nack.reason, "stale term 3 < 4");
    sc_msg_destroy(&b);
    sc_msg_destroy(&m);

    /* a NULL text is sent as "" */
    SC_REQUIRE((m = s_new(SC_MSG_VOTE, 5, 1)));
    m->vote.granted = false;
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK_STR(b->vote.reason, "");
    SC_CHECK(!b->vote.granted);
    sc_msg_destroy(&b);
    sc_msg_destroy(&m);
}

SC_TEST(round_trip_document)
{
    size_t len;
    char *text = sc_test_fixture("westno-2.json", &len), err[256];
    sc_msg_t *m = s_new(SC_MSG_DOCUMENT, 2, 5), *b;

    SC_REQUIRE(text && m);
    SC_REQUIRE(sc_doc_parse(text, len, &m->document.document, err, sizeof(err)) == 0);
    m->document.incarnation = m->document.document->incarnation;
    m->document.observed_at_ms = 1649715000123;
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK_INT(b->document.incarnation, 2);
    SC_REQUIRE(b->document.document && b->document.document->n_events == 1);
    SC_CHECK_STR(b->document.document->events[0].id, EV1);
    SC_CHECK_INT(b->document.document->events[0].duration_s, 5);
    SC_CHECK_INT(b->document.n_malformed, 0);
    sc_msg_destroy(&b);
    /* the events the agent left out: their reasons, cut and made safe; at most 8 */
    {
        char long_reason[SC_MSG_MALFORMED_MAX + 40];

        memset(long_reason, 'z', sizeof(long_reason) - 1);
        long_reason[sizeof(long_reason) - 1] = '\0';
        SC_CHECK_INT(sc_msg_add_malformed(m, "Events[1].EventId: missing"), 0);
        SC_CHECK_INT(sc_msg_add_malformed(m, "Events[2]: bad \xff byte"), 0);
        SC_CHECK_INT(sc_msg_add_malformed(m, long_reason), 0);
        SC_CHECK_INT(sc_msg_add_malformed(m, ""), -EINVAL);
        for (int i = 3; i < SC_MSG_MAX_MALFORMED; i++)
            SC_CHECK_INT(sc_msg_add_malformed(m, "Events[9].NotBefore: bad"), 0);
        SC_CHECK_INT(sc_msg_add_malformed(m, "one too many"), SC_E_TOO_BIG);
    }
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK_INT(b->document.n_malformed, SC_MSG_MAX_MALFORMED);
    SC_CHECK_STR(b->document.malformed[0], "Events[1].EventId: missing");
    SC_CHECK_STR(b->document.malformed[1], "Events[2]: bad ? byte");
    SC_CHECK_INT(strlen(b->document.malformed[2]), SC_MSG_MALFORMED_MAX);
    sc_msg_destroy(&b);
    {
        sc_msg_t *h = s_new(SC_MSG_HOOK_PROGRESS, 1, 1);

        SC_CHECK_INT(sc_msg_add_malformed(h, "x"), -EINVAL); /* not a document */
        sc_msg_destroy(&h);
    }
    /* the envelope's incarnation must be the document's */
    m->document.incarnation = 3;
    SC_CHECK_INT(sc_msg_validate(m, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "differs from DocumentIncarnation") != NULL);
    sc_msg_destroy(&m);
    free(text);
}

SC_TEST(round_trip_hook_progress)
{
    sc_msg_t *m = s_new(SC_MSG_HOOK_PROGRESS, 6, 12), *b;
    char big[SC_MSG_MAX_TEXT + 100];

    SC_REQUIRE(m);
    snprintf(m->hook_progress.event, sizeof(m->hook_progress.event), EV1);
    m->hook_progress.phase = SC_MSG_PHASE_RECOVER;
    m->hook_progress.state = SC_MSG_HOOK_TIMED_OUT;
    m->hook_progress.exit_status = 137;
    m->hook_progress.origin = SC_MSG_ORIGIN_ORDER;
    m->hook_progress.order_term = 6;
    /* an output tail longer than the limit, ending with NULs and a broken UTF-8 byte */
    memset(big, 'x', sizeof(big));
    memcpy(big + sizeof(big) - 8, "\xc3\xa9nd\0\xffZ", 8);
    SC_CHECK_INT(sc_msg_set_text(&m->hook_progress.detail, big, sizeof(big), true), 0);
    SC_CHECK_INT(strlen(m->hook_progress.detail), SC_MSG_MAX_TEXT);
    SC_CHECK(strcmp(m->hook_progress.detail + SC_MSG_MAX_TEXT - 8, "\xc3\xa9nd??Z?") == 0);
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK_INT(b->hook_progress.state, SC_MSG_HOOK_TIMED_OUT);
    SC_CHECK_INT(b->hook_progress.phase, SC_MSG_PHASE_RECOVER);
    SC_CHECK_INT(b->hook_progress.exit_status, 137);
    SC_CHECK_STR(b->hook_progress.detail, m->hook_progress.detail);
    SC_CHECK_INT(b->hook_progress.attempt, 1);
    sc_msg_destroy(&b);
    /* the attempt of the order it answers */
    m->hook_progress.attempt = SC_MSG_ATTEMPT_MAX;
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK_INT(b->hook_progress.attempt, SC_MSG_ATTEMPT_MAX);
    sc_msg_destroy(&b);
    m->hook_progress.attempt = 0;
    SC_CHECK_INT(sc_msg_validate(m, NULL, 0), -EINVAL);
    m->hook_progress.attempt = 1;
    /* the head is kept when asked, cut before a multi-byte character */
    memset(big, 'y', sizeof(big));
    memcpy(big + SC_MSG_MAX_TEXT - 1, "\xc3\xa9", 2);
    SC_CHECK_INT(sc_msg_set_text(&m->hook_progress.detail, big, sizeof(big), false), 0);
    SC_CHECK_INT(strlen(m->hook_progress.detail), SC_MSG_MAX_TEXT - 1);
    for (int s = 0; s < SC_MSG_HOOK_STATE_MAX; s++) {
        m->hook_progress.state = (sc_msg_hook_state_t)s;
        m->hook_progress.origin = SC_MSG_ORIGIN_STANDALONE;
        m->hook_progress.order_term = 0;
        b = s_round_trip(m);
        SC_CHECK(b && b->hook_progress.state == (sc_msg_hook_state_t)s);
        sc_msg_destroy(&b);
    }
    sc_msg_destroy(&m);
}

SC_TEST(round_trip_order)
{
    size_t len;
    char *text = sc_test_fixture("westno-2.json", &len), err[256];
    sc_msg_t *m = s_new(SC_MSG_ORDER, 9, 1), *b;
    sc_doc_t *doc = NULL;

    SC_REQUIRE(text && m);
    m->order.action = SC_MSG_PHASE_PREPARE;
    snprintf(m->order.event, sizeof(m->order.event), "%s", EV1);
    SC_CHECK_INT(m->order.attempt, 1);
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK(b->order.event_doc == NULL);
    SC_CHECK_INT(b->order.attempt, 1);
    sc_msg_destroy(&b);
    /* attempt 1 is left out (what agents older than the field understand), others sent */
    {
        char *buf = NULL;
        size_t blen = 0;

        SC_REQUIRE(sc_msg_encode(m, &buf, &blen) == 0);
        SC_CHECK(strstr(buf, "attempt") == NULL);
        free(buf);
        m->order.attempt = 3;
        SC_REQUIRE(sc_msg_encode(m, &buf, &blen) == 0);
        SC_CHECK(strstr(buf, "\"attempt\":3") != NULL);
        free(buf);
        SC_REQUIRE((b = s_round_trip(m)));
        SC_CHECK_INT(b->order.attempt, 3);
        sc_msg_destroy(&b);
        m->order.attempt = SC_MSG_ATTEMPT_MAX + 1;
        SC_CHECK_INT(sc_msg_validate(m, err, sizeof(err)), -EINVAL);
        SC_CHECK(strstr(err, "order.attempt: 1001 out of range 1..1000") != NULL);
        m->order.attempt = 1;
        /* a rehearsal's order says so; a real one leaves the field out (older agents) */
        SC_REQUIRE(sc_msg_encode(m, &buf, &blen) == 0);
        SC_CHECK(strstr(buf, "rehearsal") == NULL);
        free(buf);
        m->order.rehearsal = true;
        SC_REQUIRE(sc_msg_encode(m, &buf, &blen) == 0);
        SC_CHECK(strstr(buf, "\"rehearsal\":true") != NULL);
        free(buf);
        SC_REQUIRE((b = s_round_trip(m)));
        SC_CHECK(b->order.rehearsal);
        sc_msg_destroy(&b);
        m->order.rehearsal = false;
        SC_REQUIRE((b = s_round_trip(m)));
        SC_CHECK(!b->order.rehearsal);
        sc_msg_destroy(&b);
    }
    SC_REQUIRE(sc_doc_parse(text, len, &doc, err, sizeof(err)) == 0);
    m->order.event_doc = doc;
    SC_REQUIRE((b = s_round_trip(m)));
    SC_REQUIRE(b->order.event_doc && b->order.event_doc->n_events == 1);
    SC_CHECK_STR(b->order.event_doc->events[0].resources[1], "WestNO_1");
    sc_msg_destroy(&b);
    /* the event_doc must be the ordered event */
    snprintf(m->order.event, sizeof(m->order.event), "%s", EV2);
    SC_CHECK_INT(sc_msg_validate(m, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "order.event_doc: EventId") != NULL);
    sc_msg_destroy(&m);
    free(text);
}

SC_TEST(round_trip_approve)
{
    sc_msg_t *m = s_new(SC_MSG_APPROVE_VIA, 9, 2), *b;

    SC_REQUIRE(m);
    SC_CHECK_INT(sc_msg_add_event(m, EV1), 0);
    SC_CHECK_INT(sc_msg_add_event(m, EV2), 0);
    SC_CHECK_INT(sc_msg_add_event(m, "c7061bac-afdc-4513-b24b-aa5f13a16123"), -EINVAL);
    SC_CHECK_INT(sc_msg_add_event(m, "not an id"), -EINVAL);
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK_INT(b->approve_via.n_events, 2);
    SC_CHECK_STR(b->approve_via.events[1], EV2);
    sc_msg_destroy(&b);
    sc_msg_destroy(&m);

    SC_REQUIRE((m = s_new(SC_MSG_APPROVE_RESULT, 9, 3)));
    SC_CHECK_INT(sc_msg_add_event(m, EV2), 0);
    m->approve_result.http_status = 429;
    snprintf(m->approve_result.result, sizeof(m->approve_result.result), "SC_E_HTTP_429");
    SC_CHECK_INT(sc_msg_set_text(&m->approve_result.message, "slow down", 9, false), 0);
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK_INT(b->approve_result.http_status, 429);
    SC_CHECK_STR(b->approve_result.result, "SC_E_HTTP_429");
    SC_CHECK_STR(b->approve_result.message, "slow down");
    sc_msg_destroy(&b);
    SC_CHECK_INT(sc_msg_add_capability(m, "hooks"), -EINVAL); /* wrong type */
    sc_msg_destroy(&m);
}

SC_TEST(round_trip_election)
{
    sc_msg_t *m = s_new(SC_MSG_LEADER, 12, 1), *b;

    SC_REQUIRE(m);
    SC_CHECK_STR(m->leader.leader, "vm-1");
    m->leader.lease_ms = 3000;
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK_STR(b->leader.members_hash, "");
    sc_msg_destroy(&b);
    snprintf(m->leader.members_hash, sizeof(m->leader.members_hash), "deadBEEF0123");
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK_STR(b->leader.members_hash, "deadBEEF0123");
    SC_CHECK_INT(b->leader.lease_ms, 3000);
    SC_CHECK_INT(b->leader.index, 0);
    sc_msg_destroy(&b);
    m->leader.index = 41;
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK_INT(b->leader.index, 41);
    sc_msg_destroy(&b);
    sc_msg_destroy(&m);

    SC_REQUIRE((m = s_new(SC_MSG_VOTE_REQUEST, 12, 2)));
    m->vote_request.last_log_index = 55;
    m->vote_request.last_log_term = 11;
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK_STR(b->vote_request.candidate, "vm-1");
    SC_CHECK_INT(b->vote_request.last_log_index, 55);
    SC_CHECK(!b->vote_request.pre_vote && !b->vote_request.transfer);
    SC_CHECK_STR(b->vote_request.voters_digest, "");
    sc_msg_destroy(&b);
    m->vote_request.pre_vote = true;
    m->vote_request.transfer = true;
    snprintf(m->vote_request.voters_digest, sizeof(m->vote_request.voters_digest), "00ff12");
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK(b->vote_request.pre_vote && b->vote_request.transfer);
    SC_CHECK_STR(b->vote_request.voters_digest, "00ff12");
    sc_msg_destroy(&b);
    sc_msg_destroy(&m);

    SC_REQUIRE((m = s_new(SC_MSG_TIMEOUT_NOW, 12, 5)));
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK_INT(b->type, SC_MSG_TIMEOUT_NOW);
    SC_CHECK_INT(b->term, 12);
    sc_msg_destroy(&b);
    sc_msg_destroy(&m);

    SC_REQUIRE((m = s_new(SC_MSG_APPEND_ACK, 12, 6)));
    m->append_ack.success = true;
    m->append_ack.match_index = 9;
    m->append_ack.round = 123456;
    SC_CHECK_INT(m->append_ack.received, -1); /* an append's answer: left out */
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK_INT(b->append_ack.round, 123456);
    SC_CHECK_INT(b->append_ack.match_index, 9);
    SC_CHECK_INT(b->append_ack.received, -1);
    sc_msg_destroy(&b);
    m->append_ack.received = 0; /* a snapshot's answer: 0 bytes held is said */
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK_INT(b->append_ack.received, 0);
    sc_msg_destroy(&b);
    sc_msg_destroy(&m);

    /* a chunk of a snapshot: UTF-8 text, offset and total */
    SC_REQUIRE((m = s_new(SC_MSG_SNAPSHOT, 12, 7)));
    SC_CHECK_STR(m->snapshot.leader, "vm-1");
    m->snapshot.last_index = 700;
    m->snapshot.last_term = 11;
    m->snapshot.total = 100;
    m->snapshot.offset = 80;
    m->snapshot.round = 5;
    SC_REQUIRE((m->snapshot.data = strdup("{\"a\":\"\xc3\xa9\\\"\"}")));
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK_INT(b->type, SC_MSG_SNAPSHOT);
    SC_CHECK_INT(b->snapshot.last_index, 700);
    SC_CHECK_INT(b->snapshot.last_term, 11);
    SC_CHECK_INT(b->snapshot.total, 100);
    SC_CHECK_INT(b->snapshot.offset, 80);
    SC_CHECK_INT(b->snapshot.round, 5);
    SC_CHECK_STR(b->snapshot.data, m->snapshot.data);
    sc_msg_destroy(&b);
    m->snapshot.offset = 95; /* 12 bytes from 95: past total */
    SC_CHECK_INT(sc_msg_validate(m, NULL, 0), -EINVAL);
    sc_msg_destroy(&m);

    SC_REQUIRE((m = s_new(SC_MSG_VOTE, 12, 3)));
    m->vote.granted = true;
    m->vote.pre_vote = true;
    SC_CHECK_INT(sc_msg_set_text(&m->vote.reason, "log up to date \xe2\x9c\x93", 18, false), 0);
    SC_REQUIRE((b = s_round_trip(m)));
    SC_CHECK(b->vote.granted && b->vote.pre_vote);
    SC_CHECK_STR(b->vote.reason, "log up to date \xe2\x9c\x93");
    sc_msg_destroy(&b);
    sc_msg_destroy(&m);

    SC_REQUIRE((m = s_new(SC_MSG_APPEND, 12, 4)));
    m->append.prev_index = 10;
    m->append.prev_term = 11;
    m->append.commit_index = 10;
    m->append.round = 77;
    SC_CHECK_INT(sc_msg_add_entry(m, 11, 11, "drain", "{ \"event\": \"" EV1 "\", \"fd\": 1 }"), 0);
    SC_CHECK_INT(sc_msg_add_entry(m, 12, 12, "approve", NULL), 0);
    SC_CHECK_INT(sc_msg_add_entry(m, 12, 13, "Bad kind", NULL), -EINVAL);
    SC_CHECK_INT(sc_msg_add_entry(m, 12, 13, "x", "[1]"), -EINVAL);
    SC_CHECK_INT(sc_msg_add_entry(m, 12, 13, "x", "{\"a\":1} trailing"), -EINVAL);
    SC_REQUIRE((b = s_round_trip(m)));
    SC_REQUIRE(b->append.n_entries == 2);
    SC_CHECK_INT(b->append.round, 77);
    SC_CHECK_STR(b->append.entries[0].data, "{\"event\":\"" EV1 "\",\"fd\":1}");
    SC_CHECK_STR(b->append.entries[1].data, "{}");
    SC_CHECK_STR(b->append.entries[1].kind, "approve");
    sc_msg_destroy(&b);
    sc_msg_destroy(&m);
}

/* Every coordinator-to-coordinator message carries the sender's members digest when set, and
 * leaves it out when not (absent: ""); the digest is part of the message (equality), and the
 * encoder refuses one a receiver would. */
SC_TEST(members_digest_of_peer_messages)
{
    static const sc_msg_type_t peer[] = {SC_MSG_VOTE_REQUEST, SC_MSG_VOTE,     SC_MSG_APPEND,
                                         SC_MSG_APPEND_ACK,   SC_MSG_SNAPSHOT, SC_MSG_TIMEOUT_NOW};
    char err[256], *buf = NULL;
    size_t len = 0;

    for (size_t i = 0; i < sizeof(peer) / sizeof(peer[0]); i++) {
        sc_msg_t *m = s_new(peer[i], 4, i + 1), *b;

        SC_REQUIRE(m);
        SC_CHECK_STR(m->members_digest, "");
        if (peer[i] == SC_MSG_SNAPSHOT) {
            m->snapshot.last_index = m->snapshot.last_term = m->snapshot.total = 1;
            m->snapshot.data = strdup("");
        }
        if (peer[i] == SC_MSG_VOTE)
            m->vote.reason = strdup("");
        SC_REQUIRE(sc_msg_encode(m, &buf, &len) == 0);
        SC_CHECK(strstr(buf, "members_digest") == NULL); /* absent: left out */
        free(buf);
        snprintf(m->members_digest, sizeof(m->members_digest), "%s", "00ff12ab34cd56ef");
        SC_REQUIRE(sc_msg_encode(m, &buf, &len) == 0);
        SC_CHECK(strstr(buf, "\"members_digest\":\"00ff12ab34cd56ef\"") != NULL);
        free(buf);
        SC_REQUIRE((b = s_round_trip(m)));
        SC_CHECK_STR(b->members_digest, "00ff12ab34cd56ef");
        b->members_digest[0] = '1';
        SC_CHECK(!sc_msg_equal(m, b));
        sc_msg_destroy(&b);
        snprintf(m->members_digest, sizeof(m->members_digest), "%s", "not hex");
        SC_CHECK_INT(sc_msg_encode(m, &buf, &len), -EINVAL);
        SC_CHECK_INT(sc_msg_validate(m, err, sizeof(err)), -EINVAL);
        SC_CHECK(strstr(err, ".members_digest: \"not hex\" has characters outside") != NULL);
        sc_msg_destroy(&m);
    }
    /* agents' messages have no such field: theirs stays out of their JSON */
    {
        sc_msg_t *m = s_new(SC_MSG_HEARTBEAT, 4, 9);
        SC_REQUIRE(m);
        snprintf(m->members_digest, sizeof(m->members_digest), "%s", "00ff");
        SC_REQUIRE(sc_msg_encode(m, &buf, &len) == 0);
        SC_CHECK(strstr(buf, "members_digest") == NULL);
        free(buf);
        sc_msg_destroy(&m);
    }
}

/* One decoding that must fail with rc and a reason containing why. */
typedef struct {
    const char *json;    /* the message */
    int rc;              /* expected code */
    sc_msg_reject_t rej; /* expected class */
    const char *why;     /* substring of the reason */
} s_bad_t;

#define ENV(type, rest)                                                                            \
    "{\"v\":1,\"type\":\"" type "\",\"from\":\"vm-1\",\"term\":3,\"seq\":1" rest "}"
#define HB(rest) ENV("heartbeat", rest)
#define HB_OK ",\"incarnation\":1,\"running_hooks\":0,\"standalone\":false"
#define HP(rest) ENV("hook_progress", ",\"event\":\"" EV1 "\"" rest)
#define HP_TAIL ",\"exit_status\":0,\"origin\":\"order\",\"order_term\":3,\"detail\":\"\""

#define S_16_HEX "0123456789abcdef"
#define S_129_HEX S_16_HEX S_16_HEX S_16_HEX S_16_HEX S_16_HEX S_16_HEX S_16_HEX S_16_HEX "0"

static const s_bad_t s_bad[] = {
    {"", SC_E_PROTO, SC_MSG_REJ_NOT_JSON, "empty message"},
    {"{\"v\":1,", SC_E_PROTO, SC_MSG_REJ_NOT_JSON, "cut short"},
    {"{\"v\":1,,}", SC_E_PROTO, SC_MSG_REJ_NOT_JSON, "not JSON"},
    {"[1,2]", SC_E_PROTO, SC_MSG_REJ_NOT_JSON, "not a JSON object but an array"},
    {HB(HB_OK) " x", SC_E_PROTO, SC_MSG_REJ_NOT_JSON,
     "not JSON: unexpected character at offset 111"},
    {"{\"v\":1,\"type\":\"doc_request\",\"from\":\"a\xff\",\"term\":1,\"seq\":1}", SC_E_PROTO,
     SC_MSG_REJ_NOT_JSON, "not JSON"},
    {"{\"type\":\"doc_request\",\"from\":\"a\",\"term\":1,\"seq\":1}", SC_E_PROTO,
     SC_MSG_REJ_VERSION, "v: missing"},
    {"{\"v\":2,\"type\":\"doc_request\",\"from\":\"a\",\"term\":1,\"seq\":1}", SC_E_PROTO,
     SC_MSG_REJ_VERSION, "unsupported protocol version 2"},
    {"{\"v\":\"1\",\"type\":\"doc_request\",\"from\":\"a\",\"term\":1,\"seq\":1}", SC_E_PROTO,
     SC_MSG_REJ_VERSION, "v: must be an integer, not a string"},
    {"{\"v\":1,\"type\":\"gossip\",\"from\":\"a\",\"term\":1,\"seq\":1}", SC_E_PROTO,
     SC_MSG_REJ_TYPE, "unknown message type \"gossip\""},
    {"{\"v\":1,\"from\":\"a\",\"term\":1,\"seq\":1}", SC_E_PROTO, SC_MSG_REJ_TYPE, "type: missing"},
    {"{\"v\":1,\"type\":\"doc_request\",\"term\":1,\"seq\":1}", SC_E_PROTO, SC_MSG_REJ_ENVELOPE,
     "from: missing"},
    {"{\"v\":1,\"type\":\"doc_request\",\"from\":\"a b\",\"term\":1,\"seq\":1}", SC_E_PROTO,
     SC_MSG_REJ_ENVELOPE, "from: \"a b\" has characters outside"},
    {"{\"v\":1,\"type\":\"doc_request\",\"from\":\"\",\"term\":1,\"seq\":1}", SC_E_PROTO,
     SC_MSG_REJ_ENVELOPE, "from: empty"},
    {"{\"v\":1,\"type\":\"doc_request\",\"from\":\"a\\u0000b\",\"term\":1,\"seq\":1}", SC_E_PROTO,
     SC_MSG_REJ_ENVELOPE, "from: contains a NUL character"},
    {"{\"v\":1,\"type\":\"doc_request\",\"from\":\"a\",\"term\":-1,\"seq\":1}", SC_E_PROTO,
     SC_MSG_REJ_ENVELOPE, "term: -1 out of range"},
    {"{\"v\":1,\"type\":\"doc_request\",\"from\":\"a\",\"term\":9223372036854775808,\"seq\":1}",
     SC_E_PROTO, SC_MSG_REJ_ENVELOPE, "term: 9223372036854775808 out of range"},
    {"{\"v\":1,\"type\":\"doc_request\",\"from\":\"a\",\"term\":1.5,\"seq\":1}", SC_E_PROTO,
     SC_MSG_REJ_ENVELOPE, "term: must be an integer, not a non-integer number"},
    {"{\"v\":1,\"type\":\"doc_request\",\"from\":\"a\",\"term\":1}", SC_E_PROTO,
     SC_MSG_REJ_ENVELOPE, "seq: missing"},
    {ENV("doc_request", ",\"extra\":1"), SC_E_PROTO, SC_MSG_REJ_UNKNOWN,
     "doc_request.extra: unknown field"},
    {HB(HB_OK ",\"cpu\":3"), SC_E_PROTO, SC_MSG_REJ_UNKNOWN, "heartbeat.cpu: unknown field"},
    {HB(",\"incarnation\":1,\"running_hooks\":0"), SC_E_PROTO, SC_MSG_REJ_MISSING,
     "heartbeat.standalone: missing"},
    {HB(",\"incarnation\":1,\"running_hooks\":0,\"standalone\":\"no\""), SC_E_PROTO,
     SC_MSG_REJ_FIELD, "heartbeat.standalone: must be a boolean, not a string"},
    {HB(",\"incarnation\":-2,\"running_hooks\":0,\"standalone\":true"), SC_E_PROTO,
     SC_MSG_REJ_FIELD, "heartbeat.incarnation: -2 out of range -1.."},
    {HB(",\"incarnation\":1,\"running_hooks\":5000,\"standalone\":true"), SC_E_PROTO,
     SC_MSG_REJ_FIELD, "heartbeat.running_hooks: 5000 out of range 0..1024"},
    {HB(",\"incarnation\":null,\"running_hooks\":0,\"standalone\":true"), SC_E_PROTO,
     SC_MSG_REJ_FIELD, "heartbeat.incarnation: must be an integer, not null"},
    {HB(HB_OK ",\"imds_down_ms\":-2"), SC_E_PROTO, SC_MSG_REJ_FIELD,
     "heartbeat.imds_down_ms: -2 out of range -1.."},
    {HB(HB_OK ",\"imds_down_ms\":1.5"), SC_E_PROTO, SC_MSG_REJ_FIELD,
     "heartbeat.imds_down_ms: must be an integer, not a non-integer number"},
    {HB(HB_OK ",\"imds_down_ms\":\"5\""), SC_E_PROTO, SC_MSG_REJ_FIELD,
     "heartbeat.imds_down_ms: must be an integer, not a string"},
    {HP(",\"phase\":\"drain\",\"state\":\"done\"" HP_TAIL), SC_E_PROTO, SC_MSG_REJ_FIELD,
     "hook_progress.phase: unknown value \"drain\""},
    {HP(",\"phase\":\"prepare\",\"state\":\"finished\"" HP_TAIL), SC_E_PROTO, SC_MSG_REJ_FIELD,
     "hook_progress.state: unknown value \"finished\""},
    {ENV("hook_progress", ",\"event\":\"-bad\",\"phase\":\"prepare\",\"state\":\"done\"" HP_TAIL),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "hook_progress.event: \"-bad\" is not an EventId"},
    {HP(",\"phase\":\"prepare\",\"state\":\"done\",\"exit_status\":300,\"origin\":\"order\","
        "\"order_term\":3,\"detail\":\"\""),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "hook_progress.exit_status: 300 out of range -1..255"},
    {HP(",\"phase\":\"prepare\",\"state\":\"done\",\"exit_status\":0,\"origin\":\"order\","
        "\"order_term\":0,\"detail\":\"\""),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "order_term: 0 but origin is \"order\""},
    {ENV("hello", ",\"name\":\"vm-2\",\"fault_domain\":0,\"update_domain\":0,\"agent_version\":"
                  "\"1\",\"proto_min\":1,\"proto_max\":1,\"capabilities\":[],\"boot_id\":\"b\","
                  "\"incarnation\":-1"),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "hello.name: \"vm-2\" differs from from \"vm-1\""},
    {ENV("hello", ",\"name\":\"vm-1\",\"fault_domain\":0,\"update_domain\":0,\"agent_version\":"
                  "\"1\",\"proto_min\":2,\"proto_max\":1,\"capabilities\":[],\"boot_id\":\"b\","
                  "\"incarnation\":-1"),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "hello.proto_min: 2 above proto_max 1"},
    {ENV("hello", ",\"name\":\"vm-1\",\"fault_domain\":0,\"update_domain\":0,\"agent_version\":"
                  "\"1\",\"proto_min\":1,\"proto_max\":1,\"capabilities\":[\"a\",\"b\",\"c\","
                  "\"d\",\"e\",\"f\",\"g\",\"h\",\"i\",\"j\",\"k\",\"l\",\"m\",\"n\",\"o\",\"p\","
                  "\"q\"],\"boot_id\":\"b\",\"incarnation\":-1"),
     SC_E_TOO_BIG, SC_MSG_REJ_TOO_BIG, "hello.capabilities: 17 items, more than 16"},
    {ENV("hello", ",\"name\":\"vm-1\",\"fault_domain\":0,\"update_domain\":0,\"agent_version\":"
                  "\"1\",\"proto_min\":1,\"proto_max\":1,\"capabilities\":[\"hooks\",\"hooks\"],"
                  "\"boot_id\":\"b\",\"incarnation\":-1"),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "hello.capabilities[1]: \"hooks\" repeated"},
    {ENV("hello", ",\"name\":\"vm-1\",\"fault_domain\":0,\"update_domain\":0,\"agent_version\":"
                  "\"1\",\"proto_min\":1,\"proto_max\":1,\"capabilities\":[7],"
                  "\"boot_id\":\"b\",\"incarnation\":-1"),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "hello.capabilities[0]: must be a string, not an integer"},
    {ENV("document", ",\"incarnation\":1,\"observed_at_ms\":5,\"document\":{\"Events\":[]}"),
     SC_E_PROTO, SC_MSG_REJ_DOCUMENT, "document.document: "},
    {ENV("document", ",\"incarnation\":2,\"observed_at_ms\":5,\"document\":"
                     "{\"DocumentIncarnation\":1,\"Events\":[]}"),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "document.incarnation: 2 differs from DocumentIncarnation 1"},
    {ENV("order", ",\"action\":\"prepare\",\"event\":\"" EV1 "\",\"event_doc\":{\"EventId\":1}"),
     SC_E_PROTO, SC_MSG_REJ_DOCUMENT, "order.event_doc: "},
    {ENV("order", ",\"action\":\"prepare\",\"event\":\"" EV1 "\",\"attempt\":0"), SC_E_PROTO,
     SC_MSG_REJ_FIELD, "order.attempt: 0 out of range 1..1000"},
    {ENV("order", ",\"action\":\"prepare\",\"event\":\"" EV1 "\",\"attempt\":\"2\""), SC_E_PROTO,
     SC_MSG_REJ_FIELD, "order.attempt: must be an integer, not a string"},
    {ENV("order", ",\"action\":\"prepare\",\"event\":\"" EV1 "\",\"rehearsal\":1"), SC_E_PROTO,
     SC_MSG_REJ_FIELD, "order.rehearsal: must be a boolean"},
    {HP(",\"phase\":\"prepare\",\"state\":\"done\"" HP_TAIL ",\"attempt\":1001"), SC_E_PROTO,
     SC_MSG_REJ_FIELD, "hook_progress.attempt: 1001 out of range 1..1000"},
    {ENV("document", ",\"incarnation\":1,\"observed_at_ms\":5,\"document\":"
                     "{\"DocumentIncarnation\":1,\"Events\":[]},\"malformed\":[]"),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "document.malformed: empty"},
    {ENV("document", ",\"incarnation\":1,\"observed_at_ms\":5,\"document\":"
                     "{\"DocumentIncarnation\":1,\"Events\":[]},\"malformed\":\"x\""),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "document.malformed: must be an array, not a string"},
    {ENV("document", ",\"incarnation\":1,\"observed_at_ms\":5,\"document\":"
                     "{\"DocumentIncarnation\":1,\"Events\":[]},\"malformed\":[\"a\",7]"),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "document.malformed[1]: must be a string, not an integer"},
    {ENV("document", ",\"incarnation\":1,\"observed_at_ms\":5,\"document\":"
                     "{\"DocumentIncarnation\":1,\"Events\":[]},\"malformed\":[\"\"]"),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "document.malformed[0]: empty"},
    {ENV("document", ",\"incarnation\":1,\"observed_at_ms\":5,\"document\":"
                     "{\"DocumentIncarnation\":1,\"Events\":[]},\"malformed\":"
                     "[\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\"]"),
     SC_E_TOO_BIG, SC_MSG_REJ_TOO_BIG, "document.malformed: 9 items, more than 8"},
    {"{\"v\":1,\"type\":\"order\",\"from\":\"vm-1\",\"term\":0,\"seq\":1,\"action\":\"prepare\","
     "\"event\":\"" EV1 "\"}",
     SC_E_PROTO, SC_MSG_REJ_FIELD, "order: term 0"},
    {ENV("approve_via", ",\"events\":[]"), SC_E_PROTO, SC_MSG_REJ_FIELD,
     "approve_via.events: empty"},
    {ENV("approve_via", ",\"events\":[\"" EV1 "\",\"c7061bac-afdc-4513-b24b-aa5f13a16123\"]"),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "approve_via.events[1]: \"c7061bac"},
    {ENV("approve_result", ",\"events\":[\"" EV1 "\"],\"http_status\":1000,\"result\":\"OK\","
                           "\"message\":\"\""),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "approve_result.http_status: 1000 out of range 0..999"},
    {ENV("approve_result", ",\"events\":[\"" EV1 "\"],\"http_status\":200,\"result\":\"O K\","
                           "\"message\":\"\""),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "approve_result.result: \"O K\" has characters outside"},
    {ENV("leader", ",\"leader\":\"vm-1\",\"lease_ms\":0"), SC_E_PROTO, SC_MSG_REJ_FIELD,
     "leader.lease_ms: 0 out of range 1..3600000"},
    {ENV("leader", ",\"leader\":\"vm-1\",\"lease_ms\":100,\"members_hash\":\"xyz\""), SC_E_PROTO,
     SC_MSG_REJ_FIELD, "leader.members_hash: \"xyz\" has characters outside [0-9a-fA-F]"},
    {ENV("vote_request", ",\"candidate\":\"vm-9\",\"last_log_index\":1,\"last_log_term\":1"),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "vote_request.candidate: \"vm-9\" differs from from"},
    {ENV("vote_request", ",\"candidate\":\"vm-1\",\"last_log_index\":1,\"last_log_term\":4"),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "vote_request.last_log_term: 4 above the term 3"},
    {ENV("append", ",\"leader\":\"vm-1\",\"prev_index\":1,\"prev_term\":1,\"commit_index\":1,"
                   "\"entries\":[{\"term\":2,\"index\":3,\"kind\":\"x\",\"data\":{}}]"),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "append.entries[0].index: 3, expected 2"},
    {ENV("append", ",\"leader\":\"vm-1\",\"prev_index\":1,\"prev_term\":1,\"commit_index\":1,"
                   "\"entries\":[{\"term\":5,\"index\":2,\"kind\":\"x\",\"data\":{}}]"),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "append.entries[0].term: 5 not in"},
    {ENV("append", ",\"leader\":\"vm-1\",\"prev_index\":1,\"prev_term\":1,\"commit_index\":1,"
                   "\"entries\":[{\"term\":2,\"index\":2,\"kind\":\"x\",\"data\":[]}]"),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "append.entries[0].data: must be an object, not an array"},
    {ENV("append", ",\"leader\":\"vm-1\",\"prev_index\":1,\"prev_term\":1,\"commit_index\":1,"
                   "\"entries\":[{\"term\":2,\"index\":2,\"kind\":\"x\",\"data\":{},\"y\":1}]"),
     SC_E_PROTO, SC_MSG_REJ_UNKNOWN, "append.entries[0].y: unknown field"},
    {ENV("append", ",\"leader\":\"vm-1\",\"prev_index\":1,\"prev_term\":1,\"commit_index\":1,"
                   "\"entries\":[{\"term\":2,\"index\":2,\"data\":{}}]"),
     SC_E_PROTO, SC_MSG_REJ_MISSING, "append.entries[0].kind: missing"},
    {ENV("snapshot", ",\"leader\":\"vm-1\",\"last_index\":9,\"last_term\":2,\"total\":5,"
                     "\"offset\":3,\"data\":\"abc\""),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "snapshot: offset 3 + 3 bytes of data beyond total 5"},
    {ENV("snapshot", ",\"leader\":\"vm-1\",\"last_index\":0,\"last_term\":2,\"total\":5,"
                     "\"offset\":0,\"data\":\"abc\""),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "snapshot.last_index / last_term: 0"},
    {ENV("snapshot", ",\"leader\":\"vm-1\",\"last_index\":9,\"last_term\":4,\"total\":5,"
                     "\"offset\":0,\"data\":\"abc\""),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "snapshot.last_term: 4 above the term 3"},
    {ENV("snapshot", ",\"leader\":\"vm-2\",\"last_index\":9,\"last_term\":2,\"total\":5,"
                     "\"offset\":0,\"data\":\"abc\""),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "snapshot.leader: \"vm-2\" differs from from"},
    {ENV("append_ack", ",\"success\":true,\"match_index\":1,\"received\":-2"), SC_E_PROTO,
     SC_MSG_REJ_FIELD, "append_ack.received: -2 out of range"},
    {ENV("nack", ",\"ref_seq\":1"), SC_E_PROTO, SC_MSG_REJ_MISSING, "nack.reason: missing"},
    /* the members digest: coordinator-to-coordinator messages only, hex, 1..128 bytes */
    {HB(HB_OK ",\"members_digest\":\"00ff\""), SC_E_PROTO, SC_MSG_REJ_UNKNOWN,
     "heartbeat.members_digest: unknown field"},
    {ENV("leader", ",\"leader\":\"vm-1\",\"lease_ms\":100,\"members_digest\":\"00ff\""), SC_E_PROTO,
     SC_MSG_REJ_UNKNOWN, "leader.members_digest: unknown field"},
    {ENV("timeout_now", ",\"members_digest\":\"\""), SC_E_PROTO, SC_MSG_REJ_FIELD,
     "timeout_now.members_digest: empty"},
    {ENV("append_ack", ",\"success\":true,\"match_index\":1,\"members_digest\":\"0x12\""),
     SC_E_PROTO, SC_MSG_REJ_FIELD,
     "append_ack.members_digest: \"0x12\" has characters outside [0-9a-fA-F]"},
    {ENV("vote", ",\"granted\":false,\"reason\":\"\",\"members_digest\":16"), SC_E_PROTO,
     SC_MSG_REJ_FIELD, "vote.members_digest: must be a string, not an integer"},
    {ENV("vote", ",\"granted\":false,\"reason\":\"\",\"members_digest\":\"" S_129_HEX "\""),
     SC_E_PROTO, SC_MSG_REJ_FIELD, "vote.members_digest: 129 bytes, longer than 128"},
    {ENV("append_ack", ",\"success\":1,\"match_index\":1"), SC_E_PROTO, SC_MSG_REJ_FIELD,
     "append_ack.success: must be a boolean, not an integer"},
    {ENV("vote", ",\"granted\":true,\"reason\":[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]"),
     SC_E_TOO_BIG, SC_MSG_REJ_TOO_BIG, "nested deeper than 16"},
};

SC_TEST(rejections)
{
    size_t n = sizeof(s_bad) / sizeof(s_bad[0]);
    int distinct_reasons = 0;

    for (size_t i = 0; i < n; i++) {
        char err[512] = "";
        sc_msg_t *m = (sc_msg_t *)(uintptr_t)1; /* must stay untouched */
        sc_msg_reject_t rej = SC_MSG_REJ_NONE;
        int rc = sc_msg_decode_ex(s_bad[i].json, strlen(s_bad[i].json), &m, &rej, err, sizeof(err));

        if (rc != s_bad[i].rc || rej != s_bad[i].rej || !strstr(err, s_bad[i].why) ||
            m != (sc_msg_t *)(uintptr_t)1)
            SC_FAILF("#%zu %s\n    got rc=%s reject=%s err=\"%s\", expected %s %s \"%s\"", i,
                     s_bad[i].json, sc_errname(rc), sc_msg_reject_name(rej), err,
                     sc_errname(s_bad[i].rc), sc_msg_reject_name(s_bad[i].rej), s_bad[i].why);
        else
            distinct_reasons++;
    }
    printf("  %d rejections checked\n", distinct_reasons);
    SC_CHECK(n >= 25);
}

SC_TEST(raw_bytes_rejected)
{
    char err[256];
    sc_msg_t *m = NULL;
    static const char nul[] = "{\"v\":1,\"type\":\"doc_request\",\0\"from\":\"a\"}";
    sc_msg_reject_t rej;

    SC_CHECK_INT(sc_msg_decode_ex(nul, sizeof(nul) - 1, &m, &rej, err, sizeof(err)), SC_E_PROTO);
    SC_CHECK(strstr(err, "NUL byte at offset 28") != NULL);
    SC_CHECK_INT(rej, SC_MSG_REJ_NOT_JSON);
    SC_CHECK_INT(sc_msg_decode(NULL, 3, &m, err, sizeof(err)), -EINVAL);
    /* whitespace around the object is fine */
    {
        static const char ws[] =
            " \n{\"v\":1,\"type\":\"doc_request\",\"from\":\"a\",\"term\":1,\"seq\":2}\r\n ";

        SC_CHECK_INT(sc_msg_decode(ws, sizeof(ws) - 1, &m, err, sizeof(err)), 0);
        SC_CHECK(m && m->seq == 2);
        sc_msg_destroy(&m);
    }
    SC_CHECK(m == NULL);
}

SC_TEST(limits)
{
    char err[256] = "", *buf, *p;
    sc_msg_t *m = NULL, *a = s_new(SC_MSG_APPEND, 5, 1), *b = NULL;
    size_t len, big = SC_MSG_MAX_BYTES + 1;
    char *json = malloc(big + 1);

    SC_REQUIRE(json && a);
    /* over the size limit, whatever the content */
    memset(json, ' ', big);
    json[big] = '\0';
    SC_CHECK_INT(sc_msg_decode(json, big, &m, err, sizeof(err)), SC_E_TOO_BIG);
    SC_CHECK(strstr(err, "1048577 bytes, more than 1048576") != NULL);

    /* 1024 entries fit, the 1025th is refused by the builder and by the decoder */
    for (uint64_t i = 1; i <= SC_MSG_MAX_ENTRIES; i++)
        SC_CHECK_INT(sc_msg_add_entry(a, 5, i, "noop", "{}"), 0);
    SC_CHECK_INT(sc_msg_add_entry(a, 5, 1025, "noop", "{}"), SC_E_TOO_BIG);
    SC_REQUIRE(sc_msg_encode(a, &buf, &len) == 0);
    b = s_round_trip(a);
    SC_CHECK(b && b->append.n_entries == SC_MSG_MAX_ENTRIES);
    sc_msg_destroy(&b);
    /* splice one more entry into the JSON */
    p = strstr(buf, "]}");
    SC_REQUIRE(p && strlen(buf) + 100 < big);
    snprintf(json, big, "%.*s,{\"term\":5,\"index\":1025,\"kind\":\"noop\",\"data\":{}}]}",
             (int)(p - buf), buf);
    SC_CHECK_INT(sc_msg_decode(json, strlen(json), &m, err, sizeof(err)), SC_E_TOO_BIG);
    SC_CHECK(strstr(err, "append.entries: 1025 items, more than 1024") != NULL);
    free(buf);

    /* an entry whose data pushes the message over 1 MiB cannot be encoded */
    sc_msg_destroy(&a);
    SC_REQUIRE((a = s_new(SC_MSG_APPEND, 5, 1)));
    memset(json, 'a', big);
    memcpy(json, "{\"s\":\"", 6);
    memcpy(json + big - 2, "\"}", 3);
    SC_CHECK_INT(sc_msg_add_entry(a, 5, 1, "big", json), 0);
    SC_CHECK_INT(sc_msg_encode(a, &buf, &len), SC_E_TOO_BIG);

    /* long strings: a text of 4097 bytes, a name of 129 */
    /* build the long reason by hand */
    {
        char reason[SC_MSG_MAX_TEXT + 2], name[SC_NAME_MAX + 2];

        memset(reason, 'r', sizeof(reason) - 1);
        reason[sizeof(reason) - 1] = '\0';
        snprintf(json, big, ENV("nack", ",\"ref_seq\":1,\"reason\":\"%s\""), reason);
        SC_CHECK_INT(sc_msg_decode(json, strlen(json), &m, err, sizeof(err)), SC_E_PROTO);
        SC_CHECK(strstr(err, "nack.reason: 4097 bytes, longer than 4096") != NULL);
        reason[sizeof(reason) - 2] = '\0'; /* 4096: accepted */
        snprintf(json, big, ENV("nack", ",\"ref_seq\":1,\"reason\":\"%s\""), reason);
        SC_CHECK_INT(sc_msg_decode(json, strlen(json), &m, err, sizeof(err)), 0);
        SC_CHECK(m && strlen(m->nack.reason) == SC_MSG_MAX_TEXT);
        sc_msg_destroy(&m);
        memset(name, 'n', sizeof(name) - 1);
        name[sizeof(name) - 1] = '\0';
        snprintf(json, big,
                 "{\"v\":1,\"type\":\"doc_request\",\"from\":\"%s\",\"term\":1,"
                 "\"seq\":1}",
                 name);
        SC_CHECK_INT(sc_msg_decode(json, strlen(json), &m, err, sizeof(err)), SC_E_PROTO);
        SC_CHECK(strstr(err, "from: 129 bytes, longer than 128") != NULL);
        SC_CHECK(!sc_msg_name_valid(name));
        name[sizeof(name) - 2] = '\0';
        SC_CHECK(sc_msg_name_valid(name));
    }
    /* a malformed reason of 257 bytes */
    {
        char reason[SC_MSG_MALFORMED_MAX + 2];

        memset(reason, 'r', sizeof(reason) - 1);
        reason[sizeof(reason) - 1] = '\0';
        snprintf(json, big,
                 ENV("document",
                     ",\"incarnation\":1,\"observed_at_ms\":5,\"document\":"
                     "{\"DocumentIncarnation\":1,\"Events\":[]},\"malformed\":[\"%s\"]"),
                 reason);
        SC_CHECK_INT(sc_msg_decode(json, strlen(json), &m, err, sizeof(err)), SC_E_PROTO);
        SC_CHECK(strstr(err, "document.malformed[0]: 257 bytes, longer than 256") != NULL);
    }

    /* approve_via: 256 ids fit, 257 do not */
    sc_msg_destroy(&a);
    SC_REQUIRE((a = s_new(SC_MSG_APPROVE_VIA, 5, 1)));
    for (int i = 0; i < SC_MSG_MAX_EVENTS; i++) {
        char id[32];

        snprintf(id, sizeof(id), "ev-%d", i);
        SC_CHECK_INT(sc_msg_add_event(a, id), 0);
    }
    SC_CHECK_INT(sc_msg_add_event(a, "ev-x"), SC_E_TOO_BIG);
    b = s_round_trip(a);
    SC_CHECK(b && b->approve_via.n_events == SC_MSG_MAX_EVENTS);
    sc_msg_destroy(&b);
    sc_msg_destroy(&a);
    free(json);
}

SC_TEST(encode_refuses_invalid)
{
    char err[256], *buf = NULL;
    size_t len;
    sc_msg_t *m = s_new(SC_MSG_HOOK_PROGRESS, 3, 1);

    SC_REQUIRE(m);
    /* no event id */
    SC_CHECK_INT(sc_msg_encode(m, &buf, &len), -EINVAL);
    SC_CHECK_INT(sc_msg_validate(m, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "hook_progress.event") != NULL);
    snprintf(m->hook_progress.event, sizeof(m->hook_progress.event), "%s", EV1);
    m->hook_progress.order_term = 3;
    m->hook_progress.state = (sc_msg_hook_state_t)99;
    SC_CHECK_INT(sc_msg_validate(m, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "hook_progress.state: unknown value \"?\"") != NULL);
    m->hook_progress.state = SC_MSG_HOOK_DONE;
    SC_CHECK_INT(sc_msg_validate(m, err, sizeof(err)), 0);
    sc_msg_destroy(&m);

    /* a document message without a document */
    SC_REQUIRE((m = s_new(SC_MSG_DOCUMENT, 3, 1)));
    SC_CHECK_INT(sc_msg_validate(m, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "document.document: missing") != NULL);
    sc_msg_destroy(&m);

    SC_CHECK_INT(sc_msg_new(SC_MSG_HELLO, "bad name", 0, 0, &m), -EINVAL);
    SC_CHECK_INT(sc_msg_new(SC_MSG_TYPE_MAX, "a", 0, 0, &m), -EINVAL);
    SC_CHECK_INT(sc_msg_new(SC_MSG_HELLO, "a", (uint64_t)INT64_MAX + 1, 0, &m), -EINVAL);
    SC_CHECK(m == NULL);
    sc_msg_destroy(NULL);
    sc_msg_destroy(&m);
}

/* The encoder no longer decodes its output: its own checks (the decoder's rules, from the
 * same field tables) refuse what a receiver would, with the reason naming the field. */
SC_TEST(encode_checks_fields)
{
    char err[256], *buf = NULL;
    size_t len;
    sc_msg_t *m = s_new(SC_MSG_HELLO, 3, 1);

    SC_REQUIRE(m);
    snprintf(m->hello.agent_version, sizeof(m->hello.agent_version), "1");
    snprintf(m->hello.boot_id, sizeof(m->hello.boot_id), "b");
    SC_CHECK_INT(sc_msg_validate(m, err, sizeof(err)), 0);
    m->hello.n_capabilities = SC_MSG_MAX_CAPS + 1;
    SC_CHECK_INT(sc_msg_encode(m, &buf, &len), -EINVAL);
    SC_CHECK_INT(sc_msg_validate(m, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "hello.capabilities: 17 items, more than 16") != NULL);
    m->hello.n_capabilities = 2;
    snprintf(m->hello.capabilities[0], sizeof(m->hello.capabilities[0]), "hooks");
    snprintf(m->hello.capabilities[1], sizeof(m->hello.capabilities[1]), "hooks");
    SC_CHECK_INT(sc_msg_validate(m, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "hello.capabilities[1]: \"hooks\" repeated") != NULL);
    m->hello.n_capabilities = 0;
    m->hello.proto_min = 2;
    SC_CHECK_INT(sc_msg_validate(m, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "hello.proto_min: 2 above proto_max 1") != NULL);
    m->hello.proto_min = 1;
    m->term = (uint64_t)INT64_MAX + 1;
    SC_CHECK_INT(sc_msg_validate(m, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "term: 9223372036854775808 out of range") != NULL);
    sc_msg_destroy(&m);

    SC_REQUIRE((m = s_new(SC_MSG_NACK, 3, 1)));
    m->nack.reason = strdup("bad \xff byte"); /* set by hand, not by sc_msg_set_text */
    SC_CHECK_INT(sc_msg_encode(m, &buf, &len), -EINVAL);
    SC_CHECK_INT(sc_msg_validate(m, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "nack.reason: invalid UTF-8") != NULL);
    sc_msg_destroy(&m);

    SC_REQUIRE((m = s_new(SC_MSG_APPEND, 3, 1)));
    SC_CHECK_INT(sc_msg_add_entry(m, 3, 1, "drain", NULL), 0);
    free(m->append.entries[0].data);
    m->append.entries[0].data = strdup("[1]");
    SC_CHECK_INT(sc_msg_validate(m, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "append.entries[0].data: not the text of a JSON object") != NULL);
    free(m->append.entries[0].data);
    m->append.entries[0].data = strdup("{}");
    m->append.entries[0].term = 4;
    SC_CHECK_INT(sc_msg_validate(m, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "append.entries[0].term: 4 not in 1..3") != NULL);
    sc_msg_destroy(&m);
    SC_CHECK(buf == NULL);
}

SC_TEST(names)
{
    sc_msg_type_t t;
    sc_msg_hook_state_t s;

    for (int i = 0; i < SC_MSG_TYPE_MAX; i++) {
        SC_CHECK_INT(sc_msg_type_parse(sc_msg_type_name((sc_msg_type_t)i), &t), 0);
        SC_CHECK_INT(t, i);
    }
    SC_CHECK_INT(sc_msg_type_parse("HELLO", &t), -EINVAL);
    SC_CHECK_STR(sc_msg_type_name(SC_MSG_TYPE_MAX), "?");
    SC_CHECK_INT(sc_msg_hook_state_parse("interrupted", &s), 0);
    SC_CHECK_INT(s, SC_MSG_HOOK_INTERRUPTED);
    SC_CHECK_STR(sc_msg_reject_name(SC_MSG_REJ_UNKNOWN), "unknown");
    SC_CHECK_STR(sc_msg_origin_name(SC_MSG_ORIGIN_STANDALONE), "standalone");
}

int main(void)
{
    SC_RUN(round_trip_hello);
    SC_RUN(round_trip_heartbeat_doc_request_ack_nack);
    SC_RUN(round_trip_document);
    SC_RUN(round_trip_hook_progress);
    SC_RUN(round_trip_order);
    SC_RUN(round_trip_approve);
    SC_RUN(round_trip_election);
    SC_RUN(members_digest_of_peer_messages);
    SC_RUN(rejections);
    SC_RUN(raw_bytes_rejected);
    SC_RUN(limits);
    SC_RUN(encode_refuses_invalid);
    SC_RUN(encode_checks_fields);
    SC_RUN(names);
    return sc_test_done();
}
