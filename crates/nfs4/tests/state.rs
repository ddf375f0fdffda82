//! The NFSv4.1 state layer, sans-IO and deterministic: client records
//! (every EXCHANGE_ID case), sessions and exactly-once semantics, stateids,
//! share reservations, byte-range locks, delegations and their recall and
//! revocation, leases, the grace period, and the limits on state.

use std::time::{Duration, Instant};

use rpcrdma_nfs3::fs::FileHandle;
use rpcrdma_nfs4::state::*;

const LEASE: Duration = Duration::from_secs(90);

type S = State<&'static str>;

fn fh(n: u8) -> FileHandle {
    FileHandle::from_bytes(&[n; 36]).unwrap()
}

fn attrs(slots: u32) -> ChannelAttrs {
    ChannelAttrs {
        header_pad: 0,
        max_request: 1 << 20,
        max_response: 1 << 20,
        max_response_cached: 8192,
        max_ops: 16,
        max_requests: slots,
    }
}

fn new_state(now: Instant) -> S {
    State::new(Config::default(), 0x6000_0000, now, Vec::new())
}

fn exchange(s: &mut S, owner: &[u8], verf: u8, now: Instant) -> Exchanged {
    s.exchange_id(
        Exchange {
            owner: owner.to_vec(),
            verifier: [verf; 8],
            principal: 0,
            update: false,
        },
        now,
    )
    .unwrap()
}

/// A confirmed client with one session (back channel on connection 1).
fn client(s: &mut S, owner: &[u8], now: Instant) -> (ClientId, SessionId) {
    let x = exchange(s, owner, 1, now);
    let g = s
        .create_session(
            CreateSession {
                client: x.client,
                sequence: x.sequenceid,
                back_channel: true,
                fore: attrs(8),
                back: attrs(2),
                cb_program: 0x4000_0000,
            },
            ConnId(1),
            now,
        )
        .unwrap();
    (x.client, g.session)
}

fn open(
    s: &mut S,
    c: ClientId,
    owner: &[u8],
    f: u8,
    access: u32,
    deny: u32,
    now: Instant,
) -> StateResult<Opened> {
    let a = OpenArgs {
        client: c,
        owner: owner.to_vec(),
        file: fh(f),
        access,
        deny,
        claim: Claim::Null,
        want_deleg: true,
    };
    s.open(&a, now)
}

#[test]
fn exchange_id_cases() {
    let now = Instant::now();
    let mut s = new_state(now);
    // A new owner: an unconfirmed record, sequence 1.
    let a = exchange(&mut s, b"host-a", 1, now);
    assert!(!a.confirmed);
    assert_eq!(a.sequenceid, 1);
    // Again before confirming: the unconfirmed record is replaced.
    let a2 = exchange(&mut s, b"host-a", 1, now);
    assert_ne!(a2.client, a.client);
    assert_eq!(s.client_count(), 1);
    // Confirmed by CREATE_SESSION; the same owner and verifier get it back.
    let g = s
        .create_session(
            CreateSession {
                client: a2.client,
                sequence: 1,
                back_channel: false,
                fore: attrs(4),
                back: attrs(1),
                cb_program: 1,
            },
            ConnId(9),
            now,
        )
        .unwrap();
    let same = exchange(&mut s, b"host-a", 1, now);
    assert_eq!(same.client, a2.client);
    assert!(same.confirmed);
    assert_eq!(same.sequenceid, 2);
    // The client restarted (new verifier): a new record, the old one stays
    // until the new one is confirmed, with its state.
    open(&mut s, a2.client, b"o", 1, ACCESS_READ, 0, now).unwrap();
    let restarted = exchange(&mut s, b"host-a", 2, now);
    assert_ne!(restarted.client, a2.client);
    assert!(!restarted.confirmed);
    assert_eq!(s.state_count(), 1);
    s.create_session(
        CreateSession {
            client: restarted.client,
            sequence: restarted.sequenceid,
            back_channel: false,
            fore: attrs(4),
            back: attrs(1),
            cb_program: 1,
        },
        ConnId(9),
        now,
    )
    .unwrap();
    assert_eq!(s.state_count(), 0, "the old incarnation's state went");
    assert_eq!(s.client_count(), 1);
    assert!(s
        .sequence(&g.session, 1, 0, 0, ConnId(9), now)
        .is_err_and(|e| e == StateError::BadSession));
    // Updates: only of a confirmed record with the same verifier and
    // principal.
    let upd = |owner: &[u8], verf: u8, principal: u32| Exchange {
        owner: owner.to_vec(),
        verifier: [verf; 8],
        principal,
        update: true,
    };
    assert_eq!(
        s.exchange_id(upd(b"nobody", 1, 0), now),
        Err(StateError::NoEnt)
    );
    assert_eq!(
        s.exchange_id(upd(b"host-a", 1, 0), now),
        Err(StateError::NotSame)
    );
    assert_eq!(
        s.exchange_id(upd(b"host-a", 2, 5), now),
        Err(StateError::Perm)
    );
    assert_eq!(
        s.exchange_id(upd(b"host-a", 2, 0), now).unwrap().client,
        restarted.client
    );
    // Another principal claiming an owner that holds state.
    open(&mut s, restarted.client, b"o", 1, ACCESS_READ, 0, now).unwrap();
    let other = Exchange {
        owner: b"host-a".to_vec(),
        verifier: [2; 8],
        principal: 1000,
        update: false,
    };
    assert_eq!(s.exchange_id(other, now), Err(StateError::ClidInUse));
}

#[test]
fn create_session_sequence_and_stale_ids() {
    let now = Instant::now();
    let mut s = new_state(now);
    let x = exchange(&mut s, b"c", 1, now);
    let cs = |seq| CreateSession {
        client: x.client,
        sequence: seq,
        back_channel: true,
        fore: attrs(1000),
        back: attrs(1000),
        cb_program: 7,
    };
    assert_eq!(
        s.create_session(cs(5), ConnId(1), now),
        Err(StateError::SeqMisordered)
    );
    let g = s.create_session(cs(1), ConnId(1), now).unwrap();
    // Negotiated down to ours.
    assert_eq!(g.fore.max_requests, 64);
    assert_eq!(g.back.max_requests, 4);
    assert_eq!(g.fore.max_response_cached, 8192);
    // A retransmission gets the same session.
    assert_eq!(s.create_session(cs(1), ConnId(1), now).unwrap(), g);
    assert_eq!(s.session_count(), 1);
    // Another instance's client ID.
    let mut later = State::<&str>::new(Config::default(), 0x6000_0001, now, Vec::new());
    let stale = CreateSession { ..cs(2) };
    assert_eq!(
        later.create_session(stale, ConnId(1), now),
        Err(StateError::StaleClientId)
    );
    assert_eq!(
        later
            .sequence(&g.session, 1, 0, 0, ConnId(1), now)
            .unwrap_err(),
        StateError::BadSession
    );
}

#[test]
fn slots_give_exactly_once_semantics() {
    let now = Instant::now();
    let mut s = new_state(now);
    let (_, sid) = client(&mut s, b"c", now);
    // First request on slot 0: seqid 1.
    let q = s.sequence(&sid, 1, 0, 7, ConnId(1), now).unwrap();
    assert!(q.replay.is_none());
    assert_eq!(q.highest_slot, 7);
    // The same while it runs: DELAY.
    assert_eq!(
        s.sequence(&sid, 1, 0, 0, ConnId(1), now).unwrap_err(),
        StateError::Delay
    );
    s.finish(&sid, 0, Some("reply 1"));
    // A retransmission: the cached reply, nothing executed.
    assert_eq!(
        s.sequence(&sid, 1, 0, 0, ConnId(1), now).unwrap().replay,
        Some("reply 1")
    );
    // Misordered: old and skipped seqids.
    assert_eq!(
        s.sequence(&sid, 0, 0, 0, ConnId(1), now).unwrap_err(),
        StateError::SeqMisordered
    );
    assert_eq!(
        s.sequence(&sid, 3, 0, 0, ConnId(1), now).unwrap_err(),
        StateError::SeqMisordered
    );
    // The next one, not cached: its retransmission cannot be answered.
    s.sequence(&sid, 2, 0, 0, ConnId(1), now).unwrap();
    s.finish(&sid, 0, None);
    assert_eq!(
        s.sequence(&sid, 2, 0, 0, ConnId(1), now).unwrap_err(),
        StateError::RetryUncachedRep
    );
    // Slots out of range.
    assert_eq!(
        s.sequence(&sid, 1, 8, 8, ConnId(1), now).unwrap_err(),
        StateError::BadSlot
    );
    assert_eq!(
        s.sequence(&sid, 1, 1, 8, ConnId(1), now).unwrap_err(),
        StateError::BadHighSlot
    );
    // A first request on slot 0 of a fresh slot must carry 1.
    assert_eq!(
        s.sequence(&sid, 5, 3, 3, ConnId(1), now).unwrap_err(),
        StateError::SeqMisordered
    );
    // A session that is gone.
    s.destroy_session(&sid).unwrap();
    assert_eq!(
        s.sequence(&sid, 3, 0, 0, ConnId(1), now).unwrap_err(),
        StateError::BadSession
    );
}

#[test]
fn the_backchannel_state_shows_in_the_status_flags() {
    let now = Instant::now();
    let mut s = new_state(now);
    let (c, sid) = client(&mut s, b"c", now);
    // Bound and being probed: not down.
    let q = s.sequence(&sid, 1, 0, 0, ConnId(1), now).unwrap();
    assert_eq!(q.status_flags, 0);
    s.finish(&sid, 0, None);
    assert_eq!(s.to_probe(ConnId(1)), vec![(sid, 0x4000_0000)]);
    s.probed(&sid, ConnId(1), false);
    let q = s.sequence(&sid, 2, 0, 0, ConnId(1), now).unwrap();
    assert_eq!(
        q.status_flags,
        SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION
    );
    s.finish(&sid, 0, None);
    // Rebound on a new connection and answering.
    s.bind_conn(&sid, true, true, ConnId(2), now).unwrap();
    s.probed(&sid, ConnId(2), true);
    let q = s.sequence(&sid, 3, 0, 0, ConnId(2), now).unwrap();
    assert_eq!(q.status_flags, 0);
    s.finish(&sid, 0, None);
    let bc = s.backchannel(c).unwrap();
    assert_eq!((bc.conn, bc.cb_program), (ConnId(2), 0x4000_0000));
    assert_eq!(s.cb_sequence(&bc.session), Some(1));
    assert_eq!(
        s.cb_sequence(&bc.session),
        Some(2),
        "CB_SEQUENCE ids advance"
    );
    // The connection goes: path down.
    s.conn_lost(ConnId(2));
    assert!(s.backchannel(c).is_none());
    let q = s.sequence(&sid, 4, 0, 0, ConnId(3), now).unwrap();
    assert_ne!(q.status_flags & SEQ4_STATUS_CB_PATH_DOWN, 0);
}

#[test]
fn stateids_old_bad_stale_and_current() {
    let now = Instant::now();
    let mut s = new_state(now);
    let (c, _) = client(&mut s, b"c", now);
    let (d, _) = client(&mut s, b"d", now);
    let o1 = open(&mut s, c, b"o", 1, ACCESS_READ, 0, now)
        .unwrap()
        .stateid;
    let o2 = open(&mut s, c, b"o", 1, ACCESS_WRITE, 0, now)
        .unwrap()
        .stateid;
    assert_eq!(o1.other, o2.other, "one stateid per owner and file");
    assert_eq!(o2.seqid, 2);
    // The older seqid is old; seqid 0 means the current one; a newer one
    // is bad; another client's is bad; another instance's is stale.
    assert_eq!(
        s.check_io(Some(c), &o1, &fh(1), false, now),
        Err(StateError::OldStateId)
    );
    s.check_io(Some(c), &StateId { seqid: 0, ..o2 }, &fh(1), true, now)
        .unwrap();
    let newer = StateId { seqid: 9, ..o2 };
    assert_eq!(
        s.check_io(Some(c), &newer, &fh(1), false, now),
        Err(StateError::BadStateId)
    );
    assert_eq!(
        s.check_io(Some(d), &o2, &fh(1), false, now),
        Err(StateError::BadStateId)
    );
    let mut stale = o2;
    stale.other[0] ^= 1;
    assert_eq!(
        s.check_io(Some(c), &stale, &fh(1), false, now),
        Err(StateError::StaleStateId)
    );
    // Against another file.
    assert_eq!(
        s.check_io(Some(c), &o2, &fh(2), false, now),
        Err(StateError::BadStateId)
    );
    // The bypass stateid reads, never writes.
    let bypass = StateId {
        seqid: u32::MAX,
        other: [0xff; 12],
    };
    s.check_io(Some(c), &bypass, &fh(1), false, now).unwrap();
    assert_eq!(
        s.check_io(Some(c), &bypass, &fh(1), true, now),
        Err(StateError::BadStateId)
    );
    assert_eq!(s.test_stateids(c, &[o2, o1, newer]), vec![0, 10024, 10025]);
}

#[test]
fn share_reservations() {
    let now = Instant::now();
    let mut s = new_state(now);
    let (c, _) = client(&mut s, b"c", now);
    let (d, _) = client(&mut s, b"d", now);
    // c reads and denies writers.
    let o = open(&mut s, c, b"o", 1, ACCESS_READ, ACCESS_WRITE, now)
        .unwrap()
        .stateid;
    assert_eq!(
        open(&mut s, d, b"p", 1, ACCESS_WRITE, 0, now),
        Err(StateError::ShareDenied)
    );
    assert_eq!(
        open(&mut s, d, b"p", 1, ACCESS_READ, ACCESS_READ, now),
        Err(StateError::ShareDenied)
    );
    open(&mut s, d, b"p", 1, ACCESS_READ, 0, now).unwrap();
    // Anonymous writes are refused where a deny is in force.
    assert_eq!(
        s.check_io(None, &StateId::ANONYMOUS, &fh(1), true, now),
        Err(StateError::Locked)
    );
    s.check_io(None, &StateId::ANONYMOUS, &fh(1), false, now)
        .unwrap();
    // A read-only open may not write.
    assert_eq!(
        s.check_io(Some(c), &o, &fh(1), true, now),
        Err(StateError::OpenMode)
    );
    // Downgrade: only to a subset.
    assert_eq!(
        s.open_downgrade(c, &o, &fh(1), ACCESS_BOTH, 0),
        Err(StateError::Inval)
    );
    let o = s.open_downgrade(c, &o, &fh(1), ACCESS_READ, 0).unwrap();
    open(&mut s, d, b"q", 1, ACCESS_WRITE, 0, now).unwrap();
    // Bad access bits.
    assert_eq!(open(&mut s, d, b"q", 1, 0, 0, now), Err(StateError::Inval));
    assert_eq!(open(&mut s, d, b"q", 1, 4, 0, now), Err(StateError::Inval));
    s.close(c, &o, &fh(1)).unwrap();
    assert_eq!(s.close(c, &o, &fh(1)), Err(StateError::BadStateId));
}

#[test]
fn byte_range_locks_between_clients() {
    let now = Instant::now();
    let mut s = new_state(now);
    let (c, _) = client(&mut s, b"c", now);
    let (d, _) = client(&mut s, b"d", now);
    let oc = open(&mut s, c, b"o", 1, ACCESS_BOTH, 0, now)
        .unwrap()
        .stateid;
    let od = open(&mut s, d, b"o", 1, ACCESS_BOTH, 0, now)
        .unwrap()
        .stateid;
    let lock = |client, locker, kind, offset, length| LockArgs {
        client,
        file: fh(1),
        kind,
        reclaim: false,
        offset,
        length,
        locker,
        blocking: true,
    };
    let lc = s
        .lock(
            &lock(
                c,
                Locker::New {
                    open: oc,
                    owner: b"lo".to_vec(),
                },
                LockKind::Write,
                0,
                100,
            ),
            now,
        )
        .unwrap()
        .unwrap();
    // d conflicts: denied with c's range and owner.
    let denied = s
        .lock(
            &lock(
                d,
                Locker::New {
                    open: od,
                    owner: b"lo".to_vec(),
                },
                LockKind::Read,
                50,
                10,
            ),
            now,
        )
        .unwrap()
        .unwrap_err();
    assert_eq!(
        (denied.offset, denied.length, denied.kind),
        (0, 100, LockKind::Write)
    );
    assert_eq!(
        (denied.owner.client, &denied.owner.owner[..]),
        (c, &b"lo"[..])
    );
    assert_eq!(
        s.lockt(d, b"lo", &fh(1), LockKind::Read, 99, 1)
            .unwrap()
            .map(|x| x.offset),
        Some(0)
    );
    assert!(s
        .lockt(d, b"lo", &fh(1), LockKind::Read, 100, u64::MAX)
        .unwrap()
        .is_none());
    // Bad ranges.
    assert_eq!(
        s.lock(&lock(c, Locker::Existing(lc), LockKind::Read, 5, 0), now)
            .unwrap_err(),
        StateError::Inval
    );
    assert_eq!(
        s.lock(
            &lock(c, Locker::Existing(lc), LockKind::Read, u64::MAX, 2),
            now
        )
        .unwrap_err(),
        StateError::Inval
    );
    // CLOSE while locked; LOCKU; FREE_STATEID.
    assert_eq!(s.close(c, &oc, &fh(1)), Err(StateError::LocksHeld));
    assert_eq!(s.free_stateid(c, &lc), Err(StateError::LocksHeld));
    assert!(s.take_notifies().is_empty());
    let lc = s
        .locku(c, &StateId { seqid: 0, ..lc }, &fh(1), 0, u64::MAX)
        .unwrap();
    // d waited (its blocking lock was denied): it is told, once.
    let n = s.take_notifies();
    assert_eq!(n.len(), 1, "{n:?}");
    assert_eq!((n[0].owner.client, &n[0].owner.owner[..]), (d, &b"lo"[..]));
    assert_eq!(n[0].file, fh(1));
    assert!(s.take_notifies().is_empty());
    // Now d gets its lock.
    s.lock(
        &lock(
            d,
            Locker::New {
                open: od,
                owner: b"lo".to_vec(),
            },
            LockKind::Read,
            50,
            10,
        ),
        now,
    )
    .unwrap()
    .unwrap();
    s.free_stateid(c, &lc).unwrap();
    s.close(c, &oc, &fh(1)).unwrap();
}

#[test]
fn delegations_are_recalled_then_returned_or_revoked() {
    let t0 = Instant::now();
    let mut s = new_state(t0);
    let (c, sc) = client(&mut s, b"c", t0);
    let (d, _) = client(&mut s, b"d", t0);
    // No delegation while the backchannel is unproven.
    assert!(open(&mut s, c, b"o", 1, ACCESS_READ, 0, t0)
        .unwrap()
        .deleg
        .is_none());
    s.probed(&sc, ConnId(1), true);
    let got = open(&mut s, c, b"o", 2, ACCESS_READ, 0, t0).unwrap();
    let deleg = got.deleg.expect("a read delegation");
    // Nothing to recall for readers.
    open(&mut s, d, b"p", 2, ACCESS_READ, 0, t0).unwrap();
    assert!(s.take_recalls().is_empty());
    // A writer: DELAY, and one recall queued (not two for a retry).
    assert_eq!(
        open(&mut s, d, b"p", 2, ACCESS_WRITE, 0, t0),
        Err(StateError::Delay)
    );
    assert_eq!(
        open(&mut s, d, b"p", 2, ACCESS_WRITE, 0, t0),
        Err(StateError::Delay)
    );
    let r = s.take_recalls();
    assert_eq!(r.len(), 1);
    assert_eq!(
        (r[0].client, r[0].stateid, r[0].file.clone()),
        (c, deleg, fh(2))
    );
    // NFSv3 writing is held too.
    assert_eq!(s.outside_change(&fh(2), t0), Err(StateError::Delay));
    // Returned: the writer gets in.
    s.delegreturn(c, &deleg, &fh(2)).unwrap();
    open(&mut s, d, b"p", 2, ACCESS_WRITE, 0, t0).unwrap();
    s.outside_change(&fh(2), t0).unwrap();
    // A file recalled lately gets no new delegation.
    assert!(open(&mut s, c, b"o", 2, ACCESS_READ, 0, t0)
        .unwrap()
        .deleg
        .is_none());

    // Another delegation, never returned: revoked a lease after the
    // recall, and the client is told.
    let deleg = open(&mut s, c, b"o", 3, ACCESS_READ, 0, t0)
        .unwrap()
        .deleg
        .unwrap();
    assert_eq!(s.outside_change(&fh(3), t0), Err(StateError::Delay));
    let t1 = t0 + LEASE + Duration::from_secs(1);
    s.sequence(&sc, 1, 0, 0, ConnId(1), t1).unwrap();
    s.finish(&sc, 0, None);
    s.tick(t1);
    s.outside_change(&fh(3), t1).unwrap();
    let q = s.sequence(&sc, 2, 0, 0, ConnId(1), t1).unwrap();
    assert_ne!(q.status_flags & SEQ4_STATUS_RECALLABLE_STATE_REVOKED, 0);
    s.finish(&sc, 0, None);
    assert_eq!(
        s.delegreturn(c, &deleg, &fh(3)),
        Err(StateError::DelegRevoked)
    );
    let q = s.sequence(&sc, 3, 0, 0, ConnId(1), t1).unwrap();
    assert_eq!(q.status_flags & SEQ4_STATUS_RECALLABLE_STATE_REVOKED, 0);
}

#[test]
fn leases_expire_and_take_the_state_with_them() {
    let t0 = Instant::now();
    let mut s = new_state(t0);
    let (c, sc) = client(&mut s, b"c", t0);
    let (d, sd) = client(&mut s, b"d", t0);
    open(&mut s, c, b"o", 1, ACCESS_BOTH, ACCESS_BOTH, t0).unwrap();
    open(&mut s, d, b"o", 2, ACCESS_READ, 0, t0).unwrap();
    // d renews halfway; c does not.
    let half = t0 + LEASE / 2;
    s.sequence(&sd, 1, 0, 0, ConnId(1), half).unwrap();
    s.finish(&sd, 0, None);
    let gone = s.tick(t0 + LEASE + Duration::from_secs(1));
    assert_eq!(gone, vec![c]);
    assert_eq!(s.state_count(), 1);
    assert_eq!(
        s.sequence(&sc, 1, 0, 0, ConnId(1), half).unwrap_err(),
        StateError::BadSession
    );
    // c's share reservation is gone with it.
    open(&mut s, d, b"o", 1, ACCESS_BOTH, 0, half).unwrap();
    let recorded = s.take_records().expect("the records changed");
    assert_eq!(recorded, vec![b"d".to_vec()]);
    assert!(s.take_records().is_none());
}

#[test]
fn grace_after_a_restart() {
    let t0 = Instant::now();
    let mut cfg = Config::default();
    cfg.grace = Duration::from_secs(30);
    let mut s = State::<&str>::new(
        cfg,
        0x6000_0002,
        t0,
        vec![b"old-a".to_vec(), b"old-b".to_vec()],
    );
    assert!(s.in_grace(t0));
    let (a, _) = client(&mut s, b"old-a", t0);
    let (n, _) = client(&mut s, b"new", t0);
    let reclaim = |client| OpenArgs {
        client,
        owner: b"o".to_vec(),
        file: fh(1),
        access: ACCESS_READ,
        deny: 0,
        claim: Claim::Previous,
        want_deleg: false,
    };
    // Non-reclaim opens wait; reclaims by a previous client go through.
    assert_eq!(
        open(&mut s, n, b"o", 1, ACCESS_READ, 0, t0),
        Err(StateError::Grace)
    );
    assert_eq!(s.open(&reclaim(n), t0), Err(StateError::NoGrace));
    let o = s.open(&reclaim(a), t0).unwrap().stateid;
    let relock = LockArgs {
        client: a,
        file: fh(1),
        kind: LockKind::Read,
        reclaim: true,
        offset: 0,
        length: 10,
        locker: Locker::New {
            open: o,
            owner: b"l".to_vec(),
        },
        blocking: false,
    };
    s.lock(&relock, t0).unwrap().unwrap();
    // The previous clients stay recorded until they complete.
    let rec = s.take_records().unwrap();
    assert!(rec.contains(&b"old-b".to_vec()) && rec.contains(&b"new".to_vec()));
    s.reclaim_complete(a).unwrap();
    assert_eq!(s.reclaim_complete(a), Err(StateError::CompleteAlready));
    assert_eq!(s.open(&reclaim(a), t0), Err(StateError::NoGrace));
    assert!(s.in_grace(t0), "old-b has not completed");
    // The grace period ends with its time.
    let t1 = t0 + Duration::from_secs(31);
    s.tick(t1);
    assert!(!s.in_grace(t1));
    open(&mut s, n, b"o", 1, ACCESS_READ, 0, t1).unwrap();
    // With nobody to wait for there is no grace period at all.
    let s2 = State::<&str>::new(Config::default(), 1, t0, Vec::new());
    assert!(!s2.in_grace(t0));
}

#[test]
fn state_is_bounded() {
    let now = Instant::now();
    let mut cfg = Config::default();
    cfg.max_clients = 2;
    cfg.max_states = 3;
    cfg.max_sessions = 1;
    let mut s = State::<&str>::new(cfg, 7, now, Vec::new());
    let (c, _) = client(&mut s, b"c", now);
    exchange(&mut s, b"d", 1, now);
    assert_eq!(
        s.exchange_id(
            Exchange {
                owner: b"e".to_vec(),
                verifier: [1; 8],
                principal: 0,
                update: false
            },
            now
        ),
        Err(StateError::TooMuchState)
    );
    for f in 0..3 {
        open(&mut s, c, b"o", f, ACCESS_READ, 0, now).unwrap();
    }
    assert_eq!(
        open(&mut s, c, b"o", 9, ACCESS_READ, 0, now),
        Err(StateError::TooMuchState)
    );
    // A second session for c is over its limit.
    let x = exchange(&mut s, b"c", 1, now);
    assert_eq!(
        s.create_session(
            CreateSession {
                client: c,
                sequence: x.sequenceid,
                back_channel: false,
                fore: attrs(1),
                back: attrs(1),
                cb_program: 0
            },
            ConnId(1),
            now
        ),
        Err(StateError::TooMuchState)
    );
    s.destroy_clientid(c).unwrap_err();
}

#[test]
fn the_end_of_a_grace_period_is_reported_once_with_what_was_reclaimed() {
    let t0 = Instant::now();
    let mut s = State::<&str>::new(
        Config::default(),
        9,
        t0,
        vec![b"back".to_vec(), b"gone".to_vec()],
    );
    let (c, _) = client(&mut s, b"back", t0);
    let args = OpenArgs {
        client: c,
        owner: b"o".to_vec(),
        file: fh(1),
        access: ACCESS_READ,
        deny: 0,
        claim: Claim::Previous,
        want_deleg: true,
    };
    let o = s.open(&args, t0).unwrap();
    assert!(o.deleg.is_none(), "no delegation for a reclaim");
    assert_eq!(s.grace_ended(), None);
    s.reclaim_complete(c).unwrap();
    assert_eq!(s.grace_ended(), None, "\"gone\" may still come back");
    s.tick(t0 + Duration::from_secs(91));
    assert_eq!(s.grace_ended(), Some((1, 2, 1)));
    assert_eq!(s.grace_ended(), None);
}

#[test]
fn the_reply_cache_is_bounded_over_all_sessions() {
    let now = Instant::now();
    let mut cfg = Config::default();
    cfg.max_cached_total = 10;
    let mut s = State::<&str>::new(cfg, 3, now, Vec::new());
    let (_, a) = client(&mut s, b"a", now);
    let (_, b) = client(&mut s, b"b", now);
    s.sequence(&a, 1, 0, 0, ConnId(1), now).unwrap();
    s.finish(&a, 0, Some("123456"));
    assert_eq!(s.cached_bytes(), 6);
    // Another session's 6 octets would pass the 10: not kept.
    s.sequence(&b, 1, 0, 0, ConnId(2), now).unwrap();
    s.finish(&b, 0, Some("abcdef"));
    assert_eq!(s.cached_bytes(), 6);
    assert_eq!(
        s.sequence(&b, 1, 0, 0, ConnId(2), now).unwrap_err(),
        StateError::RetryUncachedRep
    );
    // A slot's next reply replaces its last one in the count.
    s.sequence(&a, 2, 0, 0, ConnId(1), now).unwrap();
    s.finish(&a, 0, Some("12"));
    assert_eq!(s.cached_bytes(), 2);
    // A session that goes gives its cache back.
    s.destroy_session(&a).unwrap();
    assert_eq!(s.cached_bytes(), 0);
}

#[test]
fn states_are_bounded_over_all_clients() {
    let now = Instant::now();
    let mut cfg = Config::default();
    cfg.max_states_total = 2;
    let mut s = State::<&str>::new(cfg, 4, now, Vec::new());
    let (a, _) = client(&mut s, b"a", now);
    let (b, _) = client(&mut s, b"b", now);
    open(&mut s, a, b"o", 1, ACCESS_READ, 0, now).unwrap();
    open(&mut s, b, b"o", 2, ACCESS_READ, 0, now).unwrap();
    assert_eq!(
        open(&mut s, b, b"o", 3, ACCESS_READ, 0, now),
        Err(StateError::TooMuchState)
    );
}
