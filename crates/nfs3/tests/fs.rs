//! The export layer on a real directory: handles across restarts and
//! deletions, forgery, attributes, READDIR cookies over large directories,
//! UNSTABLE writes and COMMIT, read-only exports, confinement (`..`,
//! symbolic links, names), CREATE modes, SETATTR, links and renames, and
//! (as root) acting as the caller with root squashing.

use std::collections::HashSet;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use rpcrdma_nfs3::fs::{
    access, access_by_mode, Caller, CreateHow, Export, ExportConfig, ExportError, FileHandle,
    FileType, IdentityMode, NfsError, SetAttr, SetTime, SpecialFile, Squash, StableHow, Time,
};

/// A temporary directory removed on drop.
struct Tmp(PathBuf);
impl Tmp {
    fn new(tag: &str) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "rpcrdma-nfs3-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Rig {
    _base: Tmp,
    root: PathBuf,
    state: PathBuf,
}

impl Rig {
    fn new(tag: &str) -> Self {
        let base = Tmp::new(tag);
        let root = base.path().join("export");
        let state = base.path().join("state");
        std::fs::create_dir(&root).unwrap();
        Self {
            _base: base,
            root,
            state,
        }
    }
    fn config(&self) -> ExportConfig {
        let mut c = ExportConfig::new(&self.root, &self.state);
        // Most tests run as whoever runs them; `acting_as_the_caller`
        // covers the identity switch.
        c.identity = IdentityMode::ServerUser;
        c
    }
    fn open(&self) -> Export {
        Export::open(self.config()).unwrap()
    }
}

fn me() -> Caller {
    Caller::new(
        rustix::process::geteuid().as_raw(),
        rustix::process::getegid().as_raw(),
        vec![],
    )
}

fn create(e: &Export, dir: &FileHandle, name: &str) -> FileHandle {
    e.create(
        &me(),
        dir,
        name.as_bytes(),
        CreateHow::Guarded(SetAttr::default()),
    )
    .result
    .unwrap()
    .handle
}

fn mkdir(e: &Export, dir: &FileHandle, name: &str) -> FileHandle {
    e.mkdir(&me(), dir, name.as_bytes(), &SetAttr::default())
        .result
        .unwrap()
        .handle
}

fn lookup(e: &Export, dir: &FileHandle, name: &str) -> Result<FileHandle, NfsError> {
    e.lookup(&me(), dir, name.as_bytes()).0.map(|(h, _)| h)
}

fn write_all(e: &Export, fh: &FileHandle, off: u64, data: &[u8], how: StableHow) {
    let w = e.write(&me(), fh, off, data, how).result.unwrap();
    assert_eq!(w.count as usize, data.len());
}

fn read_all(e: &Export, fh: &FileHandle) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let d = e.read(&me(), fh, out.len() as u64, 4096).0.unwrap();
        out.extend_from_slice(&d.data);
        if d.eof {
            return out;
        }
        assert!(!d.data.is_empty(), "no progress without eof");
    }
}

#[test]
fn handles_survive_a_restart_and_the_write_verifier_does_not() {
    let rig = Rig::new("restart");
    let (root, dir, file, verf) = {
        let e = rig.open();
        let root = e.root_handle();
        let dir = mkdir(&e, &root, "a");
        let sub = mkdir(&e, &dir, "b");
        let file = create(&e, &sub, "deep.txt");
        write_all(&e, &file, 0, b"hello", StableHow::FileSync);
        (root, dir, file, e.write_verifier())
    };
    let e = rig.open();
    assert_eq!(e.root_handle(), root, "root handle is stable");
    // A handle seen before the restart resolves (found by searching).
    assert_eq!(read_all(&e, &file), b"hello");
    assert_eq!(e.getattr(&dir).unwrap().ftype, FileType::Directory);
    assert_ne!(e.write_verifier(), verf, "a new verifier after a restart");
    // The key file is private.
    let mode = std::fs::metadata(rig.state.join("handle.key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn deleted_files_are_stale_even_when_the_inode_is_reused() {
    let rig = Rig::new("stale");
    let e = rig.open();
    let root = e.root_handle();
    let a = create(&e, &root, "a");
    e.remove(&me(), &root, b"a").result.unwrap();
    assert_eq!(e.getattr(&a), Err(NfsError::Stale));
    // Removed behind the server's back.
    let b = create(&e, &root, "b");
    std::fs::remove_file(rig.root.join("b")).unwrap();
    assert_eq!(e.getattr(&b), Err(NfsError::Stale));
    // Many new files: inode numbers get reused, handles do not.
    for i in 0..50 {
        create(&e, &root, &format!("new{i}"));
    }
    assert_eq!(e.getattr(&a), Err(NfsError::Stale));
    assert_eq!(e.getattr(&b), Err(NfsError::Stale));
    assert_eq!(e.read(&me(), &a, 0, 10).0.unwrap_err(), NfsError::Stale);
    // A removed directory too.
    let d = mkdir(&e, &root, "d");
    e.rmdir(&me(), &root, b"d").result.unwrap();
    assert_eq!(e.getattr(&d), Err(NfsError::Stale));
    // And after a restart.
    drop(e);
    let e = rig.open();
    assert_eq!(e.getattr(&a), Err(NfsError::Stale));
    assert_eq!(e.getattr(&d), Err(NfsError::Stale));
}

#[test]
fn forged_and_foreign_handles_are_refused() {
    let rig = Rig::new("forge");
    let e = rig.open();
    let root = e.root_handle();
    let f = create(&e, &root, "f");
    let mut b = f.as_bytes().to_vec();
    for i in 0..b.len() {
        b[i] ^= 0x01;
        let forged = FileHandle::from_bytes(&b).unwrap();
        assert_eq!(e.getattr(&forged), Err(NfsError::BadHandle), "byte {i}");
        b[i] ^= 0x01;
    }
    for len in [0, 1, 35, 37, 64] {
        let h = FileHandle::from_bytes(&vec![1u8; len]).unwrap();
        assert_eq!(e.getattr(&h), Err(NfsError::BadHandle));
    }
    assert_eq!(
        FileHandle::from_bytes(&[0u8; 65]).unwrap_err(),
        NfsError::BadHandle
    );
    // Another server (another key) does not accept our handles.
    let other = Rig::new("forge2");
    std::fs::create_dir(other.root.join("x")).ok();
    let e2 = other.open();
    assert_eq!(e2.getattr(&f), Err(NfsError::BadHandle));
}

#[test]
fn attributes_come_from_the_file_system() {
    let rig = Rig::new("attr");
    let e = rig.open();
    let root = e.root_handle();
    let f = create(&e, &root, "f");
    write_all(&e, &f, 0, &[7u8; 10_000], StableHow::Unstable);
    let a = e.getattr(&f).unwrap();
    let m = std::fs::symlink_metadata(rig.root.join("f")).unwrap();
    assert_eq!(a.ftype, FileType::Regular);
    assert_eq!(a.size, 10_000);
    assert_eq!(a.fileid, m.ino());
    assert_eq!(a.mode, m.mode() & 0o7777);
    assert_eq!(a.nlink, 1);
    assert_eq!((a.uid, a.gid), (m.uid(), m.gid()));
    assert_eq!(a.used, m.blocks() * 512);
    assert_eq!(a.mtime.seconds as i64, m.mtime());
    assert_eq!(a.mtime.nseconds as i64, m.mtime_nsec());
    assert_eq!(a.ctime.seconds as i64, m.ctime());
    let r = e.getattr(&root).unwrap();
    assert_eq!(r.ftype, FileType::Directory);
    assert_eq!(r.fsid, a.fsid);
}

/// Lists a directory completely in pages of about `page` bytes of XDR.
fn list(
    e: &Export,
    dir: &FileHandle,
    plus: bool,
    page: usize,
) -> Vec<(String, u64, Option<FileHandle>)> {
    let mut out = Vec::new();
    let (mut cookie, mut verf) = (0u64, [0u8; 8]);
    loop {
        let mut used = 0usize;
        let (r, _) = e.readdir(&me(), dir, cookie, verf, plus, |ent| {
            let cost = 24 + ent.name.len().div_ceil(4) * 4 + if plus { 140 } else { 0 };
            used += cost;
            used <= page
        });
        let rd = r.unwrap();
        verf = rd.verf;
        for ent in &rd.entries {
            out.push((
                String::from_utf8(ent.name.to_vec()).unwrap(),
                ent.fileid,
                ent.handle.clone(),
            ));
            cookie = ent.cookie;
        }
        if rd.eof {
            return out;
        }
    }
}

#[test]
fn readdir_cookies_cover_a_large_directory_across_pages_and_restarts() {
    let rig = Rig::new("readdir");
    let n = 5_200;
    for i in 0..n {
        std::fs::write(
            rig.root.join(format!("entry-{i:05}-with-a-longish-name")),
            b"",
        )
        .unwrap();
    }
    let e = rig.open();
    let root = e.root_handle();
    for plus in [false, true] {
        let got = list(&e, &root, plus, 8192);
        let names: HashSet<_> = got.iter().map(|(n, _, _)| n.clone()).collect();
        assert_eq!(names.len(), got.len(), "no duplicates (plus {plus})");
        assert_eq!(got.len(), n + 2, "every entry plus . and ..");
        assert!(names.contains(".") && names.contains(".."));
        for i in 0..n {
            assert!(names.contains(&format!("entry-{i:05}-with-a-longish-name")));
        }
        if plus {
            // READDIRPLUS handles resolve to the entry listed.
            for (name, fileid, h) in got.iter().filter(|(n, _, _)| n != "..").take(200) {
                let h = h.as_ref().unwrap_or_else(|| panic!("no handle for {name}"));
                assert_eq!(e.getattr(h).unwrap().fileid, *fileid);
            }
        }
    }
    // A cookie from one server instance resumes on the next.
    let mut cookie = 0;
    let mut verf = [0; 8];
    let mut first = Vec::new();
    let (r, _) = e.readdir(&me(), &root, 0, [0; 8], false, |_| {
        first.len() < 100 && {
            first.push(());
            true
        }
    });
    let rd = r.unwrap();
    assert!(!rd.eof);
    if let Some(last) = rd.entries.last() {
        cookie = last.cookie;
        verf = rd.verf;
    }
    drop(e);
    let e = rig.open();
    let (r, _) = e.readdir(&me(), &root, cookie, verf, false, |_| true);
    let rest = r.unwrap();
    assert!(rest.eof);
    assert_eq!(rd.entries.len() + rest.entries.len(), n + 2);
    // A verifier that is not ours is refused for a non-zero cookie.
    let (r, _) = e.readdir(&me(), &root, cookie, [9; 8], false, |_| true);
    assert_eq!(r.unwrap_err(), NfsError::BadCookie);
    // Nothing fits: TOOSMALL.
    let (r, _) = e.readdir(&me(), &root, 0, [0; 8], false, |_| false);
    assert_eq!(r.unwrap_err(), NfsError::TooSmall);
    // READDIR of a file.
    let f = lookup(&e, &root, "entry-00000-with-a-longish-name").unwrap();
    let (r, _) = e.readdir(&me(), &f, 0, [0; 8], false, |_| true);
    assert_eq!(r.unwrap_err(), NfsError::NotDir);
}

#[test]
fn readdir_survives_changes_between_pages() {
    let rig = Rig::new("readdir-change");
    for i in 0..600 {
        std::fs::write(rig.root.join(format!("f{i:04}")), b"").unwrap();
    }
    let e = rig.open();
    let root = e.root_handle();
    let mut seen = HashSet::new();
    let (mut cookie, mut verf) = (0, [0; 8]);
    let mut pages = 0;
    loop {
        let mut k = 0;
        let (r, _) = e.readdir(&me(), &root, cookie, verf, false, |_| {
            k += 1;
            k <= 50
        });
        let rd = r.unwrap();
        verf = rd.verf;
        for ent in &rd.entries {
            seen.insert(ent.name.clone());
            cookie = ent.cookie;
        }
        pages += 1;
        // Someone adds files while the client lists.
        std::fs::write(rig.root.join(format!("late{pages}")), b"").unwrap();
        if rd.eof {
            break;
        }
    }
    for i in 0..600 {
        assert!(
            seen.contains(format!("f{i:04}").as_bytes()),
            "f{i:04} missed"
        );
    }
}

#[test]
fn unstable_write_commit_and_read_back() {
    let rig = Rig::new("write");
    let e = rig.open();
    let root = e.root_handle();
    let f = create(&e, &root, "data");
    let mut expect = vec![0u8; 3 << 20];
    for (i, b) in expect.iter_mut().enumerate() {
        *b = (i * 31 % 251) as u8;
    }
    let mut verfs = HashSet::new();
    for (k, chunk) in expect.chunks(1 << 20).enumerate() {
        let out = e.write(&me(), &f, (k << 20) as u64, chunk, StableHow::Unstable);
        let w = out.result.unwrap();
        assert_eq!(w.committed, StableHow::Unstable);
        assert_eq!(w.count as usize, chunk.len());
        verfs.insert(w.verf);
        let wcc = out.wcc;
        assert_eq!(wcc.before.unwrap().size, (k << 20) as u64);
        assert_eq!(wcc.after.unwrap().size, ((k + 1) << 20) as u64);
    }
    assert_eq!(verfs.len(), 1);
    let c = e.commit(&me(), &f).result.unwrap();
    assert_eq!(c, e.write_verifier());
    assert_eq!(std::fs::read(rig.root.join("data")).unwrap(), expect);
    // READ: capped at 1 MiB, eof at the end.
    let d = e.read(&me(), &f, 0, 4 << 20).0.unwrap();
    assert_eq!(d.data.len(), 1 << 20);
    assert!(!d.eof);
    let d = e.read(&me(), &f, (3 << 20) - 10, 100).0.unwrap();
    assert_eq!(d.data.len(), 10);
    assert!(d.eof);
    let d = e.read(&me(), &f, 10 << 20, 100).0.unwrap();
    assert!(d.data.is_empty() && d.eof);
    // FILE_SYNC and DATA_SYNC say so.
    let w = e
        .write(&me(), &f, 0, b"x", StableHow::FileSync)
        .result
        .unwrap();
    assert_eq!(w.committed, StableHow::FileSync);
    let w = e
        .write(&me(), &f, 0, b"x", StableHow::DataSync)
        .result
        .unwrap();
    assert_eq!(w.committed, StableHow::DataSync);
    // Too large, and directories.
    let big = vec![0u8; (1 << 20) + 1];
    assert_eq!(
        e.write(&me(), &f, 0, &big, StableHow::Unstable)
            .result
            .unwrap_err(),
        NfsError::Inval
    );
    assert_eq!(
        e.write(&me(), &root, 0, b"x", StableHow::Unstable)
            .result
            .unwrap_err(),
        NfsError::IsDir
    );
    assert_eq!(e.read(&me(), &root, 0, 1).0.unwrap_err(), NfsError::IsDir);
    assert_eq!(
        e.write(&me(), &f, u64::MAX - 1, b"xy", StableHow::Unstable)
            .result
            .unwrap_err(),
        NfsError::FBig
    );
}

#[test]
fn read_only_exports_refuse_every_change() {
    let rig = Rig::new("ro");
    std::fs::write(rig.root.join("f"), b"data").unwrap();
    std::fs::create_dir(rig.root.join("d")).unwrap();
    let mut cfg = rig.config();
    cfg.read_only = true;
    let e = Export::open(cfg).unwrap();
    let root = e.root_handle();
    let f = lookup(&e, &root, "f").unwrap();
    let c = me();
    let s = SetAttr::default();
    assert_eq!(
        e.write(&c, &f, 0, b"x", StableHow::FileSync)
            .result
            .unwrap_err(),
        NfsError::Rofs
    );
    assert_eq!(
        e.setattr(&c, &f, &SetAttr { size: Some(0), ..s }, None)
            .result
            .unwrap_err(),
        NfsError::Rofs
    );
    assert_eq!(
        e.create(&c, &root, b"n", CreateHow::Unchecked(s))
            .result
            .unwrap_err(),
        NfsError::Rofs
    );
    assert_eq!(
        e.mkdir(&c, &root, b"n", &s).result.unwrap_err(),
        NfsError::Rofs
    );
    assert_eq!(
        e.symlink(&c, &root, b"n", b"t", &s).result.unwrap_err(),
        NfsError::Rofs
    );
    assert_eq!(
        e.mknod(&c, &root, b"n", SpecialFile::Fifo, &s)
            .result
            .unwrap_err(),
        NfsError::Rofs
    );
    assert_eq!(
        e.remove(&c, &root, b"f").result.unwrap_err(),
        NfsError::Rofs
    );
    assert_eq!(e.rmdir(&c, &root, b"d").result.unwrap_err(), NfsError::Rofs);
    assert_eq!(
        e.rename(&c, &root, b"f", &root, b"g").0.unwrap_err(),
        NfsError::Rofs
    );
    assert_eq!(e.link(&c, &f, &root, b"g").0.unwrap_err(), NfsError::Rofs);
    let (granted, _) = e.access(&c, &f, access::ALL).unwrap();
    assert_eq!(
        granted & (access::MODIFY | access::EXTEND | access::DELETE),
        0
    );
    assert_ne!(granted & access::READ, 0);
    // Reading works; nothing changed.
    assert_eq!(read_all(&e, &f), b"data");
    assert!(rig.root.join("f").exists() && rig.root.join("d").exists());
}

#[test]
fn dot_dot_never_leaves_the_export() {
    let rig = Rig::new("dotdot");
    let e = rig.open();
    let root = e.root_handle();
    assert_eq!(lookup(&e, &root, "..").unwrap(), root);
    assert_eq!(lookup(&e, &root, ".").unwrap(), root);
    let a = mkdir(&e, &root, "a");
    let b = mkdir(&e, &a, "b");
    assert_eq!(lookup(&e, &b, "..").unwrap(), a);
    assert_eq!(lookup(&e, &a, "..").unwrap(), root);
    // READDIR's ".." of the root names the root itself.
    let (r, _) = e.readdir(&me(), &root, 0, [0; 8], false, |_| true);
    let rd = r.unwrap();
    let dd = rd.entries.iter().find(|x| &x.name[..] == b"..").unwrap();
    assert_eq!(dd.fileid, e.getattr(&root).unwrap().fileid);
    // Names with a slash, empty names, over-long names.
    for bad in ["../x", "a/b", "/etc", ""] {
        assert_eq!(
            lookup(&e, &root, bad).unwrap_err(),
            NfsError::Acces,
            "{bad:?}"
        );
    }
    assert_eq!(
        lookup(&e, &root, &"x".repeat(256)).unwrap_err(),
        NfsError::NameTooLong
    );
    assert_eq!(
        e.create(
            &me(),
            &root,
            b"a\0b",
            CreateHow::Unchecked(SetAttr::default())
        )
        .result
        .unwrap_err(),
        NfsError::Acces
    );
    for dots in [".", ".."] {
        assert_eq!(
            e.create(
                &me(),
                &root,
                dots.as_bytes(),
                CreateHow::Unchecked(SetAttr::default())
            )
            .result
            .unwrap_err(),
            NfsError::Inval
        );
    }
    // MOUNT paths: inside only.
    assert_eq!(e.mount_path(b"/").unwrap(), root);
    assert_eq!(e.mount_path(b"a/b").unwrap(), b);
    assert_eq!(e.mount_path(b"/a/./b/").unwrap(), b);
    assert_eq!(e.mount_path(b"a/../..").unwrap_err(), NfsError::Acces);
    assert_eq!(e.mount_path(b"nope").unwrap_err(), NfsError::NoEnt);
}

#[test]
fn symbolic_links_are_never_followed_by_the_server() {
    let rig = Rig::new("symlink");
    let outside = rig._base.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret"), b"secret").unwrap();
    std::os::unix::fs::symlink(&outside, rig.root.join("escape")).unwrap();
    std::os::unix::fs::symlink("../outside/secret", rig.root.join("rel")).unwrap();
    let e = rig.open();
    let root = e.root_handle();
    let esc = lookup(&e, &root, "escape").unwrap();
    assert_eq!(e.getattr(&esc).unwrap().ftype, FileType::Symlink);
    // Used as a directory: it is not one.
    assert_eq!(lookup(&e, &esc, "secret").unwrap_err(), NfsError::NotDir);
    assert_eq!(
        e.create(
            &me(),
            &esc,
            b"planted",
            CreateHow::Unchecked(SetAttr::default())
        )
        .result
        .unwrap_err(),
        NfsError::NotDir
    );
    let (r, _) = e.readdir(&me(), &esc, 0, [0; 8], true, |_| true);
    assert_eq!(r.unwrap_err(), NfsError::NotDir);
    assert!(!outside.join("planted").exists());
    // Used as a file: not read through.
    let rel = lookup(&e, &root, "rel").unwrap();
    assert_eq!(e.read(&me(), &rel, 0, 100).0.unwrap_err(), NfsError::Inval);
    assert_eq!(
        e.write(&me(), &rel, 0, b"x", StableHow::FileSync)
            .result
            .unwrap_err(),
        NfsError::Inval
    );
    assert_eq!(
        e.setattr(
            &me(),
            &rel,
            &SetAttr {
                size: Some(0),
                ..SetAttr::default()
            },
            None
        )
        .result
        .unwrap_err(),
        NfsError::Inval
    );
    assert_eq!(std::fs::read(outside.join("secret")).unwrap(), b"secret");
    // READLINK gives the target as stored; SYMLINK stores any target.
    assert_eq!(e.readlink(&me(), &rel).unwrap().0, b"../outside/secret");
    let made = e
        .symlink(&me(), &root, b"abs", b"/etc/passwd", &SetAttr::default())
        .result
        .unwrap();
    assert_eq!(made.attr.ftype, FileType::Symlink);
    assert_eq!(e.readlink(&me(), &made.handle).unwrap().0, b"/etc/passwd");
    assert_eq!(e.readlink(&me(), &root).unwrap_err(), NfsError::Inval);
    // Hard links to a symbolic link name the link, not its target.
    e.link(&me(), &esc, &root, b"esc2").0.unwrap();
    assert!(std::fs::symlink_metadata(rig.root.join("esc2"))
        .unwrap()
        .file_type()
        .is_symlink());
    // MOUNT does not follow a link either.
    assert!(e.mount_path(b"escape").is_err());
    // Renaming through a link as directory fails.
    assert_eq!(
        e.rename(&me(), &root, b"rel", &esc, b"x").0.unwrap_err(),
        NfsError::NotDir
    );
}

#[test]
fn create_modes() {
    let rig = Rig::new("create");
    let e = rig.open();
    let root = e.root_handle();
    let c = me();
    let set = SetAttr {
        mode: Some(0o640),
        ..SetAttr::default()
    };
    let m = e
        .create(&c, &root, b"g", CreateHow::Guarded(set))
        .result
        .unwrap();
    assert_eq!(m.attr.mode, 0o640, "exact mode, no umask");
    assert_eq!(
        e.create(&c, &root, b"g", CreateHow::Guarded(set))
            .result
            .unwrap_err(),
        NfsError::Exist
    );
    // UNCHECKED on an existing file: same file, size applied.
    write_all(&e, &m.handle, 0, b"content", StableHow::FileSync);
    let u = e
        .create(
            &c,
            &root,
            b"g",
            CreateHow::Unchecked(SetAttr {
                size: Some(0),
                ..SetAttr::default()
            }),
        )
        .result
        .unwrap();
    assert_eq!(u.handle, m.handle);
    assert_eq!(u.attr.size, 0);
    // EXCLUSIVE: a retransmission with the same verifier succeeds.
    let v = *b"verifier";
    let x1 = e
        .create(&c, &root, b"x", CreateHow::Exclusive(v))
        .result
        .unwrap();
    let x2 = e
        .create(&c, &root, b"x", CreateHow::Exclusive(v))
        .result
        .unwrap();
    assert_eq!(x1.handle, x2.handle);
    assert_eq!(
        e.create(&c, &root, b"x", CreateHow::Exclusive(*b"another!"))
            .result
            .unwrap_err(),
        NfsError::Exist
    );
    // CREATE over a directory name.
    mkdir(&e, &root, "dir");
    assert!(e
        .create(&c, &root, b"dir", CreateHow::Unchecked(SetAttr::default()))
        .result
        .is_err());
    // The directory's wcc data shows the change.
    let out = e.create(&c, &root, b"w", CreateHow::Guarded(SetAttr::default()));
    let (before, after) = (out.wcc.before.unwrap(), out.wcc.after.unwrap());
    assert!(after.mtime >= before.mtime && after.ctime >= before.ctime);
    // MKNOD of a FIFO and a socket.
    let f = e
        .mknod(&c, &root, b"fifo", SpecialFile::Fifo, &SetAttr::default())
        .result
        .unwrap();
    assert_eq!(f.attr.ftype, FileType::Fifo);
    let s = e
        .mknod(&c, &root, b"sock", SpecialFile::Socket, &SetAttr::default())
        .result
        .unwrap();
    assert_eq!(s.attr.ftype, FileType::Socket);
}

#[test]
fn setattr_sizes_modes_times_and_the_guard() {
    let rig = Rig::new("setattr");
    let e = rig.open();
    let root = e.root_handle();
    let c = me();
    let f = create(&e, &root, "f");
    write_all(&e, &f, 0, &[1u8; 5000], StableHow::Unstable);
    let a = e.getattr(&f).unwrap();
    // Guard with a wrong ctime: nothing changes.
    let wrong = Time {
        seconds: a.ctime.seconds.wrapping_add(1),
        nseconds: 0,
    };
    let out = e.setattr(
        &c,
        &f,
        &SetAttr {
            size: Some(1),
            ..SetAttr::default()
        },
        Some(wrong),
    );
    assert_eq!(out.result.unwrap_err(), NfsError::NotSync);
    assert_eq!(e.getattr(&f).unwrap().size, 5000);
    // With the right one.
    let set = SetAttr {
        size: Some(100),
        mode: Some(0o600),
        atime: SetTime::ClientTime(Time {
            seconds: 1_000_000,
            nseconds: 5,
        }),
        mtime: SetTime::ClientTime(Time {
            seconds: 2_000_000,
            nseconds: 7,
        }),
        ..SetAttr::default()
    };
    let out = e.setattr(&c, &f, &set, Some(a.ctime));
    out.result.unwrap();
    let b = out.wcc.after.unwrap();
    assert_eq!((b.size, b.mode), (100, 0o600));
    assert_eq!(
        b.atime,
        Time {
            seconds: 1_000_000,
            nseconds: 5
        }
    );
    assert_eq!(
        b.mtime,
        Time {
            seconds: 2_000_000,
            nseconds: 7
        }
    );
    assert_eq!(out.wcc.before.unwrap().size, 5000);
    // Extending fills with zeros.
    e.setattr(
        &c,
        &f,
        &SetAttr {
            size: Some(200),
            ..SetAttr::default()
        },
        None,
    )
    .result
    .unwrap();
    let data = read_all(&e, &f);
    assert_eq!(data.len(), 200);
    assert!(data[100..].iter().all(|&x| x == 0));
    // Server time.
    e.setattr(
        &c,
        &f,
        &SetAttr {
            mtime: SetTime::ServerTime,
            ..SetAttr::default()
        },
        None,
    )
    .result
    .unwrap();
    assert!(e.getattr(&f).unwrap().mtime.seconds > 2_000_000);
    // A directory has no size to set.
    assert_eq!(
        e.setattr(
            &c,
            &root,
            &SetAttr {
                size: Some(0),
                ..SetAttr::default()
            },
            None
        )
        .result
        .unwrap_err(),
        NfsError::IsDir
    );
}

#[test]
fn links_renames_and_removal() {
    let rig = Rig::new("links");
    let e = rig.open();
    let root = e.root_handle();
    let c = me();
    let a = mkdir(&e, &root, "a");
    let b = mkdir(&e, &root, "b");
    let f = create(&e, &a, "f");
    write_all(&e, &f, 0, b"payload", StableHow::FileSync);
    // Hard link.
    let (r, attr, _) = e.link(&c, &f, &b, b"g");
    r.unwrap();
    assert_eq!(attr.unwrap().nlink, 2);
    assert_eq!(e.link(&c, &f, &b, b"g").0.unwrap_err(), NfsError::Exist);
    assert_eq!(
        e.link(&c, &a, &b, b"dirlink").0.unwrap_err(),
        NfsError::IsDir
    );
    // Remove the first name: the handle lives on through the second.
    e.remove(&c, &a, b"f").result.unwrap();
    assert_eq!(e.getattr(&f).unwrap().nlink, 1);
    assert_eq!(read_all(&e, &f), b"payload");
    // Rename across directories keeps the handle.
    let (r, from, to) = e.rename(&c, &b, b"g", &a, b"moved");
    r.unwrap();
    assert!(from.after.is_some() && to.after.is_some());
    assert_eq!(read_all(&e, &f), b"payload");
    assert_eq!(lookup(&e, &a, "moved").unwrap(), f);
    // Renamed behind the server's back, and the server restarted.
    std::fs::rename(rig.root.join("a/moved"), rig.root.join("b/elsewhere")).unwrap();
    assert_eq!(read_all(&e, &f), b"payload");
    drop(e);
    let e = rig.open();
    assert_eq!(read_all(&e, &f), b"payload");
    // Rename over an existing file replaces it; over a non-empty
    // directory fails.
    let x = create(&e, &root, "x");
    create(&e, &root, "y");
    e.rename(&c, &root, b"x", &root, b"y").0.unwrap();
    assert_eq!(lookup(&e, &root, "y").unwrap(), x);
    assert_eq!(lookup(&e, &root, "x").unwrap_err(), NfsError::NoEnt);
    assert_eq!(
        e.rename(&c, &root, b"a", &root, b"b").0.unwrap_err(),
        NfsError::NotEmpty
    );
    // RMDIR of a non-empty directory, of ".", of a file; REMOVE of a directory.
    assert_eq!(
        e.rmdir(&c, &root, b"b").result.unwrap_err(),
        NfsError::NotEmpty
    );
    assert_eq!(
        e.rmdir(&c, &root, b".").result.unwrap_err(),
        NfsError::Inval
    );
    assert_eq!(
        e.rmdir(&c, &root, b"y").result.unwrap_err(),
        NfsError::NotDir
    );
    assert!(e.remove(&c, &root, b"a").result.is_err());
    assert_eq!(
        e.remove(&c, &root, b"nope").result.unwrap_err(),
        NfsError::NoEnt
    );
    // A directory handle survives its rename.
    let (r, _, _) = e.rename(&c, &root, b"a", &b, b"a2");
    r.unwrap();
    assert_eq!(e.getattr(&a).unwrap().ftype, FileType::Directory);
    assert_eq!(lookup(&e, &a, "..").unwrap(), b);
}

#[test]
fn a_small_node_table_still_resolves_everything() {
    let rig = Rig::new("small-table");
    let mut cfg = rig.config();
    cfg.max_nodes = 16;
    cfg.max_dir_fds = 4;
    let e = Export::open(cfg).unwrap();
    let root = e.root_handle();
    let mut dirs = Vec::new();
    for d in 0..8 {
        dirs.push(mkdir(&e, &root, &format!("d{d}")));
    }
    let mut files = Vec::new();
    for (d, dh) in dirs.iter().enumerate() {
        for i in 0..20 {
            let f = create(&e, dh, &format!("f{i}"));
            write_all(
                &e,
                &f,
                0,
                format!("{d}/{i}").as_bytes(),
                StableHow::Unstable,
            );
            files.push((f, format!("{d}/{i}")));
        }
    }
    for (f, content) in &files {
        assert_eq!(read_all(&e, f), content.as_bytes());
    }
}

#[test]
fn access_follows_the_mode_bits() {
    let mut a = rpcrdma_nfs3::fs::Attr {
        ftype: FileType::Regular,
        mode: 0o640,
        nlink: 1,
        uid: 1000,
        gid: 100,
        size: 0,
        used: 0,
        rdev: (0, 0),
        fsid: 0,
        fileid: 1,
        atime: Time::default(),
        mtime: Time::default(),
        ctime: Time::default(),
    };
    let owner = Caller::new(1000, 1, vec![]);
    let member = Caller::new(2000, 5, vec![100]);
    let other = Caller::new(3000, 5, vec![]);
    let root = Caller::new(0, 0, vec![]);
    let all = access::ALL;
    assert_eq!(
        access_by_mode(&a, &owner, all),
        access::READ | access::MODIFY | access::EXTEND
    );
    assert_eq!(access_by_mode(&a, &member, all), access::READ);
    assert_eq!(access_by_mode(&a, &other, all), 0);
    assert_eq!(
        access_by_mode(&a, &root, all),
        access::READ | access::MODIFY | access::EXTEND
    );
    a.mode = 0o100;
    assert_eq!(
        access_by_mode(&a, &root, all) & access::EXECUTE,
        access::EXECUTE
    );
    a.ftype = FileType::Directory;
    a.mode = 0o750;
    assert_eq!(
        access_by_mode(&a, &owner, all),
        access::READ | access::LOOKUP | access::MODIFY | access::EXTEND | access::DELETE
    );
    assert_eq!(
        access_by_mode(&a, &member, all),
        access::READ | access::LOOKUP
    );
    assert_eq!(access_by_mode(&a, &member, access::LOOKUP), access::LOOKUP);
}

#[test]
fn squashing() {
    use rpcrdma_nfs3::fs::squash;
    let anon = (65534, 65533);
    let c = squash(Squash::Root, anon, Some((0, 0, &[0, 4])));
    assert_eq!((c.uid, c.gid, c.groups), (65534, 65533, vec![65533, 4]));
    let c = squash(Squash::Root, anon, Some((1000, 0, &[])));
    assert_eq!((c.uid, c.gid), (1000, 65533));
    let c = squash(Squash::None, anon, Some((0, 0, &[0])));
    assert_eq!((c.uid, c.gid, c.groups), (0, 0, vec![0]));
    let c = squash(Squash::All, anon, Some((1000, 1000, &[1])));
    assert_eq!((c.uid, c.gid, c.groups), (65534, 65533, vec![]));
    let c = squash(Squash::None, anon, None);
    assert_eq!((c.uid, c.gid), anon);
}

#[test]
fn configuration_errors_say_what_to_do() {
    let rig = Rig::new("config");
    // State inside the export.
    let cfg = ExportConfig::new(&rig.root, rig.root.join("state"));
    let e = Export::open(cfg).unwrap_err();
    assert!(matches!(e, ExportError::StateInsideExport { .. }), "{e}");
    // A damaged key.
    std::fs::create_dir_all(&rig.state).unwrap();
    std::fs::write(rig.state.join("handle.key"), b"short").unwrap();
    let e = Export::open(rig.config()).unwrap_err();
    assert!(matches!(e, ExportError::BadKey { len: 5, .. }), "{e}");
    assert!(e.to_string().contains("move it away"));
    // No such export.
    let cfg = ExportConfig::new(rig.root.join("missing"), &rig.state);
    let e = Export::open(cfg).unwrap_err();
    assert!(matches!(e, ExportError::Root { .. }), "{e}");
}

/// As root: operations run as the (squashed) caller.
#[test]
fn acting_as_the_caller() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("acting_as_the_caller: skipped (needs root to switch identities)");
        return;
    }
    let rig = Rig::new("ident");
    std::fs::set_permissions(&rig.root, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut cfg = rig.config();
    cfg.identity = IdentityMode::Switch;
    let e = Export::open(cfg).unwrap();
    let root = e.root_handle();
    let alice = e.caller(Some((1000, 1000, &[])));
    let bob = e.caller(Some((2000, 2000, &[])));
    let squashed = e.caller(Some((0, 0, &[])));
    // Files belong to their creator; root is squashed.
    let a = e
        .create(
            &alice,
            &root,
            b"alice",
            CreateHow::Guarded(SetAttr {
                mode: Some(0o644),
                ..SetAttr::default()
            }),
        )
        .result
        .unwrap();
    assert_eq!((a.attr.uid, a.attr.gid), (1000, 1000));
    let r = e
        .create(
            &squashed,
            &root,
            b"root",
            CreateHow::Guarded(SetAttr::default()),
        )
        .result
        .unwrap();
    assert_eq!((r.attr.uid, r.attr.gid), (65534, 65534));
    // Bob cannot write Alice's file, nor chmod it, nor give it away.
    assert_eq!(
        e.write(&bob, &a.handle, 0, b"x", StableHow::FileSync)
            .result
            .unwrap_err(),
        NfsError::Acces
    );
    assert_eq!(
        e.setattr(
            &bob,
            &a.handle,
            &SetAttr {
                mode: Some(0o777),
                ..SetAttr::default()
            },
            None
        )
        .result
        .unwrap_err(),
        NfsError::Perm
    );
    assert_eq!(
        e.setattr(
            &alice,
            &a.handle,
            &SetAttr {
                uid: Some(2000),
                ..SetAttr::default()
            },
            None
        )
        .result
        .unwrap_err(),
        NfsError::Perm
    );
    // Squashed root cannot either.
    assert_eq!(
        e.write(&squashed, &a.handle, 0, b"x", StableHow::FileSync)
            .result
            .unwrap_err(),
        NfsError::Acces
    );
    // The owner may write a file whose mode forbids it (owner override).
    e.setattr(
        &alice,
        &a.handle,
        &SetAttr {
            mode: Some(0o444),
            ..SetAttr::default()
        },
        None,
    )
    .result
    .unwrap();
    e.write(&alice, &a.handle, 0, b"mine", StableHow::FileSync)
        .result
        .unwrap();
    assert_eq!(std::fs::read(rig.root.join("alice")).unwrap(), b"mine");
    // Bob can read it (0444) but not remove it from a sticky directory.
    std::fs::set_permissions(&rig.root, std::fs::Permissions::from_mode(0o1777)).unwrap();
    assert_eq!(e.read(&bob, &a.handle, 0, 10).0.unwrap().data, &b"mine"[..]);
    assert!(e.remove(&bob, &root, b"alice").result.is_err());
    assert!(rig.root.join("alice").exists());
    // ACCESS by mode for each.
    let (g, _) = e.access(&bob, &a.handle, access::ALL).unwrap();
    assert_eq!(g, access::READ);
    // A private directory is closed to others.
    let p = e
        .mkdir(
            &alice,
            &root,
            b"private",
            &SetAttr {
                mode: Some(0o700),
                ..SetAttr::default()
            },
        )
        .result
        .unwrap();
    assert_eq!(
        e.lookup(&bob, &p.handle, b"x").0.unwrap_err(),
        NfsError::Acces
    );
    let (r, _) = e.readdir(&bob, &p.handle, 0, [0; 8], false, |_| true);
    assert_eq!(r.unwrap_err(), NfsError::Acces);
    // The thread is root again afterwards.
    assert!(rustix::process::geteuid().is_root());
    assert!(rustix::thread::set_thread_res_uid(None, rustix::fs::Uid::ROOT, None).is_ok());
}

#[test]
fn invalid_ids_are_the_anonymous_user_whatever_the_squashing() {
    use rpcrdma_nfs3::fs::{squash, squash_in, IdMaps, IdRanges, INVALID_ID};
    let anon = (65534, 65533);
    for how in [Squash::Root, Squash::None] {
        // (uid_t)-1 as uid, gid and a supplementary gid.
        let c = squash(how, anon, Some((INVALID_ID, INVALID_ID, &[INVALID_ID, 5])));
        assert_eq!((c.uid, c.gid, c.groups), (65534, 65533, vec![5]), "{how:?}");
        let c = squash(how, anon, Some((1000, INVALID_ID, &[])));
        assert_eq!((c.uid, c.gid), (1000, 65533), "{how:?}");
        let c = squash(how, anon, Some((INVALID_ID, 1000, &[])));
        assert_eq!((c.uid, c.gid), (65534, 1000), "{how:?}");
    }
    // Root squashing covers gid 0 as primary and supplementary group, and
    // a list that becomes the same group twice holds it once.
    let c = squash(Squash::Root, anon, Some((5, 0, &[0, 0, 7])));
    assert_eq!((c.uid, c.gid, c.groups), (5, 65533, vec![65533, 7]));
    // Inside a user namespace that maps 0..65536, 70000 is not an id.
    let maps = IdMaps {
        uids: IdRanges::parse("0 100000 65536\n"),
        gids: IdRanges::parse("0 100000 65536\n"),
    };
    let c = squash_in(&maps, Squash::None, anon, Some((70000, 70000, &[70000, 3])));
    assert_eq!((c.uid, c.gid, c.groups), (65534, 65533, vec![3]));
    // The map of the initial namespace has every id but (uid_t)-1.
    let init = IdRanges::parse("         0          0 4294967295\n");
    assert!(init.contains(0) && init.contains(u32::MAX - 1) && !init.contains(u32::MAX));
    assert!(!IdRanges::parse("garbage\n").contains(0));
}

#[test]
fn an_anonymous_user_that_cannot_be_acted_as_is_refused_at_open() {
    let rig = Rig::new("badanon");
    let mut cfg = rig.config();
    cfg.anon = (u32::MAX, 65534);
    let e = Export::open(cfg).unwrap_err();
    assert!(matches!(e, ExportError::BadAnon { what: "uid", .. }), "{e}");
    assert!(e.to_string().contains("--anon-uid"), "{e}");
    let mut cfg = rig.config();
    cfg.anon = (65534, u32::MAX);
    let e = Export::open(cfg).unwrap_err();
    assert!(matches!(e, ExportError::BadAnon { what: "gid", .. }), "{e}");
}

/// RFC 1813 §3.3.6: a READ at or past the end of the file is NFS3_OK with
/// no data and eof, wherever the offset is in the 64-bit range; WRITE and
/// SETATTR past the largest file are NFS3ERR_FBIG (§3.3.7, §3.3.2).
#[test]
fn offsets_anywhere_in_the_unsigned_range() {
    let rig = Rig::new("offsets");
    let e = rig.open();
    let root = e.root_handle();
    let f = create(&e, &root, "f");
    write_all(&e, &f, 0, &[7u8; 3000], StableHow::FileSync);
    let top = i64::MAX as u64;
    for (off, count) in [
        (top, 10),
        (top - 9, 100),
        (top + 1, u32::MAX),
        (u64::MAX - 9, u32::MAX),
        (u64::MAX, u32::MAX),
        (u64::MAX, 0),
        (3000, 10),
        (2999 + (1 << 40), 1),
    ] {
        let d = e
            .read(&me(), &f, off, count)
            .0
            .unwrap_or_else(|err| panic!("READ at {off} count {count}: {err:?}"));
        assert!(d.data.is_empty() && d.eof, "READ at {off} count {count}");
        assert_eq!(d.attr.size, 3000);
    }
    // The last bytes, and a count larger than what is left.
    let d = e.read(&me(), &f, 2990, u32::MAX).0.unwrap();
    assert_eq!((d.data.len(), d.eof), (10, true));
    for (off, len) in [
        (top, 1),
        (top - 1, 2),
        (u64::MAX, 0),
        (u64::MAX - 1, 4),
        (top + 1, 0),
    ] {
        let r = e
            .write(&me(), &f, off, &vec![1u8; len], StableHow::Unstable)
            .result;
        assert_eq!(r.unwrap_err(), NfsError::FBig, "WRITE at {off} of {len}");
    }
    // Within the range, a WRITE the file system cannot hold (ext4 stops
    // at 16 TiB) is its own NFS3ERR_FBIG.
    let r = e
        .write(&me(), &f, top - 1, b"z", StableHow::Unstable)
        .result;
    assert!(
        matches!(r, Ok(ref w) if w.count == 1) || r == Err(NfsError::FBig),
        "{r:?}"
    );
    for size in [top + 1, u64::MAX] {
        let r = e
            .setattr(
                &me(),
                &f,
                &SetAttr {
                    size: Some(size),
                    ..SetAttr::default()
                },
                None,
            )
            .result;
        assert_eq!(r.unwrap_err(), NfsError::FBig, "SETATTR size {size}");
    }
    // COMMIT of any range syncs the file.
    assert!(e.commit(&me(), &f).result.is_ok());
}

#[test]
fn device_numbers_the_kernel_cannot_hold_and_invalid_owners_are_refused() {
    let rig = Rig::new("devnum");
    let e = rig.open();
    let root = e.root_handle();
    // 0x1001:3 would be cut to 1:3 (/dev/mem) by mknodat's 32-bit word.
    for (name, what) in [
        ("big-major", SpecialFile::Char(0x1001, 3)),
        ("big-minor", SpecialFile::Block(8, 0x10_0000)),
        ("huge", SpecialFile::Char(u32::MAX, u32::MAX)),
    ] {
        let r = e
            .mknod(&me(), &root, name.as_bytes(), what, &SetAttr::default())
            .result;
        assert_eq!(r.unwrap_err(), NfsError::Inval, "{name}");
        assert!(!rig.root.join(name).exists(), "{name}");
    }
    let f = create(&e, &root, "owned");
    for set in [
        SetAttr {
            uid: Some(u32::MAX),
            ..SetAttr::default()
        },
        SetAttr {
            gid: Some(u32::MAX),
            size: Some(0),
            ..SetAttr::default()
        },
    ] {
        let r = e.setattr(&me(), &f, &set, None).result;
        assert_eq!(r.unwrap_err(), NfsError::Inval, "{set:?}");
    }
}

/// A server running as its own user never makes a set-user-ID or
/// set-group-ID file: any local user could run it as the server's user.
#[test]
fn a_server_running_as_its_own_user_drops_the_setid_bits() {
    let rig = Rig::new("setid");
    let e = rig.open();
    let root = e.root_handle();
    let made = e
        .create(
            &me(),
            &root,
            b"prog",
            CreateHow::Unchecked(SetAttr {
                mode: Some(0o6755),
                ..SetAttr::default()
            }),
        )
        .result
        .unwrap();
    assert_eq!(made.attr.mode, 0o755);
    e.setattr(
        &me(),
        &made.handle,
        &SetAttr {
            mode: Some(0o4711),
            ..SetAttr::default()
        },
        None,
    )
    .result
    .unwrap();
    assert_eq!(e.getattr(&made.handle).unwrap().mode, 0o711);
    // A directory keeps set-group-ID (group inheritance), never set-user-ID.
    let d = e
        .mkdir(
            &me(),
            &root,
            b"shared",
            &SetAttr {
                mode: Some(0o6775),
                ..SetAttr::default()
            },
        )
        .result
        .unwrap();
    assert_eq!(d.attr.mode, 0o2775);
}

/// As root: an AUTH_SYS id of 0xFFFFFFFF is the anonymous user, never the
/// server's root (the identity switch is checked after it is made).
#[test]
fn an_invalid_id_never_acts_as_root() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("an_invalid_id_never_acts_as_root: skipped (needs root to switch identities)");
        return;
    }
    let rig = Rig::new("invalid-id");
    std::fs::set_permissions(&rig.root, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::write(rig.root.join("secret"), b"root only").unwrap();
    std::fs::set_permissions(
        rig.root.join("secret"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let mut cfg = rig.config();
    cfg.identity = IdentityMode::Switch;
    let e = Export::open(cfg).unwrap();
    let root = e.root_handle();
    let secret = lookup(&e, &root, "secret").unwrap();
    let setuid = CreateHow::Unchecked(SetAttr {
        mode: Some(0o4755),
        ..SetAttr::default()
    });
    for (tag, cred) in [
        ("both", (u32::MAX, u32::MAX)),
        ("uid", (u32::MAX, 1000)),
        ("gid", (1000, u32::MAX)),
    ] {
        let who = e.caller(Some((cred.0, cred.1, &[u32::MAX])));
        assert_ne!(who.uid, u32::MAX);
        assert_ne!(who.gid, u32::MAX);
        // CREATE: owned by the caller as mapped, never 0:0, no setuid.
        let name = format!("made-{tag}");
        let m = e
            .create(&who, &root, name.as_bytes(), setuid)
            .result
            .unwrap();
        let md = std::fs::symlink_metadata(rig.root.join(&name)).unwrap();
        assert_ne!(md.uid(), 0, "{tag}: a root-owned file");
        assert_ne!(md.gid(), 0, "{tag}: a root-group file");
        assert_eq!((md.uid(), md.gid()), (who.uid, who.gid), "{tag}");
        if who.uid == 65534 {
            assert_eq!(md.mode() & 0o7000, 0, "{tag}: set-id bits from nobody");
        } else {
            // User 1000 may make a file set-user-ID to itself, as on nfsd.
            assert_eq!(md.mode() & 0o7000, 0o4000, "{tag}");
        }
        assert_eq!(m.attr.uid, who.uid);
        // READ of a root-only file: refused.
        assert_eq!(
            e.read(&who, &secret, 0, 100).0.unwrap_err(),
            NfsError::Acces,
            "{tag}"
        );
        // MKNOD of /dev/null's numbers: refused by the kernel.
        let dev = format!("dev-{tag}");
        let r = e
            .mknod(
                &who,
                &root,
                dev.as_bytes(),
                SpecialFile::Char(1, 3),
                &SetAttr::default(),
            )
            .result;
        assert!(r.is_err(), "{tag}: a device node was made");
        assert!(!rig.root.join(&dev).exists(), "{tag}");
    }
    // A caller built by hand with (uid_t)-1 is refused, not run as root.
    let forged = Caller::new(u32::MAX, u32::MAX, vec![]);
    assert_eq!(
        e.read(&forged, &secret, 0, 100).0.unwrap_err(),
        NfsError::ServerFault
    );
    assert!(rustix::process::geteuid().is_root());
}
