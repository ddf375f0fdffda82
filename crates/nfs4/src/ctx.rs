//! The state of one COMPOUND as it runs ([`Ctx`]: the current and saved
//! file handles and stateids, the session, the export the handle is on)
//! and the conversions every operation uses: our stateids on the wire,
//! export and state errors as NFSv4 statuses. `compound.rs` runs the
//! COMPOUND; the operations (`ops/`) read and change the `Ctx`.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use rpcrdma_nfs3::exports::{Entry, ExportTable};
use rpcrdma_nfs3::fs::{Caller, ClientAccess, Export, FileHandle, NfsError, Squash};

use crate::proto::nfs4 as p;
use crate::pseudo::Pseudo;
use crate::shared::Core;
use crate::state::{ChannelAttrs, ClientId, ConnId, SessionId, Special, StateError, StateId};

/// The state of one COMPOUND as it runs.
#[derive(Debug)]
pub(crate) struct Ctx<'a> {
    pub(crate) core: &'a Core,
    /// The exports in force when the COMPOUND began.
    pub(crate) table: Arc<ExportTable>,
    /// Their pseudo file system (`None`: one export is the root).
    pub(crate) pseudo: Option<Arc<Pseudo>>,
    /// The client's address (the connection's peer).
    pub(crate) peer: Option<IpAddr>,
    /// The call's AUTH_SYS ids (`None`: AUTH_NONE or another flavor).
    pub(crate) cred: Option<(u32, u32, Vec<u32>)>,
    /// The export of the current handle (until a handle is set: the
    /// first export, with `caller` anonymous and read-only; no operation
    /// uses them without a current handle).
    pub(crate) export: Arc<Export>,
    /// Who the call acts as on `export`, by the client's options there.
    pub(crate) caller: Caller,
    /// `export` and `caller` of the saved handle.
    pub(crate) saved: Option<(Arc<Export>, Caller)>,
    /// The AUTH_SYS uid of the call (`u32::MAX` for other flavors).
    pub(crate) principal: u32,
    pub(crate) conn: ConnId,
    pub(crate) now: Instant,
    /// The session, slot and whether to cache, after SEQUENCE.
    pub(crate) session: Option<(SessionId, u32, bool)>,
    pub(crate) client: Option<ClientId>,
    pub(crate) fore: ChannelAttrs,
    pub(crate) cfh: Option<FileHandle>,
    pub(crate) sfh: Option<FileHandle>,
    pub(crate) cstateid: Option<StateId>,
    pub(crate) sstateid: Option<StateId>,
}

/// What an operation answers: its result and its status.
pub(crate) type Done = (p::NfsResop4, p::Nfsstat4);

impl Ctx<'_> {
    /// The current file handle, or `NFS4ERR_NOFILEHANDLE`.
    pub(crate) fn fh(&self) -> Result<FileHandle, p::Nfsstat4> {
        self.cfh.clone().ok_or(p::Nfsstat4::Nfs4errNofilehandle)
    }

    /// The client of the session, or `NFS4ERR_OP_NOT_IN_SESSION`.
    pub(crate) fn client(&self) -> Result<ClientId, p::Nfsstat4> {
        self.client.ok_or(p::Nfsstat4::Nfs4errOpNotInSession)
    }

    /// A stateid from the wire, the current stateid substituted (RFC
    /// 8881 §16.2.3.1.2).
    pub(crate) fn stateid(&self, s: &p::Stateid4) -> Result<StateId, p::Nfsstat4> {
        let id = StateId {
            seqid: s.seqid,
            other: s.other,
        };
        if id.special() == Special::Current {
            return self.cstateid.ok_or(p::Nfsstat4::Nfs4errBadStateid);
        }
        Ok(id)
    }

    /// Sets the current stateid (operations that return one).
    pub(crate) fn set_stateid(&mut self, s: StateId) {
        self.cstateid = Some(s);
    }

    /// Whether the export refuses changes to this client (`ro`, or the
    /// export read-only): `NFS4ERR_ROFS`.
    pub(crate) fn writable(&self) -> Result<(), p::Nfsstat4> {
        if self.caller.read_only || self.export.config().read_only {
            Err(p::Nfsstat4::Nfs4errRofs)
        } else {
            Ok(())
        }
    }

    /// The pseudo directory a handle names, if it is one.
    pub(crate) fn pseudo_dir(&self, fh: &FileHandle) -> Option<usize> {
        self.pseudo.as_ref().and_then(|ps| ps.find(fh))
    }

    /// Makes `entry` the export of the current handle, if it admits the
    /// client (`NFS4ERR_ACCESS` and a log line otherwise).
    pub(crate) fn enter_entry(&mut self, entry: &Entry, what: &str) -> Result<(), p::Nfsstat4> {
        let Some(access) = entry.access(self.peer) else {
            self.core.exports.refused(self.peer, entry, what);
            return Err(p::Nfsstat4::Nfs4errAccess);
        };
        let export = entry.export().clone();
        self.caller = export.caller_with(
            &access,
            self.cred.as_ref().map(|(u, g, gs)| (*u, *g, gs.as_slice())),
        );
        self.export = export;
        Ok(())
    }

    /// Makes the export of a handle of ours the current one, if it
    /// admits the client: `NFS4ERR_BADHANDLE` if the handle is not ours,
    /// `NFS4ERR_STALE` if its export is not served any more,
    /// `NFS4ERR_ACCESS` if the client may not use it.
    pub(crate) fn enter(&mut self, fh: &FileHandle, what: &str) -> Result<(), p::Nfsstat4> {
        let table = self.table.clone();
        let entry = table.by_handle(fh).map_err(from_fs)?;
        self.enter_entry(entry, what)
    }

    /// The placeholder identity before any handle: anonymous, read-only.
    pub(crate) fn nobody(export: &Export) -> Caller {
        let anon = export.default_access().anon;
        export.caller_with(
            &ClientAccess {
                read_only: true,
                squash: Squash::All,
                anon,
            },
            None,
        )
    }
}

/// The wire stateid of ours.
pub(crate) fn wire(s: StateId) -> p::Stateid4 {
    p::Stateid4 {
        seqid: s.seqid,
        other: s.other,
    }
}

/// An NFSv3 export error as an NFSv4 status (the numbers are shared).
pub(crate) fn from_fs(e: NfsError) -> p::Nfsstat4 {
    match e {
        NfsError::NotSync => p::Nfsstat4::Nfs4errInval,
        NfsError::Acces => p::Nfsstat4::Nfs4errAccess,
        other => {
            p::Nfsstat4::from_value(other.code() as i32).unwrap_or(p::Nfsstat4::Nfs4errServerfault)
        }
    }
}

/// A state error as an NFSv4 status.
pub(crate) fn from_state(e: StateError) -> p::Nfsstat4 {
    p::Nfsstat4::from_value(e.code() as i32).unwrap_or(p::Nfsstat4::Nfs4errServerfault)
}
