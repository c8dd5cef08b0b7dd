/* sc_coord_int: what the coordinator's files (coordinator/sc_coord*.c) share, and nothing
 * outside them may include: the coordinator's struct, its member and per-event state, and the
 * functions one file calls in another. Each file holds one job:
 *
 *   sc_coord.c           life cycle: new, destroy, the loop (sc_coord_step), accessors
 *   sc_coord_cli.c       the daemon's command line (sc_coord_main)
 *   sc_coord_members.c   membership and liveness: --members, hello, heartbeat, dead-after,
 *                        a newer term, the start grace
 *   sc_coord_dispatch.c  messages: sending, receiving (the ROUTER and its batch transaction)
 *   sc_coord_exec.c      the executor: decisions, per-event state, alerts, approvals, the plan
 *                        round and its orders, re-sent orders, delegated approvals' timeout
 *   sc_coord_restart.c   restart recovery from the store
 *   sc_coord_status.c    status, counters, the control socket's handler
 */
#ifndef SC_COORD_INT_H
#define SC_COORD_INT_H

#include "sc_coord.h"

#include "sc_approver.h"
#include "sc_backoff.h"
#include "sc_curve.h"
#include "sc_dirlock.h"
#include "sc_event.h"
#include "sc_msg.h"
#include "sc_plan.h"
#include "sc_registry.h"
#include "sc_store.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SC_COORD_RID_MAX 256 /* bytes of a ZMQ routing id */

typedef struct sc_cmember {
    char name[SC_NAME_MAX + 1];                /* member name */
    char endpoint[SC_MEMBER_ENDPOINT_MAX + 1]; /* tcp://HOST:PORT of its coordinator */
    int fault_domain;                          /* from its hello, -1 unknown */
    int update_domain;                         /* from its hello, -1 unknown */
    bool alive;                                /* messages arriving */
    bool blind;                                /* alive, but its IMDS has been silent too long */
    bool gone;                                 /* left after Preempt/Terminate */
    bool is_self;                              /* our own member */
    int64_t last_msg_ms;                       /* monotonic ms of its last message */
    unsigned char rid[SC_COORD_RID_MAX];       /* ROUTER routing id of its agent's connection */
    size_t rid_len;                            /* 0: not connected yet */
    char boot_id[SC_MSG_BOOT_ID_MAX + 1];      /* its agent's boot id */
    bool have_doc;                             /* a document arrived since we started */
    int64_t doc_req_ms;                        /* last doc_request sent */
    sc_member_state_t state;                   /* from the last plan */
    uint64_t malformed;                        /* malformed IMDS events its agent reported */
    uint64_t malformed_key;                    /* hash of the last malformed list counted */
} sc_cmember_t;

typedef struct sc_cevstate {
    char id[SC_EVENT_ID_MAX + 1]; /* EventId */
    sc_approval_state_t approval; /* approval state */
    int64_t retry_at_ms;          /* FAILED: no new POST before */
    sc_backoff_t backoff;         /* approval retries */
    int64_t intent;               /* open intent's index (INTENT) */
    int64_t intent_ms;            /* when that intent was made (delegated timeout) */
    size_t via;                   /* INTENT delegated: the member that POSTs (SC_PLAN_NONE: us) */
    sc_drain_state_t *drain;      /* per member */
    int64_t *sent_ms;             /* per member: last order sent */
    int *attempt;                 /* per member: attempt of its last order (0: none yet) */
    int64_t *drain_retry_ms;      /* per member, ROLLED_BACK: not drained again before */
    char *waiting_for;            /* from the last plan */
    bool touched;                 /* referred to by an action (not an alert) this round */
} sc_cevstate_t;

struct sc_coord {
    sc_coord_opts_t o;    /* options (strings borrowed from the caller... copied below) */
    char *name;           /* our member name */
    char *state_dir;      /* state directory */
    char ctl_path[4096];  /* control socket path */
    sc_coord_role_t role; /* leader / follower */
    char members_hash[SC_MEMBERS_DIGEST_LEN + 1]; /* sc_members_digest of --members */
    int64_t term;                                 /* our term */
    uint64_t seq;                                 /* our message sequence */
    sc_cmember_t *members;                        /* --members, in order */
    size_t n_members;                             /* entries */
    size_t *by_name;         /* member indexes sorted by name (case-insensitive) */
    size_t self;             /* our index */
    void *zctx;              /* ZMQ context */
    void *router;            /* ROUTER bound to our endpoint */
    sc_zap_t *zap;           /* ZAP handler (CURVE) */
    int ctl_fd;              /* control socket */
    sc_store_t *store;       /* the store */
    sc_dirlock_t *lock;      /* coordinator.lock: one coordinator per state directory */
    sc_approver_t *approver; /* approvals */
    sc_registry_t *reg;      /* merged events */
    sc_cevstate_t **ev;      /* per event state */
    size_t n_ev;             /* entries */
    char **alerts;           /* alert keys already raised */
    size_t n_alerts;         /* entries */
    bool dirty;              /* something changed: plan now */
    int64_t last_plan_ms;    /* last plan round */
    int64_t last_leader_ms;  /* last leader broadcast */
    int64_t last_tick_ms;    /* last registry tick / liveness check */
    uint64_t rejected;       /* messages refused */
    int64_t last_post_ms;    /* monotonic ms of the last approval POST */
    int64_t started_wall_ms; /* when this process started (wall clock) */
    bool in_grace;           /* just started: members have not all had a chance to report */
    int64_t grace_until_ms;  /* monotonic ms the start grace ends at the latest */
    /* Since this process started (Prometheus counters: reset by a restart). */
    struct {
        uint64_t posts_ok, posts_failed;   /* approval POSTs through our IMDS, by outcome */
        uint64_t delegated;                /* approvals handed to another member (approve_via) */
        uint64_t orders[SC_MSG_PHASE_MAX]; /* prepare/recover orders */
        uint64_t hooks[SC_MSG_PHASE_MAX][SC_MSG_HOOK_STATE_MAX]; /* hook reports, by state */
        uint64_t alerts[SC_ALERT_MAX];                           /* alerts raised */
        uint64_t events_new;                                     /* events first seen */
    } count;
};

#endif
