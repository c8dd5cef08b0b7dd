/* sc_msg: the message catalog of the agent<->coordinator and coordinator<->coordinator
 * protocol, and its codec (see proto/README.md for what each message means).
 *
 * One message = one ZMQ frame (a ROUTER adds the routing-id frame in front) = one JSON object
 * of at most SC_MSG_MAX_BYTES:
 *
 *   {"v":1,"type":"heartbeat","from":"vm-0","term":7,"seq":42, ...fields of the type...}
 *
 * The codec has no I/O: bytes in, structs out. Decoding is strict and bounded, and either
 * returns a whole, valid message or nothing:
 *  - the buffer: at most SC_MSG_MAX_BYTES, no NUL byte, valid UTF-8, one JSON object with
 *    nothing after it but whitespace, JSON nesting at most SC_MSG_MAX_DEPTH;
 *  - the envelope: "v" must be SC_PROTO_VERSION (other versions are refused, not guessed),
 *    "type" one of the catalog, "from" a member name (sc_msg_name_valid), "term" and "seq"
 *    integers 0..INT64_MAX (every integer is a JSON integer: 1.0 and "1" are refused);
 *  - the body: every field of the type is required (except the ones marked optional), of
 *    the right JSON type and in range; strings hold no NUL and are within their limit;
 *    arrays are within their limit; **unknown fields are refused in protocol v1** (at the
 *    top level and inside entries; the IMDS document and event objects carried by
 *    "document" and "order" follow sc_event.h, which ignores unknown IMDS fields);
 *  - limitation: a JSON object repeating a key keeps the last value (json-c does).
 * On error: SC_E_TOO_BIG (buffer or an array over its limit), SC_E_PROTO (anything else),
 * -ENOMEM, -EINVAL (NULL arguments), with a precise reason naming the field in err
 * ("hook_progress.exit_status: 300 out of range -1..255").
 *
 * Encoding checks the message with the same rules, field by field, without decoding its
 * output (a sender never emits what a receiver would refuse): -EINVAL when a field is invalid
 * (sc_msg_validate gives the reason).
 *
 * Ownership: a sc_msg_t comes from sc_msg_new() or sc_msg_decode() and is freed by
 * sc_msg_destroy(). Its `char *` fields, lists and documents are owned by the message
 * (malloc'd; set them with the helpers below or with strdup / ownership transfer). */
#ifndef SC_MSG_H
#define SC_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sc_event.h"
#include "sc_proto_version.h"

#define SC_MSG_MAX_BYTES (1024 * 1024)      /* bytes in one message (also ZMQ_MAXMSGSIZE) */
#define SC_MSG_MAX_DEPTH 16                 /* JSON nesting of one message, entry data included */
#define SC_NAME_MAX 128                     /* bytes of a member name: [A-Za-z0-9._-], 1..128 */
#define SC_MSG_MAX_TEXT 4096                /* bytes of a free text (detail, message, reason) */
#define SC_MSG_VERSION_MAX 64               /* bytes of agent_version (printable ASCII) */
#define SC_MSG_BOOT_ID_MAX 64               /* bytes of boot_id: [A-Za-z0-9-], 1..64 */
#define SC_MSG_MAX_CAPS 16                  /* capabilities in a hello */
#define SC_MSG_CAP_MAX 32                   /* bytes of one capability: [a-z0-9-], 1..32 */
#define SC_MSG_MAX_EVENTS SC_DOC_MAX_EVENTS /* EventIds in approve_via / approve_result */
#define SC_MSG_RESULT_MAX 64             /* bytes of approve_result.result: [A-Za-z0-9_], 1..64 */
#define SC_MSG_MAX_ENTRIES 1024          /* entries in one append */
#define SC_MSG_SNAPSHOT_CHUNK_MAX 393216 /* bytes of one snapshot chunk (escaped: < 1 MiB) */
#define SC_MSG_KIND_MAX 64               /* bytes of an entry kind: [a-z0-9_.-], 1..64 */
#define SC_MSG_HASH_MAX 128              /* bytes of a digest (members_hash ...): hex, 0..128 */
#define SC_MSG_DOMAIN_MAX 1023           /* largest fault / update domain (-1 = unknown) */
#define SC_MSG_LEASE_MAX_MS 3600000      /* longest leader.lease_ms (1..this) */
#define SC_MSG_RUNNING_HOOKS_MAX 1024    /* largest heartbeat.running_hooks */
#define SC_MSG_PROTO_MAX 65535           /* largest hello.proto_min / proto_max */
#define SC_MSG_ATTEMPT_MAX 1000          /* largest order / hook_progress attempt (1..this) */
#define SC_MSG_MAX_MALFORMED 8           /* reasons in document.malformed */
#define SC_MSG_MALFORMED_MAX 256         /* bytes of one of them (1..this) */

/* Capability names an agent may announce (others are kept, not refused). */
#define SC_CAP_HOOKS "hooks"             /* runs prepare / recover hooks on orders */
#define SC_CAP_APPROVE_VIA "approve-via" /* can POST approvals for the leader */
#define SC_CAP_STANDALONE "standalone"   /* has the standalone safety net */
#define SC_CAP_ORDER_UNTIL "order-until" /* reads order.until_ms (older agents refuse it) */

typedef enum {
    SC_MSG_HELLO,          /* agent -> coordinator: who I am */
    SC_MSG_HEARTBEAT,      /* agent -> coordinators: alive, every second */
    SC_MSG_DOCUMENT,       /* agent -> coordinator: the IMDS document I see */
    SC_MSG_DOC_REQUEST,    /* coordinator -> agent: send your document again */
    SC_MSG_HOOK_PROGRESS,  /* agent -> coordinator: a hook started / ended */
    SC_MSG_ORDER,          /* leader -> agent: run prepare / recover for an event */
    SC_MSG_APPROVE_VIA,    /* leader -> agent: POST the approval of these events for me */
    SC_MSG_APPROVE_RESULT, /* agent -> leader: how that POST went */
    SC_MSG_LEADER,         /* leader -> agents and peers: I lead this term */
    SC_MSG_VOTE_REQUEST,   /* candidate -> voters: vote for me in this term */
    SC_MSG_VOTE,           /* voter -> candidate: granted or not */
    SC_MSG_APPEND,         /* leader -> followers: decision-log entries (or empty: heartbeat) */
    SC_MSG_APPEND_ACK,     /* follower -> leader: how far my log matches */
    SC_MSG_NACK,           /* any receiver -> sender: I refused your message ref_seq */
    SC_MSG_TIMEOUT_NOW,    /* leader -> a voter: campaign now, I hand you the lead */
    SC_MSG_SNAPSHOT,       /* leader -> a follower too far behind: a chunk of my snapshot */
    SC_MSG_TYPE_MAX
} sc_msg_type_t;

typedef enum {
    SC_MSG_PHASE_PREPARE, /* "prepare" */
    SC_MSG_PHASE_RECOVER, /* "recover" */
    SC_MSG_PHASE_MAX
} sc_msg_phase_t;

typedef enum {
    SC_MSG_HOOK_STARTED,     /* "started": the hook process was started */
    SC_MSG_HOOK_DONE,        /* "done": exited 0 */
    SC_MSG_HOOK_FAILED,      /* "failed": exited non-zero or could not start */
    SC_MSG_HOOK_TIMED_OUT,   /* "timed_out": killed at --hook-timeout */
    SC_MSG_HOOK_INTERRUPTED, /* "interrupted": the agent died while it ran (found at restart) */
    SC_MSG_HOOK_REFUSED,     /* "refused": not executed now (e.g. queue full): may be re-ordered */
    SC_MSG_HOOK_SKIPPED,     /* "skipped": nothing run (older agents: a recover whose prepare
                                never ran; agents now run it, SCHEDCOORD_PREPARED=0) */
    SC_MSG_HOOK_STATE_MAX
} sc_msg_hook_state_t;

typedef enum {
    SC_MSG_ORIGIN_ORDER,      /* "order": run on an order of the leader */
    SC_MSG_ORIGIN_STANDALONE, /* "standalone": run by the safety net without a leader */
    SC_MSG_ORIGIN_MAX
} sc_msg_origin_t;

/* Why a decode failed, for the daemons' rejection counters. */
typedef enum {
    SC_MSG_REJ_NONE,     /* not rejected */
    SC_MSG_REJ_TOO_BIG,  /* over SC_MSG_MAX_BYTES or an array limit */
    SC_MSG_REJ_NOT_JSON, /* not one JSON object (syntax, NUL byte, bad UTF-8, trailing data) */
    SC_MSG_REJ_VERSION,  /* "v" missing or not SC_PROTO_VERSION */
    SC_MSG_REJ_TYPE,     /* "type" missing or not in the catalog */
    SC_MSG_REJ_ENVELOPE, /* "from", "term" or "seq" missing or invalid */
    SC_MSG_REJ_MISSING,  /* a required body field is missing */
    SC_MSG_REJ_FIELD,    /* a body field has the wrong type or an invalid value */
    SC_MSG_REJ_UNKNOWN,  /* a field this version does not know */
    SC_MSG_REJ_DOCUMENT, /* the IMDS document or event object was refused by sc_event */
    SC_MSG_REJ_NOMEM,    /* out of memory (not the sender's fault) */
    SC_MSG_REJ_MAX
} sc_msg_reject_t;

typedef struct sc_msg_hello {
    char name[SC_NAME_MAX + 1];                             /* member name (== from) */
    int fault_domain;                                       /* platformFaultDomain, -1 unknown */
    int update_domain;                                      /* platformUpdateDomain, -1 unknown */
    char agent_version[SC_MSG_VERSION_MAX + 1];             /* e.g. "0.1.0" */
    int proto_min;                                          /* oldest protocol spoken (>= 1) */
    int proto_max;                                          /* newest protocol spoken (>= min) */
    char capabilities[SC_MSG_MAX_CAPS][SC_MSG_CAP_MAX + 1]; /* SC_CAP_* and unknown ones */
    size_t n_capabilities;                                  /* entries used in capabilities */
    char boot_id[SC_MSG_BOOT_ID_MAX + 1];                   /* random per agent process start */
    int64_t incarnation;                                    /* last incarnation seen, -1 none */
} sc_msg_hello_t;

typedef struct sc_msg_heartbeat {
    int64_t incarnation;  /* last incarnation seen, -1 none */
    int running_hooks;    /* hooks running now (0..SC_MSG_RUNNING_HOOKS_MAX) */
    bool standalone;      /* the standalone safety net is active */
    int64_t imds_down_ms; /* 0: the latest IMDS poll gave a valid document; else ms since the
                           * last one that did; -1: none yet, or not said (optional) */
} sc_msg_heartbeat_t;

typedef struct sc_msg_document {
    int64_t incarnation;    /* == document->incarnation (checked) */
    int64_t observed_at_ms; /* wall clock (unix ms) when the agent read it, >= 0 */
    sc_doc_t *document;     /* the IMDS document, owned (required) */
    char **malformed;       /* optional: why IMDS events were left out of document
                               (sc_doc_parse_lenient), owned (sc_msg_add_malformed) */
    size_t n_malformed;     /* entries in malformed, 0..SC_MSG_MAX_MALFORMED (0: absent) */
} sc_msg_document_t;

typedef struct sc_msg_hook_progress {
    char event[SC_EVENT_ID_MAX + 1]; /* EventId (sc_event_id_valid) */
    sc_msg_phase_t phase;            /* prepare / recover */
    sc_msg_hook_state_t state;       /* started / done / failed / ... */
    int exit_status;                 /* 0..255, -1 none (not exited, signalled, not run) */
    sc_msg_origin_t origin;          /* order / standalone */
    uint64_t order_term;             /* term of the order it runs for (0 for standalone) */
    char *detail;                    /* output tail or reason, <= SC_MSG_MAX_TEXT, owned */
    int attempt; /* the run's attempt (the order's), 1..SC_MSG_ATTEMPT_MAX; optional: 1 */
} sc_msg_hook_progress_t;

typedef struct sc_msg_order {
    sc_msg_phase_t action;           /* prepare / recover */
    char event[SC_EVENT_ID_MAX + 1]; /* EventId */
    int attempt; /* drain attempt of the event on this VM, 1..SC_MSG_ATTEMPT_MAX; optional: 1 */
    sc_doc_t *event_doc; /* optional (NULL): a document holding exactly one event, the
                            ordered one (its EventId == event), for the hook env; owned.
                            On the wire it is the bare IMDS event object, so its incarnation
                            is not sent (0 after decoding; sc_msg_equal ignores it). */
    bool rehearsal;      /* optional (false, left out): the event is a rehearsal's, nothing
                            will be POSTed for it; the hook sees SCHEDCOORD_REHEARSAL=1 */
    uint64_t index;      /* optional (0, left out): the leader's commit index when it sent the
                            order; with the envelope's term, the fence: an agent refuses an order
                            older, in (term, index), than the newest it has seen */
    int64_t until_ms;    /* optional (0, left out), prepare only: unix ms after which the
                            agent must not start it (it answers "refused"): when Azure may take
                            another domain down undrained (an event's NotBefore); the order
                            is sent again later */
} sc_msg_order_t;

typedef struct sc_msg_events {
    char (*events)[SC_EVENT_ID_MAX + 1]; /* EventIds, owned (sc_msg_add_event) */
    size_t n_events;                     /* 1..SC_MSG_MAX_EVENTS, no duplicates */
    uint64_t index; /* approve_via, optional (0, left out): the fence, as order.index */
} sc_msg_events_t;

typedef struct sc_msg_approve_result {
    char (*events)[SC_EVENT_ID_MAX + 1]; /* EventIds of the approve_via answered, owned */
    size_t n_events;                     /* 1..SC_MSG_MAX_EVENTS, no duplicates */
    int http_status;                     /* IMDS HTTP status, 0 when no response (0..999) */
    char result[SC_MSG_RESULT_MAX + 1];  /* "OK" or an error name (sc_errname) */
    char *message;                       /* human text, <= SC_MSG_MAX_TEXT, owned */
} sc_msg_approve_result_t;

typedef struct sc_msg_leader {
    char leader[SC_NAME_MAX + 1];           /* the leader's member name */
    int64_t lease_ms;                       /* lease length, 1..SC_MSG_LEASE_MAX_MS */
    char members_hash[SC_MSG_HASH_MAX + 1]; /* optional ("" = absent): hex digest */
    uint64_t index; /* optional (0, left out): the leader's commit index (the fence) */
} sc_msg_leader_t;

typedef struct sc_msg_vote_request {
    char candidate[SC_NAME_MAX + 1]; /* == from */
    uint64_t last_log_index;         /* index of the candidate's last log entry */
    uint64_t last_log_term;          /* term of that entry */
    bool pre_vote;                   /* optional (false): would you vote for me in term? (the
                                        envelope's term is the one asked about, not bumped) */
    bool transfer;                   /* optional (false): a leadership transfer's campaign */
    char voters_digest[SC_MSG_HASH_MAX + 1]; /* optional (""): the candidate's sc_voters digest */
} sc_msg_vote_request_t;

typedef struct sc_msg_vote {
    bool granted;  /* the vote for envelope.term is given to the receiver */
    bool pre_vote; /* optional (false): the answer to a pre-vote request */
    char *reason;  /* why (especially when refused), <= SC_MSG_MAX_TEXT, owned */
} sc_msg_vote_t;

typedef struct sc_msg_entry {
    uint64_t term;                  /* term that created the entry (>= 1) */
    uint64_t index;                 /* position in the log (>= 1, consecutive) */
    char kind[SC_MSG_KIND_MAX + 1]; /* what it records, e.g. "approve", "drain" */
    char *data;                     /* compact JSON text of an object, owned */
    char *reason;    /* optional (NULL, left out): why it was decided, <= SC_MSG_MAX_TEXT, owned */
    int64_t wall_ms; /* optional (0, left out): when it was decided (unix ms) */
} sc_msg_entry_t;

typedef struct sc_msg_append {
    char leader[SC_NAME_MAX + 1]; /* == from */
    uint64_t prev_index;          /* index of the entry just before entries[0] */
    uint64_t prev_term;           /* its term */
    uint64_t commit_index;        /* the leader's commit index */
    sc_msg_entry_t *entries;      /* owned (sc_msg_add_entry); indices prev_index+1, +2, ... */
    size_t n_entries;             /* 0..SC_MSG_MAX_ENTRIES */
    int64_t round;                /* optional (0, left out): the leader's heartbeat round */
} sc_msg_append_t;

typedef struct sc_msg_append_ack {
    bool success;         /* the entries were appended (the prev_* matched) */
    uint64_t match_index; /* last index known to match the leader's log */
    int64_t round;        /* optional (0, left out): the append's round, echoed */
    int64_t received;     /* optional (-1, left out): answering a snapshot, its bytes held */
} sc_msg_append_ack_t;

typedef struct sc_msg_snapshot {
    char leader[SC_NAME_MAX + 1]; /* == from */
    uint64_t last_index;          /* the snapshot includes the log up to this index */
    uint64_t last_term;           /* its term (<= the envelope's) */
    uint64_t total;               /* bytes of the whole snapshot (1..) */
    uint64_t offset;              /* where data goes in it (<= total) */
    char *data;                   /* its bytes offset .. offset + strlen, owned (UTF-8 text) */
    int64_t round;                /* optional (0, left out): the leader's heartbeat round */
} sc_msg_snapshot_t;

typedef struct sc_msg_nack {
    uint64_t ref_seq; /* seq of the refused message */
    char *reason;     /* why, <= SC_MSG_MAX_TEXT, owned */
} sc_msg_nack_t;

typedef struct sc_msg {
    sc_msg_type_t type;         /* which body is valid */
    int version;                /* "v": SC_PROTO_VERSION */
    char from[SC_NAME_MAX + 1]; /* sender's member name */
    uint64_t term;              /* term addressed to / newest known by the sender, <= INT64_MAX */
    uint64_t seq;               /* per-sender increasing, <= INT64_MAX */
    char members_digest[SC_MSG_HASH_MAX + 1]; /* coordinator-to-coordinator types only
                                                 (vote_request, vote, append, append_ack, snapshot,
                                                 timeout_now), optional ("" = absent): the sender's
                                                 members digest (sc_voters_members_digest), hex */
    union {
        sc_msg_hello_t hello;                   /* SC_MSG_HELLO */
        sc_msg_heartbeat_t heartbeat;           /* SC_MSG_HEARTBEAT */
        sc_msg_document_t document;             /* SC_MSG_DOCUMENT */
        sc_msg_hook_progress_t hook_progress;   /* SC_MSG_HOOK_PROGRESS */
        sc_msg_order_t order;                   /* SC_MSG_ORDER */
        sc_msg_events_t approve_via;            /* SC_MSG_APPROVE_VIA */
        sc_msg_approve_result_t approve_result; /* SC_MSG_APPROVE_RESULT */
        sc_msg_leader_t leader;                 /* SC_MSG_LEADER */
        sc_msg_vote_request_t vote_request;     /* SC_MSG_VOTE_REQUEST */
        sc_msg_vote_t vote;                     /* SC_MSG_VOTE */
        sc_msg_append_t append;                 /* SC_MSG_APPEND */
        sc_msg_append_ack_t append_ack;         /* SC_MSG_APPEND_ACK */
        sc_msg_snapshot_t snapshot;             /* SC_MSG_SNAPSHOT */
        sc_msg_nack_t nack;                     /* SC_MSG_NACK */
    };                                          /* SC_MSG_DOC_REQUEST has no body */
} sc_msg_t;

/* A new message of this type with the envelope filled and a zeroed body whose integer
 * fields hold their "none" values (-1 for domains, incarnations and exit_status; proto_min /
 * proto_max = SC_PROTO_VERSION; attempt = 1). from must be sc_msg_name_valid. *ret_msg is the
 * caller's (sc_msg_destroy). 0, -EINVAL or -ENOMEM. */
int sc_msg_new(sc_msg_type_t type, const char *from, uint64_t term, uint64_t seq,
               sc_msg_t **ret_msg);
/* Frees a message and everything it owns; takes NULL and half-built messages; nulls *msg. */
void sc_msg_destroy(sc_msg_t **msg);

/* Encodes msg as one JSON object (compact, no trailing NUL counted in *ret_len; the buffer
 * is NUL-terminated). *ret_buf is the caller's (free). 0, -EINVAL (invalid message: see
 * sc_msg_validate), SC_E_TOO_BIG (over SC_MSG_MAX_BYTES) or -ENOMEM. */
int sc_msg_encode(const sc_msg_t *msg, char **ret_buf, size_t *ret_len);
/* Checks msg with the decoder's rules. 0 or -EINVAL with the reason in err (may be NULL). */
int sc_msg_validate(const sc_msg_t *msg, char *err, size_t errlen);
/* Decodes len bytes (need not be NUL-terminated). On success *ret_msg is the caller's.
 * On error SC_E_PROTO / SC_E_TOO_BIG / -ENOMEM / -EINVAL, the reason in err (may be NULL),
 * and nothing is allocated. */
int sc_msg_decode(const void *buf, size_t len, sc_msg_t **ret_msg, char *err, size_t errlen);
/* sc_msg_decode that also tells the class of a rejection: *out_reject is written on every
 * call (SC_MSG_REJ_NONE on success) when out_reject is not NULL. */
int sc_msg_decode_ex(const void *buf, size_t len, sc_msg_t **ret_msg, sc_msg_reject_t *out_reject,
                     char *err, size_t errlen);
/* Whether two messages have the same envelope and body (documents compared event by event;
 * NULL text == ""). */
bool sc_msg_equal(const sc_msg_t *a, const sc_msg_t *b);

/* Replaces the owned text *field (detail, message, reason) with a copy of len bytes of s
 * made safe for the wire: invalid UTF-8 and NUL bytes become '?', and when longer than
 * SC_MSG_MAX_TEXT it keeps the last bytes (keep_tail, for output tails) or the first ones,
 * cut on a character boundary. s may be NULL (empty). 0 or -ENOMEM (field unchanged). */
int sc_msg_set_text(char **field, const char *s, size_t len, bool keep_tail);
/* Appends a reason to a document's malformed list, made safe for the wire like
 * sc_msg_set_text and cut to SC_MSG_MALFORMED_MAX bytes. 0, -EINVAL (not a document, empty
 * reason), SC_E_TOO_BIG (SC_MSG_MAX_MALFORMED reached) or -ENOMEM. */
int sc_msg_add_malformed(sc_msg_t *msg, const char *reason);
/* Appends an EventId to an approve_via or approve_result message. 0, -EINVAL (wrong type,
 * invalid or duplicate id), SC_E_TOO_BIG (SC_MSG_MAX_EVENTS reached) or -ENOMEM. */
int sc_msg_add_event(sc_msg_t *msg, const char *event_id);
/* Appends an entry to an append message; data_json is the JSON text of an object (NULL:
 * "{}"), stored compact. 0, -EINVAL (wrong type, bad kind, data not an object),
 * SC_E_TOO_BIG (SC_MSG_MAX_ENTRIES reached) or -ENOMEM. */
int sc_msg_add_entry(sc_msg_t *msg, uint64_t term, uint64_t index, const char *kind,
                     const char *data_json);
/* Appends a capability to a hello. 0, -EINVAL (bad name, duplicate), SC_E_TOO_BIG. */
int sc_msg_add_capability(sc_msg_t *msg, const char *cap);
/* Whether a hello announces this capability. */
bool sc_msg_has_capability(const sc_msg_t *msg, const char *cap);

/* Whether s is a valid member name: 1..SC_NAME_MAX bytes of [A-Za-z0-9._-]. */
bool sc_msg_name_valid(const char *s);

/* Names as on the wire ("hello", "prepare", "timed_out", "standalone"); "?" when out of
 * range. The parse functions return 0 or -EINVAL. */
const char *sc_msg_type_name(sc_msg_type_t type);
int sc_msg_type_parse(const char *s, sc_msg_type_t *ret_type);
const char *sc_msg_phase_name(sc_msg_phase_t phase);
int sc_msg_phase_parse(const char *s, sc_msg_phase_t *ret_phase);
const char *sc_msg_hook_state_name(sc_msg_hook_state_t state);
int sc_msg_hook_state_parse(const char *s, sc_msg_hook_state_t *ret_state);
const char *sc_msg_origin_name(sc_msg_origin_t origin);
int sc_msg_origin_parse(const char *s, sc_msg_origin_t *ret_origin);
/* "too_big", "not_json", "version", ... for metrics labels. */
const char *sc_msg_reject_name(sc_msg_reject_t reject);

#endif
