/* sc_join: the join handshake without a transport — a joiner that knows the
 * secret gets in and authenticates the set; a wrong secret, a replayed, expired or unknown
 * nonce, and every tampered transcript field are refused with their own code; a set that does
 * not know the secret is caught by the joiner; rotation with two secrets; the secret file's
 * rules; the challenge table's bound. */
#include "sc_test.h"

#include <errno.h>

#include "sc_error.h"
#include "sc_join.h"

#define SECRET "q8Zt0mW3xVn1bR7yLc5pKd9sFh2jGa4e6uTiOo0lEwQ=" /* 44 bytes, base64 of 32 */
#define OTHER "Xk3nR8vB1qW6zT0yH5mP2cL9dF4gJ7sA1eU3iO6wYb8="
#define NEWER "Nw7Bq2Lz5Xc8Vm1Kr4Tp9Yd6Hs3Gf0Ja2Ue5Io8Ql1Wb="
#define KEY_J "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
#define KEY_M "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"
#define KEY_X "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"

static char s_dir[512];

static const char *s_path(const char *name)
{
    static char p[1024];

    snprintf(p, sizeof(p), "%s/%s", s_dir, name);
    return p;
}

static sc_join_secrets_t s_secrets(const char *current, const char *previous)
{
    sc_join_secrets_t s;
    char err[256];

    memset(&s, 0, sizeof(s));
    if (sc_join_secrets_set(current, strlen(current), previous, previous ? strlen(previous) : 0, &s,
                            err, sizeof(err)) != 0)
        printf("  sc_join_secrets_set: %s\n", err);
    return s;
}

/* A joiner's transcript for the member's challenge nonce. */
static sc_join_transcript_t s_transcript(const uint8_t nonce[SC_JOIN_NONCE_LEN])
{
    sc_join_transcript_t t;

    memset(&t, 0, sizeof(t));
    memcpy(t.member_nonce, nonce, SC_JOIN_NONCE_LEN);
    sc_join_nonce(t.joiner_nonce);
    snprintf(t.member_name, sizeof(t.member_name), "sched-vmss_0");
    snprintf(t.member_public_z85, sizeof(t.member_public_z85), "%s", KEY_M);
    snprintf(t.joiner.name, sizeof(t.joiner.name), "sched-vmss_7");
    snprintf(t.joiner.vm_id, sizeof(t.joiner.vm_id), "0e7d4c39-5b2a-4f6e-8c1d-9a3b2e4f5d60");
    snprintf(t.joiner.placement_group, sizeof(t.joiner.placement_group),
             "6b1f9c2e-7a44-4d0b-9e51-3c2d8f7a1b90");
    t.joiner.fault_domain = 1;
    t.joiner.update_domain = 2;
    t.joiner.priority = SC_PRIORITY_REGULAR;
    sc_member_id_set_key(&t.joiner, KEY_J);
    t.context = "set:sched-vmss";
    t.context_len = strlen("set:sched-vmss");
    return t;
}

/* One handshake: member (verifier j at now) challenges, joiner (secrets js) proves, member
 * checks; on success the joiner checks the ack. Returns the member's code; *ret_ack_rc the
 * joiner's (1 when not reached). */
static int s_handshake(sc_join_t *j, int64_t now, const sc_join_secrets_t *js, int *ret_ack_rc)
{
    uint8_t nonce[SC_JOIN_NONCE_LEN], proof[SC_JOIN_MAC_LEN], ack[SC_JOIN_MAC_LEN];
    sc_join_transcript_t t;
    char err[256] = "";
    int rc;

    *ret_ack_rc = 1;
    if (sc_join_challenge(j, now, nonce) != 0)
        return -999;
    t = s_transcript(nonce);
    if (sc_join_prove(js, &t, proof, err, sizeof(err)) != 0)
        return -998;
    if ((rc = sc_join_check(j, now, &t, proof, ack, err, sizeof(err))) == 0)
        *ret_ack_rc = sc_join_ack_check(js, &t, ack, err, sizeof(err));
    return rc;
}

SC_TEST(handshake_succeeds_both_ways)
{
    sc_join_secrets_t s = s_secrets(SECRET, NULL);
    uint8_t nonce[SC_JOIN_NONCE_LEN], nonce2[SC_JOIN_NONCE_LEN];
    uint8_t proof[SC_JOIN_MAC_LEN], ack[SC_JOIN_MAC_LEN];
    sc_join_transcript_t t;
    sc_join_t *j = NULL;
    char err[256] = "";

    SC_REQUIRE(sc_join_new(&s, 0, 0, &j) == 0);
    SC_CHECK_INT(sc_join_challenge(j, 1000, nonce), 0);
    SC_CHECK_INT(sc_join_challenge(j, 1000, nonce2), 0);
    SC_CHECK(memcmp(nonce, nonce2, SC_JOIN_NONCE_LEN) != 0); /* fresh each time */
    SC_CHECK_INT(sc_join_pending(j), 2);
    t = s_transcript(nonce);
    SC_CHECK_INT(sc_join_prove(&s, &t, proof, err, sizeof(err)), 0);
    SC_CHECK_INT(sc_join_check(j, 1500, &t, proof, ack, err, sizeof(err)), 0);
    SC_CHECK_INT(sc_join_ack_check(&s, &t, ack, err, sizeof(err)), 0);
    /* the ack is not the proof sent back (distinct labels) */
    SC_CHECK(memcmp(proof, ack, SC_JOIN_MAC_LEN) != 0);
    /* no context is fine too */
    t = s_transcript(nonce2);
    t.context = NULL;
    t.context_len = 0;
    SC_CHECK_INT(sc_join_prove(&s, &t, proof, err, sizeof(err)), 0);
    SC_CHECK_INT(sc_join_check(j, 1500, &t, proof, ack, err, sizeof(err)), 0);
    SC_CHECK_INT(sc_join_ack_check(&s, &t, ack, err, sizeof(err)), 0);
    sc_join_destroy(&j);
    SC_CHECK(j == NULL);
    sc_join_destroy(&j); /* takes NULL */
}

SC_TEST(wrong_secret_refused)
{
    sc_join_secrets_t s = s_secrets(SECRET, NULL), wrong = s_secrets(OTHER, NULL);
    uint8_t nonce[SC_JOIN_NONCE_LEN], proof[SC_JOIN_MAC_LEN], ack[SC_JOIN_MAC_LEN];
    uint8_t untouched[SC_JOIN_MAC_LEN];
    sc_join_transcript_t t;
    sc_join_t *j = NULL;
    char err[256] = "";
    int ack_rc;

    SC_REQUIRE(sc_join_new(&s, 0, 0, &j) == 0);
    SC_CHECK_INT(s_handshake(j, 0, &wrong, &ack_rc), SC_E_AUTH);
    SC_CHECK_INT(ack_rc, 1);

    SC_REQUIRE(sc_join_challenge(j, 0, nonce) == 0);
    t = s_transcript(nonce);
    SC_REQUIRE(sc_join_prove(&wrong, &t, proof, err, sizeof(err)) == 0);
    memset(ack, 0x77, sizeof(ack));
    memcpy(untouched, ack, sizeof(ack));
    SC_CHECK_INT(sc_join_check(j, 0, &t, proof, ack, err, sizeof(err)), SC_E_AUTH);
    SC_CHECK(strstr(err, "join of sched-vmss_7: bad proof") != NULL);
    SC_CHECK(memcmp(ack, untouched, sizeof(ack)) == 0); /* no ack for a bad proof */
    /* one guess per challenge: the right proof on the same nonce is a replay now */
    SC_REQUIRE(sc_join_prove(&s, &t, proof, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_join_check(j, 0, &t, proof, ack, err, sizeof(err)), SC_E_NONCE_REPLAYED);
    sc_join_destroy(&j);
}

SC_TEST(nonce_replayed_expired_unknown)
{
    sc_join_secrets_t s = s_secrets(SECRET, NULL);
    uint8_t nonce[SC_JOIN_NONCE_LEN], proof[SC_JOIN_MAC_LEN], ack[SC_JOIN_MAC_LEN];
    sc_join_transcript_t t;
    sc_join_t *j = NULL;
    char err[256] = "";

    SC_REQUIRE(sc_join_new(&s, 30000, 0, &j) == 0);

    /* replayed: a recorded good answer sent again */
    SC_REQUIRE(sc_join_challenge(j, 0, nonce) == 0);
    t = s_transcript(nonce);
    SC_REQUIRE(sc_join_prove(&s, &t, proof, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_join_check(j, 10, &t, proof, ack, err, sizeof(err)), 0);
    SC_CHECK_INT(sc_join_check(j, 20, &t, proof, ack, err, sizeof(err)), SC_E_NONCE_REPLAYED);
    SC_CHECK(strstr(err, "nonce already used") != NULL);
    /* still named a replay until 2 x ttl after issue, then forgotten: unknown */
    SC_CHECK_INT(sc_join_check(j, 59999, &t, proof, ack, err, sizeof(err)), SC_E_NONCE_REPLAYED);
    SC_CHECK_INT(sc_join_check(j, 60000, &t, proof, ack, err, sizeof(err)), SC_E_NONCE_UNKNOWN);

    /* expired: valid for ttl exactly, not a millisecond more */
    SC_REQUIRE(sc_join_challenge(j, 100000, nonce) == 0);
    t = s_transcript(nonce);
    SC_REQUIRE(sc_join_prove(&s, &t, proof, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_join_check(j, 130001, &t, proof, ack, err, sizeof(err)), SC_E_NONCE_EXPIRED);
    SC_CHECK(strstr(err, "nonce issued 30001 ms ago, valid for 30000 ms") != NULL);
    SC_CHECK_INT(sc_join_check(j, 130002, &t, proof, ack, err, sizeof(err)), SC_E_NONCE_REPLAYED);
    SC_REQUIRE(sc_join_challenge(j, 200000, nonce) == 0);
    t = s_transcript(nonce);
    SC_REQUIRE(sc_join_prove(&s, &t, proof, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_join_check(j, 230000, &t, proof, ack, err, sizeof(err)), 0);

    /* unknown: a nonce never issued here (another member's, or made up) */
    sc_join_nonce(nonce);
    t = s_transcript(nonce);
    SC_REQUIRE(sc_join_prove(&s, &t, proof, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_join_check(j, 230000, &t, proof, ack, err, sizeof(err)), SC_E_NONCE_UNKNOWN);
    SC_CHECK(strstr(err, "unknown nonce") != NULL);

    /* every refusal has its own code and message */
    SC_CHECK(strcmp(sc_strerror(SC_E_NONCE_UNKNOWN), sc_strerror(SC_E_NONCE_EXPIRED)) != 0);
    SC_CHECK(strcmp(sc_strerror(SC_E_NONCE_EXPIRED), sc_strerror(SC_E_NONCE_REPLAYED)) != 0);
    SC_CHECK_STR(sc_errname(SC_E_NONCE_REPLAYED), "SC_E_NONCE_REPLAYED");
    SC_CHECK_STR(sc_errname(SC_E_RATE_LIMITED), "SC_E_RATE_LIMITED");
    sc_join_destroy(&j);
}

/* Each tamper changes one field of the transcript between the joiner's proof and the member's
 * check (a man in the middle, or a joiner claiming what it did not prove). */
static void s_tamper_name(sc_join_transcript_t *t)
{
    t->joiner.name[strlen(t->joiner.name) - 1] = '8';
}
static void s_tamper_vm_id(sc_join_transcript_t *t)
{
    t->joiner.vm_id[0] = t->joiner.vm_id[0] == 'f' ? 'e' : 'f';
}
static void s_tamper_key(sc_join_transcript_t *t)
{
    sc_member_id_set_key(&t->joiner, KEY_X);
}
static void s_tamper_placement(sc_join_transcript_t *t)
{
    t->joiner.placement_group[0] = '\0';
}
static void s_tamper_zone(sc_join_transcript_t *t)
{
    snprintf(t->joiner.zone, sizeof(t->joiner.zone), "3");
}
static void s_tamper_fd(sc_join_transcript_t *t)
{
    t->joiner.fault_domain = 2;
}
static void s_tamper_ud(sc_join_transcript_t *t)
{
    t->joiner.update_domain = -1;
}
static void s_tamper_priority(sc_join_transcript_t *t)
{
    t->joiner.priority = SC_PRIORITY_SPOT;
}
static void s_tamper_member_name(sc_join_transcript_t *t)
{
    snprintf(t->member_name, sizeof(t->member_name), "sched-vmss_1");
}
static void s_tamper_member_key(sc_join_transcript_t *t)
{
    snprintf(t->member_public_z85, sizeof(t->member_public_z85), "%s", KEY_X);
}
static void s_tamper_joiner_nonce(sc_join_transcript_t *t)
{
    t->joiner_nonce[31] ^= 1;
}
static void s_tamper_context(sc_join_transcript_t *t)
{
    t->context = "set:sched-other";
    t->context_len = strlen("set:sched-other");
}
static void s_tamper_field_boundary(sc_join_transcript_t *t)
{
    /* the same bytes, the boundary between two adjacent fields moved (name "..._70", vmId
     * "e7d4..."): the lengths are part of the MAC */
    size_t n = strlen(t->joiner.name);

    t->joiner.name[n] = t->joiner.vm_id[0];
    t->joiner.name[n + 1] = '\0';
    memmove(t->joiner.vm_id, t->joiner.vm_id + 1, strlen(t->joiner.vm_id));
}

SC_TEST(tampered_fields_refused)
{
    static const struct {
        const char *what;
        void (*tamper)(sc_join_transcript_t *);
    } cases[] = {
        {"joiner name", s_tamper_name},
        {"joiner vmId", s_tamper_vm_id},
        {"joiner key", s_tamper_key},
        {"placement group", s_tamper_placement},
        {"zone", s_tamper_zone},
        {"fault domain", s_tamper_fd},
        {"update domain", s_tamper_ud},
        {"priority", s_tamper_priority},
        {"member name", s_tamper_member_name},
        {"member key", s_tamper_member_key},
        {"joiner nonce", s_tamper_joiner_nonce},
        {"context", s_tamper_context},
        {"field boundary", s_tamper_field_boundary},
    };
    sc_join_secrets_t s = s_secrets(SECRET, NULL);
    sc_join_t *j = NULL;

    SC_REQUIRE(sc_join_new(&s, 0, 0, &j) == 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint8_t nonce[SC_JOIN_NONCE_LEN], proof[SC_JOIN_MAC_LEN], ack[SC_JOIN_MAC_LEN];
        sc_join_transcript_t t, sent;
        char err[256] = "";
        int rc;

        SC_REQUIRE(sc_join_challenge(j, 0, nonce) == 0);
        t = s_transcript(nonce);
        SC_REQUIRE(sc_join_prove(&s, &t, proof, err, sizeof(err)) == 0);
        sent = t;
        cases[i].tamper(&sent);
        rc = sc_join_check(j, 0, &sent, proof, ack, err, sizeof(err));
        if (rc != SC_E_AUTH)
            SC_FAILF("%s changed: %d (%s), expected SC_E_AUTH", cases[i].what, rc, err);
        /* and an ack for t does not pass for a tampered transcript at the joiner either */
        SC_REQUIRE(sc_join_challenge(j, 0, nonce) == 0);
        t = s_transcript(nonce);
        SC_REQUIRE(sc_join_prove(&s, &t, proof, err, sizeof(err)) == 0);
        SC_REQUIRE(sc_join_check(j, 0, &t, proof, ack, err, sizeof(err)) == 0);
        sent = t;
        cases[i].tamper(&sent);
        rc = sc_join_ack_check(&s, &sent, ack, err, sizeof(err));
        if (rc != SC_E_AUTH)
            SC_FAILF("%s changed, ack: %d (%s), expected SC_E_AUTH", cases[i].what, rc, err);
    }
    sc_join_destroy(&j);
}

SC_TEST(joiner_catches_a_set_without_the_secret)
{
    sc_join_secrets_t s = s_secrets(SECRET, NULL), fake = s_secrets(OTHER, NULL);
    uint8_t nonce[SC_JOIN_NONCE_LEN], proof[SC_JOIN_MAC_LEN], ack[SC_JOIN_MAC_LEN];
    uint8_t proof2[SC_JOIN_MAC_LEN];
    sc_join_transcript_t t, t_old;
    sc_join_t *real = NULL, *impostor = NULL;
    char err[256] = "";

    SC_REQUIRE(sc_join_new(&s, 0, 0, &real) == 0);
    SC_REQUIRE(sc_join_new(&fake, 0, 0, &impostor) == 0);

    /* an impostor set with its own secret acks the joiner's exact transcript */
    SC_REQUIRE(sc_join_challenge(impostor, 0, nonce) == 0);
    t = s_transcript(nonce);
    SC_REQUIRE(sc_join_prove(&s, &t, proof, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_join_check(impostor, 0, &t, proof, ack, err, sizeof(err)), SC_E_AUTH);
    SC_REQUIRE(sc_join_challenge(impostor, 0, nonce) == 0);
    memcpy(t.member_nonce, nonce, SC_JOIN_NONCE_LEN);
    SC_REQUIRE(sc_join_prove(&fake, &t, proof2, err, sizeof(err)) == 0);
    SC_REQUIRE(sc_join_check(impostor, 0, &t, proof2, ack, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_join_ack_check(&s, &t, ack, err, sizeof(err)), SC_E_AUTH);
    SC_CHECK(strstr(err, "sched-vmss_0 did not prove it knows the join secret") != NULL);

    /* an impostor that reflects the joiner's own proof of t as the ack */
    SC_REQUIRE(sc_join_prove(&s, &t, proof, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_join_ack_check(&s, &t, proof, err, sizeof(err)), SC_E_AUTH);
    /* random bytes */
    sc_join_nonce(ack);
    SC_CHECK_INT(sc_join_ack_check(&s, &t, ack, err, sizeof(err)), SC_E_AUTH);

    /* a real member's ack recorded from an earlier handshake, replayed to a new joiner nonce */
    SC_REQUIRE(sc_join_challenge(real, 0, nonce) == 0);
    t_old = s_transcript(nonce);
    SC_REQUIRE(sc_join_prove(&s, &t_old, proof, err, sizeof(err)) == 0);
    SC_REQUIRE(sc_join_check(real, 0, &t_old, proof, ack, err, sizeof(err)) == 0);
    t = t_old;
    sc_join_nonce(t.joiner_nonce);
    SC_CHECK_INT(sc_join_ack_check(&s, &t, ack, err, sizeof(err)), SC_E_AUTH);
    SC_CHECK_INT(sc_join_ack_check(&s, &t_old, ack, err, sizeof(err)), 0);
    sc_join_destroy(&real);
    sc_join_destroy(&impostor);
}

SC_TEST(rotation_with_two_secrets)
{
    sc_join_secrets_t during = s_secrets(NEWER, SECRET), after = s_secrets(NEWER, NULL);
    sc_join_secrets_t old_vm = s_secrets(SECRET, NULL), new_vm = s_secrets(NEWER, NULL);
    sc_join_secrets_t new_vm_with_old = s_secrets(NEWER, SECRET), other = s_secrets(OTHER, NULL);
    sc_join_t *j = NULL;
    int ack_rc;

    SC_REQUIRE(during.n == 2 && after.n == 1);
    SC_REQUIRE(sc_join_new(&during, 0, 0, &j) == 0);
    /* during the window, VMs with the old secret and VMs with the new one both get in, and
     * each authenticates the set (the ack is made with the secret that matched) */
    SC_CHECK_INT(s_handshake(j, 0, &old_vm, &ack_rc), 0);
    SC_CHECK_INT(ack_rc, 0);
    SC_CHECK_INT(s_handshake(j, 0, &new_vm, &ack_rc), 0);
    SC_CHECK_INT(ack_rc, 0);
    SC_CHECK_INT(s_handshake(j, 0, &new_vm_with_old, &ack_rc), 0);
    SC_CHECK_INT(ack_rc, 0);
    SC_CHECK_INT(s_handshake(j, 0, &other, &ack_rc), SC_E_AUTH);
    /* after the window: the old secret is refused */
    SC_CHECK_INT(sc_join_set_secrets(j, &after), 0);
    SC_CHECK_INT(s_handshake(j, 0, &old_vm, &ack_rc), SC_E_AUTH);
    SC_CHECK_INT(s_handshake(j, 0, &new_vm, &ack_rc), 0);
    SC_CHECK_INT(ack_rc, 0);
    /* a member still on the old secret alone refuses the new one: rotate the set first */
    SC_CHECK_INT(sc_join_set_secrets(j, &old_vm), 0);
    SC_CHECK_INT(s_handshake(j, 0, &new_vm, &ack_rc), SC_E_AUTH);
    SC_CHECK_INT(sc_join_set_secrets(j, NULL), -EINVAL);
    sc_join_destroy(&j);
    sc_join_secrets_clear(&during);
    SC_CHECK_INT(during.n, 0);
    SC_CHECK(during.key[0][0] == 0 && during.len[0] == 0);
}

SC_TEST(challenge_table_bounded)
{
    sc_join_secrets_t s = s_secrets(SECRET, NULL);
    uint8_t first[SC_JOIN_NONCE_LEN], nonce[SC_JOIN_NONCE_LEN];
    uint8_t proof[SC_JOIN_MAC_LEN], ack[SC_JOIN_MAC_LEN];
    sc_join_transcript_t t;
    sc_join_t *j = NULL;
    char err[256] = "";
    int ack_rc;

    SC_REQUIRE(sc_join_new(&s, 1000, 4, &j) == 0);
    SC_REQUIRE(sc_join_challenge(j, 0, first) == 0);
    for (int i = 0; i < 4; i++)
        SC_REQUIRE(sc_join_challenge(j, 0, nonce) == 0);
    SC_CHECK_INT(sc_join_pending(j), 4); /* the oldest was pushed out */
    t = s_transcript(first);
    SC_REQUIRE(sc_join_prove(&s, &t, proof, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_join_check(j, 0, &t, proof, ack, err, sizeof(err)), SC_E_NONCE_UNKNOWN);
    t = s_transcript(nonce); /* the newest is still there */
    SC_REQUIRE(sc_join_prove(&s, &t, proof, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_join_check(j, 0, &t, proof, ack, err, sizeof(err)), 0);
    /* everything older than 2 x ttl is forgotten */
    SC_CHECK_INT(s_handshake(j, 2000, &s, &ack_rc), 0);
    SC_CHECK_INT(sc_join_pending(j), 1);
    sc_join_destroy(&j);

    /* bad arguments */
    SC_CHECK_INT(sc_join_new(NULL, 0, 0, &j), -EINVAL);
    SC_CHECK_INT(sc_join_new(&s, -1, 0, &j), -EINVAL);
    {
        sc_join_secrets_t none;

        memset(&none, 0, sizeof(none));
        SC_CHECK_INT(sc_join_new(&none, 0, 0, &j), -EINVAL);
    }
}

SC_TEST(incomplete_transcript_refused)
{
    sc_join_secrets_t s = s_secrets(SECRET, NULL);
    uint8_t nonce[SC_JOIN_NONCE_LEN] = {0}, proof[SC_JOIN_MAC_LEN];
    sc_join_transcript_t t = s_transcript(nonce);
    char err[256] = "";

    t.joiner.public_z85[0] = '\0';
    SC_CHECK_INT(sc_join_prove(&s, &t, proof, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "the joiner's public key is missing") != NULL);
    t = s_transcript(nonce);
    t.joiner.vm_id[0] = '\0';
    SC_CHECK_INT(sc_join_prove(&s, &t, proof, err, sizeof(err)), -EINVAL);
    SC_CHECK(strstr(err, "vmId is missing") != NULL);
    t = s_transcript(nonce);
    t.member_public_z85[0] = '\0';
    SC_CHECK_INT(sc_join_prove(&s, &t, proof, err, sizeof(err)), -EINVAL);
    t = s_transcript(nonce);
    t.context_len = SC_JOIN_CONTEXT_MAX + 1;
    SC_CHECK_INT(sc_join_prove(&s, &t, proof, err, sizeof(err)), -EINVAL);
}

/* ------------------------------------------------------------ secret files */

static int s_load(const char *name, sc_join_secrets_t *s, bool *weak, char *err, size_t errlen)
{
    return sc_join_secrets_load(s_path(name), s, weak, err, errlen);
}

SC_TEST(secret_file_rules)
{
    sc_join_secrets_t s;
    char err[512] = "", big[SC_JOIN_SECRET_FILE_MAX + 10];
    bool weak = true;

    /* one secret, its newline not part of it */
    SC_REQUIRE(sc_test_write_file(s_path("one"), SECRET "\n", 0600) == 0);
    SC_CHECK_INT(s_load("one", &s, &weak, err, sizeof(err)), 0);
    SC_CHECK_INT(s.n, 1);
    SC_CHECK_INT(s.len[0], strlen(SECRET));
    SC_CHECK(memcmp(s.key[0], SECRET, strlen(SECRET)) == 0);
    SC_CHECK(!weak);
    /* no newline at all; CRLF; several trailing newlines; mode 0400 */
    SC_REQUIRE(sc_test_write_file(s_path("bare"), SECRET, 0400) == 0);
    SC_CHECK_INT(s_load("bare", &s, NULL, err, sizeof(err)), 0);
    SC_CHECK_INT(s.len[0], strlen(SECRET));
    SC_REQUIRE(sc_test_write_file(s_path("two"), NEWER "\r\n" SECRET "\r\n\n\n", 0600) == 0);
    SC_CHECK_INT(s_load("two", &s, &weak, err, sizeof(err)), 0);
    SC_CHECK_INT(s.n, 2);
    SC_CHECK_INT(s.len[0], strlen(NEWER));
    SC_CHECK(memcmp(s.key[0], NEWER, strlen(NEWER)) == 0);
    SC_CHECK_INT(s.len[1], strlen(SECRET));
    SC_CHECK(memcmp(s.key[1], SECRET, strlen(SECRET)) == 0);

    /* 16..31 bytes: accepted, reported weak; under 16: refused with the line */
    SC_REQUIRE(sc_test_write_file(s_path("weak"), "0123456789abcdefghij\n", 0600) == 0);
    SC_CHECK_INT(s_load("weak", &s, &weak, err, sizeof(err)), 0);
    SC_CHECK(weak);
    SC_REQUIRE(sc_test_write_file(s_path("short"), "0123456789abcde\n", 0600) == 0);
    SC_CHECK_INT(s_load("short", &s, &weak, err, sizeof(err)), SC_E_CONFIG);
    SC_CHECK(strstr(err, "short:1: the join secret is 15 bytes, fewer than 16") != NULL);
    SC_REQUIRE(sc_test_write_file(s_path("short2"), SECRET "\nshort\n", 0600) == 0);
    SC_CHECK_INT(s_load("short2", &s, &weak, err, sizeof(err)), SC_E_CONFIG);
    SC_CHECK(strstr(err, "short2:2: the previous join secret is 5 bytes") != NULL);

    /* modes and owners */
    SC_REQUIRE(sc_test_write_file(s_path("open"), SECRET "\n", 0640) == 0);
    SC_CHECK_INT(s_load("open", &s, &weak, err, sizeof(err)), -EPERM);
    SC_CHECK(strstr(err, s_path("open")) != NULL && strstr(err, "mode 0640") != NULL);
    SC_REQUIRE(sc_test_write_file(s_path("world"), SECRET "\n", 0604) == 0);
    SC_CHECK_INT(s_load("world", &s, &weak, err, sizeof(err)), -EPERM);
    if (geteuid() == 0) {
        SC_REQUIRE(sc_test_write_file(s_path("theirs"), SECRET "\n", 0600) == 0);
        SC_REQUIRE(chown(s_path("theirs"), 1, 1) == 0);
        SC_CHECK_INT(s_load("theirs", &s, &weak, err, sizeof(err)), -EPERM);
        SC_CHECK(strstr(err, "owned by uid 1, not by uid 0") != NULL);
    } else {
        printf("  (not root: the owner check is not exercised)\n");
    }

    /* contents */
    SC_REQUIRE(sc_test_write_file(s_path("empty"), "", 0600) == 0);
    SC_CHECK_INT(s_load("empty", &s, &weak, err, sizeof(err)), SC_E_CONFIG);
    SC_CHECK(strstr(err, "empty: no join secret") != NULL);
    SC_REQUIRE(sc_test_write_file(s_path("newlines"), "\n\r\n\n", 0600) == 0);
    SC_CHECK_INT(s_load("newlines", &s, &weak, err, sizeof(err)), SC_E_CONFIG);
    SC_REQUIRE(sc_test_write_file(s_path("gap"), SECRET "\n\n" NEWER "\n", 0600) == 0);
    SC_CHECK_INT(s_load("gap", &s, &weak, err, sizeof(err)), SC_E_CONFIG);
    SC_CHECK(strstr(err, "gap:2: empty line") != NULL);
    SC_REQUIRE(sc_test_write_file(s_path("three"), SECRET "\n" NEWER "\n" OTHER "\n", 0600) == 0);
    SC_CHECK_INT(s_load("three", &s, &weak, err, sizeof(err)), SC_E_CONFIG);
    SC_CHECK(strstr(err, "three:3: more than 2 secrets") != NULL);
    {
        FILE *f = fopen(s_path("nul"), "w");

        SC_REQUIRE(f);
        fwrite("0123456789\0abcdefghij\n", 1, 22, f);
        fclose(f);
        chmod(s_path("nul"), 0600);
        SC_CHECK_INT(s_load("nul", &s, &weak, err, sizeof(err)), SC_E_CONFIG);
        SC_CHECK(strstr(err, "contains a NUL byte") != NULL);
    }
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    SC_REQUIRE(sc_test_write_file(s_path("big"), big, 0600) == 0);
    SC_CHECK_INT(s_load("big", &s, &weak, err, sizeof(err)), SC_E_TOO_BIG);
    big[SC_JOIN_SECRET_MAX + 1] = '\0';
    SC_REQUIRE(sc_test_write_file(s_path("long"), big, 0600) == 0);
    SC_CHECK_INT(s_load("long", &s, &weak, err, sizeof(err)), SC_E_CONFIG);
    SC_CHECK(strstr(err, "long:1: the join secret is 1025 bytes, more than 1024") != NULL);
    SC_CHECK_INT(s_load("none", &s, &weak, err, sizeof(err)), -ENOENT);
    SC_CHECK(strstr(err, "none: cannot open") != NULL);
    SC_CHECK_INT(sc_join_secrets_load(s_dir, &s, &weak, err, sizeof(err)), SC_E_CONFIG);
    SC_CHECK(strstr(err, "not a regular file") != NULL);

    /* from memory: the same length rules */
    SC_CHECK_INT(sc_join_secrets_set("short", 5, NULL, 0, &s, err, sizeof(err)), SC_E_CONFIG);
    SC_CHECK_INT(sc_join_secrets_set(SECRET, strlen(SECRET), "short", 5, &s, err, sizeof(err)),
                 SC_E_CONFIG);
    SC_CHECK(strstr(err, "the previous join secret is 5 bytes") != NULL);
}

int main(void)
{
    if ((size_t)snprintf(s_dir, sizeof(s_dir), "%s", sc_test_tmpdir("join")) >= sizeof(s_dir)) {
        printf("scratch path too long: %s\n", s_dir);
        return 1;
    }
    SC_RUN(handshake_succeeds_both_ways);
    SC_RUN(wrong_secret_refused);
    SC_RUN(nonce_replayed_expired_unknown);
    SC_RUN(tampered_fields_refused);
    SC_RUN(joiner_catches_a_set_without_the_secret);
    SC_RUN(rotation_with_two_secrets);
    SC_RUN(challenge_table_bounded);
    SC_RUN(incomplete_transcript_refused);
    SC_RUN(secret_file_rules);
    return sc_test_done();
}
