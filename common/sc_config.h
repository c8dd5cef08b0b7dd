/* sc_config: one typed table of settings.
 *
 * Every key is both a command-line flag (--hook-timeout 30, --hook-timeout=30) and a
 * config-file key (hook-timeout = 30, or hook_timeout = 30; '#' starts a comment; values may
 * be "double-quoted"). --config FILE loads a file; the command line wins over the file.
 * --help prints every key with its type, default and help text.
 *
 * One file may serve every program of the set (the *_section functions): keys before any
 * section are read by every program (members, imds-url, keys...); keys after a line "[agent]"
 * or "[coordinator]" only by that program (the others skip them: that program checks them).
 * Any other section is an error, and so is a section in a file read without one.
 *
 *   typedef struct { char *endpoint; long port; double hook_timeout; bool verbose; } my_t;
 *   static const sc_cfg_key_t keys[] = {
 *       {"endpoint", SC_CFG_STRING, offsetof(my_t, endpoint), "tcp://127.0.0.1:5555", "..."},
 *       {"port", SC_CFG_INT, offsetof(my_t, port), "5555", "...", 1, 65535},
 *       {"hook-timeout", SC_CFG_SECONDS, offsetof(my_t, hook_timeout), "30", "...", 0, 86400},
 *       {"verbose", SC_CFG_BOOL, offsetof(my_t, verbose), "false", "..."},
 *   };
 *
 * The library does not log; errors come back as SC_E_CONFIG with a message naming the key. */
#ifndef SC_CONFIG_H
#define SC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum {
    SC_CFG_STRING,  /* char * (strdup'd; freed by sc_config_free) */
    SC_CFG_INT,     /* long */
    SC_CFG_SECONDS, /* double seconds, e.g. 30 or 0.5 */
    SC_CFG_BOOL,    /* bool; a flag with no value on the command line (also --name=false);
                       true/false/yes/no/on/off/1/0 in files */
    SC_CFG_TYPE_MAX
} sc_cfg_type_t;

typedef struct sc_cfg_key {
    const char *name; /* "hook-timeout": flag --hook-timeout, file key hook-timeout/hook_timeout */
    sc_cfg_type_t type; /* how the value is parsed and stored */
    size_t offset;      /* offsetof() into the caller's settings struct */
    const char *def;    /* default as text, or NULL (STRING stays NULL, others 0/false) */
    const char *help;   /* one line for --help */
    long min, max;      /* INT/SECONDS range check (inclusive) when min < max */
    bool required;      /* must be set by the file or the command line (a default does not count) */
} sc_cfg_key_t;

/* Hard limits on what the file and the command line may contain. A line and a value may be
 * long enough for the members list of a 4,096-member set (--members NAME=HOST:PORT,...); on
 * the command line the kernel caps one argument at 128 KiB, so big sets use the file. */
#define SC_CFG_FILE_MAX (1u << 20)
#define SC_CFG_LINE_MAX (512u * 1024)
#define SC_CFG_VALUE_MAX (512u * 1024)

/* Applies the defaults, then the --config FILE (if given), then argv (argv[0] is the program
 * name and is skipped; "--" ends the flags). On error returns SC_E_CONFIG (or -ENOMEM) with a
 * message in err naming the key and the expected form, e.g.
 *   --hook-timeout: "abc" is not a number of seconds (expected e.g. 30 or 0.5)
 *   config file /x.conf line 3: unknown key "hook-timout"
 * Returns 1 (not an error) when --help was given, after printing the usage to out (stdout if
 * NULL). Positional (non-flag) args are returned via ret_args/ret_nargs (borrowed pointers
 * into argv, array malloc'd: the caller frees the array) when ret_args is non-NULL, else
 * rejected. On any return the caller calls sc_config_free() on settings (which must start
 * zeroed). */
int sc_config_parse_args(const sc_cfg_key_t *table, size_t n_keys, void *settings, int argc,
                         char **argv, FILE *out, const char *usage_line, char ***ret_args,
                         size_t *ret_nargs, char *err, size_t errlen);
/* sc_config_parse_args() / sc_config_parse_text() for a shared file: section is this
 * program's ("agent", "coordinator"). */
int sc_config_parse_args_section(const sc_cfg_key_t *table, size_t n_keys, void *settings, int argc,
                                 char **argv, FILE *out, const char *usage_line,
                                 const char *section, char ***ret_args, size_t *ret_nargs,
                                 char *err, size_t errlen);
int sc_config_parse_section(const sc_cfg_key_t *table, size_t n_keys, void *settings, int argc,
                            char **argv, FILE *out, const char *usage_line, const char *section,
                            char *err, size_t errlen);
int sc_config_parse_text_section(const sc_cfg_key_t *table, size_t n_keys, void *settings,
                                 const char *text, size_t len, const char *source,
                                 const char *section, char *err, size_t errlen);
/* sc_config_parse_args() with positional arguments rejected. */
int sc_config_parse(const sc_cfg_key_t *table, size_t n_keys, void *settings, int argc, char **argv,
                    FILE *out, const char *usage_line, char *err, size_t errlen);
/* Applies config-file text (len bytes, need not be NUL-terminated) on top of what settings
 * holds; source names it in messages ("config file X"). Does not apply defaults or check
 * required keys. 0 or SC_E_CONFIG / -ENOMEM with the message in err. */
int sc_config_parse_text(const sc_cfg_key_t *table, size_t n_keys, void *settings, const char *text,
                         size_t len, const char *source, char *err, size_t errlen);
/* Applies the defaults of every key (frees strings set before). */
int sc_config_defaults(const sc_cfg_key_t *table, size_t n_keys, void *settings, char *err,
                       size_t errlen);
/* Prints the usage line and every key: flag, type, default, help, range, required. */
void sc_config_usage(const sc_cfg_key_t *table, size_t n_keys, const char *usage_line, FILE *out);
/* Frees the strings the table owns in settings and sets them to NULL. */
void sc_config_free(const sc_cfg_key_t *table, size_t n_keys, void *settings);

#endif
