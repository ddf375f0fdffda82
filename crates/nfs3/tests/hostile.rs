//! Hostile input: the fuzz harness's argument round trip, bounded and
//! with a fixed seed; and random sequences of namespace operations with
//! hostile names and link targets, after which nothing outside the export
//! has changed and every name inside is one the export created.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use bytes::Bytes;
use proptest::prelude::*;
use rpcrdma_nfs3::fs::{
    Caller, CreateHow, Export, ExportConfig, FileHandle, IdentityMode, SetAttr, StableHow,
};
use rpcrdma_nfs3::fuzzing::args_roundtrip;
use rpcrdma_nfs3::proto::nfs3 as p;
use rpcrdma_oncrpc::Marshal;
use rpcrdma_xdr::PayloadEncoder;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn enc(v: &impl Marshal) -> Vec<u8> {
    let mut pe = PayloadEncoder::new();
    v.marshal(&mut pe.encoder());
    pe.finish().flatten().to_vec()
}

#[test]
fn bounded_fuzz_of_the_argument_decoders() {
    let fh = p::NfsFh3 {
        data: Bytes::from(vec![1u8; 36]),
    };
    let dirop = p::Diropargs3 {
        dir: fh.clone(),
        name: Bytes::from_static(b"name"),
    };
    let valid: Vec<(u8, Vec<u8>)> = vec![
        (
            3,
            enc(&p::Lookup3args {
                what: dirop.clone(),
            }),
        ),
        (
            6,
            enc(&p::Read3args {
                file: fh.clone(),
                offset: 7,
                count: 4096,
            }),
        ),
        (
            7,
            enc(&p::Write3args {
                file: fh.clone(),
                offset: 0,
                count: 5,
                stable: p::StableHow::Unstable,
                data: Bytes::from_static(b"hello"),
            }),
        ),
        (
            14,
            enc(&p::Rename3args {
                from: dirop.clone(),
                to: dirop.clone(),
            }),
        ),
        (
            17,
            enc(&p::Readdirplus3args {
                dir: fh.clone(),
                cookie: 1,
                cookieverf: [2; 8],
                dircount: 3,
                maxcount: 4,
            }),
        ),
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for round in 0..20_000 {
        let (sel, mut buf) = valid[round % valid.len()].clone();
        match rng.next() % 4 {
            0 => {
                // Random bytes.
                let n = (rng.next() % 200) as usize;
                buf = (0..n).map(|_| rng.next() as u8).collect();
            }
            1 => {
                // Bit flips.
                for _ in 0..1 + rng.next() % 4 {
                    if !buf.is_empty() {
                        let i = (rng.next() as usize) % buf.len();
                        buf[i] ^= 1 << (rng.next() % 8);
                    }
                }
            }
            2 => {
                // Cut.
                let n = (rng.next() as usize) % (buf.len() + 1);
                buf.truncate(n);
            }
            _ => {
                // A huge length word somewhere.
                if buf.len() >= 4 {
                    let i = ((rng.next() as usize) % (buf.len() / 4)) * 4;
                    buf[i..i + 4].copy_from_slice(&0xffff_fff0u32.to_be_bytes());
                }
            }
        }
        let mut input = vec![sel.wrapping_add((rng.next() % 3) as u8 * 24)];
        input.extend_from_slice(&buf);
        args_roundtrip(&input);
    }
}

struct Tmp(PathBuf);
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every path under `dir`, with its type and size, for comparison.
fn snapshot(dir: &Path) -> Vec<(PathBuf, bool, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            out.push((e.path(), m.is_dir(), m.len()));
            if m.is_dir() {
                stack.push(e.path());
            }
        }
    }
    out.sort();
    out
}

#[derive(Debug, Clone)]
enum Op {
    Create(usize, usize),
    Mkdir(usize, usize),
    Symlink(usize, usize, usize),
    Lookup(usize, usize),
    Write(usize),
    Rename(usize, usize, usize, usize),
    Link(usize, usize, usize),
    Remove(usize, usize),
    Rmdir(usize, usize),
}

const NAMES: &[&[u8]] = &[
    b"a",
    b"b",
    b"..",
    b".",
    b"../x",
    b"../../outside/planted",
    b"a/b",
    b"",
    b"x\0y",
    b"/etc/passwd",
    b"escape",
    b"dir",
    b"\xff\xfe",
    b"sub",
];
const TARGETS: &[&[u8]] = &[
    b"..",
    b"../..",
    b"/",
    b"../outside",
    b"a",
    b"/etc",
    b"escape/..",
];

fn op() -> impl Strategy<Value = Op> {
    let n = 0..NAMES.len();
    let h = 0..8usize;
    prop_oneof![
        (h.clone(), n.clone()).prop_map(|(a, b)| Op::Create(a, b)),
        (h.clone(), n.clone()).prop_map(|(a, b)| Op::Mkdir(a, b)),
        (h.clone(), n.clone(), 0..TARGETS.len()).prop_map(|(a, b, c)| Op::Symlink(a, b, c)),
        (h.clone(), n.clone()).prop_map(|(a, b)| Op::Lookup(a, b)),
        h.clone().prop_map(Op::Write),
        (h.clone(), n.clone(), h.clone(), n.clone())
            .prop_map(|(a, b, c, d)| Op::Rename(a, b, c, d)),
        (h.clone(), h.clone(), n.clone()).prop_map(|(a, b, c)| Op::Link(a, b, c)),
        (h.clone(), n.clone()).prop_map(|(a, b)| Op::Remove(a, b)),
        (h, n).prop_map(|(a, b)| Op::Rmdir(a, b)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn hostile_names_never_reach_outside_the_export(ops in proptest::collection::vec(op(), 1..40)) {
        static N: AtomicU32 = AtomicU32::new(0);
        let base = std::env::temp_dir().join(format!(
            "rpcrdma-nfs3-hostile-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
        let _ = std::fs::remove_dir_all(&base);
        let _tmp = Tmp(base.clone());
        let root = base.join("export");
        let outside = base.join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("keep"), b"keep").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("escape")).unwrap();
        let before = snapshot(&outside);
        let mut cfg = ExportConfig::new(&root, base.join("state"));
        cfg.identity = IdentityMode::ServerUser;
        let e = Export::open(cfg).unwrap();
        let who = Caller::new(rustix::process::geteuid().as_raw(), rustix::process::getegid().as_raw(), vec![]);
        let mut handles: Vec<FileHandle> = vec![e.root_handle()];
        let h = |hs: &Vec<FileHandle>, i: usize| hs[i % hs.len()].clone();
        for op in ops {
            match op {
                Op::Create(d, n) => {
                    if let Ok(m) = e.create(&who, &h(&handles, d), NAMES[n], CreateHow::Unchecked(SetAttr::default())).result {
                        handles.push(m.handle);
                    }
                }
                Op::Mkdir(d, n) => {
                    if let Ok(m) = e.mkdir(&who, &h(&handles, d), NAMES[n], &SetAttr::default()).result {
                        handles.push(m.handle);
                    }
                }
                Op::Symlink(d, n, t) => {
                    if let Ok(m) = e.symlink(&who, &h(&handles, d), NAMES[n], TARGETS[t], &SetAttr::default()).result {
                        handles.push(m.handle);
                    }
                }
                Op::Lookup(d, n) => {
                    if let (Ok((fh, _)), _) = e.lookup(&who, &h(&handles, d), NAMES[n]) {
                        handles.push(fh);
                    }
                }
                Op::Write(f) => {
                    let _ = e.write(&who, &h(&handles, f), 0, b"data", StableHow::FileSync);
                    let _ = e.setattr(&who, &h(&handles, f), &SetAttr { size: Some(1), ..SetAttr::default() }, None);
                }
                Op::Rename(a, n, b, m) => {
                    let _ = e.rename(&who, &h(&handles, a), NAMES[n], &h(&handles, b), NAMES[m]);
                }
                Op::Link(f, d, n) => {
                    let _ = e.link(&who, &h(&handles, f), &h(&handles, d), NAMES[n]);
                }
                Op::Remove(d, n) => {
                    let _ = e.remove(&who, &h(&handles, d), NAMES[n]);
                }
                Op::Rmdir(d, n) => {
                    let _ = e.rmdir(&who, &h(&handles, d), NAMES[n]);
                }
            }
            // Every handle still answers (an attribute or an NFS error).
            for fh in &handles {
                let _ = e.getattr(fh);
            }
        }
        prop_assert_eq!(snapshot(&outside), before, "nothing outside the export changed");
        for (path, _, _) in snapshot(&root) {
            let name = path.file_name().unwrap().as_encoded_bytes().to_vec();
            prop_assert!(!name.contains(&b'/') && !name.is_empty() && name != b".." && name != b".");
        }
    }
}
