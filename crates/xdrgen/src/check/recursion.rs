//! The type graph: a type that contains itself directly is refused;
//! linked-list nodes are found (their chains are walked without
//! recursion), the types that still recurse are marked for the depth
//! limit, and every type gets its smallest encoding (so no array of
//! zero-size elements can make a decoder spin).

use std::collections::{HashMap, HashSet};

use super::Checker;
use crate::model::*;

impl Checker<'_, '_> {
    /// Edges of the type graph: (target, through a pointer or variable array?).
    fn edges(&self, id: TypeId) -> Vec<(TypeId, bool)> {
        fn walk(ty: &Ty, indirect: bool, out: &mut Vec<(TypeId, bool)>) {
            match ty {
                Ty::Named(t) => out.push((*t, indirect)),
                Ty::Array(t, _) => walk(t, indirect, out),
                Ty::VarArray(t, _) | Ty::Optional(t) => walk(t, true, out),
                _ => {}
            }
        }
        let mut out = Vec::new();
        match &self.model.types[id].kind {
            Kind::Struct(fs) => fs.iter().for_each(|f| walk(&f.ty, false, &mut out)),
            Kind::Alias(f) => walk(&f.ty, false, &mut out),
            Kind::Union(u) => {
                walk(&u.discr, false, &mut out);
                for f in u
                    .arms
                    .iter()
                    .filter_map(|a| a.field.as_ref())
                    .chain(u.default.iter().flatten())
                {
                    walk(&f.ty, false, &mut out);
                }
            }
            Kind::Enum(_) => {}
        }
        out
    }

    /// Whether `from` reaches `to`, optionally only through direct edges,
    /// skipping list-link edges of `skip`.
    fn reaches(&self, from: TypeId, to: TypeId, direct_only: bool) -> bool {
        let mut stack = vec![from];
        let mut seen = HashSet::new();
        while let Some(n) = stack.pop() {
            for (m, indirect) in self.edges(n) {
                if direct_only && indirect {
                    continue;
                }
                if m == to {
                    return true;
                }
                if seen.insert(m) {
                    stack.push(m);
                }
            }
        }
        false
    }

    pub(super) fn analyse_recursion(&mut self) {
        let n = self.model.types.len();
        for id in 0..n {
            if self.reaches(id, id, true) {
                let t = &self.model.types[id];
                let (p, x) = (t.pos, t.xdr.clone());
                self.err(p, format!("`{x}` contains itself directly, so it would be infinitely large: make the recursive member optional (`{x} *next`) or a variable-length array"));
            }
        }
        if !self.rep.diags.is_empty() {
            return;
        }
        // List nodes: struct S { ...; S *next; } (also through a typedef of
        // `S *`). The chain of links is walked without recursion; members
        // that lead back to S otherwise (a first-child / next-sibling tree's
        // `kids`) make S recursive as well, and nest with a depth limit.
        for id in 0..n {
            let Kind::Struct(fs) = &self.model.types[id].kind else {
                continue;
            };
            let Some(last) = fs.last() else { continue };
            let (r, _) = self.model.resolve(&last.ty);
            let is_link = matches!(r, Ty::Optional(inner) if matches!(self.model.resolve(inner).0, Ty::Named(t) if *t == id));
            if is_link {
                self.model.types[id].list_node = true;
            }
        }
        for id in 0..n {
            if self.reaches_avoiding_lists(id, id) {
                self.model.types[id].recursive = true;
            }
        }
        let mut memo = HashMap::new();
        for id in 0..n {
            let m = self.min_size(&Ty::Named(id), &mut memo);
            self.model.types[id].min_size = m;
        }
        // Arrays of zero-size elements could make a decoder spin.
        let mut errs = Vec::new();
        for t in &self.model.types {
            for f in t.kind.fields() {
                if let Ty::VarArray(e, _) | Ty::Array(e, _) = &f.ty {
                    if self.min_size(e, &mut memo) == 0 {
                        errs.push((f.pos, format!("`{}` is an array of zero-size elements (e.g. `opaque[0]`), which XDR cannot delimit", f.xdr)));
                    }
                }
            }
        }
        for (p, m) in errs {
            self.err(p, m);
        }
    }

    /// Whether `from` reaches `to` without passing a list node's link.
    fn reaches_avoiding_lists(&self, from: TypeId, to: TypeId) -> bool {
        let mut stack = vec![from];
        let mut seen = HashSet::new();
        while let Some(n) = stack.pop() {
            let edges = self.edges(n);
            // A list node's link is its last member, hence its last edge.
            let skip_last = self.model.types[n].list_node;
            let count = edges.len();
            for (i, (m, _)) in edges.into_iter().enumerate() {
                if skip_last && i + 1 == count {
                    continue;
                }
                if m == to {
                    return true;
                }
                if seen.insert(m) {
                    stack.push(m);
                }
            }
        }
        false
    }

    /// Smallest encoding of a type (memoised: typedef chains may be long).
    fn min_size(&self, ty: &Ty, memo: &mut HashMap<TypeId, u64>) -> u64 {
        match ty {
            Ty::I32 | Ty::U32 | Ty::F32 | Ty::Bool => 4,
            Ty::I64 | Ty::U64 | Ty::F64 => 8,
            Ty::OpaqueFixed(n) => u64::from(*n).div_ceil(4) * 4,
            Ty::OpaqueVar(_) | Ty::Str(_) | Ty::VarArray(..) | Ty::Optional(_) => 4,
            Ty::Array(t, n) => self.min_size(t, memo).saturating_mul(u64::from(*n)),
            Ty::Named(id) => {
                if let Some(m) = memo.get(id) {
                    return *m;
                }
                // Cycles only pass through pointers and variable arrays,
                // which stop the walk; 0 guards against anything else.
                memo.insert(*id, 0);
                let r = match &self.model.types[*id].kind {
                    Kind::Enum(_) => 4,
                    Kind::Alias(f) => self.min_size(&f.ty, memo),
                    Kind::Struct(fs) => fs
                        .iter()
                        .map(|f| self.min_size(&f.ty, memo))
                        .fold(0u64, u64::saturating_add),
                    Kind::Union(u) => {
                        let arms: Vec<Option<&Field>> = u
                            .arms
                            .iter()
                            .map(|a| a.field.as_ref())
                            .chain(u.default.as_ref().map(|d| d.as_ref()))
                            .collect();
                        4 + arms
                            .into_iter()
                            .map(|f| f.map_or(0, |f| self.min_size(&f.ty, memo)))
                            .min()
                            .unwrap_or(0)
                    }
                };
                memo.insert(*id, r);
                r
            }
        }
    }
}
