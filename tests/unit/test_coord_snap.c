/* A leader's snapshot installed on a follower that holds entries after it (issue 20, finding 6;
 * Raft §7, as etcd-io/raft and hashicorp/raft do it).
 *
 * The follower acknowledged its leader's log up to S_LAST, so the leader counts those entries
 * as stored there; it restarted, knowing the commit index S_COMMIT only (it applied that far).
 * With a small --log-keep the leader sends it the snapshot it has at S_SNAP instead of entries.
 * The follower's log holds entry S_SNAP with the snapshot's term: the entries after it must
 * stay (not applied; the leader's commit index applies them later). Were they deleted, and the
 * leader lost, the follower could be elected without them: committed entries gone. When the
 * follower's entry S_SNAP is of another term, its log is not the leader's: all of it goes.
 *
 * The follower is a real coordinator (vm_1, one of three voters, on loopback, --insecure);
 * the test is its leader vm_0 on the wire (a DEALER with a leader's routing id: snapshot and
 * append, their append_ack read back). The leader's log, its snapshot at S_SNAP and the
 * states to compare with are made here with a store and an sc_cstate that apply every entry. */
#include "sc_coord.h"
#include "sc_cstate.h"
#include "sc_error.h"
#include "sc_msg.h"
#include "sc_store.h"
#include "sc_test.h"
#include "sc_test_net.h"
#include "sc_test_peer.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#define S_LAST 150   /* the leader's log, and what the follower acknowledged: 1 .. S_LAST */
#define S_COMMIT 100 /* the commit index the follower knew (and applied) before its restart */
#define S_SNAP 130   /* the leader's snapshot includes the log up to this index */
#define S_TERM2 121  /* the leader's log: term 1 before this index, term 2 from it on */
#define S_LTERM 3    /* the leader's term now (the messages' envelope) */

static const char *const s_names[] = {"vm_0", "vm_1", "vm_2"};
static char s_dir[64];
static char s_members[160];
static int s_port;                        /* vm_1's, the follower's */
static sc_dlog_entry_t s_log[S_LAST + 1]; /* the leader's log, by index */
static sc_dlog_entry_t s_old[S_LAST + 1]; /* from S_TERM2 on: a term 1 leader's, never committed */
static char *s_snap;                      /* the leader's snapshot text, at S_SNAP */
static char *s_at_snap, *s_at_last;       /* the leader's state at S_SNAP and at S_LAST */
static uint64_t s_seq;                    /* the fake leader's message sequence */

/* Entry index of term: a TERM entry where a term begins, else vm_2's update domain set to ud
 * (so that the state says which entry it applied last). */
static void s_entry(sc_dlog_entry_t *e, int64_t index, int64_t term, bool begins, int64_t ud)
{
    char d[128];

    if (begins)
        snprintf(d, sizeof(d), "{\"term\":%lld}", (long long)term);
    else
        snprintf(d, sizeof(d), "{\"name\":\"vm_2\",\"update_domain\":%lld}", (long long)ud);
    e->index = index;
    e->term = term;
    e->kind = begins ? SC_DLOG_TERM : SC_DLOG_MEMBER;
    e->data = strdup(d);
    e->reason = (char *)"test";
    e->wall_ms = 1000 + index;
}

static char *s_state_text(const sc_cstate_t *cs)
{
    json_object *o = NULL;
    char *t;

    if (sc_cstate_to_json(cs, &o) < 0)
        return strdup("(no state)");
    t = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    return t;
}

/* The logs, and the leader's snapshot at S_SNAP and states: its log applied to a store in
 * memory and to a state, entry by entry. */
static void s_leader_make(void)
{
    sc_store_t *st = NULL;
    sc_cstate_t *cs = NULL;
    json_object *tables = NULL, *state = NULL, *o;
    char err[256] = "";

    for (int64_t i = 1; i <= S_LAST; i++) {
        s_entry(&s_log[i], i, i < S_TERM2 ? 1 : 2, i == 1 || i == S_TERM2, i);
        if (i >= S_TERM2)
            s_entry(&s_old[i], i, 1, false, 1000 + i);
    }
    if (sc_store_open(":memory:", &st, err, sizeof(err)) < 0 ||
        sc_cstate_new(s_names, 3, &cs) < 0) {
        SC_FAILF("leader's store or state: %s", err);
        return;
    }
    for (int64_t i = 1; i <= S_LAST; i++) {
        int rc = sc_store_append_entry(st, &s_log[i]);
        if (rc >= 0)
            rc = sc_cstate_apply(cs, &s_log[i], NULL, err, sizeof(err));
        if (rc < 0) {
            SC_FAILF("leader's entry %lld: %s %s", (long long)i, sc_errname(rc), err);
            break;
        }
        if (i != S_SNAP)
            continue;
        SC_CHECK_INT(sc_store_tables_json(st, &tables), 0);
        SC_CHECK_INT(sc_cstate_to_json(cs, &state), 0);
        o = json_object_new_object();
        json_object_object_add(o, "index", json_object_new_int64(S_SNAP));
        json_object_object_add(o, "term", json_object_new_int64(s_log[S_SNAP].term));
        json_object_object_add(o, "state", state);
        json_object_object_add(o, "tables", tables);
        s_snap = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        json_object_put(o);
        s_at_snap = s_state_text(cs);
    }
    s_at_last = s_state_text(cs);
    sc_cstate_destroy(&cs);
    sc_store_close(&st);
}

/* The follower's store before its start: the leader's log up to S_COMMIT applied, then, not
 * applied (commit index not heard), the rest of what it acknowledged: the leader's entries,
 * or (diverged) from S_TERM2 on a term 1 leader's. */
static void s_follower_store(bool diverged)
{
    sc_dlog_entry_t v[S_LAST - S_COMMIT];
    sc_store_t *st = NULL;
    char path[128], err[256] = "";

    snprintf(path, sizeof(path), "%s/coordinator.db", s_dir);
    SC_REQUIRE(sc_store_open(path, &st, err, sizeof(err)) == 0);
    for (int64_t i = 1; i <= S_COMMIT; i++)
        SC_CHECK_INT(sc_store_append_entry(st, &s_log[i]), 0);
    for (int64_t i = S_COMMIT + 1; i <= S_LAST; i++)
        v[i - S_COMMIT - 1] = diverged && i >= S_TERM2 ? s_old[i] : s_log[i];
    SC_CHECK_INT(sc_store_log_entries(st, v, S_LAST - S_COMMIT, NULL), 0);
    sc_store_close(&st);
}

static sc_coord_t *s_start(void)
{
    char err[512] = "";
    sc_coord_opts_t o;
    sc_coord_t *c = NULL;
    int rc;

    sc_coord_opts_init(&o);
    o.name = "vm_1";
    o.imds_url = "http://127.0.0.1:9";
    o.members = s_members;
    o.state_dir = s_dir;
    o.insecure = true;
    o.start_grace_ms = 0;
    o.voters = 3; /* vm_0 (the test), vm_1, vm_2 (absent): it follows */
    o.snapshot_at_stop = false;
    if ((rc = sc_coord_new(&o, &c, err, sizeof(err))) < 0)
        SC_FAILF("sc_coord_new: %s (%s)", sc_errname(rc), err);
    return c;
}

/* The leader's DEALER to the follower's ROUTER, with a leader's routing id. */
static void *s_leader_dealer(void *zctx)
{
    void *d = zmq_socket(zctx, ZMQ_DEALER);
    char ep[64];
    int zero = 0;

    snprintf(ep, sizeof(ep), "tcp://127.0.0.1:%d", s_port);
    if (!d || zmq_setsockopt(d, ZMQ_ROUTING_ID, "@vm_0", 5) < 0 ||
        zmq_setsockopt(d, ZMQ_LINGER, &zero, sizeof(zero)) < 0 || zmq_connect(d, ep) < 0)
        SC_FAILF("leader's dealer to %s: %s", ep, zmq_strerror(zmq_errno()));
    return d;
}

/* Sends m (consumed) as vm_0 and steps the follower until it answers: its append_ack (the
 * caller's), or NULL after 5 s. */
static sc_msg_t *s_ask(sc_coord_t *f, void *d, sc_msg_t *m)
{
    sc_tp_send(d, m);
    for (int i = 0; i < 500; i++) {
        sc_msg_t *a;
        sc_coord_step(f, 10);
        while ((a = sc_tp_recv(d))) {
            if (a->type == SC_MSG_APPEND_ACK)
                return a;
            sc_msg_destroy(&a);
        }
    }
    SC_FAILF("no append_ack from the follower");
    return NULL;
}

/* The leader's snapshot, whole, in one chunk. */
static sc_msg_t *s_snapshot_msg(void)
{
    sc_msg_t *m = NULL;

    if (sc_msg_new(SC_MSG_SNAPSHOT, "vm_0", S_LTERM, ++s_seq, &m) < 0)
        return NULL;
    snprintf(m->snapshot.leader, sizeof(m->snapshot.leader), "vm_0");
    m->snapshot.last_index = S_SNAP;
    m->snapshot.last_term = (uint64_t)s_log[S_SNAP].term;
    m->snapshot.total = strlen(s_snap);
    m->snapshot.offset = 0;
    m->snapshot.data = strdup(s_snap);
    return m;
}

/* An append of the leader's entries from .. to (none when from > to) after prev, with the
 * commit index commit. */
static sc_msg_t *s_append_msg(int64_t prev, int64_t from, int64_t to, int64_t commit)
{
    sc_msg_t *m = NULL;

    if (sc_msg_new(SC_MSG_APPEND, "vm_0", S_LTERM, ++s_seq, &m) < 0)
        return NULL;
    snprintf(m->append.leader, sizeof(m->append.leader), "vm_0");
    m->append.prev_index = (uint64_t)prev;
    m->append.prev_term = (uint64_t)s_log[prev].term;
    m->append.commit_index = (uint64_t)commit;
    for (int64_t i = from; i <= to; i++) {
        const sc_dlog_entry_t *e = &s_log[i];
        if (sc_msg_add_entry(m, (uint64_t)e->term, (uint64_t)e->index, sc_dlog_kind_name(e->kind),
                             e->data) < 0) {
            sc_msg_destroy(&m);
            return NULL;
        }
        m->append.entries[m->append.n_entries - 1].wall_ms = e->wall_ms;
    }
    return m;
}

/* status[key] of the follower. */
static int64_t s_status(sc_coord_t *f, const char *key)
{
    json_object *st = sc_coord_status(f);
    int64_t v = json_object_get_int64(json_object_object_get(st, key));

    json_object_put(st);
    return v;
}

static char *s_follower_state(sc_coord_t *f)
{
    json_object *o = sc_coord_state_json(f);
    char *t = strdup(o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : "(none)");

    json_object_put(o);
    return t;
}

/* The follower's log after S_SNAP (read from its store as it runs): want entries, each the
 * leader's, applied or not as said. */
static void s_check_log_after_snap(size_t want, bool applied)
{
    sc_store_t *st = NULL;
    sc_dlog_entry_t *v = NULL;
    size_t n = 0;
    char path[128], err[256] = "";

    snprintf(path, sizeof(path), "%s/coordinator.db", s_dir);
    SC_REQUIRE(sc_store_open_readonly(path, &st, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_store_entries(st, 1, 1000, &v, &n), 0);
    SC_CHECK_INT(n, want);
    for (size_t i = 0; i < n; i++) {
        const sc_dlog_entry_t *e = &s_log[S_SNAP + 1 + (int64_t)i];
        if (v[i].index != e->index || v[i].term != e->term || strcmp(v[i].data, e->data) != 0 ||
            v[i].applied != applied) {
            SC_FAILF("the follower's entry %lld (term %lld, %s, applied %d) is not the leader's "
                     "%lld (term %lld, %s, applied %d)",
                     (long long)v[i].index, (long long)v[i].term, v[i].data, v[i].applied,
                     (long long)e->index, (long long)e->term, e->data, applied);
            break;
        }
    }
    sc_dlog_entries_free(v, n);
    sc_store_close(&st);
}

/* The follower before the snapshot: it holds S_LAST entries, applied S_COMMIT. */
static void s_check_restarted(sc_coord_t *f)
{
    SC_CHECK_INT(s_status(f, "last_index"), S_LAST);
    SC_CHECK_INT(s_status(f, "applied_index"), S_COMMIT);
    SC_CHECK_INT(s_status(f, "commit_index"), S_COMMIT);
}

/* The leader's snapshot sent whole: installed, answered with its index (the entries after it
 * are the leader's to check: only up to it is the follower's log known to match). */
static void s_install(sc_coord_t *f, void *d)
{
    sc_msg_t *a = s_ask(f, d, s_snapshot_msg());
    char *fs;

    SC_REQUIRE(a);
    SC_CHECK(a->append_ack.success);
    SC_CHECK_INT(a->append_ack.match_index, S_SNAP);
    SC_CHECK_INT(a->append_ack.received, strlen(s_snap));
    sc_msg_destroy(&a);
    SC_CHECK_INT(s_status(f, "log_base_index"), S_SNAP);
    SC_CHECK_INT(s_status(f, "applied_index"), S_SNAP);
    fs = s_follower_state(f);
    SC_CHECK_STR(fs, s_at_snap);
    free(fs);
}

/* The leader's commit index S_LAST: the follower applies up to it, and holds the leader's
 * state. */
static void s_check_applied_last(sc_coord_t *f)
{
    char *fs = s_follower_state(f);

    SC_CHECK_INT(s_status(f, "applied_index"), S_LAST);
    SC_CHECK_INT(s_status(f, "commit_index"), S_LAST);
    SC_CHECK_STR(fs, s_at_last);
    free(fs);
}

SC_TEST(snapshot_keeps_the_entries_after_its_index_when_the_terms_match)
{
    void *zctx = zmq_ctx_new(), *d;
    sc_coord_t *f;
    sc_msg_t *a;

    s_follower_store(false);
    f = s_start();
    SC_REQUIRE(f && zctx);
    s_check_restarted(f);
    d = s_leader_dealer(zctx);
    s_install(f, d);
    /* what it acknowledged is still there, not applied: the log goes on from S_LAST */
    SC_CHECK_INT(s_status(f, "last_index"), S_LAST);
    s_check_log_after_snap(S_LAST - S_SNAP, false);
    /* and across a restart: the installed snapshot, then nothing applied after it */
    sc_coord_destroy(&f);
    f = s_start();
    SC_REQUIRE(f);
    SC_CHECK_INT(s_status(f, "last_index"), S_LAST);
    SC_CHECK_INT(s_status(f, "applied_index"), S_SNAP);
    {
        char *fs = s_follower_state(f);
        SC_CHECK_STR(fs, s_at_snap);
        free(fs);
    }
    /* the leader's heartbeat after S_LAST matches: its commit index applies them */
    a = s_ask(f, d, s_append_msg(S_LAST, S_LAST + 1, S_LAST, S_LAST));
    SC_REQUIRE(a);
    SC_CHECK(a->append_ack.success);
    SC_CHECK_INT(a->append_ack.match_index, S_LAST);
    sc_msg_destroy(&a);
    s_check_applied_last(f);
    s_check_log_after_snap(S_LAST - S_SNAP, true);
    zmq_close(d);
    sc_coord_destroy(&f);
    zmq_ctx_term(zctx);
}

SC_TEST(snapshot_of_another_term_at_its_index_discards_the_log)
{
    void *zctx = zmq_ctx_new(), *d;
    sc_coord_t *f;
    sc_msg_t *a;

    s_follower_store(true);
    f = s_start();
    SC_REQUIRE(f && zctx);
    s_check_restarted(f);
    d = s_leader_dealer(zctx);
    s_install(f, d);
    /* its entry S_SNAP was of term 1, the snapshot's of 2: nothing after it is the leader's */
    SC_CHECK_INT(s_status(f, "last_index"), S_SNAP);
    s_check_log_after_snap(0, false);
    a = s_ask(f, d, s_append_msg(S_LAST, S_LAST + 1, S_LAST, S_LAST));
    SC_REQUIRE(a);
    SC_CHECK(!a->append_ack.success);
    sc_msg_destroy(&a);
    /* the leader's entries from the snapshot on */
    a = s_ask(f, d, s_append_msg(S_SNAP, S_SNAP + 1, S_LAST, S_LAST));
    SC_REQUIRE(a);
    SC_CHECK(a->append_ack.success);
    SC_CHECK_INT(a->append_ack.match_index, S_LAST);
    sc_msg_destroy(&a);
    s_check_applied_last(f);
    s_check_log_after_snap(S_LAST - S_SNAP, true);
    zmq_close(d);
    sc_coord_destroy(&f);
    zmq_ctx_term(zctx);
}

int main(void)
{
    int ports[3];

    for (int i = 0; i < 3; i++)
        ports[i] = sc_test_free_port();
    s_port = ports[1];
    snprintf(s_members, sizeof(s_members), "vm_0=127.0.0.1:%d,vm_1=127.0.0.1:%d,vm_2=127.0.0.1:%d",
             ports[0], ports[1], ports[2]);
    s_leader_make();
    if (!s_snap || !s_at_snap || !s_at_last) {
        printf("FAIL the leader's log and snapshot\n");
        return 1;
    }
    if (!mkdtemp(strcpy(s_dir, "/tmp/sc_coord_snap_XXXXXX")))
        return 1;
    SC_RUN(snapshot_keeps_the_entries_after_its_index_when_the_terms_match);
    sc_tp_rm_state(s_dir);
    if (!mkdtemp(strcpy(s_dir, "/tmp/sc_coord_snap_XXXXXX")))
        return 1;
    SC_RUN(snapshot_of_another_term_at_its_index_discards_the_log);
    sc_tp_rm_state(s_dir);
    for (int64_t i = 1; i <= S_LAST; i++) {
        free(s_log[i].data);
        free(s_old[i].data);
    }
    free(s_snap);
    free(s_at_snap);
    free(s_at_last);
    return sc_test_done();
}
