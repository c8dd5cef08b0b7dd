/* The coordinator daemon's command line: settings, signals, sc_coord_main. */
#include "sc_coord_int.h"

#include "sc_config.h"
#include "sc_error.h"
#include "sc_identity.h"
#include "sc_log.h"
#include "sc_notify.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct s_settings {
    char *name;             /* --name */
    char *imds_url;         /* --imds-url */
    char *members;          /* --members */
    char *state_dir;        /* --state-dir */
    bool insecure;          /* --insecure */
    char *key;              /* --key */
    char *keys;             /* --keys */
    double dead_after;      /* --dead-after */
    double imds_stale;      /* --imds-stale */
    double tombstone;       /* --tombstone-s */
    double resend;          /* --resend */
    double start_grace;     /* --start-grace */
    double stall;           /* --stall-s */
    long voters;            /* --voters */
    long election_ms;       /* --election-ms */
    long heartbeat_ms;      /* --heartbeat-ms */
    long snapshot_every;    /* --snapshot-every */
    long log_keep;          /* --log-keep */
    long snapshot_chunk;    /* --snapshot-chunk */
    char *log_level;        /* --log-level */
    char *notify;           /* --notify */
    sc_policy_cfg_t policy; /* policy keys */
} s_settings_t;

static const sc_cfg_key_t s_keys[] = {
    {"name", SC_CFG_STRING, offsetof(s_settings_t, name), NULL,
     "our member name (its endpoint in --members is bound; default: name of the compute "
     "metadata)",
     0, 0, false},
    {"imds-url", SC_CFG_STRING, offsetof(s_settings_t, imds_url), "http://169.254.169.254",
     "base URL of our own VM's IMDS (approvals are POSTed there)", 0, 0, false},
    {"members", SC_CFG_STRING, offsetof(s_settings_t, members), NULL,
     "every member: NAME=HOST:PORT,... (the same list on every VM)", 0, 0, true},
    {"state-dir", SC_CFG_STRING, offsetof(s_settings_t, state_dir), NULL,
     "directory of coordinator.db and control.sock", 0, 0, true},
    {"insecure", SC_CFG_BOOL, offsetof(s_settings_t, insecure), "false",
     "plain-text ZeroMQ without authentication (single-machine demo only)", 0, 0, false},
    {"key", SC_CFG_STRING, offsetof(s_settings_t, key), NULL,
     "our CURVE key pair file (schedcoordctl keygen)", 0, 0, false},
    {"keys", SC_CFG_STRING, offsetof(s_settings_t, keys), NULL,
     "keyring: one \"NAME PUBLIC\" line per member", 0, 0, false},
    {"dead-after", SC_CFG_SECONDS, offsetof(s_settings_t, dead_after), "15",
     "a member is dead after this long without a message (three of the agents' "
     "--heartbeat-interval)",
     1, 3600, false},
    {"imds-stale", SC_CFG_SECONDS, offsetof(s_settings_t, imds_stale), "15",
     "a live member whose IMDS has been failing for this long no longer keeps events alive", 1,
     3600, false},
    {"tombstone-s", SC_CFG_SECONDS, offsetof(s_settings_t, tombstone), "604800",
     "reports of an event that ended are ignored this long after its end (7 days: the longest "
     "notice Azure gives), so that an old copy cannot bring it back",
     60, 31536000, false},
    {"resend", SC_CFG_SECONDS, offsetof(s_settings_t, resend), "2",
     "unacknowledged orders are sent again after this long", 1, 3600, false},
    {"start-grace", SC_CFG_SECONDS, offsetof(s_settings_t, start_grace), "5",
     "after a start, no order, approval or alert until every member reported or this long "
     "passed",
     0, 3600, false},
    {"stall-s", SC_CFG_SECONDS, offsetof(s_settings_t, stall), "2",
     "a loop stalled this long (a Freeze, SIGSTOP) or a wall clock jump of as much: no order, "
     "approval or alert until every member reported again (as after a start)",
     1, 3600, false},
    {"voters", SC_CFG_INT, offsetof(s_settings_t, voters), "0",
     "voters of the election: 1, 3, 5 or 7, chosen from --members over the fault domains its "
     "/FD suffixes give (0: 3, or 5 when the members span 5 fault domains); the same on every "
     "member and agent",
     0, 7, false},
    {"election-ms", SC_CFG_INT, offsetof(s_settings_t, election_ms), "1000",
     "election timeout T: a voter that hears no leader for a random time in [T, 2T) campaigns; "
     "a leader that hears no majority for T steps down",
     200, 60000, false},
    {"heartbeat-ms", SC_CFG_INT, offsetof(s_settings_t, heartbeat_ms), "100",
     "the leader's heartbeat to the voters (at most election-ms / 2)", 10, 30000, false},
    {"snapshot-every", SC_CFG_INT, offsetof(s_settings_t, snapshot_every), "1000",
     "a snapshot of the state every this many log entries (a restart replays the log after the "
     "last one)",
     1, 100000000, false},
    {"log-keep", SC_CFG_INT, offsetof(s_settings_t, log_keep), "5000",
     "after a snapshot, the decision log keeps this many entries behind it (history shows them; "
     "a follower further behind gets the leader's snapshot)",
     0, 100000000, false},
    {"snapshot-chunk", SC_CFG_INT, offsetof(s_settings_t, snapshot_chunk), "262144",
     "bytes of the leader's snapshot sent to a follower in one message", 1024, 393216, false},
    {"log-level", SC_CFG_STRING, offsetof(s_settings_t, log_level), "info",
     "debug, info, notice, warn, err", 0, 0, false},
    {"notify", SC_CFG_STRING, offsetof(s_settings_t, notify), NULL,
     "tell people, from the leader: FORMAT:URL[,FORMAT:URL...] (FORMAT json, slack or teams; "
     "at most 8; a comma in a URL is %2C)",
     0, 0, false},
};

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

int sc_coord_main(int argc, char **argv)
{
    size_t nbase = sizeof(s_keys) / sizeof(s_keys[0]), n = nbase + sc_policy_n_keys;
    sc_cfg_key_t *table = calloc(n, sizeof(*table));
    s_settings_t s = {0};
    sc_coord_opts_t o;
    sc_coord_t *c = NULL;
    sc_sdnotify_t *sd = NULL;
    sc_compute_t compute = {0};
    sc_log_level_t lvl;
    char err[512] = "";
    int rc, status = 1;

    if (!table)
        return 1;
    memcpy(table, s_keys, sizeof(s_keys));
    sc_policy_keys_rebase(offsetof(s_settings_t, policy), table + nbase);
    rc = sc_config_parse_section(table, n, &s, argc, argv, stdout,
                                 "schedcoord-coordinator [--name NAME] --imds-url URL --members "
                                 "NAME=HOST:PORT,... --state-dir DIR [policy flags] [--insecure | "
                                 "--key FILE --keys FILE] [--config FILE: keys before any section "
                                 "and under [coordinator]]",
                                 "coordinator", err, sizeof(err));
    if (rc == 1) {
        status = 0;
        goto out;
    }
    if (rc < 0) {
        fprintf(stderr, "schedcoord-coordinator: %s\n", err);
        status = 2;
        goto out;
    }
    if (sc_log_level_parse(s.log_level, &lvl) < 0) {
        fprintf(stderr,
                "schedcoord-coordinator: --log-level: \"%s\" is not one of debug, info, "
                "notice, warn, err\n",
                s.log_level);
        status = 2;
        goto out;
    }
    if (sc_notify_spec_check(s.notify, err, sizeof(err)) < 0) {
        fprintf(stderr, "schedcoord-coordinator: --notify: %s\n", err);
        status = 2;
        goto out;
    }
    sc_log_init("schedcoord-coordinator", lvl);
    /* before any thread (it clears NOTIFY_SOCKET from the environment) */
    if ((rc = sc_sdnotify_new_from_env(true, &sd, err, sizeof(err))) < 0)
        sc_log_warn("not telling systemd how we are (Type=notify needs it)", "rc=%s why=\"%s\"",
                    sc_errname(rc), sc_log_q(err));
    sc_coord_opts_init(&o);
    o.sd = sd;
    if (sc_policy_from_cfg(&s.policy, &o.policy, err, sizeof(err)) < 0) {
        fprintf(stderr, "schedcoord-coordinator: %s\n", err);
        status = 2;
        goto out;
    }
    signal(SIGINT, s_on_signal);
    signal(SIGTERM, s_on_signal);
    signal(SIGPIPE, SIG_IGN);
    if (!s.name) {
        /* as the agent: the VM's name in its compute metadata, so that one config file
         * serves every VM of the set */
        sc_coord_sd_starting(sd);
        if ((rc = sc_identity_fetch(s.imds_url, 5000, &s_stop, s_identity_retry, NULL, &compute)) <
            0) {
            if (rc == -EINTR) {
                sc_log_notice("stopped before IMDS answered", NULL);
                status = 0;
            } else {
                fprintf(stderr, "schedcoord-coordinator: --imds-url: %s\n", sc_strerror(rc));
                status = 2;
            }
            goto out;
        }
        if (!sc_msg_name_valid(compute.name)) {
            sc_log_err("the compute metadata name is not a valid member name: use --name",
                       "name=\"%s\"", sc_log_q(compute.name));
            status = 2;
            goto out;
        }
    }
    o.name = s.name ? s.name : compute.name;
    o.imds_url = s.imds_url;
    o.members = s.members;
    o.state_dir = s.state_dir;
    o.insecure = s.insecure;
    o.key_file = s.key;
    o.keys_file = s.keys;
    o.dead_after_ms = (int64_t)(s.dead_after * 1000);
    o.imds_stale_ms = (int64_t)(s.imds_stale * 1000);
    o.tombstone_ms = (int64_t)(s.tombstone * 1000);
    o.resend_ms = (int64_t)(s.resend * 1000);
    o.start_grace_ms = (int64_t)(s.start_grace * 1000);
    o.stall_ms = (int64_t)(s.stall * 1000);
    o.voters = (int)s.voters;
    o.election_ms = s.election_ms;
    o.heartbeat_ms = s.heartbeat_ms;
    o.snapshot_every = s.snapshot_every;
    o.log_keep = s.log_keep;
    o.snapshot_chunk = s.snapshot_chunk;
    o.notify = s.notify;
    rc = sc_coord_new(&o, &c, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "schedcoord-coordinator: %s\n", err[0] ? err : sc_strerror(rc));
        status = rc == SC_E_CONFIG ? 2 : 1;
        goto out;
    }
    sc_log_notice("started", "name=%s term=%lld members=%zu endpoint=%s", c->name,
                  (long long)c->term, c->n_members, c->members[c->self].endpoint);
    rc = sc_coord_run(c, &s_stop);
    if (rc < 0)
        sc_log_err("stopping on error", "rc=%s why=\"%s\"", sc_errname(rc), sc_strerror(rc));
    else
        sc_log_notice("stopped", NULL);
    status = rc < 0 ? 1 : 0;
out:
    sc_coord_destroy(&c);
    sc_sdnotify_destroy(&sd);
    sc_config_free(table, n, &s);
    free(table);
    return status;
}
