/* sc_msg: the protocol's message catalog and its strict JSON codec (see sc_msg.h). */
#include "sc_msg.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
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
    [SC_MSG_TIMEOUT_NOW] = "timeout_now",
    [SC_MSG_SNAPSHOT] = "snapshot",
};

static const char *const s_phase_names[SC_MSG_PHASE_MAX] = {"prepare", "recover"};

static const char *const s_state_names[SC_MSG_HOOK_STATE_MAX] = {
    "started", "done", "failed", "timed_out", "interrupted", "refused", "skipped"};

static const char *const s_origin_names[SC_MSG_ORIGIN_MAX] = {"order", "standalone"};

static const char *const s_reject_names[SC_MSG_REJ_MAX] = {
    "none",    "too_big", "not_json", "version",  "type", "envelope",
    "missing", "field",   "unknown",  "document", "nomem"};

/* The body fields each type may carry (besides the envelope's v, type, from, term, seq). */

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

/* ---------------------------------------------------------------- the catalog */

/* How a field is held in C and written in JSON. Every walker below (decode, encode, release,
 * equal) has one handler per kind: a message type is described by its table alone. */
typedef enum {
    S_INT,       /* int: a JSON integer in min..max */
    S_I64,       /* int64_t: a JSON integer in min..max */
    S_U64,       /* uint64_t: a JSON integer in 0..INT64_MAX (terms, seqs, indices) */
    S_BOOL,      /* bool: true or false */
    S_ENUM,      /* an enum: one of names[0..n_names) */
    S_STR,       /* char[size]: min..max bytes, each accepted by chars */
    S_EVENT_ID,  /* char[SC_EVENT_ID_MAX + 1]: an EventId (sc_event_id_valid) */
    S_TEXT,      /* char *: free text of 0..max bytes, owned; NULL is sent as "" */
    S_OBJECT,    /* char *: the compact text of a JSON object, owned (an entry's data) */
    S_CAPS,      /* char[items][max + 1] and a count: names of min..max bytes, no repeats */
    S_EVENTS,    /* char (*)[SC_EVENT_ID_MAX + 1] and a count: 1..items EventIds, no repeats
                    (ignoring case), owned */
    S_STRV,      /* char ** and a count: 1..items texts of min..max bytes, owned */
    S_DOC,       /* sc_doc_t *: an IMDS document (sc_doc_parse) whose DocumentIncarnation is
                    the S_I64 at ref, owned */
    S_EVENT_DOC, /* sc_doc_t *: one IMDS event object, sent bare, whose EventId is the
                    S_EVENT_ID at ref, owned */
    S_ENTRIES,   /* sc_msg_entry_t * and a count: 0..items entries (s_entry_fields) that
                    follow append.prev_index / prev_term, owned */
    S_KIND_MAX
} s_kind_t;

/* Field flags. */
enum {
    S_OPTIONAL = 1 << 0, /* may be absent; then it keeps its default (def, "", NULL, none) */
    S_OMIT = 1 << 1,     /* left out by the encoder while at its default: what older peers
                            know */
    S_LATE = 1 << 2,     /* items read after the type's rules across fields (last in table) */
    S_FROM = 1 << 3,     /* sc_msg_new sets it to the sender's name */
    S_IS_FROM = 1 << 4,  /* must equal the envelope's from (sc_msg_new sets it too) */
    S_LE_TERM = 1 << 5,  /* must not be above the envelope's term */
};

/* One field of a message (or of an append entry): everything the walkers need. */
typedef struct s_field {
    const char *key;              /* JSON key, also the name in reasons */
    s_kind_t kind;                /* C type and wire form */
    unsigned flags;               /* S_OPTIONAL, S_OMIT, ... */
    size_t off;                   /* offset of the value in its struct */
    size_t off_n;                 /* lists: offset of their size_t count */
    size_t size;                  /* S_STR: size of the buffer */
    int64_t min, max;             /* integers: range; strings, list items: bytes */
    size_t items;                 /* lists: most items */
    int64_t def;                  /* integers: value of sc_msg_new, and when absent */
    bool (*chars)(unsigned char); /* strings: accepted bytes (NULL: any) */
    const char *charset;          /* ... described for reasons */
    const char *const *names;     /* S_ENUM: wire names, by value */
    int n_names;                  /* ... their number */
    size_t ref;                   /* S_DOC, S_EVENT_DOC: offset of the field to agree with */
    const char *ref_key;          /* ... its key */
} s_field_t;

#define S_M(f) .off = offsetof(sc_msg_t, f)
#define S_BUF(T, f) .off = offsetof(T, f), .size = sizeof(((T *)0)->f)
#define S_LIST(f, n) .off = offsetof(sc_msg_t, f), .off_n = offsetof(sc_msg_t, n)
#define S_NAMES(a) .names = (a), .n_names = (int)(sizeof(a) / sizeof((a)[0]))
#define S_REF(f, k) .ref = offsetof(sc_msg_t, f), .ref_key = (k)
#define S_RANGE(lo, hi) .min = (lo), .max = (hi)
#define S_NAME_RULE                                                                                \
    .min = 1, .max = SC_NAME_MAX, .chars = s_is_name_char, .charset = "[A-Za-z0-9._-]"

_Static_assert(sizeof(sc_msg_phase_t) == sizeof(int) &&
                   sizeof(sc_msg_hook_state_t) == sizeof(int) &&
                   sizeof(sc_msg_origin_t) == sizeof(int),
               "S_ENUM fields are held as int");

/* The envelope's from, term and seq (v and type are read first, by hand). */
static const s_field_t s_envelope_fields[] = {
    {"from", S_STR, 0, S_BUF(sc_msg_t, from), S_NAME_RULE},
    {"term", S_U64, 0, S_M(term)},
    {"seq", S_U64, 0, S_M(seq)},
};

static const s_field_t s_hello_fields[] = {
    {"name", S_STR, S_IS_FROM, S_BUF(sc_msg_t, hello.name), S_NAME_RULE},
    {"fault_domain", S_INT, 0, S_M(hello.fault_domain), S_RANGE(-1, SC_MSG_DOMAIN_MAX), .def = -1},
    {"update_domain", S_INT, 0, S_M(hello.update_domain), S_RANGE(-1, SC_MSG_DOMAIN_MAX),
     .def = -1},
    {"agent_version", S_STR, 0, S_BUF(sc_msg_t, hello.agent_version),
     S_RANGE(1, SC_MSG_VERSION_MAX), .chars = s_is_print_char, .charset = "printable ASCII"},
    {"proto_min", S_INT, 0, S_M(hello.proto_min), S_RANGE(1, SC_MSG_PROTO_MAX),
     .def = SC_PROTO_VERSION},
    {"proto_max", S_INT, 0, S_M(hello.proto_max), S_RANGE(1, SC_MSG_PROTO_MAX),
     .def = SC_PROTO_VERSION},
    {"boot_id", S_STR, 0, S_BUF(sc_msg_t, hello.boot_id), S_RANGE(1, SC_MSG_BOOT_ID_MAX),
     .chars = s_is_boot_char, .charset = "[A-Za-z0-9-]"},
    {"incarnation", S_I64, 0, S_M(hello.incarnation), S_RANGE(-1, INT64_MAX), .def = -1},
    {"capabilities", S_CAPS, S_LATE, S_LIST(hello.capabilities, hello.n_capabilities),
     S_RANGE(1, SC_MSG_CAP_MAX), .items = SC_MSG_MAX_CAPS, .chars = s_is_cap_char,
     .charset = "[a-z0-9-]"},
};

static const s_field_t s_heartbeat_fields[] = {
    {"incarnation", S_I64, 0, S_M(heartbeat.incarnation), S_RANGE(-1, INT64_MAX), .def = -1},
    {"running_hooks", S_INT, 0, S_M(heartbeat.running_hooks), S_RANGE(0, SC_MSG_RUNNING_HOOKS_MAX)},
    {"standalone", S_BOOL, 0, S_M(heartbeat.standalone)},
    /* agents older than the field don't send it; it is always sent (-1 included) */
    {"imds_down_ms", S_I64, S_OPTIONAL, S_M(heartbeat.imds_down_ms), S_RANGE(-1, INT64_MAX),
     .def = -1},
};

static const s_field_t s_document_fields[] = {
    {"incarnation", S_I64, 0, S_M(document.incarnation), S_RANGE(0, INT64_MAX), .def = -1},
    {"observed_at_ms", S_I64, 0, S_M(document.observed_at_ms), S_RANGE(0, INT64_MAX)},
    {"document", S_DOC, 0, S_M(document.document), S_REF(document.incarnation, "incarnation")},
    {"malformed", S_STRV, S_OPTIONAL | S_OMIT, S_LIST(document.malformed, document.n_malformed),
     S_RANGE(1, SC_MSG_MALFORMED_MAX), .items = SC_MSG_MAX_MALFORMED},
};

static const s_field_t s_hook_progress_fields[] = {
    {"event", S_EVENT_ID, 0, S_M(hook_progress.event)},
    {"phase", S_ENUM, 0, S_M(hook_progress.phase), S_NAMES(s_phase_names)},
    {"state", S_ENUM, 0, S_M(hook_progress.state), S_NAMES(s_state_names)},
    {"exit_status", S_INT, 0, S_M(hook_progress.exit_status), S_RANGE(-1, 255), .def = -1},
    {"origin", S_ENUM, 0, S_M(hook_progress.origin), S_NAMES(s_origin_names)},
    {"order_term", S_U64, 0, S_M(hook_progress.order_term)},
    {"detail", S_TEXT, 0, S_M(hook_progress.detail), S_RANGE(0, SC_MSG_MAX_TEXT)},
    {"attempt", S_INT, S_OPTIONAL | S_OMIT, S_M(hook_progress.attempt),
     S_RANGE(1, SC_MSG_ATTEMPT_MAX), .def = 1},
};

static const s_field_t s_order_fields[] = {
    {"action", S_ENUM, 0, S_M(order.action), S_NAMES(s_phase_names)},
    {"event", S_EVENT_ID, 0, S_M(order.event)},
    {"attempt", S_INT, S_OPTIONAL | S_OMIT, S_M(order.attempt), S_RANGE(1, SC_MSG_ATTEMPT_MAX),
     .def = 1},
    {"rehearsal", S_BOOL, S_OPTIONAL | S_OMIT, S_M(order.rehearsal)},
    {"index", S_U64, S_OPTIONAL | S_OMIT, S_M(order.index)},
    {"until_ms", S_I64, S_OPTIONAL | S_OMIT, S_M(order.until_ms), S_RANGE(0, INT64_MAX)},
    {"event_doc", S_EVENT_DOC, S_OPTIONAL | S_OMIT | S_LATE, S_M(order.event_doc),
     S_REF(order.event, "event")},
};

static const s_field_t s_approve_via_fields[] = {
    {"events", S_EVENTS, 0, S_LIST(approve_via.events, approve_via.n_events),
     .items = SC_MSG_MAX_EVENTS},
    {"index", S_U64, S_OPTIONAL | S_OMIT, S_M(approve_via.index)},
};

static const s_field_t s_approve_result_fields[] = {
    {"events", S_EVENTS, 0, S_LIST(approve_result.events, approve_result.n_events),
     .items = SC_MSG_MAX_EVENTS},
    {"http_status", S_INT, 0, S_M(approve_result.http_status), S_RANGE(0, 999)},
    {"result", S_STR, 0, S_BUF(sc_msg_t, approve_result.result), S_RANGE(1, SC_MSG_RESULT_MAX),
     .chars = s_is_result_char, .charset = "[A-Za-z0-9_]"},
    {"message", S_TEXT, 0, S_M(approve_result.message), S_RANGE(0, SC_MSG_MAX_TEXT)},
};

static const s_field_t s_leader_fields[] = {
    {"leader", S_STR, S_FROM, S_BUF(sc_msg_t, leader.leader), S_NAME_RULE},
    {"lease_ms", S_I64, 0, S_M(leader.lease_ms), S_RANGE(1, SC_MSG_LEASE_MAX_MS)},
    {"members_hash", S_STR, S_OPTIONAL | S_OMIT, S_BUF(sc_msg_t, leader.members_hash),
     S_RANGE(1, SC_MSG_HASH_MAX), .chars = s_is_hex_char, .charset = "[0-9a-fA-F]"},
    {"index", S_U64, S_OPTIONAL | S_OMIT, S_M(leader.index)},
};

/* A field of every coordinator-to-coordinator message (not of the envelope: agents' messages
 * do not carry it): the sender's members digest, which the receiver compares with its own
 * before anything else (proto/README.md, "Election and replication"). */
#define S_MEMBERS_DIGEST                                                                           \
    {                                                                                              \
        "members_digest", S_STR, S_OPTIONAL | S_OMIT, S_BUF(sc_msg_t, members_digest),             \
            S_RANGE(1, SC_MSG_HASH_MAX), .chars = s_is_hex_char, .charset = "[0-9a-fA-F]"          \
    }

static const s_field_t s_vote_request_fields[] = {
    {"candidate", S_STR, S_IS_FROM, S_BUF(sc_msg_t, vote_request.candidate), S_NAME_RULE},
    {"last_log_index", S_U64, 0, S_M(vote_request.last_log_index)},
    {"last_log_term", S_U64, S_LE_TERM, S_M(vote_request.last_log_term)},
    {"pre_vote", S_BOOL, S_OPTIONAL | S_OMIT, S_M(vote_request.pre_vote)},
    {"transfer", S_BOOL, S_OPTIONAL | S_OMIT, S_M(vote_request.transfer)},
    {"voters_digest", S_STR, S_OPTIONAL | S_OMIT, S_BUF(sc_msg_t, vote_request.voters_digest),
     S_RANGE(1, SC_MSG_HASH_MAX), .chars = s_is_hex_char, .charset = "[0-9a-fA-F]"},
    S_MEMBERS_DIGEST,
};

static const s_field_t s_vote_fields[] = {
    {"granted", S_BOOL, 0, S_M(vote.granted)},
    {"pre_vote", S_BOOL, S_OPTIONAL | S_OMIT, S_M(vote.pre_vote)},
    {"reason", S_TEXT, 0, S_M(vote.reason), S_RANGE(0, SC_MSG_MAX_TEXT)},
    S_MEMBERS_DIGEST,
};

static const s_field_t s_append_fields[] = {
    {"leader", S_STR, S_IS_FROM, S_BUF(sc_msg_t, append.leader), S_NAME_RULE},
    {"prev_index", S_U64, 0, S_M(append.prev_index)},
    {"prev_term", S_U64, S_LE_TERM, S_M(append.prev_term)},
    {"commit_index", S_U64, 0, S_M(append.commit_index)},
    {"entries", S_ENTRIES, S_LATE, S_LIST(append.entries, append.n_entries),
     .items = SC_MSG_MAX_ENTRIES},
    {"round", S_I64, S_OPTIONAL | S_OMIT, S_M(append.round), S_RANGE(0, INT64_MAX)},
    S_MEMBERS_DIGEST,
};

/* The fields of one entry of an append (offsets in sc_msg_entry_t). */
static const s_field_t s_entry_fields[] = {
    {"term", S_U64, 0, .off = offsetof(sc_msg_entry_t, term)},
    {"index", S_U64, 0, .off = offsetof(sc_msg_entry_t, index)},
    {"kind", S_STR, 0, S_BUF(sc_msg_entry_t, kind), S_RANGE(1, SC_MSG_KIND_MAX),
     .chars = s_is_kind_char, .charset = "[a-z0-9_.-]"},
    {"data", S_OBJECT, 0, .off = offsetof(sc_msg_entry_t, data)},
    {"reason", S_TEXT, S_OPTIONAL | S_OMIT, .off = offsetof(sc_msg_entry_t, reason),
     S_RANGE(0, SC_MSG_MAX_TEXT)},
    {"wall_ms", S_I64, S_OPTIONAL | S_OMIT, .off = offsetof(sc_msg_entry_t, wall_ms),
     S_RANGE(0, INT64_MAX)},
};

static const s_field_t s_append_ack_fields[] = {
    {"success", S_BOOL, 0, S_M(append_ack.success)},
    {"match_index", S_U64, 0, S_M(append_ack.match_index)},
    {"round", S_I64, S_OPTIONAL | S_OMIT, S_M(append_ack.round), S_RANGE(0, INT64_MAX)},
    {"received", S_I64, S_OPTIONAL | S_OMIT, S_M(append_ack.received), S_RANGE(-1, INT64_MAX),
     .def = -1},
    S_MEMBERS_DIGEST,
};

static const s_field_t s_snapshot_fields[] = {
    {"leader", S_STR, S_IS_FROM, S_BUF(sc_msg_t, snapshot.leader), S_NAME_RULE},
    {"last_index", S_U64, 0, S_M(snapshot.last_index)},
    {"last_term", S_U64, S_LE_TERM, S_M(snapshot.last_term)},
    {"total", S_U64, 0, S_M(snapshot.total)},
    {"offset", S_U64, 0, S_M(snapshot.offset)},
    {"data", S_TEXT, 0, S_M(snapshot.data), S_RANGE(0, SC_MSG_SNAPSHOT_CHUNK_MAX)},
    {"round", S_I64, S_OPTIONAL | S_OMIT, S_M(snapshot.round), S_RANGE(0, INT64_MAX)},
    S_MEMBERS_DIGEST,
};

static const s_field_t s_timeout_now_fields[] = {
    S_MEMBERS_DIGEST,
};

static const s_field_t s_nack_fields[] = {
    {"ref_seq", S_U64, 0, S_M(nack.ref_seq)},
    {"reason", S_TEXT, 0, S_M(nack.reason), S_RANGE(0, SC_MSG_MAX_TEXT)},
};

typedef struct s_ctx s_ctx_t;

/* One message type: its body and its rules across fields. */
typedef struct s_msgdef {
    const s_field_t *fields; /* the body, in wire order */
    size_t n;                /* entries in fields */
    const char *term_why;    /* the term must be >= 1, for this reason (NULL: any term) */
    int (*check)(s_ctx_t *c, const sc_msg_t *m); /* further rules across fields, or NULL */
} s_msgdef_t;

static int s_check_hello(s_ctx_t *c, const sc_msg_t *m);
static int s_check_hook_progress(s_ctx_t *c, const sc_msg_t *m);
static int s_check_snapshot(s_ctx_t *c, const sc_msg_t *m);

#define S_BODY(t) .fields = (t), .n = sizeof(t) / sizeof((t)[0])

static const s_msgdef_t s_envelope_def = {S_BODY(s_envelope_fields)};
static const s_msgdef_t s_entry_def = {S_BODY(s_entry_fields)};

/* The catalog: adding a message type is one line here, its table above and its struct. */
static const s_msgdef_t s_msgdefs[SC_MSG_TYPE_MAX] = {
    [SC_MSG_HELLO] = {S_BODY(s_hello_fields), .check = s_check_hello},
    [SC_MSG_HEARTBEAT] = {S_BODY(s_heartbeat_fields)},
    [SC_MSG_DOCUMENT] = {S_BODY(s_document_fields)},
    [SC_MSG_DOC_REQUEST] = {.fields = NULL, .n = 0},
    [SC_MSG_HOOK_PROGRESS] = {S_BODY(s_hook_progress_fields), .check = s_check_hook_progress},
    [SC_MSG_ORDER] = {S_BODY(s_order_fields), .term_why = "orders carry a term >= 1"},
    [SC_MSG_APPROVE_VIA] = {S_BODY(s_approve_via_fields)},
    [SC_MSG_APPROVE_RESULT] = {S_BODY(s_approve_result_fields)},
    [SC_MSG_LEADER] = {S_BODY(s_leader_fields), .term_why = "terms start at 1"},
    [SC_MSG_VOTE_REQUEST] = {S_BODY(s_vote_request_fields), .term_why = "terms start at 1"},
    [SC_MSG_VOTE] = {S_BODY(s_vote_fields)},
    [SC_MSG_APPEND] = {S_BODY(s_append_fields), .term_why = "terms start at 1"},
    [SC_MSG_APPEND_ACK] = {S_BODY(s_append_ack_fields)},
    [SC_MSG_NACK] = {S_BODY(s_nack_fields)},
    [SC_MSG_TIMEOUT_NOW] = {S_BODY(s_timeout_now_fields), .term_why = "terms start at 1"},
    [SC_MSG_SNAPSHOT] = {S_BODY(s_snapshot_fields), .term_why = "terms start at 1",
                         .check = s_check_snapshot},
};

#define S_AT(base, f, T) ((T *)((char *)(base) + (f)->off))
#define S_CAT(base, f, T) ((T const *)((const char *)(base) + (f)->off))
#define S_COUNT(base, f) (*(size_t *)((char *)(base) + (f)->off_n))
#define S_CCOUNT(base, f) (*(const size_t *)((const char *)(base) + (f)->off_n))

typedef char s_event_id_t[SC_EVENT_ID_MAX + 1];
typedef char s_cap_t[SC_MSG_CAP_MAX + 1];

/* Item i of list f (S_CAPS, S_EVENTS, S_STRV) in base; NULL for an S_STRV hole. */
static const char *s_item(const void *base, const s_field_t *f, size_t i)
{
    const char *at = (const char *)base + f->off;

    switch (f->kind) {
    case S_CAPS: return at + i * sizeof(s_cap_t);
    case S_EVENTS: return (*(s_event_id_t *const *)(const void *)at)[i];
    default: return (*(char **const *)(const void *)at)[i];
    }
}

/* The integer of f in base as an int64_t; a uint64_t above INT64_MAX goes to *ret_big (else
 * 0 there). */
static int64_t s_int_get(const s_field_t *f, const void *base, uint64_t *ret_big)
{
    *ret_big = 0;
    switch (f->kind) {
    case S_INT: return *S_CAT(base, f, int);
    case S_I64: return *S_CAT(base, f, int64_t);
    default:
        if (*S_CAT(base, f, uint64_t) > (uint64_t)INT64_MAX)
            *ret_big = *S_CAT(base, f, uint64_t);
        return (int64_t)*S_CAT(base, f, uint64_t);
    }
}

static void s_int_set(const s_field_t *f, void *base, int64_t v)
{
    switch (f->kind) {
    case S_INT: *S_AT(base, f, int) = (int)v; break;
    case S_I64: *S_AT(base, f, int64_t) = v; break;
    default: *S_AT(base, f, uint64_t) = (uint64_t)v; break;
    }
}

static void s_int_range(const s_field_t *f, int64_t *ret_min, int64_t *ret_max)
{
    *ret_min = f->kind == S_U64 ? 0 : f->min;
    *ret_max = f->kind == S_U64 ? INT64_MAX : f->max;
}

/* ---------------------------------------------------------------- life cycle */

static void s_release_fields(const s_msgdef_t *def, void *base)
{
    for (size_t i = 0; i < def->n; i++) {
        const s_field_t *f = &def->fields[i];

        switch (f->kind) {
        case S_TEXT:
        case S_OBJECT:
        case S_EVENTS: free(*S_AT(base, f, void *)); break;
        case S_STRV: sc_strv_free(*S_AT(base, f, char **), S_COUNT(base, f)); break;
        case S_DOC:
        case S_EVENT_DOC: sc_doc_destroy(S_AT(base, f, sc_doc_t *)); break;
        case S_ENTRIES:
            for (size_t j = 0; *S_AT(base, f, void *) && j < S_COUNT(base, f); j++)
                s_release_fields(&s_entry_def, &(*S_AT(base, f, sc_msg_entry_t *))[j]);
            free(*S_AT(base, f, void *));
            break;
        default: break;
        }
    }
}

void sc_msg_destroy(sc_msg_t **msg)
{
    if (!msg || !*msg)
        return;
    if ((unsigned)(*msg)->type < SC_MSG_TYPE_MAX)
        s_release_fields(&s_msgdefs[(*msg)->type], *msg);
    free(*msg);
    *msg = NULL;
}

/* A zeroed message of this type whose integers hold their defaults. */
static sc_msg_t *s_alloc(sc_msg_type_t type)
{
    const s_msgdef_t *def = &s_msgdefs[type];
    sc_msg_t *m = calloc(1, sizeof(*m));

    if (!m)
        return NULL;
    m->type = type;
    m->version = SC_PROTO_VERSION;
    for (size_t i = 0; i < def->n; i++)
        if (def->fields[i].def && (def->fields[i].kind == S_INT || def->fields[i].kind == S_I64))
            s_int_set(&def->fields[i], m, def->fields[i].def);
    return m;
}

int sc_msg_new(sc_msg_type_t type, const char *from, uint64_t term, uint64_t seq,
               sc_msg_t **ret_msg)
{
    const s_msgdef_t *def;
    sc_msg_t *m;

    if (!ret_msg || (unsigned)type >= SC_MSG_TYPE_MAX || !sc_msg_name_valid(from) ||
        term > INT64_MAX || seq > INT64_MAX)
        return -EINVAL;
    if (!(m = s_alloc(type)))
        return -ENOMEM;
    snprintf(m->from, sizeof(m->from), "%s", from);
    m->term = term;
    m->seq = seq;
    def = &s_msgdefs[type];
    for (size_t i = 0; i < def->n; i++)
        if (def->fields[i].flags & (S_FROM | S_IS_FROM))
            snprintf(S_AT(m, &def->fields[i], char), def->fields[i].size, "%s", from);
    *ret_msg = m;
    return 0;
}

/* ---------------------------------------------------------------- rules */

/* Where reasons and the rejection class go; shared by the decoder and the encoder, which
 * apply the same rules (the encoder to the struct, the decoder to the JSON). */
struct s_ctx {
    char *err;           /* caller's reason buffer, may be NULL */
    size_t errlen;       /* its size */
    sc_msg_reject_t rej; /* class of the first failure */
    const char *pfx;     /* body prefix for reasons: the type name (NULL: the envelope) */
};

__attribute__((format(printf, 4, 5))) static int s_fail(s_ctx_t *c, sc_msg_reject_t rej, int rc,
                                                        const char *fmt, ...)
{
    va_list ap;

    c->rej = rej;
    if (c->err && c->errlen) {
        va_start(ap, fmt);
        vsnprintf(c->err, c->errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

#define S_PFX(c) ((c)->pfx ? (c)->pfx : ""), ((c)->pfx ? "." : "")
/* A bad value: FIELD in a body, ENVELOPE in the envelope. */
#define S_BAD(c) ((c)->pfx ? SC_MSG_REJ_FIELD : SC_MSG_REJ_ENVELOPE)

static int s_nomem(s_ctx_t *c)
{
    return s_fail(c, SC_MSG_REJ_NOMEM, -ENOMEM, "out of memory");
}

/* An integer v (or big, a uint64_t above INT64_MAX, when not 0) in [min, max]. */
static int s_check_int(s_ctx_t *c, const char *what, int64_t v, uint64_t big, int64_t min,
                       int64_t max)
{
    if (big)
        return s_fail(c, S_BAD(c), SC_E_PROTO,
                      "%s%s%s: %" PRIu64 " out of range %" PRId64 "..%" PRId64, S_PFX(c), what, big,
                      min, max);
    if (v < min || v > max)
        return s_fail(c, S_BAD(c), SC_E_PROTO,
                      "%s%s%s: %" PRId64 " out of range %" PRId64 "..%" PRId64, S_PFX(c), what, v,
                      min, max);
    return 0;
}

/* A string of n bytes: no NUL, valid UTF-8, min..max bytes, chars accepted by ok. */
static int s_check_str(s_ctx_t *c, const char *what, const char *s, size_t n, size_t min,
                       size_t max, bool (*ok)(unsigned char), const char *charset)
{
    if (memchr(s, '\0', n))
        return s_fail(c, S_BAD(c), SC_E_PROTO, "%s%s%s: contains a NUL character", S_PFX(c), what);
    if (!s_utf8_valid(s, n))
        return s_fail(c, S_BAD(c), SC_E_PROTO, "%s%s%s: invalid UTF-8", S_PFX(c), what);
    if (n < min)
        return s_fail(c, S_BAD(c), SC_E_PROTO, "%s%s%s: empty", S_PFX(c), what);
    if (n > max)
        return s_fail(c, S_BAD(c), SC_E_PROTO, "%s%s%s: %zu bytes, longer than %zu", S_PFX(c), what,
                      n, max);
    if (ok && !s_chars_ok(s, n, ok))
        return s_fail(c, S_BAD(c), SC_E_PROTO, "%s%s%s: \"%.64s\" has characters outside %s",
                      S_PFX(c), what, s, charset);
    return 0;
}

static int s_check_event_id(s_ctx_t *c, const char *what, const char *s, size_t n)
{
    int rc;

    if ((rc = s_check_str(c, what, s, n, 1, SC_EVENT_ID_MAX, NULL, NULL)) < 0)
        return rc;
    if (!sc_event_id_valid(s))
        return s_fail(c, SC_MSG_REJ_FIELD, SC_E_PROTO,
                      "%s%s%s: \"%s\" is not an EventId ([A-Za-z0-9_-], first alphanumeric)",
                      S_PFX(c), what, s);
    return 0;
}

/* A fixed-size string of the struct: its terminator within size. */
static int s_check_terminated(s_ctx_t *c, const char *what, const char *s, size_t size,
                              size_t *ret_len)
{
    if ((*ret_len = strnlen(s, size)) == size)
        return s_fail(c, S_BAD(c), SC_E_PROTO, "%s%s%s: not NUL-terminated", S_PFX(c), what);
    return 0;
}

/* A document agrees with the field it refers to: its DocumentIncarnation (S_DOC) or its one
 * event's EventId (S_EVENT_DOC). */
static int s_check_doc_ref(s_ctx_t *c, const s_field_t *f, const void *base, const sc_doc_t *doc)
{
    const char *ref = (const char *)base + f->ref;

    if (f->kind == S_DOC) {
        if (doc->incarnation != *(const int64_t *)ref)
            return s_fail(c, SC_MSG_REJ_FIELD, SC_E_PROTO,
                          "%s.%s: %" PRId64 " differs from DocumentIncarnation %" PRId64, c->pfx,
                          f->ref_key, *(const int64_t *)ref, doc->incarnation);
        return 0;
    }
    if (doc->n_events != 1)
        return s_fail(c, SC_MSG_REJ_FIELD, SC_E_PROTO, "%s.%s: %zu events, must hold one", c->pfx,
                      f->key, doc->n_events);
    if (!sc_event_id_equal(doc->events[0].id, ref))
        return s_fail(c, SC_MSG_REJ_FIELD, SC_E_PROTO,
                      "%s.%s: EventId \"%s\" differs from %s \"%s\"", c->pfx, f->key,
                      doc->events[0].id, f->ref_key, ref);
    return 0;
}

/* Entry i of an append follows the one before it (or prev_index / prev_term). c->pfx names
 * the entry. */
static int s_check_entry(s_ctx_t *c, const sc_msg_t *m, size_t i)
{
    const sc_msg_append_t *a = &m->append;
    const sc_msg_entry_t *en = &a->entries[i];
    uint64_t prev_term = i ? a->entries[i - 1].term : a->prev_term;

    if (en->term < 1 || en->term > m->term || en->term < prev_term)
        return s_fail(c, SC_MSG_REJ_FIELD, SC_E_PROTO,
                      "%s.term: %" PRIu64 " not in %" PRIu64 "..%" PRIu64
                      " (>= 1, >= the previous entry's, <= the message's term)",
                      c->pfx, en->term, prev_term > 1 ? prev_term : 1, m->term);
    if (a->prev_index > INT64_MAX - 1 - i || en->index != a->prev_index + 1 + i)
        return s_fail(c, SC_MSG_REJ_FIELD, SC_E_PROTO,
                      "%s.index: %" PRIu64 ", expected %" PRIu64 " (prev_index + %zu)", c->pfx,
                      en->index, a->prev_index + 1 + i, i + 1);
    return 0;
}

static int s_check_hello(s_ctx_t *c, const sc_msg_t *m)
{
    if (m->hello.proto_min > m->hello.proto_max)
        return s_fail(c, SC_MSG_REJ_FIELD, SC_E_PROTO, "hello.proto_min: %d above proto_max %d",
                      m->hello.proto_min, m->hello.proto_max);
    return 0;
}

static int s_check_hook_progress(s_ctx_t *c, const sc_msg_t *m)
{
    if (m->hook_progress.origin == SC_MSG_ORIGIN_ORDER && m->hook_progress.order_term == 0)
        return s_fail(c, SC_MSG_REJ_FIELD, SC_E_PROTO,
                      "hook_progress.order_term: 0 but origin is \"order\" (terms start at 1)");
    return 0;
}

static int s_check_snapshot(s_ctx_t *c, const sc_msg_t *m)
{
    const sc_msg_snapshot_t *s = &m->snapshot;
    size_t n = s->data ? strlen(s->data) : 0;

    if (s->last_index == 0 || s->last_term == 0)
        return s_fail(c, SC_MSG_REJ_FIELD, SC_E_PROTO,
                      "snapshot.last_index / last_term: 0 (a snapshot includes an entry)");
    if (s->total == 0 || s->offset > s->total || n > s->total - s->offset)
        return s_fail(c, SC_MSG_REJ_FIELD, SC_E_PROTO,
                      "snapshot: offset %" PRIu64 " + %zu bytes of data beyond total %" PRIu64,
                      s->offset, n, s->total);
    return 0;
}

/* The rules of a message type across its fields (and the envelope's term), in this order:
 * fields equal to from, a term >= 1, fields not above the term, the type's own rules. */
static int s_check_msg(s_ctx_t *c, const s_msgdef_t *def, const sc_msg_t *m)
{
    for (size_t i = 0; i < def->n; i++) {
        const s_field_t *f = &def->fields[i];

        if ((f->flags & S_IS_FROM) && strcmp(S_CAT(m, f, char), m->from) != 0)
            return s_fail(c, SC_MSG_REJ_FIELD, SC_E_PROTO, "%s.%s: \"%s\" differs from from \"%s\"",
                          c->pfx, f->key, S_CAT(m, f, char), m->from);
    }
    if (def->term_why && m->term == 0)
        return s_fail(c, SC_MSG_REJ_FIELD, SC_E_PROTO, "%s: term 0 (%s)", c->pfx, def->term_why);
    for (size_t i = 0; i < def->n; i++) {
        const s_field_t *f = &def->fields[i];

        if ((f->flags & S_LE_TERM) && *S_CAT(m, f, uint64_t) > m->term)
            return s_fail(c, SC_MSG_REJ_FIELD, SC_E_PROTO,
                          "%s.%s: %" PRIu64 " above the term %" PRIu64, c->pfx, f->key,
                          *S_CAT(m, f, uint64_t), m->term);
    }
    return def->check ? def->check(c, m) : 0;
}

/* Parses the JSON text of an object, strictly, nested at most depth deep (*ret_obj, caller's).
 * -EINVAL when it is not one such object, or -ENOMEM. */
static int s_object_parse(const char *json, int depth, json_object **ret_obj)
{
    json_tokener *tok = json_tokener_new_ex(depth);
    json_object *o = NULL;
    size_t len = strlen(json);
    int rc = -EINVAL;

    if (!tok)
        return -ENOMEM;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    o = json_tokener_parse_ex(tok, json, (int)len);
    if (o && json_tokener_get_error(tok) == json_tokener_success &&
        (size_t)json_tokener_get_parse_end(tok) == len &&
        json_object_is_type(o, json_type_object)) {
        *ret_obj = o;
        o = NULL;
        rc = 0;
    }
    json_object_put(o);
    json_tokener_free(tok);
    return rc;
}

/* The compact text of a JSON value (*ret, caller's), or NULL when out of memory. */
static char *s_json_text(json_object *o)
{
    return strdup(
        json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* An entry's data sits 3 levels deep in an append (message, entries, entry). */
#define S_DATA_DEPTH (SC_MSG_MAX_DEPTH - 3)

/* A string s of n bytes for field f (or item what of list f) by the rules of its kind. */
static int s_check_string(s_ctx_t *c, const s_field_t *f, const char *what, const char *s, size_t n)
{
    if (f->kind == S_EVENT_ID || f->kind == S_EVENTS)
        return s_check_event_id(c, what, s, n);
    return s_check_str(c, what, s, n, (size_t)f->min, (size_t)f->max, f->chars, f->charset);
}

/* Item i of list f, s of n bytes: valid, and not a repeat of the items before it in base. */
static int s_check_item(s_ctx_t *c, const s_field_t *f, const void *base, size_t i,
                        const char *what, const char *s, size_t n)
{
    int rc = s_check_string(c, f, what, s, n);

    for (size_t j = 0; rc == 0 && f->kind != S_STRV && j < i; j++)
        if (f->kind == S_EVENTS ? sc_event_id_equal(s_item(base, f, j), s)
                                : strcmp(s_item(base, f, j), s) == 0)
            rc = s_fail(c, SC_MSG_REJ_FIELD, SC_E_PROTO, "%s.%s: \"%s\" repeated", c->pfx, what, s);
    return rc;
}

/* The count of list f (0..items, and not 0 for S_EVENTS / S_STRV). */
static int s_check_count(s_ctx_t *c, const s_field_t *f, size_t n)
{
    if (n == 0 && (f->kind == S_EVENTS || f->kind == S_STRV))
        return s_fail(c, SC_MSG_REJ_FIELD, SC_E_PROTO, "%s.%s: empty%s", c->pfx, f->key,
                      f->flags & S_OPTIONAL ? " (omit it)" : "");
    if (n > f->items)
        return s_fail(c, SC_MSG_REJ_TOO_BIG, SC_E_TOO_BIG, "%s.%s: %zu items, more than %zu",
                      c->pfx, f->key, n, f->items);
    return 0;
}

/* ---------------------------------------------------------------- list helpers */

/* Appends item s to msg's list of this kind (checked by the decoder's rules; a text item is
 * taken over on success). 0, -EINVAL (no such list, invalid or repeated item), SC_E_TOO_BIG
 * or -ENOMEM. */
static int s_add_item(sc_msg_t *msg, s_kind_t kind, const char *s)
{
    const s_field_t *f = NULL;
    s_ctx_t c = {0};
    size_t n, size = kind == S_EVENTS ? sizeof(s_event_id_t) : sizeof(char *);
    char *grown;

    for (size_t i = 0; msg && (unsigned)msg->type < SC_MSG_TYPE_MAX && i < s_msgdefs[msg->type].n;
         i++)
        if (s_msgdefs[msg->type].fields[i].kind == kind)
            f = &s_msgdefs[msg->type].fields[i];
    if (!f || !s || s_check_item(&c, f, msg, (n = S_COUNT(msg, f)), "", s, strlen(s)) < 0)
        return -EINVAL;
    if (n >= f->items)
        return SC_E_TOO_BIG;
    if (kind == S_CAPS) {
        memcpy(S_AT(msg, f, char) + n * sizeof(s_cap_t), s, strlen(s) + 1);
    } else {
        if (!(grown = realloc(*S_AT(msg, f, char *), (n + 1) * size)))
            return -ENOMEM;
        *S_AT(msg, f, char *) = grown;
        if (kind == S_EVENTS)
            memcpy(grown + n * size, s, strlen(s) + 1);
        else
            ((char **)(void *)grown)[n] = (char *)(uintptr_t)s;
    }
    S_COUNT(msg, f) = n + 1;
    return 0;
}

int sc_msg_add_event(sc_msg_t *msg, const char *event_id)
{
    return s_add_item(msg, S_EVENTS, event_id);
}

int sc_msg_add_malformed(sc_msg_t *msg, const char *reason)
{
    char *text = NULL;
    int rc;

    if (!reason || !*reason)
        return -EINVAL;
    if ((rc = s_set_text(&text, reason, strlen(reason), false, SC_MSG_MALFORMED_MAX)) < 0)
        return rc;
    if ((rc = s_add_item(msg, S_STRV, text)) < 0)
        free(text);
    return rc;
}

int sc_msg_add_capability(sc_msg_t *msg, const char *cap)
{
    return s_add_item(msg, S_CAPS, cap);
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

int sc_msg_add_entry(sc_msg_t *msg, uint64_t term, uint64_t index, const char *kind,
                     const char *data_json)
{
    sc_msg_append_t *a;
    sc_msg_entry_t *grown;
    char *data = NULL;
    json_object *obj = NULL;
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
    if ((rc = s_object_parse(data_json ? data_json : "{}", S_DATA_DEPTH, &obj)) < 0)
        return rc;
    data = s_json_text(obj);
    json_object_put(obj);
    if (!data)
        return -ENOMEM;
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

/* The JSON type of each kind. */
static const json_type s_kind_json[S_KIND_MAX] = {
    [S_INT] = json_type_int,         [S_I64] = json_type_int,
    [S_U64] = json_type_int,         [S_BOOL] = json_type_boolean,
    [S_ENUM] = json_type_string,     [S_STR] = json_type_string,
    [S_EVENT_ID] = json_type_string, [S_TEXT] = json_type_string,
    [S_OBJECT] = json_type_object,   [S_CAPS] = json_type_array,
    [S_EVENTS] = json_type_array,    [S_STRV] = json_type_array,
    [S_DOC] = json_type_object,      [S_EVENT_DOC] = json_type_object,
    [S_ENTRIES] = json_type_array,
};

/* The field key of obj, which must be of type want. optional: absent gives *ret NULL. */
static int s_field(s_ctx_t *c, json_object *obj, const char *key, json_type want, bool optional,
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
        return s_fail(c, c->pfx ? SC_MSG_REJ_MISSING : SC_MSG_REJ_ENVELOPE, SC_E_PROTO,
                      "%s%s%s: missing", S_PFX(c), key);
    }
    if (!json_object_is_type(v, want))
        return s_fail(c, S_BAD(c), SC_E_PROTO, "%s%s%s: must be %s, not %s", S_PFX(c), key,
                      want_names[want], s_jtype(v));
    *ret = v;
    return 0;
}

static int s_doc_rc(s_ctx_t *c, int rc, const char *what, const char *why)
{
    if (rc == -ENOMEM)
        return s_nomem(c);
    return s_fail(c, SC_MSG_REJ_DOCUMENT, rc == SC_E_TOO_BIG ? SC_E_TOO_BIG : SC_E_PROTO,
                  "%s.%s: %s", c->pfx, what, why);
}

/* How deep v nests (a scalar: depth + 1, as json-c's tokenizer counts). */
static int s_json_depth(json_object *v, int depth)
{
    int d = depth + 1, max = d;

    if (d > SC_DOC_MAX_DEPTH + 1)
        return d;
    if (json_object_is_type(v, json_type_object)) {
        json_object_object_foreach(v, key, val)
        {
            (void)key;
            int k = s_json_depth(val, d);
            if (k > max)
                max = k;
        }
    } else if (json_object_is_type(v, json_type_array)) {
        for (size_t i = 0, n = json_object_array_length(v); i < n; i++) {
            int k = s_json_depth(json_object_array_get_idx(v, i), d);
            if (k > max)
                max = k;
        }
    }
    return max;
}

/* The IMDS document v (S_DOC), or the IMDS event object v wrapped in one (S_EVENT_DOC), parsed
 * by sc_event into *ret_doc. */
static int s_dec_doc(s_ctx_t *c, const s_field_t *f, json_object *v, sc_doc_t **ret_doc)
{
    json_object *wrap = NULL, *arr = NULL;
    char why[512] = "";
    int rc;

    if (f->kind == S_EVENT_DOC) {
        if (!(wrap = json_object_new_object()) || !(arr = json_object_new_array()) ||
            json_object_object_add(wrap, "DocumentIncarnation", json_object_new_int64(0)) < 0 ||
            json_object_array_add(arr, json_object_get(v)) < 0) {
            json_object_put(arr);
            json_object_put(wrap);
            return s_nomem(c);
        }
        json_object_object_add(wrap, "Events", arr);
        v = wrap;
    }
    /* read from the message's tree, not printed and parsed again: the message's own limits
     * bound its size (SC_MSG_MAX_BYTES < SC_DOC_MAX_BYTES); its nesting is checked as
     * sc_doc_parse would */
    if (s_json_depth(v, 0) > SC_DOC_MAX_DEPTH)
        rc = sc_errf(why, sizeof(why), SC_E_TOO_BIG, "document: JSON nested deeper than %d levels",
                     SC_DOC_MAX_DEPTH);
    else
        rc = sc_doc_from_json(v, ret_doc, why, sizeof(why));
    json_object_put(wrap);
    return rc < 0 ? s_doc_rc(c, rc, f->key, why) : 0;
}

/* A key of o that neither table knows (nor "v" and "type" when envelope is given). */
static int s_unknown_keys(s_ctx_t *c, json_object *o, const s_msgdef_t *def,
                          const s_msgdef_t *envelope)
{
    json_object_object_foreach(o, key, val)
    {
        bool known = envelope && (!strcmp(key, "v") || !strcmp(key, "type"));

        (void)val;
        for (size_t i = 0; !known && i < def->n; i++)
            known = !strcmp(key, def->fields[i].key);
        for (size_t i = 0; !known && envelope && i < envelope->n; i++)
            known = !strcmp(key, envelope->fields[i].key);
        if (!known)
            return s_fail(c, SC_MSG_REJ_UNKNOWN, SC_E_PROTO,
                          "%s.%.64s: unknown field (protocol v%d)", c->pfx, key, SC_PROTO_VERSION);
    }
    return 0;
}

static int s_dec_fields(s_ctx_t *c, json_object *o, const s_msgdef_t *def, void *base, sc_msg_t *m,
                        bool late);

/* The items of a list (or the content of a document) v of field f into base. */
static int s_dec_items(s_ctx_t *c, const s_field_t *f, json_object *v, void *base, sc_msg_t *m)
{
    size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
    const char *pfx = c->pfx;
    int rc;

    if (f->kind == S_DOC || f->kind == S_EVENT_DOC)
        return (rc = s_dec_doc(c, f, v, S_AT(base, f, sc_doc_t *))) < 0
                   ? rc
                   : s_check_doc_ref(c, f, base, *S_AT(base, f, sc_doc_t *));
    if ((rc = s_check_count(c, f, n)) < 0)
        return rc;
    /* Owned by the message at once, so that a failure below frees it with the message. */
    if (n > 0 && f->kind != S_CAPS &&
        !(*S_AT(base, f, void *) = calloc(n, f->kind == S_EVENTS ? sizeof(s_event_id_t)
                                             : f->kind == S_STRV ? sizeof(char *)
                                                                 : sizeof(sc_msg_entry_t))))
        return s_nomem(c);
    for (size_t i = 0; i < n && rc == 0; i++) {
        json_object *it = json_object_array_get_idx(v, i);
        bool is_str = json_object_is_type(it, json_type_string);
        /* (json_object_get_string of anything else would serialize it) */
        const char *str = is_str ? json_object_get_string(it) : "";
        size_t len = is_str ? (size_t)json_object_get_string_len(it) : 0;
        char what[96];

        if (f->kind == S_ENTRIES) /* an entry is a prefix: "append.entries[3]" */
            snprintf(what, sizeof(what), "%s.%s[%zu]", pfx, f->key, i);
        else
            snprintf(what, sizeof(what), "%s[%zu]", f->key, i);
        S_COUNT(base, f) = i + 1;
        if (f->kind == S_ENTRIES) {
            sc_msg_entry_t *en = &(*S_AT(base, f, sc_msg_entry_t *))[i];

            if (!json_object_is_type(it, json_type_object))
                return s_fail(c, SC_MSG_REJ_FIELD, SC_E_PROTO, "%s: must be an object, not %s",
                              what, s_jtype(it));
            c->pfx = what;
            if ((rc = s_unknown_keys(c, it, &s_entry_def, NULL)) == 0 &&
                (rc = s_dec_fields(c, it, &s_entry_def, en, m, false)) == 0)
                rc = s_check_entry(c, m, i);
            c->pfx = pfx;
        } else if (!is_str) {
            return s_fail(c, SC_MSG_REJ_FIELD, SC_E_PROTO, "%s.%s: must be a string, not %s",
                          c->pfx, what, s_jtype(it));
        } else if ((rc = s_check_item(c, f, base, i, what, str, len)) == 0) {
            if (f->kind == S_STRV)
                rc = ((*S_AT(base, f, char **))[i] = strdup(str)) ? 0 : s_nomem(c);
            else
                memcpy(f->kind == S_CAPS ? S_AT(base, f, char) + i * sizeof(s_cap_t)
                                         : (*S_AT(base, f, s_event_id_t *))[i],
                       str, len + 1);
        }
    }
    return rc;
}

/* The value v of field f into base. */
static int s_dec_value(s_ctx_t *c, const s_field_t *f, json_object *v, void *base, sc_msg_t *m)
{
    bool is_str = json_object_is_type(v, json_type_string);
    /* (json_object_get_string of anything else would serialize it) */
    const char *s = is_str ? json_object_get_string(v) : "";
    size_t n = is_str ? (size_t)json_object_get_string_len(v) : 0;
    int64_t i, min, max;
    int rc;

    switch (f->kind) {
    case S_INT:
    case S_I64:
    case S_U64:
        i = json_object_get_int64(v);
        s_int_range(f, &min, &max);
        if ((rc = s_check_int(c, f->key, i,
                              i >= 0 && json_object_get_uint64(v) > (uint64_t)INT64_MAX
                                  ? json_object_get_uint64(v)
                                  : 0,
                              min, max)) < 0)
            return rc;
        s_int_set(f, base, i);
        return 0;
    case S_BOOL: *S_AT(base, f, bool) = json_object_get_boolean(v); return 0;
    case S_ENUM:
        if ((rc = s_check_str(c, f->key, s, n, 1, 32, NULL, NULL)) < 0)
            return rc;
        if ((*S_AT(base, f, int) = s_parse_name(f->names, f->n_names, s)) < 0)
            return s_fail(c, SC_MSG_REJ_FIELD, SC_E_PROTO, "%s.%s: unknown value \"%s\"", c->pfx,
                          f->key, s);
        return 0;
    case S_STR:
    case S_EVENT_ID:
        if ((rc = s_check_string(c, f, f->key, s, n)) < 0)
            return rc;
        memcpy(S_AT(base, f, char), s, n + 1);
        return 0;
    case S_TEXT:
        if ((rc = s_check_string(c, f, f->key, s, n)) < 0)
            return rc;
        return (*S_AT(base, f, char *) = strdup(s)) ? 0 : s_nomem(c);
    case S_OBJECT: return (*S_AT(base, f, char *) = s_json_text(v)) ? 0 : s_nomem(c);
    default: return s_dec_items(c, f, v, base, m);
    }
}

/* Decodes the fields of a table from o into base, in table order: each present (unless
 * optional) and of its JSON type, then its value. late = false: an S_LATE field only up to its
 * JSON type; late = true: the items of the S_LATE fields. */
static int s_dec_fields(s_ctx_t *c, json_object *o, const s_msgdef_t *def, void *base, sc_msg_t *m,
                        bool late)
{
    int rc;

    for (size_t i = 0; i < def->n; i++) {
        const s_field_t *f = &def->fields[i];
        json_object *v = NULL;

        if (late && !(f->flags & S_LATE))
            continue;
        if ((rc = s_field(c, o, f->key, s_kind_json[f->kind], f->flags & S_OPTIONAL, &v)) < 0)
            return rc;
        if (v && late == !!(f->flags & S_LATE) && (rc = s_dec_value(c, f, v, base, m)) < 0)
            return rc;
    }
    return 0;
}

/* Parses buf into one JSON object (*ret_obj, caller's). */
static int s_parse_json(s_ctx_t *d, const char *buf, size_t len, json_object **ret_obj)
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

static int s_decode_obj(s_ctx_t *c, json_object *o, sc_msg_t **ret_msg)
{
    const s_msgdef_t *def;
    json_object *v = NULL;
    sc_msg_type_t type;
    sc_msg_t *m = NULL;
    int64_t ver;
    int rc;

    /* The version first: a message of another version is refused as such, not for its
     * fields. */
    if (!json_object_object_get_ex(o, "v", &v))
        return s_fail(c, SC_MSG_REJ_VERSION, SC_E_PROTO, "v: missing (protocol version)");
    if (!json_object_is_type(v, json_type_int))
        return s_fail(c, SC_MSG_REJ_VERSION, SC_E_PROTO, "v: must be an integer, not %s",
                      s_jtype(v));
    ver = json_object_get_int64(v);
    if (ver != SC_PROTO_VERSION || json_object_get_uint64(v) != (uint64_t)SC_PROTO_VERSION)
        return s_fail(c, SC_MSG_REJ_VERSION, SC_E_PROTO,
                      "v: unsupported protocol version %" PRId64 " (this build speaks %d)", ver,
                      SC_PROTO_VERSION);
    if (!json_object_object_get_ex(o, "type", &v))
        return s_fail(c, SC_MSG_REJ_TYPE, SC_E_PROTO, "type: missing");
    if (!json_object_is_type(v, json_type_string))
        return s_fail(c, SC_MSG_REJ_TYPE, SC_E_PROTO, "type: must be a string, not %s", s_jtype(v));
    if (sc_msg_type_parse(json_object_get_string(v), &type) < 0 ||
        strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
        return s_fail(c, SC_MSG_REJ_TYPE, SC_E_PROTO, "type: unknown message type \"%.64s\"",
                      json_object_get_string(v));
    def = &s_msgdefs[type];
    if (!(m = s_alloc(type)))
        return s_nomem(c);
    if ((rc = s_dec_fields(c, o, &s_envelope_def, m, m, false)) == 0) {
        c->pfx = s_type_names[type];
        rc = s_unknown_keys(c, o, def, &s_envelope_def);
    }
    /* The fields, the rules across them, then the items read late (see S_LATE). */
    if (rc < 0 || (rc = s_dec_fields(c, o, def, m, m, false)) < 0 ||
        (rc = s_check_msg(c, def, m)) < 0 || (rc = s_dec_fields(c, o, def, m, m, true)) < 0) {
        sc_msg_destroy(&m);
        return rc;
    }
    *ret_msg = m;
    return 0;
}

int sc_msg_decode_ex(const void *buf, size_t len, sc_msg_t **ret_msg, sc_msg_reject_t *out_reject,
                     char *err, size_t errlen)
{
    s_ctx_t c = {.err = err, .errlen = errlen, .rej = SC_MSG_REJ_NONE};
    json_object *o = NULL;
    int rc;

    if (err && errlen)
        err[0] = '\0';
    if (!buf || !ret_msg) {
        rc = s_fail(&c, SC_MSG_REJ_NOT_JSON, -EINVAL, "NULL argument");
    } else if ((rc = s_parse_json(&c, buf, len, &o)) == 0) {
        rc = s_decode_obj(&c, o, ret_msg);
        json_object_put(o);
    }
    if (out_reject)
        *out_reject = rc == 0 ? SC_MSG_REJ_NONE : c.rej;
    return rc;
}

int sc_msg_decode(const void *buf, size_t len, sc_msg_t **ret_msg, char *err, size_t errlen)
{
    return sc_msg_decode_ex(buf, len, ret_msg, NULL, err, errlen);
}

/* ---------------------------------------------------------------- encoding */

/* Adds v (owned) to parent under key; NULL v means out of memory. */
static int s_put(s_ctx_t *c, json_object *parent, const char *key, json_object *v)
{
    if (!v || json_object_object_add(parent, key, v) < 0) {
        json_object_put(v);
        return s_nomem(c);
    }
    return 0;
}

/* The JSON of a document: sc_doc_to_json_object's tree, which sc_doc_parse reads back. */
static int s_doc_json(s_ctx_t *c, const s_field_t *f, const sc_doc_t *doc, json_object **ret)
{
    int rc;

    if ((rc = sc_doc_to_json_object(doc, ret)) < 0)
        return rc == -ENOMEM
                   ? s_nomem(c)
                   : s_fail(c, SC_MSG_REJ_DOCUMENT, -EINVAL, "%s.%s: cannot serialize: %s", c->pfx,
                            f->key, sc_strerror(rc));
    return 0;
}

static int s_enc_fields(s_ctx_t *c, json_object *o, const s_msgdef_t *def, const void *base,
                        const sc_msg_t *m, bool late);

/* The JSON of a document field: the document, or its one event bare (S_EVENT_DOC). */
static int s_enc_doc(s_ctx_t *c, const s_field_t *f, const void *base, json_object **ret)
{
    const sc_doc_t *doc = *S_CAT(base, f, sc_doc_t *);
    json_object *o = NULL, *evs;
    int rc;

    if ((rc = s_check_doc_ref(c, f, base, doc)) < 0 || (rc = s_doc_json(c, f, doc, &o)) < 0)
        return rc;
    if (f->kind == S_DOC) {
        *ret = o;
        return 0;
    }
    if (json_object_object_get_ex(o, "Events", &evs) && json_object_array_length(evs) == 1)
        *ret = json_object_get(json_object_array_get_idx(evs, 0));
    json_object_put(o);
    return *ret
               ? 0
               : s_fail(c, SC_MSG_REJ_DOCUMENT, SC_E_PROTO, "%s.%s: not one event", c->pfx, f->key);
}

/* The array of the items of list f, checked by the decoder's rules (*ret, caller's). */
static int s_enc_items(s_ctx_t *c, const s_field_t *f, const void *base, const sc_msg_t *m,
                       json_object **ret)
{
    size_t n = S_CCOUNT(base, f);
    const char *pfx = c->pfx;
    json_object *arr;
    int rc;

    if ((rc = s_check_count(c, f, n)) < 0)
        return rc;
    if (!(arr = json_object_new_array()))
        return s_nomem(c);
    for (size_t i = 0; i < n && rc == 0; i++) {
        json_object *v = NULL;
        const char *str;
        size_t len;
        char what[96];

        if (f->kind == S_ENTRIES) /* an entry is a prefix: "append.entries[3]" */
            snprintf(what, sizeof(what), "%s.%s[%zu]", pfx, f->key, i);
        else
            snprintf(what, sizeof(what), "%s[%zu]", f->key, i);
        if (f->kind == S_ENTRIES) {
            c->pfx = what;
            if ((v = json_object_new_object()) &&
                (rc = s_enc_fields(c, v, &s_entry_def, &(*S_CAT(base, f, sc_msg_entry_t *))[i], m,
                                   false)) == 0)
                rc = s_check_entry(c, m, i);
            c->pfx = pfx;
        } else if ((str = s_item(base, f, i) ? s_item(base, f, i) : ""),
                   (rc = s_check_terminated(c, what, str,
                                            f->kind == S_CAPS     ? sizeof(s_cap_t)
                                            : f->kind == S_EVENTS ? sizeof(s_event_id_t)
                                                                  : SIZE_MAX,
                                            &len)) == 0 &&
                       (rc = s_check_item(c, f, base, i, what, str, len)) == 0) {
            v = json_object_new_string_len(str, (int)len);
        }
        if (rc == 0 && (!v || json_object_array_add(arr, v) < 0)) {
            rc = s_nomem(c);
            json_object_put(v);
        } else if (rc < 0) {
            json_object_put(v);
        }
    }
    if (rc < 0) {
        json_object_put(arr);
        return rc;
    }
    *ret = arr;
    return 0;
}

/* Field f of base, checked by the decoder's rules, added to o (unless S_OMIT and at its
 * default). */
static int s_enc_value(s_ctx_t *c, json_object *o, const s_field_t *f, const void *base,
                       const sc_msg_t *m)
{
    json_object *v = NULL;
    const char *s;
    uint64_t big;
    int64_t i, min, max;
    size_t n;
    int rc = 0, e;

    switch (f->kind) {
    case S_INT:
    case S_I64:
    case S_U64:
        i = s_int_get(f, base, &big);
        s_int_range(f, &min, &max);
        if ((f->flags & S_OMIT) && !big && i == f->def)
            return 0;
        if ((rc = s_check_int(c, f->key, i, big, min, max)) < 0)
            return rc;
        v = json_object_new_int64(i);
        break;
    case S_BOOL:
        if ((f->flags & S_OMIT) && !*S_CAT(base, f, bool))
            return 0;
        v = json_object_new_boolean(*S_CAT(base, f, bool));
        break;
    case S_ENUM:
        if ((e = *S_CAT(base, f, int)) < 0 || e >= f->n_names)
            return s_fail(c, SC_MSG_REJ_FIELD, SC_E_PROTO, "%s.%s: unknown value \"?\"", c->pfx,
                          f->key);
        v = json_object_new_string(f->names[e]);
        break;
    case S_STR:
    case S_EVENT_ID:
    case S_TEXT:
        s = f->kind == S_TEXT ? *S_CAT(base, f, char *) : S_CAT(base, f, char);
        if ((rc = s_check_terminated(c, f->key, s ? s : "",
                                     f->kind == S_TEXT       ? SIZE_MAX
                                     : f->kind == S_EVENT_ID ? sizeof(s_event_id_t)
                                                             : f->size,
                                     &n)) < 0)
            return rc;
        if (n == 0 && (f->flags & S_OMIT))
            return 0;
        if ((rc = s_check_string(c, f, f->key, s ? s : "", n)) < 0)
            return rc;
        v = json_object_new_string_len(s ? s : "", (int)n);
        break;
    case S_OBJECT:
        s = *S_CAT(base, f, char *) ? *S_CAT(base, f, char *) : "{}";
        if ((rc = s_object_parse(s, S_DATA_DEPTH, &v)) == -ENOMEM)
            return s_nomem(c);
        if (rc < 0)
            return s_fail(c, SC_MSG_REJ_FIELD, SC_E_PROTO,
                          "%s.%s: not the text of a JSON object (nested <= %d)", c->pfx, f->key,
                          S_DATA_DEPTH);
        break;
    case S_DOC:
    case S_EVENT_DOC:
        if (!*S_CAT(base, f, sc_doc_t *))
            return f->flags & S_OPTIONAL ? 0
                                         : s_fail(c, SC_MSG_REJ_MISSING, SC_E_PROTO,
                                                  "%s.%s: missing", c->pfx, f->key);
        rc = s_enc_doc(c, f, base, &v);
        break;
    default:
        if (S_CCOUNT(base, f) == 0 && (f->flags & S_OMIT))
            return 0;
        rc = s_enc_items(c, f, base, m, &v);
        break;
    }
    return rc < 0 ? rc : s_put(c, o, f->key, v);
}

/* The fields of a table into o, in table order (late: as s_dec_fields). */
static int s_enc_fields(s_ctx_t *c, json_object *o, const s_msgdef_t *def, const void *base,
                        const sc_msg_t *m, bool late)
{
    int rc;

    for (size_t i = 0; i < def->n; i++)
        if (late == !!(def->fields[i].flags & S_LATE) &&
            (rc = s_enc_value(c, o, &def->fields[i], base, m)) < 0)
            return rc;
    return 0;
}

/* The JSON text of msg, checked field by field with the decoder's rules (one set of rules:
 * the tables), without decoding it. */
static int s_build(const sc_msg_t *msg, char **ret_buf, size_t *ret_len, char *err, size_t errlen)
{
    s_ctx_t c = {.err = err, .errlen = errlen};
    const s_msgdef_t *def;
    json_object *o;
    const char *text;
    size_t len = 0;
    char *buf = NULL;
    int rc;

    if (err && errlen)
        err[0] = '\0';
    if (!msg || (unsigned)msg->type >= SC_MSG_TYPE_MAX)
        return sc_errf(err, errlen, -EINVAL, "type: out of range");
    if (msg->version != SC_PROTO_VERSION)
        return sc_errf(err, errlen, -EINVAL,
                       "v: unsupported protocol version %d (this build speaks %d)", msg->version,
                       SC_PROTO_VERSION);
    def = &s_msgdefs[msg->type];
    if (!(o = json_object_new_object()))
        return -ENOMEM;
    if ((rc = s_put(&c, o, "v", json_object_new_int64(msg->version))) == 0 &&
        (rc = s_put(&c, o, "type", json_object_new_string(s_type_names[msg->type]))) == 0 &&
        (rc = s_enc_fields(&c, o, &s_envelope_def, msg, msg, false)) == 0) {
        c.pfx = s_type_names[msg->type];
        /* a message without its document is told so first, not for the fields around it */
        for (size_t i = 0; i < def->n && rc == 0; i++)
            if (def->fields[i].kind == S_DOC && !*S_CAT(msg, &def->fields[i], sc_doc_t *))
                rc = s_fail(&c, SC_MSG_REJ_MISSING, SC_E_PROTO, "%s.%s: missing", c.pfx,
                            def->fields[i].key);
        if (rc == 0 && (rc = s_enc_fields(&c, o, def, msg, msg, false)) == 0 &&
            (rc = s_check_msg(&c, def, msg)) == 0)
            rc = s_enc_fields(&c, o, def, msg, msg, true);
    }
    if (rc == 0) {
        text = json_object_to_json_string_length(
            o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
        if (!text || !(buf = malloc(len + 1)))
            rc = -ENOMEM;
        else
            memcpy(buf, text, len + 1);
    }
    json_object_put(o);
    if (rc < 0)
        return rc == -ENOMEM ? rc : -EINVAL;
    if (len > SC_MSG_MAX_BYTES) {
        free(buf);
        return sc_errf(err, errlen, SC_E_TOO_BIG, "message of %zu bytes, more than %d", len,
                       SC_MSG_MAX_BYTES);
    }
    *ret_buf = buf;
    *ret_len = len;
    return 0;
}

int sc_msg_validate(const sc_msg_t *msg, char *err, size_t errlen)
{
    char *buf = NULL;
    size_t len = 0;
    int rc = s_build(msg, &buf, &len, err, errlen);

    free(buf);
    return rc == 0 || rc == -ENOMEM ? rc : -EINVAL;
}

int sc_msg_encode(const sc_msg_t *msg, char **ret_buf, size_t *ret_len)
{
    if (!ret_buf || !ret_len)
        return -EINVAL;
    return s_build(msg, ret_buf, ret_len, NULL, 0);
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

static bool s_equal_fields(const s_msgdef_t *def, const void *a, const void *b)
{
    for (size_t i = 0; i < def->n; i++) {
        const s_field_t *f = &def->fields[i];
        size_t n = f->off_n ? S_CCOUNT(a, f) : 0;
        uint64_t biga, bigb;
        bool eq = !f->off_n || (n == S_CCOUNT(b, f) && (f->kind != S_CAPS || n <= f->items));

        switch (f->kind) {
        case S_INT:
        case S_I64:
        case S_U64: eq = s_int_get(f, a, &biga) == s_int_get(f, b, &bigb) && biga == bigb; break;
        case S_BOOL: eq = *S_CAT(a, f, bool) == *S_CAT(b, f, bool); break;
        case S_ENUM: eq = *S_CAT(a, f, int) == *S_CAT(b, f, int); break;
        case S_STR:
        case S_EVENT_ID: eq = strcmp(S_CAT(a, f, char), S_CAT(b, f, char)) == 0; break;
        case S_TEXT:
        case S_OBJECT: eq = s_text_eq(*S_CAT(a, f, char *), *S_CAT(b, f, char *)); break;
        case S_DOC:
        case S_EVENT_DOC:
            eq = s_doc_eq(*S_CAT(a, f, sc_doc_t *), *S_CAT(b, f, sc_doc_t *), f->kind == S_DOC);
            break;
        case S_ENTRIES:
            for (size_t j = 0; eq && j < n; j++)
                eq = s_equal_fields(&s_entry_def, &(*S_CAT(a, f, sc_msg_entry_t *))[j],
                                    &(*S_CAT(b, f, sc_msg_entry_t *))[j]);
            break;
        default: /* S_CAPS, S_EVENTS, S_STRV */
            for (size_t j = 0; eq && j < n; j++)
                eq = s_text_eq(s_item(a, f, j), s_item(b, f, j));
            break;
        }
        if (!eq)
            return false;
    }
    return true;
}

bool sc_msg_equal(const sc_msg_t *a, const sc_msg_t *b)
{
    if (!a || !b)
        return a == b;
    return a->type == b->type && (unsigned)a->type < SC_MSG_TYPE_MAX && a->version == b->version &&
           s_equal_fields(&s_envelope_def, a, b) && s_equal_fields(&s_msgdefs[a->type], a, b);
}
