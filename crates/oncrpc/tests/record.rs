//! Record marking (RFC 5531 §11): reassembly at every split point,
//! multi-fragment records, zero-length fragments, limits, truncation.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use rpcrdma_oncrpc::record::{fragment_header, frame, Deframer, Segment, MAX_FRAGMENT_LEN};
use rpcrdma_oncrpc::RecordError;

fn framed(msgs: &[&[u8]], max_fragment: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for m in msgs {
        for s in frame(&[m], max_fragment) {
            out.extend_from_slice(s.as_bytes());
        }
    }
    out
}

/// Feeds `wire` split at the given points and collects every record.
fn feed(d: &mut Deframer, wire: &[u8], splits: &[usize]) -> Result<Vec<Bytes>, RecordError> {
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut at = 0;
    for &s in splits.iter().chain(std::iter::once(&wire.len())) {
        let s = s.clamp(at, wire.len());
        buf.extend_from_slice(&wire[at..s]);
        at = s;
        while let Some(r) = d.decode(&mut buf)? {
            out.push(r);
        }
    }
    d.finish(&buf)?;
    Ok(out)
}

#[test]
fn every_single_split_point_of_a_multi_fragment_stream() {
    let msgs: [&[u8]; 3] = [b"first record!", b"", b"third record, split in fragments"];
    let wire = framed(&msgs, 5);
    for split in 0..=wire.len() {
        let mut d = Deframer::new(1024);
        let got = feed(&mut d, &wire, &[split]).unwrap();
        assert_eq!(got.len(), 3, "split at {split}");
        for (g, m) in got.iter().zip(msgs.iter()) {
            assert_eq!(&g[..], *m, "split at {split}");
        }
    }
}

#[test]
fn one_byte_at_a_time() {
    let msgs: [&[u8]; 2] = [b"abcdefghij", b"k"];
    let wire = framed(&msgs, 3);
    let splits: Vec<usize> = (0..wire.len()).collect();
    let mut d = Deframer::new(64);
    let got = feed(&mut d, &wire, &splits).unwrap();
    assert_eq!(
        got,
        vec![Bytes::from_static(b"abcdefghij"), Bytes::from_static(b"k")]
    );
}

#[test]
fn single_fragment_record_is_not_copied() {
    let wire = framed(&[b"zero copy please"], MAX_FRAGMENT_LEN);
    let mut buf = BytesMut::from(&wire[..]);
    let base = buf.as_ptr() as usize;
    let mut d = Deframer::new(64);
    let r = d.decode(&mut buf).unwrap().unwrap();
    assert_eq!(
        r.as_ptr() as usize,
        base + 4,
        "the record shares the receive buffer"
    );
}

#[test]
fn single_fragment_record_arriving_in_pieces_is_not_copied() {
    let wire = framed(&[&[9u8; 600]], MAX_FRAGMENT_LEN);
    let mut buf = BytesMut::with_capacity(wire.len());
    let base = buf.as_ptr() as usize;
    let mut d = Deframer::new(1000);
    buf.extend_from_slice(&wire[..100]);
    assert_eq!(d.decode(&mut buf).unwrap(), None);
    assert_eq!(buf.len(), 96, "the bytes stay in the caller's buffer");
    assert_eq!(d.wanted(&buf), 504);
    assert_eq!(d.single_fragment_len(), Some(600));
    buf.extend_from_slice(&wire[100..]);
    let r = d.decode(&mut buf).unwrap().unwrap();
    assert_eq!(&r[..], &[9u8; 600][..]);
    assert_eq!(r.as_ptr() as usize, base + 4, "split off, not gathered");
    assert_eq!(d.single_fragment_len(), None);
}

#[test]
fn a_fragment_taken_by_the_reader_ends_its_record() {
    let mut d = Deframer::new(1000);
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&fragment_header(5, false));
    buf.extend_from_slice(b"ab");
    assert_eq!(d.decode(&mut buf).unwrap(), None);
    assert_eq!(d.single_fragment_len(), None, "not the last fragment");
    buf.extend_from_slice(b"cde");
    buf.extend_from_slice(&fragment_header(4, true));
    buf.extend_from_slice(b"f");
    assert_eq!(d.decode(&mut buf).unwrap(), None);
    assert_eq!(d.single_fragment_len(), None, "earlier fragments gathered");
    let mut d = Deframer::new(1000);
    let mut buf = BytesMut::from(&fragment_header(300, true)[..]);
    buf.extend_from_slice(&[1u8; 50]);
    assert_eq!(d.decode(&mut buf).unwrap(), None);
    assert_eq!(d.single_fragment_len(), Some(300));
    buf.clear(); // the reader took the 50 and reads the other 250 itself
    d.fragment_taken();
    assert!(!d.in_record());
    buf.extend_from_slice(&framed(&[b"next"], MAX_FRAGMENT_LEN));
    assert_eq!(d.decode(&mut buf).unwrap().as_deref(), Some(&b"next"[..]));
    d.finish(&buf).unwrap();
}

#[test]
fn zero_length_fragments() {
    // Empty non-last fragments around data, then an empty last fragment.
    let mut wire = Vec::new();
    wire.extend_from_slice(&fragment_header(0, false));
    wire.extend_from_slice(&fragment_header(2, false));
    wire.extend_from_slice(b"hi");
    wire.extend_from_slice(&fragment_header(0, false));
    wire.extend_from_slice(&fragment_header(0, true));
    // An empty record.
    wire.extend_from_slice(&fragment_header(0, true));
    let mut d = Deframer::new(16);
    let got = feed(&mut d, &wire, &[]).unwrap();
    assert_eq!(got, vec![Bytes::from_static(b"hi"), Bytes::new()]);
}

#[test]
fn oversized_fragment_is_rejected_before_buffering_and_sticks() {
    let mut d = Deframer::new(1000);
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&fragment_header(1001, true));
    buf.extend_from_slice(&[0u8; 10]);
    let e = d.decode(&mut buf).unwrap_err();
    assert_eq!(
        e,
        RecordError::TooLarge {
            len: 1001,
            max: 1000
        }
    );
    // Sticky: the stream cannot be resynchronised.
    buf.extend_from_slice(&framed(&[b"ok"], 100));
    assert_eq!(d.decode(&mut buf).unwrap_err(), e);
    assert!(d.finish(&buf).is_err());
}

#[test]
fn record_limit_counts_all_fragments() {
    let wire = framed(&[&[1u8; 30]], 10);
    let mut d = Deframer::new(29);
    let e = feed(&mut d, &wire, &[]).unwrap_err();
    assert!(
        matches!(e, RecordError::TooLarge { len: 30, max: 29 }),
        "{e}"
    );
    // Exactly at the limit is fine.
    let mut d = Deframer::new(30);
    assert_eq!(feed(&mut d, &wire, &[]).unwrap()[0].len(), 30);
}

#[test]
fn huge_announced_fragment_wants_but_does_not_allocate() {
    let mut d = Deframer::new(usize::MAX);
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&[0x7f, 0xff, 0xff, 0xff]);
    assert_eq!(d.decode(&mut buf).unwrap(), None);
    assert!(d.wanted(&buf) > 1 << 30);
    assert!(
        buf.capacity() < 1 << 20,
        "nothing reserved for the announced length"
    );
}

#[test]
fn eof_inside_a_record_is_truncation() {
    let wire = framed(&[b"abcdef"], 4);
    for cut in 1..wire.len() {
        let mut d = Deframer::new(64);
        let mut buf = BytesMut::from(&wire[..cut]);
        while d.decode(&mut buf).unwrap().is_some() {}
        assert!(
            matches!(d.finish(&buf), Err(RecordError::Truncated { .. })),
            "cut at {cut}"
        );
    }
}

#[test]
fn frame_splits_across_pieces() {
    let segs = frame(&[b"ab", b"", b"cdefg"], 3);
    let expect = vec![
        Segment::Header(fragment_header(3, false)),
        Segment::Data(b"ab"),
        Segment::Data(b"c"),
        Segment::Header(fragment_header(3, false)),
        Segment::Data(b"def"),
        Segment::Header(fragment_header(1, true)),
        Segment::Data(b"g"),
    ];
    assert_eq!(segs, expect);
    assert_eq!(
        frame(&[], 10),
        vec![Segment::Header(fragment_header(0, true))]
    );
}

proptest! {
    #[test]
    fn frame_then_deframe_round_trips(
        msgs in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 0..6),
        max_fragment in 1usize..64,
        splits in proptest::collection::vec(0usize..2000, 0..8),
    ) {
        let refs: Vec<&[u8]> = msgs.iter().map(|m| &m[..]).collect();
        let wire = framed(&refs, max_fragment);
        let mut splits = splits;
        splits.sort_unstable();
        let mut d = Deframer::new(200);
        let got = feed(&mut d, &wire, &splits).unwrap();
        prop_assert_eq!(got.len(), msgs.len());
        for (g, m) in got.iter().zip(msgs.iter()) {
            prop_assert_eq!(&g[..], &m[..]);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        wire in proptest::collection::vec(any::<u8>(), 0..300),
        splits in proptest::collection::vec(0usize..300, 0..5),
    ) {
        let mut splits = splits;
        splits.sort_unstable();
        let mut d = Deframer::new(100);
        if let Ok(records) = feed(&mut d, &wire, &splits) {
            for r in records {
                prop_assert!(r.len() <= 100);
            }
        }
    }
}
