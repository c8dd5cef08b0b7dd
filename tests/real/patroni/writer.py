#!/usr/bin/env python3
"""The application of tests/real/real_patroni.sh (and the benchmark): inserts the numbered row
n = 1, 2, 3... into t every --interval seconds, each in a transaction of its own, through a
multi-host connection string (target_session_attrs=read-write: libpq tries the hosts in turn
until one takes writes). One line per attempt to --log, flushed:
    ok N T        the COMMIT of row N returned at unix time T (the row must survive)
    fail N T WHY  no connection, or the INSERT or COMMIT raised (row N may or may not exist)
A failed attempt drops the connection; the next attempt connects again. Stops at SIGTERM
(after the attempt under way)."""
import argparse
import signal
import sys
import time

import psycopg2

stop = False


def on_term(*_):
    global stop
    stop = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--interval", type=float, default=0.1)
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, on_term)
    log = open(a.log, "a", buffering=1)
    conn = None
    n = 0
    nxt = time.time()
    while not stop:
        n += 1
        try:
            if conn is None:
                conn = psycopg2.connect(a.dsn)
            with conn.cursor() as cur:
                cur.execute("INSERT INTO t (n) VALUES (%s)", (n,))
            conn.commit()
            log.write("ok %d %.3f\n" % (n, time.time()))
        except psycopg2.Error as e:
            why = " ".join(str(e).split())[:120] or type(e).__name__
            log.write("fail %d %.3f %s\n" % (n, time.time(), why))
            try:
                if conn is not None:
                    conn.close()
            except psycopg2.Error:
                pass
            conn = None
        nxt += a.interval
        d = nxt - time.time()
        if d > 0:
            time.sleep(d)
        else:
            nxt = time.time()  # (late: no burst to catch up)
    return 0


if __name__ == "__main__":
    sys.exit(main())
