/* Fuzz target for sc_event: the IMDS document parser and the approval body parser.
 * Properties checked on every input:
 *  - sc_doc_parse either fails with a message or gives a document that serializes with
 *    sc_doc_to_json, parses back, and is equal to the first (round trip);
 *  - a document diffed against itself, or against its round trip, has no differences;
 *    diffed against nothing, everything is added;
 *  - sc_doc_dup gives an equal document;
 *  - every event goes through sc_event_to_json and back through sc_event_from_json equal;
 *  - sc_doc_parse_lenient fails exactly when the document itself is bad (then as sc_doc_parse,
 *    same code and message); otherwise every kept event is valid, kept + malformed = the length
 *    of Events, every reason names an event ("Events[i]..."), the kept events round-trip
 *    through the strict parser, and when sc_doc_parse accepts the bytes it gives the same
 *    document with nothing malformed;
 *  - sc_approval_parse either fails with a message or gives ids that sc_approval_body
 *    accepts and that parse back to the same ids. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "sc_event.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void s_check(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz_event: property violated: %s\n", what);
        abort();
    }
}

static int s_doc_equal(const sc_doc_t *a, const sc_doc_t *b)
{
    if (a->incarnation != b->incarnation || a->n_events != b->n_events)
        return 0;
    for (size_t i = 0; i < a->n_events; i++)
        if (!sc_event_equal(&a->events[i], &b->events[i]))
            return 0;
    return 1;
}

static void s_doc(const char *buf, size_t size)
{
    sc_doc_t *doc = NULL, *back = NULL, *copy = NULL;
    sc_doc_diff_t diff;
    char err[256] = "", *json = NULL;
    int rc = sc_doc_parse(buf, size, &doc, err, sizeof(err));

    if (rc < 0) {
        s_check(doc == NULL, "no document on failure");
        s_check(err[0] != '\0', "a failure has a message");
        return;
    }
    s_check(doc != NULL, "a document on success");
    s_check(doc->n_events <= SC_DOC_MAX_EVENTS, "event limit");
    for (size_t i = 0; i < doc->n_events; i++) {
        s_check(sc_event_id_valid(doc->events[i].id), "valid EventId");
        s_check(doc->events[i].n_resources <= SC_EVENT_MAX_RESOURCES, "resource limit");
        s_check(sc_doc_find(doc, doc->events[i].id) == &doc->events[i], "ids are unique");
    }

    s_check(sc_doc_to_json(doc, &json) == 0, "to_json succeeds");
    rc = sc_doc_parse(json, strlen(json), &back, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "reparse failed: %s\n%s\n", err, json);
    s_check(rc == 0, "to_json output parses");
    s_check(s_doc_equal(doc, back), "round trip is equal");

    s_check(sc_doc_diff(doc, doc, &diff) == 0, "diff succeeds");
    s_check(diff.n_added + diff.n_changed + diff.n_removed == 0, "self diff is empty");
    sc_doc_diff_release(&diff);
    s_check(sc_doc_diff(doc, back, &diff) == 0, "diff succeeds");
    s_check(diff.n_added + diff.n_changed + diff.n_removed == 0, "round-trip diff is empty");
    sc_doc_diff_release(&diff);
    s_check(sc_doc_diff(NULL, doc, &diff) == 0, "diff succeeds");
    s_check(diff.n_added == doc->n_events && diff.n_removed == 0, "diff from nothing");
    sc_doc_diff_release(&diff);

    s_check(sc_doc_dup(doc, &copy) == 0 && s_doc_equal(doc, copy), "dup is equal");

    for (size_t i = 0; i < doc->n_events; i++) {
        json_object *o = NULL;
        sc_event_t ev = {0};

        s_check(sc_event_to_json(&doc->events[i], &o) == 0, "event to_json succeeds");
        rc = sc_event_from_json(o, &ev, err, sizeof(err));
        if (rc < 0)
            fprintf(stderr, "event from_json failed: %s\n%s\n", err, json_object_to_json_string(o));
        s_check(rc == 0, "event to_json output reads back");
        s_check(sc_event_equal(&doc->events[i], &ev), "event -> json -> event is equal");
        sc_event_clear(&ev);
        json_object_put(o);
    }

    free(json);
    sc_doc_destroy(&copy);
    sc_doc_destroy(&back);
    sc_doc_destroy(&doc);
}

/* The length of the Events array of buf, which sc_doc_parse_lenient accepted. */
static size_t s_events_length(const char *buf, size_t size)
{
    json_tokener *tok = json_tokener_new_ex(SC_DOC_MAX_DEPTH);
    json_object *root = NULL, *events;
    size_t n = (size_t)-1;

    s_check(tok != NULL, "tokener");
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    root = json_tokener_parse_ex(tok, buf, (int)size);
    if (!root) /* a top-level value cut at the end of the bytes: what s_tokenize completes */
        root = json_tokener_parse_ex(tok, "", 1);
    if (root && json_object_object_get_ex(root, "Events", &events))
        n = json_object_array_length(events);
    json_object_put(root);
    json_tokener_free(tok);
    return n;
}

static void s_lenient(const char *buf, size_t size)
{
    sc_doc_t *doc = NULL, *strict = NULL, *back = NULL;
    char err[256] = "", serr[256] = "", **bad = NULL, *json = NULL;
    size_t n_bad = 0;
    int rc = sc_doc_parse_lenient(buf, size, &doc, &bad, &n_bad, err, sizeof(err));
    int src = sc_doc_parse(buf, size, &strict, serr, sizeof(serr));

    if (rc < 0) {
        s_check(doc == NULL && bad == NULL, "nothing on failure");
        s_check(src == rc && strcmp(err, serr) == 0, "a bad document fails as in sc_doc_parse");
        return;
    }
    s_check(doc != NULL, "a document on success");
    s_check(doc->n_events + n_bad == s_events_length(buf, size), "kept + malformed = Events");
    for (size_t i = 0; i < doc->n_events; i++) {
        s_check(sc_event_id_valid(doc->events[i].id), "kept: valid EventId");
        s_check(doc->events[i].n_resources <= SC_EVENT_MAX_RESOURCES, "kept: resource limit");
        s_check(sc_doc_find(doc, doc->events[i].id) == &doc->events[i], "kept: ids are unique");
    }
    for (size_t i = 0; i < n_bad; i++)
        s_check(strncmp(bad[i], "Events[", 7) == 0 && strlen(bad[i]) < SC_DOC_REASON_MAX,
                "a reason names its event");
    s_check(sc_doc_to_json(doc, &json) == 0, "to_json succeeds");
    s_check(sc_doc_parse(json, strlen(json), &back, serr, sizeof(serr)) == 0 &&
                s_doc_equal(doc, back),
            "the kept events pass the strict parser");
    if (src == 0)
        s_check(n_bad == 0 && s_doc_equal(doc, strict), "strict accepts: the same document");
    else
        s_check(n_bad > 0, "strict refuses an event: it is reported");
    free(json);
    sc_strv_free(bad, n_bad);
    sc_doc_destroy(&back);
    sc_doc_destroy(&strict);
    sc_doc_destroy(&doc);
}

static void s_approval(const char *buf, size_t size)
{
    char err[256] = "", **ids = NULL, **ids2 = NULL, *body = NULL;
    size_t n = 0, n2 = 0;
    int rc = sc_approval_parse(buf, size, &ids, &n, err, sizeof(err));

    if (rc < 0) {
        s_check(ids == NULL, "no ids on failure");
        s_check(err[0] != '\0', "a failure has a message");
        return;
    }
    s_check(n >= 1 && n <= SC_DOC_MAX_EVENTS, "id count");
    s_check(sc_approval_body((const char *const *)ids, n, &body) == 0, "body from parsed ids");
    s_check(sc_approval_parse(body, strlen(body), &ids2, &n2, err, sizeof(err)) == 0,
            "body parses");
    s_check(n2 == n, "same count");
    for (size_t i = 0; i < n; i++)
        s_check(strcmp(ids[i], ids2[i]) == 0, "same ids");
    free(body);
    sc_strv_free(ids, n);
    sc_strv_free(ids2, n2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;

    s_doc(buf, size);
    s_lenient(buf, size);
    s_approval(buf, size);
    return 0;
}
