/* sc_elect: the coordinators' election, Raft's rules as a pure state machine.
 *
 * No I/O, no clock reads, no logging: the caller gives the time (its CLOCK_MONOTONIC in ms,
 * never going back) and the messages it received; the module answers with a list of outputs
 * the caller carries out. Unit tests drive it with a simulated network (tests/unit/
 * test_elect.c). Not wired into the daemon yet (docs/design.md, "Election (module)").
 *
 * Rules (etcd-io/raft's raft.go with PreVote and CheckQuorum on, hashicorp/raft's timings,
 * Redis Sentinel's TILT):
 *  1. Terms and votes. A vote is given at most once per term (voted_for, persisted before the
 *     answer leaves) and only to a candidate whose log is at least as up to date (last term,
 *     then last index). A message of a newer term makes any member a follower of that term,
 *     except a pre-vote request and a granted pre-vote answer, which never change terms.
 *  2. Timeouts. A voter that hears no leader for its election timeout, drawn in [T, 2T) from
 *     the caller's seed (T = election_ms), campaigns. A non-voter never campaigns. The only
 *     voter of a set (a setting of 1 voter) campaigns at once when it starts.
 *  3. PreVote. A campaign starts as a pre-candidate that asks the voters, without bumping its
 *     term, whether they would vote for it in term + 1; only a majority of yes makes it a
 *     candidate. So a member back from a partition or a reboot does not depose a healthy
 *     leader: nobody grants it, and its term never grew.
 *  4. CheckQuorum. A leader that has not heard from a majority of the voters (itself
 *     included) within T steps down. A voter that heard a live leader less than T ago
 *     refuses votes and pre-votes for a newer term — unless the request is a leadership
 *     transfer's. Unlike etcd, a voter that started less than T ago refuses them too: it may
 *     have acknowledged a leader's round just before it restarted, and rule 5 counts on it.
 *  5. Acting. A leader may act (order, approve) only while a majority of the voters (itself
 *     included) acknowledged a heartbeat round it sent less than lease_ms ago, once an entry
 *     of its own term is committed, while no transfer is under way, and never after a stall
 *     until a round sent after the stall was acknowledged by a majority (TILT). lease_ms <
 *     T - stall_ms, so a voter that acknowledged a round still refuses other candidates
 *     when the lease ends, even if the leader's clock missed a stall of stall_ms.
 *  6. Transfer. sc_elect_transfer() makes the leader stop acting and, once the target's log
 *     matches its own, send it TIMEOUT_NOW; the target campaigns at once (no pre-vote) with
 *     a transfer-flagged request that voters grant despite a live leader. A leader that sent
 *     TIMEOUT_NOW never acts again in that term, and steps down when no new term came within
 *     T (it cannot know whether the target campaigned) — sending TIMEOUT_NOW then to a second
 *     choice (sc_elect_transfer_next) if it has one that is caught up and answering: it has
 *     stopped acting for good, so a second campaign of the next term changes nothing for
 *     rule 5, and a new leader comes a timeout sooner.
 *  7. Held. The caller may hold a member back from leading (sc_elect_hold: a voter of its list
 *     runs with other members, docs/design.md): it steps down, campaigns and votes no more,
 *     and only asks the voters again at each timeout, so that the caller hears them, until
 *     let go.
 *
 * Outputs, and what the caller does with them, IN ORDER (sc_elect_outputs_t):
 *  - PERSIST {term, voted_for}: write both durably (sc_store_set_hard_state,
 *    synchronous=FULL) before carrying out anything after it. If the write fails, carry out
 *    none of the outputs that follow and restart the module from what the store holds
 *    (sc_elect_destroy + sc_elect_new): nothing that depended on the lost write was sent.
 *  - SEND msg: send it to msg.to (an APPEND is turned into the wire append with the entries
 *    the replication owes that member; see "Appends" below).
 *  - ROLE: the state, term or followed leader changed: log text (one line: old -> new, term,
 *    leader, reason). Becoming LEADER: append the leader's first entry of its term (the
 *    decision log's "term" entry) at last_index + 1 before sending anything else.
 *  - MAY_ACT: whether the leader may act changed (text says why; a change that
 *    sc_elect_set_log made, a commit, is said at the next call). Informational: before every
 *    order or POST, ask sc_elect_may_act(e, now) itself (time passes between calls).
 *  - NOTICE: one line worth logging (a transfer started or abandoned, a stall, leadership
 *    confirmed after a stall, a message ignored).
 *
 * Appends. The module sees the election side of the log: sc_elect_set_log() tells it the
 * log's end and commit index whenever they change. An APPEND received is given to
 * sc_elect_step() first; when outputs.append_accepted is set (it came from this term's
 * leader) the caller's replication applies its entries and answers it with
 * sc_elect_append_answer(); otherwise the caller drops it (the module answered a stale
 * leader itself). Every APPEND_ANSWER received goes to sc_elect_step() too (the leader's
 * CheckQuorum, lease and transfer), then to the replication. The module's heartbeats go to
 * the voters; non-voting followers are fed by the replication's appends.
 *
 * The caller also: calls sc_elect_tick() by sc_elect_next_ms() (for a leader, at most
 * heartbeat_ms away); calls sc_elect_stall() first thing in a loop iteration that found the
 * time since the previous one over stall_ms on either clock (monotonic or wall), or the two
 * clocks' advances apart by more, before it feeds any message (a leader's loop turns at
 * least every heartbeat_ms, so a longer gap is a stall); identifies members by their index
 * in the members list.
 *
 * Voters: sc_voters_choose() picks them from the members list and fault domains, the same on
 * every member given the same list, with a digest; a vote request carries the candidate's
 * digest, and a voter whose digest differs refuses it and says so. */
#ifndef SC_ELECT_H
#define SC_ELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sc_voters.h"

#define SC_ELECT_NONE ((size_t)-1) /* "no member" (voted_for, leader, peer) */
#define SC_ELECT_REASON_MAX 159    /* bytes of a message's reason */
#define SC_ELECT_TEXT_MAX 255      /* bytes of an output's text */
#define SC_ELECT_OUT_MAX 32        /* outputs of one call, at most */

/* Defaults (see sc_elect_config_default for why). */
#define SC_ELECT_ELECTION_MS 1000
#define SC_ELECT_HEARTBEAT_MS 100
#define SC_ELECT_STALL_MS 300

/* ---- voters -------------------------------------------------------------------------- */

/* ---- the state machine --------------------------------------------------------------- */

typedef enum {
    SC_ELECT_FOLLOWER,      /* a voter following the leader of its term (or none yet) */
    SC_ELECT_PRE_CANDIDATE, /* a voter asking for pre-votes for term + 1, term unchanged */
    SC_ELECT_CANDIDATE,     /* a voter that bumped its term, voted for itself, asks votes */
    SC_ELECT_LEADER,        /* won its term's vote */
    SC_ELECT_NON_VOTER,     /* not in the voter list: follows, never campaigns nor votes */
    SC_ELECT_STATE_MAX
} sc_elect_state_t;

/* What moves the state (the transition table's columns). */
typedef enum {
    SC_ELECT_EV_TIMEOUT,         /* the election timer fired (a voter that is not leader) */
    SC_ELECT_EV_PRE_VOTE_WON,    /* a majority would vote for us in term + 1 */
    SC_ELECT_EV_VOTE_WON,        /* a majority voted for us in our term */
    SC_ELECT_EV_REJECTED,        /* a majority refused our (pre-)votes */
    SC_ELECT_EV_NEWER_TERM,      /* a message of a newer term (term and vote already reset) */
    SC_ELECT_EV_LEADER_HEARD,    /* an append from the leader of our term */
    SC_ELECT_EV_QUORUM_LOST,     /* leader: no majority heard within T (CheckQuorum) */
    SC_ELECT_EV_TIMEOUT_NOW,     /* the leader hands us the lead: campaign at once */
    SC_ELECT_EV_TRANSFER_FAILED, /* leader: TIMEOUT_NOW sent, no new term within T */
    SC_ELECT_EV_HELD,            /* the caller holds it back from leading (sc_elect_hold) */
    SC_ELECT_EV_MAX
} sc_elect_event_t;

typedef enum {
    SC_ELECT_MSG_PRE_VOTE,        /* pre-candidate -> voters: would you vote for me in term? */
    SC_ELECT_MSG_PRE_VOTE_ANSWER, /* voter -> pre-candidate */
    SC_ELECT_MSG_VOTE,            /* candidate -> voters: vote for me in term */
    SC_ELECT_MSG_VOTE_ANSWER,     /* voter -> candidate */
    SC_ELECT_MSG_APPEND,          /* leader -> member: entries or a heartbeat */
    SC_ELECT_MSG_APPEND_ANSWER,   /* member -> leader */
    SC_ELECT_MSG_TIMEOUT_NOW,     /* leader -> transfer target: campaign now */
    SC_ELECT_MSG_MAX
} sc_elect_msg_type_t;

/* One election message (the wire mapping is the caller's). Answers carry the term they
 * concern when granted (a pre-vote's future term), the answerer's own term when refused. */
typedef struct sc_elect_msg {
    sc_elect_msg_type_t type;              /* which fields matter */
    size_t from;                           /* sender's index in the members list */
    size_t to;                             /* receiver's index */
    int64_t term;                          /* see above; a request's term, a leader's term */
    int64_t last_index;                    /* (PRE_)VOTE: candidate's log end; APPEND: leader's */
    int64_t last_term;                     /* term of that last entry */
    int64_t commit;                        /* APPEND: the leader's commit index */
    int64_t round;                         /* APPEND: the leader's round (its send time, strictly
                                              increasing); APPEND_ANSWER: echoed */
    int64_t match;                         /* APPEND_ANSWER: last index matching the leader's */
    bool ok;                               /* answers: granted / appended */
    bool transfer;                         /* VOTE: a leadership transfer's campaign */
    char digest[SC_VOTERS_DIGEST_LEN + 1]; /* (PRE_)VOTE: the candidate's voters digest */
    char reason[SC_ELECT_REASON_MAX + 1];  /* answers: why (a refusal's reason), or "" */
} sc_elect_msg_t;

/* Raft's persistent state. */
typedef struct sc_elect_hard_state {
    int64_t term;     /* current_term, >= 0 */
    size_t voted_for; /* member voted for in term, SC_ELECT_NONE */
} sc_elect_hard_state_t;

typedef enum {
    SC_ELECT_OUT_PERSIST, /* write hard durably before the outputs after it */
    SC_ELECT_OUT_SEND,    /* send msg */
    SC_ELECT_OUT_ROLE,    /* log text: state, term or leader changed */
    SC_ELECT_OUT_MAY_ACT, /* log text: may_act changed */
    SC_ELECT_OUT_NOTICE,  /* log text */
    SC_ELECT_OUT_KIND_MAX
} sc_elect_out_kind_t;

/* One output. Fields not of its kind are zero. */
typedef struct sc_elect_output {
    sc_elect_out_kind_t kind;         /* what to do */
    sc_elect_hard_state_t hard;       /* PERSIST: what to write */
    sc_elect_msg_t msg;               /* SEND: what to send, to msg.to */
    sc_elect_state_t old_state;       /* ROLE: before */
    sc_elect_state_t new_state;       /* ROLE: after */
    int64_t term;                     /* ROLE: the term after */
    size_t leader;                    /* ROLE: the leader followed after, SC_ELECT_NONE */
    size_t peer;                      /* ROLE, NOTICE: the member that caused it, or NONE */
    bool may_act;                     /* MAY_ACT: the new value */
    char text[SC_ELECT_TEXT_MAX + 1]; /* ROLE, MAY_ACT, NOTICE: one line for the log */
} sc_elect_output_t;

/* The outputs of one call, to carry out in order. */
typedef struct sc_elect_outputs {
    size_t n;                                /* outputs used */
    sc_elect_output_t out[SC_ELECT_OUT_MAX]; /* in order */
    bool append_accepted;                    /* step(APPEND): from this term's leader: the
                                                replication applies and answers it */
} sc_elect_outputs_t;

/* Settings of one member's election. */
typedef struct sc_elect_config {
    size_t self;               /* this member's index in names */
    size_t n_members;          /* members, 1..SC_VOTERS_MEMBERS_MAX */
    const char *const *names;  /* member names in the members list's order (copied) */
    const sc_voters_t *voters; /* sc_elect_voters' choice (copied) */
    int64_t election_ms;       /* T: election timeout drawn in [T, 2T); CheckQuorum */
    int64_t heartbeat_ms;      /* the leader's heartbeat period, at most T / 2 */
    int64_t stall_ms;          /* the caller reports loop gaps over this (TILT) */
    int64_t lease_ms;          /* the leader acts this long after a round's send time,
                                  0: the default T - stall_ms - T / 20 */
    uint64_t seed;             /* the randomized timeouts' seed (tests: fixed) */
    bool pre_vote;             /* PreVote: true (false only for tests of what it does) */
    bool check_quorum;         /* CheckQuorum: true (likewise) */
} sc_elect_config_t;

typedef struct sc_elect sc_elect_t;

/* The defaults: T = 1000 ms, heartbeat 100 ms, stall 300 ms, lease 650 ms, PreVote and
 * CheckQuorum on; self 0, no members, no voters, seed 0.
 *  - T and the heartbeat are etcd's (--election-timeout 1000, --heartbeat-interval 100;
 *    raft.Config: "ElectionTick = 10 * HeartbeatTick") and close to hashicorp/raft's
 *    (HeartbeatTimeout = ElectionTimeout = 1 s). A failover is one follower's timeout in
 *    [T, 2T) after the last heartbeat and three round trips (pre-vote, vote, the first round
 *    with its commit), one more timeout when two candidates split the vote: simulated
 *    (test_elect), a median of 1.3 s and a max of 1.9 s with 3 voters, 1.2 s and 3.0 s (a
 *    split) with 5 — within the 3 s / 5 s. T = 2 s would ride out longer freezes but
 *    miss the median goal.
 *  - stall 300 ms: three missed turns of a leader's loop. A false alarm costs one round trip
 *    (the confirming round), a missed stall costs lease margin, so it is low (Sentinel's TILT
 *    trigger is 2 s, for a 100 ms timer that acts on far longer timeouts).
 *  - lease 650 ms: T minus the stall threshold minus 5 % for clock rate drift
 *    (hashicorp/raft's LeaderLeaseTimeout is 500 ms for its 1 s). */
void sc_elect_config_default(sc_elect_config_t *cfg);

/* A member's election starting at now (monotonic ms) from the hard state persisted (term 0,
 * SC_ELECT_NONE when nothing was). It starts a follower (non-voter if not in the voters), with
 * no leader, and refuses votes for a newer term during its first T (it may have acknowledged
 * a leader's round before it restarted). 0, or -EINVAL with the reason in err (may be NULL):
 * a setting out of range, self or a voter out of the list, hard state invalid; -ENOMEM.
 * *ret_e is the caller's (sc_elect_destroy). */
int sc_elect_new(const sc_elect_config_t *cfg, const sc_elect_hard_state_t *hard, int64_t now,
                 sc_elect_t **ret_e, char *err, size_t errlen);
/* Frees; takes NULL; nulls the pointer. */
void sc_elect_destroy(sc_elect_t **e);

/* Time passes: timers (election timeout, heartbeat, CheckQuorum, transfer). out is reset. */
void sc_elect_tick(sc_elect_t *e, int64_t now, sc_elect_outputs_t *out);
/* A message received (m->to must be this member). 0, or -EINVAL for a message that cannot
 * be (type, from or to out of range, from itself, a negative term) with nothing changed.
 * out is reset. */
int sc_elect_step(sc_elect_t *e, int64_t now, const sc_elect_msg_t *m, sc_elect_outputs_t *out);
/* The caller's loop stalled (see above): a leader stops acting until a round sent from now
 * on is acknowledged by a majority, and sends that round at once. Others: nothing. */
void sc_elect_stall(sc_elect_t *e, int64_t now, sc_elect_outputs_t *out);
/* Holds this member back from leading while why is set (the caller's reason, e.g. a voter of
 * its list runs with other members: sc_coord_digest), or lets it go (why NULL or ""). While
 * held: a leader, candidate or pre-candidate becomes a follower at once (HELD); its election
 * timeout starts no campaign but asks the voters for a pre-vote whose answers count for nothing
 * (so the caller hears each of them again, and learns when they agree) and restarts the timer;
 * it refuses votes and pre-votes ("held back: why"); TIMEOUT_NOW is ignored. It still follows a
 * leader it hears, and answers its appends. A NOTICE says each change; calling it again with the
 * same reason does nothing. out is reset. */
void sc_elect_hold(sc_elect_t *e, int64_t now, const char *why, sc_elect_outputs_t *out);
/* Whether sc_elect_hold holds it back. */
bool sc_elect_held(const sc_elect_t *e);
/* Hands the lead to the voter to (the leader only). 0 (also when already transferring to
 * it), -EINVAL (to is not another voter), SC_E_STATE (not the leader, or TIMEOUT_NOW already
 * went to another member) with nothing changed. out is reset. */
int sc_elect_transfer(sc_elect_t *e, size_t to, int64_t now, sc_elect_outputs_t *out);
/* The voter to hand the lead to if the transfer under way is not done within T (the target
 * stopped after it was chosen): when the leader steps down, TIMEOUT_NOW goes to next, if its
 * log matches and it answered within the last two heartbeats. SC_ELECT_NONE: none. 0,
 * SC_E_STATE (not transferring), -EINVAL (next is not another voter, or is the target). */
int sc_elect_transfer_next(sc_elect_t *e, size_t next);
/* The log's end and commit index changed. 0 or -EINVAL (negative, commit past the end). */
int sc_elect_set_log(sc_elect_t *e, int64_t last_index, int64_t last_term, int64_t commit);
/* The answer to the APPEND m this member accepted: the term, m's round echoed, ok and match
 * as the replication found them. */
void sc_elect_append_answer(const sc_elect_t *e, const sc_elect_msg_t *m, bool ok, int64_t match,
                            sc_elect_msg_t *ret_answer);

/* Whether this member may act as leader at now (rule 5). */
bool sc_elect_may_act(const sc_elect_t *e, int64_t now);
/* The latest time the caller must call sc_elect_tick (INT64_MAX: none). */
int64_t sc_elect_next_ms(const sc_elect_t *e);

sc_elect_state_t sc_elect_state(const sc_elect_t *e);
int64_t sc_elect_term(const sc_elect_t *e);
/* The leader followed (itself when leader), SC_ELECT_NONE while there is none. */
size_t sc_elect_leader(const sc_elect_t *e);
/* When the leader was last heard (its append accepted; for a leader, when a majority last
 * was), 0: never. */
int64_t sc_elect_leader_contact_ms(const sc_elect_t *e);
sc_elect_hard_state_t sc_elect_hard_state(const sc_elect_t *e);
/* Stalled and not confirmed since (TILT). */
bool sc_elect_tilted(const sc_elect_t *e);
/* The role schedcoordctl status shows: "leader", "voter" (a voter following), "follower" (a
 * non-voter), "candidate" (pre-candidate or candidate). */
const char *sc_elect_role(const sc_elect_t *e);

/* The transition table: the state after ev in s, or SC_ELECT_STATE_MAX when ev does not
 * apply there (nothing changes). */
sc_elect_state_t sc_elect_next_state(sc_elect_state_t s, sc_elect_event_t ev);
/* "follower", ...; "timeout", ...; "pre_vote", ...; "persist", ...: "unknown" out of range. */
const char *sc_elect_state_name(sc_elect_state_t s);
const char *sc_elect_event_name(sc_elect_event_t ev);
const char *sc_elect_msg_type_name(sc_elect_msg_type_t t);
const char *sc_elect_out_kind_name(sc_elect_out_kind_t k);

#endif
