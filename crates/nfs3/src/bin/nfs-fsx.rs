//! `nfs-fsx`: a file-system exerciser in the manner of `fsx`, for checking
//! an NFS server through a client's mount (the Linux kernel NFS client in
//! the interop guest: `scripts/interop/nfs-fsx-guest.sh`, run by
//! `nfs-kernel-client.sh`).
//!
//! ```text
//! nfs-fsx run DIR [--seed N] [--ops N] [--procs N] [--max-size BYTES]
//!                 [--small-size BYTES] [--verify-every N]
//!                 [--drop-caches auto|yes|no] [--no-mmap] [--no-direct]
//!                 [--manifest FILE] [--corrupt-at N] [--pause-at N] [--owner-rw]
//! nfs-fsx manifest DIR
//! ```
//!
//! `run` starts `--procs` workers (processes), each in its own directory
//! `DIR/pN`, and each runs `--ops` seeded random operations on a small
//! name space and checks every result against an in-memory model of what
//! the directory must hold: writes at random offsets and lengths (across
//! 1 MiB boundaries, unaligned, past the end), reads compared with the
//! model, truncates up and down, appends, writes and reads through `mmap`
//! and with `O_DIRECT`, `copy_file_range` between files, writes and reads
//! far out in a sparse scratch file (around 2 GiB, 4 GiB, 1 TiB and
//! 4 TiB), `fsync`/`fdatasync`,
//! closing and reopening, exclusive creates, renames (over files, of directories, into a directory's own
//! subtree), hard links, unlinks, `mkdir`/`rmdir` (of a non-empty directory
//! too), symbolic links and `readlink`, FIFOs (`mknod`), `lchown` (as root),
//! `chmod`, `utimensat`, `stat` and directory listings. Every `--verify-every` operations it closes its
//! files, syncs, drops the page cache (`/proc/sys/vm/drop_caches`) and
//! compares the whole tree, every byte, with the model. An operation that
//! must fail is checked to fail with the right `errno`.
//!
//! The model's final state goes to `--manifest` (one line per name: type,
//! mode, link count, size and a 64-bit FNV-1a hash of the contents, or the
//! link target); `manifest DIR` prints the same lines for a real directory,
//! so the server's own copy can be compared with what the client was told.
//!
//! File modes are any of 0000..0777 for root, and keep the owner's read
//! and write bits otherwise or with `--owner-rw` (for a root squashed to
//! another user by the server).
//!
//! `--pause-at N` lets the server restart under the mount: after
//! operation N each worker, its files still open, creates `DIR/pause-pW`
//! and waits (up to ten minutes) until `DIR/resume` exists, then goes on
//! with the same descriptors and handles.
//!
//! `--corrupt-at N` checks the checker: at operation N each worker changes
//! one byte of a file behind the model's back and checks the whole tree,
//! which must fail.
//!
//! Output: `FSX-OK ...` per worker on success; on a failure `FSX-FAIL ...`
//! with the operation, the seed and the operations that led to it (a run
//! with the same seed repeats it). Exit status 0 only if every worker
//! passed.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{
    DirBuilderExt, FileExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt,
};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use rustix::fs::{OFlags, Timespec, Timestamps};

const MIB: u64 = 1 << 20;
const USAGE: &str = "usage: nfs-fsx run DIR [--seed N] [--ops N] [--procs N] [--max-size BYTES] \
[--small-size BYTES] [--verify-every N] [--drop-caches auto|yes|no] [--no-mmap] [--no-direct] \
[--manifest FILE] [--corrupt-at N] [--pause-at N] [--owner-rw]\n       nfs-fsx manifest DIR";

/// xorshift64* seeded through splitmix64: the same seed, the same run.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng((z ^ (z >> 31)) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in `0..n` (0 if `n` is 0).
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
    fn pct(&mut self, p: u64) -> bool {
        self.below(100) < p
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> Option<&'a T> {
        if v.is_empty() {
            None
        } else {
            Some(&v[self.below(v.len() as u64) as usize])
        }
    }
    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

/// FNV-1a, 64 bits.
fn fnv64(data: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    File(u32),
    Dir(u32),
    Symlink(Vec<u8>),
    /// A FIFO (never opened) and its mode.
    Fifo(u32),
}

#[derive(Debug)]
struct Inode {
    data: Vec<u8>,
    mode: u32,
    links: u32,
    /// Largest size this file grows to.
    max: u64,
}

/// What the directory must hold: relative path → entry; files by inode.
#[derive(Debug, Default)]
struct Model {
    entries: BTreeMap<String, Entry>,
    inodes: HashMap<u32, Inode>,
    next_ino: u32,
}

fn parent_of(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

fn depth(path: &str) -> usize {
    if path.is_empty() {
        0
    } else {
        path.matches('/').count() + 1
    }
}

impl Model {
    fn dirs(&self) -> Vec<String> {
        let mut v = vec![String::new()];
        v.extend(
            self.entries
                .iter()
                .filter(|(_, e)| matches!(e, Entry::Dir(_)))
                .map(|(p, _)| p.clone()),
        );
        v
    }
    fn files(&self) -> Vec<(String, u32)> {
        self.entries
            .iter()
            .filter_map(|(p, e)| match e {
                Entry::File(i) => Some((p.clone(), *i)),
                _ => None,
            })
            .collect()
    }
    fn symlinks(&self) -> Vec<String> {
        self.entries
            .iter()
            .filter(|(_, e)| matches!(e, Entry::Symlink(_)))
            .map(|(p, _)| p.clone())
            .collect()
    }
    fn children(&self, dir: &str) -> BTreeSet<String> {
        self.entries
            .keys()
            .filter(|p| parent_of(p) == dir)
            .map(|p| p.rsplit('/').next().unwrap_or(p).to_owned())
            .collect()
    }
    /// `buf` written at `off` of inode `ino` (the file grows with zeros
    /// up to `off` if shorter).
    fn wrote(&mut self, ino: u32, off: u64, buf: &[u8]) {
        let d = &mut self.inodes.get_mut(&ino).expect("inode of a file").data;
        let end = off as usize + buf.len();
        if d.len() < end {
            d.resize(end, 0);
        }
        d[off as usize..end].copy_from_slice(buf);
    }

    /// Drops one name of a file (the inode with its last name).
    fn unlink(&mut self, path: &str) {
        if let Some(Entry::File(i)) = self.entries.remove(path) {
            let ino = self.inodes.get_mut(&i).expect("inode of a name");
            ino.links -= 1;
            if ino.links == 0 {
                self.inodes.remove(&i);
            }
        }
    }
    /// The manifest lines of the model.
    fn manifest(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|(p, e)| match e {
                Entry::File(i) => {
                    let n = &self.inodes[i];
                    manifest_file(p, n.mode, n.links, &n.data)
                }
                Entry::Dir(mode) => manifest_dir(p, *mode),
                Entry::Symlink(t) => manifest_link(p, t),
                Entry::Fifo(mode) => manifest_fifo(p, *mode),
            })
            .collect()
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().fold(String::new(), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

fn manifest_file(path: &str, mode: u32, links: u32, data: &[u8]) -> String {
    format!(
        "{path} file mode={mode:04o} links={links} size={} fnv={:016x}",
        data.len(),
        fnv64(data)
    )
}
fn manifest_fifo(path: &str, mode: u32) -> String {
    format!("{path} fifo mode={mode:04o}")
}
fn manifest_dir(path: &str, mode: u32) -> String {
    format!("{path} dir mode={mode:04o}")
}
fn manifest_link(path: &str, target: &[u8]) -> String {
    if target.len() <= 64 {
        format!("{path} symlink target={}", hex(target))
    } else {
        format!(
            "{path} symlink target-size={} fnv={:016x}",
            target.len(),
            fnv64(target)
        )
    }
}

/// The manifest of a real directory tree (paths relative to `root`).
fn manifest_of(root: &Path) -> io::Result<Vec<String>> {
    let mut out = Vec::new();
    let mut stack = vec![String::new()];
    while let Some(rel) = stack.pop() {
        let dir = if rel.is_empty() {
            root.to_path_buf()
        } else {
            root.join(&rel)
        };
        for e in fs::read_dir(&dir)? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            let path = join(&rel, &name);
            let md = fs::symlink_metadata(e.path())?;
            let mode = md.mode() & 0o7777;
            if md.file_type().is_symlink() {
                let t = fs::read_link(e.path())?;
                out.push(manifest_link(&path, t.as_os_str().as_encoded_bytes()));
            } else if md.is_dir() {
                out.push(manifest_dir(&path, mode));
                stack.push(path);
            } else if md.file_type().is_fifo() {
                out.push(manifest_fifo(&path, mode));
            } else {
                let data = fs::read(e.path())?;
                out.push(manifest_file(&path, mode, md.nlink() as u32, &data));
            }
        }
    }
    out.sort();
    Ok(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DropCaches {
    Auto,
    Yes,
    No,
}

#[derive(Debug, Clone)]
struct Opts {
    seed: u64,
    ops: u64,
    procs: usize,
    max_size: u64,
    small_size: u64,
    verify_every: u64,
    drop_caches: DropCaches,
    mmap: bool,
    direct: bool,
    manifest: Option<PathBuf>,
    corrupt_at: Option<u64>,
    pause_at: Option<u64>,
    owner_rw: bool,
    /// The run's directory (where the pause markers go).
    top: PathBuf,
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
    fn to_args(&self) -> Vec<String> {
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
fn size_arg(s: &str) -> Result<u64, String> {
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

fn parse_opts(args: &[String]) -> Result<(PathBuf, Opts, Option<usize>), String> {
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

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("manifest") if args.len() == 2 => match manifest_of(Path::new(&args[1])) {
            Ok(lines) => {
                let mut out = io::stdout().lock();
                for l in lines {
                    let _ = writeln!(out, "{l}");
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("nfs-fsx manifest {}: {e}", args[1]);
                ExitCode::FAILURE
            }
        },
        Some("run") => match parse_opts(&args[1..]) {
            Ok((dir, o, Some(w))) => worker_main(&dir, &o, w),
            Ok((dir, o, None)) => run(&dir, &o),
            Err(e) => {
                eprintln!("nfs-fsx: {e}");
                ExitCode::from(2)
            }
        },
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// The parent: one worker process per `--procs`, then the merged manifest.
fn run(dir: &Path, o: &Opts) -> ExitCode {
    if let Err(e) = fs::create_dir_all(dir) {
        eprintln!("nfs-fsx: cannot make {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("nfs-fsx: cannot find my own program to start the workers: {e}");
            return ExitCode::FAILURE;
        }
    };
    let tmp = std::env::temp_dir();
    let mut children = Vec::new();
    for w in 0..o.procs {
        let part = tmp.join(format!("nfs-fsx-{}-{w}.manifest", std::process::id()));
        let mut cmd = Command::new(&exe);
        cmd.arg("run")
            .arg(dir)
            .args(o.to_args())
            .arg("--worker")
            .arg(w.to_string())
            .arg("--manifest")
            .arg(&part);
        match cmd.spawn() {
            Ok(c) => children.push((w, c, part)),
            Err(e) => {
                eprintln!("nfs-fsx: cannot start worker {w}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let mut failed = 0;
    let mut lines = Vec::new();
    for (w, mut c, part) in children {
        match c.wait() {
            Ok(s) if s.success() => {}
            Ok(s) => {
                eprintln!("FSX-FAIL worker {w} exited with {s}");
                failed += 1;
            }
            Err(e) => {
                eprintln!("FSX-FAIL worker {w}: {e}");
                failed += 1;
            }
        }
        lines.push(manifest_dir(&format!("p{w}"), 0o755));
        if let Ok(text) = fs::read_to_string(&part) {
            lines.extend(text.lines().map(|l| format!("p{w}/{l}")));
        }
        let _ = fs::remove_file(&part);
    }
    lines.sort();
    if o.pause_at.is_some() {
        // The pause markers are not the workers'.
        for e in fs::read_dir(dir).into_iter().flatten().flatten() {
            let n = e.file_name();
            if n == "resume" || n.to_string_lossy().starts_with("pause-p") {
                let _ = fs::remove_file(e.path());
            }
        }
    }
    if failed == 0 {
        // What the client sees now, after every worker's last check.
        match manifest_of(dir) {
            Ok(seen) if seen == lines => {}
            Ok(seen) => {
                eprintln!(
                    "FSX-FAIL the tree differs from the workers' models:\n{}",
                    diff(&lines, &seen)
                );
                failed += 1;
            }
            Err(e) => {
                eprintln!("FSX-FAIL listing {}: {e}", dir.display());
                failed += 1;
            }
        }
    }
    if let Some(m) = &o.manifest {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        if let Err(e) = fs::write(m, text) {
            eprintln!("FSX-FAIL writing the manifest {}: {e}", m.display());
            failed += 1;
        }
    }
    if failed == 0 {
        println!(
            "FSX-DONE {} workers x {} ops, seed {}: all passed, {} names",
            o.procs,
            o.ops,
            o.seed,
            lines.len()
        );
        ExitCode::SUCCESS
    } else {
        println!("FSX-DONE {failed} failed");
        ExitCode::FAILURE
    }
}

/// Lines only in `want` (-) and only in `got` (+).
fn diff(want: &[String], got: &[String]) -> String {
    let w: BTreeSet<_> = want.iter().collect();
    let g: BTreeSet<_> = got.iter().collect();
    let mut s = String::new();
    for l in w.difference(&g) {
        let _ = writeln!(s, "  - {l}");
    }
    for l in g.difference(&w) {
        let _ = writeln!(s, "  + {l}");
    }
    s
}

fn worker_main(dir: &Path, o: &Opts, w: usize) -> ExitCode {
    // Modes are what the model says, whatever the caller's umask.
    rustix::process::umask(rustix::fs::Mode::empty());
    let root = dir.join(format!("p{w}"));
    let seed = o.seed.wrapping_mul(1_000_003).wrapping_add(w as u64);
    let mut wk = Worker {
        root,
        rng: Rng::new(seed),
        m: Model::default(),
        open: HashMap::new(),
        o: o.clone(),
        w,
        op_no: 0,
        log: VecDeque::new(),
        stats: BTreeMap::new(),
        dropped: false,
    };
    match wk.main() {
        Ok(()) => {
            let counts: Vec<String> = wk.stats.iter().map(|(k, v)| format!("{k}={v}")).collect();
            println!(
                "FSX-OK p{w} seed {seed}: {} ops, {} names at the end{}; {}",
                o.ops,
                wk.m.entries.len(),
                if wk.dropped {
                    ", page cache dropped before each check"
                } else {
                    ""
                },
                counts.join(" ")
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            let mut s = format!(
                "FSX-FAIL p{w} seed {seed} (run --seed {} --procs {}) op {}: {e}\n  last operations:\n",
                o.seed, o.procs, wk.op_no
            );
            for l in &wk.log {
                let _ = writeln!(s, "    {l}");
            }
            eprint!("{s}");
            println!(
                "FSX-FAIL p{w} op {}: {}",
                wk.op_no,
                e.lines().next().unwrap_or("")
            );
            if o.pause_at.is_some() {
                // The other workers must not wait for a restart that will
                // not come.
                let _ = File::create(o.top.join("resume"));
            }
            ExitCode::FAILURE
        }
    }
}

struct Worker {
    root: PathBuf,
    rng: Rng,
    m: Model,
    /// Open descriptors (read-write), by inode.
    open: HashMap<u32, File>,
    o: Opts,
    w: usize,
    op_no: u64,
    log: VecDeque<String>,
    stats: BTreeMap<&'static str, u64>,
    dropped: bool,
}

type Res = Result<(), String>;

fn errno_name(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => format!("{} ({e})", rustix::io::Errno::from_raw_os_error(n)),
        None => e.to_string(),
    }
}

/// Checks that `r` failed with one of `want` (errno values).
fn expect_errno<T>(r: io::Result<T>, want: &[rustix::io::Errno], what: &str) -> Res {
    match r {
        Ok(_) => Err(format!("{what}: succeeded, must fail with {want:?}")),
        Err(e) => {
            let got = e.raw_os_error().map(rustix::io::Errno::from_raw_os_error);
            if got.is_some_and(|g| want.contains(&g)) {
                Ok(())
            } else {
                Err(format!(
                    "{what}: failed with {}, want {want:?}",
                    errno_name(&e)
                ))
            }
        }
    }
}

/// `what: error` for an unexpected failure.
fn ctx<T>(r: io::Result<T>, what: impl FnOnce() -> String) -> Result<T, String> {
    r.map_err(|e| format!("{}: {}", what(), errno_name(&e)))
}

/// First difference of two buffers, for the report.
fn first_diff(want: &[u8], got: &[u8], base: u64) -> String {
    let n = want.len().min(got.len());
    let at = (0..n).find(|&i| want[i] != got[i]);
    let bad = (0..n).filter(|&i| want[i] != got[i]).count();
    match at {
        Some(i) => {
            let end = (i + 16).min(n);
            format!(
                "{bad} bytes differ, the first at offset {} (want {} got {}); lengths want {} got {}",
                base + i as u64,
                hex(&want[i..end]),
                hex(&got[i..end]),
                want.len(),
                got.len()
            )
        }
        None => format!(
            "lengths differ: want {} bytes, got {}",
            want.len(),
            got.len()
        ),
    }
}

use rustix::io::Errno;

impl Worker {
    fn path(&self, rel: &str) -> PathBuf {
        if rel.is_empty() {
            self.root.clone()
        } else {
            self.root.join(rel)
        }
    }

    fn note(&mut self, s: String) {
        if self.log.len() == 40 {
            self.log.pop_front();
        }
        self.log.push_back(format!("#{} {s}", self.op_no));
    }

    fn count(&mut self, k: &'static str) {
        *self.stats.entry(k).or_default() += 1;
    }

    fn main(&mut self) -> Res {
        match fs::remove_dir_all(&self.root) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(format!("clearing {}: {e}", self.root.display())),
        }
        ctx(fs::create_dir(&self.root), || {
            format!("mkdir {}", self.root.display())
        })?;
        ctx(
            fs::set_permissions(&self.root, fs::Permissions::from_mode(0o755)),
            || "chmod of the work directory".into(),
        )?;
        for i in 0..self.o.ops {
            self.op_no = i + 1;
            if self.o.corrupt_at == Some(self.op_no) {
                self.corrupt()?;
                self.verify_all()?;
            }
            self.step()?;
            if self.o.pause_at == Some(self.op_no) {
                self.pause()?;
            }
            if self.o.verify_every > 0 && self.op_no % self.o.verify_every == 0 {
                self.verify_all()?;
            }
        }
        self.op_no += 1;
        self.verify_all()?;
        if let Some(m) = &self.o.manifest {
            let text: String = self.m.manifest().iter().map(|l| format!("{l}\n")).collect();
            ctx(fs::write(m, text), || format!("writing {}", m.display()))?;
        }
        Ok(())
    }

    /// `--pause-at`: `pause-pW` made, then a wait for `resume` (listing the
    /// directory, which revalidates it, once a second).
    fn pause(&mut self) -> Res {
        let marker = self.o.top.join(format!("pause-p{}", self.w));
        self.note("pause".into());
        ctx(File::create(&marker), || {
            format!("create {}", marker.display())
        })?;
        println!("FSX-PAUSE p{} after op {}", self.w, self.op_no);
        for _ in 0..600 {
            let found = ctx(fs::read_dir(&self.o.top), || {
                "listing the run's directory".into()
            })?
            .flatten()
            .any(|e| e.file_name() == "resume");
            if found {
                println!("FSX-RESUME p{}", self.w);
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
        Err(format!(
            "paused: no {}/resume after ten minutes",
            self.o.top.display()
        ))
    }

    /// `--corrupt-at`: one byte of a file (made if there is none, with
    /// one byte) changed behind the model's back.
    fn corrupt(&mut self) -> Res {
        let (path, ino) = self.some_file()?;
        if self.m.inodes[&ino].data.is_empty() {
            self.write_at(&path, ino, 0, &[0x5a])?;
        }
        let n = &self.m.inodes[&ino].data;
        let at = self.rng.below(n.len() as u64);
        let byte = n[at as usize] ^ 0xff;
        self.note(format!("corrupt {path} at {at} (not in the model)"));
        let f = ctx(
            OpenOptions::new().write(true).open(self.path(&path)),
            || format!("open {path}"),
        )?;
        ctx(f.write_all_at(&[byte], at), || format!("corrupt {path}"))
    }

    /// A write the model knows of.
    fn write_at(&mut self, path: &str, ino: u32, off: u64, buf: &[u8]) -> Res {
        let f = self.fd(path, ino)?;
        ctx(f.write_all_at(buf, off), || {
            format!("pwrite {path} [{off}, +{})", buf.len())
        })?;
        self.m.wrote(ino, off, buf);
        Ok(())
    }

    fn step(&mut self) -> Res {
        let mut choices: Vec<(u64, &'static str)> = vec![
            (22, "write"),
            (16, "read"),
            (5, "truncate"),
            (5, "append"),
            (3, "fsync"),
            (4, "close"),
            (6, "create"),
            (5, "rename"),
            (3, "link"),
            (4, "unlink"),
            (2, "mkdir"),
            (2, "rmdir"),
            (3, "symlink"),
            (3, "readlink"),
            (3, "chmod"),
            (3, "utimes"),
            (5, "stat"),
            (3, "readdir"),
            (3, "copy"),
            (2, "far"),
            (2, "mkfifo"),
            (2, "chown"),
        ];
        if self.o.mmap {
            choices.push((3, "mmap-read"));
            choices.push((3, "mmap-write"));
        }
        if self.o.direct {
            choices.push((4, "direct-write"));
            choices.push((4, "direct-read"));
        }
        let total: u64 = choices.iter().map(|c| c.0).sum();
        let mut r = self.rng.below(total);
        let mut op = "write";
        for (w, name) in choices {
            if r < w {
                op = name;
                break;
            }
            r -= w;
        }
        self.count(op);
        match op {
            "write" => self.write(false),
            "direct-write" => self.write(true),
            "read" => self.read(false),
            "direct-read" => self.read(true),
            "truncate" => self.truncate(),
            "append" => self.append(),
            "fsync" => self.fsync(),
            "close" => {
                self.note(format!("close {} files", self.open.len()));
                self.open.clear();
                Ok(())
            }
            "create" => self.create(),
            "rename" => self.rename(),
            "link" => self.link(),
            "unlink" => self.unlink(),
            "mkdir" => self.mkdir(),
            "rmdir" => self.rmdir(),
            "symlink" => self.symlink(),
            "readlink" => self.readlink(),
            "chmod" => self.chmod(),
            "utimes" => self.utimes(),
            "stat" => self.stat(),
            "readdir" => self.readdir(),
            "copy" => self.copy(),
            "far" => self.far(),
            "mkfifo" => self.mkfifo(),
            "chown" => self.chown(),
            "mmap-read" => self.mmap_read(),
            "mmap-write" => self.mmap_write(),
            _ => unreachable!("every choice has an operation"),
        }
    }

    /// A random existing file, made if there is none.
    fn some_file(&mut self) -> Result<(String, u32), String> {
        let files = self.m.files();
        if let Some(f) = self.rng.pick(&files) {
            return Ok(f.clone());
        }
        self.create_named("f0")?;
        Ok(self.m.files()[0].clone())
    }

    /// An open read-write descriptor of inode `ino` (named `path`).
    fn fd(&mut self, path: &str, ino: u32) -> Result<&File, String> {
        if !self.open.contains_key(&ino) {
            let p = self.path(path);
            let f = ctx(OpenOptions::new().read(true).write(true).open(&p), || {
                format!("open {path}")
            })?;
            self.open.insert(ino, f);
        }
        Ok(&self.open[&ino])
    }

    /// An offset and length for a write to a file of `size` bytes that
    /// may grow to `max`: anywhere, near a 1 MiB boundary, near the end of
    /// the file, or small and page-aligned; lengths mostly small, some
    /// large (up to 1.5 MiB, across boundaries).
    fn range(&mut self, size: u64, max: u64) -> (u64, u64) {
        let off = match self.rng.below(10) {
            0..=3 => self.rng.below(max),
            4..=6 if max > MIB => {
                let k = 1 + self.rng.below(max / MIB);
                (k * MIB + self.rng.below(10_000)).saturating_sub(5_000)
            }
            4..=8 => (size + self.rng.below(10_000)).saturating_sub(5_000),
            _ => self.rng.below(64) * 4096,
        };
        let len = match self.rng.below(20) {
            0..=9 => 1 + self.rng.below(4096),
            10..=15 => 1 + self.rng.below(65_536),
            16..=18 => 1 + self.rng.below(300_000),
            _ => 1 + self.rng.below(3 * MIB / 2),
        };
        let off = off.min(max - 1);
        (off, len.min(max - off).max(1))
    }

    fn write(&mut self, direct: bool) -> Res {
        let (path, ino) = self.some_file()?;
        let (size, max) = {
            let n = &self.m.inodes[&ino];
            (n.data.len() as u64, n.max)
        };
        let (off, len) = self.range(size, max);
        let mut buf = vec![0u8; len as usize];
        self.rng.fill(&mut buf);
        let how = if direct { "O_DIRECT " } else { "" };
        self.note(format!("{how}write {path} [{off}, +{len}) (size {size})"));
        if direct {
            let f = ctx(
                OpenOptions::new()
                    .write(true)
                    .custom_flags(OFlags::DIRECT.bits() as i32)
                    .open(self.path(&path)),
                || format!("open {path} O_DIRECT"),
            )?;
            ctx(f.write_all_at(&buf, off), || {
                format!("O_DIRECT pwrite {path} [{off}, +{len})")
            })?;
            self.m.wrote(ino, off, &buf);
            Ok(())
        } else {
            self.write_at(&path, ino, off, &buf)
        }
    }

    fn read(&mut self, direct: bool) -> Res {
        let (path, ino) = self.some_file()?;
        let size = self.m.inodes[&ino].data.len() as u64;
        let (off, len) = self.range(size, size.max(1) + 8192);
        let how = if direct { "O_DIRECT " } else { "" };
        self.note(format!("{how}read {path} [{off}, +{len}) (size {size})"));
        let mut got = vec![0u8; len as usize];
        let n = if direct {
            let f = ctx(
                OpenOptions::new()
                    .read(true)
                    .custom_flags(OFlags::DIRECT.bits() as i32)
                    .open(self.path(&path)),
                || format!("open {path} O_DIRECT"),
            )?;
            read_full(&f, &mut got, off)
        } else {
            let f = self.fd(&path, ino)?;
            read_full(f, &mut got, off)
        };
        let n = ctx(n, || format!("{how}pread {path} [{off}, +{len})"))?;
        got.truncate(n);
        let d = &self.m.inodes[&ino].data;
        let want = &d[(off as usize).min(d.len())..((off + len) as usize).min(d.len())];
        if got != want {
            return Err(format!(
                "{how}read {path} [{off}, +{len}): {}",
                first_diff(want, &got, off)
            ));
        }
        Ok(())
    }

    fn truncate(&mut self) -> Res {
        let (path, ino) = self.some_file()?;
        let (size, max) = {
            let n = &self.m.inodes[&ino];
            (n.data.len() as u64, n.max)
        };
        let new = if self.rng.pct(50) {
            self.rng.below(size + 1)
        } else {
            self.rng.below(max + 1)
        };
        let by_path = self.rng.pct(50);
        self.note(format!(
            "truncate {path} {size} -> {new}{}",
            if by_path { " (by a new open)" } else { "" }
        ));
        if by_path {
            let f = ctx(
                OpenOptions::new().write(true).open(self.path(&path)),
                || format!("open {path} for truncate"),
            )?;
            ctx(f.set_len(new), || format!("ftruncate {path} {new}"))?;
        } else {
            let f = self.fd(&path, ino)?;
            ctx(f.set_len(new), || format!("ftruncate {path} {new}"))?;
        }
        self.m
            .inodes
            .get_mut(&ino)
            .expect("inode")
            .data
            .resize(new as usize, 0);
        Ok(())
    }

    fn append(&mut self) -> Res {
        let (path, ino) = self.some_file()?;
        let (size, max) = {
            let n = &self.m.inodes[&ino];
            (n.data.len() as u64, n.max)
        };
        if size + 1 >= max {
            return self.truncate();
        }
        let len = (1 + self.rng.below(20_000)).min(max - size);
        let mut buf = vec![0u8; len as usize];
        self.rng.fill(&mut buf);
        self.note(format!("append {path} +{len} (size {size})"));
        let mut f = ctx(
            OpenOptions::new().append(true).open(self.path(&path)),
            || format!("open {path} O_APPEND"),
        )?;
        ctx(f.write_all(&buf), || format!("append to {path}"))?;
        drop(f);
        self.m
            .inodes
            .get_mut(&ino)
            .expect("inode")
            .data
            .extend_from_slice(&buf);
        Ok(())
    }

    fn fsync(&mut self) -> Res {
        let (path, ino) = self.some_file()?;
        let data_only = self.rng.pct(50);
        self.note(format!(
            "{} {path}",
            if data_only { "fdatasync" } else { "fsync" }
        ));
        let f = self.fd(&path, ino)?;
        if data_only {
            ctx(f.sync_data(), || format!("fdatasync {path}"))
        } else {
            ctx(f.sync_all(), || format!("fsync {path}"))
        }
    }

    /// Far offsets, self-checked in a scratch file that exists only during
    /// the operation: data written around 2^31, 2^32, 2^40 or 2^42 bytes
    /// (buffered or `O_DIRECT`) reads back, the file's size is its end,
    /// the hole before it reads as zeros, and a truncate to half leaves
    /// nothing to read there.
    fn far(&mut self) -> Res {
        let bases = [1u64 << 31, 1 << 32, 1 << 40, 1 << 42];
        let base = bases[self.rng.below(bases.len() as u64) as usize];
        let off = (base + self.rng.below(20_000)).saturating_sub(10_000);
        let len = 1 + self.rng.below(70_000);
        let direct = self.o.direct && self.rng.pct(50);
        let mut buf = vec![0u8; len as usize];
        self.rng.fill(&mut buf);
        let path = self.path("x-far");
        self.note(format!(
            "far: {}write x-far [{off}, +{len}), read back, truncate to half, unlink",
            if direct { "O_DIRECT " } else { "" }
        ));
        let mut opts = OpenOptions::new();
        opts.read(true).write(true).create_new(true).mode(0o600);
        if direct {
            opts.custom_flags(OFlags::DIRECT.bits() as i32);
        }
        let f = ctx(opts.open(&path), || "create x-far".into())?;
        ctx(f.write_all_at(&buf, off), || {
            format!("write x-far [{off}, +{len})")
        })?;
        if self.rng.pct(50) {
            ctx(f.sync_all(), || "fsync x-far".into())?;
        }
        drop(f);
        let f = ctx(File::open(&path), || "reopen x-far".into())?;
        let mut got = vec![0u8; len as usize + 100];
        let n = ctx(read_full(&f, &mut got, off), || {
            format!("read x-far at {off}")
        })?;
        got.truncate(n);
        if got != buf {
            return Err(format!(
                "read x-far at {off}: {}",
                first_diff(&buf, &got, off)
            ));
        }
        let size = ctx(f.metadata(), || "stat x-far".into())?.len();
        if size != off + len {
            return Err(format!("x-far: size {size}, want {}", off + len));
        }
        let hole = self.rng.below(off.max(1));
        let mut z = vec![0xffu8; 4096];
        let n = ctx(read_full(&f, &mut z, hole), || {
            format!("read x-far's hole at {hole}")
        })?;
        if n != 4096.min((off - hole) as usize + len as usize)
            || z[..n.min((off - hole) as usize)].iter().any(|&b| b != 0)
        {
            return Err(format!(
                "x-far's hole at {hole}: {n} bytes, not all zeros before {off}"
            ));
        }
        drop(f);
        let f = ctx(OpenOptions::new().write(true).open(&path), || {
            "open x-far".into()
        })?;
        ctx(f.set_len(off / 2), || {
            format!("truncate x-far to {}", off / 2)
        })?;
        drop(f);
        let f = ctx(File::open(&path), || "reopen x-far".into())?;
        let n = ctx(read_full(&f, &mut z, off), || {
            format!("read x-far at {off} after the truncate")
        })?;
        let size = ctx(f.metadata(), || "stat x-far".into())?.len();
        if n != 0 || size != off / 2 {
            return Err(format!(
                "x-far truncated to {}: size {size}, {n} bytes read at {off}",
                off / 2
            ));
        }
        drop(f);
        ctx(fs::remove_file(&path), || "unlink x-far".into())
    }

    /// `copy_file_range` from one file into another (or another range of
    /// the same file, not overlapping).
    fn copy(&mut self) -> Res {
        let (src, si) = self.some_file()?;
        let files = self.m.files();
        let (dst, di) = self.rng.pick(&files).cloned().unwrap_or((src.clone(), si));
        let ssize = self.m.inodes[&si].data.len() as u64;
        let dmax = self.m.inodes[&di].max;
        if ssize == 0 {
            return self.write(false);
        }
        let off_in = self.rng.below(ssize);
        let mut len = (1 + self.rng.below(200_000)).min(ssize - off_in);
        let mut off_out = self.rng.below(dmax);
        len = len.min(dmax - off_out);
        if si == di && off_in < off_out + len && off_out < off_in + len {
            // Overlapping ranges of one file are refused (EINVAL).
            off_out = (off_in + len).min(dmax - 1);
            len = len.min(dmax - off_out);
        }
        self.note(format!(
            "copy_file_range {src} [{off_in}, +{len}) -> {dst} at {off_out}"
        ));
        let fin = ctx(File::open(self.path(&src)), || format!("open {src}"))?;
        let fout = ctx(OpenOptions::new().write(true).open(self.path(&dst)), || {
            format!("open {dst}")
        })?;
        let (mut a, mut b) = (off_in, off_out);
        let mut done = 0u64;
        while done < len {
            let n = ctx(
                rustix::fs::copy_file_range(
                    &fin,
                    Some(&mut a),
                    &fout,
                    Some(&mut b),
                    (len - done) as usize,
                )
                .map_err(io::Error::from),
                || format!("copy_file_range {src} -> {dst}"),
            )?;
            if n == 0 {
                return Err(format!(
                    "copy_file_range {src} -> {dst}: 0 bytes after {done} of {len}"
                ));
            }
            done += n as u64;
        }
        let data = self.m.inodes[&si].data[off_in as usize..(off_in + len) as usize].to_vec();
        self.m.wrote(di, off_out, &data);
        Ok(())
    }

    fn mmap_read(&mut self) -> Res {
        let (path, ino) = self.some_file()?;
        let size = self.m.inodes[&ino].data.len();
        if size == 0 {
            return self.read(false);
        }
        self.note(format!("mmap read {path} (size {size})"));
        let f = self.fd(&path, ino)?;
        let got = ctx(mapped::read(f, size), || format!("mmap read {path}"))?;
        let want = &self.m.inodes[&ino].data;
        if &got != want {
            return Err(format!("mmap read {path}: {}", first_diff(want, &got, 0)));
        }
        Ok(())
    }

    fn mmap_write(&mut self) -> Res {
        let (path, ino) = self.some_file()?;
        let size = self.m.inodes[&ino].data.len() as u64;
        if size == 0 {
            return self.write(false);
        }
        let off = self.rng.below(size);
        let len = (1 + self.rng.below(70_000)).min(size - off);
        let mut buf = vec![0u8; len as usize];
        self.rng.fill(&mut buf);
        let sync = self.rng.pct(50);
        self.note(format!(
            "mmap write {path} [{off}, +{len}) (size {size}){}",
            if sync { " + msync" } else { "" }
        ));
        let f = self.fd(&path, ino)?;
        ctx(
            mapped::write(f, size as usize, off as usize, &buf, sync),
            || format!("mmap write {path}"),
        )?;
        self.m.inodes.get_mut(&ino).expect("inode").data[off as usize..(off + len) as usize]
            .copy_from_slice(&buf);
        Ok(())
    }

    fn random_dir(&mut self, max_depth: usize) -> String {
        let dirs: Vec<String> = self
            .m
            .dirs()
            .into_iter()
            .filter(|d| depth(d) <= max_depth)
            .collect();
        self.rng.pick(&dirs).cloned().unwrap_or_default()
    }

    fn create_named(&mut self, path: &str) -> Res {
        let p = self.path(path);
        let mode = 0o600 | (self.rng.below(0o100) as u32 & 0o066);
        let r = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&p);
        if self.m.entries.contains_key(path) {
            self.note(format!("exclusive create {path} (exists)"));
            return expect_errno(r, &[Errno::EXIST], &format!("exclusive create {path}"));
        }
        self.note(format!("create {path} mode {mode:o}"));
        ctx(r, || format!("exclusive create {path}"))?;
        let ino = self.m.next_ino;
        self.m.next_ino += 1;
        // Every third file may grow large; the rest stay small.
        let max = if ino % 3 == 0 {
            self.o.max_size
        } else {
            self.o.small_size
        };
        self.m.inodes.insert(
            ino,
            Inode {
                data: Vec::new(),
                mode,
                links: 1,
                max,
            },
        );
        self.m.entries.insert(path.to_owned(), Entry::File(ino));
        Ok(())
    }

    fn create(&mut self) -> Res {
        let d = self.random_dir(2);
        let name = format!("f{}", self.rng.below(5));
        self.create_named(&join(&d, &name))
    }

    fn rename(&mut self) -> Res {
        let all: Vec<String> = self.m.entries.keys().cloned().collect();
        let Some(src) = self.rng.pick(&all).cloned() else {
            return self.create();
        };
        let src_e = self.m.entries[&src].clone();
        let kind = match src_e {
            Entry::File(_) => "f",
            Entry::Dir(_) => "d",
            Entry::Symlink(_) => "s",
            Entry::Fifo(_) => "p",
        };
        let d = self.random_dir(2);
        let prefix = if self.rng.pct(85) {
            kind
        } else {
            ["f", "d", "s", "p"][self.rng.below(4) as usize]
        };
        let dst = join(&d, &format!("{prefix}{}", self.rng.below(5)));
        let is_dir = matches!(src_e, Entry::Dir(_));
        let into_itself = is_dir && dst.starts_with(&format!("{src}/"));
        if is_dir && !into_itself && depth(&dst) + self.subtree_depth(&src) > 3 {
            // Keeps the tree shallow.
            self.note(format!("rename {src} -> {dst}: skipped (too deep)"));
            return Ok(());
        }
        let what = format!("rename {src} -> {dst}");
        self.note(what.clone());
        // Nothing open may lose its last name (the client would rename
        // it to .nfsXXXX instead of removing it).
        self.open.clear();
        let r = fs::rename(self.path(&src), self.path(&dst));
        if src == dst {
            return ctx(r, || what);
        }
        if into_itself {
            return expect_errno(r, &[Errno::INVAL], &what);
        }
        match (self.m.entries.get(&dst).cloned(), &src_e) {
            (Some(Entry::Dir(_)), Entry::File(_) | Entry::Symlink(_) | Entry::Fifo(_)) => {
                // ENOTEMPTY when the directory is the source's own parent
                // (Linux checks that first).
                return expect_errno(r, &[Errno::ISDIR, Errno::NOTEMPTY], &what);
            }
            (Some(Entry::File(_) | Entry::Symlink(_) | Entry::Fifo(_)), Entry::Dir(_)) => {
                return expect_errno(r, &[Errno::NOTDIR], &what)
            }
            (Some(Entry::Dir(_)), Entry::Dir(_)) if !self.m.children(&dst).is_empty() => {
                return expect_errno(r, &[Errno::NOTEMPTY, Errno::EXIST], &what)
            }
            (Some(Entry::File(a)), Entry::File(b)) if a == *b => {
                // Two names of one file: rename does nothing.
                return ctx(r, || what);
            }
            (Some(Entry::File(_)), _) => {
                ctx(r, || what)?;
                self.m.unlink(&dst);
            }
            (Some(_), _) => {
                ctx(r, || what)?;
                self.m.entries.remove(&dst);
            }
            (None, _) => ctx(r, || what)?,
        }
        let moved: Vec<String> = self
            .m
            .entries
            .keys()
            .filter(|p| **p == src || p.starts_with(&format!("{src}/")))
            .cloned()
            .collect();
        for p in moved {
            let e = self.m.entries.remove(&p).expect("listed");
            self.m
                .entries
                .insert(format!("{dst}{}", &p[src.len()..]), e);
        }
        Ok(())
    }

    /// Levels below `dir` (0 for an empty directory).
    fn subtree_depth(&self, dir: &str) -> usize {
        self.m
            .entries
            .keys()
            .filter(|p| p.starts_with(&format!("{dir}/")))
            .map(|p| depth(p) - depth(dir))
            .max()
            .unwrap_or(0)
    }

    fn link(&mut self) -> Res {
        let (src, ino) = self.some_file()?;
        let d = self.random_dir(2);
        let dst = join(&d, &format!("f{}", self.rng.below(5)));
        let what = format!("link {src} -> {dst}");
        self.note(what.clone());
        let r = fs::hard_link(self.path(&src), self.path(&dst));
        if self.m.entries.contains_key(&dst) {
            return expect_errno(r, &[Errno::EXIST], &what);
        }
        ctx(r, || what)?;
        self.m.inodes.get_mut(&ino).expect("inode").links += 1;
        self.m.entries.insert(dst, Entry::File(ino));
        Ok(())
    }

    fn unlink(&mut self) -> Res {
        let names: Vec<String> = self
            .m
            .entries
            .iter()
            .filter(|(_, e)| !matches!(e, Entry::Dir(_)))
            .map(|(p, _)| p.clone())
            .collect();
        let path = match self.rng.pick(&names) {
            Some(p) if self.rng.pct(90) => p.clone(),
            _ => {
                let d = self.random_dir(2);
                join(&d, &format!("f{}", self.rng.below(5)))
            }
        };
        let what = format!("unlink {path}");
        self.note(what.clone());
        self.open.clear();
        let r = fs::remove_file(self.path(&path));
        match self.m.entries.get(&path) {
            None => expect_errno(r, &[Errno::NOENT], &what),
            Some(Entry::Dir(_)) => expect_errno(r, &[Errno::ISDIR, Errno::PERM], &what),
            Some(_) => {
                ctx(r, || what)?;
                if matches!(self.m.entries.get(&path), Some(Entry::File(_))) {
                    self.m.unlink(&path);
                } else {
                    self.m.entries.remove(&path);
                }
                Ok(())
            }
        }
    }

    fn mkdir(&mut self) -> Res {
        let d = self.random_dir(1);
        let path = join(&d, &format!("d{}", self.rng.below(3)));
        let mode = 0o700 | (self.rng.below(0o100) as u32 & 0o055);
        let what = format!("mkdir {path} mode {mode:o}");
        self.note(what.clone());
        let r = fs::DirBuilder::new().mode(mode).create(self.path(&path));
        if self.m.entries.contains_key(&path) {
            return expect_errno(r, &[Errno::EXIST], &what);
        }
        ctx(r, || what)?;
        self.m.entries.insert(path, Entry::Dir(mode));
        Ok(())
    }

    fn rmdir(&mut self) -> Res {
        let dirs: Vec<String> = self
            .m
            .dirs()
            .into_iter()
            .filter(|d| !d.is_empty())
            .collect();
        let Some(path) = self.rng.pick(&dirs).cloned() else {
            return self.mkdir();
        };
        let what = format!("rmdir {path}");
        self.note(what.clone());
        self.open.clear();
        let r = fs::remove_dir(self.path(&path));
        if !self.m.children(&path).is_empty() {
            return expect_errno(r, &[Errno::NOTEMPTY, Errno::EXIST], &what);
        }
        ctx(r, || what)?;
        self.m.entries.remove(&path);
        Ok(())
    }

    /// MKNOD: a FIFO (never opened).
    fn mkfifo(&mut self) -> Res {
        let d = self.random_dir(2);
        let path = join(&d, &format!("p{}", self.rng.below(3)));
        let mode = 0o600 | (self.rng.below(0o100) as u32 & 0o066);
        let what = format!("mkfifo {path} mode {mode:o}");
        self.note(what.clone());
        let r = rustix::fs::mknodat(
            rustix::fs::CWD,
            self.path(&path),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(mode),
            0,
        )
        .map_err(io::Error::from);
        if self.m.entries.contains_key(&path) {
            return expect_errno(r, &[Errno::EXIST], &what);
        }
        ctx(r, || what)?;
        self.m.entries.insert(path, Entry::Fifo(mode));
        Ok(())
    }

    /// `lchown` of any name to another owner and group and back (root
    /// only, checked with `stat`).
    fn chown(&mut self) -> Res {
        if !rustix::process::geteuid().is_root() || self.o.owner_rw {
            return self.stat();
        }
        let all: Vec<String> = self.m.entries.keys().cloned().collect();
        let Some(path) = self.rng.pick(&all).cloned() else {
            return self.create();
        };
        let (uid, gid) = (
            1 + self.rng.below(60_000) as u32,
            1 + self.rng.below(60_000) as u32,
        );
        self.note(format!("lchown {path} {uid}:{gid}, then back to 0:0"));
        let p = self.path(&path);
        for (u, g) in [(uid, gid), (0, 0)] {
            ctx(std::os::unix::fs::lchown(&p, Some(u), Some(g)), || {
                format!("lchown {path} {u}:{g}")
            })?;
            let md = ctx(fs::symlink_metadata(&p), || format!("stat {path}"))?;
            if (md.uid(), md.gid()) != (u, g) {
                return Err(format!(
                    "stat after lchown {path} {u}:{g}: owner {}:{}",
                    md.uid(),
                    md.gid()
                ));
            }
        }
        Ok(())
    }

    fn symlink(&mut self) -> Res {
        let d = self.random_dir(2);
        let path = join(&d, &format!("s{}", self.rng.below(4)));
        let target: Vec<u8> = match self.rng.below(5) {
            0 => b"f0".to_vec(),
            1 => b"../d0/f1".to_vec(),
            2 => b"/etc/passwd".to_vec(),
            3 => {
                // Long: over the inline threshold (a Read chunk for the
                // call, the Reply chunk for READLINK).
                let n = 1000 + self.rng.below(2000) as usize;
                (0..n).map(|i| b"abcdefgh/"[i % 9]).collect()
            }
            _ => format!("t-{}-{}", self.op_no, self.rng.below(1000)).into_bytes(),
        };
        let what = format!("symlink {path} -> ({} bytes)", target.len());
        self.note(what.clone());
        let r = std::os::unix::fs::symlink(OsStr::from_bytes(&target), self.path(&path));
        if self.m.entries.contains_key(&path) {
            return expect_errno(r, &[Errno::EXIST], &what);
        }
        ctx(r, || what)?;
        self.m.entries.insert(path, Entry::Symlink(target));
        Ok(())
    }

    fn readlink(&mut self) -> Res {
        let links = self.m.symlinks();
        let Some(path) = self.rng.pick(&links).cloned() else {
            // readlink of a file is EINVAL.
            let (f, _) = self.some_file()?;
            self.note(format!("readlink {f} (a file)"));
            return expect_errno(
                fs::read_link(self.path(&f)),
                &[Errno::INVAL],
                &format!("readlink {f}"),
            );
        };
        self.note(format!("readlink {path}"));
        let got = ctx(fs::read_link(self.path(&path)), || {
            format!("readlink {path}")
        })?;
        let Entry::Symlink(want) = &self.m.entries[&path] else {
            unreachable!("a symlink of the model")
        };
        if got.as_os_str().as_encoded_bytes() != want.as_slice() {
            return Err(format!(
                "readlink {path}: {}",
                first_diff(want, got.as_os_str().as_encoded_bytes(), 0)
            ));
        }
        Ok(())
    }

    fn chmod(&mut self) -> Res {
        let cands: Vec<String> = self
            .m
            .entries
            .iter()
            .filter(|(_, e)| !matches!(e, Entry::Symlink(_)))
            .map(|(p, _)| p.clone())
            .collect();
        let Some(path) = self.rng.pick(&cands).cloned() else {
            return self.create();
        };
        let is_dir = matches!(self.m.entries[&path], Entry::Dir(_));
        let mode = if is_dir {
            0o700 | (self.rng.below(0o100) as u32)
        } else if rustix::process::geteuid().is_root() && !self.o.owner_rw {
            self.rng.below(0o1000) as u32
        } else {
            // Another user must still be able to read and write it.
            0o600 | (self.rng.below(0o1000) as u32)
        };
        self.note(format!("chmod {path} {mode:o}"));
        let p = self.path(&path);
        ctx(
            fs::set_permissions(&p, fs::Permissions::from_mode(mode)),
            || format!("chmod {path} {mode:o}"),
        )?;
        match self.m.entries.get_mut(&path).expect("listed") {
            Entry::Dir(m) | Entry::Fifo(m) => *m = mode,
            Entry::File(i) => self.m.inodes.get_mut(i).expect("inode").mode = mode,
            Entry::Symlink(_) => unreachable!("not a candidate"),
        }
        let md = ctx(fs::symlink_metadata(&p), || format!("stat {path}"))?;
        if md.mode() & 0o7777 != mode {
            return Err(format!(
                "stat after chmod {path} {mode:o}: mode {:o}",
                md.mode() & 0o7777
            ));
        }
        Ok(())
    }

    fn utimes(&mut self) -> Res {
        let cands: Vec<String> = self
            .m
            .entries
            .iter()
            .filter(|(_, e)| !matches!(e, Entry::Symlink(_)))
            .map(|(p, _)| p.clone())
            .collect();
        let Some(path) = self.rng.pick(&cands).cloned() else {
            return self.create();
        };
        let ts = |r: &mut Rng| Timespec {
            tv_sec: 1_000_000_000 + r.below(1_000_000_000) as i64,
            tv_nsec: r.below(1_000_000_000) as _,
        };
        let (a, m) = (ts(&mut self.rng), ts(&mut self.rng));
        self.note(format!(
            "utimes {path} atime {}.{:09} mtime {}.{:09}",
            a.tv_sec, a.tv_nsec, m.tv_sec, m.tv_nsec
        ));
        let p = self.path(&path);
        ctx(
            rustix::fs::utimensat(
                rustix::fs::CWD,
                &p,
                &Timestamps {
                    last_access: a,
                    last_modification: m,
                },
                rustix::fs::AtFlags::empty(),
            )
            .map_err(io::Error::from),
            || format!("utimensat {path}"),
        )?;
        let md = ctx(fs::symlink_metadata(&p), || format!("stat {path}"))?;
        if (md.mtime(), md.mtime_nsec()) != (m.tv_sec, m.tv_nsec)
            || (md.atime(), md.atime_nsec()) != (a.tv_sec, a.tv_nsec)
        {
            return Err(format!(
                "stat after utimes {path}: atime {}.{:09} mtime {}.{:09}",
                md.atime(),
                md.atime_nsec(),
                md.mtime(),
                md.mtime_nsec()
            ));
        }
        Ok(())
    }

    fn stat(&mut self) -> Res {
        let all: Vec<String> = self.m.entries.keys().cloned().collect();
        let Some(path) = self.rng.pick(&all).cloned() else {
            return self.create();
        };
        self.note(format!("stat {path}"));
        self.check_one(&path)
    }

    /// `path` as the model says: type, mode, link count, size (not the
    /// contents).
    fn check_one(&self, path: &str) -> Res {
        let md = ctx(fs::symlink_metadata(self.path(path)), || {
            format!("stat {path}")
        })?;
        let mode = md.mode() & 0o7777;
        let ok = match &self.m.entries[path] {
            Entry::File(i) => {
                let n = &self.m.inodes[i];
                md.is_file()
                    && mode == n.mode
                    && md.nlink() == u64::from(n.links)
                    && md.len() == n.data.len() as u64
            }
            Entry::Dir(m) => md.is_dir() && mode == *m,
            Entry::Symlink(t) => md.file_type().is_symlink() && md.len() == t.len() as u64,
            Entry::Fifo(m) => md.file_type().is_fifo() && mode == *m,
        };
        if ok {
            Ok(())
        } else {
            let want = match &self.m.entries[path] {
                Entry::File(i) => {
                    let n = &self.m.inodes[i];
                    format!(
                        "a file, mode {:o}, {} links, {} bytes",
                        n.mode,
                        n.links,
                        n.data.len()
                    )
                }
                Entry::Dir(m) => format!("a directory, mode {m:o}"),
                Entry::Symlink(t) => format!("a symlink of {} bytes", t.len()),
                Entry::Fifo(m) => format!("a FIFO, mode {m:o}"),
            };
            Err(format!(
                "stat {path}: {:?}, mode {mode:o}, {} links, {} bytes; want {want}",
                md.file_type(),
                md.nlink(),
                md.len()
            ))
        }
    }

    fn readdir(&mut self) -> Res {
        let d = self.random_dir(3);
        self.note(format!("readdir {d:?}"));
        self.check_dir(&d)
    }

    fn check_dir(&self, d: &str) -> Res {
        let mut got = BTreeSet::new();
        for e in ctx(fs::read_dir(self.path(d)), || format!("readdir {d:?}"))? {
            let e = ctx(e, || format!("readdir {d:?}"))?;
            got.insert(e.file_name().to_string_lossy().into_owned());
        }
        let want = self.m.children(d);
        if got != want {
            return Err(format!(
                "readdir {d:?}: missing {:?}, unexpected {:?}",
                want.difference(&got).collect::<Vec<_>>(),
                got.difference(&want).collect::<Vec<_>>()
            ));
        }
        Ok(())
    }

    /// Closes everything, syncs, drops the page cache and compares the
    /// whole tree with the model, every byte.
    fn verify_all(&mut self) -> Res {
        self.open.clear();
        self.note("verify everything".into());
        rustix::fs::sync();
        if self.o.drop_caches != DropCaches::No {
            match fs::write("/proc/sys/vm/drop_caches", "3") {
                Ok(()) => self.dropped = true,
                Err(e) if self.o.drop_caches == DropCaches::Yes => {
                    return Err(format!(
                        "cannot drop the page cache (/proc/sys/vm/drop_caches: {e}); run as root or with --drop-caches auto"
                    ))
                }
                Err(_) => {}
            }
        }
        for d in self.m.dirs() {
            self.check_dir(&d)?;
        }
        let paths: Vec<String> = self.m.entries.keys().cloned().collect();
        for p in &paths {
            self.check_one(p)?;
            match &self.m.entries[p] {
                Entry::File(i) => {
                    let mut got = Vec::new();
                    ctx(
                        File::open(self.path(p)).and_then(|mut f| f.read_to_end(&mut got)),
                        || format!("read {p}"),
                    )?;
                    let want = &self.m.inodes[i].data;
                    if &got != want {
                        return Err(format!(
                            "contents of {p} after dropping the cache: {}",
                            first_diff(want, &got, 0)
                        ));
                    }
                }
                Entry::Symlink(t) => {
                    let got = ctx(fs::read_link(self.path(p)), || format!("readlink {p}"))?;
                    if got.as_os_str().as_encoded_bytes() != t.as_slice() {
                        return Err(format!("readlink {p} after dropping the cache differs"));
                    }
                }
                Entry::Dir(_) | Entry::Fifo(_) => {}
            }
        }
        Ok(())
    }
}

/// `pread` until `buf` is full or the end of the file.
fn read_full(f: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read_at(&mut buf[n..], off + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Reads and writes through a shared mapping of the file.
#[allow(unsafe_code)]
mod mapped {
    use std::fs::File;
    use std::io;

    use rustix::mm::{self, MapFlags, MsyncFlags, ProtFlags};

    /// A shared mapping of the first `len` bytes of a file, unmapped on
    /// drop.
    struct Map {
        ptr: *mut std::ffi::c_void,
        len: usize,
    }

    impl Map {
        fn new(f: &File, len: usize, write: bool) -> io::Result<Map> {
            let prot = if write {
                ProtFlags::READ | ProtFlags::WRITE
            } else {
                ProtFlags::READ
            };
            // SAFETY: a new mapping at an address the kernel picks; it
            // aliases no Rust object. The file is not truncated while the
            // mapping lives (the worker is one thread and drops it before
            // its next operation), so every byte of it stays backed.
            let ptr = unsafe { mm::mmap(std::ptr::null_mut(), len, prot, MapFlags::SHARED, f, 0)? };
            Ok(Map { ptr, len })
        }

        fn bytes(&self) -> &[u8] {
            // SAFETY: `ptr` maps `len` readable bytes until `self` drops.
            unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
        }

        fn bytes_mut(&mut self) -> &mut [u8] {
            // SAFETY: `ptr` maps `len` writable bytes (made with WRITE)
            // until `self` drops; `&mut self` makes this the only view.
            unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<u8>(), self.len) }
        }

        fn sync(&self) -> io::Result<()> {
            // SAFETY: the range is exactly this live mapping.
            unsafe { mm::msync(self.ptr, self.len, MsyncFlags::SYNC)? };
            Ok(())
        }
    }

    impl Drop for Map {
        fn drop(&mut self) {
            // SAFETY: the mapping made in `new`, unmapped once; no slice
            // of it outlives `self`.
            let _ = unsafe { mm::munmap(self.ptr, self.len) };
        }
    }

    /// The first `len` bytes of `f`, read through a mapping.
    pub(super) fn read(f: &File, len: usize) -> io::Result<Vec<u8>> {
        Ok(Map::new(f, len, false)?.bytes().to_vec())
    }

    /// Writes `data` at `off` through a mapping of the first `len` bytes
    /// (`off + data.len() <= len`), then `msync`s if `sync`.
    pub(super) fn write(
        f: &File,
        len: usize,
        off: usize,
        data: &[u8],
        sync: bool,
    ) -> io::Result<()> {
        let mut m = Map::new(f, len, true)?;
        m.bytes_mut()[off..off + data.len()].copy_from_slice(data);
        if sync {
            m.sync()?;
        }
        Ok(())
    }
}
