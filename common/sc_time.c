#include "sc_time.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

int64_t sc_mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t sc_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sc_sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};

    if (ms <= 0)
        return;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

char *sc_time_rfc1123(int64_t unix_s, char *buf, size_t len)
{
    time_t t = (time_t)unix_s;
    struct tm tm;

    if (!gmtime_r(&t, &tm) || strftime(buf, len, "%a, %d %b %Y %H:%M:%S GMT", &tm) == 0) {
        if (len)
            buf[0] = '\0';
    }
    return buf;
}

char *sc_time_iso8601(int64_t wall_ms, char *buf, size_t len)
{
    time_t t = (time_t)(wall_ms / 1000);
    struct tm tm;
    char tmp[32];

    if (!gmtime_r(&t, &tm) || strftime(tmp, sizeof(tmp), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
        if (len)
            buf[0] = '\0';
        return buf;
    }
    snprintf(buf, len, "%s.%03dZ", tmp, (int)(wall_ms % 1000));
    return buf;
}
