/* sc_member_id: a member's identity from IMDS compute metadata; identity comparison. */
#include "sc_member_id.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sc_error.h"
#include "sc_imds.h"

static const char *const s_priority_names[SC_PRIORITY_MAX] = {
    [SC_PRIORITY_UNKNOWN] = "unknown",
    [SC_PRIORITY_REGULAR] = "Regular",
    [SC_PRIORITY_SPOT] = "Spot",
    [SC_PRIORITY_LOW] = "Low",
};

static const char *const s_match_names[SC_MEMBER_MATCH_MAX] = {
    [SC_MEMBER_OTHER] = "other",
    [SC_MEMBER_SAME] = "same",
    [SC_MEMBER_NEW_INCARNATION] = "new_incarnation",
};

/* The Z85 alphabet (ZeroMQ RFC 32). */
static const char s_z85_chars[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                  ".-:+=^!/*?&<>()[]{}@%$#";

/* ASCII letters and digits, whatever the locale */
static bool s_is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool s_is_name_char(char c)
{
    return s_is_alnum(c) || c == '.' || c == '_' || c == '-';
}

static bool s_is_zone_char(char c)
{
    return s_is_alnum(c) || c == '-';
}

static bool s_name_valid(const char *s, size_t n)
{
    if (n < 1 || n > SC_MEMBER_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!s_is_name_char(s[i]))
            return false;
    return true;
}

static bool s_zone_valid(const char *s, size_t n)
{
    if (n > SC_MEMBER_ZONE_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!s_is_zone_char(s[i]))
            return false;
    return true;
}

/* Whether s (n bytes) is a GUID 8-4-4-4-12 of hex digits, any case. */
static bool s_guid_valid(const char *s, size_t n)
{
    if (n != SC_MEMBER_GUID_LEN)
        return false;
    for (size_t i = 0; i < n; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;

        if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
            return false;
    }
    return true;
}

static void s_lower_copy(char *dst, const char *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (char)tolower((unsigned char)src[i]);
    dst[n] = '\0';
}

/* The string at key: *ret_s borrowed from obj, *ret_n its length; absent: *ret_s NULL. */
static int s_get_string(json_object *obj, const char *key, const char **ret_s, size_t *ret_n,
                        const char **ret_why)
{
    json_object *v = NULL;

    *ret_s = NULL;
    *ret_n = 0;
    if (!json_object_object_get_ex(obj, key, &v))
        return 0;
    if (!json_object_is_type(v, json_type_string)) {
        *ret_why = v ? "is not a string" : "is null";
        return SC_E_PARSE;
    }
    *ret_s = json_object_get_string(v);
    *ret_n = (size_t)json_object_get_string_len(v);
    if (memchr(*ret_s, '\0', *ret_n)) {
        *ret_why = "contains a NUL byte";
        return SC_E_PARSE;
    }
    return 0;
}

/* A domain number (sc_compute_get_domain, whose range is SC_MEMBER_DOMAIN_MAX), but a null is
 * refused here, not taken for unknown. */
static int s_get_domain(json_object *obj, const char *key, int *out, const char **ret_why)
{
    json_object *v = NULL;

    if (json_object_object_get_ex(obj, key, &v) && !v) {
        *out = -1;
        *ret_why = "is null";
        return SC_E_PARSE;
    }
    return sc_compute_get_domain(obj, key, out, ret_why);
}

/* The zone: a string, or an integer taken as its decimal text. Absent: "". */
static int s_get_zone(json_object *obj, char *out, const char **ret_why)
{
    json_object *v = NULL;
    const char *s;
    size_t n;
    int rc;

    out[0] = '\0';
    if (json_object_object_get_ex(obj, "zone", &v) && json_object_is_type(v, json_type_int)) {
        int64_t x = json_object_get_int64(v);

        if (x < 0 || x > 999999) {
            *ret_why = "is out of range";
            return SC_E_PARSE;
        }
        snprintf(out, SC_MEMBER_ZONE_MAX + 1, "%d", (int)x);
        return 0;
    }
    if ((rc = s_get_string(obj, "zone", &s, &n, ret_why)) < 0 || !s)
        return rc;
    if (n > SC_MEMBER_ZONE_MAX) {
        *ret_why = "is too long";
        return SC_E_TOO_BIG;
    }
    if (!s_zone_valid(s, n)) {
        *ret_why = "has a character other than [A-Za-z0-9-]";
        return SC_E_PARSE;
    }
    memcpy(out, s, n + 1);
    return 0;
}

/* A GUID field into out, lower case. required: absent or "" is an error, else it is "". */
static int s_get_guid(json_object *obj, const char *key, bool required, char *out,
                      const char **ret_why)
{
    const char *s;
    size_t n;
    int rc;

    out[0] = '\0';
    if ((rc = s_get_string(obj, key, &s, &n, ret_why)) < 0)
        return rc;
    if (!s || n == 0) {
        if (required) {
            *ret_why = s ? "is empty" : "is missing";
            return SC_E_PARSE;
        }
        return 0;
    }
    if (!s_guid_valid(s, n)) {
        *ret_why = "is not a GUID";
        return SC_E_PARSE;
    }
    s_lower_copy(out, s, n);
    return 0;
}

static int s_get_priority(json_object *obj, sc_priority_t *out, const char **ret_why)
{
    const char *s;
    size_t n;
    int rc;

    *out = SC_PRIORITY_UNKNOWN;
    if ((rc = s_get_string(obj, "priority", &s, &n, ret_why)) < 0 || !s || n == 0)
        return rc;
    for (int p = SC_PRIORITY_REGULAR; p < SC_PRIORITY_MAX; p++) {
        if (strlen(s_priority_names[p]) == n && strcasecmp(s, s_priority_names[p]) == 0) {
            *out = (sc_priority_t)p;
            return 0;
        }
    }
    *ret_why = "is not Regular, Spot or Low";
    return SC_E_PARSE;
}

static int s_get_name(json_object *obj, char *out, const char **ret_why)
{
    const char *s;
    size_t n;
    int rc;

    if ((rc = s_get_string(obj, "name", &s, &n, ret_why)) < 0)
        return rc;
    if (!s || n == 0) {
        *ret_why = s ? "is empty" : "is missing";
        return SC_E_PARSE;
    }
    if (n > SC_MEMBER_NAME_MAX) {
        *ret_why = "is too long";
        return SC_E_TOO_BIG;
    }
    if (!s_name_valid(s, n)) {
        *ret_why = "has a character other than [A-Za-z0-9._-]";
        return SC_E_PARSE;
    }
    memcpy(out, s, n + 1);
    return 0;
}

int sc_member_id_from_json(json_object *compute, sc_member_id_t *ret_id, char *err, size_t errlen)
{
    sc_member_id_t id;
    const char *key = "", *why = "is invalid";
    int rc;

    if (!compute || !ret_id)
        return sc_errf(err, errlen, -EINVAL, "compute: NULL argument");
    if (!json_object_is_type(compute, json_type_object))
        return sc_errf(err, errlen, SC_E_NOT_JSON, "compute: not a JSON object");
    memset(&id, 0, sizeof(id));
    if ((rc = s_get_name(compute, id.name, &why)) < 0)
        key = "name";
    else if ((rc = s_get_guid(compute, "vmId", true, id.vm_id, &why)) < 0)
        key = "vmId";
    else if ((rc = s_get_domain(compute, "platformFaultDomain", &id.fault_domain, &why)) < 0)
        key = "platformFaultDomain";
    else if ((rc = s_get_domain(compute, "platformUpdateDomain", &id.update_domain, &why)) < 0)
        key = "platformUpdateDomain";
    else if ((rc = s_get_zone(compute, id.zone, &why)) < 0)
        key = "zone";
    else if ((rc = s_get_guid(compute, "placementGroupId", false, id.placement_group, &why)) < 0)
        key = "placementGroupId";
    else if ((rc = s_get_priority(compute, &id.priority, &why)) < 0)
        key = "priority";
    if (rc < 0)
        return sc_errf(err, errlen, rc, "compute.%s %s", key, why);
    *ret_id = id;
    return 0;
}

/* Whether id holds what sc_member_id_from_json makes (to_json's precondition). */
static bool s_id_valid(const sc_member_id_t *id)
{
    size_t zn = strnlen(id->zone, SC_MEMBER_ZONE_MAX + 1);
    size_t pn = strnlen(id->placement_group, SC_MEMBER_GUID_LEN + 1);

    return s_name_valid(id->name, strnlen(id->name, SC_MEMBER_NAME_MAX + 1)) &&
           s_guid_valid(id->vm_id, strnlen(id->vm_id, SC_MEMBER_GUID_LEN + 1)) &&
           id->fault_domain >= -1 && id->fault_domain <= SC_MEMBER_DOMAIN_MAX &&
           id->update_domain >= -1 && id->update_domain <= SC_MEMBER_DOMAIN_MAX &&
           s_zone_valid(id->zone, zn) && (pn == 0 || s_guid_valid(id->placement_group, pn)) &&
           (unsigned)id->priority < SC_PRIORITY_MAX;
}

/* Adds key: string s to o. false when out of memory. */
static bool s_add(json_object *o, const char *key, const char *s)
{
    json_object *v = json_object_new_string(s);

    if (!v)
        return false;
    if (json_object_object_add(o, key, v) != 0) {
        json_object_put(v);
        return false;
    }
    return true;
}

int sc_member_id_to_json(const sc_member_id_t *id, json_object **ret_obj)
{
    char fd[16] = "", ud[16] = "";
    json_object *o;

    if (!id || !ret_obj || !s_id_valid(id))
        return -EINVAL;
    if (id->fault_domain >= 0)
        snprintf(fd, sizeof(fd), "%d", id->fault_domain);
    if (id->update_domain >= 0)
        snprintf(ud, sizeof(ud), "%d", id->update_domain);
    if (!(o = json_object_new_object()))
        return -ENOMEM;
    if (!s_add(o, "name", id->name) || !s_add(o, "vmId", id->vm_id) ||
        !s_add(o, "platformFaultDomain", fd) || !s_add(o, "platformUpdateDomain", ud) ||
        !s_add(o, "zone", id->zone) || !s_add(o, "placementGroupId", id->placement_group) ||
        !s_add(o, "priority",
               id->priority == SC_PRIORITY_UNKNOWN ? "" : s_priority_names[id->priority])) {
        json_object_put(o);
        return -ENOMEM;
    }
    *ret_obj = o;
    return 0;
}

int sc_member_id_set_key(sc_member_id_t *id, const char *public_z85)
{
    if (!id || !public_z85 || strnlen(public_z85, SC_MEMBER_KEY_LEN + 1) != SC_MEMBER_KEY_LEN ||
        strspn(public_z85, s_z85_chars) != SC_MEMBER_KEY_LEN)
        return -EINVAL;
    memcpy(id->public_z85, public_z85, SC_MEMBER_KEY_LEN + 1);
    return 0;
}

bool sc_member_id_equal(const sc_member_id_t *a, const sc_member_id_t *b)
{
    return strcmp(a->name, b->name) == 0 && strcmp(a->vm_id, b->vm_id) == 0 &&
           a->fault_domain == b->fault_domain && a->update_domain == b->update_domain &&
           strcmp(a->zone, b->zone) == 0 && strcmp(a->placement_group, b->placement_group) == 0 &&
           a->priority == b->priority && strcmp(a->public_z85, b->public_z85) == 0;
}

sc_member_match_t sc_member_id_match(const sc_member_id_t *known, const sc_member_id_t *seen)
{
    if (strcmp(known->name, seen->name) != 0)
        return SC_MEMBER_OTHER;
    /* vmIds are kept in lower case, so a plain comparison is a case-insensitive one */
    if (strcmp(known->vm_id, seen->vm_id) != 0 || strcmp(known->public_z85, seen->public_z85) != 0)
        return SC_MEMBER_NEW_INCARNATION;
    return SC_MEMBER_SAME;
}

bool sc_member_id_is_same_placement(const sc_member_id_t *a, const sc_member_id_t *b)
{
    return strcmp(a->placement_group, b->placement_group) == 0;
}

bool sc_member_id_is_evictable(const sc_member_id_t *id)
{
    return id->priority == SC_PRIORITY_SPOT || id->priority == SC_PRIORITY_LOW;
}

const char *sc_priority_name(sc_priority_t priority)
{
    return (unsigned)priority < SC_PRIORITY_MAX ? s_priority_names[priority] : "unknown";
}

const char *sc_member_match_name(sc_member_match_t match)
{
    return (unsigned)match < SC_MEMBER_MATCH_MAX ? s_match_names[match] : "unknown";
}
