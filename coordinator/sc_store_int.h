/* The store's inside, shared by its files (sc_store.c, sc_store_snap.c) and nothing else. */
#ifndef SC_STORE_INT_H
#define SC_STORE_INT_H

#include "sc_store.h"

struct sc_store {
    sc_db_t *db;                  /* the database */
    sc_store_decide_fn on_decide; /* told of every entry decided (NULL: none) */
    void *on_decide_ud;           /* its argument */
    sc_store_commit_fn gate;      /* a decision is applied only once it returns 0 (NULL: at once) */
    void *gate_ud;                /* its argument */
};

#endif
