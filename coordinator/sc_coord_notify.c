/* Notifications (--notify): what the leader tells people, derived from the decisions as they
 * are applied live (never from the entries a restart replays), so that each is said once per
 * decision; posted to the notifier (sc_notify.h), which never blocks the loop.
 *
 *   entry applied (leader)            notification
 *   TERM                              leader_changed
 *   EVENT_SEEN of a new Scheduled     event_scheduled, held until the next plan round: the
 *     event                           planner says where it stands in the drain queue
 *   PREPARE_ORDERED, first of the     drain_started; the domain's other orders of the same
 *     event in a domain (attempt 1)   round join it (one message per event and domain)
 *   APPROVAL_ANSWER rc 0              approved, for each event it approved (not one started)
 *   EVENT_STARTED                     event_started
 *   EVENT_ENDED                       event_ended
 *   HOOK_PROGRESS failed, timed out,  hook_failed (once per VM, phase and attempt)
 *     interrupted
 *   ALERT deadline, forced            deadline_missed
 *
 * Every message about an event goes after that event's event_scheduled (posted without the
 * plan when something else comes first), and a drain_started being gathered goes before any
 * other message: the receivers get them in the order of the decisions. */
#include "sc_coord_int.h"

#include "sc_error.h"
#include "sc_log.h"
#include "sc_notify.h"
#include "sc_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define S_SAID_MAX 4096 /* keys remembered ("approved|ID", ...): the oldest go first */
#define S_INTENTS 32    /* approval intents remembered (who POSTs each) */
#define S_ORDER_MAX 64  /* domains in a drain order */

/* One approval intent seen applied: who POSTs it. */
typedef struct s_intent {
    int64_t index;             /* its entry's index; 0: free */
    char via[SC_NAME_MAX + 1]; /* the delegate; "": the leader itself */
} s_intent_t;

struct sc_cnotify {
    sc_notify_t *n;                    /* the notifier */
    char **said;                       /* keys of what was said (de-duplication) */
    size_t n_said;                     /* entries */
    char **pending;                    /* events whose event_scheduled waits for a plan round */
    size_t n_pending;                  /* entries */
    s_intent_t intents[S_INTENTS];     /* the last intents applied */
    size_t next_intent;                /* where the next goes */
    bool open;                         /* a drain_started is being gathered */
    char open_id[SC_EVENT_ID_MAX + 1]; /* its event */
    int open_dom;                      /* its domain (-1 unknown) */
    int64_t open_ts;                   /* wall ms of its first order */
    size_t *open_vms;                  /* its members (indexes), n_members at most */
    size_t n_open;                     /* entries */
    uint64_t seen_failed[SC_NOTIFY_MAX_TARGETS];  /* failed, as last logged */
    uint64_t seen_dropped[SC_NOTIFY_MAX_TARGETS]; /* dropped, as last logged */
};

/* ---- small helpers ------------------------------------------------------------------------ */

static const char *s_jstr(json_object *o, const char *key)
{
    json_object *v;
    return o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
               ? json_object_get_string(v)
               : NULL;
}

static int64_t s_jint(json_object *o, const char *key, int64_t dflt)
{
    json_object *v;
    return o && json_object_object_get_ex(o, key, &v) && v ? json_object_get_int64(v) : dflt;
}

static bool s_said(const sc_cnotify_t *nt, const char *key)
{
    for (size_t i = 0; i < nt->n_said; i++)
        if (strcmp(nt->said[i], key) == 0)
            return true;
    return false;
}

/* Remembers key; false when it was said already (or memory is short: better once too often
 * than never). */
static bool s_say_once(sc_cnotify_t *nt, const char *key)
{
    char *k, **nv;

    if (s_said(nt, key))
        return false;
    if (nt->n_said >= S_SAID_MAX) {
        free(nt->said[0]);
        memmove(nt->said, nt->said + 1, (nt->n_said - 1) * sizeof(*nt->said));
        nt->n_said--;
    }
    if (!(k = strdup(key)) || !(nv = realloc(nt->said, (nt->n_said + 1) * sizeof(*nv)))) {
        free(k);
        return true;
    }
    nt->said = nv;
    nt->said[nt->n_said++] = k;
    return true;
}

/* Forgets what was said and held about event id (it is closed: nothing more comes). */
static void s_forget(sc_cnotify_t *nt, const char *id)
{
    size_t w = 0, len = strlen(id);

    for (size_t i = 0; i < nt->n_said; i++) {
        const char *bar = strchr(nt->said[i], '|');
        if (bar && strncasecmp(bar + 1, id, len) == 0 && (bar[1 + len] == '|' || !bar[1 + len]))
            free(nt->said[i]);
        else
            nt->said[w++] = nt->said[i];
    }
    nt->n_said = w;
    for (size_t i = 0; i < nt->n_pending; i++)
        if (sc_event_id_equal(nt->pending[i], id)) {
            free(nt->pending[i]);
            nt->pending[i--] = nt->pending[--nt->n_pending];
        }
}

/* The members an event names in Resources (canonical names, into names: n_members at most) and
 * their common domain (-1 when they differ or one is unknown). */
static size_t s_event_vms(const sc_coord_t *c, const sc_cs_event_t *ce, const char **names,
                          int *ret_dom)
{
    size_t n = 0;
    int dom = -2;

    for (size_t r = 0; r < ce->ev.n_resources; r++) {
        size_t mi = sc_cstate_member_find(c->cs, ce->ev.resources[r]);
        bool dup = false;
        int d;

        if (mi == SC_CSTATE_NONE || mi >= c->n_members)
            continue;
        for (size_t k = 0; k < n; k++)
            dup = dup || names[k] == c->members[mi].name;
        if (dup || n >= c->n_members)
            continue;
        names[n++] = c->members[mi].name;
        d = sc_coord_members_domain(c, mi);
        dom = dom == -2 || dom == d ? d : -1;
    }
    *ret_dom = dom < 0 ? -1 : dom;
    return n;
}

/* m's event fields from the state's event ce: id, type, its members and their domain,
 * deadline (names: n_members entries of room). */
static void s_about(const sc_coord_t *c, const sc_cs_event_t *ce, sc_notify_msg_t *m,
                    const char **names)
{
    m->event_id = ce->ev.id;
    m->event_type =
        ce->ev.type_raw && ce->ev.type_raw[0] ? ce->ev.type_raw : sc_event_type_name(ce->ev.type);
    m->vms = names;
    m->n_vms = s_event_vms(c, ce, names, &m->fault_domain);
    m->update_domains = sc_coord_serialise_by(c) == SC_SERIALISE_UPDATE_DOMAIN;
    m->deadline_ms = ce->ev.has_not_before ? ce->ev.not_before * 1000 : 0;
}

/* ---- posting ------------------------------------------------------------------------------ */

static void s_send(sc_coord_t *c, const sc_notify_msg_t *m)
{
    int rc = sc_notify_post(c->notify->n, m);

    /* a full queue is counted by the notifier (and logged by the tick) */
    if (rc < 0 && rc != -ENOBUFS)
        sc_log_warn("notification not queued", "kind=%s event=%s rc=%s",
                    sc_notify_kind_name(m->kind), m->event_id ? m->event_id : "-", sc_errname(rc));
}

/* event_scheduled of ce; with the plan when out is given (event index i of in). */
static void s_scheduled(sc_coord_t *c, const sc_cs_event_t *ce, const sc_plan_input_t *in,
                        const sc_plan_output_t *out, size_t i);

/* What must go before a message about event id (NULL: none): the drain_started being gathered,
 * and the event's event_scheduled still held (then without its plan). */
static void s_before(sc_coord_t *c, const char *id)
{
    sc_cnotify_t *nt = c->notify;

    sc_coord_notify_flush(c);
    for (size_t i = 0; id && i < nt->n_pending; i++) {
        const sc_cs_event_t *ce;
        if (!sc_event_id_equal(nt->pending[i], id))
            continue;
        free(nt->pending[i]);
        nt->pending[i] = nt->pending[--nt->n_pending];
        if ((ce = sc_cstate_event_find(c->cs, id)))
            s_scheduled(c, ce, NULL, NULL, 0);
        return;
    }
}

/* A message about the state's event ce: its event fields, ts, detail. */
static void s_post_event(sc_coord_t *c, sc_notify_kind_t kind, const sc_cs_event_t *ce,
                         int64_t ts_ms, const char *detail)
{
    const char **names = calloc(c->n_members ? c->n_members : 1, sizeof(*names));
    sc_notify_msg_t m;

    if (!names)
        return;
    s_before(c, ce->ev.id);
    sc_notify_msg_init(&m, kind);
    s_about(c, ce, &m, names);
    m.ts_ms = ts_ms;
    m.detail = detail;
    s_send(c, &m);
    free(names);
}

void sc_coord_notify_flush(sc_coord_t *c)
{
    sc_cnotify_t *nt = c ? c->notify : NULL;
    const sc_cs_event_t *ce;
    const char **names;
    sc_notify_msg_t m;

    if (!nt || !nt->open)
        return;
    nt->open = false;
    if (!(ce = sc_cstate_event_find(c->cs, nt->open_id)) ||
        !(names = calloc(c->n_members, sizeof(*names))))
        return;
    sc_notify_msg_init(&m, SC_NOTIFY_DRAIN_STARTED);
    s_about(c, ce, &m, names);
    for (size_t k = 0; k < nt->n_open; k++)
        names[k] = c->members[nt->open_vms[k]].name;
    m.n_vms = nt->n_open;
    m.fault_domain = nt->open_dom;
    m.ts_ms = nt->open_ts;
    m.detail = "prepare hooks ordered: the VMs are being drained";
    s_send(c, &m);
    free(names);
}

static void s_order_add(int *order, size_t *n, int dom)
{
    for (size_t j = 0; j < *n; j++)
        if (order[j] == dom)
            return;
    if (*n < S_ORDER_MAX)
        order[(*n)++] = dom;
}

/* The drain order (into order, S_ORDER_MAX): the domains busy now (draining, drained, impacted,
 * recovering), then those of the drain queue in its order; each once. */
static size_t s_drain_order(const sc_coord_t *c, const sc_plan_input_t *in,
                            const sc_plan_output_t *out, int *order)
{
    size_t n = 0;

    for (size_t m = 0; m < out->n_members && m < in->n_members; m++)
        if (out->member_state[m] != SC_MEMBER_HEALTHY && out->member_state[m] != SC_MEMBER_GONE)
            s_order_add(order, &n, sc_coord_members_domain(c, m));
    for (size_t rank = 0; rank < in->n_events; rank++) {
        for (size_t i = 0; i < in->n_events && i < out->n_events; i++) {
            const sc_plan_event_t *e = &in->events[i];

            for (size_t k = 0; out->drain_rank[i] == rank && k < e->n_vms; k++)
                if (!e->vms[k].dropped && !in->members[e->vms[k].member].gone)
                    s_order_add(order, &n, sc_coord_members_domain(c, e->vms[k].member));
        }
    }
    return n;
}

static void s_scheduled(sc_coord_t *c, const sc_cs_event_t *ce, const sc_plan_input_t *in,
                        const sc_plan_output_t *out, size_t i)
{
    const char **names = calloc(c->n_members ? c->n_members : 1, sizeof(*names));
    int order[S_ORDER_MAX];
    char detail[600];
    sc_notify_msg_t m;

    if (!names)
        return;
    sc_notify_msg_init(&m, SC_NOTIFY_EVENT_SCHEDULED);
    s_about(c, ce, &m, names);
    m.ts_ms = ce->first_seen_ms;
    m.detail = detail;
    snprintf(detail, sizeof(detail), "the plan is not known yet");
    if (out && out->drain_rank && i < out->n_events) {
        size_t rank = out->drain_rank[i];
        bool now = false;

        for (size_t k = 0; k < out->n_actions; k++)
            now = now || (out->actions[k].kind == SC_ACT_PREPARE && out->actions[k].event == i);
        sc_event_class_t cls = sc_plan_event_class(in->events[i].ev, in->policy);

        if (cls == SC_CLASS_NO_DRAIN) {
            snprintf(detail, sizeof(detail), "no drain needed: approved at once (%s)",
                     out->waiting_for[i]);
        } else if (now) {
            m.drain_at_ms = sc_wall_ms();
            m.drain_order = order;
            m.n_drain_order = s_drain_order(c, in, out, order);
            snprintf(detail, sizeof(detail), "drains now: %s",
                     cls == SC_CLASS_EVICT ? "the VMs are going away"
                     : m.update_domains    ? "its update domain's turn"
                                           : "its fault domain's turn");
        } else if (rank != SC_PLAN_NONE) {
            m.drain_order = order;
            m.n_drain_order = s_drain_order(c, in, out, order);
            snprintf(detail, sizeof(detail),
                     "%s; when it drains is not known: after the domains before it in the drain "
                     "order (%zu event(s) ahead in the queue), as their hooks go",
                     out->waiting_for[i], rank);
        } else {
            snprintf(detail, sizeof(detail), "not queued for a drain: %s", out->waiting_for[i]);
        }
    }
    s_send(c, &m);
    free(names);
}

void sc_coord_notify_plan(sc_coord_t *c, const sc_plan_input_t *in, const sc_plan_output_t *out)
{
    sc_cnotify_t *nt = c ? c->notify : NULL;

    if (!nt || !nt->n_pending)
        return;
    sc_coord_notify_flush(c);
    for (size_t i = 0; i < in->n_events && i < out->n_events; i++) {
        const sc_cs_event_t *ce;
        bool held = false;

        for (size_t k = 0; k < nt->n_pending && !held; k++) {
            if (!sc_event_id_equal(nt->pending[k], in->events[i].ev->id))
                continue;
            held = true;
            free(nt->pending[k]);
            nt->pending[k] = nt->pending[--nt->n_pending];
        }
        if (held && (ce = sc_cstate_event_find(c->cs, in->events[i].ev->id)))
            s_scheduled(c, ce, in, out, i);
    }
}

/* ---- what each entry tells ---------------------------------------------------------------- */

static void s_on_term(sc_coord_t *c, const sc_dlog_entry_t *e, json_object *d)
{
    sc_notify_msg_t m;

    s_before(c, NULL);
    sc_notify_msg_init(&m, SC_NOTIFY_LEADER_CHANGED);
    m.ts_ms = e->wall_ms;
    m.leader = c->name;
    m.term = s_jint(d, "term", e->term);
    m.detail = e->reason && e->reason[0] ? e->reason : NULL;
    s_send(c, &m);
}

/* A new event, still Scheduled: its event_scheduled waits for the plan round. */
static void s_on_seen(sc_coord_t *c, const sc_dlog_entry_t *e, json_object *d)
{
    sc_cnotify_t *nt = c->notify;
    json_object *ev = NULL;
    const sc_cs_event_t *ce;
    char key[SC_EVENT_ID_MAX + 16], **nv;
    const char *id;

    json_object_object_get_ex(d, "event", &ev);
    if (!(id = s_jstr(ev, "EventId")) || !(ce = sc_cstate_event_find(c->cs, id)))
        return;
    if (ce->first_seen_ms != e->wall_ms || ce->phase != SC_REG_ACTIVE ||
        ce->start_kind != SC_START_NONE || sc_event_is_started(&ce->ev))
        return;
    snprintf(key, sizeof(key), "scheduled|%s", ce->ev.id);
    if (!s_say_once(nt, key) || !(nv = realloc(nt->pending, (nt->n_pending + 1) * sizeof(*nv))))
        return;
    nt->pending = nv;
    if ((nt->pending[nt->n_pending] = strdup(ce->ev.id)))
        nt->n_pending++;
}

/* The first prepare of an event in a domain opens a drain_started; the same round's next orders
 * in that domain join it. A new attempt after a rollback is no new drain start. */
static void s_on_prepare(sc_coord_t *c, const sc_dlog_entry_t *e, json_object *d)
{
    sc_cnotify_t *nt = c->notify;
    const char *id = s_jstr(d, "event_id");
    const sc_cs_event_t *ce = id ? sc_cstate_event_find(c->cs, id) : NULL;
    json_object *vms = NULL;
    int64_t attempt = s_jint(d, "attempt", 1);

    json_object_object_get_ex(d, "vms", &vms);
    for (size_t v = 0; ce && v < json_object_array_length(vms); v++) {
        size_t mi =
            sc_cstate_member_find(c->cs, json_object_get_string(json_object_array_get_idx(vms, v)));
        int dom;
        char key[SC_EVENT_ID_MAX + 32];
        bool first = attempt <= 1;

        if (mi == SC_CSTATE_NONE || mi >= c->n_members)
            continue;
        dom = sc_coord_members_domain(c, mi);
        if (nt->open && sc_event_id_equal(nt->open_id, ce->ev.id) && nt->open_dom == dom) {
            if (nt->n_open < c->n_members)
                nt->open_vms[nt->n_open++] = mi;
            continue;
        }
        /* another VM of the domain ordered before (this run or before a restart) */
        for (size_t k = 0; k < c->n_members && first; k++)
            first =
                k == mi || sc_coord_members_domain(c, k) != dom || ce->drain[k] == SC_DRAIN_NONE;
        snprintf(key, sizeof(key), "drain|%s|%d", ce->ev.id, dom);
        if (!first || !s_say_once(nt, key))
            continue;
        s_before(c, ce->ev.id);
        nt->open = true;
        snprintf(nt->open_id, sizeof(nt->open_id), "%s", ce->ev.id);
        nt->open_dom = dom;
        nt->open_ts = e->wall_ms;
        nt->open_vms[0] = mi;
        nt->n_open = 1;
    }
}

static void s_on_intent(sc_coord_t *c, const sc_dlog_entry_t *e, json_object *d)
{
    sc_cnotify_t *nt = c->notify;
    s_intent_t *it = &nt->intents[nt->next_intent++ % S_INTENTS];
    const char *via = s_jstr(d, "via");

    it->index = e->index;
    snprintf(it->via, sizeof(it->via), "%s", via ? via : "");
}

/* Every event this answer approved (approved_ms is the answer's: an event is approved once),
 * unless it started before (then the approval only settles an intent after a restart). */
static void s_on_answer(sc_coord_t *c, const sc_dlog_entry_t *e, json_object *d)
{
    sc_cnotify_t *nt = c->notify;
    int64_t intent = s_jint(d, "intent", 0);
    const char *via = NULL;
    char detail[SC_NAME_MAX + 80];

    if (s_jint(d, "rc", -1) != 0)
        return;
    for (size_t i = 0; i < S_INTENTS; i++)
        if (intent && nt->intents[i].index == intent)
            via = nt->intents[i].via;
    if (via && via[0])
        snprintf(detail, sizeof(detail), "approval POSTed by %s (delegated)", via);
    else if (via)
        snprintf(detail, sizeof(detail), "approval POSTed by %s", c->name);
    else
        snprintf(detail, sizeof(detail), "approval recorded");
    for (size_t i = 0; i < sc_cstate_n_events(c->cs); i++) {
        const sc_cs_event_t *ce = sc_cstate_event_at(c->cs, i);
        char key[SC_EVENT_ID_MAX + 16];

        if (ce->approval != SC_APPROVAL_APPROVED || ce->approved_ms != e->wall_ms ||
            ce->start_kind != SC_START_NONE)
            continue;
        snprintf(key, sizeof(key), "approved|%s", ce->ev.id);
        if (s_say_once(nt, key))
            s_post_event(c, SC_NOTIFY_APPROVED, ce, e->wall_ms, detail);
    }
}

static void s_on_hook(sc_coord_t *c, const sc_dlog_entry_t *e, json_object *d)
{
    const char *id = s_jstr(d, "event_id");
    const sc_cs_event_t *ce = id ? sc_cstate_event_find(c->cs, id) : NULL;
    const char *vm = s_jstr(d, "vm"), *phase = s_jstr(d, "phase"), *state = s_jstr(d, "state");
    const char **names;
    char key[SC_EVENT_ID_MAX + SC_NAME_MAX + 64], detail[160];
    sc_notify_msg_t m;
    size_t mi;

    if (!ce || !vm || !phase || !state ||
        (strcmp(state, "failed") && strcmp(state, "timed_out") && strcmp(state, "interrupted")))
        return;
    if ((mi = sc_cstate_member_find(c->cs, vm)) == SC_CSTATE_NONE || mi >= c->n_members)
        return;
    snprintf(key, sizeof(key), "hook|%s|%s|%s|%lld", ce->ev.id, c->members[mi].name, phase,
             (long long)s_jint(d, "attempt", 0));
    if (!s_say_once(c->notify, key) || !(names = calloc(c->n_members, sizeof(*names))))
        return;
    if (!strcmp(state, "failed"))
        snprintf(detail, sizeof(detail), "exit status %lld",
                 (long long)s_jint(d, "exit_status", 0));
    else if (!strcmp(state, "timed_out"))
        snprintf(detail, sizeof(detail), "timed out (the agent's --hook-timeout)");
    else
        snprintf(detail, sizeof(detail), "interrupted: the agent restarted while it ran");
    s_before(c, ce->ev.id);
    sc_notify_msg_init(&m, SC_NOTIFY_HOOK_FAILED);
    s_about(c, ce, &m, names);
    names[0] = c->members[mi].name;
    m.n_vms = 1;
    m.fault_domain = sc_coord_members_domain(c, mi);
    m.phase = phase;
    m.ts_ms = e->wall_ms;
    m.detail = detail;
    s_send(c, &m);
    free(names);
}

static void s_on_alert(sc_coord_t *c, const sc_dlog_entry_t *e, json_object *d)
{
    const char *alert = s_jstr(d, "alert"), *id = s_jstr(d, "event_id");
    const sc_cs_event_t *ce = id ? sc_cstate_event_find(c->cs, id) : NULL;
    char key[SC_EVENT_ID_MAX + 16];

    /* forecast_late: at notice time, the drain will not fit (said as a miss to come) */
    if (!ce || !alert ||
        (strcmp(alert, "deadline") && strcmp(alert, "forced") && strcmp(alert, "forecast_late")))
        return;
    /* not drained in time, then started on its own: one miss */
    snprintf(key, sizeof(key), "deadline|%s", ce->ev.id);
    if (s_say_once(c->notify, key))
        s_post_event(c, SC_NOTIFY_DEADLINE_MISSED, ce, e->wall_ms, s_jstr(d, "message"));
}

/* EVENT_STARTED's how, in words. */
static const char *s_started_how(const char *how)
{
    if (!how)
        return NULL;
    if (!strcmp(how, "approved"))
        return "started after our approval";
    if (!strcmp(how, "host_failure"))
        return "started without notice (host failure)";
    return "started without our approval: its NotBefore passed";
}

void sc_coord_notify_entry(sc_coord_t *c, const sc_dlog_entry_t *e, json_object *data)
{
    const char *id = s_jstr(data, "event_id"), *how = s_jstr(data, "how");
    const sc_cs_event_t *ce;

    if (!c || !c->notify || !e || !data || !sc_coord_is_leader(c))
        return;
    ce = id ? sc_cstate_event_find(c->cs, id) : NULL;
    /* a rehearsal is not maintenance: its report says how it went, not the chat */
    if (json_object_object_get_ex(data, "rehearsal", NULL) || (ce && ce->rehearsal))
        return;
    switch (e->kind) {
    case SC_DLOG_TERM: s_on_term(c, e, data); break;
    case SC_DLOG_EVENT_SEEN: s_on_seen(c, e, data); break;
    case SC_DLOG_PREPARE_ORDERED: s_on_prepare(c, e, data); break;
    case SC_DLOG_APPROVAL_INTENT: s_on_intent(c, e, data); break;
    case SC_DLOG_APPROVAL_ANSWER: s_on_answer(c, e, data); break;
    case SC_DLOG_HOOK_PROGRESS: s_on_hook(c, e, data); break;
    case SC_DLOG_ALERT: s_on_alert(c, e, data); break;
    case SC_DLOG_EVENT_STARTED:
        if (ce)
            s_post_event(c, SC_NOTIFY_EVENT_STARTED, ce, e->wall_ms, s_started_how(how));
        break;
    case SC_DLOG_EVENT_ENDED:
        if (ce)
            s_post_event(c, SC_NOTIFY_EVENT_ENDED, ce, e->wall_ms,
                         how && !strcmp(how, "cancelled")
                             ? "cancelled before it started; the drained VMs are recovered"
                             : "completed; the recover hooks follow");
        break;
    case SC_DLOG_EVENT_CLOSED:
        if (id) {
            if (c->notify->open && sc_event_id_equal(c->notify->open_id, id))
                sc_coord_notify_flush(c);
            s_forget(c->notify, id);
        }
        break;
    default: break;
    }
}

/* ---- life cycle, counters ----------------------------------------------------------------- */

int sc_coord_notify_new(sc_coord_t *c, const char *spec, char *err, size_t errlen)
{
    sc_cnotify_t *nt;
    sc_notify_opts_t o;
    int rc;

    if (!spec || !spec[0])
        return 0;
    if (!(nt = calloc(1, sizeof(*nt))) ||
        !(nt->open_vms = calloc(c->n_members ? c->n_members : 1, sizeof(*nt->open_vms)))) {
        free(nt);
        return -ENOMEM;
    }
    sc_notify_opts_init(&o);
    o.spec = spec;
    o.from = c->name;
    if ((rc = sc_notify_new(&o, err, errlen, &nt->n)) < 0) {
        free(nt->open_vms);
        free(nt);
        return rc;
    }
    c->notify = nt;
    for (size_t i = 0; i < sc_notify_targets(nt->n); i++)
        sc_log_info("notifications on", "target=\"%s\"", sc_notify_target_label(nt->n, i));
    return 0;
}

void sc_coord_notify_destroy(sc_coord_t *c)
{
    sc_cnotify_t *nt = c ? c->notify : NULL;
    size_t dropped;

    if (!nt)
        return;
    sc_coord_notify_flush(c);
    if ((dropped = sc_notify_stop(nt->n)) > 0)
        sc_log_warn("notifications dropped at stop",
                    "dropped=%zu why=\"not delivered within "
                    "the stop grace\"",
                    dropped);
    sc_notify_destroy(&nt->n);
    for (size_t i = 0; i < nt->n_said; i++)
        free(nt->said[i]);
    free(nt->said);
    for (size_t i = 0; i < nt->n_pending; i++)
        free(nt->pending[i]);
    free(nt->pending);
    free(nt->open_vms);
    free(nt);
    c->notify = NULL;
}

void sc_coord_notify_tick(sc_coord_t *c)
{
    sc_cnotify_t *nt = c ? c->notify : NULL;

    for (size_t i = 0; nt && i < sc_notify_targets(nt->n); i++) {
        sc_notify_stats_t st;

        if (sc_notify_stats(nt->n, i, &st) < 0)
            continue;
        if (st.failed > nt->seen_failed[i])
            sc_log_warn("notification failed", "target=\"%s\" failed=%llu status=%ld why=\"%s\"",
                        sc_notify_target_label(nt->n, i), (unsigned long long)st.failed,
                        st.last_status, sc_log_q(st.last_error));
        if (st.dropped > nt->seen_dropped[i])
            sc_log_warn("notification dropped", "target=\"%s\" dropped=%llu why=\"queue full\"",
                        sc_notify_target_label(nt->n, i), (unsigned long long)st.dropped);
        nt->seen_failed[i] = st.failed;
        nt->seen_dropped[i] = st.dropped;
    }
}

json_object *sc_coord_notify_stats_json(const sc_coord_t *c)
{
    json_object *a = NULL;

    if (!c || !c->notify || sc_notify_stats_json(c->notify->n, &a) < 0)
        return json_object_new_array();
    return a;
}
