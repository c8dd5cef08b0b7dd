/* Benchmark: from the moment the last prepare hook of an event reports done to the approval
 * POST reaching IMDS, with N simulated members (default 1,000), and how long the
 * coordinator's loop turns take meanwhile.
 *
 * imds-sim (a child process, --unknown-event-ok: it answers 200 to the approval; its timeline
 * line for the POST, read as soon as it is written (the file watched with inotify), says when
 * the POST arrived: "mono_us", CLOCK_MONOTONIC, the clock of this process)
 * stands for the coordinators' own VMs' IMDS. In this process: the real coordinators
 * (sc_coord), each on its own thread with its own state directory and store
 * (synchronous=FULL: each fsyncs), and N fake agents (one ZMQ_DEALER per voter each, on
 * loopback, --insecure) that say hello, report documents, answer orders and doc_requests like
 * schedcoord-agent does (an order asked again is answered with the hook's last report: a new
 * leader asks what its predecessor may have heard alone), sending every message to every voter (no
 * heartbeats: members are dead only after 600 s). Each round schedules a Reboot of one whole fault
 * domain (N/3 VMs), answers every prepare order with started + done, holding back the last "done";
 * once every voter's state holds the others prepared (their on_apply: no status request disturbs
 * the loops) and each has finished the step that applied it, it sends that last done and measures
 * the time until the POST arrives at the fake IMDS. The event then starts, ends, its VMs are
 * recovered (every voter's state holds them recovered), and the next round uses the next
 * fault domain.
 *
 *   build/bench/bench_coord_approve [MEMBERS=1000] [ROUNDS=20] [IMDS_SIM|-] [VOTERS=1]
 *
 * IMDS_SIM defaults ("-") to ../bin/imds-sim next to this program. VOTERS 1: vm_0's coordinator
 * alone, the only voter (it elects itself, nothing to replicate). VOTERS 3: vm_0, vm_1 and vm_2
 * (one per fault domain: --members gives each member's domain) run a coordinator with --voters
 * 3, replicating their decision log over real ZMQ peer sockets on 127.0.0.1: every decision is
 * committed by two of them (the leader's fsync and a follower's). Each round's event then
 * impacts one voter; when it is the leader's own VM, the leader hands the lead over while that
 * VM is drained and the successor POSTs (counted as handovers: rounds whose POST came from
 * another leader than the one at the event's start).
 *
 * Prints the latency up to the POST's arrival (median, p90, p99, min, max over the rounds),
 * then up to its line read here (seen_us: what this bench measured before 2026-11-28, 0.2-0.6
 * ms later), with the "stalled" warnings
 * the coordinators logged (the bench reads its own stderr; the goal is zero), then the loop
 * steps during the rollout (sc_coord_opts_t.on_step) of the leader: turn_ms, each step's work
 * from the poll's return to its end, waits for the voters included; turn_cpu_ms, the loop
 * thread's CPU time in each whole step (its poll included: a step doing nothing costs a few
 * µs there); with three voters the same of the two others (follower_*). A round that does not
 * finish (no orders within 60 s, no POST within 30 s, ...) ends the rollout: the figures of the
 * rounds done are printed all the same, then "FAILED: round R of N: why" (exit status 1).
 * BENCH_LOG_NOTICE=1 in the environment also shows the coordinators' notices (roles,
 * handovers, graces). BENCH_TRACE=1 prints, for each round, where its time went: when each voter
 * applied the approval intent and the ends (and work) of its first loop steps after the last
 * done, in µs from that done (the step that plans the intent; the leader's step that applies it).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bench_lib.h"
#include "bench_msg.h"
#include "sc_coord.h"
#include "sc_cstate.h"
#include "sc_event.h"
#include "sc_log.h"
#include "sc_msg.h"
#include "sc_net.h"
#include "sc_test_net.h"
#include "sc_time.h"

#include <pthread.h>
#include <sys/stat.h>
#include <zmq.h>

#define FDS 3
#define VOTERS_MAX 3

typedef struct agent {
    char name[32];          /* vm_i */
    void *sock[VOTERS_MAX]; /* DEALER to each voter's coordinator */
    uint64_t seq;           /* message sequence */
    int64_t inc;            /* document incarnation */
    uint64_t term;          /* newest term seen */
    char hook_ev[64];       /* the last hook reported: its event, phase and state ("": none), */
    sc_msg_phase_t hook_ph; /* said again when an order for it comes again (a new leader asks: */
    sc_msg_hook_state_t hook_st; /* schedcoord-agent answers with the result it recorded) */
} agent_t;

/* Durations of loop steps, in µs. */
typedef struct turns {
    int64_t *us; /* values */
    size_t n;    /* held */
    size_t cap;  /* allocated */
} turns_t;

typedef struct voter {
    sc_coord_t *c;         /* its coordinator, stepped on its own thread */
    pthread_t th;          /* that thread */
    int port;              /* its ROUTER's port */
    char dir[96];          /* its state directory */
    atomic_int prepared;   /* VMs of the round's event prepared in its state */
    atomic_int recovered;  /* ... recovered */
    atomic_long applied;   /* entries applied to its state */
    atomic_long steps;     /* loop steps done */
    atomic_bool leads;     /* it led (term entry committed) at the end of its last step */
    turns_t wall[2];       /* its steps' work during the rollout: [0] not leading, [1] leading */
    turns_t cpu[2];        /* its thread's CPU time in each of those steps */
    int64_t cpu_us;        /* its thread's CPU time at the end of its last step */
    atomic_llong t_intent; /* BENCH_TRACE: when it applied the round's approval intent (µs) */
    int64_t tr_end[8], tr_busy[8]; /* BENCH_TRACE: its first steps' ends after the last done */
    atomic_int tr_n;               /* ... how many */
} voter_t;

static agent_t *g_agents;
static int g_n, g_nv;
static voter_t g_v[VOTERS_MAX];
static volatile sig_atomic_t g_stop;
static atomic_int g_round;    /* the round whose event the voters' on_apply counts */
static atomic_llong g_t0;     /* BENCH_TRACE: when the round's last done was sent (µs), or 0 */
static atomic_bool g_measure; /* the rollout is under way: loop steps are recorded */
static atomic_int g_stalled;  /* "stalled" lines the coordinators logged */
static int g_err_fd = -1;     /* the real stderr, while ours goes through s_err_thread */
static pthread_t g_err_th;    /* that thread */
static pid_t g_sim_pid = -1;  /* imds-sim */
static char g_dir[] = "/tmp/bench_coord.XXXXXX";
static char *g_events; /* the events every agent's document holds now (JSON) */

/* ---- stderr: the coordinators' "stalled" warnings counted, every line passed on ------------ */

static void *s_err_thread(void *arg)
{
    FILE *in = fdopen((int)(intptr_t)arg, "r");
    char line[8192];

    while (in && fgets(line, sizeof(line), in)) {
        if (strstr(line, "msg=\"stalled"))
            atomic_fetch_add(&g_stalled, 1);
        if (write(g_err_fd, line, strlen(line)) < 0)
            continue; /* still read: a writer must never block on a full pipe */
    }
    if (in)
        fclose(in);
    return NULL;
}

static int s_err_capture(void)
{
    int p[2];

    if (pipe(p) < 0 || (g_err_fd = dup(2)) < 0 || dup2(p[1], 2) < 0)
        return -1;
    close(p[1]);
    return pthread_create(&g_err_th, NULL, s_err_thread, (void *)(intptr_t)p[0]) ? -1 : 0;
}

/* Our stderr back; every line written so far has been read. */
static void s_err_release(void)
{
    if (g_err_fd < 0)
        return;
    fflush(stderr);
    dup2(g_err_fd, 2); /* closes the pipe's last write end: the thread reads to its end */
    pthread_join(g_err_th, NULL);
    close(g_err_fd);
    g_err_fd = -1;
}

/* Gives up: says why, leaves no simulator and no state behind. */
static void s_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void s_die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (g_sim_pid > 0) {
        kill(g_sim_pid, SIGTERM);
        waitpid(g_sim_pid, NULL, 0);
    }
    s_err_release();
    fprintf(stderr, "bench_coord_approve: stalled lines so far: %d\n", atomic_load(&g_stalled));
    bench_rmtree(g_dir);
    _exit(1); /* the coordinators' threads are left running: no destructor of theirs */
}

/* ---- the fake agents ---------------------------------------------------------------------- */

/* Sends m to voter `to`, or to every voter (-1: schedcoord-agent reports to all of them). */
static void s_send_to(agent_t *a, int to, sc_msg_t *m)
{
    char *buf = NULL, err[256];
    size_t len = 0;
    if (sc_msg_encode(m, &buf, &len) < 0) {
        sc_msg_validate(m, err, sizeof(err));
        s_die("encode %s: %s", sc_msg_type_name(m->type), err);
    }
    for (int v = 0; v < g_nv; v++)
        if (to < 0 || v == to)
            zmq_send(a->sock[v], buf, len, 0);
    free(buf);
}

static void s_send(agent_t *a, sc_msg_t *m)
{
    s_send_to(a, -1, m);
}

static sc_msg_t *s_new(agent_t *a, sc_msg_type_t t)
{
    sc_msg_t *m = NULL;
    if (sc_msg_new(t, a->name, a->term, ++a->seq, &m) < 0)
        s_die("sc_msg_new failed");
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

/* Reports the document of the moment (g_events: the inside of "Events": [...]) to voter `to`
 * (-1: all), as a new incarnation (a change) or again (asked for it). */
static void s_doc_to(agent_t *a, int to, bool change)
{
    char *txt = malloc(strlen(g_events) + 128), err[256];
    sc_msg_t *m = s_new(a, SC_MSG_DOCUMENT);
    a->inc += change;
    sprintf(txt, "{\"DocumentIncarnation\":%lld,\"Events\":[%s]}", (long long)a->inc, g_events);
    if (sc_doc_parse(txt, strlen(txt), &m->document.document, err, sizeof(err)) < 0)
        s_die("doc: %s", err);
    m->document.incarnation = a->inc;
    m->document.observed_at_ms = sc_wall_ms();
    s_send_to(a, to, m);
    sc_msg_destroy(&m);
    free(txt);
}

/* Every agent reports a new document holding events_json (copied). */
static void s_docs(const char *events_json)
{
    free(g_events);
    if (!(g_events = strdup(events_json)))
        s_die("out of memory");
    for (int i = 0; i < g_n; i++)
        s_doc_to(&g_agents[i], -1, true);
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
    snprintf(a->hook_ev, sizeof(a->hook_ev), "%s", ev);
    a->hook_ph = ph;
    a->hook_st = st;
}

/* Reads every pending message of every agent from every voter; answers a doc_request with
 * the document again (as schedcoord-agent does: a coordinator asks after a start or a stall);
 * with got, counts orders of `phase` for `ev` into *n and remembers who got one (got[i]). */
static void s_pump(const char *ev, sc_msg_phase_t phase, char *got, int *n)
{
    for (int i = 0; i < g_n; i++) {
        for (int v = 0; v < g_nv; v++) {
            sc_msg_t *m;
            while ((m = bench_recv(g_agents[i].sock[v], &g_agents[i].term))) {
                agent_t *a = &g_agents[i];
                if (m->type == SC_MSG_DOC_REQUEST)
                    s_doc_to(a, v, false);
                else if (got && m->type == SC_MSG_ORDER && m->order.action == phase &&
                         sc_event_id_equal(m->order.event, ev) && !got[i]) {
                    got[i] = 1;
                    (*n)++;
                } else if (m->type == SC_MSG_ORDER && a->hook_ev[0] &&
                           m->order.action == a->hook_ph &&
                           sc_event_id_equal(m->order.event, a->hook_ev)) {
                    char hev[sizeof(a->hook_ev)];
                    memcpy(hev, a->hook_ev, sizeof(hev));
                    s_progress(a, hev, a->hook_ph, a->hook_st); /* asked again */
                }
                sc_msg_destroy(&m);
            }
        }
    }
}

/* Waits for orders of phase for ev to `want` agents (got[i]: who has one). 0, or -1 after 60 s
 * with the reason in why. */
static int s_wait_orders(const char *ev, sc_msg_phase_t ph, char *got, int want, char *why,
                         size_t whylen)
{
    int n = 0;
    int64_t end = bench_mono_us() + 60 * 1000000LL;
    memset(got, 0, (size_t)g_n);
    while (n < want && bench_mono_us() < end) {
        s_pump(ev, ph, got, &n);
        if (n < want) /* a pass costs 2 system calls a socket: not timed, no hurry */
            usleep(20000);
    }
    if (n < want) {
        snprintf(why, whylen, "only %d of %d %s orders for %s arrived in 60 s", n, want,
                 sc_msg_phase_name(ph), ev);
        return -1;
    }
    return 0;
}

/* ---- the voters ----------------------------------------------------------------------------- */

/* The voters' count of the round's VMs prepared and recovered, kept by on_apply on their own
 * threads: no status request disturbs the loop that is measured. */
static void s_on_apply(void *ud, const sc_dlog_entry_t *e, const sc_cstate_t *cs)
{
    voter_t *v = ud;
    const sc_cs_event_t *ev;
    char id[32];
    int prep = 0, rec = 0;

    atomic_fetch_add(&v->applied, 1);
    if (e->kind == SC_DLOG_APPROVAL_INTENT && atomic_load(&g_t0) && !atomic_load(&v->t_intent))
        atomic_store(&v->t_intent, bench_mono_us());
    if (e->kind != SC_DLOG_HOOK_PROGRESS)
        return;
    snprintf(id, sizeof(id), "bench-%d", atomic_load(&g_round));
    if (!(ev = sc_cstate_event_find(cs, id)))
        return;
    for (size_t i = 0; i < sc_cstate_n_members(cs); i++) {
        prep += ev->drain[i] == SC_DRAIN_PREPARED;
        rec += ev->drain[i] == SC_DRAIN_RECOVERED;
    }
    atomic_store(&v->prepared, prep);
    atomic_store(&v->recovered, rec);
}

static void s_turns_add(turns_t *t, int64_t us)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 4096;
        int64_t *p = realloc(t->us, cap * sizeof(*p));
        if (!p)
            return;
        t->us = p;
        t->cap = cap;
    }
    t->us[t->n++] = us;
}

/* CPU time of the calling thread in µs. */
static int64_t s_thread_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void s_on_step(void *ud, int64_t busy_us)
{
    voter_t *v = ud;
    int64_t cpu = s_thread_cpu_us();
    bool leader = sc_coord_is_leader(v->c);

    atomic_store(&v->leads, sc_coord_leads(v->c));
    atomic_fetch_add(&v->steps, 1);
    if (atomic_load(&g_t0) && atomic_load(&v->tr_n) < 8) {
        int k = atomic_load(&v->tr_n);
        v->tr_end[k] = bench_mono_us() - atomic_load(&g_t0);
        v->tr_busy[k] = busy_us;
        atomic_store(&v->tr_n, k + 1);
    }
    if (atomic_load(&g_measure)) {
        s_turns_add(&v->wall[leader], busy_us);
        s_turns_add(&v->cpu[leader], cpu - v->cpu_us); /* the whole step: the wait costs ~0 */
    }
    v->cpu_us = cpu;
}

static void *s_coord_thread(void *arg)
{
    voter_t *v = arg;
    sc_coord_run(v->c, &g_stop);
    return NULL;
}

/* The voter that leads, or -1. */
static int s_leader(void)
{
    for (int v = 0; v < g_nv; v++)
        if (atomic_load(&g_v[v].leads))
            return v;
    return -1;
}

/* Waits until every voter's state holds at least `want` VMs of the round's event prepared
 * (or, recovered: recovered), then until each has finished the step that applied them. */
static int s_wait_state(bool recovered, int want, int max_s)
{
    int64_t end = bench_mono_us() + max_s * 1000000LL;
    long steps[VOTERS_MAX];

    for (int v = 0; v < g_nv; v++) {
        atomic_int *n = recovered ? &g_v[v].recovered : &g_v[v].prepared;
        for (int k = 1; atomic_load(n) < want; k++) {
            if (bench_mono_us() > end)
                return -1;
            if (k % 50 == 0) /* every 0.1 s: a voter that stalled asks for documents */
                s_pump(NULL, SC_MSG_PHASE_PREPARE, NULL, NULL);
            usleep(2000);
        }
    }
    for (int v = 0; v < g_nv; v++)
        steps[v] = atomic_load(&g_v[v].steps);
    for (int v = 0; v < g_nv; v++)
        while (atomic_load(&g_v[v].steps) < steps[v] + 2 && bench_mono_us() < end)
            usleep(1000);
    return 0;
}

/* Setup over: a leader, and no voter applied an entry for quiet_ms (every hello and document
 * decided and replicated). */
static int s_wait_quiet(int quiet_ms, int max_s)
{
    int64_t end = bench_mono_us() + max_s * 1000000LL, since = bench_mono_us();
    long last = -1;

    while (bench_mono_us() < end) {
        long sum = 0;
        for (int v = 0; v < g_nv; v++)
            sum += atomic_load(&g_v[v].applied);
        if (sum != last) {
            last = sum;
            since = bench_mono_us();
        } else if (s_leader() >= 0 && bench_mono_us() - since >= quiet_ms * 1000LL) {
            return 0;
        }
        s_pump(NULL, SC_MSG_PHASE_PREPARE, NULL, NULL);
        usleep(100000);
    }
    return -1;
}

/* ---- results ----------------------------------------------------------------------------------
 */

static int s_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The pct-th percentile of sorted[n] (the value at rank n * pct / 100), 0 when empty. */
static int64_t s_pct(const int64_t *sorted, size_t n, int pct)
{
    size_t i = n * (size_t)pct / 100;
    return n ? sorted[i < n ? i : n - 1] : 0;
}

/* Prints "label: p50=… p99=… max=… turns=…" (ms) over the voters' steps as leader or not
 * (leader): their work's duration, or their CPU time (cpu). */
static void s_print_turns(const char *label, bool cpu, bool leader)
{
    size_t n = 0;
    int64_t *all;

    for (int v = 0; v < g_nv; v++)
        n += (cpu ? g_v[v].cpu : g_v[v].wall)[leader].n;
    if (!(all = malloc((n ? n : 1) * sizeof(*all))))
        return;
    n = 0;
    for (int v = 0; v < g_nv; v++) {
        const turns_t *t = &(cpu ? g_v[v].cpu : g_v[v].wall)[leader];
        memcpy(all + n, t->us, t->n * sizeof(*all));
        n += t->n;
    }
    qsort(all, n, sizeof(*all), s_cmp);
    printf("%s: p50=%.3f p99=%.3f max=%.3f turns=%zu\n", label, s_pct(all, n, 50) / 1e3,
           s_pct(all, n, 99) / 1e3, n ? all[n - 1] / 1e3 : 0.0, n);
    free(all);
}

/* ---- main -------------------------------------------------------------------------------------
 */

/* The voters' coordinators, started on their threads; waits for a leader. */
static void s_voters_start(const char *members, const char *url)
{
    for (int v = 0; v < g_nv; v++) {
        voter_t *vo = &g_v[v];
        sc_coord_opts_t o;
        char err[512] = "", name[16];

        snprintf(name, sizeof(name), "vm_%d", v);
        snprintf(vo->dir, sizeof(vo->dir), "%s/%s", g_dir, name);
        if (mkdir(vo->dir, 0700) < 0)
            s_die("mkdir %s: %s", vo->dir, strerror(errno));
        sc_coord_opts_init(&o);
        o.name = name;
        o.imds_url = url;
        o.members = members;
        o.state_dir = vo->dir;
        o.insecure = true;
        o.dead_after_ms = 600000;
        o.policy.deadline_margin_s = 1;
        o.voters = g_nv; /* 1: it elects itself (no peers to replicate to) */
        o.on_apply = s_on_apply;
        o.on_apply_ud = vo;
        o.on_step = s_on_step;
        o.on_step_ud = vo;
        if (sc_coord_new(&o, &vo->c, err, sizeof(err)) < 0)
            s_die("coordinator %s: %s", name, err);
        /* the election's seed is the pid and the wall ms: one process, so not the same ms */
        usleep(3000);
    }
    for (int v = 0; v < g_nv; v++)
        pthread_create(&g_v[v].th, NULL, s_coord_thread, &g_v[v]);
    for (int64_t end = bench_mono_us() + 15 * 1000000LL; s_leader() < 0;) {
        if (bench_mono_us() > end)
            s_die("coordinators: no leader within 15 s");
        usleep(10000);
    }
}

/* Number of "post" lines in the timeline file so far; *ret_at (when not NULL): the arrival
 * (its "mono_us") of post number at_n (from 1), or 0 (none yet, or a simulator without it). */
static int s_posts(const char *tl, int at_n, int64_t *ret_at)
{
    static char buf[1 << 20];
    FILE *f = fopen(tl, "r");
    const char *m;
    int n = 0;
    if (ret_at)
        *ret_at = 0;
    if (!f)
        return 0;
    while (fgets(buf, sizeof(buf), f))
        if (strstr(buf, "\"kind\":\"post\"") && ++n == at_n && ret_at &&
            (m = strstr(buf, "\"mono_us\":")))
            *ret_at = strtoll(m + 10, NULL, 10);
    fclose(f);
    return n;
}

/* Waits until the timeline (in the directory ifd watches) holds more than `before` posts, at
 * most max_us after t0: the time it did (seen), or 0; *ret_at: when that POST arrived at the
 * simulator (its mono_us), 0 if not known. Woken by every write to the file, so that the loop
 * measured shares the machine with nothing spinning. */
static int64_t s_wait_post(int ifd, const char *tl, int before, int64_t t0, int64_t max_us,
                           int64_t *ret_at)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

    while (bench_mono_us() - t0 < max_us) {
        struct pollfd p = {.fd = ifd, .events = POLLIN};
        /* the events read before the file is: a write after it wakes the poll */
        while (read(ifd, buf, sizeof(buf)) > 0)
            ;
        if (s_posts(tl, before + 1, ret_at) > before)
            return bench_mono_us();
        if (poll(&p, 1, 100) == 0) /* 0.1 s late: a voter that stalled may ask for documents */
            s_pump(NULL, SC_MSG_PHASE_PREPARE, NULL, NULL);
    }
    return 0;
}

/* Round r: a Reboot of fault domain r % 3 drained, approved (its latency in *ret_lat; a
 * handover counted in *handovers), started, ended and recovered. 0, or -1 with why. */
static int s_round(int r, int ifd, const char *tl, char *got, int64_t *ret_lat, int64_t *ret_seen,
                   int *handovers, char *why, size_t whylen)
{
    int fd = r % FDS, want = 0, last = -1, lead0, rc = -1, before;
    char ev[64], nb[64], *p, *started = NULL;
    char *res = malloc((size_t)g_n * 16 + 1), *evjson = malloc((size_t)g_n * 16 + 512);
    int64_t t0, t1, at;

    if (!res || !evjson)
        s_die("out of memory");
    snprintf(ev, sizeof(ev), "bench-%d", r);
    for (int v = 0; v < g_nv; v++) {
        atomic_store(&g_v[v].prepared, 0);
        atomic_store(&g_v[v].recovered, 0);
    }
    atomic_store(&g_round, r);
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
    lead0 = s_leader();
    /* Every VM of the set sees the event (Azure shows it to the whole placement group). */
    s_docs(evjson);
    if (s_wait_orders(ev, SC_MSG_PHASE_PREPARE, got, want, why, whylen) < 0)
        goto out;
    for (int i = fd; i < g_n; i += FDS) {
        s_progress(&g_agents[i], ev, SC_MSG_PHASE_PREPARE, SC_MSG_HOOK_STARTED);
        if (i != last)
            s_progress(&g_agents[i], ev, SC_MSG_PHASE_PREPARE, SC_MSG_HOOK_DONE);
    }
    /* Wait until every voter has applied everything but the last done. */
    if (s_wait_state(false, want - 1, 300) < 0) {
        snprintf(why, whylen, "the voters did not record %d prepared VMs in 300 s", want - 1);
        goto out;
    }
    before = s_posts(tl, 0, NULL);
    for (int v = 0; v < g_nv; v++) {
        atomic_store(&g_v[v].t_intent, 0);
        atomic_store(&g_v[v].tr_n, 0);
    }
    t0 = bench_mono_us();
    if (getenv("BENCH_TRACE"))
        atomic_store(&g_t0, t0);
    s_progress(&g_agents[last], ev, SC_MSG_PHASE_PREPARE, SC_MSG_HOOK_DONE);
    if (!(t1 = s_wait_post(ifd, tl, before, t0, 30 * 1000000LL, &at))) {
        snprintf(why, whylen, "no approval POST within 30 s");
        goto out;
    }
    /* up to the POST's arrival at the simulator; its line read from the timeline (seen) comes
     * 0.2-0.6 ms later on this machine: the write, the inotify wake-up, the file read */
    *ret_seen = t1 - t0;
    *ret_lat = (at > t0 && at <= t1 ? at : t1) - t0;
    if (atomic_load(&g_t0)) { /* where the time went: each voter's intent applied, its steps */
        atomic_store(&g_t0, 0);
        for (int v = 0; v < g_nv; v++) {
            fprintf(stderr,
                    "trace round %d voter %d%s: intent applied +%lld us; steps (end/busy us):", r,
                    v, v == lead0 ? " (leader)" : "",
                    atomic_load(&g_v[v].t_intent) ? (long long)(atomic_load(&g_v[v].t_intent) - t0)
                                                  : -1LL);
            for (int k = 0; k < atomic_load(&g_v[v].tr_n); k++)
                fprintf(stderr, " %lld/%lld", (long long)g_v[v].tr_end[k],
                        (long long)g_v[v].tr_busy[k]);
            fprintf(stderr, "\n");
        }
        fprintf(stderr, "trace round %d: POST arrived +%lld us, seen +%lld us t0=%lld\n", r,
                (long long)*ret_lat, (long long)*ret_seen, (long long)t0);
    }
    *handovers += s_leader() != lead0;
    if (getenv("BENCH_ROUNDS")) /* each round, to read an outlier */
        fprintf(stderr, "round %d: last_done_to_POST_us=%lld seen_us=%lld leader %d -> %d\n", r,
                (long long)*ret_lat, (long long)*ret_seen, lead0, s_leader());
    /* The event starts, then ends: its VMs are recovered. */
    if (!(started = malloc(strlen(evjson) + 16)))
        s_die("out of memory");
    strcpy(started, evjson);
    p = strstr(started, "\"Scheduled\"");
    memcpy(p, "\"Started\"  ", 11);
    p = strstr(started, nb);
    memmove(p, p + strlen(nb), strlen(p + strlen(nb)) + 1);
    s_docs(started);
    usleep(100000);
    s_docs("");
    if (s_wait_orders(ev, SC_MSG_PHASE_RECOVER, got, want, why, whylen) < 0)
        goto out;
    for (int i = fd; i < g_n; i += FDS) {
        s_progress(&g_agents[i], ev, SC_MSG_PHASE_RECOVER, SC_MSG_HOOK_STARTED);
        s_progress(&g_agents[i], ev, SC_MSG_PHASE_RECOVER, SC_MSG_HOOK_DONE);
    }
    if (s_wait_state(true, want, 300) < 0) {
        snprintf(why, whylen, "the voters did not record %d recovered VMs in 300 s", want);
        goto out;
    }
    usleep(300000);
    rc = 0;
out:
    free(started);
    free(res);
    free(evjson);
    return rc;
}

int main(int argc, char **argv)
{
    int rounds = argc > 2 ? atoi(argv[2]) : 20, handovers = 0, ifd;
    char *members, sim[4096], tl[4200], url[128];
    void *zctx = zmq_ctx_new();
    int64_t *lat, *seen;

    g_n = argc > 1 ? atoi(argv[1]) : 1000;
    g_nv = argc > 4 ? atoi(argv[4]) : 1;
    if (g_n < FDS || g_n > 4000 || rounds < 1 || (g_nv != 1 && g_nv != 3)) {
        fprintf(stderr, "usage: bench_coord_approve [MEMBERS=1000 (3..4000)] [ROUNDS=20] "
                        "[IMDS_SIM|-] [VOTERS=1 (1|3)]\n");
        return 2;
    }
    if (!mkdtemp(g_dir))
        return 1;
    if (argc > 3 && strcmp(argv[3], "-") != 0) {
        snprintf(sim, sizeof(sim), "%s", argv[3]);
    } else {
        char self[4000];
        ssize_t l = readlink("/proc/self/exe", self, sizeof(self) - 1);
        self[l > 0 ? l : 0] = '\0';
        if (strrchr(self, '/'))
            *strrchr(self, '/') = '\0';
        snprintf(sim, sizeof(sim), "%s/../bin/imds-sim", self);
    }
    snprintf(tl, sizeof(tl), "%s/timeline.jsonl", g_dir);
    /* before stderr is captured: the simulator's lines do not go through the pipe */
    if ((g_sim_pid = bench_sim_start(sim, tl, url, sizeof(url))) < 0) {
        fprintf(stderr, "cannot start %s\n", sim);
        return 1;
    }
    /* the timeline's writes (the voters' state is in directories below: not watched) */
    if ((ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0 ||
        inotify_add_watch(ifd, g_dir, IN_MODIFY | IN_CREATE) < 0) {
        fprintf(stderr, "inotify: %s\n", strerror(errno));
        return 1;
    }
    if (s_err_capture() < 0)
        s_die("cannot capture stderr");
    sc_log_init("bench_coord_approve", getenv("BENCH_LOG_NOTICE") ? SC_LOG_NOTICE : SC_LOG_WARN);
    /* the voters' ROUTERs and the agents' DEALERs, with a connection each way */
    sc_nofile_raise(4L * g_nv * g_n + 256);
    lat = calloc((size_t)rounds, sizeof(*lat));
    seen = calloc((size_t)rounds, sizeof(*seen));
    if (!lat || !seen)
        s_die("out of memory");
    for (int v = 0; v < g_nv; v++) {
        bool dup = true;
        while (dup) { /* distinct free ports (each is released before it is bound) */
            if ((g_v[v].port = sc_test_free_port()) < 0)
                s_die("no free port");
            dup = false;
            for (int w = 0; w < v; w++)
                dup = dup || g_v[w].port == g_v[v].port;
        }
    }
    /* the voters' endpoints; the other members' are never used. /FD: one voter per domain */
    members = malloc((size_t)g_n * 40);
    members[0] = '\0';
    for (int i = 0; i < g_n; i++)
        sprintf(members + strlen(members), "%svm_%d=127.0.0.1:%d/%d", i ? "," : "", i,
                i < g_nv ? g_v[i].port : 1 + i, i % FDS);
    s_voters_start(members, url);

    zmq_ctx_set(zctx, ZMQ_MAX_SOCKETS, g_nv * g_n + 16);
    g_agents = calloc((size_t)g_n, sizeof(*g_agents));
    for (int i = 0; i < g_n; i++) {
        agent_t *a = &g_agents[i];
        int zero = 0;
        snprintf(a->name, sizeof(a->name), "vm_%d", i);
        for (int v = 0; v < g_nv; v++) {
            char ep[64];
            snprintf(ep, sizeof(ep), "tcp://127.0.0.1:%d", g_v[v].port);
            a->sock[v] = zmq_socket(zctx, ZMQ_DEALER);
            zmq_setsockopt(a->sock[v], ZMQ_LINGER, &zero, sizeof(zero));
            zmq_connect(a->sock[v], ep);
        }
        s_hello(a, i);
    }
    s_docs("");
    sleep(2);
    /* every hello and document handled (and, with three voters, replicated) */
    if (s_wait_quiet(1000, 300) < 0)
        s_die("setup: the voters were still applying entries after 300 s");

    char *got = calloc((size_t)g_n, 1), why[256] = "";
    int64_t rollout_t0 = bench_mono_us();
    int done = 0;
    atomic_store(&g_measure, true);
    while (done < rounds &&
           s_round(done, ifd, tl, got, &lat[done], &seen[done], &handovers, why, sizeof(why)) == 0)
        done++;
    atomic_store(&g_measure, false);
    int64_t rollout_us = bench_mono_us() - rollout_t0;

    g_stop = 1;
    for (int v = 0; v < g_nv; v++)
        pthread_join(g_v[v].th, NULL);
    for (int v = 0; v < g_nv; v++)
        sc_coord_destroy(&g_v[v].c);
    for (int i = 0; i < g_n; i++)
        for (int v = 0; v < g_nv; v++)
            zmq_close(g_agents[i].sock[v]);
    zmq_ctx_term(zctx);
    kill(g_sim_pid, SIGTERM);
    waitpid(g_sim_pid, NULL, 0);
    s_err_release(); /* every line the coordinators wrote has been counted */
    close(ifd);

    /* what was measured, also when a round failed (the turns show why) */
    qsort(lat, (size_t)done, sizeof(*lat), s_cmp);
    qsort(seen, (size_t)done, sizeof(*seen), s_cmp);
    printf("members=%d voters=%d vms_per_event=%d rounds=%d last_done_to_POST_us: median=%lld "
           "p90=%lld p99=%lld min=%lld max=%lld seen_us: median=%lld p99=%lld stalled=%d "
           "handovers=%d (all rounds %.1f s)\n",
           g_n, g_nv, (g_n + FDS - 1) / FDS, done, (long long)s_pct(lat, (size_t)done, 50),
           (long long)s_pct(lat, (size_t)done, 90), (long long)s_pct(lat, (size_t)done, 99),
           (long long)(done ? lat[0] : 0), (long long)(done ? lat[done - 1] : 0),
           (long long)s_pct(seen, (size_t)done, 50), (long long)s_pct(seen, (size_t)done, 99),
           atomic_load(&g_stalled), handovers, rollout_us / 1e6);
    s_print_turns("turn_ms", false, true);
    s_print_turns("turn_cpu_ms", true, true);
    if (g_nv > 1) {
        s_print_turns("follower_turn_ms", false, false);
        s_print_turns("follower_turn_cpu_ms", true, false);
    }
    for (int v = 0; v < g_nv; v++) {
        for (int k = 0; k < 2; k++) {
            free(g_v[v].wall[k].us);
            free(g_v[v].cpu[k].us);
        }
    }
    free(g_agents);
    free(g_events);
    free(got);
    free(members);
    free(lat);
    free(seen);
    if (done < rounds)
        printf("FAILED: round %d of %d: %s\n", done, rounds, why);
    return bench_rmtree(g_dir) == 0 && done == rounds ? 0 : 1;
}
