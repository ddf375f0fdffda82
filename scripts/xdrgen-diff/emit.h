/*
 * Shared by the C halves of the rpcgen differential test
 * (scripts/xdrgen-rpcgen-diff.sh): encodes a value with the XDR routine
 * rpcgen generated (and libtirpc) and prints "NAME HEX".
 */
#ifndef XDRGEN_DIFF_EMIT_H
#define XDRGEN_DIFF_EMIT_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rpc/rpc.h>

static void emit(const char *name, xdrproc_t proc, void *obj)
{
    static char buf[1 << 20];
    XDR x;
    xdrmem_create(&x, buf, sizeof buf, XDR_ENCODE);
    if (!proc(&x, obj, 0)) {
        fprintf(stderr, "rpcgen's xdr routine failed to encode %s\n", name);
        exit(1);
    }
    unsigned n = xdr_getpos(&x);
    printf("%s ", name);
    for (unsigned i = 0; i < n; i++)
        printf("%02x", (unsigned char)buf[i]);
    printf("\n");
    xdr_destroy(&x);
}

#define EMIT(name, type, obj) emit(name, (xdrproc_t)xdr_##type, (void *)(obj))
#endif
