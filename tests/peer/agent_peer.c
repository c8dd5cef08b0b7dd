/* sc-agent-peer: a minimal coordinator-side peer for the agent's tests and benchmark.
 *
 *   sc-agent-peer keygen [--name NAME] [--out DIR]     (as schedcoordctl keygen)
 *   sc-agent-peer --bind tcp://127.0.0.1:PORT --name NAME --log FILE --cmds FILE
 *                 [--insecure | --key FILE --keys FILE]
 *
 * Binds a ROUTER (CURVE server with a ZAP handler over the keyring, unless --insecure) and
 * appends one JSON line per received message to --log:
 *   {"t":1700000000.123,"user":"vm_0","msg":{...the message as received...}}
 *   {"t":...,"reject":"reason"}                      (refused by the decoder)
 * and executes the lines appended to --cmds (read from where it stopped, every 50 ms):
 *   leader TERM                     one leader message (leader = NAME) to every agent seen
 *   beat TERM [MS] | beat off       a leader message every MS ms (default 1000)
 *   order TERM prepare|recover ID [ATTEMPT]   an order for event ID (attempt 1 by default)
 *   approve_via TERM ID             an approve_via for event ID
 *   doc_request                     ask for the document again
 *   quit
 * Agents are known once they sent anything (their routing id). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "sc_curve.h"
#include "sc_keygen.h"
#include "sc_error.h"
#include "sc_msg.h"
#include "sc_time.h"

#define S_MAX_AGENTS 64

typedef struct {
    unsigned char id[256]; /* routing id */
    size_t id_len;
} s_agent_t;

static volatile sig_atomic_t s_stop;
static s_agent_t s_agents[S_MAX_AGENTS];
static size_t s_n_agents;
static uint64_t s_seq;
static char s_name[SC_NAME_MAX + 1] = "peer";
static FILE *s_log;

static void s_on_signal(int sig)
{
    (void)sig;
    s_stop = 1;
}

static void s_logf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void s_logf(const char *fmt, ...)
{
    va_list ap;

    fprintf(s_log, "{\"t\":%.3f,", (double)sc_wall_ms() / 1000.0);
    va_start(ap, fmt);
    vfprintf(s_log, fmt, ap);
    va_end(ap);
    fprintf(s_log, "}\n");
    fflush(s_log);
}

static void s_send_all(void *sock, sc_msg_t *msg)
{
    char *buf = NULL;
    size_t len = 0;
    char err[256];

    if (sc_msg_encode(msg, &buf, &len) != 0) {
        sc_msg_validate(msg, err, sizeof(err));
        fprintf(stderr, "sc-agent-peer: cannot encode: %s\n", err);
        return;
    }
    for (size_t i = 0; i < s_n_agents; i++) {
        zmq_send(sock, s_agents[i].id, s_agents[i].id_len, ZMQ_SNDMORE | ZMQ_DONTWAIT);
        zmq_send(sock, buf, len, ZMQ_DONTWAIT);
    }
    s_logf("\"sent\":%s", buf);
    free(buf);
}

static void s_command(void *sock, char *line, uint64_t *beat_term, int64_t *beat_ms)
{
    char a[64] = "", b[64] = "", c[128] = "";
    unsigned long long term = 0;
    sc_msg_t *msg = NULL;
    int attempt = 1;
    int n = sscanf(line, "%63s %llu %63s %127s %d", a, &term, b, c, &attempt);

    if (n < 1)
        return;
    if (strcmp(a, "quit") == 0) {
        s_stop = 1;
    } else if (strcmp(a, "beat") == 0) {
        *beat_term = strstr(line, "off") ? 0 : term;
        *beat_ms = n >= 3 && atoll(b) > 0 ? atoll(b) : 1000;
    } else if (strcmp(a, "leader") == 0 &&
               sc_msg_new(SC_MSG_LEADER, s_name, term, ++s_seq, &msg) == 0) {
        snprintf(msg->leader.leader, sizeof(msg->leader.leader), "%s", s_name);
        msg->leader.lease_ms = 3000;
    } else if (strcmp(a, "order") == 0 && n >= 4 &&
               sc_msg_new(SC_MSG_ORDER, s_name, term, ++s_seq, &msg) == 0) {
        sc_msg_phase_parse(b, &msg->order.action);
        msg->order.attempt = attempt;
        snprintf(msg->order.event, sizeof(msg->order.event), "%s", c);
    } else if (strcmp(a, "approve_via") == 0 && n >= 3 &&
               sc_msg_new(SC_MSG_APPROVE_VIA, s_name, term, ++s_seq, &msg) == 0) {
        sc_msg_add_event(msg, b);
    } else if (strcmp(a, "doc_request") == 0 &&
               sc_msg_new(SC_MSG_DOC_REQUEST, s_name, 0, ++s_seq, &msg) == 0) {
    } else {
        fprintf(stderr, "sc-agent-peer: unknown command: %s\n", line);
    }
    if (msg)
        s_send_all(sock, msg);
    sc_msg_destroy(&msg);
}

static void s_receive(void *sock, bool secure)
{
    for (;;) {
        zmq_msg_t id, body;
        const char *user;
        sc_msg_t *msg = NULL;
        char err[256] = "";
        bool known = false;

        zmq_msg_init(&id);
        if (zmq_msg_recv(&id, sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&id);
            return;
        }
        zmq_msg_init(&body);
        zmq_msg_recv(&body, sock, 0);
        user = zmq_msg_gets(&body, "User-Id");
        for (size_t i = 0; i < s_n_agents; i++)
            if (s_agents[i].id_len == zmq_msg_size(&id) &&
                memcmp(s_agents[i].id, zmq_msg_data(&id), zmq_msg_size(&id)) == 0)
                known = true;
        if (!known && s_n_agents < S_MAX_AGENTS && zmq_msg_size(&id) <= 256) {
            memcpy(s_agents[s_n_agents].id, zmq_msg_data(&id), zmq_msg_size(&id));
            s_agents[s_n_agents++].id_len = zmq_msg_size(&id);
        }
        if (sc_msg_decode(zmq_msg_data(&body), zmq_msg_size(&body), &msg, err, sizeof(err))) {
            for (char *p = err; *p; p++)
                if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
                    *p = '\'';
            s_logf("\"reject\":\"%s\"", err);
        } else if (secure && (!user || strcmp(user, msg->from) != 0)) {
            s_logf("\"reject\":\"from %s is not the User-Id %s\"", msg->from, user ? user : "");
        } else {
            char *text = strndup(zmq_msg_data(&body), zmq_msg_size(&body));
            fprintf(s_log, "{\"t\":%.3f,\"user\":\"%s\",\"msg\":%s}\n",
                    (double)sc_wall_ms() / 1000.0, user ? user : "", text ? text : "null");
            fflush(s_log);
            free(text);
        }
        sc_msg_destroy(&msg);
        zmq_msg_close(&id);
        zmq_msg_close(&body);
    }
}

int main(int argc, char **argv)
{
    const char *bind = NULL, *log = NULL, *cmds = NULL, *key = NULL, *keys = NULL;
    bool insecure = false;
    sc_curve_keypair_t kp;
    sc_keyring_t *ring = NULL;
    sc_zap_t *zap = NULL;
    void *ctx, *sock;
    FILE *cf = NULL;
    long off = 0;
    uint64_t beat_term = 0;
    int64_t next_beat = 0, beat_ms = 1000;
    char err[256];
    int zero = 0;

    if (argc > 1 && strcmp(argv[1], "keygen") == 0)
        return sc_keygen_main(argc - 1, argv + 1);
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--insecure") == 0) {
            insecure = true;
            continue;
        }
        if (!v)
            goto usage;
        if (strcmp(argv[i], "--bind") == 0)
            bind = v;
        else if (strcmp(argv[i], "--name") == 0)
            snprintf(s_name, sizeof(s_name), "%s", v);
        else if (strcmp(argv[i], "--log") == 0)
            log = v;
        else if (strcmp(argv[i], "--cmds") == 0)
            cmds = v;
        else if (strcmp(argv[i], "--key") == 0)
            key = v;
        else if (strcmp(argv[i], "--keys") == 0)
            keys = v;
        else
            goto usage;
        i++;
    }
    if (!bind || !log || !cmds || (!insecure && (!key || !keys)))
        goto usage;
    if (!(s_log = fopen(log, "a"))) {
        perror(log);
        return 1;
    }
    signal(SIGTERM, s_on_signal);
    signal(SIGINT, s_on_signal);
    ctx = zmq_ctx_new();
    sock = zmq_socket(ctx, ZMQ_ROUTER);
    zmq_setsockopt(sock, ZMQ_LINGER, &zero, sizeof(zero));
    if (insecure) {
        sc_sock_insecure_setup(sock);
    } else {
        if (sc_curve_keypair_load(key, &kp, err, sizeof(err)) ||
            sc_keyring_load(keys, &ring, err, sizeof(err))) {
            fprintf(stderr, "sc-agent-peer: %s\n", err);
            return 1;
        }
        if (sc_zap_start(ctx, ring, NULL, NULL, &zap) || sc_curve_server_setup(sock, &kp, zap)) {
            fprintf(stderr, "sc-agent-peer: CURVE setup failed\n");
            return 1;
        }
    }
    if (zmq_bind(sock, bind) != 0) {
        fprintf(stderr, "sc-agent-peer: bind %s: %s\n", bind, zmq_strerror(zmq_errno()));
        return 1;
    }
    {
        char ep[256] = "";
        size_t eplen = sizeof(ep);
        zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, ep, &eplen);
        s_logf("\"peer\":\"ready\",\"endpoint\":\"%s\"", ep);
    }
    while (!s_stop) {
        zmq_pollitem_t it = {.socket = sock, .events = ZMQ_POLLIN};
        char line[512];

        if (zmq_poll(&it, 1, 50) > 0)
            s_receive(sock, !insecure);
        if (!cf)
            cf = fopen(cmds, "r");
        if (cf) {
            clearerr(cf);
            fseek(cf, off, SEEK_SET);
            while (fgets(line, sizeof(line), cf) && strchr(line, '\n')) {
                off = ftell(cf);
                s_command(sock, line, &beat_term, &beat_ms);
            }
        }
        if (beat_term && sc_mono_ms() >= next_beat) {
            sc_msg_t *msg = NULL;
            if (sc_msg_new(SC_MSG_LEADER, s_name, beat_term, ++s_seq, &msg) == 0) {
                snprintf(msg->leader.leader, sizeof(msg->leader.leader), "%s", s_name);
                msg->leader.lease_ms = 3000;
                s_send_all(sock, msg);
            }
            sc_msg_destroy(&msg);
            next_beat = sc_mono_ms() + beat_ms;
        }
    }
    if (cf)
        fclose(cf);
    zmq_close(sock);
    sc_zap_stop(&zap);
    zmq_ctx_term(ctx);
    sc_keyring_destroy(&ring);
    fclose(s_log);
    return 0;
usage:
    fprintf(stderr, "usage: sc-agent-peer --bind tcp://127.0.0.1:PORT --name NAME --log FILE "
                    "--cmds FILE [--insecure | --key FILE --keys FILE]\n");
    return 2;
}
