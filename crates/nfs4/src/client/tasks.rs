//! The client's life (an `impl` of the driver's `Inner`): start (the
//! session established, then three tasks: the callbacks' events, lease
//! renewal, and the connection watcher that binds each new connection to
//! the back channel), the delegations granted and returned, and close.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rpcrdma_oncrpc::RpcError;
use rpcrdma_sync::lock;
use tokio::sync::mpsc;

use super::attrs::{self, Attrs};
use super::cache::FileShared;
use super::callback::CbEvent;
use super::driver::{ClientEvent, Inner, NORMAL};
use super::error::{Chain, Nfs4Error, Result, Status, Violation};
use super::state::DelegRecord;
use crate::proto::nfs4 as p;
use p::NfsArgop4 as A;
use p::NfsResop4 as R;

impl Inner {
    /// Returns a recalled delegation: the file's cached writes flushed
    /// first, then DELEGRETURN.
    pub(crate) async fn return_delegation(self: Arc<Self>, d: DelegRecord, recalled: Instant) {
        let files: Vec<Arc<FileShared>> = {
            let mut all = lock(&self.files);
            all.retain(|w| w.strong_count() > 0);
            all.iter()
                .filter_map(Weak::upgrade)
                .filter(|f| f.fh == d.fh)
                .collect()
        };
        for f in files {
            if let Err(e) = f.flush(&self).await {
                tracing::warn!(error = %Chain(&e), "flushing cached writes before DELEGRETURN failed");
            }
        }
        let (fh, sid) = (d.fh.clone(), d.stateid);
        let r = self
            .run("DELEGRETURN", NORMAL, || {
                Ok(vec![
                    A::OpPutfh(p::Putfh4args { object: fh.clone() }),
                    A::OpDelegreturn(p::Delegreturn4args { deleg_stateid: sid }),
                ])
            })
            .await;
        let status = match &r {
            Ok(_) => Status::Nfs4Ok,
            Err(e) => e.status().unwrap_or(Status::Nfs4errServerfault),
        };
        lock(&self.state).returned(&d.stateid);
        let took = recalled.elapsed();
        if status == Status::Nfs4Ok {
            tracing::info!(took_ms = took.as_millis() as u64, "delegation returned");
        } else {
            tracing::warn!(status = ?status, "DELEGRETURN failed; the delegation is forgotten");
        }
        self.emit(ClientEvent::Returned {
            fh: d.fh,
            took,
            status,
        });
    }

    /// OPEN granted `deleg` on `fh`.
    pub(crate) fn delegated(&self, fh: &Bytes, deleg: &p::OpenDelegation4) {
        let (stateid, write) = match deleg {
            p::OpenDelegation4::OpenDelegateRead(r) => (r.stateid, false),
            p::OpenDelegation4::OpenDelegateWrite(w) => (w.stateid, true),
            _ => return,
        };
        let now = Instant::now();
        let rec = DelegRecord {
            stateid,
            fh: fh.clone(),
            write,
            granted: now,
            recalled: None,
        };
        let early = lock(&self.state).delegated(rec.clone(), now);
        self.emit(ClientEvent::Delegated {
            fh: fh.clone(),
            write,
        });
        if early {
            tracing::info!("a delegation recalled before OPEN's reply arrived: returning it");
            if let Some(me) = self.me() {
                tokio::spawn(me.return_delegation(rec, now));
            }
        }
    }

    /// The callbacks' events, in order.
    pub(super) async fn events_task(
        weak: Weak<Self>,
        mut rx: mpsc::UnboundedReceiver<(CbEvent, Instant)>,
    ) {
        while let Some((ev, at)) = rx.recv().await {
            let Some(me) = weak.upgrade() else { return };
            match ev {
                CbEvent::Recall { stateid, fh, .. } => {
                    me.emit(ClientEvent::Recalled { fh: fh.clone() });
                    let d = lock(&me.state).recalled(&stateid, at);
                    match d {
                        Some(d) => {
                            tokio::spawn(me.clone().return_delegation(d, at));
                        }
                        None => {
                            tracing::info!("CB_RECALL of a delegation not known (yet): remembered")
                        }
                    }
                }
                CbEvent::RecallAny { keep, .. } => {
                    let ds = lock(&me.state).recall_any(keep, at);
                    for d in ds {
                        me.emit(ClientEvent::Recalled { fh: d.fh.clone() });
                        tokio::spawn(me.clone().return_delegation(d, at));
                    }
                }
                CbEvent::NotifyLock { .. } => me.lock_wake.notify_waiters(),
                CbEvent::Notify { .. } => {}
                CbEvent::RecallSlot { target } => {
                    lock(&me.sess).slots.recall(target);
                }
            }
        }
    }

    /// Keeps the lease: a SEQUENCE when the client has been idle for a
    /// third of it.
    pub(super) async fn renew_task(weak: Weak<Self>) {
        loop {
            let at = match weak.upgrade() {
                Some(me) if !me.is_closed() => lock(&me.sess).lease.renew_at(),
                _ => return,
            };
            tokio::time::sleep_until(at.into()).await;
            let Some(me) = weak.upgrade() else { return };
            if me.is_closed() {
                return;
            }
            if Instant::now() < lock(&me.sess).lease.renew_at() {
                continue;
            }
            if let Err(e) = me.run("lease renewal", NORMAL, || Ok(Vec::new())).await {
                tracing::warn!(error = %Chain(&e), "lease renewal failed");
                drop(me);
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }

    /// Binds each new connection to the session's back channel: the
    /// server cannot call back on a connection it has not been told of
    /// (RFC 8881 §2.10.3.1; SEQUENCE binds a connection to the fore
    /// channel only, §2.10.5.1).
    pub(super) async fn watch_task(weak: Weak<Self>) {
        loop {
            let conn = match weak.upgrade() {
                Some(me) if !me.is_closed() => {
                    let conn = me.nfs.rpc().connection().filter(|c| c.is_alive());
                    let bound = lock(&me.sess).bound_conn;
                    match &conn {
                        Some(c) if bound != Some(c.id()) && me.cfg.backchannel => {
                            tracing::info!(
                                conn = c.id(),
                                "a new connection: binding it to the session"
                            );
                            if let Err(e) = me.bind_conn().await {
                                tracing::warn!(error = %Chain(&e), "BIND_CONN_TO_SESSION failed");
                            }
                        }
                        None if me.cfg.backchannel => {
                            // Connect again: the server may need to call.
                            if let Err(e) = me.bind_conn().await {
                                tracing::debug!(error = %Chain(&e), "reconnecting for the backchannel failed");
                            }
                        }
                        _ => {}
                    }
                    conn
                }
                _ => return,
            };
            match conn {
                Some(c) => c.closed().await,
                None => tokio::time::sleep(Duration::from_millis(500)).await,
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Starts the client's session and its tasks.
    pub(crate) async fn start(
        self: &Arc<Self>,
        rx: mpsc::UnboundedReceiver<(CbEvent, Instant)>,
    ) -> Result<()> {
        match self.nfs.null().await {
            Ok(()) => {}
            Err(e @ (RpcError::ProgMismatch { .. } | RpcError::ProgUnavail { .. })) => {
                return Err(Nfs4Error::Unsupported {
                    minor: self.cfg.minor_version,
                    rpc: Some(e),
                })
            }
            Err(source) => return Err(Nfs4Error::Rpc { op: "NULL", source }),
        }
        self.exchange_id().await?;
        self.create_session().await?;
        self.reclaim_complete().await?;
        let want = attrs::limits();
        let res = self
            .run("the root", NORMAL, || {
                Ok(vec![
                    A::OpPutrootfh,
                    A::OpGetfh,
                    A::OpGetattr(p::Getattr4args {
                        attr_request: want.words(),
                    }),
                ])
            })
            .await?;
        let (
            Some(R::OpGetfh(p::Getfh4res::Nfs4Ok(fh))),
            Some(R::OpGetattr(p::Getattr4res::Nfs4Ok(g))),
        ) = (res.get(1), res.get(2))
        else {
            return Err(Nfs4Error::Protocol(Violation::Missing {
                what: "PUTROOTFH, GETFH, GETATTR",
            }));
        };
        let a: Attrs = attrs::decode(&g.obj_attributes)
            .map_err(|e| Nfs4Error::Protocol(Violation::Attributes(e)))?;
        {
            let mut s = lock(&self.sess);
            s.root = fh.object.clone();
            let max_io = s.terms.as_ref().map_or(4096, |t| t.max_io);
            let cap = |v: u64| -> u32 {
                let v = if v == 0 { u64::from(max_io) } else { v };
                (v.min(u64::from(max_io)) as u32).max(4096) & !4095
            };
            s.rsize = cap(a.maxread);
            s.wsize = cap(a.maxwrite);
            if a.lease_time > 0 {
                s.lease
                    .set_period(Duration::from_secs(u64::from(a.lease_time)));
            }
        }
        let weak = Arc::downgrade(self);
        let mut tasks = lock(&self.tasks);
        tasks.push(tokio::spawn(Self::events_task(weak.clone(), rx)));
        tasks.push(tokio::spawn(Self::renew_task(weak.clone())));
        tasks.push(tokio::spawn(Self::watch_task(weak)));
        Ok(())
    }

    /// Returns the delegations, ends the session and the client record.
    pub(crate) async fn close(&self) -> Result<()> {
        let delegs = lock(&self.state).delegations();
        for d in delegs {
            let (fh, sid) = (d.fh.clone(), d.stateid);
            let _ = self
                .run("DELEGRETURN", NORMAL, || {
                    Ok(vec![
                        A::OpPutfh(p::Putfh4args { object: fh.clone() }),
                        A::OpDelegreturn(p::Delegreturn4args { deleg_stateid: sid }),
                    ])
                })
                .await;
            lock(&self.state).returned(&d.stateid);
        }
        self.closed.store(true, Ordering::Relaxed);
        for t in lock(&self.tasks).drain(..) {
            t.abort();
        }
        let (sid, clientid) = {
            let s = lock(&self.sess);
            (s.id, s.clientid)
        };
        self.single(A::OpDestroySession(p::DestroySession4args {
            dsa_sessionid: sid,
        }))
        .await?;
        match self
            .single(A::OpDestroyClientid(p::DestroyClientid4args {
                dca_clientid: clientid,
            }))
            .await
        {
            Ok(_) => Ok(()),
            // Opens the caller left open keep the record busy.
            Err(e) if e.status() == Some(Status::Nfs4errClientidBusy) => Ok(()),
            Err(e) => Err(e),
        }
    }
}
