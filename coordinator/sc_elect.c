/* sc_elect: the coordinators' election as a pure state machine (see sc_elect.h). */
#include "sc_elect.h"

#include "sc_error.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_NO SC_ELECT_STATE_MAX /* table: the event does not apply, nothing changes */
#define S_HELD_MAX 128          /* bytes of why it is held back (sc_elect_hold), NUL included */

/* ---- the transition table -------------------------------------------------------------
 *
 * States x events: the state entered. Entering a state runs its action even when it is the
 * same state (a new term, a new campaign); "." : the event does not apply there, nothing changes.
 *
 *                   TIMEOUT PRE_WON WON REJECTED NEWER LEADER QUORUM_LOST NOW XFER_FAIL HELD
 *   follower        P       .       .   .        F     F      .           C   .         .
 *   pre_candidate   P       C       .   F        F     F      .           .   .         F
 *   candidate       P       .       L   F        F     F      .           .   .         F
 *   leader          .       .       .   .        F     .      F           .   F         F
 *   non_voter       .       .       .   .        N     N      .           .   .         .
 *
 *   F follower, P pre_candidate, C candidate, L leader, N non_voter. PRE_WON = PRE_VOTE_WON,
 *   WON = VOTE_WON, NEWER = NEWER_TERM, LEADER = LEADER_HEARD, NOW = TIMEOUT_NOW, XFER_FAIL =
 *   TRANSFER_FAILED. While held (sc_elect_hold), a follower's TIMEOUT and NOW do not fire: its
 *   timeout asks the voters again without campaigning.
 *
 *                    TIMEOUT_NOW (a transfer: no pre-vote)
 *      ┌────────────────────────────────────────────────┐
 *      │                                                ▼
 *   follower ─TIMEOUT─▶ pre_candidate ─PRE_VOTE_WON─▶ candidate ─VOTE_WON─▶ leader
 *    ▲  ▲                  │      ▲                     │  │                  │
 *    │  │                  │      └────── TIMEOUT ──────┘  │                  │
 *    │  └──────────────────┴─ REJECTED, NEWER_TERM, ───────┘                  │
 *    │                        LEADER_HEARD, HELD                              │
 *    └────────── NEWER_TERM, QUORUM_LOST, TRANSFER_FAILED, HELD ──────────────┘
 *
 *   pre_candidate ─TIMEOUT─▶ pre_candidate (asks again)
 *   follower ─NEWER_TERM, LEADER_HEARD─▶ follower (a new term or leader; the timer restarts)
 *   non_voter ─NEWER_TERM, LEADER_HEARD─▶ non_voter (follows; never campaigns, never votes)
 */
static const sc_elect_state_t s_table[SC_ELECT_STATE_MAX][SC_ELECT_EV_MAX] = {
    [SC_ELECT_FOLLOWER] = {SC_ELECT_PRE_CANDIDATE, S_NO, S_NO, S_NO, SC_ELECT_FOLLOWER,
                           SC_ELECT_FOLLOWER, S_NO, SC_ELECT_CANDIDATE, S_NO, S_NO},
    [SC_ELECT_PRE_CANDIDATE] = {SC_ELECT_PRE_CANDIDATE, SC_ELECT_CANDIDATE, S_NO, SC_ELECT_FOLLOWER,
                                SC_ELECT_FOLLOWER, SC_ELECT_FOLLOWER, S_NO, S_NO, S_NO,
                                SC_ELECT_FOLLOWER},
    [SC_ELECT_CANDIDATE] = {SC_ELECT_PRE_CANDIDATE, S_NO, SC_ELECT_LEADER, SC_ELECT_FOLLOWER,
                            SC_ELECT_FOLLOWER, SC_ELECT_FOLLOWER, S_NO, S_NO, S_NO,
                            SC_ELECT_FOLLOWER},
    [SC_ELECT_LEADER] = {S_NO, S_NO, S_NO, S_NO, SC_ELECT_FOLLOWER, S_NO, SC_ELECT_FOLLOWER, S_NO,
                         SC_ELECT_FOLLOWER, SC_ELECT_FOLLOWER},
    [SC_ELECT_NON_VOTER] = {S_NO, S_NO, S_NO, S_NO, SC_ELECT_NON_VOTER, SC_ELECT_NON_VOTER, S_NO,
                            S_NO, S_NO, S_NO},
};

static const char *const s_state_name[SC_ELECT_STATE_MAX] = {"follower", "pre_candidate",
                                                             "candidate", "leader", "non_voter"};
static const char *const s_event_name[SC_ELECT_EV_MAX] = {
    "timeout",      "pre_vote_won", "vote_won",    "rejected",        "newer_term",
    "leader_heard", "quorum_lost",  "timeout_now", "transfer_failed", "held"};
static const char *const s_msg_name[SC_ELECT_MSG_MAX] = {
    "pre_vote", "pre_vote_answer", "vote", "vote_answer", "append", "append_answer", "timeout_now"};
static const char *const s_out_name[SC_ELECT_OUT_KIND_MAX] = {"persist", "send", "role", "may_act",
                                                              "notice"};

struct sc_elect {
    sc_elect_config_t cfg;           /* settings (names and voters point to the copies below) */
    char **names;                    /* member names, owned */
    sc_voters_t voters;              /* the voters and their digest */
    size_t quorum;                   /* voters.n / 2 + 1 */
    int self_slot;                   /* self's position in voters.index, -1: non-voter */
    uint64_t rng;                    /* splitmix64 state (randomized timeouts) */
    int64_t now;                     /* the latest time given */
    sc_elect_state_t state;          /* the table's state */
    int64_t term;                    /* current_term (persisted) */
    size_t voted_for;                /* voted for in term (persisted), SC_ELECT_NONE */
    size_t leader;                   /* the leader followed, SC_ELECT_NONE */
    int64_t leader_heard;            /* when that leader's append was last accepted, 0 */
    int64_t quiet_until;             /* refuse newer-term (pre-)votes before (CheckQuorum) */
    int64_t timeout_at;              /* the election timer (a voter that is not leader) */
    int64_t started;                 /* when the module started */
    int64_t last_index;              /* the log's last index */
    int64_t last_term;               /* its term */
    int64_t commit;                  /* the commit index */
    signed char vote[SC_VOTERS_MAX]; /* campaign: 1 granted, -1 refused, 0 unknown */
    int64_t heard[SC_VOTERS_MAX];    /* leader: when each voter was last heard */
    int64_t acked[SC_VOTERS_MAX];    /* leader: newest round each voter acknowledged */
    int64_t match[SC_VOTERS_MAX];    /* leader: each voter's match index */
    int64_t next_beat;               /* leader: when the next heartbeat round is due */
    int64_t last_round;              /* leader: the latest round sent */
    int64_t min_round;               /* leader: rounds up to this one do not count (a stall) */
    int64_t term_start;              /* leader: index of its term's first entry */
    bool tilt;                       /* leader: stalled, not confirmed since */
    size_t transferee;               /* leader: transfer target, SC_ELECT_NONE */
    size_t transfer_next;            /* leader: the second choice, SC_ELECT_NONE */
    int64_t transfer_until;          /* leader: the transfer's deadline */
    bool timeout_now_sent;           /* leader: TIMEOUT_NOW went out in this term */
    bool said_may_act;               /* the last MAY_ACT value given */
    sc_elect_state_t said_state;     /* the last ROLE's state */
    int64_t said_term;               /* the last ROLE's term */
    size_t said_leader;              /* the last ROLE's leader */
    char held[S_HELD_MAX];           /* why the caller holds it back from leading ("": not) */
};

/* ---- names and the table -------------------------------------------------------------- */

sc_elect_state_t sc_elect_next_state(sc_elect_state_t s, sc_elect_event_t ev)
{
    if ((unsigned)s >= SC_ELECT_STATE_MAX || (unsigned)ev >= SC_ELECT_EV_MAX)
        return S_NO;
    return s_table[s][ev];
}

const char *sc_elect_state_name(sc_elect_state_t s)
{
    return (unsigned)s < SC_ELECT_STATE_MAX ? s_state_name[s] : "unknown";
}

const char *sc_elect_event_name(sc_elect_event_t ev)
{
    return (unsigned)ev < SC_ELECT_EV_MAX ? s_event_name[ev] : "unknown";
}

const char *sc_elect_msg_type_name(sc_elect_msg_type_t t)
{
    return (unsigned)t < SC_ELECT_MSG_MAX ? s_msg_name[t] : "unknown";
}

const char *sc_elect_out_kind_name(sc_elect_out_kind_t k)
{
    return (unsigned)k < SC_ELECT_OUT_KIND_MAX ? s_out_name[k] : "unknown";
}

/* ---- helpers --------------------------------------------------------------------------- */

static const char *s_name(const sc_elect_t *e, size_t i)
{
    return i < e->cfg.n_members ? e->names[i] : "none";
}

static int s_slot(const sc_elect_t *e, size_t member)
{
    for (size_t i = 0; i < e->voters.n; i++)
        if (e->voters.index[i] == member)
            return (int)i;
    return -1;
}

/* splitmix64: small, and the same sequence for the same seed everywhere. */
static uint64_t s_rand(sc_elect_t *e)
{
    uint64_t z = (e->rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void s_reset_timer(sc_elect_t *e)
{
    int64_t t = e->cfg.election_ms;
    e->timeout_at = e->now + t + (int64_t)(s_rand(e) % (uint64_t)t);
}

static sc_elect_output_t *s_add(sc_elect_outputs_t *out, sc_elect_out_kind_t kind)
{
    /* Bounded by design: a call emits at most a few outputs per voter (see SC_ELECT_OUT_MAX). */
    assert(out->n < SC_ELECT_OUT_MAX);
    sc_elect_output_t *o = &out->out[out->n++];
    memset(o, 0, sizeof(*o));
    o->kind = kind;
    o->leader = o->peer = SC_ELECT_NONE;
    return o;
}

static void s_notice(sc_elect_outputs_t *out, size_t peer, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void s_notice(sc_elect_outputs_t *out, size_t peer, const char *fmt, ...)
{
    sc_elect_output_t *o = s_add(out, SC_ELECT_OUT_NOTICE);
    va_list ap;
    o->peer = peer;
    va_start(ap, fmt);
    vsnprintf(o->text, sizeof(o->text), fmt, ap);
    va_end(ap);
}

static void s_persist(sc_elect_t *e, sc_elect_outputs_t *out)
{
    sc_elect_output_t *o = s_add(out, SC_ELECT_OUT_PERSIST);
    o->hard = (sc_elect_hard_state_t){.term = e->term, .voted_for = e->voted_for};
}

static sc_elect_msg_t *s_send(sc_elect_t *e, sc_elect_outputs_t *out, sc_elect_msg_type_t type,
                              size_t to, int64_t term)
{
    sc_elect_output_t *o = s_add(out, SC_ELECT_OUT_SEND);
    o->msg.type = type;
    o->msg.from = e->cfg.self;
    o->msg.to = to;
    o->msg.term = term;
    o->msg.last_index = e->last_index;
    o->msg.last_term = e->last_term;
    return &o->msg;
}

/* The quorum-th most recent of the per-voter times t[], self counting as now. */
static int64_t s_quorum_time(const sc_elect_t *e, const int64_t *t, int64_t now)
{
    int64_t v[SC_VOTERS_MAX];
    size_t n = e->voters.n;
    if (e->quorum < 1 || e->quorum > n)
        return INT64_MIN; /* no such majority: never */
    for (size_t i = 0; i < n; i++)
        v[i] = (int)i == e->self_slot ? now : t[i];
    for (size_t i = 1; i < n; i++) /* descending */
        for (size_t j = i; j > 0 && v[j - 1] < v[j]; j--) {
            int64_t x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    return v[e->quorum - 1];
}

/* A majority acknowledged a round of this tenure, sent after the last stall, less than
 * lease_ms ago (a single voter is its own majority). */
static bool s_lease_ok(const sc_elect_t *e, int64_t now)
{
    int64_t since;
    if (e->quorum == 1)
        return true;
    since = s_quorum_time(e, e->acked, now);
    return since > e->min_round && now < since + e->cfg.lease_ms;
}

bool sc_elect_may_act(const sc_elect_t *e, int64_t now)
{
    if (!e || e->state != SC_ELECT_LEADER || e->tilt || e->timeout_now_sent ||
        e->transferee != SC_ELECT_NONE || e->commit < e->term_start)
        return false;
    return s_lease_ok(e, now > e->now ? now : e->now);
}

/* Emits ROLE when the state, term or leader differ from the last said. */
static void s_role(sc_elect_t *e, sc_elect_outputs_t *out, sc_elect_state_t old, size_t peer,
                   const char *reason)
{
    sc_elect_output_t *o;
    if (e->state == e->said_state && e->term == e->said_term && e->leader == e->said_leader)
        return;
    o = s_add(out, SC_ELECT_OUT_ROLE);
    o->old_state = old;
    o->new_state = e->state;
    o->term = e->term;
    o->leader = e->leader;
    o->peer = peer;
    snprintf(o->text, sizeof(o->text), "%s -> %s term=%" PRId64 " leader=%s: %s", s_state_name[old],
             s_state_name[e->state], e->term, s_name(e, e->leader), reason);
    e->said_state = e->state;
    e->said_term = e->term;
    e->said_leader = e->leader;
}

/* Emits MAY_ACT when it changed since the last said. */
static void s_end(sc_elect_t *e, sc_elect_outputs_t *out)
{
    bool may = sc_elect_may_act(e, e->now);
    sc_elect_output_t *o;
    if (may == e->said_may_act)
        return;
    e->said_may_act = may;
    o = s_add(out, SC_ELECT_OUT_MAY_ACT);
    o->may_act = may;
    if (may)
        snprintf(o->text, sizeof(o->text), "acting as leader of term %" PRId64, e->term);
    else
        snprintf(o->text, sizeof(o->text), "not acting: %s",
                 e->state != SC_ELECT_LEADER ? "not the leader"
                 : e->tilt                   ? "stalled, waiting for a quorum to confirm"
                 : e->timeout_now_sent || e->transferee != SC_ELECT_NONE
                     ? "handing the lead over"
                     : "no quorum acknowledged a round within the lease");
}

/* ---- entering states ------------------------------------------------------------------- */

static void s_fire(sc_elect_t *e, sc_elect_outputs_t *out, sc_elect_event_t ev, size_t peer,
                   const char *reason);

static void s_heartbeat(sc_elect_t *e, sc_elect_outputs_t *out)
{
    int64_t round = e->now > e->last_round ? e->now : e->last_round + 1;
    e->last_round = round;
    e->next_beat = e->now + e->cfg.heartbeat_ms;
    for (size_t i = 0; i < e->voters.n; i++) {
        if ((int)i == e->self_slot)
            continue;
        sc_elect_msg_t *m = s_send(e, out, SC_ELECT_MSG_APPEND, e->voters.index[i], e->term);
        m->commit = e->commit;
        m->round = round;
    }
}

/* Counts the campaign's answers; fires WON or REJECTED on a majority. */
static void s_tally(sc_elect_t *e, sc_elect_outputs_t *out, size_t peer)
{
    size_t yes = 0, no = 0;
    char why[96];
    for (size_t i = 0; i < e->voters.n; i++) {
        yes += e->vote[i] > 0;
        no += e->vote[i] < 0;
    }
    if (yes >= e->quorum) {
        snprintf(why, sizeof(why), "%s by %zu of %zu voters",
                 e->state == SC_ELECT_PRE_CANDIDATE ? "pre-vote won" : "vote won", yes,
                 e->voters.n);
        s_fire(e, out,
               e->state == SC_ELECT_PRE_CANDIDATE ? SC_ELECT_EV_PRE_VOTE_WON : SC_ELECT_EV_VOTE_WON,
               peer, why);
    } else if (no >= e->quorum) {
        snprintf(why, sizeof(why), "%s refused by %zu of %zu voters",
                 e->state == SC_ELECT_PRE_CANDIDATE ? "pre-vote" : "vote", no, e->voters.n);
        s_fire(e, out, SC_ELECT_EV_REJECTED, peer, why);
    }
}

static void s_campaign(sc_elect_t *e, sc_elect_outputs_t *out, bool pre, bool transfer)
{
    memset(e->vote, 0, sizeof(e->vote));
    e->vote[e->self_slot] = 1;
    e->leader = SC_ELECT_NONE;
    s_reset_timer(e);
    for (size_t i = 0; i < e->voters.n; i++) {
        if ((int)i == e->self_slot)
            continue;
        sc_elect_msg_t *m = s_send(e, out, pre ? SC_ELECT_MSG_PRE_VOTE : SC_ELECT_MSG_VOTE,
                                   e->voters.index[i], pre ? e->term + 1 : e->term);
        m->transfer = transfer;
        memcpy(m->digest, e->voters.digest, sizeof(m->digest));
    }
}

/* Held back, its election timeout passed: asks the voters for a pre-vote as a campaign would,
 * but stays a follower, so their answers count for nothing (s_on_vote_answer). What it is for:
 * the caller hears each voter again — the one whose disagreement holds it back may have been
 * set right. */
static void s_ask_again(sc_elect_t *e, sc_elect_outputs_t *out)
{
    s_reset_timer(e);
    for (size_t i = 0; i < e->voters.n; i++) {
        if ((int)i == e->self_slot)
            continue;
        sc_elect_msg_t *m = s_send(e, out, SC_ELECT_MSG_PRE_VOTE, e->voters.index[i], e->term + 1);
        memcpy(m->digest, e->voters.digest, sizeof(m->digest));
    }
}

static void s_enter(sc_elect_t *e, sc_elect_outputs_t *out, sc_elect_state_t next,
                    sc_elect_event_t ev)
{
    e->state = next;
    switch (next) {
    case SC_ELECT_FOLLOWER:
    case SC_ELECT_NON_VOTER:
        e->transferee = e->transfer_next = SC_ELECT_NONE;
        if (ev != SC_ELECT_EV_LEADER_HEARD && ev != SC_ELECT_EV_NEWER_TERM)
            e->leader = SC_ELECT_NONE;
        if (next == SC_ELECT_FOLLOWER)
            s_reset_timer(e);
        break;
    case SC_ELECT_PRE_CANDIDATE:
        if (e->cfg.pre_vote)
            s_campaign(e, out, true, false);
        break;
    case SC_ELECT_CANDIDATE:
        /* The vote for itself is persisted before the requests leave (they follow it). */
        e->term++;
        e->voted_for = e->cfg.self;
        s_persist(e, out);
        s_campaign(e, out, false, ev == SC_ELECT_EV_TIMEOUT_NOW);
        break;
    case SC_ELECT_LEADER:
        e->leader = e->cfg.self;
        e->transferee = e->transfer_next = SC_ELECT_NONE;
        e->timeout_now_sent = false;
        e->tilt = false;
        e->min_round = e->last_round;
        e->term_start = e->last_index + 1; /* the caller appends its term's entry there */
        for (size_t i = 0; i < e->voters.n; i++) {
            e->heard[i] = e->now; /* one T of grace before CheckQuorum */
            e->acked[i] = 0;
            e->match[i] = 0;
        }
        break;
    default: break;
    }
}

/* Looks ev up in the table and enters the next state (nothing when it does not apply). */
static void s_fire(sc_elect_t *e, sc_elect_outputs_t *out, sc_elect_event_t ev, size_t peer,
                   const char *reason)
{
    sc_elect_state_t old = e->state, next = s_table[e->state][ev];
    if (next == S_NO)
        return;
    s_enter(e, out, next, ev);
    s_role(e, out, old, peer, reason);
    if (old == next && next == SC_ELECT_PRE_CANDIDATE) /* no role change to say: say the retry */
        s_notice(out, SC_ELECT_NONE, "pre-vote for term %" PRId64 " asked again: %s", e->term + 1,
                 reason);
    if (next == SC_ELECT_LEADER) {
        s_heartbeat(e, out); /* assert the lead at once */
    } else if (next == SC_ELECT_PRE_CANDIDATE && !e->cfg.pre_vote) {
        s_fire(e, out, SC_ELECT_EV_PRE_VOTE_WON, SC_ELECT_NONE, "pre-vote is off");
    } else if (next == SC_ELECT_PRE_CANDIDATE || next == SC_ELECT_CANDIDATE) {
        s_tally(e, out, SC_ELECT_NONE); /* a single voter wins alone */
    }
}

/* A newer term: adopt it (with the vote given in it, if any: one write for both), persist,
 * become a follower (leader: who sent it when it is an append, else none). */
static void s_newer_term(sc_elect_t *e, sc_elect_outputs_t *out, const sc_elect_msg_t *m,
                         size_t leader, size_t voted_for)
{
    char why[96];
    snprintf(why, sizeof(why), "term %" PRId64 " seen in %s from %s", m->term, s_msg_name[m->type],
             s_name(e, m->from));
    e->term = m->term;
    e->voted_for = voted_for;
    e->leader = leader;
    s_persist(e, out);
    s_fire(e, out, SC_ELECT_EV_NEWER_TERM, m->from, why);
}

/* ---- messages -------------------------------------------------------------------------- */

static bool s_in_lease(const sc_elect_t *e)
{
    return e->state == SC_ELECT_LEADER || e->now < e->quiet_until;
}

static void s_on_vote_request(sc_elect_t *e, sc_elect_outputs_t *out, const sc_elect_msg_t *m)
{
    bool pre = m->type == SC_ELECT_MSG_PRE_VOTE, can, up_to_date, newer = false;
    sc_elect_msg_type_t answer = pre ? SC_ELECT_MSG_PRE_VOTE_ANSWER : SC_ELECT_MSG_VOTE_ANSWER;
    char why[SC_ELECT_REASON_MAX + 1] = "";
    sc_elect_msg_t *a;

    /* Refusals before any term is looked at: they change nothing here. */
    if (e->self_slot < 0)
        snprintf(why, sizeof(why), "%s is not a voter", s_name(e, e->cfg.self));
    else if (strcmp(m->digest, e->voters.digest) != 0)
        snprintf(why, sizeof(why), "voters differ: digest %s here, %s from %s", e->voters.digest,
                 m->digest, s_name(e, m->from));
    else if (s_slot(e, m->from) < 0)
        snprintf(why, sizeof(why), "%s is not a voter", s_name(e, m->from));
    else if (e->held[0])
        snprintf(why, sizeof(why), "held back: %s", e->held);
    else if (m->term < e->term)
        snprintf(why, sizeof(why), "term %" PRId64 " is older than %" PRId64, m->term, e->term);
    else if (m->term > e->term && !m->transfer && e->cfg.check_quorum && s_in_lease(e))
        snprintf(why, sizeof(why), "%s %" PRId64 " ms ago, under the election timeout",
                 e->state == SC_ELECT_LEADER ? "leading: a quorum heard"
                 : e->leader_heard           ? "a leader was heard"
                                             : "started",
                 e->now - (e->state == SC_ELECT_LEADER ? s_quorum_time(e, e->heard, e->now)
                           : e->leader_heard           ? e->leader_heard
                                                       : e->started));
    if (why[0]) {
        a = s_send(e, out, answer, m->from, e->term);
        memcpy(a->reason, why, sizeof(a->reason));
        return;
    }
    /* Decided as in the newer term when it is one (no vote yet, no leader). */
    newer = !pre && m->term > e->term;
    can = newer || e->voted_for == m->from ||
          (e->voted_for == SC_ELECT_NONE && e->leader == SC_ELECT_NONE) ||
          (pre && m->term > e->term);
    up_to_date = m->last_term > e->last_term ||
                 (m->last_term == e->last_term && m->last_index >= e->last_index);
    if (newer) /* the term, and the vote if given, persisted before the answer */
        s_newer_term(e, out, m, SC_ELECT_NONE, can && up_to_date ? m->from : SC_ELECT_NONE);
    if (can && up_to_date) {
        if (!pre && !newer) {
            e->voted_for = m->from;
            s_persist(e, out); /* before the grant, which follows it */
        }
        if (!pre)
            s_reset_timer(e);
        s_send(e, out, answer, m->from, m->term)->ok = true;
        return;
    }
    if (!can && e->voted_for != SC_ELECT_NONE)
        snprintf(why, sizeof(why), "already voted for %s in term %" PRId64, s_name(e, e->voted_for),
                 e->term);
    else if (!can)
        snprintf(why, sizeof(why), "following %s in term %" PRId64, s_name(e, e->leader), e->term);
    else
        snprintf(why, sizeof(why),
                 "log behind: last entry (term %" PRId64 ", index %" PRId64 ") here, (%" PRId64
                 ", %" PRId64 ") from %s",
                 e->last_term, e->last_index, m->last_term, m->last_index, s_name(e, m->from));
    a = s_send(e, out, answer, m->from, e->term);
    memcpy(a->reason, why, sizeof(a->reason));
}

static void s_on_vote_answer(sc_elect_t *e, sc_elect_outputs_t *out, const sc_elect_msg_t *m)
{
    bool pre = m->type == SC_ELECT_MSG_PRE_VOTE_ANSWER;
    int slot = s_slot(e, m->from);

    if (m->term > e->term && !(pre && m->ok)) { /* a granted pre-vote is for a future term */
        s_newer_term(e, out, m, SC_ELECT_NONE, SC_ELECT_NONE);
        return;
    }
    if (slot < 0)
        return;
    if (pre && e->state == SC_ELECT_PRE_CANDIDATE && m->term == (m->ok ? e->term + 1 : e->term)) {
        e->vote[slot] = m->ok ? 1 : -1;
        s_tally(e, out, m->from);
    } else if (!pre && e->state == SC_ELECT_CANDIDATE && m->term == e->term) {
        e->vote[slot] = m->ok ? 1 : -1;
        s_tally(e, out, m->from);
    }
}

static void s_on_append(sc_elect_t *e, sc_elect_outputs_t *out, const sc_elect_msg_t *m)
{
    sc_elect_msg_t *a;

    if (s_slot(e, m->from) < 0) {
        s_notice(out, m->from, "append of term %" PRId64 " from %s ignored: not a voter", m->term,
                 s_name(e, m->from));
        return;
    }
    if (m->term < e->term) { /* a deposed leader: tell it the newer term */
        a = s_send(e, out, SC_ELECT_MSG_APPEND_ANSWER, m->from, e->term);
        a->round = m->round;
        snprintf(a->reason, sizeof(a->reason), "term %" PRId64 " is older than %" PRId64, m->term,
                 e->term);
        return;
    }
    if (m->term > e->term)
        s_newer_term(e, out, m, m->from, SC_ELECT_NONE);
    if (e->state == SC_ELECT_LEADER) { /* two leaders of one term cannot be: refuse it */
        s_notice(out, m->from, "append of my own term %" PRId64 " from %s ignored", m->term,
                 s_name(e, m->from));
        return;
    }
    e->leader = m->from;
    e->leader_heard = e->now;
    if (e->quiet_until < e->now + e->cfg.election_ms)
        e->quiet_until = e->now + e->cfg.election_ms;
    if (e->state == SC_ELECT_FOLLOWER)
        s_reset_timer(e);
    s_fire(e, out, SC_ELECT_EV_LEADER_HEARD, m->from, "append from the leader");
    out->append_accepted = true;
}

static void s_on_append_answer(sc_elect_t *e, sc_elect_outputs_t *out, const sc_elect_msg_t *m)
{
    int slot = s_slot(e, m->from);

    if (m->term > e->term) {
        s_newer_term(e, out, m, SC_ELECT_NONE, SC_ELECT_NONE);
        return;
    }
    if (e->state != SC_ELECT_LEADER || m->term != e->term || slot < 0)
        return;
    e->heard[slot] = e->now;
    if (m->round > e->min_round && m->round <= e->last_round && m->round > e->acked[slot])
        e->acked[slot] = m->round;
    if (m->ok && m->match > e->match[slot])
        e->match[slot] = m->match;
    if (e->tilt && s_quorum_time(e, e->acked, e->now) > e->min_round) {
        e->tilt = false;
        s_notice(out, SC_ELECT_NONE,
                 "leadership of term %" PRId64 " confirmed by a quorum after the stall", e->term);
    }
    if (e->transferee == m->from && !e->timeout_now_sent && e->match[slot] >= e->last_index) {
        s_send(e, out, SC_ELECT_MSG_TIMEOUT_NOW, m->from, e->term);
        e->timeout_now_sent = true;
    }
}

static void s_on_timeout_now(sc_elect_t *e, sc_elect_outputs_t *out, const sc_elect_msg_t *m)
{
    if (m->term < e->term)
        return;
    if (m->term > e->term)
        s_newer_term(e, out, m, SC_ELECT_NONE, SC_ELECT_NONE);
    if (e->leader != SC_ELECT_NONE && e->leader != m->from)
        return; /* only the leader of the term hands its lead over */
    if (e->held[0]) {
        s_notice(out, m->from, "timeout_now from %s ignored: held back: %s", s_name(e, m->from),
                 e->held);
        return;
    }
    s_fire(e, out, SC_ELECT_EV_TIMEOUT_NOW, m->from, "timeout_now: the leader hands over");
}

/* ---- the API --------------------------------------------------------------------------- */

void sc_elect_config_default(sc_elect_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->election_ms = SC_ELECT_ELECTION_MS;
    cfg->heartbeat_ms = SC_ELECT_HEARTBEAT_MS;
    cfg->stall_ms = SC_ELECT_STALL_MS;
    cfg->pre_vote = true;
    cfg->check_quorum = true;
}

static int s_check_config(const sc_elect_config_t *c, const sc_elect_hard_state_t *h, char *err,
                          size_t errlen)
{
    const sc_voters_t *v = c->voters;

    if (c->n_members == 0 || c->n_members > SC_VOTERS_MEMBERS_MAX || !c->names)
        return sc_errf(err, errlen, -EINVAL, "members: %zu, expected 1..%d", c->n_members,
                       SC_VOTERS_MEMBERS_MAX);
    if (c->self >= c->n_members)
        return sc_errf(err, errlen, -EINVAL, "self: %zu is not a member", c->self);
    for (size_t i = 0; i < c->n_members; i++)
        if (!c->names[i])
            return sc_errf(err, errlen, -EINVAL, "names[%zu]: missing", i);
    if (!v || v->n == 0 || v->n > SC_VOTERS_MAX || v->n % 2 == 0)
        return sc_errf(err, errlen, -EINVAL, "voters: %zu, expected 1, 3, 5 or 7", v ? v->n : 0);
    for (size_t i = 0; i < v->n; i++)
        if (v->index[i] >= c->n_members || (i > 0 && v->index[i] <= v->index[i - 1]))
            return sc_errf(err, errlen, -EINVAL, "voters: index %zu out of the list or order",
                           v->index[i]);
    if (c->heartbeat_ms < 1 || c->election_ms < 2 * c->heartbeat_ms)
        return sc_errf(err, errlen, -EINVAL,
                       "election timeout %" PRId64 " ms must be at least twice the heartbeat "
                       "%" PRId64 " ms",
                       c->election_ms, c->heartbeat_ms);
    if (c->stall_ms < 1 || c->lease_ms < 0 || c->stall_ms >= c->election_ms)
        return sc_errf(err, errlen, -EINVAL,
                       "stall threshold %" PRId64 " ms must be under the election timeout",
                       c->stall_ms);
    if (c->lease_ms &&
        (c->lease_ms <= c->heartbeat_ms || c->lease_ms + c->stall_ms >= c->election_ms))
        return sc_errf(err, errlen, -EINVAL,
                       "lease %" PRId64 " ms must exceed the heartbeat and stay under the "
                       "election timeout minus the stall threshold",
                       c->lease_ms);
    if (!h || h->term < 0 || (h->voted_for != SC_ELECT_NONE && h->voted_for >= c->n_members))
        return sc_errf(err, errlen, -EINVAL, "hard state: term or voted_for out of range");
    return 0;
}

int sc_elect_new(const sc_elect_config_t *cfg, const sc_elect_hard_state_t *hard, int64_t now,
                 sc_elect_t **ret_e, char *err, size_t errlen)
{
    sc_elect_t *e;
    int rc;

    if (!cfg || !ret_e)
        return sc_errf(err, errlen, -EINVAL, "no settings");
    if ((rc = s_check_config(cfg, hard, err, errlen)) < 0)
        return rc;
    if (!(e = calloc(1, sizeof(*e))) || !(e->names = calloc(cfg->n_members, sizeof(char *))))
        goto nomem;
    for (size_t i = 0; i < cfg->n_members; i++)
        if (!(e->names[i] = strdup(cfg->names[i])))
            goto nomem;
    e->cfg = *cfg;
    e->voters = *cfg->voters;
    e->cfg.names = (const char *const *)e->names;
    e->cfg.voters = &e->voters;
    if (!e->cfg.lease_ms)
        e->cfg.lease_ms = cfg->election_ms - cfg->stall_ms - cfg->election_ms / 20;
    if (e->cfg.lease_ms <= e->cfg.heartbeat_ms) {
        sc_elect_destroy(&e);
        return sc_errf(err, errlen, -EINVAL, "the default lease would not exceed the heartbeat");
    }
    e->quorum = e->voters.n / 2 + 1;
    e->self_slot = s_slot(e, cfg->self);
    e->rng = cfg->seed ^ ((uint64_t)cfg->self * 0xd1b54a32d192ed03ULL);
    e->now = e->started = now;
    e->state = e->self_slot < 0 ? SC_ELECT_NON_VOTER : SC_ELECT_FOLLOWER;
    e->term = hard->term;
    e->voted_for = hard->voted_for;
    e->leader = e->transferee = e->transfer_next = SC_ELECT_NONE;
    e->quiet_until = now + cfg->election_ms; /* it may have acked a round before a restart */
    s_reset_timer(e);
    if (e->voters.n == 1 && e->self_slot == 0)
        e->timeout_at = now; /* the only voter: nobody else can lead, no need to wait */
    e->said_state = e->state;
    e->said_term = e->term;
    e->said_leader = e->leader;
    *ret_e = e;
    return 0;
nomem:
    sc_elect_destroy(&e);
    return sc_errf(err, errlen, -ENOMEM, "out of memory");
}

void sc_elect_destroy(sc_elect_t **pe)
{
    sc_elect_t *e = pe ? *pe : NULL;
    if (!e)
        return;
    if (e->names)
        for (size_t i = 0; i < e->cfg.n_members; i++)
            free(e->names[i]);
    free(e->names);
    free(e);
    *pe = NULL;
}

static void s_begin(sc_elect_t *e, int64_t now, sc_elect_outputs_t *out)
{
    out->n = 0;
    out->append_accepted = false;
    if (now > e->now) /* the caller's clock never goes back; if it did, time stands still */
        e->now = now;
}

void sc_elect_tick(sc_elect_t *e, int64_t now, sc_elect_outputs_t *out)
{
    char why[128];

    s_begin(e, now, out);
    if (e->state == SC_ELECT_LEADER) {
        if (e->transferee != SC_ELECT_NONE && e->now >= e->transfer_until) {
            if (e->timeout_now_sent) {
                size_t next = e->transfer_next;
                int ns = next != SC_ELECT_NONE ? s_slot(e, next) : -1;
                /* we never act again in this term (rule 6): the second choice, caught up and
                 * heard within the last heartbeats, campaigns now rather than after an
                 * election timeout (nemesis seed 87: the target had been stopped 20 ms
                 * before the handover; the approval came 0.1 s after NotBefore) */
                if (ns >= 0 && next != e->transferee && e->match[ns] >= e->last_index &&
                    e->now - e->heard[ns] <= 2 * e->cfg.heartbeat_ms) {
                    s_send(e, out, SC_ELECT_MSG_TIMEOUT_NOW, next, e->term);
                    snprintf(why, sizeof(why),
                             "transfer to %s not done within %" PRId64 " ms: handed to %s",
                             s_name(e, e->transferee), e->cfg.election_ms, s_name(e, next));
                } else {
                    snprintf(why, sizeof(why), "transfer to %s not done within %" PRId64 " ms",
                             s_name(e, e->transferee), e->cfg.election_ms);
                }
                s_fire(e, out, SC_ELECT_EV_TRANSFER_FAILED, e->transferee, why);
            } else {
                s_notice(out, e->transferee,
                         "transfer to %s abandoned: its log did not catch up within %" PRId64 " ms",
                         s_name(e, e->transferee), e->cfg.election_ms);
                e->transferee = e->transfer_next = SC_ELECT_NONE;
            }
        }
        if (e->state == SC_ELECT_LEADER && e->cfg.check_quorum &&
            e->now - s_quorum_time(e, e->heard, e->now) >= e->cfg.election_ms) {
            size_t heard = 0;
            for (size_t i = 0; i < e->voters.n; i++)
                heard += (int)i == e->self_slot || e->now - e->heard[i] < e->cfg.election_ms;
            snprintf(why, sizeof(why),
                     "check quorum: heard from %zu of %zu voters within %" PRId64 " ms", heard,
                     e->voters.n, e->cfg.election_ms);
            s_fire(e, out, SC_ELECT_EV_QUORUM_LOST, SC_ELECT_NONE, why);
        }
        if (e->state == SC_ELECT_LEADER && e->now >= e->next_beat)
            s_heartbeat(e, out);
    } else if (e->state != SC_ELECT_NON_VOTER && e->now >= e->timeout_at && e->held[0]) {
        s_ask_again(e, out); /* held: no campaign, but the voters are heard */
    } else if (e->state != SC_ELECT_NON_VOTER && e->now >= e->timeout_at) {
        if (e->state == SC_ELECT_FOLLOWER)
            snprintf(why, sizeof(why), "election timeout: no leader heard for %" PRId64 " ms",
                     e->now - (e->leader_heard > e->started ? e->leader_heard : e->started));
        else
            snprintf(why, sizeof(why), "election timeout: the %s was not decided",
                     e->state == SC_ELECT_PRE_CANDIDATE ? "pre-vote" : "vote");
        s_fire(e, out, SC_ELECT_EV_TIMEOUT, SC_ELECT_NONE, why);
    }
    s_end(e, out);
}

int sc_elect_step(sc_elect_t *e, int64_t now, const sc_elect_msg_t *m, sc_elect_outputs_t *out)
{
    if (!e || !m || !out)
        return -EINVAL;
    out->n = 0;
    out->append_accepted = false;
    if ((unsigned)m->type >= SC_ELECT_MSG_MAX || m->from >= e->cfg.n_members ||
        m->from == e->cfg.self || m->to != e->cfg.self || m->term < 0)
        return -EINVAL;
    s_begin(e, now, out);
    switch (m->type) {
    case SC_ELECT_MSG_PRE_VOTE:
    case SC_ELECT_MSG_VOTE: s_on_vote_request(e, out, m); break;
    case SC_ELECT_MSG_PRE_VOTE_ANSWER:
    case SC_ELECT_MSG_VOTE_ANSWER: s_on_vote_answer(e, out, m); break;
    case SC_ELECT_MSG_APPEND: s_on_append(e, out, m); break;
    case SC_ELECT_MSG_APPEND_ANSWER: s_on_append_answer(e, out, m); break;
    case SC_ELECT_MSG_TIMEOUT_NOW: s_on_timeout_now(e, out, m); break;
    default: break;
    }
    s_end(e, out);
    return 0;
}

void sc_elect_stall(sc_elect_t *e, int64_t now, sc_elect_outputs_t *out)
{
    s_begin(e, now, out);
    if (e->state == SC_ELECT_LEADER) {
        /* Nothing acknowledged before now is trusted: the clock may have stood still. */
        e->tilt = true;
        e->min_round = e->last_round;
        memset(e->acked, 0, sizeof(e->acked));
        s_notice(out, SC_ELECT_NONE,
                 "stall: not acting until a quorum confirms the lead of term %" PRId64, e->term);
        s_heartbeat(e, out);
        if (e->quorum == 1)
            e->tilt = false; /* a single voter is its own quorum */
    }
    s_end(e, out);
}

void sc_elect_hold(sc_elect_t *e, int64_t now, const char *why, sc_elect_outputs_t *out)
{
    char reason[SC_ELECT_TEXT_MAX + 1];

    s_begin(e, now, out);
    if (!why || !why[0]) {
        if (e->held[0])
            s_notice(out, SC_ELECT_NONE, "no longer held back from leading (was: %s)", e->held);
        e->held[0] = '\0';
    } else if (strcmp(why, e->held) != 0) {
        snprintf(e->held, sizeof(e->held), "%s", why);
        s_notice(out, SC_ELECT_NONE, "held back from leading: %s", e->held);
        snprintf(reason, sizeof(reason), "held back: %s", e->held);
        s_fire(e, out, SC_ELECT_EV_HELD, SC_ELECT_NONE, reason);
    }
    s_end(e, out);
}

bool sc_elect_held(const sc_elect_t *e)
{
    return e && e->held[0];
}

int sc_elect_transfer(sc_elect_t *e, size_t to, int64_t now, sc_elect_outputs_t *out)
{
    int slot;

    if (!e || !out)
        return -EINVAL;
    out->n = 0;
    out->append_accepted = false;
    if (e->state != SC_ELECT_LEADER)
        return SC_E_STATE;
    if (to >= e->cfg.n_members || to == e->cfg.self || (slot = s_slot(e, to)) < 0)
        return -EINVAL;
    if (e->transferee == to)
        return 0;
    if (e->timeout_now_sent)
        return SC_E_STATE;
    s_begin(e, now, out);
    e->transferee = to;
    e->transfer_until = e->now + e->cfg.election_ms;
    s_notice(out, to, "transferring the lead of term %" PRId64 " to %s", e->term, s_name(e, to));
    if (e->match[slot] >= e->last_index) {
        s_send(e, out, SC_ELECT_MSG_TIMEOUT_NOW, to, e->term);
        e->timeout_now_sent = true;
    } else {
        s_heartbeat(e, out); /* its answer tells when it caught up */
    }
    s_end(e, out);
    return 0;
}

int sc_elect_transfer_next(sc_elect_t *e, size_t next)
{
    if (!e || e->state != SC_ELECT_LEADER || e->transferee == SC_ELECT_NONE)
        return SC_E_STATE;
    if (next != SC_ELECT_NONE && (next >= e->cfg.n_members || next == e->cfg.self ||
                                  next == e->transferee || s_slot(e, next) < 0))
        return -EINVAL;
    e->transfer_next = next;
    return 0;
}

int sc_elect_set_log(sc_elect_t *e, int64_t last_index, int64_t last_term, int64_t commit)
{
    if (!e || last_index < 0 || last_term < 0 || commit < 0 || commit > last_index)
        return -EINVAL;
    e->last_index = last_index;
    e->last_term = last_term;
    e->commit = commit;
    return 0;
}

void sc_elect_append_answer(const sc_elect_t *e, const sc_elect_msg_t *m, bool ok, int64_t match,
                            sc_elect_msg_t *ret_answer)
{
    memset(ret_answer, 0, sizeof(*ret_answer));
    ret_answer->type = SC_ELECT_MSG_APPEND_ANSWER;
    ret_answer->from = e->cfg.self;
    ret_answer->to = m->from;
    ret_answer->term = e->term;
    ret_answer->round = m->round;
    ret_answer->ok = ok;
    ret_answer->match = match;
    ret_answer->last_index = e->last_index;
    ret_answer->last_term = e->last_term;
}

int64_t sc_elect_next_ms(const sc_elect_t *e)
{
    int64_t t;
    if (e->state == SC_ELECT_NON_VOTER)
        return INT64_MAX;
    if (e->state != SC_ELECT_LEADER)
        return e->timeout_at;
    t = e->next_beat;
    if (e->transferee != SC_ELECT_NONE && e->transfer_until < t)
        t = e->transfer_until;
    if (e->cfg.check_quorum && s_quorum_time(e, e->heard, e->now) + e->cfg.election_ms < t)
        t = s_quorum_time(e, e->heard, e->now) + e->cfg.election_ms;
    return t;
}

sc_elect_state_t sc_elect_state(const sc_elect_t *e)
{
    return e->state;
}

int64_t sc_elect_term(const sc_elect_t *e)
{
    return e->term;
}

size_t sc_elect_leader(const sc_elect_t *e)
{
    return e->leader;
}

int64_t sc_elect_leader_contact_ms(const sc_elect_t *e)
{
    return e->state == SC_ELECT_LEADER ? s_quorum_time(e, e->heard, e->now) : e->leader_heard;
}

sc_elect_hard_state_t sc_elect_hard_state(const sc_elect_t *e)
{
    return (sc_elect_hard_state_t){.term = e->term, .voted_for = e->voted_for};
}

bool sc_elect_tilted(const sc_elect_t *e)
{
    return e->tilt;
}

const char *sc_elect_role(const sc_elect_t *e)
{
    switch (e->state) {
    case SC_ELECT_LEADER: return "leader";
    case SC_ELECT_FOLLOWER: return "voter";
    case SC_ELECT_NON_VOTER: return "follower";
    default: return "candidate";
    }
}
