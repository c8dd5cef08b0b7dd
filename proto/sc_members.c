/* sc_members: the member list and its digest (see sc_members.h). */
#include "sc_members.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_error.h"

static bool s_host_valid(const char *h, size_t len)
{
    if (len == 0 || len > 253)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = h[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-'))
            return false;
    }
    return true;
}

int sc_members_parse(const char *text, sc_member_spec_t **ret_members, size_t *ret_n, char *err,
                     size_t errlen)
{
    sc_member_spec_t *v = NULL;
    size_t n = 0;
    const char *p = text;

    if (!text || !*text)
        return sc_errf(err, errlen, SC_E_CONFIG, "--members: %sempty (expected NAME=HOST:PORT,...)",
                       "");
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        const char *colon = NULL, *slash;
        char port_s[8];
        char *pe;
        long port;
        sc_member_spec_t *m;

        for (const char *q = p; q < p + len; q++)
            if (*q == ':')
                colon = q;
        if (!eq || !colon || colon < eq) {
            snprintf(err, errlen, "--members: entry %zu \"%.*s\" is not NAME=HOST:PORT", n + 1,
                     (int)(len > 200 ? 200 : len), p);
            goto fail;
        }
        if (n >= SC_MEMBERS_MAX) {
            snprintf(err, errlen, "--members: more than %d entries", SC_MEMBERS_MAX);
            goto fail;
        }
        m = realloc(v, (n + 1) * sizeof(*v));
        if (!m) {
            free(v);
            return -ENOMEM;
        }
        v = m;
        m = &v[n];
        memset(m, 0, sizeof(*m));
        if ((size_t)(eq - p) > SC_NAME_MAX || eq == p) {
            snprintf(err, errlen, "--members: entry %zu: bad member name (1..%d characters)", n + 1,
                     SC_NAME_MAX);
            goto fail;
        }
        memcpy(m->name, p, (size_t)(eq - p));
        if (!sc_msg_name_valid(m->name)) {
            snprintf(err, errlen,
                     "--members: entry %zu: \"%s\" is not a member name (expected "
                     "[A-Za-z0-9._-])",
                     n + 1, m->name);
            goto fail;
        }
        for (size_t i = 0; i < n; i++)
            if (strcmp(v[i].name, m->name) == 0) {
                snprintf(err, errlen, "--members: \"%s\" is listed twice", m->name);
                goto fail;
            }
        if (!s_host_valid(eq + 1, (size_t)(colon - eq - 1))) {
            snprintf(err, errlen, "--members: entry %zu (%s): bad host (expected a name or IPv4)",
                     n + 1, m->name);
            goto fail;
        }
        len -= (size_t)(colon + 1 - p);
        m->fault_domain = -1;
        if ((slash = memchr(colon + 1, '/', len))) { /* NAME=HOST:PORT/FD */
            char fd_s[8];
            size_t fl = len - (size_t)(slash + 1 - (colon + 1));
            long fd = -1;
            if (fl > 0 && fl < sizeof(fd_s)) {
                memcpy(fd_s, slash + 1, fl);
                fd_s[fl] = '\0';
                errno = 0;
                if (fd_s[0] >= '0' && fd_s[0] <= '9') { /* digits only: no sign, no space */
                    fd = strtol(fd_s, &pe, 10);
                    if (errno || *pe)
                        fd = -1;
                }
            }
            if (fd < 0 || fd > SC_MSG_DOMAIN_MAX) {
                snprintf(err, errlen,
                         "--members: entry %zu (%s): fault domain \"%.*s\" is not 0..%d "
                         "(NAME=HOST:PORT/FD)",
                         n + 1, m->name, (int)(fl > 16 ? 16 : fl), slash + 1, SC_MSG_DOMAIN_MAX);
                goto fail;
            }
            m->fault_domain = (int)fd;
            len = (size_t)(slash - (colon + 1));
        }
        if (len == 0 || len >= sizeof(port_s)) {
            snprintf(err, errlen, "--members: entry %zu (%s): bad port (expected 1..65535)", n + 1,
                     m->name);
            goto fail;
        }
        memcpy(port_s, colon + 1, len);
        port_s[len] = '\0';
        errno = 0;
        port = strtol(port_s, &pe, 10);
        if (errno || *pe || port < 1 || port > 65535 || port_s[0] < '0' || port_s[0] > '9') {
            snprintf(err, errlen, "--members: entry %zu (%s): port \"%s\" is not 1..65535", n + 1,
                     m->name, port_s);
            goto fail;
        }
        snprintf(m->endpoint, sizeof(m->endpoint), "tcp://%.*s:%ld", (int)(colon - eq - 1), eq + 1,
                 port);
        n++;
        p = end ? end + 1 : p + strlen(p);
        if (end && !*p) {
            snprintf(err, errlen, "--members: trailing ',' (expected NAME=HOST:PORT,...)");
            goto fail;
        }
    }
    *ret_members = v;
    *ret_n = n;
    return 0;
fail:
    free(v);
    return SC_E_CONFIG;
}

static uint64_t s_fnv(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

void sc_members_digest(const sc_member_spec_t *members, size_t n, size_t voters,
                       char out[SC_MEMBERS_DIGEST_LEN + 1])
{
    uint64_t h = 14695981039346656037ULL;

    for (size_t i = 0; members && i < n; i++) {
        h = s_fnv(h, members[i].name);
        h = s_fnv(h, " ");
        h = s_fnv(h, members[i].endpoint);
        if (members[i].fault_domain >= 0) { /* only when given: older lists keep their digest */
            char fd[16];
            snprintf(fd, sizeof(fd), "/%d", members[i].fault_domain);
            h = s_fnv(h, fd);
        }
        h = s_fnv(h, "\n");
    }
    if (voters) { /* --voters chose another count than the list's default */
        char line[32];
        snprintf(line, sizeof(line), "voters %zu\n", voters);
        h = s_fnv(h, line);
    }
    snprintf(out, SC_MEMBERS_DIGEST_LEN + 1, "%016" PRIx64, h);
}
