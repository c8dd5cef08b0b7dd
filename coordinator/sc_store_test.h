/* sc_store_test: the store's database connection, for unit tests that check the schema, the
 * pragmas and the decision log's SQL guards (tests/unit/test_store.c, test_dlog.c,
 * test_approver.c, test_coord_replay.c). Nothing outside tests/ and sc_store.c includes this header
 * (lint_layers checks): the coordinator reaches its data through sc_store.h only. */
#ifndef SC_STORE_TEST_H
#define SC_STORE_TEST_H

#include "sc_db.h"
#include "sc_store.h"

/* The database (borrowed). */
sc_db_t *sc_store_test_db(sc_store_t *store);
/* The first column of the first row of sql (no parameters) as an integer: a count; -1 when
 * it fails or has no row. */
int64_t sc_store_test_int(sc_store_t *store, const char *sql);

#endif
