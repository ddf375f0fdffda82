//! NFSv4.1 against `rpcrdma nfs serve` (the binary), over TCP and over
//! RPC-over-RDMA (software iWARP), with COMPOUNDs built from the generated
//! types: a client's whole life (EXCHANGE_ID, CREATE_SESSION with a
//! backchannel, SEQUENCE, files and directories, locks, DESTROY_SESSION,
//! DESTROY_CLIENTID), exactly-once semantics (a retransmission gets the
//! cached reply), the errors of a malformed or misplaced COMPOUND, and a
//! delegation recalled through the backchannel (over RDMA: an RFC 8167
//! reverse-direction CB_RECALL on the holder's own connection) when
//! another client opens the file for writing.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use rpcrdma_engine::EngineConfig;
use rpcrdma_nfs4::compound::{CompoundArgs, Op};
use rpcrdma_nfs4::proto::nfs4 as p;
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{CallHints, Client, ClientConfig, ProcError, Services};
use rpcrdma_softiwarp::SoftIwarp;
use rpcrdma_transport::RdmaConnector;

mod common;
use common::{local, NfsServed as Served};

use p::NfsArgop4 as A;
use p::NfsResop4 as R;
use p::Nfsstat4 as S;

/// What the test client's callback service saw.
#[derive(Default)]
struct Seen {
    nulls: usize,
    recalls: Vec<p::CbRecall4args>,
    notifies: Vec<p::CbNotifyLock4args>,
}

/// The callback program (NFS4_CALLBACK version 1) of a test client.
fn callbacks(seen: Arc<Mutex<Seen>>) -> Services {
    let mut s = Services::new();
    let a = seen.clone();
    let v = s.program(0x4000_0000, 1);
    v.proc(0, move |_, ()| {
        a.lock().unwrap().nulls += 1;
        async { Ok::<_, ProcError>(()) }
    });
    v.proc(1, move |_, args: p::CbCompound4args| {
        let mut res = Vec::new();
        for op in &args.argarray {
            match op {
                p::NfsCbArgop4::OpCbSequence(q) => res.push(p::NfsCbResop4::OpCbSequence(
                    p::CbSequence4res::Nfs4Ok(p::CbSequence4resok {
                        csr_sessionid: q.csa_sessionid,
                        csr_sequenceid: q.csa_sequenceid,
                        csr_slotid: q.csa_slotid,
                        csr_highest_slotid: q.csa_highest_slotid,
                        csr_target_highest_slotid: q.csa_highest_slotid,
                    }),
                )),
                p::NfsCbArgop4::OpCbRecall(r) => {
                    seen.lock().unwrap().recalls.push(r.clone());
                    res.push(p::NfsCbResop4::OpCbRecall(p::CbRecall4res {
                        status: S::Nfs4Ok,
                    }))
                }
                p::NfsCbArgop4::OpCbNotifyLock(n) => {
                    seen.lock().unwrap().notifies.push(n.clone());
                    res.push(p::NfsCbResop4::OpCbNotifyLock(p::CbNotifyLock4res {
                        cnlr_status: S::Nfs4Ok,
                    }))
                }
                _ => {}
            }
        }
        async move {
            Ok::<_, ProcError>(p::CbCompound4res {
                status: S::Nfs4Ok,
                tag: args.tag,
                resarray: res,
            })
        }
    });
    s
}

/// A minimal NFSv4.1 client: a session and its slot 0.
struct V4 {
    rpc: Client,
    client: u64,
    session: [u8; 16],
    seq: u32,
}

async fn connect(addr: SocketAddr, rdma: bool, services: Option<Services>) -> Client {
    let mut cfg = ClientConfig::default();
    cfg.timeout = Duration::from_secs(20);
    cfg.max_retransmits = 0;
    if let Some(s) = services {
        cfg.services = Arc::new(s);
    }
    if rdma {
        let connector = RdmaConnector::new(SoftIwarp::new(), addr, EngineConfig::client());
        Client::connect(connector, cfg).await.unwrap()
    } else {
        Client::connect(TcpConnector::new(addr), cfg).await.unwrap()
    }
}

fn attrs(slots: u32) -> p::ChannelAttrs4 {
    p::ChannelAttrs4 {
        ca_headerpadsize: 0,
        ca_maxrequestsize: 1 << 20,
        ca_maxresponsesize: 1 << 20,
        ca_maxresponsesize_cached: 8192,
        ca_maxoperations: 16,
        ca_maxrequests: slots,
        ca_rdma_ird: Vec::new(),
    }
}

/// A COMPOUND as raw operations (no session).
async fn compound(rpc: &Client, ops: Vec<A>) -> p::Compound4res {
    compound_v(rpc, 1, ops).await
}

async fn compound_v(rpc: &Client, minor: u32, ops: Vec<A>) -> p::Compound4res {
    let args = CompoundArgs {
        tag: Bytes::from_static(b"test"),
        minorversion: minor,
        count: ops.len() as u32,
        ops: ops.into_iter().map(Op::Arg).collect(),
    };
    rpc.call(100_003, 4, 1, &args, &CallHints::new())
        .await
        .unwrap()
}

impl V4 {
    /// EXCHANGE_ID and CREATE_SESSION (with a backchannel).
    async fn new(rpc: Client, owner: &[u8]) -> Self {
        let r = compound(
            &rpc,
            vec![A::OpExchangeId(p::ExchangeId4args {
                eia_clientowner: p::ClientOwner4 {
                    co_verifier: [7; 8],
                    co_ownerid: Bytes::copy_from_slice(owner),
                },
                eia_flags: 0,
                eia_state_protect: p::StateProtect4A::Sp4None,
                eia_client_impl_id: Vec::new(),
            })],
        )
        .await;
        let R::OpExchangeId(p::ExchangeId4res::Nfs4Ok(x)) = &r.resarray[0] else {
            panic!("EXCHANGE_ID: {r:?}")
        };
        assert_ne!(x.eir_flags & p::EXCHGID4_FLAG_USE_NON_PNFS, 0);
        let r = compound(
            &rpc,
            vec![A::OpCreateSession(p::CreateSession4args {
                csa_clientid: x.eir_clientid,
                csa_sequence: x.eir_sequenceid,
                csa_flags: p::CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
                csa_fore_chan_attrs: attrs(4),
                csa_back_chan_attrs: attrs(1),
                csa_cb_program: 0x4000_0000,
                csa_sec_parms: vec![p::CallbackSecParms4::AuthNone],
            })],
        )
        .await;
        let R::OpCreateSession(p::CreateSession4res::Nfs4Ok(c)) = &r.resarray[0] else {
            panic!("CREATE_SESSION: {r:?}")
        };
        assert_eq!(c.csr_flags, p::CREATE_SESSION4_FLAG_CONN_BACK_CHAN);
        Self {
            rpc,
            client: x.eir_clientid,
            session: c.csr_sessionid,
            seq: 0,
        }
    }

    fn sequence(&self, seq: u32, cache: bool) -> A {
        A::OpSequence(p::Sequence4args {
            sa_sessionid: self.session,
            sa_sequenceid: seq,
            sa_slotid: 0,
            sa_highest_slotid: 0,
            sa_cachethis: cache,
        })
    }

    /// SEQUENCE (slot 0, the next sequence id) and `ops`.
    async fn run(&mut self, ops: Vec<A>) -> p::Compound4res {
        self.seq += 1;
        let mut all = vec![self.sequence(self.seq, false)];
        all.extend(ops);
        compound(&self.rpc, all).await
    }

    /// Like `run`, expecting success; the results after SEQUENCE.
    async fn ok(&mut self, ops: Vec<A>) -> Vec<R> {
        let r = self.run(ops).await;
        assert_eq!(r.status, S::Nfs4Ok, "{r:?}");
        r.resarray.into_iter().skip(1).collect()
    }

    fn owner(&self, name: &[u8]) -> p::StateOwner4 {
        p::StateOwner4 {
            clientid: self.client,
            owner: Bytes::copy_from_slice(name),
        }
    }

    fn open(&self, name: &str, access: u32, create: bool) -> A {
        A::OpOpen(p::Open4args {
            seqid: 0,
            share_access: access,
            share_deny: 0,
            owner: self.owner(b"open-owner"),
            openhow: if create {
                p::Openflag4::Open4Create(p::Createhow4::Unchecked4(p::Fattr4 {
                    attrmask: vec![0, 1 << (p::FATTR4_MODE - 32)],
                    attr_vals: Bytes::from_static(&[0, 0, 1, 0xa4]),
                }))
            } else {
                p::Openflag4::Default(p::Opentype4::Open4Nocreate)
            },
            claim: p::OpenClaim4::ClaimNull(Bytes::copy_from_slice(name.as_bytes())),
        })
    }
}

fn stateid_of(r: &R) -> p::Stateid4 {
    match r {
        R::OpOpen(p::Open4res::Nfs4Ok(o)) => o.stateid,
        other => panic!("not an open: {other:?}"),
    }
}

const CURRENT: p::Stateid4 = p::Stateid4 {
    seqid: 1,
    other: [0; 12],
};

/// A client's life and the errors a hostile one gets.
async fn life(s: &Served, rdma: bool) {
    let label = if rdma { "rdma" } else { "tcp" };
    let addr = local(if rdma { s.rdma } else { s.tcp });
    let rpc = connect(addr, rdma, None).await;
    let mut c = V4::new(rpc, format!("life-{label}").as_bytes()).await;
    // The root and its attributes.
    let mut req = [0u32; 2];
    for n in [
        p::FATTR4_TYPE,
        p::FATTR4_SIZE,
        p::FATTR4_FILEID,
        p::FATTR4_SUPPORTED_ATTRS,
        p::FATTR4_OWNER,
    ] {
        req[(n / 32) as usize] |= 1 << (n % 32);
    }
    let r = c
        .ok(vec![
            A::OpPutrootfh,
            A::OpGetfh,
            A::OpGetattr(p::Getattr4args {
                attr_request: req.to_vec(),
            }),
        ])
        .await;
    let R::OpGetfh(p::Getfh4res::Nfs4Ok(root)) = &r[1] else {
        panic!("{r:?}")
    };
    let root = root.object.clone();
    let R::OpGetattr(p::Getattr4res::Nfs4Ok(g)) = &r[2] else {
        panic!("{r:?}")
    };
    assert_eq!(g.obj_attributes.attrmask, req.to_vec());
    // A file: created, written, read back, closed.
    let name = format!("v4-{label}");
    let data = Bytes::from(vec![0x42u8; 200_000]);
    let r = c
        .ok(vec![
            A::OpPutfh(p::Putfh4args {
                object: root.clone(),
            }),
            c.open(&name, p::OPEN4_SHARE_ACCESS_BOTH, true),
            A::OpWrite(p::Write4args {
                stateid: CURRENT,
                offset: 0,
                stable: p::StableHow4::FileSync4,
                data: data.clone(),
            }),
            A::OpClose(p::Close4args {
                seqid: 0,
                open_stateid: CURRENT,
            }),
        ])
        .await;
    let R::OpWrite(p::Write4res::Nfs4Ok(w)) = &r[2] else {
        panic!("{r:?}")
    };
    assert_eq!(w.count, 200_000);
    assert_eq!(std::fs::read(s.export().join(&name)).unwrap(), data);
    let r = c
        .ok(vec![
            A::OpPutfh(p::Putfh4args {
                object: root.clone(),
            }),
            c.open(&name, p::OPEN4_SHARE_ACCESS_READ, false),
            A::OpRead(p::Read4args {
                stateid: CURRENT,
                offset: 100_000,
                count: 1 << 20,
            }),
        ])
        .await;
    let open = stateid_of(&r[1]);
    let R::OpRead(p::Read4res::Nfs4Ok(rd)) = &r[2] else {
        panic!("{r:?}")
    };
    assert!(rd.eof);
    assert_eq!(&rd.data[..], &data[100_000..]);
    // A directory, a file renamed into it, a listing, removals.
    let dir = format!("dir-{label}");
    let mv = format!("mv-{label}");
    let putroot = A::OpPutfh(p::Putfh4args {
        object: root.clone(),
    });
    c.ok(vec![
        putroot.clone(),
        A::OpCreate(p::Create4args {
            objtype: p::Createtype4::Nf4dir,
            objname: Bytes::from(dir.clone()),
            createattrs: p::Fattr4 {
                attrmask: Vec::new(),
                attr_vals: Bytes::new(),
            },
        }),
    ])
    .await;
    c.ok(vec![
        putroot.clone(),
        c.open(&mv, p::OPEN4_SHARE_ACCESS_WRITE, true),
        A::OpClose(p::Close4args {
            seqid: 0,
            open_stateid: CURRENT,
        }),
    ])
    .await;
    c.ok(vec![
        putroot.clone(),
        A::OpSavefh,
        A::OpLookup(p::Lookup4args {
            objname: Bytes::from(dir.clone()),
        }),
        A::OpRename(p::Rename4args {
            oldname: Bytes::from(mv.clone()),
            newname: Bytes::from_static(b"moved"),
        }),
    ])
    .await;
    assert!(s.export().join(&dir).join("moved").is_file());
    let r = c
        .ok(vec![
            putroot.clone(),
            A::OpLookup(p::Lookup4args {
                objname: Bytes::from(dir.clone()),
            }),
            A::OpReaddir(p::Readdir4args {
                cookie: 0,
                cookieverf: [0; 8],
                dircount: 4096,
                maxcount: 8192,
                attr_request: vec![1 << p::FATTR4_TYPE, 1 << (p::FATTR4_MODE - 32)],
            }),
        ])
        .await;
    let R::OpReaddir(p::Readdir4res::Nfs4Ok(rd)) = &r[2] else {
        panic!("{r:?}")
    };
    assert!(rd.reply.eof);
    let e = rd.reply.entries.as_ref().expect("one entry");
    assert_eq!(&e.name[..], b"moved");
    assert!(e.nextentry.is_none(), "no `.` or `..`");
    assert_eq!(
        e.attrs.attrmask,
        vec![1 << p::FATTR4_TYPE, 1 << (p::FATTR4_MODE - 32)]
    );
    c.ok(vec![
        putroot.clone(),
        A::OpLookup(p::Lookup4args {
            objname: Bytes::from(dir.clone()),
        }),
        A::OpRemove(p::Remove4args {
            target: Bytes::from_static(b"moved"),
        }),
        A::OpLookupp,
        A::OpRemove(p::Remove4args {
            target: Bytes::from(dir.clone()),
        }),
    ])
    .await;
    assert!(!s.export().join(&dir).exists());
    // A lock, a conflicting test from another owner, an unlock.
    let r = c
        .ok(vec![
            A::OpPutfh(p::Putfh4args {
                object: root.clone(),
            }),
            A::OpLookup(p::Lookup4args {
                objname: Bytes::from(name.clone()),
            }),
            A::OpLock(p::Lock4args {
                locktype: p::NfsLockType4::ReadLt,
                reclaim: false,
                offset: 0,
                length: 100,
                locker: p::Locker4::True(p::OpenToLockOwner4 {
                    open_seqid: 0,
                    open_stateid: open,
                    lock_seqid: 0,
                    lock_owner: c.owner(b"locker"),
                }),
            }),
        ])
        .await;
    let R::OpLock(p::Lock4res::Nfs4Ok(l)) = &r[2] else {
        panic!("{r:?}")
    };
    let lock_id = l.lock_stateid;
    let r = c
        .run(vec![
            A::OpPutfh(p::Putfh4args {
                object: root.clone(),
            }),
            A::OpLookup(p::Lookup4args {
                objname: Bytes::from(name.clone()),
            }),
            A::OpLockt(p::Lockt4args {
                locktype: p::NfsLockType4::WriteLt,
                offset: 50,
                length: 1,
                owner: c.owner(b"another"),
            }),
        ])
        .await;
    assert_eq!(r.status, S::Nfs4errDenied, "{r:?}");
    let R::OpLockt(p::Lockt4res::Nfs4errDenied(d)) = &r.resarray[3] else {
        panic!("{r:?}")
    };
    assert_eq!(
        (d.offset, d.length, &d.owner.owner[..]),
        (0, 100, &b"locker"[..])
    );
    // CLOSE with the lock held: NFS4ERR_LOCKS_HELD; after LOCKU, fine.
    let lookup = |n: &str| {
        vec![
            A::OpPutfh(p::Putfh4args {
                object: root.clone(),
            }),
            A::OpLookup(p::Lookup4args {
                objname: Bytes::from(n.to_owned()),
            }),
        ]
    };
    let mut ops = lookup(&name);
    ops.push(A::OpClose(p::Close4args {
        seqid: 0,
        open_stateid: open,
    }));
    assert_eq!(c.run(ops).await.status, S::Nfs4errLocksHeld);
    let mut ops = lookup(&name);
    ops.push(A::OpLocku(p::Locku4args {
        locktype: p::NfsLockType4::ReadLt,
        seqid: 0,
        lock_stateid: lock_id,
        offset: 0,
        length: u64::MAX,
    }));
    ops.push(A::OpClose(p::Close4args {
        seqid: 0,
        open_stateid: open,
    }));
    c.ok(ops).await;

    // Exactly once: the same slot and sequence id again get the cached
    // reply, and the REMOVE is not run twice.
    c.seq += 1;
    let again = vec![
        c.sequence(c.seq, true),
        A::OpPutfh(p::Putfh4args {
            object: root.clone(),
        }),
        A::OpRemove(p::Remove4args {
            target: Bytes::from(name.clone()),
        }),
    ];
    let first = compound(&c.rpc, again.clone()).await;
    assert_eq!(first.status, S::Nfs4Ok, "{first:?}");
    let second = compound(&c.rpc, again.clone()).await;
    assert_eq!(second, first, "a retransmission is answered from the slot");
    // Misordered: the one before, and one ahead.
    for seq in [c.seq - 1, c.seq + 2] {
        let r = compound(&c.rpc, vec![c.sequence(seq, false), A::OpPutrootfh]).await;
        assert_eq!(r.status, S::Nfs4errSeqMisordered, "seq {seq}: {r:?}");
    }

    // A write-only attribute asked for (RFC 8881 §5.5).
    let r = c
        .run(vec![
            A::OpPutrootfh,
            A::OpGetattr(p::Getattr4args {
                attr_request: vec![0, 1 << (p::FATTR4_TIME_MODIFY_SET - 32)],
            }),
        ])
        .await;
    assert_eq!(r.status, S::Nfs4errInval, "{r:?}");

    // Malformed and misplaced COMPOUNDs.
    let r = compound(&c.rpc, vec![A::OpPutrootfh, A::OpGetfh]).await;
    assert_eq!(r.status, S::Nfs4errOpNotInSession);
    let r = c.run(vec![A::OpPutrootfh, c.sequence(99, false)]).await;
    assert_eq!(r.status, S::Nfs4errSequencePos);
    let many = (0..20).map(|_| A::OpPutrootfh).collect();
    let r = c.run(many).await;
    assert_eq!(r.status, S::Nfs4errTooManyOps);
    c.seq -= 1; // that SEQUENCE did not take the slot
    let r = c
        .run(vec![
            A::OpPutrootfh,
            A::OpRead(p::Read4args {
                stateid: p::Stateid4 {
                    seqid: 1,
                    other: [9; 12],
                },
                offset: 0,
                count: 10,
            }),
        ])
        .await;
    assert_eq!(r.status, S::Nfs4errIsdir, "{r:?}");
    let r = compound(
        &c.rpc,
        vec![
            A::OpExchangeId(p::ExchangeId4args {
                eia_clientowner: p::ClientOwner4 {
                    co_verifier: [1; 8],
                    co_ownerid: Bytes::from_static(b"x"),
                },
                eia_flags: 0,
                eia_state_protect: p::StateProtect4A::Sp4None,
                eia_client_impl_id: Vec::new(),
            }),
            A::OpPutrootfh,
        ],
    )
    .await;
    assert_eq!(r.status, S::Nfs4errNotOnlyOp);
    let r = compound_v(&c.rpc, 0, vec![A::OpPutrootfh]).await;
    assert_eq!(r.status, S::Nfs4errMinorVersMismatch);
    assert!(r.resarray.is_empty());
    // An operation number that is not one: OP_ILLEGAL, raw bytes.
    let mut raw = vec![0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2];
    raw.extend_from_slice(&53u32.to_be_bytes()); // SEQUENCE
    raw.extend_from_slice(&c.session);
    c.seq += 1;
    raw.extend_from_slice(&c.seq.to_be_bytes());
    raw.extend_from_slice(&[0; 8]); // slot 0, highest 0
    raw.extend_from_slice(&[0, 0, 0, 0]); // no cache
    raw.extend_from_slice(&9999u32.to_be_bytes());
    let r: p::Compound4res = c
        .rpc
        .call(100_003, 4, 1, &common::Raw(raw), &CallHints::new())
        .await
        .unwrap();
    assert_eq!(r.status, S::Nfs4errOpIllegal, "{r:?}");
    assert!(matches!(r.resarray[1], R::OpIllegal(_)));
    // A stale client ID.
    let r = compound(
        &c.rpc,
        vec![A::OpCreateSession(p::CreateSession4args {
            csa_clientid: 0x1234,
            csa_sequence: 1,
            csa_flags: 0,
            csa_fore_chan_attrs: attrs(1),
            csa_back_chan_attrs: attrs(1),
            csa_cb_program: 0,
            csa_sec_parms: vec![p::CallbackSecParms4::AuthNone],
        })],
    )
    .await;
    assert_eq!(r.status, S::Nfs4errStaleClientid);
    // The end of a client.
    let r = compound(
        &c.rpc,
        vec![A::OpDestroyClientid(p::DestroyClientid4args {
            dca_clientid: c.client,
        })],
    )
    .await;
    assert_eq!(r.status, S::Nfs4errClientidBusy);
    let r = compound(
        &c.rpc,
        vec![A::OpDestroySession(p::DestroySession4args {
            dsa_sessionid: c.session,
        })],
    )
    .await;
    assert_eq!(r.status, S::Nfs4Ok);
    let r = compound(
        &c.rpc,
        vec![A::OpDestroyClientid(p::DestroyClientid4args {
            dca_clientid: c.client,
        })],
    )
    .await;
    assert_eq!(r.status, S::Nfs4Ok);
    let r = c.run(vec![A::OpPutrootfh]).await;
    assert_eq!(r.status, S::Nfs4errBadsession);
}

/// A read delegation recalled when another client opens for writing.
async fn recall(s: &Served, rdma: bool) {
    let label = if rdma { "rdma" } else { "tcp" };
    let addr = local(if rdma { s.rdma } else { s.tcp });
    let seen = Arc::new(Mutex::new(Seen::default()));
    let rpc = connect(addr, rdma, Some(callbacks(seen.clone()))).await;
    let mut holder = V4::new(rpc, format!("holder-{label}").as_bytes()).await;
    let rpc = connect(addr, rdma, None).await;
    let mut writer = V4::new(rpc, format!("writer-{label}").as_bytes()).await;
    let name = format!("delegated-{label}");
    std::fs::write(s.export().join(&name), b"before").unwrap();
    std::fs::set_permissions(
        s.export().join(&name),
        std::os::unix::fs::PermissionsExt::from_mode(0o666),
    )
    .unwrap();
    // The probe of the holder's backchannel (CB_NULL) comes first.
    for _ in 0..200 {
        if seen.lock().unwrap().nulls > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        seen.lock().unwrap().nulls,
        1,
        "{label}: the backchannel was probed"
    );
    let r = holder.run(vec![A::OpPutrootfh]).await;
    let R::OpSequence(p::Sequence4res::Nfs4Ok(q)) = &r.resarray[0] else {
        panic!("{r:?}")
    };
    assert_eq!(q.sr_status_flags, 0, "{label}: the backchannel is up");
    // The server grants a delegation once the probe's reply is back, which
    // may come a moment after our handler saw the CB_NULL (SEQUENCE's
    // flags are clear while the probe is on its way): an OPEN before that
    // is answered without one, and is sent again (the same owner opening
    // the same way only moves its open's seqid).
    let mut granted = None;
    for _ in 0..200 {
        let r = holder
            .ok(vec![
                A::OpPutrootfh,
                holder.open(&name, p::OPEN4_SHARE_ACCESS_READ, false),
            ])
            .await;
        let R::OpOpen(p::Open4res::Nfs4Ok(o)) = &r[1] else {
            panic!("{r:?}")
        };
        if let p::OpenDelegation4::OpenDelegateRead(d) = &o.delegation {
            granted = Some(d.clone());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let Some(d) = granted else {
        panic!("{label}: no read delegation within 4 s of the backchannel's probe")
    };
    let deleg = d.stateid;
    // The writer waits (NFS4ERR_DELAY) while the delegation is recalled.
    let open_w = writer.open(&name, p::OPEN4_SHARE_ACCESS_WRITE, false);
    let r = writer.run(vec![A::OpPutrootfh, open_w.clone()]).await;
    assert_eq!(r.status, S::Nfs4errDelay, "{label}: {r:?}");
    for _ in 0..200 {
        if !seen.lock().unwrap().recalls.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let rec = seen.lock().unwrap().recalls.clone();
    assert_eq!(rec.len(), 1, "{label}: CB_RECALL came");
    assert_eq!(rec[0].stateid, deleg);
    // The holder returns it; the writer gets in.
    holder
        .ok(vec![
            A::OpPutfh(p::Putfh4args {
                object: rec[0].fh.clone(),
            }),
            A::OpDelegreturn(p::Delegreturn4args {
                deleg_stateid: deleg,
            }),
        ])
        .await;
    let r = writer.ok(vec![A::OpPutrootfh, open_w]).await;
    let wopen = stateid_of(&r[1]);

    // CB_NOTIFY_LOCK: the holder's blocking lock is denied while the
    // writer holds the range; the writer's LOCKU tells the holder.
    let lookup = |n: &str| {
        vec![
            A::OpPutrootfh,
            A::OpLookup(p::Lookup4args {
                objname: Bytes::from(n.to_owned()),
            }),
        ]
    };
    let mut ops = lookup(&name);
    ops.push(A::OpLock(p::Lock4args {
        locktype: p::NfsLockType4::WriteLt,
        reclaim: false,
        offset: 0,
        length: 10,
        locker: p::Locker4::True(p::OpenToLockOwner4 {
            open_seqid: 0,
            open_stateid: wopen,
            lock_seqid: 0,
            lock_owner: writer.owner(b"w-locker"),
        }),
    }));
    let r = writer.ok(ops).await;
    let R::OpLock(p::Lock4res::Nfs4Ok(wl)) = &r[2] else {
        panic!("{r:?}")
    };
    let wlock = wl.lock_stateid;
    let r = holder
        .ok(vec![
            A::OpPutrootfh,
            holder.open(&name, p::OPEN4_SHARE_ACCESS_READ, false),
        ])
        .await;
    let R::OpOpen(p::Open4res::Nfs4Ok(o)) = &r[1] else {
        panic!("{r:?}")
    };
    assert_ne!(o.rflags & p::OPEN4_RESULT_MAY_NOTIFY_LOCK, 0);
    let hopen = o.stateid;
    let mut ops = lookup(&name);
    ops.push(A::OpLock(p::Lock4args {
        locktype: p::NfsLockType4::ReadwLt,
        reclaim: false,
        offset: 5,
        length: 1,
        locker: p::Locker4::True(p::OpenToLockOwner4 {
            open_seqid: 0,
            open_stateid: hopen,
            lock_seqid: 0,
            lock_owner: holder.owner(b"h-locker"),
        }),
    }));
    let r = holder.run(ops).await;
    assert_eq!(r.status, S::Nfs4errDenied, "{label}: {r:?}");
    assert!(seen.lock().unwrap().notifies.is_empty());
    let mut ops = lookup(&name);
    ops.push(A::OpLocku(p::Locku4args {
        locktype: p::NfsLockType4::WriteLt,
        seqid: 0,
        lock_stateid: wlock,
        offset: 0,
        length: 10,
    }));
    writer.ok(ops).await;
    for _ in 0..200 {
        if !seen.lock().unwrap().notifies.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let n = seen.lock().unwrap().notifies.clone();
    assert_eq!(n.len(), 1, "{label}: CB_NOTIFY_LOCK came");
    assert_eq!(&n[0].cnla_lock_owner.owner[..], b"h-locker");
    assert_eq!(n[0].cnla_lock_owner.clientid, holder.client);

    // A new connection bound to the holder's session, the first one gone:
    // the session goes on there, and its backchannel moves with it.
    let old = std::mem::replace(
        &mut holder.rpc,
        connect(addr, rdma, Some(callbacks(seen.clone()))).await,
    );
    drop(old);
    let r = compound(
        &holder.rpc,
        vec![A::OpBindConnToSession(p::BindConnToSession4args {
            bctsa_sessid: holder.session,
            bctsa_dir: p::ChannelDirFromClient4::Cdfc4ForeOrBoth,
            bctsa_use_conn_in_rdma_mode: false,
        })],
    )
    .await;
    let R::OpBindConnToSession(p::BindConnToSession4res::Nfs4Ok(b)) = &r.resarray[0] else {
        panic!("{label}: {r:?}")
    };
    assert_eq!(b.bctsr_dir, p::ChannelDirFromServer4::Cdfs4Both);
    for _ in 0..200 {
        if seen.lock().unwrap().nulls >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        seen.lock().unwrap().nulls,
        2,
        "{label}: the new backchannel was probed"
    );
    let r = holder.run(vec![A::OpPutrootfh]).await;
    assert_eq!(r.status, S::Nfs4Ok, "{r:?}");
    let R::OpSequence(p::Sequence4res::Nfs4Ok(q)) = &r.resarray[0] else {
        panic!("{r:?}")
    };
    assert_eq!(q.sr_status_flags, 0, "{label}: the backchannel is up again");
}

#[test]
fn nfs41_over_tcp_and_rdma() {
    run_on(Served::start("nfs41", true, &["--no-root-squash"]));
}

/// The same on tmpfs, where COMPOUNDs without READDIR or large READ and
/// WRITE run on the task that decoded them (docs/nfs.md, "Where the work
/// runs").
#[test]
fn nfs41_on_a_memory_backed_export() {
    let shm = std::path::Path::new("/dev/shm");
    if !rustix::fs::statfs(shm).is_ok_and(|s| s.f_type == 0x0102_1994) {
        eprintln!("skipped: /dev/shm is not a tmpfs here");
        return;
    }
    run_on(Served::start_in(
        shm,
        "nfs41-shm",
        true,
        &["--no-root-squash"],
    ));
}

fn run_on(s: Served) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for rdma in [false, true] {
            life(&s, rdma).await;
            recall(&s, rdma).await;
        }
    });
    let log = std::fs::read_to_string(&s.log).unwrap();
    assert!(!log.contains("panicked"), "{log}");
}
