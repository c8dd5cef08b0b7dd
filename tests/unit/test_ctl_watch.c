/* schedcoordctl watch: the frame of a status (one column per fault domain, each VM's state and
 * marks, the events with their NotBefore countdown), plain mode's lines printed only for what
 * changed (never for a countdown), an unreachable coordinator said once, "in flight" for
 * --until-idle, and the options (bad values named, exit 2). */
#include "sc_ctl.h"
#include "sc_ctl_watch.h"
#include "sc_test.h"

/* 21:33:20 UTC; the first event's NotBefore is 250 s later */
#define NOW_MS 1795469600000LL

static const char s_status[] =
    "{\"leader\":\"vm_0\",\"self\":\"vm_0\",\"term\":3,\"role\":\"leader\",\"paused\":false,"
    "\"members\":["
    "{\"name\":\"vm_0\",\"fault_domain\":0,\"state\":\"draining\",\"alive\":true,"
    "\"imds_stale\":false},"
    "{\"name\":\"vm_1\",\"fault_domain\":1,\"state\":\"healthy\",\"alive\":true,"
    "\"imds_stale\":true},"
    "{\"name\":\"vm_2\",\"fault_domain\":2,\"state\":\"healthy\",\"alive\":true,"
    "\"imds_stale\":false},"
    "{\"name\":\"vm_3\",\"fault_domain\":0,\"state\":\"draining\",\"alive\":true,"
    "\"imds_stale\":false},"
    "{\"name\":\"vm_4\",\"fault_domain\":1,\"state\":\"healthy\",\"alive\":false,"
    "\"imds_stale\":false},"
    "{\"name\":\"vm_5\",\"fault_domain\":2,\"state\":\"healthy\",\"alive\":true,"
    "\"imds_stale\":false}],"
    "\"events\":["
    "{\"EventId\":\"90394757-551f-4011-a200-76cf8344bb44\",\"type\":\"Reboot\","
    "\"status\":\"Scheduled\",\"resources\":[\"vm_0\",\"vm_3\"],\"not_before\":1795469850,"
    "\"ended_ms\":null,\"approval\":\"none\",\"waiting_for\":\"draining: 0/2 prepared\"},"
    "{\"EventId\":\"11111111-0000-0000-0000-000000000000\",\"type\":\"Freeze\","
    "\"status\":\"Started\",\"resources\":[\"vm_1\",\"vm_2\"],\"not_before\":null,"
    "\"started_ms\":1795469590000,\"ended_ms\":1795469595000,\"ended_how\":\"completed\","
    "\"approval\":null,\"waiting_for\":null}]}";

/* The text fn printed for st (a memory file). */
static char *s_render(json_object *st, int64_t now, bool color, int *ret_lines,
                      sc_ctl_watch_memo_t *memo)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int n = 0;
    if (memo)
        n = sc_ctl_watch_changes(memo, st, "cannot reach it", now, f);
    else
        sc_ctl_watch_frame(st, now, color, f);
    fclose(f);
    if (ret_lines)
        *ret_lines = n;
    return buf;
}

SC_TEST(frame)
{
    json_object *st = json_tokener_parse(s_status);
    SC_REQUIRE(st);
    char *t = s_render(st, NOW_MS, false, NULL, NULL);

    SC_CHECK(strstr(t, "leader vm_0, term 3, approvals on  21:33:20 UTC\n") != NULL);
    SC_CHECK(strstr(t, "6 VMs in 3 fault domains: 4 healthy, 2 draining\n") != NULL);
    /* one column per fault domain, its VMs under it; ! no agent, ? blind */
    SC_CHECK(strstr(t, "\nFD 0              FD 1             FD 2\n") != NULL);
    SC_CHECK(strstr(t, "\nvm_0 draining     vm_1 healthy ?   vm_2 healthy\n") != NULL);
    SC_CHECK(strstr(t, "\nvm_3 draining     vm_4 healthy !   vm_5 healthy\n") != NULL);
    SC_CHECK(strstr(t, "! no word from its agent   ? its IMDS does not answer (blind)") != NULL);
    /* the open event with its countdown and what it waits for, then the one over */
    SC_CHECK(strstr(t, "90394757  Reboot     vm_0 vm_3 (FD 0)    Scheduled  none        "
                       "NotBefore in 4 min 10 s\n") != NULL);
    SC_CHECK(strstr(t, "          waiting for: draining: 0/2 prepared\n") != NULL);
    SC_CHECK(strstr(t, "11111111  Freeze     vm_1 vm_2 (FD 1,2)  completed  -           "
                       "ended 5 s ago\n") != NULL);
    SC_CHECK(strstr(t, "90394757") < strstr(t, "11111111"));
    SC_CHECK(strchr(t, '\033') == NULL);
    free(t);

    /* colors only when asked, and the countdown follows the clock */
    t = s_render(st, NOW_MS + 245000, true, NULL, NULL);
    SC_CHECK(strstr(t, "\033[33mdraining\033[0m") != NULL);
    SC_CHECK(strstr(t, "NotBefore in 5 s") != NULL);
    free(t);
    t = s_render(st, NOW_MS + 252000, false, NULL, NULL);
    SC_CHECK(strstr(t, "NotBefore 2 s ago") != NULL);
    free(t);
    json_object_put(st);

    /* nothing at all */
    st = json_tokener_parse("{\"leader\":null,\"self\":\"vm_2\",\"term\":1,\"members\":[],"
                            "\"events\":[]}");
    t = s_render(st, NOW_MS, false, NULL, NULL);
    SC_CHECK(strstr(t, "vm_2 follows, decides nothing") != NULL);
    SC_CHECK(strstr(t, "(no members)") != NULL);
    SC_CHECK(strstr(t, "(no events: nothing scheduled)") != NULL);
    free(t);
    SC_CHECK(!sc_ctl_watch_is_busy(st));
    json_object_put(st);
}

SC_TEST(plain_changes)
{
    json_object *st = json_tokener_parse(s_status), *m3, *ev;
    sc_ctl_watch_memo_t *memo = NULL;
    int n;
    SC_REQUIRE(st && sc_ctl_watch_memo_new(&memo) == 0);

    /* the first look: the whole picture, one line per fault domain and per event */
    char *t = s_render(st, NOW_MS, false, &n, memo);
    SC_CHECK_INT(n, 6);
    SC_CHECK(strstr(t, "21:33:20 leader vm_0, term 3, approvals on\n") != NULL);
    SC_CHECK(strstr(t, "21:33:20 FD 0: draining vm_0 vm_3\n") != NULL);
    SC_CHECK(strstr(t, "21:33:20 FD 1: healthy vm_1? vm_4!\n") != NULL);
    SC_CHECK(strstr(t, "21:33:20 event 90394757 Reboot vm_0 vm_3 (FD 0): Scheduled, approval "
                       "none, NotBefore 21:37:30 UTC (in 4 min 10 s); waiting for: draining: "
                       "0/2 prepared\n") != NULL);
    SC_CHECK(strstr(t, "event 11111111 Freeze vm_1 vm_2 (FD 1,2): completed\n") != NULL);
    free(t);
    /* a tick later, only the countdown moved: nothing */
    t = s_render(st, NOW_MS + 1000, false, &n, memo);
    SC_CHECK_INT(n, 0);
    SC_CHECK_STR(t, "");
    free(t);
    /* vm_3 drained: its fault domain's line, and nothing else */
    m3 = json_object_array_get_idx(json_object_object_get(st, "members"), 3);
    json_object_object_add(m3, "state", json_object_new_string("drained"));
    t = s_render(st, NOW_MS + 2000, false, &n, memo);
    SC_CHECK_INT(n, 1);
    SC_CHECK_STR(t, "21:33:22 FD 0: draining vm_0, drained vm_3\n");
    free(t);
    /* the event approved and started */
    ev = json_object_array_get_idx(json_object_object_get(st, "events"), 0);
    json_object_object_add(ev, "status", json_object_new_string("Started"));
    json_object_object_add(ev, "not_before", NULL);
    json_object_object_add(ev, "approval", json_object_new_string("approved"));
    json_object_object_add(ev, "waiting_for", NULL);
    t = s_render(st, NOW_MS + 3000, false, &n, memo);
    SC_CHECK_INT(n, 1);
    SC_CHECK_STR(t,
                 "21:33:23 event 90394757 Reboot vm_0 vm_3 (FD 0): Started, approval approved\n");
    free(t);
    SC_CHECK(sc_ctl_watch_is_busy(st));
    /* the coordinator gone: said once; back: the whole picture again */
    t = s_render(NULL, NOW_MS + 4000, false, &n, memo);
    SC_CHECK_INT(n, 1);
    SC_CHECK_STR(t, "21:33:24 coordinator: cannot reach it (retrying)\n");
    free(t);
    t = s_render(NULL, NOW_MS + 5000, false, &n, memo);
    SC_CHECK_INT(n, 0);
    free(t);
    t = s_render(st, NOW_MS + 6000, false, &n, memo);
    SC_CHECK_INT(n, 6);
    free(t);
    sc_ctl_watch_memo_destroy(&memo);
    SC_CHECK(memo == NULL);
    sc_ctl_watch_memo_destroy(&memo);

    /* idle: every VM healthy (or gone), no event open */
    for (size_t i = 0; i < 6; i++)
        json_object_object_add(json_object_array_get_idx(json_object_object_get(st, "members"), i),
                               "state", json_object_new_string(i == 2 ? "gone" : "healthy"));
    SC_CHECK(sc_ctl_watch_is_busy(st)); /* the event is still open */
    json_object_object_add(ev, "ended_ms", json_object_new_int64(NOW_MS));
    SC_CHECK(!sc_ctl_watch_is_busy(st));
    json_object_object_add(ev, "waiting_for", json_object_new_string("recovering vm_0"));
    SC_CHECK(sc_ctl_watch_is_busy(st)); /* over, but its VMs not recovered yet */
    json_object_put(st);
}

static int s_ctl(const char *const *args, char *out, size_t outlen)
{
    char *argv[16] = {"schedcoordctl"};
    int argc = 1;
    FILE *o = tmpfile(), *e = tmpfile();
    size_t n;
    int rc;

    static char b[16][256];

    for (; args[argc - 1] && argc < 15; argc++) {
        snprintf(b[argc], sizeof(b[argc]), "%s", args[argc - 1]);
        argv[argc] = b[argc];
    }
    rc = sc_ctl_main(argc, argv, o, e);
    rewind(o);
    rewind(e);
    n = fread(out, 1, outlen / 2 - 1, o);
    n += fread(out + n, 1, outlen / 2 - 1, e);
    out[n] = '\0';
    fclose(o);
    fclose(e);
    return rc;
}

SC_TEST(options)
{
    char out[8192];
    sc_ctl_watch_opts_t o;
    char err[256];
    char *a1[] = {"--interval", "0.25"}, *a2[] = {"--until-idle=7"}, *a3[] = {"--interval"};

    sc_ctl_watch_opts_init(&o);
    SC_CHECK(o.interval_s == 1.0 && o.idle_s == 0 && !o.once && !o.plain && !o.given);
    SC_CHECK_INT(sc_ctl_watch_arg(&o, 2, a1, err, sizeof(err)), 2);
    SC_CHECK(o.interval_s == 0.25 && o.given);
    SC_CHECK_INT(sc_ctl_watch_arg(&o, 1, a2, err, sizeof(err)), 1);
    SC_CHECK(o.idle_s == 7.0);
    SC_CHECK_INT(sc_ctl_watch_arg(&o, 1, a3, err, sizeof(err)), -1);
    SC_CHECK(strstr(err, "--interval: missing value") != NULL);

    SC_CHECK_INT(
        s_ctl((const char *[]){"--state-dir", "/nonexistent", "watch", "--interval", "abc", NULL},
              out, sizeof(out)),
        2);
    SC_CHECK(strstr(out, "--interval: \"abc\" is not a number of seconds from 0.1 to 3600") !=
             NULL);
    SC_CHECK_INT(
        s_ctl((const char *[]){"--state-dir", "/nonexistent", "watch", "--interval=0", NULL}, out,
              sizeof(out)),
        2);
    SC_CHECK_INT(
        s_ctl((const char *[]){"--state-dir", "/nonexistent", "watch", "--until-idle=-1", NULL},
              out, sizeof(out)),
        2);
    SC_CHECK(strstr(out, "--until-idle: \"-1\"") != NULL);
    SC_CHECK_INT(s_ctl((const char *[]){"--state-dir", "/nonexistent", "status", "--once", NULL},
                       out, sizeof(out)),
                 2);
    SC_CHECK(strstr(out, "options of watch only") != NULL);
    SC_CHECK_INT(s_ctl((const char *[]){"--state-dir", "/nonexistent", "watch", "--once",
                                        "--until-idle", NULL},
                       out, sizeof(out)),
                 2);
    SC_CHECK(strstr(out, "--once and --until-idle do not go together") != NULL);
    SC_CHECK_INT(s_ctl((const char *[]){"--state-dir", "/nonexistent", "watch", "--json", NULL},
                       out, sizeof(out)),
                 2);
    SC_CHECK(strstr(out, "watch has no --json") != NULL);
    /* --once with nobody listening: the reason, exit 1 */
    SC_CHECK_INT(
        s_ctl((const char *[]){"--state-dir", "/nonexistent", "watch", "--once", "--plain", NULL},
              out, sizeof(out)),
        1);
    SC_CHECK(strstr(out, "cannot reach the coordinator") != NULL);
    SC_CHECK_INT(s_ctl((const char *[]){"--help", NULL}, out, sizeof(out)), 0);
    SC_CHECK(strstr(out, "watch [--interval S] [--once] [--plain]") != NULL);
}

int main(void)
{
    SC_RUN(frame);
    SC_RUN(plain_changes);
    SC_RUN(options);
    return sc_test_done();
}
