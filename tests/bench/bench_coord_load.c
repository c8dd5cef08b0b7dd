/* Benchmark: what the coordinator costs in quiet times with N members (default 1,000), each
 * reporting once a second, the DESIGN budget "1,000 members at 1 report/s in a few % of a
 * core".
 *
 * Runs imds-sim (one VM: the coordinator's own IMDS) and the real schedcoord-coordinator as
 * child processes, CURVE on, with a keyring of N members. In this process, N-1 simulated agents
 * (vm_1 ... : one ZMQ_DEALER each, a CURVE client with its own key) say hello, report a document
 * without events, then send a heartbeat every second, spread evenly over the second; every
 * message from the coordinator is read and counted (its leader message to every member every
 * second). After a warm-up (CURVE handshakes, hellos), the coordinator's CPU (every thread,
 * /proc/PID/task/TID/schedstat) and memory (VmRSS, RssAnon) are read over SECONDS.
 *
 *   build/bench/bench_coord_load [members=1000] [seconds=20] [bin dir, default: ../bin]
 * Prints one line: members, heartbeats/s sent, leader messages/s received, coordinator CPU in
 * % of one core, VmRSS and RssAnon; then, the heartbeats going on, 21 Prometheus scrapes
 * (schedcoordctl metrics, as the socket-activated endpoint runs it): median wall time, median
 * coordinator CPU per scrape and the text's size. Exits 1 if the coordinator did not answer
 * every member or a scrape failed. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "bench_lib.h"
#include "bench_msg.h"
#include "sc_curve.h"
#include "sc_event.h"
#include "sc_msg.h"
#include "sc_test_net.h"
#include "sc_time.h"

typedef struct agent {
    char name[32];        /* vm_i */
    void *sock;           /* DEALER to the coordinator */
    uint64_t seq;         /* message sequence */
    uint64_t term;        /* newest term seen */
    int64_t next_hb;      /* monotonic ms of the next heartbeat */
    unsigned long leader; /* leader messages received */
} agent_t;

static int s_send(agent_t *a, sc_msg_t *m)
{
    char *buf = NULL;
    size_t len = 0;
    int rc = sc_msg_encode(m, &buf, &len);

    sc_msg_destroy(&m);
    if (rc < 0)
        return rc;
    rc = zmq_send(a->sock, buf, len, ZMQ_DONTWAIT) < 0 ? -1 : 0;
    free(buf);
    return rc;
}

static sc_msg_t *s_new(agent_t *a, sc_msg_type_t t)
{
    sc_msg_t *m = NULL;

    if (sc_msg_new(t, a->name, a->term, ++a->seq, &m) < 0) {
        fprintf(stderr, "bench_coord_load: sc_msg_new failed\n");
        exit(1);
    }
    return m;
}

static void s_hello(agent_t *a, int i)
{
    sc_msg_t *m = s_new(a, SC_MSG_HELLO);
    char err[256];

    snprintf(m->hello.name, sizeof(m->hello.name), "%s", a->name);
    m->hello.fault_domain = i % 3;
    m->hello.update_domain = i % 5;
    snprintf(m->hello.agent_version, sizeof(m->hello.agent_version), "bench");
    snprintf(m->hello.boot_id, sizeof(m->hello.boot_id), "boot-%d", i);
    sc_msg_add_capability(m, SC_CAP_HOOKS);
    s_send(a, m);
    m = s_new(a, SC_MSG_DOCUMENT);
    if (sc_doc_parse("{\"DocumentIncarnation\":1,\"Events\":[]}", 37, &m->document.document, err,
                     sizeof(err)) < 0) {
        fprintf(stderr, "bench_coord_load: doc: %s\n", err);
        exit(1);
    }
    m->document.incarnation = 1;
    m->document.observed_at_ms = sc_wall_ms();
    s_send(a, m);
}

static void s_heartbeat(agent_t *a)
{
    sc_msg_t *m = s_new(a, SC_MSG_HEARTBEAT);

    m->heartbeat.incarnation = 1;
    s_send(a, m);
}

/* Reads everything pending on every socket. */
static void s_drain(agent_t *ag, int n)
{
    for (int i = 0; i < n; i++) {
        sc_msg_t *m;
        while ((m = bench_recv(ag[i].sock, &ag[i].term))) {
            if (m->type == SC_MSG_LEADER)
                ag[i].leader++;
            sc_msg_destroy(&m);
        }
    }
}

/* Heartbeats due and reads, for ms milliseconds. */
static void s_run(agent_t *ag, int n, int64_t ms, unsigned long *hb)
{
    int64_t end = sc_mono_ms() + ms, last_drain = 0;

    while (sc_mono_ms() < end) {
        int64_t now = sc_mono_ms();
        for (int i = 0; i < n; i++) {
            if (now >= ag[i].next_hb) {
                s_heartbeat(&ag[i]);
                (*hb)++;
                ag[i].next_hb += 1000;
            }
        }
        if (now - last_drain >= 20) {
            s_drain(ag, n);
            last_drain = now;
        }
        sc_sleep_ms(2);
    }
}

#define S_SCRAPES 21

/* One scrape: schedcoordctl --state-dir DIR metrics > out. 0 when it exited 0. */
static int s_scrape(const char *ctl, const char *statedir, const char *out)
{
    int status;
    pid_t pid = fork();

    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 1) < 0)
            _exit(127);
        execl(ctl, ctl, "--state-dir", statedir, "metrics", (char *)NULL);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &status, 0) < 0)
        return -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double s_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), s_cmp_double);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    int secs = argc > 2 ? atoi(argv[2]) : 20;
    char bindir[PATH_MAX], self[PATH_MAX], dir[] = "/tmp/sc_bench_load_XXXXXX";
    char sim[PATH_MAX + 16], coord[PATH_MAX + 32], ctl[PATH_MAX + 32], tl[64], url[128], err[256];
    char keyfile[64], ringfile[64], statedir[64], endpoint[64];
    sc_curve_keypair_t *kp;
    agent_t *ag;
    char *members;
    size_t mlen;
    FILE *ring;
    pid_t sim_pid, coord_pid;
    void *zctx;
    int port, status;
    unsigned long hb = 0, leader0 = 0, leader1 = 0, answered = 0;
    int64_t t0, t1, c0, c1;
    long rss, anon;

    if (n < 2 || n > 4000 || secs < 1 || !mkdtemp(dir)) {
        fprintf(stderr,
                "usage: bench_coord_load [members=1000 (2..4000)] [seconds=20] [bin dir]\n");
        return 2;
    }
    if (argc > 3) {
        snprintf(bindir, sizeof(bindir), "%s", argv[3]);
    } else {
        ssize_t l = readlink("/proc/self/exe", self, sizeof(self) - 1);
        self[l > 0 ? l : 0] = '\0';
        snprintf(bindir, sizeof(bindir), "%s/../bin", dirname(self));
    }
    snprintf(sim, sizeof(sim), "%s/imds-sim", bindir);
    snprintf(coord, sizeof(coord), "%s/schedcoord-coordinator", bindir);
    snprintf(ctl, sizeof(ctl), "%s/schedcoordctl", bindir);
    snprintf(tl, sizeof(tl), "%s/timeline", dir);
    snprintf(keyfile, sizeof(keyfile), "%s/vm_0.key", dir);
    snprintf(ringfile, sizeof(ringfile), "%s/keyring", dir);
    snprintf(statedir, sizeof(statedir), "%s/state", dir);
    mkdir(statedir, 0700);

    /* keys of every member, the keyring, the coordinator's key pair file */
    kp = calloc((size_t)n, sizeof(*kp));
    ag = calloc((size_t)n, sizeof(*ag));
    mlen = (size_t)n * 40 + 64;
    members = malloc(mlen);
    if (!kp || !ag || !members || !(ring = fopen(ringfile, "w")))
        return 1;
    if ((port = sc_test_free_port()) < 0)
        return 1;
    snprintf(endpoint, sizeof(endpoint), "tcp://127.0.0.1:%d", port);
    members[0] = '\0';
    for (int i = 0, off = 0; i < n; i++) {
        if (sc_curve_keygen(&kp[i]) < 0) {
            fprintf(stderr, "bench_coord_load: no CURVE in this libzmq\n");
            return 1;
        }
        fprintf(ring, "vm_%d %s\n", i, kp[i].public_z85);
        /* only vm_0 runs a coordinator; the others' endpoints are never connected to */
        off += snprintf(members + off, mlen - (size_t)off, "%svm_%d=127.0.0.1:%d", i ? "," : "", i,
                        i == 0 ? port : 9);
    }
    fclose(ring);
    if (sc_curve_keypair_save(keyfile, &kp[0], err, sizeof(err)) < 0) {
        fprintf(stderr, "bench_coord_load: %s\n", err);
        return 1;
    }

    if ((sim_pid = bench_sim_start(sim, tl, url, sizeof(url))) < 0) {
        fprintf(stderr, "bench_coord_load: cannot start %s\n", sim);
        return 1;
    }
    if ((coord_pid = fork()) == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, 1);
        execl(coord, coord, "--name", "vm_0", "--imds-url", url, "--members", members,
              "--state-dir", statedir, "--key", keyfile, "--keys", ringfile, "--log-level", "warn",
              "--voters", "1", (char *)NULL);
        _exit(127);
    }

    /* the agents */
    zctx = zmq_ctx_new();
    for (int i = 1; i < n; i++) {
        agent_t *a = &ag[i - 1];
        snprintf(a->name, sizeof(a->name), "vm_%d", i);
        a->sock = zmq_socket(zctx, ZMQ_DEALER);
        if (!a->sock || zmq_setsockopt(a->sock, ZMQ_LINGER, &(int){0}, sizeof(int)) < 0 ||
            sc_curve_client_setup(a->sock, &kp[i], kp[0].public_z85) < 0 ||
            zmq_connect(a->sock, endpoint) < 0) {
            fprintf(stderr, "bench_coord_load: socket %d: %s\n", i, zmq_strerror(errno));
            return 1;
        }
        a->next_hb = sc_mono_ms() + 1000 + (int64_t)i * 1000 / n;
        s_hello(a, i);
    }
    /* warm-up: handshakes, hellos, documents, a few rounds of heartbeats */
    s_run(ag, n - 1, 8000, &hb);
    for (int i = 0; i < n - 1; i++)
        leader0 += ag[i].leader;
    hb = 0;
    /* spread again: a warm-up that fell behind (slow handshakes on a busy machine) would
     * otherwise send its backlog in the measured window */
    for (int i = 0; i < n - 1; i++)
        ag[i].next_hb = sc_mono_ms() + (int64_t)i * 1000 / n;
    t0 = sc_mono_ms();
    c0 = bench_cpu_ns(coord_pid);
    s_run(ag, n - 1, (int64_t)secs * 1000, &hb);
    c1 = bench_cpu_ns(coord_pid);
    t1 = sc_mono_ms();
    rss = bench_status_kib(coord_pid, "VmRSS");
    anon = bench_status_kib(coord_pid, "RssAnon");
    for (int i = 0; i < n - 1; i++) {
        leader1 += ag[i].leader;
        answered += ag[i].leader > 0;
    }
    unsigned long hb_window = hb; /* the rates are of the window, not of the scrapes after it */
    /* scrapes, the agents heartbeating between them */
    double scrape_ms[S_SCRAPES], scrape_cpu_ms[S_SCRAPES];
    long scrape_bytes = 0;
    int scrapes_ok = 0;
    for (int k = 0; k < S_SCRAPES; k++) {
        char out[PATH_MAX];
        struct stat st;
        int64_t w0, w1, k0, k1;
        snprintf(out, sizeof(out), "%s/metrics.txt", dir);
        k0 = bench_cpu_ns(coord_pid);
        w0 = bench_mono_us();
        if (s_scrape(ctl, statedir, out) == 0) {
            scrapes_ok++;
            if (stat(out, &st) == 0)
                scrape_bytes = (long)st.st_size;
        }
        w1 = bench_mono_us();
        k1 = bench_cpu_ns(coord_pid);
        scrape_ms[k] = (double)(w1 - w0) / 1e3;
        scrape_cpu_ms[k] = (double)(k1 - k0) / 1e6;
        s_run(ag, n - 1, 200, &hb);
    }

    kill(coord_pid, SIGTERM);
    waitpid(coord_pid, &status, 0);
    kill(sim_pid, SIGTERM);
    waitpid(sim_pid, NULL, 0);
    for (int i = 0; i < n - 1; i++)
        zmq_close(ag[i].sock);
    zmq_ctx_term(zctx);
    if (c0 < 0 || c1 < 0) {
        fprintf(stderr, "bench_coord_load: the coordinator died (see its stderr above)\n");
        return 1;
    }
    printf("members=%d seconds=%.1f heartbeats_per_s=%.0f leader_msgs_per_s=%.0f "
           "coordinator_cpu=%.2f%%_of_one_core rss_kib=%ld rss_anon_kib=%ld "
           "members_answered=%lu/%d scrape_ms_median=%.1f scrape_coordinator_cpu_ms_median=%.1f "
           "metrics_bytes=%ld scrapes_ok=%d/%d\n",
           n, (double)(t1 - t0) / 1000, (double)hb_window * 1000 / (double)(t1 - t0),
           (double)(leader1 - leader0) * 1000 / (double)(t1 - t0),
           (double)(c1 - c0) / 1e6 / (double)(t1 - t0) * 100, rss, anon, answered, n - 1,
           s_median(scrape_ms, S_SCRAPES), s_median(scrape_cpu_ms, S_SCRAPES), scrape_bytes,
           scrapes_ok, S_SCRAPES);
    free(members);
    free(kp);
    free(ag);
    bench_rmtree(dir);
    return answered == (unsigned long)(n - 1) && scrapes_ok == S_SCRAPES ? 0 : 1;
}
