/* Benchmark: from the moment the last prepare hook of an event reports done to the approval
 * POST reaching IMDS, with N simulated members (default 1,000).
 *
 * imds-sim (a child process, --unknown-event-ok: it answers 200 to the approval; the POST is
 * seen the moment its line appears in the simulator's timeline file) stands for the
 * coordinator's own VM's IMDS. In this process: the real coordinator (sc_coord) on its own thread
 * with its store in a temporary directory, and N fake agents (one ZMQ_DEALER each, on loopback,
 * --insecure) that say hello, report documents and answer orders like schedcoord-agent does. Each
 * round schedules a Reboot of one whole fault domain (N/3 VMs), answers every prepare order with
 * started + done, holding back the last "done"; then it sends that last done and measures the
 * time until the POST arrives at the fake IMDS. The event then starts, ends, its VMs are
 * recovered, and the next round uses the next fault domain.
 *
 *   build/bench/bench_coord_approve [members=1000] [rounds=20] [path/to/imds-sim]
 * (imds-sim defaults to ../bin/imds-sim next to this program)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bench_lib.h"
#include "bench_msg.h"
#include "sc_coord.h"
#include "sc_ctl.h"
#include "sc_event.h"
#include "sc_log.h"
#include "sc_msg.h"
#include "sc_test_net.h"
#include "sc_time.h"

#include <pthread.h>
#include <sys/stat.h>
#include <zmq.h>

#define FDS 3

typedef struct agent {
    char name[32]; /* vm_i */
    void *sock;    /* DEALER to the coordinator */
    uint64_t seq;  /* message sequence */
    int64_t inc;   /* document incarnation */
    uint64_t term; /* newest term seen */
} agent_t;

static agent_t *g_agents;
static int g_n;
static volatile sig_atomic_t g_stop;

static void s_send(agent_t *a, sc_msg_t *m)
{
    char *buf = NULL, err[256];
    size_t len = 0;
    if (sc_msg_encode(m, &buf, &len) < 0) {
        sc_msg_validate(m, err, sizeof(err));
        fprintf(stderr, "encode %s: %s\n", sc_msg_type_name(m->type), err);
        exit(1);
    }
    zmq_send(a->sock, buf, len, 0);
    free(buf);
}

static sc_msg_t *s_new(agent_t *a, sc_msg_type_t t)
{
    sc_msg_t *m = NULL;
    if (sc_msg_new(t, a->name, a->term, ++a->seq, &m) < 0)
        exit(1);
    return m;
}

static void s_hello(agent_t *a, int i)
{
    sc_msg_t *m = s_new(a, SC_MSG_HELLO);
    snprintf(m->hello.name, sizeof(m->hello.name), "%s", a->name);
    m->hello.fault_domain = i % FDS;
    m->hello.update_domain = i % FDS;
    snprintf(m->hello.agent_version, sizeof(m->hello.agent_version), "bench");
    snprintf(m->hello.boot_id, sizeof(m->hello.boot_id), "boot-%d", i);
    sc_msg_add_capability(m, SC_CAP_HOOKS);
    s_send(a, m);
    sc_msg_destroy(&m);
}

/* Reports a document holding `events_json` (the inside of "Events": [...]). */
static void s_doc(agent_t *a, const char *events_json)
{
    char *txt = malloc(strlen(events_json) + 128), err[256];
    sc_msg_t *m = s_new(a, SC_MSG_DOCUMENT);
    sprintf(txt, "{\"DocumentIncarnation\":%lld,\"Events\":[%s]}", (long long)++a->inc,
            events_json);
    if (sc_doc_parse(txt, strlen(txt), &m->document.document, err, sizeof(err)) < 0) {
        fprintf(stderr, "doc: %s\n", err);
        exit(1);
    }
    m->document.incarnation = a->inc;
    m->document.observed_at_ms = sc_wall_ms();
    s_send(a, m);
    sc_msg_destroy(&m);
    free(txt);
}

static void s_progress(agent_t *a, const char *ev, sc_msg_phase_t ph, sc_msg_hook_state_t st)
{
    sc_msg_t *m = s_new(a, SC_MSG_HOOK_PROGRESS);
    snprintf(m->hook_progress.event, sizeof(m->hook_progress.event), "%s", ev);
    m->hook_progress.phase = ph;
    m->hook_progress.state = st;
    m->hook_progress.exit_status = st == SC_MSG_HOOK_DONE ? 0 : -1;
    m->hook_progress.origin = SC_MSG_ORIGIN_ORDER;
    m->hook_progress.order_term = a->term;
    s_send(a, m);
    sc_msg_destroy(&m);
}

/* Reads every pending message of every agent; counts orders of `phase` for `ev` into *n and
 * remembers who got one (got[i]). */
static void s_pump(const char *ev, sc_msg_phase_t phase, char *got, int *n)
{
    for (int i = 0; i < g_n; i++) {
        sc_msg_t *m;
        while ((m = bench_recv(g_agents[i].sock, &g_agents[i].term))) {
            if (m->type == SC_MSG_ORDER && m->order.action == phase &&
                sc_event_id_equal(m->order.event, ev) && !got[i]) {
                got[i] = 1;
                (*n)++;
            }
            sc_msg_destroy(&m);
        }
    }
}

/* Number of "post" lines in the timeline file so far. */
static int s_posts(const char *tl)
{
    static char buf[1 << 20];
    FILE *f = fopen(tl, "r");
    int n = 0;
    if (!f)
        return 0;
    while (fgets(buf, sizeof(buf), f))
        n += strstr(buf, "\"kind\":\"post\"") != NULL;
    fclose(f);
    return n;
}

static void *s_coord_thread(void *arg)
{
    sc_coord_run(arg, &g_stop);
    return NULL;
}

static int s_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Polls the control socket until `n` VMs of event ev are prepared. */
static int s_wait_prepared(const char *dir, const char *ev, int n)
{
    char path[256], req[] = "{\"cmd\":\"status\"}";
    int64_t end = bench_mono_us() + 60 * 1000000LL;
    snprintf(path, sizeof(path), "%s/%s", dir, SC_CTL_SOCKET_NAME);
    while (bench_mono_us() < end) {
        json_object *st = NULL, *evs;
        int got = 0;
        if (sc_ctl_request(path, req, 5000, &st, NULL, 0) == 0 &&
            json_object_object_get_ex(st, "events", &evs)) {
            for (size_t i = 0; i < json_object_array_length(evs); i++) {
                json_object *e = json_object_array_get_idx(evs, i), *d;
                if (strcmp(json_object_get_string(json_object_object_get(e, "EventId")), ev) ||
                    !json_object_object_get_ex(e, "drains", &d))
                    continue;
                json_object_object_foreach(d, vm, state)
                {
                    (void)vm;
                    got += strcmp(json_object_get_string(state), "prepared") == 0;
                }
            }
        }
        json_object_put(st);
        if (got >= n)
            return 0;
        usleep(20000);
    }
    return -1;
}

static void s_wait_orders(const char *ev, sc_msg_phase_t ph, char *got, int want)
{
    int n = 0;
    int64_t end = bench_mono_us() + 30 * 1000000LL;
    memset(got, 0, (size_t)g_n);
    while (n < want && bench_mono_us() < end) {
        s_pump(ev, ph, got, &n);
        if (n < want)
            usleep(1000);
    }
    if (n < want) {
        fprintf(stderr, "only %d of %d %s orders for %s arrived\n", n, want, sc_msg_phase_name(ph),
                ev);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    int rounds = argc > 2 ? atoi(argv[2]) : 20;
    char dir[] = "/tmp/bench_coord.XXXXXX", *members, err[512] = "";
    char sim[4096], tl[4200], url[128];
    pid_t sim_pid;
    sc_coord_opts_t o;
    sc_coord_t *c = NULL;
    pthread_t th;
    void *zctx = zmq_ctx_new();
    int64_t *lat;
    int port;

    g_n = argc > 1 ? atoi(argv[1]) : 1000;
    sc_log_init("bench_coord_approve", SC_LOG_WARN);
    if (g_n < FDS || g_n > 4000 || rounds < 1 || !mkdtemp(dir))
        return 2;
    if (argc > 3) {
        snprintf(sim, sizeof(sim), "%s", argv[3]);
    } else {
        char self[4000];
        ssize_t l = readlink("/proc/self/exe", self, sizeof(self) - 1);
        self[l > 0 ? l : 0] = '\0';
        if (strrchr(self, '/'))
            *strrchr(self, '/') = '\0';
        snprintf(sim, sizeof(sim), "%s/../bin/imds-sim", self);
    }
    snprintf(tl, sizeof(tl), "%s/timeline.jsonl", dir);
    if ((sim_pid = bench_sim_start(sim, tl, url, sizeof(url))) < 0) {
        fprintf(stderr, "cannot start %s\n", sim);
        return 1;
    }
    lat = calloc((size_t)rounds, sizeof(*lat));
    /* A free port for vm_0; the other members' endpoints are never used. */
    if ((port = sc_test_free_port()) < 0)
        return 1;
    members = malloc((size_t)g_n * 40);
    members[0] = '\0';
    for (int i = 0; i < g_n; i++)
        sprintf(members + strlen(members), "%svm_%d=127.0.0.1:%d", i ? "," : "", i,
                i == 0 ? port : 1 + i);
    sc_coord_opts_init(&o);
    o.name = "vm_0";
    o.imds_url = url;
    o.members = members;
    o.state_dir = dir;
    o.insecure = true;
    o.dead_after_ms = 600000;
    o.policy.deadline_margin_s = 1;
    o.voters = 1; /* the one coordinator elects itself (no peers to replicate to) */
    if (sc_coord_new(&o, &c, err, sizeof(err)) < 0) {
        fprintf(stderr, "coordinator: %s\n", err);
        return 1;
    }
    if (!sc_coord_wait_lead(c, 5000)) {
        fprintf(stderr, "coordinator: not elected\n");
        return 1;
    }
    pthread_create(&th, NULL, s_coord_thread, c);

    zmq_ctx_set(zctx, ZMQ_MAX_SOCKETS, g_n + 16);
    g_agents = calloc((size_t)g_n, sizeof(*g_agents));
    char ep[64];
    snprintf(ep, sizeof(ep), "tcp://127.0.0.1:%d", port);
    for (int i = 0; i < g_n; i++) {
        agent_t *a = &g_agents[i];
        int zero = 0;
        snprintf(a->name, sizeof(a->name), "vm_%d", i);
        a->sock = zmq_socket(zctx, ZMQ_DEALER);
        zmq_setsockopt(a->sock, ZMQ_LINGER, &zero, sizeof(zero));
        zmq_connect(a->sock, ep);
        s_hello(a, i);
        s_doc(a, "");
    }
    sleep(2); /* every hello and document handled */

    char *got = calloc((size_t)g_n, 1);
    int64_t rollout_t0 = bench_mono_us();
    for (int r = 0; r < rounds; r++) {
        int fd = r % FDS, want = 0, last = -1;
        char ev[64], *res = malloc((size_t)g_n * 16 + 1), *evjson = malloc((size_t)g_n * 16 + 512);
        char nb[64];
        snprintf(ev, sizeof(ev), "bench-%d", r);
        res[0] = '\0';
        for (int i = fd; i < g_n; i += FDS) {
            sprintf(res + strlen(res), "%s\"vm_%d\"", want ? "," : "", i);
            want++;
            last = i;
        }
        sc_time_rfc1123(sc_wall_ms() / 1000 + 3600, nb, sizeof(nb));
        sprintf(evjson,
                "{\"EventId\":\"%s\",\"EventType\":\"Reboot\",\"ResourceType\":\"VirtualMachine\","
                "\"Resources\":[%s],\"EventStatus\":\"Scheduled\",\"NotBefore\":\"%s\","
                "\"EventSource\":\"Platform\",\"DurationInSeconds\":-1,\"Description\":\"\"}",
                ev, res, nb);
        /* Every VM of the set sees the event (Azure shows it to the whole placement group). */
        for (int i = 0; i < g_n; i++)
            s_doc(&g_agents[i], evjson);
        s_wait_orders(ev, SC_MSG_PHASE_PREPARE, got, want);
        for (int i = fd; i < g_n; i += FDS) {
            s_progress(&g_agents[i], ev, SC_MSG_PHASE_PREPARE, SC_MSG_HOOK_STARTED);
            if (i != last)
                s_progress(&g_agents[i], ev, SC_MSG_PHASE_PREPARE, SC_MSG_HOOK_DONE);
        }
        /* Wait until the coordinator has handled everything but the last done. */
        if (s_wait_prepared(dir, ev, want - 1) < 0) {
            fprintf(stderr, "round %d: the coordinator did not record %d prepared VMs\n", r,
                    want - 1);
            return 1;
        }
        int before = s_posts(tl);
        int64_t t0 = bench_mono_us(), t1 = 0;
        s_progress(&g_agents[last], ev, SC_MSG_PHASE_PREPARE, SC_MSG_HOOK_DONE);
        while (bench_mono_us() - t0 < 10 * 1000000LL) {
            if (s_posts(tl) > before) {
                t1 = bench_mono_us();
                break;
            }
        }
        if (!t1) {
            fprintf(stderr, "round %d: no approval POST within 10 s\n", r);
            return 1;
        }
        lat[r] = t1 - t0;
        /* The event starts, then ends: its VMs are recovered. */
        char *started = malloc(strlen(evjson) + 16);
        strcpy(started, evjson);
        char *p = strstr(started, "\"Scheduled\"");
        memcpy(p, "\"Started\"  ", 11);
        p = strstr(started, nb);
        memmove(p, p + strlen(nb), strlen(p + strlen(nb)) + 1);
        for (int i = 0; i < g_n; i++)
            s_doc(&g_agents[i], started);
        usleep(100000);
        for (int i = 0; i < g_n; i++)
            s_doc(&g_agents[i], "");
        s_wait_orders(ev, SC_MSG_PHASE_RECOVER, got, want);
        for (int i = fd; i < g_n; i += FDS) {
            s_progress(&g_agents[i], ev, SC_MSG_PHASE_RECOVER, SC_MSG_HOOK_STARTED);
            s_progress(&g_agents[i], ev, SC_MSG_PHASE_RECOVER, SC_MSG_HOOK_DONE);
        }
        usleep(300000);
        free(started);
        free(res);
        free(evjson);
    }
    int64_t rollout_us = bench_mono_us() - rollout_t0;
    qsort(lat, (size_t)rounds, sizeof(*lat), s_cmp);
    printf("members=%d vms_per_event=%d rounds=%d last_done_to_POST_us: median=%lld p90=%lld "
           "min=%lld max=%lld (all rounds %.1f s)\n",
           g_n, (g_n + FDS - 1) / FDS, rounds, (long long)lat[rounds / 2],
           (long long)lat[(rounds * 9) / 10 < rounds ? (rounds * 9) / 10 : rounds - 1],
           (long long)lat[0], (long long)lat[rounds - 1], rollout_us / 1e6);
    g_stop = 1;
    pthread_join(th, NULL);
    sc_coord_destroy(&c);
    for (int i = 0; i < g_n; i++)
        zmq_close(g_agents[i].sock);
    zmq_ctx_term(zctx);
    kill(sim_pid, SIGTERM);
    waitpid(sim_pid, NULL, 0);
    free(g_agents);
    free(got);
    free(members);
    free(lat);
    return bench_rmtree(dir) == 0 ? 0 : 1;
}
