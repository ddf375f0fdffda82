//! The exports file, in the syntax of Linux's `/etc/exports` (exports(5)
//! of nfs-utils): one export per line, its path, then the clients allowed
//! to mount it, each followed (with no space) by its options in
//! parentheses.
//!
//! ```text
//! # path         clients
//! /srv/data      192.0.2.0/24(rw) build.example.org(rw,no_root_squash) *(ro)
//! /srv/pub       -ro,all_squash  *  198.51.100.7(rw)
//! "/srv/with space"  10.1.2.3(ro)
//! ```
//!
//! What is read: `#` comments, a `\` at the end of a line continuing it,
//! quoted paths and `\NNN` octal escapes in them, `-OPTIONS` after the path
//! as the defaults of the clients after it on that line, and one path on
//! several lines (their clients are merged). Clients: `*` (every client),
//! an IPv4 or IPv6 address, a network (`192.0.2.0/24`,
//! `192.0.2.0/255.255.255.0`, `2001:db8::/32`), a host name (resolved to
//! its addresses when the file is read). Options: `rw`, `ro` (the
//! default), `root_squash` (the default), `no_root_squash`, `all_squash`,
//! `no_all_squash`, `anonuid=N`, `anongid=N`, and `sec=` with `sys` and
//! `none`.
//!
//! Refused, with the line and what to write instead: what would change who
//! may do what in a way this server cannot honour (wildcard host names
//! like `*.example.org` and netgroups `@group`, which need reverse DNS or
//! NIS; Kerberos `sec=` flavors; `mountpoint`, `refer=`, `replicas=`,
//! `xprtsec=`), options standing apart from their client (`host (rw)`,
//! which Linux reads as "every host may write"), a path without clients,
//! a client listed twice for one path, and anything unknown. Accepted with
//! a warning: options this server does not act on (`async`, `secure`,
//! `subtree_check`, `nohide`, `crossmnt`, `fsid=`, `nordirplus`,
//! `security_label`, `pnfs`). Accepted silently: options that only
//! restate what this server does (`sync`, `insecure`, `no_subtree_check`,
//! `wdelay`, `no_wdelay`, `hide`, `acl`, `no_acl`, the NLM options).

use std::fmt;
use std::net::IpAddr;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use crate::fs::{ClientAccess, Squash, INVALID_ID};

/// A client pattern of an exports line.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ClientSpec {
    /// `*`: every client.
    Any,
    /// One address.
    Addr(IpAddr),
    /// A network: the address (host bits cleared) and the prefix length.
    Net(IpAddr, u8),
    /// A host name (lower case), matched by the addresses it resolves to.
    Host(String),
}

impl ClientSpec {
    /// How specific the pattern is: the most specific one that matches a
    /// client decides (addresses and host names, then networks by prefix
    /// length, then `*`).
    pub fn rank(&self) -> u32 {
        match self {
            Self::Addr(_) | Self::Host(_) => 1000,
            Self::Net(_, p) => u32::from(*p),
            Self::Any => 0,
        }
    }
}

impl fmt::Display for ClientSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Any => f.write_str("*"),
            Self::Addr(a) => write!(f, "{a}"),
            Self::Net(a, p) => write!(f, "{a}/{p}"),
            Self::Host(h) => f.write_str(h),
        }
    }
}

/// Whether `ip` lies in the network `net`/`prefix`.
pub fn in_network(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = mask32(prefix);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = mask128(prefix);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

fn mask32(prefix: u8) -> u32 {
    if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(prefix.min(32)))
    }
}

fn mask128(prefix: u8) -> u128 {
    if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(prefix.min(128)))
    }
}

/// One client of an export and what it may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Who.
    pub client: ClientSpec,
    /// What it may do.
    pub access: ClientAccess,
    /// The line it is on (1-based).
    pub line: usize,
}

/// One exported directory and its clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportLine {
    /// The directory, as written (normalized: no `//`, no trailing `/`).
    pub path: PathBuf,
    /// The first line that names it.
    pub line: usize,
    /// Its clients, in the order written.
    pub rules: Vec<Rule>,
}

/// A parsed exports file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportsFile {
    /// The exports, in the order of their first line.
    pub exports: Vec<ExportLine>,
    /// What was accepted but deserves the administrator's eye.
    pub warnings: Vec<Warning>,
}

/// Something accepted that does not do what its writer may think.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The line (1-based).
    pub line: usize,
    /// What.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// Why an exports file was refused: the line and the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ExportsError {
    /// The line (1-based; 0 for the file as a whole).
    pub line: usize,
    /// What is wrong and what to write instead.
    pub message: String,
}

fn err<T>(line: usize, message: impl Into<String>) -> Result<T, ExportsError> {
    Err(ExportsError {
        line,
        message: message.into(),
    })
}

/// A word of a line: its bytes (escapes decoded) and whether it was
/// quoted.
struct Word {
    text: Vec<u8>,
    quoted: bool,
}

/// Splits a logical line into words: whitespace separates, `"` quotes
/// (spaces inside), `\NNN` is an octal byte, `#` outside quotes ends the
/// line.
fn words(line: &[u8], at: usize) -> Result<Vec<Word>, ExportsError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < line.len() {
        let c = line[i];
        if c == b' ' || c == b'\t' || c == b'\r' {
            i += 1;
            continue;
        }
        if c == b'#' {
            break;
        }
        let mut text = Vec::new();
        let mut quoted = false;
        let mut in_quotes = false;
        while i < line.len() {
            let c = line[i];
            if in_quotes {
                if c == b'"' {
                    in_quotes = false;
                    i += 1;
                    continue;
                }
            } else if c == b' ' || c == b'\t' || c == b'\r' || c == b'#' {
                break;
            } else if c == b'"' {
                in_quotes = true;
                quoted = true;
                i += 1;
                continue;
            }
            if c == b'\\' {
                let digits = line
                    .get(i + 1..i + 4)
                    .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)) && d[0] <= b'3');
                let Some(d) = digits else {
                    return err(
                        at,
                        "a backslash must start an octal escape of three digits (\\040 is a space) or end the line to continue it",
                    );
                };
                text.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
                continue;
            }
            text.push(c);
            i += 1;
        }
        if in_quotes {
            return err(at, "a quote is not closed (\"/path with spaces\")");
        }
        out.push(Word { text, quoted });
    }
    Ok(out)
}

/// The logical lines of a file: (first physical line, text), `\` at the
/// end of a line joining it to the next.
fn logical_lines(text: &[u8]) -> Vec<(usize, Vec<u8>)> {
    let mut out = Vec::new();
    let mut cur: Option<(usize, Vec<u8>)> = None;
    for (n, raw) in text.split(|&b| b == b'\n').enumerate() {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let (body, more) = match raw.strip_suffix(b"\\") {
            // `\\` at the end is not a continuation (an escape cut short;
            // the word splitter reports it).
            Some(b) if !b.ends_with(b"\\") => (b, true),
            _ => (raw, false),
        };
        let entry = cur.get_or_insert_with(|| (n + 1, Vec::new()));
        if !entry.1.is_empty() {
            entry.1.push(b' ');
        }
        entry.1.extend_from_slice(body);
        if !more {
            out.extend(cur.take());
        }
    }
    out.extend(cur.take());
    out
}

/// Normalizes an export path: absolute, no `.` or `..`, no empty
/// components, no trailing `/` (except the root itself).
fn export_path(w: &[u8], at: usize) -> Result<PathBuf, ExportsError> {
    let shown = String::from_utf8_lossy(w);
    if !w.starts_with(b"/") {
        return err(
            at,
            format!("`{shown}` is not an absolute path: a line starts with the directory to export (/srv/data)"),
        );
    }
    if w.contains(&0) {
        return err(at, "a path may not contain a NUL byte");
    }
    let mut norm = Vec::with_capacity(w.len());
    for comp in w.split(|&b| b == b'/').filter(|c| !c.is_empty()) {
        if comp == b"." || comp == b".." {
            return err(
                at,
                format!("`{shown}` has a `.` or `..` component: give the directory's own path"),
            );
        }
        norm.push(b'/');
        norm.extend_from_slice(comp);
    }
    if norm.is_empty() {
        norm.push(b'/');
    }
    Ok(PathBuf::from(std::ffi::OsString::from_vec(norm)))
}

/// The options of a client as they are read (Linux keeps root and all
/// squashing as two flags: `all_squash` wins whatever `root_squash` says).
#[derive(Debug, Clone, Copy)]
struct Opts {
    read_only: bool,
    root_squash: bool,
    all_squash: bool,
    anon: (u32, u32),
}

impl Default for Opts {
    fn default() -> Self {
        let d = ClientAccess::default();
        Self {
            read_only: d.read_only,
            root_squash: true,
            all_squash: false,
            anon: d.anon,
        }
    }
}

impl Opts {
    fn access(self) -> ClientAccess {
        ClientAccess {
            read_only: self.read_only,
            squash: if self.all_squash {
                Squash::All
            } else if self.root_squash {
                Squash::Root
            } else {
                Squash::None
            },
            anon: self.anon,
        }
    }
}

/// What an option list did besides setting the options.
struct OptionsOut {
    warnings: Vec<String>,
}

/// Applies a comma-separated option list to `access`.
fn apply_options(
    list: &str,
    access: &mut Opts,
    at: usize,
    out: &mut OptionsOut,
) -> Result<(), ExportsError> {
    if list.is_empty() {
        return Ok(());
    }
    for opt in list.split(',') {
        let (name, value) = match opt.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (opt, None),
        };
        let no_value = |access: &mut Opts, f: fn(&mut Opts)| {
            if value.is_some() {
                return err(at, format!("option `{name}` takes no value"));
            }
            f(access);
            Ok(())
        };
        match name {
            "" => return err(at, "an empty option (two commas, or a comma at an end)"),
            "rw" => no_value(access, |a| a.read_only = false)?,
            "ro" => no_value(access, |a| a.read_only = true)?,
            "root_squash" => no_value(access, |a| a.root_squash = true)?,
            "no_root_squash" => no_value(access, |a| a.root_squash = false)?,
            "all_squash" => no_value(access, |a| a.all_squash = true)?,
            "no_all_squash" => no_value(access, |a| a.all_squash = false)?,
            "anonuid" | "anongid" => {
                let Some(v) = value else {
                    return err(at, format!("option `{name}` needs a number: {name}=65534"));
                };
                let id: u32 = match v.parse() {
                    Ok(id) if id != INVALID_ID => id,
                    _ => {
                        return err(
                            at,
                            format!(
                                "`{name}={v}` is not an id: give a number from 0 to 4294967294"
                            ),
                        )
                    }
                };
                if name == "anonuid" {
                    access.anon.0 = id;
                } else {
                    access.anon.1 = id;
                }
            }
            "sec" => {
                let Some(v) = value else {
                    return err(at, "option `sec` needs flavors: sec=sys");
                };
                for flavor in v.split(':') {
                    match flavor {
                        "sys" | "none" => {}
                        "krb5" | "krb5i" | "krb5p" | "lkey" | "lkeyi" | "lkeyp" | "spkm"
                        | "spkmi" | "spkmp" => {
                            return err(
                                at,
                                format!("`sec={v}`: this server has no RPCSEC_GSS ({flavor}); only sec=sys (AUTH_SYS, and AUTH_NONE as the anonymous user)"),
                            )
                        }
                        other => {
                            return err(
                                at,
                                format!("`sec={v}`: `{other}` is not a security flavor; this server offers sec=sys"),
                            )
                        }
                    }
                }
            }
            // What this server does anyway.
            "sync" | "insecure" | "no_subtree_check" | "wdelay" | "no_wdelay" | "hide" | "acl"
            | "no_acl" | "insecure_locks" | "secure_locks" | "no_auth_nlm" | "auth_nlm"
            | "no_pnfs" => {
                if value.is_some() {
                    return err(at, format!("option `{name}` takes no value"));
                }
            }
            "async" => out.warnings.push(
                "`async` is ignored: this server commits writes as the client asks (sync)".into(),
            ),
            "secure" => out.warnings.push(
                "`secure` is not enforced: this server does not check that clients use a reserved port".into(),
            ),
            "subtree_check" => out.warnings.push(
                "`subtree_check` is ignored: handles name files, not paths (no_subtree_check)".into(),
            ),
            "nohide" | "crossmnt" => out.warnings.push(format!(
                "`{name}` is ignored: file systems mounted below an export are never served; export them on lines of their own"
            )),
            "fsid" => out.warnings.push(format!(
                "`fsid={}` is ignored: file handles here name the export by a keyed hash of its path, and NFSv4 clients see every export at its own path",
                value.unwrap_or("")
            )),
            "nordirplus" => out
                .warnings
                .push("`nordirplus` is ignored: READDIRPLUS is always served".into()),
            "security_label" => out
                .warnings
                .push("`security_label` is ignored: no security labels are served".into()),
            "pnfs" => out
                .warnings
                .push("`pnfs` is ignored: this server offers no layouts".into()),
            "mountpoint" | "mp" | "refer" | "replicas" | "xprtsec" => {
                return err(
                    at,
                    format!("option `{name}` is not supported by this server: remove it"),
                )
            }
            other => {
                return err(
                    at,
                    format!("unknown option `{other}` (options: rw, ro, root_squash, no_root_squash, all_squash, anonuid=N, anongid=N, sec=sys)"),
                )
            }
        }
    }
    Ok(())
}

/// Parses a client pattern.
fn client_spec(w: &str, at: usize, warnings: &mut Vec<String>) -> Result<ClientSpec, ExportsError> {
    if w == "*" {
        return Ok(ClientSpec::Any);
    }
    if let Some(group) = w.strip_prefix('@') {
        return err(
            at,
            format!("netgroup `@{group}`: NIS netgroups are not supported; list the hosts or their network (192.0.2.0/24)"),
        );
    }
    if w.starts_with("gss/") {
        return err(
            at,
            format!("`{w}`: RPCSEC_GSS clients are not supported; give hosts, networks or *"),
        );
    }
    if let Some((addr, mask)) = w.split_once('/') {
        let Ok(ip) = addr.parse::<IpAddr>() else {
            return err(
                at,
                format!("`{w}`: a network is an address and a prefix length or netmask (192.0.2.0/24, 2001:db8::/32)"),
            );
        };
        let bits: u8 = if ip.is_ipv4() { 32 } else { 128 };
        let prefix = if let Ok(p) = mask.parse::<u8>() {
            if p > bits {
                return err(at, format!("`{w}`: the prefix length is at most {bits}"));
            }
            p
        } else if let (IpAddr::V4(_), Ok(m)) = (ip, mask.parse::<std::net::Ipv4Addr>()) {
            let m = u32::from(m);
            if m.leading_ones() + m.trailing_zeros() != 32 {
                return err(
                    at,
                    format!("`{w}`: the netmask {mask} is not contiguous ones then zeros"),
                );
            }
            m.leading_ones() as u8
        } else {
            return err(
                at,
                format!("`{w}`: `{mask}` is neither a prefix length nor a netmask"),
            );
        };
        let net = match ip {
            IpAddr::V4(a) => IpAddr::V4((u32::from(a) & mask32(prefix)).into()),
            IpAddr::V6(a) => IpAddr::V6((u128::from(a) & mask128(prefix)).into()),
        };
        if net != ip {
            warnings.push(format!(
                "`{w}` has host bits set: it means the network {net}/{prefix}"
            ));
        }
        return Ok(ClientSpec::Net(net, prefix));
    }
    if let Ok(ip) = w.parse::<IpAddr>() {
        return Ok(ClientSpec::Addr(ip.to_canonical()));
    }
    if w.contains(['*', '?', '[']) {
        return err(
            at,
            format!("wildcard host name `{w}`: matching names needs reverse DNS lookups, which this server does not make; list the hosts, or give their network (192.0.2.0/24), or * for every client"),
        );
    }
    let valid = !w.is_empty()
        && w.len() <= 253
        && w.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    if !valid {
        return err(
            at,
            format!("`{w}` is not a host name, an address, a network or *"),
        );
    }
    Ok(ClientSpec::Host(w.to_ascii_lowercase()))
}

impl ExportsFile {
    /// Parses the text of an exports file.
    pub fn parse(text: &[u8]) -> Result<Self, ExportsError> {
        let mut file = ExportsFile::default();
        for (at, line) in logical_lines(text) {
            let ws = words(&line, at)?;
            let mut it = ws.into_iter();
            let Some(first) = it.next() else { continue };
            let path = export_path(&first.text, at)?;
            let mut defaults = Opts::default();
            let mut rules = Vec::new();
            let mut warnings = Vec::new();
            for w in it {
                let text = match String::from_utf8(w.text) {
                    Ok(t) if !w.quoted => t,
                    _ => {
                        return err(
                            at,
                            "only the path may be quoted or hold escapes or bytes beyond ASCII; clients and options are plain words",
                        )
                    }
                };
                let mut out = OptionsOut {
                    warnings: Vec::new(),
                };
                if let Some(list) = text.strip_prefix('-') {
                    apply_options(list, &mut defaults, at, &mut out)?;
                    warnings.append(&mut out.warnings);
                    continue;
                }
                if text.starts_with('(') {
                    return err(
                        at,
                        format!("options `{text}` stand apart from a client: write them right after it with no space (host{text}), or `*{text}` for every client (Linux would read this as every client)"),
                    );
                }
                let (who, opts) = match text.find('(') {
                    Some(i) => {
                        let Some(list) = text[i + 1..].strip_suffix(')') else {
                            return err(
                                at,
                                format!("options of `{}` are not closed: `(`...`)` with no spaces inside (host(rw,no_root_squash))", &text[..i]),
                            );
                        };
                        (&text[..i], Some(list))
                    }
                    None if text.contains(')') => {
                        return err(
                            at,
                            format!(
                                "`{text}`: a `)` without its `(`; no spaces inside an option list"
                            ),
                        )
                    }
                    None => (text.as_str(), None),
                };
                if opts.is_some_and(|o| o.contains(['(', ')'])) {
                    return err(at, format!("`{text}`: parentheses inside an option list"));
                }
                let client = client_spec(who, at, &mut warnings)?;
                let mut access = defaults;
                if let Some(list) = opts {
                    apply_options(list, &mut access, at, &mut out)?;
                    warnings.append(&mut out.warnings);
                }
                rules.push(Rule {
                    client,
                    access: access.access(),
                    line: at,
                });
            }
            if rules.is_empty() {
                return err(
                    at,
                    format!("no client is listed for {}: add the clients allowed to mount it (`*(ro)` for every client)", path.display()),
                );
            }
            file.warnings.extend(
                warnings
                    .into_iter()
                    .map(|message| Warning { line: at, message }),
            );
            match file.exports.iter_mut().find(|e| e.path == path) {
                Some(e) => e.rules.extend(rules),
                None => file.exports.push(ExportLine {
                    path,
                    line: at,
                    rules,
                }),
            }
        }
        for e in &file.exports {
            for (i, r) in e.rules.iter().enumerate() {
                if let Some(first) = e.rules[..i].iter().find(|o| o.client == r.client) {
                    return err(
                        r.line,
                        format!(
                            "client `{}` is listed twice for {} (first on line {}): keep one",
                            r.client,
                            e.path.display(),
                            first.line
                        ),
                    );
                }
            }
        }
        Ok(file)
    }
}
