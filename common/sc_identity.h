/* sc_identity: this VM's identity from IMDS compute metadata (name, fault and update domain),
 * waited for at start by both daemons: IMDS may not answer yet right after boot. */
#ifndef SC_IDENTITY_H
#define SC_IDENTITY_H

#include <signal.h>

#include "sc_imds.h"

/* GETs .../metadata/instance/compute from base_url (each request at most timeout_ms), again
 * with backoff (0.5 s doubling to 30 s, or the server's Retry-After) until it answers; each
 * new kind of failure is logged once as a warning. *stop ends the wait within 100 ms and a
 * request in progress within about a second. 0 and *ret_compute; -EINTR when *stop was set
 * first; another negative errno if the client cannot be made (e.g. a bad URL). */
int sc_identity_fetch(const char *base_url, long timeout_ms, volatile sig_atomic_t *stop,
                      sc_compute_t *ret_compute);

/* path with every "{name}" replaced by name, into out (size outlen): so that one config file
 * serves every VM, e.g. key = /etc/schedcoord/{name}.key. 0, or -ENAMETOOLONG. */
int sc_identity_expand(const char *path, const char *name, char *out, size_t outlen);

#endif
