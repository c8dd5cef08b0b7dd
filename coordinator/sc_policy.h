/* sc_policy: the coordinator's policy settings — what is drained, what is approved, how fast.
 *
 * Two views of the same settings:
 *  - sc_policy_cfg_t: the config-table view (strings as the user wrote them). The daemon embeds
 *    it in its settings struct and adds sc_policy_keys[] to its config table, shifting each
 *    key's offset by offsetof(settings, policy_member) with sc_policy_keys_rebase().
 *  - sc_policy_t: the parsed view the planner reads (sc_policy_from_cfg()).
 *
 * Keys (flag --freeze-threshold-s, file key freeze-threshold-s or freeze_threshold_s):
 *   freeze-threshold-s     SECONDS 9     Freeze with 0 <= DurationInSeconds < this: approve at
 *                                        once, no drain (Azure's own threshold)
 *   max-fault-domains      INT     1     fault domains (update domains under serialise-by
 *                                        update_domain) that may be draining/drained/impacted/
 *                                        recovering at once
 *   min-healthy            STRING  "0"   members that must stay healthy: a count ("2") or a
 *                                        percentage of the members not gone ("50%", rounded up)
 *   user-event-deadline-s  SECONDS 120   User events: drained with this deadline (from first
 *                                        seen), then approved at the latest
 *   deadline-margin-s      SECONDS 60    a platform drain must be done by NotBefore - margin,
 *                                        else alert and leave the event to Azure
 *   approve-user-events    BOOL    true  approve EventSource=User events (else they wait for
 *                                        NotBefore after their drain)
 *   approve-without-drain  STRING  ""    comma-separated event types approved at once without
 *                                        drain ("Freeze,Redeploy"); case-insensitive
 *   pause                  BOOL    false approve nothing and start no new platform/user drain;
 *                                        recovers, alerts and Preempt/Terminate drains go on
 *   prepare-attempts       INT     3     drains of one VM for one event: a failed or interrupted
 *                                        prepare is rolled back (recover hook) and tried again
 *                                        until this many attempts were made
 *   prepare-retry-s        SECONDS 30    wait after a rollback before the next attempt; doubles
 *                                        with each attempt, at most 10 minutes
 *   serialise-by           STRING  fault_domain  the domains rule 2 counts: fault_domain
 *                                        (platformFaultDomain) or update_domain
 *                                        (platformUpdateDomain); see docs/planner.md
 *   approve-with-strangers BOOL    false approve an event whose Resources also name VMs outside
 *                                        the members once the members are drained (else it
 *                                        is left to NotBefore: the POST starts it for them too)
 *   terminate-notice-s     SECONDS 300   the notice of a Terminate event, as configured for the
 *                                        set (5 to 15 minutes): rehearsals judge against it
 */
#ifndef SC_POLICY_H
#define SC_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sc_config.h"
#include "sc_event.h"

/* The config-table view: offsets of sc_policy_keys[] point into this struct. */
typedef struct sc_policy_cfg {
    double freeze_threshold_s;    /* freeze-threshold-s */
    long max_fault_domains;       /* max-fault-domains */
    char *min_healthy;            /* min-healthy: "N" or "N%" (owned by sc_config_free) */
    double user_event_deadline_s; /* user-event-deadline-s */
    double deadline_margin_s;     /* deadline-margin-s */
    bool approve_user_events;     /* approve-user-events */
    char *approve_without_drain;  /* approve-without-drain: "Freeze,Reboot" (owned by sc_config) */
    bool pause;                   /* pause */
    long prepare_attempts;        /* prepare-attempts */
    double prepare_retry_s;       /* prepare-retry-s */
    char *serialise_by;           /* serialise-by: "auto", "fault_domain", "update_domain" or
                                     "vm" (owned) */
    bool approve_with_strangers;  /* approve-with-strangers */
    double terminate_notice_s;    /* terminate-notice-s */
} sc_policy_cfg_t;

/* The config keys of sc_policy_cfg_t (offsets relative to sc_policy_cfg_t). */
extern const sc_cfg_key_t sc_policy_keys[];
extern const size_t sc_policy_n_keys;

/* Copies sc_policy_keys[] into dst (room for sc_policy_n_keys entries) with every offset
 * increased by base_offset, i.e. offsetof(daemon_settings_t, policy). */
void sc_policy_keys_rebase(size_t base_offset, sc_cfg_key_t *dst);

/* The domains rule 2 serialises (serialise-by). */
typedef enum {
    SC_SERIALISE_FAULT_DOMAIN,  /* platformFaultDomain */
    SC_SERIALISE_UPDATE_DOMAIN, /* platformUpdateDomain */
    SC_SERIALISE_VM,            /* each VM a domain of its own: one VM at a time */
    SC_SERIALISE_AUTO, /* (default) fault domains, unless every member reports the same one: a
                          flexible or zonal scale set spreads its VMs over fault domains it
                          does not show ("max spreading"), then VM (sc_coord_serialise_by) */
    SC_SERIALISE_MAX
} sc_serialise_by_t;

/* The parsed view the planner reads. */
typedef struct sc_policy {
    double freeze_threshold_s;      /* Freeze with 0 <= duration < this: no drain, approve */
    int max_fault_domains;          /* >= 1 */
    int min_healthy;                /* a count, or a percentage when min_healthy_pct */
    bool min_healthy_pct;           /* min_healthy is a percentage (0..100) of members not gone */
    double user_event_deadline_s;   /* User events: approve at the latest this long after seen */
    double deadline_margin_s;       /* platform drains must finish by NotBefore - margin */
    bool approve_user_events;       /* approve EventSource=User events */
    uint32_t approve_without_drain; /* bit (1u << sc_event_type_t) per type approved undrained */
    bool pause;                     /* approve nothing, start no new non-Preempt/Terminate drain */
    int prepare_attempts;           /* >= 1: prepares of one VM for one event, retries included */
    double prepare_retry_s;         /* first wait after a rollback (doubles, capped at 600 s) */
    sc_serialise_by_t serialise_by; /* the domains max_fault_domains counts */
    bool approve_with_strangers;    /* approve events naming non-members once members drained */
    double terminate_notice_s;      /* a Terminate's notice (300..900 s): rehearsal verdicts */
} sc_policy_t;

/* The defaults of DESIGN.md (the values listed above) into *ret. */
void sc_policy_defaults(sc_policy_t *ret);
/* Parses and checks cfg into *ret (written only on success). SC_E_CONFIG with a message in err
 * naming the key ("min-healthy: \"5x\" is neither a count nor a percentage") or -EINVAL. */
int sc_policy_from_cfg(const sc_policy_cfg_t *cfg, sc_policy_t *ret, char *err, size_t errlen);
/* Parses "N" (0..100000) or "N%" (0..100). 0 or SC_E_CONFIG; outputs written on success. */
int sc_policy_parse_min_healthy(const char *s, int *ret_value, bool *ret_pct);
/* Parses a comma-separated list of event type names (case-insensitive, spaces allowed, ""
 * = none) into a bit mask (1u << sc_event_type_t). SC_E_CONFIG for an unknown name. */
int sc_policy_parse_types(const char *s, uint32_t *ret_mask);
/* "fault_domain", "update_domain", "vm", "auto" (the serialise-by values); "unknown" out of
 * range. */
const char *sc_serialise_by_name(sc_serialise_by_t by);
/* Parses a serialise-by value (exactly a name above). 0 or SC_E_CONFIG; *ret on success. */
int sc_policy_parse_serialise_by(const char *s, sc_serialise_by_t *ret);
/* The number of healthy members the policy requires out of n_members (members not gone). */
int sc_policy_min_healthy_count(const sc_policy_t *p, size_t n_members);
/* Milliseconds to wait before attempt + 1 after attempt (>= 1) was rolled back:
 * prepare_retry_s * 2^(attempt - 1), at most 600 s. */
int64_t sc_policy_retry_delay_ms(const sc_policy_t *p, int attempt);

#endif
