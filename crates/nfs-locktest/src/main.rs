//! `nfs-locktest FILE`: byte-range locks (`fcntl` `F_SETLK`/`F_GETLK`) and
//! whole-file locks (`flock`) taken by two processes on one file, each
//! expected to conflict or not as POSIX says. On an NFSv4 mount every one
//! is a LOCK, LOCKT or LOCKU at the server (the two processes are two lock
//! owners), so the server's lock table decides.
//!
//! The parent holds locks; the child (this program again, `--child`)
//! tries its own at each step and reports. Prints `LOCK-OK step` or
//! `LOCK-FAIL step (detail)` per check; exit status 0 only if all passed.
//!
//! `nfs-locktest hold FILE` keeps an open and a lock across a server
//! restart: it writes `before`, write-locks the first 100 octets, makes
//! `FILE.ready`, waits (up to 10 minutes) for `FILE.go`, then, with the same
//! descriptor, checks that another process still sees the lock, writes
//! `after`, unlocks and prints `HOLD-OK` (`HOLD-FAIL ...` otherwise). On
//! NFSv4 the client must reclaim both in the grace period in between.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Read,
    Write,
    Unlock,
}

// The two system calls are the FFI edge of this tool (rustix has no
// byte-range F_SETLK).
/// `fcntl(F_SETLK)` (or `F_GETLK` with `test`): `Ok(true)` if granted (or
/// free), `Ok(false)` if another process holds a conflicting lock.
#[allow(unsafe_code)]
fn lock(f: &File, kind: Kind, start: i64, len: i64, test: bool) -> std::io::Result<bool> {
    let l_type = match kind {
        Kind::Read => libc::F_RDLCK,
        Kind::Write => libc::F_WRLCK,
        Kind::Unlock => libc::F_UNLCK,
    };
    // SAFETY: `flock` is plain data; all-zero is a valid value for it.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = l_type as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = start;
    fl.l_len = len;
    let cmd = if test { libc::F_GETLK } else { libc::F_SETLK };
    // SAFETY: a valid open descriptor and a pointer to a live `flock`.
    let r = unsafe { libc::fcntl(f.as_raw_fd(), cmd, &mut fl as *mut libc::flock) };
    if r == 0 {
        return Ok(if test {
            fl.l_type == libc::F_UNLCK as libc::c_short
        } else {
            true
        });
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN) | Some(libc::EACCES) => Ok(false),
        _ => Err(e),
    }
}

/// `flock(2)`, non-blocking: `Ok(false)` if held by another.
#[allow(unsafe_code)]
fn whole(f: &File, op: libc::c_int) -> std::io::Result<bool> {
    // SAFETY: a valid open descriptor.
    let r = unsafe { libc::flock(f.as_raw_fd(), op | libc::LOCK_NB) };
    if r == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

fn open(path: &str) -> File {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap_or_else(|e| {
            eprintln!("nfs-locktest: cannot open {path}: {e}");
            std::process::exit(2)
        })
}

/// The child: reads commands from its standard input, one per line
/// (`set KIND START LEN`, `test KIND START LEN`, `flock ex|sh|un`), and
/// answers each with `granted`, `denied` or `error ...`.
fn child(path: &str) {
    let f = open(path);
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let w: Vec<&str> = line.split_whitespace().collect();
        let kind = |s: &str| match s {
            "r" => Kind::Read,
            "w" => Kind::Write,
            _ => Kind::Unlock,
        };
        let r = match w.as_slice() {
            ["set", k, s, l] => lock(
                &f,
                kind(k),
                s.parse().unwrap_or(0),
                l.parse().unwrap_or(0),
                false,
            ),
            ["test", k, s, l] => lock(
                &f,
                kind(k),
                s.parse().unwrap_or(0),
                l.parse().unwrap_or(0),
                true,
            ),
            ["flock", "ex"] => whole(&f, libc::LOCK_EX),
            ["flock", "sh"] => whole(&f, libc::LOCK_SH),
            ["flock", "un"] => whole(&f, libc::LOCK_UN),
            _ => Err(std::io::Error::other("bad command")),
        };
        let answer = match r {
            Ok(true) => "granted".to_owned(),
            Ok(false) => "denied".to_owned(),
            Err(e) => format!("error {e}"),
        };
        let _ = writeln!(out, "{answer}");
        let _ = out.flush();
    }
}

struct Child {
    proc_: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Child {
    fn ask(&mut self, cmd: &str) -> String {
        let stdin = self.proc_.stdin.as_mut().expect("piped");
        let _ = writeln!(stdin, "{cmd}");
        let _ = stdin.flush();
        let mut line = String::new();
        let _ = self.out.read_line(&mut line);
        line.trim().to_owned()
    }
}

/// `hold FILE`: an open and a lock kept across a server restart.
fn hold(path: &str) -> i32 {
    let fail = |what: &str| {
        println!("HOLD-FAIL {what}");
        1
    };
    let mut f = match OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
    {
        Ok(f) => f,
        Err(e) => return fail(&format!("open: {e}")),
    };
    if f.write_all(b"before\n")
        .and_then(|()| f.sync_all())
        .is_err()
    {
        return fail("write before");
    }
    match lock(&f, Kind::Write, 0, 100, false) {
        Ok(true) => {}
        other => return fail(&format!("lock: {other:?}")),
    }
    if File::create(format!("{path}.ready")).is_err() {
        return fail("ready marker");
    }
    println!("HOLD-READY");
    let go = format!("{path}.go");
    let mut waited = 0;
    while std::fs::metadata(&go).is_err() {
        if waited > 1200 {
            return fail("no go marker in 10 minutes");
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
        waited += 1;
    }
    // Another process must still see our lock (the client reclaimed it).
    let me = std::env::current_exe().unwrap_or_else(|_| "nfs-locktest".into());
    let seen = Command::new(me)
        .args(["--probe", path])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    if seen != "denied" {
        return fail(&format!(
            "after the restart another process sees no lock ({seen})"
        ));
    }
    use std::io::{Seek, SeekFrom};
    if f.seek(SeekFrom::Start(7))
        .and_then(|_| f.write_all(b"after\n"))
        .and_then(|()| f.sync_all())
        .is_err()
    {
        return fail("write after the restart");
    }
    match lock(&f, Kind::Unlock, 0, 0, false) {
        Ok(true) => {}
        other => return fail(&format!("unlock: {other:?}")),
    }
    println!("HOLD-OK");
    0
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "--child" {
        child(&args[2]);
        return;
    }
    if args.len() == 3 && args[1] == "hold" {
        std::process::exit(hold(&args[2]));
    }
    if args.len() == 3 && args[1] == "--probe" {
        // Whether a write lock on [0,100) is free for another process.
        let f = open(&args[2]);
        let answer = match lock(&f, Kind::Write, 0, 100, true) {
            Ok(true) => "free".to_owned(),
            Ok(false) => "denied".to_owned(),
            Err(e) => format!("error {e}"),
        };
        println!("{answer}");
        return;
    }
    let [_, path] = args.as_slice() else {
        eprintln!("usage: nfs-locktest FILE (an existing file on the mount to test), or nfs-locktest hold FILE");
        std::process::exit(2)
    };
    let me = std::env::current_exe().unwrap_or_else(|_| "nfs-locktest".into());
    let mut proc_ = Command::new(me)
        .args(["--child", path])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            eprintln!("nfs-locktest: cannot start the second process: {e}");
            std::process::exit(2)
        });
    let out = BufReader::new(proc_.stdout.take().expect("piped"));
    let mut c = Child { proc_, out };
    let f = open(path);
    let mut fails = 0;
    let mut check = |name: &str, got: String, want: &str| {
        if got == want {
            println!("LOCK-OK {name}");
        } else {
            println!("LOCK-FAIL {name} (got {got}, want {want})");
            fails += 1;
        }
    };
    let mine = |k, s, l| match lock(&f, k, s, l, false) {
        Ok(true) => "granted".to_owned(),
        Ok(false) => "denied".to_owned(),
        Err(e) => format!("error {e}"),
    };
    check(
        "parent write-locks [0,100)",
        mine(Kind::Write, 0, 100),
        "granted",
    );
    check(
        "child: F_GETLK sees the conflict at 50",
        c.ask("test w 50 1"),
        "denied",
    );
    check(
        "child: write [50,60) denied",
        c.ask("set w 50 10"),
        "denied",
    );
    check("child: read [90,91) denied", c.ask("set r 90 1"), "denied");
    check(
        "child: write [100,200) granted (adjacent)",
        c.ask("set w 100 100"),
        "granted",
    );
    check(
        "parent: write [150,151) denied (child holds it)",
        mine(Kind::Write, 150, 1),
        "denied",
    );
    check(
        "parent unlocks [0,50)",
        mine(Kind::Unlock, 0, 50),
        "granted",
    );
    check(
        "child: write [0,10) granted after the unlock",
        c.ask("set w 0 10"),
        "granted",
    );
    check(
        "child: write [60,70) still denied",
        c.ask("set w 60 10"),
        "denied",
    );
    check(
        "parent read-locks [1000,2000)",
        mine(Kind::Read, 1000, 1000),
        "granted",
    );
    check(
        "child: read [1500,1600) shared",
        c.ask("set r 1500 100"),
        "granted",
    );
    check(
        "child: write [1500,1600) denied",
        c.ask("set w 1500 100"),
        "denied",
    );
    check(
        "parent: to the end of the file from 5000",
        mine(Kind::Write, 5000, 0),
        "granted",
    );
    check(
        "child: write at 1 TiB denied",
        c.ask("set w 1099511627776 1"),
        "denied",
    );
    check("parent releases all", mine(Kind::Unlock, 0, 0), "granted");
    check(
        "child: write [0,1 MiB) granted now... but its own [1500,1600) read is upgraded",
        c.ask("set w 0 1048576"),
        "granted",
    );
    check("child releases all", c.ask("set u 0 0"), "granted");
    // Whole-file locks (flock: on NFS, whole-file LOCKs).
    let flock_mine = |op| match whole(&f, op) {
        Ok(true) => "granted".to_owned(),
        Ok(false) => "denied".to_owned(),
        Err(e) => format!("error {e}"),
    };
    check(
        "parent flock exclusive",
        flock_mine(libc::LOCK_EX),
        "granted",
    );
    check("child flock exclusive denied", c.ask("flock ex"), "denied");
    check("child flock shared denied", c.ask("flock sh"), "denied");
    check(
        "parent flock shared (downgrade)",
        flock_mine(libc::LOCK_SH),
        "granted",
    );
    check("child flock shared granted", c.ask("flock sh"), "granted");
    check(
        "parent flock exclusive denied (child shares)",
        flock_mine(libc::LOCK_EX),
        "denied",
    );
    check("child unlocks", c.ask("flock un"), "granted");
    check(
        "parent flock exclusive granted",
        flock_mine(libc::LOCK_EX),
        "granted",
    );
    check("parent unlocks", flock_mine(libc::LOCK_UN), "granted");
    drop(c.proc_.stdin.take());
    let _ = c.proc_.wait();
    if fails == 0 {
        println!("LOCK-DONE all passed");
    } else {
        println!("LOCK-DONE {fails} failed");
        std::process::exit(1);
    }
}
