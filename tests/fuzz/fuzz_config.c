/* Fuzzes sc_config: the input is config-file text (sc_config_parse_text), or, when it starts
 * with the byte 0x01, a command line whose arguments are separated by NUL bytes
 * (sc_config_parse_args, --config dropped so that no file is opened), or, after the byte 0x02,
 * a --members value (sc_members_parse: an accepted list has valid unique names, tcp://
 * endpoints and a 16-hex-digit digest; a refused one has a reason), or, after the byte 0x03, a
 * shared file with [agent] / [coordinator] sections read as the agent. Settings are freed after
 * each input, so a leak of a parsed string shows up. */
#include "sc_config.h"
#include "sc_error.h"
#include "sc_members.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct fuzz_settings {
    char *name;     /* a string key */
    char *path;     /* a required string key */
    long count;     /* an int with range */
    long any;       /* an int without range */
    double timeout; /* seconds with range */
    double period;  /* seconds without range */
    bool flag;      /* a bool */
    bool other;     /* a bool defaulting to true */
} fuzz_settings_t;

static const sc_cfg_key_t s_keys[] = {
    {"name", SC_CFG_STRING, offsetof(fuzz_settings_t, name), "default", "a string", 0, 0, false},
    {"hook-path", SC_CFG_STRING, offsetof(fuzz_settings_t, path), NULL, "a path", 0, 0, true},
    {"count", SC_CFG_INT, offsetof(fuzz_settings_t, count), "3", "an int", 1, 100, false},
    {"any", SC_CFG_INT, offsetof(fuzz_settings_t, any), NULL, "an int", 0, 0, false},
    {"hook-timeout", SC_CFG_SECONDS, offsetof(fuzz_settings_t, timeout), "30", "seconds", 0, 86400,
     false},
    {"period", SC_CFG_SECONDS, offsetof(fuzz_settings_t, period), "0.5", "seconds", 0, 0, false},
    {"flag", SC_CFG_BOOL, offsetof(fuzz_settings_t, flag), "false", "a bool", 0, 0, false},
    {"other", SC_CFG_BOOL, offsetof(fuzz_settings_t, other), "true", "a bool", 0, 0, false},
};
#define N_KEYS (sizeof(s_keys) / sizeof(s_keys[0]))
#define FUZZ_ARGS_MAX 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void s_argv(const uint8_t *data, size_t size)
{
    fuzz_settings_t s;
    char *copy = malloc(size + 1), *argv[FUZZ_ARGS_MAX + 2], **rest = NULL, err[512];
    size_t nrest = 0;
    int argc = 0;
    static FILE *devnull;

    if (!copy)
        return;
    memcpy(copy, data, size);
    copy[size] = '\0';
    if (!devnull)
        devnull = fopen("/dev/null", "w");
    argv[argc++] = copy; /* argv[0], skipped by the parser */
    for (char *p = copy + 1; p <= copy + size && argc < FUZZ_ARGS_MAX; p += strlen(p) + 1) {
        if (strncmp(p, "--config", 8) == 0)
            continue;
        argv[argc++] = p;
    }
    argv[argc] = NULL;
    memset(&s, 0, sizeof(s));
    if (devnull)
        sc_config_parse_args(s_keys, N_KEYS, &s, argc, argv, devnull, "usage: fuzz", &rest, &nrest,
                             err, sizeof(err));
    free(rest);
    sc_config_free(s_keys, N_KEYS, &s);
    free(copy);
}

static void s_members(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), err[512] = "", digest[SC_MEMBERS_DIGEST_LEN + 1];
    sc_member_spec_t *m = NULL;
    size_t n = 0;
    int rc;

    if (!text)
        return;
    memcpy(text, data, size);
    text[size] = '\0';
    rc = sc_members_parse(text, &m, &n, err, sizeof(err));
    if (rc != 0) {
        if (rc != SC_E_CONFIG && rc != -ENOMEM)
            abort();
        if (rc == SC_E_CONFIG && !err[0])
            abort(); /* a refusal without a reason */
    } else {
        if (n < 1 || n > SC_MEMBERS_MAX)
            abort();
        for (size_t i = 0; i < n; i++) {
            if (!sc_msg_name_valid(m[i].name) || strncmp(m[i].endpoint, "tcp://", 6) != 0)
                abort();
            for (size_t j = 0; j < i; j++)
                if (!strcmp(m[i].name, m[j].name))
                    abort();
        }
        sc_members_digest(m, n, 0, digest);
        if (strlen(digest) != SC_MEMBERS_DIGEST_LEN ||
            strspn(digest, "0123456789abcdef") != SC_MEMBERS_DIGEST_LEN)
            abort();
    }
    free(m);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_settings_t s;
    char err[512];

    if (size > 0 && data[0] == 0x02) {
        s_members(data + 1, size - 1);
        return 0;
    }

    if (size > 0 && data[0] == 0x01) {
        s_argv(data, size);
        return 0;
    }
    memset(&s, 0, sizeof(s));
    if (size > 0 && data[0] == 0x03) { /* a shared file read as the agent */
        if (sc_config_defaults(s_keys, N_KEYS, &s, err, sizeof(err)) == 0)
            sc_config_parse_text_section(s_keys, N_KEYS, &s, (const char *)data + 1, size - 1,
                                         "fuzz", "agent", err, sizeof(err));
        sc_config_free(s_keys, N_KEYS, &s);
        return 0;
    }
    if (sc_config_defaults(s_keys, N_KEYS, &s, err, sizeof(err)) == 0)
        sc_config_parse_text(s_keys, N_KEYS, &s, (const char *)data, size, "fuzz", err,
                             sizeof(err));
    sc_config_free(s_keys, N_KEYS, &s);
    return 0;
}
