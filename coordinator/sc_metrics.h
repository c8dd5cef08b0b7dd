/* sc_metrics: the coordinator's state as Prometheus text (exposition format 0.0.4), for
 * `schedcoordctl metrics` and its one-request HTTP mode (`metrics --http`, run by the
 * socket-activated unit schedcoord-metrics@.service: the request on stdin, the answer on
 * stdout, as inetd and systemd's Accept=yes do).
 *
 * The daemon keeps no HTTP server: schedcoordctl reads its status over the control socket and
 * renders it here. Counters (`*_total`) count since the coordinator process started. */
#ifndef SC_METRICS_H
#define SC_METRICS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* Renders a coordinator status (sc_coord_status(): the JSON of `schedcoordctl status --json`)
 * as Prometheus text into *ret_text (malloc'd, NUL-terminated; the caller frees it). Missing
 * or mistyped fields are left out, never guessed. 0, or -ENOMEM / -EINVAL (no object). */
int sc_metrics_render(json_object *status, char **ret_text);

/* The first len bytes of an HTTP request: 0 while its head is incomplete (no empty line yet),
 * else the status to answer: 200 for GET or HEAD of /metrics (optionally with a query; *head
 * says HEAD), 404 for another path, 405 for another method, 400 for anything that is not an
 * HTTP/1.x request line. A head longer than SC_METRICS_REQ_MAX is 400 (431 is not needed by
 * any scraper). */
#define SC_METRICS_REQ_MAX 8192
int sc_metrics_http_status(const char *req, size_t len, bool *head);

/* Reads one request from fd in (at most SC_METRICS_REQ_MAX bytes, timeout_ms in all), and
 * writes the whole answer to fd out: for 200, the text made by render(userdata) (a 503 with
 * its message when it fails). Returns the status answered (0 if the client sent nothing), or
 * -EBADF when in is not open. */
typedef int (*sc_metrics_render_fn)(const void *userdata, char **ret_text, char *err,
                                    size_t errlen);
int sc_metrics_serve_one(int in, int out, int timeout_ms, sc_metrics_render_fn render,
                         const void *userdata);

#endif
