/* sc_dirlock: one process per state directory.
 *
 * Two agents (or two coordinators) started on the same state directory would both write its
 * database: the second would mark the first one's running hooks interrupted, or lead a second
 * term over the same store. A daemon takes the directory's lock file before it opens anything
 * there and holds it until it exits; the kernel drops it when the process dies (kill -9
 * included). The descriptor is close-on-exec, so hooks never inherit it. */
#ifndef SC_DIRLOCK_H
#define SC_DIRLOCK_H

#include <stddef.h>

typedef struct sc_dirlock sc_dirlock_t;

/* Locks DIR/NAME (created 0600 if missing) and writes our pid into it. 0 with *ret_lock, or
 * -EBUSY when another process holds it (err names the file and that process's pid), or
 * -errno when the file cannot be opened (err says which and why). */
int sc_dirlock_acquire(const char *dir, const char *name, sc_dirlock_t **ret_lock, char *err,
                       size_t errlen);

/* Releases the lock (the file stays) and frees *lock; NULL-safe. */
void sc_dirlock_release(sc_dirlock_t **lock);

#endif
