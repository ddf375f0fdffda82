//! MOUNT v3 (RFC 1813 appendix I) on the exports: MNT walks a path
//! inside the export that holds it to its handle, for a client the
//! exports allow (`MNT3ERR_ACCES` and a warning otherwise, before any
//! file is looked at); DUMP, UMNT and UMNTALL keep a bounded record of
//! current mounts; EXPORT lists the exports and their clients.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rpcrdma_oncrpc::{CallInfo, Credential, ProcError};
use rpcrdma_sync::lock;

use super::nfs::peer_ip;
use crate::exports::{Exports, MountTarget};
use crate::fs::{Export, NfsError, NfsResult};
use crate::proto::mount3 as m;

/// Most mounts remembered for DUMP (older ones are forgotten).
const MAX_MOUNT_RECORDS: usize = 1024;

/// MOUNT v3 on the exports.
#[derive(Debug)]
pub struct MountService {
    exports: Arc<Exports>,
    /// (client host, path) of current mounts, for DUMP.
    mounts: Mutex<BTreeSet<(Bytes, Bytes)>>,
}

impl MountService {
    /// The service for one export, every client allowed as its
    /// configuration says.
    pub fn new(export: Arc<Export>) -> Self {
        Self::on(Arc::new(Exports::single(export)))
    }

    /// The service for the exports in force in `exports`.
    pub fn on(exports: Arc<Exports>) -> Self {
        Self {
            exports,
            mounts: Mutex::new(BTreeSet::new()),
        }
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
        let ip = peer_ip(&info);
        let table = self.exports.table();
        let (export, inside) = match table.mount(&path, ip) {
            MountTarget::Allowed { entry, inside } => (entry.export().clone(), inside),
            MountTarget::Refused(entry) => {
                self.exports.refused(ip, entry, "MOUNT");
                return Ok(m::Mountres3::Default(m::Mountstat3::Mnt3errAcces));
            }
            MountTarget::NotExported => {
                tracing::info!(
                    client = %ip.map_or_else(|| "(unknown address)".to_owned(), |a| a.to_string()),
                    path = %String::from_utf8_lossy(&path),
                    "MOUNT of a path no export holds: refused"
                );
                return Ok(m::Mountres3::Default(m::Mountstat3::Mnt3errAcces));
            }
        };
        drop(table);
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
        let table = self.exports.table();
        let mut list: m::Exports = None;
        for e in table.entries().iter().rev() {
            // Every client: no groups (as for one directory served to
            // all); otherwise the patterns, as showmount prints them.
            let mut groups: m::Groups = None;
            if !table.is_single() {
                let clients: Vec<String> = e.clients().map(ToString::to_string).collect();
                for c in clients.iter().rev() {
                    groups = Some(Box::new(m::Groupnode {
                        gr_name: Bytes::from(c.clone()),
                        gr_next: groups,
                    }));
                }
            }
            list = Some(Box::new(m::Exportnode {
                ex_dir: Bytes::copy_from_slice(e.path()),
                ex_groups: groups,
                ex_next: list,
            }));
        }
        Ok(list)
    }
}
