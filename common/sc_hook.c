/* _GNU_SOURCE for pipe2() and F_SETPIPE_SZ. */
#define _GNU_SOURCE
#include "sc_hook.h"

#include "sc_error.h"
#include "sc_time.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* After the hook exited, output from grandchildren still holding the pipe is read for this
 * long at most, so that a background child cannot make the runner hang. */
#define SC_HOOK_DRAIN_MS 200
/* Output read per step at most, so a hook spewing output cannot starve the timeout. */
#define SC_HOOK_READ_BUDGET (1u << 20)
/* Largest pipe buffer asked for stdin (the unprivileged default pipe-max-size). */
#define SC_HOOK_PIPE_MAX (1 << 20)
/* Environment variables inherited from the daemon. */
static const char *const s_inherited_env[] = {"PATH", "HOME", "LANG"};
#define SC_HOOK_DEFAULT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct sc_hook {
    pid_t pid;                   /* the hook, also its process group id */
    int out_fd;                  /* read end of stdout+stderr (non-blocking), -1 once closed */
    int in_fd;                   /* write end of stdin (non-blocking), -1 once all written/closed */
    int pidfd;                   /* pidfd of the hook for sc_hook_wait, -1 if unavailable */
    char *in_buf;                /* copy of the stdin bytes */
    size_t in_len;               /* their length */
    size_t in_off;               /* bytes written so far */
    char tail[SC_HOOK_TAIL_MAX]; /* last output bytes (linear, oldest first) */
    size_t tail_len;             /* bytes in tail (< SC_HOOK_TAIL_MAX) */
    bool truncated;              /* older output was dropped */
    int64_t start_ms;            /* monotonic start time */
    int64_t deadline_ms;         /* when the timeout fires, 0 for none */
    int64_t grace_ms;            /* SIGTERM -> SIGKILL delay */
    int64_t kill_at_ms;          /* when SIGKILL follows SIGTERM */
    int64_t exit_ms;             /* when the exit was seen, 0 before */
    int64_t drain_until_ms;      /* stop reading output after this once exited */
    bool exited;                 /* the hook exited (seen with WNOWAIT, not reaped yet) */
    bool term_sent;              /* the timeout fired and SIGTERM went to the group */
    bool kill_sent;              /* SIGKILL went to the group */
    bool reaped;                 /* waitpid() collected it */
    bool finished;               /* result is final */
    sc_hook_result_t result;     /* the result once finished */
};

/* execve() takes char *const[] for historical reasons and does not modify the strings. */
static char *s_unconst(const char *s)
{
    union {
        const char *c;
        char *m;
    } u = {.c = s};
    return u.m;
}

static void s_close(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

/* A close-on-exec pipe whose ends are both >= 3, so dup2() onto 0..2 in the child cannot
 * clobber one of them even if the daemon runs with 0..2 closed. */
static int s_pipe(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -errno;
    for (int i = 0; i < 2; i++) {
        if (fds[i] < 3) {
            int fd = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
            if (fd < 0) {
                int rc = -errno;
                close(fds[0]);
                close(fds[1]);
                return rc;
            }
            close(fds[i]);
            fds[i] = fd;
        }
    }
    return 0;
}

static void s_tail_append(sc_hook_t *self, const char *buf, size_t n)
{
    const size_t cap = SC_HOOK_TAIL_MAX - 1;

    if (n >= cap) {
        self->truncated = self->truncated || self->tail_len > 0 || n > cap;
        memcpy(self->tail, buf + (n - cap), cap);
        self->tail_len = cap;
        return;
    }
    if (self->tail_len + n > cap) {
        size_t drop = self->tail_len + n - cap;
        memmove(self->tail, self->tail + drop, self->tail_len - drop);
        self->tail_len -= drop;
        self->truncated = true;
    }
    memcpy(self->tail + self->tail_len, buf, n);
    self->tail_len += n;
}

/* Reads what output is there (up to the budget). Closes the pipe on EOF. */
static void s_read_output(sc_hook_t *self)
{
    char buf[16384];
    size_t total = 0;

    while (self->out_fd >= 0 && total < SC_HOOK_READ_BUDGET) {
        ssize_t n = read(self->out_fd, buf, sizeof(buf));
        if (n > 0) {
            s_tail_append(self, buf, (size_t)n);
            total += (size_t)n;
        } else if (n == 0) {
            s_close(&self->out_fd);
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            break;
        } else {
            s_close(&self->out_fd);
        }
    }
}

/* Writes what fits of stdin. SIGPIPE is blocked in this thread for the write and a SIGPIPE it
 * raised is consumed, so a hook that exits without reading its stdin cannot kill the daemon
 * and no global signal disposition is touched. */
static void s_write_stdin(sc_hook_t *self)
{
    sigset_t pipe_set, old_set, pending;
    bool was_pending;

    if (self->in_fd < 0)
        return;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigpending(&pending);
    was_pending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
    while (self->in_off < self->in_len) {
        ssize_t n = write(self->in_fd, self->in_buf + self->in_off, self->in_len - self->in_off);
        if (n > 0) {
            self->in_off += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            if (n < 0 && errno == EPIPE && !was_pending) {
                struct timespec zero = {0, 0};
                while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
                    ;
            }
            self->in_off = self->in_len; /* the hook does not want the rest */
        }
    }
    pthread_sigmask(SIG_SETMASK, &old_set, NULL);
    if (self->in_off >= self->in_len)
        s_close(&self->in_fd);
}

/* Sees whether the hook exited, without reaping it: the zombie keeps its pid (and so its
 * process group id) from being reused while we may still signal the group. */
static void s_check_exit(sc_hook_t *self, int64_t now)
{
    siginfo_t si;

    if (self->exited)
        return;
    memset(&si, 0, sizeof(si));
    if (waitid(P_PID, (id_t)self->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
        if (errno == EINTR)
            return;
        /* ECHILD: someone else reaped it (a daemon's waitpid(-1)); treat as gone. */
        self->exited = true;
        self->reaped = true;
    } else if (si.si_pid == self->pid) {
        self->exited = true;
    } else {
        return;
    }
    self->exit_ms = now;
    self->drain_until_ms = now + SC_HOOK_DRAIN_MS;
}

static void s_signal_group(sc_hook_t *self, int sig)
{
    /* Before the first exec the child may not have called setpgid() yet: the parent called
     * it as well, so the group exists. Fall back to the pid alone if it does not. */
    if (kill(-self->pid, sig) < 0 && errno == ESRCH && !self->reaped)
        kill(self->pid, sig);
}

static void s_finish(sc_hook_t *self)
{
    sc_hook_result_t *r = &self->result;
    int status = 0;
    bool have_status = false;

    if (!self->reaped) {
        while (waitpid(self->pid, &status, 0) < 0) {
            if (errno != EINTR)
                break;
        }
        have_status = true;
        self->reaped = true;
    }
    s_close(&self->out_fd);
    s_close(&self->in_fd);
    s_close(&self->pidfd);
    memset(r, 0, sizeof(*r));
    r->exit_status = -1;
    if (have_status && WIFEXITED(status))
        r->exit_status = WEXITSTATUS(status);
    else if (have_status && WIFSIGNALED(status))
        r->term_signal = WTERMSIG(status);
    r->timed_out = self->term_sent;
    r->duration_ms = self->exit_ms - self->start_ms;
    memcpy(r->output_tail, self->tail, self->tail_len);
    r->output_tail[self->tail_len] = '\0';
    r->output_truncated = self->truncated;
    if (r->timed_out)
        r->rc = SC_E_HOOK_TIMEOUT;
    else if (r->exit_status == 0)
        r->rc = 0;
    else
        r->rc = SC_E_HOOK_FAILED;
    self->finished = true;
}

/* One non-blocking round: I/O, exit check, timeout. Returns whether finished. */
static bool s_step(sc_hook_t *self)
{
    int64_t now;

    if (self->finished)
        return true;
    s_write_stdin(self);
    s_read_output(self);
    now = sc_mono_ms();
    s_check_exit(self, now);
    if (!self->exited && self->deadline_ms && now >= self->deadline_ms && !self->term_sent) {
        s_signal_group(self, SIGTERM);
        self->term_sent = true;
        self->kill_at_ms = now + self->grace_ms;
    }
    /* After a timeout, SIGKILL once the grace is over, or at once when the hook is gone and
     * nothing holds the output pipe (whatever is left of the group gets no more grace). The
     * leader is not reaped yet, so its pid still names the group. */
    if (self->term_sent && !self->kill_sent &&
        (now >= self->kill_at_ms || (self->exited && self->out_fd < 0))) {
        s_signal_group(self, SIGKILL);
        self->kill_sent = true;
        if (self->exited)
            self->drain_until_ms = now + SC_HOOK_DRAIN_MS;
    }
    if (self->exited && (!self->term_sent || self->kill_sent) &&
        (self->out_fd < 0 || now >= self->drain_until_ms)) {
        s_finish(self);
        return true;
    }
    return false;
}

/* Builds the child's environment: the caller's pairs, then PATH/HOME/LANG from ours unless
 * the caller set them. Pointers are borrowed; the array is malloc'd. */
static int s_build_env(const sc_hook_spec_t *spec, size_t n_env, char ***ret_envp)
{
    size_t n_inh = sizeof(s_inherited_env) / sizeof(s_inherited_env[0]);
    char **envp = calloc(n_env + n_inh + 2, sizeof(*envp));
    size_t k = 0;

    if (!envp)
        return -ENOMEM;
    for (size_t i = 0; i < n_env; i++)
        envp[k++] = s_unconst(spec->env[i]);
    for (size_t j = 0; j < n_inh; j++) {
        const char *name = s_inherited_env[j];
        size_t nl = strlen(name);
        bool set = false;
        const char *val;

        for (size_t i = 0; i < n_env; i++)
            if (strncmp(spec->env[i], name, nl) == 0 && spec->env[i][nl] == '=')
                set = true;
        if (set)
            continue;
        val = NULL;
        for (char **e = environ; e && *e; e++)
            if (strncmp(*e, name, nl) == 0 && (*e)[nl] == '=')
                val = *e;
        if (!val && strcmp(name, "PATH") == 0)
            val = SC_HOOK_DEFAULT_PATH;
        if (val)
            envp[k++] = s_unconst(val);
    }
    envp[k] = NULL;
    *ret_envp = envp;
    return 0;
}

static int s_validate(const sc_hook_spec_t *spec, size_t *ret_nargs, size_t *ret_nenv)
{
    size_t nargs = 0, nenv = 0;

    if (!spec || !spec->path || !spec->path[0])
        return -EINVAL;
    if (spec->stdin_len > SC_HOOK_STDIN_MAX || (spec->stdin_len && !spec->stdin_data))
        return -EINVAL;
    if (spec->kill_grace_ms < 0)
        return -EINVAL;
    for (; spec->argv_extra && spec->argv_extra[nargs]; nargs++)
        if (nargs >= SC_HOOK_ARGS_MAX)
            return -EINVAL;
    for (; spec->env && spec->env[nenv]; nenv++) {
        const char *eq = strchr(spec->env[nenv], '=');
        if (nenv >= SC_HOOK_ENV_MAX || !eq || eq == spec->env[nenv])
            return -EINVAL;
    }
    *ret_nargs = nargs;
    *ret_nenv = nenv;
    return 0;
}

/* In the child, between fork and exec: async-signal-safe calls only. */
static void s_child(int in_r, int out_w, int err_w, int max_fd, const char *path, char *const *argv,
                    char *const *envp)
{
    sigset_t none;
    int e;

    setpgid(0, 0);
    /* Signal dispositions set to SIG_IGN and the signal mask survive exec: give the hook a
     * clean slate (the daemon may ignore SIGPIPE or block signals for its own loop). */
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (dup2(in_r, 0) < 0 || dup2(out_w, 1) < 0 || dup2(out_w, 2) < 0)
        goto fail;
        /* Nothing else of the daemon's (sockets, the database) reaches the hook. */
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */) < 0)
#endif
        for (int fd = 3; fd < max_fd; fd++)
            if (fd != err_w)
                fcntl(fd, F_SETFD, FD_CLOEXEC);
    execve(path, argv, envp);
fail:
    e = errno;
    while (write(err_w, &e, sizeof(e)) < 0 && errno == EINTR)
        ;
    _exit(127);
}

int sc_hook_start(const sc_hook_spec_t *spec, sc_hook_t **ret_hook)
{
    sc_hook_t *self = NULL;
    size_t nargs, nenv;
    char **argv = NULL, **envp = NULL;
    int in_p[2] = {-1, -1}, out_p[2] = {-1, -1}, err_p[2] = {-1, -1};
    int rc, max_fd = 65536, child_errno = 0;
    struct rlimit rl;
    ssize_t n;

    if (!ret_hook)
        return -EINVAL;
    if ((rc = s_validate(spec, &nargs, &nenv)) < 0)
        return rc;
    if (!(self = calloc(1, sizeof(*self))))
        return -ENOMEM;
    self->pid = -1;
    self->out_fd = self->in_fd = self->pidfd = -1;
    rc = -ENOMEM;
    if (spec->stdin_len && !(self->in_buf = malloc(spec->stdin_len)))
        goto fail;
    if (spec->stdin_len)
        memcpy(self->in_buf, spec->stdin_data, spec->stdin_len);
    self->in_len = spec->stdin_len;
    if (!(argv = calloc(nargs + 2, sizeof(*argv))))
        goto fail;
    argv[0] = s_unconst(spec->path);
    for (size_t i = 0; i < nargs; i++)
        argv[i + 1] = s_unconst(spec->argv_extra[i]);
    if ((rc = s_build_env(spec, nenv, &envp)) < 0)
        goto fail;
    if ((rc = s_pipe(in_p)) < 0 || (rc = s_pipe(out_p)) < 0 || (rc = s_pipe(err_p)) < 0)
        goto fail;
    if (self->in_len > 65536)
        fcntl(in_p[1], F_SETPIPE_SZ,
              self->in_len > SC_HOOK_PIPE_MAX ? SC_HOOK_PIPE_MAX : (int)self->in_len);
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < (rlim_t)max_fd)
        max_fd = (int)rl.rlim_cur;

    self->start_ms = sc_mono_ms();
    self->pid = fork();
    if (self->pid < 0) {
        rc = -errno;
        goto fail;
    }
    if (self->pid == 0)
        s_child(in_p[0], out_p[1], err_p[1], max_fd, spec->path, argv, envp);
    /* Also from the parent, so the group exists before we might signal it. EACCES once the
     * child has exec'd is fine: it did it itself. */
    setpgid(self->pid, self->pid);
    s_close(&in_p[0]);
    s_close(&out_p[1]);
    s_close(&err_p[1]);
    /* The exec-failure pipe reads EOF on a successful exec (close-on-exec), or the errno. */
    do
        n = read(err_p[0], &child_errno, sizeof(child_errno));
    while (n < 0 && errno == EINTR);
    s_close(&err_p[0]);
    if (n == (ssize_t)sizeof(child_errno)) {
        rc = child_errno > 0 ? -child_errno : -EIO;
        while (waitpid(self->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        self->reaped = true;
        goto fail;
    }
    self->in_fd = in_p[1];
    self->out_fd = out_p[0];
    in_p[1] = out_p[0] = -1;
    fcntl(self->in_fd, F_SETFL, fcntl(self->in_fd, F_GETFL) | O_NONBLOCK);
    fcntl(self->out_fd, F_SETFL, fcntl(self->out_fd, F_GETFL) | O_NONBLOCK);
#ifdef SYS_pidfd_open
    self->pidfd = (int)syscall(SYS_pidfd_open, self->pid, 0);
    if (self->pidfd >= 0)
        fcntl(self->pidfd, F_SETFD, FD_CLOEXEC);
#endif
    if (spec->timeout_ms > 0)
        self->deadline_ms = self->start_ms + spec->timeout_ms;
    self->grace_ms = spec->kill_grace_ms ? spec->kill_grace_ms : SC_HOOK_KILL_GRACE_MS_DEFAULT;
    s_write_stdin(self);
    free(argv);
    free(envp);
    *ret_hook = self;
    return 0;
fail:
    s_close(&in_p[0]);
    s_close(&in_p[1]);
    s_close(&out_p[0]);
    s_close(&out_p[1]);
    s_close(&err_p[0]);
    s_close(&err_p[1]);
    free(argv);
    free(envp);
    if (self->pid > 0 && !self->reaped) {
        kill(self->pid, SIGKILL);
        while (waitpid(self->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    free(self->in_buf);
    free(self);
    return rc;
}

pid_t sc_hook_pid(const sc_hook_t *hook)
{
    return hook ? hook->pid : -1;
}

int sc_hook_fd(const sc_hook_t *hook)
{
    return hook ? hook->out_fd : -1;
}

int sc_hook_poll(sc_hook_t *hook, sc_hook_result_t *ret_result)
{
    if (!hook || !ret_result)
        return -EINVAL;
    if (!s_step(hook))
        return -EAGAIN;
    *ret_result = hook->result;
    return 0;
}

int sc_hook_wait(sc_hook_t *hook, sc_hook_result_t *ret_result)
{
    if (!hook || !ret_result)
        return -EINVAL;
    while (!s_step(hook)) {
        struct pollfd pfd[3];
        nfds_t n = 0;
        int64_t now = sc_mono_ms(), next = now + (hook->pidfd >= 0 ? 1000 : 20);

        if (hook->out_fd >= 0)
            pfd[n++] = (struct pollfd){.fd = hook->out_fd, .events = POLLIN};
        if (hook->in_fd >= 0)
            pfd[n++] = (struct pollfd){.fd = hook->in_fd, .events = POLLOUT};
        if (hook->pidfd >= 0 && !hook->exited)
            pfd[n++] = (struct pollfd){.fd = hook->pidfd, .events = POLLIN};
        if (!hook->exited && hook->deadline_ms && !hook->term_sent && hook->deadline_ms < next)
            next = hook->deadline_ms;
        if (hook->term_sent && !hook->kill_sent && hook->kill_at_ms < next)
            next = hook->kill_at_ms;
        if (hook->exited && hook->drain_until_ms < next)
            next = hook->drain_until_ms;
        if (hook->exited && hook->term_sent && !hook->kill_sent && next > now + 20)
            next = now + 20;
        poll(pfd, n, next > now ? (int)(next - now) : 0);
    }
    *ret_result = hook->result;
    return 0;
}

void sc_hook_destroy(sc_hook_t **hook)
{
    sc_hook_t *self;

    if (!hook || !(self = *hook))
        return;
    if (!self->finished && self->pid > 0 && !self->reaped) {
        if (!self->exited || (self->term_sent && !self->kill_sent))
            s_signal_group(self, SIGKILL);
        while (waitpid(self->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    s_close(&self->out_fd);
    s_close(&self->in_fd);
    s_close(&self->pidfd);
    free(self->in_buf);
    free(self);
    *hook = NULL;
}

int sc_hook_run(const sc_hook_spec_t *spec, sc_hook_result_t *ret_result)
{
    sc_hook_t *hook = NULL;
    int rc;

    if (!ret_result)
        return -EINVAL;
    if ((rc = sc_hook_start(spec, &hook)) < 0)
        return rc;
    rc = sc_hook_wait(hook, ret_result);
    sc_hook_destroy(&hook);
    return rc;
}
