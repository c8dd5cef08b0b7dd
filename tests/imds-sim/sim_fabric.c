/* sim_fabric: the simulated fabric of one availability set.
 *
 * Life of an event (IMDS.md, "Life of an event"):
 *
 *                approve (POST, + --approval-delay) or NotBefore passes
 *   ┌▶ Scheduled ───────────────────────────────────────────────────▶ Started ──▶ Completed
 *   │    │  │                                                           ▲  (removed from the
 *   └────┘  └──▶ Cancelled (DELETE /control/events/<id>; removed)       │    documents after
 *   PATCH /control/events/<id>                host failure (Status: Started, Reboot)
 *   (Resources, EventType, Duration, NotBefore)                               --complete-after)
 *
 * On start every VM in Resources is impacted for DurationInSeconds (simulated; -1 means
 * --unknown-impact, 0 means an impact that begins and ends at once). During a Reboot,
 * Redeploy, Preempt or Terminate impact that VM's IMDS closes every connection unanswered;
 * Preempt and Terminate delete the VM, whose IMDS then never answers again, unless
 * POST /control/vms/<vm>/recreate brings a new VM of that name, or POST /control/vms adds
 * one. The set grows (POST /control/vms) and shrinks (DELETE /control/vms/<vm>: a Terminate
 * with --terminate-notice); POST /control/vms/<vm>/reimage gives a VM a new vmId and runs
 * --on-impact start, reimage, end.
 *
 * Every VM sees every active event of its placement group (an event naming one of its VMs),
 * except the --own-events-only VMs which see only the events naming them. A VM's
 * DocumentIncarnation grows by one whenever an event it sees appears, changes status, is changed
 * (PATCH) or disappears, and at no other time; it starts again from 1 when the service is
 * re-enabled after --idle-disable, when the VM is re-created or added again after a Preempt or
 * Terminate deleted it, and when it is reimaged.
 *
 * One mutex guards everything here; the HTTP thread and the ticker both take it. */
#include "sim.h"

#include "sc_log.h"
#include "sc_time.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- tables */

typedef enum { EV_FREEZE, EV_REBOOT, EV_REDEPLOY, EV_PREEMPT, EV_TERMINATE, EV_TYPE_MAX } ev_type_t;

static const char *const s_type_name[EV_TYPE_MAX] = {"Freeze", "Reboot", "Redeploy", "Preempt",
                                                     "Terminate"};
/* Minimum notice by type (IMDS.md), simulated seconds; a Terminate's is --terminate-notice. */
static const int s_default_notice[EV_TYPE_MAX] = {900, 900, 600, 30, 300};
/* DurationInSeconds shown when the event gives none. */
static const int s_default_duration[EV_TYPE_MAX] = {5, -1, -1, -1, -1};
/* Whether the VM's IMDS stops answering during the impact. */
static const bool s_type_blocks[EV_TYPE_MAX] = {false, true, true, true, true};
/* Whether the impact deletes the VM: its IMDS never answers again. */
static const bool s_type_deletes[EV_TYPE_MAX] = {false, false, false, true, true};
static const char *const s_default_desc[EV_TYPE_MAX] = {
    "Virtual machine is being paused because of a memory-preserving Live Migration operation.",
    "Virtual machine is going to be restarted as part of planned maintenance.",
    "Virtual machine is going to be redeployed to another host.",
    "Spot virtual machine is being evicted.",
    "Virtual machine is being deleted.",
};

typedef enum { ST_SCHEDULED, ST_STARTED, ST_COMPLETED, ST_CANCELLED, ST_MAX } ev_status_t;
static const char *const s_status_name[ST_MAX] = {"Scheduled", "Started", "Completed", "Cancelled"};

/* Scheduled Events api-versions and what each added (IMDS.md). */
enum { V_2017_03, V_2017_08, V_2017_11, V_2019_01, V_2019_04, V_2019_08, V_2020_07, V_MAX };
static const char *const s_versions[V_MAX] = {"2017-03-01", "2017-08-01", "2017-11-01",
                                              "2019-01-01", "2019-04-01", "2019-08-01",
                                              "2020-07-01"};
/* The first version that knows each EventType: older clients are not shown it. */
static const int s_type_min_version[EV_TYPE_MAX] = {V_2017_03, V_2017_03, V_2017_03, V_2017_11,
                                                    V_2019_01};
/* Instance metadata api-versions accepted for /metadata/instance/compute. */
static const char *const s_compute_versions[] = {
    "2017-03-01", "2017-04-02", "2017-08-01", "2017-12-01", "2018-02-01", "2018-04-02",
    "2018-10-01", "2019-02-01", "2019-03-11", "2019-04-30", "2019-06-01", "2019-06-04",
    "2019-08-01", "2019-08-15", "2019-11-01", "2020-06-01", "2020-07-15", "2020-09-01",
    "2020-10-01", "2020-12-01", "2021-01-01", "2021-02-01", "2021-03-01", "2021-05-01",
    "2021-08-01", "2021-10-01", "2021-11-01", "2021-11-15", "2021-12-13", "2023-07-01"};

typedef enum {
    FAULT_NONE,
    FAULT_STATUS,
    FAULT_TIMEOUT,
    FAULT_GARBAGE,
    FAULT_EMPTY,
    FAULT_RESET,
    FAULT_BAD_EVENT, /* no failed request: the next documents carry one malformed event more */
    FAULT_MAX
} fault_t;
static const char *const s_fault_name[FAULT_MAX] = {"none",  "status", "timeout",  "garbage",
                                                    "empty", "reset",  "bad_event"};

/* What is wrong with the extra event of a "bad_event" fault: one field IMDS.md requires of
 * every event is missing or of the wrong type. */
typedef enum {
    BAD_NO_EVENT_ID,
    BAD_NO_EVENT_TYPE,
    BAD_NO_EVENT_STATUS,
    BAD_RESOURCES_STRING,
    BAD_NOT_BEFORE_NUMBER,
    BAD_MAX
} bad_kind_t;
static const char *const s_bad_name[BAD_MAX] = {"EventId missing", "EventType missing",
                                                "EventStatus missing", "Resources a string",
                                                "NotBefore a number"};

/* ---------------------------------------------------------------- state */

#define SIM_HOOK_QUEUE 16

/* The phases --on-impact is run with: an impact's start and end, and between a reimage's
 * start and end the wipe of the VM's disk (POST /control/vms/<vm>/reimage). */
typedef enum { HOOK_START, HOOK_REIMAGE, HOOK_END, HOOK_MAX } hook_phase_t;
static const char *const s_hook_phase[HOOK_MAX] = {"start", "reimage", "end"};

typedef struct {
    hook_phase_t phase; /* what begins or ends */
    const char *type;   /* EventType (static), or "Reimage" */
    char id[37];        /* EventId, or the reimaged VM's new vmId */
} hook_job_t;

typedef struct {
    char name[SIM_MAX_NAME];          /* e.g. vm_3 */
    char vmid[37];                    /* GUID for instance/compute */
    int fd;                           /* fault domain */
    int ud;                           /* update domain */
    int pg;                           /* placement group: index into f->pgs */
    bool spot;                        /* priority Spot (else Regular) */
    char zone[SIM_MAX_ZONE];          /* availability zone, "" when none */
    bool own_only;                    /* sees only the events naming it */
    int64_t incarnation;              /* DocumentIncarnation */
    bool enabled;                     /* the service answered a first request and is not idle */
    int64_t last_req_ms;              /* monotonic ms of the last request */
    int64_t *recent;                  /* the last rate_limit accepted requests (monotonic ms) */
    int recent_pos;                   /* next slot in recent */
    int impacts;                      /* blocking impacts in progress */
    bool deleted;                     /* a Preempt or Terminate impact began: gone for good */
    fault_t fault;                    /* injected fault */
    int fault_status;                 /* HTTP status for FAULT_STATUS */
    int fault_count;                  /* requests left to fail */
    pid_t hook_pid;                   /* running --on-impact child or 0 */
    hook_job_t hooks[SIM_HOOK_QUEUE]; /* waiting --on-impact runs, FIFO */
    int hook_head, hook_len;          /* queue position and length */
    uint64_t requests;                /* IMDS requests seen */
} sim_vm_t;

typedef struct {
    int vm;       /* who approved */
    int64_t wall; /* when (wall ms) */
} approval_t;

typedef struct {
    char id[37];              /* EventId (lower-case GUID) */
    ev_type_t type;           /* EventType */
    bool user;                /* EventSource User (else Platform) */
    char *description;        /* Description */
    ev_status_t status;       /* lifecycle state */
    int *res;                 /* Resources (VM indices) */
    int nres;                 /* how many */
    int fd;                   /* the fault domain of all Resources, or -1 when mixed */
    int pg;                   /* the placement group of all Resources, or -1 when mixed */
    bool scale_in;            /* a Terminate made by DELETE /control/vms (scale-in) */
    int duration;             /* DurationInSeconds as shown */
    int64_t impact_ms;        /* real length of the impact */
    int64_t created_ms;       /* monotonic */
    int64_t notbefore_ms;     /* monotonic, when NotBefore passes */
    int64_t notbefore_wall_s; /* NotBefore, Unix seconds */
    bool approved;            /* a VM approved it while Scheduled */
    int64_t start_due_ms;     /* approved: starts then (monotonic), 0 = not yet */
    int64_t started_ms;       /* monotonic, 0 = not started */
    const char *how;          /* approved | not_before | host_failure */
    bool impact_running;      /* impact begun and not ended */
    int64_t impact_start_wall, impact_end_wall; /* wall ms, 0 = not yet */
    int64_t complete_ms;                        /* monotonic, when it disappears */
    int64_t ended_wall;                         /* wall ms of completion / cancellation */
    approval_t *appr;                           /* approvals, first per VM */
    int nappr;                                  /* how many */
    int appr_cap;                               /* room in appr */
    int rollout;                                /* rollout index or -1 */
} sim_event_t;

typedef struct {
    char id[32];       /* rollout-N */
    ev_type_t type;    /* EventType of every step */
    bool user;         /* EventSource */
    double notice_s;   /* NoticeSeconds (simulated) */
    int duration;      /* DurationInSeconds */
    char *description; /* Description or NULL for the default */
    int *fds;          /* fault domains in order */
    int nfds;          /* how many */
    int next;          /* index of the next fault domain to schedule */
    int64_t gap_ms;    /* real pause between one completion and the next event */
    int64_t due_ms;    /* monotonic time to create the next event, 0 = waiting */
    int *events;       /* event indices created so far */
    int nevents;       /* how many */
} rollout_t;

struct sim_fabric {
    const sim_opts_t *o;     /* options (borrowed) */
    pthread_mutex_t lock;    /* guards everything below */
    sim_timeline_t *tl;      /* the timeline */
    sim_vm_t *vms;           /* the set: --vms, then the VMs added (POST /control/vms) */
    int nvms;                /* how many */
    int cap_vms;             /* room in vms */
    int nfds;                /* fault domains: --fault-domains, or more as VMs are added */
    char (*pgs)[SIM_MAX_PG]; /* placement group ids; pgs[0] the set's own */
    int npgs;                /* how many */
    sim_event_t **events;    /* every event ever created */
    int nevents;             /* how many */
    rollout_t **rollouts;    /* every maintenance rollout */
    int nrollouts;           /* how many */
    int64_t t0_mono;         /* monotonic ms at start */
    int64_t t0_wall;         /* wall ms at start */
    uint64_t rng;            /* xorshift64* state, from --seed */
    char **hook_argv;        /* --on-impact split on whitespace, NULL-terminated */
    int hook_argc;           /* words in hook_argv */
    int hooks_waiting;       /* queued --on-impact runs over all VMs */
};

/* ---------------------------------------------------------------- helpers */

/* xorshift64*: the next number of the sequence whose state is *x. */
static uint64_t s_next(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 0x2545F4914F6CDD1DULL;
}

static uint64_t s_rand(sim_fabric_t *f)
{
    return s_next(&f->rng);
}

/* A random (version 4) GUID from the sequence *x. */
static void s_guid_of(uint64_t *x, char out[37])
{
    uint64_t a = s_next(x), b = s_next(x);

    snprintf(out, 37, "%08x-%04x-4%03x-%04x-%012llx", (unsigned)(a >> 32),
             (unsigned)((a >> 16) & 0xffff), (unsigned)(a & 0xfff),
             (unsigned)(0x8000 | ((b >> 48) & 0x3fff)),
             (unsigned long long)(b & 0xffffffffffffULL));
}

static void s_guid(sim_fabric_t *f, char out[37])
{
    s_guid_of(&f->rng, out);
}

/* Simulated seconds → real milliseconds. */
static int64_t s_real_ms(const sim_fabric_t *f, double sim_s)
{
    return (int64_t)llround(sim_s * 1000.0 / f->o->time_scale);
}

static int64_t s_wall_of(const sim_fabric_t *f, int64_t mono)
{
    return f->t0_wall + (mono - f->t0_mono);
}

static double s_sim_of(const sim_fabric_t *f, int64_t mono)
{
    return ((double)f->t0_wall + (double)(mono - f->t0_mono) * f->o->time_scale) / 1000.0;
}

static json_object *s_num3(double v)
{
    char buf[48];

    snprintf(buf, sizeof(buf), "%.3f", v);
    return json_object_new_double_s(v, buf);
}

static json_object *s_wall_json(int64_t wall_ms)
{
    return wall_ms ? s_num3((double)wall_ms / 1000.0) : json_object_new_null();
}

/* A timeline entry for now with its kind; the caller adds fields and calls s_emit. */
/* CLOCK_MONOTONIC in µs: the same clock in every process of the machine. */
static int64_t s_mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static json_object *s_fact(sim_fabric_t *f, int64_t now, const char *kind)
{
    json_object *o = json_object_new_object();

    json_object_object_add(o, "wall", s_num3((double)s_wall_of(f, now) / 1000.0));
    json_object_object_add(o, "sim", s_num3(s_sim_of(f, now)));
    json_object_object_add(o, "kind", json_object_new_string(kind));
    return o;
}

static void s_add_str(json_object *o, const char *k, const char *v)
{
    json_object_object_add(o, k, json_object_new_string(v));
}

static void s_add_int(json_object *o, const char *k, int64_t v)
{
    json_object_object_add(o, k, json_object_new_int64(v));
}

static void s_emit(sim_fabric_t *f, json_object *o)
{
    sim_timeline_add(f->tl, o);
}

static char *s_dump(json_object *o, size_t *ret_len)
{
    const char *t =
        json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    char *out = strdup(t ? t : "null");

    *ret_len = out ? strlen(out) : 0;
    return out;
}

static void s_answer_json(sim_answer_t *ans, int status, json_object *o)
{
    ans->kind = SIM_ANS_RESPOND;
    ans->status = status;
    ans->content_type = "application/json; charset=utf-8";
    ans->body = s_dump(o, &ans->body_len);
    json_object_put(o);
}

static void s_answer_error(sim_answer_t *ans, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void s_answer_error(sim_answer_t *ans, int status, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    json_object *o = json_object_new_object();

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    s_add_str(o, "error", msg);
    s_answer_json(ans, status, o);
}

static bool s_is_active(const sim_event_t *ev)
{
    return ev->status == ST_SCHEDULED || ev->status == ST_STARTED;
}

static bool s_in(const int *res, int nres, int vm)
{
    for (int i = 0; i < nres; i++)
        if (res[i] == vm)
            return true;
    return false;
}

/* Whether vm's document lists ev: events are per placement group (IMDS.md, "Scope"), and an
 * --own-events-only VM sees only those naming it. */
static bool s_sees(const sim_fabric_t *f, int vm, const sim_event_t *ev)
{
    int pg = f->vms[vm].pg;

    if (f->vms[vm].own_only)
        return s_in(ev->res, ev->nres, vm);
    if (ev->pg >= 0)
        return ev->pg == pg;
    for (int i = 0; i < ev->nres; i++)
        if (f->vms[ev->res[i]].pg == pg)
            return true;
    return false;
}

/* The visible list of every VM that sees ev changed. */
static void s_touch(sim_fabric_t *f, const sim_event_t *ev)
{
    for (int i = 0; i < f->nvms; i++)
        if (s_sees(f, i, ev))
            f->vms[i].incarnation++;
}

static bool s_name_is(const sim_vm_t *vm, const char *name, size_t len)
{
    return strncmp(vm->name, name, len) == 0 && vm->name[len] == '\0';
}

/* The VM named name (len bytes, not NUL-terminated), or -1. Names are unique over the set: a
 * deleted VM's name comes back in its own slot (re-created or added again). */
static int s_vm_find(const sim_fabric_t *f, const char *name, size_t len)
{
    size_t plen = strlen(f->o->prefix);
    long idx = 0;

    if (len == 0 || len >= SIM_MAX_NAME)
        return -1;
    /* The --vms names are prefix + index: parse rather than search (1,000 VMs at 1 req/s
     * each); the VMs added later are searched. */
    if (len > plen && strncmp(name, f->o->prefix, plen) == 0 &&
        !(name[plen] == '0' && len != plen + 1)) {
        size_t i;

        for (i = plen; i < len && isdigit((unsigned char)name[i]) && idx < f->nvms; i++)
            idx = idx * 10 + (name[i] - '0');
        if (i == len && idx < f->nvms && s_name_is(&f->vms[idx], name, len))
            return (int)idx;
    }
    for (int i = f->o->vms; i < f->nvms; i++)
        if (s_name_is(&f->vms[i], name, len))
            return i;
    return -1;
}

bool sim_fabric_has_vm(sim_fabric_t *f, const char *name)
{
    return s_vm_find(f, name, strlen(name)) >= 0;
}

static sim_event_t *s_event_find(sim_fabric_t *f, const char *id)
{
    for (int i = f->nevents - 1; i >= 0; i--)
        if (strcasecmp(f->events[i]->id, id) == 0)
            return f->events[i];
    return NULL;
}

/* ---------------------------------------------------------------- --on-impact */

static void s_hook_spawn(sim_fabric_t *f, int vmi)
{
    sim_vm_t *vm = &f->vms[vmi];
    hook_job_t job = vm->hooks[vm->hook_head];
    char *argv[64];
    char type[16], phase[8];
    int n = 0;
    pid_t pid;

    vm->hook_head = (vm->hook_head + 1) % SIM_HOOK_QUEUE;
    vm->hook_len--;
    f->hooks_waiting--;
    for (int i = 0; i < f->hook_argc; i++)
        argv[n++] = f->hook_argv[i];
    snprintf(phase, sizeof(phase), "%s", s_hook_phase[job.phase]);
    snprintf(type, sizeof(type), "%s", job.type);
    argv[n++] = phase;
    argv[n++] = vm->name;
    argv[n++] = type;
    argv[n++] = job.id;
    argv[n] = NULL;
    /* fork + execvp, no shell: the command is split on whitespace. Never waited for here;
     * sim_fabric_tick reaps it, then runs this VM's next queued phase, so a VM's start and
     * end always run in order and never at the same time. */
    pid = fork();
    if (pid == 0) {
        execvp(argv[0], argv);
        _exit(127);
    }
    if (pid < 0) {
        sc_log_err("on-impact fork failed", "vm=%s errno=%d", vm->name, errno);
        return;
    }
    vm->hook_pid = pid;
}

/* Queues one run of --on-impact for vmi: CMD phase vm type id (id copied). */
static void s_hook_queue(sim_fabric_t *f, int vmi, hook_phase_t phase, const char *type,
                         const char *id)
{
    sim_vm_t *vm = &f->vms[vmi];
    hook_job_t *job;

    if (!f->hook_argv || vm->deleted) /* a deleted VM never comes back */
        return;
    if (vm->hook_len == SIM_HOOK_QUEUE) {
        sc_log_warn("on-impact queue full: phase dropped", "vm=%s", vm->name);
        return;
    }
    job = &vm->hooks[(vm->hook_head + vm->hook_len) % SIM_HOOK_QUEUE];
    job->phase = phase;
    job->type = type;
    snprintf(job->id, sizeof(job->id), "%s", id);
    vm->hook_len++;
    f->hooks_waiting++;
    if (!vm->hook_pid)
        s_hook_spawn(f, vmi);
}

static void s_hook_reap(sim_fabric_t *f)
{
    pid_t pid;
    int st;

    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
        for (int i = 0; i < f->nvms; i++) {
            if (f->vms[i].hook_pid != pid)
                continue;
            f->vms[i].hook_pid = 0;
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                sc_log_warn("on-impact command failed", "vm=%s status=%d", f->vms[i].name, st);
            if (f->vms[i].hook_len)
                s_hook_spawn(f, i);
            break;
        }
    }
}

/* ---------------------------------------------------------------- lifecycle */

static void s_rollout_step_done(sim_fabric_t *f, sim_event_t *ev, int64_t now);

static void s_impact_end(sim_fabric_t *f, sim_event_t *ev, int64_t now)
{
    if (!ev->impact_running)
        return;
    ev->impact_running = false;
    ev->impact_end_wall = s_wall_of(f, now);
    for (int i = 0; i < ev->nres; i++) {
        sim_vm_t *vm = &f->vms[ev->res[i]];
        json_object *o = s_fact(f, now, "impact_end");

        s_add_str(o, "vm", vm->name);
        s_add_str(o, "event", ev->id);
        s_add_str(o, "event_type", s_type_name[ev->type]);
        s_add_int(o, "fault_domain", vm->fd);
        s_emit(f, o);
        if (s_type_blocks[ev->type])
            vm->impacts--;
        s_hook_queue(f, ev->res[i], HOOK_END, s_type_name[ev->type], ev->id);
    }
}

static void s_start(sim_fabric_t *f, sim_event_t *ev, const char *how, int64_t now)
{
    json_object *o;

    ev->status = ST_STARTED;
    ev->started_ms = now;
    ev->how = how;
    s_touch(f, ev);
    o = s_fact(f, now, "started");
    s_add_str(o, "event", ev->id);
    s_add_str(o, "how", how);
    s_add_str(o, "event_type", s_type_name[ev->type]);
    if (ev->fd >= 0)
        s_add_int(o, "fault_domain", ev->fd);
    s_emit(f, o);

    ev->impact_running = true;
    ev->impact_start_wall = s_wall_of(f, now);
    for (int i = 0; i < ev->nres; i++) {
        sim_vm_t *vm = &f->vms[ev->res[i]];

        o = s_fact(f, now, "impact_start");
        s_add_str(o, "vm", vm->name);
        s_add_str(o, "event", ev->id);
        s_add_str(o, "event_type", s_type_name[ev->type]);
        s_add_int(o, "fault_domain", vm->fd);
        if (s_type_deletes[ev->type] && !vm->deleted)
            json_object_object_add(o, "deleted", json_object_new_boolean(true));
        s_emit(f, o);
        if (s_type_blocks[ev->type])
            vm->impacts++;
        s_hook_queue(f, ev->res[i], HOOK_START, s_type_name[ev->type], ev->id);
        if (s_type_deletes[ev->type])
            vm->deleted = true;
    }
    {
        int64_t complete = s_real_ms(f, f->o->complete_after_s);

        ev->complete_ms = now + (complete > ev->impact_ms ? complete : ev->impact_ms);
    }
    if (ev->impact_ms == 0)
        s_impact_end(f, ev, now);
}

static void s_finish(sim_fabric_t *f, sim_event_t *ev, ev_status_t st, int64_t now)
{
    json_object *o;

    s_impact_end(f, ev, now);
    s_touch(f, ev);
    ev->status = st;
    ev->ended_wall = s_wall_of(f, now);
    o = s_fact(f, now, st == ST_COMPLETED ? "completed" : "cancelled");
    s_add_str(o, "event", ev->id);
    s_add_str(o, "event_type", s_type_name[ev->type]);
    if (ev->fd >= 0)
        s_add_int(o, "fault_domain", ev->fd);
    s_emit(f, o);
    if (ev->rollout >= 0)
        s_rollout_step_done(f, ev, now);
}

/* Copies res into ev->res (room for nres) and sets the event's fault domain. */
static void s_set_res(const sim_fabric_t *f, sim_event_t *ev, const int *res, int nres)
{
    memcpy(ev->res, res, sizeof(int) * (size_t)nres);
    ev->nres = nres;
    ev->fd = f->vms[res[0]].fd;
    ev->pg = f->vms[res[0]].pg;
    for (int i = 1; i < nres; i++) {
        if (f->vms[res[i]].fd != ev->fd)
            ev->fd = -1;
        if (f->vms[res[i]].pg != ev->pg)
            ev->pg = -1;
    }
}

static void s_set_duration(const sim_fabric_t *f, sim_event_t *ev, int duration)
{
    ev->duration = duration;
    ev->impact_ms = duration > 0    ? s_real_ms(f, duration)
                    : duration == 0 ? 0
                                    : s_real_ms(f, f->o->unknown_duration_s);
}

/* NotBefore is the real wall-clock second at which the event starts, notice_s (simulated)
 * after now (rounded up, so the event never starts before the time the document shows). */
static void s_set_notbefore(const sim_fabric_t *f, sim_event_t *ev, double notice_s, int64_t now)
{
    int64_t nb_wall_ms = s_wall_of(f, now) + s_real_ms(f, notice_s);

    ev->notbefore_wall_s = (nb_wall_ms + 999) / 1000;
    ev->notbefore_ms = f->t0_mono + ev->notbefore_wall_s * 1000 - f->t0_wall;
}

/* The names of ev's Resources, for a timeline fact. */
static json_object *s_res_names(const sim_fabric_t *f, const sim_event_t *ev)
{
    json_object *arr = json_object_new_array();

    for (int i = 0; i < ev->nres; i++)
        json_object_array_add(arr, json_object_new_string(f->vms[ev->res[i]].name));
    return arr;
}

/* Creates an event. res is copied. rc 0, or -ENOSPC (too many events), -ENOMEM. */
static int s_event_create(sim_fabric_t *f, ev_type_t type, bool user, double notice_s, int duration,
                          const char *desc, const int *res, int nres, bool host_failure,
                          int rollout, int64_t now, sim_event_t **ret_ev)
{
    sim_event_t *ev;
    sim_event_t **grown;
    json_object *o;

    if (f->nevents >= SIM_MAX_EVENTS)
        return -ENOSPC;
    if (!(grown = realloc(f->events, sizeof(*grown) * (size_t)(f->nevents + 1))))
        return -ENOMEM;
    f->events = grown;
    if (!(ev = calloc(1, sizeof(*ev))))
        return -ENOMEM;
    ev->res = malloc(sizeof(int) * (size_t)nres);
    ev->appr_cap = f->nvms;
    ev->appr = calloc((size_t)ev->appr_cap, sizeof(*ev->appr));
    ev->description = strdup(desc ? desc : s_default_desc[type]);
    if (!ev->res || !ev->appr || !ev->description) {
        free(ev->res);
        free(ev->appr);
        free(ev->description);
        free(ev);
        return -ENOMEM;
    }
    s_set_res(f, ev, res, nres);
    s_guid(f, ev->id);
    ev->type = type;
    ev->user = user;
    s_set_duration(f, ev, duration);
    ev->created_ms = now;
    s_set_notbefore(f, ev, notice_s, now);
    ev->status = ST_SCHEDULED;
    ev->rollout = rollout;
    f->events[f->nevents++] = ev;

    s_touch(f, ev);
    o = s_fact(f, now, "created");
    s_add_str(o, "event", ev->id);
    s_add_str(o, "event_type", s_type_name[type]);
    s_add_str(o, "source", user ? "User" : "Platform");
    json_object_object_add(o, "resources", s_res_names(f, ev));
    if (ev->fd >= 0)
        s_add_int(o, "fault_domain", ev->fd);
    if (host_failure) {
        s_add_str(o, "not_before", "");
    } else {
        char nb[64];

        s_add_str(o, "not_before", sc_time_rfc1123(ev->notbefore_wall_s, nb, sizeof(nb)));
    }
    s_add_int(o, "duration", duration);
    if (rollout >= 0)
        s_add_str(o, "rollout", f->rollouts[rollout]->id);
    s_emit(f, o);
    if (host_failure)
        s_start(f, ev, "host_failure", now);
    *ret_ev = ev;
    return 0;
}

/* The VMs of fault domain fd that still exist, into res (room for every VM) unless NULL.
 * Their count. */
static int s_fd_members(const sim_fabric_t *f, int fd, int *res)
{
    int n = 0;

    for (int i = 0; i < f->nvms; i++)
        if (f->vms[i].fd == fd && !f->vms[i].deleted) {
            if (res)
                res[n] = i;
            n++;
        }
    return n;
}

/* Whether fault domain fd has or had a VM (deleted or not). */
static bool s_fd_ever(const sim_fabric_t *f, int fd)
{
    for (int i = 0; i < f->nvms; i++)
        if (f->vms[i].fd == fd)
            return true;
    return false;
}

static int s_rollout_create_next(sim_fabric_t *f, int ri, int64_t now, sim_event_t **ret_ev)
{
    rollout_t *r = f->rollouts[ri];
    int *res = malloc(sizeof(int) * (size_t)f->nvms);
    int nres = 0, rc;
    sim_event_t *ev;

    if (!res)
        return -ENOMEM;
    /* A fault domain whose VMs were all deleted has nothing left to maintain: skipped. */
    while (r->next < r->nfds) {
        nres = s_fd_members(f, r->fds[r->next], res);
        if (nres > 0)
            break;
        r->next++;
    }
    if (nres == 0) { /* the rollout is over */
        free(res);
        r->due_ms = 0;
        *ret_ev = NULL;
        return 0;
    }
    rc = s_event_create(f, r->type, r->user, r->notice_s, r->duration, r->description, res, nres,
                        false, ri, now, &ev);
    free(res);
    if (rc < 0)
        return rc;
    r->events[r->nevents++] = f->nevents - 1;
    r->next++;
    r->due_ms = 0;
    *ret_ev = ev;
    return 0;
}

static void s_rollout_step_done(sim_fabric_t *f, sim_event_t *ev, int64_t now)
{
    rollout_t *r = f->rollouts[ev->rollout];

    /* The next fault domain's event appears only after the previous one is over. */
    if (r->next < r->nfds)
        r->due_ms = now + r->gap_ms;
}

void sim_fabric_tick(sim_fabric_t *f)
{
    int64_t now;

    pthread_mutex_lock(&f->lock);
    now = sc_mono_ms();
    for (int i = 0; i < f->nevents; i++) {
        sim_event_t *ev = f->events[i];

        if (ev->status == ST_SCHEDULED) {
            if (ev->start_due_ms && now >= ev->start_due_ms)
                s_start(f, ev, "approved", now);
            else if (now >= ev->notbefore_ms)
                s_start(f, ev, "not_before", now);
        }
        if (ev->status == ST_STARTED) {
            if (ev->impact_running && now >= ev->started_ms + ev->impact_ms)
                s_impact_end(f, ev, now);
            if (now >= ev->complete_ms)
                s_finish(f, ev, ST_COMPLETED, now);
        }
    }
    for (int i = 0; i < f->nrollouts; i++) {
        rollout_t *r = f->rollouts[i];
        sim_event_t *ev;

        if (r->due_ms && now >= r->due_ms && s_rollout_create_next(f, i, now, &ev) < 0) {
            sc_log_err("rollout could not create its next event", "rollout=%s", r->id);
            r->due_ms = 0;
        }
    }
    s_hook_reap(f);
    pthread_mutex_unlock(&f->lock);
}

/* ---------------------------------------------------------------- IMDS */

static int s_version_index(const char *v)
{
    for (int i = 0; i < V_MAX; i++)
        if (strcmp(v, s_versions[i]) == 0)
            return i;
    return -1;
}

static json_object *s_newest_versions(void)
{
    json_object *a = json_object_new_array();

    for (int i = V_MAX - 1; i >= V_MAX - 3; i--)
        json_object_array_add(a, json_object_new_string(s_versions[i]));
    return a;
}

static void s_bad_version(sim_answer_t *ans, const char *v)
{
    json_object *o = json_object_new_object();

    if (!v)
        s_add_str(o, "error",
                  "Bad request. api-version was not specified in the request. "
                  "For more information refer to aka.ms/azureimds");
    else
        s_add_str(o, "error",
                  "Bad request. api-version is invalid or was not specified in the "
                  "request. For more information refer to aka.ms/azureimds");
    json_object_object_add(o, "newest-versions", s_newest_versions());
    s_answer_json(ans, 400, o);
}

static json_object *s_event_doc(const sim_fabric_t *f, const sim_event_t *ev, int version)
{
    json_object *e = json_object_new_object();
    json_object *res = json_object_new_array();
    char nb[64];

    s_add_str(e, "EventId", ev->id);
    s_add_str(e, "EventStatus", s_status_name[ev->status]);
    s_add_str(e, "EventType", s_type_name[ev->type]);
    s_add_str(e, "ResourceType", "VirtualMachine");
    for (int i = 0; i < ev->nres; i++) {
        char name[SIM_MAX_NAME + 1];

        /* 2017-03-01 named IaaS VMs with a leading underscore. */
        snprintf(name, sizeof(name), "%s%s", version == V_2017_03 ? "_" : "",
                 f->vms[ev->res[i]].name);
        json_object_array_add(res, json_object_new_string(name));
    }
    json_object_object_add(e, "Resources", res);
    if (ev->status == ST_STARTED) {
        nb[0] = '\0';
    } else if (version == V_2017_03) {
        time_t t = (time_t)ev->notbefore_wall_s;
        struct tm tm;

        gmtime_r(&t, &tm);
        strftime(nb, sizeof(nb), "%Y-%m-%dT%H:%M:%SZ", &tm);
    } else {
        sc_time_rfc1123(ev->notbefore_wall_s, nb, sizeof(nb));
    }
    s_add_str(e, "NotBefore", nb);
    if (version >= V_2019_04)
        s_add_str(e, "Description", ev->description);
    if (version >= V_2019_08)
        s_add_str(e, "EventSource", ev->user ? "User" : "Platform");
    if (version >= V_2020_07)
        s_add_int(e, "DurationInSeconds", ev->duration);
    return e;
}

/* The malformed event a "bad_event" fault puts first in vmi's document served with left
 * documents of its count left: a Scheduled Freeze on that VM 15 minutes ahead, its EventId
 * drawn from the seed, the VM and left (not from the fabric's sequence, so the EventIds of
 * later events stay what they would be without the fault), with the field kind names broken. */
static json_object *s_bad_event_doc(const sim_fabric_t *f, int vmi, int version, bad_kind_t kind,
                                    int left, int64_t now)
{
    uint64_t x = (f->o->seed * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)vmi << 32) ^ (uint64_t)left;
    char desc[128];
    sim_event_t ev = {.type = EV_FREEZE, .status = ST_SCHEDULED, .res = &vmi, .nres = 1};
    json_object *e;

    s_guid_of(&x, ev.id);
    snprintf(desc, sizeof(desc), "%s", s_default_desc[EV_FREEZE]);
    ev.description = desc;
    s_set_duration(f, &ev, s_default_duration[EV_FREEZE]);
    s_set_notbefore(f, &ev, s_default_notice[EV_FREEZE], now);
    e = s_event_doc(f, &ev, version);
    switch (kind) {
    case BAD_NO_EVENT_ID: json_object_object_del(e, "EventId"); break;
    case BAD_NO_EVENT_TYPE: json_object_object_del(e, "EventType"); break;
    case BAD_NO_EVENT_STATUS: json_object_object_del(e, "EventStatus"); break;
    case BAD_RESOURCES_STRING: s_add_str(e, "Resources", f->vms[vmi].name); break;
    case BAD_NOT_BEFORE_NUMBER: s_add_int(e, "NotBefore", ev.notbefore_wall_s); break;
    case BAD_MAX: break;
    }
    return e;
}

/* vmi's document; extra (taken, may be NULL) goes first among the events. */
static void s_scheduled_get(sim_fabric_t *f, int vmi, int version, json_object *extra,
                            sim_answer_t *ans)
{
    sim_vm_t *vm = &f->vms[vmi];
    json_object *o = json_object_new_object();
    json_object *evs = json_object_new_array();

    s_add_int(o, "DocumentIncarnation", vm->incarnation);
    if (extra)
        json_object_array_add(evs, extra);
    for (int i = 0; i < f->nevents; i++) {
        const sim_event_t *ev = f->events[i];

        if (s_is_active(ev) && s_sees(f, vmi, ev) && version >= s_type_min_version[ev->type])
            json_object_array_add(evs, s_event_doc(f, ev, version));
    }
    json_object_object_add(o, "Events", evs);
    s_answer_json(ans, 200, o);
}

/* vmi's instance/compute document: the fields clients read, Azure's names and types. */
static json_object *s_compute_doc(const sim_fabric_t *f, int vmi)
{
    const sim_vm_t *vm = &f->vms[vmi];
    json_object *o = json_object_new_object();
    char buf[256];

    s_add_str(o, "azEnvironment", "AzurePublicCloud");
    s_add_str(o, "location", "imdssim");
    s_add_str(o, "name", vm->name);
    s_add_str(o, "osType", "Linux");
    s_add_str(o, "placementGroupId", f->pgs[vm->pg]);
    snprintf(buf, sizeof(buf), "%d", vm->fd);
    s_add_str(o, "platformFaultDomain", buf);
    snprintf(buf, sizeof(buf), "%d", vm->ud);
    s_add_str(o, "platformUpdateDomain", buf);
    s_add_str(o, "priority", vm->spot ? "Spot" : "Regular");
    s_add_str(o, "provider", "Microsoft.Compute");
    s_add_str(o, "resourceGroupName", "imds-sim");
    snprintf(buf, sizeof(buf),
             "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/imds-sim/"
             "providers/Microsoft.Compute/virtualMachines/%s",
             vm->name);
    s_add_str(o, "resourceId", buf);
    s_add_str(o, "subscriptionId", "00000000-0000-0000-0000-000000000000");
    s_add_str(o, "tags", "");
    json_object_object_add(o, "tagsList", json_object_new_array());
    s_add_str(o, "vmId", vm->vmid);
    s_add_str(o, "vmScaleSetName", "");
    s_add_str(o, "vmSize", "Standard_D2s_v5");
    s_add_str(o, "zone", vm->zone);
    return o;
}

/* vmi's instance/network document: one interface, its private address 10.0.X.Y in the set's
 * virtual network 10.0.0.0/16, VM i having host number i + 4 (Azure keeps .0 to .3 of a
 * subnet), no public address, a MAC of Azure's prefix 00-0D-3A. */
static json_object *s_network_doc(const sim_fabric_t *f, int vmi)
{
    json_object *nic = json_object_new_object(), *v4 = json_object_new_object();
    json_object *ip = json_object_new_object(), *subnet = json_object_new_object();
    json_object *a, *v6 = json_object_new_object(), *o = json_object_new_object();
    unsigned host = (unsigned)vmi + 4;
    char buf[32];

    (void)f;
    snprintf(buf, sizeof(buf), "10.0.%u.%u", host >> 8, host & 0xff);
    s_add_str(ip, "privateIpAddress", buf);
    s_add_str(ip, "publicIpAddress", "");
    json_object_object_add(v4, "ipAddress", a = json_object_new_array());
    json_object_array_add(a, ip);
    s_add_str(subnet, "address", "10.0.0.0");
    s_add_str(subnet, "prefix", "16");
    json_object_object_add(v4, "subnet", a = json_object_new_array());
    json_object_array_add(a, subnet);
    json_object_object_add(nic, "ipv4", v4);
    json_object_object_add(v6, "ipAddress", json_object_new_array());
    json_object_object_add(nic, "ipv6", v6);
    snprintf(buf, sizeof(buf), "000D3A%06X", host & 0xffffff);
    s_add_str(nic, "macAddress", buf);
    json_object_object_add(o, "interface", a = json_object_new_array());
    json_object_array_add(a, nic);
    return o;
}

/* Parses a JSON object body. NULL with *ret_why on failure. */
static json_object *s_parse_object(const sim_request_t *req, const char **ret_why)
{
    json_tokener *tok;
    json_object *o;

    if (req->body_too_big) {
        *ret_why = "body larger than 64 KiB";
        return NULL;
    }
    if (!req->body || req->body_len == 0) {
        *ret_why = "empty body";
        return NULL;
    }
    if (!(tok = json_tokener_new_ex(16))) {
        *ret_why = "out of memory";
        return NULL;
    }
    o = json_tokener_parse_ex(tok, req->body, (int)req->body_len);
    if (!o || json_tokener_get_error(tok) != json_tokener_success) {
        json_object_put(o);
        *ret_why = "body is not JSON";
        o = NULL;
    } else {
        size_t end = json_tokener_get_parse_end(tok);

        while (end < req->body_len && isspace((unsigned char)req->body[end]))
            end++;
        if (end != req->body_len) {
            json_object_put(o);
            *ret_why = "trailing bytes after the JSON value";
            o = NULL;
        } else if (!json_object_is_type(o, json_type_object)) {
            json_object_put(o);
            *ret_why = "body is not a JSON object";
            o = NULL;
        }
    }
    json_tokener_free(tok);
    return o;
}

static void s_approve(sim_fabric_t *f, int vmi, sim_event_t *ev, int64_t now)
{
    bool seen = false;

    for (int i = 0; i < ev->nappr; i++)
        if (ev->appr[i].vm == vmi)
            seen = true;
    if (!seen && ev->nappr == ev->appr_cap) { /* VMs added since it was created */
        approval_t *grown = realloc(ev->appr, sizeof(*grown) * (size_t)ev->appr_cap * 2);

        if (grown) {
            ev->appr = grown;
            ev->appr_cap *= 2;
        }
    }
    if (!seen && ev->nappr < ev->appr_cap)
        ev->appr[ev->nappr++] = (approval_t){vmi, s_wall_of(f, now)};
    if (ev->status != ST_SCHEDULED || ev->approved)
        return;
    ev->approved = true;
    {
        json_object *o = s_fact(f, now, "approved");

        s_add_str(o, "vm", f->vms[vmi].name);
        s_add_str(o, "event", ev->id);
        if (ev->fd >= 0)
            s_add_int(o, "fault_domain", ev->fd);
        s_emit(f, o);
    }
    if (f->o->approval_delay_s <= 0)
        s_start(f, ev, "approved", now);
    else
        ev->start_due_ms = now + s_real_ms(f, f->o->approval_delay_s);
}

static void s_scheduled_post(sim_fabric_t *f, int vmi, const sim_request_t *req, sim_answer_t *ans,
                             int64_t now)
{
    const char *why = NULL;
    json_object *body = s_parse_object(req, &why), *reqs, *ids = NULL, *o;
    sim_event_t *found[SIM_MAX_START_REQUESTS];
    size_t n = 0;
    char msg[160];

    if (!body)
        goto bad;
    if (!json_object_object_get_ex(body, "StartRequests", &reqs) ||
        !json_object_is_type(reqs, json_type_array)) {
        why = "body has no StartRequests array";
        goto bad;
    }
    n = json_object_array_length(reqs);
    if (n > SIM_MAX_START_REQUESTS) {
        why = "more than 100 StartRequests";
        goto bad;
    }
    ids = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        json_object *r = json_object_array_get_idx(reqs, i), *id;
        const char *s;

        if (!json_object_is_type(r, json_type_object) ||
            !json_object_object_get_ex(r, "EventId", &id) ||
            !json_object_is_type(id, json_type_string)) {
            why = "a StartRequests entry has no string EventId";
            goto bad;
        }
        s = json_object_get_string(id);
        if (strlen(s) > 64) {
            why = "EventId longer than 64 characters";
            goto bad;
        }
        json_object_array_add(ids, json_object_new_string(s));
        found[i] = s_event_find(f, s);
        if (found[i] && (!s_is_active(found[i]) || !s_sees(f, vmi, found[i])))
            found[i] = NULL;
        if (!found[i] && !f->o->unknown_event_ok) {
            snprintf(msg, sizeof(msg), "unknown EventId %s", s);
            why = msg;
            goto bad;
        }
    }
    o = s_fact(f, now, "post");
    s_add_str(o, "vm", f->vms[vmi].name);
    json_object_object_add(o, "events", ids);
    s_add_int(o, "status", 200);
    s_add_int(o, "mono_us", s_mono_us()); /* when it arrived, for bench_coord_approve */
    s_emit(f, o);
    for (size_t i = 0; i < n; i++)
        if (found[i])
            s_approve(f, vmi, found[i], now);
    json_object_put(body);
    ans->kind = SIM_ANS_RESPOND;
    ans->status = 200;
    return;
bad:
    o = s_fact(f, now, "post");
    s_add_str(o, "vm", f->vms[vmi].name);
    if (ids)
        json_object_object_add(o, "events", ids);
    s_add_int(o, "status", 400);
    s_add_str(o, "why", why);
    s_emit(f, o);
    json_object_put(body);
    s_answer_error(ans, 400, "Bad request. %s", why);
}

/* Records a get (or a post that never reached the body) answered with status. */
static void s_log_request(sim_fabric_t *f, int vmi, bool post, int status, const char *path,
                          const char *why, int64_t now)
{
    json_object *o = s_fact(f, now, post ? "post" : "get");

    s_add_str(o, "vm", f->vms[vmi].name);
    s_add_int(o, "status", status);
    if (path)
        s_add_str(o, "path", path);
    if (why)
        s_add_str(o, "why", why);
    s_emit(f, o);
}

/* Answers an injected fault. */
static void s_fault_answer(sim_fabric_t *f, int vmi, const sim_request_t *req, sim_answer_t *ans,
                           int64_t now)
{
    sim_vm_t *vm = &f->vms[vmi];
    bool post = strcmp(req->method, "POST") == 0;
    fault_t fault = vm->fault;
    int status = 0;

    if (--vm->fault_count == 0)
        vm->fault = FAULT_NONE;
    switch (fault) {
    case FAULT_STATUS:
        status = vm->fault_status;
        s_answer_error(ans, status,
                       status == 429   ? "Too many requests"
                       : status == 410 ? "Gone"
                       : status >= 500 ? "Internal server error"
                                       : "Injected fault");
        break;
    case FAULT_TIMEOUT:
        ans->kind = SIM_ANS_HOLD;
        ans->delay_until_ms = now + (int64_t)(f->o->fault_timeout_s * 1000.0);
        break;
    case FAULT_GARBAGE: {
        /* A document cut in half followed by a few random bytes: never valid JSON. */
        static const char head[] = "{\"DocumentIncarnation\": 7, \"Events\": [{\"EventId\": \"";
        size_t n = sizeof(head) - 1;

        ans->kind = SIM_ANS_RESPOND;
        status = ans->status = 200;
        ans->content_type = "application/json; charset=utf-8";
        if ((ans->body = malloc(n + 16))) {
            memcpy(ans->body, head, n);
            for (int i = 0; i < 16; i++)
                ans->body[n + (size_t)i] = (char)(0x80 | (s_rand(f) & 0x7f));
            ans->body_len = n + 16;
        }
        break;
    }
    case FAULT_EMPTY:
        ans->kind = SIM_ANS_RESPOND;
        status = ans->status = 200;
        break;
    case FAULT_RESET:
    case FAULT_NONE:
    case FAULT_BAD_EVENT: /* answered with the document (sim_fabric_imds) */
    case FAULT_MAX: ans->kind = SIM_ANS_CLOSE; break;
    }
    {
        json_object *o = s_fact(f, now, post ? "post" : "get");

        s_add_str(o, "vm", vm->name);
        s_add_int(o, "status", status);
        s_add_str(o, "fault", fault == FAULT_STATUS ? "status" : s_fault_name[fault]);
        s_emit(f, o);
    }
}

/* The IMDS paths simulated, and the name a get of each has in the timeline ("path"). */
typedef enum { P_SCHED, P_INSTANCE, P_COMPUTE, P_NETWORK, P_MAX } imds_path_t;
static const char *const s_imds_path[P_MAX] = {"/metadata/scheduledevents", "/metadata/instance",
                                               "/metadata/instance/compute",
                                               "/metadata/instance/network"};
static const char *const s_imds_path_fact[P_MAX] = {NULL, "instance", "compute", "network"};

void sim_fabric_imds(sim_fabric_t *f, const sim_request_t *req, sim_answer_t *ans)
{
    const char *path = req->url, *name = req->vm;
    size_t name_len = req->vm ? strlen(req->vm) : 0;
    bool post = strcmp(req->method, "POST") == 0;
    imds_path_t p;
    int vmi, version = -1;
    sim_vm_t *vm;
    int64_t now;

    memset(ans, 0, sizeof(*ans));
    if (!req->vm) {
        /* --listen: /<vm>/metadata/...; a --vm-listen address serves its VM's paths as is */
        const char *slash = strchr(req->url + 1, '/');

        if (!slash) {
            s_answer_error(ans, 404, "Not found: use /<vm>/metadata/scheduledevents");
            return;
        }
        name = req->url + 1;
        name_len = (size_t)(slash - name);
        path = slash;
    }
    for (p = 0; p < P_MAX && strcmp(path, s_imds_path[p]) != 0; p++)
        ;

    pthread_mutex_lock(&f->lock);
    now = sc_mono_ms();
    vmi = s_vm_find(f, name, name_len);
    if (vmi < 0) {
        s_answer_error(ans, 404, "Not found: no VM named %.*s in this set",
                       (int)(name_len > 64 ? 64 : name_len), name);
        goto out;
    }
    vm = &f->vms[vmi];
    vm->requests++;
    /* A VM rebooting, being redeployed or deleted has no IMDS to talk to. */
    if (vm->impacts > 0 || vm->deleted) {
        ans->kind = SIM_ANS_CLOSE;
        s_log_request(f, vmi, post, 0, NULL, vm->deleted ? "deleted" : "impact", now);
        goto out;
    }
    if (!req->resumed && vm->fault != FAULT_NONE && vm->fault != FAULT_BAD_EVENT &&
        vm->fault_count > 0) {
        s_fault_answer(f, vmi, req, ans, now);
        goto out;
    }
    if (req->forwarded) {
        s_answer_error(ans, 400, "Bad request. X-Forwarded-For header is not allowed");
        s_log_request(f, vmi, post, 400, NULL, "X-Forwarded-For", now);
        goto out;
    }
    if (!req->metadata || strcasecmp(req->metadata, "true") != 0) {
        s_answer_error(ans, 400, "Bad request. Required metadata header not specified");
        s_log_request(f, vmi, post, 400, NULL, "Metadata header", now);
        goto out;
    }
    if (!req->resumed && f->o->rate_limit > 0) {
        int64_t *slot = &vm->recent[vm->recent_pos];

        if (*slot && now - *slot < 1000) {
            s_answer_error(ans, 429, "Too many requests");
            s_log_request(f, vmi, post, 429, NULL, "rate limit", now);
            goto out;
        }
        *slot = now;
        vm->recent_pos = (vm->recent_pos + 1) % f->o->rate_limit;
    }
    if (p == P_MAX) {
        s_answer_error(ans, 404, "Not found: %s is not simulated",
                       strlen(path) > 80 ? "this path" : path);
        s_log_request(f, vmi, post, 404, NULL, "path", now);
        goto out;
    }
    if (strcmp(req->method, "GET") != 0 && !(p == P_SCHED && post)) {
        s_answer_error(ans, 405, "Method not allowed");
        s_log_request(f, vmi, post, 405, NULL, "method", now);
        goto out;
    }
    /* ?api-version=2020-07-01&api-version=2020-07-01: IMDS answers 400, whatever the path. */
    if (req->bad_query) {
        s_answer_error(ans, 400, "Bad request. %s", req->bad_query);
        s_log_request(f, vmi, post, 400, NULL, "query", now);
        goto out;
    }
    if (p == P_SCHED) {
        version = req->api_version ? s_version_index(req->api_version) : -1;
    } else if (req->api_version) {
        for (size_t i = 0; i < sizeof(s_compute_versions) / sizeof(*s_compute_versions); i++)
            if (strcmp(req->api_version, s_compute_versions[i]) == 0)
                version = 0;
    }
    if (version < 0) {
        s_bad_version(ans, req->api_version);
        s_log_request(f, vmi, post, 400, NULL, "api-version", now);
        goto out;
    }
    /* The service disables itself after --idle-disable without a request; re-enabled, its
     * DocumentIncarnation starts again from 1 (seen in the field). */
    if (vm->enabled && f->o->idle_disable_s > 0 &&
        now - vm->last_req_ms >= s_real_ms(f, f->o->idle_disable_s)) {
        vm->enabled = false;
        vm->incarnation = 1;
    }
    vm->last_req_ms = now;
    if (!vm->enabled) {
        vm->enabled = true;
        if (!req->resumed && f->o->first_call_delay_s > 0) {
            ans->kind = SIM_ANS_DELAY;
            ans->delay_until_ms = now + s_real_ms(f, f->o->first_call_delay_s);
            goto out;
        }
    }
    if (p != P_SCHED) {
        json_object *o;

        if (p == P_COMPUTE) {
            o = s_compute_doc(f, vmi);
        } else if (p == P_NETWORK) {
            o = s_network_doc(f, vmi);
        } else {
            o = json_object_new_object();
            json_object_object_add(o, "compute", s_compute_doc(f, vmi));
            json_object_object_add(o, "network", s_network_doc(f, vmi));
        }
        s_answer_json(ans, 200, o);
        s_log_request(f, vmi, false, 200, s_imds_path_fact[p], NULL, now);
    } else if (post) {
        s_scheduled_post(f, vmi, req, ans, now);
    } else {
        json_object *o, *bad = NULL;
        bad_kind_t kind = BAD_MAX;

        /* A "bad_event" fault spends its count on documents only, kind by kind in turn. */
        if (vm->fault == FAULT_BAD_EVENT) {
            kind = (bad_kind_t)((f->o->seed + (uint64_t)vm->fault_count) % BAD_MAX);
            bad = s_bad_event_doc(f, vmi, version, kind, vm->fault_count, now);
            if (--vm->fault_count == 0)
                vm->fault = FAULT_NONE;
        }
        s_scheduled_get(f, vmi, version, bad, ans);
        o = s_fact(f, now, "get");
        s_add_str(o, "vm", vm->name);
        s_add_int(o, "status", 200);
        s_add_int(o, "incarnation", vm->incarnation);
        if (bad) {
            s_add_str(o, "fault", s_fault_name[FAULT_BAD_EVENT]);
            s_add_str(o, "malformed", s_bad_name[kind]);
        }
        s_emit(f, o);
    }
out:
    pthread_mutex_unlock(&f->lock);
}

/* ---------------------------------------------------------------- control API */

static json_object *s_event_state(const sim_fabric_t *f, const sim_event_t *ev)
{
    json_object *e = s_event_doc(f, ev, V_2020_07), *a;

    /* The state view: the 2020-07-01 document fields plus the fabric's own. */
    json_object_object_add(e, "EventStatus", json_object_new_string(s_status_name[ev->status]));
    json_object_object_add(e, "not_before_wall", json_object_new_int64(ev->notbefore_wall_s));
    if (ev->status != ST_STARTED) {
        char nb[64];

        json_object_object_add(
            e, "NotBefore",
            json_object_new_string(
                ev->started_ms ? "" : sc_time_rfc1123(ev->notbefore_wall_s, nb, sizeof(nb))));
    }
    json_object_object_add(e, "fault_domain",
                           ev->fd >= 0 ? json_object_new_int(ev->fd) : json_object_new_null());
    json_object_object_add(e, "created_wall", s_wall_json(s_wall_of(f, ev->created_ms)));
    json_object_object_add(e, "started_wall",
                           ev->started_ms ? s_wall_json(s_wall_of(f, ev->started_ms))
                                          : json_object_new_null());
    json_object_object_add(e, "started_how",
                           ev->how ? json_object_new_string(ev->how) : json_object_new_null());
    json_object_object_add(e, "ended_wall", s_wall_json(ev->ended_wall));
    json_object_object_add(e, "scale_in", json_object_new_boolean(ev->scale_in));
    json_object_object_add(e, "rollout",
                           ev->rollout >= 0 ? json_object_new_string(f->rollouts[ev->rollout]->id)
                                            : json_object_new_null());
    a = json_object_new_array();
    for (int i = 0; i < ev->nappr; i++) {
        json_object *x = json_object_new_object();

        s_add_str(x, "vm", f->vms[ev->appr[i].vm].name);
        json_object_object_add(x, "wall", s_wall_json(ev->appr[i].wall));
        json_object_array_add(a, x);
    }
    json_object_object_add(e, "approvals", a);
    a = json_object_new_array();
    if (ev->impact_start_wall) {
        for (int i = 0; i < ev->nres; i++) {
            json_object *x = json_object_new_object();

            s_add_str(x, "vm", f->vms[ev->res[i]].name);
            s_add_int(x, "fault_domain", f->vms[ev->res[i]].fd);
            json_object_object_add(x, "start_wall", s_wall_json(ev->impact_start_wall));
            json_object_object_add(x, "end_wall", s_wall_json(ev->impact_end_wall));
            json_object_array_add(a, x);
        }
    }
    json_object_object_add(e, "impacts", a);
    return e;
}

/* One VM as /control/state shows it. */
static json_object *s_vm_state(const sim_fabric_t *f, int vmi)
{
    const sim_vm_t *vm = &f->vms[vmi];
    json_object *x = json_object_new_object();

    s_add_str(x, "name", vm->name);
    s_add_str(x, "vm_id", vm->vmid);
    s_add_int(x, "fault_domain", vm->fd);
    s_add_int(x, "update_domain", vm->ud);
    s_add_str(x, "placement_group", f->pgs[vm->pg]);
    s_add_str(x, "priority", vm->spot ? "Spot" : "Regular");
    s_add_str(x, "zone", vm->zone);
    s_add_int(x, "incarnation", vm->incarnation);
    json_object_object_add(x, "enabled", json_object_new_boolean(vm->enabled));
    json_object_object_add(x, "impacted", json_object_new_boolean(vm->impacts > 0));
    json_object_object_add(x, "deleted", json_object_new_boolean(vm->deleted));
    json_object_object_add(x, "own_events_only", json_object_new_boolean(vm->own_only));
    s_add_int(x, "requests", (int64_t)vm->requests);
    if (vm->fault != FAULT_NONE) {
        s_add_str(x, "fault", s_fault_name[vm->fault]);
        s_add_int(x, "fault_count", vm->fault_count);
    }
    return x;
}

static void s_control_state(sim_fabric_t *f, sim_answer_t *ans, int64_t now)
{
    json_object *o = json_object_new_object(), *a;

    json_object_object_add(o, "wall", s_num3((double)s_wall_of(f, now) / 1000.0));
    json_object_object_add(o, "sim", s_num3(s_sim_of(f, now)));
    json_object_object_add(o, "time_scale", json_object_new_double(f->o->time_scale));
    a = json_object_new_array();
    for (int i = 0; i < f->nvms; i++)
        json_object_array_add(a, s_vm_state(f, i));
    json_object_object_add(o, "vms", a);
    a = json_object_new_array();
    for (int i = 0; i < f->nevents; i++)
        json_object_array_add(a, s_event_state(f, f->events[i]));
    json_object_object_add(o, "events", a);
    a = json_object_new_array();
    for (int i = 0; i < f->nrollouts; i++) {
        rollout_t *r = f->rollouts[i];
        json_object *x = json_object_new_object(), *l = json_object_new_array();

        s_add_str(x, "RolloutId", r->id);
        s_add_str(x, "EventType", s_type_name[r->type]);
        for (int j = 0; j < r->nfds; j++)
            json_object_array_add(l, json_object_new_int(r->fds[j]));
        json_object_object_add(x, "FaultDomains", l);
        l = json_object_new_array();
        for (int j = 0; j < r->nevents; j++)
            json_object_array_add(l, json_object_new_string(f->events[r->events[j]]->id));
        json_object_object_add(x, "EventIds", l);
        json_object_object_add(
            x, "done",
            json_object_new_boolean(r->next == r->nfds &&
                                    !s_is_active(f->events[r->events[r->nevents - 1]])));
        json_object_array_add(a, x);
    }
    json_object_object_add(o, "rollouts", a);
    s_answer_json(ans, 200, o);
}

/* Reads the fields common to events and rollouts. 0 or -1 with *ret_why. */
typedef struct {
    ev_type_t type;
    bool user;
    double notice_s;
    int duration;
    const char *description;
} ev_spec_t;

static int s_parse_type(json_object *v, ev_type_t *ret, const char **ret_why)
{
    if (!v || !json_object_is_type(v, json_type_string)) {
        *ret_why = "EventType must be a string: Freeze, Reboot, Redeploy, Preempt or Terminate";
        return -1;
    }
    for (int i = 0; i < EV_TYPE_MAX; i++)
        if (strcmp(json_object_get_string(v), s_type_name[i]) == 0) {
            *ret = (ev_type_t)i;
            return 0;
        }
    *ret_why = "EventType must be Freeze, Reboot, Redeploy, Preempt or Terminate";
    return -1;
}

static int s_parse_notice(json_object *v, double *ret, const char **ret_why)
{
    double notice_s = json_object_get_double(v);

    if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double)) {
        *ret_why = "NoticeSeconds must be a number";
        return -1;
    }
    if (!(notice_s >= 0 && notice_s <= SIM_MAX_NOTICE_S)) {
        *ret_why = "NoticeSeconds must be between 0 and 604800";
        return -1;
    }
    *ret = notice_s;
    return 0;
}

static int s_parse_duration(json_object *v, int *ret, const char **ret_why)
{
    int64_t d = json_object_get_int64(v);

    if (!json_object_is_type(v, json_type_int) || d < -1 || d > SIM_MAX_DURATION_S) {
        *ret_why = "DurationInSeconds must be an integer between -1 and 86400";
        return -1;
    }
    *ret = (int)d;
    return 0;
}

/* Reads Resources: a non-empty array of distinct names of VMs of the set not deleted, into idx
 * (room for every VM). 0, or -1 with *ret_why (which may point into why). */
static int s_parse_resources(const sim_fabric_t *f, json_object *res, int *idx, int *ret_n,
                             char *why, size_t whylen, const char **ret_why)
{
    size_t len = json_object_is_type(res, json_type_array) ? json_object_array_length(res) : 0;
    int n = 0;

    if (len == 0 || len > (size_t)f->nvms) {
        *ret_why = "Resources must be a non-empty array of VM names of this set";
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        json_object *s = json_object_array_get_idx(res, i);
        const char *name =
            json_object_is_type(s, json_type_string) ? json_object_get_string(s) : "";
        int vi = s_vm_find(f, name, strlen(name));

        if (vi < 0)
            snprintf(why, whylen, "Resources: no VM named \"%.48s\" in this set", name);
        else if (f->vms[vi].deleted)
            snprintf(why, whylen, "Resources: \"%.48s\" was deleted (Preempt or Terminate)", name);
        else if (s_in(idx, n, vi))
            snprintf(why, whylen, "Resources: \"%.48s\" named twice", name);
        else {
            idx[n++] = vi;
            continue;
        }
        *ret_why = why;
        return -1;
    }
    *ret_n = n;
    return 0;
}

static int s_parse_spec(const sim_fabric_t *f, json_object *body, ev_spec_t *spec,
                        const char **ret_why)
{
    json_object *v;

    if (s_parse_type(json_object_object_get_ex(body, "EventType", &v) ? v : NULL, &spec->type,
                     ret_why) < 0)
        return -1;
    spec->user = false;
    if (json_object_object_get_ex(body, "EventSource", &v)) {
        const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";

        if (strcmp(s, "User") == 0)
            spec->user = true;
        else if (strcmp(s, "Platform") != 0) {
            *ret_why = "EventSource must be \"Platform\" or \"User\"";
            return -1;
        }
    }
    spec->notice_s =
        spec->type == EV_TERMINATE ? f->o->terminate_notice_s : s_default_notice[spec->type];
    if (json_object_object_get_ex(body, "NoticeSeconds", &v) &&
        s_parse_notice(v, &spec->notice_s, ret_why) < 0)
        return -1;
    spec->duration = s_default_duration[spec->type];
    if (json_object_object_get_ex(body, "DurationInSeconds", &v) &&
        s_parse_duration(v, &spec->duration, ret_why) < 0)
        return -1;
    spec->description = NULL;
    if (json_object_object_get_ex(body, "Description", &v)) {
        if (!json_object_is_type(v, json_type_string) ||
            strlen(json_object_get_string(v)) > SIM_MAX_DESCRIPTION) {
            *ret_why = "Description must be a string of at most 1024 bytes";
            return -1;
        }
        spec->description = json_object_get_string(v);
    }
    return 0;
}

/* Rejects keys other than the allowed ones, naming the first. */
static int s_check_keys(json_object *body, const char *const *allowed, char *why, size_t whylen)
{
    json_object_object_foreach(body, key, val)
    {
        bool ok = false;

        (void)val;
        for (const char *const *a = allowed; *a; a++)
            if (strcmp(key, *a) == 0)
                ok = true;
        if (!ok) {
            snprintf(why, whylen, "unknown field \"%.64s\"", key);
            return -1;
        }
    }
    return 0;
}

/* A control request's body: a JSON object (s_parse_object) with none but the allowed keys.
 * NULL with *ret_why (which may point into why) on failure. */
static json_object *s_control_body(const sim_request_t *req, const char *const *allowed, char *why,
                                   size_t whylen, const char **ret_why)
{
    json_object *body = s_parse_object(req, ret_why);

    if (body && s_check_keys(body, allowed, why, whylen) < 0) {
        json_object_put(body);
        *ret_why = why;
        return NULL;
    }
    return body;
}

static void s_control_create(sim_fabric_t *f, const sim_request_t *req, sim_answer_t *ans,
                             int64_t now)
{
    static const char *const allowed[] = {"EventType",   "Resources",     "FaultDomain",
                                          "EventSource", "NoticeSeconds", "DurationInSeconds",
                                          "Description", "Status",        NULL};
    const char *why = NULL;
    char whybuf[160];
    json_object *body = s_control_body(req, allowed, whybuf, sizeof(whybuf), &why), *v, *res = NULL,
                *fdv = NULL;
    ev_spec_t spec;
    int *idx = NULL, n = 0, rc;
    bool host_failure = false;
    sim_event_t *ev;

    if (!body)
        goto bad;
    if (s_parse_spec(f, body, &spec, &why) < 0)
        goto bad;
    if (json_object_object_get_ex(body, "Status", &v)) {
        const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";

        if (strcmp(s, "Started") == 0)
            host_failure = true;
        else if (strcmp(s, "Scheduled") != 0) {
            why = "Status must be \"Scheduled\" or \"Started\" (host failure)";
            goto bad;
        }
        if (host_failure && spec.type != EV_REBOOT) {
            why = "a host failure (Status \"Started\") is a Reboot";
            goto bad;
        }
    }
    json_object_object_get_ex(body, "Resources", &res);
    json_object_object_get_ex(body, "FaultDomain", &fdv);
    if (!res == !fdv) {
        why = "give either Resources or FaultDomain";
        goto bad;
    }
    if (!(idx = malloc(sizeof(int) * (size_t)f->nvms))) {
        why = "out of memory";
        goto bad;
    }
    if (res) {
        if (s_parse_resources(f, res, idx, &n, whybuf, sizeof(whybuf), &why) < 0)
            goto bad;
    } else {
        int64_t fd = json_object_get_int64(fdv);

        if (!json_object_is_type(fdv, json_type_int) || fd < 0 || fd >= f->nfds) {
            why = "FaultDomain must be an integer from 0 to fault-domains - 1";
            goto bad;
        }
        n = s_fd_members(f, (int)fd, idx);
        if (n == 0) {
            why = "that fault domain has no VM left";
            goto bad;
        }
    }
    if (host_failure && !json_object_object_get_ex(body, "Description", &v))
        spec.description = "Virtual machine is being restarted because of a host failure.";
    if (!spec.description && spec.user && (spec.type == EV_REBOOT || spec.type == EV_REDEPLOY))
        spec.description = spec.type == EV_REBOOT
                               ? "Virtual machine is going to be restarted as requested by "
                                 "authorized user."
                               : "Virtual machine is going to be redeployed as requested by "
                                 "authorized user.";
    rc = s_event_create(f, spec.type, spec.user, spec.notice_s, spec.duration, spec.description,
                        idx, n, host_failure, -1, now, &ev);
    if (rc < 0) {
        why = rc == -ENOSPC ? "too many events (4096)" : "out of memory";
        free(idx);
        json_object_put(body);
        s_answer_error(ans, rc == -ENOSPC ? 507 : 500, "%s", why);
        return;
    }
    free(idx);
    json_object_put(body);
    s_answer_json(ans, 200, s_event_state(f, ev));
    return;
bad:
    free(idx);
    json_object_put(body);
    s_answer_error(ans, 400, "POST /control/events: %s", why);
}

static void s_control_maintenance(sim_fabric_t *f, const sim_request_t *req, sim_answer_t *ans,
                                  int64_t now)
{
    static const char *const allowed[] = {"EventType",         "EventSource", "NoticeSeconds",
                                          "DurationInSeconds", "Description", "FaultDomains",
                                          "GapSeconds",        NULL};
    const char *why = NULL;
    char whybuf[160];
    json_object *body = s_control_body(req, allowed, whybuf, sizeof(whybuf), &why), *v, *out, *ids;
    ev_spec_t spec;
    rollout_t *r = NULL;
    rollout_t **grown;
    sim_event_t *ev;
    double gap = 0;

    if (!body)
        goto bad;
    if (s_parse_spec(f, body, &spec, &why) < 0)
        goto bad;
    if (json_object_object_get_ex(body, "GapSeconds", &v)) {
        gap = json_object_get_double(v);
        if ((!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double)) ||
            !(gap >= 0 && gap <= SIM_MAX_NOTICE_S)) {
            why = "GapSeconds must be a number between 0 and 604800";
            goto bad;
        }
    }
    if (f->nrollouts >= 256) {
        why = "too many rollouts (256)";
        goto bad;
    }
    if (!(r = calloc(1, sizeof(*r))) || !(r->fds = calloc((size_t)f->nfds, sizeof(int))) ||
        !(r->events = calloc((size_t)f->nfds, sizeof(int)))) {
        why = "out of memory";
        goto bad;
    }
    if (json_object_object_get_ex(body, "FaultDomains", &v)) {
        size_t len = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;

        if (len == 0 || len > (size_t)f->nfds) {
            why = "FaultDomains must be a non-empty array of distinct fault domains";
            goto bad;
        }
        for (size_t i = 0; i < len; i++) {
            json_object *x = json_object_array_get_idx(v, i);
            int64_t fd = json_object_get_int64(x);

            if (!json_object_is_type(x, json_type_int) || fd < 0 || fd >= f->nfds) {
                why = "FaultDomains: every entry must be a fault domain number";
                goto bad;
            }
            for (int j = 0; j < r->nfds; j++)
                if (r->fds[j] == fd) {
                    why = "FaultDomains: a fault domain is named twice";
                    goto bad;
                }
            r->fds[r->nfds++] = (int)fd;
        }
    } else {
        for (int fd = 0; fd < f->nfds; fd++)
            if (s_fd_ever(f, fd))
                r->fds[r->nfds++] = fd;
    }
    for (int j = 0; j < r->nfds; j++)
        if (!s_fd_ever(f, r->fds[j])) {
            why = "FaultDomains: a fault domain has no VM";
            goto bad;
        }
    {
        int left = 0;

        for (int j = 0; j < r->nfds; j++)
            left += s_fd_members(f, r->fds[j], NULL);
        if (left == 0) {
            why = "every VM of those fault domains was deleted";
            goto bad;
        }
    }
    if (spec.description && !(r->description = strdup(spec.description))) {
        why = "out of memory";
        goto bad;
    }
    if (!(grown = realloc(f->rollouts, sizeof(*grown) * (size_t)(f->nrollouts + 1)))) {
        why = "out of memory";
        goto bad;
    }
    f->rollouts = grown;
    snprintf(r->id, sizeof(r->id), "rollout-%d", f->nrollouts + 1);
    r->type = spec.type;
    r->user = spec.user;
    r->notice_s = spec.notice_s;
    r->duration = spec.duration;
    r->gap_ms = s_real_ms(f, gap);
    f->rollouts[f->nrollouts++] = r;
    json_object_put(body);
    if (s_rollout_create_next(f, f->nrollouts - 1, now, &ev) < 0) {
        s_answer_error(ans, 507, "could not create the first event (too many events)");
        return;
    }
    out = json_object_new_object();
    s_add_str(out, "RolloutId", r->id);
    ids = json_object_new_array();
    json_object_array_add(ids, json_object_new_string(ev->id));
    json_object_object_add(out, "EventIds", ids);
    s_answer_json(ans, 200, out);
    return;
bad:
    if (r) {
        free(r->fds);
        free(r->events);
        free(r->description);
        free(r);
    }
    json_object_put(body);
    s_answer_error(ans, 400, "POST /control/maintenance: %s", why);
}

/* PATCH /control/events/<id>: changes a Scheduled event's Resources, DurationInSeconds,
 * EventType or NotBefore (NoticeSeconds from now, as at creation). A Description that was
 * the old type's default becomes the new type's. A change is one new document for every VM
 * that sees the event before or after it: each of their DocumentIncarnations moves by one;
 * a PATCH that changes nothing moves none. */
static void s_control_patch(sim_fabric_t *f, const sim_request_t *req, sim_answer_t *ans,
                            sim_event_t *ev, int64_t now)
{
    static const char *const allowed[] = {"Resources", "DurationInSeconds", "EventType",
                                          "NoticeSeconds", NULL};
    const char *why = NULL;
    char whybuf[160];
    json_object *body = s_control_body(req, allowed, whybuf, sizeof(whybuf), &why), *v, *o;
    int *idx = NULL, *res = NULL, *old_res, old_nres, n = 0, duration = ev->duration;
    ev_type_t type = ev->type;
    sim_event_t after = *ev; /* its NotBefore fields: the new NotBefore */
    char *desc = NULL, nb[64];
    bool res_changed, changed;

    if (!body)
        goto bad;
    if (json_object_object_length(body) == 0) {
        why = "give one or more of Resources, DurationInSeconds, EventType, NoticeSeconds";
        goto bad;
    }
    if (json_object_object_get_ex(body, "Resources", &v) &&
        (!(idx = malloc(sizeof(int) * (size_t)f->nvms)) ||
         s_parse_resources(f, v, idx, &n, whybuf, sizeof(whybuf), &why) < 0)) {
        if (!idx)
            why = "out of memory";
        goto bad;
    }
    if (json_object_object_get_ex(body, "DurationInSeconds", &v) &&
        s_parse_duration(v, &duration, &why) < 0)
        goto bad;
    if (json_object_object_get_ex(body, "EventType", &v) && s_parse_type(v, &type, &why) < 0)
        goto bad;
    if (json_object_object_get_ex(body, "NoticeSeconds", &v)) {
        double notice_s;

        if (s_parse_notice(v, &notice_s, &why) < 0)
            goto bad;
        s_set_notbefore(f, &after, notice_s, now);
    }
    json_object_put(body);
    if (ev->status != ST_SCHEDULED) {
        free(idx);
        s_answer_error(ans, 409, "event %s is %s: only a Scheduled event can be changed", ev->id,
                       s_status_name[ev->status]);
        return;
    }
    res_changed = idx && (n != ev->nres || memcmp(idx, ev->res, sizeof(int) * (size_t)n) != 0);
    if ((res_changed && !(res = malloc(sizeof(int) * (size_t)n))) ||
        (type != ev->type && strcmp(ev->description, s_default_desc[ev->type]) == 0 &&
         !(desc = strdup(s_default_desc[type])))) {
        free(idx);
        free(res);
        s_answer_error(ans, 500, "out of memory");
        return;
    }
    changed = res_changed || duration != ev->duration || type != ev->type ||
              after.notbefore_wall_s != ev->notbefore_wall_s;
    o = s_fact(f, now, "updated");
    s_add_str(o, "event", ev->id);
    old_res = ev->res;
    old_nres = ev->nres;
    if (res_changed) {
        ev->res = res;
        s_set_res(f, ev, idx, n);
        json_object_object_add(o, "resources", s_res_names(f, ev));
    }
    if (duration != ev->duration) {
        s_set_duration(f, ev, duration);
        s_add_int(o, "duration", duration);
    }
    if (type != ev->type) {
        ev->type = type;
        s_add_str(o, "event_type", s_type_name[type]);
    }
    if (desc) {
        free(ev->description);
        ev->description = desc;
    }
    if (after.notbefore_wall_s != ev->notbefore_wall_s) {
        ev->notbefore_wall_s = after.notbefore_wall_s;
        ev->notbefore_ms = after.notbefore_ms;
        s_add_str(o, "not_before", sc_time_rfc1123(ev->notbefore_wall_s, nb, sizeof(nb)));
    }
    if (ev->fd >= 0)
        s_add_int(o, "fault_domain", ev->fd);
    s_emit(f, o);
    for (int i = 0; changed && i < f->nvms; i++)
        if (s_sees(f, i, ev) || s_in(old_res, old_nres, i))
            f->vms[i].incarnation++;
    if (res_changed)
        free(old_res);
    free(idx);
    s_answer_json(ans, 200, s_event_state(f, ev));
    return;
bad:
    free(idx);
    json_object_put(body);
    s_answer_error(ans, 400, "PATCH /control/events/%s: %s", ev->id, why);
}

/* A new VM in vm's slot, or the same VM with a new disk: a new vmId and a new IMDS service
 * (DocumentIncarnation from 1, its first call answered as a first call, no fault pending). */
static void s_vm_renew(sim_fabric_t *f, sim_vm_t *vm)
{
    vm->deleted = false;
    vm->enabled = false;
    vm->incarnation = 1;
    vm->fault = FAULT_NONE;
    vm->fault_count = 0;
    if (vm->recent)
        memset(vm->recent, 0, sizeof(int64_t) * (size_t)f->o->rate_limit);
    vm->recent_pos = 0;
    s_guid(f, vm->vmid);
}

/* Whether s (NUL-terminated) is 1..max bytes of letters, digits, '.', '_' and '-': a VM name
 * is a path segment of the IMDS URL (/<vm>/metadata/...). */
static bool s_is_token(const char *s, size_t max)
{
    size_t n = strlen(s);

    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
            return false;
    return true;
}

/* Reads an optional integer domain field (0..SIM_MAX_DOMAIN - 1) into *ret. 0 or -1. */
static int s_parse_domain(json_object *body, const char *key, int *ret, char *why, size_t whylen)
{
    json_object *v;
    int64_t d;

    if (!json_object_object_get_ex(body, key, &v))
        return 0;
    d = json_object_get_int64(v);
    if (!json_object_is_type(v, json_type_int) || d < 0 || d >= SIM_MAX_DOMAIN) {
        snprintf(why, whylen, "%s must be an integer from 0 to %d", key, SIM_MAX_DOMAIN - 1);
        return -1;
    }
    *ret = (int)d;
    return 0;
}

/* Reads an optional string field into out (room for max bytes + NUL); empty allowed only when
 * allow_empty. 0 or -1. */
static int s_parse_token(json_object *body, const char *key, char *out, size_t max,
                         bool allow_empty, char *why, size_t whylen)
{
    json_object *v;
    const char *t;

    if (!json_object_object_get_ex(body, key, &v))
        return 0;
    t = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
    if (!t || !((allow_empty && !*t) || s_is_token(t, max))) {
        snprintf(why, whylen, "%s must be a string of %s1 to %zu letters, digits, '.', '_' or '-'",
                 key, allow_empty ? "0 or " : "", max);
        return -1;
    }
    snprintf(out, max + 1, "%s", t);
    return 0;
}

/* The index of placement group id in f->pgs, added when new. -1 on ENOMEM or too many. */
static int s_pg_intern(sim_fabric_t *f, const char *id)
{
    char(*grown)[SIM_MAX_PG];

    for (int i = 0; i < f->npgs; i++)
        if (strcmp(f->pgs[i], id) == 0)
            return i;
    if (f->npgs >= SIM_MAX_VMS || !(grown = realloc(f->pgs, SIM_MAX_PG * (size_t)(f->npgs + 1))))
        return -1;
    f->pgs = grown;
    snprintf(f->pgs[f->npgs], SIM_MAX_PG, "%s", id);
    return f->npgs++;
}

/* A slot for a VM more at the end of f->vms (zeroed, its rate-limit ring allocated). Its
 * index, or -1 on ENOMEM. */
static int s_vm_slot_new(sim_fabric_t *f)
{
    int i = f->nvms;

    if (f->nvms == f->cap_vms) {
        int cap = f->cap_vms * 2 > SIM_MAX_VMS ? SIM_MAX_VMS : f->cap_vms * 2;
        sim_vm_t *grown = realloc(f->vms, sizeof(*grown) * (size_t)cap);

        if (!grown)
            return -1;
        f->vms = grown;
        memset(&f->vms[f->cap_vms], 0, sizeof(*grown) * (size_t)(cap - f->cap_vms));
        f->cap_vms = cap;
    }
    if (f->o->rate_limit > 0 &&
        !(f->vms[i].recent = calloc((size_t)f->o->rate_limit, sizeof(int64_t))))
        return -1;
    f->nvms++;
    return i;
}

/* POST /control/vms: a VM joins the set (scale-out), with its own IMDS under /<name>/. A name
 * that a deleted VM had comes back in that VM's slot, as a new VM (Azure reuses the instance
 * names of a uniform scale set); the name of a VM not deleted is refused (409). */
static void s_control_vm_add(sim_fabric_t *f, const sim_request_t *req, sim_answer_t *ans,
                             int64_t now)
{
    static const char *const allowed[] = {
        "name", "fault_domain", "update_domain", "priority", "placement_group", "zone", NULL};
    const char *why = NULL;
    char whybuf[160], name[SIM_MAX_NAME] = "", pg[SIM_MAX_PG], zone[SIM_MAX_ZONE] = "";
    json_object *body = s_control_body(req, allowed, whybuf, sizeof(whybuf), &why), *v, *o;
    int vi, fd = -1, ud = -1, pgi;
    bool spot = false;
    sim_vm_t *vm;

    if (!body)
        goto bad;
    if (!json_object_object_get_ex(body, "name", &v)) {
        why = "name is missing";
        goto bad;
    }
    if (s_parse_token(body, "name", name, SIM_MAX_NAME - 1, false, whybuf, sizeof(whybuf)) < 0 ||
        s_parse_domain(body, "fault_domain", &fd, whybuf, sizeof(whybuf)) < 0 ||
        s_parse_domain(body, "update_domain", &ud, whybuf, sizeof(whybuf)) < 0 ||
        s_parse_token(body, "zone", zone, SIM_MAX_ZONE - 1, true, whybuf, sizeof(whybuf)) < 0) {
        why = whybuf;
        goto bad;
    }
    if (strcmp(name, "control") == 0) { /* /control/... is the control API */
        why = "name \"control\" is taken by the control API";
        goto bad;
    }
    if (json_object_object_get_ex(body, "priority", &v)) {
        const char *t = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";

        if (strcmp(t, "Spot") == 0)
            spot = true;
        else if (strcmp(t, "Regular") != 0) {
            why = "priority must be \"Regular\" or \"Spot\"";
            goto bad;
        }
    }
    snprintf(pg, sizeof(pg), "%s", f->pgs[0]);
    if (s_parse_token(body, "placement_group", pg, SIM_MAX_PG - 1, false, whybuf, sizeof(whybuf)) <
        0) {
        why = whybuf;
        goto bad;
    }
    json_object_put(body);
    vi = s_vm_find(f, name, strlen(name));
    if (vi >= 0 && !f->vms[vi].deleted) {
        s_answer_error(ans, 409, "POST /control/vms: name \"%s\" is a VM of the set (not deleted)",
                       name);
        return;
    }
    if (vi >= 0 && f->vms[vi].impacts > 0) {
        s_answer_error(ans, 409,
                       "POST /control/vms: %s is still impacted: add it again after its "
                       "impact_end",
                       name);
        return;
    }
    if (vi < 0 && f->nvms >= SIM_MAX_VMS) {
        s_answer_error(ans, 507, "POST /control/vms: the set holds at most %d VMs", SIM_MAX_VMS);
        return;
    }
    if ((pgi = s_pg_intern(f, pg)) < 0 || (vi < 0 && (vi = s_vm_slot_new(f)) < 0)) {
        s_answer_error(ans, 500, "POST /control/vms: out of memory");
        return;
    }
    vm = &f->vms[vi];
    snprintf(vm->name, sizeof(vm->name), "%s", name);
    vm->fd = fd >= 0 ? fd : vi % f->o->fault_domains;
    vm->ud = ud >= 0 ? ud : vi % f->o->update_domains;
    vm->pg = pgi;
    vm->spot = spot;
    snprintf(vm->zone, sizeof(vm->zone), "%s", zone);
    vm->own_only = false;
    s_vm_renew(f, vm);
    if (vm->fd >= f->nfds)
        f->nfds = vm->fd + 1;
    o = s_fact(f, now, "added");
    s_add_str(o, "vm", vm->name);
    s_add_str(o, "vm_id", vm->vmid);
    s_add_int(o, "fault_domain", vm->fd);
    s_add_int(o, "update_domain", vm->ud);
    s_add_str(o, "placement_group", f->pgs[vm->pg]);
    s_add_str(o, "priority", vm->spot ? "Spot" : "Regular");
    s_add_str(o, "zone", vm->zone);
    s_emit(f, o);
    s_answer_json(ans, 200, s_vm_state(f, vi));
    return;
bad:
    json_object_put(body);
    s_answer_error(ans, 400, "POST /control/vms: %s", why);
}

/* Whether an active scale-in Terminate names vmi; its EventId in *ret_id. */
static bool s_scale_in_pending(const sim_fabric_t *f, int vmi, const char **ret_id)
{
    for (int i = 0; i < f->nevents; i++) {
        const sim_event_t *ev = f->events[i];

        if (ev->scale_in && s_is_active(ev) && s_in(ev->res, ev->nres, vmi)) {
            *ret_id = ev->id;
            return true;
        }
    }
    return false;
}

/* DELETE /control/vms/<vm> (vmi, the body optional) or DELETE /control/vms (vmi -1, the
 * names in the body): a scale-in. Each VM gets a Terminate of its own, all with the same
 * NotBefore, notice_seconds (default --terminate-notice) ahead; approved (POST) or at
 * NotBefore it starts, and its impact deletes the VM as any Terminate does. */
static void s_control_scale_in(sim_fabric_t *f, const sim_request_t *req, sim_answer_t *ans,
                               int vmi, int64_t now)
{
    static const char *const allowed_one[] = {"notice_seconds", NULL};
    static const char *const allowed_set[] = {"names", "notice_seconds", NULL};
    const char *why = NULL, *pending;
    char whybuf[160];
    json_object *body = NULL, *v, *names = NULL, *out;
    int *idx = NULL, n = 0;
    double notice_s = f->o->terminate_notice_s;
    const char *what = vmi >= 0 ? "DELETE /control/vms/<vm>" : "DELETE /control/vms";

    if (vmi < 0 || req->body_len || req->body_too_big) {
        body =
            s_control_body(req, vmi >= 0 ? allowed_one : allowed_set, whybuf, sizeof(whybuf), &why);
        if (!body)
            goto bad;
    }
    if (body && json_object_object_get_ex(body, "notice_seconds", &v)) {
        notice_s = json_object_get_double(v);
        if ((!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double)) ||
            !(notice_s >= 0 && notice_s <= SIM_MAX_NOTICE_S)) {
            why = "notice_seconds must be a number between 0 and 604800";
            goto bad;
        }
    }
    if (!(idx = malloc(sizeof(int) * (size_t)f->nvms))) {
        why = "out of memory";
        goto bad;
    }
    if (vmi >= 0) {
        idx[n++] = vmi;
    } else {
        size_t len;

        json_object_object_get_ex(body, "names", &names);
        len = json_object_is_type(names, json_type_array) ? json_object_array_length(names) : 0;
        if (len == 0 || len > (size_t)f->nvms) {
            why = "names must be a non-empty array of VM names of this set";
            goto bad;
        }
        for (size_t i = 0; i < len; i++) {
            json_object *x = json_object_array_get_idx(names, i);
            const char *t =
                json_object_is_type(x, json_type_string) ? json_object_get_string(x) : "";
            int vi = s_vm_find(f, t, strlen(t));

            if (vi < 0 || s_in(idx, n, vi)) {
                snprintf(whybuf, sizeof(whybuf), "names: %s \"%.48s\"",
                         vi < 0 ? "no VM named" : "named twice:", t);
                why = whybuf;
                goto bad;
            }
            idx[n++] = vi;
        }
    }
    for (int i = 0; i < n; i++) {
        const sim_vm_t *vm = &f->vms[idx[i]];

        if (vm->deleted)
            s_answer_error(ans, 409, "%s: %s is already deleted", what, vm->name);
        else if (s_scale_in_pending(f, idx[i], &pending))
            s_answer_error(ans, 409, "%s: %s is already being scaled in (Terminate %s)", what,
                           vm->name, pending);
        else
            continue;
        free(idx);
        json_object_put(body);
        return;
    }
    json_object_put(body);
    out = json_object_new_array();
    for (int i = 0; i < n; i++) {
        sim_event_t *ev;
        json_object *o;
        char nb[64];
        int rc = s_event_create(f, EV_TERMINATE, false, notice_s, s_default_duration[EV_TERMINATE],
                                NULL, &idx[i], 1, false, -1, now, &ev);

        if (rc < 0) {
            free(idx);
            json_object_put(out);
            s_answer_error(ans, rc == -ENOSPC ? 507 : 500, "%s: %s", what,
                           rc == -ENOSPC ? "too many events (4096)" : "out of memory");
            return;
        }
        ev->scale_in = true;
        o = s_fact(f, now, "scale_in");
        s_add_str(o, "vm", f->vms[idx[i]].name);
        s_add_str(o, "event", ev->id);
        s_add_str(o, "not_before", sc_time_rfc1123(ev->notbefore_wall_s, nb, sizeof(nb)));
        s_emit(f, o);
        json_object_array_add(out, s_event_state(f, ev));
    }
    free(idx);
    if (vmi >= 0) { /* one VM: its event */
        json_object *ev = json_object_get(json_object_array_get_idx(out, 0));

        json_object_put(out);
        out = ev;
    }
    s_answer_json(ans, 200, out);
    return;
bad:
    free(idx);
    json_object_put(body);
    s_answer_error(ans, 400, "%s: %s", what, why);
}

/* POST /control/vms/<vm>/reimage: the VM's OS disk is replaced, under the same name, fault
 * and update domain: --on-impact runs start, reimage (wipe the VM's state) and end, in that
 * order, with EventType "Reimage" and the new vmId; its IMDS service is new (s_vm_renew). */
static void s_control_reimage(sim_fabric_t *f, const sim_request_t *req, sim_answer_t *ans, int vmi,
                              int64_t now)
{
    static const char *const allowed[] = {NULL};
    sim_vm_t *vm = &f->vms[vmi];
    const char *why = NULL;
    char whybuf[160], old[37];
    json_object *o;

    if (req->body_len || req->body_too_big) {
        if (!(o = s_control_body(req, allowed, whybuf, sizeof(whybuf), &why))) {
            s_answer_error(ans, 400, "POST /control/vms/%s/reimage: %s", vm->name, why);
            return;
        }
        json_object_put(o);
    }
    if (vm->deleted) {
        s_answer_error(ans, 409, "%s is deleted: re-create it (or add it again), not reimage it",
                       vm->name);
        return;
    }
    if (vm->impacts > 0) {
        s_answer_error(ans, 409, "%s is impacted: reimage it after its impact_end", vm->name);
        return;
    }
    snprintf(old, sizeof(old), "%s", vm->vmid);
    s_vm_renew(f, vm);
    for (int ph = HOOK_START; ph < HOOK_MAX; ph++)
        s_hook_queue(f, vmi, (hook_phase_t)ph, "Reimage", vm->vmid);
    o = s_fact(f, now, "reimaged");
    s_add_str(o, "vm", vm->name);
    s_add_int(o, "fault_domain", vm->fd);
    s_add_str(o, "vm_id", vm->vmid);
    s_add_str(o, "old_vm_id", old);
    s_emit(f, o);
    s_answer_json(ans, 200, s_vm_state(f, vmi));
}

/* POST /control/vms/<vm>/recreate: a deleted VM comes back under its name (a Spot VM
 * restarted, a VM re-created): a new vmId and a new IMDS service (DocumentIncarnation from
 * 1, its first call answered as a first call, no fault pending). Refused while an impact on
 * it still runs: its end would count against the new VM. */
static void s_control_recreate(sim_fabric_t *f, const sim_request_t *req, sim_answer_t *ans,
                               int vmi, int64_t now)
{
    static const char *const allowed[] = {NULL};
    sim_vm_t *vm = &f->vms[vmi];
    const char *why = NULL;
    char whybuf[160];
    json_object *o;

    /* No body, or an empty JSON object. */
    if (req->body_len || req->body_too_big) {
        if (!(o = s_control_body(req, allowed, whybuf, sizeof(whybuf), &why))) {
            s_answer_error(ans, 400, "POST /control/vms/%s/recreate: %s", vm->name, why);
            return;
        }
        json_object_put(o);
    }
    if (!vm->deleted) {
        s_answer_error(ans, 409, "%s is not deleted: only a deleted VM can be re-created",
                       vm->name);
        return;
    }
    if (vm->impacts > 0) {
        s_answer_error(ans, 409, "%s is still impacted: re-create it after its impact_end",
                       vm->name);
        return;
    }
    s_vm_renew(f, vm);
    o = s_fact(f, now, "recreated");
    s_add_str(o, "vm", vm->name);
    s_add_int(o, "fault_domain", vm->fd);
    s_add_str(o, "vm_id", vm->vmid);
    s_emit(f, o);
    s_answer_json(ans, 200, s_vm_state(f, vmi));
}

static void s_control_faults(sim_fabric_t *f, const sim_request_t *req, sim_answer_t *ans)
{
    static const char *const allowed[] = {"vm", "answer", "count", NULL};
    const char *why = NULL;
    char whybuf[160];
    json_object *body = s_control_body(req, allowed, whybuf, sizeof(whybuf), &why), *v, *a;
    fault_t fault = FAULT_NONE;
    int status = 0, vmi = -1;
    int64_t count = 1;
    const char *name;

    if (!body)
        goto bad;
    if (!json_object_object_get_ex(body, "vm", &v) || !json_object_is_type(v, json_type_string)) {
        why = "vm must be a VM name or \"*\"";
        goto bad;
    }
    name = json_object_get_string(v);
    if (strcmp(name, "*") != 0 && (vmi = s_vm_find(f, name, strlen(name))) < 0) {
        snprintf(whybuf, sizeof(whybuf), "no VM named \"%.48s\" in this set", name);
        why = whybuf;
        goto bad;
    }
    if (!json_object_object_get_ex(body, "answer", &a)) {
        why = "answer is missing";
        goto bad;
    }
    if (json_object_is_type(a, json_type_int)) {
        int64_t s = json_object_get_int64(a);

        if (s < 400 || s > 599) {
            why = "answer: an HTTP status must be 400-599";
            goto bad;
        }
        fault = FAULT_STATUS;
        status = (int)s;
    } else if (json_object_is_type(a, json_type_string)) {
        const char *s = json_object_get_string(a);

        for (int i = FAULT_TIMEOUT; i < FAULT_MAX; i++)
            if (strcmp(s, s_fault_name[i]) == 0)
                fault = (fault_t)i;
    }
    if (fault == FAULT_NONE) {
        why = "answer must be an HTTP status (e.g. 500, 429, 410) or \"timeout\", \"garbage\", "
              "\"empty\", \"reset\" or \"bad_event\"";
        goto bad;
    }
    if (json_object_object_get_ex(body, "count", &v)) {
        count = json_object_get_int64(v);
        if (!json_object_is_type(v, json_type_int) || count < 0 || count > SIM_MAX_FAULT_COUNT) {
            why = "count must be an integer from 0 to 1000000";
            goto bad;
        }
    }
    for (int i = 0; i < f->nvms; i++) {
        if (vmi >= 0 && i != vmi)
            continue;
        f->vms[i].fault = count ? fault : FAULT_NONE;
        f->vms[i].fault_status = status;
        f->vms[i].fault_count = (int)count;
    }
    {
        json_object *o = json_object_new_object();

        s_add_str(o, "vm", name);
        json_object_object_add(o, "answer", json_object_get(a));
        s_add_int(o, "count", count);
        json_object_put(body);
        s_answer_json(ans, 200, o);
    }
    return;
bad:
    json_object_put(body);
    s_answer_error(ans, 400, "POST /control/faults: %s", why);
}

void sim_fabric_control(sim_fabric_t *f, const sim_request_t *req, sim_answer_t *ans)
{
    const char *p = req->url + strlen("/control");
    const char *m = req->method;
    int64_t now;

    memset(ans, 0, sizeof(*ans));
    if (req->bad_query) {
        s_answer_error(ans, 400, "%s", req->bad_query);
        return;
    }
    pthread_mutex_lock(&f->lock);
    now = sc_mono_ms();
    if (strcmp(p, "/state") == 0) {
        if (strcmp(m, "GET") != 0)
            goto method;
        s_control_state(f, ans, now);
    } else if (strcmp(p, "/timeline") == 0) {
        uint64_t since = 0;

        if (strcmp(m, "GET") != 0)
            goto method;
        if (req->query_since) {
            char *end;

            errno = 0;
            since = strtoull(req->query_since, &end, 10);
            if (errno || *end || end == req->query_since) {
                s_answer_error(ans, 400, "since must be a timeline seq number");
                goto out;
            }
        }
        ans->kind = SIM_ANS_RESPOND;
        ans->status = 200;
        ans->content_type = "application/json; charset=utf-8";
        if (!(ans->body = sim_timeline_array(f->tl, since, &ans->body_len)))
            s_answer_error(ans, 500, "out of memory");
    } else if (strcmp(p, "/events") == 0) {
        if (strcmp(m, "POST") != 0)
            goto method;
        s_control_create(f, req, ans, now);
    } else if (strncmp(p, "/events/", 8) == 0) {
        sim_event_t *ev = s_event_find(f, p + 8);

        if (!ev) {
            s_answer_error(ans, 404, "no event %.64s", p + 8);
        } else if (strcmp(m, "GET") == 0) {
            s_answer_json(ans, 200, s_event_state(f, ev));
        } else if (strcmp(m, "PATCH") == 0) {
            s_control_patch(f, req, ans, ev, now);
        } else if (strcmp(m, "DELETE") == 0) {
            if (ev->status != ST_SCHEDULED) {
                s_answer_error(ans, 409, "event %s is %s: only a Scheduled event can be cancelled",
                               ev->id, s_status_name[ev->status]);
            } else {
                s_finish(f, ev, ST_CANCELLED, now);
                s_answer_json(ans, 200, s_event_state(f, ev));
            }
        } else {
            goto method;
        }
    } else if (strcmp(p, "/maintenance") == 0) {
        if (strcmp(m, "POST") != 0)
            goto method;
        s_control_maintenance(f, req, ans, now);
    } else if (strcmp(p, "/faults") == 0) {
        if (strcmp(m, "POST") != 0)
            goto method;
        s_control_faults(f, req, ans);
    } else if (strcmp(p, "/vms") == 0) {
        if (strcmp(m, "POST") == 0)
            s_control_vm_add(f, req, ans, now);
        else if (strcmp(m, "DELETE") == 0)
            s_control_scale_in(f, req, ans, -1, now);
        else
            goto method;
    } else if (strncmp(p, "/vms/", 5) == 0 &&
               (!strchr(p + 5, '/') || strcmp(strchr(p + 5, '/'), "/recreate") == 0 ||
                strcmp(strchr(p + 5, '/'), "/reimage") == 0)) {
        const char *name = p + 5, *op = strchr(name, '/');
        size_t len = op ? (size_t)(op - name) : strlen(name);
        int vi = s_vm_find(f, name, len);

        if (vi < 0)
            s_answer_error(ans, 404, "no VM named %.*s in this set", (int)(len > 64 ? 64 : len),
                           name);
        else if (!op && strcmp(m, "DELETE") == 0)
            s_control_scale_in(f, req, ans, vi, now);
        else if (!op || strcmp(m, "POST") != 0)
            goto method;
        else if (strcmp(op, "/recreate") == 0)
            s_control_recreate(f, req, ans, vi, now);
        else
            s_control_reimage(f, req, ans, vi, now);
    } else {
        s_answer_error(ans, 404,
                       "no such control path: use /control/events, /control/events/<id>, "
                       "/control/maintenance, /control/faults, /control/vms, /control/vms/<vm>, "
                       "/control/vms/<vm>/recreate, /control/vms/<vm>/reimage, /control/state, "
                       "/control/timeline");
    }
    goto out;
method:
    s_answer_error(ans, 405, "method %s not allowed on %.64s", m, req->url);
out:
    pthread_mutex_unlock(&f->lock);
}

/* ---------------------------------------------------------------- life */

static int s_split_hook(sim_fabric_t *f, const char *cmd)
{
    char *copy = strdup(cmd), *save = NULL, *w;

    if (!copy)
        return -ENOMEM;
    if (!(f->hook_argv = calloc(60, sizeof(char *)))) {
        free(copy);
        return -ENOMEM;
    }
    for (w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (f->hook_argc == 59) {
            free(copy);
            return -E2BIG;
        }
        if (!(f->hook_argv[f->hook_argc++] = strdup(w))) {
            free(copy);
            return -ENOMEM;
        }
    }
    free(copy);
    return f->hook_argc ? 0 : -EINVAL;
}

int sim_fabric_new(const sim_opts_t *o, sim_fabric_t **ret_fabric, const char **ret_why)
{
    sim_fabric_t *f = calloc(1, sizeof(*f));
    int rc = -ENOMEM;

    *ret_why = "out of memory";
    if (!f)
        return -ENOMEM;
    pthread_mutex_init(&f->lock, NULL);
    f->o = o;
    f->nvms = f->cap_vms = o->vms;
    f->nfds = o->fault_domains;
    f->rng = o->seed * 0x9E3779B97F4A7C15ULL + 0x1234567ULL;
    if (!f->rng)
        f->rng = 1;
    f->t0_mono = sc_mono_ms();
    f->t0_wall = sc_wall_ms();
    if (!(f->vms = calloc((size_t)o->vms, sizeof(*f->vms))) || !(f->pgs = calloc(1, SIM_MAX_PG)))
        goto fail;
    {
        /* The set's placement group id: drawn from the seed, not from the sequence of the
         * EventIds and vmIds, which stay what they were before placement groups. */
        uint64_t x = (o->seed + 1) * 0xD1B54A32D192ED03ULL;

        s_guid_of(&x, f->pgs[f->npgs++]);
    }
    for (int i = 0; i < o->vms; i++) {
        sim_vm_t *vm = &f->vms[i];

        snprintf(vm->name, sizeof(vm->name), "%s%d", o->prefix, i);
        s_guid(f, vm->vmid);
        vm->fd = i % o->fault_domains;
        vm->ud = i % o->update_domains;
        vm->incarnation = 1;
        if (o->rate_limit > 0 && !(vm->recent = calloc((size_t)o->rate_limit, sizeof(int64_t))))
            goto fail;
    }
    if (o->own_events) {
        char *copy = strdup(o->own_events), *save = NULL, *w;

        if (!copy)
            goto fail;
        for (w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
            int vi = s_vm_find(f, w, strlen(w));

            if (vi < 0) {
                free(copy);
                *ret_why = "--own-events-only names a VM that is not in the set";
                rc = -EINVAL;
                goto fail;
            }
            f->vms[vi].own_only = true;
        }
        free(copy);
    }
    if (o->on_impact && (rc = s_split_hook(f, o->on_impact)) < 0) {
        *ret_why = "--on-impact: give a command (at most 59 words)";
        goto fail;
    }
    if ((rc = sim_timeline_new(o->timeline_path, o->timeline_keep, &f->tl)) < 0) {
        *ret_why = "--timeline: cannot open the file for appending";
        goto fail;
    }
    *ret_fabric = f;
    return 0;
fail:
    sim_fabric_destroy(&f);
    return rc;
}

void sim_fabric_destroy(sim_fabric_t **fabric)
{
    sim_fabric_t *f = fabric ? *fabric : NULL;

    if (!f)
        return;
    for (int i = 0; i < f->nevents; i++) {
        free(f->events[i]->res);
        free(f->events[i]->appr);
        free(f->events[i]->description);
        free(f->events[i]);
    }
    free(f->events);
    for (int i = 0; i < f->nrollouts; i++) {
        free(f->rollouts[i]->fds);
        free(f->rollouts[i]->events);
        free(f->rollouts[i]->description);
        free(f->rollouts[i]);
    }
    free(f->rollouts);
    if (f->vms)
        for (int i = 0; i < f->nvms; i++)
            free(f->vms[i].recent);
    free(f->vms);
    free(f->pgs);
    if (f->hook_argv)
        for (int i = 0; i < f->hook_argc; i++)
            free(f->hook_argv[i]);
    free(f->hook_argv);
    sim_timeline_destroy(&f->tl);
    pthread_mutex_destroy(&f->lock);
    free(f);
    *fabric = NULL;
}
