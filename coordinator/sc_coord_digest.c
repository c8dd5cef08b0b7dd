/* The members digest between coordinators (issue 20; docs/design.md, "Members that disagree").
 *
 * Every coordinator-to-coordinator message carries the sender's digest of what decides the
 * voters (--members and --voters: sc_voters_members_digest, c->members_hash). Members that
 * disagree on it may choose different voters, and two groups with disjoint majorities of their
 * own voter lists would each elect a leader in the same term. So, like etcd refusing a peer of
 * another cluster ID, a receiver compares the digest before anything else (sc_coord_raft.c's
 * s_on_peer calls sc_coord_digest_check first; sc_coord_raft_send stamps ours):
 *
 *   1. A message of another digest is refused: neither the election nor the log sees it, its
 *      term included.
 *   2. It is said: a warning naming the peer and both digests (again every S_WARN_EVERY_MS
 *      while it lasts), an ALERT members_mismatch once per peer and digest, a counter, the
 *      status field "members_mismatch" and the metrics made from it.
 *   3. A request is answered with a refusal that carries our digest (a vote not granted, an
 *      append_ack not successful), so that its sender hears the disagreement too: a member
 *      never learns of a voter's disagreement otherwise, as most of what it hears from a voter
 *      are answers to its own requests. Answers and timeout_now are not answered (no ping-pong).
 *   4. While a voter of our own list disagrees, we are held back from leading (sc_elect_hold):
 *      a leader steps down at once, a candidate gives up, no campaign, no vote given. A leader
 *      hears every voter within a heartbeat (its appends are answered) and a candidate within
 *      a round trip, so a group whose voter list holds a member of the other group never keeps
 *      a leader once that member answers. Held, its election timeouts still ask the voters, so
 *      it hears the disagreeing voter again: the hold ends once that voter is heard agreeing.
 *   5. A non-voter that disagrees holds nothing back (our voters agree: our group may lead);
 *      its record is forgotten when it is not heard for S_FORGET_MS (it may have been set right
 *      and talk to someone else now). A voter's record ends only by hearing it agree.
 *
 * The alert is a log line and a counter, not a decision-log entry: it is found in the middle of
 * the election and the replication (possibly inside a commit wait, where no decision may be
 * appended), most members that find it cannot lead, and the log a leader would write it to is
 * replicated by the very members whose configuration is in dispute. */
#include "sc_coord_int.h"

#include "sc_error.h"
#include "sc_log.h"
#include "sc_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_WARN_EVERY_MS 60000 /* a mismatch that lasts is warned of again this often */
#define S_FORGET_MS 10000     /* a non-voter's mismatch not heard again for this long goes */

/* What we know of one member's digest when it differs from ours. */
typedef struct s_peer {
    char theirs[SC_MSG_HASH_MAX + 1];  /* its digest ("": it agrees, or never heard) */
    char alerted[SC_MSG_HASH_MAX + 1]; /* the digest the ALERT was raised for */
    int64_t since_wall_ms;             /* wall ms it was first heard with it (for people) */
    int64_t last_ms;                   /* monotonic ms it was last heard with it */
    int64_t warned_ms;                 /* monotonic ms of the last warning */
    uint64_t refused;                  /* its messages refused since that warning */
} s_peer_t;

struct sc_cdigest {
    s_peer_t *peer;   /* per member, in c->members' order */
    uint64_t refused; /* peer messages refused since the process started */
};

static bool s_is_voter(const sc_coord_t *c, size_t mi)
{
    return mi != c->self && sc_voters_has(&c->voters, mi);
}

static sc_cdigest_t *s_get(sc_coord_t *c)
{
    if (!c->digest && (c->digest = calloc(1, sizeof(*c->digest))) &&
        !(c->digest->peer = calloc(c->n_members, sizeof(*c->digest->peer)))) {
        free(c->digest);
        c->digest = NULL;
    }
    return c->digest;
}

/* The voter of ours that disagrees and was first heard so (SC_PLAN_NONE: none). */
static size_t s_first_voter(const sc_coord_t *c)
{
    size_t best = SC_PLAN_NONE;
    for (size_t k = 0; c->digest && k < c->voters.n; k++) {
        size_t vi = c->voters.index[k];
        const s_peer_t *p = &c->digest->peer[vi];
        if (vi != c->self && p->theirs[0] &&
            (best == SC_PLAN_NONE || p->since_wall_ms < c->digest->peer[best].since_wall_ms))
            best = vi;
    }
    return best;
}

/* Holds the election back while a voter of ours disagrees, lets it go when none does. */
static int s_hold(sc_coord_t *c)
{
    size_t vi = s_first_voter(c);
    char why[128] = "";
    sc_elect_outputs_t out;

    if (!c->raft || !c->raft->e)
        return 0;
    if (vi != SC_PLAN_NONE)
        snprintf(why, sizeof(why), "voter %.32s runs with members digest %.16s, ours %.16s",
                 c->members[vi].name, c->digest->peer[vi].theirs, c->members_hash);
    if (!why[0] && !sc_elect_held(c->raft->e))
        return 0;
    sc_elect_hold(c->raft->e, sc_mono_ms(), why, &out);
    return sc_coord_raft_outputs(c, &out);
}

/* Rule 3: a request refused is answered, with our digest (stamped by sc_coord_raft_send). */
static void s_answer(sc_coord_t *c, size_t mi, const sc_msg_t *msg, const char *reason)
{
    int64_t term = c->raft && c->raft->e ? sc_elect_term(c->raft->e) : c->term;
    sc_msg_type_t type = msg->type == SC_MSG_VOTE_REQUEST ? SC_MSG_VOTE : SC_MSG_APPEND_ACK;
    sc_msg_t *m = NULL;

    if (msg->type != SC_MSG_VOTE_REQUEST && msg->type != SC_MSG_APPEND &&
        msg->type != SC_MSG_SNAPSHOT)
        return;
    if (sc_msg_new(type, c->name, (uint64_t)(term < 0 ? 0 : term), ++c->seq, &m) < 0)
        return;
    if (type == SC_MSG_VOTE) {
        m->vote.pre_vote = msg->vote_request.pre_vote;
        sc_msg_set_text(&m->vote.reason, reason, strlen(reason), false);
    } else {
        m->append_ack.round = msg->type == SC_MSG_APPEND ? msg->append.round : msg->snapshot.round;
    }
    sc_coord_raft_send(c, mi, m, true);
    sc_msg_destroy(&m);
}

/* Rule 5: non-voters not heard for S_FORGET_MS are forgotten. */
static void s_forget(sc_coord_t *c, int64_t now)
{
    for (size_t i = 0; c->digest && i < c->n_members; i++) {
        s_peer_t *p = &c->digest->peer[i];
        if (p->theirs[0] && !s_is_voter(c, i) && now - p->last_ms >= S_FORGET_MS) {
            sc_log_notice("members mismatch forgotten: not heard since", "peer=%s theirs=%s",
                          c->members[i].name, p->theirs);
            p->theirs[0] = '\0';
        }
    }
}

void sc_coord_digest_stamp(const sc_coord_t *c, sc_msg_t *msg)
{
    snprintf(msg->members_digest, sizeof(msg->members_digest), "%s", c->members_hash);
}

int sc_coord_digest_check(sc_coord_t *c, size_t mi, const sc_msg_t *msg)
{
    const char *theirs = msg->members_digest;
    int64_t now = sc_mono_ms();
    bool voter = s_is_voter(c, mi), is_new;
    char reason[512];
    s_peer_t *p;

    if (!theirs[0]) /* an older coordinator's: nothing to compare */
        return 0;
    if (strcmp(theirs, c->members_hash) == 0) {
        if (!c->digest || !c->digest->peer[mi].theirs[0])
            return 0;
        p = &c->digest->peer[mi];
        sc_log_notice("members agree again", "peer=%s digest=%s was=%s voter=%s",
                      c->members[mi].name, theirs, p->theirs, voter ? "true" : "false");
        p->theirs[0] = '\0';
        return voter ? s_hold(c) : 0;
    }
    /* rule 1: refused, whatever else it says */
    c->rejected++;
    if (!s_get(c))
        return 1; /* refused all the same, unsaid (out of memory) */
    c->digest->refused++;
    p = &c->digest->peer[mi];
    is_new = strcmp(p->theirs, theirs) != 0;
    if (is_new) {
        snprintf(p->theirs, sizeof(p->theirs), "%s", theirs);
        p->since_wall_ms = sc_wall_ms();
        p->warned_ms = 0;
        p->refused = 0;
    }
    p->last_ms = now;
    p->refused++;
    snprintf(reason, sizeof(reason), "members differ: digest %s here, %.128s from %s",
             c->members_hash, theirs, c->members[mi].name);
    /* rule 2 */
    if (is_new || now - p->warned_ms >= S_WARN_EVERY_MS) {
        sc_log_warn("peer message refused: members differ",
                    "peer=%s ours=%s theirs=%s type=%s voter=%s refused=%llu hint=\"every member "
                    "must run with the same --members (and --voters)\"",
                    c->members[mi].name, c->members_hash, theirs, sc_msg_type_name(msg->type),
                    voter ? "true" : "false", (unsigned long long)p->refused);
        p->warned_ms = now;
        p->refused = 0;
    } else {
        sc_log_debug("peer message refused: members differ", "peer=%s type=%s", c->members[mi].name,
                     sc_msg_type_name(msg->type));
    }
    if (strcmp(p->alerted, theirs) != 0) {
        snprintf(p->alerted, sizeof(p->alerted), "%s", theirs);
        c->count.alerts[SC_ALERT_MEMBERS_MISMATCH]++;
        sc_log_warn("ALERT", "alert=%s event=- member=%s why=\"%s\"",
                    sc_alert_name(SC_ALERT_MEMBERS_MISMATCH), c->members[mi].name,
                    sc_log_q(reason));
    }
    s_answer(c, mi, msg, reason); /* rule 3 */
    s_forget(c, now);
    if (voter) { /* rule 4 */
        int rc = s_hold(c);
        return rc < 0 ? rc : 1;
    }
    return 1;
}

int sc_coord_digest_rehold(sc_coord_t *c)
{
    return s_first_voter(c) == SC_PLAN_NONE ? 0 : s_hold(c);
}

json_object *sc_coord_digest_status(sc_coord_t *c)
{
    size_t show = SC_PLAN_NONE;
    json_object *o, *others;

    if (!c->digest)
        return NULL;
    s_forget(c, sc_mono_ms());
    /* a voter of ours first (it holds us back), else the earliest heard */
    if ((show = s_first_voter(c)) == SC_PLAN_NONE)
        for (size_t i = 0; i < c->n_members; i++)
            if (c->digest->peer[i].theirs[0] &&
                (show == SC_PLAN_NONE ||
                 c->digest->peer[i].since_wall_ms < c->digest->peer[show].since_wall_ms))
                show = i;
    if (show == SC_PLAN_NONE)
        return NULL;
    o = json_object_new_object();
    others = json_object_new_array();
    for (size_t i = 0; i < c->n_members; i++)
        if (i != show && c->digest->peer[i].theirs[0])
            json_object_array_add(others, json_object_new_string(c->members[i].name));
    json_object_object_add(o, "peer", json_object_new_string(c->members[show].name));
    json_object_object_add(o, "ours", json_object_new_string(c->members_hash));
    json_object_object_add(o, "theirs", json_object_new_string(c->digest->peer[show].theirs));
    json_object_object_add(o, "since_ms",
                           json_object_new_int64(c->digest->peer[show].since_wall_ms));
    json_object_object_add(o, "voter", json_object_new_boolean(s_is_voter(c, show)));
    json_object_object_add(o, "others", others);
    return o;
}

uint64_t sc_coord_digest_refused(const sc_coord_t *c)
{
    return c->digest ? c->digest->refused : 0;
}

void sc_coord_digest_free(sc_coord_t *c)
{
    if (!c->digest)
        return;
    free(c->digest->peer);
    free(c->digest);
    c->digest = NULL;
}
