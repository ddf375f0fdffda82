//! The NFSv4.1/4.2 codecs generated from `crates/xdrgen/xdr/nfs4.x`:
//!
//! * the Linux kernel client's COMPOUND with EXCHANGE_ID, from
//!   `shared/captures/kernel-client-nfs41-exchange-id.pcap`, decodes and
//!   re-encodes to the kernel's bytes exactly;
//! * the arguments and results of every operation and every callback
//!   operation, built by hand, encode and decode back equal, alone and
//!   together in one COMPOUND / CB_COMPOUND;
//! * the RFC 8267 DDP-eligible items (READ data, WRITE data, READLINK's
//!   link, CREATE's symbolic link text) travel out of line in a Payload
//!   stream and come back;
//! * truncated and mutated COMPOUND arguments decode to errors, never to a
//!   panic.

use std::fmt::Debug;

use bytes::{Bytes, BytesMut};
use rpcrdma_nfs4::proto::nfs4::*;
use rpcrdma_oncrpc::msg::{decode_header, Header};
use rpcrdma_oncrpc::{Marshal, Unmarshal};
use rpcrdma_testkit::rng::XorShift;
use rpcrdma_testkit::{mpa, pcap, tcp};
use rpcrdma_xdr::{Decoder, Encoder, PayloadEncoder};

// ---------------------------------------------------------------------
// Helpers

fn b(s: &'static [u8]) -> Bytes {
    Bytes::from_static(s)
}

fn encode<T: Marshal>(v: &T) -> Bytes {
    let mut buf = BytesMut::new();
    v.marshal(&mut Encoder::new(&mut buf));
    buf.freeze()
}

fn decode<T: Unmarshal>(bytes: &Bytes) -> Result<T, rpcrdma_xdr::XdrError> {
    let mut dec = Decoder::from_bytes(bytes);
    let v = T::unmarshal(&mut dec)?;
    dec.expect_end()?;
    Ok(v)
}

/// Encodes, decodes back, compares; the bytes again equal.
fn round_trip<T: Marshal + Unmarshal + PartialEq + Debug>(what: &str, v: &T) {
    let bytes = encode(v);
    assert_eq!(
        bytes.len() % 4,
        0,
        "{what}: not a whole number of XDR words"
    );
    let back: T = decode(&bytes).unwrap_or_else(|e| panic!("{what}: {e}\n{v:?}"));
    assert_eq!(&back, v, "{what}: decoded value differs");
    assert_eq!(encode(&back), bytes, "{what}: re-encoding differs");
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn sid(n: u8) -> Stateid4 {
    Stateid4 {
        seqid: u32::from(n),
        other: [n; 12],
    }
}

fn fh(n: u8) -> NfsFh4 {
    Bytes::from(vec![n; 28])
}

fn verf(n: u8) -> Verifier4 {
    [n; 8]
}

fn session(n: u8) -> Sessionid4 {
    [n; 16]
}

fn time(s: i64) -> Nfstime4 {
    Nfstime4 {
        seconds: s,
        nseconds: 999_999_999,
    }
}

/// A bitmap of attribute (or flag) numbers, as bitmap4 numbers them.
fn bits(ns: &[u32]) -> Bitmap4 {
    let words = ns.iter().map(|n| n / 32 + 1).max().unwrap_or(0) as usize;
    let mut v = vec![0u32; words];
    for n in ns {
        v[(n / 32) as usize] |= 1 << (n % 32);
    }
    v
}

/// type (NF4REG) and size (4096), values in bit order.
fn attrs() -> Fattr4 {
    let mut vals = BytesMut::new();
    let mut enc = Encoder::new(&mut vals);
    NfsFtype4::Nf4reg.marshal(&mut enc);
    enc.put_u64(4096);
    Fattr4 {
        attrmask: bits(&[FATTR4_TYPE, FATTR4_SIZE]),
        attr_vals: vals.freeze(),
    }
}

fn cinfo(n: u64) -> ChangeInfo4 {
    ChangeInfo4 {
        atomic: true,
        before: n,
        after: n + 1,
    }
}

fn owner(name: &'static [u8]) -> StateOwner4 {
    StateOwner4 {
        clientid: 0x0123_4567_89ab_cdef,
        owner: b(name),
    }
}

fn ace() -> Nfsace4 {
    Nfsace4 {
        r#type: ACE4_ACCESS_ALLOWED_ACE_TYPE,
        flag: ACE4_IDENTIFIER_GROUP,
        access_mask: ACE4_GENERIC_READ,
        who: b(b"staff@example.org"),
    }
}

fn netaddr() -> Netaddr4 {
    Netaddr4 {
        na_r_netid: b(b"rdma"),
        na_r_addr: b(b"192.0.2.7.78.113"),
    }
}

fn write_response(async_: bool) -> WriteResponse4 {
    WriteResponse4 {
        wr_callback_id: if async_ { vec![sid(9)] } else { vec![] },
        wr_count: 1 << 20,
        wr_committed: StableHow4::FileSync4,
        wr_writeverf: verf(5),
    }
}

fn chan(ird: bool) -> ChannelAttrs4 {
    ChannelAttrs4 {
        ca_headerpadsize: 0,
        ca_maxrequestsize: 1_049_620,
        ca_maxresponsesize: 1_049_480,
        ca_maxresponsesize_cached: 7584,
        ca_maxoperations: 16,
        ca_maxrequests: 64,
        ca_rdma_ird: if ird { vec![128] } else { vec![] },
    }
}

fn sec_parms() -> Vec<CallbackSecParms4> {
    vec![
        CallbackSecParms4::AuthNone,
        CallbackSecParms4::AuthSys(AuthsysParms4 {
            stamp: 7,
            machinename: b(b"client.example.org"),
            uid: 1000,
            gid: 1000,
            gids: vec![4, 24, 27],
        }),
        CallbackSecParms4::RpcsecGss(GssCbHandles4 {
            gcbp_service: RpcGssSvcT::RpcGssSvcIntegrity,
            gcbp_handle_from_server: b(b"srv"),
            gcbp_handle_from_client: b(b"cli"),
        }),
    ]
}

fn open_delegations() -> Vec<OpenDelegation4> {
    vec![
        OpenDelegation4::OpenDelegateNone,
        OpenDelegation4::OpenDelegateRead(OpenReadDelegation4 {
            stateid: sid(3),
            recall: false,
            permissions: ace(),
        }),
        OpenDelegation4::OpenDelegateWrite(OpenWriteDelegation4 {
            stateid: sid(4),
            recall: true,
            space_limit: NfsSpaceLimit4::NfsLimitBlocks(NfsModifiedLimit4 {
                num_blocks: 10,
                bytes_per_block: 4096,
            }),
            permissions: ace(),
        }),
        OpenDelegation4::OpenDelegateWrite(OpenWriteDelegation4 {
            stateid: sid(4),
            recall: false,
            space_limit: NfsSpaceLimit4::NfsLimitSize(u64::MAX),
            permissions: ace(),
        }),
        OpenDelegation4::OpenDelegateNoneExt(OpenNoneDelegation4::Wnd4Contention(true)),
        OpenDelegation4::OpenDelegateNoneExt(OpenNoneDelegation4::Wnd4Resource(false)),
        OpenDelegation4::OpenDelegateNoneExt(OpenNoneDelegation4::Default(
            WhyNoDelegation4::Wnd4IsDir,
        )),
    ]
}

fn netlocs() -> Vec<Netloc4> {
    vec![
        Netloc4::Nl4Name(b(b"source.example.org")),
        Netloc4::Nl4Url(b(b"nfs://source.example.org/export")),
        Netloc4::Nl4Netaddr(netaddr()),
    ]
}

fn io(n: u64) -> IoInfo4 {
    IoInfo4 {
        ii_count: n,
        ii_bytes: n * 4096,
    }
}

// ---------------------------------------------------------------------
// Every operation's arguments

/// The arguments of every operation, several values where a union makes
/// an operation take different shapes.
fn every_argop() -> Vec<NfsArgop4> {
    use NfsArgop4 as A;
    let open = |openhow: Openflag4, claim: OpenClaim4| {
        A::OpOpen(Open4args {
            seqid: 0,
            share_access: OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
            share_deny: OPEN4_SHARE_DENY_NONE,
            owner: owner(b"open id:\x00\x00\x00\x01"),
            openhow,
            claim,
        })
    };
    let mut v = vec![
        A::OpAccess(Access4args {
            access: ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_XALIST,
        }),
        A::OpClose(Close4args {
            seqid: 0,
            open_stateid: sid(1),
        }),
        A::OpCommit(Commit4args {
            offset: 0,
            count: 0,
        }),
        A::OpCreate(Create4args {
            objtype: Createtype4::Nf4lnk(b(b"../target/of/the/link")),
            objname: b(b"link"),
            createattrs: attrs(),
        }),
        A::OpCreate(Create4args {
            objtype: Createtype4::Nf4blk(Specdata4 {
                specdata1: 8,
                specdata2: 1,
            }),
            objname: b(b"sda1"),
            createattrs: attrs(),
        }),
        A::OpCreate(Create4args {
            objtype: Createtype4::Nf4chr(Specdata4 {
                specdata1: 1,
                specdata2: 3,
            }),
            objname: b(b"null"),
            createattrs: attrs(),
        }),
        A::OpCreate(Create4args {
            objtype: Createtype4::Nf4dir,
            objname: b(b"dir"),
            createattrs: attrs(),
        }),
        A::OpCreate(Create4args {
            objtype: Createtype4::Nf4sock,
            objname: b(b"sock"),
            createattrs: attrs(),
        }),
        A::OpCreate(Create4args {
            objtype: Createtype4::Nf4fifo,
            objname: b(b"fifo"),
            createattrs: attrs(),
        }),
        A::OpCreate(Create4args {
            objtype: Createtype4::Default(NfsFtype4::Nf4reg),
            objname: b(b"regular: BADTYPE"),
            createattrs: attrs(),
        }),
        A::OpDelegpurge(Delegpurge4args { clientid: 42 }),
        A::OpDelegreturn(Delegreturn4args {
            deleg_stateid: sid(2),
        }),
        A::OpGetattr(Getattr4args {
            attr_request: bits(&[FATTR4_SUPPORTED_ATTRS, FATTR4_FILEID, FATTR4_XATTR_SUPPORT]),
        }),
        A::OpGetfh,
        A::OpLink(Link4args {
            newname: b(b"hard link"),
        }),
        A::OpLock(Lock4args {
            locktype: NfsLockType4::WritewLt,
            reclaim: false,
            offset: 0,
            length: u64::MAX,
            locker: Locker4::True(OpenToLockOwner4 {
                open_seqid: 0,
                open_stateid: sid(1),
                lock_seqid: 0,
                lock_owner: owner(b"lock owner"),
            }),
        }),
        A::OpLock(Lock4args {
            locktype: NfsLockType4::ReadLt,
            reclaim: true,
            offset: 100,
            length: 10,
            locker: Locker4::False(ExistLockOwner4 {
                lock_stateid: sid(5),
                lock_seqid: 0,
            }),
        }),
        A::OpLockt(Lockt4args {
            locktype: NfsLockType4::ReadwLt,
            offset: 0,
            length: 1,
            owner: owner(b"tester"),
        }),
        A::OpLocku(Locku4args {
            locktype: NfsLockType4::WriteLt,
            seqid: 0,
            lock_stateid: sid(5),
            offset: 0,
            length: u64::MAX,
        }),
        A::OpLookup(Lookup4args {
            objname: b(b"name \xff not UTF-8"),
        }),
        A::OpLookupp,
        A::OpNverify(Nverify4args {
            obj_attributes: attrs(),
        }),
        open(
            Openflag4::Default(Opentype4::Open4Nocreate),
            OpenClaim4::ClaimNull(b(b"file")),
        ),
        open(
            Openflag4::Open4Create(Createhow4::Unchecked4(attrs())),
            OpenClaim4::ClaimNull(b(b"new")),
        ),
        open(
            Openflag4::Open4Create(Createhow4::Guarded4(attrs())),
            OpenClaim4::ClaimPrevious(OpenDelegationType4::OpenDelegateRead),
        ),
        open(
            Openflag4::Open4Create(Createhow4::Exclusive4(verf(7))),
            OpenClaim4::ClaimDelegateCur(OpenClaimDelegateCur4 {
                delegate_stateid: sid(3),
                file: b(b"delegated"),
            }),
        ),
        open(
            Openflag4::Open4Create(Createhow4::Exclusive41(Creatverfattr {
                cva_verf: verf(8),
                cva_attrs: attrs(),
            })),
            OpenClaim4::ClaimDelegatePrev(b(b"old")),
        ),
        open(
            Openflag4::Default(Opentype4::Open4Nocreate),
            OpenClaim4::ClaimFh,
        ),
        open(
            Openflag4::Default(Opentype4::Open4Nocreate),
            OpenClaim4::ClaimDelegPrevFh,
        ),
        open(
            Openflag4::Default(Opentype4::Open4Nocreate),
            OpenClaim4::ClaimDelegCurFh(sid(3)),
        ),
        A::OpOpenattr(Openattr4args { createdir: true }),
        A::OpOpenConfirm(OpenConfirm4args {
            open_stateid: sid(1),
            seqid: 2,
        }),
        A::OpOpenDowngrade(OpenDowngrade4args {
            open_stateid: sid(1),
            seqid: 0,
            share_access: OPEN4_SHARE_ACCESS_READ,
            share_deny: OPEN4_SHARE_DENY_NONE,
        }),
        A::OpPutfh(Putfh4args { object: fh(1) }),
        A::OpPutpubfh,
        A::OpPutrootfh,
        A::OpRead(Read4args {
            stateid: sid(1),
            offset: 1 << 40,
            count: 1 << 20,
        }),
        A::OpReaddir(Readdir4args {
            cookie: 0,
            cookieverf: verf(0),
            dircount: 8192,
            maxcount: 32768,
            attr_request: bits(&[FATTR4_TYPE, FATTR4_FILEID, FATTR4_MOUNTED_ON_FILEID]),
        }),
        A::OpReadlink,
        A::OpRemove(Remove4args { target: b(b"gone") }),
        A::OpRename(Rename4args {
            oldname: b(b"old"),
            newname: b(b"new"),
        }),
        A::OpRenew(Renew4args { clientid: 42 }),
        A::OpRestorefh,
        A::OpSavefh,
        A::OpSecinfo(Secinfo4args { name: b(b"export") }),
        A::OpSetattr(Setattr4args {
            stateid: sid(0),
            obj_attributes: attrs(),
        }),
        A::OpSetclientid(Setclientid4args {
            client: NfsClientId4 {
                verifier: verf(1),
                id: b(b"Linux NFSv4.0 client"),
            },
            callback: CbClient4 {
                cb_program: 0x4000_0000,
                cb_location: netaddr(),
            },
            callback_ident: 1,
        }),
        A::OpSetclientidConfirm(SetclientidConfirm4args {
            clientid: 42,
            setclientid_confirm: verf(2),
        }),
        A::OpVerify(Verify4args {
            obj_attributes: attrs(),
        }),
        A::OpWrite(Write4args {
            stateid: sid(1),
            offset: 8192,
            stable: StableHow4::Unstable4,
            data: b(b"written data, 29 bytes long.."),
        }),
        A::OpReleaseLockowner(ReleaseLockowner4args {
            lock_owner: owner(b"lock owner"),
        }),
        A::OpBackchannelCtl(BackchannelCtl4args {
            bca_cb_program: 0x4000_0000,
            bca_sec_parms: sec_parms(),
        }),
        A::OpBindConnToSession(BindConnToSession4args {
            bctsa_sessid: session(1),
            bctsa_dir: ChannelDirFromClient4::Cdfc4BackOrBoth,
            bctsa_use_conn_in_rdma_mode: true,
        }),
        A::OpExchangeId(ExchangeId4args {
            eia_clientowner: ClientOwner4 {
                co_verifier: verf(3),
                co_ownerid: b(b"Linux NFSv4.1 client.example.org"),
            },
            eia_flags: EXCHGID4_FLAG_SUPP_MOVED_REFER | EXCHGID4_FLAG_BIND_PRINC_STATEID,
            eia_state_protect: StateProtect4A::Sp4None,
            eia_client_impl_id: vec![],
        }),
        A::OpExchangeId(ExchangeId4args {
            eia_clientowner: ClientOwner4 {
                co_verifier: verf(3),
                co_ownerid: b(b"mach cred"),
            },
            eia_flags: EXCHGID4_FLAG_USE_NON_PNFS,
            eia_state_protect: StateProtect4A::Sp4MachCred(StateProtectOps4 {
                spo_must_enforce: bits(&[NfsOpnum4::OpBindConnToSession.value() as u32]),
                spo_must_allow: bits(&[
                    NfsOpnum4::OpClose.value() as u32,
                    NfsOpnum4::OpDelegreturn.value() as u32,
                ]),
            }),
            eia_client_impl_id: vec![NfsImplId4 {
                nii_domain: b(b"kernel.org"),
                nii_name: b(b"Linux 6.1"),
                nii_date: time(0),
            }],
        }),
        A::OpExchangeId(ExchangeId4args {
            eia_clientowner: ClientOwner4 {
                co_verifier: verf(3),
                co_ownerid: b(b"ssv"),
            },
            eia_flags: 0,
            eia_state_protect: StateProtect4A::Sp4Ssv(SsvSpParms4 {
                ssp_ops: StateProtectOps4 {
                    spo_must_enforce: vec![],
                    spo_must_allow: vec![],
                },
                ssp_hash_algs: vec![b(b"\x06\x09\x60\x86\x48\x01\x65\x03\x04\x02\x01")],
                ssp_encr_algs: vec![],
                ssp_window: 16,
                ssp_num_gss_handles: 2,
            }),
            eia_client_impl_id: vec![],
        }),
        A::OpCreateSession(CreateSession4args {
            csa_clientid: 42,
            csa_sequence: 1,
            csa_flags: CREATE_SESSION4_FLAG_CONN_BACK_CHAN | CREATE_SESSION4_FLAG_CONN_RDMA,
            csa_fore_chan_attrs: chan(true),
            csa_back_chan_attrs: chan(false),
            csa_cb_program: 0x4000_0000,
            csa_sec_parms: sec_parms(),
        }),
        A::OpDestroySession(DestroySession4args {
            dsa_sessionid: session(1),
        }),
        A::OpFreeStateid(FreeStateid4args {
            fsa_stateid: sid(6),
        }),
        A::OpGetDirDelegation(GetDirDelegation4args {
            gdda_signal_deleg_avail: true,
            gdda_notification_types: bits(&[
                NotifyType4::Notify4AddEntry as u32,
                NotifyType4::Notify4RemoveEntry as u32,
            ]),
            gdda_child_attr_delay: time(1),
            gdda_dir_attr_delay: time(2),
            gdda_child_attributes: bits(&[FATTR4_SIZE]),
            gdda_dir_attributes: bits(&[FATTR4_CHANGE]),
        }),
        A::OpGetdeviceinfo(Getdeviceinfo4args {
            gdia_device_id: [7; 16],
            gdia_layout_type: Layouttype4::Layout4Nfsv41Files,
            gdia_maxcount: 4096,
            gdia_notify_types: bits(&[NotifyDeviceidType4::NotifyDeviceid4Change as u32]),
        }),
        A::OpGetdevicelist(Getdevicelist4args {
            gdla_layout_type: Layouttype4::Layout4BlockVolume,
            gdla_maxdevices: 16,
            gdla_cookie: 0,
            gdla_cookieverf: verf(0),
        }),
        A::OpLayoutcommit(Layoutcommit4args {
            loca_offset: 0,
            loca_length: 1 << 20,
            loca_reclaim: false,
            loca_stateid: sid(7),
            loca_last_write_offset: Newoffset4::True((1 << 20) - 1),
            loca_time_modify: Newtime4::True(time(1_700_000_000)),
            loca_layoutupdate: Layoutupdate4 {
                lou_type: Layouttype4::Layout4Nfsv41Files,
                lou_body: Bytes::new(),
            },
        }),
        A::OpLayoutcommit(Layoutcommit4args {
            loca_offset: 0,
            loca_length: 0,
            loca_reclaim: true,
            loca_stateid: sid(7),
            loca_last_write_offset: Newoffset4::False,
            loca_time_modify: Newtime4::False,
            loca_layoutupdate: Layoutupdate4 {
                lou_type: Layouttype4::Layout4FlexFiles,
                lou_body: b(b"body"),
            },
        }),
        A::OpLayoutget(Layoutget4args {
            loga_signal_layout_avail: false,
            loga_layout_type: Layouttype4::Layout4Nfsv41Files,
            loga_iomode: Layoutiomode4::Layoutiomode4Rw,
            loga_offset: 0,
            loga_length: u64::MAX,
            loga_minlength: 4096,
            loga_stateid: sid(1),
            loga_maxcount: 4096,
        }),
        A::OpLayoutreturn(Layoutreturn4args {
            lora_reclaim: false,
            lora_layout_type: Layouttype4::Layout4Nfsv41Files,
            lora_iomode: Layoutiomode4::Layoutiomode4Any,
            lora_layoutreturn: Layoutreturn4::Layoutreturn4File(LayoutreturnFile4 {
                lrf_offset: 0,
                lrf_length: u64::MAX,
                lrf_stateid: sid(7),
                lrf_body: Bytes::new(),
            }),
        }),
        A::OpLayoutreturn(Layoutreturn4args {
            lora_reclaim: false,
            lora_layout_type: Layouttype4::Layout4Scsi,
            lora_iomode: Layoutiomode4::Layoutiomode4Read,
            lora_layoutreturn: Layoutreturn4::Default(LayoutreturnType4::Layoutreturn4All),
        }),
        A::OpSecinfoNoName(SecinfoStyle4::SecinfoStyle4Parent),
        A::OpSequence(Sequence4args {
            sa_sessionid: session(1),
            sa_sequenceid: 17,
            sa_slotid: 0,
            sa_highest_slotid: 63,
            sa_cachethis: true,
        }),
        A::OpSetSsv(SetSsv4args {
            ssa_ssv: b(b"new secret state verifier"),
            ssa_digest: b(b"digest"),
        }),
        A::OpTestStateid(TestStateid4args {
            ts_stateids: vec![sid(1), sid(2), sid(3)],
        }),
        A::OpWantDelegation(WantDelegation4args {
            wda_want: OPEN4_SHARE_ACCESS_WANT_READ_DELEG,
            wda_claim: DelegClaim4::ClaimFh,
        }),
        A::OpWantDelegation(WantDelegation4args {
            wda_want: OPEN4_SHARE_ACCESS_WANT_ANY_DELEG,
            wda_claim: DelegClaim4::ClaimDelegPrevFh,
        }),
        A::OpWantDelegation(WantDelegation4args {
            wda_want: OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG,
            wda_claim: DelegClaim4::ClaimPrevious(OpenDelegationType4::OpenDelegateWrite),
        }),
        A::OpDestroyClientid(DestroyClientid4args { dca_clientid: 42 }),
        A::OpReclaimComplete(ReclaimComplete4args { rca_one_fs: false }),
        A::OpAllocate(Allocate4args {
            aa_stateid: sid(1),
            aa_offset: 0,
            aa_length: 1 << 30,
        }),
        A::OpCopy(Copy4args {
            ca_src_stateid: sid(1),
            ca_dst_stateid: sid(2),
            ca_src_offset: 0,
            ca_dst_offset: 4096,
            ca_count: 0,
            ca_consecutive: true,
            ca_synchronous: false,
            ca_source_server: netlocs(),
        }),
        A::OpCopyNotify(CopyNotify4args {
            cna_src_stateid: sid(1),
            cna_destination_server: Netloc4::Nl4Netaddr(netaddr()),
        }),
        A::OpDeallocate(Deallocate4args {
            da_stateid: sid(1),
            da_offset: 4096,
            da_length: 8192,
        }),
        A::OpIoAdvise(IoAdvise4args {
            iaa_stateid: sid(1),
            iaa_offset: 0,
            iaa_count: 0,
            iaa_hints: bits(&[
                IoAdviseType4::IoAdvise4Sequential as u32,
                IoAdviseType4::IoAdvise4Willneed as u32,
            ]),
        }),
        A::OpLayouterror(Layouterror4args {
            lea_offset: 0,
            lea_length: 4096,
            lea_stateid: sid(7),
            lea_errors: vec![DeviceError4 {
                de_deviceid: [1; 16],
                de_status: Nfsstat4::Nfs4errNxio,
                de_opnum: NfsOpnum4::OpRead,
            }],
        }),
        A::OpLayoutstats(Layoutstats4args {
            lsa_offset: 0,
            lsa_length: u64::MAX,
            lsa_stateid: sid(7),
            lsa_read: io(10),
            lsa_write: io(20),
            lsa_deviceid: [2; 16],
            lsa_layoutupdate: Layoutupdate4 {
                lou_type: Layouttype4::Layout4FlexFiles,
                lou_body: b(b"stats"),
            },
        }),
        A::OpOffloadCancel(OffloadCancel4args {
            oca_stateid: sid(9),
        }),
        A::OpOffloadStatus(OffloadStatus4args {
            osa_stateid: sid(9),
        }),
        A::OpReadPlus(ReadPlus4args {
            rpa_stateid: sid(1),
            rpa_offset: 0,
            rpa_count: 65536,
        }),
        A::OpSeek(Seek4args {
            sa_stateid: sid(1),
            sa_offset: 12,
            sa_what: DataContent4::Nfs4ContentHole,
        }),
        A::OpWriteSame(WriteSame4args {
            wsa_stateid: sid(1),
            wsa_stable: StableHow4::DataSync4,
            wsa_adb: AppDataBlock4 {
                adb_offset: 0,
                adb_block_size: 512,
                adb_block_count: 8,
                adb_reloff_blocknum: 0,
                adb_block_num: 0,
                adb_reloff_pattern: 4,
                adb_pattern: b(b"\0\0\0\0"),
            },
        }),
        A::OpClone(Clone4args {
            cl_src_stateid: sid(1),
            cl_dst_stateid: sid(2),
            cl_src_offset: 0,
            cl_dst_offset: 0,
            cl_count: 0,
        }),
        A::OpGetxattr(Getxattr4args {
            gxa_name: b(b"user.mime_type"),
        }),
        A::OpSetxattr(Setxattr4args {
            sxa_option: SetxattrOption4::Setxattr4Create,
            sxa_key: b(b"user.comment"),
            sxa_value: b(b"\x00binary\xff value"),
        }),
        A::OpListxattrs(Listxattrs4args {
            lxa_cookie: 0,
            lxa_maxcount: 4096,
        }),
        A::OpRemovexattr(Removexattr4args {
            rxa_name: b(b"user.comment"),
        }),
        A::OpIllegal,
    ];
    // Every secinfo style, every channel direction.
    v.push(A::OpSecinfoNoName(SecinfoStyle4::SecinfoStyle4CurrentFh));
    for dir in [
        ChannelDirFromClient4::Cdfc4Fore,
        ChannelDirFromClient4::Cdfc4Back,
        ChannelDirFromClient4::Cdfc4ForeOrBoth,
    ] {
        v.push(A::OpBindConnToSession(BindConnToSession4args {
            bctsa_sessid: session(2),
            bctsa_dir: dir,
            bctsa_use_conn_in_rdma_mode: false,
        }));
    }
    v
}

// ---------------------------------------------------------------------
// Every operation's results

/// The results of every operation: success with content, and the other
/// arms its result union has (errors, denials).
fn every_resop() -> Vec<NfsResop4> {
    use NfsResop4 as R;
    let ok = Nfsstat4::Nfs4Ok;
    let entries = Entry4::link_list(vec![
        Entry4 {
            cookie: 3,
            name: b(b"a"),
            attrs: attrs(),
            nextentry: None,
        },
        Entry4 {
            cookie: 4,
            name: b(b"b \xfe"),
            attrs: attrs(),
            nextentry: None,
        },
    ]);
    let readdir_ok = R::OpReaddir(Readdir4res::Nfs4Ok(Readdir4resok {
        cookieverf: verf(1),
        reply: Dirlist4 { entries, eof: true },
    }));
    let mut v = vec![
        R::OpAccess(Access4res::Nfs4Ok(Access4resok {
            supported: ACCESS4_READ | ACCESS4_XAREAD,
            access: ACCESS4_READ,
        })),
        R::OpAccess(Access4res::Default(Nfsstat4::Nfs4errStale)),
        R::OpClose(Close4res::Nfs4Ok(sid(1))),
        R::OpClose(Close4res::Default(Nfsstat4::Nfs4errLocksHeld)),
        R::OpCommit(Commit4res::Nfs4Ok(Commit4resok { writeverf: verf(2) })),
        R::OpCreate(Create4res::Nfs4Ok(Create4resok {
            cinfo: cinfo(10),
            attrset: bits(&[FATTR4_MODE]),
        })),
        R::OpCreate(Create4res::Default(Nfsstat4::Nfs4errBadtype)),
        R::OpDelegpurge(Delegpurge4res { status: ok }),
        R::OpDelegreturn(Delegreturn4res {
            status: Nfsstat4::Nfs4errBadStateid,
        }),
        R::OpGetattr(Getattr4res::Nfs4Ok(Getattr4resok {
            obj_attributes: attrs(),
        })),
        R::OpGetfh(Getfh4res::Nfs4Ok(Getfh4resok { object: fh(2) })),
        R::OpGetfh(Getfh4res::Default(Nfsstat4::Nfs4errNofilehandle)),
        R::OpLink(Link4res::Nfs4Ok(Link4resok { cinfo: cinfo(11) })),
        R::OpLock(Lock4res::Nfs4Ok(Lock4resok {
            lock_stateid: sid(5),
        })),
        R::OpLock(Lock4res::Nfs4errDenied(Lock4denied {
            offset: 0,
            length: 10,
            locktype: NfsLockType4::WriteLt,
            owner: owner(b"holder"),
        })),
        R::OpLock(Lock4res::Default(Nfsstat4::Nfs4errGrace)),
        R::OpLockt(Lockt4res::Nfs4Ok),
        R::OpLockt(Lockt4res::Nfs4errDenied(Lock4denied {
            offset: 5,
            length: u64::MAX,
            locktype: NfsLockType4::ReadLt,
            owner: owner(b"other"),
        })),
        R::OpLockt(Lockt4res::Default(Nfsstat4::Nfs4errLockRange)),
        R::OpLocku(Locku4res::Nfs4Ok(sid(5))),
        R::OpLookup(Lookup4res {
            status: Nfsstat4::Nfs4errNoent,
        }),
        R::OpLookupp(Lookupp4res { status: ok }),
        R::OpNverify(Nverify4res {
            status: Nfsstat4::Nfs4errSame,
        }),
        R::OpOpenattr(Openattr4res {
            status: Nfsstat4::Nfs4errNotsupp,
        }),
        R::OpOpenConfirm(OpenConfirm4res::Nfs4Ok(OpenConfirm4resok {
            open_stateid: sid(1),
        })),
        R::OpOpenDowngrade(OpenDowngrade4res::Nfs4Ok(OpenDowngrade4resok {
            open_stateid: sid(1),
        })),
        R::OpPutfh(Putfh4res { status: ok }),
        R::OpPutpubfh(Putpubfh4res { status: ok }),
        R::OpPutrootfh(Putrootfh4res { status: ok }),
        R::OpRead(Read4res::Nfs4Ok(Read4resok {
            eof: false,
            data: b(b"read data"),
        })),
        R::OpRead(Read4res::Default(Nfsstat4::Nfs4errOpenmode)),
        readdir_ok,
        R::OpReaddir(Readdir4res::Nfs4Ok(Readdir4resok {
            cookieverf: verf(1),
            reply: Dirlist4 {
                entries: None,
                eof: true,
            },
        })),
        R::OpReadlink(Readlink4res::Nfs4Ok(Readlink4resok {
            link: b(b"/an/absolute/target"),
        })),
        R::OpRemove(Remove4res::Nfs4Ok(Remove4resok { cinfo: cinfo(12) })),
        R::OpRename(Rename4res::Nfs4Ok(Rename4resok {
            source_cinfo: cinfo(13),
            target_cinfo: cinfo(14),
        })),
        R::OpRenew(Renew4res {
            status: Nfsstat4::Nfs4errExpired,
        }),
        R::OpRestorefh(Restorefh4res {
            status: Nfsstat4::Nfs4errRestorefh,
        }),
        R::OpSavefh(Savefh4res { status: ok }),
        R::OpSecinfo(Secinfo4res::Nfs4Ok(vec![
            Secinfo4::RpcsecGss(RpcsecGssInfo {
                oid: b(b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x02"),
                qop: 0,
                service: RpcGssSvcT::RpcGssSvcPrivacy,
            }),
            Secinfo4::Default(AUTH_SYS),
            Secinfo4::Default(AUTH_NONE),
        ])),
        R::OpSetattr(Setattr4res {
            status: Nfsstat4::Nfs4errPerm,
            attrsset: vec![],
        }),
        R::OpSetclientid(Setclientid4res::Nfs4Ok(Setclientid4resok {
            clientid: 42,
            setclientid_confirm: verf(3),
        })),
        R::OpSetclientid(Setclientid4res::Nfs4errClidInuse(netaddr())),
        R::OpSetclientidConfirm(SetclientidConfirm4res { status: ok }),
        R::OpVerify(Verify4res {
            status: Nfsstat4::Nfs4errNotSame,
        }),
        R::OpWrite(Write4res::Nfs4Ok(Write4resok {
            count: 29,
            committed: StableHow4::DataSync4,
            writeverf: verf(2),
        })),
        R::OpReleaseLockowner(ReleaseLockowner4res {
            status: Nfsstat4::Nfs4errLocksHeld,
        }),
        R::OpBackchannelCtl(BackchannelCtl4res { bcr_status: ok }),
        R::OpBindConnToSession(BindConnToSession4res::Nfs4Ok(BindConnToSession4resok {
            bctsr_sessid: session(1),
            bctsr_dir: ChannelDirFromServer4::Cdfs4Both,
            bctsr_use_conn_in_rdma_mode: true,
        })),
        R::OpExchangeId(ExchangeId4res::Nfs4Ok(ExchangeId4resok {
            eir_clientid: 42,
            eir_sequenceid: 1,
            eir_flags: EXCHGID4_FLAG_USE_NON_PNFS | EXCHGID4_FLAG_CONFIRMED_R,
            eir_state_protect: StateProtect4R::Sp4MachCred(StateProtectOps4 {
                spo_must_enforce: bits(&[NfsOpnum4::OpExchangeId.value() as u32]),
                spo_must_allow: vec![],
            }),
            eir_server_owner: ServerOwner4 {
                so_minor_id: 0,
                so_major_id: b(b"server.example.org"),
            },
            eir_server_scope: b(b"scope"),
            eir_server_impl_id: vec![NfsImplId4 {
                nii_domain: b(b"example.org"),
                nii_name: b(b"rpcrdma-nfs4"),
                nii_date: time(-1),
            }],
        })),
        R::OpExchangeId(ExchangeId4res::Nfs4Ok(ExchangeId4resok {
            eir_clientid: 43,
            eir_sequenceid: 1,
            eir_flags: 0,
            eir_state_protect: StateProtect4R::Sp4Ssv(SsvProtInfo4 {
                spi_ops: StateProtectOps4 {
                    spo_must_enforce: vec![],
                    spo_must_allow: vec![],
                },
                spi_hash_alg: 0,
                spi_encr_alg: 0,
                spi_ssv_len: 32,
                spi_window: 16,
                spi_handles: vec![b(b"h1"), b(b"h2")],
            }),
            eir_server_owner: ServerOwner4 {
                so_minor_id: 1,
                so_major_id: b(b"m"),
            },
            eir_server_scope: Bytes::new(),
            eir_server_impl_id: vec![],
        })),
        R::OpExchangeId(ExchangeId4res::Default(Nfsstat4::Nfs4errClidInuse)),
        R::OpCreateSession(CreateSession4res::Nfs4Ok(CreateSession4resok {
            csr_sessionid: session(1),
            csr_sequence: 1,
            csr_flags: CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
            csr_fore_chan_attrs: chan(true),
            csr_back_chan_attrs: chan(false),
        })),
        R::OpDestroySession(DestroySession4res {
            dsr_status: Nfsstat4::Nfs4errBadsession,
        }),
        R::OpFreeStateid(FreeStateid4res {
            fsr_status: Nfsstat4::Nfs4errLocksHeld,
        }),
        R::OpGetDirDelegation(GetDirDelegation4res::Nfs4Ok(
            GetDirDelegation4resNonFatal::Gdd4Ok(GetDirDelegation4resok {
                gddr_cookieverf: verf(4),
                gddr_stateid: sid(8),
                gddr_notification: bits(&[NotifyType4::Notify4AddEntry as u32]),
                gddr_child_attributes: vec![],
                gddr_dir_attributes: vec![],
            }),
        )),
        R::OpGetDirDelegation(GetDirDelegation4res::Nfs4Ok(
            GetDirDelegation4resNonFatal::Gdd4Unavail(true),
        )),
        R::OpGetDirDelegation(GetDirDelegation4res::Default(
            Nfsstat4::Nfs4errDirdelegUnavail,
        )),
        R::OpGetdeviceinfo(Getdeviceinfo4res::Nfs4Ok(Getdeviceinfo4resok {
            gdir_device_addr: DeviceAddr4 {
                da_layout_type: Layouttype4::Layout4Nfsv41Files,
                da_addr_body: encode(&Nfsv41FileLayoutDsAddr4 {
                    nflda_stripe_indices: vec![0, 1],
                    nflda_multipath_ds_list: vec![vec![netaddr()], vec![netaddr(), netaddr()]],
                }),
            },
            gdir_notification: vec![],
        })),
        R::OpGetdeviceinfo(Getdeviceinfo4res::Nfs4errToosmall(8192)),
        R::OpGetdevicelist(Getdevicelist4res::Nfs4Ok(Getdevicelist4resok {
            gdlr_cookie: 2,
            gdlr_cookieverf: verf(5),
            gdlr_deviceid_list: vec![[1; 16], [2; 16]],
            gdlr_eof: true,
        })),
        R::OpLayoutcommit(Layoutcommit4res::Nfs4Ok(Layoutcommit4resok {
            locr_newsize: Newsize4::True(1 << 20),
        })),
        R::OpLayoutcommit(Layoutcommit4res::Nfs4Ok(Layoutcommit4resok {
            locr_newsize: Newsize4::False,
        })),
        R::OpLayoutget(Layoutget4res::Nfs4Ok(Layoutget4resok {
            logr_return_on_close: true,
            logr_stateid: sid(7),
            logr_layout: vec![Layout4 {
                lo_offset: 0,
                lo_length: u64::MAX,
                lo_iomode: Layoutiomode4::Layoutiomode4Read,
                lo_content: LayoutContent4 {
                    loc_type: Layouttype4::Layout4Nfsv41Files,
                    loc_body: encode(&Nfsv41FileLayout4 {
                        nfl_deviceid: [1; 16],
                        nfl_util: NFL4_UFLG_DENSE | 0x10000,
                        nfl_first_stripe_index: 0,
                        nfl_pattern_offset: 0,
                        nfl_fh_list: vec![fh(3), fh(4)],
                    }),
                },
            }],
        })),
        R::OpLayoutget(Layoutget4res::Nfs4errLayouttrylater(true)),
        R::OpLayoutget(Layoutget4res::Default(Nfsstat4::Nfs4errLayoutunavailable)),
        R::OpLayoutreturn(Layoutreturn4res::Nfs4Ok(LayoutreturnStateid::True(sid(7)))),
        R::OpLayoutreturn(Layoutreturn4res::Nfs4Ok(LayoutreturnStateid::False)),
        R::OpSecinfoNoName(Secinfo4res::Nfs4Ok(vec![Secinfo4::Default(AUTH_SYS)])),
        R::OpSecinfoNoName(Secinfo4res::Default(Nfsstat4::Nfs4errWrongsec)),
        R::OpSequence(Sequence4res::Nfs4Ok(Sequence4resok {
            sr_sessionid: session(1),
            sr_sequenceid: 17,
            sr_slotid: 0,
            sr_highest_slotid: 63,
            sr_target_highest_slotid: 31,
            sr_status_flags: SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_RECALLABLE_STATE_REVOKED,
        })),
        R::OpSequence(Sequence4res::Default(Nfsstat4::Nfs4errSeqMisordered)),
        R::OpSetSsv(SetSsv4res::Nfs4Ok(SetSsv4resok {
            ssr_digest: b(b"digest"),
        })),
        R::OpTestStateid(TestStateid4res::Nfs4Ok(TestStateid4resok {
            tsr_status_codes: vec![
                ok,
                Nfsstat4::Nfs4errBadStateid,
                Nfsstat4::Nfs4errDelegRevoked,
            ],
        })),
        R::OpDestroyClientid(DestroyClientid4res {
            dcr_status: Nfsstat4::Nfs4errClientidBusy,
        }),
        R::OpReclaimComplete(ReclaimComplete4res {
            rcr_status: Nfsstat4::Nfs4errCompleteAlready,
        }),
        R::OpAllocate(Allocate4res {
            ar_status: Nfsstat4::Nfs4errNospc,
        }),
        R::OpCopy(Copy4res::Nfs4Ok(Copy4resok {
            cr_response: write_response(true),
            cr_requirements: CopyRequirements4 {
                cr_consecutive: true,
                cr_synchronous: false,
            },
        })),
        R::OpCopy(Copy4res::Nfs4errOffloadNoReqs(CopyRequirements4 {
            cr_consecutive: false,
            cr_synchronous: true,
        })),
        R::OpCopy(Copy4res::Default(Nfsstat4::Nfs4errPartnerNotsupp)),
        R::OpCopyNotify(CopyNotify4res::Nfs4Ok(CopyNotify4resok {
            cnr_lease_time: time(90),
            cnr_stateid: sid(10),
            cnr_source_server: netlocs(),
        })),
        R::OpDeallocate(Deallocate4res { dr_status: ok }),
        R::OpIoAdvise(IoAdvise4res::Nfs4Ok(IoAdvise4resok {
            ior_hints: bits(&[IoAdviseType4::IoAdvise4Normal as u32]),
        })),
        R::OpLayouterror(Layouterror4res { ler_status: ok }),
        R::OpLayoutstats(Layoutstats4res { lsr_status: ok }),
        R::OpOffloadCancel(OffloadCancel4res {
            ocr_status: Nfsstat4::Nfs4errBadStateid,
        }),
        R::OpOffloadStatus(OffloadStatus4res::Nfs4Ok(OffloadStatus4resok {
            osr_count: 1 << 20,
            osr_complete: vec![ok],
        })),
        R::OpOffloadStatus(OffloadStatus4res::Nfs4Ok(OffloadStatus4resok {
            osr_count: 12,
            osr_complete: vec![],
        })),
        R::OpReadPlus(ReadPlus4res::Nfs4Ok(ReadPlusRes4 {
            rpr_eof: true,
            rpr_contents: vec![
                ReadPlusContent::Nfs4ContentData(Data4 {
                    d_offset: 0,
                    d_data: b(b"data before the hole"),
                }),
                ReadPlusContent::Nfs4ContentHole(DataInfo4 {
                    di_offset: 20,
                    di_length: 4076,
                }),
            ],
        })),
        R::OpReadPlus(ReadPlus4res::Default(Nfsstat4::Nfs4errUnionNotsupp)),
        R::OpSeek(Seek4res::Nfs4Ok(SeekRes4 {
            sr_eof: false,
            sr_offset: 4096,
        })),
        R::OpWriteSame(WriteSame4res::Nfs4Ok(write_response(false))),
        R::OpClone(Clone4res {
            cl_status: Nfsstat4::Nfs4errXdev,
        }),
        R::OpGetxattr(Getxattr4res::Nfs4Ok(b(b"text/plain"))),
        R::OpGetxattr(Getxattr4res::Default(Nfsstat4::Nfs4errNoxattr)),
        R::OpSetxattr(Setxattr4res::Nfs4Ok(cinfo(20))),
        R::OpSetxattr(Setxattr4res::Default(Nfsstat4::Nfs4errXattr2big)),
        R::OpListxattrs(Listxattrs4res::Nfs4Ok(Listxattrs4resok {
            lxr_cookie: 2,
            lxr_names: vec![b(b"user.a"), b(b"user.b")],
            lxr_eof: true,
        })),
        R::OpRemovexattr(Removexattr4res::Nfs4Ok(cinfo(21))),
        R::OpIllegal(Illegal4res {
            status: Nfsstat4::Nfs4errOpIllegal,
        }),
    ];
    for deleg in open_delegations() {
        v.push(R::OpOpen(Open4res::Nfs4Ok(Open4resok {
            stateid: sid(1),
            cinfo: cinfo(30),
            rflags: OPEN4_RESULT_LOCKTYPE_POSIX | OPEN4_RESULT_PRESERVE_UNLINKED,
            attrset: bits(&[FATTR4_SIZE]),
            delegation: deleg.clone(),
        })));
        v.push(R::OpWantDelegation(WantDelegation4res::Nfs4Ok(deleg)));
    }
    v.push(R::OpOpen(Open4res::Default(Nfsstat4::Nfs4errShareDenied)));
    v
}

// ---------------------------------------------------------------------
// Every callback operation

fn every_cb_argop() -> Vec<NfsCbArgop4> {
    use NfsCbArgop4 as A;
    let mut notify_vals = BytesMut::new();
    let mut enc = Encoder::new(&mut notify_vals);
    NotifyAdd4 {
        nad_old_entry: vec![NotifyRemove4 {
            nrm_old_entry: NotifyEntry4 {
                ne_file: b(b"replaced"),
                ne_attrs: attrs(),
            },
            nrm_old_entry_cookie: 9,
        }],
        nad_new_entry: NotifyEntry4 {
            ne_file: b(b"added"),
            ne_attrs: attrs(),
        },
        nad_new_entry_cookie: vec![10],
        nad_prev_entry: vec![PrevEntry4 {
            pe_prev_entry: NotifyEntry4 {
                ne_file: b(b"before"),
                ne_attrs: attrs(),
            },
            pe_prev_entry_cookie: 8,
        }],
        nad_last_entry: false,
    }
    .marshal(&mut enc);
    let notify_vals = notify_vals.freeze();
    let mut v = vec![
        A::OpCbGetattr(CbGetattr4args {
            fh: fh(1),
            attr_request: bits(&[FATTR4_CHANGE, FATTR4_SIZE]),
        }),
        A::OpCbRecall(CbRecall4args {
            stateid: sid(3),
            truncate: true,
            fh: fh(1),
        }),
        A::OpCbLayoutrecall(CbLayoutrecall4args {
            clora_type: Layouttype4::Layout4Nfsv41Files,
            clora_iomode: Layoutiomode4::Layoutiomode4Any,
            clora_changed: true,
            clora_recall: Layoutrecall4::Layoutrecall4File(LayoutrecallFile4 {
                lor_fh: fh(1),
                lor_offset: 0,
                lor_length: u64::MAX,
                lor_stateid: sid(7),
            }),
        }),
        A::OpCbLayoutrecall(CbLayoutrecall4args {
            clora_type: Layouttype4::Layout4BlockVolume,
            clora_iomode: Layoutiomode4::Layoutiomode4Rw,
            clora_changed: false,
            clora_recall: Layoutrecall4::Layoutrecall4Fsid(Fsid4 { major: 1, minor: 2 }),
        }),
        A::OpCbLayoutrecall(CbLayoutrecall4args {
            clora_type: Layouttype4::Layout4Osd2Objects,
            clora_iomode: Layoutiomode4::Layoutiomode4Read,
            clora_changed: false,
            clora_recall: Layoutrecall4::Layoutrecall4All,
        }),
        A::OpCbNotify(CbNotify4args {
            cna_stateid: sid(8),
            cna_fh: fh(2),
            cna_changes: vec![Notify4 {
                notify_mask: bits(&[NotifyType4::Notify4AddEntry as u32]),
                notify_vals,
            }],
        }),
        A::OpCbPushDeleg(CbPushDeleg4args {
            cpda_fh: fh(1),
            cpda_delegation: open_delegations().swap_remove(1),
        }),
        A::OpCbRecallAny(CbRecallAny4args {
            craa_objects_to_keep: 100,
            craa_type_mask: bits(&[RCA4_TYPE_MASK_RDATA_DLG, RCA4_TYPE_MASK_FILE_LAYOUT]),
        }),
        A::OpCbRecallableObjAvail(CbRecallAny4args {
            craa_objects_to_keep: 0,
            craa_type_mask: bits(&[RCA4_TYPE_MASK_WDATA_DLG]),
        }),
        A::OpCbRecallSlot(CbRecallSlot4args {
            rsa_target_highest_slotid: 3,
        }),
        A::OpCbSequence(CbSequence4args {
            csa_sessionid: session(1),
            csa_sequenceid: 1,
            csa_slotid: 0,
            csa_highest_slotid: 0,
            csa_cachethis: false,
            csa_referring_call_lists: vec![ReferringCallList4 {
                rcl_sessionid: session(1),
                rcl_referring_calls: vec![ReferringCall4 {
                    rc_sequenceid: 17,
                    rc_slotid: 2,
                }],
            }],
        }),
        A::OpCbWantsCancelled(CbWantsCancelled4args {
            cwca_contended_wants_cancelled: true,
            cwca_resourced_wants_cancelled: false,
        }),
        A::OpCbNotifyLock(CbNotifyLock4args {
            cnla_fh: fh(1),
            cnla_lock_owner: owner(b"waiter"),
        }),
        A::OpCbNotifyDeviceid(CbNotifyDeviceid4args {
            cnda_changes: vec![Notify4 {
                notify_mask: bits(&[NotifyDeviceidType4::NotifyDeviceid4Delete as u32]),
                notify_vals: encode(&NotifyDeviceidDelete4 {
                    ndd_layouttype: Layouttype4::Layout4Nfsv41Files,
                    ndd_deviceid: [4; 16],
                }),
            }],
        }),
        A::OpCbOffload(CbOffload4args {
            coa_fh: fh(1),
            coa_stateid: sid(9),
            coa_offload_info: OffloadInfo4::Nfs4Ok(write_response(true)),
        }),
        A::OpCbOffload(CbOffload4args {
            coa_fh: fh(1),
            coa_stateid: sid(9),
            coa_offload_info: OffloadInfo4::Default(Nfsstat4::Nfs4errNospc, 4096),
        }),
        A::OpCbIllegal,
    ];
    v.push(A::OpCbSequence(CbSequence4args {
        csa_sessionid: session(2),
        csa_sequenceid: u32::MAX,
        csa_slotid: 1,
        csa_highest_slotid: 1,
        csa_cachethis: true,
        csa_referring_call_lists: vec![],
    }));
    v
}

fn every_cb_resop() -> Vec<NfsCbResop4> {
    use NfsCbResop4 as R;
    let ok = Nfsstat4::Nfs4Ok;
    vec![
        R::OpCbGetattr(CbGetattr4res::Nfs4Ok(CbGetattr4resok {
            obj_attributes: attrs(),
        })),
        R::OpCbGetattr(CbGetattr4res::Default(Nfsstat4::Nfs4errBadhandle)),
        R::OpCbRecall(CbRecall4res { status: ok }),
        R::OpCbLayoutrecall(CbLayoutrecall4res {
            clorr_status: Nfsstat4::Nfs4errNomatchingLayout,
        }),
        R::OpCbNotify(CbNotify4res { cnr_status: ok }),
        R::OpCbPushDeleg(CbPushDeleg4res {
            cpdr_status: Nfsstat4::Nfs4errRejectDeleg,
        }),
        R::OpCbRecallAny(CbRecallAny4res { crar_status: ok }),
        R::OpCbRecallableObjAvail(CbRecallableObjAvail4res { croa_status: ok }),
        R::OpCbRecallSlot(CbRecallSlot4res { rsr_status: ok }),
        R::OpCbSequence(CbSequence4res::Nfs4Ok(CbSequence4resok {
            csr_sessionid: session(1),
            csr_sequenceid: 1,
            csr_slotid: 0,
            csr_highest_slotid: 0,
            csr_target_highest_slotid: 0,
        })),
        R::OpCbSequence(CbSequence4res::Default(Nfsstat4::Nfs4errBadslot)),
        R::OpCbWantsCancelled(CbWantsCancelled4res { cwcr_status: ok }),
        R::OpCbNotifyLock(CbNotifyLock4res { cnlr_status: ok }),
        R::OpCbNotifyDeviceid(CbNotifyDeviceid4res { cndr_status: ok }),
        R::OpCbOffload(CbOffload4res { cor_status: ok }),
        R::OpCbIllegal(CbIllegal4res {
            status: Nfsstat4::Nfs4errOpIllegal,
        }),
    ]
}

// ---------------------------------------------------------------------
// Round trips

/// Every item of `nfs_opnum4` (found by trying every value up to
/// OP_ILLEGAL).
fn every_opnum() -> Vec<NfsOpnum4> {
    (0..=OP_ILLEGAL_VALUE)
        .filter_map(NfsOpnum4::from_value)
        .collect()
}

const OP_ILLEGAL_VALUE: i32 = 10044;

#[test]
fn every_operations_arguments_round_trip() {
    let args = every_argop();
    for a in &args {
        round_trip(&format!("{:?} arguments", a.discriminant()), a);
    }
    let opnums = every_opnum();
    assert_eq!(opnums.len(), 73 + 1, "nfs_opnum4: 3..=75 and ILLEGAL");
    for op in opnums {
        assert!(
            args.iter().any(|a| a.discriminant() == op),
            "no arguments of {op:?} were tried"
        );
    }
    let compound = Compound4args {
        tag: b(b"every operation"),
        minorversion: 2,
        argarray: args,
    };
    round_trip("COMPOUND4args", &compound);
    assert_eq!(
        Compound4args::from_xdr(&compound.to_xdr()).unwrap(),
        compound
    );
}

#[test]
fn every_operations_results_round_trip() {
    let results = every_resop();
    for r in &results {
        round_trip(&format!("{:?} results", r.discriminant()), r);
    }
    for op in every_opnum() {
        assert!(
            results.iter().any(|r| r.discriminant() == op),
            "no results of {op:?} were tried"
        );
    }
    let compound = Compound4res {
        status: Nfsstat4::Nfs4Ok,
        tag: b(b"every operation"),
        resarray: results,
    };
    round_trip("COMPOUND4res", &compound);
    assert_eq!(
        Compound4res::from_xdr(&compound.to_xdr()).unwrap(),
        compound
    );
}

#[test]
fn every_callback_operation_round_trips() {
    let args = every_cb_argop();
    let results = every_cb_resop();
    for a in &args {
        round_trip(&format!("CB {} arguments", a.discriminant()), a);
    }
    for r in &results {
        round_trip(&format!("CB {} results", r.discriminant()), r);
    }
    let cb_ops: Vec<NfsCbOpnum4> = (0..=OP_ILLEGAL_VALUE)
        .filter_map(NfsCbOpnum4::from_value)
        .collect();
    assert_eq!(cb_ops.len(), 13 + 1, "nfs_cb_opnum4: 3..=15 and CB_ILLEGAL");
    for op in cb_ops {
        let n = op.value() as u32;
        assert!(args.iter().any(|a| a.discriminant() == n), "{op:?} args");
        assert!(
            results.iter().any(|r| r.discriminant() == n),
            "{op:?} results"
        );
    }
    let call = CbCompound4args {
        tag: b(b"cb"),
        minorversion: 1,
        callback_ident: 0,
        argarray: args,
    };
    round_trip("CB_COMPOUND4args", &call);
    let reply = CbCompound4res {
        status: Nfsstat4::Nfs4errDelay,
        tag: b(b"cb"),
        resarray: results,
    };
    round_trip("CB_COMPOUND4res", &reply);
    // The callback operation's discriminant is the enum's word.
    let bytes = NfsCbArgop4::OpCbRecallSlot(CbRecallSlot4args {
        rsa_target_highest_slotid: 7,
    })
    .to_xdr();
    assert_eq!(&bytes[..], &[0, 0, 0, 10, 0, 0, 0, 7]);
}

#[test]
fn program_and_procedure_numbers_are_rfc_5662s() {
    assert_eq!(NFS4_PROGRAM, 100_003);
    assert_eq!(NFS_V4, 4);
    assert_eq!(nfs_v4::NFSPROC4_NULL, 0);
    assert_eq!(nfs_v4::NFSPROC4_COMPOUND, 1);
    assert_eq!(NFS4_CALLBACK, 0x4000_0000);
    assert_eq!(NFS_CB, 1);
    assert_eq!(nfs_cb::CB_NULL, 0);
    assert_eq!(nfs_cb::CB_COMPOUND, 1);
    // A few numbers every implementation agrees on.
    assert_eq!(NfsOpnum4::OpExchangeId.value(), 42);
    assert_eq!(NfsOpnum4::OpSequence.value(), 53);
    assert_eq!(NfsOpnum4::OpClone.value(), 71);
    assert_eq!(NfsOpnum4::OpRemovexattr.value(), 75);
    assert_eq!(Nfsstat4::Nfs4errDelegRevoked.value(), 10087);
    assert_eq!(Nfsstat4::Nfs4errOffloadNoReqs.value(), 10094);
    assert_eq!(Nfsstat4::Nfs4errXattr2big.value(), 10096);
    assert_eq!(FATTR4_SUPPATTR_EXCLCREAT, 75);
    assert_eq!(FATTR4_SEC_LABEL, 80);
    assert_eq!(FATTR4_XATTR_SUPPORT, 82);
}

// ---------------------------------------------------------------------
// The Upper-Layer Binding: DDP-eligible items (RFC 8267 §4)

/// Encodes `v` into a Payload stream, whose DDP-eligible items travel out
/// of line, and checks: the items are `want`, in order; the inline stream
/// plus the items is the plain encoding; decoding the payload gives `v`.
fn ddp_round_trip<T: Marshal + Unmarshal + PartialEq + Debug>(what: &str, v: &T, want: &[&[u8]]) {
    let mut pe = PayloadEncoder::new();
    v.marshal(&mut pe.encoder());
    let payload = pe.finish();
    let items: Vec<&[u8]> = payload.items().iter().map(|i| &i.data[..]).collect();
    assert_eq!(items, want, "{what}: the out-of-line items");
    let plain = encode(v);
    assert_eq!(
        payload.flatten(),
        plain,
        "{what}: inline + items = the plain stream"
    );
    let reduced: usize = want.iter().map(|d| d.len().div_ceil(4) * 4).sum();
    assert_eq!(
        payload.inline().len(),
        plain.len() - reduced,
        "{what}: reduced"
    );
    let mut dec = Decoder::with_ddp(&payload);
    let back = T::unmarshal(&mut dec).unwrap_or_else(|e| panic!("{what}: {e}"));
    dec.expect_end().unwrap();
    assert_eq!(&back, v, "{what}: decoded from the payload");
}

#[test]
fn read_write_readlink_and_symlink_data_are_ddp_items() {
    let data = Bytes::from((0..8191u32).map(|i| i as u8).collect::<Vec<u8>>());
    let write = Write4args {
        stateid: sid(1),
        offset: 0,
        stable: StableHow4::FileSync4,
        data: data.clone(),
    };
    ddp_round_trip("WRITE4args", &write, &[&data]);
    let read = Read4resok {
        eof: true,
        data: data.clone(),
    };
    ddp_round_trip("READ4resok", &read, &[&data]);
    let link = b(b"../../a/symbolic/link");
    ddp_round_trip(
        "READLINK4resok",
        &Readlink4resok { link: link.clone() },
        &[&link],
    );
    let symlink = Create4args {
        objtype: Createtype4::Nf4lnk(link.clone()),
        objname: b(b"the link"),
        createattrs: attrs(),
    };
    ddp_round_trip("CREATE4args (NF4LNK)", &symlink, &[&link]);
    // Other objects carry nothing out of line; nor do READ_PLUS and WRITE_SAME.
    let dir = Create4args {
        objtype: Createtype4::Nf4dir,
        objname: b(b"dir"),
        createattrs: attrs(),
    };
    ddp_round_trip("CREATE4args (NF4DIR)", &dir, &[]);
    for r in every_resop() {
        if let NfsResop4::OpReadPlus(_) = r {
            ddp_round_trip("READ_PLUS4res", &r, &[]);
        }
    }
    for a in every_argop() {
        if let NfsArgop4::OpWriteSame(_) = a {
            ddp_round_trip("WRITE_SAME4args", &a, &[]);
        }
    }

    // Inside COMPOUNDs, in the order they come.
    let call = Compound4args {
        tag: Bytes::new(),
        minorversion: 1,
        argarray: vec![
            NfsArgop4::OpSequence(Sequence4args {
                sa_sessionid: session(1),
                sa_sequenceid: 2,
                sa_slotid: 0,
                sa_highest_slotid: 0,
                sa_cachethis: false,
            }),
            NfsArgop4::OpPutfh(Putfh4args { object: fh(1) }),
            NfsArgop4::OpWrite(write),
            NfsArgop4::OpCreate(symlink),
            NfsArgop4::OpGetattr(Getattr4args {
                attr_request: bits(&[FATTR4_CHANGE]),
            }),
        ],
    };
    ddp_round_trip("COMPOUND4args", &call, &[&data, &link]);
    let reply = Compound4res {
        status: Nfsstat4::Nfs4Ok,
        tag: Bytes::new(),
        resarray: vec![
            NfsResop4::OpPutfh(Putfh4res {
                status: Nfsstat4::Nfs4Ok,
            }),
            NfsResop4::OpRead(Read4res::Nfs4Ok(read)),
            NfsResop4::OpReadlink(Readlink4res::Nfs4Ok(Readlink4resok { link: link.clone() })),
        ],
    };
    ddp_round_trip("COMPOUND4res", &reply, &[&data, &link]);

    // A reply whose READ data arrived in a Write chunk: the inline stream
    // holds only the length word.
    let (inline, _) = {
        let mut pe = PayloadEncoder::new();
        reply.marshal(&mut pe.encoder());
        pe.finish().into_parts()
    };
    let got = rpcrdma_xdr::Payload::from_write_chunks(inline, [data.clone(), link.clone()]);
    let mut dec = Decoder::with_ddp(&got);
    assert_eq!(Compound4res::unmarshal(&mut dec).unwrap(), reply);
    dec.expect_end().unwrap();
}

// ---------------------------------------------------------------------
// The Linux kernel's EXCHANGE_ID

/// The RPC messages of the capture's RPC-over-RDMA connection, their
/// transport headers stripped (RFC 8166 §4.2, read here field by field:
/// the test kit reads MPA and DDP only).
fn kernel_rpc_messages() -> Vec<Bytes> {
    let path = rpcrdma_testkit::shared_dir(env!("CARGO_MANIFEST_DIR"))
        .join("captures/kernel-client-nfs41-exchange-id.pcap");
    let file = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let streams = tcp::reassemble(&pcap::read(&file).unwrap());
    let mut out = Vec::new();
    for s in streams.iter().filter(|s| s.data.starts_with(mpa::REQ_KEY)) {
        let back = streams
            .iter()
            .find(|b| b.src == s.dst && b.dst == s.src)
            .expect("the MPA Reply direction");
        let (_, _, (calls, replies)) = mpa::read_connection(&s.data, &back.data).unwrap();
        for m in calls.into_iter().chain(replies) {
            if let Some(rpc) = strip_rpcrdma_v1(&m) {
                out.push(Bytes::copy_from_slice(rpc));
            }
        }
    }
    out
}

/// The RPC message of an RPC-over-RDMA Version One RDMA_MSG: after xid,
/// version, credits and type, the Read list, the Write list and the Reply
/// chunk (each present item announced by a TRUE word).
fn strip_rpcrdma_v1(m: &[u8]) -> Option<&[u8]> {
    let word = |at: usize| -> Option<u32> {
        m.get(at..at + 4)
            .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
    };
    if word(4)? != 1 || word(12)? != 0 {
        return None; // not Version One, or not RDMA_MSG
    }
    let mut at = 16;
    // Read list: position, then a segment (handle, length, 64-bit offset).
    while word(at)? == 1 {
        at += 4 + 4 + 16;
    }
    at += 4;
    // Write list: each chunk a count of segments.
    while word(at)? == 1 {
        at += 4 + 4 + 16 * word(at + 4)? as usize;
    }
    at += 4;
    // Reply chunk: optional, a count of segments.
    if word(at)? == 1 {
        at += 4 + 4 + 16 * word(at + 4)? as usize;
    } else {
        at += 4;
    }
    m.get(at..)
}

#[test]
fn the_kernels_exchange_id_decodes_and_reencodes_byte_for_byte() {
    let mut compounds = 0;
    for m in kernel_rpc_messages() {
        let mut dec = Decoder::from_bytes(&m);
        let Ok(Header::Call(c)) = decode_header(&mut dec) else {
            continue;
        };
        let body = m.slice(dec.position()..);
        if (c.prog, c.vers, c.proc_) == (NFS4_PROGRAM, NFS_V4, 0) {
            assert!(body.is_empty(), "NULL has no arguments");
            continue;
        }
        assert_eq!(
            (c.prog, c.vers, c.proc_),
            (NFS4_PROGRAM, NFS_V4, nfs_v4::NFSPROC4_COMPOUND)
        );
        let args = Compound4args::from_xdr(&body).unwrap_or_else(|e| {
            panic!("the kernel's COMPOUND does not decode: {e}\n{}", hex(&body))
        });
        assert_eq!(
            hex(&args.to_xdr()),
            hex(&body),
            "re-encoding differs from the kernel's bytes"
        );
        assert_eq!(args.minorversion, 1);
        let [NfsArgop4::OpExchangeId(x)] = &args.argarray[..] else {
            panic!("one EXCHANGE_ID: {args:?}");
        };
        assert!(args.tag.is_empty());
        // The client owner: "Linux NFSv4.1 " and the guest's host name,
        // with the boot verifier.
        assert_eq!(&x.eia_clientowner.co_ownerid[..], b"Linux NFSv4.1 guest");
        assert_eq!(
            x.eia_clientowner.co_verifier,
            [24, 234, 53, 202, 129, 90, 241, 172]
        );
        // The flags the kernel asks for: referrals, and stateids bound to
        // the principal.
        assert_eq!(
            x.eia_flags,
            EXCHGID4_FLAG_SUPP_MOVED_REFER | EXCHGID4_FLAG_BIND_PRINC_STATEID,
            "flags {:#x}",
            x.eia_flags
        );
        // No state protection (AUTH_SYS mount: SP4_MACH_CRED is for Kerberos).
        assert_eq!(x.eia_state_protect, StateProtect4A::Sp4None);
        // The implementation id: kernel.org, the kernel's uname, no date.
        let [id] = &x.eia_client_impl_id[..] else {
            panic!("implementation id {:?}", x.eia_client_impl_id);
        };
        assert_eq!(&id.nii_domain[..], b"kernel.org");
        assert_eq!(
            &id.nii_name[..],
            &b"Linux 6.1.0-56-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.192-2 (2026-11-16) x86_64"[..]
        );
        assert_eq!(
            id.nii_date,
            Nfstime4 {
                seconds: 0,
                nseconds: 0
            }
        );
        compounds += 1;
    }
    assert_eq!(compounds, 1, "the capture holds one COMPOUND");
}

// ---------------------------------------------------------------------
// Hostile bytes

/// A COMPOUND of many operations, its encoding.
fn hostile_seed() -> Bytes {
    Compound4args {
        tag: b(b"hostile"),
        minorversion: 2,
        argarray: every_argop(),
    }
    .to_xdr()
}

#[test]
fn truncated_compound_arguments_are_refused() {
    let full = hostile_seed();
    for cut in 0..full.len() {
        let short = full.slice(..cut);
        assert!(
            Compound4args::from_xdr(&short).is_err(),
            "{cut} of {} bytes decoded",
            full.len()
        );
    }
    // And with a word of garbage after a whole value.
    let mut long = BytesMut::from(&full[..]);
    long.extend_from_slice(&[0, 0, 0, 0]);
    assert!(Compound4args::from_xdr(&long.freeze()).is_err());
}

#[test]
fn mutated_compound_arguments_never_panic() {
    let full = hostile_seed();
    let mut rng = XorShift::new(0x6e66_7334);
    let (mut refused, mut taken) = (0u32, 0u32);
    for round in 0..20_000 {
        let mut m = full.to_vec();
        match round % 4 {
            // Flip one bit.
            0 => {
                let i = rng.below(m.len());
                m[i] ^= 1 << rng.below(8);
            }
            // An extreme word at a word boundary: a length, a count, a
            // discriminant or an opnum gone wrong.
            1 => {
                let i = rng.below(m.len() / 4) * 4;
                let w: u32 =
                    [0xffff_ffff, 0x8000_0000, 0x7fff_ffff, 10_045, 76, 2, 0][rng.below(7)];
                m[i..i + 4].copy_from_slice(&w.to_be_bytes());
            }
            // Random bytes over a stretch.
            2 => {
                let i = rng.below(m.len());
                let n = rng.below(16).min(m.len() - i);
                for x in &mut m[i..i + n] {
                    *x = rng.byte();
                }
            }
            // Cut, then flip.
            _ => {
                let cut = rng.below(m.len());
                m.truncate(cut);
                if !m.is_empty() {
                    let i = rng.below(m.len());
                    m[i] = rng.byte();
                }
            }
        }
        let m = Bytes::from(m);
        match Compound4args::from_xdr(&m) {
            Err(_) => refused += 1,
            Ok(v) => {
                taken += 1;
                // What decodes is a value the encoder can send again.
                v.xdr_check().expect("a decoded value passes its own check");
                assert_eq!(Compound4args::from_xdr(&v.to_xdr()).unwrap(), v);
            }
        }
    }
    assert!(refused > 5_000, "refused {refused}, taken {taken}");
    // The op number of the first operation made unknown (10045), or its
    // count made enormous: refused, not allocated.
    let tag = 4 + 8; // the length word, "hostile" and its padding
    let first_op = tag + 4 + 4; // after the minor version and the count
    for (at, word) in [(first_op, 10_045u32), (first_op - 4, 0xffff_ffff)] {
        let mut m = full.to_vec();
        m[at..at + 4].copy_from_slice(&word.to_be_bytes());
        assert!(
            Compound4args::from_xdr(&Bytes::from(m)).is_err(),
            "{word:#x} at {at}"
        );
    }
}
