#include "sc_store.h"
#include "sc_store_int.h"
#include "sc_store_test.h"

#include "sc_cstate.h"
#include "sc_error.h"
#include "sc_json.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* migrations[i] takes the schema from version i to i + 1. Never edit a released one. */
static const char *const s_migrations[SC_STORE_SCHEMA_VERSION] = {
    /* 0 -> 1: the tables. (Parenthesised: one element of several literals.) */
    ("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
     "CREATE TABLE members(name TEXT PRIMARY KEY, endpoint TEXT, fault_domain INTEGER,"
     "  update_domain INTEGER, state TEXT NOT NULL DEFAULT 'healthy', updated_ms INTEGER);"
     "CREATE TABLE events(event_id TEXT PRIMARY KEY COLLATE NOCASE, event_type TEXT,"
     "  status TEXT, source TEXT, resource_type TEXT, resources TEXT, not_before INTEGER,"
     "  not_before_raw TEXT, description TEXT, duration_s INTEGER, doc TEXT, seen_by TEXT,"
     "  first_seen_ms INTEGER, last_changed_ms INTEGER, approved_ms INTEGER, approved_by TEXT,"
     "  started_ms INTEGER, started_how TEXT, ended_ms INTEGER, ended_how TEXT);"
     "CREATE TABLE drains(event_id TEXT NOT NULL COLLATE NOCASE, vm TEXT NOT NULL,"
     "  phase TEXT NOT NULL CHECK (phase IN ('prepare', 'recover')), ordered_ms INTEGER,"
     "  started_ms INTEGER, finished_ms INTEGER, result TEXT, exit_status INTEGER,"
     "  PRIMARY KEY (event_id, vm, phase));"
     "CREATE TABLE approvals(id INTEGER PRIMARY KEY, event_ids TEXT NOT NULL,"
     "  body TEXT NOT NULL, via TEXT, by TEXT, intent_ms INTEGER NOT NULL, answered_ms INTEGER,"
     "  rc INTEGER, http_status INTEGER, answer TEXT);"
     "CREATE TABLE dlog(idx INTEGER PRIMARY KEY, term INTEGER NOT NULL, kind TEXT NOT NULL,"
     "  data TEXT NOT NULL, reason TEXT NOT NULL, wall_ms INTEGER NOT NULL,"
     "  applied INTEGER NOT NULL DEFAULT 0);"
     "CREATE TRIGGER dlog_append_only_u BEFORE UPDATE OF idx, term, kind, data, reason, wall_ms"
     "  ON dlog BEGIN SELECT RAISE(ABORT, 'the decision log is append-only'); END;"
     "CREATE TRIGGER dlog_append_only_d BEFORE DELETE ON dlog"
     "  BEGIN SELECT RAISE(ABORT, 'the decision log is append-only'); END;"),
    /* 1 -> 2: lookups by VM (status per member) and unanswered approvals (restart). */
    ("CREATE INDEX drains_by_vm ON drains(vm);"
     "CREATE INDEX approvals_unanswered ON approvals(id) WHERE answered_ms IS NULL;"),
    /* 2 -> 3: a drain's attempt (a failed prepare is rolled back and tried again). */
    "ALTER TABLE drains ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;",
    /* 3 -> 4: the agent boot id a member was gone with (only a new agent brings it back). */
    "ALTER TABLE members ADD COLUMN boot_id TEXT;",
    /* 4 -> 5: when the content of an event was observed (the registry's merge rule). */
    "ALTER TABLE events ADD COLUMN observed_ms INTEGER;",
    /* 5 -> 6: snapshots of the coordinator's state (sc_cstate) with the index they include;
     * Raft's persistent state (current_term, voted_for) has its meta keys. */
    ("CREATE TABLE snapshots(idx INTEGER PRIMARY KEY, term INTEGER NOT NULL,"
     "  wall_ms INTEGER NOT NULL, state TEXT NOT NULL);"
     "INSERT OR IGNORE INTO meta(key, value) SELECT 'current_term', value FROM meta"
     "  WHERE key = 'term';"
     "INSERT OR IGNORE INTO meta(key, value) VALUES ('voted_for', '');"),
    /* 6 -> 7: Raft's log truncation. An entry received from a leader and not applied yet (so
     * not known to be committed) may be replaced by a newer leader's; an applied one never. */
    ("DROP TRIGGER dlog_append_only_d;"
     "CREATE TRIGGER dlog_append_only_d BEFORE DELETE ON dlog WHEN OLD.applied"
     "  BEGIN SELECT RAISE(ABORT, 'the decision log is append-only'); END;"),
    /* 7 -> 8: compaction. Applied entries a snapshot includes (up to meta's log_base_index)
     * may go; sc_dlog_compact and sc_dlog_reset move the base first. */
    ("DROP TRIGGER dlog_append_only_d;"
     "CREATE TRIGGER dlog_append_only_d BEFORE DELETE ON dlog WHEN OLD.applied AND OLD.idx >"
     "  coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'log_base_index'), 0)"
     "  BEGIN SELECT RAISE(ABORT, 'the decision log is append-only'); END;"),
    /* 8 -> 9: when an event closed (EVENT_CLOSED): the newest SC_STORE_KEEP_CLOSED closed
     * events' rows are kept, older ones go. Events closed before this version have none and
     * stay. */
    ("ALTER TABLE events ADD COLUMN closed_ms INTEGER;"
     "CREATE INDEX events_closed ON events(closed_ms) WHERE closed_ms IS NOT NULL;"),
};

/* Opens the store at path, migrating it, or read-only (a reader waits less than the daemon's
 * writers: it is a person at a terminal). */
static int s_open(const char *path, bool readonly, sc_store_t **ret_store, char *err, size_t errlen)
{
    sc_store_t *self;
    int rc;

    if (!path || !ret_store)
        return -EINVAL;
    if (!(self = calloc(1, sizeof(*self))))
        return -ENOMEM;
    rc = readonly ? sc_db_open_readonly(path, 2000, &self->db, err, errlen)
                  : sc_db_open(path, s_migrations, SC_STORE_SCHEMA_VERSION, &self->db, err, errlen);
    if (rc < 0) {
        free(self);
        return rc;
    }
    self->keep_closed = SC_STORE_KEEP_CLOSED;
    *ret_store = self;
    return 0;
}

int sc_store_open(const char *path, sc_store_t **ret_store, char *err, size_t errlen)
{
    return s_open(path, false, ret_store, err, errlen);
}

void sc_store_set_keep_closed(sc_store_t *store, int64_t n)
{
    if (store && n >= 1)
        store->keep_closed = n;
}

void sc_store_close(sc_store_t **store)
{
    if (!store || !*store)
        return;
    sc_db_close(&(*store)->db);
    free(*store);
    *store = NULL;
}

int sc_store_open_readonly(const char *path, sc_store_t **ret_store, char *err, size_t errlen)
{
    return s_open(path, true, ret_store, err, errlen);
}

sc_db_t *sc_store_test_db(sc_store_t *store)
{
    return store ? store->db : NULL;
}

int64_t sc_store_test_int(sc_store_t *store, const char *sql)
{
    int64_t n = -1;

    return store && sc_db_query_int64(store->db, &n, sql, NULL) == 0 ? n : -1;
}

const char *sc_store_errmsg(sc_store_t *store)
{
    return store ? sc_db_errmsg(store->db) : "no store";
}

int sc_store_begin(sc_store_t *store)
{
    return store ? sc_db_begin(store->db) : -EINVAL;
}

int sc_store_commit(sc_store_t *store)
{
    return store ? sc_db_commit(store->db) : -EINVAL;
}

bool sc_store_in_transaction(sc_store_t *store)
{
    return store && sc_db_in_transaction(store->db);
}

int sc_store_rollback(sc_store_t *store)
{
    return store ? sc_db_rollback(store->db) : -EINVAL;
}

/* An integer of the meta table, 0 when the key is not there. */
static int s_meta_int(sc_store_t *store, const char *key, int64_t *ret)
{
    int64_t v = 0;
    int rc = sc_db_query_int64(store->db, &v,
                               "SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?", "s", key);

    if (rc < 0 && rc != SC_E_NOT_FOUND)
        return rc;
    *ret = rc == SC_E_NOT_FOUND ? 0 : v;
    return 0;
}

int sc_store_term(sc_store_t *store, int64_t *ret_term)
{
    if (!store || !ret_term)
        return -EINVAL;
    return s_meta_int(store, "term", ret_term);
}

int sc_store_paused(sc_store_t *store, bool *ret_paused)
{
    int64_t v = 0;
    int rc;

    if (!store || !ret_paused)
        return -EINVAL;
    if ((rc = s_meta_int(store, "paused", &v)) < 0)
        return rc;
    *ret_paused = v != 0;
    return 0;
}

int sc_store_next_term(sc_store_t *store, int64_t wall_ms, int64_t *ret_term)
{
    return sc_store_term_after(store, 0, wall_ms, "leader of a new term", ret_term);
}

int sc_store_term_after(sc_store_t *store, int64_t seen, int64_t wall_ms, const char *reason,
                        int64_t *ret_term)
{
    char data[64];
    int64_t t;
    int rc;

    if (!store || !ret_term || !reason || seen < 0 || seen >= INT64_MAX - 1)
        return -EINVAL;
    rc = sc_store_term(store, &t);
    if (rc < 0)
        return rc;
    if (seen > t)
        t = seen;
    snprintf(data, sizeof(data), "{\"term\":%lld}", (long long)(t + 1));
    rc = sc_store_decide(store, t + 1, SC_DLOG_TERM, data, reason, wall_ms, NULL);
    if (rc < 0)
        return rc;
    *ret_term = t + 1;
    return 0;
}

/* ---- applying entries ---------------------------------------------------------------- */

static int s_apply_member(sc_store_t *self, json_object *d, int64_t wall)
{
    const char *name = sc_json_str(d, "name"), *state = sc_json_str(d, "state"),
               *ep = sc_json_str(d, "endpoint");
    int64_t fd = -1, ud = -1;
    bool has_fd = sc_json_int(d, "fault_domain", &fd),
         has_ud = sc_json_int(d, "update_domain", &ud);
    int rc;

    if (!name)
        return -EINVAL;
    rc = sc_db_run(self->db, NULL,
                   "INSERT INTO members(name, state, updated_ms) VALUES (?, 'healthy', ?) "
                   "ON CONFLICT(name) DO NOTHING",
                   "sl", name, wall);
    if (rc >= 0 && ep)
        rc = sc_db_run(self->db, NULL, "UPDATE members SET endpoint = ? WHERE name = ?", "ss", ep,
                       name);
    if (rc >= 0 && has_fd)
        rc = sc_db_run(self->db, NULL, "UPDATE members SET fault_domain = ? WHERE name = ?", "ls",
                       fd, name);
    if (rc >= 0 && has_ud)
        rc = sc_db_run(self->db, NULL, "UPDATE members SET update_domain = ? WHERE name = ?", "ls",
                       ud, name);
    if (rc >= 0 && state)
        rc = sc_db_run(self->db, NULL,
                       "UPDATE members SET state = ?, updated_ms = ?, boot_id = ? WHERE name = ?",
                       "slss", state, wall, sc_json_str(d, "boot_id"), name);
    return rc;
}

static int s_apply_event_seen(sc_store_t *self, json_object *d, int64_t wall)
{
    json_object *ev, *seen = sc_json_arr(d, "seen_by"), *res;
    const char *id, *nbraw;
    int64_t dur = 0, nb = 0, observed = 0;
    bool has_dur, has_nb, has_observed = sc_json_int(d, "observed_ms", &observed);
    int rc;

    if (!json_object_object_get_ex(d, "event", &ev) || !json_object_is_type(ev, json_type_object))
        return -EINVAL;
    if (!(id = sc_json_str(ev, "EventId")))
        return -EINVAL;
    res = sc_json_arr(ev, "Resources");
    has_dur = sc_json_int(ev, "DurationInSeconds", &dur);
    has_nb = sc_json_int(d, "not_before", &nb);
    nbraw = sc_json_str(ev, "NotBefore");
    rc = sc_db_run(self->db, NULL,
                   "INSERT INTO events(event_id, first_seen_ms) VALUES (?, ?) "
                   "ON CONFLICT(event_id) DO NOTHING",
                   "sl", id, wall);
    if (rc < 0)
        return rc;
    if (has_observed &&
        (rc = sc_db_run(self->db, NULL, "UPDATE events SET observed_ms = ? WHERE event_id = ?",
                        "ls", observed, id)) < 0)
        return rc;
    return sc_db_run(
        self->db, NULL,
        "UPDATE events SET event_type = ?, status = ?, source = ?, resource_type = ?, "
        "resources = ?, not_before = ?, not_before_raw = ?, description = ?, duration_s = ?, "
        "doc = ?, seen_by = coalesce(?, seen_by), last_changed_ms = ? WHERE event_id = ?",
        "sssssssssssls", sc_json_str(ev, "EventType"), sc_json_str(ev, "EventStatus"),
        sc_json_str(ev, "EventSource"), sc_json_str(ev, "ResourceType"),
        res ? json_object_to_json_string_ext(res, JSON_C_TO_STRING_PLAIN) : "[]",
        has_nb ? json_object_to_json_string(json_object_object_get(d, "not_before")) : NULL, nbraw,
        sc_json_str(ev, "Description"),
        has_dur ? json_object_to_json_string(json_object_object_get(ev, "DurationInSeconds"))
                : NULL,
        json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN),
        seen ? json_object_to_json_string_ext(seen, JSON_C_TO_STRING_PLAIN) : NULL, wall, id);
}

/* An order of a newer attempt (a drain tried again after its rollback) starts the VM's rows
 * afresh: the prepare row of that attempt, and no recover row of an older one. */
static int s_apply_orders(sc_store_t *self, json_object *d, const char *phase, int64_t wall)
{
    const char *id = sc_json_str(d, "event_id");
    json_object *vms = sc_json_arr(d, "vms");
    int64_t attempt = 1;
    int rc = 0;

    if (!id || !vms)
        return -EINVAL;
    if (sc_json_int(d, "attempt", &attempt) && (attempt < 1 || attempt > 1000))
        return -EINVAL;
    for (size_t i = 0; i < json_object_array_length(vms) && rc >= 0; i++) {
        json_object *v = json_object_array_get_idx(vms, i);
        if (!json_object_is_type(v, json_type_string))
            return -EINVAL;
        rc = sc_db_run(self->db, NULL,
                       "DELETE FROM drains WHERE event_id = ? AND vm = ? AND attempt < ? AND "
                       "(phase = ? OR phase = 'recover')",
                       "ssls", id, json_object_get_string(v), attempt, phase);
        if (rc >= 0)
            rc = sc_db_run(self->db, NULL,
                           "INSERT INTO drains(event_id, vm, phase, ordered_ms, attempt) "
                           "VALUES (?, ?, ?, ?, ?) ON CONFLICT(event_id, vm, phase) DO UPDATE "
                           "SET ordered_ms = coalesce(ordered_ms, excluded.ordered_ms)",
                           "sssll", id, json_object_get_string(v), phase, wall, attempt);
    }
    return rc;
}

static int s_apply_progress(sc_store_t *self, json_object *d, int64_t wall)
{
    const char *id = sc_json_str(d, "event_id"), *vm = sc_json_str(d, "vm"),
               *phase = sc_json_str(d, "phase");
    const char *state = sc_json_str(d, "state");
    int64_t es = -1;
    bool has_es = sc_json_int(d, "exit_status", &es);
    int rc;

    if (!id || !vm || !phase || !state ||
        (strcmp(phase, "prepare") != 0 && strcmp(phase, "recover") != 0))
        return -EINVAL;
    rc = sc_db_run(self->db, NULL,
                   "INSERT INTO drains(event_id, vm, phase) VALUES (?, ?, ?) "
                   "ON CONFLICT(event_id, vm, phase) DO NOTHING",
                   "sss", id, vm, phase);
    if (rc < 0)
        return rc;
    if (strcmp(state, "started") == 0)
        return sc_db_run(self->db, NULL,
                         "UPDATE drains SET started_ms = coalesce(started_ms, ?) "
                         "WHERE event_id = ? AND vm = ? AND phase = ?",
                         "lsss", wall, id, vm, phase);
    /* The same result reported again (an agent answering a re-sent order, or every result
     * again to a new term) keeps the time it first finished. Without an exit status the
     * stored one stays (?6 binds NULL). */
    return sc_db_run(self->db, NULL,
                     "UPDATE drains SET finished_ms = CASE WHEN result IS ?1 AND finished_ms IS "
                     "NOT NULL THEN finished_ms ELSE ?2 END, result = ?1, "
                     "exit_status = coalesce(?6, exit_status), started_ms = coalesce(started_ms, "
                     "CASE WHEN ?1 = 'refused' THEN NULL ELSE ?2 END) "
                     "WHERE event_id = ?3 AND vm = ?4 AND phase = ?5",
                     has_es ? "slsssl" : "slsssn", state, wall, id, vm, phase, es);
}

static int s_apply_intent(sc_store_t *self, int64_t index, json_object *d, int64_t wall)
{
    json_object *ids = sc_json_arr(d, "event_ids");
    const char *body = sc_json_str(d, "body");

    if (!ids || !body)
        return -EINVAL;
    return sc_db_run(self->db, NULL,
                     "INSERT INTO approvals(id, event_ids, body, via, by, intent_ms) "
                     "VALUES (?, ?, ?, ?, ?, ?)",
                     "lssssl", index, json_object_to_json_string_ext(ids, JSON_C_TO_STRING_PLAIN),
                     body, sc_json_str(d, "via"), sc_json_str(d, "by"), wall);
}

/* EVENT_CLOSED: the event's close time, then the rows of the closed events older than the
 * newest keep_closed (by close time, then id: the same rows on every member), and the
 * approvals older than the newest keep_closed that name no event still open (an open event's
 * approval stays, answered or not: a restart asks whether an unanswered one landed). */
/* The closed events beyond the newest keep_closed (the parameter), by close time then id. */
#define S_OLDER_CLOSED                                                                             \
    "(SELECT event_id FROM events WHERE closed_ms IS NOT NULL "                                    \
    "ORDER BY closed_ms DESC, event_id DESC LIMIT -1 OFFSET ?)"

static int s_apply_closed(sc_store_t *self, const char *id, int64_t wall)
{
    int rc;

    if ((rc = sc_db_run(self->db, NULL,
                        "UPDATE events SET closed_ms = coalesce(closed_ms, ?) WHERE event_id = ?",
                        "ls", wall, id)) < 0 ||
        (rc = sc_db_run(self->db, NULL, "DELETE FROM drains WHERE event_id IN " S_OLDER_CLOSED, "l",
                        self->keep_closed)) < 0 ||
        (rc = sc_db_run(self->db, NULL, "DELETE FROM events WHERE event_id IN " S_OLDER_CLOSED, "l",
                        self->keep_closed)) < 0)
        return rc;
    return sc_db_run(self->db, NULL,
                     "DELETE FROM approvals AS a WHERE a.id IN (SELECT id FROM approvals ORDER BY "
                     "id DESC LIMIT -1 OFFSET ?) AND NOT EXISTS (SELECT 1 FROM json_each("
                     "a.event_ids) AS j JOIN events AS e ON e.event_id = j.value WHERE "
                     "e.closed_ms IS NULL)",
                     "l", self->keep_closed);
}

static int s_apply_answer(sc_store_t *self, json_object *d, int64_t wall)
{
    int64_t intent, arc = 0, http = 0;
    int changes = 0, rc;

    if (!sc_json_int(d, "intent", &intent) || !sc_json_int(d, "rc", &arc))
        return -EINVAL;
    sc_json_int(d, "http_status", &http);
    rc = sc_db_run(self->db, &changes,
                   "UPDATE approvals SET answered_ms = ?, rc = ?, http_status = ?, answer = ? "
                   "WHERE id = ?",
                   "lllsl", wall, arc, http, sc_json_str(d, "message"), intent);
    if (rc < 0)
        return rc;
    if (!changes)
        return -EINVAL;
    if (arc != 0)
        return 0;
    /* A successful answer approves every event the intent listed. */
    return sc_db_run(self->db, NULL,
                     "UPDATE events SET approved_ms = coalesce(approved_ms, ?), "
                     "approved_by = coalesce(approved_by, (SELECT coalesce(via, by) FROM approvals "
                     "WHERE id = ?)) WHERE event_id IN (SELECT value FROM json_each("
                     "(SELECT event_ids FROM approvals WHERE id = ?)))",
                     "lll", wall, intent, intent);
}

static int s_apply_data(sc_store_t *self, const sc_dlog_entry_t *e, json_object *d)
{
    const char *id, *how;
    int64_t t;

    switch (e->kind) {
    case SC_DLOG_TERM:
        if (!sc_json_int(d, "term", &t))
            return -EINVAL;
        /* a leader's term is also the newest this member knows (Raft's current_term) */
        return sc_db_run(self->db, NULL,
                         "INSERT INTO meta(key, value) VALUES ('term', ?1), ('current_term', ?1) "
                         "ON CONFLICT(key) DO UPDATE SET value = max(CAST(value AS INTEGER), "
                         "CAST(excluded.value AS INTEGER))",
                         "l", t);
    case SC_DLOG_MEMBER: return s_apply_member(self, d, e->wall_ms);
    case SC_DLOG_EVENT_SEEN: return s_apply_event_seen(self, d, e->wall_ms);
    case SC_DLOG_EVENT_STARTED:
        if (!(id = sc_json_str(d, "event_id")) || !(how = sc_json_str(d, "how")))
            return -EINVAL;
        return sc_db_run(self->db, NULL,
                         "UPDATE events SET status = 'Started', started_ms = coalesce(started_ms, "
                         "?), started_how = coalesce(started_how, ?) WHERE event_id = ?",
                         "lss", e->wall_ms, how, id);
    case SC_DLOG_EVENT_ENDED:
        if (!(id = sc_json_str(d, "event_id")) || !(how = sc_json_str(d, "how")))
            return -EINVAL;
        return sc_db_run(self->db, NULL,
                         "UPDATE events SET ended_ms = coalesce(ended_ms, ?), "
                         "ended_how = coalesce(ended_how, ?) WHERE event_id = ?",
                         "lss", e->wall_ms, how, id);
    case SC_DLOG_PREPARE_ORDERED: return s_apply_orders(self, d, "prepare", e->wall_ms);
    case SC_DLOG_RECOVER_ORDERED: return s_apply_orders(self, d, "recover", e->wall_ms);
    case SC_DLOG_HOOK_PROGRESS: return s_apply_progress(self, d, e->wall_ms);
    case SC_DLOG_APPROVAL_INTENT: return s_apply_intent(self, e->index, d, e->wall_ms);
    case SC_DLOG_APPROVAL_ANSWER: return s_apply_answer(self, d, e->wall_ms);
    case SC_DLOG_EVENT_CLOSED: /* the rows stay as history, the newest keep_closed events' */
        if (!(id = sc_json_str(d, "event_id")))
            return -EINVAL;
        return s_apply_closed(self, id, e->wall_ms);
    case SC_DLOG_REHEARSAL: /* the log is its history; its events' rows are the projection */
        return sc_json_int(d, "rehearsal", &t) && sc_json_str(d, "state") ? 0 : -EINVAL;
    case SC_DLOG_ALERT: {
        /* the operator's pause outlives a restart: meta 'paused' follows its alerts */
        const char *alert = sc_json_str(d, "alert");
        bool pause = alert && !strcmp(alert, "paused");

        if (!pause && !(alert && !strcmp(alert, "resumed")))
            return 0;
        return sc_db_run(self->db, NULL,
                         "INSERT INTO meta(key, value) VALUES ('paused', ?) ON CONFLICT(key) DO "
                         "UPDATE SET value = excluded.value",
                         "l", (int64_t)pause);
    }
    default: return -EINVAL;
    }
}

/* Applies e from its data already parsed (d, an object) and marks it applied. */
static int s_apply_parsed(sc_store_t *store, const sc_dlog_entry_t *e, json_object *d)
{
    int rc;

    if (!json_object_is_type(d, json_type_object))
        return -EINVAL;
    if ((rc = s_apply_data(store, e, d)) < 0)
        return rc;
    return sc_dlog_mark_applied(store->db, e->index);
}

int sc_store_apply(sc_store_t *store, const sc_dlog_entry_t *e)
{
    json_object *d;
    int rc;

    if (!store || !e || !e->data)
        return -EINVAL;
    if (!(d = json_tokener_parse(e->data)))
        return -EINVAL;
    rc = s_apply_parsed(store, e, d);
    json_object_put(d);
    return rc;
}

/* sc_store_decide with the data as text, and as an object if the caller has one (NULL: it is
 * parsed from the text). apply false: appended only (sc_store_propose_json). */
static int s_decide(sc_store_t *store, int64_t term, sc_dlog_kind_t kind, const char *data,
                    json_object *obj, const char *reason, int64_t wall_ms, bool apply,
                    int64_t *ret_index)
{
    sc_dlog_entry_t e = {0};
    bool own_txn;
    int rc;

    if (!store)
        return -EINVAL;
    own_txn = !sc_db_in_transaction(store->db);
    if (own_txn && (rc = sc_db_begin(store->db)) < 0)
        return rc;
    rc = sc_dlog_append(store->db, term, kind, data, reason, wall_ms, &e.index);
    if (rc >= 0 && apply) {
        e.term = term;
        e.kind = kind;
        e.data = (char *)(uintptr_t)data; /* read only */
        e.reason = (char *)(uintptr_t)reason;
        e.wall_ms = wall_ms;
        rc = obj ? s_apply_parsed(store, &e, obj) : sc_store_apply(store, &e);
        if (rc >= 0 && store->on_decide) {
            json_object *own = obj ? NULL : json_tokener_parse(data);
            rc = store->on_decide(store->on_decide_ud, &e, obj ? obj : own);
            json_object_put(own);
        }
    }
    if (rc < 0) {
        if (own_txn)
            sc_db_rollback(store->db);
        return rc;
    }
    if (own_txn && (rc = sc_db_commit(store->db)) < 0) {
        sc_db_rollback(store->db);
        return rc;
    }
    if (ret_index)
        *ret_index = e.index;
    return 0;
}

int sc_store_txn_begin(sc_store_t *store, bool *own)
{
    *own = !sc_db_in_transaction(store->db);
    return *own ? sc_db_begin(store->db) : 0;
}

int sc_store_txn_end(sc_store_t *store, bool own, int rc)
{
    if (own && (rc < 0 || (rc = sc_db_commit(store->db)) < 0))
        sc_db_rollback(store->db);
    return rc < 0 ? rc : 0;
}

/* Entry e, in the log already (append: appended first), applied to the tables and told to the
 * observer, in one transaction (or the caller's). */
static int s_apply_entry(sc_store_t *store, const sc_dlog_entry_t *e, bool append)
{
    json_object *d = e->data ? json_tokener_parse(e->data) : NULL;
    bool own;
    int rc;

    if (!d)
        return -EINVAL;
    if ((rc = sc_store_txn_begin(store, &own)) < 0) {
        json_object_put(d);
        return rc;
    }
    if (append)
        rc = sc_dlog_append_entry(store->db, e);
    if (rc >= 0)
        rc = s_apply_parsed(store, e, d);
    if (rc >= 0 && store->on_decide)
        rc = store->on_decide(store->on_decide_ud, e, d);
    json_object_put(d);
    return sc_store_txn_end(store, own, rc);
}

int sc_store_append_entry(sc_store_t *store, const sc_dlog_entry_t *e)
{
    if (!store || !e)
        return -EINVAL;
    return s_apply_entry(store, e, true);
}

int sc_store_decide(sc_store_t *store, int64_t term, sc_dlog_kind_t kind, const char *data,
                    const char *reason, int64_t wall_ms, int64_t *ret_index)
{
    return s_decide(store, term, kind, data, NULL, reason, wall_ms, true, ret_index);
}

/* sc_store_decide_json / sc_store_propose_json: data logged as its text, applied (or not) from
 * the object itself. */
static int s_decide_obj(sc_store_t *store, int64_t term, sc_dlog_kind_t kind, json_object *data,
                        const char *reason, int64_t wall_ms, bool apply, int64_t *ret_index)
{
    if (!data)
        return -EINVAL;
    return s_decide(store, term, kind, json_object_to_json_string_ext(data, JSON_C_TO_STRING_PLAIN),
                    data, reason, wall_ms, apply, ret_index);
}

int sc_store_decide_json(sc_store_t *store, int64_t term, sc_dlog_kind_t kind, json_object *data,
                         const char *reason, int64_t wall_ms, int64_t *ret_index)
{
    return s_decide_obj(store, term, kind, data, reason, wall_ms, true, ret_index);
}

int sc_store_propose_json(sc_store_t *store, int64_t term, sc_dlog_kind_t kind, json_object *data,
                          const char *reason, int64_t wall_ms, int64_t *ret_index)
{
    return s_decide_obj(store, term, kind, data, reason, wall_ms, false, ret_index);
}

int sc_store_apply_pending(sc_store_t *store)
{
    sc_dlog_entry_t *v = NULL;
    size_t n = 0;
    int rc;

    if (!store)
        return -EINVAL;
    rc = sc_dlog_read(store->db, 1, SC_DLOG_READ_MAX, true, &v, &n);
    for (size_t i = 0; rc >= 0 && i < n; i++)
        rc = sc_store_apply(store, &v[i]);
    sc_dlog_entries_free(v, n);
    return rc < 0 ? rc : 0;
}

/* ---- reading ------------------------------------------------------------------------- */

/* One hook result of a row folded into d (NULL or unknown: nothing; "started" counts as the
 * row's started_ms does). */
static sc_drain_state_t s_fold_result(sc_drain_state_t d, sc_msg_phase_t phase, const char *res,
                                      bool listed)
{
    sc_msg_hook_state_t st;

    if (!res || sc_msg_hook_state_parse(res, &st) < 0)
        return d;
    return sc_cstate_drain_next(d, sc_cstate_drain_input(phase, st, listed));
}

sc_drain_state_t sc_store_drain_state(const char *prepare_result, bool prepare_ordered,
                                      bool prepare_started, const char *recover_result,
                                      bool recover_ordered, bool recover_started, bool listed)
{
    sc_drain_state_t d = SC_DRAIN_NONE;

    if (prepare_ordered)
        d = sc_cstate_drain_next(d, SC_DIN_PREPARE_ORDERED);
    if (prepare_started)
        d = sc_cstate_drain_next(d, SC_DIN_PREPARE_STARTED);
    d = s_fold_result(d, SC_MSG_PHASE_PREPARE, prepare_result, listed);
    if (recover_ordered)
        d = sc_cstate_drain_next(d, SC_DIN_RECOVER_ORDERED);
    if (recover_started)
        d = sc_cstate_drain_next(d, SC_DIN_RECOVER_STARTED);
    return s_fold_result(d, SC_MSG_PHASE_RECOVER, recover_result, listed);
}

static void s_put_text(json_object *o, const char *key, sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    json_object_object_add(o, key, t ? json_object_new_string((const char *)t) : NULL);
}

static void s_put_int(json_object *o, const char *key, sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        json_object_object_add(o, key, NULL);
    else
        json_object_object_add(o, key, json_object_new_int64(sqlite3_column_int64(st, col)));
}

static bool s_is_json_col(const char *name, const char *const *json_cols)
{
    for (size_t i = 0; json_cols && json_cols[i]; i++)
        if (strcmp(name, json_cols[i]) == 0)
            return true;
    return false;
}

/* One result row as a JSON object keyed by the column names (use AS for the keys): NULL as
 * null, INTEGER as a number, TEXT as a string — or parsed, for the columns in json_cols (the
 * store keeps JSON documents in TEXT columns). */
static json_object *s_row_json(sqlite3_stmt *st, const char *const *json_cols)
{
    json_object *o = json_object_new_object();

    for (int i = 0; i < sqlite3_column_count(st); i++) {
        const char *key = sqlite3_column_name(st, i);
        const unsigned char *t;

        switch (sqlite3_column_type(st, i)) {
        case SQLITE_NULL: json_object_object_add(o, key, NULL); break;
        case SQLITE_INTEGER: s_put_int(o, key, st, i); break;
        default:
            t = sqlite3_column_text(st, i);
            if (t && s_is_json_col(key, json_cols))
                json_object_object_add(o, key, json_tokener_parse((const char *)t));
            else
                s_put_text(o, key, st, i);
        }
    }
    return o;
}

/* Steps a prepared statement to its end, appending each row (s_row_json) to arr, and
 * finalizes it. 0 or SC_E_DB. */
static int s_rows_json(sqlite3_stmt *st, const char *const *json_cols, json_object *arr)
{
    int src;

    while ((src = sqlite3_step(st)) == SQLITE_ROW)
        json_object_array_add(arr, s_row_json(st, json_cols));
    sqlite3_finalize(st);
    return src == SQLITE_DONE ? 0 : SC_E_DB;
}

static int s_members_json(sc_db_t *db, json_object *arr)
{
    sqlite3_stmt *st = NULL;
    int rc = sc_db_prepare(db, &st,
                           "SELECT name, endpoint, fault_domain, update_domain, state, boot_id "
                           "FROM members ORDER BY name",
                           NULL);

    return rc < 0 ? rc : s_rows_json(st, NULL, arr);
}

static int s_drains_json(sc_db_t *db, const char *event_id, json_object *ev)
{
    sqlite3_stmt *st = NULL;
    json_object *detail = json_object_new_object(), *states = json_object_new_object();
    json_object *res;
    int rc;

    json_object_object_add(ev, "drains", states);
    json_object_object_add(ev, "drain_detail", detail);
    /* Every VM in Resources shows up, drained or not. */
    if (json_object_object_get_ex(ev, "resources", &res) &&
        json_object_is_type(res, json_type_array))
        for (size_t i = 0; i < json_object_array_length(res); i++)
            json_object_object_add(states,
                                   json_object_get_string(json_object_array_get_idx(res, i)),
                                   json_object_new_string(sc_drain_state_name(SC_DRAIN_NONE)));
    rc =
        sc_db_prepare(db, &st,
                      "SELECT vm, phase, ordered_ms, started_ms, finished_ms, result, "
                      "exit_status, attempt FROM drains WHERE event_id = ? ORDER BY vm, phase DESC",
                      "s", event_id);
    if (rc < 0)
        return rc;
    while ((rc = sc_db_step(db, st)) == 1) {
        const char *vm = (const char *)sqlite3_column_text(st, 0);
        const char *phase = (const char *)sqlite3_column_text(st, 1);
        json_object *per, *ph = json_object_new_object();

        if (!json_object_object_get_ex(detail, vm, &per)) {
            per = json_object_new_object();
            json_object_object_add(detail, vm, per);
        }
        s_put_int(ph, "ordered_ms", st, 2);
        s_put_int(ph, "started_ms", st, 3);
        s_put_int(ph, "finished_ms", st, 4);
        s_put_text(ph, "result", st, 5);
        s_put_int(ph, "exit_status", st, 6);
        s_put_int(ph, "attempt", st, 7);
        json_object_object_add(per, phase, ph);
    }
    sqlite3_finalize(st);
    if (rc < 0)
        return rc;
    json_object_object_foreach(detail, vm, per)
    {
        json_object *p = NULL, *r = NULL, *v;
        json_object *ended = json_object_object_get(ev, "ended_ms"), *fin = NULL;
        bool listed;
        sc_drain_state_t d;

        json_object_object_get_ex(per, "prepare", &p);
        json_object_object_get_ex(per, "recover", &r);
        /* a recover that finished while its event was listed was a rollback */
        if (r)
            json_object_object_get_ex(r, "finished_ms", &fin);
        listed = !ended || (fin && json_object_get_int64(fin) < json_object_get_int64(ended));
        d = sc_store_drain_state(
            p ? json_object_get_string(json_object_object_get(p, "result")) : NULL,
            p && json_object_object_get_ex(p, "ordered_ms", &v) && v,
            p && json_object_object_get_ex(p, "started_ms", &v) && v,
            r ? json_object_get_string(json_object_object_get(r, "result")) : NULL, r != NULL,
            r && json_object_object_get_ex(r, "started_ms", &v) && v, listed);
        json_object_object_add(states, vm, json_object_new_string(sc_drain_state_name(d)));
    }
    return 0;
}

static int s_events_json(sc_db_t *db, json_object *arr, bool include_ended, int64_t since)
{
    static const char *const json_cols[] = {"resources", "seen_by", "event", NULL};
    sqlite3_stmt *st = NULL;
    int rc = sc_db_prepare(
        db, &st,
        "SELECT event_id AS EventId, event_type AS type, status, source, resources, not_before, "
        "duration_s, description, seen_by, first_seen_ms, approved_ms, approved_by, started_ms, "
        "started_how, ended_ms, ended_how, observed_ms, doc AS event FROM events "
        "WHERE ? OR ended_ms IS NULL OR ended_ms >= ? ORDER BY first_seen_ms, event_id",
        "il", include_ended ? 1 : 0, since);
    if (rc < 0 || (rc = s_rows_json(st, json_cols, arr)) < 0)
        return rc;
    for (size_t i = 0; i < json_object_array_length(arr) && rc >= 0; i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        rc = s_drains_json(db, json_object_get_string(json_object_object_get(e, "EventId")), e);
    }
    return rc;
}

static int s_approvals_json(sc_db_t *db, json_object *arr)
{
    static const char *const json_cols[] = {"event_ids", NULL};
    sqlite3_stmt *st = NULL;
    int rc = sc_db_prepare(db, &st,
                           "SELECT id, event_ids, body, via, by, intent_ms, answered_ms, rc, "
                           "http_status, answer FROM approvals ORDER BY id",
                           NULL);

    return rc < 0 ? rc : s_rows_json(st, json_cols, arr);
}

int sc_store_snapshot(sc_store_t *store, bool include_ended, int64_t now_ms, int64_t keep_ended_ms,
                      json_object **ret_json)
{
    json_object *o, *members, *events, *approvals;
    int64_t term;
    int rc;

    if (!store || !ret_json)
        return -EINVAL;
    if ((rc = sc_store_term(store, &term)) < 0)
        return rc;
    o = json_object_new_object();
    members = json_object_new_array();
    events = json_object_new_array();
    approvals = json_object_new_array();
    json_object_object_add(o, "term", json_object_new_int64(term));
    json_object_object_add(o, "members", members);
    json_object_object_add(o, "events", events);
    json_object_object_add(o, "approvals", approvals);
    rc = s_members_json(store->db, members);
    if (rc >= 0)
        rc = s_events_json(store->db, events, include_ended, now_ms - keep_ended_ms);
    if (rc >= 0)
        rc = s_approvals_json(store->db, approvals);
    if (rc < 0) {
        json_object_put(o);
        return rc;
    }
    *ret_json = o;
    return 0;
}

int sc_store_history_json(sc_store_t *store, size_t max, json_object **ret_json, char *err,
                          size_t errlen)
{
    static const char *const json_cols[] = {"data", NULL};
    sqlite3 *db = store ? sc_db_handle(store->db) : NULL;
    sqlite3_stmt *st = NULL;
    json_object *arr;

    if (!db || !ret_json)
        return -EINVAL;
    if (sqlite3_prepare_v2(db,
                           "SELECT idx AS \"index\", term, kind, data, reason, wall_ms FROM "
                           "(SELECT * FROM dlog ORDER BY idx DESC LIMIT ?) ORDER BY idx",
                           -1, &st, NULL) != SQLITE_OK)
        return sc_errf(err, errlen, SC_E_DB, "%s", sqlite3_errmsg(db));
    sqlite3_bind_int64(st, 1, (sqlite3_int64)max);
    arr = json_object_new_array();
    if (s_rows_json(st, json_cols, arr) < 0) {
        json_object_put(arr);
        return sc_errf(err, errlen, SC_E_DB, "%s", sqlite3_errmsg(db));
    }
    *ret_json = arr;
    return 0;
}

#define S_HOOK_RUNS_SQL                                                                            \
    "SELECT vm, phase, event_id, started_ms, finished_ms FROM (SELECT vm, phase, event_id, "       \
    "started_ms, finished_ms, row_number() OVER (PARTITION BY vm, phase ORDER BY "                 \
    "finished_ms DESC) AS rn FROM drains WHERE result = 'done' AND started_ms IS NOT NULL "        \
    "AND finished_ms >= started_ms) WHERE rn <= ?1 "                                               \
    "UNION ALL SELECT vm, phase, event_id, started_ms, NULL FROM drains WHERE "                    \
    "started_ms >= ?2 AND finished_ms IS NULL"

int sc_store_hook_runs_each(sc_store_t *store, size_t per, int64_t running_since_ms,
                            sc_store_run_fn fn, void *ud)
{
    sqlite3_stmt *st = NULL;
    int rc;

    if (!store || !fn)
        return -EINVAL;
    rc = per ? sc_db_prepare(store->db, &st, S_HOOK_RUNS_SQL, "ll", (int64_t)per, running_since_ms)
             : sc_db_prepare(store->db, &st,
                             "SELECT vm, phase, event_id, started_ms, NULL FROM drains WHERE "
                             "started_ms >= ?1 AND finished_ms IS NULL",
                             "l", running_since_ms);
    if (rc < 0)
        return rc;
    while ((rc = sc_db_step(store->db, st)) == 1) {
        const char *vm = (const char *)sqlite3_column_text(st, 0);
        const char *ph = (const char *)sqlite3_column_text(st, 1);
        const char *id = (const char *)sqlite3_column_text(st, 2);
        if (!vm || !ph || !id)
            continue;
        if ((rc = fn(ud, vm, ph, id, sqlite3_column_int64(st, 3),
                     sqlite3_column_type(st, 4) == SQLITE_NULL ? -1
                                                               : sqlite3_column_int64(st, 4))) < 0)
            break;
    }
    sqlite3_finalize(st);
    return rc < 0 ? rc : 0;
}

int sc_store_hook_runs(sc_store_t *store, size_t per, int64_t running_since_ms,
                       json_object **ret_json)
{
    sqlite3_stmt *st = NULL;
    json_object *arr;
    int rc;

    if (!store || !ret_json)
        return -EINVAL;
    rc = sc_db_prepare(store->db, &st, S_HOOK_RUNS_SQL, "ll", (int64_t)per, running_since_ms);
    if (rc < 0)
        return rc;
    arr = json_object_new_array();
    if ((rc = s_rows_json(st, NULL, arr)) < 0) {
        json_object_put(arr);
        return rc;
    }
    *ret_json = arr;
    return 0;
}

int sc_store_drains_of(sc_store_t *store, const char *const *ids, size_t n, int64_t from,
                       json_object **ret_json)
{
    json_object *arr;
    int rc = 0;

    if (!store || (n && !ids) || !ret_json)
        return -EINVAL;
    arr = json_object_new_array();
    for (size_t i = 0; i < n && rc >= 0; i++) {
        sqlite3_stmt *st = NULL;

        rc = sc_db_prepare(
            store->db, &st,
            "SELECT d.event_id, d.vm, d.phase, d.ordered_ms, d.started_ms, d.finished_ms, "
            "d.result, d.exit_status, d.attempt, (SELECT json_extract(l.data, '$.detail') FROM "
            "dlog l WHERE l.idx >= ?2 AND l.kind = 'hook_progress' AND "
            "json_extract(l.data, '$.event_id') = d.event_id COLLATE NOCASE AND "
            "json_extract(l.data, '$.vm') = d.vm AND json_extract(l.data, '$.phase') = d.phase "
            "ORDER BY l.idx DESC LIMIT 1) AS detail FROM drains d WHERE d.event_id = ?1 "
            "ORDER BY d.vm, d.phase DESC",
            "sl", ids[i], from);
        if (rc >= 0)
            rc = s_rows_json(st, NULL, arr);
    }
    if (rc < 0) {
        json_object_put(arr);
        return rc;
    }
    *ret_json = arr;
    return 0;
}

int sc_store_approvals_unanswered(sc_store_t *store, json_object **ret_json)
{
    sqlite3_stmt *st = NULL;
    json_object *arr;
    int rc;

    if (!store || !ret_json)
        return -EINVAL;
    rc = sc_db_prepare(store->db, &st,
                       "SELECT id, event_ids, via FROM approvals WHERE answered_ms IS NULL "
                       "ORDER BY id",
                       NULL);
    if (rc < 0)
        return rc;
    arr = json_object_new_array();
    while ((rc = sc_db_step(store->db, st)) == 1) {
        json_object *o = json_object_new_object();
        const unsigned char *via = sqlite3_column_text(st, 2);
        json_object_object_add(o, "id", json_object_new_int64(sqlite3_column_int64(st, 0)));
        json_object_object_add(o, "event_ids",
                               json_tokener_parse((const char *)sqlite3_column_text(st, 1)));
        json_object_object_add(o, "via", via ? json_object_new_string((const char *)via) : NULL);
        json_object_array_add(arr, o);
    }
    sqlite3_finalize(st);
    if (rc < 0) {
        json_object_put(arr);
        return rc;
    }
    *ret_json = arr;
    return 0;
}

/* ---- the election's room, snapshots, replay ------------------------------------------------ */

/* The text in the first column of the first row of sql (one int64 parameter, or none when
 * has_arg is false): *ret (the caller's), NULL when no row or SQL NULL. */
static int s_query_text(sc_store_t *store, char **ret, const char *sql, bool has_arg, int64_t arg)
{
    sqlite3_stmt *st = NULL;
    const unsigned char *t;
    int rc = has_arg ? sc_db_prepare(store->db, &st, sql, "l", arg)
                     : sc_db_prepare(store->db, &st, sql, NULL);

    *ret = NULL;
    if (rc < 0)
        return rc;
    if ((rc = sc_db_step(store->db, st)) == 1 && (t = sqlite3_column_text(st, 0)) &&
        !(*ret = strdup((const char *)t)))
        rc = -ENOMEM;
    sqlite3_finalize(st);
    return rc < 0 ? rc : 0;
}

int sc_store_log_entries(sc_store_t *store, const sc_dlog_entry_t *v, size_t n,
                         int64_t *ret_truncated)
{
    int64_t cut = 0;
    bool own;
    int rc;

    if (!store || (n && !v))
        return -EINVAL;
    if ((rc = sc_store_txn_begin(store, &own)) < 0)
        return rc;
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        int64_t t = 0;
        if ((rc = sc_db_query_int64(store->db, &t,
                                    "SELECT coalesce(max(term), -1) FROM dlog WHERE idx = ?", "l",
                                    v[i].index)) < 0)
            break;
        if (t == v[i].term)
            continue; /* have it (Raft's log matching: the same entry and all before it) */
        if (t >= 0) { /* a different entry there: it and all after it go (never applied ones) */
            if ((rc = sc_db_run(store->db, NULL, "DELETE FROM dlog WHERE idx >= ?", "l",
                                v[i].index)) < 0)
                break;
            if (!cut)
                cut = v[i].index;
        }
        rc = sc_dlog_append_entry(store->db, &v[i]);
    }
    if ((rc = sc_store_txn_end(store, own, rc)) >= 0 && ret_truncated)
        *ret_truncated = cut;
    return rc;
}

/* A transaction of our own about to commit what a restart can do without (applies derived
 * from the durable log, the agents' boot ids): synchronous=NORMAL for it, no fsync. Whether the
 * level was lowered — never inside the caller's transaction (SQLite refuses to change it there,
 * and the caller's commit makes it durable anyway). */
static bool s_lazy_begin(sc_store_t *store)
{
    return !sc_db_in_transaction(store->db) &&
           sc_db_exec(store->db, "PRAGMA synchronous=NORMAL", NULL, 0) == 0;
}

/* The level back to FULL (the log's appends need their fsync); rc, or SC_E_DB if it fails. */
static int s_lazy_end(sc_store_t *store, bool lazy, int rc)
{
    if (lazy && sc_db_exec(store->db, "PRAGMA synchronous=FULL", NULL, 0) < 0 && rc >= 0)
        rc = SC_E_DB;
    return rc;
}

int sc_store_apply_through(sc_store_t *store, int64_t from, int64_t index)
{
    sc_dlog_entry_t *v = NULL;
    size_t n = 0;
    bool own;
    int rc = 0;

    if (!store || from < 1)
        return -EINVAL;
    if (index < from)
        return 0;
    /* all of them in one transaction (the caller's, or one of ours): one commit, not one per
     * entry. One of ours is committed without an fsync (synchronous=NORMAL, WAL): what an apply
     * writes is derived from the log, whose entries were made durable when stored, and a
     * restart applies again what a power loss took (applied flags included); the next commit
     * at FULL makes it durable with its own. A follower's turn saves an fsync. */
    bool lazy = s_lazy_begin(store);
    if ((rc = sc_store_txn_begin(store, &own)) < 0)
        return s_lazy_end(store, lazy, rc);
    /* from the first not applied on (the caller knows it): not a scan of the whole log */
    for (int64_t done = from - 1; rc >= 0 && done < index; from = done + 1) {
        rc = sc_dlog_read(store->db, from, (size_t)(index - from + 1), true, &v, &n);
        for (size_t i = 0; rc >= 0 && i < n && v[i].index <= index; i++)
            if ((rc = s_apply_entry(store, &v[i], false)) >= 0)
                done = v[i].index;
        sc_dlog_entries_free(v, n);
        v = NULL;
        if (done < from) /* nothing (left) to apply up to index */
            break;
    }
    return s_lazy_end(store, lazy, sc_store_txn_end(store, own, rc));
}

int sc_store_applied_index(sc_store_t *store, int64_t *ret_index)
{
    if (!store || !ret_index)
        return -EINVAL;
    int rc = sc_db_query_int64(store->db, ret_index,
                               "SELECT coalesce(max(idx), 0) FROM dlog WHERE applied", NULL);
    if (rc >= 0 && *ret_index == 0) /* none left: the base (compacted, or a snapshot installed) */
        rc = sc_dlog_base(store->db, ret_index, NULL);
    return rc < 0 ? rc : 0;
}

void sc_store_on_decide(sc_store_t *store, sc_store_decide_fn fn, void *ud)
{
    if (!store)
        return;
    store->on_decide = fn;
    store->on_decide_ud = ud;
}

int sc_store_hard_state(sc_store_t *store, int64_t *ret_current_term, char *ret_voted_for,
                        size_t len)
{
    char *who = NULL;
    int64_t t = 0;
    int rc;

    if (!store || !ret_current_term || !ret_voted_for || !len)
        return -EINVAL;
    if ((rc = s_meta_int(store, "current_term", &t)) < 0)
        return rc;
    if ((rc = s_query_text(store, &who, "SELECT value FROM meta WHERE key = 'voted_for'", false,
                           0)) < 0)
        return rc;
    snprintf(ret_voted_for, len, "%s", who ? who : "");
    free(who);
    *ret_current_term = t;
    return 0;
}

int sc_store_set_hard_state(sc_store_t *store, int64_t current_term, const char *voted_for)
{
    int rc;

    if (!store || current_term < 0 || !voted_for)
        return -EINVAL;
    rc = sc_db_run(store->db, NULL,
                   "INSERT INTO meta(key, value) VALUES ('current_term', ?) ON CONFLICT(key) DO "
                   "UPDATE SET value = excluded.value",
                   "l", current_term);
    if (rc >= 0)
        rc = sc_db_run(store->db, NULL,
                       "INSERT INTO meta(key, value) VALUES ('voted_for', ?) ON CONFLICT(key) DO "
                       "UPDATE SET value = excluded.value",
                       "s", voted_for);
    return rc < 0 ? rc : 0;
}

int sc_store_save_boots(sc_store_t *store, const sc_store_boot_t *v, size_t n)
{
    bool own, lazy;
    int rc;

    if (!store || (n && !v))
        return -EINVAL;
    if (!n)
        return 0;
    /* in the caller's transaction (a leader's turn): durable with it; else in one of its own,
     * without an fsync */
    lazy = s_lazy_begin(store);
    if ((rc = sc_store_txn_begin(store, &own)) >= 0) {
        for (size_t i = 0; rc >= 0 && i < n; i++) {
            char val[64 + SC_BOOT_ID_MAX];
            if (!v[i].member || !v[i].boot_id || strlen(v[i].boot_id) > SC_BOOT_ID_MAX) {
                rc = -EINVAL;
                break;
            }
            snprintf(val, sizeof(val), "%lld %lld %s", (long long)v[i].incarnation,
                     (long long)v[i].observed_ms, v[i].boot_id);
            rc = sc_db_run(store->db, NULL,
                           "INSERT INTO meta(key, value) VALUES ('agent_boot:' || ?, ?) "
                           "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                           "ss", v[i].member, val);
        }
        rc = sc_store_txn_end(store, own, rc);
    }
    rc = s_lazy_end(store, lazy, rc);
    return rc < 0 ? rc : 0;
}

/* Each meta row whose key starts with prefix (a LIKE pattern, '\\' escaping): fn(arg, the key
 * after the prefix, the value) until it returns < 0. 0 or the first error. */
static int s_meta_each(sc_store_t *store, const char *prefix, size_t prefix_len,
                       int (*fn)(void *arg, const char *key, const char *value), void *arg)
{
    sqlite3_stmt *st = NULL;
    char len[24];
    int rc;

    snprintf(len, sizeof(len), "%zu", prefix_len + 1);
    if ((rc = sc_db_prepare(store->db, &st,
                            "SELECT substr(key, CAST(?1 AS INTEGER)), value FROM meta "
                            "WHERE key LIKE ?2 || '%' ESCAPE '\\' ORDER BY key",
                            "ss", len, prefix)) < 0)
        return rc;
    while ((rc = sc_db_step(store->db, st)) == 1) {
        const char *key = (const char *)sqlite3_column_text(st, 0);
        const char *val = (const char *)sqlite3_column_text(st, 1);

        if (key && val && (rc = fn(arg, key, val)) < 0)
            break;
    }
    sqlite3_finalize(st);
    return rc < 0 ? rc : 0;
}

struct s_boots_arg {
    int (*fn)(void *arg, const sc_store_boot_t *b);
    void *arg;
};

static int s_boot_row(void *arg, const char *name, const char *val)
{
    struct s_boots_arg *a = arg;
    long long inc, obs;
    int off = 0;

    if (sscanf(val, "%lld %lld %n", &inc, &obs, &off) != 2 || !val[off])
        return 0; /* not ours to read: skipped */
    return a->fn(a->arg, &(sc_store_boot_t){name, val + off, inc, obs});
}

int sc_store_boots_each(sc_store_t *store, int (*fn)(void *arg, const sc_store_boot_t *b),
                        void *arg)
{
    if (!store || !fn)
        return -EINVAL;
    return s_meta_each(store, "agent\\_boot:", strlen("agent_boot:"), s_boot_row,
                       &(struct s_boots_arg){fn, arg});
}

/* One statement on meta (up to three string parameters, as types says), in the caller's
 * transaction or one of its own without an fsync (the coordinator's own, not replicated). */
static int s_meta_write(sc_store_t *store, const char *sql, const char *types, const char *a,
                        const char *b, const char *c)
{
    bool own, lazy = s_lazy_begin(store);
    int rc;

    if ((rc = sc_store_txn_begin(store, &own)) >= 0)
        rc = sc_store_txn_end(store, own, sc_db_run(store->db, NULL, sql, types, a, b, c));
    rc = s_lazy_end(store, lazy, rc);
    return rc < 0 ? rc : 0;
}

int sc_store_eviction_note(sc_store_t *store, const char *id, const char *event_json,
                           int64_t started_wall_ms)
{
    char head[32];

    if (!store || !id || !event_json)
        return -EINVAL;
    snprintf(head, sizeof(head), "%lld ", (long long)started_wall_ms);
    return s_meta_write(store,
                        "INSERT INTO meta(key, value) VALUES ('eviction:' || ?, ? || ?) "
                        "ON CONFLICT(key) DO NOTHING",
                        "sss", id, head, event_json);
}

struct s_evictions_arg {
    int (*fn)(void *arg, const char *id, const char *event_json, int64_t started_wall_ms);
    void *arg;
};

static int s_eviction_row(void *arg, const char *id, const char *val)
{
    struct s_evictions_arg *a = arg;
    long long at;
    int off = 0;

    if (sscanf(val, "%lld %n", &at, &off) != 1 || !val[off])
        return 0; /* not ours to read: skipped */
    return a->fn(a->arg, id, val + off, at);
}

int sc_store_evictions_each(sc_store_t *store,
                            int (*fn)(void *arg, const char *id, const char *event_json,
                                      int64_t started_wall_ms),
                            void *arg)
{
    if (!store || !fn)
        return -EINVAL;
    return s_meta_each(store, "eviction:", strlen("eviction:"), s_eviction_row,
                       &(struct s_evictions_arg){fn, arg});
}

int sc_store_eviction_forget(sc_store_t *store, const char *id)
{
    if (!store || !id)
        return -EINVAL;
    return s_meta_write(store, "DELETE FROM meta WHERE key = 'eviction:' || ?", "s", id, NULL,
                        NULL);
}

int sc_store_save_snapshot(sc_store_t *store, int64_t index, int64_t term, int64_t wall_ms,
                           const char *state)
{
    bool own_txn;
    int rc;

    if (!store || index < 1 || !state)
        return -EINVAL;
    own_txn = !sc_db_in_transaction(store->db);
    if (own_txn && (rc = sc_db_begin(store->db)) < 0)
        return rc;
    rc =
        sc_db_run(store->db, NULL,
                  "INSERT OR REPLACE INTO snapshots(idx, term, wall_ms, state) VALUES (?, ?, ?, ?)",
                  "llls", index, term, wall_ms, state);
    if (rc >= 0)
        rc = sc_db_run(store->db, NULL,
                       "DELETE FROM snapshots WHERE idx NOT IN (SELECT idx FROM snapshots ORDER BY "
                       "idx DESC LIMIT 2)",
                       NULL);
    if (own_txn) {
        if (rc >= 0 && (rc = sc_db_commit(store->db)) >= 0)
            return 0;
        sc_db_rollback(store->db);
    }
    return rc < 0 ? rc : 0;
}

int sc_store_last_snapshot(sc_store_t *store, int64_t *ret_index, char **ret_state)
{
    char *state = NULL;
    int64_t idx = 0;
    int rc;

    if (!store || !ret_index || !ret_state)
        return -EINVAL;
    rc = sc_db_query_int64(store->db, &idx, "SELECT coalesce(max(idx), 0) FROM snapshots", NULL);
    if (rc < 0)
        return rc;
    if (idx && (rc = s_query_text(store, &state, "SELECT state FROM snapshots WHERE idx = ?", true,
                                  idx)) < 0)
        return rc;
    *ret_index = idx;
    *ret_state = state;
    return 0;
}

int sc_store_entries(sc_store_t *store, int64_t from, size_t max, sc_dlog_entry_t **ret_entries,
                     size_t *ret_n)
{
    if (!store)
        return -EINVAL;
    return sc_dlog_read(store->db, from, max, false, ret_entries, ret_n);
}

int sc_store_last_entry(sc_store_t *store, int64_t *ret_index, int64_t *ret_term)
{
    if (!store)
        return -EINVAL;
    return sc_dlog_last(store->db, ret_index, ret_term);
}
