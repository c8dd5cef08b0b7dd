/* Message dispatch: sending (orders, simple messages, the leader broadcast) and receiving
 * (the ROUTER drained in one batch transaction; hook progress, approve_result, malformed
 * reports). */
#include "sc_coord_int.h"

#include "sc_error.h"
#include "sc_log.h"
#include "sc_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define S_DOC_REQUEST_MS 2000 /* doc_request at most this often per member */
/* Messages read from the ROUTER in one loop turn, at most: a turn is bounded work (1,000
 * documents at once took 240 ms of CPU); the rest wait for the next turn, right after the
 * flush. */
#define S_TURN_MESSAGES 200

/* ---- sending ------------------------------------------------------------------------- */

/* A document of one event, a copy of ev (the caller's), or NULL. */
static sc_doc_t *s_event_doc(const sc_event_t *ev)
{
    sc_doc_t doc = {0}, *cp = NULL;
    sc_event_t *evp;

    memcpy(&evp, &ev, sizeof(evp)); /* sc_doc_dup reads it only */
    doc.events = evp;
    doc.n_events = 1;
    return sc_doc_dup(&doc, &cp) < 0 ? NULL : cp;
}

int sc_coord_dispatch_send(sc_coord_t *c, sc_cmember_t *m, sc_msg_t *msg)
{
    char *buf = NULL;
    size_t len = 0;
    int rc;

    if (!m->rid_len)
        return -ENOTCONN;
    rc = sc_msg_encode(msg, &buf, &len);
    if (rc < 0) {
        sc_log_err("cannot encode", "type=%s rc=%s", sc_msg_type_name(msg->type), sc_errname(rc));
        return rc;
    }
    if (zmq_send(c->router, m->rid, m->rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        zmq_send(c->router, buf, len, ZMQ_DONTWAIT) < 0)
        rc = -zmq_errno();
    free(buf);
    return rc;
}

/* The moment (unix ms, 0: none) after which member mi must not start a prepare for event id:
 * the earliest NotBefore (or start) of a real event other than id that Azure may start without
 * our approval (none asked, or it failed or is unknown) and that names a VM outside mi's domain
 * whose drain is not done — or, once such an event started and is over, a VM of it outside mi's
 * domain not recovered yet —, less a guard (the deadline margin, at most S_UNTIL_GUARD_MS). Azure
 * may then take that domain down undrained, and a prepare begun after that would drain a
 * second domain while it is down (rule 2). The planner reserves such a domain once its event
 * is past NotBefore - margin; this covers an order that arrives late: sent
 * before a partition and delivered after it healed, once the other domain went at NotBefore
 * (nemesis open-seed-14). */
#define S_UNTIL_GUARD_MS 2000 /* a prepare's until_ms comes this long before the NotBefore */

/* Whether member k's own latest document says event re (NULL: no member's document holds it)
 * is not there: k alive, its IMDS answering, a document from it since we started, and the
 * event not in that document. */
static bool s_sees_not(const sc_coord_t *c, const sc_reg_event_t *re, size_t k)
{
    const sc_cmember_t *m = &c->members[k];

    return m->alive && !m->blind && m->have_doc && !sc_reg_event_seen_by(re, m->name);
}

static int64_t s_prepare_until(sc_coord_t *c, size_t mi, const char *id)
{
    int dom = sc_coord_members_domain(c, mi);
    int64_t until = 0, applied = sc_cstate_applied(c->cs);

    /* the VMs of one order entry share a domain: computed once for them in a turn (1,000
     * members; the registry's views, read below, change between turns) */
    if (dom >= 0 && c->until_memo.cs == c->cs && c->until_memo.applied == applied &&
        c->until_memo.turn == c->turn_end_us && c->until_memo.dom == dom &&
        sc_event_id_equal(c->until_memo.id, id))
        return c->until_memo.until;
    for (size_t i = 0; i < sc_cstate_n_events(c->cs); i++) {
        const sc_cs_event_t *ce = sc_cstate_event_at(c->cs, i);
        int64_t at = ce->ev.has_not_before ? ce->ev.not_before * 1000 : 0;
        bool other = false, over = ce->phase != SC_REG_ACTIVE;
        /* past NotBefore and not started: a VM alive whose own latest document no longer holds
         * the event is not going down for it (over, or cancelled; the registry not yet sure),
         * as the planner reads it (sc_plan.c, s_reserve). Nemesis seed 65 of the campaign on
         * c8a6ed2: a restarted leader's registry kept an FD 2 event that had run and ended as
         * Scheduled; it held FD 1's prepare, which the planner counted as FD 1's turn, so FD 2's
         * later events waited behind an order never sent until Azure started them. */
        bool past = !ce->started_ms && at && sc_wall_ms() >= at;
        const sc_reg_event_t *re = past ? sc_registry_find(c->reg, ce->ev.id) : NULL;

        /* one that is over holds prepares while the VMs it took down without our approval are
         * not recovered yet (nemesis seed 82 of the campaign on c8a6ed2: an order refused as
         * too late was sent again the moment FD 2's forced event ended, and its prepare began
         * while FD 2's VMs, impacted undrained, were still recovering: rule 2) */
        if ((over && !ce->started_ms) || ce->rehearsal || sc_event_id_equal(ce->ev.id, id) ||
            ce->approval == SC_APPROVAL_INTENT || ce->approval == SC_APPROVAL_APPROVED)
            continue;
        if (ce->started_ms && (!at || ce->started_ms < at))
            at = ce->started_ms;
        for (size_t r = 0; at && !other && r < ce->ev.n_resources; r++) {
            size_t k = sc_coord_members_find(c, ce->ev.resources[r]);

            other = k != SC_PLAN_NONE && k != mi && !sc_cstate_member(c->cs, k)->gone &&
                    ce->drain[k] != (over ? SC_DRAIN_RECOVERED : SC_DRAIN_PREPARED) &&
                    (dom < 0 || sc_coord_members_domain(c, k) != dom) &&
                    !(past && s_sees_not(c, re, k));
        }
        if (other && (!until || at < until))
            until = at;
    }
    /* less a guard: the agent's start, its hook's, and the clocks of two VMs are some ms apart
     * (nemesis open-seed-65: a prepare ordered 1.1 s before, its hook started 51 ms after FD 0
     * went down). Not the whole deadline margin: two events past their deadlines must not
     * block each other (the first in the drain queue drains best effort: deploy_package) */
    if (until) {
        int64_t guard = (int64_t)(c->o.policy.deadline_margin_s * 1000.0);
        until -= guard < S_UNTIL_GUARD_MS ? guard : S_UNTIL_GUARD_MS;
    }
    if (dom >= 0) {
        c->until_memo.cs = c->cs;
        c->until_memo.applied = applied;
        c->until_memo.turn = c->turn_end_us;
        c->until_memo.dom = dom;
        c->until_memo.until = until;
        snprintf(c->until_memo.id, sizeof(c->until_memo.id), "%s", id);
    }
    return until;
}

/* Sends member mi an order: run phase for event id, drain attempt (1..SC_MSG_ATTEMPT_MAX). A
 * prepare past its moment (s_prepare_until) is held, not sent: -EAGAIN (the resends try again
 * once the other domain's event is over). */
int sc_coord_dispatch_send_order(sc_coord_t *c, size_t mi, const char *id, sc_msg_phase_t phase,
                                 int attempt)
{
    const sc_reg_event_t *re = sc_registry_find(c->reg, id);
    sc_msg_t *msg = NULL;
    int rc;

    if (!sc_coord_may_act(c))
        return SC_E_STATE;
    if ((rc = sc_msg_new(SC_MSG_ORDER, c->name, (uint64_t)c->term, ++c->seq, &msg)) < 0)
        return rc;
    msg->order.action = phase;
    msg->order.attempt = attempt;
    msg->order.rehearsal = sc_coord_rehearse_owns(c, id);
    msg->order.index = (uint64_t)sc_coord_raft_commit(c); /* the fence, with the term */
    snprintf(msg->order.event, sizeof(msg->order.event), "%s", id);
    if (phase == SC_MSG_PHASE_PREPARE && !msg->order.rehearsal &&
        (msg->order.until_ms = s_prepare_until(c, mi, id)) && msg->order.until_ms <= sc_wall_ms()) {
        sc_log_info("prepare held: another domain may be down undrained", "event=%s vm=%s", id,
                    c->members[mi].name);
        sc_msg_destroy(&msg);
        return -EAGAIN;
    }
    if (!c->members[mi].knows_until)
        msg->order.until_ms = 0; /* an older agent refuses a field it does not know */
    if (re)
        msg->order.event_doc = s_event_doc(&re->ev);
    rc = sc_coord_dispatch_send(c, &c->members[mi], msg);
    sc_msg_destroy(&msg);
    return rc;
}

/* A message without a body to fill, or the leader message — which only a leader sends (a
 * follower gets NULL, so that no path can claim the lead for it). */
static sc_msg_t *s_simple_msg(sc_coord_t *c, sc_msg_type_t type)
{
    sc_msg_t *msg = NULL;
    if (type == SC_MSG_LEADER && !sc_coord_raft_leads(c))
        return NULL;
    if (sc_msg_new(type, c->name, (uint64_t)c->term, ++c->seq, &msg) < 0)
        return NULL;
    if (type == SC_MSG_LEADER) {
        snprintf(msg->leader.leader, sizeof(msg->leader.leader), "%s", c->name);
        msg->leader.lease_ms = c->o.leader_ms * 3;
        /* the list alone, as every agent computes it (an agent's --voters is its own) */
        snprintf(msg->leader.members_hash, sizeof(msg->leader.members_hash), "%s", c->list_hash);
        msg->leader.index = (uint64_t)sc_coord_raft_commit(c);
    }
    return msg;
}

static void s_send_simple(sc_coord_t *c, sc_cmember_t *m, sc_msg_type_t type)
{
    sc_msg_t *msg = s_simple_msg(c, type);

    if (msg)
        sc_coord_dispatch_send(c, m, msg);
    sc_msg_destroy(&msg);
}

/* The leader message to every connected member, encoded once: one seq for the broadcast
 * (seqs only have to increase per receiver; proto/README.md). */
void sc_coord_dispatch_broadcast_leader(sc_coord_t *c)
{
    sc_msg_t *msg = s_simple_msg(c, SC_MSG_LEADER);
    char *buf = NULL;
    size_t len = 0;
    int rc;

    if (!msg)
        return;
    if ((rc = sc_msg_encode(msg, &buf, &len)) < 0) {
        sc_log_err("cannot encode", "type=leader rc=%s", sc_errname(rc));
        sc_msg_destroy(&msg);
        return;
    }
    for (size_t i = 0; i < c->n_members; i++) {
        sc_cmember_t *m = &c->members[i];
        if (m->rid_len && !sc_cstate_member(c->cs, i)->gone &&
            zmq_send(c->router, m->rid, m->rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0)
            zmq_send(c->router, buf, len, ZMQ_DONTWAIT);
    }
    free(buf);
    sc_msg_destroy(&msg);
}

/* ---- receiving ----------------------------------------------------------------------- */

static void s_count_hook(sc_coord_t *c, const sc_msg_hook_progress_t *p)
{
    if (p->phase < SC_MSG_PHASE_MAX && p->state < SC_MSG_HOOK_STATE_MAX)
        c->count.hooks[p->phase][p->state]++;
}

static int s_on_progress(sc_coord_t *c, size_t mi, const sc_msg_hook_progress_t *p)
{
    /* Only for an event decided (in the state): a report of anything else must not create an
     * entry (phantom events in the store, a full event table). */
    const sc_cs_event_t *ce = sc_coord_exec_cs(c, p->event);
    sc_cevstate_t *e;
    sc_drain_state_t cur, next;
    json_object *d;
    char reason[320];
    int rc;

    if (!ce && !sc_coord_is_leader(c) && sc_registry_find(c->reg, p->event)) {
        s_count_hook(c, p);
        sc_log_debug("hook progress heard (a follower decides nothing)",
                     "member=%s event=%s phase=%s state=%s", c->members[mi].name, p->event,
                     sc_msg_phase_name(p->phase), sc_msg_hook_state_name(p->state));
        return 0;
    }
    if (!ce || !(e = sc_coord_exec_ev_get(c, ce->ev.id))) {
        c->rejected++;
        sc_log_warn("hook progress for an unknown event ignored",
                    "member=%s event=%s phase=%s state=%s", c->members[mi].name, p->event,
                    sc_msg_phase_name(p->phase), sc_msg_hook_state_name(p->state));
        return 0;
    }
    /* A report of an older attempt (its drain was rolled back and tried again since) is
     * history: it must not move the new attempt's drain (the state drops it too). */
    if (p->attempt < ce->attempt[mi]) {
        sc_log_info("hook progress of an older attempt ignored",
                    "member=%s event=%s phase=%s state=%s attempt=%d current=%d",
                    c->members[mi].name, p->event, sc_msg_phase_name(p->phase),
                    sc_msg_hook_state_name(p->state), p->attempt, ce->attempt[mi]);
        return 0;
    }
    cur = ce->drain[mi];
    next = sc_cstate_drain_next(
        cur, sc_cstate_drain_input(p->phase, p->state, ce->phase == SC_REG_ACTIVE));
    d = json_object_new_object();
    json_object_object_add(d, "event_id", json_object_new_string(ce->ev.id));
    json_object_object_add(d, "vm", json_object_new_string(c->members[mi].name));
    json_object_object_add(d, "phase", json_object_new_string(sc_msg_phase_name(p->phase)));
    json_object_object_add(d, "state", json_object_new_string(sc_msg_hook_state_name(p->state)));
    json_object_object_add(d, "exit_status", json_object_new_int(p->exit_status));
    json_object_object_add(d, "origin", json_object_new_string(sc_msg_origin_name(p->origin)));
    json_object_object_add(d, "attempt", json_object_new_int(p->attempt));
    /* a hook's output tail, kept where operators look: the history, and the log on failure */
    if (p->detail && p->detail[0] && p->state != SC_MSG_HOOK_STARTED) {
        json_object_object_add(d, "detail", json_object_new_string(p->detail));
        if (p->state != SC_MSG_HOOK_DONE && p->state != SC_MSG_HOOK_SKIPPED)
            sc_log_warn("hook did not succeed",
                        "event=%s vm=%s phase=%s state=%s exit=%d "
                        "output=\"%s\"",
                        ce->ev.id, c->members[mi].name, sc_msg_phase_name(p->phase),
                        sc_msg_hook_state_name(p->state), p->exit_status, sc_log_q(p->detail));
    }
    snprintf(reason, sizeof(reason), "%s hook %s on %s", sc_msg_phase_name(p->phase),
             sc_msg_hook_state_name(p->state), c->members[mi].name);
    sc_log_info("hook progress", "event=%s vm=%s phase=%s state=%s exit=%d drain=%s->%s", ce->ev.id,
                c->members[mi].name, sc_msg_phase_name(p->phase), sc_msg_hook_state_name(p->state),
                p->exit_status, sc_drain_state_name(cur), sc_drain_state_name(next));
    /* rolled back: drained again, as a new attempt, after a backoff (a timer: not replicated) */
    if (next == SC_DRAIN_ROLLED_BACK && cur != SC_DRAIN_ROLLED_BACK)
        e->drain_retry_ms[mi] =
            sc_mono_ms() +
            sc_policy_retry_delay_ms(&c->o.policy, ce->attempt[mi] ? ce->attempt[mi] : 1);
    c->dirty = true;
    s_count_hook(c, p);
    if ((rc = sc_coord_exec_decide(c, SC_DLOG_HOOK_PROGRESS, d, reason)) == 0)
        sc_coord_raft_progress_proposed(c, ce->ev.id, mi, p->phase, p->state, p->attempt);
    return rc;
}

/* An answer to approve_via counts only from the member it was delegated to, in our term: any
 * other member (or an old/forged term) could otherwise mark an event approved that nobody
 * POSTed, or fail one to trigger a second POST. The answer entry settles every event of the
 * intent (sc_cstate). */
static int s_on_approve_result(sc_coord_t *c, size_t mi, uint64_t term,
                               const sc_msg_approve_result_t *r)
{
    bool ok = strcmp(r->result, "OK") == 0 && r->http_status >= 200 && r->http_status < 300;
    int64_t intents[SC_MSG_MAX_EVENTS];
    size_t n_intents = 0, n_used = 0, n_refused = 0;
    const char *first_refused = NULL;
    int64_t now = sc_mono_ms();
    int rc = 0;

    if (term != (uint64_t)c->term) {
        c->rejected++;
        sc_log_warn("approval answer refused", "member=%s term=%llu why=\"not our term %lld\"",
                    c->members[mi].name, (unsigned long long)term, (long long)c->term);
        return 0;
    }
    if (!sc_coord_is_leader(c)) { /* we stepped down in this term: the next leader settles it */
        sc_log_info("approval answer not recorded: not leading", "member=%s term=%llu",
                    c->members[mi].name, (unsigned long long)term);
        return 0;
    }
    for (size_t i = 0; i < r->n_events; i++) {
        const sc_cs_event_t *ce = sc_coord_exec_cs(c, r->events[i]);
        bool known = false;
        if (!ce || ce->approval != SC_APPROVAL_INTENT || !ce->intent)
            continue;
        if (ce->via != mi) {
            n_refused++;
            first_refused = first_refused ? first_refused : ce->ev.id;
            continue;
        }
        n_used++;
        for (size_t k = 0; k < n_intents; k++)
            known = known || intents[k] == ce->intent;
        if (!known && n_intents < SC_MSG_MAX_EVENTS)
            intents[n_intents++] = ce->intent;
    }
    for (size_t k = 0; k < n_intents && rc >= 0; k++) {
        /* failed: each of its events retried after its backoff */
        for (size_t i = 0; !ok && i < sc_cstate_n_events(c->cs); i++) {
            const sc_cs_event_t *ce = sc_cstate_event_at(c->cs, i);
            sc_cevstate_t *e = ce->intent == intents[k] ? sc_coord_exec_ev_get(c, ce->ev.id) : NULL;
            if (e)
                e->retry_at_ms = now + sc_backoff_next(&e->backoff, 0);
        }
        rc = sc_coord_exec_decide(
            c, SC_DLOG_APPROVAL_ANSWER,
            sc_approver_answer_data(intents[k], ok ? 0 : SC_E_HTTP_OTHER, r->http_status,
                                    r->message ? r->message : r->result),
            ok ? "approval answered (delegated)" : "approval failed (delegated)");
    }
    if (n_refused) {
        c->rejected++;
        sc_log_warn("approval answer refused",
                    "member=%s events=%zu first=%s why=\"not delegated to it\"",
                    c->members[mi].name, n_refused, first_refused);
    }
    if (n_used) {
        sc_log_notice("delegated approval answered", "via=%s result=%s http=%d",
                      c->members[mi].name, r->result, r->http_status);
        c->dirty = true;
    }
    return rc;
}

/* The IMDS events a member's agent left out of its document as malformed (proto/README.md):
 * logged and counted once per member, incarnation and list; the leader raises each distinct
 * reason once as an alert (every VM sees the same document: not one alert per member). */
static int s_on_malformed(sc_coord_t *c, sc_cmember_t *m, const sc_msg_document_t *d)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a over the incarnation and the reasons */
    char msg[SC_MSG_MALFORMED_MAX + 128];
    int rc = 0;

    for (size_t i = 0; i < sizeof(d->incarnation); i++)
        h = (h ^ (uint8_t)(d->incarnation >> (8 * i))) * 1099511628211ULL;
    for (size_t i = 0; i < d->n_malformed; i++) /* each with its NUL: separates them */
        for (size_t k = 0, n = strlen(d->malformed[i]) + 1; k < n; k++)
            h = (h ^ (uint8_t)d->malformed[i][k]) * 1099511628211ULL;
    if (!d->n_malformed || h == m->malformed_key)
        return 0;
    m->malformed_key = h;
    m->malformed += d->n_malformed;
    for (size_t i = 0; i < d->n_malformed && rc >= 0; i++) {
        sc_log_warn("member's IMDS document has a malformed event, left out by its agent",
                    "member=%s incarnation=%" PRId64 " why=\"%s\"", m->name, d->incarnation,
                    sc_log_q(d->malformed[i]));
        snprintf(msg, sizeof(msg), "IMDS event malformed (seen by %s, left out): %s", m->name,
                 d->malformed[i]);
        if (sc_coord_is_leader(c))
            rc = sc_coord_exec_alert(c, SC_ALERT_MALFORMED_EVENT, NULL, m->name, d->malformed[i],
                                     msg, 0);
    }
    return rc;
}

/* One message. What it makes the leader decide is proposed in the turn's transaction, opened
 * at the first proposal (sc_coord_raft_propose): the once-a-second heartbeats of a quiet set
 * cost no SQLite transaction. */
static int s_on_message(sc_coord_t *c, const unsigned char *rid, size_t rid_len, zmq_msg_t *zm)
{
    char err[256];
    sc_msg_t *msg = NULL;
    sc_msg_reject_t rej;
    sc_registry_changes_t ch = {0};
    size_t mi;
    sc_cmember_t *m;
    int64_t now = sc_mono_ms();
    bool told = false; /* LEADER sent to it already */
    int rc = 0;

    if (sc_msg_decode_ex(zmq_msg_data(zm), zmq_msg_size(zm), &msg, &rej, err, sizeof(err)) < 0) {
        c->rejected++;
        sc_log_warn("message refused", "reject=%s why=\"%s\"", sc_msg_reject_name(rej),
                    sc_log_q(err));
        return 0;
    }
    mi = sc_coord_members_find(c, msg->from);
    if (mi == SC_PLAN_NONE || strcmp(c->members[mi].name, msg->from) != 0) {
        c->rejected++;
        sc_log_warn("message from a non-member refused", "from=%s type=%s", msg->from,
                    sc_msg_type_name(msg->type));
        goto out;
    }
    if (!c->o.insecure) {
        const char *uid = zmq_msg_gets(zm, "User-Id");
        if (!uid || strcmp(uid, msg->from) != 0) {
            c->rejected++;
            sc_log_warn("message refused: sender is not its key's owner", "from=%s key_owner=%s",
                        msg->from, uid ? uid : "(none)");
            goto out;
        }
    }
    if (sc_coord_raft_is_peer_msg(msg)) { /* a coordinator's: the election's and the log's */
        rc = sc_coord_raft_on_router(c, mi, rid, rid_len, msg);
        goto out;
    }
    m = &c->members[mi];
    if (msg->term > (uint64_t)c->term &&
        (rc = sc_coord_members_adopt_term(c, msg->term, m->name)) < 0)
        goto out;
    if (rid_len && rid_len <= SC_COORD_RID_MAX) {
        memcpy(m->rid, rid, rid_len);
        m->rid_len = rid_len;
    }
    m->last_msg_ms = now;
    if (!m->alive) {
        m->alive = true;
        c->dirty = true;
        sc_log_info("member alive", "member=%s", m->name);
        if ((rc = sc_registry_set_alive(c->reg, m->name, true, now, &ch)) >= 0)
            rc = sc_coord_exec_handle_changes(c, &ch);
        if (rc < 0)
            goto out;
        told = true;
        s_send_simple(c, m, SC_MSG_LEADER); /* tell it the term at once */
    }
    switch (msg->type) {
    case SC_MSG_HELLO:
        m->knows_until = sc_msg_has_capability(msg, SC_CAP_ORDER_UNTIL);
        rc = sc_coord_members_on_hello(c, mi, &msg->hello);
        if (!told)
            s_send_simple(c, m, SC_MSG_LEADER);
        break;
    case SC_MSG_HEARTBEAT: rc = sc_coord_members_on_heartbeat(c, m, &msg->heartbeat, now); break;
    case SC_MSG_DOCUMENT:
        /* Gone: its VM was deleted. An agent still running there only re-sends its last
         * document, whose events are over: after our restart it would bring the ended
         * Preempt back as new. A re-created VM's new agent says hello first
         * (sc_coord_members_on_hello). */
        if (sc_cstate_member(c->cs, mi)->gone) {
            sc_log_debug("document of a gone member ignored", "member=%s", m->name);
            break;
        }
        m->have_doc = true;
        rc = sc_registry_apply_doc(c->reg, m->name, m->boot_id[0] ? m->boot_id : NULL,
                                   msg->document.document, msg->document.observed_at_ms, m->blind,
                                   now, &ch);
        if (rc >= 0 && !m->blind)
            sc_coord_members_note_boot(c, m, msg->document.document->incarnation,
                                       msg->document.observed_at_ms);
        if (rc < 0) {
            c->rejected++;
            sc_log_warn("document refused", "member=%s rc=%s", m->name, sc_errname(rc));
            rc = 0;
            break;
        }
        rc = sc_coord_exec_handle_changes(c, &ch);
        if (rc >= 0)
            rc = s_on_malformed(c, m, &msg->document);
        /* a blind member's document (an answer to doc_request, a reconnect) is its old one:
         * it changed nothing, and is still no witness until a heartbeat says its IMDS
         * answers */
        if (rc >= 0 && m->blind &&
            (rc = sc_registry_set_alive(c->reg, m->name, false, now, &ch)) >= 0)
            rc = sc_coord_exec_handle_changes(c, &ch);
        break;
    case SC_MSG_HOOK_PROGRESS: rc = s_on_progress(c, mi, &msg->hook_progress); break;
    case SC_MSG_APPROVE_RESULT:
        rc = s_on_approve_result(c, mi, msg->term, &msg->approve_result);
        break;
    case SC_MSG_NACK:
        sc_log_warn("message refused by member", "member=%s ref_seq=%llu why=\"%s\"", m->name,
                    (unsigned long long)msg->nack.ref_seq,
                    sc_log_q(msg->nack.reason ? msg->nack.reason : ""));
        break;
    case SC_MSG_ORDER:
    case SC_MSG_APPROVE_VIA:
    case SC_MSG_DOC_REQUEST:
        /* leader -> agent messages: a member sending one to us is confused or hostile */
        c->rejected++;
        sc_log_warn("message refused", "member=%s class=type why=\"%s is not for coordinators\"",
                    m->name, sc_msg_type_name(msg->type));
        break;
    default:
        sc_log_debug("message ignored", "member=%s type=%s", m->name, sc_msg_type_name(msg->type));
        break;
    }
    if (!m->have_doc && now - m->doc_req_ms >= S_DOC_REQUEST_MS) {
        m->doc_req_ms = now;
        s_send_simple(c, m, SC_MSG_DOC_REQUEST);
    }
out:
    sc_msg_destroy(&msg);
    return rc;
}

/* Reads every message waiting on the ROUTER (bounded per round). The decisions of one turn are
 * committed together by sc_coord_raft_flush (one fsync, not one per decision): nothing a
 * message handler sends depends on them (LEADER, DOC_REQUEST), and what they make the leader
 * do is done once they are committed. A store failure is fatal: the daemon stops on it. */
int sc_coord_dispatch_drain_router(sc_coord_t *c)
{
    int rc = 0;

    for (int n = 0; n < S_TURN_MESSAGES && rc >= 0 && !(n > 0 && sc_coord_turn_over(c)); n++) {
        zmq_msg_t id, body;
        int more = 0;
        size_t more_len = sizeof(more);

        zmq_msg_init(&id);
        if (zmq_msg_recv(&id, c->router, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&id);
            break;
        }
        zmq_getsockopt(c->router, ZMQ_RCVMORE, &more, &more_len);
        if (!more) {
            zmq_msg_close(&id);
            continue;
        }
        zmq_msg_init(&body);
        zmq_msg_recv(&body, c->router, 0);
        /* One message is one frame: a multi-frame message is dropped whole. */
        zmq_getsockopt(c->router, ZMQ_RCVMORE, &more, &more_len);
        if (more) {
            while (more) {
                zmq_msg_t x;
                zmq_msg_init(&x);
                zmq_msg_recv(&x, c->router, 0);
                zmq_msg_close(&x);
                zmq_getsockopt(c->router, ZMQ_RCVMORE, &more, &more_len);
            }
            c->rejected++;
            sc_log_warn("message refused", "class=frames why=\"more than one frame\"");
            zmq_msg_close(&body);
            zmq_msg_close(&id);
            continue;
        }
        rc = s_on_message(c, zmq_msg_data(&id), zmq_msg_size(&id), &body);
        zmq_msg_close(&body);
        zmq_msg_close(&id);
    }
    return rc;
}
