/* libscslowfsync.so: the nemesis' slow disks. Preloaded into a coordinator (LD_PRELOAD), it
 * makes fsync() and fdatasync() wait first for the number of milliseconds written in the file
 * SC_SLOWFSYNC_FILE names, read again at every call (so a test turns the delay on and off
 * while the daemon runs; no file, or 0: no wait, at most 10000). Each call it held appends
 * "PID MS\n" to SC_SLOWFSYNC_LOG when that is set. errno is the real call's.
 *
 * Built without the sanitizers (tests/nemesis/CMakeLists.txt): it runs inside another
 * program. Preloaded into an ASan-built daemon it comes before the ASan runtime in the
 * initial library list, which ASan refuses unless ASAN_OPTIONS has verify_asan_link_order=0
 * (tests/nemesis/seed.sh sets it for the coordinators it preloads this into). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define S_MAX_MS 10000 /* longest wait one call is given */

int fsync(int fd);
int fdatasync(int fd);

/* The delay the control file asks for now, in ms (0: none, or no file). */
static long s_delay_ms(void)
{
    const char *path = getenv("SC_SLOWFSYNC_FILE");
    char buf[32];
    ssize_t n;
    long v;
    int fd;

    if (!path || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return 0;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    v = strtol(buf, NULL, 10);
    return v < 0 ? 0 : v > S_MAX_MS ? S_MAX_MS : v;
}

/* Waits as the control file says (errno kept for the real call that follows). */
static void s_hold(void)
{
    int saved = errno;
    long ms = s_delay_ms();
    const char *log = getenv("SC_SLOWFSYNC_LOG");

    if (ms > 0) {
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        if (log) {
            char line[48];
            int len = snprintf(line, sizeof(line), "%ld %ld\n", (long)getpid(), ms);
            int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
            if (fd >= 0) {
                ssize_t w = write(fd, line, (size_t)len); /* a lost line is only a lost count */
                (void)w;
                close(fd);
            }
        }
    }
    errno = saved;
}

typedef int (*s_sync_fn)(int);

/* The next definition of name (libc's), looked up once. */
static s_sync_fn s_next(s_sync_fn *slot, const char *name)
{
    if (!*slot) {
        void *p = dlsym(RTLD_NEXT, name);
        memcpy(slot, &p, sizeof(p)); /* object to function pointer, as POSIX allows */
    }
    return *slot;
}

int fsync(int fd)
{
    static s_sync_fn real;
    s_sync_fn f = s_next(&real, "fsync");

    s_hold();
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(fd);
}

int fdatasync(int fd)
{
    static s_sync_fn real;
    s_sync_fn f = s_next(&real, "fdatasync");

    s_hold();
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(fd);
}
