/* bench_agent_poll: CPU per IMDS poll of the agent's poll path, in a tight loop.
 *   build/bench/bench_agent_poll BASE_URL [N=2000] [GAP_MS=0]
 * Times (CPU, this process) N x (sc_imds_get_events + the agent's document tracker), so
 * that the cost of one poll can be split between the HTTP client and the agent's own work. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sc_agent_doc.h"
#include "sc_imds.h"

static double s_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    sc_imds_opts_t o;
    sc_imds_t *imds = NULL;
    sc_agent_doc_t *doc = NULL;
    long n = argc > 2 ? atol(argv[2]) : 2000;
    long gap_ms = argc > 3 ? atol(argv[3]) : 0;
    double t0, t1, t2;
    long ok = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: bench_agent_poll BASE_URL [N]\n");
        return 2;
    }
    sc_imds_opts_init(&o);
    o.base_url = argv[1];
    if (sc_imds_new(&o, &imds) || sc_agent_doc_new(&doc))
        return 1;
    t0 = s_cpu_us();
    for (long i = 0; i < n; i++) {
        char *body = NULL;
        size_t len = 0;
        sc_agent_doc_verdict_t v;
        if (gap_ms > 0) {
            /* idle between polls as the daemon does: caches go cold, as in real life */
            struct timespec gap = {gap_ms / 1000, (gap_ms % 1000) * 1000000L};
            nanosleep(&gap, NULL);
        }
        if (sc_imds_get_events(imds, &body, &len, NULL) == 0) {
            ok++;
            sc_agent_doc_feed(doc, body, len, &v, NULL, 0);
        }
        free(body);
    }
    t1 = s_cpu_us();
    for (long i = 0; i < n; i++) {
        char *body = NULL;
        size_t len = 0;
        sc_agent_doc_verdict_t v;
        (void)body;
        (void)len;
        sc_agent_doc_feed(doc, "{\"DocumentIncarnation\":1,\"Events\":[]}", 37, &v, NULL, 0);
    }
    t2 = s_cpu_us();
    printf("polls %ld ok %ld: %.1f us CPU per poll (GET + tracker); tracker alone %.2f us\n", n, ok,
           (t1 - t0) / (double)n, (t2 - t1) / (double)n);
    sc_agent_doc_destroy(&doc);
    sc_imds_destroy(&imds);
    return 0;
}
