/* The coordinator's store: migrations from empty, decisions applied to the tables, a restart
 * (close + reopen of the same file) restoring everything, a crash between log and apply. */
#include "sc_dlog.h"
#include "sc_error.h"
#include "sc_store.h"
#include "sc_store_test.h"
#include "sc_test.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

static char s_path[1024];

static void s_fresh_path(const char *name)
{
    snprintf(s_path, sizeof(s_path), "%s/%s.db", sc_test_tmpdir(NULL), name);
    sc_test_remove_db(s_path);
}

static json_object *s_get(json_object *o, const char *path)
{
    /* "a.b.0.c" */
    char buf[256], *save = NULL;
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = strtok_r(buf, ".", &save); p && o; p = strtok_r(NULL, ".", &save)) {
        if (json_object_is_type(o, json_type_array))
            o = json_object_array_get_idx(o, (size_t)atoi(p));
        else if (!json_object_object_get_ex(o, p, &o))
            return NULL;
    }
    return o;
}

static const char *s_gets(json_object *o, const char *path)
{
    json_object *v = s_get(o, path);
    return v ? json_object_get_string(v) : NULL;
}

SC_TEST(pause_outlives_restart)
{
    char err[256];
    sc_store_t *s = NULL;
    bool paused = true;

    s_fresh_path("pause");
    SC_REQUIRE(sc_store_open(s_path, &s, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_store_paused(s, &paused), 0);
    SC_CHECK(!paused); /* never paused */
    SC_CHECK_INT(sc_store_decide(s, 1, SC_DLOG_ALERT, "{\"alert\":\"paused\",\"message\":\"m\"}",
                                 "schedcoordctl pause", 10, NULL),
                 0);
    /* another alert changes nothing */
    SC_CHECK_INT(sc_store_decide(s, 1, SC_DLOG_ALERT, "{\"alert\":\"deadline\",\"message\":\"m\"}",
                                 "", 11, NULL),
                 0);
    SC_CHECK_INT(sc_store_paused(s, &paused), 0);
    SC_CHECK(paused);
    sc_store_close(&s);
    SC_REQUIRE(sc_store_open(s_path, &s, err, sizeof(err)) == 0);
    paused = false;
    SC_CHECK_INT(sc_store_paused(s, &paused), 0);
    SC_CHECK(paused); /* still paused after a restart */
    SC_CHECK_INT(sc_store_decide(s, 2, SC_DLOG_ALERT, "{\"alert\":\"resumed\",\"message\":\"m\"}",
                                 "schedcoordctl resume", 12, NULL),
                 0);
    SC_CHECK_INT(sc_store_paused(s, &paused), 0);
    SC_CHECK(!paused);
    SC_CHECK_INT(sc_store_paused(s, NULL), -EINVAL);
    sc_store_close(&s);
    sc_test_remove_db(s_path);
}

static int s_boot_cb(void *arg, const sc_store_boot_t *b)
{
    char *out = arg;
    size_t off = strlen(out);
    snprintf(out + off, 256 - off, "%s=%s/%lld/%lld;", b->member, b->boot_id,
             (long long)b->incarnation, (long long)b->observed_ms);
    return 0;
}

/* The agents' boot ids a coordinator keeps for its own restart: stored, updated, read back
 * after a restart; a value it cannot read is skipped, not fatal. */
SC_TEST(agent_boots_outlive_restart)
{
    char err[256], got[256] = "";
    sc_store_t *s = NULL;

    s_fresh_path("boots");
    SC_REQUIRE(sc_store_open(s_path, &s, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_store_save_boots(
                     s, (sc_store_boot_t[]){{"vm_1", "b-1", 3, 1000}, {"vm_2", "b-2", 7, 2000}}, 2),
                 0);
    /* in the caller's transaction (a leader's turn): written with it */
    SC_REQUIRE(sc_store_begin(s) == 0);
    SC_CHECK_INT(sc_store_save_boots(s, (sc_store_boot_t[]){{"vm_1", "b-1x", 1, 3000}}, 1), 0);
    SC_CHECK_INT(sc_store_commit(s), 0);
    SC_CHECK_INT(sc_store_save_boots(s, (sc_store_boot_t[]){{"vm_3", NULL, 1, 1}}, 1), -EINVAL);
    SC_CHECK_INT(sc_db_run(sc_store_test_db(s), NULL,
                           "INSERT INTO meta(key, value) VALUES ('agent_boot:vm_9', 'junk')", NULL),
                 0);
    sc_store_close(&s);
    SC_REQUIRE(sc_store_open(s_path, &s, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_store_boots_each(s, s_boot_cb, got), 0);
    SC_CHECK_STR(got, "vm_1=b-1x/1/3000;vm_2=b-2/7/2000;");
    SC_CHECK_INT(sc_store_boots_each(s, NULL, got), -EINVAL);
    {
        json_object *t = NULL; /* a snapshot carries none: each coordinator hears its agents */
        SC_REQUIRE(sc_store_tables_json(s, &t) == 0);
        SC_CHECK(strstr(json_object_to_json_string(t), "agent_boot") == NULL);
        json_object_put(t);
    }
    sc_store_close(&s);
    sc_test_remove_db(s_path);
}

SC_TEST(migrates_from_empty)
{
    sc_store_t *s = NULL;
    char err[256] = "";
    int v = -1;
    s_fresh_path("migrate");
    SC_CHECK_INT(sc_store_open(s_path, &s, err, sizeof(err)), 0);
    SC_REQUIRE(s);
    SC_CHECK_INT(sc_db_user_version(sc_store_test_db(s), &v), 0);
    SC_CHECK_INT(v, SC_STORE_SCHEMA_VERSION);
    int64_t n = 0;
    SC_CHECK_INT(sc_db_query_int64(sc_store_test_db(s), &n,
                                   "SELECT count(*) FROM sqlite_master WHERE name IN ('meta', "
                                   "'members', 'events', 'drains', 'approvals', 'dlog', "
                                   "'drains_by_vm', 'snapshots')",
                                   NULL),
                 0);
    SC_CHECK_INT(n, 8);
    SC_CHECK_INT(sc_db_query_int64(sc_store_test_db(s), &n, "PRAGMA synchronous", NULL), 0);
    SC_CHECK_INT(n, 2); /* FULL */
    sc_store_close(&s);
    /* A database from a newer program is refused with a reason. */
    SC_REQUIRE(sc_store_open(s_path, &s, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_db_exec(sc_store_test_db(s), "PRAGMA user_version = 99", NULL, 0), 0);
    sc_store_close(&s);
    SC_CHECK(sc_store_open(s_path, &s, err, sizeof(err)) < 0);
    SC_CHECK(s == NULL);
    SC_CHECK(strstr(err, "99") != NULL);
}

static const char *EV =
    "{\"event\":{\"EventId\":\"E1\",\"EventType\":\"Reboot\",\"ResourceType\":\"VirtualMachine\","
    "\"Resources\":[\"vm_0\",\"vm_3\"],\"EventStatus\":\"Scheduled\",\"NotBefore\":\"Mon, 19 Sep "
    "2016 18:29:47 GMT\",\"EventSource\":\"Platform\",\"DurationInSeconds\":-1,\"Description\":"
    "\"d\"},\"seen_by\":[\"vm_0\",\"vm_1\"],\"not_before\":1474309787}";

static void s_rollout(sc_store_t *s, int64_t term)
{
    int64_t intent = 0;
    SC_CHECK_INT(sc_store_decide(s, term, SC_DLOG_MEMBER,
                                 "{\"name\":\"vm_0\",\"endpoint\":\"tcp://127.0.0.1:1\","
                                 "\"fault_domain\":0,\"update_domain\":0,\"state\":\"healthy\"}",
                                 "hello", 100, NULL),
                 0);
    SC_CHECK_INT(sc_store_decide(s, term, SC_DLOG_EVENT_SEEN, EV, "new event", 101, NULL), 0);
    SC_CHECK_INT(sc_store_decide(s, term, SC_DLOG_PREPARE_ORDERED,
                                 "{\"event_id\":\"e1\",\"vms\":[\"vm_0\",\"vm_3\"]}", "FD 0 turn",
                                 102, NULL),
                 0);
    SC_CHECK_INT(sc_store_decide(s, term, SC_DLOG_HOOK_PROGRESS,
                                 "{\"event_id\":\"E1\",\"vm\":\"vm_0\",\"phase\":\"prepare\","
                                 "\"state\":\"done\",\"exit_status\":0}",
                                 "", 103, NULL),
                 0);
    SC_CHECK_INT(sc_store_decide(s, term, SC_DLOG_HOOK_PROGRESS,
                                 "{\"event_id\":\"E1\",\"vm\":\"vm_3\",\"phase\":\"prepare\","
                                 "\"state\":\"started\"}",
                                 "", 104, NULL),
                 0);
    SC_CHECK_INT(sc_store_decide(s, term, SC_DLOG_APPROVAL_INTENT,
                                 "{\"event_ids\":[\"E1\"],\"body\":\"{}\",\"via\":null,\"by\":"
                                 "\"vm_0\"}",
                                 "all drained", 105, &intent),
                 0);
    SC_CHECK(intent > 0);
}

SC_TEST(decisions_survive_restart)
{
    sc_store_t *s = NULL;
    char err[256];
    json_object *snap = NULL;
    s_fresh_path("restart");
    SC_REQUIRE(sc_store_open(s_path, &s, err, sizeof(err)) == 0);
    int64_t term = 0;
    SC_CHECK_INT(sc_store_next_term(s, 1, &term), 0);
    SC_CHECK_INT(term, 1);
    s_rollout(s, term);
    sc_store_close(&s);

    /* Restart: same file, everything there; the next term is newer. */
    SC_REQUIRE(sc_store_open(s_path, &s, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_store_next_term(s, 2, &term), 0);
    SC_CHECK_INT(term, 2);
    SC_CHECK_INT(sc_store_snapshot(s, true, 1000, 0, &snap), 0);
    SC_REQUIRE(snap);
    SC_CHECK_INT(json_object_get_int64(s_get(snap, "term")), 2);
    SC_CHECK_STR(s_gets(snap, "members.0.name"), "vm_0");
    SC_CHECK_STR(s_gets(snap, "members.0.endpoint"), "tcp://127.0.0.1:1");
    SC_CHECK_STR(s_gets(snap, "events.0.EventId"), "E1");
    SC_CHECK_STR(s_gets(snap, "events.0.type"), "Reboot");
    SC_CHECK_STR(s_gets(snap, "events.0.seen_by.1"), "vm_1");
    SC_CHECK_INT(json_object_get_int64(s_get(snap, "events.0.not_before")), 1474309787);
    SC_CHECK_INT(json_object_get_int64(s_get(snap, "events.0.first_seen_ms")), 101);
    SC_CHECK_STR(s_gets(snap, "events.0.drains.vm_0"), "prepared");
    SC_CHECK_STR(s_gets(snap, "events.0.drains.vm_3"), "preparing");
    /* The approval intent is there, without an answer: a restart sees it. */
    SC_CHECK(s_get(snap, "approvals.0.id") != NULL);
    SC_CHECK(s_get(snap, "approvals.0.answered_ms") == NULL);
    SC_CHECK(s_get(snap, "events.0.approved_ms") == NULL);
    int64_t intent = json_object_get_int64(s_get(snap, "approvals.0.id"));
    json_object_put(snap);

    char ans[128];
    snprintf(ans, sizeof(ans), "{\"intent\":%lld,\"rc\":0,\"http_status\":200,\"message\":\"ok\"}",
             (long long)intent);
    SC_CHECK_INT(sc_store_decide(s, term, SC_DLOG_APPROVAL_ANSWER, ans, "", 200, NULL), 0);
    SC_CHECK_INT(sc_store_decide(s, term, SC_DLOG_EVENT_STARTED,
                                 "{\"event_id\":\"E1\",\"how\":\"approved\"}", "", 201, NULL),
                 0);
    SC_CHECK_INT(sc_store_decide(s, term, SC_DLOG_EVENT_ENDED,
                                 "{\"event_id\":\"E1\",\"how\":\"completed\"}", "", 300, NULL),
                 0);
    SC_CHECK_INT(sc_store_decide(s, term, SC_DLOG_RECOVER_ORDERED,
                                 "{\"event_id\":\"E1\",\"vms\":[\"vm_0\"]}", "", 301, NULL),
                 0);
    /* An answer for an intent that does not exist is refused, and nothing is logged. */
    int64_t last0 = 0, last1 = 0;
    sc_dlog_last(sc_store_test_db(s), &last0, NULL);
    SC_CHECK_INT(sc_store_decide(s, term, SC_DLOG_APPROVAL_ANSWER, "{\"intent\":999,\"rc\":0}", "",
                                 302, NULL),
                 -EINVAL);
    sc_dlog_last(sc_store_test_db(s), &last1, NULL);
    SC_CHECK_INT(last1, last0);
    sc_store_close(&s);

    SC_REQUIRE(sc_store_open(s_path, &s, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_store_snapshot(s, true, 1000, 0, &snap), 0);
    SC_REQUIRE(snap);
    SC_CHECK_INT(json_object_get_int64(s_get(snap, "events.0.approved_ms")), 200);
    SC_CHECK_STR(s_gets(snap, "events.0.approved_by"), "vm_0");
    SC_CHECK_STR(s_gets(snap, "events.0.started_how"), "approved");
    SC_CHECK_STR(s_gets(snap, "events.0.ended_how"), "completed");
    SC_CHECK_STR(s_gets(snap, "events.0.status"), "Started");
    SC_CHECK_STR(s_gets(snap, "events.0.drains.vm_0"), "recover_ordered");
    SC_CHECK_INT(json_object_get_int64(s_get(snap, "approvals.0.http_status")), 200);
    json_object_put(snap);
    /* Ended events can be left out of the live view. */
    SC_CHECK_INT(sc_store_snapshot(s, false, 100000, 1000, &snap), 0);
    SC_CHECK_INT(json_object_array_length(s_get(snap, "events")), 0);
    json_object_put(snap);

    json_object *hist = NULL;
    SC_CHECK_INT(sc_store_history_json(s, 3, &hist, NULL, 0), 0);
    SC_REQUIRE(hist);
    SC_CHECK_INT(json_object_array_length(hist), 3);
    SC_CHECK_STR(s_gets(hist, "2.kind"), "recover_ordered");
    json_object_put(hist);
    sc_store_close(&s);
}

SC_TEST(bad_decisions_rejected)
{
    sc_store_t *s = NULL;
    char err[256];
    SC_REQUIRE(sc_store_open(":memory:", &s, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_store_decide(s, 1, SC_DLOG_EVENT_SEEN, "{\"event\":{}}", "", 1, NULL), -EINVAL);
    SC_CHECK_INT(sc_store_decide(s, 1, SC_DLOG_HOOK_PROGRESS,
                                 "{\"event_id\":\"E\",\"vm\":\"v\",\"phase\":\"lunch\","
                                 "\"state\":\"done\"}",
                                 "", 1, NULL),
                 -EINVAL);
    SC_CHECK_INT(sc_store_decide(s, 1, SC_DLOG_PREPARE_ORDERED, "{\"event_id\":\"E\",\"vms\":[1]}",
                                 "", 1, NULL),
                 -EINVAL);
    int64_t last = 5;
    SC_CHECK_INT(sc_dlog_last(sc_store_test_db(s), &last, NULL), 0);
    SC_CHECK_INT(last, 0); /* nothing half-written */
    sc_store_close(&s);
}

/* A hook result reported again (an agent answering a re-sent order, or a new term) keeps the
 * time it first finished; a different result (interrupted, then run again) moves it. */
/* A batch of decisions in the caller's transaction: rolled back, none is left; committed, all
 * are. A read-only store reads the log and refuses to write. */
SC_TEST(transactions_and_read_only)
{
    sc_store_t *s = NULL, *ro = NULL;
    json_object *hist = NULL;
    int64_t term = 0;
    char err[256] = "";

    s_fresh_path("txn");
    SC_REQUIRE(sc_store_open(s_path, &s, err, sizeof(err)) == 0);
    SC_REQUIRE(sc_store_next_term(s, 100, &term) == 0);
    SC_CHECK_INT(sc_store_begin(s), 0);
    SC_CHECK_INT(sc_store_decide(s, term, SC_DLOG_ALERT, "{\"message\":\"a\"}", "r", 101, NULL), 0);
    SC_CHECK_INT(sc_store_rollback(s), 0);
    SC_CHECK_INT(sc_store_history_json(s, 10, &hist, err, sizeof(err)), 0);
    SC_CHECK_INT(json_object_array_length(hist), 1); /* the TERM entry only */
    json_object_put(hist);
    SC_CHECK_INT(sc_store_begin(s), 0);
    SC_CHECK_INT(sc_store_decide(s, term, SC_DLOG_ALERT, "{\"message\":\"b\"}", "r", 102, NULL), 0);
    SC_CHECK_INT(sc_store_decide(s, term, SC_DLOG_ALERT, "{\"message\":\"c\"}", "r", 103, NULL), 0);
    SC_CHECK_INT(sc_store_commit(s), 0);
    SC_CHECK_INT(sc_store_rollback(s), 0); /* none open: harmless */

    SC_REQUIRE(sc_store_open_readonly(s_path, &ro, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_store_history_json(ro, 10, &hist, err, sizeof(err)), 0);
    SC_CHECK_INT(json_object_array_length(hist), 3);
    SC_CHECK_STR(s_gets(hist, "2.data.message"), "c");
    json_object_put(hist);
    SC_CHECK(sc_store_decide(ro, term, SC_DLOG_ALERT, "{\"message\":\"d\"}", "r", 104, NULL) < 0);
    SC_CHECK_INT(sc_store_history_json(ro, 10, &hist, err, sizeof(err)), 0);
    SC_CHECK_INT(json_object_array_length(hist), 3); /* nothing written */
    json_object_put(hist);
    sc_store_close(&ro);
    sc_store_close(&s);

    /* a missing file is not created, and the reason is given */
    s_fresh_path("txn-missing");
    SC_CHECK(sc_store_open_readonly(s_path, &ro, err, sizeof(err)) < 0);
    SC_CHECK(ro == NULL && strstr(err, "unable to open") != NULL);
    SC_CHECK(access(s_path, F_OK) != 0);
}

static int64_t s_detail_int(sc_store_t *s, const char *vm, const char *phase, const char *key)
{
    json_object *snap = NULL;
    char path[128];
    int64_t v = -100;
    snprintf(path, sizeof(path), "events.0.drain_detail.%s.%s.%s", vm, phase, key);
    if (sc_store_snapshot(s, true, 1000, 0, &snap) == 0 && s_get(snap, path))
        v = json_object_get_int64(s_get(snap, path));
    json_object_put(snap);
    return v;
}

static int64_t s_finished(sc_store_t *s, const char *vm, const char *phase)
{
    int64_t v = s_detail_int(s, vm, phase, "finished_ms");
    return v == -100 ? -1 : v;
}

SC_TEST(hook_result_reported_again_keeps_its_time)
{
    sc_store_t *s = NULL;
    char err[256];
    const char *done = "{\"event_id\":\"E1\",\"vm\":\"vm_0\",\"phase\":\"prepare\","
                       "\"state\":\"done\",\"exit_status\":0}";
    const char *rdone = "{\"event_id\":\"E1\",\"vm\":\"vm_0\",\"phase\":\"recover\","
                        "\"state\":\"done\"}";
    const char *intr = "{\"event_id\":\"E1\",\"vm\":\"vm_3\",\"phase\":\"prepare\","
                       "\"state\":\"interrupted\",\"exit_status\":-1}";
    const char *done3 = "{\"event_id\":\"E1\",\"vm\":\"vm_3\",\"phase\":\"prepare\","
                        "\"state\":\"done\",\"exit_status\":0}";
    SC_REQUIRE(sc_store_open(":memory:", &s, err, sizeof(err)) == 0);
    s_rollout(s, 1); /* vm_0's prepare done at 103, vm_3's started at 104 */
    SC_CHECK_INT(s_finished(s, "vm_0", "prepare"), 103);
    SC_CHECK_INT(sc_store_decide(s, 1, SC_DLOG_HOOK_PROGRESS, done, "", 400, NULL), 0);
    SC_CHECK_INT(sc_store_decide(s, 1, SC_DLOG_HOOK_PROGRESS, rdone, "", 500, NULL), 0);
    SC_CHECK_INT(sc_store_decide(s, 2, SC_DLOG_HOOK_PROGRESS, done, "", 900, NULL), 0);
    SC_CHECK_INT(sc_store_decide(s, 2, SC_DLOG_HOOK_PROGRESS, rdone, "", 901, NULL), 0);
    SC_CHECK_INT(s_finished(s, "vm_0", "prepare"), 103);
    SC_CHECK_INT(s_finished(s, "vm_0", "recover"), 500);
    SC_CHECK_INT(sc_store_decide(s, 2, SC_DLOG_HOOK_PROGRESS, intr, "", 600, NULL), 0);
    SC_CHECK_INT(sc_store_decide(s, 2, SC_DLOG_HOOK_PROGRESS, done3, "", 700, NULL), 0);
    SC_CHECK_INT(s_finished(s, "vm_3", "prepare"), 700);
    SC_CHECK_INT(sc_store_decide(s, 2, SC_DLOG_HOOK_PROGRESS, done3, "", 950, NULL), 0);
    SC_CHECK_INT(s_finished(s, "vm_3", "prepare"), 700);
    /* the exit status follows the result; a result without one keeps the stored one */
    SC_CHECK_INT(s_detail_int(s, "vm_3", "prepare", "exit_status"), 0);
    SC_CHECK_INT(sc_store_decide(s, 2, SC_DLOG_HOOK_PROGRESS, intr, "", 960, NULL), 0);
    SC_CHECK_INT(s_detail_int(s, "vm_3", "prepare", "exit_status"), -1);
    SC_CHECK_INT(sc_store_decide(s, 2, SC_DLOG_HOOK_PROGRESS,
                                 "{\"event_id\":\"E1\",\"vm\":\"vm_3\",\"phase\":\"prepare\","
                                 "\"state\":\"failed\"}",
                                 "", 970, NULL),
                 0);
    SC_CHECK_INT(s_detail_int(s, "vm_3", "prepare", "exit_status"), -1);
    SC_CHECK_INT(s_finished(s, "vm_3", "prepare"), 970);
    sc_store_close(&s);
}

/* The store's view of a drain is its rows folded through the coordinator's drain table, so it
 * names the same states the coordinator does (once there were two vocabularies: "pending" and
 * "ordered" here, "none" and "prepare_ordered" there). */
static const char *s_drain(const char *pres, bool pord, bool pstart, const char *rres, bool rord,
                           bool rstart, bool listed)
{
    return sc_drain_state_name(
        sc_store_drain_state(pres, pord, pstart, rres, rord, rstart, listed));
}

SC_TEST(drain_state_names)
{
    SC_CHECK_STR(s_drain(NULL, false, false, NULL, false, false, true), "none");
    SC_CHECK_STR(s_drain(NULL, true, false, NULL, false, false, true), "prepare_ordered");
    SC_CHECK_STR(s_drain(NULL, true, true, NULL, false, false, true), "preparing");
    SC_CHECK_STR(s_drain("done", true, true, NULL, false, false, true), "prepared");
    SC_CHECK_STR(s_drain("failed", true, true, NULL, false, false, true), "prepare_failed");
    SC_CHECK_STR(s_drain("interrupted", true, true, NULL, false, false, true),
                 "prepare_interrupted");
    SC_CHECK_STR(s_drain("done", true, true, NULL, true, false, false), "recover_ordered");
    SC_CHECK_STR(s_drain("done", true, true, NULL, true, true, false), "recovering");
    SC_CHECK_STR(s_drain("done", true, true, "done", true, true, false), "recovered");
    /* recovered while still listed: the rollback of a failed drain */
    SC_CHECK_STR(s_drain("failed", true, true, "done", true, true, true), "rolled_back");
    SC_CHECK_STR(s_drain("done", true, true, "timed_out", true, true, false), "recover_failed");
    /* skipped succeeds as for the coordinator; refused was not run and is ordered again */
    SC_CHECK_STR(s_drain("skipped", true, true, NULL, false, false, true), "prepared");
    SC_CHECK_STR(s_drain("done", true, true, "skipped", true, true, false), "recovered");
    SC_CHECK_STR(s_drain("refused", true, false, NULL, false, false, true), "prepare_ordered");
    SC_CHECK_STR(s_drain("done", true, true, "refused", true, false, false), "recover_ordered");
}

/* A decision given as an object is logged as its text and applied from the object: the same
 * tables, the same log entry, and a wrong shape refused with nothing written. */
SC_TEST(decide_json_logs_text_and_applies)
{
    sc_store_t *s = NULL;
    char err[256];
    json_object *d = json_tokener_parse("{\"name\":\"vm_7\",\"endpoint\":\"tcp://h:1\","
                                        "\"fault_domain\":2,\"update_domain\":4}");
    json_object *snap = NULL, *hist = NULL, *bad = json_object_new_array();
    int64_t idx = 0, last = 0;

    SC_REQUIRE(d && sc_store_open(":memory:", &s, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_store_decide_json(s, 3, SC_DLOG_MEMBER, d, "why", 42, &idx), 0);
    SC_CHECK(idx > 0);
    SC_CHECK_INT(sc_store_snapshot(s, true, 1000, 0, &snap), 0);
    SC_CHECK_STR(s_gets(snap, "members.0.name"), "vm_7");
    SC_CHECK_STR(s_gets(snap, "members.0.endpoint"), "tcp://h:1");
    SC_CHECK_INT(json_object_get_int(s_get(snap, "members.0.fault_domain")), 2);
    SC_CHECK_INT(json_object_get_int(s_get(snap, "members.0.update_domain")), 4);
    SC_CHECK_INT(sc_store_history_json(s, 10, &hist, NULL, 0), 0);
    SC_CHECK_STR(s_gets(hist, "0.data.endpoint"), "tcp://h:1");
    SC_CHECK_STR(s_gets(hist, "0.reason"), "why");
    SC_CHECK_INT(sc_store_decide_json(s, 3, SC_DLOG_MEMBER, bad, "bad", 43, NULL), -EINVAL);
    SC_CHECK_INT(sc_store_decide_json(s, 3, SC_DLOG_MEMBER, NULL, "bad", 43, NULL), -EINVAL);
    SC_CHECK_INT(sc_dlog_last(sc_store_test_db(s), &last, NULL), 0);
    SC_CHECK_INT(last, idx); /* nothing half-written */
    json_object_put(d);
    json_object_put(bad);
    json_object_put(snap);
    json_object_put(hist);
    sc_store_close(&s);
}

/* The election's room: current_term and voted_for kept across a reopen (a leader's TERM entry
 * raises current_term too); snapshots with their index, the newest two kept. */
SC_TEST(hard_state_and_snapshots)
{
    sc_store_t *s = NULL;
    char err[256], who[64];
    int64_t t = -1, idx = -1;
    char *state = NULL;

    s_fresh_path("hard");
    SC_REQUIRE(sc_store_open(s_path, &s, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_store_hard_state(s, &t, who, sizeof(who)), 0);
    SC_CHECK_INT(t, 0);
    SC_CHECK_STR(who, "");
    SC_CHECK_INT(sc_store_last_snapshot(s, &idx, &state), 0);
    SC_CHECK_INT(idx, 0);
    SC_CHECK(state == NULL);
    SC_CHECK_INT(sc_store_decide(s, 4, SC_DLOG_TERM, "{\"term\":4}", "", 1, NULL), 0);
    SC_CHECK_INT(sc_store_hard_state(s, &t, who, sizeof(who)), 0);
    SC_CHECK_INT(t, 4);
    SC_CHECK_INT(sc_store_set_hard_state(s, 7, "vm_2"), 0);
    for (int i = 1; i <= 3; i++) {
        char st[32];
        snprintf(st, sizeof(st), "{\"applied\":%d}", i * 10);
        SC_CHECK_INT(sc_store_save_snapshot(s, i * 10, 4, 100, st), 0);
    }
    SC_CHECK_INT(sc_store_save_snapshot(s, 0, 4, 100, "{}"), -EINVAL);
    sc_store_close(&s);
    SC_REQUIRE(sc_store_open(s_path, &s, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_store_hard_state(s, &t, who, sizeof(who)), 0);
    SC_CHECK_INT(t, 7);
    SC_CHECK_STR(who, "vm_2");
    SC_CHECK_INT(sc_store_last_snapshot(s, &idx, &state), 0);
    SC_CHECK_INT(idx, 30);
    SC_CHECK_STR(state, "{\"applied\":30}");
    free(state);
    {
        int64_t n = 0;
        sc_db_query_int64(sc_store_test_db(s), &n, "SELECT count(*) FROM snapshots", NULL);
        SC_CHECK_INT(n, 2);
    }
    sc_store_close(&s);
}

/* A decision its observer refuses (sc_store_on_decide) is not written: log and tables as
 * before, so the store never holds what the coordinator's state does not. */
static int s_refuse(void *ud, const sc_dlog_entry_t *e, json_object *data)
{
    (void)data;
    *(int64_t *)ud = e->index;
    return -EINVAL;
}

SC_TEST(decision_refused_by_its_observer_is_not_written)
{
    sc_store_t *s = NULL;
    char err[256];
    int64_t seen = 0, last = -1;

    s_fresh_path("observer");
    SC_REQUIRE(sc_store_open(s_path, &s, err, sizeof(err)) == 0);
    sc_store_on_decide(s, s_refuse, &seen);
    SC_CHECK_INT(sc_store_decide(s, 1, SC_DLOG_MEMBER, "{\"name\":\"vm_1\"}", "", 1, NULL),
                 -EINVAL);
    SC_CHECK_INT(seen, 1);
    SC_CHECK_INT(sc_store_last_entry(s, &last, NULL), 0);
    SC_CHECK_INT(last, 0);
    {
        int64_t n = -1;
        sc_db_query_int64(sc_store_test_db(s), &n, "SELECT count(*) FROM members", NULL);
        SC_CHECK_INT(n, 0);
    }
    sc_store_on_decide(s, NULL, NULL);
    SC_CHECK_INT(sc_store_decide(s, 1, SC_DLOG_MEMBER, "{\"name\":\"vm_1\"}", "", 1, NULL), 0);
    sc_store_close(&s);
}

/* Compaction and a snapshot installed (issue 11): the log keeps what a restart replays, and
 * another store installs this one's tables and state as a follower far behind would, ending
 * with the same status tables, its log going on after the snapshot's index. */
SC_TEST(compaction_and_install)
{
    sc_store_t *s = NULL, *f = NULL;
    json_object *tables = NULL, *a = NULL, *b = NULL;
    int64_t last = 0, base = -1, bterm = -1, applied = 0, idx = 0;
    char err[256], *state = NULL;

    s_fresh_path("compact");
    SC_REQUIRE(sc_store_open(s_path, &s, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_store_decide(s, 2, SC_DLOG_TERM, "{\"term\":2}", "", 1, NULL), 0);
    s_rollout(s, 2);
    SC_CHECK_INT(sc_store_last_entry(s, &last, NULL), 0);
    SC_CHECK_INT(last, 7);
    /* no snapshot: nothing goes; then capped at the oldest snapshot kept */
    SC_CHECK_INT(sc_store_compact(s, 5), 0);
    SC_CHECK_INT(sc_store_log_base(s, &base, &bterm), 0);
    SC_CHECK_INT(base, 0);
    SC_CHECK_INT(sc_store_save_snapshot(s, 3, 2, 1, "{}"), 0);
    SC_CHECK_INT(sc_store_save_snapshot(s, 6, 2, 1, "{}"), 0);
    SC_CHECK_INT(sc_store_compact(s, 5), 0);
    SC_CHECK_INT(sc_store_log_base(s, &base, &bterm), 0);
    SC_CHECK_INT(base, 3);
    SC_CHECK_INT(bterm, 2);
    {
        sc_dlog_entry_t *v = NULL;
        size_t n = 0;
        SC_CHECK_INT(sc_store_entries(s, 1, 100, &v, &n), 0);
        SC_CHECK_INT(n, 4);
        SC_CHECK_INT(v[0].index, 4);
        sc_dlog_entries_free(v, n);
    }
    /* the trigger: an applied entry after the base never goes */
    SC_CHECK(sc_db_exec(sc_store_test_db(s), "DELETE FROM dlog WHERE idx = 4", NULL, 0) < 0);
    SC_CHECK_INT(
        sc_store_decide(s, 2, SC_DLOG_ALERT, "{\"alert\":\"x\",\"message\":\"m\"}", "", 2, &idx),
        0);
    SC_CHECK_INT(idx, 8);
    SC_CHECK_INT(sc_store_applied_index(s, &applied), 0);
    SC_CHECK_INT(applied, 8);

    /* a follower installs it */
    SC_CHECK_INT(sc_store_tables_json(s, &tables), 0);
    s_fresh_path("install");
    SC_REQUIRE(sc_store_open(s_path, &f, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_store_decide(f, 1, SC_DLOG_TERM, "{\"term\":1}", "its own", 1, NULL), 0);
    SC_CHECK_INT(sc_store_set_hard_state(f, 5, "vm_1"), 0);
    SC_CHECK_INT(sc_store_install(f, 8, 2, 3, tables, "{\"applied\":8}", NULL, err, sizeof(err)),
                 0);
    SC_CHECK_INT(sc_store_snapshot(s, true, 0, 0, &a), 0);
    SC_CHECK_INT(sc_store_snapshot(f, true, 0, 0, &b), 0);
    SC_CHECK_STR(json_object_to_json_string(b), json_object_to_json_string(a));
    SC_CHECK_INT(sc_store_last_entry(f, &last, &bterm), 0);
    SC_CHECK_INT(last, 8);
    SC_CHECK_INT(bterm, 2);
    SC_CHECK_INT(sc_store_applied_index(f, &applied), 0);
    SC_CHECK_INT(applied, 8);
    SC_CHECK_INT(sc_store_last_snapshot(f, &idx, &state), 0);
    SC_CHECK_INT(idx, 8);
    SC_CHECK_STR(state, "{\"applied\":8}");
    free(state);
    {
        int64_t t = 0;
        char who[64];
        SC_CHECK_INT(sc_store_hard_state(f, &t, who, sizeof(who)), 0); /* its own, kept */
        SC_CHECK_INT(t, 5);
        SC_CHECK_STR(who, "vm_1");
    }
    /* the next entry from the leader is 9; 8 is there (the base) */
    sc_dlog_entry_t e = {.index = 9,
                         .term = 2,
                         .kind = SC_DLOG_ALERT,
                         .data = (char *)"{\"alert\":\"y\",\"message\":\"m\"}",
                         .reason = (char *)""};
    SC_CHECK_INT(sc_store_log_entries(f, &e, 1, NULL), 0);
    e.index = 8;
    SC_CHECK_INT(sc_store_append_entry(f, &e), -EEXIST);
    /* a bad snapshot is refused whole: an unknown column, and the store is as it was */
    json_object *bad = json_tokener_parse(
        "{\"members\":{\"columns\":[\"name\",\"nope\"],\"rows\":[[\"vm_9\",1]]}}");
    SC_CHECK_INT(sc_store_install(f, 20, 2, 3, bad, "{}", NULL, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "nope") != NULL);
    SC_CHECK_INT(sc_store_last_entry(f, &last, NULL), 0);
    SC_CHECK_INT(last, 9);
    json_object_put(bad);
    json_object_put(a);
    json_object_put(b);
    json_object_put(tables);
    sc_store_close(&s);
    sc_store_close(&f);
}

/* One event of id through its life at wall time t: seen, drained, approved, answered, ended,
 * closed; or, open, only up to its approval's intent. */
static void s_event_life(sc_store_t *s, const char *id, int64_t t, bool close)
{
    char d[1024];
    int64_t intent = 0;

    snprintf(d, sizeof(d),
             "{\"event\":{\"EventId\":\"%s\",\"EventType\":\"Reboot\",\"ResourceType\":"
             "\"VirtualMachine\",\"Resources\":[\"vm_0\"],\"EventStatus\":\"Scheduled\","
             "\"NotBefore\":\"\",\"EventSource\":\"Platform\",\"DurationInSeconds\":-1,"
             "\"Description\":\"d\"},\"seen_by\":[\"vm_0\"],\"not_before\":0}",
             id);
    SC_CHECK_INT(sc_store_decide(s, 1, SC_DLOG_EVENT_SEEN, d, "", t, NULL), 0);
    snprintf(d, sizeof(d), "{\"event_id\":\"%s\",\"vms\":[\"vm_0\"]}", id);
    SC_CHECK_INT(sc_store_decide(s, 1, SC_DLOG_PREPARE_ORDERED, d, "", t + 1, NULL), 0);
    snprintf(d, sizeof(d),
             "{\"event_id\":\"%s\",\"vm\":\"vm_0\",\"phase\":\"prepare\",\"state\":\"done\","
             "\"exit_status\":0}",
             id);
    SC_CHECK_INT(sc_store_decide(s, 1, SC_DLOG_HOOK_PROGRESS, d, "", t + 2, NULL), 0);
    snprintf(d, sizeof(d), "{\"event_ids\":[\"%s\"],\"body\":\"{}\",\"via\":null,\"by\":\"vm_0\"}",
             id);
    SC_CHECK_INT(sc_store_decide(s, 1, SC_DLOG_APPROVAL_INTENT, d, "", t + 3, &intent), 0);
    if (!close)
        return; /* its approval unanswered */
    snprintf(d, sizeof(d), "{\"intent\":%lld,\"rc\":0,\"http_status\":200}", (long long)intent);
    SC_CHECK_INT(sc_store_decide(s, 1, SC_DLOG_APPROVAL_ANSWER, d, "", t + 4, NULL), 0);
    snprintf(d, sizeof(d), "{\"event_id\":\"%s\",\"how\":\"completed\"}", id);
    SC_CHECK_INT(sc_store_decide(s, 1, SC_DLOG_EVENT_ENDED, d, "", t + 5, NULL), 0);
    snprintf(d, sizeof(d), "{\"event_id\":\"%s\"}", id);
    SC_CHECK_INT(sc_store_decide(s, 1, SC_DLOG_EVENT_CLOSED, d, "", t + 6, NULL), 0);
}

SC_TEST(closed_events_pruned)
{
    sc_store_t *s[2] = {NULL, NULL};
    json_object *t[2] = {NULL, NULL};
    char err[256];

    /* two members fed the same entries keep the same rows: the newest 2 closed events', the
     * open one however old, the newest 2 approvals and the open event's older, unanswered one */
    for (int m = 0; m < 2; m++) {
        s_fresh_path(m ? "prune_b" : "prune_a");
        SC_REQUIRE(sc_store_open(s_path, &s[m], err, sizeof(err)) == 0);
        sc_store_set_keep_closed(s[m], 2);
        s_event_life(s[m], "open-1", 10, false);
        s_event_life(s[m], "e1", 100, true);
        s_event_life(s[m], "e2", 200, true);
        s_event_life(s[m], "e3", 300, true);
        SC_CHECK_INT(sc_store_test_int(s[m], "SELECT count(*) FROM events WHERE event_id = 'e1'"),
                     0);
        s_event_life(s[m], "e4", 400, true);
        SC_CHECK_INT(sc_store_tables_json(s[m], &t[m]), 0);
    }
    for (int m = 0; m < 2; m++) {
        SC_CHECK_INT(sc_store_test_int(s[m], "SELECT count(*) FROM events"), 3);
        SC_CHECK_INT(sc_store_test_int(s[m], "SELECT count(*) FROM events WHERE event_id IN "
                                             "('open-1', 'E3', 'e4') AND (closed_ms IS NULL) = "
                                             "(event_id = 'open-1')"),
                     3);
        SC_CHECK_INT(
            sc_store_test_int(s[m], "SELECT count(*) FROM drains WHERE event_id IN ('e1', 'e2')"),
            0);
        SC_CHECK_INT(sc_store_test_int(s[m], "SELECT count(*) FROM drains"), 3);
        SC_CHECK_INT(sc_store_test_int(s[m], "SELECT count(*) FROM approvals"), 3);
        SC_CHECK_INT(
            sc_store_test_int(s[m], "SELECT count(*) FROM approvals WHERE answered_ms IS NULL AND "
                                    "event_ids LIKE '%open-1%'"),
            1);
        SC_CHECK_INT(
            sc_store_test_int(s[m], "SELECT count(*) FROM approvals WHERE event_ids LIKE '%e4%'"),
            1);
        SC_CHECK_INT(sc_store_test_int(s[m], "SELECT closed_ms FROM events WHERE event_id = 'e4'"),
                     406);
    }
    SC_CHECK_STR(json_object_to_json_string(t[1]), json_object_to_json_string(t[0]));
    for (int m = 0; m < 2; m++) {
        json_object_put(t[m]);
        sc_store_close(&s[m]);
    }
}

int main(void)
{
    SC_RUN(migrates_from_empty);
    SC_RUN(decisions_survive_restart);
    SC_RUN(bad_decisions_rejected);
    SC_RUN(transactions_and_read_only);
    SC_RUN(hook_result_reported_again_keeps_its_time);
    SC_RUN(drain_state_names);
    SC_RUN(decide_json_logs_text_and_applies);
    SC_RUN(pause_outlives_restart);
    SC_RUN(agent_boots_outlive_restart);
    SC_RUN(hard_state_and_snapshots);
    SC_RUN(decision_refused_by_its_observer_is_not_written);
    SC_RUN(compaction_and_install);
    SC_RUN(closed_events_pruned);
    return sc_test_done();
}
