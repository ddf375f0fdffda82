//! rpcgen for Rust: reads RPC language definitions (`.x` files: RFC 4506
//! §6 plus the program definitions of RFC 5531 §12) and generates Rust
//! types, their XDR encoding and decoding on `rpcrdma-xdr`, `async` client
//! stubs over `rpcrdma-oncrpc`'s `Client`, a server trait per program
//! version with its registration into `Services`, and the RPC-over-RDMA
//! **Upper-Layer Binding** (RFC 8166 §6) from comment pragmas that plain
//! rpcgen ignores.
//!
//! # Use from `build.rs`
//!
//! ```no_run
//! // build.rs, in `fn main()`:
//! rpcrdma_xdrgen::Builder::new("demo.x")
//!     .generate_to_out_dir()
//!     .unwrap_or_else(|e| panic!("{e}"));
//! ```
//!
//! ```ignore
//! // src/lib.rs: the generated file is named after the .x file.
//! mod demo {
//!     include!(concat!(env!("OUT_DIR"), "/demo.rs"));
//! }
//! ```
//!
//! The crate using the code depends on `bytes`, `rpcrdma-xdr` and
//! `rpcrdma-oncrpc`. `rpcrdma xdrgen FILE.x` prints the same code.
//!
//! # From the RPC language to Rust
//!
//! | RPC language | Rust |
//! |---|---|
//! | `const NAME = 5;` | `pub const NAME: u32 = 5;` (`i32` if negative, `u64`/`i64` beyond 32 bits) |
//! | `int`, `unsigned int` (`unsigned`), `hyper`, `unsigned hyper` | `i32`, `u32`, `i64`, `u64` |
//! | `float`, `double` | `f32`, `f64` (bit patterns kept) |
//! | `bool` | `bool` (decoding accepts only 0 and 1) |
//! | `quadruple` | refused, with an error naming the line |
//! | `opaque x[N]` | `[u8; N]` |
//! | `opaque x<N>`, `opaque x<>` | `bytes::Bytes` (zero-copy from the receive buffer) |
//! | `string s<N>`, `string s<>` | `String` (UTF-8 checked), or `Bytes` with [`Builder::strings_as_bytes`] |
//! | `T x[N]` | `[T; N]` |
//! | `T x<N>`, `T x<>` | `Vec<T>` |
//! | `T *x` | `Option<Box<T>>` |
//! | `enum e { A = 1, ... }` | `#[repr(i32)] enum E { A = 1, ... }` with `value()`/`from_value()`; an unknown value does not decode; an item without `= value` has C's value, as in rpcgen (one more than the item before); a second name for a value is an associated constant (an alias); `0x80000000`..`0xFFFFFFFF` is that 32-bit word, a negative int |
//! | `struct s { ... }` | `struct S { pub ... }` |
//! | `union u switch (d) { case A: T a; ... default: ...; }` | `enum U { A(T), ..., Default(D, T) }`: one variant per case value (fall-through lists give one variant each), named after the case's constant or enum item (`Case5`, `CaseMinus1` for numbers, `True`/`False` for bool); a `void` arm is a unit variant; the default arm carries the discriminant |
//! | `typedef T name;` | `pub type Name = T;` plus `encode_name`, `decode_name`, `check_name`, `name_to_xdr`, `name_from_xdr` |
//! | a struct, union or enum defined inside another | its own type, named after the outer type and the member (`Outer` + `Member`) |
//! | `program P { version V { R PROC(A) = 1; } = 2; } = 0x20000001;` | `pub const P: u32`, `pub const V: u32`, and `pub mod v { Client, Server, register, Ulb, DefaultUlb, hints_*, procedure numbers }` |
//!
//! Names: types and variants become `UpperCamelCase`, members and methods
//! `snake_case`, constants stay in capitals; Rust keywords become raw
//! identifiers (`r#type`). Names that meet in Rust (`point`, `POINT` →
//! `Point`; `int x; int X;` → `x`) are numbered after the first
//! (`Point2`, `x_2`). Client and server methods are the procedure
//! names without the prefix all of a version's procedures share
//! (`NFSPROC3_READ` → `read`). Every struct, union and enum implements
//! `rpcrdma_oncrpc::Marshal` and `Unmarshal` and has `to_xdr()`,
//! `from_xdr()` and `xdr_check()` (checks every length against its
//! declared maximum: what encoding assumes; client stubs run it on the
//! arguments, the server on results).
//!
//! **Linked lists** (`struct node { ...; node *next; }`, also through a
//! typedef of `node *`) keep rpcgen's shape (`next: Option<Box<Node>>`),
//! but their chains are encoded, decoded, dropped, cloned and compared
//! without recursion, so a hostile peer cannot overflow the stack; decoding
//! stops at [`Builder::max_list_len`] nodes. What else recurses (also a
//! list node's other members, as in a first-child / next-sibling tree)
//! decodes at most [`Builder::max_depth`] levels deep. Every variable-length item is
//! checked against its maximum before anything is allocated, and no
//! allocation exceeds what the input could fill.
//!
//! # The Upper-Layer Binding
//!
//! A comment pragma next to an `opaque<>` or `string<>` declaration
//! (before it, or after its `;` on the same line) makes it DDP-eligible:
//!
//! ```c
//! struct read_resok {
//!     unsigned int crc32c;
//!     opaque       data<DEMO_MAX_DATA>;   /* @ddp(args.count) */
//! };
//! struct write_args {
//!     opaque data<DEMO_MAX_DATA>;         /* @ddp */
//! };
//! program DEMO_PROG { version DEMO_V1 {
//!     read_res DEMO_READ(read_args) = 2;
//!     cb_echo_data CB_ECHO(cb_echo_data) = 1;  /* @max_results(size(args)) */
//! } = 1; } = 0x2052444D;
//! ```
//!
//! The generated code then moves the item through
//! `Encoder::put_opaque_ddp`/`Decoder::get_opaque_ddp`, and each
//! procedure's call hints (`hints_*`, the [`Ulb`](#the-upper-layer-binding)
//! trait's defaults) list a Write chunk for every DDP-eligible item of its
//! results — as large as the declared maximum, or as the pragma's bound:
//! a number, a constant, or `args.FIELD` (an unsigned member of the call's
//! arguments, capped at the declared maximum); an item no chunk can be
//! sized for (unbounded, or inside a variable-length array) and every
//! later one get none and travel inline — and the maximum size of
//! the results, computed from the types (DDP items counted at their
//! bound) or given by `/* @max_results(TERM + ...) */` next to the
//! procedure. Override any of it at run time by implementing the version's
//! `Ulb` trait.
//!
//! # Errors
//!
//! Syntax and type errors name the file, line and column and say what was
//! expected:
//!
//! ```
//! let e = rpcrdma_xdrgen::generate("struct s { int x }", "bad.x", &Default::default())
//!     .unwrap_err();
//! assert!(e.to_string().starts_with("bad.x:1:18: error: expected `;` after the struct member, found `}`"));
//! ```
//!
//! The `fuzzing` feature adds the module `fuzzing`: the entry point of the
//! cargo-afl harness (`fuzz/fuzz_targets/xdrgen.rs`) and of
//! `tests/fuzz_bounded.rs`. The `difftest` feature adds the module
//! `difftest` and the `xdrgen-difftool` binary: the schema-driven
//! differential against rpcgen (random valid values of every type, the
//! invalid mutations, the C and Rust round-trip drivers). Both are test
//! support; generation never needs them.
#![forbid(unsafe_code)]

mod ast;
mod check;
#[cfg(feature = "difftest")]
pub mod difftest;
mod error;
mod gen;
mod lexer;
mod model;
mod names;
mod parser;
mod pragma;
mod ulb;

use std::path::{Path, PathBuf};

pub use error::{Diagnostic, Error, Pos};

/// Generation options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Map `string` to `bytes::Bytes` instead of `String` (no UTF-8
    /// check: file names and the like may be any bytes).
    pub strings_as_bytes: bool,
    /// Deepest nesting of recursive types a decoder accepts.
    pub max_depth: u32,
    /// Most nodes a linked list may have when decoded.
    pub max_list_len: u32,
    /// The path of a crate that re-exports `oncrpc` (`rpcrdma-oncrpc`),
    /// `xdr` (`rpcrdma-xdr`) and `bytes`, as the `rpcrdma` facade does
    /// (`Some("::rpcrdma")`): the generated code then names that crate
    /// alone, and a crate that depends only on it can compile the code.
    /// `None` (the default): the code names `::rpcrdma_oncrpc`,
    /// `::rpcrdma_xdr` and `::bytes`, which the crate then depends on.
    pub runtime: Option<String>,
}

impl Default for Options {
    /// `String` for strings, recursion 64 deep, lists of 1 Mi nodes.
    fn default() -> Self {
        Self {
            strings_as_bytes: false,
            max_depth: 64,
            max_list_len: 1 << 20,
            runtime: None,
        }
    }
}

/// Parses and checks a `.x` source, returning every problem found.
///
/// ```
/// rpcrdma_xdrgen::check("const N = 4; typedef opaque blob<N>;", "ok.x")?;
/// # Ok::<(), rpcrdma_xdrgen::Error>(())
/// ```
pub fn check(source: &str, file: &str) -> Result<(), Error> {
    generate(source, file, &Options::default()).map(|_| ())
}

fn model(source: &str, file: &str) -> Result<model::Model, Error> {
    let mut rep = error::Reporter::new(file, source);
    let spec = match parser::parse(source, &rep) {
        Ok(s) => s,
        Err(d) => return Err(Error::Source(vec![d])),
    };
    let m = check::check(&spec, &mut rep);
    rep.finish()?;
    Ok(m)
}

/// Generates the Rust code for a `.x` source; `file` names it in messages
/// and in the generated comments.
///
/// The work runs on a thread of its own with a large stack (type graphs
/// are walked recursively, and a `.x` file may chain thousands of
/// typedefs).
pub fn generate(source: &str, file: &str, options: &Options) -> Result<String, Error> {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("xdrgen".into())
            .stack_size(256 << 20)
            .spawn_scoped(s, || {
                let m = model(source, file)?;
                Ok(gen::generate(&m, options, file))
            })
            .map_err(|source| Error::Io {
                path: file.to_string(),
                source,
            })?
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// The RPC language definitions shipped with the generator (the files of
/// its `xdr/` directory), for [`Builder::from_source`]: a crate that
/// generates them needs no path into this crate's sources (and so can be
/// published).
pub mod definitions {
    /// NFSv3 (RFC 1813), with RFC 8267's DDP-eligible items.
    pub const NFS3: &str = include_str!("../xdr/nfs3.x");
    /// MOUNT v3 (RFC 1813, Appendix I).
    pub const MOUNT3: &str = include_str!("../xdr/mount3.x");
    /// NFSv4.1 and NFSv4.2 (RFC 5662, RFC 7863), with their callback
    /// program.
    pub const NFS4: &str = include_str!("../xdr/nfs4.x");
}

/// Generates code from a `.x` file, for `build.rs` or other tools.
#[derive(Debug, Clone)]
pub struct Builder {
    path: PathBuf,
    /// The source, when given as text rather than read from `path`.
    source: Option<String>,
    options: Options,
    out_name: Option<String>,
}

impl Builder {
    /// A builder for the `.x` file at `path` (relative to the crate root in
    /// a build script).
    pub fn new(path: impl AsRef<Path>) -> Self {
        Self {
            path: path.as_ref().to_path_buf(),
            source: None,
            options: Options::default(),
            out_name: None,
        }
    }

    /// A builder for RPC language `source` (e.g. one of
    /// [`definitions`]); `name` (e.g. `"nfs3.x"`) names it in messages and
    /// gives the generated file's stem.
    ///
    /// ```
    /// let code = rpcrdma_xdrgen::Builder::from_source("mount3.x", rpcrdma_xdrgen::definitions::MOUNT3)
    ///     .generate()?;
    /// assert!(code.contains("pub mod mount_v3"));
    /// # Ok::<(), rpcrdma_xdrgen::Error>(())
    /// ```
    pub fn from_source(name: impl AsRef<Path>, source: impl Into<String>) -> Self {
        Self {
            source: Some(source.into()),
            ..Self::new(name)
        }
    }

    /// Maps `string` to `bytes::Bytes` (see [`Options::strings_as_bytes`]).
    pub fn strings_as_bytes(mut self, yes: bool) -> Self {
        self.options.strings_as_bytes = yes;
        self
    }

    /// Sets the deepest nesting of recursive types accepted on decode.
    pub fn max_depth(mut self, depth: u32) -> Self {
        self.options.max_depth = depth;
        self
    }

    /// Sets the most nodes of a linked list accepted on decode.
    pub fn max_list_len(mut self, nodes: u32) -> Self {
        self.options.max_list_len = nodes;
        self
    }

    /// Makes the generated code name only the crate at `path` (e.g.
    /// `"::rpcrdma"`, the facade), which re-exports `oncrpc`, `xdr` and
    /// `bytes` (see [`Options::runtime`]).
    pub fn runtime(mut self, path: impl Into<String>) -> Self {
        self.options.runtime = Some(path.into());
        self
    }

    /// Names the generated file (default: the `.x` file's stem + `.rs`).
    pub fn out_file_name(mut self, name: impl Into<String>) -> Self {
        self.out_name = Some(name.into());
        self
    }

    /// The generated code.
    pub fn generate(&self) -> Result<String, Error> {
        let display = self.path.display().to_string();
        if let Some(source) = &self.source {
            return generate(source, &display, &self.options);
        }
        let source = std::fs::read_to_string(&self.path).map_err(|source| Error::Io {
            path: display.clone(),
            source,
        })?;
        generate(&source, &display, &self.options)
    }

    /// Writes the code to `path`.
    pub fn generate_to_file(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        let code = self.generate()?;
        let path = path.as_ref();
        std::fs::write(path, code).map_err(|source| Error::Io {
            path: path.display().to_string(),
            source,
        })
    }

    /// In a build script: writes the code to `$OUT_DIR/<stem>.rs`, tells
    /// cargo to rerun when the `.x` file changes (a file named by
    /// [`Builder::new`]), and returns the path.
    pub fn generate_to_out_dir(&self) -> Result<PathBuf, Error> {
        let out = std::env::var_os("OUT_DIR").ok_or(Error::NoOutDir)?;
        let name = self.out_name.clone().unwrap_or_else(|| {
            let stem = self
                .path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "xdr".into());
            format!("{stem}.rs")
        });
        if self.source.is_none() {
            println!("cargo:rerun-if-changed={}", self.path.display());
        }
        let dest = Path::new(&out).join(name);
        self.generate_to_file(&dest)?;
        Ok(dest)
    }
}

#[cfg(feature = "fuzzing")]
pub mod fuzzing {
    //! The parser's fuzz harness (`fuzz/fuzz_targets/xdrgen.rs`, and a
    //! bounded run in `cargo test`): any bytes, read as a `.x` file, give
    //! either code or diagnostics that point into the file — never a panic
    //! or a hang — and generation is deterministic. With the `difftest`
    //! feature too, a file of at most 4 KiB that generates also goes
    //! through the differential's parts: its flattened copy reads back
    //! with the same types and values, and sampling never panics.

    /// Sources up to this size also go through the differential's
    /// checks (larger ones are the project's own files, which the
    /// differential itself runs on).
    #[cfg(feature = "difftest")]
    const DIFFTEST_MAX: usize = 4096;

    /// Runs the generator on `data`; panics only when an invariant breaks.
    pub fn generate_any(data: &[u8]) {
        let source = String::from_utf8_lossy(data);
        let lines = source.lines().count().max(1) as u32;
        match crate::generate(&source, "fuzz.x", &crate::Options::default()) {
            Ok(code) => {
                assert!(!code.is_empty(), "generated nothing");
                #[cfg(feature = "difftest")]
                if source.len() <= DIFFTEST_MAX {
                    crate::difftest::fuzz_check(&source);
                }
                let again = crate::generate(&source, "fuzz.x", &crate::Options::default());
                assert_eq!(
                    again.ok().as_deref(),
                    Some(code.as_str()),
                    "not deterministic"
                );
            }
            Err(e) => {
                let d = e.diagnostics();
                assert!(!d.is_empty(), "an error without a diagnostic: {e}");
                for d in d {
                    assert!(
                        d.pos.line >= 1 && d.pos.line <= lines + 1,
                        "line {} outside the {lines}-line input: {d}",
                        d.pos.line
                    );
                    assert!(d.pos.col >= 1, "column 0: {d}");
                    assert!(!d.message.is_empty());
                }
            }
        }
    }
}
