/* sc_identity: this VM's identity from IMDS compute metadata (name, fault and update domain),
 * waited for at start by both daemons: IMDS may not answer yet right after boot. */
#ifndef SC_IDENTITY_H
#define SC_IDENTITY_H

#include <signal.h>
#include <stdint.h>

#include "sc_imds.h"

/* Told of a failed try before the wait for the next: rc the failure (SC_E_* or negative
 * errno), retry_ms the wait, why the reason (IMDS's answer or the transport's error; "" when
 * none). The caller logs it: this library does not. */
typedef void sc_identity_retry_fn(void *arg, int rc, int64_t retry_ms, const char *why);

/* GETs .../metadata/instance/compute from base_url (each request at most timeout_ms), again
 * with backoff (0.5 s doubling to 30 s, or the server's Retry-After) until it answers; each
 * new kind of failure (an rc other than the last one) is handed to on_retry(arg, ...) once
 * (on_retry may be NULL). *stop ends the wait within 100 ms and a request in progress within
 * about a second. 0 and *ret_compute; -EINTR when *stop was set first; another negative errno
 * if the client cannot be made (e.g. a bad URL). */
int sc_identity_fetch(const char *base_url, long timeout_ms, volatile sig_atomic_t *stop,
                      sc_identity_retry_fn *on_retry, void *arg, sc_compute_t *ret_compute);

/* path with every "{name}" replaced by name, into out (size outlen): so that one config file
 * serves every VM, e.g. key = /etc/schedcoord/{name}.key. 0, or -ENAMETOOLONG. */
int sc_identity_expand(const char *path, const char *name, char *out, size_t outlen);

#endif
