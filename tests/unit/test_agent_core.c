/* The agent's logic without sockets: settings errors name the key; the SQLite state keeps the
 * newest term and the hook runs across a reopen (a run left "started" becomes "interrupted");
 * orders of an older term are refused with a nack and never run; a recover for an event never
 * prepared runs, told so; the same phase of the same drain attempt never runs twice, a
 * new attempt runs again and an older one never; a new document is reported once. Messages the
 * agent sends are captured through sc_agent_opts_t.send. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "imds_test_server.h"
#include "sc_agent.h"
#include "sc_agent_config.h"
#include "sc_agent_state.h"
#include "sc_voters.h"
#include "sc_db.h"
#include "sc_error.h"
#include "sc_log.h"
#include "sc_test.h"
#include "sc_time.h"

#define S_CAP 64

typedef struct {
    sc_msg_type_t type;
    sc_msg_hook_state_t state;
    sc_msg_phase_t phase;
    int attempt;
    char detail[128]; /* hook_progress detail, nack reason, document's first malformed */
    uint64_t ref_seq;
    int64_t observed_at_ms; /* DOCUMENT */
    size_t n_events;        /* document: events */
    size_t n_malformed;     /* document: malformed reasons */
} s_sent_t;

static s_sent_t s_sent[S_CAP];
static size_t s_n_sent;

static void s_capture(void *data, int member, const sc_msg_t *msg)
{
    (void)data;
    (void)member;
    if (s_n_sent >= S_CAP)
        return;
    s_sent[s_n_sent].type = msg->type;
    if (msg->type == SC_MSG_HOOK_PROGRESS) {
        s_sent[s_n_sent].state = msg->hook_progress.state;
        s_sent[s_n_sent].phase = msg->hook_progress.phase;
        s_sent[s_n_sent].attempt = msg->hook_progress.attempt;
        snprintf(s_sent[s_n_sent].detail, sizeof(s_sent[0].detail), "%s",
                 msg->hook_progress.detail ? msg->hook_progress.detail : "");
    }
    if (msg->type == SC_MSG_DOCUMENT) {
        s_sent[s_n_sent].n_events = msg->document.document->n_events;
        s_sent[s_n_sent].n_malformed = msg->document.n_malformed;
        snprintf(s_sent[s_n_sent].detail, sizeof(s_sent[0].detail), "%s",
                 msg->document.n_malformed ? msg->document.malformed[0] : "");
    }
    if (msg->type == SC_MSG_NACK) {
        s_sent[s_n_sent].ref_seq = msg->nack.ref_seq;
        snprintf(s_sent[s_n_sent].detail, sizeof(s_sent[0].detail), "%s",
                 msg->nack.reason ? msg->nack.reason : "");
    }
    if (msg->type == SC_MSG_DOCUMENT)
        s_sent[s_n_sent].observed_at_ms = msg->document.observed_at_ms;
    s_n_sent++;
}

static size_t s_count(sc_msg_type_t type, int state)
{
    size_t n = 0;
    for (size_t i = 0; i < s_n_sent; i++)
        if (s_sent[i].type == type && (state < 0 || (int)s_sent[i].state == state))
            n++;
    return n;
}

static char s_dir[512];

static void s_tmpdir(const char *name)
{
    char cmd[1200];

    if ((size_t)snprintf(s_dir, sizeof(s_dir), "%s/%s", sc_test_tmpdir(NULL), name) >=
        sizeof(s_dir))
        SC_FAILF("scratch path too long: %s", s_dir);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", s_dir, s_dir);
    if (system(cmd) != 0)
        SC_FAILF("cannot make %s", s_dir);
}

static int s_parse(sc_agent_settings_t *s, char *err, ...)
{
    char *argv[40] = {"schedcoord-agent"};
    int argc = 1;
    va_list ap;
    char *a;

    va_start(ap, err);
    while ((a = va_arg(ap, char *)) && argc < 39)
        argv[argc++] = a;
    va_end(ap);
    memset(s, 0, sizeof(*s));
    return sc_agent_settings_parse(s, argc, argv, NULL, err, 256);
}

SC_TEST(settings_errors_name_the_key)
{
    sc_agent_settings_t s;
    char err[256] = "";

    SC_CHECK_INT(s_parse(&s, err, "--imds-url", "http://127.0.0.1:1", "--members", "a=127.0.0.1:1",
                         "--state-dir", "/tmp/x", "--prepare-hook", "/bin/true", "--recover-hook",
                         "/bin/true", "--insecure", NULL),
                 0);
    SC_CHECK(s.hook_timeout == 300 && s.poll_interval == 1 && s.standalone_after == 30);
    sc_agent_settings_free(&s);
    /* plain text stays on one machine */
    SC_CHECK_INT(s_parse(&s, err, "--imds-url", "http://127.0.0.1:1", "--members",
                         "a=127.0.0.1:1,b=h:1", "--state-dir", "/tmp/x", "--prepare-hook",
                         "/bin/true", "--recover-hook", "/bin/true", "--insecure", NULL),
                 SC_E_CONFIG);
    SC_CHECK(strstr(err, "--insecure: member b's endpoint tcp://h:1 is not on this machine"));
    sc_agent_settings_free(&s);

    SC_CHECK_INT(s_parse(&s, err, "--imds-url", "http://x", "--members", "a=h:99999", "--state-dir",
                         "/tmp/x", "--prepare-hook", "/bin/true", "--recover-hook", "/bin/true",
                         "--insecure", NULL),
                 SC_E_CONFIG);
    SC_CHECK(strstr(err, "--members") && strstr(err, "1..65535"));
    sc_agent_settings_free(&s);

    SC_CHECK_INT(s_parse(&s, err, "--imds-url", "http://x", "--members", "a=h:1", "--state-dir",
                         "/tmp/x", "--prepare-hook", "/bin/true", "--recover-hook", "/bin/true",
                         "--hook-timeout", "abc", "--insecure", NULL),
                 SC_E_CONFIG);
    SC_CHECK(strstr(err, "hook-timeout") != NULL);
    sc_agent_settings_free(&s);

    SC_CHECK_INT(s_parse(&s, err, "--imds-url", "http://x", "--members", "a=h:1", "--state-dir",
                         "/tmp/x", "--prepare-hook", "/bin/true", "--recover-hook", "/bin/true",
                         NULL),
                 SC_E_CONFIG);
    SC_CHECK(strstr(err, "--key") != NULL); /* neither keys nor --insecure */
    sc_agent_settings_free(&s);

    SC_CHECK_INT(s_parse(&s, err, "--imds-url", "http://x", "--members", "a=h:1", "--state-dir",
                         "/tmp/x", "--prepare-hook", "/bin/true", "--recover-hook", "/bin/true",
                         "--insecure", "--log-level", "loud", NULL),
                 SC_E_CONFIG);
    SC_CHECK(strstr(err, "--log-level") != NULL);
    sc_agent_settings_free(&s);

    SC_CHECK_INT(s_parse(&s, err, "--imds-url", "http://x", "--members", "a=h:1", "--state-dir",
                         "/tmp/x", "--prepare-hook", "/bin/true", "--recover-hook", "/bin/true",
                         "--insecure", "--api-version", "2020-07-01&x=1", NULL),
                 SC_E_CONFIG);
    SC_CHECK(strstr(err, "--api-version") && strstr(err, "YYYY-MM-DD"));
    sc_agent_settings_free(&s);

    /* hooks: missing, not a regular file, not executable */
    SC_CHECK_INT(s_parse(&s, err, "--imds-url", "http://x", "--members", "a=h:1", "--state-dir",
                         "/tmp/x", "--prepare-hook", "/nonexistent/hook", "--recover-hook",
                         "/bin/true", "--insecure", NULL),
                 SC_E_CONFIG);
    SC_CHECK(strstr(err, "--prepare-hook: /nonexistent/hook: No such file") != NULL);
    sc_agent_settings_free(&s);
    SC_CHECK_INT(s_parse(&s, err, "--imds-url", "http://x", "--members", "a=h:1", "--state-dir",
                         "/tmp/x", "--prepare-hook", "/bin/true", "--recover-hook", "/tmp",
                         "--insecure", NULL),
                 SC_E_CONFIG);
    SC_CHECK(strstr(err, "--recover-hook: /tmp is not a regular file") != NULL);
    sc_agent_settings_free(&s);
    if (access("/etc/hostname", F_OK) == 0 && access("/etc/hostname", X_OK) != 0) {
        SC_CHECK_INT(s_parse(&s, err, "--imds-url", "http://x", "--members", "a=h:1", "--state-dir",
                             "/tmp/x", "--prepare-hook", "/etc/hostname", "--recover-hook",
                             "/bin/true", "--insecure", NULL),
                     SC_E_CONFIG);
        SC_CHECK(strstr(err, "is not executable") != NULL);
        sc_agent_settings_free(&s);
    }
}

SC_TEST(members)
{
    sc_member_spec_t *m = NULL;
    size_t n = 0;
    char err[256] = "";

    SC_REQUIRE(
        sc_members_parse("vm_0=127.0.0.1:5000,vm_1=localhost:5001", &m, &n, err, sizeof(err)) == 0);
    SC_CHECK_INT(n, 2);
    SC_CHECK_STR(m[1].name, "vm_1");
    SC_CHECK_STR(m[1].endpoint, "tcp://localhost:5001");
    SC_CHECK_INT(m[1].fault_domain, -1);
    free(m);
    /* NAME=HOST:PORT/FD: the fault domain the voters are spread over */
    SC_REQUIRE(
        sc_members_parse("a=h:1/0,b=h:2/1,c=h:3/0,d=h:4/2,e=h:5/1", &m, &n, err, sizeof(err)) == 0);
    SC_CHECK_STR(m[0].endpoint, "tcp://h:1");
    SC_CHECK_INT(m[3].fault_domain, 2);
    {
        sc_voters_t v;
        SC_CHECK_INT(sc_voters_of_members(m, n, 0, &v), 0);
        SC_CHECK_INT(v.n, 3); /* a, b, d: one per fault domain, earliest first */
        SC_CHECK(v.index[0] == 0 && v.index[1] == 1 && v.index[2] == 3);
        SC_CHECK(sc_voters_has(&v, 3) && !sc_voters_has(&v, 2));
    }
    free(m);
    SC_CHECK_INT(sc_members_parse("a=h:1/1024", &m, &n, err, sizeof(err)), SC_E_CONFIG);
    SC_CHECK(strstr(err, "fault domain \"1024\" is not 0..1023") != NULL);
    SC_CHECK_INT(sc_members_parse("a=h:1/", &m, &n, err, sizeof(err)), SC_E_CONFIG);
    SC_CHECK_INT(sc_members_parse("a=h:1/-1", &m, &n, err, sizeof(err)), SC_E_CONFIG);
    SC_CHECK_INT(sc_members_parse("a=h:1/x", &m, &n, err, sizeof(err)), SC_E_CONFIG);
    SC_CHECK_INT(sc_members_parse("a=h:1/=,b=h:2", &m, &n, err, sizeof(err)),
                 SC_E_CONFIG); /* fuzz */
    SC_CHECK_INT(sc_members_parse("a=h:/1", &m, &n, err, sizeof(err)), SC_E_CONFIG);
    SC_CHECK_INT(sc_members_parse("a=h:1,a=h:2", &m, &n, err, sizeof(err)), SC_E_CONFIG);
    SC_CHECK(strstr(err, "twice") != NULL);
    SC_CHECK_INT(sc_members_parse("a=h:1,", &m, &n, err, sizeof(err)), SC_E_CONFIG);
    SC_CHECK_INT(sc_members_parse("a h:1", &m, &n, err, sizeof(err)), SC_E_CONFIG);
    SC_CHECK_INT(sc_members_parse("a=h/x:1", &m, &n, err, sizeof(err)), SC_E_CONFIG);
    SC_CHECK_INT(sc_members_parse("a=h:0", &m, &n, err, sizeof(err)), SC_E_CONFIG);
    SC_CHECK_INT(sc_members_parse("", &m, &n, err, sizeof(err)), SC_E_CONFIG);
    SC_CHECK_INT(sc_members_parse("a=h:1, b=h:2", &m, &n, err, sizeof(err)), SC_E_CONFIG);
    SC_CHECK(strstr(err, "entry 2") != NULL);
}

/* The digest of the list (the leader message's members_hash): equal for equal lists, and
 * different when a name, an endpoint, a fault domain or the order differs (the first member leads).
 */
SC_TEST(members_digest)
{
    static const char *const lists[] = {
        "vm_0=10.0.0.4:7700,vm_1=10.0.0.5:7700,vm_2=10.0.0.6:7700",
        "vm_1=10.0.0.5:7700,vm_0=10.0.0.4:7700,vm_2=10.0.0.6:7700",   /* order */
        "vm_0=10.0.0.4:7700,vm_1=10.0.0.5:7701,vm_2=10.0.0.6:7700",   /* a port */
        "vm_0=10.0.0.4:7700,vm_1=10.0.0.5:7700",                      /* one fewer */
        "vm_0=10.0.0.4:7700,vm_3=10.0.0.5:7700,vm_2=10.0.0.6:7700",   /* a name */
        "vm_0=10.0.0.4:7700/0,vm_1=10.0.0.5:7700,vm_2=10.0.0.6:7700", /* a fault domain */
    };
    char d[6][SC_MEMBERS_DIGEST_LEN + 1], again[SC_MEMBERS_DIGEST_LEN + 1], err[256];

    for (size_t i = 0; i < 6; i++) {
        sc_member_spec_t *m = NULL;
        size_t n = 0;

        SC_REQUIRE(sc_members_parse(lists[i], &m, &n, err, sizeof(err)) == 0);
        sc_members_digest(m, n, 0, d[i]);
        SC_CHECK_INT(strlen(d[i]), SC_MEMBERS_DIGEST_LEN);
        SC_CHECK(strspn(d[i], "0123456789abcdef") == SC_MEMBERS_DIGEST_LEN);
        if (i == 0) {
            sc_members_digest(m, n, 0, again);
            SC_CHECK_STR(again, d[0]);
        }
        free(m);
    }
    for (size_t i = 1; i < 6; i++)
        SC_CHECK(strcmp(d[0], d[i]) != 0);
}

SC_TEST(state_survives_reopen)
{
    sc_agent_state_t *st = NULL;
    sc_agent_run_t run;
    int interrupted = -1;
    char err[256] = "";

    s_tmpdir("state");
    SC_REQUIRE(sc_agent_state_open(s_dir, &st, &interrupted, err, sizeof(err)) == 0);
    SC_CHECK_INT(interrupted, 0);
    SC_CHECK_INT(sc_agent_state_max_term(st), 0);
    SC_CHECK_INT(sc_agent_state_raise_term(st, 7), 0);
    SC_CHECK_INT(sc_agent_state_raise_term(st, 3), 0); /* never lowered */
    SC_CHECK_INT(sc_agent_state_run_start(st, "ABC-1", SC_MSG_PHASE_PREPARE, 1, SC_MSG_ORIGIN_ORDER,
                                          7, NULL),
                 0);
    SC_CHECK_INT(sc_agent_state_run_start(st, "abc-1", SC_MSG_PHASE_PREPARE, 1, SC_MSG_ORIGIN_ORDER,
                                          7, NULL),
                 -EEXIST); /* EventIds compared case-insensitively */
    SC_CHECK_INT(sc_agent_state_run_start(st, "done-1", SC_MSG_PHASE_PREPARE, 1,
                                          SC_MSG_ORIGIN_STANDALONE, 0, "{}"),
                 0);
    SC_CHECK_INT(
        sc_agent_state_run_end(st, "DONE-1", SC_MSG_PHASE_PREPARE, 1, SC_MSG_HOOK_DONE, 0, "fine"),
        0);
    /* a second drain attempt runs its phases again; attempt 0 reads the newest */
    SC_CHECK_INT(sc_agent_state_run_start(st, "done-1", SC_MSG_PHASE_PREPARE, 3,
                                          SC_MSG_ORIGIN_ORDER, 7, "{}"),
                 0);
    SC_CHECK_INT(
        sc_agent_state_run_end(st, "done-1", SC_MSG_PHASE_PREPARE, 3, SC_MSG_HOOK_FAILED, 1, "no"),
        0);
    SC_CHECK_INT(sc_agent_state_run_start(st, "done-1", SC_MSG_PHASE_PREPARE, 0,
                                          SC_MSG_ORIGIN_ORDER, 7, "{}"),
                 -EINVAL);
    /* the agent "dies" with ABC-1 started */
    sc_agent_state_close(&st);
    SC_REQUIRE(sc_agent_state_open(s_dir, &st, &interrupted, err, sizeof(err)) == 0);
    SC_CHECK_INT(interrupted, 1);
    SC_CHECK_INT(sc_agent_state_max_term(st), 7);
    SC_REQUIRE(sc_agent_state_get_run(st, "abc-1", SC_MSG_PHASE_PREPARE, 1, &run) == 0);
    SC_CHECK_INT(run.state, SC_MSG_HOOK_INTERRUPTED);
    SC_CHECK_INT(run.term, 7);
    SC_CHECK_INT(run.attempt, 1);
    SC_REQUIRE(sc_agent_state_get_run(st, "done-1", SC_MSG_PHASE_PREPARE, 1, &run) == 0);
    SC_CHECK_INT(run.state, SC_MSG_HOOK_DONE);
    SC_CHECK_INT(run.origin, SC_MSG_ORIGIN_STANDALONE);
    SC_CHECK_STR(run.detail, "fine");
    SC_REQUIRE(sc_agent_state_get_run(st, "done-1", SC_MSG_PHASE_PREPARE, 0, &run) == 0);
    SC_CHECK_INT(run.attempt, 3);
    SC_CHECK_INT(run.state, SC_MSG_HOOK_FAILED);
    SC_CHECK_INT(sc_agent_state_get_run(st, "done-1", SC_MSG_PHASE_PREPARE, 2, &run),
                 SC_E_NOT_FOUND);
    {
        int newest = 0;

        SC_CHECK_INT(sc_agent_state_newest_attempt(st, "DONE-1", &newest), 0);
        SC_CHECK_INT(newest, 3);
        SC_CHECK_INT(sc_agent_state_newest_attempt(st, "nothing", &newest), SC_E_NOT_FOUND);
    }
    SC_CHECK_INT(sc_agent_state_get_run(st, "abc-1", SC_MSG_PHASE_RECOVER, 1, &run),
                 SC_E_NOT_FOUND);
    sc_agent_state_close(&st);
    SC_CHECK(st == NULL);
}

/* A state directory written by an agent before drain attempts (schema 1) opens with every run in
 * attempt 1, still keyed, still listed in the order it was started (and a fence not known). */
SC_TEST(state_schema_1_migrates)
{
    static const char *const v1[] = {
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
        "INSERT INTO meta (key, value) VALUES ('max_term', 4);"
        "CREATE TABLE runs (event TEXT NOT NULL, phase TEXT NOT NULL, state TEXT NOT NULL,"
        " origin TEXT NOT NULL, term INTEGER NOT NULL, exit_status INTEGER NOT NULL DEFAULT -1,"
        " started_ms INTEGER NOT NULL, ended_ms INTEGER NOT NULL DEFAULT 0,"
        " handed_over INTEGER NOT NULL DEFAULT 0, detail TEXT NOT NULL DEFAULT '',"
        " event_json TEXT, PRIMARY KEY (event, phase));"
        "INSERT INTO runs (event, phase, state, origin, term, exit_status, started_ms, ended_ms,"
        " detail) VALUES ('ev-2', 'prepare', 'done', 'order', 4, 0, 100, 200, 'ok');"
        "INSERT INTO runs (event, phase, state, origin, term, started_ms) VALUES ('ev-1',"
        " 'prepare', 'started', 'order', 4, 300);"};
    sc_agent_state_t *st = NULL;
    sc_agent_run_t run, *runs = NULL;
    sc_db_t *db = NULL;
    char err[256] = "", path[700];
    int interrupted = -1;
    size_t n = 0;

    s_tmpdir("state_v1");
    snprintf(path, sizeof(path), "%s/agent.db", s_dir);
    SC_REQUIRE(sc_db_open(path, v1, 1, &db, err, sizeof(err)) == 0);
    sc_db_close(&db);
    SC_REQUIRE(sc_agent_state_open(s_dir, &st, &interrupted, err, sizeof(err)) == 0);
    SC_CHECK_INT(interrupted, 1);
    SC_CHECK_INT(sc_agent_state_max_term(st), 4);
    {
        char leader[64] = "x";
        uint64_t idx = 9;
        SC_CHECK_INT(sc_agent_state_fence(st, leader, sizeof(leader), &idx), 0);
        SC_CHECK_STR(leader, "");
        SC_CHECK_INT(idx, 0);
    }
    SC_REQUIRE(sc_agent_state_get_run(st, "EV-2", SC_MSG_PHASE_PREPARE, 1, &run) == 0);
    SC_CHECK_INT(run.state, SC_MSG_HOOK_DONE);
    SC_CHECK_STR(run.detail, "ok");
    SC_CHECK_INT(run.attempt, 1);
    SC_REQUIRE(sc_agent_state_list_runs(st, &runs, &n) == 0);
    SC_REQUIRE(n == 2);
    SC_CHECK_STR(runs[0].event, "ev-2");
    SC_CHECK_STR(runs[1].event, "ev-1");
    SC_CHECK_INT(runs[1].state, SC_MSG_HOOK_INTERRUPTED);
    free(runs);
    SC_CHECK_INT(
        sc_agent_state_run_start(st, "ev-2", SC_MSG_PHASE_PREPARE, 2, SC_MSG_ORIGIN_ORDER, 5, NULL),
        0);
    sc_agent_state_close(&st);
    SC_REQUIRE(sc_db_open(path, v1, 1, &db, err, sizeof(err)) != 0); /* now newer than v1 */
    SC_CHECK(strstr(err, "schema version 3 is newer") != NULL);
}

/* Delivers m (consumed) on connection conn, as a coordinator's message arrives. */
static int s_send_on(sc_agent_t *a, size_t conn, sc_msg_t *m)
{
    char *buf = NULL;
    size_t len = 0;
    int rc = sc_msg_encode(m, &buf, &len);

    SC_CHECK_INT(rc, 0);
    if (rc == 0)
        rc = sc_agent_receive(a, conn, buf, len);
    free(buf);
    sc_msg_destroy(&m);
    return rc;
}

static int s_send_msg(sc_agent_t *a, sc_msg_t *m)
{
    return s_send_on(a, 0, m);
}

static sc_msg_t *s_order(uint64_t term, uint64_t seq, sc_msg_phase_t phase, const char *ev)
{
    sc_msg_t *m = NULL;
    if (sc_msg_new(SC_MSG_ORDER, "coord", term, seq, &m) != 0)
        return NULL;
    m->order.action = phase;
    snprintf(m->order.event, sizeof(m->order.event), "%s", ev);
    return m;
}

static void s_drain(sc_agent_t *a)
{
    for (int i = 0; i < 200 && sc_agent_busy(a); i++)
        SC_CHECK_INT(sc_agent_step(a, 50), 0);
}

static int s_runs_logged(void)
{
    char path[600], line[256];
    FILE *f;
    int n = 0;

    snprintf(path, sizeof(path), "%s/runs.log", s_dir);
    if (!(f = fopen(path, "r")))
        return 0;
    while (fgets(line, sizeof(line), f))
        n++;
    fclose(f);
    return n;
}

/* What the hooks wrote to runs.log (caller's, free), "" when nothing. */
static char *s_runs(void)
{
    char path[600], *log;

    snprintf(path, sizeof(path), "%s/runs.log", s_dir);
    log = sc_test_slurp(path, NULL);
    return log ? log : strdup("");
}

static volatile sig_atomic_t s_stop; /* the agents' stop flag (SIGTERM) */

/* A test agent of vm_0 in the fresh scratch directory name: its hook (hook.sh, both phases)
 * runs body after "#!/bin/sh" and RUNS=<directory>/runs.log; its settings (*s) are the common
 * flags (state there, --insecure, no IMDS unless imds_url, then with s_stop as stop flag) then
 * extra (NULL-terminated, may be NULL); *o is kept for sc_agent_new to start it again; its
 * messages are captured (s_sent emptied). The caller destroys *ret_agent and frees *s. */
static void s_agent_start(const char *name, const char *body, const char *imds_url,
                          const char *const *extra, sc_agent_settings_t *s, sc_agent_opts_t *o,
                          sc_agent_t **ret_agent)
{
    char err[256] = "", hook[600], state[600], script[2048];
    const char *argv[40] = {"schedcoord-agent",
                            "--imds-url",
                            imds_url ? imds_url : "http://127.0.0.1:1",
                            "--members",
                            "coord=127.0.0.1:1",
                            "--state-dir",
                            state,
                            "--prepare-hook",
                            hook,
                            "--recover-hook",
                            hook,
                            "--insecure"};
    char *av[40];
    int argc = 12;

    *ret_agent = NULL;
    s_tmpdir(name);
    snprintf(hook, sizeof(hook), "%s/hook.sh", s_dir);
    snprintf(state, sizeof(state), "%s/state", s_dir);
    snprintf(script, sizeof(script), "#!/bin/sh\nRUNS='%s/runs.log'\n%s", s_dir, body);
    SC_REQUIRE(sc_test_write_file(hook, script, 0755) == 0);
    for (; extra && *extra && argc < 39; extra++)
        argv[argc++] = *extra;
    memset(s, 0, sizeof(*s));
    memcpy(av, argv, sizeof(av)); /* the parser only reads them */
    SC_REQUIRE(sc_agent_settings_parse(s, argc, av, NULL, err, sizeof(err)) == 0);
    memset(o, 0, sizeof(*o));
    o->settings = s;
    o->name = "vm_0";
    o->send = s_capture;
    o->manual_imds = !imds_url;
    o->stop = imds_url ? &s_stop : NULL;
    s_n_sent = 0;
    SC_REQUIRE(sc_agent_new(o, ret_agent, err, sizeof(err)) == 0);
}

/* No leader for an hour: the safety net stays out of the way. */
static const char *const s_no_net[] = {"--standalone-after", "3600", NULL};

SC_TEST(orders)
{
    sc_agent_settings_t s;
    sc_agent_opts_t o = {0};
    sc_agent_t *a = NULL;
    sc_agent_stats_t stats;
    char err[256] = "";
    const char *doc = "{\"DocumentIncarnation\":4,\"Events\":[{\"EventId\":\"EV-1\","
                      "\"EventStatus\":\"Scheduled\",\"EventType\":\"Reboot\",\"ResourceType\":"
                      "\"VirtualMachine\",\"Resources\":[\"vm_0\"],\"NotBefore\":\"Mon, 11 Apr "
                      "2022 22:26:58 GMT\"}]}";

    s_agent_start("orders",
                  "echo \"$SCHEDCOORD_PHASE $SCHEDCOORD_EVENT_ID $SCHEDCOORD_EVENT_TYPE\" >> "
                  "\"$RUNS\"\n",
                  NULL, s_no_net, &s, &o, &a);
    SC_REQUIRE(a);

    SC_CHECK_INT(sc_agent_feed_body(a, doc, strlen(doc)), 0);
    SC_CHECK_INT(sc_agent_feed_body(a, doc, strlen(doc)), 0);
    SC_CHECK_INT(s_count(SC_MSG_DOCUMENT, -1), 1); /* once per incarnation */
    sc_agent_get_stats(a, &stats);
    SC_CHECK_INT(stats.doc_parses, 1); /* the same bytes are not parsed again */

    SC_CHECK_INT(s_send_msg(a, s_order(5, 1, SC_MSG_PHASE_PREPARE, "ev-1")), 0);
    s_drain(a);
    SC_CHECK_INT(s_count(SC_MSG_HOOK_PROGRESS, SC_MSG_HOOK_STARTED), 1);
    SC_CHECK_INT(s_count(SC_MSG_HOOK_PROGRESS, SC_MSG_HOOK_DONE), 1);
    SC_CHECK_INT(s_runs_logged(), 1);
    SC_CHECK_INT(sc_agent_max_term(a), 5);

    /* an older term: nack, not run */
    SC_CHECK_INT(s_send_msg(a, s_order(4, 2, SC_MSG_PHASE_RECOVER, "EV-1")), 0);
    s_drain(a);
    SC_CHECK_INT(s_count(SC_MSG_NACK, -1), 1);
    SC_CHECK_INT(s_sent[s_n_sent - 1].ref_seq, 2);
    SC_CHECK_INT(s_runs_logged(), 1);
    sc_agent_get_stats(a, &stats);
    SC_CHECK_INT(stats.stale_orders, 1);

    /* the same phase again: re-reported, not re-run */
    SC_CHECK_INT(s_send_msg(a, s_order(5, 3, SC_MSG_PHASE_PREPARE, "EV-1")), 0);
    s_drain(a);
    SC_CHECK_INT(s_count(SC_MSG_HOOK_PROGRESS, SC_MSG_HOOK_DONE), 2);
    SC_CHECK_INT(s_runs_logged(), 1);

    /* garbage and a wrong sender are refused and counted */
    SC_CHECK_INT(sc_agent_receive(a, 0, "{\"v\":1}", 7), 0);
    {
        sc_msg_t *m = s_order(5, 5, SC_MSG_PHASE_RECOVER, "EV-1");
        snprintf(m->from, sizeof(m->from), "intruder");
        SC_CHECK_INT(s_send_msg(a, m), 0);
    }
    s_drain(a);
    sc_agent_get_stats(a, &stats);
    SC_CHECK_INT(stats.rejected_msgs, 2);
    SC_CHECK_INT(s_runs_logged(), 1);

    /* the recover of a prepared event runs, with a newer term */
    SC_CHECK_INT(s_send_msg(a, s_order(6, 6, SC_MSG_PHASE_RECOVER, "EV-1")), 0);
    s_drain(a);
    SC_CHECK_INT(s_runs_logged(), 2);
    SC_CHECK_INT(sc_agent_max_term(a), 6);
    /* the hook got the event of the document (found whatever the order's case), in its env */
    {
        char *log = s_runs();
        SC_CHECK_STR(log, "prepare EV-1 Reboot\nrecover EV-1 Reboot\n");
        free(log);
    }
    /* a new incarnation is a new report */
    {
        const char *doc5 = "{\"DocumentIncarnation\":5,\"Events\":[]}";
        SC_CHECK_INT(sc_agent_feed_body(a, doc5, strlen(doc5)), 0);
        SC_CHECK_INT(s_count(SC_MSG_DOCUMENT, -1), 2);
    }
    sc_agent_destroy(&a);

    /* after a restart, the term and the runs are still known */
    s_n_sent = 0;
    SC_REQUIRE(sc_agent_new(&o, &a, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_agent_max_term(a), 6);
    SC_CHECK_INT(s_send_msg(a, s_order(5, 7, SC_MSG_PHASE_PREPARE, "EV-2")), 0);
    SC_CHECK_INT(s_count(SC_MSG_NACK, -1), 1);
    SC_CHECK_INT(s_send_msg(a, s_order(6, 8, SC_MSG_PHASE_RECOVER, "ev-1")), 0);
    s_drain(a);
    SC_CHECK_INT(s_runs_logged(), 2);
    SC_CHECK_INT(s_count(SC_MSG_HOOK_PROGRESS, SC_MSG_HOOK_DONE), 1);
    sc_agent_destroy(&a);
    sc_agent_settings_free(&s);
}

/* Issue 11, fencing: a leader's order, approve_via and leader message carry (term, commit
 * index); an agent refuses one older than the newest it saw, and one of a term from any member
 * but the one that won it (the first to claim it). And it reports to the voters only. */
static sc_msg_t *s_fenced(const char *from, uint64_t term, uint64_t idx, uint64_t seq,
                          const char *ev)
{
    sc_msg_t *m = s_order(term, seq, SC_MSG_PHASE_PREPARE, ev);
    if (m) {
        snprintf(m->from, sizeof(m->from), "%s", from);
        m->order.index = idx;
    }
    return m;
}

/* Delivers m (consumed) on connection conn, runs what it queued, and tells how many hooks
 * have run so far (the receive's outcome checked). */
static int s_runs_after(sc_agent_t *a, size_t conn, sc_msg_t *m)
{
    SC_CHECK_INT(s_send_on(a, conn, m), 0);
    s_drain(a);
    return s_runs_logged();
}

SC_TEST(fencing)
{
    static const char *const extra[] = {
        "--members", "coord=127.0.0.1:1,other=127.0.0.1:2,third=127.0.0.1:3,vm_0=127.0.0.1:4",
        "--standalone-after", "3600", NULL};
    sc_agent_settings_t s;
    sc_agent_opts_t o = {0};
    sc_agent_t *a = NULL;
    sc_agent_stats_t stats;
    sc_msg_t *m = NULL;
    char desc[256];

    s_agent_start("fencing", "echo \"$SCHEDCOORD_PHASE $SCHEDCOORD_EVENT_ID\" >> \"$RUNS\"\n", NULL,
                  extra, &s, &o, &a);
    SC_REQUIRE(a);
    sc_agent_describe(a, desc, sizeof(desc));
    SC_CHECK(strstr(desc, "0/3 coordinators") != NULL); /* the 3 voters of 4 members */

    SC_CHECK_INT(s_runs_after(a, 0, s_fenced("coord", 5, 10, 1, "ev-a")), 1);
    /* an older commit index of the same leader and term: refused, not run */
    SC_CHECK_INT(s_runs_after(a, 0, s_fenced("coord", 5, 7, 2, "ev-b")), 1);
    SC_CHECK_INT(s_count(SC_MSG_NACK, -1), 1);
    SC_CHECK(strstr(s_sent[s_n_sent - 1].detail, "stale fence: (5, 7) older than (5, 10)") != NULL);
    /* the same term claimed by another member: refused, counted */
    SC_CHECK_INT(s_send_on(a, 1, s_fenced("other", 5, 12, 1, "ev-c")), 0);
    SC_REQUIRE(sc_msg_new(SC_MSG_LEADER, "other", 5, 2, &m) == 0);
    snprintf(m->leader.leader, sizeof(m->leader.leader), "other");
    m->leader.lease_ms = 1000;
    SC_CHECK_INT(s_send_on(a, 1, m), 0);
    s_drain(a);
    SC_CHECK_INT(s_runs_logged(), 1);
    sc_agent_get_stats(a, &stats);
    SC_CHECK_INT(stats.other_claimants, 2);
    /* the index it had is an equal fence: a re-sent order is fine */
    SC_CHECK_INT(s_runs_after(a, 0, s_fenced("coord", 5, 10, 3, "ev-d")), 2);
    /* a newer term: its winner is believed from any index */
    SC_CHECK_INT(s_runs_after(a, 1, s_fenced("other", 6, 3, 3, "ev-e")), 3);
    SC_CHECK_INT(sc_agent_max_term(a), 6);
    SC_CHECK_INT(s_runs_after(a, 1, s_fenced("other", 6, 8, 4, "ev-f")), 4);
    /* a restart keeps the fence: the term's winner and its orders' index */
    sc_agent_destroy(&a);
    {
        char err[256] = "";
        SC_REQUIRE(sc_agent_new(&o, &a, err, sizeof(err)) == 0);
    }
    s_n_sent = 0;
    SC_CHECK_INT(sc_agent_max_term(a), 6);
    SC_CHECK_INT(s_runs_after(a, 1, s_fenced("other", 6, 5, 5, "ev-g")), 4); /* (6, 5) < (6, 8) */
    SC_CHECK(s_n_sent > 0 &&
             strstr(s_sent[s_n_sent - 1].detail, "stale fence: (6, 5) older than (6, 8)") != NULL);
    SC_CHECK_INT(s_runs_after(a, 0, s_fenced("coord", 6, 9, 4, "ev-h")), 4); /* not its winner */
    SC_CHECK(s_n_sent > 0 &&
             strstr(s_sent[s_n_sent - 1].detail, "coord is not the leader of term 6") != NULL);
    SC_CHECK_INT(s_runs_after(a, 1, s_fenced("other", 6, 9, 6, "ev-i")), 5);
    sc_agent_destroy(&a);
    sc_agent_settings_free(&s);
}

/* A recover runs after every impact, prepared or not: SCHEDCOORD_PREPARED and the stdin's
 * "prepared" say whether a prepare hook ran for that event and attempt on this VM, whatever its
 * outcome; a prepare hook gets neither. Once a recover ran, that attempt's prepare never runs. */
SC_TEST(recover_unprepared)
{
    sc_agent_settings_t s;
    sc_agent_opts_t o = {0};
    sc_agent_t *a = NULL;
    char *log = NULL;
    const char *doc = "{\"DocumentIncarnation\":7,\"Events\":[{\"EventId\":\"EV-1\","
                      "\"EventStatus\":\"Started\",\"EventType\":\"Reboot\",\"ResourceType\":"
                      "\"VirtualMachine\",\"Resources\":[\"vm_0\"],\"NotBefore\":\"\"}]}";
    const char *want =
        "recover EV-1 prepared=0 json={\"EventId\":\"EV-1\",\"EventStatus\":\"Started\","
        "\"EventType\":\"Reboot\",\"ResourceType\":\"VirtualMachine\",\"Resources\":[\"vm_0\"],"
        "\"NotBefore\":\"\",\"prepared\":false}\n"
        "prepare EV-2 prepared=unset json={}\n"
        "recover EV-2 prepared=1 json={\"prepared\":true}\n"
        "prepare EV-3 prepared=unset json={}\n"
        "recover EV-3 prepared=1 json={\"prepared\":true}\n";
    uint64_t seq = 1;

    /* EV-3's prepare fails */
    s_agent_start("unprepared",
                  "in=$(cat)\necho \"$SCHEDCOORD_PHASE $SCHEDCOORD_EVENT_ID "
                  "prepared=${SCHEDCOORD_PREPARED-unset} json=$in\" >> \"$RUNS\"\n"
                  "[ \"$SCHEDCOORD_PHASE$SCHEDCOORD_EVENT_ID\" != prepareEV-3 ]\n",
                  NULL, s_no_net, &s, &o, &a);
    SC_REQUIRE(a);
    SC_CHECK_INT(sc_agent_feed_body(a, doc, strlen(doc)), 0);

    /* a host failure on this VM, never prepared: its recover runs, told so */
    SC_CHECK_INT(s_send_msg(a, s_order(5, seq++, SC_MSG_PHASE_RECOVER, "EV-1")), 0);
    s_drain(a);
    SC_CHECK_INT(s_count(SC_MSG_HOOK_PROGRESS, SC_MSG_HOOK_STARTED), 1);
    SC_CHECK_INT(s_count(SC_MSG_HOOK_PROGRESS, SC_MSG_HOOK_DONE), 1);
    SC_CHECK_INT(s_count(SC_MSG_HOOK_PROGRESS, SC_MSG_HOOK_SKIPPED), 0);
    /* that attempt is over: its prepare is refused, never run */
    SC_CHECK_INT(s_send_msg(a, s_order(5, seq, SC_MSG_PHASE_PREPARE, "EV-1")), 0);
    s_drain(a);
    SC_CHECK_INT(s_count(SC_MSG_NACK, -1), 1);
    SC_CHECK_INT(s_sent[s_n_sent - 1].ref_seq, seq);
    seq++;
    /* prepared (done, then failed): prepared=1 */
    SC_CHECK_INT(s_send_msg(a, s_order(5, seq++, SC_MSG_PHASE_PREPARE, "EV-2")), 0);
    SC_CHECK_INT(s_send_msg(a, s_order(5, seq++, SC_MSG_PHASE_RECOVER, "EV-2")), 0);
    SC_CHECK_INT(s_send_msg(a, s_order(5, seq++, SC_MSG_PHASE_PREPARE, "EV-3")), 0);
    s_drain(a);
    SC_CHECK_INT(s_count(SC_MSG_HOOK_PROGRESS, SC_MSG_HOOK_FAILED), 1);
    SC_CHECK_INT(s_send_msg(a, s_order(5, seq++, SC_MSG_PHASE_RECOVER, "EV-3")), 0);
    s_drain(a);
    log = s_runs();
    SC_CHECK_STR(log, want);
    free(log);
    sc_agent_destroy(&a);
    sc_agent_settings_free(&s);
}

/* A rehearsal's order (order.rehearsal) runs the real hook, told so: SCHEDCOORD_REHEARSAL=1,
 * so that a hook may skip the part that cannot be undone; a real order sets nothing. */
SC_TEST(rehearsal_order_tells_the_hook)
{
    sc_agent_settings_t s;
    sc_agent_opts_t o = {0};
    sc_agent_t *a = NULL;
    sc_msg_t *m;
    char *log = NULL;

    s_agent_start("rehearsal",
                  "echo \"$SCHEDCOORD_PHASE $SCHEDCOORD_EVENT_ID "
                  "rehearsal=${SCHEDCOORD_REHEARSAL-unset}\" >> \"$RUNS\"\n",
                  NULL, s_no_net, &s, &o, &a);
    SC_REQUIRE(a);
    SC_REQUIRE((m = s_order(5, 1, SC_MSG_PHASE_PREPARE, "rehearsal-1-fd0")));
    m->order.rehearsal = true;
    SC_CHECK_INT(s_send_msg(a, m), 0);
    SC_REQUIRE((m = s_order(5, 2, SC_MSG_PHASE_RECOVER, "rehearsal-1-fd0")));
    m->order.rehearsal = true;
    SC_CHECK_INT(s_send_msg(a, m), 0);
    SC_CHECK_INT(s_send_msg(a, s_order(5, 3, SC_MSG_PHASE_PREPARE, "EV-1")), 0);
    s_drain(a);
    log = s_runs();
    SC_CHECK_STR(log, "prepare rehearsal-1-fd0 rehearsal=1\nrecover rehearsal-1-fd0 rehearsal=1\n"
                      "prepare EV-1 rehearsal=unset\n");
    free(log);
    sc_agent_destroy(&a);
    sc_agent_settings_free(&s);
}

/* A prepare past its order's until_ms (Azure may have taken another domain down undrained
 * since the leader decided: nemesis open-seed-14, an order delivered after a partition healed)
 * is answered "refused" and not run, whether it arrives late or waits in the queue past it; a
 * later copy in time runs. A recover is never held by it. */
/* An order of event ev with until_ms in_ms from now (negative: passed), sent to a. */
static int s_send_until(sc_agent_t *a, uint64_t seq, sc_msg_phase_t phase, const char *ev,
                        int64_t in_ms)
{
    sc_msg_t *m = s_order(5, seq, phase, ev);

    if (!m)
        return -ENOMEM;
    m->order.until_ms = sc_wall_ms() + in_ms;
    return s_send_msg(a, m);
}

SC_TEST(late_prepare_refused)
{
    sc_agent_settings_t s;
    sc_agent_opts_t o = {0};
    sc_agent_t *a = NULL;
    sc_agent_stats_t stats;
    char *log = NULL;

    s_agent_start("late",
                  "[ \"$SCHEDCOORD_EVENT_ID\" = SLOW ] && sleep 1\n"
                  "echo \"$SCHEDCOORD_PHASE $SCHEDCOORD_EVENT_ID\" >> \"$RUNS\"\n",
                  NULL, s_no_net, &s, &o, &a);
    SC_REQUIRE(a);
    /* arrives late */
    SC_CHECK_INT(s_send_until(a, 1, SC_MSG_PHASE_PREPARE, "EV-1", -1000), 0);
    s_drain(a);
    SC_CHECK_INT(s_count(SC_MSG_HOOK_PROGRESS, SC_MSG_HOOK_REFUSED), 1);
    SC_CHECK_INT(s_count(SC_MSG_HOOK_PROGRESS, SC_MSG_HOOK_STARTED), 0);
    /* waits in the queue, behind a hook of 1 s, past it */
    SC_CHECK_INT(s_send_msg(a, s_order(5, 2, SC_MSG_PHASE_PREPARE, "SLOW")), 0);
    SC_CHECK_INT(s_send_until(a, 3, SC_MSG_PHASE_PREPARE, "EV-2", 300), 0);
    /* a recover is not a prepare: until_ms does not hold it */
    SC_CHECK_INT(s_send_until(a, 4, SC_MSG_PHASE_RECOVER, "EV-3", -1000), 0);
    s_drain(a);
    SC_CHECK_INT(s_count(SC_MSG_HOOK_PROGRESS, SC_MSG_HOOK_REFUSED), 2);
    /* sent again in time: it runs */
    SC_CHECK_INT(s_send_until(a, 5, SC_MSG_PHASE_PREPARE, "EV-1", 60000), 0);
    s_drain(a);
    log = s_runs();
    SC_CHECK_STR(log, "prepare SLOW\nrecover EV-3\nprepare EV-1\n");
    sc_agent_get_stats(a, &stats);
    SC_CHECK_INT(stats.late_orders, 2);
    free(log);
    sc_agent_destroy(&a);
    sc_agent_settings_free(&s);
}

/* Nemesis seed 65: a recover the agent's stop interrupted (here before its hook began: the run
 * recorded "started", the agent killed) runs again when ordered again — left undone, its VM
 * stayed out of service while the next fault domain drained. A prepare interrupted does not
 * (the leader rolls it back). */
SC_TEST(interrupted_recover_runs_again)
{
    sc_agent_settings_t s;
    sc_agent_opts_t o = {0};
    sc_agent_t *a = NULL;
    sc_agent_state_t *st = NULL;
    sc_agent_run_t run;
    char err[256] = "", state[600], *log;
    int interrupted = -1;

    s_agent_start("intr", "echo \"$SCHEDCOORD_PHASE $SCHEDCOORD_EVENT_ID\" >> \"$RUNS\"\n", NULL,
                  s_no_net, &s, &o, &a);
    SC_REQUIRE(a);
    sc_agent_destroy(&a);
    /* the runs the stopped agent left "started" */
    snprintf(state, sizeof(state), "%s/state", s_dir);
    SC_REQUIRE(sc_agent_state_open(state, &st, NULL, err, sizeof(err)) == 0);
    SC_CHECK_INT(
        sc_agent_state_run_start(st, "EV-R", SC_MSG_PHASE_RECOVER, 1, SC_MSG_ORIGIN_ORDER, 5, NULL),
        0);
    SC_CHECK_INT(
        sc_agent_state_run_start(st, "EV-P", SC_MSG_PHASE_PREPARE, 1, SC_MSG_ORIGIN_ORDER, 5, NULL),
        0);
    sc_agent_state_close(&st);
    SC_REQUIRE(sc_agent_new(&o, &a, err, sizeof(err)) == 0);
    SC_CHECK_INT(s_send_msg(a, s_order(5, 1, SC_MSG_PHASE_PREPARE, "EV-P")), 0);
    SC_CHECK_INT(s_send_msg(a, s_order(5, 2, SC_MSG_PHASE_RECOVER, "EV-R")), 0);
    s_drain(a);
    log = s_runs();
    SC_CHECK_STR(log, "recover EV-R\n"); /* the prepare is not run again */
    free(log);
    SC_CHECK_INT(s_count(SC_MSG_HOOK_PROGRESS, SC_MSG_HOOK_INTERRUPTED), 1); /* EV-P's */
    SC_CHECK_INT(s_count(SC_MSG_HOOK_PROGRESS, SC_MSG_HOOK_DONE), 1);        /* EV-R's */
    /* ordered again once done: its result, not a third run */
    SC_CHECK_INT(s_send_msg(a, s_order(5, 3, SC_MSG_PHASE_RECOVER, "EV-R")), 0);
    s_drain(a);
    SC_CHECK_INT(s_runs_logged(), 1);
    sc_agent_destroy(&a);
    SC_REQUIRE(sc_agent_state_open(state, &st, &interrupted, err, sizeof(err)) == 0);
    SC_CHECK_INT(interrupted, 0);
    SC_CHECK_INT(sc_agent_state_get_run(st, "EV-R", SC_MSG_PHASE_RECOVER, 1, &run), 0);
    SC_CHECK_INT(run.state, SC_MSG_HOOK_DONE);
    sc_agent_state_close(&st);
    sc_agent_settings_free(&s);
}

/* One malformed event must not blind the agent: the valid events are reported, the bad one's
 * reason with them (at most SC_MSG_MAX_MALFORMED), counted once per incarnation. */
SC_TEST(malformed_events)
{
    sc_agent_settings_t s;
    sc_agent_opts_t o = {0};
    sc_agent_t *a = NULL;
    sc_agent_stats_t st;
    char body[4096];
    const char *good = "{\"EventId\":\"EV-1\",\"EventStatus\":\"Scheduled\",\"EventType\":"
                       "\"Reboot\",\"ResourceType\":\"VirtualMachine\",\"Resources\":[\"vm_0\"],"
                       "\"NotBefore\":\"Mon, 11 Apr 2022 22:26:58 GMT\"}";
    int len;

    s_agent_start("malformed", "", NULL, s_no_net, &s, &o, &a);
    SC_REQUIRE(a);
    len = snprintf(body, sizeof(body), "{\"DocumentIncarnation\":4,\"Events\":[%s,{%s}]}", good,
                   "\"EventId\":\"EV-2\",\"EventType\":\"Reboot\"");
    SC_CHECK_INT(sc_agent_feed_body(a, body, (size_t)len), 0);
    SC_CHECK_INT(sc_agent_feed_body(a, body, (size_t)len), 0);
    SC_REQUIRE(s_count(SC_MSG_DOCUMENT, -1) == 1);
    SC_CHECK_INT(s_sent[s_n_sent - 1].n_events, 1);
    SC_CHECK_INT(s_sent[s_n_sent - 1].n_malformed, 1);
    SC_CHECK_STR(s_sent[s_n_sent - 1].detail, "Events[1].EventStatus: missing");
    sc_agent_get_stats(a, &st);
    SC_CHECK_INT(st.bad_documents, 0);
    SC_CHECK_INT(st.malformed_events, 1);
    /* ten bad events in the next incarnation: the first 8 reasons go on the wire */
    len = snprintf(body, sizeof(body), "{\"DocumentIncarnation\":5,\"Events\":[%s", good);
    for (int i = 0; i < 10; i++)
        len += snprintf(body + len, sizeof(body) - (size_t)len, ",{\"EventId\":%d}", i);
    len += snprintf(body + len, sizeof(body) - (size_t)len, "]}");
    SC_CHECK_INT(sc_agent_feed_body(a, body, (size_t)len), 0);
    SC_REQUIRE(s_count(SC_MSG_DOCUMENT, -1) == 2);
    SC_CHECK_INT(s_sent[s_n_sent - 1].n_events, 1);
    SC_CHECK_INT(s_sent[s_n_sent - 1].n_malformed, SC_MSG_MAX_MALFORMED);
    sc_agent_get_stats(a, &st);
    SC_CHECK_INT(st.malformed_events, 11);
    sc_agent_destroy(&a);
    sc_agent_settings_free(&s);
}

/* How many hooks (*ret_runs) the safety net of an agent with --freeze-threshold-s threshold
 * (NULL: the default) runs for a Freeze of 5 s on this VM whose NotBefore is near, no leader. */
static void s_standalone_freeze_runs(const char *name, const char *threshold, int *ret_runs)
{
    sc_agent_settings_t s;
    sc_agent_opts_t o = {0};
    sc_agent_t *a = NULL;
    const char *const net[] = {"--standalone-after",
                               "0",
                               "--hook-timeout",
                               "5",
                               "--safety-margin",
                               "30",
                               "--freeze-threshold-s",
                               threshold ? threshold : "9",
                               NULL};
    char nb[64], doc[512];
    int n;

    *ret_runs = -1;
    s_agent_start(name, "echo \"$SCHEDCOORD_PHASE $SCHEDCOORD_ORIGIN\" >> \"$RUNS\"\n", NULL, net,
                  &s, &o, &a);
    SC_REQUIRE(a);
    sc_time_rfc1123(sc_wall_ms() / 1000 + 10, nb, sizeof(nb));
    snprintf(doc, sizeof(doc),
             "{\"DocumentIncarnation\":1,\"Events\":[{\"EventId\":\"FZ-1\",\"EventStatus\":"
             "\"Scheduled\",\"EventType\":\"Freeze\",\"ResourceType\":\"VirtualMachine\","
             "\"Resources\":[\"vm_0\"],\"NotBefore\":\"%s\",\"DurationInSeconds\":5}]}",
             nb);
    SC_CHECK_INT(sc_agent_feed_body(a, doc, strlen(doc)), 0);
    for (int i = 0; i < 5; i++)
        SC_CHECK_INT(sc_agent_step(a, 10), 0);
    s_drain(a);
    SC_CHECK(sc_agent_standalone(a));
    sc_agent_destroy(&a);
    sc_agent_settings_free(&s);
    n = s_runs_logged();
    if (n) {
        char *log = s_runs();
        SC_CHECK_STR(log, "prepare standalone\n");
        free(log);
    }
    *ret_runs = n;
}

/* The safety net's Freeze threshold is the policy's freeze-threshold-s (it was 9, hard-coded):
 * with 3, a Freeze of 5 s needs a drain and is prepared (then approved only after that
 * prepare with --standalone-approve); with the default 9 it is left alone. */
SC_TEST(standalone_freeze_threshold)
{
    int runs;

    s_standalone_freeze_runs("freeze3", "3", &runs);
    SC_CHECK_INT(runs, 1);
    s_standalone_freeze_runs("freeze9", NULL, &runs);
    SC_CHECK_INT(runs, 0);
}

/* POSTs an agent's safety net (no leader, --standalone-approve) makes for its own event of
 * EventStatus status whose NotBefore is near, once its prepare ran. */
static void s_standalone_posts(const char *name, const char *status, int *ret_posts)
{
    sc_ts_t *ts = sc_ts_start("/vm_0");
    sc_ts_cfg_t cfg = {0};
    sc_agent_settings_t s;
    sc_agent_opts_t o = {0};
    sc_agent_t *a = NULL;
    const char *const net[] = {"--standalone-after",
                               "0",
                               "--hook-timeout",
                               "5",
                               "--safety-margin",
                               "30",
                               "--standalone-approve",
                               "--poll-interval",
                               "0.1",
                               NULL};
    char nb[64], doc[512];

    *ret_posts = -1;
    SC_REQUIRE(ts);
    sc_time_rfc1123(sc_wall_ms() / 1000 + 10, nb, sizeof(nb));
    snprintf(doc, sizeof(doc),
             "{\"DocumentIncarnation\":1,\"Events\":[{\"EventId\":\"ST-1\",\"EventStatus\":"
             "\"%s\",\"EventType\":\"Reboot\",\"ResourceType\":\"VirtualMachine\","
             "\"Resources\":[\"vm_0\",\"vm_1\"],\"NotBefore\":\"%s\"}]}",
             status, nb);
    cfg.body = doc;
    sc_ts_set(ts, &cfg);
    s_stop = 0;
    s_agent_start(name, "echo \"$SCHEDCOORD_PHASE\" >> \"$RUNS\"\n", ts->url, net, &s, &o, &a);
    SC_REQUIRE(a);
    for (int i = 0; i < 40 && s_runs_logged() < 1; i++)
        SC_CHECK_INT(sc_agent_step(a, 50), 0);
    for (int i = 0; i < 10; i++) /* the hook's result, and what the net does with it */
        SC_CHECK_INT(sc_agent_step(a, 50), 0);
    SC_CHECK_INT(s_runs_logged(), 1);
    sc_agent_destroy(&a);
    sc_agent_settings_free(&s);
    sc_ts_lock(ts);
    *ret_posts = ts->posts;
    sc_ts_unlock(ts);
    sc_ts_stop(&ts);
}

/* The safety net never approves an event whose EventStatus it does not know (issue 9 case 12):
 * it may prepare its VM (a drain is safe), but one POST would start the event for every VM in
 * Resources on a status nobody understands. A Scheduled one is approved once prepared. */
SC_TEST(standalone_never_approves_an_unknown_status)
{
    int posts;

    s_standalone_posts("st_sched", "Scheduled", &posts);
    SC_CHECK_INT(posts, 1);
    s_standalone_posts("st_unknown", "Pending", &posts);
    SC_CHECK_INT(posts, 0);
}

static void s_on_alarm(int sig)
{
    (void)sig;
    s_stop = 1;
}

/* An agent polling the fake IMDS ts with --imds-timeout 1 and --imds-first-timeout first
 * (its stop flag s_stop); one step, whose duration goes to *ret_ms. */
static void s_first_poll(sc_ts_t *ts, const char *first, int64_t *ret_ms, sc_agent_stats_t *ret)
{
    sc_agent_settings_t s;
    sc_agent_opts_t o = {0};
    sc_agent_t *a = NULL;
    const char *const timeouts[] = {"--imds-timeout", "1", "--imds-first-timeout", first, NULL};
    int64_t t0;

    s_agent_start("first_poll", "", ts->url, timeouts, &s, &o, &a);
    SC_REQUIRE(a);
    t0 = sc_mono_ms();
    SC_CHECK_INT(sc_agent_step(a, 0), 0);
    *ret_ms = sc_mono_ms() - t0;
    sc_agent_get_stats(a, ret);
    sc_agent_destroy(&a);
    sc_agent_settings_free(&s);
}

/* IMDS may take up to two minutes to answer the first scheduled-events request (it enables the
 * service then): the agent's first poll waits --imds-first-timeout, not --imds-timeout, and
 * succeeds without a retry (with the short timeout, as before, it timed out); SIGTERM (the stop
 * flag) still ends that long request within about a second. */
SC_TEST(first_imds_request)
{
    sc_ts_t *ts = sc_ts_start("/vm_3");
    sc_ts_cfg_t slow = {.sleep_ms = 2000};
    struct sigaction sa = {.sa_handler = s_on_alarm};
    struct itimerval it = {.it_value = {.tv_usec = 300000}};
    sc_agent_stats_t st;
    int64_t ms;

    SC_REQUIRE(ts);
    sc_ts_set(ts, &slow);
    s_stop = 0;
    s_first_poll(ts, "5", &ms, &st);
    SC_CHECK_INT(st.polls, 1);
    SC_CHECK_INT(st.poll_errors, 0);
    SC_CHECK_INT(st.documents_sent, 1);
    SC_CHECK_INT(s_count(SC_MSG_DOCUMENT, -1), 1);
    SC_CHECK(ms >= 1900);
    sc_ts_lock(ts);
    SC_CHECK_INT(ts->requests, 1);
    sc_ts_unlock(ts);
    /* the short timeout for the first request too: it times out */
    s_first_poll(ts, "1", &ms, &st);
    SC_CHECK_INT(st.poll_errors, 1);
    SC_CHECK_INT(st.documents_sent, 0);
    /* stopped during a long first request: the step ends at once, no error counted */
    slow.sleep_ms = 30000;
    sc_ts_set(ts, &slow);
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    setitimer(ITIMER_REAL, &it, NULL);
    s_first_poll(ts, "60", &ms, &st);
    SC_CHECK(s_stop);
    SC_CHECK(ms < 2500);
    SC_CHECK_INT(st.poll_errors, 0);
    sc_ts_stop(&ts);
}

/* The last hook_progress sent: NULL when none. */
static const s_sent_t *s_last_progress(void)
{
    for (size_t i = s_n_sent; i-- > 0;)
        if (s_sent[i].type == SC_MSG_HOOK_PROGRESS)
            return &s_sent[i];
    return NULL;
}

static sc_msg_t *s_order_attempt(uint64_t seq, sc_msg_phase_t phase, const char *ev, int attempt)
{
    sc_msg_t *m = s_order(5, seq, phase, ev);

    if (m)
        m->order.attempt = attempt;
    return m;
}

/* Retried drains: each (event, phase, attempt) runs once; attempt 2's prepare runs although
 * attempt 1's failed and was recovered; an order of an older attempt is never run (its recorded
 * result, or a nack); the hooks see SCHEDCOORD_ATTEMPT; the attempts survive a restart. */
SC_TEST(attempts)
{
    sc_agent_settings_t s;
    sc_agent_opts_t o = {0};
    sc_agent_t *a = NULL;
    char err[256] = "", *log;
    const char *ran =
        "prepare EV-A 1\nrecover EV-A 1\nprepare EV-A 2\nprepare EV-B 3\nrecover EV-A 2\n";
    uint64_t seq = 1;

    /* attempt 1's prepare fails */
    s_agent_start("attempts",
                  "echo \"$SCHEDCOORD_PHASE $SCHEDCOORD_EVENT_ID $SCHEDCOORD_ATTEMPT\" >> "
                  "\"$RUNS\"\n[ \"$SCHEDCOORD_PHASE$SCHEDCOORD_ATTEMPT\" != prepare1 ]\n",
                  NULL, s_no_net, &s, &o, &a);
    SC_REQUIRE(a);

    SC_CHECK_INT(s_send_msg(a, s_order_attempt(seq++, SC_MSG_PHASE_PREPARE, "EV-A", 1)), 0);
    s_drain(a);
    SC_REQUIRE(s_last_progress());
    SC_CHECK_INT(s_last_progress()->state, SC_MSG_HOOK_FAILED);
    SC_CHECK_INT(s_last_progress()->attempt, 1);
    /* rolled back: attempt 1's recover; then attempt 2's prepare runs */
    SC_CHECK_INT(s_send_msg(a, s_order_attempt(seq++, SC_MSG_PHASE_RECOVER, "EV-A", 1)), 0);
    s_drain(a);
    SC_CHECK_INT(s_last_progress()->state, SC_MSG_HOOK_DONE);
    SC_CHECK_INT(s_send_msg(a, s_order_attempt(seq++, SC_MSG_PHASE_PREPARE, "EV-A", 2)), 0);
    s_drain(a);
    SC_CHECK_INT(s_last_progress()->state, SC_MSG_HOOK_DONE);
    SC_CHECK_INT(s_last_progress()->phase, SC_MSG_PHASE_PREPARE);
    SC_CHECK_INT(s_last_progress()->attempt, 2);
    /* attempt 1 again: its recorded results, nothing run */
    SC_CHECK_INT(s_send_msg(a, s_order_attempt(seq++, SC_MSG_PHASE_PREPARE, "EV-A", 1)), 0);
    s_drain(a);
    SC_CHECK_INT(s_last_progress()->state, SC_MSG_HOOK_FAILED);
    SC_CHECK_INT(s_last_progress()->attempt, 1);
    /* the same attempt again: re-reported */
    SC_CHECK_INT(s_send_msg(a, s_order_attempt(seq++, SC_MSG_PHASE_PREPARE, "EV-A", 2)), 0);
    s_drain(a);
    SC_CHECK_INT(s_last_progress()->state, SC_MSG_HOOK_DONE);
    SC_CHECK_INT(s_last_progress()->attempt, 2);
    /* an older attempt with no record: refused */
    SC_CHECK_INT(s_send_msg(a, s_order_attempt(seq++, SC_MSG_PHASE_PREPARE, "EV-B", 3)), 0);
    s_drain(a);
    SC_CHECK_INT(s_count(SC_MSG_NACK, -1), 0);
    SC_CHECK_INT(s_send_msg(a, s_order_attempt(seq, SC_MSG_PHASE_PREPARE, "EV-B", 2)), 0);
    s_drain(a);
    SC_CHECK_INT(s_count(SC_MSG_NACK, -1), 1);
    SC_CHECK_INT(s_sent[s_n_sent - 1].ref_seq, seq);
    SC_CHECK_STR(s_sent[s_n_sent - 1].detail, "stale attempt 2 < 3 for event EV-B");
    seq++;
    SC_CHECK_INT(s_send_msg(a, s_order_attempt(seq++, SC_MSG_PHASE_RECOVER, "EV-A", 2)), 0);
    s_drain(a);
    log = s_runs();
    SC_CHECK_STR(log, ran);
    free(log);
    sc_agent_destroy(&a);

    /* after a restart: the attempts are known */
    s_n_sent = 0;
    SC_REQUIRE(sc_agent_new(&o, &a, err, sizeof(err)) == 0);
    SC_CHECK_INT(s_send_msg(a, s_order_attempt(seq++, SC_MSG_PHASE_PREPARE, "EV-A", 1)), 0);
    SC_CHECK_INT(s_send_msg(a, s_order_attempt(seq++, SC_MSG_PHASE_RECOVER, "EV-B", 2)), 0);
    s_drain(a);
    SC_CHECK_INT(s_count(SC_MSG_HOOK_PROGRESS, SC_MSG_HOOK_FAILED), 1);
    SC_CHECK_INT(s_count(SC_MSG_NACK, -1), 1);
    log = s_runs();
    SC_CHECK_STR(log, ran); /* nothing more ran */
    free(log);
    sc_agent_destroy(&a);
    sc_agent_settings_free(&s);
}

/* The observed_at_ms of the last DOCUMENT sent, -1 if none. */
static int64_t s_last_observed(void)
{
    for (size_t i = s_n_sent; i-- > 0;)
        if (s_sent[i].type == SC_MSG_DOCUMENT)
            return s_sent[i].observed_at_ms;
    return -1;
}

/* A document sent again (doc_request, a coordinator reconnecting) carries the time it was read
 * from IMDS, not the time it is sent: while IMDS fails, the coordinator must be able to tell
 * the old copy from a newer one (issue 9, safety 1). A new document gets a new time. */
SC_TEST(document_resent_with_its_read_time)
{
    sc_agent_settings_t s;
    sc_agent_opts_t o = {0};
    sc_agent_t *a = NULL;
    sc_msg_t *req = NULL;
    char err[256] = "", state[600];
    const char *doc = "{\"DocumentIncarnation\":4,\"Events\":[]}";
    const char *doc5 = "{\"DocumentIncarnation\":5,\"Events\":[]}";
    int64_t before = sc_wall_ms(), read_at;

    s_tmpdir("resend");
    snprintf(state, sizeof(state), "%s/state", s_dir);
    SC_REQUIRE(s_parse(&s, err, "--imds-url", "http://127.0.0.1:1", "--members",
                       "coord=127.0.0.1:1", "--state-dir", state, "--prepare-hook", "/bin/true",
                       "--recover-hook", "/bin/true", "--insecure", "--standalone-after", "3600",
                       NULL) == 0);
    o.settings = &s;
    o.name = "vm_0";
    o.send = s_capture;
    o.manual_imds = true;
    s_n_sent = 0;
    SC_REQUIRE(sc_agent_new(&o, &a, err, sizeof(err)) == 0);
    SC_CHECK_INT(sc_agent_feed_body(a, doc, strlen(doc)), 0);
    read_at = s_last_observed();
    SC_CHECK(read_at >= before && read_at <= sc_wall_ms());
    sc_sleep_ms(30);
    /* the same document read again, then IMDS fails: still the document read at read_at */
    SC_CHECK_INT(sc_agent_feed_body(a, doc, strlen(doc)), 0);
    SC_CHECK_INT(sc_agent_feed_body(a, "{", 1), 0);
    SC_REQUIRE(sc_msg_new(SC_MSG_DOC_REQUEST, "coord", 1, 1, &req) == 0);
    SC_CHECK_INT(s_send_msg(a, req), 0);
    SC_CHECK_INT(s_count(SC_MSG_DOCUMENT, -1), 2);
    SC_CHECK_INT(s_last_observed(), read_at);
    /* a new document: read now */
    SC_CHECK_INT(sc_agent_feed_body(a, doc5, strlen(doc5)), 0);
    SC_CHECK_INT(s_count(SC_MSG_DOCUMENT, -1), 3);
    SC_CHECK(s_last_observed() >= read_at + 30);
    sc_agent_destroy(&a);
    sc_agent_settings_free(&s);
}

int main(void)
{
    sc_log_init("test_agent_core", SC_LOG_ERR);
    SC_RUN(settings_errors_name_the_key);
    SC_RUN(members);
    SC_RUN(members_digest);
    SC_RUN(state_survives_reopen);
    SC_RUN(state_schema_1_migrates);
    SC_RUN(orders);
    SC_RUN(fencing);
    SC_RUN(recover_unprepared);
    SC_RUN(rehearsal_order_tells_the_hook);
    SC_RUN(late_prepare_refused);
    SC_RUN(interrupted_recover_runs_again);
    SC_RUN(malformed_events);
    SC_RUN(standalone_freeze_threshold);
    SC_RUN(standalone_never_approves_an_unknown_status);
    SC_RUN(first_imds_request);
    SC_RUN(attempts);
    SC_RUN(document_resent_with_its_read_time);
    return sc_test_done();
}
