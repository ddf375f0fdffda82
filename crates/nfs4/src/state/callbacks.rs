//! What the state layer asks the service to send on a client's
//! backchannel: delegations to recall (CB_RECALL, `delegs.rs`) and lock
//! owners to tell that a lock may be free (CB_NOTIFY_LOCK, `lockops.rs`).
//! [`super::State`] queues them; the service takes and sends them.

use rpcrdma_nfs3::fs::FileHandle;

use super::ids::{ClientId, StateId};
use super::locks::LockOwner;

/// A delegation to recall: CB_RECALL of `stateid` on `file` to `client`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recall {
    /// The holder.
    pub client: ClientId,
    /// The delegation.
    pub stateid: StateId,
    /// Its file.
    pub file: FileHandle,
}

/// A lock owner to tell (CB_NOTIFY_LOCK) that a lock it was denied may be
/// free now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyLock {
    /// The owner that waited.
    pub owner: LockOwner,
    /// The file.
    pub file: FileHandle,
}
