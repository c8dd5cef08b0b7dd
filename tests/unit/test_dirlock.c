/* sc_dirlock: one holder per state directory, a clear message for the second, released on
 * close and on process death, never inherited by a child that execs. */
#include "sc_dirlock.h"
#include "sc_error.h"
#include "sc_test.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char s_dir[1024];

SC_TEST(second_holder_refused_with_pid)
{
    sc_dirlock_t *a = NULL, *b = NULL;
    char err[512] = "", want[64];

    SC_CHECK_INT(sc_dirlock_acquire(s_dir, "x.lock", &a, err, sizeof(err)), 0);
    SC_REQUIRE(a != NULL);
    SC_CHECK_INT(sc_dirlock_acquire(s_dir, "x.lock", &b, err, sizeof(err)), -EBUSY);
    SC_CHECK(b == NULL);
    snprintf(want, sizeof(want), "(pid %ld,", (long)getpid());
    SC_CHECK(strstr(err, "is in use by another process") != NULL);
    SC_CHECK(strstr(err, want) != NULL);
    SC_CHECK_STR(sc_errname(-EBUSY), "EBUSY"); /* logged as rc= by the daemons */
    sc_dirlock_release(&a);
    SC_CHECK(a == NULL);
    sc_dirlock_release(&a); /* NULL-safe */
    SC_CHECK_INT(sc_dirlock_acquire(s_dir, "x.lock", &b, err, sizeof(err)), 0);
    sc_dirlock_release(&b);
}

SC_TEST(missing_dir_named)
{
    sc_dirlock_t *a = NULL;
    char err[512] = "";

    SC_CHECK_INT(sc_dirlock_acquire("/nonexistent-dir", "x.lock", &a, err, sizeof(err)), -ENOENT);
    SC_CHECK(strstr(err, "/nonexistent-dir/x.lock") != NULL);
    SC_CHECK_INT(sc_dirlock_acquire(NULL, "x.lock", &a, err, sizeof(err)), -EINVAL);
}

SC_TEST(released_when_the_holder_dies_not_inherited_by_exec)
{
    sc_dirlock_t *a = NULL;
    char err[512] = "";
    int st = 0;
    pid_t pid = fork();

    SC_REQUIRE(pid >= 0);
    if (pid == 0) {
        sc_dirlock_t *c = NULL;
        if (sc_dirlock_acquire(s_dir, "y.lock", &c, NULL, 0) != 0)
            _exit(3);
        /* exec a long sleeper holding nothing: the lock must not follow it */
        char cmd[1300];
        snprintf(cmd, sizeof(cmd),
                 "sleep 30 </dev/null >/dev/null 2>&1 & echo $! >'%s/sleeper.pid'; kill -9 $$",
                 s_dir);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(4);
    }
    SC_REQUIRE(waitpid(pid, &st, 0) == pid);
    SC_CHECK(WIFSIGNALED(st));
    /* the holder is dead; its grandchild (sleep) still runs with the fds sh had */
    SC_CHECK_INT(sc_dirlock_acquire(s_dir, "y.lock", &a, err, sizeof(err)), 0);
    sc_dirlock_release(&a);
    char path[1100];
    snprintf(path, sizeof(path), "%s/sleeper.pid", s_dir);
    FILE *f = fopen(path, "r");
    long sleeper = 0;
    SC_REQUIRE(f != NULL);
    SC_CHECK(fscanf(f, "%ld", &sleeper) == 1 && sleeper > 1);
    fclose(f);
    if (sleeper > 1)
        kill((pid_t)sleeper, SIGKILL);
}

int main(void)
{
    snprintf(s_dir, sizeof(s_dir), "%s", sc_test_tmpdir(NULL));
    SC_RUN(second_holder_refused_with_pid);
    SC_RUN(missing_dir_named);
    SC_RUN(released_when_the_holder_dies_not_inherited_by_exec);
    return sc_test_done();
}
