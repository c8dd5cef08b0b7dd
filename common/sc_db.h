/* sc_db: a small SQLite helper shared by the agent and the coordinator.
 *
 * sc_db_open() sets journal_mode=WAL, synchronous=FULL, foreign_keys=ON and a busy timeout,
 * then brings the schema up to date with numbered migrations tracked in PRAGMA user_version:
 * migrations[i] takes the schema from version i to i+1 and is applied in its own transaction
 * (BEGIN IMMEDIATE) with user_version bumped inside it, so a crash leaves the database either
 * before or after a whole migration. A database newer than the code knows is refused.
 *
 * Errors: SQLite errors are returned as SC_E_DB (SQLITE_BUSY/LOCKED as SC_E_TIMEOUT,
 * SQLITE_NOMEM as -ENOMEM, SQLITE_CONSTRAINT as -EEXIST) with SQLite's message kept in
 * sc_db_errmsg() and, where an err buffer is taken, copied there. */
#ifndef SC_DB_H
#define SC_DB_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sc_db sc_db_t;

/* Busy timeout set on every connection (milliseconds). */
#define SC_DB_BUSY_TIMEOUT_MS 5000

/* Opens (creating if missing) the database at path and applies the migrations that are
 * missing. path ":memory:" works (journal mode then stays "memory"). On failure returns
 * SC_E_DB (or -ENOMEM, -EINVAL) with a reason in err (if non-NULL), e.g. "database schema
 * version 7 is newer than this program knows (3)" or "migration 2 -> 3 failed: ...".
 * *ret_db is written only on success; the caller destroys it with sc_db_close(). */
int sc_db_open(const char *path, const char *const *migrations, size_t n_migrations,
               sc_db_t **ret_db, char *err, size_t errlen);
/* Opens the existing database at path read-only (SQLite URI "file:PATH?mode=ro"): no
 * migration, no pragma written, busy_ms of busy timeout; for readers beside the daemon that
 * owns it. On failure returns SC_E_DB (or -ENOMEM, -EINVAL) with SQLite's reason alone in err
 * (the caller names the file). *ret_db is written only on success (sc_db_close). */
int sc_db_open_readonly(const char *path, int busy_ms, sc_db_t **ret_db, char *err, size_t errlen);
/* Closes the database and sets *db to NULL. Takes NULL and *db == NULL. Rolls back an open
 * transaction. */
void sc_db_close(sc_db_t **db);
/* The underlying connection, borrowed (for prepared statements beyond the helpers). */
sqlite3 *sc_db_handle(sc_db_t *db);
/* Runs one or more SQL statements that return no rows we care about (rows are ignored).
 * 0 or an error code as above, with the reason in err (if non-NULL) and sc_db_errmsg(). */
int sc_db_exec(sc_db_t *db, const char *sql, char *err, size_t errlen);
/* BEGIN IMMEDIATE (takes the write lock now, waiting up to the busy timeout). */
int sc_db_begin(sc_db_t *db);
/* COMMIT. */
int sc_db_commit(sc_db_t *db);
/* ROLLBACK. Harmless (returns 0) when no transaction is open. */
int sc_db_rollback(sc_db_t *db);
/* Whether a transaction is open on this connection. */
bool sc_db_in_transaction(sc_db_t *db);
/* The schema version (PRAGMA user_version). */
int sc_db_user_version(sc_db_t *db, int *ret_version);
/* The reason for the last error on this connection ("" if none). Borrowed, valid until the
 * next call on db. */
const char *sc_db_errmsg(sc_db_t *db);

/* Prepares sql and binds its "?" parameters from the variadic args, one per character of
 * types:
 *   's' const char * (NULL binds NULL)   'i' int   'l' int64_t   'd' double
 *   'b' const void *, int len (blob)     'n' NULL (takes no argument)
 * types may be NULL or "" when sql has no parameters. The count must match the statement's
 * parameters (-EINVAL otherwise). *ret_stmt is the caller's: sqlite3_finalize() it. */
int sc_db_prepare(sc_db_t *db, sqlite3_stmt **ret_stmt, const char *sql, const char *types, ...);
/* sqlite3_step() translated: 1 when a row is ready, 0 when done, or an error code (reason in
 * sc_db_errmsg()). */
int sc_db_step(sc_db_t *db, sqlite3_stmt *stmt);
/* Prepares, binds (as sc_db_prepare), steps to completion and finalizes: for INSERT/UPDATE/
 * DELETE. ret_changes (may be NULL) gets sqlite3_changes(). */
int sc_db_run(sc_db_t *db, int *ret_changes, const char *sql, const char *types, ...);
/* Runs a query returning one integer in the first column of the first row: 0 and
 * *ret_value set; SC_E_NOT_FOUND when no row; SQL NULL reads as 0. */
int sc_db_query_int64(sc_db_t *db, int64_t *ret_value, const char *sql, const char *types, ...);
/* The rowid of the last INSERT on this connection. */
int64_t sc_db_last_insert_rowid(sc_db_t *db);

#endif
