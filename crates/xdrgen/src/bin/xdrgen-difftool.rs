//! `xdrgen-difftool`: the steps of the generic rpcgen differential
//! (`scripts/xdrgen-rpcgen-diff.sh FILE.x`, docs/xdrgen.md "The generic
//! differential"). Built with `--features difftest`; test support only.
//!
//! ```text
//! xdrgen-difftool types FILE.x                  the top-level types, one a line
//! xdrgen-difftool nested FILE.x                 the types defined inside others
//! xdrgen-difftool flatten FILE.x                the types as a file rpcgen takes
//!                                               (nested definitions made top-level)
//! xdrgen-difftool cases FILE.x [--seed N] [--values N] [--mutations N]
//!                                               KIND TYPE HEX lines: random valid
//!                                               values of every type and invalid
//!                                               mutations of them
//! xdrgen-difftool c-driver FILE.x HEADER        the C round-trip driver over rpcgen's
//!                                               xdr_<type> functions and libtirpc
//! xdrgen-difftool rust-crate DIR FILE.x...      a crate whose build.rs generates the
//!                                               files with xdrgen's Builder and whose
//!                                               binary round-trips cases (argument:
//!                                               the file's index)
//! xdrgen-difftool judge CASES RUST-OUT C-OUT    compares; exit status 1 on any
//!                                               disagreement
//! ```

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rpcrdma_xdrgen::difftest::{judge, Rng, Schema};

const USAGE: &str = "usage: xdrgen-difftool types|nested|flatten FILE.x
       xdrgen-difftool cases FILE.x [--seed N] [--values N] [--mutations N]
       xdrgen-difftool c-driver FILE.x HEADER
       xdrgen-difftool rust-crate DIR FILE.x...
       xdrgen-difftool judge CASES RUST-OUT C-OUT";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("xdrgen-difftool: {e}");
            ExitCode::from(2)
        }
    }
}

fn schema(path: &str) -> Result<Schema, String> {
    Schema::load(path).map_err(|e| e.to_string())
}

fn read(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))
}

fn run(args: &[String]) -> Result<ExitCode, String> {
    let arg = |i: usize| args.get(i).map(String::as_str).ok_or(USAGE.to_string());
    match arg(0)? {
        "types" => {
            for t in schema(arg(1)?)?.types() {
                println!("{t}");
            }
        }
        "nested" => {
            for t in schema(arg(1)?)?.nested_types() {
                println!("{t}");
            }
        }
        "flatten" => print!("{}", schema(arg(1)?)?.flattened()),
        "cases" => {
            let s = schema(arg(1)?)?;
            let mut seed = 1;
            let mut values = 200;
            let mut mutations = 2;
            let mut i = 2;
            while i < args.len() {
                let n: u64 = arg(i + 1)?
                    .parse()
                    .map_err(|_| format!("{}: not a number", args[i + 1]))?;
                match args[i].as_str() {
                    "--seed" => seed = n,
                    "--values" => values = n,
                    "--mutations" => mutations = n as usize,
                    _ => return Err(USAGE.into()),
                }
                i += 2;
            }
            print!("{}", cases(&s, seed, values, mutations));
        }
        "c-driver" => print!("{}", schema(arg(1)?)?.c_driver(arg(2)?)),
        "rust-crate" => {
            let dir = PathBuf::from(arg(1)?);
            let files: Vec<PathBuf> = args[2..]
                .iter()
                .map(|f| std::fs::canonicalize(f).map_err(|e| format!("{f}: {e}")))
                .collect::<Result<_, _>>()?;
            if files.is_empty() {
                return Err(USAGE.into());
            }
            rust_crate(&dir, &files)?;
        }
        "judge" => {
            let v = judge(&read(arg(1)?)?, &read(arg(2)?)?, &read(arg(3)?)?);
            print!("{v}");
            if !v.agrees() {
                return Ok(ExitCode::FAILURE);
            }
        }
        _ => return Err(USAGE.into()),
    }
    Ok(ExitCode::SUCCESS)
}

/// `values` random valid values of every type, each followed by up to
/// `mutations` of its invalid mutations (of different kinds where it
/// has them); a case already written is not written again.
fn cases(s: &Schema, seed: u64, values: u64, mutations: usize) -> String {
    let mut rng = Rng::new(seed);
    let mut out = String::new();
    for ty in s.types() {
        let mut seen = HashSet::new();
        for _ in 0..values {
            let Some(sample) = s.sample(&ty, &mut rng) else {
                eprintln!(
                    "xdrgen-difftool: `{ty}` has no sample: its smallest encoding exceeds 1 MiB"
                );
                break;
            };
            let h = hex(&sample.bytes);
            if seen.insert(h.clone()) {
                out.push_str(&format!("valid {ty} {h}\n"));
            }
            let mut ms = sample.mutations;
            // A random pick, one kind before a second of the same.
            for i in (1..ms.len()).rev() {
                ms.swap(i, rng.below(i as u64 + 1) as usize);
            }
            ms.sort_by_key(|m| m.kind);
            let mut kinds = Vec::new();
            let mut picked = Vec::new();
            for m in &ms {
                if picked.len() < mutations && !kinds.contains(&m.kind) {
                    kinds.push(m.kind);
                    picked.push(m);
                }
            }
            for m in picked {
                let h = hex(&m.bytes);
                if seen.insert(h.clone()) {
                    out.push_str(&format!("{}@{} {ty} {h}\n", m.kind.name(), m.offset));
                }
            }
        }
    }
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Writes `path` unless it already holds `text` (so cargo rebuilds only
/// what changed).
fn write_if_changed(path: &Path, text: &str) -> Result<(), String> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The Rust side: a crate at `dir` whose build script generates each
/// file with `rpcrdma_xdrgen::Builder` and whose binary round-trips the
/// cases of file `N` (its argument) read on standard input.
fn rust_crate(dir: &Path, files: &[PathBuf]) -> Result<(), String> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let repo = std::fs::canonicalize(&repo).map_err(|e| format!("{}: {e}", repo.display()))?;
    std::fs::create_dir_all(dir.join("src")).map_err(|e| format!("{}: {e}", dir.display()))?;
    let r = repo.display();
    write_if_changed(
        &dir.join("Cargo.toml"),
        &format!(
            r#"# Written by xdrgen-difftool: the Rust side of the generic rpcgen
# differential (scripts/xdrgen-rpcgen-diff.sh FILE.x).
[package]
name = "xdrgen-diff-rust"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
bytes = "1"
rpcrdma-oncrpc = {{ path = "{r}/crates/oncrpc" }}
rpcrdma-xdr = {{ path = "{r}/crates/xdr" }}

[build-dependencies]
rpcrdma-xdrgen = {{ path = "{r}/crates/xdrgen" }}

[workspace]
"#
        ),
    )?;
    // The workspace's versions of every dependency, so its target
    // directory's builds are reused.
    let lock = dir.join("Cargo.lock");
    if !lock.exists() {
        std::fs::copy(repo.join("Cargo.lock"), &lock).map_err(|e| format!("Cargo.lock: {e}"))?;
    }
    let list: String = files
        .iter()
        .map(|f| format!("        {:?},\n", f.display().to_string()))
        .collect();
    write_if_changed(
        &dir.join("build.rs"),
        &format!(
            r#"// Written by xdrgen-difftool: generates each file with xdrgen's Builder.
fn main() {{
    let files = [
{list}    ];
    for (i, x) in files.iter().enumerate() {{
        rpcrdma_xdrgen::Builder::new(x)
            .out_file_name(format!("f{{i}}.rs"))
            .generate_to_out_dir()
            .unwrap_or_else(|e| panic!("{{e}}"));
    }}
}}
"#
        ),
    )?;
    let mut main = String::from(
        "//! Written by xdrgen-difftool: decodes each case (`KIND TYPE HEX` on\n\
         //! standard input) with the code generated from file N (the argument),\n\
         //! checks and re-encodes it, and prints `ok HEX`, `err WHY` or `panic`.\n\
         #![allow(dead_code, unused_imports, clippy::all)]\n\n\
         use std::io::{BufRead, Write};\n\n",
    );
    let mut arms = String::new();
    for (i, f) in files.iter().enumerate() {
        let s = schema(&f.display().to_string())?;
        main.push_str(&format!(
            "/// `{}`.\nmod f{i} {{\n    include!(concat!(env!(\"OUT_DIR\"), \"/f{i}.rs\"));\n}}\n\nmod d{i} {{\n{}}}\n\n",
            f.display(),
            s.rust_dispatch(&format!("crate::f{i}"))
        ));
        arms.push_str(&format!("        {i} => d{i}::roundtrip(ty, bytes),\n"));
    }
    main.push_str(&format!(
        r#"fn roundtrip(
    file: usize,
    ty: &str,
    bytes: &bytes::Bytes,
) -> Option<Result<bytes::Bytes, String>> {{
    match file {{
{arms}        _ => None,
    }}
}}

fn main() {{
    let file: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .expect("usage: xdrgen-diff-rust FILE-INDEX < CASES");
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for line in std::io::stdin().lock().lines() {{
        let line = line.expect("standard input");
        let mut parts = line.split(' ');
        let _kind = parts.next();
        let ty = parts.next().unwrap_or("");
        let hex = parts.next().unwrap_or("").trim();
        let nibble = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
        let raw: Vec<u8> = hex
            .as_bytes()
            .chunks_exact(2)
            .map(|p| nibble(p[0]) << 4 | nibble(p[1]))
            .collect();
        let bytes = bytes::Bytes::from(raw);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| roundtrip(file, ty, &bytes)));
        let text = match r {{
            Ok(Some(Ok(b))) => format!("ok {{}}", b.iter().map(|x| format!("{{x:02x}}")).collect::<String>()),
            Ok(Some(Err(e))) => format!("err {{}}", e.replace('\n', " ")),
            Ok(None) => format!("err unknown type {{ty}}"),
            Err(_) => "panic in the generated decoder or encoder".to_string(),
        }};
        writeln!(out, "{{text}}").expect("standard output");
    }}
}}
"#
    ));
    write_if_changed(&dir.join("src/main.rs"), &main)
}
