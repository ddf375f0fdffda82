//! What the COMPOUNDs of one server share (`Core`: the exports, the
//! state, the pseudo file system, the callbacks' credentials) and the
//! reply a slot keeps (`Cached`): the service (`service.rs`) owns it, and
//! `compound.rs` and the operations read it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use rpcrdma_nfs3::exports::{ExportTable, Exports};
use rpcrdma_nfs3::fs::Time;
use rpcrdma_oncrpc::{AuthSysParams, Credential};
use rpcrdma_sync::lock;

use crate::proto::nfs4 as p;
use crate::pseudo::Pseudo;
use crate::state::{self, SessionId, State};

/// How the server authenticates its callbacks to a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CbAuth {
    /// AUTH_NONE.
    None,
    /// AUTH_SYS with the client's parameters.
    Sys {
        /// The machine name.
        machine: Bytes,
        /// The uid.
        uid: u32,
        /// The gid.
        gid: u32,
    },
}

/// A COMPOUND reply kept in a slot, with its encoded size.
#[derive(Debug, Clone)]
pub struct Cached {
    /// The reply.
    pub res: p::Compound4res,
    /// Its encoded size.
    pub len: usize,
}

impl state::CachedReply for Cached {
    fn cached_len(&self) -> usize {
        self.len
    }
}

/// The pseudo file system of a table, kept while that table is in force.
pub(crate) type PseudoCache = Option<(std::sync::Weak<ExportTable>, Option<Arc<Pseudo>>)>;

/// What the COMPOUNDs share: the exports and the state.
#[derive(Debug)]
pub struct Core {
    pub(crate) exports: Arc<Exports>,
    /// The pseudo file system of the table last seen.
    pub(crate) pseudo: Mutex<PseudoCache>,
    /// When the server started: the pseudo directories' times.
    pub(crate) born: Time,
    pub(crate) state: Mutex<State<Cached>>,
    pub(crate) lease: u32,
    pub(crate) cb_auth: Mutex<HashMap<SessionId, CbAuth>>,
    pub(crate) minors: Vec<u32>,
}

impl Core {
    /// The state, locked.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State<Cached>> {
        lock(&self.state)
    }

    /// The lease in seconds.
    pub(crate) fn lease_secs(&self) -> u32 {
        self.lease
    }

    pub(crate) fn set_cb_auth(&self, s: SessionId, a: CbAuth) {
        lock(&self.cb_auth).insert(s, a);
    }

    /// The pseudo file system of `table` (built once per table).
    pub(crate) fn pseudo_of(&self, table: &Arc<ExportTable>) -> Option<Arc<Pseudo>> {
        let mut cache = lock(&self.pseudo);
        if let Some((weak, ps)) = &*cache {
            if weak.upgrade().is_some_and(|t| Arc::ptr_eq(&t, table)) {
                return ps.clone();
            }
        }
        let ps = Pseudo::build(table).map(Arc::new);
        *cache = Some((Arc::downgrade(table), ps.clone()));
        ps
    }

    pub(crate) fn forget_cb_auth(&self, s: &SessionId) {
        lock(&self.cb_auth).remove(s);
    }

    pub(crate) fn credential(&self, s: &SessionId) -> Credential {
        match lock(&self.cb_auth).get(s) {
            Some(CbAuth::Sys { machine, uid, gid }) => {
                let name: String = String::from_utf8_lossy(machine).chars().take(255).collect();
                AuthSysParams::new(0, name, *uid, *gid, Vec::new())
                    .map(Credential::Sys)
                    .unwrap_or(Credential::None)
            }
            _ => Credential::None,
        }
    }
}
