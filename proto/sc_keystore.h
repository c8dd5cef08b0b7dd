/* sc_keystore: a join-mode member's own CURVE key pair, made on its VM at first start and kept
 * in its state directory; the key fingerprint shown in `members` listings.
 *
 * In join mode (issue 21) no key is shipped: each VM makes its key pair the first time a
 * daemon starts, in STATE_DIR/SC_KEYSTORE_FILE, and reads it back on every later start. The
 * secret key never leaves the VM; the public key travels in the join request. The file has
 * proto/sc_curve's key pair format (sc_curve_keypair_load reads it) and is written with
 * sc_curve_keypair_save (mode 0600, fsync) to a temporary name, then published under its
 * name by link(2) and the directory fsynced: a crash leaves either no key file or a whole
 * one, and two daemons starting at once (agent and coordinator of one VM sharing a state
 * directory) end with the same key — the one that links second finds the file there and loads
 * it (rename(2) would replace a key the first one already uses).
 *
 * It lives in proto/ beside sc_curve, whose key functions (keygen, load, save) it builds on.
 * The module never logs. */
#ifndef SC_KEYSTORE_H
#define SC_KEYSTORE_H

#include <stdbool.h>
#include <stddef.h>

#include "sc_curve.h"

#define SC_KEYSTORE_FILE "member.key" /* the key pair's name in the state directory */
#define SC_KEY_FINGERPRINT_LEN 16     /* hex characters of a key fingerprint */

/* The member's key pair in state_dir (an existing directory): loaded from
 * state_dir/SC_KEYSTORE_FILE when the file is there, else made (sc_curve_keygen) and saved
 * there atomically (above). *ret_created (may be NULL) says which, for the caller to log the
 * new key's fingerprint. The key file is refused when it is not a regular file owned by the
 * user the process runs as, or when group or others have any permission on it (-EPERM, err
 * names the file: "…/member.key: mode 0640 lets others read the secret key; chmod 600 it").
 * ret_* are written only on success. 0; -ENOENT/-ENOTDIR (no state directory), -EPERM,
 * -ENOTSUP (no CURVE in libzmq), SC_E_PARSE (a damaged key file, named: it is not replaced,
 * a member's key is its identity), -ENAMETOOLONG, -ENOMEM or -errno; reason in err. */
int sc_keystore_open(const char *state_dir, sc_curve_keypair_t *ret_kp, bool *ret_created,
                     char *err, size_t errlen);

/* The short fingerprint of a public key (Z85) for listings: the first 8 bytes of the SHA-256
 * of the 32-byte key, in lower-case hex (SC_KEY_FINGERPRINT_LEN characters), into ret_fp
 * (SC_KEY_FINGERPRINT_LEN + 1 bytes). Meant for people comparing keys by eye, not as an
 * identifier: the membership keeps whole keys. 0 or -EINVAL (not a key). */
int sc_keystore_fingerprint(const char *public_z85, char ret_fp[SC_KEY_FINGERPRINT_LEN + 1]);

#endif
