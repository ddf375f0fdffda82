//! The type checker: resolves names and constants, names nested
//! definitions, checks every rule the generated code relies on, and
//! lowers the syntax tree into the [`Model`].

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::ast::*;
use crate::error::{Pos, Reporter};
use crate::model::*;
use crate::names::{bare, camel, distinct, numbered, screaming, snake, with_hints};

/// A name in the constant namespace.
#[derive(Debug, Clone)]
enum Sym {
    Const(Value),
    EnumItem(Value),
}

struct Checker<'r, 'a> {
    rep: &'r mut Reporter<'a>,
    syms: HashMap<String, (Sym, Pos)>,
    values: HashMap<String, Option<i128>>,
    type_ids: HashMap<String, TypeId>,
    model: Model,
    /// Union case values, resolved once every type is known.
    pending_cases: Vec<(TypeId, Vec<Vec<Value>>, Pos)>,
    /// Which enum an enum-item name belongs to.
    item_enum: HashMap<String, TypeId>,
}

/// Checks `spec` and builds the model; errors go to `rep`.
pub(crate) fn check(spec: &Spec, rep: &mut Reporter<'_>) -> Model {
    let mut c = Checker {
        rep,
        syms: HashMap::new(),
        values: HashMap::new(),
        type_ids: HashMap::new(),
        model: Model::default(),
        pending_cases: Vec::new(),
        item_enum: HashMap::new(),
    };
    c.collect_symbols(spec);
    c.collect_types(spec);
    for def in &spec.defs {
        c.lower_def(def);
    }
    if c.rep.diags.is_empty() {
        c.resolve_cases();
        c.check_ddp_marks();
        c.analyse_recursion();
        c.check_rust_names();
    }
    if c.rep.diags.is_empty() {
        for def in &spec.defs {
            if let Def::Program(p) = def {
                c.lower_program(p);
            }
        }
        c.check_program_names();
    }
    c.model
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
    fn err(&mut self, pos: Pos, msg: impl Into<String>) {
        self.rep.error(pos, msg);
    }

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

    fn collect_symbols(&mut self, spec: &Spec) {
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
    fn eval_name(&mut self, name: &Ident) -> Option<i128> {
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

    fn eval(&mut self, v: &Value) -> Option<i128> {
        match v {
            Value::Num(n, _) => Some(*n),
            Value::Name(id) => self.eval_name(id),
            Value::Next { prev, .. } => self.eval_name(prev).map(|v| v + 1),
        }
    }

    /// A size or count: 0..=u32::MAX.
    fn eval_size(&mut self, v: &Value, what: &str) -> Option<u32> {
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

    fn collect_types(&mut self, spec: &Spec) {
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

    fn lower_def(&mut self, def: &Def) {
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
        let mut items = Vec::new();
        let mut seen: BTreeMap<i32, String> = BTreeMap::new();
        for (name, value, doc) in &body.items {
            let Some(v) = self.eval(value) else { continue };
            let Ok(v) = i32::try_from(v) else {
                self.err(
                    value.pos(),
                    format!(
                        "enum item `{}` = {v} does not fit in a 32-bit signed int (RFC 4506 §4.3)",
                        name.name
                    ),
                );
                continue;
            };
            if let Some(other) = seen.get(&v) {
                self.err(
                    name.pos,
                    format!("enum items `{other}` and `{}` have the same value {v}: each value may be used once", name.name),
                );
                continue;
            }
            seen.insert(v, name.name.clone());
            self.item_enum.insert(name.name.clone(), id);
            items.push(EnumItem {
                xdr: name.name.clone(),
                rust: camel(&name.name),
                value: v,
                doc: doc.clone(),
            });
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

    fn lower_spec(
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

    fn resolve_cases(&mut self) {
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
                _ => {
                    self.err(dpos, format!("union `{}`: the discriminant must be int, unsigned int, bool or an enum (RFC 4506 §4.15)", self.model.types[id].xdr));
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
                                format!("case value {label} = {n} is not an item of enum `{en}`"),
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
                            items
                                .iter()
                                .find(|it| i64::from(it.value) == n)
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

    fn check_ddp_marks(&mut self) {
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

    fn analyse_recursion(&mut self) {
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

    /// Gives every type, typedef codec function and constant a distinct
    /// Rust name (the RPC language is case-sensitive: `point` and `POINT`
    /// both become `Point`, so the later one is numbered, `Point2`).
    fn check_rust_names(&mut self) {
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
    fn check_program_names(&mut self) {
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

    fn lower_program(&mut self, p: &Program) {
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
                    ddp_results: Vec::new(),
                    max_results: None,
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
