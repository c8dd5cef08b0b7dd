/* sc_event: the IMDS Scheduled Events document — model, parser, serializer, diff, approval body.
 *
 * A parser with no I/O: bytes in, structs out. Everything an outsider controls is bounded
 * (document size, JSON depth, number of events, number of resources, length of every string)
 * and every field is type-checked; on error the functions return an SC_E_* code and write a
 * precise reason naming the field ("Events[1].NotBefore: ...") into the caller's buffer.
 *
 * What the parser accepts (api-version 2017-03-01 to 2020-07-01):
 *  - top level: a JSON object with "DocumentIncarnation" (a JSON integer >= 0) and "Events"
 *    (an array of at most SC_DOC_MAX_EVENTS objects).
 *  - per event, required: "EventId" (1..SC_EVENT_ID_MAX characters of [A-Za-z0-9_-], starting
 *    with a letter or digit; GUIDs in any case), "EventType", "EventStatus", "ResourceType"
 *    (strings), "Resources" (array of at most SC_EVENT_MAX_RESOURCES non-empty strings without
 *    control characters; may be empty), "NotBefore" (RFC 1123, ISO 8601 or "").
 *  - per event, optional: "Description" (string, api >= 2019-04-01), "EventSource" (string,
 *    api >= 2019-08-01), "DurationInSeconds" (api >= 2020-07-01: a JSON integer >= -1, or a
 *    string holding one such decimal integer such as "5" — IMDS sends a number, but its
 *    2017-03-01 POST body already mixed numbers and strings, so we accept both; it is written
 *    back as a number). An optional field set to null is an error, not "absent".
 *  - unknown EventType / EventStatus / EventSource values are kept (type UNKNOWN with the raw
 *    text), never rejected: a newer platform must not blind the agent.
 *  - unknown extra fields, at any level, are ignored for forward compatibility.
 *  - rejected: duplicate EventIds (compared case-insensitively), strings containing NUL,
 *    strings longer than SC_EVENT_MAX_STRING, invalid UTF-8, JSON nested deeper than
 *    SC_DOC_MAX_DEPTH, anything after the closing brace but whitespace.
 *  - limitation: a JSON object that repeats a key keeps the last value (json-c does).
 *
 * Errors: SC_E_EMPTY (no bytes or only whitespace), SC_E_NOT_JSON (a JSON syntax error),
 * SC_E_TRUNCATED (valid JSON so far but cut short), SC_E_TOO_BIG (over a size or count
 * limit), SC_E_PARSE (valid JSON, wrong shape or value), -ENOMEM, -EINVAL (NULL arguments).
 */
#ifndef SC_EVENT_H
#define SC_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#define SC_EVENT_ID_MAX 64                 /* longest EventId accepted (GUIDs are 36) */
#define SC_DOC_MAX_EVENTS 256              /* events in one document */
#define SC_EVENT_MAX_RESOURCES 4096        /* names in one event's Resources */
#define SC_EVENT_MAX_STRING 4096           /* bytes in any one string field */
#define SC_DOC_MAX_BYTES (4 * 1024 * 1024) /* bytes of a document or approval body */
#define SC_DOC_MAX_DEPTH 8                 /* JSON nesting (the document needs 4) */
#define SC_EVENT_DURATION_MAX 2147483647LL /* largest DurationInSeconds accepted */
#define SC_DOC_REASON_MAX 256              /* bytes of one malformed event's reason, NUL included */

typedef enum {
    SC_EVENT_TYPE_UNKNOWN, /* a type this version does not know; see type_raw */
    SC_EVENT_FREEZE,       /* paused a few seconds, memory kept */
    SC_EVENT_REBOOT,       /* rebooted, non-persistent memory lost */
    SC_EVENT_REDEPLOY,     /* moved to another host, temporary disk lost */
    SC_EVENT_PREEMPT,      /* Spot VM evicted (api >= 2017-11-01) */
    SC_EVENT_TERMINATE,    /* VM being deleted (api >= 2019-01-01) */
    SC_EVENT_TYPE_MAX
} sc_event_type_t;

typedef enum {
    SC_EVENT_STATUS_UNKNOWN, /* a status this version does not know; see status_raw */
    SC_EVENT_SCHEDULED,      /* waits for approval or NotBefore */
    SC_EVENT_STARTED,        /* in progress (approved, NotBefore passed, or forced) */
    SC_EVENT_STATUS_MAX
} sc_event_status_t;

typedef enum {
    SC_EVENT_SOURCE_ABSENT,   /* no EventSource field (api < 2019-08-01) */
    SC_EVENT_SOURCE_PLATFORM, /* "Platform" */
    SC_EVENT_SOURCE_USER,     /* "User": portal, API, CLI */
    SC_EVENT_SOURCE_UNKNOWN,  /* another value; see source_raw */
    SC_EVENT_SOURCE_MAX
} sc_event_source_t;

typedef struct sc_event {
    char id[SC_EVENT_ID_MAX + 1]; /* EventId as written (case kept) */
    sc_event_type_t type;         /* EventType, UNKNOWN for values we do not know */
    char *type_raw;               /* EventType as written (unknown types kept, not dropped) */
    sc_event_status_t status;     /* EventStatus, UNKNOWN for values we do not know */
    char *status_raw;             /* EventStatus as written */
    char *resource_type;          /* ResourceType as written ("VirtualMachine") */
    char **resources;             /* Resources as written (2017-03-01 names keep their '_') */
    size_t n_resources;           /* entries in resources (0 allowed) */
    bool has_not_before;          /* false when NotBefore is "" (Started events) */
    int64_t not_before;           /* NotBefore in unix seconds, when has_not_before */
    char *not_before_raw;         /* NotBefore as written, "" when empty */
    char *description;            /* Description, NULL when absent (api < 2019-04-01) */
    sc_event_source_t source;     /* EventSource, SOURCE_ABSENT when absent */
    char *source_raw;             /* EventSource as written, NULL when absent (api < 2019-08-01) */
    bool has_duration;            /* DurationInSeconds present (api >= 2020-07-01) */
    int64_t duration_s;           /* DurationInSeconds: -1 unknown, 0 no impact, else seconds */
} sc_event_t;

typedef struct sc_doc {
    int64_t incarnation; /* DocumentIncarnation */
    sc_event_t *events;  /* events in document order (NULL when none) */
    size_t n_events;     /* entries in events */
} sc_doc_t;

/* Deep copy of src into *dst (every string duplicated). 0 or -ENOMEM (then *dst is zeroed). */
int sc_event_copy(const sc_event_t *src, sc_event_t *dst);
/* Frees what ev owns (its strings) and zeroes it; ev itself is the caller's. */
void sc_event_clear(sc_event_t *ev);

/* Parses an IMDS scheduled-events document of len bytes (need not be NUL-terminated).
 * On success *ret_doc is the caller's (sc_doc_destroy). On error returns SC_E_* (SC_E_EMPTY,
 * SC_E_NOT_JSON, SC_E_TRUNCATED, SC_E_TOO_BIG, SC_E_PARSE) or -ENOMEM / -EINVAL, and writes a
 * precise message into err when err is not NULL (e.g. "Events[1].NotBefore: \"Mon, 32 Apr\"
 * is neither RFC 1123 nor ISO 8601"). */
int sc_doc_parse(const char *buf, size_t len, sc_doc_t **ret_doc, char *err, size_t errlen);
/* sc_doc_parse that keeps the valid events when others are malformed: one event Azure gets wrong
 * must not hide the rest (every VM of a set gets the same document). An event sc_doc_parse
 * would refuse — a required field missing or of the wrong type, a bad NotBefore, Resources not
 * an array, a value over a limit, an EventId repeating a kept event's — is left out, and its
 * reason, naming its position and the field ("Events[2].EventId: missing"), is appended to
 * *ret_malformed (*ret_n_malformed strings of at most SC_DOC_REASON_MAX - 1 bytes, in document
 * order; caller's: sc_strv_free; NULL when none). Kept events plus malformed ones make the
 * length of Events. The document itself must be valid: bytes that are not one JSON object, a
 * missing or bad DocumentIncarnation, Events missing, not an array or over SC_DOC_MAX_EVENTS
 * give the errors of sc_doc_parse and nothing else. ret_malformed and ret_n_malformed may both
 * be NULL (reasons dropped). */
int sc_doc_parse_lenient(const char *buf, size_t len, sc_doc_t **ret_doc, char ***ret_malformed,
                         size_t *ret_n_malformed, char *err, size_t errlen);
/* Frees a document; takes NULL and half-built documents, and nulls the pointer. */
void sc_doc_destroy(sc_doc_t **doc);
/* Deep copy of doc into *ret_copy (the caller's). 0, -EINVAL or -ENOMEM. */
int sc_doc_dup(const sc_doc_t *doc, sc_doc_t **ret_copy);
/* Serializes doc in the IMDS shape (one line), writing only the fields present (raw texts
 * for type, status, source and NotBefore). The result round-trips through sc_doc_parse to an
 * equal document. *ret_json is the caller's (free). 0, -EINVAL or -ENOMEM. */
int sc_doc_to_json(const sc_doc_t *doc, char **ret_json);
/* sc_doc_to_json as a JSON object: {"DocumentIncarnation", "Events": [...]}. *ret_json is the
 * caller's (json_object_put). 0, -EINVAL or -ENOMEM. */
int sc_doc_to_json_object(const sc_doc_t *doc, json_object **ret_json);
/* sc_doc_parse of an already parsed JSON value obj (borrowed): the same rules and messages,
 * but the byte, depth and UTF-8 limits are the caller's tokenizer's. */
int sc_doc_from_json(json_object *obj, sc_doc_t **ret_doc, char *err, size_t errlen);
/* The IMDS-shaped JSON object of one event (the "Events" entry sc_doc_to_json writes, same
 * fields and texts). *ret_json is the caller's (json_object_put). 0, -EINVAL (NULL, an invalid
 * EventId, Resources missing) or -ENOMEM. */
int sc_event_to_json(const sc_event_t *ev, json_object **ret_json);
/* Reads one event from the JSON object obj with the rules sc_doc_parse applies to each entry
 * of Events (required and optional fields, types, limits, NotBefore formats, unknown values
 * kept, unknown fields ignored). On success *ret is filled (the caller's: sc_event_clear); on
 * error *ret is untouched, the SC_E_* code (SC_E_PARSE, SC_E_TOO_BIG), -ENOMEM or -EINVAL is
 * returned and err names the field ("NotBefore: \"x\" is neither RFC 1123 nor ISO 8601"). */
int sc_event_from_json(json_object *obj, sc_event_t *ret, char *err, size_t errlen);
/* The event with this EventId (case-insensitive), borrowed from doc; NULL if none. */
const sc_event_t *sc_doc_find(const sc_doc_t *doc, const char *event_id);

/* Whether s is a plausible EventId: 1..SC_EVENT_ID_MAX of [A-Za-z0-9_-], first alnum. */
bool sc_event_id_valid(const char *s);
/* Whether two EventIds are equal, ignoring ASCII case. NULL equals nothing. */
bool sc_event_id_equal(const char *a, const char *b);
/* Whether vm_name is in ev's Resources: compared exactly as Azure writes the names (no case
 * folding), or equal after dropping one leading '_' on either side (api 2017-03-01 wrote IaaS
 * names as "_name"). */
bool sc_event_names(const sc_event_t *ev, const char *vm_name);
/* Whether a and b have the same content: EventIds equal ignoring case, every other field
 * (raw texts, Resources in order, presence of optional fields) equal exactly. */
bool sc_event_equal(const sc_event_t *a, const sc_event_t *b);
/* Whether the event has started (EventStatus "Started"). */
bool sc_event_is_started(const sc_event_t *ev);

/* Parses a NotBefore value: "" -> *ret_has = false; RFC 1123 "Mon, 11 Apr 2022 22:26:58 GMT"
 * (GMT, UTC or +0000; the weekday name must be a valid one but is not checked against the
 * date); ISO 8601 "2016-09-19T18:29:47Z", also with a fraction (dropped) and a "+HH:MM" /
 * "-HH:MM" offset (applied). Years 1970..9999. Returns 0 or SC_E_PARSE; writes the outputs
 * only on success. */
int sc_notbefore_parse(const char *s, bool *ret_has, int64_t *ret_unix_s);

typedef struct sc_doc_diff {
    const sc_event_t **added;   /* in new_doc, EventId not in old_doc */
    size_t n_added;             /* entries in added */
    const sc_event_t **changed; /* in new_doc, same EventId in old_doc with other content */
    size_t n_changed;           /* entries in changed */
    const sc_event_t **removed; /* in old_doc, EventId not in new_doc */
    size_t n_removed;           /* entries in removed */
} sc_doc_diff_t;

/* Compares two documents by EventId (case-insensitive), ignoring the incarnations.
 * added/changed point into new_doc, removed into old_doc (borrowed: keep both documents alive
 * while using the diff); each list is in document order and NULL when empty. old_doc may be
 * NULL (everything added). Returns 0, -EINVAL (new_doc NULL) or -ENOMEM; release the lists
 * with sc_doc_diff_release. */
int sc_doc_diff(const sc_doc_t *old_doc, const sc_doc_t *new_doc, sc_doc_diff_t *ret_diff);
/* Frees the lists of a diff and zeroes it; takes a zeroed or NULL diff. */
void sc_doc_diff_release(sc_doc_diff_t *diff);

/* Builds the approval POST body {"StartRequests":[{"EventId":"..."},...]} for n ids.
 * -EINVAL for n == 0, n > SC_DOC_MAX_EVENTS, an id that is not sc_event_id_valid, or the same
 * id twice (ignoring case). *ret_body is the caller's (free). */
int sc_approval_body(const char *const *event_ids, size_t n, char **ret_body);
/* Parses an approval body: an object with a non-empty "StartRequests" array of objects each
 * holding exactly one valid "EventId"; the 2017-03-01 extra "DocumentIncarnation" (integer
 * >= 0 or a string of digits) is accepted; any other field is rejected. On success
 * *ret_ids (n strings, caller's: sc_strv_free) and *ret_n. Errors as sc_doc_parse. */
int sc_approval_parse(const char *buf, size_t len, char ***ret_ids, size_t *ret_n, char *err,
                      size_t errlen);
/* Frees n strings and the array; takes NULL. */
void sc_strv_free(char **v, size_t n);

/* "Freeze", "Reboot", "Redeploy", "Preempt", "Terminate"; "Unknown" otherwise. */
const char *sc_event_type_name(sc_event_type_t t);
/* "Scheduled", "Started"; "Unknown" otherwise. */
const char *sc_event_status_name(sc_event_status_t s);
/* "Absent", "Platform", "User"; "Unknown" otherwise. */
const char *sc_event_source_name(sc_event_source_t s);

#endif
