//! File data: READ, WRITE (`UNSTABLE` data stays in the page cache
//! until COMMIT), COMMIT, and READLINK.

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::nodes::statx_fd;
use super::{
    Attr, Caller, Export, FileHandle, FileType, NfsError, NfsResult, Node, Outcome, ReadData,
    StableHow, Wcc, WccAttr, Written, MAX_IO,
};

/// The largest offset a file can reach (`loff_t`'s maximum, also
/// `FSINFO` maxfilesize): READ stops there and WRITE beyond it is
/// `NFS3ERR_FBIG`.
pub const MAX_FILE_OFFSET: u64 = i64::MAX as u64;

impl Export {
    /// READLINK.
    pub fn readlink(&self, caller: &Caller, fh: &FileHandle) -> NfsResult<(Vec<u8>, Attr)> {
        let n = self.resolve(fh)?;
        if n.ftype() != FileType::Symlink {
            return Err(NfsError::Inval);
        }
        let _act = self.act(caller)?;
        let target = rustix::fs::readlinkat(&*n.fd, c"", Vec::new())?;
        Ok((target.into_bytes(), self.attr_of(&n.st)))
    }

    /// READ of at most `count` bytes (capped at [`MAX_IO`]) at `offset`.
    pub fn read(
        &self,
        caller: &Caller,
        fh: &FileHandle,
        offset: u64,
        count: u32,
    ) -> (NfsResult<ReadData>, Option<Attr>) {
        let n = match self.resolve(fh) {
            Ok(n) => n,
            Err(e) => return (Err(e), None),
        };
        let r = self.read_node(caller, &n, offset, count);
        let post = match &r {
            Ok(d) => Some(d.attr),
            Err(_) => self.post_attr(&n),
        };
        (r, post)
    }

    fn read_node(&self, caller: &Caller, n: &Node, offset: u64, count: u32) -> NfsResult<ReadData> {
        match n.ftype() {
            FileType::Regular => {}
            FileType::Directory => return Err(NfsError::IsDir),
            _ => return Err(NfsError::Inval),
        }
        let act = self.act(caller)?;
        let fd = self.open_io(&act, caller, n, false)?;
        drop(act);
        // No file is longer than the largest signed offset, so a READ at
        // or past it reads nothing and reaches the end (RFC 1813 §3.3.6:
        // NFS3_OK, count 0, eof); a READ that would run past it stops
        // there. No offset handed to pread is ever negative.
        let room = MAX_FILE_OFFSET.saturating_sub(offset);
        let want = u64::from(count.min(MAX_IO)).min(room) as usize;
        // A kept buffer (not zeroed again: pread overwrites what it
        // sends); it goes back to the pool when the reply is sent.
        let mut buf = self.read_buffers.take(want);
        let mut got = 0usize;
        while got < want {
            match rustix::io::pread(&fd, &mut buf[got..want], offset.saturating_add(got as u64)) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        let st = statx_fd(&fd)?;
        let eof = offset.saturating_add(got as u64) >= st.stx_size;
        Ok(ReadData {
            data: self.read_buffers.share(buf, got),
            eof,
            attr: self.attr_of(&st),
        })
    }

    /// WRITE of `data` at `offset`.
    pub fn write(
        &self,
        caller: &Caller,
        fh: &FileHandle,
        offset: u64,
        data: &[u8],
        stable: StableHow,
    ) -> Outcome<Written> {
        let n = match self.resolve(fh) {
            Ok(n) => n,
            Err(e) => {
                return Outcome {
                    result: Err(e),
                    wcc: Wcc::default(),
                }
            }
        };
        let before = Some(WccAttr::from(&self.attr_of(&n.st)));
        let result = self.write_node(caller, &n, offset, data, stable);
        Outcome {
            result,
            wcc: Wcc {
                before,
                after: self.post_attr(&n),
            },
        }
    }

    fn write_node(
        &self,
        caller: &Caller,
        n: &Node,
        offset: u64,
        data: &[u8],
        stable: StableHow,
    ) -> NfsResult<Written> {
        self.writable(caller)?;
        match n.ftype() {
            FileType::Regular => {}
            FileType::Directory => return Err(NfsError::IsDir),
            _ => return Err(NfsError::Inval),
        }
        if data.len() > MAX_IO as usize {
            return Err(NfsError::Inval);
        }
        if offset
            .checked_add(data.len() as u64)
            .is_none_or(|end| end > MAX_FILE_OFFSET)
        {
            return Err(NfsError::FBig);
        }
        let act = self.act(caller)?;
        let fd = self.open_io(&act, caller, n, true)?;
        let mut done = 0usize;
        while done < data.len() {
            match rustix::io::pwrite(&fd, &data[done..], offset + done as u64) {
                Ok(0) => return Err(NfsError::NoSpc),
                Ok(k) => done += k,
                Err(Errno::INTR) => continue,
                Err(e) if done == 0 => return Err(e.into()),
                Err(_) => break,
            }
        }
        let committed = match stable {
            StableHow::Unstable => StableHow::Unstable,
            StableHow::DataSync => {
                rustix::fs::fdatasync(&fd)?;
                StableHow::DataSync
            }
            StableHow::FileSync => {
                rustix::fs::fsync(&fd)?;
                StableHow::FileSync
            }
        };
        drop(act);
        Ok(Written {
            count: done as u32,
            committed,
            verf: self.write_verf,
        })
    }

    /// COMMIT: everything written to the file reaches stable storage
    /// (`fsync`; the range is not narrowed).
    pub fn commit(&self, caller: &Caller, fh: &FileHandle) -> Outcome<[u8; 8]> {
        let n = match self.resolve(fh) {
            Ok(n) => n,
            Err(e) => {
                return Outcome {
                    result: Err(e),
                    wcc: Wcc::default(),
                }
            }
        };
        let before = Some(WccAttr::from(&self.attr_of(&n.st)));
        let result = (|| {
            if n.ftype() != FileType::Regular {
                return Err(NfsError::Inval);
            }
            let act = self.act(caller)?;
            // Any open descriptor syncs the inode; reading needs the least.
            let fd = self.open_io(&act, caller, &n, false).or_else(|_| {
                act.as_root(|| {
                    rustix::fs::open(
                        n.proc_path().as_str(),
                        OFlags::RDONLY | OFlags::CLOEXEC,
                        Mode::empty(),
                    )
                })
                .map_err(NfsError::from)
            })?;
            drop(act);
            rustix::fs::fsync(&fd)?;
            Ok(self.write_verf)
        })();
        Outcome {
            result,
            wcc: Wcc {
                before,
                after: self.post_attr(&n),
            },
        }
    }
}
