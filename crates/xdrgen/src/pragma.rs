//! The Upper-Layer Binding pragmas, written in comments so that plain
//! rpcgen ignores them:
//!
//! * `/* @ddp */` — the opaque or string declaration it stands next to is
//!   DDP-eligible (RFC 8166 §6): it travels through
//!   `put_opaque_ddp`/`get_opaque_ddp`. In results, the requester
//!   provisions a Write chunk as large as the declared maximum.
//! * `/* @ddp(BOUND) */` — the same, and in results the Write chunk is
//!   `BOUND` bytes (capped at the declared maximum): a number, a
//!   constant, or `args.FIELD[.FIELD...]`, an unsigned field of the
//!   call's arguments (NFS READ: `@ddp(args.count)`).
//! * `/* @max_results(TERM + TERM ...) */` on a procedure — the maximum
//!   size of its results when it cannot be computed from the types (lists,
//!   `<>` without bound) or depends on the arguments. A term is a number,
//!   a constant, `args.FIELD...` or `size(args...)` (the XDR size of an
//!   argument item).
//!
//! Text after the pragma, separated by a space, is commentary.

use crate::ast::{Pragma, Term};
use crate::error::{Diagnostic, Pos, Reporter};
use crate::lexer::Comment;

pub(crate) fn parse_pragma(c: &Comment, rep: &Reporter<'_>) -> Result<Pragma, Diagnostic> {
    let text = c.text.trim_start_matches('*').trim();
    let body = &text[1..];
    let name: String = body
        .chars()
        .take_while(|ch| ch.is_ascii_alphanumeric() || *ch == '_')
        .collect();
    let rest = &body[name.len()..];
    let pos = c.pos;
    let err = |msg: String| rep.diag(pos, msg);
    let (inner, after) = if let Some(r) = rest.strip_prefix('(') {
        let Some(close) = r.find(')').map(|i| {
            // `size(...)` nests one level.
            let open_inner = r[..i].matches('(').count();
            if open_inner > 0 {
                r[i + 1..].find(')').map_or(r.len(), |j| i + 1 + j)
            } else {
                i
            }
        }) else {
            return Err(err(format!(
                "pragma `@{name}(` is not closed: expected `)`"
            )));
        };
        if close >= r.len() {
            return Err(err(format!(
                "pragma `@{name}(` is not closed: expected `)`"
            )));
        }
        (Some(&r[..close]), &r[close + 1..])
    } else {
        (None, rest)
    };
    if !after.is_empty() && !after.starts_with(char::is_whitespace) && !after.starts_with(':') {
        return Err(err(format!(
            "unexpected `{after}` after pragma `@{name}`: write commentary after a space"
        )));
    }
    match name.as_str() {
        "ddp" => {
            let bound = match inner {
                None => None,
                Some(s) => {
                    let terms = parse_terms(s, pos, rep)?;
                    if terms.len() != 1 || matches!(terms[0], Term::Size(_)) {
                        return Err(err(format!(
                            "`@ddp({s})`: expected one bound: a number, a constant or `args.FIELD`"
                        )));
                    }
                    terms.into_iter().next()
                }
            };
            Ok(Pragma::Ddp { pos, bound })
        }
        "max_results" => {
            let Some(s) = inner else {
                return Err(err(
                    "`@max_results` needs an expression: `@max_results(4 + args.count)`".into(),
                ));
            };
            Ok(Pragma::MaxResults {
                pos,
                terms: parse_terms(s, pos, rep)?,
            })
        }
        other => Err(err(format!(
            "unknown pragma `@{other}`: the pragmas are `@ddp`, `@ddp(BOUND)` and `@max_results(EXPR)`"
        ))),
    }
}

fn parse_terms(s: &str, pos: Pos, rep: &Reporter<'_>) -> Result<Vec<Term>, Diagnostic> {
    let mut out = Vec::new();
    for raw in s.split('+') {
        let t = raw.trim();
        if t.is_empty() {
            return Err(rep.diag(
                pos,
                format!("empty term in `{s}`: expected numbers, constants, `args.FIELD` or `size(args...)` joined by `+`"),
            ));
        }
        if let Some(inner) = t.strip_prefix("size(").and_then(|r| r.strip_suffix(')')) {
            out.push(Term::Size(parse_path(inner.trim(), pos, rep)?));
        } else if t.starts_with("args") {
            out.push(Term::Arg(parse_path(t, pos, rep)?));
        } else if t.starts_with(|c: char| c.is_ascii_digit()) {
            let v = if let Some(h) = t.strip_prefix("0x").or(t.strip_prefix("0X")) {
                u64::from_str_radix(h, 16)
            } else {
                t.parse::<u64>()
            };
            out.push(Term::Num(v.map_err(|_| {
                rep.diag(pos, format!("`{t}` is not a valid number"))
            })?));
        } else if t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            out.push(Term::Const(t.to_string()));
        } else {
            return Err(rep.diag(
                pos,
                format!("cannot read `{t}`: expected a number, a constant, `args.FIELD` or `size(args...)`"),
            ));
        }
    }
    Ok(out)
}

fn parse_path(t: &str, pos: Pos, rep: &Reporter<'_>) -> Result<Vec<String>, Diagnostic> {
    let mut parts = t.split('.');
    if parts.next().map(str::trim) != Some("args") {
        return Err(rep.diag(
            pos,
            format!("`{t}`: an argument path starts with `args` (the call's arguments), e.g. `args.count`"),
        ));
    }
    let mut path = Vec::new();
    for p in parts {
        let p = p.trim();
        if p.is_empty() || !p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(rep.diag(pos, format!("`{t}`: `{p}` is not a field name")));
        }
        path.push(p.to_string());
    }
    Ok(path)
}
