#include "sc_ctl.h"

#include "sc_ctl_watch.h"
#include "sc_curve.h"
#include "sc_keygen.h"
#include "sc_error.h"
#include "sc_metrics.h"
#include "sc_store.h"
#include "sc_time.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* "what path: strerror(e)" into err. */
static void s_err(char *err, size_t errlen, const char *what, const char *path, int e)
{
    if (err && errlen)
        snprintf(err, errlen, "%s %s: %s", what, path, strerror(e));
}

static int s_addr(const char *path, struct sockaddr_un *sa)
{
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    if (!path || strlen(path) >= sizeof(sa->sun_path))
        return -ENAMETOOLONG;
    memcpy(sa->sun_path, path, strlen(path) + 1);
    return 0;
}

int sc_ctl_listen(const char *path, int *ret_fd, char *err, size_t errlen)
{
    struct sockaddr_un sa;
    int fd, rc;

    if (!ret_fd)
        return -EINVAL;
    if ((rc = s_addr(path, &sa)) < 0) {
        s_err(err, errlen, "control socket path", path ? path : "(null)", -rc);
        return rc;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        rc = -errno;
        s_err(err, errlen, "socket for", path, -rc);
        return rc;
    }
    unlink(path); /* a stale socket of a previous run */
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0600) < 0 ||
        listen(fd, 16) < 0) {
        rc = -errno;
        s_err(err, errlen, "bind/listen", path, -rc);
        close(fd);
        return rc;
    }
    *ret_fd = fd;
    return 0;
}

void sc_ctl_close(int fd, const char *path)
{
    if (fd < 0)
        return;
    close(fd);
    if (path)
        unlink(path);
}

/* Waits for fd to be ready for events until deadline (monotonic ms). */
static int s_wait(int fd, short events, int64_t deadline_ms)
{
    struct pollfd p = {.fd = fd, .events = events};
    int left = (int)(deadline_ms - sc_mono_ms()), r;

    if (left <= 0)
        return SC_E_TIMEOUT;
    do
        r = poll(&p, 1, left);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return -errno;
    return r == 0 ? SC_E_TIMEOUT : 0;
}

static int s_write_all(int fd, const char *buf, size_t len, int64_t deadline)
{
    while (len) {
        ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR) {
                int rc = s_wait(fd, POLLOUT, deadline);
                if (rc < 0)
                    return rc;
                continue;
            }
            return -errno;
        }
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Reads until a newline, EOF or max bytes; *ret_buf is the caller's, NUL-terminated. */
static int s_read_msg(int fd, size_t max, int64_t deadline, bool stop_at_newline, char **ret_buf,
                      size_t *ret_len)
{
    size_t len = 0, cap = 1024;
    char *buf = malloc(cap);
    int rc = 0;

    if (!buf)
        return -ENOMEM;
    for (;;) {
        ssize_t r;
        if (len + 1 >= cap) {
            if (cap > max) {
                rc = SC_E_TOO_BIG;
                break;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                rc = -ENOMEM;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        r = recv(fd, buf + len, cap - len - 1, 0);
        if (r < 0) {
            if (errno == EAGAIN || errno == EINTR) {
                if ((rc = s_wait(fd, POLLIN, deadline)) < 0)
                    break;
                continue;
            }
            rc = -errno;
            break;
        }
        if (r == 0)
            break;
        len += (size_t)r;
        if (len > max) {
            rc = SC_E_TOO_BIG;
            break;
        }
        if (stop_at_newline && memchr(buf + len - (size_t)r, '\n', (size_t)r))
            break;
    }
    if (rc < 0) {
        free(buf);
        return rc;
    }
    buf[len] = '\0';
    *ret_buf = buf;
    *ret_len = len;
    return 0;
}

static json_object *s_error_answer(const char *msg)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "error", json_object_new_string(msg));
    return o;
}

int sc_ctl_serve_one(int listen_fd, sc_ctl_handler_fn fn, void *userdata)
{
    int64_t deadline = sc_mono_ms() + SC_CTL_IO_TIMEOUT_MS;
    json_object *req = NULL, *ans = NULL, *cmd;
    char *buf = NULL;
    size_t len = 0;
    int fd, rc;

    fd = accept(listen_fd, NULL, NULL);
    if (fd < 0)
        return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -errno;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    rc = s_read_msg(fd, SC_CTL_REQUEST_MAX, deadline, true, &buf, &len);
    if (rc == SC_E_TOO_BIG)
        ans = s_error_answer("request larger than 4096 bytes");
    else if (rc < 0)
        goto out; /* the client went away or is too slow: nothing to answer */
    else if (!(req = json_tokener_parse(buf)) || !json_object_is_type(req, json_type_object))
        ans = s_error_answer("request is not a JSON object");
    else if (!json_object_object_get_ex(req, "cmd", &cmd) ||
             !json_object_is_type(cmd, json_type_string) || !json_object_get_string_len(cmd))
        ans = s_error_answer("request has no \"cmd\" string");
    else if (!(ans = fn(userdata, json_object_get_string(cmd), req)))
        ans = s_error_answer("internal error");
    {
        const char *txt = json_object_to_json_string_ext(ans, JSON_C_TO_STRING_PLAIN);
        if (s_write_all(fd, txt, strlen(txt), deadline) == 0)
            s_write_all(fd, "\n", 1, deadline);
    }
out:
    json_object_put(ans);
    json_object_put(req);
    free(buf);
    close(fd);
    return 1;
}

int sc_ctl_request(const char *path, const char *request, int timeout_ms, json_object **ret_answer,
                   char *err, size_t errlen)
{
    int64_t deadline = sc_mono_ms() + timeout_ms;
    struct sockaddr_un sa;
    char *buf = NULL;
    size_t len = 0;
    json_object *ans;
    int fd, rc;

    if (!request || !ret_answer)
        return -EINVAL;
    if ((rc = s_addr(path, &sa)) < 0) {
        s_err(err, errlen, "control socket", path ? path : "(null)", -rc);
        return rc;
    }
    if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        rc = -errno;
        s_err(err, errlen, "cannot reach the coordinator (is it running?) at", path, -rc);
        close(fd);
        return rc;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    rc = s_write_all(fd, request, strlen(request), deadline);
    if (rc == 0)
        rc = s_write_all(fd, "\n", 1, deadline);
    if (rc == 0)
        rc = s_read_msg(fd, SC_CTL_RESPONSE_MAX, deadline, false, &buf, &len);
    close(fd);
    if (rc < 0) {
        return sc_errf(err, errlen, rc, "control socket %s: %s", path, sc_strerror(rc));
    }
    ans = json_tokener_parse(buf);
    free(buf);
    if (!ans || !json_object_is_type(ans, json_type_object)) {
        json_object_put(ans);
        return sc_errf(err, errlen, SC_E_NOT_JSON, "control socket %s: answer is not a JSON object",
                       path);
    }
    *ret_answer = ans;
    return 0;
}

/* ---- renderings ---------------------------------------------------------------------- */

static const char *s_s(json_object *o, const char *key, const char *def)
{
    json_object *v;
    if (!json_object_object_get_ex(o, key, &v) || !v)
        return def;
    return json_object_get_string(v);
}

static json_object *s_a(json_object *o, const char *key)
{
    json_object *v;
    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_array))
        return NULL;
    return v;
}

static void s_fmt_wall(int64_t ms, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (ms <= 0 || !gmtime_r(&t, &tm)) {
        snprintf(buf, len, "-");
        return;
    }
    strftime(buf, len, "%H:%M:%S", &tm);
}

void sc_ctl_print_status(json_object *st, FILE *out)
{
    json_object *members = s_a(st, "members"), *events = s_a(st, "events"), *mm;

    fprintf(out, "leader: %s   term: %s   role: %s   approvals: %s\n", s_s(st, "leader", "none"),
            s_s(st, "term", "?"), s_s(st, "role", "?"),
            json_object_get_boolean(json_object_object_get(st, "paused")) ? "PAUSED" : "on");
    if ((mm = json_object_object_get(st, "members_mismatch")) &&
        json_object_is_type(mm, json_type_object)) {
        char since[16];
        s_fmt_wall(json_object_get_int64(json_object_object_get(mm, "since_ms")), since,
                   sizeof(since));
        fprintf(out, "MEMBERS DIFFER: %s runs with members digest %s, ours %s (since %s UTC)%s\n",
                s_s(mm, "peer", "?"), s_s(mm, "theirs", "?"), s_s(mm, "ours", "?"), since,
                json_object_get_boolean(json_object_object_get(mm, "voter"))
                    ? ": one of our voters, so this coordinator does not lead"
                    : "");
    }
    fprintf(out, "\n%-16s %3s %3s  %-11s %-6s\n", "MEMBER", "FD", "UD", "STATE", "ALIVE");
    for (size_t i = 0; members && i < json_object_array_length(members); i++) {
        json_object *m = json_object_array_get_idx(members, i);
        bool alive = json_object_get_boolean(json_object_object_get(m, "alive"));
        bool stale = json_object_get_boolean(json_object_object_get(m, "imds_stale"));

        fprintf(out, "%-16s %3s %3s  %-11s %-6s\n", s_s(m, "name", "?"),
                s_s(m, "fault_domain", "-"), s_s(m, "update_domain", "-"), s_s(m, "state", "?"),
                !alive  ? "no"
                : stale ? "blind"
                        : "yes");
    }
    fprintf(out, "\n%-38s %-9s %-9s %-8s  %s\n", "EVENT", "TYPE", "STATUS", "SOURCE",
            "DRAINS (vm:state)");
    if (!events || !json_object_array_length(events))
        fprintf(out, "(no events)\n");
    for (size_t i = 0; events && i < json_object_array_length(events); i++) {
        json_object *e = json_object_array_get_idx(events, i), *d;
        fprintf(out, "%-38s %-9s %-9s %-8s ", s_s(e, "EventId", "?"), s_s(e, "type", "?"),
                s_s(e, "ended_how", s_s(e, "status", "?")), s_s(e, "source", "-"));
        if (json_object_object_get_ex(e, "drains", &d) && d) {
            json_object_object_foreach(d, vm, state)
                fprintf(out, " %s:%s", vm, json_object_get_string(state));
        }
        fprintf(out, "\n");
    }
}

void sc_ctl_print_events(json_object *st, FILE *out)
{
    json_object *events = s_a(st, "events");

    if (!events || !json_object_array_length(events)) {
        fprintf(out, "(no events)\n");
        return;
    }
    for (size_t i = 0; i < json_object_array_length(events); i++) {
        json_object *e = json_object_array_get_idx(events, i), *d, *detail = NULL;
        char nb[32];
        int64_t nbv = json_object_get_int64(json_object_object_get(e, "not_before"));
        s_fmt_wall(nbv * 1000, nb, sizeof(nb));
        fprintf(out, "%s  %s %s (%s)  NotBefore %s UTC  approved %s  ended %s\n",
                s_s(e, "EventId", "?"), s_s(e, "type", "?"), s_s(e, "status", "?"),
                s_s(e, "source", "-"), nbv ? nb : "-",
                json_object_object_get(e, "approved_ms") ? "yes" : "no", s_s(e, "ended_how", "no"));
        fprintf(out, "  waiting for: %s\n", s_s(e, "waiting_for", "-"));
        json_object_object_get_ex(e, "drain_detail", &detail);
        if (json_object_object_get_ex(e, "drains", &d) && d) {
            json_object_object_foreach(d, vm, state)
            {
                json_object *per = NULL, *p = NULL, *r = NULL;
                char a[16], b[16], c[16], x[16];
                if (detail)
                    json_object_object_get_ex(detail, vm, &per);
                if (per) {
                    json_object_object_get_ex(per, "prepare", &p);
                    json_object_object_get_ex(per, "recover", &r);
                }
                s_fmt_wall(p ? json_object_get_int64(json_object_object_get(p, "started_ms")) : 0,
                           a, sizeof(a));
                s_fmt_wall(p ? json_object_get_int64(json_object_object_get(p, "finished_ms")) : 0,
                           b, sizeof(b));
                s_fmt_wall(r ? json_object_get_int64(json_object_object_get(r, "started_ms")) : 0,
                           c, sizeof(c));
                s_fmt_wall(r ? json_object_get_int64(json_object_object_get(r, "finished_ms")) : 0,
                           x, sizeof(x));
                fprintf(out, "    %-16s %-15s prepare %s..%s  recover %s..%s\n", vm,
                        json_object_get_string(state), a, b, c, x);
            }
        }
    }
}

void sc_ctl_print_history(json_object *h, FILE *out)
{
    fprintf(out, "%6s %4s %-12s %-16s %s\n", "INDEX", "TERM", "TIME(UTC)", "KIND", "REASON / DATA");
    for (size_t i = 0; h && i < json_object_array_length(h); i++) {
        json_object *e = json_object_array_get_idx(h, i);
        char t[16];
        s_fmt_wall(json_object_get_int64(json_object_object_get(e, "wall_ms")), t, sizeof(t));
        json_object *d = json_object_object_get(e, "data");
        fprintf(out, "%6s %4s %-12s %-16s %s  %s\n", s_s(e, "index", "?"), s_s(e, "term", "?"), t,
                s_s(e, "kind", "?"), s_s(e, "reason", ""),
                d ? json_object_to_json_string_ext(d, JSON_C_TO_STRING_PLAIN |
                                                          JSON_C_TO_STRING_NOSLASHESCAPE)
                  : "{}");
    }
}

/* ---- schedcoordctl ------------------------------------------------------------------- */

/* The usage lines (after a usage error), and --help: every command and option, one entry each
 * (the man page is made from --help: deploy/man/). */
static const char s_usage[] =
    "usage: schedcoordctl --state-dir DIR status|events|history|pause|resume|plan [--json]\n"
    "       schedcoordctl --state-dir DIR rehearse [--event-type Reboot|Redeploy|Freeze|Preempt|"
    "Terminate] [--fault-domain N | --vms a,b] [--recover-after S] [--json]\n"
    "       schedcoordctl --state-dir DIR watch [--interval S] [--once] [--plain] "
    "[--until-idle[=S]]\n"
    "       schedcoordctl --state-dir DIR metrics [--http]\n"
    "       schedcoordctl keygen [--name NAME] [--out DIR] [--force]\n";
static const char s_help[] =
    "\n"
    "Asks the coordinator whose state directory is DIR, through DIR/" SC_CTL_SOCKET_NAME
    " (history reads\n"
    "DIR/" SC_CTL_DB_NAME " itself, so it works while the coordinator is down).\n"
    "\n"
    "Commands:\n"
    "  status\n"
    "      the coordinator's role, term and leader, its members (alive, state, domains) and "
    "events\n"
    "  events\n"
    "      the events not over: each VM's drain, the approval, what the plan waits for\n"
    "  history\n"
    "      the decision log, oldest first: what the coordinator decided, when and why\n"
    "  pause\n"
    "      approve nothing and start no new drain until resume; kept across restarts (leader "
    "only)\n"
    "  resume\n"
    "      undo pause (leader only)\n"
    "  plan\n"
    "      what the coordinator would do now and why: each event not over, its class, queue "
    "position, what it waits for, its forecast\n"
    "  rehearse\n"
    "      rehearse a maintenance on the live set: the real hooks run, nothing is POSTed; waits, "
    "then prints the report (exit 1 if a VM failed)\n"
    "  watch\n"
    "      the set live: one column per fault domain, each VM's state, the events and their "
    "NotBefore; redrawn in place on a terminal, otherwise one line per change; Ctrl-C stops it\n"
    "  metrics\n"
    "      the status as Prometheus text (README, Metrics)\n"
    "  keygen\n"
    "      make a CURVE key pair: DIR/NAME.key (mode 0600); prints the keyring line \"NAME "
    "PUBLIC\"\n"
    "\n"
    "Options:\n"
    "  --state-dir DIR\n"
    "      the coordinator's state directory (the units': /var/lib/schedcoord/coord) [required, "
    "except by keygen]\n"
    "  --json\n"
    "      status, events, history, pause, resume, plan, rehearse: print the answer as JSON "
    "[default: text]\n"
    "  --http\n"
    "      metrics: answer one HTTP request read from stdin on stdout, as "
    "schedcoord-metrics@.service does for each scrape [default: print the text]\n"
    "  --help\n"
    "      print this help and exit\n"
    "\n"
    "Options of watch:\n"
    "  --interval S\n"
    "      redraw every S seconds, 0.1 to 3600 [default: 1]\n"
    "  --once\n"
    "      one frame, then exit (1 when the coordinator does not answer)\n"
    "  --plain\n"
    "      one plain line per change, even on a terminal [default: on a terminal, redraw in "
    "place]\n"
    "  --until-idle[=S]\n"
    "      exit once nothing is in flight for S seconds [default: run until Ctrl-C; S: 3]\n"
    "\n"
    "Options of rehearse:\n"
    "  --event-type TYPE\n"
    "      Reboot, Redeploy, Freeze, Preempt or Terminate [default: Reboot]\n"
    "  --fault-domain N\n"
    "      rehearse fault domain N only [default: the whole set, domain by domain]\n"
    "  --vms a,b\n"
    "      rehearse these VMs only [default: the whole set]\n"
    "  --recover-after S\n"
    "      seconds each rehearsed event stays impacted before it ends, 0 to 86400 [default: 0]\n"
    "\n"
    "Options of keygen:\n"
    "  --name NAME\n"
    "      the member name [default: the host name]\n"
    "  --out DIR\n"
    "      the directory of the key file [default: .]\n"
    "  --force\n"
    "      replace an existing key file [default: refuse]\n"
    "\n"
    "Exit status: 0 done; 1 the coordinator could not be asked, refused or failed; 2 bad usage.\n";

static int s_history(const char *dir, bool as_json, FILE *out, FILE *errf)
{
    char path[4096], err[512] = "";
    sc_store_t *store = NULL;
    json_object *h = NULL;
    int rc;

    snprintf(path, sizeof(path), "%s/%s", dir, SC_CTL_DB_NAME);
    if (sc_store_open_readonly(path, &store, err, sizeof(err)) < 0) {
        fprintf(errf, "schedcoordctl: cannot open %s/%s read-only: %s\n", dir, SC_CTL_DB_NAME, err);
        return 1;
    }
    rc = sc_store_history_json(store, SC_DLOG_READ_MAX, &h, err, sizeof(err));
    sc_store_close(&store);
    if (rc < 0) {
        fprintf(errf, "schedcoordctl: cannot read the decision log in %s/%s: %s\n", dir,
                SC_CTL_DB_NAME, err);
        return 1;
    }
    if (as_json)
        fprintf(out, "%s\n", json_object_to_json_string_ext(h, JSON_C_TO_STRING_PRETTY));
    else
        sc_ctl_print_history(h, out);
    json_object_put(h);
    return 0;
}

json_object *sc_ctl_ask(const char *dir, const char *cmd, char *err, size_t errlen)
{
    char path[4096], req[64];
    json_object *ans = NULL, *e;

    snprintf(path, sizeof(path), "%s/%s", dir, SC_CTL_SOCKET_NAME);
    snprintf(req, sizeof(req), "{\"cmd\":\"%s\"}", cmd);
    if (sc_ctl_request(path, req, 5000, &ans, err, errlen) < 0)
        return NULL;
    if (json_object_object_get_ex(ans, "error", &e)) {
        snprintf(err, errlen, "coordinator says: %s", json_object_get_string(e));
        json_object_put(ans);
        return NULL;
    }
    return ans;
}

static int s_metrics_text(const void *dir, char **ret_text, char *err, size_t errlen)
{
    json_object *st = sc_ctl_ask(dir, "status", err, errlen);
    int rc;

    if (!st)
        return -1;
    rc = sc_metrics_render(st, ret_text);
    json_object_put(st);
    if (rc < 0)
        snprintf(err, errlen, "cannot render the metrics: %s", sc_errname(rc));
    return rc;
}

static int s_metrics(const char *dir, bool http, FILE *out, FILE *errf)
{
    char err[600] = "", *text = NULL;

    if (http) {
        fflush(out);
        /* 10 s for the client's request; the answer itself is bounded by the 5 s status read */
        int status = sc_metrics_serve_one(0, fileno(out), 10000, s_metrics_text, dir);
        if (status < 0) {
            fprintf(errf, "schedcoordctl: metrics --http: %s\n", sc_errname(status));
            return 1;
        }
        return 0; /* answered (or nothing asked): a failed unit per bad scrape helps nobody */
    }
    if (s_metrics_text(dir, &text, err, sizeof(err)) < 0) {
        fprintf(errf, "schedcoordctl: %s\n", err);
        return 1;
    }
    fputs(text, out);
    free(text);
    return 0;
}

/* A rehearse option at argv[*i] ("--vms a,b" or "--vms=a,b") into *req: 1 (and *i moved past
 * its value), 0 when it is none, -EINVAL (err). */
static int s_rehearse_opt(json_object **req, int argc, char **argv, int *i, char *err,
                          size_t errlen)
{
    const char *a = argv[*i], *eq = strchr(a, '=');
    char opt[32];
    int rc;

    if (eq) {
        snprintf(opt, sizeof(opt), "%.*s", (int)(eq - a), a);
        return sc_ctl_rehearse_arg(req, opt, eq + 1, err, errlen);
    }
    rc = sc_ctl_rehearse_arg(req, a, *i + 1 < argc ? argv[*i + 1] : NULL, err, errlen);
    if (rc > 0)
        (*i)++;
    return rc;
}

int sc_ctl_main(int argc, char **argv, FILE *out, FILE *errf)
{
    const char *dir = NULL, *cmd = NULL, *ropt = NULL;
    bool as_json = false, http = false;
    char err[512] = "";
    sc_ctl_watch_opts_t watch;
    json_object *ans, *rreq = NULL;
    int n, r;

    if (argc >= 2 && strcmp(argv[1], "keygen") == 0)
        return sc_keygen_main(argc - 1, argv + 1);
    sc_ctl_watch_opts_init(&watch);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0)
            as_json = true;
        else if (strcmp(a, "--http") == 0)
            http = true;
        else if (strcmp(a, "--state-dir") == 0) {
            if (i + 1 >= argc || argv[i + 1][0] == '\0') {
                fprintf(errf,
                        "schedcoordctl: --state-dir: missing value (expected a directory)\n%s",
                        s_usage);
                return 2;
            }
            dir = argv[++i];
        } else if (strncmp(a, "--state-dir=", 12) == 0) {
            dir = a + 12;
        } else if (a[0] == '-' && (r = s_rehearse_opt(&rreq, argc, argv, &i, err, sizeof(err)))) {
            if (r < 0) {
                json_object_put(rreq);
                fprintf(errf, "schedcoordctl: %s\n%s", err, s_usage);
                return 2;
            }
            ropt = a;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(s_usage, out);
            fputs(s_help, out);
            return 0;
        } else if ((n = sc_ctl_watch_arg(&watch, argc - i, argv + i, err, sizeof(err))) != 0) {
            if (n < 0) {
                fprintf(errf, "schedcoordctl: %s\n%s", err, s_usage);
                return 2;
            }
            i += n - 1;
        } else if (a[0] == '-') {
            json_object_put(rreq);
            fprintf(errf, "schedcoordctl: unknown option %s\n%s", a, s_usage);
            return 2;
        } else if (!cmd)
            cmd = a;
        else {
            json_object_put(rreq);
            fprintf(errf, "schedcoordctl: unexpected argument %s\n%s", a, s_usage);
            return 2;
        }
    }
    if (ropt && (!cmd || strcmp(cmd, "rehearse") != 0)) {
        json_object_put(rreq);
        fprintf(errf, "schedcoordctl: %.*s is an option of rehearse\n%s", (int)strcspn(ropt, "="),
                ropt, s_usage);
        return 2;
    }
    if (!cmd) {
        fprintf(errf, "schedcoordctl: no command given\n%s", s_usage);
        return 2;
    }
    if (strcmp(cmd, "status") && strcmp(cmd, "events") && strcmp(cmd, "history") &&
        strcmp(cmd, "pause") && strcmp(cmd, "resume") && strcmp(cmd, "metrics") &&
        strcmp(cmd, "watch") && strcmp(cmd, "rehearse") && strcmp(cmd, "plan")) {
        json_object_put(rreq);
        fprintf(errf, "schedcoordctl: unknown command \"%s\"\n%s", cmd, s_usage);
        return 2;
    }
    if (strcmp(cmd, "rehearse") == 0 && dir && strlen(dir) <= 3000 && !http)
        return sc_ctl_rehearse(dir, rreq, as_json, out, errf);
    json_object_put(rreq);
    if (!dir) {
        fprintf(errf, "schedcoordctl: --state-dir DIR is required\n%s", s_usage);
        return 2;
    }
    if (strlen(dir) > 3000) {
        fprintf(errf, "schedcoordctl: --state-dir: path too long\n");
        return 2;
    }
    if (http && strcmp(cmd, "metrics") != 0) {
        fprintf(errf, "schedcoordctl: --http is an option of metrics only\n%s", s_usage);
        return 2;
    }
    if (as_json && strcmp(cmd, "metrics") == 0) {
        fprintf(errf, "schedcoordctl: metrics has no --json (status --json has the same)\n%s",
                s_usage);
        return 2;
    }
    if (watch.given && strcmp(cmd, "watch") != 0) {
        fprintf(errf,
                "schedcoordctl: --interval, --once, --plain and --until-idle are options of "
                "watch only\n%s",
                s_usage);
        return 2;
    }
    if (strcmp(cmd, "watch") == 0) {
        if (as_json) {
            fprintf(errf, "schedcoordctl: watch has no --json (status --json has it all)\n%s",
                    s_usage);
            return 2;
        }
        if (sc_ctl_watch_opts_check(&watch, err, sizeof(err)) < 0) {
            fprintf(errf, "schedcoordctl: %s\n%s", err, s_usage);
            return 2;
        }
        return sc_ctl_watch(dir, &watch, out, errf);
    }
    if (strcmp(cmd, "history") == 0)
        return s_history(dir, as_json, out, errf);
    if (strcmp(cmd, "plan") == 0)
        return sc_ctl_plan(dir, as_json, out, errf);
    if (strcmp(cmd, "metrics") == 0)
        return s_metrics(dir, http, out, errf);

    if (!(ans = sc_ctl_ask(dir, cmd, err, sizeof(err)))) {
        fprintf(errf, "schedcoordctl: %s\n", err);
        return 1;
    }
    if (as_json)
        fprintf(out, "%s\n", json_object_to_json_string_ext(ans, JSON_C_TO_STRING_PRETTY));
    else if (strcmp(cmd, "status") == 0)
        sc_ctl_print_status(ans, out);
    else if (strcmp(cmd, "events") == 0)
        sc_ctl_print_events(ans, out);
    else
        fprintf(out, "approvals %s\n", strcmp(cmd, "pause") == 0 ? "paused" : "resumed");
    json_object_put(ans);
    return 0;
}
