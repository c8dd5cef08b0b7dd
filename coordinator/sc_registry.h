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
 * their VMs are recovered (sc_registry_remove_event()).
 *
 * Disappearance ("votes"). Each member that ever reported an event is a witness with a vote:
 * PRESENT (its latest document holds the event), ABSENT (a later document of it lacks it) or
 * PENDING (see below). The event disappears when no *alive* witness is PRESENT or PENDING and
 * at least one witness is ABSENT. So: members that stopped reporting (dead, impacted, blind —
 * IMDS silent under a live agent —, marked with sc_registry_set_alive(false)) don't vote — their
 * silence never ends an event and their stale PRESENT does not keep it alive either; an event still
 * in any live member's document stays; members that never saw the event (other availability set,
 * GPU one-FD case) don't vote.
 *
 * Fresh documents. A document is *fresh* when the agent's boot_id changed or its
 * DocumentIncarnation went backwards (IMDS or the VM restarted), and a member's first document
 * since the registry was made (after a coordinator restart nothing tells a reboot apart). A fresh
 * document is taken as the member's full view, but an event it lacks gets a PENDING vote, not
 * ABSENT: a rebooted VM's IMDS may come back empty for a while (the first request after a restart
 * may take up to 2 minutes). PENDING turns ABSENT after confirm_ms (sc_registry_new) — checked on
 * every call — unless the event shows up again. PENDING counts like PRESENT for disappearance only
 * when the member is alive.
 *
 * Times are the caller's monotonic milliseconds (now_ms). Not thread-safe. No I/O, no logs.
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
} sc_reg_event_t;

typedef enum {
    SC_CHG_NEW,         /* first seen, Scheduled */
    SC_CHG_NEW_STARTED, /* first seen already Started: a host failure, forced */
    SC_CHG_UPDATED,     /* content changed (NotBefore, Resources, ...), same status */
    SC_CHG_STARTED,     /* Scheduled -> Started; see start_kind (APPROVED or FORCED) */
    SC_CHG_ENDED,       /* disappeared after Started */
    SC_CHG_CANCELLED,   /* disappeared while Scheduled */
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

/* Applies member's latest document (boot_id: the agent's boot id, NULL if unknown; a change
 * makes the document fresh). Marks the member alive. ret_changes (may be NULL) receives what
 * changed; the caller releases it. On error nothing changed: -EINVAL (NULL, empty/too long
 * member or boot id), SC_E_TOO_BIG (too many events or members). */
int sc_registry_apply_doc(sc_registry_t *reg, const char *member, const char *boot_id,
                          const sc_doc_t *doc, int64_t now_ms, sc_registry_changes_t *ret_changes);
/* Marks a member alive or not (heartbeats). A dead member's votes don't count, so marking one
 * dead may end events (see above). Unknown members are added. 0, -EINVAL, SC_E_TOO_BIG. */
int sc_registry_set_alive(sc_registry_t *reg, const char *member, bool alive, int64_t now_ms,
                          sc_registry_changes_t *ret_changes);
/* Drops a member (left the cluster list, or gone after Preempt/Terminate): its votes are
 * removed everywhere, which may end events it alone kept. 0, -EINVAL, SC_E_NOT_FOUND. */
int sc_registry_forget_member(sc_registry_t *reg, const char *member, int64_t now_ms,
                              sc_registry_changes_t *ret_changes);
/* Re-evaluates PENDING votes against the clock (call about once a second). 0 or -ENOMEM. */
int sc_registry_tick(sc_registry_t *reg, int64_t now_ms, sc_registry_changes_t *ret_changes);
/* Records that we approved (POSTed) the event, so that its start is APPROVED, not FORCED.
 * Call when the approval intent is logged. 0, -EINVAL, SC_E_NOT_FOUND. */
int sc_registry_mark_approved(sc_registry_t *reg, const char *event_id);
/* Removes an event (final and recovered, or pruned). 0, -EINVAL, SC_E_NOT_FOUND. */
int sc_registry_remove_event(sc_registry_t *reg, const char *event_id);

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

/* "Active", "Ended", "Cancelled" / "None", "Approved", "Forced", "Direct" / "New", ... */
const char *sc_reg_phase_name(sc_reg_phase_t p);
const char *sc_start_kind_name(sc_start_kind_t k);
const char *sc_reg_change_name(sc_reg_change_kind_t k);

#endif
