//! The Upper-Layer Binding (RFC 8166 §6) derived from the types and the
//! pragmas: per procedure, the Write-chunk size of each DDP-eligible
//! result item and the maximum size of the results.

use crate::ast::{Pragma, Term};
use crate::error::{Pos, Reporter};
use crate::model::*;

fn roundup(n: u64) -> u64 {
    n.div_ceil(4).saturating_mul(4)
}

pub(crate) fn add(a: Sz, b: Sz) -> Sz {
    match (a, b) {
        (Sz::C(x), Sz::C(y)) => Sz::C(x.saturating_add(y)),
        (Sz::C(0), e) | (e, Sz::C(0)) => e,
        (Sz::C(x), Sz::E(e)) | (Sz::E(e), Sz::C(x)) => Sz::E(format!("{e}.saturating_add({x})")),
        (Sz::E(x), Sz::E(y)) => Sz::E(format!("{x}.saturating_add({y})")),
    }
}

fn max(a: Sz, b: Sz) -> Sz {
    match (a, b) {
        (Sz::C(x), Sz::C(y)) => Sz::C(x.max(y)),
        (Sz::C(0), e) | (e, Sz::C(0)) => e,
        (Sz::C(x), Sz::E(e)) | (Sz::E(e), Sz::C(x)) => Sz::E(format!("{e}.max({x})")),
        (Sz::E(x), Sz::E(y)) => Sz::E(format!("{x}.max({y})")),
    }
}

fn mul(a: Sz, n: u64) -> Sz {
    match a {
        Sz::C(x) => Sz::C(x.saturating_mul(n)),
        Sz::E(_) if n == 1 => a,
        Sz::E(e) => Sz::E(format!("{e}.saturating_mul({n})")),
    }
}

/// Rounds an expression up to a multiple of four.
fn round_sz(a: Sz) -> Sz {
    match a {
        Sz::C(x) => Sz::C(roundup(x)),
        Sz::E(e) => Sz::E(format!("{e}.div_ceil(4).saturating_mul(4)")),
    }
}

/// `min(a, cap)`.
fn cap(a: Sz, cap: u64) -> Sz {
    match a {
        Sz::C(x) => Sz::C(x.min(cap)),
        Sz::E(e) => Sz::E(format!("{e}.min({cap})")),
    }
}

/// The Rust expression (a `u32`) for a size.
pub(crate) fn as_u32(s: &Sz) -> String {
    match s {
        Sz::C(x) => (*x).min(u64::from(u32::MAX)).to_string(),
        Sz::E(e) => format!("u32::try_from({e}).unwrap_or(u32::MAX)"),
    }
}

struct Ctx<'m, 'r, 'a> {
    model: &'m Model,
    args: &'m [Ty],
    rep: &'r mut Reporter<'a>,
    proc_name: &'m str,
    /// [`Ctx::max_size`] counts a DDP-eligible opaque or string as its
    /// length word alone: the reduced results (every such item in a Write
    /// chunk).
    reduced: bool,
}

impl Ctx<'_, '_, '_> {
    /// Resolves `args.a.b` to a Rust expression and the item's type.
    fn path(&mut self, path: &[String], pos: Pos) -> Option<(String, Ty)> {
        let (mut expr, mut ty, rest) = match self.args.len() {
            0 => {
                self.rep.error(
                    pos,
                    format!(
                        "procedure `{}` takes no arguments, so `args` names nothing",
                        self.proc_name
                    ),
                );
                return None;
            }
            1 => ("args".to_string(), self.args[0].clone(), path),
            n => {
                let idx = path
                    .first()
                    .and_then(|s| s.parse::<usize>().ok())
                    .filter(|i| *i < n);
                let Some(i) = idx else {
                    self.rep.error(pos, format!("procedure `{}` has {n} arguments: start the path with their index, `args.0` .. `args.{}`", self.proc_name, n - 1));
                    return None;
                };
                (format!("args.{i}"), self.args[i].clone(), &path[1..])
            }
        };
        for seg in rest {
            let (r, _) = self.model.resolve(&ty);
            let field = match r {
                Ty::Named(id) => match &self.model.types[*id].kind {
                    Kind::Struct(fs) => fs.iter().find(|f| &f.xdr == seg).cloned(),
                    _ => None,
                },
                _ => None,
            };
            let Some(f) = field else {
                self.rep.error(pos, format!("`{seg}` in the argument path of procedure `{}` is not a member of a struct (paths may go through struct members only)", self.proc_name));
                return None;
            };
            expr = format!("{expr}.{}", f.rust);
            ty = f.ty.clone();
        }
        Some((expr, ty))
    }

    /// The value of an unsigned argument field, as a `u64` expression.
    fn arg_value(&mut self, path: &[String], pos: Pos) -> Option<Sz> {
        let (expr, ty) = self.path(path, pos)?;
        match self.model.resolve(&ty).0 {
            Ty::U32 | Ty::U64 => Some(Sz::E(format!("u64::from({expr})"))),
            _ => {
                self.rep.error(pos, format!("`args.{}` of procedure `{}` must be an `unsigned int` or `unsigned hyper` to bound a size", path.join("."), self.proc_name));
                None
            }
        }
    }

    fn term(&mut self, t: &Term, pos: Pos) -> Option<Sz> {
        match t {
            Term::Num(n) => Some(Sz::C(*n)),
            Term::Const(c) => match self.model.consts.iter().find(|k| &k.xdr == c) {
                Some(k) if k.value >= 0 => Some(Sz::C(u64::try_from(k.value).unwrap_or(u64::MAX))),
                Some(_) => {
                    self.rep.error(
                        pos,
                        format!("constant `{c}` is negative and cannot be a size"),
                    );
                    None
                }
                None => {
                    self.rep
                        .error(pos, format!("unknown constant `{c}` in the pragma"));
                    None
                }
            },
            Term::Arg(p) => self.arg_value(p, pos),
            Term::Size(p) => {
                let (expr, ty) = self.path(p, pos)?;
                match self.model.resolve(&ty).0 {
                    Ty::OpaqueVar(_) | Ty::Str(_) => Some(Sz::E(format!(
                        "(u64::try_from({expr}.len()).unwrap_or(u64::MAX)).div_ceil(4).saturating_mul(4).saturating_add(4)"
                    ))),
                    other => match self.max_size(&other.clone(), None, &mut Vec::new()) {
                        Some(s @ Sz::C(_)) => Some(s),
                        _ => {
                            self.rep.error(pos, format!("`size(args{}{})`: size() takes an opaque or string item, or one of fixed size", if p.is_empty() { "" } else { "." }, p.join(".")));
                            None
                        }
                    },
                }
            }
        }
    }

    /// The reply size of a DDP-eligible item of declared maximum `m`;
    /// `None` when nothing bounds it (no Write chunk can be sized for it)
    /// or its bound is in error (reported).
    fn ddp_size(&mut self, m: u32, bound: &DdpBound) -> Option<Sz> {
        match bound {
            DdpBound::Declared if m == u32::MAX => None,
            DdpBound::Declared => Some(Sz::C(u64::from(m))),
            DdpBound::Num(n) => Some(Sz::C((*n).min(u64::from(m)))),
            DdpBound::Arg(path, pos) => {
                let v = self.arg_value(path, *pos)?;
                Some(cap(v, u64::from(m)))
            }
        }
    }

    /// Maximum encoded size; `None` when unbounded or recursive.
    fn max_size(
        &mut self,
        ty: &Ty,
        ddp: Option<&DdpBound>,
        visiting: &mut Vec<TypeId>,
    ) -> Option<Sz> {
        Some(match ty {
            Ty::I32 | Ty::U32 | Ty::F32 | Ty::Bool => Sz::C(4),
            Ty::I64 | Ty::U64 | Ty::F64 => Sz::C(8),
            Ty::OpaqueFixed(n) => Sz::C(roundup(u64::from(*n))),
            // Reduced, a DDP-eligible item leaves its length word inline
            // and its data and padding in its Write chunk.
            Ty::OpaqueVar(_) | Ty::Str(_) if self.reduced && ddp.is_some() => Sz::C(4),
            Ty::OpaqueVar(m) | Ty::Str(m) => {
                let data = match ddp {
                    Some(b @ (DdpBound::Num(_) | DdpBound::Arg(..))) => self.ddp_size(*m, b)?,
                    _ if *m == u32::MAX => return None,
                    _ => Sz::C(u64::from(*m)),
                };
                add(Sz::C(4), round_sz(data))
            }
            Ty::Array(t, n) => mul(self.max_size(t, None, visiting)?, u64::from(*n)),
            Ty::VarArray(t, m) => {
                if *m == u32::MAX {
                    return None;
                }
                add(
                    Sz::C(4),
                    mul(self.max_size(t, None, visiting)?, u64::from(*m)),
                )
            }
            Ty::Optional(t) => add(Sz::C(4), self.max_size(t, None, visiting)?),
            Ty::Named(id) => {
                if visiting.contains(id) {
                    return None;
                }
                let item = &self.model.types[*id];
                if item.list_node || item.recursive {
                    return None;
                }
                visiting.push(*id);
                let r = match &item.kind {
                    Kind::Enum(_) => Some(Sz::C(4)),
                    Kind::Alias(f) => self.max_size(&f.ty, ddp.or(f.ddp.as_ref()), visiting),
                    Kind::Struct(fs) => {
                        let mut s = Some(Sz::C(0));
                        for f in fs {
                            let m = self.max_size(&f.ty, f.ddp.as_ref(), visiting);
                            s = match (s, m) {
                                (Some(a), Some(b)) => Some(add(a, b)),
                                _ => None,
                            };
                        }
                        s
                    }
                    Kind::Union(u) => {
                        let mut s = Some(Sz::C(0));
                        let fields: Vec<Option<&Field>> = u
                            .arms
                            .iter()
                            .map(|a| a.field.as_ref())
                            .chain(u.default.as_ref().map(|d| d.as_ref()))
                            .collect();
                        for f in fields {
                            let m = match f {
                                None => Some(Sz::C(0)),
                                Some(f) => self.max_size(&f.ty, f.ddp.as_ref(), visiting),
                            };
                            s = match (s, m) {
                                (Some(a), Some(b)) => Some(max(a, b)),
                                _ => None,
                            };
                        }
                        s.map(|s| add(Sz::C(4), s))
                    }
                };
                visiting.pop();
                r?
            }
        })
    }

    /// The Write chunks for the DDP-eligible items of a result type, in
    /// XDR order (G8 in docs/spec-notes.md).
    fn ddp_items(&mut self, ty: &Ty, ddp: Option<&DdpBound>, visiting: &mut Vec<TypeId>) -> Chunks {
        match ty {
            Ty::OpaqueVar(m) | Ty::Str(m) => match ddp {
                None => Chunks::default(),
                Some(b) => match self.ddp_size(*m, b) {
                    Some(s) => Chunks {
                        sizes: vec![s],
                        ..Chunks::default()
                    },
                    // Unbounded: this item and every later one travel
                    // inline or in the Reply chunk.
                    None => Chunks {
                        stop: true,
                        ..Chunks::default()
                    },
                },
            },
            Ty::Array(t, n) => {
                let one = self.ddp_items(t, None, visiting);
                let mut out = Chunks::default();
                if one.sizes.is_empty() && !one.stop {
                    return out;
                }
                for _ in 0..(*n).min(MAX_ARRAY_CHUNKS) {
                    out.then(one.clone());
                }
                if *n > MAX_ARRAY_CHUNKS {
                    out.stop = true;
                }
                out
            }
            Ty::VarArray(t, _) => {
                // How many elements come is known only when they do: their
                // items, and every later one, get no Write chunk.
                let one = self.ddp_items(t, None, visiting);
                Chunks {
                    stop: one.stop || !one.sizes.is_empty(),
                    ..Chunks::default()
                }
            }
            Ty::Optional(t) => {
                let mut one = self.ddp_items(t, None, visiting);
                one.may_shrink |= !one.sizes.is_empty();
                one
            }
            Ty::Named(id) => {
                if visiting.contains(id) {
                    return Chunks::default();
                }
                visiting.push(*id);
                let item = self.model.types[*id].clone();
                let out = match &item.kind {
                    Kind::Enum(_) => Chunks::default(),
                    Kind::Alias(f) => self.ddp_items(&f.ty, ddp.or(f.ddp.as_ref()), visiting),
                    Kind::Struct(fs) => {
                        let mut out = Chunks::default();
                        for f in fs {
                            let part = self.ddp_items(&f.ty, f.ddp.as_ref(), visiting);
                            out.then(part);
                        }
                        out
                    }
                    Kind::Union(u) => {
                        let fields: Vec<Option<&Field>> = u
                            .arms
                            .iter()
                            .map(|a| a.field.as_ref())
                            .chain(u.default.as_ref().map(|d| d.as_ref()))
                            .collect();
                        let arms: Vec<Chunks> = fields
                            .into_iter()
                            .map(|f| match f {
                                None => Chunks::default(),
                                Some(f) => self.ddp_items(&f.ty, f.ddp.as_ref(), visiting),
                            })
                            .collect();
                        Chunks::either(arms)
                    }
                };
                visiting.pop();
                out
            }
            _ => Chunks::default(),
        }
    }
}

/// Chunks provided for at most this many elements of a fixed-length array.
const MAX_ARRAY_CHUNKS: u32 = 64;

/// The Write chunks a result type's DDP-eligible items get.
///
/// The responder puts the k-th DDP-eligible item it encodes into the k-th
/// Write chunk and sends the items beyond the last chunk inline (RFC 8166
/// §4.4.6; `rpcrdma_engine`'s reply planning). So a chunk is provided for
/// each item up to the first one no chunk can be sized for (an unbounded
/// item, or one inside a variable-length array); and where an item before
/// another may be absent (optional data, a union arm with fewer items),
/// the later one may land in an earlier chunk, so each chunk is then as
/// large as the largest item that can land in it.
#[derive(Debug, Clone, Default)]
struct Chunks {
    /// One size per chunk, in XDR order.
    sizes: Vec<Sz>,
    /// Fewer items than `sizes` may come.
    may_shrink: bool,
    /// An item may land in an earlier chunk than its place in `sizes`.
    shifts: bool,
    /// No chunk may follow `sizes`.
    stop: bool,
}

impl Chunks {
    /// `self` followed by `next`.
    fn then(&mut self, next: Chunks) {
        if self.stop {
            return;
        }
        if self.may_shrink && !next.sizes.is_empty() {
            self.shifts = true;
        }
        self.sizes.extend(next.sizes);
        self.may_shrink |= next.may_shrink;
        self.shifts |= next.shifts;
        self.stop = next.stop;
    }

    /// One of `arms` (a union): the k-th chunk is as large as any arm's
    /// k-th item, and none is provided past the place where an arm stops.
    fn either(arms: Vec<Chunks>) -> Chunks {
        let mut out = Chunks::default();
        let mut cut = usize::MAX;
        let longest = arms.iter().map(|a| a.sizes.len()).max().unwrap_or(0);
        for a in arms {
            out.may_shrink |= a.may_shrink || a.sizes.len() < longest;
            out.shifts |= a.shifts;
            if a.stop {
                out.stop = true;
                cut = cut.min(a.sizes.len());
            }
            for (i, s) in a.sizes.into_iter().enumerate() {
                if i < out.sizes.len() {
                    let cur = std::mem::replace(&mut out.sizes[i], Sz::C(0));
                    out.sizes[i] = max(cur, s);
                } else {
                    out.sizes.push(s);
                }
            }
        }
        out.sizes.truncate(cut);
        out
    }

    /// The chunk sizes to provide.
    fn finish(self) -> Vec<Sz> {
        if !self.shifts {
            return self.sizes;
        }
        // An item may land in any earlier chunk: each chunk takes the
        // largest of the items from its place on.
        let mut out: Vec<Sz> = Vec::with_capacity(self.sizes.len());
        let mut acc: Option<Sz> = None;
        for s in self.sizes.into_iter().rev() {
            let m = match acc.take() {
                None => s,
                Some(a) => max(a, s),
            };
            acc = Some(m.clone());
            out.push(m);
        }
        out.reverse();
        out
    }
}

/// Fills in `ddp_results` and `max_results` of a procedure.
pub(crate) fn proc_hints(
    model: &Model,
    pr: &mut ProcIr,
    pragmas: &[Pragma],
    rep: &mut Reporter<'_>,
) {
    let args = pr.args.clone();
    let mut cx = Ctx {
        model,
        args: &args,
        rep,
        proc_name: &pr.xdr,
        reduced: false,
    };
    let mut explicit: Option<Option<Sz>> = None;
    for p in pragmas {
        match p {
            Pragma::Ddp { pos, .. } => cx.rep.error(*pos, "`@ddp` marks an opaque or string declaration, not a procedure (use `@max_results(...)` here)"),
            Pragma::MaxResults { pos, terms } => {
                let mut s = Some(Sz::C(0));
                for t in terms {
                    let v = cx.term(t, *pos);
                    s = match (s, v) {
                        (Some(a), Some(b)) => Some(add(a, b)),
                        _ => None,
                    };
                }
                explicit = Some(s);
            }
        }
    }
    let mut ddp = Vec::new();
    let mut reduced = None;
    let computed = match &pr.result {
        None => Some(Sz::C(0)),
        Some(ty) => {
            let chunks = cx.ddp_items(ty, None, &mut Vec::new());
            // Every DDP-eligible item gets a Write chunk (none is unbounded
            // or inside a variable-length array, where the chunks stop):
            // then each travels reduced, and the reduced results are the
            // type's size with each such item counted as its length word.
            let all_chunked = !chunks.stop;
            ddp = chunks.finish();
            let full = cx.max_size(ty, None, &mut Vec::new());
            if all_chunked && !ddp.is_empty() && full.is_some() {
                cx.reduced = true;
                reduced = cx.max_size(ty, None, &mut Vec::new());
            }
            full
        }
    };
    pr.ddp_results = ddp;
    pr.reduced_results = reduced;
    pr.max_results = match explicit {
        Some(s) => s,
        None => computed,
    };
}
