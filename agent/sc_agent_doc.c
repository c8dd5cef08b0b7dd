/* sc_agent_doc: the agent's current IMDS document (see sc_agent_doc.h). */
#include "sc_agent_doc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct sc_agent_doc {
    sc_doc_t *doc;      /* last good document, NULL before the first */
    char **malformed;   /* reasons of the events left out of doc (owned), NULL: none */
    size_t n_malformed; /* entries in malformed */
    bool *fresh;        /* per reason: not in the previous document of that incarnation */
    char *body;         /* bytes of the last body received (good or bad), for memcmp */
    size_t body_len;    /* length of body */
    bool body_bad;      /* body is the last body and did not parse */
    uint64_t parses;    /* bodies handed to sc_doc_parse */
};

int sc_agent_doc_new(sc_agent_doc_t **ret_doc)
{
    sc_agent_doc_t *self = calloc(1, sizeof(*self));

    if (!self)
        return -ENOMEM;
    *ret_doc = self;
    return 0;
}

void sc_agent_doc_destroy(sc_agent_doc_t **doc)
{
    if (!doc || !*doc)
        return;
    sc_doc_destroy(&(*doc)->doc);
    sc_strv_free((*doc)->malformed, (*doc)->n_malformed);
    free((*doc)->fresh);
    free((*doc)->body);
    free(*doc);
    *doc = NULL;
}

static bool s_same_events(const sc_doc_t *a, const sc_doc_t *b)
{
    if (a->n_events != b->n_events)
        return false;
    for (size_t i = 0; i < a->n_events; i++)
        if (!sc_event_equal(&a->events[i], &b->events[i]))
            return false;
    return true;
}

static bool s_has(char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

static bool s_same_malformed(const sc_agent_doc_t *self, char *const *bad, size_t n_bad)
{
    if (n_bad != self->n_malformed)
        return false;
    for (size_t i = 0; i < n_bad; i++)
        if (strcmp(bad[i], self->malformed[i]) != 0)
            return false;
    return true;
}

/* Keeps a copy of the body bytes (reusing the buffer when it is large enough). */
static int s_keep_body(sc_agent_doc_t *self, const char *body, size_t len)
{
    if (len > self->body_len || !self->body) {
        char *nb = realloc(self->body, len ? len : 1);
        if (!nb)
            return -ENOMEM;
        self->body = nb;
    }
    memcpy(self->body, body, len);
    self->body_len = len;
    return 0;
}

int sc_agent_doc_feed(sc_agent_doc_t *self, const char *body, size_t len,
                      sc_agent_doc_verdict_t *ret_verdict, char *err, size_t errlen)
{
    sc_doc_t *nd = NULL;
    sc_agent_doc_verdict_t v;
    char **bad = NULL;
    size_t n_bad = 0;
    bool *fresh = NULL;
    int rc;

    if (!self || (!body && len) || !ret_verdict)
        return -EINVAL;
    /* The common case, once per second for days: the same bytes as last time. */
    if (self->body && len == self->body_len && memcmp(body, self->body, len) == 0) {
        *ret_verdict = self->body_bad ? SC_AGENT_DOC_BAD_AGAIN : SC_AGENT_DOC_SAME;
        return 0;
    }
    self->parses++;
    rc = sc_doc_parse_lenient(body ? body : "", len, &nd, &bad, &n_bad, err, errlen);
    if (rc == -ENOMEM)
        return rc;
    if (s_keep_body(self, body, len) < 0 || (n_bad && !(fresh = calloc(n_bad, sizeof(*fresh))))) {
        sc_doc_destroy(&nd);
        sc_strv_free(bad, n_bad);
        return -ENOMEM;
    }
    if (rc != 0) {
        self->body_bad = true;
        *ret_verdict = SC_AGENT_DOC_BAD;
        return 0;
    }
    self->body_bad = false;
    if (!self->doc)
        v = SC_AGENT_DOC_NEW;
    else if (nd->incarnation < self->doc->incarnation)
        v = SC_AGENT_DOC_BACKWARDS;
    else if (nd->incarnation > self->doc->incarnation || !s_same_events(self->doc, nd) ||
             !s_same_malformed(self, bad, n_bad))
        v = SC_AGENT_DOC_NEW;
    else
        v = SC_AGENT_DOC_SAME; /* other bytes (spacing, order of keys), same document */
    if (v != SC_AGENT_DOC_SAME) {
        bool same_inc = self->doc && self->doc->incarnation == nd->incarnation;

        for (size_t i = 0; i < n_bad; i++)
            fresh[i] = !same_inc || !s_has(self->malformed, self->n_malformed, bad[i]);
        sc_doc_destroy(&self->doc);
        sc_strv_free(self->malformed, self->n_malformed);
        free(self->fresh);
        self->doc = nd;
        self->malformed = bad;
        self->n_malformed = n_bad;
        self->fresh = fresh;
    } else {
        sc_doc_destroy(&nd);
        sc_strv_free(bad, n_bad);
        free(fresh);
    }
    *ret_verdict = v;
    return 0;
}

const sc_doc_t *sc_agent_doc_current(const sc_agent_doc_t *self)
{
    return self ? self->doc : NULL;
}

int64_t sc_agent_doc_incarnation(const sc_agent_doc_t *self)
{
    return self && self->doc ? self->doc->incarnation : -1;
}

const char *const *sc_agent_doc_malformed(const sc_agent_doc_t *self, size_t *ret_n,
                                          const bool **ret_new)
{
    *ret_n = self ? self->n_malformed : 0;
    if (ret_new)
        *ret_new = self ? self->fresh : NULL;
    return self ? (const char *const *)self->malformed : NULL;
}

uint64_t sc_agent_doc_parses(const sc_agent_doc_t *self)
{
    return self ? self->parses : 0;
}

const char *sc_agent_doc_verdict_name(sc_agent_doc_verdict_t v)
{
    static const char *const names[] = {"same", "new", "backwards", "bad", "bad_again"};
    return (unsigned)v < SC_AGENT_DOC_VERDICT_MAX ? names[v] : "?";
}
