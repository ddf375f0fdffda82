//! A worker process: seeded random operations on its own directory, each
//! checked against the model. The operations are grouped by what they
//! touch: `data.rs` (file contents), `names.rs` (the name space),
//! `attrs.rs` (owners, modes, times), `verify.rs` (checks of the tree).

mod attrs;
mod data;
mod names;
mod verify;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind};
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::manifest::hex;
use crate::model::Model;
use crate::opts::Opts;
use crate::rng::Rng;

pub(crate) fn worker_main(dir: &Path, o: &Opts, w: usize) -> ExitCode {
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
