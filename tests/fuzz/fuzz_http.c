/* Fuzzes the request head parser of `schedcoordctl metrics --http` (sc_metrics_http_status),
 * which reads whatever a scraper, or anything else reaching the metrics port, sends: the
 * answer is one of 0 (head not complete), 200, 400, 404, 405; 0 only while no empty line was
 * seen and the head is under SC_METRICS_REQ_MAX; HEAD only with 200; and a prefix of a
 * complete head is never 200 unless the head is. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sc_metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* whether needle occurs in the first size bytes of hay (memmem is a GNU extension) */
static bool s_has(const char *hay, size_t size, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= size; i++)
        if (!memcmp(hay + i, needle, n))
            return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *req = (const char *)data;
    bool head = true;
    int st = sc_metrics_http_status(req, size, &head);

    if (st != 0 && st != 200 && st != 400 && st != 404 && st != 405)
        abort();
    if (head && st != 200)
        abort();
    if (st == 0 && size >= SC_METRICS_REQ_MAX)
        abort();
    if (st == 0 && (s_has(req, size, "\n\n") || s_has(req, size, "\r\n\r\n")))
        abort();
    if (st != 0 && size < SC_METRICS_REQ_MAX && !s_has(req, size, "\n\n") &&
        !s_has(req, size, "\r\n\r\n"))
        abort();
    /* the same bytes followed by more: the head's verdict does not change */
    if (st != 0 && size < SC_METRICS_REQ_MAX) {
        char *more = malloc(size + 16);
        if (!more)
            return 0;
        memcpy(more, data, size);
        memcpy(more + size, "X-More: 1\r\n\r\n", 13);
        if (sc_metrics_http_status(more, size + 13, NULL) != st)
            abort();
        free(more);
    }
    return 0;
}
