/* sc_agent_doc: the agent's view of its IMDS document, fed with every poll's body.
 *
 * Pure logic (no I/O, no clock): bytes in, a verdict out. A body identical to the previous
 * one is recognised with memcmp and never parsed again; a body that parses and differs in
 * incarnation or content becomes the current document (a smaller incarnation than before —
 * IMDS restarted or was disabled — is a new document too, flagged as "backwards"); a body
 * that does not parse is refused and the last good document is kept.
 *
 * Bodies are parsed with sc_doc_parse_lenient: a malformed event is left out of the document
 * and its reason kept with it (sc_agent_doc_malformed), so one bad event never hides the
 * others. The reasons are part of the content: the same events with other reasons make a new
 * document. */
#ifndef SC_AGENT_DOC_H
#define SC_AGENT_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sc_event.h"

typedef struct sc_agent_doc sc_agent_doc_t;

typedef enum {
    SC_AGENT_DOC_SAME,      /* same document as before: nothing to do */
    SC_AGENT_DOC_NEW,       /* a new document (first one, higher incarnation or new content) */
    SC_AGENT_DOC_BACKWARDS, /* a new document whose incarnation went down (IMDS restarted) */
    SC_AGENT_DOC_BAD,       /* the body does not parse (first time for these bytes) */
    SC_AGENT_DOC_BAD_AGAIN, /* the same unparsable body as the previous poll (log it once) */
    SC_AGENT_DOC_VERDICT_MAX
} sc_agent_doc_verdict_t;

/* A tracker with no document yet. 0 or -ENOMEM. */
int sc_agent_doc_new(sc_agent_doc_t **ret_doc);
/* Frees; takes NULL; nulls *doc. */
void sc_agent_doc_destroy(sc_agent_doc_t **doc);
/* Feeds one poll's body (len bytes). *ret_verdict tells what it was; on SC_AGENT_DOC_BAD the
 * parser's reason is in err. 0 or -ENOMEM / -EINVAL (the tracker is then unchanged). */
int sc_agent_doc_feed(sc_agent_doc_t *doc, const char *body, size_t len,
                      sc_agent_doc_verdict_t *ret_verdict, char *err, size_t errlen);
/* The current (last good) document, borrowed; NULL before the first good body. */
const sc_doc_t *sc_agent_doc_current(const sc_agent_doc_t *doc);
/* The current incarnation, -1 before the first good body. */
int64_t sc_agent_doc_incarnation(const sc_agent_doc_t *doc);
/* The reasons of the events left out of the current document (borrowed, in document order;
 * sc_doc_parse_lenient's), their number in *ret_n (0: none). ret_new (may be NULL) gets, per
 * reason, whether it is new: not among the previous document's reasons, or that document had
 * another incarnation — what to log once per incarnation. */
const char *const *sc_agent_doc_malformed(const sc_agent_doc_t *doc, size_t *ret_n,
                                          const bool **ret_new);
/* How many bodies were parsed (not recognised by memcmp), for tests and the benchmark. */
uint64_t sc_agent_doc_parses(const sc_agent_doc_t *doc);
/* "same", "new", "backwards", "bad", "bad_again". */
const char *sc_agent_doc_verdict_name(sc_agent_doc_verdict_t v);

#endif
