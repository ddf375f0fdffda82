//! Measures the protocol core's own cost per 64-byte Send/Recv (no I/O),
//! driven as the software provider drives it (transmit slices, then a
//! read into the offered buffers):
//! `cargo run --release -p rpcrdma-iwarp --example core_cost [COUNT]`.
//! Under `valgrind --tool=callgrind`, two counts give the instructions
//! per message (as `scripts/callgrind-null.sh` does for a round trip).
use std::io::IoSlice;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use rpcrdma_iwarp::conn::{Config, Connection, Event};
use rpcrdma_iwarp::mr::MrTable;
use rpcrdma_verbs::{RecvWr, SendWr, Sge};

fn main() {
    let now = Instant::now();
    let (mut ta, mut tb) = (MrTable::new(8), MrTable::new(8));
    let mut a = Connection::initiator(Config::default(), Bytes::new(), now).expect("config");
    let mut b = Connection::responder(Config::default(), now).expect("config");
    let mut wire = BytesMut::new();
    a.poll_transmit(&mut wire);
    b.handle_bytes(&wire, &mut tb);
    while let Some(e) = b.poll_event() {
        if matches!(e, Event::ConnectRequest(_)) {
            b.accept(Bytes::new()).expect("accept");
        }
    }
    wire.clear();
    b.poll_transmit(&mut wire);
    a.handle_bytes(&wire, &mut ta);
    let msg = Bytes::from(vec![7u8; 64]);
    let n = std::env::args()
        .nth(1)
        .map_or(200_000, |s| s.parse().expect("a count of messages"));
    for i in 0..16 {
        b.post_recv(RecvWr {
            wr_id: i,
            buf: BytesMut::zeroed(64),
        })
        .expect("recv");
    }
    let t0 = Instant::now();
    for _ in 0..n {
        let mut wr = SendWr::send(1, vec![Sge::Bytes(msg.clone())]);
        wr.signaled = false;
        a.post_send(wr, &mut ta).expect("send");
        // As a driver does: the slices to write, then what was written;
        // a read straight into the receiver's buffers.
        wire.clear();
        let mut iov = [IoSlice::new(&[]); 8];
        let k = a.transmit_iovecs(&mut iov);
        for s in &iov[..k] {
            wire.extend_from_slice(s);
        }
        a.handle_written(wire.len());
        let bufs = b.recv_buffers(&mut tb);
        let got = wire.len().min(bufs.staging.len());
        bufs.staging[..got].copy_from_slice(&wire[..got]);
        b.handle_read(got, &mut tb);
        let wc = b.poll_completion().expect("completion");
        let buf = wc.buf.expect("buffer");
        b.post_recv(RecvWr {
            wr_id: wc.wr_id,
            buf,
        })
        .expect("recv");
    }
    let per = t0.elapsed().as_secs_f64() / f64::from(n) * 1e9;
    println!("core cost per 64-byte Send (both ends): {per:.0} ns");
}
