/* Helpers of the benchmarks that stand in for agents (bench_coord_load, bench_coord_approve):
 * reading what the coordinator sends. Header-only. */
#ifndef SC_BENCH_MSG_H
#define SC_BENCH_MSG_H

#include <stdint.h>
#include <zmq.h>

#include "sc_msg.h"

/* The next message pending on sock, decoded, or NULL when none is (undecodable ones are
 * skipped). Raises *term to the message's term. The caller sc_msg_destroy()s it. */
static inline sc_msg_t *bench_recv(void *sock, uint64_t *term)
{
    char buf[65536];
    int len;

    while ((len = zmq_recv(sock, buf, sizeof(buf), ZMQ_DONTWAIT)) >= 0) {
        sc_msg_t *m = NULL;

        if (len > (int)sizeof(buf) || sc_msg_decode(buf, (size_t)len, &m, NULL, 0) < 0)
            continue;
        if (m->term > *term)
            *term = m->term;
        return m;
    }
    return NULL;
}

#endif
