/* sc_agent: the agent's logic (see sc_agent.h). */
#include "sc_agent.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "sc_agent_doc.h"
#include "sc_agent_state.h"
#include "sc_backoff.h"
#include "sc_curve.h"
#include "sc_error.h"
#include "sc_hook.h"
#include "sc_identity.h"
#include "sc_log.h"
#include "sc_net.h"
#include "sc_time.h"
#include "sc_voters.h"

#define S_QUEUE_MAX 64       /* hook jobs waiting */
#define S_NOTED_MAX 64       /* events remembered as "already logged" by the safety net */
#define S_RECENT_MS 86400000 /* runs re-reported to a coordinator that (re)connects */
#define S_RECENT_MAX 64      /* at most this many runs re-reported */
#define S_SNDHWM 256         /* messages queued per coordinator */

typedef struct s_conn {
    sc_member_spec_t m; /* the coordinator's member name and endpoint */
    void *sock;         /* DEALER, CURVE client */
    void *mon;          /* PAIR reading the socket's monitor events */
    bool up;            /* handshake succeeded and not disconnected since */
    int last_fail;      /* last handshake failure logged (monitor event), 0 none */
    int fd, mon_fd;     /* their ZMQ_FD: readable when something may have come */
    bool check;         /* the DEALER must be looked at (ZMQ_EVENTS) before we sleep */
    bool mon_check;     /* and the monitor */
} s_conn_t;

typedef struct s_job {
    char event[SC_EVENT_ID_MAX + 1]; /* EventId as ordered */
    sc_msg_phase_t phase;            /* prepare / recover */
    int attempt;                     /* drain attempt (order.attempt), 1.. */
    sc_msg_origin_t origin;          /* order / standalone */
    uint64_t term;                   /* order's term, 0 standalone */
    sc_doc_t *event_doc;             /* one-event document for the env, owned, may be NULL */
    bool rehearsal;                  /* a rehearsal's order: SCHEDCOORD_REHEARSAL=1 */
    int64_t until_ms;                /* a prepare: not started after this unix ms (0: none) */
} s_job_t;

struct sc_agent {
    char name[SC_NAME_MAX + 1];           /* this VM's member name */
    int fault_domain;                     /* from compute metadata */
    int update_domain;                    /* from compute metadata */
    char boot_id[SC_MSG_BOOT_ID_MAX + 1]; /* random per process start */
    char *prepare_hook;                   /* executable paths */
    char *recover_hook;
    int64_t hook_timeout_ms;     /* --hook-timeout */
    int64_t poll_ms;             /* --poll-interval */
    int64_t hb_ms;               /* --heartbeat-interval */
    int64_t standalone_after_ms; /* --standalone-after */
    int64_t margin_ms;           /* --safety-margin */
    bool standalone_approve;     /* --standalone-approve */
    double freeze_threshold_s;   /* --freeze-threshold-s (the coordinator's policy key) */
    bool manual_imds;            /* tests feed bodies */
    sc_agent_send_fn send;       /* tests: capture */
    void *send_data;

    sc_imds_t *imds;         /* IMDS client */
    sc_agent_doc_t *doc;     /* current document */
    int64_t doc_read_ms;     /* wall ms (unix) it was read from IMDS: its observed_at_ms */
    sc_agent_state_t *state; /* agent.db */
    void *zctx;              /* ZeroMQ context (NULL with send) */
    s_conn_t *conns;         /* one per member */
    size_t n_conns;          /* entries in conns */
    struct pollfd *pfds;     /* 2 per conn + hook fd */
    uint64_t seq;            /* last seq sent */

    int64_t next_poll;    /* monotonic ms of the next IMDS GET */
    sc_backoff_t backoff; /* IMDS retry delays */
    int last_imds_rc;     /* last poll outcome (logged on change) */
    long last_imds_http;  /* its HTTP status */
    int64_t next_hb;      /* monotonic ms of the next heartbeat */

    int64_t leader_seen;          /* monotonic ms of the last valid leader/order message */
    int64_t imds_good_ms;         /* monotonic ms of the last valid IMDS document, 0 none */
    bool imds_failing;            /* the latest poll gave no valid document */
    char leader[SC_NAME_MAX + 1]; /* leader of max_term ("" unknown) */
    uint64_t fence_index;         /* newest commit index of max_term's leader (the fence) */
    uint64_t fence_saved;         /* the one in the state (orders' and approve_via's: a leader
                                     message's index is kept in memory only) */
    char members_hash[SC_MEMBERS_DIGEST_LEN + 1]; /* sc_members_digest of our --members */
    char drift_hash[SC_MSG_HASH_MAX + 1];         /* the leader's differing members_hash, logged */
    bool standalone;                              /* safety net armed (logged on change) */
    bool handover_pending; /* standalone runs may be open (not handed over / recovered) */
    int64_t next_net;      /* monotonic ms of the next safety-net check */
    char noted[S_NOTED_MAX][SC_EVENT_ID_MAX + 1]; /* events the safety net logged about */
    size_t n_noted;                               /* ring position */

    sc_hook_t *hook;            /* running hook or NULL */
    s_job_t cur;                /* its job */
    s_job_t queue[S_QUEUE_MAX]; /* waiting jobs */
    size_t n_queue;

    sc_agent_stats_t stats;  /* counters */
    sc_sdnotify_t *sdnotify; /* systemd's notify socket (borrowed), or NULL */
};

/* ---------------------------------------------------------------- sending */

static void s_send_to(sc_agent_t *self, int member, sc_msg_t *msg)
{
    char *buf = NULL;
    size_t len = 0;
    int rc;

    if (self->send) {
        self->send(self->send_data, member, msg);
        return;
    }
    rc = sc_msg_encode(msg, &buf, &len);
    if (rc) {
        char why[256];
        sc_msg_validate(msg, why, sizeof(why));
        sc_log_err("cannot encode message", "type=%s rc=%s why=\"%s\"", sc_msg_type_name(msg->type),
                   sc_errname(rc), sc_log_q(why));
        return;
    }
    for (size_t i = 0; i < self->n_conns; i++) {
        if (member >= 0 && (size_t)member != i)
            continue;
        if (!self->conns[i].up || zmq_send(self->conns[i].sock, buf, len, ZMQ_DONTWAIT) < 0)
            self->stats.send_dropped++;
        self->conns[i].check = true; /* a send may have consumed its fd's signal */
    }
    free(buf);
}

/* A new message from us: our name, the newest term we know, the next seq. NULL on ENOMEM. */
static sc_msg_t *s_msg(sc_agent_t *self, sc_msg_type_t type)
{
    sc_msg_t *msg = NULL;

    if (sc_msg_new(type, self->name, sc_agent_state_max_term(self->state), ++self->seq, &msg))
        return NULL;
    return msg;
}

static void s_send_hello(sc_agent_t *self, int member)
{
    sc_msg_t *msg = s_msg(self, SC_MSG_HELLO);

    if (!msg)
        return;
    snprintf(msg->hello.name, sizeof(msg->hello.name), "%s", self->name);
    msg->hello.fault_domain = self->fault_domain;
    msg->hello.update_domain = self->update_domain;
    snprintf(msg->hello.agent_version, sizeof(msg->hello.agent_version), "%s", SC_VERSION);
    sc_msg_add_capability(msg, SC_CAP_HOOKS);
    sc_msg_add_capability(msg, SC_CAP_APPROVE_VIA);
    sc_msg_add_capability(msg, SC_CAP_STANDALONE);
    sc_msg_add_capability(msg, SC_CAP_ORDER_UNTIL);
    snprintf(msg->hello.boot_id, sizeof(msg->hello.boot_id), "%s", self->boot_id);
    msg->hello.incarnation = sc_agent_doc_incarnation(self->doc);
    s_send_to(self, member, msg);
    sc_msg_destroy(&msg);
}

static void s_send_document(sc_agent_t *self, int member)
{
    const sc_doc_t *cur = sc_agent_doc_current(self->doc);
    const char *const *bad;
    size_t n_bad = 0;
    sc_msg_t *msg;

    if (!cur || !(msg = s_msg(self, SC_MSG_DOCUMENT)))
        return;
    /* the first SC_MSG_MAX_MALFORMED reasons (our log has them all) */
    bad = sc_agent_doc_malformed(self->doc, &n_bad, NULL);
    for (size_t i = 0; i < n_bad && i < SC_MSG_MAX_MALFORMED; i++)
        sc_msg_add_malformed(msg, bad[i]);
    if (sc_doc_dup(cur, &msg->document.document) == 0) {
        msg->document.incarnation = cur->incarnation;
        /* when it was read, not now: a re-send (a coordinator reconnects or asks again) while
         * our IMDS fails must not pass an old document off as a fresh one */
        msg->document.observed_at_ms = self->doc_read_ms;
        s_send_to(self, member, msg);
    }
    sc_msg_destroy(&msg);
}

static void s_send_heartbeat(sc_agent_t *self)
{
    sc_msg_t *msg = s_msg(self, SC_MSG_HEARTBEAT);

    if (!msg)
        return;
    msg->heartbeat.incarnation = sc_agent_doc_incarnation(self->doc);
    msg->heartbeat.running_hooks = self->hook ? 1 : 0;
    msg->heartbeat.standalone = self->standalone;
    msg->heartbeat.imds_down_ms = !self->imds_good_ms  ? -1
                                  : self->imds_failing ? sc_mono_ms() - self->imds_good_ms
                                                       : 0;
    s_send_to(self, -1, msg);
    sc_msg_destroy(&msg);
}

/* hook_progress of job (its event, phase, attempt, origin and term): st, exit status, detail. */
static void s_send_progress(sc_agent_t *self, int member, const s_job_t *job,
                            sc_msg_hook_state_t st, int exit_status, const char *detail)
{
    sc_msg_t *msg = s_msg(self, SC_MSG_HOOK_PROGRESS);

    if (!msg)
        return;
    snprintf(msg->hook_progress.event, sizeof(msg->hook_progress.event), "%s", job->event);
    msg->hook_progress.phase = job->phase;
    msg->hook_progress.attempt = job->attempt;
    msg->hook_progress.state = st;
    msg->hook_progress.exit_status = exit_status;
    msg->hook_progress.origin = job->origin;
    msg->hook_progress.order_term = job->term;
    if (detail && *detail)
        sc_msg_set_text(&msg->hook_progress.detail, detail, strlen(detail), true);
    s_send_to(self, member, msg);
    sc_msg_destroy(&msg);
}

static void s_send_run(sc_agent_t *self, int member, const sc_agent_run_t *r)
{
    s_job_t j = {.phase = r->phase, .attempt = r->attempt, .origin = r->origin, .term = r->term};

    snprintf(j.event, sizeof(j.event), "%s", r->event);
    s_send_progress(self, member, &j, r->state, r->exit_status, r->detail);
}

static void s_send_nack(sc_agent_t *self, int member, uint64_t ref_seq, const char *reason)
{
    sc_msg_t *msg = s_msg(self, SC_MSG_NACK);

    if (!msg)
        return;
    msg->nack.ref_seq = ref_seq;
    sc_msg_set_text(&msg->nack.reason, reason, strlen(reason), false);
    s_send_to(self, member, msg);
    sc_msg_destroy(&msg);
}

/* Re-reports the recent runs (a coordinator (re)connected and knows nothing). */
static void s_send_recent_runs(sc_agent_t *self, int member)
{
    sc_agent_run_t *runs = NULL;
    size_t n = 0, first;
    int64_t now = sc_wall_ms();

    if (sc_agent_state_list_runs(self->state, &runs, &n) != 0)
        return;
    first = n > S_RECENT_MAX ? n - S_RECENT_MAX : 0;
    for (size_t i = first; i < n; i++) {
        int64_t t = runs[i].ended_ms ? runs[i].ended_ms : runs[i].started_ms;
        if (now - t <= S_RECENT_MS)
            s_send_run(self, member, &runs[i]);
    }
    free(runs);
}

/* ---------------------------------------------------------------- hooks */

static void s_job_clear(s_job_t *job)
{
    sc_doc_destroy(&job->event_doc);
    memset(job, 0, sizeof(*job));
}

/* A copy of doc reduced to event_id's event, or NULL (not in doc, or ENOMEM). */
static sc_doc_t *s_event_doc(const sc_doc_t *doc, const char *event_id)
{
    const sc_event_t *ev = sc_doc_find(doc, event_id);
    sc_doc_t one = {.incarnation = doc->incarnation, .n_events = 1};
    sc_doc_t *copy = NULL;

    if (!ev)
        return NULL;
    one.events = doc->events + (ev - doc->events); /* doc's own (non-const) element */
    return sc_doc_dup(&one, &copy) == 0 ? copy : NULL;
}

static bool s_job_is(const s_job_t *j, const char *event, sc_msg_phase_t phase, int attempt)
{
    return j->phase == phase && (!attempt || j->attempt == attempt) &&
           sc_event_id_equal(j->event, event);
}

/* Whether a job of (event, phase, attempt) runs or is queued; attempt 0: any attempt. */
static bool s_job_known(const sc_agent_t *self, const char *event, sc_msg_phase_t phase,
                        int attempt)
{
    if (self->hook && s_job_is(&self->cur, event, phase, attempt))
        return true;
    for (size_t i = 0; i < self->n_queue; i++)
        if (s_job_is(&self->queue[i], event, phase, attempt))
            return true;
    return false;
}

/* The newest attempt the agent has run, runs or has queued for event; 0 when none. */
static int s_newest_attempt(sc_agent_t *self, const char *event)
{
    int newest = 0;

    if (sc_agent_state_newest_attempt(self->state, event, &newest) != 0)
        newest = 0;
    if (self->hook && sc_event_id_equal(self->cur.event, event) && self->cur.attempt > newest)
        newest = self->cur.attempt;
    for (size_t i = 0; i < self->n_queue; i++)
        if (sc_event_id_equal(self->queue[i].event, event) && self->queue[i].attempt > newest)
            newest = self->queue[i].attempt;
    return newest;
}

/* Queues a job; takes event_doc. -ENOSPC when the queue is full. */
static int s_enqueue(sc_agent_t *self, const char *event, sc_msg_phase_t phase, int attempt,
                     sc_msg_origin_t origin, uint64_t term, sc_doc_t **event_doc)
{
    s_job_t *j;

    if (self->n_queue >= S_QUEUE_MAX)
        return -ENOSPC;
    j = &self->queue[self->n_queue++];
    memset(j, 0, sizeof(*j));
    snprintf(j->event, sizeof(j->event), "%s", event);
    j->phase = phase;
    j->attempt = attempt;
    j->origin = origin;
    j->term = term;
    if (event_doc) {
        j->event_doc = *event_doc;
        *event_doc = NULL;
    }
    return 0;
}

/* Builds the hook's environment (array of strings into buf) and stdin JSON. */
typedef struct s_env {
    char vars[13][SC_EVENT_MAX_STRING + 64]; /* NAME=VALUE */
    const char *env[14];                     /* NULL-terminated */
} s_env_t;

/* The hook's stdin: the IMDS event object ({} when unknown) and, for a recover, our own
 * lowercase key "prepared" (IMDS keys are capitalised). prepared: 1 / 0, -1 for a prepare.
 * NULL when out of memory. */
static char *s_event_stdin(const sc_doc_t *one, int prepared)
{
    char *out = NULL;
    json_object *ev = NULL;

    if (one && one->n_events == 1 && sc_event_to_json(&one->events[0], &ev) < 0)
        ev = NULL;
    if (!ev)
        ev = json_object_new_object();
    if (ev && prepared >= 0)
        json_object_object_add(ev, "prepared", json_object_new_boolean(prepared));
    if (ev)
        out = strdup(json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN));
    json_object_put(ev);
    return out;
}

static void s_env_build(s_env_t *e, const sc_agent_t *self, const s_job_t *job, int prepared)
{
    const sc_event_t *ev =
        job->event_doc && job->event_doc->n_events ? job->event_doc->events : NULL;
    char res[SC_EVENT_MAX_STRING] = "";
    char dur[32] = "";
    size_t k = 0, used = 0;

    if (ev) {
        for (size_t i = 0; i < ev->n_resources; i++) {
            int n =
                snprintf(res + used, sizeof(res) - used, "%s%s", i ? "," : "", ev->resources[i]);
            if (n < 0 || (size_t)n >= sizeof(res) - used)
                break; /* cut at a whole name: bounded environment */
            used += (size_t)n;
        }
        if (ev->has_duration)
            snprintf(dur, sizeof(dur), "%" PRId64, ev->duration_s);
    }
#define S_VAR(...) snprintf(e->vars[k++], sizeof(e->vars[0]), __VA_ARGS__)
    S_VAR("SCHEDCOORD_PHASE=%s", sc_msg_phase_name(job->phase));
    S_VAR("SCHEDCOORD_EVENT_ID=%s", ev ? ev->id : job->event);
    S_VAR("SCHEDCOORD_EVENT_TYPE=%s", ev && ev->type_raw ? ev->type_raw : "");
    S_VAR("SCHEDCOORD_EVENT_SOURCE=%s", ev && ev->source_raw ? ev->source_raw : "");
    S_VAR("SCHEDCOORD_NOT_BEFORE=%s", ev && ev->not_before_raw ? ev->not_before_raw : "");
    S_VAR("SCHEDCOORD_DURATION=%s", dur);
    S_VAR("SCHEDCOORD_RESOURCES=%s", res);
    S_VAR("SCHEDCOORD_VM=%s", self->name);
    S_VAR("SCHEDCOORD_ORIGIN=%s", sc_msg_origin_name(job->origin));
    S_VAR("SCHEDCOORD_TERM=%" PRIu64, job->term);
    S_VAR("SCHEDCOORD_ATTEMPT=%d", job->attempt);
    if (prepared >= 0)
        S_VAR("SCHEDCOORD_PREPARED=%d", prepared);
    if (job->rehearsal) /* nothing is POSTed: a hook may skip what cannot be undone */
        S_VAR("SCHEDCOORD_REHEARSAL=1");
#undef S_VAR
    for (size_t i = 0; i < k; i++)
        e->env[i] = e->vars[i];
    e->env[k] = NULL;
}

/* Whether job, a prepare of an order, is too late to start (order.until_ms passed: Azure may
 * have taken another domain down undrained since the leader decided); then it is answered
 * "refused", not recorded as run: the leader sends it again when it may go. Checked where a job
 * starts, so an order that arrived late and one that waited in the queue past it are alike. */
static bool s_job_late(sc_agent_t *self, const s_job_t *job)
{
    int64_t now = sc_wall_ms();
    char why[160];

    if (job->phase != SC_MSG_PHASE_PREPARE || !job->until_ms || now < job->until_ms)
        return false;
    snprintf(why, sizeof(why),
             "too late: the order may start until %" PRId64 " ms (unix), now %" PRId64
             ": another domain may be down undrained",
             job->until_ms, now);
    self->stats.late_orders++;
    sc_log_warn("order refused", "event=%s attempt=%d why=\"%s\"", job->event, job->attempt,
                sc_log_q(why));
    s_send_progress(self, -1, job, SC_MSG_HOOK_REFUSED, -1, why);
    return true;
}

/* Starts the next queued job, if any and no hook runs. Returns 0 or a fatal SC_E_DB. */
static int s_start_next(sc_agent_t *self)
{
    while (!self->hook && self->n_queue > 0) {
        s_job_t job = self->queue[0];
        sc_agent_run_t run;
        char *ev_json = NULL, *stdin_json;
        s_env_t *env;
        sc_hook_spec_t spec = {0};
        int prepared = -1; /* a recover: whether a prepare ran in its attempt (any outcome) */
        int rc;

        memmove(&self->queue[0], &self->queue[1], (self->n_queue - 1) * sizeof(job));
        self->n_queue--;
        /* Never the same phase of the same attempt twice, whatever queued it. */
        if (sc_agent_state_get_run(self->state, job.event, job.phase, job.attempt, &run) == 0) {
            s_send_run(self, -1, &run);
            s_job_clear(&job);
            continue;
        }
        if (s_job_late(self, &job)) {
            s_job_clear(&job);
            continue;
        }
        if (job.phase == SC_MSG_PHASE_RECOVER)
            prepared = sc_agent_state_get_run(self->state, job.event, SC_MSG_PHASE_PREPARE,
                                              job.attempt, &run) == 0;
        if (job.event_doc)
            sc_doc_to_json(job.event_doc, &ev_json);
        rc = sc_agent_state_run_start(self->state, job.event, job.phase, job.attempt, job.origin,
                                      job.term, ev_json);
        free(ev_json);
        if (rc) {
            sc_log_err("cannot record hook start: not running it", "event=%s phase=%s rc=%s",
                       job.event, sc_msg_phase_name(job.phase), sc_errname(rc));
            s_job_clear(&job);
            return rc == -EEXIST ? 0 : SC_E_DB;
        }
        env = malloc(sizeof(*env));
        stdin_json = s_event_stdin(job.event_doc, prepared);
        if (!env || !stdin_json) {
            rc = -ENOMEM;
        } else {
            s_env_build(env, self, &job, prepared);
            spec.path = job.phase == SC_MSG_PHASE_PREPARE ? self->prepare_hook : self->recover_hook;
            spec.env = env->env;
            spec.stdin_data = stdin_json;
            spec.stdin_len = strlen(stdin_json);
            spec.timeout_ms = self->hook_timeout_ms;
            rc = sc_hook_start(&spec, &self->hook);
        }
        free(env);
        free(stdin_json);
        if (rc) {
            char why[256];
            snprintf(why, sizeof(why), "cannot start %s: %s", spec.path ? spec.path : "hook",
                     sc_strerror(rc));
            sc_log_err("hook did not start", "event=%s phase=%s origin=%s why=\"%s\"", job.event,
                       sc_msg_phase_name(job.phase), sc_msg_origin_name(job.origin), sc_log_q(why));
            sc_agent_state_run_end(self->state, job.event, job.phase, job.attempt,
                                   SC_MSG_HOOK_FAILED, -1, why);
            s_send_progress(self, -1, &job, SC_MSG_HOOK_FAILED, -1, why);
            s_job_clear(&job);
            continue;
        }
        self->cur = job;
        self->stats.hooks_started++;
        if (job.origin == SC_MSG_ORIGIN_STANDALONE) {
            self->stats.standalone_runs++;
            self->handover_pending = true;
        }
        sc_log_notice(
            "hook started", "event=%s phase=%s attempt=%d origin=%s term=%" PRIu64 " pid=%d%s",
            job.event, sc_msg_phase_name(job.phase), job.attempt, sc_msg_origin_name(job.origin),
            job.term, (int)sc_hook_pid(self->hook),
            prepared == 0 ? " prepared=0 why=\"impacted without a prepare: re-checked\"" : "");
        s_send_progress(self, -1, &job, SC_MSG_HOOK_STARTED, -1, NULL);
    }
    return 0;
}

static void s_standalone_approve(sc_agent_t *self, const char *event);

/* Checks the running hook; records and reports its end. */
static void s_poll_hook(sc_agent_t *self)
{
    sc_hook_result_t r, *res = &r; /* on the stack: this runs at every step while a hook runs */
    sc_msg_hook_state_t st;
    int rc;

    if (!self->hook || (rc = sc_hook_poll(self->hook, res)) == -EAGAIN)
        return;
    if (rc != 0) {
        *res = (sc_hook_result_t){.rc = rc, .exit_status = -1}; /* every field logged is set */
        snprintf(res->output_tail, sizeof(res->output_tail), "hook runner: %s", sc_strerror(rc));
    }
    st = res->rc == 0     ? SC_MSG_HOOK_DONE
         : res->timed_out ? SC_MSG_HOOK_TIMED_OUT
                          : SC_MSG_HOOK_FAILED;
    sc_log(st == SC_MSG_HOOK_DONE ? SC_LOG_NOTICE : SC_LOG_WARN, "hook finished",
           "event=%s phase=%s origin=%s state=%s exit=%d signal=%d ms=%" PRId64, self->cur.event,
           sc_msg_phase_name(self->cur.phase), sc_msg_origin_name(self->cur.origin),
           sc_msg_hook_state_name(st), res->exit_status, res->term_signal, res->duration_ms);
    rc = sc_agent_state_run_end(self->state, self->cur.event, self->cur.phase, self->cur.attempt,
                                st, res->exit_status, res->output_tail);
    if (rc)
        sc_log_err("cannot record hook end", "event=%s rc=%s", self->cur.event, sc_errname(rc));
    s_send_progress(self, -1, &self->cur, st, res->exit_status, res->output_tail);
    sc_hook_destroy(&self->hook);
    if (st == SC_MSG_HOOK_DONE && self->cur.origin == SC_MSG_ORIGIN_STANDALONE &&
        self->cur.phase == SC_MSG_PHASE_PREPARE && self->standalone_approve && self->standalone)
        s_standalone_approve(self, self->cur.event);
    s_job_clear(&self->cur);
}

/* ---------------------------------------------------------------- IMDS */

static void s_post_approval(sc_agent_t *self, const char *const *ids, size_t n,
                            sc_imds_status_t *st)
{
    char *body = NULL;
    int rc = sc_approval_body(ids, n, &body);

    if (rc) {
        memset(st, 0, sizeof(*st));
        st->rc = rc;
        snprintf(st->message, sizeof(st->message), "cannot build approval: %s", sc_strerror(rc));
        return;
    }
    sc_imds_post_events(self->imds, body, st);
    free(body);
}

static void s_standalone_approve(sc_agent_t *self, const char *event)
{
    const sc_event_t *ev = sc_doc_find(sc_agent_doc_current(self->doc), event);
    sc_imds_status_t st;

    if (!ev || ev->status != SC_EVENT_SCHEDULED) {
        if (ev && !sc_event_is_started(ev))
            sc_log_warn("standalone safety net: not approving an event whose status is unknown",
                        "event=%s status=\"%s\"", event,
                        sc_log_q(ev->status_raw ? ev->status_raw : ""));
        return;
    }
    sc_log_warn("standalone safety net: approving the event ourselves (--standalone-approve)",
                "event=%s", event);
    s_post_approval(self, &event, 1, &st);
    sc_log(st.rc ? SC_LOG_ERR : SC_LOG_NOTICE, "standalone approval posted",
           "event=%s http=%ld rc=%s why=\"%s\"", event, st.http_status, sc_errname(st.rc),
           sc_log_q(st.message));
}

/* Logs the malformed events left out of the new document, each once per incarnation. */
static void s_log_malformed(sc_agent_t *self, int64_t incarnation)
{
    const bool *fresh = NULL;
    size_t n = 0;
    const char *const *bad = sc_agent_doc_malformed(self->doc, &n, &fresh);

    for (size_t i = 0; i < n; i++) {
        if (!fresh[i])
            continue;
        self->stats.malformed_events++;
        sc_log_warn("IMDS event malformed: left out, the other events kept",
                    "incarnation=%" PRId64 " why=\"%s\"", incarnation, sc_log_q(bad[i]));
    }
}

int sc_agent_feed_body(sc_agent_t *self, const char *body, size_t len)
{
    sc_agent_doc_verdict_t v;
    char err[512] = "";
    int rc = sc_agent_doc_feed(self->doc, body, len, &v, err, sizeof(err));
    const sc_doc_t *cur;

    if (rc)
        return rc;
    self->imds_failing = v == SC_AGENT_DOC_BAD || v == SC_AGENT_DOC_BAD_AGAIN;
    if (!self->imds_failing)
        self->imds_good_ms = sc_mono_ms();
    switch (v) {
    case SC_AGENT_DOC_SAME:
    case SC_AGENT_DOC_BAD_AGAIN: return 0;
    case SC_AGENT_DOC_BAD:
        self->stats.bad_documents++;
        sc_log_warn("IMDS document refused, keeping the last good one",
                    "incarnation=%" PRId64 " why=\"%s\"", sc_agent_doc_incarnation(self->doc),
                    sc_log_q(err));
        return 0;
    case SC_AGENT_DOC_BACKWARDS:
    case SC_AGENT_DOC_NEW:
    default: break;
    }
    self->doc_read_ms = sc_wall_ms();
    cur = sc_agent_doc_current(self->doc);
    s_log_malformed(self, cur->incarnation);
    if (v == SC_AGENT_DOC_BACKWARDS)
        sc_log_notice("incarnation went backwards (IMDS restarted or re-enabled): new document",
                      "incarnation=%" PRId64 " events=%zu", cur->incarnation, cur->n_events);
    else
        sc_log_info("new document", "incarnation=%" PRId64 " events=%zu", cur->incarnation,
                    cur->n_events);
    for (size_t i = 0; i < cur->n_events; i++) {
        const sc_event_t *ev = &cur->events[i];
        sc_log_info("event", "id=%s type=%s status=%s not_before=\"%s\" mine=%s resources=%zu",
                    ev->id, ev->type_raw, ev->status_raw, sc_log_q(ev->not_before_raw),
                    sc_event_names(ev, self->name) ? "yes" : "no", ev->n_resources);
    }
    self->stats.documents_sent++;
    s_send_document(self, -1);
    return 0;
}

static void s_poll_imds(sc_agent_t *self, int64_t now)
{
    sc_imds_status_t st;
    char *body = NULL;
    size_t len = 0;
    int rc;

    self->stats.polls++;
    rc = sc_imds_get_events(self->imds, &body, &len, &st);
    if (rc == -EINTR)
        return; /* stopping */
    if (rc) {
        int64_t delay = sc_backoff_next(&self->backoff, st.retry_after_ms);
        self->stats.poll_errors++;
        self->imds_failing = true;
        if (rc != self->last_imds_rc || st.http_status != self->last_imds_http)
            sc_log_warn("IMDS poll failed", "rc=%s http=%ld retry_ms=%" PRId64 " why=\"%s\"",
                        sc_errname(rc), st.http_status, delay, sc_log_q(st.message));
        self->last_imds_rc = rc;
        self->last_imds_http = st.http_status;
        self->next_poll = now + (delay > self->poll_ms ? delay : self->poll_ms);
        return;
    }
    if (self->last_imds_rc != 0)
        sc_log_notice("IMDS answers again", "after=%s", sc_errname(self->last_imds_rc));
    self->last_imds_rc = 0;
    self->last_imds_http = st.http_status;
    sc_backoff_reset(&self->backoff);
    /* Keep the cadence (no drift), but never catch up with a burst. */
    self->next_poll += self->poll_ms;
    if (self->next_poll <= now)
        self->next_poll = now + self->poll_ms;
    if (sc_agent_feed_body(self, body, len) == -ENOMEM)
        sc_log_err("out of memory handling the document", NULL);
    free(body);
}

/* ---------------------------------------------------------------- safety net */

static bool s_noted(sc_agent_t *self, const char *event)
{
    for (size_t i = 0; i < S_NOTED_MAX; i++)
        if (sc_event_id_equal(self->noted[i], event))
            return true;
    snprintf(self->noted[self->n_noted], sizeof(self->noted[0]), "%s", event);
    self->n_noted = (self->n_noted + 1) % S_NOTED_MAX;
    return false;
}

static void s_update_standalone(sc_agent_t *self, int64_t now)
{
    bool sa = now - self->leader_seen >= self->standalone_after_ms;

    if (sa != self->standalone) {
        if (sa)
            sc_log_warn("no leader: standalone safety net armed",
                        "silent_ms=%" PRId64 " approve=%s", now - self->leader_seen,
                        self->standalone_approve ? "yes" : "no");
        else
            sc_log_notice("leader present: standalone safety net disarmed", "leader=%s",
                          self->leader);
    }
    self->standalone = sa;
}

/* While no leader answers: prepare for events naming this VM whose NotBefore is near, and
 * recover once such an event has gone. */
static void s_safety_net(sc_agent_t *self)
{
    const sc_doc_t *cur = sc_agent_doc_current(self->doc);
    int64_t wall = sc_wall_ms();
    sc_agent_run_t run;

    if (!self->standalone || !cur)
        return;
    for (size_t i = 0; i < cur->n_events; i++) {
        const sc_event_t *ev = &cur->events[i];
        sc_doc_t *one;

        int attempt;

        if (!sc_event_names(ev, self->name) || s_job_known(self, ev->id, SC_MSG_PHASE_PREPARE, 0))
            continue;
        if (ev->type == SC_EVENT_FREEZE && ev->has_duration && ev->duration_s >= 0 &&
            (double)ev->duration_s < self->freeze_threshold_s) {
            if (!s_noted(self, ev->id))
                sc_log_notice("standalone safety net: short freeze, nothing to prepare",
                              "event=%s duration=%" PRId64, ev->id, ev->duration_s);
            continue;
        }
        if (sc_event_is_started(ev) || !ev->has_not_before) {
            /* noted first: one SQLite read per event, not one a second while it lasts */
            if (!s_noted(self, ev->id) &&
                sc_agent_state_get_run(self->state, ev->id, SC_MSG_PHASE_PREPARE, 0, &run) != 0)
                sc_log_warn("standalone safety net: event already started, too late to prepare",
                            "event=%s type=%s", ev->id, ev->type_raw);
            continue;
        }
        if (ev->not_before * 1000 - wall > self->hook_timeout_ms + self->margin_ms)
            continue;
        if (sc_agent_state_get_run(self->state, ev->id, SC_MSG_PHASE_PREPARE, 0, &run) == 0)
            continue;
        /* a new attempt: an attempt whose only run is a recover is over */
        if ((attempt = s_newest_attempt(self, ev->id) + 1) > SC_MSG_ATTEMPT_MAX)
            continue;
        sc_log_warn("standalone safety net: no leader, preparing this VM ourselves",
                    "event=%s type=%s not_before=\"%s\" in_s=%" PRId64, ev->id, ev->type_raw,
                    sc_log_q(ev->not_before_raw), (ev->not_before * 1000 - wall) / 1000);
        one = s_event_doc(cur, ev->id);
        if (s_enqueue(self, ev->id, SC_MSG_PHASE_PREPARE, attempt, SC_MSG_ORIGIN_STANDALONE, 0,
                      &one))
            sc_log_err("hook queue full", "event=%s", ev->id);
        sc_doc_destroy(&one);
    }
    if (self->handover_pending) {
        sc_agent_run_t *runs = NULL;
        size_t n = 0;

        bool open = self->hook && self->cur.origin == SC_MSG_ORIGIN_STANDALONE;

        if (sc_agent_state_list_runs(self->state, &runs, &n) != 0)
            return;
        for (size_t i = 0; i < n; i++) {
            const sc_agent_run_t *r = &runs[i];
            sc_doc_t *one = NULL;
            char *json = NULL;

            if (r->phase != SC_MSG_PHASE_PREPARE || r->origin != SC_MSG_ORIGIN_STANDALONE ||
                r->handed_over || s_job_known(self, r->event, SC_MSG_PHASE_RECOVER, r->attempt) ||
                sc_agent_state_get_run(self->state, r->event, SC_MSG_PHASE_RECOVER, r->attempt,
                                       &run) == 0)
                continue;
            open = true;
            if (r->state == SC_MSG_HOOK_STARTED || sc_doc_find(cur, r->event))
                continue;
            sc_log_warn("standalone safety net: event gone, recovering this VM ourselves",
                        "event=%s prepare=%s", r->event, sc_msg_hook_state_name(r->state));
            if (sc_agent_state_event_json(self->state, r->event, SC_MSG_PHASE_PREPARE, r->attempt,
                                          &json) == 0)
                sc_doc_parse(json, strlen(json), &one, NULL, 0);
            free(json);
            if (s_enqueue(self, r->event, SC_MSG_PHASE_RECOVER, r->attempt,
                          SC_MSG_ORIGIN_STANDALONE, 0, &one))
                sc_log_err("hook queue full", "event=%s", r->event);
            sc_doc_destroy(&one);
        }
        free(runs);
        self->handover_pending = open || self->n_queue > 0;
    }
}

/* A leader is back: report the safety net's runs to it and let it take the drain over. */
static void s_handover(sc_agent_t *self, int member)
{
    sc_agent_run_t *runs = NULL;
    size_t n = 0;
    bool left = false;

    if (!self->handover_pending || sc_agent_state_list_runs(self->state, &runs, &n) != 0)
        return;
    for (size_t i = 0; i < n; i++) {
        if (runs[i].origin != SC_MSG_ORIGIN_STANDALONE || runs[i].handed_over)
            continue;
        if (runs[i].state == SC_MSG_HOOK_STARTED) {
            left = true; /* reported when it ends */
            continue;
        }
        sc_log_notice("standalone run handed over to the leader", "event=%s phase=%s leader=%s",
                      runs[i].event, sc_msg_phase_name(runs[i].phase), self->leader);
        s_send_run(self, member, &runs[i]);
        if (sc_agent_state_set_handed_over(self->state, runs[i].event, runs[i].phase,
                                           runs[i].attempt) != 0)
            left = true;
    }
    free(runs);
    self->handover_pending = left || (self->hook && self->cur.origin == SC_MSG_ORIGIN_STANDALONE);
}

/* ---------------------------------------------------------------- messages */

/* Term rule for orders and approve_via: refuse older terms, adopt newer ones. */
/* The fence of a leader's message: (term, index), index its commit index (0: not said). */
static uint64_t s_index_of(const sc_msg_t *msg)
{
    return msg->type == SC_MSG_ORDER         ? msg->order.index
           : msg->type == SC_MSG_APPROVE_VIA ? msg->approve_via.index
           : msg->type == SC_MSG_LEADER      ? msg->leader.index
                                             : 0;
}

/* Whether a leader's message (order, approve_via, leader) may be believed: of the newest term
 * seen, from the member that won it (the first to claim it), and not older in (term, index)
 * than the newest seen. Else refused with a nack saying why. */
static bool s_term_ok_as(sc_agent_t *self, size_t member, const sc_msg_t *msg, const char *who)
{
    uint64_t max = sc_agent_state_max_term(self->state), idx = s_index_of(msg);
    char why[400];

    if (msg->term < max) {
        snprintf(why, sizeof(why), "stale term %" PRIu64 " < %" PRIu64, msg->term, max);
    } else if (msg->term == max && self->leader[0] && strcmp(self->leader, who) != 0) {
        snprintf(why, sizeof(why), "%s is not the leader of term %" PRIu64 " (%s is)", who,
                 msg->term, self->leader);
        self->stats.other_claimants++;
    } else if (msg->term == max && idx && idx < self->fence_index) {
        snprintf(why, sizeof(why),
                 "stale fence: (%" PRIu64 ", %" PRIu64 ") older than (%" PRIu64 ", %" PRIu64 ")",
                 msg->term, idx, max, self->fence_index);
    } else {
        bool claimed = msg->term > max || !self->leader[0];
        if (msg->term > max) {
            if (sc_agent_state_raise_term(self->state, msg->term) != 0) {
                sc_log_err("cannot persist the new term", "term=%" PRIu64, msg->term);
                return false;
            }
            self->fence_index = self->fence_saved = 0;
        }
        if (claimed) /* the first to claim the term (a newer one, or the first known) */
            snprintf(self->leader, sizeof(self->leader), "%s", who);
        if (idx > self->fence_index)
            self->fence_index = idx;
        /* kept across a restart: who won the term, and the fence of what it ordered (an order
         * is rare; a leader message every 5 s stays in memory) */
        if (claimed || (msg->type != SC_MSG_LEADER && self->fence_index > self->fence_saved)) {
            uint64_t keep = msg->type != SC_MSG_LEADER ? self->fence_index : self->fence_saved;
            if (sc_agent_state_set_fence(self->state, self->leader, keep) != 0)
                sc_log_warn("the fence is not kept (a restart forgets it)", "term=%" PRIu64,
                            msg->term);
            else
                self->fence_saved = keep;
        }
        return true;
    }
    self->stats.stale_orders++;
    sc_log_warn("order refused", "type=%s from=%s seq=%" PRIu64 " why=\"%s\"",
                sc_msg_type_name(msg->type), msg->from, msg->seq, sc_log_q(why));
    s_send_nack(self, (int)member, msg->seq, why);
    return false;
}

/* An order or approve_via: its sender claims the term. */
static bool s_term_ok(sc_agent_t *self, size_t member, const sc_msg_t *msg)
{
    return s_term_ok_as(self, member, msg, msg->from);
}

static void s_leader_alive(sc_agent_t *self, size_t member)
{
    self->leader_seen = sc_mono_ms();
    s_update_standalone(self, self->leader_seen);
    s_handover(self, (int)member);
}

/* Refuses an order with a nack (and a log line): it is understood, and never to be run. */
static void s_order_refused(sc_agent_t *self, size_t member, const sc_msg_t *msg, const char *why)
{
    sc_log_warn("order refused", "type=%s from=%s seq=%" PRIu64 " event=%s attempt=%d why=\"%s\"",
                sc_msg_type_name(msg->type), msg->from, msg->seq, msg->order.event,
                msg->order.attempt, sc_log_q(why));
    s_send_nack(self, (int)member, msg->seq, why);
}

/* An order runs each (event, phase, attempt) once, and nothing of an attempt older than the
 * newest this VM has seen for the event (the leader has moved on: it is never run, answered
 * with that attempt's recorded result or refused). */
static void s_on_order(sc_agent_t *self, size_t member, sc_msg_t *msg)
{
    const sc_msg_order_t *o = &msg->order;
    s_job_t job = {.phase = o->action,
                   .attempt = o->attempt,
                   .origin = SC_MSG_ORIGIN_ORDER,
                   .term = msg->term};
    sc_agent_run_t run;
    sc_doc_t *one = NULL;
    char why[256];
    int newest;

    if (!s_term_ok(self, member, msg))
        return;
    s_leader_alive(self, member);
    snprintf(job.event, sizeof(job.event), "%s", o->event);
    sc_log_info("order", "from=%s term=%" PRIu64 " action=%s event=%s attempt=%d", msg->from,
                msg->term, sc_msg_phase_name(o->action), o->event, o->attempt);
    if (sc_agent_state_get_run(self->state, o->event, o->action, o->attempt, &run) == 0) {
        /* A recover our stop interrupted (or stopped before its hook began: nemesis seed 65)
         * runs again when ordered again: left undone, its VM would stay out of service while
         * the next fault domain drains. A prepare interrupted does not (the leader rolls it
         * back instead). */
        if (o->action == SC_MSG_PHASE_RECOVER && run.state == SC_MSG_HOOK_INTERRUPTED &&
            sc_agent_state_run_forget_interrupted(self->state, o->event, o->action, o->attempt) ==
                0) {
            sc_log_notice("recover interrupted by our stop: run again", "event=%s attempt=%d",
                          o->event, o->attempt);
        } else {
            sc_log_info("phase already run for this event and attempt: reporting its result, "
                        "not re-running",
                        "event=%s phase=%s attempt=%d state=%s", o->event,
                        sc_msg_phase_name(o->action), o->attempt,
                        sc_msg_hook_state_name(run.state));
            s_send_run(self, (int)member, &run);
            return;
        }
    }
    if (s_job_known(self, o->event, o->action, o->attempt))
        return; /* queued or running: its progress follows */
    if (o->attempt < (newest = s_newest_attempt(self, o->event))) {
        snprintf(why, sizeof(why), "stale attempt %d < %d for event %s", o->attempt, newest,
                 o->event);
        s_order_refused(self, member, msg, why);
        return;
    }
    if (o->action == SC_MSG_PHASE_PREPARE &&
        (s_job_known(self, o->event, SC_MSG_PHASE_RECOVER, o->attempt) ||
         sc_agent_state_get_run(self->state, o->event, SC_MSG_PHASE_RECOVER, o->attempt, &run) ==
             0)) {
        snprintf(why, sizeof(why),
                 "recover of attempt %d already ordered for event %s: drain again with attempt %d",
                 o->attempt, o->event, o->attempt + 1);
        s_order_refused(self, member, msg, why);
        return;
    }
    /* A recover whose prepare never ran runs too (SCHEDCOORD_PREPARED=0): the VM went down
     * unprepared (host failure, started at NotBefore, User deadline) and is re-checked. */
    if (o->event_doc)
        sc_doc_dup(o->event_doc, &one);
    else if (sc_agent_doc_current(self->doc))
        one = s_event_doc(sc_agent_doc_current(self->doc), o->event);
    if (!one && o->action == SC_MSG_PHASE_RECOVER) {
        char *json = NULL;
        if (sc_agent_state_event_json(self->state, o->event, SC_MSG_PHASE_PREPARE, 0, &json) == 0)
            sc_doc_parse(json, strlen(json), &one, NULL, 0);
        free(json);
    }
    if (s_enqueue(self, o->event, o->action, o->attempt, SC_MSG_ORIGIN_ORDER, msg->term, &one)) {
        sc_log_err("hook queue full: order refused", "event=%s", o->event);
        s_send_progress(self, (int)member, &job, SC_MSG_HOOK_REFUSED, -1, "hook queue full");
    } else {
        self->queue[self->n_queue - 1].rehearsal = o->rehearsal;
        self->queue[self->n_queue - 1].until_ms = o->until_ms;
    }
    sc_doc_destroy(&one);
}

static void s_on_approve_via(sc_agent_t *self, size_t member, sc_msg_t *msg)
{
    const char *ids[SC_MSG_MAX_EVENTS];
    sc_imds_status_t st;
    sc_msg_t *res;

    if (!s_term_ok(self, member, msg))
        return;
    s_leader_alive(self, member);
    for (size_t i = 0; i < msg->approve_via.n_events; i++)
        ids[i] = msg->approve_via.events[i];
    s_post_approval(self, ids, msg->approve_via.n_events, &st);
    sc_log(st.rc ? SC_LOG_WARN : SC_LOG_NOTICE, "approval posted for the leader",
           "from=%s events=%zu first=%s http=%ld rc=%s", msg->from, msg->approve_via.n_events,
           ids[0], st.http_status, sc_errname(st.rc));
    if (!(res = s_msg(self, SC_MSG_APPROVE_RESULT)))
        return;
    for (size_t i = 0; i < msg->approve_via.n_events; i++)
        sc_msg_add_event(res, ids[i]);
    res->approve_result.http_status =
        st.http_status >= 0 && st.http_status <= 999 ? (int)st.http_status : 0;
    snprintf(res->approve_result.result, sizeof(res->approve_result.result), "%s",
             st.rc == 0 ? "OK" : sc_errname(st.rc));
    sc_msg_set_text(&res->approve_result.message, st.message, strlen(st.message), false);
    s_send_to(self, (int)member, res);
    sc_msg_destroy(&res);
}

static void s_on_leader(sc_agent_t *self, size_t member, sc_msg_t *msg)
{
    uint64_t max = sc_agent_state_max_term(self->state);
    char old[SC_NAME_MAX + 1];

    snprintf(old, sizeof(old), "%s", self->leader);
    /* the member it names claims the term: older term, another's term, older fence refused */
    if (!s_term_ok_as(self, member, msg, msg->leader.leader))
        return;
    if (msg->term > max || strcmp(old, msg->leader.leader) != 0)
        sc_log_notice("leader", "leader=%s term=%" PRIu64 " lease_ms=%" PRId64, msg->leader.leader,
                      msg->term, msg->leader.lease_ms);
    snprintf(self->leader, sizeof(self->leader), "%s", msg->leader.leader);
    /* Configuration drift: another list, or the same in another order (the first member
     * leads), makes VMs disagree on who leads. Said once per differing list. */
    if (msg->leader.members_hash[0] && strcmp(msg->leader.members_hash, self->members_hash) != 0) {
        if (strcmp(self->drift_hash, msg->leader.members_hash) != 0)
            sc_log_warn("the leader's --members differs from ours (names, endpoints or order): "
                        "give every VM the same list",
                        "leader=%s theirs=%s ours=%s", msg->leader.leader, msg->leader.members_hash,
                        self->members_hash);
        snprintf(self->drift_hash, sizeof(self->drift_hash), "%s", msg->leader.members_hash);
    } else {
        self->drift_hash[0] = '\0';
    }
    s_leader_alive(self, member);
}

int sc_agent_receive(sc_agent_t *self, size_t member, const void *buf, size_t len)
{
    sc_msg_reject_t why_class;
    sc_msg_t *msg = NULL;
    char err[256] = "";
    int rc;

    if (member >= self->n_conns)
        return -EINVAL;
    rc = sc_msg_decode_ex(buf, len, &msg, &why_class, err, sizeof(err));
    if (rc) {
        self->stats.rejected_msgs++;
        sc_log_warn("message refused", "from_member=%s class=%s why=\"%s\"",
                    self->conns[member].m.name, sc_msg_reject_name(why_class), sc_log_q(err));
        return rc == -ENOMEM ? rc : 0;
    }
    /* The socket to member i only talks to the server holding member i's key: the sender
     * must call itself by that name. */
    if (strcmp(msg->from, self->conns[member].m.name) != 0) {
        self->stats.rejected_msgs++;
        sc_log_warn("message refused", "from_member=%s class=sender why=\"from is %s\"",
                    self->conns[member].m.name, msg->from);
        sc_msg_destroy(&msg);
        return 0;
    }
    switch (msg->type) {
    case SC_MSG_ORDER: s_on_order(self, member, msg); break;
    case SC_MSG_APPROVE_VIA: s_on_approve_via(self, member, msg); break;
    case SC_MSG_LEADER: s_on_leader(self, member, msg); break;
    case SC_MSG_DOC_REQUEST: s_send_document(self, (int)member); break;
    case SC_MSG_NACK:
        sc_log_warn("coordinator refused our message", "from=%s ref_seq=%" PRIu64 " why=\"%s\"",
                    msg->from, msg->nack.ref_seq,
                    sc_log_q(msg->nack.reason ? msg->nack.reason : ""));
        break;
    default:
        self->stats.rejected_msgs++;
        sc_log_warn("message refused", "from=%s class=type why=\"%s is not for agents\"", msg->from,
                    sc_msg_type_name(msg->type));
        break;
    }
    sc_msg_destroy(&msg);
    return s_start_next(self);
}

/* ---------------------------------------------------------------- sockets */

static void s_on_monitor(sc_agent_t *self, size_t i)
{
    s_conn_t *c = &self->conns[i];
    zmq_msg_t frame;
    uint16_t ev = 0;
    int more = 1;
    bool first = true;

    while (more) {
        zmq_msg_init(&frame);
        if (zmq_msg_recv(&frame, c->mon, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&frame);
            return;
        }
        if (first && zmq_msg_size(&frame) >= 2)
            memcpy(&ev, zmq_msg_data(&frame), sizeof(ev));
        first = false;
        more = zmq_msg_more(&frame);
        zmq_msg_close(&frame);
    }
    switch (ev) {
    case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
        c->up = true;
        c->last_fail = 0;
        sc_log_info("coordinator connected", "member=%s endpoint=%s", c->m.name, c->m.endpoint);
        s_send_hello(self, (int)i);
        s_send_document(self, (int)i);
        s_send_recent_runs(self, (int)i);
        break;
    case ZMQ_EVENT_DISCONNECTED:
        if (c->up)
            sc_log_info("coordinator disconnected", "member=%s", c->m.name);
        c->up = false;
        break;
    case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
    case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
    case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
        c->up = false;
        if (c->last_fail != ev)
            sc_log_warn("coordinator refused the handshake (is our key in its keyring?)",
                        "member=%s endpoint=%s kind=%s", c->m.name, c->m.endpoint,
                        ev == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH       ? "auth"
                        : ev == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ? "protocol"
                                                                    : "other");
        c->last_fail = ev;
        break;
    default: break;
    }
}

static int s_on_socket(sc_agent_t *self, size_t i)
{
    s_conn_t *c = &self->conns[i];

    for (int k = 0; k < 64; k++) { /* bounded per turn: heartbeats go on */
        zmq_msg_t m;
        int rc;

        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, c->sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&m);
            return 0;
        }
        if (zmq_msg_more(&m)) { /* one frame per message: drop the rest */
            self->stats.rejected_msgs++;
            sc_log_warn("message refused",
                        "from_member=%s class=frames why=\"more than one "
                        "frame\"",
                        c->m.name);
            do {
                zmq_msg_close(&m);
                zmq_msg_init(&m);
            } while (zmq_msg_recv(&m, c->sock, ZMQ_DONTWAIT) >= 0 && zmq_msg_more(&m));
            zmq_msg_close(&m);
            continue;
        }
        rc = sc_agent_receive(self, i, zmq_msg_data(&m), zmq_msg_size(&m));
        zmq_msg_close(&m);
        if (rc && rc != -ENOMEM)
            return rc;
    }
    return 0;
}

static int s_sockets_open(sc_agent_t *self, const sc_agent_settings_t *s, char *err, size_t errlen)
{
    sc_curve_keypair_t kp;
    sc_keyring_t *ring = NULL;
    int rc = 0;

    if (!s->insecure) {
        if (!sc_curve_available()) {
            snprintf(err, errlen, "this libzmq has no CURVE support (use --insecure for a demo)");
            return -ENOTSUP;
        }
        char key[4096];
        if (sc_identity_expand(s->key, self->name, key, sizeof(key)) < 0) {
            snprintf(err, errlen, "--key: path too long once {name} is replaced");
            return SC_E_CONFIG;
        }
        /* a missing or bad key file is a configuration error: a restart would not fix it */
        if (sc_curve_keypair_load(key, &kp, err, errlen) != 0)
            return SC_E_CONFIG;
        if (sc_keyring_load(s->keys, &ring, err, errlen) != 0)
            return SC_E_CONFIG;
    } else {
        sc_log_warn("--insecure: ZeroMQ traffic is neither encrypted nor authenticated", NULL);
    }
    {
        /* per member: the DEALER's mailbox and TCP socket, the monitor's two PAIRs; then
         * the I/O threads, libcurl and SQLite */
        long need = 4 * (long)self->n_conns + 64, have = sc_nofile_raise(need);
        if (have < need)
            sc_log_warn("open-file limit below what the member list needs",
                        "members=%zu need=%ld limit=%ld hint=\"raise LimitNOFILE\"", self->n_conns,
                        need, have);
    }
    if (!(self->zctx = zmq_ctx_new())) {
        rc = -errno;
        goto out;
    }
    /* per member: the DEALER, the monitor's internal PAIR and ours */
    zmq_ctx_set(self->zctx, ZMQ_MAX_SOCKETS, (int)(3 * self->n_conns + 16));
    for (size_t i = 0; i < self->n_conns; i++) {
        s_conn_t *c = &self->conns[i];
        int zero = 0, one = 1, hwm = S_SNDHWM, ivl = 200, ivl_max = 5000;
        size_t fdlen;
        char mon[64];

        if (!(c->sock = zmq_socket(self->zctx, ZMQ_DEALER))) {
            rc = -zmq_errno();
            goto out;
        }
        zmq_setsockopt(c->sock, ZMQ_LINGER, &zero, sizeof(zero));
        zmq_setsockopt(c->sock, ZMQ_IMMEDIATE, &one, sizeof(one));
        zmq_setsockopt(c->sock, ZMQ_SNDHWM, &hwm, sizeof(hwm));
        zmq_setsockopt(c->sock, ZMQ_RCVHWM, &hwm, sizeof(hwm));
        zmq_setsockopt(c->sock, ZMQ_RECONNECT_IVL, &ivl, sizeof(ivl));
        zmq_setsockopt(c->sock, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof(ivl_max));
        if ((rc = sc_curve_peer_setup(c->sock, s->insecure ? NULL : &kp, ring, c->m.name, err,
                                      errlen)) == SC_E_CONFIG)
            goto out;
        if (rc) {
            snprintf(err, errlen, "socket setup for %s: %s", c->m.name, sc_strerror(rc));
            goto out;
        }
        snprintf(mon, sizeof(mon), "inproc://sc-agent-mon-%zu", i);
        if (zmq_socket_monitor(c->sock, mon,
                               ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED |
                                   ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                                   ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                   ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) != 0 ||
            !(c->mon = zmq_socket(self->zctx, ZMQ_PAIR)) || zmq_connect(c->mon, mon) != 0) {
            rc = -zmq_errno();
            snprintf(err, errlen, "socket monitor for %s: %s", c->m.name, zmq_strerror(-rc));
            goto out;
        }
        zmq_setsockopt(c->mon, ZMQ_LINGER, &zero, sizeof(zero));
        fdlen = sizeof(c->fd);
        if (zmq_getsockopt(c->sock, ZMQ_FD, &c->fd, &fdlen) != 0 ||
            zmq_getsockopt(c->mon, ZMQ_FD, &c->mon_fd, &fdlen) != 0) {
            rc = -zmq_errno();
            snprintf(err, errlen, "socket descriptor for %s: %s", c->m.name, zmq_strerror(-rc));
            goto out;
        }
        c->check = c->mon_check = true;
        if (zmq_connect(c->sock, c->m.endpoint) != 0) {
            rc = -zmq_errno();
            snprintf(err, errlen, "--members: cannot connect to %s (%s): %s", c->m.name,
                     c->m.endpoint, zmq_strerror(-rc));
            goto out;
        }
    }
out:
    sc_keyring_destroy(&ring);
    memset(&kp, 0, sizeof(kp));
    return rc;
}

/* ---------------------------------------------------------------- life */

static void s_boot_id(char *out, size_t len)
{
    unsigned char r[12];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, r, sizeof(r)) : -1;
    size_t k = 0;

    if (fd >= 0)
        close(fd);
    if (n != (ssize_t)sizeof(r)) {
        uint64_t x = (uint64_t)sc_mono_ms() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)sc_wall_ms();
        memcpy(r, &x, sizeof(x));
        memset(r + sizeof(x), 0, sizeof(r) - sizeof(x));
    }
    for (size_t i = 0; i < sizeof(r) && k + 2 < len; i++, k += 2)
        snprintf(out + k, len - k, "%02x", r[i]);
}

/* A notification to systemd that failed (sc_sdnotify keeps it): logged once per kind. */
static void s_sd_log_failure(sc_agent_t *self)
{
    int rc = sc_sdnotify_new_error(self->sdnotify);

    if (rc < 0)
        sc_log_warn("cannot notify systemd", "socket=%s rc=%s why=\"%s\"",
                    sc_sdnotify_socket(self->sdnotify), sc_errname(rc), sc_strerror(rc));
}

/* The watchdog and a status line waiting for its second (sc_imds's on_wait, and each turn). */
static void s_sd_on_wait(void *ud)
{
    sc_agent_t *self = ud;

    sc_sdnotify_tick(self->sdnotify, sc_mono_ms());
    s_sd_log_failure(self);
}

int sc_agent_new(const sc_agent_opts_t *opts, sc_agent_t **ret_agent, char *err, size_t errlen)
{
    const sc_agent_settings_t *s;
    sc_agent_t *self;
    sc_member_spec_t *members = NULL;
    sc_voters_t voters;
    sc_imds_opts_t io;
    size_t n = 0;
    int interrupted = 0;
    int rc;

    if (!opts || !opts->settings || !opts->name || !sc_msg_name_valid(opts->name) || !ret_agent)
        return -EINVAL;
    s = opts->settings;
    if ((rc = sc_members_parse(s->members, &members, &n, err, errlen)) != 0)
        return rc;
    if (!(self = calloc(1, sizeof(*self)))) {
        free(members);
        return -ENOMEM;
    }
    snprintf(self->name, sizeof(self->name), "%s", opts->name);
    self->fault_domain = opts->fault_domain;
    self->update_domain = opts->update_domain;
    s_boot_id(self->boot_id, sizeof(self->boot_id));
    self->hook_timeout_ms = (int64_t)(s->hook_timeout * 1000);
    self->poll_ms = (int64_t)(s->poll_interval * 1000);
    self->hb_ms = (int64_t)(s->heartbeat_interval * 1000);
    self->standalone_after_ms = (int64_t)(s->standalone_after * 1000);
    self->margin_ms = (int64_t)(s->safety_margin * 1000);
    self->standalone_approve = s->standalone_approve;
    self->freeze_threshold_s = s->freeze_threshold_s;
    self->manual_imds = opts->manual_imds;
    self->send = opts->send;
    self->send_data = opts->send_data;
    self->prepare_hook = strdup(s->prepare_hook);
    self->recover_hook = strdup(s->recover_hook);
    /* Only the coordinators' voters: the leader is one of them. Connections and heartbeats
     * are O(voters), not O(members). */
    if ((rc = sc_voters_of_members(members, n, (int)s->voters, &voters)) < 0) {
        snprintf(err, errlen, "--members: voters not chosen: %s", sc_strerror(rc));
        rc = SC_E_CONFIG;
        goto fail;
    }
    self->conns = calloc(voters.n, sizeof(*self->conns));
    self->pfds = calloc(2 * voters.n + 1, sizeof(*self->pfds));
    if (!self->prepare_hook || !self->recover_hook || !self->conns || !self->pfds) {
        rc = -ENOMEM;
        goto fail;
    }
    self->n_conns = voters.n;
    for (size_t k = 0; k < voters.n; k++)
        self->conns[k].m = members[voters.index[k]];
    sc_members_digest(members, n, 0, self->members_hash);
    free(members);
    members = NULL;
    if ((rc = sc_agent_state_open(s->state_dir, &self->state, &interrupted, err, errlen)) != 0)
        goto fail;
    if (interrupted)
        sc_log_warn("hook runs interrupted by the previous stop: reported, not re-run", "count=%d",
                    interrupted);
    if ((rc = sc_agent_state_fence(self->state, self->leader, sizeof(self->leader),
                                   &self->fence_index)) != 0) {
        snprintf(err, errlen, "state dir %s: reading the fence", s->state_dir);
        goto fail;
    }
    self->fence_saved = self->fence_index;
    self->handover_pending = true; /* checked once against the database */
    if ((rc = sc_agent_doc_new(&self->doc)) != 0)
        goto fail;
    sc_imds_opts_init(&io);
    io.base_url = s->imds_url;
    io.api_version = s->api_version;
    io.total_timeout_ms = (long)(s->imds_timeout * 1000);
    io.first_timeout_ms = (long)(s->imds_first_timeout * 1000);
    io.abort = opts->stop;
    if ((self->sdnotify = opts->sdnotify)) {
        io.on_wait = s_sd_on_wait; /* the watchdog through IMDS's first, long request */
        io.on_wait_ud = self;
    }
    if ((rc = sc_imds_new(&io, &self->imds)) != 0) {
        snprintf(err, errlen, "--imds-url: cannot use \"%s\": %s", s->imds_url, sc_strerror(rc));
        goto fail;
    }
    sc_backoff_init(&self->backoff, self->poll_ms, self->poll_ms > 30000 ? self->poll_ms : 30000);
    self->next_poll = self->next_hb = self->leader_seen = sc_mono_ms();
    if (!self->send && (rc = s_sockets_open(self, s, err, errlen)) != 0)
        goto fail;
    sc_log_info("agent started",
                "name=%s fault_domain=%d update_domain=%d members=%zu max_term=%" PRIu64
                " boot_id=%s",
                self->name, self->fault_domain, self->update_domain, self->n_conns,
                sc_agent_state_max_term(self->state), self->boot_id);
    *ret_agent = self;
    return 0;
fail:
    free(members);
    sc_agent_destroy(&self);
    return rc;
}

void sc_agent_destroy(sc_agent_t **agent)
{
    sc_agent_t *self;

    if (!agent || !*agent)
        return;
    self = *agent;
    if (self->hook) {
        sc_log_warn("stopping: killing the running hook", "event=%s phase=%s pid=%d",
                    self->cur.event, sc_msg_phase_name(self->cur.phase),
                    (int)sc_hook_pid(self->hook));
        sc_hook_destroy(&self->hook);
        if (self->state)
            sc_agent_state_run_end(self->state, self->cur.event, self->cur.phase, self->cur.attempt,
                                   SC_MSG_HOOK_INTERRUPTED, -1, "the agent stopped (signal)");
        s_send_progress(self, -1, &self->cur, SC_MSG_HOOK_INTERRUPTED, -1, "the agent stopped");
    }
    s_job_clear(&self->cur);
    for (size_t i = 0; i < self->n_queue; i++)
        s_job_clear(&self->queue[i]);
    for (size_t i = 0; i < self->n_conns; i++) {
        if (self->conns[i].sock)
            zmq_socket_monitor(self->conns[i].sock, NULL, 0);
        if (self->conns[i].mon)
            zmq_close(self->conns[i].mon);
        if (self->conns[i].sock)
            zmq_close(self->conns[i].sock);
    }
    if (self->zctx)
        zmq_ctx_term(self->zctx);
    sc_imds_destroy(&self->imds);
    sc_agent_doc_destroy(&self->doc);
    sc_agent_state_close(&self->state);
    free(self->conns);
    free(self->pfds);
    free(self->prepare_hook);
    free(self->recover_hook);
    free(self);
    *agent = NULL;
}

/* The sockets that may have something: each is looked at (ZMQ_EVENTS, which also takes its
 * fd's signal) and read. A socket's ZMQ_FD signals edge-triggered, and a send or a read on it
 * may take the signal of what came meanwhile: so a socket is looked at after we used it or its
 * fd fired, and we sleep in poll() only when none may have anything. (zmq_poll() looks at every
 * socket twice a turn, two system calls each: with three voters, 26 calls a second, most of
 * what an idle agent cost.) A socket that had messages stays to be looked at: its read is
 * bounded, and what a handler sent may have taken another socket's signal. */
static int s_service(sc_agent_t *self)
{
    for (size_t i = 0; i < self->n_conns; i++) {
        s_conn_t *c = &self->conns[i];
        int ev;
        size_t len;
        int rc;

        while (c->mon_check) {
            len = sizeof(ev);
            c->mon_check = zmq_getsockopt(c->mon, ZMQ_EVENTS, &ev, &len) == 0 && (ev & ZMQ_POLLIN);
            if (c->mon_check)
                s_on_monitor(self, i);
        }
        if (!c->check)
            continue;
        len = sizeof(ev);
        c->check = zmq_getsockopt(c->sock, ZMQ_EVENTS, &ev, &len) == 0 && (ev & ZMQ_POLLIN);
        if (!c->check)
            continue;
        if ((rc = s_on_socket(self, i)) != 0)
            return rc;
    }
    return 0;
}

/* Whether a socket is still to be looked at: then we do not sleep. */
static bool s_pending(const sc_agent_t *self)
{
    for (size_t i = 0; i < self->n_conns; i++)
        if (self->conns[i].check || self->conns[i].mon_check)
            return true;
    return false;
}

int sc_agent_step(sc_agent_t *self, int max_wait_ms)
{
    int64_t now = sc_mono_ms();
    int64_t wait;
    size_t k = 0;
    int rc;

    if (!self->manual_imds && now >= self->next_poll)
        s_poll_imds(self, now);
    now = sc_mono_ms();
    s_update_standalone(self, now);
    if (now >= self->next_hb) {
        s_send_heartbeat(self);
        self->next_hb += self->hb_ms;
        if (self->next_hb <= now)
            self->next_hb = now + self->hb_ms;
    }
    s_poll_hook(self);
    if (now >= self->next_net) {
        s_safety_net(self);
        self->next_net = now + (self->poll_ms < 1000 ? self->poll_ms : 1000);
    }
    if ((rc = s_start_next(self)) != 0)
        return rc;

    if (self->zctx && (rc = s_service(self)) != 0)
        return rc;
    wait =
        (self->manual_imds ? self->next_hb
                           : (self->next_poll < self->next_hb ? self->next_poll : self->next_hb)) -
        now;
    /* also due: arming the safety net (no leader for --standalone-after), and, armed, its
     * look at the events */
    if (!self->standalone && self->leader_seen + self->standalone_after_ms - now < wait)
        wait = self->leader_seen + self->standalone_after_ms - now;
    if (self->standalone && self->next_net - now < wait)
        wait = self->next_net - now;
    if (self->zctx && s_pending(self))
        wait = 0; /* the rest at once */
    if (self->hook && wait > 100)
        wait = 100; /* sc_hook_poll enforces the timeout */
    if (wait > max_wait_ms)
        wait = max_wait_ms;
    if (wait < 0)
        wait = 0;
    if (!self->zctx) {
        if (wait > 0)
            sc_sleep_ms(wait);
        return 0;
    }
    for (size_t i = 0; i < self->n_conns; i++) {
        self->pfds[k++] = (struct pollfd){.fd = self->conns[i].fd, .events = POLLIN};
        self->pfds[k++] = (struct pollfd){.fd = self->conns[i].mon_fd, .events = POLLIN};
    }
    if (self->hook && sc_hook_fd(self->hook) >= 0)
        self->pfds[k++] = (struct pollfd){.fd = sc_hook_fd(self->hook), .events = POLLIN};
    if (poll(self->pfds, (nfds_t)k, (int)wait) < 0)
        return errno == EINTR ? 0 : -errno;
    for (size_t i = 0; i < self->n_conns; i++) {
        self->conns[i].check |= (self->pfds[2 * i].revents & POLLIN) != 0;
        self->conns[i].mon_check |= (self->pfds[2 * i + 1].revents & POLLIN) != 0;
    }
    return s_service(self);
}

int sc_agent_run(sc_agent_t *self, volatile sig_atomic_t *stop)
{
    char line[SC_SDNOTIFY_STATUS_MAX + 1];
    int rc = 0;

    sc_agent_describe(self, line, sizeof(line));
    sc_sdnotify_ready(self->sdnotify, line, sc_mono_ms());
    s_sd_log_failure(self);
    while (!*stop && rc == 0) {
        /* under systemd, a turn a second for STATUS and the watchdog; else only what is due */
        rc = sc_agent_step(self, self->sdnotify ? 1000 : 5000);
        if (self->sdnotify) {
            sc_agent_describe(self, line, sizeof(line));
            sc_sdnotify_status(self->sdnotify, line, sc_mono_ms());
            s_sd_on_wait(self);
        }
    }
    sc_sdnotify_stopping(self->sdnotify, rc ? "stopping on a fatal error" : "stopping");
    s_sd_log_failure(self);
    return rc;
}

void sc_agent_describe(const sc_agent_t *self, char *buf, size_t len)
{
    size_t up = 0;
    int n;

    for (size_t i = 0; i < self->n_conns; i++)
        up += self->conns[i].up;
    if (self->standalone)
        n = snprintf(buf, len, "no leader (safety net armed)");
    else if (self->leader[0])
        n = snprintf(buf, len, "leader %s (term %" PRIu64 ")", self->leader,
                     sc_agent_state_max_term(self->state));
    else
        n = snprintf(buf, len, "no leader heard yet");
    n += snprintf(buf + n, len > (size_t)n ? len - n : 0, ", %zu/%zu coordinators connected; ", up,
                  self->n_conns);
    if ((size_t)n >= len)
        return;
    if (self->imds_failing && self->last_imds_http)
        n += snprintf(buf + n, len - n, "IMDS failing (HTTP %ld); ", self->last_imds_http);
    else if (self->imds_failing)
        n += snprintf(buf + n, len - n, "IMDS failing (%s); ",
                      self->last_imds_rc ? sc_errname(self->last_imds_rc) : "bad document");
    else
        n += snprintf(buf + n, len - n, "%s; ",
                      self->imds_good_ms ? "IMDS ok" : "IMDS not read yet");
    if ((size_t)n >= len)
        return;
    if (self->hook && self->n_queue)
        snprintf(buf + n, len - n, "%s hook running for %s, %zu queued",
                 sc_msg_phase_name(self->cur.phase), self->cur.event, self->n_queue);
    else if (self->hook)
        snprintf(buf + n, len - n, "%s hook running for %s", sc_msg_phase_name(self->cur.phase),
                 self->cur.event);
    else if (self->n_queue)
        snprintf(buf + n, len - n, "%zu hooks queued", self->n_queue);
    else
        snprintf(buf + n, len - n, "no hook running");
}

bool sc_agent_busy(const sc_agent_t *self)
{
    return self->hook || self->n_queue > 0;
}

bool sc_agent_standalone(const sc_agent_t *self)
{
    return self->standalone;
}

uint64_t sc_agent_max_term(const sc_agent_t *self)
{
    return sc_agent_state_max_term(self->state);
}

void sc_agent_get_stats(const sc_agent_t *self, sc_agent_stats_t *ret_stats)
{
    *ret_stats = self->stats;
    ret_stats->doc_parses = sc_agent_doc_parses(self->doc); /* the tracker counts */
}
