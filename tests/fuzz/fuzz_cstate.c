/* Fuzzes sc_cstate, which will apply entries that come over the network (a leader's log) and
 * snapshots read from disk. The input is lines "K DATA": K a decision kind's number
 * (sc_dlog_kind_t, 0-9 then a, b, ...) and DATA the entry's JSON, applied in order with the
 * next index; or, when it starts with the byte 0x01, one snapshot (sc_cstate_from_json).
 * Checked: an applied entry advances the index by one; a refused one leaves the state exactly
 * as it was (its JSON) and says why; a snapshot that loads writes back to itself. */
#include "sc_cstate.h"
#include "sc_error.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const s_names[] = {"vm_0", "vm_1", "_vm_2", "vm_3"};

static char *s_text(const sc_cstate_t *cs)
{
    json_object *o = NULL;
    char *t;

    if (sc_cstate_to_json(cs, &o) < 0)
        return NULL;
    t = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    return t;
}

static void s_snapshot(const char *text)
{
    sc_cstate_t *a = NULL, *b = NULL;
    json_object *snap = json_tokener_parse(text), *again = NULL;
    char err[256];

    if (!snap || sc_cstate_new(s_names, 4, &a) < 0 || sc_cstate_new(s_names, 4, &b) < 0)
        goto out;
    if (sc_cstate_from_json(a, snap, err, sizeof(err)) == 0 && sc_cstate_to_json(a, &again) == 0) {
        char *ta, *tb;
        if (sc_cstate_from_json(b, again, err, sizeof(err)) != 0)
            abort(); /* what it wrote, it reads */
        ta = s_text(a);
        tb = s_text(b);
        if (ta && tb && strcmp(ta, tb) != 0)
            abort();
        free(ta);
        free(tb);
    } else if (sc_cstate_applied(a) != 0 || sc_cstate_n_events(a) != 0) {
        abort(); /* a refused snapshot leaves the state empty */
    }
out:
    json_object_put(again);
    json_object_put(snap);
    sc_cstate_destroy(&a);
    sc_cstate_destroy(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1), *line, *save = NULL;
    sc_cstate_t *cs = NULL;

    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    if (size && buf[0] == 0x01) {
        s_snapshot(buf + 1);
        free(buf);
        return 0;
    }
    if (sc_cstate_new(s_names, 4, &cs) < 0) {
        free(buf);
        return 0;
    }
    for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        sc_dlog_entry_t e = {0};
        char err[256] = "", *before, *after;
        int k = line[0] >= 'a' ? line[0] - 'a' + 10 : line[0] - '0';
        int rc;

        if (k < 0 || k >= SC_DLOG_KIND_MAX || line[1] != ' ')
            continue;
        e.index = sc_cstate_applied(cs) + 1;
        e.term = 1;
        e.kind = (sc_dlog_kind_t)k;
        e.data = line + 2;
        e.wall_ms = 1000 * e.index;
        before = s_text(cs);
        rc = sc_cstate_apply(cs, &e, NULL, err, sizeof(err));
        after = s_text(cs);
        if (rc == 0 && sc_cstate_applied(cs) != e.index)
            abort();
        if (rc == -EINVAL && (!err[0] || (before && after && strcmp(before, after) != 0)))
            abort(); /* refused: said why, changed nothing */
        free(before);
        free(after);
    }
    sc_cstate_destroy(&cs);
    free(buf);
    return 0;
}
