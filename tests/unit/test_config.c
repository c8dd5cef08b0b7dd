/* sc_config: flags in both forms, file keys with '-' and '_', the command line over the file,
 * bools, seconds, defaults, --help, and a clear message naming the key for each bad input. */
#include "sc_config.h"
#include "sc_error.h"
#include "sc_test.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct settings {
    char *coordinator;   /* required string */
    char *hook_prepare;  /* optional string, no default */
    long port;           /* int with range */
    double hook_timeout; /* seconds with range */
    double poll;         /* seconds, no range */
    bool verbose;        /* bool, default false */
    bool approve;        /* bool, default true */
} settings_t;

static const sc_cfg_key_t s_keys[] = {
    {"coordinator", SC_CFG_STRING, offsetof(settings_t, coordinator), NULL, "coordinator endpoint",
     0, 0, true},
    {"hook-prepare", SC_CFG_STRING, offsetof(settings_t, hook_prepare), NULL, "prepare hook path",
     0, 0, false},
    {"port", SC_CFG_INT, offsetof(settings_t, port), "5555", "listen port", 1, 65535, false},
    {"hook-timeout", SC_CFG_SECONDS, offsetof(settings_t, hook_timeout), "30",
     "seconds a hook may run", 0, 86400, false},
    {"poll-interval", SC_CFG_SECONDS, offsetof(settings_t, poll), "1.5", "IMDS poll period", 0, 0,
     false},
    {"verbose", SC_CFG_BOOL, offsetof(settings_t, verbose), "false", "debug logging", 0, 0, false},
    {"auto-approve", SC_CFG_BOOL, offsetof(settings_t, approve), "true", "approve events", 0, 0,
     false},
};
#define N_KEYS (sizeof(s_keys) / sizeof(s_keys[0]))

static char s_tmp[900];

/* Writes a config file under $SC_TMP, returns its path (static). */
static const char *s_file(const char *name, const char *text)
{
    static char path[1024];

    snprintf(path, sizeof(path), "%s/%s", s_tmp, name);
    sc_test_write_file(path, text, 0644);
    return path;
}

/* Parses argv (NULL-terminated, argv[0] supplied) into *s; err gets the message. */
static int s_parse(settings_t *s, char *err, size_t errlen, const char **args)
{
    char *argv[32];
    int argc = 0;

    argv[argc++] = "schedcoord-test";
    for (; args[argc - 1] && argc < 31; argc++)
        argv[argc] = (char *)(uintptr_t)args[argc - 1];
    argv[argc] = NULL;
    memset(s, 0, sizeof(*s));
    err[0] = '\0';
    return sc_config_parse(s_keys, N_KEYS, s, argc, argv, NULL, "usage: test [options]", err,
                           errlen);
}

/* Expects SC_E_CONFIG with every one of the substrings in the message. */
#define CHECK_BAD(args, ...)                                                                       \
    do {                                                                                           \
        settings_t s_;                                                                             \
        char e_[512];                                                                              \
        const char *subs_[] = {__VA_ARGS__, NULL};                                                 \
        SC_CHECK_INT(s_parse(&s_, e_, sizeof(e_), args), SC_E_CONFIG);                             \
        for (const char **p_ = subs_; *p_; p_++)                                                   \
            if (!strstr(e_, *p_))                                                                  \
                SC_FAILF("message \"%s\" lacks \"%s\"", e_, *p_);                                  \
        sc_config_free(s_keys, N_KEYS, &s_);                                                       \
    } while (0)

SC_TEST(defaults_and_both_flag_forms)
{
    settings_t s;
    char err[512];
    const char *args[] = {"--coordinator",
                          "tcp://127.0.0.1:7000",
                          "--port=6000",
                          "--verbose",
                          "--hook-timeout",
                          "0.5",
                          NULL};

    SC_REQUIRE(s_parse(&s, err, sizeof(err), args) == 0);
    SC_CHECK_STR(s.coordinator, "tcp://127.0.0.1:7000");
    SC_CHECK(s.hook_prepare == NULL);
    SC_CHECK_INT(s.port, 6000);
    SC_CHECK(s.hook_timeout == 0.5);
    SC_CHECK(s.poll == 1.5); /* default */
    SC_CHECK(s.verbose);
    SC_CHECK(s.approve); /* default true */
    sc_config_free(s_keys, N_KEYS, &s);
    SC_CHECK(s.coordinator == NULL);
}

SC_TEST(bools_and_seconds)
{
    settings_t s;
    char err[512];
    const char *a1[] = {"--coordinator=x",
                        "--no-auto-approve",
                        "--verbose=yes",
                        "--poll-interval=250ms",
                        "--hook-timeout",
                        "2m",
                        NULL};
    const char *a2[] = {"--coordinator=x", "--auto-approve=off", "--verbose=0",
                        "--hook-timeout=1.25s", NULL};

    SC_REQUIRE(s_parse(&s, err, sizeof(err), a1) == 0);
    SC_CHECK(!s.approve);
    SC_CHECK(s.verbose);
    SC_CHECK(s.poll == 0.25);
    SC_CHECK(s.hook_timeout == 120.0);
    sc_config_free(s_keys, N_KEYS, &s);
    SC_REQUIRE(s_parse(&s, err, sizeof(err), a2) == 0);
    SC_CHECK(!s.approve);
    SC_CHECK(!s.verbose);
    SC_CHECK(s.hook_timeout == 1.25);
    sc_config_free(s_keys, N_KEYS, &s);
}

SC_TEST(file_keys_and_command_line_wins)
{
    settings_t s;
    char err[512];
    const char *path = s_file("good.conf", "# shared by every VM\n"
                                           "\n"
                                           "coordinator = tcp://10.0.0.4:7000   # comment\n"
                                           "hook_prepare = \"/etc/schedcoord/prepare hook\"\n"
                                           "hook-timeout=45.5\n"
                                           "  port = 7001\r\n"
                                           "verbose = true\n"
                                           "auto_approve = no\n"
                                           "poll-interval = 2 # seconds\n");
    const char *args[] = {"--config", path, "--port", "7002", NULL};

    SC_REQUIRE(s_parse(&s, err, sizeof(err), args) == 0);
    SC_CHECK_STR(s.coordinator, "tcp://10.0.0.4:7000");
    SC_CHECK_STR(s.hook_prepare, "/etc/schedcoord/prepare hook");
    SC_CHECK(s.hook_timeout == 45.5);
    SC_CHECK_INT(s.port, 7002); /* the command line wins, even though it came after --config */
    SC_CHECK(s.verbose);
    SC_CHECK(!s.approve);
    SC_CHECK(s.poll == 2.0);
    sc_config_free(s_keys, N_KEYS, &s);
    /* the flag wins even when written before --config */
    {
        char cfg[1100];
        const char *a3[] = {"--port=7003", cfg, NULL};
        snprintf(cfg, sizeof(cfg), "--config=%s", path);
        SC_REQUIRE(s_parse(&s, err, sizeof(err), a3) == 0);
        SC_CHECK_INT(s.port, 7003);
        SC_CHECK_STR(s.coordinator, "tcp://10.0.0.4:7000");
        sc_config_free(s_keys, N_KEYS, &s);
    }
}

SC_TEST(help_prints_every_key)
{
    settings_t s;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    char *argv[] = {"prog", "--port=bad", "--help", NULL};
    char err[256];

    SC_REQUIRE(out);
    memset(&s, 0, sizeof(s));
    SC_CHECK_INT(sc_config_parse(s_keys, N_KEYS, &s, 3, argv, out, "usage: prog [options]", err,
                                 sizeof(err)),
                 1);
    fclose(out);
    SC_REQUIRE(text);
    SC_CHECK(strstr(text, "usage: prog [options]") != NULL);
    SC_CHECK(strstr(text, "--config FILE") != NULL);
    for (size_t i = 0; i < N_KEYS; i++) {
        char flag[128];
        snprintf(flag, sizeof(flag), "--%s", s_keys[i].name);
        if (!strstr(text, flag) || !strstr(text, s_keys[i].help))
            SC_FAILF("usage lacks %s or its help", flag);
    }
    SC_CHECK(strstr(text, "--hook-timeout SECONDS") != NULL);
    SC_CHECK(strstr(text, "default 30, 0..86400") != NULL);
    SC_CHECK(strstr(text, "--port INT") != NULL);
    SC_CHECK(strstr(text, "required") != NULL);
    free(text);
    sc_config_free(s_keys, N_KEYS, &s);
}

SC_TEST(positional_args)
{
    settings_t s;
    char err[256], **args = NULL;
    size_t n = 0;
    char *argv[] = {"prog", "status", "--coordinator=x", "--", "--verbose", NULL};

    memset(&s, 0, sizeof(s));
    SC_REQUIRE(sc_config_parse_args(s_keys, N_KEYS, &s, 5, argv, NULL, NULL, &args, &n, err,
                                    sizeof(err)) == 0);
    SC_CHECK_INT(n, 2);
    SC_REQUIRE(args);
    SC_CHECK_STR(args[0], "status");
    SC_CHECK_STR(args[1], "--verbose"); /* after "--" */
    SC_CHECK(!s.verbose);
    free(args);
    sc_config_free(s_keys, N_KEYS, &s);
    /* rejected by sc_config_parse */
    memset(&s, 0, sizeof(s));
    SC_CHECK_INT(sc_config_parse(s_keys, N_KEYS, &s, 3, argv, NULL, NULL, err, sizeof(err)),
                 SC_E_CONFIG);
    SC_CHECK(strstr(err, "unexpected argument \"status\"") != NULL);
    sc_config_free(s_keys, N_KEYS, &s);
}

SC_TEST(bad_command_lines_name_the_key)
{
    const char *unknown[] = {"--coordinator=x", "--hook-timout=3", NULL};
    const char *single[] = {"--coordinator=x", "-v", NULL};
    const char *missing[] = {"--coordinator=x", "--port", NULL};
    const char *nonnum[] = {"--coordinator=x", "--hook-timeout", "abc", NULL};
    const char *nonint[] = {"--coordinator=x", "--port=12x", NULL};
    const char *range[] = {"--coordinator=x", "--port=70000", NULL};
    const char *srange[] = {"--coordinator=x", "--hook-timeout=-1", NULL};
    const char *badbool[] = {"--coordinator=x", "--verbose=maybe", NULL};
    const char *required[] = {"--port=1", NULL};
    const char *nan[] = {"--coordinator=x", "--poll-interval=nan", NULL};
    const char *hex[] = {"--coordinator=x", "--hook-timeout=0x10", NULL};
    const char *nocfg[] = {"--coordinator=x", "--config", NULL};
    const char *twocfg[] = {"--config=/a", "--config=/b", NULL};
    const char *noneg[] = {"--coordinator=x", "--no-port", NULL};

    CHECK_BAD(unknown, "unknown option \"--hook-timout\"", "did you mean \"hook-timeout\"");
    CHECK_BAD(single, "unknown option \"-v\"");
    CHECK_BAD(missing, "--port: missing value", "integer");
    CHECK_BAD(nonnum, "--hook-timeout: \"abc\" is not a number of seconds",
              "expected e.g. 30 or 0.5");
    CHECK_BAD(nonint, "--port: \"12x\" is not an integer");
    CHECK_BAD(range, "--port: 70000 is out of range (expected 1..65535)");
    CHECK_BAD(srange, "--hook-timeout: -1 is out of range (expected 0..86400 seconds)");
    CHECK_BAD(badbool, "--verbose: \"maybe\" is not true/false");
    CHECK_BAD(required, "missing required setting \"coordinator\"");
    CHECK_BAD(nan, "--poll-interval: \"nan\" is not a number of seconds");
    CHECK_BAD(hex, "--hook-timeout: \"0x10\" is not a number of seconds");
    CHECK_BAD(nocfg, "--config: missing value");
    CHECK_BAD(twocfg, "--config: given twice");
    CHECK_BAD(noneg, "unknown option \"--no-port\"");
}

SC_TEST(bad_files_name_the_file_line_and_key)
{
    char cfg[1100];
    const char *args[] = {cfg, NULL};
    const char *p;

    p = s_file("unknown.conf", "coordinator = x\n\n# c\nhook-timout = 3\n");
    snprintf(cfg, sizeof(cfg), "--config=%s", p);
    CHECK_BAD(args, "config file ", "unknown.conf line 4: unknown key \"hook-timout\"",
              "did you mean \"hook-timeout\"");
    p = s_file("badbool.conf", "coordinator = x\nverbose = perhaps\n");
    snprintf(cfg, sizeof(cfg), "--config=%s", p);
    CHECK_BAD(args, "badbool.conf line 2: verbose: \"perhaps\" is not true/false");
    p = s_file("badsec.conf", "coordinator = x\nhook_timeout = 3 minutes\n");
    snprintf(cfg, sizeof(cfg), "--config=%s", p);
    CHECK_BAD(args, "badsec.conf line 2: hook-timeout: \"3 minutes\" is not a number of seconds");
    p = s_file("noeq.conf", "coordinator x\n");
    snprintf(cfg, sizeof(cfg), "--config=%s", p);
    CHECK_BAD(args, "noeq.conf line 1: expected \"key = value\"");
    p = s_file("empty.conf", "coordinator = x\nport =\n");
    snprintf(cfg, sizeof(cfg), "--config=%s", p);
    CHECK_BAD(args, "empty.conf line 2: port: missing value");
    p = s_file("twice.conf", "coordinator = x\nport = 1\nport = 2\n");
    snprintf(cfg, sizeof(cfg), "--config=%s", p);
    CHECK_BAD(args, "twice.conf line 3: port: set twice (first on line 2)");
    p = s_file("quote.conf", "coordinator = \"x\n");
    snprintf(cfg, sizeof(cfg), "--config=%s", p);
    CHECK_BAD(args, "quote.conf line 1: coordinator: missing closing");
    p = s_file("ctrl.conf", "coordinator = a\x01z\n");
    snprintf(cfg, sizeof(cfg), "--config=%s", p);
    CHECK_BAD(args, "ctrl.conf line 1: control character");
    p = s_file("range.conf", "coordinator = x\nport = 0\n");
    snprintf(cfg, sizeof(cfg), "--config=%s", p);
    CHECK_BAD(args, "range.conf line 2: port: 0 is out of range (expected 1..65535)");
    snprintf(cfg, sizeof(cfg), "--config=%s/no-such.conf", s_tmp);
    CHECK_BAD(args, "--config ", "no-such.conf: cannot read: No such file or directory");
    snprintf(cfg, sizeof(cfg), "--config=%s", s_tmp);
    CHECK_BAD(args, "cannot read: not a regular file");
}

SC_TEST(parse_text_limits)
{
    settings_t s;
    char err[256];
    size_t big = SC_CFG_LINE_MAX + 10;
    char *line = malloc(big + 1);

    memset(&s, 0, sizeof(s));
    SC_REQUIRE(line);
    SC_CHECK_INT(sc_config_defaults(s_keys, N_KEYS, &s, err, sizeof(err)), 0);
    SC_CHECK_INT(sc_config_parse_text(s_keys, N_KEYS, &s, "port = 9\n", 9, "t", err, sizeof(err)),
                 0);
    SC_CHECK_INT(s.port, 9);
    memset(line, 'a', big);
    line[big] = '\0';
    SC_CHECK_INT(sc_config_parse_text(s_keys, N_KEYS, &s, line, big, "t", err, sizeof(err)),
                 SC_E_CONFIG);
    SC_CHECK(strstr(err, "line 1: longer than") != NULL);
    /* a members list of a 4,096-member set fits on one line and in one value */
    {
        size_t vlen = 4096 * 28, n = 0;
        char *cfg = malloc(vlen + 16);
        SC_REQUIRE(cfg);
        n += (size_t)sprintf(cfg, "coordinator = ");
        for (int i = 0; n + 28 < vlen; i++)
            n += (size_t)sprintf(cfg + n, "%svm_%d=10.0.%d.%d:7700", i ? "," : "", i, i / 250,
                                 i % 250);
        SC_CHECK_INT(sc_config_parse_text(s_keys, N_KEYS, &s, cfg, n, "t", err, sizeof(err)), 0);
        SC_CHECK(s.coordinator && strlen(s.coordinator) == n - 14);
        free(cfg);
    }
    SC_CHECK_INT(sc_config_parse_text(s_keys, N_KEYS, &s, "port = 1\0x", 10, "t", err, sizeof(err)),
                 SC_E_CONFIG);
    SC_CHECK(strstr(err, "control character") != NULL);
    free(line);
    sc_config_free(s_keys, N_KEYS, &s);
}

/* One file for every program: common keys first, then [agent] and [coordinator]. */
SC_TEST(shared_file_sections)
{
    static const char shared[] = "# the same file on every VM\n"
                                 "coordinator = tcp://a:1\n"
                                 "port = 7\n"
                                 "[agent]  # only the agent reads these\n"
                                 "hook-prepare = /etc/p\n"
                                 "some-agent-key = anything\n"
                                 "[ coordinator ]\n"
                                 "verbose = yes\n"
                                 "[agent]\n"
                                 "hook_timeout = 9\n";
    settings_t s;
    char err[512] = "";

    /* as the agent: common keys and its own; the coordinator's section skipped */
    memset(&s, 0, sizeof(s));
    SC_CHECK_INT(sc_config_defaults(s_keys, N_KEYS, &s, err, sizeof(err)), 0);
    err[0] = '\0';
    s.hook_timeout = 0;
    int rc = sc_config_parse_text_section(s_keys, N_KEYS, &s,
                                          "coordinator = x\n[agent]\nport = 3\n"
                                          "[coordinator]\nwhatever = 1\n",
                                          60, "t", "agent", err, sizeof(err));
    SC_CHECK_INT(rc, 0);
    SC_CHECK_STR(s.coordinator, "x");
    SC_CHECK_INT(s.port, 3);
    sc_config_free(s_keys, N_KEYS, &s);

    /* the test table plays the agent: "some-agent-key" is not one of its keys */
    memset(&s, 0, sizeof(s));
    rc = sc_config_parse_text_section(s_keys, N_KEYS, &s, shared, sizeof(shared) - 1, "shared",
                                      "agent", err, sizeof(err));
    SC_CHECK_INT(rc, SC_E_CONFIG);
    SC_CHECK(strstr(err, "shared line 6: unknown key \"some-agent-key\"") != NULL);
    sc_config_free(s_keys, N_KEYS, &s);

    /* as the coordinator: the [agent] lines are not its business, checked or not */
    memset(&s, 0, sizeof(s));
    rc = sc_config_parse_text_section(s_keys, N_KEYS, &s, shared, sizeof(shared) - 1, "shared",
                                      "coordinator", err, sizeof(err));
    SC_CHECK_INT(rc, 0);
    SC_CHECK_STR(s.coordinator, "tcp://a:1");
    SC_CHECK_INT(s.port, 7);
    SC_CHECK(s.verbose);
    SC_CHECK(s.hook_prepare == NULL);
    SC_CHECK(s.hook_timeout == 0);
    sc_config_free(s_keys, N_KEYS, &s);

    /* an unknown section, a key twice (common and section), a section in a file read without
     * sections, and a common key the program does not know */
    memset(&s, 0, sizeof(s));
    rc = sc_config_parse_text_section(s_keys, N_KEYS, &s, "port = 1\n[agents]\n", 18, "t", "agent",
                                      err, sizeof(err));
    SC_CHECK_INT(rc, SC_E_CONFIG);
    SC_CHECK(strstr(err, "t line 2: unknown section [agents] (expected [agent] or [coordinator])"));
    rc = sc_config_parse_text_section(s_keys, N_KEYS, &s, "port = 1\n[agent]\nport = 2\n", 26, "t",
                                      "agent", err, sizeof(err));
    SC_CHECK_INT(rc, SC_E_CONFIG);
    SC_CHECK(strstr(err, "t line 3: port: set twice (first on line 1)"));
    /* a broken section line in the other program's section: not skipped with it */
    rc = sc_config_parse_text_section(s_keys, N_KEYS, &s, "[agent]\n[coordinator] x\nport = 2\n",
                                      33, "t", "coordinator", err, sizeof(err));
    SC_CHECK_INT(rc, SC_E_CONFIG);
    SC_CHECK(
        strstr(err, "t line 2: expected a section line like [agent], got \"[coordinator] x\""));
    rc = sc_config_parse_text(s_keys, N_KEYS, &s, "[agent]\n", 8, "t", err, sizeof(err));
    SC_CHECK_INT(rc, SC_E_CONFIG);
    SC_CHECK(strstr(err, "t line 1: expected \"key = value\""));
    rc = sc_config_parse_text_section(s_keys, N_KEYS, &s, "prepare-hook-x = 1\n", 19, "t",
                                      "coordinator", err, sizeof(err));
    SC_CHECK_INT(rc, SC_E_CONFIG);
    SC_CHECK(strstr(err, "unknown key \"prepare-hook-x\" (a key of one program only goes under "
                         "its [agent] or [coordinator])"));
    sc_config_free(s_keys, N_KEYS, &s);
}

int main(void)
{
    snprintf(s_tmp, sizeof(s_tmp), "%s", sc_test_tmpdir("config"));
    SC_RUN(defaults_and_both_flag_forms);
    SC_RUN(bools_and_seconds);
    SC_RUN(file_keys_and_command_line_wins);
    SC_RUN(help_prints_every_key);
    SC_RUN(positional_args);
    SC_RUN(bad_command_lines_name_the_key);
    SC_RUN(bad_files_name_the_file_line_and_key);
    SC_RUN(parse_text_limits);
    SC_RUN(shared_file_sections);
    return sc_test_done();
}
