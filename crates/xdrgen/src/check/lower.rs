//! Lowering the type definitions into the [`Model`]: one [`TypeItem`]
//! per typedef, enum, struct and union (and per one defined inside
//! another), each declaration with its resolved type, sizes and `@ddp`
//! mark, and the rules of one definition (duplicate members, enum
//! values, sizes in range, what `@ddp` may mark).

use std::collections::BTreeMap;

use super::Checker;
use crate::ast::*;
use crate::error::Pos;
use crate::model::*;
use crate::names::{bare, camel, distinct, screaming, snake};

impl Checker<'_, '_> {
    fn new_type(&mut self, xdr: String, rust: String, pos: Pos, doc: Vec<String>) -> TypeId {
        self.model.types.push(TypeItem {
            xdr,
            rust,
            kind: Kind::Struct(Vec::new()),
            doc,
            pos,
            list_node: false,
            recursive: false,
            min_size: 0,
            fn_base: String::new(),
        });
        self.model.types.len() - 1
    }

    pub(super) fn collect_types(&mut self, spec: &Spec) {
        for def in &spec.defs {
            let (name, doc) = match def {
                Def::Typedef(d) => (&d.name, &d.doc),
                Def::Enum { name, doc, .. }
                | Def::Struct { name, doc, .. }
                | Def::Union { name, doc, .. } => (name, doc),
                _ => continue,
            };
            if let Some(&prev) = self.type_ids.get(&name.name) {
                let p = self.model.types[prev].pos;
                self.err(
                    name.pos,
                    format!(
                        "type `{}` is already defined at line {}:{}",
                        name.name, p.line, p.col
                    ),
                );
                continue;
            }
            let id = self.new_type(name.name.clone(), camel(&name.name), name.pos, doc.clone());
            self.type_ids.insert(name.name.clone(), id);
        }
        for def in &spec.defs {
            if let Def::Const { name, value, doc } = def {
                if let Some(v) = self.eval(value) {
                    self.model.consts.push(ConstItem {
                        xdr: name.name.clone(),
                        rust: screaming(&name.name),
                        value: v,
                        doc: doc.clone(),
                    });
                }
            }
        }
    }

    pub(super) fn lower_def(&mut self, def: &Def) {
        let (name, kind) = match def {
            Def::Typedef(d) => {
                let id = self.type_ids[&d.name.name];
                let rust = self.model.types[id].rust.clone();
                // `typedef struct { ... } name;` names the struct itself.
                if matches!(d.shape, Shape::Plain) {
                    if let DeclType::Spec(
                        ts @ (TypeSpec::Struct(_) | TypeSpec::Union(_) | TypeSpec::Enum(_)),
                    ) = &d.ty
                    {
                        if d.pragmas.is_empty() {
                            let kind = self.lower_body(ts, &d.name.name, &rust, id);
                            self.model.types[id].kind = kind;
                            return;
                        }
                    }
                }
                let f = self.lower_decl(d, &d.name.name, &rust);
                (&d.name, Kind::Alias(f))
            }
            Def::Enum { name, body, .. } => {
                let id = self.type_ids[&name.name];
                let k = self.lower_enum(body, id);
                (name, k)
            }
            Def::Struct { name, body, .. } => {
                let id = self.type_ids[&name.name];
                let rust = self.model.types[id].rust.clone();
                let k = self.lower_struct(body, &name.name, &rust);
                (name, k)
            }
            Def::Union { name, body, .. } => {
                let id = self.type_ids[&name.name];
                let rust = self.model.types[id].rust.clone();
                let k = self.lower_union(body, &name.name, &rust, id);
                (name, k)
            }
            _ => return,
        };
        let id = self.type_ids[&name.name];
        self.model.types[id].kind = kind;
    }

    fn lower_body(&mut self, ts: &TypeSpec, xdr: &str, rust: &str, id: TypeId) -> Kind {
        match ts {
            TypeSpec::Struct(b) => self.lower_struct(b, xdr, rust),
            TypeSpec::Union(b) => self.lower_union(b, xdr, rust, id),
            TypeSpec::Enum(b) => self.lower_enum(b, id),
            _ => unreachable!("lower_body is called for struct, union and enum bodies"),
        }
    }

    fn lower_enum(&mut self, body: &EnumBody, id: TypeId) -> Kind {
        let mut items: Vec<EnumItem> = Vec::new();
        let mut seen: BTreeMap<i32, usize> = BTreeMap::new();
        let mut first_word = None;
        for (name, value, doc) in &body.items {
            let Some(v) = self.eval(value) else { continue };
            let Some((v, written)) = enum_word(v) else {
                self.err(
                    value.pos(),
                    format!(
                        "enum item `{}` = {v} is not a 32-bit value: an enum is encoded as a signed int (RFC 4506 §4.3), from -2147483648 to 2147483647 (or a word from 0x80000000 to 0xFFFFFFFF, which rpcgen's C sends as that negative int)",
                        name.name
                    ),
                );
                continue;
            };
            // Two names for one value are allowed (RFC 4506 §4.3 asks only
            // that the names be distinct, and rpcgen's C enum takes them):
            // the later one is an alias of the first.
            let alias_of = seen.get(&v).copied();
            if alias_of.is_none() {
                seen.insert(v, items.len());
            }
            self.item_enum.insert(name.name.clone(), id);
            if written.is_some() && first_word.is_none() {
                first_word = Some((items.len(), value.pos()));
            }
            items.push(EnumItem {
                xdr: name.name.clone(),
                rust: camel(&name.name),
                value: v,
                doc: doc.clone(),
                alias_of,
                written,
            });
        }
        // rpcgen's C cannot hold both: gcc makes the enum 64 bits wide
        // and libtirpc's `xdr_enum` fills only its low half (the generic
        // differential's finding), so the negative items never match.
        let negative = items.iter().find(|i| i.value < 0 && i.written.is_none());
        if let (Some(n), Some((at, w))) = (negative, first_word.map(|(k, p)| (p, &items[k]))) {
            let msg = format!(
                "enum item `{}` = {:#x} is a word from 0x80000000 in an enum with a negative item (`{}` = {}): rpcgen's C makes such an enum 64 bits wide and libtirpc's xdr_enum fills only half of it, so its negative items would not decode; write the word as the negative int it is ({})",
                w.xdr,
                w.written.unwrap_or_default(),
                n.xdr,
                n.value,
                w.value
            );
            self.err(at, msg);
        }
        // `a = 1, A = 2` both become `A`.
        let natural: Vec<String> = items.iter().map(|i| i.rust.clone()).collect();
        for (i, r) in items.iter_mut().zip(distinct(&natural, "", &[])) {
            i.rust = r;
        }
        Kind::Enum(items)
    }

    fn lower_struct(&mut self, body: &StructBody, xdr: &str, rust: &str) -> Kind {
        let mut fields: Vec<Field> = Vec::new();
        for d in &body.fields {
            if let Some(prev) = fields.iter().find(|f| f.xdr == d.name.name) {
                let p = prev.pos;
                self.err(
                    d.name.pos,
                    format!(
                        "member `{}` is already declared at line {}:{}",
                        d.name.name, p.line, p.col
                    ),
                );
                continue;
            }
            let f = self.lower_decl(d, xdr, rust);
            fields.push(f);
        }
        // `int x; int X;` are two members that both become `x`.
        let natural: Vec<String> = fields.iter().map(|f| f.rust.clone()).collect();
        for (f, r) in fields.iter_mut().zip(distinct(&natural, "_", &[])) {
            f.rust = r;
        }
        Kind::Struct(fields)
    }

    fn lower_union(&mut self, body: &UnionBody, xdr: &str, rust: &str, id: TypeId) -> Kind {
        let discr_field = self.lower_decl(&body.discr, xdr, rust);
        let mut arms = Vec::new();
        let mut raw = Vec::new();
        for (values, arm) in &body.arms {
            let field = match arm {
                Arm::Void(_) => None,
                Arm::Decl(d) => Some(self.lower_decl(d, xdr, rust)),
            };
            arms.push(UArm {
                cases: Vec::new(),
                field,
            });
            raw.push(values.clone());
        }
        let default = body.default.as_ref().map(|(_, arm)| match arm {
            Arm::Void(_) => None,
            Arm::Decl(d) => Some(self.lower_decl(d, xdr, rust)),
        });
        self.pending_cases.push((id, raw, body.discr.pos));
        Kind::Union(Union {
            discr_xdr: body.discr.name.name.clone(),
            discr: discr_field.ty,
            arms,
            default,
            default_variant: "Default".into(),
        })
    }

    fn lower_decl(&mut self, d: &Decl, parent_xdr: &str, parent_rust: &str) -> Field {
        let ty = match (&d.ty, &d.shape) {
            (DeclType::Opaque, Shape::Fixed(v)) => {
                Ty::OpaqueFixed(self.eval_size(v, "an opaque's size").unwrap_or(0))
            }
            (DeclType::Opaque, Shape::Var(v)) => Ty::OpaqueVar(self.bound(v.as_ref())),
            (DeclType::Opaque, _) => {
                self.err(d.pos, format!("`opaque {}` needs a size: `opaque {0}[N]` (fixed) or `opaque {0}<N>` / `<>` (variable)", d.name.name));
                Ty::OpaqueVar(0)
            }
            (DeclType::String, Shape::Var(v)) => Ty::Str(self.bound(v.as_ref())),
            (DeclType::String, _) => {
                self.err(d.pos, format!("a string is variable-length only: write `string {}<N>` or `string {0}<>` (RFC 4506 §4.11)", d.name.name));
                Ty::Str(0)
            }
            (DeclType::Spec(ts), shape) => {
                let base = self.lower_spec(ts, parent_xdr, parent_rust, &d.name.name);
                match shape {
                    Shape::Plain => base,
                    Shape::Fixed(v) => Ty::Array(
                        Box::new(base),
                        self.eval_size(v, "an array's size").unwrap_or(0),
                    ),
                    Shape::Var(v) => Ty::VarArray(Box::new(base), self.bound(v.as_ref())),
                    Shape::Optional => Ty::Optional(Box::new(base)),
                }
            }
        };
        let mut ddp = None;
        for p in &d.pragmas {
            match p {
                Pragma::Ddp { bound, pos } => {
                    if ddp.is_some() {
                        self.err(*pos, "`@ddp` is given twice for this declaration");
                    }
                    ddp = Some(match bound {
                        None => DdpBound::Declared,
                        Some(Term::Num(n)) => DdpBound::Num(*n),
                        Some(Term::Const(c)) => {
                            let id = Ident {
                                name: c.clone(),
                                pos: *pos,
                            };
                            match self.eval_name(&id).map(u64::try_from) {
                                Some(Ok(v)) => DdpBound::Num(v),
                                Some(Err(_)) => {
                                    self.err(
                                        *pos,
                                        format!("`@ddp({c})`: the bound must not be negative"),
                                    );
                                    DdpBound::Declared
                                }
                                None => DdpBound::Declared,
                            }
                        }
                        Some(Term::Arg(path)) => DdpBound::Arg(path.clone(), *pos),
                        Some(Term::Size(_)) => DdpBound::Declared,
                    });
                }
                Pragma::MaxResults { pos, .. } => self.err(
                    *pos,
                    "`@max_results(...)` belongs next to a procedure, not a declaration",
                ),
            }
        }
        Field {
            xdr: d.name.name.clone(),
            rust: snake(&d.name.name),
            ty,
            ddp,
            doc: d.doc.clone(),
            pos: d.pos,
        }
    }

    fn bound(&mut self, v: Option<&Value>) -> u32 {
        match v {
            None => u32::MAX,
            Some(v) => self.eval_size(v, "a maximum size").unwrap_or(u32::MAX),
        }
    }

    pub(super) fn lower_spec(
        &mut self,
        ts: &TypeSpec,
        parent_xdr: &str,
        parent_rust: &str,
        member: &str,
    ) -> Ty {
        match ts {
            TypeSpec::Int => Ty::I32,
            TypeSpec::UInt => Ty::U32,
            TypeSpec::Hyper => Ty::I64,
            TypeSpec::UHyper => Ty::U64,
            TypeSpec::Float => Ty::F32,
            TypeSpec::Double => Ty::F64,
            TypeSpec::Bool => Ty::Bool,
            TypeSpec::ProcString => Ty::Str(u32::MAX),
            TypeSpec::Quadruple(pos) => {
                self.err(*pos, "`quadruple` (128-bit float, RFC 4506 §4.8) is not supported: Rust has no 128-bit float type and rpcgen cannot encode it either; use `opaque NAME[16]` and convert");
                Ty::I32
            }
            TypeSpec::Named(id) => match self.type_ids.get(&id.name) {
                Some(t) => Ty::Named(*t),
                None => {
                    self.err(
                        id.pos,
                        format!("unknown type `{}`: expected a built-in type or a typedef, struct, union or enum defined in this file", id.name),
                    );
                    Ty::I32
                }
            },
            TypeSpec::Enum(_) | TypeSpec::Struct(_) | TypeSpec::Union(_) => {
                let xdr = format!("{parent_xdr}.{member}");
                let rust = format!("{}{}", bare(parent_rust), bare(&camel(member)));
                let pos = match ts {
                    TypeSpec::Enum(b) => b.pos,
                    TypeSpec::Struct(b) => b.pos,
                    TypeSpec::Union(b) => b.pos,
                    _ => Pos::default(),
                };
                let id = self.new_type(xdr.clone(), rust.clone(), pos, Vec::new());
                let kind = self.lower_body(ts, &xdr, &rust, id);
                self.model.types[id].kind = kind;
                Ty::Named(id)
            }
        }
    }

    pub(super) fn check_ddp_marks(&mut self) {
        let mut errs = Vec::new();
        for t in &self.model.types {
            for f in t.kind.fields() {
                if f.ddp.is_none() {
                    continue;
                }
                let (r, _) = self.model.resolve(&f.ty);
                if !matches!(r, Ty::OpaqueVar(_) | Ty::Str(_)) {
                    errs.push((f.pos, format!("`@ddp` marks `{}`, which is not a variable-length opaque or string: only `opaque x<N>`/`string x<N>` items (or typedefs of them) can be DDP-eligible", f.xdr)));
                }
            }
        }
        for (p, m) in errs {
            self.err(p, m);
        }
    }
}

/// An enum item's value as the 32-bit signed int on the wire: a value
/// from 2^31 to 2^32 - 1 (`0x80000000` written in hex, as C and rpcgen
/// allow) is that word read as a signed int, and comes back with the
/// value as written. `None` beyond 32 bits.
pub(super) fn enum_word(v: i128) -> Option<(i32, Option<i128>)> {
    if let Ok(v) = i32::try_from(v) {
        return Some((v, None));
    }
    let w = u32::try_from(v).ok()?;
    Some((w as i32, Some(v)))
}
