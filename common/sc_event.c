/* sc_event: the IMDS Scheduled Events document (see sc_event.h). */
#include "sc_event.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "sc_error.h"
#include "sc_time.h"

static const char *const s_type_names[SC_EVENT_TYPE_MAX] = {
    [SC_EVENT_TYPE_UNKNOWN] = "Unknown", [SC_EVENT_FREEZE] = "Freeze",
    [SC_EVENT_REBOOT] = "Reboot",        [SC_EVENT_REDEPLOY] = "Redeploy",
    [SC_EVENT_PREEMPT] = "Preempt",      [SC_EVENT_TERMINATE] = "Terminate",
};

static const char *const s_status_names[SC_EVENT_STATUS_MAX] = {
    [SC_EVENT_STATUS_UNKNOWN] = "Unknown",
    [SC_EVENT_SCHEDULED] = "Scheduled",
    [SC_EVENT_STARTED] = "Started",
};

static const char *const s_source_names[SC_EVENT_SOURCE_MAX] = {
    [SC_EVENT_SOURCE_ABSENT] = "Absent",
    [SC_EVENT_SOURCE_PLATFORM] = "Platform",
    [SC_EVENT_SOURCE_USER] = "User",
    [SC_EVENT_SOURCE_UNKNOWN] = "Unknown",
};

const char *sc_event_type_name(sc_event_type_t t)
{
    return (t > SC_EVENT_TYPE_UNKNOWN && t < SC_EVENT_TYPE_MAX) ? s_type_names[t] : "Unknown";
}

const char *sc_event_status_name(sc_event_status_t s)
{
    return (s > SC_EVENT_STATUS_UNKNOWN && s < SC_EVENT_STATUS_MAX) ? s_status_names[s] : "Unknown";
}

const char *sc_event_source_name(sc_event_source_t s)
{
    return (s >= SC_EVENT_SOURCE_ABSENT && s < SC_EVENT_SOURCE_MAX) ? s_source_names[s] : "Unknown";
}

/* ---- small helpers -------------------------------------------------------------------- */

/* ASCII-only case folding: strcasecmp depends on the locale. */
static int s_lower(int c)
{
    return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c;
}

static bool s_ascii_caseeq(const char *a, const char *b)
{
    if (!a || !b)
        return false;
    for (; *a && *b; a++, b++)
        if (s_lower((unsigned char)*a) != s_lower((unsigned char)*b))
            return false;
    return *a == *b;
}

static bool s_streq_null(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

static bool s_is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool s_is_alnum(char c)
{
    return s_is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool s_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* A short printable rendering of untrusted text for error messages: at most 40 bytes, with
 * quotes, backslashes and non-printable bytes escaped, "..." when cut. */
static const char *s_quote(const char *s, size_t len, char *buf, size_t buflen)
{
    size_t o = 0;

    for (size_t i = 0; i < len && o + 8 < buflen; i++) {
        unsigned char c = (unsigned char)s[i];

        if (i == 40) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        if (c == '"' || c == '\\')
            o += (size_t)snprintf(buf + o, buflen - o, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            o += (size_t)snprintf(buf + o, buflen - o, "\\x%02x", c);
        else
            buf[o++] = (char)c;
    }
    buf[o] = '\0';
    return buf;
}

#define S_QBUF 200 /* room for s_quote of 40 bytes, all escaped */

static const char *s_jtype(json_object *o)
{
    return json_type_to_name(json_object_get_type(o));
}

/* ---- NotBefore ------------------------------------------------------------------------ */

static bool s_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int s_days_in_month(int64_t y, int m)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

    return m == 2 && s_leap(y) ? 29 : days[m - 1];
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil):
 * the same as timegm without the C library's time zone state or time_t range. */
static int64_t s_days_from_civil(int64_t y, int m, int d)
{
    int64_t era, yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Reads exactly n digits at *p. */
static bool s_digits(const char **p, int n, int *ret)
{
    int v = 0;

    for (int i = 0; i < n; i++) {
        if (!s_is_digit((*p)[i]))
            return false;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *ret = v;
    return true;
}

static bool s_lit(const char **p, const char *lit)
{
    size_t n = strlen(lit);

    if (strncmp(*p, lit, n) != 0)
        return false;
    *p += n;
    return true;
}

static bool s_civil_to_unix(int y, int mo, int d, int h, int mi, int s, int64_t *ret)
{
    if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > s_days_in_month(y, mo) ||
        h > 23 || mi > 59 || s > 60)
        return false;
    *ret = s_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
    return true;
}

/* "Mon, 11 Apr 2022 22:26:58 GMT" */
static bool s_parse_rfc1123(const char *p, int64_t *ret)
{
    static const char *const wdays[7] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
    static const char *const months[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    int d, mo = 0, y, h, mi, s;
    bool ok = false;

    for (int i = 0; i < 7 && !ok; i++)
        ok = s_lit(&p, wdays[i]);
    if (!ok || !s_lit(&p, ", "))
        return false;
    if (s_is_digit(p[0]) && s_is_digit(p[1])) {
        if (!s_digits(&p, 2, &d))
            return false;
    } else if (!s_digits(&p, 1, &d)) {
        return false;
    }
    if (!s_lit(&p, " "))
        return false;
    for (int i = 0; i < 12 && !mo; i++)
        if (s_lit(&p, months[i]))
            mo = i + 1;
    if (!mo || !s_lit(&p, " ") || !s_digits(&p, 4, &y) || !s_lit(&p, " ") || !s_digits(&p, 2, &h) ||
        !s_lit(&p, ":") || !s_digits(&p, 2, &mi) || !s_lit(&p, ":") || !s_digits(&p, 2, &s) ||
        !s_lit(&p, " "))
        return false;
    if (!(s_lit(&p, "GMT") || s_lit(&p, "UTC") || s_lit(&p, "+0000")) || *p)
        return false;
    return s_civil_to_unix(y, mo, d, h, mi, s, ret);
}

/* "2016-09-19T18:29:47Z", "2016-09-19T18:29:47.1234567+00:00" */
static bool s_parse_iso8601(const char *p, int64_t *ret)
{
    int y, mo, d, h, mi, s, oh = 0, om = 0, sign = 0;
    int64_t t;

    if (!s_digits(&p, 4, &y) || !s_lit(&p, "-") || !s_digits(&p, 2, &mo) || !s_lit(&p, "-") ||
        !s_digits(&p, 2, &d))
        return false;
    if (*p != 'T' && *p != 't' && *p != ' ')
        return false;
    p++;
    if (!s_digits(&p, 2, &h) || !s_lit(&p, ":") || !s_digits(&p, 2, &mi) || !s_lit(&p, ":") ||
        !s_digits(&p, 2, &s))
        return false;
    if (*p == '.' || *p == ',') {
        int n = 0;

        for (p++; s_is_digit(*p); p++)
            n++;
        if (n < 1 || n > 9)
            return false;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p++ == '+' ? 1 : -1;
        if (!s_digits(&p, 2, &oh))
            return false;
        s_lit(&p, ":");
        if (!s_digits(&p, 2, &om) || oh > 23 || om > 59)
            return false;
    } else {
        return false; /* no zone: local time of an unknown place */
    }
    if (*p || !s_civil_to_unix(y, mo, d, h, mi, s, &t))
        return false;
    *ret = t - sign * (oh * 3600 + om * 60);
    return true;
}

int sc_notbefore_parse(const char *s, bool *ret_has, int64_t *ret_unix_s)
{
    int64_t t;

    if (!s)
        return -EINVAL;
    if (!*s) {
        if (ret_has)
            *ret_has = false;
        return 0;
    }
    if (strlen(s) > 64 || !(s_parse_rfc1123(s, &t) || s_parse_iso8601(s, &t)))
        return SC_E_PARSE;
    if (ret_has)
        *ret_has = true;
    if (ret_unix_s)
        *ret_unix_s = t;
    return 0;
}

/* ---- predicates ----------------------------------------------------------------------- */

bool sc_event_id_valid(const char *s)
{
    size_t n = 0;

    if (!s || !s_is_alnum(s[0]))
        return false;
    for (; s[n]; n++)
        if (n >= SC_EVENT_ID_MAX || !(s_is_alnum(s[n]) || s[n] == '-' || s[n] == '_'))
            return false;
    return true;
}

bool sc_event_id_equal(const char *a, const char *b)
{
    return s_ascii_caseeq(a, b);
}

bool sc_event_names(const sc_event_t *ev, const char *vm_name)
{
    if (!ev || !vm_name || !*vm_name)
        return false;
    for (size_t i = 0; i < ev->n_resources; i++) {
        const char *r = ev->resources[i];

        if (!r)
            continue;
        if (strcmp(r, vm_name) == 0 || (r[0] == '_' && strcmp(r + 1, vm_name) == 0) ||
            (vm_name[0] == '_' && strcmp(r, vm_name + 1) == 0))
            return true;
    }
    return false;
}

bool sc_event_is_started(const sc_event_t *ev)
{
    return ev && ev->status == SC_EVENT_STARTED;
}

/* The text written for a field: the raw text, or for events built in code (raw NULL) the
 * canonical name of the enum. */
static const char *s_type_text(const sc_event_t *ev)
{
    return ev->type_raw ? ev->type_raw : sc_event_type_name(ev->type);
}

static const char *s_status_text(const sc_event_t *ev)
{
    return ev->status_raw ? ev->status_raw : sc_event_status_name(ev->status);
}

static const char *s_source_text(const sc_event_t *ev)
{
    if (ev->source_raw)
        return ev->source_raw;
    return ev->source == SC_EVENT_SOURCE_ABSENT ? NULL : sc_event_source_name(ev->source);
}

static const char *s_resource_type_text(const sc_event_t *ev)
{
    return ev->resource_type ? ev->resource_type : "VirtualMachine";
}

/* NotBefore text into buf: raw, or formatted from the value, or "". */
static const char *s_not_before_text(const sc_event_t *ev, char *buf, size_t len)
{
    if (ev->not_before_raw)
        return ev->not_before_raw;
    if (!ev->has_not_before)
        return "";
    return sc_time_rfc1123(ev->not_before, buf, len);
}

bool sc_event_equal(const sc_event_t *a, const sc_event_t *b)
{
    char ba[64], bb[64];

    if (!a || !b)
        return a == b;
    if (!sc_event_id_equal(a->id, b->id) || !s_streq_null(s_type_text(a), s_type_text(b)) ||
        !s_streq_null(s_status_text(a), s_status_text(b)) ||
        !s_streq_null(s_resource_type_text(a), s_resource_type_text(b)) ||
        a->has_not_before != b->has_not_before ||
        (a->has_not_before && a->not_before != b->not_before) ||
        !s_streq_null(s_not_before_text(a, ba, sizeof(ba)), s_not_before_text(b, bb, sizeof(bb))) ||
        !s_streq_null(a->description, b->description) ||
        !s_streq_null(s_source_text(a), s_source_text(b)) || a->has_duration != b->has_duration ||
        (a->has_duration && a->duration_s != b->duration_s) || a->n_resources != b->n_resources)
        return false;
    for (size_t i = 0; i < a->n_resources; i++)
        if (!s_streq_null(a->resources[i], b->resources[i]))
            return false;
    return true;
}

/* ---- lifetime ------------------------------------------------------------------------- */

void sc_event_clear(sc_event_t *ev)
{
    free(ev->type_raw);
    free(ev->status_raw);
    free(ev->resource_type);
    sc_strv_free(ev->resources, ev->n_resources);
    free(ev->not_before_raw);
    free(ev->description);
    free(ev->source_raw);
    memset(ev, 0, sizeof(*ev));
}

void sc_strv_free(char **v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void sc_doc_destroy(sc_doc_t **doc)
{
    if (!doc || !*doc)
        return;
    for (size_t i = 0; i < (*doc)->n_events; i++)
        sc_event_clear(&(*doc)->events[i]);
    free((*doc)->events);
    free(*doc);
    *doc = NULL;
}

/* strdup that keeps NULL; false on allocation failure. */
static bool s_dup_opt(const char *s, char **ret)
{
    *ret = NULL;
    if (!s)
        return true;
    return (*ret = strdup(s)) != NULL;
}

int sc_event_copy(const sc_event_t *src, sc_event_t *dst)
{
    memset(dst, 0, sizeof(*dst));
    memcpy(dst->id, src->id, sizeof(dst->id));
    dst->id[SC_EVENT_ID_MAX] = '\0';
    dst->type = src->type;
    dst->status = src->status;
    dst->has_not_before = src->has_not_before;
    dst->not_before = src->not_before;
    dst->source = src->source;
    dst->has_duration = src->has_duration;
    dst->duration_s = src->duration_s;
    if (!s_dup_opt(src->type_raw, &dst->type_raw) ||
        !s_dup_opt(src->status_raw, &dst->status_raw) ||
        !s_dup_opt(src->resource_type, &dst->resource_type) ||
        !s_dup_opt(src->not_before_raw, &dst->not_before_raw) ||
        !s_dup_opt(src->description, &dst->description) ||
        !s_dup_opt(src->source_raw, &dst->source_raw))
        goto fail;
    if (src->n_resources) {
        if (!(dst->resources = calloc(src->n_resources, sizeof(char *))))
            goto fail;
        for (; dst->n_resources < src->n_resources; dst->n_resources++)
            if (!s_dup_opt(src->resources[dst->n_resources], &dst->resources[dst->n_resources]))
                goto fail;
    }
    return 0;
fail:
    sc_event_clear(dst);
    return -ENOMEM;
}

int sc_doc_dup(const sc_doc_t *doc, sc_doc_t **ret_copy)
{
    sc_doc_t *copy;

    if (!doc || !ret_copy || (doc->n_events && !doc->events))
        return -EINVAL;
    if (!(copy = calloc(1, sizeof(*copy))))
        return -ENOMEM;
    copy->incarnation = doc->incarnation;
    if (doc->n_events && !(copy->events = calloc(doc->n_events, sizeof(sc_event_t))))
        goto fail;
    for (; copy->n_events < doc->n_events; copy->n_events++)
        if (sc_event_copy(&doc->events[copy->n_events], &copy->events[copy->n_events]) < 0)
            goto fail;
    *ret_copy = copy;
    return 0;
fail:
    sc_doc_destroy(&copy);
    return -ENOMEM;
}

const sc_event_t *sc_doc_find(const sc_doc_t *doc, const char *event_id)
{
    if (!doc || !event_id)
        return NULL;
    for (size_t i = 0; i < doc->n_events; i++)
        if (sc_event_id_equal(doc->events[i].id, event_id))
            return &doc->events[i];
    return NULL;
}

/* ---- JSON input ----------------------------------------------------------------------- */

/* Turns bytes into a json-c tree, telling empty, too big, not JSON and cut short apart.
 * what names the input in messages ("document", "approval body"). */
static int s_tokenize(const char *buf, size_t len, const char *what, json_object **ret, char *err,
                      size_t errlen)
{
    struct json_tokener *tok;
    json_object *root;
    enum json_tokener_error jerr;
    const char *nul;
    size_t i, end;
    int rc;

    if (!buf && len)
        return sc_errf(err, errlen, -EINVAL, "%s: NULL buffer", what);
    for (i = 0; i < len && s_is_space(buf[i]); i++)
        ;
    if (i == len)
        return sc_errf(err, errlen, SC_E_EMPTY, "%s is empty%s", what,
                       len ? " (only whitespace)" : "");
    if (len > SC_DOC_MAX_BYTES)
        return sc_errf(err, errlen, SC_E_TOO_BIG, "%s is %zu bytes, more than the limit of %d",
                       what, len, SC_DOC_MAX_BYTES);
    if ((nul = memchr(buf, '\0', len)))
        return sc_errf(err, errlen, SC_E_NOT_JSON, "%s is not JSON: NUL byte at offset %zu", what,
                       (size_t)(nul - buf));
    if (!(tok = json_tokener_new_ex(SC_DOC_MAX_DEPTH)))
        return sc_errf(err, errlen, -ENOMEM, "%s: out of memory", what);
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    root = json_tokener_parse_ex(tok, buf, (int)len);
    jerr = json_tokener_get_error(tok);
    end = json_tokener_get_parse_end(tok);
    if (!root && jerr == json_tokener_continue) {
        /* All input was consumed and json-c wants more. A NUL byte ends a top-level number
         * ("5" is complete JSON) but not an object, array, string or literal. */
        root = json_tokener_parse_ex(tok, "", 1);
        if (!root) {
            json_tokener_free(tok);
            return sc_errf(err, errlen, SC_E_TRUNCATED,
                           "%s is cut short: JSON ends unfinished after %zu bytes", what, len);
        }
        jerr = json_tokener_success;
        end = len;
    }
    if (!root) {
        if (jerr == json_tokener_error_depth)
            rc = sc_errf(err, errlen, SC_E_TOO_BIG,
                         "%s: JSON nested deeper than %d levels at offset %zu", what,
                         SC_DOC_MAX_DEPTH, end);
        else if (jerr == json_tokener_error_parse_utf8_string)
            rc = sc_errf(err, errlen, SC_E_NOT_JSON, "%s is not JSON: invalid UTF-8 at offset %zu",
                         what, end);
        else
            rc = sc_errf(err, errlen, SC_E_NOT_JSON, "%s is not JSON: %s at offset %zu", what,
                         json_tokener_error_desc(jerr), end);
        json_tokener_free(tok);
        return rc;
    }
    json_tokener_free(tok);
    for (i = end; i < len && s_is_space(buf[i]); i++)
        ;
    if (i < len) {
        json_object_put(root);
        return sc_errf(err, errlen, SC_E_NOT_JSON, "%s is not JSON: trailing data at offset %zu",
                       what, i);
    }
    *ret = root;
    return 0;
}

/* Reads a JSON integer of o into *ret; false for another type or out of int64 range. */
static bool s_get_int64(json_object *o, int64_t *ret, bool *ret_range)
{
    int64_t v;

    *ret_range = true;
    if (!json_object_is_type(o, json_type_int))
        return false;
    v = json_object_get_int64(o);
    /* json-c saturates: INT64_MAX is genuine only if the unsigned view agrees. */
    if (v == INT64_MAX && json_object_get_uint64(o) != (uint64_t)INT64_MAX) {
        *ret_range = false;
        return false;
    }
    if (v == INT64_MIN) { /* may be saturated too; never valid for us anyway */
        *ret_range = false;
        return false;
    }
    *ret = v;
    return true;
}

/* A strict decimal integer in a string: optional '-', 1..18 digits, nothing else. */
static bool s_parse_decimal(const char *s, int64_t *ret)
{
    int64_t v = 0;
    bool neg = *s == '-';
    size_t n = 0;

    if (neg)
        s++;
    for (; s[n]; n++) {
        if (!s_is_digit(s[n]) || n >= 18)
            return false;
        v = v * 10 + (s[n] - '0');
    }
    if (!n)
        return false;
    *ret = neg ? -v : v;
    return true;
}

/* Gets a string field of obj. required: missing is an error; else missing sets *ret NULL.
 * nonempty: "" is an error. Checks the length limit and embedded NULs. */
static int s_get_string(json_object *obj, const char *path, const char *key, bool required,
                        bool nonempty, const char **ret, char *err, size_t errlen)
{
    json_object *v;
    const char *s;
    size_t len;

    *ret = NULL;
    if (!json_object_object_get_ex(obj, key, &v)) {
        if (required)
            return sc_errf(err, errlen, SC_E_PARSE, "%s%s: missing", path, key);
        return 0;
    }
    if (!json_object_is_type(v, json_type_string))
        return sc_errf(err, errlen, SC_E_PARSE, "%s%s: must be a string, got %s", path, key,
                       s_jtype(v));
    s = json_object_get_string(v);
    len = (size_t)json_object_get_string_len(v);
    if (len > SC_EVENT_MAX_STRING)
        return sc_errf(err, errlen, SC_E_TOO_BIG, "%s%s: %zu bytes, more than the limit of %d",
                       path, key, len, SC_EVENT_MAX_STRING);
    if (strlen(s) != len)
        return sc_errf(err, errlen, SC_E_PARSE, "%s%s: contains a NUL character", path, key);
    if (nonempty && !len)
        return sc_errf(err, errlen, SC_E_PARSE, "%s%s: empty string", path, key);
    *ret = s;
    return 0;
}

static int s_check_event_id(const char *id, const char *path, const char *key, char *err,
                            size_t errlen)
{
    char q[S_QBUF];
    size_t len = strlen(id);

    if (!len)
        return sc_errf(err, errlen, SC_E_PARSE, "%s%s: empty string", path, key);
    if (len > SC_EVENT_ID_MAX)
        return sc_errf(err, errlen, SC_E_PARSE, "%s%s: %zu characters, longer than %d", path, key,
                       len, SC_EVENT_ID_MAX);
    if (!sc_event_id_valid(id))
        return sc_errf(err, errlen, SC_E_PARSE,
                       "%s%s: \"%s\" is not an EventId (letters, digits, '-', '_'; first a letter "
                       "or digit)",
                       path, key, s_quote(id, len, q, sizeof(q)));
    return 0;
}

static int s_enum_of(const char *s, const char *const *names, int first, int max)
{
    for (int i = first; i < max; i++)
        if (s_ascii_caseeq(s, names[i]))
            return i;
    return 0;
}

static int s_parse_resources(json_object *obj, const char *path, sc_event_t *ev, char *err,
                             size_t errlen)
{
    json_object *arr;
    size_t n;

    if (!json_object_object_get_ex(obj, "Resources", &arr))
        return sc_errf(err, errlen, SC_E_PARSE, "%sResources: missing", path);
    if (!json_object_is_type(arr, json_type_array))
        return sc_errf(err, errlen, SC_E_PARSE, "%sResources: must be an array, got %s", path,
                       s_jtype(arr));
    n = json_object_array_length(arr);
    if (n > SC_EVENT_MAX_RESOURCES)
        return sc_errf(err, errlen, SC_E_TOO_BIG,
                       "%sResources: %zu names, more than the limit of %d", path, n,
                       SC_EVENT_MAX_RESOURCES);
    if (n && !(ev->resources = calloc(n, sizeof(char *))))
        return sc_errf(err, errlen, -ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_object *v = json_object_array_get_idx(arr, i);
        const char *s;
        size_t len;

        if (!json_object_is_type(v, json_type_string))
            return sc_errf(err, errlen, SC_E_PARSE, "%sResources[%zu]: must be a string, got %s",
                           path, i, s_jtype(v));
        s = json_object_get_string(v);
        len = (size_t)json_object_get_string_len(v);
        if (!len)
            return sc_errf(err, errlen, SC_E_PARSE, "%sResources[%zu]: empty string", path, i);
        if (len > SC_EVENT_MAX_STRING)
            return sc_errf(err, errlen, SC_E_TOO_BIG,
                           "%sResources[%zu]: %zu bytes, more than the limit of %d", path, i, len,
                           SC_EVENT_MAX_STRING);
        for (size_t k = 0; k < len; k++)
            if ((unsigned char)s[k] < 0x20 || s[k] == 0x7f)
                return sc_errf(err, errlen, SC_E_PARSE,
                               "%sResources[%zu]: control character 0x%02x at %zu", path, i,
                               (unsigned char)s[k], k);
        if (!(ev->resources[i] = strdup(s)))
            return sc_errf(err, errlen, -ENOMEM, "out of memory");
        ev->n_resources = i + 1;
    }
    return 0;
}

static int s_parse_duration(json_object *obj, const char *path, sc_event_t *ev, char *err,
                            size_t errlen)
{
    json_object *v;
    int64_t d;
    bool in_range;
    char q[S_QBUF];

    if (!json_object_object_get_ex(obj, "DurationInSeconds", &v))
        return 0;
    if (json_object_is_type(v, json_type_string)) {
        const char *s = json_object_get_string(v);
        size_t len = (size_t)json_object_get_string_len(v);

        if (strlen(s) != len || !s_parse_decimal(s, &d))
            return sc_errf(err, errlen, SC_E_PARSE,
                           "%sDurationInSeconds: string \"%s\" is not a decimal integer", path,
                           s_quote(s, len, q, sizeof(q)));
    } else if (!s_get_int64(v, &d, &in_range)) {
        if (!in_range)
            return sc_errf(err, errlen, SC_E_PARSE,
                           "%sDurationInSeconds: out of the range -1..%lld", path,
                           SC_EVENT_DURATION_MAX);
        return sc_errf(err, errlen, SC_E_PARSE,
                       "%sDurationInSeconds: must be an integer, got %s %s", path, s_jtype(v),
                       json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
    }
    if (d < -1)
        return sc_errf(err, errlen, SC_E_PARSE,
                       "%sDurationInSeconds: %lld is below -1 (-1 means unknown)", path,
                       (long long)d);
    if (d > SC_EVENT_DURATION_MAX)
        return sc_errf(err, errlen, SC_E_PARSE, "%sDurationInSeconds: out of the range -1..%lld",
                       path, SC_EVENT_DURATION_MAX);
    ev->has_duration = true;
    ev->duration_s = d;
    return 0;
}

/* Fills ev from the JSON object obj; path prefixes every field named in a message
 * ("Events[1]." or ""). On error ev may be half-built (the caller clears it). */
static int s_event_parse(json_object *obj, const char *path, sc_event_t *ev, char *err,
                         size_t errlen)
{
    char q[S_QBUF];
    const char *s;
    size_t plen = strlen(path);
    int rc;

    if (!json_object_is_type(obj, json_type_object)) {
        if (!plen)
            return sc_errf(err, errlen, SC_E_PARSE, "event: must be an object, got %s",
                           s_jtype(obj));
        return sc_errf(err, errlen, SC_E_PARSE, "%.*s: must be an object, got %s", (int)(plen - 1),
                       path, s_jtype(obj));
    }

    if ((rc = s_get_string(obj, path, "EventId", true, false, &s, err, errlen)) < 0 ||
        (rc = s_check_event_id(s, path, "EventId", err, errlen)) < 0)
        return rc;
    memcpy(ev->id, s, strlen(s) + 1);

    if ((rc = s_get_string(obj, path, "EventType", true, true, &s, err, errlen)) < 0)
        return rc;
    ev->type = (sc_event_type_t)s_enum_of(s, s_type_names, 1, SC_EVENT_TYPE_MAX);
    if (!(ev->type_raw = strdup(s)))
        return sc_errf(err, errlen, -ENOMEM, "out of memory");

    if ((rc = s_get_string(obj, path, "EventStatus", true, true, &s, err, errlen)) < 0)
        return rc;
    ev->status = (sc_event_status_t)s_enum_of(s, s_status_names, 1, SC_EVENT_STATUS_MAX);
    if (!(ev->status_raw = strdup(s)))
        return sc_errf(err, errlen, -ENOMEM, "out of memory");

    if ((rc = s_get_string(obj, path, "ResourceType", true, true, &s, err, errlen)) < 0)
        return rc;
    if (!(ev->resource_type = strdup(s)))
        return sc_errf(err, errlen, -ENOMEM, "out of memory");

    if ((rc = s_parse_resources(obj, path, ev, err, errlen)) < 0)
        return rc;

    if ((rc = s_get_string(obj, path, "NotBefore", true, false, &s, err, errlen)) < 0)
        return rc;
    if (sc_notbefore_parse(s, &ev->has_not_before, &ev->not_before) < 0)
        return sc_errf(err, errlen, SC_E_PARSE,
                       "%sNotBefore: \"%s\" is neither RFC 1123 nor ISO 8601", path,
                       s_quote(s, strlen(s), q, sizeof(q)));
    if (!(ev->not_before_raw = strdup(s)))
        return sc_errf(err, errlen, -ENOMEM, "out of memory");

    if ((rc = s_get_string(obj, path, "Description", false, false, &s, err, errlen)) < 0)
        return rc;
    if (s && !(ev->description = strdup(s)))
        return sc_errf(err, errlen, -ENOMEM, "out of memory");

    if ((rc = s_get_string(obj, path, "EventSource", false, true, &s, err, errlen)) < 0)
        return rc;
    if (s) {
        ev->source = (sc_event_source_t)s_enum_of(s, s_source_names, SC_EVENT_SOURCE_PLATFORM,
                                                  SC_EVENT_SOURCE_UNKNOWN);
        if (ev->source == SC_EVENT_SOURCE_ABSENT)
            ev->source = SC_EVENT_SOURCE_UNKNOWN;
        if (!(ev->source_raw = strdup(s)))
            return sc_errf(err, errlen, -ENOMEM, "out of memory");
    }

    return s_parse_duration(obj, path, ev, err, errlen);
}

int sc_event_from_json(json_object *obj, sc_event_t *ret, char *err, size_t errlen)
{
    sc_event_t ev = {0};
    int rc;

    if (!obj || !ret)
        return sc_errf(err, errlen, -EINVAL, "no event or no place for the result");
    if ((rc = s_event_parse(obj, "", &ev, err, errlen)) < 0) {
        sc_event_clear(&ev);
        return rc;
    }
    *ret = ev;
    return 0;
}

/* Appends a copy of why to the list (*v, *n). false when out of memory. */
static bool s_reason_add(char ***v, size_t *n, const char *why)
{
    char **grown = realloc(*v, (*n + 1) * sizeof(*grown));

    if (!grown)
        return false;
    *v = grown;
    if (!(grown[*n] = strdup(why)))
        return false;
    (*n)++;
    return true;
}

/* A document from the JSON tree root (borrowed): the shape and the events. lenient leaves a
 * malformed event out and appends its reason to (*ret_bad, *ret_n_bad) instead of refusing
 * the document. */
static int s_doc_tree(json_object *root, bool lenient, sc_doc_t **ret_doc, char ***ret_bad,
                      size_t *ret_n_bad, char *err, size_t errlen)
{
    json_object *v, *events;
    sc_doc_t *doc = NULL;
    size_t orig[SC_DOC_MAX_EVENTS]; /* Events index of each kept event */
    char **bad = NULL, why[SC_DOC_REASON_MAX];
    size_t n, n_bad = 0;
    bool in_range;
    int rc;

    if (!json_object_is_type(root, json_type_object)) {
        rc = sc_errf(err, errlen, SC_E_PARSE, "document must be a JSON object, got %s",
                     s_jtype(root));
        goto out;
    }
    if (!(doc = calloc(1, sizeof(*doc)))) {
        rc = sc_errf(err, errlen, -ENOMEM, "out of memory");
        goto out;
    }

    if (!json_object_object_get_ex(root, "DocumentIncarnation", &v)) {
        rc = sc_errf(err, errlen, SC_E_PARSE, "DocumentIncarnation: missing");
        goto out;
    }
    if (!s_get_int64(v, &doc->incarnation, &in_range)) {
        if (!in_range)
            rc = sc_errf(err, errlen, SC_E_PARSE, "DocumentIncarnation: out of range");
        else
            rc = sc_errf(err, errlen, SC_E_PARSE, "DocumentIncarnation: must be an integer, got %s",
                         s_jtype(v));
        goto out;
    }
    if (doc->incarnation < 0) {
        rc = sc_errf(err, errlen, SC_E_PARSE, "DocumentIncarnation: %lld is negative",
                     (long long)doc->incarnation);
        goto out;
    }

    if (!json_object_object_get_ex(root, "Events", &events)) {
        rc = sc_errf(err, errlen, SC_E_PARSE, "Events: missing");
        goto out;
    }
    if (!json_object_is_type(events, json_type_array)) {
        rc = sc_errf(err, errlen, SC_E_PARSE, "Events: must be an array, got %s", s_jtype(events));
        goto out;
    }
    n = json_object_array_length(events);
    if (n > SC_DOC_MAX_EVENTS) {
        rc = sc_errf(err, errlen, SC_E_TOO_BIG, "Events: %zu events, more than the limit of %d", n,
                     SC_DOC_MAX_EVENTS);
        goto out;
    }
    if (n && !(doc->events = calloc(n, sizeof(sc_event_t)))) {
        rc = sc_errf(err, errlen, -ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        /* n_events counts the slots to clear, the half-built one included */
        sc_event_t *ev = &doc->events[doc->n_events++];
        char path[48];

        snprintf(path, sizeof(path), "Events[%zu].", i);
        rc = s_event_parse(json_object_array_get_idx(events, i), path, ev, why, sizeof(why));
        for (size_t k = 0; rc == 0 && k + 1 < doc->n_events; k++)
            if (sc_event_id_equal(doc->events[k].id, ev->id))
                rc = sc_errf(why, sizeof(why), SC_E_PARSE,
                             "Events[%zu].EventId: \"%s\" repeats Events[%zu] (EventIds compare "
                             "ignoring case)",
                             i, ev->id, orig[k]);
        if (rc == 0) {
            orig[doc->n_events - 1] = i;
            continue;
        }
        if (rc == -ENOMEM || !lenient) {
            rc = sc_errf(err, errlen, rc, "%s", why);
            goto out;
        }
        sc_event_clear(ev);
        doc->n_events--;
        if (!s_reason_add(&bad, &n_bad, why)) {
            rc = sc_errf(err, errlen, -ENOMEM, "out of memory");
            goto out;
        }
    }
    if (!doc->n_events) {
        free(doc->events);
        doc->events = NULL;
    }
    *ret_doc = doc;
    doc = NULL;
    if (ret_bad) {
        *ret_bad = bad;
        *ret_n_bad = n_bad;
        bad = NULL;
    }
    rc = 0;
out:
    sc_strv_free(bad, n_bad);
    sc_doc_destroy(&doc);
    return rc;
}

/* sc_doc_parse and sc_doc_parse_lenient: lenient leaves a malformed event out and appends its
 * reason to (*ret_bad, *ret_n_bad) instead of refusing the document. */
static int s_doc_parse(const char *buf, size_t len, bool lenient, sc_doc_t **ret_doc,
                       char ***ret_bad, size_t *ret_n_bad, char *err, size_t errlen)
{
    json_object *root = NULL;
    int rc;

    if (!ret_doc)
        return sc_errf(err, errlen, -EINVAL, "no place for the result");
    if ((rc = s_tokenize(buf, len, "document", &root, err, errlen)) < 0)
        return rc;
    rc = s_doc_tree(root, lenient, ret_doc, ret_bad, ret_n_bad, err, errlen);
    json_object_put(root);
    return rc;
}

int sc_doc_from_json(json_object *obj, sc_doc_t **ret_doc, char *err, size_t errlen)
{
    if (!obj || !ret_doc)
        return sc_errf(err, errlen, -EINVAL, "no document or no place for the result");
    return s_doc_tree(obj, false, ret_doc, NULL, NULL, err, errlen);
}

int sc_doc_parse(const char *buf, size_t len, sc_doc_t **ret_doc, char *err, size_t errlen)
{
    return s_doc_parse(buf, len, false, ret_doc, NULL, NULL, err, errlen);
}

int sc_doc_parse_lenient(const char *buf, size_t len, sc_doc_t **ret_doc, char ***ret_malformed,
                         size_t *ret_n_malformed, char *err, size_t errlen)
{
    if ((ret_malformed == NULL) != (ret_n_malformed == NULL))
        return sc_errf(err, errlen, -EINVAL, "malformed list and count go together");
    return s_doc_parse(buf, len, true, ret_doc, ret_malformed, ret_n_malformed, err, errlen);
}

/* ---- JSON output ---------------------------------------------------------------------- */

/* Adds key: value to obj, taking value; false (value freed) on failure. */
static bool s_add(json_object *obj, const char *key, json_object *value)
{
    if (!value)
        return false;
    if (json_object_object_add(obj, key, value) != 0) {
        json_object_put(value);
        return false;
    }
    return true;
}

static bool s_append(json_object *arr, json_object *value)
{
    if (!value)
        return false;
    if (json_object_array_add(arr, value) != 0) {
        json_object_put(value);
        return false;
    }
    return true;
}

static json_object *s_event_to_json(const sc_event_t *ev)
{
    json_object *o = json_object_new_object(), *res = NULL;
    const char *source = s_source_text(ev);
    char nb[64];

    if (!o)
        return NULL;
    if (!s_add(o, "EventId", json_object_new_string(ev->id)) ||
        !s_add(o, "EventStatus", json_object_new_string(s_status_text(ev))) ||
        !s_add(o, "EventType", json_object_new_string(s_type_text(ev))) ||
        !s_add(o, "ResourceType", json_object_new_string(s_resource_type_text(ev))))
        goto fail;
    if (!(res = json_object_new_array_ext((int)ev->n_resources)))
        goto fail;
    for (size_t i = 0; i < ev->n_resources; i++)
        if (!s_append(res, json_object_new_string(ev->resources[i] ? ev->resources[i] : "")))
            goto fail;
    if (!s_add(o, "Resources", res)) {
        res = NULL;
        goto fail;
    }
    res = NULL;
    if (!s_add(o, "NotBefore", json_object_new_string(s_not_before_text(ev, nb, sizeof(nb)))))
        goto fail;
    if (ev->description && !s_add(o, "Description", json_object_new_string(ev->description)))
        goto fail;
    if (source && !s_add(o, "EventSource", json_object_new_string(source)))
        goto fail;
    if (ev->has_duration && !s_add(o, "DurationInSeconds", json_object_new_int64(ev->duration_s)))
        goto fail;
    return o;
fail:
    json_object_put(res);
    json_object_put(o);
    return NULL;
}

int sc_event_to_json(const sc_event_t *ev, json_object **ret_json)
{
    json_object *o;

    if (!ev || !ret_json || !sc_event_id_valid(ev->id) || (ev->n_resources && !ev->resources))
        return -EINVAL;
    if (!(o = s_event_to_json(ev)))
        return -ENOMEM;
    *ret_json = o;
    return 0;
}

/* Serializes and frees root into a malloc'd string. */
static int s_finish(json_object *root, char **ret)
{
    const char *s = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN |
                                                             JSON_C_TO_STRING_NOSLASHESCAPE);
    char *copy = s ? strdup(s) : NULL;

    json_object_put(root);
    if (!copy)
        return -ENOMEM;
    *ret = copy;
    return 0;
}

int sc_doc_to_json_object(const sc_doc_t *doc, json_object **ret_json)
{
    json_object *root, *events;

    if (!doc || !ret_json || (doc->n_events && !doc->events) || doc->incarnation < 0)
        return -EINVAL;
    for (size_t i = 0; i < doc->n_events; i++)
        if (!sc_event_id_valid(doc->events[i].id) ||
            (doc->events[i].n_resources && !doc->events[i].resources))
            return -EINVAL;
    if (!(root = json_object_new_object()))
        return -ENOMEM;
    if (!s_add(root, "DocumentIncarnation", json_object_new_int64(doc->incarnation)) ||
        !(events = json_object_new_array_ext((int)doc->n_events)))
        goto fail;
    if (!s_add(root, "Events", events))
        goto fail;
    for (size_t i = 0; i < doc->n_events; i++) {
        json_object *ev = NULL;

        if (sc_event_to_json(&doc->events[i], &ev) < 0 || !s_append(events, ev))
            goto fail;
    }
    *ret_json = root;
    return 0;
fail:
    json_object_put(root);
    return -ENOMEM;
}

int sc_doc_to_json(const sc_doc_t *doc, char **ret_json)
{
    json_object *root = NULL;
    int rc;

    if (!ret_json)
        return -EINVAL;
    if ((rc = sc_doc_to_json_object(doc, &root)) < 0)
        return rc;
    return s_finish(root, ret_json);
}

/* ---- diff ----------------------------------------------------------------------------- */

void sc_doc_diff_release(sc_doc_diff_t *diff)
{
    if (!diff)
        return;
    free(diff->added);
    free(diff->changed);
    free(diff->removed);
    memset(diff, 0, sizeof(*diff));
}

int sc_doc_diff(const sc_doc_t *old_doc, const sc_doc_t *new_doc, sc_doc_diff_t *ret_diff)
{
    sc_doc_diff_t d = {0};
    size_t n_old = old_doc ? old_doc->n_events : 0;

    if (!new_doc || !ret_diff)
        return -EINVAL;
    if (new_doc->n_events && (!(d.added = calloc(new_doc->n_events, sizeof(*d.added))) ||
                              !(d.changed = calloc(new_doc->n_events, sizeof(*d.changed)))))
        goto fail;
    if (n_old && !(d.removed = calloc(n_old, sizeof(*d.removed))))
        goto fail;
    for (size_t i = 0; i < new_doc->n_events; i++) {
        const sc_event_t *ev = &new_doc->events[i];
        const sc_event_t *was = sc_doc_find(old_doc, ev->id);

        if (!was)
            d.added[d.n_added++] = ev;
        else if (!sc_event_equal(was, ev))
            d.changed[d.n_changed++] = ev;
    }
    for (size_t i = 0; i < n_old; i++)
        if (!sc_doc_find(new_doc, old_doc->events[i].id))
            d.removed[d.n_removed++] = &old_doc->events[i];
    /* empty lists are NULL, as documented */
    if (!d.n_added) {
        free(d.added);
        d.added = NULL;
    }
    if (!d.n_changed) {
        free(d.changed);
        d.changed = NULL;
    }
    if (!d.n_removed) {
        free(d.removed);
        d.removed = NULL;
    }
    *ret_diff = d;
    return 0;
fail:
    sc_doc_diff_release(&d);
    return -ENOMEM;
}

/* ---- approval ------------------------------------------------------------------------- */

int sc_approval_body(const char *const *event_ids, size_t n, char **ret_body)
{
    json_object *root, *reqs;

    if (!event_ids || !ret_body || n == 0 || n > SC_DOC_MAX_EVENTS)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (!sc_event_id_valid(event_ids[i]))
            return -EINVAL;
        for (size_t k = 0; k < i; k++)
            if (sc_event_id_equal(event_ids[k], event_ids[i]))
                return -EINVAL;
    }
    if (!(root = json_object_new_object()))
        return -ENOMEM;
    if (!(reqs = json_object_new_array_ext((int)n)) || !s_add(root, "StartRequests", reqs))
        goto fail;
    for (size_t i = 0; i < n; i++) {
        json_object *req = json_object_new_object();

        if (!req)
            goto fail;
        if (!s_add(req, "EventId", json_object_new_string(event_ids[i]))) {
            json_object_put(req);
            goto fail;
        }
        if (!s_append(reqs, req))
            goto fail;
    }
    return s_finish(root, ret_body);
fail:
    json_object_put(root);
    return -ENOMEM;
}

static int s_approval_incarnation(json_object *v, char *err, size_t errlen)
{
    int64_t inc;
    bool in_range;
    char q[S_QBUF];

    if (json_object_is_type(v, json_type_string)) {
        const char *s = json_object_get_string(v);
        size_t len = (size_t)json_object_get_string_len(v);

        if (strlen(s) != len || !s_parse_decimal(s, &inc) || inc < 0 || s[0] == '-')
            return sc_errf(err, errlen, SC_E_PARSE,
                           "DocumentIncarnation: string \"%s\" is not a non-negative integer",
                           s_quote(s, len, q, sizeof(q)));
        return 0;
    }
    if (!s_get_int64(v, &inc, &in_range))
        return sc_errf(err, errlen, SC_E_PARSE,
                       "DocumentIncarnation: must be an integer or a string of digits, got %s",
                       s_jtype(v));
    if (inc < 0)
        return sc_errf(err, errlen, SC_E_PARSE, "DocumentIncarnation: %lld is negative",
                       (long long)inc);
    return 0;
}

int sc_approval_parse(const char *buf, size_t len, char ***ret_ids, size_t *ret_n, char *err,
                      size_t errlen)
{
    json_object *root = NULL, *reqs = NULL;
    char **ids = NULL, q[S_QBUF];
    size_t n = 0, n_ids = 0;
    int rc;

    if (!ret_ids || !ret_n)
        return sc_errf(err, errlen, -EINVAL, "no place for the result");
    if ((rc = s_tokenize(buf, len, "approval body", &root, err, errlen)) < 0)
        return rc;
    if (!json_object_is_type(root, json_type_object)) {
        rc = sc_errf(err, errlen, SC_E_PARSE, "approval body must be a JSON object, got %s",
                     s_jtype(root));
        goto out;
    }
    json_object_object_foreach(root, key, val)
    {
        if (strcmp(key, "StartRequests") == 0) {
            reqs = val;
        } else if (strcmp(key, "DocumentIncarnation") == 0) {
            if ((rc = s_approval_incarnation(val, err, errlen)) < 0)
                goto out;
        } else {
            rc = sc_errf(err, errlen, SC_E_PARSE, "approval body: unexpected field \"%s\"",
                         s_quote(key, strlen(key), q, sizeof(q)));
            goto out;
        }
    }
    if (!reqs) {
        rc = sc_errf(err, errlen, SC_E_PARSE, "StartRequests: missing");
        goto out;
    }
    if (!json_object_is_type(reqs, json_type_array)) {
        rc = sc_errf(err, errlen, SC_E_PARSE, "StartRequests: must be an array, got %s",
                     s_jtype(reqs));
        goto out;
    }
    n = json_object_array_length(reqs);
    if (n == 0) {
        rc = sc_errf(err, errlen, SC_E_PARSE, "StartRequests: empty array");
        goto out;
    }
    if (n > SC_DOC_MAX_EVENTS) {
        rc =
            sc_errf(err, errlen, SC_E_TOO_BIG,
                    "StartRequests: %zu requests, more than the limit of %d", n, SC_DOC_MAX_EVENTS);
        goto out;
    }
    if (!(ids = calloc(n, sizeof(char *)))) {
        rc = sc_errf(err, errlen, -ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        json_object *req = json_object_array_get_idx(reqs, i);
        char path[48];
        const char *id;

        snprintf(path, sizeof(path), "StartRequests[%zu].", i);
        if (!json_object_is_type(req, json_type_object)) {
            rc = sc_errf(err, errlen, SC_E_PARSE, "StartRequests[%zu]: must be an object, got %s",
                         i, s_jtype(req));
            goto out;
        }
        json_object_object_foreach(req, rkey, rval)
        {
            (void)rval;
            if (strcmp(rkey, "EventId") != 0) {
                rc = sc_errf(err, errlen, SC_E_PARSE, "StartRequests[%zu]: unexpected field \"%s\"",
                             i, s_quote(rkey, strlen(rkey), q, sizeof(q)));
                goto out;
            }
        }
        if ((rc = s_get_string(req, path, "EventId", true, false, &id, err, errlen)) < 0 ||
            (rc = s_check_event_id(id, path, "EventId", err, errlen)) < 0)
            goto out;
        for (size_t k = 0; k < i; k++)
            if (sc_event_id_equal(ids[k], id)) {
                rc = sc_errf(err, errlen, SC_E_PARSE,
                             "StartRequests[%zu].EventId: \"%s\" repeats StartRequests[%zu]", i, id,
                             k);
                goto out;
            }
        if (!(ids[i] = strdup(id))) {
            rc = sc_errf(err, errlen, -ENOMEM, "out of memory");
            goto out;
        }
        n_ids = i + 1;
    }
    *ret_ids = ids;
    *ret_n = n_ids;
    ids = NULL;
    rc = 0;
out:
    sc_strv_free(ids, n_ids);
    json_object_put(root);
    return rc;
}
