/* sc_store: the coordinator's SQLite state.
 *
 * One database file (<state-dir>/coordinator.db) in WAL mode with synchronous=FULL, its schema
 * versioned by PRAGMA user_version with numbered migrations (sc_db). Tables:
 *   meta       key/value: the current term; paused (1 after an operator's "paused" alert, 0
 *              after "resumed"); Raft's hard state; the agents' boot ids (this coordinator's
 *              own: sc_store_save_boots)
 *   members    name, endpoint, fault and update domain, state, the agent boot id it was gone
 *              with
 *   events     every field of every event any agent reported, first seen, approved at/by,
 *              started at and how, ended at and how (kept: the registry's tombstones after a
 *              restart), when its content was observed (observed_ms, the merge rule)
 *   drains     per event x VM x phase (prepare, recover): ordered, started, finished, result
 *   approvals  every approval: request body, EventIds, via whom, intent time, answer
 *   dlog       the decision log (sc_dlog.h), append-only, with the reason of each decision
 *
 * Every table but meta/dlog is a projection of the decision log: sc_store_decide() appends a
 * decision and applies it in one transaction, so what the store says always matches the log
 * and a restart resumes from it. The store does not log. */
#ifndef SC_STORE_H
#define SC_STORE_H

#include "sc_db.h"
#include "sc_dlog.h"
#include "sc_plan.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The schema version this code writes (number of migrations). */
#define SC_STORE_SCHEMA_VERSION 9

/* The closed events whose rows (events, drains) the tables keep, newest first by the time of
 * their EVENT_CLOSED entry, and the answered approvals kept, newest first. Older rows go when
 * an event closes, so the tables and the snapshots a follower gets stop growing with history.
 * Every member prunes the same rows at the same entry: the same number on every member. */
#define SC_STORE_KEEP_CLOSED 500

typedef struct sc_store sc_store_t;

/* Opens (creating and migrating) the store at path (":memory:" works). On error returns
 * SC_E_DB / -ENOMEM / -EINVAL with a reason in err. *ret_store is the caller's. */
int sc_store_open(const char *path, sc_store_t **ret_store, char *err, size_t errlen);
/* Opens an existing store read-only, for readers beside the daemon (schedcoordctl history
 * works while the daemon is down or running): no migration, only reads work. On error returns
 * SC_E_DB / -ENOMEM / -EINVAL with SQLite's reason alone in err (the caller names the file).
 * *ret_store is the caller's (sc_store_close). */
int sc_store_open_readonly(const char *path, sc_store_t **ret_store, char *err, size_t errlen);
/* Closes and nulls; takes NULL. */
void sc_store_close(sc_store_t **store);
/* Tests only: keep n closed events' rows instead of SC_STORE_KEEP_CLOSED (n >= 1). */
void sc_store_set_keep_closed(sc_store_t *store, int64_t n);
/* The reason of the store's last error ("" if none). Borrowed, valid until the next call. */
const char *sc_store_errmsg(sc_store_t *store);

/* A transaction of the caller's around several decisions (one fsync for a batch):
 * sc_store_decide joins it instead of opening its own. begin takes the write lock (waiting up
 * to the busy timeout); rollback is harmless when none is open. 0 or an SC_E_* code (reason in
 * sc_store_errmsg). */
int sc_store_begin(sc_store_t *store);
int sc_store_commit(sc_store_t *store);
int sc_store_rollback(sc_store_t *store);
/* Whether a transaction is open. */
bool sc_store_in_transaction(sc_store_t *store);

/* The persisted term (0 when none yet). */
int sc_store_term(sc_store_t *store, int64_t *ret_term);
/* Whether the last pause/resume alert in the log was a pause (false when none). */
int sc_store_paused(sc_store_t *store, bool *ret_paused);
/* Persists and returns term + 1 (a leader starting a new term), writing a TERM decision. */
int sc_store_next_term(sc_store_t *store, int64_t wall_ms, int64_t *ret_term);
/* As sc_store_next_term, past a term seen elsewhere: max(stored term, seen) + 1 (Raft's rule: a
 * higher term one is told about is adopted before leading — e.g. an agent's, after this store
 * was lost). reason goes into the TERM decision. */
int sc_store_term_after(sc_store_t *store, int64_t seen, int64_t wall_ms, const char *reason,
                        int64_t *ret_term);

/* Appends a decision to the log and applies it to the tables, in one transaction (or in the
 * caller's, if one is open). *ret_index (may be NULL) gets the entry's index. */
int sc_store_decide(sc_store_t *store, int64_t term, sc_dlog_kind_t kind, const char *data,
                    const char *reason, int64_t wall_ms, int64_t *ret_index);
/* As sc_store_decide, with data a JSON object (borrowed): logged as its text and applied from
 * the object itself, not parsed again. */
int sc_store_decide_json(sc_store_t *store, int64_t term, sc_dlog_kind_t kind, json_object *data,
                         const char *reason, int64_t wall_ms, int64_t *ret_index);
/* Appends an entry received from a leader (e->index the next one, e->term not older: see
 * sc_dlog_append_entry) and applies it to the tables and the observer (sc_store_on_decide), in
 * one transaction (or the caller's). A follower's way to take its leader's log. */
int sc_store_append_entry(sc_store_t *store, const sc_dlog_entry_t *e);
/* Applies one entry to the tables (not to the log) and marks it applied. -EINVAL for data of
 * the wrong shape. */
int sc_store_apply(sc_store_t *store, const sc_dlog_entry_t *e);
/* Applies, in order, every entry of the log not applied yet (after a crash or replication). */
int sc_store_apply_pending(sc_store_t *store);

/* A VM's drain state from its drains rows of one event, folded through the coordinator's drain
 * table (sc_cstate_drain_next): prepare ordered, started, its result; then recover ordered,
 * started, its result. listed: the event has not ended (a recover done then is a rollback). */
sc_drain_state_t sc_store_drain_state(const char *prepare_result, bool prepare_ordered,
                                      bool prepare_started, const char *recover_result,
                                      bool recover_ordered, bool recover_started, bool listed);

/* Told of every entry decided (sc_store_decide*), inside its transaction, after the tables:
 * data is the entry's data parsed (borrowed). A negative return fails the decision (rolled back
 * when it had its own transaction). The coordinator applies each entry to its state so. */
typedef int (*sc_store_decide_fn)(void *ud, const sc_dlog_entry_t *e, json_object *data);
void sc_store_on_decide(sc_store_t *store, sc_store_decide_fn fn, void *ud);

/* A leader's proposal (more than one voter): the decision appended to the log only, in the
 * caller's transaction (or its own), not applied — the replication applies it once a majority
 * stored it (sc_store_apply_through), or a newer leader replaces it (sc_store_log_entries).
 * *ret_index (may be NULL) gets its index. */
int sc_store_propose_json(sc_store_t *store, int64_t term, sc_dlog_kind_t kind, json_object *data,
                          const char *reason, int64_t wall_ms, int64_t *ret_index);
/* A follower's way to take its leader's entries (Raft's AppendEntries after the prev check):
 * each of v[n] (consecutive indexes) already held with the same term is kept; one whose index
 * holds another term replaces it and everything after it (only entries not applied may go:
 * an applied one makes it fail, SC_E_DB); new ones are appended, not applied. In one
 * transaction (or the caller's). *ret_truncated (may be NULL): the first index replaced, 0
 * none. */
int sc_store_log_entries(sc_store_t *store, const sc_dlog_entry_t *v, size_t n,
                         int64_t *ret_truncated);
/* Applies, in order, the entries not applied yet from index from (the first not applied, which
 * the caller knows) up to index (the commit index): to the tables, then to the observer
 * (sc_store_on_decide), all in one transaction (or the caller's). */
int sc_store_apply_through(sc_store_t *store, int64_t from, int64_t index);
/* The highest index applied (0: none). */
int sc_store_applied_index(sc_store_t *store, int64_t *ret_index);

/* Raft's persistent state (meta current_term and voted_for, "" when none): written before any
 * reply by the election (which owns them); read at start. 0 or an SC_E_* code. */
int sc_store_hard_state(sc_store_t *store, int64_t *ret_current_term, char *ret_voted_for,
                        size_t len);
int sc_store_set_hard_state(sc_store_t *store, int64_t current_term, const char *voted_for);

/* The boot id each member's agent last reported, with the DocumentIncarnation and observed_at_ms
 * of a document of that boot: this coordinator's own (meta, key "agent_boot:NAME"; not in a
 * snapshot), so that after its restart a document from the same agent is not taken for a
 * rebooted VM's fresh view (sc_registry_seed_member). Written without an fsync: lost, the next
 * document is only taken as fresh. 0 or an SC_E_* code. */
typedef struct sc_store_boot {
    const char *member;  /* its name */
    const char *boot_id; /* its agent's boot id */
    int64_t incarnation; /* DocumentIncarnation of a document of that boot */
    int64_t observed_ms; /* when the agent read it (its wall clock) */
} sc_store_boot_t;
int sc_store_save_boots(sc_store_t *store, const sc_store_boot_t *v, size_t n);
/* Calls fn for each boot stored (its strings valid during the call); fn's negative value stops
 * the walk and is returned. 0 or an SC_E_* code. */
int sc_store_boots_each(sc_store_t *store, int (*fn)(void *arg, const sc_store_boot_t *b),
                        void *arg);

/* The evictions (Preempt/Terminate) this coordinator saw start: its own (meta, key
 * "eviction:ID", the event as IMDS JSON and when it was seen to start; not in a snapshot).
 * The replicated state has one only once a leader decided it; a follower restarted before
 * that would forget the member is gone (nemesis seeds 62, 99), so it restores them into its
 * registry. Written without an fsync. 0 or an SC_E_* code. */
int sc_store_eviction_note(sc_store_t *store, const char *id, const char *event_json,
                           int64_t started_wall_ms);
/* Calls fn for each eviction noted (strings valid during the call); fn's negative value stops
 * the walk and is returned. */
int sc_store_evictions_each(sc_store_t *store,
                            int (*fn)(void *arg, const char *id, const char *event_json,
                                      int64_t started_wall_ms),
                            void *arg);
/* Forgets the eviction id (decided by then, or too old). 0 or an SC_E_* code. */
int sc_store_eviction_forget(sc_store_t *store, const char *id);

/* Saves a snapshot of the coordinator's state (state: sc_cstate_to_json's text) that includes
 * the log up to index (of term); the two newest are kept. 0 or an SC_E_* code. */
int sc_store_save_snapshot(sc_store_t *store, int64_t index, int64_t term, int64_t wall_ms,
                           const char *state);
/* The newest snapshot: *ret_index 0 and *ret_state NULL when none; *ret_state the caller's. */
int sc_store_last_snapshot(sc_store_t *store, int64_t *ret_index, char **ret_state);
/* At most max log entries from index from on, in order (sc_dlog_read); the caller frees them
 * with sc_dlog_entries_free. */
int sc_store_entries(sc_store_t *store, int64_t from, size_t max, sc_dlog_entry_t **ret_entries,
                     size_t *ret_n);
/* Index and term of the newest entry (0, 0 when the log is empty). */
int sc_store_last_entry(sc_store_t *store, int64_t *ret_index, int64_t *ret_term);

/* ---- compaction and snapshot transfer (sc_store_snap.c) ---------------------------------- */

/* Index and term of the last entry compaction took away, or of the leader's snapshot last
 * installed (both 0 when none): the log holds base + 1 on. */
int sc_store_log_base(sc_store_t *store, int64_t *ret_index, int64_t *ret_term);
/* Compaction: the applied entries up to through go, through capped at the oldest snapshot
 * kept (a restart may fall back on it; none: nothing goes). 0, -EINVAL (through not in the
 * log) or SC_E_DB (one not applied). */
int sc_store_compact(sc_store_t *store, int64_t through);
/* The replicated tables (members, events, drains, approvals, and meta's term and paused) as
 * {"TABLE":{"columns":[names],"rows":[[values]]}}: what a follower installs with the state.
 * Read in one transaction with the applied index (*ret_index): call it where nothing is
 * applied meanwhile. *ret_json is the caller's. 0 or an SC_E_* code. */
int sc_store_tables_json(sc_store_t *store, json_object **ret_json);
/* Installs a leader's snapshot that includes the log up to index (of term): in one
 * transaction, (index, term) the log's base (sc_dlog_reset: the entries after index stay when
 * the log holds index with that term, not applied; else the log is emptied), the replicated
 * tables replaced by those of tables (sc_store_tables_json's shape, checked: a table or column
 * this store does not have is refused), state saved as the snapshot at index. *ret_kept (may
 * be NULL): whether the entries after index stayed. 0, -EINVAL (the shape, or entries after
 * index applied; reason in err) or SC_E_DB (reason in err). */
int sc_store_install(sc_store_t *store, int64_t index, int64_t term, int64_t wall_ms,
                     json_object *tables, const char *state, bool *ret_kept, char *err,
                     size_t errlen);

/* A snapshot of the tables as JSON:
 *   {"term":T,
 *    "members":[{"name","endpoint","fault_domain","update_domain","state"}],
 *    "events":[{"EventId","type","status","source","resources":[...],"not_before",
 *               "duration_s","description","seen_by":[...],"first_seen_ms","approved_ms",
 *               "approved_by","started_ms","started_how","ended_ms","ended_how",
 *               "observed_ms","event":{IMDS shape},
 *               "drains":{"vm":"prepared",...},
 *               "drain_detail":{"vm":{"prepare":{"ordered_ms","started_ms","finished_ms",
 *                                                 "result","exit_status"},"recover":{...}}}}],
 *    "approvals":[{"id","event_ids":[...],"body","via","by","intent_ms","answered_ms","rc",
 *                  "http_status","answer"}]}
 * include_ended false leaves out events that ended more than keep_ended_ms ago.
 * *ret_json is the caller's (json_object_put). */
int sc_store_snapshot(sc_store_t *store, bool include_ended, int64_t now_ms, int64_t keep_ended_ms,
                      json_object **ret_json);

/* The decision log as a JSON array of {"index","term","kind","data":{...},"reason",
 * "wall_ms"}, the last max entries. Works on a read-only store (sc_store_open_readonly).
 * *ret_json is the caller's. 0, -EINVAL, or SC_E_DB with SQLite's reason in err (may be
 * NULL). */
int sc_store_history_json(sc_store_t *store, size_t max, json_object **ret_json, char *err,
                          size_t errlen);

/* The hook runs the forecasts learn from (sc_forecast.h), and those under way: a JSON array
 * of {"vm","phase","event_id","started_ms","finished_ms"} — per VM and phase its newest `per`
 * runs that ended done (real events and rehearsals alike), and every run started at or after
 * running_since_ms that has not finished (finished_ms null). *ret_json is the caller's. 0 or an
 * SC_E_* code. */
int sc_store_hook_runs(sc_store_t *store, size_t per, int64_t running_since_ms,
                       json_object **ret_json);
/* The same runs handed to fn one by one (finished_ms -1: under way; the strings valid during
 * the call), no JSON built; per 0: only those under way (the others' query sorts every run:
 * 18 ms for 4,000). 0, fn's negative return (which stops), or an SC_E_* code. */
typedef int (*sc_store_run_fn)(void *ud, const char *vm, const char *phase, const char *event_id,
                               int64_t started_ms, int64_t finished_ms);
int sc_store_hook_runs_each(sc_store_t *store, size_t per, int64_t running_since_ms,
                            sc_store_run_fn fn, void *ud);
/* The drains rows of the events ids[0 .. n - 1] (a rehearsal's report): a JSON array of
 * {"event_id","vm","phase","ordered_ms","started_ms","finished_ms","result","exit_status",
 * "attempt","detail"}, detail the output tail of the newest hook_progress entry of that row
 * from log index `from` on (null when none). *ret_json is the caller's. 0 or an SC_E_* code. */
int sc_store_drains_of(sc_store_t *store, const char *const *ids, size_t n, int64_t from,
                       json_object **ret_json);

/* The approval intents without an answer, oldest first: a JSON array of {"id", "event_ids":
 * [...], "via"} (via null when the POST was ours). *ret_json is the caller's. 0 or an SC_E_*
 * code. */
int sc_store_approvals_unanswered(sc_store_t *store, json_object **ret_json);

#endif
