/* The election's life: sc_coord_raft_new (the election from the store, the DEALERs to the
 * voters), destroy, what the status shows, a newer term adopted, and the small accessors the
 * loop uses. The messages and the replication are sc_coord_raft.c's. */
#include "sc_coord_int.h"

#include "sc_elect.h"
#include "sc_error.h"
#include "sc_log.h"
#include "sc_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

void sc_coord_raft_stall(sc_coord_t *c)
{
    sc_elect_outputs_t out;
    sc_elect_stall(c->raft->e, sc_mono_ms(), &out);
    sc_coord_raft_outputs(c, &out);
}

const char *sc_coord_role(const sc_coord_t *c)
{
    return c->raft ? sc_elect_role(c->raft->e) : "leader";
}

int sc_coord_raft_next_ms(const sc_coord_t *c)
{
    int64_t d = sc_elect_next_ms(c->raft->e) - sc_mono_ms();
    /* committed entries left to apply, or effects left by a turn's budget: at once */
    if (c->raft->applied < c->raft->commit || c->raft->n_fx)
        return 0;
    if (sc_coord_is_leader(c) && c->o.heartbeat_ms < d)
        d = c->o.heartbeat_ms;
    return d < 0 ? 0 : d > 1000 ? 1000 : (int)d;
}

bool sc_coord_raft_leads(const sc_coord_t *c)
{
    return sc_coord_is_leader(c) && !c->raft->need_term_entry && c->raft->term_entry &&
           c->raft->durable >= c->raft->term_entry;
}

int64_t sc_coord_raft_commit(const sc_coord_t *c)
{
    return c->raft ? c->raft->commit : 0;
}

bool sc_coord_raft_may_act(const sc_coord_t *c)
{
    const sc_craft_t *r = c->raft;
    /* our term's first entry committed and applied, so every entry of former terms before it
     * is applied too; what we proposed since may still be in flight (the pipeline) */
    return r && !r->need_term_entry && r->term_entry && r->applied >= r->term_entry &&
           r->durable >= r->term_entry && sc_elect_may_act(r->e, sc_mono_ms());
}

/* The election module from hard (c->raft->e), with the daemon's settings. */
static int s_elect_new(sc_coord_t *c, const sc_elect_hard_state_t *hard, char *err, size_t errlen)
{
    sc_elect_config_t cfg;
    const char **names = calloc(c->n_members, sizeof(*names));
    int rc;

    if (!names)
        return -ENOMEM;
    for (size_t i = 0; i < c->n_members; i++)
        names[i] = c->members[i].name;
    sc_elect_config_default(&cfg);
    cfg.self = c->self;
    cfg.n_members = c->n_members;
    cfg.names = names;
    cfg.voters = &c->voters;
    cfg.election_ms = c->o.election_ms;
    cfg.heartbeat_ms = c->o.heartbeat_ms;
    cfg.seed = (uint64_t)getpid() ^ (uint64_t)sc_wall_ms(); /* the timeouts differ by member */
    rc = sc_elect_new(&cfg, hard, sc_mono_ms(), &c->raft->e, err, errlen);
    free(names);
    return rc;
}

/* A term newer than ours heard from an agent (it knows a leader we never heard of: our store
 * was lost or we were cut off): Raft's rule, adopted before anything else; a leader steps
 * down and campaigns past it. */
int sc_coord_raft_adopt_term(sc_coord_t *c, int64_t seen, const char *from)
{
    sc_craft_t *r = c->raft;
    sc_elect_hard_state_t hard = {.term = seen, .voted_for = SC_ELECT_NONE};
    char err[256];
    int rc;

    if (seen <= sc_elect_term(r->e))
        return 0;
    if ((rc = sc_store_set_hard_state(c->store, seen, "")) < 0)
        return rc;
    sc_log_notice("newer term heard from an agent: adopted", "term=%lld from=%s", (long long)seen,
                  from);
    if (sc_coord_is_leader(c))
        sc_coord_raft_stepped_down(c);
    sc_elect_destroy(&r->e);
    if ((rc = s_elect_new(c, &hard, err, sizeof(err))) < 0) {
        sc_log_err("election not restarted", "why=\"%s\"", sc_log_q(err));
        return rc;
    }
    c->term = seen;
    sc_coord_raft_set_log(c);
    return sc_coord_digest_rehold(c); /* the new election knows of no disagreeing voter */
}

/* ---- life --------------------------------------------------------------------------------- */

int sc_coord_raft_new(sc_coord_t *c, const sc_curve_keypair_t *kp, const sc_keyring_t *ring,
                      char *err, size_t errlen)
{
    sc_craft_t *r;
    sc_elect_hard_state_t hard = {0, SC_ELECT_NONE};
    char voted[SC_NAME_MAX + 1] = "";
    int rc;

    if (!(r = c->raft = calloc(1, sizeof(*r))) || !(r->next = calloc(c->n_members, 8)) ||
        !(r->match = calloc(c->n_members, 8)) || !(r->sent_ms = calloc(c->n_members, 8)) ||
        !(r->ack_ms = calloc(c->n_members, 8)))
        return -ENOMEM;
    r->chan_dealer = -1;
    r->answer_received = -1;
    if ((rc = sc_coord_snap_new(c)) < 0 ||
        (rc = sc_store_hard_state(c->store, &hard.term, voted, sizeof(voted))) < 0 ||
        (rc = sc_store_last_entry(c->store, &r->last_index, &r->last_term)) < 0 ||
        (rc = sc_store_applied_index(c->store, &r->applied)) < 0)
        return sc_errf(err, errlen, rc, "store: %s", sc_store_errmsg(c->store));
    if (hard.term < c->term) /* a store from before the election: its TERM entries' term */
        hard.term = c->term;
    if (voted[0] && (hard.voted_for = sc_coord_members_find(c, voted)) == SC_PLAN_NONE)
        hard.voted_for = SC_ELECT_NONE;
    r->commit = r->applied;
    if ((rc = s_elect_new(c, &hard, err, errlen)) < 0)
        return rc == -EINVAL ? SC_E_CONFIG : rc;
    c->term = hard.term;
    sc_coord_raft_set_log(c);
    /* our DEALER to every other voter */
    for (size_t k = 0; k < c->voters.n; k++) {
        size_t vi = c->voters.index[k];
        int zero = 0, one = 1, ivl = 100, ivl_max = 1000;
        char rid[SC_NAME_MAX + 2];
        int n;
        void *s;
        if (vi == c->self)
            continue;
        if (!(s = r->dealer[k] = zmq_socket(c->zctx, ZMQ_DEALER)))
            return sc_errf(err, errlen, -zmq_errno(), "peer socket: %s", zmq_strerror(zmq_errno()));
        n = snprintf(rid, sizeof(rid), "@%s", c->name);
        zmq_setsockopt(s, ZMQ_ROUTING_ID, rid, (size_t)n);
        zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
        zmq_setsockopt(s, ZMQ_IMMEDIATE, &one, sizeof(one));
        zmq_setsockopt(s, ZMQ_RECONNECT_IVL, &ivl, sizeof(ivl));
        zmq_setsockopt(s, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof(ivl_max));
        if ((rc = sc_curve_peer_setup(s, kp, ring, c->members[vi].name, err, errlen)) ==
            SC_E_CONFIG)
            return rc;
        if (rc < 0 || zmq_connect(s, c->members[vi].endpoint) < 0)
            return sc_errf(err, errlen, rc < 0 ? rc : -zmq_errno(), "peer socket to %s (%s)",
                           c->members[vi].name, c->members[vi].endpoint);
    }
    {
        char list[SC_VOTERS_MAX * (SC_NAME_MAX + 1) + 1] = "";
        for (size_t k = 0; k < c->voters.n; k++)
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", k ? "," : "",
                     c->members[c->voters.index[k]].name);
        sc_log_notice("election",
                      "voters=%s digest=%s role=%s term=%lld election_ms=%lld "
                      "heartbeat_ms=%lld",
                      list, c->voters.digest, sc_elect_role(r->e), (long long)c->term,
                      (long long)c->o.election_ms, (long long)c->o.heartbeat_ms);
    }
    return 0;
}

void sc_coord_raft_destroy(sc_coord_t *c)
{
    sc_craft_t *r = c->raft;

    if (!r)
        return;
    for (size_t k = 0; k < SC_VOTERS_MAX; k++)
        if (r->dealer[k])
            zmq_close(r->dealer[k]);
    sc_coord_snap_destroy(c);
    sc_coord_raft_effects_free(c);
    sc_coord_raft_progress_free(c);
    sc_elect_destroy(&r->e);
    free(r->next);
    free(r->match);
    free(r->sent_ms);
    free(r->ack_ms);
    free(r);
    c->raft = NULL;
}

json_object *sc_coord_raft_status(sc_coord_t *c, json_object *st)
{
    sc_craft_t *r = c->raft;
    json_object *v = json_object_new_array();
    size_t ld = sc_elect_leader(r->e);
    int64_t contact = sc_elect_leader_contact_ms(r->e);

    for (size_t k = 0; k < c->voters.n; k++)
        json_object_array_add(v, json_object_new_string(c->members[c->voters.index[k]].name));
    json_object_object_add(st, "role", json_object_new_string(sc_elect_role(r->e)));
    json_object_object_add(
        st, "leader", ld == SC_ELECT_NONE ? NULL : json_object_new_string(c->members[ld].name));
    json_object_object_add(st, "voters", v);
    json_object_object_add(st, "commit_index", json_object_new_int64(r->commit));
    json_object_object_add(st, "last_index", json_object_new_int64(r->last_index));
    json_object_object_add(st, "applied_index", json_object_new_int64(r->applied));
    json_object_object_add(st, "log_base_index", json_object_new_int64(r->base_index));
    json_object_object_add(st, "leader_contact_ms",
                           contact ? json_object_new_int64(sc_mono_ms() - contact) : NULL);
    json_object_object_add(st, "may_act", json_object_new_boolean(sc_coord_may_act(c)));
    json_object_object_add(st, "tilted", json_object_new_boolean(sc_elect_tilted(r->e)));
    json_object_object_add(st, "members_mismatch", sc_coord_digest_status(c));
    json_object_object_add(st, "serialise_by",
                           json_object_new_string(sc_serialise_by_name(sc_coord_serialise_by(c))));
    json_object_object_add(st, "domains_hidden", json_object_new_boolean(c->domains_hidden));
    return st;
}

void sc_coord_raft_log_may_act(sc_coord_t *c)
{
    sc_craft_t *r = c->raft;
    bool now = sc_coord_may_act(c);

    if (now == r->may_act)
        return;
    r->may_act = now;
    sc_log_notice("may act", "value=%s term=%lld commit=%lld", now ? "true" : "false",
                  (long long)sc_elect_term(r->e), (long long)r->commit);
}
