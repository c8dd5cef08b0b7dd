/* sc_json: typed reads of one key of a json-c object, for data whose shape is checked field by
 * field (decision-log entries). Each returns nothing (NULL / false) when the key is absent or
 * of another type: the caller says what was wrong. */
#ifndef SC_JSON_H
#define SC_JSON_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

/* The string at key (borrowed from o), or NULL. */
static inline const char *sc_json_str(json_object *o, const char *key)
{
    json_object *v;
    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

/* The integer at key into *ret; false (and *ret untouched) when there is none. */
static inline bool sc_json_int(json_object *o, const char *key, int64_t *ret)
{
    json_object *v;
    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
        return false;
    *ret = json_object_get_int64(v);
    return true;
}

/* The array at key (borrowed from o), or NULL. */
static inline json_object *sc_json_arr(json_object *o, const char *key)
{
    json_object *v;
    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_array))
        return NULL;
    return v;
}

#endif
