/* sc_members: the member list every daemon is given (--members NAME=HOST:PORT,...), parsed
 * once for both, and its digest (the leader message's members_hash; with --voters, the
 * members_digest of every coordinator-to-coordinator message), so that a VM configured with
 * another list — or the same list in another order, or with other fault domains — is noticed. */
#ifndef SC_MEMBERS_H
#define SC_MEMBERS_H

#include <stddef.h>

#include "sc_msg.h"

#define SC_MEMBERS_MAX 4096        /* entries of --members */
#define SC_MEMBER_ENDPOINT_MAX 300 /* bytes of "tcp://HOST:PORT" */
#define SC_MEMBERS_DIGEST_LEN 16   /* hex characters of sc_members_digest */

typedef struct sc_member_spec {
    char name[SC_NAME_MAX + 1];                /* member name */
    char endpoint[SC_MEMBER_ENDPOINT_MAX + 1]; /* "tcp://HOST:PORT" of its coordinator */
    int fault_domain; /* from "/FD" after the port (0..SC_MSG_DOMAIN_MAX), -1 not given */
} sc_member_spec_t;

/* Parses "NAME=HOST:PORT[/FD],..." (HOST a name or IPv4 address, PORT 1..65535, names
 * sc_msg_name_valid and unique, 1..SC_MEMBERS_MAX entries, no spaces; FD the fault domain
 * 0..1023 that the choice of voters, sc_voters.h, spreads them over). *ret_members (n
 * entries, the caller's: free) and *ret_n on success; SC_E_CONFIG with the reason in err
 * naming the entry. */
int sc_members_parse(const char *text, sc_member_spec_t **ret_members, size_t *ret_n, char *err,
                     size_t errlen);
/* A digest of the list, in its order (the order matters: the first member leads): 64-bit
 * FNV-1a over "name endpoint[/FD]\n" lines (/FD when given), then "voters K\n" when voters (K)
 * is not 0, as SC_MEMBERS_DIGEST_LEN lower-case hex characters. voters is the count of voters
 * when the list is run with another than its default (sc_voters_members_digest works it out from
 * --voters), else 0: a list run with the default keeps the digest it had before. */
void sc_members_digest(const sc_member_spec_t *members, size_t n, size_t voters,
                       char out[SC_MEMBERS_DIGEST_LEN + 1]);

#endif
