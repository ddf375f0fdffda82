//! Programs: the program and version constants, one module per version
//! with its procedure numbers and the argument and result wrappers the
//! stubs marshal; the module's call hints, client and server are in
//! `ulb.rs`, `client.rs` and `server.rs`.

use super::codec::It;
use super::writer::W;
use super::{ArgShape, Gen, RESULT, X};
use crate::model::*;

impl Gen<'_> {
    pub(super) fn arg_shape(&self, pr: &ProcIr, uses_args: bool) -> ArgShape {
        let tys: Vec<String> = pr.args.iter().map(|t| self.ty(t, "super::")).collect();
        let w = format!("Args{}", pr.wrapper);
        let hp = if uses_args { "args" } else { "_args" };
        match tys.len() {
            0 => ArgShape {
                params: String::new(),
                hint_param: String::new(),
                hint_call: String::new(),
                wrap: w.clone(),
                unwrap: String::new(),
            },
            1 => ArgShape {
                params: format!(", args: {}", tys[0]),
                hint_param: format!("{hp}: &{}", tys[0]),
                hint_call: "&args".into(),
                wrap: format!("{w}(args)"),
                unwrap: ", a.0".into(),
            },
            n => ArgShape {
                params: tys
                    .iter()
                    .enumerate()
                    .map(|(i, t)| format!(", arg{i}: {t}"))
                    .collect(),
                hint_param: format!(
                    "{hp}: ({})",
                    tys.iter()
                        .map(|t| format!("&{t}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                hint_call: format!(
                    "({})",
                    (0..n)
                        .map(|i| format!("&arg{i}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                wrap: format!(
                    "{w}({})",
                    (0..n)
                        .map(|i| format!("arg{i}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                unwrap: (0..n).map(|i| format!(", a.{i}")).collect(),
            },
        }
    }

    /// A procedure of many arguments (rpcgen -N style) gives methods of
    /// as many parameters, as the `.x` file asks.
    pub(super) fn many_args(&mut self, pr: &ProcIr) {
        if pr.args.len() >= 5 {
            self.w.line("#[allow(clippy::too_many_arguments)]");
        }
    }

    pub(super) fn result_ty(&self, pr: &ProcIr) -> String {
        pr.result
            .as_ref()
            .map_or("()".to_string(), |t| self.ty(t, "super::"))
    }

    pub(super) fn program(&mut self, p: &ProgramIr) {
        let f = self.file.clone();
        self.w.doc_comments(&p.doc);
        self.w.line(&format!(
            "/// XDR: `program {}` ({f}), number {:#x}.",
            p.xdr, p.number
        ));
        self.w.line(&format!(
            "pub const {}: u32 = {:#x};",
            p.rust_const, p.number
        ));
        self.w.line("");
        for v in &p.versions {
            self.w
                .line(&format!("/// XDR: `version {}` of `{}`.", v.xdr, p.xdr));
            self.w
                .line(&format!("pub const {}: u32 = {};", v.rust_const, v.number));
            self.w.line("");
            self.version(p, v);
        }
    }

    fn version(&mut self, p: &ProgramIr, v: &VersionIr) {
        self.in_module = true;
        self.w.doc_comments(&v.doc);
        // A module's outer doc links from the enclosing scope (and a link
        // cannot name a raw identifier).
        let link = |item: &str| {
            if v.module.starts_with("r#") {
                format!("`{item}`")
            } else {
                format!("[`{item}`]({}::{item})", v.module)
            }
        };
        self.w.line(&format!(
            "/// Version {} (`{}`) of program {:#x} (`{}`): {} stubs, the",
            v.number,
            v.xdr,
            p.number,
            p.xdr,
            link("Client")
        ));
        self.w.line(&format!(
            "/// {} trait and its {}ing into `Services`, and the",
            link("Server"),
            link("register")
        ));
        self.w.line(&format!(
            "/// Upper-Layer Binding ({}, `hints_*`).",
            link("Ulb")
        ));
        self.w.line("///");
        self.w
            .line("/// | proc | name | DDP-eligible results (Write chunks) | maximum results |");
        self.w.line("/// |---|---|---|---|");
        for pr in &v.procs {
            let ddp = if pr.ddp_results.is_empty() {
                "none".to_string()
            } else {
                pr.ddp_results
                    .iter()
                    .map(|s| format!("`{}`", sz_doc(s)))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let mx = pr
                .max_results
                .as_ref()
                .map_or("unknown".to_string(), |s| format!("`{}`", sz_doc(s)));
            self.w.line(&format!(
                "/// | {} | `{}` | {ddp} | {mx} |",
                pr.number, pr.xdr
            ));
        }
        self.w.open(&format!("pub mod {} {{", v.module));
        self.w
            .line(&format!("/// The program number (`{}`).", p.xdr));
        self.w
            .line(&format!("pub const PROGRAM: u32 = {:#x};", p.number));
        self.w
            .line(&format!("/// The version number (`{}`).", v.xdr));
        self.w
            .line(&format!("pub const VERSION: u32 = {};", v.number));
        self.w.line("");
        for pr in &v.procs {
            self.w
                .line(&format!("/// Procedure number of `{}`.", pr.xdr));
            self.w.line(&format!(
                "pub const {}: u32 = {};",
                pr.rust_const, pr.number
            ));
        }
        self.w.line("");
        for pr in &v.procs {
            self.wrappers(pr);
        }
        self.hints(v);
        self.client(v);
        self.server(v);
        self.w.close("}");
        self.w.line("");
        self.in_module = false;
    }

    fn wrappers(&mut self, pr: &ProcIr) {
        let cm = pr.wrapper.clone();
        for (kind, tys) in [
            ("Args", pr.args.clone()),
            ("Res", pr.result.iter().cloned().collect::<Vec<_>>()),
        ] {
            let name = format!("{kind}{cm}");
            let fields: Vec<String> = tys.iter().map(|t| self.ty(t, "super::")).collect();
            if fields.is_empty() {
                self.w.line(&format!("struct {name};"));
            } else {
                self.w
                    .line(&format!("struct {name}({});", fields.join(", ")));
            }
            self.w.line("");
            let saved = std::mem::replace(
                &mut self.w,
                W {
                    out: String::new(),
                    ind: 0,
                },
            );
            for (i, t) in tys.iter().enumerate() {
                self.enc_stmts(t, false, &It::P(format!("self.{i}")));
            }
            if tys.is_empty() {
                self.w.line("let _ = enc;");
            }
            let body: Vec<String> = std::mem::replace(&mut self.w, saved)
                .out
                .lines()
                .map(str::to_string)
                .collect();
            self.marshal_impl(&name, &body);
            self.open_unmarshal_impl(&name, false);
            if tys.is_empty() {
                self.w.line("let _ = dec;");
                self.w.line(&format!("::core::result::Result::Ok({name})"));
            } else {
                let es: Vec<String> = tys.iter().map(|t| self.dec_expr(t, false, false)).collect();
                self.w.line(&format!(
                    "::core::result::Result::Ok({name}({}))",
                    es.join(", ")
                ));
            }
            self.w.close("}");
            self.w.close("}");
            self.w.line("");
            self.w.open(&format!("impl {name} {{"));
            self.w.open(&format!(
                "fn check(&self) -> {RESULT}<(), {X}::EncodeError> {{"
            ));
            for (i, t) in tys.iter().enumerate() {
                let what = if kind == "Args" {
                    "arguments"
                } else {
                    "results"
                };
                self.check_stmts(
                    t,
                    &It::P(format!("self.{i}")),
                    &format!("{} {what}", pr.xdr),
                );
            }
            self.w.line("::core::result::Result::Ok(())");
            self.w.close("}");
            self.w.close("}");
            self.w.line("");
        }
    }
}

/// A size for documentation.
pub(super) fn sz_doc(s: &Sz) -> String {
    match s {
        Sz::C(n) => n.to_string(),
        Sz::E(e) => e.clone(),
    }
}
