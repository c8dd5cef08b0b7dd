/* Membership and liveness: --members, hello, heartbeats (blind members), the dead-after
 * tick, a newer term heard, the start grace. */
#include "sc_coord_int.h"

#include "sc_error.h"
#include "sc_log.h"
#include "sc_members.h"
#include "sc_time.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *s_strip(const char *n)
{
    return n[0] == '_' ? n + 1 : n;
}

static sc_cmember_t *s_sort_members_;
static int s_cmp_idx(const void *a, const void *b)
{
    const sc_cmember_t *ma = &s_sort_members_[*(const size_t *)a];
    const sc_cmember_t *mb = &s_sort_members_[*(const size_t *)b];
    return strcmp(s_strip(ma->name), s_strip(mb->name));
}

static uint32_t s_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */

    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

/* The member named n (exactly as Azure writes it; tolerant of api 2017-03-01's leading '_'),
 * or SC_PLAN_NONE. Hashed: a plan round looks up every name of every event's Resources and
 * views (1,334 a round for one event at 1,000 members), and a binary search's ten probes into
 * the members' large records cost most of the round's input (2026-11-28: 0.4-0.7 ms). */
size_t sc_coord_members_find(const sc_coord_t *c, const char *n)
{
    const char *k = s_strip(n);
    uint32_t h = s_hash(k);

    if (!c->name_slots)
        return SC_PLAN_NONE;
    for (size_t i = h & c->name_mask;; i = (i + 1) & c->name_mask) {
        const struct sc_name_slot *s = &c->name_slots[i];

        if (!s->member)
            return SC_PLAN_NONE;
        if (s->hash == h && strcmp(k, s_strip(c->members[s->member - 1].name)) == 0)
            return s->member - 1;
    }
}

/* Parses "NAME=HOST:PORT,..." into c->members. */
int sc_coord_members_parse(sc_coord_t *c, const char *spec, char *err, size_t errlen)
{
    sc_member_spec_t *list = NULL;
    size_t n = 0;
    int rc;

    if ((rc = sc_members_parse(spec, &list, &n, err, errlen)) != 0)
        return rc;
    if (!(c->members = calloc(n, sizeof(*c->members)))) {
        free(list);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        sc_cmember_t *m = &c->members[i];

        snprintf(m->name, sizeof(m->name), "%s", list[i].name);
        snprintf(m->endpoint, sizeof(m->endpoint), "%s", list[i].endpoint);
        m->fault_domain = m->update_domain = -1;
    }
    c->n_members = n;
    if (c->o.voters != 0 && c->o.voters != 1 && c->o.voters != 3 && c->o.voters != 5 &&
        c->o.voters != 7) {
        free(list);
        return sc_errf(err, errlen, SC_E_CONFIG,
                       "--voters %d: expected 1, 3, 5 or 7 (0: the default)", c->o.voters);
    }
    rc = sc_voters_of_members(list, n, c->o.voters, &c->voters);
    /* the digest covers what decides the voters: the list and --voters (the same list chose
     * them: only memory can fail) */
    if (rc >= 0 && sc_voters_members_digest(list, n, c->o.voters, c->members_hash) < 0)
        rc = -ENOMEM;
    sc_members_digest(list, n, 0, c->list_hash);
    free(list);
    if (rc < 0)
        return sc_errf(err, errlen, SC_E_CONFIG, "--members: voters not chosen: %s",
                       sc_strerror(rc));
    if (rc == SC_VOTERS_UNSPREAD && c->voters.n > 1)
        sc_log_warn("voters not spread over fault domains: draining one may cost the quorum",
                    "voters=%zu most_in_one_domain=%d hint=\"give each member's fault domain in "
                    "--members (NAME=HOST:PORT/FD)\"",
                    c->voters.n, c->voters.max_in_one_domain);
    if (!(c->by_name = malloc(c->n_members * sizeof(size_t))))
        return -ENOMEM;
    for (size_t i = 0; i < c->n_members; i++)
        c->by_name[i] = i;
    s_sort_members_ = c->members;
    qsort(c->by_name, c->n_members, sizeof(size_t), s_cmp_idx);
    for (size_t i = 1; i < c->n_members; i++)
        if (s_cmp_idx(&c->by_name[i - 1], &c->by_name[i]) == 0) {
            snprintf(err, errlen, "--members: %s listed twice", c->members[c->by_name[i]].name);
            return SC_E_CONFIG;
        }
    for (c->name_mask = 1; c->name_mask < 2 * c->n_members;)
        c->name_mask <<= 1;
    if (!(c->name_slots = calloc(c->name_mask, sizeof(*c->name_slots))))
        return -ENOMEM;
    c->name_mask--;
    for (size_t i = 0; i < c->n_members; i++) {
        uint32_t h = s_hash(s_strip(c->members[i].name));
        size_t j = h & c->name_mask;

        while (c->name_slots[j].member)
            j = (j + 1) & c->name_mask;
        c->name_slots[j] = (struct sc_name_slot){.hash = h, .member = (uint32_t)i + 1};
    }
    return 0;
}

/* Raft's rule: a higher term heard from anyone (an agent's messages carry the newest term it
 * has seen) is adopted before leading. A coordinator whose store was lost starts again at term
 * 1, and agents refuse every order of a term older than what they saw: without this the set
 * would stay leaderless for good. The leader leads the next term. */
int sc_coord_members_adopt_term(sc_coord_t *c, uint64_t seen, const char *from)
{
    if (seen >= (uint64_t)INT64_MAX - 1)
        return 0;
    return sc_coord_raft_adopt_term(c, (int64_t)seen, from);
}

int sc_coord_members_on_hello(sc_coord_t *c, size_t mi, const sc_msg_hello_t *h)
{
    sc_cmember_t *m = &c->members[mi];
    const sc_cs_member_t *cm = sc_cstate_member(c->cs, mi);
    json_object *d;

    if (strcmp(m->boot_id, h->boot_id) != 0) {
        snprintf(m->boot_id, sizeof(m->boot_id), "%s", h->boot_id);
        m->have_doc = false; /* a new agent process: ask for its document */
        /* Gone after a Preempt or Terminate, but a new agent speaks for it: the VM was
         * re-created, or a Spot VM deallocated and started again. It is a member again. */
        if (cm->gone && strcmp(cm->gone_boot_id, h->boot_id) != 0 && sc_coord_is_leader(c)) {
            int rc;

            c->dirty = true;
            sc_log_notice("member back",
                          "member=%s boot_id=%s why=\"a new agent process after "
                          "it was gone (VM re-created or restarted)\"",
                          m->name, h->boot_id);
            d = json_object_new_object();
            json_object_object_add(d, "name", json_object_new_string(m->name));
            json_object_object_add(d, "state", json_object_new_string("healthy"));
            if ((rc = sc_coord_exec_decide(c, SC_DLOG_MEMBER, d,
                                           "back after it was gone: a new agent")) < 0)
                return rc;
        }
    }
    /* as reported (a follower's view); the plan uses the domains decided (the state's) */
    m->fault_domain = h->fault_domain;
    m->update_domain = h->update_domain;
    return sc_coord_is_leader(c) ? sc_coord_members_decide_domains(c, mi, "its hello") : 0;
}

int sc_coord_members_decide_domains(sc_coord_t *c, size_t mi, const char *why)
{
    const sc_cmember_t *m = &c->members[mi];
    const sc_cs_member_t *cm = sc_cstate_member(c->cs, mi);
    json_object *d;

    if (cm->fault_domain == m->fault_domain && cm->update_domain == m->update_domain)
        return 0;
    c->dirty = true;
    sc_log_info("member hello", "member=%s fault_domain=%d update_domain=%d why=\"%s\"", m->name,
                m->fault_domain, m->update_domain, why);
    d = json_object_new_object();
    json_object_object_add(d, "name", json_object_new_string(m->name));
    json_object_object_add(d, "fault_domain", json_object_new_int(m->fault_domain));
    json_object_object_add(d, "update_domain", json_object_new_int(m->update_domain));
    return sc_coord_exec_decide(c, SC_DLOG_MEMBER, d, "hello: fault and update domain");
}

/* Whether a heartbeat says the member is blind: its IMDS has been failing (no valid document) for
 * longer than --imds-stale (a VM deleted under a still-running agent, IMDS throttling or an outage,
 * a proxy in the way). Its last document is stale, so it must not hold events up forever. */
bool sc_coord_members_is_blind(const sc_coord_t *c, const sc_msg_heartbeat_t *hb)
{
    return hb->imds_down_ms > c->o.imds_stale_ms;
}

/* A blind member counts in the registry like a silent one (its PRESENT votes keep nothing
 * alive; its silence ends nothing), until a heartbeat says its IMDS answers again. */
int sc_coord_members_on_heartbeat(sc_coord_t *c, sc_cmember_t *m, const sc_msg_heartbeat_t *hb,
                                  int64_t now)
{
    sc_registry_changes_t ch = {0};
    bool blind = sc_coord_members_is_blind(c, hb);
    int rc;

    if (blind == m->blind)
        return 0;
    m->blind = blind;
    c->dirty = true;
    if (blind)
        sc_log_warn("member's IMDS silent: its last document no longer keeps events alive",
                    "member=%s imds_down_ms=%" PRId64 " limit_ms=%" PRId64, m->name,
                    hb->imds_down_ms, c->o.imds_stale_ms);
    else
        sc_log_notice("member's IMDS answers again: a witness again",
                      "member=%s imds_down_ms=%" PRId64, m->name, hb->imds_down_ms);
    if ((rc = sc_registry_set_alive(c->reg, m->name, !blind, now, &ch)) < 0)
        return rc;
    return sc_coord_exec_handle_changes(c, &ch);
}

/* Members silent longer than --dead-after are dead; the registry's own tick after. */
int sc_coord_members_tick(sc_coord_t *c, int64_t now)
{
    sc_registry_changes_t ch = {0};
    int rc = 0;

    for (size_t i = 0; i < c->n_members && rc >= 0; i++) {
        sc_cmember_t *m = &c->members[i];
        if (m->alive && now - m->last_msg_ms > c->o.dead_after_ms) {
            m->alive = false;
            m->blind = false; /* its next heartbeat says again */
            c->dirty = true;
            sc_log_warn("member silent: dead", "member=%s silent_ms=%lld", m->name,
                        (long long)(now - m->last_msg_ms));
            if ((rc = sc_registry_set_alive(c->reg, m->name, false, now, &ch)) >= 0)
                rc = sc_coord_exec_handle_changes(c, &ch);
        }
    }
    if (rc >= 0 && (rc = sc_registry_tick(c->reg, now, &ch)) >= 0)
        rc = sc_coord_exec_handle_changes(c, &ch);
    sc_coord_members_save_boots(c);
    return rc;
}

/* The start grace (issue 9, case 3): after a start every member is "not alive" until it
 * speaks, and the planner skips dead members that were never ordered — an event half-prepared
 * before the restart could be approved before the other agents reconnect, and every member
 * would get a member_down alert. So nothing is planned (no order, approval or alert) until
 * every member not gone is alive with a document, or --start-grace has passed. */
void sc_coord_members_grace_check(sc_coord_t *c, int64_t now)
{
    size_t heard = 0, expected = 0;

    for (size_t i = 0; i < c->n_members; i++) {
        if (sc_cstate_member(c->cs, i)->gone)
            continue;
        expected++;
        heard += c->members[i].alive && c->members[i].have_doc;
    }
    if (heard < expected && now < c->grace_until_ms)
        return;
    sc_log_notice(c->stalled ? "stall grace over: planning" : "start grace over: planning",
                  "heard=%zu members=%zu why=\"%s\"", heard, expected,
                  heard == expected ? "every member reported" : "--start-grace passed");
    c->in_grace = c->stalled = false;
    c->dirty = true;
}

void sc_coord_members_note_boot(sc_coord_t *c, sc_cmember_t *m, int64_t incarnation,
                                int64_t observed_ms)
{
    if (!m->boot_id[0] || strcmp(m->boot_id, m->saved_boot) == 0)
        return;
    memcpy(m->saved_boot, m->boot_id, sizeof(m->saved_boot));
    m->boot_inc = incarnation;
    m->boot_obs = observed_ms;
    m->boot_dirty = true;
}

void sc_coord_members_save_boots(sc_coord_t *c)
{
    sc_store_boot_t *v;
    size_t n = 0;
    int rc;

    for (size_t i = 0; i < c->n_members; i++)
        n += c->members[i].boot_dirty;
    if (!n || !c->store || !(v = calloc(n, sizeof(*v))))
        return;
    n = 0;
    for (size_t i = 0; i < c->n_members; i++)
        if (c->members[i].boot_dirty)
            v[n++] = (sc_store_boot_t){c->members[i].name, c->members[i].saved_boot,
                                       c->members[i].boot_inc, c->members[i].boot_obs};
    if ((rc = sc_store_save_boots(c->store, v, n)) < 0) {
        sc_log_warn("agents' boot ids not stored: tried again", "members=%zu rc=%s why=\"%s\"", n,
                    sc_errname(rc), sc_log_q(sc_store_errmsg(c->store)));
    } else {
        for (size_t i = 0; i < c->n_members; i++)
            c->members[i].boot_dirty = false;
    }
    free(v);
}

static int s_seed_boot(void *arg, const sc_store_boot_t *b)
{
    sc_coord_t *c = arg;
    size_t mi = sc_coord_members_find(c, b->member);
    int rc;

    if (mi == SC_PLAN_NONE || strlen(b->boot_id) > SC_MSG_BOOT_ID_MAX)
        return 0; /* no longer a member, or not a boot id an agent sends */
    if ((rc = sc_registry_seed_member(c->reg, c->members[mi].name, b->boot_id, b->incarnation,
                                      b->observed_ms)) < 0)
        return rc == -EINVAL ? 0 : rc;
    snprintf(c->members[mi].saved_boot, sizeof(c->members[mi].saved_boot), "%s", b->boot_id);
    c->members[mi].boot_inc = b->incarnation;
    c->members[mi].boot_obs = b->observed_ms;
    return 0;
}

int sc_coord_members_load_boots(sc_coord_t *c)
{
    int rc = sc_store_boots_each(c->store, s_seed_boot, c);

    if (rc == -ENOMEM)
        return rc;
    if (rc < 0) /* unreadable: every first document is a fresh view, as before */
        sc_log_warn("agents' boot ids not read", "rc=%s why=\"%s\"", sc_errname(rc),
                    sc_log_q(sc_store_errmsg(c->store)));
    return 0;
}

int sc_coord_members_domain(const sc_coord_t *c, size_t mi)
{
    const sc_cs_member_t *cm = sc_cstate_member(c->cs, mi);
    sc_serialise_by_t by = sc_coord_serialise_by(c);

    if (!cm || by == SC_SERIALISE_VM)
        return -1;
    return by == SC_SERIALISE_UPDATE_DOMAIN ? cm->update_domain : cm->fault_domain;
}

sc_serialise_by_t sc_coord_serialise_by(const sc_coord_t *c)
{
    if (c->o.policy.serialise_by != SC_SERIALISE_AUTO)
        return c->o.policy.serialise_by;
    return c->domains_hidden ? SC_SERIALISE_VM : SC_SERIALISE_FAULT_DOMAIN;
}

void sc_coord_members_spread_check(sc_coord_t *c)
{
    size_t known = 0;
    int fd = -1;
    bool same = true, hidden;

    if (c->in_grace)
        return; /* not before every member had its chance to report */
    for (size_t i = 0; i < c->n_members; i++) {
        const sc_cs_member_t *cm = sc_cstate_member(c->cs, i);
        if (!cm || cm->gone || cm->fault_domain < 0)
            continue;
        if (known++ && cm->fault_domain != fd)
            same = false;
        fd = cm->fault_domain;
    }
    hidden = known >= 2 && same;
    if (hidden == c->domains_hidden)
        return;
    c->domains_hidden = hidden;
    c->dirty = true;
    if (!hidden) {
        sc_log_notice("fault domains shown", "serialise_by=%s why=\"members report more than one\"",
                      sc_serialise_by_name(sc_coord_serialise_by(c)));
        return;
    }
    c->count.alerts[SC_ALERT_DOMAINS_HIDDEN]++;
    sc_log_warn("ALERT",
                "alert=%s event=- member=- why=\"every member reports fault domain %d "
                "(%zu of them): Azure spreads a flexible or zonal scale set over fault domains it "
                "does not show (max spreading); %s\"",
                sc_alert_name(SC_ALERT_DOMAINS_HIDDEN), fd, known,
                c->o.policy.serialise_by == SC_SERIALISE_AUTO
                    ? "serialised by VM, one at a time (serialise-by auto)"
                    : "serialise-by is set: kept as it is");
}
