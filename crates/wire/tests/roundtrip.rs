//! Property tests: every header type round-trips through encode/decode,
//! encoded_len is exact, and arbitrary or mutated input never panics. Plus a
//! bounded randomized run of the same functions the fuzz harnesses call.

use bytes::{BufMut, Bytes, BytesMut};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use rand::{rngs::StdRng, Rng, SeedableRng};
use rpcrdma_wire::{
    decode, decode_owned, fuzzing, ChunkLists, DecodeConfig, Direction, ErrorBody, Header,
    InlineSize, InlineThresholds, OptionType, Optional, PrivateData, ReadSegment, Segment, V1Body,
    V1Header, V2Body, V2Header, WriteChunk,
};
use rpcrdma_xdr::{Encode, Encoder};

fn segment() -> impl Strategy<Value = Segment> {
    (any::<u32>(), any::<u32>(), any::<u64>()).prop_map(|(handle, length, offset)| Segment {
        handle,
        length,
        offset,
    })
}

fn write_chunk() -> impl Strategy<Value = WriteChunk> {
    prop::collection::vec(segment(), 1..6).prop_map(WriteChunk::new)
}

/// Chunk lists a valid header may carry: positions multiples of four in
/// non-decreasing order, non-empty chunks, within the default limits.
fn chunk_lists() -> impl Strategy<Value = ChunkLists> {
    (
        prop::collection::vec((0u32..1000, segment()), 0..8),
        prop::collection::vec(write_chunk(), 0..4),
        prop::option::of(write_chunk()),
    )
        .prop_map(|(mut reads, writes, reply)| {
            reads.sort_by_key(|(p, _)| *p);
            ChunkLists {
                reads: reads
                    .into_iter()
                    .map(|(p, target)| ReadSegment {
                        position: p * 4,
                        target,
                    })
                    .collect(),
                writes,
                reply,
            }
        })
}

fn error_body(v2: bool) -> impl Strategy<Value = ErrorBody> {
    let max = if v2 { 3 } else { 2 };
    (1u32..=max, any::<u32>(), any::<u32>()).prop_map(|(c, low, high)| match c {
        1 => ErrorBody::Vers { low, high },
        2 => ErrorBody::BadHeader,
        _ => ErrorBody::InvalOption,
    })
}

/// A payload that satisfies the header's rules.
fn payload_for(h: &Header) -> Bytes {
    let mut b = BytesMut::new();
    match h {
        Header::V1(V1Header {
            body: V1Body::Msg(_),
            xid,
            ..
        }) => {
            b.put_u32(*xid);
            b.put_u32(0);
        }
        Header::V2(V2Header {
            body: V2Body::Msg { direction, .. },
            xid,
            ..
        }) => {
            b.put_u32(*xid);
            b.put_u32(direction.value());
            b.put_u32(0);
        }
        Header::V2(V2Header {
            body: V2Body::Optional(_),
            ..
        }) => b.put_slice(b"anything"),
        _ => {}
    }
    b.freeze()
}

fn fix_chunks(c: &mut ChunkLists, msg: bool) {
    if msg {
        c.reads.retain(|r| r.position != 0);
    } else if !c.has_position_zero() && c.reply.is_none() {
        c.reply = Some(WriteChunk::new(vec![Segment::default()]));
    }
}

fn v1_header() -> impl Strategy<Value = V1Header> {
    (
        any::<u32>(),
        any::<u32>(),
        0u8..3,
        chunk_lists(),
        error_body(false),
    )
        .prop_map(|(xid, credits, kind, mut c, e)| {
            let body = match kind {
                0 => {
                    fix_chunks(&mut c, true);
                    V1Body::Msg(c)
                }
                1 => {
                    fix_chunks(&mut c, false);
                    V1Body::NoMsg(c)
                }
                _ => V1Body::Error(e),
            };
            V1Header { xid, credits, body }
        })
}

fn v2_header() -> impl Strategy<Value = V2Header> {
    (
        any::<u32>(),
        any::<u32>(),
        0u8..4,
        any::<bool>(),
        chunk_lists(),
        error_body(true),
        any::<u32>(),
        prop::collection::vec(any::<u8>(), 0..40),
    )
        .prop_map(|(xid, credits, kind, reply, mut c, e, opttype, info)| {
            let direction = if reply {
                Direction::Reply
            } else {
                Direction::Call
            };
            let body = match kind {
                0 => {
                    fix_chunks(&mut c, true);
                    V2Body::Msg {
                        direction,
                        chunks: c,
                    }
                }
                1 => {
                    fix_chunks(&mut c, false);
                    // A Version Two NOMSG holds its message in the chunk
                    // its direction names (spec note D3).
                    match direction {
                        Direction::Call if !c.has_position_zero() => c.reads.insert(
                            0,
                            ReadSegment {
                                position: 0,
                                target: Segment::default(),
                            },
                        ),
                        Direction::Reply if c.reply.is_none() => {
                            c.reply = Some(WriteChunk::new(vec![Segment::default()]));
                        }
                        _ => {}
                    }
                    V2Body::NoMsg {
                        direction,
                        chunks: c,
                    }
                }
                2 => V2Body::Error(e),
                _ => V2Body::Optional(Optional {
                    direction,
                    opttype: OptionType(opttype),
                    optinfo: Bytes::from(info),
                }),
            };
            V2Header { xid, credits, body }
        })
}

fn roundtrip(h: Header) {
    let mut cfg = DecodeConfig::default();
    if let Header::V2(V2Header {
        body: V2Body::Optional(o),
        ..
    }) = &h
    {
        cfg.options.insert(o.opttype);
    }
    let payload = payload_for(&h);
    let mut buf = BytesMut::new();
    h.encode_into(&mut buf);
    assert_eq!(buf.len(), h.encoded_len());
    // `encode_into` (which builds a header without chunks in one piece)
    // and the field-by-field encoder agree.
    let mut generic = BytesMut::new();
    h.encode(&mut Encoder::new(&mut generic));
    assert_eq!(buf, generic);
    buf.put_slice(&payload);
    let buf = buf.freeze();
    let m = decode(&buf, &cfg).unwrap_or_else(|e| panic!("{e}: {h:?}"));
    assert_eq!(m.header, h);
    assert_eq!(m.payload, payload);
    assert_eq!(decode_owned(buf, &cfg), Ok(m));
}

/// Headers without chunks (built in one piece by `encode_into`) have the
/// exact bytes of RFC 8166 §4 / draft-cel-01 §4: the prefix, Version Two's
/// `rdma_direction`, three empty lists.
#[test]
fn headers_without_chunks_encode_exactly() {
    for nomsg in [false, true] {
        let chunks = ChunkLists::default();
        let body = if nomsg {
            V1Body::NoMsg(chunks)
        } else {
            V1Body::Msg(chunks)
        };
        let h = Header::V1(V1Header {
            xid: 0x0102_0304,
            credits: 0x8000_0001,
            body,
        });
        let mut b = BytesMut::new();
        h.encode_into(&mut b);
        let proc_ = u8::from(nomsg);
        assert_eq!(
            hex::encode(&b),
            format!("01020304 00000001 80000001 0000000{proc_} 00000000 00000000 00000000")
                .replace(' ', "")
        );
        for direction in [Direction::Call, Direction::Reply] {
            let chunks = ChunkLists::default();
            let body = if nomsg {
                V2Body::NoMsg { direction, chunks }
            } else {
                V2Body::Msg { direction, chunks }
            };
            let h = Header::V2(V2Header {
                xid: 7,
                credits: 32,
                body,
            });
            let mut b = BytesMut::new();
            h.encode_into(&mut b);
            let d = direction.value();
            assert_eq!(
                hex::encode(&b),
                format!("00000007 00000002 00000020 0000000{proc_} 0000000{d} 00000000 00000000 00000000")
                    .replace(' ', "")
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn v1_headers_roundtrip(h in v1_header()) {
        roundtrip(Header::V1(h));
    }

    #[test]
    fn v2_headers_roundtrip(h in v2_header()) {
        roundtrip(Header::V2(h));
    }

    #[test]
    fn segments_roundtrip(s in segment(), p in any::<u32>()) {
        let r = ReadSegment { position: p, target: s };
        let mut buf = BytesMut::new();
        r.encode(&mut rpcrdma_xdr::Encoder::new(&mut buf));
        prop_assert_eq!(buf.len(), r.encoded_len());
        let mut dec = rpcrdma_xdr::Decoder::new(&buf);
        prop_assert_eq!(dec.get::<ReadSegment>().unwrap(), r);
    }

    #[test]
    fn private_data_roundtrips(flags in any::<u8>(), s in any::<u8>(), r in any::<u8>(), lead in prop::collection::vec(any::<u8>(), 0..12)) {
        let pd = PrivateData { flags, send_size: InlineSize(s), recv_size: InlineSize(r) };
        prop_assert_eq!(PrivateData::decode(&pd.to_bytes()), Ok(pd));
        let mut buf = lead.clone();
        buf.extend_from_slice(&pd.to_bytes());
        let (off, found) = PrivateData::find(&buf).unwrap();
        prop_assert!(off <= lead.len());
        if off == lead.len() { prop_assert_eq!(found, pd); }
    }

    #[test]
    fn inline_size_codes_roundtrip(code in any::<u8>()) {
        prop_assert_eq!(InlineSize::from_bytes(InlineSize(code).bytes()), InlineSize(code));
    }

    #[test]
    fn thresholds_are_symmetric(a in any::<[u8; 3]>(), b in any::<[u8; 3]>()) {
        let x = PrivateData { flags: a[0], send_size: InlineSize(a[1]), recv_size: InlineSize(a[2]) };
        let y = PrivateData { flags: b[0], send_size: InlineSize(b[1]), recv_size: InlineSize(b[2]) };
        let tx = InlineThresholds::derive(&x, &y);
        let ty = InlineThresholds::derive(&y, &x);
        prop_assert_eq!((tx.send, tx.recv), (ty.recv, ty.send));
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..200)) {
        fuzzing::decode_roundtrip(&data);
        fuzzing::decode_v2_roundtrip(&data);
        fuzzing::private_data_roundtrip(&data);
    }

    #[test]
    fn mutated_valid_headers_never_panic(h in v1_header(), flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..4)) {
        let mut buf = h.to_bytes().to_vec();
        buf.extend_from_slice(&payload_for(&Header::V1(h)));
        for (at, x) in flips {
            let n = buf.len();
            buf[at % n] ^= x;
        }
        fuzzing::decode_roundtrip(&buf);
    }
}

/// A bounded randomized run (fixed seed, so reproducible) of the fuzz
/// harness functions over random bytes and over mutations of valid
/// messages, including word-aligned edits that reach deep into the lists.
#[test]
fn bounded_fuzz_run() {
    let mut rng = StdRng::seed_from_u64(0x5eed_f022);
    let mut seeds: Vec<Vec<u8>> = Vec::new();
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for _ in 0..64 {
        let h = v1_header().new_tree(&mut runner).unwrap().current();
        let mut v = h.to_bytes().to_vec();
        v.extend_from_slice(&payload_for(&Header::V1(h)));
        seeds.push(v);
        let h = v2_header().new_tree(&mut runner).unwrap().current();
        let mut v = h.to_bytes().to_vec();
        v.extend_from_slice(&payload_for(&Header::V2(h)));
        seeds.push(v);
    }
    // The common message (RDMA_MSG without chunks, read in one piece by
    // decode_plain) in both versions and directions.
    for xid in [1u32, 0x8000_0000] {
        let chunks = ChunkLists::default();
        let plain = [
            Header::V1(V1Header {
                xid,
                credits: 32,
                body: V1Body::Msg(chunks.clone()),
            }),
            Header::V2(V2Header {
                xid,
                credits: 32,
                body: V2Body::Msg {
                    direction: Direction::Call,
                    chunks: chunks.clone(),
                },
            }),
            Header::V2(V2Header {
                xid,
                credits: 32,
                body: V2Body::Msg {
                    direction: Direction::Reply,
                    chunks,
                },
            }),
        ];
        for h in plain {
            let mut v = h.to_bytes().to_vec();
            v.extend_from_slice(&payload_for(&h));
            seeds.push(v);
        }
    }
    let words = [0u32, 1, 2, 3, 4, 5, 64, 65, 0xffff_ffff, 0x8000_0000];
    for i in 0..60_000 {
        let mut buf = if i % 5 == 0 {
            (0..rng.gen_range(0..96))
                .map(|_| rng.gen())
                .collect::<Vec<u8>>()
        } else {
            seeds[rng.gen_range(0..seeds.len())].clone()
        };
        for _ in 0..rng.gen_range(1..4) {
            if buf.is_empty() {
                break;
            }
            match rng.gen_range(0..4) {
                0 => {
                    let at = rng.gen_range(0..buf.len());
                    buf[at] = rng.gen();
                }
                1 => {
                    let at = rng.gen_range(0..buf.len()) & !3;
                    let v = words[rng.gen_range(0..words.len())].to_be_bytes();
                    for (k, b) in v.iter().enumerate() {
                        if let Some(x) = buf.get_mut(at + k) {
                            *x = *b;
                        }
                    }
                }
                2 => {
                    let n = rng.gen_range(0..=buf.len());
                    buf.truncate(n);
                }
                _ => {
                    let at = rng.gen_range(0..=buf.len()) & !3;
                    let v = words[rng.gen_range(0..words.len())].to_be_bytes();
                    buf.splice(at.min(buf.len())..at.min(buf.len()), v);
                }
            }
        }
        fuzzing::decode_roundtrip(&buf);
        fuzzing::decode_v2_roundtrip(&buf);
        fuzzing::private_data_roundtrip(&buf);
    }
}
