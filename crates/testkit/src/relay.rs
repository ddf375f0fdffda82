//! A recording, fault-injecting TCP relay (test support only).
//!
//! [`Relay`] listens on `127.0.0.1:0` and connects every accepted client to
//! one upstream address, copying bytes both ways on plain threads (no async
//! runtime, so it works under any test harness). For each connection it
//! records what it forwarded, in order, and can **cut** the connection at an
//! exact byte offset of one direction: it forwards exactly that many bytes
//! of that direction and then shuts both sockets down, so each peer sees the
//! stream end there (FIN), as when a cable or a NAT drops a connection. It
//! can also **hold** one direction at an exact offset until the test lets
//! it go ([`Relay::release`]), to put a peer in a known state (e.g. a call
//! in flight whose reply has not arrived) without timing.
//!
//! Faults are planned per connection, in the order connections are
//! accepted ([`Relay::plan`]): a test can cut the first connection of a
//! client and let its reconnection through untouched. What was forwarded
//! becomes a pcap file with [`Recorded::to_pcap`], so a test needs no
//! tcpdump and no root.
//!
//! ```
//! use std::io::{Read, Write};
//! use std::net::{TcpListener, TcpStream};
//! use rpcrdma_testkit::relay::{Direction, Fault, Position, Relay};
//!
//! // An upstream that echoes.
//! let up = TcpListener::bind("127.0.0.1:0").unwrap();
//! let up_addr = up.local_addr().unwrap();
//! std::thread::spawn(move || {
//!     for s in up.incoming() {
//!         let mut s = s.unwrap();
//!         let mut buf = [0u8; 64];
//!         while let Ok(n) = s.read(&mut buf) {
//!             if n == 0 || s.write_all(&buf[..n]).is_err() { break; }
//!         }
//!     }
//! });
//!
//! let relay = Relay::start(up_addr).unwrap();
//! // Cut the first connection after 3 bytes towards the client.
//! relay.plan([Some(Fault::Cut(Position { direction: Direction::ToClient, offset: 3 }))]);
//! let mut c = TcpStream::connect(relay.local_addr()).unwrap();
//! c.write_all(b"hello").unwrap();
//! let mut got = Vec::new();
//! c.read_to_end(&mut got).unwrap(); // ends at the cut
//! assert_eq!(got, b"hel");
//!
//! let conns = relay.connections();
//! assert_eq!(conns[0].stream(Direction::ToServer), b"hello");
//! assert_eq!(conns[0].stream(Direction::ToClient), b"hel");
//! assert!(conns[0].cut_done);
//! ```

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::tcp::{Conversation, Side};

/// Which way bytes flow through the relay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From the connecting client to the upstream server.
    ToServer,
    /// From the upstream server back to the client.
    ToClient,
}

/// A point in one direction of a connection: after exactly `offset` bytes
/// of `direction` have been forwarded (0: before anything is forwarded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// The direction whose byte count is meant.
    pub direction: Direction,
    /// Bytes of that direction forwarded before the point.
    pub offset: u64,
}

/// What to do to one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// At the position, shut both sockets down: each peer sees its stream
    /// end there. Nothing more is forwarded either way.
    Cut(Position),
    /// At the position, stop forwarding that direction until
    /// [`Relay::release`] (the other direction keeps flowing).
    Hold(Position),
}

impl Fault {
    fn position(&self) -> Position {
        match self {
            Fault::Cut(p) | Fault::Hold(p) => *p,
        }
    }
}

/// What the relay saw of one connection.
#[derive(Debug, Clone, Default)]
pub struct Recorded {
    /// Index of the connection, in order of acceptance (0-based).
    pub index: usize,
    /// The client's address (as the relay saw it).
    pub client: Option<SocketAddr>,
    /// The relay's own address on the upstream connection: what the
    /// server sees as its peer. `None` if the upstream connect failed.
    pub upstream_local: Option<SocketAddr>,
    /// The upstream server's address.
    pub server: Option<SocketAddr>,
    /// Everything forwarded, in forwarding order.
    pub chunks: Vec<(Direction, Vec<u8>)>,
    /// The fault planned for this connection.
    pub fault: Option<Fault>,
    /// Whether the planned cut happened (its offset was reached).
    pub cut_done: bool,
    /// Whether the planned hold's offset was reached.
    pub held: bool,
    /// Whether the hold was released.
    pub released: bool,
    /// Whether both directions have ended.
    pub finished: bool,
}

impl Recorded {
    /// The bytes forwarded in one direction, concatenated.
    pub fn stream(&self, direction: Direction) -> Vec<u8> {
        let mut v = Vec::new();
        for (d, c) in &self.chunks {
            if *d == direction {
                v.extend_from_slice(c);
            }
        }
        v
    }

    /// Number of bytes forwarded in one direction.
    pub fn len(&self, direction: Direction) -> u64 {
        self.chunks
            .iter()
            .filter(|(d, _)| *d == direction)
            .map(|(_, c)| c.len() as u64)
            .sum()
    }

    /// A classic pcap file of this connection as one TCP conversation
    /// (handshake, the forwarded bytes in order as segments of at most
    /// `mss` bytes, FIN), between the client's address and the upstream
    /// server's address (IPv4; other addresses are shown as 127.0.0.1).
    /// Wireshark and `rpcrdma_testkit::tcp::reassemble` read it.
    pub fn to_pcap(&self, mss: usize) -> Vec<u8> {
        let v4 = |a: Option<SocketAddr>, port: u16| match a {
            Some(SocketAddr::V4(a)) => a,
            Some(SocketAddr::V6(a)) => SocketAddrV4::new([127, 0, 0, 1].into(), a.port()),
            None => SocketAddrV4::new([127, 0, 0, 1].into(), port),
        };
        let mut conv = Conversation::new(v4(self.client, 40000), v4(self.server, 20049));
        conv.set_mss(mss);
        conv.handshake();
        for (d, c) in &self.chunks {
            let side = match d {
                Direction::ToServer => Side::Client,
                Direction::ToClient => Side::Server,
            };
            conv.send(side, c);
        }
        conv.finish()
    }
}

struct Conn {
    rec: Recorded,
    /// Bytes forwarded so far, per direction (ToServer, ToClient).
    counts: [u64; 2],
    /// Both sockets, to cut or close them.
    sockets: Vec<TcpStream>,
    /// Directions still running.
    running: u8,
}

struct State {
    plan: VecDeque<Option<Fault>>,
    conns: Vec<Conn>,
    threads: Vec<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    stop: AtomicBool,
    upstream: SocketAddr,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        rpcrdma_sync::lock(&self.state)
    }
}

/// A recording, fault-injecting TCP relay; see the [module docs](self).
/// Dropping it stops accepting and closes every connection it relays.
pub struct Relay {
    shared: Arc<Shared>,
    local: SocketAddr,
    acceptor: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay")
            .field("local", &self.local)
            .field("upstream", &self.shared.upstream)
            .finish_non_exhaustive()
    }
}

fn dir_index(d: Direction) -> usize {
    match d {
        Direction::ToServer => 0,
        Direction::ToClient => 1,
    }
}

impl Relay {
    /// Listens on `127.0.0.1:0` and relays every connection to `upstream`.
    pub fn start(upstream: SocketAddr) -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let local = listener.local_addr()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                plan: VecDeque::new(),
                conns: Vec::new(),
                threads: Vec::new(),
            }),
            changed: Condvar::new(),
            stop: AtomicBool::new(false),
            upstream,
        });
        let sh = shared.clone();
        let acceptor = std::thread::Builder::new()
            .name("relay-accept".into())
            .spawn(move || accept_loop(&sh, &listener))?;
        Ok(Self {
            shared,
            local,
            acceptor: Some(acceptor),
        })
    }

    /// The address clients connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Plans faults for the connections accepted from now on, one entry
    /// per connection in order (`None`: relay it untouched). Connections
    /// beyond the plan are relayed untouched. Replaces any earlier plan
    /// not yet used.
    pub fn plan(&self, faults: impl IntoIterator<Item = Option<Fault>>) {
        self.shared.lock().plan = faults.into_iter().collect();
    }

    /// Waits until connection `index` reaches its hold point (or `timeout`
    /// passes); returns whether it did.
    pub fn wait_held(&self, index: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |st| {
            st.conns.get(index).is_some_and(|c| c.rec.held)
        })
    }

    /// Lets a held connection go on (also one not yet at its hold point:
    /// it will then not stop).
    pub fn release(&self, index: usize) {
        let mut st = self.shared.lock();
        if let Some(c) = st.conns.get_mut(index) {
            c.rec.released = true;
        }
        drop(st);
        self.shared.changed.notify_all();
    }

    fn wait_until(&self, timeout: Duration, done: impl Fn(&State) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let mut st = self.shared.lock();
        loop {
            if done(&st) {
                return true;
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return false;
            };
            st = self
                .shared
                .changed
                .wait_timeout(st, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// A snapshot of every connection accepted so far.
    pub fn connections(&self) -> Vec<Recorded> {
        self.shared
            .lock()
            .conns
            .iter()
            .map(|c| c.rec.clone())
            .collect()
    }

    /// Number of connections accepted so far.
    pub fn connection_count(&self) -> usize {
        self.shared.lock().conns.len()
    }

    /// Waits until connection `index` exists and both its directions have
    /// ended (or `timeout` passes); returns its record.
    pub fn wait_finished(&self, index: usize, timeout: Duration) -> Option<Recorded> {
        let done = self.wait_until(timeout, |st| {
            st.conns.get(index).is_some_and(|c| c.rec.finished)
        });
        done.then(|| self.shared.lock().conns[index].rec.clone())
    }

    /// Shuts down every relayed connection now (both sockets of each).
    pub fn cut_all(&self) {
        let mut st = self.shared.lock();
        for c in &mut st.conns {
            c.rec.released = true;
            for s in &c.sockets {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
        drop(st);
        self.shared.changed.notify_all();
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Unblock the acceptor.
        let _ = TcpStream::connect(self.local);
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
        self.cut_all();
        let threads = std::mem::take(&mut self.shared.lock().threads);
        for t in threads {
            let _ = t.join();
        }
    }
}

fn accept_loop(shared: &Arc<Shared>, listener: &TcpListener) {
    for incoming in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = incoming else { continue };
        let _ = client.set_nodelay(true);
        let upstream = TcpStream::connect(shared.upstream);
        let mut st = shared.lock();
        let index = st.conns.len();
        let fault = st.plan.pop_front().flatten();
        let mut rec = Recorded {
            index,
            client: client.peer_addr().ok(),
            server: Some(shared.upstream),
            fault,
            ..Recorded::default()
        };
        let Ok(upstream) = upstream else {
            let _ = client.shutdown(Shutdown::Both);
            rec.finished = true;
            st.conns.push(Conn {
                rec,
                counts: [0, 0],
                sockets: Vec::new(),
                running: 0,
            });
            shared.changed.notify_all();
            continue;
        };
        let _ = upstream.set_nodelay(true);
        rec.upstream_local = upstream.local_addr().ok();
        let sockets: Vec<TcpStream> = [&client, &upstream]
            .iter()
            .filter_map(|s| s.try_clone().ok())
            .collect();
        let immediate = matches!(fault, Some(Fault::Cut(p)) if p.offset == 0);
        rec.cut_done = immediate;
        st.conns.push(Conn {
            rec,
            counts: [0, 0],
            sockets,
            running: 2,
        });
        if immediate {
            let _ = client.shutdown(Shutdown::Both);
            let _ = upstream.shutdown(Shutdown::Both);
        }
        let pairs = [
            (
                Direction::ToServer,
                client.try_clone(),
                upstream.try_clone(),
            ),
            (
                Direction::ToClient,
                upstream.try_clone(),
                client.try_clone(),
            ),
        ];
        for (dir, from, to) in pairs {
            let sh = shared.clone();
            let t = match (from, to) {
                (Ok(from), Ok(to)) => std::thread::Builder::new()
                    .name(format!("relay-{index}-{dir:?}"))
                    .spawn(move || pump(&sh, index, dir, from, to))
                    .ok(),
                _ => None,
            };
            match t {
                Some(t) => st.threads.push(t),
                None => finish_direction(&mut st, index),
            }
        }
        shared.changed.notify_all();
    }
}

fn finish_direction(st: &mut State, index: usize) {
    if let Some(c) = st.conns.get_mut(index) {
        c.running = c.running.saturating_sub(1);
        if c.running == 0 {
            c.rec.finished = true;
            for s in &c.sockets {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }
}

/// Copies one direction until it ends, recording it and applying the
/// connection's fault.
fn pump(shared: &Shared, index: usize, dir: Direction, mut from: TcpStream, mut to: TcpStream) {
    let mut buf = vec![0u8; 64 * 1024];
    let di = dir_index(dir);
    'reads: loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut at = 0usize;
        while at < n {
            // Decide how much goes through now, and record it before writing
            // so that the record's order is causal (an answer is never
            // recorded before what caused it).
            let (take, stop) = {
                let mut st = shared.lock();
                let Some(c) = st.conns.get_mut(index) else {
                    break 'reads;
                };
                if c.rec.cut_done {
                    break 'reads;
                }
                let mut take = n - at;
                let mut stop = None;
                if let Some(f) = c.rec.fault {
                    let p = f.position();
                    let pending = match f {
                        Fault::Cut(_) => true,
                        Fault::Hold(_) => !c.rec.released && !c.rec.held,
                    };
                    if p.direction == dir && pending && p.offset >= c.counts[di] {
                        let left = p.offset - c.counts[di];
                        if left <= take as u64 {
                            take = left as usize;
                            stop = Some(f);
                        }
                    }
                }
                c.counts[di] += take as u64;
                if take > 0 {
                    c.rec.chunks.push((dir, buf[at..at + take].to_vec()));
                }
                match stop {
                    Some(Fault::Cut(_)) => c.rec.cut_done = true,
                    Some(Fault::Hold(_)) => c.rec.held = true,
                    None => {}
                }
                (take, stop)
            };
            if take > 0 && to.write_all(&buf[at..at + take]).is_err() {
                break 'reads;
            }
            at += take;
            match stop {
                Some(Fault::Cut(_)) => {
                    let st = shared.lock();
                    if let Some(c) = st.conns.get(index) {
                        for s in &c.sockets {
                            let _ = s.shutdown(Shutdown::Both);
                        }
                    }
                    drop(st);
                    shared.changed.notify_all();
                    break 'reads;
                }
                Some(Fault::Hold(_)) => {
                    shared.changed.notify_all();
                    let mut st = shared.lock();
                    while !st.conns.get(index).is_none_or(|c| c.rec.released) {
                        st = shared.changed.wait(st).unwrap_or_else(|p| p.into_inner());
                    }
                }
                None => {}
            }
        }
    }
    // This direction is over: pass the end on.
    let _ = to.shutdown(Shutdown::Write);
    let mut st = shared.lock();
    finish_direction(&mut st, index);
    drop(st);
    shared.changed.notify_all();
}
