/* sc_join: join secrets, the handshake's transcript MACs, the challenge table. */
#include "sc_join.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "sc_error.h"

#define S_LABEL_PROOF "schedcoord-join-v1"
#define S_LABEL_ACK "schedcoord-join-ack-v1"

typedef struct s_challenge {
    uint8_t nonce[SC_JOIN_NONCE_LEN]; /* the nonce issued */
    int64_t issued_ms;                /* when */
    bool used;                        /* a proof came with it (whatever the outcome) */
} s_challenge_t;

struct sc_join {
    sc_join_secrets_t secrets; /* a copy; wiped on destroy */
    int64_t ttl_ms;            /* a challenge is valid this long */
    s_challenge_t *table;      /* challenges, in the order issued (oldest first) */
    size_t max;                /* slots allocated */
    size_t n;                  /* slots in use */
};

/* libsodium started (idempotent, thread-safe). 0 or -EIO. */
static int s_sodium(void)
{
    return sodium_init() < 0 ? -EIO : 0;
}

/* ------------------------------------------------------------------ secrets */

/* Checks one secret's length; err says which. */
static int s_secret_ok(size_t len, const char *which, char *err, size_t errlen)
{
    if (len < SC_JOIN_SECRET_MIN)
        return sc_errf(err, errlen, SC_E_CONFIG,
                       "%s is %zu bytes, fewer than %d: use a random one, e.g. "
                       "`head -c 32 /dev/urandom | base64`",
                       which, len, SC_JOIN_SECRET_MIN);
    if (len > SC_JOIN_SECRET_MAX)
        return sc_errf(err, errlen, SC_E_CONFIG, "%s is %zu bytes, more than %d", which, len,
                       SC_JOIN_SECRET_MAX);
    return 0;
}

int sc_join_secrets_set(const void *current, size_t len, const void *previous, size_t prev_len,
                        sc_join_secrets_t *ret_secrets, char *err, size_t errlen)
{
    int rc;

    if (!current || !ret_secrets)
        return sc_errf(err, errlen, -EINVAL, "join secret: NULL argument");
    if ((rc = s_secret_ok(len, "the join secret", err, errlen)) < 0 ||
        (previous && (rc = s_secret_ok(prev_len, "the previous join secret", err, errlen)) < 0))
        return rc;
    sc_join_secrets_clear(ret_secrets);
    memcpy(ret_secrets->key[0], current, len);
    ret_secrets->len[0] = len;
    ret_secrets->n = 1;
    if (previous) {
        memcpy(ret_secrets->key[1], previous, prev_len);
        ret_secrets->len[1] = prev_len;
        ret_secrets->n = 2;
    }
    return 0;
}

void sc_join_secrets_clear(sc_join_secrets_t *secrets)
{
    if (secrets)
        sodium_memzero(secrets, sizeof(*secrets));
}

/* Reads all of fd (at most max bytes) into buf (max + 1 bytes). SC_E_TOO_BIG or -errno. */
static int s_read_all(int fd, uint8_t *buf, size_t max, size_t *ret_len)
{
    size_t len = 0;

    for (;;) {
        ssize_t n = read(fd, buf + len, max + 1 - len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > max)
            return SC_E_TOO_BIG;
    }
    *ret_len = len;
    return 0;
}

/* The secrets in the file's text buf (len bytes) into *s; err names the line. */
static int s_parse_secrets(const char *path, const uint8_t *buf, size_t len, sc_join_secrets_t *s,
                           char *err, size_t errlen)
{
    size_t start = 0, lineno = 0;

    if (memchr(buf, '\0', len))
        return sc_errf(err, errlen, SC_E_CONFIG,
                       "%s: contains a NUL byte (write the secret as text, e.g. base64)", path);
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
        len--;
    if (len == 0)
        return sc_errf(err, errlen, SC_E_CONFIG, "%s: empty: no join secret", path);
    while (start < len) {
        const uint8_t *nl = memchr(buf + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - buf) : len, n;
        char why[256];
        int rc;

        lineno++;
        n = end - start;
        if (n > 0 && buf[end - 1] == '\r')
            n--;
        if (n == 0)
            return sc_errf(err, errlen, SC_E_CONFIG,
                           "%s:%zu: empty line (one secret per line: the current one, then "
                           "the previous one during a rotation)",
                           path, lineno);
        if (lineno > SC_JOIN_SECRETS_MAX)
            return sc_errf(err, errlen, SC_E_CONFIG,
                           "%s:%zu: more than %d secrets (the current one and the previous "
                           "one during a rotation)",
                           path, lineno, SC_JOIN_SECRETS_MAX);
        if ((rc = s_secret_ok(n, lineno == 1 ? "the join secret" : "the previous join secret", why,
                              sizeof(why))) < 0)
            return sc_errf(err, errlen, rc, "%s:%zu: %s", path, lineno, why);
        memcpy(s->key[lineno - 1], buf + start, n);
        s->len[lineno - 1] = n;
        s->n = lineno;
        start = end + 1;
    }
    return 0;
}

int sc_join_secrets_load(const char *path, sc_join_secrets_t *ret_secrets, bool *ret_weak,
                         char *err, size_t errlen)
{
    uint8_t *buf = NULL;
    sc_join_secrets_t *s = NULL;
    struct stat st;
    size_t len = 0;
    int fd, rc;

    if (!path || !ret_secrets)
        return sc_errf(err, errlen, -EINVAL, "join secret: NULL argument");
    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0) {
        rc = -errno;
        return sc_errf(err, errlen, rc, "%s: cannot open: %s", path, strerror(-rc));
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return sc_errf(err, errlen, SC_E_CONFIG, "%s: not a regular file", path);
    }
    if (st.st_uid != geteuid()) {
        close(fd);
        return sc_errf(err, errlen, -EPERM,
                       "%s: owned by uid %u, not by uid %u that this runs as: chown it", path,
                       (unsigned)st.st_uid, (unsigned)geteuid());
    }
    if (st.st_mode & 077) {
        close(fd);
        return sc_errf(err, errlen, -EPERM,
                       "%s: mode %04o lets others read the join secret: chmod 600 it", path,
                       (unsigned)(st.st_mode & 07777));
    }
    if (!(buf = malloc(SC_JOIN_SECRET_FILE_MAX + 1)) || !(s = malloc(sizeof(*s)))) {
        rc = -ENOMEM;
        goto out;
    }
    sc_join_secrets_clear(s);
    if ((rc = s_read_all(fd, buf, SC_JOIN_SECRET_FILE_MAX, &len)) < 0) {
        if (rc == SC_E_TOO_BIG)
            sc_errf(err, errlen, rc, "%s: larger than %d bytes", path, SC_JOIN_SECRET_FILE_MAX);
        else
            sc_errf(err, errlen, rc, "%s: cannot read: %s", path, strerror(-rc));
        goto out;
    }
    if ((rc = s_parse_secrets(path, buf, len, s, err, errlen)) < 0)
        goto out;
    if (ret_weak) {
        *ret_weak = false;
        for (size_t i = 0; i < s->n; i++)
            if (s->len[i] < SC_JOIN_SECRET_GOOD)
                *ret_weak = true;
    }
    *ret_secrets = *s;
out:
    close(fd);
    if (buf)
        sodium_memzero(buf, SC_JOIN_SECRET_FILE_MAX + 1); /* it held the secret */
    free(buf);
    sc_join_secrets_clear(s);
    free(s);
    return rc;
}

/* --------------------------------------------------------------- transcript */

/* Whether t can be MACed; err says what is missing. */
static int s_transcript_ok(const sc_join_transcript_t *t, char *err, size_t errlen)
{
    const sc_member_id_t *j;

    if (!t)
        return sc_errf(err, errlen, -EINVAL, "join: no transcript");
    j = &t->joiner;
    if (!j->name[0] || strnlen(j->name, sizeof(j->name)) == sizeof(j->name))
        return sc_errf(err, errlen, -EINVAL, "join: the joiner's name is missing");
    if (!j->vm_id[0] || strnlen(j->vm_id, sizeof(j->vm_id)) == sizeof(j->vm_id))
        return sc_errf(err, errlen, -EINVAL, "join: the joiner's vmId is missing");
    if (strnlen(j->public_z85, sizeof(j->public_z85)) != SC_MEMBER_KEY_LEN)
        return sc_errf(err, errlen, -EINVAL, "join: the joiner's public key is missing");
    if (strnlen(j->zone, sizeof(j->zone)) == sizeof(j->zone) ||
        strnlen(j->placement_group, sizeof(j->placement_group)) == sizeof(j->placement_group))
        return sc_errf(err, errlen, -EINVAL, "join: the joiner's identity is not terminated");
    if (!t->member_name[0] ||
        strnlen(t->member_name, sizeof(t->member_name)) == sizeof(t->member_name))
        return sc_errf(err, errlen, -EINVAL, "join: the member's name is missing");
    if (strnlen(t->member_public_z85, sizeof(t->member_public_z85)) != SC_MEMBER_KEY_LEN)
        return sc_errf(err, errlen, -EINVAL, "join: the member's public key is missing");
    if (t->context_len > SC_JOIN_CONTEXT_MAX || (t->context_len && !t->context))
        return sc_errf(err, errlen, -EINVAL, "join: context over %d bytes or NULL",
                       SC_JOIN_CONTEXT_MAX);
    return 0;
}

/* One field: its length (4 bytes, big-endian), then its bytes. */
static void s_field(crypto_auth_hmacsha256_state *st, const void *p, size_t n)
{
    uint8_t len[4] = {(uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n};

    crypto_auth_hmacsha256_update(st, len, sizeof(len));
    if (n)
        crypto_auth_hmacsha256_update(st, p, n);
}

static void s_field_str(crypto_auth_hmacsha256_state *st, const char *s)
{
    s_field(st, s, strlen(s));
}

static void s_field_int(crypto_auth_hmacsha256_state *st, int v)
{
    char buf[16];

    snprintf(buf, sizeof(buf), "%d", v);
    s_field_str(st, buf);
}

/* HMAC-SHA256(key, label ‖ t) into out, the fields in the order of the header's table. */
static void s_mac(const uint8_t *key, size_t keylen, const char *label,
                  const sc_join_transcript_t *t, uint8_t out[SC_JOIN_MAC_LEN])
{
    crypto_auth_hmacsha256_state st;
    const sc_member_id_t *j = &t->joiner;

    crypto_auth_hmacsha256_init(&st, key, keylen);
    s_field_str(&st, label);
    s_field(&st, t->member_nonce, SC_JOIN_NONCE_LEN);
    s_field(&st, t->joiner_nonce, SC_JOIN_NONCE_LEN);
    s_field_str(&st, t->member_name);
    s_field_str(&st, t->member_public_z85);
    s_field_str(&st, j->name);
    s_field_str(&st, j->vm_id);
    s_field_str(&st, j->public_z85);
    s_field_str(&st, j->placement_group);
    s_field_str(&st, j->zone);
    s_field_int(&st, j->fault_domain);
    s_field_int(&st, j->update_domain);
    s_field_str(&st, sc_priority_name(j->priority));
    s_field(&st, t->context, t->context_len);
    crypto_auth_hmacsha256_final(&st, out);
    sodium_memzero(&st, sizeof(st)); /* its inner and outer pads derive from the key */
}

int sc_join_nonce(uint8_t ret_nonce[SC_JOIN_NONCE_LEN])
{
    int rc;

    if (!ret_nonce)
        return -EINVAL;
    if ((rc = s_sodium()) < 0)
        return rc;
    randombytes_buf(ret_nonce, SC_JOIN_NONCE_LEN);
    return 0;
}

/* The MAC under label of t with the current secret (the first), once secrets and t are checked:
 * what a joiner proves with and what it expects an ack to be. 0 or an error in err. */
static int s_mac_current(const sc_join_secrets_t *secrets, const sc_join_transcript_t *t,
                         const char *label, uint8_t out[SC_JOIN_MAC_LEN], char *err, size_t errlen)
{
    int rc;

    if (!secrets || secrets->n < 1)
        return sc_errf(err, errlen, -EINVAL, "join: no secret");
    if ((rc = s_transcript_ok(t, err, errlen)) < 0)
        return rc;
    if ((rc = s_sodium()) < 0)
        return sc_errf(err, errlen, rc, "join: libsodium did not start");
    s_mac(secrets->key[0], secrets->len[0], label, t, out);
    return 0;
}

int sc_join_prove(const sc_join_secrets_t *secrets, const sc_join_transcript_t *t,
                  uint8_t ret_proof[SC_JOIN_MAC_LEN], char *err, size_t errlen)
{
    if (!ret_proof)
        return sc_errf(err, errlen, -EINVAL, "join: no place for the proof");
    return s_mac_current(secrets, t, S_LABEL_PROOF, ret_proof, err, errlen);
}

int sc_join_ack_check(const sc_join_secrets_t *secrets, const sc_join_transcript_t *t,
                      const uint8_t ack[SC_JOIN_MAC_LEN], char *err, size_t errlen)
{
    uint8_t want[SC_JOIN_MAC_LEN];
    int rc;

    if (!ack)
        return sc_errf(err, errlen, -EINVAL, "join: no ack");
    if ((rc = s_mac_current(secrets, t, S_LABEL_ACK, want, err, errlen)) < 0)
        return rc;
    rc = sodium_memcmp(want, ack, SC_JOIN_MAC_LEN) == 0 ? 0 : SC_E_AUTH;
    sodium_memzero(want, sizeof(want));
    if (rc < 0)
        return sc_errf(err, errlen, rc,
                       "join: %s did not prove it knows the join secret (wrong secret, or not "
                       "the member asked)",
                       t->member_name);
    return 0;
}

/* ---------------------------------------------------------------- verifier */

int sc_join_new(const sc_join_secrets_t *secrets, int64_t nonce_ttl_ms, size_t max_pending,
                sc_join_t **ret_join)
{
    sc_join_t *self;

    if (!ret_join || !secrets || secrets->n < 1 || secrets->n > SC_JOIN_SECRETS_MAX ||
        nonce_ttl_ms < 0 || nonce_ttl_ms > 3600000 || max_pending > 1000000)
        return -EINVAL;
    if (s_sodium() < 0)
        return -EIO;
    if (!(self = calloc(1, sizeof(*self))))
        return -ENOMEM;
    self->ttl_ms = nonce_ttl_ms ? nonce_ttl_ms : SC_JOIN_NONCE_TTL_MS_DEFAULT;
    self->max = max_pending ? max_pending : SC_JOIN_PENDING_MAX_DEFAULT;
    if (!(self->table = calloc(self->max, sizeof(*self->table)))) {
        free(self);
        return -ENOMEM;
    }
    self->secrets = *secrets;
    *ret_join = self;
    return 0;
}

void sc_join_destroy(sc_join_t **join)
{
    if (!join || !*join)
        return;
    sc_join_secrets_clear(&(*join)->secrets);
    free((*join)->table);
    free(*join);
    *join = NULL;
}

int sc_join_set_secrets(sc_join_t *join, const sc_join_secrets_t *secrets)
{
    if (!join || !secrets || secrets->n < 1 || secrets->n > SC_JOIN_SECRETS_MAX)
        return -EINVAL;
    sc_join_secrets_clear(&join->secrets);
    join->secrets = *secrets;
    return 0;
}

size_t sc_join_pending(const sc_join_t *join)
{
    return join ? join->n : 0;
}

/* Forgets the challenges issued 2 × ttl ago or more (the table is in the order issued). A
 * clock that went backwards forgets nothing. */
static void s_forget_old(sc_join_t *join, int64_t now_ms)
{
    size_t k = 0;

    while (k < join->n && now_ms - join->table[k].issued_ms >= 2 * join->ttl_ms)
        k++;
    if (k) {
        memmove(join->table, join->table + k, (join->n - k) * sizeof(*join->table));
        join->n -= k;
    }
}

int sc_join_challenge(sc_join_t *join, int64_t now_ms, uint8_t ret_nonce[SC_JOIN_NONCE_LEN])
{
    s_challenge_t *c;

    if (!join || !ret_nonce)
        return -EINVAL;
    s_forget_old(join, now_ms);
    if (join->n == join->max) { /* full: the oldest goes */
        memmove(join->table, join->table + 1, (join->n - 1) * sizeof(*join->table));
        join->n--;
    }
    c = &join->table[join->n++];
    randombytes_buf(c->nonce, sizeof(c->nonce));
    c->issued_ms = now_ms;
    c->used = false;
    memcpy(ret_nonce, c->nonce, SC_JOIN_NONCE_LEN);
    return 0;
}

int sc_join_check(sc_join_t *join, int64_t now_ms, const sc_join_transcript_t *t,
                  const uint8_t proof[SC_JOIN_MAC_LEN], uint8_t ret_ack[SC_JOIN_MAC_LEN], char *err,
                  size_t errlen)
{
    uint8_t want[SC_JOIN_MAC_LEN];
    s_challenge_t *c = NULL;
    size_t match = SC_JOIN_SECRETS_MAX;
    int rc;

    if (!join || !proof || !ret_ack)
        return sc_errf(err, errlen, -EINVAL, "join: NULL argument");
    if ((rc = s_transcript_ok(t, err, errlen)) < 0)
        return rc;
    s_forget_old(join, now_ms);
    for (size_t i = 0; i < join->n && !c; i++)
        if (sodium_memcmp(join->table[i].nonce, t->member_nonce, SC_JOIN_NONCE_LEN) == 0)
            c = &join->table[i];
    if (!c)
        return sc_errf(err, errlen, SC_E_NONCE_UNKNOWN,
                       "join of %s: unknown nonce (not issued here, or forgotten)", t->joiner.name);
    if (c->used)
        return sc_errf(err, errlen, SC_E_NONCE_REPLAYED, "join of %s: nonce already used (replay)",
                       t->joiner.name);
    c->used = true; /* one answer per challenge, right or wrong */
    if (now_ms - c->issued_ms > join->ttl_ms)
        return sc_errf(err, errlen, SC_E_NONCE_EXPIRED,
                       "join of %s: nonce issued %lld ms ago, valid for %lld ms", t->joiner.name,
                       (long long)(now_ms - c->issued_ms), (long long)join->ttl_ms);
    /* every secret is tried, so the time taken does not say which one matched */
    for (size_t i = 0; i < join->secrets.n; i++) {
        s_mac(join->secrets.key[i], join->secrets.len[i], S_LABEL_PROOF, t, want);
        if (sodium_memcmp(want, proof, SC_JOIN_MAC_LEN) == 0 && match == SC_JOIN_SECRETS_MAX)
            match = i;
    }
    sodium_memzero(want, sizeof(want));
    if (match == SC_JOIN_SECRETS_MAX)
        return sc_errf(err, errlen, SC_E_AUTH,
                       "join of %s: bad proof (a wrong join secret, or a field changed on the "
                       "way)",
                       t->joiner.name);
    s_mac(join->secrets.key[match], join->secrets.len[match], S_LABEL_ACK, t, ret_ack);
    return 0;
}
