//! The duplicate request cache (DRC): at-most-once execution of
//! non-idempotent procedures across retransmissions.
//!
//! A client that loses its connection sends its outstanding calls again on
//! a new one with the **same XID** (RFC 5531 §8.1; the Linux NFS client
//! does this after every reconnect, over TCP and RPC-over-RDMA alike). A
//! server that simply runs them again would, for example, answer a
//! retransmitted `REMOVE` with `NFS3ERR_NOENT` although the first one
//! succeeded, or create a file twice. The cache remembers the replies of
//! the procedures a program declares non-idempotent
//! ([`crate::Version::non_idempotent`]) and answers a retransmission from
//! them.
//!
//! # Keys
//!
//! An entry is keyed by the **client** (its IP address without the port,
//! since a reconnecting client usually comes from a new port; the
//! connection's description when the transport knows no address), the
//! **XID**, the **program, version and procedure**, and a **checksum**
//! (CRC32c) of the arguments' first [`ARGS_SUM_PREFIX`] octets with the
//! arguments' whole length, DDP-eligible items included. A call that
//! matches client, XID and procedure but not the checksum is a new call (a
//! client that rebooted and reused an XID) and replaces the entry.
//!
//! Only a prefix is summed, as Linux's nfsd does (256 octets): the prefix
//! holds what tells two calls of one procedure apart (an NFS WRITE's file
//! handle, offset, count and stability), and summing a 1 MiB WRITE's data
//! too cost the server a tenth of its time for no better protection.
//!
//! # States
//!
//! * *In progress*: the first call is running. A retransmission **waits**
//!   for it and is answered with its reply; it never runs the procedure a
//!   second time. (Dropping it instead, as some servers do, would leave a
//!   client whose first connection is gone waiting for a reply that can
//!   only go to the new connection.)
//! * *Done*: the reply is kept and sent again, byte for byte, for every
//!   retransmission.
//!
//! # Bounds
//!
//! [`ReplyCacheConfig`]: at most `max_entries` entries and `max_bytes` of
//! cached replies (each entry counts its reply's length plus
//! [`ENTRY_OVERHEAD`]); the oldest finished entries are evicted first, and
//! finished entries older than `max_age` are dropped. Entries in progress
//! are never evicted (they are bounded by the server's calls in flight);
//! when the table is full of them a new call runs uncached.
//!
//! The core ([`ReplyCache`]) is deterministic: the clock is an argument.

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use rpcrdma_xdr::Payload;
use tokio::sync::watch;

/// Bytes each cache entry counts besides its reply (key, bookkeeping).
pub const ENTRY_OVERHEAD: usize = 128;

/// Limits of a [`ReplyCache`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyCacheConfig {
    /// Entries kept at most, in progress or done (default 8192).
    pub max_entries: usize,
    /// Bytes of cached replies at most, [`ENTRY_OVERHEAD`] per entry
    /// included (default 16 MiB).
    pub max_bytes: usize,
    /// How long a finished entry is kept (default 120 s, as the Linux
    /// NFS server's cache; a client retransmits long before).
    pub max_age: Duration,
}

impl Default for ReplyCacheConfig {
    fn default() -> Self {
        Self {
            max_entries: 8192,
            max_bytes: 16 << 20,
            max_age: Duration::from_secs(120),
        }
    }
}

/// Who sent a call, as far as the cache is concerned.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ClientId {
    /// The client's IP address (the port is ignored: reconnections come
    /// from new ports).
    Addr(IpAddr),
    /// A connection whose transport knows no address (its description):
    /// retransmissions are recognised only on the same connection.
    Connection(String),
}

/// The identity of a call (without its argument checksum).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallKey {
    /// The client.
    pub client: ClientId,
    /// Transaction id.
    pub xid: u32,
    /// Program.
    pub prog: u32,
    /// Version.
    pub vers: u32,
    /// Procedure.
    pub proc_: u32,
}

/// Octets of a call's arguments the duplicate request cache's checksum
/// covers ([`ArgsSum::of_message`]); the length covers them all.
pub const ARGS_SUM_PREFIX: usize = 256;

/// A checksum of a call's arguments: CRC32c of the first
/// [`ARGS_SUM_PREFIX`] octets of the XDR stream after the call header, and
/// the stream's whole length, DDP-eligible items included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArgsSum {
    /// CRC32c (Castagnoli).
    pub crc: u32,
    /// Length in bytes.
    pub len: usize,
}

impl ArgsSum {
    /// The checksum of `message`'s stream from inline offset `args_at`
    /// (where the arguments start, after the call header) to the end: the
    /// CRC32c of its first [`ARGS_SUM_PREFIX`] octets and its length.
    pub fn of_message(message: &Payload, args_at: usize) -> Self {
        let mut skip = args_at;
        let mut crc = 0u32;
        let mut len = 0usize;
        for piece in message.pieces() {
            let piece = if skip >= piece.len() {
                skip -= piece.len();
                continue;
            } else {
                let p = &piece[skip..];
                skip = 0;
                p
            };
            let summed = ARGS_SUM_PREFIX.saturating_sub(len).min(piece.len());
            if summed > 0 {
                crc = crc32c::crc32c_append(crc, &piece[..summed]);
            }
            len += piece.len();
        }
        Self { crc, len }
    }
}

/// Counters of a [`ReplyCache`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplyCacheStats {
    /// Calls not found: they ran.
    pub misses: u64,
    /// Retransmissions answered from a finished entry.
    pub hits: u64,
    /// Retransmissions that arrived while the first call was running and
    /// waited for its reply.
    pub waits: u64,
    /// Calls that ran uncached because the table was full of calls in
    /// progress.
    pub uncached: u64,
    /// Finished entries evicted for room or age.
    pub evictions: u64,
    /// Entries now.
    pub entries: usize,
    /// Bytes now ([`ENTRY_OVERHEAD`] per entry included).
    pub bytes: usize,
}

/// What to do with a call ([`ReplyCache::lookup`]).
#[derive(Debug)]
pub enum Lookup {
    /// New: run it, then hand the reply to [`ReplyCache::complete`] with
    /// this ticket (or [`ReplyCache::abandon`] it).
    Run(Ticket),
    /// New, but there is no room to remember it: run it uncached.
    RunUncached,
    /// A retransmission of a finished call: send this reply again.
    Replay(Payload),
    /// A retransmission of a call still running: wait on this for its
    /// reply (`None` if the first call was abandoned without one).
    Wait(watch::Receiver<Option<Payload>>),
}

/// The right to finish one entry in progress.
#[derive(Debug)]
#[must_use = "complete or abandon the entry"]
pub struct Ticket {
    key: CallKey,
    seq: u64,
}

#[derive(Debug)]
enum Slot {
    Running { tx: watch::Sender<Option<Payload>> },
    Done { reply: Payload, at: Instant },
}

#[derive(Debug)]
struct Entry {
    sum: ArgsSum,
    seq: u64,
    slot: Slot,
}

#[derive(Debug, Default)]
struct Table {
    entries: HashMap<CallKey, Entry>,
    /// Finished entries by completion order (seq → key).
    done: BTreeMap<u64, CallKey>,
    next_seq: u64,
    bytes: usize,
    stats: ReplyCacheStats,
}

/// The duplicate request cache (see the module documentation).
///
/// ```
/// use std::time::Instant;
/// use bytes::Bytes;
/// use rpcrdma_oncrpc::drc::{ArgsSum, CallKey, ClientId, Lookup, ReplyCache, ReplyCacheConfig};
/// use rpcrdma_xdr::Payload;
///
/// let cache = ReplyCache::new(ReplyCacheConfig::default());
/// let key = CallKey { client: ClientId::Addr([10, 0, 0, 1].into()), xid: 7, prog: 100003, vers: 3, proc_: 12 };
/// let sum = ArgsSum { crc: 0xabcd, len: 40 };
/// let now = Instant::now();
/// let Lookup::Run(ticket) = cache.lookup(key.clone(), sum, now) else { panic!() };
/// let reply = Payload::inline_only(Bytes::from_static(b"reply"));
/// cache.complete(ticket, reply.clone(), now);
/// // The retransmission is answered from the cache.
/// assert!(matches!(cache.lookup(key, sum, now), Lookup::Replay(r) if r == reply));
/// ```
#[derive(Debug)]
pub struct ReplyCache {
    config: ReplyCacheConfig,
    table: Mutex<Table>,
}

fn cost(reply: &Payload) -> usize {
    reply.stream_len().saturating_add(ENTRY_OVERHEAD)
}

impl ReplyCache {
    /// An empty cache with these limits.
    pub fn new(config: ReplyCacheConfig) -> Self {
        Self {
            config,
            table: Mutex::new(Table::default()),
        }
    }

    /// The limits.
    pub fn config(&self) -> &ReplyCacheConfig {
        &self.config
    }

    /// Counters and current size.
    pub fn stats(&self) -> ReplyCacheStats {
        let t = crate::util::lock(&self.table);
        let mut s = t.stats;
        s.entries = t.entries.len();
        s.bytes = t.bytes;
        s
    }

    /// Looks a received call up; a new call becomes an entry in progress.
    pub fn lookup(&self, key: CallKey, sum: ArgsSum, now: Instant) -> Lookup {
        let mut t = crate::util::lock(&self.table);
        self.expire(&mut t, now);
        if let Some(e) = t.entries.get(&key) {
            if e.sum == sum {
                return match &e.slot {
                    Slot::Done { reply, .. } => {
                        let r = reply.clone();
                        t.stats.hits += 1;
                        Lookup::Replay(r)
                    }
                    Slot::Running { tx } => {
                        let rx = tx.subscribe();
                        t.stats.waits += 1;
                        Lookup::Wait(rx)
                    }
                };
            }
            // Same XID, different arguments: a new call replaces the old.
            match t.entries.remove(&key).map(|e| (e.seq, e.slot)) {
                Some((seq, Slot::Done { reply, .. })) => {
                    t.done.remove(&seq);
                    t.bytes = t.bytes.saturating_sub(cost(&reply));
                }
                Some((_, Slot::Running { .. })) => {
                    t.bytes = t.bytes.saturating_sub(ENTRY_OVERHEAD);
                }
                None => {}
            }
        }
        t.stats.misses += 1;
        // Room for one more entry (in progress entries cost the overhead).
        while t.entries.len() >= self.config.max_entries.max(1)
            || t.bytes.saturating_add(ENTRY_OVERHEAD) > self.config.max_bytes
        {
            if !Self::evict_oldest(&mut t) {
                t.stats.uncached += 1;
                return Lookup::RunUncached;
            }
        }
        let seq = t.next_seq;
        t.next_seq += 1;
        let (tx, _) = watch::channel(None);
        t.bytes += ENTRY_OVERHEAD;
        t.entries.insert(
            key.clone(),
            Entry {
                sum,
                seq,
                slot: Slot::Running { tx },
            },
        );
        Lookup::Run(Ticket { key, seq })
    }

    /// Records the reply of a call that ran, and hands it to the
    /// retransmissions that waited for it. A reply larger than the whole
    /// byte budget is handed over but not kept.
    pub fn complete(&self, ticket: Ticket, reply: Payload, now: Instant) {
        let mut t = crate::util::lock(&self.table);
        let Some(e) = t.entries.get_mut(&ticket.key) else {
            return;
        };
        if e.seq != ticket.seq {
            return; // replaced by a newer call with the same XID
        }
        let c = cost(&reply);
        let old = std::mem::replace(
            &mut e.slot,
            Slot::Done {
                reply: reply.clone(),
                at: now,
            },
        );
        if let Slot::Running { tx } = old {
            tx.send_replace(Some(reply));
        }
        t.bytes = t.bytes - ENTRY_OVERHEAD + c;
        t.done.insert(ticket.seq, ticket.key.clone());
        if c > self.config.max_bytes {
            Self::remove_done(&mut t, ticket.seq);
            t.stats.evictions += 1;
            return;
        }
        while t.bytes > self.config.max_bytes {
            if !Self::evict_oldest(&mut t) {
                break;
            }
        }
    }

    /// Forgets an entry in progress without a reply (the call could not
    /// finish); calls waiting for it see `None`.
    pub fn abandon(&self, ticket: Ticket) {
        let mut t = crate::util::lock(&self.table);
        if t.entries
            .get(&ticket.key)
            .is_some_and(|e| e.seq == ticket.seq)
        {
            t.entries.remove(&ticket.key);
            t.bytes = t.bytes.saturating_sub(ENTRY_OVERHEAD);
        }
    }

    fn remove_done(t: &mut Table, seq: u64) {
        if let Some(key) = t.done.remove(&seq) {
            if let Some(e) = t.entries.remove(&key) {
                if let Slot::Done { reply, .. } = e.slot {
                    t.bytes = t.bytes.saturating_sub(cost(&reply));
                }
            }
        }
    }

    fn evict_oldest(t: &mut Table) -> bool {
        let Some((&seq, _)) = t.done.iter().next() else {
            return false;
        };
        Self::remove_done(t, seq);
        t.stats.evictions += 1;
        true
    }

    fn expire(&self, t: &mut Table, now: Instant) {
        // Completion order is not strictly time order across threads, but
        // close enough: stop at the first entry young enough.
        while let Some((&seq, key)) = t.done.iter().next() {
            let old = match t.entries.get(key).map(|e| &e.slot) {
                Some(Slot::Done { at, .. }) => {
                    now.saturating_duration_since(*at) > self.config.max_age
                }
                _ => true,
            };
            if !old {
                break;
            }
            Self::remove_done(t, seq);
            t.stats.evictions += 1;
        }
    }
}
