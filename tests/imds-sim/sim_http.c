/* sim_http: the libmicrohttpd side of imds-sim. One epoll thread serves every VM's IMDS and
 * the control API (--listen), and one more serves each --vm-listen address (that VM's IMDS
 * at the real paths); the fabric decides every answer. Requests that must wait (the slow first
 * call of a VM, the "timeout" fault) are suspended and resumed by sim_http_tick from the
 * ticker thread. "No answer" (a VM under impact, the "reset" fault) is MHD_NO: the
 * connection is closed without a response, which a client sees as an empty reply / reset. */
#include "sim.h"

#include "sc_log.h"
#include "sc_time.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef struct req_ctx {
    char *body;                  /* request body so far */
    size_t len;                  /* bytes in body */
    bool too_big;                /* body exceeded SIM_MAX_BODY (the rest is dropped) */
    bool held;                   /* suspended, waiting in h->held */
    bool resumed;                /* came back from a DELAY */
    bool close_after;            /* came back from a HOLD: close it */
    char bad_query[96];          /* why the query is refused, "" when it is not */
    int64_t due_ms;              /* monotonic ms to resume */
    struct MHD_Connection *conn; /* its connection */
    struct req_ctx *next;        /* next in h->held */
} req_ctx_t;

struct sim_http {
    sim_fabric_t *f;      /* the fabric (borrowed) */
    const char *vm;       /* --vm-listen: the VM served at the real paths (borrowed), or NULL */
    struct MHD_Daemon *d; /* the server */
    pthread_mutex_t lock; /* guards held and stopping */
    req_ctx_t *held;      /* suspended requests */
    bool stopping;        /* shutting down: close whatever comes back */
};

/* MHD's own messages ("Application reported internal error" whenever a VM under impact
 * closes a connection unanswered) are expected here: written only at debug level. */
static void s_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[256];

    (void)cls;
    if (!sc_log_enabled(SC_LOG_DEBUG))
        return;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    sc_log_debug("libmicrohttpd", "detail=\"%s\"", sc_log_q(msg));
}

static void s_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                        enum MHD_RequestTerminationCode toe)
{
    req_ctx_t *ctx = *con_cls;

    (void)cls;
    (void)conn;
    (void)toe;
    if (!ctx)
        return;
    free(ctx->body);
    free(ctx);
    *con_cls = NULL;
}

static enum MHD_Result s_send(struct MHD_Connection *conn, sim_answer_t *ans)
{
    struct MHD_Response *r;
    enum MHD_Result ret;

    if (ans->body)
        r = MHD_create_response_from_buffer(ans->body_len, ans->body, MHD_RESPMEM_MUST_FREE);
    else
        r = MHD_create_response_from_buffer(0, (void *)(uintptr_t) "", MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(ans->body);
        return MHD_NO;
    }
    ans->body = NULL;
    if (ans->content_type)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ans->content_type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_SERVER, "imds-sim");
    ret = MHD_queue_response(conn, (unsigned)ans->status, r);
    MHD_destroy_response(r);
    return ret;
}

/* The query's keys so far, to find one given twice. */
typedef struct {
    const char *key[SIM_MAX_QUERY_ARGS]; /* keys seen (borrowed from MHD) */
    int n;                               /* keys seen, up to SIM_MAX_QUERY_ARGS + 1 */
    const char *twice;                   /* the first key given twice, or NULL */
} query_keys_t;

static enum MHD_Result s_query_key(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    query_keys_t *q = cls;

    (void)kind;
    (void)value;
    if (q->n >= SIM_MAX_QUERY_ARGS) {
        q->n = SIM_MAX_QUERY_ARGS + 1;
        return MHD_NO;
    }
    for (int i = 0; i < q->n; i++)
        if (strcmp(q->key[i], key) == 0) {
            q->twice = key;
            return MHD_NO;
        }
    q->key[q->n++] = key;
    return MHD_YES;
}

/* IMDS refuses a request whose query names a parameter twice (?api-version=X&api-version=X):
 * writes why into ctx->bad_query, or "" when the query is fine. */
static void s_check_query(struct MHD_Connection *conn, req_ctx_t *ctx)
{
    query_keys_t q = {.n = 0};

    ctx->bad_query[0] = '\0';
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, s_query_key, &q);
    if (q.twice)
        snprintf(ctx->bad_query, sizeof(ctx->bad_query), "query parameter %.40s given twice",
                 q.twice);
    else if (q.n > SIM_MAX_QUERY_ARGS)
        snprintf(ctx->bad_query, sizeof(ctx->bad_query), "more than %d query parameters",
                 SIM_MAX_QUERY_ARGS);
}

static void s_hold(sim_http_t *h, req_ctx_t *ctx, int64_t due_ms)
{
    pthread_mutex_lock(&h->lock);
    ctx->held = true;
    ctx->due_ms = due_ms;
    ctx->next = h->held;
    h->held = ctx;
    MHD_suspend_connection(ctx->conn);
    pthread_mutex_unlock(&h->lock);
}

static enum MHD_Result s_access(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_data_size, void **con_cls)
{
    sim_http_t *h = cls;
    req_ctx_t *ctx = *con_cls;
    sim_request_t req;
    sim_answer_t ans;
    bool stopping;

    (void)version;
    if (!ctx) {
        if (!(ctx = calloc(1, sizeof(*ctx))))
            return MHD_NO;
        ctx->conn = conn;
        *con_cls = ctx;
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (!ctx->too_big && ctx->len + *upload_data_size <= SIM_MAX_BODY) {
            char *grown = realloc(ctx->body, ctx->len + *upload_data_size);

            if (!grown)
                return MHD_NO;
            ctx->body = grown;
            memcpy(ctx->body + ctx->len, upload_data, *upload_data_size);
            ctx->len += *upload_data_size;
        } else {
            ctx->too_big = true;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    pthread_mutex_lock(&h->lock);
    stopping = h->stopping;
    pthread_mutex_unlock(&h->lock);
    if (stopping || ctx->close_after)
        return MHD_NO;

    memset(&req, 0, sizeof(req));
    req.method = method;
    req.url = url;
    req.api_version = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "api-version");
    req.metadata = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Metadata");
    req.forwarded = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Forwarded-For") != NULL;
    req.body = ctx->body;
    req.body_len = ctx->len;
    req.body_too_big = ctx->too_big;
    req.resumed = ctx->resumed;
    req.query_since = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "since");
    req.vm = h->vm;
    s_check_query(conn, ctx);
    req.bad_query = ctx->bad_query[0] ? ctx->bad_query : NULL;

    /* A VM's own address has its IMDS only, as 169.254.169.254 has: no control API. */
    if (!h->vm && strncmp(url, "/control/", 9) == 0)
        sim_fabric_control(h->f, &req, &ans);
    else
        sim_fabric_imds(h->f, &req, &ans);

    switch (ans.kind) {
    case SIM_ANS_RESPOND: return s_send(conn, &ans);
    case SIM_ANS_CLOSE: free(ans.body); return MHD_NO;
    case SIM_ANS_DELAY:
    case SIM_ANS_HOLD:
        free(ans.body);
        ctx->close_after = ans.kind == SIM_ANS_HOLD;
        s_hold(h, ctx, ans.delay_until_ms);
        return MHD_YES;
    }
    return MHD_NO;
}

/* Resumes the held requests due by now (all of them when all is set). */
static void s_resume(sim_http_t *h, bool all)
{
    int64_t now = sc_mono_ms();
    req_ctx_t **pp;

    pthread_mutex_lock(&h->lock);
    pp = &h->held;
    while (*pp) {
        req_ctx_t *ctx = *pp;

        if (all || now >= ctx->due_ms) {
            *pp = ctx->next;
            ctx->next = NULL;
            ctx->held = false;
            ctx->resumed = true;
            MHD_resume_connection(ctx->conn);
        } else {
            pp = &ctx->next;
        }
    }
    pthread_mutex_unlock(&h->lock);
}

void sim_http_tick(sim_http_t *h)
{
    s_resume(h, false);
}

int sim_http_new(sim_fabric_t *f, const char *addr, int port, const char *vm, sim_http_t **ret_http,
                 int *ret_port)
{
    sim_http_t *h = calloc(1, sizeof(*h));
    struct sockaddr_in sin;
    const union MHD_DaemonInfo *info;

    if (!h)
        return -ENOMEM;
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
        free(h);
        return -EINVAL;
    }
    h->f = f;
    h->vm = vm;
    pthread_mutex_init(&h->lock, NULL);
    h->d = MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG,
        (uint16_t)port, NULL, NULL, s_access, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sin,
        MHD_OPTION_NOTIFY_COMPLETED, s_completed, NULL, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned int)8192, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)120,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)4096, MHD_OPTION_LISTENING_ADDRESS_REUSE,
        (unsigned int)1, MHD_OPTION_EXTERNAL_LOGGER, s_mhd_log, NULL, MHD_OPTION_END);
    if (!h->d) {
        pthread_mutex_destroy(&h->lock);
        free(h);
        return -EADDRINUSE;
    }
    info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    *ret_port = info ? info->port : port;
    *ret_http = h;
    return 0;
}

void sim_http_destroy(sim_http_t **hp)
{
    sim_http_t *h = hp ? *hp : NULL;

    if (!h)
        return;
    pthread_mutex_lock(&h->lock);
    h->stopping = true;
    pthread_mutex_unlock(&h->lock);
    /* MHD must not be stopped with suspended connections: bring them back (they are closed
     * unanswered because stopping is set), then stop. */
    s_resume(h, true);
    MHD_stop_daemon(h->d);
    pthread_mutex_destroy(&h->lock);
    free(h);
    *hp = NULL;
}
