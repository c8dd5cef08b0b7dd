/* The executor: per-event state, decisions, alerts, approvals, the plan round and its orders,
 * delegated approvals that time out (orders sent again: sc_coord_effect.c). */
#include "sc_coord_int.h"

#include "sc_error.h"
#include "sc_log.h"
#include "sc_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_ORDERS_PER_ROUND 64  /* prepare and recover orders proposed in one plan round */
#define S_VIEW_STALE_MS 200    /* a round that decides rebuilds an older view of the plan */
#define S_VIA_TIMEOUT_MS 15000 /* a delegated approval without answer is retried after */

bool sc_coord_may_act(const sc_coord_t *c)
{
    return sc_coord_is_leader(c) && !c->in_grace && sc_coord_raft_may_act(c);
}

/* ---- event states -------------------------------------------------------------------- */

sc_cevstate_t *sc_coord_exec_ev_find(sc_coord_t *c, const char *id)
{
    for (size_t i = 0; i < c->n_ev; i++)
        if (sc_event_id_equal(c->ev[i]->id, id))
            return c->ev[i];
    return NULL;
}

void sc_coord_exec_ev_free(sc_cevstate_t *e)
{
    if (!e)
        return;
    free(e->sent_ms);
    free(e->held_ms);
    free(e->unasked_ms);
    free(e->drain_retry_ms);
    free(e->waiting_for);
    free(e);
}

sc_cevstate_t *sc_coord_exec_ev_get(sc_coord_t *c, const char *id)
{
    sc_cevstate_t *e = sc_coord_exec_ev_find(c, id), **nv;
    if (e)
        return e;
    if (c->n_ev >= SC_REGISTRY_MAX_EVENTS || !sc_event_id_valid(id))
        return NULL;
    if (!(e = calloc(1, sizeof(*e))) || !(e->sent_ms = calloc(c->n_members, sizeof(*e->sent_ms))) ||
        !(e->held_ms = calloc(c->n_members, sizeof(*e->held_ms))) ||
        !(e->unasked_ms = calloc(c->n_members, sizeof(*e->unasked_ms))) ||
        !(e->drain_retry_ms = calloc(c->n_members, sizeof(*e->drain_retry_ms))) ||
        !(nv = realloc(c->ev, (c->n_ev + 1) * sizeof(*nv)))) {
        sc_coord_exec_ev_free(e);
        return NULL;
    }
    snprintf(e->id, sizeof(e->id), "%s", id);
    sc_backoff_init(&e->backoff, 1000, 30000);
    c->ev = nv;
    c->ev[c->n_ev++] = e;
    return e;
}

static void s_ev_remove(sc_coord_t *c, sc_cevstate_t *e)
{
    for (size_t i = 0; i < c->n_ev; i++)
        if (c->ev[i] == e) {
            memmove(&c->ev[i], &c->ev[i + 1], (c->n_ev - i - 1) * sizeof(*c->ev));
            c->n_ev--;
            break;
        }
    sc_coord_exec_ev_free(e);
}

/* ---- decisions ----------------------------------------------------------------------- */

/* Proposes a decision (sc_coord_raft_propose): appended to the log in the turn's transaction;
 * applied to the store's tables and, through sc_store_on_decide, to the state once committed.
 * Only a leader proposes: a follower keeps what it hears in memory and writes nothing (its log
 * is its leader's). A store failure is fatal for the daemon: it must not act on what it could
 * not record. */
int sc_coord_exec_decide(sc_coord_t *c, sc_dlog_kind_t kind, json_object *data, const char *reason)
{
    int rc = 0;

    if (sc_coord_is_leader(c) && (rc = sc_coord_raft_propose(c, kind, data, reason, NULL)) < 0)
        sc_log_err("decision not recorded", "kind=%s rc=%s why=\"%s\"", sc_dlog_kind_name(kind),
                   sc_errname(rc), sc_log_q(sc_store_errmsg(c->store)));
    json_object_put(data);
    return rc;
}

const sc_cs_event_t *sc_coord_exec_cs(const sc_coord_t *c, const char *id)
{
    return sc_cstate_event_find(c->cs, id);
}

/* The IMDS-shaped JSON of one event, or NULL. */
static json_object *s_event_json(const sc_event_t *ev)
{
    json_object *o = NULL;

    return sc_event_to_json(ev, &o) < 0 ? NULL : o;
}

static int s_log_event_seen(sc_coord_t *c, const sc_reg_event_t *re, const char *reason)
{
    json_object *d = json_object_new_object(), *seen = json_object_new_array();
    for (size_t i = 0; i < re->n_ever_seen_by; i++)
        json_object_array_add(seen, json_object_new_string(re->ever_seen_by[i]));
    json_object_object_add(d, "event", s_event_json(&re->ev));
    json_object_object_add(d, "seen_by", seen);
    if (re->ev.has_not_before)
        json_object_object_add(d, "not_before", json_object_new_int64(re->ev.not_before));
    /* the merge rule judges copies re-sent after a restart against it (sc_registry.h) */
    json_object_object_add(d, "observed_ms", json_object_new_int64(re->observed_ms));
    return sc_coord_exec_decide(c, SC_DLOG_EVENT_SEEN, d, reason);
}

static int s_log_simple(sc_coord_t *c, sc_dlog_kind_t kind, const char *id, const char *how,
                        const char *reason)
{
    json_object *d = json_object_new_object();
    json_object_object_add(d, "event_id", json_object_new_string(id));
    json_object_object_add(d, "how", json_object_new_string(how));
    return sc_coord_exec_decide(c, kind, d, reason);
}

/* Records what the registry changed. */
/* An eviction seen to start is noted in our own store (sc_store_eviction_note): a follower
 * restarted before a leader decided it would forget that its member is gone (nemesis seeds 62
 * and 99: the member stayed, dead, owing recovers, its fault domain busy for good). Best
 * effort: a failure is logged. */
static void s_note_eviction(sc_coord_t *c, const sc_reg_event_t *re)
{
    json_object *j = NULL;
    int rc;

    const sc_cs_event_t *ce = sc_coord_exec_cs(c, re->ev.id);

    if (sc_plan_event_class(&re->ev, &c->o.policy) != SC_CLASS_EVICT ||
        (ce && (ce->started_ms || ce->phase != SC_REG_ACTIVE)))
        return; /* not an eviction, or its start (or end) decided already: the state has it */
    if ((rc = sc_event_to_json(&re->ev, &j)) >= 0)
        rc = sc_store_eviction_note(c->store, re->ev.id, json_object_to_json_string(j),
                                    sc_wall_ms());
    json_object_put(j);
    if (rc < 0)
        sc_log_warn("eviction not noted", "event=%s rc=%s", re->ev.id, sc_errname(rc));
}

int sc_coord_exec_handle_changes(sc_coord_t *c, sc_registry_changes_t *ch)
{
    int rc = 0;
    for (size_t i = 0; i < ch->n && rc >= 0; i++) {
        const sc_reg_change_t *x = &ch->items[i];
        const sc_reg_event_t *re = sc_registry_find(c->reg, x->id);

        c->dirty = true;
        sc_log_info("event change", "event=%s change=%s start=%s", x->id,
                    sc_reg_change_name(x->kind), sc_start_kind_name(x->start_kind));
        switch (x->kind) {
        case SC_CHG_NEW:
        case SC_CHG_UPDATED:
            if (x->kind == SC_CHG_NEW)
                c->count.events_new++;
            if (re)
                rc = s_log_event_seen(c, re, x->kind == SC_CHG_NEW ? "new event" : "event changed");
            break;
        case SC_CHG_NEW_STARTED:
        case SC_CHG_STARTED:
            if (re && !sc_coord_rehearse_owns(c, re->ev.id))
                s_note_eviction(c, re);
            if (re)
                rc = s_log_event_seen(c, re, "event started");
            if (rc >= 0)
                rc = s_log_simple(c, SC_DLOG_EVENT_STARTED, x->id,
                                  x->start_kind == SC_START_APPROVED ? "approved"
                                  : x->start_kind == SC_START_DIRECT ? "host_failure"
                                                                     : "not_before",
                                  x->start_kind == SC_START_APPROVED
                                      ? "started after our approval"
                                      : "started without our approval (forced)");
            break;
        case SC_CHG_ENDED:
            rc = s_log_simple(c, SC_DLOG_EVENT_ENDED, x->id, "completed",
                              "event disappeared after it started");
            break;
        case SC_CHG_CANCELLED:
            rc = s_log_simple(c, SC_DLOG_EVENT_ENDED, x->id, "cancelled",
                              "event disappeared while scheduled");
            break;
        default: break;
        }
    }
    sc_registry_changes_release(ch);
    return rc;
}

/* The event the state has just closed (its EVENT_CLOSED applied: by the leader as it decides
 * it, by a follower as it follows) leaves the registry, with a tombstone, so that neither a late
 * report nor a new leader's sync takes it up again. A registry rebuilt at a restart from an
 * older state may still hold it active: its tombstone then takes the state's phase and end. */
void sc_coord_exec_forget_closed(sc_coord_t *c, const char *id)
{
    const sc_cs_closed_t *cl = sc_cstate_closed_at(c->cs, sc_cstate_n_closed(c->cs) - 1);
    const sc_reg_event_t *re;
    bool active;

    sc_cevstate_t *e = id ? sc_coord_exec_ev_find(c, id) : NULL;

    if (e) /* its timers too: a follower that leads next must not hold it in flight */
        s_ev_remove(c, e);
    if (!id || !cl || !sc_event_id_equal(cl->id, id) || !(re = sc_registry_find(c->reg, id)))
        return;
    active = re->phase == SC_REG_ACTIVE;
    if (sc_registry_remove_event(c->reg, cl->id) < 0) {
        sc_log_warn("closed event kept in the registry (no memory for its tombstone)", "event=%s",
                    cl->id);
        return;
    }
    if (active && (cl->phase == SC_REG_ENDED || cl->phase == SC_REG_CANCELLED))
        sc_registry_add_tombstone(
            c->reg, cl->id, cl->phase,
            sc_mono_ms() - (sc_wall_ms() - (cl->ended_ms ? cl->ended_ms : sc_wall_ms())));
}

/* A new leader's registry (the agents' reports it kept while it followed) against the state:
 * what nobody decided — events first seen, started, over while nobody led — is decided now. */
int sc_coord_exec_sync_registry(sc_coord_t *c)
{
    sc_registry_changes_t ch = {0};
    sc_reg_change_t *items = calloc(2 * sc_registry_count(c->reg) + 1, sizeof(*items));
    size_t n = 0;

    if (!items)
        return -ENOMEM;
    for (size_t i = 0; i < sc_registry_count(c->reg); i++) {
        const sc_reg_event_t *re = sc_registry_event_at(c->reg, i);
        const sc_cs_event_t *ce = sc_coord_exec_cs(c, re->ev.id);
        sc_reg_change_t x = {.start_kind = re->start_kind};
        bool started = re->start_kind != SC_START_NONE;

        snprintf(x.id, sizeof(x.id), "%s", re->ev.id);
        if (!ce && re->phase == SC_REG_ACTIVE) {
            x.kind = started ? SC_CHG_NEW_STARTED : SC_CHG_NEW;
        } else if (!ce && started && re->phase == SC_REG_ENDED &&
                   sc_plan_event_class(&re->ev, &c->o.policy) == SC_CLASS_EVICT) {
            /* an eviction over while nobody led: its member leaves (nemesis seed 62: it stayed,
             * owed recovers no agent could run, its fault domain busy for good) */
            x.kind = SC_CHG_NEW_STARTED;
            items[n++] = x;
            x.kind = SC_CHG_ENDED;
        } else if (!ce || ce->phase != SC_REG_ACTIVE) {
            continue; /* over before anyone decided it (nothing to drain or recover), or decided */
        } else if (re->phase == SC_REG_ENDED || re->phase == SC_REG_CANCELLED) {
            x.kind = re->phase == SC_REG_ENDED ? SC_CHG_ENDED : SC_CHG_CANCELLED;
        } else if (started && ce->start_kind == SC_START_NONE) {
            x.kind = SC_CHG_STARTED;
        } else {
            continue;
        }
        items[n++] = x;
    }
    ch.items = items;
    ch.n = n;
    if (n)
        sc_log_notice("new leader: decided what its predecessor had not", "changes=%zu", n);
    return sc_coord_exec_handle_changes(c, &ch); /* releases ch */
}

/* ---- planning and acting ------------------------------------------------------------- */

/* Raises an alert once per (kind, event, dedup, attempt): a decision (whose key the state
 * remembers: a restart or a new leader does not say it again), a log line, a count. dedup: the
 * member's name for the planner's alerts; attempt: the drain attempt it is about
 * (prepare_failed, drain_retry), else 0. */
int sc_coord_exec_alert(sc_coord_t *c, sc_alert_t kind, const char *event_id, const char *member,
                        const char *dedup, const char *message, int attempt)
{
    json_object *d;
    char key[SC_CSTATE_ALERT_KEY_MAX + 1];

    sc_cstate_alert_key(key, sizeof(key), sc_alert_name(kind), event_id, dedup, attempt);
    if (sc_cstate_alert_raised(c->cs, key) || !sc_coord_is_leader(c))
        return 0;
    if (kind > SC_ALERT_NONE && kind < SC_ALERT_MAX)
        c->count.alerts[kind]++;
    d = json_object_new_object();
    json_object_object_add(d, "alert", json_object_new_string(sc_alert_name(kind)));
    json_object_object_add(d, "event_id", event_id ? json_object_new_string(event_id) : NULL);
    json_object_object_add(d, "member", member ? json_object_new_string(member) : NULL);
    json_object_object_add(d, "message", json_object_new_string(message));
    if (attempt)
        json_object_object_add(d, "attempt", json_object_new_int(attempt));
    json_object_object_add(d, "key", json_object_new_string(key));
    sc_log_warn("ALERT", "alert=%s event=%s member=%s why=\"%s\"", sc_alert_name(kind),
                event_id ? event_id : "-", member ? member : "-", sc_log_q(message));
    return sc_coord_exec_decide(c, SC_DLOG_ALERT, d, message);
}

static int s_approve(sc_coord_t *c, const sc_plan_input_t *in, const sc_action_t *a)
{
    const char *ids[SC_DOC_MAX_EVENTS];
    size_t n = 0;
    int rc;

    if (!sc_coord_may_act(c))
        return 0;
    {
        const sc_event_t *evs[SC_DOC_MAX_EVENTS];
        size_t k = 0;
        for (size_t i = 0; i < a->n_events && k < SC_DOC_MAX_EVENTS; i++)
            if (!sc_coord_rehearse_owns(c, in->events[a->events[i]].ev->id))
                evs[k++] = in->events[a->events[i]].ev;
        if (k && sc_coord_handover_before_approval(c, evs, k))
            return 0; /* our successor approves */
    }
    for (size_t i = 0; i < a->n_events && n < SC_DOC_MAX_EVENTS; i++) {
        const char *id = in->events[a->events[i]].ev->id;
        sc_cevstate_t *e = sc_coord_exec_ev_get(c, id);
        if (e && sc_coord_rehearse_owns(c, id)) { /* nothing is POSTed for a rehearsal */
            e->touched = true;
            if ((rc = sc_coord_rehearse_approve(c, id, a->reason)) < 0)
                return rc;
            continue;
        }
        if (!e)
            continue;
        e->touched = true;
        ids[n++] = e->id;
    }
    if (!n)
        return 0;
    /* the intent's entry makes them INTENT, its answer APPROVED, FAILED or UNKNOWN
     * (sc_cstate); the POST or the delegation is its effect, once committed */
    {
        json_object *d = NULL;
        const char *via = a->kind == SC_ACT_APPROVE_VIA ? c->members[a->member].name : NULL;
        if ((rc = sc_approver_intent_data(c->approver, via, ids, n, &d)) < 0) {
            sc_log_err("approval not proposed", "events=%zu first=%s rc=%s", n, ids[0],
                       sc_errname(rc));
            return rc;
        }
        return sc_coord_exec_decide(c, SC_DLOG_APPROVAL_INTENT, d, a->reason);
    }
}

static int s_act(sc_coord_t *c, const sc_plan_input_t *in, const sc_action_t *a)
{
    const sc_plan_event_t *pe =
        a->event != SC_PLAN_NONE && a->kind != SC_ACT_MEMBER_GONE ? &in->events[a->event] : NULL;
    sc_cevstate_t *e = pe ? sc_coord_exec_ev_get(c, pe->ev->id) : NULL;
    sc_cmember_t *m = a->member != SC_PLAN_NONE ? &c->members[a->member] : NULL;
    json_object *d;
    int rc = 0;

    /* An alert keeps no event open: one that is over with a recover_failed VM is alerted
     * every round (de-duplicated below) and must still close. */
    if (e && a->kind != SC_ACT_ALERT)
        e->touched = true;
    switch (a->kind) {
    case SC_ACT_PREPARE:
    case SC_ACT_RECOVER: {
        bool prep = a->kind == SC_ACT_PREPARE;
        const sc_cs_event_t *ce;
        int attempt;
        if (!e || !m || !sc_coord_may_act(c))
            return 0;
        /* A prepare carries the planner's attempt; a recover belongs to the VM's attempt, a
         * new one after a rollback (the agent runs each phase of an attempt once: the
         * rolled-back VM impacted since then is recovered again). */
        ce = sc_coord_exec_cs(c, e->id);
        attempt = prep || !ce
                      ? a->attempt
                      : ce->attempt[a->member] + (ce->drain[a->member] == SC_DRAIN_ROLLED_BACK);
        if (attempt < 1)
            attempt = 1;
        d = json_object_new_object();
        json_object *vms = json_object_new_array();
        json_object_object_add(d, "event_id", json_object_new_string(e->id));
        json_object_array_add(vms, json_object_new_string(m->name));
        json_object_object_add(d, "vms", vms);
        json_object_object_add(d, "attempt", json_object_new_int(attempt));
        /* the order goes out once the entry is committed (s_order_effect) */
        return sc_coord_exec_decide(c, prep ? SC_DLOG_PREPARE_ORDERED : SC_DLOG_RECOVER_ORDERED, d,
                                    a->reason);
    }
    case SC_ACT_APPROVE:
    case SC_ACT_APPROVE_VIA: return s_approve(c, in, a);
    case SC_ACT_MEMBER_GONE:
        if (!m || sc_cstate_member(c->cs, a->member)->gone)
            return 0;
        d = json_object_new_object();
        json_object_object_add(d, "name", json_object_new_string(m->name));
        json_object_object_add(d, "state", json_object_new_string("gone"));
        if (m->boot_id[0]) /* only another agent process brings it back (sc_coord_members_on_hello)
                            */
            json_object_object_add(d, "boot_id", json_object_new_string(m->boot_id));
        rc = sc_coord_exec_decide(c, SC_DLOG_MEMBER, d, a->reason);
        sc_log_notice("member gone", "member=%s why=\"%s\"", m->name, sc_log_q(a->reason));
        {
            sc_registry_changes_t ch = {0};
            if (sc_registry_forget_member(c->reg, m->name, sc_mono_ms(), &ch) >= 0 && rc >= 0)
                rc = sc_coord_exec_handle_changes(c, &ch);
            else
                sc_registry_changes_release(&ch);
        }
        return rc;
    case SC_ACT_ALERT:
        return sc_coord_exec_alert(c, a->alert, e ? e->id : NULL, m ? m->name : NULL,
                                   m ? m->name : "-", a->reason, a->attempt);
    default: return 0;
    }
}

/* Builds the planner's input, runs it, carries out its actions. */
int sc_coord_exec_plan_round(sc_coord_t *c, bool act)
{
    size_t nreg = sc_registry_count(c->reg), nvm_total = 0, nseen_total = 0, nres_total = 0;
    sc_plan_member_t *pm = calloc(c->n_members, sizeof(*pm));
    sc_plan_event_t *pe = calloc(nreg ? nreg : 1, sizeof(*pe));
    size_t *listed = calloc(c->n_members, sizeof(*listed)); /* member -> 1 + event it is in */
    sc_plan_vm_t *vms = NULL;
    size_t *seen = NULL;
    const char **strangers = NULL; /* names in Resources that are not members (borrowed) */
    sc_plan_output_t out = {0};
    sc_plan_input_t in = {0};
    sc_policy_t policy = c->o.policy;
    int64_t now = sc_mono_ms();
    int rc = 0;

    if (!pm || !pe || !listed) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < c->n_members; i++) {
        sc_cmember_t *m = &c->members[i];
        const sc_cs_member_t *cm = sc_cstate_member(c->cs, i);
        pm[i] = (sc_plan_member_t){.name = m->name,
                                   .fault_domain = cm->fault_domain,
                                   .update_domain = cm->update_domain,
                                   .alive = m->alive,
                                   .gone = cm->gone,
                                   .is_self = m->is_self,
                                   .blind = m->blind,
                                   .unheard = !m->alive && !m->last_msg_ms};
    }
    for (size_t i = 0; i < nreg; i++) {
        const sc_reg_event_t *re = sc_registry_event_at(c->reg, i);
        const sc_cs_event_t *e = sc_coord_exec_cs(c, re->ev.id);
        nvm_total += re->ev.n_resources;
        nres_total += re->ev.n_resources;
        /* + room for members Azure may have dropped from Resources after their prepare */
        for (size_t k = 0; e && k < c->n_members; k++)
            nvm_total += e->drain[k] != SC_DRAIN_NONE;
        nseen_total += re->n_seen_by + 1; /* + us, for a rehearsal's (below) */
    }
    vms = calloc(nvm_total ? nvm_total : 1, sizeof(*vms));
    seen = calloc(nseen_total ? nseen_total : 1, sizeof(*seen));
    strangers = calloc(nres_total ? nres_total : 1, sizeof(*strangers));
    if (!vms || !seen || !strangers) {
        rc = -ENOMEM;
        goto out;
    }
    nvm_total = nseen_total = nres_total = 0;
    for (size_t i = 0; i < nreg; i++) {
        const sc_reg_event_t *re = sc_registry_event_at(c->reg, i);
        sc_cevstate_t *le = sc_coord_exec_ev_get(c, re->ev.id);
        const sc_cs_event_t *e = sc_coord_exec_cs(c, re->ev.id);
        sc_plan_event_t *p = &pe[in.n_events];

        /* an event not decided (EVENT_SEEN) is not planned: nothing known of its drains */
        if (!le || !e)
            continue;
        le->touched = false;
        p->ev = &re->ev;
        p->phase = re->phase;
        /* how it started as decided, when it was (a report heard while following may have
         * missed our approval: the registry would call it forced) */
        p->start_kind = e->start_kind != SC_START_NONE ? e->start_kind : re->start_kind;
        p->first_seen_ms = re->first_seen_ms;
        p->rehearsal = e->rehearsal != 0;
        p->approval = e->approval;
        p->retry_at_ms = le->retry_at_ms;
        p->vms = &vms[nvm_total];
        p->strangers = &strangers[nres_total];
        for (size_t r = 0; r < re->ev.n_resources; r++) {
            size_t mi = sc_coord_members_find(c, re->ev.resources[r]);
            if (mi == SC_PLAN_NONE) { /* not ours: the planner withholds the approval */
                strangers[nres_total + p->n_strangers++] = re->ev.resources[r];
                continue;
            }
            if (listed[mi] == in.n_events + 1) /* named twice */
                continue;
            listed[mi] = in.n_events + 1;
            vms[nvm_total + p->n_vms] =
                (sc_plan_vm_t){.member = mi,
                               .drain = sc_coord_raft_progress_drain(c, e, mi),
                               .attempt = e->attempt[mi],
                               .retry_at_ms = le->drain_retry_ms[mi]};
            p->n_vms++;
        }
        /* Rule 3: a VM whose prepare was ordered stays in the plan after Azure dropped it from
         * Resources (the event was updated): busy until recovered when the event is over. */
        for (size_t mi = 0; mi < c->n_members; mi++) {
            if (e->drain[mi] == SC_DRAIN_NONE || listed[mi] == in.n_events + 1)
                continue;
            vms[nvm_total + p->n_vms++] =
                (sc_plan_vm_t){.member = mi,
                               .drain = sc_coord_raft_progress_drain(c, e, mi),
                               .dropped = true,
                               .attempt = e->attempt[mi],
                               .retry_at_ms = le->drain_retry_ms[mi]};
        }
        nvm_total += p->n_vms;
        nres_total += p->n_strangers;
        p->seen_by = &seen[nseen_total];
        for (size_t s = 0; s < re->n_seen_by; s++) {
            size_t mi = sc_coord_members_find(c, re->seen_by[s]);
            if (mi != SC_PLAN_NONE)
                seen[nseen_total + p->n_seen_by++] = mi;
        }
        /* a rehearsal's event: no IMDS holds it, we "see" it (its approval is simulated) */
        if (e->rehearsal)
            seen[nseen_total + p->n_seen_by++] = c->self;
        nseen_total += p->n_seen_by;
        in.n_events++;
    }
    in.members = pm;
    in.n_members = c->n_members;
    in.events = pe;
    sc_coord_members_spread_check(c);
    policy.serialise_by = sc_coord_serialise_by(c); /* auto resolved */
    in.policy = &policy;
    in.now_wall_s = sc_wall_ms() / 1000;
    in.now_ms = now;
    sc_coord_forecast_fill(c, &in, pe); /* an input: the planner reads no clock or store */
    rc = sc_plan(&in, &out);
    if (rc < 0) {
        sc_log_err("planner refused its input", "rc=%s", sc_errname(rc));
        goto out;
    }
    for (size_t i = 0; i < out.n_members && i < c->n_members; i++)
        c->members[i].state = out.member_state[i];
    for (size_t i = 0; i < out.n_events; i++) {
        sc_cevstate_t *e = sc_coord_exec_ev_find(c, pe[i].ev->id);
        if (e) {
            free(e->waiting_for);
            e->waiting_for = out.waiting_for[i] ? strdup(out.waiting_for[i]) : NULL;
        }
    }
    /* approved (or possibly: in flight, unknown) as decided: a start is ours, not forced —
     * on a follower too, which may lead next */
    for (size_t i = 0; i < sc_cstate_n_events(c->cs); i++) {
        const sc_cs_event_t *e = sc_cstate_event_at(c->cs, i);
        if (e->approval == SC_APPROVAL_INTENT || e->approval == SC_APPROVAL_APPROVED ||
            e->approval == SC_APPROVAL_UNKNOWN)
            sc_registry_mark_approved(c->reg, e->ev.id);
    }
    /* a follower's timers of an event the state no longer holds (closed by the leader); a
     * leader's of one neither decided nor reported any more */
    for (size_t i = c->n_ev; i-- > 0;)
        if (!sc_coord_exec_cs(c, c->ev[i]->id) && (!act || !sc_registry_find(c->reg, c->ev[i]->id)))
            s_ev_remove(c, c->ev[i]);
    if (!act) /* a follower's view: the states and words of the plan, nothing carried out */
        goto out;
    /* the plan's view (schedcoordctl plan, the forecasts in status): not on a decision's path.
     * A round that decides leaves it to the next round, due once what it proposed commits,
     * unless the view is older than S_VIEW_STALE_MS (at 1,000 members its JSON took 0.1-0.3
     * ms of the round that decides the approval, 2026-11-28) */
    bool decides = false;
    for (size_t i = 0; i < out.n_actions && !decides; i++)
        decides = out.actions[i].kind != SC_ACT_ALERT;
    if (!decides || now - c->view_ms >= S_VIEW_STALE_MS) {
        sc_coord_forecast_note(c, &in, &out);
        c->view_ms = now;
    }
    sc_coord_notify_plan(c, &in, &out); /* event_scheduled with the plan, before its orders */
    /* MEMBER_GONE changes the registry, which in[] borrows from: carry it out last. Orders
     * past the first S_ORDERS_PER_ROUND wait for the next round, which derives them again
     * from the applied state (a fault domain of 334 VMs took 15-64 ms of one turn). */
    for (size_t i = 0, orders = 0; i < out.n_actions && rc >= 0; i++) {
        const sc_action_t *a = &out.actions[i];
        bool order = a->kind == SC_ACT_PREPARE || a->kind == SC_ACT_RECOVER;
        if (a->kind == SC_ACT_MEMBER_GONE)
            continue;
        if (order && orders >= S_ORDERS_PER_ROUND) {
            c->dirty = true;
            continue;
        }
        orders += order;
        rc = s_act(c, &in, a);
    }
    for (size_t i = 0; i < out.n_actions && rc >= 0; i++)
        if (out.actions[i].kind == SC_ACT_MEMBER_GONE) {
            rc = s_act(c, &in, &out.actions[i]);
            /* in.events may dangle now: no pruning this round */
            nreg = 0;
            in.n_events = 0;
        }
    /* Final events that owe nothing any more (the planner says: every VM that needed a recover
     * reported it, or is gone — an impacted VM that is down keeps its event) leave the
     * registry. */
    for (size_t i = 0; rc >= 0 && i < in.n_events && i < out.n_events; i++) {
        sc_cevstate_t *e = sc_coord_exec_ev_find(c, pe[i].ev->id);
        bool done = pe[i].phase != SC_REG_ACTIVE && e && !e->touched && out.closable[i];

        if (done) {
            char id[SC_EVENT_ID_MAX + 1];
            json_object *d = json_object_new_object();

            snprintf(id, sizeof(id), "%s", e->id);
            json_object_object_add(d, "event_id", json_object_new_string(id));
            if ((rc = sc_coord_exec_decide(c, SC_DLOG_EVENT_CLOSED, d, "over: nothing owed")) < 0)
                break;
            /* applied, it leaves the registry, which pe[i].ev points into, and its timers go
             * with it (sc_coord_exec_forget_closed, on every member): nothing reads it after
             * this point */
            sc_log_info("event closed", "event=%s", id);
            pe[i].ev = NULL;
            /* The rest of pe[] may now dangle: stop here, the next round goes on. */
            break;
        }
    }
out:
    sc_coord_notify_flush(c);
    sc_plan_output_release(&out);
    free(pm);
    free(listed);
    free(pe);
    free(vms);
    free(seen);
    free(strangers);
    c->last_plan_ms = now;
    return rc;
}

/* ---- timers -------------------------------------------------------------------------- */

/* Delegated approvals that were never answered are tried again: the answer entry fails every
 * event of the intent (sc_cstate), each retried from now. */
int sc_coord_exec_expire_via(sc_coord_t *c, int64_t now)
{
    int rc;

    if (!sc_coord_is_leader(c))
        return 0;
    for (size_t i = 0; i < sc_cstate_n_events(c->cs); i++) {
        const sc_cs_event_t *ce = sc_cstate_event_at(c->cs, i);
        sc_cevstate_t *e = sc_coord_exec_ev_get(c, ce->ev.id);
        int64_t intent = ce->intent;

        if (!e || ce->approval != SC_APPROVAL_INTENT || !intent || ce->via == SC_CSTATE_NONE)
            continue;
        if (!e->intent_ms) /* an intent from before our start: its clock starts now */
            e->intent_ms = now;
        if (now - e->intent_ms <= S_VIA_TIMEOUT_MS)
            continue;
        for (size_t k = 0; k < sc_cstate_n_events(c->cs); k++) {
            const sc_cs_event_t *other = sc_cstate_event_at(c->cs, k);
            sc_cevstate_t *le =
                other->intent == intent ? sc_coord_exec_ev_get(c, other->ev.id) : NULL;
            if (le) {
                le->intent_ms = 0;
                le->retry_at_ms = now;
            }
        }
        /* no answer: its POST may still land (unknown), never a failure that allows rollback */
        rc = sc_coord_exec_decide(
            c, SC_DLOG_APPROVAL_ANSWER,
            sc_approver_answer_data(intent, SC_E_TIMEOUT, 0, "no answer from the delegated agent"),
            "approval unknown: no answer from the delegate");
        if (rc < 0)
            return rc;
        c->dirty = true;
    }
    return 0;
}
