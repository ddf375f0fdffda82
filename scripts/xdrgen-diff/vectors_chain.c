/*
 * The C half of the rpcgen differential test for
 * crates/xdrgen-tests/xdr/chain.x (lists, trees, mutual recursion, lists
 * of unions), including chains longer than the generated decoders'
 * nesting limit. The Rust half is crates/xdrgen-tests/tests/golden_chain.rs.
 */
#include "chain.h"
#include "emit.h"

#define LONG 200

int main(void)
{
    item i3 = {3, {0, NULL}, NULL};
    item i2 = {2, {16, "sixteen bytes!!!"}, &i3};
    item i1 = {0xffffffffffffffffull, {1, "x"}, &i2};
    EMIT("item_3", item, &i1);
    holder h = {&i2, 2};
    EMIT("holder_2", holder, &h);
    h.items = NULL;
    h.count = 0;
    EMIT("holder_empty", holder, &h);

    /* a tree: root with kids a (with kid c) and b */
    fnode c = {"c", NULL, NULL};
    fnode b = {"b", NULL, NULL};
    fnode a = {"a", &c, &b};
    fnode root = {"root", &a, NULL};
    EMIT("fnode_tree", fnode, &root);

    /* LONG siblings, each with one kid */
    static fnode sib[LONG], kid[LONG];
    for (int k = 0; k < LONG; k++) {
        kid[k].name = "k";
        kid[k].kids = NULL;
        kid[k].sibling = NULL;
        sib[k].name = "s";
        sib[k].kids = &kid[k];
        sib[k].sibling = k + 1 < LONG ? &sib[k + 1] : NULL;
    }
    EMIT("fnode_siblings", fnode, &sib[0]);

    pong pg = {2, NULL};
    ping pi = {1, &pg};
    EMIT("ping_pong", ping, &pi);
    ping pi2 = {3, NULL};
    pg.q = &pi2;
    EMIT("ping_pong_ping", ping, &pi);

    vlist inner2 = {{2, {.s = "two"}}, NULL};
    vlist inner = {{1, {.i = -1}}, &inner2};
    vlist l3 = {{9, {0}}, NULL};
    vlist l2 = {{3, {.nested = &inner}}, &l3};
    vlist l1 = {{3, {.nested = NULL}}, &l2};
    EMIT("vlist_nested", vlist, &l1);

    static vlist lv[LONG];
    for (int k = 0; k < LONG; k++) {
        lv[k].v.t = 1;
        lv[k].v.val_u.i = k;
        lv[k].rest = k + 1 < LONG ? &lv[k + 1] : NULL;
    }
    EMIT("vlist_long", vlist, &lv[0]);

    backwards b1 = {NULL, 1};
    backwards b2 = {&b1, 2};
    EMIT("backwards_2", backwards, &b2);
    return 0;
}
