//! Union case values, resolved once every type is known: each fits the
//! discriminant's type (an item of its enum), is used once, and names
//! its Rust variant.

use std::collections::HashMap;

use super::Checker;
use crate::ast::*;
use crate::model::*;
use crate::names::{camel, distinct};

impl Checker<'_, '_> {
    pub(super) fn resolve_cases(&mut self) {
        let pending = std::mem::take(&mut self.pending_cases);
        for (id, raw, dpos) in pending {
            let Kind::Union(mut u) = self.model.types[id].kind.clone() else {
                continue;
            };
            let (discr, _) = self.model.resolve(&u.discr);
            let discr = discr.clone();
            let enum_id = match &discr {
                Ty::I32 | Ty::U32 | Ty::Bool => None,
                Ty::Named(e) if matches!(self.model.types[*e].kind, Kind::Enum(_)) => Some(*e),
                other => {
                    let what = match other {
                        Ty::I64 | Ty::U64 => "a `hyper`, which rpcgen's C would switch on but RFC 4506 does not allow (a 64-bit discriminant is not XDR)",
                        Ty::F32 | Ty::F64 => "a floating-point type",
                        Ty::Named(_) => "a struct, union or typedef of one",
                        _ => "an opaque, string, array or optional type",
                    };
                    let msg = format!("union `{}`: the discriminant is {what}; it must be int, unsigned int, bool or an enum (RFC 4506 §4.15)", self.model.types[id].xdr);
                    self.err(dpos, msg);
                    continue;
                }
            };
            u.discr = match enum_id {
                Some(e) => Ty::Named(e),
                None => discr.clone(),
            };
            let mut seen: HashMap<i64, String> = HashMap::new();
            for (arm, values) in u.arms.iter_mut().zip(raw) {
                for v in values {
                    let Some(n) = self.eval(&v) else { continue };
                    // A word from 0x80000000 up compares, in rpcgen's C,
                    // as the negative int it is on the wire (as enum
                    // values written so do).
                    let n = match (&discr, super::lower::enum_word(n)) {
                        (Ty::I32 | Ty::Named(_), Some((w, _))) => i128::from(w),
                        _ => n,
                    };
                    let label = match &v {
                        Value::Num(n, _) => n.to_string(),
                        Value::Name(i) | Value::Next { prev: i, .. } => i.name.clone(),
                    };
                    let ok = match &discr {
                        Ty::I32 => i32::try_from(n).is_ok(),
                        Ty::U32 => u32::try_from(n).is_ok(),
                        Ty::Bool => n == 0 || n == 1,
                        _ => true,
                    };
                    if !ok {
                        self.err(
                            v.pos(),
                            format!(
                                "case value {label} = {n} does not fit the discriminant's type"
                            ),
                        );
                        continue;
                    }
                    if let Some(e) = enum_id {
                        let Kind::Enum(items) = &self.model.types[e].kind else {
                            continue;
                        };
                        if !items.iter().any(|it| i128::from(it.value) == n) {
                            let en = self.model.types[e].xdr.clone();
                            self.err(
                                v.pos(),
                                format!("case value {label} = {n} is not an item of enum `{en}`: a discriminant of that type is always one of its items (RFC 4506 §4.3), so the arm could never be taken; name an item, or a constant of an item's value"),
                            );
                            continue;
                        }
                    }
                    let n = n as i64;
                    if let Some(prev) = seen.get(&n) {
                        self.err(
                            v.pos(),
                            format!("case value {label} = {n} is already used by `case {prev}`"),
                        );
                        continue;
                    }
                    seen.insert(n, label.clone());
                    let variant = match (&v, &discr, enum_id) {
                        (_, _, Some(e)) => {
                            let Kind::Enum(items) = &self.model.types[e].kind else {
                                continue;
                            };
                            // The item the label names (an alias too), else
                            // the first item of the value (`case CONST:`).
                            let named = match &v {
                                Value::Name(i) => items.iter().find(|it| it.xdr == i.name),
                                _ => None,
                            };
                            named
                                .or_else(|| items.iter().find(|it| i64::from(it.value) == n))
                                .map(|it| it.rust.clone())
                                .unwrap_or_default()
                        }
                        (_, Ty::Bool, _) => {
                            if n == 1 {
                                "True".into()
                            } else {
                                "False".into()
                            }
                        }
                        (Value::Name(i) | Value::Next { prev: i, .. }, _, _) => camel(&i.name),
                        (Value::Num(..), _, _) if n < 0 => format!("CaseMinus{}", -(n as i128)),
                        (Value::Num(..), _, _) => format!("Case{n}"),
                    };
                    arm.cases.push(Case {
                        value: n,
                        label,
                        variant,
                    });
                }
            }
            // `case a:` and `case A:` both become `A`.
            let mut natural: Vec<String> = u
                .arms
                .iter()
                .flat_map(|a| a.cases.iter().map(|c| c.variant.clone()))
                .collect();
            let dv = if natural.iter().any(|v| v == "Default") {
                "DefaultArm"
            } else {
                "Default"
            };
            natural.push(dv.to_string());
            let mut names = distinct(&natural, "", &[]).into_iter();
            for c in u.arms.iter_mut().flat_map(|a| a.cases.iter_mut()) {
                c.variant = names.next().unwrap_or_default();
            }
            u.default_variant = names.next().unwrap_or_default();
            self.model.types[id].kind = Kind::Union(u);
        }
    }
}
