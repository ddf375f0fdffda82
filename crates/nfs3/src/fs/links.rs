//! Changing the names of existing objects: REMOVE, RMDIR, RENAME and
//! LINK, keeping the remembered names in step.

use rpcrdma_sync::lock;
use rustix::fs::AtFlags;

use super::nodes::statx_at;
use super::{
    check_name, Attr, Caller, Export, FileHandle, FileType, NfsError, NfsResult, Outcome, Wcc,
    WccAttr,
};

impl Export {
    /// REMOVE (not a directory).
    pub fn remove(&self, caller: &Caller, dir: &FileHandle, name: &[u8]) -> Outcome<()> {
        self.in_dir(dir, |d| {
            check_name(name, false)?;
            self.writable(caller)?;
            let _act = self.act(caller)?;
            rustix::fs::unlinkat(&*d.fd, name, AtFlags::empty())?;
            lock(&self.nodes).forget_name(d.ino(), name);
            Ok(())
        })
    }

    /// RMDIR.
    pub fn rmdir(&self, caller: &Caller, dir: &FileHandle, name: &[u8]) -> Outcome<()> {
        self.in_dir(dir, |d| {
            if name == b"." {
                return Err(NfsError::Inval);
            }
            if name == b".." {
                return Err(NfsError::NotEmpty);
            }
            check_name(name, false)?;
            self.writable(caller)?;
            let victim = statx_at(&*d.fd, name).ok();
            let _act = self.act(caller)?;
            rustix::fs::unlinkat(&*d.fd, name, AtFlags::REMOVEDIR)?;
            let mut nodes = lock(&self.nodes);
            nodes.forget_name(d.ino(), name);
            if let Some(st) = victim {
                nodes.forget_dir(st.stx_ino);
            }
            Ok(())
        })
    }

    /// RENAME: (result, wcc of the source directory, wcc of the target).
    pub fn rename(
        &self,
        caller: &Caller,
        from_dir: &FileHandle,
        from: &[u8],
        to_dir: &FileHandle,
        to: &[u8],
    ) -> (NfsResult<()>, Wcc, Wcc) {
        let (fd_, td) = match (self.dir_node(from_dir), self.dir_node(to_dir)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => return (Err(e), Wcc::default(), Wcc::default()),
        };
        let fb = Some(WccAttr::from(&self.attr_of(&fd_.st)));
        let tb = Some(WccAttr::from(&self.attr_of(&td.st)));
        let result = (|| {
            check_name(from, false)?;
            check_name(to, false)?;
            self.writable(caller)?;
            let moved = statx_at(&*fd_.fd, from).ok();
            let replaced = statx_at(&*td.fd, to).ok();
            let _act = self.act(caller)?;
            rustix::fs::renameat(&*fd_.fd, from, &*td.fd, to)?;
            let mut nodes = lock(&self.nodes);
            nodes.forget_name(fd_.ino(), from);
            nodes.forget_name(td.ino(), to);
            if let Some(r) = replaced.filter(|r| moved.is_none_or(|m| m.stx_ino != r.stx_ino)) {
                nodes.forget_dir(r.stx_ino);
            }
            if let Some(m) = moved {
                nodes.learn(m.stx_ino, td.ino(), to);
            }
            Ok(())
        })();
        (
            result,
            Wcc {
                before: fb,
                after: self.post_attr(&fd_),
            },
            Wcc {
                before: tb,
                after: self.post_attr(&td),
            },
        )
    }

    /// LINK: (result, the file's attributes, wcc of the directory).
    pub fn link(
        &self,
        caller: &Caller,
        file: &FileHandle,
        dir: &FileHandle,
        name: &[u8],
    ) -> (NfsResult<()>, Option<Attr>, Wcc) {
        let f = match self.resolve(file) {
            Ok(f) => f,
            Err(e) => return (Err(e), None, Wcc::default()),
        };
        let out = self.in_dir(dir, |d| {
            check_name(name, false)?;
            self.writable(caller)?;
            if f.ftype() == FileType::Directory {
                return Err(NfsError::IsDir);
            }
            let _act = self.act(caller)?;
            rustix::fs::linkat(
                rustix::fs::CWD,
                f.proc_path().as_str(),
                &*d.fd,
                name,
                AtFlags::SYMLINK_FOLLOW,
            )?;
            Ok(())
        });
        if out.result.is_ok() {
            if let Ok(d) = self.dir_node(dir) {
                lock(&self.nodes).learn(f.ino(), d.ino(), name);
            }
        }
        (out.result, self.post_attr(&f), out.wcc)
    }
}
