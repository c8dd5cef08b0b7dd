#include "sc_dlog.h"

#include "sc_error.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const s_kind_name[SC_DLOG_KIND_MAX] = {
    [SC_DLOG_TERM] = "term",
    [SC_DLOG_MEMBER] = "member",
    [SC_DLOG_EVENT_SEEN] = "event_seen",
    [SC_DLOG_EVENT_STARTED] = "event_started",
    [SC_DLOG_EVENT_ENDED] = "event_ended",
    [SC_DLOG_PREPARE_ORDERED] = "prepare_ordered",
    [SC_DLOG_RECOVER_ORDERED] = "recover_ordered",
    [SC_DLOG_HOOK_PROGRESS] = "hook_progress",
    [SC_DLOG_APPROVAL_INTENT] = "approval_intent",
    [SC_DLOG_APPROVAL_ANSWER] = "approval_answer",
    [SC_DLOG_ALERT] = "alert",
    [SC_DLOG_EVENT_CLOSED] = "event_closed",
    [SC_DLOG_REHEARSAL] = "rehearsal",
};

const char *sc_dlog_kind_name(sc_dlog_kind_t kind)
{
    if ((unsigned)kind >= SC_DLOG_KIND_MAX)
        return "unknown";
    return s_kind_name[kind];
}

int sc_dlog_kind_parse(const char *name, sc_dlog_kind_t *ret_kind)
{
    if (!name)
        return -EINVAL;
    for (int k = 0; k < SC_DLOG_KIND_MAX; k++) {
        if (strcmp(name, s_kind_name[k]) == 0) {
            *ret_kind = (sc_dlog_kind_t)k;
            return 0;
        }
    }
    return -EINVAL;
}

/* Whether s is a JSON object within the size limit. */
static bool s_is_json_object(const char *s)
{
    json_object *o;
    bool ok;

    if (!s || strlen(s) > SC_DLOG_DATA_MAX)
        return false;
    o = json_tokener_parse(s);
    ok = o && json_object_is_type(o, json_type_object);
    json_object_put(o);
    return ok;
}

int sc_dlog_last(sc_db_t *db, int64_t *ret_index, int64_t *ret_term)
{
    sqlite3_stmt *st = NULL;
    int64_t idx = 0, term = 0;
    int rc;

    if (!db)
        return -EINVAL;
    rc = sc_db_prepare(db, &st, "SELECT idx, term FROM dlog ORDER BY idx DESC LIMIT 1", NULL);
    if (rc < 0)
        return rc;
    rc = sc_db_step(db, st);
    if (rc == 1) {
        idx = sqlite3_column_int64(st, 0);
        term = sqlite3_column_int64(st, 1);
        rc = 0;
    }
    sqlite3_finalize(st);
    if (rc == 0 && idx == 0) /* empty: what compaction left, if anything */
        rc = sc_dlog_base(db, &idx, &term);
    if (rc < 0)
        return rc;
    if (ret_index)
        *ret_index = idx;
    if (ret_term)
        *ret_term = term;
    return 0;
}

int sc_dlog_base(sc_db_t *db, int64_t *ret_index, int64_t *ret_term)
{
    int64_t idx = 0, term = 0;
    int rc;

    if (!db)
        return -EINVAL;
    if ((rc = sc_db_query_int64(db, &idx,
                                "SELECT coalesce((SELECT CAST(value AS INTEGER) FROM meta "
                                "WHERE key = 'log_base_index'), 0)",
                                NULL)) < 0 ||
        (rc = sc_db_query_int64(db, &term,
                                "SELECT coalesce((SELECT CAST(value AS INTEGER) FROM meta "
                                "WHERE key = 'log_base_term'), 0)",
                                NULL)) < 0)
        return rc;
    if (ret_index)
        *ret_index = idx;
    if (ret_term)
        *ret_term = term;
    return 0;
}

/* Sets the base (the trigger lets applied entries up to it go), then removes every entry (all)
 * or those up to it. */
static int s_set_base(sc_db_t *db, int64_t index, int64_t term, bool all)
{
    int rc = sc_db_run(db, NULL,
                       "INSERT INTO meta(key, value) VALUES ('log_base_index', ?), "
                       "('log_base_term', ?) ON CONFLICT(key) DO UPDATE SET value = "
                       "excluded.value",
                       "ll", index, term);
    if (rc >= 0)
        rc = all ? sc_db_run(db, NULL, "DELETE FROM dlog", NULL)
                 : sc_db_run(db, NULL, "DELETE FROM dlog WHERE idx <= ?", "l", index);
    return rc < 0 ? rc : 0;
}

int sc_dlog_compact(sc_db_t *db, int64_t through)
{
    int64_t term = -1, base = 0;
    int rc;

    if (!db || through < 1)
        return -EINVAL;
    if ((rc = sc_dlog_base(db, &base, NULL)) < 0)
        return rc;
    if (through <= base)
        return 0; /* already gone */
    if ((rc = sc_db_query_int64(db, &term,
                                "SELECT coalesce((SELECT term FROM dlog WHERE idx = ?), -1)", "l",
                                through)) < 0)
        return rc;
    if (term < 0)
        return -EINVAL;
    return s_set_base(db, through, term, false);
}

int sc_dlog_reset(sc_db_t *db, int64_t index, int64_t term, bool *ret_kept)
{
    int64_t have = -1, applied = 0;
    bool keep;
    int rc;

    if (!db || index < 1 || term < 1)
        return -EINVAL;
    if ((rc = sc_db_query_int64(db, &have,
                                "SELECT coalesce((SELECT term FROM dlog WHERE idx = ?), -1)", "l",
                                index)) < 0 ||
        (rc = sc_db_query_int64(db, &applied,
                                "SELECT coalesce(max(idx), 0) FROM dlog WHERE applied", NULL)) < 0)
        return rc;
    if (applied > index) /* the snapshot would undo entries applied to the tables */
        return -EINVAL;
    /* Raft §7: our entry at index is the snapshot's (log matching: so is every one before it);
     * those after it may be what a leader counted as stored here: they stay, and the leader's
     * appends check them. Any other log is not the leader's: all of it goes. */
    keep = have == term;
    if ((rc = s_set_base(db, index, term, !keep)) < 0)
        return rc;
    if (ret_kept)
        *ret_kept = keep;
    return 0;
}

static int s_insert(sc_db_t *db, int64_t index, int64_t term, sc_dlog_kind_t kind, const char *data,
                    const char *reason, int64_t wall_ms)
{
    if ((unsigned)kind >= SC_DLOG_KIND_MAX || term < 0 || !s_is_json_object(data))
        return -EINVAL;
    if (!reason)
        reason = "";
    if (strlen(reason) > SC_DLOG_REASON_MAX)
        return SC_E_TOO_BIG;
    return sc_db_run(db, NULL,
                     "INSERT INTO dlog(idx, term, kind, data, reason, wall_ms, applied) "
                     "VALUES (?, ?, ?, ?, ?, ?, 0)",
                     "llsssl", index, term, s_kind_name[kind], data, reason, wall_ms);
}

int sc_dlog_append(sc_db_t *db, int64_t term, sc_dlog_kind_t kind, const char *data,
                   const char *reason, int64_t wall_ms, int64_t *ret_index)
{
    int64_t last, last_term;
    int rc;

    if (!db)
        return -EINVAL;
    rc = sc_dlog_last(db, &last, &last_term);
    if (rc < 0)
        return rc;
    if (term < last_term)
        return SC_E_STALE_TERM;
    rc = s_insert(db, last + 1, term, kind, data, reason, wall_ms);
    if (rc < 0)
        return rc;
    if (ret_index)
        *ret_index = last + 1;
    return 0;
}

int sc_dlog_append_entry(sc_db_t *db, const sc_dlog_entry_t *e)
{
    int64_t last, last_term;
    int rc;

    if (!db || !e)
        return -EINVAL;
    rc = sc_dlog_last(db, &last, &last_term);
    if (rc < 0)
        return rc;
    if (e->index <= last)
        return -EEXIST;
    if (e->index != last + 1)
        return -EINVAL;
    if (e->term < last_term)
        return SC_E_STALE_TERM;
    return s_insert(db, e->index, e->term, e->kind, e->data, e->reason, e->wall_ms);
}

int sc_dlog_mark_applied(sc_db_t *db, int64_t index)
{
    int changes = 0;
    int rc;

    if (!db)
        return -EINVAL;
    rc = sc_db_run(db, &changes, "UPDATE dlog SET applied = 1 WHERE idx = ?", "l", index);
    if (rc < 0)
        return rc;
    return changes ? 0 : SC_E_NOT_FOUND;
}

static char *s_dup_col(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return strdup(t ? (const char *)t : "");
}

void sc_dlog_entries_free(sc_dlog_entry_t *entries, size_t n)
{
    if (!entries)
        return;
    for (size_t i = 0; i < n; i++) {
        free(entries[i].data);
        free(entries[i].reason);
    }
    free(entries);
}

int sc_dlog_read(sc_db_t *db, int64_t from, size_t max, bool only_unapplied,
                 sc_dlog_entry_t **ret_entries, size_t *ret_n)
{
    sqlite3_stmt *st = NULL;
    sc_dlog_entry_t *v = NULL;
    size_t n = 0, cap = 0;
    int rc;

    if (!db || !ret_entries || !ret_n)
        return -EINVAL;
    if (max > SC_DLOG_READ_MAX)
        max = SC_DLOG_READ_MAX;
    rc = sc_db_prepare(db, &st,
                       "SELECT idx, term, kind, data, reason, wall_ms, applied FROM dlog "
                       "WHERE idx >= ? AND (? = 0 OR applied = 0) ORDER BY idx LIMIT ?",
                       "lil", from, only_unapplied ? 1 : 0, (int64_t)max);
    if (rc < 0)
        return rc;
    while ((rc = sc_db_step(db, st)) == 1) {
        sc_dlog_entry_t *e;

        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            sc_dlog_entry_t *nv = realloc(v, ncap * sizeof(*nv));
            if (!nv) {
                rc = -ENOMEM;
                break;
            }
            v = nv;
            cap = ncap;
        }
        e = &v[n];
        memset(e, 0, sizeof(*e));
        e->index = sqlite3_column_int64(st, 0);
        e->term = sqlite3_column_int64(st, 1);
        if (sc_dlog_kind_parse((const char *)sqlite3_column_text(st, 2), &e->kind) < 0)
            e->kind = SC_DLOG_KIND_MAX;
        e->data = s_dup_col(st, 3);
        e->reason = s_dup_col(st, 4);
        e->wall_ms = sqlite3_column_int64(st, 5);
        e->applied = sqlite3_column_int(st, 6) != 0;
        n++;
        if (!e->data || !e->reason) {
            rc = -ENOMEM;
            break;
        }
    }
    sqlite3_finalize(st);
    if (rc < 0) {
        sc_dlog_entries_free(v, n);
        return rc;
    }
    if (n == 0) {
        free(v);
        v = NULL;
    }
    *ret_entries = v;
    *ret_n = n;
    return 0;
}
