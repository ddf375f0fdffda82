//! Byte-range locks and stateids: LOCK, LOCKT, LOCKU, FREE_STATEID,
//! TEST_STATEID (RFC 8881 §18.10–18.12, §18.38, §18.48). The lock table is
//! the state layer's (`state::locks`): advisory POSIX locks between NFSv4
//! lock owners (NFSv3 clients mount with `nolock`: no NLM here).

use crate::ctx::{from_state, wire, Ctx, Done};
use crate::proto::nfs4 as p;
use crate::state::{self, ClientId, LockArgs, LockKind, Locker};

fn kind_of(t: p::NfsLockType4) -> LockKind {
    match t {
        p::NfsLockType4::ReadLt | p::NfsLockType4::ReadwLt => LockKind::Read,
        p::NfsLockType4::WriteLt | p::NfsLockType4::WritewLt => LockKind::Write,
    }
}

fn denied(d: &state::Denied) -> p::Lock4denied {
    p::Lock4denied {
        offset: d.offset,
        length: d.length,
        locktype: match d.kind {
            LockKind::Read => p::NfsLockType4::ReadLt,
            LockKind::Write => p::NfsLockType4::WriteLt,
        },
        owner: p::StateOwner4 {
            clientid: d.owner.client.0,
            owner: d.owner.owner.clone().into(),
        },
    }
}

/// LOCK.
pub(crate) fn lock(cx: &mut Ctx<'_>, a: &p::Lock4args) -> Done {
    let r = (|| {
        let client = cx.client()?;
        let fh = cx.fh()?;
        let locker = match &a.locker {
            p::Locker4::True(n) => Locker::New {
                open: cx.stateid(&n.open_stateid)?,
                owner: n.lock_owner.owner.to_vec(),
            },
            p::Locker4::False(e) => Locker::Existing(cx.stateid(&e.lock_stateid)?),
        };
        let got = cx
            .core
            .lock()
            .lock(
                &LockArgs {
                    client,
                    file: fh,
                    kind: kind_of(a.locktype),
                    reclaim: a.reclaim,
                    offset: a.offset,
                    length: a.length,
                    locker,
                    blocking: matches!(
                        a.locktype,
                        p::NfsLockType4::ReadwLt | p::NfsLockType4::WritewLt
                    ),
                },
                cx.now,
            )
            .map_err(from_state)?;
        if let Ok(s) = got {
            cx.set_stateid(s);
        }
        Ok(got)
    })();
    match r {
        Ok(Ok(s)) => (
            p::NfsResop4::OpLock(p::Lock4res::Nfs4Ok(p::Lock4resok {
                lock_stateid: wire(s),
            })),
            p::Nfsstat4::Nfs4Ok,
        ),
        Ok(Err(d)) => (
            p::NfsResop4::OpLock(p::Lock4res::Nfs4errDenied(denied(&d))),
            p::Nfsstat4::Nfs4errDenied,
        ),
        Err(s) => (p::NfsResop4::OpLock(p::Lock4res::Default(s)), s),
    }
}

/// LOCKT: the lock owner may be another client's name for itself, but the
/// test is for the session's client.
pub(crate) fn lockt(cx: &mut Ctx<'_>, a: &p::Lockt4args) -> Done {
    let r = (|| {
        let client: ClientId = cx.client()?;
        let fh = cx.fh()?;
        cx.core
            .lock()
            .lockt(
                client,
                &a.owner.owner,
                &fh,
                kind_of(a.locktype),
                a.offset,
                a.length,
            )
            .map_err(from_state)
    })();
    match r {
        Ok(None) => (
            p::NfsResop4::OpLockt(p::Lockt4res::Nfs4Ok),
            p::Nfsstat4::Nfs4Ok,
        ),
        Ok(Some(d)) => (
            p::NfsResop4::OpLockt(p::Lockt4res::Nfs4errDenied(denied(&d))),
            p::Nfsstat4::Nfs4errDenied,
        ),
        Err(s) => (p::NfsResop4::OpLockt(p::Lockt4res::Default(s)), s),
    }
}

/// LOCKU.
pub(crate) fn locku(cx: &mut Ctx<'_>, a: &p::Locku4args) -> Done {
    let r = (|| {
        let client = cx.client()?;
        let fh = cx.fh()?;
        let id = cx.stateid(&a.lock_stateid)?;
        let s = cx
            .core
            .lock()
            .locku(client, &id, &fh, a.offset, a.length)
            .map_err(from_state)?;
        cx.set_stateid(s);
        Ok(s)
    })();
    match r {
        Ok(s) => (
            p::NfsResop4::OpLocku(p::Locku4res::Nfs4Ok(wire(s))),
            p::Nfsstat4::Nfs4Ok,
        ),
        Err(s) => (p::NfsResop4::OpLocku(p::Locku4res::Default(s)), s),
    }
}

/// FREE_STATEID.
pub(crate) fn free_stateid(cx: &mut Ctx<'_>, a: &p::FreeStateid4args) -> Done {
    let r = (|| {
        let client = cx.client()?;
        let id = cx.stateid(&a.fsa_stateid)?;
        cx.core.lock().free_stateid(client, &id).map_err(from_state)
    })();
    let s = super::results::status(&r);
    (
        p::NfsResop4::OpFreeStateid(p::FreeStateid4res { fsr_status: s }),
        s,
    )
}

/// TEST_STATEID.
pub(crate) fn test_stateid(cx: &mut Ctx<'_>, a: &p::TestStateid4args) -> Done {
    let r = (|| {
        let client = cx.client()?;
        let ids: Vec<state::StateId> = a
            .ts_stateids
            .iter()
            .map(|s| state::StateId {
                seqid: s.seqid,
                other: s.other,
            })
            .collect();
        let codes = cx.core.lock().test_stateids(client, &ids);
        Ok(codes
            .into_iter()
            .map(|c| p::Nfsstat4::from_value(c as i32).unwrap_or(p::Nfsstat4::Nfs4errBadStateid))
            .collect())
    })();
    match r {
        Ok(codes) => (
            p::NfsResop4::OpTestStateid(p::TestStateid4res::Nfs4Ok(p::TestStateid4resok {
                tsr_status_codes: codes,
            })),
            p::Nfsstat4::Nfs4Ok,
        ),
        Err(s) => (
            p::NfsResop4::OpTestStateid(p::TestStateid4res::Default(s)),
            s,
        ),
    }
}
