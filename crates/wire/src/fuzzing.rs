//! Entry points shared by the coverage-guided fuzz harnesses (`fuzz/`) and
//! the bounded randomized tests inside `cargo test`.
//!
//! Each function takes arbitrary bytes, must never panic on its own, and
//! panics (via `assert!`) only when an invariant of this crate is broken,
//! which is exactly what a fuzzer should report. These are test support:
//! production code never calls them.

use bytes::Bytes;
use rpcrdma_xdr::Encode;

use crate::{
    decode, decode_owned, decode_plain, DecodeConfig, Header, PrivateData, Proc, Verdict,
    VersionRange,
};

/// Decodes `data` as a received message under the default configuration
/// and a Version One-only one, and checks the invariants:
///
/// * a valid message re-encodes to exactly the header bytes it came from,
///   and its payload is exactly the rest;
/// * [`decode_plain`] reads exactly the messages [`decode`] reads as an
///   `RDMA_MSG` without chunks, with the same header, and
///   [`crate::decode_owned`] agrees with [`decode`];
/// * an error reply decodes, under the same configuration, as a valid
///   `RDMA_ERROR` carrying the same XID, when its version is supported;
/// * nothing panics.
pub fn decode_roundtrip(data: &[u8]) {
    let buf = Bytes::copy_from_slice(data);
    for versions in [
        VersionRange::V1_AND_V2,
        VersionRange::V1_ONLY,
        VersionRange::V2_ONLY,
    ] {
        let cfg = DecodeConfig {
            versions,
            ..DecodeConfig::default()
        };
        check_one(&buf, &cfg);
    }
}

fn check_one(buf: &Bytes, cfg: &DecodeConfig) {
    let decoded = decode(buf, cfg);
    assert_eq!(
        decode_owned(buf.clone(), cfg),
        decoded,
        "decode_owned differs"
    );
    // The one-piece reading of the common message against the
    // field-by-field decoder alone.
    let fieldwise = crate::decode::decode_fieldwise(buf, cfg);
    match (&decoded, &fieldwise) {
        (Ok(m), Ok((h, n))) => assert_eq!((&m.header, m.header_len), (h, *n), "fast path differs"),
        (Err(rej), Err(e)) => assert_eq!(&rej.error, e, "fast path differs"),
        (a, b) => panic!("fast path differs: {a:?} / {b:?}"),
    }
    let plain_by_decoder = matches!(
        &fieldwise,
        Ok((h, _)) if h.proc_() == Proc::MSG && h.chunks().is_some_and(|c| c.is_empty())
    );
    match decode_plain(buf, cfg) {
        Some(p) => assert_eq!(
            fieldwise.as_ref().ok(),
            Some(&(p.header(), p.header_len)),
            "decode_plain differs from the decoder"
        ),
        None => assert!(!plain_by_decoder, "decode_plain missed a plain RDMA_MSG"),
    }
    match decoded {
        Ok(m) => {
            let enc = m.header.to_bytes();
            assert_eq!(enc.len(), m.header_len, "encoded_len/header_len disagree");
            let mut want = buf[..m.header_len].to_vec();
            // XDR pad bytes after rdma_optinfo are ignored on receipt (their
            // content carries nothing) and sent as zeros.
            if let Header::V2(crate::V2Header {
                body: crate::V2Body::Optional(o),
                ..
            }) = &m.header
            {
                for b in &mut want[crate::prefix::PREFIX_LEN + 12 + o.optinfo.len()..] {
                    *b = 0;
                }
            }
            assert_eq!(&enc[..], &want[..], "re-encoding differs from the input");
            assert_eq!(
                &m.payload[..],
                &buf[m.header_len..],
                "payload is not the rest"
            );
            assert!(cfg.versions.contains(m.header.vers()));
        }
        Err(rej) => {
            if let Verdict::Reply(reply) = &rej.verdict {
                let bytes = reply.to_bytes();
                if cfg.versions.contains(reply.vers) {
                    let back = decode(&bytes, cfg).expect("our own error reply must decode");
                    assert_eq!(back.header.xid(), reply.xid);
                    assert!(back.header.error().is_some());
                    assert!(back.payload.is_empty());
                } else {
                    // A reply in a version we do not speak is one we would
                    // ourselves drop, never answer.
                    let again = decode(&bytes, cfg).expect_err("unsupported version");
                    assert_eq!(again.verdict, Verdict::Discard);
                }
            }
        }
    }
}

/// Version Two only: decode, re-encode, compare (see [`decode_roundtrip`]).
pub fn decode_v2_roundtrip(data: &[u8]) {
    let buf = Bytes::copy_from_slice(data);
    let mut cfg = DecodeConfig {
        versions: VersionRange::V2_ONLY,
        ..DecodeConfig::default()
    };
    check_one(&buf, &cfg);
    // With every option type supported, RDMA2_OPTIONAL bodies are decoded
    // all the way through as well.
    if let Some(t) = data.get(20..24) {
        cfg.options.insert(crate::OptionType(u32::from_be_bytes([
            t[0], t[1], t[2], t[3],
        ])));
        check_one(&buf, &cfg);
    }
    if let Ok(m) = decode(&buf, &cfg) {
        assert!(matches!(m.header, Header::V2(_)));
    }
}

/// Searches `data` for RFC 8797 private data; a found message must decode
/// again from its own encoding and from its offset.
pub fn private_data_roundtrip(data: &[u8]) {
    if let Ok((offset, pd)) = PrivateData::find(data) {
        let enc = pd.to_bytes();
        assert_eq!(&data[offset..offset + 8], &enc[..]);
        assert_eq!(PrivateData::decode(&enc), Ok(pd));
        assert!(pd.send_size.bytes() >= 1024 && pd.recv_size.bytes() <= 262_144);
    }
    let t = crate::InlineThresholds::derive(
        &PrivateData::new(4096, 4096, true),
        &PrivateData::from_peer(Some(data)),
    );
    assert!(t.send >= 1024 && t.recv >= 1024);
}
