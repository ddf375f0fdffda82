//! The two-engine harness: engines connected through a [`Fabric`] and
//! stepped on a virtual clock, with fault injection.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rpcrdma_verbs::{QpCaps, RecvWr, SendOp, SendWr, WcOpcode, WcStatus, WorkCompletion};

use super::fabric::{Fabric, TestPd};
use crate::{Engine, EngineConfig, EngineError, Event, ReplyHints};

/// One end of a [`Pair`].
#[derive(Debug)]
pub struct End {
    /// The engine.
    pub engine: Engine<TestPd>,
    /// Events taken from the engine, oldest first.
    pub events: VecDeque<Event>,
    owner: u32,
    recvs: VecDeque<RecvWr>,
    completions: VecDeque<WorkCompletion>,
    /// Sends that are posted but not yet executed by the fabric.
    sends: VecDeque<SendWr>,
    /// Every Send this end made: its bytes and the key it invalidated.
    pub sent: Vec<(Bytes, Option<u32>)>,
}

impl End {
    /// Receives this end has posted that no message has consumed yet.
    pub fn posted_receives(&self) -> usize {
        self.recvs.len()
    }

    /// The next event of a given shape, removed from the queue.
    pub fn take_event(&mut self, pred: impl Fn(&Event) -> bool) -> Option<Event> {
        let i = self.events.iter().position(pred)?;
        self.events.remove(i)
    }
}

/// Two engines connected through a [`Fabric`], driven step by step on a
/// virtual clock.
#[derive(Debug)]
pub struct Pair {
    /// The client (connection initiator).
    pub client: End,
    /// The server.
    pub server: End,
    /// The shared fabric.
    pub fabric: Fabric,
    /// The virtual clock.
    pub now: Instant,
    /// Messages the fabric dropped (fault injection counts).
    pub steps: u64,
    cut: bool,
    /// Ends whose send queue is held (client, server): nothing they post
    /// is executed until released.
    held: [bool; 2],
}

/// Whether both engines exchanged private data, and what each advertised.
#[derive(Debug, Clone)]
pub struct PairOptions {
    /// Client configuration.
    pub client: EngineConfig,
    /// Server configuration.
    pub server: EngineConfig,
    /// Queue pair sizes of both ends.
    pub caps: QpCaps,
    /// Whether the RFC 8797 private data is exchanged at connect.
    pub private_data: bool,
    /// Fabric key seed.
    pub seed: u64,
    /// The memory budget the server draws from (`None`: its own, of
    /// `server.max_shared_memory`). Give two pairs the same one to test a
    /// budget shared by several connections.
    pub server_budget: Option<crate::MemoryBudget>,
}

impl Default for PairOptions {
    fn default() -> Self {
        Self {
            client: EngineConfig::client(),
            server: EngineConfig::server(),
            caps: QpCaps::default(),
            private_data: true,
            seed: 0x5eed,
            server_budget: None,
        }
    }
}

impl PairOptions {
    /// Defaults, but the client speaks Version One only (no Version Two
    /// probe, no optional features).
    ///
    /// ```
    /// use rpcrdma_engine::testing::{Pair, PairOptions};
    /// let pair = Pair::with(PairOptions::v1().grant(4));
    /// assert_eq!(pair.server.engine.info().credits_we_grant, 4);
    /// ```
    pub fn v1() -> Self {
        let mut o = Self::default();
        o.client.client_version = crate::VersionPolicy::V1;
        o
    }

    /// The server grants `credits`.
    #[must_use]
    pub fn grant(mut self, credits: u32) -> Self {
        self.server.credits_grant = credits;
        self
    }

    /// The server holds at most `bytes` for one connection
    /// (`EngineConfig::max_memory`).
    #[must_use]
    pub fn server_memory(mut self, bytes: u64) -> Self {
        self.server.max_memory = bytes;
        self
    }

    /// Both ends advertise `bytes` as their inline send and receive sizes
    /// (`EngineConfig::inline_send`, `inline_recv`; the default is
    /// [`crate::DEFAULT_INLINE`]). Tests of chunk forms use the Version One
    /// default, 1024, so that small messages already need chunks.
    ///
    /// ```
    /// use rpcrdma_engine::testing::{Pair, PairOptions};
    /// let pair = Pair::with(PairOptions::default().inline(1024));
    /// assert_eq!(pair.client.engine.thresholds().send, 1024);
    /// ```
    #[must_use]
    pub fn inline(mut self, bytes: u32) -> Self {
        for c in [&mut self.client, &mut self.server] {
            c.inline_send = bytes;
            c.inline_recv = bytes;
        }
        self
    }

    /// Sets both ends' read window (`EngineConfig::read_window`;
    /// `u64::MAX` turns it off).
    #[must_use]
    pub fn read_window(mut self, bytes: u64) -> Self {
        self.server.read_window = bytes;
        self.client.read_window = bytes;
        self
    }
}

impl Pair {
    /// Two connected engines with default configurations.
    pub fn new() -> Self {
        Self::with(PairOptions::default())
    }

    /// Two connected engines.
    pub fn with(o: PairOptions) -> Self {
        let fabric = Fabric::new(o.seed);
        let cpd = o.client.private_data().to_bytes();
        let spd = o.server.private_data().to_bytes();
        let (cpeer, speer) = if o.private_data {
            (Some(&spd[..]), Some(&cpd[..]))
        } else {
            (None, None)
        };
        let client = Engine::new(o.client, fabric.pd(1), o.caps, cpeer).expect("client config");
        let server = match o.server_budget {
            Some(b) => Engine::with_budget(o.server, fabric.pd(2), o.caps, speer, b),
            None => Engine::new(o.server, fabric.pd(2), o.caps, speer),
        }
        .expect("server config");
        let end = |engine, owner| End {
            engine,
            events: VecDeque::new(),
            owner,
            recvs: VecDeque::new(),
            completions: VecDeque::new(),
            sends: VecDeque::new(),
            sent: Vec::new(),
        };
        let mut p = Self {
            client: end(client, 1),
            server: end(server, 2),
            fabric,
            now: Instant::now(),
            steps: 0,
            cut: false,
            held: [false, false],
        };
        p.collect();
        p
    }

    /// Takes every output of both engines into the harness queues.
    pub(crate) fn collect(&mut self) {
        for e in [&mut self.client, &mut self.server] {
            while let Some(r) = e.engine.poll_recv() {
                e.recvs.push_back(r);
            }
            while let Some(s) = e.engine.poll_send() {
                e.sends.push_back(s);
            }
            while let Some(ev) = e.engine.poll_event() {
                e.events.push_back(ev);
            }
        }
    }

    /// Executes one posted send-queue work request of `from` (the oldest),
    /// then delivers the resulting completions. Returns false if nothing
    /// was pending anywhere.
    pub fn step(&mut self) -> bool {
        self.collect();
        if self.cut {
            return false;
        }
        let mut progressed = false;
        // Deliver completions first (they may trigger more sends).
        for e in [&mut self.client, &mut self.server] {
            while let Some(wc) = e.completions.pop_front() {
                e.engine.handle_completion(self.now, wc);
                progressed = true;
            }
        }
        self.collect();
        for from_client in [true, false] {
            if self.held[usize::from(!from_client)] {
                continue;
            }
            let (me, peer) = if from_client {
                (&mut self.client, &mut self.server)
            } else {
                (&mut self.server, &mut self.client)
            };
            if let Some(wr) = me.sends.pop_front() {
                execute(&self.fabric, me, peer, wr);
                self.steps += 1;
                progressed = true;
            }
        }
        self.collect();
        progressed
    }

    /// Runs until nothing is pending or `max` steps were taken; returns
    /// whether it went idle.
    pub fn drive_until_idle(&mut self, max: usize) -> bool {
        for _ in 0..max {
            if !self.step() {
                return true;
            }
        }
        false
    }

    /// Runs until nothing is pending; panics on livelock (> `max` steps).
    pub fn drive_bounded(&mut self, max: usize) {
        for _ in 0..max {
            if !self.step() {
                return;
            }
        }
        panic!("pair did not go idle within {max} steps (livelock?)");
    }

    /// Runs until nothing is pending.
    pub fn drive(&mut self) {
        self.drive_bounded(100_000);
    }

    /// Advances the virtual clock and fires due timers.
    pub fn advance(&mut self, d: Duration) {
        self.now += d;
        for e in [&mut self.client, &mut self.server] {
            e.engine.handle_timeout(self.now);
        }
        self.collect();
    }

    /// The client sends the call `payload` with `hints`, now.
    ///
    /// # Panics
    /// If the engine refuses it (tests that expect a refusal call
    /// `Engine::send_call` themselves).
    pub fn send_call(&mut self, xid: u32, payload: rpcrdma_xdr::Payload, hints: ReplyHints) {
        self.client
            .engine
            .send_call(self.now, xid, payload, hints)
            .unwrap_or_else(|e| panic!("send_call({xid:#x}) refused: {e}"));
    }

    /// Answers every call the server's upper layer receives with
    /// `f(xid, call)`, driving the pair until no new call arrives.
    pub fn serve(&mut self, f: impl Fn(u32, &rpcrdma_xdr::Payload) -> rpcrdma_xdr::Payload) {
        for _ in 0..1000 {
            self.drive();
            let mut any = false;
            while let Some(Event::Call {
                token,
                xid,
                message,
                ..
            }) = self.server.take_event(|e| matches!(e, Event::Call { .. }))
            {
                any = true;
                let r = f(xid, &message);
                self.server.engine.send_reply(token, r).expect("reply");
            }
            if !any {
                return;
            }
        }
    }

    /// Panics unless neither engine (nor the fabric) holds a registration.
    pub fn assert_no_leaks(&self) {
        for (name, end, owner) in [("client", &self.client, 1), ("server", &self.server, 2)] {
            assert_eq!(
                end.engine.stats().live_registrations(),
                0,
                "{name} engine leaked registrations"
            );
            assert_eq!(self.fabric.live_regions(owner), 0, "{name} left regions");
        }
    }

    /// Delivers `bytes` to one end as if the peer had sent them (into its
    /// oldest posted receive): for adversarial tests.
    pub fn inject(&mut self, to_client: bool, bytes: &[u8]) {
        self.collect();
        let end = if to_client {
            &mut self.client
        } else {
            &mut self.server
        };
        let Some(mut r) = end.recvs.pop_front() else {
            panic!("no receive posted");
        };
        let n = bytes.len().min(r.buf.len());
        r.buf[..n].copy_from_slice(&bytes[..n]);
        let mut c = wc(r.wr_id, WcOpcode::Recv, WcStatus::Success, n as u32);
        c.buf = Some(r.buf);
        end.engine.handle_completion(self.now, c);
        self.collect();
    }

    /// Holds (or releases) one end's send queue: while held, nothing it
    /// posts is executed — its RDMA Reads are never answered, its Sends
    /// never arrive — as with a peer that stopped serving the connection.
    pub fn hold_sends(&mut self, from_client: bool, hold: bool) {
        self.held[usize::from(!from_client)] = hold;
    }

    /// Completes the oldest posted Send-queue work request of one end
    /// without delivering it: the peer silently discarded the message (a
    /// completion is reported if the work request was signaled).
    pub fn drop_next_send(&mut self, from_client: bool) -> Option<SendWr> {
        self.collect();
        let end = if from_client {
            &mut self.client
        } else {
            &mut self.server
        };
        let wr = end.sends.pop_front()?;
        if wr.signaled {
            end.completions
                .push_back(wc(wr.wr_id, wr.wc_opcode(), WcStatus::Success, 0));
        }
        Some(wr)
    }

    /// Cuts the connection: nothing more moves; both engines are closed
    /// and released.
    pub fn disconnect(&mut self) {
        self.cut = true;
        for e in [&mut self.client, &mut self.server] {
            e.sends.clear();
            e.completions.clear();
            e.engine.close(EngineError::Closed);
        }
        self.collect();
    }
}

impl Default for Pair {
    fn default() -> Self {
        Self::new()
    }
}

fn wc(wr_id: u64, opcode: WcOpcode, status: WcStatus, byte_len: u32) -> WorkCompletion {
    WorkCompletion {
        wr_id,
        opcode,
        status,
        byte_len,
        invalidated_rkey: None,
        solicited: false,
        buf: None,
    }
}

/// Records a Send and takes the receive it lands in.
fn record_send(
    me: &mut End,
    peer: &mut End,
    data: &[u8],
    invalidate: Option<u32>,
) -> Option<RecvWr> {
    me.sent.push((Bytes::copy_from_slice(data), invalidate));
    peer.recvs.pop_front()
}

/// Executes one work request of `me` against `peer`.
fn execute(fabric: &Fabric, me: &mut End, peer: &mut End, wr: SendWr) {
    let opcode = wr.wc_opcode();
    let status = match wr.op {
        SendOp::Send {
            sges, invalidate, ..
        } => match fabric.gather(me.owner, &sges) {
            Err(s) => s,
            Ok(data) => match record_send(me, peer, &data, invalidate) {
                None => WcStatus::RemoteOperation,
                Some(r) if r.buf.len() < data.len() => {
                    let mut c = wc(r.wr_id, WcOpcode::Recv, WcStatus::LocalLength, 0);
                    c.buf = Some(r.buf);
                    peer.completions.push_back(c);
                    WcStatus::RemoteOperation
                }
                Some(mut r) => {
                    let mut inv = None;
                    let mut status = WcStatus::Success;
                    if let Some(key) = invalidate {
                        if fabric.remote_invalidate(key, peer.owner) {
                            inv = Some(key);
                        } else {
                            status = WcStatus::RemoteInvalidateFailed;
                        }
                    }
                    r.buf[..data.len()].copy_from_slice(&data);
                    let mut c = wc(r.wr_id, WcOpcode::Recv, status, data.len() as u32);
                    c.invalidated_rkey = inv;
                    c.buf = Some(r.buf);
                    peer.completions.push_back(c);
                    WcStatus::Success
                }
            },
        },
        SendOp::Write { sges, remote } => fabric.rdma_write(me.owner, &sges, remote, peer.owner),
        SendOp::Read { sink, remote } => fabric.rdma_read(me.owner, sink, remote, peer.owner),
        SendOp::LocalInvalidate { key } => fabric.local_invalidate(key, me.owner),
        _ => WcStatus::LocalQpOperation,
    };
    if wr.signaled || !status.is_ok() {
        me.completions.push_back(wc(wr.wr_id, opcode, status, 0));
    }
}
