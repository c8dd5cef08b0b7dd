/* sc_imds: a client for the Azure Instance Metadata Service (IMDS).
 *
 * Talks to .../metadata/scheduledevents (GET the document, POST approvals) and to
 * .../metadata/instance/compute. libcurl underneath: one easy handle per endpoint, reused so
 * that connections stay alive; "Metadata: true" on every request; never any proxy (IMDS is
 * link-local and must not be proxied, whatever http_proxy / ALL_PROXY say); never an
 * X-Forwarded-For header; a connect and a total timeout; bodies bounded by SC_IMDS_MAX_BODY.
 *
 * Every outcome is mapped to 0 or an SC_E_* code (common/sc_error.h) and described in an
 * sc_imds_status_t: HTTP status, a one-line reason and a hint of when to try again.
 * The module never logs. An sc_imds_t is not thread-safe: use one per thread. */
#ifndef SC_IMDS_H
#define SC_IMDS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#define SC_IMDS_DEFAULT_BASE_URL "http://169.254.169.254"
#define SC_IMDS_DEFAULT_API_VERSION "2020-07-01"
#define SC_IMDS_DEFAULT_COMPUTE_API_VERSION "2021-02-01"
#define SC_IMDS_DEFAULT_CONNECT_TIMEOUT_MS 2000
#define SC_IMDS_DEFAULT_TOTAL_TIMEOUT_MS 5000
/* Largest body accepted from IMDS; more is SC_E_TOO_BIG. */
#define SC_IMDS_MAX_BODY (4L * 1024 * 1024)
/* Longest base URL / api-version accepted by sc_imds_new() (else -EINVAL). */
#define SC_IMDS_MAX_URL 1024
#define SC_IMDS_MAX_VERSION 64

typedef struct sc_imds sc_imds_t;

typedef struct sc_imds_opts {
    const char *base_url;            /* default "http://169.254.169.254"; "/metadata/..." is
                                        appended, e.g. "http://127.0.0.1:8080/vm_3" */
    const char *api_version;         /* scheduled events api-version, default "2020-07-01" */
    const char *compute_api_version; /* instance/compute api-version, default "2021-02-01" */
    long connect_timeout_ms;         /* connect timeout, default 2000 */
    long total_timeout_ms;           /* whole-request timeout, default 5000 */
    long first_timeout_ms;           /* whole-request timeout of the scheduled-events GETs until
                                        one succeeds: the first request enables the service and
                                        may take up to 2 minutes to answer (docs/imds.md).
                                        0 (default): total_timeout_ms; never shorter than it */
    volatile sig_atomic_t *abort;    /* NULL, or a flag (set by SIGTERM): a request gives up
                                        (-EINTR) at most about a second after it is set, and
                                        none starts while it is */
    void (*on_wait)(void *ud);       /* NULL, or called (in the caller's thread) about once a
                                        second while a request is under way: a daemon's
                                        watchdog keeps going through a long request */
    void *on_wait_ud;                /* its argument */
} sc_imds_opts_t;

typedef struct sc_imds_status {
    int rc;                 /* 0 or SC_E_* (HTTP_400/404/405/410/429/5XX/OTHER, TIMEOUT,
                               CONNREFUSED, NET, NOT_JSON, TRUNCATED, EMPTY, TOO_BIG) or -errno */
    long http_status;       /* HTTP status received; 0 when no HTTP answer */
    int64_t retry_after_ms; /* when to try again: Retry-After if sent, else a hint by error
                               kind; 0 on success */
    char message[256];      /* one-line reason, e.g. "GET .../scheduledevents: HTTP 429
                               (throttled)"; no retry time (that is retry_after_ms) */
} sc_imds_status_t;

typedef struct sc_compute {
    char name[256];              /* compute.name: the VM's name */
    int fault_domain;            /* platformFaultDomain (a string in IMDS); -1 when absent */
    int update_domain;           /* platformUpdateDomain (a string in IMDS); -1 when absent */
    char vm_scale_set_name[256]; /* vmScaleSetName; "" when absent */
    char zone[64];               /* zone; "" when absent */
    char resource_id[1024];      /* resourceId; "" when absent */
} sc_compute_t;

/* Fills opts with the defaults above. */
void sc_imds_opts_init(sc_imds_opts_t *opts);

/* Creates a client. opts NULL means defaults; NULL or 0 fields also take defaults. The
 * strings are copied (abort is borrowed: it must outlive the client). Returns 0, -EINVAL (bad
 * option: URL not http(s)://, too long, timeout out of range) or -ENOMEM / SC_E_NET (libcurl
 * could not initialise). */
int sc_imds_new(const sc_imds_opts_t *opts, sc_imds_t **ret_imds);

/* Frees the client and sets *imds to NULL. Takes NULL and *imds == NULL. */
void sc_imds_destroy(sc_imds_t **imds);

/* GET .../metadata/scheduledevents?api-version=V (with first_timeout_ms until one of this
 * client's succeeded). On success *ret_body (the caller frees, NUL-terminated) is a complete
 * JSON object (checked with json_tokener, not interpreted: sc_event.h's sc_doc_parse does
 * that) and *ret_len its length. Returns st->rc (-EINTR: the abort flag was set); st may be
 * NULL. ret_* are written only on success. */
int sc_imds_get_events(sc_imds_t *imds, char **ret_body, size_t *ret_len, sc_imds_status_t *st);

/* POST body (built by sc_approval_body() of common/sc_event.h) to .../metadata/scheduledevents
 * with Content-Type application/json. 2xx is success (the answer body is ignored). Returns
 * st->rc; st may be NULL. */
int sc_imds_post_events(sc_imds_t *imds, const char *body, sc_imds_status_t *st);
/* The same POST in two halves, so that it leaves from the caller's thread and its answer is
 * waited for in another: sc_imds_post_begin starts it (non-blocking: on a connection kept
 * alive the request is written at once; body is copied) — 0, -EINVAL (one begun already, or a
 * bad body), -ENOMEM, SC_E_NET; then sc_imds_post_end, from any one thread, waits for the end
 * (the total timeout, or the abort flag) and returns what sc_imds_post_events would. The
 * handle is used by nothing else in between. */
int sc_imds_post_begin(sc_imds_t *imds, const char *body);
int sc_imds_post_end(sc_imds_t *imds, sc_imds_status_t *st);

/* GET .../metadata/instance/compute?api-version=V and parse it (json-c). Returns st->rc
 * (SC_E_NOT_JSON when the answer is not a JSON object); st may be NULL. *ret_compute is
 * written only on success. */
int sc_imds_get_compute(sc_imds_t *imds, sc_compute_t *ret_compute, sc_imds_status_t *st);

/* Parses len bytes of an instance/compute answer (one JSON object, nothing after it) into
 * *ret_compute, which is written only on success. 0, or SC_E_NOT_JSON (not one JSON object),
 * SC_E_PARSE / SC_E_TOO_BIG (a field of the wrong type, out of range or too long: err names
 * it, e.g. "compute.platformFaultDomain is not a number"), -EINVAL (NULL) or -ENOMEM.
 * sc_imds_get_compute applies the same field rules to what it fetched. */
int sc_compute_parse(const char *buf, size_t len, sc_compute_t *ret_compute, char *err,
                     size_t errlen);

/* A compute field holding a domain number (platformFaultDomain, platformUpdateDomain): a string
 * of decimal digits, as IMDS sends it, or a JSON integer, in 0..10000, into *out; absent, null
 * or "": -1 (unknown). 0, or SC_E_PARSE with *ret_why the reason ("is not a number", "is out of
 * range", ...). Shared by sc_compute_parse and sc_member_id. */
int sc_compute_get_domain(json_object *obj, const char *key, int *out, const char **ret_why);

/* The base URL in use (borrowed, lives as long as imds). */
const char *sc_imds_base_url(const sc_imds_t *imds);

#endif
