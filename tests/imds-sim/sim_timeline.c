/* sim_timeline: every fact of the simulation as one JSON object per line (file) and in a
 * bounded ring (GET /control/timeline). The file has every entry; the ring the last `keep`.
 * Not thread-safe: the fabric calls it with its lock held. */
#include "sim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sim_timeline {
    FILE *file;    /* --timeline FILE, line-buffered, or NULL */
    char **ring;   /* serialized entries, ring[seq % keep] */
    size_t keep;   /* ring capacity */
    uint64_t next; /* seq of the next entry (entries 0..next-1 were written) */
};

int sim_timeline_new(const char *path, size_t keep, sim_timeline_t **ret_tl)
{
    sim_timeline_t *self = calloc(1, sizeof(*self));
    int rc = -ENOMEM;

    if (!self)
        return -ENOMEM;
    self->keep = keep ? keep : 1;
    if (!(self->ring = calloc(self->keep, sizeof(*self->ring))))
        goto fail;
    if (path) {
        if (!(self->file = fopen(path, "a"))) {
            rc = -errno;
            goto fail;
        }
        setvbuf(self->file, NULL, _IOLBF, 0);
    }
    *ret_tl = self;
    return 0;
fail:
    sim_timeline_destroy(&self);
    return rc;
}

void sim_timeline_destroy(sim_timeline_t **tl)
{
    sim_timeline_t *self = tl ? *tl : NULL;

    if (!self)
        return;
    if (self->ring)
        for (size_t i = 0; i < self->keep; i++)
            free(self->ring[i]);
    free(self->ring);
    if (self->file)
        fclose(self->file);
    free(self);
    *tl = NULL;
}

void sim_timeline_add(sim_timeline_t *tl, json_object *obj)
{
    const char *text;
    char **slot;

    if (!obj)
        return;
    json_object_object_add(obj, "seq", json_object_new_int64((int64_t)tl->next));
    text = json_object_to_json_string_ext(obj,
                                          JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (tl->file)
        fprintf(tl->file, "%s\n", text);
    slot = &tl->ring[tl->next % tl->keep];
    free(*slot);
    *slot = strdup(text);
    tl->next++;
    json_object_put(obj);
}

char *sim_timeline_array(sim_timeline_t *tl, uint64_t since, size_t *ret_len)
{
    uint64_t first = tl->next > tl->keep ? tl->next - tl->keep : 0;
    size_t len = 2, off = 0;
    char *out;

    if (since > first)
        first = since;
    for (uint64_t s = first; s < tl->next; s++)
        len += (tl->ring[s % tl->keep] ? strlen(tl->ring[s % tl->keep]) : 0) + 2;
    if (!(out = malloc(len + 1)))
        return NULL;
    out[off++] = '[';
    for (uint64_t s = first; s < tl->next; s++) {
        const char *e = tl->ring[s % tl->keep];
        size_t n;

        if (!e)
            continue;
        if (off > 1)
            out[off++] = ',';
        n = strlen(e);
        memcpy(out + off, e, n);
        off += n;
    }
    out[off++] = ']';
    out[off] = '\0';
    *ret_len = off;
    return out;
}
