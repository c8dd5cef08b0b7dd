/* The coordinator's restart (sc_coord_new over an existing store): what it rebuilds from the
 * decision log must neither forget a VM that still needs its recover nor count one as
 * recovered that never was, and an approval intent left without answer is POSTed again only
 * when our own IMDS still shows its event Scheduled. Also the handling of messages that needs
 * a whole coordinator (a document's malformed events). A real sc_coord on loopback
 * (--insecure), no agent; a fake IMDS (imds_test_server.h) where one is needed. */
#include "imds_test_server.h"
#include "sc_coord.h"
#include "sc_db.h"
#include "sc_error.h"
#include "sc_msg.h"
#include "sc_store.h"
#include "sc_test.h"
#include "sc_test_net.h"
#include "sc_test_peer.h"
#include "sc_time.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

static char s_dir[64];
static int s_port0;                                   /* vm_0's (the coordinator's) port */
static const char *s_imds_url = "http://127.0.0.1:9"; /* vm_0's IMDS for s_start() */
static int64_t s_grace_ms;                            /* --start-grace for s_start() */
static int s_voters = 1; /* --voters for s_start(): 1, vm_0 elects itself and leads */

static void s_cleanup(void)
{
    sc_tp_rm_state(s_dir);
}

static void s_decide(sc_store_t *st, sc_dlog_kind_t kind, const char *data, int64_t wall)
{
    int rc = sc_store_decide(st, 1, kind, data, "test", wall, NULL);
    if (rc < 0)
        SC_FAILF("decide %s: %s", data, sc_errname(rc));
}

/* An event of vm_1 that Started and ended at wall, with vm_1's prepare done; recover_state:
 * its recover was ordered and answered so, or NULL: never ordered (vm_1 was down). */
static void s_event(sc_store_t *st, const char *id, int64_t wall, const char *recover_state)
{
    char d[1024];
    snprintf(d, sizeof(d),
             "{\"event\":{\"EventId\":\"%s\",\"EventType\":\"Reboot\",\"ResourceType\":"
             "\"VirtualMachine\",\"Resources\":[\"vm_1\"],\"EventStatus\":\"Started\","
             "\"NotBefore\":\"\",\"Description\":\"\",\"EventSource\":\"Platform\","
             "\"DurationInSeconds\":-1},\"seen_by\":[\"vm_0\",\"vm_1\"]}",
             id);
    s_decide(st, SC_DLOG_EVENT_SEEN, d, wall - 60000);
    snprintf(d, sizeof(d), "{\"event_id\":\"%s\",\"vms\":[\"vm_1\"]}", id);
    s_decide(st, SC_DLOG_PREPARE_ORDERED, d, wall - 50000);
    snprintf(d, sizeof(d),
             "{\"event_id\":\"%s\",\"vm\":\"vm_1\",\"phase\":\"prepare\",\"state\":\"done\","
             "\"exit_status\":0,\"origin\":\"order\"}",
             id);
    s_decide(st, SC_DLOG_HOOK_PROGRESS, d, wall - 40000);
    snprintf(d, sizeof(d), "{\"event_id\":\"%s\",\"how\":\"approved\"}", id);
    s_decide(st, SC_DLOG_EVENT_STARTED, d, wall - 30000);
    snprintf(d, sizeof(d), "{\"event_id\":\"%s\",\"how\":\"completed\"}", id);
    s_decide(st, SC_DLOG_EVENT_ENDED, d, wall);
    if (recover_state) {
        snprintf(d, sizeof(d), "{\"event_id\":\"%s\",\"vms\":[\"vm_1\"]}", id);
        s_decide(st, SC_DLOG_RECOVER_ORDERED, d, wall + 10);
        snprintf(d, sizeof(d),
                 "{\"event_id\":\"%s\",\"vm\":\"vm_1\",\"phase\":\"recover\",\"state\":\"%s\","
                 "\"exit_status\":-1,\"origin\":\"order\"}",
                 id, recover_state);
        s_decide(st, SC_DLOG_HOOK_PROGRESS, d, wall + 20);
    }
}

static sc_coord_t *s_start(void)
{
    char members[128], err[512] = "";
    sc_coord_opts_t o;
    sc_coord_t *c = NULL;
    int rc;

    s_port0 = sc_test_free_port();
    snprintf(members, sizeof(members), "vm_0=127.0.0.1:%d,vm_1=127.0.0.1:%d,vm_2=127.0.0.1:%d",
             s_port0, sc_test_free_port(), sc_test_free_port());
    sc_coord_opts_init(&o);
    o.name = "vm_0";
    o.imds_url = s_imds_url;
    o.members = members;
    o.state_dir = s_dir;
    o.insecure = true;
    o.start_grace_ms = s_grace_ms;
    o.voters = s_voters;
    rc = sc_coord_new(&o, &c, err, sizeof(err));
    if (rc < 0)
        SC_FAILF("sc_coord_new: %s (%s)", sc_errname(rc), err);
    if (s_voters == 1 && !sc_coord_wait_lead(c, 5000))
        SC_FAILF("vm_0 did not win its election");
    return c;
}

/* The drain state the status shows for vm_1 on event id, or NULL if the event is not there. */
static const char *s_drain(json_object *st, const char *id)
{
    json_object *evs, *drains, *v;
    if (!json_object_object_get_ex(st, "events", &evs))
        return NULL;
    for (size_t i = 0; i < json_object_array_length(evs); i++) {
        json_object *e = json_object_array_get_idx(evs, i);
        if (strcmp(json_object_get_string(json_object_object_get(e, "EventId")), id) == 0 &&
            json_object_object_get_ex(e, "drains", &drains) &&
            json_object_object_get_ex(drains, "vm_1", &v))
            return json_object_get_string(v);
    }
    return NULL;
}

/* A recover order the agent refused (queue full) was never carried out: after a restart it is
 * still to be sent, not counted as recovered. */
SC_TEST(refused_recover_is_not_recovered_after_restart)
{
    sc_store_t *st = NULL;
    sc_coord_t *c;
    json_object *status;
    char path[128], err[256];

    snprintf(path, sizeof(path), "%s/coordinator.db", s_dir);
    SC_REQUIRE(sc_store_open(path, &st, err, sizeof(err)) == 0);
    s_event(st, "E-refused", sc_wall_ms(), "refused");
    s_event(st, "E-done", sc_wall_ms(), "done");
    sc_store_close(&st);

    c = s_start();
    SC_REQUIRE(c);
    status = sc_coord_status(c);
    SC_REQUIRE(status);
    SC_CHECK_STR(s_drain(status, "E-refused"), "recover_ordered");
    SC_CHECK_STR(s_drain(status, "E-done"), "recovered");
    json_object_put(status);
    sc_coord_destroy(&c);
}

/* An event that ended long ago (the store keeps every event) whose VM was prepared but never
 * recovered (its member was down all along) is still restored: the recover is still due. */
SC_TEST(old_ended_event_with_a_pending_recover_is_restored)
{
    sc_store_t *st = NULL;
    sc_coord_t *c;
    json_object *hist = NULL;
    char path[128], err[256];
    int64_t two_hours_ago = sc_wall_ms() - 2 * 3600 * 1000;
    int alerts = 0;

    snprintf(path, sizeof(path), "%s/coordinator.db", s_dir);
    SC_REQUIRE(sc_store_open(path, &st, err, sizeof(err)) == 0);
    s_event(st, "E-old-pending", two_hours_ago, NULL);
    s_event(st, "E-old-done", two_hours_ago, "done");
    sc_store_close(&st);

    c = s_start();
    SC_REQUIRE(c);
    for (int i = 0; i < 3; i++)
        SC_CHECK_INT(sc_coord_step(c, 10), 0);
    sc_coord_destroy(&c);

    SC_REQUIRE(sc_store_open(path, &st, err, sizeof(err)) == 0);
    SC_REQUIRE(sc_store_history_json(st, 1000, &hist, NULL, 0) == 0);
    for (size_t i = 0; i < json_object_array_length(hist); i++) {
        json_object *e = json_object_array_get_idx(hist, i), *d;
        if (strcmp(json_object_get_string(json_object_object_get(e, "kind")), "alert") != 0 ||
            !json_object_object_get_ex(e, "data", &d))
            continue;
        if (strcmp(json_object_get_string(json_object_object_get(d, "alert")), "member_down") ==
                0 &&
            strcmp(json_object_get_string(json_object_object_get(d, "event_id")),
                   "E-old-pending") == 0)
            alerts++;
        SC_CHECK(strcmp(json_object_get_string(json_object_object_get(d, "event_id")),
                        "E-old-done") != 0);
    }
    if (alerts != 1)
        SC_FAILF("vm_1's pending recover of E-old-pending forgotten: %d member_down alerts",
                 alerts);
    json_object_put(hist);
    sc_store_close(&st);
}

/* The alerts of kind ALERT for event id and member vm in the decision log at path. */
static int s_alerts(const char *path, const char *alert, const char *id, const char *vm)
{
    sc_store_t *st = NULL;
    json_object *hist = NULL;
    char err[256];
    int n = 0;

    if (sc_store_open(path, &st, err, sizeof(err)) < 0 ||
        sc_store_history_json(st, 1000, &hist, NULL, 0) < 0) {
        sc_store_close(&st);
        return -1;
    }
    for (size_t i = 0; i < json_object_array_length(hist); i++) {
        json_object *e = json_object_array_get_idx(hist, i), *d, *v;
        if (strcmp(json_object_get_string(json_object_object_get(e, "kind")), "alert") != 0 ||
            !json_object_object_get_ex(e, "data", &d))
            continue;
        if (strcmp(json_object_get_string(json_object_object_get(d, "alert")), alert) == 0 &&
            strcmp(json_object_get_string(json_object_object_get(d, "event_id")), id) == 0 &&
            json_object_object_get_ex(d, "member", &v) && v &&
            strcmp(json_object_get_string(v), vm) == 0)
            n++;
    }
    json_object_put(hist);
    sc_store_close(&st);
    return n;
}

/* The state status shows for member name, or NULL. */
static const char *s_member_state(json_object *st, const char *name)
{
    json_object *arr;
    if (!json_object_object_get_ex(st, "members", &arr))
        return NULL;
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *m = json_object_array_get_idx(arr, i);
        if (strcmp(json_object_get_string(json_object_object_get(m, "name")), name) == 0)
            return json_object_get_string(json_object_object_get(m, "state"));
    }
    return NULL;
}

/* Event id seen with Resources [vm_0, vm_1], vm_1 prepared, then Azure shrank Resources to
 * [vm_0]; ended: it then Started and ended. */
static void s_shrunk_event(sc_store_t *st, const char *id, bool ended)
{
    static const char *const fmt =
        "{\"event\":{\"EventId\":\"%s\",\"EventType\":\"Reboot\",\"ResourceType\":"
        "\"VirtualMachine\",\"Resources\":[%s],\"EventStatus\":\"%s\","
        "\"NotBefore\":\"\",\"Description\":\"\",\"EventSource\":\"Platform\","
        "\"DurationInSeconds\":-1},\"seen_by\":[\"vm_0\",\"vm_1\"]}";
    int64_t wall = sc_wall_ms();
    char d[1024];

    snprintf(d, sizeof(d), fmt, id, "\"vm_0\",\"vm_1\"", "Scheduled");
    s_decide(st, SC_DLOG_EVENT_SEEN, d, wall - 60000);
    snprintf(d, sizeof(d), "{\"event_id\":\"%s\",\"vms\":[\"vm_1\"]}", id);
    s_decide(st, SC_DLOG_PREPARE_ORDERED, d, wall - 50000);
    snprintf(d, sizeof(d),
             "{\"event_id\":\"%s\",\"vm\":\"vm_1\",\"phase\":\"prepare\",\"state\":\"done\","
             "\"exit_status\":0,\"origin\":\"order\"}",
             id);
    s_decide(st, SC_DLOG_HOOK_PROGRESS, d, wall - 40000);
    snprintf(d, sizeof(d), fmt, id, "\"vm_0\"", ended ? "Started" : "Scheduled");
    s_decide(st, SC_DLOG_EVENT_SEEN, d, wall - 30000);
    if (!ended)
        return;
    snprintf(d, sizeof(d), "{\"event_id\":\"%s\",\"how\":\"approved\"}", id);
    s_decide(st, SC_DLOG_EVENT_STARTED, d, wall - 20000);
    snprintf(d, sizeof(d), "{\"event_id\":\"%s\",\"how\":\"completed\"}", id);
    s_decide(st, SC_DLOG_EVENT_ENDED, d, wall - 10000);
}

/* Azure shrank an event's Resources after vm_1's prepare: vm_1 is not forgotten. While the
 * event goes on it stays drained (its fault domain busy); once the event is over its recover
 * is due (vm_1 is down here: a member_down alert for it). */
SC_TEST(vm_dropped_from_resources_is_not_forgotten)
{
    sc_store_t *st = NULL;
    sc_coord_t *c;
    json_object *status;
    char path[128], err[256];

    snprintf(path, sizeof(path), "%s/coordinator.db", s_dir);
    SC_REQUIRE(sc_store_open(path, &st, err, sizeof(err)) == 0);
    s_shrunk_event(st, "E-shrunk-active", false);
    s_shrunk_event(st, "E-shrunk-ended", true);
    sc_store_close(&st);

    c = s_start();
    SC_REQUIRE(c);
    for (int i = 0; i < 3; i++)
        SC_CHECK_INT(sc_coord_step(c, 10), 0);
    status = sc_coord_status(c);
    SC_REQUIRE(status);
    SC_CHECK_STR(s_member_state(status, "vm_1"), "recovering");
    SC_CHECK_STR(s_drain(status, "E-shrunk-active"), "prepared");
    SC_CHECK_STR(s_drain(status, "E-shrunk-ended"), "prepared");
    json_object_put(status);
    sc_coord_destroy(&c);
    SC_CHECK_INT(s_alerts(path, "member_down", "E-shrunk-ended", "vm_1"), 1);
    SC_CHECK_INT(s_alerts(path, "member_down", "E-shrunk-active", "vm_1"), 0);
}

/* The approval state and rejected_messages that status shows for event id. */
static const char *s_approval(json_object *st, const char *id)
{
    json_object *evs;
    if (!json_object_object_get_ex(st, "events", &evs))
        return NULL;
    for (size_t i = 0; i < json_object_array_length(evs); i++) {
        json_object *e = json_object_array_get_idx(evs, i);
        if (strcmp(json_object_get_string(json_object_object_get(e, "EventId")), id) == 0)
            return json_object_get_string(json_object_object_get(e, "approval"));
    }
    return NULL;
}

/* approve_result for event id from member from in term term. */
static void s_send_result(void *d, const char *from, uint64_t term, const char *id)
{
    sc_msg_t *m = NULL;
    if (sc_msg_new(SC_MSG_APPROVE_RESULT, from, term, 100, &m) < 0 || sc_msg_add_event(m, id) < 0)
        SC_FAILF("approve_result");
    m->approve_result.http_status = 200;
    snprintf(m->approve_result.result, sizeof(m->approve_result.result), "OK");
    sc_tp_send(d, m);
}

/* Steps c until d (vm_1) receives an approve_via; true if it did. */
static bool s_wait_approve_via(sc_coord_t *c, void *d)
{
    for (int i = 0; i < 100; i++) {
        char buf[65536];
        int n;
        sc_coord_step(c, 20);
        while ((n = zmq_recv(d, buf, sizeof(buf), ZMQ_DONTWAIT)) > 0) {
            sc_msg_t *m = NULL;
            bool via = false;
            if (sc_msg_decode(buf, (size_t)n, &m, NULL, 0) == 0)
                via = m->type == SC_MSG_APPROVE_VIA;
            sc_msg_destroy(&m);
            if (via)
                return true;
        }
    }
    return false;
}

/* Steps c a few times, then its status. */
static json_object *s_settle(sc_coord_t *c)
{
    for (int i = 0; i < 10; i++)
        sc_coord_step(c, 10);
    return sc_coord_status(c);
}

/* Steps c until event id's approval is approval and (unless -1) the refused-message count is
 * rejected, at most ~5 s (a loaded machine delivers late), then its status: the caller checks
 * both, so a timeout fails there. */
static json_object *s_settle_until(sc_coord_t *c, const char *id, const char *approval,
                                   int64_t rejected)
{
    json_object *st = s_settle(c);
    for (int i = 0; i < 250; i++) {
        const char *a = s_approval(st, id);
        if (a && strcmp(a, approval) == 0 &&
            (rejected < 0 ||
             json_object_get_int64(json_object_object_get(st, "rejected_messages")) == rejected))
            break;
        json_object_put(st);
        sc_coord_step(c, 20);
        st = sc_coord_status(c);
    }
    return st;
}

/* An approval delegated to vm_1 (only vm_1 sees its event) is answered only by vm_1 in the
 * current term: an approve_result from vm_2, or from vm_1 in another term, is refused and
 * counted, and the approval stays in flight until vm_1 answers. */
SC_TEST(delegated_answer_only_from_the_delegate_in_this_term)
{
    static const char *const id = "E-via";
    sc_store_t *st = NULL;
    sc_coord_t *c;
    json_object *status;
    void *zctx = zmq_ctx_new(), *d1 = NULL, *d2 = NULL;
    sc_msg_t *hb = NULL;
    char path[128], err[256], d[1024];
    int64_t wall = sc_wall_ms(), rej0;
    uint64_t term;

    snprintf(path, sizeof(path), "%s/coordinator.db", s_dir);
    SC_REQUIRE(sc_store_open(path, &st, err, sizeof(err)) == 0);
    /* an earlier term, so that this run's term has an older one below it (a newer term heard
     * from a member is adopted: sc_coord_members_adopt_term) */
    s_decide(st, SC_DLOG_TERM, "{\"term\":1}", wall - 4000);
    snprintf(d, sizeof(d),
             "{\"event\":{\"EventId\":\"%s\",\"EventType\":\"Reboot\",\"ResourceType\":"
             "\"VirtualMachine\",\"Resources\":[\"vm_1\"],\"EventStatus\":\"Scheduled\","
             "\"NotBefore\":\"\",\"Description\":\"\",\"EventSource\":\"Platform\","
             "\"DurationInSeconds\":-1},\"seen_by\":[\"vm_1\"]}",
             id);
    s_decide(st, SC_DLOG_EVENT_SEEN, d, wall - 3000);
    snprintf(d, sizeof(d), "{\"event_id\":\"%s\",\"vms\":[\"vm_1\"]}", id);
    s_decide(st, SC_DLOG_PREPARE_ORDERED, d, wall - 2000);
    snprintf(d, sizeof(d),
             "{\"event_id\":\"%s\",\"vm\":\"vm_1\",\"phase\":\"prepare\",\"state\":\"done\","
             "\"exit_status\":0,\"origin\":\"order\"}",
             id);
    s_decide(st, SC_DLOG_HOOK_PROGRESS, d, wall - 1000);
    sc_store_close(&st);

    c = s_start();
    SC_REQUIRE(c && zctx);
    term = (uint64_t)sc_coord_term(c);
    d1 = sc_tp_dealer(zctx, s_port0);
    d2 = sc_tp_dealer(zctx, s_port0);
    SC_REQUIRE(sc_msg_new(SC_MSG_HEARTBEAT, "vm_1", term, 1, &hb) == 0);
    sc_tp_send(d1, hb);
    SC_REQUIRE(sc_msg_new(SC_MSG_HEARTBEAT, "vm_2", term, 1, &hb) == 0);
    sc_tp_send(d2, hb);
    SC_REQUIRE(s_wait_approve_via(c, d1));
    status = s_settle(c);
    SC_CHECK_STR(s_approval(status, id), "intent");
    rej0 = json_object_get_int64(json_object_object_get(status, "rejected_messages"));
    json_object_put(status);

    s_send_result(d2, "vm_2", term, id); /* not the delegate */
    status = s_settle_until(c, id, "intent", rej0 + 1);
    SC_CHECK_STR(s_approval(status, id), "intent");
    SC_CHECK_INT(json_object_get_int64(json_object_object_get(status, "rejected_messages")),
                 rej0 + 1);
    json_object_put(status);

    SC_REQUIRE(term > 1);
    s_send_result(d1, "vm_1", term - 1, id); /* the delegate, an older term */
    status = s_settle_until(c, id, "intent", rej0 + 2);
    SC_CHECK_STR(s_approval(status, id), "intent");
    SC_CHECK_INT(json_object_get_int64(json_object_object_get(status, "rejected_messages")),
                 rej0 + 2);
    json_object_put(status);

    s_send_result(d1, "vm_1", term, id); /* the delegate, this term */
    status = s_settle_until(c, id, "approved", -1);
    SC_CHECK_STR(s_approval(status, id), "approved");
    SC_CHECK_INT(json_object_get_int64(json_object_object_get(status, "rejected_messages")),
                 rej0 + 2);
    json_object_put(status);

    zmq_close(d1);
    zmq_close(d2);
    sc_coord_destroy(&c);
    zmq_ctx_term(zctx);
}

/* Stores a Scheduled Reboot id on resources (a JSON list's inside) seen by seen, whose VM vm
 * prepared (done) before wall. */
static void s_store_prepared(sc_store_t *st, const char *id, const char *resources,
                             const char *seen, const char *vm, int64_t wall)
{
    char d[1024];

    snprintf(d, sizeof(d),
             "{\"event\":{\"EventId\":\"%s\",\"EventType\":\"Reboot\",\"ResourceType\":"
             "\"VirtualMachine\",\"Resources\":[%s],\"EventStatus\":\"Scheduled\","
             "\"NotBefore\":\"\",\"Description\":\"\",\"EventSource\":\"Platform\","
             "\"DurationInSeconds\":-1},\"seen_by\":[%s]}",
             id, resources, seen);
    s_decide(st, SC_DLOG_EVENT_SEEN, d, wall - 4000);
    snprintf(d, sizeof(d), "{\"event_id\":\"%s\",\"vms\":[\"%s\"]}", id, vm);
    s_decide(st, SC_DLOG_PREPARE_ORDERED, d, wall - 3000);
    snprintf(d, sizeof(d),
             "{\"event_id\":\"%s\",\"vm\":\"%s\",\"phase\":\"prepare\",\"state\":\"done\","
             "\"exit_status\":0,\"origin\":\"order\"}",
             id, vm);
    s_decide(st, SC_DLOG_HOOK_PROGRESS, d, wall - 2000);
}

/* Stores an event of vm (Resources and seen_by: vm alone), Scheduled in the registry,
 * prepared, and an approval intent of ours (vm_0's, not delegated) for it without an answer:
 * the crash came after the intent. */
static void s_unanswered_intent(const char *id, const char *vm)
{
    sc_store_t *st = NULL;
    char path[128], err[256], d[1024], q[64];
    int64_t wall = sc_wall_ms();

    snprintf(q, sizeof(q), "\"%s\"", vm);
    snprintf(path, sizeof(path), "%s/coordinator.db", s_dir);
    SC_REQUIRE(sc_store_open(path, &st, err, sizeof(err)) == 0);
    s_store_prepared(st, id, q, q, vm, wall);
    snprintf(d, sizeof(d),
             "{\"event_ids\":[\"%s\"],\"body\":\"{\\\"StartRequests\\\":[{\\\"EventId\\\":"
             "\\\"%s\\\"}]}\",\"via\":null,\"by\":\"vm_0\"}",
             id, id);
    s_decide(st, SC_DLOG_APPROVAL_INTENT, d, wall - 1000);
    sc_store_close(&st);
}

static void s_unanswered_own_intent(const char *id)
{
    s_unanswered_intent(id, "vm_0");
}

/* Our IMDS's document with event id in status. */
static void s_serve(sc_ts_t *ts, char *buf, size_t len, const char *id, const char *status)
{
    sc_ts_cfg_t cfg = {0};
    snprintf(buf, len,
             "{\"DocumentIncarnation\":3,\"Events\":[{\"EventId\":\"%s\",\"EventStatus\":"
             "\"%s\",\"EventType\":\"Reboot\",\"ResourceType\":\"VirtualMachine\","
             "\"Resources\":[\"vm_0\"],\"NotBefore\":\"\",\"Description\":\"\","
             "\"EventSource\":\"Platform\",\"DurationInSeconds\":-1}]}",
             id, status);
    cfg.body = buf;
    sc_ts_set(ts, &cfg);
}

/* The fake IMDS's count of GETs and POSTs. */
static void s_counts(sc_ts_t *ts, int *ret_gets, int *ret_posts)
{
    sc_ts_lock(ts);
    *ret_gets = ts->requests - ts->posts;
    *ret_posts = ts->posts;
    sc_ts_unlock(ts);
}

/* Unanswered intent of ours, and our IMDS already shows the event Started: the first POST
 * landed. Approved at restart after one GET, never POSTed again. */
SC_TEST(unanswered_intent_started_in_own_imds_is_not_posted_again)
{
    static const char *const id = "E-own-started";
    char doc[1024];
    sc_ts_t *ts = sc_ts_start("/vm_0");
    sc_coord_t *c;
    json_object *status;
    int gets, posts;

    SC_REQUIRE(ts);
    s_serve(ts, doc, sizeof(doc), "e-OWN-started", "Started"); /* ids case-insensitive */
    s_unanswered_own_intent(id);
    s_imds_url = ts->url;
    c = s_start();
    s_imds_url = "http://127.0.0.1:9";
    SC_REQUIRE(c);
    status = s_settle(c);
    for (int i = 0; i < 20; i++) /* a few planner rounds: a re-POST would have come by now */
        sc_coord_step(c, 20);
    json_object_put(status);
    status = sc_coord_status(c);
    SC_CHECK_STR(s_approval(status, id), "approved");
    s_counts(ts, &gets, &posts);
    SC_CHECK_INT(gets, 1);
    SC_CHECK_INT(posts, 0);
    SC_CHECK_INT((long long)sc_coord_posts(c), 0);
    json_object_put(status);
    sc_coord_destroy(&c);
    sc_ts_stop(&ts);
}

/* The same, but our IMDS still shows it Scheduled: we cannot tell whether the first POST
 * landed, so exactly one POST again. */
SC_TEST(unanswered_intent_scheduled_in_own_imds_is_posted_once)
{
    static const char *const id = "E-own-scheduled";
    char doc[1024];
    sc_ts_t *ts = sc_ts_start("/vm_0");
    sc_coord_t *c;
    json_object *status;
    int gets, posts;

    SC_REQUIRE(ts);
    s_serve(ts, doc, sizeof(doc), id, "Scheduled");
    s_unanswered_own_intent(id);
    s_imds_url = ts->url;
    c = s_start();
    s_imds_url = "http://127.0.0.1:9";
    SC_REQUIRE(c);
    for (int i = 0; i < 30; i++)
        sc_coord_step(c, 20);
    status = sc_coord_status(c);
    SC_CHECK_STR(s_approval(status, id), "approved");
    s_counts(ts, &gets, &posts);
    SC_CHECK_INT(gets, 1);
    SC_CHECK_INT(posts, 1);
    SC_CHECK_INT((long long)sc_coord_posts(c), 1);
    sc_ts_lock(ts);
    SC_CHECK(strstr(ts->last.body, id) != NULL); /* the POST approved our event */
    sc_ts_unlock(ts);
    json_object_put(status);
    sc_coord_destroy(&c);
    sc_ts_stop(&ts);
}

/* Nemesis seed 25: our own IMDS answering a POST slowly (a failing host agent) must not stop
 * the loop — it was synchronous, and a 2.1 s POST let another member be elected meanwhile. The
 * POST is the approver's worker's: every loop turn stays short while it hangs, and its answer
 * is recorded when it comes. Fails before the worker: one step lasts the whole 1.5 s. */
SC_TEST(slow_approval_post_does_not_stop_the_loop)
{
    static const char *const id = "E-own-slow-post";
    char doc[1024];
    sc_ts_t *ts = sc_ts_start("/vm_0");
    sc_coord_t *c;
    json_object *status = NULL;
    int gets, posts, longest = 0, steps_in_flight = 0;
    int64_t t0;

    SC_REQUIRE(ts);
    s_serve(ts, doc, sizeof(doc), id, "Scheduled");
    sc_ts_lock(ts);
    ts->cfg.post_sleep_ms = 1500;
    sc_ts_unlock(ts);
    s_unanswered_own_intent(id);
    s_imds_url = ts->url;
    c = s_start();
    s_imds_url = "http://127.0.0.1:9";
    SC_REQUIRE(c);
    t0 = sc_mono_ms();
    while (sc_mono_ms() - t0 < 8000) {
        int64_t s0 = sc_mono_ms();
        const char *appr;
        sc_coord_step(c, 20);
        if ((int)(sc_mono_ms() - s0) > longest)
            longest = (int)(sc_mono_ms() - s0);
        s_counts(ts, &gets, &posts);
        if (posts == 1 && sc_coord_posts(c) == 1)
            steps_in_flight++;
        json_object_put(status);
        status = sc_coord_status(c);
        appr = s_approval(status, id);
        if (appr && strcmp(appr, "approved") == 0)
            break;
    }
    SC_CHECK_STR(s_approval(status, id), "approved");
    s_counts(ts, &gets, &posts);
    SC_CHECK_INT(posts, 1);
    SC_CHECK_INT((long long)sc_coord_posts(c), 1);
    /* the loop went on while the POST hung: many turns, none near the POST's 1.5 s */
    SC_CHECK(longest < 700);
    SC_CHECK(steps_in_flight >= 10);
    json_object_put(status);
    sc_coord_destroy(&c);
    sc_ts_stop(&ts);
}

/* Issue 20, finding 5: an unanswered intent of ours for an event only vm_1 sees (per-VM
 * visibility: Resources [vm_1], seen_by [vm_1]); our own IMDS does not list it — not because it
 * started and ended, we never saw it. Absent from our IMDS is no answer: the approval is
 * unknown (it may have landed), never recorded approved, and it is POSTed again through a
 * member that sees it — never through our IMDS, which would refuse the id. */
SC_TEST(unanswered_intent_absent_from_own_imds_seen_by_another_is_unknown)
{
    static const char *const id = "E-seen-by-vm1";
    sc_ts_cfg_t cfg = {.body = "{\"DocumentIncarnation\":3,\"Events\":[]}"};
    sc_ts_t *ts = sc_ts_start("/vm_0");
    sc_coord_t *c;
    json_object *status;
    const char *appr;
    int gets, posts;

    SC_REQUIRE(ts);
    sc_ts_set(ts, &cfg);
    s_unanswered_intent(id, "vm_1");
    s_imds_url = ts->url;
    c = s_start();
    s_imds_url = "http://127.0.0.1:9";
    SC_REQUIRE(c);
    for (int i = 0; i < 30; i++)
        sc_coord_step(c, 20);
    status = sc_coord_status(c);
    appr = s_approval(status, id);
    if (!appr || (strcmp(appr, "unknown") != 0 && strcmp(appr, "intent") != 0))
        SC_FAILF("approval of an event only vm_1 sees, absent from our IMDS: %s (not settled "
                 "by our IMDS: unknown, or an intent again through vm_1)",
                 appr ? appr : "(none)");
    s_counts(ts, &gets, &posts);
    SC_CHECK_INT(gets, 1);
    SC_CHECK_INT(posts, 0); /* not through our IMDS: we do not see it */
    json_object_put(status);
    sc_coord_destroy(&c);
    sc_ts_stop(&ts);
}

/* Our IMDS does not answer the GET (503): as before, the intent is POSTed again. */
SC_TEST(unanswered_intent_own_imds_failing_is_posted_again)
{
    static const char *const id = "E-own-503";
    sc_ts_cfg_t cfg = {.status = 503};
    sc_ts_t *ts = sc_ts_start("/vm_0");
    sc_coord_t *c;
    json_object *status;
    int gets, posts;

    SC_REQUIRE(ts);
    sc_ts_set(ts, &cfg);
    s_unanswered_own_intent(id);
    s_imds_url = ts->url;
    c = s_start();
    s_imds_url = "http://127.0.0.1:9";
    SC_REQUIRE(c);
    for (int i = 0; i < 30; i++)
        sc_coord_step(c, 20);
    status = sc_coord_status(c);
    /* the new POST got 503 too: an error answering it says nothing of the first POST, whose
     * answer nobody has (it may still land): unknown, not failed (no rollback) */
    SC_CHECK_STR(s_approval(status, id), "unknown");
    s_counts(ts, &gets, &posts);
    SC_CHECK_INT(gets, 1);
    SC_CHECK(posts >= 1);
    json_object_put(status);
    sc_coord_destroy(&c);
    sc_ts_stop(&ts);
}

/* Issue 9, case 3: after a restart nothing is planned before the members had a chance to
 * report. The store holds a Scheduled event on vm_1 and vm_2 half prepared before the crash
 * (vm_1 prepared, vm_2 never ordered). No agent runs: every member is "not alive". With the
 * start grace, no POST and no member_down alert. Without it (grace 0) the planner skipped vm_2
 * as dead and approved the half-drained event at once; a member not heard since the start is
 * not known to be down (nemesis seeds 11 and 13: a members roll), so vm_2 now holds the
 * approval after the grace too, alerted. */
SC_TEST(restart_plans_nothing_before_members_report)
{
    static const char *const id = "E-half";
    sc_ts_t *ts = sc_ts_start("/vm_0");
    sc_store_t *st = NULL;
    sc_coord_t *c;
    json_object *status;
    char path[128], err[256], doc[1024];
    int64_t wall = sc_wall_ms();
    int gets, posts;

    SC_REQUIRE(ts);
    s_serve(ts, doc, sizeof(doc), id, "Scheduled");
    snprintf(path, sizeof(path), "%s/coordinator.db", s_dir);
    SC_REQUIRE(sc_store_open(path, &st, err, sizeof(err)) == 0);
    s_store_prepared(st, id, "\"vm_1\",\"vm_2\"", "\"vm_0\",\"vm_1\",\"vm_2\"", "vm_1", wall);
    sc_store_close(&st);

    s_imds_url = ts->url;
    s_grace_ms = 60000;
    c = s_start();
    SC_REQUIRE(c);
    for (int i = 0; i < 30; i++)
        sc_coord_step(c, 20);
    status = sc_coord_status(c);
    SC_CHECK(json_object_get_boolean(json_object_object_get(status, "starting")));
    SC_CHECK_STR(s_approval(status, id), "none");
    json_object_put(status);
    s_counts(ts, &gets, &posts);
    SC_CHECK_INT(posts, 0);
    SC_CHECK_INT((long long)sc_coord_posts(c), 0);
    sc_coord_destroy(&c);
    SC_CHECK_INT(s_alerts(path, "member_down", id, "vm_2"), 0);

    /* the hazard the grace was for: without it, vm_2 was skipped as dead, the event approved
     * undrained on it; now it waits for vm_2 (alerted) */
    s_grace_ms = 0;
    c = s_start();
    s_imds_url = "http://127.0.0.1:9";
    SC_REQUIRE(c);
    for (int i = 0; i < 30; i++)
        sc_coord_step(c, 20);
    s_counts(ts, &gets, &posts);
    SC_CHECK_INT(posts, 0);
    sc_coord_destroy(&c);
    SC_CHECK_INT(s_alerts(path, "member_down", id, "vm_2"), 1);
    sc_ts_stop(&ts);
}

/* Issue 11: entries a follower stored from a leader but never learned committed (not applied)
 * are not applied by its restart: a newer leader may still replace them. Its state and store
 * end at the last entry applied; the log keeps the others for the leader to settle. */
SC_TEST(restart_applies_only_what_was_committed)
{
    sc_store_t *st = NULL;
    sc_coord_t *c;
    json_object *state, *status;
    char path[128], err[256];
    int64_t last = 0, term = 0;
    sc_dlog_entry_t v[2] = {0};

    snprintf(path, sizeof(path), "%s/coordinator.db", s_dir);
    SC_REQUIRE(sc_store_open(path, &st, err, sizeof(err)) == 0);
    s_decide(st, SC_DLOG_TERM, "{\"term\":1}", sc_wall_ms());
    SC_REQUIRE(sc_store_last_entry(st, &last, &term) == 0 && last == 1);
    for (int i = 0; i < 2; i++) { /* a leader's, stored, commit index not heard */
        v[i].index = 2 + i;
        v[i].term = 1;
        v[i].kind = SC_DLOG_ALERT;
        v[i].data = "{\"alert\":\"paused\",\"event_id\":null,\"member\":null,\"message\":\"p\","
                    "\"key\":\"paused\"}";
        v[i].reason = "from the leader";
    }
    SC_CHECK_INT(sc_store_log_entries(st, v, 2, NULL), 0);
    sc_store_close(&st);

    s_voters = 3; /* three voters, two absent: it follows, and nobody tells it a commit */
    c = s_start();
    s_voters = 1;
    SC_REQUIRE(c);
    state = sc_coord_state_json(c);
    SC_CHECK_INT(json_object_get_int64(json_object_object_get(state, "applied")), 1);
    status = sc_coord_status(c);
    SC_CHECK(!json_object_get_boolean(json_object_object_get(status, "paused")));
    SC_CHECK_INT(json_object_get_int64(json_object_object_get(status, "last_index")), 3);
    SC_CHECK_INT(json_object_get_int64(json_object_object_get(status, "applied_index")), 1);
    SC_CHECK_STR(json_object_get_string(json_object_object_get(status, "role")), "voter");
    json_object_put(state);
    json_object_put(status);
    sc_coord_destroy(&c);
}

/* Issue 9, case 7: a coordinator whose store was lost starts again at term 1, while agents
 * refuse every order older than the newest term they saw. An agent's messages carry that term:
 * the coordinator adopts it and leads the next one. */
SC_TEST(lost_store_adopts_the_agents_newer_term)
{
    sc_coord_t *c;
    void *zctx = zmq_ctx_new(), *d1;
    sc_msg_t *hb = NULL;

    c = s_start();
    SC_REQUIRE(c && zctx);
    SC_CHECK_INT(sc_coord_term(c), 1);
    d1 = sc_tp_dealer(zctx, s_port0);
    SC_REQUIRE(sc_msg_new(SC_MSG_HEARTBEAT, "vm_1", 7, 1, &hb) == 0);
    sc_tp_send(d1, hb);
    for (int i = 0; i < 50 && sc_coord_term(c) == 1; i++)
        sc_coord_step(c, 20);
    /* adopted (a follower of term 7), then elected again: term 8 */
    SC_CHECK(sc_coord_wait_lead(c, 5000));
    SC_CHECK_INT(sc_coord_term(c), 8);
    SC_CHECK(sc_coord_is_leader(c));
    zmq_close(d1);
    sc_coord_destroy(&c);
    zmq_ctx_term(zctx);
}

/* Issue 9, case 8: a member gone after Preempt/Terminate comes back when a new agent process
 * speaks for it (the VM re-created, or a Spot VM started again) — not when the agent it was
 * gone with reconnects (after a restart of ours, too). */
SC_TEST(gone_member_back_with_a_new_agent)
{
    sc_store_t *st = NULL;
    sc_coord_t *c;
    json_object *status;
    void *zctx = zmq_ctx_new(), *d1;
    char path[128], err[256];

    snprintf(path, sizeof(path), "%s/coordinator.db", s_dir);
    SC_REQUIRE(sc_store_open(path, &st, err, sizeof(err)) == 0);
    s_decide(st, SC_DLOG_MEMBER, "{\"name\":\"vm_1\",\"state\":\"gone\",\"boot_id\":\"boot-old\"}",
             sc_wall_ms());
    sc_store_close(&st);
    c = s_start();
    SC_REQUIRE(c && zctx);
    d1 = sc_tp_dealer(zctx, s_port0);
    sc_tp_hello(d1, "vm_1", "boot-old", 1, 1, 1);
    status = s_settle(c);
    SC_CHECK_STR(s_member_state(status, "vm_1"), "gone");
    json_object_put(status);
    sc_tp_hello(d1, "vm_1", "boot-new", 1, 1, 1);
    status = s_settle(c);
    SC_CHECK_STR(s_member_state(status, "vm_1"), "healthy");
    json_object_put(status);
    zmq_close(d1);
    sc_coord_destroy(&c);
    /* and it stays a member across a restart */
    c = s_start();
    SC_REQUIRE(c);
    status = sc_coord_status(c);
    SC_CHECK_STR(s_member_state(status, "vm_1"), "healthy");
    json_object_put(status);
    sc_coord_destroy(&c);
    zmq_ctx_term(zctx);
}

/* The Resources status shows for event id ("a,b"), "" when the event is not shown. */
static const char *s_resources(json_object *st, const char *id)
{
    static char buf[256];
    json_object *evs, *res;
    size_t off = 0;

    buf[0] = '\0';
    if (!json_object_object_get_ex(st, "events", &evs))
        return buf;
    for (size_t i = 0; i < json_object_array_length(evs); i++) {
        json_object *e = json_object_array_get_idx(evs, i);
        if (strcmp(json_object_get_string(json_object_object_get(e, "EventId")), id) != 0 ||
            !json_object_object_get_ex(e, "resources", &res))
            continue;
        for (size_t k = 0; k < json_object_array_length(res) && off < sizeof(buf); k++)
            off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s", k ? "," : "",
                                    json_object_get_string(json_object_array_get_idx(res, k)));
    }
    return buf;
}

/* Steps c until event id shows Resources res in its status, at most ~5 s; whether it did. */
static bool s_wait_resources(sc_coord_t *c, const char *id, const char *res)
{
    for (int i = 0; i < 250; i++) {
        json_object *st = sc_coord_status(c);
        bool same = st && strcmp(s_resources(st, id), res) == 0;
        json_object_put(st);
        if (same)
            return true;
        sc_coord_step(c, 20);
    }
    return false;
}

/* event_seen decisions for event id in the log at path (with observed_ms == observed unless
 * observed is 0), -1 when the log cannot be read. */
static int s_seen_decisions(const char *path, const char *id, int64_t observed)
{
    sc_store_t *st = NULL;
    json_object *hist = NULL;
    char err[256];
    int n = 0;

    if (sc_store_open(path, &st, err, sizeof(err)) < 0 ||
        sc_store_history_json(st, 1000, &hist, NULL, 0) < 0) {
        sc_store_close(&st);
        return -1;
    }
    for (size_t i = 0; i < json_object_array_length(hist); i++) {
        json_object *e = json_object_array_get_idx(hist, i), *data, *ev;
        if (strcmp(json_object_get_string(json_object_object_get(e, "kind")), "event_seen") ||
            !json_object_object_get_ex(e, "data", &data) ||
            !json_object_object_get_ex(data, "event", &ev) ||
            strcmp(json_object_get_string(json_object_object_get(ev, "EventId")), id) != 0)
            continue;
        n += !observed ||
             json_object_get_int64(json_object_object_get(data, "observed_ms")) == observed;
    }
    json_object_put(hist);
    sc_store_close(&st);
    return n;
}

/* The merge rule outlives a restart (issue 9, safety 1): an event that ended and was recovered
 * long ago comes back as a tombstone, so a member's old copy of it is not a new event; and an
 * event's content keeps its freshness, so a copy observed before it (a blind member's re-send
 * on reconnecting) does not replace it, while a newer one does and is stored with its time. */
SC_TEST(tombstones_and_freshness_survive_a_restart)
{
    /* vm_1's document: incarnation, then more events after E-old-done and E-fresh */
    static const char *const fmt =
        "{\"DocumentIncarnation\":%d,\"Events\":[{\"EventId\":\"E-old-done\",\"EventType\":"
        "\"Reboot\",\"ResourceType\":\"VirtualMachine\",\"Resources\":[\"vm_1\"],\"EventStatus\":"
        "\"Scheduled\",\"NotBefore\":\"Mon, 11 Apr 2022 22:26:58 GMT\"},{\"EventId\":\"E-fresh\","
        "\"EventType\":\"Reboot\",\"ResourceType\":\"VirtualMachine\",\"Resources\":[\"vm_1\"],"
        "\"EventStatus\":\"Scheduled\",\"NotBefore\":\"Mon, 11 Apr 2022 22:26:58 GMT\"}%s]}";
    sc_store_t *st = NULL;
    sc_coord_t *c;
    void *zctx = zmq_ctx_new(), *d1 = NULL;
    char path[128], err[256], d[1024], body[1024];
    int64_t wall = sc_wall_ms(), newer = wall + 1000;
    uint64_t term;

    snprintf(path, sizeof(path), "%s/coordinator.db", s_dir);
    SC_REQUIRE(sc_store_open(path, &st, err, sizeof(err)) == 0);
    s_event(st, "E-old-done", wall - 2 * 3600 * 1000, "done");
    snprintf(d, sizeof(d),
             "{\"event\":{\"EventId\":\"E-fresh\",\"EventType\":\"Reboot\",\"ResourceType\":"
             "\"VirtualMachine\",\"Resources\":[\"vm_1\",\"vm_2\"],\"EventStatus\":\"Scheduled\","
             "\"NotBefore\":\"\",\"Description\":\"\",\"EventSource\":\"Platform\","
             "\"DurationInSeconds\":-1},\"seen_by\":[\"vm_1\",\"vm_2\"],\"observed_ms\":%lld}",
             (long long)(wall - 1000));
    s_decide(st, SC_DLOG_EVENT_SEEN, d, wall - 900);
    sc_store_close(&st);

    c = s_start();
    SC_REQUIRE(c && zctx);
    term = (uint64_t)sc_coord_term(c);
    d1 = sc_tp_dealer(zctx, s_port0);
    /* vm_1's copy read 5 s ago: E-fresh before it grew, E-old-done long over (E-new shows
     * when the document was handled) */
    snprintf(body, sizeof(body), fmt, 1,
             ",{\"EventId\":\"E-new\",\"EventType\":\"Reboot\",\"ResourceType\":"
             "\"VirtualMachine\",\"Resources\":[\"vm_1\"],\"EventStatus\":\"Scheduled\","
             "\"NotBefore\":\"Mon, 11 Apr 2022 22:26:58 GMT\"}");
    sc_tp_doc(d1, "vm_1", term, 1, body, wall - 5000);
    SC_CHECK(s_wait_resources(c, "E-new", "vm_1"));
    SC_CHECK(s_wait_resources(c, "E-fresh", "vm_1,vm_2"));
    /* a copy read after the stored one replaces it */
    snprintf(body, sizeof(body), fmt, 2, "");
    sc_tp_doc(d1, "vm_1", term, 2, body, newer);
    SC_CHECK(s_wait_resources(c, "E-fresh", "vm_1"));
    zmq_close(d1);
    sc_coord_destroy(&c);
    zmq_ctx_term(zctx);
    SC_CHECK_INT(s_seen_decisions(path, "E-old-done", 0), 1); /* the one stored before */
    SC_CHECK_INT(s_seen_decisions(path, "E-fresh", newer), 1);
}

/* Whether coordinator c's state holds event id Active (not ended, cancelled nor closed). */
static bool s_active(sc_coord_t *c, const char *id)
{
    char phase[32];
    return strcmp(sc_tp_state_event(c, id, "phase", phase, sizeof(phase)), "Active") == 0;
}

/* A document of incarnation inc holding the events ids (Scheduled, on vm_1), into buf. */
static const char *s_doc_of(char *buf, size_t len, int inc, const char *const *ids, size_t n)
{
    size_t off = (size_t)snprintf(buf, len, "{\"DocumentIncarnation\":%d,\"Events\":[", inc);
    for (size_t i = 0; i < n && off < len; i++)
        off += (size_t)snprintf(
            buf + off, len - off,
            "%s{\"EventId\":\"%s\",\"EventType\":\"Reboot\",\"ResourceType\":"
            "\"VirtualMachine\",\"Resources\":[\"vm_1\"],\"EventStatus\":\"Scheduled\","
            "\"NotBefore\":\"Mon, 01 Jan 2046 00:00:00 GMT\"}",
            i ? "," : "", ids[i]);
    if (off < len)
        snprintf(buf + off, len - off, "]}");
    return buf;
}

/* Nemesis seed 1: after a coordinator's restart every agent's first document was taken for a
 * rebooted VM's fresh view, so an event it lacked stayed for a minute (confirm_ms), holding its
 * fault domain while the next domain's events went at NotBefore. The agents' boot ids are kept
 * across the restart: the same agent's document ends an event it lacks at once; a new agent's
 * (the VM may have rebooted) is still a fresh view that waits. */
SC_TEST(restart_remembers_the_agents_boots)
{
    sc_coord_t *c;
    void *zctx = zmq_ctx_new(), *d1, *d2;
    char body[2048];
    uint64_t term;
    int64_t now = sc_wall_ms();
    bool gone = false;

    c = s_start();
    SC_REQUIRE(c && zctx);
    term = (uint64_t)sc_coord_term(c);
    d1 = sc_tp_dealer(zctx, s_port0);
    d2 = sc_tp_dealer(zctx, s_port0);
    sc_tp_hello(d1, "vm_1", "boot-r1", 1, 1, term);
    sc_tp_hello(d2, "vm_2", "boot-r2", 2, 2, term);
    sc_tp_doc(d1, "vm_1", term, 2, s_doc_of(body, sizeof(body), 1, (const char *[]){"E-same"}, 1),
              now);
    sc_tp_doc(d2, "vm_2", term, 2, s_doc_of(body, sizeof(body), 1, (const char *[]){"E-new"}, 1),
              now);
    SC_REQUIRE(s_wait_resources(c, "E-same", "vm_1"));
    SC_REQUIRE(s_wait_resources(c, "E-new", "vm_1"));
    zmq_close(d1);
    zmq_close(d2);
    sc_coord_destroy(&c);

    c = s_start();
    SC_REQUIRE(c != NULL);
    term = (uint64_t)sc_coord_term(c);
    SC_REQUIRE(s_active(c, "E-same") && s_active(c, "E-new"));
    d1 = sc_tp_dealer(zctx, s_port0);
    d2 = sc_tp_dealer(zctx, s_port0);
    /* vm_2: a new agent (its VM may have rebooted), its document lacks E-new: a fresh view,
     * E-new waits for confirm_ms (a minute). Handled once E-mark2 is known. */
    sc_tp_hello(d2, "vm_2", "boot-r2-new", 2, 2, term);
    sc_tp_doc(d2, "vm_2", term, 2, s_doc_of(body, sizeof(body), 2, (const char *[]){"E-mark2"}, 1),
              now + 1000);
    SC_REQUIRE(s_wait_resources(c, "E-mark2", "vm_1"));
    SC_CHECK(s_active(c, "E-new"));
    /* vm_1: the same agent, its document lacks E-same: gone, decided at once */
    sc_tp_hello(d1, "vm_1", "boot-r1", 1, 1, term);
    sc_tp_doc(d1, "vm_1", term, 2, s_doc_of(body, sizeof(body), 2, (const char *[]){"E-mark1"}, 1),
              now + 1000);
    SC_REQUIRE(s_wait_resources(c, "E-mark1", "vm_1"));
    for (int i = 0; i < 250 && !(gone = !s_active(c, "E-same")); i++)
        sc_coord_step(c, 20);
    SC_CHECK(gone);
    SC_CHECK(s_active(c, "E-new"));
    zmq_close(d1);
    zmq_close(d2);
    sc_coord_destroy(&c);
    zmq_ctx_term(zctx);
}

/* schedcoordctl rehearse asks for the rehearsal it started at once, which the coordinator may
 * answer before the start's entry is applied (the same loop turn): under way, not refused
 * ("no rehearsal yet" made the client give up: coord_forecast on a clean clone). */
SC_TEST(rehearsal_asked_before_its_start_applies)
{
    sc_coord_t *c = s_start();
    json_object *ans, *q, *v;
    int64_t id;

    SC_REQUIRE(c);
    for (int i = 0; i < 20; i++)
        sc_coord_step(c, 10);
    q = json_tokener_parse("{\"cmd\":\"rehearse\",\"vms\":[\"vm_1\"]}");
    ans = sc_coord_control(c, q);
    json_object_put(q);
    SC_REQUIRE(ans && !json_object_object_get_ex(ans, "error", &v));
    id = json_object_get_int64(json_object_object_get(ans, "rehearsal"));
    json_object_put(ans);
    /* not stepped: the entry is proposed, not applied */
    q = json_object_new_object();
    json_object_object_add(q, "cmd", json_object_new_string("rehearsal"));
    json_object_object_add(q, "id", json_object_new_int64(id));
    ans = sc_coord_control(c, q);
    SC_CHECK(ans && !json_object_object_get_ex(ans, "error", &v));
    SC_CHECK(ans && !json_object_get_boolean(json_object_object_get(ans, "over")));
    json_object_put(ans);
    /* once applied, the report itself */
    for (int i = 0; i < 20; i++)
        sc_coord_step(c, 10);
    ans = sc_coord_control(c, q);
    SC_CHECK(ans && !json_object_object_get_ex(ans, "error", &v));
    SC_CHECK(ans && json_object_object_get_ex(ans, "vms", &v));
    json_object_put(ans);
    json_object_put(q);
    sc_coord_destroy(&c);
}

/* A document from member from whose agent left malformed events out (reasons). */
static void s_send_malformed(void *d, const char *from, int64_t inc, const char *const *why,
                             size_t n)
{
    static uint64_t seq;
    char body[128];
    sc_msg_t *m = NULL;

    snprintf(body, sizeof(body), "{\"DocumentIncarnation\":%lld,\"Events\":[]}", (long long)inc);
    if (sc_msg_new(SC_MSG_DOCUMENT, from, 0, ++seq, &m) < 0 ||
        sc_doc_parse(body, strlen(body), &m->document.document, NULL, 0) < 0)
        SC_FAILF("document");
    m->document.incarnation = inc;
    m->document.observed_at_ms = sc_wall_ms();
    for (size_t i = 0; i < n; i++)
        sc_msg_add_malformed(m, why[i]);
    sc_tp_send(d, m);
}

/* counters.imds_malformed_events[member] and counters.alerts.malformed_event of status. */
static int64_t s_malformed(json_object *st, const char *member)
{
    json_object *cnt = json_object_object_get(st, "counters");
    return json_object_get_int64(
        json_object_object_get(json_object_object_get(cnt, "imds_malformed_events"), member));
}

static int64_t s_malformed_alerts(json_object *st)
{
    json_object *cnt = json_object_object_get(st, "counters");
    return json_object_get_int64(
        json_object_object_get(json_object_object_get(cnt, "alerts"), "malformed_event"));
}

/* Steps c until vm_1 and vm_2 counted m1 and m2 malformed events (at most ~5 s), then status. */
static json_object *s_settle_malformed(sc_coord_t *c, int64_t m1, int64_t m2)
{
    json_object *st = s_settle(c);
    for (int i = 0; i < 250 && (s_malformed(st, "vm_1") != m1 || s_malformed(st, "vm_2") != m2);
         i++) {
        json_object_put(st);
        sc_coord_step(c, 20);
        st = sc_coord_status(c);
    }
    return st;
}

/* The malformed events a member's agent left out of its document: counted per member once per
 * incarnation and list (a document sent again counts nothing), each reason alerted once for
 * the whole set (every VM sees the same document). */
SC_TEST(malformed_events_counted_and_alerted_once)
{
    static const char *const why[] = {"Events[1].EventId: missing",
                                      "Events[2].NotBefore: \"soon\" is neither RFC 1123 nor "
                                      "ISO 8601"};
    sc_coord_t *c = s_start();
    void *zctx = zmq_ctx_new(), *d1, *d2;
    json_object *st;

    SC_REQUIRE(c && zctx);
    d1 = sc_tp_dealer(zctx, s_port0);
    d2 = sc_tp_dealer(zctx, s_port0);
    s_send_malformed(d1, "vm_1", 4, why, 1);
    st = s_settle_malformed(c, 1, 0);
    SC_CHECK_INT(s_malformed(st, "vm_1"), 1);
    SC_CHECK_INT(s_malformed_alerts(st), 1);
    json_object_put(st);
    /* sent again (a doc_request, a reconnection): nothing new; vm_2 sees the same */
    s_send_malformed(d1, "vm_1", 4, why, 1);
    s_send_malformed(d2, "vm_2", 4, why, 1);
    st = s_settle_malformed(c, 1, 1);
    SC_CHECK_INT(s_malformed(st, "vm_1"), 1);
    SC_CHECK_INT(s_malformed(st, "vm_2"), 1);
    SC_CHECK_INT(s_malformed_alerts(st), 1);
    json_object_put(st);
    /* a second bad event: counted with the list, alerted once more */
    s_send_malformed(d1, "vm_1", 5, why, 2);
    st = s_settle_malformed(c, 3, 1);
    SC_CHECK_INT(s_malformed(st, "vm_1"), 3);
    SC_CHECK_INT(s_malformed_alerts(st), 2);
    SC_CHECK_INT(s_malformed(st, "vm_0"), 0);
    json_object_put(st);
    zmq_close(d1);
    zmq_close(d2);
    sc_coord_destroy(&c);
    zmq_ctx_term(zctx);
}

/* nemesis seed 41 of the campaign on a08e4f5: a new leader asks once about a hook under way
 * whose order it did not send (vm_7's prepare, done while nobody led); that ask was held (a
 * prepare past its moment: another domain's event due undrained) and never made again once
 * the hold was lifted, 10 ms later: the event went at NotBefore. Here vm_1's prepare of E-A is
 * under way (started, from before the restart) and E-B, vm_2's, is past its NotBefore,
 * undrained: the ask is held. Once vm_2's own document no longer holds E-B, the ask goes out
 * (within resend_ms). Seen failing without the fix: no order in 5 s. */
SC_TEST(held_ask_of_a_hook_under_way_is_made_once_free)
{
    sc_store_t *st = NULL;
    sc_coord_t *c;
    void *zctx = zmq_ctx_new(), *d1, *d2;
    sc_msg_t *m = NULL;
    char path[128], err[256], d[1024], nb[64];
    int64_t wall = sc_wall_ms(), end;
    bool got = false;

    snprintf(path, sizeof(path), "%s/coordinator.db", s_dir);
    SC_REQUIRE(sc_store_open(path, &st, err, sizeof(err)) == 0);
    s_decide(st, SC_DLOG_EVENT_SEEN,
             "{\"event\":{\"EventId\":\"E-A\",\"EventType\":\"Reboot\",\"ResourceType\":"
             "\"VirtualMachine\",\"Resources\":[\"vm_1\"],\"EventStatus\":\"Scheduled\","
             "\"NotBefore\":\"Mon, 01 Jan 2046 00:00:00 GMT\",\"Description\":\"\","
             "\"EventSource\":\"Platform\",\"DurationInSeconds\":-1},"
             "\"seen_by\":[\"vm_0\",\"vm_1\",\"vm_2\"]}",
             wall - 20000);
    s_decide(st, SC_DLOG_PREPARE_ORDERED, "{\"event_id\":\"E-A\",\"vms\":[\"vm_1\"]}",
             wall - 15000);
    s_decide(st, SC_DLOG_HOOK_PROGRESS,
             "{\"event_id\":\"E-A\",\"vm\":\"vm_1\",\"phase\":\"prepare\",\"state\":\"started\","
             "\"exit_status\":-1,\"origin\":\"order\"}",
             wall - 14000);
    sc_time_rfc1123(wall / 1000 - 10, nb, sizeof(nb));
    snprintf(d, sizeof(d),
             "{\"event\":{\"EventId\":\"E-B\",\"EventType\":\"Reboot\",\"ResourceType\":"
             "\"VirtualMachine\",\"Resources\":[\"vm_2\"],\"EventStatus\":\"Scheduled\","
             "\"NotBefore\":\"%s\",\"Description\":\"\",\"EventSource\":\"Platform\","
             "\"DurationInSeconds\":-1},\"seen_by\":[\"vm_0\",\"vm_1\",\"vm_2\"]}",
             nb);
    s_decide(st, SC_DLOG_EVENT_SEEN, d, wall - 12000);
    sc_store_close(&st);

    c = s_start();
    SC_REQUIRE(c && zctx);
    d1 = sc_tp_dealer(zctx, s_port0);
    sc_tp_hello(d1, "vm_1", "boot-1", 1, 1, 1);
    /* held: no ask while E-B may go down undrained */
    for (end = sc_mono_ms() + 1500; sc_mono_ms() < end && !got;) {
        sc_coord_step(c, 20);
        while (!got && (m = sc_tp_recv(d1))) {
            got = m->type == SC_MSG_ORDER;
            sc_msg_destroy(&m);
        }
    }
    SC_CHECK(!got);
    /* vm_2's own document no longer holds E-B: the ask goes out */
    d2 = sc_tp_dealer(zctx, s_port0);
    sc_tp_hello(d2, "vm_2", "boot-2", 2, 2, 1);
    sc_tp_doc(d2, "vm_2", 1, 2, "{\"DocumentIncarnation\":3,\"Events\":[]}", sc_wall_ms());
    for (end = sc_mono_ms() + 5000; sc_mono_ms() < end && !got;) {
        sc_coord_step(c, 20);
        while (!got && (m = sc_tp_recv(d1))) {
            got = m->type == SC_MSG_ORDER && m->order.action == SC_MSG_PHASE_PREPARE &&
                  strcmp(m->order.event, "E-A") == 0;
            sc_msg_destroy(&m);
        }
    }
    SC_CHECK(got);
    zmq_close(d1);
    zmq_close(d2);
    sc_coord_destroy(&c);
    zmq_ctx_term(zctx);
}

int main(void)
{
    snprintf(s_dir, sizeof(s_dir), "/tmp/sc_coord_restore_XXXXXX");
    if (!mkdtemp(s_dir)) {
        perror("mkdtemp");
        return 1;
    }
    SC_RUN(refused_recover_is_not_recovered_after_restart);
    s_cleanup();
    if (!mkdtemp(strcpy(s_dir, "/tmp/sc_coord_restore_XXXXXX")))
        return 1;
    SC_RUN(old_ended_event_with_a_pending_recover_is_restored);
    s_cleanup();
    if (!mkdtemp(strcpy(s_dir, "/tmp/sc_coord_restore_XXXXXX")))
        return 1;
    SC_RUN(vm_dropped_from_resources_is_not_forgotten);
    s_cleanup();
    if (!mkdtemp(strcpy(s_dir, "/tmp/sc_coord_restore_XXXXXX")))
        return 1;
    SC_RUN(delegated_answer_only_from_the_delegate_in_this_term);
    s_cleanup();
    if (!mkdtemp(strcpy(s_dir, "/tmp/sc_coord_restore_XXXXXX")))
        return 1;
    SC_RUN(unanswered_intent_started_in_own_imds_is_not_posted_again);
    s_cleanup();
    if (!mkdtemp(strcpy(s_dir, "/tmp/sc_coord_restore_XXXXXX")))
        return 1;
    SC_RUN(unanswered_intent_scheduled_in_own_imds_is_posted_once);
    SC_RUN(slow_approval_post_does_not_stop_the_loop);
    s_cleanup();
    if (!mkdtemp(strcpy(s_dir, "/tmp/sc_coord_restore_XXXXXX")))
        return 1;
    SC_RUN(unanswered_intent_absent_from_own_imds_seen_by_another_is_unknown);
    s_cleanup();
    if (!mkdtemp(strcpy(s_dir, "/tmp/sc_coord_restore_XXXXXX")))
        return 1;
    SC_RUN(unanswered_intent_own_imds_failing_is_posted_again);
    s_cleanup();
    if (!mkdtemp(strcpy(s_dir, "/tmp/sc_coord_restore_XXXXXX")))
        return 1;
    SC_RUN(restart_plans_nothing_before_members_report);
    s_cleanup();
    if (!mkdtemp(strcpy(s_dir, "/tmp/sc_coord_restore_XXXXXX")))
        return 1;
    SC_RUN(lost_store_adopts_the_agents_newer_term);
    s_cleanup();
    if (!mkdtemp(strcpy(s_dir, "/tmp/sc_coord_restore_XXXXXX")))
        return 1;
    SC_RUN(restart_applies_only_what_was_committed);
    s_cleanup();
    if (!mkdtemp(strcpy(s_dir, "/tmp/sc_coord_restore_XXXXXX")))
        return 1;
    SC_RUN(gone_member_back_with_a_new_agent);
    s_cleanup();
    if (!mkdtemp(strcpy(s_dir, "/tmp/sc_coord_restore_XXXXXX")))
        return 1;
    SC_RUN(tombstones_and_freshness_survive_a_restart);
    s_cleanup();
    if (!mkdtemp(strcpy(s_dir, "/tmp/sc_coord_restore_XXXXXX")))
        return 1;
    SC_RUN(malformed_events_counted_and_alerted_once);
    s_cleanup();
    if (!mkdtemp(strcpy(s_dir, "/tmp/sc_coord_restore_XXXXXX")))
        return 1;
    SC_RUN(restart_remembers_the_agents_boots);
    s_cleanup();
    if (!mkdtemp(strcpy(s_dir, "/tmp/sc_coord_restore_XXXXXX")))
        return 1;
    SC_RUN(rehearsal_asked_before_its_start_applies);
    s_cleanup();
    if (!mkdtemp(strcpy(s_dir, "/tmp/sc_coord_restore_XXXXXX")))
        return 1;
    SC_RUN(held_ask_of_a_hook_under_way_is_made_once_free);
    s_cleanup();
    return sc_test_done();
}
