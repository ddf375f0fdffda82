//! MOUNT v3 (RFC 1813 appendix I) on an [`Export`]: MNT walks a path
//! inside the export to its handle; DUMP, UMNT and UMNTALL keep a
//! bounded record of current mounts; EXPORT lists the one export.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rpcrdma_oncrpc::{CallInfo, Credential, ProcError};
use rpcrdma_sync::lock;

use crate::fs::{Export, NfsError, NfsResult};
use crate::proto::mount3 as m;

/// Most mounts remembered for DUMP (older ones are forgotten).
const MAX_MOUNT_RECORDS: usize = 1024;

/// MOUNT v3 on an export.
#[derive(Debug)]
pub struct MountService {
    export: Arc<Export>,
    /// (client host, path) of current mounts, for DUMP.
    mounts: Mutex<BTreeSet<(Bytes, Bytes)>>,
}

impl MountService {
    /// The service for `export`.
    pub fn new(export: Arc<Export>) -> Self {
        Self {
            export,
            mounts: Mutex::new(BTreeSet::new()),
        }
    }

    /// The path inside the export that a MNT path names: `/` and the
    /// export's own path are its root.
    fn inside<'a>(&self, path: &'a [u8]) -> Option<&'a [u8]> {
        let root = self.export.root_path().as_os_str().as_encoded_bytes();
        if let Some(rest) = path.strip_prefix(root) {
            if rest.is_empty() || rest.starts_with(b"/") {
                return Some(rest);
            }
        }
        path.starts_with(b"/").then_some(path)
    }

    fn host(info: &CallInfo) -> Bytes {
        match &info.cred {
            Credential::Sys(s) if !s.machine_name().is_empty() => {
                Bytes::copy_from_slice(s.machine_name().as_bytes())
            }
            _ => Bytes::from(
                info.connection
                    .peer_addr()
                    .map_or_else(|| info.connection.peer().to_owned(), |a| a.ip().to_string()),
            ),
        }
    }
}

fn mount_status(e: NfsError) -> m::Mountstat3 {
    match e {
        NfsError::Perm => m::Mountstat3::Mnt3errPerm,
        NfsError::NoEnt | NfsError::Stale => m::Mountstat3::Mnt3errNoent,
        NfsError::Acces => m::Mountstat3::Mnt3errAcces,
        NfsError::NotDir => m::Mountstat3::Mnt3errNotdir,
        NfsError::Inval => m::Mountstat3::Mnt3errInval,
        NfsError::NameTooLong => m::Mountstat3::Mnt3errNametoolong,
        NfsError::Io => m::Mountstat3::Mnt3errIo,
        _ => m::Mountstat3::Mnt3errServerfault,
    }
}

impl m::mount_v3::Server for MountService {
    async fn mnt(&self, info: CallInfo, path: m::Dirpath) -> Result<m::Mountres3, ProcError> {
        let Some(inside) = self.inside(&path).map(<[u8]>::to_vec) else {
            return Ok(m::Mountres3::Default(m::Mountstat3::Mnt3errNoent));
        };
        let export = self.export.clone();
        let r: NfsResult<_> = tokio::task::spawn_blocking(move || export.mount_path(&inside))
            .await
            .map_err(|_| ProcError::SystemErr)?;
        Ok(match r {
            Ok(fh) => {
                let mut mounts = lock(&self.mounts);
                if mounts.len() < MAX_MOUNT_RECORDS {
                    mounts.insert((Self::host(&info), path));
                }
                m::Mountres3::Mnt3Ok(m::Mountres3Ok {
                    fhandle: Bytes::copy_from_slice(fh.as_bytes()),
                    // AUTH_SYS, then AUTH_NONE (RFC 2623 §2.7).
                    auth_flavors: vec![1, 0],
                })
            }
            Err(e) => m::Mountres3::Default(mount_status(e)),
        })
    }

    async fn dump(&self, _info: CallInfo) -> Result<m::Mountlist, ProcError> {
        let mounts = lock(&self.mounts);
        let mut list: m::Mountlist = None;
        for (host, dir) in mounts.iter().rev() {
            list = Some(Box::new(m::Mountbody {
                ml_hostname: host.slice(..host.len().min(255)),
                ml_directory: dir.clone(),
                ml_next: list,
            }));
        }
        Ok(list)
    }

    async fn umnt(&self, info: CallInfo, path: m::Dirpath) -> Result<(), ProcError> {
        let host = Self::host(&info);
        lock(&self.mounts).remove(&(host, path));
        Ok(())
    }

    async fn umntall(&self, info: CallInfo) -> Result<(), ProcError> {
        let host = Self::host(&info);
        lock(&self.mounts).retain(|(h, _)| *h != host);
        Ok(())
    }

    async fn export(&self, _info: CallInfo) -> Result<m::Exports, ProcError> {
        Ok(Some(Box::new(m::Exportnode {
            ex_dir: Bytes::from_static(b"/"),
            ex_groups: None,
            ex_next: None,
        })))
    }
}
