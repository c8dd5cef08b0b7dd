/* sc_registry: one set of events merged from the documents every member's agent reports.
 *
 * Keyed by EventId (case-insensitive). For each event: its latest content, when it was first
 * and last seen, which members' latest document holds it (seen_by), which ever did, and its
 * lifecycle:
 *
 *      first seen Scheduled                 first seen Started (host failure)
 *              │                                      │ start = DIRECT
 *              ▼                                      ▼
 *         ACTIVE/Scheduled ── status Started ──▶ ACTIVE/Started ── disappears ──▶ ENDED
 *              │            start = APPROVED if sc_registry_mark_approved() was called,
 *              │                    FORCED otherwise (NotBefore passed, someone else)
 *              └── disappears ──▶ CANCELLED
 *
 * ENDED and CANCELLED are final: a later sighting of the same EventId is ignored (Azure never
 * reuses one; a lagging member may still show it). The daemon removes final events once
 * their VMs are recovered (sc_registry_remove_event()); the registry then keeps a *tombstone*
 * (EventId, phase, when it ended) for the tombstone retention (sc_registry_set_tombstone_ms,
 * default SC_REGISTRY_TOMBSTONE_MS_DEFAULT = 7 days, the longest notice Azure gives; at most
 * SC_REGISTRY_MAX_TOMBSTONES, the one that ended first dropped first). A report of a
 * tombstoned EventId is ignored — not new, not a host failure, not a witness — and reported
 * as an ENDED_COPY change: an old copy (a blind member's re-send, a lagging IMDS) can neither
 * bring a finished event back nor keep a fault domain busy with it. The daemon stores what
 * tombstones need (its events rows) and restores them after a restart
 * (sc_registry_add_tombstone()).
 *
 * Merge rule: an event never moves backwards. Each document comes with observed_at_ms (wall
 * ms when its agent read it from IMDS — a re-send keeps that time) and whether its member is
 * blind now (see below).
 *  1. Per member and agent boot: a document with a lower DocumentIncarnation than the last one
 *     applied from the same boot, not observed after it, is a stale copy: nothing in it is
 *     applied, neither content nor votes (STALE_COPY for what it would have changed). A lower
 *     incarnation observed later is IMDS's restart: a fresh view (below), as before.
 *  2. The freshest witness wins: an event's content is replaced only by a copy observed at
 *     least as recently as the one that gave the current content (ties: the later arrival);
 *     an equal copy observed later makes the content that much fresher (observed_ms). An older
 *     copy that differs is a STALE_COPY; its member still becomes a witness (PRESENT vote).
 *  3. The status only moves forward: Started never returns to Scheduled, and a copy that says
 *     Started is taken whatever its age (the start happened).
 *  4. A blind member's document (its IMDS fails: an answer to doc_request or a reconnect
 *     re-sends its last good document) never changes content and never creates an event
 *     (STALE_COPY); its votes follow the rules below exactly as any member's (it is marked
 *     not alive right after, so they count for nothing until its IMDS answers again).
 *  Clock skew: observed_at_ms comes from each agent's wall clock, so copies from different VMs
 *  are ordered only as well as their clocks agree (Azure VMs are NTP-synced: milliseconds,
 *  seconds at worst). A skew of a few seconds can only misorder two versions of one event
 *  observed within those seconds of each other: the newer one is then held back until a
 *  member with a closer clock reports it, or the event changes again — never for good while
 *  one well-synced member sees it. Resources Azure updates that fast are rare, and the
 *  planner never lets a VM ordered to prepare be dropped silently (sc_plan.h: a VM that left
 *  Resources while preparing holds the approval), so a shrink by a stale copy costs a wait,
 *  not a prepare cut short. Rules 3 and 4 need no clock; rule 1 compares one agent's times
 *  only (its clock stepped back just as its IMDS restarted would make that restart look
 *  stale until the next document).
 *
 * Disappearance ("votes"). Each member that ever reported an event is a witness with a vote:
 * PRESENT (its latest document holds the event), ABSENT (a later document of it lacks it) or
 * PENDING (see below). The event disappears when no *alive* witness is PRESENT and at least
 * one witness is ABSENT. So: members that stopped reporting (dead, impacted, blind —
 * IMDS silent under a live agent —, marked with sc_registry_set_alive(false)) don't vote — their
 * silence never ends an event and their stale PRESENT does not keep it alive either; an event still
 * in any live member's document stays; members that never saw the event (other availability set,
 * GPU one-FD case) don't vote. Nor does a member whose VM a started Preempt or Terminate is
 * deleting: its last document goes stale with it, before its agent is found silent.
 *
 * Fresh documents. A document is *fresh* when the agent's boot_id changed or its
 * DocumentIncarnation went backwards in a document read later (IMDS or the VM restarted), and a
 * member's first document since the registry was made, unless the daemon told the registry what
 * that member's agent reported before (sc_registry_seed_member(): the same boot id is the same
 * agent, its IMDS view kept). A fresh document is taken as the member's full view, but an event it
 * lacks gets a PENDING vote, not ABSENT: a rebooted VM's IMDS may come back empty for a while (the
 * first request after a restart may take up to 2 minutes). PENDING turns ABSENT after confirm_ms
 * (sc_registry_new) — checked on every call — unless the event shows up again. A PENDING vote
 * neither keeps an event nor ends it: with no ABSENT vote nothing ends before it is confirmed,
 * and once another witness saw the event go (its IMDS kept its view), the event ends although
 * the fresh view may still come back with it (nemesis seed 1: every agent's first document after
 * a coordinator restart, or after its own, held ended events — and the next fault domain — for
 * a minute).
 *
 * Times are the caller's monotonic milliseconds (now_ms), except observed_at_ms / observed_ms:
 * the agents' wall-clock ms, only ever compared with each other. Not thread-safe. No I/O, no
 * logs.
 */
#ifndef SC_REGISTRY_H
#define SC_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sc_event.h"

#define SC_REGISTRY_MAX_EVENTS 4096          /* events held (active and final) */
#define SC_REGISTRY_MAX_MEMBERS 4096         /* distinct member names */
#define SC_MEMBER_NAME_MAX 255               /* bytes in a member name */
#define SC_BOOT_ID_MAX 128                   /* bytes in a boot id */
#define SC_REGISTRY_CONFIRM_MS_DEFAULT 60000 /* PENDING -> ABSENT after a fresh document */
#define SC_REGISTRY_MAX_TOMBSTONES 65536     /* removed final events remembered */
#define SC_REGISTRY_TOMBSTONE_MS_DEFAULT (7LL * 24 * 3600 * 1000) /* kept after the end */

typedef struct sc_registry sc_registry_t;

typedef enum {
    SC_REG_ACTIVE,    /* in some member's document (or not yet known to be gone) */
    SC_REG_ENDED,     /* disappeared after Started: completed */
    SC_REG_CANCELLED, /* disappeared while Scheduled: cancelled by Azure, no impact */
    SC_REG_PHASE_MAX
} sc_reg_phase_t;

typedef enum {
    SC_START_NONE,     /* not started */
    SC_START_APPROVED, /* Scheduled -> Started after sc_registry_mark_approved() */
    SC_START_FORCED,   /* Scheduled -> Started without our approval (NotBefore passed) */
    SC_START_DIRECT,   /* first seen already Started (host failure, or we joined late) */
    SC_START_MAX
} sc_start_kind_t;

/* One merged event; borrowed from the registry, valid until the next non-const call. */
typedef struct sc_reg_event {
    sc_event_t ev;              /* latest content (status never goes back to Scheduled) */
    sc_reg_phase_t phase;       /* ACTIVE, ENDED, CANCELLED */
    sc_start_kind_t start_kind; /* how it started, NONE while Scheduled */
    bool approved;              /* sc_registry_mark_approved() was called for it */
    int64_t first_seen_ms;      /* monotonic ms it was first reported */
    int64_t last_seen_ms;       /* monotonic ms a document last held it */
    int64_t started_ms;         /* monotonic ms it was first seen Started (0 when not) */
    int64_t ended_ms;           /* monotonic ms it ended / was cancelled (0 when active) */
    const char **seen_by;       /* members whose latest document holds it (PRESENT) */
    size_t n_seen_by;           /* entries in seen_by */
    const char **ever_seen_by;  /* every member that ever reported it (witnesses) */
    size_t n_ever_seen_by;      /* entries in ever_seen_by */
    int64_t observed_ms;        /* wall ms the current content was last observed (the freshest
                                   witness's observed_at_ms; 0 unknown) */
} sc_reg_event_t;

typedef enum {
    SC_CHG_NEW,         /* first seen, Scheduled */
    SC_CHG_NEW_STARTED, /* first seen already Started: a host failure, forced */
    SC_CHG_UPDATED,     /* content changed (NotBefore, Resources, ...), same status */
    SC_CHG_STARTED,     /* Scheduled -> Started; see start_kind (APPROVED or FORCED) */
    SC_CHG_ENDED,       /* disappeared after Started */
    SC_CHG_CANCELLED,   /* disappeared while Scheduled */
    SC_CHG_STALE_COPY,  /* a copy older than the content held (or a blind member's) was not
                           applied: nothing changed */
    SC_CHG_ENDED_COPY,  /* a report of a tombstoned event was ignored: nothing changed */
    SC_CHG_MAX
} sc_reg_change_kind_t;

typedef struct sc_reg_change {
    sc_reg_change_kind_t kind;    /* what happened */
    char id[SC_EVENT_ID_MAX + 1]; /* EventId as first seen */
    sc_start_kind_t start_kind;   /* for NEW_STARTED / STARTED */
} sc_reg_change_t;

/* What one call changed, in order. Release with sc_registry_changes_release(). */
typedef struct sc_registry_changes {
    sc_reg_change_t *items; /* the changes (NULL when none) */
    size_t n;               /* entries in items */
} sc_registry_changes_t;

/* A new empty registry; confirm_ms <= 0 means SC_REGISTRY_CONFIRM_MS_DEFAULT. 0 or -ENOMEM. */
int sc_registry_new(int64_t confirm_ms, sc_registry_t **ret_reg);
/* Frees the registry; takes NULL, nulls the pointer. */
void sc_registry_destroy(sc_registry_t **reg);

/* Applies member's latest document by the merge rule above (boot_id: the agent's boot id,
 * NULL if unknown, a change makes the document fresh; observed_at_ms: the document message's
 * wall-clock ms when the agent read it from IMDS; blind: the member's IMDS is failing now, so
 * this is an old document re-sent). Marks the member alive. ret_changes (may be NULL)
 * receives what changed (and the copies not applied); the caller releases it. On error
 * nothing changed: -EINVAL (NULL, empty/too long member or boot id), SC_E_TOO_BIG (too many
 * events or members). */
int sc_registry_apply_doc(sc_registry_t *reg, const char *member, const char *boot_id,
                          const sc_doc_t *doc, int64_t observed_at_ms, bool blind, int64_t now_ms,
                          sc_registry_changes_t *ret_changes);
/* Marks a member alive or not (heartbeats). A dead member's votes don't count, so marking one
 * dead may end events (see above). Unknown members are added. 0, -EINVAL, SC_E_TOO_BIG. */
int sc_registry_set_alive(sc_registry_t *reg, const char *member, bool alive, int64_t now_ms,
                          sc_registry_changes_t *ret_changes);
/* Drops a member (left the cluster list, or gone after Preempt/Terminate): its votes are
 * removed everywhere, which may end events it alone kept. 0, -EINVAL, SC_E_NOT_FOUND. */
int sc_registry_forget_member(sc_registry_t *reg, const char *member, int64_t now_ms,
                              sc_registry_changes_t *ret_changes);
/* Re-evaluates PENDING votes against the clock and drops expired tombstones (call about once
 * a second). 0 or -ENOMEM. */
int sc_registry_tick(sc_registry_t *reg, int64_t now_ms, sc_registry_changes_t *ret_changes);
/* Records that we approved (POSTed) the event, so that its start is APPROVED, not FORCED.
 * Call when the approval intent is logged. 0, -EINVAL, SC_E_NOT_FOUND. */
int sc_registry_mark_approved(sc_registry_t *reg, const char *event_id);
/* Removes an event (final and recovered, or pruned). A final one leaves a tombstone (see
 * above). 0, -EINVAL, SC_E_NOT_FOUND, -ENOMEM (nothing removed). */
int sc_registry_remove_event(sc_registry_t *reg, const char *event_id);

/* Sets the tombstone retention (keep_ms <= 0: SC_REGISTRY_TOMBSTONE_MS_DEFAULT). 0, -EINVAL. */
int sc_registry_set_tombstone_ms(sc_registry_t *reg, int64_t keep_ms);
/* Adds (or refreshes) a tombstone: the daemon's restart, for final events it removed before.
 * phase ENDED or CANCELLED; ended_ms in the daemon's current monotonic ms (may be negative).
 * Expired ones are dropped at the next tick. 0, -EINVAL (invalid id or phase), -ENOMEM. */
int sc_registry_add_tombstone(sc_registry_t *reg, const char *event_id, sc_reg_phase_t phase,
                              int64_t ended_ms);
/* What member's agent last reported before the daemon restarted: its boot id, and the
 * DocumentIncarnation and observed_at_ms of a document of that boot. A document of the same boot
 * is then not fresh (an incarnation backwards still is). Only for a member without a document
 * yet. 0, -EINVAL, -ENOMEM. */
int sc_registry_seed_member(sc_registry_t *reg, const char *member, const char *boot_id,
                            int64_t incarnation, int64_t observed_ms);
/* Whether reports of event_id are ignored as an ended event's at now_ms. */
bool sc_registry_is_tombstoned(const sc_registry_t *reg, const char *event_id, int64_t now_ms);
/* Number of tombstones held (expired ones included until the next tick). */
size_t sc_registry_tombstone_count(const sc_registry_t *reg);

/* What the daemon stored about an event, to rebuild the registry after a restart. */
typedef struct sc_reg_restore {
    const sc_event_t *ev;         /* last content (copied) */
    sc_reg_phase_t phase;         /* as stored */
    sc_start_kind_t start_kind;   /* as stored */
    bool approved;                /* an approval was POSTed */
    int64_t first_seen_ms;        /* in the daemon's current monotonic ms */
    int64_t last_seen_ms;         /* idem */
    int64_t started_ms;           /* idem, 0 if not started */
    int64_t ended_ms;             /* idem, 0 if active */
    const char *const *witnesses; /* members that reported it (their vote starts PRESENT, */
    size_t n_witnesses;           /* the members start dead until they report again) */
    int64_t observed_ms;          /* wall ms its content was observed (0 unknown) */
} sc_reg_restore_t;

/* Adds (or replaces) an event from the store. No changes are reported. 0, -EINVAL (NULL,
 * invalid id, bad enum), SC_E_TOO_BIG, -ENOMEM. */
int sc_registry_restore_event(sc_registry_t *reg, const sc_reg_restore_t *r);

/* Number of events held (active and final). */
size_t sc_registry_count(const sc_registry_t *reg);
/* The i-th event (0 <= i < count; stable order of first appearance), NULL when out of range. */
const sc_reg_event_t *sc_registry_event_at(const sc_registry_t *reg, size_t i);
/* The event with this id (case-insensitive), NULL if none. */
const sc_reg_event_t *sc_registry_find(const sc_registry_t *reg, const char *event_id);
/* Whether member's latest document holds the event (case-sensitive member name). */
bool sc_reg_event_seen_by(const sc_reg_event_t *e, const char *member);
/* Whether the member is known and alive. */
bool sc_registry_member_alive(const sc_registry_t *reg, const char *member);

/* Frees the change list and zeroes it; takes NULL. */
void sc_registry_changes_release(sc_registry_changes_t *changes);

/* "Active", "Ended", "Cancelled" / "None", "Approved", "Forced", "Direct" / "New", ...,
 * "StaleCopy", "EndedCopy". */
const char *sc_reg_phase_name(sc_reg_phase_t p);
const char *sc_start_kind_name(sc_start_kind_t k);
const char *sc_reg_change_name(sc_reg_change_kind_t k);

#endif
