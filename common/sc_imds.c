#include "sc_imds.h"

#include "sc_error.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Retry hints (ms) when the server sends no Retry-After. */
#define S_HINT_BUG_MS 60000      /* 400/405: our request is wrong; retrying soon will not help */
#define S_HINT_NOT_FOUND_MS 5000 /* 404 */
#define S_HINT_GONE_MS 1000      /* 410: IMDS not ready; retry for up to 70 s */
#define S_HINT_THROTTLED_MS 1000 /* 429: about 5 requests per second are allowed */
#define S_HINT_SERVER_MS 2000    /* 5xx */
#define S_HINT_OTHER_MS 5000     /* unexpected status, too-big body */
#define S_HINT_NET_MS 1000       /* timeout, refused, reset, bad body */
/* Upper bound on a server's Retry-After, so a hostile value cannot park us for days. */
#define S_MAX_RETRY_AFTER_MS (3600LL * 1000)
#define S_MAX_TIMEOUT_MS (10L * 60 * 1000)
/* How much of an error body goes into the message. */
#define S_SNIPPET 60

/* One endpoint's reused easy handle and its per-request state. */
typedef struct s_conn {
    CURL *curl;                   /* easy handle, kept between requests for keep-alive */
    CURLU *cu;                    /* url parsed once (CURLOPT_CURLU), or NULL: CURLOPT_URL */
    char *url;                    /* full URL with ?api-version= */
    char *show_url;               /* URL without the query, for messages */
    char *buf;                    /* body received (NUL-terminated) */
    size_t len;                   /* bytes in buf */
    size_t cap;                   /* allocated size of buf */
    bool too_big;                 /* the body passed SC_IMDS_MAX_BODY */
    bool oom;                     /* growing buf failed */
    int64_t retry_after_ms;       /* Retry-After of the last answer, -1 when absent */
    char *valid;                  /* copy of the last body that passed s_check_json, or NULL */
    size_t valid_len;             /* its length */
    char errbuf[CURL_ERROR_SIZE]; /* libcurl's own reason */
} s_conn_t;

struct sc_imds {
    char *base_url;               /* base without trailing '/' */
    char *api_version;            /* scheduled events api-version */
    char *compute_api_version;    /* instance/compute api-version */
    long connect_timeout_ms;      /* CURLOPT_CONNECTTIMEOUT_MS */
    long total_timeout_ms;        /* CURLOPT_TIMEOUT_MS */
    long first_timeout_ms;        /* CURLOPT_TIMEOUT_MS of the scheduledevents GETs until one
                                     succeeded (>= total_timeout_ms) */
    bool events_answered;         /* a scheduledevents GET succeeded */
    volatile sig_atomic_t *abort; /* give up when set (borrowed), or NULL */
    void (*on_wait)(void *ud);    /* called from the progress callback, or NULL */
    void *on_wait_ud;             /* its argument */
    struct curl_slist *hdr_get;   /* "Metadata: true", Accept */
    struct curl_slist *hdr_post;  /* the above plus Content-Type, no Expect */
    s_conn_t events;              /* .../metadata/scheduledevents (GET and POST) */
    s_conn_t compute;             /* .../metadata/instance/compute */
    CURLM *multi;                 /* a POST begun (sc_imds_post_begin), or NULL */
    char *post_body;              /* its body (libcurl reads it until the end) */
};

static pthread_once_t s_global_once = PTHREAD_ONCE_INIT;
static CURLcode s_global_rc = CURLE_FAILED_INIT;

static void s_global_init(void)
{
    s_global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

void sc_imds_opts_init(sc_imds_opts_t *opts)
{
    opts->base_url = SC_IMDS_DEFAULT_BASE_URL;
    opts->api_version = SC_IMDS_DEFAULT_API_VERSION;
    opts->compute_api_version = SC_IMDS_DEFAULT_COMPUTE_API_VERSION;
    opts->connect_timeout_ms = SC_IMDS_DEFAULT_CONNECT_TIMEOUT_MS;
    opts->total_timeout_ms = SC_IMDS_DEFAULT_TOTAL_TIMEOUT_MS;
    opts->first_timeout_ms = 0;
    opts->abort = NULL;
    opts->on_wait = NULL;
    opts->on_wait_ud = NULL;
}

static bool s_printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f)
            return false;
    return true;
}

/* An api-version is a short token like 2020-07-01; it goes into the URL unescaped. */
static bool s_version_ok(const char *v)
{
    size_t n = strlen(v);

    if (n == 0 || n > SC_IMDS_MAX_VERSION)
        return false;
    for (; *v; v++)
        if (!isalnum((unsigned char)*v) && *v != '-' && *v != '.' && *v != '_')
            return false;
    return true;
}

static char *s_printf_dup(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *s_printf_dup(const char *fmt, ...)
{
    va_list ap;
    char *s;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !(s = malloc((size_t)n + 1)))
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static size_t s_on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    s_conn_t *c = userdata;
    size_t n = size * nmemb;

    if (n > (size_t)SC_IMDS_MAX_BODY - c->len) {
        c->too_big = true;
        return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
    }
    if (c->len + n + 1 > c->cap) {
        size_t cap = c->cap ? c->cap : 4096;
        char *p;

        while (cap < c->len + n + 1)
            cap *= 2;
        if (!(p = realloc(c->buf, cap))) {
            c->oom = true;
            return 0;
        }
        c->buf = p;
        c->cap = cap;
    }
    memcpy(c->buf + c->len, ptr, n);
    c->len += n;
    c->buf[c->len] = '\0';
    return n;
}

/* Retry-After: delta-seconds or an HTTP-date; anything else is ignored. */
static int64_t s_parse_retry_after(const char *v, size_t n)
{
    char tmp[128];
    int64_t ms = 0;
    size_t i;

    while (n && (*v == ' ' || *v == '\t'))
        v++, n--;
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r' || v[n - 1] == '\n'))
        n--;
    if (n == 0 || n >= sizeof(tmp))
        return -1;
    if (isdigit((unsigned char)v[0])) {
        for (i = 0; i < n; i++) {
            if (!isdigit((unsigned char)v[i]))
                return -1;
            if (ms < S_MAX_RETRY_AFTER_MS)
                ms = ms * 10 + (v[i] - '0') * 1000;
        }
    } else {
        time_t when;

        memcpy(tmp, v, n);
        tmp[n] = '\0';
        if ((when = curl_getdate(tmp, NULL)) == -1)
            return -1;
        ms = ((int64_t)when - (int64_t)time(NULL)) * 1000;
        if (ms < 0)
            ms = 0;
    }
    return ms > S_MAX_RETRY_AFTER_MS ? S_MAX_RETRY_AFTER_MS : ms;
}

static size_t s_on_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    s_conn_t *c = userdata;
    size_t n = size * nmemb;
    static const char name[] = "retry-after:";

    /* A new status line (e.g. after "100 Continue") starts a new set of headers. */
    if (n >= 5 && memcmp(ptr, "HTTP/", 5) == 0)
        c->retry_after_ms = -1;
    else if (n > sizeof(name) - 1 && strncasecmp(ptr, name, sizeof(name) - 1) == 0)
        c->retry_after_ms = s_parse_retry_after(ptr + sizeof(name) - 1, n - (sizeof(name) - 1));
    return n;
}

/* libcurl's progress callback (at least about once a second, even while nothing arrives):
 * non-zero aborts the transfer. */
static int s_on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                         curl_off_t ulnow)
{
    const sc_imds_t *self = userdata;

    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    if (self->on_wait)
        self->on_wait(self->on_wait_ud);
    return self->abort && *self->abort;
}

static void s_conn_free(s_conn_t *c)
{
    if (c->curl)
        curl_easy_cleanup(c->curl);
    if (c->cu)
        curl_url_cleanup(c->cu);
    free(c->url);
    free(c->show_url);
    free(c->buf);
    free(c->valid);
    memset(c, 0, sizeof(*c));
}

static int s_conn_init(sc_imds_t *self, s_conn_t *c, const char *path, const char *version)
{
    CURL *h;
    bool ok = true;

    if (!(c->url = s_printf_dup("%s%s?api-version=%s", self->base_url, path, version)) ||
        !(c->show_url = s_printf_dup("%s%s", self->base_url, path)))
        return -ENOMEM;
    if (!(h = c->curl = curl_easy_init()))
        return SC_E_NET;
    /* IMDS is link-local and must never be reached through a proxy, whatever the
     * environment says: NOPROXY "*" disables http_proxy/HTTPS_PROXY/ALL_PROXY, PROXY ""
     * disables any proxy set explicitly. */
    ok &= curl_easy_setopt(h, CURLOPT_NOPROXY, "*") == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_PROXY, "") == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_URL, c->url) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, self->connect_timeout_ms) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, self->total_timeout_ms) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)SC_IMDS_MAX_BODY) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, s_on_body) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_WRITEDATA, c) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, s_on_header) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_HEADERDATA, c) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_USERAGENT, "schedcoord/" SC_VERSION) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L) == CURLE_OK;
    if (self->abort || self->on_wait) {
        ok &= curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, s_on_progress) == CURLE_OK;
        ok &= curl_easy_setopt(h, CURLOPT_XFERINFODATA, self) == CURLE_OK;
        ok &= curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L) == CURLE_OK;
    }
    /* With CURLOPT_URL alone libcurl parses the URL string again at every request; a URL
     * handle parsed once here saves that (16k of ~90k instructions per GET, callgrind). If
     * this libcurl's parser refuses the URL, CURLOPT_URL above stays in charge and the error
     * comes from the request, as before. */
    if ((c->cu = curl_url()) && curl_url_set(c->cu, CURLUPART_URL, c->url, 0) == CURLUE_OK)
        ok &= curl_easy_setopt(h, CURLOPT_CURLU, c->cu) == CURLE_OK;
    return ok ? 0 : SC_E_NET;
}

int sc_imds_new(const sc_imds_opts_t *opts, sc_imds_t **ret_imds)
{
    sc_imds_opts_t o;
    sc_imds_t *self;
    size_t n;
    int rc = -ENOMEM;

    sc_imds_opts_init(&o);
    if (opts) {
        if (opts->base_url)
            o.base_url = opts->base_url;
        if (opts->api_version)
            o.api_version = opts->api_version;
        if (opts->compute_api_version)
            o.compute_api_version = opts->compute_api_version;
        if (opts->connect_timeout_ms)
            o.connect_timeout_ms = opts->connect_timeout_ms;
        if (opts->total_timeout_ms)
            o.total_timeout_ms = opts->total_timeout_ms;
        o.first_timeout_ms = opts->first_timeout_ms;
        o.abort = opts->abort;
        o.on_wait = opts->on_wait;
        o.on_wait_ud = opts->on_wait_ud;
    }
    n = strlen(o.base_url);
    if ((strncmp(o.base_url, "http://", 7) != 0 && strncmp(o.base_url, "https://", 8) != 0) ||
        n > SC_IMDS_MAX_URL || !s_printable(o.base_url) || strpbrk(o.base_url, "?#") ||
        !s_version_ok(o.api_version) || !s_version_ok(o.compute_api_version) ||
        o.connect_timeout_ms < 0 || o.connect_timeout_ms > S_MAX_TIMEOUT_MS ||
        o.total_timeout_ms < 0 || o.total_timeout_ms > S_MAX_TIMEOUT_MS || o.first_timeout_ms < 0 ||
        o.first_timeout_ms > S_MAX_TIMEOUT_MS)
        return -EINVAL;
    if (o.connect_timeout_ms > o.total_timeout_ms)
        o.connect_timeout_ms = o.total_timeout_ms;
    pthread_once(&s_global_once, s_global_init);
    if (s_global_rc != CURLE_OK)
        return s_global_rc == CURLE_OUT_OF_MEMORY ? -ENOMEM : SC_E_NET;

    if (!(self = calloc(1, sizeof(*self))))
        return -ENOMEM;
    while (n > 0 && o.base_url[n - 1] == '/')
        n--; /* "http://x/" + "/metadata" would give "//metadata" */
    if (!(self->base_url = strndup(o.base_url, n)) ||
        !(self->api_version = strdup(o.api_version)) ||
        !(self->compute_api_version = strdup(o.compute_api_version)))
        goto fail;
    self->connect_timeout_ms = o.connect_timeout_ms;
    self->total_timeout_ms = o.total_timeout_ms;
    self->first_timeout_ms =
        o.first_timeout_ms > o.total_timeout_ms ? o.first_timeout_ms : o.total_timeout_ms;
    self->abort = o.abort;
    self->on_wait = o.on_wait;
    self->on_wait_ud = o.on_wait_ud;

    /* "Metadata: true" is mandatory; "Expect:" stops curl from waiting for 100-continue. */
    if (!(self->hdr_get = curl_slist_append(NULL, "Metadata: true")) ||
        !curl_slist_append(self->hdr_get, "Accept: application/json") ||
        !(self->hdr_post = curl_slist_append(NULL, "Metadata: true")) ||
        !curl_slist_append(self->hdr_post, "Accept: application/json") ||
        !curl_slist_append(self->hdr_post, "Content-Type: application/json") ||
        !curl_slist_append(self->hdr_post, "Expect:"))
        goto fail;
    if ((rc = s_conn_init(self, &self->events, "/metadata/scheduledevents", self->api_version)) <
            0 ||
        (rc = s_conn_init(self, &self->compute, "/metadata/instance/compute",
                          self->compute_api_version)) < 0)
        goto fail;
    *ret_imds = self;
    return 0;
fail:
    sc_imds_destroy(&self);
    return rc;
}

void sc_imds_destroy(sc_imds_t **imds)
{
    sc_imds_t *self;

    if (!imds || !(self = *imds))
        return;
    if (self->multi) {
        curl_multi_remove_handle(self->multi, self->events.curl);
        curl_multi_cleanup(self->multi);
    }
    free(self->post_body);
    s_conn_free(&self->events);
    s_conn_free(&self->compute);
    curl_slist_free_all(self->hdr_get);
    curl_slist_free_all(self->hdr_post);
    free(self->base_url);
    free(self->api_version);
    free(self->compute_api_version);
    free(self);
    *imds = NULL;
}

const char *sc_imds_base_url(const sc_imds_t *imds)
{
    return imds->base_url;
}

static int s_fail(sc_imds_status_t *st, const char *method, const s_conn_t *c, int rc, long http,
                  int64_t hint_ms, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* Fills st and returns rc. The message reads "<METHOD> <url>: <what>"; the retry hint is in
 * st->retry_after_ms only (the caller's backoff decides the real delay and logs that one). */
static int s_fail(sc_imds_status_t *st, const char *method, const s_conn_t *c, int rc, long http,
                  int64_t hint_ms, const char *fmt, ...)
{
    char what[200];
    va_list ap;
    size_t n;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    st->rc = rc;
    st->http_status = http;
    st->retry_after_ms = rc ? hint_ms : 0;
    /* Keep the end of a long URL: the endpoint name matters more than the host. A message cut
     * at sizeof(st->message) is fine; an output error leaves it empty. */
    n = strlen(c->show_url);
    if ((n > 80 ? snprintf(st->message, sizeof(st->message), "%s ...%s: %s", method,
                           c->show_url + n - 60, what)
                : snprintf(st->message, sizeof(st->message), "%s %s: %s", method, c->show_url,
                           what)) < 0)
        st->message[0] = '\0';
    return rc;
}

/* A short printable excerpt of an error body, for messages. */
static const char *s_snippet(const s_conn_t *c, char *out, size_t outlen)
{
    size_t i, j = 0;

    out[0] = '\0';
    if (!c->buf || c->len == 0)
        return out;
    j = (size_t)snprintf(out, outlen, ": ");
    for (i = 0; i < c->len && j + 4 < outlen && i < S_SNIPPET; i++) {
        unsigned char ch = (unsigned char)c->buf[i];

        out[j++] = (ch >= ' ' && ch < 0x7f) ? (char)ch : '?';
    }
    if (i < c->len && j + 4 < outlen)
        out[j++] = '.', out[j++] = '.', out[j++] = '.';
    out[j] = '\0';
    return out;
}

/* Runs the prepared request on c and maps every transport and HTTP outcome. On 0 the body
 * is in c->buf / c->len (c->buf may be NULL when empty). */
/* Clears what the last request left in c. */
static void s_reset(s_conn_t *c)
{
    c->len = 0;
    if (c->buf)
        c->buf[0] = '\0';
    c->too_big = c->oom = false;
    c->retry_after_ms = -1;
    c->errbuf[0] = '\0';
}

static int s_result(s_conn_t *c, const char *method, CURLcode cc, sc_imds_status_t *st);

static int s_perform(sc_imds_t *self, s_conn_t *c, const char *method, sc_imds_status_t *st)
{
    s_reset(c);
    if (self->abort && *self->abort)
        return s_fail(st, method, c, -EINTR, 0, 0, "not sent: stopping");
    return s_result(c, method, curl_easy_perform(c->curl), st);
}

/* What a transfer's end (cc) means: 0 for 2xx, else the error with its reason in st. */
static int s_result(s_conn_t *c, const char *method, CURLcode cc, sc_imds_status_t *st)
{
    long http = 0, os_errno = 0;
    char snip[S_SNIPPET + 8];
    int64_t ra;

    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &http);
    ra = c->retry_after_ms;
    if (c->oom || cc == CURLE_OUT_OF_MEMORY)
        return s_fail(st, method, c, -ENOMEM, http, S_HINT_NET_MS, "out of memory");
    if (c->too_big || cc == CURLE_FILESIZE_EXCEEDED)
        return s_fail(st, method, c, SC_E_TOO_BIG, http, S_HINT_OTHER_MS,
                      "HTTP %ld body larger than %ld bytes", http, SC_IMDS_MAX_BODY);
    switch (cc) {
    case CURLE_OK: break;
    case CURLE_ABORTED_BY_CALLBACK: return s_fail(st, method, c, -EINTR, http, 0, "stopped");
    case CURLE_OPERATION_TIMEDOUT:
        return s_fail(st, method, c, SC_E_TIMEOUT, http, S_HINT_NET_MS, "timed out (%s)",
                      c->errbuf[0] ? c->errbuf : curl_easy_strerror(cc));
    case CURLE_PARTIAL_FILE:
        return s_fail(st, method, c, SC_E_TRUNCATED, http, S_HINT_NET_MS,
                      "HTTP %ld body cut short after %zu bytes (%s)", http, c->len,
                      c->errbuf[0] ? c->errbuf : curl_easy_strerror(cc));
    case CURLE_COULDNT_CONNECT:
        curl_easy_getinfo(c->curl, CURLINFO_OS_ERRNO, &os_errno);
        if (os_errno == ECONNREFUSED)
            return s_fail(st, method, c, SC_E_CONNREFUSED, 0, S_HINT_NET_MS, "connection refused");
        /* fall through */
    default:
        return s_fail(st, method, c, SC_E_NET, http, S_HINT_NET_MS, "network error: %s",
                      c->errbuf[0] ? c->errbuf : curl_easy_strerror(cc));
    }

    if (http >= 200 && http < 300)
        return 0;
    s_snippet(c, snip, sizeof(snip));
    switch (http) {
    case 400:
        return s_fail(st, method, c, SC_E_HTTP_400, http, ra >= 0 ? ra : S_HINT_BUG_MS,
                      "HTTP 400 (bad request: missing Metadata header or bad body)%s", snip);
    case 404:
        return s_fail(st, method, c, SC_E_HTTP_404, http, ra >= 0 ? ra : S_HINT_NOT_FOUND_MS,
                      "HTTP 404 (not found)%s", snip);
    case 405:
        return s_fail(st, method, c, SC_E_HTTP_405, http, ra >= 0 ? ra : S_HINT_BUG_MS,
                      "HTTP 405 (method not allowed)%s", snip);
    case 410:
        return s_fail(st, method, c, SC_E_HTTP_410, http, ra >= 0 ? ra : S_HINT_GONE_MS,
                      "HTTP 410 (gone: IMDS not ready yet, retry for up to 70 s)%s", snip);
    case 429:
        return s_fail(st, method, c, SC_E_HTTP_429, http, ra >= 0 ? ra : S_HINT_THROTTLED_MS,
                      "HTTP 429 (throttled%s)%s", ra >= 0 ? ", Retry-After" : "", snip);
    default:
        if (http >= 500 && http < 600)
            return s_fail(st, method, c, SC_E_HTTP_5XX, http, ra >= 0 ? ra : S_HINT_SERVER_MS,
                          "HTTP %ld (server error)%s", http, snip);
        return s_fail(st, method, c, SC_E_HTTP_OTHER, http, ra >= 0 ? ra : S_HINT_OTHER_MS,
                      "unexpected HTTP %ld%s", http, snip);
    }
}

/* Checks that c->buf is one complete JSON object and nothing else. On success *ret_obj (if
 * not NULL) gets the parsed object. */
typedef enum { S_JSON_OK, S_JSON_NOMEM, S_JSON_CUT, S_JSON_BAD, S_JSON_TRAILING } s_json_t;

/* Parses len bytes (len <= INT_MAX) as one JSON value with nothing but white space after it.
 * S_JSON_OK with *ret_obj (the caller's); S_JSON_BAD with the tokener's error in *ret_err;
 * S_JSON_TRAILING with the end of the value in *ret_end. */
static s_json_t s_json_whole(const char *buf, size_t len, json_object **ret_obj,
                             enum json_tokener_error *ret_err, size_t *ret_end)
{
    struct json_tokener *tok = json_tokener_new();
    json_object *obj;
    size_t i;

    if (!tok)
        return S_JSON_NOMEM;
    obj = json_tokener_parse_ex(tok, buf, (int)len);
    *ret_err = json_tokener_get_error(tok);
    *ret_end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (!obj)
        return *ret_err == json_tokener_continue ? S_JSON_CUT : S_JSON_BAD;
    for (i = *ret_end; i < len && isspace((unsigned char)buf[i]); i++)
        ;
    if (i < len) {
        json_object_put(obj);
        return S_JSON_TRAILING;
    }
    *ret_obj = obj;
    return S_JSON_OK;
}

static int s_check_json(const char *method, const s_conn_t *c, sc_imds_status_t *st, long http,
                        json_object **ret_obj)
{
    enum json_tokener_error jerr;
    json_object *obj = NULL;
    size_t i, used;

    for (i = 0; i < c->len && isspace((unsigned char)c->buf[i]); i++)
        ;
    if (i == c->len)
        return s_fail(st, method, c, SC_E_EMPTY, http, S_HINT_NET_MS, "HTTP %ld with an empty body",
                      http);
    if (memchr(c->buf, '\0', c->len))
        return s_fail(st, method, c, SC_E_NOT_JSON, http, S_HINT_NET_MS,
                      "HTTP %ld body is not JSON (contains a NUL byte)", http);
    if (c->len > INT_MAX)
        return s_fail(st, method, c, SC_E_TOO_BIG, http, S_HINT_OTHER_MS, "body too large");
    switch (s_json_whole(c->buf, c->len, &obj, &jerr, &used)) {
    case S_JSON_NOMEM: return s_fail(st, method, c, -ENOMEM, http, S_HINT_NET_MS, "out of memory");
    case S_JSON_CUT:
        return s_fail(st, method, c, SC_E_TRUNCATED, http, S_HINT_NET_MS,
                      "HTTP %ld JSON body ends early (%zu bytes)", http, c->len);
    case S_JSON_BAD: {
        char snip[S_SNIPPET + 8];

        return s_fail(st, method, c, SC_E_NOT_JSON, http, S_HINT_NET_MS,
                      "HTTP %ld body is not JSON (%s)%s", http, json_tokener_error_desc(jerr),
                      s_snippet(c, snip, sizeof(snip)));
    }
    case S_JSON_TRAILING:
        return s_fail(st, method, c, SC_E_NOT_JSON, http, S_HINT_NET_MS,
                      "HTTP %ld body is not JSON (data after the object at byte %zu)", http, used);
    case S_JSON_OK: break;
    }
    if (!json_object_is_type(obj, json_type_object)) {
        json_object_put(obj);
        return s_fail(st, method, c, SC_E_NOT_JSON, http, S_HINT_NET_MS,
                      "HTTP %ld body is JSON but not an object", http);
    }
    if (ret_obj)
        *ret_obj = obj;
    else
        json_object_put(obj);
    return 0;
}

/* A GET on c: set up, performed, its HTTP status in *ret_http. */
static int s_get(sc_imds_t *imds, s_conn_t *c, sc_imds_status_t *st, long *ret_http)
{
    int rc;

    if (curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L) != CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, imds->hdr_get) != CURLE_OK)
        return s_fail(st, "GET", c, SC_E_NET, 0, S_HINT_NET_MS, "cannot set up the request");
    if ((rc = s_perform(imds, c, "GET", st)) < 0)
        return rc;
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, ret_http);
    return 0;
}

int sc_imds_get_events(sc_imds_t *imds, char **ret_body, size_t *ret_len, sc_imds_status_t *st)
{
    sc_imds_status_t dummy;
    s_conn_t *c = &imds->events;
    long http = 0;
    char *body;
    int rc;

    if (!st)
        st = &dummy;
    if (curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS,
                         imds->events_answered ? imds->total_timeout_ms : imds->first_timeout_ms) !=
        CURLE_OK)
        return s_fail(st, "GET", c, SC_E_NET, 0, S_HINT_NET_MS, "cannot set up the request");
    if ((rc = s_get(imds, c, st, &http)) < 0)
        return rc;
    /* IMDS answers the same document poll after poll: a body byte-identical to the last one
     * that passed the check is that same complete JSON object, so the tokenizer (a third of
     * a poll's instructions) only runs when the bytes change. */
    if (!c->valid || c->len != c->valid_len || memcmp(c->buf, c->valid, c->len) != 0) {
        char *keep;

        if ((rc = s_check_json("GET", c, st, http, NULL)) < 0)
            return rc;
        if (c->len > c->valid_len || !c->valid) {
            if (!(keep = realloc(c->valid, c->len + 1)))
                return s_fail(st, "GET", c, -ENOMEM, http, S_HINT_NET_MS, "out of memory");
            c->valid = keep;
        }
        memcpy(c->valid, c->buf, c->len + 1);
        c->valid_len = c->len;
    }
    if (!(body = malloc(c->len + 1)))
        return s_fail(st, "GET", c, -ENOMEM, http, S_HINT_NET_MS, "out of memory");
    memcpy(body, c->buf, c->len + 1);
    *ret_body = body;
    if (ret_len)
        *ret_len = c->len;
    imds->events_answered = true;
    return s_fail(st, "GET", c, 0, http, 0, "HTTP %ld, %zu bytes", http, c->len);
}

int sc_imds_post_events(sc_imds_t *imds, const char *body, sc_imds_status_t *st)
{
    sc_imds_status_t dummy;
    s_conn_t *c = &imds->events;
    size_t n = body ? strlen(body) : 0;
    long http = 0;
    int rc;

    if (!st)
        st = &dummy;
    if (n == 0 || n > (size_t)SC_IMDS_MAX_BODY)
        return s_fail(st, "POST", c, -EINVAL, 0, S_HINT_BUG_MS, "approval body %s",
                      n ? "too large" : "is empty");
    if (curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, imds->total_timeout_ms) != CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body) != CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n) != CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, imds->hdr_post) != CURLE_OK)
        rc = s_fail(st, "POST", c, SC_E_NET, 0, S_HINT_NET_MS, "cannot set up the request");
    else if ((rc = s_perform(imds, c, "POST", st)) == 0) {
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &http);
        rc = s_fail(st, "POST", c, 0, http, 0, "HTTP %ld", http);
    }
    /* The handle is shared with GET: do not keep a pointer to the caller's body. */
    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, NULL);
    curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
    return rc;
}

int sc_imds_post_begin(sc_imds_t *imds, const char *body)
{
    s_conn_t *c = &imds->events;
    size_t n = body ? strlen(body) : 0;
    int running = 0;

    if (imds->post_body || n == 0 || n > (size_t)SC_IMDS_MAX_BODY)
        return -EINVAL;
    if (!imds->multi && !(imds->multi = curl_multi_init()))
        return -ENOMEM;
    if (!(imds->post_body = strdup(body)))
        return -ENOMEM;
    s_reset(c);
    if (curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, imds->total_timeout_ms) != CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, imds->post_body) != CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n) != CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, imds->hdr_post) != CURLE_OK ||
        curl_multi_add_handle(imds->multi, c->curl) != CURLM_OK) {
        free(imds->post_body);
        imds->post_body = NULL;
        return SC_E_NET;
    }
    /* as far as non-blocking calls take it: on a kept connection, the request is sent */
    curl_multi_perform(imds->multi, &running);
    return 0;
}

int sc_imds_post_end(sc_imds_t *imds, sc_imds_status_t *st)
{
    sc_imds_status_t dummy;
    s_conn_t *c = &imds->events;
    CURLcode cc = CURLE_OK;
    bool done = false;
    long http = 0;
    int rc, running = 1;

    if (!st)
        st = &dummy;
    if (!imds->post_body)
        return s_fail(st, "POST", c, -EINVAL, 0, S_HINT_BUG_MS, "no POST begun");
    while (!done) {
        CURLMsg *m;
        int left;

        if (imds->abort && *imds->abort) {
            cc = CURLE_ABORTED_BY_CALLBACK;
            break;
        }
        if (curl_multi_perform(imds->multi, &running) != CURLM_OK) {
            cc = CURLE_RECV_ERROR;
            break;
        }
        while ((m = curl_multi_info_read(imds->multi, &left)))
            if (m->msg == CURLMSG_DONE && m->easy_handle == c->curl) {
                cc = m->data.result;
                done = true;
            }
        /* CURLOPT_TIMEOUT_MS ends it; the 100 ms wake-ups only look at the abort flag */
        if (!done && curl_multi_poll(imds->multi, NULL, 0, 100, NULL) != CURLM_OK) {
            cc = CURLE_RECV_ERROR;
            break;
        }
    }
    curl_multi_remove_handle(imds->multi, c->curl);
    if ((rc = s_result(c, "POST", cc, st)) == 0) {
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &http);
        rc = s_fail(st, "POST", c, 0, http, 0, "HTTP %ld", http);
    }
    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, NULL);
    curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
    free(imds->post_body);
    imds->post_body = NULL;
    return rc;
}

/* Copies the string member key of obj into out. Absent or null: "". */
static int s_get_str(json_object *obj, const char *key, char *out, size_t outlen,
                     const char **ret_why)
{
    json_object *v;
    const char *s;
    size_t n;

    out[0] = '\0';
    if (!json_object_object_get_ex(obj, key, &v) || !v)
        return 0;
    if (!json_object_is_type(v, json_type_string)) {
        *ret_why = "is not a string";
        return SC_E_PARSE;
    }
    s = json_object_get_string(v);
    n = (size_t)json_object_get_string_len(v);
    if (n >= outlen) {
        *ret_why = "is too long";
        return SC_E_TOO_BIG;
    }
    if (memchr(s, '\0', n)) {
        *ret_why = "contains a NUL byte";
        return SC_E_PARSE;
    }
    memcpy(out, s, n + 1);
    return 0;
}

int sc_compute_get_domain(json_object *obj, const char *key, int *out, const char **ret_why)
{
    json_object *v;
    const char *s;
    long val = 0;
    size_t i, n;

    *out = -1;
    if (!json_object_object_get_ex(obj, key, &v) || !v)
        return 0;
    if (json_object_is_type(v, json_type_int)) {
        int64_t x = json_object_get_int64(v);

        if (x < 0 || x > 10000) {
            *ret_why = "is out of range";
            return SC_E_PARSE;
        }
        *out = (int)x;
        return 0;
    }
    if (!json_object_is_type(v, json_type_string)) {
        *ret_why = "is neither a string nor an integer";
        return SC_E_PARSE;
    }
    s = json_object_get_string(v);
    n = (size_t)json_object_get_string_len(v);
    if (n == 0)
        return 0; /* "" means unknown */
    for (i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]) || i >= 5) {
            *ret_why = i >= 5 ? "is out of range" : "is not a number";
            return SC_E_PARSE;
        }
        val = val * 10 + (s[i] - '0');
    }
    if (val > 10000) {
        *ret_why = "is out of range";
        return SC_E_PARSE;
    }
    *out = (int)val;
    return 0;
}

/* The fields of a compute object into *cp; on error *ret_key names the field. */
static int s_compute_from_obj(json_object *obj, sc_compute_t *cp, const char **ret_key,
                              const char **ret_why)
{
    const char *key = NULL;
    int rc;

    *ret_why = "is invalid";
    if (!json_object_is_type(obj, json_type_object)) {
        *ret_key = "";
        *ret_why = "answer is not a JSON object";
        return SC_E_NOT_JSON;
    }
    if ((rc = s_get_str(obj, key = "name", cp->name, sizeof(cp->name), ret_why)) < 0 ||
        (rc = sc_compute_get_domain(obj, key = "platformFaultDomain", &cp->fault_domain, ret_why)) <
            0 ||
        (rc = sc_compute_get_domain(obj, key = "platformUpdateDomain", &cp->update_domain,
                                    ret_why)) < 0 ||
        (rc = s_get_str(obj, key = "vmScaleSetName", cp->vm_scale_set_name,
                        sizeof(cp->vm_scale_set_name), ret_why)) < 0 ||
        (rc = s_get_str(obj, key = "zone", cp->zone, sizeof(cp->zone), ret_why)) < 0 ||
        (rc = s_get_str(obj, key = "resourceId", cp->resource_id, sizeof(cp->resource_id),
                        ret_why)) < 0) {
        *ret_key = key;
        return rc;
    }
    return 0;
}

int sc_compute_parse(const char *buf, size_t len, sc_compute_t *ret_compute, char *err,
                     size_t errlen)
{
    enum json_tokener_error jerr;
    json_object *obj = NULL;
    sc_compute_t *cp;
    const char *key = "", *why = "";
    size_t used;
    int rc;

    if (!buf || !ret_compute)
        return sc_errf(err, errlen, -EINVAL, "compute: NULL argument");
    if (len > (size_t)SC_IMDS_MAX_BODY)
        return sc_errf(err, errlen, SC_E_TOO_BIG, "compute: answer larger than %ld bytes",
                       SC_IMDS_MAX_BODY);
    if (memchr(buf, '\0', len))
        return sc_errf(err, errlen, SC_E_NOT_JSON, "compute: not JSON (contains a NUL byte)");
    switch (s_json_whole(buf, len, &obj, &jerr, &used)) {
    case S_JSON_NOMEM: return -ENOMEM;
    case S_JSON_CUT: return sc_errf(err, errlen, SC_E_NOT_JSON, "compute: not JSON (cut short)");
    case S_JSON_BAD:
        return sc_errf(err, errlen, SC_E_NOT_JSON, "compute: not JSON (%s)",
                       json_tokener_error_desc(jerr));
    case S_JSON_TRAILING:
        return sc_errf(err, errlen, SC_E_NOT_JSON,
                       "compute: not JSON (data after the object at byte %zu)", used);
    case S_JSON_OK: break;
    }
    if (!(cp = calloc(1, sizeof(*cp)))) {
        json_object_put(obj);
        return -ENOMEM;
    }
    if ((rc = s_compute_from_obj(obj, cp, &key, &why)) < 0)
        sc_errf(err, errlen, rc, "compute%s%s %s", *key ? "." : ":", key, why);
    else
        *ret_compute = *cp;
    free(cp);
    json_object_put(obj);
    return rc;
}

int sc_imds_get_compute(sc_imds_t *imds, sc_compute_t *ret_compute, sc_imds_status_t *st)
{
    sc_imds_status_t dummy;
    s_conn_t *c = &imds->compute;
    json_object *obj = NULL;
    sc_compute_t *cp;
    const char *key = NULL, *why = "is invalid";
    long http = 0;
    int rc;

    if (!st)
        st = &dummy;
    if ((rc = s_get(imds, c, st, &http)) < 0)
        return rc;
    if ((rc = s_check_json("GET", c, st, http, &obj)) < 0)
        return rc;
    if (!(cp = calloc(1, sizeof(*cp)))) {
        json_object_put(obj);
        return s_fail(st, "GET", c, -ENOMEM, http, S_HINT_NET_MS, "out of memory");
    }
    if ((rc = s_compute_from_obj(obj, cp, &key, &why)) < 0)
        rc = s_fail(st, "GET", c, rc, http, S_HINT_OTHER_MS, "compute%s%s %s", *key ? "." : ":",
                    key, why);
    else {
        *ret_compute = *cp;
        rc = s_fail(st, "GET", c, 0, http, 0, "HTTP %ld, VM %s", http, cp->name);
    }
    free(cp);
    json_object_put(obj);
    return rc;
}
