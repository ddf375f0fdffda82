//! Distinct Rust names: types, typedef codec functions, constants,
//! program and version constants and version modules that meet in Rust
//! are numbered after the first.

use std::collections::HashSet;

use super::Checker;
use crate::model::Kind;
use crate::names::{bare, distinct, numbered, snake};

impl Checker<'_, '_> {
    /// Gives every type, typedef codec function and constant a distinct
    /// Rust name (the RPC language is case-sensitive: `point` and `POINT`
    /// both become `Point`, so the later one is numbered, `Point2`).
    pub(super) fn check_rust_names(&mut self) {
        let natural: Vec<String> = self.model.types.iter().map(|t| t.rust.clone()).collect();
        for (t, r) in self.model.types.iter_mut().zip(distinct(&natural, "", &[])) {
            t.rust = r;
        }
        // A typedef's codec functions: encode_B, decode_B, check_B,
        // B_to_xdr, B_from_xdr, for a base B distinct from every other's.
        let mut fns: HashSet<String> = HashSet::new();
        for t in &mut self.model.types {
            if !matches!(t.kind, Kind::Alias(_)) {
                continue;
            }
            let natural = bare(&snake(&t.xdr)).to_string();
            let base = std::iter::once(natural.clone())
                .chain((2..).map(|k| bare(&numbered(&natural, "_", k)).to_string()))
                .find(|b| typedef_fns(b).iter().all(|f| !fns.contains(f)))
                .unwrap_or_default();
            fns.extend(typedef_fns(&base));
            t.fn_base = base;
        }
        let natural: Vec<String> = self.model.consts.iter().map(|c| c.rust.clone()).collect();
        for (c, r) in self
            .model
            .consts
            .iter_mut()
            .zip(distinct(&natural, "_", &[]))
        {
            c.rust = r;
        }
    }

    /// Program and version constants share the namespace of `const`s, and
    /// version modules one namespace: names that meet are numbered.
    pub(super) fn check_program_names(&mut self) {
        let consts: Vec<&str> = self.model.consts.iter().map(|c| c.rust.as_str()).collect();
        let natural: Vec<String> = self
            .model
            .programs
            .iter()
            .flat_map(|p| {
                std::iter::once(p.rust_const.clone())
                    .chain(p.versions.iter().map(|v| v.rust_const.clone()))
            })
            .collect();
        let mut names = distinct(&natural, "_", &consts).into_iter();
        for p in &mut self.model.programs {
            p.rust_const = names.next().unwrap_or_default();
            for v in &mut p.versions {
                v.rust_const = names.next().unwrap_or_default();
            }
        }
        let natural: Vec<String> = self
            .model
            .programs
            .iter()
            .flat_map(|p| p.versions.iter().map(|v| v.module.clone()))
            .collect();
        let mut names = distinct(&natural, "_", &[]).into_iter();
        for v in self.model.programs.iter_mut().flat_map(|p| &mut p.versions) {
            v.module = names.next().unwrap_or_default();
        }
    }
}

/// The codec functions of a typedef whose base name is `base`.
fn typedef_fns(base: &str) -> [String; 5] {
    [
        format!("encode_{base}"),
        format!("decode_{base}"),
        format!("check_{base}"),
        format!("{base}_to_xdr"),
        format!("{base}_from_xdr"),
    ]
}
