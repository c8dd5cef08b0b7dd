/* Effects: what a committed entry, applied on the leader of its term that may act, makes it do
 * — an order sent to each of its VMs (PREPARE_ORDERED, RECOVER_ORDERED), an approval POSTed
 * through our own IMDS with its answer proposed, or delegated to the member that sees the
 * event (APPROVAL_INTENT). Carried out from one place, sc_coord_raft_flush (sc_coord_log.c),
 * after the turn's transaction: never before the entry's commit. And the orders not yet
 * acknowledged, sent again (a rollback's recover held while its event runs). */
#include "sc_coord_int.h"

#include "sc_error.h"
#include "sc_log.h"
#include "sc_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An approval POST's outcome: the retry (failure) or the backoff reset, the counters, the log,
 * and the answer proposed — by the leader that may act; after a change of tenure the answer
 * is left to the next leader, which resolves the intent (sc_coord_restart_resolve_intents). */
static void s_answer(sc_coord_t *c, json_object *ids, const char *reason,
                     const sc_approval_outcome_t *out)
{
    size_t n = ids ? json_object_array_length(ids) : 0;
    const char *first = n ? json_object_get_string(json_object_array_get_idx(ids, 0)) : "";
    int64_t now = sc_mono_ms();

    for (size_t i = 0; i < n; i++) {
        sc_cevstate_t *e =
            sc_coord_exec_ev_get(c, json_object_get_string(json_object_array_get_idx(ids, i)));
        if (!e)
            continue;
        if (out->rc == 0)
            sc_backoff_reset(&e->backoff);
        else
            e->retry_at_ms = now + sc_backoff_next(&e->backoff, out->retry_after_ms);
    }
    if (out->rc == 0) {
        c->count.posts_ok++;
        sc_log_notice("approved", "events=%zu first=%s http=%ld intent=%lld why=\"%s\"", n, first,
                      out->http_status, (long long)out->intent_index, sc_log_q(reason));
    } else {
        c->count.posts_failed++;
        sc_cevstate_t *e0 = sc_coord_exec_ev_find(c, first);
        sc_log_warn(out->http_status > 0 ? "approval failed, will retry"
                                         : "approval unknown (no answer: it may still land), "
                                           "will retry",
                    "events=%zu first=%s http=%ld intent=%lld retry_ms=%lld why=\"%s\"", n, first,
                    out->http_status, (long long)out->intent_index,
                    (long long)(e0 ? e0->retry_at_ms - now : 0), sc_log_q(out->message));
    }
    if (!sc_coord_may_act(c)) {
        sc_log_notice("approval answer left to the next leader", "intent=%lld rc=%d",
                      (long long)out->intent_index, out->rc);
        return;
    }
    sc_coord_exec_decide(
        c, SC_DLOG_APPROVAL_ANSWER,
        sc_approver_answer_data(out->intent_index, out->rc, out->http_status, out->message),
        out->rc == 0 ? "approval answered" : "approval failed");
}

void sc_coord_effect_answers(sc_coord_t *c)
{
    sc_approval_outcome_t out;

    while (sc_approver_take(c->approver, &out)) {
        size_t k;
        for (k = 0; k < c->n_posts && c->posts[k].intent != out.intent_index; k++)
            ;
        if (k == c->n_posts) /* never: every POST asked is recorded */
            continue;
        s_answer(c, c->posts[k].ids, c->posts[k].reason ? c->posts[k].reason : "", &out);
        json_object_put(c->posts[k].ids);
        free(c->posts[k].reason);
        c->posts[k] = c->posts[--c->n_posts];
    }
}

void sc_coord_effect_free(sc_coord_t *c)
{
    for (size_t k = 0; k < c->n_posts; k++) {
        json_object_put(c->posts[k].ids);
        free(c->posts[k].reason);
    }
    free(c->posts);
    c->posts = NULL;
    c->n_posts = c->cap_posts = 0;
}

/* The effect of a committed APPROVAL_INTENT: delegated, the approve_via to its member (the
 * answer comes back as approve_result); ours, one POST through our own IMDS and its answer
 * proposed: OK, failed (an HTTP status), or unknown (none: it may still land). */
static void s_approval_effect(sc_coord_t *c, const sc_dlog_entry_t *en, json_object *data)
{
    json_object *ids = NULL, *via = NULL, *body = NULL;
    const char *first = NULL;
    sc_approval_outcome_t out;
    int64_t now = sc_mono_ms();
    size_t n;

    json_object_object_get_ex(data, "event_ids", &ids);
    json_object_object_get_ex(data, "via", &via);
    json_object_object_get_ex(data, "body", &body);
    n = ids ? json_object_array_length(ids) : 0;
    if (!n || !body)
        return;
    first = json_object_get_string(json_object_array_get_idx(ids, 0));
    /* its start, reported as soon as Azure starts it, is ours, not forced */
    for (size_t i = 0; i < n; i++)
        sc_registry_mark_approved(c->reg,
                                  json_object_get_string(json_object_array_get_idx(ids, i)));
    if (via && json_object_get_string(via)) {
        size_t mi = sc_coord_members_find(c, json_object_get_string(via));
        sc_msg_t *msg = NULL;
        if (mi == SC_PLAN_NONE)
            return;
        for (size_t i = 0; i < n; i++) {
            sc_cevstate_t *e =
                sc_coord_exec_ev_get(c, json_object_get_string(json_object_array_get_idx(ids, i)));
            if (e)
                e->intent_ms = now;
        }
        if (sc_msg_new(SC_MSG_APPROVE_VIA, c->name, (uint64_t)c->term, ++c->seq, &msg) == 0) {
            msg->approve_via.index = (uint64_t)sc_coord_raft_commit(c);
            for (size_t i = 0; i < n; i++)
                sc_msg_add_event(msg, json_object_get_string(json_object_array_get_idx(ids, i)));
            sc_coord_dispatch_send(c, &c->members[mi], msg);
            sc_msg_destroy(&msg);
        }
        c->count.delegated++;
        sc_log_notice("approval delegated", "via=%s events=%zu first=%s intent=%lld why=\"%s\"",
                      c->members[mi].name, n, first, (long long)en->index, sc_log_q(en->reason));
        return;
    }
    /* the POST is the approver's worker's: a failing IMDS must not stop this loop (nemesis
     * seed 25: 2.1 s, while another member was elected); its outcome is an input of a later
     * turn (sc_coord_effect_answers) */
    if (c->n_posts == c->cap_posts) {
        size_t cap = c->cap_posts ? 2 * c->cap_posts : 8;
        struct sc_coord_post *nv = realloc(c->posts, cap * sizeof(*nv));
        if (!nv)
            goto no_post;
        c->posts = nv;
        c->cap_posts = cap;
    }
    if (sc_approver_post_async(c->approver, en->index, json_object_get_string(body)) < 0)
        goto no_post;
    c->posts[c->n_posts++] = (struct sc_coord_post){.intent = en->index,
                                                    .ids = json_object_get(ids),
                                                    .reason = strdup(en->reason ? en->reason : "")};
    c->last_post_ms = now;
    return;
no_post:
    /* nothing was POSTed, but with no HTTP status the answer is "unknown" (rollback stays
     * blocked, as for a POST that may land): retried with backoff */
    out = (sc_approval_outcome_t){.intent_index = en->index, .rc = -ENOMEM, .http_status = 0};
    snprintf(out.message, sizeof(out.message), "approval not handed to the worker: out of memory");
    s_answer(c, ids, en->reason, &out);
}

/* The effect of a committed PREPARE_ORDERED / RECOVER_ORDERED: the order to each of its VMs
 * (agents de-duplicate a repeat). */
static void s_order_effect(sc_coord_t *c, const sc_dlog_entry_t *en, json_object *data)
{
    bool prep = en->kind == SC_DLOG_PREPARE_ORDERED;
    json_object *id = NULL, *vms = NULL, *att = NULL;
    sc_cevstate_t *e;
    int attempt;

    json_object_object_get_ex(data, "event_id", &id);
    json_object_object_get_ex(data, "vms", &vms);
    json_object_object_get_ex(data, "attempt", &att);
    if (!id || !vms || !(e = sc_coord_exec_ev_get(c, json_object_get_string(id))))
        return;
    attempt = att ? json_object_get_int(att) : 1;
    for (size_t i = 0; i < json_object_array_length(vms); i++) {
        size_t mi =
            sc_coord_members_find(c, json_object_get_string(json_object_array_get_idx(vms, i)));
        if (mi == SC_PLAN_NONE)
            continue;
        e->sent_ms[mi] = sc_mono_ms();
        if (!prep && sc_coord_effect_recover_held(c, sc_coord_exec_cs(c, e->id), mi)) {
            sc_log_notice("recover held: its event started", "event=%s vm=%s", e->id,
                          c->members[mi].name);
            e->held_ms[mi] = e->sent_ms[mi]; /* sent when the event is over (resends) */
            continue;
        }
        c->count.orders[prep ? SC_MSG_PHASE_PREPARE : SC_MSG_PHASE_RECOVER]++;
        sc_log_notice(prep ? "prepare ordered" : "recover ordered", "event=%s vm=%s why=\"%s\"",
                      e->id, c->members[mi].name, sc_log_q(en->reason));
        sc_coord_dispatch_send_order(c, mi, e->id,
                                     prep ? SC_MSG_PHASE_PREPARE : SC_MSG_PHASE_RECOVER,
                                     attempt < 1 ? 1 : attempt);
    }
}

void sc_coord_effect_run(sc_coord_t *c, const sc_dlog_entry_t *e, json_object *data)
{
    switch (e->kind) {
    case SC_DLOG_PREPARE_ORDERED:
    case SC_DLOG_RECOVER_ORDERED: s_order_effect(c, e, data); break;
    case SC_DLOG_APPROVAL_INTENT: s_approval_effect(c, e, data); break;
    default: break;
    }
}

/* ---- orders sent again --------------------------------------------------------------- */

bool sc_coord_effect_recover_held(const sc_coord_t *c, const sc_cs_event_t *ce, size_t mi)
{
    if (!ce || ce->phase != SC_REG_ACTIVE ||
        (ce->start_kind == SC_START_NONE && !sc_event_is_started(&ce->ev)))
        return false;
    for (size_t k = 0; k < ce->ev.n_resources; k++)
        if (sc_coord_members_find(c, ce->ev.resources[k]) == mi)
            return true;
    return false;
}

/* Orders not acknowledged yet go out again (agents de-duplicate); not before the start
 * grace is over (the plan may no longer want them). A hook under way whose order was not sent
 * in this tenure (sent_ms 0: we took the lead since, or restarted) is asked about once: its
 * result may have been reported while nobody led, to followers, which decide nothing, and an
 * agent says it again only when it reconnects. It answers a repeated order with the result it
 * recorded (or not at all while the hook runs: its progress follows): nothing runs twice. An
 * ask that did not go out (a prepare held past its moment, a recover held while its event
 * runs, the agent not connected) is tried again every resend_ms until one does (nemesis seed
 * 41 of the campaign on a08e4f5: the one ask of vm_7's finished prepare was held 10 ms before
 * the other domain's event closed, and never made again: the event went at NotBefore). */
void sc_coord_effect_resend_orders(sc_coord_t *c, int64_t now)
{
    if (!sc_coord_may_act(c))
        return;
    for (size_t i = 0; i < c->n_ev; i++) {
        sc_cevstate_t *e = c->ev[i];
        const sc_cs_event_t *ce = sc_coord_exec_cs(c, e->id);
        for (size_t k = 0; ce && k < c->n_members; k++) {
            sc_drain_state_t d = ce->drain[k];
            bool ordered = d == SC_DRAIN_PREPARE_ORDERED || d == SC_DRAIN_RECOVER_ORDERED;
            bool running = d == SC_DRAIN_PREPARING || d == SC_DRAIN_RECOVERING;

            bool ask = running && (!e->sent_ms[k] ||
                                   (e->unasked_ms[k] && now - e->unasked_ms[k] >= c->o.resend_ms));
            int rc;

            if (!c->members[k].alive ||
                !((ordered && now - e->sent_ms[k] >= c->o.resend_ms) || ask))
                continue;
            /* a rollback's recover, ordered before its event started, is not sent again
             * while the event is under way on that VM: an agent that missed it (restarted)
             * would put the VM back in service during the event (nemesis seed 1, the
             * members roll); once the event is over it goes out again */
            if ((d == SC_DRAIN_RECOVER_ORDERED || d == SC_DRAIN_RECOVERING) &&
                sc_coord_effect_recover_held(c, ce, k)) {
                if (!e->held_ms[k])
                    sc_log_notice("recover held: its event started", "event=%s vm=%s", e->id,
                                  c->members[k].name);
                e->held_ms[k] = e->sent_ms[k] = now;
                if (running)
                    e->unasked_ms[k] = now;
                continue;
            }
            e->sent_ms[k] = now;
            if (ordered)
                sc_log_debug("order sent again", "event=%s vm=%s", e->id, c->members[k].name);
            else
                sc_log_info("hook under way: asked again", "event=%s vm=%s", e->id,
                            c->members[k].name);
            rc = sc_coord_dispatch_send_order(
                c, k, e->id,
                d == SC_DRAIN_PREPARE_ORDERED || d == SC_DRAIN_PREPARING ? SC_MSG_PHASE_PREPARE
                                                                         : SC_MSG_PHASE_RECOVER,
                ce->attempt[k]);
            e->unasked_ms[k] = running && rc < 0 ? now : 0;
        }
    }
}
