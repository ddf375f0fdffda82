//! Golden inputs: every RPC-over-RDMA message the Linux kernel put on the
//! wire in `shared/captures/*.pcap` must decode, and re-encoding its header
//! must give back the identical bytes. The RFC 8797 private data in the MPA
//! Request/Reply frames must decode too.

use std::path::PathBuf;

use bytes::Bytes;
use rpcrdma_testkit::{mpa, pcap, tcp};
use rpcrdma_wire::{decode, DecodeConfig, Header, PrivateData, V1Body};
use rpcrdma_xdr::Encode;

/// One MPA connection found in a capture.
struct Conn {
    req: mpa::StartFrame,
    rep: mpa::StartFrame,
    /// Send payloads, initiator to responder then responder to initiator.
    sends: Vec<Vec<u8>>,
}

fn captures() -> Vec<PathBuf> {
    let dir = rpcrdma_testkit::shared_dir(env!("CARGO_MANIFEST_DIR")).join("captures");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| {
            panic!(
                "kernel captures missing at {} ({e}); set RPCRDMA_SHARED_DIR",
                dir.display()
            )
        })
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .collect();
    v.sort();
    assert!(
        v.len() >= 3,
        "expected the three kernel captures in {}",
        dir.display()
    );
    v
}

fn connections(path: &PathBuf) -> Vec<Conn> {
    let frames = pcap::read(&std::fs::read(path).unwrap()).unwrap();
    let streams = tcp::reassemble(&frames);
    let mut out = Vec::new();
    for a in &streams {
        if !a.data.starts_with(mpa::REQ_KEY) {
            continue;
        }
        // The reverse direction of the same connection: the next stream
        // with swapped endpoints that starts with a Reply.
        let b = streams
            .iter()
            .find(|b| b.src == a.dst && b.dst == a.src && b.data.starts_with(mpa::REP_KEY))
            .unwrap_or_else(|| panic!("{}: no MPA Reply for {}", path.display(), a.src));
        let (req, rep, (x, y)) = mpa::read_connection(&a.data, &b.data).unwrap();
        out.push(Conn {
            req,
            rep,
            sends: x.into_iter().chain(y).collect(),
        });
    }
    out
}

#[test]
fn every_kernel_message_decodes_and_reencodes_identically() {
    let mut total = 0;
    let mut with_reply_chunk = 0;
    for path in captures() {
        for conn in connections(&path) {
            for msg in conn.sends {
                let buf = Bytes::from(msg);
                let m = decode(&buf, &DecodeConfig::default()).unwrap_or_else(|e| {
                    panic!(
                        "{}: kernel message rejected: {e}\n{}",
                        path.display(),
                        hex::encode(&buf)
                    )
                });
                assert_eq!(
                    m.header.to_bytes(),
                    buf.slice(..m.header_len),
                    "{}",
                    path.display()
                );
                assert_eq!(m.header.encoded_len(), m.header_len);
                assert!(matches!(m.header, Header::V1(_)));
                // Version One-only receivers accept them too.
                let v1 = DecodeConfig {
                    versions: rpcrdma_wire::VersionRange::V1_ONLY,
                    ..Default::default()
                };
                assert_eq!(decode(&buf, &v1).unwrap(), m);
                if m.header.chunks().is_some_and(|c| c.reply.is_some()) {
                    with_reply_chunk += 1;
                }
                total += 1;
            }
        }
    }
    // NULL calls and replies in all three captures, FSINFO, EXCHANGE_ID.
    assert!(total >= 10, "only {total} messages found");
    assert!(
        with_reply_chunk >= 1,
        "the EXCHANGE_ID call with a Reply chunk was not found"
    );
}

#[test]
fn exchange_id_reply_chunk_matches_the_capture() {
    let path = captures()
        .into_iter()
        .find(|p| p.ends_with("kernel-client-nfs41-exchange-id.pcap"))
        .unwrap();
    let conn = connections(&path).into_iter().next().unwrap();
    let call = conn
        .sends
        .iter()
        .map(|s| decode(&Bytes::from(s.clone()), &DecodeConfig::default()).unwrap())
        .find(|m| m.header.chunks().is_some_and(|c| c.reply.is_some()))
        .unwrap();
    let Header::V1(h) = &call.header else {
        unreachable!()
    };
    let V1Body::Msg(c) = &h.body else {
        panic!("EXCHANGE_ID is sent as RDMA_MSG")
    };
    let reply = c.reply.as_ref().unwrap();
    assert_eq!(reply.segments.len(), 1);
    assert_eq!(reply.segments[0].length, 4240);
    assert!(c.reads.is_empty() && c.writes.is_empty());
    assert_eq!(h.credits, 128);
}

#[test]
fn kernel_private_data_decodes() {
    let mut seen = 0;
    for path in captures() {
        for conn in connections(&path) {
            for f in [&conn.req, &conn.rep] {
                assert_eq!(f.rev, 2);
                assert_eq!(f.flags & mpa::FLAG_ENHANCED, mpa::FLAG_ENHANCED);
                let (offset, pd) = PrivateData::find(&f.private_data).unwrap();
                // Behind the RFC 6581 IRD/ORD words.
                assert_eq!(offset, 4);
                assert_eq!((pd.send_size.bytes(), pd.recv_size.bytes()), (4096, 4096));
                assert_eq!(&pd.to_bytes()[..], &f.private_data[4..12]);
                seen += 1;
            }
            // The kernel client sets R; the kernel server (nfsd) clears it.
            let client = PrivateData::from_peer(Some(&conn.req.private_data));
            let server = PrivateData::from_peer(Some(&conn.rep.private_data));
            assert!(client.remote_invalidation());
            if path.ends_with("kernel-nfsd-null-calls.pcap") {
                assert!(!server.remote_invalidation());
                assert!(!rpcrdma_wire::private_data::remote_invalidation_allowed(
                    &client, &server
                ));
            }
        }
    }
    assert!(seen >= 8);
}
