#include "sc_coord_int.h"

#include "sc_approver.h"
#include "sc_backoff.h"
#include "sc_config.h"
#include "sc_ctl.h"
#include "sc_curve.h"
#include "sc_dirlock.h"
#include "sc_error.h"
#include "sc_event.h"
#include "sc_identity.h"
#include "sc_imds.h"
#include "sc_net.h"
#include "sc_log.h"
#include "sc_members.h"
#include "sc_msg.h"
#include "sc_plan.h"
#include "sc_registry.h"
#include "sc_store.h"
#include "sc_time.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <zmq.h>

#define S_MAX_ALERTS_SEEN 10000 /* alert keys remembered for de-duplication */
#define S_PLAN_EVERY_MS 200     /* the planner runs at least this often */
#define S_DOC_REQUEST_MS 2000   /* doc_request at most this often per member */
#define S_VIA_TIMEOUT_MS 15000  /* a delegated approval without answer is retried after */
#define S_KEEP_ENDED_MS 120000  /* ended events stay in status this long */

void sc_coord_opts_init(sc_coord_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    sc_policy_defaults(&o->policy);
    o->dead_after_ms = 5000;
    o->imds_stale_ms = 15000;
    o->resend_ms = 2000;
    o->leader_ms = 1000;
    o->start_grace_ms = 5000;
    o->tombstone_ms = SC_REGISTRY_TOMBSTONE_MS_DEFAULT;
}

bool sc_coord_is_leader(const sc_coord_t *c)
{
    return c && c->role == SC_ROLE_LEADER;
}

int64_t sc_coord_term(const sc_coord_t *c)
{
    return c ? c->term : 0;
}

uint64_t sc_coord_posts(const sc_coord_t *c)
{
    return c ? sc_approver_posts(c->approver) : 0;
}

int64_t sc_coord_last_post_mono_ms(const sc_coord_t *c)
{
    return c ? c->last_post_ms : 0;
}

/* ---- members ------------------------------------------------------------------------- */

static const char *s_strip(const char *n)
{
    return n[0] == '_' ? n + 1 : n;
}

static sc_cmember_t *s_sort_members_;
static int s_cmp_idx(const void *a, const void *b)
{
    const sc_cmember_t *ma = &s_sort_members_[*(const size_t *)a];
    const sc_cmember_t *mb = &s_sort_members_[*(const size_t *)b];
    return strcmp(s_strip(ma->name), s_strip(mb->name));
}

/* The member named n (exactly as Azure writes it; tolerant of api 2017-03-01's leading '_'),
 * or SC_PLAN_NONE. */
static size_t s_member_find(const sc_coord_t *c, const char *n)
{
    size_t lo = 0, hi = c->n_members;
    const char *k = s_strip(n);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int r = strcmp(k, s_strip(c->members[c->by_name[mid]].name));
        if (r == 0)
            return c->by_name[mid];
        if (r < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return SC_PLAN_NONE;
}

/* Parses "NAME=HOST:PORT,..." into c->members. */
static int s_parse_members(sc_coord_t *c, const char *spec, char *err, size_t errlen)
{
    sc_member_spec_t *list = NULL;
    size_t n = 0;
    int rc;

    if ((rc = sc_members_parse(spec, &list, &n, err, errlen)) != 0)
        return rc;
    if (!(c->members = calloc(n, sizeof(*c->members)))) {
        free(list);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        sc_cmember_t *m = &c->members[i];

        snprintf(m->name, sizeof(m->name), "%s", list[i].name);
        snprintf(m->endpoint, sizeof(m->endpoint), "%s", list[i].endpoint);
        m->fault_domain = m->update_domain = -1;
    }
    c->n_members = n;
    sc_members_digest(list, n, c->members_hash);
    free(list);
    if (!(c->by_name = malloc(c->n_members * sizeof(size_t))))
        return -ENOMEM;
    for (size_t i = 0; i < c->n_members; i++)
        c->by_name[i] = i;
    s_sort_members_ = c->members;
    qsort(c->by_name, c->n_members, sizeof(size_t), s_cmp_idx);
    for (size_t i = 1; i < c->n_members; i++)
        if (s_cmp_idx(&c->by_name[i - 1], &c->by_name[i]) == 0) {
            snprintf(err, errlen, "--members: %s listed twice", c->members[c->by_name[i]].name);
            return SC_E_CONFIG;
        }
    return 0;
}

/* ---- event states -------------------------------------------------------------------- */

static sc_cevstate_t *s_ev_find(sc_coord_t *c, const char *id)
{
    for (size_t i = 0; i < c->n_ev; i++)
        if (sc_event_id_equal(c->ev[i]->id, id))
            return c->ev[i];
    return NULL;
}

static void s_ev_free(sc_cevstate_t *e)
{
    if (!e)
        return;
    free(e->drain);
    free(e->sent_ms);
    free(e->attempt);
    free(e->drain_retry_ms);
    free(e->waiting_for);
    free(e);
}

static sc_cevstate_t *s_ev_get(sc_coord_t *c, const char *id)
{
    sc_cevstate_t *e = s_ev_find(c, id), **nv;
    if (e)
        return e;
    if (c->n_ev >= SC_REGISTRY_MAX_EVENTS || !sc_event_id_valid(id))
        return NULL;
    if (!(e = calloc(1, sizeof(*e))) || !(e->drain = calloc(c->n_members, sizeof(*e->drain))) ||
        !(e->sent_ms = calloc(c->n_members, sizeof(*e->sent_ms))) ||
        !(e->attempt = calloc(c->n_members, sizeof(*e->attempt))) ||
        !(e->drain_retry_ms = calloc(c->n_members, sizeof(*e->drain_retry_ms))) ||
        !(nv = realloc(c->ev, (c->n_ev + 1) * sizeof(*nv)))) {
        s_ev_free(e);
        return NULL;
    }
    snprintf(e->id, sizeof(e->id), "%s", id);
    e->via = SC_PLAN_NONE;
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
    s_ev_free(e);
}

/* ---- decisions ----------------------------------------------------------------------- */

/* Appends a decision and applies it. A store failure is fatal for the daemon: it must not act
 * on what it could not record. */
static int s_decide(sc_coord_t *c, sc_dlog_kind_t kind, json_object *data, const char *reason)
{
    int rc = sc_store_decide_json(c->store, c->term, kind, data, reason, sc_wall_ms(), NULL);
    if (rc < 0)
        sc_log_err("decision not recorded", "kind=%s rc=%s why=\"%s\"", sc_dlog_kind_name(kind),
                   sc_errname(rc), sc_log_q(sc_store_errmsg(c->store)));
    json_object_put(data);
    return rc;
}

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
    return s_decide(c, SC_DLOG_EVENT_SEEN, d, reason);
}

static int s_log_simple(sc_coord_t *c, sc_dlog_kind_t kind, const char *id, const char *how,
                        const char *reason)
{
    json_object *d = json_object_new_object();
    json_object_object_add(d, "event_id", json_object_new_string(id));
    json_object_object_add(d, "how", json_object_new_string(how));
    return s_decide(c, kind, d, reason);
}

/* Records what the registry changed. */
static int s_handle_changes(sc_coord_t *c, sc_registry_changes_t *ch)
{
    int rc = 0;
    for (size_t i = 0; i < ch->n && rc >= 0; i++) {
        const sc_reg_change_t *x = &ch->items[i];
        const sc_reg_event_t *re = sc_registry_find(c->reg, x->id);
        sc_cevstate_t *e;

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
            if ((e = s_ev_get(c, x->id)) && e->approval == SC_APPROVAL_FAILED)
                e->approval = SC_APPROVAL_NOT_NEEDED; /* never again once Started */
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

/* ---- sending ------------------------------------------------------------------------- */

static int s_send(sc_coord_t *c, sc_cmember_t *m, sc_msg_t *msg)
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

/* Sends member mi an order: run phase for event id, drain attempt (1..SC_MSG_ATTEMPT_MAX). */
static int s_send_order(sc_coord_t *c, size_t mi, const char *id, sc_msg_phase_t phase, int attempt)
{
    const sc_reg_event_t *re = sc_registry_find(c->reg, id);
    sc_msg_t *msg = NULL;
    int rc;

    if (!sc_coord_is_leader(c))
        return SC_E_STATE;
    if ((rc = sc_msg_new(SC_MSG_ORDER, c->name, (uint64_t)c->term, ++c->seq, &msg)) < 0)
        return rc;
    msg->order.action = phase;
    msg->order.attempt = attempt;
    snprintf(msg->order.event, sizeof(msg->order.event), "%s", id);
    if (re)
        msg->order.event_doc = s_event_doc(&re->ev);
    rc = s_send(c, &c->members[mi], msg);
    sc_msg_destroy(&msg);
    return rc;
}

/* A message without a body to fill, or the leader message — which only a leader sends (a
 * follower gets NULL, so that no path can claim the lead for it). */
static sc_msg_t *s_simple_msg(sc_coord_t *c, sc_msg_type_t type)
{
    sc_msg_t *msg = NULL;
    if (type == SC_MSG_LEADER && !sc_coord_is_leader(c))
        return NULL;
    if (sc_msg_new(type, c->name, (uint64_t)c->term, ++c->seq, &msg) < 0)
        return NULL;
    if (type == SC_MSG_LEADER) {
        snprintf(msg->leader.leader, sizeof(msg->leader.leader), "%s", c->name);
        msg->leader.lease_ms = c->o.leader_ms * 3;
        snprintf(msg->leader.members_hash, sizeof(msg->leader.members_hash), "%s", c->members_hash);
    }
    return msg;
}

static void s_send_simple(sc_coord_t *c, sc_cmember_t *m, sc_msg_type_t type)
{
    sc_msg_t *msg = s_simple_msg(c, type);

    if (msg)
        s_send(c, m, msg);
    sc_msg_destroy(&msg);
}

/* The leader message to every connected member, encoded once: one seq for the broadcast
 * (seqs only have to increase per receiver; proto/README.md). */
static void s_broadcast_leader(sc_coord_t *c)
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
        if (m->rid_len && !m->gone &&
            zmq_send(c->router, m->rid, m->rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0)
            zmq_send(c->router, buf, len, ZMQ_DONTWAIT);
    }
    free(buf);
    sc_msg_destroy(&msg);
}

/* ---- receiving ----------------------------------------------------------------------- */

/* The drain state after a hook report st of phase, from cur: the one mapping of hook results
 * to drain states, for live reports and for the stored ones a restart reads back. listed: the
 * event is still listed, so a recover done was the rollback of a failed drain (sc_plan.h rule
 * 4), not the end of it. */
static sc_drain_state_t s_drain_after(sc_drain_state_t cur, sc_msg_phase_t phase,
                                      sc_msg_hook_state_t st, bool listed)
{
    if (phase == SC_MSG_PHASE_PREPARE) {
        switch (st) {
        case SC_MSG_HOOK_STARTED: return SC_DRAIN_PREPARING;
        case SC_MSG_HOOK_DONE:
        case SC_MSG_HOOK_SKIPPED: return SC_DRAIN_PREPARED;
        case SC_MSG_HOOK_FAILED:
        case SC_MSG_HOOK_TIMED_OUT: return SC_DRAIN_PREPARE_FAILED;
        case SC_MSG_HOOK_INTERRUPTED: return SC_DRAIN_PREPARE_INTERRUPTED;
        default: return cur; /* refused: the order is sent again */
        }
    }
    switch (st) {
    case SC_MSG_HOOK_STARTED: return SC_DRAIN_RECOVERING;
    case SC_MSG_HOOK_DONE:
    case SC_MSG_HOOK_SKIPPED: /* older agents: prepare never ran */
        return listed ? SC_DRAIN_ROLLED_BACK : SC_DRAIN_RECOVERED;
    case SC_MSG_HOOK_FAILED:
    case SC_MSG_HOOK_TIMED_OUT:
    /* interrupted: never re-run by the agent (it answers every new order with the same
     * result), so it is final like a failure: ALERT, and the fault domain is free again */
    case SC_MSG_HOOK_INTERRUPTED: return SC_DRAIN_RECOVER_FAILED;
    default: return cur; /* refused (e.g. the agent's queue was full): the order is sent again */
    }
}

static int s_on_progress(sc_coord_t *c, size_t mi, const sc_msg_hook_progress_t *p)
{
    /* Only for an event we know (tracked, or in the registry): a report of anything else
     * must not create an entry (phantom events in the store, a full event table). */
    sc_cevstate_t *e = s_ev_find(c, p->event);
    const sc_reg_event_t *re;
    sc_drain_state_t next;
    json_object *d;
    char reason[320];

    if (!e && sc_registry_find(c->reg, p->event))
        e = s_ev_get(c, p->event);
    if (!e) {
        c->rejected++;
        sc_log_warn("hook progress for an unknown event ignored",
                    "member=%s event=%s phase=%s state=%s", c->members[mi].name, p->event,
                    sc_msg_phase_name(p->phase), sc_msg_hook_state_name(p->state));
        return 0;
    }
    /* A report of an older attempt (its drain was rolled back and tried again since) is
     * history: it must not move the new attempt's drain. */
    if (p->attempt < e->attempt[mi]) {
        sc_log_info("hook progress of an older attempt ignored",
                    "member=%s event=%s phase=%s state=%s attempt=%d current=%d",
                    c->members[mi].name, p->event, sc_msg_phase_name(p->phase),
                    sc_msg_hook_state_name(p->state), p->attempt, e->attempt[mi]);
        return 0;
    }
    re = sc_registry_find(c->reg, e->id);
    next = s_drain_after(e->drain[mi], p->phase, p->state, re && re->phase == SC_REG_ACTIVE);
    /* A late report of an earlier phase never moves a drain back. */
    if (p->phase == SC_MSG_PHASE_PREPARE && e->drain[mi] >= SC_DRAIN_RECOVER_ORDERED)
        next = e->drain[mi];
    d = json_object_new_object();
    json_object_object_add(d, "event_id", json_object_new_string(e->id));
    json_object_object_add(d, "vm", json_object_new_string(c->members[mi].name));
    json_object_object_add(d, "phase", json_object_new_string(sc_msg_phase_name(p->phase)));
    json_object_object_add(d, "state", json_object_new_string(sc_msg_hook_state_name(p->state)));
    json_object_object_add(d, "exit_status", json_object_new_int(p->exit_status));
    json_object_object_add(d, "origin", json_object_new_string(sc_msg_origin_name(p->origin)));
    snprintf(reason, sizeof(reason), "%s hook %s on %s", sc_msg_phase_name(p->phase),
             sc_msg_hook_state_name(p->state), c->members[mi].name);
    sc_log_info("hook progress", "event=%s vm=%s phase=%s state=%s exit=%d drain=%s->%s", e->id,
                c->members[mi].name, sc_msg_phase_name(p->phase), sc_msg_hook_state_name(p->state),
                p->exit_status, sc_drain_state_name(e->drain[mi]), sc_drain_state_name(next));
    /* rolled back: drained again, as a new attempt, after a backoff */
    if (next == SC_DRAIN_ROLLED_BACK && e->drain[mi] != SC_DRAIN_ROLLED_BACK)
        e->drain_retry_ms[mi] =
            sc_mono_ms() +
            sc_policy_retry_delay_ms(&c->o.policy, e->attempt[mi] ? e->attempt[mi] : 1);
    e->drain[mi] = next;
    c->dirty = true;
    if (p->phase < SC_MSG_PHASE_MAX && p->state < SC_MSG_HOOK_STATE_MAX)
        c->count.hooks[p->phase][p->state]++;
    return s_decide(c, SC_DLOG_HOOK_PROGRESS, d, reason);
}

/* An answer to approve_via counts only from the member it was delegated to, in our term: any
 * other member (or an old/forged term) could otherwise mark an event approved that nobody
 * POSTed, or fail one to trigger a second POST. */
static int s_on_approve_result(sc_coord_t *c, size_t mi, uint64_t term,
                               const sc_msg_approve_result_t *r)
{
    bool ok = strcmp(r->result, "OK") == 0 && r->http_status >= 200 && r->http_status < 300;
    int64_t intent = 0;
    size_t n_used = 0, n_refused = 0;
    const char *first_refused = NULL;
    int rc = 0;

    if (term != (uint64_t)c->term) {
        c->rejected++;
        sc_log_warn("approval answer refused", "member=%s term=%llu why=\"not our term %lld\"",
                    c->members[mi].name, (unsigned long long)term, (long long)c->term);
        return 0;
    }
    for (size_t i = 0; i < r->n_events; i++) {
        sc_cevstate_t *e = s_ev_find(c, r->events[i]);
        if (!e || e->approval != SC_APPROVAL_INTENT)
            continue;
        if (e->via != mi) {
            n_refused++;
            first_refused = first_refused ? first_refused : e->id;
            continue;
        }
        n_used++;
        if (e->intent && e->intent != intent) {
            intent = e->intent;
            rc = sc_approver_record_answer(c->approver, c->term, intent, ok ? 0 : SC_E_HTTP_OTHER,
                                           r->http_status, r->message ? r->message : r->result);
            if (rc < 0)
                return rc;
        }
        e->intent = 0;
        if (ok) {
            e->approval = SC_APPROVAL_APPROVED;
        } else {
            e->approval = SC_APPROVAL_FAILED;
            e->retry_at_ms = sc_mono_ms() + sc_backoff_next(&e->backoff, 0);
        }
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

/* Raft's rule: a higher term heard from anyone (an agent's messages carry the newest term it
 * has seen) is adopted before leading. A coordinator whose store was lost starts again at term
 * 1, and agents refuse every order of a term older than what they saw: without this the set
 * would stay leaderless for good. The leader leads the next term. */
static int s_adopt_term(sc_coord_t *c, uint64_t seen, const char *from)
{
    int64_t old = c->term;
    int rc;

    if (!sc_coord_is_leader(c) || seen >= (uint64_t)INT64_MAX - 1)
        return 0;
    if ((rc = sc_store_term_after(c->store, (int64_t)seen, sc_wall_ms(),
                                  "a newer term was heard: leading the next one", &c->term)) < 0) {
        sc_log_err("newer term not recorded", "rc=%s why=\"%s\"", sc_errname(rc),
                   sc_log_q(sc_store_errmsg(c->store)));
        return rc;
    }
    sc_log_notice("role",
                  "old=leader new=leader term=%lld old_term=%lld seen_term=%llu from=%s "
                  "why=\"a newer term was heard (store lost?): adopted, leading the next\"",
                  (long long)c->term, (long long)old, (unsigned long long)seen, from);
    c->dirty = true;
    c->last_leader_ms = 0; /* tell everyone now */
    return 0;
}

static int s_on_hello(sc_coord_t *c, size_t mi, const sc_msg_hello_t *h)
{
    sc_cmember_t *m = &c->members[mi];
    json_object *d;

    if (strcmp(m->boot_id, h->boot_id) != 0) {
        snprintf(m->boot_id, sizeof(m->boot_id), "%s", h->boot_id);
        m->have_doc = false; /* a new agent process: ask for its document */
        /* Gone after a Preempt or Terminate, but a new agent speaks for it: the VM was
         * re-created, or a Spot VM deallocated and started again. It is a member again. */
        if (m->gone) {
            int rc;

            m->gone = false;
            c->dirty = true;
            sc_log_notice("member back",
                          "member=%s boot_id=%s why=\"a new agent process after "
                          "it was gone (VM re-created or restarted)\"",
                          m->name, h->boot_id);
            d = json_object_new_object();
            json_object_object_add(d, "name", json_object_new_string(m->name));
            json_object_object_add(d, "state", json_object_new_string("healthy"));
            if ((rc = s_decide(c, SC_DLOG_MEMBER, d, "back after it was gone: a new agent")) < 0)
                return rc;
        }
    }
    if (m->fault_domain == h->fault_domain && m->update_domain == h->update_domain)
        return 0;
    m->fault_domain = h->fault_domain;
    m->update_domain = h->update_domain;
    c->dirty = true;
    sc_log_info("member hello", "member=%s fault_domain=%d update_domain=%d", m->name,
                h->fault_domain, h->update_domain);
    d = json_object_new_object();
    json_object_object_add(d, "name", json_object_new_string(m->name));
    json_object_object_add(d, "fault_domain", json_object_new_int(h->fault_domain));
    json_object_object_add(d, "update_domain", json_object_new_int(h->update_domain));
    return s_decide(c, SC_DLOG_MEMBER, d, "hello: fault and update domain");
}

/* Whether a heartbeat says the member is blind: its IMDS has been failing (no valid document) for
 * longer than --imds-stale (a VM deleted under a still-running agent, IMDS throttling or an outage,
 * a proxy in the way). Its last document is stale, so it must not hold events up forever. */
static bool s_blind(const sc_coord_t *c, const sc_msg_heartbeat_t *hb)
{
    return hb->imds_down_ms > c->o.imds_stale_ms;
}

/* A blind member counts in the registry like a silent one (its PRESENT votes keep nothing
 * alive; its silence ends nothing), until a heartbeat says its IMDS answers again. */
static int s_on_heartbeat(sc_coord_t *c, sc_cmember_t *m, const sc_msg_heartbeat_t *hb, int64_t now)
{
    sc_registry_changes_t ch = {0};
    bool blind = s_blind(c, hb);
    int rc;

    if (blind == m->blind)
        return 0;
    m->blind = blind;
    c->dirty = true;
    if (blind)
        sc_log_warn("member's IMDS silent: its last document no longer keeps events alive",
                    "member=%s imds_down_ms=%" PRId64 " limit_ms=%" PRId64, m->name,
                    hb->imds_down_ms, c->o.imds_stale_ms);
    else
        sc_log_notice("member's IMDS answers again: a witness again",
                      "member=%s imds_down_ms=%" PRId64, m->name, hb->imds_down_ms);
    if ((rc = sc_registry_set_alive(c->reg, m->name, !blind, now, &ch)) < 0)
        return rc;
    return s_handle_changes(c, &ch);
}

static int s_alert(sc_coord_t *c, sc_alert_t kind, const char *event_id, const char *member,
                   const char *dedup, const char *message, int attempt);

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
            rc = s_alert(c, SC_ALERT_MALFORMED_EVENT, NULL, m->name, d->malformed[i], msg, 0);
    }
    return rc;
}

/* *txn: whether the batch's transaction is open; opened here before the first message that
 * may write (anything but a nack, or a heartbeat that changes nothing, from a member already
 * alive), so that the once-a-second heartbeats of a quiet set cost no SQLite transaction. */
static int s_on_message(sc_coord_t *c, const unsigned char *rid, size_t rid_len, zmq_msg_t *zm,
                        bool *txn)
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
    mi = s_member_find(c, msg->from);
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
    m = &c->members[mi];
    if (msg->term > (uint64_t)c->term && (rc = s_adopt_term(c, msg->term, m->name)) < 0)
        goto out;
    if (!*txn && !(m->alive &&
                   (msg->type == SC_MSG_NACK ||
                    (msg->type == SC_MSG_HEARTBEAT && s_blind(c, &msg->heartbeat) == m->blind)))) {
        if ((rc = sc_store_begin(c->store)) < 0)
            goto out;
        *txn = true;
    }
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
            rc = s_handle_changes(c, &ch);
        if (rc < 0)
            goto out;
        told = true;
        s_send_simple(c, m, SC_MSG_LEADER); /* tell it the term at once */
    }
    switch (msg->type) {
    case SC_MSG_HELLO:
        rc = s_on_hello(c, mi, &msg->hello);
        if (!told)
            s_send_simple(c, m, SC_MSG_LEADER);
        break;
    case SC_MSG_HEARTBEAT: rc = s_on_heartbeat(c, m, &msg->heartbeat, now); break;
    case SC_MSG_DOCUMENT:
        /* Gone: its VM was deleted. An agent still running there only re-sends its last
         * document, whose events are over: after our restart it would bring the ended
         * Preempt back as new. A re-created VM's new agent says hello first (s_on_hello). */
        if (m->gone) {
            sc_log_debug("document of a gone member ignored", "member=%s", m->name);
            break;
        }
        m->have_doc = true;
        rc = sc_registry_apply_doc(c->reg, m->name, m->boot_id[0] ? m->boot_id : NULL,
                                   msg->document.document, msg->document.observed_at_ms, m->blind,
                                   now, &ch);
        if (rc < 0) {
            c->rejected++;
            sc_log_warn("document refused", "member=%s rc=%s", m->name, sc_errname(rc));
            rc = 0;
            break;
        }
        rc = s_handle_changes(c, &ch);
        if (rc >= 0)
            rc = s_on_malformed(c, m, &msg->document);
        /* a blind member's document (an answer to doc_request, a reconnect) is its old one:
         * it changed nothing, and is still no witness until a heartbeat says its IMDS
         * answers */
        if (rc >= 0 && m->blind &&
            (rc = sc_registry_set_alive(c->reg, m->name, false, now, &ch)) >= 0)
            rc = s_handle_changes(c, &ch);
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

/* Reads every message waiting on the ROUTER (bounded per round). The decisions of one batch
 * are committed together (one fsync, not one per decision): nothing a message handler sends
 * depends on them (LEADER, DOC_REQUEST), and orders go out from the plan round, after the
 * commit. A failure rolls the whole batch back; the daemon stops on it. */
static int s_drain_router(sc_coord_t *c)
{
    bool txn = false;
    int rc = 0;

    for (int n = 0; n < 100000 && rc >= 0; n++) {
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
        rc = s_on_message(c, zmq_msg_data(&id), zmq_msg_size(&id), &body, &txn);
        zmq_msg_close(&body);
        zmq_msg_close(&id);
    }
    if (txn && rc >= 0 && (rc = sc_store_commit(c->store)) < 0)
        sc_log_err("decisions not recorded", "rc=%s why=\"%s\"", sc_errname(rc),
                   sc_log_q(sc_store_errmsg(c->store)));
    if (txn && rc < 0)
        sc_store_rollback(c->store);
    return rc;
}

/* ---- planning and acting ------------------------------------------------------------- */

static bool s_alert_new(sc_coord_t *c, const char *key)
{
    char **nv;
    for (size_t i = 0; i < c->n_alerts; i++)
        if (strcmp(c->alerts[i], key) == 0)
            return false;
    if (c->n_alerts >= S_MAX_ALERTS_SEEN)
        return true; /* cannot remember: say it again rather than never */
    if (!(nv = realloc(c->alerts, (c->n_alerts + 1) * sizeof(*nv))))
        return true;
    c->alerts = nv;
    if ((c->alerts[c->n_alerts] = strdup(key)))
        c->n_alerts++;
    return true;
}

/* Raises an alert once: logged, counted, recorded as a decision. event_id and member may be
 * NULL; it is said once per (kind, event, dedup) (dedup: the member's name for the planner's
 * alerts). */
/* Raises an alert once per (kind, event, dedup, attempt): a decision, a log line, a count.
 * attempt: the drain attempt it is about (prepare_failed, drain_retry), else 0. */
static int s_alert(sc_coord_t *c, sc_alert_t kind, const char *event_id, const char *member,
                   const char *dedup, const char *message, int attempt)
{
    json_object *d;
    char key[512];

    snprintf(key, sizeof(key), "%s|%s|%s|%d", sc_alert_name(kind), event_id ? event_id : "-", dedup,
             attempt);
    if (!s_alert_new(c, key))
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
    sc_log_warn("ALERT", "alert=%s event=%s member=%s why=\"%s\"", sc_alert_name(kind),
                event_id ? event_id : "-", member ? member : "-", sc_log_q(message));
    return s_decide(c, SC_DLOG_ALERT, d, message);
}

static int s_approve(sc_coord_t *c, const sc_plan_input_t *in, const sc_action_t *a)
{
    const char *ids[SC_DOC_MAX_EVENTS];
    sc_cevstate_t *es[SC_DOC_MAX_EVENTS];
    size_t n = 0;
    int64_t now = sc_mono_ms();
    int rc;

    if (!sc_coord_is_leader(c))
        return 0;
    for (size_t i = 0; i < a->n_events && n < SC_DOC_MAX_EVENTS; i++) {
        const char *id = in->events[a->events[i]].ev->id;
        sc_cevstate_t *e = s_ev_get(c, id);
        if (!e)
            continue;
        e->touched = true;
        ids[n] = e->id;
        es[n++] = e;
    }
    if (!n)
        return 0;
    for (size_t i = 0; i < n; i++)
        es[i]->approval = SC_APPROVAL_INTENT; /* the registry learns it after the round */
    if (a->kind == SC_ACT_APPROVE_VIA) {
        int64_t intent = 0;
        sc_msg_t *msg = NULL;
        sc_cmember_t *m = &c->members[a->member];
        rc = sc_approver_intent_via(c->approver, c->term, m->name, ids, n, a->reason, &intent);
        if (rc < 0)
            return rc;
        for (size_t i = 0; i < n; i++) {
            es[i]->intent = intent;
            es[i]->intent_ms = now;
            es[i]->via = a->member;
        }
        if (sc_msg_new(SC_MSG_APPROVE_VIA, c->name, (uint64_t)c->term, ++c->seq, &msg) == 0) {
            for (size_t i = 0; i < n; i++)
                sc_msg_add_event(msg, ids[i]);
            s_send(c, m, msg);
            sc_msg_destroy(&msg);
        }
        c->count.delegated++;
        sc_log_notice("approval delegated", "via=%s events=%zu first=%s why=\"%s\"", m->name, n,
                      ids[0], sc_log_q(a->reason));
        return 0;
    } else {
        sc_approval_outcome_t out;
        for (size_t i = 0; i < n; i++)
            es[i]->via = SC_PLAN_NONE;
        rc = sc_approver_approve(c->approver, c->term, ids, n, a->reason, &out);
        c->last_post_ms = sc_mono_ms();
        if (rc < 0 && !out.intent_index)
            return rc;
        for (size_t i = 0; i < n; i++) {
            if (out.rc == 0) {
                es[i]->approval = SC_APPROVAL_APPROVED;
                sc_backoff_reset(&es[i]->backoff);
            } else {
                es[i]->approval = SC_APPROVAL_FAILED;
                es[i]->retry_at_ms = now + sc_backoff_next(&es[i]->backoff, out.retry_after_ms);
            }
        }
        if (out.rc == 0)
            c->count.posts_ok++;
        else
            c->count.posts_failed++;
        if (out.rc == 0)
            sc_log_notice("approved", "events=%zu first=%s http=%ld why=\"%s\"", n, ids[0],
                          out.http_status, sc_log_q(a->reason));
        else
            sc_log_warn("approval failed, will retry",
                        "events=%zu first=%s retry_ms=%lld why=\"%s\"", n, ids[0],
                        (long long)(es[0]->retry_at_ms - now), sc_log_q(out.message));
        return rc;
    }
}

static int s_act(sc_coord_t *c, const sc_plan_input_t *in, const sc_action_t *a)
{
    const sc_plan_event_t *pe =
        a->event != SC_PLAN_NONE && a->kind != SC_ACT_MEMBER_GONE ? &in->events[a->event] : NULL;
    sc_cevstate_t *e = pe ? s_ev_get(c, pe->ev->id) : NULL;
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
        int attempt;
        if (!e || !m || !sc_coord_is_leader(c))
            return 0;
        /* A prepare carries the planner's attempt; a recover belongs to the VM's attempt, a
         * new one after a rollback (the agent runs each phase of an attempt once: the
         * rolled-back VM impacted since then is recovered again). */
        attempt = prep ? a->attempt
                       : e->attempt[a->member] + (e->drain[a->member] == SC_DRAIN_ROLLED_BACK);
        if (attempt < 1)
            attempt = 1;
        d = json_object_new_object();
        json_object *vms = json_object_new_array();
        json_object_object_add(d, "event_id", json_object_new_string(e->id));
        json_object_array_add(vms, json_object_new_string(m->name));
        json_object_object_add(d, "vms", vms);
        json_object_object_add(d, "attempt", json_object_new_int(attempt));
        rc = s_decide(c, prep ? SC_DLOG_PREPARE_ORDERED : SC_DLOG_RECOVER_ORDERED, d, a->reason);
        if (rc < 0)
            return rc;
        e->drain[a->member] = prep ? SC_DRAIN_PREPARE_ORDERED : SC_DRAIN_RECOVER_ORDERED;
        e->attempt[a->member] = attempt;
        e->sent_ms[a->member] = sc_mono_ms();
        c->count.orders[prep ? SC_MSG_PHASE_PREPARE : SC_MSG_PHASE_RECOVER]++;
        sc_log_notice(prep ? "prepare ordered" : "recover ordered", "event=%s vm=%s why=\"%s\"",
                      e->id, m->name, sc_log_q(a->reason));
        s_send_order(c, a->member, e->id, prep ? SC_MSG_PHASE_PREPARE : SC_MSG_PHASE_RECOVER,
                     attempt);
        return 0;
    }
    case SC_ACT_APPROVE:
    case SC_ACT_APPROVE_VIA: return s_approve(c, in, a);
    case SC_ACT_MEMBER_GONE:
        if (!m || m->gone)
            return 0;
        m->gone = true;
        d = json_object_new_object();
        json_object_object_add(d, "name", json_object_new_string(m->name));
        json_object_object_add(d, "state", json_object_new_string("gone"));
        if (m->boot_id[0]) /* only another agent process brings it back (s_on_hello) */
            json_object_object_add(d, "boot_id", json_object_new_string(m->boot_id));
        rc = s_decide(c, SC_DLOG_MEMBER, d, a->reason);
        sc_log_notice("member gone", "member=%s why=\"%s\"", m->name, sc_log_q(a->reason));
        {
            sc_registry_changes_t ch = {0};
            if (sc_registry_forget_member(c->reg, m->name, sc_mono_ms(), &ch) >= 0 && rc >= 0)
                rc = s_handle_changes(c, &ch);
            else
                sc_registry_changes_release(&ch);
        }
        return rc;
    case SC_ACT_ALERT:
        return s_alert(c, a->alert, e ? e->id : NULL, m ? m->name : NULL, m ? m->name : "-",
                       a->reason, a->attempt);
    default: return 0;
    }
}

/* Builds the planner's input, runs it, carries out its actions. */
static int s_plan_round(sc_coord_t *c)
{
    size_t nreg = sc_registry_count(c->reg), nvm_total = 0, nseen_total = 0, nres_total = 0;
    sc_plan_member_t *pm = calloc(c->n_members, sizeof(*pm));
    sc_plan_event_t *pe = calloc(nreg ? nreg : 1, sizeof(*pe));
    sc_plan_vm_t *vms = NULL;
    size_t *seen = NULL;
    const char **strangers = NULL; /* names in Resources that are not members (borrowed) */
    sc_plan_output_t out = {0};
    sc_plan_input_t in = {0};
    int64_t now = sc_mono_ms();
    int rc = 0;

    if (!pm || !pe) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < c->n_members; i++) {
        sc_cmember_t *m = &c->members[i];
        pm[i] = (sc_plan_member_t){.name = m->name,
                                   .fault_domain = m->fault_domain,
                                   .update_domain = m->update_domain,
                                   .alive = m->alive,
                                   .gone = m->gone,
                                   .is_self = m->is_self,
                                   .blind = m->blind};
    }
    for (size_t i = 0; i < nreg; i++) {
        const sc_reg_event_t *re = sc_registry_event_at(c->reg, i);
        const sc_cevstate_t *e = s_ev_find(c, re->ev.id);
        nvm_total += re->ev.n_resources;
        nres_total += re->ev.n_resources;
        /* + room for members Azure may have dropped from Resources after their prepare */
        for (size_t k = 0; e && k < c->n_members; k++)
            nvm_total += e->drain[k] != SC_DRAIN_NONE;
        nseen_total += re->n_seen_by;
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
        sc_cevstate_t *e = s_ev_get(c, re->ev.id);
        sc_plan_event_t *p = &pe[in.n_events];

        if (!e)
            continue;
        e->touched = false;
        p->ev = &re->ev;
        p->phase = re->phase;
        p->start_kind = re->start_kind;
        p->first_seen_ms = re->first_seen_ms;
        p->approval = e->approval;
        p->retry_at_ms = e->retry_at_ms;
        p->vms = &vms[nvm_total];
        p->strangers = &strangers[nres_total];
        for (size_t r = 0; r < re->ev.n_resources; r++) {
            size_t mi = s_member_find(c, re->ev.resources[r]);
            bool dup = false;
            if (mi == SC_PLAN_NONE) { /* not ours: the planner withholds the approval */
                strangers[nres_total + p->n_strangers++] = re->ev.resources[r];
                continue;
            }
            for (size_t k = 0; k < p->n_vms; k++)
                dup = dup || vms[nvm_total + k].member == mi;
            if (dup)
                continue;
            vms[nvm_total + p->n_vms] = (sc_plan_vm_t){.member = mi,
                                                       .drain = e->drain[mi],
                                                       .attempt = e->attempt[mi],
                                                       .retry_at_ms = e->drain_retry_ms[mi]};
            p->n_vms++;
        }
        /* Rule 3: a VM whose prepare was ordered stays in the plan after Azure dropped it from
         * Resources (the event was updated): busy until recovered when the event is over. */
        for (size_t mi = 0; mi < c->n_members; mi++) {
            bool in_res = false;
            if (e->drain[mi] == SC_DRAIN_NONE)
                continue;
            for (size_t k = 0; k < p->n_vms; k++)
                in_res = in_res || vms[nvm_total + k].member == mi;
            if (!in_res)
                vms[nvm_total + p->n_vms++] = (sc_plan_vm_t){.member = mi,
                                                             .drain = e->drain[mi],
                                                             .dropped = true,
                                                             .attempt = e->attempt[mi],
                                                             .retry_at_ms = e->drain_retry_ms[mi]};
        }
        nvm_total += p->n_vms;
        nres_total += p->n_strangers;
        p->seen_by = &seen[nseen_total];
        for (size_t s = 0; s < re->n_seen_by; s++) {
            size_t mi = s_member_find(c, re->seen_by[s]);
            if (mi != SC_PLAN_NONE)
                seen[nseen_total + p->n_seen_by++] = mi;
        }
        nseen_total += p->n_seen_by;
        in.n_events++;
    }
    in.members = pm;
    in.n_members = c->n_members;
    in.events = pe;
    in.policy = &c->o.policy;
    in.now_wall_s = sc_wall_ms() / 1000;
    in.now_ms = now;
    rc = sc_plan(&in, &out);
    if (rc < 0) {
        sc_log_err("planner refused its input", "rc=%s", sc_errname(rc));
        goto out;
    }
    for (size_t i = 0; i < out.n_members && i < c->n_members; i++)
        c->members[i].state = out.member_state[i];
    for (size_t i = 0; i < out.n_events; i++) {
        sc_cevstate_t *e = s_ev_find(c, pe[i].ev->id);
        if (e) {
            free(e->waiting_for);
            e->waiting_for = out.waiting_for[i] ? strdup(out.waiting_for[i]) : NULL;
        }
    }
    /* MEMBER_GONE changes the registry, which in[] borrows from: carry it out last. */
    for (size_t i = 0; i < out.n_actions && rc >= 0; i++)
        if (out.actions[i].kind != SC_ACT_MEMBER_GONE)
            rc = s_act(c, &in, &out.actions[i]);
    for (size_t i = 0; i < c->n_ev; i++)
        if (c->ev[i]->approval == SC_APPROVAL_INTENT || c->ev[i]->approval == SC_APPROVAL_APPROVED)
            sc_registry_mark_approved(c->reg, c->ev[i]->id);
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
        sc_cevstate_t *e = s_ev_find(c, pe[i].ev->id);
        bool done = pe[i].phase != SC_REG_ACTIVE && e && !e->touched && out.closable[i];

        if (done) {
            char id[SC_EVENT_ID_MAX + 1];
            snprintf(id, sizeof(id), "%s", e->id);
            /* pe[i].ev points into the registry: nothing reads it after this point */
            if (sc_registry_remove_event(c->reg, id) < 0)
                break; /* out of memory for its tombstone: kept, tried again next round */
            sc_log_info("event closed", "event=%s", id);
            s_ev_remove(c, e);
            pe[i].ev = NULL;
            /* The rest of pe[] may now dangle: stop here, the next round goes on. */
            break;
        }
    }
out:
    sc_plan_output_release(&out);
    free(pm);
    free(pe);
    free(vms);
    free(seen);
    free(strangers);
    c->last_plan_ms = now;
    return rc;
}

/* ---- timers -------------------------------------------------------------------------- */

static int s_timers(sc_coord_t *c)
{
    int64_t now = sc_mono_ms();
    int rc = 0;

    if (now - c->last_tick_ms >= 200) {
        sc_registry_changes_t ch = {0};
        c->last_tick_ms = now;
        for (size_t i = 0; i < c->n_members && rc >= 0; i++) {
            sc_cmember_t *m = &c->members[i];
            if (m->alive && now - m->last_msg_ms > c->o.dead_after_ms) {
                m->alive = false;
                m->blind = false; /* its next heartbeat says again */
                c->dirty = true;
                sc_log_warn("member silent: dead", "member=%s silent_ms=%lld", m->name,
                            (long long)(now - m->last_msg_ms));
                if ((rc = sc_registry_set_alive(c->reg, m->name, false, now, &ch)) >= 0)
                    rc = s_handle_changes(c, &ch);
            }
        }
        if (rc >= 0 && (rc = sc_registry_tick(c->reg, now, &ch)) >= 0)
            rc = s_handle_changes(c, &ch);
        if (rc < 0)
            return rc;
        /* Delegated approvals that were never answered are tried again. */
        for (size_t i = 0; i < c->n_ev; i++) {
            sc_cevstate_t *e = c->ev[i];
            if (e->approval == SC_APPROVAL_INTENT && e->intent &&
                now - e->intent_ms > S_VIA_TIMEOUT_MS) {
                rc = sc_approver_record_answer(c->approver, c->term, e->intent, SC_E_TIMEOUT, 0,
                                               "no answer from the delegated agent");
                if (rc < 0)
                    return rc;
                for (size_t k = 0; k < c->n_ev; k++)
                    if (c->ev[k]->intent == e->intent && k != i) {
                        c->ev[k]->intent = 0;
                        c->ev[k]->approval = SC_APPROVAL_FAILED;
                        c->ev[k]->retry_at_ms = now;
                    }
                e->intent = 0;
                e->approval = SC_APPROVAL_FAILED;
                e->retry_at_ms = now;
                c->dirty = true;
            }
        }
    }
    if (sc_coord_is_leader(c) && now - c->last_leader_ms >= c->o.leader_ms) {
        c->last_leader_ms = now;
        s_broadcast_leader(c);
    }
    /* Orders not acknowledged yet go out again (agents de-duplicate); not before the start
     * grace is over (the plan may no longer want them). */
    if (sc_coord_is_leader(c) && !c->in_grace) {
        for (size_t i = 0; i < c->n_ev; i++) {
            sc_cevstate_t *e = c->ev[i];
            for (size_t k = 0; k < c->n_members; k++) {
                sc_drain_state_t d = e->drain[k];
                if ((d == SC_DRAIN_PREPARE_ORDERED || d == SC_DRAIN_RECOVER_ORDERED) &&
                    now - e->sent_ms[k] >= c->o.resend_ms && c->members[k].alive) {
                    e->sent_ms[k] = now;
                    sc_log_debug("order sent again", "event=%s vm=%s", e->id, c->members[k].name);
                    s_send_order(c, k, e->id,
                                 d == SC_DRAIN_PREPARE_ORDERED ? SC_MSG_PHASE_PREPARE
                                                               : SC_MSG_PHASE_RECOVER,
                                 e->attempt[k]);
                }
            }
        }
    }
    return 0;
}

/* ---- status and control -------------------------------------------------------------- */

static json_object *s_u64(uint64_t v)
{
    return json_object_new_int64((int64_t)v);
}

/* The counters since this process started, for `schedcoordctl metrics`:
 *   {"approval_posts": {"ok": N, "failed": N}, "approvals_delegated": N,
 *    "orders": {"prepare": N, "recover": N}, "hook_reports": {"prepare": {"done": N, ...}, ...},
 *    "alerts": {"deadline": N, ...}, "events_new": N,
 *    "imds_malformed_events": {"vm_0": N, ...}} */
static json_object *s_counters_json(const sc_coord_t *c)
{
    json_object *o = json_object_new_object(), *posts = json_object_new_object();
    json_object *orders = json_object_new_object(), *hooks = json_object_new_object();
    json_object *alerts = json_object_new_object(), *malformed = json_object_new_object();

    json_object_object_add(posts, "ok", s_u64(c->count.posts_ok));
    json_object_object_add(posts, "failed", s_u64(c->count.posts_failed));
    json_object_object_add(o, "approval_posts", posts);
    json_object_object_add(o, "approvals_delegated", s_u64(c->count.delegated));
    for (int ph = 0; ph < SC_MSG_PHASE_MAX; ph++) {
        json_object *by = json_object_new_object();
        json_object_object_add(orders, sc_msg_phase_name(ph), s_u64(c->count.orders[ph]));
        for (int st = 0; st < SC_MSG_HOOK_STATE_MAX; st++)
            json_object_object_add(by, sc_msg_hook_state_name(st), s_u64(c->count.hooks[ph][st]));
        json_object_object_add(hooks, sc_msg_phase_name(ph), by);
    }
    json_object_object_add(o, "orders", orders);
    json_object_object_add(o, "hook_reports", hooks);
    for (int a = SC_ALERT_NONE + 1; a < SC_ALERT_MAX; a++)
        json_object_object_add(alerts, sc_alert_name(a), s_u64(c->count.alerts[a]));
    json_object_object_add(o, "alerts", alerts);
    json_object_object_add(o, "events_new", s_u64(c->count.events_new));
    for (size_t i = 0; i < c->n_members; i++)
        json_object_object_add(malformed, c->members[i].name, s_u64(c->members[i].malformed));
    json_object_object_add(o, "imds_malformed_events", malformed);
    return o;
}

json_object *sc_coord_status(sc_coord_t *c)
{
    json_object *st = NULL, *arr;

    if (sc_store_snapshot(c->store, false, sc_wall_ms(), S_KEEP_ENDED_MS, &st) < 0)
        return NULL;
    json_object_object_del(st, "approvals");
    json_object_object_add(st, "leader",
                           sc_coord_is_leader(c) ? json_object_new_string(c->name) : NULL);
    json_object_object_add(st, "self", json_object_new_string(c->name));
    json_object_object_add(st, "term", json_object_new_int64(c->term));
    json_object_object_add(st, "role",
                           json_object_new_string(sc_coord_is_leader(c) ? "leader" : "follower"));
    json_object_object_add(st, "paused", json_object_new_boolean(c->o.policy.pause));
    json_object_object_add(st, "starting", json_object_new_boolean(c->in_grace));
    json_object_object_add(st, "rejected_messages", json_object_new_int64((int64_t)c->rejected));
    json_object_object_add(st, "started_ms", json_object_new_int64(c->started_wall_ms));
    json_object_object_add(st, "counters", s_counters_json(c));
    if (json_object_object_get_ex(st, "members", &arr)) {
        for (size_t i = 0; i < json_object_array_length(arr); i++) {
            json_object *jm = json_object_array_get_idx(arr, i);
            size_t mi =
                s_member_find(c, json_object_get_string(json_object_object_get(jm, "name")));
            if (mi == SC_PLAN_NONE)
                continue;
            sc_cmember_t *m = &c->members[mi];
            json_object_object_add(jm, "alive", json_object_new_boolean(m->alive));
            json_object_object_add(jm, "imds_stale", json_object_new_boolean(m->blind));
            json_object_object_add(
                jm, "state",
                json_object_new_string(m->gone ? "gone" : sc_member_state_name(m->state)));
            json_object_object_add(jm, "fault_domain", json_object_new_int(m->fault_domain));
            json_object_object_add(jm, "update_domain", json_object_new_int(m->update_domain));
        }
    }
    if (json_object_object_get_ex(st, "events", &arr)) {
        for (size_t i = 0; i < json_object_array_length(arr); i++) {
            json_object *je = json_object_array_get_idx(arr, i), *drains;
            sc_cevstate_t *e =
                s_ev_find(c, json_object_get_string(json_object_object_get(je, "EventId")));
            if (!e)
                continue;
            json_object_object_add(je, "approval",
                                   json_object_new_string(sc_approval_state_name(e->approval)));
            json_object_object_add(je, "waiting_for",
                                   e->waiting_for ? json_object_new_string(e->waiting_for) : NULL);
            if (json_object_object_get_ex(je, "drains", &drains)) {
                json_object_object_foreach(drains, vm, val)
                {
                    size_t mi = s_member_find(c, vm);
                    (void)val;
                    if (mi != SC_PLAN_NONE)
                        json_object_object_add(
                            drains, vm, json_object_new_string(sc_drain_state_name(e->drain[mi])));
                }
            }
        }
    }
    return st;
}

static json_object *s_ctl_handler(void *ud, const char *cmd, json_object *req)
{
    sc_coord_t *c = ud;
    json_object *o;
    (void)req;

    if (strcmp(cmd, "status") == 0 || strcmp(cmd, "events") == 0)
        return sc_coord_status(c);
    if ((strcmp(cmd, "pause") == 0 || strcmp(cmd, "resume") == 0) && !sc_coord_is_leader(c)) {
        char msg[SC_NAME_MAX + 128];

        snprintf(msg, sizeof(msg),
                 "this coordinator follows and approves nothing: run schedcoordctl %s on %s, "
                 "which leads",
                 cmd, c->members[0].name);
        o = json_object_new_object();
        json_object_object_add(o, "error", json_object_new_string(msg));
        return o;
    }
    if (strcmp(cmd, "pause") == 0 || strcmp(cmd, "resume") == 0) {
        bool pause = strcmp(cmd, "pause") == 0;
        json_object *d = json_object_new_object();
        c->o.policy.pause = pause;
        c->dirty = true;
        json_object_object_add(d, "alert", json_object_new_string(pause ? "paused" : "resumed"));
        json_object_object_add(d, "message",
                               json_object_new_string(pause ? "approvals paused by operator"
                                                            : "approvals resumed by operator"));
        s_decide(c, SC_DLOG_ALERT, d, pause ? "schedcoordctl pause" : "schedcoordctl resume");
        sc_log_notice(pause ? "approvals paused" : "approvals resumed", NULL);
        o = json_object_new_object();
        json_object_object_add(o, "paused", json_object_new_boolean(pause));
        return o;
    }
    o = json_object_new_object();
    json_object_object_add(o, "error", json_object_new_string("unknown command"));
    return o;
}

/* ---- restart ------------------------------------------------------------------------- */

/* A VM's drain from its stored rows; *ret_attempt gets the attempt they belong to. active: its
 * event is still listed (a recover done then was the rollback of a failed drain). */
static sc_drain_state_t s_restore_drain(json_object *per, bool active, int *ret_attempt)
{
    json_object *p = NULL, *r = NULL, *ph, *v;
    const char *res;
    sc_msg_hook_state_t st;
    sc_drain_state_t d;

    json_object_object_get_ex(per, "prepare", &p);
    json_object_object_get_ex(per, "recover", &r);
    *ret_attempt = 0;
    if ((p && json_object_object_get_ex(p, "attempt", &v) && v) ||
        (r && json_object_object_get_ex(r, "attempt", &v) && v))
        *ret_attempt = json_object_get_int(v);
    if (!p && !r)
        return SC_DRAIN_NONE;
    /* ordered, then its stored result as if reported now (a run without a result was
     * running when we stopped: ordered again, the agent answers with its result) */
    ph = r ? r : p;
    res = json_object_object_get_ex(ph, "result", &v) && v ? json_object_get_string(v) : NULL;
    d = r ? SC_DRAIN_RECOVER_ORDERED : SC_DRAIN_PREPARE_ORDERED;
    if (res && sc_msg_hook_state_parse(res, &st) == 0)
        d = s_drain_after(d, r ? SC_MSG_PHASE_RECOVER : SC_MSG_PHASE_PREPARE, st, active);
    return d;
}

static int64_t s_jint(json_object *o, const char *k)
{
    json_object *v;
    return json_object_object_get_ex(o, k, &v) && v ? json_object_get_int64(v) : 0;
}

static const char *s_jstr(json_object *o, const char *k)
{
    json_object *v;
    return json_object_object_get_ex(o, k, &v) && v ? json_object_get_string(v) : NULL;
}

/* Whether a stored event is still to be restored: not ended, ended within keep_ms, or some
 * VM was prepared (prepare ordered) and its recover has no final result yet (rule 3: however
 * long ago it ended, e.g. its member was down all along). */
static bool s_restore_wanted(json_object *je, int64_t wall, int64_t keep_ms)
{
    json_object *detail;

    if (!s_jstr(je, "ended_how") || s_jint(je, "ended_ms") >= wall - keep_ms)
        return true;
    if (!json_object_object_get_ex(je, "drain_detail", &detail) || !detail)
        return false;
    json_object_object_foreach(detail, vm, per)
    {
        int attempt;
        sc_drain_state_t d = s_restore_drain(per, false, &attempt);
        (void)vm;
        if (json_object_object_get_ex(per, "prepare", NULL) && d != SC_DRAIN_RECOVERED &&
            d != SC_DRAIN_RECOVER_FAILED)
            return true;
    }
    return false;
}

/* A stored event that ended and is not restored (over and recovered long ago): a tombstone
 * while it ended within --tombstone-s, so that an old copy of it stays ignored after the
 * restart too (sc_registry.h). 0 or -ENOMEM. */
static int s_restore_tombstone(sc_coord_t *c, json_object *je, int64_t wall, int64_t now)
{
    const char *id = s_jstr(je, "EventId"), *how = s_jstr(je, "ended_how");
    int64_t ended = s_jint(je, "ended_ms");
    int rc;

    if (!id || !how || wall - ended >= c->o.tombstone_ms)
        return 0;
    rc = sc_registry_add_tombstone(c->reg, id,
                                   strcmp(how, "cancelled") ? SC_REG_ENDED : SC_REG_CANCELLED,
                                   now - (wall - ended));
    if (rc == -EINVAL) {
        sc_log_warn("stored event id unusable, no tombstone for it", "event=\"%s\"", sc_log_q(id));
        rc = 0;
    }
    return rc;
}

/* Our own IMDS document, GET once at restart (an unanswered intent of ours: did it land?).
 * 0 and *ret_doc (the caller's), or an error with why filled. */
static int s_own_doc(sc_coord_t *c, sc_doc_t **ret_doc, char *why, size_t whylen)
{
    sc_imds_opts_t o;
    sc_imds_t *im = NULL;
    sc_imds_status_t st = {0};
    char *body = NULL, perr[256] = "";
    size_t len = 0;
    int rc;

    sc_imds_opts_init(&o);
    o.base_url = c->o.imds_url;
    if ((rc = sc_imds_new(&o, &im)) < 0) {
        snprintf(why, whylen, "IMDS client for %s: %s", c->o.imds_url, sc_strerror(rc));
        return rc;
    }
    rc = sc_imds_get_events(im, &body, &len, &st);
    sc_imds_destroy(&im);
    if (rc < 0) {
        snprintf(why, whylen, "%s", st.message[0] ? st.message : sc_strerror(rc));
        return rc;
    }
    rc = sc_doc_parse(body, len, ret_doc, perr, sizeof(perr));
    free(body);
    if (rc < 0)
        snprintf(why, whylen, "our IMDS document: %s", perr[0] ? perr : sc_strerror(rc));
    return rc;
}

/* True when every EventId of ids is Started in doc or absent from it. */
static bool s_started_or_gone_in(const sc_doc_t *doc, json_object *ids)
{
    for (size_t k = 0; ids && k < json_object_array_length(ids); k++) {
        const char *id = json_object_get_string(json_object_array_get_idx(ids, k));
        for (size_t j = 0; id && j < doc->n_events; j++)
            if (strcasecmp(doc->events[j].id, id) == 0 && doc->events[j].status != SC_EVENT_STARTED)
                return false;
    }
    return true;
}

static int s_restore(sc_coord_t *c)
{
    json_object *snap = NULL, *arr, *pend = NULL;
    int64_t now = sc_mono_ms(), wall = sc_wall_ms();
    sc_doc_t *own = NULL; /* our own IMDS document, read at most once (own_rc 1: not yet) */
    char own_why[300] = "";
    int rc, own_rc = 1;

    /* Every stored event (s_restore_wanted picks): an old one may still owe a recover. */
    if ((rc = sc_store_snapshot(c->store, true, wall, 0, &snap)) < 0)
        return rc;
    /* Members: domains and gone from the store; new ones recorded. */
    json_object_object_get_ex(snap, "members", &arr);
    for (size_t i = 0; i < c->n_members && rc >= 0; i++) {
        sc_cmember_t *m = &c->members[i];
        json_object *found = NULL;
        for (size_t k = 0; arr && k < json_object_array_length(arr); k++) {
            json_object *jm = json_object_array_get_idx(arr, k);
            if (strcmp(s_jstr(jm, "name") ? s_jstr(jm, "name") : "", m->name) == 0)
                found = jm;
        }
        if (found) {
            json_object *v;
            if (json_object_object_get_ex(found, "fault_domain", &v) && v)
                m->fault_domain = json_object_get_int(v);
            if (json_object_object_get_ex(found, "update_domain", &v) && v)
                m->update_domain = json_object_get_int(v);
            m->gone = s_jstr(found, "state") && !strcmp(s_jstr(found, "state"), "gone");
            if (m->gone && s_jstr(found, "boot_id"))
                snprintf(m->boot_id, sizeof(m->boot_id), "%s", s_jstr(found, "boot_id"));
        }
        if (!found ||
            strcmp(s_jstr(found, "endpoint") ? s_jstr(found, "endpoint") : "", m->endpoint) != 0) {
            json_object *d = json_object_new_object();
            json_object_object_add(d, "name", json_object_new_string(m->name));
            json_object_object_add(d, "endpoint", json_object_new_string(m->endpoint));
            json_object_object_add(d, "state", json_object_new_string("healthy"));
            rc = s_decide(c, SC_DLOG_MEMBER, d, "member of the cluster list");
        }
    }
    /* Events and their drains. */
    json_object_object_get_ex(snap, "events", &arr);
    for (size_t i = 0; rc >= 0 && arr && i < json_object_array_length(arr); i++) {
        json_object *je = json_object_array_get_idx(arr, i), *jev, *seen, *detail;
        const char *ended = s_jstr(je, "ended_how"), *started = s_jstr(je, "started_how");
        char perr[256];
        const char *wit[SC_COORD_MAX_MEMBERS];
        sc_event_t ev = {0};
        sc_reg_restore_t r = {0};
        sc_cevstate_t *e;
        size_t nw = 0;

        if (!json_object_object_get_ex(je, "event", &jev) || !jev)
            continue;
        if (!s_restore_wanted(je, wall, 3600 * 1000)) {
            rc = s_restore_tombstone(c, je, wall, now);
            continue;
        }
        if (sc_event_from_json(jev, &ev, perr, sizeof(perr)) < 0) {
            sc_log_warn("stored event unreadable, skipped", "why=\"%s\"", sc_log_q(perr));
            continue;
        }
        r.ev = &ev;
        r.phase = !ended                        ? SC_REG_ACTIVE
                  : !strcmp(ended, "cancelled") ? SC_REG_CANCELLED
                                                : SC_REG_ENDED;
        r.start_kind = !started                           ? SC_START_NONE
                       : !strcmp(started, "approved")     ? SC_START_APPROVED
                       : !strcmp(started, "host_failure") ? SC_START_DIRECT
                                                          : SC_START_FORCED;
        r.approved = s_jint(je, "approved_ms") != 0;
        r.first_seen_ms = now - (wall - s_jint(je, "first_seen_ms"));
        r.last_seen_ms = now;
        r.started_ms = started ? now - (wall - s_jint(je, "started_ms")) : 0;
        r.ended_ms = ended ? now - (wall - s_jint(je, "ended_ms")) : 0;
        r.observed_ms = s_jint(je, "observed_ms");
        if (json_object_object_get_ex(je, "seen_by", &seen) && seen &&
            json_object_is_type(seen, json_type_array))
            for (size_t k = 0; k < json_object_array_length(seen) && nw < SC_COORD_MAX_MEMBERS; k++)
                wit[nw++] = json_object_get_string(json_object_array_get_idx(seen, k));
        r.witnesses = wit;
        r.n_witnesses = nw;
        rc = sc_registry_restore_event(c->reg, &r);
        if (rc < 0) {
            sc_log_warn("stored event not restored", "event=%s rc=%s", r.ev->id, sc_errname(rc));
            rc = 0;
            sc_event_clear(&ev);
            continue;
        }
        if ((e = s_ev_get(c, ev.id))) {
            e->approval = r.approved ? SC_APPROVAL_APPROVED
                          : started  ? SC_APPROVAL_NOT_NEEDED
                                     : SC_APPROVAL_NONE;
            if (json_object_object_get_ex(je, "drain_detail", &detail) && detail) {
                json_object_object_foreach(detail, vm, per)
                {
                    size_t mi = s_member_find(c, vm);
                    if (mi != SC_PLAN_NONE) {
                        e->drain[mi] = s_restore_drain(per, !ended, &e->attempt[mi]);
                        e->drain_retry_ms[mi] = now; /* the backoff is not kept across a restart */
                    }
                }
            }
        }
        sc_event_clear(&ev);
    }
    json_object_put(snap);
    if (rc < 0)
        return rc;
    /* Intents without an answer: the crash came between the intent and the answer. An intent
     * of ours (not delegated) whose events the registry still has Scheduled: our own IMDS is
     * asked once (GET) whether they started or are gone — then the POST landed (or no longer
     * matters) and is not sent again; if some are still Scheduled we cannot tell whether the
     * first POST landed, and POST again (Azure answers 200 for an already approved id). */
    if ((rc = sc_approver_unanswered(c->approver, &pend)) < 0)
        return rc;
    for (size_t i = 0; rc >= 0 && i < json_object_array_length(pend); i++) {
        json_object *p = json_object_array_get_idx(pend, i), *ids, *via = NULL;
        bool all_started = true, own_done = false;
        json_object_object_get_ex(p, "event_ids", &ids);
        json_object_object_get_ex(p, "via", &via);
        for (size_t k = 0; ids && k < json_object_array_length(ids); k++) {
            const sc_reg_event_t *re =
                sc_registry_find(c->reg, json_object_get_string(json_object_array_get_idx(ids, k)));
            if (re && re->phase == SC_REG_ACTIVE && !sc_event_is_started(&re->ev))
                all_started = false;
        }
        if (!all_started && !via) {
            if (own_rc == 1 && (own_rc = s_own_doc(c, &own, own_why, sizeof(own_why))) < 0)
                sc_log_warn("own IMDS not read at restart: unanswered approvals POSTed again",
                            "rc=%s why=\"%s\"", sc_errname(own_rc), sc_log_q(own_why));
            own_done = own_rc == 0 && s_started_or_gone_in(own, ids);
        }
        rc = sc_approver_record_answer(
            c->approver, c->term, s_jint(p, "id"), all_started || own_done ? 0 : SC_E_STATE, 0,
            all_started ? "resolved after restart: the event started or is gone"
            : own_done  ? "resolved after restart: already started/gone at restart (own IMDS)"
                        : "resolved after restart: no answer recorded, approving again");
        for (size_t k = 0; ids && k < json_object_array_length(ids); k++) {
            sc_cevstate_t *e =
                s_ev_find(c, json_object_get_string(json_object_array_get_idx(ids, k)));
            if (!e)
                continue;
            const sc_reg_event_t *re = sc_registry_find(c->reg, e->id);
            bool started = !re || re->phase != SC_REG_ACTIVE || sc_event_is_started(&re->ev);
            e->approval = started || own_done ? SC_APPROVAL_APPROVED : SC_APPROVAL_FAILED;
            e->retry_at_ms = now;
        }
        sc_log_notice("approval intent resolved after restart", "intent=%lld outcome=%s",
                      (long long)s_jint(p, "id"),
                      all_started ? "done"
                      : own_done  ? "done (started or gone in our own IMDS)"
                                  : "approve again");
    }
    sc_doc_destroy(&own);
    json_object_put(pend);
    return rc;
}

/* ---- life cycle ---------------------------------------------------------------------- */

static void s_zap_cb(void *cb_data, sc_zap_decision_t decision, const char *mechanism,
                     const char *address, const char *name, const char *public_z85)
{
    (void)cb_data;
    if (decision != SC_ZAP_ACCEPTED)
        sc_log_warn("connection refused by ZAP", "decision=%s mechanism=%s address=%s key=%s",
                    sc_zap_decision_name(decision), mechanism, address, public_z85);
    else
        sc_log_debug("connection accepted", "member=%s address=%s", name, address);
}

int sc_coord_new(const sc_coord_opts_t *o, sc_coord_t **ret_coord, char *err, size_t errlen)
{
    sc_coord_t *c;
    char dbpath[4200];
    int rc, one = 1, zero = 0;

    if (!o || !ret_coord)
        return -EINVAL;
    if (!o->name || !o->imds_url || !o->members || !o->state_dir) {
        snprintf(err, errlen, "--name, --imds-url, --members and --state-dir are required");
        return SC_E_CONFIG;
    }
    if (strlen(o->state_dir) > 3000) {
        snprintf(err, errlen, "--state-dir: path too long");
        return SC_E_CONFIG;
    }
    if (o->insecure && (o->key_file || o->keys_file)) {
        /* as the agent: a key given with --insecure would be silently unused */
        snprintf(err, errlen, "--insecure: cannot be combined with --key / --keys");
        return SC_E_CONFIG;
    }
    if (!o->insecure && (!o->key_file || !o->keys_file)) {
        snprintf(err, errlen, "--key FILE and --keys FILE are required unless --insecure");
        return SC_E_CONFIG;
    }
    if (!(c = calloc(1, sizeof(*c))))
        return -ENOMEM;
    c->o = *o;
    c->ctl_fd = -1;
    c->role = SC_ROLE_FOLLOWER;
    c->started_wall_ms = sc_wall_ms();
    if (!(c->name = strdup(o->name)) || !(c->state_dir = strdup(o->state_dir))) {
        rc = -ENOMEM;
        goto fail;
    }
    if ((rc = s_parse_members(c, o->members, err, errlen)) < 0)
        goto fail;
    for (size_t i = 0; o->insecure && i < c->n_members; i++) {
        if (!sc_endpoint_is_local(c->members[i].endpoint)) {
            rc = sc_errf(err, errlen, SC_E_CONFIG,
                         "--insecure: member %s's endpoint %s is not on this machine (plain "
                         "text is for a single-machine demo only; use --key FILE --keys FILE)",
                         c->members[i].name, c->members[i].endpoint);
            goto fail;
        }
    }
    c->self = s_member_find(c, o->name);
    if (c->self == SC_PLAN_NONE || strcmp(c->members[c->self].name, o->name) != 0) {
        snprintf(err, errlen,
                 "our name %s (--name, or else the compute metadata's) is not in --members",
                 o->name);
        rc = SC_E_CONFIG;
        goto fail;
    }
    c->members[c->self].is_self = true;
    {
        /* one connection per member on the ROUTER, then the store, libcurl, ZAP, control */
        long need = (long)c->n_members + 128, have = sc_nofile_raise(need);
        if (have < need)
            sc_log_warn("open-file limit below what the member list needs",
                        "members=%zu need=%ld limit=%ld hint=\"raise LimitNOFILE\"", c->n_members,
                        need, have);
    }
    if (mkdir(o->state_dir, 0700) < 0 && errno != EEXIST) {
        rc = -errno;
        snprintf(err, errlen, "--state-dir %s: %s", o->state_dir, strerror(errno));
        goto fail;
    }
    /* Before the store and the control socket: a second coordinator on this directory would
     * lead a second term over the same store and take the socket away. */
    if ((rc = sc_dirlock_acquire(o->state_dir, "coordinator.lock", &c->lock, err, errlen)) < 0)
        goto fail;
    snprintf(dbpath, sizeof(dbpath), "%s/%s", o->state_dir, SC_CTL_DB_NAME);
    if ((rc = sc_store_open(dbpath, &c->store, err, errlen)) < 0)
        goto fail;
    if ((rc = sc_approver_new(c->store, o->imds_url, o->name, &c->approver)) < 0) {
        snprintf(err, errlen, "--imds-url %s: %s", o->imds_url, sc_strerror(rc));
        goto fail;
    }
    if ((rc = sc_registry_new(0, &c->reg)) < 0 ||
        (rc = sc_registry_set_tombstone_ms(c->reg, o->tombstone_ms)) < 0)
        goto fail;
    /* The term first: every decision of this run carries it. */
    if ((rc = sc_store_apply_pending(c->store)) < 0 ||
        (rc = sc_store_next_term(c->store, sc_wall_ms(), &c->term)) < 0) {
        snprintf(err, errlen, "store %s: %s", dbpath, sc_store_errmsg(c->store));
        goto fail;
    }
    c->in_grace = true;
    c->grace_until_ms = sc_mono_ms() + c->o.start_grace_ms;
    if ((rc = s_restore(c)) < 0) {
        snprintf(err, errlen, "restoring from %s: %s", dbpath, sc_strerror(rc));
        goto fail;
    }
    {
        bool paused = false;

        if ((rc = sc_store_paused(c->store, &paused)) < 0) {
            snprintf(err, errlen, "store %s: %s", dbpath, sc_store_errmsg(c->store));
            goto fail;
        }
        if (paused && !c->o.policy.pause) {
            c->o.policy.pause = true;
            sc_log_notice("approvals still paused by the operator",
                          "why=\"schedcoordctl pause before this start; schedcoordctl resume to "
                          "resume\"");
        }
    }
    /* Sockets. */
    if (!(c->zctx = zmq_ctx_new())) {
        rc = -ENOMEM;
        goto fail;
    }
    if (!o->insecure) {
        sc_curve_keypair_t kp;
        sc_keyring_t *ring = NULL;
        char key[4096];
        if (sc_identity_expand(o->key_file, c->name, key, sizeof(key)) < 0) {
            snprintf(err, errlen, "--key: path too long once {name} is replaced");
            rc = SC_E_CONFIG;
            goto fail;
        }
        /* a missing or bad key file is a configuration error: a restart would not fix it */
        if (sc_curve_keypair_load(key, &kp, err, errlen) < 0 ||
            sc_keyring_load(o->keys_file, &ring, err, errlen) < 0) {
            rc = SC_E_CONFIG;
            goto fail;
        }
        rc = sc_zap_start(c->zctx, ring, s_zap_cb, c, &c->zap);
        sc_keyring_destroy(&ring);
        if (rc < 0) {
            snprintf(err, errlen, "ZAP handler: %s", sc_strerror(rc));
            goto fail;
        }
        if (!(c->router = zmq_socket(c->zctx, ZMQ_ROUTER)) ||
            (rc = sc_curve_server_setup(c->router, &kp, c->zap)) < 0) {
            rc = rc < 0 ? rc : -zmq_errno();
            snprintf(err, errlen, "CURVE server setup: %s", sc_strerror(rc));
            goto fail;
        }
        memset(&kp, 0, sizeof(kp));
    } else {
        sc_log_warn("INSECURE: plain-text ZeroMQ, no authentication (--insecure)", NULL);
        if (!(c->router = zmq_socket(c->zctx, ZMQ_ROUTER)) ||
            (rc = sc_sock_insecure_setup(c->router)) < 0) {
            rc = rc < 0 ? rc : -zmq_errno();
            goto fail;
        }
    }
    zmq_setsockopt(c->router, ZMQ_LINGER, &zero, sizeof(zero));
    zmq_setsockopt(c->router, ZMQ_ROUTER_HANDOVER, &one, sizeof(one));
    if (zmq_bind(c->router, c->members[c->self].endpoint) < 0) {
        rc = -zmq_errno();
        snprintf(err, errlen, "cannot bind %s: %s", c->members[c->self].endpoint,
                 zmq_strerror(zmq_errno()));
        goto fail;
    }
    snprintf(c->ctl_path, sizeof(c->ctl_path), "%s/%s", o->state_dir, SC_CTL_SOCKET_NAME);
    if ((rc = sc_ctl_listen(c->ctl_path, &c->ctl_fd, err, errlen)) < 0)
        goto fail;
    /* Until the election is built, leadership is static: the first member of --members leads
     * (Azure's own suggestion: the first VM), every other coordinator is a follower that keeps
     * the agents' reports but never orders, approves or claims the lead. Several leaders would
     * drain fault domains and approve independently. */
    if (c->self == 0) {
        c->role = SC_ROLE_LEADER;
        sc_log_notice("role change", "old=follower new=leader term=%lld why=\"%s\"",
                      (long long)c->term,
                      "first member of --members: leader of a new term at start");
    } else {
        sc_log_notice("follower: the first member of --members leads",
                      "leader=%s why=\"election and failover are not built yet\"",
                      c->members[0].name);
    }
    c->dirty = true;
    *ret_coord = c;
    return 0;
fail:
    sc_coord_destroy(&c);
    return rc;
}

void sc_coord_destroy(sc_coord_t **coord)
{
    sc_coord_t *c;
    if (!coord || !*coord)
        return;
    c = *coord;
    if (c->ctl_fd >= 0)
        sc_ctl_close(c->ctl_fd, c->ctl_path);
    if (c->router)
        zmq_close(c->router);
    sc_zap_stop(&c->zap);
    if (c->zctx)
        zmq_ctx_term(c->zctx);
    for (size_t i = 0; i < c->n_ev; i++)
        s_ev_free(c->ev[i]);
    free(c->ev);
    for (size_t i = 0; i < c->n_alerts; i++)
        free(c->alerts[i]);
    free(c->alerts);
    sc_registry_destroy(&c->reg);
    sc_approver_destroy(&c->approver);
    sc_store_close(&c->store);
    sc_dirlock_release(&c->lock);
    free(c->members);
    free(c->by_name);
    free(c->name);
    free(c->state_dir);
    free(c);
    *coord = NULL;
}

/* The start grace (issue 9, case 3): after a start every member is "not alive" until it
 * speaks, and the planner skips dead members that were never ordered — an event half-prepared
 * before the restart could be approved before the other agents reconnect, and every member
 * would get a member_down alert. So nothing is planned (no order, approval or alert) until
 * every member not gone is alive with a document, or --start-grace has passed. */
static void s_grace_check(sc_coord_t *c, int64_t now)
{
    size_t heard = 0, expected = 0;

    for (size_t i = 0; i < c->n_members; i++) {
        if (c->members[i].gone)
            continue;
        expected++;
        heard += c->members[i].alive && c->members[i].have_doc;
    }
    if (heard < expected && now < c->grace_until_ms)
        return;
    c->in_grace = false;
    c->dirty = true;
    sc_log_notice("start grace over: planning", "heard=%zu members=%zu why=\"%s\"", heard, expected,
                  heard == expected ? "every member reported" : "--start-grace passed");
}

int sc_coord_step(sc_coord_t *c, int timeout_ms)
{
    zmq_pollitem_t items[2] = {{.socket = c->router, .events = ZMQ_POLLIN},
                               {.fd = c->ctl_fd, .events = ZMQ_POLLIN}};
    int64_t now = sc_mono_ms(), next = c->last_plan_ms + S_PLAN_EVERY_MS - now;
    int rc;

    if (c->dirty)
        next = 0;
    if (next < 0)
        next = 0;
    if (!sc_coord_is_leader(c)) /* no plan rounds to wake up for */
        next = timeout_ms;
    if (timeout_ms > next)
        timeout_ms = (int)next;
    if (zmq_poll(items, 2, timeout_ms) < 0 && zmq_errno() != EINTR)
        return -zmq_errno();
    if ((rc = s_drain_router(c)) < 0)
        return rc;
    if (items[1].revents & ZMQ_POLLIN)
        while (sc_ctl_serve_one(c->ctl_fd, s_ctl_handler, c) == 1)
            ;
    if ((rc = s_timers(c)) < 0)
        return rc;
    now = sc_mono_ms();
    if (c->in_grace)
        s_grace_check(c, now);
    /* a follower plans nothing: no orders, approvals, alerts or membership decisions; nor does
     * a leader that just started before its members had a chance to report */
    if (sc_coord_is_leader(c) && !c->in_grace &&
        (c->dirty || now - c->last_plan_ms >= S_PLAN_EVERY_MS)) {
        c->dirty = false;
        if ((rc = s_plan_round(c)) < 0)
            return rc;
    }
    return 0;
}

int sc_coord_run(sc_coord_t *c, volatile sig_atomic_t *stop)
{
    int rc = 0;
    while (!*stop && rc >= 0)
        rc = sc_coord_step(c, 100);
    return rc;
}

/* ---- the daemon's command line ------------------------------------------------------- */

typedef struct s_settings {
    char *name;             /* --name */
    char *imds_url;         /* --imds-url */
    char *members;          /* --members */
    char *state_dir;        /* --state-dir */
    bool insecure;          /* --insecure */
    char *key;              /* --key */
    char *keys;             /* --keys */
    double dead_after;      /* --dead-after */
    double imds_stale;      /* --imds-stale */
    double tombstone;       /* --tombstone-s */
    double resend;          /* --resend */
    double start_grace;     /* --start-grace */
    char *log_level;        /* --log-level */
    sc_policy_cfg_t policy; /* policy keys */
} s_settings_t;

static const sc_cfg_key_t s_keys[] = {
    {"name", SC_CFG_STRING, offsetof(s_settings_t, name), NULL,
     "our member name (its endpoint in --members is bound; default: name of the compute "
     "metadata)",
     0, 0, false},
    {"imds-url", SC_CFG_STRING, offsetof(s_settings_t, imds_url), "http://169.254.169.254",
     "base URL of our own VM's IMDS (approvals are POSTed there)", 0, 0, false},
    {"members", SC_CFG_STRING, offsetof(s_settings_t, members), NULL,
     "every member: NAME=HOST:PORT,... (the same list on every VM)", 0, 0, true},
    {"state-dir", SC_CFG_STRING, offsetof(s_settings_t, state_dir), NULL,
     "directory of coordinator.db and control.sock", 0, 0, true},
    {"insecure", SC_CFG_BOOL, offsetof(s_settings_t, insecure), "false",
     "plain-text ZeroMQ without authentication (single-machine demo only)", 0, 0, false},
    {"key", SC_CFG_STRING, offsetof(s_settings_t, key), NULL,
     "our CURVE key pair file (schedcoordctl keygen)", 0, 0, false},
    {"keys", SC_CFG_STRING, offsetof(s_settings_t, keys), NULL,
     "keyring: one \"NAME PUBLIC\" line per member", 0, 0, false},
    {"dead-after", SC_CFG_SECONDS, offsetof(s_settings_t, dead_after), "5",
     "a member is dead after this long without a message", 1, 3600, false},
    {"imds-stale", SC_CFG_SECONDS, offsetof(s_settings_t, imds_stale), "15",
     "a live member whose IMDS has been failing for this long no longer keeps events alive", 1,
     3600, false},
    {"tombstone-s", SC_CFG_SECONDS, offsetof(s_settings_t, tombstone), "604800",
     "reports of an event that ended are ignored this long after its end (7 days: the longest "
     "notice Azure gives), so that an old copy cannot bring it back",
     60, 31536000, false},
    {"resend", SC_CFG_SECONDS, offsetof(s_settings_t, resend), "2",
     "unacknowledged orders are sent again after this long", 1, 3600, false},
    {"start-grace", SC_CFG_SECONDS, offsetof(s_settings_t, start_grace), "5",
     "after a start, no order, approval or alert until every member reported or this long "
     "passed",
     0, 3600, false},
    {"log-level", SC_CFG_STRING, offsetof(s_settings_t, log_level), "info",
     "debug, info, notice, warn, err", 0, 0, false},
};

static volatile sig_atomic_t s_stop;

/* sc_identity_fetch's retries, logged once per new kind of failure. */
static void s_identity_retry(void *arg, int rc, int64_t retry_ms, const char *why)
{
    (void)arg;
    sc_log_warn("IMDS compute metadata not available yet, retrying",
                "rc=%s retry_ms=%" PRId64 " why=\"%s\"", sc_errname(rc), retry_ms, sc_log_q(why));
}

static void s_on_signal(int sig)
{
    (void)sig;
    s_stop = 1;
}

int sc_coord_main(int argc, char **argv)
{
    size_t nbase = sizeof(s_keys) / sizeof(s_keys[0]), n = nbase + sc_policy_n_keys;
    sc_cfg_key_t *table = calloc(n, sizeof(*table));
    s_settings_t s = {0};
    sc_coord_opts_t o;
    sc_coord_t *c = NULL;
    sc_compute_t compute = {0};
    sc_log_level_t lvl;
    char err[512] = "";
    int rc, status = 1;

    if (!table)
        return 1;
    memcpy(table, s_keys, sizeof(s_keys));
    sc_policy_keys_rebase(offsetof(s_settings_t, policy), table + nbase);
    rc = sc_config_parse_section(table, n, &s, argc, argv, stdout,
                                 "schedcoord-coordinator [--name NAME] --imds-url URL --members "
                                 "NAME=HOST:PORT,... --state-dir DIR [policy flags] [--insecure | "
                                 "--key FILE --keys FILE] [--config FILE: keys before any section "
                                 "and under [coordinator]]",
                                 "coordinator", err, sizeof(err));
    if (rc == 1) {
        status = 0;
        goto out;
    }
    if (rc < 0) {
        fprintf(stderr, "schedcoord-coordinator: %s\n", err);
        status = 2;
        goto out;
    }
    if (sc_log_level_parse(s.log_level, &lvl) < 0) {
        fprintf(stderr,
                "schedcoord-coordinator: --log-level: \"%s\" is not one of debug, info, "
                "notice, warn, err\n",
                s.log_level);
        status = 2;
        goto out;
    }
    sc_log_init("schedcoord-coordinator", lvl);
    sc_coord_opts_init(&o);
    if (sc_policy_from_cfg(&s.policy, &o.policy, err, sizeof(err)) < 0) {
        fprintf(stderr, "schedcoord-coordinator: %s\n", err);
        status = 2;
        goto out;
    }
    signal(SIGINT, s_on_signal);
    signal(SIGTERM, s_on_signal);
    signal(SIGPIPE, SIG_IGN);
    if (!s.name) {
        /* as the agent: the VM's name in its compute metadata, so that one config file
         * serves every VM of the set */
        if ((rc = sc_identity_fetch(s.imds_url, 5000, &s_stop, s_identity_retry, NULL, &compute)) <
            0) {
            if (rc == -EINTR) {
                sc_log_notice("stopped before IMDS answered", NULL);
                status = 0;
            } else {
                fprintf(stderr, "schedcoord-coordinator: --imds-url: %s\n", sc_strerror(rc));
                status = 2;
            }
            goto out;
        }
        if (!sc_msg_name_valid(compute.name)) {
            sc_log_err("the compute metadata name is not a valid member name: use --name",
                       "name=\"%s\"", sc_log_q(compute.name));
            status = 2;
            goto out;
        }
    }
    o.name = s.name ? s.name : compute.name;
    o.imds_url = s.imds_url;
    o.members = s.members;
    o.state_dir = s.state_dir;
    o.insecure = s.insecure;
    o.key_file = s.key;
    o.keys_file = s.keys;
    o.dead_after_ms = (int64_t)(s.dead_after * 1000);
    o.imds_stale_ms = (int64_t)(s.imds_stale * 1000);
    o.tombstone_ms = (int64_t)(s.tombstone * 1000);
    o.resend_ms = (int64_t)(s.resend * 1000);
    o.start_grace_ms = (int64_t)(s.start_grace * 1000);
    rc = sc_coord_new(&o, &c, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "schedcoord-coordinator: %s\n", err[0] ? err : sc_strerror(rc));
        status = rc == SC_E_CONFIG ? 2 : 1;
        goto out;
    }
    sc_log_notice("started", "name=%s term=%lld members=%zu endpoint=%s", c->name,
                  (long long)c->term, c->n_members, c->members[c->self].endpoint);
    rc = sc_coord_run(c, &s_stop);
    if (rc < 0)
        sc_log_err("stopping on error", "rc=%s why=\"%s\"", sc_errname(rc), sc_strerror(rc));
    else
        sc_log_notice("stopped", NULL);
    status = rc < 0 ? 1 : 0;
out:
    sc_coord_destroy(&c);
    sc_config_free(table, n, &s);
    free(table);
    return status;
}
