/* sc_keystore: a member's key pair made at first start in its state directory (mode 0600,
 * published whole, no temporary file left), the same key read back on later starts and by
 * daemons starting at once, key files with loose permissions, another owner, a symlink or
 * damaged contents refused by name and never replaced; the key fingerprint. */
#include "sc_test.h"

#include <dirent.h>
#include <errno.h>
#include <sys/wait.h>

#include "sc_curve.h"
#include "sc_error.h"
#include "sc_keystore.h"

static char s_root[512];

/* A fresh empty directory under the scratch directory. A static buffer. */
static const char *s_fresh_dir(const char *name)
{
    static char dir[1024];
    char cmd[1200];

    snprintf(dir, sizeof(dir), "%s/%s", s_root, name);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0 || sc_test_mkdirs(dir) != 0)
        printf("  cannot make %s\n", dir);
    return dir;
}

static const char *s_key_path(const char *dir)
{
    static char p[1100];

    snprintf(p, sizeof(p), "%s/%s", dir, SC_KEYSTORE_FILE);
    return p;
}

/* Entries in dir other than "." and "..". */
static int s_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;

    if (!d)
        return -1;
    while ((de = readdir(d)))
        n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(d);
    return n;
}

SC_TEST(first_start_makes_later_starts_load)
{
    const char *dir = s_fresh_dir("first");
    sc_curve_keypair_t kp, again, loaded;
    char err[512] = "";
    bool created = false;
    struct stat st;

    SC_REQUIRE(sc_curve_available());
    SC_CHECK_INT(sc_keystore_open(dir, &kp, &created, err, sizeof(err)), 0);
    SC_CHECK(created);
    SC_CHECK(sc_curve_key_valid(kp.public_z85) && sc_curve_key_valid(kp.secret_z85));
    SC_CHECK(stat(s_key_path(dir), &st) == 0 && (st.st_mode & 0777) == 0600);
    SC_CHECK_INT(s_entries(dir), 1); /* the key file only: no temporary left */
    /* sc_curve's format: the static mode's loader reads it */
    SC_CHECK_INT(sc_curve_keypair_load(s_key_path(dir), &loaded, err, sizeof(err)), 0);
    SC_CHECK_STR(loaded.public_z85, kp.public_z85);

    SC_CHECK_INT(sc_keystore_open(dir, &again, &created, err, sizeof(err)), 0);
    SC_CHECK(!created);
    SC_CHECK_STR(again.public_z85, kp.public_z85);
    SC_CHECK_STR(again.secret_z85, kp.secret_z85);
    SC_CHECK_INT(sc_keystore_open(dir, &again, NULL, err, sizeof(err)), 0);

    /* another VM (another state directory): another key */
    SC_CHECK_INT(sc_keystore_open(s_fresh_dir("first-other"), &again, &created, err, sizeof(err)),
                 0);
    SC_CHECK(created);
    SC_CHECK(strcmp(again.public_z85, kp.public_z85) != 0);

    /* a temporary file a crashed process left does not get in the way */
    dir = s_fresh_dir("leftover");
    {
        char tmp[1200];

        snprintf(tmp, sizeof(tmp), "%s.tmp.99999999", s_key_path(dir));
        SC_CHECK(sc_test_write_file(tmp, "public = half\n", 0600) == 0);
        SC_CHECK_INT(sc_keystore_open(dir, &kp, &created, err, sizeof(err)), 0);
        SC_CHECK(created);
    }
}

SC_TEST(refused_key_files_named_and_kept)
{
    const char *dir = s_fresh_dir("refused");
    sc_curve_keypair_t kp, out;
    char err[512] = "", *before, *after;
    bool created = true;

    SC_REQUIRE(sc_keystore_open(dir, &kp, NULL, err, sizeof(err)) == 0);

    /* group or others may read it: refused, naming the file and the mode */
    SC_REQUIRE(chmod(s_key_path(dir), 0640) == 0);
    memset(&out, 0, sizeof(out));
    SC_CHECK_INT(sc_keystore_open(dir, &out, &created, err, sizeof(err)), -EPERM);
    SC_CHECK(strstr(err, s_key_path(dir)) != NULL);
    SC_CHECK(strstr(err, "mode 0640") != NULL);
    SC_CHECK(created); /* ret_* untouched on failure */
    SC_CHECK(out.public_z85[0] == 0);
    SC_REQUIRE(chmod(s_key_path(dir), 0604) == 0);
    SC_CHECK_INT(sc_keystore_open(dir, &out, NULL, err, sizeof(err)), -EPERM);
    SC_REQUIRE(chmod(s_key_path(dir), 0400) == 0); /* stricter is fine */
    SC_CHECK_INT(sc_keystore_open(dir, &out, NULL, err, sizeof(err)), 0);
    SC_CHECK_STR(out.public_z85, kp.public_z85);
    SC_REQUIRE(chmod(s_key_path(dir), 0600) == 0);

    /* owned by another user (checkable as root only) */
    if (geteuid() == 0) {
        SC_REQUIRE(chown(s_key_path(dir), 1, 1) == 0);
        SC_CHECK_INT(sc_keystore_open(dir, &out, NULL, err, sizeof(err)), -EPERM);
        SC_CHECK(strstr(err, "owned by uid 1") != NULL);
        SC_REQUIRE(chown(s_key_path(dir), 0, 0) == 0);
    } else {
        printf("  (not root: the owner check is not exercised)\n");
    }

    /* damaged: refused and not replaced (a member's key is its identity) */
    SC_REQUIRE(sc_test_write_file(s_key_path(dir), "public = garbage\n", 0600) == 0);
    before = sc_test_slurp(s_key_path(dir), NULL);
    SC_CHECK_INT(sc_keystore_open(dir, &out, NULL, err, sizeof(err)), SC_E_PARSE);
    SC_CHECK(strstr(err, SC_KEYSTORE_FILE) != NULL);
    after = sc_test_slurp(s_key_path(dir), NULL);
    SC_CHECK(before && after && strcmp(before, after) == 0);
    free(before);
    free(after);

    /* a symlink to a key elsewhere: refused */
    dir = s_fresh_dir("symlink");
    {
        char target[1200];

        snprintf(target, sizeof(target), "%s/refused/%s", s_root, SC_KEYSTORE_FILE);
        SC_REQUIRE(symlink(target, s_key_path(dir)) == 0);
        SC_CHECK_INT(sc_keystore_open(dir, &out, NULL, err, sizeof(err)), SC_E_PARSE);
        SC_CHECK(strstr(err, "not a regular file") != NULL);
    }

    /* no state directory, or a file in its place */
    {
        char missing[1200];

        snprintf(missing, sizeof(missing), "%s/none/such", s_root);
        SC_CHECK_INT(sc_keystore_open(missing, &out, NULL, err, sizeof(err)), -ENOENT);
        SC_CHECK(strstr(err, "none/such: state directory") != NULL);
        SC_CHECK_INT(
            sc_keystore_open(s_key_path(s_fresh_dir("notdir")), &out, NULL, err, sizeof(err)),
            -ENOENT);
        dir = s_fresh_dir("notdir");
        SC_REQUIRE(sc_test_write_file(s_key_path(dir), "x", 0600) == 0);
        SC_CHECK_INT(sc_keystore_open(s_key_path(dir), &out, NULL, err, sizeof(err)), -ENOTDIR);
    }
}

/* Daemons of one VM starting at once (agent and coordinator): N processes open the same
 * empty state directory together; all must end with one key, made by exactly one. */
SC_TEST(concurrent_first_starts_share_one_key)
{
    enum { N = 6, ROUNDS = 5 };

    for (int round = 0; round < ROUNDS; round++) {
        char name[32];
        const char *dir;
        int go[2], res[2];
        pid_t pids[N];
        char keys[N][SC_CURVE_KEY_Z85_LEN + 2];
        int made = 0;

        snprintf(name, sizeof(name), "race%d", round);
        dir = s_fresh_dir(name);
        SC_REQUIRE(pipe(go) == 0 && pipe(res) == 0);
        for (int i = 0; i < N; i++) {
            if ((pids[i] = fork()) == 0) {
                sc_curve_keypair_t kp;
                char err[256], c, line[SC_CURVE_KEY_Z85_LEN + 2];
                bool created = false;

                close(go[1]);
                if (read(go[0], &c, 1) != 0) /* wait for the start: the pipe closing */
                    _exit(3);
                if (sc_keystore_open(dir, &kp, &created, err, sizeof(err)) != 0)
                    _exit(2);
                snprintf(line, sizeof(line), "%c%s", created ? 'C' : 'L', kp.public_z85);
                _exit(write(res[1], line, sizeof(line) - 1) == (ssize_t)sizeof(line) - 1 ? 0 : 4);
            }
        }
        close(go[0]);
        close(go[1]); /* start */
        close(res[1]);
        for (int i = 0; i < N; i++) {
            int status = -1;

            SC_CHECK(waitpid(pids[i], &status, 0) == pids[i] && WIFEXITED(status) &&
                     WEXITSTATUS(status) == 0);
        }
        for (int i = 0; i < N; i++) {
            SC_CHECK(read(res[0], keys[i], SC_CURVE_KEY_Z85_LEN + 1) == SC_CURVE_KEY_Z85_LEN + 1);
            keys[i][SC_CURVE_KEY_Z85_LEN + 1] = '\0';
            made += keys[i][0] == 'C';
            if (i > 0 && strcmp(keys[i] + 1, keys[0] + 1) != 0)
                SC_FAILF("round %d: process %d has key %s, process 0 %s", round, i, keys[i] + 1,
                         keys[0] + 1);
        }
        close(res[0]);
        SC_CHECK_INT(made, 1);
        SC_CHECK_INT(s_entries(dir), 1);
    }
}

SC_TEST(fingerprint)
{
    char fp[SC_KEY_FINGERPRINT_LEN + 1], fp2[SC_KEY_FINGERPRINT_LEN + 1];
    sc_curve_keypair_t a, b;

    /* ZeroMQ RFC 32's example public key; SHA-256 of its 32 bytes starts 522501f4e7a63f61
     * (computed apart, by a Z85 decoder in Python and hashlib) */
    SC_CHECK_INT(sc_keystore_fingerprint("rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7", fp), 0);
    SC_CHECK_STR(fp, "522501f4e7a63f61");
    SC_CHECK_INT(sc_keystore_fingerprint("JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6", fp), 0);
    SC_CHECK_STR(fp, "4c1b74e9878ccc22");
    SC_CHECK_INT(strlen(fp), SC_KEY_FINGERPRINT_LEN);

    SC_REQUIRE(sc_curve_keygen(&a) == 0 && sc_curve_keygen(&b) == 0);
    SC_CHECK_INT(sc_keystore_fingerprint(a.public_z85, fp), 0);
    SC_CHECK_INT(sc_keystore_fingerprint(b.public_z85, fp2), 0);
    SC_CHECK(strcmp(fp, fp2) != 0);
    SC_CHECK_INT(sc_keystore_fingerprint(a.public_z85, fp2), 0);
    SC_CHECK_STR(fp, fp2); /* stable */

    SC_CHECK_INT(sc_keystore_fingerprint("short", fp), -EINVAL);
    SC_CHECK_INT(sc_keystore_fingerprint(NULL, fp), -EINVAL);
}

int main(void)
{
    if ((size_t)snprintf(s_root, sizeof(s_root), "%s", sc_test_tmpdir("keystore")) >=
        sizeof(s_root)) {
        printf("scratch path too long: %s\n", s_root);
        return 1;
    }
    SC_RUN(first_start_makes_later_starts_load);
    SC_RUN(refused_key_files_named_and_kept);
    SC_RUN(concurrent_first_starts_share_one_key);
    SC_RUN(fingerprint);
    return sc_test_done();
}
