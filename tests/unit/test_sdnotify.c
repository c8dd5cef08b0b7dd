/* sc_sdnotify: the datagrams systemd would receive, read from a test socket bound where
 * NOTIFY_SOCKET points (a path, and the abstract namespace); the rate of STATUS and WATCHDOG
 * by the clock the caller passes; values systemd never sets refused with their name. */
#include "sc_sdnotify.h"
#include "sc_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static char s_dir[256];
static int s_n;

/* A datagram socket bound at name ("/path" or "@abstract"), like systemd's notify socket. */
static int s_receiver(const char *name)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t n = strlen(name);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    memcpy(a.sun_path, name, n);
    if (name[0] == '@')
        a.sun_path[0] = '\0';
    if (fd < 0 ||
        bind(fd, (struct sockaddr *)&a,
             (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (name[0] == '/'))) < 0) {
        perror("receiver");
        exit(1);
    }
    return fd;
}

/* The next datagram waiting on fd, "" when none. */
static const char *s_recv(int fd)
{
    static char buf[1024];
    ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

/* A fresh path under the test's directory. */
static const char *s_path(void)
{
    static char p[512];

    snprintf(p, sizeof(p), "%s/notify.%d", s_dir, ++s_n);
    return p;
}

SC_TEST(path_socket_ready_status_stopping)
{
    const char *path = s_path();
    int fd = s_receiver(path);
    sc_sdnotify_t *sd = NULL;
    char err[256] = "";

    SC_CHECK_INT(sc_sdnotify_new(path, NULL, NULL, &sd, err, sizeof(err)), 0);
    SC_REQUIRE(sd != NULL);
    SC_CHECK_STR(sc_sdnotify_socket(sd), path);
    SC_CHECK_INT(sc_sdnotify_watchdog_ms(sd), 0);
    SC_CHECK_INT(sc_sdnotify_ready(sd, "leader, term 3", 0), 0);
    SC_CHECK_STR(s_recv(fd), "READY=1\nSTATUS=leader, term 3\n");
    SC_CHECK_INT(sc_sdnotify_stopping(sd, "stopping"), 0);
    SC_CHECK_STR(s_recv(fd), "STOPPING=1\nSTATUS=stopping\n");
    SC_CHECK_INT(sc_sdnotify_send(sd, "RELOADING=1"), 0);
    SC_CHECK_STR(s_recv(fd), "RELOADING=1");
    SC_CHECK_STR(s_recv(fd), "");
    SC_CHECK_INT(sc_sdnotify_new_error(sd), 0);
    sc_sdnotify_destroy(&sd);
    SC_CHECK(sd == NULL);
    sc_sdnotify_destroy(&sd); /* takes NULL */
    close(fd);
}

SC_TEST(abstract_socket)
{
    char name[64];
    sc_sdnotify_t *sd = NULL;
    int fd;

    snprintf(name, sizeof(name), "@schedcoord-test-sdnotify-%ld", (long)getpid());
    fd = s_receiver(name);
    SC_CHECK_INT(sc_sdnotify_new(name, NULL, NULL, &sd, NULL, 0), 0);
    SC_CHECK_INT(sc_sdnotify_ready(sd, NULL, 0), 0);
    SC_CHECK_STR(s_recv(fd), "READY=1\n");
    sc_sdnotify_destroy(&sd);
    close(fd);
}

SC_TEST(status_on_change_at_most_once_a_second)
{
    const char *path = s_path();
    int fd = s_receiver(path);
    sc_sdnotify_t *sd = NULL;
    char long_line[400];

    SC_REQUIRE(sc_sdnotify_new(path, NULL, NULL, &sd, NULL, 0) == 0);
    SC_CHECK_INT(sc_sdnotify_status(sd, "a", 10000), 0);
    SC_CHECK_STR(s_recv(fd), "STATUS=a\n");
    SC_CHECK_INT(sc_sdnotify_status(sd, "a", 12000), 0); /* unchanged: nothing */
    SC_CHECK_STR(s_recv(fd), "");
    SC_CHECK_INT(sc_sdnotify_status(sd, "b", 12000), 0); /* changed, a second after: at once */
    SC_CHECK_STR(s_recv(fd), "STATUS=b\n");
    SC_CHECK_INT(sc_sdnotify_status(sd, "c", 12500), 0); /* too soon: kept */
    SC_CHECK_INT(sc_sdnotify_status(sd, "d", 12600), 0); /* replaced, still kept */
    SC_CHECK_STR(s_recv(fd), "");
    SC_CHECK_INT(sc_sdnotify_tick(sd, 12999), 0);
    SC_CHECK_STR(s_recv(fd), "");
    SC_CHECK_INT(sc_sdnotify_tick(sd, 13000), 0); /* its time came: the last one only */
    SC_CHECK_STR(s_recv(fd), "STATUS=d\n");
    SC_CHECK_INT(sc_sdnotify_tick(sd, 20000), 0);
    SC_CHECK_STR(s_recv(fd), "");
    /* a change and back before its time: systemd already has it, nothing goes */
    SC_CHECK_INT(sc_sdnotify_status(sd, "e", 20000), 0);
    SC_CHECK_STR(s_recv(fd), "STATUS=e\n");
    SC_CHECK_INT(sc_sdnotify_status(sd, "f", 20100), 0);
    SC_CHECK_INT(sc_sdnotify_status(sd, "e", 20200), 0);
    SC_CHECK_INT(sc_sdnotify_tick(sd, 25000), 0);
    SC_CHECK_STR(s_recv(fd), "");
    /* one line, cut at SC_SDNOTIFY_STATUS_MAX */
    SC_CHECK_INT(sc_sdnotify_status(sd, "two\nlines\r", 30000), 0);
    SC_CHECK_STR(s_recv(fd), "STATUS=two lines \n");
    memset(long_line, 'x', sizeof(long_line) - 1);
    long_line[sizeof(long_line) - 1] = '\0';
    SC_CHECK_INT(sc_sdnotify_status(sd, long_line, 40000), 0);
    SC_CHECK_INT((long)strlen(s_recv(fd)), (long)strlen("STATUS=\n") + SC_SDNOTIFY_STATUS_MAX);
    sc_sdnotify_destroy(&sd);
    close(fd);
}

SC_TEST(watchdog_at_half_its_usec_after_ready)
{
    const char *path = s_path();
    int fd = s_receiver(path);
    sc_sdnotify_t *sd = NULL;

    SC_REQUIRE(sc_sdnotify_new(path, "3000000", NULL, &sd, NULL, 0) == 0);
    SC_CHECK_INT(sc_sdnotify_watchdog_ms(sd), 1500);
    SC_CHECK_INT(sc_sdnotify_tick(sd, 5000), 0); /* not ready yet: systemd has no watchdog */
    SC_CHECK_STR(s_recv(fd), "");
    SC_CHECK_INT(sc_sdnotify_ready(sd, NULL, 10000), 0);
    SC_CHECK_STR(s_recv(fd), "READY=1\n");
    SC_CHECK_INT(sc_sdnotify_tick(sd, 11499), 0);
    SC_CHECK_STR(s_recv(fd), "");
    SC_CHECK_INT(sc_sdnotify_tick(sd, 11500), 0);
    SC_CHECK_STR(s_recv(fd), "WATCHDOG=1\n");
    SC_CHECK_INT(sc_sdnotify_tick(sd, 12000), 0);
    SC_CHECK_STR(s_recv(fd), "");
    /* a status waiting for its second rides along with the watchdog */
    SC_CHECK_INT(sc_sdnotify_status(sd, "x", 12000), 0);
    SC_CHECK_STR(s_recv(fd), "STATUS=x\n");
    SC_CHECK_INT(sc_sdnotify_status(sd, "y", 12100), 0);
    SC_CHECK_INT(sc_sdnotify_tick(sd, 13100), 0);
    SC_CHECK_STR(s_recv(fd), "WATCHDOG=1\nSTATUS=y\n");
    /* a loop that stalled sends one, not the ones it missed */
    SC_CHECK_INT(sc_sdnotify_tick(sd, 30000), 0);
    SC_CHECK_STR(s_recv(fd), "WATCHDOG=1\n");
    SC_CHECK_INT(sc_sdnotify_tick(sd, 31499), 0);
    SC_CHECK_STR(s_recv(fd), "");
    sc_sdnotify_destroy(&sd);
    close(fd);
}

SC_TEST(watchdog_of_another_pid_is_not_ours)
{
    const char *path = s_path();
    sc_sdnotify_t *sd = NULL;
    char mine[32], other[32];

    snprintf(mine, sizeof(mine), "%ld", (long)getpid());
    snprintf(other, sizeof(other), "%ld", (long)getpid() + 1);
    SC_REQUIRE(sc_sdnotify_new(path, "60000000", other, &sd, NULL, 0) == 0);
    SC_CHECK_INT(sc_sdnotify_watchdog_ms(sd), 0);
    sc_sdnotify_destroy(&sd);
    SC_REQUIRE(sc_sdnotify_new(path, "60000000", mine, &sd, NULL, 0) == 0);
    SC_CHECK_INT(sc_sdnotify_watchdog_ms(sd), 30000);
    sc_sdnotify_destroy(&sd);
}

SC_TEST(bad_values_refused_by_name)
{
    sc_sdnotify_t *sd = NULL;
    char err[256] = "", longp[200];

    SC_CHECK_INT(sc_sdnotify_new("run/notify", NULL, NULL, &sd, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "NOTIFY_SOCKET=\"run/notify\"") != NULL);
    SC_CHECK_INT(sc_sdnotify_new("vsock:2:1234", NULL, NULL, &sd, err, sizeof(err)), -EAFNOSUPPORT);
    SC_CHECK(strstr(err, "only AF_UNIX") != NULL);
    SC_CHECK_INT(sc_sdnotify_new("@", NULL, NULL, &sd, err, sizeof(err)), -EINVAL);
    memset(longp, 'a', sizeof(longp) - 1);
    longp[0] = '/';
    longp[sizeof(longp) - 1] = '\0';
    SC_CHECK_INT(sc_sdnotify_new(longp, NULL, NULL, &sd, err, sizeof(err)), -ENAMETOOLONG);
    SC_CHECK_INT(sc_sdnotify_new("/x", "soon", NULL, &sd, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "WATCHDOG_USEC=\"soon\"") != NULL);
    SC_CHECK_INT(sc_sdnotify_new("/x", "-5", NULL, &sd, err, sizeof(err)), -EINVAL);
    SC_CHECK_INT(sc_sdnotify_new("/x", "100", NULL, &sd, err, sizeof(err)), -EINVAL);
    SC_CHECK_INT(sc_sdnotify_new("/x", "99999999999999999999999", NULL, &sd, err, sizeof(err)),
                 -EINVAL);
    SC_CHECK_INT(sc_sdnotify_new("/x", "1000000", "me", &sd, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "WATCHDOG_PID=\"me\"") != NULL);
    SC_CHECK(sd == NULL);
    SC_CHECK_INT(sc_sdnotify_new("/x", "", "", &sd, err, sizeof(err)), 0); /* empty: none */
    SC_CHECK_INT(sc_sdnotify_watchdog_ms(sd), 0);
    sc_sdnotify_destroy(&sd);
}

SC_TEST(from_env_and_children_do_not_inherit)
{
    const char *path = s_path();
    int fd = s_receiver(path);
    sc_sdnotify_t *sd = NULL;
    char err[256] = "";

    unsetenv("NOTIFY_SOCKET");
    SC_CHECK_INT(sc_sdnotify_new_from_env(true, &sd, err, sizeof(err)), 0);
    SC_CHECK(sd == NULL); /* not run by systemd: nothing at all */
    setenv("NOTIFY_SOCKET", path, 1);
    setenv("WATCHDOG_USEC", "20000000", 1);
    SC_CHECK_INT(sc_sdnotify_new_from_env(false, &sd, err, sizeof(err)), 0);
    SC_CHECK(getenv("NOTIFY_SOCKET") != NULL);
    sc_sdnotify_destroy(&sd);
    SC_CHECK_INT(sc_sdnotify_new_from_env(true, &sd, err, sizeof(err)), 0);
    SC_REQUIRE(sd != NULL);
    SC_CHECK(!getenv("NOTIFY_SOCKET") && !getenv("WATCHDOG_USEC") && !getenv("WATCHDOG_PID"));
    SC_CHECK_INT(sc_sdnotify_watchdog_ms(sd), 10000);
    SC_CHECK_INT(sc_sdnotify_ready(sd, NULL, 0), 0);
    SC_CHECK_STR(s_recv(fd), "READY=1\n");
    sc_sdnotify_destroy(&sd);
    /* a bad value: an error, and the variables are gone all the same */
    setenv("NOTIFY_SOCKET", "relative", 1);
    SC_CHECK_INT(sc_sdnotify_new_from_env(true, &sd, err, sizeof(err)), -EINVAL);
    SC_CHECK(sd == NULL && !getenv("NOTIFY_SOCKET"));
    close(fd);
}

SC_TEST(null_does_nothing)
{
    SC_CHECK_INT(sc_sdnotify_ready(NULL, "x", 0), 0);
    SC_CHECK_INT(sc_sdnotify_status(NULL, "x", 0), 0);
    SC_CHECK_INT(sc_sdnotify_tick(NULL, 0), 0);
    SC_CHECK_INT(sc_sdnotify_stopping(NULL, "x"), 0);
    SC_CHECK_INT(sc_sdnotify_send(NULL, "READY=1"), 0);
    SC_CHECK_INT(sc_sdnotify_new_error(NULL), 0);
    SC_CHECK_INT(sc_sdnotify_watchdog_ms(NULL), 0);
    SC_CHECK_STR(sc_sdnotify_socket(NULL), "");
}

SC_TEST(failures_handed_out_once_per_kind)
{
    const char *path = s_path();
    sc_sdnotify_t *sd = NULL;
    int fd;

    SC_REQUIRE(sc_sdnotify_new(path, NULL, NULL, &sd, NULL, 0) == 0);
    /* nobody listens there yet: the send fails, without blocking */
    SC_CHECK_INT(sc_sdnotify_ready(sd, NULL, 0), -ENOENT);
    SC_CHECK_INT(sc_sdnotify_new_error(sd), -ENOENT);
    SC_CHECK_INT(sc_sdnotify_new_error(sd), 0);
    SC_CHECK_INT(sc_sdnotify_send(sd, "X=1"), -ENOENT);
    SC_CHECK_INT(sc_sdnotify_new_error(sd), 0); /* the same failure: said already */
    fd = s_receiver(path);
    SC_CHECK_INT(sc_sdnotify_send(sd, "X=2"), 0);
    SC_CHECK_STR(s_recv(fd), "X=2");
    close(fd); /* bound, then closed: refused */
    SC_CHECK(sc_sdnotify_send(sd, "X=3") < 0);
    SC_CHECK(sc_sdnotify_new_error(sd) < 0); /* new again after a success */
    sc_sdnotify_destroy(&sd);
}

int main(void)
{
    int rc;

    if (!mkdtemp(strcpy(s_dir, "/tmp/sc_sdnotify_XXXXXX"))) {
        perror("mkdtemp");
        return 1;
    }
    SC_RUN(path_socket_ready_status_stopping);
    SC_RUN(abstract_socket);
    SC_RUN(status_on_change_at_most_once_a_second);
    SC_RUN(watchdog_at_half_its_usec_after_ready);
    SC_RUN(watchdog_of_another_pid_is_not_ours);
    SC_RUN(bad_values_refused_by_name);
    SC_RUN(from_env_and_children_do_not_inherit);
    SC_RUN(null_does_nothing);
    SC_RUN(failures_handed_out_once_per_kind);
    rc = sc_test_done();
    for (int i = 1; i <= s_n; i++) {
        char p[512];
        snprintf(p, sizeof(p), "%s/notify.%d", s_dir, i);
        unlink(p);
    }
    rmdir(s_dir);
    return rc;
}
