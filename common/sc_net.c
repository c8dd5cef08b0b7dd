#include "sc_net.h"

#include <arpa/inet.h>
#include <string.h>

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
