//! The checked definitions printed back as an RPC language file rpcgen
//! takes: for a file with definitions nested inside declarations (RFC
//! 4506 §6.3 allows them, rpcgen refuses them), each nested type becomes
//! a top-level one named `outer_member`, and types come before the
//! types that use them. Every value is printed as the number it is (enum
//! words from `0x80000000` in hex, as written); programs follow, with
//! their argument names; constants are left out (every use is a number). The encodings are
//! unchanged: nesting is only a way of naming.

use std::collections::{HashMap, HashSet};

use super::schema::Schema;
use crate::model::{Kind, Model, ProgramIr, Ty, TypeId};

pub(super) fn flattened(s: &Schema) -> String {
    let m = &s.model;
    // Names: top-level types keep theirs; a nested one gets its path with
    // `_` for `.`, numbered if that is taken.
    let mut taken: HashSet<String> = m
        .types
        .iter()
        .filter(|t| !t.xdr.contains('.'))
        .map(|t| t.xdr.clone())
        .collect();
    let mut names: HashMap<TypeId, String> = HashMap::new();
    for (id, t) in m.types.iter().enumerate() {
        if !t.xdr.contains('.') {
            names.insert(id, t.xdr.clone());
            continue;
        }
        let base = t.xdr.replace('.', "_");
        let name = std::iter::once(base.clone())
            .chain((2..).map(|k| format!("{base}_{k}")))
            .find(|n| !taken.contains(n))
            .unwrap_or_default();
        taken.insert(name.clone());
        names.insert(id, name);
    }
    let mut out = format!(
        "/* {}, flattened by xdrgen-difftool for rpcgen: nested definitions\n   made top-level, values as numbers. */\n\n",
        s.file
    );
    // The file's order (which rpcgen's C takes), each nested type just
    // before the type it is nested in.
    let mut done = vec![false; m.types.len()];
    for id in 0..m.types.len() {
        if !m.types[id].xdr.contains('.') {
            nested_first(m, &names, id, &mut done, &mut out);
            out.push_str(&definition(m, &names, id));
            out.push('\n');
        }
    }
    // Types defined in a procedure's signature (`struct { ... }
    // F(void)`) belong to no type: before the programs.
    for id in 0..m.types.len() {
        if !done[id] && m.types[id].xdr.contains('.') && !reached_from_a_type(m, id) {
            done[id] = true;
            nested_first(m, &names, id, &mut done, &mut out);
            out.push_str(&definition(m, &names, id));
            out.push('\n');
        }
    }
    for p in &m.programs {
        out.push_str(&program(m, &names, p));
    }
    out
}

/// Whether some other type's declaration names `id`.
fn reached_from_a_type(m: &Model, id: TypeId) -> bool {
    m.types.iter().any(|t| {
        let mut found = false;
        for f in t.kind.fields() {
            uses(&f.ty, &mut |d| found |= d == id);
        }
        if let Kind::Union(u) = &t.kind {
            uses(&u.discr, &mut |d| found |= d == id);
        }
        found
    })
}

/// A program, for rpcgen -N to check (argument names kept).
fn program(m: &Model, names: &HashMap<TypeId, String>, p: &ProgramIr) -> String {
    let ty = |t: &Ty| match t {
        Ty::Str(_) => "string".to_string(),
        t => decl(m, names, t, "").trim_end().to_string(),
    };
    let mut s = format!("program {} {{\n", p.xdr);
    for v in &p.versions {
        s.push_str(&format!("    version {} {{\n", v.xdr));
        for pr in &v.procs {
            let args: Vec<String> = pr
                .args
                .iter()
                .zip(&pr.arg_names)
                .map(|(t, n)| match n {
                    Some(n) => format!("{} {n}", ty(t)),
                    None => ty(t),
                })
                .collect();
            let args = if args.is_empty() {
                "void".to_string()
            } else {
                args.join(", ")
            };
            let result = pr.result.as_ref().map_or("void".to_string(), ty);
            s.push_str(&format!(
                "        {result} {}({args}) = {};\n",
                pr.xdr, pr.number
            ));
        }
        s.push_str(&format!("    }} = {};\n", v.number));
    }
    s.push_str(&format!("}} = {:#x};\n", p.number));
    s
}

/// Prints the types nested in `id`, innermost first.
fn nested_first(
    m: &Model,
    names: &HashMap<TypeId, String>,
    id: TypeId,
    done: &mut [bool],
    out: &mut String,
) {
    let mut inner = Vec::new();
    for f in m.types[id].kind.fields() {
        uses(&f.ty, &mut |d| inner.push(d));
    }
    if let Kind::Union(u) = &m.types[id].kind {
        uses(&u.discr, &mut |d| inner.push(d));
    }
    for d in inner {
        if m.types[d].xdr.contains('.') && !done[d] {
            done[d] = true;
            nested_first(m, names, d, done, out);
            out.push_str(&definition(m, names, d));
            out.push('\n');
        }
    }
}

fn uses(ty: &Ty, f: &mut dyn FnMut(TypeId)) {
    match ty {
        Ty::Named(id) => f(*id),
        Ty::Array(t, _) | Ty::VarArray(t, _) | Ty::Optional(t) => uses(t, f),
        _ => {}
    }
}

fn bound(n: u32) -> String {
    if n == u32::MAX {
        String::new()
    } else {
        n.to_string()
    }
}

fn decl(m: &Model, names: &HashMap<TypeId, String>, ty: &Ty, name: &str) -> String {
    let spec = |t: &Ty| -> String {
        match t {
            Ty::I32 => "int".into(),
            Ty::U32 => "unsigned int".into(),
            Ty::I64 => "hyper".into(),
            Ty::U64 => "unsigned hyper".into(),
            Ty::F32 => "float".into(),
            Ty::F64 => "double".into(),
            Ty::Bool => "bool".into(),
            Ty::Named(id) => names[id].clone(),
            // Not a type specifier: never an array's element.
            _ => "int".into(),
        }
    };
    match ty {
        Ty::OpaqueFixed(n) => format!("opaque {name}[{n}]"),
        Ty::OpaqueVar(n) => format!("opaque {name}<{}>", bound(*n)),
        Ty::Str(n) => format!("string {name}<{}>", bound(*n)),
        Ty::Array(t, n) => format!("{} {name}[{n}]", spec(t)),
        Ty::VarArray(t, n) => format!("{} {name}<{}>", spec(t), bound(*n)),
        // `struct T *` may point forward (a list through a typedef).
        Ty::Optional(t) => match &**t {
            Ty::Named(id) if matches!(m.types[*id].kind, Kind::Struct(_)) => {
                format!("struct {} *{name}", names[id])
            }
            t => format!("{} *{name}", spec(t)),
        },
        t => format!("{} {name}", spec(t)),
    }
}

fn definition(m: &Model, names: &HashMap<TypeId, String>, id: TypeId) -> String {
    let t = &m.types[id];
    let name = &names[&id];
    match &t.kind {
        Kind::Enum(items) => {
            let items: Vec<String> = items
                .iter()
                .map(|i| match i.written {
                    Some(w) => format!("    {} = {w:#x}", i.xdr),
                    None => format!("    {} = {}", i.xdr, i.value),
                })
                .collect();
            format!("enum {name} {{\n{}\n}};\n", items.join(",\n"))
        }
        Kind::Struct(fs) => {
            let fs: String = fs
                .iter()
                .map(|f| format!("    {};\n", decl(m, names, &f.ty, &f.xdr)))
                .collect();
            format!("struct {name} {{\n{fs}}};\n")
        }
        Kind::Alias(f) => format!("typedef {};\n", decl(m, names, &f.ty, name)),
        Kind::Union(u) => {
            let mut s = format!(
                "union {name} switch ({}) {{\n",
                decl(m, names, &u.discr, &u.discr_xdr)
            );
            let label = |v: i64| match u.discr {
                Ty::Bool if v == 1 => "TRUE".to_string(),
                Ty::Bool => "FALSE".to_string(),
                _ => v.to_string(),
            };
            for arm in &u.arms {
                for c in &arm.cases {
                    s.push_str(&format!("case {}:\n", label(c.value)));
                }
                match &arm.field {
                    Some(f) => s.push_str(&format!("    {};\n", decl(m, names, &f.ty, &f.xdr))),
                    None => s.push_str("    void;\n"),
                }
            }
            if let Some(d) = &u.default {
                s.push_str("default:\n");
                match d {
                    Some(f) => s.push_str(&format!("    {};\n", decl(m, names, &f.ty, &f.xdr))),
                    None => s.push_str("    void;\n"),
                }
            }
            s.push_str("};\n");
            s
        }
    }
}
