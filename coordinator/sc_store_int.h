/* The store's inside, shared by its files (sc_store.c, sc_store_snap.c) and nothing else. */
#ifndef SC_STORE_INT_H
#define SC_STORE_INT_H

#include "sc_store.h"

struct sc_store {
    sc_db_t *db;                  /* the database */
    sc_store_decide_fn on_decide; /* told of every entry decided (NULL: none) */
    void *on_decide_ud;           /* its argument */
    int64_t keep_closed;          /* SC_STORE_KEEP_CLOSED */
};

/* Opens a transaction unless the caller has one; *own says which. 0 or an SC_E_* code. */
int sc_store_txn_begin(sc_store_t *store, bool *own);
/* Ends the transaction sc_store_txn_begin opened (own): commit when rc >= 0, else rollback.
 * The outcome, 0 or an error. */
int sc_store_txn_end(sc_store_t *store, bool own, int rc);

#endif
