/* sc_ratelimit: token buckets per source — the burst, the refill (exact over partial
 * intervals), a clock going back, and bounded memory: a flood of new sources shares one
 * overflow bucket and cannot push a limited source out to get it a fresh bucket. */
#include "sc_test.h"

#include <errno.h>

#include "sc_error.h"
#include "sc_ratelimit.h"

SC_TEST(rate_limit_per_source)
{
    sc_ratelimit_t *rl = NULL;

    SC_REQUIRE(sc_ratelimit_new(3, 1000, 16, &rl) == 0);
    for (int i = 0; i < 3; i++)
        SC_CHECK_INT(sc_ratelimit_take(rl, "10.0.0.9", 0), 0);
    SC_CHECK_INT(sc_ratelimit_take(rl, "10.0.0.9", 0), SC_E_RATE_LIMITED);
    SC_CHECK_INT(sc_ratelimit_take(rl, "10.0.0.9", 999), SC_E_RATE_LIMITED);
    SC_CHECK_INT(sc_ratelimit_take(rl, "10.0.0.9", 1000), 0); /* one token back per second */
    SC_CHECK_INT(sc_ratelimit_take(rl, "10.0.0.9", 1000), SC_E_RATE_LIMITED);
    /* another source has its own bucket */
    SC_CHECK_INT(sc_ratelimit_take(rl, "10.0.0.10", 1000), 0);
    /* a long idle refills to the burst, not beyond */
    for (int i = 0; i < 3; i++)
        SC_CHECK_INT(sc_ratelimit_take(rl, "10.0.0.9", 1000000), 0);
    SC_CHECK_INT(sc_ratelimit_take(rl, "10.0.0.9", 1000000), SC_E_RATE_LIMITED);
    /* a clock going back gives nothing */
    SC_CHECK_INT(sc_ratelimit_take(rl, "10.0.0.9", 5000), SC_E_RATE_LIMITED);
    /* partial refills add up: 400 + 600 ms make a token */
    SC_CHECK_INT(sc_ratelimit_take(rl, "10.0.0.9", 1000400), SC_E_RATE_LIMITED);
    SC_CHECK_INT(sc_ratelimit_take(rl, "10.0.0.9", 1001000), 0);
    SC_CHECK_INT(sc_ratelimit_size(rl), 2);
    sc_ratelimit_destroy(&rl);
    SC_CHECK(rl == NULL);

    SC_CHECK_INT(sc_ratelimit_new(0, 1000, 16, &rl), -EINVAL);
    SC_CHECK_INT(sc_ratelimit_new(1, 0, 16, &rl), -EINVAL);
    SC_CHECK_INT(sc_ratelimit_new(1, 1000, 0, &rl), -EINVAL);
}

SC_TEST(rate_limit_bounded_memory)
{
    sc_ratelimit_t *rl = NULL;
    char src[64], longsrc[SC_RATELIMIT_SOURCE_MAX * 2];

    SC_REQUIRE(sc_ratelimit_new(2, 1000, 2, &rl) == 0);
    /* a and b exhausted */
    SC_CHECK_INT(sc_ratelimit_take(rl, "a", 0), 0);
    SC_CHECK_INT(sc_ratelimit_take(rl, "a", 0), 0);
    SC_CHECK_INT(sc_ratelimit_take(rl, "b", 0), 0);
    SC_CHECK_INT(sc_ratelimit_take(rl, "b", 0), 0);
    /* a flood of new addresses: the table does not grow, they share one overflow bucket, and
     * a and b keep their empty buckets (no fresh bucket by being pushed out) */
    for (int i = 0; i < 100; i++) {
        snprintf(src, sizeof(src), "flood-%d", i);
        SC_CHECK_INT(sc_ratelimit_take(rl, src, 0), i < 2 ? 0 : SC_E_RATE_LIMITED);
    }
    SC_CHECK_INT(sc_ratelimit_size(rl), 2);
    SC_CHECK_INT(sc_ratelimit_take(rl, "a", 0), SC_E_RATE_LIMITED);
    SC_CHECK_INT(sc_ratelimit_take(rl, "b", 0), SC_E_RATE_LIMITED);
    /* once a's bucket is full again, forgetting it loses nothing: a new source takes it */
    SC_CHECK_INT(sc_ratelimit_take(rl, "b", 1500), 0); /* b: 1.5 tokens -> 0.5 */
    SC_CHECK_INT(sc_ratelimit_take(rl, "c", 2000), 0); /* a is full at 2000: c gets its slot */
    SC_CHECK_INT(sc_ratelimit_take(rl, "c", 2000), 0);
    SC_CHECK_INT(sc_ratelimit_take(rl, "c", 2000), SC_E_RATE_LIMITED);
    SC_CHECK_INT(sc_ratelimit_size(rl), 2);
    sc_ratelimit_destroy(&rl);

    /* a source name over the limit is cut, not refused: names alike in their first
     * SC_RATELIMIT_SOURCE_MAX - 1 bytes share a bucket */
    SC_REQUIRE(sc_ratelimit_new(1, 1000, 8, &rl) == 0);
    memset(longsrc, 'x', sizeof(longsrc) - 1);
    longsrc[sizeof(longsrc) - 1] = '\0';
    SC_CHECK_INT(sc_ratelimit_take(rl, longsrc, 0), 0);
    longsrc[SC_RATELIMIT_SOURCE_MAX] = 'y'; /* past the cut */
    SC_CHECK_INT(sc_ratelimit_take(rl, longsrc, 0), SC_E_RATE_LIMITED);
    longsrc[SC_RATELIMIT_SOURCE_MAX - 2] = 'y'; /* the last byte kept */
    SC_CHECK_INT(sc_ratelimit_take(rl, longsrc, 0), 0);
    sc_ratelimit_destroy(&rl);
}

int main(void)
{
    SC_RUN(rate_limit_per_source);
    SC_RUN(rate_limit_bounded_memory);
    return sc_test_done();
}
