//! The items of a `.x` file outside its programs: constants, enums,
//! structs and typedefs (unions are in `union.rs`, the iterative
//! linked-list code in `list.rs`), each with its codec and checks.

use super::codec::It;
use super::writer::W;
use super::{Gen, RESULT, X};
use crate::model::*;

impl Gen<'_> {
    pub(super) fn constant(&mut self, c: &ConstItem) {
        let ty = if (0..=i128::from(u32::MAX)).contains(&c.value) {
            "u32"
        } else if (i128::from(i32::MIN)..0).contains(&c.value) {
            "i32"
        } else if c.value > 0 && c.value <= i128::from(u64::MAX) {
            "u64"
        } else {
            "i64"
        };
        self.w.doc_comments(&c.doc);
        self.w
            .line(&format!("/// XDR: `const {} = {}`.", c.xdr, c.value));
        self.w
            .line(&format!("pub const {}: {ty} = {};", c.rust, c.value));
        self.w.line("");
    }

    pub(super) fn derives(&self, id: TypeId) -> String {
        let t = &self.m.types[id];
        let mut d = vec!["Debug", "Clone", "PartialEq"];
        if !self.m.has_float(&Ty::Named(id), &mut Vec::new()) {
            d.push("Eq");
        }
        if self.m.is_copy(&Ty::Named(id), &mut Vec::new()) {
            d.push("Copy");
        }
        if matches!(t.kind, Kind::Enum(_)) {
            d.extend(["Hash", "PartialOrd", "Ord"]);
        }
        format!("#[derive({})]", d.join(", "))
    }

    pub(super) fn type_item(&mut self, id: TypeId) {
        let t = self.m.types[id].clone();
        match &t.kind {
            Kind::Enum(items) => self.enum_item(id, &t, items),
            Kind::Struct(fields) => self.struct_item(id, &t, fields),
            Kind::Union(u) => self.union_item(id, &t, u),
            Kind::Alias(f) => self.alias_item(&t, f),
        }
        self.w.line("");
    }

    fn enum_item(&mut self, id: TypeId, t: &TypeItem, items: &[EnumItem]) {
        let name = t.rust.clone();
        self.item_doc(&t.doc, &format!("enum {}", t.xdr), t.pos.line);
        self.w.line(&self.derives(id));
        self.w.line("#[repr(i32)]");
        self.w.open(&format!("pub enum {name} {{"));
        let written = |it: &EnumItem| match it.written {
            Some(w) => format!(
                "/// XDR: `{} = {w:#x}` (on the wire the int {}).",
                it.xdr, it.value
            ),
            None => format!("/// XDR: `{} = {}`.", it.xdr, it.value),
        };
        for it in items.iter().filter(|it| it.alias_of.is_none()) {
            self.w.doc_comments(&it.doc);
            self.w.line(&written(it));
            self.w.line(&format!("{} = {},", it.rust, it.value));
        }
        self.w.close("}");
        self.w.line("");
        self.w.open(&format!("impl {name} {{"));
        for it in items {
            let Some(p) = it.alias_of else { continue };
            self.w.doc_comments(&it.doc);
            self.w.line(&written(it));
            self.w.line(&format!(
                "/// Another name for [`{name}::{}`] (an alias: it decodes as that item).",
                items[p].rust
            ));
            self.w.line("#[allow(non_upper_case_globals)]");
            self.w.line(&format!(
                "pub const {}: Self = Self::{};",
                it.rust, items[p].rust
            ));
            self.w.line("");
        }
        self.w.line("/// The value on the wire.");
        self.w.line("pub const fn value(self) -> i32 {");
        self.w.line("    self as i32");
        self.w.line("}");
        self.w.line("");
        self.w.line("/// The item with this value, if any.");
        self.w
            .open("pub const fn from_value(value: i32) -> ::core::option::Option<Self> {");
        self.w.open("match value {");
        for it in items.iter().filter(|it| it.alias_of.is_none()) {
            self.w.line(&format!(
                "{} => ::core::option::Option::Some(Self::{}),",
                it.value, it.rust
            ));
        }
        self.w.line("_ => ::core::option::Option::None,");
        self.w.close("}");
        self.w.close("}");
        self.w.line("");
        self.w
            .line("/// Always `Ok`: every item encodes (for symmetry with structs and unions).");
        self.w.open(&format!(
            "pub fn xdr_check(&self) -> {RESULT}<(), {X}::EncodeError> {{"
        ));
        self.w.line("::core::result::Result::Ok(())");
        self.w.close("}");
        self.common_methods(&name, false);
        self.w.close("}");
        self.w.line("");
        self.marshal_impl(&name, &["enc.put_i32(*self as i32);".to_string()]);
        self.open_unmarshal_impl(&name, false);
        self.w.line("let offset = dec.position();");
        self.w.line("let value = dec.get_i32()?;");
        self.w.line(&format!(
            "Self::from_value(value).ok_or({X}::XdrError::BadDiscriminant {{ what: \"enum {}\", offset, value: value as u32 }})",
            t.xdr
        ));
        self.w.close("}");
        self.w.close("}");
    }

    fn struct_item(&mut self, id: TypeId, t: &TypeItem, fields: &[Field]) {
        let name = t.rust.clone();
        self.item_doc(&t.doc, &format!("struct {}", t.xdr), t.pos.line);
        if t.list_node {
            let f = self.file.clone();
            self.w.line("///");
            self.w.line(&format!(
                "/// A linked list ({f}): `{}` points to the next node. Lists are encoded,",
                fields.last().map(|f| f.xdr.as_str()).unwrap_or("")
            ));
            self.w.line(
                "/// decoded, dropped, cloned and compared iteratively, so a long list cannot",
            );
            self.w.line(&format!(
                "/// overflow the stack; decoding accepts at most {} nodes. `Debug` prints",
                self.o.max_list_len
            ));
            self.w
                .line("/// the nodes as a list. Build one with `link_list`, walk it with `iter`.");
            self.w
                .line("#[allow(clippy::derive_partial_eq_without_eq)]");
        } else {
            self.w.line(&self.derives(id));
        }
        self.w.open(&format!("pub struct {name} {{"));
        for f in fields {
            self.field_doc(f);
            let ty = self.ty(&f.ty, "");
            self.w.line(&format!("pub {}: {ty},", f.rust));
        }
        self.w.close("}");
        self.w.line("");
        self.w.open(&format!("impl {name} {{"));
        // xdr_check
        self.w
            .line("/// Checks every length against its XDR maximum (what encoding assumes).");
        self.w.open(&format!(
            "pub fn xdr_check(&self) -> {RESULT}<(), {X}::EncodeError> {{"
        ));
        if t.list_node {
            let link = fields.last().map(|f| f.rust.clone()).unwrap_or_default();
            self.w
                .line("let mut cur = ::core::option::Option::Some(self);");
            self.w
                .open("while let ::core::option::Option::Some(node) = cur {");
            for f in &fields[..fields.len() - 1] {
                let path = format!("{}.{}", t.xdr, f.xdr);
                self.check_stmts(&f.ty, &It::P(format!("node.{}", f.rust)), &path);
            }
            self.w.line(&format!("cur = node.{link}.as_deref();"));
            self.w.close("}");
        } else {
            for f in fields {
                let path = format!("{}.{}", t.xdr, f.xdr);
                self.check_stmts(&f.ty, &It::P(format!("self.{}", f.rust)), &path);
            }
        }
        self.w.line("::core::result::Result::Ok(())");
        self.w.close("}");
        if t.list_node {
            self.list_methods(t, fields);
        }
        if t.recursive {
            self.depth_fn_struct(t, fields);
        }
        self.common_methods(&name, true);
        self.w.close("}");
        self.w.line("");
        // Marshal
        let mut body = Vec::new();
        let saved = std::mem::replace(
            &mut self.w,
            W {
                out: String::new(),
                ind: 0,
            },
        );
        if t.list_node {
            let link = fields.last().map(|f| f.rust.clone()).unwrap_or_default();
            self.w.line("let mut cur = self;");
            self.w.open("loop {");
            for f in &fields[..fields.len() - 1] {
                self.enc_stmts(&f.ty, f.ddp.is_some(), &It::P(format!("cur.{}", f.rust)));
            }
            self.w.open(&format!("match &cur.{link} {{"));
            self.w.open("::core::option::Option::Some(next) => {");
            self.w.line("enc.put_bool(true);");
            self.w.line("cur = &**next;");
            self.w.close("}");
            self.w.open("::core::option::Option::None => {");
            self.w.line("enc.put_bool(false);");
            self.w.line("break;");
            self.w.close("}");
            self.w.close("}");
            self.w.close("}");
        } else {
            for f in fields {
                self.enc_stmts(&f.ty, f.ddp.is_some(), &It::P(format!("self.{}", f.rust)));
            }
        }
        let enc = std::mem::replace(&mut self.w, saved);
        body.extend(enc.out.lines().map(str::to_string));
        if body.is_empty() {
            body.push("let _ = enc;".into());
        }
        self.marshal_impl(&name, &body);
        // Unmarshal
        self.open_unmarshal_impl(&name, false);
        if t.recursive {
            self.w.line("Self::xdr_decode_depth(dec, 0)");
        } else if t.list_node {
            self.list_decode(t, fields, false);
        } else {
            self.w.open("::core::result::Result::Ok(Self {");
            for f in fields {
                let e = self.dec_expr(&f.ty, f.ddp.is_some(), false);
                self.w.line(&format!("{}: {e},", f.rust));
            }
            self.w.close("})");
        }
        self.w.close("}");
        self.w.close("}");
        if t.list_node {
            self.list_traits(id, t, fields);
        }
    }

    fn depth_fn_struct(&mut self, t: &TypeItem, fields: &[Field]) {
        self.w.line("");
        self.depth_fn_head(t);
        if t.list_node {
            // The nodes of one list are at one depth; what their other
            // members nest is one deeper.
            self.list_decode(t, fields, true);
            self.w.close("}");
            return;
        }
        self.w.open("::core::result::Result::Ok(Self {");
        for f in fields {
            let e = self.dec_expr(&f.ty, f.ddp.is_some(), true);
            self.w.line(&format!("{}: {e},", f.rust));
        }
        self.w.close("})");
        self.w.close("}");
    }

    pub(super) fn depth_fn_head(&mut self, t: &TypeItem) {
        self.w.line("#[doc(hidden)]");
        self.w
            .line("/// Decodes, failing beyond the nesting limit of recursive types.");
        self.w.open(&format!("pub fn xdr_decode_depth(dec: &mut {X}::Decoder<'_>, depth: u32) -> {RESULT}<Self, {X}::XdrError> {{"));
        self.w.open(&format!("if depth >= {} {{", self.o.max_depth));
        self.w.line(&format!("return ::core::result::Result::Err({X}::XdrError::TooDeep {{ what: \"{}\", offset: dec.position(), max: {} }});", t.xdr, self.o.max_depth));
        self.w.close("}");
    }

    fn alias_item(&mut self, t: &TypeItem, f: &Field) {
        let name = t.rust.clone();
        let ty = self.ty(&f.ty, "");
        let base = t.fn_base.clone();
        let ddp = if f.ddp.is_some() {
            " (DDP-eligible)"
        } else {
            ""
        };
        let x = self.xdr(&f.ty, &t.xdr);
        self.item_doc(&t.doc, &format!("typedef {x}{ddp}"), t.pos.line);
        self.w.line(&format!("pub type {name} = {ty};"));
        self.w.line("");
        self.w.line(&format!(
            "/// Encodes a `{}` (typedefs are Rust type aliases, so their codecs are functions).",
            t.xdr
        ));
        self.w.open(&format!(
            "pub fn encode_{base}(value: &{name}, enc: &mut {X}::Encoder<'_>) {{"
        ));
        self.enc_stmts(&f.ty, f.ddp.is_some(), &It::R("value".into()));
        self.w.close("}");
        self.w.line("");
        self.w.line(&format!("/// Decodes a `{}`.", t.xdr));
        self.w.open(&format!("pub fn decode_{base}(dec: &mut {X}::Decoder<'_>) -> {RESULT}<{name}, {X}::XdrError> {{"));
        let e = self.dec_expr(&f.ty, f.ddp.is_some(), false);
        if !e.starts_with('{') && e.ends_with(")?") && e.matches('?').count() == 1 {
            self.w.line(&e[..e.len() - 1]);
        } else {
            self.w.line(&format!("::core::result::Result::Ok({e})"));
        }
        self.w.close("}");
        self.w.line("");
        self.w.line(&format!(
            "/// Checks a `{}` against its XDR maximum sizes.",
            t.xdr
        ));
        self.w.open(&format!(
            "pub fn check_{base}(value: &{name}) -> {RESULT}<(), {X}::EncodeError> {{"
        ));
        self.check_stmts(&f.ty, &It::R("value".into()), &t.xdr);
        self.w.line("let _ = value;");
        self.w.line("::core::result::Result::Ok(())");
        self.w.close("}");
        self.w.line("");
        self.w
            .line(&format!("/// The XDR encoding of a `{}`.", t.xdr));
        self.w.open(&format!(
            "pub fn {base}_to_xdr(value: &{name}) -> ::bytes::Bytes {{"
        ));
        self.w.line("let mut buf = ::bytes::BytesMut::new();");
        self.w.line(&format!(
            "encode_{base}(value, &mut {X}::Encoder::new(&mut buf));"
        ));
        self.w.line("buf.freeze()");
        self.w.close("}");
        self.w.line("");
        self.w.line(&format!(
            "/// Decodes a `{}` that must fill `bytes` exactly.",
            t.xdr
        ));
        self.w.open(&format!(
            "pub fn {base}_from_xdr(bytes: &::bytes::Bytes) -> {RESULT}<{name}, {X}::XdrError> {{"
        ));
        self.w
            .line(&format!("let mut dec = {X}::Decoder::from_bytes(bytes);"));
        self.w
            .line(&format!("let value = decode_{base}(&mut dec)?;"));
        self.w.line("dec.expect_end()?;");
        self.w.line("::core::result::Result::Ok(value)");
        self.w.close("}");
    }
}
