/* sc_identity: this VM's compute metadata, waited for; "{name}" in paths. */
#include "sc_identity.h"

#include <errno.h>
#include <string.h>

#include "sc_backoff.h"
#include "sc_error.h"
#include "sc_time.h"

int sc_identity_fetch(const char *base_url, long timeout_ms, volatile sig_atomic_t *stop,
                      sc_identity_retry_fn *on_retry, void *arg, sc_compute_t *ret_compute)
{
    sc_imds_opts_t o;
    sc_imds_t *imds = NULL;
    sc_backoff_t b;
    int last = 1;
    int rc;

    sc_imds_opts_init(&o);
    o.base_url = base_url;
    o.total_timeout_ms = timeout_ms;
    o.abort = stop; /* a request in progress gives up too */
    if ((rc = sc_imds_new(&o, &imds)) != 0)
        return rc;
    sc_backoff_init(&b, 500, 30000);
    rc = -EINTR;
    while (!(stop && *stop)) {
        sc_imds_status_t st;
        sc_compute_t c;
        rc = sc_imds_get_compute(imds, &c, &st);
        if (rc == 0) {
            *ret_compute = c;
            break;
        }
        if (rc == -EINTR)
            break; /* stopped during the request */
        int64_t delay = sc_backoff_next(&b, st.retry_after_ms);
        if (rc != last && on_retry)
            on_retry(arg, rc, delay, st.message);
        last = rc;
        rc = -EINTR;
        /* in slices: a stop (SIGTERM from systemctl stop) is honoured within 100 ms */
        for (int64_t end = sc_mono_ms() + delay; !(stop && *stop) && sc_mono_ms() < end;)
            sc_sleep_ms(end - sc_mono_ms() < 100 ? end - sc_mono_ms() : 100);
    }
    sc_imds_destroy(&imds);
    return rc;
}

int sc_identity_expand(const char *path, const char *name, char *out, size_t outlen)
{
    static const char tok[] = "{name}";
    size_t n = 0, nl = strlen(name);

    if (!outlen)
        return -ENAMETOOLONG;
    for (const char *p = path; *p;) {
        if (strncmp(p, tok, sizeof(tok) - 1) == 0) {
            if (n + nl >= outlen)
                return -ENAMETOOLONG;
            memcpy(out + n, name, nl);
            n += nl;
            p += sizeof(tok) - 1;
        } else {
            if (n + 1 >= outlen)
                return -ENAMETOOLONG;
            out[n++] = *p++;
        }
    }
    out[n] = '\0';
    return 0;
}
