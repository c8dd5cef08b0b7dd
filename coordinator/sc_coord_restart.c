/* Restart recovery: members, events, drains and approvals rebuilt from the store, approval
 * intents left without an answer resolved. */
#include "sc_coord_int.h"

#include "sc_error.h"
#include "sc_imds.h"
#include "sc_log.h"
#include "sc_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
        d = sc_coord_dispatch_drain_after(d, r ? SC_MSG_PHASE_RECOVER : SC_MSG_PHASE_PREPARE, st,
                                          active);
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

int sc_coord_restart_restore(sc_coord_t *c)
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
            rc = sc_coord_exec_decide(c, SC_DLOG_MEMBER, d, "member of the cluster list");
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
        if ((e = sc_coord_exec_ev_get(c, ev.id))) {
            e->approval = r.approved ? SC_APPROVAL_APPROVED
                          : started  ? SC_APPROVAL_NOT_NEEDED
                                     : SC_APPROVAL_NONE;
            if (json_object_object_get_ex(je, "drain_detail", &detail) && detail) {
                json_object_object_foreach(detail, vm, per)
                {
                    size_t mi = sc_coord_members_find(c, vm);
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
                sc_coord_exec_ev_find(c, json_object_get_string(json_object_array_get_idx(ids, k)));
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
