/* Fuzz target for sc_event: the IMDS document parser and the approval body parser.
 * Properties checked on every input:
 *  - sc_doc_parse either fails with a message or gives a document that serializes with
 *    sc_doc_to_json, parses back, and is equal to the first (round trip);
 *  - a document diffed against itself, or against its round trip, has no differences;
 *    diffed against nothing, everything is added;
 *  - sc_doc_dup gives an equal document;
 *  - sc_approval_parse either fails with a message or gives ids that sc_approval_body
 *    accepts and that parse back to the same ids. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

    free(json);
    sc_doc_destroy(&copy);
    sc_doc_destroy(&back);
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
    s_approval(buf, size);
    return 0;
}
