#include "sc_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/resource.h>

bool sc_endpoint_is_local(const char *endpoint)
{
    char host[256];
    const char *h, *colon;
    size_t len;
    struct in_addr a4;

    if (!endpoint)
        return false;
    h = strncmp(endpoint, "tcp://", 6) == 0 ? endpoint + 6 : endpoint;
    if (!(colon = strrchr(h, ':')) || colon == h || colon[1] == '\0')
        return false;
    len = (size_t)(colon - h);
    if (len >= sizeof(host))
        return false;
    memcpy(host, h, len);
    host[len] = '\0';
    if (strcmp(host, "localhost") == 0 || strcmp(host, "[::1]") == 0 || strcmp(host, "::1") == 0)
        return true;
    return inet_pton(AF_INET, host, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

long sc_nofile_raise(long need)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return -errno;
    if (rl.rlim_cur == RLIM_INFINITY || need <= 0 || rl.rlim_cur >= (rlim_t)need)
        return rl.rlim_cur == RLIM_INFINITY ? LONG_MAX : (long)rl.rlim_cur;
    rl.rlim_cur =
        (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= (rlim_t)need) ? (rlim_t)need : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
        return -errno;
    return (long)rl.rlim_cur;
}
