/* The decision log: indexes without gaps, terms never going back, append-only, replication
 * shape (append_entry), reading back. */
#include "sc_dlog.h"
#include "sc_error.h"
#include "sc_store.h"
#include "sc_store_test.h"
#include "sc_test.h"

#include <errno.h>

static sc_store_t *s_open(void)
{
    sc_store_t *s = NULL;
    char err[256];
    if (sc_store_open(":memory:", &s, err, sizeof(err)) < 0) {
        printf("open: %s\n", err);
        return NULL;
    }
    return s;
}

SC_TEST(append_indexes_and_terms)
{
    sc_store_t *s = s_open();
    int64_t idx = 0, last = 0, term = 0;
    SC_REQUIRE(s);
    sc_db_t *db = sc_store_test_db(s);
    SC_CHECK_INT(sc_dlog_last(db, &last, &term), 0);
    SC_CHECK_INT(last, 0);
    SC_CHECK_INT(sc_dlog_append(db, 1, SC_DLOG_ALERT, "{\"message\":\"a\"}", "r1", 10, &idx), 0);
    SC_CHECK_INT(idx, 1);
    SC_CHECK_INT(sc_dlog_append(db, 2, SC_DLOG_ALERT, "{\"message\":\"b\"}", NULL, 11, &idx), 0);
    SC_CHECK_INT(idx, 2);
    /* An older term can no longer write. */
    SC_CHECK_INT(sc_dlog_append(db, 1, SC_DLOG_ALERT, "{}", "", 12, &idx), SC_E_STALE_TERM);
    /* Data must be a JSON object. */
    SC_CHECK_INT(sc_dlog_append(db, 2, SC_DLOG_ALERT, "[1]", "", 12, NULL), -EINVAL);
    SC_CHECK_INT(sc_dlog_append(db, 2, SC_DLOG_ALERT, "{bad", "", 12, NULL), -EINVAL);
    SC_CHECK_INT(sc_dlog_append(db, 2, SC_DLOG_KIND_MAX, "{}", "", 12, NULL), -EINVAL);
    SC_CHECK_INT(sc_dlog_last(db, &last, &term), 0);
    SC_CHECK_INT(last, 2);
    SC_CHECK_INT(term, 2);
    sc_store_close(&s);
    SC_CHECK(s == NULL);
}

SC_TEST(append_only)
{
    sc_store_t *s = s_open();
    SC_REQUIRE(s);
    sc_db_t *db = sc_store_test_db(s);
    SC_CHECK_INT(sc_dlog_append(db, 1, SC_DLOG_ALERT, "{}", "x", 1, NULL), 0);
    SC_CHECK_INT(sc_dlog_append(db, 1, SC_DLOG_ALERT, "{}", "y", 1, NULL), 0);
    SC_CHECK(sc_db_exec(db, "UPDATE dlog SET reason = 'forged'", NULL, 0) < 0);
    SC_CHECK_INT(sc_dlog_mark_applied(db, 1), 0);
    /* an applied entry never goes; one not applied (not known committed) may be replaced by a
     * newer leader's (Raft's truncation, sc_store_log_entries) */
    SC_CHECK(sc_db_exec(db, "DELETE FROM dlog WHERE idx = 1", NULL, 0) < 0);
    SC_CHECK(sc_db_exec(db, "DELETE FROM dlog WHERE idx = 2", NULL, 0) == 0);
    SC_CHECK_INT(sc_dlog_mark_applied(db, 7), SC_E_NOT_FOUND);
    sc_store_close(&s);
}

SC_TEST(replicated_entries)
{
    sc_store_t *s = s_open();
    SC_REQUIRE(s);
    sc_db_t *db = sc_store_test_db(s);
    sc_dlog_entry_t e = {.index = 1,
                         .term = 3,
                         .kind = SC_DLOG_TERM,
                         .data = "{\"term\":3}",
                         .reason = "leader",
                         .wall_ms = 5};
    SC_CHECK_INT(sc_dlog_append_entry(db, &e), 0);
    SC_CHECK_INT(sc_dlog_append_entry(db, &e), -EEXIST);
    e.index = 3;
    SC_CHECK_INT(sc_dlog_append_entry(db, &e), -EINVAL); /* a gap */
    e.index = 2;
    e.term = 2;
    SC_CHECK_INT(sc_dlog_append_entry(db, &e), SC_E_STALE_TERM);
    /* Applying the replicated entries gives the leader's store. */
    SC_CHECK_INT(sc_store_apply_pending(s), 0);
    int64_t term = 0;
    SC_CHECK_INT(sc_store_term(s, &term), 0);
    SC_CHECK_INT(term, 3);

    sc_dlog_entry_t *v = NULL;
    size_t n = 0;
    SC_CHECK_INT(sc_dlog_read(db, 1, 10, false, &v, &n), 0);
    SC_REQUIRE(n == 1);
    SC_CHECK_INT(v[0].index, 1);
    SC_CHECK_INT(v[0].term, 3);
    SC_CHECK_INT(v[0].kind, SC_DLOG_TERM);
    SC_CHECK_STR(v[0].reason, "leader");
    SC_CHECK(v[0].applied);
    sc_dlog_entries_free(v, n);
    SC_CHECK_INT(sc_dlog_read(db, 1, 10, true, &v, &n), 0);
    SC_CHECK_INT(n, 0);
    SC_CHECK(v == NULL);
    sc_store_close(&s);
}

SC_TEST(kind_names)
{
    sc_dlog_kind_t k;
    for (int i = 0; i < SC_DLOG_KIND_MAX; i++) {
        SC_CHECK_INT(sc_dlog_kind_parse(sc_dlog_kind_name((sc_dlog_kind_t)i), &k), 0);
        SC_CHECK_INT(k, i);
    }
    SC_CHECK_INT(sc_dlog_kind_parse("nope", &k), -EINVAL);
    SC_CHECK_STR(sc_dlog_kind_name(SC_DLOG_KIND_MAX), "unknown");
}

int main(void)
{
    SC_RUN(append_indexes_and_terms);
    SC_RUN(append_only);
    SC_RUN(replicated_entries);
    SC_RUN(kind_names);
    return sc_test_done();
}
