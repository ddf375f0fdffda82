//! Requirements of the specifications that no other wire test checked
//! (the requirements matrix, docs/requirements.md).

use rpcrdma_wire::PrivateData;

/// The flags byte of RFC 8797 private data: only the R bit is ever sent,
/// and a receiver reads only the R bit.
//= rfc8797#section-4
//# Senders MUST set these bits to zero and receivers MUST ignore their
//# value.
#[test]
fn private_data_reserved_bits_are_sent_zero_and_ignored() {
    for (r, flags) in [(true, 0x01u8), (false, 0x00)] {
        let b = PrivateData::new(4096, 8192, r).to_bytes();
        assert_eq!(b[5], flags, "R = {r}");
    }
    for flags in 0..=255u8 {
        let b = [0xf6, 0xab, 0x0e, 0x18, 0x01, flags, 0x03, 0x07];
        let pd = PrivateData::decode(&b).unwrap();
        assert_eq!(pd.remote_invalidation(), flags & 1 == 1, "{flags:#04x}");
        assert_eq!((pd.send_size.bytes(), pd.recv_size.bytes()), (4096, 8192));
    }
}
