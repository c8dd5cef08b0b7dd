/* sc_member_id: who a member of a join-mode set is — its identity read from IMDS compute
 * metadata (GET /metadata/instance/compute) plus the CURVE public key it made itself.
 *
 * A parser with no I/O: a json-c object in, a struct out. Azure's compute object is large
 * (offer, plan, tags, ...); only these fields are read, every other one is ignored:
 *
 *   field                 required  accepted                                    kept as
 *   name                  yes       1..SC_MEMBER_NAME_MAX of [A-Za-z0-9._-]     name
 *   vmId                  yes       a GUID (8-4-4-4-12 hex digits), any case    vm_id, lower case
 *   platformFaultDomain   no        "N" (Azure's way) or N, 0..SC_MEMBER_DOMAIN_MAX;
 *                                   "" or absent: unknown                       fault_domain (-1)
 *   platformUpdateDomain  no        as platformFaultDomain                      update_domain (-1)
 *   zone                  no        "" or 1..SC_MEMBER_ZONE_MAX of [A-Za-z0-9-];
 *                                   an integer N is taken as "N"                zone ("" = none)
 *   placementGroupId      no        "" or a GUID, any case                      placement_group,
 *                                                                               lower case
 *   priority              no        "Regular", "Spot", "Low" (any case); ""     priority
 *                                   or absent: SC_PRIORITY_UNKNOWN
 *
 * Anything else in these fields (null, a boolean, an object, a float, a number as a string
 * with a sign or a space, an unknown priority) is refused with SC_E_PARSE and a reason naming
 * the field: "compute.platformFaultDomain is not a number". An unknown priority is refused
 * rather than guessed: the promotion of voters avoids Spot VMs, and a new kind of evictable
 * VM taken for a regular one could become a voter that Azure takes away at 30 s notice.
 *
 * Identity (issue 21): uniform scale sets reuse instance names after a deletion, so a name
 * alone never identifies a member. A member is (name, vmId, public key): the same name with
 * another vmId or another key is a new incarnation — a new member — whatever its domains say.
 *
 * The module never logs. */
#ifndef SC_MEMBER_ID_H
#define SC_MEMBER_ID_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#define SC_MEMBER_NAME_MAX 128     /* bytes of a name; the same rule as proto's SC_NAME_MAX */
#define SC_MEMBER_GUID_LEN 36      /* characters of a GUID: 8-4-4-4-12 hex digits */
#define SC_MEMBER_ZONE_MAX 32      /* bytes of a zone ("1", "2", "3" in Azure) */
#define SC_MEMBER_DOMAIN_MAX 10000 /* largest fault or update domain accepted */
#define SC_MEMBER_KEY_LEN 40       /* characters of a CURVE public key in Z85 */

typedef enum {
    SC_PRIORITY_UNKNOWN, /* priority absent or "" (older api-versions, some VM kinds) */
    SC_PRIORITY_REGULAR, /* "Regular": not evicted by Azure */
    SC_PRIORITY_SPOT,    /* "Spot": evicted (Preempt) when Azure needs the capacity */
    SC_PRIORITY_LOW,     /* "Low": the older name of Spot in scale sets; evicted the same way */
    SC_PRIORITY_MAX
} sc_priority_t;

typedef struct sc_member_id {
    char name[SC_MEMBER_NAME_MAX + 1];            /* compute.name: the VM's (and member's) name */
    char vm_id[SC_MEMBER_GUID_LEN + 1];           /* compute.vmId, lower case */
    int fault_domain;                             /* platformFaultDomain; -1 unknown */
    int update_domain;                            /* platformUpdateDomain; -1 unknown */
    char zone[SC_MEMBER_ZONE_MAX + 1];            /* availability zone; "" when not zonal */
    char placement_group[SC_MEMBER_GUID_LEN + 1]; /* placementGroupId, lower case; "" none */
    sc_priority_t priority;                       /* Regular, Spot, Low or unknown */
    char public_z85[SC_MEMBER_KEY_LEN + 1];       /* CURVE public key (Z85), not from IMDS:
                                                     "" until sc_member_id_set_key */
} sc_member_id_t;

/* How a member seen now relates to a member known before (sc_member_id_match). */
typedef enum {
    SC_MEMBER_OTHER,           /* another name: another member */
    SC_MEMBER_SAME,            /* same name, vmId and key: the same incarnation */
    SC_MEMBER_NEW_INCARNATION, /* same name, another vmId or key: a new member under a reused
                                  name (reimage, repair, re-creation); the old one is gone */
    SC_MEMBER_MATCH_MAX
} sc_member_match_t;

/* Reads the identity from compute, a json-c object as IMDS's /metadata/instance/compute
 * answers it (borrowed; not kept). The fields and their rules are in the table above;
 * public_z85 is left "". *ret_id is written only on success. 0; SC_E_PARSE (a field missing,
 * of a wrong type or value: err names it, "compute.vmId is not a GUID"), SC_E_TOO_BIG (a string
 * over its limit), SC_E_NOT_JSON (compute is not an object) or -EINVAL (NULL). */
int sc_member_id_from_json(json_object *compute, sc_member_id_t *ret_id, char *err, size_t errlen);

/* The identity as a compute object with the fields above, written as IMDS writes them
 * (domains as strings, "" when unknown): sc_member_id_from_json reads it back equal, key
 * apart (public_z85 is not an IMDS field and is not written). The caller owns *ret_obj
 * (json_object_put). 0, -EINVAL (NULL or an id that sc_member_id_from_json would not have
 * made) or -ENOMEM. */
int sc_member_id_to_json(const sc_member_id_t *id, json_object **ret_obj);

/* Sets id's CURVE public key: 40 characters of the Z85 alphabet (a syntax check only: the
 * transport checks that they decode to a key). 0 or -EINVAL (id NULL, or not a key). */
int sc_member_id_set_key(sc_member_id_t *id, const char *public_z85);

/* Whether a and b are the same member in every field, domains and key included. */
bool sc_member_id_equal(const sc_member_id_t *a, const sc_member_id_t *b);

/* How seen relates to known, by name, vmId and key only (a change of domain, zone or priority
 * alone is the same member, its record to update). Keys are compared as they are: a key known
 * on one side and "" on the other is a difference (a new incarnation), never assumed equal. */
sc_member_match_t sc_member_id_match(const sc_member_id_t *known, const sc_member_id_t *seen);

/* Whether a and b are in the same placement group (both "" included: VMs outside any scale
 * set, e.g. an availability set). Events, fault domains and approvals are per placement
 * group: a member of another one is refused. */
bool sc_member_id_is_same_placement(const sc_member_id_t *a, const sc_member_id_t *b);

/* Whether Azure may evict this VM at short notice (priority Spot or Low). */
bool sc_member_id_is_evictable(const sc_member_id_t *id);

/* "unknown", "Regular", "Spot", "Low" (the IMDS spelling; "unknown" for out of range). */
const char *sc_priority_name(sc_priority_t priority);

/* "other", "same", "new_incarnation" ("unknown" for out of range). */
const char *sc_member_match_name(sc_member_match_t match);

#endif
