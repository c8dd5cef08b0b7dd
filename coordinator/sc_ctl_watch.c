/* schedcoordctl watch: see sc_ctl_watch.h. */
#include "sc_ctl_watch.h"

#include "sc_ctl.h"
#include "sc_time.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define S_ROWS_MAX 16      /* VMs listed in a fault domain's column; the rest counted */
#define S_FDS_MAX 32       /* fault domain columns; more are not drawn (counted) */
#define S_EVENTS_MAX 12    /* events listed in a frame; the rest counted */
#define S_EV_VMS_MAX 4     /* VMs named on an event's line; the rest counted */
#define S_NAMES_MAX 8      /* VMs named per state on a plain line; the rest counted */
#define S_INTERVAL_MIN 0.1 /* seconds: --interval and --until-idle bounds */
#define S_INTERVAL_MAX 3600.0

/* The member states in the order the grid's counts and the plain lines give them, with their
 * color (SGR parameters). A state not listed comes last, uncolored. */
static const struct {
    const char *name; /* as status --json writes it */
    const char *sgr;  /* its color */
} s_states[] = {
    {"healthy", "32"},    {"draining", "33"},   {"drained", "1;33"},
    {"impacted", "1;31"}, {"recovering", "36"}, {"gone", "35"},
};
#define S_N_STATES (sizeof(s_states) / sizeof(s_states[0]))

/* ---- reading the status --------------------------------------------------------------- */

static const char *s_str(json_object *o, const char *key, const char *def)
{
    json_object *v;
    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
        return def;
    return json_object_get_string(v);
}

static bool s_has(json_object *o, const char *key)
{
    json_object *v;
    return json_object_object_get_ex(o, key, &v) && v != NULL;
}

static size_t s_len(json_object *o, const char *key)
{
    json_object *v;
    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_array))
        return 0;
    return json_object_array_length(v);
}

static json_object *s_idx(json_object *o, const char *key, size_t i)
{
    return json_object_array_get_idx(json_object_object_get(o, key), i);
}

/* One member as the view needs it. */
typedef struct {
    const char *name;  /* borrowed from the status */
    const char *state; /* healthy, draining, ... */
    int fd;            /* fault domain, -1 unknown */
    char mark;         /* '!' agent not heard from, '?' IMDS blind, ' ' fine */
} s_member_t;

static s_member_t s_member(json_object *st, size_t i)
{
    json_object *m = s_idx(st, "members", i), *fd;
    s_member_t r = {s_str(m, "name", "?"), s_str(m, "state", "?"), -1, ' '};

    if (json_object_object_get_ex(m, "fault_domain", &fd) && json_object_is_type(fd, json_type_int))
        r.fd = json_object_get_int(fd);
    if (!json_object_get_boolean(json_object_object_get(m, "alive")))
        r.mark = '!';
    else if (json_object_get_boolean(json_object_object_get(m, "imds_stale")))
        r.mark = '?';
    return r;
}

static size_t s_state_rank(const char *state)
{
    for (size_t i = 0; i < S_N_STATES; i++)
        if (strcmp(state, s_states[i].name) == 0)
            return i;
    return S_N_STATES;
}

static int s_cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The fault domains of the members, ascending, at most max; returns how many. */
static size_t s_fds(json_object *st, int *fds, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < s_len(st, "members"); i++) {
        int fd = s_member(st, i).fd;
        size_t k = 0;
        while (k < n && fds[k] != fd)
            k++;
        if (k == n && n < max)
            fds[n++] = fd;
    }
    qsort(fds, n, sizeof(*fds), s_cmp_int);
    return n;
}

/* The event is not over, or still waited for (its VMs' recover). */
static bool s_event_open(json_object *e)
{
    return !s_has(e, "ended_ms") || s_has(e, "waiting_for");
}

bool sc_ctl_watch_is_busy(json_object *st)
{
    for (size_t i = 0; i < s_len(st, "events"); i++)
        if (s_event_open(s_idx(st, "events", i)))
            return true;
    for (size_t i = 0; i < s_len(st, "members"); i++) {
        const char *state = s_member(st, i).state;
        if (strcmp(state, "healthy") != 0 && strcmp(state, "gone") != 0)
            return true;
    }
    return false;
}

/* ---- text pieces ---------------------------------------------------------------------- */

static void s_sgr(FILE *out, bool color, const char *sgr)
{
    if (color && sgr)
        fprintf(out, "\033[%sm", sgr);
}

static void s_sgr_end(FILE *out, bool color, const char *sgr)
{
    if (color && sgr)
        fputs("\033[0m", out);
}

/* "in 4 min 10 s", "12 s ago", "now" for secs from now. */
static void s_fmt_in(int64_t secs, char *buf, size_t len)
{
    int64_t s = secs < 0 ? -secs : secs;
    char d[48];

    if (s == 0) {
        snprintf(buf, len, "now");
        return;
    }
    if (s < 60)
        snprintf(d, sizeof(d), "%lld s", (long long)s);
    else if (s < 3600)
        snprintf(d, sizeof(d), "%lld min %lld s", (long long)(s / 60), (long long)(s % 60));
    else if (s < 86400)
        snprintf(d, sizeof(d), "%lld h %lld min", (long long)(s / 3600),
                 (long long)(s % 3600 / 60));
    else
        snprintf(d, sizeof(d), "%lld d %lld h", (long long)(s / 86400),
                 (long long)(s % 86400 / 3600));
    if (secs > 0)
        snprintf(buf, len, "in %s", d);
    else
        snprintf(buf, len, "%s ago", d);
}

static void s_fmt_hms(int64_t ms, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%H:%M:%S", &tm))
        snprintf(buf, len, "-");
}

/* Rounds ms down to seconds, also below 0. */
static int64_t s_secs(int64_t ms)
{
    return ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
}

/* "vm_0 vm_3 (FD 0)" for the event's Resources, naming at most max VMs. */
static void s_event_vms(json_object *st, json_object *e, size_t max, FILE *out)
{
    size_t n = s_len(e, "resources");
    int fds[S_FDS_MAX];
    size_t nfd = 0;
    bool unknown = false;

    for (size_t i = 0; i < n; i++) {
        const char *vm = json_object_get_string(s_idx(e, "resources", i));
        if (i < max)
            fprintf(out, "%s%s", i ? " " : "", vm ? vm : "?");
        for (size_t k = 0; vm && k < s_len(st, "members"); k++) {
            s_member_t m = s_member(st, k);
            size_t f = 0;
            if (strcmp(m.name, vm) != 0)
                continue;
            while (f < nfd && fds[f] != m.fd)
                f++;
            if (m.fd < 0)
                unknown = true;
            else if (f == nfd && nfd < S_FDS_MAX)
                fds[nfd++] = m.fd;
        }
    }
    if (n > max)
        fprintf(out, " +%zu", n - max);
    if (!n)
        fputs("(no VM)", out);
    qsort(fds, nfd, sizeof(*fds), s_cmp_int);
    fputs(" (FD ", out);
    for (size_t f = 0; f < nfd; f++)
        fprintf(out, "%s%d", f ? "," : "", fds[f]);
    fputs(unknown || !nfd ? (nfd ? ",?)" : "?)") : ")", out);
}

/* What the event's timing column says: "in 4 min 10 s" before NotBefore, "started 3 s ago",
 * "ended 5 s ago". */
static void s_event_when(json_object *e, int64_t now_ms, char *buf, size_t len)
{
    json_object *v;
    char d[64];

    if (json_object_object_get_ex(e, "ended_ms", &v) && v) {
        s_fmt_in(s_secs(json_object_get_int64(v) - now_ms), d, sizeof(d));
        snprintf(buf, len, "ended %s", d);
    } else if (json_object_object_get_ex(e, "not_before", &v) &&
               json_object_is_type(v, json_type_int)) {
        s_fmt_in(json_object_get_int64(v) - s_secs(now_ms), d, sizeof(d));
        snprintf(buf, len, "NotBefore %s", d);
    } else if (json_object_object_get_ex(e, "started_ms", &v) && v) {
        s_fmt_in(s_secs(json_object_get_int64(v) - now_ms), d, sizeof(d));
        snprintf(buf, len, "started %s", d);
    } else {
        snprintf(buf, len, "-");
    }
}

static const char *s_event_status(json_object *e)
{
    return s_has(e, "ended_ms") ? s_str(e, "ended_how", "ended") : s_str(e, "status", "?");
}

static const char *s_status_sgr(const char *status)
{
    if (strcmp(status, "Scheduled") == 0)
        return "33";
    if (strcmp(status, "Started") == 0)
        return "1;31";
    return "32";
}

static const char *s_approval_sgr(const char *approval)
{
    if (strcmp(approval, "approved") == 0)
        return "32";
    if (strcmp(approval, "failed") == 0)
        return "1;31";
    return strcmp(approval, "intent") == 0 ? "33" : NULL;
}

/* "leader vm_0, term 4, approvals on" (or who this coordinator is when it follows). */
static void s_who(json_object *st, FILE *out)
{
    const char *leader = s_str(st, "leader", NULL);

    if (leader)
        fprintf(out, "leader %s", leader);
    else
        fprintf(out, "%s follows, decides nothing", s_str(st, "self", "this coordinator"));
    json_object *term = json_object_object_get(st, "term");

    fprintf(out, ", term %s, approvals %s%s", term ? json_object_get_string(term) : "?",
            json_object_get_boolean(json_object_object_get(st, "paused")) ? "PAUSED" : "on",
            json_object_get_boolean(json_object_object_get(st, "starting")) ? ", starting" : "");
}

/* ---- the frame -------------------------------------------------------------------------- */

/* text in its color, then spaces up to width visible characters */
static void s_cell(FILE *out, bool color, const char *sgr, const char *text, size_t width)
{
    size_t n = strlen(text);
    s_sgr(out, color, sgr);
    fputs(text, out);
    s_sgr_end(out, color, sgr);
    fprintf(out, "%*s", n < width ? (int)(width - n) : 0, "");
}

/* The grid: one column per fault domain, one row per VM ("vm_0 draining !"). */
static void s_grid(json_object *st, bool color, FILE *out)
{
    int fds[S_FDS_MAX];
    size_t nfd = s_fds(st, fds, S_FDS_MAX), nm = s_len(st, "members");
    size_t width[S_FDS_MAX] = {0}, namew[S_FDS_MAX] = {0}, statew[S_FDS_MAX] = {0};
    size_t count[S_FDS_MAX] = {0}, rows = 0, hidden = 0;

    if (!nm) {
        fputs("(no members)\n", out);
        return;
    }
    for (size_t i = 0; i < nm; i++) {
        s_member_t m = s_member(st, i);
        size_t c = 0;
        while (c < nfd && fds[c] != m.fd)
            c++;
        if (c == nfd) {
            hidden++;
            continue;
        }
        count[c]++;
        if (strlen(m.name) > namew[c])
            namew[c] = strlen(m.name);
        if (strlen(m.state) > statew[c])
            statew[c] = strlen(m.state);
    }
    for (size_t c = 0; c < nfd; c++) {
        width[c] = namew[c] + 1 + statew[c] + 2;
        if (width[c] < 10)
            width[c] = 10;
        if (count[c] > rows)
            rows = count[c];
    }
    if (rows > S_ROWS_MAX)
        rows = S_ROWS_MAX;
    for (size_t r = 0; r <= rows; r++) { /* row 0: the headers */
        char *line = NULL;
        size_t len = 0;
        FILE *row = open_memstream(&line, &len);
        if (!row)
            return;
        for (size_t c = 0; c < nfd; c++) {
            size_t seen = 0, i;
            s_member_t m = {NULL, NULL, -1, ' '};
            char text[64];
            for (i = 0; r > 0 && i < nm; i++) {
                m = s_member(st, i);
                if (m.fd == fds[c] && ++seen == r)
                    break;
            }
            if (c > 0)
                fputs("   ", row);
            if (r == 0) {
                if (fds[c] >= 0)
                    snprintf(text, sizeof(text), "FD %d", fds[c]);
                else
                    snprintf(text, sizeof(text), "FD ?");
                s_cell(row, color, "1", text, width[c]);
            } else if (r == rows && count[c] > rows) {
                snprintf(text, sizeof(text), "+%zu more", count[c] - rows + 1);
                s_cell(row, color, NULL, text, width[c]);
            } else if (i < nm) {
                size_t k = s_state_rank(m.state);
                fprintf(row, "%-*s ", (int)namew[c], m.name);
                s_cell(row, color, k < S_N_STATES ? s_states[k].sgr : NULL, m.state, statew[c]);
                fputc(' ', row);
                snprintf(text, sizeof(text), "%c", m.mark);
                s_cell(row, color, m.mark != ' ' ? "1;31" : NULL, text,
                       width[c] - namew[c] - 1 - statew[c] - 1);
            } else {
                s_cell(row, color, NULL, "", width[c]);
            }
        }
        fclose(row);
        while (len > 0 && line[len - 1] == ' ') /* no padding at the end of a line */
            line[--len] = '\0';
        fprintf(out, "%s\n", line);
        free(line);
    }
    if (hidden)
        fprintf(out, "(%zu VMs in fault domains not drawn: schedcoordctl status)\n", hidden);
}

/* "6 VMs in 3 fault domains: 4 healthy, 2 draining" */
static void s_counts(json_object *st, FILE *out)
{
    size_t nm = s_len(st, "members"), by[S_N_STATES + 1] = {0};
    int fds[S_FDS_MAX];
    bool first = true;

    for (size_t i = 0; i < nm; i++)
        by[s_state_rank(s_member(st, i).state)]++;
    fprintf(out, "%zu VMs in %zu fault domains:", nm, s_fds(st, fds, S_FDS_MAX));
    for (size_t k = 0; k <= S_N_STATES; k++) {
        if (!by[k])
            continue;
        fprintf(out, "%s %zu %s", first ? "" : ",", by[k],
                k < S_N_STATES ? s_states[k].name : "other");
        first = false;
    }
    fputc('\n', out);
}

static void s_events(json_object *st, int64_t now_ms, bool color, FILE *out)
{
    size_t ne = s_len(st, "events"), shown = 0, vmw = 8;
    char vms[S_EVENTS_MAX][256];
    json_object *list[S_EVENTS_MAX];

    /* open events first, then the ones over (kept in the status for a while) */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < ne; i++) {
            json_object *e = s_idx(st, "events", i);
            if (s_event_open(e) != (pass == 0) || shown == S_EVENTS_MAX)
                continue;
            FILE *f = fmemopen(vms[shown], sizeof(vms[shown]), "w");
            if (f) {
                s_event_vms(st, e, S_EV_VMS_MAX, f);
                fclose(f);
            } else {
                snprintf(vms[shown], sizeof(vms[shown]), "?");
            }
            if (strlen(vms[shown]) > vmw)
                vmw = strlen(vms[shown]);
            list[shown++] = e;
        }
    }
    if (!shown) {
        fputs("(no events: nothing scheduled)\n", out);
        return;
    }
    s_sgr(out, color, "1");
    fprintf(out, "%-8s  %-9s  %-*s  %-9s  %-10s  %s", "EVENT", "TYPE", (int)vmw, "VMS (FD)",
            "STATUS", "APPROVAL", "WHEN");
    s_sgr_end(out, color, "1");
    fputc('\n', out);
    for (size_t k = 0; k < shown; k++) {
        json_object *e = list[k];
        const char *status = s_event_status(e), *approval = s_str(e, "approval", "-");
        const char *wait = s_str(e, "waiting_for", NULL);
        char when[80];

        s_event_when(e, now_ms, when, sizeof(when));
        fprintf(out, "%-8.8s  %-9s  %-*s  ", s_str(e, "EventId", "?"), s_str(e, "type", "?"),
                (int)vmw, vms[k]);
        s_cell(out, color, s_status_sgr(status), status, 9);
        fputs("  ", out);
        s_cell(out, color, s_approval_sgr(approval), approval, 10);
        fprintf(out, "  %s\n", when);
        if (wait && strcmp(wait, "nothing") != 0)
            fprintf(out, "%-8s  waiting for: %s\n", "", wait);
    }
    if (ne > shown)
        fprintf(out, "(%zu more events: schedcoordctl events)\n", ne - shown);
}

void sc_ctl_watch_frame(json_object *st, int64_t now_ms, bool color, FILE *out)
{
    char t[16];
    bool marks = false;

    s_fmt_hms(now_ms, t, sizeof(t));
    s_sgr(out, color, "1");
    fputs("schedcoord", out);
    s_sgr_end(out, color, "1");
    fputs("  ", out);
    s_who(st, out);
    fprintf(out, "  %s UTC\n", t);
    s_counts(st, out);
    fputc('\n', out);
    s_grid(st, color, out);
    fputc('\n', out);
    s_events(st, now_ms, color, out);
    for (size_t i = 0; i < s_len(st, "members"); i++)
        marks = marks || s_member(st, i).mark != ' ';
    if (marks)
        fputs("\n! no word from its agent   ? its IMDS does not answer (blind)\n", out);
}

/* ---- plain lines ------------------------------------------------------------------------ */

/* One thing plain mode printed: a key ("fd 0", "ev ID", "who") and the text it compared. */
typedef struct {
    char *key;  /* what the line is about */
    char *text; /* what was printed, as compared (without countdowns) */
    bool seen;  /* in the last status: entries not seen are forgotten */
} s_entry_t;

struct sc_ctl_watch_memo {
    s_entry_t *e; /* what was printed last, per key */
    size_t n;     /* entries used */
    size_t cap;   /* entries allocated */
    char *err;    /* the last error printed (no answer), NULL while the coordinator answers */
};

int sc_ctl_watch_memo_new(sc_ctl_watch_memo_t **ret_memo)
{
    sc_ctl_watch_memo_t *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    *ret_memo = m;
    return 0;
}

static void s_memo_clear(sc_ctl_watch_memo_t *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->e[i].key);
        free(m->e[i].text);
    }
    m->n = 0;
}

void sc_ctl_watch_memo_destroy(sc_ctl_watch_memo_t **memo)
{
    if (!memo || !*memo)
        return;
    s_memo_clear(*memo);
    free((*memo)->e);
    free((*memo)->err);
    free(*memo);
    *memo = NULL;
}

/* Records text under key; true when it differs from what was recorded (or on no memory: a
 * line too many beats a line lost). */
static bool s_memo_changed(sc_ctl_watch_memo_t *m, const char *key, const char *text)
{
    size_t i = 0;
    char *k, *t;

    while (i < m->n && strcmp(m->e[i].key, key) != 0)
        i++;
    if (i < m->n) {
        m->e[i].seen = true;
        if (strcmp(m->e[i].text, text) == 0)
            return false;
        if (!(t = strdup(text)))
            return true;
        free(m->e[i].text);
        m->e[i].text = t;
        return true;
    }
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        s_entry_t *e = realloc(m->e, cap * sizeof(*e));
        if (!e)
            return true;
        m->e = e;
        m->cap = cap;
    }
    k = strdup(key);
    t = strdup(text);
    if (!k || !t) {
        free(k);
        free(t);
        return true;
    }
    m->e[m->n++] = (s_entry_t){k, t, true};
    return true;
}

/* Forgets the entries the last status did not hold (an event long over). */
static void s_memo_sweep(sc_ctl_watch_memo_t *m)
{
    size_t j = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (!m->e[i].seen) {
            free(m->e[i].key);
            free(m->e[i].text);
            continue;
        }
        m->e[i].seen = false;
        m->e[j++] = m->e[i];
    }
    m->n = j;
}

/* "FD 0: draining vm_0 vm_3, healthy vm_6" (names per state, in s_states' order). */
static void s_fd_line(json_object *st, int fd, FILE *out)
{
    size_t nm = s_len(st, "members");
    bool first_state = true;

    if (fd >= 0)
        fprintf(out, "FD %d:", fd);
    else
        fputs("FD ?:", out);
    for (size_t k = 0; k <= S_N_STATES; k++) {
        size_t named = 0, total = 0;
        for (size_t i = 0; i < nm; i++) {
            s_member_t m = s_member(st, i);
            if (m.fd != fd || s_state_rank(m.state) != k)
                continue;
            /* states not in s_states: each named with its own word */
            if (total++ == 0 || k == S_N_STATES) {
                fprintf(out, "%s %s", first_state ? "" : ",",
                        k < S_N_STATES ? s_states[k].name : m.state);
                first_state = false;
            }
            if (named < S_NAMES_MAX) {
                fprintf(out, " %s%s", m.name, m.mark == ' ' ? "" : (char[]){m.mark, '\0'});
                named++;
            }
        }
        if (total > named)
            fprintf(out, " +%zu", total - named);
    }
}

/* An event's plain line, split where the countdown goes: the line is head + " (in 14 s)" + tail,
 * compared without the countdown. */
static void s_event_line(json_object *st, json_object *e, int64_t now_ms, FILE *head, FILE *tail,
                         char *countdown, size_t len)
{
    json_object *nb;
    const char *wait = s_str(e, "waiting_for", NULL);

    countdown[0] = '\0';
    fprintf(head, "event %.8s %s ", s_str(e, "EventId", "?"), s_str(e, "type", "?"));
    s_event_vms(st, e, S_NAMES_MAX, head);
    fprintf(head, ": %s", s_event_status(e));
    if (!s_has(e, "ended_ms") && s_has(e, "approval"))
        fprintf(head, ", approval %s", s_str(e, "approval", "?"));
    if (!s_has(e, "ended_ms") && json_object_object_get_ex(e, "not_before", &nb) &&
        json_object_is_type(nb, json_type_int)) {
        char t[16], d[64];
        s_fmt_hms(json_object_get_int64(nb) * 1000, t, sizeof(t));
        s_fmt_in(json_object_get_int64(nb) - s_secs(now_ms), d, sizeof(d));
        fprintf(head, ", NotBefore %s UTC", t);
        snprintf(countdown, len, " (%s)", d);
    }
    if (wait && strcmp(wait, "nothing") != 0)
        fprintf(tail, "; waiting for: %s", wait);
}

/* Prints "HH:MM:SS text[countdown tail]" when key's text changed; 1 if printed. */
static int s_emit(sc_ctl_watch_memo_t *m, const char *key, const char *text, const char *countdown,
                  const char *tail, const char *hms, FILE *out)
{
    size_t len = strlen(text) + strlen(tail) + 1;
    char *cmp = malloc(len);
    bool changed;

    if (!cmp)
        return 0;
    snprintf(cmp, len, "%s%s", text, tail);
    changed = s_memo_changed(m, key, cmp);
    free(cmp);
    if (!changed)
        return 0;
    fprintf(out, "%s %s%s%s\n", hms, text, countdown, tail);
    return 1;
}

int sc_ctl_watch_changes(sc_ctl_watch_memo_t *m, json_object *st, const char *err, int64_t now_ms,
                         FILE *out)
{
    char hms[16], key[128], countdown[80];
    char *a = NULL, *b = NULL;
    size_t alen = 0, blen = 0;
    int fds[S_FDS_MAX], lines = 0;
    size_t nfd;
    FILE *fa, *fb;

    s_fmt_hms(now_ms, hms, sizeof(hms));
    if (!st) {
        const char *e = err && *err ? err : "no answer";
        s_memo_clear(m); /* once it answers again, the whole picture */
        if (m->err && strcmp(m->err, e) == 0)
            return 0;
        free(m->err);
        m->err = strdup(e);
        fprintf(out, "%s coordinator: %s (retrying)\n", hms, e);
        return 1;
    }
    free(m->err);
    m->err = NULL;
    if (!(fa = open_memstream(&a, &alen)))
        return 0;
    s_who(st, fa);
    fclose(fa);
    lines += s_emit(m, "who", a, "", "", hms, out);
    free(a);
    nfd = s_fds(st, fds, S_FDS_MAX);
    for (size_t c = 0; c < nfd; c++) {
        a = NULL;
        if (!(fa = open_memstream(&a, &alen)))
            continue;
        s_fd_line(st, fds[c], fa);
        fclose(fa);
        snprintf(key, sizeof(key), "fd %d", fds[c]);
        lines += s_emit(m, key, a, "", "", hms, out);
        free(a);
    }
    for (size_t i = 0; i < s_len(st, "events"); i++) {
        json_object *e = s_idx(st, "events", i);
        a = b = NULL;
        fa = open_memstream(&a, &alen);
        fb = open_memstream(&b, &blen);
        if (fa && fb)
            s_event_line(st, e, now_ms, fa, fb, countdown, sizeof(countdown));
        if (fa)
            fclose(fa);
        if (fb)
            fclose(fb);
        if (a && b) {
            snprintf(key, sizeof(key), "ev %s", s_str(e, "EventId", "?"));
            lines += s_emit(m, key, a, countdown, b, hms, out);
        }
        free(a);
        free(b);
    }
    s_memo_sweep(m);
    return lines;
}

/* ---- options ---------------------------------------------------------------------------- */

void sc_ctl_watch_opts_init(sc_ctl_watch_opts_t *o)
{
    *o = (sc_ctl_watch_opts_t){.interval_s = 1.0};
}

/* Seconds in [S_INTERVAL_MIN, S_INTERVAL_MAX] from text; -1 and err naming opt otherwise. */
static int s_seconds(const char *opt, const char *text, double *ret, char *err, size_t errlen)
{
    char *end = NULL;
    double v;

    errno = 0;
    v = text ? strtod(text, &end) : 0;
    if (!text || !*text || end == text || *end || errno || !(v >= S_INTERVAL_MIN) ||
        !(v <= S_INTERVAL_MAX)) {
        snprintf(err, errlen, "%s: \"%s\" is not a number of seconds from 0.1 to 3600", opt,
                 text ? text : "");
        return -1;
    }
    *ret = v;
    return 0;
}

int sc_ctl_watch_arg(sc_ctl_watch_opts_t *o, int argc, char **argv, char *err, size_t errlen)
{
    const char *a = argv[0];

    if (strcmp(a, "--once") == 0 || strcmp(a, "--plain") == 0) {
        *(a[2] == 'o' ? &o->once : &o->plain) = true;
        o->given = true;
        return 1;
    }
    if (strcmp(a, "--until-idle") == 0) {
        o->idle_s = SC_CTL_WATCH_IDLE_S;
        o->given = true;
        return 1;
    }
    if (strncmp(a, "--until-idle=", 13) == 0) {
        o->given = true;
        return s_seconds("--until-idle", a + 13, &o->idle_s, err, errlen) < 0 ? -1 : 1;
    }
    if (strncmp(a, "--interval=", 11) == 0) {
        o->given = true;
        return s_seconds("--interval", a + 11, &o->interval_s, err, errlen) < 0 ? -1 : 1;
    }
    if (strcmp(a, "--interval") == 0) {
        o->given = true;
        if (argc < 2) {
            snprintf(err, errlen,
                     "--interval: missing value (seconds between two looks, 0.1 to "
                     "3600)");
            return -1;
        }
        return s_seconds("--interval", argv[1], &o->interval_s, err, errlen) < 0 ? -1 : 2;
    }
    return 0;
}

int sc_ctl_watch_opts_check(const sc_ctl_watch_opts_t *o, char *err, size_t errlen)
{
    if (o->once && o->idle_s > 0) {
        snprintf(err, errlen,
                 "watch: --once and --until-idle do not go together (one frame, or "
                 "until nothing is in flight)");
        return -1;
    }
    return 0;
}

/* ---- running ------------------------------------------------------------------------------ */

static volatile sig_atomic_t s_stop; /* SIGINT or SIGTERM arrived */

static void s_on_signal(int sig)
{
    (void)sig;
    s_stop = 1;
}

static bool s_is_terminal(FILE *out)
{
    const char *term = getenv("TERM");
    return isatty(fileno(out)) && term && *term && strcmp(term, "dumb") != 0;
}

/* NO_COLOR set and not empty (no-color.org) */
static bool s_no_color(void)
{
    const char *v = getenv("NO_COLOR");
    return v && *v;
}

/* Writes line (no '\n') with at most width visible characters; escape sequences are copied,
 * not counted. */
static void s_put_clipped(FILE *out, const char *line, size_t len, int width)
{
    int vis = 0;
    bool esc = false;

    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)line[i];
        if (ch == '\033' && i + 1 < len && line[i + 1] == '[') {
            size_t j = i + 2;
            while (j < len && !((unsigned char)line[j] >= 0x40 && (unsigned char)line[j] <= 0x7e))
                j++;
            fwrite(line + i, 1, (j < len ? j + 1 : len) - i, out);
            i = j;
            esc = true;
            continue;
        }
        if ((ch & 0xc0) != 0x80 && vis++ >= width)
            break;
        fputc(ch, out);
    }
    if (esc)
        fputs("\033[0m", out);
}

/* Draws frame over the previous one (prev_lines above the cursor): each line rewritten and
 * cleared to its end, what is left below cleared; a frame taller than the terminal cut. */
static int s_draw(FILE *out, const char *frame, int prev_lines, int cols, int rows)
{
    int n = 0, max = rows > 2 ? rows - 1 : 1, total = 0;
    const char *p = frame;

    for (const char *q = frame; *q; q++)
        total += *q == '\n';
    if (prev_lines > 0)
        fprintf(out, "\r\033[%dA", prev_lines);
    while (*p && n < max) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (n + 1 == max && total > max) {
            char more[96];
            snprintf(more, sizeof(more),
                     "(%d more lines: a taller terminal, or schedcoordctl "
                     "status)",
                     total - n);
            s_put_clipped(out, more, strlen(more), cols - 1);
        } else {
            s_put_clipped(out, p, len, cols - 1);
        }
        fputs("\033[K\n", out);
        n++;
        p = nl ? nl + 1 : p + len;
    }
    fputs("\033[J", out);
    return n;
}

static void s_term_size(FILE *out, int *cols, int *rows)
{
    struct winsize ws;
    *cols = 80;
    *rows = 24;
    if (ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
        *cols = ws.ws_col;
        *rows = ws.ws_row;
    }
}

/* Sleeps seconds, cut short by a signal. */
static void s_sleep(double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (!s_stop && nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* The frame of one look: the status's, or the header and why there is none. */
static char *s_frame_text(json_object *st, const char *err, const sc_ctl_watch_opts_t *o,
                          bool color)
{
    char *text = NULL, t[16];
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    if (!f)
        return NULL;
    if (st) {
        sc_ctl_watch_frame(st, sc_wall_ms(), color, f);
        fprintf(f, "\nevery %g s", o->interval_s);
        if (o->idle_s > 0)
            fprintf(f, " until nothing is in flight for %g s", o->idle_s);
        fputs("; Ctrl-C to stop\n", f);
    } else {
        s_fmt_hms(sc_wall_ms(), t, sizeof(t));
        fprintf(f, "schedcoord  %s UTC\n\ncoordinator: %s\nretrying every %g s; Ctrl-C to stop\n",
                t, err, o->interval_s);
    }
    fclose(f);
    return text;
}

int sc_ctl_watch(const char *dir, const sc_ctl_watch_opts_t *o, FILE *out, FILE *errf)
{
    bool tty = !o->plain && s_is_terminal(out);
    bool color = tty && !s_no_color();
    struct sigaction sa = {.sa_handler = s_on_signal}, old_int, old_term;
    sc_ctl_watch_memo_t *memo = NULL;
    int64_t idle_since = -1;
    int prev_lines = 0, prev_cols = 0, rc = 0;
    char err[600];

    if (o->once) {
        json_object *st = sc_ctl_ask(dir, "status", err, sizeof(err));
        if (!st) {
            fprintf(errf, "schedcoordctl: %s\n", err);
            return 1;
        }
        sc_ctl_watch_frame(st, sc_wall_ms(), color, out);
        json_object_put(st);
        return fflush(out) == 0 ? 0 : 1;
    }
    if (!tty && sc_ctl_watch_memo_new(&memo) < 0) {
        fprintf(errf, "schedcoordctl: out of memory\n");
        return 1;
    }
    s_stop = 0;
    sigemptyset(&sa.sa_mask); /* no SA_RESTART: a signal cuts the sleep short */
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    if (tty)
        fputs("\033[?25l", out); /* the cursor hidden while drawing */
    while (!s_stop) {
        json_object *st;
        err[0] = '\0';
        st = sc_ctl_ask(dir, "status", err, sizeof(err));
        if (tty) {
            int cols, rows;
            char *text = s_frame_text(st, err, o, color);
            s_term_size(out, &cols, &rows);
            if (prev_cols && cols != prev_cols) { /* lines may have wrapped: start over */
                fputs("\033[H\033[2J", out);
                prev_lines = 0;
            }
            prev_cols = cols;
            if (text)
                prev_lines = s_draw(out, text, prev_lines, cols, rows);
            free(text);
        } else {
            sc_ctl_watch_changes(memo, st, err, sc_wall_ms(), out);
        }
        if (o->idle_s > 0) {
            if (st && !sc_ctl_watch_is_busy(st)) {
                if (idle_since < 0)
                    idle_since = sc_mono_ms();
            } else {
                idle_since = -1;
            }
        }
        json_object_put(st);
        if (fflush(out) != 0 || ferror(out)) {
            rc = 1; /* nobody reads any more */
            break;
        }
        if (idle_since >= 0 && sc_mono_ms() - idle_since >= (int64_t)(o->idle_s * 1000))
            break;
        s_sleep(o->interval_s);
    }
    if (tty) {
        fputs("\033[0m\033[?25h", out); /* the cursor back, as it was */
        fflush(out);
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sc_ctl_watch_memo_destroy(&memo);
    return rc;
}
