/* Tests of the event registry (coordinator/sc_registry.h): merging, case-insensitive ids,
 * seen_by, host-failure Started, cancelled vs ended, fresh documents (agent restart, backwards
 * incarnation), dead members never ending events spuriously, the merge rule (stale copies:
 * older documents of a member, older observations, blind members) and tombstones. */
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

/* A document with the given events: each spec is "ID:Status" (Scheduled or Started), or
 * "ID:Status:vm1,vm4" for other Resources than ["vm0"]. */
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
        const char *colon = strchr(specs[i], ':'), *res = strchr(colon + 1, ':');
        const char *type = res ? strchr(res + 1, ':') : NULL; /* "ID:Status:vm1,vm2:Terminate" */
        int idlen = (int)(colon - specs[i]);
        int stlen = res ? (int)(res - colon - 1) : (int)strlen(colon + 1);
        bool started = strncmp(colon + 1, "Started", (size_t)stlen) == 0;
        char names[256] = "\"vm0\"";

        if (res) {
            size_t k = 0;
            for (const char *r = res + 1; *r && *r != ':' && k + 8 < sizeof(names);) {
                size_t len = strcspn(r, ",:");
                k += (size_t)snprintf(names + k, sizeof(names) - k, "%s\"%.*s\"", k ? "," : "",
                                      (int)len, r);
                r += len + (r[len] == ',');
            }
        }
        off += (size_t)snprintf(
            buf + off, cap - off,
            "%s{\"EventId\": \"%.*s\", \"EventStatus\": \"%.*s\", \"EventType\": \"%s\", "
            "\"ResourceType\": \"VirtualMachine\", \"Resources\": [%s], "
            "\"NotBefore\": \"%s\", \"EventSource\": \"Platform\", \"DurationInSeconds\": -1}",
            i ? "," : "", idlen, specs[i], stlen, colon + 1, type ? type + 1 : "Reboot", names,
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

/* Applies a document built from specs, observed at observed (wall ms), from a member blind
 * or not; returns the rc; changes kinds are rendered in chg. */
static int s_apply_seen(sc_registry_t *reg, const char *member, const char *boot, long inc,
                        int64_t observed, bool blind, const char *const *specs, size_t n,
                        int64_t now, char *chg, size_t chglen)
{
    sc_doc_t *doc = s_doc(inc, specs, n);
    sc_registry_changes_t ch = {0};
    int rc;

    if (!doc)
        return -1;
    rc = sc_registry_apply_doc(reg, member, boot, doc, observed, blind, now, &ch);
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

/* s_apply_seen of a document observed when it arrives (now), from a member that is not blind. */
static int s_apply(sc_registry_t *reg, const char *member, const char *boot, long inc,
                   const char *const *specs, size_t n, int64_t now, char *chg, size_t chglen)
{
    return s_apply_seen(reg, member, boot, inc, now, false, specs, n, now, chg, chglen);
}

#define APPLY(reg, m, boot, inc, now, chg, ...)                                                    \
    s_apply(reg, m, boot, inc, (const char *const[]){__VA_ARGS__},                                 \
            sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *), now, chg,           \
            sizeof(chg))
#define APPLY_EMPTY(reg, m, boot, inc, now, chg)                                                   \
    s_apply(reg, m, boot, inc, NULL, 0, now, chg, sizeof(chg))
/* A document observed at seen (wall ms), blind or not, arriving at now. */
#define APPLY_SEEN(reg, m, boot, inc, seen, blind, now, chg, ...)                                  \
    s_apply_seen(reg, m, boot, inc, seen, blind, (const char *const[]){__VA_ARGS__},               \
                 sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *), now, chg,      \
                 sizeof(chg))
#define APPLY_SEEN_EMPTY(reg, m, boot, inc, seen, blind, now, chg)                                 \
    s_apply_seen(reg, m, boot, inc, seen, blind, NULL, 0, now, chg, sizeof(chg))

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

/* A fresh view that lacks an event (the VM rebooted, its IMDS may come back empty) holds it
 * only until another witness, whose IMDS kept its view, sees it go: then it ended (nemesis
 * seed 1: it held the event, and the next fault domain, for confirm_ms). */
/* nemesis seed 77: vm1's VM deleted by a Terminate that started; its last document (still
 * holding ID1) is stale, its agent silent only dead_after later. From the Terminate's start its
 * "present" keeps nothing: vm0's document without ID1 ends it at once, not 15 s later. Seen
 * failing without it: ID1 still active after vm0's document. */
SC_TEST(evicted_member_keeps_no_event)
{
    sc_registry_t *reg = NULL;
    char chg[256];

    SC_REQUIRE(sc_registry_new(0, &reg) == 0);
    APPLY(reg, "vm0", "a", 1, 10, chg, ID1 ":Started:vm0,vm2", ID2 ":Scheduled:vm1:Terminate");
    APPLY(reg, "vm1", "b", 1, 10, chg, ID1 ":Started:vm0,vm2", ID2 ":Scheduled:vm1:Terminate");
    /* the Terminate not started: vm1's vote still keeps ID1 */
    APPLY(reg, "vm0", "a", 2, 20, chg, ID2 ":Scheduled:vm1:Terminate");
    SC_CHECK_INT(sc_registry_find(reg, ID1)->phase, SC_REG_ACTIVE);
    /* it starts (seen by vm0): vm1 is going, its vote no longer counts */
    SC_CHECK_INT(APPLY(reg, "vm0", "a", 3, 30, chg, ID2 ":Started:vm1:Terminate"), 0);
    SC_CHECK_INT(sc_registry_find(reg, ID1)->phase, SC_REG_ENDED);
    SC_CHECK_INT(sc_registry_find(reg, ID2)->phase, SC_REG_ACTIVE);
    sc_registry_destroy(&reg);
}

SC_TEST(pending_vote_yields_to_a_witness_that_saw_it_go)
{
    sc_registry_t *reg = NULL;
    sc_registry_changes_t ch = {0};
    char chg[256];

    SC_REQUIRE(sc_registry_new(5000, &reg) == 0);
    APPLY(reg, "vm0", "boot-1", 7, 1000, chg, ID1 ":Started");
    APPLY(reg, "vm1", "boot-a", 3, 1000, chg, ID1 ":Started");
    /* vm0 rebooted: its fresh view lacks the event, vm1 still has it: it stays */
    SC_CHECK_INT(APPLY_EMPTY(reg, "vm0", "boot-2", 1, 2000, chg), 0);
    SC_CHECK_STR(chg, "");
    SC_CHECK_INT(sc_registry_find(reg, ID1)->phase, SC_REG_ACTIVE);
    /* vm1, same agent, same IMDS view: the event is gone; vm0's PENDING vote holds nothing */
    SC_CHECK_INT(APPLY_EMPTY(reg, "vm1", "boot-a", 4, 2100, chg), 0);
    SC_CHECK_STR(chg, "Ended");
    sc_registry_destroy(&reg);
    /* alone, a PENDING vote still waits for confirm_ms */
    SC_REQUIRE(sc_registry_new(5000, &reg) == 0);
    APPLY(reg, "vm0", "boot-1", 7, 1000, chg, ID1 ":Started");
    SC_CHECK_INT(APPLY_EMPTY(reg, "vm0", "boot-2", 1, 2000, chg), 0);
    SC_CHECK_STR(chg, "");
    SC_CHECK_INT(sc_registry_tick(reg, 6999, &ch), 0);
    SC_CHECK_INT(ch.n, 0);
    sc_registry_changes_release(&ch);
    SC_CHECK_INT(sc_registry_tick(reg, 7000, &ch), 0);
    SC_CHECK_INT(ch.n, 1);
    sc_registry_changes_release(&ch);
    sc_registry_destroy(&reg);
}

/* The daemon's restart with each agent's boot remembered (sc_registry_seed_member): a document
 * from the same agent keeps its view (an event it lacks is gone at once); a new agent, or an
 * IMDS whose incarnation went back, is still a fresh view. */
SC_TEST(seeded_boot_is_not_a_fresh_view)
{
    const char *witnesses[] = {"vm0"};
    sc_doc_t *doc = s_doc(1, (const char *const[]){ID1 ":Started"}, 1);
    sc_reg_restore_t r = {0};
    char chg[256];
    struct {
        const char *boot;
        long inc;
        const char *want;
    } cases[] = {{"boot-7", 4, "Ended"}, {"boot-8", 4, ""}, {"boot-7", 2, ""}};

    SC_REQUIRE(doc != NULL);
    r.ev = &doc->events[0];
    r.phase = SC_REG_ACTIVE;
    r.start_kind = SC_START_FORCED;
    r.witnesses = witnesses;
    r.n_witnesses = 1;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sc_registry_t *reg = NULL;

        SC_REQUIRE(sc_registry_new(5000, &reg) == 0);
        SC_CHECK_INT(sc_registry_restore_event(reg, &r), 0);
        SC_CHECK_INT(sc_registry_seed_member(reg, "vm0", "boot-7", 3, 500), 0);
        SC_CHECK_INT(
            APPLY_SEEN_EMPTY(reg, "vm0", cases[i].boot, cases[i].inc, 1000, false, 1000, chg), 0);
        SC_CHECK_STR(chg, cases[i].want);
        SC_CHECK_INT(sc_registry_seed_member(reg, "vm0", "", 1, 1), -EINVAL);
        SC_CHECK_INT(sc_registry_seed_member(reg, "", "b", 1, 1), -EINVAL);
        sc_registry_destroy(&reg);
    }
    sc_doc_destroy(&doc);
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
    SC_CHECK_INT(sc_registry_apply_doc(reg, NULL, NULL, &empty, 0, false, 0, NULL), -EINVAL);
    SC_CHECK_INT(sc_registry_apply_doc(reg, "", NULL, &empty, 0, false, 0, NULL), -EINVAL);
    SC_CHECK_INT(sc_registry_apply_doc(reg, longname, NULL, &empty, 0, false, 0, NULL), -EINVAL);
    SC_CHECK_INT(sc_registry_apply_doc(reg, "vm\n0", NULL, &empty, 0, false, 0, NULL), -EINVAL);
    SC_CHECK_INT(sc_registry_apply_doc(reg, "vm0", NULL, NULL, 0, false, 0, NULL), -EINVAL);
    SC_CHECK_INT(sc_registry_apply_doc(NULL, "vm0", NULL, &empty, 0, false, 0, NULL), -EINVAL);
    SC_CHECK_INT(sc_registry_apply_doc(reg, "vm0", NULL, &empty, 0, false, 0, NULL), 0);
    SC_CHECK_INT(sc_registry_add_tombstone(reg, "not an id", SC_REG_ENDED, 0), -EINVAL);
    SC_CHECK_INT(sc_registry_add_tombstone(reg, ID1, SC_REG_ACTIVE, 0), -EINVAL);
    SC_CHECK_INT(sc_registry_add_tombstone(NULL, ID1, SC_REG_ENDED, 0), -EINVAL);
    SC_CHECK_INT(sc_registry_set_tombstone_ms(NULL, 1), -EINVAL);
    SC_CHECK(!sc_registry_is_tombstoned(reg, NULL, 0));
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

/* The Resources of event id in the registry, "vm1,vm4" ("-" when the event is not there). */
static const char *s_res(const sc_registry_t *reg, const char *id)
{
    static char buf[256];
    const sc_reg_event_t *e = sc_registry_find(reg, id);
    size_t off = 0;

    if (!e)
        return "-";
    buf[0] = '\0';
    for (size_t i = 0; i < e->ev.n_resources && off < sizeof(buf); i++)
        off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s", i ? "," : "",
                                e->ev.resources[i]);
    return buf;
}

/* Issue 9, safety 1: Resources grow from [vm1] to [vm1, vm4]; vm5 saw the old version, went
 * blind, and re-sends its last good document (a coordinator reconnects, or asks with
 * doc_request). Neither as a blind member's copy nor, before a heartbeat said it is blind,
 * as a copy observed before the growth may it shrink Resources back. */
SC_TEST(stale_resend_by_blind_member_does_not_shrink_resources)
{
    sc_registry_t *reg = NULL;
    char chg[256];

    SC_REQUIRE(sc_registry_new(0, &reg) == 0);
    SC_CHECK_INT(APPLY_SEEN(reg, "vm1", "b1", 1, 1000, false, 1000, chg, ID1 ":Scheduled:vm1"), 0);
    SC_CHECK_STR(chg, "New");
    SC_CHECK_INT(APPLY_SEEN(reg, "vm5", "b5", 1, 1001, false, 1001, chg, ID1 ":Scheduled:vm1"), 0);
    SC_CHECK_STR(chg, "");
    SC_CHECK_INT(APPLY_SEEN(reg, "vm1", "b1", 2, 5000, false, 5000, chg, ID1 ":Scheduled:vm1,vm4"),
                 0);
    SC_CHECK_STR(chg, "Updated");
    SC_CHECK_STR(s_res(reg, ID1), "vm1,vm4");
    /* vm5 blind: its old document, re-sent now, changes nothing but stays a witness */
    SC_CHECK_INT(APPLY_SEEN(reg, "vm5", "b5", 1, 1001, true, 9000, chg, ID1 ":Scheduled:vm1"), 0);
    SC_CHECK_STR(chg, "StaleCopy");
    SC_CHECK_STR(s_res(reg, ID1), "vm1,vm4");
    SC_CHECK(sc_reg_event_seen_by(sc_registry_find(reg, ID1), "vm5"));
    /* the same copy before anyone knew vm5 is blind (a coordinator that just restarted):
     * observed before the growth, it is older than the content */
    SC_CHECK_INT(APPLY_SEEN(reg, "vm5", "b5", 1, 1001, false, 9500, chg, ID1 ":Scheduled:vm1"), 0);
    SC_CHECK_STR(chg, "StaleCopy");
    SC_CHECK_STR(s_res(reg, ID1), "vm1,vm4");
    /* a blind member's copy never creates an event either */
    SC_CHECK_INT(APPLY_SEEN(reg, "vm5", "b5", 1, 1001, true, 9600, chg, ID1 ":Scheduled:vm1",
                            ID2 ":Scheduled"),
                 0);
    SC_CHECK_STR(chg, "StaleCopy StaleCopy");
    SC_CHECK(sc_registry_find(reg, ID2) == NULL);
    /* once its IMDS answers, what it reads now counts again */
    SC_CHECK_INT(APPLY_SEEN(reg, "vm5", "b5", 3, 9700, false, 9700, chg, ID1 ":Scheduled:vm1,vm4",
                            ID2 ":Scheduled"),
                 0);
    SC_CHECK_STR(chg, "New");
    sc_registry_destroy(&reg);
}

/* Per member and agent boot, a document with a lower incarnation than the last one applied,
 * not read after it, is stale: neither its content nor its votes count. Read later, it is
 * IMDS's restart (backwards_incarnation_is_fresh); from a new boot, a new view. */
SC_TEST(lower_incarnation_from_same_boot_ignored)
{
    sc_registry_t *reg = NULL;
    char chg[256];

    SC_REQUIRE(sc_registry_new(5000, &reg) == 0);
    SC_CHECK_INT(APPLY_SEEN(reg, "vm1", "b", 5, 5000, false, 5000, chg, ID1 ":Scheduled:vm1,vm4"),
                 0);
    SC_CHECK_STR(chg, "New");
    SC_CHECK_INT(APPLY_SEEN(reg, "vm1", "b", 4, 4000, false, 6000, chg, ID1 ":Scheduled:vm1"), 0);
    SC_CHECK_STR(chg, "StaleCopy");
    SC_CHECK_STR(s_res(reg, ID1), "vm1,vm4");
    /* an older document without the event: no vote, even after the confirm delay */
    SC_CHECK_INT(APPLY_SEEN_EMPTY(reg, "vm1", "b", 3, 3000, false, 7000, chg), 0);
    SC_CHECK_STR(chg, "");
    SC_CHECK_INT(APPLY_SEEN_EMPTY(reg, "vm1", "b", 3, 3000, false, 20000, chg), 0);
    SC_CHECK_STR(chg, "");
    SC_CHECK_INT(sc_registry_find(reg, ID1)->phase, SC_REG_ACTIVE);
    SC_CHECK(sc_reg_event_seen_by(sc_registry_find(reg, ID1), "vm1"));
    /* the agent restarted (new boot id): its document is a new view */
    SC_CHECK_INT(APPLY_SEEN(reg, "vm1", "b2", 1, 21000, false, 21000, chg, ID1 ":Scheduled:vm1"),
                 0);
    SC_CHECK_STR(chg, "Updated");
    SC_CHECK_STR(s_res(reg, ID1), "vm1");
    sc_registry_destroy(&reg);
}

/* Across members, the freshest witness wins: a copy observed before the one that gave the
 * content does not replace it (its member still a witness); a tie goes to the later arrival;
 * an equal copy observed later makes the content fresher; a start is taken whatever the
 * copy's age, and never undone. */
SC_TEST(older_observed_copy_ignored)
{
    sc_registry_t *reg = NULL;
    char chg[256];

    SC_REQUIRE(sc_registry_new(0, &reg) == 0);
    SC_CHECK_INT(APPLY_SEEN(reg, "vm1", "a", 3, 3000, false, 3000, chg, ID1 ":Scheduled:vm1,vm4"),
                 0);
    SC_CHECK_INT(sc_registry_find(reg, ID1)->observed_ms, 3000);
    SC_CHECK_INT(APPLY_SEEN(reg, "vm2", "b", 7, 2500, false, 3100, chg, ID1 ":Scheduled:vm1"), 0);
    SC_CHECK_STR(chg, "StaleCopy");
    SC_CHECK_STR(s_res(reg, ID1), "vm1,vm4");
    SC_CHECK_INT(sc_registry_find(reg, ID1)->n_seen_by, 2);
    SC_CHECK_INT(APPLY_SEEN(reg, "vm2", "b", 8, 3000, false, 3200, chg, ID1 ":Scheduled:vm2"), 0);
    SC_CHECK_STR(chg, "Updated");
    SC_CHECK_STR(s_res(reg, ID1), "vm2");
    SC_CHECK_INT(APPLY_SEEN(reg, "vm3", "c", 2, 4000, false, 4000, chg, ID1 ":Scheduled:vm2"), 0);
    SC_CHECK_STR(chg, "");
    SC_CHECK_INT(sc_registry_find(reg, ID1)->observed_ms, 4000);
    SC_CHECK_INT(APPLY_SEEN(reg, "vm1", "a", 4, 3500, false, 4100, chg, ID1 ":Scheduled:vm1"), 0);
    SC_CHECK_STR(chg, "StaleCopy");
    SC_CHECK_STR(s_res(reg, ID1), "vm2");
    SC_CHECK_INT(APPLY_SEEN(reg, "vm4", "d", 9, 3900, false, 4200, chg, ID1 ":Started:vm2"), 0);
    SC_CHECK_STR(chg, "Started");
    SC_CHECK(sc_event_is_started(&sc_registry_find(reg, ID1)->ev));
    SC_CHECK_INT(APPLY_SEEN(reg, "vm3", "c", 3, 9000, false, 9000, chg, ID1 ":Scheduled:vm2"), 0);
    SC_CHECK_STR(chg, "");
    SC_CHECK(sc_event_is_started(&sc_registry_find(reg, ID1)->ev));
    sc_registry_destroy(&reg);
}

/* A final event the daemon removed leaves a tombstone: a later report of its EventId (any
 * case, Scheduled or Started) is not new, not a host failure and not a witness. An active
 * event removed (pruned) leaves none. */
SC_TEST(tombstoned_id_ignored)
{
    sc_registry_t *reg = NULL;
    char chg[256];

    SC_REQUIRE(sc_registry_new(0, &reg) == 0);
    APPLY(reg, "vm0", "a", 1, 10, chg, ID1 ":Scheduled");
    APPLY(reg, "vm0", "a", 2, 20, chg, ID1 ":Started");
    SC_CHECK_INT(APPLY_EMPTY(reg, "vm0", "a", 3, 30, chg), 0);
    SC_CHECK_STR(chg, "Ended");
    SC_CHECK_INT(sc_registry_remove_event(reg, ID1), 0);
    SC_CHECK_INT(sc_registry_count(reg), 0);
    SC_CHECK_INT(sc_registry_tombstone_count(reg), 1);
    SC_CHECK(sc_registry_is_tombstoned(reg, ID1_LOWER, 40));
    /* a late copy, Scheduled (a blind member's old document) or Started (a lagging IMDS) */
    SC_CHECK_INT(APPLY(reg, "vm5", "e", 1, 50, chg, ID1_LOWER ":Scheduled"), 0);
    SC_CHECK_STR(chg, "EndedCopy");
    SC_CHECK_INT(APPLY(reg, "vm6", "f", 1, 60, chg, ID1 ":Started"), 0);
    SC_CHECK_STR(chg, "EndedCopy");
    SC_CHECK_INT(sc_registry_count(reg), 0);
    /* an active event removed: no tombstone, it can come back */
    APPLY(reg, "vm0", "a", 4, 70, chg, ID2 ":Scheduled");
    SC_CHECK_INT(sc_registry_remove_event(reg, ID2), 0);
    SC_CHECK(!sc_registry_is_tombstoned(reg, ID2, 80));
    SC_CHECK_INT(APPLY(reg, "vm0", "a", 5, 90, chg, ID2 ":Scheduled"), 0);
    SC_CHECK_STR(chg, "New");
    sc_registry_destroy(&reg);
}

/* A tombstone is kept for the retention after its event ended, then forgotten (and dropped
 * at the next tick); at SC_REGISTRY_MAX_TOMBSTONES the one that ended first goes first. */
SC_TEST(tombstone_expiry)
{
    sc_registry_t *reg = NULL;
    sc_registry_changes_t ch = {0};
    char chg[256], id[32];

    SC_REQUIRE(sc_registry_new(0, &reg) == 0);
    SC_CHECK_INT(sc_registry_set_tombstone_ms(reg, 1000), 0);
    APPLY(reg, "vm0", "a", 1, 10, chg, ID1 ":Scheduled");
    APPLY_EMPTY(reg, "vm0", "a", 2, 20, chg);
    SC_CHECK_STR(chg, "Cancelled");
    SC_CHECK_INT(sc_registry_remove_event(reg, ID1), 0);
    SC_CHECK(sc_registry_is_tombstoned(reg, ID1, 1019));
    SC_CHECK(!sc_registry_is_tombstoned(reg, ID1, 1020));
    SC_CHECK_INT(APPLY(reg, "vm0", "a", 3, 1019, chg, ID1 ":Scheduled"), 0);
    SC_CHECK_STR(chg, "EndedCopy");
    SC_CHECK_INT(sc_registry_tick(reg, 1020, &ch), 0);
    sc_registry_changes_release(&ch);
    SC_CHECK_INT(sc_registry_tombstone_count(reg), 0);
    SC_CHECK_INT(APPLY(reg, "vm0", "a", 4, 1030, chg, ID1 ":Scheduled"), 0);
    SC_CHECK_STR(chg, "New");

    /* the bound: the oldest end goes first; one older than all kept is not added */
    SC_CHECK_INT(sc_registry_set_tombstone_ms(reg, 0), 0); /* the default, 7 days */
    for (int i = 0; i < SC_REGISTRY_MAX_TOMBSTONES; i++) {
        snprintf(id, sizeof(id), "T%06d", i);
        if (sc_registry_add_tombstone(reg, id, SC_REG_ENDED, 10000 + i) < 0) {
            SC_FAILF("tombstone %d not added", i);
            break;
        }
    }
    SC_CHECK_INT(sc_registry_tombstone_count(reg), SC_REGISTRY_MAX_TOMBSTONES);
    SC_CHECK_INT(sc_registry_add_tombstone(reg, "OLDER", SC_REG_ENDED, 5), 0);
    SC_CHECK(!sc_registry_is_tombstoned(reg, "OLDER", 20000));
    SC_CHECK_INT(sc_registry_add_tombstone(reg, "NEWEST", SC_REG_CANCELLED, 90000), 0);
    SC_CHECK_INT(sc_registry_tombstone_count(reg), SC_REGISTRY_MAX_TOMBSTONES);
    SC_CHECK(sc_registry_is_tombstoned(reg, "newest", 90001));
    SC_CHECK(!sc_registry_is_tombstoned(reg, "T000000", 90001));
    SC_CHECK(sc_registry_is_tombstoned(reg, "t000001", 90001));
    sc_registry_destroy(&reg);
}

/* After a restart the daemon gives back the tombstones (ended before it started: negative
 * monotonic times) and each event's content freshness: old copies stay ignored. */
SC_TEST(restore_of_tombstones_and_freshness)
{
    sc_registry_t *reg = NULL;
    sc_doc_t *doc = s_doc(1, (const char *const[]){ID2 ":Scheduled:vm1,vm4"}, 1);
    const char *witnesses[] = {"vm1"};
    sc_reg_restore_t r = {0};
    char chg[256];

    SC_REQUIRE(doc != NULL);
    SC_REQUIRE(sc_registry_new(0, &reg) == 0);
    SC_CHECK_INT(sc_registry_add_tombstone(reg, ID1, SC_REG_ENDED, -3600 * 1000), 0);
    SC_CHECK_INT(sc_registry_add_tombstone(reg, ID1, SC_REG_ENDED, -3600 * 1000), 0); /* again */
    SC_CHECK_INT(sc_registry_tombstone_count(reg), 1);
    r.ev = &doc->events[0];
    r.phase = SC_REG_ACTIVE;
    r.witnesses = witnesses;
    r.n_witnesses = 1;
    r.observed_ms = 50000;
    SC_CHECK_INT(sc_registry_restore_event(reg, &r), 0);
    SC_CHECK_INT(sc_registry_find(reg, ID2)->observed_ms, 50000);
    SC_CHECK_INT(
        APPLY_SEEN(reg, "vm5", "e", 1, 40000, false, 10, chg, ID1 ":Started", ID2 ":Scheduled:vm1"),
        0);
    SC_CHECK_STR(chg, "EndedCopy StaleCopy");
    SC_CHECK_STR(s_res(reg, ID2), "vm1,vm4");
    SC_CHECK(sc_registry_find(reg, ID1) == NULL);
    sc_doc_destroy(&doc);
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
    SC_RUN(pending_vote_yields_to_a_witness_that_saw_it_go);
    SC_RUN(evicted_member_keeps_no_event);
    SC_RUN(seeded_boot_is_not_a_fresh_view);
    SC_RUN(bad_input);
    SC_RUN(event_limit);
    SC_RUN(stale_resend_by_blind_member_does_not_shrink_resources);
    SC_RUN(lower_incarnation_from_same_boot_ignored);
    SC_RUN(older_observed_copy_ignored);
    SC_RUN(tombstoned_id_ignored);
    SC_RUN(tombstone_expiry);
    SC_RUN(restore_of_tombstones_and_freshness);
    return sc_test_done();
}
