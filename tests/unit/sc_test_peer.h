/* Fake agents for unit tests of a real sc_coord on loopback: a ZMQ DEALER per member that
 * speaks the wire protocol (proto/README.md) the way an agent does.
 *
 *   void *d = sc_tp_dealer(zctx, port);      connected to the coordinator's ROUTER
 *   sc_tp_hello(d, "vm_1", "boot-1", 1, 1, term);
 *   sc_tp_doc(d, "vm_1", term, seq, body, observed_wall_ms);
 *   sc_tp_send(d, msg);                      any message (consumed)
 *   msg = sc_tp_recv(d);                     the next message for it, or NULL
 *   sc_tp_rm_state(dir);                     a coordinator's state directory removed
 *   sc_tp_state_event(c, id, key, buf, len)  a field of an event in a coordinator's state */
#ifndef SC_TEST_PEER_H
#define SC_TEST_PEER_H

#include "sc_coord.h"
#include "sc_msg.h"
#include "sc_test.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

/* Removes a coordinator's state directory dir and what a coordinator leaves in it. */
static inline void sc_tp_rm_state(const char *dir)
{
    static const char *const files[] = {"coordinator.db", "coordinator.db-wal",
                                        "coordinator.db-shm", "coordinator.lock", "control.sock"};
    char p[256];

    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
}

/* A DEALER connected to tcp://127.0.0.1:port (linger 0). */
static inline void *sc_tp_dealer(void *zctx, int port)
{
    char ep[64];
    void *d = zmq_socket(zctx, ZMQ_DEALER);
    int zero = 0;

    snprintf(ep, sizeof(ep), "tcp://127.0.0.1:%d", port);
    if (!d || zmq_setsockopt(d, ZMQ_LINGER, &zero, sizeof(zero)) < 0 || zmq_connect(d, ep) < 0)
        SC_FAILF("dealer to %s: %s", ep, zmq_strerror(zmq_errno()));
    return d;
}

/* Encodes and sends m (consumed). */
static inline void sc_tp_send(void *d, sc_msg_t *m)
{
    char *buf = NULL;
    size_t len = 0;

    if (sc_msg_encode(m, &buf, &len) < 0 || zmq_send(d, buf, len, 0) < 0)
        SC_FAILF("send %s from %s", sc_msg_type_name(m->type), m->from);
    free(buf);
    sc_msg_destroy(&m);
}

/* A hello of member name (agent process boot_id) in its fault and update domain, with the
 * capabilities of today's agent that the coordinator reads. */
static inline void sc_tp_hello(void *d, const char *name, const char *boot_id, int fd, int ud,
                               uint64_t term)
{
    sc_msg_t *h = NULL;

    if (sc_msg_new(SC_MSG_HELLO, name, term, 1, &h) < 0) {
        SC_FAILF("hello");
        return;
    }
    snprintf(h->hello.name, sizeof(h->hello.name), "%s", name);
    h->hello.fault_domain = fd;
    h->hello.update_domain = ud;
    snprintf(h->hello.agent_version, sizeof(h->hello.agent_version), "0.1.0");
    h->hello.proto_min = 1;
    h->hello.proto_max = 1;
    snprintf(h->hello.boot_id, sizeof(h->hello.boot_id), "%s", boot_id);
    h->hello.incarnation = -1;
    sc_msg_add_capability(h, SC_CAP_HOOKS); /* what today's agent says */
    sc_msg_add_capability(h, SC_CAP_ORDER_UNTIL);
    sc_tp_send(d, h);
}

/* A document from member from: the IMDS JSON body, read at observed (wall ms). */
static inline void sc_tp_doc(void *d, const char *from, uint64_t term, uint64_t seq,
                             const char *body, int64_t observed)
{
    sc_msg_t *m = NULL;
    char err[256] = "";

    if (sc_msg_new(SC_MSG_DOCUMENT, from, term, seq, &m) < 0 ||
        sc_doc_parse(body, strlen(body), &m->document.document, err, sizeof(err)) < 0) {
        SC_FAILF("document: %s", err);
        sc_msg_destroy(&m);
        return;
    }
    m->document.incarnation = m->document.document->incarnation;
    m->document.observed_at_ms = observed;
    sc_tp_send(d, m);
}

/* The next message waiting for d, decoded (the caller's), or NULL when none waits. */
static inline sc_msg_t *sc_tp_recv(void *d)
{
    char buf[65536];
    sc_msg_t *m = NULL;
    int n = zmq_recv(d, buf, sizeof(buf), ZMQ_DONTWAIT);

    if (n <= 0 || (size_t)n > sizeof(buf) || sc_msg_decode(buf, (size_t)n, &m, NULL, 0) < 0)
        return NULL;
    return m;
}

/* Field key ("phase", "start_kind", ...) of event id in coordinator c's state
 * (sc_coord_state_json), copied to buf: "" when the state does not hold the event. */
static inline const char *sc_tp_state_event(sc_coord_t *c, const char *id, const char *key,
                                            char *buf, size_t len)
{
    json_object *st = sc_coord_state_json(c), *evs = NULL;

    buf[0] = '\0';
    if (st && json_object_object_get_ex(st, "events", &evs))
        for (size_t i = 0; i < json_object_array_length(evs); i++) {
            json_object *e = json_object_array_get_idx(evs, i), *ev = NULL;
            const char *v = json_object_get_string(json_object_object_get(e, key));
            if (json_object_object_get_ex(e, "event", &ev) &&
                strcmp(json_object_get_string(json_object_object_get(ev, "EventId")), id) == 0)
                snprintf(buf, len, "%s", v ? v : "");
        }
    json_object_put(st);
    return buf;
}

#endif
