/* sc_time: monotonic and wall clocks, in milliseconds.
 *
 * Timers use the monotonic clock; wall time is only for what IMDS says (NotBefore) and for
 * humans, so nothing breaks when the wall clock jumps. */
#ifndef SC_TIME_H
#define SC_TIME_H

#include <stddef.h>
#include <stdint.h>

/* Milliseconds on CLOCK_MONOTONIC (arbitrary origin). */
int64_t sc_mono_ms(void);
/* Milliseconds since the Unix epoch (CLOCK_REALTIME). */
int64_t sc_wall_ms(void);
/* Sleeps ms milliseconds, resuming after signals. */
void sc_sleep_ms(int64_t ms);
/* Formats unix seconds as RFC 1123 ("Mon, 11 Apr 2022 22:26:58 GMT") into buf.
 * Returns buf. */
char *sc_time_rfc1123(int64_t unix_s, char *buf, size_t len);
/* Formats wall milliseconds as ISO 8601 UTC with milliseconds into buf. Returns buf. */
char *sc_time_iso8601(int64_t wall_ms, char *buf, size_t len);

#endif
