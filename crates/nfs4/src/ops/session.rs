//! Client IDs and sessions: EXCHANGE_ID, CREATE_SESSION, SEQUENCE,
//! BIND_CONN_TO_SESSION, DESTROY_SESSION, DESTROY_CLIENTID,
//! RECLAIM_COMPLETE, BACKCHANNEL_CTL (RFC 8881 §18.33–18.51).

use bytes::Bytes;

use super::results::error_result;
use crate::ctx::{from_state, Ctx, Done};
use crate::proto::nfs4 as p;
use crate::shared::CbAuth;
use crate::state::{ChannelAttrs, ClientId, CreateSession, Exchange, SessionId};

/// The server's name in EXCHANGE_ID (`so_major_id`, and the scope):
/// clients trunk only with servers that give the same one.
pub(crate) const SERVER_OWNER: &[u8] = b"rpcrdma-nfs4";

fn ok(r: p::NfsResop4) -> Done {
    (r, p::Nfsstat4::Nfs4Ok)
}

fn fail(a: p::NfsArgop4, s: p::Nfsstat4) -> Done {
    (error_result(&a, s), s)
}

fn attrs_in(c: &p::ChannelAttrs4) -> ChannelAttrs {
    ChannelAttrs {
        header_pad: c.ca_headerpadsize,
        max_request: c.ca_maxrequestsize,
        max_response: c.ca_maxresponsesize,
        max_response_cached: c.ca_maxresponsesize_cached,
        max_ops: c.ca_maxoperations,
        max_requests: c.ca_maxrequests,
    }
}

fn attrs_out(c: ChannelAttrs) -> p::ChannelAttrs4 {
    p::ChannelAttrs4 {
        ca_headerpadsize: c.header_pad,
        ca_maxrequestsize: c.max_request,
        ca_maxresponsesize: c.max_response,
        ca_maxresponsesize_cached: c.max_response_cached,
        ca_maxoperations: c.max_ops,
        ca_maxrequests: c.max_requests,
        ca_rdma_ird: Vec::new(),
    }
}

/// EXCHANGE_ID (RFC 8881 §18.35). State protection: SP4_NONE, or
/// SP4_MACH_CRED answered with empty operation lists (nothing enforced);
/// SP4_SSV is not supported.
pub(crate) fn exchange_id(cx: &mut Ctx<'_>, x: &p::ExchangeId4args) -> Done {
    let again = || p::NfsArgop4::OpExchangeId(x.clone());
    let protect = match &x.eia_state_protect {
        p::StateProtect4A::Sp4None => p::StateProtect4R::Sp4None,
        p::StateProtect4A::Sp4MachCred(_) => p::StateProtect4R::Sp4MachCred(p::StateProtectOps4 {
            spo_must_enforce: Vec::new(),
            spo_must_allow: Vec::new(),
        }),
        p::StateProtect4A::Sp4Ssv(_) => return fail(again(), p::Nfsstat4::Nfs4errEncrAlgUnsupp),
    };
    let update = x.eia_flags & p::EXCHGID4_FLAG_UPD_CONFIRMED_REC_A != 0;
    if x.eia_clientowner.co_ownerid.is_empty() {
        return fail(again(), p::Nfsstat4::Nfs4errInval);
    }
    let r = cx.core.lock().exchange_id(
        Exchange {
            owner: x.eia_clientowner.co_ownerid.to_vec(),
            verifier: x.eia_clientowner.co_verifier,
            principal: cx.principal,
            update,
        },
        cx.now,
    );
    match r {
        Ok(e) => {
            let mut flags = p::EXCHGID4_FLAG_USE_NON_PNFS;
            if e.confirmed {
                flags |= p::EXCHGID4_FLAG_CONFIRMED_R;
            }
            ok(p::NfsResop4::OpExchangeId(p::ExchangeId4res::Nfs4Ok(
                p::ExchangeId4resok {
                    eir_clientid: e.client.0,
                    eir_sequenceid: e.sequenceid,
                    eir_flags: flags,
                    eir_state_protect: protect,
                    eir_server_owner: p::ServerOwner4 {
                        so_minor_id: 0,
                        so_major_id: Bytes::from_static(SERVER_OWNER),
                    },
                    eir_server_scope: Bytes::from_static(SERVER_OWNER),
                    eir_server_impl_id: vec![p::NfsImplId4 {
                        nii_domain: Bytes::from_static(b"rpcrdma"),
                        nii_name: Bytes::from(format!(
                            "rpcrdma-nfs4 {}",
                            env!("CARGO_PKG_VERSION")
                        )),
                        nii_date: p::Nfstime4 {
                            seconds: 0,
                            nseconds: 0,
                        },
                    }],
                },
            )))
        }
        Err(e) => fail(again(), from_state(e)),
    }
}

/// How the server may authenticate callbacks: AUTH_NONE if the client
/// offers it, else its AUTH_SYS parameters (RFC 8881 §18.36.3: one the
/// client listed).
fn cb_auth(parms: &[p::CallbackSecParms4]) -> Option<CbAuth> {
    if parms
        .iter()
        .any(|s| matches!(s, p::CallbackSecParms4::AuthNone))
    {
        return Some(CbAuth::None);
    }
    parms.iter().find_map(|s| match s {
        p::CallbackSecParms4::AuthSys(a) => Some(CbAuth::Sys {
            machine: a.machinename.clone(),
            uid: a.uid,
            gid: a.gid,
        }),
        _ => None,
    })
}

/// CREATE_SESSION (RFC 8881 §18.36).
pub(crate) fn create_session(cx: &mut Ctx<'_>, x: &p::CreateSession4args) -> Done {
    let again = || p::NfsArgop4::OpCreateSession(x.clone());
    let back_channel = x.csa_flags & p::CREATE_SESSION4_FLAG_CONN_BACK_CHAN != 0;
    let auth = cb_auth(&x.csa_sec_parms);
    if back_channel && auth.is_none() {
        // No flavor we can call back with (RPCSEC_GSS only).
        return fail(again(), p::Nfsstat4::Nfs4errWrongsec);
    }
    let r = cx.core.lock().create_session(
        CreateSession {
            client: ClientId(x.csa_clientid),
            sequence: x.csa_sequence,
            back_channel,
            fore: attrs_in(&x.csa_fore_chan_attrs),
            back: attrs_in(&x.csa_back_chan_attrs),
            cb_program: x.csa_cb_program,
        },
        cx.conn,
        cx.now,
    );
    match r {
        Ok(g) => {
            if let Some(a) = auth {
                cx.core.set_cb_auth(g.session, a);
            }
            let flags = if g.back_channel {
                p::CREATE_SESSION4_FLAG_CONN_BACK_CHAN
            } else {
                0
            };
            ok(p::NfsResop4::OpCreateSession(p::CreateSession4res::Nfs4Ok(
                p::CreateSession4resok {
                    csr_sessionid: g.session.0,
                    csr_sequence: g.sequence,
                    csr_flags: flags,
                    csr_fore_chan_attrs: attrs_out(g.fore),
                    csr_back_chan_attrs: attrs_out(g.back),
                },
            )))
        }
        Err(e) => fail(again(), from_state(e)),
    }
}

/// SEQUENCE's outcome.
pub(crate) enum Seq {
    /// A retransmission: the cached reply.
    Replay(crate::shared::Cached),
    /// A new request: SEQUENCE's result.
    New(p::NfsResop4),
}

/// SEQUENCE (RFC 8881 §18.46), first in a COMPOUND of `count` operations.
pub(crate) fn sequence(
    cx: &mut Ctx<'_>,
    sa: &p::Sequence4args,
    count: u32,
) -> Result<Seq, p::Nfsstat4> {
    let sid = SessionId(sa.sa_sessionid);
    let fail = |s: p::Nfsstat4| s;
    let mut st = cx.core.lock();
    if let Some(fore) = st.session_fore(&sid) {
        // Before the slot is touched: the request is not executed.
        if count > fore.max_ops {
            return Err(fail(p::Nfsstat4::Nfs4errTooManyOps));
        }
    }
    let q = st
        .sequence(
            &sid,
            sa.sa_sequenceid,
            sa.sa_slotid,
            sa.sa_highest_slotid,
            cx.conn,
            cx.now,
        )
        .map_err(|e| fail(from_state(e)))?;
    drop(st);
    if let Some(cached) = q.replay {
        return Ok(Seq::Replay(cached));
    }
    cx.session = Some((sid, sa.sa_slotid, sa.sa_cachethis));
    cx.client = Some(q.client);
    cx.fore = q.fore;
    Ok(Seq::New(p::NfsResop4::OpSequence(p::Sequence4res::Nfs4Ok(
        p::Sequence4resok {
            sr_sessionid: sa.sa_sessionid,
            sr_sequenceid: sa.sa_sequenceid,
            sr_slotid: sa.sa_slotid,
            sr_highest_slotid: q.highest_slot,
            sr_target_highest_slotid: q.highest_slot,
            sr_status_flags: q.status_flags,
        },
    ))))
}

/// DESTROY_SESSION (RFC 8881 §18.37).
pub(crate) fn destroy_session(cx: &mut Ctx<'_>, x: &p::DestroySession4args) -> Done {
    let sid = SessionId(x.dsa_sessionid);
    let s = match cx.core.lock().destroy_session(&sid) {
        Ok(()) => p::Nfsstat4::Nfs4Ok,
        Err(e) => from_state(e),
    };
    cx.core.forget_cb_auth(&sid);
    (
        p::NfsResop4::OpDestroySession(p::DestroySession4res { dsr_status: s }),
        s,
    )
}

/// BIND_CONN_TO_SESSION (RFC 8881 §18.34): a client without state
/// protection may bind any connection; the RDMA mode flag is declined.
pub(crate) fn bind_conn(cx: &mut Ctx<'_>, x: &p::BindConnToSession4args) -> Done {
    use p::ChannelDirFromClient4 as C;
    use p::ChannelDirFromServer4 as S;
    let sid = SessionId(x.bctsa_sessid);
    let (fore, back, dir) = match x.bctsa_dir {
        C::Cdfc4Fore => (true, false, S::Cdfs4Fore),
        C::Cdfc4Back => (false, true, S::Cdfs4Back),
        C::Cdfc4ForeOrBoth | C::Cdfc4BackOrBoth => (true, true, S::Cdfs4Both),
    };
    match cx.core.lock().bind_conn(&sid, fore, back, cx.conn, cx.now) {
        Ok(()) => ok(p::NfsResop4::OpBindConnToSession(
            p::BindConnToSession4res::Nfs4Ok(p::BindConnToSession4resok {
                bctsr_sessid: x.bctsa_sessid,
                bctsr_dir: dir,
                bctsr_use_conn_in_rdma_mode: false,
            }),
        )),
        Err(e) => fail(p::NfsArgop4::OpBindConnToSession(*x), from_state(e)),
    }
}

/// DESTROY_CLIENTID (RFC 8881 §18.50).
pub(crate) fn destroy_clientid(cx: &mut Ctx<'_>, x: &p::DestroyClientid4args) -> Done {
    let s = match cx.core.lock().destroy_clientid(ClientId(x.dca_clientid)) {
        Ok(()) => p::Nfsstat4::Nfs4Ok,
        Err(e) => from_state(e),
    };
    (
        p::NfsResop4::OpDestroyClientid(p::DestroyClientid4res { dcr_status: s }),
        s,
    )
}

/// RECLAIM_COMPLETE (RFC 8881 §18.51): for one file system (`rca_one_fs`)
/// there is nothing to end separately (one export is one file system).
pub(crate) fn reclaim_complete(cx: &mut Ctx<'_>, x: &p::ReclaimComplete4args) -> Done {
    let s = if x.rca_one_fs {
        p::Nfsstat4::Nfs4Ok
    } else {
        match cx.client() {
            Ok(c) => match cx.core.lock().reclaim_complete(c) {
                Ok(()) => p::Nfsstat4::Nfs4Ok,
                Err(e) => from_state(e),
            },
            Err(e) => e,
        }
    };
    (
        p::NfsResop4::OpReclaimComplete(p::ReclaimComplete4res { rcr_status: s }),
        s,
    )
}

/// BACKCHANNEL_CTL (RFC 8881 §18.33): new callback security for the
/// session.
pub(crate) fn backchannel_ctl(cx: &mut Ctx<'_>, x: &p::BackchannelCtl4args) -> Done {
    let s = match (cx.session, cb_auth(&x.bca_sec_parms)) {
        (Some((sid, _, _)), Some(a)) => {
            cx.core.set_cb_auth(sid, a);
            p::Nfsstat4::Nfs4Ok
        }
        (_, None) => p::Nfsstat4::Nfs4errWrongsec,
        (None, _) => p::Nfsstat4::Nfs4errOpNotInSession,
    };
    (
        p::NfsResop4::OpBackchannelCtl(p::BackchannelCtl4res { bcr_status: s }),
        s,
    )
}
