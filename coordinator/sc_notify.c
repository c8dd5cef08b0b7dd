#include "sc_notify.h"

#include "sc_backoff.h"
#include "sc_error.h"
#include "sc_time.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* What a message keeps of the caller's strings and lists (see sc_notify_msg_t). */
#define S_NAME_MAX 128      /* bytes of a name, an id, a type, a phase */
#define S_DETAIL_MAX 512    /* bytes of detail */
#define S_JSON_VMS 64       /* VMs listed by the json format */
#define S_CHAT_VMS 10       /* VMs named in a chat line */
#define S_ORDER_MAX 64      /* domains in a drain order */
#define S_LINE_MAX 4096     /* a headline or a fact (cannot be reached with the limits above) */
#define S_SLACK_TEXT 2900   /* bytes of a Slack text (a section takes 3000 characters) */
#define S_FACTS_MAX 16      /* facts of one message */
#define S_LABEL_MAX 300     /* "format scheme://host:port" */
#define S_RESP_MAX 512      /* bytes of an answer kept for the error message */
#define S_POLL_MAX_MS 10000 /* longest sleep of the worker between looks at its queues */
#define S_DAY_MS 86400000LL /* a time within this of the message is written as "14:05 UTC" */
#define S_WALL_MAX_MS 253402300799999LL /* 9999-12-31T23:59:59.999Z: later is "unknown" */
#define S_TIMEOUT_MAX_MS (10LL * 60 * 1000)

static const char *const s_kind_names[] = {
#define S_KIND_NAME_(e, name) name,
    SC_NOTIFY_KINDS(S_KIND_NAME_)
#undef S_KIND_NAME_
};

static const char *const s_format_names[SC_NOTIFY_FORMAT_MAX] = {"json", "slack", "teams"};

/* One queued message for one target: its rendered body. */
typedef struct s_item {
    struct s_item *next; /* the next message of the target's queue */
    size_t len;          /* bytes in body */
    char body[];         /* NUL-terminated */
} s_item_t;

/* One FORMAT:URL of the setting. */
typedef struct s_spec {
    sc_notify_format_t format;       /* how bodies are rendered */
    char url[SC_NOTIFY_URL_MAX + 1]; /* where they go */
    char label[S_LABEL_MAX];         /* format, scheme and host: no secret */
} s_spec_t;

/* One target: its queue and counters (shared with posts, under lock) and its sending state
 * (the worker's alone). */
typedef struct s_target {
    sc_notify_format_t format;    /* how bodies are rendered */
    char *url;                    /* where they go (a secret) */
    char label[S_LABEL_MAX];      /* format, scheme and host: no secret */
    s_item_t *head;               /* queue, oldest first (under lock) */
    s_item_t *tail;               /* its last item (under lock) */
    sc_notify_stats_t stats;      /* counters, queued included (under lock) */
    CURL *easy;                   /* this target's handle (worker only, from here on) */
    s_item_t *inflight;           /* the message being sent or waiting for its retry */
    bool active;                  /* easy is in the multi handle */
    int attempts;                 /* attempts made for inflight */
    int64_t next_ms;              /* monotonic time of inflight's next attempt */
    sc_backoff_t backoff;         /* delays between attempts of inflight */
    int64_t retry_after_ms;       /* Retry-After of the last answer; -1 none */
    char resp[S_RESP_MAX + 1];    /* start of the last answer's body */
    size_t resp_len;              /* bytes in resp */
    char errbuf[CURL_ERROR_SIZE]; /* libcurl's own reason */
} s_target_t;

struct sc_notify {
    s_target_t targets[SC_NOTIFY_MAX_TARGETS]; /* in the order of the setting */
    size_t n_targets;                          /* targets in use */
    char *cluster;                             /* the set's name, or NULL */
    char *from;                                /* the sending member, or NULL */
    size_t queue_max;                          /* per target, in flight included */
    int max_attempts;                          /* per message */
    int64_t retry_initial_ms;                  /* first backoff */
    int64_t retry_max_ms;                      /* backoff and Retry-After cap */
    int64_t stop_grace_ms;                     /* time queued messages get at stop */
    struct curl_slist *headers;                /* Content-Type, no Expect */
    CURLM *multi;                              /* every target's transfer (worker only) */
    pthread_mutex_t lock;                      /* guards queues, stats, stopping */
    bool lock_ready;                           /* lock was initialised */
    pthread_t thread;                          /* the worker */
    bool thread_running;                       /* started and not yet joined */
    bool stopping;                             /* stop asked (under lock) */
    size_t dropped_at_stop;                    /* messages the stop dropped */
};

/* A message with its strings cleaned and cut, its times resolved: what every format renders. */
typedef struct s_clean {
    sc_notify_kind_t kind;                /* what happened */
    int64_t ts_ms;                        /* when (wall ms) */
    char event_id[S_NAME_MAX + 1];        /* "" unknown */
    char event_type[S_NAME_MAX + 1];      /* "" unknown */
    char vms[S_JSON_VMS][S_NAME_MAX + 1]; /* the first n_vms_kept VMs */
    size_t n_vms_kept;                    /* entries in vms */
    size_t n_vms;                         /* VMs in the message */
    int fault_domain;                     /* -1 unknown */
    bool update_domains;                  /* "UD" rather than "FD" */
    int order[S_ORDER_MAX];               /* drain order */
    size_t n_order;                       /* entries in order */
    int64_t drain_at_ms;                  /* 0 unknown */
    int64_t deadline_ms;                  /* 0 unknown */
    char phase[S_NAME_MAX + 1];           /* "" unknown */
    char leader[S_NAME_MAX + 1];          /* "" none */
    char prev_leader[S_NAME_MAX + 1];     /* "" none */
    int64_t term;                         /* 0 unknown */
    char detail[S_DETAIL_MAX + 1];        /* "" none */
    char cluster[S_NAME_MAX + 1];         /* "" none */
    char from[S_NAME_MAX + 1];            /* "" none */
} s_clean_t;

/* One line of a message's details (Slack's second section, Teams' FactSet). */
typedef struct s_fact {
    const char *title;      /* "Deadline" */
    char value[S_LINE_MAX]; /* "2026-11-24 14:05:00 UTC" */
} s_fact_t;

static pthread_once_t s_curl_once = PTHREAD_ONCE_INIT;
static CURLcode s_curl_rc = CURLE_FAILED_INIT;

static void s_curl_init(void)
{
    s_curl_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

const char *sc_notify_kind_name(sc_notify_kind_t kind)
{
    return (unsigned)kind < SC_NOTIFY_KIND_MAX ? s_kind_names[kind] : NULL;
}

const char *sc_notify_format_name(sc_notify_format_t format)
{
    return (unsigned)format < SC_NOTIFY_FORMAT_MAX ? s_format_names[format] : NULL;
}

void sc_notify_msg_init(sc_notify_msg_t *m, sc_notify_kind_t kind)
{
    memset(m, 0, sizeof(*m));
    m->kind = kind;
    m->fault_domain = -1;
}

void sc_notify_opts_init(sc_notify_opts_t *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->queue_max = SC_NOTIFY_QUEUE_DEFAULT;
    opts->max_attempts = 5;
    opts->timeout_ms = 5000;
    opts->connect_timeout_ms = 3000;
    opts->retry_initial_ms = 1000;
    opts->retry_max_ms = 60000;
    opts->stop_grace_ms = 2000;
}

/* ---- the setting ------------------------------------------------------------------------- */

/* Copies at most max bytes of s (n bytes) into out, each unprintable byte as '?'. */
static const char *s_show(const char *s, size_t n, size_t max, char *out, size_t outlen)
{
    size_t i;

    for (i = 0; i < n && i < max && i + 1 < outlen; i++)
        out[i] = (s[i] > ' ' && s[i] < 0x7f) ? s[i] : '?';
    out[i] = '\0';
    return out;
}

/* Checks url (a target's, 1-based index i) and writes "scheme://host[:port]" into origin. */
static int s_url_check(const char *url, size_t i, char *origin, size_t originlen, char *err,
                       size_t errlen)
{
    const char *host, *end, *at, *port = NULL;
    size_t n = strlen(url), skip;
    char shown[24];
    CURLU *cu;
    CURLUcode uc;

    if (n > SC_NOTIFY_URL_MAX)
        return sc_errf(err, errlen, SC_E_CONFIG, "notify target %zu: URL longer than %d bytes", i,
                       SC_NOTIFY_URL_MAX);
    if (strncasecmp(url, "http://", 7) == 0)
        skip = 7;
    else if (strncasecmp(url, "https://", 8) == 0)
        skip = 8;
    else if ((end = strchr(url, ':')))
        return sc_errf(err, errlen, SC_E_CONFIG,
                       "notify target %zu: URL must start with http:// or https:// (got \"%s:\")",
                       i, s_show(url, (size_t)(end - url), 10, shown, sizeof(shown)));
    else
        return sc_errf(err, errlen, SC_E_CONFIG,
                       "notify target %zu: URL must start with http:// or https:// (no scheme)", i);
    for (size_t k = 0; k < n; k++)
        if ((unsigned char)url[k] <= ' ' || (unsigned char)url[k] >= 0x7f)
            return sc_errf(err, errlen, SC_E_CONFIG,
                           "notify target %zu: URL has a space or a control or non-ASCII "
                           "character at byte %zu",
                           i, k + 1);
    /* authority = [userinfo@]host[:port], up to the path, query or fragment */
    host = url + skip;
    end = host + strcspn(host, "/?#");
    for (at = host; at < end; at++)
        if (*at == '@')
            host = at + 1;
    if (host < end && *host == '[') {
        const char *close = memchr(host, ']', (size_t)(end - host));

        if (!close || close == host + 1)
            return sc_errf(err, errlen, SC_E_CONFIG, "notify target %zu: URL has a bad host", i);
        if (close + 1 < end) {
            if (close[1] != ':')
                return sc_errf(err, errlen, SC_E_CONFIG, "notify target %zu: URL has a bad host",
                               i);
            port = close + 2;
        }
    } else {
        const char *colon = memchr(host, ':', (size_t)(end - host));

        if (colon)
            port = colon + 1;
        if (host == (colon ? colon : end))
            return sc_errf(err, errlen, SC_E_CONFIG, "notify target %zu: URL has no host", i);
    }
    if (host == end)
        return sc_errf(err, errlen, SC_E_CONFIG, "notify target %zu: URL has no host", i);
    if (port) {
        long p = 0;
        const char *c;

        for (c = port; c < end && isdigit((unsigned char)*c) && p <= 65535; c++)
            p = p * 10 + (*c - '0');
        if (c == port || c != end || p < 1 || p > 65535)
            return sc_errf(err, errlen, SC_E_CONFIG,
                           "notify target %zu: URL has a bad port (expected 1..65535)", i);
    }
    /* libcurl is the one that sends it: it must parse it too. */
    if (!(cu = curl_url()))
        return -ENOMEM;
    uc = curl_url_set(cu, CURLUPART_URL, url, 0);
    curl_url_cleanup(cu);
    if (uc == CURLUE_OUT_OF_MEMORY)
        return -ENOMEM;
    if (uc != CURLUE_OK)
        return sc_errf(err, errlen, SC_E_CONFIG, "notify target %zu: URL is not valid (%s)", i,
                       curl_url_strerror(uc));
    if (origin)
        snprintf(origin, originlen, "%.*s%.*s", (int)skip, url, (int)(end - host), host);
    return 0;
}

/* Parses spec into out (at most SC_NOTIFY_MAX_TARGETS entries; out may be NULL to only
 * check). Returns the number of targets or SC_E_CONFIG / -ENOMEM with err. */
static int s_spec_parse(const char *spec, s_spec_t *out, char *err, size_t errlen)
{
    const char *p, *item;
    size_t count = 1, len, i = 0;
    int rc;

    if (!spec || !spec[strspn(spec, " \t")])
        return 0;
    if ((len = strlen(spec)) > SC_NOTIFY_SPEC_MAX)
        return sc_errf(err, errlen, SC_E_CONFIG, "notify setting is %zu bytes long (at most %u)",
                       len, SC_NOTIFY_SPEC_MAX);
    for (p = spec; *p; p++)
        count += *p == ',';
    if (count > SC_NOTIFY_MAX_TARGETS)
        return sc_errf(err, errlen, SC_E_CONFIG, "too many notify targets: %zu (at most %d)", count,
                       SC_NOTIFY_MAX_TARGETS);
    for (item = spec; i < count; i++) {
        const char *stop = item + strcspn(item, ","), *colon, *url;
        size_t flen, ulen;
        char shown[24], urlbuf[SC_NOTIFY_URL_MAX + 1], origin[S_LABEL_MAX - 8];
        int f;

        while (item < stop && (*item == ' ' || *item == '\t'))
            item++;
        len = (size_t)(stop - item);
        while (len && (item[len - 1] == ' ' || item[len - 1] == '\t'))
            len--;
        if (len == 0)
            return sc_errf(err, errlen, SC_E_CONFIG,
                           "notify target %zu is empty (expected FORMAT:URL)", i + 1);
        colon = memchr(item, ':', len);
        flen = colon ? (size_t)(colon - item) : len;
        while (flen && (item[flen - 1] == ' ' || item[flen - 1] == '\t'))
            flen--;
        for (f = 0; f < SC_NOTIFY_FORMAT_MAX; f++)
            if (strlen(s_format_names[f]) == flen && memcmp(item, s_format_names[f], flen) == 0)
                break;
        if (f == SC_NOTIFY_FORMAT_MAX)
            return sc_errf(err, errlen, SC_E_CONFIG,
                           "notify target %zu: unknown format \"%s\" (expected json, slack or "
                           "teams, as FORMAT:URL)",
                           i + 1, s_show(item, flen, 16, shown, sizeof(shown)));
        url = colon ? colon + 1 : item + len;
        ulen = (size_t)(item + len - url);
        while (ulen && (*url == ' ' || *url == '\t'))
            url++, ulen--;
        if (ulen == 0)
            return sc_errf(err, errlen, SC_E_CONFIG,
                           "notify target %zu (%s): missing URL (expected FORMAT:URL)", i + 1,
                           s_format_names[f]);
        if (ulen > SC_NOTIFY_URL_MAX)
            return sc_errf(err, errlen, SC_E_CONFIG, "notify target %zu: URL longer than %d bytes",
                           i + 1, SC_NOTIFY_URL_MAX);
        memcpy(urlbuf, url, ulen);
        urlbuf[ulen] = '\0';
        if ((rc = s_url_check(urlbuf, i + 1, origin, sizeof(origin), err, errlen)) < 0)
            return rc;
        if (out) {
            out[i].format = (sc_notify_format_t)f;
            memcpy(out[i].url, urlbuf, ulen + 1);
            snprintf(out[i].label, sizeof(out[i].label), "%s %s", s_format_names[f], origin);
        }
        item = *stop ? stop + 1 : stop;
    }
    return (int)count;
}

int sc_notify_spec_check(const char *spec, char *err, size_t errlen)
{
    return s_spec_parse(spec, NULL, err, errlen);
}

/* ---- rendering --------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (n bytes left) that is not a control character, or
 * 0 when the byte at s must be replaced. */
static size_t s_utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len, k;
    unsigned char lo = 0x80, hi = 0xbf;

    if (c >= 0x20 && c < 0x7f)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4;
    else
        return 0; /* ASCII controls, DEL, continuation bytes, overlong 0xc0/0xc1, > 0xf4 */
    if (n < len)
        return 0;
    if (c == 0xe0)
        lo = 0xa0;
    else if (c == 0xed)
        hi = 0x9f; /* no surrogates */
    else if (c == 0xf0)
        lo = 0x90;
    else if (c == 0xf4)
        hi = 0x8f;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (k = 2; k < len; k++)
        if (s[k] < 0x80 || s[k] > 0xbf)
            return 0;
    if (c == 0xc2 && s[1] < 0xa0)
        return 0; /* C1 controls U+0080..U+009F */
    return len;
}

/* Copies src into dst (cap bytes, NUL included) as valid UTF-8 without control characters:
 * each bad byte becomes '?'; cut at a character boundary. src NULL gives "". */
static void s_clean_str(char *dst, size_t cap, const char *src)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t n = src ? strlen(src) : 0, i = 0, j = 0;

    while (i < n) {
        size_t len = s_utf8_len(s + i, n - i);

        if (j + (len ? len : 1) >= cap)
            break;
        if (len) {
            memcpy(dst + j, s + i, len);
            j += len;
            i += len;
        } else {
            dst[j++] = '?';
            i++;
        }
    }
    dst[j] = '\0';
}

/* Appends to a line of S_LINE_MAX bytes; a cut never splits a UTF-8 character. */
static void s_addf(char *line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void s_addf(char *line, const char *fmt, ...)
{
    size_t len = strlen(line);
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = vsnprintf(line + len, S_LINE_MAX - len, fmt, ap);
    va_end(ap);
    if (r >= 0 && (size_t)r >= S_LINE_MAX - len) {
        size_t end = S_LINE_MAX - 1;

        while (end > len && ((unsigned char)line[end - 1] & 0xc0) == 0x80)
            end--;
        if (end > len && (unsigned char)line[end - 1] >= 0xc0)
            end--;
        line[end] = '\0';
    }
}

static bool s_wall_ok(int64_t ms)
{
    return ms > 0 && ms <= S_WALL_MAX_MS;
}

/* "14:05 UTC" within a day of ref_ms, else "2026-11-24 14:05 UTC"; full: with seconds and
 * always the date. */
static const char *s_when(int64_t ms, int64_t ref_ms, bool full, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    size_t r = 0;

    if (gmtime_r(&t, &tm)) {
        if (full)
            r = strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm);
        else if ((ms > ref_ms ? ms - ref_ms : ref_ms - ms) < S_DAY_MS)
            r = strftime(buf, len, "%H:%M UTC", &tm);
        else
            r = strftime(buf, len, "%Y-%m-%d %H:%M UTC", &tm);
    }
    if (r == 0)
        snprintf(buf, len, "?");
    return buf;
}

static const char *s_domain(const s_clean_t *c)
{
    return c->update_domains ? "UD" : "FD";
}

/* "vm_1, vm_2 and 3 more" (at most S_CHAT_VMS names). */
static void s_add_vms(char *line, const s_clean_t *c)
{
    size_t shown = c->n_vms_kept < S_CHAT_VMS ? c->n_vms_kept : S_CHAT_VMS;

    for (size_t i = 0; i < shown; i++)
        s_addf(line, "%s%s", i ? ", " : "", c->vms[i]);
    if (c->n_vms > shown)
        s_addf(line, " and %zu more", c->n_vms - shown);
}

/* "FD 1 then FD 2 then FD ?" */
static void s_add_order(char *line, const s_clean_t *c)
{
    for (size_t i = 0; i < c->n_order; i++) {
        if (c->order[i] >= 0)
            s_addf(line, "%s%s %d", i ? " then " : "", s_domain(c), c->order[i]);
        else
            s_addf(line, "%s%s ?", i ? " then " : "", s_domain(c));
    }
}

/* "Reboot of vm_1, vm_2 (FD 1)", "Reboot (event 5DD5...)", "Maintenance" */
static void s_add_subject(char *line, const s_clean_t *c)
{
    s_addf(line, "%s", c->event_type[0] ? c->event_type : "Maintenance");
    if (c->n_vms) {
        s_addf(line, " of ");
        s_add_vms(line, c);
    } else if (c->event_id[0]) {
        s_addf(line, " (event %s)", c->event_id);
    }
    if (c->fault_domain >= 0)
        s_addf(line, " (%s %d)", s_domain(c), c->fault_domain);
}

/* The human line of a message: one per kind. */
static void s_headline(const s_clean_t *c, char *line)
{
    char t[64];

    line[0] = '\0';
    switch (c->kind) {
    case SC_NOTIFY_EVENT_SCHEDULED:
        s_add_subject(line, c);
        s_addf(line, " scheduled");
        if (s_wall_ok(c->deadline_ms))
            s_addf(line, " for %s", s_when(c->deadline_ms, c->ts_ms, false, t, sizeof(t)));
        if (s_wall_ok(c->drain_at_ms))
            s_addf(line, "; drain at %s", s_when(c->drain_at_ms, c->ts_ms, false, t, sizeof(t)));
        if (c->n_order) {
            s_addf(line, "; drain order: ");
            s_add_order(line, c);
        }
        break;
    case SC_NOTIFY_DRAIN_STARTED:
        s_addf(line, "Draining ");
        if (c->n_vms) {
            s_add_vms(line, c);
            s_addf(line, " ");
        }
        if (c->fault_domain >= 0)
            s_addf(line, "(%s %d) ", s_domain(c), c->fault_domain);
        s_addf(line, "for %s", c->event_type[0] ? c->event_type : "maintenance");
        if (s_wall_ok(c->deadline_ms))
            s_addf(line, " due %s", s_when(c->deadline_ms, c->ts_ms, false, t, sizeof(t)));
        break;
    case SC_NOTIFY_APPROVED:
        s_add_subject(line, c);
        s_addf(line, " approved: it may start now");
        break;
    case SC_NOTIFY_EVENT_STARTED:
        s_add_subject(line, c);
        s_addf(line, " started");
        break;
    case SC_NOTIFY_EVENT_ENDED:
        s_add_subject(line, c);
        s_addf(line, " ended");
        break;
    case SC_NOTIFY_HOOK_FAILED:
        if (c->phase[0])
            s_addf(line, "%c%s hook failed", toupper((unsigned char)c->phase[0]), c->phase + 1);
        else
            s_addf(line, "Hook failed");
        if (c->n_vms) {
            s_addf(line, " on ");
            s_add_vms(line, c);
        }
        if (c->fault_domain >= 0)
            s_addf(line, " (%s %d)", s_domain(c), c->fault_domain);
        if (c->event_type[0])
            s_addf(line, " for %s", c->event_type);
        if (c->detail[0])
            s_addf(line, ": %s", c->detail);
        break;
    case SC_NOTIFY_DEADLINE_MISSED:
        s_add_subject(line, c);
        if (s_wall_ok(c->deadline_ms))
            s_addf(line, " not drained by %s: left to Azure",
                   s_when(c->deadline_ms, c->ts_ms, false, t, sizeof(t)));
        else
            s_addf(line, " not drained by its deadline: left to Azure");
        break;
    case SC_NOTIFY_LEADER_CHANGED:
        if (c->leader[0])
            s_addf(line, "Leader is now %s", c->leader);
        else
            s_addf(line, "No leader");
        if (c->term > 0)
            s_addf(line, " (term %lld)", (long long)c->term);
        if (c->prev_leader[0])
            s_addf(line, ", was %s", c->prev_leader);
        break;
    case SC_NOTIFY_KIND_MAX: break;
    }
}

/* The details of a message, in the order they are shown. Returns how many. */
static size_t s_facts(const s_clean_t *c, s_fact_t *f)
{
    size_t n = 0;
    char t[64];

#define S_FACT_(name) (f[n].title = (name), f[n].value[0] = '\0', f[n++].value)
    if (c->event_id[0])
        s_addf(S_FACT_("Event"), "%s", c->event_id);
    if (c->event_type[0])
        s_addf(S_FACT_("Type"), "%s", c->event_type);
    if (c->n_vms)
        s_add_vms(S_FACT_("VMs"), c);
    if (c->fault_domain >= 0)
        s_addf(S_FACT_(c->update_domains ? "Update domain" : "Fault domain"), "%d",
               c->fault_domain);
    if (c->n_order)
        s_add_order(S_FACT_("Drain order"), c);
    if (s_wall_ok(c->drain_at_ms))
        s_addf(S_FACT_("Drain at"), "%s", s_when(c->drain_at_ms, 0, true, t, sizeof(t)));
    if (s_wall_ok(c->deadline_ms))
        s_addf(S_FACT_("Deadline"), "%s", s_when(c->deadline_ms, 0, true, t, sizeof(t)));
    if (c->phase[0])
        s_addf(S_FACT_("Phase"), "%s", c->phase);
    if (c->kind == SC_NOTIFY_LEADER_CHANGED) {
        s_addf(S_FACT_("Leader"), "%s", c->leader[0] ? c->leader : "none");
        if (c->prev_leader[0])
            s_addf(S_FACT_("Previous leader"), "%s", c->prev_leader);
    }
    if (c->term > 0)
        s_addf(S_FACT_("Term"), "%lld", (long long)c->term);
    if (c->detail[0])
        s_addf(S_FACT_("Detail"), "%s", c->detail);
    if (c->cluster[0])
        s_addf(S_FACT_("Cluster"), "%s", c->cluster);
    if (c->from[0])
        s_addf(S_FACT_("From"), "%s", c->from);
    s_addf(S_FACT_("Time"), "%s", s_when(c->ts_ms, 0, true, t, sizeof(t)));
#undef S_FACT_
    return n;
}

static int s_clean_msg(const sc_notify_msg_t *m, const char *cluster, const char *from,
                       int64_t now_ms, s_clean_t *c)
{
    if (!m || (unsigned)m->kind >= SC_NOTIFY_KIND_MAX || (m->n_vms && !m->vms) ||
        (m->n_drain_order && !m->drain_order))
        return -EINVAL;
    memset(c, 0, sizeof(*c));
    c->kind = m->kind;
    c->ts_ms = s_wall_ok(m->ts_ms) ? m->ts_ms : now_ms;
    s_clean_str(c->event_id, sizeof(c->event_id), m->event_id);
    s_clean_str(c->event_type, sizeof(c->event_type), m->event_type);
    c->n_vms = m->n_vms;
    for (size_t i = 0; i < m->n_vms && c->n_vms_kept < S_JSON_VMS; i++)
        s_clean_str(c->vms[c->n_vms_kept++], sizeof(c->vms[0]), m->vms[i]);
    c->fault_domain = m->fault_domain < 0 ? -1 : m->fault_domain;
    c->update_domains = m->update_domains;
    for (size_t i = 0; i < m->n_drain_order && i < S_ORDER_MAX; i++)
        c->order[c->n_order++] = m->drain_order[i] < 0 ? -1 : m->drain_order[i];
    c->drain_at_ms = s_wall_ok(m->drain_at_ms) ? m->drain_at_ms : 0;
    c->deadline_ms = s_wall_ok(m->deadline_ms) ? m->deadline_ms : 0;
    s_clean_str(c->phase, sizeof(c->phase), m->phase);
    s_clean_str(c->leader, sizeof(c->leader), m->leader);
    s_clean_str(c->prev_leader, sizeof(c->prev_leader), m->prev_leader);
    c->term = m->term > 0 ? m->term : 0;
    s_clean_str(c->detail, sizeof(c->detail), m->detail);
    s_clean_str(c->cluster, sizeof(c->cluster), cluster);
    s_clean_str(c->from, sizeof(c->from), from);
    return 0;
}

static void s_add_str(json_object *o, const char *key, const char *v)
{
    if (v[0])
        json_object_object_add(o, key, json_object_new_string(v));
}

static void s_add_time(json_object *o, const char *key, int64_t ms)
{
    char t[40];

    if (s_wall_ok(ms))
        json_object_object_add(o, key, json_object_new_string(sc_time_iso8601(ms, t, sizeof(t))));
}

/* json: the fields as they are, plus kind, ts and the human line. */
static json_object *s_render_json(const s_clean_t *c, const char *line)
{
    json_object *o = json_object_new_object(), *a;

    json_object_object_add(o, "kind", json_object_new_string(s_kind_names[c->kind]));
    s_add_time(o, "ts", c->ts_ms);
    json_object_object_add(o, "text", json_object_new_string(line));
    s_add_str(o, "cluster", c->cluster);
    s_add_str(o, "from", c->from);
    s_add_str(o, "event_id", c->event_id);
    s_add_str(o, "event_type", c->event_type);
    if (c->n_vms) {
        a = json_object_new_array();
        for (size_t i = 0; i < c->n_vms_kept; i++)
            json_object_array_add(a, json_object_new_string(c->vms[i]));
        json_object_object_add(o, "vms", a);
        if (c->n_vms > c->n_vms_kept)
            json_object_object_add(o, "vms_total", json_object_new_int64((int64_t)c->n_vms));
    }
    if (c->fault_domain >= 0 || c->n_order)
        json_object_object_add(o, "domain_type",
                               json_object_new_string(c->update_domains ? "update" : "fault"));
    if (c->fault_domain >= 0)
        json_object_object_add(o, "fault_domain", json_object_new_int(c->fault_domain));
    if (c->n_order) {
        a = json_object_new_array();
        for (size_t i = 0; i < c->n_order; i++)
            json_object_array_add(a, json_object_new_int(c->order[i]));
        json_object_object_add(o, "drain_order", a);
    }
    s_add_time(o, "drain_at", c->drain_at_ms);
    s_add_time(o, "deadline", c->deadline_ms);
    s_add_str(o, "phase", c->phase);
    if (c->kind == SC_NOTIFY_LEADER_CHANGED)
        json_object_object_add(o, "leader",
                               c->leader[0] ? json_object_new_string(c->leader) : NULL);
    s_add_str(o, "prev_leader", c->prev_leader);
    if (c->term > 0)
        json_object_object_add(o, "term", json_object_new_int64(c->term));
    s_add_str(o, "detail", c->detail);
    return o;
}

/* Appends src (clean UTF-8; a newline is kept: the details' line breaks) to dst (S_SLACK_TEXT
 * bytes in all, NUL included) with Slack's three escapes; stops before a character or an
 * escape that does not fit. */
static void s_slack_add(char *dst, const char *src)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t j = strlen(dst), i = 0, n = strlen(src);

    while (i < n) {
        const char *rep = s[i] == '&'   ? "&amp;"
                          : s[i] == '<' ? "&lt;"
                          : s[i] == '>' ? "&gt;"
                                        : NULL;
        size_t in = rep || s[i] == '\n' ? 1 : s_utf8_len(s + i, n - i);
        size_t out = rep ? strlen(rep) : in ? in : 1;

        if (j + out >= S_SLACK_TEXT)
            break;
        if (rep)
            memcpy(dst + j, rep, out);
        else if (in)
            memcpy(dst + j, s + i, out);
        else
            dst[j] = '?';
        j += out;
        i += in ? in : 1;
    }
    dst[j] = '\0';
}

static json_object *s_slack_section(const char *text)
{
    json_object *sec = json_object_new_object(), *t = json_object_new_object();

    json_object_object_add(t, "type", json_object_new_string("mrkdwn"));
    json_object_object_add(t, "text", json_object_new_string(text));
    json_object_object_add(sec, "type", json_object_new_string("section"));
    json_object_object_add(sec, "text", t);
    return sec;
}

/* slack: {"text": line, "blocks": [section line, section details]} */
static json_object *s_render_slack(const s_clean_t *c, const char *line, const s_fact_t *f,
                                   size_t nf)
{
    json_object *o = json_object_new_object(), *blocks = json_object_new_array();
    char *text = calloc(1, S_SLACK_TEXT), *details = calloc(1, S_SLACK_TEXT);

    if (!text || !details) {
        free(text);
        free(details);
        json_object_put(o);
        json_object_put(blocks);
        return NULL;
    }
    if (c->cluster[0]) {
        s_slack_add(text, "[");
        s_slack_add(text, c->cluster);
        s_slack_add(text, "] ");
    }
    s_slack_add(text, line);
    for (size_t i = 0; i < nf; i++) {
        s_slack_add(details, i ? "\n*" : "*");
        s_slack_add(details, f[i].title);
        s_slack_add(details, ":* ");
        s_slack_add(details, f[i].value);
    }
    json_object_object_add(o, "text", json_object_new_string(text));
    json_object_array_add(blocks, s_slack_section(text));
    json_object_array_add(blocks, s_slack_section(details));
    json_object_object_add(o, "blocks", blocks);
    free(text);
    free(details);
    return o;
}

/* teams: an Adaptive Card in the message envelope of incoming webhooks. */
static json_object *s_render_teams(const s_clean_t *c, const char *line, const s_fact_t *f,
                                   size_t nf)
{
    json_object *o = json_object_new_object(), *atts = json_object_new_array();
    json_object *att = json_object_new_object(), *card = json_object_new_object();
    json_object *body = json_object_new_array(), *head = json_object_new_object();
    json_object *set = json_object_new_object(), *facts = json_object_new_array();
    json_object *ms = json_object_new_object();
    char title[S_LINE_MAX] = "";

    if (c->cluster[0])
        s_addf(title, "[%s] ", c->cluster);
    s_addf(title, "%s", line);
    json_object_object_add(head, "type", json_object_new_string("TextBlock"));
    json_object_object_add(head, "text", json_object_new_string(title));
    json_object_object_add(head, "weight", json_object_new_string("Bolder"));
    json_object_object_add(head, "size", json_object_new_string("Medium"));
    json_object_object_add(head, "wrap", json_object_new_boolean(1));
    json_object_array_add(body, head);
    for (size_t i = 0; i < nf; i++) {
        json_object *fact = json_object_new_object();

        json_object_object_add(fact, "title", json_object_new_string(f[i].title));
        json_object_object_add(fact, "value", json_object_new_string(f[i].value));
        json_object_array_add(facts, fact);
    }
    json_object_object_add(set, "type", json_object_new_string("FactSet"));
    json_object_object_add(set, "facts", facts);
    json_object_array_add(body, set);
    json_object_object_add(
        card, "$schema",
        json_object_new_string("http://adaptivecards.io/schemas/adaptive-card.json"));
    json_object_object_add(card, "type", json_object_new_string("AdaptiveCard"));
    json_object_object_add(card, "version", json_object_new_string("1.2"));
    json_object_object_add(card, "body", body);
    json_object_object_add(ms, "width", json_object_new_string("Full"));
    json_object_object_add(card, "msteams", ms);
    json_object_object_add(att, "contentType",
                           json_object_new_string("application/vnd.microsoft.card.adaptive"));
    json_object_object_add(att, "contentUrl", NULL);
    json_object_object_add(att, "content", card);
    json_object_array_add(atts, att);
    json_object_object_add(o, "type", json_object_new_string("message"));
    json_object_object_add(o, "attachments", atts);
    return o;
}

static int s_render_clean(sc_notify_format_t format, const s_clean_t *c, char **ret_body)
{
    char *line = malloc(S_LINE_MAX), *body;
    s_fact_t *facts = malloc(sizeof(*facts) * S_FACTS_MAX);
    json_object *o = NULL;
    const char *text;
    size_t nf;
    int rc = -ENOMEM;

    if (!line || !facts)
        goto out;
    s_headline(c, line);
    nf = s_facts(c, facts);
    if (format == SC_NOTIFY_JSON)
        o = s_render_json(c, line);
    else if (format == SC_NOTIFY_SLACK)
        o = s_render_slack(c, line, facts, nf);
    else
        o = s_render_teams(c, line, facts, nf);
    if (!o || !(text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                             JSON_C_TO_STRING_NOSLASHESCAPE)))
        goto out;
    if (strlen(text) > SC_NOTIFY_BODY_MAX) {
        rc = -E2BIG; /* cannot happen with the limits above; the fuzz target checks */
        goto out;
    }
    if (!(body = strdup(text)))
        goto out;
    *ret_body = body;
    rc = 0;
out:
    json_object_put(o);
    free(line);
    free(facts);
    return rc;
}

int sc_notify_render(sc_notify_format_t format, const sc_notify_msg_t *m, const char *cluster,
                     const char *from, int64_t now_ms, char **ret_body)
{
    s_clean_t *c;
    int rc;

    if ((unsigned)format >= SC_NOTIFY_FORMAT_MAX || !ret_body)
        return -EINVAL;
    if (!(c = malloc(sizeof(*c))))
        return -ENOMEM;
    if ((rc = s_clean_msg(m, cluster, from, now_ms, c)) == 0)
        rc = s_render_clean(format, c, ret_body);
    free(c);
    return rc;
}

/* ---- delivery ---------------------------------------------------------------------------- */

static size_t s_on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    s_target_t *t = userdata;
    size_t n = size * nmemb, room = S_RESP_MAX - t->resp_len;

    /* Keep the start for the error message; the rest is read and forgotten. */
    if (n < room)
        room = n;
    memcpy(t->resp + t->resp_len, ptr, room);
    t->resp_len += room;
    t->resp[t->resp_len] = '\0';
    return n;
}

static size_t s_on_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    s_target_t *t = userdata;
    size_t n = size * nmemb, k;
    static const char name[] = "retry-after:";
    int64_t s = 0;

    if (n >= 5 && memcmp(ptr, "HTTP/", 5) == 0) {
        t->retry_after_ms = -1; /* a new answer (after a 100 Continue, say) */
    } else if (n > sizeof(name) - 1 && strncasecmp(ptr, name, sizeof(name) - 1) == 0) {
        /* Only delta-seconds: an HTTP-date is ignored (the backoff decides then). */
        for (k = sizeof(name) - 1; k < n && (ptr[k] == ' ' || ptr[k] == '\t'); k++)
            ;
        if (k < n && isdigit((unsigned char)ptr[k])) {
            for (; k < n && isdigit((unsigned char)ptr[k]); k++)
                if (s < 86400)
                    s = s * 10 + (ptr[k] - '0');
            while (k < n && (ptr[k] == ' ' || ptr[k] == '\t' || ptr[k] == '\r' || ptr[k] == '\n'))
                k++;
            if (k == n)
                t->retry_after_ms = s * 1000;
        }
    }
    return n;
}

static void s_item_free_all(s_item_t *it)
{
    while (it) {
        s_item_t *next = it->next;

        free(it);
        it = next;
    }
}

static int s_target_init(sc_notify_t *n, s_target_t *t, const s_spec_t *sp,
                         const sc_notify_opts_t *o)
{
    CURL *h;
    bool ok = true;

    t->format = sp->format;
    snprintf(t->label, sizeof(t->label), "%s", sp->label);
    t->retry_after_ms = -1;
    sc_backoff_init(&t->backoff, n->retry_initial_ms, n->retry_max_ms);
    if (!(t->url = strdup(sp->url)))
        return -ENOMEM;
    if (!(h = t->easy = curl_easy_init()))
        return -ENOMEM;
    ok &= curl_easy_setopt(h, CURLOPT_URL, t->url) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") == CURLE_OK;
    /* A webhook answers where it is: a redirect is a failure, never followed (a POST to
     * wherever a 3xx points would be a surprise, and so would http after https). */
    ok &= curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK;
    /* No proxy unless one is configured: NOPROXY "*" disables http_proxy, HTTPS_PROXY and
     * ALL_PROXY from the environment; a configured one is used for every target (NOPROXY ""
     * ignores the environment's no_proxy too). */
    ok &= curl_easy_setopt(h, CURLOPT_PROXY, o->proxy ? o->proxy : "") == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_NOPROXY, o->proxy ? "" : "*") == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)o->connect_timeout_ms) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)o->timeout_ms) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_POST, 1L) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_HTTPHEADER, n->headers) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, s_on_body) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_WRITEDATA, t) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, s_on_header) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_HEADERDATA, t) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_ERRORBUFFER, t->errbuf) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_USERAGENT, "schedcoord/" SC_VERSION) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_PRIVATE, t) == CURLE_OK;
#if LIBCURL_VERSION_NUM >= 0x075700
    /* A stop must not wait for a name lookup still running in its resolver thread. */
    ok &= curl_easy_setopt(h, CURLOPT_QUICK_EXIT, 1L) == CURLE_OK;
#endif
    return ok ? 0 : -EINVAL;
}

static void *s_worker(void *arg);

int sc_notify_new(const sc_notify_opts_t *opts, char *err, size_t errlen, sc_notify_t **ret_notify)
{
    sc_notify_opts_t o;
    s_spec_t *specs = NULL;
    sc_notify_t *self = NULL;
    sigset_t all, old;
    int rc, count;

    if (!ret_notify)
        return -EINVAL;
    if (opts)
        o = *opts;
    else
        sc_notify_opts_init(&o);
    if (o.queue_max < 1 || o.queue_max > SC_NOTIFY_QUEUE_MAX)
        return sc_errf(err, errlen, SC_E_CONFIG, "notify queue: %zu (expected 1..%d)", o.queue_max,
                       SC_NOTIFY_QUEUE_MAX);
    if (o.max_attempts < 1 || o.max_attempts > SC_NOTIFY_ATTEMPTS_MAX)
        return sc_errf(err, errlen, SC_E_CONFIG, "notify attempts: %d (expected 1..%d)",
                       o.max_attempts, SC_NOTIFY_ATTEMPTS_MAX);
    if (o.timeout_ms < 1 || o.timeout_ms > S_TIMEOUT_MAX_MS || o.connect_timeout_ms < 0 ||
        o.retry_initial_ms < 1 || o.retry_max_ms < o.retry_initial_ms ||
        o.retry_max_ms > S_TIMEOUT_MAX_MS || o.stop_grace_ms < 0 ||
        o.stop_grace_ms > S_TIMEOUT_MAX_MS)
        return sc_errf(err, errlen, SC_E_CONFIG,
                       "notify timings out of range (timeout 1..%lld ms, retry 1 <= initial <= "
                       "max <= %lld ms, grace 0..%lld ms)",
                       S_TIMEOUT_MAX_MS, S_TIMEOUT_MAX_MS, S_TIMEOUT_MAX_MS);
    if (o.connect_timeout_ms > o.timeout_ms || o.connect_timeout_ms == 0)
        o.connect_timeout_ms = o.timeout_ms;
    if (!(specs = calloc(SC_NOTIFY_MAX_TARGETS, sizeof(*specs))))
        return -ENOMEM;
    if ((count = s_spec_parse(o.spec, specs, err, errlen)) < 0) {
        free(specs);
        return count;
    }
    pthread_once(&s_curl_once, s_curl_init);
    if (s_curl_rc != CURLE_OK) {
        free(specs);
        return sc_errf(err, errlen, -ENOMEM, "libcurl: %s", curl_easy_strerror(s_curl_rc));
    }
    rc = -ENOMEM;
    if (!(self = calloc(1, sizeof(*self))))
        goto fail;
    self->queue_max = o.queue_max;
    self->max_attempts = o.max_attempts;
    self->retry_initial_ms = o.retry_initial_ms;
    self->retry_max_ms = o.retry_max_ms;
    self->stop_grace_ms = o.stop_grace_ms;
    if ((o.cluster && !(self->cluster = strdup(o.cluster))) ||
        (o.from && !(self->from = strdup(o.from))))
        goto fail;
    if ((rc = -pthread_mutex_init(&self->lock, NULL)) < 0)
        goto fail;
    self->lock_ready = true;
    if (count == 0) {
        free(specs);
        *ret_notify = self;
        return 0;
    }
    rc = -ENOMEM;
    /* "Expect:" keeps curl from waiting for a 100 Continue before a body over 1 KiB. */
    if (!(self->headers = curl_slist_append(NULL, "Content-Type: application/json")) ||
        !curl_slist_append(self->headers, "Expect:") || !(self->multi = curl_multi_init()))
        goto fail;
    for (int i = 0; i < count; i++) {
        self->n_targets++;
        if ((rc = s_target_init(self, &self->targets[i], &specs[i], &o)) < 0)
            goto fail;
    }
    /* The worker takes no signal: the daemon's handlers run in its own threads, and a
     * SIGPIPE from a write to a closed connection (libcurl with NOSIGNAL leaves that to us)
     * stays pending in the worker instead of ending the process. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = -pthread_create(&self->thread, NULL, s_worker, self);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc < 0) {
        sc_errf(err, errlen, rc, "notify: cannot start its thread: %s", strerror(-rc));
        goto fail;
    }
    self->thread_running = true;
    free(specs);
    *ret_notify = self;
    return 0;
fail:
    free(specs);
    sc_notify_destroy(&self);
    return rc;
}

/* Starts an attempt of t->inflight. */
static void s_start(sc_notify_t *n, s_target_t *t)
{
    CURLMcode mc;

    t->resp_len = 0;
    t->resp[0] = '\0';
    t->errbuf[0] = '\0';
    t->retry_after_ms = -1;
    curl_easy_setopt(t->easy, CURLOPT_POSTFIELDS, &t->inflight->body[0]);
    curl_easy_setopt(t->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)t->inflight->len);
    if (t->attempts > 0) {
        pthread_mutex_lock(&n->lock);
        t->stats.retried++;
        pthread_mutex_unlock(&n->lock);
    }
    if ((mc = curl_multi_add_handle(n->multi, t->easy)) == CURLM_OK) {
        t->active = true;
        return;
    }
    /* Cannot happen with a handle of ours that is not in the multi; counted as an attempt
     * that failed, so that a broken handle cannot spin. */
    t->attempts++;
    t->next_ms = sc_mono_ms() + sc_backoff_next(&t->backoff, 0);
    pthread_mutex_lock(&n->lock);
    snprintf(t->stats.last_error, sizeof(t->stats.last_error), "libcurl: %s",
             curl_multi_strerror(mc));
    pthread_mutex_unlock(&n->lock);
}

typedef enum { S_SENT, S_RETRY, S_FAIL } s_verdict_t;

/* What one finished attempt of t means; the reason goes into why. */
static s_verdict_t s_verdict(const s_target_t *t, CURLcode cc, long status, char *why,
                             size_t whylen)
{
    char snip[96];
    size_t k;

    for (k = 0; k < t->resp_len && k < 60 && k + 1 < sizeof(snip); k++)
        snip[k] = (t->resp[k] >= ' ' && t->resp[k] < 0x7f) ? t->resp[k] : ' ';
    snip[k] = '\0';
    if (cc != CURLE_OK) {
        snprintf(why, whylen, "%.120s", t->errbuf[0] ? t->errbuf : curl_easy_strerror(cc));
        /* What another attempt cannot mend; the rest (refused, reset, timed out, name not
         * resolved, TLS handshake) may be gone on the next. */
        return cc == CURLE_UNSUPPORTED_PROTOCOL || cc == CURLE_URL_MALFORMAT ||
                       cc == CURLE_NOT_BUILT_IN || cc == CURLE_BAD_FUNCTION_ARGUMENT
                   ? S_FAIL
                   : S_RETRY;
    }
    if (status >= 200 && status < 300) {
        /* Teams' connectors answer throttling with a 200 whose body says 429. */
        if (t->format == SC_NOTIFY_TEAMS && strstr(t->resp, "HTTP error 429")) {
            snprintf(why, whylen, "HTTP %ld: throttled (%s)", status, snip);
            return S_RETRY;
        }
        why[0] = '\0';
        return S_SENT;
    }
    if (status >= 300 && status < 400) {
        snprintf(why, whylen, "HTTP %ld: a redirect (not followed)", status);
        return S_FAIL;
    }
    snprintf(why, whylen, "HTTP %ld%s%s", status, snip[0] ? ": " : "", snip);
    return status == 408 || status == 429 || status >= 500 ? S_RETRY : S_FAIL;
}

/* Accounts for the attempt of t that just finished. */
static void s_done(sc_notify_t *n, s_target_t *t, CURLcode cc)
{
    long status = 0;
    char why[sizeof(t->stats.last_error)];
    s_verdict_t v;

    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    curl_multi_remove_handle(n->multi, t->easy);
    t->active = false;
    t->attempts++;
    v = s_verdict(t, cc, status, why, sizeof(why));
    if (v == S_RETRY && t->attempts < n->max_attempts) {
        t->next_ms = sc_mono_ms() + sc_backoff_next(&t->backoff, t->retry_after_ms);
        pthread_mutex_lock(&n->lock);
        t->stats.last_status = status;
        snprintf(t->stats.last_error, sizeof(t->stats.last_error), "%s", why);
        pthread_mutex_unlock(&n->lock);
        return;
    }
    pthread_mutex_lock(&n->lock);
    t->stats.last_status = status;
    if (v == S_SENT) {
        t->stats.sent++;
        t->stats.last_error[0] = '\0';
    } else {
        t->stats.failed++;
        if (v == S_RETRY)
            snprintf(t->stats.last_error, sizeof(t->stats.last_error),
                     "gave up after %d attempts: %.120s", t->attempts, why);
        else
            snprintf(t->stats.last_error, sizeof(t->stats.last_error), "%s", why);
    }
    t->stats.queued--;
    pthread_mutex_unlock(&n->lock);
    free(t->inflight);
    t->inflight = NULL;
}

/* Takes each idle target's next message. Returns whether stop was asked. Under no lock. */
static bool s_take(sc_notify_t *n, int64_t now)
{
    bool stopping;

    pthread_mutex_lock(&n->lock);
    stopping = n->stopping;
    for (size_t i = 0; i < n->n_targets; i++) {
        s_target_t *t = &n->targets[i];

        if (t->inflight || !t->head)
            continue;
        t->inflight = t->head;
        if (!(t->head = t->head->next))
            t->tail = NULL;
        t->inflight->next = NULL;
        t->attempts = 0;
        t->next_ms = now;
        sc_backoff_reset(&t->backoff);
    }
    pthread_mutex_unlock(&n->lock);
    return stopping;
}

/* The worker: one transfer at a time per target, all targets at once, on one multi handle.
 * It sleeps in curl_multi_poll, which sc_notify_post() and sc_notify_stop() wake. */
static void *s_worker(void *arg)
{
    sc_notify_t *n = arg;
    int64_t stop_at = 0;
    bool stopping = false;

    for (;;) {
        int64_t now = sc_mono_ms(), wait = S_POLL_MAX_MS;
        bool busy = false, finished = false;
        CURLMsg *msg;
        int running, left;

        if (s_take(n, now) && !stopping) {
            stopping = true;
            stop_at = now + n->stop_grace_ms;
        }
        for (size_t i = 0; i < n->n_targets; i++) {
            s_target_t *t = &n->targets[i];

            if (!t->inflight)
                continue;
            busy = true;
            if (!t->active && t->next_ms <= now)
                s_start(n, t);
            if (!t->active && t->next_ms - now < wait)
                wait = t->next_ms - now;
        }
        if (stopping && (!busy || now >= stop_at))
            break;
        if (stopping && stop_at - now < wait)
            wait = stop_at - now;
        curl_multi_perform(n->multi, &running);
        while ((msg = curl_multi_info_read(n->multi, &left))) {
            s_target_t *t = NULL;

            if (msg->msg != CURLMSG_DONE)
                continue;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&t);
            if (t) {
                s_done(n, t, msg->data.result);
                finished = true;
            }
        }
        /* A finished message lets the next one of its target go at once. */
        if (!finished)
            curl_multi_poll(n->multi, NULL, 0, (int)(wait > 0 ? wait : 0), NULL);
    }

    /* Stopped: abort what is in flight, drop what is left. */
    pthread_mutex_lock(&n->lock);
    for (size_t i = 0; i < n->n_targets; i++) {
        s_target_t *t = &n->targets[i];
        size_t left = 0;

        if (t->active) {
            curl_multi_remove_handle(n->multi, t->easy);
            t->active = false;
        }
        left += t->inflight != NULL;
        for (s_item_t *it = t->head; it; it = it->next)
            left++;
        free(t->inflight);
        t->inflight = NULL;
        s_item_free_all(t->head);
        t->head = t->tail = NULL;
        t->stats.dropped += left;
        t->stats.queued = 0;
        n->dropped_at_stop += left;
    }
    pthread_mutex_unlock(&n->lock);
    return NULL;
}

size_t sc_notify_stop(sc_notify_t *n)
{
    size_t dropped;

    if (!n || !n->thread_running)
        return 0;
    pthread_mutex_lock(&n->lock);
    n->stopping = true;
    pthread_mutex_unlock(&n->lock);
    curl_multi_wakeup(n->multi);
    pthread_join(n->thread, NULL);
    n->thread_running = false;
    pthread_mutex_lock(&n->lock);
    dropped = n->dropped_at_stop;
    pthread_mutex_unlock(&n->lock);
    return dropped;
}

void sc_notify_destroy(sc_notify_t **notify)
{
    sc_notify_t *self;

    if (!notify || !(self = *notify))
        return;
    sc_notify_stop(self);
    for (size_t i = 0; i < self->n_targets; i++) {
        s_target_t *t = &self->targets[i];

        if (t->easy)
            curl_easy_cleanup(t->easy);
        free(t->url);
        free(t->inflight);
        s_item_free_all(t->head);
    }
    if (self->multi)
        curl_multi_cleanup(self->multi);
    curl_slist_free_all(self->headers);
    if (self->lock_ready)
        pthread_mutex_destroy(&self->lock);
    free(self->cluster);
    free(self->from);
    free(self);
    *notify = NULL;
}

int sc_notify_post(sc_notify_t *n, const sc_notify_msg_t *m)
{
    char *bodies[SC_NOTIFY_FORMAT_MAX] = {0};
    s_item_t *items[SC_NOTIFY_MAX_TARGETS] = {0};
    s_clean_t *c = NULL;
    bool full = false;
    int rc;

    if (!n || !m)
        return -EINVAL;
    if (!(c = malloc(sizeof(*c))))
        return -ENOMEM;
    if ((rc = s_clean_msg(m, n->cluster, n->from, sc_wall_ms(), c)) < 0 || n->n_targets == 0)
        goto out;
    /* Render and copy outside the lock: the worker never waits for a post. */
    for (size_t i = 0; i < n->n_targets; i++) {
        sc_notify_format_t f = n->targets[i].format;
        size_t len;

        if (!bodies[f] && (rc = s_render_clean(f, c, &bodies[f])) < 0)
            goto out;
        len = strlen(bodies[f]);
        rc = -ENOMEM;
        if (!(items[i] = malloc(sizeof(*items[i]) + len + 1)))
            goto out;
        items[i]->next = NULL;
        items[i]->len = len;
        memcpy(items[i]->body, bodies[f], len + 1);
    }
    rc = 0;
    pthread_mutex_lock(&n->lock);
    if (n->stopping) {
        pthread_mutex_unlock(&n->lock);
        rc = -ESHUTDOWN;
        goto out;
    }
    for (size_t i = 0; i < n->n_targets; i++) {
        s_target_t *t = &n->targets[i];

        if (t->stats.queued >= n->queue_max) {
            t->stats.dropped++;
            full = true;
            continue;
        }
        if (t->tail)
            t->tail->next = items[i];
        else
            t->head = items[i];
        t->tail = items[i];
        items[i] = NULL;
        t->stats.queued++;
    }
    pthread_mutex_unlock(&n->lock);
    curl_multi_wakeup(n->multi);
    rc = full ? -ENOBUFS : 0;
out:
    for (size_t i = 0; i < SC_NOTIFY_MAX_TARGETS; i++)
        free(items[i]);
    for (int f = 0; f < SC_NOTIFY_FORMAT_MAX; f++)
        free(bodies[f]);
    free(c);
    return rc;
}

size_t sc_notify_targets(const sc_notify_t *n)
{
    return n ? n->n_targets : 0;
}

sc_notify_format_t sc_notify_target_format(const sc_notify_t *n, size_t i)
{
    return n && i < n->n_targets ? n->targets[i].format : SC_NOTIFY_FORMAT_MAX;
}

const char *sc_notify_target_label(const sc_notify_t *n, size_t i)
{
    return n && i < n->n_targets ? n->targets[i].label : NULL;
}

int sc_notify_stats(const sc_notify_t *n, size_t i, sc_notify_stats_t *ret_stats)
{
    sc_notify_t *self = (sc_notify_t *)(uintptr_t)n; /* the lock is not part of the value */

    if (!n || i >= n->n_targets || !ret_stats)
        return -EINVAL;
    pthread_mutex_lock(&self->lock);
    *ret_stats = n->targets[i].stats;
    pthread_mutex_unlock(&self->lock);
    return 0;
}

int sc_notify_stats_json(const sc_notify_t *n, json_object **ret_json)
{
    json_object *a;

    if (!n || !ret_json)
        return -EINVAL;
    if (!(a = json_object_new_array()))
        return -ENOMEM;
    for (size_t i = 0; i < n->n_targets; i++) {
        json_object *o = json_object_new_object();
        sc_notify_stats_t st;

        sc_notify_stats(n, i, &st);
        json_object_object_add(o, "format",
                               json_object_new_string(s_format_names[n->targets[i].format]));
        json_object_object_add(o, "target", json_object_new_string(n->targets[i].label));
        json_object_object_add(o, "sent", json_object_new_int64((int64_t)st.sent));
        json_object_object_add(o, "failed", json_object_new_int64((int64_t)st.failed));
        json_object_object_add(o, "dropped", json_object_new_int64((int64_t)st.dropped));
        json_object_object_add(o, "retried", json_object_new_int64((int64_t)st.retried));
        json_object_object_add(o, "queued", json_object_new_int64((int64_t)st.queued));
        json_object_object_add(o, "last_status", json_object_new_int64(st.last_status));
        json_object_object_add(o, "last_error", json_object_new_string(st.last_error));
        json_object_array_add(a, o);
    }
    *ret_json = a;
    return 0;
}
