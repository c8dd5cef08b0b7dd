/* sc_keystore: the member's own key pair in its state directory; key fingerprints. */
#include "sc_keystore.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>
#include <zmq.h>

#include "sc_error.h"

/* Checks the key file's owner and kind before sc_curve_keypair_load (which checks its mode).
 * 0, -ENOENT (no file: make one), -EPERM or SC_E_PARSE. */
static int s_check_owner(const char *path, char *err, size_t errlen)
{
    struct stat st;
    int rc;

    if (lstat(path, &st) != 0) {
        rc = -errno;
        return rc == -ENOENT ? rc : sc_errf(err, errlen, rc, "%s: %s", path, strerror(-rc));
    }
    if (!S_ISREG(st.st_mode))
        return sc_errf(err, errlen, SC_E_PARSE, "%s: not a regular file", path);
    if (st.st_uid != geteuid())
        return sc_errf(err, errlen, -EPERM,
                       "%s: owned by uid %u, not by uid %u that this runs as: chown it", path,
                       (unsigned)st.st_uid, (unsigned)geteuid());
    return 0;
}

/* Loads the existing key file at path. */
static int s_load(const char *path, sc_curve_keypair_t *ret_kp, char *err, size_t errlen)
{
    int rc;

    if ((rc = s_check_owner(path, err, errlen)) < 0) {
        if (rc == -ENOENT)
            sc_errf(err, errlen, rc, "%s: vanished while being read", path);
        return rc;
    }
    return sc_curve_keypair_load(path, ret_kp, err, errlen);
}

/* fsync of directory dir, so that a name linked in it survives a crash. */
static int s_sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

    if (fd < 0)
        return -errno;
    if (fsync(fd) != 0)
        rc = -errno;
    close(fd);
    return rc;
}

int sc_keystore_open(const char *state_dir, sc_curve_keypair_t *ret_kp, bool *ret_created,
                     char *err, size_t errlen)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    sc_curve_keypair_t kp;
    struct stat st;
    bool created = false;
    int rc, n;

    if (!state_dir || !ret_kp)
        return sc_errf(err, errlen, -EINVAL, "keystore: NULL argument");
    if (stat(state_dir, &st) != 0) {
        rc = -errno;
        return sc_errf(err, errlen, rc, "%s: state directory: %s", state_dir, strerror(-rc));
    }
    if (!S_ISDIR(st.st_mode))
        return sc_errf(err, errlen, -ENOTDIR, "%s: state directory: not a directory", state_dir);
    n = snprintf(path, sizeof(path), "%s/%s", state_dir, SC_KEYSTORE_FILE);
    if (n < 0 || (size_t)n >= sizeof(path) ||
        (size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= sizeof(tmp))
        return sc_errf(err, errlen, -ENAMETOOLONG, "%s: path too long", state_dir);

    /* 1. a key made before: it is this member's identity, never replaced */
    if ((rc = s_check_owner(path, err, errlen)) != -ENOENT) {
        if (rc == 0)
            rc = sc_curve_keypair_load(path, &kp, err, errlen);
        goto out;
    }

    /* 2. none: a new one, whole under a temporary name first */
    if ((rc = sc_curve_keygen(&kp)) < 0) {
        sc_errf(err, errlen, rc, "cannot make a key pair: %s",
                rc == -ENOTSUP ? "libzmq has no CURVE" : sc_strerror(rc));
        goto out;
    }
    unlink(tmp); /* left by a crashed process that had our pid */
    if ((rc = sc_curve_keypair_save(tmp, &kp, err, errlen)) < 0)
        goto out;

    /* 3. published by link, which never replaces: a daemon that got there first wins */
    rc = link(tmp, path) != 0 ? -errno : 0;
    unlink(tmp);
    if (rc == -EEXIST) {
        rc = s_load(path, &kp, err, errlen);
        goto out;
    }
    if (rc < 0) {
        sc_errf(err, errlen, rc, "%s: cannot create: %s", path, strerror(-rc));
        goto out;
    }
    if ((rc = s_sync_dir(state_dir)) < 0) {
        sc_errf(err, errlen, rc, "%s: cannot sync the directory: %s", state_dir, strerror(-rc));
        goto out;
    }
    created = true;
out:
    if (rc == 0) {
        *ret_kp = kp;
        if (ret_created)
            *ret_created = created;
    }
    sodium_memzero(&kp, sizeof(kp));
    return rc;
}

int sc_keystore_fingerprint(const char *public_z85, char ret_fp[SC_KEY_FINGERPRINT_LEN + 1])
{
    uint8_t key[32], hash[crypto_hash_sha256_BYTES];

    if (!public_z85 || !ret_fp || !sc_curve_key_valid(public_z85) ||
        !zmq_z85_decode(key, public_z85))
        return -EINVAL;
    crypto_hash_sha256(hash, key, sizeof(key));
    sodium_bin2hex(ret_fp, SC_KEY_FINGERPRINT_LEN + 1, hash, SC_KEY_FINGERPRINT_LEN / 2);
    return 0;
}
