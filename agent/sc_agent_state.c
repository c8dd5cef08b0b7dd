/* sc_agent_state: the agent's SQLite state (see sc_agent_state.h). */
#include "sc_agent_state.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sc_db.h"
#include "sc_dirlock.h"
#include "sc_error.h"
#include "sc_time.h"

struct sc_agent_state {
    sc_dirlock_t *lock; /* agent.lock: one agent per state directory */
    sc_db_t *db;        /* agent.db */
    uint64_t max_term;  /* cached newest term seen */
};

static const char *const s_migrations[] = {
    /* 0 -> 1 */
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
    "INSERT INTO meta (key, value) VALUES ('max_term', 0);"
    "CREATE TABLE runs ("
    " event TEXT NOT NULL,"   /* EventId lowercased */
    " phase TEXT NOT NULL,"   /* prepare / recover */
    " state TEXT NOT NULL,"   /* started / done / failed / timed_out / interrupted */
    " origin TEXT NOT NULL,"  /* order / standalone */
    " term INTEGER NOT NULL," /* term of the order, 0 for standalone */
    " exit_status INTEGER NOT NULL DEFAULT -1,"
    " started_ms INTEGER NOT NULL," /* wall clock */
    " ended_ms INTEGER NOT NULL DEFAULT 0,"
    " handed_over INTEGER NOT NULL DEFAULT 0,"
    " detail TEXT NOT NULL DEFAULT '',"
    " event_json TEXT," /* one-event IMDS document, for the hook env */
    " PRIMARY KEY (event, phase));",
    /* 1 -> 2: runs keyed by attempt too (a retried drain runs its phases again) */
    "CREATE TABLE runs2 ("
    " event TEXT NOT NULL,"
    " phase TEXT NOT NULL,"
    " attempt INTEGER NOT NULL," /* drain attempt, 1.. */
    " state TEXT NOT NULL,"
    " origin TEXT NOT NULL,"
    " term INTEGER NOT NULL,"
    " exit_status INTEGER NOT NULL DEFAULT -1,"
    " started_ms INTEGER NOT NULL,"
    " ended_ms INTEGER NOT NULL DEFAULT 0,"
    " handed_over INTEGER NOT NULL DEFAULT 0,"
    " detail TEXT NOT NULL DEFAULT '',"
    " event_json TEXT,"
    " PRIMARY KEY (event, phase, attempt));"
    /* in rowid order: sc_agent_state_list_runs lists runs in the order they were started */
    "INSERT INTO runs2 (event, phase, attempt, state, origin, term, exit_status, started_ms,"
    " ended_ms, handed_over, detail, event_json)"
    " SELECT event, phase, 1, state, origin, term, exit_status, started_ms, ended_ms,"
    " handed_over, detail, event_json FROM runs ORDER BY rowid;"
    "DROP TABLE runs;"
    "ALTER TABLE runs2 RENAME TO runs;",
    /* 2 -> 3: the fence kept across a restart: max_term's leader and the newest commit index
     * an order or approve_via of it carried */
    "CREATE TABLE fence (id INTEGER PRIMARY KEY CHECK (id = 1), leader TEXT NOT NULL,"
    " idx INTEGER NOT NULL);"
    "INSERT INTO fence (id, leader, idx) VALUES (1, '', 0);",
};

static void s_lower(char *dst, const char *src)
{
    size_t i = 0;

    for (; src[i] && i < SC_EVENT_ID_MAX; i++)
        dst[i] = (char)tolower((unsigned char)src[i]);
    dst[i] = '\0';
}

int sc_agent_state_open(const char *dir, sc_agent_state_t **ret_state, int *ret_interrupted,
                        char *err, size_t errlen)
{
    sc_agent_state_t *self;
    char path[PATH_MAX];
    int64_t term = 0;
    int changes = 0;
    int rc;

    if (!dir || !ret_state)
        return -EINVAL;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        rc = -errno;
        snprintf(err, errlen, "state dir %s: %s", dir, strerror(-rc));
        return rc;
    }
    if ((size_t)snprintf(path, sizeof(path), "%s/agent.db", dir) >= sizeof(path)) {
        snprintf(err, errlen, "state dir: path too long");
        return -ENAMETOOLONG;
    }
    self = calloc(1, sizeof(*self));
    if (!self)
        return -ENOMEM;
    /* Before the database: a second agent would mark the first one's hooks interrupted. */
    if ((rc = sc_dirlock_acquire(dir, "agent.lock", &self->lock, err, errlen)) != 0)
        goto fail;
    rc = sc_db_open(path, s_migrations, sizeof(s_migrations) / sizeof(s_migrations[0]), &self->db,
                    err, errlen);
    if (rc)
        goto fail;
    /* A tiny page cache: the agent's database holds a few rows. */
    (void)sc_db_exec(self->db, "PRAGMA cache_size = -64;", NULL, 0);
    rc = sc_db_query_int64(self->db, &term, "SELECT value FROM meta WHERE key = 'max_term'", NULL);
    if (rc) {
        snprintf(err, errlen, "%s: reading max_term: %s", path, sc_db_errmsg(self->db));
        goto fail;
    }
    self->max_term = term > 0 ? (uint64_t)term : 0;
    rc = sc_db_run(self->db, &changes,
                   "UPDATE runs SET state = 'interrupted', ended_ms = ?, detail = "
                   "'the agent stopped while the hook ran' WHERE state = 'started'",
                   "l", sc_wall_ms());
    if (rc) {
        snprintf(err, errlen, "%s: %s", path, sc_db_errmsg(self->db));
        goto fail;
    }
    if (ret_interrupted)
        *ret_interrupted = changes;
    *ret_state = self;
    return 0;
fail:
    sc_agent_state_close(&self);
    return rc;
}

void sc_agent_state_close(sc_agent_state_t **state)
{
    if (!state || !*state)
        return;
    sc_db_close(&(*state)->db);
    sc_dirlock_release(&(*state)->lock);
    free(*state);
    *state = NULL;
}

uint64_t sc_agent_state_max_term(const sc_agent_state_t *self)
{
    return self ? self->max_term : 0;
}

int sc_agent_state_raise_term(sc_agent_state_t *self, uint64_t term)
{
    int rc;

    if (term <= self->max_term)
        return 0;
    if (term > INT64_MAX)
        return -EINVAL;
    if ((rc = sc_db_begin(self->db)) != 0)
        return rc;
    rc = sc_db_run(self->db, NULL, "UPDATE meta SET value = ? WHERE key = 'max_term'", "l",
                   (int64_t)term);
    if (rc == 0) /* a new term: its leader and fence are not known yet */
        rc = sc_db_run(self->db, NULL, "UPDATE fence SET leader = '', idx = 0", NULL);
    if (rc == 0 && (rc = sc_db_commit(self->db)) == 0) {
        self->max_term = term;
        return 0;
    }
    sc_db_rollback(self->db);
    return rc;
}

int sc_agent_state_fence(sc_agent_state_t *self, char *ret_leader, size_t len, uint64_t *ret_index)
{
    sqlite3_stmt *st = NULL;
    int rc;

    ret_leader[0] = '\0';
    *ret_index = 0;
    if ((rc = sc_db_prepare(self->db, &st, "SELECT leader, idx FROM fence WHERE id = 1", NULL)) !=
        0)
        return rc;
    if ((rc = sc_db_step(self->db, st)) == 1) {
        const unsigned char *t = sqlite3_column_text(st, 0);
        int64_t i = sqlite3_column_int64(st, 1);
        snprintf(ret_leader, len, "%s", t ? (const char *)t : "");
        *ret_index = i > 0 ? (uint64_t)i : 0;
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc < 0 ? rc : 0;
}

int sc_agent_state_set_fence(sc_agent_state_t *self, const char *leader, uint64_t index)
{
    if (!leader || index > INT64_MAX)
        return -EINVAL;
    return sc_db_run(self->db, NULL, "UPDATE fence SET leader = ?, idx = ?", "sl", leader,
                     (int64_t)index);
}

static int s_read_run(sqlite3_stmt *st, sc_agent_run_t *r)
{
    const char *t;

    memset(r, 0, sizeof(*r));
    t = (const char *)sqlite3_column_text(st, 0);
    snprintf(r->event, sizeof(r->event), "%s", t ? t : "");
    if (sc_msg_phase_parse((const char *)sqlite3_column_text(st, 1), &r->phase) ||
        sc_msg_hook_state_parse((const char *)sqlite3_column_text(st, 2), &r->state) ||
        sc_msg_origin_parse((const char *)sqlite3_column_text(st, 3), &r->origin))
        return SC_E_DB;
    r->term = (uint64_t)sqlite3_column_int64(st, 4);
    r->exit_status = sqlite3_column_int(st, 5);
    r->started_ms = sqlite3_column_int64(st, 6);
    r->ended_ms = sqlite3_column_int64(st, 7);
    r->handed_over = sqlite3_column_int(st, 8) != 0;
    t = (const char *)sqlite3_column_text(st, 9);
    snprintf(r->detail, sizeof(r->detail), "%s", t ? t : "");
    r->attempt = sqlite3_column_int(st, 10);
    return 0;
}

#define S_RUN_COLS                                                                                 \
    "event, phase, state, origin, term, exit_status, started_ms, ended_ms, handed_over, detail, "  \
    "attempt"

/* The WHERE clause of one run: attempt 0 picks the newest attempt of (event, phase). */
#define S_RUN_KEY                                                                                  \
    " WHERE event = ?1 AND phase = ?2 AND attempt = (CASE WHEN ?3 > 0 THEN ?3 ELSE (SELECT"        \
    " MAX(attempt) FROM runs WHERE event = ?1 AND phase = ?2) END)"

int sc_agent_state_get_run(sc_agent_state_t *self, const char *event, sc_msg_phase_t phase,
                           int attempt, sc_agent_run_t *ret_run)
{
    char ev[SC_EVENT_ID_MAX + 1];
    sqlite3_stmt *st = NULL;
    sc_agent_run_t r;
    int rc;

    s_lower(ev, event);
    rc = sc_db_prepare(self->db, &st, "SELECT " S_RUN_COLS " FROM runs" S_RUN_KEY, "ssi", ev,
                       sc_msg_phase_name(phase), attempt);
    if (rc)
        return rc;
    rc = sc_db_step(self->db, st);
    if (rc == 1)
        rc = s_read_run(st, &r);
    else if (rc == 0)
        rc = SC_E_NOT_FOUND;
    sqlite3_finalize(st);
    if (rc == 0)
        *ret_run = r;
    return rc;
}

int sc_agent_state_newest_attempt(sc_agent_state_t *self, const char *event, int *ret_attempt)
{
    char ev[SC_EVENT_ID_MAX + 1];
    int64_t a = 0;
    int rc;

    s_lower(ev, event);
    rc = sc_db_query_int64(self->db, &a, "SELECT MAX(attempt) FROM runs WHERE event = ?", "s", ev);
    if (rc == 0 && a <= 0)
        rc = SC_E_NOT_FOUND; /* MAX() of no row is NULL, read as 0 */
    if (rc == 0)
        *ret_attempt = (int)a;
    return rc;
}

int sc_agent_state_run_start(sc_agent_state_t *self, const char *event, sc_msg_phase_t phase,
                             int attempt, sc_msg_origin_t origin, uint64_t term,
                             const char *event_json)
{
    char ev[SC_EVENT_ID_MAX + 1];

    s_lower(ev, event);
    if (term > INT64_MAX || attempt < 1 || attempt > SC_MSG_ATTEMPT_MAX)
        return -EINVAL;
    return sc_db_run(self->db, NULL,
                     "INSERT INTO runs (event, phase, attempt, state, origin, term, started_ms,"
                     " event_json) VALUES (?, ?, ?, 'started', ?, ?, ?, ?)",
                     "ssis"
                     "lls",
                     ev, sc_msg_phase_name(phase), attempt, sc_msg_origin_name(origin),
                     (int64_t)term, sc_wall_ms(), event_json);
}

int sc_agent_state_run_forget_interrupted(sc_agent_state_t *self, const char *event,
                                          sc_msg_phase_t phase, int attempt)
{
    char ev[SC_EVENT_ID_MAX + 1];
    int changes = 0, rc;

    s_lower(ev, event);
    rc = sc_db_run(self->db, &changes,
                   "DELETE FROM runs WHERE event = ? AND phase = ? AND attempt = ?"
                   " AND state = 'interrupted'",
                   "ssi", ev, sc_msg_phase_name(phase), attempt);
    return rc < 0 ? rc : changes ? 0 : SC_E_NOT_FOUND;
}

int sc_agent_state_run_end(sc_agent_state_t *self, const char *event, sc_msg_phase_t phase,
                           int attempt, sc_msg_hook_state_t final_state, int exit_status,
                           const char *detail)
{
    char ev[SC_EVENT_ID_MAX + 1];
    char d[SC_AGENT_DETAIL_MAX];
    int changes = 0;
    int rc;

    s_lower(ev, event);
    snprintf(d, sizeof(d), "%s", detail ? detail : "");
    rc = sc_db_run(self->db, &changes,
                   "UPDATE runs SET state = ?, exit_status = ?, ended_ms = ?, detail = ?"
                   " WHERE event = ? AND phase = ? AND attempt = ?",
                   "sil"
                   "sssi",
                   sc_msg_hook_state_name(final_state), exit_status, sc_wall_ms(), d, ev,
                   sc_msg_phase_name(phase), attempt);
    if (rc == 0 && changes == 0)
        rc = SC_E_NOT_FOUND;
    return rc;
}

int sc_agent_state_set_handed_over(sc_agent_state_t *self, const char *event, sc_msg_phase_t phase,
                                   int attempt)
{
    char ev[SC_EVENT_ID_MAX + 1];

    s_lower(ev, event);
    return sc_db_run(
        self->db, NULL,
        "UPDATE runs SET handed_over = 1 WHERE event = ? AND phase = ? AND attempt = ?", "ssi", ev,
        sc_msg_phase_name(phase), attempt);
}

int sc_agent_state_event_json(sc_agent_state_t *self, const char *event, sc_msg_phase_t phase,
                              int attempt, char **ret_json)
{
    char ev[SC_EVENT_ID_MAX + 1];
    sqlite3_stmt *st = NULL;
    char *json = NULL;
    int rc;

    s_lower(ev, event);
    rc = sc_db_prepare(self->db, &st, "SELECT event_json FROM runs" S_RUN_KEY, "ssi", ev,
                       sc_msg_phase_name(phase), attempt);
    if (rc)
        return rc;
    rc = sc_db_step(self->db, st);
    if (rc == 1) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        if (!t)
            rc = SC_E_NOT_FOUND;
        else if (!(json = strdup(t)))
            rc = -ENOMEM;
        else
            rc = 0;
    } else if (rc == 0) {
        rc = SC_E_NOT_FOUND;
    }
    sqlite3_finalize(st);
    if (rc == 0)
        *ret_json = json;
    return rc;
}

int sc_agent_state_list_runs(sc_agent_state_t *self, sc_agent_run_t **ret_runs, size_t *ret_n)
{
    sqlite3_stmt *st = NULL;
    sc_agent_run_t *v = NULL;
    size_t n = 0;
    int rc;

    rc = sc_db_prepare(self->db, &st,
                       "SELECT * FROM (SELECT " S_RUN_COLS ", rowid AS r FROM runs ORDER BY rowid"
                       " DESC LIMIT ?) ORDER BY r",
                       "i", SC_AGENT_MAX_RUNS);
    if (rc)
        return rc;
    while ((rc = sc_db_step(self->db, st)) == 1) {
        sc_agent_run_t *nv = realloc(v, (n + 1) * sizeof(*v));
        if (!nv) {
            rc = -ENOMEM;
            break;
        }
        v = nv;
        if ((rc = s_read_run(st, &v[n])) != 0)
            break;
        n++;
    }
    sqlite3_finalize(st);
    if (rc != 0) {
        free(v);
        return rc;
    }
    *ret_runs = v;
    *ret_n = n;
    return 0;
}
