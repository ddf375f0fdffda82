//! Deterministic test support: an in-memory RDMA fabric and a two-engine
//! [`Pair`] harness (STYLE-ANCHORS §1, quinn's `Pair`).
//!
//! The fabric keeps every registered region in one table keyed by STag and
//! executes work requests the way RFC 5040 and RFC 8166 §3.2.2 describe:
//! a Send consumes the peer's oldest posted receive (too small: a length
//! error; none posted: a fatal error), RDMA Writes and Reads are checked
//! against the key, the owning connection, bounds and access rights, Send
//! With Invalidate kills the named key at the receiver, and each queue
//! completes in order. It exists to test the engine and the layers above it
//! without sockets; the real providers are tested end to end elsewhere.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use rpcrdma_verbs::{
    Access, DeregisterError, LocalSge, MemoryRegion, MrBuffer, ProtectionDomain, QpCaps, RecvWr,
    RegisterError, RemoteAddr, SendOp, SendWr, Sge, WcOpcode, WcStatus, WorkCompletion,
};

use crate::{Engine, EngineConfig, EngineError, Event};

#[derive(Debug)]
struct Region {
    owner: u32,
    addr: u64,
    access: Access,
    buf: MrBuffer,
    valid: bool,
}

#[derive(Debug)]
struct FabricInner {
    regions: HashMap<u32, Region>,
    seed: u64,
    next_addr: u64,
    /// Deregistrations still to refuse (fault injection).
    failing_deregistrations: usize,
}

impl FabricInner {
    fn next_key(&mut self) -> u32 {
        loop {
            // xorshift64*: fixed seed, so runs are reproducible, but keys
            // are not sequential.
            self.seed ^= self.seed >> 12;
            self.seed ^= self.seed << 25;
            self.seed ^= self.seed >> 27;
            let k = (self.seed.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32;
            if k != 0 && !self.regions.contains_key(&k) {
                return k;
            }
        }
    }
}

/// An in-memory RDMA fabric shared by the protection domains of a [`Pair`].
#[derive(Debug, Clone)]
pub struct Fabric {
    inner: Arc<Mutex<FabricInner>>,
}

impl Fabric {
    /// A fabric whose keys come from `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            inner: Arc::new(Mutex::new(FabricInner {
                regions: HashMap::new(),
                seed: seed | 1,
                next_addr: 0x1000_0000,
                failing_deregistrations: 0,
            })),
        }
    }

    /// A protection domain of connection end `owner`.
    pub fn pd(&self, owner: u32) -> TestPd {
        TestPd {
            fabric: self.clone(),
            owner,
        }
    }

    /// Regions currently registered by `owner`.
    pub fn live_regions(&self, owner: u32) -> usize {
        let g = self.inner.lock().expect("fabric lock");
        g.regions.values().filter(|r| r.owner == owner).count()
    }

    /// Fault injection: the next `n` deregistrations fail (the provider
    /// cannot invalidate the region; it stays registered and reachable).
    pub fn fail_next_deregistrations(&self, n: usize) {
        self.lock().failing_deregistrations = n;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FabricInner> {
        self.inner.lock().expect("fabric lock")
    }
}

/// A protection domain on a [`Fabric`].
#[derive(Debug, Clone)]
pub struct TestPd {
    fabric: Fabric,
    owner: u32,
}

/// A memory region on a [`Fabric`].
#[derive(Debug)]
pub struct TestMr {
    fabric: Fabric,
    key: u32,
    addr: u64,
    len: usize,
    access: Access,
}

impl MemoryRegion for TestMr {
    fn lkey(&self) -> u32 {
        self.key
    }
    fn rkey(&self) -> u32 {
        self.key
    }
    fn addr(&self) -> u64 {
        self.addr
    }
    fn len(&self) -> usize {
        self.len
    }
    fn access(&self) -> Access {
        self.access
    }
    fn deregister(self) -> Result<MrBuffer, DeregisterError> {
        let mut g = self.fabric.lock();
        if g.failing_deregistrations > 0 {
            g.failing_deregistrations -= 1;
            return Err(DeregisterError::NotRegistered { key: self.key });
        }
        g.regions
            .remove(&self.key)
            .map(|r| r.buf)
            .ok_or(DeregisterError::NotRegistered { key: self.key })
    }
}

impl TestPd {
    fn register(&self, buf: MrBuffer, access: Access) -> TestMr {
        let mut g = self.fabric.lock();
        let key = g.next_key();
        let addr = g.next_addr;
        let len = buf.len();
        g.next_addr += (len as u64 + 0xfff) & !0xfff;
        g.regions.insert(
            key,
            Region {
                owner: self.owner,
                addr,
                access,
                buf,
                valid: true,
            },
        );
        TestMr {
            fabric: self.fabric.clone(),
            key,
            addr,
            len,
            access,
        }
    }
}

impl ProtectionDomain for TestPd {
    type Mr = TestMr;

    fn register_bytes(&self, buf: Bytes, access: Access) -> Result<TestMr, RegisterError> {
        if access.is_writable() {
            return Err(RegisterError::ReadOnlyBuffer {
                access: format!("{access:?}"),
            });
        }
        Ok(self.register(MrBuffer::Shared(buf), access))
    }

    fn register_mut(&self, buf: BytesMut, access: Access) -> Result<TestMr, RegisterError> {
        Ok(self.register(MrBuffer::Owned(buf), access))
    }
}

/// Why the fabric refused an access.
fn check_access(
    g: &FabricInner,
    key: u32,
    owner: u32,
    addr: u64,
    len: usize,
    need: Access,
) -> Result<(), WcStatus> {
    let r = g.regions.get(&key).ok_or(WcStatus::RemoteAccess)?;
    let off = addr.checked_sub(r.addr).ok_or(WcStatus::RemoteAccess)? as usize;
    if !r.valid || r.owner != owner || !r.access.contains(need) || off + len > r.buf.len() {
        return Err(WcStatus::RemoteAccess);
    }
    Ok(())
}

fn region_bytes(g: &FabricInner, key: u32, addr: u64, len: usize) -> Vec<u8> {
    let r = &g.regions[&key];
    let off = (addr - r.addr) as usize;
    match &r.buf {
        MrBuffer::Shared(b) => b[off..off + len].to_vec(),
        MrBuffer::Owned(b) => b[off..off + len].to_vec(),
    }
}

fn region_write(g: &mut FabricInner, key: u32, addr: u64, data: &[u8]) {
    let r = g.regions.get_mut(&key).expect("checked region");
    let off = (addr - r.addr) as usize;
    if let MrBuffer::Owned(b) = &mut r.buf {
        b[off..off + data.len()].copy_from_slice(data);
    }
}

fn gather(g: &FabricInner, owner: u32, sges: &[Sge]) -> Result<Vec<u8>, WcStatus> {
    let mut out = Vec::new();
    for s in sges {
        match s {
            Sge::Bytes(b) => out.extend_from_slice(b),
            Sge::Region(LocalSge { lkey, addr, len }) => {
                check_access(g, *lkey, owner, *addr, *len as usize, Access::LOCAL_READ)
                    .map_err(|_| WcStatus::LocalProtection)?;
                out.extend(region_bytes(g, *lkey, *addr, *len as usize));
            }
        }
    }
    Ok(out)
}

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
    /// without delivering it: the peer silently discarded the message.
    pub fn drop_next_send(&mut self, from_client: bool) -> Option<SendWr> {
        self.collect();
        let end = if from_client {
            &mut self.client
        } else {
            &mut self.server
        };
        let wr = end.sends.pop_front()?;
        end.completions
            .push_back(wc(wr.wr_id, wr.wc_opcode(), WcStatus::Success, 0));
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
        } => {
            let mut g = fabric.lock();
            match gather(&g, me.owner, &sges) {
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
                            match g.regions.get_mut(&key) {
                                Some(reg) if reg.owner == peer.owner => {
                                    reg.valid = false;
                                    inv = Some(key);
                                }
                                _ => status = WcStatus::RemoteInvalidateFailed,
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
            }
        }
        SendOp::Write { sges, remote } => {
            let mut g = fabric.lock();
            match gather(&g, me.owner, &sges) {
                Err(s) => s,
                Ok(data) => {
                    let RemoteAddr { rkey, addr } = remote;
                    match check_access(&g, rkey, peer.owner, addr, data.len(), Access::REMOTE_WRITE)
                    {
                        Ok(()) => {
                            region_write(&mut g, rkey, addr, &data);
                            WcStatus::Success
                        }
                        Err(s) => s,
                    }
                }
            }
        }
        SendOp::Read { sink, remote } => {
            let mut g = fabric.lock();
            let len = sink.len as usize;
            match check_access(
                &g,
                remote.rkey,
                peer.owner,
                remote.addr,
                len,
                Access::REMOTE_READ,
            ) {
                Err(s) => s,
                Ok(()) => {
                    match check_access(&g, sink.lkey, me.owner, sink.addr, len, Access::LOCAL_WRITE)
                    {
                        Err(_) => WcStatus::LocalProtection,
                        Ok(()) => {
                            let data = region_bytes(&g, remote.rkey, remote.addr, len);
                            region_write(&mut g, sink.lkey, sink.addr, &data);
                            WcStatus::Success
                        }
                    }
                }
            }
        }
        SendOp::LocalInvalidate { key } => {
            let mut g = fabric.lock();
            match g.regions.get_mut(&key) {
                Some(r) if r.owner == me.owner => {
                    r.valid = false;
                    WcStatus::Success
                }
                _ => WcStatus::LocalProtection,
            }
        }
        _ => WcStatus::LocalQpOperation,
    };
    if wr.signaled || !status.is_ok() {
        me.completions.push_back(wc(wr.wr_id, opcode, status, 0));
    }
}

/// The whole-engine fuzz property (the `engine` target in `fuzz/`, and a
/// bounded seeded run in `tests/hostile.rs`): `data` is split into
/// messages (a direction byte, a length byte, that many bytes) injected
/// into a connected pair that has a chunked call in flight; calls that
/// reach the server are answered. Panics only if an invariant breaks:
/// registrations leaked after the pair is closed, or the legitimate call
/// completed more than once.
pub fn fuzz_pair(data: &[u8]) {
    use crate::ReplyHints;
    use rpcrdma_xdr::{Payload, PayloadEncoder};

    let mut pair = Pair::new();
    let mut pe = PayloadEncoder::new();
    let mut e = pe.encoder();
    for w in [1u32, 0, 2, 0x2000_0099, 1, 3, 0, 0, 0, 0] {
        e.put_u32(w);
    }
    e.put_opaque_ddp(Bytes::from(vec![0x5a; 5000]));
    let hints = ReplyHints {
        ddp_results: vec![8192],
        max_reply: Some(9000),
        reduce: true,
    };
    pair.client
        .engine
        .send_call(pair.now, 1, pe.finish(), hints)
        .expect("first call");
    let mut rest = data;
    while let [dir, len, tail @ ..] = rest {
        let n = (*len as usize).min(tail.len());
        let (msg, next) = tail.split_at(n);
        rest = next;
        let to_client = dir & 1 == 1;
        let end = if to_client {
            &pair.client
        } else {
            &pair.server
        };
        if end.engine.error().is_some() {
            continue;
        }
        if end.recvs.is_empty() {
            pair.collect();
            let end = if to_client {
                &pair.client
            } else {
                &pair.server
            };
            if end.recvs.is_empty() {
                continue;
            }
        }
        pair.inject(to_client, msg);
        let _ = pair.drive_until_idle(10_000);
        while let Some(Event::Call { token, xid, .. }) =
            pair.server.take_event(|e| matches!(e, Event::Call { .. }))
        {
            let mut r = BytesMut::new();
            for w in [xid, 1, 0, 0, 0, 0] {
                r.extend_from_slice(&w.to_be_bytes());
            }
            let _ = pair
                .server
                .engine
                .send_reply(token, Payload::inline_only(r.freeze()));
        }
        let _ = pair.drive_until_idle(10_000);
    }
    pair.disconnect();
    pair.assert_no_leaks();
    for end in [&pair.client, &pair.server] {
        // Every octet charged to the connection came back; the budget
        // holds only idle buffers kept for reuse.
        assert_eq!(end.engine.memory_in_use(), 0, "memory not returned");
        let b = end.engine.memory_budget();
        assert_eq!(b.in_use(), b.pooled(), "budget not returned");
    }
    let outcomes = pair
        .client
        .events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::Reply { xid: 1, .. } | Event::CallFailed { xid: 1, .. }
            )
        })
        .count();
    assert!(outcomes <= 1, "the call completed {outcomes} times");
}
