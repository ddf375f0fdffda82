//! Operations on file contents: writes and reads (buffered, `O_DIRECT`,
//! through `mmap`), truncates, appends, syncs, far offsets and
//! `copy_file_range`.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};

use rustix::fs::OFlags;

use super::{ctx, first_diff, read_full, Res, Worker};
use crate::mapped;
use crate::opts::MIB;

impl Worker {
    /// An offset and length for a write to a file of `size` bytes that
    /// may grow to `max`: anywhere, near a 1 MiB boundary, near the end of
    /// the file, or small and page-aligned; lengths mostly small, some
    /// large (up to 1.5 MiB, across boundaries).
    pub(super) fn range(&mut self, size: u64, max: u64) -> (u64, u64) {
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

    pub(super) fn write(&mut self, direct: bool) -> Res {
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

    pub(super) fn read(&mut self, direct: bool) -> Res {
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

    pub(super) fn truncate(&mut self) -> Res {
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

    pub(super) fn append(&mut self) -> Res {
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

    pub(super) fn fsync(&mut self) -> Res {
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
    pub(super) fn far(&mut self) -> Res {
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
    pub(super) fn copy(&mut self) -> Res {
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

    pub(super) fn mmap_read(&mut self) -> Res {
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

    pub(super) fn mmap_write(&mut self) -> Res {
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
}
