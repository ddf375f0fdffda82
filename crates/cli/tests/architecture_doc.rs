//! `docs/architecture.md` names every crate and its internal dependencies
//! in a table; this test holds the table to the `Cargo.toml` files, so a
//! new crate or dependency cannot leave the design notes behind.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Deps = BTreeSet<String>;

/// Normal, build and dev-only internal dependencies of one crate.
#[derive(Debug, PartialEq, Eq)]
struct Edges {
    normal: Deps,
    build: Deps,
    tests_only: Deps,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The internal (`rpcrdma-*`) dependencies a manifest declares, by section.
fn manifest_edges(text: &str) -> (String, Edges) {
    let mut name = String::new();
    let mut section = String::new();
    let (mut normal, mut build, mut dev) = (Deps::new(), Deps::new(), Deps::new());
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.trim_matches(|c| c == '[' || c == ']').to_string();
            continue;
        }
        if section == "package" {
            if let Some(v) = line.strip_prefix("name = ") {
                name = v.trim_matches('"').to_string();
            }
            continue;
        }
        let Some(dep) = line
            .split(|c: char| c == '.' || c == '=' || c.is_whitespace())
            .next()
            .filter(|d| d.starts_with("rpcrdma-"))
        else {
            continue;
        };
        match section.as_str() {
            "dependencies" => normal.insert(dep.to_string()),
            "build-dependencies" => build.insert(dep.to_string()),
            "dev-dependencies" => dev.insert(dep.to_string()),
            _ => false,
        };
    }
    let tests_only = dev
        .into_iter()
        .filter(|d| *d != name && !normal.contains(d))
        .collect();
    (
        name,
        Edges {
            normal,
            build,
            tests_only,
        },
    )
}

fn cell(s: &str) -> Deps {
    s.split(',')
        .map(|d| d.trim().trim_matches('`').to_string())
        .filter(|d| !d.is_empty() && d != "—")
        .collect()
}

/// The rows between the table markers of docs/architecture.md.
fn documented() -> BTreeMap<String, Edges> {
    let path = root().join("docs/architecture.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let begin = text
        .find("<!-- architecture-table: begin -->")
        .expect("the table's begin marker");
    let end = text
        .find("<!-- architecture-table: end -->")
        .expect("the table's end marker");
    text[begin..end]
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cols: Vec<&str> = l.trim_matches('|').split('|').collect();
            assert_eq!(cols.len(), 4, "a row of four columns: {l}");
            let name = cols[0].trim().trim_matches('`').to_string();
            let edges = Edges {
                normal: cell(cols[1]),
                build: cell(cols[2]),
                tests_only: cell(cols[3]),
            };
            (name, edges)
        })
        .collect()
}

#[test]
fn the_dependency_table_matches_the_manifests() {
    let mut declared = BTreeMap::new();
    for entry in std::fs::read_dir(root().join("crates")).expect("crates/") {
        let manifest = entry.expect("crates/ entry").path().join("Cargo.toml");
        if let Ok(text) = std::fs::read_to_string(&manifest) {
            let (name, edges) = manifest_edges(&text);
            declared.insert(name, edges);
        }
    }
    assert!(declared.len() >= 14, "{} crates found", declared.len());
    let doc = documented();
    let missing: Vec<_> = declared.keys().filter(|k| !doc.contains_key(*k)).collect();
    let stale: Vec<_> = doc.keys().filter(|k| !declared.contains_key(*k)).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "docs/architecture.md: add rows for {missing:?}, remove rows for {stale:?}"
    );
    for (name, edges) in &declared {
        assert_eq!(
            &doc[name], edges,
            "docs/architecture.md: the row of {name} disagrees with crates/*/Cargo.toml \
             (left: the document, right: the manifest); update the table and the graph above it"
        );
    }
}

#[test]
fn every_file_the_mechanism_table_names_exists() {
    let path = root().join("docs/architecture.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let table = &text[text
        .find("## Where each mechanism lives")
        .expect("the mechanism table")..];
    let rows: String = table
        .lines()
        .take_while(|l| l.is_empty() || l.starts_with('|') || l.starts_with('#'))
        .filter(|l| l.starts_with('|'))
        .collect();
    let mut named = 0;
    for (i, piece) in rows.split('`').enumerate() {
        // Odd pieces are inside backticks; paths are relative to crates/.
        if i % 2 == 1 && piece.contains('/') && !piece.contains(' ') {
            let file = root().join("crates").join(piece);
            assert!(
                file.exists(),
                "docs/architecture.md names crates/{piece}, which does not exist"
            );
            named += 1;
        }
    }
    assert!(
        named >= 30,
        "only {named} paths found in the mechanism table"
    );
}

#[test]
fn the_manifest_reader_sees_every_section() {
    let (name, e) = manifest_edges(
        "[package]\nname = \"rpcrdma-x\"\n\n[dependencies]\nbytes.workspace = true\n\
         rpcrdma-xdr.workspace = true\nrpcrdma-wire = { path = \"../wire\" }\n\n\
         [build-dependencies]\nrpcrdma-xdrgen.workspace = true\n\n[dev-dependencies]\n\
         rpcrdma-x = { path = \".\", features = [\"testing\"] }\nrpcrdma-xdr.workspace = true\n\
         rpcrdma-testkit.workspace = true\n\n[lints]\nworkspace = true\n",
    );
    assert_eq!(name, "rpcrdma-x");
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Deps>();
    assert_eq!(
        e,
        Edges {
            normal: set(&["rpcrdma-wire", "rpcrdma-xdr"]),
            build: set(&["rpcrdma-xdrgen"]),
            tests_only: set(&["rpcrdma-testkit"]),
        }
    );
}
