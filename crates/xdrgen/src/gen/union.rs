//! Discriminated unions: one Rust enum variant per case value, the
//! default arm carrying its discriminant, and their codec and checks.

use super::codec::It;
use super::writer::W;
use super::{Gen, RESULT, X};
use crate::model::*;

impl Gen<'_> {
    pub(super) fn union_item(&mut self, id: TypeId, t: &TypeItem, u: &Union) {
        let name = t.rust.clone();
        let dty = self.ty(&u.discr, "");
        self.item_doc(
            &t.doc,
            &format!(
                "union {} switch ({})",
                t.xdr,
                self.xdr(&u.discr, &u.discr_xdr)
            ),
            t.pos.line,
        );
        self.w.line("///");
        self.w
            .line("/// One variant per case value; the default arm's variant carries the");
        self.w.line("/// discriminant.");
        self.w.line(&self.derives(id));
        self.w.line("#[allow(clippy::large_enum_variant)]");
        self.w.open(&format!("pub enum {name} {{"));
        for arm in &u.arms {
            for c in &arm.cases {
                match &arm.field {
                    Some(f) => {
                        self.w.line(&format!(
                            "/// `case {}:` `{}`.",
                            c.label,
                            self.xdr(&f.ty, &f.xdr)
                        ));
                        let ty = self.ty(&f.ty, "");
                        self.w.line(&format!("{}({ty}),", c.variant));
                    }
                    None => {
                        self.w.line(&format!("/// `case {}:` void.", c.label));
                        self.w.line(&format!("{},", c.variant));
                    }
                }
            }
        }
        if let Some(d) = &u.default {
            let dv = &u.default_variant;
            match d {
                Some(f) => {
                    self.w.line(&format!(
                        "/// `default:` `{}`, with the discriminant (one no case lists).",
                        self.xdr(&f.ty, &f.xdr)
                    ));
                    let ty = self.ty(&f.ty, "");
                    self.w.line(&format!("{dv}({dty}, {ty}),"));
                }
                None => {
                    self.w
                        .line("/// `default:` void, with the discriminant (one no case lists).");
                    self.w.line(&format!("{dv}({dty}),"));
                }
            }
        }
        self.w.close("}");
        self.w.line("");
        self.w.open(&format!("impl {name} {{"));
        // discriminant()
        self.w.line("/// The discriminant this value encodes.");
        self.w
            .open(&format!("pub fn discriminant(&self) -> {dty} {{"));
        self.w.open("match self {");
        for arm in &u.arms {
            let pat = if arm.field.is_some() { "(_)" } else { "" };
            for c in &arm.cases {
                let v = self.discr_literal(&u.discr, c);
                self.w.line(&format!("Self::{}{pat} => {v},", c.variant));
            }
        }
        if let Some(d) = &u.default {
            let pat = if d.is_some() { "(d, _)" } else { "(d)" };
            self.w
                .line(&format!("Self::{}{pat} => *d,", u.default_variant));
        }
        self.w.close("}");
        self.w.close("}");
        self.w.line("");
        // xdr_check
        self.w
            .line("/// Checks every length against its XDR maximum, and that the default");
        self.w
            .line("/// arm is not used for a discriminant that has its own case.");
        self.w.open(&format!(
            "pub fn xdr_check(&self) -> {RESULT}<(), {X}::EncodeError> {{"
        ));
        self.w.open("match self {");
        for arm in &u.arms {
            for c in &arm.cases {
                match &arm.field {
                    Some(f) => {
                        self.w.open(&format!("Self::{}(x) => {{", c.variant));
                        let path = format!("{}.{}", t.xdr, f.xdr);
                        self.check_stmts(&f.ty, &It::R("x".into()), &path);
                        self.w.line("let _ = x;");
                        self.w.close("}");
                    }
                    None => self.w.line(&format!("Self::{} => {{}}", c.variant)),
                }
            }
        }
        if let Some(d) = &u.default {
            let pat = if d.is_some() { "(d, x)" } else { "(d)" };
            self.w
                .open(&format!("Self::{}{pat} => {{", u.default_variant));
            let listed: Vec<String> = u
                .arms
                .iter()
                .flat_map(|a| a.cases.iter())
                .map(|c| self.discr_literal(&u.discr, c))
                .collect();
            if !listed.is_empty() {
                let raw = self.discr_raw(&u.discr, "*d");
                let needle = if raw == "*d" {
                    "d".to_string()
                } else {
                    format!("&{raw}")
                };
                self.w.open(&format!(
                    "if [{}].contains({}) {{",
                    listed
                        .iter()
                        .map(|l| self.discr_raw(&u.discr, l))
                        .collect::<Vec<_>>()
                        .join(", "),
                    needle
                ));
                self.w.line(&format!("return ::core::result::Result::Err({X}::EncodeError::DefaultArmTaken {{ item: \"{}\", value: i64::from({raw}) }});", t.xdr));
                self.w.close("}");
            } else {
                self.w.line("let _ = d;");
            }
            if let Some(f) = d {
                let path = format!("{}.{}", t.xdr, f.xdr);
                self.check_stmts(&f.ty, &It::R("x".into()), &path);
                self.w.line("let _ = x;");
            }
            self.w.close("}");
        }
        self.w.close("}");
        self.w.line("::core::result::Result::Ok(())");
        self.w.close("}");
        if t.recursive {
            self.w.line("");
            self.depth_fn_head(t);
            self.union_decode_body(t, u, true);
            self.w.close("}");
        }
        self.common_methods(&name, true);
        self.w.close("}");
        self.w.line("");
        // Marshal
        let saved = std::mem::replace(
            &mut self.w,
            W {
                out: String::new(),
                ind: 0,
            },
        );
        self.w.open("match self {");
        for arm in &u.arms {
            for c in &arm.cases {
                let put = self.discr_put(&u.discr, &self.discr_literal(&u.discr, c));
                match &arm.field {
                    Some(f) => {
                        self.w.open(&format!("Self::{}(x) => {{", c.variant));
                        self.w.line(&put);
                        self.enc_stmts(&f.ty, f.ddp.is_some(), &It::R("x".into()));
                        self.w.close("}");
                    }
                    None => self.w.line(&format!("Self::{} => {{ {put} }}", c.variant)),
                }
            }
        }
        if let Some(d) = &u.default {
            let put = self.discr_put(&u.discr, "*d");
            match d {
                Some(f) => {
                    self.w
                        .open(&format!("Self::{}(d, x) => {{", u.default_variant));
                    self.w.line(&put);
                    self.enc_stmts(&f.ty, f.ddp.is_some(), &It::R("x".into()));
                    self.w.close("}");
                }
                None => self
                    .w
                    .line(&format!("Self::{}(d) => {{ {put} }}", u.default_variant)),
            }
        }
        self.w.close("}");
        let body: Vec<String> = std::mem::replace(&mut self.w, saved)
            .out
            .lines()
            .map(str::to_string)
            .collect();
        self.marshal_impl(&name, &body);
        // Unmarshal
        self.open_unmarshal_impl(&name, true);
        if t.recursive {
            self.w.line("Self::xdr_decode_depth(dec, 0)");
        } else {
            self.union_decode_body(t, u, false);
        }
        self.w.close("}");
        self.w.close("}");
    }

    /// The Rust literal of a case value, typed as the discriminant.
    fn discr_literal(&self, d: &Ty, c: &Case) -> String {
        match d {
            Ty::Bool => (c.value == 1).to_string(),
            Ty::Named(id) => {
                let Kind::Enum(items) = &self.m.types[*id].kind else {
                    return c.value.to_string();
                };
                let it = items.iter().find(|i| i64::from(i.value) == c.value);
                format!(
                    "{}::{}",
                    self.m.types[*id].rust,
                    it.map(|i| i.rust.as_str()).unwrap_or("?")
                )
            }
            _ => c.value.to_string(),
        }
    }

    /// A comparable raw value of a discriminant expression.
    fn discr_raw(&self, d: &Ty, e: &str) -> String {
        match d {
            Ty::Named(_) => format!("({e}).value()"),
            Ty::Bool => format!("i32::from({e})"),
            _ => e.to_string(),
        }
    }

    fn discr_put(&self, d: &Ty, e: &str) -> String {
        match d {
            Ty::I32 => format!("enc.put_i32({e});"),
            Ty::U32 => format!("enc.put_u32({e});"),
            Ty::Bool => format!("enc.put_bool({e});"),
            _ => format!("enc.put_i32(({e}).value());"),
        }
    }

    fn union_decode_body(&mut self, t: &TypeItem, u: &Union, depth: bool) {
        if u.default.is_none() || matches!(u.discr, Ty::Named(_)) {
            self.w.line("let offset = dec.position();");
        }
        let get = match &u.discr {
            Ty::I32 | Ty::Named(_) => "dec.get_i32()?",
            Ty::U32 => "dec.get_u32()?",
            _ => "dec.get_bool()?",
        };
        self.w.line(&format!("let discr = {get};"));
        self.w.open("::core::result::Result::Ok(match discr {");
        for arm in &u.arms {
            for c in &arm.cases {
                let lit = match &u.discr {
                    Ty::Bool => (c.value == 1).to_string(),
                    _ => c.value.to_string(),
                };
                match &arm.field {
                    Some(f) => {
                        let e = self.dec_expr(&f.ty, f.ddp.is_some(), depth);
                        self.w.line(&format!("{lit} => Self::{}({e}),", c.variant));
                    }
                    None => self.w.line(&format!("{lit} => Self::{},", c.variant)),
                }
            }
        }
        let raw_u32 = match &u.discr {
            Ty::U32 => "discr".to_string(),
            Ty::Bool => "u32::from(discr)".to_string(),
            _ => "discr as u32".to_string(),
        };
        let bad = format!(
            "{X}::XdrError::BadDiscriminant {{ what: \"union {}\", offset, value: {raw_u32} }}",
            t.xdr
        );
        match &u.default {
            Some(d) => {
                let dval = match &u.discr {
                    Ty::Named(id) => format!(
                        "{}::from_value(discr).ok_or({bad})?",
                        self.m.types[*id].rust
                    ),
                    _ => "discr".to_string(),
                };
                match d {
                    Some(f) => {
                        let e = self.dec_expr(&f.ty, f.ddp.is_some(), depth);
                        self.w.open("_ => {");
                        self.w.line(&format!("let d = {dval};"));
                        self.w.line(&format!("Self::{}(d, {e})", u.default_variant));
                        self.w.close("}");
                    }
                    None => self
                        .w
                        .line(&format!("_ => Self::{}({dval}),", u.default_variant)),
                }
            }
            None => self
                .w
                .line(&format!("_ => return ::core::result::Result::Err({bad}),")),
        }
        self.w.close("})");
    }
}
