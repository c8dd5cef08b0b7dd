/* sc_db: migrations by user_version, WAL + synchronous=FULL in force, refusal of a newer
 * schema, rollback of a failing migration, transactions and the bind helpers. */
#include "sc_db.h"
#include "sc_error.h"
#include "sc_test.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const s_migrations[] = {
    "CREATE TABLE vm (name TEXT PRIMARY KEY, fault_domain INTEGER NOT NULL)",
    "CREATE TABLE event (id TEXT PRIMARY KEY, vm TEXT NOT NULL REFERENCES vm(name),"
    " state TEXT NOT NULL)",
    "ALTER TABLE event ADD COLUMN approved_ms INTEGER;"
    " CREATE INDEX event_state ON event(state)",
};
#define N_MIG (sizeof(s_migrations) / sizeof(s_migrations[0]))

/* A fresh database path under $SC_TMP (removed first, with its WAL files). */
static const char *s_path(const char *name)
{
    static char path[1024];

    snprintf(path, sizeof(path), "%s/%s", sc_test_tmpdir(NULL), name);
    sc_test_remove_db(path);
    return path;
}

static bool s_table_exists(sc_db_t *db, const char *name)
{
    int64_t n = 0;

    if (sc_db_query_int64(db, &n, "SELECT count(*) FROM sqlite_master WHERE name = ?", "s", name) <
        0)
        return false;
    return n == 1;
}

static char *s_pragma_text(sc_db_t *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    char *s = NULL;

    if (sc_db_prepare(db, &st, sql, NULL) == 0 && sc_db_step(db, st) == 1)
        s = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return s;
}

SC_TEST(migrates_empty_file_and_pragmas_in_force)
{
    const char *path = s_path("mig.db");
    char err[256] = "";
    sc_db_t *db = NULL;
    int v = -1;
    int64_t sync = -1, fk = -1, busy = -1;
    char *mode;

    SC_CHECK_INT(sc_db_open(path, s_migrations, N_MIG, &db, err, sizeof(err)), 0);
    SC_REQUIRE(db);
    SC_CHECK_INT(sc_db_user_version(db, &v), 0);
    SC_CHECK_INT(v, (int)N_MIG);
    SC_CHECK(s_table_exists(db, "vm"));
    SC_CHECK(s_table_exists(db, "event"));
    SC_CHECK(s_table_exists(db, "event_state"));
    mode = s_pragma_text(db, "PRAGMA journal_mode");
    SC_CHECK_STR(mode, "wal");
    free(mode);
    SC_CHECK_INT(sc_db_query_int64(db, &sync, "PRAGMA synchronous", NULL), 0);
    SC_CHECK_INT(sync, 2); /* FULL */
    SC_CHECK_INT(sc_db_query_int64(db, &fk, "PRAGMA foreign_keys", NULL), 0);
    SC_CHECK_INT(fk, 1);
    SC_CHECK_INT(sc_db_query_int64(db, &busy, "PRAGMA busy_timeout", NULL), 0);
    SC_CHECK_INT(busy, SC_DB_BUSY_TIMEOUT_MS);
    /* foreign keys really enforced: an event for an unknown VM is refused */
    SC_CHECK_INT(sc_db_run(db, NULL, "INSERT INTO event(id, vm, state) VALUES (?, ?, ?)", "sss",
                           "e1", "nosuchvm", "Scheduled"),
                 -EEXIST);
    SC_CHECK(strstr(sc_db_errmsg(db), "FOREIGN KEY") != NULL);
    sc_db_close(&db);
    SC_CHECK(db == NULL);
    sc_db_close(&db); /* takes NULL */
}

SC_TEST(reopen_applies_nothing_twice_and_upgrades)
{
    const char *path = s_path("reopen.db");
    char err[256] = "";
    sc_db_t *db = NULL;
    int v = -1, changes = -1;
    int64_t n = -1;

    /* first only two migrations, as an older program would */
    SC_CHECK_INT(sc_db_open(path, s_migrations, 2, &db, err, sizeof(err)), 0);
    SC_REQUIRE(db);
    SC_CHECK_INT(sc_db_run(db, &changes, "INSERT INTO vm VALUES (?, ?)", "si", "vm0", 1), 0);
    SC_CHECK_INT(changes, 1);
    sc_db_close(&db);
    /* same migrations again: the CREATE TABLEs would fail if re-applied */
    SC_CHECK_INT(sc_db_open(path, s_migrations, 2, &db, err, sizeof(err)), 0);
    SC_REQUIRE(db);
    sc_db_close(&db);
    /* the newer program applies only migration 3 and keeps the data */
    SC_CHECK_INT(sc_db_open(path, s_migrations, N_MIG, &db, err, sizeof(err)), 0);
    SC_REQUIRE(db);
    SC_CHECK_INT(sc_db_user_version(db, &v), 0);
    SC_CHECK_INT(v, 3);
    SC_CHECK_INT(sc_db_query_int64(db, &n, "SELECT count(*) FROM vm", NULL), 0);
    SC_CHECK_INT(n, 1);
    SC_CHECK(s_table_exists(db, "event_state"));
    sc_db_close(&db);
}

SC_TEST(newer_database_is_refused)
{
    const char *path = s_path("newer.db");
    char err[256] = "";
    sc_db_t *db = NULL;

    SC_CHECK_INT(sc_db_open(path, s_migrations, N_MIG, &db, err, sizeof(err)), 0);
    SC_REQUIRE(db);
    sc_db_close(&db);
    SC_CHECK_INT(sc_db_open(path, s_migrations, 1, &db, err, sizeof(err)), SC_E_DB);
    SC_CHECK(db == NULL);
    SC_CHECK(strstr(err, "schema version 3 is newer than this program knows (1)") != NULL);

    /* A newer program's database in rollback-journal mode is refused untouched (not even
     * switched to WAL). */
    sqlite3 *raw = NULL;
    unsigned char before[4096], after[4096];
    size_t nb, na;
    FILE *f;
    path = s_path("newer-raw.db");
    SC_REQUIRE(sqlite3_open(path, &raw) == SQLITE_OK);
    SC_REQUIRE(sqlite3_exec(raw, "PRAGMA user_version = 99; CREATE TABLE t(x);", NULL, NULL,
                            NULL) == SQLITE_OK);
    sqlite3_close(raw);
    SC_REQUIRE((f = fopen(path, "rb")) != NULL);
    nb = fread(before, 1, sizeof(before), f);
    fclose(f);
    SC_CHECK_INT(sc_db_open(path, s_migrations, N_MIG, &db, err, sizeof(err)), SC_E_DB);
    SC_CHECK(strstr(err, "schema version 99 is newer") != NULL);
    SC_REQUIRE((f = fopen(path, "rb")) != NULL);
    na = fread(after, 1, sizeof(after), f);
    fclose(f);
    SC_CHECK(nb > 0 && na == nb && memcmp(before, after, nb) == 0);
}

SC_TEST(failing_migration_rolls_back)
{
    const char *path = s_path("fail.db");
    const char *const bad[] = {
        "CREATE TABLE a (x INTEGER)",
        /* the first statement succeeds, the second fails: both must be undone */
        "CREATE TABLE b (y INTEGER); INSERT INTO nosuch VALUES (1)",
    };
    char err[256] = "";
    sc_db_t *db = NULL;
    int v = -1;

    SC_CHECK_INT(sc_db_open(path, bad, 2, &db, err, sizeof(err)), SC_E_DB);
    SC_CHECK(db == NULL);
    SC_CHECK(strstr(err, "migration 1 -> 2 failed") != NULL);
    SC_CHECK(strstr(err, "nosuch") != NULL);
    /* reopen with the good first migration only: version 1, table b absent */
    SC_CHECK_INT(sc_db_open(path, bad, 1, &db, err, sizeof(err)), 0);
    SC_REQUIRE(db);
    SC_CHECK_INT(sc_db_user_version(db, &v), 0);
    SC_CHECK_INT(v, 1);
    SC_CHECK(s_table_exists(db, "a"));
    SC_CHECK(!s_table_exists(db, "b"));
    sc_db_close(&db);
}

SC_TEST(transactions_commit_and_rollback)
{
    const char *path = s_path("tx.db");
    char err[256] = "";
    sc_db_t *db = NULL, *db2 = NULL;
    int64_t n = -1;

    SC_CHECK_INT(sc_db_open(path, s_migrations, N_MIG, &db, err, sizeof(err)), 0);
    SC_REQUIRE(db);
    SC_CHECK_INT(sc_db_begin(db), 0);
    SC_CHECK(sc_db_in_transaction(db));
    SC_CHECK_INT(sc_db_run(db, NULL, "INSERT INTO vm VALUES ('a', 0)", NULL), 0);
    SC_CHECK_INT(sc_db_rollback(db), 0);
    SC_CHECK(!sc_db_in_transaction(db));
    SC_CHECK_INT(sc_db_query_int64(db, &n, "SELECT count(*) FROM vm", NULL), 0);
    SC_CHECK_INT(n, 0);

    SC_CHECK_INT(sc_db_begin(db), 0);
    SC_CHECK_INT(sc_db_run(db, NULL, "INSERT INTO vm VALUES (?, ?)", "sl", "b", (int64_t)2), 0);
    SC_CHECK_INT(sc_db_commit(db), 0);
    SC_CHECK_INT(sc_db_rollback(db), 0); /* none open: harmless */
    /* a second connection sees the committed row */
    SC_CHECK_INT(sc_db_open(path, s_migrations, N_MIG, &db2, err, sizeof(err)), 0);
    SC_REQUIRE(db2);
    SC_CHECK_INT(sc_db_query_int64(db2, &n, "SELECT fault_domain FROM vm WHERE name = ?", "s", "b"),
                 0);
    SC_CHECK_INT(n, 2);
    SC_CHECK_INT(sc_db_query_int64(db2, &n, "SELECT 1 FROM vm WHERE name = ?", "s", "zz"),
                 SC_E_NOT_FOUND);
    /* a duplicate primary key is a constraint error with SQLite's reason */
    SC_CHECK_INT(sc_db_run(db2, NULL, "INSERT INTO vm VALUES ('b', 3)", NULL), -EEXIST);
    SC_CHECK(strstr(sc_db_errmsg(db2), "UNIQUE") != NULL);
    sc_db_close(&db2);
    sc_db_close(&db);
}

SC_TEST(bind_helpers_check_their_arguments)
{
    char err[256] = "";
    sc_db_t *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t n = -1;

    SC_CHECK_INT(sc_db_open(":memory:", s_migrations, N_MIG, &db, err, sizeof(err)), 0);
    SC_REQUIRE(db);
    /* too few, too many, unknown type */
    SC_CHECK_INT(sc_db_prepare(db, &st, "SELECT ? + ?", "i", 1), -EINVAL);
    SC_CHECK(st == NULL);
    SC_CHECK_INT(sc_db_prepare(db, &st, "SELECT ?", "ii", 1, 2), -EINVAL);
    SC_CHECK_INT(sc_db_prepare(db, &st, "SELECT ?", "q", 1), -EINVAL);
    SC_CHECK(strstr(sc_db_errmsg(db), "unknown type") != NULL);
    SC_CHECK_INT(sc_db_prepare(db, &st, "SELEC nonsense", NULL), SC_E_DB);
    SC_CHECK(strstr(sc_db_errmsg(db), "syntax error") != NULL);
    SC_CHECK_INT(sc_db_exec(db, "DROP TABLE nosuch", err, sizeof(err)), SC_E_DB);
    SC_CHECK(strstr(err, "no such table") != NULL);
    /* every type binds */
    SC_CHECK_INT(sc_db_query_int64(db, &n, "SELECT ? + ? + length(?) + (? IS NULL) + length(?)",
                                   "ildsb", 1, (int64_t)10, 2.5, NULL, "xyz", 3),
                 0);
    SC_CHECK_INT(n, 1 + 10 + 3 + 1 + 3); /* 2.5 + ... = 17.5 truncated by int64 read */
    SC_CHECK_INT(sc_db_run(db, NULL, "INSERT INTO vm VALUES (?, ?)", "si", "v", 4), 0);
    SC_CHECK(sc_db_last_insert_rowid(db) > 0);
    sc_db_close(&db);
}

SC_TEST(not_a_database_is_an_error)
{
    const char *path = s_path("garbage.db");
    FILE *f = fopen(path, "w");
    char err[256] = "";
    sc_db_t *db = NULL;

    SC_REQUIRE(f);
    for (int i = 0; i < 200; i++)
        fputs("this is not an sqlite database\n", f);
    fclose(f);
    SC_CHECK_INT(sc_db_open(path, s_migrations, N_MIG, &db, err, sizeof(err)), SC_E_DB);
    SC_CHECK(db == NULL);
    SC_CHECK(strstr(err, "not a database") != NULL);
    SC_CHECK_INT(sc_db_open("/nonexistent-dir/x.db", s_migrations, N_MIG, &db, err, sizeof(err)),
                 SC_E_DB);
    SC_CHECK(strstr(err, "cannot open database /nonexistent-dir/x.db") != NULL);
    SC_CHECK(strstr(err, "/nonexistent-dir: No such file or directory") != NULL);
    /* The path is a directory; its directory is a regular file: said in words. */
    char in_file[1100];
    snprintf(in_file, sizeof(in_file), "%s/x.db", path); /* garbage.db is a regular file */
    const char *dir = s_path("a-directory.db");          /* (same static buffer as path) */
    rmdir(dir);
    SC_REQUIRE(mkdir(dir, 0700) == 0);
    SC_CHECK_INT(sc_db_open(dir, s_migrations, N_MIG, &db, err, sizeof(err)), SC_E_DB);
    SC_CHECK(strstr(err, "is a directory") != NULL);
    SC_CHECK_INT(sc_db_open(in_file, s_migrations, N_MIG, &db, err, sizeof(err)), SC_E_DB);
    SC_CHECK(strstr(err, "is not a directory") != NULL);
}

int main(void)
{
    SC_RUN(migrates_empty_file_and_pragmas_in_force);
    SC_RUN(reopen_applies_nothing_twice_and_upgrades);
    SC_RUN(newer_database_is_refused);
    SC_RUN(failing_migration_rolls_back);
    SC_RUN(transactions_commit_and_rollback);
    SC_RUN(bind_helpers_check_their_arguments);
    SC_RUN(not_a_database_is_an_error);
    return sc_test_done();
}
