//! Behaviour of the XDR primitives, including hostile inputs.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use rpcrdma_xdr::{round_up, Decoder, Encoder, Payload, PayloadEncoder, XdrError};

fn encode(f: impl FnOnce(&mut Encoder<'_>)) -> BytesMut {
    let mut buf = BytesMut::new();
    f(&mut Encoder::new(&mut buf));
    buf
}

#[test]
fn rfc4506_layouts() {
    let b = encode(|e| {
        e.put_u32(0x0102_0304);
        e.put_i32(-2);
        e.put_u64(0x0102_0304_0506_0708);
        e.put_bool(true);
        e.put_opaque(b"ab");
        e.put_fixed_opaque(b"xyz");
        e.put_string("");
    });
    assert_eq!(
        &b[..],
        &[
            1, 2, 3, 4, 0xff, 0xff, 0xff, 0xfe, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 1, 0, 0, 0, 2,
            b'a', b'b', 0, 0, b'x', b'y', b'z', 0, 0, 0, 0, 0
        ][..]
    );
}

#[test]
fn opaque_length_beyond_input_is_an_error_not_a_slice() {
    let b = [0xff, 0xff, 0xff, 0xfc, 0, 0, 0, 0];
    let mut d = Decoder::new(&b);
    assert!(matches!(
        d.get_opaque(u32::MAX),
        Err(XdrError::UnexpectedEnd { offset: 4, .. })
    ));
}

#[test]
fn opaque_length_beyond_max_is_too_long() {
    let b = encode(|e| e.put_opaque(&[7; 9]));
    let mut d = Decoder::new(&b);
    assert_eq!(
        d.get_opaque(8),
        Err(XdrError::TooLong {
            offset: 0,
            len: 9,
            max: 8
        })
    );
}

#[test]
fn padding_must_be_present() {
    // Length 1 with the data byte but without its three pad bytes.
    let b = [0, 0, 0, 1, 9];
    assert!(matches!(
        Decoder::new(&b).get_opaque(8),
        Err(XdrError::UnexpectedEnd { .. })
    ));
}

#[test]
fn bool_must_be_zero_or_one() {
    let b = [0, 0, 0, 2];
    assert_eq!(
        Decoder::new(&b).get_bool(),
        Err(XdrError::BadBool {
            offset: 0,
            value: 2
        })
    );
    let b = [0, 0, 0, 2];
    assert!(matches!(
        Decoder::new(&b).get_optional::<u32>(),
        Err(XdrError::BadBool { .. })
    ));
}

#[test]
fn huge_array_count_rejected_before_allocation() {
    // Claims 2^30 elements of at least 4 bytes each, with 4 bytes left.
    let b = [0x40, 0, 0, 0, 0, 0, 0, 1];
    let mut d = Decoder::new(&b);
    assert!(matches!(
        d.get_array::<u32>(u32::MAX),
        Err(XdrError::UnexpectedEnd { .. })
    ));
    let mut d = Decoder::new(&b);
    assert!(matches!(
        d.get_array::<u32>(16),
        Err(XdrError::TooLong { .. })
    ));
}

#[test]
fn trailing_bytes_reported() {
    let b = [0, 0, 0, 1, 0, 0, 0, 2];
    let mut d = Decoder::new(&b);
    d.get_u32().unwrap();
    assert_eq!(
        d.expect_end(),
        Err(XdrError::TrailingBytes {
            offset: 4,
            count: 4
        })
    );
}

#[test]
fn bytes_backed_decoder_does_not_copy() {
    let b = encode(|e| e.put_opaque(b"zero-copy")).freeze();
    let mut d = Decoder::from_bytes(&b);
    let got = d.get_opaque_bytes(64).unwrap();
    assert_eq!(&got[..], b"zero-copy");
    assert_eq!(got.as_ptr(), b[4..].as_ptr());
}

#[test]
fn string_must_be_utf8() {
    let b = encode(|e| e.put_opaque(&[0xff, 0xfe]));
    assert_eq!(
        Decoder::new(&b).get_string(8),
        Err(XdrError::BadUtf8 { offset: 0 })
    );
}

#[test]
fn sub_decoder_is_bounded() {
    let b = encode(|e| {
        e.put_u32(1);
        e.put_u32(2);
    });
    let mut d = Decoder::new(&b);
    let mut s = d.sub(4).unwrap();
    assert_eq!(s.get_u32().unwrap(), 1);
    assert!(s.get_u32().is_err());
    assert_eq!(d.get_u32().unwrap(), 2);
}

fn sample_payload() -> Payload {
    let mut pe = PayloadEncoder::new();
    let mut e = pe.encoder();
    e.put_u32(0xaaaa_aaaa);
    e.put_opaque_ddp(Bytes::from_static(b"12345"));
    e.put_u32(0xbbbb_bbbb);
    e.put_opaque_ddp(Bytes::from_static(b"abcdefgh"));
    e.put_u32(0xcccc_cccc);
    pe.finish()
}

#[test]
fn payload_reduction_keeps_length_words_inline() {
    let p = sample_payload();
    assert_eq!(p.inline().len(), 4 * 5);
    let positions: Vec<usize> = p.item_positions().map(|(pos, _)| pos).collect();
    // First item right after word 0 and its length word; second after
    // the first item's 8 padded bytes and two more words.
    assert_eq!(positions, vec![8, 8 + 8 + 8]);
    let flat = p.flatten();
    let expect = encode(|e| {
        e.put_u32(0xaaaa_aaaa);
        e.put_opaque(b"12345");
        e.put_u32(0xbbbb_bbbb);
        e.put_opaque(b"abcdefgh");
        e.put_u32(0xcccc_cccc);
    });
    assert_eq!(&flat[..], &expect[..]);
    assert_eq!(p.stream_len(), expect.len());
}

#[test]
fn plain_encoder_puts_ddp_items_inline() {
    let b = encode(|e| e.put_opaque_ddp(Bytes::from_static(b"abc")));
    assert_eq!(&b[..], &[0, 0, 0, 3, b'a', b'b', b'c', 0]);
}

#[test]
fn read_chunks_reinserted_by_position() {
    let p = sample_payload();
    let chunks: Vec<(u32, Bytes)> = p
        .item_positions()
        .map(|(pos, i)| (pos as u32, i.data.clone()))
        .collect();
    let rx = Payload::from_read_chunks(p.inline().clone(), chunks).unwrap();
    assert_eq!(rx, p);
    let mut d = Decoder::with_ddp(&rx);
    assert_eq!(d.get_u32().unwrap(), 0xaaaa_aaaa);
    assert_eq!(&d.get_opaque_ddp(100).unwrap()[..], b"12345");
    assert_eq!(d.stream_position(), 16);
    assert_eq!(d.get_u32().unwrap(), 0xbbbb_bbbb);
    assert_eq!(&d.get_opaque_ddp(100).unwrap()[..], b"abcdefgh");
    assert_eq!(d.get_u32().unwrap(), 0xcccc_cccc);
    d.expect_end().unwrap();
}

#[test]
fn chunk_where_upper_layer_expects_inline_data_is_refused() {
    // The Upper Layer reads a plain u32 where a chunk was placed.
    let p = sample_payload();
    let mut d = Decoder::with_ddp(&p);
    d.get_u32().unwrap();
    d.get_u32().unwrap(); // length word of the first item
    assert_eq!(d.get_u32(), Err(XdrError::DdpMisplaced { position: 8 }));
}

#[test]
fn chunk_length_must_match_length_word() {
    let inline = encode(|e| e.put_u32(4)).freeze();
    let rx = Payload::from_read_chunks(inline, [(4, Bytes::from_static(b"abc"))]).unwrap();
    let mut d = Decoder::with_ddp(&rx);
    assert_eq!(
        d.get_opaque_ddp(100),
        Err(XdrError::DdpLengthMismatch {
            offset: 0,
            xdr: 4,
            chunk: 3
        })
    );
}

#[test]
fn bad_read_chunk_positions_rejected() {
    let inline = Bytes::from_static(&[0; 8]);
    let d = Bytes::from_static(b"abcd");
    for bad in [
        vec![(2u32, d.clone())],
        vec![(12, d.clone())],
        vec![(4, d.clone()), (4, d.clone())],
    ] {
        assert!(
            Payload::from_read_chunks(inline.clone(), bad.clone()).is_err(),
            "{bad:?}"
        );
    }
}

#[test]
fn unconsumed_chunk_is_an_error() {
    let inline = Bytes::from_static(&[0, 0, 0, 4]);
    let rx = Payload::from_read_chunks(inline, [(4, Bytes::from_static(b"abcd"))]).unwrap();
    let mut d = Decoder::with_ddp(&rx);
    d.get_u32().unwrap();
    assert_eq!(d.expect_end(), Err(XdrError::DdpUnconsumed { count: 1 }));
}

#[test]
fn write_chunks_taken_in_order_and_unused_chunk_means_inline() {
    // Reply: u32, a reduced opaque (in write chunk 1), then an inline
    // opaque of a union arm whose write chunk came back unused.
    let inline = encode(|e| {
        e.put_u32(0);
        e.put_u32(6);
        e.put_opaque(b"in");
    })
    .freeze();
    let rx = Payload::from_write_chunks(inline, [Bytes::from_static(b"placed"), Bytes::new()]);
    let mut d = Decoder::with_ddp(&rx);
    d.get_u32().unwrap();
    assert_eq!(&d.get_opaque_ddp(64).unwrap()[..], b"placed");
    assert_eq!(&d.get_opaque_ddp(64).unwrap()[..], b"in");
}

#[derive(Debug, Clone)]
enum Item {
    U32(u32),
    I64(i64),
    Bool(bool),
    Opaque(Vec<u8>),
    Fixed(Vec<u8>),
    Ddp(Vec<u8>),
}

fn item() -> impl Strategy<Value = Item> {
    prop_oneof![
        any::<u32>().prop_map(Item::U32),
        any::<i64>().prop_map(Item::I64),
        any::<bool>().prop_map(Item::Bool),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Item::Opaque),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Item::Fixed),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Item::Ddp),
    ]
}

fn put(e: &mut Encoder<'_>, it: &Item) {
    match it {
        Item::U32(v) => e.put_u32(*v),
        Item::I64(v) => e.put_i64(*v),
        Item::Bool(v) => e.put_bool(*v),
        Item::Opaque(v) => e.put_opaque(v),
        Item::Fixed(v) => e.put_fixed_opaque(v),
        Item::Ddp(v) => e.put_opaque_ddp(Bytes::copy_from_slice(v)),
    }
}

fn check(d: &mut Decoder<'_>, it: &Item) -> Result<(), XdrError> {
    match it {
        Item::U32(v) => assert_eq!(d.get_u32()?, *v),
        Item::I64(v) => assert_eq!(d.get_i64()?, *v),
        Item::Bool(v) => assert_eq!(d.get_bool()?, *v),
        Item::Opaque(v) => assert_eq!(d.get_opaque(64)?, &v[..]),
        Item::Fixed(v) => assert_eq!(d.get_fixed_opaque(v.len())?, &v[..]),
        Item::Ddp(v) => assert_eq!(&d.get_opaque_ddp(64)?[..], &v[..]),
    }
    Ok(())
}

proptest! {
    #[test]
    fn roundtrip_plain_and_reduced(items in proptest::collection::vec(item(), 0..24)) {
        // Plain encoding.
        let flat = encode(|e| items.iter().for_each(|i| put(e, i)));
        let mut d = Decoder::new(&flat);
        for i in &items { check(&mut d, i).unwrap(); }
        d.expect_end().unwrap();

        // Reduced encoding: same full stream, same decode.
        let mut pe = PayloadEncoder::new();
        { let mut e = pe.encoder(); items.iter().for_each(|i| put(&mut e, i)); }
        let p = pe.finish();
        prop_assert_eq!(&p.flatten()[..], &flat[..]);
        prop_assert_eq!(p.stream_len(), flat.len());
        prop_assert_eq!(p.pieces().iter().map(|s| s.len()).sum::<usize>(), flat.len());

        // As received through Read chunks at their stream positions.
        let chunks: Vec<(u32, Bytes)> =
            p.item_positions().map(|(pos, i)| (pos as u32, i.data.clone())).collect();
        let rx = Payload::from_read_chunks(p.inline().clone(), chunks).unwrap();
        let mut d = Decoder::with_ddp(&rx);
        for i in &items { check(&mut d, i).unwrap(); }
        d.expect_end().unwrap();
        prop_assert_eq!(d.stream_position(), flat.len());
    }

    #[test]
    fn decoder_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64), ops in proptest::collection::vec(0u8..8, 0..16)) {
        let mut d = Decoder::new(&data);
        for op in ops {
            let _ = match op {
                0 => d.get_u32().map(|_| ()),
                1 => d.get_u64().map(|_| ()),
                2 => d.get_bool().map(|_| ()),
                3 => d.get_opaque(u32::MAX).map(|_| ()),
                4 => d.get_string(16).map(|_| ()),
                5 => d.get_array::<u32>(u32::MAX).map(|_| ()),
                6 => d.get_opaque_ddp(u32::MAX).map(|_| ()),
                _ => d.get_fixed_opaque(7).map(|_| ()),
            };
        }
    }

    #[test]
    fn round_up_is_aligned(n in 0usize..1 << 20) {
        prop_assert_eq!(round_up(n) % 4, 0);
        prop_assert!(round_up(n) >= n && round_up(n) < n + 4);
    }
}
