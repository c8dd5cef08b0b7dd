/* sc_notify: tells people, in the chat tool they use, when maintenance matters.
 *
 * The setting (fixed): --notify FORMAT:URL[,FORMAT:URL...] (config key `notify`), at most
 * SC_NOTIFY_MAX_TARGETS targets. FORMAT is
 *   json   a generic JSON object: "kind", "ts", "text" (the human line), "cluster", "from" and
 *          the message's fields as they are (absent when unknown);
 *   slack  a Slack incoming webhook: {"text": line, "blocks": [the line, the details]};
 *   teams  a Microsoft Teams incoming webhook (or a Teams Workflows "when a webhook request is
 *          received" flow): {"type":"message","attachments":[{"contentType":
 *          "application/vnd.microsoft.card.adaptive","content":{AdaptiveCard 1.2}}]}, the
 *          Adaptive Card envelope Microsoft documents for incoming webhooks (the legacy
 *          MessageCard is not used: the Workflows webhooks that replace the Office 365
 *          connectors accept only Adaptive Cards).
 * URL is http:// or https:// (a comma in it is written %2C). The URL is a secret (Slack and
 * Teams put the token in it): messages and labels name only its scheme and host.
 *
 * The kinds (names fixed; the README's Notifications section lists them too):
 *   event_scheduled  at notice time, with the plan: event_type, event_id, vms, fault_domain,
 *                    drain_order (the domains in the order they drain), drain_at, deadline
 *   drain_started    the prepare hooks of vms were ordered
 *   approved         the event was approved (it may start now)
 *   event_started    the event started (impact)
 *   event_ended      the event is over (recover follows)
 *   hook_failed      phase ("prepare"/"recover") failed on vms; detail says how
 *   deadline_missed  not drained by deadline: left to Azure
 *   leader_changed   leader (NULL: none), prev_leader, term
 * detail (one line) may be given with any kind.
 *
 * Delivery: sc_notify_post() never blocks the caller: it renders the message and puts a copy
 * on each target's queue (at most queue_max, the one being sent included) and returns. When a
 * queue is full the message is dropped for that target and counted. One worker thread sends,
 * with libcurl: per target one message at a time, in the order posted; each attempt is
 * bounded by timeout_ms; redirects are not followed (a 3xx is a failure) and only http/https
 * is spoken; no proxy unless opts.proxy names one (the environment's http_proxy etc. are
 * ignored). A network error, a 5xx, 408 or 429 (and Teams' "HTTP error 429" in a 200 body) is
 * retried after an exponential backoff (retry_initial_ms doubling to retry_max_ms, with
 * jitter; a Retry-After of N seconds is honoured, capped at retry_max_ms) until max_attempts
 * attempts were made, then counted failed; another status is failed at once. The next
 * message of that target goes after either. sc_notify_stop() gives what is queued
 * stop_grace_ms to go (no retry past it), then aborts what is in flight and drops the rest,
 * counted.
 *
 * The notifier does not log: the counters and last error per target (sc_notify_stats) are
 * for the coordinator's log and metrics. */
#ifndef SC_NOTIFY_H
#define SC_NOTIFY_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SC_NOTIFY_MAX_TARGETS 8        /* targets in one --notify */
#define SC_NOTIFY_URL_MAX 2048         /* bytes of one URL */
#define SC_NOTIFY_SPEC_MAX (9 * 2048u) /* bytes of the whole setting */
#define SC_NOTIFY_QUEUE_DEFAULT 256    /* messages queued per target */
#define SC_NOTIFY_QUEUE_MAX 65536      /* the most queue_max may be */
#define SC_NOTIFY_ATTEMPTS_MAX 100     /* the most max_attempts may be */
#define SC_NOTIFY_BODY_MAX 32768       /* bytes of a rendered body (Teams takes 28 KB) */

/* X(enum, name): the kinds, in the order of a rollout. New kinds go at the end. */
#define SC_NOTIFY_KINDS(X)                                                                         \
    X(SC_NOTIFY_EVENT_SCHEDULED, "event_scheduled")                                                \
    X(SC_NOTIFY_DRAIN_STARTED, "drain_started")                                                    \
    X(SC_NOTIFY_APPROVED, "approved")                                                              \
    X(SC_NOTIFY_EVENT_STARTED, "event_started")                                                    \
    X(SC_NOTIFY_EVENT_ENDED, "event_ended")                                                        \
    X(SC_NOTIFY_HOOK_FAILED, "hook_failed")                                                        \
    X(SC_NOTIFY_DEADLINE_MISSED, "deadline_missed")                                                \
    X(SC_NOTIFY_LEADER_CHANGED, "leader_changed")

typedef enum {
#define SC_NOTIFY_KIND_ENUM_(e, name) e,
    SC_NOTIFY_KINDS(SC_NOTIFY_KIND_ENUM_)
#undef SC_NOTIFY_KIND_ENUM_
        SC_NOTIFY_KIND_MAX
} sc_notify_kind_t;

typedef enum {
    SC_NOTIFY_JSON,  /* "json" */
    SC_NOTIFY_SLACK, /* "slack" */
    SC_NOTIFY_TEAMS, /* "teams" */
    SC_NOTIFY_FORMAT_MAX
} sc_notify_format_t;

/* One notification. Strings and arrays are borrowed for the call only (post copies what it
 * needs); NULL / 0 / -1 mean "not known" and leave the field out. Longer strings and lists
 * are cut (names to 128 bytes, detail to 512; a chat line names 10 VMs and "N more", the json
 * format lists 64 and says "vms_total"). Invalid UTF-8 and control characters become '?'. */
typedef struct sc_notify_msg {
    sc_notify_kind_t kind;   /* what happened */
    int64_t ts_ms;           /* wall ms it happened; 0: when posted */
    const char *event_id;    /* IMDS EventId */
    const char *event_type;  /* IMDS EventType: Reboot, Redeploy, Freeze, ... */
    const char *const *vms;  /* the member VMs concerned (event's, drained, hook's) */
    size_t n_vms;            /* entries in vms */
    int fault_domain;        /* their fault domain; -1 unknown */
    bool update_domains;     /* domains are update domains (policy serialise-by) */
    const int *drain_order;  /* event_scheduled: domains in drain order (-1: unknown) */
    size_t n_drain_order;    /* entries in drain_order */
    int64_t drain_at_ms;     /* event_scheduled: wall ms its domain drains (estimate) */
    int64_t deadline_ms;     /* wall ms Azure starts it on its own (NotBefore) */
    const char *phase;       /* hook_failed: "prepare" or "recover" */
    const char *leader;      /* leader_changed: the new leader; NULL: none */
    const char *prev_leader; /* leader_changed: the old one; NULL: none */
    int64_t term;            /* leader_changed: the new term; 0 unknown */
    const char *detail;      /* one free line: reason, hook outcome */
} sc_notify_msg_t;

/* Zeroes m and sets kind, fault_domain = -1. */
void sc_notify_msg_init(sc_notify_msg_t *m, sc_notify_kind_t kind);

typedef struct sc_notify_opts {
    const char *spec;           /* FORMAT:URL[,FORMAT:URL...]; NULL or "": no target */
    const char *cluster;        /* the set's name, in every message; NULL: none */
    const char *from;           /* the sending member (the leader); NULL: none */
    const char *proxy;          /* explicit proxy URL; NULL: none (environment ignored) */
    size_t queue_max;           /* per target, 1..SC_NOTIFY_QUEUE_MAX (256) */
    int max_attempts;           /* attempts per message, 1..SC_NOTIFY_ATTEMPTS_MAX (5) */
    int64_t timeout_ms;         /* one attempt, connect included (5000) */
    int64_t connect_timeout_ms; /* TCP/TLS connect (3000; at most timeout_ms) */
    int64_t retry_initial_ms;   /* first backoff (1000) */
    int64_t retry_max_ms;       /* backoff cap, Retry-After cap too (60000) */
    int64_t stop_grace_ms;      /* what sc_notify_stop() waits for queued messages (2000) */
} sc_notify_opts_t;

/* The defaults (in parentheses above). */
void sc_notify_opts_init(sc_notify_opts_t *opts);

/* Per-target counters, since creation. */
typedef struct sc_notify_stats {
    uint64_t sent;        /* delivered (2xx) */
    uint64_t failed;      /* given up: attempts used up, or a status not worth a retry */
    uint64_t dropped;     /* never tried to the end: queue full at post, or left at stop */
    uint64_t retried;     /* attempts after a message's first */
    size_t queued;        /* waiting now, the one in flight included */
    long last_status;     /* HTTP status of the last attempt; 0: none or no answer */
    char last_error[160]; /* why the last attempt failed; "" after a success */
} sc_notify_stats_t;

typedef struct sc_notify sc_notify_t;

/* Checks a --notify value without keeping it, for the command line to refuse a bad one at
 * start. Returns the number of targets (0 for NULL or "", all blanks: notifications off), or
 * SC_E_CONFIG with err naming what is wrong and which target: "notify target 2: unknown
 * format "mail" (expected json, slack or teams)", "... missing URL (expected FORMAT:URL)",
 * "... URL must start with http:// or https:// (got "ftp:")", "... URL has no host", "too
 * many notify targets: 9 (at most 8)", "notify target 3 is empty". Never echoes a URL's path
 * or query (the secret). */
int sc_notify_spec_check(const char *spec, char *err, size_t errlen);

/* A new notifier for opts->spec, its worker thread started (none without a target: every
 * post is then a no-op). 0; SC_E_CONFIG with err (a bad spec, as sc_notify_spec_check, or
 * an option out of range); -ENOMEM; or -errno when the thread cannot start. */
int sc_notify_new(const sc_notify_opts_t *opts, char *err, size_t errlen, sc_notify_t **ret_notify);
/* Stops (sc_notify_stop) and frees; takes NULL; nulls the pointer. */
void sc_notify_destroy(sc_notify_t **notify);

/* Renders m and queues a copy for every target; never blocks on the network (it takes a
 * lock the worker holds only briefly). 0 when every target took it; -ENOBUFS when at least
 * one target's queue was full (dropped there, counted); -EINVAL for a bad m (kind out of
 * range, vms or drain_order NULL with a count); -ESHUTDOWN after stop; -ENOMEM. */
int sc_notify_post(sc_notify_t *n, const sc_notify_msg_t *m);

/* Lets queued messages go for up to stop_grace_ms, then aborts the transfers in flight and
 * joins the worker. Returns how many messages (all targets) were dropped by the stop. A
 * second call returns 0. Counters stay readable until destroy. */
size_t sc_notify_stop(sc_notify_t *n);

/* Targets configured (0..SC_NOTIFY_MAX_TARGETS). */
size_t sc_notify_targets(const sc_notify_t *n);
/* Target i's format, SC_NOTIFY_FORMAT_MAX when i is out of range. */
sc_notify_format_t sc_notify_target_format(const sc_notify_t *n, size_t i);
/* Target i without its secret, "slack https://hooks.slack.com" (borrowed; NULL out of range). */
const char *sc_notify_target_label(const sc_notify_t *n, size_t i);
/* A snapshot of target i's counters. 0, or -EINVAL (n NULL, i out of range). */
int sc_notify_stats(const sc_notify_t *n, size_t i, sc_notify_stats_t *ret_stats);
/* Every target's counters as a JSON array of {"format","target","sent","failed","dropped",
 * "retried","queued","last_status","last_error"} (for the coordinator's status and
 * metrics). *ret_json is the caller's. 0, -EINVAL, -ENOMEM. */
int sc_notify_stats_json(const sc_notify_t *n, json_object **ret_json);

/* "event_scheduled", ... ; NULL when out of range. */
const char *sc_notify_kind_name(sc_notify_kind_t kind);
/* "json", "slack", "teams"; NULL when out of range. */
const char *sc_notify_format_name(sc_notify_format_t format);

/* The body a target of format gets for m (what post queues), NUL-terminated, at most
 * SC_NOTIFY_BODY_MAX bytes; *ret_body is the caller's. cluster and from as in the opts;
 * now_ms is used when m->ts_ms is 0, and to write times within a day of the message as
 * "14:05 UTC" (else "2026-11-24 14:05 UTC"). 0, -EINVAL, -ENOMEM. */
int sc_notify_render(sc_notify_format_t format, const sc_notify_msg_t *m, const char *cluster,
                     const char *from, int64_t now_ms, char **ret_body);

#endif
