/* Restart: the state rebuilt from the store's last snapshot and the log after it (the same
 * sc_cstate_apply a follower uses), snapshots saved as the log grows, then the registry rebuilt
 * from the state and approval intents left without an answer resolved. */
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

#define S_REPLAY_BATCH 10000    /* log entries read at once */
#define S_KEEP_ENDED_MS 3600000 /* an ended event is restored this long after its end */

static int64_t s_jint(json_object *o, const char *k)
{
    json_object *v;
    return json_object_object_get_ex(o, k, &v) && v ? json_object_get_int64(v) : 0;
}

/* ---- replay ------------------------------------------------------------------------------- */

/* Every decision, as the store commits it to its tables, is applied to the state: the one way
 * the state changes (sc_store_on_decide). */
static int s_on_decide(void *ud, const sc_dlog_entry_t *e, json_object *data)
{
    sc_coord_t *c = ud;
    char why[256];
    int rc = sc_cstate_apply(c->cs, e, data, why, sizeof(why));

    if (rc == -EINVAL) { /* deterministic: every replica passes over it alike (as a replay) */
        sc_log_warn("committed entry not applicable to the state, passed over",
                    "index=%lld kind=%s why=\"%s\"", (long long)e->index,
                    sc_dlog_kind_name(e->kind), sc_log_q(why));
        return sc_cstate_skip(c->cs, e->index);
    }
    if (rc < 0)
        sc_log_err("decision refused by the state", "index=%lld kind=%s rc=%s why=\"%s\"",
                   (long long)e->index, sc_dlog_kind_name(e->kind), sc_errname(rc), sc_log_q(why));
    else if (c->o.on_apply)
        c->o.on_apply(c->o.on_apply_ud, e, c->cs);
    if (rc >= 0 && e->kind == SC_DLOG_ALERT) { /* the operator's pause, once committed */
        json_object *a = NULL;
        const char *an =
            json_object_object_get_ex(data, "alert", &a) && a ? json_object_get_string(a) : "";
        if (!strcmp(an, "paused") || !strcmp(an, "resumed"))
            c->o.policy.pause = sc_cstate_paused(c->cs);
    }
    if (rc >= 0 && e->kind == SC_DLOG_EVENT_CLOSED) { /* leader or follower alike */
        json_object *id = NULL;
        json_object_object_get_ex(data, "event_id", &id);
        sc_coord_exec_forget_closed(c, id ? json_object_get_string(id) : NULL);
    }
    /* live, not replayed, committed: what it means is told (on the leader); what it makes the
     * leader do is done at the end of the turn (sc_coord_raft_flush) */
    if (rc >= 0)
        sc_coord_notify_entry(c, e, data);
    if (rc >= 0 && sc_coord_is_leader(c))
        sc_coord_raft_effect_push(c, e, data);
    return rc;
}

json_object *sc_coord_state_json(const sc_coord_t *c)
{
    json_object *o = NULL;

    return c && sc_cstate_to_json(c->cs, &o) == 0 ? o : NULL;
}

int sc_coord_follow(sc_coord_t *c, const sc_dlog_entry_t *e, char *err, size_t errlen)
{
    int rc;

    if (!c || !e)
        return -EINVAL;
    if (sc_coord_is_leader(c)) {
        snprintf(err, errlen, "a leader appends only its own decisions");
        return SC_E_STATE;
    }
    if ((rc = sc_store_append_entry(c->store, e)) < 0) {
        snprintf(err, errlen, "entry %lld (%s): %s", (long long)e->index,
                 sc_dlog_kind_name(e->kind),
                 rc == SC_E_DB ? sc_store_errmsg(c->store) : sc_strerror(rc));
        return rc;
    }
    if (e->term > c->term)
        c->term = e->term;
    return 0;
}

/* The state from the last snapshot, or empty when there is none or it is unreadable (then the
 * whole log is replayed). */
static int s_load_snapshot(sc_coord_t *c, const char **names)
{
    char *text = NULL, why[256] = "";
    json_object *snap;
    int64_t idx = 0;
    int rc;

    if ((rc = sc_cstate_new(names, c->n_members, &c->cs)) < 0)
        return rc;
    if ((rc = sc_store_last_snapshot(c->store, &idx, &text)) < 0 || !text)
        return rc;
    snap = json_tokener_parse(text);
    rc = snap ? sc_cstate_from_json(c->cs, snap, why, sizeof(why)) : -EINVAL;
    json_object_put(snap);
    free(text);
    if (rc == -ENOMEM)
        return rc;
    if (rc < 0 || sc_cstate_applied(c->cs) != idx) {
        int64_t base = 0;
        if (sc_store_log_base(c->store, &base, NULL) == 0 && base > 0) {
            sc_log_err("snapshot unreadable and the log before it compacted: no state to start "
                       "from (empty the state directory: the leader's snapshot comes then)",
                       "index=%lld base=%lld why=\"%s\"", (long long)idx, (long long)base,
                       snap ? sc_log_q(why) : "not JSON");
            sc_cstate_destroy(&c->cs);
            return SC_E_DB;
        }
        sc_log_warn("snapshot unreadable: the whole log is replayed", "index=%lld why=\"%s\"",
                    (long long)idx, snap ? sc_log_q(why) : "not JSON");
        sc_cstate_destroy(&c->cs);
        return sc_cstate_new(names, c->n_members, &c->cs);
    }
    c->snapshot_at = idx;
    return 0;
}

int sc_coord_restart_replay(sc_coord_t *c, char *err, size_t errlen)
{
    const char **names = calloc(c->n_members, sizeof(*names));
    size_t n = 0, skipped = 0;
    bool stop = false;
    int64_t from;
    int rc;

    if (!names)
        return -ENOMEM;
    for (size_t i = 0; i < c->n_members; i++)
        names[i] = c->members[i].name;
    rc = s_load_snapshot(c, names);
    free(names);
    if (rc < 0) {
        snprintf(err, errlen, "state: %s", sc_strerror(rc));
        return rc;
    }
    from = sc_cstate_applied(c->cs) + 1;
    do {
        sc_dlog_entry_t *v = NULL;
        if ((rc = sc_store_entries(c->store, from, S_REPLAY_BATCH, &v, &n)) < 0) {
            snprintf(err, errlen, "reading the decision log: %s", sc_store_errmsg(c->store));
            return rc;
        }
        for (size_t i = 0; i < n && rc >= 0; i++) {
            char why[256];
            if (!v[i].applied) { /* not known committed: applied once a leader says it is */
                stop = true;
                break;
            }
            rc = sc_cstate_apply(c->cs, &v[i], NULL, why, sizeof(why));
            if (rc >= 0 && c->o.on_apply)
                c->o.on_apply(c->o.on_apply_ud, &v[i], c->cs);
            if (rc == -EINVAL) { /* deterministic: every replica passes over it alike */
                sc_log_warn("log entry not applicable to the state, passed over",
                            "index=%lld kind=%s why=\"%s\"", (long long)v[i].index,
                            sc_dlog_kind_name(v[i].kind), sc_log_q(why));
                skipped++;
                rc = sc_cstate_skip(c->cs, v[i].index);
            }
        }
        sc_dlog_entries_free(v, n);
        if (rc < 0) {
            snprintf(err, errlen, "replaying the decision log: %s", sc_strerror(rc));
            return rc;
        }
        from = sc_cstate_applied(c->cs) + 1;
    } while (n == S_REPLAY_BATCH && !stop);
    sc_log_info("state replayed", "snapshot=%lld applied=%lld events=%zu passed_over=%zu",
                (long long)c->snapshot_at, (long long)sc_cstate_applied(c->cs),
                sc_cstate_n_events(c->cs), skipped);
    sc_store_on_decide(c->store, s_on_decide, c);
    return 0;
}

void sc_coord_restart_snapshot(sc_coord_t *c, int64_t every)
{
    int64_t applied = sc_cstate_applied(c->cs);
    json_object *snap = NULL;
    int rc;

    if (applied <= c->snapshot_at || applied - c->snapshot_at < (every > 0 ? every : 1))
        return;
    if ((rc = sc_cstate_to_json(c->cs, &snap)) >= 0)
        rc = sc_store_save_snapshot(c->store, applied, sc_cstate_term(c->cs), sc_wall_ms(),
                                    json_object_to_json_string_ext(snap, JSON_C_TO_STRING_PLAIN));
    json_object_put(snap);
    if (rc < 0) {
        sc_log_warn("snapshot not saved (the log is whole: a restart replays more)",
                    "index=%lld rc=%s why=\"%s\"", (long long)applied, sc_errname(rc),
                    sc_log_q(sc_store_errmsg(c->store)));
        return;
    }
    c->snapshot_at = applied;
    sc_log_debug("snapshot saved", "index=%lld", (long long)applied);
    sc_coord_snap_compact(c);
}

/* ---- the registry and the members from the state ---------------------------------------- */

/* Whether an event of the state still has its place in the registry: listed, ended within
 * S_KEEP_ENDED_MS, or some VM's drain not final (rule 3: however long ago it ended, e.g. its
 * member was down all along). */
static bool s_wanted(const sc_coord_t *c, const sc_cs_event_t *e, int64_t wall)
{
    if (e->phase == SC_REG_ACTIVE || wall - e->ended_ms < S_KEEP_ENDED_MS)
        return true;
    for (size_t i = 0; i < c->n_members; i++)
        if (e->drain[i] != SC_DRAIN_NONE && e->drain[i] != SC_DRAIN_RECOVERED &&
            e->drain[i] != SC_DRAIN_RECOVER_FAILED)
            return true;
    return false;
}

/* A tombstone for an event that ended within --tombstone-s, so that an old copy of it stays
 * ignored after the restart too (sc_registry.h). 0 or -ENOMEM. */
static int s_tombstone(sc_coord_t *c, const char *id, sc_reg_phase_t phase, int64_t ended,
                       int64_t wall, int64_t now)
{
    int rc;

    if (phase == SC_REG_ACTIVE || wall - ended >= c->o.tombstone_ms)
        return 0;
    rc = sc_registry_add_tombstone(c->reg, id, phase, now - (wall - ended));
    if (rc == -EINVAL) {
        sc_log_warn("stored event id unusable, no tombstone for it", "event=\"%s\"", sc_log_q(id));
        rc = 0;
    }
    return rc;
}

/* State event e into the registry, as a restart finds it: its witnesses (seen_by) present, its
 * phase and start as decided. A refusal is logged and passed over. 0 or -ENOMEM. */
static int s_restore_one(sc_coord_t *c, const sc_cs_event_t *e, int64_t wall, int64_t now)
{
    const char *wit[SC_COORD_MAX_MEMBERS];
    sc_reg_restore_t r = {0};
    sc_cevstate_t *le;
    int rc;

    r.ev = &e->ev;
    r.phase = e->phase;
    r.start_kind = e->start_kind;
    r.approved = e->approved_ms != 0;
    r.first_seen_ms = now - (wall - e->first_seen_ms);
    r.last_seen_ms = now;
    r.started_ms = e->started_ms ? now - (wall - e->started_ms) : 0;
    r.ended_ms = e->ended_ms ? now - (wall - e->ended_ms) : 0;
    r.observed_ms = e->observed_ms;
    for (size_t k = 0; k < e->n_seen_by && k < SC_COORD_MAX_MEMBERS; k++)
        wit[r.n_witnesses++] = e->seen_by[k];
    r.witnesses = wit;
    if ((rc = sc_registry_restore_event(c->reg, &r)) < 0) {
        sc_log_warn("event not restored", "event=%s rc=%s", e->ev.id, sc_errname(rc));
        return rc == -ENOMEM ? rc : 0;
    }
    /* the backoff of a rolled-back drain is a timer: not kept across a restart */
    if ((le = sc_coord_exec_ev_get(c, e->ev.id)))
        for (size_t k = 0; k < c->n_members; k++)
            le->drain_retry_ms[k] = now;
    return 0;
}

int sc_coord_restart_reconcile_registry(sc_coord_t *c)
{
    int64_t now = sc_mono_ms(), wall = sc_wall_ms();
    size_t n = 0;
    int rc = 0;

    for (size_t i = 0; rc >= 0 && i < sc_cstate_n_events(c->cs); i++) {
        const sc_cs_event_t *e = sc_cstate_event_at(c->cs, i);
        if (!s_wanted(c, e, wall) || sc_registry_find(c->reg, e->ev.id))
            continue;
        sc_log_notice("event of the state missing from the registry: restored",
                      "event=%s "
                      "phase=%s",
                      e->ev.id, sc_reg_phase_name(e->phase));
        if ((rc = s_restore_one(c, e, wall, now)) >= 0)
            n++;
    }
    if (n) {
        c->dirty = true;
        /* a restored event counts its witnesses present, but their documents may have lost it
         * since (the registry had ended it, then forgotten it past its tombstone): nobody sends
         * a document that did not change, so it would stay active for good, and its fault
         * domain busy (nemesis seed 1: a Preempt of a deleted VM held its domain, every other
         * domain's events went at NotBefore). A fresh document is asked of every member. */
        for (size_t i = 0; i < c->n_members; i++) {
            c->members[i].have_doc = false;
            c->members[i].doc_req_ms = 0;
        }
        sc_log_notice("events restored to the registry: a fresh document asked of every member",
                      "events=%zu", n);
    }
    return rc < 0 ? rc : 0;
}

#define S_EVICTION_KEEP_MS (3600 * 1000) /* an eviction noted is restored this long at most */

typedef struct s_evict_ctx {
    sc_coord_t *c;
    int64_t wall, now;
    char **forget; /* ids to forget (the state has them, too old, unreadable) */
    size_t n_forget, n_restored;
} s_evict_ctx_t;

/* One eviction noted before the restart (sc_store_eviction_note): unless the state or the
 * registry knows it, into the registry as started and over — the member goes, as the
 * take-over decides it (sc_coord_exec_sync_registry). */
static int s_restore_eviction(void *arg, const char *id, const char *event_json,
                              int64_t started_wall_ms)
{
    s_evict_ctx_t *x = arg;
    sc_coord_t *c = x->c;
    json_object *j = NULL;
    sc_event_t ev = {0};
    char err[160] = "";
    char **nv;
    const sc_cs_event_t *ce = sc_coord_exec_cs(c, id);
    /* the state decided its start or its end: nothing to add; the state has it as not started
     * (its drain decided, its start seen only by us: nemesis seed 93 of the campaign on
     * c8a6ed2, where it was then taken for cancelled): the registry's copy is replaced */
    bool drop = x->wall - started_wall_ms > S_EVICTION_KEEP_MS ||
                (ce && (ce->started_ms || ce->phase != SC_REG_ACTIVE)) ||
                (!ce && sc_registry_find(c->reg, id)) ||
                sc_registry_is_tombstoned(c->reg, id, x->now);
    int rc = 0;

    if (!drop) {
        if (!(j = json_tokener_parse(event_json)) ||
            sc_event_from_json(j, &ev, err, sizeof(err)) < 0) {
            sc_log_warn("eviction noted before the restart unreadable: dropped",
                        "event=\"%s\" why=\"%s\"", sc_log_q(id), sc_log_q(err));
            drop = true;
        } else {
            sc_reg_restore_t r = {.ev = &ev,
                                  .phase = SC_REG_ENDED,
                                  .start_kind = SC_START_DIRECT,
                                  .first_seen_ms = x->now - (x->wall - started_wall_ms),
                                  .last_seen_ms = x->now,
                                  .started_ms = x->now - (x->wall - started_wall_ms),
                                  .ended_ms = x->now};
            if ((rc = sc_registry_restore_event(c->reg, &r)) >= 0) {
                x->n_restored++;
                sc_log_notice("eviction seen before the restart: restored, its member leaves",
                              "event=%s type=%s", ev.id, sc_event_type_name(ev.type));
            } else {
                sc_log_warn("eviction not restored", "event=%s rc=%s", id, sc_errname(rc));
                rc = rc == -ENOMEM ? rc : 0;
            }
        }
        sc_event_clear(&ev);
        json_object_put(j);
    }
    if (drop && (nv = realloc(x->forget, (x->n_forget + 1) * sizeof(*nv)))) {
        x->forget = nv;
        if ((x->forget[x->n_forget] = strdup(id)))
            x->n_forget++;
    }
    return rc;
}

static int s_restore_evictions(sc_coord_t *c, int64_t wall, int64_t now)
{
    s_evict_ctx_t x = {.c = c, .wall = wall, .now = now};
    int rc = sc_store_evictions_each(c->store, s_restore_eviction, &x);

    for (size_t i = 0; i < x.n_forget; i++) {
        sc_store_eviction_forget(c->store, x.forget[i]);
        free(x.forget[i]);
    }
    free(x.forget);
    return rc == -ENOMEM ? rc : 0;
}

/* The registry holds what the state decided: events still owing something, tombstones for the
 * others; and the evictions we saw start that no leader decided yet. ids_closing gets the
 * events to close (the caller's, n_closing of them). */
static int s_rebuild_registry(sc_coord_t *c, int64_t wall, int64_t now, char ***ret_closing,
                              size_t *ret_n)
{
    size_t n_ev = sc_cstate_n_events(c->cs), n_closing = 0;
    char **closing = calloc(n_ev ? n_ev : 1, sizeof(*closing));
    int rc = 0;

    if (!closing)
        return -ENOMEM;
    for (size_t i = 0; rc >= 0 && i < sc_cstate_n_closed(c->cs); i++) {
        const sc_cs_closed_t *t = sc_cstate_closed_at(c->cs, i);
        rc = s_tombstone(c, t->id, t->phase, t->ended_ms, wall, now);
    }
    for (size_t i = 0; rc >= 0 && i < n_ev; i++) {
        const sc_cs_event_t *e = sc_cstate_event_at(c->cs, i);

        if (!s_wanted(c, e, wall)) {
            rc = s_tombstone(c, e->ev.id, e->phase, e->ended_ms, wall, now);
            if (rc >= 0 && !(closing[n_closing++] = strdup(e->ev.id)))
                rc = -ENOMEM;
            continue;
        }
        if ((rc = s_restore_one(c, e, wall, now)) < 0)
            break;
    }
    if (rc >= 0)
        rc = s_restore_evictions(c, wall, now);
    if (rc < 0) {
        sc_strv_free(closing, n_closing);
        return rc;
    }
    sc_log_notice("registry rebuilt from the state", "events=%zu tombstones=%zu closing=%zu",
                  sc_registry_count(c->reg), sc_registry_tombstone_count(c->reg), n_closing);
    *ret_closing = closing;
    *ret_n = n_closing;
    return 0;
}

/* The leader records members' endpoints not recorded yet (or changed), and the domains their
 * agents reported to it while it followed — not their health: a member gone stays gone (once
 * this entry said "healthy" and the store forgot a gone member the memory still held). */
static int s_record_members(sc_coord_t *c)
{
    int rc = 0; /* proposals: the turn's transaction (one fsync) holds them all */

    for (size_t i = 0; i < c->n_members && rc >= 0; i++) {
        const sc_cs_member_t *cm = sc_cstate_member(c->cs, i);
        const sc_cmember_t *m = &c->members[i];
        json_object *d;

        if (strcmp(cm->endpoint, m->endpoint) != 0) {
            d = json_object_new_object();
            json_object_object_add(d, "name", json_object_new_string(m->name));
            json_object_object_add(d, "endpoint", json_object_new_string(m->endpoint));
            rc = sc_coord_exec_decide(c, SC_DLOG_MEMBER, d, "member of the cluster list");
        }
        /* Domains an agent reported while we followed (its hello came before anyone led, or
         * to us only): the plan counts the domains decided, and an unknown one as a domain of
         * its own, so undecided they would make every event "too wide". */
        if (rc >= 0 && m->fault_domain >= 0) /* heard at all */
            rc = sc_coord_members_decide_domains(c, i, "heard while following");
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

/* Whether our own IMDS document settles every EventId of ids: each is Started in it, or absent
 * from it while no other member's report still shows it (the registry: seen by us alone, or
 * not at all). An event absent from our IMDS that another member sees is not settled by our
 * IMDS: with per-VM visibility we never see it at all. */
static bool s_own_doc_settles(const sc_coord_t *c, const sc_doc_t *doc, json_object *ids)
{
    for (size_t k = 0; ids && k < json_object_array_length(ids); k++) {
        const char *id = json_object_get_string(json_object_array_get_idx(ids, k));
        const sc_reg_event_t *re = id ? sc_registry_find(c->reg, id) : NULL;
        bool present = false;

        for (size_t j = 0; id && j < doc->n_events; j++) {
            if (strcasecmp(doc->events[j].id, id) != 0)
                continue;
            present = true;
            if (doc->events[j].status != SC_EVENT_STARTED)
                return false;
        }
        if (present || !re || re->phase != SC_REG_ACTIVE || sc_event_is_started(&re->ev))
            continue;
        for (size_t s = 0; s < re->n_seen_by; s++)
            if (strcmp(re->seen_by[s], c->name) != 0)
                return false; /* another member sees it Scheduled: not ours to settle */
    }
    return true;
}

int sc_coord_restart_restore(sc_coord_t *c)
{
    int64_t now = sc_mono_ms(), wall = sc_wall_ms();
    char **closing = NULL;
    size_t n_closing = 0;
    int rc;

    if ((rc = s_rebuild_registry(c, wall, now, &closing, &n_closing)) < 0)
        return rc;
    if (!sc_coord_is_leader(c)) { /* a follower decides nothing */
        sc_strv_free(closing, n_closing);
        return 0;
    }
    rc = s_record_members(c);
    /* over long ago, nothing owed: out of the live state, as a plan round would */
    for (size_t i = 0; rc >= 0 && i < n_closing; i++) {
        json_object *d = json_object_new_object();
        json_object_object_add(d, "event_id", json_object_new_string(closing[i]));
        rc = sc_coord_exec_decide(c, SC_DLOG_EVENT_CLOSED, d,
                                  "ended long ago and nothing owed: closed at restart");
    }
    sc_strv_free(closing, n_closing);
    if (rc < 0)
        return rc;
    return sc_coord_restart_resolve_intents(c);
}

int sc_coord_restart_take_lead(sc_coord_t *c)
{
    /* the state may hold events our registry never did (a snapshot installed, entries
     * followed that no agent of ours reported): the planner plans the registry's */
    int rc = sc_coord_restart_reconcile_registry(c);
    if (rc >= 0)
        rc = s_record_members(c);
    if (rc >= 0)
        rc = sc_coord_exec_sync_registry(c);
    for (size_t i = 0; rc >= 0 && i < c->n_ev; i++) { /* a new tenure: no order sent in it yet */
        memset(c->ev[i]->sent_ms, 0, c->n_members * sizeof(*c->ev[i]->sent_ms));
        memset(c->ev[i]->unasked_ms, 0, c->n_members * sizeof(*c->ev[i]->unasked_ms));
    }
    return rc < 0 ? rc : sc_coord_restart_resolve_intents(c);
}

int sc_coord_restart_resolve_intents(sc_coord_t *c)
{
    json_object *pend = NULL;
    int64_t now = sc_mono_ms();
    sc_doc_t *own = NULL; /* our own IMDS document, read at most once (own_rc 1: not yet) */
    char own_why[300] = "";
    int rc, own_rc = 1;

    /* Intents without an answer: a crash, or a tenure that ended, between the intent and its
     * answer. The members that see the events settle them (the registry, their reports): all
     * Started or gone, done. Else, for an intent of ours (not delegated), our own IMDS is asked
     * once (GET): Started there, done; absent there, done only when no other member sees it
     * (with per-VM visibility we may never see it). Otherwise nobody can tell whether the POST
     * landed: its answer is UNKNOWN — it blocks rollback as an intent does, and the planner
     * POSTs again (through a member that sees it: Azure answers 200 to a repeat). */
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
                sc_log_warn("own IMDS not read: unanswered approvals POSTed again",
                            "rc=%s why=\"%s\"", sc_errname(own_rc), sc_log_q(own_why));
            own_done = own_rc == 0 && s_own_doc_settles(c, own, ids);
        }
        rc = sc_coord_exec_decide(
            c, SC_DLOG_APPROVAL_ANSWER,
            sc_approver_answer_data(
                s_jint(p, "id"), all_started || own_done ? 0 : SC_E_STATE, 0,
                all_started ? "resolved: the event started or is gone (the members' reports)"
                : own_done  ? "resolved: started, or gone and seen by nobody else (own IMDS)"
                            : "resolved: no answer recorded, the POST may have landed: unknown, "
                              "approving again"),
            "approval intent left open: resolved");
        /* the answer settles the events (sc_cstate); an unknown one is POSTed again from now */
        for (size_t k = 0; ids && k < json_object_array_length(ids); k++) {
            sc_cevstate_t *e =
                sc_coord_exec_ev_get(c, json_object_get_string(json_object_array_get_idx(ids, k)));
            if (e)
                e->retry_at_ms = now;
        }
        sc_log_notice("approval intent resolved", "intent=%lld outcome=%s",
                      (long long)s_jint(p, "id"),
                      all_started ? "done"
                      : own_done  ? "done (own IMDS, nobody else sees it)"
                                  : "unknown: approve again");
    }
    sc_doc_destroy(&own);
    json_object_put(pend);
    return rc;
}
