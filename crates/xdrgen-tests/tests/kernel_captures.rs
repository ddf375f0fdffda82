//! Golden vectors from the Linux kernel: every ONC RPC message of the
//! NFSv3 mount in `shared/captures/kernel-client-nfs3-mount.pcap` (MOUNT v3
//! over TCP, then NFSv3 over RPC-over-RDMA on siw) is decoded with the
//! types rpcrdma-xdrgen generated from `nfs3.x` and `mount3.x`, and encoding
//! what decoded gives back the kernel's bytes exactly (MNT's call and
//! reply, FSINFO's call, the NULL calls and replies).

use std::collections::HashMap;

use bytes::Bytes;
use rpcrdma_oncrpc::msg::{decode_header, AcceptedStatus, Header, ReplyBody};
use rpcrdma_testkit::{mpa, pcap, tcp};
use rpcrdma_wire::{decode, DecodeConfig};
use rpcrdma_xdr::Decoder;
use rpcrdma_xdrgen_tests::{mount3, nfs3};

/// Every RPC message of the capture, in order: MOUNT over TCP (record
/// marking stripped) and NFS over RDMA (transport header stripped).
fn messages() -> Vec<Bytes> {
    let path = rpcrdma_testkit::shared_dir(env!("CARGO_MANIFEST_DIR"))
        .join("captures/kernel-client-nfs3-mount.pcap");
    let file = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let streams = tcp::reassemble(&pcap::read(&file).unwrap());
    let mut out = Vec::new();
    for s in &streams {
        if s.data.starts_with(mpa::REQ_KEY) {
            let back = streams
                .iter()
                .find(|b| b.src == s.dst && b.dst == s.src)
                .expect("the MPA Reply direction");
            let (_, _, (calls, replies)) = mpa::read_connection(&s.data, &back.data).unwrap();
            for m in calls.into_iter().chain(replies) {
                let msg = decode(&Bytes::from(m), &DecodeConfig::default()).unwrap();
                if !msg.payload.is_empty() {
                    out.push(msg.payload);
                }
            }
        } else if s.src.port() == 20048 || s.dst.port() == 20048 {
            // Record marking (RFC 5531 §11): one fragment per record here.
            let mut rest = &s.data[..];
            while rest.len() >= 4 {
                let mark = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
                assert!(mark & 0x8000_0000 != 0, "single-fragment records");
                let len = (mark & 0x7fff_ffff) as usize;
                out.push(Bytes::copy_from_slice(&rest[4..4 + len]));
                rest = &rest[4 + len..];
            }
        }
    }
    out
}

/// Decodes `body` as `T` (all of it), re-encodes, and compares.
fn round_trip<T>(
    what: &str,
    body: &Bytes,
    from: impl Fn(&Bytes) -> Result<T, rpcrdma_xdr::XdrError>,
    to: impl Fn(&T) -> Bytes,
) -> T {
    let v = from(body).unwrap_or_else(|e| {
        panic!(
            "{what}: the kernel's bytes do not decode: {e}\n{}",
            hex::encode(body)
        )
    });
    assert_eq!(
        hex::encode(to(&v)),
        hex::encode(body),
        "{what}: re-encoding differs from the kernel's bytes"
    );
    v
}

#[test]
fn the_kernels_mount_and_nfs_messages_decode_and_reencode_byte_for_byte() {
    let msgs = messages();
    let mut calls: HashMap<u32, (u32, u32)> = HashMap::new();
    let mut seen: Vec<String> = Vec::new();
    for m in &msgs {
        let mut dec = Decoder::from_bytes(m);
        let header = decode_header(&mut dec).expect("an RPC header");
        let body = m.slice(dec.position()..);
        match header {
            Header::Call(c) => {
                calls.insert(c.xid, (c.prog, c.proc_));
                let what = format!("call {}/{}/{}", c.prog, c.vers, c.proc_);
                match (c.prog, c.vers, c.proc_) {
                    (_, _, 0) => assert!(body.is_empty(), "{what}: NULL has no arguments"),
                    (100005, 3, 1) => {
                        let dir = round_trip(
                            &what,
                            &body,
                            mount3::dirpath_from_xdr,
                            mount3::dirpath_to_xdr,
                        );
                        assert!(dir.starts_with('/'), "MNT of {dir}");
                    }
                    (100003, 3, 19) => {
                        let a =
                            round_trip(&what, &body, nfs3::Fsinfo3args::from_xdr, |v| v.to_xdr());
                        assert!(!a.fsroot.data.is_empty() && a.fsroot.data.len() <= 64);
                    }
                    other => panic!("{what}: no golden check for {other:?}"),
                }
                seen.push(what);
            }
            Header::Reply(r) => {
                let ReplyBody::Accepted {
                    status: AcceptedStatus::Success,
                    ..
                } = r.body
                else {
                    panic!("unexpected reply {r:?}");
                };
                let (prog, proc_) = calls[&r.xid];
                let what = format!("reply {prog}/{proc_}");
                match (prog, proc_) {
                    (_, 0) => assert!(body.is_empty()),
                    (100005, 1) => {
                        let res =
                            round_trip(&what, &body, mount3::Mountres3::from_xdr, |v| v.to_xdr());
                        let mount3::Mountres3::Mnt3Ok(ok) = res else {
                            panic!("MNT failed: {res:?}")
                        };
                        assert!(!ok.fhandle.is_empty());
                        assert!(!ok.auth_flavors.is_empty());
                    }
                    (100003, 19) => {
                        let res =
                            round_trip(&what, &body, nfs3::Fsinfo3res::from_xdr, |v| v.to_xdr());
                        let nfs3::Fsinfo3res::Nfs3Ok(ok) = res else {
                            panic!("FSINFO failed: {res:?}")
                        };
                        assert!(ok.rtmax >= ok.rtpref && ok.rtpref > 0);
                        assert!(
                            matches!(ok.obj_attributes, nfs3::PostOpAttr::True(ref a) if a.r#type == nfs3::Ftype3::Nf3dir)
                        );
                    }
                    other => panic!("{what}: no golden check for {other:?}"),
                }
                seen.push(what);
            }
        }
    }
    // The peer in the capture answered NULL but not FSINFO.
    for want in ["call 100005/3/1", "reply 100005/1", "call 100003/3/19"] {
        assert!(
            seen.iter().any(|s| s == want),
            "the capture holds {want}: {seen:?}"
        );
    }
}
