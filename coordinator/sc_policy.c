/* sc_policy: policy keys, defaults and parsing (see sc_policy.h). */
#include "sc_policy.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sc_error.h"

const sc_cfg_key_t sc_policy_keys[] = {
    {"freeze-threshold-s", SC_CFG_SECONDS, offsetof(sc_policy_cfg_t, freeze_threshold_s), "9",
     "Freeze events with 0 <= DurationInSeconds below this are approved at once, undrained", 0,
     3600, false},
    {"max-fault-domains", SC_CFG_INT, offsetof(sc_policy_cfg_t, max_fault_domains), "1",
     "fault (or, by serialise-by, update) domains that may be draining, drained, impacted or "
     "recovering at once",
     1, 1000, false},
    {"min-healthy", SC_CFG_STRING, offsetof(sc_policy_cfg_t, min_healthy), "0",
     "members that must stay healthy: a count (2) or a percentage of members (50%)", 0, 0, false},
    {"user-event-deadline-s", SC_CFG_SECONDS, offsetof(sc_policy_cfg_t, user_event_deadline_s),
     "120", "User events are approved at the latest this long after first seen", 0, 86400, false},
    {"deadline-margin-s", SC_CFG_SECONDS, offsetof(sc_policy_cfg_t, deadline_margin_s), "60",
     "a drain must be done by NotBefore minus this, else alert and leave it to Azure", 0, 86400,
     false},
    {"approve-user-events", SC_CFG_BOOL, offsetof(sc_policy_cfg_t, approve_user_events), "true",
     "approve EventSource=User events once drained (or at their deadline)", 0, 0, false},
    {"approve-without-drain", SC_CFG_STRING, offsetof(sc_policy_cfg_t, approve_without_drain), "",
     "comma-separated event types approved at once without drain (e.g. Freeze)", 0, 0, false},
    {"pause", SC_CFG_BOOL, offsetof(sc_policy_cfg_t, pause), "false",
     "approve nothing and start no new drain (Preempt/Terminate drains and recovers go on)", 0, 0,
     false},
    {"prepare-attempts", SC_CFG_INT, offsetof(sc_policy_cfg_t, prepare_attempts), "3",
     "prepares of one VM for one event: a failed one is rolled back (recover hook) and retried", 1,
     100, false},
    {"prepare-retry-s", SC_CFG_SECONDS, offsetof(sc_policy_cfg_t, prepare_retry_s), "30",
     "wait after a rolled-back prepare before the next attempt (doubles each time, max 600 s)", 0,
     3600, false},
    {"serialise-by", SC_CFG_STRING, offsetof(sc_policy_cfg_t, serialise_by), "auto",
     "the domains drained one at a time (max-fault-domains of them): fault_domain, "
     "update_domain, vm (each VM its own), or auto: fault_domain, but vm when every member "
     "reports the same fault domain (max spreading hides them)",
     0, 0, false},
    {"approve-with-strangers", SC_CFG_BOOL, offsetof(sc_policy_cfg_t, approve_with_strangers),
     "false",
     "approve events whose Resources also name VMs outside --members once the members are "
     "drained (the approval starts them for those VMs too)",
     0, 0, false},
    {"terminate-notice-s", SC_CFG_SECONDS, offsetof(sc_policy_cfg_t, terminate_notice_s), "300",
     "the notice Terminate events give on this set (configured in Azure, 5 to 15 minutes): "
     "rehearsals judge drains against it",
     300, 900, false},
};

const size_t sc_policy_n_keys = sizeof(sc_policy_keys) / sizeof(sc_policy_keys[0]);

void sc_policy_keys_rebase(size_t base_offset, sc_cfg_key_t *dst)
{
    for (size_t i = 0; i < sc_policy_n_keys; i++) {
        dst[i] = sc_policy_keys[i];
        dst[i].offset += base_offset;
    }
}

void sc_policy_defaults(sc_policy_t *ret)
{
    memset(ret, 0, sizeof(*ret));
    ret->freeze_threshold_s = 9;
    ret->max_fault_domains = 1;
    ret->min_healthy = 0;
    ret->min_healthy_pct = false;
    ret->user_event_deadline_s = 120;
    ret->deadline_margin_s = 60;
    ret->approve_user_events = true;
    ret->approve_without_drain = 0;
    ret->pause = false;
    ret->prepare_attempts = 3;
    ret->prepare_retry_s = 30;
    ret->serialise_by = SC_SERIALISE_AUTO;
    ret->approve_with_strangers = false;
    ret->terminate_notice_s = 300;
}

static const char *const s_serialise_names[SC_SERIALISE_MAX] = {"fault_domain", "update_domain",
                                                                "vm", "auto"};

const char *sc_serialise_by_name(sc_serialise_by_t by)
{
    return by >= 0 && by < SC_SERIALISE_MAX ? s_serialise_names[by] : "unknown";
}

int sc_policy_parse_serialise_by(const char *s, sc_serialise_by_t *ret)
{
    for (int i = 0; s && i < SC_SERIALISE_MAX; i++) {
        if (strcmp(s, s_serialise_names[i]) == 0) {
            *ret = (sc_serialise_by_t)i;
            return 0;
        }
    }
    return SC_E_CONFIG;
}

static int s_parse_uint(const char *s, size_t len, long max, long *ret)
{
    long v = 0;

    if (len == 0 || len > 9)
        return SC_E_CONFIG;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return SC_E_CONFIG;
        v = v * 10 + (s[i] - '0');
    }
    if (v > max)
        return SC_E_CONFIG;
    *ret = v;
    return 0;
}

int sc_policy_parse_min_healthy(const char *s, int *ret_value, bool *ret_pct)
{
    size_t len;
    long v;
    bool pct;

    if (!s)
        return SC_E_CONFIG;
    while (*s == ' ' || *s == '\t')
        s++;
    len = strlen(s);
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    pct = len > 0 && s[len - 1] == '%';
    if (pct)
        len--;
    if (s_parse_uint(s, len, pct ? 100 : 100000, &v) < 0)
        return SC_E_CONFIG;
    *ret_value = (int)v;
    *ret_pct = pct;
    return 0;
}

int sc_policy_parse_types(const char *s, uint32_t *ret_mask)
{
    uint32_t mask = 0;

    if (!s)
        return SC_E_CONFIG;
    while (*s) {
        const char *end;
        size_t len;
        bool found = false;

        while (*s == ' ' || *s == '\t' || *s == ',')
            s++;
        if (!*s)
            break;
        end = s;
        while (*end && *end != ',')
            end++;
        len = (size_t)(end - s);
        while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
            len--;
        for (int t = SC_EVENT_FREEZE; t < SC_EVENT_TYPE_MAX; t++) {
            const char *name = sc_event_type_name((sc_event_type_t)t);

            if (strlen(name) == len && strncasecmp(name, s, len) == 0) {
                mask |= 1u << t;
                found = true;
                break;
            }
        }
        if (!found)
            return SC_E_CONFIG;
        s = end;
    }
    *ret_mask = mask;
    return 0;
}

int sc_policy_from_cfg(const sc_policy_cfg_t *cfg, sc_policy_t *ret, char *err, size_t errlen)
{
    sc_policy_t p;

    if (!cfg || !ret)
        return -EINVAL;
    sc_policy_defaults(&p);
    if (!(cfg->freeze_threshold_s >= 0 && cfg->freeze_threshold_s <= 3600))
        return sc_errf(err, errlen, SC_E_CONFIG, "freeze-threshold-s: %g is outside 0..3600",
                       cfg->freeze_threshold_s);
    p.freeze_threshold_s = cfg->freeze_threshold_s;
    if (cfg->max_fault_domains < 1 || cfg->max_fault_domains > 1000)
        return sc_errf(err, errlen, SC_E_CONFIG, "max-fault-domains: %ld is outside 1..1000",
                       cfg->max_fault_domains);
    p.max_fault_domains = (int)cfg->max_fault_domains;
    if (cfg->min_healthy &&
        sc_policy_parse_min_healthy(cfg->min_healthy, &p.min_healthy, &p.min_healthy_pct) < 0)
        return sc_errf(err, errlen, SC_E_CONFIG,
                       "min-healthy: \"%.64s\" is neither a count (0..100000) nor a percentage "
                       "(0%%..100%%)",
                       cfg->min_healthy);
    if (!(cfg->user_event_deadline_s >= 0 && cfg->user_event_deadline_s <= 86400))
        return sc_errf(err, errlen, SC_E_CONFIG, "user-event-deadline-s: %g is outside 0..86400",
                       cfg->user_event_deadline_s);
    p.user_event_deadline_s = cfg->user_event_deadline_s;
    if (!(cfg->deadline_margin_s >= 0 && cfg->deadline_margin_s <= 86400))
        return sc_errf(err, errlen, SC_E_CONFIG, "deadline-margin-s: %g is outside 0..86400",
                       cfg->deadline_margin_s);
    p.deadline_margin_s = cfg->deadline_margin_s;
    p.approve_user_events = cfg->approve_user_events;
    if (cfg->approve_without_drain &&
        sc_policy_parse_types(cfg->approve_without_drain, &p.approve_without_drain) < 0)
        return sc_errf(err, errlen, SC_E_CONFIG,
                       "approve-without-drain: \"%.64s\" is not a comma-separated list of "
                       "Freeze, Reboot, Redeploy, Preempt, Terminate",
                       cfg->approve_without_drain);
    p.pause = cfg->pause;
    if (cfg->prepare_attempts < 1 || cfg->prepare_attempts > 100)
        return sc_errf(err, errlen, SC_E_CONFIG, "prepare-attempts: %ld is outside 1..100",
                       cfg->prepare_attempts);
    p.prepare_attempts = (int)cfg->prepare_attempts;
    if (!(cfg->prepare_retry_s >= 0 && cfg->prepare_retry_s <= 3600))
        return sc_errf(err, errlen, SC_E_CONFIG, "prepare-retry-s: %g is outside 0..3600",
                       cfg->prepare_retry_s);
    p.prepare_retry_s = cfg->prepare_retry_s;
    if (cfg->serialise_by && sc_policy_parse_serialise_by(cfg->serialise_by, &p.serialise_by) < 0)
        return sc_errf(err, errlen, SC_E_CONFIG,
                       "serialise-by: \"%.64s\" is not one of auto, fault_domain, "
                       "update_domain, vm",
                       cfg->serialise_by);
    p.approve_with_strangers = cfg->approve_with_strangers;
    /* 0: a caller that filled the struct by hand and knows nothing of the key */
    if (cfg->terminate_notice_s != 0 &&
        !(cfg->terminate_notice_s >= 300 && cfg->terminate_notice_s <= 900))
        return sc_errf(err, errlen, SC_E_CONFIG, "terminate-notice-s: %g is outside 300..900",
                       cfg->terminate_notice_s);
    if (cfg->terminate_notice_s != 0)
        p.terminate_notice_s = cfg->terminate_notice_s;
    *ret = p;
    return 0;
}

int sc_policy_min_healthy_count(const sc_policy_t *p, size_t n_members)
{
    if (!p->min_healthy_pct)
        return p->min_healthy;
    /* rounded up: 50% of 5 members keeps 3 healthy */
    return (int)(((long long)p->min_healthy * (long long)n_members + 99) / 100);
}

int64_t sc_policy_retry_delay_ms(const sc_policy_t *p, int attempt)
{
    double ms = p->prepare_retry_s * 1000.0;

    for (int i = 1; i < attempt && ms < 600000.0; i++)
        ms *= 2;
    return ms > 600000.0 ? 600000 : (int64_t)ms;
}
