/* The wire protocol's version, carried by every message (see proto/README.md). */
#ifndef SC_PROTO_VERSION_H
#define SC_PROTO_VERSION_H

#define SC_PROTO_VERSION 1

/* The protocol version this build speaks. */
int sc_proto_version(void);

#endif
