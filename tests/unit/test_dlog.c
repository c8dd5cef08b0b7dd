/* The decision log: indexes without gaps, terms never going back, append-only, replication
 * shape (append_entry), reading back, a leader's snapshot installed (reset). */
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

/* The log of s: 1..3 of term 1 applied, 4..6 of term 2 not (the commit index not heard). */
static sc_db_t *s_six(sc_store_t *s)
{
    sc_db_t *db = sc_store_test_db(s);
    for (int i = 1; i <= 6; i++)
        SC_CHECK_INT(sc_dlog_append(db, i <= 3 ? 1 : 2, SC_DLOG_ALERT, "{}", "", i, NULL), 0);
    for (int i = 1; i <= 3; i++)
        SC_CHECK_INT(sc_dlog_mark_applied(db, i), 0);
    return db;
}

/* A leader's snapshot installed (Raft §7): what follows its index stays when the log holds
 * that index with its term; any other log goes whole. */
SC_TEST(reset_to_a_snapshot)
{
    sc_store_t *s = s_open(), *t = s_open(), *u = s_open();
    sc_dlog_entry_t *v = NULL;
    int64_t base = 0, bterm = 0, last = 0, term = 0;
    size_t n = 0;
    bool kept = false;
    SC_REQUIRE(s && t && u);
    sc_db_t *db = s_six(s), *dt = s_six(t), *du = s_six(u);

    /* 5 of term 2 here: 6 stays, not applied */
    SC_CHECK_INT(sc_dlog_reset(db, 5, 2, &kept), 0);
    SC_CHECK(kept);
    SC_CHECK_INT(sc_dlog_base(db, &base, &bterm), 0);
    SC_CHECK_INT(base, 5);
    SC_CHECK_INT(bterm, 2);
    SC_CHECK_INT(sc_dlog_read(db, 1, 10, false, &v, &n), 0);
    SC_REQUIRE(n == 1);
    SC_CHECK_INT(v[0].index, 6);
    SC_CHECK(!v[0].applied);
    sc_dlog_entries_free(v, n);
    SC_CHECK_INT(sc_dlog_last(db, &last, &term), 0);
    SC_CHECK_INT(last, 6);
    SC_CHECK_INT(term, 2);
    /* 5 of another term, or past the log's end: the log is not the snapshot's, all of it goes */
    SC_CHECK_INT(sc_dlog_reset(dt, 5, 3, &kept), 0);
    SC_CHECK(!kept);
    SC_CHECK_INT(sc_dlog_read(dt, 1, 10, false, &v, &n), 0);
    SC_CHECK_INT(n, 0);
    SC_CHECK_INT(sc_dlog_last(dt, &last, &term), 0);
    SC_CHECK_INT(last, 5);
    SC_CHECK_INT(term, 3);
    kept = true;
    SC_CHECK_INT(sc_dlog_reset(du, 9, 2, &kept), 0);
    SC_CHECK(!kept);
    SC_CHECK_INT(sc_dlog_last(du, &last, NULL), 0);
    SC_CHECK_INT(last, 9);
    /* a snapshot before what was applied: refused, nothing changed */
    SC_CHECK_INT(sc_dlog_append(dt, 3, SC_DLOG_ALERT, "{}", "", 7, NULL), 0);
    SC_CHECK_INT(sc_dlog_mark_applied(dt, 6), 0);
    SC_CHECK_INT(sc_dlog_reset(dt, 5, 3, NULL), -EINVAL);
    SC_CHECK_INT(sc_dlog_base(dt, &base, NULL), 0);
    SC_CHECK_INT(base, 5);
    SC_CHECK_INT(sc_dlog_last(dt, &last, NULL), 0);
    SC_CHECK_INT(last, 6);
    sc_store_close(&s);
    sc_store_close(&t);
    sc_store_close(&u);
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
    SC_RUN(reset_to_a_snapshot);
    SC_RUN(kind_names);
    return sc_test_done();
}
