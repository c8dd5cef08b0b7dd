#include "sc_proto_version.h"

int sc_proto_version(void)
{
    return SC_PROTO_VERSION;
}
