//! Manifest lines (one per name: type, mode, link count, size and a hash
//! of the contents, or the link target), of the model or of a real tree.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use crate::model::join;

/// FNV-1a, 64 bits.
pub(crate) fn fnv64(data: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().fold(String::new(), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

pub(crate) fn manifest_file(path: &str, mode: u32, links: u32, data: &[u8]) -> String {
    format!(
        "{path} file mode={mode:04o} links={links} size={} fnv={:016x}",
        data.len(),
        fnv64(data)
    )
}
pub(crate) fn manifest_fifo(path: &str, mode: u32) -> String {
    format!("{path} fifo mode={mode:04o}")
}
pub(crate) fn manifest_dir(path: &str, mode: u32) -> String {
    format!("{path} dir mode={mode:04o}")
}
pub(crate) fn manifest_link(path: &str, target: &[u8]) -> String {
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
pub(crate) fn manifest_of(root: &Path) -> io::Result<Vec<String>> {
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
