/* Helpers shared by the bench_*.c programs: imds-sim as a child, a process's CPU and memory
 * from /proc. Benchmarks only (static inline functions). */
#ifndef SC_BENCH_LIB_H
#define SC_BENCH_LIB_H

#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* Starts imds-sim with one VM (vm_0), answering 200 to any approval and never throttling,
 * its timeline in tl; writes the base URL of vm_0 into url. Its pid, or -1. */
static inline pid_t bench_sim_start(const char *sim, const char *tl, char *url, size_t urllen)
{
    int pfd[2];
    pid_t pid;
    char line[256];
    FILE *f;

    if (pipe(pfd) < 0)
        return -1;
    if ((pid = fork()) == 0) {
        dup2(pfd[1], 1);
        close(pfd[0]);
        execl(sim, sim, "--listen", "127.0.0.1:0", "--vms", "1", "--fault-domains", "1",
              "--unknown-event-ok", "--rate-limit", "0", "--timeline", tl, (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    f = fdopen(pfd[0], "r");
    while (f && fgets(line, sizeof(line), f)) {
        unsigned port;
        if (sscanf(line, "listening on 127.0.0.1:%u", &port) == 1) {
            snprintf(url, urllen, "http://127.0.0.1:%u/vm_0", port);
            fclose(f);
            return pid;
        }
    }
    if (f)
        fclose(f);
    kill(pid, SIGTERM);
    return -1;
}

/* Microseconds on CLOCK_MONOTONIC (sc_mono_ms is too coarse for latencies). */
static inline int64_t bench_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* CPU time in ns of every thread of pid (/proc/PID/task/TID/schedstat), or -1. */
static inline int64_t bench_cpu_ns(pid_t pid)
{
    char path[64];
    struct dirent *d;
    DIR *dir;
    int64_t sum = 0;

    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    if (!(dir = opendir(path)))
        return -1;
    while ((d = readdir(dir)) != NULL) {
        char p[320];
        long long ns;
        FILE *f;

        if (d->d_name[0] == '.')
            continue;
        snprintf(p, sizeof(p), "/proc/%d/task/%s/schedstat", (int)pid, d->d_name);
        if ((f = fopen(p, "r")) != NULL) {
            if (fscanf(f, "%lld", &ns) == 1)
                sum += ns;
            fclose(f);
        }
    }
    closedir(dir);
    return sum;
}

/* A "Key: N kB" line of /proc/PID/status (VmRSS, RssAnon, ...) in KiB, or -1. */
static inline long bench_status_kib(pid_t pid, const char *key)
{
    char path[64], line[256];
    size_t n = strlen(key);
    long v = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    if (!(f = fopen(path, "r")))
        return -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, key, n) == 0 && line[n] == ':' && sscanf(line + n + 1, "%ld", &v) == 1)
            break;
    fclose(f);
    return v;
}

/* Removes the temporary directory dir (made by mkdtemp: no quote in it) and all it holds.
 * 0, or -1 after saying so on stderr. */
static inline int bench_rmtree(const char *dir)
{
    char cmd[PATH_MAX + 16];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "bench: could not remove %s\n", dir);
        return -1;
    }
    return 0;
}

#endif
