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

int main(void)
{
    snprintf(s_dir, sizeof(s_dir), "%s", sc_test_tmpdir(NULL));
    snprintf(s_sock, sizeof(s_sock), "%s/%s", s_dir, SC_CTL_SOCKET_NAME);
    char db[1100];
    snprintf(db, sizeof(db), "%s/%s", s_dir, SC_CTL_DB_NAME);
    unlink(db);
    SC_RUN(request_and_errors);
    SC_RUN(command_line);
    return sc_test_done();
}
