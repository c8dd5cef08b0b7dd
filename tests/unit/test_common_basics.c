/* Error codes, log levels and time helpers. */
#include "sc_error.h"
#include "sc_log.h"
#include "sc_test.h"
#include "sc_time.h"

#include <errno.h>

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

int main(void)
{
    SC_RUN(error_messages);
    SC_RUN(log_levels);
    SC_RUN(time_formats);
    return sc_test_done();
}
