/* The coordinator's life cycle: sc_coord_new, sc_coord_destroy and the loop (sc_coord_step),
 * with the public accessors. The jobs live beside it (sc_coord_int.h). */
#include "sc_coord_int.h"

#include "sc_ctl.h"
#include "sc_elect.h"
#include "sc_curve.h"
#include "sc_error.h"
#include "sc_identity.h"
#include "sc_log.h"
#include "sc_net.h"
#include "sc_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zmq.h>

#define S_PLAN_EVERY_MS 200 /* the planner runs at least this often */
/* A loop turn's budget for the work that can wait (agents' messages, effects, orders past the
 * first ones): at 1,000 members a burst (every agent's new document, a fault domain's 334
 * orders) took 60-170 ms in one turn, which the stall check and the voters' timeouts feel. */
#define S_TURN_BUDGET_US 6000
#define S_VIEW_EVERY_MS 250 /* and, for the view only, on a member that may not act */

void sc_coord_opts_init(sc_coord_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    sc_policy_defaults(&o->policy);
    o->dead_after_ms = 15000;
    o->imds_stale_ms = 15000;
    o->resend_ms = 2000;
    o->leader_ms = 5000;
    o->start_grace_ms = 5000;
    o->tombstone_ms = SC_REGISTRY_TOMBSTONE_MS_DEFAULT;
    o->stall_ms = 2000;
    o->snapshot_every = 1000;
    o->log_keep = 5000;
    o->snapshot_chunk = 262144;
    o->snapshot_at_stop = true;
    o->election_ms = SC_ELECT_ELECTION_MS;
    o->heartbeat_ms = SC_ELECT_HEARTBEAT_MS;
}

bool sc_coord_is_leader(const sc_coord_t *c)
{
    /* the election's word, nothing kept beside it */
    return c && c->raft && c->raft->e && sc_elect_state(c->raft->e) == SC_ELECT_LEADER;
}

bool sc_coord_leads(const sc_coord_t *c)
{
    return c && sc_coord_raft_leads(c);
}

bool sc_coord_wait_lead(sc_coord_t *c, int max_ms)
{
    int64_t end = sc_mono_ms() + max_ms;
    while (c && !sc_coord_leads(c) && sc_mono_ms() < end)
        if (sc_coord_step(c, 10) < 0)
            break;
    return sc_coord_leads(c);
}

int64_t sc_coord_term(const sc_coord_t *c)
{
    return c ? c->term : 0;
}

uint64_t sc_coord_posts(const sc_coord_t *c)
{
    return c ? sc_approver_posts(c->approver) : 0;
}

int64_t sc_coord_last_post_mono_ms(const sc_coord_t *c)
{
    return c ? c->last_post_ms : 0;
}

static void s_zap_cb(void *cb_data, sc_zap_decision_t decision, const char *mechanism,
                     const char *address, const char *name, const char *public_z85)
{
    (void)cb_data;
    if (decision != SC_ZAP_ACCEPTED)
        sc_log_warn("connection refused by ZAP", "decision=%s mechanism=%s address=%s key=%s",
                    sc_zap_decision_name(decision), mechanism, address, public_z85);
    else
        sc_log_debug("connection accepted", "member=%s address=%s", name, address);
}

int sc_coord_new(const sc_coord_opts_t *o, sc_coord_t **ret_coord, char *err, size_t errlen)
{
    sc_coord_t *c;
    char dbpath[4200];
    int rc, one = 1, zero = 0;
    sc_curve_keypair_t kp;
    sc_keyring_t *ring = NULL;

    if (!o || !ret_coord)
        return -EINVAL;
    if (!o->name || !o->imds_url || !o->members || !o->state_dir) {
        snprintf(err, errlen, "--name, --imds-url, --members and --state-dir are required");
        return SC_E_CONFIG;
    }
    if (strlen(o->state_dir) > 3000) {
        snprintf(err, errlen, "--state-dir: path too long");
        return SC_E_CONFIG;
    }
    if (o->insecure && (o->key_file || o->keys_file)) {
        /* as the agent: a key given with --insecure would be silently unused */
        snprintf(err, errlen, "--insecure: cannot be combined with --key / --keys");
        return SC_E_CONFIG;
    }
    if (!o->insecure && (!o->key_file || !o->keys_file)) {
        snprintf(err, errlen, "--key FILE and --keys FILE are required unless --insecure");
        return SC_E_CONFIG;
    }
    if (!(c = calloc(1, sizeof(*c))))
        return -ENOMEM;
    c->o = *o;
    c->ctl_fd = -1;
    c->started_wall_ms = sc_wall_ms();
    if (!(c->name = strdup(o->name)) || !(c->state_dir = strdup(o->state_dir))) {
        rc = -ENOMEM;
        goto fail;
    }
    if ((rc = sc_coord_members_parse(c, o->members, err, errlen)) < 0)
        goto fail;
    for (size_t i = 0; o->insecure && i < c->n_members; i++) {
        if (!sc_endpoint_is_local(c->members[i].endpoint)) {
            rc = sc_errf(err, errlen, SC_E_CONFIG,
                         "--insecure: member %s's endpoint %s is not on this machine (plain "
                         "text is for a single-machine demo only; use --key FILE --keys FILE)",
                         c->members[i].name, c->members[i].endpoint);
            goto fail;
        }
    }
    c->self = sc_coord_members_find(c, o->name);
    if (c->self == SC_PLAN_NONE || strcmp(c->members[c->self].name, o->name) != 0) {
        snprintf(err, errlen,
                 "our name %s (--name, or else the compute metadata's) is not in --members",
                 o->name);
        rc = SC_E_CONFIG;
        goto fail;
    }
    c->members[c->self].is_self = true;
    {
        /* one connection per member on the ROUTER, then the store, libcurl, ZAP, control */
        long need = (long)c->n_members + 128, have = sc_nofile_raise(need);
        if (have < need)
            sc_log_warn("open-file limit below what the member list needs",
                        "members=%zu need=%ld limit=%ld hint=\"raise LimitNOFILE\"", c->n_members,
                        need, have);
    }
    if (mkdir(o->state_dir, 0700) < 0 && errno != EEXIST) {
        rc = -errno;
        snprintf(err, errlen, "--state-dir %s: %s", o->state_dir, strerror(errno));
        goto fail;
    }
    /* Before the store and the control socket: a second coordinator on this directory would
     * lead a second term over the same store and take the socket away. */
    if ((rc = sc_dirlock_acquire(o->state_dir, "coordinator.lock", &c->lock, err, errlen)) < 0)
        goto fail;
    snprintf(dbpath, sizeof(dbpath), "%s/%s", o->state_dir, SC_CTL_DB_NAME);
    if ((rc = sc_store_open(dbpath, &c->store, err, errlen)) < 0)
        goto fail;
    if (o->keep_closed > 0)
        sc_store_set_keep_closed(c->store, o->keep_closed);
    if ((rc = sc_approver_new(c->store, o->imds_url, o->name, &c->approver)) < 0) {
        snprintf(err, errlen, "--imds-url %s: %s", o->imds_url, sc_strerror(rc));
        goto fail;
    }
    if ((rc = sc_registry_new(0, &c->reg)) < 0 ||
        (rc = sc_registry_set_tombstone_ms(c->reg, o->tombstone_ms)) < 0)
        goto fail;
    /* Before the state: the TERM entry of our start is the first thing to tell. */
    if ((rc = sc_coord_notify_new(c, o->notify, err, errlen)) < 0)
        goto fail;
    /* The state: the last snapshot and the log after it, up to the last entry applied (the
     * entries after it are not known to be committed: a leader's commit index applies them). */
    if ((rc = sc_coord_restart_replay(c, err, errlen)) < 0)
        goto fail;
    /* Every coordinator starts a follower; the election (sc_coord_raft.c) makes one the
     * leader of a term, which it opens with the term's first entry. */
    if ((rc = sc_store_term(c->store, &c->term)) < 0) {
        snprintf(err, errlen, "store %s: %s", dbpath, sc_store_errmsg(c->store));
        goto fail;
    }
    c->in_grace = true;
    c->grace_until_ms = sc_mono_ms() + c->o.start_grace_ms;
    if ((rc = sc_coord_restart_restore(c)) < 0 || (rc = sc_coord_members_load_boots(c)) < 0) {
        snprintf(err, errlen, "restoring from %s: %s", dbpath, sc_strerror(rc));
        goto fail;
    }
    if (sc_cstate_paused(c->cs) && !c->o.policy.pause) {
        c->o.policy.pause = true;
        sc_log_notice("approvals still paused by the operator",
                      "why=\"schedcoordctl pause before this start; schedcoordctl resume to "
                      "resume\"");
    }
    /* Sockets. */
    if (!(c->zctx = zmq_ctx_new())) {
        rc = -ENOMEM;
        goto fail;
    }
    if (!o->insecure) {
        char key[4096];
        if (sc_identity_expand(o->key_file, c->name, key, sizeof(key)) < 0) {
            snprintf(err, errlen, "--key: path too long once {name} is replaced");
            rc = SC_E_CONFIG;
            goto fail;
        }
        /* a missing or bad key file is a configuration error: a restart would not fix it */
        if (sc_curve_keypair_load(key, &kp, err, errlen) < 0 ||
            sc_keyring_load(o->keys_file, &ring, err, errlen) < 0) {
            rc = SC_E_CONFIG;
            goto fail;
        }
        rc = sc_zap_start(c->zctx, ring, s_zap_cb, c, &c->zap);
        if (rc < 0) {
            snprintf(err, errlen, "ZAP handler: %s", sc_strerror(rc));
            goto fail;
        }
        if (!(c->router = zmq_socket(c->zctx, ZMQ_ROUTER)) ||
            (rc = sc_curve_server_setup(c->router, &kp, c->zap)) < 0) {
            rc = rc < 0 ? rc : -zmq_errno();
            snprintf(err, errlen, "CURVE server setup: %s", sc_strerror(rc));
            goto fail;
        }
    } else {
        sc_log_warn("INSECURE: plain-text ZeroMQ, no authentication (--insecure)", NULL);
        if (!(c->router = zmq_socket(c->zctx, ZMQ_ROUTER)) ||
            (rc = sc_sock_insecure_setup(c->router)) < 0) {
            rc = rc < 0 ? rc : -zmq_errno();
            goto fail;
        }
    }
    zmq_setsockopt(c->router, ZMQ_LINGER, &zero, sizeof(zero));
    zmq_setsockopt(c->router, ZMQ_ROUTER_HANDOVER, &one, sizeof(one));
    if (zmq_bind(c->router, c->members[c->self].endpoint) < 0) {
        rc = -zmq_errno();
        snprintf(err, errlen, "cannot bind %s: %s", c->members[c->self].endpoint,
                 zmq_strerror(zmq_errno()));
        goto fail;
    }
    if ((rc = sc_coord_raft_new(c, o->insecure ? NULL : &kp, ring, err, errlen)) < 0)
        goto fail;
    snprintf(c->ctl_path, sizeof(c->ctl_path), "%s/%s", o->state_dir, SC_CTL_SOCKET_NAME);
    if ((rc = sc_ctl_listen(c->ctl_path, &c->ctl_fd, err, errlen)) < 0)
        goto fail;
    c->dirty = true;
    sc_keyring_destroy(&ring);
    memset(&kp, 0, sizeof(kp));
    *ret_coord = c;
    return 0;
fail:
    sc_keyring_destroy(&ring);
    memset(&kp, 0, sizeof(kp));
    sc_coord_destroy(&c);
    return rc;
}

void sc_coord_destroy(sc_coord_t **coord)
{
    sc_coord_t *c;
    if (!coord || !*coord)
        return;
    c = *coord;
    if (c->raft)
        sc_coord_raft_txn_commit(c); /* what the last turn proposed is kept */
    sc_coord_notify_destroy(c);      /* bounded: what is queued gets 2 s */
    if (c->ctl_fd >= 0)
        sc_ctl_close(c->ctl_fd, c->ctl_path);
    if (c->router)
        zmq_close(c->router);
    sc_coord_raft_destroy(c);
    sc_zap_stop(&c->zap);
    if (c->zctx)
        zmq_ctx_term(c->zctx);
    for (size_t i = 0; i < c->n_ev; i++)
        sc_coord_exec_ev_free(c->ev[i]);
    free(c->ev);
    sc_coord_forecast_free(c);
    sc_coord_rehearse_free(c);
    sc_coord_digest_free(c);
    if (c->store && c->lock)
        sc_coord_members_save_boots(c);
    if (c->cs && c->store && c->lock && c->o.snapshot_at_stop)
        sc_coord_restart_snapshot(c, 0); /* the next start replays nothing */
    sc_cstate_destroy(&c->cs);
    sc_registry_destroy(&c->reg);
    sc_approver_destroy(&c->approver); /* its worker ends (a POST under way: its timeout) */
    sc_coord_effect_free(c);
    sc_store_close(&c->store);
    sc_dirlock_release(&c->lock);
    free(c->members);
    free(c->by_name);
    free(c->name_slots);
    free(c->name);
    free(c->state_dir);
    free(c);
    *coord = NULL;
}

/* The periodic work: liveness and the registry's tick, delegated approvals without an answer
 * (every 200 ms); the leader message; unacknowledged orders again. */
static int s_timers(sc_coord_t *c)
{
    int64_t now = sc_mono_ms(), before;
    int rc;

    if (now - c->last_tick_ms >= 200) {
        c->last_tick_ms = now;
        if ((rc = sc_coord_members_tick(c, now)) < 0 || (rc = sc_coord_exec_expire_via(c, now)) < 0)
            return rc;
        sc_coord_notify_tick(c);
    }
    if (sc_coord_raft_leads(c) && now - c->last_leader_ms >= c->o.leader_ms) {
        c->last_leader_ms = now;
        sc_coord_dispatch_broadcast_leader(c);
    }
    sc_coord_effect_resend_orders(c, now);
    /* a rehearsal's timers decide from the state as the planner does: not while what they
     * proposed is in flight */
    if (!sc_coord_raft_settled(c))
        return 0;
    before = sc_coord_raft_last(c);
    rc = sc_coord_rehearse_tick(c, now);
    sc_coord_raft_fence(c, before);
    return rc;
}

/* Waits up to timeout_ms for a message or a control request, less when a plan round is due
 * sooner (at once when something changed); a follower has no plan rounds to wake up for.
 * *ret_ctl: whether a control request waits. 0 or a ZMQ error. */
static int s_poll(sc_coord_t *c, int timeout_ms, bool *ret_ctl)
{
    zmq_pollitem_t items[3 + SC_VOTERS_MAX] = {
        {.socket = c->router, .events = ZMQ_POLLIN},
        {.fd = c->ctl_fd, .events = ZMQ_POLLIN},
        {.fd = sc_approver_fd(c->approver), .events = ZMQ_POLLIN}}; /* a POST's outcome */
    size_t n = 3 + sc_coord_raft_pollitems(c, items + 3, SC_VOTERS_MAX);
    int64_t next = c->last_plan_ms + S_PLAN_EVERY_MS - sc_mono_ms();
    int raft_next = sc_coord_raft_next_ms(c);

    if (c->dirty || next < 0)
        next = 0;
    /* no plan rounds to wake up for (a follower, the start grace), or not before what the
     * last one proposed is applied (its commit wakes the poll: an append_ack) */
    if (!sc_coord_may_act(c) || !sc_coord_raft_settled(c))
        next = timeout_ms;
    if (timeout_ms > next)
        timeout_ms = (int)next;
    if (timeout_ms > raft_next)
        timeout_ms = raft_next;
    if (zmq_poll(items, (int)n, timeout_ms) < 0 && zmq_errno() != EINTR)
        return -zmq_errno();
    *ret_ctl = items[1].revents & ZMQ_POLLIN;
    return 0;
}

/* Every waiting schedcoordctl request. */
static void s_serve_control(sc_coord_t *c)
{
    while (sc_ctl_serve_one(c->ctl_fd, sc_coord_status_ctl_handler, c) == 1)
        ;
}

/* A plan round when one is due. A follower plans nothing: no orders, approvals, alerts or
 * membership decisions; nor does a leader that just started before its members had a chance
 * to report. A leader plans from the applied state, so not while what its last round
 * proposed is in flight (it would decide it twice): its commit makes the next round due. */
static int s_plan_if_due(sc_coord_t *c, int64_t now)
{
    int64_t before;
    int rc;

    bool act = sc_coord_may_act(c);

    if (act && !sc_coord_raft_settled(c))
        return 0;
    if (act ? !(c->dirty || now - c->last_plan_ms >= S_PLAN_EVERY_MS)
            : now - c->last_plan_ms < S_VIEW_EVERY_MS)
        return 0;
    /* our own VM being drained: the lead handed over first (the successor plans) */
    if (act && sc_coord_handover_in_drain(c))
        return 0;
    c->dirty = false;
    c->last_plan_ms = now;
    before = sc_coord_raft_last(c);
    rc = sc_coord_exec_plan_round(c, act);
    /* fenced on what the round proposed: the hook progress in flight it counted already
     * (sc_coord_raft_progress_drain), the rest of what others proposed it reads from the
     * registry (events) or waits for (approval answers hold an intent) */
    if (act)
        sc_coord_raft_fence(c, before);
    return rc < 0 ? rc : 0;
}

/* TILT (Redis Sentinel's word): a check long after the last one (beyond waited_ms, what the
 * poll between them may take), or a wall clock that moved apart from the monotonic one, means
 * this process was stalled — an Azure Freeze
 * pauses the whole VM for up to ~30 s, SIGSTOP does it at will — and it is not known whether
 * the guest's monotonic clock ran meanwhile. What it knows may be stale (events started,
 * agents gone standalone), so it acts on nothing until every member reported again, or the
 * start grace passed: the grace of a start, entered again. (With an election, confirming the
 * lead with a quorum round comes first.) */
bool sc_coord_stall_check(sc_coord_t *c, int64_t waited_ms)
{
    int64_t mono = sc_mono_ms(), wall = sc_wall_ms();
    int64_t dm = mono - c->step_mono_ms, dw = wall - c->step_wall_ms, lim = SC_ELECT_STALL_MS;
    bool tilt, stalled;

    tilt = c->step_mono_ms && (dm - waited_ms > lim || dw - dm > lim || dm - dw > lim);
    stalled = c->step_mono_ms && (dm - waited_ms > c->o.stall_ms || dw - dm > c->o.stall_ms ||
                                  dm - dw > c->o.stall_ms);
    c->step_mono_ms = mono;
    c->step_wall_ms = wall;
    /* The lease is not trusted across a stall of SC_ELECT_STALL_MS: a quorum round first. A
     * member that is not the leader says so too (its view may be as stale; nothing to confirm):
     * where in its loop the stop fell decides whether it learnt of a new term first. */
    if (tilt && sc_coord_is_leader(c)) {
        sc_log_warn("stalled: acting again once a quorum confirms the lead",
                    "monotonic_ms=%lld wall_ms=%lld limit_ms=%lld", (long long)dm, (long long)dw,
                    (long long)lim);
        sc_coord_raft_stall(c);
    } else if (tilt) {
        sc_log_warn("stalled: not leading, nothing to confirm",
                    "monotonic_ms=%lld wall_ms=%lld limit_ms=%lld role=%s", (long long)dm,
                    (long long)dw, (long long)lim, sc_coord_role(c));
    }
    if (!stalled || !sc_coord_is_leader(c))
        return tilt;
    sc_log_warn("stalled: acting again once every member reported",
                "monotonic_ms=%lld wall_ms=%lld limit_ms=%lld grace_ms=%lld", (long long)dm,
                (long long)dw, (long long)c->o.stall_ms, (long long)c->o.start_grace_ms);
    c->in_grace = c->stalled = true;
    c->grace_until_ms = mono + c->o.start_grace_ms;
    for (size_t i = 0; i < c->n_members; i++) {
        c->members[i].have_doc = false; /* a fresh document from each */
        c->members[i].doc_req_ms = 0;
    }
    return tilt;
}

/* A decision not proposed because we no longer lead is not fatal: the election sorts it
 * out. */
static int s_nonfatal(int rc)
{
    return rc == SC_E_NOT_COMMITTED ? 0 : rc;
}

/* Monotonic µs (sc_mono_ms is too coarse for a turn). */
static int64_t s_mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

bool sc_coord_turn_over(const sc_coord_t *c)
{
    return s_mono_us() > c->turn_end_us;
}

/* The step's work once the poll returned (ctl: a control request waits). */
static int s_turn(sc_coord_t *c, int timeout_ms, bool ctl)
{
    int64_t now;
    int rc;

    c->turn_end_us = s_mono_us() + S_TURN_BUDGET_US;
    sc_coord_stall_check(c, timeout_ms);
    if ((rc = sc_coord_raft_drain(c)) < 0)
        return rc;
    /* what the voters' answers committed is acted on first (an approval POST waits for no
     * agent message, nor for the plan round) */
    sc_coord_raft_effects_run(c);
    /* and the outcomes of the approval POSTs the approver's worker made meanwhile */
    sc_coord_effect_answers(c);
    if ((rc = s_nonfatal(sc_coord_dispatch_drain_router(c))) < 0)
        return rc;
    if ((rc = s_nonfatal(sc_coord_raft_tick(c))) < 0)
        return rc;
    sc_coord_restart_snapshot(c, c->o.snapshot_every);
    if (ctl)
        s_serve_control(c);
    if ((rc = s_nonfatal(s_timers(c))) < 0)
        return rc;
    now = sc_mono_ms();
    if (c->in_grace)
        sc_coord_members_grace_check(c, now);
    if ((rc = s_nonfatal(s_plan_if_due(c, now))) < 0)
        return rc;
    /* the turn's decisions: durable (one fsync), sent to the voters, acted on once committed */
    return sc_coord_raft_flush(c);
}

int sc_coord_step(sc_coord_t *c, int timeout_ms)
{
    bool ctl = false;
    int64_t t0;
    int rc;

    /* before and after the poll: a stop inside it shows after it, before anything is done */
    sc_coord_stall_check(c, 0);
    if ((rc = s_poll(c, timeout_ms, &ctl)) < 0)
        return rc;
    t0 = c->o.on_step ? s_mono_us() : 0;
    rc = s_turn(c, timeout_ms, ctl);
    if (c->o.on_step)
        c->o.on_step(c->o.on_step_ud, s_mono_us() - t0);
    return rc;
}

int sc_coord_run(sc_coord_t *c, volatile sig_atomic_t *stop)
{
    int rc = 0;

    sc_coord_sd_ready(c);
    while (!*stop && rc >= 0) {
        rc = sc_coord_step(c, 100);
        sc_coord_sd_tick(c);
    }
    sc_coord_sd_stopping(c, rc);
    return rc;
}
