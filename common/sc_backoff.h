/* sc_backoff: exponential backoff with jitter, in monotonic milliseconds.
 *
 *   sc_backoff_t b;
 *   sc_backoff_init(&b, 100, 30000);
 *   on failure:  delay = sc_backoff_next(&b, st.retry_after_ms);
 *   on success:  sc_backoff_reset(&b);
 *
 * The struct is public so it can live inside other structs; treat its fields as private. */
#ifndef SC_BACKOFF_H
#define SC_BACKOFF_H

#include <stdint.h>

typedef struct sc_backoff {
    int64_t initial_ms; /* first base delay (>= 1) */
    int64_t max_ms;     /* cap on any delay returned (>= initial_ms) */
    int64_t current_ms; /* base delay of the next call; doubles each call up to max_ms */
    unsigned attempts;  /* calls to sc_backoff_next() since the last reset */
    uint64_t rng;       /* xorshift64 state for the jitter (never 0) */
} sc_backoff_t;

/* Sets up b. initial_ms < 1 becomes 1; max_ms < initial_ms becomes initial_ms. The jitter is
 * seeded from the clock and the address of b, so agents started together spread out. */
void sc_backoff_init(sc_backoff_t *b, int64_t initial_ms, int64_t max_ms);

/* The next delay: max(hint_ms, jittered exponential), capped at max_ms. The jittered value
 * lies in [ceil(current/2), current] ("equal jitter"); current then doubles, up to max_ms.
 * hint_ms <= 0 means no hint. A hint larger than max_ms is still capped at max_ms. */
int64_t sc_backoff_next(sc_backoff_t *b, int64_t hint_ms);

/* Back to initial_ms and 0 attempts (call after a success). */
void sc_backoff_reset(sc_backoff_t *b);

#endif
