/* imds-sim: command line, signals and the ticker. See tests/imds-sim/README.md. */
#include "sim.h"

#include "sc_log.h"
#include "sc_time.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static volatile sig_atomic_t s_stop;

/* One --vm-listen NAME=HOST:PORT: VM NAME's IMDS at the real paths on that address. */
typedef struct {
    char name[SIM_MAX_NAME]; /* the VM */
    char addr[64];           /* IPv4 address */
    int port;                /* port, 0 = any */
    sim_http_t *h;           /* its server once started */
} vm_listen_t;

static void s_on_signal(int sig)
{
    (void)sig;
    s_stop = 1;
}

static void s_usage(FILE *out)
{
    fputs("Usage: imds-sim --listen 127.0.0.1:PORT --vms N --fault-domains F [options]\n"
          "\n"
          "A local Azure Instance Metadata Service (Scheduled Events) for every VM of an\n"
          "availability set, with a simulated fabric. VM <prefix><i> is served under\n"
          "http://ADDR:PORT/<prefix><i>/metadata/scheduledevents (and /metadata/instance, with\n"
          "its /compute and /network); a query naming a parameter twice gets 400, as on Azure;\n"
          "the control API is under http://ADDR:PORT/control/. Prints \"listening on ADDR:PORT\".\n"
          "With --vm-listen, a VM's IMDS is also served on an address of its own at the real\n"
          "paths, as on 169.254.169.254, so that software written for Azure runs unchanged.\n"
          "Durations are in simulated seconds unless said otherwise.\n"
          "\n"
          "  --listen ADDR:PORT        IPv4 address and port; port 0 picks a free one (required)\n"
          "  --vm-listen NAME=HOST:PORT\n"
          "                            serve VM NAME's IMDS on HOST:PORT (IPv4; port 0 picks one)\n"
          "                            at /metadata/scheduledevents, /metadata/instance,\n"
          "                            /metadata/instance/compute and /metadata/instance/network,\n"
          "                            no VM in the URL; e.g. vm_0=169.254.169.254:80 inside that\n"
          "                            VM's network namespace. Repeatable (at most 256);\n"
          "                            prints \"vm-listen NAME HOST:PORT\" for each, before\n"
          "                            \"listening on\"\n"
          "  --vms N                   VMs in the set, 1..10000 (required)\n"
          "  --fault-domains F         fault domains, VM i in i mod F, 1..N (required)\n"
          "  --update-domains U        update domains, VM i in i mod U (default F)\n"
          "  --name-prefix P           VM names are P0..P{N-1} (default vm_)\n"
          "  --time-scale X            simulated time runs X times faster (default 1)\n"
          "  --timeline FILE           append every fact as one JSON object per line\n"
          "  --timeline-keep N         timeline entries kept for GET /control/timeline\n"
          "                            (default 100000)\n"
          "  --on-impact CMD           run CMD <start|end> <vm> <EventType> <EventId> when a VM's\n"
          "                            impact begins / ends (CMD split on spaces, no shell)\n"
          "  --seed S                  seed of every random choice (EventIds, vmIds; default 1)\n"
          "  --unknown-event-ok        answer 200, not 400, to a POST naming an unknown EventId\n"
          "  --first-call-delay S      a VM's first request (and first after idle) waits S\n"
          "  --idle-disable S          after S without a request a VM's service disables itself\n"
          "                            and DocumentIncarnation restarts from 1 (default 86400;\n"
          "                            0 = never)\n"
          "  --approval-delay S        an approved event starts S after the approval (default 0)\n"
          "  --complete-after S        an event disappears S after it started (default 600)\n"
          "  --unknown-impact S        impact length when DurationInSeconds is -1 (default 60)\n"
          "  --terminate-notice S      notice of a Terminate: a scale-in's, or an event's given\n"
          "                            no NoticeSeconds (default 300; Azure allows 300 to 900)\n"
          "  --own-events-only LIST    comma-separated VMs that see only their own events\n"
          "  --rate-limit R            requests per second per VM before 429 (default 5; 0 = off)\n"
          "  --fault-timeout SECS      real seconds a \"timeout\" fault holds a request before\n"
          "                            closing it (default 30)\n"
          "  --log-level L             debug, info, notice, warn, err (default notice)\n"
          "  --help                    this text\n",
          out);
}

/* Parses a number in [min, max] or exits naming the option. */
static double s_num(const char *opt, const char *s, double min, double max)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= min && v <= max)) {
        fprintf(stderr, "imds-sim: --%s: \"%s\" is not a number from %g to %g\n", opt, s, min, max);
        exit(2);
    }
    return v;
}

static int s_int(const char *opt, const char *s, long min, long max)
{
    double v = s_num(opt, s, (double)min, (double)max);

    if (v != (double)(long)v) {
        fprintf(stderr, "imds-sim: --%s: \"%s\" is not an integer\n", opt, s);
        exit(2);
    }
    return (int)v;
}

/* Parses NAME=HOST:PORT of --vm-listen into *vl, or exits 2 saying what is wrong. */
static void s_vm_listen_parse(const char *arg, vm_listen_t *vl)
{
    const char *eq = strchr(arg, '='), *colon = strrchr(arg, ':');
    struct in_addr in;

    if (!eq || eq == arg || !colon || colon < eq || colon == eq + 1) {
        fprintf(stderr,
                "imds-sim: --vm-listen: expected NAME=HOST:PORT (e.g. vm_0=169.254.169.254:80), "
                "got \"%s\"\n",
                arg);
        exit(2);
    }
    if ((size_t)(eq - arg) >= sizeof(vl->name)) {
        fprintf(stderr, "imds-sim: --vm-listen: VM name too long in \"%s\"\n", arg);
        exit(2);
    }
    memcpy(vl->name, arg, (size_t)(eq - arg));
    vl->name[eq - arg] = '\0';
    if ((size_t)(colon - eq - 1) >= sizeof(vl->addr)) {
        fprintf(stderr, "imds-sim: --vm-listen: address too long in \"%s\"\n", arg);
        exit(2);
    }
    memcpy(vl->addr, eq + 1, (size_t)(colon - eq - 1));
    vl->addr[colon - eq - 1] = '\0';
    if (inet_pton(AF_INET, vl->addr, &in) != 1) {
        fprintf(stderr, "imds-sim: --vm-listen: \"%s\" is not an IPv4 address (in \"%s\")\n",
                vl->addr, arg);
        exit(2);
    }
    vl->port = s_int("vm-listen", colon + 1, 0, 65535);
}

static void s_raise_nofile(void)
{
    struct rlimit rl;

    /* 1,000 VMs with keep-alive connections need more than the usual 1,024 descriptors. */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int main(int argc, char **argv)
{
    enum {
        O_LISTEN = 256,
        O_VM_LISTEN,
        O_VMS,
        O_FDS,
        O_UDS,
        O_PREFIX,
        O_SCALE,
        O_TIMELINE,
        O_KEEP,
        O_IMPACT,
        O_SEED,
        O_UNKNOWN_OK,
        O_FIRST_DELAY,
        O_IDLE,
        O_APPROVAL_DELAY,
        O_COMPLETE,
        O_UNKNOWN_IMPACT,
        O_TERMINATE_NOTICE,
        O_OWN,
        O_RATE,
        O_FAULT_TIMEOUT,
        O_LOG,
        O_HELP
    };
    static const struct option longopts[] = {
        {"listen", required_argument, NULL, O_LISTEN},
        {"vm-listen", required_argument, NULL, O_VM_LISTEN},
        {"vms", required_argument, NULL, O_VMS},
        {"fault-domains", required_argument, NULL, O_FDS},
        {"update-domains", required_argument, NULL, O_UDS},
        {"name-prefix", required_argument, NULL, O_PREFIX},
        {"time-scale", required_argument, NULL, O_SCALE},
        {"timeline", required_argument, NULL, O_TIMELINE},
        {"timeline-keep", required_argument, NULL, O_KEEP},
        {"on-impact", required_argument, NULL, O_IMPACT},
        {"seed", required_argument, NULL, O_SEED},
        {"unknown-event-ok", no_argument, NULL, O_UNKNOWN_OK},
        {"first-call-delay", required_argument, NULL, O_FIRST_DELAY},
        {"idle-disable", required_argument, NULL, O_IDLE},
        {"approval-delay", required_argument, NULL, O_APPROVAL_DELAY},
        {"complete-after", required_argument, NULL, O_COMPLETE},
        {"unknown-impact", required_argument, NULL, O_UNKNOWN_IMPACT},
        {"terminate-notice", required_argument, NULL, O_TERMINATE_NOTICE},
        {"own-events-only", required_argument, NULL, O_OWN},
        {"rate-limit", required_argument, NULL, O_RATE},
        {"fault-timeout", required_argument, NULL, O_FAULT_TIMEOUT},
        {"log-level", required_argument, NULL, O_LOG},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0}};
    sim_opts_t o = {.prefix = "vm_",
                    .time_scale = 1.0,
                    .timeline_keep = 100000,
                    .seed = 1,
                    .idle_disable_s = 86400,
                    .complete_after_s = 600,
                    .unknown_duration_s = 60,
                    .terminate_notice_s = 300,
                    .fault_timeout_s = 30,
                    .rate_limit = 5};
    sc_log_level_t level = SC_LOG_NOTICE;
    char addr[64] = "";
    static vm_listen_t vl[SIM_MAX_VM_LISTEN];
    int nvl = 0, port = -1, bound = 0, c, rc;
    const char *why = NULL;
    sim_fabric_t *f = NULL;
    sim_http_t *h = NULL;
    struct sigaction sa;

    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_LISTEN: {
            const char *colon = strrchr(optarg, ':');

            if (!colon || colon == optarg || (size_t)(colon - optarg) >= sizeof(addr)) {
                fprintf(stderr, "imds-sim: --listen: expected ADDR:PORT, got \"%s\"\n", optarg);
                return 2;
            }
            memcpy(addr, optarg, (size_t)(colon - optarg));
            addr[colon - optarg] = '\0';
            port = s_int("listen", colon + 1, 0, 65535);
            break;
        }
        case O_VM_LISTEN:
            if (nvl == SIM_MAX_VM_LISTEN) {
                fprintf(stderr, "imds-sim: --vm-listen: at most %d\n", SIM_MAX_VM_LISTEN);
                return 2;
            }
            s_vm_listen_parse(optarg, &vl[nvl++]);
            break;
        case O_VMS: o.vms = s_int("vms", optarg, 1, SIM_MAX_VMS); break;
        case O_FDS: o.fault_domains = s_int("fault-domains", optarg, 1, SIM_MAX_VMS); break;
        case O_UDS: o.update_domains = s_int("update-domains", optarg, 1, SIM_MAX_VMS); break;
        case O_PREFIX: o.prefix = optarg; break;
        case O_SCALE: o.time_scale = s_num("time-scale", optarg, 0.001, 100000); break;
        case O_TIMELINE: o.timeline_path = optarg; break;
        case O_KEEP: o.timeline_keep = (size_t)s_int("timeline-keep", optarg, 1, 10000000); break;
        case O_IMPACT: o.on_impact = optarg; break;
        case O_SEED: o.seed = (uint64_t)s_num("seed", optarg, 0, 9007199254740992.0); break;
        case O_UNKNOWN_OK: o.unknown_event_ok = true; break;
        case O_FIRST_DELAY:
            o.first_call_delay_s = s_num("first-call-delay", optarg, 0, 86400);
            break;
        case O_IDLE: o.idle_disable_s = s_num("idle-disable", optarg, 0, 1e9); break;
        case O_APPROVAL_DELAY:
            o.approval_delay_s = s_num("approval-delay", optarg, 0, SIM_MAX_NOTICE_S);
            break;
        case O_COMPLETE:
            o.complete_after_s = s_num("complete-after", optarg, 0, SIM_MAX_NOTICE_S);
            break;
        case O_UNKNOWN_IMPACT:
            o.unknown_duration_s = s_num("unknown-impact", optarg, 0, SIM_MAX_DURATION_S);
            break;
        case O_TERMINATE_NOTICE:
            o.terminate_notice_s = s_num("terminate-notice", optarg, 0, SIM_MAX_NOTICE_S);
            break;
        case O_OWN: o.own_events = optarg; break;
        case O_RATE: o.rate_limit = s_int("rate-limit", optarg, 0, 1000); break;
        case O_FAULT_TIMEOUT: o.fault_timeout_s = s_num("fault-timeout", optarg, 0, 3600); break;
        case O_LOG:
            if (sc_log_level_parse(optarg, &level) < 0) {
                fprintf(stderr, "imds-sim: --log-level: unknown level \"%s\"\n", optarg);
                return 2;
            }
            break;
        case O_HELP:
        case 'h': s_usage(stdout); return 0;
        default: s_usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "imds-sim: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    if (port < 0 || !o.vms || !o.fault_domains) {
        fprintf(stderr, "imds-sim: --listen, --vms and --fault-domains are required "
                        "(see --help)\n");
        return 2;
    }
    if (o.fault_domains > o.vms) {
        fprintf(stderr, "imds-sim: --fault-domains (%d) is larger than --vms (%d)\n",
                o.fault_domains, o.vms);
        return 2;
    }
    if (!o.update_domains)
        o.update_domains = o.fault_domains;
    if (!*o.prefix || strlen(o.prefix) > 32 || strpbrk(o.prefix, "/?#%& \t")) {
        fprintf(stderr, "imds-sim: --name-prefix must be 1-32 characters with no / ? # %% & or "
                        "spaces\n");
        return 2;
    }
    sc_log_init("imds-sim", level);
    s_raise_nofile();

    if ((rc = sim_fabric_new(&o, &f, &why)) < 0) {
        fprintf(stderr, "imds-sim: %s\n", why);
        return 1;
    }
    for (int i = 0; i < nvl; i++)
        if (!sim_fabric_has_vm(f, vl[i].name)) {
            fprintf(stderr, "imds-sim: --vm-listen: no VM named \"%s\" in this set (%s0..%s%d)\n",
                    vl[i].name, o.prefix, o.prefix, o.vms - 1);
            sim_fabric_destroy(&f);
            return 2;
        }
    if ((rc = sim_http_new(f, addr, port, NULL, &h, &bound)) < 0) {
        fprintf(stderr, "imds-sim: cannot listen on %s:%d (%s)\n", addr, port,
                rc == -EINVAL ? "not an IPv4 address" : "address in use or not available");
        sim_fabric_destroy(&f);
        return 1;
    }
    for (int i = 0; i < nvl; i++) {
        int vbound = 0;

        if (sim_http_new(f, vl[i].addr, vl[i].port, vl[i].name, &vl[i].h, &vbound) < 0) {
            fprintf(stderr,
                    "imds-sim: --vm-listen: cannot listen on %s:%d for %s (address in use or "
                    "not an address of this network namespace)\n",
                    vl[i].addr, vl[i].port, vl[i].name);
            while (i-- > 0)
                sim_http_destroy(&vl[i].h);
            sim_http_destroy(&h);
            sim_fabric_destroy(&f);
            return 1;
        }
        printf("vm-listen %s %s:%d\n", vl[i].name, vl[i].addr, vbound);
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = s_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    printf("listening on %s:%d\n", addr, bound);
    fflush(stdout);
    sc_log_notice("started", "listen=%s:%d vms=%d fault_domains=%d time_scale=%g", addr, bound,
                  o.vms, o.fault_domains, o.time_scale);
    while (!s_stop) {
        sim_fabric_tick(f);
        sim_http_tick(h);
        sc_sleep_ms(50);
    }
    sc_log_notice("stopping", NULL);
    for (int i = 0; i < nvl; i++)
        sim_http_destroy(&vl[i].h);
    sim_http_destroy(&h);
    sim_fabric_destroy(&f);
    return 0;
}
