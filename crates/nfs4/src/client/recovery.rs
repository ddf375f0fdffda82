//! Establishing the session and getting it back (an `impl` of the
//! driver's `Inner`): EXCHANGE_ID, CREATE_SESSION, BIND_CONN_TO_SESSION,
//! recovery after the server lost the session or the client (the opens,
//! locks and delegations reclaimed in its grace period, or taken again
//! after it), RECLAIM_COMPLETE, and the revoked delegations freed.

use std::time::{Duration, Instant};

use bytes::Bytes;
use rpcrdma_sync::lock;

use super::driver::{hex, host_name, state_lost, ClientEvent, Inner, NORMAL, RECOVERY};
use super::error::{Chain, Lost, Nfs4Error, Result, Status, Violation};
use super::session;
use super::slots::SlotTable;
use super::state::Range;
use crate::proto::nfs4 as p;
use p::NfsArgop4 as A;
use p::NfsResop4 as R;

impl Inner {
    /// EXCHANGE_ID (RFC 8881 §18.35) with the client's owner and verifier.
    pub(super) async fn exchange_id(&self) -> Result<()> {
        let r = self
            .single(A::OpExchangeId(p::ExchangeId4args {
                eia_clientowner: p::ClientOwner4 {
                    co_verifier: self.verifier,
                    co_ownerid: self.owner.clone(),
                },
                eia_flags: 0,
                eia_state_protect: p::StateProtect4A::Sp4None,
                eia_client_impl_id: vec![p::NfsImplId4 {
                    nii_domain: Bytes::from_static(b"rpcrdma"),
                    nii_name: Bytes::from(format!("rpcrdma-nfs4 {}", env!("CARGO_PKG_VERSION"))),
                    nii_date: p::Nfstime4 {
                        seconds: 0,
                        nseconds: 0,
                    },
                }],
            }))
            .await?;
        let R::OpExchangeId(p::ExchangeId4res::Nfs4Ok(x)) = r else {
            return Err(Nfs4Error::Protocol(Violation::OtherOperation {
                op: "EXCHANGE_ID",
            }));
        };
        if !matches!(x.eir_state_protect, p::StateProtect4R::Sp4None) {
            return Err(Nfs4Error::Protocol(Violation::StateProtection));
        }
        let mut s = lock(&self.sess);
        s.clientid = x.eir_clientid;
        s.cs_seq = x.eir_sequenceid;
        s.server = (
            x.eir_server_owner.so_major_id.clone(),
            x.eir_server_scope.clone(),
        );
        s.server_impl = x
            .eir_server_impl_id
            .first()
            .map(|i| (i.nii_domain.clone(), i.nii_name.clone()));
        Ok(())
    }

    /// CREATE_SESSION (RFC 8881 §18.36) with a backchannel on this
    /// connection; installs the new session.
    pub(super) async fn create_session(&self) -> Result<()> {
        let (clientid, seq) = {
            let s = lock(&self.sess);
            (s.clientid, s.cs_seq)
        };
        let fore = session::fore_attrs(self.cfg.max_io, self.cfg.slots, self.cfg.max_operations);
        let back = self.cfg.back_channel.attrs();
        let host = Bytes::from(host_name());
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as u32);
        let r = self
            .single(A::OpCreateSession(p::CreateSession4args {
                csa_clientid: clientid,
                csa_sequence: seq,
                csa_flags: if self.cfg.backchannel {
                    p::CREATE_SESSION4_FLAG_CONN_BACK_CHAN
                } else {
                    0
                },
                csa_fore_chan_attrs: fore.clone(),
                csa_back_chan_attrs: back.clone(),
                csa_cb_program: self.cb_program,
                csa_sec_parms: vec![
                    p::CallbackSecParms4::AuthSys(p::AuthsysParms4 {
                        stamp,
                        machinename: host,
                        uid: 0,
                        gid: 0,
                        gids: Vec::new(),
                    }),
                    p::CallbackSecParms4::AuthNone,
                ],
            }))
            .await?;
        let R::OpCreateSession(p::CreateSession4res::Nfs4Ok(c)) = r else {
            return Err(Nfs4Error::Protocol(Violation::OtherOperation {
                op: "CREATE_SESSION",
            }));
        };
        let terms = session::accept(&fore, &back, &c)
            .map_err(|e| Nfs4Error::Protocol(Violation::Session(e)))?;
        let conn = self.nfs.rpc().connection().map(|c| c.id());
        let now = Instant::now();
        {
            let mut s = lock(&self.sess);
            s.cs_seq = seq.wrapping_add(1);
            s.id = c.csr_sessionid;
            s.epoch += 1;
            s.slots = SlotTable::new(terms.fore.ca_maxrequests.min(self.cfg.slots.max(1)));
            s.lease.renewed(now);
            s.bound_conn = if terms.back_on_connection { conn } else { None };
            s.bound_at = now;
            s.rsize = s.rsize.max(4096);
            s.terms = Some(terms.clone());
            lock(&self.cb.bc).set_session(
                c.csr_sessionid,
                self.cfg.minor_version,
                terms.back.clone(),
            );
        }
        self.slot_free.notify_waiters();
        tracing::info!(
            session = %hex(&c.csr_sessionid),
            slots = terms.fore.ca_maxrequests,
            back_slots = terms.back.ca_maxrequests,
            backchannel = terms.back_on_connection,
            "NFSv4.1 session created"
        );
        if self.cfg.backchannel && !terms.back_on_connection {
            // The server did not take this connection for callbacks:
            // ask again with BIND_CONN_TO_SESSION.
            self.bind_only().await?;
        }
        Ok(())
    }

    /// BIND_CONN_TO_SESSION (RFC 8881 §18.34) of the current connection,
    /// fore channel and, if the server will, back channel; recovers the
    /// session if the server lost it.
    pub(crate) async fn bind_conn(&self) -> Result<()> {
        let epoch = lock(&self.sess).epoch;
        match self.bind_only().await {
            Err(e) if e.status().is_some_and(state_lost) => {
                tracing::info!("BIND_CONN_TO_SESSION: the session is gone: recovering");
                self.recover_dyn(epoch, false).await
            }
            other => other,
        }
    }

    /// BIND_CONN_TO_SESSION alone.
    pub(super) async fn bind_only(&self) -> Result<()> {
        let (sid, epoch) = {
            let s = lock(&self.sess);
            (s.id, s.epoch)
        };
        let r = self
            .single(A::OpBindConnToSession(p::BindConnToSession4args {
                bctsa_sessid: sid,
                bctsa_dir: p::ChannelDirFromClient4::Cdfc4ForeOrBoth,
                bctsa_use_conn_in_rdma_mode: false,
            }))
            .await?;
        let R::OpBindConnToSession(p::BindConnToSession4res::Nfs4Ok(b)) = r else {
            return Err(Nfs4Error::Protocol(Violation::OtherOperation {
                op: "BIND_CONN_TO_SESSION",
            }));
        };
        let both = matches!(
            b.bctsr_dir,
            p::ChannelDirFromServer4::Cdfs4Both | p::ChannelDirFromServer4::Cdfs4Back
        );
        let conn = self.nfs.rpc().connection().map(|c| c.id());
        {
            let mut s = lock(&self.sess);
            if s.epoch == epoch && both {
                s.bound_conn = conn;
                s.bound_at = Instant::now();
            }
        }
        tracing::info!(back = both, "connection bound to the session");
        if both {
            self.emit(ClientEvent::BackchannelBound);
        }
        Ok(())
    }

    /// Establishes a new session after the server lost ours (`full`: its
    /// client record too: EXCHANGE_ID first, then the state is reclaimed).
    /// Once per loss: a caller that saw an older session returns at once.
    pub(crate) async fn recover(&self, seen_epoch: u64, full: bool) -> Result<()> {
        let _one = self.recovery.lock().await;
        if lock(&self.sess).epoch != seen_epoch {
            return Ok(());
        }
        let _all = self.gate.write().await;
        let mut full = full;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let r = if full {
                self.establish_full().await
            } else {
                match self.create_session().await {
                    Err(e) if e.status() == Some(Status::Nfs4errStaleClientid) => {
                        self.establish_full().await
                    }
                    other => other,
                }
            };
            match r {
                Ok(()) => {
                    lock(&self.sess).recoveries += 1;
                    return Ok(());
                }
                Err(e) if attempt < 5 && !self.is_closed() => {
                    tracing::warn!(error = %Chain(&e), attempt, "recovery failed; again");
                    full = true;
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// EXCHANGE_ID, CREATE_SESSION, reclaim, RECLAIM_COMPLETE.
    pub(super) async fn establish_full(&self) -> Result<()> {
        self.exchange_id().await?;
        self.create_session().await?;
        lock(&self.sess).reclaim_done = false;
        let (reclaimed, reopened, lost) = self.reclaim().await;
        self.reclaim_complete().await?;
        if reclaimed + reopened + lost > 0 {
            tracing::info!(reclaimed, reopened, lost, "state recovered");
        }
        self.emit(ClientEvent::Recovered {
            reclaimed,
            reopened,
            lost,
        });
        Ok(())
    }

    /// RECLAIM_COMPLETE (RFC 8881 §18.51): the client reclaims nothing
    /// more (the Linux server refuses other OPENs until it is sent).
    pub(super) async fn reclaim_complete(&self) -> Result<()> {
        if lock(&self.sess).reclaim_done {
            return Ok(());
        }
        let r = self
            .run("RECLAIM_COMPLETE", RECOVERY, || {
                Ok(vec![A::OpReclaimComplete(p::ReclaimComplete4args {
                    rca_one_fs: false,
                })])
            })
            .await;
        match r {
            Ok(_) => {}
            Err(e) if e.status() == Some(Status::Nfs4errCompleteAlready) => {}
            Err(e) => return Err(e),
        }
        lock(&self.sess).reclaim_done = true;
        Ok(())
    }

    /// Reclaims every open and lock (RFC 8881 §8.4.2.1): OPEN with
    /// CLAIM_PREVIOUS and LOCK with `reclaim` while the server is in its
    /// grace period; when it is not (`NFS4ERR_NO_GRACE`), opens them again
    /// (CLAIM_FH) and locks again. Delegations are not reclaimed (a
    /// restart drops them). Returns (reclaimed, reopened, lost).
    pub(super) async fn reclaim(&self) -> (usize, usize, usize) {
        let (opens, dropped) = {
            let mut st = lock(&self.state);
            st.forget_lock_stateids();
            (st.opens(), st.forget_delegations())
        };
        if dropped > 0 {
            tracing::info!(dropped, "delegations dropped by the server's restart");
        }
        let clientid = self.clientid();
        let (mut reclaimed, mut reopened, mut lost) = (0, 0, 0);
        let mut grace = true;
        for (id, o) in opens {
            let mut done = false;
            for _ in 0..2 {
                let claim = if grace {
                    p::OpenClaim4::ClaimPrevious(p::OpenDelegationType4::OpenDelegateNone)
                } else {
                    p::OpenClaim4::ClaimFh
                };
                let open = A::OpOpen(p::Open4args {
                    seqid: 0,
                    share_access: o.access | p::OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
                    share_deny: 0,
                    owner: p::StateOwner4 {
                        clientid,
                        owner: o.owner.clone(),
                    },
                    openhow: p::Openflag4::Default(p::Opentype4::Open4Nocreate),
                    claim,
                });
                let fh = o.fh.clone();
                let r = self
                    .run("reclaim", RECOVERY, || {
                        Ok(vec![
                            A::OpPutfh(p::Putfh4args { object: fh.clone() }),
                            open.clone(),
                        ])
                    })
                    .await;
                match r {
                    Ok(res) => {
                        if let Some(R::OpOpen(p::Open4res::Nfs4Ok(ok))) = res.get(1) {
                            lock(&self.state).set_open_stateid(id, ok.stateid);
                            if grace {
                                reclaimed += 1;
                            } else {
                                reopened += 1;
                            }
                            done = true;
                        }
                        break;
                    }
                    Err(e) if grace && e.status() == Some(Status::Nfs4errNoGrace) => {
                        // No grace period: nothing to reclaim; open anew
                        // after RECLAIM_COMPLETE.
                        grace = false;
                        if let Err(e) = self.reclaim_complete().await {
                            tracing::warn!(error = %Chain(&e), "RECLAIM_COMPLETE failed");
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %Chain(&e), "an open could not be recovered");
                        break;
                    }
                }
            }
            if !done {
                lost += 1;
                continue;
            }
            for l in &o.locks {
                for r in l.ranges.iter() {
                    match self.relock(id, &l.owner, *r, grace).await {
                        Ok(()) if grace => reclaimed += 1,
                        Ok(()) => reopened += 1,
                        Err(e) => {
                            tracing::warn!(error = %Chain(&e), "a lock could not be recovered");
                            lost += 1;
                        }
                    }
                }
            }
        }
        (reclaimed, reopened, lost)
    }

    /// LOCK (reclaim or not) of a range held before a restart.
    pub(super) async fn relock(
        &self,
        id: u64,
        owner: &Bytes,
        r: Range,
        reclaim: bool,
    ) -> Result<()> {
        let clientid = self.clientid();
        let res = self
            .run("reclaim lock", RECOVERY, || {
                let st = lock(&self.state);
                let Some(o) = st.open(id) else {
                    return Err(Nfs4Error::StateLost(Lost::OpenGone));
                };
                let locker = match st.lock_stateid(id, owner) {
                    Some(ls) => p::Locker4::False(p::ExistLockOwner4 {
                        lock_stateid: ls,
                        lock_seqid: 0,
                    }),
                    None => p::Locker4::True(p::OpenToLockOwner4 {
                        open_seqid: 0,
                        open_stateid: o.stateid,
                        lock_seqid: 0,
                        lock_owner: p::StateOwner4 {
                            clientid,
                            owner: owner.clone(),
                        },
                    }),
                };
                Ok(vec![
                    A::OpPutfh(p::Putfh4args {
                        object: o.fh.clone(),
                    }),
                    A::OpLock(p::Lock4args {
                        locktype: if r.write {
                            p::NfsLockType4::WriteLt
                        } else {
                            p::NfsLockType4::ReadLt
                        },
                        reclaim,
                        offset: r.start,
                        length: r.length(),
                        locker,
                    }),
                ])
            })
            .await?;
        if let Some(R::OpLock(p::Lock4res::Nfs4Ok(ok))) = res.get(1) {
            lock(&self.state).locked(id, owner, ok.lock_stateid, r);
        }
        Ok(())
    }

    /// After `SEQ4_STATUS_RECALLABLE_STATE_REVOKED` (and its kin): finds
    /// the revoked delegations (TEST_STATEID) and frees them (FREE_STATEID).
    pub(super) async fn test_delegations(&self) {
        let delegs = lock(&self.state).delegations();
        if delegs.is_empty() {
            return;
        }
        let ids: Vec<p::Stateid4> = delegs.iter().map(|d| d.stateid).collect();
        let r = self
            .run("TEST_STATEID", NORMAL, || {
                Ok(vec![A::OpTestStateid(p::TestStateid4args {
                    ts_stateids: ids.clone(),
                })])
            })
            .await;
        let Ok(res) = r else { return };
        let Some(R::OpTestStateid(p::TestStateid4res::Nfs4Ok(t))) = res.first() else {
            return;
        };
        for (d, st) in delegs.iter().zip(&t.tsr_status_codes) {
            if *st == Status::Nfs4Ok {
                continue;
            }
            tracing::info!(status = ?st, "a delegation was revoked: freeing it");
            let sid = d.stateid;
            let _ = self
                .run("FREE_STATEID", NORMAL, || {
                    Ok(vec![A::OpFreeStateid(p::FreeStateid4args {
                        fsa_stateid: sid,
                    })])
                })
                .await;
            lock(&self.state).returned(&d.stateid);
        }
    }
}
