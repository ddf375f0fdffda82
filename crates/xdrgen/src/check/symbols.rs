//! The constant namespace: `const`s and enum items share it, their
//! values are evaluated on demand, a definition in terms of itself is
//! refused.

use super::Checker;
use crate::ast::*;

/// A name in the constant namespace.
#[derive(Debug, Clone)]
pub(super) enum Sym {
    Const(Value),
    EnumItem(Value),
}

fn enum_bodies<'s>(ty: &'s DeclType, out: &mut Vec<&'s EnumBody>) {
    if let DeclType::Spec(ts) = ty {
        spec_enum_bodies(ts, out);
    }
}

fn spec_enum_bodies<'s>(ts: &'s TypeSpec, out: &mut Vec<&'s EnumBody>) {
    match ts {
        TypeSpec::Enum(b) => out.push(b),
        TypeSpec::Struct(b) => b.fields.iter().for_each(|f| enum_bodies(&f.ty, out)),
        TypeSpec::Union(u) => union_enum_bodies(u, out),
        _ => {}
    }
}

fn union_enum_bodies<'s>(u: &'s UnionBody, out: &mut Vec<&'s EnumBody>) {
    enum_bodies(&u.discr.ty, out);
    for arm in u
        .arms
        .iter()
        .map(|a| &a.1)
        .chain(u.default.iter().map(|d| &d.1))
    {
        if let Arm::Decl(d) = arm {
            enum_bodies(&d.ty, out);
        }
    }
}

impl Checker<'_, '_> {
    fn add_sym(&mut self, name: &Ident, sym: Sym) {
        if let Some((_, prev)) = self.syms.get(&name.name) {
            let prev = *prev;
            self.err(
                name.pos,
                format!(
                    "`{}` is already defined at line {}:{} (constants and enum items share one namespace)",
                    name.name, prev.line, prev.col
                ),
            );
            return;
        }
        if name.name == "TRUE" || name.name == "FALSE" {
            self.err(
                name.pos,
                format!("`{}` is predefined (the bool values)", name.name),
            );
            return;
        }
        self.syms.insert(name.name.clone(), (sym, name.pos));
    }

    pub(super) fn collect_symbols(&mut self, spec: &Spec) {
        for def in &spec.defs {
            let mut bodies = Vec::new();
            match def {
                Def::Const { name, value, .. } => self.add_sym(name, Sym::Const(value.clone())),
                Def::Enum { body, .. } => bodies.push(body),
                Def::Typedef(d) => enum_bodies(&d.ty, &mut bodies),
                Def::Struct { body, .. } => body
                    .fields
                    .iter()
                    .for_each(|f| enum_bodies(&f.ty, &mut bodies)),
                Def::Union { body, .. } => union_enum_bodies(body, &mut bodies),
                Def::Program(_) => {}
            }
            for b in bodies {
                for (name, value, _) in &b.items {
                    self.add_sym(name, Sym::EnumItem(value.clone()));
                }
            }
        }
    }

    /// The value of a constant or enum item, evaluating on demand.
    pub(super) fn eval_name(&mut self, name: &Ident) -> Option<i128> {
        match name.name.as_str() {
            "TRUE" => return Some(1),
            "FALSE" => return Some(0),
            _ => {}
        }
        if let Some(v) = self.values.get(&name.name).copied() {
            if v.is_none() {
                self.err(
                    name.pos,
                    format!("constant `{}` is defined in terms of itself", name.name),
                );
            }
            return v;
        }
        let Some((sym, _)) = self.syms.get(&name.name).cloned() else {
            self.err(
                name.pos,
                format!("unknown constant `{}`: expected a number or the name of a `const` or enum item", name.name),
            );
            return None;
        };
        self.values.insert(name.name.clone(), None);
        let v = match &sym {
            Sym::Const(v) | Sym::EnumItem(v) => self.eval(v),
        };
        if let Some(v) = v {
            self.values.insert(name.name.clone(), Some(v));
        }
        v
    }

    pub(super) fn eval(&mut self, v: &Value) -> Option<i128> {
        match v {
            Value::Num(n, _) => Some(*n),
            Value::Name(id) => self.eval_name(id),
            Value::Next { prev, .. } => self.eval_name(prev).map(|v| v + 1),
        }
    }

    /// A size or count: 0..=u32::MAX.
    pub(super) fn eval_size(&mut self, v: &Value, what: &str) -> Option<u32> {
        let n = self.eval(v)?;
        match u32::try_from(n) {
            Ok(n) => Some(n),
            Err(_) => {
                self.err(
                    v.pos(),
                    format!("{what} must be between 0 and 4294967295, not {n}"),
                );
                None
            }
        }
    }
}
