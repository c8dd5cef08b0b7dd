/* A tiny fake IMDS for unit tests: libmicrohttpd on 127.0.0.1 (ephemeral port), one thread
 * per connection, serving <prefix>/metadata/scheduledevents and
 * <prefix>/metadata/instance/compute. Tests set `ts->cfg` to choose the answer and read what
 * the last request looked like in `ts->last` (both under ts->lock).
 *
 *   sc_ts_t *ts = sc_ts_start("/vm_3");
 *   sc_ts_lock(ts); ts->cfg.status = 429; ts->cfg.retry_after = "3"; sc_ts_unlock(ts);
 *   ... point the client at sc_ts_url(ts) ...
 *   sc_ts_stop(&ts);
 *
 * Like IMDS, a request without "Metadata: true" gets 400 and an unknown path 404. */
#ifndef IMDS_TEST_SERVER_H
#define IMDS_TEST_SERVER_H

#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SC_TS_MAX_POST 65536

#define SC_TS_EVENTS_DOC                                                                           \
    "{\"DocumentIncarnation\": 2, \"Events\": [{\"EventId\": "                                     \
    "\"C7061BAC-AFDC-4513-B24B-AA5F13A16123\", \"EventStatus\": \"Scheduled\", \"EventType\": "    \
    "\"Freeze\", \"ResourceType\": \"VirtualMachine\", \"Resources\": [\"vm_3\"], \"NotBefore\": " \
    "\"Mon, 11 Apr 2022 22:26:58 GMT\", \"Description\": \"\", \"EventSource\": \"Platform\", "    \
    "\"DurationInSeconds\": 5}]}\n"

#define SC_TS_COMPUTE_DOC                                                                          \
    "{\"location\": \"westeurope\", \"name\": \"vm_3\", \"platformFaultDomain\": \"1\", "          \
    "\"platformUpdateDomain\": \"2\", \"vmScaleSetName\": \"\", \"zone\": \"\", "                  \
    "\"resourceId\": \"/subscriptions/0000/resourceGroups/rg/providers/Microsoft.Compute/"         \
    "virtualMachines/vm_3\", \"tags\": \"\"}"

/* How to answer the next requests. Zeroed = the real documents with 200. */
typedef struct sc_ts_cfg {
    int status;              /* HTTP status (0: 200) */
    const char *body;        /* body (NULL: the endpoint's document) */
    const char *retry_after; /* Retry-After header value, or NULL */
    int sleep_ms;            /* sleep before answering */
    int post_sleep_ms;       /* sleep before answering a POST (after sleep_ms) */
    uint64_t declared_len;   /* > 0: declare this Content-Length but send only `body` */
    uint64_t stream_len;     /* > 0: send this many spaces, chunked (no Content-Length) */
    bool drop;               /* close the connection without an answer */
} sc_ts_cfg_t;

/* What the last request looked like. */
typedef struct sc_ts_req {
    char method[16];               /* GET / POST */
    char path[256];                /* URL path */
    char api_version[64];          /* ?api-version= ("" when absent) */
    char metadata[32];             /* Metadata header ("" when absent) */
    char content_type[64];         /* Content-Type header */
    bool has_xff;                  /* X-Forwarded-For was sent */
    bool has_via;                  /* Via was sent (a proxy would add it) */
    char body[SC_TS_MAX_POST + 1]; /* request body */
    size_t body_len;               /* bytes in body */
} sc_ts_req_t;

typedef struct sc_ts {
    struct MHD_Daemon *d;  /* the daemon */
    uint16_t port;         /* its port on 127.0.0.1 */
    char prefix[64];       /* path prefix, e.g. "/vm_3" */
    char url[128];         /* "http://127.0.0.1:<port><prefix>" */
    pthread_mutex_t lock;  /* guards cfg, last, counters */
    sc_ts_cfg_t cfg;       /* answer to give */
    sc_ts_req_t last;      /* last request */
    int requests;          /* requests answered */
    int posts;             /* of which POSTs */
    int connections;       /* TCP connections accepted */
    volatile int stopping; /* wakes sleeping handlers */
} sc_ts_t;

/* One request's upload state. */
typedef struct sc_ts_upload {
    char body[SC_TS_MAX_POST + 1]; /* body so far */
    size_t len;                    /* bytes in body */
} sc_ts_upload_t;

/* Body of a callback response. */
typedef struct sc_ts_stream {
    char *body;      /* bytes really sent */
    size_t len;      /* their count */
    uint64_t spaces; /* or: this many spaces */
} sc_ts_stream_t;

static inline void sc_ts_lock(sc_ts_t *ts)
{
    pthread_mutex_lock(&ts->lock);
}

static inline void sc_ts_unlock(sc_ts_t *ts)
{
    pthread_mutex_unlock(&ts->lock);
}

/* Sets the answer (copied) and clears the record of the last request. */
static inline void sc_ts_set(sc_ts_t *ts, const sc_ts_cfg_t *cfg)
{
    sc_ts_lock(ts);
    if (cfg)
        ts->cfg = *cfg;
    else
        memset(&ts->cfg, 0, sizeof(ts->cfg));
    memset(&ts->last, 0, sizeof(ts->last));
    sc_ts_unlock(ts);
}

static inline ssize_t sc_ts_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    sc_ts_stream_t *s = cls;

    if (s->spaces) {
        size_t n;

        if (pos >= s->spaces)
            return MHD_CONTENT_READER_END_OF_STREAM;
        n = s->spaces - pos < max ? (size_t)(s->spaces - pos) : max;
        memset(buf, ' ', n);
        return (ssize_t)n;
    }
    if (pos >= s->len)
        return MHD_CONTENT_READER_END_WITH_ERROR; /* close before Content-Length is reached */
    if (max > s->len - pos)
        max = s->len - pos;
    memcpy(buf, s->body + pos, max);
    return (ssize_t)max;
}

static inline void sc_ts_stream_free(void *cls)
{
    sc_ts_stream_t *s = cls;

    free(s->body);
    free(s);
}

static inline void sc_ts_copy(char *dst, size_t dstlen, const char *src)
{
    snprintf(dst, dstlen, "%s", src ? src : "");
}

static inline enum MHD_Result sc_ts_handler(void *cls, struct MHD_Connection *conn, const char *url,
                                            const char *method, const char *version,
                                            const char *upload_data, size_t *upload_data_size,
                                            void **con_cls)
{
    sc_ts_t *ts = cls;
    sc_ts_upload_t *up = *con_cls;
    sc_ts_cfg_t cfg;
    struct MHD_Response *resp;
    const char *body, *md;
    char path_events[128], path_compute[128];
    bool known;
    int status, slept;
    enum MHD_Result ret;

    if (!up) {
        if (!(up = calloc(1, sizeof(*up))))
            return MHD_NO;
        *con_cls = up;
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;

        if (n > SC_TS_MAX_POST - up->len)
            n = SC_TS_MAX_POST - up->len;
        memcpy(up->body + up->len, upload_data, n);
        up->len += n;
        *upload_data_size = 0;
        return MHD_YES;
    }

    sc_ts_lock(ts);
    cfg = ts->cfg;
    memset(&ts->last, 0, sizeof(ts->last));
    sc_ts_copy(ts->last.method, sizeof(ts->last.method), method);
    sc_ts_copy(ts->last.path, sizeof(ts->last.path), url);
    sc_ts_copy(ts->last.api_version, sizeof(ts->last.api_version),
               MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "api-version"));
    md = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Metadata");
    sc_ts_copy(ts->last.metadata, sizeof(ts->last.metadata), md);
    sc_ts_copy(ts->last.content_type, sizeof(ts->last.content_type),
               MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type"));
    ts->last.has_xff = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Forwarded-For");
    ts->last.has_via = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Via");
    memcpy(ts->last.body, up->body, up->len);
    ts->last.body[up->len] = '\0';
    ts->last.body_len = up->len;
    ts->requests++;
    ts->posts += strcmp(method, "POST") == 0;
    sc_ts_unlock(ts);

    if (strcmp(method, "POST") == 0)
        cfg.sleep_ms += cfg.post_sleep_ms;
    for (slept = 0; slept < cfg.sleep_ms && !ts->stopping; slept += 10)
        usleep(10000);
    if (cfg.drop)
        return MHD_NO;

    snprintf(path_events, sizeof(path_events), "%s/metadata/scheduledevents", ts->prefix);
    snprintf(path_compute, sizeof(path_compute), "%s/metadata/instance/compute", ts->prefix);
    known = strcmp(url, path_events) == 0 || strcmp(url, path_compute) == 0;
    status = cfg.status ? cfg.status : 200;
    body = cfg.body                         ? cfg.body
           : strcmp(url, path_compute) == 0 ? SC_TS_COMPUTE_DOC
                                            : SC_TS_EVENTS_DOC;
    if (!known) {
        status = 404;
        body = "{\"error\": \"Not found\"}";
    } else if (!md || strcmp(md, "true") != 0) {
        status = 400;
        body = "{\"error\": \"Bad request. Required metadata header not specified\"}";
    }

    if (known && (cfg.declared_len || cfg.stream_len)) {
        sc_ts_stream_t *s = calloc(1, sizeof(*s));

        if (!s || !(s->body = strdup(body))) {
            free(s);
            return MHD_NO;
        }
        s->len = strlen(body);
        s->spaces = cfg.stream_len;
        resp =
            MHD_create_response_from_callback(cfg.stream_len ? MHD_SIZE_UNKNOWN : cfg.declared_len,
                                              16384, sc_ts_stream_read, s, sc_ts_stream_free);
        if (!resp) {
            sc_ts_stream_free(s);
            return MHD_NO;
        }
    } else {
        resp = MHD_create_response_from_buffer(strlen(body), (void *)(uintptr_t)body,
                                               MHD_RESPMEM_MUST_COPY);
        if (!resp)
            return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "application/json; charset=utf-8");
    if (cfg.retry_after)
        MHD_add_response_header(resp, "Retry-After", cfg.retry_after);
    ret = MHD_queue_response(conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    (void)version;
    return ret;
}

static inline void sc_ts_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                                   enum MHD_RequestTerminationCode toe)
{
    free(*con_cls);
    *con_cls = NULL;
}

static inline void sc_ts_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                                enum MHD_ConnectionNotificationCode toe)
{
    sc_ts_t *ts = cls;

    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        sc_ts_lock(ts);
        ts->connections++;
        sc_ts_unlock(ts);
    }
}

/* Starts a server on 127.0.0.1 whose documents live under prefix. NULL on failure. */
static inline sc_ts_t *sc_ts_start(const char *prefix)
{
    sc_ts_t *ts = calloc(1, sizeof(*ts));
    struct sockaddr_in sa;
    const union MHD_DaemonInfo *info;

    if (!ts)
        return NULL;
    pthread_mutex_init(&ts->lock, NULL);
    sc_ts_copy(ts->prefix, sizeof(ts->prefix), prefix);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = 0;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ts->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
                             NULL, NULL, sc_ts_handler, ts, MHD_OPTION_SOCK_ADDR, &sa,
                             MHD_OPTION_NOTIFY_COMPLETED, sc_ts_completed, ts,
                             MHD_OPTION_NOTIFY_CONNECTION, sc_ts_notify, ts, MHD_OPTION_END);
    if (!ts->d || !(info = MHD_get_daemon_info(ts->d, MHD_DAEMON_INFO_BIND_PORT))) {
        if (ts->d)
            MHD_stop_daemon(ts->d);
        pthread_mutex_destroy(&ts->lock);
        free(ts);
        return NULL;
    }
    ts->port = info->port;
    snprintf(ts->url, sizeof(ts->url), "http://127.0.0.1:%u%s", (unsigned)ts->port, prefix);
    return ts;
}

static inline void sc_ts_stop(sc_ts_t **pts)
{
    sc_ts_t *ts = *pts;

    if (!ts)
        return;
    ts->stopping = 1;
    MHD_stop_daemon(ts->d);
    pthread_mutex_destroy(&ts->lock);
    free(ts);
    *pts = NULL;
}

/* A port on 127.0.0.1 that nothing listens on (bound, then closed). 0 on failure. */
static inline uint16_t sc_ts_closed_port(void)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    uint16_t port = 0;

    if (fd < 0)
        return 0;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
        port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

#endif
