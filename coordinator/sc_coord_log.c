/* The decision log as a pipeline (etcd's Ready, hashicorp/raft's pipelined appends and group
 * commit): the leader proposes a loop turn's decisions as entries in one transaction
 * (sc_coord_raft_propose: appended, not applied), and at the end of the turn
 * (sc_coord_raft_flush) commits it — one fsync — and sends them to the voters without waiting.
 * Entries commit when a majority stored them (our own counted once durable); then, on every
 * member, they are applied to the store's tables and the state, in order. What an entry makes
 * the leader do — an order, an approval POST or delegation, a notification — is an effect,
 * queued as the entry is applied and carried out by the flush, after the transaction: never
 * before its commit, and only by the leader of the entry's term that may act
 * (sc_coord_effect.c). Nothing waits for a majority inside the decision path, and nothing is
 * thrown away: an entry is committed, or replaced by a newer term's leader, whose planner
 * derives again from the applied state what is still owed. With one voter, an entry is
 * committed once durable: it is applied at the end of its turn, after the fsync — the same
 * path as with three. A notification is told as its entry is applied, on the leader. The messages
 * (appends, acks, votes) are sc_coord_raft.c's. */
#include "sc_coord_int.h"

#include "sc_elect.h"
#include "sc_error.h"
#include "sc_log.h"
#include "sc_time.h"

#include <errno.h>

#define S_APPLY_PER_TURN 64 /* committed entries applied in one loop turn, at most */
#include <stdlib.h>
#include <string.h>

static void s_progress_prune(sc_coord_t *c);

/* ---- proposing, committing, applying ------------------------------------------------------ */

int sc_coord_raft_txn_commit(sc_coord_t *c)
{
    sc_craft_t *r = c->raft;
    int rc;

    if (!r || !r->txn)
        return 0;
    r->txn = false;
    if ((rc = sc_store_commit(c->store)) < 0) {
        sc_log_err("decisions not recorded", "rc=%s why=\"%s\"", sc_errname(rc),
                   sc_log_q(sc_store_errmsg(c->store)));
        sc_store_rollback(c->store);
        return rc;
    }
    if (sc_coord_is_leader(c))
        r->durable = r->last_index;
    return 0;
}

/* The turn's transaction, opened at its first write (one fsync for the whole turn). */
static int s_txn_open(sc_coord_t *c)
{
    sc_craft_t *r = c->raft;
    int rc;

    if (r->txn || sc_store_in_transaction(c->store))
        return 0;
    if ((rc = sc_store_begin(c->store)) < 0)
        return rc;
    r->txn = true;
    return 0;
}

/* Applies what is committed and not applied yet, in the turn's transaction (the leader's) or in
 * one of its own (a follower's: its log is durable already). */
int sc_coord_log_apply_committed(sc_coord_t *c)
{
    sc_craft_t *r = c->raft;
    int64_t upto;
    int rc;

    if (r->applied >= r->commit)
        return 0;
    /* the leader applies in the turn's transaction (its flags made durable with the turn's
     * next fsync: a restart applies again what it lost); a follower in one of the store's */
    if (sc_coord_is_leader(c) && (rc = s_txn_open(c)) < 0)
        return rc;
    /* bounded work per turn (etcd's MaxCommittedSizePerReady): the rest in the next turns,
     * which the loop takes at once (sc_coord_raft_next_ms) */
    upto = r->commit - r->applied > S_APPLY_PER_TURN ? r->applied + S_APPLY_PER_TURN : r->commit;
    if ((rc = sc_store_apply_through(c->store, r->applied + 1, upto)) < 0) {
        sc_log_err("committed entries not applied", "commit=%lld rc=%s why=\"%s\"",
                   (long long)r->commit, sc_errname(rc), sc_log_q(sc_store_errmsg(c->store)));
        return rc;
    }
    r->applied = upto;
    c->dirty = true;
    if (r->n_pg)
        s_progress_prune(c);
    return 0;
}

/* Leader: the highest index a majority of the voters stored (ours once durable), if of our
 * term, is committed. */
void sc_coord_log_advance_commit(sc_coord_t *c)
{
    sc_craft_t *r = c->raft;
    int64_t m[SC_VOTERS_MAX];
    size_t n = c->voters.n;

    r->match[c->self] = r->durable;
    for (size_t k = 0; k < n; k++)
        m[k] = r->match[c->voters.index[k]];
    for (size_t i = 1; i < n; i++) /* descending */
        for (size_t j = i; j > 0 && m[j - 1] < m[j]; j--) {
            int64_t t = m[j];
            m[j] = m[j - 1];
            m[j - 1] = t;
        }
    int64_t maj = m[n / 2];
    if (maj > r->commit && r->term_entry && maj >= r->term_entry) {
        r->commit = maj; /* an entry of our term (the first) is in it: Raft's commit rule */
        sc_coord_raft_set_log(c);
    }
}

int sc_coord_raft_propose(sc_coord_t *c, sc_dlog_kind_t kind, json_object *data, const char *reason,
                          int64_t *ret_index)
{
    sc_craft_t *r = c->raft;
    int64_t idx = 0, term;
    int rc;

    if (!sc_coord_is_leader(c))
        return SC_E_NOT_COMMITTED;
    term = sc_elect_term(r->e);
    if ((rc = s_txn_open(c)) < 0)
        return rc;
    /* appended only: applied once committed (one voter: once durable, at the flush) */
    if ((rc = sc_store_propose_json(c->store, term, kind, data, reason, sc_wall_ms(), &idx)) < 0)
        return rc;
    r->last_index = idx;
    r->last_term = term;
    if (kind == SC_DLOG_TERM && r->need_term_entry && !r->term_entry)
        r->term_entry = idx; /* the first entry of our term */
    sc_coord_raft_set_log(c);
    if (ret_index)
        *ret_index = idx;
    return 0;
}

/* ---- hook progress in flight ------------------------------------------------------------ */

/* Drops what is applied, or of another term than ours (a tenure over: its entries may be
 * replaced). */
static void s_progress_prune(sc_coord_t *c)
{
    sc_craft_t *r = c->raft;
    int64_t term = sc_elect_term(r->e);
    size_t k = 0;

    for (size_t i = 0; i < r->n_pg; i++)
        if (r->pg[i].index > r->applied && r->pg[i].term == term)
            r->pg[k++] = r->pg[i];
    r->n_pg = k;
}

void sc_coord_raft_progress_proposed(sc_coord_t *c, const char *event, size_t member,
                                     sc_msg_phase_t phase, sc_msg_hook_state_t state, int attempt)
{
    sc_craft_t *r = c->raft;
    sc_coord_progress_t *p;

    if (!r || !sc_coord_is_leader(c))
        return;
    s_progress_prune(c);
    if (r->n_pg == r->cap_pg) {
        size_t cap = r->cap_pg ? 2 * r->cap_pg : 64;
        sc_coord_progress_t *nv = realloc(r->pg, cap * sizeof(*nv));
        if (!nv)
            return; /* counted once applied, as before */
        r->pg = nv;
        r->cap_pg = cap;
    }
    p = &r->pg[r->n_pg++];
    *p = (sc_coord_progress_t){.index = r->last_index,
                               .term = sc_elect_term(r->e),
                               .member = member,
                               .phase = phase,
                               .state = state,
                               .attempt = attempt};
    snprintf(p->event, sizeof(p->event), "%s", event);
}

sc_drain_state_t sc_coord_raft_progress_drain(sc_coord_t *c, const sc_cs_event_t *ce, size_t member)
{
    sc_craft_t *r = c->raft;
    sc_drain_state_t d = ce->drain[member];
    int64_t term;

    if (!r || !r->n_pg)
        return d;
    term = sc_elect_term(r->e);
    for (size_t i = 0; i < r->n_pg; i++) {
        const sc_coord_progress_t *p = &r->pg[i];
        /* as sc_cstate applies it: an older attempt's report moves nothing */
        if (p->member != member || p->index <= r->applied || p->term != term ||
            p->attempt < ce->attempt[member] || !sc_event_id_equal(p->event, ce->ev.id))
            continue;
        d = sc_cstate_drain_next(
            d, sc_cstate_drain_input(p->phase, p->state, ce->phase == SC_REG_ACTIVE));
    }
    return d;
}

void sc_coord_raft_progress_free(sc_coord_t *c)
{
    if (!c->raft)
        return;
    free(c->raft->pg);
    c->raft->pg = NULL;
    c->raft->n_pg = c->raft->cap_pg = 0;
}

bool sc_coord_raft_settled(const sc_coord_t *c)
{
    return c->raft && c->raft->applied >= c->raft->plan_fence;
}

int64_t sc_coord_raft_last(const sc_coord_t *c)
{
    return c->raft ? c->raft->last_index : 0;
}

void sc_coord_raft_fence(sc_coord_t *c, int64_t since)
{
    if (c->raft && c->raft->last_index > since && c->raft->plan_fence < c->raft->last_index)
        c->raft->plan_fence = c->raft->last_index;
}

/* ---- effects ------------------------------------------------------------------------------ */

void sc_coord_raft_effect_push(sc_coord_t *c, const sc_dlog_entry_t *e, json_object *data)
{
    sc_craft_t *r = c->raft;
    sc_coord_effect_t *fx;

    if (!r || !sc_coord_is_leader(c) ||
        (e->kind != SC_DLOG_PREPARE_ORDERED && e->kind != SC_DLOG_RECOVER_ORDERED &&
         e->kind != SC_DLOG_APPROVAL_INTENT))
        return;
    if (r->n_fx == r->cap_fx) {
        size_t cap = r->cap_fx ? 2 * r->cap_fx : 64;
        sc_coord_effect_t *nv = realloc(r->fx, cap * sizeof(*nv));
        if (!nv) {
            sc_log_err("effect not queued (no memory): left to the resends and to intents' "
                       "resolution",
                       "index=%lld kind=%s", (long long)e->index, sc_dlog_kind_name(e->kind));
            r->resolve = true;
            return;
        }
        r->fx = nv;
        r->cap_fx = cap;
    }
    fx = &r->fx[r->n_fx];
    fx->e = *e;
    fx->e.data = NULL;
    fx->e.reason = strdup(e->reason ? e->reason : "");
    fx->data = json_object_get(data);
    if (!fx->e.reason || !fx->data) {
        free(fx->e.reason);
        json_object_put(fx->data);
        r->resolve = true;
        return;
    }
    r->n_fx++;
}

/* The effects queued, in log order: what each entry applied tells people (notifications, on
 * the leader), and what it makes the leader do, when it is the entry's term's leader and may
 * act. One it may not carry out is left to what repairs it: orders are sent again
 * (sc_coord_effect_resend_orders), open intents are resolved. */
static void s_run_effects(sc_coord_t *c)
{
    sc_craft_t *r = c->raft;
    sc_coord_effect_t *v = r->fx;
    size_t n = r->n_fx, i;

    r->fx = NULL;
    r->n_fx = r->cap_fx = 0;
    for (i = 0; i < n && !(i > 0 && sc_coord_turn_over(c)); i++) {
        const sc_dlog_entry_t *e = &v[i].e;
        bool ours = sc_coord_is_leader(c) && e->term == sc_elect_term(r->e);

        if (ours && sc_coord_may_act(c))
            sc_coord_effect_run(c, e, v[i].data);
        else if (e->kind == SC_DLOG_APPROVAL_INTENT)
            r->resolve = true; /* no POST made for it: settled when we may act */
        free(v[i].e.reason);
        json_object_put(v[i].data);
    }
    if (i < n) { /* the budget is spent: the rest first in the next turn, before newer ones */
        size_t left = n - i, more = r->n_fx;
        memmove(v, v + i, left * sizeof(*v));
        if (more) {
            sc_coord_effect_t *nv = realloc(v, (left + more) * sizeof(*v));
            if (nv) {
                memcpy(nv + left, r->fx, more * sizeof(*nv));
                v = nv;
            } else { /* no memory: those queued meanwhile are repaired later (resends) */
                for (size_t k = 0; k < more; k++) {
                    free(r->fx[k].e.reason);
                    json_object_put(r->fx[k].data);
                }
                r->resolve = true;
                more = 0;
            }
            free(r->fx);
        }
        r->fx = v;
        r->n_fx = r->cap_fx = left + more;
    } else {
        free(v);
    }
    sc_coord_notify_flush(c); /* the drain_started its orders gathered */
}

void sc_coord_raft_effects_run(sc_coord_t *c)
{
    if (c->raft && c->raft->n_fx)
        s_run_effects(c);
}

void sc_coord_raft_effects_free(sc_coord_t *c)
{
    sc_craft_t *r = c->raft;

    for (size_t i = 0; r && i < r->n_fx; i++) {
        free(r->fx[i].e.reason);
        json_object_put(r->fx[i].data);
    }
    if (r) {
        free(r->fx);
        r->fx = NULL;
        r->n_fx = r->cap_fx = 0;
    }
}

/* The end of a loop turn: the turn's transaction committed (one fsync), the new entries sent
 * to the voters (pipelined: nobody waits for them), the effects of what was applied carried
 * out — an approval's answer they propose is flushed the same way. 0 or a fatal error. */
int sc_coord_raft_flush(sc_coord_t *c)
{
    sc_craft_t *r = c->raft;
    int rc;

    for (int pass = 0; pass < 4; pass++) {
        /* sent before our own fsync (Raft §10.2.1: the leader writes its log in parallel with
         * replicating it; read from the open transaction): the voters' fsyncs run meanwhile.
         * Ours counts once durable, so a commit still needs a majority of stored copies. */
        if (sc_coord_is_leader(c))
            for (size_t k = 0; k < c->voters.n; k++) {
                size_t vi = c->voters.index[k];
                if (vi != c->self && r->next[vi] <= r->last_index)
                    sc_coord_raft_send_append(c, vi, 0, false);
            }
        if ((rc = sc_coord_raft_txn_commit(c)) < 0)
            return rc;
        if (sc_coord_is_leader(c))
            sc_coord_log_advance_commit(c);             /* one voter: ours is the majority */
        if ((rc = sc_coord_log_apply_committed(c)) < 0) /* a follower's left from its append */
            return rc;
        if (!r->n_fx)
            break; /* what was applied is made durable with the next turn's fsync */
        s_run_effects(c);
        if (r->n_fx && sc_coord_turn_over(c))
            break; /* the rest in the next turn, at once (sc_coord_raft_next_ms) */
    }
    return 0;
}
