/* sc_net: small facts about network endpoints. */
#ifndef SC_NET_H
#define SC_NET_H

#include <stdbool.h>

/* Whether endpoint ("tcp://HOST:PORT" or "HOST:PORT") names this machine only: a host in
 * 127.0.0.0/8, "localhost", "::1" or "[::1]". Used to keep plain-text ZeroMQ (--insecure)
 * to a single machine. NULL or an endpoint without a port is not local. */
bool sc_endpoint_is_local(const char *endpoint);

/* Makes room for need open files: raises this process's soft RLIMIT_NOFILE to need (or to the
 * hard limit, if that is lower) when it is below need; never lowers it. Returns the soft limit
 * now in force (which the caller compares with need), or -errno. A daemon talking to every
 * member of a big set needs more than the usual soft limit of 1024 (systemd's default). */
long sc_nofile_raise(long need);

#endif
