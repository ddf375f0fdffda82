//! Several FPDUs of an RDMA Read Response per socket read: the receive
//! buffers guess the places of the following FPDUs of the same Read
//! (`conn/rx.rs`). Whatever the guess, the outcome must be exactly that of
//! reading the stream FPDU by FPDU. The same for the FPDUs of an RDMA
//! Write into a region registered with `Access::SCRATCH`; into any other
//! region nothing is guessed, and no octet outside the Write changes.

mod pair;

use pair::{fpdu, Pair};
use proptest::prelude::*;
use rpcrdma_iwarp::conn::Config;
use rpcrdma_iwarp::ddp::DdpHeader;
use rpcrdma_iwarp::rdmap::Opcode;
use rpcrdma_verbs::{Access, LocalSge, RecvWr, RemoteAddr, SendWr, Sge, WcOpcode, WcStatus};

fn data(len: usize) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(31) % 251) as u8)
        .collect()
}

fn connected(crc: bool) -> Pair {
    let cfg = Config {
        crc,
        ..Config::default()
    };
    let mut p = Pair::new(cfg.clone(), cfg, b"c");
    p.vectored = true;
    p.connect(b"s");
    p
}

#[test]
fn a_read_response_of_uniform_fpdus_arrives_in_few_reads() {
    for crc in [false, true] {
        let mut p = connected(crc);
        let len = 1 << 20;
        let src_data = data(len);
        let src = p.b.reg_bytes(&src_data, Access::REMOTE_READ);
        let sink = p.a.reg_mut(len, Access::LOCAL_WRITE);
        let before = p.a.reads;
        p.a.conn
            .post_send(
                SendWr::read(
                    1,
                    LocalSge {
                        lkey: sink.key,
                        addr: sink.addr,
                        len: len as u32,
                    },
                    RemoteAddr {
                        rkey: src.key,
                        addr: src.addr,
                    },
                ),
                &mut p.a.mrs,
            )
            .unwrap();
        p.drive();
        let wcs = p.a.take_wcs();
        assert_eq!(wcs.len(), 1);
        assert_eq!(
            (wcs[0].opcode, wcs[0].status, wcs[0].byte_len),
            (WcOpcode::RdmaRead, WcStatus::Success, len as u32)
        );
        assert!(
            p.a.contents(sink.key) == src_data,
            "crc {crc}: data differs"
        );
        // 17 FPDUs of at most 65518 octets: the first read takes a
        // header, the next the first payload and up to 16 more FPDUs.
        let reads = p.a.reads - before;
        assert!(reads <= 4, "crc {crc}: {reads} reads for 17 FPDUs");
        assert!(p.a.closed_error().is_none() && p.b.closed_error().is_none());
    }
}

/// Posts a Read of `len` octets on `a` into a fresh sink and takes the
/// Read Request off the wire (the test answers it by hand). Returns the
/// sink's key and address and the source's key and address.
fn read_answered_by_hand(p: &mut Pair, len: usize, src: (u32, u64)) -> (u32, u64) {
    let sink = p.a.reg_mut(len + 64, Access::LOCAL_WRITE);
    p.a.conn
        .post_send(
            SendWr::read(
                7,
                LocalSge {
                    lkey: sink.key,
                    addr: sink.addr,
                    len: len as u32,
                },
                RemoteAddr {
                    rkey: src.0,
                    addr: src.1,
                },
            ),
            &mut p.a.mrs,
        )
        .unwrap();
    let mut out = bytes::BytesMut::new();
    p.a.conn.poll_transmit(&mut out);
    assert!(!out.is_empty(), "the Read Request");
    (sink.key, sink.addr)
}

/// The FPDUs of a tagged message (`opcode`: Read Response or RDMA Write)
/// of `payload` at `(stag, to)` cut into the given payload sizes (cycled),
/// then a Send of `tail`.
fn tagged_stream(
    opcode: Opcode,
    stag: u32,
    to: u64,
    payload: &[u8],
    sizes: &[usize],
    tail: &[u8],
    crc: bool,
) -> Vec<u8> {
    let mut out = Vec::new();
    let mut off = 0;
    let mut i = 0;
    while off < payload.len() {
        let n = sizes[i % sizes.len()].max(1).min(payload.len() - off);
        i += 1;
        let last = off + n == payload.len();
        let h = DdpHeader::tagged(last, opcode, stag, to + off as u64);
        out.extend(fpdu(h, &payload[off..off + n], crc));
        off += n;
    }
    let h = DdpHeader::untagged(true, Opcode::SEND, 0, 0, 1, 0);
    out.extend(fpdu(h, tail, crc));
    out
}

/// Reads of the given sizes (cycled) of `stream` into `a`.
fn deliver(p: &mut Pair, stream: &[u8], splits: &[usize]) {
    let mut off = 0;
    let mut i = 0;
    while off < stream.len() {
        let n = splits[i % splits.len()].max(1).min(stream.len() - off);
        i += 1;
        let took = p.a.deliver_vectored(&stream[off..off + n]);
        assert_eq!(
            took,
            n,
            "the connection stopped reading: {:?}",
            p.a.conn.error()
        );
        off += n;
    }
}

fn check_outcome(crc: bool, len: usize, sizes: &[usize], splits: &[usize]) {
    let mut p = connected(crc);
    let payload = data(len);
    let (stag, to) = read_answered_by_hand(&mut p, len, (0x1234_5678, 0));
    p.a.conn
        .post_recv(RecvWr {
            wr_id: 9,
            buf: bytes::BytesMut::zeroed(64),
        })
        .unwrap();
    let stream = tagged_stream(
        Opcode::READ_RESPONSE,
        stag,
        to,
        &payload,
        sizes,
        b"after the read",
        crc,
    );
    deliver(&mut p, &stream, splits);
    while let Some(w) = p.a.conn.poll_completion() {
        p.a.wcs.push(w);
    }
    assert!(
        p.a.conn.error().is_none(),
        "sizes {sizes:?}, splits {splits:?}: {:?}",
        p.a.conn.error()
    );
    let wcs = p.a.take_wcs();
    let read = wcs
        .iter()
        .find(|w| w.wr_id == 7)
        .expect("the Read completes");
    assert_eq!(
        (read.status, read.byte_len),
        (WcStatus::Success, len as u32)
    );
    let recv = wcs
        .iter()
        .find(|w| w.wr_id == 9)
        .expect("the Send after it");
    assert_eq!(recv.data(), Some(&b"after the read"[..]));
    let got = p.a.contents(stag);
    let diff = got[..len].iter().zip(&payload).position(|(a, b)| a != b);
    assert_eq!(
        diff, None,
        "first wrong octet (sizes {sizes:?}, splits {splits:?})"
    );
}

#[test]
fn a_wrong_guess_gives_the_same_outcome_as_reading_fpdu_by_fpdu() {
    // Uneven FPDUs: every guess from the previous size is wrong.
    check_outcome(
        false,
        40_000,
        &[3000, 2000, 5000, 1024, 7777],
        &[usize::MAX],
    );
    check_outcome(true, 40_000, &[3000, 2000, 5000, 1024, 7777], &[usize::MAX]);
    // Even FPDUs, the stream cut anywhere (inside gaps, headers, payloads).
    check_outcome(false, 40_000, &[4096], &[5, 1500, 3, 9000, 17, 70_000]);
    check_outcome(true, 40_000, &[4096], &[5, 1500, 3, 9000, 17, 70_000]);
    // A last FPDU shorter than the others, and a Send right behind it.
    check_outcome(false, 3 * 4096 + 1100, &[4096], &[usize::MAX]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn any_segmentation_and_any_reads_give_the_same_outcome(
        crc in any::<bool>(),
        len in 1usize..60_000,
        sizes in proptest::collection::vec(1usize..9000, 1..6),
        splits in proptest::collection::vec(1usize..20_000, 1..6),
    ) {
        check_outcome(crc, len, &sizes, &splits);
    }
}

/// A payload one octet longer than guessed: its last octet lands where
/// the next guessed payload begins, so the guessed octets must be saved
/// before anything is processed past the guess.
#[test]
fn a_payload_longer_than_guessed_does_not_overwrite_the_guessed_octets() {
    check_outcome(false, 14010, &[5104, 5105], &[10265]);
}

// ---------------------------------------------------------------- RDMA Writes

/// `b` RDMA Writes 1 MiB into a region of `a` registered with `access`;
/// returns how many socket reads `a` made for it.
fn write_mib(crc: bool, access: Access) -> usize {
    let mut p = connected(crc);
    let len = 1 << 20;
    let src_data = data(len);
    let src = p.b.reg_bytes(&src_data, Access::LOCAL_READ);
    let sink = p.a.reg_mut(len, access);
    let before = p.a.reads;
    p.b.conn
        .post_send(
            SendWr::write(
                1,
                vec![Sge::Region(LocalSge {
                    lkey: src.key,
                    addr: src.addr,
                    len: len as u32,
                })],
                RemoteAddr {
                    rkey: sink.key,
                    addr: sink.addr,
                },
            ),
            &mut p.b.mrs,
        )
        .unwrap();
    p.drive();
    let wcs = p.b.take_wcs();
    assert_eq!(
        (wcs.len(), wcs[0].status),
        (1, WcStatus::Success),
        "{wcs:?}"
    );
    assert!(
        p.a.contents(sink.key) == src_data,
        "crc {crc}: data differs"
    );
    assert!(p.a.closed_error().is_none() && p.b.closed_error().is_none());
    p.a.reads - before
}

#[test]
fn an_rdma_write_into_a_scratch_region_arrives_in_few_reads() {
    for crc in [false, true] {
        // 17 FPDUs: a header, then the first payload and the rest.
        let scratch = write_mib(crc, Access::REMOTE_WRITE | Access::SCRATCH);
        assert!(scratch <= 4, "crc {crc}: {scratch} reads for 17 FPDUs");
        // Without the owner's promise: one read (at least) per FPDU.
        let plain = write_mib(crc, Access::REMOTE_WRITE);
        assert!(plain >= 17, "crc {crc}: {plain} reads for 17 FPDUs");
    }
}

/// Octets of the region around the Write (so a change outside it shows).
const MARGIN: usize = 3000;
const SENTINEL: u8 = 0xA5;

/// An RDMA Write of `len` octets MARGIN into a region of `len + 2 *
/// MARGIN` (or of `len + MARGIN`, the Write reaching its end, with
/// `to_end`) filled with SENTINEL, then a Send: the Write's octets and the
/// Send arrive whatever the FPDU sizes and reads; into a region without
/// SCRATCH, every octet outside the Write is still SENTINEL.
fn check_write_outcome(
    crc: bool,
    scratch: bool,
    to_end: bool,
    len: usize,
    sizes: &[usize],
    splits: &[usize],
) {
    let mut p = connected(crc);
    let payload = data(len);
    let access = Access::LOCAL_WRITE
        | Access::REMOTE_WRITE
        | if scratch {
            Access::SCRATCH
        } else {
            Access::LOCAL_READ
        };
    let region = len + MARGIN + if to_end { 0 } else { MARGIN };
    let sink = p.a.reg_mut(region, access);
    p.a.mrs
        .slice_mut(sink.key, sink.addr, region, Access::LOCAL_WRITE)
        .unwrap()
        .fill(SENTINEL);
    p.a.conn
        .post_recv(RecvWr {
            wr_id: 9,
            buf: bytes::BytesMut::zeroed(64),
        })
        .unwrap();
    let to = sink.addr + MARGIN as u64;
    let stream = tagged_stream(
        Opcode::WRITE,
        sink.key,
        to,
        &payload,
        sizes,
        b"after the write",
        crc,
    );
    deliver(&mut p, &stream, splits);
    while let Some(w) = p.a.conn.poll_completion() {
        p.a.wcs.push(w);
    }
    let what = format!("scratch {scratch}, to_end {to_end}, sizes {sizes:?}, splits {splits:?}");
    assert!(p.a.conn.error().is_none(), "{what}: {:?}", p.a.conn.error());
    let wcs = p.a.take_wcs();
    let recv = wcs
        .iter()
        .find(|w| w.wr_id == 9)
        .unwrap_or_else(|| panic!("{what}: the Send after the Write"));
    assert_eq!(recv.data(), Some(&b"after the write"[..]), "{what}");
    let got = p.a.contents(sink.key);
    let diff = got[MARGIN..MARGIN + len]
        .iter()
        .zip(&payload)
        .position(|(a, b)| a != b);
    assert_eq!(diff, None, "{what}: first wrong octet of the Write");
    if !scratch {
        let outside = got[..MARGIN]
            .iter()
            .chain(&got[MARGIN + len..])
            .position(|&b| b != SENTINEL);
        assert_eq!(outside, None, "{what}: an octet outside the Write changed");
    }
}

#[test]
fn a_wrong_write_guess_gives_the_same_outcome_as_reading_fpdu_by_fpdu() {
    for scratch in [true, false] {
        for to_end in [false, true] {
            for crc in [false, true] {
                // Uneven FPDUs: every guess from the previous size is wrong.
                check_write_outcome(
                    crc,
                    scratch,
                    to_end,
                    40_000,
                    &[3000, 2000, 5000, 1024, 7777],
                    &[usize::MAX],
                );
                // Even FPDUs, the stream cut anywhere.
                check_write_outcome(
                    crc,
                    scratch,
                    to_end,
                    40_000,
                    &[4096],
                    &[5, 1500, 3, 9000, 17, 70_000],
                );
            }
            // A last FPDU shorter than the others, and a Send right behind
            // it (guessed into the region past the Write when it does not
            // reach the region's end).
            check_write_outcome(
                false,
                scratch,
                to_end,
                3 * 4096 + 1100,
                &[4096],
                &[usize::MAX],
            );
            // A payload one octet longer than guessed.
            check_write_outcome(false, scratch, to_end, 14010, &[5104, 5105], &[10265]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn any_write_segmentation_and_any_reads_give_the_same_outcome(
        crc in any::<bool>(),
        scratch in any::<bool>(),
        to_end in any::<bool>(),
        len in 1usize..60_000,
        sizes in proptest::collection::vec(1usize..9000, 1..6),
        splits in proptest::collection::vec(1usize..20_000, 1..6),
    ) {
        check_write_outcome(crc, scratch, to_end, len, &sizes, &splits);
    }
}
