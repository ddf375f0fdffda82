//! NFSv3 (RFC 1813) on an [`Export`]: each procedure decodes (generated
//! code), resolves its handles, runs its file-system work on tokio's
//! blocking pool as the caller, and answers with the NFS status and the
//! attributes RFC 1813 asks for on success and on failure. This file
//! holds the service, its admission of each call and where its work runs;
//! `nfs_procs.rs` the procedures.

use std::sync::Arc;

use rpcrdma_oncrpc::{CallInfo, Credential, ProcError};

use crate::exports::{Admitted, Exports};
use crate::fs::{Caller, Export, FileHandle, NfsError, NfsResult};

/// The most data a READ or WRITE moves and still runs on the task that
/// decoded it on a memory-backed export (`NfsService::run_brief`): a
/// 64 KiB copy takes a few microseconds; a 1 MiB one would hold the
/// task's thread for a few hundred.
pub(crate) const INLINE_IO_MAX: usize = 64 * 1024;
/// The largest READDIR(PLUS) reply we build, whatever the client offers.
pub(super) const MAX_READDIR_REPLY: usize = 1 << 20;

/// Asked before NFSv3 changes a file (WRITE, SETATTR, REMOVE, RENAME,
/// LINK): `false` holds the change (`NFS3ERR_JUKEBOX`, the client retries).
/// NFSv4 delegations use it: a file another client holds a delegation of
/// is not changed until the delegation is returned.
pub type ChangeGuard = dyn Fn(&FileHandle) -> bool + Send + Sync;

/// NFSv3 on the exports.
pub struct NfsService {
    pub(super) exports: Arc<Exports>,
    pub(super) guard: Option<Arc<ChangeGuard>>,
}

impl std::fmt::Debug for NfsService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NfsService")
            .field("exports", &self.exports)
            .field("guard", &self.guard.is_some())
            .finish()
    }
}

/// Whether the guard holds a change to the object `name` in `dir`.
pub(super) fn held_name(
    guard: &Option<Arc<ChangeGuard>>,
    x: &Export,
    who: &Caller,
    dir: &FileHandle,
    name: &[u8],
) -> bool {
    let Some(g) = guard else {
        return false;
    };
    match x.lookup(who, dir, name).0 {
        Ok((fh, _)) => !g(&fh),
        Err(_) => false,
    }
}

/// The client's address: the connection's peer (IPv4-mapped IPv6
/// addresses as IPv4).
pub(crate) fn peer_ip(info: &CallInfo) -> Option<std::net::IpAddr> {
    info.connection.peer_addr().map(|a| a.ip().to_canonical())
}

/// The identity a call acts as on an admitted export.
fn caller_of(adm: &Admitted, info: &CallInfo) -> Caller {
    match &info.cred {
        Credential::Sys(s) => adm
            .export
            .caller_with(&adm.access, Some((s.uid(), s.gid(), s.gids()))),
        _ => adm.export.caller_with(&adm.access, None),
    }
}

impl NfsService {
    /// The service for one export, every client allowed as its
    /// configuration says.
    pub fn new(export: Arc<Export>) -> Self {
        Self::on(Arc::new(Exports::single(export)), None)
    }

    /// The service for one export, asking `guard` before each change.
    pub fn with_guard(export: Arc<Export>, guard: Arc<ChangeGuard>) -> Self {
        Self::on(Arc::new(Exports::single(export)), Some(guard))
    }

    /// The service for the exports in force in `exports` (replaced on a
    /// reload), asking `guard` (if any) before each change.
    pub fn on(exports: Arc<Exports>, guard: Option<Arc<ChangeGuard>>) -> Self {
        Self { exports, guard }
    }

    /// Whether the guard holds a change to `fh`.
    pub(super) fn held(&self, fh: &FileHandle) -> bool {
        self.guard.as_ref().is_some_and(|g| !g(fh))
    }

    /// Admits a call on `fh` (before any file-system work).
    pub(super) fn admit(
        &self,
        info: &CallInfo,
        fh: &FileHandle,
        what: &str,
    ) -> NfsResult<Admitted> {
        self.exports.admit(fh, peer_ip(info), what)
    }

    /// Admits a call on two handles, which must be of one export
    /// (`NFS3ERR_XDEV` otherwise).
    pub(super) fn admit_two(
        &self,
        info: &CallInfo,
        a: &FileHandle,
        b: &FileHandle,
        what: &str,
    ) -> NfsResult<Admitted> {
        let first = self.admit(info, a, what)?;
        let second = self.admit(info, b, what)?;
        if !Arc::ptr_eq(&first.export, &second.export) {
            return Err(NfsError::Xdev);
        }
        // The stricter of the two (they are one export: one access).
        Ok(first)
    }

    /// Runs brief file-system work (metadata, or data of at most
    /// [`INLINE_IO_MAX`] octets) as the caller: on this task when the
    /// export is memory-backed ([`Export::memory_backed`]: nothing there
    /// waits for a device, and a hand-off to the blocking pool and back
    /// costs more than the work), on the blocking pool otherwise.
    pub(super) async fn run_brief<T: Send + 'static>(
        &self,
        info: &CallInfo,
        adm: Admitted,
        f: impl FnOnce(&Export, &Caller) -> T + Send + 'static,
    ) -> Result<T, ProcError> {
        if adm.export.runs_brief_work_inline() {
            let caller = caller_of(&adm, info);
            return Ok(f(&adm.export, &caller));
        }
        self.run(info, adm, f).await
    }

    /// [`Self::run_brief`] for data of `len` octets, else [`Self::run`].
    pub(super) async fn run_io<T: Send + 'static>(
        &self,
        info: &CallInfo,
        adm: Admitted,
        len: u32,
        f: impl FnOnce(&Export, &Caller) -> T + Send + 'static,
    ) -> Result<T, ProcError> {
        if len as usize <= INLINE_IO_MAX {
            self.run_brief(info, adm, f).await
        } else {
            self.run(info, adm, f).await
        }
    }

    /// Runs file-system work on the blocking pool, as the caller.
    pub(super) async fn run<T: Send + 'static>(
        &self,
        info: &CallInfo,
        adm: Admitted,
        f: impl FnOnce(&Export, &Caller) -> T + Send + 'static,
    ) -> Result<T, ProcError> {
        let caller = caller_of(&adm, info);
        tokio::task::spawn_blocking(move || f(&adm.export, &caller))
            .await
            .map_err(|_| ProcError::SystemErr)
    }
}
