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
#include <sys/stat.h>
#include <unistd.h>

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

/* mkdir -p DIR (0700 for what it creates). 0, or -1 when DIR is not a directory after. */
static inline int sc_test_mkdirs(const char *dir)
{
    char buf[1024];
    struct stat st;

    snprintf(buf, sizeof(buf), "%s", dir);
    for (char *c = buf + 1; *c; c++) {
        if (*c == '/') {
            *c = '\0';
            mkdir(buf, 0700);
            *c = '/';
        }
    }
    mkdir(buf, 0700);
    return stat(buf, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

/* The test's scratch directory, created: $SC_TMP (/tmp/sc_test when unset or empty), or its
 * subdirectory SUB when SUB is not NULL. A static buffer. */
static inline const char *sc_test_tmpdir(const char *sub)
{
    static char dir[900];
    const char *tmp = getenv("SC_TMP");

    if (!tmp || !*tmp)
        tmp = "/tmp/sc_test";
    if (sub)
        snprintf(dir, sizeof(dir), "%s/%s", tmp, sub);
    else
        snprintf(dir, sizeof(dir), "%s", tmp);
    if (sc_test_mkdirs(dir) != 0)
        printf("  cannot make the scratch directory %s\n", dir);
    return dir;
}

/* Writes TEXT to PATH (replaced, not rewritten in place: a running program may have the old
 * one open) with MODE. 0, or -1 on error. */
static inline int sc_test_write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f;
    int rc = 0;

    unlink(path);
    if (!(f = fopen(path, "w")))
        return -1;
    if (fputs(text, f) < 0)
        rc = -1;
    if (fclose(f) != 0)
        rc = -1;
    if (chmod(path, mode) != 0)
        rc = -1;
    return rc;
}

/* Removes a SQLite database and its -wal and -shm files, if there. */
static inline void sc_test_remove_db(const char *path)
{
    char side[1100];

    unlink(path);
    snprintf(side, sizeof(side), "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof(side), "%s-shm", path);
    unlink(side);
}

#endif
