//! The callback program the client serves on its own connections (RFC
//! 8881 §20): CB_NULL and CB_COMPOUND registered in the `Services` of the
//! client's ONC RPC configuration, so that the server's callbacks — over
//! RPC-over-RDMA, reverse-direction calls on the client's connection (RFC
//! 8167) — are answered there. The answer comes from the sans-IO
//! [`BackChannel`]; what it asks the client to do goes to the client's
//! event task.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use rpcrdma_oncrpc::{CallInfo, ProcError, Services};
use rpcrdma_sync::lock;
use tokio::sync::mpsc;

use super::callback::{BackChannel, CbCompoundArgs, CbEvent};
use super::error::Status;

/// `NFS4_CALLBACK`, the program number the client offers by default.
pub const CB_PROGRAM: u32 = 0x4000_0000;

/// What the backchannel answered so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CbStats {
    /// CB_NULL calls answered (the server's probes).
    pub nulls: u64,
    /// CB_COMPOUND calls answered.
    pub compounds: u64,
    /// Of those, the ones answered with an error.
    pub refused: u64,
    /// CB_RECALL operations.
    pub recalls: u64,
    /// CB_RECALL_ANY operations.
    pub recall_anys: u64,
    /// CB_NOTIFY_LOCK operations.
    pub notify_locks: u64,
    /// CB_NOTIFY operations.
    pub notifies: u64,
    /// When the first CB_NULL was answered.
    pub first_null: Option<Instant>,
    /// The last error status answered.
    pub last_error: Option<Status>,
}

/// The backchannel's state, shared by the service and the client.
#[derive(Debug)]
pub(crate) struct CbShared {
    pub(crate) bc: Mutex<BackChannel>,
    pub(crate) stats: Mutex<CbStats>,
    tx: mpsc::UnboundedSender<(CbEvent, Instant)>,
}

/// The callback service of one client: build it first, put
/// [`Callbacks::services`] in the ONC RPC client's configuration
/// (`ClientConfig::services`), then hand it to
/// [`Nfs4Client::start`](super::Nfs4Client::start).
#[derive(Debug)]
pub struct Callbacks {
    pub(crate) shared: Arc<CbShared>,
    pub(crate) rx: mpsc::UnboundedReceiver<(CbEvent, Instant)>,
    pub(crate) program: u32,
    services: Arc<Services>,
}

impl Callbacks {
    /// The service for callback program `program` (version 1).
    pub fn new(program: u32) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(CbShared {
            bc: Mutex::new(BackChannel::new()),
            stats: Mutex::new(CbStats::default()),
            tx,
        });
        let mut s = Services::new();
        let v = s.program(program, 1);
        let sh = shared.clone();
        v.proc(0, move |_info: CallInfo, ()| {
            {
                let mut st = lock(&sh.stats);
                st.nulls += 1;
                st.first_null.get_or_insert_with(Instant::now);
            }
            async { Ok::<_, ProcError>(()) }
        });
        let sh = shared.clone();
        v.proc(1, move |info: CallInfo, args: CbCompoundArgs| {
            let call_len = call_header_len(&info) + args.len;
            let (res, events) = lock(&sh.bc).handle(&args, call_len);
            {
                let mut st = lock(&sh.stats);
                st.compounds += 1;
                if res.status != Status::Nfs4Ok {
                    st.refused += 1;
                    st.last_error = Some(res.status);
                }
                for e in &events {
                    match e {
                        CbEvent::Recall { .. } => st.recalls += 1,
                        CbEvent::RecallAny { .. } => st.recall_anys += 1,
                        CbEvent::NotifyLock { .. } => st.notify_locks += 1,
                        CbEvent::Notify { .. } => st.notifies += 1,
                        CbEvent::RecallSlot { .. } => {}
                    }
                }
            }
            if res.status != Status::Nfs4Ok {
                tracing::warn!(status = ?res.status, "a CB_COMPOUND was refused");
            }
            let now = Instant::now();
            for e in events {
                tracing::debug!(event = ?e, "callback");
                let _ = sh.tx.send((e, now));
            }
            async move { Ok::<_, ProcError>(res) }
        });
        Self {
            shared,
            rx,
            program,
            services: Arc::new(s),
        }
    }

    /// The programs to serve on the client's connections (put them in
    /// `ClientConfig::services` before connecting).
    pub fn services(&self) -> Arc<Services> {
        self.services.clone()
    }

    /// The callback program number.
    pub fn program(&self) -> u32 {
        self.program
    }
}

impl Default for Callbacks {
    fn default() -> Self {
        Self::new(CB_PROGRAM)
    }
}

/// The size of a call's RPC header: xid, direction, RPC version,
/// program, version, procedure, the credential and the verifier.
fn call_header_len(info: &CallInfo) -> usize {
    let pad = |n: usize| (n + 3) & !3;
    let cred = info.cred.to_opaque_auth();
    24 + 8 + pad(cred.body.len()) + 8 + pad(info.verf.body.len())
}
