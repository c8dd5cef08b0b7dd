/* The control socket and schedcoordctl: a request answered by the handler, bad requests
 * answered with an error naming the problem, a client with no coordinator told so, the
 * command line's usage errors, history read from the store file without a daemon. */
#include "sc_ctl.h"
#include "sc_dlog.h"
#include "sc_store.h"
#include "sc_test.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static char s_dir[900], s_sock[1000];
static volatile int s_stop;
static int s_served;

static json_object *s_handler(void *ud, const char *cmd, json_object *req)
{
    json_object *o = json_object_new_object();
    (void)req;
    (void)ud;
    if (strcmp(cmd, "status") == 0) {
        json_object *members = json_object_new_array(), *m = json_object_new_object();
        json_object_object_add(m, "name", json_object_new_string("vm_0"));
        json_object_object_add(m, "fault_domain", json_object_new_int(0));
        json_object_object_add(m, "state", json_object_new_string("draining"));
        json_object_array_add(members, m);
        json_object_object_add(o, "leader", json_object_new_string("vm_0"));
        json_object_object_add(o, "term", json_object_new_int(4));
        json_object_object_add(o, "members", members);
        json_object_object_add(o, "events", json_object_new_array());
    } else {
        json_object_object_add(o, "error", json_object_new_string("unknown command"));
    }
    return o;
}

static void *s_server(void *arg)
{
    int fd = *(int *)arg;
    while (!s_stop) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 50) > 0)
            while (sc_ctl_serve_one(fd, s_handler, NULL) == 1)
                s_served++;
    }
    return NULL;
}

/* Sends raw bytes, returns the answer's "error" (static buffer) or "". */
static const char *s_raw(const char *bytes)
{
    static char buf[512];
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ssize_t n;
    json_object *o, *e;
    if (strlen(s_sock) >= sizeof(sa.sun_path))
        return "socket path too long";
    memcpy(sa.sun_path, s_sock, strlen(s_sock) + 1);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return "connect failed";
    }
    if (write(fd, bytes, strlen(bytes)) < 0) {
        close(fd);
        return "write failed";
    }
    shutdown(fd, SHUT_WR);
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    o = json_tokener_parse(buf);
    snprintf(buf, sizeof(buf), "%s",
             o && json_object_object_get_ex(o, "error", &e) ? json_object_get_string(e) : "");
    json_object_put(o);
    return buf;
}

SC_TEST(request_and_errors)
{
    char err[256] = "";
    int fd = -1;
    pthread_t th;
    json_object *ans = NULL;

    SC_REQUIRE(sc_ctl_listen(s_sock, &fd, err, sizeof(err)) == 0);
    struct stat st;
    SC_CHECK(stat(s_sock, &st) == 0 && (st.st_mode & 077) == 0); /* 0600 */
    s_stop = 0;
    pthread_create(&th, NULL, s_server, &fd);

    SC_CHECK_INT(sc_ctl_request(s_sock, "{\"cmd\":\"status\"}", 2000, &ans, err, sizeof(err)), 0);
    SC_REQUIRE(ans);
    SC_CHECK_INT(json_object_get_int(json_object_object_get(ans, "term")), 4);
    SC_CHECK_STR(json_object_get_string(json_object_object_get(ans, "leader")), "vm_0");
    FILE *mem = tmpfile();
    sc_ctl_print_status(ans, mem);
    rewind(mem);
    char text[4096] = "";
    size_t nr = fread(text, 1, sizeof(text) - 1, mem);
    text[nr] = '\0';
    fclose(mem);
    SC_CHECK(strstr(text, "leader: vm_0") != NULL);
    SC_CHECK(strstr(text, "draining") != NULL);
    SC_CHECK(strstr(text, "(no events)") != NULL);
    json_object_put(ans);

    SC_CHECK_STR(s_raw("not json\n"), "request is not a JSON object");
    SC_CHECK_STR(s_raw("[1,2]\n"), "request is not a JSON object");
    SC_CHECK_STR(s_raw("{\"cmd\":7}\n"), "request has no \"cmd\" string");
    SC_CHECK_STR(s_raw("{\"cmd\":\"fly\"}\n"), "unknown command");
    char big[6000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    SC_CHECK_STR(s_raw(big), "request larger than 4096 bytes");

    s_stop = 1;
    pthread_join(th, NULL);
    sc_ctl_close(fd, s_sock);
    SC_CHECK(access(s_sock, F_OK) != 0);
    /* Nobody listens any more. */
    SC_CHECK(sc_ctl_request(s_sock, "{\"cmd\":\"status\"}", 500, &ans, err, sizeof(err)) < 0);
    SC_CHECK(strstr(err, "is it running") != NULL);
}

static int s_ctl(const char *a1, const char *a2, const char *a3, const char *a4, char *out,
                 size_t outlen)
{
    static char b[5][1024];
    const char *src[5] = {"schedcoordctl", a1, a2, a3, a4};
    char *argv[6] = {NULL};
    for (int i = 0; i < 5 && src[i]; i++) {
        snprintf(b[i], sizeof(b[i]), "%s", src[i]);
        argv[i] = b[i];
    }
    int argc = 1;
    while (argc < 5 && argv[argc])
        argc++;
    FILE *o = tmpfile(), *e = tmpfile();
    int rc = sc_ctl_main(argc, argv, o, e);
    size_t n;
    rewind(o);
    rewind(e);
    n = fread(out, 1, outlen / 2 - 1, o);
    n += fread(out + n, 1, outlen / 2 - 1, e);
    out[n] = '\0';
    fclose(o);
    fclose(e);
    return rc;
}

/* status names a member that runs with another members digest, and whether we are held back */
SC_TEST(status_says_members_differ)
{
    json_object *st = json_tokener_parse(
        "{\"leader\": null, \"term\": 2, \"role\": \"voter\", \"paused\": false,"
        " \"members_mismatch\": {\"peer\": \"vm_0\", \"ours\": \"470ad10d583c2ccb\","
        " \"theirs\": \"5096dc405e143c87\", \"since_ms\": 1795759393805, \"voter\": true,"
        " \"others\": []}, \"members\": [], \"events\": []}");
    char text[4096] = "";
    FILE *mem = tmpfile();
    size_t nr;

    SC_REQUIRE(st && mem);
    sc_ctl_print_status(st, mem);
    json_object_object_add(st, "members_mismatch", NULL);
    sc_ctl_print_status(st, mem);
    rewind(mem);
    nr = fread(text, 1, sizeof(text) - 1, mem);
    text[nr] = '\0';
    fclose(mem);
    json_object_put(st);
    SC_CHECK(strstr(text, "MEMBERS DIFFER: vm_0 runs with members digest 5096dc405e143c87, ours "
                          "470ad10d583c2ccb (since ") != NULL);
    SC_CHECK(strstr(text, "one of our voters, so this coordinator does not lead") != NULL);
    /* the second print, with null: no such line */
    SC_CHECK(!strstr(text, "MEMBERS DIFFER") ||
             !strstr(strstr(text, "MEMBERS DIFFER") + 1, "MEMBERS DIFFER"));
}

SC_TEST(command_line)
{
    char out[8192];
    SC_CHECK_INT(s_ctl(NULL, NULL, NULL, NULL, out, sizeof(out)), 2);
    SC_CHECK(strstr(out, "no command") != NULL);
    SC_CHECK_INT(s_ctl("status", NULL, NULL, NULL, out, sizeof(out)), 2);
    SC_CHECK(strstr(out, "--state-dir") != NULL);
    SC_CHECK_INT(s_ctl("--state-dir", s_dir, "explode", NULL, out, sizeof(out)), 2);
    SC_CHECK(strstr(out, "unknown command \"explode\"") != NULL);
    SC_CHECK_INT(s_ctl("--state-dir", s_dir, "status", "--bogus", out, sizeof(out)), 2);
    SC_CHECK(strstr(out, "unknown option --bogus") != NULL);
    SC_CHECK_INT(s_ctl("status", "--state-dir", NULL, NULL, out, sizeof(out)), 2);
    SC_CHECK(strstr(out, "--state-dir: missing value") != NULL);
    SC_CHECK_INT(s_ctl("--state-dir", s_dir, "status", NULL, out, sizeof(out)), 1);
    SC_CHECK(strstr(out, "cannot reach the coordinator") != NULL);
    /* history without a daemon: straight from the store, read-only. */
    SC_CHECK_INT(s_ctl("--state-dir", s_dir, "history", NULL, out, sizeof(out)), 1);
    SC_CHECK(strstr(out, "cannot open") != NULL);
    char db[1100], err[256];
    sc_store_t *s = NULL;
    snprintf(db, sizeof(db), "%s/%s", s_dir, SC_CTL_DB_NAME);
    SC_REQUIRE(sc_store_open(db, &s, err, sizeof(err)) == 0);
    SC_CHECK_INT(
        sc_store_decide(s, 1, SC_DLOG_ALERT, "{\"message\":\"m\"}", "hello history", 1000, NULL),
        0);
    sc_store_close(&s);
    SC_CHECK_INT(s_ctl("--state-dir", s_dir, "history", NULL, out, sizeof(out)), 0);
    SC_CHECK(strstr(out, "hello history") != NULL);
    SC_CHECK_INT(s_ctl("--state-dir", s_dir, "history", "--json", out, sizeof(out)), 0);
    SC_CHECK(strstr(out, "\"kind\":\"alert\"") != NULL ||
             strstr(out, "\"kind\": \"alert\"") != NULL);
}

/* rehearse's options are checked before anything is sent; they belong to rehearse alone;
 * without a coordinator rehearse and plan fail naming it. */
SC_TEST(rehearse_and_plan_command_line)
{
    char out[8192];

    SC_CHECK_INT(s_ctl("--state-dir", s_dir, "rehearse", "--fault-domain=x", out, sizeof(out)), 2);
    SC_CHECK(strstr(out, "--fault-domain: \"x\" is not 0..1023") != NULL);
    SC_CHECK_INT(s_ctl("--state-dir", s_dir, "rehearse", "--recover-after=-1", out, sizeof(out)),
                 2);
    SC_CHECK(strstr(out, "--recover-after: \"-1\" is not 0..86400 seconds") != NULL);
    SC_CHECK_INT(s_ctl("--state-dir", s_dir, "rehearse", "--vms=vm_1,,vm_2", out, sizeof(out)), 2);
    SC_CHECK(strstr(out, "--vms: \"vm_1,,vm_2\" is not a list of names") != NULL);
    SC_CHECK_INT(s_ctl("--state-dir", s_dir, "rehearse", "--vms", out, sizeof(out)), 2);
    SC_CHECK(strstr(out, "--vms: missing value") != NULL);
    SC_CHECK_INT(s_ctl("--state-dir", s_dir, "status", "--event-type=Reboot", out, sizeof(out)), 2);
    SC_CHECK(strstr(out, "--event-type is an option of rehearse") != NULL);
    SC_CHECK_INT(s_ctl("--state-dir", s_dir, "rehearse", "--event-type=Reboot", out, sizeof(out)),
                 1);
    SC_CHECK(strstr(out, "cannot reach the coordinator") != NULL);
    SC_CHECK_INT(s_ctl("--state-dir", s_dir, "plan", "--json", out, sizeof(out)), 1);
    SC_CHECK(strstr(out, "cannot reach the coordinator") != NULL);
}

/* The text renderings of a rehearsal's report and of a plan answer. */
SC_TEST(report_and_plan_texts)
{
    json_object *r = json_tokener_parse(
        "{\"text\": [\"Rehearsal 2 (Reboot, the whole set): over in 14 s; nothing was POSTed to "
        "IMDS.\"], \"vms\": [{\"name\": \"vm_0\", \"fault_domain\": 0, \"update_domain\": 0,"
        " \"prepare_s\": 4.2, \"recover_s\": null, \"status\": \"prepare failed (exit 3)\"}],"
        " \"fault_domains\": [{\"fault_domain\": 0, \"vms\": [\"vm_0\"], \"prepare_s\": 250,"
        " \"recover_s\": null}], \"failures\": [{\"vm\": \"vm_0\", \"phase\": \"prepare\","
        " \"result\": \"failed\", \"exit_status\": 3, \"output_tail\": \"no quorum\"}],"
        " \"verdicts\": [{\"text\": \"Preempt: vm_0's prepare took 4.2 s; fits 30 s.\"}]}");
    json_object *p = json_tokener_parse(
        "{\"leader\": \"vm_0\", \"term\": 3, \"planned_ms\": 1000000000, \"serialise_by\":"
        " \"fault_domain\", \"max_fault_domains\": 1, \"paused\": false, \"events\": [{"
        "\"EventId\": \"P1\", \"type\": \"Preempt\", \"class\": \"evict\", \"queue_position\": 1,"
        " \"waiting_for\": \"draining\", \"forecast\": {\"drained_ms\": 1000041000, \"fits\": "
        "false,"
        " \"why\": \"at risk: vm_3\"}}], \"actions\": [{\"action\": \"ALERT\", \"alert\":"
        " \"forecast_late\", \"member\": null, \"reason\": \"late\"}], \"history\": {\"vm_3\":"
        " {\"prepare\": {\"median_s\": 41.0, \"p95_s\": 41.0, \"count\": 5}, \"recover\":"
        " {\"median_s\": 0.0, \"p95_s\": 0.0, \"count\": 0}}}}");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    SC_REQUIRE(r && p && f);
    sc_ctl_print_report(r, f);
    sc_ctl_print_plan(p, f);
    fclose(f);
    SC_CHECK(strstr(buf, "Rehearsal 2 (Reboot, the whole set): over in 14 s") != NULL);
    SC_CHECK(
        strstr(buf, "vm_0               0   0      4.2 s          -  prepare failed (exit 3)") !=
        NULL);
    SC_CHECK(strstr(buf, "0             4 min 10 s          -  vm_0") != NULL);
    SC_CHECK(strstr(buf, "  vm_0: prepare failed (exit 3): no quorum") != NULL);
    SC_CHECK(strstr(buf, "  Preempt: vm_0's prepare took 4.2 s; fits 30 s.") != NULL);
    SC_CHECK(strstr(buf, "leader vm_0, term 3; last plan round 13:46:40 UTC") != NULL);
    SC_CHECK(strstr(buf, "P1                                     Preempt   evict         1  "
                         "drained 13:47:21 UTC: DOES NOT FIT") != NULL);
    SC_CHECK(strstr(buf, "  forecast: at risk: vm_3") != NULL);
    SC_CHECK(strstr(buf, "  ALERT forecast_late: late") != NULL);
    SC_CHECK(strstr(buf, "vm_3             41 s / 41 s (5)              no history") != NULL);
    if (sc_test_checks_failed_)
        printf("%s", buf);
    free(buf);
    json_object_put(r);
    json_object_put(p);
}

int main(void)
{
    snprintf(s_dir, sizeof(s_dir), "%s", sc_test_tmpdir(NULL));
    snprintf(s_sock, sizeof(s_sock), "%s/%s", s_dir, SC_CTL_SOCKET_NAME);
    char db[1100];
    snprintf(db, sizeof(db), "%s/%s", s_dir, SC_CTL_DB_NAME);
    unlink(db);
    SC_RUN(request_and_errors);
    SC_RUN(status_says_members_differ);
    SC_RUN(command_line);
    SC_RUN(rehearse_and_plan_command_line);
    SC_RUN(report_and_plan_texts);
    return sc_test_done();
}
