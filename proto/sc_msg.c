/* sc_msg: the protocol's message catalog and its strict JSON codec (see sc_msg.h). */
#include "sc_msg.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "sc_error.h"

/* ---------------------------------------------------------------- names */

static const char *const s_type_names[SC_MSG_TYPE_MAX] = {
    [SC_MSG_HELLO] = "hello",
    [SC_MSG_HEARTBEAT] = "heartbeat",
    [SC_MSG_DOCUMENT] = "document",
    [SC_MSG_DOC_REQUEST] = "doc_request",
    [SC_MSG_HOOK_PROGRESS] = "hook_progress",
    [SC_MSG_ORDER] = "order",
    [SC_MSG_APPROVE_VIA] = "approve_via",
    [SC_MSG_APPROVE_RESULT] = "approve_result",
    [SC_MSG_LEADER] = "leader",
    [SC_MSG_VOTE_REQUEST] = "vote_request",
    [SC_MSG_VOTE] = "vote",
    [SC_MSG_APPEND] = "append",
    [SC_MSG_APPEND_ACK] = "append_ack",
    [SC_MSG_NACK] = "nack",
};

static const char *const s_phase_names[SC_MSG_PHASE_MAX] = {"prepare", "recover"};

static const char *const s_state_names[SC_MSG_HOOK_STATE_MAX] = {
    "started", "done", "failed", "timed_out", "interrupted", "refused", "skipped"};

static const char *const s_origin_names[SC_MSG_ORIGIN_MAX] = {"order", "standalone"};

static const char *const s_reject_names[SC_MSG_REJ_MAX] = {
    "none",    "too_big", "not_json", "version",  "type", "envelope",
    "missing", "field",   "unknown",  "document", "nomem"};

/* The body fields each type may carry (besides the envelope's v, type, from, term, seq). */
static const char *const s_body_keys[SC_MSG_TYPE_MAX][11] = {
    [SC_MSG_HELLO] = {"name", "fault_domain", "update_domain", "agent_version", "proto_min",
                      "proto_max", "capabilities", "boot_id", "incarnation"},
    [SC_MSG_HEARTBEAT] = {"incarnation", "running_hooks", "standalone", "imds_down_ms"},
    [SC_MSG_DOCUMENT] = {"incarnation", "observed_at_ms", "document", "malformed"},
    [SC_MSG_DOC_REQUEST] = {NULL},
    [SC_MSG_HOOK_PROGRESS] = {"event", "phase", "state", "exit_status", "origin", "order_term",
                              "detail", "attempt"},
    [SC_MSG_ORDER] = {"action", "event", "event_doc", "attempt"},
    [SC_MSG_APPROVE_VIA] = {"events"},
    [SC_MSG_APPROVE_RESULT] = {"events", "http_status", "result", "message"},
    [SC_MSG_LEADER] = {"leader", "lease_ms", "members_hash"},
    [SC_MSG_VOTE_REQUEST] = {"candidate", "last_log_index", "last_log_term"},
    [SC_MSG_VOTE] = {"granted", "reason"},
    [SC_MSG_APPEND] = {"leader", "prev_index", "prev_term", "commit_index", "entries"},
    [SC_MSG_APPEND_ACK] = {"success", "match_index"},
    [SC_MSG_NACK] = {"ref_seq", "reason"},
};

static int s_parse_name(const char *const *names, int n, const char *s)
{
    if (!s)
        return -1;
    for (int i = 0; i < n; i++)
        if (names[i] && strcmp(names[i], s) == 0)
            return i;
    return -1;
}

const char *sc_msg_type_name(sc_msg_type_t type)
{
    return (unsigned)type < SC_MSG_TYPE_MAX ? s_type_names[type] : "?";
}

int sc_msg_type_parse(const char *s, sc_msg_type_t *ret_type)
{
    int i = s_parse_name(s_type_names, SC_MSG_TYPE_MAX, s);

    if (i < 0)
        return -EINVAL;
    *ret_type = (sc_msg_type_t)i;
    return 0;
}

const char *sc_msg_phase_name(sc_msg_phase_t phase)
{
    return (unsigned)phase < SC_MSG_PHASE_MAX ? s_phase_names[phase] : "?";
}

int sc_msg_phase_parse(const char *s, sc_msg_phase_t *ret_phase)
{
    int i = s_parse_name(s_phase_names, SC_MSG_PHASE_MAX, s);

    if (i < 0)
        return -EINVAL;
    *ret_phase = (sc_msg_phase_t)i;
    return 0;
}

const char *sc_msg_hook_state_name(sc_msg_hook_state_t state)
{
    return (unsigned)state < SC_MSG_HOOK_STATE_MAX ? s_state_names[state] : "?";
}

int sc_msg_hook_state_parse(const char *s, sc_msg_hook_state_t *ret_state)
{
    int i = s_parse_name(s_state_names, SC_MSG_HOOK_STATE_MAX, s);

    if (i < 0)
        return -EINVAL;
    *ret_state = (sc_msg_hook_state_t)i;
    return 0;
}

const char *sc_msg_origin_name(sc_msg_origin_t origin)
{
    return (unsigned)origin < SC_MSG_ORIGIN_MAX ? s_origin_names[origin] : "?";
}

int sc_msg_origin_parse(const char *s, sc_msg_origin_t *ret_origin)
{
    int i = s_parse_name(s_origin_names, SC_MSG_ORIGIN_MAX, s);

    if (i < 0)
        return -EINVAL;
    *ret_origin = (sc_msg_origin_t)i;
    return 0;
}

const char *sc_msg_reject_name(sc_msg_reject_t reject)
{
    return (unsigned)reject < SC_MSG_REJ_MAX ? s_reject_names[reject] : "?";
}

/* ---------------------------------------------------------------- strings */

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 when invalid. Rejects
 * overlong forms, surrogates and code points above U+10FFFF. */
static size_t s_utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned cp;

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return len;
}

static bool s_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;

    for (size_t i = 0; i < n;) {
        size_t l = s_utf8_seq(p + i, n - i);

        if (l == 0)
            return false;
        i += l;
    }
    return true;
}

static bool s_is_name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

static bool s_is_boot_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

static bool s_is_cap_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

static bool s_is_kind_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

static bool s_is_result_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static bool s_is_hex_char(unsigned char c)
{
    return (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || (c >= '0' && c <= '9');
}

static bool s_is_print_char(unsigned char c)
{
    return c >= 0x20 && c < 0x7f;
}

static bool s_chars_ok(const char *s, size_t n, bool (*ok)(unsigned char))
{
    for (size_t i = 0; i < n; i++)
        if (!ok((unsigned char)s[i]))
            return false;
    return true;
}

bool sc_msg_name_valid(const char *s)
{
    size_t n;

    if (!s)
        return false;
    n = strnlen(s, SC_NAME_MAX + 1);
    return n >= 1 && n <= SC_NAME_MAX && s_chars_ok(s, n, s_is_name_char);
}

/* sc_msg_set_text with a limit of max bytes. */
static int s_set_text(char **field, const char *s, size_t len, bool keep_tail, size_t max)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t start = 0, end, o = 0;
    char *out;

    if (!s)
        len = 0;
    end = len;
    /* Keep at most max input bytes; an invalid byte becomes one '?', so the output is never
     * longer than the input. Cut on a character boundary. */
    if (len > max) {
        if (keep_tail) {
            start = len - max;
            while (start < len && (p[start] & 0xc0) == 0x80)
                start++;
        } else {
            end = max;
            while (end > 0 && (p[end] & 0xc0) == 0x80)
                end--;
        }
    }
    if (!(out = malloc(end - start + 1)))
        return -ENOMEM;
    for (size_t i = start; i < end;) {
        size_t l = p[i] ? s_utf8_seq(p + i, end - i) : 0;

        if (l == 0) {
            out[o++] = '?';
            i++;
        } else {
            memcpy(out + o, p + i, l);
            o += l;
            i += l;
        }
    }
    out[o] = '\0';
    free(*field);
    *field = out;
    return 0;
}

int sc_msg_set_text(char **field, const char *s, size_t len, bool keep_tail)
{
    return s_set_text(field, s, len, keep_tail, SC_MSG_MAX_TEXT);
}

/* ---------------------------------------------------------------- life cycle */

static void s_body_release(sc_msg_t *m)
{
    switch (m->type) {
    case SC_MSG_DOCUMENT:
        sc_doc_destroy(&m->document.document);
        sc_strv_free(m->document.malformed, m->document.n_malformed);
        break;
    case SC_MSG_HOOK_PROGRESS: free(m->hook_progress.detail); break;
    case SC_MSG_ORDER: sc_doc_destroy(&m->order.event_doc); break;
    case SC_MSG_APPROVE_VIA: free(m->approve_via.events); break;
    case SC_MSG_APPROVE_RESULT:
        free(m->approve_result.events);
        free(m->approve_result.message);
        break;
    case SC_MSG_VOTE: free(m->vote.reason); break;
    case SC_MSG_APPEND:
        for (size_t i = 0; i < m->append.n_entries; i++)
            free(m->append.entries[i].data);
        free(m->append.entries);
        break;
    case SC_MSG_NACK: free(m->nack.reason); break;
    default: break;
    }
}

void sc_msg_destroy(sc_msg_t **msg)
{
    if (!msg || !*msg)
        return;
    s_body_release(*msg);
    free(*msg);
    *msg = NULL;
}

static sc_msg_t *s_alloc(sc_msg_type_t type)
{
    sc_msg_t *m = calloc(1, sizeof(*m));

    if (!m)
        return NULL;
    m->type = type;
    m->version = SC_PROTO_VERSION;
    switch (type) {
    case SC_MSG_HELLO:
        m->hello.fault_domain = -1;
        m->hello.update_domain = -1;
        m->hello.proto_min = SC_PROTO_VERSION;
        m->hello.proto_max = SC_PROTO_VERSION;
        m->hello.incarnation = -1;
        break;
    case SC_MSG_HEARTBEAT:
        m->heartbeat.incarnation = -1;
        m->heartbeat.imds_down_ms = -1;
        break;
    case SC_MSG_DOCUMENT: m->document.incarnation = -1; break;
    case SC_MSG_HOOK_PROGRESS:
        m->hook_progress.exit_status = -1;
        m->hook_progress.attempt = 1;
        break;
    case SC_MSG_ORDER: m->order.attempt = 1; break;
    default: break;
    }
    return m;
}

int sc_msg_new(sc_msg_type_t type, const char *from, uint64_t term, uint64_t seq,
               sc_msg_t **ret_msg)
{
    sc_msg_t *m;

    if (!ret_msg || (unsigned)type >= SC_MSG_TYPE_MAX || !sc_msg_name_valid(from) ||
        term > INT64_MAX || seq > INT64_MAX)
        return -EINVAL;
    if (!(m = s_alloc(type)))
        return -ENOMEM;
    snprintf(m->from, sizeof(m->from), "%s", from);
    m->term = term;
    m->seq = seq;
    if (type == SC_MSG_HELLO)
        snprintf(m->hello.name, sizeof(m->hello.name), "%s", from);
    else if (type == SC_MSG_APPEND)
        snprintf(m->append.leader, sizeof(m->append.leader), "%s", from);
    else if (type == SC_MSG_VOTE_REQUEST)
        snprintf(m->vote_request.candidate, sizeof(m->vote_request.candidate), "%s", from);
    else if (type == SC_MSG_LEADER)
        snprintf(m->leader.leader, sizeof(m->leader.leader), "%s", from);
    *ret_msg = m;
    return 0;
}

/* ---------------------------------------------------------------- list helpers */

typedef char s_event_id_t[SC_EVENT_ID_MAX + 1];

int sc_msg_add_event(sc_msg_t *msg, const char *event_id)
{
    s_event_id_t **events, *grown;
    size_t *n;

    if (!msg || !sc_event_id_valid(event_id))
        return -EINVAL;
    if (msg->type == SC_MSG_APPROVE_VIA) {
        events = &msg->approve_via.events;
        n = &msg->approve_via.n_events;
    } else if (msg->type == SC_MSG_APPROVE_RESULT) {
        events = &msg->approve_result.events;
        n = &msg->approve_result.n_events;
    } else {
        return -EINVAL;
    }
    for (size_t i = 0; i < *n; i++)
        if (sc_event_id_equal((*events)[i], event_id))
            return -EINVAL;
    if (*n >= SC_MSG_MAX_EVENTS)
        return SC_E_TOO_BIG;
    if (!(grown = realloc(*events, (*n + 1) * sizeof(*grown))))
        return -ENOMEM;
    *events = grown;
    snprintf(grown[(*n)++], sizeof(*grown), "%s", event_id);
    return 0;
}

int sc_msg_add_malformed(sc_msg_t *msg, const char *reason)
{
    sc_msg_document_t *d;
    char **grown, *text = NULL;
    int rc;

    if (!msg || msg->type != SC_MSG_DOCUMENT || !reason || !*reason)
        return -EINVAL;
    d = &msg->document;
    if (d->n_malformed >= SC_MSG_MAX_MALFORMED)
        return SC_E_TOO_BIG;
    if ((rc = s_set_text(&text, reason, strlen(reason), false, SC_MSG_MALFORMED_MAX)) < 0)
        return rc;
    if (!(grown = realloc(d->malformed, (d->n_malformed + 1) * sizeof(*grown)))) {
        free(text);
        return -ENOMEM;
    }
    d->malformed = grown;
    grown[d->n_malformed++] = text;
    return 0;
}

int sc_msg_add_capability(sc_msg_t *msg, const char *cap)
{
    size_t n;

    if (!msg || msg->type != SC_MSG_HELLO || !cap)
        return -EINVAL;
    n = strnlen(cap, SC_MSG_CAP_MAX + 1);
    if (n < 1 || n > SC_MSG_CAP_MAX || !s_chars_ok(cap, n, s_is_cap_char) ||
        sc_msg_has_capability(msg, cap))
        return -EINVAL;
    if (msg->hello.n_capabilities >= SC_MSG_MAX_CAPS)
        return SC_E_TOO_BIG;
    memcpy(msg->hello.capabilities[msg->hello.n_capabilities++], cap, n + 1);
    return 0;
}

bool sc_msg_has_capability(const sc_msg_t *msg, const char *cap)
{
    if (!msg || msg->type != SC_MSG_HELLO || !cap)
        return false;
    for (size_t i = 0; i < msg->hello.n_capabilities && i < SC_MSG_MAX_CAPS; i++)
        if (strcmp(msg->hello.capabilities[i], cap) == 0)
            return true;
    return false;
}

/* Parses a JSON object text into compact text (*ret_json, caller's). */
static int s_object_normalize(const char *json, char **ret_json)
{
    json_tokener *tok = json_tokener_new_ex(SC_MSG_MAX_DEPTH - 3);
    json_object *o = NULL;
    size_t len = strlen(json);
    char *out;
    int rc = -EINVAL;

    if (!tok)
        return -ENOMEM;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    o = json_tokener_parse_ex(tok, json, (int)len);
    if (o && json_tokener_get_error(tok) == json_tokener_success &&
        (size_t)json_tokener_get_parse_end(tok) == len &&
        json_object_is_type(o, json_type_object)) {
        if ((out = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE)))) {
            *ret_json = out;
            rc = 0;
        } else {
            rc = -ENOMEM;
        }
    }
    json_object_put(o);
    json_tokener_free(tok);
    return rc;
}

int sc_msg_add_entry(sc_msg_t *msg, uint64_t term, uint64_t index, const char *kind,
                     const char *data_json)
{
    sc_msg_append_t *a;
    sc_msg_entry_t *grown;
    char *data = NULL;
    size_t n;
    int rc;

    if (!msg || msg->type != SC_MSG_APPEND || !kind)
        return -EINVAL;
    a = &msg->append;
    n = strnlen(kind, SC_MSG_KIND_MAX + 1);
    if (n < 1 || n > SC_MSG_KIND_MAX || !s_chars_ok(kind, n, s_is_kind_char))
        return -EINVAL;
    if (a->n_entries >= SC_MSG_MAX_ENTRIES)
        return SC_E_TOO_BIG;
    if ((rc = s_object_normalize(data_json ? data_json : "{}", &data)) < 0)
        return rc;
    if (!(grown = realloc(a->entries, (a->n_entries + 1) * sizeof(*grown)))) {
        free(data);
        return -ENOMEM;
    }
    a->entries = grown;
    grown[a->n_entries] = (sc_msg_entry_t){.term = term, .index = index, .data = data};
    memcpy(grown[a->n_entries].kind, kind, n + 1);
    a->n_entries++;
    return 0;
}

/* ---------------------------------------------------------------- decoding */

typedef struct s_dec {
    char *err;           /* caller's reason buffer, may be NULL */
    size_t errlen;       /* its size */
    sc_msg_reject_t rej; /* class of the first failure */
    const char *pfx;     /* body prefix for reasons: the type name */
} s_dec_t;

__attribute__((format(printf, 4, 5))) static int s_fail(s_dec_t *d, sc_msg_reject_t rej, int rc,
                                                        const char *fmt, ...)
{
    va_list ap;

    d->rej = rej;
    if (d->err && d->errlen) {
        va_start(ap, fmt);
        vsnprintf(d->err, d->errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

static const char *s_jtype(json_object *o)
{
    switch (json_object_get_type(o)) {
    case json_type_null: return "null";
    case json_type_boolean: return "a boolean";
    case json_type_double: return "a non-integer number";
    case json_type_int: return "an integer";
    case json_type_object: return "an object";
    case json_type_array: return "an array";
    case json_type_string: return "a string";
    }
    return "?";
}

/* The field key of obj, which must be of type want. optional: absent gives *ret NULL. */
static int s_field(s_dec_t *d, json_object *obj, const char *key, json_type want, bool optional,
                   json_object **ret)
{
    static const char *const want_names[] = {
        [json_type_null] = "null",        [json_type_boolean] = "a boolean",
        [json_type_double] = "a number",  [json_type_int] = "an integer",
        [json_type_object] = "an object", [json_type_array] = "an array",
        [json_type_string] = "a string"};
    json_object *v = NULL;

    if (!json_object_object_get_ex(obj, key, &v)) {
        if (optional) {
            *ret = NULL;
            return 0;
        }
        return s_fail(d, d->pfx ? SC_MSG_REJ_MISSING : SC_MSG_REJ_ENVELOPE, SC_E_PROTO,
                      "%s%s%s: missing", d->pfx ? d->pfx : "", d->pfx ? "." : "", key);
    }
    if (!json_object_is_type(v, want))
        return s_fail(d, d->pfx ? SC_MSG_REJ_FIELD : SC_MSG_REJ_ENVELOPE, SC_E_PROTO,
                      "%s%s%s: must be %s, not %s", d->pfx ? d->pfx : "", d->pfx ? "." : "", key,
                      want_names[want], s_jtype(v));
    *ret = v;
    return 0;
}

#define S_PFX(d) ((d)->pfx ? (d)->pfx : ""), ((d)->pfx ? "." : "")

/* A JSON integer in [min, max] (max <= INT64_MAX). */
static int s_int_value(s_dec_t *d, json_object *v, const char *what, int64_t min, int64_t max,
                       int64_t *ret)
{
    int64_t i = json_object_get_int64(v);
    sc_msg_reject_t rej = d->pfx ? SC_MSG_REJ_FIELD : SC_MSG_REJ_ENVELOPE;

    if (i >= 0 && json_object_get_uint64(v) > (uint64_t)INT64_MAX)
        return s_fail(d, rej, SC_E_PROTO, "%s%s%s: %" PRIu64 " out of range %" PRId64 "..%" PRId64,
                      S_PFX(d), what, json_object_get_uint64(v), min, max);
    if (i < min || i > max)
        return s_fail(d, rej, SC_E_PROTO, "%s%s%s: %" PRId64 " out of range %" PRId64 "..%" PRId64,
                      S_PFX(d), what, i, min, max);
    *ret = i;
    return 0;
}

static int s_get_i64(s_dec_t *d, json_object *obj, const char *key, int64_t min, int64_t max,
                     int64_t *ret)
{
    json_object *v = NULL;
    int rc;

    if ((rc = s_field(d, obj, key, json_type_int, false, &v)) < 0)
        return rc;
    return s_int_value(d, v, key, min, max, ret);
}

static int s_get_int(s_dec_t *d, json_object *obj, const char *key, int min, int max, int *ret)
{
    int64_t v;
    int rc = s_get_i64(d, obj, key, min, max, &v);

    if (rc == 0)
        *ret = (int)v;
    return rc;
}

static int s_get_u64(s_dec_t *d, json_object *obj, const char *key, uint64_t *ret)
{
    int64_t v;
    int rc = s_get_i64(d, obj, key, 0, INT64_MAX, &v);

    if (rc == 0)
        *ret = (uint64_t)v;
    return rc;
}

static int s_get_bool(s_dec_t *d, json_object *obj, const char *key, bool *ret)
{
    json_object *v = NULL;
    int rc;

    if ((rc = s_field(d, obj, key, json_type_boolean, false, &v)) < 0)
        return rc;
    *ret = json_object_get_boolean(v);
    return 0;
}

/* Checks a string value: no NUL, valid UTF-8, min..max bytes, chars accepted by ok. */
static int s_str_value(s_dec_t *d, json_object *v, const char *what, size_t min, size_t max,
                       bool (*ok)(unsigned char), const char *charset)
{
    const char *s = json_object_get_string(v);
    size_t n = (size_t)json_object_get_string_len(v);
    sc_msg_reject_t rej = d->pfx ? SC_MSG_REJ_FIELD : SC_MSG_REJ_ENVELOPE;

    if (memchr(s, '\0', n))
        return s_fail(d, rej, SC_E_PROTO, "%s%s%s: contains a NUL character", S_PFX(d), what);
    if (!s_utf8_valid(s, n))
        return s_fail(d, rej, SC_E_PROTO, "%s%s%s: invalid UTF-8", S_PFX(d), what);
    if (n < min)
        return s_fail(d, rej, SC_E_PROTO, "%s%s%s: empty", S_PFX(d), what);
    if (n > max)
        return s_fail(d, rej, SC_E_PROTO, "%s%s%s: %zu bytes, longer than %zu", S_PFX(d), what, n,
                      max);
    if (ok && !s_chars_ok(s, n, ok))
        return s_fail(d, rej, SC_E_PROTO, "%s%s%s: \"%.64s\" has characters outside %s", S_PFX(d),
                      what, s, charset);
    return 0;
}

/* A string field copied into a fixed buffer of size max + 1. */
static int s_get_fixed(s_dec_t *d, json_object *obj, const char *key, char *dst, size_t min,
                       size_t max, bool (*ok)(unsigned char), const char *charset, bool optional)
{
    json_object *v = NULL;
    int rc;

    if ((rc = s_field(d, obj, key, json_type_string, optional, &v)) < 0)
        return rc;
    if (!v) {
        dst[0] = '\0';
        return 0;
    }
    if ((rc = s_str_value(d, v, key, min, max, ok, charset)) < 0)
        return rc;
    memcpy(dst, json_object_get_string(v), (size_t)json_object_get_string_len(v) + 1);
    return 0;
}

static int s_get_name(s_dec_t *d, json_object *obj, const char *key, char *dst)
{
    return s_get_fixed(d, obj, key, dst, 1, SC_NAME_MAX, s_is_name_char, "[A-Za-z0-9._-]", false);
}

/* A free text (0..SC_MSG_MAX_TEXT bytes) copied to the heap. */
static int s_get_text(s_dec_t *d, json_object *obj, const char *key, char **dst)
{
    json_object *v = NULL;
    int rc;

    if ((rc = s_field(d, obj, key, json_type_string, false, &v)) < 0)
        return rc;
    if ((rc = s_str_value(d, v, key, 0, SC_MSG_MAX_TEXT, NULL, NULL)) < 0)
        return rc;
    if (!(*dst = strdup(json_object_get_string(v))))
        return s_fail(d, SC_MSG_REJ_NOMEM, -ENOMEM, "out of memory");
    return 0;
}

static int s_get_event_id(s_dec_t *d, json_object *v, const char *what, char *dst)
{
    int rc;

    if ((rc = s_str_value(d, v, what, 1, SC_EVENT_ID_MAX, NULL, NULL)) < 0)
        return rc;
    if (!sc_event_id_valid(json_object_get_string(v)))
        return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO,
                      "%s%s%s: \"%s\" is not an EventId ([A-Za-z0-9_-], first alphanumeric)",
                      S_PFX(d), what, json_object_get_string(v));
    memcpy(dst, json_object_get_string(v), (size_t)json_object_get_string_len(v) + 1);
    return 0;
}

/* An enum field whose names are names[0..n). */
static int s_get_enum(s_dec_t *d, json_object *obj, const char *key, const char *const *names,
                      int n, int *ret)
{
    json_object *v = NULL;
    int rc, i;

    if ((rc = s_field(d, obj, key, json_type_string, false, &v)) < 0)
        return rc;
    if ((rc = s_str_value(d, v, key, 1, 32, NULL, NULL)) < 0)
        return rc;
    if ((i = s_parse_name(names, n, json_object_get_string(v))) < 0)
        return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO, "%s.%s: unknown value \"%s\"", d->pfx, key,
                      json_object_get_string(v));
    *ret = i;
    return 0;
}

/* A JSON object (a sub-object of the message) as compact text on the heap. */
static int s_object_text(s_dec_t *d, json_object *o, char **ret)
{
    char *s = strdup(
        json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));

    if (!s)
        return s_fail(d, SC_MSG_REJ_NOMEM, -ENOMEM, "out of memory");
    *ret = s;
    return 0;
}

static int s_doc_rc(s_dec_t *d, int rc, const char *what, const char *why)
{
    if (rc == -ENOMEM)
        return s_fail(d, SC_MSG_REJ_NOMEM, -ENOMEM, "out of memory");
    return s_fail(d, SC_MSG_REJ_DOCUMENT, rc == SC_E_TOO_BIG ? SC_E_TOO_BIG : SC_E_PROTO,
                  "%s.%s: %s", d->pfx, what, why);
}

static int s_dec_hello(s_dec_t *d, json_object *o, sc_msg_t *m)
{
    sc_msg_hello_t *h = &m->hello;
    json_object *caps;
    int rc;

    if ((rc = s_get_name(d, o, "name", h->name)) < 0 ||
        (rc = s_get_int(d, o, "fault_domain", -1, SC_MSG_DOMAIN_MAX, &h->fault_domain)) < 0 ||
        (rc = s_get_int(d, o, "update_domain", -1, SC_MSG_DOMAIN_MAX, &h->update_domain)) < 0 ||
        (rc = s_get_fixed(d, o, "agent_version", h->agent_version, 1, SC_MSG_VERSION_MAX,
                          s_is_print_char, "printable ASCII", false)) < 0 ||
        (rc = s_get_int(d, o, "proto_min", 1, SC_MSG_PROTO_MAX, &h->proto_min)) < 0 ||
        (rc = s_get_int(d, o, "proto_max", 1, SC_MSG_PROTO_MAX, &h->proto_max)) < 0 ||
        (rc = s_get_fixed(d, o, "boot_id", h->boot_id, 1, SC_MSG_BOOT_ID_MAX, s_is_boot_char,
                          "[A-Za-z0-9-]", false)) < 0 ||
        (rc = s_get_i64(d, o, "incarnation", -1, INT64_MAX, &h->incarnation)) < 0 ||
        (rc = s_field(d, o, "capabilities", json_type_array, false, &caps)) < 0)
        return rc;
    if (strcmp(h->name, m->from) != 0)
        return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO,
                      "hello.name: \"%s\" differs from from \"%s\"", h->name, m->from);
    if (h->proto_min > h->proto_max)
        return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO, "hello.proto_min: %d above proto_max %d",
                      h->proto_min, h->proto_max);
    if (json_object_array_length(caps) > SC_MSG_MAX_CAPS)
        return s_fail(d, SC_MSG_REJ_TOO_BIG, SC_E_TOO_BIG,
                      "hello.capabilities: %zu items, more than %d", json_object_array_length(caps),
                      SC_MSG_MAX_CAPS);
    for (size_t i = 0; i < json_object_array_length(caps); i++) {
        json_object *c = json_object_array_get_idx(caps, i);
        char what[48];

        snprintf(what, sizeof(what), "capabilities[%zu]", i);
        if (!json_object_is_type(c, json_type_string))
            return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO, "hello.%s: must be a string, not %s",
                          what, s_jtype(c));
        if ((rc = s_str_value(d, c, what, 1, SC_MSG_CAP_MAX, s_is_cap_char, "[a-z0-9-]")) < 0)
            return rc;
        if (sc_msg_has_capability(m, json_object_get_string(c)))
            return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO, "hello.%s: \"%s\" repeated", what,
                          json_object_get_string(c));
        memcpy(h->capabilities[h->n_capabilities++], json_object_get_string(c),
               (size_t)json_object_get_string_len(c) + 1);
    }
    return 0;
}

/* The optional "attempt" of an order or a hook_progress: 1 when absent. */
static int s_get_attempt(s_dec_t *d, json_object *o, int *ret)
{
    json_object *v = NULL;
    int64_t a = 1;
    int rc;

    if ((rc = s_field(d, o, "attempt", json_type_int, true, &v)) < 0 ||
        (v && (rc = s_int_value(d, v, "attempt", 1, SC_MSG_ATTEMPT_MAX, &a)) < 0))
        return rc;
    *ret = (int)a;
    return 0;
}

/* The optional "malformed" of a document: 1..SC_MSG_MAX_MALFORMED texts. */
static int s_dec_malformed(s_dec_t *d, json_object *o, sc_msg_document_t *doc)
{
    json_object *arr = NULL;
    size_t n;
    int rc;

    if ((rc = s_field(d, o, "malformed", json_type_array, true, &arr)) < 0 || !arr)
        return rc;
    n = json_object_array_length(arr);
    if (n == 0)
        return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO, "document.malformed: empty (omit it)");
    if (n > SC_MSG_MAX_MALFORMED)
        return s_fail(d, SC_MSG_REJ_TOO_BIG, SC_E_TOO_BIG,
                      "document.malformed: %zu items, more than %d", n, SC_MSG_MAX_MALFORMED);
    /* Owned by the message at once, so that a failure below frees it with the message. */
    if (!(doc->malformed = calloc(n, sizeof(*doc->malformed))))
        return s_fail(d, SC_MSG_REJ_NOMEM, -ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_object *v = json_object_array_get_idx(arr, i);
        char what[48];

        snprintf(what, sizeof(what), "malformed[%zu]", i);
        if (!json_object_is_type(v, json_type_string))
            return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO, "document.%s: must be a string, not %s",
                          what, s_jtype(v));
        if ((rc = s_str_value(d, v, what, 1, SC_MSG_MALFORMED_MAX, NULL, NULL)) < 0)
            return rc;
        if (!(doc->malformed[i] = strdup(json_object_get_string(v))))
            return s_fail(d, SC_MSG_REJ_NOMEM, -ENOMEM, "out of memory");
        doc->n_malformed = i + 1;
    }
    return 0;
}

static int s_dec_heartbeat(s_dec_t *d, json_object *o, sc_msg_t *m)
{
    json_object *v = NULL;
    int rc;

    if ((rc = s_get_i64(d, o, "incarnation", -1, INT64_MAX, &m->heartbeat.incarnation)) < 0 ||
        (rc = s_get_int(d, o, "running_hooks", 0, SC_MSG_RUNNING_HOOKS_MAX,
                        &m->heartbeat.running_hooks)) < 0 ||
        (rc = s_get_bool(d, o, "standalone", &m->heartbeat.standalone)) < 0)
        return rc;
    /* optional: agents older than the field don't send it */
    if ((rc = s_field(d, o, "imds_down_ms", json_type_int, true, &v)) < 0 ||
        (v &&
         (rc = s_int_value(d, v, "imds_down_ms", -1, INT64_MAX, &m->heartbeat.imds_down_ms)) < 0))
        return rc;
    return 0;
}

static int s_dec_document(s_dec_t *d, json_object *o, sc_msg_t *m)
{
    sc_msg_document_t *doc = &m->document;
    json_object *v = NULL;
    char *text = NULL, why[512] = "";
    int rc;

    if ((rc = s_get_i64(d, o, "incarnation", 0, INT64_MAX, &doc->incarnation)) < 0 ||
        (rc = s_get_i64(d, o, "observed_at_ms", 0, INT64_MAX, &doc->observed_at_ms)) < 0 ||
        (rc = s_field(d, o, "document", json_type_object, false, &v)) < 0 ||
        (rc = s_object_text(d, v, &text)) < 0)
        return rc;
    rc = sc_doc_parse(text, strlen(text), &doc->document, why, sizeof(why));
    free(text);
    if (rc < 0)
        return s_doc_rc(d, rc, "document", why);
    if (doc->document->incarnation != doc->incarnation)
        return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO,
                      "document.incarnation: %" PRId64 " differs from DocumentIncarnation %" PRId64,
                      doc->incarnation, doc->document->incarnation);
    return s_dec_malformed(d, o, doc);
}

static int s_dec_hook_progress(s_dec_t *d, json_object *o, sc_msg_t *m)
{
    sc_msg_hook_progress_t *h = &m->hook_progress;
    json_object *v = NULL;
    int rc, phase = 0, state = 0, origin = 0;

    if ((rc = s_field(d, o, "event", json_type_string, false, &v)) < 0 ||
        (rc = s_get_event_id(d, v, "event", h->event)) < 0 ||
        (rc = s_get_enum(d, o, "phase", s_phase_names, SC_MSG_PHASE_MAX, &phase)) < 0 ||
        (rc = s_get_enum(d, o, "state", s_state_names, SC_MSG_HOOK_STATE_MAX, &state)) < 0 ||
        (rc = s_get_int(d, o, "exit_status", -1, 255, &h->exit_status)) < 0 ||
        (rc = s_get_enum(d, o, "origin", s_origin_names, SC_MSG_ORIGIN_MAX, &origin)) < 0 ||
        (rc = s_get_u64(d, o, "order_term", &h->order_term)) < 0 ||
        (rc = s_get_text(d, o, "detail", &h->detail)) < 0 ||
        (rc = s_get_attempt(d, o, &h->attempt)) < 0)
        return rc;
    h->phase = (sc_msg_phase_t)phase;
    h->state = (sc_msg_hook_state_t)state;
    h->origin = (sc_msg_origin_t)origin;
    if (h->origin == SC_MSG_ORIGIN_ORDER && h->order_term == 0)
        return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO,
                      "hook_progress.order_term: 0 but origin is \"order\" (terms start at 1)");
    return 0;
}

static int s_dec_order(s_dec_t *d, json_object *o, sc_msg_t *m)
{
    sc_msg_order_t *ord = &m->order;
    json_object *v, *wrap = NULL, *arr = NULL;
    char *text = NULL, why[512] = "";
    int rc, action;

    if ((rc = s_get_enum(d, o, "action", s_phase_names, SC_MSG_PHASE_MAX, &action)) < 0 ||
        (rc = s_field(d, o, "event", json_type_string, false, &v)) < 0 ||
        (rc = s_get_event_id(d, v, "event", ord->event)) < 0 ||
        (rc = s_get_attempt(d, o, &ord->attempt)) < 0 ||
        (rc = s_field(d, o, "event_doc", json_type_object, true, &v)) < 0)
        return rc;
    ord->action = (sc_msg_phase_t)action;
    if (m->term == 0)
        return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO, "order: term 0 (orders carry a term >= 1)");
    if (!v)
        return 0;
    /* sc_event parses documents: wrap the event in one. */
    if (!(wrap = json_object_new_object()) || !(arr = json_object_new_array()) ||
        json_object_object_add(wrap, "DocumentIncarnation", json_object_new_int64(0)) < 0 ||
        json_object_array_add(arr, json_object_get(v)) < 0) {
        json_object_put(arr);
        json_object_put(wrap);
        return s_fail(d, SC_MSG_REJ_NOMEM, -ENOMEM, "out of memory");
    }
    json_object_object_add(wrap, "Events", arr);
    rc = s_object_text(d, wrap, &text);
    json_object_put(wrap);
    if (rc < 0)
        return rc;
    rc = sc_doc_parse(text, strlen(text), &ord->event_doc, why, sizeof(why));
    free(text);
    if (rc < 0)
        return s_doc_rc(d, rc, "event_doc", why);
    if (!sc_event_id_equal(ord->event_doc->events[0].id, ord->event))
        return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO,
                      "order.event_doc: EventId \"%s\" differs from event \"%s\"",
                      ord->event_doc->events[0].id, ord->event);
    return 0;
}

static int s_dec_events(s_dec_t *d, json_object *o, s_event_id_t **ret_events, size_t *ret_n)
{
    struct {
        s_event_id_t *events;
        size_t n_events;
    } ev_, *ev = &ev_;
    json_object *arr;
    size_t n;
    int rc;

    if ((rc = s_field(d, o, "events", json_type_array, false, &arr)) < 0)
        return rc;
    n = json_object_array_length(arr);
    if (n == 0)
        return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO, "%s.events: empty", d->pfx);
    if (n > SC_MSG_MAX_EVENTS)
        return s_fail(d, SC_MSG_REJ_TOO_BIG, SC_E_TOO_BIG, "%s.events: %zu items, more than %d",
                      d->pfx, n, SC_MSG_MAX_EVENTS);
    /* Owned by the message at once, so that a failure below frees it with the message. */
    if (!(*ret_events = calloc(n, sizeof(**ret_events))))
        return s_fail(d, SC_MSG_REJ_NOMEM, -ENOMEM, "out of memory");
    ev->events = *ret_events;
    ev->n_events = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        char what[48];

        snprintf(what, sizeof(what), "events[%zu]", i);
        if (!json_object_is_type(e, json_type_string))
            return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO, "%s.%s: must be a string, not %s",
                          d->pfx, what, s_jtype(e));
        if ((rc = s_get_event_id(d, e, what, ev->events[i])) < 0)
            return rc;
        for (size_t j = 0; j < i; j++)
            if (sc_event_id_equal(ev->events[j], ev->events[i]))
                return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO, "%s.%s: \"%s\" repeated", d->pfx,
                              what, ev->events[i]);
        ev->n_events = i + 1;
        *ret_n = i + 1;
    }
    return 0;
}

static int s_dec_approve_result(s_dec_t *d, json_object *o, sc_msg_t *m)
{
    sc_msg_approve_result_t *r = &m->approve_result;
    int rc;

    if ((rc = s_dec_events(d, o, &r->events, &r->n_events)) < 0 ||
        (rc = s_get_int(d, o, "http_status", 0, 999, &r->http_status)) < 0 ||
        (rc = s_get_fixed(d, o, "result", r->result, 1, SC_MSG_RESULT_MAX, s_is_result_char,
                          "[A-Za-z0-9_]", false)) < 0 ||
        (rc = s_get_text(d, o, "message", &r->message)) < 0)
        return rc;
    return 0;
}

static int s_dec_leader(s_dec_t *d, json_object *o, sc_msg_t *m)
{
    int rc;

    if ((rc = s_get_name(d, o, "leader", m->leader.leader)) < 0 ||
        (rc = s_get_i64(d, o, "lease_ms", 1, SC_MSG_LEASE_MAX_MS, &m->leader.lease_ms)) < 0 ||
        (rc = s_get_fixed(d, o, "members_hash", m->leader.members_hash, 1, SC_MSG_HASH_MAX,
                          s_is_hex_char, "[0-9a-fA-F]", true)) < 0)
        return rc;
    if (m->term == 0)
        return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO, "leader: term 0 (terms start at 1)");
    return 0;
}

static int s_dec_vote_request(s_dec_t *d, json_object *o, sc_msg_t *m)
{
    sc_msg_vote_request_t *v = &m->vote_request;
    int rc;

    if ((rc = s_get_name(d, o, "candidate", v->candidate)) < 0 ||
        (rc = s_get_u64(d, o, "last_log_index", &v->last_log_index)) < 0 ||
        (rc = s_get_u64(d, o, "last_log_term", &v->last_log_term)) < 0)
        return rc;
    if (strcmp(v->candidate, m->from) != 0)
        return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO,
                      "vote_request.candidate: \"%s\" differs from from \"%s\"", v->candidate,
                      m->from);
    if (m->term == 0)
        return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO, "vote_request: term 0 (terms start at 1)");
    if (v->last_log_term > m->term)
        return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO,
                      "vote_request.last_log_term: %" PRIu64 " above the term %" PRIu64,
                      v->last_log_term, m->term);
    return 0;
}

static int s_dec_append(s_dec_t *d, json_object *o, sc_msg_t *m)
{
    sc_msg_append_t *a = &m->append;
    json_object *arr;
    size_t n;
    int rc;

    if ((rc = s_get_name(d, o, "leader", a->leader)) < 0 ||
        (rc = s_get_u64(d, o, "prev_index", &a->prev_index)) < 0 ||
        (rc = s_get_u64(d, o, "prev_term", &a->prev_term)) < 0 ||
        (rc = s_get_u64(d, o, "commit_index", &a->commit_index)) < 0 ||
        (rc = s_field(d, o, "entries", json_type_array, false, &arr)) < 0)
        return rc;
    if (strcmp(a->leader, m->from) != 0)
        return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO,
                      "append.leader: \"%s\" differs from from \"%s\"", a->leader, m->from);
    if (m->term == 0)
        return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO, "append: term 0 (terms start at 1)");
    if (a->prev_term > m->term)
        return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO,
                      "append.prev_term: %" PRIu64 " above the term %" PRIu64, a->prev_term,
                      m->term);
    n = json_object_array_length(arr);
    if (n > SC_MSG_MAX_ENTRIES)
        return s_fail(d, SC_MSG_REJ_TOO_BIG, SC_E_TOO_BIG,
                      "append.entries: %zu items, more than %d", n, SC_MSG_MAX_ENTRIES);
    if (n > 0 && !(a->entries = calloc(n, sizeof(*a->entries))))
        return s_fail(d, SC_MSG_REJ_NOMEM, -ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(arr, i), *data;
        sc_msg_entry_t *en = &a->entries[i];
        uint64_t prev_term = i ? a->entries[i - 1].term : a->prev_term;
        char pfx[48];

        snprintf(pfx, sizeof(pfx), "append.entries[%zu]", i);
        if (!json_object_is_type(e, json_type_object))
            return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO, "%s: must be an object, not %s", pfx,
                          s_jtype(e));
        d->pfx = pfx;
        json_object_object_foreach(e, key, val)
        {
            (void)val;
            if (strcmp(key, "term") && strcmp(key, "index") && strcmp(key, "kind") &&
                strcmp(key, "data"))
                return s_fail(d, SC_MSG_REJ_UNKNOWN, SC_E_PROTO,
                              "%s.%.64s: unknown field (protocol v%d)", pfx, key, SC_PROTO_VERSION);
        }
        if ((rc = s_get_u64(d, e, "term", &en->term)) < 0 ||
            (rc = s_get_u64(d, e, "index", &en->index)) < 0 ||
            (rc = s_get_fixed(d, e, "kind", en->kind, 1, SC_MSG_KIND_MAX, s_is_kind_char,
                              "[a-z0-9_.-]", false)) < 0 ||
            (rc = s_field(d, e, "data", json_type_object, false, &data)) < 0 ||
            (rc = s_object_text(d, data, &en->data)) < 0)
            return rc;
        a->n_entries = i + 1;
        if (en->term < 1 || en->term > m->term || en->term < prev_term)
            return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO,
                          "%s.term: %" PRIu64 " not in %" PRIu64 "..%" PRIu64
                          " (>= 1, >= the previous entry's, <= the message's term)",
                          pfx, en->term, prev_term > 1 ? prev_term : 1, m->term);
        if (a->prev_index > INT64_MAX - 1 - i || en->index != a->prev_index + 1 + i)
            return s_fail(d, SC_MSG_REJ_FIELD, SC_E_PROTO,
                          "%s.index: %" PRIu64 ", expected %" PRIu64 " (prev_index + %zu)", pfx,
                          en->index, a->prev_index + 1 + i, i + 1);
    }
    d->pfx = "append";
    return 0;
}

/* Decodes the body of m->type from o into m. */
static int s_dec_body(s_dec_t *d, json_object *o, sc_msg_t *m)
{
    int rc;

    switch (m->type) {
    case SC_MSG_HELLO: return s_dec_hello(d, o, m);
    case SC_MSG_HEARTBEAT: return s_dec_heartbeat(d, o, m);
    case SC_MSG_DOCUMENT: return s_dec_document(d, o, m);
    case SC_MSG_DOC_REQUEST: return 0;
    case SC_MSG_HOOK_PROGRESS: return s_dec_hook_progress(d, o, m);
    case SC_MSG_ORDER: return s_dec_order(d, o, m);
    case SC_MSG_APPROVE_VIA:
        return s_dec_events(d, o, &m->approve_via.events, &m->approve_via.n_events);
    case SC_MSG_APPROVE_RESULT: return s_dec_approve_result(d, o, m);
    case SC_MSG_LEADER: return s_dec_leader(d, o, m);
    case SC_MSG_VOTE_REQUEST: return s_dec_vote_request(d, o, m);
    case SC_MSG_VOTE:
        if ((rc = s_get_bool(d, o, "granted", &m->vote.granted)) < 0)
            return rc;
        return s_get_text(d, o, "reason", &m->vote.reason);
    case SC_MSG_APPEND: return s_dec_append(d, o, m);
    case SC_MSG_APPEND_ACK:
        if ((rc = s_get_bool(d, o, "success", &m->append_ack.success)) < 0)
            return rc;
        return s_get_u64(d, o, "match_index", &m->append_ack.match_index);
    case SC_MSG_NACK:
        if ((rc = s_get_u64(d, o, "ref_seq", &m->nack.ref_seq)) < 0)
            return rc;
        return s_get_text(d, o, "reason", &m->nack.reason);
    default: return s_fail(d, SC_MSG_REJ_TYPE, SC_E_PROTO, "type: unknown");
    }
}

static bool s_is_envelope_key(const char *k)
{
    return !strcmp(k, "v") || !strcmp(k, "type") || !strcmp(k, "from") || !strcmp(k, "term") ||
           !strcmp(k, "seq");
}

static bool s_is_body_key(sc_msg_type_t type, const char *k)
{
    for (size_t i = 0; i < sizeof(s_body_keys[0]) / sizeof(s_body_keys[0][0]); i++)
        if (s_body_keys[type][i] && strcmp(s_body_keys[type][i], k) == 0)
            return true;
    return false;
}

/* Parses buf into one JSON object (*ret_obj, caller's). */
static int s_parse_json(s_dec_t *d, const char *buf, size_t len, json_object **ret_obj)
{
    json_tokener *tok;
    json_object *o;
    enum json_tokener_error jerr;
    size_t end;

    if (len == 0)
        return s_fail(d, SC_MSG_REJ_NOT_JSON, SC_E_PROTO, "empty message");
    if (len > SC_MSG_MAX_BYTES)
        return s_fail(d, SC_MSG_REJ_TOO_BIG, SC_E_TOO_BIG, "message of %zu bytes, more than %d",
                      len, SC_MSG_MAX_BYTES);
    if (memchr(buf, '\0', len))
        return s_fail(d, SC_MSG_REJ_NOT_JSON, SC_E_PROTO, "NUL byte at offset %zu",
                      (size_t)((const char *)memchr(buf, '\0', len) - buf));
    if (!(tok = json_tokener_new_ex(SC_MSG_MAX_DEPTH)))
        return s_fail(d, SC_MSG_REJ_NOMEM, -ENOMEM, "out of memory");
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    o = json_tokener_parse_ex(tok, buf, (int)len);
    jerr = json_tokener_get_error(tok);
    end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (!o || jerr != json_tokener_success) {
        json_object_put(o);
        if (jerr == json_tokener_continue)
            return s_fail(d, SC_MSG_REJ_NOT_JSON, SC_E_PROTO, "not JSON: cut short");
        if (jerr == json_tokener_error_depth)
            return s_fail(d, SC_MSG_REJ_TOO_BIG, SC_E_TOO_BIG, "JSON nested deeper than %d",
                          SC_MSG_MAX_DEPTH);
        return s_fail(d, SC_MSG_REJ_NOT_JSON, SC_E_PROTO, "not JSON: %s at offset %zu",
                      json_tokener_error_desc(jerr), end);
    }
    for (; end < len; end++) {
        if (!strchr(" \t\r\n", buf[end])) {
            json_object_put(o);
            return s_fail(d, SC_MSG_REJ_NOT_JSON, SC_E_PROTO,
                          "not JSON: data after the object at offset %zu", end);
        }
    }
    if (!json_object_is_type(o, json_type_object)) {
        s_fail(d, SC_MSG_REJ_NOT_JSON, SC_E_PROTO, "not a JSON object but %s", s_jtype(o));
        json_object_put(o);
        return SC_E_PROTO;
    }
    *ret_obj = o;
    return 0;
}

static int s_decode_obj(s_dec_t *d, json_object *o, sc_msg_t **ret_msg)
{
    json_object *v = NULL;
    sc_msg_type_t type;
    sc_msg_t *m = NULL;
    char from[SC_NAME_MAX + 1];
    uint64_t term = 0, seq = 0;
    int64_t ver;
    int rc;

    /* The version first: a message of another version is refused as such, not for its
     * fields. */
    if (!json_object_object_get_ex(o, "v", &v))
        return s_fail(d, SC_MSG_REJ_VERSION, SC_E_PROTO, "v: missing (protocol version)");
    if (!json_object_is_type(v, json_type_int))
        return s_fail(d, SC_MSG_REJ_VERSION, SC_E_PROTO, "v: must be an integer, not %s",
                      s_jtype(v));
    ver = json_object_get_int64(v);
    if (ver != SC_PROTO_VERSION || json_object_get_uint64(v) != (uint64_t)SC_PROTO_VERSION)
        return s_fail(d, SC_MSG_REJ_VERSION, SC_E_PROTO,
                      "v: unsupported protocol version %" PRId64 " (this build speaks %d)", ver,
                      SC_PROTO_VERSION);
    if (!json_object_object_get_ex(o, "type", &v))
        return s_fail(d, SC_MSG_REJ_TYPE, SC_E_PROTO, "type: missing");
    if (!json_object_is_type(v, json_type_string))
        return s_fail(d, SC_MSG_REJ_TYPE, SC_E_PROTO, "type: must be a string, not %s", s_jtype(v));
    if (sc_msg_type_parse(json_object_get_string(v), &type) < 0 ||
        strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
        return s_fail(d, SC_MSG_REJ_TYPE, SC_E_PROTO, "type: unknown message type \"%.64s\"",
                      json_object_get_string(v));
    if ((rc = s_get_name(d, o, "from", from)) < 0 || (rc = s_get_u64(d, o, "term", &term)) < 0 ||
        (rc = s_get_u64(d, o, "seq", &seq)) < 0)
        return rc;
    d->pfx = s_type_names[type];
    {
        json_object_object_foreach(o, key, val)
        {
            (void)val;
            if (!s_is_envelope_key(key) && !s_is_body_key(type, key))
                return s_fail(d, SC_MSG_REJ_UNKNOWN, SC_E_PROTO,
                              "%s.%.64s: unknown field (protocol v%d)", d->pfx, key,
                              SC_PROTO_VERSION);
        }
    }
    if (!(m = s_alloc(type)))
        return s_fail(d, SC_MSG_REJ_NOMEM, -ENOMEM, "out of memory");
    memcpy(m->from, from, sizeof(from));
    m->term = term;
    m->seq = seq;
    if ((rc = s_dec_body(d, o, m)) < 0) {
        sc_msg_destroy(&m);
        return rc;
    }
    *ret_msg = m;
    return 0;
}

int sc_msg_decode_ex(const void *buf, size_t len, sc_msg_t **ret_msg, sc_msg_reject_t *out_reject,
                     char *err, size_t errlen)
{
    s_dec_t d = {.err = err, .errlen = errlen, .rej = SC_MSG_REJ_NONE};
    json_object *o = NULL;
    int rc;

    if (err && errlen)
        err[0] = '\0';
    if (!buf || !ret_msg) {
        rc = s_fail(&d, SC_MSG_REJ_NOT_JSON, -EINVAL, "NULL argument");
    } else if ((rc = s_parse_json(&d, buf, len, &o)) == 0) {
        rc = s_decode_obj(&d, o, ret_msg);
        json_object_put(o);
    }
    if (out_reject)
        *out_reject = rc == 0 ? SC_MSG_REJ_NONE : d.rej;
    return rc;
}

int sc_msg_decode(const void *buf, size_t len, sc_msg_t **ret_msg, char *err, size_t errlen)
{
    return sc_msg_decode_ex(buf, len, ret_msg, NULL, err, errlen);
}

/* ---------------------------------------------------------------- encoding */

typedef struct s_enc {
    json_object *o; /* the object being built */
    bool failed;    /* an allocation or conversion failed */
    bool nomem;     /* the failure was memory */
    char *err;      /* reason buffer, may be NULL */
    size_t errlen;  /* its size */
} s_enc_t;

static void s_put(s_enc_t *e, json_object *parent, const char *key, json_object *v)
{
    if (!v || json_object_object_add(parent, key, v) < 0) {
        json_object_put(v);
        e->failed = e->nomem = true;
    }
}

/* A fixed-size string field, checked for its terminator. */
static void s_put_fixed(s_enc_t *e, json_object *p, const char *key, const char *s, size_t size)
{
    if (strnlen(s, size) == size) {
        e->failed = true;
        if (e->err && e->errlen)
            snprintf(e->err, e->errlen, "%s: not NUL-terminated", key);
        return;
    }
    s_put(e, p, key, json_object_new_string(s));
}

static void s_put_text(s_enc_t *e, json_object *p, const char *key, const char *s)
{
    s_put(e, p, key, json_object_new_string(s ? s : ""));
}

static void s_put_u64(s_enc_t *e, json_object *p, const char *key, uint64_t v)
{
    s_put(e, p, key, json_object_new_uint64(v));
}

static void s_put_i64(s_enc_t *e, json_object *p, const char *key, int64_t v)
{
    s_put(e, p, key, json_object_new_int64(v));
}

static void s_put_events(s_enc_t *e, json_object *p, char (*ev)[SC_EVENT_ID_MAX + 1], size_t n)
{
    json_object *arr = json_object_new_array();

    for (size_t i = 0; arr && i < n; i++) {
        json_object *s = strnlen(ev[i], SC_EVENT_ID_MAX + 1) <= SC_EVENT_ID_MAX
                             ? json_object_new_string(ev[i])
                             : json_object_new_string("");

        if (!s || json_object_array_add(arr, s) < 0) {
            json_object_put(s);
            e->failed = e->nomem = true;
        }
    }
    s_put(e, p, "events", arr);
}

/* "attempt", left out when 1 (its meaning when absent): what older peers know. */
static void s_put_attempt(s_enc_t *e, json_object *p, int attempt)
{
    if (attempt != 1)
        s_put_i64(e, p, "attempt", attempt);
}

static void s_put_strings(s_enc_t *e, json_object *p, const char *key, const char *const *v,
                          size_t n)
{
    json_object *arr = json_object_new_array();

    for (size_t i = 0; arr && i < n; i++) {
        json_object *s = json_object_new_string(v[i] ? v[i] : "");

        if (!s || json_object_array_add(arr, s) < 0) {
            json_object_put(s);
            e->failed = e->nomem = true;
        }
    }
    s_put(e, p, key, arr);
}

/* The JSON of a document (sc_doc_to_json reparsed), or NULL with e->failed. */
static json_object *s_doc_json(s_enc_t *e, const sc_doc_t *doc, const char *what)
{
    char *text = NULL;
    json_object *o;
    int rc;

    if (!doc) {
        e->failed = true;
        if (e->err && e->errlen)
            snprintf(e->err, e->errlen, "%s: missing", what);
        return NULL;
    }
    if ((rc = sc_doc_to_json(doc, &text)) < 0) {
        e->failed = true;
        e->nomem = rc == -ENOMEM;
        if (e->err && e->errlen)
            snprintf(e->err, e->errlen, "%s: cannot serialize: %s", what, sc_strerror(rc));
        return NULL;
    }
    o = json_tokener_parse(text);
    free(text);
    if (!o)
        e->failed = true;
    return o;
}

static void s_enc_body(s_enc_t *e, const sc_msg_t *m)
{
    json_object *o = e->o, *arr, *doc, *evs;

    switch (m->type) {
    case SC_MSG_HELLO:
        s_put_fixed(e, o, "name", m->hello.name, sizeof(m->hello.name));
        s_put_i64(e, o, "fault_domain", m->hello.fault_domain);
        s_put_i64(e, o, "update_domain", m->hello.update_domain);
        s_put_fixed(e, o, "agent_version", m->hello.agent_version, sizeof(m->hello.agent_version));
        s_put_i64(e, o, "proto_min", m->hello.proto_min);
        s_put_i64(e, o, "proto_max", m->hello.proto_max);
        arr = json_object_new_array();
        for (size_t i = 0; arr && i < m->hello.n_capabilities && i < SC_MSG_MAX_CAPS; i++) {
            json_object *s = json_object_new_string_len(
                m->hello.capabilities[i], (int)strnlen(m->hello.capabilities[i], SC_MSG_CAP_MAX));

            if (!s || json_object_array_add(arr, s) < 0) {
                json_object_put(s);
                e->failed = e->nomem = true;
            }
        }
        if (m->hello.n_capabilities > SC_MSG_MAX_CAPS)
            e->failed = true;
        s_put(e, o, "capabilities", arr);
        s_put_fixed(e, o, "boot_id", m->hello.boot_id, sizeof(m->hello.boot_id));
        s_put_i64(e, o, "incarnation", m->hello.incarnation);
        break;
    case SC_MSG_HEARTBEAT:
        s_put_i64(e, o, "incarnation", m->heartbeat.incarnation);
        s_put_i64(e, o, "running_hooks", m->heartbeat.running_hooks);
        s_put(e, o, "standalone", json_object_new_boolean(m->heartbeat.standalone));
        s_put_i64(e, o, "imds_down_ms", m->heartbeat.imds_down_ms);
        break;
    case SC_MSG_DOCUMENT:
        s_put_i64(e, o, "incarnation", m->document.incarnation);
        s_put_i64(e, o, "observed_at_ms", m->document.observed_at_ms);
        if ((doc = s_doc_json(e, m->document.document, "document.document")))
            s_put(e, o, "document", doc);
        if (m->document.n_malformed) /* absent when none: what older coordinators know */
            s_put_strings(e, o, "malformed", (const char *const *)m->document.malformed,
                          m->document.n_malformed);
        break;
    case SC_MSG_DOC_REQUEST: break;
    case SC_MSG_HOOK_PROGRESS:
        s_put_fixed(e, o, "event", m->hook_progress.event, sizeof(m->hook_progress.event));
        s_put_text(e, o, "phase", sc_msg_phase_name(m->hook_progress.phase));
        s_put_text(e, o, "state", sc_msg_hook_state_name(m->hook_progress.state));
        s_put_i64(e, o, "exit_status", m->hook_progress.exit_status);
        s_put_text(e, o, "origin", sc_msg_origin_name(m->hook_progress.origin));
        s_put_u64(e, o, "order_term", m->hook_progress.order_term);
        s_put_text(e, o, "detail", m->hook_progress.detail);
        s_put_attempt(e, o, m->hook_progress.attempt);
        break;
    case SC_MSG_ORDER:
        s_put_text(e, o, "action", sc_msg_phase_name(m->order.action));
        s_put_fixed(e, o, "event", m->order.event, sizeof(m->order.event));
        s_put_attempt(e, o, m->order.attempt);
        if (m->order.event_doc) {
            if (m->order.event_doc->n_events != 1) {
                e->failed = true;
                if (e->err && e->errlen)
                    snprintf(e->err, e->errlen, "order.event_doc: %zu events, must hold one",
                             m->order.event_doc->n_events);
            } else if ((doc = s_doc_json(e, m->order.event_doc, "order.event_doc"))) {
                if (json_object_object_get_ex(doc, "Events", &evs) &&
                    json_object_array_length(evs) == 1)
                    s_put(e, o, "event_doc", json_object_get(json_object_array_get_idx(evs, 0)));
                else
                    e->failed = true;
                json_object_put(doc);
            }
        }
        break;
    case SC_MSG_APPROVE_VIA:
        s_put_events(e, o, m->approve_via.events, m->approve_via.n_events);
        break;
    case SC_MSG_APPROVE_RESULT:
        s_put_events(e, o, m->approve_result.events, m->approve_result.n_events);
        s_put_i64(e, o, "http_status", m->approve_result.http_status);
        s_put_fixed(e, o, "result", m->approve_result.result, sizeof(m->approve_result.result));
        s_put_text(e, o, "message", m->approve_result.message);
        break;
    case SC_MSG_LEADER:
        s_put_fixed(e, o, "leader", m->leader.leader, sizeof(m->leader.leader));
        s_put_i64(e, o, "lease_ms", m->leader.lease_ms);
        if (m->leader.members_hash[0])
            s_put_fixed(e, o, "members_hash", m->leader.members_hash,
                        sizeof(m->leader.members_hash));
        break;
    case SC_MSG_VOTE_REQUEST:
        s_put_fixed(e, o, "candidate", m->vote_request.candidate,
                    sizeof(m->vote_request.candidate));
        s_put_u64(e, o, "last_log_index", m->vote_request.last_log_index);
        s_put_u64(e, o, "last_log_term", m->vote_request.last_log_term);
        break;
    case SC_MSG_VOTE:
        s_put(e, o, "granted", json_object_new_boolean(m->vote.granted));
        s_put_text(e, o, "reason", m->vote.reason);
        break;
    case SC_MSG_APPEND:
        s_put_fixed(e, o, "leader", m->append.leader, sizeof(m->append.leader));
        s_put_u64(e, o, "prev_index", m->append.prev_index);
        s_put_u64(e, o, "prev_term", m->append.prev_term);
        s_put_u64(e, o, "commit_index", m->append.commit_index);
        arr = json_object_new_array();
        for (size_t i = 0; arr && i < m->append.n_entries; i++) {
            const sc_msg_entry_t *en = &m->append.entries[i];
            json_object *eo = json_object_new_object(), *data;

            if (!eo) {
                e->failed = e->nomem = true;
                break;
            }
            s_put_u64(e, eo, "term", en->term);
            s_put_u64(e, eo, "index", en->index);
            s_put_fixed(e, eo, "kind", en->kind, sizeof(en->kind));
            if (!(data = json_tokener_parse(en->data ? en->data : "{}"))) {
                e->failed = true;
                if (e->err && e->errlen)
                    snprintf(e->err, e->errlen, "append.entries[%zu].data: not JSON", i);
            } else {
                s_put(e, eo, "data", data);
            }
            if (json_object_array_add(arr, eo) < 0) {
                json_object_put(eo);
                e->failed = e->nomem = true;
            }
        }
        s_put(e, o, "entries", arr);
        break;
    case SC_MSG_APPEND_ACK:
        s_put(e, o, "success", json_object_new_boolean(m->append_ack.success));
        s_put_u64(e, o, "match_index", m->append_ack.match_index);
        break;
    case SC_MSG_NACK:
        s_put_u64(e, o, "ref_seq", m->nack.ref_seq);
        s_put_text(e, o, "reason", m->nack.reason);
        break;
    default: e->failed = true; break;
    }
}

/* Builds the JSON text of msg without checking it. */
static int s_build(const sc_msg_t *msg, char **ret_buf, size_t *ret_len, char *err, size_t errlen)
{
    s_enc_t e = {.err = err, .errlen = errlen};
    const char *text;
    size_t len;
    char *buf;

    if (!msg || (unsigned)msg->type >= SC_MSG_TYPE_MAX) {
        return sc_errf(err, errlen, -EINVAL, "type: out of range");
    }
    if (!(e.o = json_object_new_object()))
        return -ENOMEM;
    s_put_i64(&e, e.o, "v", msg->version);
    s_put_text(&e, e.o, "type", s_type_names[msg->type]);
    s_put_fixed(&e, e.o, "from", msg->from, sizeof(msg->from));
    s_put_u64(&e, e.o, "term", msg->term);
    s_put_u64(&e, e.o, "seq", msg->seq);
    s_enc_body(&e, msg);
    if (e.failed) {
        json_object_put(e.o);
        if (!e.nomem && err && errlen && !err[0])
            snprintf(err, errlen, "%s: cannot be encoded", s_type_names[msg->type]);
        return e.nomem ? -ENOMEM : -EINVAL;
    }
    text = json_object_to_json_string_length(
        e.o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    buf = text ? malloc(len + 1) : NULL;
    if (buf)
        memcpy(buf, text, len + 1);
    json_object_put(e.o);
    if (!buf)
        return -ENOMEM;
    *ret_buf = buf;
    *ret_len = len;
    return 0;
}

int sc_msg_validate(const sc_msg_t *msg, char *err, size_t errlen)
{
    char *buf = NULL;
    size_t len = 0;
    sc_msg_t *back = NULL;
    int rc;

    if (err && errlen)
        err[0] = '\0';
    /* One set of rules: the message is valid when its encoding decodes. */
    if ((rc = s_build(msg, &buf, &len, err, errlen)) < 0)
        return rc;
    rc = sc_msg_decode(buf, len, &back, err, errlen);
    free(buf);
    sc_msg_destroy(&back);
    if (rc == -ENOMEM)
        return rc;
    return rc < 0 ? -EINVAL : 0;
}

int sc_msg_encode(const sc_msg_t *msg, char **ret_buf, size_t *ret_len)
{
    char *buf = NULL;
    size_t len = 0;
    sc_msg_t *back = NULL;
    int rc;

    if (!ret_buf || !ret_len)
        return -EINVAL;
    if ((rc = s_build(msg, &buf, &len, NULL, 0)) < 0)
        return rc;
    if (len > SC_MSG_MAX_BYTES) {
        free(buf);
        return SC_E_TOO_BIG;
    }
    rc = sc_msg_decode(buf, len, &back, NULL, 0);
    sc_msg_destroy(&back);
    if (rc < 0) {
        free(buf);
        return rc == -ENOMEM ? rc : -EINVAL;
    }
    *ret_buf = buf;
    *ret_len = len;
    return 0;
}

/* ---------------------------------------------------------------- equality */

static bool s_text_eq(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

static bool s_doc_eq(const sc_doc_t *a, const sc_doc_t *b, bool incarnation)
{
    if (!a || !b)
        return a == b;
    if ((incarnation && a->incarnation != b->incarnation) || a->n_events != b->n_events)
        return false;
    for (size_t i = 0; i < a->n_events; i++)
        if (!sc_event_equal(&a->events[i], &b->events[i]) ||
            strcmp(a->events[i].id, b->events[i].id) != 0)
            return false;
    return true;
}

static bool s_strv_eq(char **a, size_t na, char **b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (!s_text_eq(a[i], b[i]))
            return false;
    return true;
}

static bool s_events_eq(char (*a)[SC_EVENT_ID_MAX + 1], size_t na, char (*b)[SC_EVENT_ID_MAX + 1],
                        size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i], b[i]) != 0)
            return false;
    return true;
}

bool sc_msg_equal(const sc_msg_t *a, const sc_msg_t *b)
{
    if (!a || !b)
        return a == b;
    if (a->type != b->type || a->version != b->version || strcmp(a->from, b->from) != 0 ||
        a->term != b->term || a->seq != b->seq)
        return false;
    switch (a->type) {
    case SC_MSG_HELLO: {
        const sc_msg_hello_t *x = &a->hello, *y = &b->hello;

        if (strcmp(x->name, y->name) || x->fault_domain != y->fault_domain ||
            x->update_domain != y->update_domain || strcmp(x->agent_version, y->agent_version) ||
            x->proto_min != y->proto_min || x->proto_max != y->proto_max ||
            strcmp(x->boot_id, y->boot_id) || x->incarnation != y->incarnation ||
            x->n_capabilities != y->n_capabilities || x->n_capabilities > SC_MSG_MAX_CAPS)
            return false;
        for (size_t i = 0; i < x->n_capabilities; i++)
            if (strcmp(x->capabilities[i], y->capabilities[i]))
                return false;
        return true;
    }
    case SC_MSG_HEARTBEAT:
        return a->heartbeat.incarnation == b->heartbeat.incarnation &&
               a->heartbeat.running_hooks == b->heartbeat.running_hooks &&
               a->heartbeat.standalone == b->heartbeat.standalone &&
               a->heartbeat.imds_down_ms == b->heartbeat.imds_down_ms;
    case SC_MSG_DOCUMENT:
        return a->document.incarnation == b->document.incarnation &&
               a->document.observed_at_ms == b->document.observed_at_ms &&
               s_doc_eq(a->document.document, b->document.document, true) &&
               s_strv_eq(a->document.malformed, a->document.n_malformed, b->document.malformed,
                         b->document.n_malformed);
    case SC_MSG_DOC_REQUEST: return true;
    case SC_MSG_HOOK_PROGRESS: {
        const sc_msg_hook_progress_t *x = &a->hook_progress, *y = &b->hook_progress;

        return !strcmp(x->event, y->event) && x->phase == y->phase && x->state == y->state &&
               x->exit_status == y->exit_status && x->origin == y->origin &&
               x->order_term == y->order_term && s_text_eq(x->detail, y->detail) &&
               x->attempt == y->attempt;
    }
    case SC_MSG_ORDER:
        return a->order.action == b->order.action && !strcmp(a->order.event, b->order.event) &&
               a->order.attempt == b->order.attempt &&
               s_doc_eq(a->order.event_doc, b->order.event_doc, false);
    case SC_MSG_APPROVE_VIA:
        return s_events_eq(a->approve_via.events, a->approve_via.n_events, b->approve_via.events,
                           b->approve_via.n_events);
    case SC_MSG_APPROVE_RESULT:
        return s_events_eq(a->approve_result.events, a->approve_result.n_events,
                           b->approve_result.events, b->approve_result.n_events) &&
               a->approve_result.http_status == b->approve_result.http_status &&
               !strcmp(a->approve_result.result, b->approve_result.result) &&
               s_text_eq(a->approve_result.message, b->approve_result.message);
    case SC_MSG_LEADER:
        return !strcmp(a->leader.leader, b->leader.leader) &&
               a->leader.lease_ms == b->leader.lease_ms &&
               !strcmp(a->leader.members_hash, b->leader.members_hash);
    case SC_MSG_VOTE_REQUEST:
        return !strcmp(a->vote_request.candidate, b->vote_request.candidate) &&
               a->vote_request.last_log_index == b->vote_request.last_log_index &&
               a->vote_request.last_log_term == b->vote_request.last_log_term;
    case SC_MSG_VOTE:
        return a->vote.granted == b->vote.granted && s_text_eq(a->vote.reason, b->vote.reason);
    case SC_MSG_APPEND: {
        const sc_msg_append_t *x = &a->append, *y = &b->append;

        if (strcmp(x->leader, y->leader) || x->prev_index != y->prev_index ||
            x->prev_term != y->prev_term || x->commit_index != y->commit_index ||
            x->n_entries != y->n_entries)
            return false;
        for (size_t i = 0; i < x->n_entries; i++)
            if (x->entries[i].term != y->entries[i].term ||
                x->entries[i].index != y->entries[i].index ||
                strcmp(x->entries[i].kind, y->entries[i].kind) ||
                !s_text_eq(x->entries[i].data, y->entries[i].data))
                return false;
        return true;
    }
    case SC_MSG_APPEND_ACK:
        return a->append_ack.success == b->append_ack.success &&
               a->append_ack.match_index == b->append_ack.match_index;
    case SC_MSG_NACK:
        return a->nack.ref_seq == b->nack.ref_seq && s_text_eq(a->nack.reason, b->nack.reason);
    default: return false;
    }
}
