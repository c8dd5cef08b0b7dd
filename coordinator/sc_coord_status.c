/* Status (schedcoordctl status / events / metrics) and the control handler (pause, resume). */
#include "sc_coord_int.h"

#include "sc_ctl.h"
#include "sc_log.h"
#include "sc_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_KEEP_ENDED_MS 120000 /* ended events stay in status this long */

static json_object *s_u64(uint64_t v)
{
    return json_object_new_int64((int64_t)v);
}

/* The counters since this process started, for `schedcoordctl metrics`:
 *   {"approval_posts": {"ok": N, "failed": N}, "approvals_delegated": N,
 *    "orders": {"prepare": N, "recover": N}, "hook_reports": {"prepare": {"done": N, ...}, ...},
 *    "alerts": {"deadline": N, ...}, "events_new": N, "members_mismatch_refused": N,
 *    "imds_malformed_events": {"vm_0": N, ...},
 *    "notify": [{"format","target","sent","failed","dropped","retried","queued",...}]} */
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
    json_object_object_add(o, "members_mismatch_refused", s_u64(sc_coord_digest_refused(c)));
    for (size_t i = 0; i < c->n_members; i++)
        json_object_object_add(malformed, c->members[i].name, s_u64(c->members[i].malformed));
    json_object_object_add(o, "imds_malformed_events", malformed);
    json_object_object_add(o, "notify", sc_coord_notify_stats_json(c));
    return o;
}

/* Member mi's live fields into jm: alive, blind, its state (gone as decided, else the last
 * plan's), its domains (as decided, else as reported by its hello). */
static void s_member_json(const sc_coord_t *c, size_t mi, json_object *jm)
{
    const sc_cmember_t *m = &c->members[mi];
    const sc_cs_member_t *cm = sc_cstate_member(c->cs, mi);

    json_object_object_add(jm, "alive", json_object_new_boolean(m->alive));
    json_object_object_add(jm, "imds_stale", json_object_new_boolean(m->blind));
    json_object_object_add(
        jm, "state", json_object_new_string(cm->gone ? "gone" : sc_member_state_name(m->state)));
    json_object_object_add(
        jm, "fault_domain",
        json_object_new_int(cm->fault_domain >= 0 ? cm->fault_domain : m->fault_domain));
    json_object_object_add(
        jm, "update_domain",
        json_object_new_int(cm->update_domain >= 0 ? cm->update_domain : m->update_domain));
}

json_object *sc_coord_status(sc_coord_t *c)
{
    json_object *st = NULL, *arr;

    if (sc_store_snapshot(c->store, false, sc_wall_ms(), S_KEEP_ENDED_MS, &st) < 0)
        return NULL;
    json_object_object_del(st, "approvals");
    json_object_object_add(st, "self", json_object_new_string(c->name));
    json_object_object_add(st, "term", json_object_new_int64(c->term));
    sc_coord_raft_status(c, st); /* role, leader, voters, commit_index, ... */
    json_object_object_add(st, "paused", json_object_new_boolean(c->o.policy.pause));
    json_object_object_add(st, "starting", json_object_new_boolean(c->in_grace));
    json_object_object_add(st, "stalled", json_object_new_boolean(c->in_grace && c->stalled));
    json_object_object_add(st, "rejected_messages", json_object_new_int64((int64_t)c->rejected));
    json_object_object_add(st, "started_ms", json_object_new_int64(c->started_wall_ms));
    json_object_object_add(st, "counters", s_counters_json(c));
    json_object_object_add(st, "hook_durations", sc_coord_forecast_history_json(c));
    if (json_object_object_get_ex(st, "members", &arr)) {
        bool *listed = calloc(c->n_members, sizeof(*listed));
        for (size_t i = 0; i < json_object_array_length(arr); i++) {
            size_t mi = sc_coord_members_find(c, json_object_get_string(json_object_object_get(
                                                     json_object_array_get_idx(arr, i), "name")));
            if (mi != SC_PLAN_NONE) {
                s_member_json(c, mi, json_object_array_get_idx(arr, i));
                if (listed)
                    listed[mi] = true;
            }
        }
        /* a follower's store holds no member (it decides nothing): the members it hears */
        for (size_t mi = 0; listed && mi < c->n_members; mi++) {
            json_object *jm;
            if (listed[mi])
                continue;
            jm = json_object_new_object();
            json_object_object_add(jm, "name", json_object_new_string(c->members[mi].name));
            json_object_object_add(jm, "endpoint", json_object_new_string(c->members[mi].endpoint));
            s_member_json(c, mi, jm);
            json_object_array_add(arr, jm);
        }
        free(listed);
    }
    if (json_object_object_get_ex(st, "events", &arr)) {
        for (size_t i = 0; i < json_object_array_length(arr); i++) {
            json_object *je = json_object_array_get_idx(arr, i), *drains;
            const char *id = json_object_get_string(json_object_object_get(je, "EventId"));
            const sc_cs_event_t *ce = sc_coord_exec_cs(c, id);
            sc_cevstate_t *e = sc_coord_exec_ev_find(c, id);
            if (!ce)
                continue;
            json_object_object_add(je, "approval",
                                   json_object_new_string(sc_approval_state_name(ce->approval)));
            json_object_object_add(je, "waiting_for",
                                   e && e->waiting_for ? json_object_new_string(e->waiting_for)
                                                       : NULL);
            json_object_object_add(je, "rehearsal",
                                   ce->rehearsal ? json_object_new_int64(ce->rehearsal) : NULL);
            sc_coord_forecast_status_event(c, je, id);
            if (json_object_object_get_ex(je, "drains", &drains)) {
                json_object_object_foreach(drains, vm, val)
                {
                    size_t mi = sc_coord_members_find(c, vm);
                    (void)val;
                    if (mi != SC_PLAN_NONE)
                        json_object_object_add(
                            drains, vm, json_object_new_string(sc_drain_state_name(ce->drain[mi])));
                }
            }
        }
    }
    return st;
}

json_object *sc_coord_status_ctl_handler(void *ud, const char *cmd, json_object *req)
{
    sc_coord_t *c = ud;
    json_object *o;

    if (strcmp(cmd, "status") == 0 || strcmp(cmd, "events") == 0)
        return sc_coord_status(c);
    if ((o = sc_coord_rehearse_ctl(c, cmd, req)) || (o = sc_coord_forecast_ctl(c, cmd, req)))
        return o;
    if ((strcmp(cmd, "pause") == 0 || strcmp(cmd, "resume") == 0) && !sc_coord_is_leader(c)) {
        char msg[SC_NAME_MAX + 128];

        json_object *st = sc_coord_raft_status(c, json_object_new_object()), *ld = NULL;
        json_object_object_get_ex(st, "leader", &ld);
        snprintf(msg, sizeof(msg),
                 "this coordinator follows and approves nothing: run schedcoordctl %s on %s, "
                 "which leads",
                 cmd, ld ? json_object_get_string(ld) : "the leader (none elected now)");
        json_object_put(st);
        o = json_object_new_object();
        json_object_object_add(o, "error", json_object_new_string(msg));
        return o;
    }
    if (strcmp(cmd, "pause") == 0 || strcmp(cmd, "resume") == 0) {
        bool pause = strcmp(cmd, "pause") == 0;
        json_object *d = json_object_new_object();
        c->dirty = true;
        json_object_object_add(d, "alert", json_object_new_string(pause ? "paused" : "resumed"));
        json_object_object_add(d, "message",
                               json_object_new_string(pause ? "approvals paused by operator"
                                                            : "approvals resumed by operator"));
        if (sc_coord_exec_decide(c, SC_DLOG_ALERT, d,
                                 pause ? "schedcoordctl pause" : "schedcoordctl resume") < 0) {
            o = json_object_new_object();
            json_object_object_add(o, "error",
                                   json_object_new_string("not recorded: the store failed"));
            return o;
        }
        /* the policy follows the entry once it is applied (sc_coord_restart.c, s_on_decide) */
        sc_log_notice(pause ? "approvals paused" : "approvals resumed", NULL);
        o = json_object_new_object();
        json_object_object_add(o, "paused", json_object_new_boolean(pause));
        return o;
    }
    o = json_object_new_object();
    json_object_object_add(o, "error", json_object_new_string("unknown command"));
    return o;
}
