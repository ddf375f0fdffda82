//! The NFSv4 status codes the state layer answers with (`nfsstat4`, RFC
//! 8881 §15.1), as a Rust enum.

/// An NFSv4 error of the state layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// `NFS4ERR_INVAL` (22).
    #[error("NFS4ERR_INVAL")]
    Inval,
    /// `NFS4ERR_DELAY` (10008): try again later (a recall is under way).
    #[error("NFS4ERR_DELAY")]
    Delay,
    /// `NFS4ERR_DENIED` (10010): a conflicting byte-range lock.
    #[error("NFS4ERR_DENIED")]
    Denied,
    /// `NFS4ERR_EXPIRED` (10011): the lease of that state expired.
    #[error("NFS4ERR_EXPIRED")]
    Expired,
    /// `NFS4ERR_LOCKED` (10012): I/O conflicts with a byte-range lock.
    #[error("NFS4ERR_LOCKED")]
    Locked,
    /// `NFS4ERR_GRACE` (10013): the server is in its grace period.
    #[error("NFS4ERR_GRACE")]
    Grace,
    /// `NFS4ERR_SHARE_DENIED` (10015): an open's share reservation
    /// conflicts.
    #[error("NFS4ERR_SHARE_DENIED")]
    ShareDenied,
    /// `NFS4ERR_CLID_INUSE` (10017).
    #[error("NFS4ERR_CLID_INUSE")]
    ClidInUse,
    /// `NFS4ERR_RESOURCE`-like refusal: too much state (`NFS4ERR_RESOURCE`
    /// is 4.0 only; 4.1 answers `NFS4ERR_DELAY` or `NFS4ERR_SERVERFAULT`):
    /// mapped to `NFS4ERR_SERVERFAULT` (10006).
    #[error("NFS4ERR_SERVERFAULT (state limit reached)")]
    TooMuchState,
    /// `NFS4ERR_STALE_CLIENTID` (10022).
    #[error("NFS4ERR_STALE_CLIENTID")]
    StaleClientId,
    /// `NFS4ERR_STALE_STATEID` (10023).
    #[error("NFS4ERR_STALE_STATEID")]
    StaleStateId,
    /// `NFS4ERR_OLD_STATEID` (10024).
    #[error("NFS4ERR_OLD_STATEID")]
    OldStateId,
    /// `NFS4ERR_BAD_STATEID` (10025).
    #[error("NFS4ERR_BAD_STATEID")]
    BadStateId,
    /// `NFS4ERR_BAD_SEQID` (10026).
    #[error("NFS4ERR_BAD_SEQID")]
    BadSeqId,
    /// `NFS4ERR_NOT_SAME` (10027).
    #[error("NFS4ERR_NOT_SAME")]
    NotSame,
    /// `NFS4ERR_NO_GRACE` (10033).
    #[error("NFS4ERR_NO_GRACE")]
    NoGrace,
    /// `NFS4ERR_RECLAIM_BAD` (10034).
    #[error("NFS4ERR_RECLAIM_BAD")]
    ReclaimBad,
    /// `NFS4ERR_LOCKS_HELD` (10037).
    #[error("NFS4ERR_LOCKS_HELD")]
    LocksHeld,
    /// `NFS4ERR_OPENMODE` (10038): I/O the open does not allow.
    #[error("NFS4ERR_OPENMODE")]
    OpenMode,
    /// `NFS4ERR_NOENT` (2): no such client record (EXCHANGE_ID update).
    #[error("NFS4ERR_NOENT")]
    NoEnt,
    /// `NFS4ERR_PERM` (1).
    #[error("NFS4ERR_PERM")]
    Perm,
    /// `NFS4ERR_BADSESSION` (10052).
    #[error("NFS4ERR_BADSESSION")]
    BadSession,
    /// `NFS4ERR_BADSLOT` (10053).
    #[error("NFS4ERR_BADSLOT")]
    BadSlot,
    /// `NFS4ERR_COMPLETE_ALREADY` (10054).
    #[error("NFS4ERR_COMPLETE_ALREADY")]
    CompleteAlready,
    /// `NFS4ERR_CONN_NOT_BOUND_TO_SESSION` (10055).
    #[error("NFS4ERR_CONN_NOT_BOUND_TO_SESSION")]
    ConnNotBound,
    /// `NFS4ERR_SEQ_MISORDERED` (10063).
    #[error("NFS4ERR_SEQ_MISORDERED")]
    SeqMisordered,
    /// `NFS4ERR_RETRY_UNCACHED_REP` (10068).
    #[error("NFS4ERR_RETRY_UNCACHED_REP")]
    RetryUncachedRep,
    /// `NFS4ERR_CLIENTID_BUSY` (10074): the client still has sessions.
    #[error("NFS4ERR_CLIENTID_BUSY")]
    ClientIdBusy,
    /// `NFS4ERR_SEQ_FALSE_RETRY` (10076).
    #[error("NFS4ERR_SEQ_FALSE_RETRY")]
    SeqFalseRetry,
    /// `NFS4ERR_BAD_HIGH_SLOT` (10077).
    #[error("NFS4ERR_BAD_HIGH_SLOT")]
    BadHighSlot,
    /// `NFS4ERR_DEADSESSION` (10078).
    #[error("NFS4ERR_DEADSESSION")]
    DeadSession,
    /// `NFS4ERR_DELEG_REVOKED` (10087).
    #[error("NFS4ERR_DELEG_REVOKED")]
    DelegRevoked,
    /// `NFS4ERR_ADMIN_REVOKED` (10047).
    #[error("NFS4ERR_ADMIN_REVOKED")]
    AdminRevoked,
    /// `NFS4ERR_LOCK_RANGE` (10028).
    #[error("NFS4ERR_LOCK_RANGE")]
    LockRange,
    /// `NFS4ERR_BADOWNER` (10039).
    #[error("NFS4ERR_BADOWNER")]
    BadOwner,
}

impl StateError {
    /// The `nfsstat4` value.
    ///
    /// ```
    /// use rpcrdma_nfs4::state::StateError;
    /// assert_eq!(StateError::BadSession.code(), 10052);
    /// assert_eq!(StateError::ShareDenied.code(), 10015);
    /// ```
    pub fn code(self) -> u32 {
        match self {
            Self::Perm => 1,
            Self::NoEnt => 2,
            Self::Inval => 22,
            Self::TooMuchState => 10006,
            Self::Delay => 10008,
            Self::Denied => 10010,
            Self::Expired => 10011,
            Self::Locked => 10012,
            Self::Grace => 10013,
            Self::ShareDenied => 10015,
            Self::ClidInUse => 10017,
            Self::StaleClientId => 10022,
            Self::StaleStateId => 10023,
            Self::OldStateId => 10024,
            Self::BadStateId => 10025,
            Self::BadSeqId => 10026,
            Self::NotSame => 10027,
            Self::LockRange => 10028,
            Self::NoGrace => 10033,
            Self::ReclaimBad => 10034,
            Self::LocksHeld => 10037,
            Self::OpenMode => 10038,
            Self::BadOwner => 10039,
            Self::AdminRevoked => 10047,
            Self::BadSession => 10052,
            Self::BadSlot => 10053,
            Self::CompleteAlready => 10054,
            Self::ConnNotBound => 10055,
            Self::SeqMisordered => 10063,
            Self::RetryUncachedRep => 10068,
            Self::ClientIdBusy => 10074,
            Self::SeqFalseRetry => 10076,
            Self::BadHighSlot => 10077,
            Self::DeadSession => 10078,
            Self::DelegRevoked => 10087,
        }
    }
}

/// A state layer result.
pub type StateResult<T> = Result<T, StateError>;
