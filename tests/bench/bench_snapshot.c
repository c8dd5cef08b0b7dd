/* What a snapshot for a follower far behind costs the leader and the follower (issue 11):
 * a store with MEMBERS members and EVENTS events that went their whole way (seen, two VMs
 * prepared, approved, ended, recovered, closed: the tables keep every event), then
 *   make:    the replicated tables read as JSON and written out as text (sc_store_tables_json,
 *            what the leader does once for every follower that needs it; the state, which holds
 *            only live events, adds little to it);
 *   install: that text parsed and installed into an empty store (sc_store_install, one
 *            transaction), as the follower does.
 * The leader's loop does the make in one go: its time is the stall a snapshot costs it.
 *   build/bench/bench_snapshot [MEMBERS] [EVENTS...]     (default 1000, then 100 1000 10000)
 * Prints one line per size: events, rows, bytes, make ms, install ms (median of 5). */
#include "sc_store.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double s_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int s_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void s_decide(sc_store_t *s, sc_dlog_kind_t k, const char *data)
{
    if (sc_store_decide(s, 1, k, data, "bench", 1, NULL) < 0) {
        fprintf(stderr, "decide %s: %s\n", data, sc_store_errmsg(s));
        exit(1);
    }
}

/* A store at path with the members and events' whole lives. */
static sc_store_t *s_build(const char *path, int members, int events)
{
    sc_store_t *s = NULL;
    char err[256], d[1024];

    unlink(path);
    if (sc_store_open(path, &s, err, sizeof(err)) < 0) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    sc_store_begin(s);
    s_decide(s, SC_DLOG_TERM, "{\"term\":1}");
    for (int i = 0; i < members; i++) {
        snprintf(d, sizeof(d),
                 "{\"name\":\"vm_%d\",\"endpoint\":\"tcp://10.0.%d.%d:7700\",\"fault_domain\":%d,"
                 "\"update_domain\":%d,\"state\":\"healthy\"}",
                 i, i / 250, i % 250, i % 3, i % 5);
        s_decide(s, SC_DLOG_MEMBER, d);
    }
    for (int e = 0; e < events; e++) {
        int a = e % members, b = (e + 3) % members;
        char id[64];
        snprintf(id, sizeof(id), "%08x-0000-4000-8000-%012x", e, e);
        snprintf(d, sizeof(d),
                 "{\"event\":{\"EventId\":\"%s\",\"EventType\":\"Reboot\",\"ResourceType\":"
                 "\"VirtualMachine\",\"Resources\":[\"vm_%d\",\"vm_%d\"],\"EventStatus\":"
                 "\"Scheduled\",\"NotBefore\":\"Mon, 19 Sep 2016 18:29:47 GMT\",\"EventSource\":"
                 "\"Platform\",\"DurationInSeconds\":30,\"Description\":\"Host server is "
                 "undergoing maintenance.\"},\"seen_by\":[\"vm_%d\",\"vm_%d\"],\"not_before\":"
                 "1474309787}",
                 id, a, b, a, b);
        s_decide(s, SC_DLOG_EVENT_SEEN, d);
        for (int p = 0; p < 2; p++) {
            const char *ph = p ? "recover" : "prepare";
            snprintf(d, sizeof(d), "{\"event_id\":\"%s\",\"vms\":[\"vm_%d\",\"vm_%d\"]}", id, a, b);
            s_decide(s, p ? SC_DLOG_RECOVER_ORDERED : SC_DLOG_PREPARE_ORDERED, d);
            for (int v = 0; v < 2; v++) {
                snprintf(d, sizeof(d),
                         "{\"event_id\":\"%s\",\"vm\":\"vm_%d\",\"phase\":\"%s\",\"state\":"
                         "\"done\",\"exit_status\":0}",
                         id, v ? b : a, ph);
                s_decide(s, SC_DLOG_HOOK_PROGRESS, d);
            }
            if (p == 0) {
                snprintf(d, sizeof(d),
                         "{\"event_ids\":[\"%s\"],\"body\":\"{\\\"StartRequests\\\":[{"
                         "\\\"EventId\\\":\\\"%s\\\"}]}\",\"via\":null,\"by\":\"vm_0\"}",
                         id, id);
                s_decide(s, SC_DLOG_APPROVAL_INTENT, d);
                snprintf(d, sizeof(d), "{\"event_id\":\"%s\",\"how\":\"approved\"}", id);
                s_decide(s, SC_DLOG_EVENT_STARTED, d);
                snprintf(d, sizeof(d), "{\"event_id\":\"%s\",\"how\":\"completed\"}", id);
                s_decide(s, SC_DLOG_EVENT_ENDED, d);
            }
        }
        snprintf(d, sizeof(d), "{\"event_id\":\"%s\"}", id);
        s_decide(s, SC_DLOG_EVENT_CLOSED, d);
        if (e % 1000 == 999) {
            sc_store_commit(s);
            sc_store_begin(s);
        }
    }
    sc_store_commit(s);
    return s;
}

int main(int argc, char **argv)
{
    int members = argc > 1 ? atoi(argv[1]) : 1000;
    int sizes[16] = {100, 1000, 10000}, n = 3;
    char dir[] = "/tmp/bench_snapshot.XXXXXX", path[256], fpath[256], err[256];

    if (argc > 2)
        for (n = 0; n < argc - 2 && n < 16; n++)
            sizes[n] = atoi(argv[n + 2]);
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof(path), "%s/leader.db", dir);
    snprintf(fpath, sizeof(fpath), "%s/follower.db", dir);
    printf("members %d; median of 5\n%8s %9s %11s %9s %11s\n", members, "events", "rows", "bytes",
           "make ms", "install ms");
    for (int k = 0; k < n; k++) {
        sc_store_t *s = s_build(path, members, sizes[k]);
        double mk[5], in[5];
        size_t bytes = 0, rows = 0;
        for (int r = 0; r < 5; r++) {
            json_object *t = NULL, *o;
            sc_store_t *f = NULL;
            double t0 = s_ms();
            char *text;
            if (sc_store_tables_json(s, &t) < 0)
                return 1;
            text = strdup(json_object_to_json_string_ext(t, JSON_C_TO_STRING_PLAIN));
            mk[r] = s_ms() - t0;
            bytes = strlen(text);
            rows = 0;
            json_object_object_foreach(t, key, val)
            {
                (void)key;
                rows += json_object_array_length(json_object_object_get(val, "rows"));
            }
            json_object_put(t);
            unlink(fpath);
            if (sc_store_open(fpath, &f, err, sizeof(err)) < 0)
                return 1;
            t0 = s_ms();
            o = json_tokener_parse(text);
            if (sc_store_install(f, 100, 1, 1, o, "{}", NULL, err, sizeof(err)) < 0) {
                fprintf(stderr, "install: %s\n", err);
                return 1;
            }
            in[r] = s_ms() - t0;
            json_object_put(o);
            sc_store_close(&f);
            free(text);
        }
        qsort(mk, 5, sizeof(double), s_cmp);
        qsort(in, 5, sizeof(double), s_cmp);
        printf("%8d %9zu %11zu %9.1f %11.1f\n", sizes[k], rows, bytes, mk[2], in[2]);
        sc_store_close(&s);
    }
    unlink(path);
    unlink(fpath);
    rmdir(dir);
    return 0;
}
