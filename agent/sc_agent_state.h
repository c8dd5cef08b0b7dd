/* sc_agent_state: the agent's durable state in SQLite (STATE_DIR/agent.db).
 *
 * Two things survive a restart: the newest term seen (so an order from a deposed leader is
 * refused after a restart too) and every hook run, keyed by (EventId lowercased, phase,
 * attempt), written before the hook starts and again when it ends. The attempt is the drain
 * attempt of the event on this VM (order.attempt, proto/README.md): the leader may roll a
 * failed prepare back and drain again with the next attempt. Schema 1 (before attempts) is
 * migrated to 2 with every run in attempt 1. A run still "started" at open time
 * belongs to an agent that died while its hook ran: sc_agent_state_open() turns it into
 * "interrupted" and tells the caller, who reports it and never re-runs it silently. */
#ifndef SC_AGENT_STATE_H
#define SC_AGENT_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sc_msg.h"

#define SC_AGENT_DETAIL_MAX 1024 /* bytes of a run's stored detail (output tail, reason) */
#define SC_AGENT_MAX_RUNS 1024   /* runs returned by sc_agent_state_list_runs */

typedef struct sc_agent_state sc_agent_state_t;

typedef struct sc_agent_run {
    char event[SC_EVENT_ID_MAX + 1];  /* EventId, lowercased */
    sc_msg_phase_t phase;             /* prepare / recover */
    int attempt;                      /* drain attempt, 1..SC_MSG_ATTEMPT_MAX */
    sc_msg_hook_state_t state;        /* started, done, failed, timed_out, interrupted */
    sc_msg_origin_t origin;           /* order / standalone */
    uint64_t term;                    /* term of the order (0 for standalone) */
    int exit_status;                  /* 0..255, -1 none */
    int64_t started_ms;               /* wall clock of the start (unix ms) */
    int64_t ended_ms;                 /* wall clock of the end, 0 while started */
    bool handed_over;                 /* a standalone run reported to a leader who took over */
    char detail[SC_AGENT_DETAIL_MAX]; /* output tail or reason */
} sc_agent_run_t;

/* Opens (creating) dir/agent.db (dir is created with mode 0700 if missing). Runs left
 * "started" are marked "interrupted"; their number goes to *ret_interrupted (may be NULL).
 * 0 or SC_E_DB / -errno with the reason in err. */
int sc_agent_state_open(const char *dir, sc_agent_state_t **ret_state, int *ret_interrupted,
                        char *err, size_t errlen);
/* Closes; takes NULL; nulls *state. */
void sc_agent_state_close(sc_agent_state_t **state);

/* The newest term seen (0 when none). Cached: no disk access. */
uint64_t sc_agent_state_max_term(const sc_agent_state_t *state);
/* Raises the newest term seen to term (durably) when it is larger; no-op otherwise. 0 or
 * SC_E_DB. */
int sc_agent_state_raise_term(sc_agent_state_t *state, uint64_t term);
/* The fence of the newest term, kept across a restart: the member that won it ("" not known)
 * and the newest commit index one of its orders or approve_via carried (0: none). Raising
 * the term clears both. 0 or SC_E_DB. */
int sc_agent_state_fence(sc_agent_state_t *state, char *ret_leader, size_t len,
                         uint64_t *ret_index);
int sc_agent_state_set_fence(sc_agent_state_t *state, const char *leader, uint64_t index);

/* The run of (event, phase, attempt); attempt 0: the newest attempt of that phase. 0 and
 * *ret_run, SC_E_NOT_FOUND, or SC_E_DB. */
int sc_agent_state_get_run(sc_agent_state_t *state, const char *event, sc_msg_phase_t phase,
                           int attempt, sc_agent_run_t *ret_run);
/* The newest attempt with a run of the event, whatever its phase: 0 and *ret_attempt,
 * SC_E_NOT_FOUND (no run at all), or SC_E_DB. */
int sc_agent_state_newest_attempt(sc_agent_state_t *state, const char *event, int *ret_attempt);
/* Records the start of a run ("started", before the hook is started). event_json (may be
 * NULL) is a one-event IMDS document kept for a later recover. -EEXIST when the run exists
 * (never run a phase of an attempt twice), -EINVAL for an attempt out of 1..SC_MSG_ATTEMPT_MAX,
 * else 0 or SC_E_DB. */
int sc_agent_state_run_start(sc_agent_state_t *state, const char *event, sc_msg_phase_t phase,
                             int attempt, sc_msg_origin_t origin, uint64_t term,
                             const char *event_json);
/* Records the end of a run: its final state, exit status and detail (cut to
 * SC_AGENT_DETAIL_MAX - 1 bytes). 0, SC_E_NOT_FOUND or SC_E_DB. */
int sc_agent_state_run_end(sc_agent_state_t *state, const char *event, sc_msg_phase_t phase,
                           int attempt, sc_msg_hook_state_t final_state, int exit_status,
                           const char *detail);
/* Forgets a run the agent's stop interrupted, so that it can run again (a recover: it puts
 * the VM back in service, run again rather than left undone). 0, SC_E_NOT_FOUND (no such run,
 * or it was not interrupted) or SC_E_DB. */
int sc_agent_state_run_forget_interrupted(sc_agent_state_t *state, const char *event,
                                          sc_msg_phase_t phase, int attempt);
/* Marks a standalone run as handed over to a leader. 0 or SC_E_DB. */
int sc_agent_state_set_handed_over(sc_agent_state_t *state, const char *event, sc_msg_phase_t phase,
                                   int attempt);
/* The one-event document stored with the run (attempt 0: the newest of that phase; caller's,
 * free); SC_E_NOT_FOUND if none. */
int sc_agent_state_event_json(sc_agent_state_t *state, const char *event, sc_msg_phase_t phase,
                              int attempt, char **ret_json);
/* The newest SC_AGENT_MAX_RUNS runs, oldest first. *ret_runs is the caller's (free; NULL when
 * n is 0). 0, -ENOMEM or SC_E_DB. */
int sc_agent_state_list_runs(sc_agent_state_t *state, sc_agent_run_t **ret_runs, size_t *ret_n);

#endif
