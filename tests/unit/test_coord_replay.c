/* The coordinator as a state machine applied from its decision log (issue 10).
 *
 * A real leader (vm_0, on loopback, --insecure) runs a randomized life: four fake agents
 * (sc_test_peer.h) report documents that change under them (events appear, grow, start, end,
 * are cancelled; Preempts take members away, new agents bring them back), answer orders with
 * hook results (some failed), answer delegated approvals (some failed), while the leader's own
 * IMDS (imds_test_server.h) sometimes refuses a POST and the leader is restarted (kill-free:
 * destroy and new over the same store). Then:
 *
 *   1. its log replayed from empty into a fresh sc_cstate equals its state, field by field;
 *   2. so does a replay from a snapshot taken mid-way (and from its own last snapshot);
 *   3. its log appended to a fresh store (sc_store_append_entry, the follower's way) gives the
 *      same rows: members, events, drains, approvals (every store keeps only the newest
 *      S_KEEP_CLOSED closed events' rows, so these compare stores that pruned the same);
 *   4. what its status shows (approvals, drains, members gone) is what the state holds;
 *   5. a follower (vm_1) handed each entry as it is written holds, after every entry, the state
 *      the leader held after that entry; its log is the leader's, entry for entry (it writes
 *      nothing of its own: no term at its start, no decisions from what it hears);
 *   6. a member that joins with nothing (vm_2) and installs the snapshot the leader sends a
 *      follower whose next entry was compacted holds the leader's state and the same rows, its
 *      log's base at the snapshot's index; a snapshot it cannot install (a column it does not
 *      have) leaves its state and store as they were.
 *
 * Now and then the operator rehearses (schedcoordctl rehearse: made-up events planned as real
 * ones, their approval simulated, stopped when a real event arrives): everything a rehearsal
 * changes is an entry too.
 *
 * A change of state without an entry (a path writing the state directly, or applying what it
 * does not log) makes 1 fail: the replay would not see it. SC_SEED=N replays one run. */
#include "imds_test_server.h"
#include "sc_coord.h"
#include "sc_cstate.h"
#include "sc_error.h"
#include "sc_msg.h"
#include "sc_store.h"
#include "sc_store_test.h"
#include "sc_test.h"
#include "sc_test_net.h"
#include "sc_test_peer.h"
#include "sc_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#define N_VM 4
#define N_STEPS 160
#define MAX_EV 24

static const int s_fd[N_VM] = {0, 1, 2, 0};
static char s_dir[64], s_fdir[64], s_gdir[64], s_members[256];
static int s_port[N_VM];
static sc_ts_t *s_imds;
static unsigned s_seed;  /* the run's seed (printed; SC_SEED=N replays one) */
static unsigned s_world; /* PRNG state of the world's changes: the same for a seed */
static unsigned s_agent; /* PRNG state of the agents' answers (their timing varies) */
static int s_rh_entries; /* rehearsal entries over every seed run */

/* ---- the world: what IMDS says ---------------------------------------------------------- */

typedef struct {
    char id[32];      /* EventId */
    const char *type; /* EventType */
    unsigned vms;     /* Resources, a bit per member */
    bool started;     /* EventStatus Started */
    bool present;     /* in the document */
} s_wev_t;

typedef struct {
    void *d;           /* its DEALER */
    char boot[24];     /* its agent's boot id */
    uint64_t term;     /* newest term it heard */
    uint64_t seq;      /* its message sequence */
    int64_t inc_sent;  /* incarnation of the last document it sent */
    bool gone;         /* its VM was preempted: silent until a new agent says hello */
    sc_msg_t *pending; /* an order it runs: its result goes next round */
} s_agent_t;

static s_wev_t s_ev[MAX_EV];
static size_t s_n_ev;
static int64_t s_inc = 1; /* DocumentIncarnation of the world */
static s_agent_t s_ag[N_VM];

static unsigned s_rand(unsigned n)
{
    return (unsigned)rand_r(&s_world) % n;
}

static unsigned s_arand(unsigned n)
{
    return (unsigned)rand_r(&s_agent) % n;
}

static size_t s_doc(char *buf, size_t len)
{
    size_t off =
        (size_t)snprintf(buf, len, "{\"DocumentIncarnation\":%lld,\"Events\":[", (long long)s_inc);
    bool first = true;

    for (size_t i = 0; i < s_n_ev && off < len; i++) {
        const s_wev_t *e = &s_ev[i];
        if (!e->present)
            continue;
        off += (size_t)snprintf(buf + off, len - off,
                                "%s{\"EventId\":\"%s\",\"EventType\":\"%s\",\"ResourceType\":"
                                "\"VirtualMachine\",\"Resources\":[",
                                first ? "" : ",", e->id, e->type);
        for (int v = 0, k = 0; v < N_VM && off < len; v++)
            if (e->vms & (1u << v))
                off += (size_t)snprintf(buf + off, len - off, "%s\"vm_%d\"", k++ ? "," : "", v);
        off += (size_t)snprintf(
            buf + off, len - off,
            "],\"EventStatus\":\"%s\",\"NotBefore\":\"%s\",\"Description\":\"\","
            "\"EventSource\":\"Platform\",\"DurationInSeconds\":%d}",
            e->started ? "Started" : "Scheduled", e->started ? "" : "Mon, 01 Jan 2046 00:00:00 GMT",
            strcmp(e->type, "Freeze") == 0 ? 5 : -1);
        first = false;
    }
    snprintf(buf + off, off < len ? len - off : 0, "]}");
    return off;
}

static void s_world_step(int step)
{
    unsigned r = s_rand(100), n_present = 0;
    s_wev_t *pick = NULL;

    for (size_t i = 0; i < s_n_ev; i++)
        n_present += s_ev[i].present;
    if (r < 14 && n_present < 3 && s_n_ev < MAX_EV) { /* a new event */
        static const char *const types[] = {"Reboot", "Redeploy", "Freeze", "Reboot", "Preempt"};
        s_wev_t *e = &s_ev[s_n_ev++];
        snprintf(e->id, sizeof(e->id), "E-%d-%u", step, s_seed % 1000);
        e->type = types[s_rand(5)];
        e->vms = strcmp(e->type, "Preempt") == 0 ? 1u << (1 + s_rand(N_VM - 1))
                                                 : 1u + s_rand((1u << N_VM) - 1);
        e->present = true;
        s_inc++;
        return;
    }
    /* one present event, at random */
    for (size_t i = 0, k = n_present ? s_rand(n_present) : 0; i < s_n_ev; i++)
        if (s_ev[i].present && k-- == 0)
            pick = &s_ev[i];
    if (!pick)
        return;
    if (r < 24 && !pick->started) { /* Azure starts it (NotBefore passed, or someone else) */
        pick->started = true;
        s_inc++;
    } else if (r < 40 && pick->started) { /* it is over */
        pick->present = false;
        if (strcmp(pick->type, "Preempt") == 0)
            for (int v = 0; v < N_VM; v++)
                if (pick->vms & (1u << v))
                    s_ag[v].gone = true;
        s_inc++;
    } else if (r < 43 && !pick->started) { /* cancelled */
        pick->present = false;
        s_inc++;
    } else if (r < 48 && !pick->started && strcmp(pick->type, "Preempt") != 0) { /* updated */
        pick->vms = 1u + s_rand((1u << N_VM) - 1);
        s_inc++;
    }
}

/* Azure starts what the leader approved. */
static void s_world_approvals(sc_coord_t *c)
{
    json_object *st = sc_coord_status(c), *evs;

    if (!st || !json_object_object_get_ex(st, "events", &evs)) {
        json_object_put(st);
        return;
    }
    for (size_t i = 0; i < json_object_array_length(evs); i++) {
        json_object *je = json_object_array_get_idx(evs, i);
        const char *id = json_object_get_string(json_object_object_get(je, "EventId"));
        const char *ap = json_object_get_string(json_object_object_get(je, "approval"));
        for (size_t k = 0; id && ap && k < s_n_ev; k++)
            if (s_ev[k].present && !s_ev[k].started && !strcmp(s_ev[k].id, id) &&
                !strcmp(ap, "approved") && s_arand(2)) {
                s_ev[k].started = true;
                s_inc++;
            }
    }
    json_object_put(st);
}

/* ---- the agents ------------------------------------------------------------------------- */

static sc_msg_t *s_new(int v, sc_msg_type_t type)
{
    sc_msg_t *m = NULL;
    char name[16];

    snprintf(name, sizeof(name), "vm_%d", v);
    if (sc_msg_new(type, name, s_ag[v].term, ++s_ag[v].seq, &m) < 0)
        SC_FAILF("sc_msg_new");
    return m;
}

static void s_progress(int v, const sc_msg_t *order, sc_msg_hook_state_t state)
{
    sc_msg_t *m = s_new(v, SC_MSG_HOOK_PROGRESS);

    snprintf(m->hook_progress.event, sizeof(m->hook_progress.event), "%s", order->order.event);
    m->hook_progress.phase = order->order.action;
    m->hook_progress.state = state;
    m->hook_progress.exit_status = state == SC_MSG_HOOK_DONE     ? 0
                                   : state == SC_MSG_HOOK_FAILED ? 1
                                                                 : -1;
    m->hook_progress.origin = SC_MSG_ORIGIN_ORDER;
    m->hook_progress.order_term = order->term;
    m->hook_progress.attempt = order->order.attempt;
    sc_tp_send(s_ag[v].d, m);
}

static void s_send_doc(int v)
{
    char body[8192], name[16];

    snprintf(name, sizeof(name), "vm_%d", v);
    s_doc(body, sizeof(body));
    sc_tp_doc(s_ag[v].d, name, s_ag[v].term, ++s_ag[v].seq, body, sc_wall_ms());
    s_ag[v].inc_sent = s_inc;
}

/* One round of agent v: what it was told, its hook's result, its document and heartbeat. */
static void s_agent_round(int v)
{
    s_agent_t *a = &s_ag[v];
    sc_msg_t *m;
    char name[16];

    snprintf(name, sizeof(name), "vm_%d", v);
    if (a->pending) { /* the hook of last round's order ends */
        sc_msg_hook_state_t st = s_arand(100) < 82 ? SC_MSG_HOOK_DONE : SC_MSG_HOOK_FAILED;
        s_progress(v, a->pending, st);
        sc_msg_destroy(&a->pending);
    }
    while ((m = sc_tp_recv(a->d))) {
        if (m->term > a->term)
            a->term = m->term;
        if (m->type == SC_MSG_ORDER && !a->pending && !a->gone) {
            s_progress(v, m, SC_MSG_HOOK_STARTED);
            a->pending = m;
            continue;
        }
        if (m->type == SC_MSG_APPROVE_VIA) {
            sc_msg_t *r = s_new(v, SC_MSG_APPROVE_RESULT);
            bool ok = s_arand(100) < 75;
            for (size_t i = 0; i < m->approve_via.n_events; i++)
                sc_msg_add_event(r, m->approve_via.events[i]);
            r->approve_result.http_status = ok ? 200 : 500;
            snprintf(r->approve_result.result, sizeof(r->approve_result.result), "%s",
                     ok ? "OK" : "SC_E_HTTP_5XX");
            sc_tp_send(a->d, r);
        }
        if (m->type == SC_MSG_DOC_REQUEST && !a->gone)
            s_send_doc(v);
        sc_msg_destroy(&m);
    }
    if (a->gone) {
        if (s_arand(100) < 4) { /* the VM re-created: a new agent */
            a->gone = false;
            snprintf(a->boot, sizeof(a->boot), "boot-%d-%u", v, s_arand(100000));
            sc_tp_hello(a->d, name, a->boot, s_fd[v], v, a->term);
            s_send_doc(v);
        }
        return;
    }
    if (a->inc_sent != s_inc && s_arand(100) < 70) /* a copy that lags, sometimes */
        s_send_doc(v);
    m = s_new(v, SC_MSG_HEARTBEAT);
    m->heartbeat.incarnation = a->inc_sent;
    sc_tp_send(a->d, m);
}

/* ---- the leader, the follower, the trace ------------------------------------------------- */

static char **s_trace; /* the leader's state after entry i (JSON text), by index */
static size_t s_trace_n;

static void s_on_apply(void *ud, const sc_dlog_entry_t *e, const sc_cstate_t *cs)
{
    json_object *o = NULL;
    (void)ud;
    if (e->index < 1 || sc_cstate_to_json(cs, &o) < 0)
        return;
    if ((size_t)e->index >= s_trace_n) {
        size_t n = (size_t)e->index * 2 + 16;
        char **nv = realloc(s_trace, n * sizeof(*nv));
        if (!nv)
            return;
        memset(nv + s_trace_n, 0, (n - s_trace_n) * sizeof(*nv));
        s_trace = nv;
        s_trace_n = n;
    }
    free(s_trace[e->index]);
    s_trace[e->index] = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
}

/* the closed events whose rows every member keeps: few, so that the rows of older ones go
 * during a run, on every member the same */
#define S_KEEP_CLOSED 3

static int s_runs; /* leader processes started: every other one stops as after a crash (no
                    * snapshot at its stop: the next start replays a log tail) */

static sc_coord_t *s_start(const char *name, const char *dir, bool trace)
{
    char err[512] = "";
    sc_coord_opts_t o;
    sc_coord_t *c = NULL;
    int rc;

    sc_coord_opts_init(&o);
    o.name = name;
    o.imds_url = s_imds->url;
    o.members = s_members;
    o.state_dir = dir;
    o.insecure = true;
    o.start_grace_ms = 0;
    o.resend_ms = 200;
    o.dead_after_ms = 60000;
    o.snapshot_every = 9;
    o.keep_closed = S_KEEP_CLOSED;
    o.snapshot_at_stop = !trace || s_runs++ % 2 == 1;
    o.policy.prepare_retry_s = 0; /* rolled back drains tried again at once */
    if (trace) {
        o.on_apply = s_on_apply;
        o.on_apply_ud = NULL;
    }
    o.voters = 1; /* vm_0 leads (it elects itself); the others follow */
    if ((rc = sc_coord_new(&o, &c, err, sizeof(err))) < 0)
        SC_FAILF("sc_coord_new %s: %s (%s)", name, sc_errname(rc), err);
    if (strcmp(name, "vm_0") == 0 && !sc_coord_wait_lead(c, 5000))
        SC_FAILF("%s did not win its election", name);
    return c;
}

static char *s_text(json_object *o)
{
    char *t = o ? strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) : NULL;
    json_object_put(o);
    return t ? t : strdup("(null)");
}

static sc_cstate_t *s_fresh(void)
{
    static const char *const names[N_VM] = {"vm_0", "vm_1", "vm_2", "vm_3"};
    sc_cstate_t *cs = NULL;
    if (sc_cstate_new(names, N_VM, &cs) < 0)
        SC_FAILF("sc_cstate_new");
    return cs;
}

static int s_apply_all(sc_cstate_t *cs, const sc_dlog_entry_t *v, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        char err[256];
        int rc = sc_cstate_apply(cs, &v[i], NULL, err, sizeof(err));
        if (rc < 0) {
            SC_FAILF("seed %u: entry %lld (%s) refused on replay: %s", s_seed,
                     (long long)v[i].index, sc_dlog_kind_name(v[i].kind), err);
            return rc;
        }
    }
    return 0;
}

static char *s_state_text(const sc_cstate_t *cs)
{
    json_object *o = NULL;
    sc_cstate_to_json(cs, &o);
    return s_text(o);
}

/* Steps the leader until what its state applied is what its store shows, committed, and its
 * whole log is applied: the leader applies in a loop turn's transaction, made durable (and
 * seen by another connection, as lstore is) with the next turn's commit. The world is still
 * meanwhile (no agent answers), so this comes within a few turns. */
static void s_settle(sc_coord_t *c, sc_store_t *lstore)
{
    for (int i = 0; i < 400; i++) {
        json_object *st = sc_coord_state_json(c), *ap = NULL;
        int64_t applied =
            st && json_object_object_get_ex(st, "applied", &ap) ? json_object_get_int64(ap) : -1;
        json_object_put(st);
        if (applied == sc_store_test_int(lstore, "SELECT coalesce(max(idx), 0) FROM dlog") &&
            applied ==
                sc_store_test_int(lstore, "SELECT coalesce(max(idx), 0) FROM dlog WHERE applied"))
            return;
        SC_CHECK_INT(sc_coord_step(c, 5), 0);
    }
    SC_FAILF("seed %u: the leader did not settle in 400 turns", s_seed);
}

/* Hands the follower every entry of the leader's log it does not have, comparing its state
 * with the leader's after each. */
static void s_sync_follower(sc_store_t *lstore, sc_coord_t *f, int64_t *have)
{
    sc_dlog_entry_t *v = NULL;
    size_t n = 0;

    if (sc_test_checks_failed_) /* said once: the rest would follow from it */
        return;
    if (sc_store_entries(lstore, *have + 1, 100000, &v, &n) < 0) {
        SC_FAILF("reading the leader's log");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        char err[256] = "", *fs;
        int rc = sc_coord_follow(f, &v[i], err, sizeof(err));
        if (rc < 0) {
            SC_FAILF("seed %u: follower refused entry %lld: %s", s_seed, (long long)v[i].index,
                     err);
            break;
        }
        *have = v[i].index;
        fs = s_text(sc_coord_state_json(f));
        if ((size_t)v[i].index >= s_trace_n || !s_trace[v[i].index] ||
            strcmp(fs, s_trace[v[i].index]) != 0) {
            SC_FAILF(
                "seed %u: after entry %lld (%s) the follower holds\n    %s\n  the leader held\n"
                "    %s",
                s_seed, (long long)v[i].index, sc_dlog_kind_name(v[i].kind), fs,
                (size_t)v[i].index < s_trace_n && s_trace[v[i].index] ? s_trace[v[i].index]
                                                                      : "(nothing traced)");
            free(fs);
            break;
        }
        free(fs);
    }
    sc_dlog_entries_free(v, n);
}

/* The rows of a store that are the log's projection (meta and the log itself aside). */
static char *s_rows(sc_store_t *st)
{
    json_object *snap = NULL;
    if (sc_store_snapshot(st, true, 0, 0, &snap) < 0)
        return strdup("(no snapshot)");
    json_object_object_del(snap, "term");
    return s_text(snap);
}

SC_TEST(replay_and_follower_equal_the_leader)
{
    void *zctx = zmq_ctx_new();
    sc_coord_t *c, *f;
    sc_store_t *lstore = NULL, *fresh = NULL;
    sc_dlog_entry_t *v = NULL;
    size_t n = 0;
    char path[128], err[256], *leader, *replayed;
    int64_t have = 0;
    int restarts = 0, rehearsals = 0;
    int kinds[SC_DLOG_KIND_MAX] = {0};

    s_world = s_seed;
    s_agent = s_seed * 7919u + 1u;
    s_n_ev = 0;
    s_inc = 1;
    memset(s_ag, 0, sizeof(s_ag));
    s_trace = NULL;
    s_trace_n = 0;
    s_runs = 0;
    c = s_start("vm_0", s_dir, true);
    f = s_start("vm_1", s_fdir, false);
    SC_REQUIRE(c && f && zctx);
    SC_CHECK(sc_coord_is_leader(c) && !sc_coord_is_leader(f));
    snprintf(path, sizeof(path), "%s/coordinator.db", s_dir);
    SC_REQUIRE(sc_store_open_readonly(path, &lstore, err, sizeof(err)) == 0);
    for (int v2 = 0; v2 < N_VM; v2++) {
        char name[16];
        snprintf(name, sizeof(name), "vm_%d", v2);
        s_ag[v2].d = sc_tp_dealer(zctx, s_port[0]);
        snprintf(s_ag[v2].boot, sizeof(s_ag[v2].boot), "boot-%d", v2);
        sc_tp_hello(s_ag[v2].d, name, s_ag[v2].boot, s_fd[v2], v2, 0);
        s_send_doc(v2);
    }
    for (int step = 0; step < N_STEPS; step++) {
        s_world_step(step);
        if (s_rand(100) < 6) { /* the leader's own IMDS refuses POSTs for a while, or not */
            sc_ts_cfg_t cfg = {0};
            cfg.status = s_rand(2) ? 500 : 0;
            sc_ts_set(s_imds, &cfg);
        }
        if (step % 50 == 49) { /* the leader restarts over its store */
            sc_coord_destroy(&c);
            c = s_start("vm_0", s_dir, true);
            SC_REQUIRE(c);
            restarts++;
            for (int v2 = 0; v2 < N_VM; v2++) { /* its agents reconnect */
                char name[16];
                snprintf(name, sizeof(name), "vm_%d", v2);
                if (!s_ag[v2].gone)
                    sc_tp_hello(s_ag[v2].d, name, s_ag[v2].boot, s_fd[v2], v2, s_ag[v2].term);
            }
        }
        if (s_rand(100) < 8) { /* the operator rehearses (refused while anything is going on) */
            json_object *req =
                json_tokener_parse(s_rand(3) ? "{\"cmd\":\"rehearse\"}"
                                             : "{\"cmd\":\"rehearse\",\"event_type\":"
                                               "\"Preempt\",\"vms\":[\"vm_2\"]}");
            json_object *ans = sc_coord_control(c, req);
            rehearsals += ans && !json_object_object_get(ans, "error");
            json_object_put(ans);
            json_object_put(req);
        }
        for (int v2 = 0; v2 < N_VM; v2++)
            s_agent_round(v2);
        for (int k = 0; k < 3; k++)
            SC_CHECK_INT(sc_coord_step(c, 5), 0);
        s_world_approvals(c);
        s_sync_follower(lstore, f, &have);
    }
    s_settle(c, lstore); /* the comparisons below see what the leader holds */
    s_sync_follower(lstore, f, &have);
    /* the follower writes nothing of its own: its log is the leader's */
    {
        sc_dlog_entry_t *fv = NULL;
        size_t fn = 0;
        sc_store_t *fst = NULL;
        char fpath[128];

        SC_REQUIRE(sc_store_entries(lstore, 1, 1000000, &v, &n) == 0 && n > 0);
        snprintf(fpath, sizeof(fpath), "%s/coordinator.db", s_fdir);
        sc_coord_destroy(&f);
        SC_REQUIRE(sc_store_open_readonly(fpath, &fst, err, sizeof(err)) == 0);
        SC_REQUIRE(sc_store_entries(fst, 1, 1000000, &fv, &fn) == 0);
        SC_CHECK_INT(fn, n);
        for (size_t i = 0; i < fn && i < n; i++)
            if (fv[i].index != v[i].index || fv[i].term != v[i].term || fv[i].kind != v[i].kind ||
                strcmp(fv[i].data, v[i].data) != 0) {
                SC_FAILF("seed %u: the follower's entry %lld differs from the leader's", s_seed,
                         (long long)fv[i].index);
                break;
            }
        sc_dlog_entries_free(fv, fn);
        sc_dlog_entries_free(v, n);
        v = NULL;
        sc_store_close(&fst);
    }
    SC_REQUIRE(sc_store_entries(lstore, 1, 1000000, &v, &n) == 0 && n > 0);
    for (size_t i = 0; i < n; i++)
        kinds[v[i].kind]++;
    s_rh_entries += kinds[SC_DLOG_REHEARSAL];
    /* a leader appends only its own decisions */
    SC_CHECK_INT(sc_coord_follow(c, &v[n - 1], err, sizeof(err)), SC_E_STATE);
    printf("  seed %u: %zu entries, %d restarts; orders %d/%d, hook reports %d, intents %d, "
           "answers %d, started %d, ended %d, closed %d, members %d, alerts %d; %d rehearsals "
           "(%d entries)\n",
           s_seed, n, restarts, kinds[SC_DLOG_PREPARE_ORDERED], kinds[SC_DLOG_RECOVER_ORDERED],
           kinds[SC_DLOG_HOOK_PROGRESS], kinds[SC_DLOG_APPROVAL_INTENT],
           kinds[SC_DLOG_APPROVAL_ANSWER], kinds[SC_DLOG_EVENT_STARTED], kinds[SC_DLOG_EVENT_ENDED],
           kinds[SC_DLOG_EVENT_CLOSED], kinds[SC_DLOG_MEMBER], kinds[SC_DLOG_ALERT], rehearsals,
           kinds[SC_DLOG_REHEARSAL]);
    /* a run that exercised the machine: every kind a leader writes, some of each, and more
     * events closed than the rows keep (so 3 and 6 below compare stores that pruned) */
    SC_CHECK(restarts == 3 && kinds[SC_DLOG_PREPARE_ORDERED] && kinds[SC_DLOG_RECOVER_ORDERED] &&
             kinds[SC_DLOG_APPROVAL_ANSWER] && kinds[SC_DLOG_EVENT_CLOSED] > S_KEEP_CLOSED &&
             kinds[SC_DLOG_EVENT_STARTED]);
    SC_CHECK_INT(
        sc_store_test_int(lstore, "SELECT count(*) FROM events WHERE closed_ms IS NOT NULL"),
        S_KEEP_CLOSED);
    leader = s_text(sc_coord_state_json(c));

    /* 1. from empty */
    {
        sc_cstate_t *cs = s_fresh();
        s_apply_all(cs, v, 0, n);
        replayed = s_state_text(cs);
        if (strcmp(replayed, leader) != 0)
            SC_FAILF("seed %u: replayed from empty\n    %s\n  the leader holds\n    %s", s_seed,
                     replayed, leader);
        free(replayed);
        sc_cstate_destroy(&cs);
    }
    /* 2. from a snapshot taken mid-way, and from the leader's own last one */
    {
        size_t k = 1 + s_rand((unsigned)n - 1);
        sc_cstate_t *a = s_fresh(), *b = s_fresh();
        json_object *snap = NULL;
        char *text = NULL;
        int64_t at = 0;

        s_apply_all(a, v, 0, k);
        SC_REQUIRE(sc_cstate_to_json(a, &snap) == 0);
        SC_CHECK_INT(sc_cstate_from_json(b, snap, err, sizeof(err)), 0);
        json_object_put(snap);
        s_apply_all(b, v, k, n);
        replayed = s_state_text(b);
        if (strcmp(replayed, leader) != 0)
            SC_FAILF("seed %u: replayed from a snapshot at %zu differs", s_seed, k);
        free(replayed);
        sc_cstate_destroy(&a);
        sc_cstate_destroy(&b);
        SC_CHECK_INT(sc_store_last_snapshot(lstore, &at, &text), 0);
        SC_CHECK(at > 0 && text);
        if (at > 0 && text && (snap = json_tokener_parse(text))) {
            b = s_fresh();
            SC_CHECK_INT(sc_cstate_from_json(b, snap, err, sizeof(err)), 0);
            s_apply_all(b, v, (size_t)at, n);
            replayed = s_state_text(b);
            if (strcmp(replayed, leader) != 0)
                SC_FAILF("seed %u: replayed from the leader's snapshot at %lld differs", s_seed,
                         (long long)at);
            free(replayed);
            sc_cstate_destroy(&b);
            json_object_put(snap);
        }
        free(text);
    }
    /* 3. the store's rows, from the log alone */
    SC_REQUIRE(sc_store_open(":memory:", &fresh, err, sizeof(err)) == 0);
    sc_store_set_keep_closed(fresh, S_KEEP_CLOSED);
    for (size_t i = 0; i < n; i++)
        if (sc_store_append_entry(fresh, &v[i]) < 0) {
            SC_FAILF("seed %u: entry %lld refused by a fresh store: %s", s_seed,
                     (long long)v[i].index, sc_store_errmsg(fresh));
            break;
        }
    {
        char *a = s_rows(lstore), *b = s_rows(fresh);
        if (strcmp(a, b) != 0)
            SC_FAILF("seed %u: the store's rows from the log\n    %s\n  the leader's\n    %s",
                     s_seed, b, a);
        free(a);
        free(b);
    }
    /* 4. status shows the state */
    {
        json_object *st = sc_coord_status(c), *evs, *state = sc_coord_state_json(c), *sev;
        json_object_object_get_ex(st, "events", &evs);
        json_object_object_get_ex(state, "events", &sev);
        for (size_t i = 0; evs && i < json_object_array_length(evs); i++) {
            json_object *je = json_object_array_get_idx(evs, i), *drains;
            const char *id = json_object_get_string(json_object_object_get(je, "EventId"));
            for (size_t k = 0; sev && k < json_object_array_length(sev); k++) {
                json_object *ce = json_object_array_get_idx(sev, k), *cd;
                if (strcmp(json_object_get_string(json_object_object_get(
                               json_object_object_get(ce, "event"), "EventId")),
                           id) != 0)
                    continue;
                SC_CHECK_STR(json_object_get_string(json_object_object_get(je, "approval")),
                             json_object_get_string(json_object_object_get(ce, "approval")));
                json_object_object_get_ex(je, "drains", &drains);
                json_object_object_get_ex(ce, "drains", &cd);
                json_object_object_foreach(cd, vm, d)
                {
                    SC_CHECK_STR(json_object_get_string(json_object_object_get(drains, vm)),
                                 json_object_get_string(json_object_object_get(d, "state")));
                }
            }
        }
        json_object_put(st);
        json_object_put(state);
    }
    /* 6. a member that joins with nothing installs the leader's snapshot */
    {
        sc_coord_t *g = s_start("vm_2", s_gdir, false);
        int64_t idx = 0, term = 0;
        char *text = sc_coord_snapshot_text(c, &idx, &term), *bad, *p, *gs, *empty, *ls, *gr;
        sc_store_t *gst = NULL;
        json_object *gstat;
        char gpath[128];

        SC_REQUIRE(g && text);
        SC_CHECK(idx > 0 && term > 0);
        empty = s_text(sc_coord_state_json(g));
        /* a column it does not have: refused whole */
        SC_REQUIRE((bad = strdup(text)) && (p = strstr(bad, "\"columns\":[\"name\"")));
        memcpy(p + strlen("\"columns\":[\""), "nope", 4);
        SC_CHECK(sc_coord_install_snapshot(g, bad, idx, term, err, sizeof(err)) < 0);
        SC_CHECK(strstr(err, "nope") != NULL);
        gs = s_text(sc_coord_state_json(g));
        SC_CHECK_STR(gs, empty);
        free(gs);
        free(bad);
        /* the leader's: its state and its rows */
        SC_CHECK_INT(sc_coord_install_snapshot(g, text, idx, term, err, sizeof(err)), 0);
        gs = s_text(sc_coord_state_json(g));
        ls = s_text(sc_coord_state_json(c));
        if (strcmp(gs, ls) != 0)
            SC_FAILF("seed %u: the installed state\n    %s\n  the leader's\n    %s", s_seed, gs,
                     ls);
        gstat = sc_coord_status(g);
        SC_CHECK_INT(json_object_get_int64(json_object_object_get(gstat, "log_base_index")), idx);
        SC_CHECK_INT(json_object_get_int64(json_object_object_get(gstat, "applied_index")), idx);
        json_object_put(gstat);
        sc_coord_destroy(&g);
        snprintf(gpath, sizeof(gpath), "%s/coordinator.db", s_gdir);
        SC_REQUIRE(sc_store_open_readonly(gpath, &gst, err, sizeof(err)) == 0);
        gr = s_rows(gst);
        {
            char *lr = s_rows(lstore);
            if (strcmp(gr, lr) != 0)
                SC_FAILF("seed %u: the installed rows\n    %s\n  the leader's\n    %s", s_seed, gr,
                         lr);
            free(lr);
        }
        free(gr);
        sc_store_close(&gst);
        /* started again, it replays from the installed snapshot: the same state */
        g = s_start("vm_2", s_gdir, false);
        SC_REQUIRE(g);
        free(gs);
        gs = s_text(sc_coord_state_json(g));
        SC_CHECK_STR(gs, ls);
        sc_coord_destroy(&g);
        free(gs);
        free(ls);
        free(empty);
        free(text);
    }
    free(leader);
    sc_dlog_entries_free(v, n);
    sc_store_close(&fresh);
    sc_store_close(&lstore);
    sc_coord_destroy(&c);
    for (int v2 = 0; v2 < N_VM; v2++) {
        sc_msg_destroy(&s_ag[v2].pending);
        zmq_close(s_ag[v2].d);
    }
    zmq_ctx_term(zctx);
    for (size_t i = 0; i < s_trace_n; i++)
        free(s_trace[i]);
    free(s_trace);
}

int main(void)
{
    static const unsigned seeds[] = {1, 2, 3};
    const char *seed = getenv("SC_SEED");
    size_t off = 0;

    snprintf(s_dir, sizeof(s_dir), "/tmp/sc_replay_%d", (int)getpid());
    snprintf(s_fdir, sizeof(s_fdir), "/tmp/sc_replay_f_%d", (int)getpid());
    snprintf(s_gdir, sizeof(s_gdir), "/tmp/sc_replay_g_%d", (int)getpid());
    for (int v = 0; v < N_VM; v++) {
        s_port[v] = sc_test_free_port();
        off += (size_t)snprintf(s_members + off, sizeof(s_members) - off, "%svm_%d=127.0.0.1:%d",
                                v ? "," : "", v, s_port[v]);
    }
    s_imds = sc_ts_start("/vm_0");
    if (!s_imds) {
        printf("no fake IMDS\n");
        return 1;
    }
    for (size_t i = 0; i < (seed ? 1 : sizeof(seeds) / sizeof(seeds[0])); i++) {
        s_seed = seed ? (unsigned)strtoul(seed, NULL, 10) : seeds[i];
        printf("SC_SEED=%u\n", s_seed);
        sc_ts_set(s_imds, NULL);
        SC_RUN(replay_and_follower_equal_the_leader);
        sc_tp_rm_state(s_dir);
        sc_tp_rm_state(s_fdir);
        sc_tp_rm_state(s_gdir);
    }
    sc_ts_stop(&s_imds);
    if (!seed && !s_rh_entries) {
        printf("FAIL no seed rehearsed: the rehearsal entries were not replayed\n");
        return 1;
    }
    return sc_test_done();
}
