#include "sc_config.h"

#include "sc_error.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* Keys in one table at most (the set-tracking array is sized by it). */
#define SC_CFG_KEYS_MAX 1024

static const char *const s_type_name[SC_CFG_TYPE_MAX] = {"STRING", "INT", "SECONDS", "BOOL"};
static const char *const s_type_expect[SC_CFG_TYPE_MAX] = {
    "a string", "an integer, e.g. 5", "a number of seconds (expected e.g. 30 or 0.5)",
    "true/false, yes/no, on/off or 1/0"};

/* Where each key got its value from: 0 default, else the file line (> 0) or -1 argv. */
typedef struct s_parse {
    const sc_cfg_key_t *table; /* the caller's table */
    size_t n_keys;             /* its length */
    void *settings;            /* the caller's struct */
    int *set_at;               /* per key: 0 unset, line number in the file, or -1 argv */
    char *err;                 /* message buffer, may be NULL */
    size_t errlen;             /* its size */
    const char *section;       /* this program's [section] of a shared file, or NULL: none */
    int where;                 /* in the file: S_TOP, S_MINE or S_OTHER */
} s_parse_t;

/* The sections a shared config file may have: one per program reading it. */
static const char *const s_sections[] = {"agent", "coordinator"};
enum { S_TOP, S_MINE, S_OTHER };

/* A value made safe to quote in a message: at most 64 bytes, non-printables as '?'. */
static const char *s_quote(const char *v, char *buf, size_t len)
{
    size_t i = 0;

    for (; v[i] && i + 1 < len && i < 64; i++)
        buf[i] = isprint((unsigned char)v[i]) ? v[i] : '?';
    if (v[i] && i >= 3 && i + 1 < len) {
        buf[i - 3] = buf[i - 2] = buf[i - 1] = '.';
    }
    buf[i] = '\0';
    return buf;
}

/* Whether name (len bytes) names key, '_' and '-' being the same. */
static bool s_name_eq(const char *key, const char *name, size_t len)
{
    size_t i = 0;

    for (; i < len && key[i]; i++) {
        char a = key[i] == '_' ? '-' : key[i], b = name[i] == '_' ? '-' : name[i];
        if (a != b)
            return false;
    }
    return i == len && key[i] == '\0';
}

static const sc_cfg_key_t *s_find(const s_parse_t *p, const char *name, size_t len, size_t *ret_idx)
{
    for (size_t i = 0; i < p->n_keys; i++)
        if (s_name_eq(p->table[i].name, name, len)) {
            *ret_idx = i;
            return &p->table[i];
        }
    return NULL;
}

/* Levenshtein distance, for "did you mean". Names are short; longer ones are skipped. */
static size_t s_distance(const char *a, const char *b, size_t blen)
{
    size_t alen = strlen(a), row[65], prev;

    if (alen > 64 || blen > 64)
        return SIZE_MAX;
    for (size_t j = 0; j <= blen; j++)
        row[j] = j;
    for (size_t i = 1; i <= alen; i++) {
        prev = row[0];
        row[0] = i;
        for (size_t j = 1; j <= blen; j++) {
            size_t cur = row[j];
            char ca = a[i - 1] == '_' ? '-' : a[i - 1], cb = b[j - 1] == '_' ? '-' : b[j - 1];
            size_t best = prev + (ca != cb);
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            prev = cur;
        }
    }
    return row[blen];
}

/* " (did you mean \"x\"?)" or "". */
static void s_suggest(const s_parse_t *p, const char *name, size_t len, char *buf, size_t buflen)
{
    size_t best = SIZE_MAX, bi = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < p->n_keys; i++) {
        size_t d = s_distance(p->table[i].name, name, len);
        if (d < best) {
            best = d;
            bi = i;
        }
    }
    if (best <= 2 && best < len)
        snprintf(buf, buflen, " (did you mean \"%s\"?)", p->table[bi].name);
}

static bool s_parse_bool(const char *v, bool *ret)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};

    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0) {
            *ret = true;
            return true;
        }
        if (strcasecmp(v, no[i]) == 0) {
            *ret = false;
            return true;
        }
    }
    return false;
}

/* Seconds: a decimal number with an optional unit ms, s, m or h. No hex, inf or nan. */
static bool s_parse_seconds(const char *v, double *ret)
{
    char *end;
    double d, mult = 1.0;

    if (!(isdigit((unsigned char)v[0]) || v[0] == '.' || v[0] == '-' || v[0] == '+'))
        return false;
    for (const char *c = v; *c; c++)
        if (*c == 'x' || *c == 'X' || *c == 'n' || *c == 'N' || *c == 'i' || *c == 'I')
            return false;
    errno = 0;
    d = strtod(v, &end);
    if (end == v || errno == ERANGE)
        return false;
    if (strcmp(end, "ms") == 0)
        mult = 0.001;
    else if (strcmp(end, "s") == 0 || *end == '\0')
        mult = 1.0;
    else if (strcmp(end, "m") == 0)
        mult = 60.0;
    else if (strcmp(end, "h") == 0)
        mult = 3600.0;
    else
        return false;
    d *= mult;
    if (!isfinite(d))
        return false;
    *ret = d;
    return true;
}

static bool s_parse_long(const char *v, long *ret)
{
    char *end;
    long l;

    if (!(isdigit((unsigned char)v[0]) || v[0] == '-' || v[0] == '+'))
        return false;
    errno = 0;
    l = strtol(v, &end, 10);
    if (end == v || *end || errno == ERANGE)
        return false;
    *ret = l;
    return true;
}

/* Parses value v for key k and stores it. where is the message prefix ("--name" or
 * "config file X line N: name"). */
static int s_store(const sc_cfg_key_t *k, void *settings, const char *v, const char *where,
                   char *err, size_t errlen)
{
    char *slot = (char *)settings + k->offset;
    char q[80];

    if (strlen(v) > SC_CFG_VALUE_MAX)
        return sc_errf(err, errlen, SC_E_CONFIG, "%s: value longer than %u bytes", where,
                       SC_CFG_VALUE_MAX);
    switch (k->type) {
    case SC_CFG_STRING: {
        char *old, *s = strdup(v);
        if (!s) {
            sc_errf(err, errlen, SC_E_CONFIG, "%s: out of memory", where);
            return -ENOMEM;
        }
        memcpy(&old, slot, sizeof(old));
        free(old);
        memcpy(slot, &s, sizeof(s));
        return 0;
    }
    case SC_CFG_INT: {
        long l;
        if (!s_parse_long(v, &l))
            return sc_errf(err, errlen, SC_E_CONFIG, "%s: \"%s\" is not %s", where,
                           s_quote(v, q, sizeof(q)), s_type_expect[k->type]);
        if (k->min < k->max && (l < k->min || l > k->max))
            return sc_errf(err, errlen, SC_E_CONFIG, "%s: %ld is out of range (expected %ld..%ld)",
                           where, l, k->min, k->max);
        memcpy(slot, &l, sizeof(l));
        return 0;
    }
    case SC_CFG_SECONDS: {
        double d;
        if (!s_parse_seconds(v, &d))
            return sc_errf(err, errlen, SC_E_CONFIG, "%s: \"%s\" is not %s", where,
                           s_quote(v, q, sizeof(q)), s_type_expect[k->type]);
        if (k->min < k->max && (d < (double)k->min || d > (double)k->max))
            return sc_errf(err, errlen, SC_E_CONFIG,
                           "%s: %s is out of range (expected %ld..%ld seconds)", where,
                           s_quote(v, q, sizeof(q)), k->min, k->max);
        memcpy(slot, &d, sizeof(d));
        return 0;
    }
    case SC_CFG_BOOL: {
        bool b;
        if (!s_parse_bool(v, &b))
            return sc_errf(err, errlen, SC_E_CONFIG, "%s: \"%s\" is not %s", where,
                           s_quote(v, q, sizeof(q)), s_type_expect[k->type]);
        memcpy(slot, &b, sizeof(b));
        return 0;
    }
    default: return sc_errf(err, errlen, SC_E_CONFIG, "%s: key has an unknown type", where);
    }
}

void sc_config_free(const sc_cfg_key_t *table, size_t n_keys, void *settings)
{
    if (!table || !settings)
        return;
    for (size_t i = 0; i < n_keys; i++) {
        if (table[i].type == SC_CFG_STRING) {
            char *slot = (char *)settings + table[i].offset, *s, *null = NULL;
            memcpy(&s, slot, sizeof(s));
            free(s);
            memcpy(slot, &null, sizeof(null));
        }
    }
}

int sc_config_defaults(const sc_cfg_key_t *table, size_t n_keys, void *settings, char *err,
                       size_t errlen)
{
    if (!table || !settings || n_keys > SC_CFG_KEYS_MAX)
        return sc_errf(err, errlen, SC_E_CONFIG, "bad configuration table");
    sc_config_free(table, n_keys, settings);
    for (size_t i = 0; i < n_keys; i++) {
        const sc_cfg_key_t *k = &table[i];
        char *slot = (char *)settings + k->offset;
        char where[128];
        int rc;

        if (!k->name || k->type >= SC_CFG_TYPE_MAX)
            return sc_errf(err, errlen, SC_E_CONFIG, "bad configuration table (key %zu)", i);
        if (!k->def) {
            if (k->type == SC_CFG_INT)
                memset(slot, 0, sizeof(long));
            else if (k->type == SC_CFG_SECONDS)
                memset(slot, 0, sizeof(double));
            else if (k->type == SC_CFG_BOOL)
                memset(slot, 0, sizeof(bool));
            continue;
        }
        snprintf(where, sizeof(where), "default of %s", k->name);
        if ((rc = s_store(k, settings, k->def, where, err, errlen)) < 0)
            return rc;
    }
    return 0;
}

/* Trims spaces and tabs at both ends of [*s, *e). */
static void s_trim(const char **s, const char **e)
{
    while (*s < *e && (**s == ' ' || **s == '\t'))
        (*s)++;
    while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t' || (*e)[-1] == '\r'))
        (*e)--;
}

/* One "key = value" line (already without its newline); value has room for the line. */
static int s_line_in(s_parse_t *p, const char *src, int lineno, const char *s, const char *e,
                     char *value, size_t value_size)
{
    const char *eq, *ks, *ke, *vs, *ve, *hash;
    char where[4096 + 256], q[80], hint[128];
    const sc_cfg_key_t *k;
    size_t idx, klen;

    s_trim(&s, &e);
    if (s == e || *s == '#')
        return 0;
    for (const char *c = s; c < e; c++)
        if (*c == '\0' || (iscntrl((unsigned char)*c) && *c != '\t'))
            return sc_errf(p->err, p->errlen, SC_E_CONFIG,
                           "config file %s line %d: control character in line", src, lineno);
    if (!(eq = memchr(s, '=', (size_t)(e - s)))) {
        snprintf(value, value_size, "%.*s", (int)(e - s), s);
        return sc_errf(p->err, p->errlen, SC_E_CONFIG,
                       "config file %s line %d: expected \"key = value\", got \"%s\"", src, lineno,
                       s_quote(value, q, sizeof(q)));
    }
    ks = s;
    ke = eq;
    s_trim(&ks, &ke);
    klen = (size_t)(ke - ks);
    snprintf(value, value_size, "%.*s", (int)klen, ks);
    if (klen == 0)
        return sc_errf(p->err, p->errlen, SC_E_CONFIG,
                       "config file %s line %d: missing key before '='", src, lineno);
    if (!(k = s_find(p, ks, klen, &idx))) {
        s_suggest(p, ks, klen, hint, sizeof(hint));
        if (p->section && p->where == S_TOP && !hint[0])
            snprintf(hint, sizeof(hint),
                     " (a key of one program only goes under its [agent] or [coordinator])");
        return sc_errf(p->err, p->errlen, SC_E_CONFIG,
                       "config file %s line %d: unknown key \"%s\"%s", src, lineno,
                       s_quote(value, q, sizeof(q)), hint);
    }
    snprintf(where, sizeof(where), "config file %s line %d: %s", src, lineno, k->name);
    if (p->set_at && p->set_at[idx] > 0)
        return sc_errf(p->err, p->errlen, SC_E_CONFIG, "%s: set twice (first on line %d)", where,
                       p->set_at[idx]);
    vs = eq + 1;
    ve = e;
    s_trim(&vs, &ve);
    if (vs < ve && *vs == '"') {
        const char *close = memchr(vs + 1, '"', (size_t)(ve - vs - 1));
        const char *rest;
        if (!close)
            return sc_errf(p->err, p->errlen, SC_E_CONFIG, "%s: missing closing '\"'", where);
        rest = close + 1;
        while (rest < ve && (*rest == ' ' || *rest == '\t'))
            rest++;
        if (rest < ve && *rest != '#')
            return sc_errf(p->err, p->errlen, SC_E_CONFIG, "%s: text after the closing '\"'",
                           where);
        vs++;
        ve = close;
    } else {
        /* '#' after a blank starts a comment; "a#b" keeps its '#'. */
        for (hash = vs; hash < ve; hash++)
            if (*hash == '#' && (hash == vs || hash[-1] == ' ' || hash[-1] == '\t'))
                break;
        ve = hash;
        s_trim(&vs, &ve);
    }
    if (vs == ve && k->type != SC_CFG_STRING)
        return sc_errf(p->err, p->errlen, SC_E_CONFIG, "%s: missing value (expected %s)", where,
                       s_type_expect[k->type]);
    snprintf(value, value_size, "%.*s", (int)(ve - vs), vs);
    if (p->set_at)
        p->set_at[idx] = lineno;
    return s_store(k, p->settings, value, where, p->err, p->errlen);
}

static int s_line(s_parse_t *p, const char *src, int lineno, const char *s, const char *e)
{
    size_t n = (size_t)(e - s) + 1;
    char *value = malloc(n);
    int rc;

    if (!value)
        return sc_errf(p->err, p->errlen, -ENOMEM, "out of memory");
    rc = s_line_in(p, src, lineno, s, e, value, n);
    free(value);
    return rc;
}

/* Whether [s, e) is a "[name]" line (spaces, a '#' comment around it allowed): 1 and the
 * name in [*ns, *ne); -1 for a line that starts with '[' but is not one; 0 for any other
 * line. */
static int s_section_line(const char *s, const char *e, const char **ns, const char **ne)
{
    const char *hash = memchr(s, '#', (size_t)(e - s)), *close;
    if (hash)
        e = hash;
    s_trim(&s, &e);
    if (s == e || *s != '[')
        return 0;
    if (e - s < 2 || e[-1] != ']')
        return -1;
    close = e - 1;
    s++;
    s_trim(&s, &close);
    *ns = s;
    *ne = close;
    return 1;
}

/* A "[name]" line of a shared file: which program the following keys are for. */
static int s_section(s_parse_t *p, const char *src, int lineno, const char *ns, const char *ne)
{
    size_t n = (size_t)(ne - ns);
    char q[80], name[128];

    snprintf(name, sizeof(name), "%.*s", (int)(n < 100 ? n : 100), ns);
    if (strlen(p->section) == n && strncmp(ns, p->section, n) == 0) {
        p->where = S_MINE;
        return 0;
    }
    for (size_t i = 0; i < sizeof(s_sections) / sizeof(s_sections[0]); i++) {
        if (strlen(s_sections[i]) == n && strncmp(ns, s_sections[i], n) == 0) {
            p->where = S_OTHER; /* another program's keys: that program checks them */
            return 0;
        }
    }
    return sc_errf(p->err, p->errlen, SC_E_CONFIG,
                   "config file %s line %d: unknown section [%s] (expected [agent] or "
                   "[coordinator])",
                   src, lineno, s_quote(name, q, sizeof(q)));
}

static int s_text(s_parse_t *p, const char *text, size_t len, const char *src)
{
    const char *s = text, *end = text + len;
    int lineno = 0, rc;

    if (len > SC_CFG_FILE_MAX)
        return sc_errf(p->err, p->errlen, SC_E_CONFIG, "config file %s: larger than %u bytes", src,
                       SC_CFG_FILE_MAX);
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *e = nl ? nl : end;

        lineno++;
        if (e - s > SC_CFG_LINE_MAX)
            return sc_errf(p->err, p->errlen, SC_E_CONFIG,
                           "config file %s line %d: longer than %u bytes", src, lineno,
                           SC_CFG_LINE_MAX);
        const char *ns, *ne;
        /* in a shared file a broken section line is an error wherever it stands: skipped with
         * the other program's keys, it would skip this program's own section with them */
        int sec = p->section ? s_section_line(s, e, &ns, &ne) : 0;
        if (sec > 0)
            rc = s_section(p, src, lineno, ns, ne);
        else if (sec < 0) {
            char q[80], line[100];
            snprintf(line, sizeof(line), "%.*s", (int)(e - s < 90 ? e - s : 90), s);
            rc = sc_errf(p->err, p->errlen, SC_E_CONFIG,
                         "config file %s line %d: expected a section line like [agent], got "
                         "\"%s\"",
                         src, lineno, s_quote(line, q, sizeof(q)));
        } else if (p->where == S_OTHER)
            rc = 0;
        else
            rc = s_line(p, src, lineno, s, e);
        if (rc < 0)
            return rc;
        s = nl ? nl + 1 : end;
    }
    return 0;
}

int sc_config_parse_text(const sc_cfg_key_t *table, size_t n_keys, void *settings, const char *text,
                         size_t len, const char *source, char *err, size_t errlen)
{
    return sc_config_parse_text_section(table, n_keys, settings, text, len, source, NULL, err,
                                        errlen);
}

int sc_config_parse_text_section(const sc_cfg_key_t *table, size_t n_keys, void *settings,
                                 const char *text, size_t len, const char *source,
                                 const char *section, char *err, size_t errlen)
{
    s_parse_t p = {table, n_keys, settings, NULL, err, errlen, section, S_TOP};
    int rc;

    if (!table || !settings || (len && !text) || n_keys > SC_CFG_KEYS_MAX)
        return sc_errf(err, errlen, SC_E_CONFIG, "bad arguments");
    if (!(p.set_at = calloc(n_keys + 1, sizeof(*p.set_at)))) {
        sc_errf(err, errlen, SC_E_CONFIG, "out of memory");
        return -ENOMEM;
    }
    rc = s_text(&p, text ? text : "", len, source ? source : "(text)");
    free(p.set_at);
    return rc;
}

static int s_file(s_parse_t *p, const char *path)
{
    struct stat st;
    char *buf = NULL;
    size_t len = 0;
    int fd, rc;

    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return sc_errf(p->err, p->errlen, SC_E_CONFIG, "--config %s: cannot read: %s", path,
                       strerror(errno));
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return sc_errf(p->err, p->errlen, SC_E_CONFIG,
                       "--config %s: cannot read: not a regular file", path);
    }
    if (st.st_size > (off_t)SC_CFG_FILE_MAX) {
        close(fd);
        return sc_errf(p->err, p->errlen, SC_E_CONFIG, "--config %s: larger than %u bytes", path,
                       SC_CFG_FILE_MAX);
    }
    if (!(buf = malloc((size_t)st.st_size + 1))) {
        close(fd);
        sc_errf(p->err, p->errlen, SC_E_CONFIG, "--config %s: out of memory", path);
        return -ENOMEM;
    }
    /* Reads to EOF (the file may change size under us), never past the limit. */
    for (;;) {
        ssize_t n = read(fd, buf + len, (size_t)st.st_size + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = sc_errf(p->err, p->errlen, SC_E_CONFIG, "--config %s: cannot read: %s", path,
                         strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > (size_t)st.st_size) {
            rc = sc_errf(p->err, p->errlen, SC_E_CONFIG, "--config %s: file changed while read",
                         path);
            goto out;
        }
    }
    rc = s_text(p, buf, len, path);
out:
    free(buf);
    close(fd);
    return rc;
}

/* Whether a is "--name" or "--name=...", returning the value part (or NULL). */
static bool s_is_flag(const char *a, const char *name, const char **ret_value)
{
    size_t n = strlen(name);

    if (strncmp(a, "--", 2) != 0 || strncmp(a + 2, name, n) != 0)
        return false;
    if (a[2 + n] == '\0') {
        *ret_value = NULL;
        return true;
    }
    if (a[2 + n] == '=') {
        *ret_value = a + 3 + n;
        return true;
    }
    return false;
}

void sc_config_usage(const sc_cfg_key_t *table, size_t n_keys, const char *usage_line, FILE *out)
{
    if (!out)
        out = stdout;
    if (usage_line)
        fprintf(out, "%s\n\n", usage_line);
    fprintf(out, "A BOOL is set by its flag alone (--flag=false, or false in a file, unsets it); "
                 "SECONDS may\nhave a fraction (0.5); MIN..MAX is the range accepted.\n\n");
    fprintf(out, "Options (each also a config-file key: name = value, '-' or '_'):\n");
    fprintf(out, "  --config FILE\n      read settings from FILE; the command line wins\n");
    fprintf(out, "  --help\n      print this help and exit\n");
    for (size_t i = 0; table && i < n_keys; i++) {
        const sc_cfg_key_t *k = &table[i];

        if (!k->name || k->type >= SC_CFG_TYPE_MAX)
            continue;
        fprintf(out, "  --%s%s%s\n      %s", k->name, k->type == SC_CFG_BOOL ? "" : " ",
                k->type == SC_CFG_BOOL ? "" : s_type_name[k->type], k->help ? k->help : "");
        fprintf(out, " [%s", s_type_name[k->type]);
        if (k->def)
            fprintf(out, ", default %s", k->def);
        if ((k->type == SC_CFG_INT || k->type == SC_CFG_SECONDS) && k->min < k->max)
            fprintf(out, ", %ld..%ld", k->min, k->max);
        if (k->required)
            fprintf(out, ", required");
        fprintf(out, "]\n");
    }
}

int sc_config_parse_args(const sc_cfg_key_t *table, size_t n_keys, void *settings, int argc,
                         char **argv, FILE *out, const char *usage_line, char ***ret_args,
                         size_t *ret_nargs, char *err, size_t errlen)
{
    return sc_config_parse_args_section(table, n_keys, settings, argc, argv, out, usage_line, NULL,
                                        ret_args, ret_nargs, err, errlen);
}

int sc_config_parse_args_section(const sc_cfg_key_t *table, size_t n_keys, void *settings, int argc,
                                 char **argv, FILE *out, const char *usage_line,
                                 const char *section, char ***ret_args, size_t *ret_nargs,
                                 char *err, size_t errlen)
{
    s_parse_t p = {table, n_keys, settings, NULL, err, errlen, section, S_TOP};
    const char *config = NULL, *v;
    char **args = NULL, q[80], hint[128];
    size_t nargs = 0;
    bool dashdash = false;
    int rc;

    if (err && errlen)
        err[0] = '\0';
    if (!table || !settings || argc < 0 || (argc && !argv) || n_keys > SC_CFG_KEYS_MAX)
        return sc_errf(err, errlen, SC_E_CONFIG, "bad arguments");
    /* --help first: it answers even when other arguments are wrong. */
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            sc_config_usage(table, n_keys, usage_line, out);
            return 1;
        }
    }
    if ((rc = sc_config_defaults(table, n_keys, settings, err, errlen)) < 0)
        return rc;
    if (!(p.set_at = calloc(n_keys + 1, sizeof(*p.set_at))) ||
        !(args = calloc((size_t)argc + 1, sizeof(*args)))) {
        rc = -ENOMEM;
        sc_errf(err, errlen, SC_E_CONFIG, "out of memory");
        goto out;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (s_is_flag(argv[i], "config", &v)) {
            if (!v && i + 1 < argc)
                v = argv[++i];
            if (!v || !*v) {
                rc = sc_errf(err, errlen, SC_E_CONFIG,
                             "--config: missing value (expected a file name)");
                goto out;
            }
            if (config) {
                rc = sc_errf(err, errlen, SC_E_CONFIG, "--config: given twice");
                goto out;
            }
            config = v;
        }
    }
    if (config && (rc = s_file(&p, config)) < 0)
        goto out;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *name, *eq;
        const sc_cfg_key_t *k;
        char where[128];
        size_t idx, nlen;
        bool negated = false;

        if (dashdash || a[0] != '-' || a[1] == '\0') {
            args[nargs++] = argv[i];
            continue;
        }
        if (strcmp(a, "--") == 0) {
            dashdash = true;
            continue;
        }
        if (s_is_flag(a, "config", &v)) {
            if (!v)
                i++;
            continue;
        }
        if (a[1] != '-') {
            rc = sc_errf(err, errlen, SC_E_CONFIG,
                         "unknown option \"%s\" (options are --name or --name=value)",
                         s_quote(a, q, sizeof(q)));
            goto out;
        }
        name = a + 2;
        eq = strchr(name, '=');
        nlen = eq ? (size_t)(eq - name) : strlen(name);
        k = s_find(&p, name, nlen, &idx);
        if (!k && !eq && nlen > 3 && strncmp(name, "no-", 3) == 0) {
            /* --no-NAME for a BOOL key */
            k = s_find(&p, name + 3, nlen - 3, &idx);
            if (k && k->type != SC_CFG_BOOL)
                k = NULL;
            negated = k != NULL;
        }
        if (!k) {
            char nm[80];
            snprintf(nm, sizeof(nm), "%.*s", (int)(nlen < 64 ? nlen : 64), name);
            s_suggest(&p, name, nlen, hint, sizeof(hint));
            rc = sc_errf(err, errlen, SC_E_CONFIG, "unknown option \"--%s\"%s",
                         s_quote(nm, q, sizeof(q)), hint);
            goto out;
        }
        snprintf(where, sizeof(where), "--%s", k->name);
        if (k->type == SC_CFG_BOOL) {
            v = eq ? eq + 1 : negated ? "false" : "true";
        } else if (eq) {
            v = eq + 1;
        } else if (i + 1 < argc) {
            v = argv[++i];
        } else {
            rc = sc_errf(err, errlen, SC_E_CONFIG, "%s: missing value (expected %s)", where,
                         s_type_expect[k->type]);
            goto out;
        }
        if (k->type != SC_CFG_STRING && !*v) {
            rc = sc_errf(err, errlen, SC_E_CONFIG, "%s: missing value (expected %s)", where,
                         s_type_expect[k->type]);
            goto out;
        }
        if ((rc = s_store(k, settings, v, where, err, errlen)) < 0)
            goto out;
        p.set_at[idx] = -1;
    }
    for (size_t i = 0; i < n_keys; i++) {
        if (table[i].required && !p.set_at[i]) {
            rc = sc_errf(err, errlen, SC_E_CONFIG,
                         "missing required setting \"%s\" (--%s VALUE, or %s = VALUE in the "
                         "config file)",
                         table[i].name, table[i].name, table[i].name);
            goto out;
        }
    }
    if (nargs && !ret_args) {
        rc = sc_errf(err, errlen, SC_E_CONFIG, "unexpected argument \"%s\"",
                     s_quote(args[0], q, sizeof(q)));
        goto out;
    }
    if (ret_args) {
        *ret_args = args;
        args = NULL;
        if (ret_nargs)
            *ret_nargs = nargs;
    }
    rc = 0;
out:
    free(args);
    free(p.set_at);
    return rc;
}

int sc_config_parse(const sc_cfg_key_t *table, size_t n_keys, void *settings, int argc, char **argv,
                    FILE *out, const char *usage_line, char *err, size_t errlen)
{
    return sc_config_parse_args(table, n_keys, settings, argc, argv, out, usage_line, NULL, NULL,
                                err, errlen);
}

int sc_config_parse_section(const sc_cfg_key_t *table, size_t n_keys, void *settings, int argc,
                            char **argv, FILE *out, const char *usage_line, const char *section,
                            char *err, size_t errlen)
{
    return sc_config_parse_args_section(table, n_keys, settings, argc, argv, out, usage_line,
                                        section, NULL, NULL, err, errlen);
}
