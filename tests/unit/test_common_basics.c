/* Error codes, log levels and time helpers. */
#include "sc_error.h"
#include "sc_identity.h"
#include "sc_log.h"
#include "sc_net.h"
#include "sc_test.h"
#include "sc_time.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

SC_TEST(error_messages)
{
    SC_CHECK_STR(sc_strerror(0), "success");
    SC_CHECK_STR(sc_errname(SC_E_TIMEOUT), "SC_E_TIMEOUT");
    SC_CHECK_STR(sc_strerror(SC_E_HTTP_429), "HTTP 429 too many requests");
    SC_CHECK_STR(sc_errname(-ENOMEM), "ENOMEM");
    SC_CHECK(strlen(sc_strerror(-ENOENT)) > 0);
    SC_CHECK_STR(sc_strerror(SC_E_BASE_), "unknown error");
    SC_CHECK_STR(sc_strerror(SC_E_MAX_), "unknown error");
}

SC_TEST(error_formatting)
{
    char err[16];

    /* formats into the buffer and hands back the code it was given */
    memset(err, 'x', sizeof(err));
    SC_CHECK_INT(sc_errf(err, sizeof(err), SC_E_CONFIG, "%s: %d", "key", 42), SC_E_CONFIG);
    SC_CHECK_STR(err, "key: 42");
    SC_CHECK_INT(sc_errf(err, sizeof(err), -ENOMEM, "out of memory"), -ENOMEM);
    SC_CHECK_STR(err, "out of memory");
    SC_CHECK_INT(sc_errf(err, sizeof(err), 0, "%s", ""), 0);
    SC_CHECK_STR(err, "");
    /* truncated to the buffer, always terminated, nothing written past it */
    char big[8] = "abcdefg";
    SC_CHECK_INT(sc_errf(big, 4, -EINVAL, "%s", "0123456789"), -EINVAL);
    SC_CHECK_STR(big, "012");
    SC_CHECK(big[4] == 'e' && big[7] == '\0');
    /* no buffer (NULL or size 0): nothing written, the code still returned */
    SC_CHECK_INT(sc_errf(NULL, 0, SC_E_PARSE, "%d", 1), SC_E_PARSE);
    SC_CHECK_INT(sc_errf(NULL, 16, SC_E_PARSE, "%d", 1), SC_E_PARSE);
    strcpy(err, "kept");
    SC_CHECK_INT(sc_errf(err, 0, SC_E_TOO_BIG, "%s", "changed"), SC_E_TOO_BIG);
    SC_CHECK_STR(err, "kept");
}

SC_TEST(log_levels)
{
    sc_log_level_t l;

    SC_CHECK_INT(sc_log_level_parse("warning", &l), 0);
    SC_CHECK_INT(l, SC_LOG_WARN);
    SC_CHECK_INT(sc_log_level_parse("ERROR", &l), 0);
    SC_CHECK_INT(l, SC_LOG_ERR);
    SC_CHECK_INT(sc_log_level_parse("loud", &l), -EINVAL);
    sc_log_init("test", SC_LOG_WARN);
    SC_CHECK(!sc_log_enabled(SC_LOG_INFO));
    SC_CHECK(sc_log_enabled(SC_LOG_ERR));
}

SC_TEST(log_quoting)
{
    /* an IMDS error body or a peer's reason, as it would land in why="..." */
    const char *a = sc_log_q("bad \"x\" at C:\\tmp\nnext=1\r\t\x01\x7f é");
    const char *held[8];
    char big[3 * SC_LOG_Q_MAX];

    SC_CHECK_STR(a, "bad \\\"x\\\" at C:\\\\tmp\\nnext=1\\r\\t\\x01\\x7f é");
    SC_CHECK_STR(sc_log_q(NULL), "");
    SC_CHECK_STR(sc_log_q("plain words"), "plain words");
    /* eight results stay valid together (the arguments of one sc_log call) */
    for (int i = 0; i < 8; i++) {
        char s[8];
        snprintf(s, sizeof(s), "v%d\"", i);
        held[i] = sc_log_q(s);
    }
    for (int i = 0; i < 8; i++) {
        char want[16];
        snprintf(want, sizeof(want), "v%d\\\"", i);
        SC_CHECK_STR(held[i], want);
    }
    /* long text is cut, with "...", and never ends in half an escape */
    memset(big, '"', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    a = sc_log_q(big);
    SC_CHECK(strlen(a) <= SC_LOG_Q_MAX);
    SC_CHECK(strlen(a) > SC_LOG_Q_MAX - 8);
    SC_CHECK_STR(a + strlen(a) - 5, "\\\"...");
    /* nor in the middle of a UTF-8 character: "é" is 2 bytes, the cut falls inside one */
    memcpy(big, "xy", 2);
    for (size_t i = 2; i + 2 < sizeof(big); i += 2)
        memcpy(big + i, "\xc3\xa9", 2);
    big[sizeof(big) - 1] = '\0';
    a = sc_log_q(big);
    SC_CHECK_STR(a + strlen(a) - 5, "\xc3\xa9...");
    SC_CHECK((strlen(a) - 2 - 3) % 2 == 0); /* "xy" + whole characters + "..." */
}

SC_TEST(time_formats)
{
    char buf[64];

    SC_CHECK_STR(sc_time_rfc1123(1649716018, buf, sizeof(buf)), "Mon, 11 Apr 2022 22:26:58 GMT");
    SC_CHECK_STR(sc_time_iso8601(1649716018123LL, buf, sizeof(buf)), "2022-04-11T22:26:58.123Z");
    int64_t t0 = sc_mono_ms();
    sc_sleep_ms(20);
    SC_CHECK(sc_mono_ms() - t0 >= 20);
    SC_CHECK(sc_wall_ms() > 1600000000000LL);
}

SC_TEST(local_endpoints)
{
    SC_CHECK(sc_endpoint_is_local("tcp://127.0.0.1:7700"));
    SC_CHECK(sc_endpoint_is_local("127.0.0.1:7700"));
    SC_CHECK(sc_endpoint_is_local("tcp://127.1.2.3:1"));
    SC_CHECK(sc_endpoint_is_local("tcp://localhost:7700"));
    SC_CHECK(sc_endpoint_is_local("tcp://[::1]:7700"));
    SC_CHECK(!sc_endpoint_is_local("tcp://10.0.0.4:7700"));
    SC_CHECK(!sc_endpoint_is_local("tcp://128.0.0.1:7700"));
    SC_CHECK(!sc_endpoint_is_local("tcp://127.0.0.1.evil.example:7700"));
    SC_CHECK(!sc_endpoint_is_local("tcp://localhost.example:7700"));
    SC_CHECK(!sc_endpoint_is_local("tcp://127.0.0.1"));
    SC_CHECK(!sc_endpoint_is_local("tcp://127.0.0.1:"));
    SC_CHECK(!sc_endpoint_is_local(":7700"));
    SC_CHECK(!sc_endpoint_is_local(NULL));
}

SC_TEST(nofile_raise)
{
    struct rlimit rl;
    long base;

    /* a soft limit below the hard one, as systemd gives services (1024 of 524288) */
    SC_REQUIRE(getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max > 200);
    rl.rlim_cur = 100;
    SC_REQUIRE(setrlimit(RLIMIT_NOFILE, &rl) == 0);
    base = sc_nofile_raise(0);
    SC_CHECK_INT(base, 100);
    /* never lowers; 0 and negative ask for nothing */
    SC_CHECK_INT(sc_nofile_raise(-5), 100);
    SC_CHECK_INT(sc_nofile_raise(50), 100);
    /* raises to exactly what is needed, within the hard limit */
    SC_CHECK_INT(sc_nofile_raise(150), 150);
    SC_REQUIRE(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    SC_CHECK_INT((long)rl.rlim_cur, 150);
    /* above the hard limit: to the hard limit, which the caller sees is short */
    if (rl.rlim_max != RLIM_INFINITY)
        SC_CHECK_INT(sc_nofile_raise((long)rl.rlim_max + 10), (long)rl.rlim_max);
}

/* "{name}" in a path: every occurrence, nothing else touched, never past the buffer */
SC_TEST(identity_expand)
{
    char out[32];

    SC_CHECK_INT(sc_identity_expand("/etc/schedcoord/{name}.key", "vm_3", out, sizeof(out)), 0);
    SC_CHECK_STR(out, "/etc/schedcoord/vm_3.key");
    SC_CHECK_INT(sc_identity_expand("{name}/{name}", "a", out, sizeof(out)), 0);
    SC_CHECK_STR(out, "a/a");
    SC_CHECK_INT(sc_identity_expand("/k/{nam}{name", "a", out, sizeof(out)), 0);
    SC_CHECK_STR(out, "/k/{nam}{name");
    SC_CHECK_INT(sc_identity_expand("", "a", out, sizeof(out)), 0);
    SC_CHECK_STR(out, "");
    SC_CHECK_INT(sc_identity_expand("/0123456789/{name}", "0123456789abcdefghij", out, sizeof(out)),
                 -ENAMETOOLONG);
    SC_CHECK_INT(sc_identity_expand("/0123456789012345678901234567890", "x", out, sizeof(out)),
                 -ENAMETOOLONG);
    SC_CHECK_INT(sc_identity_expand("/012345678901234567890123456789", "x", out, sizeof(out)), 0);
}

int main(void)
{
    SC_RUN(identity_expand);
    SC_RUN(local_endpoints);
    SC_RUN(nofile_raise);
    SC_RUN(error_messages);
    SC_RUN(error_formatting);
    SC_RUN(log_levels);
    SC_RUN(log_quoting);
    SC_RUN(time_formats);
    return sc_test_done();
}
