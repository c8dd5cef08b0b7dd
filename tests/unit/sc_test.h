/* A tiny test harness: checks count failures and go on; sc_test_done() prints the closing
 * line "N passed, N failed" and returns the exit status.
 *
 *   SC_TEST(parses_westno) { SC_CHECK_INT(doc->incarnation, 2); }
 *   int main(void) { SC_RUN(parses_westno); return sc_test_done(); }
 */
#ifndef SC_TEST_H
#define SC_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sc_test_checks_failed_; /* failed checks in the current test */
static int sc_test_passed_;        /* tests that passed */
static int sc_test_failed_;        /* tests that failed */

#define SC_TEST(name) static void test_##name(void)

#define SC_RUN(name)                                                                               \
    do {                                                                                           \
        sc_test_checks_failed_ = 0;                                                                \
        test_##name();                                                                             \
        if (sc_test_checks_failed_) {                                                              \
            sc_test_failed_++;                                                                     \
            printf("FAIL %s\n", #name);                                                            \
        } else {                                                                                   \
            sc_test_passed_++;                                                                     \
            printf("ok   %s\n", #name);                                                            \
        }                                                                                          \
        fflush(stdout);                                                                            \
    } while (0)

#define SC_FAILF(...)                                                                              \
    do {                                                                                           \
        sc_test_checks_failed_++;                                                                  \
        printf("  %s:%d: ", __FILE__, __LINE__);                                                   \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
    } while (0)

#define SC_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond))                                                                               \
            SC_FAILF("check failed: %s", #cond);                                                   \
    } while (0)

#define SC_CHECK_INT(a, b)                                                                         \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_)                                                                              \
            SC_FAILF("%s == %lld, expected %s == %lld", #a, a_, #b, b_);                           \
    } while (0)

#define SC_CHECK_STR(a, b)                                                                         \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        if (!a_ || !b_ || strcmp(a_, b_) != 0)                                                     \
            SC_FAILF("%s == \"%s\", expected \"%s\"", #a, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
    } while (0)

/* Fails the test and returns from it when cond is false (for pointers used after). */
#define SC_REQUIRE(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            SC_FAILF("required: %s", #cond);                                                       \
            return;                                                                                \
        }                                                                                          \
    } while (0)

static inline int sc_test_done(void)
{
    printf("%d passed, %d failed\n", sc_test_passed_, sc_test_failed_);
    return sc_test_failed_ ? 1 : 0;
}

/* Reads a whole file (fixtures); the caller frees. NULL on error. */
static inline char *sc_test_slurp(const char *path, size_t *ret_len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long len;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)len + 1)) && fread(buf, 1, (size_t)len, f) == (size_t)len) {
        buf[len] = '\0';
        if (ret_len)
            *ret_len = (size_t)len;
    } else {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

/* Reads fixture NAME from $SC_FIXTURES. */
static inline char *sc_test_fixture(const char *name, size_t *ret_len)
{
    char path[1024];
    const char *dir = getenv("SC_FIXTURES");

    snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/fixtures", name);
    return sc_test_slurp(path, ret_len);
}

#endif
