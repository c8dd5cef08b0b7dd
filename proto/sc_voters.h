/* sc_voters: which members vote in the coordinators' election, chosen from the members list
 * (sc_members.h, with each member's fault domain when the list gives it) the same way on every
 * member and by the agents, which connect to the voters only. Used by sc_elect (coordinator) and
 * the agent. */
#ifndef SC_VOTERS_H
#define SC_VOTERS_H

#include <stdbool.h>
#include <stddef.h>

#include "sc_members.h"

#define SC_VOTERS_MAX 7            /* most voters (a setting of 1, 3, 5 or 7) */
#define SC_VOTERS_DIGEST_LEN 16    /* hex characters of a voters digest */
#define SC_VOTERS_UNSPREAD 1       /* sc_voters_choose: chosen, but one FD holds a majority */
#define SC_VOTERS_DOMAIN_MAX 1023  /* largest fault domain (-1: unknown) */
#define SC_VOTERS_MEMBERS_MAX 4096 /* members of one set */

/* One member as the voter selection sees it. */
typedef struct sc_voters_member {
    const char *name; /* member name (borrowed) */
    int fault_domain; /* 0..SC_VOTERS_DOMAIN_MAX, -1 unknown */
} sc_voters_member_t;

/* The voters chosen. */
typedef struct sc_voters {
    size_t n;                              /* voters: 1, 3, 5 or 7 */
    size_t index[SC_VOTERS_MAX];           /* their positions in the members list, ascending */
    int max_in_one_domain;                 /* most voters one fault domain (or "unknown") holds */
    char digest[SC_VOTERS_DIGEST_LEN + 1]; /* of their names in order: 64-bit FNV-1a, hex */
} sc_voters_t;

/* Chooses the voters among members[n] (the members list, in its order).
 *
 * How many: want 0 means the default: 5 when the members span at least 5 known fault
 * domains, else 3. Five voters only add safety when each sits in its own fault domain: then
 * draining one domain leaves 4 of 5 and one more failure is survived, where 3 voters (one
 * per domain) survive none during a drain; with 3 or 4 domains, 5 voters would put 2 in one
 * domain and survive no more than 3 do, for more traffic and a slower commit. want 1, 3, 5 or
 * 7 is the setting. The count is then cut to the members there are, and to an odd number (2
 * members: 1 voter).
 *
 * Which: round robin over the fault domains in the order they first appear in the list,
 * each domain giving its members in list order (members of unknown domain, -1, count as one
 * more domain, taken last): the first member of every domain, then the second of every
 * domain, and so on. So the earliest members are preferred and no domain holds more voters
 * than it must. The same list gives the same voters on every member.
 *
 * Returns 0 when no fault domain holds a majority of the voters (draining one whole domain
 * never costs the quorum), SC_VOTERS_UNSPREAD when that cannot be had (all members in
 * one or two domains, one member, or a voter of unknown domain) — the best spread is chosen
 * all the same — and -EINVAL for no member, a NULL name, a domain out of range or a want
 * other than 0, 1, 3, 5, 7. *ret is written when the return is not negative. */
int sc_voters_choose(const sc_voters_member_t *members, size_t n, int want, sc_voters_t *ret);

/* sc_voters_choose over a parsed members list (names and fault domains from the list). */
int sc_voters_of_members(const sc_member_spec_t *members, size_t n, int want, sc_voters_t *ret);
/* The digest of what decides the voters: sc_members_digest of the list (names, endpoints, order,
 * fault domains) with, when the setting want (--voters, as for sc_voters_of_members) chooses
 * another count of voters than the default (want 0) does, that count. Members that disagree on
 * it may choose other voters; members that agree choose the same. The coordinators' members
 * digest, which every coordinator-to-coordinator message carries (the leader message tells the
 * agents the list's alone: an agent's --voters only says whom it reports to). 0, or -EINVAL /
 * -ENOMEM as sc_voters_of_members. */
int sc_voters_members_digest(const sc_member_spec_t *members, size_t n, int want,
                             char out[SC_MEMBERS_DIGEST_LEN + 1]);
/* Whether member index i is one of the voters. */
bool sc_voters_has(const sc_voters_t *v, size_t i);

#endif
