//! Lowering a program: unique program, version and procedure numbers,
//! procedure arguments and results, and the Rust names of the stubs
//! (methods without the prefix the procedures share, constants,
//! wrappers); each procedure's Upper-Layer Binding comes from
//! `crate::ulb`.

use std::collections::HashSet;

use super::Checker;
use crate::ast::*;
use crate::model::*;
use crate::names::{bare, camel, distinct, numbered, screaming, snake, with_hints};

impl Checker<'_, '_> {
    pub(super) fn lower_program(&mut self, p: &Program) {
        let Some(number) = self.eval_size(&p.number, "a program number") else {
            return;
        };
        if self.model.programs.iter().any(|q| q.number == number) {
            self.err(
                p.number.pos(),
                format!("program number {number} is used twice"),
            );
        }
        let mut versions: Vec<VersionIr> = Vec::new();
        for v in &p.versions {
            let Some(vn) = self.eval_size(&v.number, "a version number") else {
                continue;
            };
            if versions.iter().any(|w| w.number == vn) {
                self.err(
                    v.number.pos(),
                    format!(
                        "version number {vn} is used twice in program `{}`",
                        p.name.name
                    ),
                );
            }
            let mut procs: Vec<ProcIr> = Vec::new();
            for pr in &v.procs {
                let Some(pn) = self.eval_size(&pr.number, "a procedure number") else {
                    continue;
                };
                if let Some(q) = procs.iter().find(|q| q.number == pn) {
                    let msg = format!("procedure number {pn} is already used by `{}`", q.xdr);
                    self.err(pr.number.pos(), msg);
                    continue;
                }
                let scope = format!("{}.{}", v.name.name, pr.name.name);
                let result = pr
                    .result
                    .as_ref()
                    .map(|t| self.lower_spec(t, &scope, &scope, "result"));
                let args: Vec<Ty> = pr
                    .args
                    .iter()
                    .map(|t| self.lower_spec(t, &scope, &scope, "args"))
                    .collect();
                procs.push(ProcIr {
                    xdr: pr.name.name.clone(),
                    method: String::new(),
                    rust_const: String::new(),
                    wrapper: String::new(),
                    number: pn,
                    result,
                    args,
                    arg_names: pr
                        .arg_names
                        .iter()
                        .map(|n| n.as_ref().map(|n| n.name.clone()))
                        .collect(),
                    ddp_results: Vec::new(),
                    max_results: None,
                    reduced_results: None,
                    doc: pr.doc.clone(),
                });
            }
            // Method names: the procedure names without their common prefix.
            let names: Vec<&str> = procs.iter().map(|p| p.xdr.as_str()).collect();
            let prefix = common_prefix(&names);
            // Client methods are NAME and NAME_with_hints, next to `new`,
            // `with_ulb` and `rpc`; procedures whose names meet (`P_get`,
            // `P_GET`) are numbered.
            let mut taken: HashSet<String> = ["new", "with_ulb", "rpc"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            for pr in procs.iter_mut() {
                let mut m = snake(&pr.xdr[prefix..]);
                if matches!(bare(&m), "new" | "rpc" | "with_ulb" | "client") {
                    m = snake(&pr.xdr);
                }
                let free = |m: &str| !taken.contains(bare(m)) && !taken.contains(&with_hints(m));
                if !free(&m) {
                    m = (2..)
                        .map(|k| numbered(&m, "_", k))
                        .find(|c| free(c))
                        .unwrap_or_default();
                }
                taken.insert(bare(&m).to_string());
                taken.insert(with_hints(&m));
                pr.method = m;
            }
            let natural: Vec<String> = procs.iter().map(|p| screaming(&p.xdr)).collect();
            for (pr, c) in procs
                .iter_mut()
                .zip(distinct(&natural, "_", &["PROGRAM", "VERSION"]))
            {
                pr.rust_const = c;
            }
            let natural: Vec<String> = procs
                .iter()
                .map(|p| bare(&camel(bare(&p.method))).to_string())
                .collect();
            for (pr, w) in procs.iter_mut().zip(distinct(&natural, "", &[])) {
                pr.wrapper = w;
            }
            for (pr, ast) in procs.iter_mut().zip(&v.procs) {
                crate::ulb::proc_hints(&self.model, pr, &ast.pragmas, self.rep);
            }
            versions.push(VersionIr {
                xdr: v.name.name.clone(),
                module: snake(&v.name.name),
                rust_const: screaming(&v.name.name),
                number: vn,
                procs,
                doc: v.doc.clone(),
            });
        }
        self.model.programs.push(ProgramIr {
            xdr: p.name.name.clone(),
            rust_const: screaming(&p.name.name),
            number,
            versions,
            doc: p.doc.clone(),
        });
    }
}

/// Length of the longest prefix ending in `_` shared by all names, if
/// every name keeps a non-empty rest; 0 for a single name.
fn common_prefix(names: &[&str]) -> usize {
    if names.len() < 2 {
        return 0;
    }
    let first = names[0];
    let mut best = 0;
    for (i, c) in first.char_indices() {
        if c != '_' {
            continue;
        }
        let p = &first[..=i];
        if names.iter().all(|n| {
            n.starts_with(p)
                && n.len() > p.len()
                && !n[p.len()..].starts_with(|c: char| c.is_ascii_digit())
        }) {
            best = i + 1;
        }
    }
    best
}
