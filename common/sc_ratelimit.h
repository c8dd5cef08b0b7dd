/* sc_ratelimit: a token bucket per source (a peer address), in bounded memory, for the join
 * attempts of unknown keys (issue 21: "an unknown key may only ask to join, rate limited").
 *
 * Each source has a bucket of at most `burst` tokens, full when first seen; an attempt takes
 * one; one token comes back every `refill_ms`. At most `max_sources` buckets are kept. When
 * a new source arrives and the table is full, a bucket that has refilled completely is given
 * to it (a full bucket is the same as no bucket: nothing is lost); when there is none, every
 * untracked source shares one overflow bucket — so a flood of addresses cannot push a
 * limited source out of the table to get it a fresh bucket, and cannot grow the table.
 *
 * Time is the caller's (CLOCK_MONOTONIC milliseconds): no I/O, no clock reads, so tests are
 * exact. A clock that goes backwards is taken as no time passing. Not thread-safe. */
#ifndef SC_RATELIMIT_H
#define SC_RATELIMIT_H

#include <stddef.h>
#include <stdint.h>

#define SC_RATELIMIT_SOURCE_MAX 64 /* bytes of a source kept; longer ones share their prefix's */

typedef struct sc_ratelimit sc_ratelimit_t;

/* A limiter: buckets of burst tokens (1..1000000), one token back every refill_ms
 * (1..86400000), at most max_sources (1..1000000) tracked sources. 0, -EINVAL or -ENOMEM. */
int sc_ratelimit_new(unsigned burst, int64_t refill_ms, size_t max_sources,
                     sc_ratelimit_t **ret_rl);

/* One attempt from source at now_ms: takes a token from its bucket. 0 (go ahead),
 * SC_E_RATE_LIMITED (its bucket is empty: refuse the attempt) or -EINVAL (NULL). */
int sc_ratelimit_take(sc_ratelimit_t *rl, const char *source, int64_t now_ms);

/* Sources with a bucket of their own (not counting the overflow bucket). */
size_t sc_ratelimit_size(const sc_ratelimit_t *rl);

/* Frees; takes NULL; nulls *rl. */
void sc_ratelimit_destroy(sc_ratelimit_t **rl);

#endif
