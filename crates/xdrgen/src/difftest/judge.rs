//! The judge: what the two drivers printed for each case, against what
//! each case requires.
//!
//! * a valid encoding: both decode it and encode exactly the same bytes;
//! * an over-bound length, or a union discriminant no case lists (no
//!   default arm): both refuse it;
//! * an undeclared enum value: we refuse it; libtirpc may take it back
//!   unchanged (its `xdr_enum` takes any int, spec-notes G1);
//! * a bool of 2: we refuse it; libtirpc may take it as TRUE and send 1
//!   (`xdr_bool`), or send the 2 back (rpcgen's C reads runs of simple
//!   struct members with `IXDR_GET_BOOL`, which keeps the word):
//!   spec-notes G2.
//!
//! Anything else is a disagreement, reported with the type and the hex.

use std::collections::BTreeMap;
use std::fmt;

use super::MutationKind;

/// What one driver printed for one case.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Out<'a> {
    Ok(&'a str),
    Err(&'a str),
    /// The Rust driver caught a panic: always a disagreement.
    Panic(&'a str),
}

fn parse_out(line: Option<&str>) -> Out<'_> {
    match line {
        None => Out::Err("no output (the driver stopped)"),
        Some(l) => match l.split_once(' ').unwrap_or((l, "")) {
            ("ok", hex) => Out::Ok(hex.trim()),
            ("panic", why) => Out::Panic(why),
            (_, why) => Out::Err(why),
        },
    }
}

fn show(o: &Out<'_>, input: &str) -> String {
    match o {
        Out::Ok(h) if *h == input => "accepted it and encoded the same bytes".into(),
        Out::Ok(h) => format!("accepted it but encoded {h}"),
        Out::Err(why) => format!("refused it ({why})"),
        Out::Panic(why) => format!("PANICKED ({why})"),
    }
}

/// How one kind of invalid mutation fared.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Cases of the kind.
    pub cases: usize,
    /// Refused by the generated Rust.
    pub rust_refused: usize,
    /// Refused by rpcgen's C.
    pub c_refused: usize,
    /// Taken by rpcgen's C and sent back unchanged (an enum value, or a
    /// bool read by rpcgen's inlined `IXDR_GET_BOOL`).
    pub c_same: usize,
    /// Taken by rpcgen's C and sent back with the bool made 1.
    pub c_normalised: usize,
}

/// The outcome of a differential run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Valid encodings both round-tripped byte for byte.
    pub valid_same: usize,
    /// Valid encodings.
    pub valid: usize,
    /// Per kind of invalid mutation.
    pub mutations: BTreeMap<MutationKind, Tally>,
    /// Each disagreement: the case, the type, what each side did, the hex.
    pub disagreements: Vec<String>,
}

impl Verdict {
    /// No disagreement.
    pub fn agrees(&self) -> bool {
        self.disagreements.is_empty()
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "valid values: {} of {} decoded and re-encoded byte for byte by both",
            self.valid_same, self.valid
        )?;
        for (k, t) in &self.mutations {
            let c = match k {
                MutationKind::UndeclaredEnum => format!(
                    "libtirpc refused {} and took {} back unchanged (xdr_enum takes any int: spec-notes G1)",
                    t.c_refused, t.c_same
                ),
                MutationKind::Bool2 => format!(
                    "libtirpc refused {}, took {} as TRUE sending 1 (xdr_bool) and {} back unchanged (rpcgen's inlined IXDR_GET_BOOL): spec-notes G2",
                    t.c_refused, t.c_normalised, t.c_same
                ),
                _ => format!("libtirpc refused {}", t.c_refused),
            };
            writeln!(
                f,
                "{}: {} cases; the generated Rust refused {}, {c}",
                k.name(),
                t.cases,
                t.rust_refused
            )?;
        }
        for d in &self.disagreements {
            writeln!(f, "DISAGREEMENT {d}")?;
        }
        Ok(())
    }
}

/// Judges a run: `cases` holds `KIND TYPE HEX` lines (KIND `valid` or
/// `NAME@OFFSET` of a [`MutationKind`]), `rust` and `c` the drivers'
/// `ok HEX` / `err WHY` lines, one per case.
pub fn judge(cases: &str, rust: &str, c: &str) -> Verdict {
    let mut v = Verdict::default();
    let mut rust_lines = rust.lines();
    let mut c_lines = c.lines();
    for (n, case) in cases.lines().enumerate() {
        let mut parts = case.split(' ');
        let kind = parts.next().unwrap_or("");
        let ty = parts.next().unwrap_or("");
        let input = parts.next().unwrap_or("").trim();
        let r = parse_out(rust_lines.next());
        let co = parse_out(c_lines.next());
        let mut disagree = |what: &str| {
            v.disagreements.push(format!(
                "case {} ({kind}) of type `{ty}`: {what}: the generated Rust {}, rpcgen's C {}\n  input {input}",
                n + 1,
                show(&r, input),
                show(&co, input)
            ))
        };
        if kind == "valid" {
            v.valid += 1;
            if r == Out::Ok(input) && co == Out::Ok(input) {
                v.valid_same += 1;
            } else {
                disagree("a valid encoding must round-trip in both");
            }
            continue;
        }
        let (name, offset) = kind.split_once('@').unwrap_or((kind, ""));
        let Some(k) = MutationKind::from_name(name) else {
            disagree("unknown case kind");
            continue;
        };
        let t = v.mutations.entry(k).or_default();
        t.cases += 1;
        let rust_refused = matches!(r, Out::Err(_));
        if matches!(r, Out::Panic(_)) || matches!(co, Out::Panic(_)) {
            disagree("a decoder panicked");
            continue;
        }
        t.rust_refused += usize::from(rust_refused);
        match co {
            Out::Err(_) => t.c_refused += 1,
            Out::Ok(h) if h == input => t.c_same += 1,
            Out::Ok(h) if k == MutationKind::Bool2 && h == with_word(input, offset, 1) => {
                t.c_normalised += 1
            }
            Out::Ok(_) | Out::Panic(_) => {}
        }
        let c_ok = match (k, &co) {
            (_, Out::Err(_)) => true,
            (MutationKind::UndeclaredEnum, Out::Ok(h)) => *h == input,
            (MutationKind::Bool2, Out::Ok(h)) => *h == input || *h == with_word(input, offset, 1),
            _ => false,
        };
        if !rust_refused || !c_ok {
            disagree(match k {
                MutationKind::OverBound => "a length over its declared maximum must be refused by both",
                MutationKind::UnlistedDiscriminant => "a discriminant no case lists (no default arm) must be refused by both",
                MutationKind::UndeclaredEnum => "an enum value that is no item must be refused (libtirpc may take it back unchanged)",
                MutationKind::Bool2 => "a bool of 2 must be refused (libtirpc may take it as TRUE)",
            });
        }
    }
    let extra = rust_lines.count() + c_lines.count();
    if extra > 0 {
        v.disagreements.push(format!(
            "the drivers printed {extra} lines more than there are cases"
        ));
    }
    v
}

/// `hex` with the 4-byte word at byte `offset` set to `word`.
fn with_word(hex: &str, offset: &str, word: u32) -> String {
    let Ok(off) = offset.parse::<usize>() else {
        return String::new();
    };
    let at = off * 2;
    if hex.len() < at + 8 || !hex.is_char_boundary(at) || !hex.is_char_boundary(at + 8) {
        return String::new();
    }
    format!("{}{word:08x}{}", &hex[..at], &hex[at + 8..])
}
