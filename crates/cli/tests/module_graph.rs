//! The shape of the code inside each crate: no import circle beyond a type
//! and its parser, and no source file too long to read.
//!
//! For every crate of the workspace (`crates/*`, `examples/*`) and every
//! target root in its `src/` (`lib.rs`, `main.rs`, `bin/*`), this test
//! builds the graph of files: file A has an edge to file B when A's code
//! names an item of B through `crate::`, `super::`, `self::` or a child
//! module (in a `use` or in an expression). Re-exports (`pub use`) are
//! followed to the file that defines the item, so a `mod.rs` that only
//! re-exports makes no edge; code under `#[cfg(test)]` is left out (a
//! test may reach anywhere). A strongly connected component of more than
//! two files fails the test, which prints every circle of every crate.
//!
//! The reading is textual (comments and string literals removed, then a
//! small tokenizer); macros are not expanded, so a path a macro builds is
//! not seen. `docs/architecture.md` ("Inside the crates") states the rules.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// The largest number of files an import circle may hold.
const MAX_CIRCLE: usize = 2;
/// The largest number of lines a file in a crate's `src/` may hold.
const MAX_LINES: usize = 800;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every crate directory of the workspace.
fn crate_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for group in ["crates", "examples"] {
        let Ok(entries) = std::fs::read_dir(root().join(group)) else {
            continue;
        };
        for e in entries.flatten() {
            if e.path().join("Cargo.toml").is_file() && e.path().join("src").is_dir() {
                dirs.push(e.path());
            }
        }
    }
    dirs.sort();
    dirs
}

// ---------------------------------------------------------------------------
// Tokens

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
}

/// Comments, string and character literals removed; what is left split
/// into identifiers, `::` and single punctuation characters.
fn tokenize(src: &str) -> Vec<Tok> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == b'r'
            && matches!(b.get(i + 1), Some(b'"') | Some(b'#'))
            && raw_string_end(b, i).is_some()
        {
            i = raw_string_end(b, i).unwrap_or(b.len());
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == b'\'' {
            // A character literal ('x', '\n', '\u{..}') or a lifetime ('a).
            let next = src
                .get(i + 1..)
                .and_then(|s| s.chars().next())
                .map_or(1, char::len_utf8);
            if b.get(i + 1) == Some(&b'\\') {
                i += 3;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i += 1;
            } else if b.get(i + 1 + next) == Some(&b'\'') {
                i += 2 + next;
            } else {
                i += 1;
            }
        } else if c == b'_' || c.is_ascii_alphabetic() {
            let start = i;
            while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            out.push(Tok::Ident(src[start..i].to_string()));
        } else if c == b':' && b.get(i + 1) == Some(&b':') {
            out.push(Tok::Path);
            i += 2;
        } else if c.is_ascii_whitespace() || c.is_ascii_digit() {
            i += 1;
        } else {
            out.push(Tok::Punct(c as char));
            i += 1;
        }
    }
    out
}

/// The end of a raw string literal starting at `i` (`r"..."`, `r#"..."#`).
fn raw_string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    let mut hashes = 0;
    while b.get(j) == Some(&b'#') {
        hashes += 1;
        j += 1;
    }
    if b.get(j) != Some(&b'"') {
        return None;
    }
    j += 1;
    while j < b.len() {
        if b[j] == b'"'
            && b[j + 1..]
                .iter()
                .take(hashes)
                .filter(|&&h| h == b'#')
                .count()
                == hashes
        {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(b.len())
}

// ---------------------------------------------------------------------------
// One file read

/// A path as written, relative to the module it appears in.
#[derive(Debug, Clone)]
struct Written {
    /// The module (inline modules included) the path appears in.
    module: Vec<String>,
    segments: Vec<String>,
}

#[derive(Debug, Default)]
struct FileRead {
    /// `mod x;` declarations: (the declaring module, the name).
    mods: Vec<(Vec<String>, String)>,
    /// Inline (non-test) modules, as module paths relative to the file.
    inline: Vec<Vec<String>>,
    /// `pub use` items: (module, name it is known by, path as written).
    reexports: Vec<(Vec<String>, String, Written)>,
    /// Every other path that names the crate's own modules.
    uses: Vec<Written>,
}

fn ident(t: Option<&Tok>) -> Option<&str> {
    match t {
        Some(Tok::Ident(s)) => Some(s),
        _ => None,
    }
}

/// The index just past the item starting at `i` (up to its `;` or the
/// `}` matching its first `{`).
fn skip_item(t: &[Tok], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < t.len() {
        match t[i] {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            Tok::Punct(';') if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

/// The index just past the attribute `#[...]` starting at `i`, and whether
/// it makes the item test-only.
fn attribute(t: &[Tok], i: usize) -> (usize, bool) {
    let mut j = i + 1;
    if t.get(j) == Some(&Tok::Punct('!')) {
        j += 1;
    }
    let mut depth = 0usize;
    let start = j;
    while j < t.len() {
        match t[j] {
            Tok::Punct('[') => depth += 1,
            Tok::Punct(']') => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            _ => {}
        }
        j += 1;
    }
    let body = &t[start..j.min(t.len())];
    let words: Vec<&str> = body.iter().filter_map(|x| ident(Some(x))).collect();
    let test_only = words.first() == Some(&"cfg")
        && words.contains(&"test")
        && !words.contains(&"not")
        && !words.contains(&"any");
    (j + 1, test_only)
}

/// Expands a use tree starting at `i` into its paths (a glob ends in `*`);
/// returns the index just past it.
fn use_tree(t: &[Tok], mut i: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut path = prefix.to_vec();
    loop {
        match t.get(i) {
            Some(Tok::Ident(s)) => {
                if s == "as" {
                    // `x as y`: the name is y, the path still x.
                    i += 2;
                    out.push(path);
                    return i;
                }
                path.push(s.clone());
                i += 1;
            }
            Some(Tok::Path) => i += 1,
            Some(Tok::Punct('*')) => {
                path.push("*".into());
                out.push(path);
                return i + 1;
            }
            Some(Tok::Punct('{')) => {
                i += 1;
                loop {
                    match t.get(i) {
                        Some(Tok::Punct('}')) => return i + 1,
                        Some(Tok::Punct(',')) => i += 1,
                        None => return i,
                        _ => i = use_tree(t, i, &path, out),
                    }
                }
            }
            _ => {
                if path.len() > prefix.len() {
                    out.push(path);
                }
                return i;
            }
        }
    }
}

fn read_file(src: &str) -> FileRead {
    let t = tokenize(src);
    let mut read = FileRead::default();
    // Inline modules open: (name, brace depth at which it closes).
    let mut stack: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    let module =
        |stack: &[(String, usize)]| stack.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    while i < t.len() {
        match &t[i] {
            Tok::Punct('#')
                if matches!(t.get(i + 1), Some(Tok::Punct('[')) | Some(Tok::Punct('!'))) =>
            {
                let (next, test_only) = attribute(&t, i);
                i = next;
                if test_only {
                    // Further attributes of the same item, then the item.
                    while t.get(i) == Some(&Tok::Punct('#')) {
                        i = attribute(&t, i).0;
                    }
                    i = skip_item(&t, i);
                }
            }
            Tok::Punct('{') => {
                depth += 1;
                i += 1;
            }
            Tok::Punct('}') => {
                depth = depth.saturating_sub(1);
                if stack.last().is_some_and(|(_, d)| *d == depth) {
                    stack.pop();
                }
                i += 1;
            }
            Tok::Ident(w) if w == "mod" => {
                let Some(name) = ident(t.get(i + 1)).map(str::to_string) else {
                    i += 1;
                    continue;
                };
                match t.get(i + 2) {
                    Some(Tok::Punct(';')) => {
                        read.mods.push((module(&stack), name));
                        i += 3;
                    }
                    Some(Tok::Punct('{')) => {
                        stack.push((name, depth));
                        let mut m = module(&stack);
                        read.inline.push(std::mem::take(&mut m));
                        depth += 1;
                        i += 3;
                    }
                    _ => i += 1,
                }
            }
            Tok::Ident(w) if w == "use" && t.get(i + 1) != Some(&Tok::Punct('<')) => {
                // Visibility before `use`: `pub`, `pub(crate)`, `pub(super)`, `pub(in ..)`.
                let mut k = i;
                while k > 0 && matches!(&t[k - 1], Tok::Punct(')') | Tok::Punct('(')) {
                    k -= 1;
                    while k > 0 && !matches!(&t[k], Tok::Punct('(')) {
                        k -= 1;
                    }
                }
                let public = k > 0 && ident(t.get(k - 1)) == Some("pub");
                let mut paths = Vec::new();
                let mut j = i + 1;
                if t.get(j) == Some(&Tok::Path) {
                    j += 1;
                }
                let end = use_tree(&t, j, &[], &mut paths);
                let m = module(&stack);
                for p in paths {
                    let w = Written {
                        module: m.clone(),
                        segments: p.clone(),
                    };
                    match p.last() {
                        Some(last) if public && last != "*" && last != "self" => {
                            read.reexports.push((m.clone(), last.clone(), w));
                        }
                        _ => read.uses.push(w),
                    }
                }
                i = end.max(i + 1);
            }
            Tok::Ident(first)
                if t.get(i + 1) == Some(&Tok::Path) && (i == 0 || t[i - 1] != Tok::Path) =>
            {
                let mut segs = vec![first.clone()];
                let mut j = i + 1;
                while t.get(j) == Some(&Tok::Path) {
                    match ident(t.get(j + 1)) {
                        Some(s) => segs.push(s.to_string()),
                        None => break,
                    }
                    j += 2;
                }
                read.uses.push(Written {
                    module: module(&stack),
                    segments: segs,
                });
                i = j;
            }
            _ => i += 1,
        }
    }
    read
}

// ---------------------------------------------------------------------------
// One target's module tree

struct Tree {
    /// Every module (inline ones included) and the file that holds it.
    modules: HashMap<Vec<String>, PathBuf>,
    /// `pub use`: (module, name) to the absolute path it stands for.
    reexports: HashMap<(Vec<String>, String), Vec<String>>,
    /// Per file: the paths it writes, made absolute where they name the crate.
    uses: BTreeMap<PathBuf, Vec<Vec<String>>>,
}

fn children_dir(file: &Path) -> PathBuf {
    let dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
    match file.file_name().and_then(|n| n.to_str()) {
        Some("lib.rs") | Some("main.rs") | Some("mod.rs") => dir,
        _ => dir.join(file.file_stem().unwrap_or_default()),
    }
}

/// An absolute module path for `w`, when it names the crate's own code.
fn absolute(tree_modules: &HashMap<Vec<String>, PathBuf>, w: &Written) -> Option<Vec<String>> {
    let mut cur = w.module.clone();
    let mut segs = w.segments.as_slice();
    match segs.first().map(String::as_str) {
        Some("crate") => {
            cur.clear();
            segs = &segs[1..];
        }
        Some("self") => segs = &segs[1..],
        Some("super") => {
            while segs.first().map(String::as_str) == Some("super") {
                cur.pop()?;
                segs = &segs[1..];
            }
        }
        Some(first) => {
            let mut child = cur.clone();
            child.push(first.to_string());
            if !tree_modules.contains_key(&child) {
                return None;
            }
        }
        None => return None,
    }
    cur.extend(segs.iter().cloned());
    Some(cur)
}

impl Tree {
    fn build(root_file: &Path) -> Tree {
        let mut modules = HashMap::new();
        let mut reads = BTreeMap::new();
        let mut todo = vec![(Vec::<String>::new(), root_file.to_path_buf())];
        while let Some((path, file)) = todo.pop() {
            let Ok(src) = std::fs::read_to_string(&file) else {
                continue;
            };
            let read = read_file(&src);
            modules.insert(path.clone(), file.clone());
            for inline in &read.inline {
                let mut m = path.clone();
                m.extend(inline.iter().cloned());
                modules.insert(m, file.clone());
            }
            for (within, name) in &read.mods {
                let mut dir = children_dir(&file);
                for w in within {
                    dir = dir.join(w);
                }
                let candidate = [
                    dir.join(format!("{name}.rs")),
                    dir.join(name).join("mod.rs"),
                ]
                .into_iter()
                .find(|p| p.is_file());
                if let Some(child) = candidate {
                    let mut m = path.clone();
                    m.extend(within.iter().cloned());
                    m.push(name.clone());
                    todo.push((m, child));
                }
            }
            reads.insert(file, (path, read));
        }
        let mut tree = Tree {
            modules,
            reexports: HashMap::new(),
            uses: BTreeMap::new(),
        };
        for (file, (path, read)) in &reads {
            let lift = |w: &Written| Written {
                module: path.iter().chain(&w.module).cloned().collect(),
                segments: w.segments.clone(),
            };
            for (within, name, w) in &read.reexports {
                if let Some(abs) = absolute(&tree.modules, &lift(w)) {
                    let m: Vec<String> = path.iter().chain(within).cloned().collect();
                    tree.reexports.insert((m, name.clone()), abs);
                }
            }
            let abs: Vec<Vec<String>> = read
                .uses
                .iter()
                .filter_map(|w| absolute(&tree.modules, &lift(w)))
                .collect();
            tree.uses.insert(file.clone(), abs);
        }
        tree
    }

    /// The file that defines what `abs` names.
    fn file_of(&self, abs: &[String], hops: usize) -> Option<PathBuf> {
        let mut n = abs.len();
        while !self.modules.contains_key(&abs[..n]) {
            n = n.checked_sub(1)?;
        }
        let module = abs[..n].to_vec();
        if let (Some(name), true) = (abs.get(n), hops < 16) {
            if let Some(target) = self.reexports.get(&(module.clone(), name.clone())) {
                let mut next = target.clone();
                next.extend(abs[n + 1..].iter().cloned());
                if next != abs {
                    return self.file_of(&next, hops + 1);
                }
            }
        }
        self.modules.get(&module).cloned()
    }

    fn edges(&self) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
        let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
        for (file, uses) in &self.uses {
            let out = edges.entry(file.clone()).or_default();
            for abs in uses {
                if let Some(to) = self.file_of(abs, 0) {
                    if &to != file {
                        out.insert(to);
                    }
                }
            }
        }
        edges
    }
}

/// Strongly connected components (Tarjan), largest first.
fn components(edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct State<'a> {
        edges: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: HashMap<&'a PathBuf, usize>,
        low: HashMap<&'a PathBuf, usize>,
        on_stack: BTreeSet<&'a PathBuf>,
        stack: Vec<&'a PathBuf>,
        out: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a PathBuf) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(next) = s.edges.get(v) {
            for w in next {
                if !s.edges.contains_key(w) {
                    continue;
                }
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let l = s.low[v].min(s.low[w]);
                    s.low.insert(v, l);
                } else if s.on_stack.contains(w) {
                    let l = s.low[v].min(s.index[w]);
                    s.low.insert(v, l);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            comp.sort();
            s.out.push(comp);
        }
    }
    let mut s = State {
        edges,
        index: HashMap::new(),
        low: HashMap::new(),
        on_stack: BTreeSet::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    let mut out = s.out;
    out.sort_by_key(|c| std::cmp::Reverse(c.len()));
    out
}

/// The target roots of one crate.
fn target_roots(krate: &Path) -> Vec<PathBuf> {
    let src = krate.join("src");
    let mut roots: Vec<PathBuf> = ["lib.rs", "main.rs"]
        .iter()
        .map(|f| src.join(f))
        .filter(|p| p.is_file())
        .collect();
    if let Ok(entries) = std::fs::read_dir(src.join("bin")) {
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "rs") {
                roots.push(p);
            } else if p.join("main.rs").is_file() {
                roots.push(p.join("main.rs"));
            }
        }
    }
    roots.sort();
    roots
}

fn shown(p: &Path) -> String {
    let r = root().canonicalize().unwrap_or_else(|_| root());
    let p = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    p.strip_prefix(&r).unwrap_or(&p).display().to_string()
}

#[test]
fn no_import_circle_beyond_two_files() {
    let mut failures = Vec::new();
    let mut crates_seen = 0;
    for krate in crate_dirs() {
        for root_file in target_roots(&krate) {
            crates_seen += 1;
            let tree = Tree::build(&root_file);
            let comps = components(&tree.edges());
            for c in comps.iter().filter(|c| c.len() > 1) {
                let names: Vec<String> = c.iter().map(|p| shown(p)).collect();
                let line = format!("{} files: {}", c.len(), names.join(", "));
                println!("{}: {line}", shown(&root_file));
                if c.len() > MAX_CIRCLE {
                    failures.push(format!("{}: {line}", shown(&root_file)));
                }
            }
        }
    }
    assert!(crates_seen > 15, "found only {crates_seen} target roots");
    assert!(
        failures.is_empty(),
        "import circles of more than {MAX_CIRCLE} files (break them: shared types in a low module, \
         a handle apart from its operations):\n{}",
        failures.join("\n")
    );
}

#[test]
fn no_source_file_over_the_line_limit() {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, usize)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let lines = std::fs::read_to_string(&p)
                    .map(|s| s.lines().count())
                    .unwrap_or(0);
                out.push((p, lines));
            }
        }
    }
    let mut files = Vec::new();
    for krate in crate_dirs() {
        walk(&krate.join("src"), &mut files);
    }
    let over: Vec<String> = files
        .iter()
        .filter(|(_, n)| *n > MAX_LINES)
        .map(|(p, n)| format!("{}: {n} lines", shown(p)))
        .collect();
    assert!(
        over.is_empty(),
        "files over {MAX_LINES} lines (split them by what their parts do):\n{}",
        over.join("\n")
    );
}

// ---------------------------------------------------------------------------
// The reader itself, on small trees written here.

#[cfg(test)]
mod reader {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> (tempdir::Dir, Vec<Vec<String>>) {
        let dir = tempdir::Dir::new();
        for (name, text) in files {
            let p = dir.0.join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let t = Tree::build(&dir.0.join("lib.rs"));
        let comps = components(&t.edges())
            .into_iter()
            .map(|c| {
                c.iter()
                    .map(|p| p.strip_prefix(&dir.0).unwrap().display().to_string())
                    .collect()
            })
            .collect();
        (dir, comps)
    }

    mod tempdir {
        pub(super) struct Dir(pub(super) std::path::PathBuf);
        impl Dir {
            pub(super) fn new() -> Dir {
                use std::sync::atomic::{AtomicUsize, Ordering};
                static N: AtomicUsize = AtomicUsize::new(0);
                let p = std::env::temp_dir().join(format!(
                    "module-graph-{}-{}",
                    std::process::id(),
                    N.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::create_dir_all(&p).unwrap();
                Dir(p)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn a_three_file_circle_is_found() {
        let (_d, comps) = tree(&[
            ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
            ("a.rs", "use crate::b::B;\npub struct A;\n"),
            ("b.rs", "pub struct B(crate::c::C);\n"),
            ("c.rs", "pub struct C;\nfn f() { let _ = super::a::A; }\n"),
        ]);
        assert_eq!(comps[0], vec!["a.rs", "b.rs", "c.rs"]);
    }

    #[test]
    fn reexports_are_followed_and_tests_left_out() {
        let (_d, comps) = tree(&[
            ("lib.rs", "mod conn;\npub use conn::Conn;\n"),
            ("conn/mod.rs", "mod ops;\nmod state;\npub use ops::Ops;\npub use state::State;\n"),
            ("conn/ops.rs", "use super::State;\npub struct Ops;\n"),
            (
                "conn/state.rs",
                "pub struct State;\n// use super::Ops; in a comment\nconst S: &str = \"super::Ops\";\n\
                 #[cfg(test)]\nmod tests {\n    use super::super::Ops;\n}\n",
            ),
        ]);
        // ops -> state only: no circle at all.
        assert!(comps.iter().all(|c| c.len() == 1), "{comps:?}");
    }

    #[test]
    fn a_parent_that_uses_its_children_is_a_hub() {
        let (_d, comps) = tree(&[
            ("lib.rs", "mod conn;\n"),
            (
                "conn/mod.rs",
                "mod a;\nmod b;\npub struct Conn;\nfn f() { a::run(); b::run(); }\n",
            ),
            ("conn/a.rs", "use super::Conn;\npub fn run() {}\n"),
            ("conn/b.rs", "pub fn run(_: &super::Conn) {}\n"),
        ]);
        assert_eq!(comps[0], vec!["conn/a.rs", "conn/b.rs", "conn/mod.rs"]);
    }

    #[test]
    fn grouped_uses_and_lifetimes_are_read() {
        let (_d, comps) = tree(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a.rs", "use crate::{b::{B, self}};\npub struct A<'a>(&'a str, char);\nconst C: char = '{';\n"),
            ("b.rs", "pub struct B;\nfn g() -> crate::a::A<'static> { todo!() }\n"),
        ]);
        assert_eq!(comps[0], vec!["a.rs", "b.rs"]);
    }
}
