//! The client stubs of a program version: one `async fn` per procedure,
//! with the binding's call hints or explicit ones.

use super::{Gen, M, RESULT};
use crate::model::*;
use crate::names::{bare, with_hints};

impl Gen<'_> {
    pub(super) fn client(&mut self, v: &VersionIr) {
        self.w.line(&format!(
            "/// Client stubs for `{}`: one `async fn` per procedure.",
            v.xdr
        ));
        self.w.line("///");
        self.w
            .line("/// Arguments are checked against their XDR limits before anything is");
        self.w
            .line("/// sent (`RpcError::BadArgs`); call hints come from the [`Ulb`].");
        self.w.line("#[derive(Clone)]");
        self.w.open("pub struct Client {");
        self.w.line(&format!("rpc: {M}::Client,"));
        self.w.line("ulb: ::std::sync::Arc<dyn Ulb>,");
        self.w.close("}");
        self.w.line("");
        self.w.open("impl ::core::fmt::Debug for Client {");
        self.w
            .open("fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {");
        self.w
            .line("f.debug_struct(\"Client\").field(\"rpc\", &self.rpc).finish_non_exhaustive()");
        self.w.close("}");
        self.w.close("}");
        self.w.line("");
        self.w.open("impl Client {");
        self.w
            .line("/// Stubs over `rpc`, with the binding of the `.x` file.");
        self.w
            .open(&format!("pub fn new(rpc: {M}::Client) -> Self {{"));
        self.w
            .line("Self { rpc, ulb: ::std::sync::Arc::new(DefaultUlb) }");
        self.w.close("}");
        self.w.line("");
        self.w.line("/// Stubs over `rpc` with another binding.");
        self.w.open(&format!(
            "pub fn with_ulb(rpc: {M}::Client, ulb: ::std::sync::Arc<dyn Ulb>) -> Self {{"
        ));
        self.w.line("Self { rpc, ulb }");
        self.w.close("}");
        self.w.line("");
        self.w.line("/// The RPC client underneath.");
        self.w
            .open(&format!("pub fn rpc(&self) -> &{M}::Client {{"));
        self.w.line("&self.rpc");
        self.w.close("}");
        for pr in &v.procs {
            let a = self.arg_shape(pr, true);
            let r = self.result_ty(pr);
            let cm = pr.wrapper.clone();
            let m = bare(&pr.method).to_string();
            let c = pr.rust_const.clone();
            self.w.line("");
            self.w.doc_comments(&pr.doc);
            self.w.line(&format!(
                "/// Calls `{}` (procedure {}) with the hints of [`Ulb::{m}`].",
                pr.xdr, pr.number
            ));
            self.arg_names_doc(pr);
            self.many_args(pr);
            self.w.open(&format!(
                "pub async fn {}(&self{}) -> {RESULT}<{r}, {M}::RpcError> {{",
                pr.method, a.params
            ));
            let hc = if a.hint_call.is_empty() {
                String::new()
            } else {
                a.hint_call.clone()
            };
            self.w
                .line(&format!("let hints = self.ulb.{}({hc});", pr.method));
            let pass: String = match pr.args.len() {
                0 => String::new(),
                1 => "args, ".into(),
                n => (0..n).map(|i| format!("arg{i}, ")).collect(),
            };
            self.w
                .line(&format!("self.{}({pass}&hints).await", with_hints(&m)));
            self.w.close("}");
            self.w.line("");
            self.w
                .line(&format!("/// Calls `{}` with explicit call hints.", pr.xdr));
            let ps = a.params.trim_start_matches(", ");
            let ps = if ps.is_empty() {
                String::new()
            } else {
                format!("{ps}, ")
            };
            self.many_args(pr);
            self.w.open(&format!("pub async fn {}(&self, {ps}hints: &{M}::CallHints) -> {RESULT}<{r}, {M}::RpcError> {{", with_hints(&m)));
            self.w.line(&format!("let args = {};", a.wrap));
            self.w
                .line(&format!("args.check().map_err({M}::RpcError::BadArgs)?;"));
            self.w.line(&format!(
                "let res: Res{cm} = self.rpc.call(PROGRAM, VERSION, {c}, &args, hints).await?;"
            ));
            if pr.result.is_some() {
                self.w.line("::core::result::Result::Ok(res.0)");
            } else {
                self.w
                    .line("let Res{cm} = res;".replace("{cm}", &cm).as_str());
                self.w.line("::core::result::Result::Ok(())");
            }
            self.w.close("}");
        }
        self.w.close("}");
        self.w.line("");
    }

    /// Which parameter is which of the arguments the `.x` file names
    /// (`int F(int a, int b)`, rpcgen's extension).
    pub(super) fn arg_names_doc(&mut self, pr: &ProcIr) {
        if pr.arg_names.iter().all(Option::is_none) {
            return;
        }
        let params: Vec<String> = match pr.args.len() {
            1 => vec!["args".into()],
            n => (0..n).map(|i| format!("arg{i}")).collect(),
        };
        let named: Vec<String> = params
            .iter()
            .zip(&pr.arg_names)
            .filter_map(|(p, n)| n.as_ref().map(|n| format!("`{p}` is `{n}`")))
            .collect();
        self.w.line("///");
        self.w.line(&format!(
            "/// Arguments named in the `.x` file: {}.",
            named.join(", ")
        ));
    }
}
