/* Benchmark: what the coordinator costs in quiet times with N members (default 1,000), each
 * heartbeating every HB ms (default 5000, the agent's --heartbeat-interval; 1000 was the
 * default before issue 11 and is the DESIGN budget's "1,000 members at 1 report/s in a few % of
 * a core").
 *
 * Runs imds-sim (one VM: the coordinator's own IMDS) and the real schedcoord-coordinator as
 * child processes, CURVE on, with a keyring of N members. In this process, N-1 simulated agents
 * (vm_1 ... : one ZMQ_DEALER each, a CURVE client with its own key) say hello, report a document
 * without events, then send a heartbeat every HB ms, spread evenly over that time; every
 * message from the coordinator is read and counted (its leader message to every member, every
 * 5 s since issue 11). After a warm-up (CURVE handshakes, hellos), the coordinator's CPU (every
 * thread, /proc/PID/task/TID/schedstat) and memory (VmRSS, RssAnon) are read over SECONDS.
 *
 *   build/bench/bench_coord_load [members=1000] [seconds=20] [bin dir, default: ../bin] [voters]
 *                                [HB ms=5000]
 * voters 1 (default): vm_0's coordinator alone, the only voter, leads (0: the same with a build
 * from before the election, which has no --voters). voters 3: vm_0, vm_1 and
 * vm_2 each run a coordinator, they elect a leader, and every simulated agent reports to the
 * three (as schedcoord-agent reports to the voters); the leader's and a voter's CPU are read.
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
#include <stdbool.h>
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
    void *sock[3];        /* DEALER to each coordinator (voter) */
    int nsock;            /* sockets used */
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
    for (int k = 0; k < a->nsock; k++)
        if (zmq_send(a->sock[k], buf, len, ZMQ_DONTWAIT) < 0)
            rc = -1;
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
        for (int k = 0; k < ag[i].nsock; k++)
            while ((m = bench_recv(ag[i].sock[k], &ag[i].term))) {
                if (m->type == SC_MSG_LEADER)
                    ag[i].leader++;
                sc_msg_destroy(&m);
            }
    }
}

/* Heartbeats due and reads, for ms milliseconds. */
static int64_t s_hb_ms = 5000; /* each simulated agent's heartbeat interval */

static void s_run(agent_t *ag, int n, int64_t ms, unsigned long *hb)
{
    int64_t end = sc_mono_ms() + ms, last_drain = 0;

    while (sc_mono_ms() < end) {
        int64_t now = sc_mono_ms();
        for (int i = 0; i < n; i++) {
            if (now >= ag[i].next_hb) {
                s_heartbeat(&ag[i]);
                (*hb)++;
                ag[i].next_hb += s_hb_ms;
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

/* schedcoordctl --state-dir DIR CMD [--json] > out. 0 when it exited 0. */
static int s_ctl(const char *ctl, const char *statedir, const char *cmd, const char *out)
{
    int status;
    pid_t pid = fork();

    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 1) < 0)
            _exit(127);
        if (strcmp(cmd, "metrics") == 0)
            execl(ctl, ctl, "--state-dir", statedir, cmd, (char *)NULL);
        else
            execl(ctl, ctl, "--state-dir", statedir, cmd, "--json", (char *)NULL);
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
    char keyfile[3][64], ringfile[64], statedirs[3][64], endpoint[3][64], *statedir;
    int voters = argc > 4 ? atoi(argv[4]) : 1, ports[3];
    bool old = voters == 0; /* a build from before the election (no --voters): one coordinator */
    pid_t cpids[3] = {0, 0, 0};
    sc_curve_keypair_t *kp;
    agent_t *ag;
    char *members;
    size_t mlen;
    FILE *ring;
    pid_t sim_pid, coord_pid, voter_pid = 0;
    void *zctx;
    int status;
    unsigned long hb = 0, leader0 = 0, leader1 = 0, answered = 0;
    int64_t t0, t1, c0, c1;
    long rss, anon;

    if (old)
        voters = 1;
    if (argc > 5)
        s_hb_ms = atoll(argv[5]);
    if (n < 4 || n > 4000 || secs < 1 || (voters != 1 && voters != 3) || s_hb_ms < 50 ||
        s_hb_ms > 60000 || !mkdtemp(dir)) {
        fprintf(stderr, "usage: bench_coord_load [members=1000 (4..4000)] [seconds=20] [bin dir] "
                        "[voters 1|3] [heartbeat ms=5000 (50..60000)]\n");
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
    snprintf(ringfile, sizeof(ringfile), "%s/keyring", dir);
    for (int v = 0; v < voters; v++) {
        snprintf(keyfile[v], sizeof(keyfile[v]), "%s/vm_%d.key", dir, v);
        snprintf(statedirs[v], sizeof(statedirs[v]), "%s/state%d", dir, v);
        mkdir(statedirs[v], 0700);
    }
    statedir = statedirs[0];

    /* keys of every member, the keyring, the coordinator's key pair file */
    kp = calloc((size_t)n, sizeof(*kp));
    ag = calloc((size_t)n, sizeof(*ag));
    mlen = (size_t)n * 40 + 64;
    members = malloc(mlen);
    if (!kp || !ag || !members || !(ring = fopen(ringfile, "w")))
        return 1;
    for (int v = 0; v < voters; v++) {
        if ((ports[v] = sc_test_free_port()) < 0)
            return 1;
        snprintf(endpoint[v], sizeof(endpoint[v]), "tcp://127.0.0.1:%d", ports[v]);
    }

    members[0] = '\0';
    for (int i = 0, off = 0; i < n; i++) {
        if (sc_curve_keygen(&kp[i]) < 0) {
            fprintf(stderr, "bench_coord_load: no CURVE in this libzmq\n");
            return 1;
        }
        fprintf(ring, "vm_%d %s\n", i, kp[i].public_z85);
        /* only the voters run a coordinator; the others' endpoints are never connected to */
        off += snprintf(members + off, mlen - (size_t)off, "%svm_%d=127.0.0.1:%d", i ? "," : "", i,
                        i < voters ? ports[i] : 9);
    }
    fclose(ring);
    for (int v = 0; v < voters; v++)
        if (sc_curve_keypair_save(keyfile[v], &kp[v], err, sizeof(err)) < 0) {
            fprintf(stderr, "bench_coord_load: %s\n", err);
            return 1;
        }

    if ((sim_pid = bench_sim_start(sim, tl, url, sizeof(url))) < 0) {
        fprintf(stderr, "bench_coord_load: cannot start %s\n", sim);
        return 1;
    }
    for (int v = 0; v < voters; v++)
        if ((cpids[v] = fork()) == 0) {
            int null = open("/dev/null", O_WRONLY);
            char name[16], nv[8];
            if (null >= 0)
                dup2(null, 1);
            snprintf(name, sizeof(name), "vm_%d", v);
            snprintf(nv, sizeof(nv), "%d", voters);
            execl(coord, coord, "--name", name, "--imds-url", url, "--members", members,
                  "--state-dir", statedirs[v], "--key", keyfile[v], "--keys", ringfile,
                  "--log-level", "warn", old ? NULL : "--voters", nv, (char *)NULL);
            _exit(127);
        }
    coord_pid = cpids[0];

    /* the agents */
    zctx = zmq_ctx_new();
    zmq_ctx_set(zctx, ZMQ_MAX_SOCKETS, voters * n + 64);
    for (int i = 1; i < n; i++) {
        agent_t *a = &ag[i - 1];
        snprintf(a->name, sizeof(a->name), "vm_%d", i);
        for (int v = 0; v < voters; v++) {
            void *sk = a->sock[a->nsock++] = zmq_socket(zctx, ZMQ_DEALER);
            if (!sk || zmq_setsockopt(sk, ZMQ_LINGER, &(int){0}, sizeof(int)) < 0 ||
                sc_curve_client_setup(sk, &kp[i], kp[v].public_z85) < 0 ||
                zmq_connect(sk, endpoint[v]) < 0) {
                fprintf(stderr, "bench_coord_load: socket %d: %s\n", i, zmq_strerror(errno));
                return 1;
            }
        }
        a->next_hb = sc_mono_ms() + 1000 + (int64_t)i * s_hb_ms / n;
        s_hello(a, i);
    }
    /* warm-up: handshakes, hellos, documents, a few rounds of heartbeats, the election */
    s_run(ag, n - 1, 8000, &hb);
    if (voters > 1) { /* which one leads: its CPU is the leader's, another's a voter's */
        int leader = -1;
        /* the handshakes of 3 x N CURVE clients may delay the election: up to 30 s more */
        for (int tries = 0; tries < 30 && leader < 0; tries++) {
            if (tries)
                s_run(ag, n - 1, 1000, &hb);
            for (int v = 0; v < voters && leader < 0; v++) {
                static char buf[1 << 22]; /* the status of 1,000 members: role after them */
                char out[PATH_MAX];
                FILE *f;
                snprintf(out, sizeof(out), "%s/status%d.json", dir, v);
                if (s_ctl(ctl, statedirs[v], "status", out) == 0 && (f = fopen(out, "r"))) {
                    size_t l = fread(buf, 1, sizeof(buf) - 1, f);
                    buf[l] = '\0';
                    fclose(f);
                    if (strstr(buf, "\"role\": \"leader\"") || strstr(buf, "\"role\":\"leader\""))
                        leader = v;
                }
            }
        }
        if (leader < 0) {
            fprintf(stderr, "bench_coord_load: no leader among the %d voters\n", voters);
            for (int v = 0; v < voters; v++) /* no daemon left behind to skew what runs next */
                kill(cpids[v], SIGKILL);
            kill(sim_pid, SIGKILL);
            return 1;
        }
        coord_pid = cpids[leader];
        voter_pid = cpids[(leader + 1) % voters];
        statedir = statedirs[leader];
    }
    for (int i = 0; i < n - 1; i++)
        leader0 += ag[i].leader;
    hb = 0;
    /* spread again: a warm-up that fell behind (slow handshakes on a busy machine) would
     * otherwise send its backlog in the measured window */
    for (int i = 0; i < n - 1; i++)
        ag[i].next_hb = sc_mono_ms() + (int64_t)i * s_hb_ms / n;
    t0 = sc_mono_ms();
    c0 = bench_cpu_ns(coord_pid);
    int64_t v0 = voter_pid ? bench_cpu_ns(voter_pid) : 0;
    s_run(ag, n - 1, (int64_t)secs * 1000, &hb);
    c1 = bench_cpu_ns(coord_pid);
    int64_t v1 = voter_pid ? bench_cpu_ns(voter_pid) : 0;
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
        if (s_ctl(ctl, statedir, "metrics", out) == 0) {
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

    for (int v = 0; v < voters; v++) {
        kill(cpids[v], SIGTERM);
        waitpid(cpids[v], &status, 0);
    }
    kill(sim_pid, SIGTERM);
    waitpid(sim_pid, NULL, 0);
    for (int i = 0; i < n - 1; i++)
        for (int k = 0; k < ag[i].nsock; k++)
            zmq_close(ag[i].sock[k]);
    zmq_ctx_term(zctx);
    if (c0 < 0 || c1 < 0) {
        fprintf(stderr, "bench_coord_load: the coordinator died (see its stderr above)\n");
        return 1;
    }
    printf("members=%d voters=%d seconds=%.1f heartbeats_per_s=%.0f leader_msgs_per_s=%.0f "
           "coordinator_cpu=%.2f%%_of_one_core voter_cpu=%.2f%%_of_one_core rss_kib=%ld "
           "rss_anon_kib=%ld "
           "members_answered=%lu/%d scrape_ms_median=%.1f scrape_coordinator_cpu_ms_median=%.1f "
           "metrics_bytes=%ld scrapes_ok=%d/%d\n",
           n, voters, (double)(t1 - t0) / 1000, (double)hb_window * 1000 / (double)(t1 - t0),
           (double)(leader1 - leader0) * 1000 / (double)(t1 - t0),
           (double)(c1 - c0) / 1e6 / (double)(t1 - t0) * 100,
           voter_pid ? (double)(v1 - v0) / 1e6 / (double)(t1 - t0) * 100 : 0.0, rss, anon, answered,
           n - 1, s_median(scrape_ms, S_SCRAPES), s_median(scrape_cpu_ms, S_SCRAPES), scrape_bytes,
           scrapes_ok, S_SCRAPES);
    free(members);
    free(kp);
    free(ag);
    bench_rmtree(dir);
    return answered == (unsigned long)(n - 1) && scrapes_ok == S_SCRAPES ? 0 : 1;
}
