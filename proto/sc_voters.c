/* sc_voters: the voters of the election (see sc_voters.h). */
#include "sc_voters.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One member the round robin may take: its round (rank in its domain) and its domain's order. */
typedef struct s_pick {
    size_t rank;   /* members of its domain before it */
    size_t domain; /* the domain's order of first appearance (unknown: after all known) */
    size_t index;  /* position in the members list */
} s_pick_t;

static int s_pick_cmp(const void *a, const void *b)
{
    const s_pick_t *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->domain != y->domain)
        return x->domain < y->domain ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* 64-bit FNV-1a of the voters' names, one "name\n" each, in order. */
static void s_voters_digest(const sc_voters_member_t *members, sc_voters_t *v)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < v->n; i++) {
        const unsigned char *p = (const unsigned char *)members[v->index[i]].name;
        for (;; p++) {
            h = (h ^ (*p ? *p : '\n')) * 0x100000001b3ULL;
            if (!*p)
                break;
        }
    }
    snprintf(v->digest, sizeof(v->digest), "%016" PRIx64, h);
}

int sc_voters_choose(const sc_voters_member_t *members, size_t n, int want, sc_voters_t *ret)
{
    enum { S_DOMAINS = SC_VOTERS_DOMAIN_MAX + 2 }; /* slot 0: unknown, d + 1: domain d */
    size_t order[S_DOMAINS], seen[S_DOMAINS], known = 0, k, n_picks = 0;
    s_pick_t *picks;
    int count[S_DOMAINS] = {0};
    sc_voters_t v = {0};

    if (!members || !ret || n == 0 || n > SC_VOTERS_MEMBERS_MAX ||
        (want != 0 && (want < 0 || want > SC_VOTERS_MAX || want % 2 == 0)))
        return -EINVAL;
    memset(seen, 0, sizeof(seen));
    for (size_t i = 0; i < n; i++) {
        int fd = members[i].fault_domain;
        if (!members[i].name || fd < -1 || fd > SC_VOTERS_DOMAIN_MAX)
            return -EINVAL;
        if (fd >= 0 && !seen[fd + 1])
            order[fd + 1] = known++;
        seen[fd + 1]++;
    }
    order[0] = known; /* the unknown domain is taken last */
    k = want ? (size_t)want : known >= 5 ? 5 : 3;
    if (k > n)
        k = n;
    if (k % 2 == 0)
        k--;

    /* Only the first k members of each domain can be taken; the round robin is their order by
     * (rank in domain, domain order). */
    if (!(picks = calloc(n, sizeof(*picks))))
        return -ENOMEM;
    memset(seen, 0, sizeof(seen));
    for (size_t i = 0; i < n; i++) {
        size_t slot = (size_t)(members[i].fault_domain + 1);
        if (seen[slot] < k)
            picks[n_picks++] = (s_pick_t){.rank = seen[slot], .domain = order[slot], .index = i};
        seen[slot]++;
    }
    qsort(picks, n_picks, sizeof(picks[0]), s_pick_cmp);
    v.n = k;
    for (size_t i = 0; i < k; i++)
        v.index[i] = picks[i].index;
    free(picks);
    for (size_t i = 1; i < k; i++) /* ascending list order (insertion sort of <= 7) */
        for (size_t j = i; j > 0 && v.index[j - 1] > v.index[j]; j--) {
            size_t t = v.index[j];
            v.index[j] = v.index[j - 1];
            v.index[j - 1] = t;
        }
    for (size_t i = 0; i < k; i++) {
        int c = ++count[members[v.index[i]].fault_domain + 1];
        if (c > v.max_in_one_domain)
            v.max_in_one_domain = c;
    }
    s_voters_digest(members, &v);
    *ret = v;
    /* A voter of unknown domain may share one with any other: the spread is not known. */
    return count[0] == 0 && (size_t)v.max_in_one_domain <= k / 2 ? 0 : SC_VOTERS_UNSPREAD;
}

int sc_voters_of_members(const sc_member_spec_t *members, size_t n, int want, sc_voters_t *ret)
{
    sc_voters_member_t *m;
    int rc;

    if (!members || n == 0 || n > SC_VOTERS_MEMBERS_MAX)
        return -EINVAL;
    if (!(m = calloc(n, sizeof(*m))))
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        m[i] =
            (sc_voters_member_t){.name = members[i].name, .fault_domain = members[i].fault_domain};
    rc = sc_voters_choose(m, n, want, ret);
    free(m);
    return rc;
}

int sc_voters_members_digest(const sc_member_spec_t *members, size_t n, int want,
                             char out[SC_MEMBERS_DIGEST_LEN + 1])
{
    sc_voters_t chosen, dflt;
    int rc;

    if ((rc = sc_voters_of_members(members, n, want, &chosen)) < 0 ||
        (rc = sc_voters_of_members(members, n, 0, &dflt)) < 0)
        return rc;
    sc_members_digest(members, n, chosen.n != dflt.n ? chosen.n : 0, out);
    return 0;
}

bool sc_voters_has(const sc_voters_t *v, size_t i)
{
    for (size_t k = 0; v && k < v->n; k++)
        if (v->index[k] == i)
            return true;
    return false;
}
