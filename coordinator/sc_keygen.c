/* sc_keygen: the `schedcoordctl keygen` command (see sc_keygen.h). */
#include "sc_keygen.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sc_curve.h"
#include "sc_error.h"
#include "sc_msg.h"

static void s_keygen_usage(FILE *f)
{
    fprintf(f, "usage: schedcoordctl keygen [--name NAME] [--out DIR] [--force]\n"
               "  Makes a CURVE key pair, writes it to DIR/NAME.key (mode 0600) and prints\n"
               "  the keyring line \"NAME PUBLIC_KEY\" to add to every member's keyring file.\n"
               "  --name NAME  member name (default: the host name)\n"
               "  --out DIR    directory of the key file (default: .)\n"
               "  --force      overwrite an existing key file (default: refuse)\n");
}

int sc_keygen_main(int argc, char **argv)
{
    const char *name = NULL, *dir = ".";
    char host[256], path[PATH_MAX], err[512];
    bool force = false;
    sc_curve_keypair_t kp;
    int rc;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            s_keygen_usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--force") == 0) {
            force = true;
        } else if ((strcmp(argv[i], "--name") == 0 || strcmp(argv[i], "--out") == 0) &&
                   i + 1 < argc) {
            if (argv[i][2] == 'n')
                name = argv[++i];
            else
                dir = argv[++i];
        } else {
            fprintf(stderr, "keygen: unknown or incomplete option \"%s\"\n", argv[i]);
            s_keygen_usage(stderr);
            return 2;
        }
    }
    if (!name) {
        if (gethostname(host, sizeof(host)) != 0) {
            fprintf(stderr, "keygen: cannot read the host name; give --name\n");
            return 1;
        }
        host[sizeof(host) - 1] = '\0';
        name = host;
    }
    if (!sc_msg_name_valid(name)) {
        fprintf(stderr, "keygen: --name \"%s\" is not a member name (1..%d of [A-Za-z0-9._-])\n",
                name, SC_NAME_MAX);
        return 2;
    }
    if ((size_t)snprintf(path, sizeof(path), "%s/%s.key", dir, name) >= sizeof(path)) {
        fprintf(stderr, "keygen: --out path too long\n");
        return 2;
    }
    if ((rc = sc_curve_keygen(&kp)) < 0) {
        fprintf(stderr, "keygen: cannot make a key pair: %s%s\n", sc_strerror(rc),
                rc == -ENOTSUP ? " (libzmq built without CURVE)" : "");
        return 1;
    }
    if (force && unlink(path) != 0 && errno != ENOENT) {
        fprintf(stderr, "keygen: %s: cannot remove: %s\n", path, strerror(errno));
        return 1;
    }
    if ((rc = sc_curve_keypair_save(path, &kp, err, sizeof(err))) < 0) {
        fprintf(stderr, "keygen: %s%s\n", err, rc == -EEXIST ? " (use --force to replace it)" : "");
        return 1;
    }
    printf("%s %s\n", name, kp.public_z85);
    fflush(stdout);
    memset(&kp, 0, sizeof(kp));
    return 0;
}
