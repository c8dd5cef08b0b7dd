/* Tests of the event registry (coordinator/sc_registry.h): merging, case-insensitive ids,
 * seen_by, host-failure Started, cancelled vs ended, fresh documents (agent restart, backwards
 * incarnation) and dead members never ending events spuriously. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_error.h"
#include "sc_registry.h"
#include "sc_test.h"

#define ID1 "C7061BAC-AFDC-4513-B24B-AA5F13A16123"
#define ID1_LOWER "c7061bac-afdc-4513-b24b-aa5f13a16123"
#define ID2 "F020BA2E-3BC0-4C40-A10B-86575A9EABD5"

/* A document with the given events: each spec is "ID:Status" (Scheduled or Started). */
static sc_doc_t *s_doc(long inc, const char *const *specs, size_t n)
{
    size_t cap = 512 + n * 400, off = 0;
    char *buf = malloc(cap);
    sc_doc_t *doc = NULL;
    char err[256];
    int rc;

    if (!buf)
        return NULL;

    off +=
        (size_t)snprintf(buf + off, cap - off, "{\"DocumentIncarnation\": %ld, \"Events\": [", inc);
    for (size_t i = 0; i < n; i++) {
        const char *colon = strchr(specs[i], ':');
        int idlen = (int)(colon - specs[i]);
        bool started = strcmp(colon + 1, "Started") == 0;

        off += (size_t)snprintf(
            buf + off, cap - off,
            "%s{\"EventId\": \"%.*s\", \"EventStatus\": \"%s\", \"EventType\": \"Reboot\", "
            "\"ResourceType\": \"VirtualMachine\", \"Resources\": [\"vm0\"], "
            "\"NotBefore\": \"%s\", \"EventSource\": \"Platform\", \"DurationInSeconds\": -1}",
            i ? "," : "", idlen, specs[i], colon + 1,
            started ? "" : "Mon, 11 Apr 2022 22:26:58 GMT");
    }
    snprintf(buf + off, cap - off, "]}");
    rc = sc_doc_parse(buf, strlen(buf), &doc, err, sizeof(err));
    free(buf);
    if (rc < 0) {
        printf("  bad test document: %s\n", err);
        return NULL;
    }
    return doc;
}

/* Applies a document built from specs; returns the rc; changes kinds are rendered in chg. */
static int s_apply(sc_registry_t *reg, const char *member, const char *boot, long inc,
                   const char *const *specs, size_t n, int64_t now, char *chg, size_t chglen)
{
    sc_doc_t *doc = s_doc(inc, specs, n);
    sc_registry_changes_t ch = {0};
    int rc;

    if (!doc)
        return -1;
    rc = sc_registry_apply_doc(reg, member, boot, doc, now, &ch);
    if (chg) {
        size_t off = 0;

        chg[0] = '\0';
        for (size_t i = 0; rc == 0 && i < ch.n; i++)
            off += (size_t)snprintf(chg + off, chglen - off, "%s%s", i ? " " : "",
                                    sc_reg_change_name(ch.items[i].kind));
    }
    sc_registry_changes_release(&ch);
    sc_doc_destroy(&doc);
    return rc;
}

#define APPLY(reg, m, boot, inc, now, chg, ...)                                                    \
    s_apply(reg, m, boot, inc, (const char *const[]){__VA_ARGS__},                                 \
            sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *), now, chg,           \
            sizeof(chg))
#define APPLY_EMPTY(reg, m, boot, inc, now, chg)                                                   \
    s_apply(reg, m, boot, inc, NULL, 0, now, chg, sizeof(chg))

SC_TEST(merge_case_insensitive_seen_by)
{
    sc_registry_t *reg = NULL;
    const sc_reg_event_t *e;
    char chg[256];

    SC_REQUIRE(sc_registry_new(0, &reg) == 0);
    SC_CHECK_INT(APPLY(reg, "vm0", "b0", 1, 1000, chg, ID1 ":Scheduled"), 0);
    SC_CHECK_STR(chg, "New");
    SC_CHECK_INT(APPLY(reg, "vm1", "b1", 1, 1100, chg, ID1_LOWER ":Scheduled"), 0);
    SC_CHECK_STR(chg, "");
    SC_CHECK_INT(sc_registry_count(reg), 1);
    e = sc_registry_find(reg, ID1_LOWER);
    SC_REQUIRE(e != NULL);
    SC_CHECK_STR(e->ev.id, ID1); /* as first seen */
    SC_CHECK_INT(e->n_seen_by, 2);
    SC_CHECK(sc_reg_event_seen_by(e, "vm0") && sc_reg_event_seen_by(e, "vm1"));
    SC_CHECK(!sc_reg_event_seen_by(e, "vm2"));
    SC_CHECK_INT(e->first_seen_ms, 1000);
    SC_CHECK_INT(e->last_seen_ms, 1100);
    SC_CHECK_INT(e->phase, SC_REG_ACTIVE);
    /* a second event from one member only */
    SC_CHECK_INT(APPLY(reg, "vm1", "b1", 2, 1200, chg, ID1 ":Scheduled", ID2 ":Scheduled"), 0);
    SC_CHECK_STR(chg, "New");
    e = sc_registry_find(reg, ID2);
    SC_REQUIRE(e != NULL);
    SC_CHECK_INT(e->n_seen_by, 1);
    SC_CHECK_STR(e->seen_by[0], "vm1");
    SC_CHECK(sc_registry_event_at(reg, 0) == sc_registry_find(reg, ID1));
    SC_CHECK(sc_registry_event_at(reg, 2) == NULL);
    sc_registry_destroy(&reg);
    SC_CHECK(reg == NULL);
}

SC_TEST(host_failure_started_directly)
{
    sc_registry_t *reg = NULL;
    const sc_reg_event_t *e;
    char chg[256];

    SC_REQUIRE(sc_registry_new(0, &reg) == 0);
    SC_CHECK_INT(APPLY(reg, "vm0", NULL, 1, 10, chg, ID1 ":Started"), 0);
    SC_CHECK_STR(chg, "NewStarted");
    e = sc_registry_find(reg, ID1);
    SC_REQUIRE(e != NULL);
    SC_CHECK_INT(e->start_kind, SC_START_DIRECT);
    SC_CHECK_INT(e->started_ms, 10);
    sc_registry_destroy(&reg);
}

SC_TEST(started_approved_vs_forced)
{
    sc_registry_t *reg = NULL;
    char chg[256];

    SC_REQUIRE(sc_registry_new(0, &reg) == 0);
    APPLY(reg, "vm0", NULL, 1, 10, chg, ID1 ":Scheduled", ID2 ":Scheduled");
    SC_CHECK_INT(sc_registry_mark_approved(reg, ID1_LOWER), 0);
    SC_CHECK_INT(sc_registry_mark_approved(reg, "nope"), SC_E_NOT_FOUND);
    SC_CHECK_INT(APPLY(reg, "vm0", NULL, 2, 20, chg, ID1 ":Started", ID2 ":Started"), 0);
    SC_CHECK_STR(chg, "Started Started");
    SC_CHECK_INT(sc_registry_find(reg, ID1)->start_kind, SC_START_APPROVED);
    SC_CHECK_INT(sc_registry_find(reg, ID2)->start_kind, SC_START_FORCED);
    /* a lagging member still showing Scheduled does not move it back */
    SC_CHECK_INT(APPLY(reg, "vm1", NULL, 1, 30, chg, ID1 ":Scheduled"), 0);
    SC_CHECK_STR(chg, "");
    SC_CHECK(sc_event_is_started(&sc_registry_find(reg, ID1)->ev));
    sc_registry_destroy(&reg);
}

SC_TEST(cancelled_vs_ended)
{
    sc_registry_t *reg = NULL;
    char chg[256];

    SC_REQUIRE(sc_registry_new(0, &reg) == 0);
    APPLY(reg, "vm0", "b", 1, 10, chg, ID1 ":Scheduled", ID2 ":Started");
    SC_CHECK_INT(APPLY_EMPTY(reg, "vm0", "b", 2, 20, chg), 0);
    SC_CHECK_STR(chg, "Cancelled Ended");
    SC_CHECK_INT(sc_registry_find(reg, ID1)->phase, SC_REG_CANCELLED);
    SC_CHECK_INT(sc_registry_find(reg, ID2)->phase, SC_REG_ENDED);
    SC_CHECK_INT(sc_registry_find(reg, ID2)->ended_ms, 20);
    /* final is final: a lagging member showing it again changes nothing */
    SC_CHECK_INT(APPLY(reg, "vm1", "c", 1, 30, chg, ID1 ":Scheduled"), 0);
    SC_CHECK_STR(chg, "");
    SC_CHECK_INT(sc_registry_find(reg, ID1)->phase, SC_REG_CANCELLED);
    SC_CHECK_INT(sc_registry_remove_event(reg, ID1_LOWER), 0);
    SC_CHECK_INT(sc_registry_remove_event(reg, ID1), SC_E_NOT_FOUND);
    SC_CHECK_INT(sc_registry_count(reg), 1);
    sc_registry_destroy(&reg);
}

SC_TEST(disappears_only_when_every_live_witness_drops_it)
{
    sc_registry_t *reg = NULL;
    char chg[256];

    SC_REQUIRE(sc_registry_new(0, &reg) == 0);
    APPLY(reg, "vm0", "a", 1, 10, chg, ID1 ":Started");
    APPLY(reg, "vm1", "b", 1, 10, chg, ID1 ":Started");
    SC_CHECK_INT(APPLY_EMPTY(reg, "vm0", "a", 2, 20, chg), 0);
    SC_CHECK_STR(chg, "");
    SC_CHECK_INT(sc_registry_find(reg, ID1)->phase, SC_REG_ACTIVE);
    SC_CHECK_INT(sc_registry_find(reg, ID1)->n_seen_by, 1);
    SC_CHECK_INT(sc_registry_find(reg, ID1)->n_ever_seen_by, 2);
    SC_CHECK_INT(APPLY_EMPTY(reg, "vm1", "b", 2, 30, chg), 0);
    SC_CHECK_STR(chg, "Ended");
    sc_registry_destroy(&reg);
}

SC_TEST(dead_member_silence_does_not_end)
{
    sc_registry_t *reg = NULL;
    sc_registry_changes_t ch = {0};
    char chg[256];

    SC_REQUIRE(sc_registry_new(1000, &reg) == 0);
    APPLY(reg, "vm0", "a", 1, 10, chg, ID1 ":Started");
    SC_CHECK_INT(sc_registry_set_alive(reg, "vm0", false, 20, &ch), 0);
    SC_CHECK_INT(ch.n, 0);
    sc_registry_changes_release(&ch);
    SC_CHECK_INT(sc_registry_tick(reg, 10 * 3600 * 1000, &ch), 0);
    SC_CHECK_INT(ch.n, 0);
    sc_registry_changes_release(&ch);
    SC_CHECK_INT(sc_registry_find(reg, ID1)->phase, SC_REG_ACTIVE);
    SC_CHECK(!sc_registry_member_alive(reg, "vm0"));
    /* a member that never saw it does not vote */
    SC_CHECK_INT(APPLY_EMPTY(reg, "vm9", "z", 5, 30, chg), 0);
    SC_CHECK_STR(chg, "");
    SC_CHECK_INT(sc_registry_find(reg, ID1)->phase, SC_REG_ACTIVE);
    sc_registry_destroy(&reg);
}

SC_TEST(dead_witness_does_not_keep_it_alive)
{
    sc_registry_t *reg = NULL;
    sc_registry_changes_t ch = {0};
    char chg[256];

    SC_REQUIRE(sc_registry_new(0, &reg) == 0);
    APPLY(reg, "vm0", "a", 1, 10, chg, ID1 ":Started");
    APPLY(reg, "vm1", "b", 1, 10, chg, ID1 ":Started");
    /* vm1 is impacted (rebooting) and stops reporting; vm0 sees the end */
    SC_CHECK_INT(sc_registry_set_alive(reg, "vm1", false, 15, NULL), 0);
    SC_CHECK_INT(APPLY_EMPTY(reg, "vm0", "a", 2, 20, chg), 0);
    SC_CHECK_STR(chg, "Ended");
    /* and the other order: an absent vote first, then the last live witness dies */
    APPLY(reg, "vm0", "a", 3, 30, chg, ID2 ":Started");
    sc_registry_set_alive(reg, "vm1", true, 30, NULL);
    APPLY(reg, "vm1", "b", 3, 30, chg, ID2 ":Started");
    APPLY_EMPTY(reg, "vm0", "a", 4, 40, chg);
    SC_CHECK_INT(sc_registry_find(reg, ID2)->phase, SC_REG_ACTIVE);
    SC_CHECK_INT(sc_registry_set_alive(reg, "vm1", false, 50, &ch), 0);
    SC_REQUIRE(ch.n == 1);
    SC_CHECK_INT(ch.items[0].kind, SC_CHG_ENDED);
    sc_registry_changes_release(&ch);
    sc_registry_destroy(&reg);
}

SC_TEST(agent_restart_empty_document_is_pending)
{
    sc_registry_t *reg = NULL;
    sc_registry_changes_t ch = {0};
    char chg[256];

    SC_REQUIRE(sc_registry_new(5000, &reg) == 0);
    APPLY(reg, "vm0", "boot-1", 7, 1000, chg, ID1 ":Started");
    /* the VM rebooted: new boot id, IMDS comes back empty — not an end by itself */
    SC_CHECK_INT(APPLY_EMPTY(reg, "vm0", "boot-2", 7, 2000, chg), 0);
    SC_CHECK_STR(chg, "");
    SC_CHECK_INT(sc_registry_find(reg, ID1)->phase, SC_REG_ACTIVE);
    SC_CHECK_INT(sc_registry_tick(reg, 6999, &ch), 0);
    SC_CHECK_INT(ch.n, 0);
    sc_registry_changes_release(&ch);
    /* it shows up again: still the same active event, nothing ended */
    SC_CHECK_INT(APPLY(reg, "vm0", "boot-2", 8, 3000, chg, ID1 ":Started"), 0);
    SC_CHECK_STR(chg, "");
    SC_CHECK_INT(sc_registry_tick(reg, 100000, &ch), 0);
    SC_CHECK_INT(ch.n, 0);
    sc_registry_changes_release(&ch);
    /* a real end after a restart is confirmed after confirm_ms */
    SC_CHECK_INT(APPLY_EMPTY(reg, "vm0", "boot-3", 9, 200000, chg), 0);
    SC_CHECK_STR(chg, "");
    SC_CHECK_INT(sc_registry_tick(reg, 205000, &ch), 0);
    SC_REQUIRE(ch.n == 1);
    SC_CHECK_INT(ch.items[0].kind, SC_CHG_ENDED);
    sc_registry_changes_release(&ch);
    sc_registry_destroy(&reg);
}

SC_TEST(backwards_incarnation_is_fresh)
{
    sc_registry_t *reg = NULL;
    char chg[256];

    SC_REQUIRE(sc_registry_new(5000, &reg) == 0);
    APPLY(reg, "vm0", "b", 40, 1000, chg, ID1 ":Scheduled");
    SC_CHECK_INT(APPLY_EMPTY(reg, "vm0", "b", 1, 2000, chg), 0);
    SC_CHECK_STR(chg, "");
    /* the same event reported by another member stays, even after the confirm delay */
    APPLY(reg, "vm1", "c", 3, 2500, chg, ID1 ":Scheduled");
    SC_CHECK_INT(APPLY_EMPTY(reg, "vm0", "b", 2, 9000, chg), 0);
    SC_CHECK_STR(chg, "");
    SC_CHECK_INT(sc_registry_find(reg, ID1)->phase, SC_REG_ACTIVE);
    /* once the other member drops it too, it is cancelled */
    SC_CHECK_INT(APPLY_EMPTY(reg, "vm1", "c", 4, 9100, chg), 0);
    SC_CHECK_STR(chg, "Cancelled");
    sc_registry_destroy(&reg);
}

/* After a coordinator restart the members' boot ids are unknown: the first document of each
 * member is a fresh view (a rebooted VM's IMDS may come back empty), so an event only that VM
 * saw ends only after confirm_ms, not at once; later documents count as usual. */
SC_TEST(first_document_after_restart_is_fresh)
{
    sc_registry_t *reg = NULL;
    sc_registry_changes_t ch = {0};
    const char *witnesses[] = {"vm0"};
    sc_doc_t *doc = s_doc(1, (const char *const[]){ID1 ":Started", ID2 ":Scheduled"}, 2);
    sc_reg_restore_t r = {0};
    char chg[256];

    SC_REQUIRE(doc != NULL);
    SC_REQUIRE(sc_registry_new(5000, &reg) == 0);
    r.ev = &doc->events[0];
    r.phase = SC_REG_ACTIVE;
    r.start_kind = SC_START_APPROVED;
    r.approved = true;
    r.witnesses = witnesses;
    r.n_witnesses = 1;
    SC_CHECK_INT(sc_registry_restore_event(reg, &r), 0);
    r.ev = &doc->events[1];
    r.start_kind = SC_START_NONE;
    r.approved = false;
    SC_CHECK_INT(sc_registry_restore_event(reg, &r), 0);
    /* vm0 rebooted while we were down: its first document is empty */
    SC_CHECK_INT(APPLY_EMPTY(reg, "vm0", "boot-7", 3, 1000, chg), 0);
    SC_CHECK_STR(chg, "");
    SC_CHECK_INT(sc_registry_find(reg, ID1)->phase, SC_REG_ACTIVE);
    SC_CHECK_INT(sc_registry_tick(reg, 5999, &ch), 0);
    SC_CHECK_INT(ch.n, 0);
    sc_registry_changes_release(&ch);
    /* ID2 shows up again (IMDS was only slow); ID1 stays away: ended once confirmed */
    SC_CHECK_INT(APPLY(reg, "vm0", "boot-7", 4, 3000, chg, ID2 ":Scheduled"), 0);
    SC_CHECK_STR(chg, "");
    SC_CHECK_INT(sc_registry_tick(reg, 6000, &ch), 0);
    SC_REQUIRE(ch.n == 1);
    SC_CHECK_INT(ch.items[0].kind, SC_CHG_ENDED);
    sc_registry_changes_release(&ch);
    /* not the first document any more, same boot: a document without ID2 cancels it at once */
    SC_CHECK_INT(APPLY_EMPTY(reg, "vm0", "boot-7", 5, 7000, chg), 0);
    SC_CHECK_STR(chg, "Cancelled");
    sc_doc_destroy(&doc);
    sc_registry_destroy(&reg);
}

SC_TEST(forget_member_and_restore)
{
    sc_registry_t *reg = NULL;
    sc_registry_changes_t ch = {0};
    const char *witnesses[] = {"vm3", "vm4"};
    sc_doc_t *doc = s_doc(1, (const char *const[]){ID2 ":Started"}, 1);
    sc_reg_restore_t r = {0};
    char chg[256];

    SC_REQUIRE(doc != NULL);
    SC_REQUIRE(sc_registry_new(0, &reg) == 0);
    APPLY(reg, "gpu0", "g", 1, 10, chg, ID1 ":Scheduled");
    SC_CHECK_INT(sc_registry_forget_member(reg, "nobody", 20, NULL), SC_E_NOT_FOUND);
    SC_CHECK_INT(sc_registry_forget_member(reg, "gpu0", 20, &ch), 0);
    SC_REQUIRE(ch.n == 1);
    SC_CHECK_INT(ch.items[0].kind, SC_CHG_CANCELLED);
    sc_registry_changes_release(&ch);

    r.ev = &doc->events[0];
    r.phase = SC_REG_ACTIVE;
    r.start_kind = SC_START_FORCED;
    r.first_seen_ms = 5;
    r.witnesses = witnesses;
    r.n_witnesses = 2;
    SC_CHECK_INT(sc_registry_restore_event(reg, &r), 0);
    SC_REQUIRE(sc_registry_find(reg, ID2) != NULL);
    SC_CHECK_INT(sc_registry_find(reg, ID2)->start_kind, SC_START_FORCED);
    SC_CHECK_INT(sc_registry_find(reg, ID2)->n_ever_seen_by, 2);
    /* restored witnesses start dead: their stale votes keep nothing; vm3's report ends it,
     * but its first document since the restart is a fresh view: confirmed after confirm_ms */
    SC_CHECK(!sc_registry_member_alive(reg, "vm3"));
    SC_CHECK_INT(APPLY_EMPTY(reg, "vm3", "x", 9, 30, chg), 0);
    SC_CHECK_STR(chg, "");
    SC_CHECK_INT(sc_registry_tick(reg, 30 + SC_REGISTRY_CONFIRM_MS_DEFAULT, &ch), 0);
    SC_REQUIRE(ch.n == 1);
    SC_CHECK_INT(ch.items[0].kind, SC_CHG_ENDED);
    sc_registry_changes_release(&ch);
    r.phase = SC_REG_PHASE_MAX;
    SC_CHECK_INT(sc_registry_restore_event(reg, &r), -EINVAL);
    sc_doc_destroy(&doc);
    sc_registry_destroy(&reg);
}

SC_TEST(bad_input)
{
    sc_registry_t *reg = NULL;
    sc_doc_t empty = {0};
    char longname[SC_MEMBER_NAME_MAX + 2];

    SC_REQUIRE(sc_registry_new(0, &reg) == 0);
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    SC_CHECK_INT(sc_registry_apply_doc(reg, NULL, NULL, &empty, 0, NULL), -EINVAL);
    SC_CHECK_INT(sc_registry_apply_doc(reg, "", NULL, &empty, 0, NULL), -EINVAL);
    SC_CHECK_INT(sc_registry_apply_doc(reg, longname, NULL, &empty, 0, NULL), -EINVAL);
    SC_CHECK_INT(sc_registry_apply_doc(reg, "vm\n0", NULL, &empty, 0, NULL), -EINVAL);
    SC_CHECK_INT(sc_registry_apply_doc(reg, "vm0", NULL, NULL, 0, NULL), -EINVAL);
    SC_CHECK_INT(sc_registry_apply_doc(NULL, "vm0", NULL, &empty, 0, NULL), -EINVAL);
    SC_CHECK_INT(sc_registry_apply_doc(reg, "vm0", NULL, &empty, 0, NULL), 0);
    SC_CHECK_INT(sc_registry_set_alive(reg, "", true, 0, NULL), -EINVAL);
    SC_CHECK(sc_registry_find(reg, NULL) == NULL);
    SC_CHECK_INT(sc_registry_restore_event(reg, NULL), -EINVAL);
    sc_registry_destroy(&reg);
    sc_registry_destroy(&reg); /* takes NULL */
    sc_registry_destroy(NULL);
}

SC_TEST(event_limit)
{
    sc_registry_t *reg = NULL;
    char specs[SC_DOC_MAX_EVENTS][48];
    const char *ptrs[SC_DOC_MAX_EVENTS];
    int rc = 0;
    size_t batches = SC_REGISTRY_MAX_EVENTS / SC_DOC_MAX_EVENTS;

    SC_REQUIRE(sc_registry_new(0, &reg) == 0);
    for (size_t b = 0; b <= batches && rc == 0; b++) {
        for (size_t i = 0; i < SC_DOC_MAX_EVENTS; i++) {
            snprintf(specs[i], sizeof(specs[i]), "E%zu-%zu:Scheduled", b, i);
            ptrs[i] = specs[i];
        }
        rc = s_apply(reg, "vm0", NULL, (long)b, ptrs, SC_DOC_MAX_EVENTS, 1, NULL, 0);
    }
    SC_CHECK_INT(rc, SC_E_TOO_BIG);
    SC_CHECK_INT(sc_registry_count(reg), SC_REGISTRY_MAX_EVENTS);
    sc_registry_destroy(&reg);
}

int main(void)
{
    SC_RUN(merge_case_insensitive_seen_by);
    SC_RUN(host_failure_started_directly);
    SC_RUN(started_approved_vs_forced);
    SC_RUN(cancelled_vs_ended);
    SC_RUN(disappears_only_when_every_live_witness_drops_it);
    SC_RUN(dead_member_silence_does_not_end);
    SC_RUN(dead_witness_does_not_keep_it_alive);
    SC_RUN(agent_restart_empty_document_is_pending);
    SC_RUN(backwards_incarnation_is_fresh);
    SC_RUN(forget_member_and_restore);
    SC_RUN(first_document_after_restart_is_fresh);
    SC_RUN(bad_input);
    SC_RUN(event_limit);
    return sc_test_done();
}
