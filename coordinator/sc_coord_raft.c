/* The election (sc_elect) and the decision log's replication, wired into the daemon.
 *
 * Transport (proto/README.md): every member keeps a DEALER (routing id "@NAME") to each voter's
 * ROUTER. A request goes on our DEALER to a voter, or, to a non-voter, on our ROUTER to its
 * DEALER's routing id; an answer goes back on the connection its request came on. So a
 * leader's appends and their acknowledgements travel on its own DEALERs, which the commit wait
 * below polls without touching the ROUTER.
 *
 * Log, a pipeline (etcd's Ready, hashicorp/raft's pipelined appends and group commit): the
 * leader proposes a loop turn's decisions as entries in one transaction (sc_coord_raft_propose:
 * appended, not applied), and at the end of the turn (sc_coord_raft_flush) commits it — one
 * fsync — and sends them to the voters without waiting. Entries commit when a majority stored
 * them (our own counted once durable); then, on every member, they are applied to the store's
 * tables and the state, in order. What an entry makes the leader do — an order, an approval
 * POST or delegation, a notification — is an effect, queued as the entry is applied and
 * carried out by the flush, after the transaction: never before its commit, and only by the
 * leader of the entry's term that may act. Nothing waits for a majority inside the decision
 * path, and nothing is thrown away: an entry is committed, or replaced by a newer term's
 * leader, whose planner derives again from the applied state what is still owed. With one
 * voter, an entry is committed once durable: it is applied as it is proposed, its effects
 * wait for the flush's fsync. A follower stores what its leader sends (Raft's log matching),
 * durably before it answers, and applies it up to the leader's commit index. */
#include "sc_coord_int.h"

#include "sc_elect.h"
#include "sc_error.h"
#include "sc_log.h"
#include "sc_time.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#define S_BATCH_ENTRIES 64      /* entries in one append, at most (a follower's turn) */
#define S_BATCH_BYTES 262144    /* and about this many bytes of data */
#define S_NONVOTER_EVERY_MS 500 /* a non-voter gets what it is owed at most this often */
#define S_NONVOTER_KEEPALIVE_MS                                                                    \
    5000 /* and hears the leader this often when up to date: at                                    \
            1,000 members these are the leader's messages */

static int64_t s_now(void)
{
    return sc_mono_ms();
}

static int s_voter_slot(const sc_coord_t *c, size_t mi)
{
    for (size_t k = 0; k < c->voters.n; k++)
        if (c->voters.index[k] == mi)
            return (int)k;
    return -1;
}

/* ---- sending ------------------------------------------------------------------------------ */

static int s_send_frame(void *sock, const unsigned char *rid, size_t rid_len, const char *buf,
                        size_t len)
{
    if (rid && zmq_send(sock, rid, rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
        return -zmq_errno();
    return zmq_send(sock, buf, len, ZMQ_DONTWAIT) < 0 ? -zmq_errno() : 0;
}

/* Sends msg to member to: an answer on the channel of the message being handled, a request
 * on our DEALER to a voter or on the ROUTER to a non-voter's DEALER. */
void sc_coord_raft_send(sc_coord_t *c, size_t to, sc_msg_t *msg, bool answer)
{
    sc_craft_t *r = c->raft;
    char *buf = NULL, rid[SC_NAME_MAX + 2];
    size_t len = 0;
    int k = s_voter_slot(c, to), rc;

    sc_coord_digest_stamp(c, msg);
    if ((rc = sc_msg_encode(msg, &buf, &len)) < 0) {
        sc_log_err("cannot encode", "type=%s rc=%s", sc_msg_type_name(msg->type), sc_errname(rc));
        return;
    }
    if (answer && r->chan_dealer >= 0)
        rc = s_send_frame(r->dealer[r->chan_dealer], NULL, 0, buf, len);
    else if (answer && r->chan_rid)
        rc = s_send_frame(c->router, r->chan_rid, r->chan_rid_len, buf, len);
    else if (k >= 0 && r->dealer[k])
        rc = s_send_frame(r->dealer[k], NULL, 0, buf, len);
    else {
        int n = snprintf(rid, sizeof(rid), "@%s", c->members[to].name);
        rc = s_send_frame(c->router, (const unsigned char *)rid, (size_t)n, buf, len);
    }
    if (rc < 0 && rc != -EAGAIN && rc != -EHOSTUNREACH)
        sc_log_debug("peer message not sent", "to=%s type=%s rc=%s", c->members[to].name,
                     sc_msg_type_name(msg->type), sc_errname(rc));
    free(buf);
}

static sc_msg_t *s_new_msg(sc_coord_t *c, sc_msg_type_t type, int64_t term)
{
    sc_msg_t *m = NULL;
    return sc_msg_new(type, c->name, (uint64_t)term, ++c->seq, &m) == 0 ? m : NULL;
}

/* An append to member to with the entries it is owed from r->next[to] (none for a heartbeat
 * when it has them all), the round given (0: not a heartbeat round). */
void sc_coord_raft_send_append(sc_coord_t *c, size_t to, int64_t round, bool answer)
{
    sc_craft_t *r = c->raft;
    sc_dlog_entry_t *v = NULL;
    size_t n = 0, bytes = 0, skip = 0;
    int64_t next = r->next[to] < 1 ? 1 : r->next[to], prev_term = 0;
    sc_msg_t *m;

    if (next > r->last_index + 1)
        next = r->last_index + 1;
    if (next - 1 < r->base_index) { /* compacted away: the snapshot instead */
        r->next[to] = next;
        sc_coord_snap_send(c, to, round, answer);
        return;
    }
    if (!(m = s_new_msg(c, SC_MSG_APPEND, sc_elect_term(r->e))))
        return;
    if (next - 1 == r->last_index) { /* up to date (the usual case): no read */
        prev_term = r->last_term;
    } else { /* one read: the entry before next (its term; the base's when compacted, or none
              * before the first), then the ones owed */
        bool at_base = next - 1 == r->base_index;
        int64_t from = at_base ? next : next - 1;
        if (sc_store_entries(c->store, from, S_BATCH_ENTRIES + 1, &v, &n) < 0 || n == 0 ||
            v[0].index != from) {
            sc_dlog_entries_free(v, n);
            sc_msg_destroy(&m);
            return;
        }
        prev_term = at_base ? r->base_term : v[0].term;
        skip = at_base ? 0 : 1;
    }
    snprintf(m->append.leader, sizeof(m->append.leader), "%s", c->name);
    m->append.prev_index = (uint64_t)(next - 1);
    m->append.prev_term = (uint64_t)prev_term;
    m->append.commit_index = (uint64_t)r->commit;
    m->append.round = round;
    for (size_t i = skip; i < n && bytes < S_BATCH_BYTES; i++) {
        sc_msg_entry_t *en;
        if (sc_msg_add_entry(m, (uint64_t)v[i].term, (uint64_t)v[i].index,
                             sc_dlog_kind_name(v[i].kind), v[i].data) < 0)
            break;
        en = &m->append.entries[m->append.n_entries - 1];
        en->wall_ms = v[i].wall_ms > 0 ? v[i].wall_ms : 0;
        if (v[i].reason && v[i].reason[0])
            sc_msg_set_text(&en->reason, v[i].reason, strlen(v[i].reason), false);
        bytes += strlen(v[i].data) + 64;
    }
    sc_dlog_entries_free(v, n);
    if (m->append.n_entries) /* pipelined: the next append goes on from there */
        r->next[to] = (int64_t)m->append.entries[m->append.n_entries - 1].index + 1;
    r->sent_ms[to] = s_now();
    sc_coord_raft_send(c, to, m, answer);
    sc_msg_destroy(&m);
}

/* ---- the election's outputs ------------------------------------------------------------- */

static void s_became_leader(sc_coord_t *c)
{
    sc_craft_t *r = c->raft;

    for (size_t i = 0; i < c->n_members; i++) {
        r->next[i] = r->last_index + 1;
        r->match[i] = 0;
        r->sent_ms[i] = 0;
    }
    r->durable = r->last_index; /* a follower's log is durable before it answers */
    r->match[c->self] = r->durable;
    r->term_entry = 0;
    r->need_term_entry = true;
    r->plan_fence = 0;
    /* what it knows may be old: the members report again before it acts (the start grace) */
    c->in_grace = true;
    c->stalled = false;
    c->grace_until_ms = s_now() + c->o.start_grace_ms;
    c->last_leader_ms = 0;
}

void sc_coord_raft_stepped_down(sc_coord_t *c)
{
    c->raft->need_term_entry = false;
    c->raft->resolve = true; /* intents it made may be left without a POST */
}

/* Carries out the outputs in order; a PERSIST that fails stops the rest and restarts the
 * election from what the store holds (nothing that depended on it was sent). */
int sc_coord_raft_outputs(sc_coord_t *c, const sc_elect_outputs_t *out)
{
    sc_craft_t *r = c->raft;

    for (size_t i = 0; i < out->n; i++) {
        const sc_elect_output_t *o = &out->out[i];
        switch (o->kind) {
        case SC_ELECT_OUT_PERSIST: {
            const char *vf =
                o->hard.voted_for == SC_ELECT_NONE ? "" : c->members[o->hard.voted_for].name;
            int rc = sc_coord_raft_txn_commit(c); /* durable before anything is answered */
            if (rc >= 0)
                rc = sc_store_set_hard_state(c->store, o->hard.term, vf);
            if (rc < 0) {
                sc_log_err("election state not persisted: nothing sent", "term=%lld rc=%s",
                           (long long)o->hard.term, sc_errname(rc));
                return rc;
            }
            break;
        }
        case SC_ELECT_OUT_SEND: {
            const sc_elect_msg_t *em = &o->msg;
            sc_msg_t *m = NULL;
            bool answer = false;
            switch (em->type) {
            case SC_ELECT_MSG_PRE_VOTE:
            case SC_ELECT_MSG_VOTE:
                if (!(m = s_new_msg(c, SC_MSG_VOTE_REQUEST, em->term)))
                    break;
                snprintf(m->vote_request.candidate, sizeof(m->vote_request.candidate), "%s",
                         c->name);
                m->vote_request.last_log_index = (uint64_t)em->last_index;
                m->vote_request.last_log_term = (uint64_t)em->last_term;
                m->vote_request.pre_vote = em->type == SC_ELECT_MSG_PRE_VOTE;
                m->vote_request.transfer = em->transfer;
                snprintf(m->vote_request.voters_digest, sizeof(m->vote_request.voters_digest), "%s",
                         em->digest);
                break;
            case SC_ELECT_MSG_PRE_VOTE_ANSWER:
            case SC_ELECT_MSG_VOTE_ANSWER:
                if (!(m = s_new_msg(c, SC_MSG_VOTE, em->term)))
                    break;
                m->vote.granted = em->ok;
                m->vote.pre_vote = em->type == SC_ELECT_MSG_PRE_VOTE_ANSWER;
                sc_msg_set_text(&m->vote.reason, em->reason, strlen(em->reason), false);
                answer = true;
                break;
            case SC_ELECT_MSG_APPEND: sc_coord_raft_send_append(c, em->to, em->round, false); break;
            case SC_ELECT_MSG_APPEND_ANSWER:
                if (!(m = s_new_msg(c, SC_MSG_APPEND_ACK, em->term)))
                    break;
                m->append_ack.success = em->ok;
                m->append_ack.match_index = (uint64_t)(em->match < 0 ? 0 : em->match);
                m->append_ack.round = em->round;
                m->append_ack.received = r->answer_received;
                answer = true;
                break;
            case SC_ELECT_MSG_TIMEOUT_NOW: m = s_new_msg(c, SC_MSG_TIMEOUT_NOW, em->term); break;
            default: break;
            }
            if (m)
                sc_coord_raft_send(c, em->to, m, answer);
            sc_msg_destroy(&m);
            break;
        }
        case SC_ELECT_OUT_ROLE: {
            size_t ld = o->leader;
            sc_log_notice("role", "role=%s term=%lld leader=%s was=%s why=\"%s\"",
                          sc_elect_role(r->e), (long long)o->term,
                          ld == SC_ELECT_NONE ? "none" : c->members[ld].name,
                          sc_elect_state_name(o->old_state), sc_log_q(o->text));
            if (o->term > c->term)
                c->term = o->term;
            if (o->new_state == SC_ELECT_LEADER && o->old_state != SC_ELECT_LEADER)
                s_became_leader(c);
            else if (o->new_state != SC_ELECT_LEADER && o->old_state == SC_ELECT_LEADER)
                sc_coord_raft_stepped_down(c);
            break;
        }
        case SC_ELECT_OUT_MAY_ACT:
        case SC_ELECT_OUT_NOTICE:
            sc_log_info("election", "term=%lld why=\"%s\"", (long long)sc_elect_term(r->e),
                        sc_log_q(o->text));
            break;
        default: break;
        }
    }
    sc_coord_raft_log_may_act(c);
    return 0;
}

void sc_coord_raft_set_log(sc_coord_t *c)
{
    sc_craft_t *r = c->raft;
    if (sc_elect_set_log(r->e, r->last_index, r->last_term, r->commit) < 0)
        sc_log_err("election: log position refused", "last=%lld commit=%lld",
                   (long long)r->last_index, (long long)r->commit);
}

/* ---- receiving ---------------------------------------------------------------------------- */

/* A follower: the leader's entries after its prev check; *ret_match the last index matching. */
static bool s_follow_append(sc_coord_t *c, const sc_msg_append_t *a, int64_t *ret_match)
{
    sc_craft_t *r = c->raft;
    int64_t prev = (int64_t)a->prev_index, cut = 0, prev_term = (int64_t)a->prev_term;
    const sc_msg_entry_t *ent = a->entries;
    size_t n_ent = a->n_entries;
    sc_dlog_entry_t *v = NULL;
    bool ok = true;
    int rc;

    *ret_match = r->applied;
    if (prev > r->last_index)
        return false;
    if (sc_coord_snap_skip_compacted(c, &prev, &prev_term, &ent, &n_ent)) {
        *ret_match = prev; /* all of them compacted here: committed, nothing to store */
        return true;
    }
    if (prev == r->last_index) { /* appended at our end (the usual case): no read */
        if (prev > 0 && prev_term != r->last_term)
            return false;
    } else if (prev == r->base_index) {
        if (prev > 0 && prev_term != r->base_term)
            return false;
    } else if (prev > 0) {
        sc_dlog_entry_t *p = NULL;
        size_t pn = 0;
        rc = sc_store_entries(c->store, prev, 1, &p, &pn);
        ok = rc >= 0 && pn == 1 && p[0].term == prev_term;
        sc_dlog_entries_free(p, pn);
        if (!ok)
            return false;
    }
    if (n_ent && !(v = calloc(n_ent, sizeof(*v))))
        return false;
    for (size_t i = 0; ok && i < n_ent; i++) {
        const sc_msg_entry_t *en = &ent[i];
        v[i].index = (int64_t)en->index;
        v[i].term = (int64_t)en->term;
        v[i].data = en->data;
        v[i].reason = en->reason ? en->reason : (char *)"";
        v[i].wall_ms = en->wall_ms;
        if (sc_dlog_kind_parse(en->kind, &v[i].kind) < 0) {
            sc_log_err("leader's entry of an unknown kind: not stored", "index=%lld kind=%s",
                       (long long)v[i].index, en->kind);
            ok = false;
        }
    }
    if (ok && (rc = sc_store_log_entries(c->store, v, n_ent, &cut)) < 0) {
        sc_log_err("leader's entries not stored", "from=%lld rc=%s why=\"%s\"",
                   (long long)(prev + 1), sc_errname(rc), sc_log_q(sc_store_errmsg(c->store)));
        ok = false;
    }
    free(v);
    if (!ok)
        return false;
    if (cut)
        sc_log_notice("log: entries of a former leader replaced", "from=%lld", (long long)cut);
    int64_t last_new = prev + (int64_t)n_ent;
    if (n_ent && (cut || last_new > r->last_index)) { /* the log's end: no read */
        r->last_index = last_new;
        r->last_term = (int64_t)ent[n_ent - 1].term;
    }
    int64_t commit = (int64_t)a->commit_index < last_new ? (int64_t)a->commit_index : last_new;
    if (commit > r->commit)
        r->commit = commit;
    sc_coord_raft_set_log(c);
    /* applied after the answer is sent (at the end of the turn: sc_coord_raft_flush), not
     * before: the leader waits for the answer, not for our apply */
    *ret_match = last_new;
    return true;
}

/* A peer message from member mi, on the channel set in r->chan_*. */
static int s_on_peer(sc_coord_t *c, size_t mi, const sc_msg_t *msg)
{
    sc_craft_t *r = c->raft;
    sc_elect_msg_t em = {.from = mi, .to = c->self, .term = (int64_t)msg->term};
    sc_elect_outputs_t out;
    int64_t now = s_now();
    int rc;

    if ((rc = sc_coord_digest_check(c, mi, msg)) != 0)
        return rc < 0 ? rc : 0; /* another members digest: refused (sc_coord_digest.c) */
    switch (msg->type) {
    case SC_MSG_VOTE_REQUEST:
        em.type = msg->vote_request.pre_vote ? SC_ELECT_MSG_PRE_VOTE : SC_ELECT_MSG_VOTE;
        em.last_index = (int64_t)msg->vote_request.last_log_index;
        em.last_term = (int64_t)msg->vote_request.last_log_term;
        em.transfer = msg->vote_request.transfer;
        snprintf(em.digest, sizeof(em.digest), "%.16s", msg->vote_request.voters_digest);
        break;
    case SC_MSG_VOTE:
        em.type = msg->vote.pre_vote ? SC_ELECT_MSG_PRE_VOTE_ANSWER : SC_ELECT_MSG_VOTE_ANSWER;
        em.ok = msg->vote.granted;
        snprintf(em.reason, sizeof(em.reason), "%s", msg->vote.reason ? msg->vote.reason : "");
        break;
    case SC_MSG_APPEND:
        em.type = SC_ELECT_MSG_APPEND;
        em.commit = (int64_t)msg->append.commit_index;
        em.round = msg->append.round;
        em.last_index = (int64_t)msg->append.prev_index + (int64_t)msg->append.n_entries;
        em.last_term = msg->append.n_entries
                           ? (int64_t)msg->append.entries[msg->append.n_entries - 1].term
                           : (int64_t)msg->append.prev_term;
        break;
    case SC_MSG_APPEND_ACK:
        em.type = SC_ELECT_MSG_APPEND_ANSWER;
        em.ok = msg->append_ack.success;
        em.match = (int64_t)msg->append_ack.match_index;
        em.round = msg->append_ack.round;
        break;
    case SC_MSG_TIMEOUT_NOW: em.type = SC_ELECT_MSG_TIMEOUT_NOW; break;
    case SC_MSG_SNAPSHOT: /* to the election, an append: the leader heard */
        em.type = SC_ELECT_MSG_APPEND;
        em.round = msg->snapshot.round;
        em.last_index = (int64_t)msg->snapshot.last_index;
        em.last_term = (int64_t)msg->snapshot.last_term;
        break;
    default: return 0;
    }
    /* anything but an append's answer may make us answer, or store what a leader sends: our
     * turn's proposals are made durable first (a vote or an append_ack promises durability) */
    if (msg->type != SC_MSG_APPEND_ACK && (rc = sc_coord_raft_txn_commit(c)) < 0)
        return rc;
    if (sc_elect_step(r->e, now, &em, &out) < 0)
        return 0;
    if ((rc = sc_coord_raft_outputs(c, &out)) < 0)
        return rc;
    if ((msg->type == SC_MSG_APPEND || msg->type == SC_MSG_SNAPSHOT) && out.append_accepted) {
        int64_t match = 0, received = -1;
        bool ok = msg->type == SC_MSG_APPEND
                      ? s_follow_append(c, &msg->append, &match)
                      : sc_coord_snap_on_chunk(c, &msg->snapshot, &match, &received);
        sc_elect_msg_t ans;
        sc_elect_append_answer(r->e, &em, ok, match, &ans);
        sc_elect_outputs_t one = {.n = 1};
        one.out[0].kind = SC_ELECT_OUT_SEND;
        one.out[0].msg = ans;
        r->answer_received = received;
        rc = sc_coord_raft_outputs(c, &one);
        r->answer_received = -1;
        if (rc < 0)
            return rc;
        if (msg->term > (uint64_t)c->term)
            c->term = (int64_t)msg->term;
    } else if (msg->type == SC_MSG_APPEND_ACK && sc_coord_is_leader(c) &&
               msg->term == (uint64_t)sc_elect_term(r->e)) {
        int64_t mt = (int64_t)msg->append_ack.match_index;
        r->ack_ms[mi] = now;
        if (sc_coord_snap_on_ack(c, mi, &msg->append_ack))
            return 0; /* a snapshot chunk's: the next one is sent */
        if (msg->append_ack.success) {
            if (mt > r->match[mi])
                r->match[mi] = mt;
            if (r->next[mi] < mt + 1)
                r->next[mi] = mt + 1;
            sc_coord_log_advance_commit(c);
            if ((rc = sc_coord_log_apply_committed(c)) < 0)
                return rc;
            if (r->next[mi] <= r->last_index) /* more owed: at once */
                sc_coord_raft_send_append(c, mi, 0, false);
        } else { /* not matching: back to what it has (Raft's next index decrement, fast) */
            r->next[mi] = mt + 1 < r->next[mi] - 1 ? mt + 1 : r->next[mi] - 1;
            if (r->next[mi] < 1)
                r->next[mi] = 1;
            sc_coord_raft_send_append(c, mi, 0, false);
        }
    }
    return 0;
}

static bool s_is_peer_type(sc_msg_type_t t)
{
    return t == SC_MSG_VOTE_REQUEST || t == SC_MSG_VOTE || t == SC_MSG_APPEND ||
           t == SC_MSG_APPEND_ACK || t == SC_MSG_TIMEOUT_NOW || t == SC_MSG_SNAPSHOT;
}

bool sc_coord_raft_is_peer_msg(const sc_msg_t *msg)
{
    return msg && s_is_peer_type(msg->type);
}

int sc_coord_raft_on_router(sc_coord_t *c, size_t mi, const unsigned char *rid, size_t rid_len,
                            const sc_msg_t *msg)
{
    sc_craft_t *r = c->raft;
    int rc;

    r->chan_dealer = -1;
    r->chan_rid = rid;
    r->chan_rid_len = rid_len;
    rc = s_on_peer(c, mi, msg);
    r->chan_rid = NULL;
    return rc;
}

/* Every message waiting on our DEALERs (from the voter each is connected to). */
static int s_drain_dealers(sc_coord_t *c)
{
    sc_craft_t *r = c->raft;
    int rc = 0;

    for (size_t k = 0; k < c->voters.n && rc >= 0; k++) {
        for (int n = 0; r->dealer[k] && n < 10000 && rc >= 0; n++) {
            zmq_msg_t zm;
            sc_msg_t *msg = NULL;
            char err[256];
            size_t vi = c->voters.index[k];
            zmq_msg_init(&zm);
            if (zmq_msg_recv(&zm, r->dealer[k], ZMQ_DONTWAIT) < 0) {
                zmq_msg_close(&zm);
                break;
            }
            if (sc_msg_decode(zmq_msg_data(&zm), zmq_msg_size(&zm), &msg, err, sizeof(err)) < 0)
                sc_log_warn("peer message refused", "from=%s why=\"%s\"", c->members[vi].name,
                            sc_log_q(err));
            else if (strcmp(msg->from, c->members[vi].name) != 0 || !s_is_peer_type(msg->type))
                sc_log_warn("peer message refused", "connection=%s from=%s type=%s",
                            c->members[vi].name, msg->from, sc_msg_type_name(msg->type));
            else {
                r->chan_dealer = (int)k;
                rc = s_on_peer(c, vi, msg);
                r->chan_dealer = -1;
            }
            sc_msg_destroy(&msg);
            zmq_msg_close(&zm);
        }
    }
    return rc;
}

int sc_coord_raft_drain(sc_coord_t *c)
{
    return s_drain_dealers(c);
}

size_t sc_coord_raft_pollitems(sc_coord_t *c, zmq_pollitem_t *items, size_t max)
{
    size_t n = 0;
    for (size_t k = 0; c->raft && k < c->voters.n && n < max; k++)
        if (c->raft->dealer[k])
            items[n++] = (zmq_pollitem_t){.socket = c->raft->dealer[k], .events = ZMQ_POLLIN};
    return n;
}

/* ---- time --------------------------------------------------------------------------------- */

int sc_coord_raft_tick(sc_coord_t *c)
{
    sc_craft_t *r = c->raft;
    sc_elect_outputs_t out;
    int64_t now = s_now();
    int rc;

    if (now >= sc_elect_next_ms(r->e)) {
        sc_elect_tick(r->e, now, &out);
        if ((rc = sc_coord_raft_outputs(c, &out)) < 0)
            return rc;
    }
    if (sc_coord_is_leader(c) && r->need_term_entry && !r->term_entry) {
        /* the term's first entry, proposed once: it commits when a majority has it (then the
         * entries of former terms before it commit with it), however long that takes */
        json_object *d = json_object_new_object();
        json_object_object_add(d, "term", json_object_new_int64(sc_elect_term(r->e)));
        rc = sc_coord_exec_decide(c, SC_DLOG_TERM, d, "won the election: the term's first entry");
        if (rc < 0 && rc != SC_E_NOT_COMMITTED)
            return rc;
        if ((rc = sc_coord_raft_flush(c)) < 0) /* out at once: failover waits for its commit */
            return rc;
    }
    if (sc_coord_is_leader(c) && r->need_term_entry && r->term_entry &&
        r->commit >= r->term_entry && r->applied >= r->term_entry) {
        r->need_term_entry = false;
        r->led_since_ms = now;
        c->last_leader_ms = 0; /* tell the agents at once */
        c->dirty = true;
        if ((rc = sc_coord_restart_take_lead(c)) < 0)
            return rc;
        sc_coord_raft_fence(c, 0); /* the planner sees what the take-over decided first */
    }
    if (sc_coord_is_leader(c) && now - r->nonvoters_ms >= c->o.heartbeat_ms) {
        /* non-voters: what they are owed, or a keepalive (a pass over the members: once a
         * heartbeat, not on every message the loop handles) */
        r->nonvoters_ms = now;
        for (size_t i = 0; i < c->n_members; i++) {
            bool heard = r->ack_ms[i] > 0; /* else a probe, no entries: is it there at all? */
            if (i == c->self || s_voter_slot(c, i) >= 0 ||
                !((heard && r->next[i] <= r->last_index &&
                   now - r->sent_ms[i] >= S_NONVOTER_EVERY_MS) ||
                  now - r->sent_ms[i] >= S_NONVOTER_KEEPALIVE_MS))
                continue;
            if (!heard)
                r->next[i] = r->last_index + 1;
            sc_coord_raft_send_append(c, i, 0, false);
        }
    }
    if (sc_coord_is_leader(c))
        sc_coord_handover_prefer(c, now);
    if (r->resolve && sc_coord_may_act(c)) {
        r->resolve = false;
        if ((rc = sc_coord_restart_resolve_intents(c)) < 0)
            return rc;
    }
    sc_coord_raft_log_may_act(c);
    return 0;
}
