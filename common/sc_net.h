/* sc_net: small facts about network endpoints. */
#ifndef SC_NET_H
#define SC_NET_H

#include <stdbool.h>

/* Whether endpoint ("tcp://HOST:PORT" or "HOST:PORT") names this machine only: a host in
 * 127.0.0.0/8, "localhost", "::1" or "[::1]". Used to keep plain-text ZeroMQ (--insecure)
 * to a single machine. NULL or an endpoint without a port is not local. */
bool sc_endpoint_is_local(const char *endpoint);

#endif
