/* sc_ctl: the control socket between schedcoordctl and the coordinator.
 *
 * A UNIX stream socket at <state-dir>/control.sock (mode 0600). One request per connection:
 * the client writes one JSON object {"cmd":"status"|"events"|"pause"|"resume"} and a
 * newline (or shuts its side down), the server answers one JSON object and closes. Requests
 * are bounded (SC_CTL_REQUEST_MAX) and a slow client is dropped after SC_CTL_IO_TIMEOUT_MS,
 * so a stuck client cannot stall the coordinator's loop.
 *
 * Also here: schedcoordctl itself (sc_ctl_main), so that it is tested without a process,
 * and the text renderings of status / events / history. */
#ifndef SC_CTL_H
#define SC_CTL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>

#define SC_CTL_SOCKET_NAME "control.sock"
#define SC_CTL_DB_NAME "coordinator.db"
#define SC_CTL_REQUEST_MAX 4096
#define SC_CTL_RESPONSE_MAX (16u << 20)
#define SC_CTL_IO_TIMEOUT_MS 1000

/* Answers one request: cmd is the request's "cmd" (validated non-empty string), req the whole
 * request. Returns a new JSON object (the library frees it after sending); NULL answers
 * {"error":"internal error"}. */
typedef json_object *(*sc_ctl_handler_fn)(void *userdata, const char *cmd, json_object *req);

/* Binds and listens on path (a stale socket file is replaced), non-blocking, mode 0600.
 * 0 and *ret_fd, or -errno with a reason in err. */
int sc_ctl_listen(const char *path, int *ret_fd, char *err, size_t errlen);
/* Accepts one pending connection (if any: returns 0 at once when none), reads its request,
 * answers it through fn and closes it. Bad requests get {"error":"..."} naming the problem.
 * Returns 1 when a request was served, 0 when none was pending, -errno on accept errors. */
int sc_ctl_serve_one(int listen_fd, sc_ctl_handler_fn fn, void *userdata);
/* Closes the listening socket and removes path; takes fd < 0. */
void sc_ctl_close(int fd, const char *path);

/* Client: sends request (a JSON text) to the socket at path and returns the answer parsed,
 * *ret_answer the caller's. -ECONNREFUSED / -ENOENT when no coordinator listens, SC_E_TIMEOUT,
 * SC_E_NOT_JSON; reason in err. */
int sc_ctl_request(const char *path, const char *request, int timeout_ms, json_object **ret_answer,
                   char *err, size_t errlen);

/* The answer of the coordinator whose state directory is dir to {"cmd": cmd} (a plain word), the
 * caller's; NULL and a reason in err when it cannot be reached or refuses (its "error"). */
json_object *sc_ctl_ask(const char *dir, const char *cmd, char *err, size_t errlen);

/* Text renderings (tables) of a status answer, its events, and a history array. */
void sc_ctl_print_status(json_object *status, FILE *out);
void sc_ctl_print_events(json_object *status, FILE *out);
void sc_ctl_print_history(json_object *history, FILE *out);

/* schedcoordctl: `--state-dir DIR status|events|history|pause|resume|plan [--json]`,
 * `rehearse [options] [--json]`, `watch ...` (sc_ctl_watch.h), `metrics`, `keygen ...`.
 * Returns the process exit status (0 ok, 1 failure, 2 usage). */
int sc_ctl_main(int argc, char **argv, FILE *out, FILE *errf);

/* ---- sc_ctl_rehearse.c: rehearse and plan ------------------------------------------------- */

/* An option of rehearse (--event-type, --fault-domain, --vms, --recover-after) with its value
 * into the request *req (made when NULL: {"cmd":"rehearse",...}). 1 when opt is one, 0 when it
 * is not, -EINVAL for a bad value (named in err). */
int sc_ctl_rehearse_arg(json_object **req, const char *opt, const char *val, char *err,
                        size_t errlen);
/* schedcoordctl rehearse: sends req (consumed; NULL: the defaults), waits until the rehearsal is
 * over and prints its report (text, or the JSON with --json). 0 when every VM prepared and
 * recovered, 1 otherwise (stopped, a hook failed, an error). */
int sc_ctl_rehearse(const char *dir, json_object *req, bool as_json, FILE *out, FILE *errf);
/* schedcoordctl plan: the last plan round of the leader, what it waits for, its forecasts. */
int sc_ctl_plan(const char *dir, bool as_json, FILE *out, FILE *errf);
/* Text renderings of a rehearsal's report and of a plan answer. */
void sc_ctl_print_report(json_object *report, FILE *out);
void sc_ctl_print_plan(json_object *plan, FILE *out);

#endif
