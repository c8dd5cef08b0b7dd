/* sc_sdnotify: telling systemd how a Type=notify daemon is doing, without libsystemd.
 *
 * The protocol (sd_notify(3); systemd documents it as stable and meant to be reimplemented):
 * one AF_UNIX datagram per notification to the socket named by $NOTIFY_SOCKET — a path
 * ("/run/systemd/notify"), or "@name" for the abstract namespace — holding newline-separated
 * KEY=VALUE assignments. We send:
 *   READY=1     start-up is over: `systemctl start` returns, the watchdog is armed;
 *   STATUS=...  one human line, shown by `systemctl status` (sent when it changes, at most
 *               once per SC_SDNOTIFY_STATUS_EVERY_MS; a change in between waits for the tick);
 *   WATCHDOG=1  still alive, every half of $WATCHDOG_USEC (WatchdogSec=) — only when
 *               $WATCHDOG_PID is unset or our own pid (sd_watchdog_enabled's rule);
 *   STOPPING=1  shutting down (with a last STATUS).
 *
 * A NULL sc_sdnotify_t is "not run by systemd": every function takes it and does nothing
 * (returns 0). sc_sdnotify_new_from_env() gives NULL when $NOTIFY_SOCKET is unset, so a daemon
 * started by hand sends nothing at all.
 *
 * Sends never block (MSG_DONTWAIT): a full or missing receiver loses that notification, and
 * the function returns -errno. sc_sdnotify_new_error() hands each new kind of failure out
 * once, for the daemon to log. Times are the caller's CLOCK_MONOTONIC milliseconds
 * (sc_mono_ms), so tests choose them. Not thread-safe: one loop calls it. Does not log. */
#ifndef SC_SDNOTIFY_H
#define SC_SDNOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SC_SDNOTIFY_STATUS_MAX 255         /* bytes of a STATUS line (longer: cut) */
#define SC_SDNOTIFY_STATUS_EVERY_MS 1000   /* at most one STATUS per this long */
#define SC_SDNOTIFY_WATCHDOG_MIN_USEC 2000 /* a shorter WATCHDOG_USEC is refused */

typedef struct sc_sdnotify sc_sdnotify_t;

/* A notifier for the socket notify_socket (NOTIFY_SOCKET's form), with the watchdog of
 * watchdog_usec (WATCHDOG_USEC's form: decimal microseconds; NULL or "" none) when
 * watchdog_pid (WATCHDOG_PID's form; NULL or "" any) is our pid. 0 with *ret_sd (the
 * caller's); -EINVAL for a value that is not of its form, -EAFNOSUPPORT for a socket that is
 * neither a path nor "@name" (systemd's vsock: form), -ENAMETOOLONG, -ENOMEM or a socket()
 * error; err says which variable and why. */
int sc_sdnotify_new(const char *notify_socket, const char *watchdog_usec, const char *watchdog_pid,
                    sc_sdnotify_t **ret_sd, char *err, size_t errlen);
/* sc_sdnotify_new() from $NOTIFY_SOCKET, $WATCHDOG_USEC and $WATCHDOG_PID; *ret_sd = NULL
 * (and 0) when NOTIFY_SOCKET is unset or empty. With unset_env the three variables are removed
 * from the environment (whatever the outcome), so that no child inherits them: call it before
 * any thread starts (unsetenv is not thread-safe). */
int sc_sdnotify_new_from_env(bool unset_env, sc_sdnotify_t **ret_sd, char *err, size_t errlen);
/* Closes the socket and frees; takes NULL; nulls the pointer. Sends nothing. */
void sc_sdnotify_destroy(sc_sdnotify_t **sd);

/* The interval WATCHDOG=1 is sent at (half of WATCHDOG_USEC), in ms; 0 without a watchdog. */
int64_t sc_sdnotify_watchdog_ms(const sc_sdnotify_t *sd);
/* The socket, as given (borrowed; "" for NULL): for the daemon's log. */
const char *sc_sdnotify_socket(const sc_sdnotify_t *sd);

/* READY=1, with STATUS=status when status is non-NULL; the watchdog's first WATCHDOG=1 is
 * due one interval after now_ms. 0 or -errno. */
int sc_sdnotify_ready(sc_sdnotify_t *sd, const char *status, int64_t now_ms);
/* The status line is now status (one line: newlines become spaces; cut at
 * SC_SDNOTIFY_STATUS_MAX bytes). Sent at once when it differs from the last one sent and
 * the last was sent SC_SDNOTIFY_STATUS_EVERY_MS ago or more; otherwise kept for
 * sc_sdnotify_tick(). An unchanged line sends nothing. 0 or -errno. */
int sc_sdnotify_status(sc_sdnotify_t *sd, const char *status, int64_t now_ms);
/* The periodic part, from the daemon's loop (at least once per watchdog interval):
 * WATCHDOG=1 when due, and a status line kept by sc_sdnotify_status() once its time came —
 * in one datagram. 0 or -errno. */
int sc_sdnotify_tick(sc_sdnotify_t *sd, int64_t now_ms);
/* STOPPING=1, with STATUS=status when non-NULL. 0 or -errno. */
int sc_sdnotify_stopping(sc_sdnotify_t *sd, const char *status);
/* A raw notification (KEY=VALUE lines), at once. 0 or -errno. */
int sc_sdnotify_send(sc_sdnotify_t *sd, const char *text);

/* The failure of the last send (-errno) when it is new — the first send to fail, or one that
 * failed otherwise than the one before — once; 0 otherwise (nothing failed, or already
 * handed out). A daemon logs what this returns. */
int sc_sdnotify_new_error(sc_sdnotify_t *sd);

#endif
