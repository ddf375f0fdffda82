//! Readings pinned for the rdma-core provider (docs/spec-notes.md, C2).

use rpcrdma_rdmacore::Transport;
use rpcrdma_wire::PrivateData;

/// C2: InfiniBand/RoCE private data arrives zero padded to the CM field
/// (the REP carries 196 octets whatever the peer gave): the RFC 8797
/// message at its start is found and the padding ignored. These are the
/// octets the Linux 6.1 nfsd sent over rxe in the guest proof.
#[test]
fn c2_ib_private_data_is_padded_to_the_cm_field() {
    let mut rep = hex::decode("f6ab0e1801000303").unwrap();
    rep.resize(Transport::Ib.private_data_limits().accept, 0);
    assert_eq!(rep.len(), 196);
    let (at, pd) = PrivateData::find(&rep).expect("RFC 8797 message");
    assert_eq!(at, 0);
    assert_eq!(pd.send_size.bytes(), 4096);
    assert_eq!(pd.recv_size.bytes(), 4096);
    assert!(!pd.remote_invalidation());
    // The same in a padded REQ (56 octets).
    let mut req = hex::decode("f6ab0e1801010000").unwrap();
    req.resize(Transport::Ib.private_data_limits().connect, 0);
    let (_, pd) = PrivateData::find(&req).expect("RFC 8797 message");
    assert!(pd.remote_invalidation());
    assert_eq!(pd.send_size.bytes(), 1024);
}
