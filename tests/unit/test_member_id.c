/* sc_member_id: identities read from compute metadata fixtures of the shapes Azure gives (a
 * uniform scale set, a zonal Spot VM of a flexible one, an availability set), a table of bad
 * fields each refused with its name, the round trip, and identity comparison: a new vmId or
 * key under a known name is a new member. */
#include "sc_test.h"

#include <errno.h>

#include <json-c/json.h>

#include "sc_error.h"
#include "sc_member_id.h"

#define KEY_A "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
#define KEY_B "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"

/* The identity in fixture name; 0 or the parser's code. */
static int s_fixture_id(const char *name, sc_member_id_t *id, char *err, size_t errlen)
{
    char *text = sc_test_fixture(name, NULL);
    json_object *o;
    int rc;

    if (!text)
        return -ENOENT;
    o = json_tokener_parse(text);
    free(text);
    rc = sc_member_id_from_json(o, id, err, errlen);
    json_object_put(o);
    return rc;
}

/* The identity in JSON text. */
static int s_text_id(const char *text, sc_member_id_t *id, char *err, size_t errlen)
{
    json_object *o = json_tokener_parse(text);
    int rc = sc_member_id_from_json(o, id, err, errlen);

    json_object_put(o);
    return rc;
}

SC_TEST(fixtures)
{
    sc_member_id_t id;
    char err[256] = "";

    SC_CHECK_INT(s_fixture_id("compute-vmss-uniform.json", &id, err, sizeof(err)), 0);
    SC_CHECK_STR(id.name, "sched-vmss_3");
    SC_CHECK_STR(id.vm_id, "0e7d4c39-5b2a-4f6e-8c1d-9a3b2e4f5d60"); /* lower case */
    SC_CHECK_INT(id.fault_domain, 1);
    SC_CHECK_INT(id.update_domain, 3);
    SC_CHECK_STR(id.zone, "");
    SC_CHECK_STR(id.placement_group, "6b1f9c2e-7a44-4d0b-9e51-3c2d8f7a1b90");
    SC_CHECK_INT(id.priority, SC_PRIORITY_REGULAR);
    SC_CHECK(!sc_member_id_is_evictable(&id));
    SC_CHECK_STR(id.public_z85, "");

    SC_CHECK_INT(s_fixture_id("compute-vmss-spot-zonal.json", &id, err, sizeof(err)), 0);
    SC_CHECK_STR(id.name, "sched-flex_5c1a2b3d");
    SC_CHECK_STR(id.zone, "2");
    SC_CHECK_INT(id.fault_domain, 0);
    SC_CHECK_STR(id.placement_group, "");
    SC_CHECK_INT(id.priority, SC_PRIORITY_SPOT);
    SC_CHECK(sc_member_id_is_evictable(&id));

    SC_CHECK_INT(s_fixture_id("compute-avset.json", &id, err, sizeof(err)), 0);
    SC_CHECK_STR(id.name, "WestNO_1");
    SC_CHECK_INT(id.fault_domain, 2);
    SC_CHECK_INT(id.update_domain, 4);
    SC_CHECK_INT(id.priority, SC_PRIORITY_UNKNOWN); /* "" */
    SC_CHECK(!sc_member_id_is_evictable(&id));
}

SC_TEST(numbers_as_numbers_and_optional_fields)
{
    sc_member_id_t id;
    char err[256] = "";

    /* Azure writes numbers as strings; integers are accepted too */
    SC_CHECK_INT(s_text_id("{\"name\":\"vm_0\",\"vmId\":\"0E7D4C39-5B2A-4F6E-8C1D-9A3B2E4F5D60\","
                           "\"platformFaultDomain\":2,\"platformUpdateDomain\":0,\"zone\":1,"
                           "\"priority\":\"low\"}",
                           &id, err, sizeof(err)),
                 0);
    SC_CHECK_INT(id.fault_domain, 2);
    SC_CHECK_INT(id.update_domain, 0);
    SC_CHECK_STR(id.zone, "1");
    SC_CHECK_INT(id.priority, SC_PRIORITY_LOW);
    SC_CHECK(sc_member_id_is_evictable(&id));
    /* only name and vmId are required; "" domains are unknown */
    SC_CHECK_INT(s_text_id("{\"name\":\"vm_0\",\"vmId\":\"0e7d4c39-5b2a-4f6e-8c1d-9a3b2e4f5d60\","
                           "\"platformFaultDomain\":\"\"}",
                           &id, err, sizeof(err)),
                 0);
    SC_CHECK_INT(id.fault_domain, -1);
    SC_CHECK_INT(id.update_domain, -1);
    SC_CHECK_STR(id.zone, "");
    SC_CHECK_STR(id.placement_group, "");
    SC_CHECK_INT(id.priority, SC_PRIORITY_UNKNOWN);
}

SC_TEST(bad_fields_named)
{
    static const char vm[] = "\"vmId\":\"0e7d4c39-5b2a-4f6e-8c1d-9a3b2e4f5d60\"";
    static const struct {
        const char *fields; /* after {"name":"vm_0",vmId, (or whole when it starts with '!') */
        int rc;
        const char *why;
    } cases[] = {
        {"!{\"vmId\":\"0e7d4c39-5b2a-4f6e-8c1d-9a3b2e4f5d60\"}", SC_E_PARSE,
         "compute.name is missing"},
        {"!{\"name\":\"\"}", SC_E_PARSE, "compute.name is empty"},
        {"!{\"name\":\"vm 0\"}", SC_E_PARSE, "compute.name has a character other than"},
        {"!{\"name\":5}", SC_E_PARSE, "compute.name is not a string"},
        {"!{\"name\":null}", SC_E_PARSE, "compute.name is null"},
        {"!{\"name\":\"vm_0\"}", SC_E_PARSE, "compute.vmId is missing"},
        {"!{\"name\":\"vm_0\",\"vmId\":\"not-a-guid\"}", SC_E_PARSE, "compute.vmId is not a GUID"},
        {"!{\"name\":\"vm_0\",\"vmId\":\"0e7d4c39x5b2a-4f6e-8c1d-9a3b2e4f5d60\"}", SC_E_PARSE,
         "compute.vmId is not a GUID"},
        {"!{\"name\":\"vm_0\",\"vmId\":null}", SC_E_PARSE, "compute.vmId is null"},
        {"\"platformFaultDomain\":\"-1\"", SC_E_PARSE,
         "compute.platformFaultDomain is not a number"},
        {"\"platformFaultDomain\":\"1 \"", SC_E_PARSE,
         "compute.platformFaultDomain is not a number"},
        {"\"platformFaultDomain\":1.5", SC_E_PARSE,
         "compute.platformFaultDomain is neither a string nor an integer"},
        {"\"platformFaultDomain\":true", SC_E_PARSE,
         "compute.platformFaultDomain is neither a string nor an integer"},
        {"\"platformFaultDomain\":null", SC_E_PARSE, "compute.platformFaultDomain is null"},
        {"\"platformFaultDomain\":\"123456\"", SC_E_PARSE,
         "compute.platformFaultDomain is out of range"},
        {"\"platformFaultDomain\":10001", SC_E_PARSE,
         "compute.platformFaultDomain is out of range"},
        {"\"platformFaultDomain\":-1", SC_E_PARSE, "compute.platformFaultDomain is out of range"},
        {"\"platformUpdateDomain\":[]", SC_E_PARSE,
         "compute.platformUpdateDomain is neither a string nor an integer"},
        {"\"platformUpdateDomain\":\"0x1\"", SC_E_PARSE,
         "compute.platformUpdateDomain is not a number"},
        {"\"zone\":\"1 2\"", SC_E_PARSE, "compute.zone has a character other than"},
        {"\"zone\":{}", SC_E_PARSE, "compute.zone is not a string"},
        {"\"zone\":\"123456789012345678901234567890123\"", SC_E_TOO_BIG,
         "compute.zone is too long"},
        {"\"placementGroupId\":\"abc\"", SC_E_PARSE, "compute.placementGroupId is not a GUID"},
        {"\"placementGroupId\":7", SC_E_PARSE, "compute.placementGroupId is not a string"},
        {"\"priority\":\"Burst\"", SC_E_PARSE, "compute.priority is not Regular, Spot or Low"},
        {"\"priority\":\"Spots\"", SC_E_PARSE, "compute.priority is not Regular, Spot or Low"},
        {"\"priority\":1", SC_E_PARSE, "compute.priority is not a string"},
        {"![]", SC_E_NOT_JSON, "compute: not a JSON object"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[512], err[256] = "";
        sc_member_id_t id, untouched;
        int rc;

        if (cases[i].fields[0] == '!')
            snprintf(text, sizeof(text), "%s", cases[i].fields + 1);
        else
            snprintf(text, sizeof(text), "{\"name\":\"vm_0\",%s,%s}", vm, cases[i].fields);
        memset(&id, 0x5a, sizeof(id));
        untouched = id;
        rc = s_text_id(text, &id, err, sizeof(err));
        if (rc != cases[i].rc || !strstr(err, cases[i].why))
            SC_FAILF("case %zu %s: rc %d (%s) \"%s\", expected %d \"%s\"", i, text, rc,
                     sc_errname(rc), err, cases[i].rc, cases[i].why);
        SC_CHECK(memcmp(&id, &untouched, sizeof(id)) == 0); /* written only on success */
    }

    /* a name over the limit */
    {
        char text[512], err[256] = "", name[SC_MEMBER_NAME_MAX + 2];
        sc_member_id_t id;

        memset(name, 'a', sizeof(name) - 1);
        name[sizeof(name) - 1] = '\0';
        snprintf(text, sizeof(text), "{\"name\":\"%s\",%s}", name, vm);
        SC_CHECK_INT(s_text_id(text, &id, err, sizeof(err)), SC_E_TOO_BIG);
        SC_CHECK(strstr(err, "compute.name is too long") != NULL);
        name[SC_MEMBER_NAME_MAX] = '\0'; /* exactly the limit */
        snprintf(text, sizeof(text), "{\"name\":\"%s\",%s}", name, vm);
        SC_CHECK_INT(s_text_id(text, &id, err, sizeof(err)), 0);
    }
    {
        sc_member_id_t id;
        char err[64] = "";

        SC_CHECK_INT(sc_member_id_from_json(NULL, &id, err, sizeof(err)), -EINVAL);
    }
}

SC_TEST(round_trip)
{
    static const char *const fixtures[] = {"compute-vmss-uniform.json",
                                           "compute-vmss-spot-zonal.json", "compute-avset.json"};

    for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
        sc_member_id_t id, back;
        json_object *o = NULL;
        char err[256] = "";

        SC_REQUIRE(s_fixture_id(fixtures[i], &id, err, sizeof(err)) == 0);
        SC_REQUIRE(sc_member_id_to_json(&id, &o) == 0);
        SC_CHECK_INT(sc_member_id_from_json(o, &back, err, sizeof(err)), 0);
        SC_CHECK(sc_member_id_equal(&id, &back));
        json_object_put(o);
    }
    {
        sc_member_id_t bad;
        json_object *o = NULL;

        memset(&bad, 0, sizeof(bad)); /* no name, no vmId */
        SC_CHECK_INT(sc_member_id_to_json(&bad, &o), -EINVAL);
        SC_CHECK(o == NULL);
    }
}

SC_TEST(identity_comparison)
{
    sc_member_id_t known, seen;
    char err[256] = "";

    SC_REQUIRE(s_fixture_id("compute-vmss-uniform.json", &known, err, sizeof(err)) == 0);
    SC_REQUIRE(sc_member_id_set_key(&known, KEY_A) == 0);

    seen = known;
    SC_CHECK_INT(sc_member_id_match(&known, &seen), SC_MEMBER_SAME);
    SC_CHECK(sc_member_id_equal(&known, &seen));
    /* domains, zone, priority changing alone: the same member, its record updated */
    seen.update_domain = 4;
    seen.priority = SC_PRIORITY_SPOT;
    SC_CHECK_INT(sc_member_id_match(&known, &seen), SC_MEMBER_SAME);
    SC_CHECK(!sc_member_id_equal(&known, &seen));

    /* a reimage: the same name, a new key */
    seen = known;
    SC_CHECK_INT(sc_member_id_set_key(&seen, KEY_B), 0);
    SC_CHECK_INT(sc_member_id_match(&known, &seen), SC_MEMBER_NEW_INCARNATION);
    /* a re-created VM: the same name, a new vmId, the same key (a restored disk) */
    seen = known;
    memcpy(seen.vm_id, "11111111-2222-3333-4444-555555555555", SC_MEMBER_GUID_LEN + 1);
    SC_CHECK_INT(sc_member_id_match(&known, &seen), SC_MEMBER_NEW_INCARNATION);
    /* a key on one side only is never assumed equal */
    seen = known;
    seen.public_z85[0] = '\0';
    SC_CHECK_INT(sc_member_id_match(&known, &seen), SC_MEMBER_NEW_INCARNATION);
    /* another name */
    seen = known;
    memcpy(seen.name, "sched-vmss_4", sizeof("sched-vmss_4"));
    SC_CHECK_INT(sc_member_id_match(&known, &seen), SC_MEMBER_OTHER);

    /* vmIds in another case are the same vmId */
    SC_REQUIRE(s_text_id("{\"name\":\"sched-vmss_3\","
                         "\"vmId\":\"0e7d4c39-5b2a-4f6e-8c1d-9a3b2e4f5d60\"}",
                         &seen, err, sizeof(err)) == 0);
    SC_REQUIRE(sc_member_id_set_key(&seen, KEY_A) == 0);
    SC_CHECK_INT(sc_member_id_match(&known, &seen), SC_MEMBER_SAME);

    /* placement groups: the scope of events and approvals */
    SC_CHECK(!sc_member_id_is_same_placement(&known, &seen)); /* seen has none */
    seen = known;
    SC_CHECK(sc_member_id_is_same_placement(&known, &seen));

    SC_CHECK_STR(sc_member_match_name(SC_MEMBER_NEW_INCARNATION), "new_incarnation");
    SC_CHECK_STR(sc_member_match_name(SC_MEMBER_MATCH_MAX), "unknown");
    SC_CHECK_STR(sc_priority_name(SC_PRIORITY_SPOT), "Spot");
    SC_CHECK_STR(sc_priority_name((sc_priority_t)99), "unknown");
}

SC_TEST(set_key)
{
    sc_member_id_t id = {0};

    SC_CHECK_INT(sc_member_id_set_key(&id, KEY_A), 0);
    SC_CHECK_STR(id.public_z85, KEY_A);
    SC_CHECK_INT(sc_member_id_set_key(&id, "short"), -EINVAL);
    SC_CHECK_INT(sc_member_id_set_key(&id, KEY_A "x"), -EINVAL);
    SC_CHECK_INT(sc_member_id_set_key(&id, "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf\""), -EINVAL);
    SC_CHECK_INT(sc_member_id_set_key(&id, "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]y f"), -EINVAL);
    SC_CHECK_INT(sc_member_id_set_key(&id, NULL), -EINVAL);
    SC_CHECK_STR(id.public_z85, KEY_A); /* unchanged by the refusals */
}

int main(void)
{
    SC_RUN(fixtures);
    SC_RUN(numbers_as_numbers_and_optional_fields);
    SC_RUN(bad_fields_named);
    SC_RUN(round_trip);
    SC_RUN(identity_comparison);
    SC_RUN(set_key);
    return sc_test_done();
}
