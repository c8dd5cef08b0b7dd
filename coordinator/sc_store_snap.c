/* sc_store_snap: the store's part of Raft's snapshots. Compaction takes away the log's applied
 * prefix that a saved snapshot includes; a leader sends a follower too far behind (the entries
 * it is owed are gone) its replicated tables and state instead, which the follower installs
 * in one transaction (sc_coord_snap.c moves them). */
#include "sc_store.h"
#include "sc_store_int.h"

#include "sc_error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The tables a snapshot carries (the projection of the log), and meta's keys of the log. */
static const char *const s_tables[] = {"members", "events", "drains", "approvals", "meta"};
#define S_META_WHERE " WHERE key IN ('term', 'paused')"

int sc_store_log_base(sc_store_t *store, int64_t *ret_index, int64_t *ret_term)
{
    if (!store)
        return -EINVAL;
    return sc_dlog_base(store->db, ret_index, ret_term);
}

int sc_store_compact(sc_store_t *store, int64_t through)
{
    int64_t oldest = 0;
    bool own;
    int rc;

    if (!store)
        return -EINVAL;
    if ((rc = sc_db_query_int64(store->db, &oldest, "SELECT coalesce(min(idx), 0) FROM snapshots",
                                NULL)) < 0)
        return rc;
    if (through > oldest) /* a restart may fall back on the older snapshot: its log stays */
        through = oldest;
    if (through < 1)
        return 0;
    if ((rc = sc_store_txn_begin(store, &own)) < 0)
        return rc;
    return sc_store_txn_end(store, own, sc_dlog_compact(store->db, through));
}

/* One table's rows: {"columns":[...],"rows":[[...],...]}. */
static int s_table_json(sc_db_t *db, const char *table, json_object *out)
{
    sqlite3_stmt *st = NULL;
    json_object *cols = json_object_new_array(), *rows = json_object_new_array(), *t;
    char sql[128];
    int rc, n;

    snprintf(sql, sizeof(sql), "SELECT * FROM %s%s", table,
             strcmp(table, "meta") == 0 ? S_META_WHERE : "");
    if ((rc = sc_db_prepare(db, &st, sql, NULL)) < 0) {
        json_object_put(cols);
        json_object_put(rows);
        return rc;
    }
    n = sqlite3_column_count(st);
    for (int i = 0; i < n; i++)
        json_object_array_add(cols, json_object_new_string(sqlite3_column_name(st, i)));
    while ((rc = sc_db_step(db, st)) == 1) {
        json_object *row = json_object_new_array();
        for (int i = 0; i < n; i++) {
            json_object *v = NULL;
            switch (sqlite3_column_type(st, i)) {
            case SQLITE_NULL: break;
            case SQLITE_INTEGER: v = json_object_new_int64(sqlite3_column_int64(st, i)); break;
            case SQLITE_FLOAT: v = json_object_new_double(sqlite3_column_double(st, i)); break;
            default: v = json_object_new_string((const char *)sqlite3_column_text(st, i));
            }
            json_object_array_add(row, v);
        }
        json_object_array_add(rows, row);
    }
    sqlite3_finalize(st);
    t = json_object_new_object();
    json_object_object_add(t, "columns", cols);
    json_object_object_add(t, "rows", rows);
    json_object_object_add(out, table, t);
    return rc < 0 ? rc : 0;
}

int sc_store_tables_json(sc_store_t *store, json_object **ret_json)
{
    json_object *o;
    int rc = 0;

    if (!store || !ret_json)
        return -EINVAL;
    if (!(o = json_object_new_object()))
        return -ENOMEM;
    for (size_t k = 0; rc >= 0 && k < sizeof(s_tables) / sizeof(s_tables[0]); k++)
        rc = s_table_json(store->db, s_tables[k], o);
    if (rc < 0) {
        json_object_put(o);
        return rc;
    }
    *ret_json = o;
    return 0;
}

/* Whether this store's table has a column of that name (names come from the wire). */
static bool s_has_column(sc_db_t *db, const char *table, const char *col)
{
    int64_t n = 0;
    char sql[128];

    snprintf(sql, sizeof(sql), "SELECT count(*) FROM pragma_table_info('%s') WHERE name = ?",
             table);
    return sc_db_query_int64(db, &n, sql, "s", col) >= 0 && n == 1;
}

/* Replaces one table's rows with t's. */
static int s_table_load(sc_db_t *db, const char *table, json_object *t, char *err, size_t errlen)
{
    json_object *cols = NULL, *rows = NULL;
    sqlite3_stmt *st = NULL;
    char sql[2048];
    size_t len, nc, nr;
    int rc;

    if (!t || !json_object_object_get_ex(t, "columns", &cols) ||
        !json_object_is_type(cols, json_type_array) ||
        !json_object_object_get_ex(t, "rows", &rows) || !json_object_is_type(rows, json_type_array))
        return sc_errf(err, errlen, -EINVAL, "snapshot: table %s has no columns or rows", table);
    nc = json_object_array_length(cols);
    nr = json_object_array_length(rows);
    if (nc == 0 || nc > 64)
        return sc_errf(err, errlen, -EINVAL, "snapshot: table %s has %zu columns", table, nc);
    len = (size_t)snprintf(sql, sizeof(sql), "INSERT INTO %s(", table);
    for (size_t i = 0; i < nc; i++) {
        const char *c = json_object_get_string(json_object_array_get_idx(cols, i));
        if (!json_object_is_type(json_object_array_get_idx(cols, i), json_type_string) ||
            strspn(c, "abcdefghijklmnopqrstuvwxyz_") != strlen(c) || !s_has_column(db, table, c))
            return sc_errf(err, errlen, -EINVAL, "snapshot: table %s has no column \"%.64s\"",
                           table, c ? c : "");
        len += (size_t)snprintf(sql + len, sizeof(sql) - len, "%s%s", i ? ", " : "", c);
        if (len >= sizeof(sql) - 4 * nc)
            return sc_errf(err, errlen, -EINVAL, "snapshot: table %s: columns too long", table);
    }
    len += (size_t)snprintf(sql + len, sizeof(sql) - len, ") VALUES (");
    for (size_t i = 0; i < nc; i++)
        len += (size_t)snprintf(sql + len, sizeof(sql) - len, "%s?", i ? ", " : "");
    snprintf(sql + len, sizeof(sql) - len, ")");
    if (strcmp(table, "meta") == 0)
        rc = sc_db_run(db, NULL, "DELETE FROM meta" S_META_WHERE, NULL);
    else {
        char del[64];
        snprintf(del, sizeof(del), "DELETE FROM %s", table);
        rc = sc_db_run(db, NULL, del, NULL);
    }
    if (rc < 0)
        return sc_errf(err, errlen, rc, "snapshot: table %s: %s", table, sc_db_errmsg(db));
    if (sqlite3_prepare_v2(sc_db_handle(db), sql, -1, &st, NULL) != SQLITE_OK)
        return sc_errf(err, errlen, SC_E_DB, "snapshot: table %s: %s", table,
                       sqlite3_errmsg(sc_db_handle(db)));
    for (size_t r = 0; rc >= 0 && r < nr; r++) {
        json_object *row = json_object_array_get_idx(rows, r);
        if (!json_object_is_type(row, json_type_array) || json_object_array_length(row) != nc) {
            rc = sc_errf(err, errlen, -EINVAL, "snapshot: table %s row %zu: not %zu values", table,
                         r, nc);
            break;
        }
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        for (size_t i = 0; i < nc; i++) {
            json_object *v = json_object_array_get_idx(row, i);
            int col = (int)i + 1;
            switch (json_object_get_type(v)) {
            case json_type_null: sqlite3_bind_null(st, col); break;
            case json_type_int: sqlite3_bind_int64(st, col, json_object_get_int64(v)); break;
            case json_type_double: sqlite3_bind_double(st, col, json_object_get_double(v)); break;
            case json_type_string:
                sqlite3_bind_text(st, col, json_object_get_string(v), json_object_get_string_len(v),
                                  SQLITE_TRANSIENT);
                break;
            default:
                rc = sc_errf(err, errlen, -EINVAL,
                             "snapshot: table %s row %zu: a value not "
                             "null, a number or text",
                             table, r);
            }
        }
        if (rc >= 0 && (rc = sc_db_step(db, st)) < 0)
            sc_errf(err, errlen, rc, "snapshot: table %s row %zu: %s", table, r, sc_db_errmsg(db));
    }
    sqlite3_finalize(st);
    return rc < 0 ? rc : 0;
}

int sc_store_install(sc_store_t *store, int64_t index, int64_t term, int64_t wall_ms,
                     json_object *tables, const char *state, bool *ret_kept, char *err,
                     size_t errlen)
{
    bool own, kept = false;
    int rc;

    if (!store || index < 1 || term < 1 || !state || !json_object_is_type(tables, json_type_object))
        return sc_errf(err, errlen, -EINVAL, "snapshot: no tables or state");
    if ((rc = sc_store_txn_begin(store, &own)) < 0)
        return sc_errf(err, errlen, rc, "snapshot: %s", sc_db_errmsg(store->db));
    if ((rc = sc_dlog_reset(store->db, index, term, &kept)) == -EINVAL)
        sc_errf(err, errlen, rc, "snapshot: the log has entries after %lld applied",
                (long long)index);
    else if (rc < 0)
        sc_errf(err, errlen, rc, "snapshot: the log: %s", sc_db_errmsg(store->db));
    for (size_t k = 0; rc >= 0 && k < sizeof(s_tables) / sizeof(s_tables[0]); k++) {
        json_object *t = NULL;
        json_object_object_get_ex(tables, s_tables[k], &t);
        rc = s_table_load(store->db, s_tables[k], t, err, errlen);
    }
    if (rc >= 0 && (rc = sc_db_run(store->db, NULL, "DELETE FROM snapshots WHERE idx < ?", "l",
                                   index)) < 0) /* their log is gone */
        sc_errf(err, errlen, rc, "snapshot: %s", sc_db_errmsg(store->db));
    if (rc >= 0 && (rc = sc_store_save_snapshot(store, index, term, wall_ms, state)) < 0)
        sc_errf(err, errlen, rc, "snapshot: saving the state: %s", sc_db_errmsg(store->db));
    if ((rc = sc_store_txn_end(store, own, rc)) >= 0 && ret_kept)
        *ret_kept = kept;
    return rc;
}
