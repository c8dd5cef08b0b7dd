/* sc_log: one line per event, to stderr, as key=value fields.
 *
 *   2026-11-22T01:50:00.123Z schedcoord-agent level=info msg="hook finished" event=... rc=0
 *
 * Under systemd (JOURNAL_STREAM set) the timestamp is left to journald and each line starts
 * with the syslog priority "<N>" so that journald files it at the right level.
 * Only the daemons log; the libraries in common/ and proto/ return errors instead. */
#ifndef SC_LOG_H
#define SC_LOG_H

#include <stdbool.h>

typedef enum {
    SC_LOG_DEBUG,
    SC_LOG_INFO,
    SC_LOG_NOTICE,
    SC_LOG_WARN,
    SC_LOG_ERR,
    SC_LOG_LEVEL_MAX
} sc_log_level_t;

/* Sets the program name written on every line and the lowest level written. */
void sc_log_init(const char *ident, sc_log_level_t min_level);
/* Parses "debug", "info", "notice", "warn"/"warning", "err"/"error". 0 or -EINVAL. */
int sc_log_level_parse(const char *s, sc_log_level_t *ret_level);
/* The level's name as written in logs. */
const char *sc_log_level_name(sc_log_level_t level);
/* Whether a line at this level would be written. */
bool sc_log_enabled(sc_log_level_t level);
/* Writes one line: msg (quoted), then the key=value fields made from fields_fmt, which may
 * be NULL. Values that can hold spaces should be quoted by the caller, and text that did not
 * come from this program (IMDS answers, peers' messages, errors quoting them) escaped with
 * sc_log_q: "why=\"%s\"", sc_log_q(err). */
void sc_log(sc_log_level_t level, const char *msg, const char *fields_fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* s escaped for a quoted log value: \" \\ \n \r \t and \xNN for other control bytes, cut
 * at SC_LOG_Q_MAX bytes with "..." so that a line keeps its fields. Returns one of 8
 * per-thread buffers used in turn: valid until the 8th next call on the same thread, enough
 * for the arguments of one sc_log call. NULL gives "". */
#define SC_LOG_Q_MAX 1024
const char *sc_log_q(const char *s);

#define sc_log_debug(msg, ...) sc_log(SC_LOG_DEBUG, msg, __VA_ARGS__)
#define sc_log_info(msg, ...) sc_log(SC_LOG_INFO, msg, __VA_ARGS__)
#define sc_log_notice(msg, ...) sc_log(SC_LOG_NOTICE, msg, __VA_ARGS__)
#define sc_log_warn(msg, ...) sc_log(SC_LOG_WARN, msg, __VA_ARGS__)
#define sc_log_err(msg, ...) sc_log(SC_LOG_ERR, msg, __VA_ARGS__)

#endif
