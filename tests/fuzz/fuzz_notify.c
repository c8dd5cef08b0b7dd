/* Fuzzes sc_notify's input: the input is a --notify value (sc_notify_spec_check: an accepted
 * one has 0..SC_NOTIFY_MAX_TARGETS targets, a refused one a reason), or, when it starts with
 * the byte 0x01, a message whose fields come from the input (the next bytes: kind, fault
 * domain, flags; then NUL-separated strings: event id, type, phase, leader, previous leader,
 * detail, cluster, from, then VM names), rendered in every format: each body must be strict
 * JSON, valid UTF-8, at most SC_NOTIFY_BODY_MAX bytes. */
#include "sc_error.h"
#include "sc_notify.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_STRINGS 8   /* id, type, phase, leader, prev, detail, cluster, from */
#define FUZZ_VMS_MAX 300 /* VM names taken from the input */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void s_check_body(const char *body)
{
    json_tokener *tok = json_tokener_new();
    json_object *o;

    if (strlen(body) > SC_NOTIFY_BODY_MAX || !tok)
        abort();
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    o = json_tokener_parse_ex(tok, body, (int)strlen(body));
    if (!o || json_tokener_get_error(tok) != json_tokener_success)
        abort();
    json_object_put(o);
    json_tokener_free(tok);
}

static void s_render(const uint8_t *data, size_t size)
{
    const char *str[FUZZ_STRINGS] = {0}, *vms[FUZZ_VMS_MAX];
    static const int order[] = {2, 0, -1, 1};
    char *text = malloc(size + 1), *p, *end;
    size_t n_str = 0, n_vms = 0;
    sc_notify_msg_t m;

    if (size < 3 || !text)
        goto out;
    sc_notify_msg_init(&m, (sc_notify_kind_t)(data[0] % SC_NOTIFY_KIND_MAX));
    m.fault_domain = (int)data[1] - 2;
    m.update_domains = data[2] & 1;
    m.ts_ms = (data[2] & 2) ? 1795438800000LL : 0;
    m.deadline_ms = (data[2] & 4) ? 1795438800000LL + (int64_t)data[1] * 3600000 : 0;
    m.drain_at_ms = (data[2] & 8) ? -1 : 1795438800000LL;
    m.term = (data[2] & 16) ? (int64_t)data[1] : 0;
    if (data[2] & 32) {
        m.drain_order = order;
        m.n_drain_order = sizeof(order) / sizeof(order[0]);
    }
    memcpy(text, data + 3, size - 3);
    text[size - 3] = '\0';
    end = text + (size - 3);
    for (p = text; p <= end; p += strlen(p) + 1) {
        if (n_str < FUZZ_STRINGS)
            str[n_str++] = p;
        else if (n_vms < FUZZ_VMS_MAX)
            vms[n_vms++] = p;
    }
    m.event_id = str[0];
    m.event_type = str[1];
    m.phase = str[2];
    m.leader = str[3];
    m.prev_leader = str[4];
    m.detail = str[5];
    m.vms = n_vms ? vms : NULL;
    m.n_vms = n_vms;
    for (int f = 0; f < SC_NOTIFY_FORMAT_MAX; f++) {
        char *body = NULL;
        int rc =
            sc_notify_render((sc_notify_format_t)f, &m, str[6], str[7], 1795438800000LL, &body);

        if (rc == -ENOMEM)
            continue;
        if (rc != 0 || !body)
            abort();
        s_check_body(body);
        free(body);
    }
out:
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *spec, err[512] = "";
    int rc;

    if (size > 0 && data[0] == 0x01) {
        s_render(data + 1, size - 1);
        return 0;
    }
    if (!(spec = malloc(size + 1)))
        return 0;
    memcpy(spec, data, size);
    spec[size] = '\0'; /* a NUL inside ends the value, as on a command line */
    rc = sc_notify_spec_check(spec, err, sizeof(err));
    if (rc > SC_NOTIFY_MAX_TARGETS || (rc < 0 && rc != SC_E_CONFIG && rc != -ENOMEM) ||
        (rc == SC_E_CONFIG && !err[0]))
        abort();
    free(spec);
    return 0;
}
