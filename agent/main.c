/* schedcoord-agent: flags, signals, identity, then the agent's loop (see sc_agent.h). */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "sc_agent.h"
#include "sc_agent_config.h"
#include "sc_error.h"
#include "sc_identity.h"
#include "sc_log.h"
#include "sc_sdnotify.h"
#include "sc_time.h"

static volatile sig_atomic_t s_stop;

/* sc_identity_fetch's retries, logged once per new kind of failure. */
static void s_identity_retry(void *arg, int rc, int64_t retry_ms, const char *why)
{
    (void)arg;
    sc_log_warn("IMDS compute metadata not available yet, retrying",
                "rc=%s retry_ms=%" PRId64 " why=\"%s\"", sc_errname(rc), retry_ms, sc_log_q(why));
}

static void s_on_signal(int sig)
{
    (void)sig;
    s_stop = 1;
}

int main(int argc, char **argv)
{
    sc_agent_settings_t s = {0};
    sc_agent_opts_t opts = {0};
    sc_agent_t *agent = NULL;
    sc_sdnotify_t *sd = NULL;
    sc_compute_t compute;
    sc_log_level_t level = SC_LOG_INFO;
    struct sigaction sa;
    char err[512] = "";
    int rc, status = 2;

    /* One malloc arena: the agent is single-threaded apart from libzmq's I/O thread, and
     * every extra arena costs resident memory. */
    mallopt(M_ARENA_MAX, 1);
    rc = sc_agent_settings_parse(&s, argc, argv, stdout, err, sizeof(err));
    if (rc == 1) {
        status = 0;
        goto out;
    }
    if (rc != 0) {
        fprintf(stderr, "schedcoord-agent: %s\n", err[0] ? err : sc_strerror(rc));
        goto out;
    }
    sc_log_level_parse(s.log_level, &level);
    sc_log_init("schedcoord-agent", level);
    /* before any thread (it clears NOTIFY_SOCKET from the environment) */
    if ((rc = sc_sdnotify_new_from_env(true, &sd, err, sizeof(err))) < 0)
        sc_log_warn("not telling systemd how we are (Type=notify needs it)", "rc=%s why=\"%s\"",
                    sc_errname(rc), sc_log_q(err));
    sc_sdnotify_status(sd, "starting: reading this VM's name from IMDS", sc_mono_ms());

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = s_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);

    rc = sc_identity_fetch(s.imds_url, (long)(s.imds_timeout * 1000), &s_stop, s_identity_retry,
                           NULL, &compute);
    if (rc != 0) {
        if (rc != -EINTR) {
            fprintf(stderr, "schedcoord-agent: --imds-url: %s\n", sc_strerror(rc));
            goto out;
        }
        sc_log_notice("stopped before IMDS answered", NULL);
        status = 0;
        goto out;
    }
    opts.settings = &s;
    opts.stop = &s_stop;
    opts.sdnotify = sd;
    opts.name = s.name ? s.name : compute.name;
    opts.fault_domain = compute.fault_domain;
    opts.update_domain = compute.update_domain;
    if (!sc_msg_name_valid(opts.name)) {
        sc_log_err("the compute metadata name is not a valid member name: use --name",
                   "name=\"%s\"", sc_log_q(compute.name));
        goto out;
    }
    rc = sc_agent_new(&opts, &agent, err, sizeof(err));
    if (rc != 0) {
        sc_log_err("cannot start", "rc=%s why=\"%s\"", sc_errname(rc), sc_log_q(err));
        status = rc == SC_E_CONFIG ? 2 : 1;
        goto out;
    }
    rc = sc_agent_run(agent, &s_stop);
    if (rc)
        sc_log_err("fatal error", "rc=%s why=\"%s\"", sc_errname(rc), sc_strerror(rc));
    else {
        sc_agent_stats_t st;
        sc_agent_get_stats(agent, &st);
        sc_log_notice("stopping",
                      "polls=%llu poll_errors=%llu bad_documents=%llu malformed_events=%llu "
                      "rejected_msgs=%llu stale_orders=%llu late_orders=%llu hooks_started=%llu "
                      "send_dropped=%llu",
                      (unsigned long long)st.polls, (unsigned long long)st.poll_errors,
                      (unsigned long long)st.bad_documents, (unsigned long long)st.malformed_events,
                      (unsigned long long)st.rejected_msgs, (unsigned long long)st.stale_orders,
                      (unsigned long long)st.late_orders, (unsigned long long)st.hooks_started,
                      (unsigned long long)st.send_dropped);
    }
    status = rc ? 1 : 0;
out:
    sc_agent_destroy(&agent);
    sc_sdnotify_destroy(&sd);
    sc_agent_settings_free(&s);
    return status;
}
