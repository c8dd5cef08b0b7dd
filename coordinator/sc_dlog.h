/* sc_dlog: the coordinator's decision log.
 *
 * Every decision (member state, event seen / started / ended, prepare and recover ordered, hook
 * progress, approval intent and answer, alert) is an entry appended to this log, then applied
 * to the store (sc_store_apply) and to the coordinator's state (sc_cstate_apply), and only then
 * carried out. Only a leader appends. Each entry carries the term of the leader that wrote it
 * and a log index (1, 2, 3, ... without gaps), so the election issue can replicate it as is: a
 * follower appends the leader's entries with sc_dlog_append_entry() and applies them in index
 * order, ending with the same store and the same state.
 *
 * The log is a table ("dlog") of the store's SQLite database, append-only (triggers refuse
 * UPDATE of its content and DELETE of an applied entry); only the "applied" flag changes. Two
 * deletions are allowed: entries not applied yet that a newer leader replaces (Raft's
 * truncation), and a prefix that a snapshot includes (compaction, sc_dlog_compact, and a
 * leader's snapshot installed, sc_dlog_reset, which also takes the rest when it is not the
 * leader's). The log then holds base + 1 .. last, the base
 * (index and term of the last entry taken away) kept in the meta table. The table is created
 * by the store's migrations. */
#ifndef SC_DLOG_H
#define SC_DLOG_H

#include "sc_db.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest data / reason accepted in one entry. */
#define SC_DLOG_DATA_MAX (1u << 20)
#define SC_DLOG_REASON_MAX 1024
/* Most entries sc_dlog_read returns at once. */
#define SC_DLOG_READ_MAX 100000

typedef enum {
    SC_DLOG_TERM,            /* {"term":T}: a leader took term T */
    SC_DLOG_MEMBER,          /* {"name","fault_domain","update_domain","state"} */
    SC_DLOG_EVENT_SEEN,      /* {"event":{IMDS event},"seen_by":[names]}: new or changed */
    SC_DLOG_EVENT_STARTED,   /* {"event_id","how":"approved"|"not_before"|"host_failure"} */
    SC_DLOG_EVENT_ENDED,     /* {"event_id","how":"completed"|"cancelled"} */
    SC_DLOG_PREPARE_ORDERED, /* {"event_id","vms":[...]} drain ordered */
    SC_DLOG_RECOVER_ORDERED, /* {"event_id","vms":[...]} */
    SC_DLOG_HOOK_PROGRESS,   /* {"event_id","vm","phase","state","exit_status"} drain acked */
    SC_DLOG_APPROVAL_INTENT, /* {"event_ids":[...],"body","via":null|vm} before the POST */
    SC_DLOG_APPROVAL_ANSWER, /* {"intent":INDEX,"rc","http_status","message"} after it */
    SC_DLOG_ALERT,           /* {"alert","event_id"?,"member"?,"message","attempt"?,"key"?} */
    SC_DLOG_EVENT_CLOSED,    /* {"event_id"}: nothing owed any more, out of the live state */
    SC_DLOG_REHEARSAL,       /* {"rehearsal":N,"state":"started"|"stopped"|"finished",...}: a
                                rehearsal (sc_cstate.h) begins, is stopped, is over */
    SC_DLOG_KIND_MAX
} sc_dlog_kind_t;

typedef struct sc_dlog_entry {
    int64_t index;       /* position in the log, from 1 */
    int64_t term;        /* term of the leader that decided it */
    sc_dlog_kind_t kind; /* what was decided */
    char *data;          /* JSON object, the decision's content */
    char *reason;        /* why, for humans ("" allowed) */
    int64_t wall_ms;     /* when, wall clock, for humans */
    bool applied;        /* applied to the store */
} sc_dlog_entry_t;

/* "term", "member", "event_seen", ... ; "unknown" for out of range. */
const char *sc_dlog_kind_name(sc_dlog_kind_t kind);
/* Parses a name as written by sc_dlog_kind_name. 0 or -EINVAL. */
int sc_dlog_kind_parse(const char *name, sc_dlog_kind_t *ret_kind);

/* Appends a new entry at the next index. data must be a JSON object (checked), reason any
 * text; term must not be older than the newest entry's (SC_E_STALE_TERM). *ret_index (may be
 * NULL) gets its index. Runs in the caller's transaction if one is open. */
int sc_dlog_append(sc_db_t *db, int64_t term, sc_dlog_kind_t kind, const char *data,
                   const char *reason, int64_t wall_ms, int64_t *ret_index);
/* Appends an entry received from a leader: e->index must be exactly last + 1 (-EINVAL
 * otherwise; -EEXIST when that index is already there), e->term not older than the last. */
int sc_dlog_append_entry(sc_db_t *db, const sc_dlog_entry_t *e);
/* Marks an entry applied. SC_E_NOT_FOUND when absent. */
int sc_dlog_mark_applied(sc_db_t *db, int64_t index);
/* Index and term of the newest entry; the base's when the log is empty (both 0 for a log
 * never compacted). */
int sc_dlog_last(sc_db_t *db, int64_t *ret_index, int64_t *ret_term);
/* Index and term of the last entry compaction took away (both 0 when none): the log holds
 * base + 1 on. */
int sc_dlog_base(sc_db_t *db, int64_t *ret_index, int64_t *ret_term);
/* Compaction: the entries up to through (applied, and included in a snapshot the caller has
 * saved) go; through becomes the base. -EINVAL when through is not an entry of the log;
 * SC_E_DB when one of them is not applied. Two statements: the caller holds a transaction
 * (sc_store_compact does). */
int sc_dlog_compact(sc_db_t *db, int64_t through);
/* A leader's snapshot that includes the log up to index (of term) installed: (index, term)
 * becomes the base. When the log holds index with that term (Raft §7), the entries up to it go
 * and those after it stay as they are, not applied (the leader's commit index applies them);
 * otherwise every entry goes, and the next entry appended is index + 1. *ret_kept (may be
 * NULL): whether the entries after index stayed. -EINVAL when an entry after index is applied
 * (nothing changed). In the caller's transaction (sc_store_install's). */
int sc_dlog_reset(sc_db_t *db, int64_t index, int64_t term, bool *ret_kept);
/* Reads at most max entries with index >= from, in order (only_unapplied: those not applied
 * yet). *ret_entries is the caller's (sc_dlog_entries_free), NULL when *ret_n is 0. */
int sc_dlog_read(sc_db_t *db, int64_t from, size_t max, bool only_unapplied,
                 sc_dlog_entry_t **ret_entries, size_t *ret_n);
/* Frees n entries read by sc_dlog_read; takes NULL. */
void sc_dlog_entries_free(sc_dlog_entry_t *entries, size_t n);

#endif
