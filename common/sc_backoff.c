#include "sc_backoff.h"

#include "sc_time.h"

#include <stdint.h>
#include <unistd.h>

/* splitmix64: spreads a weak seed (clock, address, pid) over all 64 bits. */
static uint64_t s_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t s_rand(sc_backoff_t *b)
{
    uint64_t x = b->rng;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b->rng = x;
    return x;
}

void sc_backoff_init(sc_backoff_t *b, int64_t initial_ms, int64_t max_ms)
{
    if (initial_ms < 1)
        initial_ms = 1;
    if (max_ms < initial_ms)
        max_ms = initial_ms;
    b->initial_ms = initial_ms;
    b->max_ms = max_ms;
    b->current_ms = initial_ms;
    b->attempts = 0;
    b->rng =
        s_mix((uint64_t)sc_mono_ms() ^ ((uint64_t)(uintptr_t)b << 16) ^ ((uint64_t)getpid() << 40));
    if (b->rng == 0)
        b->rng = 0x2545f4914f6cdd1dULL; /* xorshift must never hold 0 */
}

int64_t sc_backoff_next(sc_backoff_t *b, int64_t hint_ms)
{
    int64_t base = b->current_ms;
    int64_t half = base - base / 2; /* ceil(base / 2): never a zero delay */
    int64_t delay = half + (int64_t)(s_rand(b) % (uint64_t)(base - half + 1));

    /* Double for next time, without overflowing. */
    b->current_ms = base > b->max_ms / 2 ? b->max_ms : base * 2;
    if (b->attempts < UINT32_MAX)
        b->attempts++;
    if (hint_ms > delay)
        delay = hint_ms;
    if (delay > b->max_ms)
        delay = b->max_ms;
    return delay;
}

void sc_backoff_reset(sc_backoff_t *b)
{
    b->current_ms = b->initial_ms;
    b->attempts = 0;
}
