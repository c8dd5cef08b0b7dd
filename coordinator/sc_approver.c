#include "sc_approver.h"

#include "sc_error.h"
#include "sc_event.h"
#include "sc_imds.h"
#include "sc_time.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* A POST asked of the worker, then its outcome, in one FIFO each. */
typedef struct s_job {
    struct s_job *next;
    int64_t intent;
    char *body;
    bool begun; /* sent by the caller's thread (sc_imds_post_begin): the worker waits for it */
    sc_approval_outcome_t out;
} s_job_t;

struct sc_approver {
    sc_store_t *store;      /* borrowed */
    sc_imds_t *imds;        /* our own VM's IMDS (the worker's once it runs) */
    char *self;             /* our member name ("by") */
    _Atomic uint64_t posts; /* POSTs sent */
    pthread_mutex_t lock;   /* guards the queues and stopping */
    pthread_cond_t cond;    /* a job queued, or stopping */
    pthread_t thread;       /* the worker (started by the first sc_approver_post_async) */
    bool running, stopping; /* the worker exists; it is asked to end */
    s_job_t *todo, **todo_tail, *done, **done_tail;
    size_t n_todo, n_busy; /* queued; being POSTed (0 or 1) */
    int wake_fd;           /* eventfd: readable while an outcome waits */
};

int sc_approver_new(sc_store_t *store, const char *imds_url, const char *self_name,
                    sc_approver_t **ret_approver)
{
    sc_approver_t *self;
    sc_imds_opts_t o;
    int rc;

    if (!store || !imds_url || !self_name || !ret_approver)
        return -EINVAL;
    if (!(self = calloc(1, sizeof(*self))))
        return -ENOMEM;
    self->store = store;
    self->wake_fd = -1;
    self->todo_tail = &self->todo;
    self->done_tail = &self->done;
    sc_imds_opts_init(&o);
    o.base_url = imds_url;
    if (!(self->self = strdup(self_name))) {
        rc = -ENOMEM;
        goto fail;
    }
    if ((rc = sc_imds_new(&o, &self->imds)) < 0)
        goto fail;
    if ((self->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        rc = -errno;
        goto fail;
    }
    if ((rc = -pthread_mutex_init(&self->lock, NULL)) < 0)
        goto fail_fd;
    if ((rc = -pthread_cond_init(&self->cond, NULL)) < 0) {
        pthread_mutex_destroy(&self->lock);
        goto fail_fd;
    }
    *ret_approver = self;
    return 0;
fail_fd:
    close(self->wake_fd);
    self->wake_fd = -1;
fail:
    sc_imds_destroy(&self->imds);
    free(self->self);
    free(self);
    return rc;
}

static void s_jobs_free(s_job_t *j)
{
    while (j) {
        s_job_t *next = j->next;
        free(j->body);
        free(j);
        j = next;
    }
}

void sc_approver_destroy(sc_approver_t **approver)
{
    sc_approver_t *a;

    if (!approver || !(a = *approver))
        return;
    /* what is queued is not POSTed (its intent stays open: the next leader resolves it); the
     * POST under way ends within the IMDS client's timeout */
    pthread_mutex_lock(&a->lock);
    a->stopping = true;
    pthread_cond_signal(&a->cond);
    pthread_mutex_unlock(&a->lock);
    if (a->running)
        pthread_join(a->thread, NULL);
    s_jobs_free(a->todo);
    s_jobs_free(a->done);
    pthread_cond_destroy(&a->cond);
    pthread_mutex_destroy(&a->lock);
    if (a->wake_fd >= 0)
        close(a->wake_fd);
    sc_imds_destroy(&a->imds);
    free(a->self);
    free(a);
    *approver = NULL;
}

int sc_approver_intent_data(const sc_approver_t *a, const char *via, const char *const *ids,
                            size_t n, json_object **ret_data)
{
    json_object *d, *arr;
    char *body = NULL;
    int rc;

    if (!a || !ret_data)
        return -EINVAL;
    if ((rc = sc_approval_body(ids, n, &body)) < 0)
        return rc;
    d = json_object_new_object();
    arr = json_object_new_array();
    for (size_t i = 0; i < n; i++)
        json_object_array_add(arr, json_object_new_string(ids[i]));
    json_object_object_add(d, "event_ids", arr);
    json_object_object_add(d, "body", json_object_new_string(body));
    json_object_object_add(d, "via", via ? json_object_new_string(via) : NULL);
    json_object_object_add(d, "by", json_object_new_string(a->self));
    free(body);
    *ret_data = d;
    return 0;
}

json_object *sc_approver_answer_data(int64_t intent, int rc, long http_status, const char *message)
{
    json_object *d = json_object_new_object();

    json_object_object_add(d, "intent", json_object_new_int64(intent));
    json_object_object_add(d, "rc", json_object_new_int(rc));
    json_object_object_add(d, "http_status", json_object_new_int64(http_status));
    json_object_object_add(d, "message", json_object_new_string(message ? message : ""));
    /* no HTTP status: nobody can say whether the POST landed (a timeout, a delegate that never
     * answered, an intent a tenure left open): it may still land (sc_cstate's UNKNOWN) */
    if (rc != 0 && http_status <= 0)
        json_object_object_add(d, "unknown", json_object_new_boolean(1));
    return d;
}

/* The outcome of a POST that ended with rc and st. */
static void s_outcome(int rc, const sc_imds_status_t *st, sc_approval_outcome_t *ret_outcome)
{
    sc_approval_outcome_t out = {0};

    out.rc = rc;
    out.http_status = st->http_status;
    out.retry_after_ms = st->retry_after_ms;
    snprintf(out.message, sizeof(out.message), "%s",
             out.rc == 0 ? "approved" : (st->message[0] ? st->message : sc_strerror(out.rc)));
    *ret_outcome = out;
}

int sc_approver_post(sc_approver_t *a, const char *body, sc_approval_outcome_t *ret_outcome)
{
    sc_imds_status_t st = {0};
    int rc;

    if (!a || !body || !ret_outcome)
        return -EINVAL;
    atomic_fetch_add(&a->posts, 1);
    rc = sc_imds_post_events(a->imds, body, &st);
    s_outcome(rc, &st, ret_outcome);
    return 0;
}

static int s_intent(sc_approver_t *a, int64_t term, const char *via, const char *const *ids,
                    size_t n, const char *reason, char **ret_body, int64_t *ret_index)
{
    json_object *d = NULL, *b;
    int rc;

    if ((rc = sc_approver_intent_data(a, via, ids, n, &d)) < 0)
        return rc;
    rc = sc_store_decide_json(a->store, term, SC_DLOG_APPROVAL_INTENT, d, reason, sc_wall_ms(),
                              ret_index);
    if (rc >= 0 && ret_body && json_object_object_get_ex(d, "body", &b) &&
        !(*ret_body = strdup(json_object_get_string(b))))
        rc = -ENOMEM;
    json_object_put(d);
    return rc;
}

int sc_approver_record_answer(sc_approver_t *a, int64_t term, int64_t intent, int rc,
                              long http_status, const char *message)
{
    json_object *d;
    int r;

    if (!a)
        return -EINVAL;
    d = sc_approver_answer_data(intent, rc, http_status, message);
    r = sc_store_decide_json(a->store, term, SC_DLOG_APPROVAL_ANSWER, d,
                             rc == 0 ? "approval answered" : "approval failed", sc_wall_ms(), NULL);
    json_object_put(d);
    return r;
}

int sc_approver_approve(sc_approver_t *a, int64_t term, const char *const *ids, size_t n,
                        const char *reason, sc_approval_outcome_t *ret_outcome)
{
    sc_approval_outcome_t out = {0};
    int64_t intent = 0;
    char *body = NULL;
    int rc;

    if (!a || !ret_outcome)
        return -EINVAL;
    rc = s_intent(a, term, NULL, ids, n, reason, &body, &intent);
    if (rc < 0)
        return rc;
    sc_approver_post(a, body, &out);
    out.intent_index = intent;
    free(body);
    /* The answer is written even if the POST failed: the intent is then closed as failed and a
     * later round makes a new intent. If writing fails, the intent stays open and a restart
     * resolves it. */
    rc = sc_approver_record_answer(a, term, out.intent_index, out.rc, out.http_status, out.message);
    *ret_outcome = out;
    return rc < 0 ? rc : 0;
}

int sc_approver_intent_via(sc_approver_t *a, int64_t term, const char *via, const char *const *ids,
                           size_t n, const char *reason, int64_t *ret_index)
{
    if (!a || !via || !ret_index)
        return -EINVAL;
    return s_intent(a, term, via, ids, n, reason, NULL, ret_index);
}

int sc_approver_unanswered(sc_approver_t *a, json_object **ret_json)
{
    if (!a || !ret_json)
        return -EINVAL;
    return sc_store_approvals_unanswered(a->store, ret_json);
}

uint64_t sc_approver_posts(const sc_approver_t *a)
{
    return a ? atomic_load(&a->posts) : 0;
}

/* ---- POSTs off the caller's loop ---------------------------------------------------------- */

/* The worker: one POST at a time, in the order asked; each outcome queued and the eventfd
 * raised. sc_approver_post blocks only this thread (a failing IMDS: up to its timeout). */
static void *s_worker(void *arg)
{
    sc_approver_t *a = arg;
    const uint64_t one = 1;

    pthread_mutex_lock(&a->lock);
    for (;;) {
        s_job_t *j;
        while (!a->todo && !a->stopping)
            pthread_cond_wait(&a->cond, &a->lock);
        if (a->stopping)
            break;
        j = a->todo;
        if (!(a->todo = j->next))
            a->todo_tail = &a->todo;
        j->next = NULL;
        a->n_todo--;
        a->n_busy = 1;
        pthread_mutex_unlock(&a->lock);
        if (j->begun) {
            sc_imds_status_t st = {0};
            int rc = sc_imds_post_end(a->imds, &st);
            s_outcome(rc, &st, &j->out);
        } else {
            sc_approver_post(a, j->body, &j->out);
        }
        j->out.intent_index = j->intent;
        pthread_mutex_lock(&a->lock);
        a->n_busy = 0;
        *a->done_tail = j;
        a->done_tail = &j->next;
        /* a full counter (never: 2^64 - 2 outcomes unread) only delays the wake-up */
        if (write(a->wake_fd, &one, sizeof(one)) < 0) {
        }
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

int sc_approver_post_async(sc_approver_t *a, int64_t intent, const char *body)
{
    s_job_t *j;
    int rc = 0;

    if (!a || !body)
        return -EINVAL;
    if (!(j = calloc(1, sizeof(*j))) || !(j->body = strdup(body))) {
        free(j);
        return -ENOMEM;
    }
    j->intent = intent;
    pthread_mutex_lock(&a->lock);
    if (!a->running) {
        sigset_t all, old;
        /* signals stay with the caller's thread */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        rc = -pthread_create(&a->thread, NULL, s_worker, a);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        a->running = rc == 0;
    }
    /* the worker idle and nothing queued: the request leaves from here, now (a thread's
     * wake-up on a busy machine cost the approval ~1 ms: bench_coord_approve); the worker only
     * waits for the answer */
    if (rc == 0 && !a->todo && !a->n_busy && sc_imds_post_begin(a->imds, body) == 0) {
        j->begun = true;
        atomic_fetch_add(&a->posts, 1);
    }
    if (rc == 0) {
        *a->todo_tail = j;
        a->todo_tail = &j->next;
        a->n_todo++;
        pthread_cond_signal(&a->cond);
    }
    pthread_mutex_unlock(&a->lock);
    if (rc < 0)
        s_jobs_free(j);
    return rc;
}

int sc_approver_fd(const sc_approver_t *a)
{
    return a ? a->wake_fd : -1;
}

bool sc_approver_take(sc_approver_t *a, sc_approval_outcome_t *ret_outcome)
{
    s_job_t *j;
    uint64_t n;

    if (!a || !ret_outcome)
        return false;
    pthread_mutex_lock(&a->lock);
    if ((j = a->done) && !(a->done = j->next))
        a->done_tail = &a->done;
    if (!a->done && read(a->wake_fd, &n, sizeof(n)) < 0) {
        /* EAGAIN: nothing was signalled since the last read */
    }
    pthread_mutex_unlock(&a->lock);
    if (!j)
        return false;
    *ret_outcome = j->out;
    free(j->body);
    free(j);
    return true;
}

size_t sc_approver_in_flight(sc_approver_t *a)
{
    size_t n;

    if (!a)
        return 0;
    pthread_mutex_lock(&a->lock);
    n = a->n_todo + a->n_busy;
    pthread_mutex_unlock(&a->lock);
    return n;
}
