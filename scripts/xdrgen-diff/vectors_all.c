/*
 * The C half of the rpcgen differential test (scripts/xdrgen-rpcgen-diff.sh):
 * encodes fixed values of the types in crates/xdrgen-tests/xdr/all.x with
 * the XDR routines rpcgen generated, and prints "NAME HEX" per value. The
 * Rust half (crates/xdrgen-tests/tests/golden.rs) builds the same values
 * with the types rpcrdma-xdrgen generated and must print the same bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "all.h"

static void emit(const char *name, xdrproc_t proc, void *obj)
{
    static char buf[1 << 16];
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

static prims prims_a(void)
{
    prims p;
    p.i = -1;
    p.u = 0xdeadbeefu;
    p.bare = 7;
    p.l = -2;
    p.ul = 3;
    p.h = -5;
    p.uh = 0x0102030405060708ull;
    p.f = 1.5f;
    p.d = -2.25;
    p.b = TRUE;
    p.c = BLUE;
    p.m = 42;
    return p;
}

static prims prims_zero(void)
{
    prims p;
    memset(&p, 0, sizeof p);
    p.c = RED;
    return p;
}

int main(void)
{
    prims pa = prims_a(), pz = prims_zero();
    EMIT("prims_a", prims, &pa);
    EMIT("prims_zero", prims, &pz);

    prims pm = prims_a();
    pm.i = 2147483647;
    pm.u = 0;
    pm.h = (-9223372036854775807LL - 1);
    pm.uh = 0xffffffffffffffffull;
    pm.f = -0.0f;
    pm.d = 1e300;
    pm.b = FALSE;
    pm.c = OTHER;
    pm.m = -2147483647 - 1;
    EMIT("prims_extremes", prims, &pm);

    arrays a;
    memcpy(a.fixed, "abcde", 5);
    a.small.small_len = 2;
    a.small.small_val = "hi";
    char any[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    a.any.any_len = 9;
    a.any.any_val = any;
    a.s = "str";
    a.any_s = "";
    a.fixed_ints[0] = 1;
    a.fixed_ints[1] = 2;
    a.fixed_ints[2] = 3;
    int vi[2] = {4, 5};
    a.var_ints.var_ints_len = 2;
    a.var_ints.var_ints_val = vi;
    a.p2[0] = pz;
    a.p2[1] = pa;
    name nm[2] = {"x", "yz"};
    a.nms.nms_len = 2;
    a.nms.nms_val = nm;
    memcpy(a.f4, "\x01\x02\x03\x04", 4);
    a.t[0] = 7;
    a.t[1] = 8;
    a.t[2] = 9;
    a.bl.blob_len = 10;
    a.bl.blob_val = "0123456789";
    a.as = "any string";
    EMIT("arrays_a", arrays, &a);

    optional o0 = {NULL, NULL, NULL};
    EMIT("optional_none", optional, &o0);
    int five = 5, minus9 = -9;
    optional o1 = {&five, &pa, &minus9};
    EMIT("optional_some", optional, &o1);

    node n3 = {3, NULL}, n2 = {2, &n3}, n1 = {1, &n2};
    EMIT("node_list3", node, &n1);

    lnode l2 = {"bb", NULL}, l1 = {"a", &l2};
    node h2 = {20, NULL}, h1 = {10, &h2};
    tree leaf = {2, NULL, NULL}, root = {1, &leaf, NULL};
    lists ls;
    ls.head = &h1;
    ls.labels = &l1;
    ls.root = &root;
    ls.u.k = 2;
    EMIT("lists_a", lists, &ls);
    lists le;
    memset(&le, 0, sizeof le);
    le.u.k = -1;
    le.u.by_int_u.neg = -100;
    EMIT("lists_empty", lists, &le);

    by_int bi;
    bi.k = -1;
    bi.by_int_u.neg = -100;
    EMIT("by_int_neg", by_int, &bi);
    bi.k = 0;
    bi.by_int_u.small = "zero";
    EMIT("by_int_0", by_int, &bi);
    bi.k = 1;
    bi.by_int_u.small = "one!";
    EMIT("by_int_1", by_int, &bi);
    bi.k = 2;
    EMIT("by_int_2", by_int, &bi);
    bi.k = 99;
    bi.by_int_u.other = -1234567890123LL;
    EMIT("by_int_default", by_int, &bi);

    by_uint bu;
    bu.k = 7;
    bu.by_uint_u.d = 3.5;
    EMIT("by_uint_7", by_uint, &bu);
    bu.k = BIG;
    EMIT("by_uint_big", by_uint, &bu);

    by_enum be;
    be.c = RED;
    EMIT("by_enum_red", by_enum, &be);
    be.c = GREEN;
    be.by_enum_u.p = pa;
    EMIT("by_enum_green", by_enum, &be);
    be.c = BLUE;
    be.by_enum_u.p = pz;
    EMIT("by_enum_blue", by_enum, &be);
    be.c = OTHER;
    EMIT("by_enum_other", by_enum, &be);

    by_bool bb;
    bb.present = TRUE;
    bb.by_bool_u.n = "name";
    EMIT("by_bool_true", by_bool, &bb);
    bb.present = FALSE;
    EMIT("by_bool_false", by_bool, &bb);

    keywords kw = {1, 2, 3, 4, 5, 6};
    EMIT("keywords", keywords, &kw);

    color c = BLUE;
    EMIT("color_blue", color, &c);

    int iv[3] = {1, 2, 3};
    ints is = {3, iv};
    EMIT("ints_3", ints, &is);
    name nv[1] = {"a"};
    names ns = {1, nv};
    EMIT("names_1", names, &ns);
    maybe_int mi = NULL;
    EMIT("maybe_int_none", maybe_int, &mi);
    int seven = 7;
    mi = &seven;
    EMIT("maybe_int_7", maybe_int, &mi);
    fixed4 f4 = {9, 8, 7, 6};
    EMIT("fixed4", fixed4, f4);
    anyblob ab = {3, "xyz"};
    EMIT("anyblob_3", anyblob, &ab);
    count_t ct = 4000000000u;
    EMIT("count_t", count_t, &ct);

    bulk bk;
    bk.len = 5;
    bk.data.data_len = 5;
    bk.data.data_val = "hello";
    bk.path = "/a/b";
    EMIT("bulk", bulk, &bk);

    all_pair_2_argument pair;
    pair.arg1 = -3;
    pair.arg2 = "pair";
    EMIT("pair_args", all_pair_2_argument, &pair);
    return 0;
}
