/* Fuzz target for sc_member_id: the compute metadata reader. The bytes are parsed as JSON
 * (json-c, depth-limited as IMDS answers are); a value that is an object goes through
 * sc_member_id_from_json, and so does its "compute" member when there is one (the whole
 * instance document's shape). Properties checked on every input:
 *  - a failure leaves the output untouched and has a reason naming "compute";
 *  - a success gives a valid identity: a name of [A-Za-z0-9._-], a lower-case GUID vmId,
 *    domains in -1..SC_MEMBER_DOMAIN_MAX, a known priority, no key;
 *  - sc_member_id_to_json of it reads back equal (round trip), and the two are the same
 *    member (sc_member_id_match: SAME) in the same placement group;
 *  - a key set on one side only makes a new incarnation of the same name. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "sc_member_id.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void s_check(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz_member_id: property violated: %s\n", what);
        abort();
    }
}

static void s_valid(const sc_member_id_t *id)
{
    size_t n = strlen(id->name);

    s_check(n >= 1 && n <= SC_MEMBER_NAME_MAX, "name length");
    for (size_t i = 0; i < n; i++)
        s_check(isalnum((unsigned char)id->name[i]) || strchr("._-", id->name[i]),
                "name characters");
    s_check(strlen(id->vm_id) == SC_MEMBER_GUID_LEN, "vmId is a GUID");
    for (size_t i = 0; i < SC_MEMBER_GUID_LEN; i++)
        s_check(!isupper((unsigned char)id->vm_id[i]), "vmId in lower case");
    s_check(id->fault_domain >= -1 && id->fault_domain <= SC_MEMBER_DOMAIN_MAX, "fault domain");
    s_check(id->update_domain >= -1 && id->update_domain <= SC_MEMBER_DOMAIN_MAX, "update domain");
    s_check((unsigned)id->priority < SC_PRIORITY_MAX, "priority");
    s_check(id->public_z85[0] == '\0', "no key from IMDS");
}

static void s_one(json_object *obj)
{
    sc_member_id_t id, back, keyed, untouched;
    json_object *out = NULL;
    char err[256] = "";
    int rc;

    memset(&id, 0xa5, sizeof(id));
    untouched = id;
    rc = sc_member_id_from_json(obj, &id, err, sizeof(err));
    if (rc < 0) {
        s_check(memcmp(&id, &untouched, sizeof(id)) == 0, "no output on failure");
        s_check(strncmp(err, "compute", 7) == 0, "a failure names the field");
        return;
    }
    s_valid(&id);
    s_check(sc_member_id_to_json(&id, &out) == 0, "to_json succeeds");
    rc = sc_member_id_from_json(out, &back, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "reparse failed: %s\n%s\n", err, json_object_to_json_string(out));
    s_check(rc == 0, "to_json output reads back");
    s_check(sc_member_id_equal(&id, &back), "round trip is equal");
    s_check(sc_member_id_match(&id, &back) == SC_MEMBER_SAME, "the same member");
    s_check(sc_member_id_is_same_placement(&id, &back), "the same placement group");
    keyed = id;
    s_check(sc_member_id_set_key(&keyed, "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7") == 0,
            "a Z85 key is accepted");
    s_check(sc_member_id_match(&id, &keyed) == SC_MEMBER_NEW_INCARNATION,
            "a key on one side only is a new incarnation");
    json_object_put(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_tokener *tok = json_tokener_new_ex(16);
    json_object *root, *inner;

    if (!tok)
        return 0;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    root = json_tokener_parse_ex(tok, (const char *)data, (int)(size > 1 << 20 ? 1 << 20 : size));
    json_tokener_free(tok);
    if (!root)
        return 0;
    s_one(root);
    if (json_object_is_type(root, json_type_object) &&
        json_object_object_get_ex(root, "compute", &inner))
        s_one(inner);
    json_object_put(root);
    return 0;
}
