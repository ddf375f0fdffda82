//! The server side of a program version: the `Server` trait (procedures
//! not implemented answer `PROC_UNAVAIL`) and `register`, which decodes,
//! dispatches and checks the results, and answers procedure 0 (NULL) as
//! rpcgen's servers do when the version does not declare it.

use super::{Gen, M, RESULT};
use crate::model::*;

impl Gen<'_> {
    pub(super) fn server(&mut self, v: &VersionIr) {
        self.w.line(&format!(
            "/// The server side of `{}`: implement the procedures you serve",
            v.xdr
        ));
        self.w
            .line("/// (the others answer `PROC_UNAVAIL`; procedure 0 answers with no");
        self.w
            .line("/// results, declared or not, as rpcgen's servers do) and [`register`]");
        self.w.line("/// the implementation.");
        self.w.line("///");
        self.w
            .line("/// Arguments arrive decoded and checked (a call whose arguments do not");
        self.w
            .line("/// decode is answered `GARBAGE_ARGS` without reaching the trait); results");
        self.w
            .line("/// that break their XDR limits are answered `SYSTEM_ERR`.");
        self.w.open("pub trait Server: Send + Sync + 'static {");
        for pr in &v.procs {
            let a = self.arg_shape(pr, true);
            let r = self.result_ty(pr);
            self.w.doc_comments(&pr.doc);
            self.w
                .line(&format!("/// `{}` (procedure {}).", pr.xdr, pr.number));
            let params = a
                .params
                .replace(", args:", ", _args:")
                .replace(", arg", ", _arg");
            self.many_args(pr);
            self.w.open(&format!(
                "fn {}(&self, _info: {M}::CallInfo{params}) -> impl ::core::future::Future<Output = {RESULT}<{r}, {M}::ProcError>> + Send {{",
                pr.method
            ));
            if pr.number == 0 && pr.args.is_empty() && pr.result.is_none() {
                self.w.line("async { ::core::result::Result::Ok(()) }");
            } else {
                self.w.line(&format!(
                    "async {{ ::core::result::Result::Err({M}::ProcError::ProcUnavail) }}"
                ));
            }
            self.w.close("}");
        }
        self.w.close("}");
        self.w.line("");
        let declares_null = v.procs.iter().any(|pr| pr.number == 0);
        self.w
            .line("/// Registers `server` as this program version in `services`.");
        if !declares_null {
            self.w.line("///");
            self.w
                .line("/// Procedure 0 (NULL), which the `.x` file does not declare, answers with");
            self.w
                .line("/// no results, as rpcgen's servers do (an `rpcinfo -t` ping works).");
        }
        self.w.open(&format!("pub fn register<S: Server>(services: &mut {M}::Services, server: ::std::sync::Arc<S>) {{"));
        self.w
            .line("let version = services.program(PROGRAM, VERSION);");
        if !declares_null {
            self.w.line("version.null();");
        }
        for pr in &v.procs {
            let a = self.arg_shape(pr, true);
            let cm = pr.wrapper.clone();
            let c = pr.rust_const.clone();
            self.w.open("{");
            self.w.line("let server = server.clone();");
            self.w
                .open(&format!("version.proc({c}, move |info, a: Args{cm}| {{"));
            self.w.line("let server = server.clone();");
            if pr.args.is_empty() {
                self.w.line("let _ = a;");
            }
            self.w.open("async move {");
            let wrap = if pr.result.is_some() {
                format!("Res{cm}")
            } else {
                String::new()
            };
            if pr.result.is_some() {
                self.w.line(&format!(
                    "let r = {wrap}(server.{}(info{}).await?);",
                    pr.method, a.unwrap
                ));
            } else {
                self.w
                    .line(&format!("server.{}(info{}).await?;", pr.method, a.unwrap));
                self.w.line(&format!("let r = Res{cm};"));
            }
            self.w.open("match r.check() {");
            self.w.line(&format!("::core::result::Result::Ok(()) => ::core::result::Result::Ok::<Res{cm}, {M}::ProcError>(r),"));
            self.w.line(&format!("::core::result::Result::Err(_) => ::core::result::Result::Err({M}::ProcError::SystemErr),"));
            self.w.close("}");
            self.w.close("}");
            self.w.close("});");
            self.w.close("}");
        }
        self.w.close("}");
    }
}
