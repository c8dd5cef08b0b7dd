/* sc_ratelimit: token buckets per source, bounded, with a shared overflow bucket. */
#include "sc_ratelimit.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sc_error.h"

/* A bucket holds time, not tokens: a token is refill_ms of credit and each millisecond adds
 * one, so refills are exact in integers whatever the rate. */
typedef struct s_bucket {
    char source[SC_RATELIMIT_SOURCE_MAX]; /* the source, cut to fit */
    int64_t credit;                       /* credit in ms at last_ms (a token = refill_ms) */
    int64_t last_ms;                      /* when credit was last brought up to date */
} s_bucket_t;

struct sc_ratelimit {
    int64_t cap;         /* burst * refill_ms: a full bucket's credit */
    int64_t refill_ms;   /* one token back every refill_ms */
    s_bucket_t *buckets; /* max_sources slots */
    size_t max_sources;  /* slots allocated */
    size_t n;            /* slots in use */
    s_bucket_t overflow; /* shared by sources that found the table full */
};

int sc_ratelimit_new(unsigned burst, int64_t refill_ms, size_t max_sources, sc_ratelimit_t **ret_rl)
{
    sc_ratelimit_t *rl;

    if (!ret_rl || burst < 1 || burst > 1000000 || refill_ms < 1 || refill_ms > 86400000 ||
        max_sources < 1 || max_sources > 1000000)
        return -EINVAL;
    if (!(rl = calloc(1, sizeof(*rl))))
        return -ENOMEM;
    if (!(rl->buckets = calloc(max_sources, sizeof(*rl->buckets)))) {
        free(rl);
        return -ENOMEM;
    }
    rl->cap = (int64_t)burst * refill_ms;
    rl->refill_ms = refill_ms;
    rl->max_sources = max_sources;
    rl->overflow.credit = rl->cap;
    rl->overflow.last_ms = INT64_MIN; /* not used yet: starts full at its first use */
    *ret_rl = rl;
    return 0;
}

void sc_ratelimit_destroy(sc_ratelimit_t **rl)
{
    if (!rl || !*rl)
        return;
    free((*rl)->buckets);
    free(*rl);
    *rl = NULL;
}

size_t sc_ratelimit_size(const sc_ratelimit_t *rl)
{
    return rl ? rl->n : 0;
}

/* Brings b's credit up to now (never above a full bucket, never back in time). */
static void s_refill(const sc_ratelimit_t *rl, s_bucket_t *b, int64_t now_ms)
{
    if (b->last_ms == INT64_MIN || now_ms > b->last_ms) {
        if (b->last_ms != INT64_MIN && now_ms - b->last_ms < rl->cap - b->credit)
            b->credit += now_ms - b->last_ms;
        else
            b->credit = rl->cap;
        b->last_ms = now_ms;
    }
}

/* The bucket of source: its own, a slot freed for it, or the overflow bucket. */
static s_bucket_t *s_bucket_for(sc_ratelimit_t *rl, const char *key, int64_t now_ms)
{
    s_bucket_t *b;

    for (size_t i = 0; i < rl->n; i++)
        if (strcmp(rl->buckets[i].source, key) == 0)
            return &rl->buckets[i];
    if (rl->n < rl->max_sources) {
        b = &rl->buckets[rl->n++];
    } else {
        b = NULL;
        for (size_t i = 0; i < rl->n && !b; i++) {
            s_refill(rl, &rl->buckets[i], now_ms);
            if (rl->buckets[i].credit == rl->cap)
                b = &rl->buckets[i]; /* refilled: forgetting it loses nothing */
        }
        if (!b)
            return &rl->overflow;
    }
    memcpy(b->source, key, strlen(key) + 1);
    b->credit = rl->cap;
    b->last_ms = now_ms;
    return b;
}

int sc_ratelimit_take(sc_ratelimit_t *rl, const char *source, int64_t now_ms)
{
    char key[SC_RATELIMIT_SOURCE_MAX];
    s_bucket_t *b;
    size_t len;

    if (!rl || !source)
        return -EINVAL;
    len = strnlen(source, sizeof(key) - 1);
    memcpy(key, source, len);
    key[len] = '\0';
    b = s_bucket_for(rl, key, now_ms);
    s_refill(rl, b, now_ms);
    if (b->credit < rl->refill_ms)
        return SC_E_RATE_LIMITED;
    b->credit -= rl->refill_ms;
    return 0;
}
