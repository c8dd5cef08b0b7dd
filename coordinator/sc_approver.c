#include "sc_approver.h"

#include "sc_error.h"
#include "sc_event.h"
#include "sc_imds.h"
#include "sc_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sc_approver {
    sc_store_t *store; /* borrowed */
    sc_imds_t *imds;   /* our own VM's IMDS */
    char *self;        /* our member name ("by") */
    uint64_t posts;    /* POSTs sent */
};

int sc_approver_new(sc_store_t *store, const char *imds_url, const char *self_name,
                    sc_approver_t **ret_approver)
{
    sc_approver_t *self;
    sc_imds_opts_t o;
    int rc;

    if (!store || !imds_url || !self_name || !ret_approver)
        return -EINVAL;
    if (!(self = calloc(1, sizeof(*self))))
        return -ENOMEM;
    self->store = store;
    sc_imds_opts_init(&o);
    o.base_url = imds_url;
    if (!(self->self = strdup(self_name))) {
        rc = -ENOMEM;
        goto fail;
    }
    if ((rc = sc_imds_new(&o, &self->imds)) < 0)
        goto fail;
    *ret_approver = self;
    return 0;
fail:
    sc_approver_destroy(&self);
    return rc;
}

void sc_approver_destroy(sc_approver_t **approver)
{
    if (!approver || !*approver)
        return;
    sc_imds_destroy(&(*approver)->imds);
    free((*approver)->self);
    free(*approver);
    *approver = NULL;
}

int sc_approver_intent_data(const sc_approver_t *a, const char *via, const char *const *ids,
                            size_t n, json_object **ret_data)
{
    json_object *d, *arr;
    char *body = NULL;
    int rc;

    if (!a || !ret_data)
        return -EINVAL;
    if ((rc = sc_approval_body(ids, n, &body)) < 0)
        return rc;
    d = json_object_new_object();
    arr = json_object_new_array();
    for (size_t i = 0; i < n; i++)
        json_object_array_add(arr, json_object_new_string(ids[i]));
    json_object_object_add(d, "event_ids", arr);
    json_object_object_add(d, "body", json_object_new_string(body));
    json_object_object_add(d, "via", via ? json_object_new_string(via) : NULL);
    json_object_object_add(d, "by", json_object_new_string(a->self));
    free(body);
    *ret_data = d;
    return 0;
}

json_object *sc_approver_answer_data(int64_t intent, int rc, long http_status, const char *message)
{
    json_object *d = json_object_new_object();

    json_object_object_add(d, "intent", json_object_new_int64(intent));
    json_object_object_add(d, "rc", json_object_new_int(rc));
    json_object_object_add(d, "http_status", json_object_new_int64(http_status));
    json_object_object_add(d, "message", json_object_new_string(message ? message : ""));
    /* no HTTP status: nobody can say whether the POST landed (a timeout, a delegate that never
     * answered, an intent a tenure left open): it may still land (sc_cstate's UNKNOWN) */
    if (rc != 0 && http_status <= 0)
        json_object_object_add(d, "unknown", json_object_new_boolean(1));
    return d;
}

int sc_approver_post(sc_approver_t *a, const char *body, sc_approval_outcome_t *ret_outcome)
{
    sc_imds_status_t st = {0};
    sc_approval_outcome_t out = {0};

    if (!a || !body || !ret_outcome)
        return -EINVAL;
    a->posts++;
    out.rc = sc_imds_post_events(a->imds, body, &st);
    out.http_status = st.http_status;
    out.retry_after_ms = st.retry_after_ms;
    snprintf(out.message, sizeof(out.message), "%s",
             out.rc == 0 ? "approved" : (st.message[0] ? st.message : sc_strerror(out.rc)));
    *ret_outcome = out;
    return 0;
}

static int s_intent(sc_approver_t *a, int64_t term, const char *via, const char *const *ids,
                    size_t n, const char *reason, char **ret_body, int64_t *ret_index)
{
    json_object *d = NULL, *b;
    int rc;

    if ((rc = sc_approver_intent_data(a, via, ids, n, &d)) < 0)
        return rc;
    rc = sc_store_decide_json(a->store, term, SC_DLOG_APPROVAL_INTENT, d, reason, sc_wall_ms(),
                              ret_index);
    if (rc >= 0 && ret_body && json_object_object_get_ex(d, "body", &b) &&
        !(*ret_body = strdup(json_object_get_string(b))))
        rc = -ENOMEM;
    json_object_put(d);
    return rc;
}

int sc_approver_record_answer(sc_approver_t *a, int64_t term, int64_t intent, int rc,
                              long http_status, const char *message)
{
    json_object *d;
    int r;

    if (!a)
        return -EINVAL;
    d = sc_approver_answer_data(intent, rc, http_status, message);
    r = sc_store_decide_json(a->store, term, SC_DLOG_APPROVAL_ANSWER, d,
                             rc == 0 ? "approval answered" : "approval failed", sc_wall_ms(), NULL);
    json_object_put(d);
    return r;
}

int sc_approver_approve(sc_approver_t *a, int64_t term, const char *const *ids, size_t n,
                        const char *reason, sc_approval_outcome_t *ret_outcome)
{
    sc_approval_outcome_t out = {0};
    int64_t intent = 0;
    char *body = NULL;
    int rc;

    if (!a || !ret_outcome)
        return -EINVAL;
    rc = s_intent(a, term, NULL, ids, n, reason, &body, &intent);
    if (rc < 0)
        return rc;
    sc_approver_post(a, body, &out);
    out.intent_index = intent;
    free(body);
    /* The answer is written even if the POST failed: the intent is then closed as failed and a
     * later round makes a new intent. If writing fails, the intent stays open and a restart
     * resolves it. */
    rc = sc_approver_record_answer(a, term, out.intent_index, out.rc, out.http_status, out.message);
    *ret_outcome = out;
    return rc < 0 ? rc : 0;
}

int sc_approver_intent_via(sc_approver_t *a, int64_t term, const char *via, const char *const *ids,
                           size_t n, const char *reason, int64_t *ret_index)
{
    if (!a || !via || !ret_index)
        return -EINVAL;
    return s_intent(a, term, via, ids, n, reason, NULL, ret_index);
}

int sc_approver_unanswered(sc_approver_t *a, json_object **ret_json)
{
    if (!a || !ret_json)
        return -EINVAL;
    return sc_store_approvals_unanswered(a->store, ret_json);
}

uint64_t sc_approver_posts(const sc_approver_t *a)
{
    return a ? a->posts : 0;
}
