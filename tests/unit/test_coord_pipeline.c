/* The decision log as a pipeline (issue 20): two real coordinators of three voters (vm_0, vm_1;
 * vm_2's coordinator never runs, its agent is a fake one), in this one thread, on loopback.
 * A coordinator that is not stepped is a follower whose answers are late — as late as the
 * test likes, deterministically: here a commit takes as long as the test wants.
 *
 *   1. A new leader whose term's first entry cannot commit for longer than the old commit gate
 *      (400 ms) acts once it commits (it was stuck forever: role=leader, may_act=false).
 *   2. A document bringing two new events while commits are slow records both (the second was
 *      dropped when the first missed the gate, and never recorded).
 *   3. Orders and approvals are effects of committed entries: none goes out while its entry is
 *      not committed, each goes out once it is; a delegate's answer sent to a follower (a
 *      leader that stepped down in the same term) is not written to its log.
 *   4. An approval whose delegate never answers is "unknown", not "failed".
 *   5. A member that installs a snapshot plans the events it holds (nemesis seed 706).
 *   6.-8. A rollback's recover held while its event runs; a prepare order's until_ms; an
 *      eviction over while nobody led.
 *   9. A follower's timers of an event go with the event's close, applied: one that leads
 *      next holds nothing in flight (coord_leader_reboot on CI: the lead never went back). */
#include "sc_coord.h"
#include "sc_coord_int.h" /* 9: a coordinator's event timers (n_ev), its view round's clock */
#include "sc_error.h"
#include "sc_msg.h"
#include "sc_store.h"
#include "sc_test.h"
#include "sc_test_net.h"
#include "sc_test_peer.h"
#include "sc_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define N_VM 3

static char s_dir[N_VM][64], s_members[256], s_imds[N_VM][64];
static int s_port[N_VM];
static sc_coord_t *s_c[2];          /* vm_0, vm_1 */
static int64_t s_resend_ms = 60000; /* an order goes out as its entry's effect, not as a resend */

static sc_coord_t *s_start(int v)
{
    char err[512] = "", name[16];
    sc_coord_opts_t o;
    sc_coord_t *c = NULL;
    int rc;

    snprintf(name, sizeof(name), "vm_%d", v);
    snprintf(s_imds[v], sizeof(s_imds[v]), "http://127.0.0.1:1/vm_%d", v); /* never asked */
    sc_coord_opts_init(&o);
    o.name = name;
    o.imds_url = s_imds[v];
    o.members = s_members;
    o.state_dir = s_dir[v];
    o.insecure = true;
    o.start_grace_ms = 0;
    o.resend_ms = s_resend_ms;
    o.dead_after_ms = 600000;
    o.voters = 3;
    o.election_ms = 2000; /* a follower not stepped for 700 ms does not campaign */
    o.stall_ms = 600000;  /* nor is a leader not stepped a stall of its own */
    if ((rc = sc_coord_new(&o, &c, err, sizeof(err))) < 0)
        SC_FAILF("sc_coord_new %s: %s (%s)", name, sc_errname(rc), err);
    return c;
}

/* A status field of coordinator c (a string or a boolean as "true"/"false"), copied to buf. */
static const char *s_field(sc_coord_t *c, const char *key, char *buf, size_t len)
{
    json_object *st = sc_coord_status(c), *v = NULL;

    buf[0] = 0;
    if (st && json_object_object_get_ex(st, key, &v) && v)
        snprintf(buf, len, "%s", json_object_get_string(v));
    json_object_put(st);
    return buf;
}

static int64_t s_int(sc_coord_t *c, const char *key)
{
    json_object *st = sc_coord_status(c), *v = NULL;
    int64_t n = -1;

    if (st && json_object_object_get_ex(st, key, &v) && v)
        n = json_object_get_int64(v);
    json_object_put(st);
    return n;
}

static bool s_is(sc_coord_t *c, const char *key, const char *want)
{
    char buf[64];
    return strcmp(s_field(c, key, buf, sizeof(buf)), want) == 0;
}

/* Steps the coordinators in mask (bit i: s_c[i]) for ms, a few ms each turn. */
static void s_step(unsigned mask, int ms)
{
    int64_t end = sc_mono_ms() + ms;
    do {
        for (int i = 0; i < 2; i++)
            if (mask & (1u << i))
                SC_CHECK_INT(sc_coord_step(s_c[i], 2), 0);
    } while (sc_mono_ms() < end);
}

/* Steps both until s_c[l] has status key == want, at most ms. */
static bool s_until(int l, const char *key, const char *want, int ms)
{
    int64_t end = sc_mono_ms() + ms;
    while (!s_is(s_c[l], key, want) && sc_mono_ms() < end)
        s_step(3, 5);
    return s_is(s_c[l], key, want);
}

/* Both started, stepped until one leads: its index. */
static int s_elect(void)
{
    int64_t end = sc_mono_ms() + 15000;

    for (int v = 0; v < N_VM; v++) {
        snprintf(s_dir[v], sizeof(s_dir[v]), "/tmp/sc_pipe_%d_XXXXXX", v);
        if (!mkdtemp(s_dir[v]))
            SC_FAILF("mkdtemp");
    }
    s_c[0] = s_start(0);
    s_c[1] = s_start(1);
    if (!s_c[0] || !s_c[1])
        return 0;
    /* one at a time, stopping at once: the winner's term entry is not answered yet */
    while (sc_mono_ms() < end)
        for (int i = 0; i < 2; i++) {
            SC_CHECK_INT(sc_coord_step(s_c[i], 2), 0);
            if (s_is(s_c[i], "role", "leader"))
                return i;
        }
    SC_FAILF("no leader in 15 s");
    return 0;
}

static void s_stop(void)
{
    for (int i = 0; i < 2; i++)
        sc_coord_destroy(&s_c[i]);
    for (int v = 0; v < N_VM; v++)
        sc_tp_rm_state(s_dir[v]);
}

static bool s_state_has(sc_coord_t *c, const char *id)
{
    json_object *st = sc_coord_state_json(c);
    bool has = st && strstr(json_object_to_json_string(st), id) != NULL;
    json_object_put(st);
    return has;
}

/* vm_2's fake agent, connected to s_c[l] (its coordinator never runs): hello, then doc. */
static void *s_agent2(void *z, int l, uint64_t term, const char *doc)
{
    void *d = sc_tp_dealer(z, s_port[l]);

    sc_tp_hello(d, "vm_2", "boot-2", 2, 2, term);
    sc_tp_doc(d, "vm_2", term, 2, doc, sc_wall_ms());
    return d;
}

/* 1: the leader acts once its term's first entry commits, however late. */
SC_TEST(leader_acts_once_its_term_entry_commits_late)
{
    int l = s_elect(), f = 1 - l;
    int64_t term = s_int(s_c[l], "term");

    /* only the leader runs: its TERM entry waits for the other voter's answer */
    s_step(1u << l, 700);
    SC_CHECK(s_is(s_c[l], "role", "leader"));
    SC_CHECK(s_is(s_c[l], "may_act", "false"));
    /* the follower answers, 700 ms late: the entry commits, the leader acts */
    if (!s_until(l, "may_act", "true", 5000))
        SC_FAILF("leader vm_%d never acts: commit=%lld last=%lld", l,
                 (long long)s_int(s_c[l], "commit_index"), (long long)s_int(s_c[l], "last_index"));
    SC_CHECK(s_is(s_c[l], "role", "leader"));
    SC_CHECK_INT(s_int(s_c[l], "term"), term);
    /* one TERM entry for the term (and the members recorded), not one per loop turn */
    SC_CHECK(s_int(s_c[l], "last_index") <= 3 + N_VM);
    SC_CHECK(s_is(s_c[f], "role", "follower") || s_is(s_c[f], "role", "voter"));
    s_stop();
}

static const char *s_doc2 =
    "{\"DocumentIncarnation\":2,\"Events\":["
    "{\"EventId\":\"E1-pipe\",\"EventType\":\"Reboot\",\"ResourceType\":\"VirtualMachine\","
    "\"Resources\":[\"vm_2\"],\"EventStatus\":\"Scheduled\",\"NotBefore\":\"Mon, 01 Jan 2046 "
    "00:00:00 GMT\",\"Description\":\"\",\"EventSource\":\"Platform\",\"DurationInSeconds\":-1},"
    "{\"EventId\":\"E2-pipe\",\"EventType\":\"Redeploy\",\"ResourceType\":\"VirtualMachine\","
    "\"Resources\":[\"vm_2\"],\"EventStatus\":\"Scheduled\",\"NotBefore\":\"Mon, 01 Jan 2046 "
    "00:00:00 GMT\",\"Description\":\"\",\"EventSource\":\"Platform\",\"DurationInSeconds\":-1}]}";

/* 2: two new events in one document while commits are slow: both recorded, on both. */
SC_TEST(slow_commits_drop_no_event_of_a_document)
{
    int l = s_elect(), f = 1 - l;
    void *z = zmq_ctx_new(), *d;
    uint64_t term;

    SC_REQUIRE(s_until(l, "may_act", "true", 5000));
    term = (uint64_t)s_int(s_c[l], "term");
    d = s_agent2(z, l, term, s_doc2);
    s_step(1u << l, 700); /* the leader alone: nothing commits */
    SC_CHECK(!s_state_has(s_c[l], "E1-pipe"));
    /* both stepped: until both hold both (the commits decide, not a time) */
    for (int64_t end = sc_mono_ms() + 10000;
         sc_mono_ms() < end && !(s_state_has(s_c[l], "E2-pipe") && s_state_has(s_c[f], "E2-pipe"));)
        s_step(3, 5);
    SC_CHECK(s_state_has(s_c[l], "E1-pipe"));
    SC_CHECK(s_state_has(s_c[l], "E2-pipe"));
    SC_CHECK(s_state_has(s_c[f], "E1-pipe"));
    SC_CHECK(s_state_has(s_c[f], "E2-pipe"));
    zmq_close(d);
    zmq_ctx_term(z);
    s_stop();
}

/* The next message of type t for the fake agent on d (stepping mask meanwhile), or NULL. */
static sc_msg_t *s_agent_wait(void *d, sc_msg_type_t t, unsigned mask, int ms)
{
    int64_t end = sc_mono_ms() + ms;
    sc_msg_t *m;

    do {
        while ((m = sc_tp_recv(d))) {
            if (m->type == t)
                return m;
            sc_msg_destroy(&m);
        }
        s_step(mask, 5);
    } while (sc_mono_ms() < end);
    return NULL;
}

static void s_progress(void *d, const sc_msg_t *order, sc_msg_hook_state_t state, uint64_t seq)
{
    sc_msg_t *m = NULL;

    SC_REQUIRE(sc_msg_new(SC_MSG_HOOK_PROGRESS, "vm_2", order->term, seq, &m) == 0);
    snprintf(m->hook_progress.event, sizeof(m->hook_progress.event), "%s", order->order.event);
    m->hook_progress.phase = order->order.action;
    m->hook_progress.state = state;
    m->hook_progress.exit_status = state == SC_MSG_HOOK_DONE ? 0 : -1;
    m->hook_progress.origin = SC_MSG_ORIGIN_ORDER;
    m->hook_progress.order_term = order->term;
    m->hook_progress.attempt = order->order.attempt;
    sc_tp_send(d, m);
}

static const char *s_doc1 =
    "{\"DocumentIncarnation\":3,\"Events\":["
    "{\"EventId\":\"E3-pipe\",\"EventType\":\"Reboot\",\"ResourceType\":\"VirtualMachine\","
    "\"Resources\":[\"vm_2\"],\"EventStatus\":\"Scheduled\",\"NotBefore\":\"Mon, 01 Jan 2046 "
    "00:00:00 GMT\",\"Description\":\"\",\"EventSource\":\"Platform\",\"DurationInSeconds\":-1}]}";

/* The decision log at dir as sc_store_history_json gives it (the caller's), read through a
 * read-only connection beside the running coordinator; NULL when it cannot be read. */
static json_object *s_history(const char *dir)
{
    char path[128], err[256];
    sc_store_t *st = NULL;
    json_object *hist = NULL;

    snprintf(path, sizeof(path), "%s/coordinator.db", dir);
    if (sc_store_open_readonly(path, &st, err, sizeof(err)) == 0 &&
        sc_store_history_json(st, 1000, &hist, NULL, 0) < 0)
        hist = NULL;
    sc_store_close(&st);
    return hist;
}

/* The approval answers in the decision log at dir: *ret_unknown without an HTTP status (the
 * POST may still land), *ret_failed definite failures. Whether there is any. */
static bool s_answers(const char *dir, int *ret_unknown, int *ret_failed)
{
    json_object *hist = s_history(dir);

    *ret_unknown = *ret_failed = 0;
    for (size_t i = 0; hist && i < json_object_array_length(hist); i++) {
        json_object *e = json_object_array_get_idx(hist, i), *d, *u;
        if (strcmp(json_object_get_string(json_object_object_get(e, "kind")), "approval_answer") !=
                0 ||
            !json_object_object_get_ex(e, "data", &d))
            continue;
        if (json_object_object_get_ex(d, "unknown", &u) && json_object_get_boolean(u))
            (*ret_unknown)++;
        else if (json_object_get_int(json_object_object_get(d, "rc")) != 0)
            (*ret_failed)++;
    }
    json_object_put(hist);
    return *ret_unknown + *ret_failed > 0;
}

/* 3 and 4: an order and a delegation go out only once their entries commit; a delegate's answer
 * to a follower is not logged there; a delegate that never answers leaves the approval unknown
 * (blocks rollback), not failed. */
SC_TEST(effects_wait_for_their_commit)
{
    int l = s_elect(), f = 1 - l;
    void *z = zmq_ctx_new(), *d, *df;
    sc_msg_t *order, *via, *r = NULL;
    uint64_t term;
    int64_t before, rejected;
    int unknown = 0, failed = 0;
    json_object *st;
    char buf[64];

    SC_REQUIRE(s_until(l, "may_act", "true", 5000));
    term = (uint64_t)s_int(s_c[l], "term");
    d = s_agent2(z, l, term, s_doc1);
    /* the leader alone: it plans the prepare (an entry), but no order goes out uncommitted */
    order = s_agent_wait(d, SC_MSG_ORDER, 1u << l, 800);
    SC_CHECK(order == NULL);
    sc_msg_destroy(&order);
    order = s_agent_wait(d, SC_MSG_ORDER, 3, 3000);
    SC_REQUIRE(order != NULL);
    SC_CHECK_INT(order->order.action, SC_MSG_PHASE_PREPARE);
    s_progress(d, order, SC_MSG_HOOK_STARTED, 3);
    s_progress(d, order, SC_MSG_HOOK_DONE, 4);
    sc_msg_destroy(&order);
    /* drained: the approval is delegated to vm_2 (the only one that sees it) — once committed */
    via = s_agent_wait(d, SC_MSG_APPROVE_VIA, 1u << l, 800);
    SC_CHECK(via == NULL);
    sc_msg_destroy(&via);
    via = s_agent_wait(d, SC_MSG_APPROVE_VIA, 3, 3000);
    SC_REQUIRE(via != NULL);
    SC_CHECK_INT((int64_t)via->approve_via.n_events, 1);
    /* the follower knows the intent once the commit reaches it: stepped until it does */
    for (int64_t end = sc_mono_ms() + 10000;
         sc_mono_ms() < end && s_int(s_c[f], "applied_index") < s_int(s_c[l], "applied_index");)
        s_step(3, 5);
    SC_CHECK(s_int(s_c[f], "applied_index") >= s_int(s_c[l], "applied_index"));
    /* 3: a delegate's answer sent to the follower (in this term) is not written to its log */
    before = s_int(s_c[f], "last_index");
    df = sc_tp_dealer(z, s_port[f]);
    SC_REQUIRE(sc_msg_new(SC_MSG_APPROVE_RESULT, "vm_2", term, 9, &r) == 0);
    sc_msg_add_event(r, "E3-pipe");
    r->approve_result.http_status = 200;
    snprintf(r->approve_result.result, sizeof(r->approve_result.result), "OK");
    sc_tp_send(df, r);
    /* then a message the follower refuses and counts: once counted, the answer before it on
     * the same connection was handled */
    rejected = s_int(s_c[f], "rejected_messages");
    SC_REQUIRE(sc_msg_new(SC_MSG_DOC_REQUEST, "vm_2", term, 10, &r) == 0);
    sc_tp_send(df, r);
    for (int64_t end = sc_mono_ms() + 10000;
         sc_mono_ms() < end && s_int(s_c[f], "rejected_messages") == rejected;)
        s_step(1u << f, 5);
    SC_CHECK(s_int(s_c[f], "rejected_messages") > rejected);
    SC_CHECK_INT(s_int(s_c[f], "last_index"), before);
    /* 4: the delegate never answers: after its 15 s (S_VIA_TIMEOUT_MS) the approval is
     * unknown, not failed. Stepped until an answer is in the leader's log (the planner POSTs
     * again at once: its state is an intent again; the answer says it) */
    for (int64_t end = sc_mono_ms() + 30000;
         sc_mono_ms() < end && !s_answers(s_dir[l], &unknown, &failed);)
        s_step(3, 250);
    SC_CHECK_INT(unknown, 1);
    SC_CHECK_INT(failed, 0);
    st = sc_coord_state_json(s_c[l]);
    SC_REQUIRE(st);
    {
        const char *t = json_object_to_json_string(st);
        const char *e = strstr(t, "E3-pipe");
        snprintf(buf, sizeof(buf), "%s",
                 e && strstr(e, "\"approval\": \"failed\"") ? "failed" : "not failed");
        SC_CHECK_STR(buf, "not failed");
    }
    json_object_put(st);
    sc_msg_destroy(&via);
    zmq_close(df);
    zmq_close(d);
    zmq_ctx_term(z);
    s_stop();
}

/* The index of the last entry of kind (with state, for hook_progress) in the log at dir, 0 when
 * none. */
static int64_t s_last_of(const char *dir, const char *kind, const char *state)
{
    json_object *hist = s_history(dir);
    int64_t idx = 0;

    for (size_t i = 0; hist && i < json_object_array_length(hist); i++) {
        json_object *e = json_object_array_get_idx(hist, i), *d = NULL;
        const char *s;
        if (strcmp(json_object_get_string(json_object_object_get(e, "kind")), kind) != 0)
            continue;
        if (state && (!json_object_object_get_ex(e, "data", &d) ||
                      !(s = json_object_get_string(json_object_object_get(d, "state"))) ||
                      strcmp(s, state) != 0))
            continue;
        idx = json_object_get_int64(json_object_object_get(e, "index"));
    }
    json_object_put(hist);
    return idx;
}

static const char *s_doc5 =
    "{\"DocumentIncarnation\":5,\"Events\":["
    "{\"EventId\":\"E5-pipe\",\"EventType\":\"Reboot\",\"ResourceType\":\"VirtualMachine\","
    "\"Resources\":[\"vm_2\"],\"EventStatus\":\"Scheduled\",\"NotBefore\":\"Mon, 01 Jan 2046 "
    "00:00:00 GMT\",\"Description\":\"\",\"EventSource\":\"Platform\",\"DurationInSeconds\":-1}]}";

/* The approval is decided in the same commit round as the last "done" (issue 20's latency
 * goal: two rounds, the done's then the intent's, were the floor): the planner counts the hook
 * progress the leader proposed before it is applied; the intent, an entry after the done's,
 * commits with it, and its effect (here a delegation) still waits for that commit. */
SC_TEST(approval_proposed_with_the_last_done)
{
    int l = s_elect();
    void *z = zmq_ctx_new(), *d;
    sc_msg_t *order, *via;
    int64_t done, intent;
    uint64_t term;

    SC_REQUIRE(s_until(l, "may_act", "true", 5000));
    term = (uint64_t)s_int(s_c[l], "term");
    d = s_agent2(z, l, term, s_doc5);
    order = s_agent_wait(d, SC_MSG_ORDER, 3, 3000);
    SC_REQUIRE(order != NULL && order->order.action == SC_MSG_PHASE_PREPARE);
    s_progress(d, order, SC_MSG_HOOK_STARTED, 3);
    for (int64_t end = sc_mono_ms() + 5000;
         sc_mono_ms() < end && !s_last_of(s_dir[l], "hook_progress", "started");)
        s_step(3, 5);
    /* both stepped until what is proposed is applied (the "started" among it) */
    for (int64_t end = sc_mono_ms() + 5000;
         sc_mono_ms() < end && s_int(s_c[l], "applied_index") < s_int(s_c[l], "last_index");)
        s_step(3, 5);
    SC_REQUIRE(s_int(s_c[l], "applied_index") == s_int(s_c[l], "last_index"));
    /* the leader alone from the "done" on: nothing of it commits */
    s_progress(d, order, SC_MSG_HOOK_DONE, 4);
    sc_msg_destroy(&order);
    for (int64_t end = sc_mono_ms() + 3000;
         sc_mono_ms() < end && !s_last_of(s_dir[l], "approval_intent", NULL);)
        s_step(1u << l, 5);
    done = s_last_of(s_dir[l], "hook_progress", "done");
    intent = s_last_of(s_dir[l], "approval_intent", NULL);
    SC_CHECK(done > 0);
    SC_CHECK(intent > done); /* decided while the done was not committed */
    SC_CHECK(s_int(s_c[l], "commit_index") < done);
    /* its effect waits for the commit: none while the follower is not stepped ... */
    via = s_agent_wait(d, SC_MSG_APPROVE_VIA, 1u << l, 300);
    SC_CHECK(via == NULL);
    sc_msg_destroy(&via);
    /* ... and goes out once both entries commit, in one round */
    via = s_agent_wait(d, SC_MSG_APPROVE_VIA, 3, 3000);
    SC_CHECK(via != NULL);
    SC_CHECK(s_int(s_c[l], "commit_index") >= intent);
    sc_msg_destroy(&via);
    zmq_close(d);
    zmq_ctx_term(z);
    s_stop();
}

/* A document from vm_2 (incarnation inc): E-A on vm_2 (NotBefore far away), and, when
 * b_in_s is not 0, E-B on vm_0 (another domain; vm_0 has no agent, so it is never drained) with
 * its NotBefore b_in_s seconds from now (rounded to the second, as IMDS writes it). Into buf;
 * *ret_nb_ms: E-B's NotBefore in unix ms. */
static const char *s_doc_ab(char *buf, size_t len, int inc, int b_in_s, int64_t *ret_nb_ms)
{
    time_t nb = (time_t)(sc_wall_ms() / 1000) + b_in_s;
    struct tm tm;
    char when[64];
    int n;

    gmtime_r(&nb, &tm);
    strftime(when, sizeof(when), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    *ret_nb_ms = (int64_t)nb * 1000;
    n = snprintf(buf, len,
                 "{\"DocumentIncarnation\":%d,\"Events\":["
                 "{\"EventId\":\"EA-until\",\"EventType\":\"Reboot\",\"ResourceType\":"
                 "\"VirtualMachine\",\"Resources\":[\"vm_2\"],\"EventStatus\":\"Scheduled\","
                 "\"NotBefore\":\"Mon, 01 Jan 2046 00:00:00 GMT\",\"Description\":\"\","
                 "\"EventSource\":\"Platform\",\"DurationInSeconds\":-1}",
                 inc);
    if (b_in_s)
        n += snprintf(buf + n, len - (size_t)n,
                      ",{\"EventId\":\"EB-until\",\"EventType\":\"Reboot\",\"ResourceType\":"
                      "\"VirtualMachine\",\"Resources\":[\"vm_0\"],\"EventStatus\":"
                      "\"Scheduled\",\"NotBefore\":\"%s\",\"Description\":\"\","
                      "\"EventSource\":\"Platform\",\"DurationInSeconds\":-1}",
                      when);
    snprintf(buf + n, len - (size_t)n, "]}");
    return buf;
}

/* nemesis open-seed-14: an order sent before a partition reached its agent after the heal,
 * once another domain's event had gone at NotBefore, and drained a second domain while that
 * one was down undrained (rule 2). A prepare order says until when it may start (the earliest
 * NotBefore of an event Azure may start undrained in another domain; the agent refuses it
 * after that: test_agent_core late_prepare_refused), and the leader holds its re-sends once
 * that moment has passed. Seen failing without it: until_ms 0 in every order, the re-send
 * sent. */
/* After a document that should hold the order: the re-sends from before it was applied are
 * dropped, then whether no order came in 1.5 s. */
static bool s_held(void *d)
{
    sc_msg_t *order;

    s_step(3, 200);
    while ((order = sc_tp_recv(d)))
        sc_msg_destroy(&order); /* re-sends before that document was applied */
    order = s_agent_wait(d, SC_MSG_ORDER, 3, 1500);
    bool none = order == NULL;
    sc_msg_destroy(&order); /* sets order to NULL: read before */
    return none;
}

SC_TEST(prepare_order_carries_until_and_is_held_after)
{
    int l;
    void *z = zmq_ctx_new(), *d, *d0;
    sc_msg_t *order;
    char doc[2048], buf[64];
    int64_t nb_ms;
    uint64_t term;

    s_resend_ms = 300;
    l = s_elect();
    SC_REQUIRE(s_until(l, "may_act", "true", 5000));
    term = (uint64_t)s_int(s_c[l], "term");
    /* E-A alone: its prepare may start any time */
    d = s_agent2(z, l, term, s_doc_ab(doc, sizeof(doc), 7, 0, &nb_ms));
    order = s_agent_wait(d, SC_MSG_ORDER, 3, 3000);
    SC_REQUIRE(order != NULL && order->order.action == SC_MSG_PHASE_PREPARE);
    SC_CHECK_STR(order->order.event, "EA-until");
    SC_CHECK(order->order.until_ms == 0);
    sc_msg_destroy(&order);
    /* E-B on vm_0, another domain, due in 120 s: the re-sent order may start until then */
    sc_tp_doc(d, "vm_2", term, 3, s_doc_ab(doc, sizeof(doc), 8, 120, &nb_ms), sc_wall_ms());
    for (int64_t end = sc_mono_ms() + 3000;
         sc_mono_ms() < end && !*sc_tp_state_event(s_c[l], "EB-until", "phase", doc, 64);)
        s_step(3, 5);
    while ((order = sc_tp_recv(d)))
        sc_msg_destroy(&order); /* re-sends from before E-B was known */
    order = s_agent_wait(d, SC_MSG_ORDER, 3, 3000);
    SC_REQUIRE(order != NULL);
    SC_CHECK_STR(order->order.event, "EA-until");
    /* until NotBefore less a guard of 2 s (nemesis open-seed-65: until NotBefore itself, the
     * prepare's hook started 51 ms after vm_0's domain went down) */
    SC_CHECK(order->order.until_ms == nb_ms - 2000);
    sc_msg_destroy(&order);
    /* E-B due in 1 s, inside the guard: held, not sent again (sent before the guard) */
    sc_tp_doc(d, "vm_2", term, 4, s_doc_ab(doc, sizeof(doc), 9, 1, &nb_ms), sc_wall_ms());
    SC_CHECK(s_held(d));
    /* E-B's NotBefore moved into the past, not started: held, not sent again */
    sc_tp_doc(d, "vm_2", term, 5, s_doc_ab(doc, sizeof(doc), 10, -5, &nb_ms), sc_wall_ms());
    SC_CHECK(s_held(d));
    /* vm_0's own agent reports, its document without E-B: past NotBefore, not started, a live
     * VM whose own document no longer holds the event is not going down for it (over, or
     * cancelled: the registry keeps it while vm_2's view holds it), and the order goes again,
     * as the planner reads it (nemesis seed 65 of the campaign on c8a6ed2: a restarted
     * leader's registry kept an event that had ended as Scheduled; FD 1's prepare was held
     * behind it, which the planner counted as FD 1's turn: FD 2's events went at NotBefore).
     * Seen failing without the fix: no order in 3 s. */
    d0 = sc_tp_dealer(z, s_port[l]);
    sc_tp_hello(d0, "vm_0", "boot-0", 0, 0, term);
    sc_tp_doc(d0, "vm_0", term, 2, s_doc_ab(doc, sizeof(doc), 10, 0, &nb_ms), sc_wall_ms());
    order = s_agent_wait(d, SC_MSG_ORDER, 3, 3000);
    SC_REQUIRE(order != NULL);
    SC_CHECK_STR(order->order.event, "EA-until");
    SC_CHECK(order->order.until_ms == 0);
    sc_msg_destroy(&order);
    /* vm_0's view holds E-B again: held again */
    sc_tp_doc(d0, "vm_0", term, 3, s_doc_ab(doc, sizeof(doc), 10, -5, &nb_ms), sc_wall_ms());
    SC_CHECK(s_held(d));
    /* and without it once more: vm_0's agent then stops (alive for --dead-after yet), its view
     * without E-B, so that E-B's end below is its end for every live view */
    sc_tp_doc(d0, "vm_0", term, 4, s_doc_ab(doc, sizeof(doc), 10, 0, &nb_ms), sc_wall_ms());
    s_step(3, 200);
    zmq_close(d0);
    /* E-B started without our approval (vm_0 down undrained), then over: vm_0 is not
     * recovered (it has no agent), so the order is still held (nemesis seed 82: sent again the
     * moment the event ended, the prepare began while the other domain was recovering) */
    snprintf(doc, sizeof(doc),
             "{\"DocumentIncarnation\":11,\"Events\":["
             "{\"EventId\":\"EA-until\",\"EventType\":\"Reboot\",\"ResourceType\":"
             "\"VirtualMachine\",\"Resources\":[\"vm_2\"],\"EventStatus\":\"Scheduled\","
             "\"NotBefore\":\"Mon, 01 Jan 2046 00:00:00 GMT\",\"Description\":\"\","
             "\"EventSource\":\"Platform\",\"DurationInSeconds\":-1},"
             "{\"EventId\":\"EB-until\",\"EventType\":\"Reboot\",\"ResourceType\":"
             "\"VirtualMachine\",\"Resources\":[\"vm_0\"],\"EventStatus\":\"Started\","
             "\"NotBefore\":\"\",\"Description\":\"\",\"EventSource\":\"Platform\","
             "\"DurationInSeconds\":-1}]}");
    sc_tp_doc(d, "vm_2", term, 6, doc, sc_wall_ms());
    s_step(3, 300);
    sc_tp_doc(d, "vm_2", term, 7, s_doc_ab(doc, sizeof(doc), 12, 0, &nb_ms), sc_wall_ms());
    for (int64_t end = sc_mono_ms() + 3000;
         sc_mono_ms() < end &&
         strcmp(sc_tp_state_event(s_c[l], "EB-until", "phase", buf, sizeof(buf)), "Ended") != 0;)
        s_step(3, 5);
    SC_CHECK_STR(buf, "Ended");
    while ((order = sc_tp_recv(d)))
        sc_msg_destroy(&order);
    order = s_agent_wait(d, SC_MSG_ORDER, 3, 1500);
    SC_CHECK(order == NULL);
    sc_msg_destroy(&order);
    zmq_close(d);
    zmq_ctx_term(z);
    s_stop();
    s_resend_ms = 60000;
}

/* nemesis seed 62: a Preempt of vm_2 came and went while nobody led — here only the follower
 * vm_1 heard it, from vm_2's agent — and the new leader's take-over skipped it ("over before
 * anyone decided it"): vm_2 never left, and later events that named the deleted VM owed it a
 * recover no agent could run. The take-over decides it now (seen, started, ended) and the
 * member leaves. Whichever of vm_0 and vm_1 won the election (l), the other (f) alone hears the
 * Preempt and is made leader by l's handover: l's own VM is drained for R. (Waiting for the
 * preferred member vm_0 to lead cost 10 s, a handover back, whenever vm_1 won.) Seen failing
 * without the fix: P not in f's state, vm_2 not gone. */
/* The leader l's own VM drained for an event (its agent's document through a dealer): l hands
 * the lead to the other, which is then stepped until its state has member gone, at most 5 s
 * after it may act. Whether it was. */
static bool s_handed_over_then_gone(void *z, int l, uint64_t term, const char *member)
{
    int f = 1 - l;
    void *dl = sc_tp_dealer(z, s_port[l]);
    char doc[1024], self[8];
    json_object *st, *ms = NULL;
    bool gone = false;

    snprintf(self, sizeof(self), "vm_%d", l);
    sc_tp_hello(dl, self, l ? "boot-1" : "boot-0", l, l, term);
    snprintf(doc, sizeof(doc),
             "{\"DocumentIncarnation\":5,\"Events\":[{\"EventId\":\"R-self\",\"EventType\":"
             "\"Reboot\",\"ResourceType\":\"VirtualMachine\",\"Resources\":[\"%s\"],"
             "\"EventStatus\":\"Scheduled\",\"NotBefore\":\"Mon, 01 Jan 2046 00:00:00 GMT\","
             "\"Description\":\"\",\"EventSource\":\"Platform\",\"DurationInSeconds\":-1}]}",
             self);
    sc_tp_doc(dl, self, term, 2, doc, sc_wall_ms());
    if (!s_until(f, "may_act", "true", 15000))
        SC_FAILF("required: the follower leads (may_act) after the handover");
    else
        for (int64_t end = sc_mono_ms() + 5000; sc_mono_ms() < end && !gone;) {
            s_step(3, 20);
            st = sc_coord_state_json(s_c[f]);
            if (st && json_object_object_get_ex(st, "members", &ms))
                for (size_t i = 0; i < json_object_array_length(ms); i++) {
                    json_object *m = json_object_array_get_idx(ms, i);
                    if (strcmp(json_object_get_string(json_object_object_get(m, "name")), member) ==
                        0)
                        gone = json_object_get_boolean(json_object_object_get(m, "gone"));
                }
            json_object_put(st);
        }
    zmq_close(dl);
    return gone;
}

SC_TEST(eviction_over_while_nobody_led_takes_its_member)
{
    int l = s_elect(), f = 1 - l;
    void *z = zmq_ctx_new(), *d2;
    char buf[64];
    uint64_t term;

    SC_REQUIRE(s_until(l, "may_act", "true", 15000));
    term = (uint64_t)s_int(s_c[l], "term");
    /* vm_2's agent, heard by the follower alone: the Preempt started, then gone */
    d2 = sc_tp_dealer(z, s_port[f]);
    sc_tp_hello(d2, "vm_2", "boot-2", 2, 2, term);
    sc_tp_doc(d2, "vm_2", term, 2,
              "{\"DocumentIncarnation\":3,\"Events\":[{\"EventId\":\"P-gone\",\"EventType\":"
              "\"Preempt\",\"ResourceType\":\"VirtualMachine\",\"Resources\":[\"vm_2\"],"
              "\"EventStatus\":\"Started\",\"NotBefore\":\"\",\"Description\":\"\","
              "\"EventSource\":\"Platform\",\"DurationInSeconds\":-1}]}",
              sc_wall_ms());
    s_step(3, 300);
    sc_tp_doc(d2, "vm_2", term, 3, "{\"DocumentIncarnation\":4,\"Events\":[]}", sc_wall_ms());
    s_step(3, 300);
    SC_CHECK_STR(sc_tp_state_event(s_c[l], "P-gone", "phase", buf, sizeof(buf)), "");
    SC_CHECK(s_handed_over_then_gone(z, l, term, "vm_2"));
    zmq_close(d2);
    zmq_ctx_term(z);
    s_stop();
}

/* nemesis seeds 62 and 99: the same, but the follower that heard the Preempt start was
 * restarted before it led (the members roll): the eviction was only in its registry's memory,
 * and vm_2 stayed a member, dead, owing recovers, its fault domain busy for good. It notes an
 * eviction it sees start in its own store and restores it at its start. Seen failing without
 * it: vm_2 not gone. */
static void s_eviction_seen_then_restarted(bool known)
{
    int l = s_elect(), f = 1 - l;
    void *z = zmq_ctx_new(), *d2;
    char buf[64];
    uint64_t term;
    int fd2 = known ? l : 2; /* known: vm_2 in the leader's domain, drained beside its VM */

    SC_REQUIRE(s_until(l, "may_act", "true", 15000));
    term = (uint64_t)s_int(s_c[l], "term");
    if (known) { /* the state has it, Scheduled, vm_2 drained: only its start is missed */
        void *d2l = sc_tp_dealer(z, s_port[l]), *dfl = sc_tp_dealer(z, s_port[l]);
        sc_msg_t *order;
        char fname[8];
        /* the follower's VM reports too: the members' domains are not all one (serialise-by
         * auto would drain one VM at a time) */
        snprintf(fname, sizeof(fname), "vm_%d", f);
        sc_tp_hello(dfl, fname, f ? "boot-1" : "boot-0", f, f, term);
        sc_tp_hello(d2l, "vm_2", "boot-2", fd2, 2, term);
        sc_tp_doc(d2l, "vm_2", term, 1,
                  "{\"DocumentIncarnation\":2,\"Events\":[{\"EventId\":\"P-gone2\",\"EventType\":"
                  "\"Preempt\",\"ResourceType\":\"VirtualMachine\",\"Resources\":[\"vm_2\"],"
                  "\"EventStatus\":\"Scheduled\",\"NotBefore\":\"Mon, 01 Jan 2046 00:00:00 GMT\","
                  "\"Description\":\"\",\"EventSource\":\"Platform\",\"DurationInSeconds\":-1}]}",
                  sc_wall_ms());
        order = s_agent_wait(d2l, SC_MSG_ORDER, 3, 3000);
        SC_REQUIRE(order != NULL);
        s_progress(d2l, order, SC_MSG_HOOK_DONE, 2);
        sc_msg_destroy(&order);
        for (int64_t end = sc_mono_ms() + 3000;
             sc_mono_ms() < end &&
             strcmp(sc_tp_state_event(s_c[f], "P-gone2", "phase", buf, sizeof(buf)), "Active");)
            s_step(3, 5);
        SC_CHECK_STR(buf, "Active");
        s_step(3, 300);
        zmq_close(d2l);
        zmq_close(dfl);
    }
    /* vm_2's agent, heard by the follower alone: the Preempt started */
    d2 = sc_tp_dealer(z, s_port[f]);
    sc_tp_hello(d2, "vm_2", "boot-2", fd2, 2, term);
    sc_tp_doc(d2, "vm_2", term, 2,
              "{\"DocumentIncarnation\":3,\"Events\":[{\"EventId\":\"P-gone2\",\"EventType\":"
              "\"Preempt\",\"ResourceType\":\"VirtualMachine\",\"Resources\":[\"vm_2\"],"
              "\"EventStatus\":\"Started\",\"NotBefore\":\"\",\"Description\":\"\","
              "\"EventSource\":\"Platform\",\"DurationInSeconds\":-1}]}",
              sc_wall_ms());
    s_step(3, 300);
    zmq_close(d2); /* the VM is deleted: its agent says nothing more */
    if (!known)
        SC_CHECK_STR(sc_tp_state_event(s_c[l], "P-gone2", "phase", buf, sizeof(buf)), "");
    /* the follower restarted (its registry rebuilt from its store) */
    sc_coord_destroy(&s_c[f]);
    SC_REQUIRE((s_c[f] = s_start(f)) != NULL);
    s_step(3, 300);
    SC_CHECK(s_handed_over_then_gone(z, l, term, "vm_2"));
    zmq_ctx_term(z);
    s_stop();
}

SC_TEST(eviction_seen_then_restarted_takes_its_member)
{
    s_eviction_seen_then_restarted(false);
}

/* ... and when the state had it (Scheduled, vm_2 drained) but only the follower saw it start
 * (nemesis seed 93 of the campaign on c8a6ed2: taken for cancelled after the restart, the
 * deleted VM owed a recover). Seen failing without it: vm_2 not gone. */
SC_TEST(eviction_known_seen_started_then_restarted_takes_its_member)
{
    s_eviction_seen_then_restarted(true);
}

static const char *s_doc4 =
    "{\"DocumentIncarnation\":4,\"Events\":["
    "{\"EventId\":\"E4-pipe\",\"EventType\":\"Reboot\",\"ResourceType\":\"VirtualMachine\","
    "\"Resources\":[\"vm_2\"],\"EventStatus\":\"Scheduled\",\"NotBefore\":\"Mon, 01 Jan 2046 "
    "00:00:00 GMT\",\"Description\":\"\",\"EventSource\":\"Platform\",\"DurationInSeconds\":-1}]}";

/* 5 (nemesis seed 706): a member that installs a snapshot holding an event no agent of its own
 * ever reported has it in its state, with vm_2's drain open; its registry must have it too —
 * the planner plans the registry's events, and a leader without it would see vm_2's fault
 * domain free and drain another over it. */
SC_TEST(snapshot_event_is_planned_by_who_installs_it)
{
    int l = s_elect();
    void *z = zmq_ctx_new(), *d;
    sc_msg_t *order;
    sc_coord_t *g;
    char *text, err[256] = "";
    int64_t idx = 0, sterm = 0;
    json_object *st, *evs, *je;
    bool planned = false;
    uint64_t term;

    SC_REQUIRE(s_until(l, "may_act", "true", 5000));
    term = (uint64_t)s_int(s_c[l], "term");
    d = s_agent2(z, l, term, s_doc4);
    order = s_agent_wait(d, SC_MSG_ORDER, 3, 3000); /* vm_2's prepare: its drain is open */
    SC_REQUIRE(order != NULL);
    sc_msg_destroy(&order); /* its entry is committed and applied: it went out as its effect */
    text = sc_coord_snapshot_text(s_c[l], &idx, &sterm);
    SC_REQUIRE(text != NULL);
    g = s_start(2); /* vm_2's coordinator, new, no agent of its own reports anything */
    SC_REQUIRE(g != NULL);
    SC_CHECK_INT(sc_coord_install_snapshot(g, text, idx, sterm, err, sizeof(err)), 0);
    free(text);
    /* its view rounds (every 250 ms) plan the event, or never do: stepped until one has */
    for (int64_t end = sc_mono_ms() + 5000; sc_mono_ms() < end && !planned;) {
        SC_CHECK_INT(sc_coord_step(g, 5), 0);
        st = sc_coord_status(g);
        SC_REQUIRE(st);
        evs = NULL;
        if (json_object_object_get_ex(st, "events", &evs))
            for (size_t i = 0; i < json_object_array_length(evs); i++) {
                je = json_object_array_get_idx(evs, i);
                if (strcmp(json_object_get_string(json_object_object_get(je, "EventId")),
                           "E4-pipe") == 0)
                    planned = json_object_object_get(je, "waiting_for") != NULL;
            }
        if (!planned)
            json_object_put(st);
    }
    if (!planned)
        SC_FAILF("E4-pipe (vm_2 preparing) not planned by the member that installed it");
    else
        json_object_put(st);
    sc_coord_destroy(&g);
    zmq_close(d);
    zmq_ctx_term(z);
    s_stop();
}

/* Nemesis seed 1 (the members roll): a rollback's recover, ordered while its event was
 * Scheduled, reached vm_2's agent only after the agent restarted, by then the platform had
 * started the event: the VM went back in service during its event. The order is held while the
 * event is under way on that VM, and goes out once the event is over. */
static const char *s_doc_held[3] = {
    "{\"DocumentIncarnation\":1,\"Events\":["
    "{\"EventId\":\"E-held\",\"EventType\":\"Reboot\",\"ResourceType\":\"VirtualMachine\","
    "\"Resources\":[\"vm_2\"],\"EventStatus\":\"Scheduled\",\"NotBefore\":\"Mon, 01 Jan 2046 "
    "00:00:00 GMT\",\"Description\":\"\",\"EventSource\":\"Platform\",\"DurationInSeconds\":-1}]}",
    "{\"DocumentIncarnation\":2,\"Events\":["
    "{\"EventId\":\"E-held\",\"EventType\":\"Reboot\",\"ResourceType\":\"VirtualMachine\","
    "\"Resources\":[\"vm_2\"],\"EventStatus\":\"Started\",\"NotBefore\":\"\",\"Description\":"
    "\"\",\"EventSource\":\"Platform\",\"DurationInSeconds\":-1}]}",
    "{\"DocumentIncarnation\":3,\"Events\":[]}"};

/* Whether coordinator c's state holds event id as started (its EVENT_STARTED applied). */
static bool s_started(sc_coord_t *c, const char *id)
{
    char kind[32];
    return *sc_tp_state_event(c, id, "start_kind", kind, sizeof(kind)) && strcmp(kind, "None");
}

/* Steps both, a turn at a time, until vm_2 went `quiet` turns of s_c[l] without a recover
 * order (those sent before the start was applied arrive first, however late). Whether it did
 * before 10 s: without the hold, every turn sends one again (resend_ms 0) and it never does. */
static bool s_recovers_stop(void *d, int quiet)
{
    int64_t end = sc_mono_ms() + 10000;
    sc_msg_t *m;

    for (int n = 0; n < quiet && sc_mono_ms() < end;) {
        s_step(3, 0);
        n++;
        while ((m = sc_tp_recv(d))) {
            if (m->type == SC_MSG_ORDER && m->order.action == SC_MSG_PHASE_RECOVER)
                n = 0;
            sc_msg_destroy(&m);
        }
    }
    return sc_mono_ms() < end;
}

SC_TEST(rollback_recover_held_while_its_event_runs)
{
    int l;
    void *z = zmq_ctx_new(), *d;
    sc_msg_t *order;
    uint64_t term;

    /* an order not acknowledged goes out again at every turn: without the hold, every turn
     * once the event started would send the recover */
    s_resend_ms = 0;
    l = s_elect();
    SC_REQUIRE(s_until(l, "may_act", "true", 10000));
    term = (uint64_t)s_int(s_c[l], "term");
    d = s_agent2(z, l, term, s_doc_held[0]);
    order = s_agent_wait(d, SC_MSG_ORDER, 3, 10000);
    SC_REQUIRE(order && order->order.action == SC_MSG_PHASE_PREPARE);
    s_progress(d, order, SC_MSG_HOOK_FAILED, 3); /* rolled back: its recover ordered */
    sc_msg_destroy(&order);
    while ((order = s_agent_wait(d, SC_MSG_ORDER, 3, 10000)) &&
           order->order.action != SC_MSG_PHASE_RECOVER)
        sc_msg_destroy(&order); /* the prepare's, sent again until its answer was applied */
    SC_REQUIRE(order != NULL);
    sc_msg_destroy(&order);
    /* the agent restarts without running it, and finds the event started */
    sc_tp_hello(d, "vm_2", "boot-2b", 2, 2, term);
    sc_tp_doc(d, "vm_2", term, 4, s_doc_held[1], sc_wall_ms());
    for (int64_t end = sc_mono_ms() + 10000; !s_started(s_c[l], "E-held") && sc_mono_ms() < end;)
        s_step(3, 2);
    SC_REQUIRE(s_started(s_c[l], "E-held"));
    SC_CHECK(s_recovers_stop(d, 50)); /* 50 turns in a row, each of which would send it */
    /* over: the recover goes out */
    sc_tp_doc(d, "vm_2", term, 5, s_doc_held[2], sc_wall_ms());
    order = s_agent_wait(d, SC_MSG_ORDER, 3, 10000);
    SC_CHECK(order && order->order.action == SC_MSG_PHASE_RECOVER);
    sc_msg_destroy(&order);
    s_resend_ms = 60000;
    zmq_close(d);
    zmq_ctx_term(z);
    s_stop();
}

/* 9: the follower kept timers (c->ev) for every event its view rounds planned, dropped them
 * only in a later view round; one that applied the close and led before that round (the lead
 * handed to it 28 ms after the close, on CI) held the closed event "in flight" for good, and
 * never handed the lead back to the preferred member. The close, applied, takes them: checked
 * at the very turn it is applied, with the follower's view rounds held off. */
static const char *s_doc_gone = "{\"DocumentIncarnation\":4,\"Events\":[]}";

SC_TEST(closed_event_timers_go_with_its_close)
{
    int l = s_elect(), f = 1 - l;
    void *z = zmq_ctx_new(), *d, *df;
    sc_msg_t *order;
    uint64_t term;

    SC_REQUIRE(s_until(l, "may_act", "true", 10000));
    term = (uint64_t)s_int(s_c[l], "term");
    d = s_agent2(z, l, term, s_doc1);
    df = s_agent2(z, f, term, s_doc1); /* an agent reports to every coordinator */
    order = s_agent_wait(d, SC_MSG_ORDER, 3, 10000);
    SC_REQUIRE(order && order->order.action == SC_MSG_PHASE_PREPARE);
    s_progress(d, order, SC_MSG_HOOK_FAILED, 3); /* rolled back: its recover ordered */
    s_progress(df, order, SC_MSG_HOOK_FAILED, 3);
    sc_msg_destroy(&order);
    while ((order = s_agent_wait(d, SC_MSG_ORDER, 3, 10000)) &&
           order->order.action != SC_MSG_PHASE_RECOVER)
        sc_msg_destroy(&order);
    SC_REQUIRE(order != NULL);
    s_progress(d, order, SC_MSG_HOOK_DONE, 4);
    s_progress(df, order, SC_MSG_HOOK_DONE, 4);
    sc_msg_destroy(&order);
    /* the follower's view planned it: it holds its timers */
    for (int64_t end = sc_mono_ms() + 10000; !s_c[f]->n_ev && sc_mono_ms() < end;)
        s_step(3, 5);
    SC_REQUIRE(s_c[f]->n_ev == 1);
    sc_tp_doc(d, "vm_2", term, 5, s_doc_gone, sc_wall_ms());
    sc_tp_doc(df, "vm_2", term, 5, s_doc_gone, sc_wall_ms());
    /* the leader closes it; the follower, its view rounds held off, applies the close */
    for (int64_t end = sc_mono_ms() + 20000;
         sc_cstate_event_find(s_c[f]->cs, "E3-pipe") && sc_mono_ms() < end;) {
        SC_CHECK_INT(sc_coord_step(s_c[l], 2), 0);
        s_c[f]->last_plan_ms = sc_mono_ms();
        SC_CHECK_INT(sc_coord_step(s_c[f], 2), 0);
    }
    SC_REQUIRE(!sc_cstate_event_find(s_c[f]->cs, "E3-pipe"));
    SC_CHECK_INT((int64_t)s_c[f]->n_ev, 0);
    SC_CHECK_INT((int64_t)s_c[l]->n_ev, 0);
    zmq_close(d);
    zmq_close(df);
    zmq_ctx_term(z);
    s_stop();
}

int main(void)
{
    size_t off = 0;

    for (int v = 0; v < N_VM; v++) {
        s_port[v] = sc_test_free_port();
        off += (size_t)snprintf(s_members + off, sizeof(s_members) - off, "%svm_%d=127.0.0.1:%d",
                                v ? "," : "", v, s_port[v]);
    }
    SC_RUN(leader_acts_once_its_term_entry_commits_late);
    SC_RUN(slow_commits_drop_no_event_of_a_document);
    SC_RUN(effects_wait_for_their_commit);
    SC_RUN(approval_proposed_with_the_last_done);
    SC_RUN(snapshot_event_is_planned_by_who_installs_it);
    SC_RUN(rollback_recover_held_while_its_event_runs);
    SC_RUN(prepare_order_carries_until_and_is_held_after);
    SC_RUN(eviction_over_while_nobody_led_takes_its_member);
    SC_RUN(eviction_seen_then_restarted_takes_its_member);
    SC_RUN(eviction_known_seen_started_then_restarted_takes_its_member);
    SC_RUN(closed_event_timers_go_with_its_close);
    return sc_test_done();
}
