//! The XDR codec of one item: the statements that encode it, the
//! expression that decodes it (bounded, no allocation beyond what the
//! input could fill) and the statements that check it against its
//! declared maxima; and the `Marshal`/`Unmarshal` impls and the
//! `to_xdr`/`from_xdr` methods every generated type gets.

use super::{Gen, M, RESULT, X};
use crate::model::*;

/// An item being encoded or checked: a place (`self.field`) or a
/// reference (`e`, a loop variable).
pub(super) enum It {
    P(String),
    R(String),
}

impl It {
    /// The value (for `Copy` items).
    fn val(&self) -> String {
        match self {
            It::P(p) => p.clone(),
            It::R(r) => format!("*{r}"),
        }
    }
    /// A reference.
    fn refr(&self) -> String {
        match self {
            It::P(p) => format!("&{p}"),
            It::R(r) => r.clone(),
        }
    }
    /// A method-call receiver.
    fn m(&self) -> String {
        match self {
            It::P(p) | It::R(p) => p.clone(),
        }
    }
}

impl Gen<'_> {
    /// `to_xdr`, `from_xdr` and `xdr_check` (the latter skipped for enums).
    pub(super) fn common_methods(&mut self, name: &str, check: bool) {
        let _ = check;
        self.w.line("");
        self.w
            .line("/// The XDR encoding of `self` (DDP-eligible items inline).");
        self.w.open("pub fn to_xdr(&self) -> ::bytes::Bytes {");
        self.w.line("let mut buf = ::bytes::BytesMut::new();");
        self.w.line(&format!(
            "{M}::Marshal::marshal(self, &mut {X}::Encoder::new(&mut buf));"
        ));
        self.w.line("buf.freeze()");
        self.w.close("}");
        self.w.line("");
        self.w
            .line("/// Decodes a value that must fill `bytes` exactly.");
        self.w.open(&format!(
            "pub fn from_xdr(bytes: &::bytes::Bytes) -> {RESULT}<Self, {X}::XdrError> {{"
        ));
        self.w
            .line(&format!("let mut dec = {X}::Decoder::from_bytes(bytes);"));
        self.w.line(&format!(
            "let value = <{name} as {M}::Unmarshal>::unmarshal(&mut dec)?;"
        ));
        self.w.line("dec.expect_end()?;");
        self.w.line("::core::result::Result::Ok(value)");
        self.w.close("}");
    }

    pub(super) fn marshal_impl(&mut self, name: &str, body: &[String]) {
        self.w.open(&format!("impl {M}::Marshal for {name} {{"));
        self.w
            .open(&format!("fn marshal(&self, enc: &mut {X}::Encoder<'_>) {{"));
        for l in body {
            self.w.line(l);
        }
        self.w.close("}");
        self.w.close("}");
        self.w.line("");
    }

    /// Opens `impl Unmarshal for NAME` and its `fn unmarshal` (the caller
    /// writes the body and closes both).
    pub(super) fn open_unmarshal_impl(&mut self, name: &str, allow_unreachable_patterns: bool) {
        self.w.open(&format!("impl {M}::Unmarshal for {name} {{"));
        if allow_unreachable_patterns {
            self.w.line("#[allow(unreachable_patterns)]");
        }
        self.w.open(&format!(
            "fn unmarshal(dec: &mut {X}::Decoder<'_>) -> {RESULT}<Self, {X}::XdrError> {{"
        ));
    }

    /// Statements encoding the item `x`.
    pub(super) fn enc_stmts(&mut self, ty: &Ty, ddp: bool, x: &It) {
        let (v, r, m) = (x.val(), x.refr(), x.m());
        match ty {
            Ty::I32 => self.w.line(&format!("enc.put_i32({v});")),
            Ty::U32 => self.w.line(&format!("enc.put_u32({v});")),
            Ty::I64 => self.w.line(&format!("enc.put_i64({v});")),
            Ty::U64 => self.w.line(&format!("enc.put_u64({v});")),
            Ty::F32 => self.w.line(&format!("enc.put_u32({m}.to_bits());")),
            Ty::F64 => self.w.line(&format!("enc.put_u64({m}.to_bits());")),
            Ty::Bool => self.w.line(&format!("enc.put_bool({v});")),
            Ty::OpaqueFixed(_) => self.w.line(&format!("enc.put_fixed_opaque(&{m}[..]);")),
            Ty::OpaqueVar(_) => {
                if ddp {
                    self.w
                        .line(&format!("enc.put_opaque_ddp(::bytes::Bytes::clone({r}));"));
                } else {
                    self.w.line(&format!("enc.put_opaque(&{m}[..]);"));
                }
            }
            Ty::Str(_) => {
                let bytes = if self.o.strings_as_bytes {
                    format!("&{m}[..]")
                } else {
                    format!("{m}.as_bytes()")
                };
                if ddp && self.o.strings_as_bytes {
                    self.w
                        .line(&format!("enc.put_opaque_ddp(::bytes::Bytes::clone({r}));"));
                } else if ddp {
                    self.w.line(&format!(
                        "enc.put_opaque_ddp(::bytes::Bytes::copy_from_slice({bytes}));"
                    ));
                } else {
                    self.w.line(&format!("enc.put_opaque({bytes});"));
                }
            }
            Ty::Named(id) => {
                if let Kind::Alias(_) = &self.m.types[*id].kind {
                    let (r, d) = self.m.resolve(ty);
                    let (r, d) = (r.clone(), d.is_some());
                    self.enc_stmts(&r, ddp || d, x);
                } else {
                    self.w.line(&format!("{M}::Marshal::marshal({r}, enc);"));
                }
            }
            Ty::Array(t, _) => {
                let e = self.var("e");
                self.w.open(&format!("for {e} in {m}.iter() {{"));
                self.enc_stmts(t, false, &It::R(e));
                self.w.close("}");
            }
            Ty::VarArray(t, _) => {
                let e = self.var("e");
                self.w.line(&format!(
                    "enc.put_u32(u32::try_from({m}.len()).unwrap_or(u32::MAX));"
                ));
                self.w.open(&format!("for {e} in {m}.iter() {{"));
                self.enc_stmts(t, false, &It::R(e));
                self.w.close("}");
            }
            Ty::Optional(t) => {
                let v = self.var("v");
                let tt = self.ty(t, self.sup_prefix());
                self.w.open(&format!("match {r} {{"));
                self.w
                    .open(&format!("::core::option::Option::Some({v}) => {{"));
                self.w.line(&format!("let {v}: &{tt} = {v};"));
                self.w.line("enc.put_bool(true);");
                self.enc_stmts(t, false, &It::R(v));
                self.w.close("}");
                self.w
                    .line("::core::option::Option::None => enc.put_bool(false),");
                self.w.close("}");
            }
        }
    }

    /// An expression decoding one `T` from `dec` (uses `?`).
    pub(super) fn dec_expr(&mut self, ty: &Ty, ddp: bool, depth: bool) -> String {
        match ty {
            Ty::I32 => "dec.get_i32()?".into(),
            Ty::U32 => "dec.get_u32()?".into(),
            Ty::I64 => "dec.get_i64()?".into(),
            Ty::U64 => "dec.get_u64()?".into(),
            Ty::F32 => "f32::from_bits(dec.get_u32()?)".into(),
            Ty::F64 => "f64::from_bits(dec.get_u64()?)".into(),
            Ty::Bool => "dec.get_bool()?".into(),
            Ty::OpaqueFixed(n) => format!("{{ let s = dec.get_fixed_opaque({n})?; let mut a = [0u8; {n}]; a.copy_from_slice(s); a }}"),
            Ty::OpaqueVar(m) => {
                if ddp {
                    format!("dec.get_opaque_ddp({m})?")
                } else {
                    format!("dec.get_opaque_bytes({m})?")
                }
            }
            Ty::Str(m) => {
                if self.o.strings_as_bytes {
                    if ddp {
                        format!("dec.get_opaque_ddp({m})?")
                    } else {
                        format!("dec.get_opaque_bytes({m})?")
                    }
                } else if ddp {
                    format!("{{ let offset = dec.position(); let b = dec.get_opaque_ddp({m})?; ::std::string::String::from_utf8(b.to_vec()).map_err(|_| {X}::XdrError::BadUtf8 {{ offset }})? }}")
                } else {
                    format!("::std::string::String::from(dec.get_string({m})?)")
                }
            }
            Ty::Named(id) => {
                let item = &self.m.types[*id];
                match &item.kind {
                    Kind::Alias(_) => {
                        let (r, d) = self.m.resolve(ty);
                        let (r, d) = (r.clone(), d.is_some());
                        self.dec_expr(&r, ddp || d, depth)
                    }
                    _ if item.recursive => {
                        let d = if depth { "depth + 1" } else { "0" };
                        format!("{}{}::xdr_decode_depth(dec, {d})?", self.sup_prefix(), item.rust)
                    }
                    _ => format!("<{}{} as {M}::Unmarshal>::unmarshal(dec)?", self.sup_prefix(), item.rust),
                }
            }
            Ty::Array(t, n) => {
                let min = self.m.min_size(t).max(1);
                let e = self.dec_expr(t, false, depth);
                let tt = self.ty(t, self.sup_prefix());
                format!(
                    "{{ let mut v: ::std::vec::Vec<{tt}> = ::std::vec::Vec::with_capacity(({n}usize).min(dec.remaining() / {min})); for _ in 0..{n}u32 {{ v.push({e}); }} <[{tt}; {n}]>::try_from(v).map_err(|_| {X}::XdrError::UnexpectedEnd {{ offset: dec.position(), needed: 0, remaining: 0 }})? }}"
                )
            }
            Ty::VarArray(t, m) => {
                let min = self.m.min_size(t).max(1);
                let e = self.dec_expr(t, false, depth);
                let tt = self.ty(t, self.sup_prefix());
                format!(
                    "{{ let n = dec.get_len({m})?; let mut v: ::std::vec::Vec<{tt}> = ::std::vec::Vec::with_capacity((n as usize).min(dec.remaining() / {min})); for _ in 0..n {{ v.push({e}); }} v }}"
                )
            }
            Ty::Optional(t) => {
                let e = self.dec_expr(t, false, depth);
                format!("if dec.get_bool()? {{ ::core::option::Option::Some(::std::boxed::Box::new({e})) }} else {{ ::core::option::Option::None }}")
            }
        }
    }

    /// Whether checking a `T` can fail.
    fn needs_check(&self, ty: &Ty, seen: &mut Vec<TypeId>) -> bool {
        match ty {
            Ty::OpaqueVar(_) | Ty::Str(_) | Ty::VarArray(..) => true,
            Ty::Array(t, _) | Ty::Optional(t) => self.needs_check(t, seen),
            Ty::Named(id) => {
                if seen.contains(id) {
                    return false;
                }
                seen.push(*id);
                match &self.m.types[*id].kind {
                    Kind::Enum(_) => false,
                    Kind::Alias(f) => self.needs_check(&f.ty, seen),
                    Kind::Struct(fs) => fs.iter().any(|f| self.needs_check(&f.ty, seen)),
                    Kind::Union(u) => {
                        u.default.is_some()
                            || u.arms
                                .iter()
                                .filter_map(|a| a.field.as_ref())
                                .any(|f| self.needs_check(&f.ty, seen))
                    }
                }
            }
            _ => false,
        }
    }

    /// Statements checking each element of the array `m`.
    fn check_elements(&mut self, t: &Ty, m: &str, path: &str) {
        let e = self.var("e");
        let r = self.m.resolve(t).0.clone();
        if let Ty::Optional(inner) = &r {
            // Only the present ones (`.flatten()`, as clippy would have it).
            let tt = self.ty(inner, self.sup_prefix());
            self.w.open(&format!("for {e} in {m}.iter().flatten() {{"));
            self.w.line(&format!("let {e}: &{tt} = {e};"));
            self.check_stmts(inner, &It::R(e), path);
        } else {
            self.w.open(&format!("for {e} in {m}.iter() {{"));
            self.check_stmts(t, &It::R(e), path);
        }
        self.w.close("}");
    }

    /// Statements checking the item `x`, returning `EncodeError` on failure.
    pub(super) fn check_stmts(&mut self, ty: &Ty, x: &It, path: &str) {
        let ty = &self.m.resolve(ty).0.clone();
        if !self.needs_check(ty, &mut Vec::new()) {
            return;
        }
        let (r, m) = (x.refr(), x.m());
        let too_long = |len: &str, max: u32| {
            format!(
                "if {len} > {max} {{ return ::core::result::Result::Err({X}::EncodeError::TooLong {{ item: \"{path}\", len: {len}, max: {max} }}); }}"
            )
        };
        match ty {
            Ty::OpaqueVar(mx) | Ty::Str(mx) => self.w.line(&too_long(&format!("{m}.len()"), *mx)),
            Ty::VarArray(t, mx) => {
                self.w.line(&too_long(&format!("{m}.len()"), *mx));
                if self.needs_check(t, &mut Vec::new()) {
                    self.check_elements(t, &m, path);
                }
            }
            Ty::Array(t, _) => self.check_elements(t, &m, path),
            Ty::Optional(t) => {
                let v = self.var("v");
                self.w.open(&format!(
                    "if let ::core::option::Option::Some({v}) = {r} {{"
                ));
                let tt = self.ty(t, self.sup_prefix());
                self.w.line(&format!("let {v}: &{tt} = {v};"));
                self.check_stmts(t, &It::R(v), path);
                self.w.close("}");
            }
            Ty::Named(id) => match &self.m.types[*id].kind {
                Kind::Alias(f) => {
                    let f = f.clone();
                    self.check_stmts(&f.ty, x, path);
                }
                _ => self.w.line(&format!("{m}.xdr_check()?;")),
            },
            _ => {}
        }
    }
}
