/* sc_curve: CurveZMQ key pairs, the members' keyring, the ZAP handler, socket setup. */
#include "sc_curve.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zmq.h>

#include "sc_error.h"
#include "sc_msg.h"

#define S_ZAP_ENDPOINT "inproc://zeromq.zap.01"

bool sc_curve_available(void)
{
    return zmq_has("curve") != 0;
}

bool sc_curve_key_valid(const char *s)
{
    uint8_t bin[32];

    return s && strnlen(s, SC_CURVE_KEY_Z85_LEN + 1) == SC_CURVE_KEY_Z85_LEN &&
           zmq_z85_decode(bin, s) != NULL;
}

int sc_curve_keygen(sc_curve_keypair_t *ret_kp)
{
    sc_curve_keypair_t kp;

    if (!ret_kp)
        return -EINVAL;
    if (!sc_curve_available())
        return -ENOTSUP;
    if (zmq_curve_keypair(kp.public_z85, kp.secret_z85) != 0)
        return -EIO;
    *ret_kp = kp;
    return 0;
}

/* Reads a whole small file opened as fd into a NUL-terminated buffer (caller's). */
static int s_read_fd(int fd, size_t max, char **ret_buf, size_t *ret_len)
{
    char *buf = malloc(max + 2);
    size_t len = 0;

    if (!buf)
        return -ENOMEM;
    for (;;) {
        ssize_t n = read(fd, buf + len, max + 1 - len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int rc = -errno;

            free(buf);
            return rc;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > max) {
            free(buf);
            return SC_E_TOO_BIG;
        }
    }
    buf[len] = '\0';
    *ret_buf = buf;
    *ret_len = len;
    return 0;
}

static char *s_trim(char *s)
{
    char *e;

    while (*s == ' ' || *s == '\t' || *s == '\r')
        s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        *--e = '\0';
    return s;
}

int sc_curve_keypair_load(const char *path, sc_curve_keypair_t *ret_kp, char *err, size_t errlen)
{
    sc_curve_keypair_t kp = {{0}, {0}};
    char derived[SC_CURVE_KEY_Z85_LEN + 1];
    struct stat st;
    char *buf = NULL, *line, *save = NULL;
    size_t len = 0;
    unsigned lineno = 0;
    int fd, rc;

    if (!path || !ret_kp)
        return -EINVAL;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        rc = -errno;
        return sc_errf(err, errlen, rc, "%s: cannot open: %s", path, strerror(-rc));
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return sc_errf(err, errlen, SC_E_PARSE, "%s: not a regular file", path);
    }
    if (st.st_mode & 077) {
        close(fd);
        return sc_errf(err, errlen, -EPERM,
                       "%s: mode %04o lets others read the secret key; chmod 600 it", path,
                       (unsigned)(st.st_mode & 07777));
    }
    rc = s_read_fd(fd, SC_KEYFILE_MAX_BYTES, &buf, &len);
    close(fd);
    if (rc < 0) {
        return sc_errf(err, errlen, rc, "%s: %s", path,
                       rc == SC_E_TOO_BIG ? "larger than 4096 bytes" : sc_strerror(rc));
    }
    if (memchr(buf, '\0', len)) {
        rc = sc_errf(err, errlen, SC_E_PARSE, "%s: contains a NUL byte", path);
        goto out;
    }
    for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *eq, *key, *val, *dst;

        lineno++;
        line = s_trim(line);
        if (!*line || *line == '#')
            continue;
        if (!(eq = strchr(line, '='))) {
            rc = sc_errf(err, errlen, SC_E_PARSE,
                         "%s:%u: expected \"public = KEY\" or \"secret = KEY\"", path, lineno);
            goto out;
        }
        *eq = '\0';
        key = s_trim(line);
        val = s_trim(eq + 1);
        if (strcmp(key, "public") == 0) {
            dst = kp.public_z85;
        } else if (strcmp(key, "secret") == 0) {
            dst = kp.secret_z85;
        } else {
            rc = sc_errf(err, errlen, SC_E_PARSE,
                         "%s:%u: unknown key \"%.32s\" (expected public or secret)", path, lineno,
                         key);
            goto out;
        }
        if (dst[0]) {
            rc = sc_errf(err, errlen, SC_E_PARSE, "%s:%u: %s given twice", path, lineno, key);
            goto out;
        }
        if (!sc_curve_key_valid(val)) {
            rc = sc_errf(err, errlen, SC_E_PARSE, "%s:%u: %s is not a key (40 Z85 characters)",
                         path, lineno, key);
            goto out;
        }
        memcpy(dst, val, SC_CURVE_KEY_Z85_LEN + 1);
    }
    if (!kp.public_z85[0] || !kp.secret_z85[0]) {
        rc = sc_errf(err, errlen, SC_E_PARSE, "%s: missing %s key", path,
                     kp.public_z85[0] ? "secret" : "public");
        goto out;
    }
    if (zmq_curve_public(derived, kp.secret_z85) != 0 || strcmp(derived, kp.public_z85) != 0) {
        rc = sc_errf(err, errlen, SC_E_PARSE,
                     "%s: the public key does not belong to the secret key", path);
        goto out;
    }
    *ret_kp = kp;
    rc = 0;
out:
    if (buf) {
        /* the buffer held the secret key */
        memset(buf, 0, len);
        free(buf);
    }
    return rc;
}

int sc_curve_keypair_save(const char *path, const sc_curve_keypair_t *kp, char *err, size_t errlen)
{
    char text[256];
    int fd, n, rc = 0;

    if (!path || !kp || !sc_curve_key_valid(kp->public_z85) ||
        !sc_curve_key_valid(kp->secret_z85)) {
        return sc_errf(err, errlen, -EINVAL, "invalid key pair");
    }
    n = snprintf(text, sizeof(text),
                 "# schedcoord CURVE key pair. Keep it secret (mode 0600).\n"
                 "public = %s\nsecret = %s\n",
                 kp->public_z85, kp->secret_z85);
    if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0) {
        rc = -errno;
        return sc_errf(err, errlen, rc, "%s: cannot create: %s", path, strerror(-rc));
    }
    if (fchmod(fd, 0600) != 0 || write(fd, text, (size_t)n) != n || fsync(fd) != 0)
        rc = errno ? -errno : -EIO;
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    memset(text, 0, sizeof(text));
    if (rc < 0) {
        sc_errf(err, errlen, rc, "%s: cannot write: %s", path, strerror(-rc));
        unlink(path);
    }
    return rc;
}

/* ---------------------------------------------------------------- keyring */

typedef struct s_member {
    char name[SC_NAME_MAX + 1];         /* member name */
    char key[SC_CURVE_KEY_Z85_LEN + 1]; /* its public key, Z85 */
} s_member_t;

struct sc_keyring {
    s_member_t *members; /* members in file order */
    size_t n;            /* entries used */
    size_t cap;          /* entries allocated */
};

int sc_keyring_new(sc_keyring_t **ret_ring)
{
    sc_keyring_t *r;

    if (!ret_ring)
        return -EINVAL;
    if (!(r = calloc(1, sizeof(*r))))
        return -ENOMEM;
    *ret_ring = r;
    return 0;
}

void sc_keyring_destroy(sc_keyring_t **ring)
{
    if (!ring || !*ring)
        return;
    free((*ring)->members);
    free(*ring);
    *ring = NULL;
}

size_t sc_keyring_size(const sc_keyring_t *ring)
{
    return ring ? ring->n : 0;
}

const char *sc_keyring_find_key(const sc_keyring_t *ring, const char *public_z85)
{
    if (!ring || !public_z85)
        return NULL;
    for (size_t i = 0; i < ring->n; i++)
        if (strcmp(ring->members[i].key, public_z85) == 0)
            return ring->members[i].name;
    return NULL;
}

const char *sc_keyring_find_name(const sc_keyring_t *ring, const char *name)
{
    if (!ring || !name)
        return NULL;
    for (size_t i = 0; i < ring->n; i++)
        if (strcmp(ring->members[i].name, name) == 0)
            return ring->members[i].key;
    return NULL;
}

int sc_keyring_add(sc_keyring_t *ring, const char *name, const char *public_z85, char *err,
                   size_t errlen)
{
    if (!ring)
        return -EINVAL;
    if (!sc_msg_name_valid(name)) {
        return sc_errf(err, errlen, -EINVAL,
                       "\"%.64s\" is not a member name (1..%d of [A-Za-z0-9._-])", name ? name : "",
                       SC_NAME_MAX);
    }
    if (!sc_curve_key_valid(public_z85)) {
        return sc_errf(err, errlen, -EINVAL, "%s: not a public key (40 Z85 characters)", name);
    }
    if (sc_keyring_find_name(ring, name)) {
        return sc_errf(err, errlen, -EEXIST, "%s: listed twice", name);
    }
    if (sc_keyring_find_key(ring, public_z85)) {
        return sc_errf(err, errlen, -EEXIST, "%s: same key as %s", name,
                       sc_keyring_find_key(ring, public_z85));
    }
    if (ring->n >= SC_KEYRING_MAX) {
        return sc_errf(err, errlen, SC_E_TOO_BIG, "more than %d members", SC_KEYRING_MAX);
    }
    if (ring->n == ring->cap) {
        size_t cap = ring->cap ? ring->cap * 2 : 8;
        s_member_t *m = realloc(ring->members, cap * sizeof(*m));

        if (!m)
            return -ENOMEM;
        ring->members = m;
        ring->cap = cap;
    }
    snprintf(ring->members[ring->n].name, sizeof(ring->members[0].name), "%s", name);
    memcpy(ring->members[ring->n].key, public_z85, SC_CURVE_KEY_Z85_LEN + 1);
    ring->n++;
    return 0;
}

int sc_keyring_dup(const sc_keyring_t *ring, sc_keyring_t **ret_copy)
{
    sc_keyring_t *c;

    if (!ring || !ret_copy)
        return -EINVAL;
    if (!(c = calloc(1, sizeof(*c))))
        return -ENOMEM;
    if (ring->n) {
        if (!(c->members = malloc(ring->n * sizeof(*c->members)))) {
            free(c);
            return -ENOMEM;
        }
        memcpy(c->members, ring->members, ring->n * sizeof(*c->members));
    }
    c->n = c->cap = ring->n;
    *ret_copy = c;
    return 0;
}

int sc_keyring_load(const char *path, sc_keyring_t **ret_ring, char *err, size_t errlen)
{
    sc_keyring_t *ring = NULL;
    char *buf = NULL, *p, why[256];
    size_t len = 0;
    unsigned lineno = 0;
    int fd, rc;

    if (!path || !ret_ring)
        return -EINVAL;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        rc = -errno;
        return sc_errf(err, errlen, rc, "%s: cannot open: %s", path, strerror(-rc));
    }
    rc = s_read_fd(fd, SC_KEYRING_MAX_BYTES, &buf, &len);
    close(fd);
    if (rc < 0) {
        return sc_errf(err, errlen, rc, "%s: %s", path,
                       rc == SC_E_TOO_BIG ? "larger than 1 MiB" : sc_strerror(rc));
    }
    if (memchr(buf, '\0', len)) {
        rc = sc_errf(err, errlen, SC_E_PARSE, "%s: contains a NUL byte", path);
        goto out;
    }
    if ((rc = sc_keyring_new(&ring)) < 0)
        goto out;
    for (p = buf; p && *p;) {
        char *nl = strchr(p, '\n'), *name, *key, *extra, *save = NULL;

        if (nl)
            *nl = '\0';
        lineno++;
        name = strtok_r(p, " \t\r", &save);
        p = nl ? nl + 1 : NULL;
        if (!name || name[0] == '#')
            continue;
        key = strtok_r(NULL, " \t\r", &save);
        extra = strtok_r(NULL, " \t\r", &save);
        if (!key || (extra && extra[0] != '#')) {
            rc = sc_errf(err, errlen, SC_E_PARSE, "%s:%u: expected \"NAME PUBLIC_KEY\"", path,
                         lineno);
            goto out;
        }
        if ((rc = sc_keyring_add(ring, name, key, why, sizeof(why))) < 0) {
            sc_errf(err, errlen, rc, "%s:%u: %s", path, lineno, why);
            if (rc != -ENOMEM && rc != SC_E_TOO_BIG)
                rc = SC_E_PARSE;
            goto out;
        }
    }
    if (ring->n == 0) {
        rc = sc_errf(err, errlen, SC_E_PARSE, "%s: no member listed", path);
        goto out;
    }
    *ret_ring = ring;
    ring = NULL;
    rc = 0;
out:
    free(buf);
    sc_keyring_destroy(&ring);
    return rc;
}

/* ---------------------------------------------------------------- ZAP handler */

struct sc_zap {
    void *zctx;            /* the context (borrowed) */
    void *rep;             /* ZAP socket, owned by the thread once started */
    void *ctl;             /* our end of the stop pipe */
    char ctl_endpoint[64]; /* inproc endpoint of the stop pipe */
    sc_keyring_t *ring;    /* our copy of the keyring */
    sc_zap_cb cb;          /* decision callback, may be NULL */
    void *cb_data;         /* its argument */
    pthread_t thread;      /* the handler thread */
    bool started;          /* thread is running */
    atomic_uint_fast64_t counts[SC_ZAP_DECISION_MAX]; /* decisions so far */
};

const char *sc_zap_decision_name(sc_zap_decision_t decision)
{
    static const char *const names[SC_ZAP_DECISION_MAX] = {"accepted", "refused_key",
                                                           "refused_mechanism", "malformed"};

    return (unsigned)decision < SC_ZAP_DECISION_MAX ? names[decision] : "?";
}

/* Receives every frame of one message into frames (at most max, the rest dropped). */
static int s_recv_frames(void *sock, zmq_msg_t *frames, int max, int *ret_n)
{
    int n = 0, more;

    do {
        zmq_msg_t tmp, *f = n < max ? &frames[n] : &tmp;

        zmq_msg_init(f);
        if (zmq_msg_recv(f, sock, 0) < 0) {
            zmq_msg_close(f);
            for (int i = 0; i < n && i < max; i++)
                zmq_msg_close(&frames[i]);
            return -1;
        }
        more = zmq_msg_more(f);
        if (f == &tmp)
            zmq_msg_close(&tmp);
        n++;
    } while (more);
    *ret_n = n;
    return 0;
}

static void s_send_str(void *sock, const void *data, size_t len, bool more)
{
    zmq_send(sock, data, len, more ? ZMQ_SNDMORE : 0);
}

static void s_copy_frame(char *dst, size_t size, zmq_msg_t *f)
{
    size_t n = zmq_msg_size(f);

    if (n >= size)
        n = size - 1;
    memcpy(dst, zmq_msg_data(f), n);
    dst[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)dst[i] < 0x20 || (unsigned char)dst[i] >= 0x7f)
            dst[i] = '?';
}

/* Handles one ZAP request (RFC 27) and sends the reply. */
static void s_zap_handle(sc_zap_t *z)
{
    enum { MAXF = 8 };
    zmq_msg_t f[MAXF];
    int n = 0;
    char mech[16] = "", addr[64] = "", key[SC_CURVE_KEY_Z85_LEN + 1] = "";
    const char *name = NULL;
    sc_zap_decision_t decision;
    const char *code = "400", *text = "refused";

    if (s_recv_frames(z->rep, f, MAXF, &n) < 0)
        return;
    if (n < 6 || zmq_msg_size(&f[0]) != 3 || memcmp(zmq_msg_data(&f[0]), "1.0", 3) != 0) {
        decision = SC_ZAP_REFUSED_MALFORMED;
    } else {
        s_copy_frame(mech, sizeof(mech), &f[5]);
        s_copy_frame(addr, sizeof(addr), &f[3]);
        if (strcmp(mech, "CURVE") != 0) {
            decision = SC_ZAP_REFUSED_MECH;
        } else if (n != 7 || zmq_msg_size(&f[6]) != 32) {
            decision = SC_ZAP_REFUSED_MALFORMED;
        } else {
            zmq_z85_encode(key, zmq_msg_data(&f[6]), 32);
            name = sc_keyring_find_key(z->ring, key);
            decision = name ? SC_ZAP_ACCEPTED : SC_ZAP_REFUSED_KEY;
        }
    }
    if (decision == SC_ZAP_ACCEPTED) {
        code = "200";
        text = "OK";
    } else if (decision == SC_ZAP_REFUSED_KEY) {
        text = "unknown key";
    } else if (decision == SC_ZAP_REFUSED_MECH) {
        text = "mechanism not allowed";
    }
    atomic_fetch_add(&z->counts[decision], 1);
    if (z->cb)
        z->cb(z->cb_data, decision, mech, addr, name, key);
    /* reply: version, request id, status code, status text, user id, metadata */
    s_send_str(z->rep, "1.0", 3, true);
    if (n >= 2)
        s_send_str(z->rep, zmq_msg_data(&f[1]), zmq_msg_size(&f[1]), true);
    else
        s_send_str(z->rep, "", 0, true);
    s_send_str(z->rep, code, 3, true);
    s_send_str(z->rep, text, strlen(text), true);
    s_send_str(z->rep, name ? name : "", name ? strlen(name) : 0, true);
    s_send_str(z->rep, "", 0, false);
    for (int i = 0; i < n && i < MAXF; i++)
        zmq_msg_close(&f[i]);
}

static void *s_zap_thread(void *arg)
{
    sc_zap_t *z = arg;
    void *stop = zmq_socket(z->zctx, ZMQ_PAIR);

    if (stop && zmq_connect(stop, z->ctl_endpoint) == 0) {
        /* tell the starter we are up */
        zmq_send(stop, "", 0, 0);
        for (;;) {
            zmq_pollitem_t items[2] = {{z->rep, 0, ZMQ_POLLIN, 0}, {stop, 0, ZMQ_POLLIN, 0}};

            if (zmq_poll(items, 2, -1) < 0) {
                if (zmq_errno() == EINTR)
                    continue;
                break;
            }
            if (items[1].revents & ZMQ_POLLIN)
                break;
            if (items[0].revents & ZMQ_POLLIN)
                s_zap_handle(z);
        }
    }
    if (stop) {
        int zero = 0;

        zmq_setsockopt(stop, ZMQ_LINGER, &zero, sizeof(zero));
        zmq_close(stop);
    }
    return NULL;
}

int sc_zap_start(void *zctx, const sc_keyring_t *ring, sc_zap_cb cb, void *cb_data,
                 sc_zap_t **ret_zap)
{
    sc_zap_t *z;
    int rc, zero = 0;
    char byte;

    if (!zctx || !ring || !ret_zap)
        return -EINVAL;
    if (!sc_curve_available())
        return -ENOTSUP;
    if (!(z = calloc(1, sizeof(*z))))
        return -ENOMEM;
    z->zctx = zctx;
    z->cb = cb;
    z->cb_data = cb_data;
    for (int i = 0; i < SC_ZAP_DECISION_MAX; i++)
        atomic_init(&z->counts[i], 0);
    snprintf(z->ctl_endpoint, sizeof(z->ctl_endpoint), "inproc://sc-zap-ctl-%p", (void *)z);
    if ((rc = sc_keyring_dup(ring, &z->ring)) < 0)
        goto fail;
    if (!(z->rep = zmq_socket(zctx, ZMQ_REP)) || !(z->ctl = zmq_socket(zctx, ZMQ_PAIR))) {
        rc = -zmq_errno();
        goto fail;
    }
    zmq_setsockopt(z->rep, ZMQ_LINGER, &zero, sizeof(zero));
    zmq_setsockopt(z->ctl, ZMQ_LINGER, &zero, sizeof(zero));
    if (zmq_bind(z->rep, S_ZAP_ENDPOINT) != 0 || zmq_bind(z->ctl, z->ctl_endpoint) != 0) {
        rc = -zmq_errno();
        goto fail;
    }
    if ((rc = pthread_create(&z->thread, NULL, s_zap_thread, z)) != 0) {
        rc = -rc;
        goto fail;
    }
    z->started = true;
    /* wait until the thread listens, so no handshake finds the handler missing */
    if (zmq_recv(z->ctl, &byte, sizeof(byte), 0) < 0) {
        rc = -zmq_errno();
        goto fail;
    }
    *ret_zap = z;
    return 0;
fail:
    sc_zap_stop(&z);
    return rc;
}

void sc_zap_get_stats(const sc_zap_t *zap, sc_zap_stats_t *ret_stats)
{
    sc_zap_t *z = (sc_zap_t *)(uintptr_t)zap;

    if (!ret_stats)
        return;
    if (!z) {
        *ret_stats = (sc_zap_stats_t){0};
        return;
    }
    ret_stats->accepted = atomic_load(&z->counts[SC_ZAP_ACCEPTED]);
    ret_stats->refused_key = atomic_load(&z->counts[SC_ZAP_REFUSED_KEY]);
    ret_stats->refused_mechanism = atomic_load(&z->counts[SC_ZAP_REFUSED_MECH]);
    ret_stats->malformed = atomic_load(&z->counts[SC_ZAP_REFUSED_MALFORMED]);
}

void sc_zap_stop(sc_zap_t **zap)
{
    sc_zap_t *z;

    if (!zap || !*zap)
        return;
    z = *zap;
    if (z->started) {
        zmq_send(z->ctl, "", 0, ZMQ_DONTWAIT);
        pthread_join(z->thread, NULL);
    }
    if (z->rep)
        zmq_close(z->rep);
    if (z->ctl)
        zmq_close(z->ctl);
    sc_keyring_destroy(&z->ring);
    free(z);
    *zap = NULL;
}

/* ---------------------------------------------------------------- sockets */

int sc_sock_insecure_setup(void *sock)
{
    int64_t max = SC_MSG_MAX_BYTES;

    if (!sock)
        return -EINVAL;
    if (zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &max, sizeof(max)) != 0)
        return -zmq_errno();
    return 0;
}

int sc_curve_peer_setup(void *sock, const sc_curve_keypair_t *kp, const sc_keyring_t *ring,
                        const char *peer, char *err, size_t errlen)
{
    const char *pub;

    if (!kp)
        return sc_sock_insecure_setup(sock);
    if (!(pub = sc_keyring_find_name(ring, peer))) {
        snprintf(err, errlen, "--keys: member %s has no key in the keyring", peer);
        return SC_E_CONFIG;
    }
    return sc_curve_client_setup(sock, kp, pub);
}

int sc_curve_server_setup(void *sock, const sc_curve_keypair_t *kp, const sc_zap_t *zap)
{
    int one = 1, rc;

    if (!sock || !kp || !zap || !sc_curve_key_valid(kp->secret_z85) ||
        !sc_curve_key_valid(kp->public_z85))
        return -EINVAL;
    if ((rc = sc_sock_insecure_setup(sock)) < 0)
        return rc;
    if (zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &one, sizeof(one)) != 0 ||
        zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, kp->secret_z85, SC_CURVE_KEY_Z85_LEN + 1) != 0 ||
        zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, kp->public_z85, SC_CURVE_KEY_Z85_LEN + 1) != 0 ||
        zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, SC_ZAP_DOMAIN, strlen(SC_ZAP_DOMAIN)) != 0)
        return -zmq_errno();
    return 0;
}

int sc_curve_client_setup(void *sock, const sc_curve_keypair_t *kp, const char *server_public_z85)
{
    int rc;

    if (!sock || !kp || !sc_curve_key_valid(kp->secret_z85) ||
        !sc_curve_key_valid(kp->public_z85) || !sc_curve_key_valid(server_public_z85))
        return -EINVAL;
    if ((rc = sc_sock_insecure_setup(sock)) < 0)
        return rc;
    if (zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, server_public_z85, SC_CURVE_KEY_Z85_LEN + 1) !=
            0 ||
        zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, kp->public_z85, SC_CURVE_KEY_Z85_LEN + 1) != 0 ||
        zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, kp->secret_z85, SC_CURVE_KEY_Z85_LEN + 1) != 0)
        return -zmq_errno();
    return 0;
}
