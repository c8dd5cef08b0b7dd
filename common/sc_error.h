/* sc_error: the project's error codes and their messages.
 *
 * Every function that can fail returns 0 or a negative code: either a negated errno value
 * (-ENOMEM, -EINVAL, ...) or one of the SC_E_* codes below, which sit far below the errno
 * range. sc_strerror() turns either into a short message. */
#ifndef SC_ERROR_H
#define SC_ERROR_H

#include <stddef.h>

/* X(name, message). Add new codes at the end of the list. */
#define SC_ERRORS(X)                                                                               \
    X(SC_E_PARSE, "malformed input")                                                               \
    X(SC_E_NOT_JSON, "body is not JSON")                                                           \
    X(SC_E_TRUNCATED, "body is cut short")                                                         \
    X(SC_E_EMPTY, "empty body")                                                                    \
    X(SC_E_TOO_BIG, "input larger than the limit")                                                 \
    X(SC_E_HTTP_400, "HTTP 400 bad request (missing Metadata header or bad body)")                 \
    X(SC_E_HTTP_404, "HTTP 404 not found")                                                         \
    X(SC_E_HTTP_405, "HTTP 405 method not allowed")                                                \
    X(SC_E_HTTP_410, "HTTP 410 gone (IMDS not ready yet, retry)")                                  \
    X(SC_E_HTTP_429, "HTTP 429 too many requests")                                                 \
    X(SC_E_HTTP_5XX, "HTTP 5xx server error")                                                      \
    X(SC_E_HTTP_OTHER, "unexpected HTTP status")                                                   \
    X(SC_E_TIMEOUT, "timed out")                                                                   \
    X(SC_E_CONNREFUSED, "connection refused")                                                      \
    X(SC_E_NET, "network error")                                                                   \
    X(SC_E_STALE_TERM, "message from an old term")                                                 \
    X(SC_E_PROTO, "protocol violation")                                                            \
    X(SC_E_AUTH, "authentication failed")                                                          \
    X(SC_E_HOOK_TIMEOUT, "hook timed out")                                                         \
    X(SC_E_HOOK_FAILED, "hook failed")                                                             \
    X(SC_E_DB, "database error")                                                                   \
    X(SC_E_CONFIG, "bad configuration")                                                            \
    X(SC_E_NOT_FOUND, "not found")                                                                 \
    X(SC_E_STATE, "not allowed in the current state")                                              \
    X(SC_E_NOT_COMMITTED, "decision not stored by a majority of the voters (not acted on)")        \
    X(SC_E_NONCE_UNKNOWN, "nonce not issued here, or forgotten")                                   \
    X(SC_E_NONCE_EXPIRED, "nonce expired")                                                         \
    X(SC_E_NONCE_REPLAYED, "nonce already used (replay)")                                          \
    X(SC_E_RATE_LIMITED, "too many attempts (rate limited)")

enum {
    SC_E_BASE_ = -100000,
#define SC_ERR_ENUM_(name, msg) name,
    SC_ERRORS(SC_ERR_ENUM_)
#undef SC_ERR_ENUM_
        SC_E_MAX_
};

/* A static string describing rc (0, -errno or SC_E_*). Never NULL. */
const char *sc_strerror(int rc);
/* The code's name ("SC_E_TIMEOUT", "ENOMEM", ...), for logs and JSON. Never NULL. */
const char *sc_errname(int rc);

/* Formats a reason into err (at most errlen bytes, always terminated; nothing is written when
 * err is NULL or errlen is 0) and returns rc, so that a failure reads
 * `return sc_errf(err, errlen, SC_E_CONFIG, "%s: bad value", key);`. */
int sc_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
