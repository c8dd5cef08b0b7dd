/* sc_elect: the election as a pure state machine. The table against its diagram; the vote
 * rules case by case; the voter selection over fault-domain spreads; TILT, transfer, restart
 * from the persisted hard state on one member. */
#include "sc_elect.h"
#include "sc_error.h"
#include "sc_test.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T SC_ELECT_ELECTION_MS /* the election timeout every test runs with (the default) */
#define H SC_ELECT_HEARTBEAT_MS

static const char *const s_names[] = {"vm_0", "vm_1", "vm_2", "vm_3", "vm_4", "vm_5", "vm_6"};

/* The first k of n members as voters (each in its own fault domain). */
static sc_elect_voters_t s_first_voters(size_t n, size_t k)
{
    sc_elect_member_t m[8];
    sc_elect_voters_t v = {0};
    for (size_t i = 0; i < n; i++)
        m[i] = (sc_elect_member_t){.name = s_names[i], .fault_domain = (int)(i % k)};
    if (sc_elect_voters(m, n, (int)k, &v) < 0)
        SC_FAILF("sc_elect_voters(%zu, %zu)", n, k);
    return v;
}

static sc_elect_t *s_member(size_t self, size_t n, const sc_elect_voters_t *v,
                            sc_elect_hard_state_t hard, int64_t now, bool check_quorum)
{
    sc_elect_config_t c;
    sc_elect_t *e = NULL;
    char err[256];
    sc_elect_config_default(&c);
    c.self = self;
    c.n_members = n;
    c.names = s_names;
    c.voters = v;
    c.seed = 42;
    c.check_quorum = check_quorum;
    if (sc_elect_new(&c, &hard, now, &e, err, sizeof(err)) < 0)
        SC_FAILF("sc_elect_new: %s", err);
    return e;
}

/* Member self of n (the first k voters), started at 0 with term and no vote. */
static sc_elect_t *s_fresh(size_t self, size_t n, size_t k, int64_t term, sc_elect_voters_t *ret_v)
{
    *ret_v = s_first_voters(n, k);
    return s_member(self, n, ret_v, (sc_elect_hard_state_t){term, SC_ELECT_NONE}, 0, true);
}

static const sc_elect_output_t *s_find(const sc_elect_outputs_t *o, sc_elect_out_kind_t kind,
                                       int msg_type)
{
    for (size_t i = 0; i < o->n; i++)
        if (o->out[i].kind == kind && (msg_type < 0 || (int)o->out[i].msg.type == msg_type))
            return &o->out[i];
    return NULL;
}

static size_t s_count(const sc_elect_outputs_t *o, sc_elect_out_kind_t kind, int msg_type)
{
    size_t n = 0;
    for (size_t i = 0; i < o->n; i++)
        n += o->out[i].kind == kind && (msg_type < 0 || (int)o->out[i].msg.type == msg_type);
    return n;
}

static sc_elect_msg_t s_msg(sc_elect_msg_type_t type, size_t from, size_t to, int64_t term)
{
    sc_elect_msg_t m;
    memset(&m, 0, sizeof(m));
    m.type = type;
    m.from = from;
    m.to = to;
    m.term = term;
    return m;
}

/* ---- the table ------------------------------------------------------------------------- */

/* The matrix in sc_elect.c's comment, read from the source, is the table. */
SC_TEST(table_is_its_diagram)
{
    const char *src = getenv("SC_SRC");
    char path[1024], line[512];
    size_t rows = 0;
    FILE *f;

    SC_REQUIRE(src);
    snprintf(path, sizeof(path), "%s/coordinator/sc_elect.c", src);
    SC_REQUIRE((f = fopen(path, "r")));
    while (fgets(line, sizeof(line), f) && rows < SC_ELECT_STATE_MAX) {
        char cell[SC_ELECT_EV_MAX + 1][32];
        int got =
            sscanf(line, " * %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s", cell[0], cell[1],
                   cell[2], cell[3], cell[4], cell[5], cell[6], cell[7], cell[8], cell[9]);
        sc_elect_state_t s = SC_ELECT_STATE_MAX;
        for (int i = 0; i < SC_ELECT_STATE_MAX; i++)
            if (got == SC_ELECT_EV_MAX + 1 && !strcmp(cell[0], sc_elect_state_name(i)))
                s = (sc_elect_state_t)i;
        if (s == SC_ELECT_STATE_MAX)
            continue;
        rows++;
        for (int ev = 0; ev < SC_ELECT_EV_MAX; ev++) {
            const char *c = cell[ev + 1], *codes = "FPCLN"; /* in state order */
            const char *at = strlen(c) == 1 ? strchr(codes, c[0]) : NULL;
            sc_elect_state_t want = at ? (sc_elect_state_t)(at - codes) : SC_ELECT_STATE_MAX;
            if (!at && strcmp(c, "."))
                SC_FAILF("%s: cell \"%s\"", sc_elect_state_name(s), c);
            if (sc_elect_next_state(s, ev) != want)
                SC_FAILF("%s + %s: table %s, diagram %s", sc_elect_state_name(s),
                         sc_elect_event_name(ev), sc_elect_state_name(sc_elect_next_state(s, ev)),
                         c);
        }
    }
    fclose(f);
    SC_CHECK_INT(rows, SC_ELECT_STATE_MAX);
    SC_CHECK_INT(sc_elect_next_state(SC_ELECT_STATE_MAX, SC_ELECT_EV_TIMEOUT), SC_ELECT_STATE_MAX);
    SC_CHECK_STR(sc_elect_state_name(SC_ELECT_STATE_MAX), "unknown");
}

/* ---- vote rules ------------------------------------------------------------------------ */

/* Member 0 of 3 voters (plus a non-voter, 3), term 5, log (term 4, index 10), asked at a time
 * after its start by member 2 (or 3). */
typedef struct vote_case {
    const char *name;
    sc_elect_msg_type_t type; /* PRE_VOTE or VOTE */
    int64_t term;             /* the request's term */
    int64_t last_term;        /* the candidate's log end */
    int64_t last_index;
    bool transfer;      /* a transfer's campaign */
    bool bad_digest;    /* another voter list */
    size_t from;        /* the candidate (2, or 3: a non-voter) */
    size_t self;        /* the voter asked (0, or 3: a non-voter) */
    size_t voted_for;   /* member 0's vote in term 5 */
    int64_t at;         /* ms after start */
    bool heard_leader;  /* member 1, leader of term 5, was heard at start + 2T */
    bool check_quorum;  /* CheckQuorum on */
    bool want_ok;       /* granted */
    int64_t want_term;  /* member 0's term after */
    bool want_persist;  /* a PERSIST output, before the answer */
    const char *reason; /* part of the refusal's reason */
} vote_case_t;

#define N SC_ELECT_NONE
static const vote_case_t s_vote_cases[] = {
    {"vote newer term, log equal", SC_ELECT_MSG_VOTE, 6, 4, 10, false, false, 2, 0, N, 2 * T, false,
     true, true, 6, true, ""},
    {"vote, log longer", SC_ELECT_MSG_VOTE, 6, 4, 11, false, false, 2, 0, N, 2 * T, false, true,
     true, 6, true, ""},
    {"vote, log shorter", SC_ELECT_MSG_VOTE, 6, 4, 9, false, false, 2, 0, N, 2 * T, false, true,
     false, 6, true, "log behind"},
    {"vote, last term older, longer", SC_ELECT_MSG_VOTE, 6, 3, 50, false, false, 2, 0, N, 2 * T,
     false, true, false, 6, true, "log behind"},
    {"vote, last term newer, shorter", SC_ELECT_MSG_VOTE, 6, 5, 1, false, false, 2, 0, N, 2 * T,
     false, true, true, 6, true, ""},
    {"vote, same term, voted for another", SC_ELECT_MSG_VOTE, 5, 4, 10, false, false, 2, 0, 1,
     2 * T, false, true, false, 5, false, "already voted for vm_1"},
    {"vote, same term, voted for it (repeat)", SC_ELECT_MSG_VOTE, 5, 4, 10, false, false, 2, 0, 2,
     2 * T, false, true, true, 5, true, ""},
    {"vote, older term", SC_ELECT_MSG_VOTE, 4, 4, 10, false, false, 2, 0, N, 2 * T, false, true,
     false, 5, false, "older"},
    {"vote within T of the start", SC_ELECT_MSG_VOTE, 6, 4, 10, false, false, 2, 0, N, T / 2, false,
     true, false, 5, false, "started"},
    {"transfer vote within T of the start", SC_ELECT_MSG_VOTE, 6, 4, 10, true, false, 2, 0, N,
     T / 2, false, true, true, 6, true, ""},
    {"vote within T of the start, no CheckQuorum", SC_ELECT_MSG_VOTE, 6, 4, 10, false, false, 2, 0,
     N, T / 2, false, false, true, 6, true, ""},
    {"vote, leader heard T/2 ago", SC_ELECT_MSG_VOTE, 6, 4, 10, false, false, 2, 0, N,
     2 * T + T / 2, true, true, false, 5, false, "leader was heard"},
    {"transfer vote, leader heard T/2 ago", SC_ELECT_MSG_VOTE, 6, 4, 10, true, false, 2, 0, N,
     2 * T + T / 2, true, true, true, 6, true, ""},
    {"vote, leader heard T ago", SC_ELECT_MSG_VOTE, 6, 4, 10, false, false, 2, 0, N, 3 * T, true,
     true, true, 6, true, ""},
    {"vote, same term, a leader followed", SC_ELECT_MSG_VOTE, 5, 4, 10, false, false, 2, 0, N,
     3 * T, true, true, false, 5, false, "following vm_1"},
    {"pre-vote: granted, term unchanged", SC_ELECT_MSG_PRE_VOTE, 6, 4, 10, false, false, 2, 0, N,
     2 * T, false, true, true, 5, false, ""},
    {"pre-vote, log behind", SC_ELECT_MSG_PRE_VOTE, 6, 4, 9, false, false, 2, 0, N, 2 * T, false,
     true, false, 5, false, "log behind"},
    {"pre-vote, leader heard T/2 ago", SC_ELECT_MSG_PRE_VOTE, 6, 4, 10, false, false, 2, 0, N,
     2 * T + T / 2, true, true, false, 5, false, "leader was heard"},
    {"pre-vote within T of the start", SC_ELECT_MSG_PRE_VOTE, 6, 4, 10, false, false, 2, 0, N,
     T / 2, false, true, false, 5, false, "started"},
    {"pre-vote for a term far ahead", SC_ELECT_MSG_PRE_VOTE, 9, 4, 10, false, false, 2, 0, 1, 2 * T,
     false, true, true, 5, false, ""},
    {"pre-vote, other voters", SC_ELECT_MSG_PRE_VOTE, 6, 4, 10, false, true, 2, 0, N, 2 * T, false,
     true, false, 5, false, "voters differ"},
    {"vote, other voters", SC_ELECT_MSG_VOTE, 6, 4, 10, false, true, 2, 0, N, 2 * T, false, true,
     false, 5, false, "voters differ"},
    {"vote from a non-voter", SC_ELECT_MSG_VOTE, 6, 4, 10, false, false, 3, 0, N, 2 * T, false,
     true, false, 5, false, "vm_3 is not a voter"},
    {"a non-voter asked", SC_ELECT_MSG_VOTE, 6, 4, 10, false, false, 2, 3, N, 2 * T, false, true,
     false, 5, false, "vm_3 is not a voter"},
};
#undef N

SC_TEST(vote_rules)
{
    sc_elect_voters_t v = s_first_voters(4, 3);
    for (size_t i = 0; i < sizeof(s_vote_cases) / sizeof(s_vote_cases[0]); i++) {
        const vote_case_t *c = &s_vote_cases[i];
        sc_elect_hard_state_t hard = {.term = 5, .voted_for = c->voted_for};
        sc_elect_t *e = s_member(c->self, 4, &v, hard, 0, c->check_quorum);
        sc_elect_outputs_t out;
        sc_elect_msg_t m = s_msg(c->type, c->from, c->self, c->term);
        const sc_elect_output_t *ans, *per;

        if (!e)
            continue;
        sc_elect_set_log(e, 10, 4, 8);
        if (c->heard_leader) {
            sc_elect_msg_t a = s_msg(SC_ELECT_MSG_APPEND, 1, c->self, 5);
            sc_elect_step(e, 2 * T, &a, &out);
            if (!out.append_accepted)
                SC_FAILF("%s: the leader's append refused", c->name);
        }
        m.last_term = c->last_term;
        m.last_index = c->last_index;
        m.transfer = c->transfer;
        snprintf(m.digest, sizeof(m.digest), "%s", c->bad_digest ? "0123456789abcdef" : v.digest);
        SC_CHECK_INT(sc_elect_step(e, c->at, &m, &out), 0);
        ans = s_find(&out, SC_ELECT_OUT_SEND,
                     c->type == SC_ELECT_MSG_VOTE ? SC_ELECT_MSG_VOTE_ANSWER
                                                  : SC_ELECT_MSG_PRE_VOTE_ANSWER);
        per = s_find(&out, SC_ELECT_OUT_PERSIST, -1);
        if (!ans) {
            SC_FAILF("%s: no answer", c->name);
        } else {
            if (ans->msg.ok != c->want_ok)
                SC_FAILF("%s: granted %d (%s)", c->name, ans->msg.ok, ans->msg.reason);
            if (ans->msg.to != c->from)
                SC_FAILF("%s: answer to %zu", c->name, ans->msg.to);
            /* granted: the request's term; refused: the voter's */
            if (ans->msg.term != (c->want_ok ? c->term : sc_elect_term(e)))
                SC_FAILF("%s: answer term %" PRId64, c->name, ans->msg.term);
            if (!strstr(ans->msg.reason, c->reason))
                SC_FAILF("%s: reason \"%s\", expected \"%s\"", c->name, ans->msg.reason, c->reason);
        }
        if (sc_elect_term(e) != c->want_term)
            SC_FAILF("%s: term %" PRId64 ", expected %" PRId64, c->name, sc_elect_term(e),
                     c->want_term);
        if (!!per != c->want_persist)
            SC_FAILF("%s: persist %d", c->name, !!per);
        if (per && (per != &out.out[0] || s_count(&out, SC_ELECT_OUT_PERSIST, -1) != 1))
            SC_FAILF("%s: the persist is not the one first output", c->name);
        if (per && (per->hard.term != sc_elect_term(e) ||
                    per->hard.voted_for != sc_elect_hard_state(e).voted_for))
            SC_FAILF("%s: persisted (%" PRId64 ", %zu)", c->name, per->hard.term,
                     per->hard.voted_for);
        if (c->want_ok && c->type == SC_ELECT_MSG_VOTE &&
            sc_elect_hard_state(e).voted_for != c->from)
            SC_FAILF("%s: voted_for %zu", c->name, sc_elect_hard_state(e).voted_for);
        sc_elect_destroy(&e);
    }
}

/* A vote given in a term is remembered across a restart from the persisted hard state. */
SC_TEST(vote_once_per_term_across_restart)
{
    sc_elect_voters_t v;
    sc_elect_t *e = s_fresh(0, 3, 3, 3, &v);
    sc_elect_outputs_t out;
    sc_elect_msg_t m = s_msg(SC_ELECT_MSG_VOTE, 1, 0, 7);
    sc_elect_hard_state_t disk = {0, SC_ELECT_NONE};
    const sc_elect_output_t *o;

    SC_REQUIRE(e);
    snprintf(m.digest, sizeof(m.digest), "%s", v.digest);
    sc_elect_step(e, 2 * T, &m, &out);
    SC_REQUIRE((o = s_find(&out, SC_ELECT_OUT_PERSIST, -1)));
    disk = o->hard;
    SC_CHECK_INT(disk.term, 7);
    SC_CHECK_INT(disk.voted_for, 1);
    SC_CHECK(s_find(&out, SC_ELECT_OUT_SEND, SC_ELECT_MSG_VOTE_ANSWER)->msg.ok);
    sc_elect_destroy(&e);
    SC_CHECK(e == NULL);

    /* restarted from what was written: vm_2 asks in the same term, after the quiet period */
    SC_REQUIRE((e = s_member(0, 3, &v, disk, 10 * T, true)));
    m.from = 2;
    sc_elect_step(e, 12 * T, &m, &out);
    SC_REQUIRE((o = s_find(&out, SC_ELECT_OUT_SEND, SC_ELECT_MSG_VOTE_ANSWER)));
    SC_CHECK(!o->msg.ok);
    SC_CHECK(strstr(o->msg.reason, "already voted for vm_1") != NULL);
    /* vm_1 asking again (its answer lost) gets the same vote */
    m.from = 1;
    sc_elect_step(e, 12 * T, &m, &out);
    SC_CHECK(s_find(&out, SC_ELECT_OUT_SEND, SC_ELECT_MSG_VOTE_ANSWER)->msg.ok);
    sc_elect_destroy(&e);
}

/* ---- one member driven by hand ----------------------------------------------------------- */

/* Member 0 of 3 made leader at about 3T: its pre-vote and vote granted by vm_1, its term's
 * entry appended (index 1) and committed by vm_1's answer to the first round. Returns the
 * time. */
static int64_t s_make_leader(sc_elect_t *e, sc_elect_outputs_t *out)
{
    int64_t now = 3 * T;
    sc_elect_msg_t a;
    const sc_elect_output_t *beat;

    sc_elect_tick(e, now, out);
    if (sc_elect_state(e) != SC_ELECT_PRE_CANDIDATE || s_count(out, SC_ELECT_OUT_SEND, 0) != 2)
        SC_FAILF("no pre-vote at %" PRId64, now);
    a = s_msg(SC_ELECT_MSG_PRE_VOTE_ANSWER, 1, 0, sc_elect_term(e) + 1);
    a.ok = true;
    sc_elect_step(e, now, &a, out);
    if (sc_elect_state(e) != SC_ELECT_CANDIDATE || !s_find(out, SC_ELECT_OUT_PERSIST, -1))
        SC_FAILF("pre-vote won, not a candidate");
    a = s_msg(SC_ELECT_MSG_VOTE_ANSWER, 1, 0, sc_elect_term(e));
    a.ok = true;
    sc_elect_step(e, now, &a, out);
    if (sc_elect_state(e) != SC_ELECT_LEADER)
        SC_FAILF("vote won, not the leader");
    if (!(beat = s_find(out, SC_ELECT_OUT_SEND, SC_ELECT_MSG_APPEND)))
        return now;
    sc_elect_set_log(e, 1, sc_elect_term(e), 0); /* the term's entry */
    SC_CHECK(!sc_elect_may_act(e, now));         /* not committed, no round acknowledged */
    a = s_msg(SC_ELECT_MSG_APPEND_ANSWER, 1, 0, sc_elect_term(e));
    a.ok = true;
    a.match = 1;
    a.round = beat->msg.round;
    sc_elect_step(e, now + 2, &a, out);
    SC_CHECK(!sc_elect_may_act(e, now + 2)); /* acknowledged, not committed yet */
    sc_elect_set_log(e, 1, sc_elect_term(e), 1);
    return now + 2;
}

SC_TEST(single_voter_leads_alone)
{
    sc_elect_voters_t v;
    sc_elect_t *e = s_fresh(0, 1, 1, 0, &v);
    sc_elect_outputs_t out;
    SC_REQUIRE(e);
    sc_elect_tick(e, sc_elect_next_ms(e), &out);
    SC_CHECK_INT(sc_elect_state(e), SC_ELECT_LEADER);
    SC_CHECK_INT(sc_elect_term(e), 1);
    SC_CHECK_INT(s_count(&out, SC_ELECT_OUT_ROLE, -1), 3); /* -> pre, -> candidate, -> leader */
    SC_CHECK_INT(s_find(&out, SC_ELECT_OUT_PERSIST, -1)->hard.voted_for, 0);
    sc_elect_set_log(e, 1, 1, 1);
    SC_CHECK(sc_elect_may_act(e, 2 * T));
    SC_CHECK_STR(sc_elect_role(e), "leader");
    sc_elect_destroy(&e);
}

/* TILT: after a stall the leader does not act until a round sent after it is acknowledged by
 * a majority; an answer to an older round does not count. The lease ends on its own too, and
 * CheckQuorum steps down after T without a majority. */
SC_TEST(stall_needs_a_confirming_round)
{
    sc_elect_voters_t v;
    sc_elect_t *e = s_fresh(0, 3, 3, 0, &v);
    sc_elect_outputs_t out;
    sc_elect_msg_t a = s_msg(SC_ELECT_MSG_APPEND_ANSWER, 1, 0, 0);
    int64_t now, old_round;
    const sc_elect_output_t *beat;

    SC_REQUIRE(e);
    now = s_make_leader(e, &out);
    SC_CHECK(sc_elect_may_act(e, now));
    sc_elect_tick(e, now + H, &out); /* a round at now + H */
    SC_REQUIRE((beat = s_find(&out, SC_ELECT_OUT_SEND, SC_ELECT_MSG_APPEND)));
    old_round = beat->msg.round;

    /* the clock stood still across a freeze: same now, but the caller saw the stall */
    sc_elect_stall(e, now + H, &out);
    SC_CHECK(!sc_elect_may_act(e, now + H));
    SC_CHECK(sc_elect_tilted(e));
    SC_CHECK(s_find(&out, SC_ELECT_OUT_NOTICE, -1) != NULL);
    SC_CHECK(s_find(&out, SC_ELECT_OUT_MAY_ACT, -1) &&
             !s_find(&out, SC_ELECT_OUT_MAY_ACT, -1)->may_act);
    SC_REQUIRE((beat = s_find(&out, SC_ELECT_OUT_SEND, SC_ELECT_MSG_APPEND)));
    SC_CHECK(beat->msg.round > old_round);

    a.term = sc_elect_term(e);
    a.ok = true;
    a.match = 1;
    a.round = old_round; /* sent before the stall, answered late */
    sc_elect_step(e, now + H + 1, &a, &out);
    SC_CHECK(!sc_elect_may_act(e, now + H + 1));
    a.round = beat->msg.round;
    sc_elect_step(e, now + H + 2, &a, &out);
    SC_CHECK(sc_elect_may_act(e, now + H + 2));
    SC_CHECK(!sc_elect_tilted(e));
    SC_CHECK(s_find(&out, SC_ELECT_OUT_MAY_ACT, -1) &&
             s_find(&out, SC_ELECT_OUT_MAY_ACT, -1)->may_act);

    /* no answer any more: the lease ends, then CheckQuorum steps down at T after the last */
    now = now + H + 2;
    for (int64_t t = now; t < now + 2 * T && sc_elect_state(e) == SC_ELECT_LEADER;
         t = sc_elect_next_ms(e)) {
        sc_elect_tick(e, t, &out);
        if (sc_elect_may_act(e, t) && t >= a.round + T - SC_ELECT_STALL_MS)
            SC_FAILF("acting at %" PRId64 ", past the lease", t);
        if (sc_elect_state(e) != SC_ELECT_LEADER)
            SC_CHECK(t <= now + T && t >= now + T - H);
    }
    SC_CHECK_INT(sc_elect_state(e), SC_ELECT_FOLLOWER);
    SC_CHECK(strstr(s_find(&out, SC_ELECT_OUT_ROLE, -1)->text, "check quorum") != NULL);
    sc_elect_destroy(&e);
}

SC_TEST(transfer_waits_for_the_log_then_hands_over)
{
    sc_elect_voters_t v;
    sc_elect_t *e = s_fresh(0, 4, 3, 0, &v);
    sc_elect_outputs_t out;
    sc_elect_msg_t a, tn;
    int64_t now, term;
    const sc_elect_output_t *o;

    SC_REQUIRE(e);
    now = s_make_leader(e, &out);
    term = sc_elect_term(e);
    SC_CHECK_INT(sc_elect_transfer(e, 0, now, &out), -EINVAL); /* itself */
    SC_CHECK_INT(sc_elect_transfer(e, 3, now, &out), -EINVAL); /* a non-voter */
    SC_CHECK(sc_elect_may_act(e, now));
    /* vm_2 has not answered: its log is not known to match */
    SC_CHECK_INT(sc_elect_transfer(e, 2, now, &out), 0);
    SC_CHECK(!s_find(&out, SC_ELECT_OUT_SEND, SC_ELECT_MSG_TIMEOUT_NOW));
    SC_CHECK(!sc_elect_may_act(e, now));
    SC_REQUIRE((o = s_find(&out, SC_ELECT_OUT_SEND, SC_ELECT_MSG_APPEND)));
    a = s_msg(SC_ELECT_MSG_APPEND_ANSWER, 2, 0, term);
    a.ok = true;
    a.match = 1;
    a.round = o->msg.round;
    sc_elect_step(e, now + 1, &a, &out);
    SC_REQUIRE((o = s_find(&out, SC_ELECT_OUT_SEND, SC_ELECT_MSG_TIMEOUT_NOW)));
    SC_CHECK_INT(o->msg.to, 2);
    SC_CHECK_INT(o->msg.term, term);
    tn = o->msg;
    SC_CHECK_INT(sc_elect_transfer(e, 1, now + 1, &out), SC_E_STATE); /* already handed over */

    /* the target: campaigns at once, no pre-vote, its requests flagged */
    {
        sc_elect_t *t = s_member(2, 4, &v, (sc_elect_hard_state_t){term, 0}, 0, true);
        sc_elect_msg_t beat = s_msg(SC_ELECT_MSG_APPEND, 0, 2, term);
        SC_REQUIRE(t);
        sc_elect_step(t, now, &beat, &out);
        sc_elect_step(t, now + 2, &tn, &out);
        SC_CHECK_INT(sc_elect_state(t), SC_ELECT_CANDIDATE);
        SC_CHECK_INT(sc_elect_term(t), term + 1);
        SC_CHECK_INT(s_count(&out, SC_ELECT_OUT_SEND, SC_ELECT_MSG_VOTE), 2);
        SC_CHECK(s_find(&out, SC_ELECT_OUT_SEND, SC_ELECT_MSG_VOTE)->msg.transfer);
        SC_CHECK(!s_find(&out, SC_ELECT_OUT_SEND, SC_ELECT_MSG_PRE_VOTE));
        sc_elect_destroy(&t);
    }

    /* no new term within T: the old leader cannot know, it steps down and never acted again */
    for (int64_t t = now + 1; sc_elect_state(e) == SC_ELECT_LEADER && t < now + 3 * T;
         t = sc_elect_next_ms(e)) {
        a.round = 0;
        sc_elect_step(e, t, &a, &out); /* vm_2 still answers in the old term */
        SC_CHECK(!sc_elect_may_act(e, t));
        sc_elect_tick(e, t, &out);
    }
    SC_CHECK_INT(sc_elect_state(e), SC_ELECT_FOLLOWER);
    SC_CHECK(strstr(s_find(&out, SC_ELECT_OUT_ROLE, -1)->text, "transfer to vm_2") != NULL);
    SC_CHECK_INT(sc_elect_transfer(e, 1, now, &out), SC_E_STATE); /* not the leader */
    sc_elect_destroy(&e);
}

/* A transfer whose target never catches up is abandoned after T, and the leader acts again. */
SC_TEST(transfer_abandoned_when_the_target_lags)
{
    sc_elect_voters_t v;
    sc_elect_t *e = s_fresh(0, 3, 3, 0, &v);
    sc_elect_outputs_t out;
    sc_elect_msg_t a;
    int64_t now, t;
    bool noticed = false;

    SC_REQUIRE(e);
    now = s_make_leader(e, &out);
    SC_CHECK_INT(sc_elect_transfer(e, 2, now, &out), 0);
    a = s_msg(SC_ELECT_MSG_APPEND_ANSWER, 1, 0, sc_elect_term(e));
    a.ok = true;
    a.match = 1;
    for (t = now; t <= now + T + H; t += H) {
        sc_elect_tick(e, t, &out);
        noticed |= s_find(&out, SC_ELECT_OUT_NOTICE, -1) &&
                   strstr(s_find(&out, SC_ELECT_OUT_NOTICE, -1)->text, "abandoned");
        if (s_find(&out, SC_ELECT_OUT_SEND, SC_ELECT_MSG_APPEND)) {
            a.round = s_find(&out, SC_ELECT_OUT_SEND, SC_ELECT_MSG_APPEND)->msg.round;
            sc_elect_step(e, t, &a, &out);
        }
        SC_CHECK(!s_find(&out, SC_ELECT_OUT_SEND, SC_ELECT_MSG_TIMEOUT_NOW));
        if (t < now + T)
            SC_CHECK(!sc_elect_may_act(e, t));
    }
    SC_CHECK(noticed);
    SC_CHECK_INT(sc_elect_state(e), SC_ELECT_LEADER);
    SC_CHECK(sc_elect_may_act(e, t - H));
    sc_elect_destroy(&e);
}

SC_TEST(stale_leader_told_the_newer_term)
{
    sc_elect_voters_t v;
    sc_elect_t *e = s_fresh(1, 3, 3, 6, &v);
    sc_elect_outputs_t out;
    sc_elect_msg_t m = s_msg(SC_ELECT_MSG_APPEND, 0, 1, 5);
    const sc_elect_output_t *o;
    SC_REQUIRE(e);
    m.round = 77;
    SC_CHECK_INT(sc_elect_step(e, 10, &m, &out), 0);
    SC_CHECK(!out.append_accepted);
    SC_REQUIRE((o = s_find(&out, SC_ELECT_OUT_SEND, SC_ELECT_MSG_APPEND_ANSWER)));
    SC_CHECK_INT(o->msg.term, 6);
    SC_CHECK_INT(o->msg.round, 77);
    SC_CHECK(!o->msg.ok);
    /* the current one is followed */
    m.term = 6;
    sc_elect_step(e, 20, &m, &out);
    SC_CHECK(out.append_accepted);
    SC_CHECK_INT(sc_elect_leader(e), 0);
    SC_CHECK_INT(sc_elect_leader_contact_ms(e), 20);
    SC_CHECK_STR(sc_elect_role(e), "voter");
    SC_REQUIRE((o = s_find(&out, SC_ELECT_OUT_ROLE, -1)));
    SC_CHECK(strstr(o->text, "leader=vm_0") != NULL);
    sc_elect_destroy(&e);
}

SC_TEST(bad_input_refused_unchanged)
{
    sc_elect_voters_t v, bad;
    sc_elect_t *e = s_fresh(1, 3, 3, 6, &v);
    sc_elect_outputs_t out;
    sc_elect_msg_t m = s_msg(SC_ELECT_MSG_APPEND, 0, 1, 9);
    sc_elect_config_t c;
    sc_elect_hard_state_t hard = {0, SC_ELECT_NONE};
    char err[256];
    sc_elect_t *x = NULL;
    static const struct {
        size_t from, to;
        int type;
        int64_t term;
    } bad_msgs[] = {{5, 1, SC_ELECT_MSG_APPEND, 9},  {1, 1, SC_ELECT_MSG_APPEND, 9},
                    {0, 2, SC_ELECT_MSG_APPEND, 9},  {0, 1, SC_ELECT_MSG_MAX, 9},
                    {0, 1, SC_ELECT_MSG_APPEND, -1}, {0, 1, -1, 9}};

    SC_REQUIRE(e);
    bad = v;
    for (size_t i = 0; i < sizeof(bad_msgs) / sizeof(bad_msgs[0]); i++) {
        m.from = bad_msgs[i].from;
        m.to = bad_msgs[i].to;
        m.type = (sc_elect_msg_type_t)bad_msgs[i].type;
        m.term = bad_msgs[i].term;
        SC_CHECK_INT(sc_elect_step(e, 10, &m, &out), -EINVAL);
        SC_CHECK_INT(out.n, 0);
        SC_CHECK_INT(sc_elect_term(e), 6);
    }
    SC_CHECK_INT(sc_elect_set_log(e, 3, 1, 4), -EINVAL);
    sc_elect_destroy(&e);

    sc_elect_config_default(&c);
    c.n_members = 3;
    c.names = s_names;
    c.voters = &v;
    c.self = 3;
    SC_CHECK_INT(sc_elect_new(&c, &hard, 0, &x, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "self") != NULL);
    c.self = 0;
    c.heartbeat_ms = T;
    SC_CHECK_INT(sc_elect_new(&c, &hard, 0, &x, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "heartbeat") != NULL);
    c.heartbeat_ms = H;
    c.lease_ms = T - SC_ELECT_STALL_MS;
    SC_CHECK_INT(sc_elect_new(&c, &hard, 0, &x, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "lease") != NULL);
    c.lease_ms = 0;
    bad.n = 2;
    c.voters = &bad;
    SC_CHECK_INT(sc_elect_new(&c, &hard, 0, &x, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "voters") != NULL);
    c.voters = &v;
    hard.voted_for = 3;
    SC_CHECK_INT(sc_elect_new(&c, &hard, 0, &x, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "hard state") != NULL);
    SC_CHECK(x == NULL);
    sc_elect_destroy(&x); /* takes NULL */
}

/* ---- voters ------------------------------------------------------------------------------ */

typedef struct voters_case {
    const char *name;
    int fd[12];       /* fault domains, -2 ends */
    int want;         /* 0: default */
    int rc;           /* 0, SC_ELECT_VOTERS_UNSPREAD, -EINVAL */
    size_t voters[7]; /* expected indices (rc >= 0) */
    size_t n;         /* expected count */
    int max_in_one;   /* expected */
} voters_case_t;

#define E -2
#define U SC_ELECT_VOTERS_UNSPREAD
static const voters_case_t s_voters_cases[] = {
    {"3 FDs x 3, Azure order", {0, 1, 2, 0, 1, 2, 0, 1, 2, E}, 0, 0, {0, 1, 2}, 3, 1},
    {"3 FDs x 3, grouped", {0, 0, 0, 1, 1, 1, 2, 2, 2, E}, 0, 0, {0, 3, 6}, 3, 1},
    {"3 FDs x 3, setting 5", {0, 1, 2, 0, 1, 2, 0, 1, 2, E}, 5, 0, {0, 1, 2, 3, 4}, 5, 2},
    {"2 FDs x 3", {0, 1, 0, 1, 0, 1, E}, 0, U, {0, 1, 2}, 3, 2},
    {"2 FDs, setting 5", {0, 1, 0, 1, 0, 1, E}, 5, U, {0, 1, 2, 3, 4}, 5, 3},
    {"1 FD", {0, 0, 0, 0, E}, 0, U, {0, 1, 2}, 3, 3},
    {"5 FDs x 1", {0, 1, 2, 3, 4, E}, 0, 0, {0, 1, 2, 3, 4}, 5, 1},
    {"9 members, 5 FDs", {0, 1, 2, 3, 4, 0, 1, 2, 3, E}, 0, 0, {0, 1, 2, 3, 4}, 5, 1},
    {"9 members, 5 FDs, late ones", {0, 0, 0, 1, 1, 2, 2, 3, 4, E}, 0, 0, {0, 3, 5, 7, 8}, 5, 1},
    {"9 members, 5 FDs, setting 3", {0, 1, 2, 3, 4, 0, 1, 2, 3, E}, 3, 0, {0, 1, 2}, 3, 1},
    {"4 FDs x 2", {0, 1, 2, 3, 0, 1, 2, 3, E}, 0, 0, {0, 1, 2}, 3, 1},
    {"6 FDs, setting 7", {0, 1, 2, 3, 4, 5, 0, 1, E}, 7, 0, {0, 1, 2, 3, 4, 5, 6}, 7, 2},
    {"1 member", {0, E}, 0, U, {0}, 1, 1},
    {"2 members", {0, 1, E}, 0, U, {0}, 1, 1},
    {"4 members, 2 FDs", {0, 0, 1, 1, E}, 0, U, {0, 1, 2}, 3, 2},
    {"unknown FDs", {-1, -1, -1, E}, 0, U, {0, 1, 2}, 3, 3},
    {"known first, unknown last", {-1, 0, -1, 1, E}, 0, U, {0, 1, 3}, 3, 1},
    {"3 known FDs and unknowns", {-1, 0, 1, 2, E}, 0, 0, {1, 2, 3}, 3, 1},
    {"setting even", {0, 1, 2, E}, 4, -EINVAL, {0}, 0, 0},
    {"setting 9", {0, 1, 2, E}, 9, -EINVAL, {0}, 0, 0},
    {"FD out of range", {0, 1, 1024, E}, 0, -EINVAL, {0}, 0, 0},
    {"no member", {E}, 0, -EINVAL, {0}, 0, 0},
};
#undef E
#undef U

SC_TEST(voters_spread_over_fault_domains)
{
    static const char *const names[] = {"a0", "a1", "a2", "a3", "a4",  "a5",
                                        "a6", "a7", "a8", "a9", "a10", "a11"};
    for (size_t i = 0; i < sizeof(s_voters_cases) / sizeof(s_voters_cases[0]); i++) {
        const voters_case_t *c = &s_voters_cases[i];
        sc_elect_member_t m[12];
        sc_elect_voters_t v, again;
        size_t n = 0;
        int rc;
        for (; c->fd[n] != -2; n++)
            m[n] = (sc_elect_member_t){.name = names[n], .fault_domain = c->fd[n]};
        memset(&v, 0x5a, sizeof(v));
        rc = sc_elect_voters(m, n, c->want, &v);
        if (rc != c->rc) {
            SC_FAILF("%s: rc %d, expected %d", c->name, rc, c->rc);
            continue;
        }
        if (rc < 0)
            continue;
        if (v.n != c->n || v.max_in_one_domain != c->max_in_one ||
            memcmp(v.index, c->voters, c->n * sizeof(size_t)) != 0) {
            char got[64] = "";
            for (size_t k = 0; k < v.n && k < 7; k++)
                snprintf(got + strlen(got), sizeof(got) - strlen(got), " %zu", v.index[k]);
            SC_FAILF("%s: voters%s (max %d in one FD)", c->name, got, v.max_in_one_domain);
        }
        SC_CHECK_INT(strlen(v.digest), SC_ELECT_DIGEST_LEN);
        sc_elect_voters(m, n, c->want, &again); /* deterministic */
        SC_CHECK_STR(again.digest, v.digest);
    }
    /* the digest names the voters: another order of the list, another list */
    {
        sc_elect_member_t a[3] = {{"x", 0}, {"y", 1}, {"z", 2}},
                          b[3] = {{"y", 1}, {"x", 0}, {"z", 2}};
        sc_elect_voters_t va, vb;
        SC_CHECK_INT(sc_elect_voters(a, 3, 0, &va), 0);
        SC_CHECK_INT(sc_elect_voters(b, 3, 0, &vb), 0);
        SC_CHECK(strcmp(va.digest, vb.digest) != 0);
        a[1].name = NULL;
        SC_CHECK_INT(sc_elect_voters(a, 3, 0, &va), -EINVAL);
    }
}

int main(void)
{
    SC_RUN(table_is_its_diagram);
    SC_RUN(vote_rules);
    SC_RUN(vote_once_per_term_across_restart);
    SC_RUN(single_voter_leads_alone);
    SC_RUN(stall_needs_a_confirming_round);
    SC_RUN(transfer_waits_for_the_log_then_hands_over);
    SC_RUN(transfer_abandoned_when_the_target_lags);
    SC_RUN(stale_leader_told_the_newer_term);
    SC_RUN(bad_input_refused_unchanged);
    SC_RUN(voters_spread_over_fault_domains);
    return sc_test_done();
}
