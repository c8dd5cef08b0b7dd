/* sc_curve: key files, keyring, and real CurveZMQ on 127.0.0.1 with our ZAP handler:
 * a known client gets through with its member name as User-Id; unknown keys, plain text,
 * a wrong server key and a tampered message do not. */
#include "sc_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zmq.h>

#include "sc_curve.h"
#include "sc_keygen.h"
#include "sc_error.h"
#include "sc_time.h"

static char s_dir[512];

static const char *s_path(const char *name)
{
    static char p[1024];

    snprintf(p, sizeof(p), "%s/%s", s_dir, name);
    return p;
}

static void s_write(const char *name, const char *text, mode_t mode)
{
    sc_test_write_file(s_path(name), text, mode);
}

SC_TEST(keypair_files)
{
    sc_curve_keypair_t kp, back, other;
    char err[512] = "", text[512];
    struct stat st;

    SC_REQUIRE(sc_curve_available());
    SC_REQUIRE(sc_curve_keygen(&kp) == 0 && sc_curve_keygen(&other) == 0);
    SC_CHECK(sc_curve_key_valid(kp.public_z85) && sc_curve_key_valid(kp.secret_z85));
    SC_CHECK(!sc_curve_key_valid("short"));
    unlink(s_path("a.key"));
    SC_CHECK_INT(sc_curve_keypair_save(s_path("a.key"), &kp, err, sizeof(err)), 0);
    SC_CHECK(stat(s_path("a.key"), &st) == 0 && (st.st_mode & 0777) == 0600);
    SC_CHECK_INT(sc_curve_keypair_load(s_path("a.key"), &back, err, sizeof(err)), 0);
    SC_CHECK_STR(back.public_z85, kp.public_z85);
    SC_CHECK_STR(back.secret_z85, kp.secret_z85);
    /* never overwritten */
    SC_CHECK_INT(sc_curve_keypair_save(s_path("a.key"), &other, err, sizeof(err)), -EEXIST);

    /* bad files */
    SC_CHECK_INT(sc_curve_keypair_load(s_path("none.key"), &back, err, sizeof(err)), -ENOENT);
    SC_CHECK(strstr(err, "none.key: cannot open") != NULL);
    snprintf(text, sizeof(text), "public = %s\nsecret = %s\n", kp.public_z85, kp.secret_z85);
    s_write("open.key", text, 0644);
    SC_CHECK_INT(sc_curve_keypair_load(s_path("open.key"), &back, err, sizeof(err)), -EPERM);
    SC_CHECK(strstr(err, "mode 0644 lets others read the secret key") != NULL);
    snprintf(text, sizeof(text), "public = %s\nsecret = %s\n", other.public_z85, kp.secret_z85);
    s_write("mismatch.key", text, 0600);
    SC_CHECK_INT(sc_curve_keypair_load(s_path("mismatch.key"), &back, err, sizeof(err)),
                 SC_E_PARSE);
    SC_CHECK(strstr(err, "public key does not belong to the secret key") != NULL);
    snprintf(text, sizeof(text), "public = %s\n", kp.public_z85);
    s_write("half.key", text, 0600);
    SC_CHECK_INT(sc_curve_keypair_load(s_path("half.key"), &back, err, sizeof(err)), SC_E_PARSE);
    SC_CHECK(strstr(err, "missing secret key") != NULL);
    s_write("junk.key", "# comment\npublic = not-a-key\n", 0600);
    SC_CHECK_INT(sc_curve_keypair_load(s_path("junk.key"), &back, err, sizeof(err)), SC_E_PARSE);
    SC_CHECK(strstr(err, "junk.key:2: public is not a key") != NULL);
    s_write("what.key", "colour = blue\n", 0600);
    SC_CHECK_INT(sc_curve_keypair_load(s_path("what.key"), &back, err, sizeof(err)), SC_E_PARSE);
    SC_CHECK(strstr(err, "what.key:1: unknown key \"colour\"") != NULL);
}

SC_TEST(keyring_files)
{
    sc_curve_keypair_t a, b;
    sc_keyring_t *ring = NULL;
    char err[512] = "", text[512];

    SC_REQUIRE(sc_curve_keygen(&a) == 0 && sc_curve_keygen(&b) == 0);
    snprintf(text, sizeof(text), "# members\n\nvm-0 %s\n  vm-1\t%s  # second\n", a.public_z85,
             b.public_z85);
    s_write("ring", text, 0644);
    SC_REQUIRE(sc_keyring_load(s_path("ring"), &ring, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_keyring_size(ring), 2);
    SC_CHECK_STR(sc_keyring_find_key(ring, b.public_z85), "vm-1");
    SC_CHECK_STR(sc_keyring_find_name(ring, "vm-0"), a.public_z85);
    SC_CHECK(sc_keyring_find_name(ring, "vm-2") == NULL);
    sc_keyring_destroy(&ring);
    SC_CHECK(ring == NULL);

    snprintf(text, sizeof(text), "vm-0 %s\nvm-0 %s\n", a.public_z85, b.public_z85);
    s_write("dup", text, 0644);
    SC_CHECK_INT(sc_keyring_load(s_path("dup"), &ring, err, sizeof(err)), SC_E_PARSE);
    SC_CHECK(strstr(err, "dup:2: vm-0: listed twice") != NULL);
    snprintf(text, sizeof(text), "vm-0 %s\nvm-1 %s\n", a.public_z85, a.public_z85);
    s_write("dupkey", text, 0644);
    SC_CHECK_INT(sc_keyring_load(s_path("dupkey"), &ring, err, sizeof(err)), SC_E_PARSE);
    SC_CHECK(strstr(err, "dupkey:2: vm-1: same key as vm-0") != NULL);
    s_write("bad", "vm 0 key\n", 0644);
    SC_CHECK_INT(sc_keyring_load(s_path("bad"), &ring, err, sizeof(err)), SC_E_PARSE);
    SC_CHECK(strstr(err, "bad:1: expected \"NAME PUBLIC_KEY\"") != NULL);
    s_write("badkey", "vm-0 abc\n", 0644);
    SC_CHECK_INT(sc_keyring_load(s_path("badkey"), &ring, err, sizeof(err)), SC_E_PARSE);
    SC_CHECK(strstr(err, "badkey:1: vm-0: not a public key") != NULL);
    s_write("empty", "# nobody\n", 0644);
    SC_CHECK_INT(sc_keyring_load(s_path("empty"), &ring, err, sizeof(err)), SC_E_PARSE);
    SC_CHECK(strstr(err, "no member listed") != NULL);
    SC_CHECK(ring == NULL);
}

SC_TEST(keygen_command)
{
    char out[600], name_key[600], line[256];
    char *argv[] = {"keygen", "--name", "vm-7", "--out", s_dir, NULL};
    char *bad[] = {"keygen", "--name", "bad name", NULL};
    sc_curve_keypair_t kp;
    char err[256];
    FILE *f;
    int fd, saved;

    snprintf(name_key, sizeof(name_key), "%s/vm-7.key", s_dir);
    unlink(name_key);
    snprintf(out, sizeof(out), "%s/keygen.out", s_dir);
    fflush(stdout);
    saved = dup(1);
    fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    SC_REQUIRE(saved >= 0 && fd >= 0);
    dup2(fd, 1);
    close(fd);
    SC_CHECK_INT(sc_keygen_main(5, argv), 0);
    SC_CHECK_INT(sc_keygen_main(5, argv), 1); /* exists: refused without --force */
    SC_CHECK_INT(sc_keygen_main(3, bad), 2);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    SC_CHECK_INT(sc_curve_keypair_load(name_key, &kp, err, sizeof(err)), 0);
    f = fopen(out, "r");
    SC_REQUIRE(f);
    SC_CHECK(fgets(line, sizeof(line), f) != NULL);
    fclose(f);
    line[strcspn(line, "\n")] = '\0';
    SC_CHECK(strncmp(line, "vm-7 ", 5) == 0 && strcmp(line + 5, kp.public_z85) == 0);
}

/* ---------------------------------------------------------------- live CURVE */

typedef struct {
    atomic_int accepted;    /* ZAP accepted */
    atomic_int refused_key; /* ZAP refused for the key */
    char last_name[64];     /* last accepted name */
    pthread_mutex_t lock;   /* guards last_name */
} s_zap_log_t;

static void s_zap_cb(void *data, sc_zap_decision_t d, const char *mech, const char *addr,
                     const char *name, const char *key)
{
    s_zap_log_t *log = data;

    (void)mech;
    (void)addr;
    (void)key;
    if (d == SC_ZAP_ACCEPTED) {
        pthread_mutex_lock(&log->lock);
        snprintf(log->last_name, sizeof(log->last_name), "%s", name);
        pthread_mutex_unlock(&log->lock);
        atomic_fetch_add(&log->accepted, 1);
    } else if (d == SC_ZAP_REFUSED_KEY) {
        atomic_fetch_add(&log->refused_key, 1);
    }
}

typedef struct {
    void *ctx;                  /* zmq context */
    sc_curve_keypair_t server;  /* server keys */
    sc_curve_keypair_t known;   /* a member's keys */
    sc_curve_keypair_t unknown; /* keys of nobody */
    sc_keyring_t *ring;         /* vm-0 = server, vm-1 = known */
    sc_zap_t *zap;              /* the handler */
    void *router;               /* the server socket */
    char endpoint[128];         /* where it listens */
    int port;                   /* its port */
    s_zap_log_t log;            /* ZAP decisions */
} s_net_t;

static int s_net_up(s_net_t *n)
{
    char err[256];
    size_t len = sizeof(n->endpoint);
    int zero = 0;

    memset(n, 0, sizeof(*n));
    pthread_mutex_init(&n->log.lock, NULL);
    if (sc_curve_keygen(&n->server) || sc_curve_keygen(&n->known) || sc_curve_keygen(&n->unknown) ||
        sc_keyring_new(&n->ring) ||
        sc_keyring_add(n->ring, "vm-0", n->server.public_z85, err, sizeof(err)) ||
        sc_keyring_add(n->ring, "vm-1", n->known.public_z85, err, sizeof(err)))
        return -1;
    n->ctx = zmq_ctx_new();
    if (!n->ctx)
        return -1;
    n->router = zmq_socket(n->ctx, ZMQ_ROUTER);
    zmq_setsockopt(n->router, ZMQ_LINGER, &zero, sizeof(zero));
    /* no ZAP handler yet: the server setup refuses to proceed */
    if (sc_curve_server_setup(n->router, &n->server, NULL) != -EINVAL)
        return -1;
    if (sc_zap_start(n->ctx, n->ring, s_zap_cb, &n->log, &n->zap) != 0 ||
        sc_curve_server_setup(n->router, &n->server, n->zap) != 0 ||
        zmq_bind(n->router, "tcp://127.0.0.1:*") != 0 ||
        zmq_getsockopt(n->router, ZMQ_LAST_ENDPOINT, n->endpoint, &len) != 0)
        return -1;
    n->port = atoi(strrchr(n->endpoint, ':') + 1);
    return 0;
}

static void s_net_down(s_net_t *n)
{
    if (n->router)
        zmq_close(n->router);
    sc_zap_stop(&n->zap);
    if (n->ctx)
        zmq_ctx_term(n->ctx);
    sc_keyring_destroy(&n->ring);
    pthread_mutex_destroy(&n->log.lock);
}

/* A DEALER client; kp NULL = plain text. */
static void *s_client(s_net_t *n, const sc_curve_keypair_t *kp, const char *server_key,
                      const char *endpoint)
{
    void *s = zmq_socket(n->ctx, ZMQ_DEALER);
    int zero = 0;

    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
    if (kp)
        sc_curve_client_setup(s, kp, server_key);
    else
        sc_sock_insecure_setup(s);
    zmq_connect(s, endpoint);
    return s;
}

/* Waits up to ms for one message on the router: returns the payload size (copied into
 * buf, NUL-terminated) and the User-Id, or -1. */
static int s_recv(s_net_t *n, int ms, char *buf, size_t size, char *user, size_t usize)
{
    zmq_pollitem_t it = {n->router, 0, ZMQ_POLLIN, 0};
    zmq_msg_t id, body;
    int len;
    const char *uid;

    if (zmq_poll(&it, 1, ms) <= 0)
        return -1;
    zmq_msg_init(&id);
    zmq_msg_init(&body);
    zmq_msg_recv(&id, n->router, 0);
    len = zmq_msg_recv(&body, n->router, 0);
    if (len >= 0) {
        snprintf(buf, size, "%.*s", len, (const char *)zmq_msg_data(&body));
        uid = zmq_msg_gets(&body, "User-Id");
        snprintf(user, usize, "%s", uid ? uid : "");
    }
    zmq_msg_close(&id);
    zmq_msg_close(&body);
    return len;
}

SC_TEST(known_client_delivered_with_user_id)
{
    s_net_t n;
    void *c;
    char buf[64], user[64];
    sc_zap_stats_t st;

    SC_REQUIRE(s_net_up(&n) == 0);
    c = s_client(&n, &n.known, n.server.public_z85, n.endpoint);
    SC_CHECK_INT(zmq_send(c, "hello", 5, 0), 5);
    SC_CHECK_INT(s_recv(&n, 5000, buf, sizeof(buf), user, sizeof(user)), 5);
    SC_CHECK_STR(buf, "hello");
    SC_CHECK_STR(user, "vm-1");
    sc_zap_get_stats(n.zap, &st);
    SC_CHECK_INT(st.accepted, 1);
    SC_CHECK_INT(st.refused_key, 0);
    SC_CHECK_STR(n.log.last_name, "vm-1");
    zmq_close(c);
    s_net_down(&n);
}

SC_TEST(unknown_key_refused)
{
    s_net_t n;
    void *c;
    char buf[64], user[64];
    sc_zap_stats_t st;

    SC_REQUIRE(s_net_up(&n) == 0);
    c = s_client(&n, &n.unknown, n.server.public_z85, n.endpoint);
    zmq_send(c, "intruder", 8, ZMQ_DONTWAIT);
    SC_CHECK_INT(s_recv(&n, 700, buf, sizeof(buf), user, sizeof(user)), -1);
    sc_zap_get_stats(n.zap, &st);
    SC_CHECK(st.refused_key >= 1);
    SC_CHECK_INT(st.accepted, 0);
    SC_CHECK(atomic_load(&n.log.refused_key) >= 1);
    zmq_close(c);
    s_net_down(&n);
}

/* Waits up to ms for the monitor to report a failed handshake: the event, or 0 on timeout. */
static int s_handshake_failure(void *mon, int ms)
{
    int64_t deadline = sc_mono_ms() + ms;

    for (int64_t left; (left = deadline - sc_mono_ms()) > 0;) {
        zmq_pollitem_t it = {mon, 0, ZMQ_POLLIN, 0};
        zmq_msg_t ev, addr;
        uint16_t id = 0;

        if (zmq_poll(&it, 1, (long)left) <= 0)
            return 0;
        zmq_msg_init(&ev);
        zmq_msg_init(&addr);
        if (zmq_msg_recv(&ev, mon, 0) >= 6)
            memcpy(&id, zmq_msg_data(&ev), sizeof(id));
        zmq_msg_recv(&addr, mon, 0);
        zmq_msg_close(&ev);
        zmq_msg_close(&addr);
        if (id & (ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                  ZMQ_EVENT_HANDSHAKE_FAILED_AUTH))
            return id;
    }
    return 0;
}

SC_TEST(plain_text_client_refused)
{
    s_net_t n;
    void *c, *mon;
    char buf[64], user[64];
    sc_zap_stats_t st;

    SC_REQUIRE(s_net_up(&n) == 0);
    /* Silence alone would also follow a client that never connected: watch the server's
     * handshake fail. */
    SC_REQUIRE(zmq_socket_monitor(n.router, "inproc://curve-mon",
                                  ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                      ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                      ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) == 0);
    mon = zmq_socket(n.ctx, ZMQ_PAIR);
    SC_REQUIRE(mon && zmq_connect(mon, "inproc://curve-mon") == 0);
    c = s_client(&n, NULL, NULL, n.endpoint);
    zmq_send(c, "plain", 5, ZMQ_DONTWAIT);
    SC_CHECK(s_handshake_failure(mon, 5000) != 0);
    SC_CHECK_INT(s_recv(&n, 700, buf, sizeof(buf), user, sizeof(user)), -1);
    sc_zap_get_stats(n.zap, &st);
    SC_CHECK_INT(st.accepted, 0);
    zmq_close(c);
    zmq_socket_monitor(n.router, NULL, 0);
    zmq_close(mon);
    s_net_down(&n);
}

SC_TEST(wrong_server_key_never_connects)
{
    s_net_t n;
    void *c;
    char buf[64], user[64];
    sc_zap_stats_t st;

    SC_REQUIRE(s_net_up(&n) == 0);
    /* a member's client that believes the server is someone else */
    c = s_client(&n, &n.known, n.unknown.public_z85, n.endpoint);
    zmq_send(c, "lost", 4, ZMQ_DONTWAIT);
    SC_CHECK_INT(s_recv(&n, 700, buf, sizeof(buf), user, sizeof(user)), -1);
    sc_zap_get_stats(n.zap, &st);
    SC_CHECK_INT(st.accepted, 0); /* the server could not even read its HELLO */
    zmq_close(c);
    s_net_down(&n);
}

/* A TCP relay between the client and the server that flips one byte of the next chunk the
 * client sends once `tamper` is set. */
typedef struct {
    int listen_fd;         /* relay's listening socket */
    int port;              /* its port */
    int server_port;       /* where to relay */
    atomic_int tamper;     /* 1: flip a byte of the next client chunk */
    atomic_int tampered;   /* a byte was flipped */
    atomic_int server_eof; /* the server closed the connection */
    atomic_int stop;       /* end the relay */
} s_relay_t;

static void *s_relay_thread(void *arg)
{
    s_relay_t *r = arg;
    struct sockaddr_in sa = {.sin_family = AF_INET};
    struct pollfd lp = {r->listen_fd, POLLIN, 0};
    int cfd = -1, sfd = -1;
    char buf[65536];

    while (!atomic_load(&r->stop) && poll(&lp, 1, 50) == 0)
        ;
    if (atomic_load(&r->stop) || (cfd = accept(r->listen_fd, NULL, NULL)) < 0)
        return NULL;
    sfd = socket(AF_INET, SOCK_STREAM, 0);
    sa.sin_port = htons((uint16_t)r->server_port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(sfd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
        goto out;
    while (!atomic_load(&r->stop)) {
        struct pollfd p[2] = {{cfd, POLLIN, 0}, {sfd, POLLIN, 0}};
        ssize_t k;

        if (poll(p, 2, 50) <= 0)
            continue;
        if (p[0].revents) {
            if ((k = read(cfd, buf, sizeof(buf))) <= 0)
                break;
            if (atomic_load(&r->tamper) && !atomic_load(&r->tampered)) {
                buf[k - 1] ^= 0x01; /* last byte of the box: ciphertext / MAC */
                atomic_store(&r->tampered, 1);
            }
            if (write(sfd, buf, (size_t)k) != k)
                break;
        }
        if (p[1].revents) {
            if ((k = read(sfd, buf, sizeof(buf))) <= 0) {
                atomic_store(&r->server_eof, 1);
                break;
            }
            if (write(cfd, buf, (size_t)k) != k)
                break;
        }
    }
out:
    close(cfd);
    if (sfd >= 0)
        close(sfd);
    return NULL;
}

SC_TEST(tampered_message_refused)
{
    s_net_t n;
    s_relay_t r = {0};
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t slen = sizeof(sa);
    pthread_t th;
    void *c;
    char buf[64], user[64], ep[64];
    int one = 1;

    SC_REQUIRE(s_net_up(&n) == 0);
    r.server_port = n.port;
    r.listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(r.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    SC_REQUIRE(bind(r.listen_fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    SC_REQUIRE(listen(r.listen_fd, 4) == 0);
    getsockname(r.listen_fd, (struct sockaddr *)&sa, &slen);
    r.port = ntohs(sa.sin_port);
    SC_REQUIRE(pthread_create(&th, NULL, s_relay_thread, &r) == 0);
    snprintf(ep, sizeof(ep), "tcp://127.0.0.1:%d", r.port);

    c = s_client(&n, &n.known, n.server.public_z85, ep);
    /* a first message proves the relay is transparent and finishes the handshake */
    SC_CHECK_INT(zmq_send(c, "one", 3, 0), 3);
    SC_CHECK_INT(s_recv(&n, 5000, buf, sizeof(buf), user, sizeof(user)), 3);
    SC_CHECK_STR(buf, "one");
    SC_CHECK_STR(user, "vm-1");
    /* the second is altered in flight: the server must drop it and the connection */
    atomic_store(&r.tamper, 1);
    SC_CHECK_INT(zmq_send(c, "two", 3, 0), 3);
    SC_CHECK_INT(s_recv(&n, 1000, buf, sizeof(buf), user, sizeof(user)), -1);
    SC_CHECK(atomic_load(&r.tampered));
    SC_CHECK(atomic_load(&r.server_eof));
    atomic_store(&r.stop, 1);
    pthread_join(th, NULL);
    close(r.listen_fd);
    zmq_close(c);
    s_net_down(&n);
}

SC_TEST(zap_needs_curve_and_one_handler)
{
    void *ctx = zmq_ctx_new();
    sc_keyring_t *ring = NULL;
    sc_zap_t *a = NULL, *b = NULL;

    SC_REQUIRE(ctx && sc_keyring_new(&ring) == 0);
    SC_CHECK_INT(sc_zap_start(ctx, ring, NULL, NULL, &a), 0);
    SC_CHECK_INT(sc_zap_start(ctx, ring, NULL, NULL, &b), -EADDRINUSE);
    SC_CHECK(b == NULL);
    sc_zap_stop(&a);
    SC_CHECK(a == NULL);
    sc_zap_stop(&a);
    sc_keyring_destroy(&ring);
    zmq_ctx_term(ctx);
}

int main(void)
{
    if ((size_t)snprintf(s_dir, sizeof(s_dir), "%s", sc_test_tmpdir(NULL)) >= sizeof(s_dir)) {
        printf("scratch path too long: %s\n", s_dir);
        return 1;
    }
    SC_RUN(keypair_files);
    SC_RUN(keyring_files);
    SC_RUN(keygen_command);
    SC_RUN(known_client_delivered_with_user_id);
    SC_RUN(unknown_key_refused);
    SC_RUN(plain_text_client_refused);
    SC_RUN(wrong_server_key_never_connects);
    SC_RUN(tampered_message_refused);
    SC_RUN(zap_needs_curve_and_one_handler);
    return sc_test_done();
}
