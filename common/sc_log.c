#include "sc_log.h"
#include "sc_time.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *s_ident = "schedcoord"; /* program name on each line */
static sc_log_level_t s_min = SC_LOG_INFO; /* lowest level written */
static int s_journal = -1;                 /* -1 unknown, 0 no, 1 under journald */

static const char *const s_level_name[SC_LOG_LEVEL_MAX] = {"debug", "info", "notice", "warn",
                                                           "err"};
static const int s_syslog_prio[SC_LOG_LEVEL_MAX] = {7, 6, 5, 4, 3};

void sc_log_init(const char *ident, sc_log_level_t min_level)
{
    if (ident)
        s_ident = ident;
    if (min_level < SC_LOG_LEVEL_MAX)
        s_min = min_level;
    s_journal = getenv("JOURNAL_STREAM") != NULL;
}

int sc_log_level_parse(const char *s, sc_log_level_t *ret_level)
{
    static const struct {
        const char *name;
        sc_log_level_t level;
    } names[] = {{"debug", SC_LOG_DEBUG}, {"info", SC_LOG_INFO},    {"notice", SC_LOG_NOTICE},
                 {"warn", SC_LOG_WARN},   {"warning", SC_LOG_WARN}, {"err", SC_LOG_ERR},
                 {"error", SC_LOG_ERR}};

    for (size_t i = 0; s && i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcasecmp(s, names[i].name) == 0) {
            *ret_level = names[i].level;
            return 0;
        }
    }
    return -EINVAL;
}

const char *sc_log_level_name(sc_log_level_t level)
{
    return level < SC_LOG_LEVEL_MAX ? s_level_name[level] : "?";
}

bool sc_log_enabled(sc_log_level_t level)
{
    return level >= s_min && level < SC_LOG_LEVEL_MAX;
}

void sc_log(sc_log_level_t level, const char *msg, const char *fields_fmt, ...)
{
    char line[4096];
    size_t n = 0;
    int w;
    int saved_errno = errno;

    if (!sc_log_enabled(level))
        return;
    if (s_journal < 0)
        s_journal = getenv("JOURNAL_STREAM") != NULL;
    if (s_journal) {
        w = snprintf(line, sizeof(line), "<%d>level=%s msg=\"", s_syslog_prio[level],
                     s_level_name[level]);
    } else {
        char ts[40];
        w = snprintf(line, sizeof(line), "%s %s level=%s msg=\"",
                     sc_time_iso8601(sc_wall_ms(), ts, sizeof(ts)), s_ident, s_level_name[level]);
    }
    n = w > 0 ? (size_t)w : 0;
    /* The message is quoted: escape quotes and keep it on one line. */
    for (const char *p = msg ? msg : ""; *p && n + 3 < sizeof(line); p++) {
        if (*p == '"' || *p == '\\')
            line[n++] = '\\';
        line[n++] = (*p == '\n' || *p == '\r') ? ' ' : *p;
    }
    if (n + 1 < sizeof(line))
        line[n++] = '"';
    if (fields_fmt && *fields_fmt && n + 2 < sizeof(line)) {
        va_list ap;

        line[n++] = ' ';
        va_start(ap, fields_fmt);
        w = vsnprintf(line + n, sizeof(line) - n, fields_fmt, ap);
        va_end(ap);
        if (w > 0)
            n += (size_t)w < sizeof(line) - n ? (size_t)w : sizeof(line) - n - 1;
    }
    for (size_t i = 0; i < n; i++) {
        if (line[i] == '\n' || line[i] == '\r')
            line[i] = ' ';
    }
    if (n >= sizeof(line) - 1)
        n = sizeof(line) - 2;
    line[n++] = '\n';
    fwrite(line, 1, n, stderr);
    fflush(stderr);
    errno = saved_errno;
}

const char *sc_log_q(const char *s)
{
    static _Thread_local char bufs[8][SC_LOG_Q_MAX + 4];
    static _Thread_local unsigned next;
    static const char hex[] = "0123456789abcdef";
    char *out = bufs[next++ % 8];
    size_t n = 0;

    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        char esc = 0;

        switch (*p) {
        case '"': esc = '"'; break;
        case '\\': esc = '\\'; break;
        case '\n': esc = 'n'; break;
        case '\r': esc = 'r'; break;
        case '\t': esc = 't'; break;
        default: break;
        }
        if (n + (esc ? 2 : (*p < 0x20 || *p == 0x7f) ? 4 : 1) > SC_LOG_Q_MAX - 3) {
            /* not in the middle of a UTF-8 character: drop a trailing incomplete one */
            size_t lead = n;
            while (lead > 0 && ((unsigned char)out[lead - 1] & 0xc0) == 0x80)
                lead--;
            if (lead > 0 && ((unsigned char)out[lead - 1] & 0xc0) == 0xc0) {
                unsigned char c = (unsigned char)out[lead - 1];
                size_t want = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
                if (n - (lead - 1) < want)
                    n = lead - 1;
            }
            memcpy(out + n, "...", 3);
            n += 3;
            break;
        }
        if (esc) {
            out[n++] = '\\';
            out[n++] = esc;
        } else if (*p < 0x20 || *p == 0x7f) {
            out[n++] = '\\';
            out[n++] = 'x';
            out[n++] = hex[*p >> 4];
            out[n++] = hex[*p & 15];
        } else {
            out[n++] = (char)*p;
        }
    }
    out[n] = '\0';
    return out;
}
