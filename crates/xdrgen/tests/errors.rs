//! Every syntax and type error names file:line:column and what was
//! expected; the generator never panics on bad input.

use rpcrdma_xdrgen::{check, generate, Options};

/// Checks that `src` fails with a first diagnostic at `at` ("line:col")
/// whose message contains `needle`.
#[track_caller]
fn fails(src: &str, at: &str, needle: &str) {
    let e = check(src, "t.x").expect_err("must fail");
    let d = &e.diagnostics()[0];
    let text = e.to_string();
    assert_eq!(format!("{}:{}", d.pos.line, d.pos.col), at, "{text}");
    assert!(d.message.contains(needle), "`{needle}` not in: {text}");
    assert!(text.starts_with(&format!("t.x:{at}: error: ")), "{text}");
}

#[test]
fn syntax_errors_say_what_was_expected() {
    fails(
        "struct s { int x }",
        "1:18",
        "expected `;` after the struct member, found `}`",
    );
    fails(
        "struct s { int x; ",
        "1:19",
        "expected a type, found end of file",
    );
    fails(
        "const X 5;",
        "1:9",
        "expected `=` after the constant's name",
    );
    fails(
        "typedef int;",
        "1:12",
        "expected the declared name, found `;`",
    );
    fails(
        "enum e { A B };",
        "1:12",
        "expected `=` and the item's value, `,` or `}` after the enum item's name, found `B`",
    );
    fails(
        "enum e { A = 1 B = 2 };",
        "1:16",
        "expected `,` or `}` after the enum item",
    );
    fails("union u { case 1: int x; };", "1:9", "expected `switch`");
    fails("union u switch (int d) { };", "1:26", "at least one `case`");
    fails(
        "union u switch (int d) { case 1: int a; default: void; default: void; };",
        "1:56",
        "at most one `default:`",
    );
    fails(
        "struct s { int x[4; };",
        "1:19",
        "`]` to close the fixed-length array",
    );
    fails("struct s { opaque x<8; };", "1:22", "`>` to close");
    fails(
        "struct s { void; };",
        "1:12",
        "`void` cannot be a struct member",
    );
    fails(
        "struct s {\n  int type@;\n};",
        "2:11",
        "unexpected character `@`",
    );
    fails("/* never closed", "1:1", "never closed");
    fails("const X = 0x;", "1:11", "not a valid hexadecimal constant");
    fails("const X = 09;", "1:11", "not a valid octal constant");
    fails("const X = 99999999999999999999;", "1:11", "fit in 64 bits");
    fails("struct int { int x; };", "1:8", "reserved word `int`");
    fails("#define X 5\n", "1:1", "`#define` is not supported");
    fails("#include <x.h>\n", "1:1", "`#include` is not supported");
    fails(
        "program P { version V { void F(void) = 0; } = 1; }",
        "1:51",
        "the program number",
    );
    fails(
        "program P { version V { void F(void, int) = 0; } = 1; } = 1;",
        "1:32",
        "`void` must be the only argument",
    );
    fails(
        "program P { version V { opaque F(void) = 0; } = 1; } = 1;",
        "1:25",
        "declare `typedef opaque NAME<MAX>;`",
    );
    fails("program P { } = 1;", "1:9", "at least one version");
    fails(
        "struct s { int x; } junk",
        "1:21",
        "expected `;` after the definition",
    );
    fails("typedef char c;", "1:9", "`char` is not an XDR type");
}

#[test]
fn type_errors_name_the_place() {
    fails(
        "struct s { quadruple q; };",
        "1:12",
        "`quadruple` (128-bit float, RFC 4506 §4.8) is not supported",
    );
    fails("struct s { foo x; };", "1:12", "unknown type `foo`");
    fails("typedef opaque b<MAX>;", "1:18", "unknown constant `MAX`");
    fails(
        "const A = B;\nconst B = A;",
        "1:11",
        "defined in terms of itself",
    );
    fails(
        "const A = 1;\nconst A = 2;",
        "2:7",
        "`A` is already defined at line 1:7",
    );
    fails(
        "struct s { int a; };\nstruct s { int b; };",
        "2:8",
        "type `s` is already defined at line 1:8",
    );
    fails(
        "struct s { int a; int a; };",
        "1:23",
        "member `a` is already declared",
    );
    fails("struct s { opaque x; };", "1:12", "`opaque x` needs a size");
    fails(
        "struct s { string x[4]; };",
        "1:12",
        "a string is variable-length only",
    );
    fails(
        "struct s { string x; };",
        "1:12",
        "a string is variable-length only",
    );
    fails("typedef opaque b<-1>;", "1:18", "between 0 and 4294967295");
    fails(
        "enum e { A = 0x100000000 };",
        "1:14",
        "is not a 32-bit value: an enum is encoded as a signed int",
    );
    fails(
        "enum e { A = -2147483649 };",
        "1:14",
        "is not a 32-bit value",
    );
    fails(
        "union u switch (hyper d) { case 1: void; };",
        "1:17",
        "union `u`: the discriminant is a `hyper`, which rpcgen's C would switch on but RFC 4506 does not allow",
    );
    fails(
        "union u switch (unsigned hyper d) { case 1: void; };",
        "1:17",
        "it must be int, unsigned int, bool or an enum (RFC 4506 §4.15)",
    );
    fails(
        "struct s { int a; };\nunion u switch (s d) { case 1: void; };",
        "2:17",
        "the discriminant is a struct, union or typedef of one",
    );
    fails(
        "union u switch (int d) { case 1: void; case 1: int x; };",
        "1:45",
        "already used by `case 1`",
    );
    fails(
        "enum e { A = 1 };\nunion u switch (e d) { case 2: void; };",
        "2:29",
        "not an item of enum `e`",
    );
    fails(
        "union u switch (bool b) { case 2: void; };",
        "1:32",
        "does not fit the discriminant's type",
    );
    fails(
        "union u switch (unsigned d) { case -1: void; };",
        "1:36",
        "does not fit",
    );
    fails("struct s { s inner; };", "1:8", "contains itself directly");
    fails(
        "struct s { int x; /* @ddp */ };",
        "1:12",
        "not a variable-length opaque or string",
    );
    fails(
        "struct s { opaque x<>; /* @dpp */ };",
        "1:24",
        "unknown pragma `@dpp`",
    );
    fails("/* @ddp */\nconst X = 1;", "1:1", "belongs to nothing");
    fails(
        "struct s { opaque x<>; /* @max_results(4) */ };",
        "1:24",
        "belongs next to a procedure",
    );
    fails(
        "struct s { opaque x<>; /* @ddp(args.count */ };",
        "1:24",
        "is not closed",
    );
    fails("struct a { unsigned int n; };\nstruct r { opaque d<>; /* @ddp(args.count) */ };\nprogram P { version V { r F(a) = 1; } = 1; } = 1;", "2:24", "`count` in the argument path of procedure `F` is not a member");
    fails("struct a { int n; };\nstruct r { opaque d<>; /* @ddp(args.n) */ };\nprogram P { version V { r F(a) = 1; } = 1; } = 1;", "2:24", "must be an `unsigned int` or `unsigned hyper`");
    fails(
        "program P { version V { void F(void) = 1; void G(void) = 1; } = 1; } = 1;",
        "1:58",
        "procedure number 1 is already used by `F`",
    );
    fails("program P { version V { void F(void) = 1; } = 1; version W { void F(void) = 1; } = 1; } = 1;", "1:84", "version number 1 is used twice");
    fails(
        "struct s { opaque z[0]; };\nstruct t { s v<>; };",
        "2:12",
        "zero-size elements",
    );
}

#[test]
fn every_error_is_reported_not_just_the_first_type_error() {
    let e = check("struct s { foo a; bar b; };", "t.x").unwrap_err();
    assert_eq!(e.diagnostics().len(), 2, "{e}");
}

#[test]
fn diagnostics_show_the_line_and_a_caret() {
    let e = check("struct s {\n    int x\n};", "t.x").unwrap_err();
    let text = e.to_string();
    assert_eq!(
        text,
        "t.x:2:10: error: expected `;` after the struct member, found `}`\n 2 |     int x\n   |          ^"
    );
}

#[test]
fn accepted_spellings() {
    let ok = "%#include <stdio.h>\n#ifdef RPC_HDR\n#endif\n// c++ comment\n\
        const A = -5; const B = 0x10; const C = 010; const D = A;\n\
        typedef unsigned u; typedef long l; typedef unsigned long ul; typedef unsigned hyper uh;\n\
        enum e { X = A, Y = B, Z = C };\n\
        struct s { struct s *next; e f; };\n\
        union v switch (e d) { case X: case Y: int a; case Z: void; default: void; };\n\
        program P { version V1 { void N(void) = 0; s G(u, l) = 1; } = 1; version V2 { v H(e) = 1; } = 2; } = 0x20000001;";
    let code = generate(ok, "ok.x", &Options::default()).unwrap();
    for want in [
        "pub const A: i32 = -5;",
        "pub const B: u32 = 16;",
        "pub const C: u32 = 8;",
        "pub const D: i32 = -5;",
        "pub type U = u32;",
        "pub type L = i32;",
        "pub mod v1 {",
        "pub mod v2 {",
        "pub async fn g(&self, arg0: super::U, arg1: super::L)",
        "X = -5,",
        "Y(i32),",
        "Default(E)",
    ] {
        assert!(code.contains(want), "missing `{want}`");
    }
}

#[test]
fn pragmas_attach_before_or_after_on_the_same_line() {
    let before = "struct r {\n  /* @ddp(4096) */\n  opaque d<>;\n};\nprogram P { version V { r F(void) = 1; } = 1; } = 1;";
    let after = "struct r {\n  opaque d<>; /* @ddp(4096) */\n};\nprogram P { version V { r F(void) = 1; } = 1; } = 1;";
    for src in [before, after] {
        let code = generate(src, "p.x", &Options::default()).unwrap();
        assert!(
            code.contains(".ddp_result(4096).max_results(4100)"),
            "{src}"
        );
        assert!(code.contains("put_opaque_ddp"));
    }
    // On the next line, a pragma belongs to the next declaration.
    let next = "struct r {\n  opaque a<>;\n  /* @ddp(8) */\n  opaque b<>;\n};";
    let code = generate(next, "p.x", &Options::default()).unwrap();
    assert_eq!(code.matches("put_opaque_ddp").count(), 1);
}

#[test]
fn string_may_be_a_procedure_argument_or_result_as_in_rpcgen() {
    let code = generate(
        "program P { version V { string F(string, int) = 1; } = 1; } = 1;",
        "s.x",
        &Options::default(),
    )
    .unwrap();
    assert!(
        code.contains("pub async fn f(&self, arg0: ::std::string::String, arg1: i32) -> ::core::result::Result<::std::string::String,"),
        "{code}"
    );
    fails(
        "program P { version V { int F(opaque) = 1; } = 1; } = 1;",
        "1:31",
        "`opaque` cannot be a procedure's argument or result directly",
    );
}

#[test]
fn enum_items_without_a_value_take_the_c_value() {
    // rpcgen accepts them and its C gives each one more than the item
    // before (0 for the first), also after a negative or named value.
    let code = generate(
        "const K = 8;\nenum e { A, B = 5, C, D = K, E, F = -2, G };",
        "e.x",
        &Options::default(),
    )
    .unwrap();
    for want in [
        "A = 0,", "B = 5,", "C = 6,", "D = 8,", "E = 9,", "F = -2,", "G = -1,",
    ] {
        assert!(code.contains(want), "missing `{want}`");
    }
    fails(
        "enum e { A = 0xFFFFFFFF, B };",
        "1:26",
        "is not a 32-bit value",
    );
}

#[test]
fn names_that_differ_only_in_case_are_numbered() {
    // The RPC language is case-sensitive (rpcgen's C is), Rust's naming
    // conventions fold case: the first keeps the Rust name, the later ones
    // get 2, 3, ... appended.
    let src = "const a = 1; const A = 2;\n\
        struct s { int x; int X; int ab_c; int abC; };\n\
        struct S { hyper y; };\n\
        typedef int t; typedef int T;\n\
        enum e { v = 1, V = 2 };\n\
        union u switch (e d) { case v: void; case V: int i; };\n\
        union w switch (int d) { case a: void; case A: void; default: void; };\n\
        program P { version V1 { void P_get(void) = 1; void P_GET(void) = 2; void P_get_with_hints(void) = 3; } = 1;\n\
                    version v1 { void Q(void) = 1; } = 2; } = 1;";
    let code = generate(src, "c.x", &Options::default()).unwrap();
    for want in [
        "pub const A: u32 = 1;",
        "pub const A_2: u32 = 2;",
        "pub struct S {",
        "pub x: i32,",
        "pub x_2: i32,",
        "pub ab_c: i32,",
        "pub ab_c_2: i32,",
        "pub struct S2 {",
        "pub type T = i32;",
        "pub type T2 = i32;",
        "pub fn encode_t(",
        "pub fn encode_t_2(",
        "V = 1,",
        "V2 = 2,",
        "V2(i32),",
        "pub mod v1 {",
        "pub mod v1_2 {",
        "pub async fn get(&self)",
        "pub async fn get_2(&self)",
        "pub async fn get_with_hints(&self, hints",
        "pub async fn get_with_hints_2(&self)",
        "pub const P_GET: u32 = 1;",
        "pub const P_GET_2: u32 = 2;",
    ] {
        assert!(code.contains(want), "missing `{want}`");
    }
}

#[test]
fn a_ddp_result_no_write_chunk_can_be_sized_for_travels_inline() {
    // No maximum and no bound: that item, and every later one, gets no
    // Write chunk (the responder sends it inline or in the Reply chunk).
    let src =
        "struct r { opaque a<8>; /* @ddp */ opaque d<>; /* @ddp */ opaque e<16>; /* @ddp */ };\n\
        program P { version V { r F(void) = 1; } = 1; } = 1;";
    let code = generate(src, "d.x", &Options::default()).unwrap();
    assert!(
        code.contains("::rpcrdma_oncrpc::CallHints::new().ddp_result(8)\n"),
        "{code}"
    );
    // Items inside a variable-length array, too.
    let src = "struct i { opaque d<8>; /* @ddp */ };\n\
        struct r { opaque a<4>; /* @ddp */ i v<>; opaque b<4>; /* @ddp */ };\n\
        program P { version V { r F(void) = 1; } = 1; } = 1;";
    let code = generate(src, "d.x", &Options::default()).unwrap();
    assert!(
        code.contains("::rpcrdma_oncrpc::CallHints::new().ddp_result(4)\n"),
        "{code}"
    );
}

#[test]
fn write_chunks_are_sized_for_the_items_that_may_land_in_them() {
    // `a` may be absent, and `b` then comes first: the first chunk must
    // hold `b` too.
    let src = "typedef opaque small<10>; /* @ddp */\n\
        struct r { small *a; opaque b<1000>; /* @ddp */ };\n\
        program P { version V { r F(void) = 1; } = 1; } = 1;";
    let code = generate(src, "s.x", &Options::default()).unwrap();
    assert!(
        code.contains(".ddp_result(1000).ddp_result(1000)"),
        "{code}"
    );
    // A union arm without items shifts what follows the union.
    let src = "union u switch (int d) { case 1: opaque x<10>; /* @ddp */ default: void; };\n\
        struct r { u first; opaque b<1000>; /* @ddp */ };\n\
        program P { version V { r F(void) = 1; } = 1; } = 1;";
    let code = generate(src, "s.x", &Options::default()).unwrap();
    assert!(
        code.contains(".ddp_result(1000).ddp_result(1000)"),
        "{code}"
    );
    // Nothing can shift: each chunk its own item's size.
    let src = "struct r { opaque a<10>; /* @ddp */ opaque b<1000>; /* @ddp */ };\n\
        program P { version V { r F(void) = 1; } = 1; } = 1;";
    let code = generate(src, "s.x", &Options::default()).unwrap();
    assert!(code.contains(".ddp_result(10).ddp_result(1000)"), "{code}");
}

#[test]
fn version_module_docs_link_from_the_enclosing_scope() {
    // rustdoc resolves a module's outer doc links from its parent: the
    // links name the module (none for a raw identifier, which a link
    // cannot spell).
    let code = generate(
        "program P { version V1 { void N(void) = 0; } = 1; version mod { void M(void) = 0; } = 2; } = 1;",
        "d.x",
        &Options::default(),
    )
    .unwrap();
    assert!(code.contains("[`Client`](v1::Client) stubs"), "{code}");
    assert!(code.contains("[`register`](v1::register)ing"));
    assert!(code.contains("(`mod`) of program 0x1 (`P`): `Client` stubs"));
}

#[test]
fn preprocessor_conditionals_read_as_cpp_reads_them_for_rpcgen() {
    // rpcgen runs the file through cpp; with nothing defined, `#ifdef`
    // and `#if 0` blocks drop out, `#ifndef` and `#else` stay.
    let src = "#ifdef RPC_HDR\n%#include <x.h>\nstruct s { quadruple q; };\n#endif\n\
        #if 0\nconst A = 1;\n#elif defined(FOO) || !(1 && 0)\nconst A = 2;\n#else\nconst A = 3;\n#endif\n\
        #ifndef _X_H /* a guard */\nconst B = 4;\n#else\nconst B = 5;\n#endif\n\
        #if 1\n#ifdef NOPE\nconst C = 6;\n#else\nconst C = 7;\n#endif\n#endif\n\
        #if 0\n this is not RPC language @ $\n#endif\n";
    let code = generate(src, "c.x", &Options::default()).unwrap();
    for want in [
        "pub const A: u32 = 2;",
        "pub const B: u32 = 4;",
        "pub const C: u32 = 7;",
    ] {
        assert!(code.contains(want), "missing `{want}` in {code}");
    }
    assert!(!code.contains("pub struct S"));
    fails(
        "#if 1\nconst A = 1;\n",
        "1:1",
        "never closed: expected `#endif`",
    );
    fails("const A = 1;\n#endif\n", "2:1", "`#endif` without `#if`");
    fails(
        "#if 0\n#else\n#else\n#endif\n",
        "3:1",
        "`#else` after `#else`",
    );
    fails(
        "#if 1 +\n#endif\n",
        "1:1",
        "cannot read the condition `1 +`",
    );
}

/// What plain rpcgen takes and RFC 4506/5531 allow (docs/xdrgen.md,
/// "What rpcgen takes and we refuse" lists the rest, refused).
#[test]
fn rpcgen_spellings_the_rfcs_allow_are_accepted() {
    // Enum aliases: two names for one value; the later one is an
    // associated constant of the first's variant.
    let code = generate(
        "enum e { A = 1, B = 1, C = 2, D = A };\nunion u switch (e d) { case B: int x; case C: void; };",
        "a.x",
        &Options::default(),
    )
    .unwrap();
    for want in [
        "A = 1,",
        "C = 2,",
        "pub const B: Self = Self::A;",
        "pub const D: Self = Self::A;",
        "1 => ::core::option::Option::Some(Self::A),",
        "B(i32),",
    ] {
        assert!(code.contains(want), "missing `{want}`:\n{code}");
    }
    assert!(!code.contains("B = 1,"));
    // A word from 0x80000000 up, as rpcgen's C sends it: the negative int.
    let code = generate(
        "enum big { LOW = 0x7FFFFFFF, HIGH = 0x80000000, TOP = 0xFFFFFFFF };\n\
         union w switch (int d) { case 0x80000000: void; case 1: int x; };\n\
         union v switch (big b) { case 0xFFFFFFFF: void; case HIGH: int y; };",
        "b.x",
        &Options::default(),
    )
    .unwrap();
    for want in [
        "High = -2147483648,",
        "Top = -1,",
        "XDR: `HIGH = 0x80000000` (on the wire the int -2147483648).",
        "-2147483648 => Self::CaseMinus2147483648,",
        "-1 => Self::Top,",
    ] {
        assert!(code.contains(want), "missing `{want}`:\n{code}");
    }
    // Case labels that are constants (of an item's value) name the item.
    let code = generate(
        "enum e { A = 1, B = 2 };\nconst K = 2;\nunion u switch (e d) { case K: int x; case A: void; };",
        "c.x",
        &Options::default(),
    )
    .unwrap();
    assert!(code.contains("B(i32),"), "{code}");
    // Named procedure arguments (rpcgen's extension): accepted, named in
    // the client's documentation.
    let code = generate(
        "program P { version V {\n  int F(int count, string name<>) = 1;\n  int G(unsigned n) = 2;\n  int H(int a, int) = 3;\n} = 1; } = 1;",
        "d.x",
        &Options::default(),
    )
    .unwrap();
    for want in [
        "pub async fn f(&self, arg0: i32, arg1: ::std::string::String)",
        "/// Arguments named in the `.x` file: `arg0` is `count`, `arg1` is `name`.",
        "/// Arguments named in the `.x` file: `args` is `n`.",
        "/// Arguments named in the `.x` file: `arg0` is `a`.",
    ] {
        assert!(code.contains(want), "missing `{want}`:\n{code}");
    }
}

/// What plain rpcgen takes and we refuse, each with its reason.
#[test]
fn rpcgen_spellings_outside_the_rfcs_are_refused_clearly() {
    fails(
        "struct s { short x; };",
        "1:12",
        "`short` is not an XDR type (RFC 4506)",
    );
    fails(
        "struct s { char x[4]; };",
        "1:12",
        "`char` is not an XDR type",
    );
    fails(
        "struct s { unsigned short x; };",
        "1:21",
        "`unsigned char` and `unsigned short` are not XDR types",
    );
    fails(
        "program P { version V { int F(int *p) = 1; } = 1; } = 1;",
        "1:35",
        "`*` in a procedure's argument: an argument is a type, optionally followed by a name",
    );
    fails(
        "program P { version V { int F(int a[3]) = 1; } = 1; } = 1;",
        "1:36",
        "an array in a procedure's argument",
    );
    fails(
        "program P { version V { int F(string s<8>) = 1; } = 1; } = 1;",
        "1:39",
        "a bound on a `string` argument (rpcgen ignores it)",
    );
    fails(
        "program P { version V { int F(int switch) = 1; } = 1; } = 1;",
        "1:35",
        "expected `,` or `)` after the argument type, or the argument's name, found `switch`",
    );
    fails(
        "enum e { A = 1 };\nunion u switch (e d) { case 5: void; };",
        "2:29",
        "the arm could never be taken",
    );
    // rpcgen takes it, but its C cannot decode the negative items (the
    // generic differential found it).
    fails(
        "enum mixed { M_NEG = -1, M_HIGH = 0x80000000 };",
        "1:35",
        "enum item `M_HIGH` = 0x80000000 is a word from 0x80000000 in an enum with a negative item (`M_NEG` = -1): rpcgen's C makes such an enum 64 bits wide",
    );
}
