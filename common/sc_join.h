/* sc_join: the join handshake's cryptography — the join secret, the transcript, the proofs and
 * the replay cache. No transport: the caller carries the bytes (issue 21, join mode).
 *
 * A VM that is not a member yet (the joiner) asks a member (any member it can reach; the
 * leader admits it later by a configuration entry). Neither side sends the join secret:
 *
 *   member                                              joiner
 *     sc_join_challenge -> member nonce  ───────────▶
 *                                                     sc_join_nonce -> joiner nonce
 *                                                     sc_join_prove -> proof =
 *                       ◀───────────  joiner nonce, identity, proof      HMAC(secret,
 * "schedcoord-join-v1" ‖ T) sc_join_check: nonce issued here, unused, fresh? proof made with one of
 * the secrets?
 *                    -> ack = HMAC(the same secret, "schedcoord-join-ack-v1" ‖ T)
 *                        ack  ───────────▶
 *                                                     sc_join_ack_check: the set knows the
 *                                                     secret too (mutual authentication)
 *
 * HMAC is HMAC-SHA256 (libsodium's crypto_auth_hmacsha256, keyed by the whole secret). T is
 * the transcript, every field written as a 4-byte big-endian length then its bytes, in this
 * order (the label is written the same way, first):
 *
 *    1  member nonce          32 bytes, from sc_join_challenge (single use, expires)
 *    2  joiner nonce          32 bytes, the joiner's own (so that an old ack cannot be replayed
 *                             to it)
 *    3  member name           the member asked
 *    4  member public key     its CURVE key (Z85) as the joiner's connection knows it: a proof
 *                             relayed to another member by a man in the middle does not check
 *    5  joiner name           compute.name
 *    6  joiner vmId           compute.vmId (lower case)
 *    7  joiner public key     its CURVE key (Z85), made on its VM (sc_keystore)
 *    8  placement group       compute.placementGroupId (lower case, may be "")
 *    9  zone                  compute.zone (may be "")
 *   10  fault domain          decimal text, "-1" when unknown
 *   11  update domain         decimal text, "-1" when unknown
 *   12  priority              sc_priority_name ("unknown", "Regular", "Spot", "Low")
 *   13  context               the caller's bytes bound by both sides (may be empty), e.g. an
 *                             identifier of the set; up to SC_JOIN_CONTEXT_MAX bytes
 *
 * The two labels differ, so a proof is never accepted as an ack nor an ack as a proof. The
 * caller must also check that the joiner's public key in the transcript is the key its CURVE
 * connection authenticated (the ZAP handler's), and apply the admission rules (a name held by
 * a live member with another key, another placement group) on the identity: sc_join only says
 * whether the joiner knows the secret and whether the proof is fresh.
 *
 * Rotation: a node holds one or two secrets (SC_JOIN_SECRETS_MAX). The first (current) one is
 * the one a joiner proves with; a member accepts a proof made with either and acks with the
 * one that matched, so that during a rotation window VMs with the old and with the new secret
 * both get in. The procedure is in the trust model (drafted for docs/design.md, Membership).
 *
 * Warning on the secret's strength: a proof is an HMAC of a known transcript, so whoever
 * obtains one (a fake member a joiner was pointed at) can test guesses of the secret offline.
 * The secret must be random, not a password: at least SC_JOIN_SECRET_MIN bytes (refused
 * below), SC_JOIN_SECRET_GOOD and more recommended, e.g. `head -c 32 /dev/urandom | base64`.
 *
 * Time is the caller's (CLOCK_MONOTONIC milliseconds). The library never logs: errors come back
 * with a reason. An sc_join_t is not thread-safe. */
#ifndef SC_JOIN_H
#define SC_JOIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sc_member_id.h"

#define SC_JOIN_NONCE_LEN 32               /* bytes of a nonce */
#define SC_JOIN_MAC_LEN 32                 /* bytes of a proof or an ack (HMAC-SHA256) */
#define SC_JOIN_SECRETS_MAX 2              /* secrets held at once: the current and the previous */
#define SC_JOIN_SECRET_MIN 16              /* bytes of a secret: fewer is refused */
#define SC_JOIN_SECRET_GOOD 32             /* bytes of a secret: fewer is accepted, called weak */
#define SC_JOIN_SECRET_MAX 1024            /* bytes of one secret */
#define SC_JOIN_SECRET_FILE_MAX 4096       /* bytes of a secret file */
#define SC_JOIN_CONTEXT_MAX 4096           /* bytes of a transcript's context */
#define SC_JOIN_NONCE_TTL_MS_DEFAULT 30000 /* a challenge is valid this long */
#define SC_JOIN_PENDING_MAX_DEFAULT 1024   /* challenges remembered at once */

/* The join secrets a node holds. Wiped by sc_join_secrets_clear. */
typedef struct sc_join_secrets {
    size_t n;                        /* secrets held: 1 or 2 (0 when cleared) */
    size_t len[SC_JOIN_SECRETS_MAX]; /* bytes of each */
    uint8_t key[SC_JOIN_SECRETS_MAX][SC_JOIN_SECRET_MAX]; /* [0] current: proves and accepts;
                                                             [1] previous: only accepts */
} sc_join_secrets_t;

/* What both sides of one handshake bind their MACs to (table above). Plain values, copied by
 * the caller from the messages; context is borrowed. */
typedef struct sc_join_transcript {
    uint8_t member_nonce[SC_JOIN_NONCE_LEN];       /* the member's challenge */
    uint8_t joiner_nonce[SC_JOIN_NONCE_LEN];       /* the joiner's nonce */
    char member_name[SC_MEMBER_NAME_MAX + 1];      /* the member asked */
    char member_public_z85[SC_MEMBER_KEY_LEN + 1]; /* its CURVE public key */
    sc_member_id_t joiner;                         /* the joiner, with its public key set */
    const void *context;                           /* caller's bytes; NULL when context_len 0 */
    size_t context_len;                            /* 0..SC_JOIN_CONTEXT_MAX */
} sc_join_transcript_t;

/* Reads the join secret file at path. The file must be a regular file owned by the user the
 * process runs as (geteuid) with no permission for group or others (0600 or 0400): else -EPERM
 * and err names the file and what is wrong. Its text is one secret per line: the first is
 * the current secret, an optional second the previous one (accepted during a rotation); line
 * ends (\n, \r\n) and trailing newlines are not part of a secret; a file ending without a
 * newline is fine. A secret is SC_JOIN_SECRET_MIN..SC_JOIN_SECRET_MAX bytes without NUL.
 * *ret_weak (may be NULL) is set when a secret is shorter than SC_JOIN_SECRET_GOOD bytes, for
 * the caller to warn about. ret_* are written only on success. 0; -errno (cannot open);
 * -EPERM (owner or mode); SC_E_TOO_BIG (file over SC_JOIN_SECRET_FILE_MAX bytes); SC_E_CONFIG
 * (empty, an empty line, a NUL byte, more than two secrets, a secret too short or too long;
 * err says which line). The buffer that held the file is wiped. */
int sc_join_secrets_load(const char *path, sc_join_secrets_t *ret_secrets, bool *ret_weak,
                         char *err, size_t errlen);

/* Sets secrets from memory: current (len bytes) and, when previous is not NULL, previous
 * (prev_len bytes), with the length rules of sc_join_secrets_load. 0 or SC_E_CONFIG (reason
 * in err); -EINVAL (NULL). *ret_secrets is written only on success. */
int sc_join_secrets_set(const void *current, size_t len, const void *previous, size_t prev_len,
                        sc_join_secrets_t *ret_secrets, char *err, size_t errlen);

/* Wipes the secrets (sodium_memzero); n becomes 0. Takes NULL. */
void sc_join_secrets_clear(sc_join_secrets_t *secrets);

/* A fresh random nonce (libsodium's randombytes_buf) into ret_nonce: the joiner's. 0 or -EIO
 * (libsodium could not start). */
int sc_join_nonce(uint8_t ret_nonce[SC_JOIN_NONCE_LEN]);

/* The joiner's proof of transcript t with its current secret (secrets->key[0]) into ret_proof.
 * 0; -EINVAL (NULL, no secret, or t incomplete: a joiner name, vmId or key missing, no member
 * name or key, context over its limit; reason in err); -EIO (libsodium). */
int sc_join_prove(const sc_join_secrets_t *secrets, const sc_join_transcript_t *t,
                  uint8_t ret_proof[SC_JOIN_MAC_LEN], char *err, size_t errlen);

/* The joiner's check of the member's ack for transcript t (the one it proved, with its own
 * nonce). 0 when the ack was made with the joiner's current secret; SC_E_AUTH ("the set did
 * not prove it knows the join secret") otherwise: the joiner must not join, nor trust anything
 * that member said; -EINVAL as sc_join_prove. */
int sc_join_ack_check(const sc_join_secrets_t *secrets, const sc_join_transcript_t *t,
                      const uint8_t ack[SC_JOIN_MAC_LEN], char *err, size_t errlen);

/* The member's side: its secrets and the challenges it issued. */
typedef struct sc_join sc_join_t;

/* A verifier holding a copy of secrets (1 or 2). A challenge is valid for nonce_ttl_ms
 * (1..3600000; 0: SC_JOIN_NONCE_TTL_MS_DEFAULT); at most max_pending (1..1000000; 0:
 * SC_JOIN_PENDING_MAX_DEFAULT) are remembered: issued ones until they are used or expire, used
 * ones until 2 × nonce_ttl_ms after they were issued so that a replay is named as such.
 * 0, -EINVAL, -EIO (libsodium could not start) or -ENOMEM. */
int sc_join_new(const sc_join_secrets_t *secrets, int64_t nonce_ttl_ms, size_t max_pending,
                sc_join_t **ret_join);

/* Replaces the verifier's secrets (a rotation, or a reloaded file); the challenges issued stay
 * valid. 0 or -EINVAL (NULL or no secret). */
int sc_join_set_secrets(sc_join_t *join, const sc_join_secrets_t *secrets);

/* Issues a challenge at now_ms: a fresh random nonce into ret_nonce, remembered. When the
 * table is full, the oldest entry is forgotten (its joiner's answer will be "unknown nonce" and
 * it asks again; the caller rate-limits who may ask, sc_ratelimit). 0 or -EINVAL. */
int sc_join_challenge(sc_join_t *join, int64_t now_ms, uint8_t ret_nonce[SC_JOIN_NONCE_LEN]);

/* Checks a joiner's proof of transcript t at now_ms. The nonce (t->member_nonce) must have been
 * issued by this verifier, not used, and not older than nonce_ttl_ms; whatever the outcome, a
 * nonce found unused is used up by this call (one guess per challenge). Then the proof must be
 * the HMAC of t under one of the secrets; on success the ack, made with the secret that
 * matched, is written to ret_ack (for the joiner's sc_join_ack_check).
 * 0; SC_E_NONCE_UNKNOWN (never issued here, or forgotten); SC_E_NONCE_EXPIRED;
 * SC_E_NONCE_REPLAYED (already used); SC_E_AUTH (bad proof: the joiner does not know the
 * secret, or a field of the transcript differs from the one it proved); -EINVAL as
 * sc_join_prove; reason in err. Nonce checks come first: a bad nonce costs no HMAC. */
int sc_join_check(sc_join_t *join, int64_t now_ms, const sc_join_transcript_t *t,
                  const uint8_t proof[SC_JOIN_MAC_LEN], uint8_t ret_ack[SC_JOIN_MAC_LEN], char *err,
                  size_t errlen);

/* Challenges remembered (issued or used, not yet forgotten). */
size_t sc_join_pending(const sc_join_t *join);

/* Wipes the secrets and frees; takes NULL; nulls *join. */
void sc_join_destroy(sc_join_t **join);

#endif
