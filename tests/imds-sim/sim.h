/* imds-sim: a local Azure IMDS (Scheduled Events) and fabric simulator for a whole
 * availability set. Internal interfaces between its parts:
 *
 *   sim_main.c      command line, signals, the 50 ms ticker
 *   sim_fabric.c    the fabric: VMs, events, lifecycles, approvals, incarnations, faults,
 *                   rollouts, the IMDS document and the control API (one mutex)
 *   sim_timeline.c  the timeline: one JSON object per fact, to a file and a bounded ring
 *   sim_http.c      libmicrohttpd: routing, request bodies, delayed (suspended) answers
 *
 * Times: every deadline is kept on CLOCK_MONOTONIC in real milliseconds. Simulated time is
 * start_wall + real_elapsed * time_scale; durations given in simulated seconds are divided
 * by time_scale to become real deadlines. */
#ifndef SIM_H
#define SIM_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Hard limits on what an outsider controls. */
#define SIM_MAX_VMS 10000        /* --vms */
#define SIM_MAX_EVENTS 4096      /* events ever created (active and finished) */
#define SIM_MAX_BODY 65536       /* request body bytes */
#define SIM_MAX_NAME 48          /* VM name bytes, prefix included */
#define SIM_MAX_DESCRIPTION 1024 /* Description bytes */
#define SIM_MAX_NOTICE_S 604800  /* 7 days, as a predicted hardware failure */
#define SIM_MAX_DURATION_S 86400 /* DurationInSeconds */
#define SIM_MAX_START_REQUESTS 100
#define SIM_MAX_FAULT_COUNT 1000000
#define SIM_MAX_VM_LISTEN 256 /* --vm-listen addresses (one server thread each) */
#define SIM_MAX_QUERY_ARGS 64 /* query parameters of one request */
#define SIM_MAX_ZONE 17       /* zone bytes + NUL (POST /control/vms) */
#define SIM_MAX_PG 65         /* placement group id bytes + NUL */
#define SIM_MAX_DOMAIN 1000   /* fault and update domains of added VMs: 0..999 */

/* Options of the whole program, as parsed from the command line. */
typedef struct {
    int vms;                   /* --vms N */
    int fault_domains;         /* --fault-domains F */
    int update_domains;        /* --update-domains U (default F) */
    const char *prefix;        /* --name-prefix (default "vm_") */
    double time_scale;         /* --time-scale X */
    const char *timeline_path; /* --timeline FILE or NULL */
    size_t timeline_keep;      /* --timeline-keep: entries kept in memory */
    const char *on_impact;     /* --on-impact CMD or NULL */
    uint64_t seed;             /* --seed S */
    bool unknown_event_ok;     /* --unknown-event-ok: 200 for an unknown EventId */
    double first_call_delay_s; /* --first-call-delay: simulated seconds */
    double idle_disable_s;     /* --idle-disable: simulated seconds, 0 = never */
    double approval_delay_s;   /* --approval-delay: simulated seconds */
    double complete_after_s;   /* --complete-after: simulated seconds after start */
    double unknown_duration_s; /* --unknown-impact: impact length when Duration is -1 */
    double terminate_notice_s; /* --terminate-notice: a Terminate's notice (simulated s) */
    double fault_timeout_s;    /* --fault-timeout: real seconds a "timeout" fault holds */
    int rate_limit;            /* --rate-limit: requests per second per VM, 0 = off */
    const char *own_events;    /* --own-events-only vm_a,vm_b */
} sim_opts_t;

typedef struct sim_fabric sim_fabric_t;
typedef struct sim_timeline sim_timeline_t;

/* What the HTTP layer must do with one request. */
typedef enum {
    SIM_ANS_RESPOND, /* send status + body */
    SIM_ANS_CLOSE,   /* close the connection without an answer */
    SIM_ANS_DELAY,   /* hold the request until delay_until_ms, then ask again */
    SIM_ANS_HOLD,    /* hold the request until delay_until_ms, then close it */
} sim_ans_kind_t;

typedef struct {
    sim_ans_kind_t kind;      /* what to do */
    int status;               /* HTTP status for SIM_ANS_RESPOND */
    char *body;               /* malloc'd body (may be NULL = empty), the caller frees */
    size_t body_len;          /* bytes in body */
    int64_t delay_until_ms;   /* monotonic ms, for DELAY and HOLD */
    const char *content_type; /* static string or NULL */
} sim_answer_t;

/* One request as the HTTP layer saw it. All strings borrowed; NULL when absent. */
typedef struct {
    const char *method;      /* "GET", "POST", ... */
    const char *url;         /* path without the query */
    const char *api_version; /* ?api-version= */
    const char *metadata;    /* Metadata: header */
    bool forwarded;          /* X-Forwarded-For present */
    const char *body;        /* request body (not NUL-terminated) */
    size_t body_len;         /* its length */
    bool body_too_big;       /* body exceeded SIM_MAX_BODY */
    bool resumed;            /* asked again after a DELAY */
    const char *query_since; /* ?since= for /control/timeline */
    const char *vm;          /* the VM of a --vm-listen address (url is then the IMDS path
                                itself, /metadata/...), NULL on --listen (url /<vm>/...) */
    const char *bad_query;   /* why the query is refused (a parameter given twice, too many
                                parameters), NULL when it is not */
} sim_request_t;

/* --- timeline (called with the fabric's lock held) --- */

/* Opens path (append) when not NULL; keeps the last keep entries in memory. */
int sim_timeline_new(const char *path, size_t keep, sim_timeline_t **ret_tl);
void sim_timeline_destroy(sim_timeline_t **tl);
/* Adds one fact: sets "seq", writes the line; takes ownership of obj. */
void sim_timeline_add(sim_timeline_t *tl, json_object *obj);
/* The kept entries with seq >= since, as a JSON array text (malloc'd), or NULL on ENOMEM. */
char *sim_timeline_array(sim_timeline_t *tl, uint64_t since, size_t *ret_len);

/* --- fabric --- */

/* Builds the set from opts (borrowed for the fabric's life). rc 0 or negative; *ret_why set
 * to a static reason on failure. */
int sim_fabric_new(const sim_opts_t *opts, sim_fabric_t **ret_fabric, const char **ret_why);
void sim_fabric_destroy(sim_fabric_t **fabric);
/* Advances simulated time: starts, ends impacts, completes, runs hooks, reaps children. */
void sim_fabric_tick(sim_fabric_t *f);
/* True when the set has a VM of that name. */
bool sim_fabric_has_vm(sim_fabric_t *f, const char *name);
/* Answers one IMDS request for /<vm>/metadata/..., or for /metadata/... of req->vm. */
void sim_fabric_imds(sim_fabric_t *f, const sim_request_t *req, sim_answer_t *ans);
/* Answers one control request for /control/... */
void sim_fabric_control(sim_fabric_t *f, const sim_request_t *req, sim_answer_t *ans);

/* --- http --- */

typedef struct sim_http sim_http_t;
/* Listens on addr:port (port 0 = any); *ret_port is the bound port. vm NULL: the control API
 * and every VM's IMDS under /<vm>/; vm a VM's name (borrowed for the server's life): that
 * VM's IMDS alone, at the real paths (/metadata/...), as on 169.254.169.254. */
int sim_http_new(sim_fabric_t *f, const char *addr, int port, const char *vm, sim_http_t **ret_http,
                 int *ret_port);
/* Resumes held requests that are due. */
void sim_http_tick(sim_http_t *h);
/* Resumes everything held, stops the daemon, frees. */
void sim_http_destroy(sim_http_t **h);

#endif
