/* A webhook receiver for unit tests: libmicrohttpd on 127.0.0.1 (ephemeral port), one thread
 * per connection, that records every request (path, Content-Type, body, arrival time) in
 * order and answers from a script, then 200 "ok":
 *
 *   sc_wr_t *wr = sc_wr_start();
 *   sc_wr_answer_t a[] = {{.status = 500}, {.status = 429, .retry_after = "1"},
 *                         {.hang = true, .path = "/slack"}};
 *   sc_wr_script(wr, a, 3);          // the next requests get these, in order (an answer
 *                                    // with a path only a request to that path)
 *   ... POST to sc_wr_url(wr, "/slack", buf, sizeof(buf)) ...
 *   sc_wr_wait(wr, 4, 5000);         // until 4 requests arrived, or 5 s
 *   sc_wr_stop(&wr);                 // also ends hung answers
 *
 * A hung answer waits until sc_wr_stop() (the client gives up first, or is stopped). */
#ifndef WEBHOOK_RECEIVER_H
#define WEBHOOK_RECEIVER_H

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define SC_WR_BODY_MAX 65536 /* bytes of a request body kept */
#define SC_WR_REQ_MAX 256    /* requests recorded */
#define SC_WR_SCRIPT_MAX 32  /* scripted answers */

/* One scripted answer. */
typedef struct sc_wr_answer {
    int status;              /* HTTP status (0: 200) */
    const char *retry_after; /* Retry-After header, or NULL */
    const char *body;        /* answer body (NULL: "ok") */
    bool hang;               /* never answer (until the receiver stops) */
    const char *path;        /* only for a request to this path; NULL: any */
} sc_wr_answer_t;

/* One recorded request. */
typedef struct sc_wr_req {
    char path[128];        /* URL path */
    char content_type[64]; /* Content-Type header */
    char *body;            /* NUL-terminated, malloc'd */
    int64_t at_ms;         /* CLOCK_MONOTONIC ms of arrival (body complete) */
} sc_wr_req_t;

typedef struct sc_wr {
    struct MHD_Daemon *d;                    /* the daemon */
    uint16_t port;                           /* its port on 127.0.0.1 */
    pthread_mutex_t lock;                    /* guards everything below */
    pthread_cond_t cond;                     /* a request arrived, or stopping */
    sc_wr_answer_t script[SC_WR_SCRIPT_MAX]; /* answers to give, in order */
    bool used[SC_WR_SCRIPT_MAX];             /* script[i] was given */
    size_t n_script;                         /* entries in script */
    sc_wr_req_t reqs[SC_WR_REQ_MAX];         /* requests, in arrival order */
    size_t n_reqs;                           /* entries in reqs */
    bool stopping;                           /* ends hung answers */
} sc_wr_t;

/* One connection's body so far. */
typedef struct sc_wr_upload {
    char *buf;  /* malloc'd, SC_WR_BODY_MAX + 1 */
    size_t len; /* bytes in buf */
} sc_wr_upload_t;

static inline int64_t sc_wr_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline enum MHD_Result sc_wr_handler(void *cls, struct MHD_Connection *conn, const char *url,
                                            const char *method, const char *version,
                                            const char *upload_data, size_t *upload_data_size,
                                            void **con_cls)
{
    sc_wr_t *wr = cls;
    sc_wr_upload_t *up = *con_cls;
    sc_wr_answer_t a = {0};
    struct MHD_Response *resp;
    const char *ct, *body;
    enum MHD_Result ret;

    (void)method, (void)version;
    if (!up) {
        if (!(up = calloc(1, sizeof(*up))) || !(up->buf = malloc(SC_WR_BODY_MAX + 1))) {
            free(up);
            return MHD_NO;
        }
        *con_cls = up;
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;

        if (n > SC_WR_BODY_MAX - up->len)
            n = SC_WR_BODY_MAX - up->len;
        memcpy(up->buf + up->len, upload_data, n);
        up->len += n;
        *upload_data_size = 0;
        return MHD_YES;
    }
    up->buf[up->len] = '\0';
    ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");

    pthread_mutex_lock(&wr->lock);
    if (wr->n_reqs < SC_WR_REQ_MAX) {
        sc_wr_req_t *r = &wr->reqs[wr->n_reqs++];

        snprintf(r->path, sizeof(r->path), "%s", url);
        snprintf(r->content_type, sizeof(r->content_type), "%s", ct ? ct : "");
        r->body = strdup(up->buf);
        r->at_ms = sc_wr_now_ms();
    }
    for (size_t i = 0; i < wr->n_script; i++) {
        if (!wr->used[i] && (!wr->script[i].path || strcmp(wr->script[i].path, url) == 0)) {
            wr->used[i] = true;
            a = wr->script[i];
            break;
        }
    }
    pthread_cond_broadcast(&wr->cond);
    while (a.hang && !wr->stopping)
        pthread_cond_wait(&wr->cond, &wr->lock);
    pthread_mutex_unlock(&wr->lock);
    if (a.hang)
        return MHD_NO; /* stopping: close without an answer */

    body = a.body ? a.body : "ok";
    resp = MHD_create_response_from_buffer(strlen(body), (void *)(uintptr_t)body,
                                           MHD_RESPMEM_MUST_COPY);
    if (!resp)
        return MHD_NO;
    if (a.retry_after)
        MHD_add_response_header(resp, "Retry-After", a.retry_after);
    ret = MHD_queue_response(conn, (unsigned)(a.status ? a.status : 200), resp);
    MHD_destroy_response(resp);
    return ret;
}

static inline void sc_wr_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                                   enum MHD_RequestTerminationCode toe)
{
    sc_wr_upload_t *up = *con_cls;

    (void)cls, (void)conn, (void)toe;
    if (up)
        free(up->buf);
    free(up);
    *con_cls = NULL;
}

/* Starts a receiver on 127.0.0.1. NULL on failure. */
static inline sc_wr_t *sc_wr_start(void)
{
    sc_wr_t *wr = calloc(1, sizeof(*wr));
    pthread_condattr_t ca;
    struct sockaddr_in sa;
    const union MHD_DaemonInfo *info;

    if (!wr)
        return NULL;
    pthread_mutex_init(&wr->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wr->cond, &ca);
    pthread_condattr_destroy(&ca);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    wr->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
                             NULL, NULL, sc_wr_handler, wr, MHD_OPTION_SOCK_ADDR, &sa,
                             MHD_OPTION_NOTIFY_COMPLETED, sc_wr_completed, wr, MHD_OPTION_END);
    if (!wr->d || !(info = MHD_get_daemon_info(wr->d, MHD_DAEMON_INFO_BIND_PORT))) {
        if (wr->d)
            MHD_stop_daemon(wr->d);
        pthread_cond_destroy(&wr->cond);
        pthread_mutex_destroy(&wr->lock);
        free(wr);
        return NULL;
    }
    wr->port = info->port;
    return wr;
}

/* Ends hung answers, stops the daemon, frees; takes NULL; nulls the pointer. */
static inline void sc_wr_stop(sc_wr_t **pwr)
{
    sc_wr_t *wr = *pwr;

    if (!wr)
        return;
    pthread_mutex_lock(&wr->lock);
    wr->stopping = true;
    pthread_cond_broadcast(&wr->cond);
    pthread_mutex_unlock(&wr->lock);
    MHD_stop_daemon(wr->d);
    for (size_t i = 0; i < wr->n_reqs; i++)
        free(wr->reqs[i].body);
    pthread_cond_destroy(&wr->cond);
    pthread_mutex_destroy(&wr->lock);
    free(wr);
    *pwr = NULL;
}

/* "http://127.0.0.1:PORT" + path into buf. Returns buf. */
static inline const char *sc_wr_url(const sc_wr_t *wr, const char *path, char *buf, size_t len)
{
    snprintf(buf, len, "http://127.0.0.1:%u%s", (unsigned)wr->port, path);
    return buf;
}

/* The next requests get answers[0..n-1], in order, each the first unused one whose path
 * matches (replaces what was left of a former script). */
static inline void sc_wr_script(sc_wr_t *wr, const sc_wr_answer_t *answers, size_t n)
{
    pthread_mutex_lock(&wr->lock);
    wr->n_script = n < SC_WR_SCRIPT_MAX ? n : SC_WR_SCRIPT_MAX;
    if (wr->n_script)
        memcpy(wr->script, answers, wr->n_script * sizeof(*answers));
    memset(wr->used, 0, sizeof(wr->used));
    pthread_mutex_unlock(&wr->lock);
}

/* Waits until at least n requests arrived, for at most timeout_ms. Returns how many did. */
static inline size_t sc_wr_wait(sc_wr_t *wr, size_t n, int64_t timeout_ms)
{
    int64_t until = sc_wr_now_ms() + timeout_ms;
    struct timespec ts = {.tv_sec = (time_t)(until / 1000), .tv_nsec = (until % 1000) * 1000000};
    size_t got;

    pthread_mutex_lock(&wr->lock);
    while (wr->n_reqs < n && !wr->stopping &&
           pthread_cond_timedwait(&wr->cond, &wr->lock, &ts) == 0)
        ;
    got = wr->n_reqs;
    pthread_mutex_unlock(&wr->lock);
    return got;
}

/* Requests recorded so far. */
static inline size_t sc_wr_count(sc_wr_t *wr)
{
    size_t n;

    pthread_mutex_lock(&wr->lock);
    n = wr->n_reqs;
    pthread_mutex_unlock(&wr->lock);
    return n;
}

/* Request i (stable once recorded: the receiver only appends). NULL when not there yet. */
static inline const sc_wr_req_t *sc_wr_req(sc_wr_t *wr, size_t i)
{
    const sc_wr_req_t *r;

    pthread_mutex_lock(&wr->lock);
    r = i < wr->n_reqs ? &wr->reqs[i] : NULL;
    pthread_mutex_unlock(&wr->lock);
    return r;
}

#endif
