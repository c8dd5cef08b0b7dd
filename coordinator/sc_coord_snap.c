/* Snapshots between members (Raft's InstallSnapshot) and compaction of the decision log.
 *
 * Every member saves a snapshot of its state every --snapshot-every applied entries and then
 * compacts its log: the entries more than --log-keep behind the snapshot go (the store keeps
 * what a restart replays). A follower whose next entry the leader no longer holds gets the
 * leader's snapshot instead: its state (sc_cstate) and its replicated tables (what `history`
 * and `status` read), as of the leader's applied index, made once and shared by every
 * follower that needs it. A message is at most 1 MiB, so the snapshot goes in chunks of
 * --snapshot-chunk bytes, one at a time: the follower answers each with the bytes it holds
 * (append_ack.received), the leader sends the next on that answer, and its heartbeats probe
 * (an empty chunk) or send the held chunk again after S_RESEND_MS, so a lost chunk or answer
 * costs a heartbeat, not the transfer. The follower installs the whole in one transaction
 * (sc_store_install): when its log holds the snapshot's last entry (same index and term), the
 * entries after it stay (Raft §7), else the whole log goes; it answers the snapshot's index, and
 * the leader's appends go on from there. */
#include "sc_coord_int.h"

#include "sc_error.h"
#include "sc_log.h"
#include "sc_time.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define S_RESEND_MS 1000 /* a chunk not answered is sent again after this long */
#define S_RETRY_MS 5000  /* a follower that could not install one gets it again after this */
#define S_TOTAL_MAX (1ull << 30) /* the largest snapshot a follower takes (bytes) */

struct sc_csnap {
    /* leader: the snapshot sent (NULL text: none made) */
    char *text;       /* {"index","term","state":{...},"tables":{...}} */
    size_t len;       /* its bytes */
    int64_t index;    /* it includes the log up to this index */
    int64_t term;     /* of that entry */
    int64_t *held;    /* per member: bytes it said it holds (-1: not being sent one) */
    int64_t *sent_to; /* per member: the end of the last chunk sent */
    int64_t *sent_ms; /* per member: when */
    int64_t *fail_ms; /* per member: when it said it could not install it (0: never) */
    /* follower: the snapshot being received */
    char *rx;                        /* its bytes so far (NUL-terminated) */
    size_t rx_len;                   /* bytes held */
    size_t rx_total;                 /* bytes of the whole */
    int64_t rx_index;                /* its last included index */
    int64_t rx_term;                 /* and term */
    char rx_leader[SC_NAME_MAX + 1]; /* and the leader sending it */
};

int sc_coord_snap_new(sc_coord_t *c)
{
    sc_csnap_t *s = c->raft->snap = calloc(1, sizeof(*s));

    if (!s || !(s->held = malloc(c->n_members * sizeof(int64_t))) ||
        !(s->sent_to = calloc(c->n_members, sizeof(int64_t))) ||
        !(s->sent_ms = calloc(c->n_members, sizeof(int64_t))) ||
        !(s->fail_ms = calloc(c->n_members, sizeof(int64_t))))
        return -ENOMEM;
    for (size_t i = 0; i < c->n_members; i++)
        s->held[i] = -1;
    return sc_store_log_base(c->store, &c->raft->base_index, &c->raft->base_term);
}

void sc_coord_snap_destroy(sc_coord_t *c)
{
    sc_csnap_t *s = c->raft ? c->raft->snap : NULL;

    if (!s)
        return;
    free(s->text);
    free(s->held);
    free(s->sent_to);
    free(s->sent_ms);
    free(s->fail_ms);
    free(s->rx);
    free(s);
    c->raft->snap = NULL;
}

/* ---- compaction ------------------------------------------------------------------------- */

void sc_coord_snap_compact(sc_coord_t *c)
{
    sc_craft_t *r = c->raft;
    int64_t through = c->snapshot_at - c->o.log_keep, base = 0, term = 0;
    int rc;

    if (!r || through <= r->base_index)
        return;
    if ((rc = sc_store_compact(c->store, through)) < 0 ||
        (rc = sc_store_log_base(c->store, &base, &term)) < 0) {
        sc_log_warn("log not compacted (it keeps growing: a restart replays from the snapshot)",
                    "through=%lld rc=%s why=\"%s\"", (long long)through, sc_errname(rc),
                    sc_log_q(sc_store_errmsg(c->store)));
        return;
    }
    if (base > r->base_index)
        sc_log_debug("log compacted", "base=%lld snapshot=%lld last=%lld", (long long)base,
                     (long long)c->snapshot_at, (long long)r->last_index);
    r->base_index = base;
    r->base_term = term;
}

/* ---- leader ------------------------------------------------------------------------------- */

/* The term of entry index of our log (the base's included). */
static int s_term_at(sc_coord_t *c, int64_t index, int64_t *ret_term)
{
    sc_dlog_entry_t *v = NULL;
    size_t n = 0;
    int rc;

    if (index == c->raft->base_index) {
        *ret_term = c->raft->base_term;
        return 0;
    }
    if ((rc = sc_store_entries(c->store, index, 1, &v, &n)) < 0)
        return rc;
    rc = n == 1 && v[0].index == index ? 0 : SC_E_NOT_FOUND;
    if (rc == 0)
        *ret_term = v[0].term;
    sc_dlog_entries_free(v, n);
    return rc;
}

/* Our snapshot as of the applied index: the state and the tables, read together (nothing is
 * applied meanwhile: one thread). */
static int s_make(sc_coord_t *c)
{
    sc_craft_t *r = c->raft;
    sc_csnap_t *s = r->snap;
    json_object *o = json_object_new_object(), *state = NULL, *tables = NULL;
    int64_t term = 0;
    const char *t;
    int rc;

    if (sc_cstate_applied(c->cs) != r->applied) {
        json_object_put(o);
        return SC_E_STATE; /* inside a commit wait: the next send makes it */
    }
    if ((rc = s_term_at(c, r->applied, &term)) < 0 || (rc = sc_cstate_to_json(c->cs, &state)) < 0 ||
        (rc = sc_store_tables_json(c->store, &tables)) < 0) {
        json_object_put(state);
        json_object_put(o);
        return rc;
    }
    json_object_object_add(o, "index", json_object_new_int64(r->applied));
    json_object_object_add(o, "term", json_object_new_int64(term));
    json_object_object_add(o, "state", state);
    json_object_object_add(o, "tables", tables);
    t = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    free(s->text);
    s->len = strlen(t);
    s->text = strdup(t);
    json_object_put(o);
    if (!s->text)
        return -ENOMEM;
    s->index = r->applied;
    s->term = term;
    for (size_t i = 0; i < c->n_members; i++) {
        s->held[i] = -1;
        s->sent_to[i] = 0;
    }
    sc_log_info("snapshot made for followers behind the log's base",
                "index=%lld bytes=%zu base=%lld", (long long)s->index, s->len,
                (long long)r->base_index);
    return 0;
}

/* Bytes of the chunk from off: at most the chunk size, not cutting a UTF-8 character. */
static size_t s_chunk(const sc_coord_t *c, const sc_csnap_t *s, size_t off)
{
    size_t max = (size_t)c->o.snapshot_chunk, n = s->len - off;

    if (n <= max)
        return n;
    n = max;
    while (n > 0 && ((unsigned char)s->text[off + n] & 0xC0) == 0x80)
        n--;
    return n;
}

void sc_coord_snap_send(sc_coord_t *c, size_t to, int64_t round, bool answer)
{
    sc_craft_t *r = c->raft;
    sc_csnap_t *s = r->snap;
    int64_t now = sc_mono_ms();
    sc_msg_t *m = NULL;
    size_t off, n;
    int rc;

    if (!s->text || s->index < r->base_index) {
        if ((rc = s_make(c)) < 0) {
            if (rc != SC_E_STATE)
                sc_log_err("snapshot not made: the follower stays behind", "to=%s rc=%s why=\"%s\"",
                           c->members[to].name, sc_errname(rc),
                           sc_log_q(sc_store_errmsg(c->store)));
            return;
        }
    }
    if (s->held[to] < 0 && s->fail_ms[to] && now - s->fail_ms[to] < S_RETRY_MS) {
        off = n = 0; /* it could not install the last one: a heartbeat, no transfer yet */
    } else {
        if (s->held[to] < 0) {
            s->held[to] = 0;
            s->sent_to[to] = 0;
            sc_log_notice("snapshot sent: the entries this member is owed were compacted",
                          "to=%s index=%lld bytes=%zu next=%lld base=%lld", c->members[to].name,
                          (long long)s->index, s->len, (long long)r->next[to],
                          (long long)r->base_index);
        }
        off = (size_t)s->held[to];
        /* a heartbeat while a chunk is out and fresh: a probe (the answer says what it holds) */
        n = round && s->sent_to[to] > s->held[to] && now - s->sent_ms[to] < S_RESEND_MS
                ? 0
                : s_chunk(c, s, off);
    }
    if (sc_msg_new(SC_MSG_SNAPSHOT, c->name, (uint64_t)sc_elect_term(r->e), ++c->seq, &m) < 0)
        return;
    snprintf(m->snapshot.leader, sizeof(m->snapshot.leader), "%s", c->name);
    m->snapshot.last_index = (uint64_t)s->index;
    m->snapshot.last_term = (uint64_t)s->term;
    m->snapshot.total = s->len;
    m->snapshot.offset = off;
    m->snapshot.round = round;
    if (!(m->snapshot.data = strndup(s->text + off, n))) {
        sc_msg_destroy(&m);
        return;
    }
    if (n) {
        s->sent_to[to] = (int64_t)(off + n);
        s->sent_ms[to] = now;
    }
    r->sent_ms[to] = now;
    sc_coord_raft_send(c, to, m, answer);
    sc_msg_destroy(&m);
}

bool sc_coord_snap_on_ack(sc_coord_t *c, size_t mi, const sc_msg_append_ack_t *a)
{
    sc_craft_t *r = c->raft;
    sc_csnap_t *s = r->snap;

    if (a->received < 0)
        return false;                       /* an append's answer */
    if (a->success && a->match_index > 0) { /* installed (or had it): appends from here */
        /* what it holds is what it says now, not what it acknowledged before the transfer
         * (an install may have taken entries from its log): lowered too */
        if (s->held[mi] >= 0) {
            r->match[mi] = (int64_t)a->match_index;
            r->next[mi] = (int64_t)a->match_index + 1;
        }
        s->held[mi] = -1;
        return false;
    }
    if (!s->text || s->held[mi] < 0)
        return true;   /* an old transfer's */
    if (!a->success) { /* it could not install it (said in its log): again, a while later */
        s->held[mi] = -1;
        s->fail_ms[mi] = sc_mono_ms();
        return true;
    }
    if (a->received != s->held[mi]) { /* a chunk arrived, or it lacks one: send from there */
        s->held[mi] = a->received > (int64_t)s->len ? (int64_t)s->len : a->received;
        sc_coord_snap_send(c, mi, 0, false);
    }
    return true;
}

/* ---- follower ----------------------------------------------------------------------------- */

/* Forgets the snapshot being received. */
static void s_rx_drop(sc_csnap_t *s)
{
    free(s->rx);
    s->rx = NULL;
    s->rx_len = s->rx_total = 0;
}

bool sc_coord_snap_skip_compacted(const sc_coord_t *c, int64_t *prev, int64_t *prev_term,
                                  const sc_msg_entry_t **ent, size_t *n_ent)
{
    const sc_craft_t *r = c->raft;
    size_t skip;

    if (*prev >= r->base_index)
        return false;
    /* entries we compacted: committed, so the leader's are the same (log matching) */
    skip = (size_t)(r->base_index - *prev) < *n_ent ? (size_t)(r->base_index - *prev) : *n_ent;
    *ent += skip;
    *n_ent -= skip;
    *prev += (int64_t)skip;
    if (*prev < r->base_index)
        return true;
    *prev_term = r->base_term;
    return false;
}

/* Installs the whole snapshot received: store, state, log position. Our entries after its
 * index stay when our log holds that index with its term (Raft §7: they may be what the leader
 * counted as stored here), not applied: the leader's commit index applies them. The reason of
 * a refusal in err (logged). */
static int s_install(sc_coord_t *c, char *err, size_t errlen)
{
    sc_craft_t *r = c->raft;
    sc_csnap_t *s = r->snap;
    json_object *o = json_tokener_parse(s->rx), *state = NULL, *tables = NULL;
    const char **names = calloc(c->n_members, sizeof(*names));
    sc_cstate_t *cs = NULL;
    bool kept = false;
    int rc = -EINVAL;

    for (size_t i = 0; names && i < c->n_members; i++)
        names[i] = c->members[i].name;
    /* the state first, into a new one (ours is left as it is if the snapshot is refused),
     * then the store in one transaction, then the new state replaces ours */
    if (!names)
        rc = -ENOMEM;
    else if (!o || !json_object_object_get_ex(o, "state", &state) ||
             !json_object_object_get_ex(o, "tables", &tables))
        snprintf(err, errlen, "not a snapshot (no state or tables)");
    else if ((rc = sc_cstate_new(names, c->n_members, &cs)) >= 0 &&
             (rc = sc_cstate_from_json(cs, state, err, errlen)) >= 0) {
        if (sc_cstate_applied(cs) != s->rx_index) {
            snprintf(err, errlen, "its state applied %lld, not %lld",
                     (long long)sc_cstate_applied(cs), (long long)s->rx_index);
            rc = -EINVAL;
        } else
            rc = sc_store_install(c->store, s->rx_index, s->rx_term, sc_wall_ms(), tables,
                                  json_object_to_json_string_ext(state, JSON_C_TO_STRING_PLAIN),
                                  &kept, err, errlen);
    }
    json_object_put(o);
    free(names);
    if (rc < 0) {
        sc_cstate_destroy(&cs);
        sc_log_err("leader's snapshot not installed", "index=%lld rc=%s why=\"%s\"",
                   (long long)s->rx_index, sc_errname(rc), sc_log_q(err));
        return rc;
    }
    sc_cstate_destroy(&c->cs);
    c->cs = cs;
    if ((rc = sc_coord_restart_reconcile_registry(c)) < 0)
        sc_log_err("registry not brought in line with the snapshot's state", "rc=%s",
                   sc_errname(rc)); /* the take-over does it again */
    r->base_index = r->commit = r->applied = s->rx_index;
    r->base_term = s->rx_term;
    if (!kept) { /* our log after it was not the leader's, or there was none: it starts here */
        r->last_index = s->rx_index;
        r->last_term = s->rx_term;
    }
    c->snapshot_at = s->rx_index;
    c->dirty = true;
    sc_coord_raft_set_log(c);
    sc_log_notice("snapshot installed: the log goes on from it",
                  "index=%lld term=%lld bytes=%zu last=%lld", (long long)s->rx_index,
                  (long long)s->rx_term, s->rx_len, (long long)r->last_index);
    return 0;
}

bool sc_coord_snap_on_chunk(sc_coord_t *c, const sc_msg_snapshot_t *m, int64_t *ret_match,
                            int64_t *ret_received)
{
    sc_craft_t *r = c->raft;
    sc_csnap_t *s = r->snap;
    size_t n = m->data ? strlen(m->data) : 0;

    *ret_match = 0;
    *ret_received = 0;
    if ((int64_t)m->last_index <= r->commit) { /* we have it all, committed: no need */
        *ret_match = r->commit;
        *ret_received = (int64_t)m->total;
        return true;
    }
    /* one snapshot: its index, term, size and sender (another leader's is another text) */
    bool same = s->rx && s->rx_index == (int64_t)m->last_index &&
                s->rx_term == (int64_t)m->last_term && s->rx_total == m->total &&
                strcmp(s->rx_leader, m->leader) == 0;
    if (m->offset == 0 && !same) {
        char *buf = m->total <= S_TOTAL_MAX ? malloc((size_t)m->total + 1) : NULL;
        if (!buf) {
            sc_log_err("snapshot refused: too big, or no memory for it", "bytes=%llu max=%llu",
                       (unsigned long long)m->total, (unsigned long long)S_TOTAL_MAX);
            return false;
        }
        free(s->rx);
        s->rx = buf;
        s->rx[0] = '\0';
        s->rx_len = 0;
        s->rx_total = (size_t)m->total;
        s->rx_index = (int64_t)m->last_index;
        s->rx_term = (int64_t)m->last_term;
        snprintf(s->rx_leader, sizeof(s->rx_leader), "%s", m->leader);
        same = true;
    }
    if (same && m->offset == s->rx_len && n) {
        memcpy(s->rx + s->rx_len, m->data, n);
        s->rx_len += n;
        s->rx[s->rx_len] = '\0';
    }
    *ret_received = same ? (int64_t)s->rx_len : 0; /* not ours: from the start */
    if (!same || s->rx_len < s->rx_total)
        return true;
    char err[512] = "";
    int rc = s_install(c, err, sizeof(err));
    s_rx_drop(s);
    if (rc < 0) {
        *ret_received = 0;
        return false;
    }
    /* only up to it is our log known to be the leader's: its appends check what we kept */
    *ret_match = (int64_t)m->last_index;
    *ret_received = (int64_t)m->total;
    return true;
}

/* ---- tests -------------------------------------------------------------------------------- */

char *sc_coord_snapshot_text(sc_coord_t *c, int64_t *ret_index, int64_t *ret_term)
{
    sc_csnap_t *s = c && c->raft ? c->raft->snap : NULL;

    if (!s || s_make(c) < 0)
        return NULL;
    *ret_index = s->index;
    *ret_term = s->term;
    return strdup(s->text);
}

int sc_coord_install_snapshot(sc_coord_t *c, const char *text, int64_t index, int64_t term,
                              char *err, size_t errlen)
{
    sc_csnap_t *s = c && c->raft ? c->raft->snap : NULL;
    int rc;

    if (!s || !text || sc_coord_is_leader(c))
        return sc_errf(err, errlen, -EINVAL, "not a follower, or no snapshot");
    free(s->rx);
    if (!(s->rx = strdup(text)))
        return -ENOMEM;
    s->rx_len = s->rx_total = strlen(text);
    s->rx_index = index;
    s->rx_term = term;
    rc = s_install(c, err, errlen);
    s_rx_drop(s);
    return rc;
}
