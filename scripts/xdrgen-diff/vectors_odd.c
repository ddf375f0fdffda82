/*
 * The C half of the rpcgen differential test for
 * crates/xdrgen-tests/xdr/odd.x (Rust keywords as names, names that differ
 * only in case, comments in odd places, several programs and arguments).
 * The Rust half is crates/xdrgen-tests/tests/golden_odd.rs.
 */
#include "odd.h"
#include "emit.h"

int main(void)
{
    type t;
    t.fn = -7;
    t.mod = 0x0123456789abcdefull;
    t.ref = "ref";
    t.use.use_len = 7;
    t.use.use_val = "use it!";
    memcpy(t.in, "inside!", 7);
    EMIT("type", type, &t);

    self s;
    s.m = where;
    s.self_u.t = t;
    EMIT("self_where", self, &s);
    s.m = loop;
    EMIT("self_loop", self, &s);
    s.m = async;
    EMIT("self_async", self, &s);
    s.m = Self;
    s.self_u.other = where;
    EMIT("self_default", self, &s);
    match mt = Self;
    EMIT("match_Self", match, &mt);

    impl im;
    im.m = loop;
    dyn dn = NULL;
    EMIT("dyn_null", dyn, &dn);
    dn = &im;
    EMIT("dyn_loop", dyn, &dn);

    move mv;
    memset(&mv, 0, sizeof mv);
    mv.i.m = Self;
    mv.i.self_u.other = async;
    mv.d = &s;
    mv.arr[0].m = where;
    mv.arr[0].self_u.t = t;
    mv.arr[1].m = async;
    self var[2];
    var[0].m = loop;
    var[1].m = Self;
    var[1].self_u.other = loop;
    mv.var.var_len = 2;
    mv.var.var_val = var;
    match ms[3] = {Self, where, async};
    mv.ms.ms_len = 3;
    mv.ms.ms_val = ms;
    mv.bs[0] = TRUE;
    mv.bs[1] = FALSE;
    mv.bs[2] = TRUE;
    float fs[2] = {1.0f / 3.0f, -0.0f};
    mv.fs.fs_len = 2;
    mv.fs.fs_val = fs;
    mv.ds[0] = 2.5;
    quad_t hs[1] = {-9};
    mv.hs.hs_len = 1;
    mv.hs.hs_val = hs;
    EMIT("move", move, &mv);

    Point P = {1, -1};
    EMIT("Point", Point, &P);
    point p = {-4294967296LL};
    EMIT("point", point, &p);
    POINT PP = {42};
    EMIT("POINT", POINT, &PP);

    flagged f;
    f.b = FALSE;
    EMIT("flagged_false", flagged, &f);
    f.b = TRUE;
    f.flagged_u.p = P;
    EMIT("flagged_true", flagged, &f);

    guarded gd = {{-1}};
    EMIT("guarded", guarded, &gd);

    mixedCase mc = {3, 4};
    EMIT("mixedCase", mixedCase, &mc);

    do_self_1_argument a;
    a.arg1 = s;
    a.arg2 = async;
    a.arg3 = mv;
    EMIT("args_do_self", do_self_1_argument, &a);
    two_mix_1_argument b;
    b.arg1 = P;
    b.arg2 = p;
    EMIT("args_two_mix", two_mix_1_argument, &b);
    char *str = "a string argument";
    EMIT("args_two_echo", wrapstring, &str);
    return 0;
}
