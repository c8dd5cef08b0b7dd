/* Leadership handed over on purpose (Raft's leader transfer, sc_elect_transfer: TimeoutNow):
 *  - once the leader's own VM is being drained for an event, so that the approver is alive to
 *    see the event through (recover hooks, the next fault domain) — the successor, a voter
 *    outside the event, drains the rest and approves it; the handover is made then, while the
 *    hooks run, not when the last of them reports (a new leader's first round would delay the
 *    approval: its term's entry, its take-over, its first plan round);
 *  - at the latest before the leader approves an event that impacts its own VM;
 *  - back to the preferred member (the first voter in --members order, Azure's "first VM")
 *    once nothing is in flight, never in the middle of a drain. */
#include "sc_coord_int.h"

#include "sc_elect.h"
#include "sc_log.h"
#include "sc_time.h"

#include <stdio.h>
#include <string.h>

#define S_PREFER_AFTER_MS 10000 /* a leader keeps the lead this long before giving it back */
#define S_CAUGHT_UP_MS 1000     /* a voter acknowledged us this recently: it is reachable */

/* Whether member mi's VM is one of ev's Resources. */
static bool s_impacts(const sc_coord_t *c, const sc_event_t *ev, size_t mi)
{
    for (size_t k = 0; k < ev->n_resources; k++)
        if (sc_coord_members_find(c, ev->resources[k]) == mi)
            return true;
    return false;
}

/* A voter, not us, not skip and not impacted by evs, with our whole log, heard from lately:
 * the first in members order; SC_ELECT_NONE when there is none. */
static size_t s_target_but(const sc_coord_t *c, const sc_event_t *const *evs, size_t n, int64_t now,
                           size_t skip)
{
    const sc_craft_t *r = c->raft;

    for (size_t k = 0; k < c->voters.n; k++) {
        size_t vi = c->voters.index[k];
        bool out = vi != c->self && vi != skip;
        for (size_t i = 0; out && i < n; i++)
            out = !s_impacts(c, evs[i], vi);
        if (out && r->match[vi] >= r->last_index && now - r->ack_ms[vi] <= S_CAUGHT_UP_MS)
            return vi;
    }
    return SC_ELECT_NONE;
}

static size_t s_target(const sc_coord_t *c, const sc_event_t *const *evs, size_t n, int64_t now)
{
    return s_target_but(c, evs, n, now, SC_ELECT_NONE);
}

/* Hands the lead to to; should to not take it within T (stopped since it was chosen: nemesis
 * seed 87), to the next voter that s_target_but gives for the same events. */
static bool s_transfer(sc_coord_t *c, size_t to, const sc_event_t *const *evs, size_t n,
                       int64_t now, const char *why)
{
    sc_elect_outputs_t out;
    int rc = sc_elect_transfer(c->raft->e, to, now, &out);
    size_t next;

    if (rc < 0) {
        sc_log_warn("handover not started", "to=%s rc=%d why=\"%s\"", c->members[to].name, rc,
                    sc_log_q(why));
        return false;
    }
    c->raft->handover_ms = now;
    next = s_target_but(c, evs, n, now, to);
    if (next != SC_ELECT_NONE)
        sc_elect_transfer_next(c->raft->e, next);
    sc_log_notice("handover", "to=%s next=%s term=%lld why=\"%s\"", c->members[to].name,
                  next != SC_ELECT_NONE ? c->members[next].name : "none",
                  (long long)sc_elect_term(c->raft->e), sc_log_q(why));
    sc_coord_raft_outputs(c, &out);
    return true;
}

/* Whether ev impacts our own VM for long enough that we would lose the lead meanwhile (a
 * Freeze over before any voter would time out leaves us leading when it ends: the stall check
 * makes us confirm the lead with a quorum round before acting again). */
static bool s_impacts_us(const sc_coord_t *c, const sc_event_t *ev)
{
    return s_impacts(c, ev, c->self) &&
           !(ev->type == SC_EVENT_FREEZE && ev->has_duration && ev->duration_s > 0 &&
             ev->duration_s * 1000 < c->o.election_ms);
}

bool sc_coord_handover_in_drain(sc_coord_t *c)
{
    const sc_event_t *evs[SC_DOC_MAX_EVENTS];
    size_t n = 0, to, nreg;
    int64_t now = sc_mono_ms();
    char why[256];

    if (c->voters.n <= 1 || !sc_coord_may_act(c) || sc_elect_state(c->raft->e) != SC_ELECT_LEADER)
        return false;
    nreg = sc_registry_count(c->reg);
    for (size_t i = 0; i < nreg && n < SC_DOC_MAX_EVENTS; i++) {
        const sc_reg_event_t *re = sc_registry_event_at(c->reg, i);
        const sc_cs_event_t *e = sc_coord_exec_cs(c, re->ev.id);
        if (!e || re->phase != SC_REG_ACTIVE || e->drain[c->self] == SC_DRAIN_NONE ||
            e->drain[c->self] >= SC_DRAIN_RECOVER_ORDERED ||
            (e->approval != SC_APPROVAL_NONE && e->approval != SC_APPROVAL_FAILED) ||
            sc_coord_rehearse_owns(c, re->ev.id) || !s_impacts_us(c, &re->ev))
            continue;
        evs[n++] = &re->ev;
    }
    /* none caught up yet (what this round proposed, say): the next round tries again, and
     * sc_coord_handover_before_approval at the approval */
    if (!n || (to = s_target(c, evs, n, now)) == SC_ELECT_NONE)
        return false;
    snprintf(why, sizeof(why), "%s %s drains our own VM: %s sees it through", evs[0]->id,
             sc_event_type_name(evs[0]->type), c->members[to].name);
    return s_transfer(c, to, evs, n, now, why);
}

bool sc_coord_handover_before_approval(sc_coord_t *c, const sc_event_t *const *evs, size_t n)
{
    int64_t now = sc_mono_ms();
    bool ours = false;
    size_t to;
    char why[256];

    if (c->voters.n <= 1)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s_impacts_us(c, evs[i]))
            ours = true;
    }
    if (!ours)
        return false;
    if ((to = s_target(c, evs, n, now)) == SC_ELECT_NONE) {
        sc_log_warn("our own VM is impacted and no voter outside the event is caught up: "
                    "approving it ourselves",
                    "event=%s", evs[0]->id);
        return false;
    }
    snprintf(why, sizeof(why), "%s %s impacts our own VM: %s approves it", evs[0]->id,
             sc_event_type_name(evs[0]->type), c->members[to].name);
    return s_transfer(c, to, evs, n, now, why);
}

void sc_coord_handover_prefer(sc_coord_t *c, int64_t now)
{
    const sc_craft_t *r = c->raft;
    size_t to;

    if (c->voters.n <= 1 || !sc_coord_raft_leads(c) || c->n_ev > 0 ||
        now - r->led_since_ms < S_PREFER_AFTER_MS || sc_elect_state(r->e) != SC_ELECT_LEADER ||
        (r->handover_ms && now - r->handover_ms < 2 * c->o.election_ms))
        return;
    to = s_target(c, NULL, 0, now);
    /* only to a member before us in the list: the preferred one, when it is back */
    if (to == SC_ELECT_NONE || to >= c->self)
        return;
    s_transfer(c, to, NULL, 0, now,
               "the preferred member (first voter of --members) is back and nothing "
               "is in flight");
}
