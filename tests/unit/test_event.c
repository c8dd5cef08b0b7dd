/* Unit tests of sc_event: the IMDS document parser, serializer, diff and approval body. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "sc_error.h"
#include "sc_event.h"
#include "sc_test.h"

#define FREEZE_ID "C7061BAC-AFDC-4513-B24B-AA5F13A16123"
#define APPROVE_ID "f020ba2e-3bc0-4c40-a10b-86575a9eabd5"

static sc_doc_t *s_parse_fixture(const char *name)
{
    size_t len = 0;
    char *buf = sc_test_fixture(name, &len), err[256] = "";
    sc_doc_t *doc = NULL;
    int rc;

    if (!buf) {
        SC_FAILF("cannot read fixture %s", name);
        return NULL;
    }
    rc = sc_doc_parse(buf, len, &doc, err, sizeof(err));
    if (rc != 0)
        SC_FAILF("%s: rc %d (%s): %s", name, rc, sc_strerror(rc), err);
    free(buf);
    return doc;
}

static sc_doc_t *s_parse_str(const char *s)
{
    char err[256] = "";
    sc_doc_t *doc = NULL;
    int rc = sc_doc_parse(s, strlen(s), &doc, err, sizeof(err));

    if (rc != 0)
        SC_FAILF("rc %d (%s): %s\n  for %s", rc, sc_strerror(rc), err, s);
    return doc;
}

static bool s_doc_equal(const sc_doc_t *a, const sc_doc_t *b)
{
    if (a->incarnation != b->incarnation || a->n_events != b->n_events)
        return false;
    for (size_t i = 0; i < a->n_events; i++)
        if (!sc_event_equal(&a->events[i], &b->events[i]))
            return false;
    return true;
}

/* ---- fixtures ------------------------------------------------------------------------- */

SC_TEST(westno_incarnations)
{
    const char *names[4] = {"westno-1.json", "westno-2.json", "westno-3.json", "westno-4.json"};
    const size_t n_events[4] = {0, 1, 1, 0};

    for (int i = 0; i < 4; i++) {
        sc_doc_t *doc = s_parse_fixture(names[i]);

        SC_REQUIRE(doc);
        SC_CHECK_INT(doc->incarnation, i + 1);
        SC_CHECK_INT(doc->n_events, n_events[i]);
        sc_doc_destroy(&doc);
        SC_CHECK(doc == NULL);
    }
}

SC_TEST(westno2_freeze_every_field)
{
    sc_doc_t *doc = s_parse_fixture("westno-2.json");
    const sc_event_t *ev;

    SC_REQUIRE(doc && doc->n_events == 1);
    ev = &doc->events[0];
    SC_CHECK_STR(ev->id, FREEZE_ID);
    SC_CHECK_INT(ev->type, SC_EVENT_FREEZE);
    SC_CHECK_STR(ev->type_raw, "Freeze");
    SC_CHECK_INT(ev->status, SC_EVENT_SCHEDULED);
    SC_CHECK_STR(ev->status_raw, "Scheduled");
    SC_CHECK_STR(ev->resource_type, "VirtualMachine");
    SC_REQUIRE(ev->n_resources == 2);
    SC_CHECK_STR(ev->resources[0], "WestNO_0");
    SC_CHECK_STR(ev->resources[1], "WestNO_1");
    SC_CHECK(ev->has_not_before);
    SC_CHECK_INT(ev->not_before, 1649716018);
    SC_CHECK_STR(ev->not_before_raw, "Mon, 11 Apr 2022 22:26:58 GMT");
    SC_CHECK_STR(ev->description, "Virtual machine is being paused because of a "
                                  "memory-preserving Live Migration operation.");
    SC_CHECK_INT(ev->source, SC_EVENT_SOURCE_PLATFORM);
    SC_CHECK_STR(ev->source_raw, "Platform");
    SC_CHECK(ev->has_duration);
    SC_CHECK_INT(ev->duration_s, 5);
    SC_CHECK(!sc_event_is_started(ev));
    SC_CHECK(sc_event_names(ev, "WestNO_0"));
    SC_CHECK(sc_event_names(ev, "WestNO_1"));
    SC_CHECK(!sc_event_names(ev, "westno_1")); /* compared exactly as Azure writes them */
    SC_CHECK(!sc_event_names(ev, "WestNO_2"));
    SC_CHECK(!sc_event_names(ev, "WestNO"));
    SC_CHECK(!sc_event_names(ev, ""));
    SC_CHECK(!sc_event_names(ev, NULL));
    sc_doc_destroy(&doc);
}

SC_TEST(westno3_started_empty_notbefore)
{
    sc_doc_t *doc = s_parse_fixture("westno-3.json");
    const sc_event_t *ev;

    SC_REQUIRE(doc && doc->n_events == 1);
    ev = &doc->events[0];
    SC_CHECK_STR(ev->id, FREEZE_ID);
    SC_CHECK_INT(ev->status, SC_EVENT_STARTED);
    SC_CHECK_STR(ev->status_raw, "Started");
    SC_CHECK(sc_event_is_started(ev));
    SC_CHECK(!ev->has_not_before);
    SC_CHECK_STR(ev->not_before_raw, "");
    SC_CHECK_INT(ev->duration_s, 5);
    sc_doc_destroy(&doc);
}

SC_TEST(v2017_iso_notbefore_and_underscore_names)
{
    sc_doc_t *doc = s_parse_fixture("v2017-03-01-iso-notbefore.json");
    const sc_event_t *ev;

    SC_REQUIRE(doc && doc->n_events == 1);
    SC_CHECK_INT(doc->incarnation, 5);
    ev = &doc->events[0];
    SC_CHECK_STR(ev->id, "602d9444-d2cd-49c7-8624-8643e7171297");
    SC_CHECK_INT(ev->type, SC_EVENT_REBOOT);
    SC_CHECK_INT(ev->status, SC_EVENT_SCHEDULED);
    SC_CHECK(ev->has_not_before);
    SC_CHECK_INT(ev->not_before, 1474309787);
    SC_CHECK_STR(ev->not_before_raw, "2016-09-19T18:29:47Z");
    SC_REQUIRE(ev->n_resources == 2);
    SC_CHECK_STR(ev->resources[0], "_FrontEnd_IN_0");
    SC_CHECK_STR(ev->resources[1], "_BackEnd_IN_0");
    SC_CHECK(ev->description == NULL);
    SC_CHECK_INT(ev->source, SC_EVENT_SOURCE_ABSENT);
    SC_CHECK(ev->source_raw == NULL);
    SC_CHECK(!ev->has_duration);
    SC_CHECK(sc_event_names(ev, "FrontEnd_IN_0"));
    SC_CHECK(sc_event_names(ev, "_FrontEnd_IN_0"));
    SC_CHECK(sc_event_names(ev, "BackEnd_IN_0"));
    SC_CHECK(!sc_event_names(ev, "FrontEnd_IN_1"));
    SC_CHECK(!sc_event_names(ev, "FrontEnd_IN_"));
    SC_CHECK(!sc_event_names(ev, "__FrontEnd_IN_0x"));
    sc_doc_destroy(&doc);
}

SC_TEST(unknown_values_kept_extra_fields_ignored)
{
    sc_doc_t *doc = s_parse_str(
        "{\"DocumentIncarnation\":7,\"Future\":{\"x\":[1]},\"Events\":[{\"EventId\":\"abc-1\","
        "\"EventType\":\"Hibernate\",\"EventStatus\":\"Paused\",\"ResourceType\":"
        "\"VirtualMachine\",\"Resources\":[],\"NotBefore\":\"\",\"EventSource\":\"Robot\","
        "\"DurationInSeconds\":\"-1\",\"Shiny\":true},{\"EventId\":\"abc-2\",\"EventType\":"
        "\"terminate\",\"EventStatus\":\"started\",\"ResourceType\":\"VirtualMachine\","
        "\"Resources\":[\"v\"],\"NotBefore\":\"\",\"EventSource\":\"User\"}]}");
    const sc_event_t *ev;

    SC_REQUIRE(doc && doc->n_events == 2);
    ev = &doc->events[0];
    SC_CHECK_INT(ev->type, SC_EVENT_TYPE_UNKNOWN);
    SC_CHECK_STR(ev->type_raw, "Hibernate");
    SC_CHECK_INT(ev->status, SC_EVENT_STATUS_UNKNOWN);
    SC_CHECK_STR(ev->status_raw, "Paused");
    SC_CHECK_INT(ev->source, SC_EVENT_SOURCE_UNKNOWN);
    SC_CHECK_STR(ev->source_raw, "Robot");
    SC_CHECK_INT(ev->n_resources, 0);
    SC_CHECK(ev->has_duration);
    SC_CHECK_INT(ev->duration_s, -1); /* numeric string accepted */
    ev = &doc->events[1];
    SC_CHECK_INT(ev->type, SC_EVENT_TERMINATE); /* enum values match ignoring case */
    SC_CHECK_STR(ev->type_raw, "terminate");
    SC_CHECK_INT(ev->status, SC_EVENT_STARTED);
    SC_CHECK_INT(ev->source, SC_EVENT_SOURCE_USER);
    SC_CHECK(!ev->has_duration);
    sc_doc_destroy(&doc);
}

SC_TEST(every_type_and_name)
{
    const char *types[] = {"Freeze", "Reboot", "Redeploy", "Preempt", "Terminate"};

    for (int t = SC_EVENT_FREEZE; t < SC_EVENT_TYPE_MAX; t++) {
        char buf[512];
        sc_doc_t *doc;

        snprintf(buf, sizeof(buf),
                 "{\"DocumentIncarnation\":0,\"Events\":[{\"EventId\":\"e\",\"EventType\":\"%s\","
                 "\"EventStatus\":\"Scheduled\",\"ResourceType\":\"VirtualMachine\","
                 "\"Resources\":[\"v\"],\"NotBefore\":\"Tue, 1 Mar 2022 00:00:00 UTC\"}]}",
                 types[t - 1]);
        doc = s_parse_str(buf);
        SC_REQUIRE(doc);
        SC_CHECK_INT(doc->events[0].type, t);
        SC_CHECK_STR(sc_event_type_name((sc_event_type_t)t), types[t - 1]);
        SC_CHECK_INT(doc->events[0].not_before, 1646092800);
        sc_doc_destroy(&doc);
    }
    SC_CHECK_STR(sc_event_type_name(SC_EVENT_TYPE_UNKNOWN), "Unknown");
    SC_CHECK_STR(sc_event_type_name(SC_EVENT_TYPE_MAX), "Unknown");
    SC_CHECK_STR(sc_event_status_name(SC_EVENT_SCHEDULED), "Scheduled");
    SC_CHECK_STR(sc_event_status_name(SC_EVENT_STARTED), "Started");
    SC_CHECK_STR(sc_event_status_name(SC_EVENT_STATUS_MAX), "Unknown");
    SC_CHECK_STR(sc_event_source_name(SC_EVENT_SOURCE_PLATFORM), "Platform");
    SC_CHECK_STR(sc_event_source_name(SC_EVENT_SOURCE_USER), "User");
    SC_CHECK_STR(sc_event_source_name(SC_EVENT_SOURCE_ABSENT), "Absent");
    SC_CHECK_STR(sc_event_source_name(SC_EVENT_SOURCE_MAX), "Unknown");
}

/* ---- NotBefore ------------------------------------------------------------------------ */

SC_TEST(notbefore_formats)
{
    static const struct {
        const char *s;
        int64_t t;
    } good[] = {
        {"Mon, 11 Apr 2022 22:26:58 GMT", 1649716018},
        {"Mon, 11 Apr 2022 22:26:58 UTC", 1649716018},
        {"Mon, 11 Apr 2022 22:26:58 +0000", 1649716018},
        {"Tue, 1 Mar 2022 00:00:00 GMT", 1646092800},
        {"Thu, 29 Feb 2024 12:00:00 GMT", 1709208000},
        {"2016-09-19T18:29:47Z", 1474309787},
        {"2016-09-19t18:29:47z", 1474309787},
        {"2016-09-19T18:29:47.1234567Z", 1474309787},
        {"2016-09-19T18:29:47+00:00", 1474309787},
        {"2016-09-19T20:29:47+02:00", 1474309787},
        {"2016-09-19T16:29:47-0200", 1474309787},
        {"1970-01-01T00:00:00Z", 0},
    };
    static const char *const bad[] = {
        "Mon, 32 Apr 2022 22:26:58 GMT",
        "Mon, 31 Apr 2022 22:26:58 GMT",
        "Mon, 11 Apr 2022 22:26:58",
        "Mon, 11 Apr 2022 22:26:58 GMT ",
        "Xyz, 11 Apr 2022 22:26:58 GMT",
        "Mon, 11 Foo 2022 22:26:58 GMT",
        "Mon, 11 Apr 2022 24:00:00 GMT",
        "Mon 11 Apr 2022 22:26:58 GMT",
        "Mon, 11 Apr 22 22:26:58 GMT",
        "Mon, 11 Apr 2022 22:26:58 CET",
        "2016-09-19T18:29:47",
        "2016-13-01T00:00:00Z",
        "2023-02-29T00:00:00Z",
        "1969-12-31T23:59:59Z",
        "2016-09-19T18:29:47.Z",
        "2016-09-19T18:29:47+24:00",
        "2016-09-19 18:29",
        "now",
        " 2016-09-19T18:29:47Z",
    };
    bool has = true;
    int64_t t = 42;

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        has = false;
        t = -1;
        SC_CHECK_INT(sc_notbefore_parse(good[i].s, &has, &t), 0);
        if (!has || t != good[i].t)
            SC_FAILF("%s -> has %d t %lld, expected %lld", good[i].s, has, (long long)t,
                     (long long)good[i].t);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        has = false;
        t = 42;
        if (sc_notbefore_parse(bad[i], &has, &t) != SC_E_PARSE)
            SC_FAILF("accepted \"%s\"", bad[i]);
        SC_CHECK(!has && t == 42); /* outputs untouched on failure */
    }
    has = true;
    SC_CHECK_INT(sc_notbefore_parse("", &has, &t), 0);
    SC_CHECK(!has);
    SC_CHECK_INT(sc_notbefore_parse(NULL, &has, &t), -EINVAL);
}

/* Our calendar arithmetic against the C library's timegm, over 2000 instants 1970..2200. */
SC_TEST(notbefore_matches_timegm)
{
    uint64_t x = 88172645463325252ULL;

    for (int i = 0; i < 2000; i++) {
        struct tm tm;
        time_t t0, t1;
        char rfc[64], iso[64];
        bool has;
        int64_t got;

        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift: reproducible */
        t0 = (time_t)(x % 7258118400ULL);        /* < 2200-01-01 */
        gmtime_r(&t0, &tm);
        t1 = timegm(&tm);
        strftime(rfc, sizeof(rfc), "%a, %d %b %Y %H:%M:%S GMT", &tm);
        strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%SZ", &tm);
        if (sc_notbefore_parse(rfc, &has, &got) != 0 || got != (int64_t)t1)
            SC_FAILF("%s: %lld != timegm %lld", rfc, (long long)got, (long long)t1);
        if (sc_notbefore_parse(iso, &has, &got) != 0 || got != (int64_t)t1)
            SC_FAILF("%s: %lld != timegm %lld", iso, (long long)got, (long long)t1);
    }
}

/* ---- malformed documents -------------------------------------------------------------- */

#define E_ID "\"EventId\":\"C7061BAC-AFDC-4513-B24B-AA5F13A16123\""
#define E_TY "\"EventType\":\"Freeze\""
#define E_ST "\"EventStatus\":\"Scheduled\""
#define E_RT "\"ResourceType\":\"VirtualMachine\""
#define E_RS "\"Resources\":[\"WestNO_0\"]"
#define E_NB "\"NotBefore\":\"Mon, 11 Apr 2022 22:26:58 GMT\""
#define E_ALL E_ID "," E_TY "," E_ST "," E_RT "," E_RS "," E_NB
#define DOC(...) "{\"DocumentIncarnation\":1,\"Events\":[{" __VA_ARGS__ "}]}"
#define DOC2(...) "{\"DocumentIncarnation\":1,\"Events\":[{" E_ALL "},{" __VA_ARGS__ "}]}"

static const struct {
    const char *doc; /* the document (NUL-terminated unless len says otherwise) */
    size_t len;      /* 0: strlen(doc) */
    int rc;          /* expected error */
    const char *msg; /* expected substring of the message */
} s_bad_docs[] = {
    {"", 0, SC_E_EMPTY, "document is empty"},
    {" \r\n\t", 0, SC_E_EMPTY, "is empty (only whitespace)"},
    {"hello", 0, SC_E_NOT_JSON, "not JSON: unexpected character at offset 0"},
    {"{\"DocumentIncarnation\":1,\"Ev", 0, SC_E_TRUNCATED, "unfinished after 28 bytes"},
    {DOC(E_ID ",\"EventType\":\"Fre"), 0, SC_E_TRUNCATED, "unfinished after 104 bytes"},
    {"{\"DocumentIncarnation\":1,\"Events\":[]}}", 0, SC_E_NOT_JSON,
     "unexpected character at offset 37"},
    {"{\"DocumentIncarnation\":1,\0\"Events\":[]}", 38, SC_E_NOT_JSON, "NUL byte at offset 25"},
    {"{\"DocumentIncarnation\":1,\"Events\":[],\"x\":\"\xc3\x28\"}", 0, SC_E_NOT_JSON,
     "invalid UTF-8"},
    {"{\"a\":[[[[[[[[[1]]]]]]]]]}", 0, SC_E_TOO_BIG, "nested deeper than 8 levels"},
    {"[1,2]", 0, SC_E_PARSE, "document must be a JSON object, got array"},
    {"17", 0, SC_E_PARSE, "document must be a JSON object, got int"},
    {"{\"Events\":[]}", 0, SC_E_PARSE, "DocumentIncarnation: missing"},
    {"{\"DocumentIncarnation\":\"1\",\"Events\":[]}", 0, SC_E_PARSE,
     "DocumentIncarnation: must be an integer, got string"},
    {"{\"DocumentIncarnation\":1.0,\"Events\":[]}", 0, SC_E_PARSE,
     "DocumentIncarnation: must be an integer, got double"},
    {"{\"DocumentIncarnation\":-1,\"Events\":[]}", 0, SC_E_PARSE,
     "DocumentIncarnation: -1 is negative"},
    {"{\"DocumentIncarnation\":99999999999999999999,\"Events\":[]}", 0, SC_E_PARSE,
     "DocumentIncarnation: out of range"},
    {"{\"DocumentIncarnation\":1}", 0, SC_E_PARSE, "Events: missing"},
    {"{\"DocumentIncarnation\":1,\"Events\":{}}", 0, SC_E_PARSE,
     "Events: must be an array, got object"},
    {"{\"DocumentIncarnation\":1,\"Events\":[null]}", 0, SC_E_PARSE,
     "Events[0]: must be an object, got null"},
    {DOC(E_TY "," E_ST "," E_RT "," E_RS "," E_NB), 0, SC_E_PARSE, "Events[0].EventId: missing"},
    {DOC("\"EventId\":7," E_TY "," E_ST "," E_RT "," E_RS "," E_NB), 0, SC_E_PARSE,
     "Events[0].EventId: must be a string, got int"},
    {DOC("\"EventId\":\"\"," E_TY "," E_ST "," E_RT "," E_RS "," E_NB), 0, SC_E_PARSE,
     "Events[0].EventId: empty string"},
    {DOC("\"EventId\":\"0123456789012345678901234567890123456789012345678901234567890123X\"," E_TY
         "," E_ST "," E_RT "," E_RS "," E_NB),
     0, SC_E_PARSE, "Events[0].EventId: 65 characters, longer than 64"},
    {DOC("\"EventId\":\"../etc/passwd\"," E_TY "," E_ST "," E_RT "," E_RS "," E_NB), 0, SC_E_PARSE,
     "Events[0].EventId: \"../etc/passwd\" is not an EventId"},
    {DOC(E_ID "," E_ST "," E_RT "," E_RS "," E_NB), 0, SC_E_PARSE, "Events[0].EventType: missing"},
    {DOC(E_ID ",\"EventType\":\"\"," E_ST "," E_RT "," E_RS "," E_NB), 0, SC_E_PARSE,
     "Events[0].EventType: empty string"},
    {DOC(E_ID "," E_TY ",\"EventStatus\":null," E_RT "," E_RS "," E_NB), 0, SC_E_PARSE,
     "Events[0].EventStatus: must be a string, got null"},
    {DOC(E_ID "," E_TY "," E_ST "," E_RS "," E_NB), 0, SC_E_PARSE,
     "Events[0].ResourceType: missing"},
    {DOC(E_ID "," E_TY "," E_ST "," E_RT "," E_NB), 0, SC_E_PARSE, "Events[0].Resources: missing"},
    {DOC(E_ID "," E_TY "," E_ST "," E_RT ",\"Resources\":\"WestNO_0\"," E_NB), 0, SC_E_PARSE,
     "Events[0].Resources: must be an array, got string"},
    {DOC(E_ID "," E_TY "," E_ST "," E_RT ",\"Resources\":[\"a\",[]]," E_NB), 0, SC_E_PARSE,
     "Events[0].Resources[1]: must be a string, got array"},
    {DOC(E_ID "," E_TY "," E_ST "," E_RT ",\"Resources\":[\"a\",\"b\",\"\"]," E_NB), 0, SC_E_PARSE,
     "Events[0].Resources[2]: empty string"},
    {DOC(E_ID "," E_TY "," E_ST "," E_RT ",\"Resources\":[\"a\\nb\"]," E_NB), 0, SC_E_PARSE,
     "Events[0].Resources[0]: control character 0x0a at 1"},
    {DOC(E_ID "," E_TY "," E_ST "," E_RT "," E_RS), 0, SC_E_PARSE, "Events[0].NotBefore: missing"},
    {DOC(E_ID "," E_TY "," E_ST "," E_RT "," E_RS ",\"NotBefore\":1649716018"), 0, SC_E_PARSE,
     "Events[0].NotBefore: must be a string, got int"},
    {DOC(E_ID "," E_TY "," E_ST "," E_RT "," E_RS
              ",\"NotBefore\":\"Mon, 32 Apr 2022 22:26:58 GMT\""),
     0, SC_E_PARSE,
     "Events[0].NotBefore: \"Mon, 32 Apr 2022 22:26:58 GMT\" is neither RFC 1123 nor ISO 8601"},
    {DOC(E_ID "," E_TY "," E_ST "," E_RT "," E_RS ",\"NotBefore\":\"2023-02-29T10:00:00Z\""), 0,
     SC_E_PARSE, "\"2023-02-29T10:00:00Z\" is neither"},
    {DOC(E_ALL ",\"Description\":42"), 0, SC_E_PARSE,
     "Events[0].Description: must be a string, got int"},
    {DOC(E_ALL ",\"Description\":\"a\\u0000b\""), 0, SC_E_PARSE,
     "Events[0].Description: contains a NUL character"},
    {DOC(E_ALL ",\"EventSource\":\"\""), 0, SC_E_PARSE, "Events[0].EventSource: empty string"},
    {DOC(E_ALL ",\"EventSource\":false"), 0, SC_E_PARSE,
     "Events[0].EventSource: must be a string, got boolean"},
    {DOC(E_ALL ",\"DurationInSeconds\":-2"), 0, SC_E_PARSE,
     "Events[0].DurationInSeconds: -2 is below -1"},
    {DOC(E_ALL ",\"DurationInSeconds\":1.5"), 0, SC_E_PARSE,
     "Events[0].DurationInSeconds: must be an integer, got double 1.5"},
    {DOC(E_ALL ",\"DurationInSeconds\":\"5s\""), 0, SC_E_PARSE,
     "Events[0].DurationInSeconds: string \"5s\" is not a decimal integer"},
    {DOC(E_ALL ",\"DurationInSeconds\":3000000000"), 0, SC_E_PARSE,
     "Events[0].DurationInSeconds: out of the range -1..2147483647"},
    {DOC(E_ALL ",\"DurationInSeconds\":null"), 0, SC_E_PARSE,
     "Events[0].DurationInSeconds: must be an integer, got null"},
    {DOC2("\"EventId\":\"c7061bac-afdc-4513-b24b-aa5f13a16123\"," E_TY "," E_ST "," E_RT "," E_RS
          "," E_NB),
     0, SC_E_PARSE,
     "Events[1].EventId: \"c7061bac-afdc-4513-b24b-aa5f13a16123\" repeats Events[0]"},
    {DOC2("\"EventId\":\"other\"," E_ST "," E_RT "," E_RS "," E_NB), 0, SC_E_PARSE,
     "Events[1].EventType: missing"},
    {DOC2("\"EventId\":\"other\"," E_TY "," E_ST "," E_RT "," E_RS ",\"NotBefore\":\"soon\""), 0,
     SC_E_PARSE, "Events[1].NotBefore: \"soon\" is neither"},
};

SC_TEST(malformed_documents_rejected_with_reason)
{
    size_t n = sizeof(s_bad_docs) / sizeof(s_bad_docs[0]);

    SC_CHECK(n >= 35);
    for (size_t i = 0; i < n; i++) {
        size_t len = s_bad_docs[i].len ? s_bad_docs[i].len : strlen(s_bad_docs[i].doc);
        sc_doc_t *doc = (sc_doc_t *)&n; /* sentinel: must stay untouched */
        char err[256] = "";
        int rc = sc_doc_parse(s_bad_docs[i].doc, len, &doc, err, sizeof(err));

        if (rc != s_bad_docs[i].rc || !strstr(err, s_bad_docs[i].msg))
            SC_FAILF("case %zu: rc %d (%s) \"%s\"; expected %d with \"%s\"", i, rc, sc_errname(rc),
                     err, s_bad_docs[i].rc, s_bad_docs[i].msg);
        if (doc != (sc_doc_t *)&n) {
            SC_FAILF("case %zu: *ret_doc written on failure", i);
            if (rc == 0)
                sc_doc_destroy(&doc);
        }
        /* every case proves something different */
        for (size_t k = 0; k < i; k++)
            if (strstr(s_bad_docs[k].msg, s_bad_docs[i].msg) ||
                strstr(s_bad_docs[i].msg, s_bad_docs[k].msg))
                SC_FAILF("cases %zu and %zu expect overlapping messages", k, i);
    }
    printf("  %zu malformed documents\n", n);
}

/* The lenient parser keeps the valid events: every case above that the strict parser refuses
 * for one event ("Events[i]...") gives the other events and that event's reason, word for word;
 * the others (the document itself is bad) fail alike. */
SC_TEST(lenient_same_reasons_as_strict)
{
    size_t n = sizeof(s_bad_docs) / sizeof(s_bad_docs[0]), per_event = 0;

    for (size_t i = 0; i < n; i++) {
        size_t len = s_bad_docs[i].len ? s_bad_docs[i].len : strlen(s_bad_docs[i].doc);
        char err[256] = "", strict[256] = "", **bad = NULL;
        sc_doc_t *doc = NULL;
        size_t n_bad = 0;
        int rc = sc_doc_parse_lenient(s_bad_docs[i].doc, len, &doc, &bad, &n_bad, err, sizeof(err));

        sc_doc_parse(s_bad_docs[i].doc, len, &doc, strict, sizeof(strict));
        if (strncmp(strict, "Events[", 7) != 0) {
            if (rc != s_bad_docs[i].rc || strcmp(err, strict) != 0 || doc || bad)
                SC_FAILF("case %zu: lenient rc %d \"%s\", strict \"%s\"", i, rc, err, strict);
            continue;
        }
        per_event++;
        if (rc != 0 || !doc || n_bad != 1 || strcmp(bad[0], strict) != 0 ||
            doc->n_events + n_bad != (strstr(s_bad_docs[i].doc, "},{") ? 2u : 1u))
            SC_FAILF("case %zu: rc %d kept %zu bad %zu \"%s\"; expected \"%s\"", i, rc,
                     doc ? doc->n_events : 0, n_bad, n_bad ? bad[0] : "", strict);
        sc_strv_free(bad, n_bad);
        sc_doc_destroy(&doc);
    }
    SC_CHECK(per_event >= 20);
    printf("  %zu malformed events left out, the other events kept\n", per_event);
}

/* Each kind of bad event in one document: kept + malformed = the length of Events, in order,
 * each reason naming the event's position and field. */
SC_TEST(lenient_mixed_document)
{
    static const char doc_text[] =
        "{\"DocumentIncarnation\":9,\"Events\":["
        "{\"EventId\":\"ev-b\"," E_TY "," E_ST "," E_RT "," E_RS "," E_NB "}," /* bad: none */
        "{" E_TY "," E_ST "," E_RT "," E_RS "," E_NB "},"                      /* no EventId */
        "{\"EventId\":5," E_TY "," E_ST "," E_RT "," E_RS "," E_NB "},"        /* a number */
        "{\"EventId\":\"ev-c\",\"EventType\":[]," E_ST "," E_RT "," E_RS "," E_NB "},"
        "{" E_ALL "},"
        "{\"EventId\":\"ev-d\"," E_TY "," E_ST "," E_RT "," E_RS ",\"NotBefore\":\"tomorrow\"},"
        "{\"EventId\":\"ev-e\"," E_TY "," E_ST "," E_RT ",\"Resources\":\"vm_1\"," E_NB "},"
        "{\"EventId\":\"EV-B\"," E_TY "," E_ST "," E_RT "," E_RS "," E_NB "},"
        "7]}";
    static const char *const want[] = {
        "Events[1].EventId: missing",
        "Events[2].EventId: must be a string, got int",
        "Events[3].EventType: must be a string, got array",
        "Events[5].NotBefore: \"tomorrow\" is neither RFC 1123 nor ISO 8601",
        "Events[6].Resources: must be an array, got string",
        "Events[7].EventId: \"EV-B\" repeats Events[0] (EventIds compare ignoring case)",
        "Events[8]: must be an object, got int",
    };
    char err[256] = "", **bad = NULL;
    sc_doc_t *doc = NULL;
    size_t n_bad = 0;

    SC_REQUIRE(sc_doc_parse_lenient(doc_text, strlen(doc_text), &doc, &bad, &n_bad, err,
                                    sizeof(err)) == 0);
    SC_CHECK_INT(doc->incarnation, 9);
    SC_REQUIRE(doc->n_events == 2);
    SC_CHECK_STR(doc->events[0].id, "ev-b");
    SC_CHECK_STR(doc->events[1].id, FREEZE_ID);
    SC_REQUIRE(n_bad == sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < n_bad; i++)
        SC_CHECK_STR(bad[i], want[i]);
    sc_strv_free(bad, n_bad);
    sc_doc_destroy(&doc);
    /* the strict parser refuses the whole document for its first bad event */
    SC_CHECK_INT(sc_doc_parse(doc_text, strlen(doc_text), &doc, err, sizeof(err)), SC_E_PARSE);
    SC_CHECK_STR(err, want[0]);
    SC_CHECK(doc == NULL);

    /* every event bad: a document without events; none bad: no list */
    {
        static const char all_bad[] = "{\"DocumentIncarnation\":3,\"Events\":[{},{}]}";
        static const char none_bad[] = DOC(E_ALL);

        SC_REQUIRE(sc_doc_parse_lenient(all_bad, strlen(all_bad), &doc, &bad, &n_bad, err,
                                        sizeof(err)) == 0);
        SC_CHECK(doc->n_events == 0 && doc->events == NULL && n_bad == 2);
        SC_CHECK_STR(bad[1], "Events[1].EventId: missing");
        sc_strv_free(bad, n_bad);
        sc_doc_destroy(&doc);
        SC_REQUIRE(sc_doc_parse_lenient(none_bad, strlen(none_bad), &doc, &bad, &n_bad, err,
                                        sizeof(err)) == 0);
        SC_CHECK(doc->n_events == 1 && bad == NULL && n_bad == 0);
        sc_doc_destroy(&doc);
        /* reasons not wanted */
        SC_REQUIRE(sc_doc_parse_lenient(all_bad, strlen(all_bad), &doc, NULL, NULL, err,
                                        sizeof(err)) == 0);
        sc_doc_destroy(&doc);
        SC_CHECK_INT(
            sc_doc_parse_lenient(all_bad, strlen(all_bad), &doc, &bad, NULL, err, sizeof(err)),
            -EINVAL);
    }
}

/* Limits on counts and sizes that need big inputs. */
SC_TEST(limits)
{
    size_t cap = SC_DOC_MAX_BYTES + 64, off;
    char *buf = malloc(cap), err[256];
    sc_doc_t *doc = NULL;

    SC_REQUIRE(buf);
    /* 257 events */
    off = (size_t)snprintf(buf, cap, "{\"DocumentIncarnation\":1,\"Events\":[");
    for (int i = 0; i < SC_DOC_MAX_EVENTS + 1; i++)
        off +=
            (size_t)snprintf(buf + off, cap - off,
                             "%s{\"EventId\":\"e%d\"," E_TY "," E_ST "," E_RT "," E_RS "," E_NB "}",
                             i ? "," : "", i);
    off += (size_t)snprintf(buf + off, cap - off, "]}");
    SC_CHECK_INT(sc_doc_parse(buf, off, &doc, err, sizeof(err)), SC_E_TOO_BIG);
    SC_CHECK(strstr(err, "Events: 257 events, more than the limit of 256"));

    /* exactly 256 events is fine */
    off = (size_t)snprintf(buf, cap, "{\"DocumentIncarnation\":1,\"Events\":[");
    for (int i = 0; i < SC_DOC_MAX_EVENTS; i++)
        off +=
            (size_t)snprintf(buf + off, cap - off,
                             "%s{\"EventId\":\"e%d\"," E_TY "," E_ST "," E_RT "," E_RS "," E_NB "}",
                             i ? "," : "", i);
    off += (size_t)snprintf(buf + off, cap - off, "]}");
    SC_CHECK_INT(sc_doc_parse(buf, off, &doc, err, sizeof(err)), 0);
    SC_CHECK(doc && doc->n_events == SC_DOC_MAX_EVENTS);
    sc_doc_destroy(&doc);

    /* 4097 resources */
    off = (size_t)snprintf(buf, cap, DOC(E_ID "," E_TY "," E_ST "," E_RT ",\"Resources\":["));
    off -= 3; /* drop the "}]}" DOC closes with */
    for (int i = 0; i < SC_EVENT_MAX_RESOURCES + 1; i++)
        off += (size_t)snprintf(buf + off, cap - off, "%s\"vm%d\"", i ? "," : "", i);
    off += (size_t)snprintf(buf + off, cap - off, "]," E_NB "}]}");
    SC_CHECK_INT(sc_doc_parse(buf, off, &doc, err, sizeof(err)), SC_E_TOO_BIG);
    SC_CHECK(strstr(err, "Events[0].Resources: 4097 names, more than the limit of 4096"));

    /* a 5000-byte Description */
    off = (size_t)snprintf(buf, cap, DOC(E_ALL ",\"Description\":\""));
    off -= 3;
    memset(buf + off, 'd', 5000);
    off += 5000;
    off += (size_t)snprintf(buf + off, cap - off, "\"}]}");
    SC_CHECK_INT(sc_doc_parse(buf, off, &doc, err, sizeof(err)), SC_E_TOO_BIG);
    SC_CHECK(strstr(err, "Events[0].Description: 5000 bytes, more than the limit of 4096"));

    /* a document over 4 MiB is refused before parsing */
    memset(buf, ' ', SC_DOC_MAX_BYTES + 1);
    memcpy(buf, "{}", 2);
    SC_CHECK_INT(sc_doc_parse(buf, SC_DOC_MAX_BYTES + 1, &doc, err, sizeof(err)), SC_E_TOO_BIG);
    SC_CHECK(strstr(err, "document is 4194305 bytes, more than the limit of 4194304"));
    SC_CHECK(doc == NULL);

    /* no err buffer, NULL arguments */
    SC_CHECK_INT(sc_doc_parse("[]", 2, &doc, NULL, 0), SC_E_PARSE);
    SC_CHECK_INT(sc_doc_parse("{}", 2, NULL, err, sizeof(err)), -EINVAL);
    SC_CHECK_INT(sc_doc_parse(NULL, 5, &doc, err, sizeof(err)), -EINVAL);
    SC_CHECK_INT(sc_doc_parse(NULL, 0, &doc, err, sizeof(err)), SC_E_EMPTY);
    /* a tiny err buffer is truncated, not overrun */
    SC_CHECK_INT(sc_doc_parse("[]", 2, &doc, err, 5), SC_E_PARSE);
    SC_CHECK_STR(err, "docu");
    free(buf);
}

/* ---- ids, find, equal, dup ------------------------------------------------------------ */

SC_TEST(ids_compare_ignoring_case)
{
    sc_doc_t *up = s_parse_fixture("westno-2.json"), *low;
    char *json = NULL;

    SC_REQUIRE(up);
    SC_CHECK(sc_event_id_equal(FREEZE_ID, "c7061bac-afdc-4513-b24b-aa5f13a16123"));
    SC_CHECK(!sc_event_id_equal(FREEZE_ID, "c7061bac-afdc-4513-b24b-aa5f13a16124"));
    SC_CHECK(!sc_event_id_equal(FREEZE_ID, "c7061bac-afdc-4513-b24b-aa5f13a1612"));
    SC_CHECK(!sc_event_id_equal(NULL, FREEZE_ID));
    SC_CHECK(sc_doc_find(up, "c7061bac-afdc-4513-b24b-aa5f13a16123") == &up->events[0]);
    SC_CHECK(sc_doc_find(up, "nope") == NULL);
    SC_CHECK(sc_doc_find(NULL, FREEZE_ID) == NULL);
    SC_CHECK(sc_event_id_valid(FREEZE_ID));
    SC_CHECK(sc_event_id_valid("a_b-1"));
    SC_CHECK(!sc_event_id_valid("-ab"));
    SC_CHECK(!sc_event_id_valid("a b"));
    SC_CHECK(!sc_event_id_valid(""));
    SC_CHECK(!sc_event_id_valid(NULL));

    /* the same document with a lower-case EventId is the same content */
    SC_REQUIRE(sc_doc_to_json(up, &json) == 0);
    for (char *p = strstr(json, FREEZE_ID); p && *p != '"'; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    SC_CHECK(strstr(json, "c7061bac-afdc-4513-b24b-aa5f13a16123"));
    low = s_parse_str(json);
    SC_REQUIRE(low);
    SC_CHECK_STR(low->events[0].id, "c7061bac-afdc-4513-b24b-aa5f13a16123");
    SC_CHECK(sc_event_equal(&up->events[0], &low->events[0]));
    free(json);
    sc_doc_destroy(&low);
    sc_doc_destroy(&up);
}

SC_TEST(event_equal_sees_every_field)
{
    sc_doc_t *a = s_parse_fixture("westno-2.json"), *b = NULL;
    sc_event_t *e;

    SC_REQUIRE(a);
    SC_REQUIRE(sc_doc_dup(a, &b) == 0 && b);
    e = &b->events[0];
    SC_CHECK(sc_event_equal(&a->events[0], e));
    e->duration_s = 6;
    SC_CHECK(!sc_event_equal(&a->events[0], e));
    e->duration_s = 5;
    e->has_duration = false;
    SC_CHECK(!sc_event_equal(&a->events[0], e));
    e->has_duration = true;
    e->resources[1][0] = 'X';
    SC_CHECK(!sc_event_equal(&a->events[0], e));
    e->resources[1][0] = 'W';
    e->n_resources = 1;
    SC_CHECK(!sc_event_equal(&a->events[0], e));
    e->n_resources = 2;
    e->description[0] = 'v';
    SC_CHECK(!sc_event_equal(&a->events[0], e));
    e->description[0] = 'V';
    e->not_before++;
    SC_CHECK(!sc_event_equal(&a->events[0], e));
    e->not_before--;
    e->status_raw[1] = 'T';
    SC_CHECK(!sc_event_equal(&a->events[0], e));
    e->status_raw[1] = 'c';
    SC_CHECK(sc_event_equal(&a->events[0], e));
    /* the copy is deep: the original never changed */
    SC_CHECK_STR(a->events[0].resources[1], "WestNO_1");
    SC_CHECK(a->events[0].resources[1] != e->resources[1]);
    SC_CHECK(!sc_event_equal(NULL, e));
    SC_CHECK_INT(sc_doc_dup(NULL, &b), -EINVAL);
    sc_doc_destroy(&a);
    sc_doc_destroy(&b);
    sc_doc_destroy(&b); /* takes NULL */
    sc_doc_destroy(NULL);
}

/* ---- round trip ----------------------------------------------------------------------- */

SC_TEST(round_trip_fixtures)
{
    const char *names[] = {"westno-1.json", "westno-2.json", "westno-3.json", "westno-4.json",
                           "v2017-03-01-iso-notbefore.json"};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        sc_doc_t *a = s_parse_fixture(names[i]), *b;
        char *json = NULL, *json2 = NULL;

        SC_REQUIRE(a);
        SC_REQUIRE(sc_doc_to_json(a, &json) == 0);
        b = s_parse_str(json);
        SC_REQUIRE(b);
        if (!s_doc_equal(a, b))
            SC_FAILF("%s changed through to_json: %s", names[i], json);
        /* only present fields are written */
        if (strstr(names[i], "v2017"))
            SC_CHECK(!strstr(json, "Description") && !strstr(json, "EventSource") &&
                     !strstr(json, "DurationInSeconds"));
        SC_REQUIRE(sc_doc_to_json(b, &json2) == 0);
        SC_CHECK_STR(json, json2); /* stable */
        free(json);
        free(json2);
        sc_doc_destroy(&a);
        sc_doc_destroy(&b);
    }
}

SC_TEST(to_json_of_event_built_in_code)
{
    char *resources[] = {"vm-a", "vm-b"};
    sc_event_t ev = {
        .id = "0f000000-0000-0000-0000-000000000001",
        .type = SC_EVENT_REDEPLOY,
        .status = SC_EVENT_SCHEDULED,
        .resources = resources,
        .n_resources = 2,
        .has_not_before = true,
        .not_before = 1649716018,
        .source = SC_EVENT_SOURCE_USER,
        .has_duration = true,
        .duration_s = -1,
    };
    sc_doc_t doc = {.incarnation = 9, .events = &ev, .n_events = 1}, *back;
    char *json = NULL;

    SC_REQUIRE(sc_doc_to_json(&doc, &json) == 0);
    SC_CHECK(strstr(json, "\"EventType\":\"Redeploy\""));
    SC_CHECK(strstr(json, "\"ResourceType\":\"VirtualMachine\""));
    SC_CHECK(strstr(json, "\"NotBefore\":\"Mon, 11 Apr 2022 22:26:58 GMT\""));
    SC_CHECK(strstr(json, "\"EventSource\":\"User\""));
    SC_CHECK(strstr(json, "\"DurationInSeconds\":-1"));
    back = s_parse_str(json);
    SC_REQUIRE(back);
    SC_CHECK(s_doc_equal(&doc, back));
    free(json);
    sc_doc_destroy(&back);

    ev.id[0] = ' ';
    SC_CHECK_INT(sc_doc_to_json(&doc, &json), -EINVAL);
    SC_CHECK_INT(sc_doc_to_json(NULL, &json), -EINVAL);
}

/* ---- one event as a JSON object ------------------------------------------------------- */

SC_TEST(event_json_round_trip_fixtures)
{
    const char *names[] = {"westno-1.json", "westno-2.json", "westno-3.json", "westno-4.json",
                           "v2017-03-01-iso-notbefore.json"};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        size_t len = 0;
        char *buf = sc_test_fixture(names[i], &len), err[256] = "";
        sc_doc_t *doc = s_parse_fixture(names[i]);
        json_object *root = NULL, *events = NULL;

        SC_REQUIRE(buf && doc);
        root = json_tokener_parse(buf);
        SC_REQUIRE(root && json_object_object_get_ex(root, "Events", &events));
        SC_REQUIRE(json_object_array_length(events) == doc->n_events);
        for (size_t k = 0; k < doc->n_events; k++) {
            sc_event_t direct = {0}, back = {0};
            json_object *o = NULL;

            /* the fixture's own object reads as sc_doc_parse read it */
            SC_CHECK_INT(
                sc_event_from_json(json_object_array_get_idx(events, k), &direct, err, sizeof(err)),
                0);
            SC_CHECK(sc_event_equal(&direct, &doc->events[k]));
            /* and the event comes back equal through its object */
            SC_REQUIRE(sc_event_to_json(&doc->events[k], &o) == 0);
            SC_CHECK_INT(sc_event_from_json(o, &back, err, sizeof(err)), 0);
            if (!sc_event_equal(&back, &doc->events[k]))
                SC_FAILF("%s Events[%zu] changed through its object: %s", names[i], k,
                         json_object_to_json_string(o));
            json_object_put(o);
            sc_event_clear(&direct);
            sc_event_clear(&back);
        }
        json_object_put(root);
        sc_doc_destroy(&doc);
        free(buf);
    }
}

SC_TEST(doc_json_object_round_trip)
{
    const char *names[] = {"westno-1.json", "westno-2.json", "westno-3.json", "westno-4.json",
                           "v2017-03-01-iso-notbefore.json"};
    char err[256] = "";

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        size_t len = 0;
        char *buf = sc_test_fixture(names[i], &len);
        sc_doc_t *doc = s_parse_fixture(names[i]), *direct = NULL, *back = NULL;
        json_object *root = NULL, *o = NULL;

        SC_REQUIRE(buf && doc && (root = json_tokener_parse(buf)));
        SC_CHECK_INT(sc_doc_from_json(root, &direct, err, sizeof(err)), 0);
        SC_CHECK(direct && s_doc_equal(direct, doc));
        SC_REQUIRE(sc_doc_to_json_object(doc, &o) == 0);
        SC_CHECK_INT(sc_doc_from_json(o, &back, err, sizeof(err)), 0);
        SC_CHECK(back && s_doc_equal(back, doc));
        json_object_put(o);
        json_object_put(root);
        sc_doc_destroy(&direct);
        sc_doc_destroy(&back);
        sc_doc_destroy(&doc);
        free(buf);
    }
    {
        json_object *arr = json_object_new_array();
        json_object *bad = json_tokener_parse("{\"DocumentIncarnation\":1,\"Events\":[{}]}");
        sc_doc_t *doc = NULL;

        SC_CHECK_INT(sc_doc_from_json(arr, &doc, err, sizeof(err)), SC_E_PARSE);
        SC_CHECK(doc == NULL && strstr(err, "document must be a JSON object"));
        SC_CHECK_INT(sc_doc_from_json(bad, &doc, err, sizeof(err)), SC_E_PARSE);
        SC_CHECK(doc == NULL && strstr(err, "Events[0].EventId: missing"));
        SC_CHECK_INT(sc_doc_from_json(NULL, &doc, err, sizeof(err)), -EINVAL);
        json_object_put(arr);
        json_object_put(bad);
    }
}

SC_TEST(event_from_json_names_the_field)
{
    static const struct {
        const char *obj; /* one event object */
        int rc;          /* what sc_event_from_json returns */
        const char *why; /* what its message starts with */
    } bad[] = {
        {"[]", SC_E_PARSE, "event: must be an object"},
        {"{\"EventType\":\"Reboot\",\"EventStatus\":\"Scheduled\",\"ResourceType\":\"VM\","
         "\"Resources\":[],\"NotBefore\":\"\"}",
         SC_E_PARSE, "EventId: missing"},
        {"{\"EventId\":\"a b\",\"EventType\":\"Reboot\",\"EventStatus\":\"Scheduled\","
         "\"ResourceType\":\"VM\",\"Resources\":[],\"NotBefore\":\"\"}",
         SC_E_PARSE, "EventId: \"a b\" is not an EventId"},
        {"{\"EventId\":\"e1\",\"EventType\":5,\"EventStatus\":\"Scheduled\","
         "\"ResourceType\":\"VM\",\"Resources\":[],\"NotBefore\":\"\"}",
         SC_E_PARSE, "EventType: must be a string"},
        {"{\"EventId\":\"e1\",\"EventType\":\"Reboot\",\"EventStatus\":\"Scheduled\","
         "\"ResourceType\":\"VM\",\"Resources\":\"vm\",\"NotBefore\":\"\"}",
         SC_E_PARSE, "Resources: must be an array"},
        {"{\"EventId\":\"e1\",\"EventType\":\"Reboot\",\"EventStatus\":\"Scheduled\","
         "\"ResourceType\":\"VM\",\"Resources\":[],\"NotBefore\":\"tomorrow\"}",
         SC_E_PARSE, "NotBefore: \"tomorrow\" is neither"},
        {"{\"EventId\":\"e1\",\"EventType\":\"Reboot\",\"EventStatus\":\"Scheduled\","
         "\"ResourceType\":\"VM\",\"Resources\":[],\"NotBefore\":\"\","
         "\"DurationInSeconds\":-2}",
         SC_E_PARSE, "DurationInSeconds: -2 is below -1"},
        {"{\"EventId\":\"e1\",\"EventType\":\"Reboot\",\"EventStatus\":\"Scheduled\","
         "\"ResourceType\":\"VM\",\"Resources\":[],\"NotBefore\":\"\",\"Description\":null}",
         SC_E_PARSE, "Description: must be a string"},
    };
    sc_event_t ev = {0};
    json_object *o = NULL;
    char err[256];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_object *obj = json_tokener_parse(bad[i].obj);

        SC_REQUIRE(obj);
        memset(&ev, 0x5a, sizeof(ev)); /* untouched on error */
        err[0] = '\0';
        SC_CHECK_INT(sc_event_from_json(obj, &ev, err, sizeof(err)), bad[i].rc);
        if (strncmp(err, bad[i].why, strlen(bad[i].why)) != 0)
            SC_FAILF("case %zu: message \"%s\", wanted \"%s...\"", i, err, bad[i].why);
        SC_CHECK(ev.id[0] == 0x5a && ev.n_resources == (size_t)0x5a5a5a5a5a5a5a5aULL);
        json_object_put(obj);
    }
    memset(&ev, 0, sizeof(ev));
    SC_CHECK_INT(sc_event_from_json(NULL, &ev, err, sizeof(err)), -EINVAL);
    SC_CHECK_INT(sc_event_to_json(NULL, &o), -EINVAL);
    SC_CHECK_INT(sc_event_to_json(&ev, &o), -EINVAL); /* no EventId */
    SC_CHECK(o == NULL);
}

/* ---- diff ----------------------------------------------------------------------------- */

SC_TEST(diff_along_westno)
{
    sc_doc_t *d[4];
    const char *names[4] = {"westno-1.json", "westno-2.json", "westno-3.json", "westno-4.json"};
    sc_doc_diff_t diff;

    for (int i = 0; i < 4; i++)
        d[i] = s_parse_fixture(names[i]);
    SC_REQUIRE(d[0] && d[1] && d[2] && d[3]);

    SC_REQUIRE(sc_doc_diff(d[0], d[1], &diff) == 0); /* Scheduled appears */
    SC_CHECK(diff.n_added == 1 && diff.n_changed == 0 && diff.n_removed == 0);
    SC_CHECK(diff.n_added == 1 && diff.added[0] == &d[1]->events[0]);
    sc_doc_diff_release(&diff);
    SC_CHECK(diff.added == NULL && diff.n_added == 0);

    SC_REQUIRE(sc_doc_diff(d[1], d[2], &diff) == 0); /* Scheduled -> Started */
    SC_CHECK(diff.n_added == 0 && diff.n_changed == 1 && diff.n_removed == 0);
    SC_CHECK(diff.n_changed == 1 && diff.changed[0] == &d[2]->events[0]);
    sc_doc_diff_release(&diff);

    SC_REQUIRE(sc_doc_diff(d[2], d[3], &diff) == 0); /* finished: removed */
    SC_CHECK(diff.n_added == 0 && diff.n_changed == 0 && diff.n_removed == 1);
    SC_CHECK(diff.n_removed == 1 && diff.removed[0] == &d[2]->events[0]);
    sc_doc_diff_release(&diff);

    SC_REQUIRE(sc_doc_diff(NULL, d[2], &diff) == 0); /* no previous document */
    SC_CHECK(diff.n_added == 1 && diff.n_changed == 0 && diff.n_removed == 0);
    sc_doc_diff_release(&diff);

    SC_REQUIRE(sc_doc_diff(d[2], d[2], &diff) == 0); /* nothing */
    SC_CHECK(diff.n_added + diff.n_changed + diff.n_removed == 0);
    SC_CHECK(!diff.added && !diff.changed && !diff.removed);
    sc_doc_diff_release(&diff);

    SC_CHECK_INT(sc_doc_diff(d[0], NULL, &diff), -EINVAL);
    sc_doc_diff_release(NULL);
    for (int i = 0; i < 4; i++)
        sc_doc_destroy(&d[i]);
}

#define MINI(id, status)                                                                           \
    "{\"EventId\":\"" id "\",\"EventType\":\"Reboot\",\"EventStatus\":\"" status                   \
    "\",\"ResourceType\":\"VirtualMachine\",\"Resources\":[\"v\"],\"NotBefore\":\"\"}"

SC_TEST(diff_mixed_and_case_insensitive)
{
    sc_doc_t *old = s_parse_str("{\"DocumentIncarnation\":1,\"Events\":[" MINI(
        "aaaa", "Scheduled") "," MINI("BBBB", "Scheduled") "," MINI("cccc", "Scheduled") "]}");
    sc_doc_t *new = s_parse_str("{\"DocumentIncarnation\":2,\"Events\":[" MINI(
        "dddd", "Scheduled") "," MINI("bbbb", "Started") "," MINI("CCCC", "Scheduled") "]}");
    sc_doc_diff_t diff;

    SC_REQUIRE(old && new);
    SC_REQUIRE(sc_doc_diff(old, new, &diff) == 0);
    SC_REQUIRE(diff.n_added == 1 && diff.n_changed == 1 && diff.n_removed == 1);
    SC_CHECK_STR(diff.added[0]->id, "dddd");
    SC_CHECK_STR(diff.changed[0]->id, "bbbb"); /* matched BBBB ignoring case */
    SC_CHECK_STR(diff.removed[0]->id, "aaaa");
    sc_doc_diff_release(&diff);

    SC_REQUIRE(sc_doc_diff(new, old, &diff) == 0);
    SC_REQUIRE(diff.n_added == 1 && diff.n_changed == 1 && diff.n_removed == 1);
    SC_CHECK_STR(diff.added[0]->id, "aaaa");
    SC_CHECK_STR(diff.changed[0]->id, "BBBB");
    SC_CHECK_STR(diff.removed[0]->id, "dddd");
    sc_doc_diff_release(&diff);
    sc_doc_destroy(&old);
    sc_doc_destroy(&new);
}

/* ---- approval ------------------------------------------------------------------------- */

SC_TEST(approval_fixtures_parse)
{
    const char *names[] = {"approve-2017-03-01.json", "approve-2020-07-01.json"};

    for (int i = 0; i < 2; i++) {
        size_t len = 0, n = 0;
        char *buf = sc_test_fixture(names[i], &len), err[256] = "", **ids = NULL;
        int rc;

        SC_REQUIRE(buf);
        rc = sc_approval_parse(buf, len, &ids, &n, err, sizeof(err));
        if (rc)
            SC_FAILF("%s: %s", names[i], err);
        SC_CHECK_INT(n, 1);
        SC_CHECK(ids && ids[0] && strcmp(ids[0], APPROVE_ID) == 0);
        sc_strv_free(ids, n);
        free(buf);
    }
}

SC_TEST(approval_body_build_and_parse)
{
    const char *two[] = {APPROVE_ID, FREEZE_ID};
    const char *dup[] = {APPROVE_ID, "F020BA2E-3BC0-4C40-A10B-86575A9EABD5"};
    const char *bad[] = {APPROVE_ID, "x\"}]}"};
    char *body = NULL, **ids = NULL, err[256];
    size_t n = 0;

    SC_REQUIRE(sc_approval_body(two, 2, &body) == 0);
    SC_CHECK_STR(body, "{\"StartRequests\":[{\"EventId\":\"" APPROVE_ID
                       "\"},{\"EventId\":\"" FREEZE_ID "\"}]}");
    SC_REQUIRE(sc_approval_parse(body, strlen(body), &ids, &n, err, sizeof(err)) == 0);
    SC_CHECK_INT(n, 2);
    SC_CHECK_STR(ids[0], APPROVE_ID);
    SC_CHECK_STR(ids[1], FREEZE_ID);
    sc_strv_free(ids, n);
    sc_strv_free(NULL, 0);
    free(body);

    body = NULL;
    SC_CHECK_INT(sc_approval_body(two, 0, &body), -EINVAL);
    SC_CHECK_INT(sc_approval_body(bad, 2, &body), -EINVAL);
    SC_CHECK_INT(sc_approval_body(dup, 2, &body), -EINVAL);
    SC_CHECK_INT(sc_approval_body(NULL, 1, &body), -EINVAL);
    SC_CHECK(body == NULL);
}

SC_TEST(approval_malformed)
{
    static const struct {
        const char *body;
        int rc;
        const char *msg;
    } cases[] = {
        {"", SC_E_EMPTY, "approval body is empty"},
        {"{\"StartRequests\":[", SC_E_TRUNCATED, "approval body is cut short"},
        {"StartRequests", SC_E_NOT_JSON, "approval body is not JSON"},
        {"[]", SC_E_PARSE, "approval body must be a JSON object, got array"},
        {"{}", SC_E_PARSE, "StartRequests: missing"},
        {"{\"StartRequests\":{}}", SC_E_PARSE, "StartRequests: must be an array, got object"},
        {"{\"StartRequests\":[]}", SC_E_PARSE, "StartRequests: empty array"},
        {"{\"StartRequests\":[\"" APPROVE_ID "\"]}", SC_E_PARSE,
         "StartRequests[0]: must be an object, got string"},
        {"{\"StartRequests\":[{}]}", SC_E_PARSE, "StartRequests[0].EventId: missing"},
        {"{\"StartRequests\":[{\"EventId\":\"a b\"}]}", SC_E_PARSE,
         "StartRequests[0].EventId: \"a b\" is not an EventId"},
        {"{\"StartRequests\":[{\"EventId\":\"" APPROVE_ID "\",\"Why\":1}]}", SC_E_PARSE,
         "StartRequests[0]: unexpected field \"Why\""},
        {"{\"StartRequests\":[{\"EventId\":\"abc\"},{\"EventId\":\"ABC\"}]}", SC_E_PARSE,
         "StartRequests[1].EventId: \"ABC\" repeats StartRequests[0]"},
        {"{\"StartRequests\":[{\"EventId\":\"abc\"}],\"Extra\":1}", SC_E_PARSE,
         "approval body: unexpected field \"Extra\""},
        {"{\"DocumentIncarnation\":\"-5\",\"StartRequests\":[{\"EventId\":\"abc\"}]}", SC_E_PARSE,
         "DocumentIncarnation: string \"-5\" is not a non-negative integer"},
        {"{\"DocumentIncarnation\":-5,\"StartRequests\":[{\"EventId\":\"abc\"}]}", SC_E_PARSE,
         "DocumentIncarnation: -5 is negative"},
        {"{\"DocumentIncarnation\":true,\"StartRequests\":[{\"EventId\":\"abc\"}]}", SC_E_PARSE,
         "DocumentIncarnation: must be an integer or a string of digits, got boolean"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[256] = "", **ids = NULL;
        size_t n = 99;
        int rc =
            sc_approval_parse(cases[i].body, strlen(cases[i].body), &ids, &n, err, sizeof(err));

        if (rc != cases[i].rc || !strstr(err, cases[i].msg))
            SC_FAILF("case %zu: rc %d \"%s\"; expected %d with \"%s\"", i, rc, err, cases[i].rc,
                     cases[i].msg);
        SC_CHECK(ids == NULL && n == 99);
    }
}

int main(void)
{
    SC_RUN(westno_incarnations);
    SC_RUN(westno2_freeze_every_field);
    SC_RUN(westno3_started_empty_notbefore);
    SC_RUN(v2017_iso_notbefore_and_underscore_names);
    SC_RUN(unknown_values_kept_extra_fields_ignored);
    SC_RUN(every_type_and_name);
    SC_RUN(notbefore_formats);
    SC_RUN(notbefore_matches_timegm);
    SC_RUN(malformed_documents_rejected_with_reason);
    SC_RUN(lenient_same_reasons_as_strict);
    SC_RUN(lenient_mixed_document);
    SC_RUN(limits);
    SC_RUN(ids_compare_ignoring_case);
    SC_RUN(event_equal_sees_every_field);
    SC_RUN(round_trip_fixtures);
    SC_RUN(to_json_of_event_built_in_code);
    SC_RUN(event_json_round_trip_fixtures);
    SC_RUN(event_from_json_names_the_field);
    SC_RUN(doc_json_object_round_trip);
    SC_RUN(diff_along_westno);
    SC_RUN(diff_mixed_and_case_insensitive);
    SC_RUN(approval_fixtures_parse);
    SC_RUN(approval_body_build_and_parse);
    SC_RUN(approval_malformed);
    return sc_test_done();
}
