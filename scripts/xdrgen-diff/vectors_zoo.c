/*
 * The C half of the rpcgen differential test for
 * crates/xdrgen-tests/xdr/zoo.x: fixed values encoded with rpcgen's XDR
 * routines. The Rust half is crates/xdrgen-tests/tests/golden_zoo.rs.
 */
#include "zoo.h"
#include "emit.h"

static pen pen_a(void)
{
    static u_int counts[2] = {7, 0xffffffffu};
    static label nick = "nick";
    static animal fav = LIZARD;
    static animal many[2] = {DOG, BIRD};
    pen p;
    memset(&p, 0, sizeof p);
    p.kind = BIRD;
    p.name = "polly";
    p.legs = 2;
    p.weight = -1234567890123LL;
    p.id = 0xfedcba9876543210ull;
    p.r = 0.25f;
    p.p = -1e-300;
    p.fed = TRUE;
    memcpy(p.t, "tagtag01", 8);
    p.sr.smallraw_len = 3;
    p.sr.smallraw_val = "abc";
    p.blob.raw_len = 0;
    p.blob.raw_val = NULL;
    p.notes = "";
    p.scores[0] = -1;
    p.scores[1] = 0;
    p.scores[2] = 1;
    p.counts.counts_len = 2;
    p.counts.counts_val = counts;
    memcpy(p.fixed3, "xyz", 3);
    p.anyb.anyb_len = 5;
    p.anyb.anyb_val = "\0\1\2\3\4";
    p.s = "any";
    p.s5 = "five5";
    p.nick = &nick;
    p.fav = &fav;
    p.maybe_id = NULL;
    p.fa[0] = CAT;
    p.fa[1] = DOG;
    p.fa[2] = SNAKE;
    p.fa[3] = FISH;
    p.many.animals_len = 2;
    p.many.animals_val = many;
    return p;
}

static pen pen_b(void)
{
    static big_t zero = 0;
    static animal many[5] = {CAT, CAT, CAT, CAT, LIZARD};
    pen p;
    memset(&p, 0, sizeof p);
    p.kind = CAT;
    p.name = "";
    p.notes = "n";
    p.s = "";
    p.s5 = "";
    p.maybe_id = &zero;
    p.fa[0] = LIZARD;
    p.fa[1] = LIZARD;
    p.fa[2] = LIZARD;
    p.fa[3] = LIZARD;
    p.many.animals_len = 5;
    p.many.animals_val = many;
    return p;
}

int main(void)
{
    pen pa = pen_a(), pb = pen_b();
    EMIT("pen_a", pen, &pa);
    EMIT("pen_b", pen, &pb);

    visitor v3 = {"", 0, NULL};
    visitor v2 = {"bob", -1, &v3};
    visitor v1 = {"ann", 30, &v2};
    EMIT("visitor_3", visitor, &v1);
    visitor_list vl = NULL;
    EMIT("visitor_list_null", visitor_list, &vl);
    vl = &v2;
    EMIT("visitor_list_2", visitor_list, &vl);

    feeding f;
    f.which = CAT;
    f.feeding_u.grams = 100;
    EMIT("feeding_cat", feeding, &f);
    f.which = DOG;
    f.feeding_u.grams = -5;
    EMIT("feeding_dog", feeding, &f);
    f.which = BIRD;
    EMIT("feeding_bird", feeding, &f);
    f.which = FISH;
    f.feeding_u.flakes.flakes_len = 2;
    f.feeding_u.flakes.flakes_val = "fl";
    EMIT("feeding_fish", feeding, &f);
    f.which = SNAKE;
    f.feeding_u.reason = "cold";
    EMIT("feeding_snake", feeding, &f);
    f.which = LIZARD;
    f.feeding_u.reason = "";
    EMIT("feeding_lizard", feeding, &f);
    feeding_t ft;
    ft.which = DOG;
    ft.feeding_u.grams = 7;
    EMIT("feeding_t_dog", feeding_t, &ft);

    byint bi;
    bi.code = ZOO_NEG;
    EMIT("byint_neg", byint, &bi);
    bi.code = 0;
    bi.byint_u.p = pb;
    EMIT("byint_0", byint, &bi);
    bi.code = ZOO_DEC;
    bi.byint_u.vl = NULL;
    EMIT("byint_12", byint, &bi);
    bi.code = 13;
    bi.byint_u.vl = &v2;
    EMIT("byint_13", byint, &bi);

    byuint bu;
    bu.u = ZOO_MAXU;
    bu.byuint_u.h = -1;
    EMIT("byuint_max", byuint, &bu);
    bu.u = ZOO_HEX;
    EMIT("byuint_hex", byuint, &bu);
    bu.u = 0;
    EMIT("byuint_default_0", byuint, &bu);
    bu.u = 0x80000000u;
    EMIT("byuint_default_big", byuint, &bu);

    bybool bb;
    bb.on = TRUE;
    bb.bybool_u.f.which = FISH;
    bb.bybool_u.f.feeding_u.flakes.flakes_len = 12;
    bb.bybool_u.f.feeding_u.flakes.flakes_val = "twelve bytes";
    EMIT("bybool_true", bybool, &bb);
    bb.on = FALSE;
    bb.bybool_u.off_since = 0xffffffffffffffffull;
    EMIT("bybool_false", bybool, &bb);

    maybe_byint mb = NULL;
    EMIT("maybe_byint_null", maybe_byint, &mb);
    byint neg;
    neg.code = ZOO_NEG;
    mb = &neg;
    EMIT("maybe_byint_neg", maybe_byint, &mb);

    arrays_of ao;
    memset(&ao, 0, sizeof ao);
    pen pens[2] = {pa, pb};
    ao.pens.pens_len = 2;
    ao.pens.pens_val = pens;
    ao.feeds[0].which = CAT;
    ao.feeds[0].feeding_u.grams = 1;
    ao.feeds[1].which = SNAKE;
    ao.feeds[1].feeding_u.reason = "x";
    ao.kinds.kinds_len = 0;
    label labels[3] = {"a", "bb", "ccc"};
    ao.labels.labels_len = 3;
    ao.labels.labels_val = labels;
    label q = "q", empty = "";
    maybe_label opt[4] = {NULL, &q, NULL, &empty};
    ao.optlabels.optlabels_len = 4;
    ao.optlabels.optlabels_val = opt;
    feeding_t fts[1];
    fts[0].which = BIRD;
    ao.ft.ft_len = 1;
    ao.ft.ft_val = fts;
    byint b13;
    visitor only = {"solo", 99, NULL};
    b13.code = 13;
    b13.byint_u.vl = &only;
    ao.mb = &b13;
    ao.bu[0].u = ZOO_HEX;
    bybool bbs[2];
    bbs[0].on = TRUE;
    bbs[0].bybool_u.f.which = BIRD;
    bbs[1].on = FALSE;
    bbs[1].bybool_u.off_since = 5;
    ao.bb.bb_len = 2;
    ao.bb.bb_val = bbs;
    EMIT("arrays_of_a", arrays_of, &ao);

    keywords kw;
    kw.type = 1; kw.match = 2; kw.fn = 3; kw.ref = 4; kw.self = 5; kw.in = 6;
    kw.loop = 7; kw.mod = 8; kw.use = 9; kw.where = 10; kw.async = 11;
    kw.await = 12; kw.dyn = 13; kw.move = 14; kw.Self = 15; kw.super = 16;
    kw.crate = 17; kw.box = 18; kw.try = 19; kw.yield = 20; kw.as = 21;
    EMIT("keywords", keywords, &kw);

    size sz = {1, 2};
    EMIT("size", size, &sz);
    Size big = LARGE;
    EMIT("Size_large", Size, &big);
    animal an = SNAKE;
    EMIT("animal_snake", animal, &an);
    an = LIZARD;
    EMIT("animal_lizard", animal, &an);

    /* typedefs */
    tag t;
    memcpy(t, "\xff\0\1\2\3\4\5\6", 8);
    EMIT("tag", tag, t);
    raw r = {3, "raw"};
    EMIT("raw", raw, &r);
    smallraw sr = {12, "0123456789ab"};
    EMIT("smallraw_max", smallraw, &sr);
    label l = "label";
    EMIT("label", label, &l);
    maybe_label ml = &l;
    EMIT("maybe_label", maybe_label, &ml);
    ml = NULL;
    EMIT("maybe_label_null", maybe_label, &ml);
    animal five[5] = {DOG, BIRD, FISH, SNAKE, LIZARD};
    animals as = {5, five};
    EMIT("animals_5", animals, &as);
    four_animals fa = {LIZARD, SNAKE, FISH, CAT};
    EMIT("four_animals", four_animals, fa);
    big_t bt = 0x8000000000000001ull;
    EMIT("big_t", big_t, &bt);
    ratio ra = -3.75f;
    EMIT("ratio", ratio, &ra);
    precise pr = 6.02214076e23;
    EMIT("precise", precise, &pr);
    flag fl = TRUE;
    EMIT("flag", flag, &fl);
    animal_t at = FISH;
    EMIT("animal_t", animal_t, &at);
    INT i = -2147483647 - 1;
    EMIT("INT", INT, &i);

    /* procedure arguments: several arguments are encoded one after another */
    zooproc_feed_1_argument fa3;
    fa3.arg1.which = DOG;
    fa3.arg1.feeding_u.grams = 3;
    fa3.arg2 = -4;
    fa3.arg3 = TRUE;
    EMIT("args_feed", zooproc_feed_1_argument, &fa3);
    return 0;
}
