#include "sc_dirlock.h"
#include "sc_error.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

struct sc_dirlock {
    int fd;
};

int sc_dirlock_acquire(const char *dir, const char *name, sc_dirlock_t **ret_lock, char *err,
                       size_t errlen)
{
    char path[PATH_MAX], pid[32] = "";
    sc_dirlock_t *self;
    ssize_t n;
    int fd, rc;

    if (!dir || !name || !ret_lock)
        return -EINVAL;
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path)) {
        return sc_errf(err, errlen, -ENAMETOOLONG, "lock file %s/%s: path too long", dir, name);
    }
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        rc = -errno;
        return sc_errf(err, errlen, rc, "lock file %s: %s", path, strerror(-rc));
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
        n = pread(fd, pid, sizeof(pid) - 1, 0);
        pid[n > 0 ? n : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        if (rc == -EBUSY)
            sc_errf(err, errlen, rc,
                    "%s is in use by another process (pid %s, lock file %s): one per "
                    "state directory",
                    dir, pid[0] ? pid : "unknown", path);
        else
            sc_errf(err, errlen, rc, "lock file %s: %s", path, strerror(-rc));
        close(fd);
        return rc;
    }
    if (!(self = calloc(1, sizeof(*self)))) {
        close(fd);
        return -ENOMEM;
    }
    self->fd = fd;
    n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
        /* The lock holds without the pid: only the message of a second process is poorer. */
    }
    *ret_lock = self;
    return 0;
}

void sc_dirlock_release(sc_dirlock_t **lock)
{
    if (!lock || !*lock)
        return;
    close((*lock)->fd); /* drops the flock */
    free(*lock);
    *lock = NULL;
}
