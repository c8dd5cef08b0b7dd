/* The coordinator under systemd (Type=notify, sc_sdnotify): READY once sc_coord_new returned
 * (the store replayed, the ROUTER and the control socket bound), the status line when it
 * changes, the watchdog from the loop, STOPPING at the end. */
#include "sc_coord_int.h"

#include "sc_error.h"
#include "sc_log.h"
#include "sc_time.h"

#include <stdio.h>

void sc_coord_sd_describe(const sc_coord_t *c, char *buf, size_t len)
{
    size_t alive = 0, events = sc_registry_count(c->reg);
    int n;

    for (size_t i = 0; i < c->n_members; i++)
        alive += c->members[i].alive;
    if (sc_coord_is_leader(c))
        n = snprintf(buf, len, "leader, term %lld", (long long)c->term);
    else /* until the election is built, the first member of --members leads */
        n = snprintf(buf, len, "follower of %s, term %lld", c->members[0].name, (long long)c->term);
    if (n < 0 || (size_t)n >= len)
        return;
    snprintf(buf + n, len - n, "%s%s; %zu event%s in flight; %zu/%zu members alive",
             c->in_grace ? ", starting" : "", c->o.policy.pause ? ", approvals paused" : "", events,
             events == 1 ? "" : "s", alive, c->n_members);
}

/* A notification that failed (sc_sdnotify keeps it): logged once per kind. */
static void s_log_failure(sc_coord_t *c)
{
    int rc = sc_sdnotify_new_error(c->o.sd);

    if (rc < 0)
        sc_log_warn("cannot notify systemd", "socket=%s rc=%s why=\"%s\"",
                    sc_sdnotify_socket(c->o.sd), sc_errname(rc), sc_strerror(rc));
}

void sc_coord_sd_starting(sc_sdnotify_t *sd)
{
    sc_sdnotify_status(sd, "starting: reading this VM's name from IMDS", sc_mono_ms());
}

void sc_coord_sd_ready(sc_coord_t *c)
{
    char line[SC_SDNOTIFY_STATUS_MAX + 1];

    if (!c->o.sd)
        return;
    sc_coord_sd_describe(c, line, sizeof(line));
    sc_sdnotify_ready(c->o.sd, line, sc_mono_ms());
    s_log_failure(c);
}

void sc_coord_sd_tick(sc_coord_t *c)
{
    char line[SC_SDNOTIFY_STATUS_MAX + 1];
    int64_t now = sc_mono_ms();

    if (!c->o.sd)
        return;
    sc_coord_sd_describe(c, line, sizeof(line));
    sc_sdnotify_status(c->o.sd, line, now);
    sc_sdnotify_tick(c->o.sd, now);
    s_log_failure(c);
}

void sc_coord_sd_stopping(sc_coord_t *c, int rc)
{
    sc_sdnotify_stopping(c->o.sd, rc < 0 ? "stopping on error" : "stopping");
    s_log_failure(c);
}
