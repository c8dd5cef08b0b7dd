/* bench_sim_poll: polls N simulated VMs of imds-sim once per second each, the way N agents
 * would (one keep-alive connection per VM, requests spread evenly over the second), with
 * libcurl multi, and reports requests, errors and latency percentiles.
 *
 *   bench_sim_poll BASE_URL N SECONDS [PREFIX]
 *   bench_sim_poll http://127.0.0.1:8080 1000 20 vm_
 *
 * Prints one line of key=value figures on stdout. Exit 0, or 1 when an argument is bad or
 * more than 1% of the requests failed. */
#include <curl/curl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

typedef struct {
    CURL *easy;      /* this VM's handle (keeps its connection) */
    int64_t due_ms;  /* when its next poll is due */
    int64_t sent_ms; /* when the poll in flight was sent, 0 = idle */
} vm_t;

static int64_t s_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t s_discard(char *p, size_t size, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return size * n;
}

static int s_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *base, *prefix;
    long n, secs;
    vm_t *vms;
    int64_t *lat, start, end;
    size_t nlat = 0, cap;
    long errors = 0, late = 0;
    CURLM *multi;
    struct curl_slist *hdr = NULL;
    struct rlimit rl;

    if (argc < 4 || (n = strtol(argv[2], NULL, 10)) < 1 || n > 20000 ||
        (secs = strtol(argv[3], NULL, 10)) < 1 || secs > 3600) {
        fprintf(stderr, "usage: bench_sim_poll BASE_URL N(1-20000) SECONDS(1-3600) [PREFIX]\n");
        return 1;
    }
    base = argv[1];
    prefix = argc > 4 ? argv[4] : "vm_";
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, n + 16);
    hdr = curl_slist_append(hdr, "Metadata: true");
    vms = calloc((size_t)n, sizeof(*vms));
    cap = (size_t)(n * (secs + 2));
    lat = malloc(sizeof(*lat) * cap);
    if (!multi || !hdr || !vms || !lat) {
        fprintf(stderr, "bench_sim_poll: out of memory\n");
        return 1;
    }
    start = s_now_ms();
    for (long i = 0; i < n; i++) {
        char url[512];

        snprintf(url, sizeof(url), "%s/%s%ld/metadata/scheduledevents?api-version=2020-07-01", base,
                 prefix, i);
        vms[i].easy = curl_easy_init();
        curl_easy_setopt(vms[i].easy, CURLOPT_URL, url);
        curl_easy_setopt(vms[i].easy, CURLOPT_HTTPHEADER, hdr);
        curl_easy_setopt(vms[i].easy, CURLOPT_WRITEFUNCTION, s_discard);
        curl_easy_setopt(vms[i].easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(vms[i].easy, CURLOPT_TIMEOUT_MS, 5000L);
        curl_easy_setopt(vms[i].easy, CURLOPT_PRIVATE, &vms[i]);
        curl_easy_setopt(vms[i].easy, CURLOPT_PROXY, "");
        vms[i].due_ms = start + i * 1000 / n;
    }
    end = start + secs * 1000;
    for (;;) {
        int64_t now = s_now_ms(), next = end;
        int running, left;
        CURLMsg *m;

        if (now >= end)
            break;
        for (long i = 0; i < n; i++) {
            if (vms[i].due_ms <= now) {
                if (vms[i].sent_ms) {
                    late++; /* the previous poll is still in flight */
                } else {
                    vms[i].sent_ms = now;
                    curl_multi_add_handle(multi, vms[i].easy);
                }
                vms[i].due_ms += 1000;
            }
            if (vms[i].due_ms < next)
                next = vms[i].due_ms;
        }
        curl_multi_perform(multi, &running);
        while ((m = curl_multi_info_read(multi, &left))) {
            vm_t *vm;
            long code = 0;
            curl_off_t us = 0;

            if (m->msg != CURLMSG_DONE)
                continue;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&vm);
            curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &code);
            curl_easy_getinfo(m->easy_handle, CURLINFO_TOTAL_TIME_T, &us);
            if (m->data.result != CURLE_OK || code != 200)
                errors++;
            else if (nlat < cap)
                lat[nlat++] = (int64_t)us;
            curl_multi_remove_handle(multi, m->easy_handle);
            vm->sent_ms = 0;
        }
        now = s_now_ms();
        curl_multi_poll(multi, NULL, 0, next > now ? (int)(next - now) : 0, NULL);
    }
    qsort(lat, nlat, sizeof(*lat), s_cmp);
    printf("vms=%ld seconds=%ld requests=%zu rate=%.0f/s errors=%ld late=%ld "
           "latency_us_p50=%lld p90=%lld p99=%lld max=%lld\n",
           n, secs, nlat, (double)nlat / (double)secs, errors, late,
           nlat ? (long long)lat[nlat / 2] : -1LL, nlat ? (long long)lat[nlat * 9 / 10] : -1LL,
           nlat ? (long long)lat[nlat * 99 / 100] : -1LL, nlat ? (long long)lat[nlat - 1] : -1LL);
    for (long i = 0; i < n; i++) {
        curl_multi_remove_handle(multi, vms[i].easy);
        curl_easy_cleanup(vms[i].easy);
    }
    curl_multi_cleanup(multi);
    curl_slist_free_all(hdr);
    curl_global_cleanup();
    free(vms);
    free(lat);
    return (double)errors > 0.01 * (double)(nlat + (size_t)errors) ? 1 : 0;
}
