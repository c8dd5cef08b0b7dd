/* sc_hook: environment and stdin reach the hook, exit status and signals are reported, the
 * output tail is kept, exec errors come back as -errno, and the timeout kills the whole
 * process group (grandchildren included) without waiting on a pipe they hold open. */
#include "sc_error.h"
#include "sc_hook.h"
#include "sc_test.h"
#include "sc_time.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

static char s_tmp[900];

/* Writes $SC_TMP/name with body and mode; returns the path (static buffer per call site). */
static void s_script(char *path, size_t len, const char *name, const char *body, mode_t mode)
{
    snprintf(path, len, "%s/%s", s_tmp, name);
    sc_test_write_file(path, body, mode);
}

static char *s_read(const char *name)
{
    char path[1024];

    snprintf(path, sizeof(path), "%s/%s", s_tmp, name);
    return sc_test_slurp(path, NULL);
}

/* Whether pid is gone: no such process, or a zombie (its parent, init here, has not reaped
 * it yet, but it runs no more). */
static bool s_gone(pid_t pid)
{
    char path[64], line[512], *rp;
    FILE *f;
    bool zombie = false;

    if (kill(pid, 0) == -1 && errno == ESRCH)
        return true;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (!(f = fopen(path, "r")))
        return true;
    if (fgets(line, sizeof(line), f) && (rp = strrchr(line, ')')))
        zombie = rp[1] == ' ' && rp[2] == 'Z';
    fclose(f);
    return zombie;
}

/* Waits up to ms for pid to be gone. */
static bool s_gone_within(pid_t pid, int ms)
{
    for (int i = 0; i < ms / 10; i++) {
        if (s_gone(pid))
            return true;
        sc_sleep_ms(10);
    }
    return s_gone(pid);
}

static pid_t s_read_pid(const char *name)
{
    char *s = NULL;
    pid_t pid = 0;

    /* the hook writes the file right away; allow it a moment when asserting after a kill */
    for (int i = 0; i < 100 && !(s = s_read(name)); i++)
        sc_sleep_ms(10);
    if (s)
        pid = (pid_t)atoi(s);
    free(s);
    return pid;
}

SC_TEST(env_args_and_stdin_reach_the_hook)
{
    char path[1024], out[1024];
    const char *json = "{\"EventId\":\"A123\",\"EventType\":\"Reboot\"}";
    sc_hook_result_t r;
    char *env, *in;

    snprintf(out, sizeof(out), "OUT=%s", s_tmp);
    s_script(path, sizeof(path), "envhook.sh",
             "#!/bin/sh\nenv > \"$OUT/env.txt\"\ncat > \"$OUT/stdin.txt\"\necho \"arg1=$1 "
             "arg2=$2\"\necho to-stderr >&2\n",
             0755);
    setenv("SC_TEST_NOT_INHERITED", "secret", 1);
    {
        const char *envv[] = {out, "SC_EVENT_ID=A123", "SC_EVENT_TYPE=Reboot", NULL};
        const char *args[] = {"prepare", "two words", NULL};
        sc_hook_spec_t spec = {.path = path,
                               .argv_extra = args,
                               .env = envv,
                               .stdin_data = json,
                               .stdin_len = strlen(json),
                               .timeout_ms = 10000};
        SC_REQUIRE(sc_hook_run(&spec, &r) == 0);
    }
    SC_CHECK_INT(r.rc, 0);
    SC_CHECK_INT(r.exit_status, 0);
    SC_CHECK_INT(r.term_signal, 0);
    SC_CHECK(!r.timed_out);
    SC_CHECK(!r.output_truncated);
    SC_CHECK_STR(r.output_tail, "arg1=prepare arg2=two words\nto-stderr\n");
    env = s_read("env.txt");
    in = s_read("stdin.txt");
    SC_REQUIRE(env && in);
    SC_CHECK(strstr(env, "SC_EVENT_ID=A123\n") != NULL);
    SC_CHECK(strstr(env, "SC_EVENT_TYPE=Reboot\n") != NULL);
    SC_CHECK(strstr(env, "PATH=") != NULL);
    SC_CHECK(strstr(env, "SC_TEST_NOT_INHERITED") == NULL); /* minimal environment */
    SC_CHECK_STR(in, json);
    free(env);
    free(in);
    unsetenv("SC_TEST_NOT_INHERITED");
}

SC_TEST(exit_status_and_signal)
{
    char p0[1024], p3[1024], pk[1024];
    sc_hook_result_t r;

    s_script(p0, sizeof(p0), "exit0.sh", "#!/bin/sh\nexit 0\n", 0755);
    s_script(p3, sizeof(p3), "exit3.sh", "#!/bin/sh\necho failing\nexit 3\n", 0755);
    s_script(pk, sizeof(pk), "killself.sh", "#!/bin/sh\nkill -USR1 $$\nsleep 5\n", 0755);
    SC_REQUIRE(sc_hook_run(&(sc_hook_spec_t){.path = p0, .timeout_ms = 5000}, &r) == 0);
    SC_CHECK_INT(r.rc, 0);
    SC_CHECK_INT(r.exit_status, 0);
    SC_CHECK_STR(r.output_tail, "");
    SC_REQUIRE(sc_hook_run(&(sc_hook_spec_t){.path = p3, .timeout_ms = 5000}, &r) == 0);
    SC_CHECK_INT(r.rc, SC_E_HOOK_FAILED);
    SC_CHECK_INT(r.exit_status, 3);
    SC_CHECK_INT(r.term_signal, 0);
    SC_CHECK_STR(r.output_tail, "failing\n");
    SC_REQUIRE(sc_hook_run(&(sc_hook_spec_t){.path = pk, .timeout_ms = 5000}, &r) == 0);
    SC_CHECK_INT(r.rc, SC_E_HOOK_FAILED);
    SC_CHECK_INT(r.exit_status, -1);
    SC_CHECK_INT(r.term_signal, SIGUSR1);
    SC_CHECK(!r.timed_out);
    SC_CHECK(r.duration_ms < 4000);
}

SC_TEST(output_tail_keeps_the_last_4k)
{
    char path[1024];
    sc_hook_result_t r;
    size_t len;

    /* about 12 KB of numbered lines */
    s_script(path, sizeof(path), "chatty.sh",
             "#!/bin/sh\ni=0\nwhile [ $i -lt 1200 ]; do echo \"line $i\"; i=$((i+1)); done\n",
             0755);
    SC_REQUIRE(sc_hook_run(&(sc_hook_spec_t){.path = path, .timeout_ms = 10000}, &r) == 0);
    SC_CHECK_INT(r.rc, 0);
    len = strlen(r.output_tail);
    SC_CHECK_INT(len, SC_HOOK_TAIL_MAX - 1);
    SC_CHECK(r.output_truncated);
    SC_CHECK(len >= 10 && strcmp(r.output_tail + len - 10, "line 1199\n") == 0);
    SC_CHECK(strstr(r.output_tail, "\nline 1198\n") != NULL);
    SC_CHECK(strstr(r.output_tail, "line 100\n") == NULL); /* early output dropped */
}

SC_TEST(exec_errors_are_errno)
{
    char nx[1024], path[1024];
    sc_hook_result_t r;
    sc_hook_t *h = NULL;

    snprintf(nx, sizeof(nx), "%s/does-not-exist.sh", s_tmp);
    SC_CHECK_INT(sc_hook_start(&(sc_hook_spec_t){.path = nx, .timeout_ms = 1000}, &h), -ENOENT);
    SC_CHECK(h == NULL);
    SC_CHECK_INT(sc_hook_run(&(sc_hook_spec_t){.path = nx, .timeout_ms = 1000}, &r), -ENOENT);
    s_script(path, sizeof(path), "noexec.sh", "#!/bin/sh\nexit 0\n", 0644);
    SC_CHECK_INT(sc_hook_start(&(sc_hook_spec_t){.path = path, .timeout_ms = 1000}, &h), -EACCES);
    SC_CHECK(h == NULL);
    SC_CHECK_INT(sc_hook_run(&(sc_hook_spec_t){.path = s_tmp, .timeout_ms = 1000}, &r), -EACCES);
    /* bad specs */
    SC_CHECK_INT(sc_hook_start(&(sc_hook_spec_t){.path = NULL}, &h), -EINVAL);
    SC_CHECK_INT(sc_hook_start(&(sc_hook_spec_t){.path = ""}, &h), -EINVAL);
    {
        const char *bad_env[] = {"NOEQUALS", NULL};
        SC_CHECK_INT(sc_hook_start(&(sc_hook_spec_t){.path = "/bin/true", .env = bad_env}, &h),
                     -EINVAL);
    }
    SC_CHECK_INT(sc_hook_start(&(sc_hook_spec_t){.path = "/bin/true",
                                                 .stdin_data = "x",
                                                 .stdin_len = SC_HOOK_STDIN_MAX + 1},
                               &h),
                 -EINVAL);
    SC_CHECK(h == NULL);
}

SC_TEST(timeout_kills_hook_and_grandchild)
{
    char path[1024], pidenv[1100];
    sc_hook_result_t r;
    sc_hook_t *h = NULL;
    int64_t t0, took;
    pid_t leader, grandchild;

    snprintf(pidenv, sizeof(pidenv), "PIDFILE=%s/grandchild.pid", s_tmp);
    unlink(pidenv + 8); /* no stale pid from an earlier run */
    s_script(path, sizeof(path), "forker.sh",
             "#!/bin/sh\nsleep 300 &\necho $! > \"$PIDFILE\"\nsleep 300\n", 0755);
    {
        const char *envv[] = {pidenv, NULL};
        sc_hook_spec_t spec = {.path = path, .env = envv, .timeout_ms = 400, .kill_grace_ms = 1000};
        t0 = sc_mono_ms();
        SC_REQUIRE(sc_hook_start(&spec, &h) == 0);
    }
    leader = sc_hook_pid(h);
    SC_CHECK(leader > 0);
    SC_CHECK_INT(sc_hook_wait(h, &r), 0);
    took = sc_mono_ms() - t0;
    sc_hook_destroy(&h);
    SC_CHECK(h == NULL);
    SC_CHECK(r.timed_out);
    SC_CHECK_INT(r.rc, SC_E_HOOK_TIMEOUT);
    SC_CHECK_INT(r.term_signal, SIGTERM);
    SC_CHECK(took >= 400);
    SC_CHECK(took < 400 + 1000 + 1000); /* timeout + grace + slack */
    grandchild = s_read_pid("grandchild.pid");
    SC_REQUIRE(grandchild > 0);
    SC_CHECK(s_gone(leader));
    SC_CHECK(s_gone_within(grandchild, 500));
    if (!s_gone(grandchild))
        kill(grandchild, SIGKILL);
}

SC_TEST(timeout_escalates_to_sigkill_when_term_is_ignored)
{
    char path[1024], pidenv[1100];
    sc_hook_result_t r;
    int64_t t0, took;
    pid_t grandchild;

    snprintf(pidenv, sizeof(pidenv), "PIDFILE=%s/obstinate.pid", s_tmp);
    unlink(pidenv + 8); /* no stale pid from an earlier run */
    /* SIG_IGN for TERM is inherited by the background sleep as well */
    s_script(path, sizeof(path), "obstinate.sh",
             "#!/bin/sh\ntrap '' TERM\nsleep 300 &\necho $! > \"$PIDFILE\"\n"
             "while :; do sleep 1; done\n",
             0755);
    {
        const char *envv[] = {pidenv, NULL};
        sc_hook_spec_t spec = {.path = path, .env = envv, .timeout_ms = 300, .kill_grace_ms = 500};
        t0 = sc_mono_ms();
        SC_REQUIRE(sc_hook_run(&spec, &r) == 0);
        took = sc_mono_ms() - t0;
    }
    SC_CHECK(r.timed_out);
    SC_CHECK_INT(r.rc, SC_E_HOOK_TIMEOUT);
    SC_CHECK_INT(r.term_signal, SIGKILL);
    SC_CHECK(took >= 300 + 500);
    SC_CHECK(took < 300 + 500 + 1000);
    grandchild = s_read_pid("obstinate.pid");
    SC_REQUIRE(grandchild > 0);
    SC_CHECK(s_gone_within(grandchild, 500));
    if (!s_gone(grandchild))
        kill(grandchild, SIGKILL);
}

SC_TEST(grandchild_holding_the_pipe_does_not_hang)
{
    char path[1024], pidenv[1100];
    sc_hook_result_t r;
    int64_t t0, took;
    pid_t grandchild;

    snprintf(pidenv, sizeof(pidenv), "PIDFILE=%s/holder.pid", s_tmp);
    unlink(pidenv + 8); /* no stale pid from an earlier run */
    s_script(path, sizeof(path), "holder.sh",
             "#!/bin/sh\nsleep 300 &\necho $! > \"$PIDFILE\"\necho leader-done\nexit 0\n", 0755);
    {
        const char *envv[] = {pidenv, NULL};
        sc_hook_spec_t spec = {.path = path, .env = envv, .timeout_ms = 20000};
        t0 = sc_mono_ms();
        SC_REQUIRE(sc_hook_run(&spec, &r) == 0);
        took = sc_mono_ms() - t0;
    }
    SC_CHECK_INT(r.rc, 0);
    SC_CHECK(!r.timed_out);
    SC_CHECK_STR(r.output_tail, "leader-done\n");
    SC_CHECK(took < 1500);
    /* a hook that exits normally keeps its background children: that is its business */
    grandchild = s_read_pid("holder.pid");
    SC_REQUIRE(grandchild > 0);
    kill(grandchild, SIGKILL);
}

SC_TEST(poll_is_non_blocking)
{
    char path[1024];
    sc_hook_result_t r;
    sc_hook_t *h = NULL;
    int again = 0, rc;
    int64_t t0 = sc_mono_ms();

    s_script(path, sizeof(path), "slow.sh", "#!/bin/sh\nsleep 0.3\necho hi\n", 0755);
    SC_REQUIRE(sc_hook_start(&(sc_hook_spec_t){.path = path, .timeout_ms = 5000}, &h) == 0);
    SC_CHECK(sc_hook_fd(h) >= 0);
    while ((rc = sc_hook_poll(h, &r)) == -EAGAIN && sc_mono_ms() - t0 < 5000) {
        struct pollfd pfd = {.fd = sc_hook_fd(h), .events = POLLIN};
        again++;
        poll(&pfd, pfd.fd >= 0 ? 1 : 0, 50);
    }
    SC_CHECK_INT(rc, 0);
    SC_CHECK(again >= 2); /* it returned while the hook slept */
    SC_CHECK_INT(r.rc, 0);
    SC_CHECK_STR(r.output_tail, "hi\n");
    SC_CHECK(r.duration_ms >= 300);
    /* finished: further polls give the same result */
    SC_CHECK_INT(sc_hook_poll(h, &r), 0);
    SC_CHECK_STR(r.output_tail, "hi\n");
    sc_hook_destroy(&h);
}

SC_TEST(large_stdin_does_not_deadlock)
{
    char cat[1024], ign[1024];
    size_t len = 3u << 20;
    char *data = malloc(len);
    sc_hook_result_t r;

    SC_REQUIRE(data);
    for (size_t i = 0; i < len; i++)
        data[i] = (char)('a' + (i * 7 + i / 1000) % 26);
    /* echoes its 3 MiB stdin back: both pipes fill up unless the runner does both at once */
    s_script(cat, sizeof(cat), "cat.sh", "#!/bin/sh\nexec cat\n", 0755);
    SC_REQUIRE(sc_hook_run(
                   &(sc_hook_spec_t){
                       .path = cat, .stdin_data = data, .stdin_len = len, .timeout_ms = 20000},
                   &r) == 0);
    SC_CHECK_INT(r.rc, 0);
    SC_CHECK(r.output_truncated);
    SC_CHECK(memcmp(r.output_tail, data + len - (SC_HOOK_TAIL_MAX - 1), SC_HOOK_TAIL_MAX - 1) == 0);
    /* never reads its stdin: EPIPE is tolerated and SIGPIPE does not kill us */
    s_script(ign, sizeof(ign), "ignore.sh", "#!/bin/sh\nexit 0\n", 0755);
    SC_REQUIRE(sc_hook_run(
                   &(sc_hook_spec_t){
                       .path = ign, .stdin_data = data, .stdin_len = len, .timeout_ms = 20000},
                   &r) == 0);
    SC_CHECK_INT(r.rc, 0);
    free(data);
}

SC_TEST(daemon_fds_do_not_leak_into_the_hook)
{
    char path[1024];
    sc_hook_result_t r;
    int fd = open("/dev/null", O_RDONLY); /* deliberately without O_CLOEXEC */
    int high;

    SC_REQUIRE(fd >= 0);
    high = dup2(fd, 57);
    close(fd);
    SC_REQUIRE(high == 57);
    s_script(path, sizeof(path), "fds.sh",
             "#!/bin/sh\nif [ -e /proc/$$/fd/57 ]; then echo leaked; else echo clean; fi\n", 0755);
    SC_REQUIRE(sc_hook_run(&(sc_hook_spec_t){.path = path, .timeout_ms = 5000}, &r) == 0);
    SC_CHECK_STR(r.output_tail, "clean\n");
    close(high);
}

SC_TEST(destroy_kills_a_running_hook)
{
    char path[1024], pidenv[1100];
    sc_hook_t *h = NULL;
    pid_t leader, grandchild;

    snprintf(pidenv, sizeof(pidenv), "PIDFILE=%s/destroy.pid", s_tmp);
    unlink(pidenv + 8); /* no stale pid from an earlier run */
    s_script(path, sizeof(path), "destroy.sh",
             "#!/bin/sh\nsleep 300 &\necho $! > \"$PIDFILE\"\nsleep 300\n", 0755);
    {
        const char *envv[] = {pidenv, NULL};
        SC_REQUIRE(sc_hook_start(&(sc_hook_spec_t){.path = path, .env = envv}, &h) == 0);
    }
    leader = sc_hook_pid(h);
    grandchild = s_read_pid("destroy.pid");
    SC_REQUIRE(grandchild > 0);
    sc_hook_destroy(&h);
    SC_CHECK(h == NULL);
    SC_CHECK(s_gone(leader));
    SC_CHECK(s_gone_within(grandchild, 500));
    if (!s_gone(grandchild))
        kill(grandchild, SIGKILL);
    sc_hook_destroy(&h); /* takes NULL */
}

int main(void)
{
    snprintf(s_tmp, sizeof(s_tmp), "%s", sc_test_tmpdir("hook"));
    SC_RUN(env_args_and_stdin_reach_the_hook);
    SC_RUN(exit_status_and_signal);
    SC_RUN(output_tail_keeps_the_last_4k);
    SC_RUN(exec_errors_are_errno);
    SC_RUN(timeout_kills_hook_and_grandchild);
    SC_RUN(timeout_escalates_to_sigkill_when_term_is_ignored);
    SC_RUN(grandchild_holding_the_pipe_does_not_hang);
    SC_RUN(poll_is_non_blocking);
    SC_RUN(large_stdin_does_not_deadlock);
    SC_RUN(daemon_fds_do_not_leak_into_the_hook);
    SC_RUN(destroy_kills_a_running_hook);
    return sc_test_done();
}
