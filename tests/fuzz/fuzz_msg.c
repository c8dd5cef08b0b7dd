/* Fuzz target for sc_msg_decode: whatever the bytes, decoding either fails cleanly or gives a
 * message that encodes, decodes again and is equal (and encodes to the same bytes). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sc_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sc_msg_t *m = NULL, *back = NULL;
    char err[512], *buf = NULL, *buf2 = NULL;
    size_t len = 0, len2 = 0;

    if (sc_msg_decode(data, size, &m, err, sizeof(err)) != 0) {
        if (m)
            abort(); /* nothing half-built */
        return 0;
    }
    if (sc_msg_encode(m, &buf, &len) != 0)
        abort();
    if (sc_msg_decode(buf, len, &back, err, sizeof(err)) != 0)
        abort();
    if (!sc_msg_equal(m, back))
        abort();
    if (sc_msg_encode(back, &buf2, &len2) != 0 || len != len2 || memcmp(buf, buf2, len) != 0)
        abort();
    free(buf);
    free(buf2);
    sc_msg_destroy(&m);
    sc_msg_destroy(&back);
    return 0;
}
