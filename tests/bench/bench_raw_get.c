/* bench_raw_get: the floor for an IMDS poll on this machine, not product code.
 *   build/bench/bench_raw_get http://127.0.0.1:PORT/PREFIX INTERVAL_S
 * Polls PREFIX/metadata/scheduledevents?api-version=2020-07-01 (the agent's request, with
 * `Metadata: true`) every INTERVAL_S seconds over one keep-alive TCP connection with nothing
 * but send, poll and recv: no HTTP library, no JSON, no heartbeat, until SIGTERM/SIGINT. The
 * benchmark scripts run it beside the agent and the Python sample and read its CPU time from
 * /proc: whatever any agent does on top of the bare syscalls and loopback wake-ups of a poll
 * costs more than this. It reads a response by its Content-Length only (imds-sim always sends
 * one) and exits non-zero on anything else, so a wrong figure cannot come from a bad read. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t s_stop;

static void s_on_signal(int sig)
{
    (void)sig;
    s_stop = 1;
}

static int s_connect(const char *host, int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int one = 1;
    int fd;

    if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
        return -1;
    if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* One GET and its whole response; 0, or -1 with a message on stderr. */
static int s_get(int fd, const char *req, size_t req_len, char *buf, size_t cap)
{
    size_t got = 0;
    long body = -1;
    char *hend = NULL;

    if (send(fd, req, req_len, MSG_NOSIGNAL) != (ssize_t)req_len) {
        fprintf(stderr, "bench_raw_get: send: %s\n", strerror(errno));
        return -1;
    }
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t r;

        if (poll(&p, 1, 5000) != 1) {
            fprintf(stderr, "bench_raw_get: no answer within 5 s\n");
            return -1;
        }
        r = recv(fd, buf + got, cap - got - 1, 0);
        if (r <= 0) {
            fprintf(stderr, "bench_raw_get: recv: %s\n", r == 0 ? "closed" : strerror(errno));
            return -1;
        }
        got += (size_t)r;
        buf[got] = '\0';
        if (!hend && (hend = strstr(buf, "\r\n\r\n")) != NULL) {
            const char *cl = strcasestr(buf, "\r\ncontent-length:");
            if (strncmp(buf, "HTTP/1.1 200 ", 13) != 0 || !cl || cl > hend) {
                fprintf(stderr, "bench_raw_get: not a 200 with a Content-Length: %.40s\n", buf);
                return -1;
            }
            body = atol(cl + 17);
        }
        if (hend && got >= (size_t)(hend + 4 - buf) + (size_t)body)
            return 0;
        if (got + 1 >= cap) {
            fprintf(stderr, "bench_raw_get: response larger than %zu bytes\n", cap);
            return -1;
        }
    }
}

int main(int argc, char **argv)
{
    static char buf[1 << 16];
    char host[64], prefix[256], req[512];
    int port = 0, fd, n;
    double ivl;
    struct sigaction sa = {.sa_handler = s_on_signal};

    if (argc != 3 || sscanf(argv[1], "http://%63[0-9.]:%d%255s", host, &port, prefix) != 3 ||
        (ivl = atof(argv[2])) <= 0) {
        fprintf(stderr, "usage: bench_raw_get http://IPV4:PORT/PREFIX INTERVAL_S\n");
        return 2;
    }
    n = snprintf(req, sizeof req,
                 "GET %s/metadata/scheduledevents?api-version=2020-07-01 HTTP/1.1\r\n"
                 "Host: %s:%d\r\nMetadata: true\r\nAccept: */*\r\n\r\n",
                 prefix, host, port);
    if (n < 0 || (size_t)n >= sizeof req)
        return 2;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    if ((fd = s_connect(host, port)) < 0) {
        fprintf(stderr, "bench_raw_get: cannot connect to %s:%d\n", host, port);
        return 1;
    }
    while (!s_stop) {
        struct timespec gap = {(time_t)ivl, (long)((ivl - (double)(time_t)ivl) * 1e9)};
        if (s_get(fd, req, (size_t)n, buf, sizeof buf) != 0)
            return 1;
        nanosleep(&gap, NULL);
    }
    close(fd);
    return 0;
}
