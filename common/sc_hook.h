/* sc_hook: runs an operator hook.
 *
 * The hook is an executable run directly (fork + execv, no shell) in its own process group,
 * with a minimal environment (PATH, HOME, LANG inherited, plus the caller's NAME=VALUE
 * pairs), the caller's bytes on stdin (then closed), stdout and stderr captured together
 * (the last SC_HOOK_TAIL_MAX - 1 bytes kept), and a timeout after which the whole process
 * group gets SIGTERM, then SIGKILL after a grace period. Grandchildren that keep the output
 * pipe open cannot make the runner hang: once the hook itself has exited (or been killed on
 * timeout) output is read only for a short while more.
 *
 * Asynchronous: sc_hook_start() returns at once; the caller polls sc_hook_fd() (e.g. in
 * zmq_poll) and calls sc_hook_poll() when it is readable or on its own timer; sc_hook_poll()
 * must be called at least every ~100 ms for the timeout to be enforced promptly, since the
 * library installs no signal handler (no SIGCHLD handler: that is the daemon's business).
 * sc_hook_wait() / sc_hook_run() block. The library does not log. */
#ifndef SC_HOOK_H
#define SC_HOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct sc_hook sc_hook_t;

/* Size of the output tail buffer (including the terminating NUL). */
#define SC_HOOK_TAIL_MAX 4096
/* Default grace between SIGTERM and SIGKILL. */
#define SC_HOOK_KILL_GRACE_MS_DEFAULT 2000
/* Hard limits on what a caller (or config) may pass. */
#define SC_HOOK_STDIN_MAX (16u << 20)
#define SC_HOOK_ARGS_MAX 64
#define SC_HOOK_ENV_MAX 256

typedef struct sc_hook_spec {
    const char *path;              /* executable, run directly (execv), no shell */
    const char *const *argv_extra; /* NULL-terminated extra args after argv[0], or NULL */
    const char *const *env; /* NULL-terminated "NAME=VALUE" added to PATH/HOME/LANG, or NULL */
    const char *stdin_data; /* bytes written to the hook's stdin, then closed; may be NULL */
    size_t stdin_len;       /* length of stdin_data (EPIPE from an early exit tolerated) */
    int64_t timeout_ms;     /* then SIGTERM to the process group; <= 0 means no timeout */
    int64_t kill_grace_ms;  /* SIGTERM -> SIGKILL delay; 0 means the 2000 ms default */
} sc_hook_spec_t;

typedef struct sc_hook_result {
    int exit_status;                    /* 0..255 when it exited, -1 otherwise */
    int term_signal;                    /* signal that ended it, 0 when it exited */
    bool timed_out;                     /* the timeout fired and the group was killed */
    int64_t duration_ms;                /* from start to reaped (monotonic) */
    char output_tail[SC_HOOK_TAIL_MAX]; /* last bytes of stdout+stderr combined, NUL-terminated */
    bool output_truncated;              /* more output was produced than the tail holds */
    int rc; /* 0 (exit 0), SC_E_HOOK_FAILED, SC_E_HOOK_TIMEOUT, or -errno if exec failed */
} sc_hook_result_t;

/* Starts the hook. Returns 0 with *ret_hook set (the caller destroys it), or -errno when it
 * cannot be started: -EINVAL (bad spec, limits exceeded), -ENOENT (no such file), -EACCES
 * (not executable), other exec/fork errors as reported through a close-on-exec pipe. */
int sc_hook_start(const sc_hook_spec_t *spec, sc_hook_t **ret_hook);
/* The hook's pid (also its process group id). */
pid_t sc_hook_pid(const sc_hook_t *hook);
/* A descriptor that becomes readable when output arrived or the hook exited (the read end of
 * its output pipe), for poll()/zmq_poll(); -1 once the pipe is closed (then poll on a timer).
 * Borrowed. */
int sc_hook_fd(const sc_hook_t *hook);
/* Non-blocking: drains output, reaps with waitpid(WNOHANG), enforces the timeout.
 * -EAGAIN while running; 0 when finished, with *ret_result filled (result.rc tells how it
 * ended). Once finished, further calls return 0 and the same result. */
int sc_hook_poll(sc_hook_t *hook, sc_hook_result_t *ret_result);
/* Blocks until the hook finished (the timeout is still enforced), then as sc_hook_poll(). */
int sc_hook_wait(sc_hook_t *hook, sc_hook_result_t *ret_result);
/* Kills the process group if still running (SIGKILL), reaps, frees, sets *hook to NULL.
 * Takes NULL and *hook == NULL. */
void sc_hook_destroy(sc_hook_t **hook);
/* sc_hook_start() + sc_hook_wait() + sc_hook_destroy(). Returns 0 with *ret_result filled
 * when the hook ran (check ret_result->rc), or the start error. */
int sc_hook_run(const sc_hook_spec_t *spec, sc_hook_result_t *ret_result);

#endif
