/* sc_approver: approvals, one POST per decision round, with intent and answer in the store.
 *
 *   1. sc_approver_approve(ids): builds {"StartRequests":[...]} for every EventId of the round,
 *      appends an APPROVAL_INTENT decision (body, ids, by) to the log and applies it (so a
 *      crash after this point is visible), POSTs through the coordinator's own IMDS, then
 *      appends the APPROVAL_ANSWER (rc, HTTP status, message). Exactly one POST per call,
 *      never retried here: the caller retries with backoff (only on failure) in a later round.
 *   2. sc_approver_intent_via(): the same intent for a delegated approval (an agent POSTs it);
 *      sc_approver_record_answer() writes its answer when the agent's approve_result arrives.
 *   The coordinator's loop never makes the POST itself: sc_approver_post_async hands it to
 *      the approver's worker thread and its outcome comes back through an eventfd, taken in a
 *      later loop turn (a failing IMDS would otherwise stop the loop for its whole timeout).
 *   3. sc_approver_unanswered(): intents without an answer (after a crash), for the daemon to
 *      resolve: event Started or gone -> record "resolved" (done); else POST again (Azure
 *      answers 200 for an event already approved).
 * The approver does not log; outcomes come back in sc_approval_outcome_t. */
#ifndef SC_APPROVER_H
#define SC_APPROVER_H

#include "sc_store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sc_approver sc_approver_t;

typedef struct sc_approval_outcome {
    int64_t intent_index;   /* decision-log index of the intent (also the approval's id) */
    int rc;                 /* 0 when IMDS answered 2xx, else SC_E_* / -errno */
    long http_status;       /* HTTP status (0 when no answer) */
    int64_t retry_after_ms; /* IMDS's hint for a retry (failure only) */
    char message[256];      /* one line for logs */
} sc_approval_outcome_t;

/* A new approver POSTing through imds_url (base URL, e.g. http://127.0.0.1:PORT/vm_0) and
 * writing to store (borrowed: it must outlive the approver). self_name is recorded as "by".
 * 0, -EINVAL, -ENOMEM or the IMDS client's error. */
int sc_approver_new(sc_store_t *store, const char *imds_url, const char *self_name,
                    sc_approver_t **ret_approver);
/* Frees; takes NULL; nulls the pointer. */
void sc_approver_destroy(sc_approver_t **approver);

/* One approval POST for n EventIds (see above), decided in term for reason. Returns 0 when the
 * intent was logged (whatever the POST's outcome, which is in *ret_outcome), or an error when
 * not even the intent could be written (then nothing was POSTed). */
int sc_approver_approve(sc_approver_t *a, int64_t term, const char *const *ids, size_t n,
                        const char *reason, sc_approval_outcome_t *ret_outcome);
/* Logs the intent of an approval delegated to member via. *ret_index gets its index. */
int sc_approver_intent_via(sc_approver_t *a, int64_t term, const char *via, const char *const *ids,
                           size_t n, const char *reason, int64_t *ret_index);
/* Logs the answer of intent (delegated POST, or an intent resolved after a restart). */
int sc_approver_record_answer(sc_approver_t *a, int64_t term, int64_t intent, int rc,
                              long http_status, const char *message);
/* The pipeline's parts (the coordinator proposes the entries and POSTs once the intent is
 * committed, sc_coord_exec.c): an intent's data for n EventIds (delegated to via, NULL: the
 * leader POSTs), with its body; *ret_data is the caller's. 0, or -EINVAL for bad ids. */
int sc_approver_intent_data(const sc_approver_t *a, const char *via, const char *const *ids,
                            size_t n, json_object **ret_data);
/* An answer's data (the caller's): rc 0 approved; rc != 0 with an HTTP status a definite
 * failure; with none ("unknown": true) a POST that may still land. */
json_object *sc_approver_answer_data(int64_t intent, int rc, long http_status, const char *message);
/* One POST of body through our own IMDS; the outcome (intent_index 0) in *ret_outcome.
 * Blocks up to the IMDS client's timeout: a loop uses sc_approver_post_async. */
int sc_approver_post(sc_approver_t *a, const char *body, sc_approval_outcome_t *ret_outcome);
/* The same POST, in the order asked, its answer waited for by the approver's worker thread
 * (started on first use): returns at once. When the worker is idle the request is sent from
 * the caller's thread (non-blocking: sc_imds_post_begin), else the worker sends it in its
 * turn. Its outcome, with intent_index = intent, is taken later with sc_approver_take;
 * sc_approver_fd becomes readable when one waits (poll it). What is queued when the approver
 * is destroyed is not waited for (nor sent, unless it was begun). 0, -EINVAL, -ENOMEM or
 * pthread's error. */
int sc_approver_post_async(sc_approver_t *a, int64_t intent, const char *body);
/* The eventfd readable while an outcome waits (-1 for NULL). */
int sc_approver_fd(const sc_approver_t *a);
/* The oldest outcome not taken yet into *ret_outcome: true, or false when none waits. */
bool sc_approver_take(sc_approver_t *a, sc_approval_outcome_t *ret_outcome);
/* POSTs asked of the worker and not answered yet. */
size_t sc_approver_in_flight(sc_approver_t *a);
/* Intents without an answer, oldest first: a JSON array of {"id","event_ids":[...],"via"}.
 * *ret_json is the caller's. */
int sc_approver_unanswered(sc_approver_t *a, json_object **ret_json);
/* POSTs counted since creation (tests, metrics). */
uint64_t sc_approver_posts(const sc_approver_t *a);

#endif
