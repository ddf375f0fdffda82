//! The command line of `run` (and of the workers it starts).

use std::path::PathBuf;

pub(crate) const MIB: u64 = 1 << 20;
pub(crate) const USAGE: &str =
    "usage: nfs-fsx run DIR [--seed N] [--ops N] [--procs N] [--max-size BYTES] \
[--small-size BYTES] [--verify-every N] [--drop-caches auto|yes|no] [--no-mmap] [--no-direct] \
[--manifest FILE] [--corrupt-at N] [--pause-at N] [--owner-rw]\n       nfs-fsx manifest DIR";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DropCaches {
    Auto,
    Yes,
    No,
}

#[derive(Debug, Clone)]
pub(crate) struct Opts {
    pub(crate) seed: u64,
    pub(crate) ops: u64,
    pub(crate) procs: usize,
    pub(crate) max_size: u64,
    pub(crate) small_size: u64,
    pub(crate) verify_every: u64,
    pub(crate) drop_caches: DropCaches,
    pub(crate) mmap: bool,
    pub(crate) direct: bool,
    pub(crate) manifest: Option<PathBuf>,
    pub(crate) corrupt_at: Option<u64>,
    pub(crate) pause_at: Option<u64>,
    pub(crate) owner_rw: bool,
    /// The run's directory (where the pause markers go).
    pub(crate) top: PathBuf,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            seed: 1,
            ops: 1000,
            procs: 1,
            max_size: 5 * MIB / 2,
            small_size: 128 << 10,
            verify_every: 100,
            drop_caches: DropCaches::Auto,
            mmap: true,
            direct: true,
            manifest: None,
            corrupt_at: None,
            pause_at: None,
            owner_rw: false,
            top: PathBuf::new(),
        }
    }
}

impl Opts {
    pub(crate) fn to_args(&self) -> Vec<String> {
        let mut v = vec![
            "--seed".into(),
            self.seed.to_string(),
            "--procs".into(),
            self.procs.to_string(),
            "--ops".into(),
            self.ops.to_string(),
            "--max-size".into(),
            self.max_size.to_string(),
            "--small-size".into(),
            self.small_size.to_string(),
            "--verify-every".into(),
            self.verify_every.to_string(),
            "--drop-caches".into(),
            match self.drop_caches {
                DropCaches::Auto => "auto",
                DropCaches::Yes => "yes",
                DropCaches::No => "no",
            }
            .into(),
        ];
        if !self.mmap {
            v.push("--no-mmap".into());
        }
        if !self.direct {
            v.push("--no-direct".into());
        }
        if let Some(n) = self.corrupt_at {
            v.push("--corrupt-at".into());
            v.push(n.to_string());
        }
        if self.owner_rw {
            v.push("--owner-rw".into());
        }
        if let Some(n) = self.pause_at {
            v.push("--pause-at".into());
            v.push(n.to_string());
        }
        v
    }
}

/// Parses a size with an optional K/M/G suffix (powers of 1024).
pub(crate) fn size_arg(s: &str) -> Result<u64, String> {
    let (num, mul) = match s.as_bytes().last() {
        Some(b'K' | b'k') => (&s[..s.len() - 1], 1 << 10),
        Some(b'M' | b'm') => (&s[..s.len() - 1], 1 << 20),
        Some(b'G' | b'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>()
        .map(|n| n * mul)
        .map_err(|_| format!("{s:?} is not a size (a number, optionally with K, M or G)"))
}

pub(crate) fn parse_opts(args: &[String]) -> Result<(PathBuf, Opts, Option<usize>), String> {
    let mut o = Opts::default();
    let mut dir = None;
    let mut worker = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
        };
        let num = |s: String, name: &str| {
            s.parse::<u64>()
                .map_err(|_| format!("{name} wants a number, not {s:?}"))
        };
        match a.as_str() {
            "--seed" => o.seed = num(val(a)?, a)?,
            "--ops" => o.ops = num(val(a)?, a)?,
            "--procs" => o.procs = num(val(a)?, a)?.clamp(1, 64) as usize,
            "--max-size" => o.max_size = size_arg(&val(a)?)?,
            "--small-size" => o.small_size = size_arg(&val(a)?)?,
            "--verify-every" => o.verify_every = num(val(a)?, a)?,
            "--drop-caches" => {
                o.drop_caches = match val(a)?.as_str() {
                    "auto" => DropCaches::Auto,
                    "yes" => DropCaches::Yes,
                    "no" => DropCaches::No,
                    v => return Err(format!("--drop-caches is auto, yes or no, not {v:?}")),
                }
            }
            "--no-mmap" => o.mmap = false,
            "--no-direct" => o.direct = false,
            "--manifest" => o.manifest = Some(PathBuf::from(val(a)?)),
            "--corrupt-at" => o.corrupt_at = Some(num(val(a)?, a)?),
            "--pause-at" => o.pause_at = Some(num(val(a)?, a)?),
            "--owner-rw" => o.owner_rw = true,
            "--worker" => worker = Some(num(val(a)?, a)? as usize),
            s if s.starts_with('-') => return Err(format!("unknown option {s}\n{USAGE}")),
            s if dir.is_none() => dir = Some(PathBuf::from(s)),
            s => return Err(format!("one directory only (also got {s:?})\n{USAGE}")),
        }
    }
    let dir = dir.ok_or_else(|| format!("no directory given\n{USAGE}"))?;
    o.top = dir.clone();
    if o.small_size == 0 || o.max_size < o.small_size {
        return Err("--max-size must be at least --small-size, and both above 0".into());
    }
    Ok((dir, o, worker))
}
