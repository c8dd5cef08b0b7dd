#include "sc_db.h"

#include "sc_error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define S_CACHE_SLOTS 64 /* prepared statements kept per connection (sc_db_run, _query_int64) */

/* A statement prepared once and reused (SQLite's own advice for statements run often: the
 * parse and the plan, not the bindings, dominate a small INSERT or UPDATE). */
typedef struct s_cached {
    char *sql;        /* its text, the key (NULL: a free slot) */
    uint64_t hash;    /* FNV-1a of sql */
    sqlite3_stmt *st; /* prepared with SQLITE_PREPARE_PERSISTENT */
    uint64_t used;    /* the use counter's value at its last use (the least recent goes first) */
} s_cached_t;

struct sc_db {
    sqlite3 *db;      /* the connection */
    char errmsg[512]; /* reason for the last error, "" if none */
    s_cached_t cache[S_CACHE_SLOTS];
    uint64_t uses;
};

/* Translates an SQLite result code into ours. */
static int s_rc(int src)
{
    switch (src & 0xff) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE: return 0;
    case SQLITE_NOMEM: return -ENOMEM;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return SC_E_TIMEOUT;
    case SQLITE_CONSTRAINT: return -EEXIST;
    case SQLITE_RANGE:
    case SQLITE_MISUSE: return -EINVAL;
    default: return SC_E_DB;
    }
}

/* Records the connection's current error with a prefix, returns the translated code. */
static int s_fail(sc_db_t *self, int src, const char *what)
{
    snprintf(self->errmsg, sizeof(self->errmsg), "%s: %s", what,
             self->db ? sqlite3_errmsg(self->db) : sqlite3_errstr(src));
    return s_rc(src) ? s_rc(src) : SC_E_DB;
}

int sc_db_exec(sc_db_t *db, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    int src;

    if (!db || !sql)
        return -EINVAL;
    src = sqlite3_exec(db->db, sql, NULL, NULL, &msg);
    if (src != SQLITE_OK) {
        snprintf(db->errmsg, sizeof(db->errmsg), "%s", msg ? msg : sqlite3_errstr(src));
        sqlite3_free(msg);
        return sc_errf(err, errlen, s_rc(src) ? s_rc(src) : SC_E_DB, "%s", db->errmsg);
    }
    db->errmsg[0] = '\0';
    return 0;
}

int sc_db_user_version(sc_db_t *db, int *ret_version)
{
    int64_t v;
    int rc;

    if (!db || !ret_version)
        return -EINVAL;
    rc = sc_db_query_int64(db, &v, "PRAGMA user_version", NULL);
    if (rc < 0)
        return rc;
    *ret_version = (int)v;
    return 0;
}

/* Applies migration i (version i -> i+1) in its own transaction. */
static int s_migrate_one(sc_db_t *self, size_t i, const char *sql, char *err, size_t errlen)
{
    char bump[64];
    int rc;

    rc = sc_db_begin(self);
    if (rc < 0)
        goto fail;
    if ((rc = sc_db_exec(self, sql, NULL, 0)) < 0)
        goto fail_rollback;
    snprintf(bump, sizeof(bump), "PRAGMA user_version = %zu", i + 1);
    if ((rc = sc_db_exec(self, bump, NULL, 0)) < 0)
        goto fail_rollback;
    if ((rc = sc_db_commit(self)) < 0)
        goto fail_rollback;
    return 0;
fail_rollback:
    sqlite3_exec(self->db, "ROLLBACK", NULL, NULL, NULL);
fail:
    return sc_errf(err, errlen, rc < 0 && rc != -EEXIST ? rc : SC_E_DB,
                   "migration %zu -> %zu failed: %s", i, i + 1, self->errmsg);
}

/* Why SQLite could not open PATH, in words it does not give ("unable to open database
 * file"): the path is a directory, its directory is missing or not a directory, or errno. */
static void s_open_hint(const char *path, char *buf, size_t len)
{
    char dir[1024];
    const char *slash = strrchr(path, '/');
    struct stat sb;

    buf[0] = '\0';
    if (stat(path, &sb) == 0) {
        if (S_ISDIR(sb.st_mode))
            snprintf(buf, len, " (%s is a directory)", path);
        return;
    }
    if (!slash || (size_t)(slash - path) >= sizeof(dir))
        return;
    snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    if (!dir[0])
        return;
    if (stat(dir, &sb) != 0)
        snprintf(buf, len, " (%s: %s)", dir, strerror(errno));
    else if (!S_ISDIR(sb.st_mode))
        snprintf(buf, len, " (%s is not a directory)", dir);
}

int sc_db_open(const char *path, const char *const *migrations, size_t n_migrations,
               sc_db_t **ret_db, char *err, size_t errlen)
{
    sc_db_t *self;
    int src, rc, version;
    int64_t sync;
    sqlite3_stmt *st = NULL;

    if (!path || !ret_db || (n_migrations && !migrations) || n_migrations > 100000)
        return sc_errf(err, errlen, -EINVAL, "sc_db_open: bad arguments");
    if (!(self = calloc(1, sizeof(*self))))
        return sc_errf(err, errlen, -ENOMEM, "out of memory");
    src = sqlite3_open_v2(path, &self->db,
                          SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL);
    if (src != SQLITE_OK) {
        char hint[1100];
        rc = s_fail(self, src, "open");
        s_open_hint(path, hint, sizeof(hint));
        sc_errf(err, errlen, rc, "cannot open database %s: %s%s", path,
                self->db ? sqlite3_errmsg(self->db) : sqlite3_errstr(src), hint);
        goto fail;
    }
    sqlite3_extended_result_codes(self->db, 1);
    sqlite3_busy_timeout(self->db, SC_DB_BUSY_TIMEOUT_MS);
    /* Read before anything is written (journal mode included): a file that is not a database,
     * or a newer program's database, is refused untouched. */
    if ((rc = sc_db_user_version(self, &version)) < 0)
        goto fail_msg;
    if (version < 0 || (size_t)version > n_migrations) {
        sc_errf(err, errlen, SC_E_DB,
                "database %s: schema version %d is newer than this program knows (%zu); "
                "upgrade the program or restore an older database",
                path, version, n_migrations);
        snprintf(self->errmsg, sizeof(self->errmsg), "schema version %d is newer than %zu", version,
                 n_migrations);
        rc = SC_E_DB;
        goto fail;
    }
    /* journal_mode returns a row ("wal", or "memory" for :memory:), so step it rather than
     * exec'ing blindly. */
    if ((rc = sc_db_prepare(self, &st, "PRAGMA journal_mode=WAL", NULL)) < 0 ||
        (rc = sc_db_step(self, st)) < 0)
        goto fail_msg;
    sqlite3_finalize(st);
    st = NULL;
    if ((rc = sc_db_exec(self, "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON", NULL, 0)) < 0)
        goto fail_msg;
    /* PRAGMAs ignore unknown values silently: check that FULL (2) really is in force. */
    if ((rc = sc_db_query_int64(self, &sync, "PRAGMA synchronous", NULL)) < 0)
        goto fail_msg;
    if (sync != 2) {
        snprintf(self->errmsg, sizeof(self->errmsg), "synchronous=FULL not accepted (is %lld)",
                 (long long)sync);
        rc = SC_E_DB;
        goto fail_msg;
    }
    for (size_t i = (size_t)version; i < n_migrations; i++) {
        if (!migrations[i]) {
            rc = sc_errf(err, errlen, -EINVAL, "sc_db_open: NULL migration");
            goto fail;
        }
        if ((rc = s_migrate_one(self, i, migrations[i], err, errlen)) < 0)
            goto fail;
    }
    self->errmsg[0] = '\0';
    *ret_db = self;
    return 0;
fail_msg:
    sc_errf(err, errlen, rc, "database %s: %s", path, self->errmsg);
fail:
    sqlite3_finalize(st);
    sc_db_close(&self);
    return rc;
}

int sc_db_open_readonly(const char *path, int busy_ms, sc_db_t **ret_db, char *err, size_t errlen)
{
    sc_db_t *self;
    char uri[4200];
    int src;

    if (!path || !ret_db)
        return sc_errf(err, errlen, -EINVAL, "sc_db_open_readonly: bad arguments");
    if ((size_t)snprintf(uri, sizeof(uri), "file:%s?mode=ro", path) >= sizeof(uri))
        return sc_errf(err, errlen, -EINVAL, "path too long");
    if (!(self = calloc(1, sizeof(*self))))
        return sc_errf(err, errlen, -ENOMEM, "out of memory");
    src = sqlite3_open_v2(uri, &self->db,
                          SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX, NULL);
    if (src != SQLITE_OK) {
        int rc = s_rc(src) ? s_rc(src) : SC_E_DB;

        sc_errf(err, errlen, rc, "%s", self->db ? sqlite3_errmsg(self->db) : "out of memory");
        sc_db_close(&self);
        return rc;
    }
    sqlite3_extended_result_codes(self->db, 1);
    sqlite3_busy_timeout(self->db, busy_ms);
    *ret_db = self;
    return 0;
}

void sc_db_close(sc_db_t **db)
{
    sc_db_t *self;

    if (!db || !(self = *db))
        return;
    for (size_t i = 0; i < S_CACHE_SLOTS; i++) {
        sqlite3_finalize(self->cache[i].st);
        free(self->cache[i].sql);
    }
    if (self->db) {
        if (!sqlite3_get_autocommit(self->db))
            sqlite3_exec(self->db, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_close_v2(self->db);
    }
    free(self);
    *db = NULL;
}

sqlite3 *sc_db_handle(sc_db_t *db)
{
    return db ? db->db : NULL;
}

int sc_db_begin(sc_db_t *db)
{
    return sc_db_exec(db, "BEGIN IMMEDIATE", NULL, 0);
}

int sc_db_commit(sc_db_t *db)
{
    return sc_db_exec(db, "COMMIT", NULL, 0);
}

int sc_db_rollback(sc_db_t *db)
{
    if (!db)
        return -EINVAL;
    if (sqlite3_get_autocommit(db->db))
        return 0;
    return sc_db_exec(db, "ROLLBACK", NULL, 0);
}

bool sc_db_in_transaction(sc_db_t *db)
{
    return db && !sqlite3_get_autocommit(db->db);
}

const char *sc_db_errmsg(sc_db_t *db)
{
    return db ? db->errmsg : "no database";
}

int64_t sc_db_last_insert_rowid(sc_db_t *db)
{
    return db ? (int64_t)sqlite3_last_insert_rowid(db->db) : 0;
}

static uint64_t s_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* The cached statement for sql, prepared now if it is not there (in the least recently used
 * slot); NULL when it is in use (a caller stepping it still) or cannot be kept: the caller
 * prepares its own. Under the connection's mutex. */
static sqlite3_stmt *s_cache_get(sc_db_t *db, const char *sql)
{
    uint64_t h = s_hash(sql);
    s_cached_t *slot = &db->cache[0];
    sqlite3_stmt *st = NULL;
    char *copy;

    for (size_t i = 0; i < S_CACHE_SLOTS; i++) {
        s_cached_t *e = &db->cache[i];
        if (e->sql && e->hash == h && strcmp(e->sql, sql) == 0) {
            if (sqlite3_stmt_busy(e->st))
                return NULL;
            e->used = ++db->uses;
            return e->st;
        }
        if (!e->sql || (slot->sql && e->used < slot->used))
            slot = e;
    }
    if (sqlite3_prepare_v3(db->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK ||
        !st || !(copy = strdup(sql))) {
        sqlite3_finalize(st);
        return NULL; /* the caller's own prepare gives the error */
    }
    sqlite3_finalize(slot->st);
    free(slot->sql);
    *slot = (s_cached_t){.sql = copy, .hash = h, .st = st, .used = ++db->uses};
    return st;
}

/* Done with a statement from s_vprepare: a cached one is reset for its next use (its bindings
 * cleared: no text or blob kept alive), another finalized. */
static void s_release(sqlite3_stmt *st, bool cached)
{
    if (cached) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    } else {
        sqlite3_finalize(st);
    }
}

/* Prepares (or, with ret_cached, takes from the cache) and binds. *ret_cached tells which. */
static int s_vprepare_ex(sc_db_t *db, sqlite3_stmt **ret_stmt, const char *sql, const char *types,
                         va_list ap, bool *ret_cached)
{
    sqlite3_stmt *st = NULL;
    int src, idx = 0, nparams;
    bool cached = false;

    if (!db || !ret_stmt || !sql)
        return -EINVAL;
    if (ret_cached && (st = s_cache_get(db, sql)))
        cached = true;
    else if ((src = sqlite3_prepare_v2(db->db, sql, -1, &st, NULL)) != SQLITE_OK)
        return s_fail(db, src, "prepare");
    if (!st) { /* only whitespace or comments */
        snprintf(db->errmsg, sizeof(db->errmsg), "prepare: empty statement");
        return -EINVAL;
    }
    if (ret_cached)
        *ret_cached = cached;
    nparams = sqlite3_bind_parameter_count(st);
    for (const char *t = types ? types : ""; *t; t++) {
        idx++;
        if (idx > nparams) {
            snprintf(db->errmsg, sizeof(db->errmsg),
                     "bind: %zu values for %d parameters in \"%.200s\"", strlen(types), nparams,
                     sql);
            s_release(st, cached);
            return -EINVAL;
        }
        switch (*t) {
        case 's': {
            const char *s = va_arg(ap, const char *);
            src = s ? sqlite3_bind_text(st, idx, s, -1, SQLITE_TRANSIENT)
                    : sqlite3_bind_null(st, idx);
            break;
        }
        case 'i': src = sqlite3_bind_int(st, idx, va_arg(ap, int)); break;
        case 'l': src = sqlite3_bind_int64(st, idx, (sqlite3_int64)va_arg(ap, int64_t)); break;
        case 'd': src = sqlite3_bind_double(st, idx, va_arg(ap, double)); break;
        case 'b': {
            const void *p = va_arg(ap, const void *);
            int len = va_arg(ap, int);
            src = p ? sqlite3_bind_blob(st, idx, p, len, SQLITE_TRANSIENT)
                    : sqlite3_bind_null(st, idx);
            break;
        }
        case 'n': src = sqlite3_bind_null(st, idx); break;
        default:
            snprintf(db->errmsg, sizeof(db->errmsg), "bind: unknown type '%c'", *t);
            s_release(st, cached);
            return -EINVAL;
        }
        if (src != SQLITE_OK) {
            int rc = s_fail(db, src, "bind");
            s_release(st, cached);
            return rc;
        }
    }
    if (idx != nparams) {
        snprintf(db->errmsg, sizeof(db->errmsg), "bind: %d values for %d parameters in \"%.200s\"",
                 idx, nparams, sql);
        s_release(st, cached);
        return -EINVAL;
    }
    *ret_stmt = st;
    return 0;
}

static int s_vprepare(sc_db_t *db, sqlite3_stmt **ret_stmt, const char *sql, const char *types,
                      va_list ap)
{
    return s_vprepare_ex(db, ret_stmt, sql, types, ap, NULL);
}

int sc_db_prepare(sc_db_t *db, sqlite3_stmt **ret_stmt, const char *sql, const char *types, ...)
{
    va_list ap;
    int rc;

    va_start(ap, types);
    rc = s_vprepare(db, ret_stmt, sql, types, ap);
    va_end(ap);
    return rc;
}

int sc_db_step(sc_db_t *db, sqlite3_stmt *stmt)
{
    int src;

    if (!db || !stmt)
        return -EINVAL;
    src = sqlite3_step(stmt);
    if (src == SQLITE_ROW)
        return 1;
    if (src == SQLITE_DONE)
        return 0;
    return s_fail(db, src, "step");
}

int sc_db_run(sc_db_t *db, int *ret_changes, const char *sql, const char *types, ...)
{
    sqlite3_stmt *st = NULL;
    va_list ap;
    int rc;

    bool cached = false;

    if (!db)
        return -EINVAL;
    sqlite3_mutex_enter(sqlite3_db_mutex(db->db)); /* the cache is the connection's */
    va_start(ap, types);
    rc = s_vprepare_ex(db, &st, sql, types, ap, &cached);
    va_end(ap);
    if (rc >= 0) {
        while ((rc = sc_db_step(db, st)) == 1)
            ;
        s_release(st, cached);
        if (rc >= 0 && ret_changes)
            *ret_changes = sqlite3_changes(db->db);
    }
    sqlite3_mutex_leave(sqlite3_db_mutex(db->db));
    return rc < 0 ? rc : 0;
}

int sc_db_query_int64(sc_db_t *db, int64_t *ret_value, const char *sql, const char *types, ...)
{
    sqlite3_stmt *st = NULL;
    va_list ap;
    int rc;
    int64_t v = 0;

    bool cached = false;

    if (!db)
        return -EINVAL;
    sqlite3_mutex_enter(sqlite3_db_mutex(db->db));
    va_start(ap, types);
    rc = s_vprepare_ex(db, &st, sql, types, ap, &cached);
    va_end(ap);
    if (rc >= 0) {
        rc = sc_db_step(db, st);
        if (rc == 1)
            v = (int64_t)sqlite3_column_int64(st, 0);
        else if (rc == 0) {
            snprintf(db->errmsg, sizeof(db->errmsg), "no row");
            rc = SC_E_NOT_FOUND;
        }
        s_release(st, cached);
    }
    sqlite3_mutex_leave(sqlite3_db_mutex(db->db));
    if (rc < 0)
        return rc;
    *ret_value = v;
    return 0;
}
