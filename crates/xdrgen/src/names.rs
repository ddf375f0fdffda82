//! How RPC-language names become Rust names.
//!
//! * types (structs, unions, enums, typedefs) and enum/union variants:
//!   `UpperCamelCase` — the name is split into words at `_` and where
//!   camelCase starts a word, and every word gets an upper-case first
//!   letter and the rest in lower case (`read_args` → `ReadArgs`,
//!   `READ3args` → `Read3args`, `nfs_fh3` → `NfsFh3`, `fileHandle` →
//!   `FileHandle`);
//! * fields, methods and modules: `snake_case` (`fileHandle` →
//!   `file_handle`);
//! * constants: `SCREAMING_SNAKE_CASE`;
//! * Rust keywords become raw identifiers (`type` → `r#type`), except
//!   `self`, `super`, `crate` and `Self`, which get a trailing `_`.

const KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "else", "enum", "extern", "false", "fn", "for", "if",
    "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "static",
    "struct", "trait", "true", "type", "unsafe", "use", "where", "while", "async", "await", "dyn",
    "abstract", "become", "box", "do", "final", "macro", "override", "priv", "typeof", "unsized",
    "virtual", "yield", "try", "gen",
];
const UNRAWABLE: &[&str] = &["self", "super", "crate", "Self", "_"];

/// Splits a name into words at `_` and at lower-to-upper case changes.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in name.split('_').filter(|p| !p.is_empty()) {
        let mixed = part.chars().any(|c| c.is_ascii_lowercase())
            && part.chars().skip(1).any(|c| c.is_ascii_uppercase());
        if !mixed {
            out.push(part.to_string());
            continue;
        }
        let mut cur = String::new();
        let chars: Vec<char> = part.chars().collect();
        for (i, &c) in chars.iter().enumerate() {
            let boundary = i > 0
                && c.is_ascii_uppercase()
                && (chars[i - 1].is_ascii_lowercase()
                    || chars[i - 1].is_ascii_digit()
                    || chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase()));
            if boundary && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            cur.push(c);
        }
        if !cur.is_empty() {
            out.push(cur);
        }
    }
    out
}

/// `UpperCamelCase`.
pub(crate) fn camel(name: &str) -> String {
    let mut s = String::new();
    for w in words(name) {
        let mut cs = w.chars();
        if let Some(f) = cs.next() {
            s.push(f.to_ascii_uppercase());
            let rest: String = cs.collect();
            s.push_str(&rest.to_ascii_lowercase());
        }
    }
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, 'T');
    }
    escape(s)
}

/// `snake_case`.
pub(crate) fn snake(name: &str) -> String {
    let s = words(name)
        .iter()
        .map(|w| w.to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join("_");
    let s = if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        format!("x{s}")
    } else {
        s
    };
    escape(s)
}

/// `SCREAMING_SNAKE_CASE` (a name already in capitals is kept as is).
pub(crate) fn screaming(name: &str) -> String {
    let s = if name.chars().any(|c| c.is_ascii_lowercase()) {
        words(name)
            .iter()
            .map(|w| w.to_ascii_uppercase())
            .collect::<Vec<_>>()
            .join("_")
    } else {
        name.to_string()
    };
    escape(s)
}

/// Escapes a Rust keyword.
pub(crate) fn escape(s: String) -> String {
    if UNRAWABLE.contains(&s.as_str()) {
        format!("{s}_")
    } else if KEYWORDS.contains(&s.as_str()) {
        format!("r#{s}")
    } else {
        s
    }
}

/// The name without a raw-identifier prefix (for building other names).
pub(crate) fn bare(s: &str) -> &str {
    s.strip_prefix("r#").unwrap_or(s)
}

/// The client method that takes explicit hints: `read` → `read_with_hints`
/// (`self_` → `self_with_hints`).
pub(crate) fn with_hints(method: &str) -> String {
    format!("{}_with_hints", bare(method).trim_end_matches('_'))
}

/// `name` with `k` appended: `x` → `x_2` (`sep` `"_"`), `Point` →
/// `Point2` (`sep` `""`), `self_` → `self_2`.
pub(crate) fn numbered(name: &str, sep: &str, k: usize) -> String {
    let b = bare(name).trim_end_matches('_');
    escape(format!("{b}{sep}{k}"))
}

/// Distinct Rust names for items whose natural Rust names are `natural`,
/// in order. The RPC language is case-sensitive, so `point` and `POINT`
/// are two names that both become `Point`: the first keeps it, each later
/// one gets the smallest number from 2 up appended ([`numbered`]) that
/// gives a name no other item has, naturally or by numbering. A natural
/// name in `reserved` is numbered too.
pub(crate) fn distinct(natural: &[String], sep: &str, reserved: &[&str]) -> Vec<String> {
    let all: std::collections::HashSet<&str> = natural.iter().map(String::as_str).collect();
    let mut used: std::collections::HashSet<String> =
        reserved.iter().map(|r| r.to_string()).collect();
    let mut out = Vec::with_capacity(natural.len());
    for n in natural {
        let name = if used.contains(n) {
            (2..)
                .map(|k| numbered(n, sep, k))
                .find(|c| !used.contains(c) && !all.contains(c.as_str()))
                .unwrap_or_default()
        } else {
            n.clone()
        };
        used.insert(name.clone());
        out.push(name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        assert_eq!(camel("read_args"), "ReadArgs");
        assert_eq!(camel("READ3args"), "Read3args");
        assert_eq!(camel("nfs_fh3"), "NfsFh3");
        assert_eq!(camel("fileHandle"), "FileHandle");
        assert_eq!(camel("NFS3ERR_NOENT"), "Nfs3errNoent");
        assert_eq!(camel("Self"), "Self_");
        assert_eq!(snake("fileHandle"), "file_handle");
        assert_eq!(snake("type"), "r#type");
        assert_eq!(snake("self"), "self_");
        assert_eq!(snake("NFSPROC3_READ"), "nfsproc3_read");
        assert_eq!(screaming("maxLen"), "MAX_LEN");
        assert_eq!(screaming("NFS3_FHSIZE"), "NFS3_FHSIZE");
        assert_eq!(snake("x"), "x");
        assert_eq!(camel("3d"), "T3d");
        assert_eq!(camel("FSINFO3resok"), "Fsinfo3resok");
        assert_eq!(camel("XMLParser"), "XmlParser");
    }

    #[test]
    fn names_that_meet_are_numbered() {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            distinct(&v(&["x", "x", "x_2", "x"]), "_", &[]),
            v(&["x", "x_3", "x_2", "x_4"])
        );
        assert_eq!(
            distinct(&v(&["Point", "Point"]), "", &[]),
            v(&["Point", "Point2"])
        );
        assert_eq!(
            distinct(&v(&["self_", "self_"]), "_", &[]),
            v(&["self_", "self_2"])
        );
        assert_eq!(
            distinct(&v(&["Default"]), "", &["Default"]),
            v(&["Default2"])
        );
        assert_eq!(numbered("r#type", "_", 2), "type_2");
    }
}
