//! READDIR and READDIRPLUS: cookies are the file system's own directory
//! offsets, the cookie verifier a keyed hash of the directory's identity.

use bytes::Bytes;
use rustix::fs::{Mode, OFlags};

use super::nodes::statx_at;
use super::{Attr, Caller, DirEntry, Export, FileHandle, NfsError, NfsResult, ReadDir};

impl Export {
    /// The cookie verifier of a directory.
    fn cookie_verf(&self, st: &rustix::fs::Statx) -> [u8; 8] {
        let id = Self::id_of(st);
        let mut b = [0u8; 12];
        b[..8].copy_from_slice(&id.ino.to_be_bytes());
        b[8..].copy_from_slice(&id.gen.to_be_bytes());
        self.keys.tag64(&b).to_be_bytes()
    }

    /// READDIR (`plus` false) or READDIRPLUS (`plus` true) from `cookie`.
    /// `fits` is asked about each entry in turn and says whether it still
    /// fits the reply; the listing stops at the first that does not.
    pub fn readdir(
        &self,
        caller: &Caller,
        dir: &FileHandle,
        cookie: u64,
        verf: [u8; 8],
        plus: bool,
        mut fits: impl FnMut(&DirEntry) -> bool,
    ) -> (NfsResult<ReadDir>, Option<Attr>) {
        let d = match self.dir_node(dir) {
            Ok(d) => d,
            Err(e) => return (Err(e), None),
        };
        let ours = self.cookie_verf(&d.st);
        let r = (|| {
            if cookie != 0 && verf != [0; 8] && verf != ours {
                return Err(NfsError::BadCookie);
            }
            if cookie > i64::MAX as u64 {
                return Err(NfsError::BadCookie);
            }
            let act = self.act(caller)?;
            let rd = rustix::fs::openat(
                &*d.fd,
                c".",
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            drop(act);
            let mut it = rustix::fs::Dir::new(rd)?;
            if cookie != 0 {
                it.seek(cookie as i64).map_err(|_| NfsError::BadCookie)?;
            }
            let is_root = d.ino() == self.root_id.ino;
            let mut entries = Vec::new();
            let eof = loop {
                let Some(e) = it.read() else { break true };
                let e = e?;
                let name = e.file_name().to_bytes();
                let mut entry = DirEntry {
                    fileid: e.ino(),
                    name: Bytes::copy_from_slice(name),
                    cookie: e.offset() as u64,
                    attr: None,
                    handle: None,
                };
                if name == b".." && is_root {
                    entry.fileid = self.root_id.ino;
                }
                if plus && name != b".." {
                    let st = if name == b"." {
                        Some(d.st)
                    } else {
                        statx_at(&*d.fd, name).ok()
                    };
                    if let Some(st) = st.filter(|s| self.same_dev(s)) {
                        entry.attr = Some(self.attr_of(&st));
                        entry.handle = Some(if name == b"." {
                            self.keys.make(Self::id_of(&st))
                        } else {
                            self.learn(&d, name, &st)
                        });
                    }
                }
                if !fits(&entry) {
                    break false;
                }
                entries.push(entry);
            };
            if entries.is_empty() && !eof {
                return Err(NfsError::TooSmall);
            }
            Ok(ReadDir {
                entries,
                eof,
                verf: ours,
                dir_attr: None,
            })
        })();
        let post = self.post_attr(&d);
        let r = r.map(|mut rd| {
            rd.dir_attr = post;
            rd
        });
        (r, post)
    }
}
