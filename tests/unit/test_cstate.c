/* sc_cstate: the coordinator's replicated state, changed only by applying log entries. The two
 * transition tables against their diagrams; apply of every entry kind; bad entries refused with
 * the state unchanged; snapshots that load back to the same state; and the store's projection
 * of drains, which folds the same table, agreeing with the state over random histories. */
#include "sc_cstate.h"
#include "sc_error.h"
#include "sc_store.h"
#include "sc_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const s_names[] = {"vm_0", "vm_1", "vm_2"};

static sc_cstate_t *s_new(void)
{
    sc_cstate_t *cs = NULL;
    if (sc_cstate_new(s_names, 3, &cs) < 0)
        SC_FAILF("sc_cstate_new");
    return cs;
}

/* Applies the next entry (index applied + 1, term 1, wall ms) of kind with data; its rc. */
static int s_apply(sc_cstate_t *cs, sc_dlog_kind_t kind, int64_t wall, const char *data)
{
    sc_dlog_entry_t e = {.index = sc_cstate_applied(cs) + 1,
                         .term = 1,
                         .kind = kind,
                         .data = (char *)(uintptr_t)data,
                         .reason = "",
                         .wall_ms = wall};
    char err[256];
    int rc = sc_cstate_apply(cs, &e, NULL, err, sizeof(err));
    if (rc < 0)
        printf("  (apply %s: %s)\n", sc_dlog_kind_name(kind), err);
    return rc;
}

static char *s_json(const sc_cstate_t *cs)
{
    json_object *o = NULL;
    char *t;
    if (sc_cstate_to_json(cs, &o) < 0)
        return strdup("");
    t = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    return t;
}

static const char *s_drain(const sc_cstate_t *cs, const char *id, size_t vm)
{
    const sc_cs_event_t *e = sc_cstate_event_find(cs, id);
    return e ? sc_drain_state_name(e->drain[vm]) : "(no event)";
}

static void s_seen(sc_cstate_t *cs, const char *id, const char *status, const char *resources)
{
    char d[1024];
    snprintf(d, sizeof(d),
             "{\"event\":{\"EventId\":\"%s\",\"EventType\":\"Reboot\",\"ResourceType\":"
             "\"VirtualMachine\",\"Resources\":[%s],\"EventStatus\":\"%s\",\"NotBefore\":\"\","
             "\"Description\":\"\",\"EventSource\":\"Platform\",\"DurationInSeconds\":-1},"
             "\"seen_by\":[\"vm_0\",\"vm_1\"],\"observed_ms\":5}",
             id, resources, status);
    SC_CHECK_INT(s_apply(cs, SC_DLOG_EVENT_SEEN, 100, d), 0);
}

static void s_progress(sc_cstate_t *cs, const char *id, const char *vm, const char *phase,
                       const char *state, int attempt)
{
    char d[512];
    snprintf(d, sizeof(d),
             "{\"event_id\":\"%s\",\"vm\":\"%s\",\"phase\":\"%s\",\"state\":\"%s\","
             "\"exit_status\":0,\"attempt\":%d}",
             id, vm, phase, state, attempt);
    SC_CHECK_INT(s_apply(cs, SC_DLOG_HOOK_PROGRESS, 300, d), 0);
}

/* Every cell of the drain table as its diagram in sc_cstate.c draws it. */
SC_TEST(drain_table_is_its_diagram)
{
    for (int s = 0; s < SC_DRAIN_MAX; s++) {
        bool recover_row = s >= SC_DRAIN_RECOVER_ORDERED;
        for (int in = 0; in < SC_DIN_MAX; in++) {
            sc_drain_state_t want = (sc_drain_state_t)s;
            switch ((sc_drain_input_t)in) {
            case SC_DIN_PREPARE_ORDERED: want = SC_DRAIN_PREPARE_ORDERED; break;
            case SC_DIN_PREPARE_STARTED: want = recover_row ? want : SC_DRAIN_PREPARING; break;
            case SC_DIN_PREPARE_DONE: want = recover_row ? want : SC_DRAIN_PREPARED; break;
            case SC_DIN_PREPARE_FAILED: want = recover_row ? want : SC_DRAIN_PREPARE_FAILED; break;
            case SC_DIN_PREPARE_INTERRUPTED:
                want = recover_row ? want : SC_DRAIN_PREPARE_INTERRUPTED;
                break;
            case SC_DIN_RECOVER_ORDERED: want = SC_DRAIN_RECOVER_ORDERED; break;
            case SC_DIN_RECOVER_STARTED: want = SC_DRAIN_RECOVERING; break;
            case SC_DIN_RECOVER_DONE_LISTED: want = SC_DRAIN_ROLLED_BACK; break;
            case SC_DIN_RECOVER_DONE_OVER: want = SC_DRAIN_RECOVERED; break;
            case SC_DIN_RECOVER_FAILED: want = SC_DRAIN_RECOVER_FAILED; break;
            default: break; /* refused: unchanged */
            }
            if (sc_cstate_drain_next((sc_drain_state_t)s, (sc_drain_input_t)in) != want)
                SC_FAILF("%s + %s -> %s, expected %s", sc_drain_state_name(s),
                         sc_drain_input_name(in), sc_drain_state_name(sc_cstate_drain_next(s, in)),
                         sc_drain_state_name(want));
        }
    }
    /* out of range: unchanged */
    SC_CHECK_INT(sc_cstate_drain_next(SC_DRAIN_PREPARED, SC_DIN_MAX), SC_DRAIN_PREPARED);
    /* reports as inputs */
    SC_CHECK_INT(sc_cstate_drain_input(SC_MSG_PHASE_PREPARE, SC_MSG_HOOK_SKIPPED, true),
                 SC_DIN_PREPARE_DONE);
    SC_CHECK_INT(sc_cstate_drain_input(SC_MSG_PHASE_PREPARE, SC_MSG_HOOK_TIMED_OUT, true),
                 SC_DIN_PREPARE_FAILED);
    SC_CHECK_INT(sc_cstate_drain_input(SC_MSG_PHASE_RECOVER, SC_MSG_HOOK_DONE, true),
                 SC_DIN_RECOVER_DONE_LISTED);
    SC_CHECK_INT(sc_cstate_drain_input(SC_MSG_PHASE_RECOVER, SC_MSG_HOOK_DONE, false),
                 SC_DIN_RECOVER_DONE_OVER);
    /* a recover interrupted is ordered again (the agent runs it again), not final: its VM
     * out of service must keep its fault domain busy (nemesis seed 65) */
    SC_CHECK_INT(sc_cstate_drain_input(SC_MSG_PHASE_RECOVER, SC_MSG_HOOK_INTERRUPTED, false),
                 SC_DIN_RECOVER_ORDERED);
    SC_CHECK_INT(sc_cstate_drain_next(
                     SC_DRAIN_RECOVERING,
                     sc_cstate_drain_input(SC_MSG_PHASE_RECOVER, SC_MSG_HOOK_INTERRUPTED, true)),
                 SC_DRAIN_RECOVER_ORDERED);
    SC_CHECK_INT(sc_cstate_drain_input(SC_MSG_PHASE_RECOVER, SC_MSG_HOOK_REFUSED, false),
                 SC_DIN_REFUSED);
    SC_CHECK_INT(sc_cstate_drain_input(SC_MSG_PHASE_MAX, SC_MSG_HOOK_DONE, false), SC_DIN_MAX);
}

SC_TEST(approval_table_is_its_diagram)
{
    static const struct {
        sc_approval_state_t from;
        sc_approval_input_t in;
        sc_approval_state_t to;
    } rows[] = {
        {SC_APPROVAL_NONE, SC_AIN_INTENT, SC_APPROVAL_INTENT},
        {SC_APPROVAL_NONE, SC_AIN_ANSWER_OK, SC_APPROVAL_NONE},
        {SC_APPROVAL_NONE, SC_AIN_ANSWER_FAILED, SC_APPROVAL_NONE},
        {SC_APPROVAL_NONE, SC_AIN_STARTED, SC_APPROVAL_NOT_NEEDED},
        {SC_APPROVAL_INTENT, SC_AIN_INTENT, SC_APPROVAL_INTENT},
        {SC_APPROVAL_INTENT, SC_AIN_ANSWER_OK, SC_APPROVAL_APPROVED},
        {SC_APPROVAL_INTENT, SC_AIN_ANSWER_FAILED, SC_APPROVAL_FAILED},
        {SC_APPROVAL_INTENT, SC_AIN_STARTED, SC_APPROVAL_INTENT},
        {SC_APPROVAL_APPROVED, SC_AIN_INTENT, SC_APPROVAL_APPROVED},
        {SC_APPROVAL_APPROVED, SC_AIN_ANSWER_FAILED, SC_APPROVAL_APPROVED},
        {SC_APPROVAL_APPROVED, SC_AIN_STARTED, SC_APPROVAL_APPROVED},
        {SC_APPROVAL_FAILED, SC_AIN_INTENT, SC_APPROVAL_INTENT},
        {SC_APPROVAL_FAILED, SC_AIN_ANSWER_OK, SC_APPROVAL_FAILED},
        {SC_APPROVAL_FAILED, SC_AIN_STARTED, SC_APPROVAL_NOT_NEEDED},
        {SC_APPROVAL_NOT_NEEDED, SC_AIN_INTENT, SC_APPROVAL_NOT_NEEDED},
        {SC_APPROVAL_NOT_NEEDED, SC_AIN_ANSWER_OK, SC_APPROVAL_NOT_NEEDED},
        {SC_APPROVAL_INTENT, SC_AIN_ANSWER_UNKNOWN, SC_APPROVAL_UNKNOWN},
        {SC_APPROVAL_UNKNOWN, SC_AIN_INTENT, SC_APPROVAL_INTENT},
        {SC_APPROVAL_UNKNOWN, SC_AIN_ANSWER_FAILED, SC_APPROVAL_UNKNOWN},
        {SC_APPROVAL_UNKNOWN, SC_AIN_STARTED, SC_APPROVAL_NOT_NEEDED},
        {SC_APPROVAL_NONE, SC_AIN_ANSWER_UNKNOWN, SC_APPROVAL_NONE},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        if (sc_cstate_approval_next(rows[i].from, rows[i].in) != rows[i].to)
            SC_FAILF("%s + %s -> %s, expected %s", sc_approval_state_name(rows[i].from),
                     sc_approval_input_name(rows[i].in),
                     sc_approval_state_name(sc_cstate_approval_next(rows[i].from, rows[i].in)),
                     sc_approval_state_name(rows[i].to));
}

/* Issue 20 (the model's counterexample): a POST that got no answer may still land; an error
 * answering a later POST of the same event says nothing of it. The approval stays unknown
 * (rollback blocked) until an OK answer; its snapshot keeps that. */
SC_TEST(unknown_survives_a_later_failed_post)
{
    sc_cstate_t *cs = s_new(), *back = NULL;
    const sc_cs_event_t *e;
    char d[256], *a, *b;
    json_object *o = NULL;

    s_seen(cs, "E1", "Scheduled", "\"vm_1\"");
    e = sc_cstate_event_find(cs, "E1");
    SC_REQUIRE(e);
    for (int k = 0; k < 3; k++) {
        static const char *const answers[3] = {
            "\"rc\":-110,\"http_status\":0,\"unknown\":true", /* no answer */
            "\"rc\":-5000,\"http_status\":500",               /* a later POST: an error */
            "\"rc\":0,\"http_status\":200"};
        static const char *const after[3] = {"unknown", "unknown", "approved"};
        SC_CHECK_INT(s_apply(cs, SC_DLOG_APPROVAL_INTENT, 100 + k,
                             "{\"event_ids\":[\"E1\"],\"body\":\"{}\",\"via\":null}"),
                     0);
        snprintf(d, sizeof(d), "{\"intent\":%lld,%s}", (long long)e->intent, answers[k]);
        SC_CHECK_INT(s_apply(cs, SC_DLOG_APPROVAL_ANSWER, 200 + k, d), 0);
        SC_CHECK_STR(sc_approval_state_name(e->approval), after[k]);
        if (k == 1) { /* a snapshot of it says the same */
            SC_REQUIRE(sc_cstate_to_json(cs, &o) == 0);
            SC_REQUIRE(sc_cstate_new(s_names, 3, &back) == 0);
            SC_CHECK_INT(sc_cstate_from_json(back, o, d, sizeof(d)), 0);
            a = s_json(cs);
            b = s_json(back);
            SC_CHECK_STR(a, b);
            free(a);
            free(b);
            json_object_put(o);
            sc_cstate_destroy(&back);
        }
    }
    /* a definite failure alone (no earlier unknown) is failed */
    s_seen(cs, "E2", "Scheduled", "\"vm_2\"");
    e = sc_cstate_event_find(cs, "E2");
    SC_REQUIRE(e);
    SC_CHECK_INT(s_apply(cs, SC_DLOG_APPROVAL_INTENT, 300,
                         "{\"event_ids\":[\"E2\"],\"body\":\"{}\",\"via\":null}"),
                 0);
    snprintf(d, sizeof(d), "{\"intent\":%lld,\"rc\":-5000,\"http_status\":500}",
             (long long)e->intent);
    SC_CHECK_INT(s_apply(cs, SC_DLOG_APPROVAL_ANSWER, 301, d), 0);
    SC_CHECK_STR(sc_approval_state_name(e->approval), "failed");
    sc_cstate_destroy(&cs);
}

/* A whole event through every entry kind: the state after each. */
SC_TEST(apply_follows_an_event_through)
{
    sc_cstate_t *cs = s_new();
    const sc_cs_event_t *e;

    SC_REQUIRE(cs);
    SC_CHECK_INT(s_apply(cs, SC_DLOG_TERM, 1, "{\"term\":1}"), 0);
    SC_CHECK_INT(s_apply(cs, SC_DLOG_MEMBER, 2,
                         "{\"name\":\"vm_1\",\"fault_domain\":1,\"update_domain\":4}"),
                 0);
    SC_CHECK_INT(sc_cstate_member(cs, 1)->fault_domain, 1);
    SC_CHECK_INT(sc_cstate_member(cs, 1)->update_domain, 4);
    SC_CHECK_INT(sc_cstate_member(cs, 2)->fault_domain, -1);
    s_seen(cs, "E1", "Scheduled", "\"vm_1\",\"vm_2\"");
    SC_REQUIRE((e = sc_cstate_event_find(cs, "e1"))); /* EventIds compare case-blind */
    SC_CHECK_INT(e->first_seen_ms, 100);
    SC_CHECK_INT(e->n_seen_by, 2);
    SC_CHECK_INT(e->observed_ms, 5);
    SC_CHECK_INT(s_apply(cs, SC_DLOG_PREPARE_ORDERED, 200,
                         "{\"event_id\":\"E1\",\"vms\":[\"vm_1\",\"vm_2\"],\"attempt\":1}"),
                 0);
    SC_CHECK_STR(s_drain(cs, "E1", 1), "prepare_ordered");
    s_progress(cs, "E1", "vm_1", "prepare", "started", 1);
    s_progress(cs, "E1", "vm_1", "prepare", "done", 1);
    s_progress(cs, "E1", "vm_2", "prepare", "done", 1);
    SC_CHECK_STR(s_drain(cs, "E1", 1), "prepared");
    SC_CHECK_STR(s_drain(cs, "E1", 0), "none");
    SC_CHECK_INT(s_apply(cs, SC_DLOG_APPROVAL_INTENT, 400,
                         "{\"event_ids\":[\"E1\"],\"body\":\"{}\",\"via\":\"vm_2\"}"),
                 0);
    e = sc_cstate_event_find(cs, "E1");
    SC_CHECK_STR(sc_approval_state_name(e->approval), "intent");
    SC_CHECK_INT(e->intent, sc_cstate_applied(cs));
    SC_CHECK_INT(e->via, 2);
    SC_CHECK_INT(s_apply(cs, SC_DLOG_APPROVAL_ANSWER, 450, "{\"intent\":999,\"rc\":0}"), 0);
    SC_CHECK_STR(sc_approval_state_name(e->approval), "intent"); /* not its intent */
    {
        char d[128];
        snprintf(d, sizeof(d), "{\"intent\":%lld,\"rc\":0,\"http_status\":200}",
                 (long long)e->intent);
        SC_CHECK_INT(s_apply(cs, SC_DLOG_APPROVAL_ANSWER, 500, d), 0);
    }
    SC_CHECK_STR(sc_approval_state_name(e->approval), "approved");
    SC_CHECK_INT(e->approved_ms, 500);
    SC_CHECK_INT(e->intent, 0);
    SC_CHECK_INT(
        s_apply(cs, SC_DLOG_EVENT_STARTED, 600, "{\"event_id\":\"E1\",\"how\":\"approved\"}"), 0);
    SC_CHECK_INT(e->start_kind, SC_START_APPROVED);
    SC_CHECK_STR(sc_approval_state_name(e->approval), "approved");
    SC_CHECK_INT(
        s_apply(cs, SC_DLOG_EVENT_ENDED, 700, "{\"event_id\":\"E1\",\"how\":\"completed\"}"), 0);
    SC_CHECK_INT(e->phase, SC_REG_ENDED);
    SC_CHECK_INT(
        s_apply(cs, SC_DLOG_RECOVER_ORDERED, 800, "{\"event_id\":\"E1\",\"vms\":[\"vm_1\"]}"), 0);
    /* a late prepare report never moves a drain back */
    s_progress(cs, "E1", "vm_1", "prepare", "failed", 1);
    SC_CHECK_STR(s_drain(cs, "E1", 1), "recover_ordered");
    s_progress(cs, "E1", "vm_1", "recover", "done", 1);
    SC_CHECK_STR(s_drain(cs, "E1", 1), "recovered"); /* over: recovered, not rolled back */
    SC_CHECK_INT(s_apply(cs, SC_DLOG_EVENT_CLOSED, 900, "{\"event_id\":\"E1\"}"), 0);
    SC_CHECK(!sc_cstate_event_find(cs, "E1"));
    SC_CHECK_INT(sc_cstate_n_closed(cs), 1);
    SC_CHECK_STR(sc_cstate_closed_at(cs, 0)->id, "E1");
    SC_CHECK_INT(sc_cstate_closed_at(cs, 0)->ended_ms, 700);
    SC_CHECK_INT(sc_cstate_closed_at(cs, 0)->phase, SC_REG_ENDED);
    SC_CHECK_INT(sc_cstate_term(cs), 1);
    sc_cstate_destroy(&cs);
    SC_CHECK(cs == NULL);
}

/* A failed prepare rolled back while the event is listed, then a new attempt: the report of the
 * old attempt does not move the new one. A start without approval: never POSTed again. */
SC_TEST(rollback_attempts_and_forced_start)
{
    sc_cstate_t *cs = s_new();
    const sc_cs_event_t *e;

    SC_REQUIRE(cs);
    s_seen(cs, "E2", "Scheduled", "\"vm_0\"");
    SC_CHECK_INT(
        s_apply(cs, SC_DLOG_PREPARE_ORDERED, 1, "{\"event_id\":\"E2\",\"vms\":[\"vm_0\"]}"), 0);
    s_progress(cs, "E2", "vm_0", "prepare", "failed", 1);
    SC_CHECK_STR(s_drain(cs, "E2", 0), "prepare_failed");
    SC_CHECK_INT(s_apply(cs, SC_DLOG_RECOVER_ORDERED, 2,
                         "{\"event_id\":\"E2\",\"vms\":[\"vm_0\"],\"attempt\":1}"),
                 0);
    s_progress(cs, "E2", "vm_0", "recover", "done", 1);
    SC_CHECK_STR(s_drain(cs, "E2", 0), "rolled_back");
    SC_CHECK_INT(s_apply(cs, SC_DLOG_PREPARE_ORDERED, 3,
                         "{\"event_id\":\"E2\",\"vms\":[\"vm_0\"],\"attempt\":2}"),
                 0);
    e = sc_cstate_event_find(cs, "E2");
    SC_CHECK_INT(e->attempt[0], 2);
    s_progress(cs, "E2", "vm_0", "prepare", "failed", 1); /* the old attempt's, late */
    SC_CHECK_STR(s_drain(cs, "E2", 0), "prepare_ordered");
    s_progress(cs, "E2", "vm_0", "prepare", "done", 2);
    SC_CHECK_STR(s_drain(cs, "E2", 0), "prepared");
    /* approval failed, then Azure started it itself */
    SC_CHECK_INT(
        s_apply(cs, SC_DLOG_APPROVAL_INTENT, 4, "{\"event_ids\":[\"E2\"],\"body\":\"{}\"}"), 0);
    {
        char d[128];
        snprintf(d, sizeof(d), "{\"intent\":%lld,\"rc\":-110}", (long long)e->intent);
        SC_CHECK_INT(s_apply(cs, SC_DLOG_APPROVAL_ANSWER, 5, d), 0);
    }
    SC_CHECK_STR(sc_approval_state_name(e->approval), "failed");
    SC_CHECK_INT(
        s_apply(cs, SC_DLOG_EVENT_STARTED, 6, "{\"event_id\":\"E2\",\"how\":\"not_before\"}"), 0);
    SC_CHECK_STR(sc_approval_state_name(e->approval), "not_needed");
    SC_CHECK_INT(e->start_kind, SC_START_FORCED);
    sc_cstate_destroy(&cs);
}

/* Bad entries: refused with a reason, nothing changed (not even the applied index). Entries
 * about what the state does not hold change nothing and are not errors. */
SC_TEST(bad_entries_refused_state_unchanged)
{
    static const struct {
        sc_dlog_kind_t kind;
        const char *data;
        const char *why;
    } bad[] = {
        {SC_DLOG_TERM, "{}", "term"},
        {SC_DLOG_MEMBER, "{\"fault_domain\":1}", "name"},
        {SC_DLOG_EVENT_SEEN, "{\"seen_by\":[]}", "event"},
        {SC_DLOG_EVENT_SEEN, "{\"event\":{\"EventId\":\"x\"}}", "event_seen"},
        {SC_DLOG_EVENT_STARTED, "{\"how\":\"approved\"}", "event_id"},
        {SC_DLOG_PREPARE_ORDERED, "{\"event_id\":\"E1\"}", "vms"},
        {SC_DLOG_PREPARE_ORDERED, "{\"event_id\":\"E1\",\"vms\":[\"vm_0\"],\"attempt\":0}",
         "attempt"},
        {SC_DLOG_HOOK_PROGRESS,
         "{\"event_id\":\"E1\",\"vm\":\"vm_0\",\"phase\":\"boil\","
         "\"state\":\"done\"}",
         "boil"},
        {SC_DLOG_APPROVAL_INTENT, "{\"event_ids\":[\"E1\"]}", "body"},
        {SC_DLOG_APPROVAL_ANSWER, "{\"rc\":0}", "intent"},
        {SC_DLOG_ALERT, "{\"alert\":\"deadline\"}", "message"},
        {SC_DLOG_EVENT_CLOSED, "{}", "event_id"},
        {SC_DLOG_REHEARSAL, "{\"state\":\"started\"}", "rehearsal"},
        {SC_DLOG_REHEARSAL, "{\"rehearsal\":1,\"state\":\"dancing\"}", "dancing"},
        {SC_DLOG_REHEARSAL, "{\"rehearsal\":1,\"state\":\"started\",\"event_type\":\"Nap\"}",
         "event_type"},
        {SC_DLOG_REHEARSAL,
         "{\"rehearsal\":1,\"state\":\"started\",\"event_type\":\"Reboot\",\"groups\":[]}",
         "groups"},
        {SC_DLOG_REHEARSAL,
         "{\"rehearsal\":1,\"state\":\"started\",\"event_type\":\"Reboot\",\"groups\":"
         "[{\"event_id\":\"no spaces\",\"vms\":[]}]}",
         "event_id"},
        {SC_DLOG_MEMBER, "[1,2]", "not an object"},
        {SC_DLOG_MEMBER, "{\"name\":", "not JSON"},
    };
    sc_cstate_t *cs = s_new();
    char *before, *after, err[256];

    SC_REQUIRE(cs);
    s_seen(cs, "E1", "Scheduled", "\"vm_0\"");
    before = s_json(cs);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sc_dlog_entry_t e = {.index = sc_cstate_applied(cs) + 1,
                             .term = 1,
                             .kind = bad[i].kind,
                             .data = (char *)(uintptr_t)bad[i].data,
                             .wall_ms = 1};
        int rc = sc_cstate_apply(cs, &e, NULL, err, sizeof(err));
        if (rc != -EINVAL || !strstr(err, bad[i].why))
            SC_FAILF("%s %s: rc %s, \"%s\" (expected -EINVAL naming %s)",
                     sc_dlog_kind_name(bad[i].kind), bad[i].data, sc_errname(rc), err, bad[i].why);
    }
    /* out of order: a gap, and an index applied already */
    {
        sc_dlog_entry_t e = {.index = sc_cstate_applied(cs) + 2,
                             .term = 1,
                             .kind = SC_DLOG_TERM,
                             .data = "{\"term\":5}"};
        SC_CHECK_INT(sc_cstate_apply(cs, &e, NULL, err, sizeof(err)), -EINVAL);
        SC_CHECK(strstr(err, "out of order") != NULL);
        e.index = sc_cstate_applied(cs);
        SC_CHECK_INT(sc_cstate_apply(cs, &e, NULL, err, sizeof(err)), -EINVAL);
    }
    after = s_json(cs);
    SC_CHECK_STR(after, before);
    free(after);
    /* unknown member / event: nothing changes but the index */
    SC_CHECK_INT(s_apply(cs, SC_DLOG_MEMBER, 2, "{\"name\":\"vm_9\",\"fault_domain\":1}"), 0);
    SC_CHECK_INT(s_apply(cs, SC_DLOG_HOOK_PROGRESS, 2,
                         "{\"event_id\":\"E9\",\"vm\":\"vm_0\",\"phase\":\"prepare\","
                         "\"state\":\"done\"}"),
                 0);
    SC_CHECK_INT(
        s_apply(cs, SC_DLOG_PREPARE_ORDERED, 2, "{\"event_id\":\"E1\",\"vms\":[\"vm_9\"]}"), 0);
    SC_CHECK_STR(s_drain(cs, "E1", 0), "none");
    free(before);
    sc_cstate_destroy(&cs);
}

/* Alerts are remembered by key (the de-duplication survives a restart and a failover); the
 * operator's pause too. Logs without keys: the key they were de-duplicated by. */
SC_TEST(alerts_and_pause)
{
    sc_cstate_t *cs = s_new();
    char key[SC_CSTATE_ALERT_KEY_MAX + 1];

    SC_REQUIRE(cs);
    SC_CHECK_INT(s_apply(cs, SC_DLOG_ALERT, 1,
                         "{\"alert\":\"prepare_failed\",\"event_id\":\"E1\",\"member\":\"vm_1\","
                         "\"message\":\"m\",\"attempt\":2,\"key\":\"prepare_failed|E1|vm_1|2\"}"),
                 0);
    SC_CHECK(sc_cstate_alert_raised(cs, "prepare_failed|E1|vm_1|2"));
    SC_CHECK(!sc_cstate_alert_raised(cs, "prepare_failed|E1|vm_1|3"));
    SC_CHECK_INT(s_apply(cs, SC_DLOG_ALERT, 2,
                         "{\"alert\":\"member_down\",\"event_id\":\"E1\",\"member\":\"vm_2\","
                         "\"message\":\"m\"}"),
                 0);
    sc_cstate_alert_key(key, sizeof(key), "member_down", "E1", "vm_2", 0);
    SC_CHECK(sc_cstate_alert_raised(cs, key));
    SC_CHECK(!sc_cstate_paused(cs));
    SC_CHECK_INT(s_apply(cs, SC_DLOG_ALERT, 3, "{\"alert\":\"paused\",\"message\":\"p\"}"), 0);
    SC_CHECK(sc_cstate_paused(cs));
    SC_CHECK_INT(s_apply(cs, SC_DLOG_ALERT, 4, "{\"alert\":\"resumed\",\"message\":\"r\"}"), 0);
    SC_CHECK(!sc_cstate_paused(cs));
    sc_cstate_destroy(&cs);
}

/* A snapshot loads back to the same state, and both go on alike; a snapshot loads only into an
 * empty state, and a broken one leaves it empty. */
SC_TEST(snapshot_round_trip)
{
    sc_cstate_t *a = s_new(), *b = s_new(), *c = s_new();
    json_object *snap = NULL;
    char *ja, *jb, err[256];

    SC_REQUIRE(a && b && c);
    SC_CHECK_INT(s_apply(a, SC_DLOG_TERM, 1, "{\"term\":1}"), 0);
    SC_CHECK_INT(s_apply(a, SC_DLOG_MEMBER, 1,
                         "{\"name\":\"vm_2\",\"fault_domain\":2,\"state\":\"gone\","
                         "\"boot_id\":\"b-1\"}"),
                 0);
    s_seen(a, "E1", "Scheduled", "\"vm_0\",\"vm_1\"");
    s_seen(a, "E2", "Scheduled", "\"vm_1\"");
    SC_CHECK_INT(s_apply(a, SC_DLOG_PREPARE_ORDERED, 2,
                         "{\"event_id\":\"E1\",\"vms\":[\"vm_0\"],\"attempt\":3}"),
                 0);
    SC_CHECK_INT(s_apply(a, SC_DLOG_APPROVAL_INTENT, 4,
                         "{\"event_ids\":[\"E2\"],\"body\":\"{}\",\"via\":\"vm_1\"}"),
                 0);
    SC_CHECK_INT(s_apply(a, SC_DLOG_EVENT_ENDED, 5, "{\"event_id\":\"E2\",\"how\":\"cancelled\"}"),
                 0);
    SC_CHECK_INT(s_apply(a, SC_DLOG_EVENT_CLOSED, 6, "{\"event_id\":\"E2\"}"), 0);
    SC_CHECK_INT(s_apply(a, SC_DLOG_ALERT, 7, "{\"alert\":\"paused\",\"message\":\"p\"}"), 0);
    SC_CHECK_INT(
        s_apply(a, SC_DLOG_ALERT, 7, "{\"alert\":\"deadline\",\"message\":\"d\",\"key\":\"k1\"}"),
        0);
    SC_REQUIRE(sc_cstate_to_json(a, &snap) == 0);
    SC_CHECK_INT(sc_cstate_from_json(b, snap, err, sizeof(err)), 0);
    ja = s_json(a);
    jb = s_json(b);
    SC_CHECK_STR(jb, ja);
    free(ja);
    free(jb);
    SC_CHECK_INT(sc_cstate_member(b, 2)->gone, 1);
    SC_CHECK_STR(sc_cstate_member(b, 2)->gone_boot_id, "b-1");
    /* both go on alike */
    s_progress(a, "E1", "vm_0", "prepare", "done", 3);
    s_progress(b, "E1", "vm_0", "prepare", "done", 3);
    ja = s_json(a);
    jb = s_json(b);
    SC_CHECK_STR(jb, ja);
    free(ja);
    free(jb);
    /* only into an empty state */
    SC_CHECK_INT(sc_cstate_from_json(b, snap, err, sizeof(err)), -EINVAL);
    json_object_put(snap);
    /* a broken snapshot: refused, c stays empty */
    snap = json_tokener_parse("{\"members\":[],\"events\":[{\"event\":{}}],\"closed\":[],"
                              "\"alerts\":[]}");
    SC_CHECK_INT(sc_cstate_from_json(c, snap, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "event") != NULL);
    SC_CHECK_INT(sc_cstate_applied(c), 0);
    SC_CHECK_INT(sc_cstate_n_events(c), 0);
    json_object_put(snap);
    sc_cstate_destroy(&a);
    sc_cstate_destroy(&b);
    sc_cstate_destroy(&c);
}

/* The store applies each entry to its tables and tells the state (sc_store_on_decide): over
 * random histories of one event's drains the store's projection ("drains" of its snapshot)
 * names what the state holds — one table for both. */
static int s_on_decide(void *ud, const sc_dlog_entry_t *e, json_object *data)
{
    char err[256];
    int rc = sc_cstate_apply(ud, e, data, err, sizeof(err));
    if (rc < 0)
        printf("  (apply: %s)\n", err);
    return rc;
}

SC_TEST(store_projection_agrees_with_the_state)
{
    static const char *const finals[] = {"done", "failed", "timed_out", "skipped", "interrupted"};
    unsigned seed = 12345;

    for (int round = 0; round < 80; round++) {
        sc_store_t *st = NULL;
        sc_cstate_t *cs = s_new();
        json_object *snap = NULL, *drains = NULL, *evs;
        char err[256], d[512], id[16];
        bool ended = false;
        /* per VM: attempt of its last order, its phase, whether that run started / ended */
        int attempt[2] = {0, 0};
        bool recover[2] = {false, false}, started[2] = {false, false}, final[2] = {false, false};
        int64_t wall = 1;

        SC_REQUIRE(cs && sc_store_open(":memory:", &st, err, sizeof(err)) == 0);
        sc_store_on_decide(st, s_on_decide, cs);
        snprintf(id, sizeof(id), "E%d", round);
        snprintf(d, sizeof(d),
                 "{\"event\":{\"EventId\":\"%s\",\"EventType\":\"Reboot\",\"ResourceType\":"
                 "\"VirtualMachine\",\"Resources\":[\"vm_0\",\"vm_1\"],\"EventStatus\":"
                 "\"Scheduled\",\"NotBefore\":\"\",\"EventSource\":\"Platform\"},\"seen_by\":[]}",
                 id);
        SC_CHECK_INT(sc_store_decide(st, 1, SC_DLOG_EVENT_SEEN, d, "", wall++, NULL), 0);
        for (int step = 0; step < 10; step++) {
            int r = rand_r(&seed) % 10, v = rand_r(&seed) % 2;
            if (r == 0 && !ended) {
                ended = true;
                snprintf(d, sizeof(d), "{\"event_id\":\"%s\",\"how\":\"completed\"}", id);
                SC_CHECK_INT(sc_store_decide(st, 1, SC_DLOG_EVENT_ENDED, d, "", wall++, NULL), 0);
            } else if (r <= 3 || !attempt[v]) { /* an order: a new attempt */
                recover[v] = attempt[v] && r % 2;
                started[v] = final[v] = false;
                snprintf(d, sizeof(d), "{\"event_id\":\"%s\",\"vms\":[\"%s\"],\"attempt\":%d}", id,
                         s_names[v], ++attempt[v]);
                SC_CHECK_INT(
                    sc_store_decide(st, 1,
                                    recover[v] ? SC_DLOG_RECOVER_ORDERED : SC_DLOG_PREPARE_ORDERED,
                                    d, "", wall++, NULL),
                    0);
            } else if (!final[v]) { /* what its agent reports, in the order it can */
                const char *state = !started[v] && r == 4   ? "refused"
                                    : !started[v] && r <= 6 ? "started"
                                                            : finals[rand_r(&seed) % 5];
                started[v] = started[v] || strcmp(state, "refused") != 0;
                final[v] = strcmp(state, "refused") != 0 && strcmp(state, "started") != 0;
                snprintf(d, sizeof(d),
                         "{\"event_id\":\"%s\",\"vm\":\"%s\",\"phase\":\"%s\",\"state\":\"%s\","
                         "\"attempt\":%d}",
                         id, s_names[v], recover[v] ? "recover" : "prepare", state, attempt[v]);
                SC_CHECK_INT(sc_store_decide(st, 1, SC_DLOG_HOOK_PROGRESS, d, "", wall++, NULL), 0);
            }
        }
        SC_REQUIRE(sc_store_snapshot(st, true, wall, 0, &snap) == 0);
        evs = json_object_object_get(snap, "events");
        SC_REQUIRE(json_object_array_length(evs) == 1);
        drains = json_object_object_get(json_object_array_get_idx(evs, 0), "drains");
        for (size_t vm = 0; vm < 2; vm++) {
            const char *shown = json_object_get_string(json_object_object_get(drains, s_names[vm]));
            if (!shown || strcmp(shown, s_drain(cs, id, vm)) != 0) {
                SC_FAILF("round %d %s: store shows %s, state holds %s", round, s_names[vm],
                         shown ? shown : "(none)", s_drain(cs, id, vm));
                break;
            }
        }
        {
            int64_t last = 0;
            sc_store_last_entry(st, &last, NULL);
            SC_CHECK_INT(sc_cstate_applied(cs), last); /* every decision applied */
        }
        json_object_put(snap);
        sc_store_close(&st);
        sc_cstate_destroy(&cs);
    }
}

static void s_rehearsal(sc_cstate_t *cs, int id, const char *state, int64_t wall)
{
    char d[1024];

    if (strcmp(state, "started") == 0)
        snprintf(d, sizeof(d),
                 "{\"rehearsal\":%d,\"state\":\"started\",\"event_type\":\"Reboot\",\"scope\":"
                 "\"the whole set\",\"recover_after_s\":2,\"not_before\":900,\"groups\":["
                 "{\"event_id\":\"rehearsal-%d-fd0\",\"domain\":0,\"vms\":[\"vm_0\"]},"
                 "{\"event_id\":\"rehearsal-%d-fd1\",\"domain\":1,\"vms\":[\"vm_1\",\"vm_2\"]}]}",
                 id, id, id);
    else
        snprintf(d, sizeof(d), "{\"rehearsal\":%d,\"state\":\"%s\",\"why\":\"real event\"}", id,
                 state);
    SC_CHECK_INT(s_apply(cs, SC_DLOG_REHEARSAL, wall, d), 0);
}

/* A rehearsal: started, its groups released as their events are seen (marked as its), stopped
 * by a real event, finished; one at a time, numbered in turn; entries out of turn change
 * nothing; in the snapshot. */
SC_TEST(rehearsal_record)
{
    sc_cstate_t *cs = s_new(), *b = s_new();
    const sc_cs_rehearsal_t *rh;
    json_object *snap = NULL;
    char *ja, *jb, err[256];

    SC_REQUIRE(cs && b);
    rh = sc_cstate_rehearsal(cs);
    SC_CHECK_INT(rh->state, SC_REHEARSAL_NONE);
    s_rehearsal(cs, 2, "started", 10); /* not in turn: nothing */
    SC_CHECK_INT(rh->id, 0);
    s_rehearsal(cs, 1, "started", 10);
    SC_CHECK_INT(rh->id, 1);
    SC_CHECK_INT(rh->state, SC_REHEARSAL_RUNNING);
    SC_CHECK_INT(rh->type, SC_EVENT_REBOOT);
    SC_CHECK_INT(rh->n_groups, 2);
    SC_CHECK_STR(rh->groups[1].event_id, "rehearsal-1-fd1");
    SC_CHECK_INT(rh->groups[1].n_vms, 2);
    SC_CHECK_INT(rh->index, sc_cstate_applied(cs));
    SC_CHECK_INT(rh->started_ms, 10);
    s_rehearsal(cs, 2, "started", 11); /* one at a time */
    SC_CHECK_INT(rh->id, 1);
    /* its first group's event seen: released, marked as the rehearsal's */
    SC_CHECK_INT(s_apply(cs, SC_DLOG_EVENT_SEEN, 12,
                         "{\"event\":{\"EventId\":\"rehearsal-1-fd0\",\"EventType\":\"Reboot\","
                         "\"ResourceType\":\"VirtualMachine\",\"Resources\":[\"vm_0\"],"
                         "\"EventStatus\":\"Scheduled\",\"NotBefore\":\"\",\"EventSource\":"
                         "\"Platform\"},\"seen_by\":[],\"rehearsal\":1}"),
                 0);
    SC_CHECK_INT(rh->n_released, 1);
    SC_CHECK_INT(sc_cstate_event_find(cs, "rehearsal-1-fd0")->rehearsal, 1);
    s_seen(cs, "E1", "Scheduled", "\"vm_0\"");
    SC_CHECK_INT(sc_cstate_event_find(cs, "E1")->rehearsal, 0);
    SC_CHECK_INT(rh->n_released, 1);
    s_rehearsal(cs, 1, "stopped", 13);
    SC_CHECK_INT(rh->state, SC_REHEARSAL_STOPPED);
    SC_CHECK_STR(rh->why, "real event");
    SC_CHECK_INT(rh->stopped_ms, 13);
    /* the snapshot holds it, and loads back */
    SC_REQUIRE(sc_cstate_to_json(cs, &snap) == 0);
    SC_CHECK_INT(sc_cstate_from_json(b, snap, err, sizeof(err)), 0);
    ja = s_json(cs);
    jb = s_json(b);
    SC_CHECK_STR(jb, ja);
    SC_CHECK(strstr(ja, "\"rehearsal\":1") != NULL);
    free(ja);
    free(jb);
    json_object_put(snap);
    s_rehearsal(cs, 1, "stopped", 14); /* out of turn: nothing */
    SC_CHECK_INT(rh->stopped_ms, 13);
    s_rehearsal(cs, 1, "finished", 15);
    SC_CHECK_INT(rh->state, SC_REHEARSAL_FINISHED);
    SC_CHECK_INT(rh->finished_ms, 15);
    s_rehearsal(cs, 2, "started", 16);
    SC_CHECK_INT(rh->id, 2);
    SC_CHECK_INT(rh->n_released, 0);
    SC_CHECK_INT(rh->stopped_ms, 0);
    SC_CHECK_STR(sc_rehearsal_state_name(rh->state), "running");
    sc_cstate_destroy(&cs);
    sc_cstate_destroy(&b);
}

/* The store's reads for the forecasts and a rehearsal's report: the newest runs that ended
 * done per VM and phase, the runs under way, and an event's rows with their output tail. */
SC_TEST(store_hook_runs_and_rows)
{
    sc_store_t *st = NULL;
    sc_cstate_t *cs = s_new();
    json_object *runs = NULL, *rows = NULL;
    const char *ids[] = {"E1"};
    char err[256], d[512];
    size_t n_done = 0, n_running = 0;

    SC_REQUIRE(cs && sc_store_open(":memory:", &st, err, sizeof(err)) == 0);
    sc_store_on_decide(st, s_on_decide, cs);
    SC_CHECK_INT(sc_store_decide(st, 1, SC_DLOG_EVENT_SEEN,
                                 "{\"event\":{\"EventId\":\"E1\",\"EventType\":\"Reboot\","
                                 "\"ResourceType\":\"VirtualMachine\",\"Resources\":[\"vm_0\","
                                 "\"vm_1\"],\"EventStatus\":\"Scheduled\",\"NotBefore\":\"\","
                                 "\"EventSource\":\"Platform\"},\"seen_by\":[]}",
                                 "", 1, NULL),
                 0);
    SC_CHECK_INT(sc_store_decide(st, 1, SC_DLOG_PREPARE_ORDERED,
                                 "{\"event_id\":\"E1\",\"vms\":[\"vm_0\",\"vm_1\"]}", "", 2, NULL),
                 0);
    for (int v = 0; v < 2; v++) {
        snprintf(d, sizeof(d),
                 "{\"event_id\":\"E1\",\"vm\":\"vm_%d\",\"phase\":\"prepare\",\"state\":"
                 "\"started\"}",
                 v);
        SC_CHECK_INT(sc_store_decide(st, 1, SC_DLOG_HOOK_PROGRESS, d, "", 1000, NULL), 0);
    }
    SC_CHECK_INT(sc_store_decide(st, 1, SC_DLOG_HOOK_PROGRESS,
                                 "{\"event_id\":\"E1\",\"vm\":\"vm_0\",\"phase\":\"prepare\","
                                 "\"state\":\"failed\",\"exit_status\":3,\"detail\":\"no quorum\"}",
                                 "", 4500, NULL),
                 0);
    SC_REQUIRE(sc_store_hook_runs(st, 64, 0, &runs) == 0);
    for (size_t i = 0; i < json_object_array_length(runs); i++) {
        json_object *r = json_object_array_get_idx(runs, i);
        if (json_object_object_get(r, "finished_ms")) {
            n_done++;
        } else {
            n_running++;
            SC_CHECK_STR(json_object_get_string(json_object_object_get(r, "vm")), "vm_1");
        }
    }
    SC_CHECK_INT(n_done, 0); /* a failed run teaches no duration */
    SC_CHECK_INT(n_running, 1);
    json_object_put(runs);
    SC_CHECK_INT(sc_store_decide(st, 1, SC_DLOG_HOOK_PROGRESS,
                                 "{\"event_id\":\"E1\",\"vm\":\"vm_1\",\"phase\":\"prepare\","
                                 "\"state\":\"done\",\"exit_status\":0}",
                                 "", 3000, NULL),
                 0);
    SC_REQUIRE(sc_store_hook_runs(st, 64, 0, &runs) == 0);
    SC_REQUIRE(json_object_array_length(runs) == 1);
    SC_CHECK_INT(json_object_get_int64(
                     json_object_object_get(json_object_array_get_idx(runs, 0), "finished_ms")) -
                     json_object_get_int64(
                         json_object_object_get(json_object_array_get_idx(runs, 0), "started_ms")),
                 2000);
    json_object_put(runs);
    SC_REQUIRE(sc_store_drains_of(st, ids, 1, 1, &rows) == 0);
    SC_REQUIRE(json_object_array_length(rows) == 2);
    SC_CHECK_STR(json_object_get_string(
                     json_object_object_get(json_object_array_get_idx(rows, 0), "detail")),
                 "no quorum");
    SC_CHECK_STR(json_object_get_string(
                     json_object_object_get(json_object_array_get_idx(rows, 0), "result")),
                 "failed");
    SC_CHECK(json_object_object_get(json_object_array_get_idx(rows, 1), "detail") == NULL);
    json_object_put(rows);
    /* from a later index on: that output is older */
    SC_REQUIRE(sc_store_drains_of(st, ids, 1, 100, &rows) == 0);
    SC_CHECK(json_object_object_get(json_object_array_get_idx(rows, 0), "detail") == NULL);
    json_object_put(rows);
    sc_store_close(&st);
    sc_cstate_destroy(&cs);
}

int main(void)
{
    SC_RUN(drain_table_is_its_diagram);
    SC_RUN(approval_table_is_its_diagram);
    SC_RUN(unknown_survives_a_later_failed_post);
    SC_RUN(apply_follows_an_event_through);
    SC_RUN(rollback_attempts_and_forced_start);
    SC_RUN(bad_entries_refused_state_unchanged);
    SC_RUN(alerts_and_pause);
    SC_RUN(snapshot_round_trip);
    SC_RUN(store_projection_agrees_with_the_state);
    SC_RUN(rehearsal_record);
    SC_RUN(store_hook_runs_and_rows);
    return sc_test_done();
}
