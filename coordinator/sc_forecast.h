/* sc_forecast: drain-time forecasts from history, as pure functions — no I/O, no clock, no log:
 * everything comes in through the arguments (docs/planner.md, "Forecasts").
 *
 *   sc_forecast_stat()    median, p95 and count of one VM's hook durations for one phase (the
 *                         daemon reads them from the store's drains rows: real events and
 *                         rehearsals alike)
 *   sc_forecast_run()     for each event not over, in the planner's drain order: when its
 *                         drain starts, when its last VM is drained (and the event approved),
 *                         and whether that is before its deadline; if not, the VMs at risk and
 *                         what would fit
 *   sc_forecast_verdict() a rehearsal's measured durations against an event type's notice
 *
 * The model of sc_forecast_run (what the planner does, with each hook taking its p95):
 *  - a VM's prepare still to run takes its p95 (minus what already ran of it); an event is
 *    drained when its slowest VM is; it is approved then, ends impact_s later (impacted: at
 *    end_s), and its domains are free again once its slowest recover (p95) is done;
 *  - Preempt / Terminate, and events already draining, start now; the others take the first
 *    moment, in drain order, when their domains and the domains of the events occupying some
 *    at that time number at most max_domains (an event wider than that alone: none other
 *    busy) — rule 2 without min_healthy;
 *  - the deadline is NotBefore − margin (rule 4), NotBefore itself for Preempt / Terminate (no
 *    margin applies: the VM simply goes away); an event without NotBefore always fits;
 *  - a VM without history (count 0) counts 0 s and is named in n_unknown: nothing is guessed.
 * When an event does not fit: at risk are its VMs forecast drained after the deadline; the
 * advice says that nothing would fit when the slowest prepare alone, started now, ends after
 * the deadline, else the smallest max_domains with which it would fit ("draining fault domain
 * 2 in parallel with fault domain 1 would fit, but breaks max-fault-domains=1"), or that none
 * would. */
#ifndef SC_FORECAST_H
#define SC_FORECAST_H

#include "sc_event.h"
#include "sc_plan.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SC_FORECAST_SAMPLES_MAX 64 /* newest durations the daemon keeps per VM and phase */
#define SC_FORECAST_TEXT_MAX 320   /* bytes of a forecast's or a verdict's text, NUL included */
#define SC_FORECAST_RISK_MAX 16    /* VMs at risk named by index (the count goes on) */

/* The durations of one VM's hook for one phase. */
typedef struct sc_forecast_stat {
    double median_s; /* median (the mean of the two middle ones for an even count) */
    double p95_s;    /* 95th percentile, nearest rank */
    size_t count;    /* samples (0: no history, both 0) */
} sc_forecast_stat_t;

/* The stat of n samples (seconds, in any order; not modified). 0, or -EINVAL for a NULL
 * argument or a sample that is negative or not a number. */
int sc_forecast_stat(const double *samples, size_t n, sc_forecast_stat_t *ret);

/* A member as the forecast sees it. */
typedef struct sc_forecast_member {
    const char *name;           /* member name (borrowed) */
    int domain;                 /* the domain rule 2 counts (serialise-by); -1: unknown, a
                                   domain of its own */
    sc_forecast_stat_t prepare; /* its prepare hook */
    sc_forecast_stat_t recover; /* its recover hook */
} sc_forecast_member_t;

/* One VM of an event (members not gone, in Resources). */
typedef struct sc_forecast_vm {
    size_t member;          /* index into sc_forecast_input_t.members */
    sc_drain_state_t drain; /* its drain for this event: NONE / ROLLED_BACK still to prepare,
                               PREPARE_ORDERED / PREPARING under way, the rest done */
    double elapsed_s;       /* under way: how long its prepare has run (0 unknown) */
} sc_forecast_vm_t;

/* One event not over, as the forecast sees it. */
typedef struct sc_forecast_event {
    const char *id;              /* EventId (borrowed, for texts) */
    sc_event_class_t cls;        /* its class (sc_plan_event_class): NO_DRAIN is not forecast */
    bool impacted;               /* Started, or approved: out until end_s, then recovered */
    double end_s;                /* impacted: wall s it is expected to end */
    double impact_s;             /* not impacted: expected s from its approval to its end */
    bool has_not_before;         /* NotBefore known */
    int64_t not_before_s;        /* unix s */
    const sc_forecast_vm_t *vms; /* its VMs */
    size_t n_vms;                /* entries in vms */
} sc_forecast_event_t;

typedef struct sc_forecast_input {
    const sc_forecast_member_t *members; /* every member */
    size_t n_members;                    /* entries in members */
    const sc_forecast_event_t *events;   /* events not over: first those that occupy domains now
                                            (impacted or draining), then the queue in the
                                            planner's order (sc_plan_queue) */
    size_t n_events;                     /* entries in events */
    int max_domains;                     /* policy max_fault_domains (>= 1) */
    double margin_s;                     /* policy deadline_margin_s */
    double now_s;                        /* wall s (NotBefore's clock) */
    bool by_update_domain;               /* texts say "update domain" (serialise-by) */
} sc_forecast_input_t;

/* The forecast of one event. */
typedef struct sc_forecast {
    bool made;                         /* false: nothing to forecast (no drain, impacted) */
    double start_s;                    /* wall s its drain starts (now when under way) */
    double drained_s;                  /* wall s its last VM is drained: it is approved */
    double deadline_s;                 /* NotBefore (− margin); 0 without NotBefore */
    bool fits;                         /* drained_s <= deadline_s, or no NotBefore */
    size_t n_unknown;                  /* its VMs without history (counted 0 s) */
    size_t risk[SC_FORECAST_RISK_MAX]; /* members at risk (drained after the deadline), the
                                          slowest first */
    size_t n_risk;                     /* entries in risk (at most SC_FORECAST_RISK_MAX) */
    int fits_with;                     /* the smallest max_domains with which it would fit; 0:
                                          it fits, -1: none would */
    char why[SC_FORECAST_TEXT_MAX];    /* does not fit: the VMs at risk and what would fit */
} sc_forecast_t;

/* Forecasts every event of in into ret[0 .. in->n_events - 1] (the caller's). 0, -EINVAL for
 * a NULL or inconsistent input (a member index out of range, max_domains < 1), -ENOMEM. */
int sc_forecast_run(const sc_forecast_input_t *in, sc_forecast_t *ret);

/* The notice Azure gives an event type (docs/imds.md, minimum notice): Freeze and Reboot
 * 15 min, Redeploy 10 min, Preempt 30 s, Terminate terminate_notice_s (user-configured, 5 to
 * 15 min). 0 for an unknown type. */
double sc_forecast_notice_s(sc_event_type_t type, double terminate_notice_s);

/* One VM of a rehearsal, as measured. */
typedef struct sc_forecast_measured {
    const char *name; /* member name (borrowed) */
    int domain;       /* the domain rule 2 counts (-1 unknown: its own) */
    bool prepared;    /* its prepare ran and succeeded */
    bool failed;      /* its prepare failed (or timed out, or was interrupted) */
    double prepare_s; /* its prepare's duration (prepared or failed) */
    double recover_s; /* its recover's duration (0 when it did not run) */
} sc_forecast_measured_t;

/* A rehearsal's verdict for one event type. */
typedef struct sc_forecast_verdict {
    sc_event_type_t type;            /* the event type */
    double notice_s;                 /* its notice */
    double needed_s;                 /* what the set needs before the last VM is drained */
    bool fits;                       /* needed_s within the notice (− margin, as rule 4) */
    char text[SC_FORECAST_TEXT_MAX]; /* "Reboot: the whole set drains in 4 min 10 s fault
                                        domain by fault domain; fits 15 min." */
} sc_forecast_verdict_t;

/* The verdict of the measured VMs vms[0 .. n - 1] for type, with notice notice_s: Preempt and
 * Terminate drain every VM at once, so their slowest prepare is needed (against the notice
 * itself); the others go max_domains domains at a time in domain order, each round ending
 * impact_s after its slowest prepare plus its slowest recover, so the last round's slowest
 * prepare ends at needed_s (against notice − margin); when that does not fit, the smallest
 * max_domains that would is named. no_drain: the type is approved without a drain (fits).
 * A failed prepare never fits (the event would be left to Azure). scope names what was
 * rehearsed ("the whole set", "fault domain 1"). 0 or -EINVAL. */
int sc_forecast_verdict(const sc_forecast_measured_t *vms, size_t n, sc_event_type_t type,
                        double notice_s, bool no_drain, double impact_s, int max_domains,
                        double margin_s, bool by_update_domain, const char *scope,
                        sc_forecast_verdict_t *ret);

/* A duration for humans into buf: "41 s", "4.2 s", "4 min 10 s", "15 min", "2 h 5 min". */
void sc_forecast_duration(double s, char *buf, size_t len);

#endif
