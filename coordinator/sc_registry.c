/* sc_registry: the merged event set (see sc_registry.h for the rules). */
#include "sc_registry.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sc_error.h"

typedef enum {
    S_VOTE_PRESENT, /* the member's latest document holds the event */
    S_VOTE_PENDING, /* a fresh document lacked it: becomes ABSENT after confirm_ms */
    S_VOTE_ABSENT,  /* a later document of the member lacked it */
} s_vote_kind_t;

typedef struct s_member {
    char *name;                       /* member name (owned) */
    char boot_id[SC_BOOT_ID_MAX + 1]; /* boot id of the latest document, "" if unknown */
    int64_t incarnation;              /* DocumentIncarnation of the latest document */
    int64_t observed_ms;              /* its observed_at_ms (wall ms, the agent's clock) */
    bool has_doc;                     /* a document was applied */
    bool alive;                       /* reporting (set by apply_doc / set_alive) */
    bool evicted;                     /* its VM is going: a Preempt/Terminate naming it started
                                         (s_evaluate: its votes count for nothing) */
} s_member_t;

typedef struct s_vote {
    s_member_t *member; /* the witness */
    s_vote_kind_t kind; /* its vote */
    int64_t since_ms;   /* PENDING: when the fresh document lacked the event */
} s_vote_t;

typedef struct s_event {
    sc_reg_event_t pub; /* what callers see */
    s_vote_t *votes;    /* one per witness */
    size_t n_votes;     /* entries in votes */
    const char **seen;  /* storage for pub.seen_by (capacity n_votes) */
    const char **ever;  /* storage for pub.ever_seen_by (capacity n_votes) */
    bool in_doc;        /* scratch: present in the document being applied */
} s_event_t;

typedef struct s_tomb {
    char id[SC_EVENT_ID_MAX + 1]; /* EventId as first seen */
    sc_reg_phase_t phase;         /* ENDED or CANCELLED */
    int64_t ended_ms;             /* monotonic ms it ended */
} s_tomb_t;

struct sc_registry {
    s_event_t **events;   /* in order of first appearance */
    size_t n_events;      /* entries in events */
    s_member_t **members; /* known members */
    size_t n_members;     /* entries in members */
    size_t n_evicted;     /* members marked evicted by the last s_mark_evicted */
    int64_t confirm_ms;   /* PENDING -> ABSENT delay */
    s_tomb_t *tombs;      /* tombstones, sorted by id (case-insensitive) */
    size_t n_tombs;       /* entries in tombs */
    size_t cap_tombs;     /* allocated entries */
    int64_t tomb_ms;      /* a tombstone is kept this long after its event ended */
};

/* ---- members ----------------------------------------------------------------------------- */

static bool s_name_valid(const char *s, size_t max)
{
    size_t len;

    if (!s)
        return false;
    len = strnlen(s, max + 1);
    if (len == 0 || len > max)
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

static s_member_t *s_member_find(const sc_registry_t *reg, const char *name)
{
    for (size_t i = 0; i < reg->n_members; i++)
        if (strcmp(reg->members[i]->name, name) == 0)
            return reg->members[i];
    return NULL;
}

/* Finds or adds a member (dead until it reports). NULL with *rc set on failure. */
static s_member_t *s_member_get(sc_registry_t *reg, const char *name, int *rc)
{
    s_member_t *m = s_member_find(reg, name), **grown;

    if (m)
        return m;
    if (reg->n_members >= SC_REGISTRY_MAX_MEMBERS) {
        *rc = SC_E_TOO_BIG;
        return NULL;
    }
    grown = realloc(reg->members, (reg->n_members + 1) * sizeof(*grown));
    if (!grown) {
        *rc = -ENOMEM;
        return NULL;
    }
    reg->members = grown;
    m = calloc(1, sizeof(*m));
    if (!m || !(m->name = strdup(name))) {
        free(m);
        *rc = -ENOMEM;
        return NULL;
    }
    reg->members[reg->n_members++] = m;
    return m;
}

/* ---- tombstones -------------------------------------------------------------------------- */

/* EventIds ordered case-insensitively (they are ASCII: sc_event_id_valid). */
static int s_id_cmp(const char *a, const char *b)
{
    for (;; a++, b++) {
        int d = tolower((unsigned char)*a) - tolower((unsigned char)*b);

        if (d || !*a)
            return d;
    }
}

/* Index of id's tombstone, or where it would go (*found false). */
static size_t s_tomb_pos(const sc_registry_t *reg, const char *id, bool *found)
{
    size_t lo = 0, hi = reg->n_tombs;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int d = s_id_cmp(reg->tombs[mid].id, id);

        if (d == 0) {
            *found = true;
            return mid;
        }
        if (d < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

static bool s_tomb_expired(const sc_registry_t *reg, const s_tomb_t *t, int64_t now_ms)
{
    return now_ms - t->ended_ms >= reg->tomb_ms;
}

/* The live tombstone of id, NULL if none (or expired). */
static const s_tomb_t *s_tomb_find(const sc_registry_t *reg, const char *id, int64_t now_ms)
{
    bool found;
    size_t i = s_tomb_pos(reg, id, &found);

    return found && !s_tomb_expired(reg, &reg->tombs[i], now_ms) ? &reg->tombs[i] : NULL;
}

/* Drops expired tombstones. */
static void s_tomb_prune(sc_registry_t *reg, int64_t now_ms)
{
    size_t k = 0;

    for (size_t i = 0; i < reg->n_tombs; i++)
        if (!s_tomb_expired(reg, &reg->tombs[i], now_ms))
            reg->tombs[k++] = reg->tombs[i];
    reg->n_tombs = k;
}

/* Adds (or refreshes) id's tombstone; at SC_REGISTRY_MAX_TOMBSTONES the one that ended first
 * is dropped. 0 or -ENOMEM (nothing changed). */
static int s_tomb_add(sc_registry_t *reg, const char *id, sc_reg_phase_t phase, int64_t ended_ms)
{
    bool found;
    size_t pos = s_tomb_pos(reg, id, &found);

    if (!found && reg->n_tombs >= SC_REGISTRY_MAX_TOMBSTONES) {
        size_t oldest = 0;

        for (size_t i = 1; i < reg->n_tombs; i++)
            if (reg->tombs[i].ended_ms < reg->tombs[oldest].ended_ms)
                oldest = i;
        if (reg->tombs[oldest].ended_ms > ended_ms)
            return 0; /* older than every one kept: the first to go anyway */
        memmove(&reg->tombs[oldest], &reg->tombs[oldest + 1],
                (reg->n_tombs - oldest - 1) * sizeof(reg->tombs[0]));
        reg->n_tombs--;
        pos = s_tomb_pos(reg, id, &found);
    }
    if (!found && reg->n_tombs == reg->cap_tombs) {
        size_t cap = reg->cap_tombs ? 2 * reg->cap_tombs : 64;
        s_tomb_t *grown;

        if (cap > SC_REGISTRY_MAX_TOMBSTONES)
            cap = SC_REGISTRY_MAX_TOMBSTONES;
        if (!(grown = realloc(reg->tombs, cap * sizeof(*grown))))
            return -ENOMEM;
        reg->tombs = grown;
        reg->cap_tombs = cap;
    }
    if (!found) {
        memmove(&reg->tombs[pos + 1], &reg->tombs[pos],
                (reg->n_tombs - pos) * sizeof(reg->tombs[0]));
        reg->n_tombs++;
        memset(&reg->tombs[pos], 0, sizeof(reg->tombs[pos]));
        memcpy(reg->tombs[pos].id, id, strlen(id) + 1);
    }
    reg->tombs[pos].phase = phase;
    reg->tombs[pos].ended_ms = ended_ms;
    return 0;
}

/* ---- events ------------------------------------------------------------------------------ */

static void s_event_free(s_event_t *e)
{
    if (!e)
        return;
    sc_event_clear(&e->pub.ev);
    free(e->votes);
    free(e->seen);
    free(e->ever);
    free(e);
}

static size_t s_event_index(const sc_registry_t *reg, const char *id)
{
    for (size_t i = 0; i < reg->n_events; i++)
        if (sc_event_id_equal(reg->events[i]->pub.ev.id, id))
            return i;
    return SIZE_MAX;
}

static s_event_t *s_event_find(const sc_registry_t *reg, const char *id)
{
    size_t i = s_event_index(reg, id);

    return i == SIZE_MAX ? NULL : reg->events[i];
}

/* Rebuilds pub.seen_by / pub.ever_seen_by from the votes (their storage grows with the votes
 * in s_vote_present, so this allocates nothing). */
static void s_event_refresh(s_event_t *e)
{
    e->pub.n_seen_by = 0;
    for (size_t i = 0; i < e->n_votes; i++) {
        e->ever[i] = e->votes[i].member->name;
        if (e->votes[i].kind == S_VOTE_PRESENT)
            e->seen[e->pub.n_seen_by++] = e->votes[i].member->name;
    }
    e->pub.seen_by = e->seen;
    e->pub.ever_seen_by = e->ever;
    e->pub.n_ever_seen_by = e->n_votes;
}

static s_vote_t *s_vote_find(s_event_t *e, const s_member_t *m)
{
    for (size_t i = 0; i < e->n_votes; i++)
        if (e->votes[i].member == m)
            return &e->votes[i];
    return NULL;
}

/* Sets m's vote on e to PRESENT, adding m as a witness if needed. */
static int s_vote_present(s_event_t *e, s_member_t *m)
{
    s_vote_t *v = s_vote_find(e, m), *grown;
    const char **seen, **ever;

    if (v) {
        v->kind = S_VOTE_PRESENT;
        return 0;
    }
    grown = realloc(e->votes, (e->n_votes + 1) * sizeof(*grown));
    if (!grown)
        return -ENOMEM;
    e->votes = grown;
    seen = realloc(e->seen, (e->n_votes + 1) * sizeof(*seen));
    if (!seen)
        return -ENOMEM;
    e->seen = seen;
    ever = realloc(e->ever, (e->n_votes + 1) * sizeof(*ever));
    if (!ever)
        return -ENOMEM;
    e->ever = ever;
    e->votes[e->n_votes++] = (s_vote_t){.member = m, .kind = S_VOTE_PRESENT, .since_ms = 0};
    return 0;
}

static int s_changes_add_id(sc_registry_changes_t *ch, sc_reg_change_kind_t kind, const char *id,
                            sc_start_kind_t start_kind)
{
    sc_reg_change_t *grown;

    if (!ch)
        return 0;
    grown = realloc(ch->items, (ch->n + 1) * sizeof(*grown));
    if (!grown)
        return -ENOMEM;
    ch->items = grown;
    memset(&grown[ch->n], 0, sizeof(grown[ch->n]));
    grown[ch->n].kind = kind;
    memcpy(grown[ch->n].id, id, strlen(id) + 1);
    grown[ch->n].start_kind = start_kind;
    ch->n++;
    return 0;
}

static int s_changes_add(sc_registry_changes_t *ch, sc_reg_change_kind_t kind, const s_event_t *e)
{
    return s_changes_add_id(ch, kind, e->pub.ev.id, e->pub.start_kind);
}

static int s_make_final(s_event_t *e, int64_t now_ms, sc_registry_changes_t *ch)
{
    bool started = e->pub.ev.status == SC_EVENT_STARTED;

    e->pub.phase = started ? SC_REG_ENDED : SC_REG_CANCELLED;
    e->pub.ended_ms = now_ms;
    return s_changes_add(ch, started ? SC_CHG_ENDED : SC_CHG_CANCELLED, e);
}

/* Ages PENDING votes and decides whether active events disappeared. */
/* Marks the members whose VM a started Preempt or Terminate is deleting: their last
 * document is stale from then on (the VM goes with its agent, which falls silent only
 * dead_after later), so their "present" keeps no event of anyone (nemesis seed 77: a deleted
 * VM's vote kept another event, and its fault domain, 15 s past its end). */
static void s_mark_evicted(sc_registry_t *reg)
{
    /* per document applied (1,000 members): the marks are cleared only when some are set */
    if (reg->n_evicted)
        for (size_t k = 0; k < reg->n_members; k++)
            reg->members[k]->evicted = false;
    reg->n_evicted = 0;
    for (size_t i = 0; i < reg->n_events; i++) {
        const sc_event_t *ev = &reg->events[i]->pub.ev;

        if (reg->events[i]->pub.phase != SC_REG_ACTIVE ||
            (ev->type != SC_EVENT_PREEMPT && ev->type != SC_EVENT_TERMINATE) ||
            !sc_event_is_started(ev))
            continue;
        for (size_t r = 0; r < ev->n_resources; r++) {
            s_member_t *m = s_member_find(reg, ev->resources[r]);
            if (m) {
                m->evicted = true;
                reg->n_evicted++;
            }
        }
    }
}

static int s_evaluate(sc_registry_t *reg, int64_t now_ms, sc_registry_changes_t *ch)
{
    int rc = 0;

    s_mark_evicted(reg);

    for (size_t i = 0; i < reg->n_events; i++) {
        s_event_t *e = reg->events[i];
        bool live_present = false, absent = false;

        if (e->pub.phase != SC_REG_ACTIVE)
            continue;
        for (size_t j = 0; j < e->n_votes; j++) {
            s_vote_t *v = &e->votes[j];

            if (v->kind == S_VOTE_PENDING && now_ms - v->since_ms >= reg->confirm_ms)
                v->kind = S_VOTE_ABSENT;
            if (v->kind == S_VOTE_ABSENT)
                absent = true;
            else if (v->kind == S_VOTE_PRESENT && v->member->alive && !v->member->evicted)
                live_present = true;
        }
        /* a PENDING vote (a fresh view that lacks the event) holds nothing once a witness saw
         * it go: an IMDS that kept its view and lost the event outweighs one that may have
         * come back empty (with no ABSENT vote, nothing ends before PENDING is confirmed) */
        if (!live_present && absent && (rc = s_make_final(e, now_ms, ch)) < 0)
            return rc;
        s_event_refresh(e);
    }
    return 0;
}

/* A new event from content ev, first reported by m. */
static int s_event_add(sc_registry_t *reg, const sc_event_t *ev, s_event_t **ret)
{
    s_event_t *e = calloc(1, sizeof(*e)), **grown;

    if (!e)
        return -ENOMEM;
    if (sc_event_copy(ev, &e->pub.ev) < 0)
        goto fail;
    grown = realloc(reg->events, (reg->n_events + 1) * sizeof(*grown));
    if (!grown)
        goto fail;
    reg->events = grown;
    reg->events[reg->n_events++] = e;
    *ret = e;
    return 0;
fail:
    s_event_free(e);
    return -ENOMEM;
}

/* ---- public API -------------------------------------------------------------------------- */

int sc_registry_new(int64_t confirm_ms, sc_registry_t **ret_reg)
{
    sc_registry_t *reg;

    if (!ret_reg)
        return -EINVAL;
    reg = calloc(1, sizeof(*reg));
    if (!reg)
        return -ENOMEM;
    reg->confirm_ms = confirm_ms > 0 ? confirm_ms : SC_REGISTRY_CONFIRM_MS_DEFAULT;
    reg->tomb_ms = SC_REGISTRY_TOMBSTONE_MS_DEFAULT;
    *ret_reg = reg;
    return 0;
}

void sc_registry_destroy(sc_registry_t **preg)
{
    sc_registry_t *reg;

    if (!preg || !(reg = *preg))
        return;
    for (size_t i = 0; i < reg->n_events; i++)
        s_event_free(reg->events[i]);
    free(reg->events);
    for (size_t i = 0; i < reg->n_members; i++) {
        free(reg->members[i]->name);
        free(reg->members[i]);
    }
    free(reg->members);
    free(reg->tombs);
    free(reg);
    *preg = NULL;
}

void sc_registry_changes_release(sc_registry_changes_t *changes)
{
    if (!changes)
        return;
    free(changes->items);
    changes->items = NULL;
    changes->n = 0;
}

/* A copy of an event the merge rule does not apply: StaleCopy when it would have changed or
 * created something, nothing when it only repeats what the registry holds. */
static int s_stale_copy(const s_event_t *e, const sc_event_t *d, sc_registry_changes_t *ch)
{
    if (e && (e->pub.phase != SC_REG_ACTIVE || sc_event_equal(&e->pub.ev, d)))
        return 0;
    return s_changes_add_id(ch, SC_CHG_STALE_COPY, e ? e->pub.ev.id : d->id,
                            e ? e->pub.start_kind : SC_START_NONE);
}

/* Applies one reported event of member m's document, observed at observed_ms (see the merge
 * rule in sc_registry.h). */
static int s_apply_event(sc_registry_t *reg, s_member_t *m, const sc_event_t *d,
                         int64_t observed_ms, bool blind, int64_t now_ms, sc_registry_changes_t *ch)
{
    s_event_t *e = s_event_find(reg, d->id);
    bool d_started = sc_event_is_started(d), was_started;
    sc_event_t copy;
    int rc;

    if (!e && s_tomb_find(reg, d->id, now_ms))
        return s_changes_add_id(ch, SC_CHG_ENDED_COPY, d->id, SC_START_NONE);
    if (!e && blind)
        return s_stale_copy(NULL, d, ch); /* a blind member's copy never creates an event */
    if (!e) {
        if ((rc = s_event_add(reg, d, &e)) < 0)
            return rc;
        e->pub.phase = SC_REG_ACTIVE;
        e->pub.first_seen_ms = now_ms;
        e->pub.last_seen_ms = now_ms;
        e->pub.observed_ms = observed_ms;
        e->in_doc = true;
        if (d_started) {
            e->pub.start_kind = SC_START_DIRECT;
            e->pub.started_ms = now_ms;
        }
        if ((rc = s_vote_present(e, m)) < 0)
            return rc;
        return s_changes_add(ch, d_started ? SC_CHG_NEW_STARTED : SC_CHG_NEW, e);
    }
    if (e->pub.phase != SC_REG_ACTIVE)
        return 0; /* final: a lagging member; nothing more happens to it */
    e->in_doc = true;
    e->pub.last_seen_ms = now_ms;
    if ((rc = s_vote_present(e, m)) < 0)
        return rc;
    if (blind)
        return s_stale_copy(e, d, ch); /* a witness, as before; its content counts for nothing */
    was_started = sc_event_is_started(&e->pub.ev);
    if (was_started && !d_started)
        return 0; /* a member lagging behind the start: keep the newer view */
    if (sc_event_equal(&e->pub.ev, d)) {
        if (observed_ms > e->pub.observed_ms)
            e->pub.observed_ms = observed_ms; /* the same content, seen more recently */
        return 0;
    }
    /* The freshest witness wins (ties: the later arrival), but a start is a fact whatever the
     * age of the copy that tells it: the status only moves forward. */
    if (observed_ms < e->pub.observed_ms && (was_started || !d_started))
        return s_stale_copy(e, d, ch);
    if ((rc = sc_event_copy(d, &copy)) < 0)
        return rc;
    memcpy(copy.id, e->pub.ev.id, sizeof(copy.id)); /* keep the id as first seen */
    sc_event_clear(&e->pub.ev);
    e->pub.ev = copy;
    if (observed_ms > e->pub.observed_ms)
        e->pub.observed_ms = observed_ms;
    if (!was_started && d_started) {
        e->pub.start_kind = e->pub.approved ? SC_START_APPROVED : SC_START_FORCED;
        e->pub.started_ms = now_ms;
        return s_changes_add(ch, SC_CHG_STARTED, e);
    }
    return s_changes_add(ch, SC_CHG_UPDATED, e);
}

int sc_registry_apply_doc(sc_registry_t *reg, const char *member, const char *boot_id,
                          const sc_doc_t *doc, int64_t observed_at_ms, bool blind, int64_t now_ms,
                          sc_registry_changes_t *ret_changes)
{
    sc_registry_changes_t ch = {0};
    s_member_t *m;
    size_t n_new = 0;
    bool fresh, new_boot;
    int rc = 0;

    if (!reg || !doc || !s_name_valid(member, SC_MEMBER_NAME_MAX) ||
        (boot_id && *boot_id && !s_name_valid(boot_id, SC_BOOT_ID_MAX)) ||
        (doc->n_events && !doc->events) || doc->n_events > SC_DOC_MAX_EVENTS)
        return -EINVAL;
    for (size_t i = 0; i < doc->n_events; i++) {
        if (!sc_event_id_valid(doc->events[i].id))
            return -EINVAL;
        if (!blind && !s_event_find(reg, doc->events[i].id) &&
            !s_tomb_find(reg, doc->events[i].id, now_ms))
            n_new++;
    }
    if (reg->n_events + n_new > SC_REGISTRY_MAX_EVENTS)
        return SC_E_TOO_BIG;
    if (!(m = s_member_get(reg, member, &rc)))
        return rc;
    m->alive = true;
    new_boot = boot_id && *boot_id && m->boot_id[0] && strcmp(boot_id, m->boot_id);

    /* An older document of the same agent boot than the last one applied (a lower incarnation,
     * not read after it) is stale: it neither changes nor votes. A lower incarnation read later
     * is IMDS's own restart: a fresh view, below. */
    if (m->has_doc && !new_boot && doc->incarnation < m->incarnation &&
        observed_at_ms <= m->observed_ms) {
        for (size_t i = 0; i < doc->n_events && rc >= 0; i++)
            if (!s_tomb_find(reg, doc->events[i].id, now_ms))
                rc = s_stale_copy(s_event_find(reg, doc->events[i].id), &doc->events[i], &ch);
        if (rc >= 0)
            rc = s_evaluate(reg, now_ms, &ch);
        goto out;
    }

    /* A restarted agent (new boot id) or IMDS (incarnation backwards) sends a fresh view. So
     * does a member's first document since this registry was made, unless its agent's boot was
     * seeded (sc_registry_seed_member): after a coordinator restart with its boot id unknown
     * the VM may have rebooted meanwhile and its IMDS come back empty. (Without restored votes
     * the first document has nothing to make PENDING.) */
    fresh = !m->has_doc || new_boot || doc->incarnation < m->incarnation;
    m->has_doc = true;
    m->incarnation = doc->incarnation;
    m->observed_ms = observed_at_ms;
    if (boot_id && *boot_id)
        memcpy(m->boot_id, boot_id, strlen(boot_id) + 1);

    for (size_t i = 0; i < reg->n_events; i++)
        reg->events[i]->in_doc = false;
    for (size_t i = 0; i < doc->n_events; i++)
        if ((rc = s_apply_event(reg, m, &doc->events[i], observed_at_ms, blind, now_ms, &ch)) < 0)
            goto out;
    for (size_t i = 0; i < reg->n_events; i++) {
        s_event_t *e = reg->events[i];
        s_vote_t *v;

        if (e->in_doc || e->pub.phase != SC_REG_ACTIVE || !(v = s_vote_find(e, m)))
            continue;
        if (v->kind == S_VOTE_PRESENT) {
            v->kind = fresh ? S_VOTE_PENDING : S_VOTE_ABSENT;
            v->since_ms = now_ms;
        }
    }
    rc = s_evaluate(reg, now_ms, &ch);
out:
    if (rc < 0 || !ret_changes)
        sc_registry_changes_release(&ch);
    else
        *ret_changes = ch;
    return rc;
}

int sc_registry_seed_member(sc_registry_t *reg, const char *member, const char *boot_id,
                            int64_t incarnation, int64_t observed_ms)
{
    s_member_t *m;
    int rc = 0;

    if (!reg || !s_name_valid(member, SC_MEMBER_NAME_MAX) || !boot_id || !*boot_id ||
        strlen(boot_id) > SC_BOOT_ID_MAX)
        return -EINVAL;
    if (!(m = s_member_get(reg, member, &rc)))
        return rc;
    if (m->has_doc)
        return 0;
    memcpy(m->boot_id, boot_id, strlen(boot_id) + 1);
    m->incarnation = incarnation;
    m->observed_ms = observed_ms;
    m->has_doc = true;
    return 0;
}

int sc_registry_set_alive(sc_registry_t *reg, const char *member, bool alive, int64_t now_ms,
                          sc_registry_changes_t *ret_changes)
{
    sc_registry_changes_t ch = {0};
    s_member_t *m;
    int rc = 0;

    if (!reg || !s_name_valid(member, SC_MEMBER_NAME_MAX))
        return -EINVAL;
    if (!(m = s_member_get(reg, member, &rc)))
        return rc;
    m->alive = alive;
    rc = s_evaluate(reg, now_ms, &ch);
    if (rc < 0 || !ret_changes)
        sc_registry_changes_release(&ch);
    else
        *ret_changes = ch;
    return rc;
}

int sc_registry_forget_member(sc_registry_t *reg, const char *member, int64_t now_ms,
                              sc_registry_changes_t *ret_changes)
{
    sc_registry_changes_t ch = {0};
    s_member_t *m;
    size_t mi = 0;
    int rc = 0;

    if (!reg || !member)
        return -EINVAL;
    if (!(m = s_member_find(reg, member)))
        return SC_E_NOT_FOUND;
    for (size_t i = 0; i < reg->n_events; i++) {
        s_event_t *e = reg->events[i];
        s_vote_t *v = s_vote_find(e, m);

        if (!v)
            continue;
        memmove(v, v + 1, (size_t)(e->votes + e->n_votes - (v + 1)) * sizeof(*v));
        e->n_votes--;
        /* the member alone kept it: nobody is left who could ever report its end */
        if (e->n_votes == 0 && e->pub.phase == SC_REG_ACTIVE &&
            (rc = s_make_final(e, now_ms, &ch)) < 0)
            goto out;
        s_event_refresh(e);
    }
    while (reg->members[mi] != m)
        mi++;
    memmove(&reg->members[mi], &reg->members[mi + 1],
            (reg->n_members - mi - 1) * sizeof(reg->members[0]));
    reg->n_members--;
    free(m->name);
    free(m);
    rc = s_evaluate(reg, now_ms, &ch);
out:
    if (rc < 0 || !ret_changes)
        sc_registry_changes_release(&ch);
    else
        *ret_changes = ch;
    return rc;
}

int sc_registry_tick(sc_registry_t *reg, int64_t now_ms, sc_registry_changes_t *ret_changes)
{
    sc_registry_changes_t ch = {0};
    int rc;

    if (!reg)
        return -EINVAL;
    s_tomb_prune(reg, now_ms);
    rc = s_evaluate(reg, now_ms, &ch);
    if (rc < 0 || !ret_changes)
        sc_registry_changes_release(&ch);
    else
        *ret_changes = ch;
    return rc;
}

int sc_registry_mark_approved(sc_registry_t *reg, const char *event_id)
{
    s_event_t *e;

    if (!reg || !event_id)
        return -EINVAL;
    if (!(e = s_event_find(reg, event_id)))
        return SC_E_NOT_FOUND;
    e->pub.approved = true;
    return 0;
}

int sc_registry_remove_event(sc_registry_t *reg, const char *event_id)
{
    const sc_reg_event_t *pub;
    size_t i;
    int rc;

    if (!reg || !event_id)
        return -EINVAL;
    if ((i = s_event_index(reg, event_id)) == SIZE_MAX)
        return SC_E_NOT_FOUND;
    pub = &reg->events[i]->pub;
    if (pub->phase != SC_REG_ACTIVE &&
        (rc = s_tomb_add(reg, pub->ev.id, pub->phase, pub->ended_ms)) < 0)
        return rc;
    s_event_free(reg->events[i]);
    memmove(&reg->events[i], &reg->events[i + 1], (reg->n_events - i - 1) * sizeof(reg->events[0]));
    reg->n_events--;
    return 0;
}

int sc_registry_restore_event(sc_registry_t *reg, const sc_reg_restore_t *r)
{
    s_event_t *e;
    size_t idx;
    int rc = 0;

    if (!reg || !r || !r->ev || !sc_event_id_valid(r->ev->id) || r->phase < 0 ||
        r->phase >= SC_REG_PHASE_MAX || r->start_kind < 0 || r->start_kind >= SC_START_MAX ||
        (r->n_witnesses && !r->witnesses) || r->n_witnesses > SC_REGISTRY_MAX_MEMBERS)
        return -EINVAL;
    for (size_t i = 0; i < r->n_witnesses; i++)
        if (!s_name_valid(r->witnesses[i], SC_MEMBER_NAME_MAX))
            return -EINVAL;
    idx = s_event_index(reg, r->ev->id);
    if (idx == SIZE_MAX && reg->n_events >= SC_REGISTRY_MAX_EVENTS)
        return SC_E_TOO_BIG;
    if (idx != SIZE_MAX) {
        s_event_free(reg->events[idx]);
        memmove(&reg->events[idx], &reg->events[idx + 1],
                (reg->n_events - idx - 1) * sizeof(reg->events[0]));
        reg->n_events--;
    }
    if ((rc = s_event_add(reg, r->ev, &e)) < 0)
        return rc;
    e->pub.phase = r->phase;
    e->pub.start_kind = r->start_kind;
    e->pub.approved = r->approved;
    e->pub.first_seen_ms = r->first_seen_ms;
    e->pub.last_seen_ms = r->last_seen_ms;
    e->pub.started_ms = r->started_ms;
    e->pub.ended_ms = r->ended_ms;
    e->pub.observed_ms = r->observed_ms;
    for (size_t i = 0; i < r->n_witnesses; i++) {
        s_member_t *m = s_member_get(reg, r->witnesses[i], &rc);

        if (!m || (rc = s_vote_present(e, m)) < 0)
            return rc;
    }
    s_event_refresh(e);
    return 0;
}

int sc_registry_set_tombstone_ms(sc_registry_t *reg, int64_t keep_ms)
{
    if (!reg)
        return -EINVAL;
    reg->tomb_ms = keep_ms > 0 ? keep_ms : SC_REGISTRY_TOMBSTONE_MS_DEFAULT;
    return 0;
}

int sc_registry_add_tombstone(sc_registry_t *reg, const char *event_id, sc_reg_phase_t phase,
                              int64_t ended_ms)
{
    if (!reg || !sc_event_id_valid(event_id) ||
        (phase != SC_REG_ENDED && phase != SC_REG_CANCELLED))
        return -EINVAL;
    return s_tomb_add(reg, event_id, phase, ended_ms);
}

bool sc_registry_is_tombstoned(const sc_registry_t *reg, const char *event_id, int64_t now_ms)
{
    return reg && event_id && s_tomb_find(reg, event_id, now_ms) != NULL;
}

size_t sc_registry_tombstone_count(const sc_registry_t *reg)
{
    return reg ? reg->n_tombs : 0;
}

size_t sc_registry_count(const sc_registry_t *reg)
{
    return reg ? reg->n_events : 0;
}

const sc_reg_event_t *sc_registry_event_at(const sc_registry_t *reg, size_t i)
{
    return reg && i < reg->n_events ? &reg->events[i]->pub : NULL;
}

const sc_reg_event_t *sc_registry_find(const sc_registry_t *reg, const char *event_id)
{
    s_event_t *e;

    if (!reg || !event_id)
        return NULL;
    e = s_event_find(reg, event_id);
    return e ? &e->pub : NULL;
}

bool sc_reg_event_seen_by(const sc_reg_event_t *e, const char *member)
{
    if (!e || !member)
        return false;
    for (size_t i = 0; i < e->n_seen_by; i++)
        if (strcmp(e->seen_by[i], member) == 0)
            return true;
    return false;
}

bool sc_registry_member_alive(const sc_registry_t *reg, const char *member)
{
    const s_member_t *m;

    if (!reg || !member)
        return false;
    m = s_member_find(reg, member);
    return m && m->alive;
}

const char *sc_reg_phase_name(sc_reg_phase_t p)
{
    static const char *const names[SC_REG_PHASE_MAX] = {"Active", "Ended", "Cancelled"};

    return p >= 0 && p < SC_REG_PHASE_MAX ? names[p] : "Unknown";
}

const char *sc_start_kind_name(sc_start_kind_t k)
{
    static const char *const names[SC_START_MAX] = {"None", "Approved", "Forced", "Direct"};

    return k >= 0 && k < SC_START_MAX ? names[k] : "Unknown";
}

const char *sc_reg_change_name(sc_reg_change_kind_t k)
{
    static const char *const names[SC_CHG_MAX] = {"New",   "NewStarted", "Updated",   "Started",
                                                  "Ended", "Cancelled",  "StaleCopy", "EndedCopy"};

    return k >= 0 && k < SC_CHG_MAX ? names[k] : "Unknown";
}
