/* sc_ctl_watch: `schedcoordctl watch`, a live view of the set for operators and the demo.
 *
 * Every interval it asks the coordinator for its status (the control socket's "status", as
 * `schedcoordctl status` does) and shows it:
 *   - on a terminal (stdout a TTY, TERM set and not "dumb", no --plain): a frame redrawn in
 *     place — a header (leader, term, approvals), a grid with one column per fault domain and
 *     one line per VM with its state (healthy, draining, drained, impacted, recovering, gone;
 *     "!" no word from its agent, "?" its IMDS does not answer), then the events (type, VMs,
 *     status, approval, NotBefore as "in 4 min 10 s", what the coordinator waits for); colors
 *     unless NO_COLOR is set;
 *   - otherwise (a pipe, a file, TERM=dumb, --plain): plain lines, one per change — a fault
 *     domain whose VMs changed state, an event that changed (status, approval, what it waits
 *     for), the leader or the pause — never a line per tick;
 *   - with --once: one frame (colors only on a terminal), then it exits.
 * It stops on SIGINT or SIGTERM (on a terminal, the cursor shown again), or with --until-idle
 * once nothing has been in flight (no event open, every VM healthy or gone) for a few
 * seconds. */
#ifndef SC_CTL_WATCH_H
#define SC_CTL_WATCH_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define SC_CTL_WATCH_IDLE_S 3.0 /* --until-idle without a value: seconds with nothing in flight */

/* The options of watch, from the command line. */
typedef struct sc_ctl_watch_opts {
    double interval_s; /* between two looks at the coordinator (--interval, default 1) */
    double idle_s;     /* > 0: exit after that long with nothing in flight (--until-idle[=S]) */
    bool once;         /* one frame, then exit (--once) */
    bool plain;        /* plain lines even on a terminal (--plain) */
    bool given;        /* one of these options was given (refused with another command) */
} sc_ctl_watch_opts_t;

/* The defaults: every second, forever, on a terminal as a frame. */
void sc_ctl_watch_opts_init(sc_ctl_watch_opts_t *o);

/* Reads argv[0] (argc arguments left) if it is an option of watch: returns how many arguments
 * it took (1, or 2 with its value), 0 when argv[0] is not watch's, -1 for a bad value (a
 * message naming the option and what it accepts in err). */
int sc_ctl_watch_arg(sc_ctl_watch_opts_t *o, int argc, char **argv, char *err, size_t errlen);

/* Checks options that do not go together; -1 and err when so. */
int sc_ctl_watch_opts_check(const sc_ctl_watch_opts_t *o, char *err, size_t errlen);

/* `schedcoordctl --state-dir DIR watch ...`: runs the view on out until interrupted (or idle,
 * or once). An unreachable coordinator is shown and retried, except with --once (exit 1).
 * Returns the exit status: 0, 1 (--once and no answer, or out cannot be written). */
int sc_ctl_watch(const char *dir, const sc_ctl_watch_opts_t *o, FILE *out, FILE *errf);

/* One frame of a status answer at wall time now_ms (for NotBefore countdowns): the header,
 * the grid and the events, each line ending in '\n'; ANSI colors when color. */
void sc_ctl_watch_frame(json_object *status, int64_t now_ms, bool color, FILE *out);

/* Something is in flight: an event not over or still waited for (its recover), or a VM
 * neither healthy nor gone. */
bool sc_ctl_watch_is_busy(json_object *status);

/* What plain mode printed last, to print only what changed. */
typedef struct sc_ctl_watch_memo sc_ctl_watch_memo_t;

int sc_ctl_watch_memo_new(sc_ctl_watch_memo_t **ret_memo);
/* Takes NULL; sets *memo to NULL. */
void sc_ctl_watch_memo_destroy(sc_ctl_watch_memo_t **memo);

/* Plain lines "HH:MM:SS what" (UTC) for what changed in status since the memo's last call
 * (everything the first time); status NULL means the coordinator did not answer: err is
 * printed once, and everything is printed again once it answers. Returns the lines printed. */
int sc_ctl_watch_changes(sc_ctl_watch_memo_t *memo, json_object *status, const char *err,
                         int64_t now_ms, FILE *out);

#endif
