/* sc_sdnotify: systemd's notification protocol (see sc_sdnotify.h). */
#include "sc_sdnotify.h"

#include "sc_error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* a datagram: WATCHDOG=1, STATUS=line, READY=1 or STOPPING=1, newlines */
#define S_MSG_MAX (SC_SDNOTIFY_STATUS_MAX + 64)

struct sc_sdnotify {
    int fd;                  /* AF_UNIX SOCK_DGRAM, close-on-exec */
    struct sockaddr_un addr; /* where the notifications go */
    socklen_t addrlen;       /* its length (abstract: no trailing NUL counted) */
    char *socket;            /* NOTIFY_SOCKET as given (logs) */
    int64_t wd_ms;           /* WATCHDOG=1 every this long (half of WATCHDOG_USEC), 0 */
    int64_t wd_next;         /* monotonic ms the next WATCHDOG=1 is due */
    bool ready;              /* READY=1 was sent: the watchdog runs */
    char status[SC_SDNOTIFY_STATUS_MAX + 1]; /* the status line wanted */
    char sent[SC_SDNOTIFY_STATUS_MAX + 1];   /* the status line systemd has */
    bool pending;      /* status differs from sent: to send when its time comes */
    bool status_once;  /* a STATUS was sent (or tried) */
    int64_t status_at; /* monotonic ms of the last STATUS sent (or tried) */
    int err;           /* -errno of the last send, 0 when it succeeded */
    bool err_new;      /* err not handed out by sc_sdnotify_new_error yet */
};

/* "1234" -> 1234: decimal digits only, no sign, no space, no overflow. */
static bool s_parse_u64(const char *s, uint64_t *ret)
{
    uint64_t v = 0;

    if (!s || !*s)
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *ret = v;
    return true;
}

/* The address of NOTIFY_SOCKET's value into sd. */
static int s_address(sc_sdnotify_t *sd, const char *path, char *err, size_t errlen)
{
    size_t n = strlen(path);

    if (path[0] != '/' && path[0] != '@')
        return sc_errf(err, errlen, path[0] && strchr(path, ':') ? -EAFNOSUPPORT : -EINVAL,
                       "NOTIFY_SOCKET=\"%s\": not an absolute path nor @abstract-name (only "
                       "AF_UNIX sockets are supported)",
                       path);
    if (n < 2 || n > sizeof(sd->addr.sun_path) - (path[0] == '/'))
        return sc_errf(err, errlen, n < 2 ? -EINVAL : -ENAMETOOLONG, "NOTIFY_SOCKET=\"%s\": %s",
                       path, n < 2 ? "no name" : "longer than an AF_UNIX address");
    memset(&sd->addr, 0, sizeof(sd->addr));
    sd->addr.sun_family = AF_UNIX;
    memcpy(sd->addr.sun_path, path, n);
    if (path[0] == '@')
        sd->addr.sun_path[0] = '\0'; /* abstract namespace: the name is the n bytes */
    sd->addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (path[0] == '/'));
    return 0;
}

/* The watchdog of WATCHDOG_USEC / WATCHDOG_PID into sd. */
static int s_watchdog(sc_sdnotify_t *sd, const char *usec, const char *pid, char *err,
                      size_t errlen)
{
    uint64_t us, p;

    if (!usec || !*usec)
        return 0;
    if (!s_parse_u64(usec, &us) || us < SC_SDNOTIFY_WATCHDOG_MIN_USEC ||
        us > (uint64_t)INT64_MAX / 2)
        return sc_errf(err, errlen, -EINVAL,
                       "WATCHDOG_USEC=\"%s\": not a number of microseconds from %d on (set by "
                       "WatchdogSec=)",
                       usec, SC_SDNOTIFY_WATCHDOG_MIN_USEC);
    if (pid && *pid) {
        if (!s_parse_u64(pid, &p) || p == 0)
            return sc_errf(err, errlen, -EINVAL, "WATCHDOG_PID=\"%s\": not a process id", pid);
        if (p != (uint64_t)getpid())
            return 0; /* the watchdog is another process's (we were forked by it) */
    }
    sd->wd_ms = (int64_t)(us / 2000); /* half of it, in ms: systemd's own advice */
    return 0;
}

int sc_sdnotify_new(const char *notify_socket, const char *watchdog_usec, const char *watchdog_pid,
                    sc_sdnotify_t **ret_sd, char *err, size_t errlen)
{
    sc_sdnotify_t *sd;
    int rc;

    if (!notify_socket || !ret_sd)
        return sc_errf(err, errlen, -EINVAL, "NOTIFY_SOCKET: none given");
    if (!(sd = calloc(1, sizeof(*sd))))
        return -ENOMEM;
    sd->fd = -1;
    if ((rc = s_address(sd, notify_socket, err, errlen)) < 0 ||
        (rc = s_watchdog(sd, watchdog_usec, watchdog_pid, err, errlen)) < 0)
        goto fail;
    if (!(sd->socket = strdup(notify_socket))) {
        rc = -ENOMEM;
        goto fail;
    }
    if ((sd->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0) {
        rc = sc_errf(err, errlen, -errno, "NOTIFY_SOCKET: cannot make a datagram socket: %s",
                     strerror(errno));
        goto fail;
    }
    *ret_sd = sd;
    return 0;
fail:
    sc_sdnotify_destroy(&sd);
    return rc;
}

int sc_sdnotify_new_from_env(bool unset_env, sc_sdnotify_t **ret_sd, char *err, size_t errlen)
{
    const char *path = getenv("NOTIFY_SOCKET");
    int rc = 0;

    if (!ret_sd)
        return -EINVAL;
    if (!path || !*path)
        *ret_sd = NULL;
    else
        rc = sc_sdnotify_new(path, getenv("WATCHDOG_USEC"), getenv("WATCHDOG_PID"), ret_sd, err,
                             errlen);
    if (unset_env) {
        unsetenv("NOTIFY_SOCKET");
        unsetenv("WATCHDOG_USEC");
        unsetenv("WATCHDOG_PID");
    }
    return rc;
}

void sc_sdnotify_destroy(sc_sdnotify_t **sdp)
{
    sc_sdnotify_t *sd;

    if (!sdp || !*sdp)
        return;
    sd = *sdp;
    if (sd->fd >= 0)
        close(sd->fd);
    free(sd->socket);
    free(sd);
    *sdp = NULL;
}

int64_t sc_sdnotify_watchdog_ms(const sc_sdnotify_t *sd)
{
    return sd ? sd->wd_ms : 0;
}

const char *sc_sdnotify_socket(const sc_sdnotify_t *sd)
{
    return sd ? sd->socket : "";
}

/* One datagram of text. 0 or -errno (kept for sc_sdnotify_new_error). */
static int s_send(sc_sdnotify_t *sd, const char *text)
{
    ssize_t n;
    int rc = 0;

    do
        n = sendto(sd->fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL,
                   (const struct sockaddr *)&sd->addr, sd->addrlen);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        rc = -errno;
    if (rc < 0 && rc != sd->err)
        sd->err_new = true;
    sd->err = rc;
    return rc;
}

/* status, one line (newlines and other control bytes as spaces), cut, into sd->status. */
static void s_set_status(sc_sdnotify_t *sd, const char *status)
{
    size_t i;

    for (i = 0; status[i] && i < SC_SDNOTIFY_STATUS_MAX; i++)
        sd->status[i] = (unsigned char)status[i] < 0x20 ? ' ' : status[i];
    sd->status[i] = '\0';
    sd->pending = strcmp(sd->status, sd->sent) != 0 || !sd->status_once;
}

/* Appends "STATUS=line\n" to buf when the line is to go, and marks it as gone (tried). */
static void s_take_status(sc_sdnotify_t *sd, char *buf, size_t len, int64_t now_ms)
{
    size_t used = strlen(buf);

    snprintf(buf + used, len - used, "STATUS=%s\n", sd->status);
    memcpy(sd->sent, sd->status, sizeof(sd->sent));
    sd->pending = false;
    sd->status_once = true;
    sd->status_at = now_ms;
}

int sc_sdnotify_ready(sc_sdnotify_t *sd, const char *status, int64_t now_ms)
{
    char msg[S_MSG_MAX] = "READY=1\n";

    if (!sd)
        return 0;
    if (status) {
        s_set_status(sd, status);
        s_take_status(sd, msg, sizeof(msg), now_ms);
    }
    sd->ready = true;
    sd->wd_next = now_ms + sd->wd_ms;
    return s_send(sd, msg);
}

int sc_sdnotify_status(sc_sdnotify_t *sd, const char *status, int64_t now_ms)
{
    char msg[S_MSG_MAX] = "";

    if (!sd || !status)
        return 0;
    s_set_status(sd, status);
    if (!sd->pending || (sd->status_once && now_ms - sd->status_at < SC_SDNOTIFY_STATUS_EVERY_MS))
        return 0;
    s_take_status(sd, msg, sizeof(msg), now_ms);
    return s_send(sd, msg);
}

int sc_sdnotify_tick(sc_sdnotify_t *sd, int64_t now_ms)
{
    char msg[S_MSG_MAX] = "";

    if (!sd)
        return 0;
    if (sd->ready && sd->wd_ms > 0 && now_ms >= sd->wd_next) {
        strcpy(msg, "WATCHDOG=1\n");
        sd->wd_next = now_ms + sd->wd_ms;
    }
    if (sd->pending && (!sd->status_once || now_ms - sd->status_at >= SC_SDNOTIFY_STATUS_EVERY_MS))
        s_take_status(sd, msg, sizeof(msg), now_ms);
    return msg[0] ? s_send(sd, msg) : 0;
}

int sc_sdnotify_stopping(sc_sdnotify_t *sd, const char *status)
{
    char msg[S_MSG_MAX] = "STOPPING=1\n";

    if (!sd)
        return 0;
    if (status) {
        s_set_status(sd, status);
        s_take_status(sd, msg, sizeof(msg), sd->status_at);
    }
    return s_send(sd, msg);
}

int sc_sdnotify_send(sc_sdnotify_t *sd, const char *text)
{
    return sd && text ? s_send(sd, text) : 0;
}

int sc_sdnotify_new_error(sc_sdnotify_t *sd)
{
    if (!sd || !sd->err_new)
        return 0;
    sd->err_new = false;
    return sd->err;
}
