/* sc_curve: CurveZMQ transport security — key pairs, the members' keyring, the ZAP handler
 * that authenticates clients against it, and socket setup helpers.
 *
 * Model (see proto/README.md): every member has a key pair (`schedcoordctl keygen`,
 * coordinator/sc_keygen); every VM
 * holds the same keyring file listing each member's public key. Coordinators' ROUTER sockets
 * are CURVE servers; agents' and peers' DEALER sockets are CURVE clients that know the
 * server's public key from the keyring. A ZAP handler in the server's process accepts a client
 * only if its public key is in the keyring and gives its member name as the ZMQ "User-Id"
 * of every message it sends (zmq_msg_gets(msg, "User-Id")); the receiver must check that
 * the message's "from" equals it. Plain text (NULL mechanism) only with --insecure.
 *
 * Key pair file (mode 0600, refused when group/other can read it):
 *
 *   # schedcoord CURVE key pair of NAME. Keep it secret.
 *   public = <40 Z85 characters>
 *   secret = <40 Z85 characters>
 *
 * Keyring file: one member per line, "NAME PUBLIC_Z85"; blank lines and lines starting with
 * '#' are ignored; names are sc_msg_name_valid; duplicate names or keys are refused.
 *
 * The library never logs: errors come back with a reason; ZAP decisions are reported
 * through a callback and counters. */
#ifndef SC_CURVE_H
#define SC_CURVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SC_CURVE_KEY_Z85_LEN 40        /* Z85 text of a 32-byte key */
#define SC_KEYRING_MAX 4096            /* members in a keyring */
#define SC_KEYFILE_MAX_BYTES 4096      /* bytes of a key pair file */
#define SC_KEYRING_MAX_BYTES (1 << 20) /* bytes of a keyring file */
#define SC_ZAP_DOMAIN "schedcoord"     /* ZMQ_ZAP_DOMAIN set on our servers */

typedef struct sc_curve_keypair {
    char public_z85[SC_CURVE_KEY_Z85_LEN + 1]; /* public key, Z85 */
    char secret_z85[SC_CURVE_KEY_Z85_LEN + 1]; /* secret key, Z85 */
} sc_curve_keypair_t;

/* Whether this libzmq supports CURVE (zmq_has("curve")). */
bool sc_curve_available(void);
/* Whether s is 40 Z85 characters that decode to a key. */
bool sc_curve_key_valid(const char *s);

/* Makes a new key pair. 0, -ENOTSUP (no CURVE in libzmq) or -EIO. */
int sc_curve_keygen(sc_curve_keypair_t *ret_kp);
/* Reads a key pair file (format above) and checks that the public key matches the secret
 * one. 0, -ENOENT/-EACCES/... (cannot open), -EPERM (readable by group or others),
 * SC_E_TOO_BIG, SC_E_PARSE (bad line, missing or invalid key, mismatch); reason in err. */
int sc_curve_keypair_load(const char *path, sc_curve_keypair_t *ret_kp, char *err, size_t errlen);
/* Writes a key pair file with mode 0600, refusing to overwrite an existing file (-EEXIST).
 * 0 or -errno; reason in err. */
int sc_curve_keypair_save(const char *path, const sc_curve_keypair_t *kp, char *err, size_t errlen);

typedef struct sc_keyring sc_keyring_t;

/* An empty keyring. 0 or -ENOMEM. */
int sc_keyring_new(sc_keyring_t **ret_ring);
/* Adds a member. 0, -EINVAL (bad name or key), -EEXIST (name or key already there),
 * SC_E_TOO_BIG (SC_KEYRING_MAX), -ENOMEM; reason in err (may be NULL). */
int sc_keyring_add(sc_keyring_t *ring, const char *name, const char *public_z85, char *err,
                   size_t errlen);
/* Reads a keyring file (format above). 0, -errno (cannot open), SC_E_TOO_BIG,
 * SC_E_PARSE ("keyring:3: ..."), -ENOMEM; reason in err. */
int sc_keyring_load(const char *path, sc_keyring_t **ret_ring, char *err, size_t errlen);
/* Deep copy. 0 or -ENOMEM. */
int sc_keyring_dup(const sc_keyring_t *ring, sc_keyring_t **ret_copy);
/* The member name owning this public key (Z85), borrowed; NULL if none. */
const char *sc_keyring_find_key(const sc_keyring_t *ring, const char *public_z85);
/* The public key (Z85) of this member, borrowed; NULL if none. */
const char *sc_keyring_find_name(const sc_keyring_t *ring, const char *name);
/* Number of members. */
size_t sc_keyring_size(const sc_keyring_t *ring);
/* Frees; takes NULL; nulls *ring. */
void sc_keyring_destroy(sc_keyring_t **ring);

typedef enum {
    SC_ZAP_ACCEPTED,          /* CURVE client with a key of the keyring */
    SC_ZAP_REFUSED_KEY,       /* CURVE client with an unknown key */
    SC_ZAP_REFUSED_MECH,      /* another mechanism (NULL = plain text, PLAIN) */
    SC_ZAP_REFUSED_MALFORMED, /* a ZAP request that does not follow RFC 27 */
    SC_ZAP_DECISION_MAX
} sc_zap_decision_t;

/* One ZAP decision. Called on the ZAP thread (make it thread-safe); the strings are borrowed
 * for the call: mechanism ("CURVE", "NULL", ...), address of the peer ("127.0.0.1"), name
 * (the member, NULL unless accepted), public_z85 ("" unless CURVE). */
typedef void (*sc_zap_cb)(void *cb_data, sc_zap_decision_t decision, const char *mechanism,
                          const char *address, const char *name, const char *public_z85);

typedef struct sc_zap_stats {
    uint64_t accepted;          /* SC_ZAP_ACCEPTED */
    uint64_t refused_key;       /* SC_ZAP_REFUSED_KEY */
    uint64_t refused_mechanism; /* SC_ZAP_REFUSED_MECH */
    uint64_t malformed;         /* SC_ZAP_REFUSED_MALFORMED */
} sc_zap_stats_t;

typedef struct sc_zap sc_zap_t;

/* Starts the ZAP handler of context zctx: a thread bound to inproc://zeromq.zap.01 that
 * accepts a CURVE client only when its key is in ring (a copy is kept) and refuses
 * everything else. Start it before binding any CURVE server socket. cb may be NULL.
 * 0, -ENOTSUP (no CURVE), -EADDRINUSE (another handler on zctx), -ENOMEM or -errno. */
int sc_zap_start(void *zctx, const sc_keyring_t *ring, sc_zap_cb cb, void *cb_data,
                 sc_zap_t **ret_zap);
/* A snapshot of the counters (thread-safe). */
void sc_zap_get_stats(const sc_zap_t *zap, sc_zap_stats_t *ret_stats);
/* Stops the thread and frees; takes NULL; nulls *zap. Call before zmq_ctx_term(). */
void sc_zap_stop(sc_zap_t **zap);
/* "accepted", "refused_key", "refused_mechanism", "malformed". */
const char *sc_zap_decision_name(sc_zap_decision_t decision);

/* Makes sock a CURVE server with kp: ZMQ_CURVE_SERVER, keys, ZMQ_ZAP_DOMAIN SC_ZAP_DOMAIN,
 * ZMQ_MAXMSGSIZE SC_MSG_MAX_BYTES. zap must be running on sock's context (libzmq accepts
 * every client when no ZAP handler runs, so this refuses to proceed without one): -EINVAL.
 * Call before zmq_bind. 0 or -errno. */
int sc_curve_server_setup(void *sock, const sc_curve_keypair_t *kp, const sc_zap_t *zap);
/* Makes sock a CURVE client with kp that only talks to the server with server_public_z85,
 * and sets ZMQ_MAXMSGSIZE. Call before zmq_connect. 0, -EINVAL (bad key) or -errno. */
int sc_curve_client_setup(void *sock, const sc_curve_keypair_t *kp, const char *server_public_z85);
/* Plain text (--insecure): only ZMQ_MAXMSGSIZE. 0 or -errno. */
int sc_sock_insecure_setup(void *sock);
/* A client socket to member peer's coordinator: sc_sock_insecure_setup when kp is NULL, else
 * sc_curve_client_setup with peer's public key from ring. 0; SC_E_CONFIG ("--keys: member X has
 * no key in the keyring", in err) or the setup's error. The agent and the coordinators' DEALERs
 * to the voters use it. */
int sc_curve_peer_setup(void *sock, const sc_curve_keypair_t *kp, const sc_keyring_t *ring,
                        const char *peer, char *err, size_t errlen);

#endif
