//! The recording, fault-injecting relay: exact cuts, untouched
//! reconnections, and pcap output that reassembles to what was forwarded.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use rpcrdma_testkit::relay::{Direction, Fault, Position, Relay};
use rpcrdma_testkit::{pcap, tcp};

/// An upstream that answers every read with the same bytes.
fn echo_server() -> SocketAddr {
    let up = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = up.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in up.incoming() {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 || s.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 256) as u8).collect()
}

/// Sends `msg`, half-closes, reads until the end.
fn exchange(relay: &Relay, msg: &[u8]) -> Vec<u8> {
    let mut c = TcpStream::connect(relay.local_addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let writer = {
        let mut w = c.try_clone().unwrap();
        let msg = msg.to_vec();
        std::thread::spawn(move || {
            let _ = w.write_all(&msg);
            let _ = w.shutdown(std::net::Shutdown::Write);
        })
    };
    let mut got = Vec::new();
    let _ = c.read_to_end(&mut got);
    writer.join().unwrap();
    got
}

#[test]
fn untouched_connection_is_recorded_whole() {
    let relay = Relay::start(echo_server()).unwrap();
    let msg = data(200_000);
    let got = exchange(&relay, &msg);
    assert_eq!(got, msg);
    let rec = relay.wait_finished(0, Duration::from_secs(20)).unwrap();
    assert_eq!(rec.stream(Direction::ToServer), msg);
    assert_eq!(rec.stream(Direction::ToClient), msg);
    assert_eq!(rec.len(Direction::ToClient), 200_000);
    assert!(!rec.cut_done);
    assert!(rec.upstream_local.is_some());
}

#[test]
fn cut_forwards_exactly_the_offset_then_ends_both_ways() {
    let up = echo_server();
    for offset in [0u64, 1, 4095, 4096, 4097, 65_536, 99_999] {
        for direction in [Direction::ToServer, Direction::ToClient] {
            let relay = Relay::start(up).unwrap();
            relay.plan([Some(Fault::Cut(Position { direction, offset }))]);
            let msg = data(100_000);
            let got = exchange(&relay, &msg);
            let rec = relay.wait_finished(0, Duration::from_secs(20)).unwrap();
            assert!(rec.cut_done, "{direction:?} {offset}");
            assert_eq!(rec.len(direction), offset, "{direction:?} {offset}");
            // Nothing beyond the cut reached the client.
            assert!(got.len() as u64 <= offset, "{direction:?} {offset}");
            assert_eq!(&got[..], &msg[..got.len()]);
            if direction == Direction::ToClient {
                assert_eq!(got.len() as u64, offset);
            }
        }
    }
}

#[test]
fn plan_applies_per_connection_in_order() {
    let relay = Relay::start(echo_server()).unwrap();
    relay.plan([
        Some(Fault::Cut(Position {
            direction: Direction::ToClient,
            offset: 10,
        })),
        None,
    ]);
    let msg = data(1000);
    assert_eq!(exchange(&relay, &msg).len(), 10);
    assert_eq!(exchange(&relay, &msg), msg);
    assert_eq!(exchange(&relay, &msg), msg);
    assert_eq!(relay.connection_count(), 3);
    let conns = relay.connections();
    assert!(conns[0].cut_done);
    assert!(conns[1].fault.is_none() && conns[2].fault.is_none());
}

#[test]
fn offset_beyond_the_stream_never_cuts() {
    let relay = Relay::start(echo_server()).unwrap();
    relay.plan([Some(Fault::Cut(Position {
        direction: Direction::ToServer,
        offset: 1 << 40,
    }))]);
    let msg = data(5000);
    assert_eq!(exchange(&relay, &msg), msg);
    let rec = relay.wait_finished(0, Duration::from_secs(20)).unwrap();
    assert!(!rec.cut_done);
}

#[test]
fn pcap_reassembles_to_the_forwarded_bytes() {
    let relay = Relay::start(echo_server()).unwrap();
    let msg = data(30_000);
    exchange(&relay, &msg);
    let rec = relay.wait_finished(0, Duration::from_secs(20)).unwrap();
    let file = rec.to_pcap(1460);
    let frames = pcap::read(&file).unwrap();
    let streams = tcp::reassemble(&frames);
    assert_eq!(streams.len(), 2);
    assert_eq!(streams[0].data, rec.stream(Direction::ToServer));
    assert_eq!(streams[1].data, rec.stream(Direction::ToClient));
    assert_eq!(
        SocketAddr::V4(streams[0].dst),
        rec.server.unwrap(),
        "the pcap shows the upstream server's address"
    );
}

#[test]
fn hold_stops_one_direction_until_released() {
    let relay = Relay::start(echo_server()).unwrap();
    relay.plan([Some(Fault::Hold(Position {
        direction: Direction::ToClient,
        offset: 700,
    }))]);
    let mut c = TcpStream::connect(relay.local_addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let msg = data(2000);
    c.write_all(&msg).unwrap();
    assert!(relay.wait_held(0, Duration::from_secs(20)));
    let mut got = vec![0u8; 700];
    c.read_exact(&mut got).unwrap();
    let rec = relay.connections().remove(0);
    assert_eq!(rec.len(Direction::ToClient), 700);
    assert!(rec.held && !rec.released);
    // Only that direction stops: the whole message still reaches the
    // server while the echo waits.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while relay.connections()[0].len(Direction::ToServer) < 2000 {
        assert!(
            std::time::Instant::now() < deadline,
            "the other direction stopped too"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let rec = relay.connections().remove(0);
    assert_eq!(rec.stream(Direction::ToServer), msg);
    assert_eq!(rec.len(Direction::ToClient), 700);
    assert!(rec.held && !rec.released);
    relay.release(0);
    let mut rest = vec![0u8; 1300];
    c.read_exact(&mut rest).unwrap();
    got.extend_from_slice(&rest);
    assert_eq!(got, msg);
    // The whole message reached the server.
    c.shutdown(std::net::Shutdown::Write).unwrap();
    let rec = relay.wait_finished(0, Duration::from_secs(20)).unwrap();
    assert_eq!(rec.stream(Direction::ToServer), msg);
}
