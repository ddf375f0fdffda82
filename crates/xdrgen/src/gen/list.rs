//! Linked lists (`struct node { ...; node *next; }`): `iter` and
//! `link_list`, and a decoder, `Drop`, `Clone`, `PartialEq` and `Debug`
//! that walk the chain without recursion, so a long list cannot overflow
//! the stack; decoding stops at `max_list_len` nodes.

use super::Gen;
use super::X;
use crate::model::*;
use crate::names::bare;

impl Gen<'_> {
    pub(super) fn list_methods(&mut self, t: &TypeItem, fields: &[Field]) {
        let link = fields.last().map(|f| f.rust.clone()).unwrap_or_default();
        let name = &t.rust;
        self.w.line("");
        self.w.line("/// This node and the ones after it.");
        self.w.open(&format!(
            "pub fn iter(&self) -> impl ::core::iter::Iterator<Item = &{name}> + '_ {{"
        ));
        self.w.line(&format!(
            "::core::iter::successors(::core::option::Option::Some(self), |n| n.{link}.as_deref())"
        ));
        self.w.close("}");
        self.w.line("");
        self.w.line(&format!(
            "/// Links `nodes` into a list in order (each node's `{link}` is replaced);"
        ));
        self.w.line("/// `None` for no nodes.");
        self.w.open(&format!("pub fn link_list(nodes: impl ::core::iter::IntoIterator<Item = {name}>) -> ::core::option::Option<::std::boxed::Box<{name}>> {{"));
        self.w.line(&format!(
            "let mut nodes: ::std::vec::Vec<{name}> = nodes.into_iter().collect();"
        ));
        self.w.line(&format!("let mut head: ::core::option::Option<::std::boxed::Box<{name}>> = ::core::option::Option::None;"));
        self.w
            .open("while let ::core::option::Option::Some(mut node) = nodes.pop() {");
        self.w.line(&format!("node.{link} = head;"));
        self.w
            .line("head = ::core::option::Option::Some(::std::boxed::Box::new(node));");
        self.w.close("}");
        self.w.line("head");
        self.w.close("}");
    }

    pub(super) fn list_decode(&mut self, t: &TypeItem, fields: &[Field], depth: bool) {
        let link = fields.last().map(|f| f.rust.clone()).unwrap_or_default();
        let max = self.o.max_list_len;
        self.w
            .line("let mut nodes: ::std::vec::Vec<Self> = ::std::vec::Vec::new();");
        self.w.open("loop {");
        // A struct literal (fields decode in order) rather than locals, so
        // no member name can shadow `dec`.
        let mut inits: Vec<String> = Vec::new();
        for f in &fields[..fields.len() - 1] {
            let e = self.dec_expr(&f.ty, f.ddp.is_some(), depth);
            inits.push(format!("{}: {e}", f.rust));
        }
        inits.push(format!("{link}: ::core::option::Option::None"));
        self.w
            .line(&format!("let node = Self {{ {} }};", inits.join(", ")));
        self.w.line("let offset = dec.position();");
        self.w.line("let more = dec.get_bool()?;");
        self.w.line("nodes.push(node);");
        self.w.open("if !more {");
        self.w.line("break;");
        self.w.close("}");
        self.w.open(&format!("if nodes.len() >= {max} {{"));
        self.w.line(&format!(
            "return ::core::result::Result::Err({X}::XdrError::TooLong {{ offset, len: u32::try_from(nodes.len() + 1).unwrap_or(u32::MAX), max: {max} }});"
        ));
        self.w.close("}");
        self.w.close("}");
        self.w.line(&format!(
            "// Link the nodes back to front: no recursion ({}).",
            t.xdr
        ));
        self.w.line("let mut head: ::core::option::Option<::std::boxed::Box<Self>> = ::core::option::Option::None;");
        self.w
            .open("while let ::core::option::Option::Some(mut node) = nodes.pop() {");
        self.w.line(&format!("node.{link} = head;"));
        self.w
            .line("head = ::core::option::Option::Some(::std::boxed::Box::new(node));");
        self.w.close("}");
        self.w.line(&format!("head.map(|h| *h).ok_or({X}::XdrError::UnexpectedEnd {{ offset: dec.position(), needed: 4, remaining: 0 }})"));
    }

    pub(super) fn list_traits(&mut self, id: TypeId, t: &TypeItem, fields: &[Field]) {
        let name = t.rust.clone();
        let link = fields.last().map(|f| f.rust.clone()).unwrap_or_default();
        let data = &fields[..fields.len() - 1];
        self.w.line("");
        self.w
            .open(&format!("impl ::core::ops::Drop for {name} {{"));
        self.w.open("fn drop(&mut self) {");
        self.w.line(&format!("let mut next = self.{link}.take();"));
        self.w
            .open("while let ::core::option::Option::Some(mut node) = next {");
        self.w.line(&format!("next = node.{link}.take();"));
        self.w.close("}");
        self.w.close("}");
        self.w.close("}");
        self.w.line("");
        self.w
            .open(&format!("impl ::core::clone::Clone for {name} {{"));
        self.w.open("fn clone(&self) -> Self {");
        let copy = |who: &str| -> String {
            data.iter()
                .map(|f| {
                    if self.m.is_copy(&f.ty, &mut Vec::new()) {
                        format!("{0}: {who}.{0}, ", f.rust)
                    } else {
                        format!("{0}: {who}.{0}.clone(), ", f.rust)
                    }
                })
                .collect::<String>()
        };
        let (cn, cs) = (copy("n"), copy("self"));
        self.w.line(&format!("let copies = self.iter().map(|n| Self {{ {cn}{link}: ::core::option::Option::None }});"));
        self.w.line(&format!("match Self::link_list(copies) {{ ::core::option::Option::Some(h) => *h, ::core::option::Option::None => Self {{ {cs}{link}: ::core::option::Option::None }} }}"));
        self.w.close("}");
        self.w.close("}");
        self.w.line("");
        self.w
            .open(&format!("impl ::core::cmp::PartialEq for {name} {{"));
        self.w.open("fn eq(&self, other: &Self) -> bool {");
        self.w
            .line("let (mut a, mut b) = (self.iter(), other.iter());");
        self.w.open("loop {");
        self.w.open("match (a.next(), b.next()) {");
        let cmp = if data.is_empty() {
            "false".to_string()
        } else {
            data.iter()
                .map(|f| format!("x.{0} != y.{0}", f.rust))
                .collect::<Vec<_>>()
                .join(" || ")
        };
        self.w
            .open("(::core::option::Option::Some(x), ::core::option::Option::Some(y)) => {");
        self.w.open(&format!("if {cmp} {{"));
        self.w.line("return false;");
        self.w.close("}");
        self.w.close("}");
        self.w
            .line("(::core::option::Option::None, ::core::option::Option::None) => return true,");
        self.w.line("_ => return false,");
        self.w.close("}");
        self.w.close("}");
        self.w.close("}");
        self.w.close("}");
        if !self.m.has_float(&Ty::Named(id), &mut Vec::new()) {
            self.w.line("");
            self.w
                .line(&format!("impl ::core::cmp::Eq for {name} {{}}"));
        }
        self.w.line("");
        self.w
            .open(&format!("impl ::core::fmt::Debug for {name} {{"));
        self.w
            .open("fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {");
        self.w.line("let mut list = f.debug_list();");
        self.w.open("for n in self.iter() {");
        let fmt: String = data
            .iter()
            .map(|f| format!("{}: {{:?}}, ", bare(&f.rust)))
            .collect();
        let args: String = data.iter().map(|f| format!(", n.{}", f.rust)).collect();
        self.w.line(&format!(
            "list.entry(&format_args!(\"{name} {{{{ {fmt}.. }}}}\"{args}));"
        ));
        self.w.close("}");
        self.w.line("list.finish()");
        self.w.close("}");
        self.w.close("}");
    }
}
