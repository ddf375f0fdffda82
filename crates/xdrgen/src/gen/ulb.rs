//! The generated Upper-Layer Binding of a program version (RFC 8166 §6):
//! a `hints_*` function per procedure from the `.x` pragmas, the `Ulb`
//! trait that defaults to them, and `DefaultUlb`. (The binding itself is
//! worked out from the pragmas in `crate::ulb`.)

use super::program::sz_doc;
use super::{Gen, M};
use crate::model::*;
use crate::names::bare;
use crate::ulb::as_u32;

impl Gen<'_> {
    pub(super) fn hints(&mut self, v: &VersionIr) {
        for pr in &v.procs {
            let uses = pr
                .ddp_results
                .iter()
                .chain(pr.max_results.iter())
                .chain(pr.reduced_results.iter())
                .any(|s| matches!(s, Sz::E(_)));
            let a = self.arg_shape(pr, uses);
            self.w.line(&format!(
                "/// The call hints of `{}` (its Upper-Layer Binding, RFC 8166 §6):",
                pr.xdr
            ));
            let ddp = if pr.ddp_results.is_empty() {
                "no DDP-eligible results".to_string()
            } else {
                format!(
                    "Write chunks of {}",
                    pr.ddp_results
                        .iter()
                        .map(|s| format!("`{}`", sz_doc(s)))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            let mx = pr
                .max_results
                .as_ref()
                .map_or("unknown maximum result size".to_string(), |s| {
                    format!("results of at most `{}` bytes", sz_doc(s))
                });
            let red = pr.reduced_results.as_ref().map_or(String::new(), |s| {
                format!(
                    "; at most `{}` bytes with the DDP-eligible items in their Write chunks",
                    sz_doc(s)
                )
            });
            self.w.line(&format!("/// {ddp}; {mx}{red}."));
            self.w.open(&format!(
                "pub fn hints_{}({}) -> {M}::CallHints {{",
                bare(&pr.method),
                a.hint_param
            ));
            let mut e = format!("{M}::CallHints::new()");
            for s in &pr.ddp_results {
                e.push_str(&format!(".ddp_result({})", as_u32(s)));
            }
            if let Some(s) = &pr.max_results {
                e.push_str(&format!(".max_results({})", as_u32(s)));
            }
            if let Some(s) = &pr.reduced_results {
                e.push_str(&format!(".reduced_results({})", as_u32(s)));
            }
            self.w.line(&e);
            self.w.close("}");
            self.w.line("");
        }
        self.w
            .line("/// The Upper-Layer Binding's call hints, per procedure. The defaults");
        self.w
            .line("/// come from the `.x` file (`hints_*`); override a method to size a");
        self.w
            .line("/// Write or Reply chunk differently, and pass the implementation to");
        self.w.line("/// [`Client::with_ulb`].");
        self.w.open("pub trait Ulb: Send + Sync {");
        for pr in &v.procs {
            let a = self.arg_shape(pr, true);
            let m = bare(&pr.method).to_string();
            self.w.line(&format!(
                "/// Hints for `{}`; by default [`hints_{m}`].",
                pr.xdr
            ));
            let call = if a.hint_param.is_empty() {
                String::new()
            } else {
                "args".to_string()
            };
            let param = if a.hint_param.is_empty() {
                String::new()
            } else {
                format!(", {}", a.hint_param)
            };
            self.w.open(&format!(
                "fn {}(&self{param}) -> {M}::CallHints {{",
                pr.method
            ));
            self.w.line(&format!("hints_{m}({call})"));
            self.w.close("}");
        }
        self.w.close("}");
        self.w.line("");
        self.w
            .line("/// The binding exactly as the `.x` file gives it.");
        self.w.line("#[derive(Debug, Clone, Copy, Default)]");
        self.w.line("pub struct DefaultUlb;");
        self.w.line("");
        self.w.line("impl Ulb for DefaultUlb {}");
        self.w.line("");
    }
}
