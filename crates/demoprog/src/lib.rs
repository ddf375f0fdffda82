//! The rpcrdma demo RPC program: what `rpcrdma demo`, `serve`, `call` and
//! `bench` run, over TCP or RPC-over-RDMA alike.
//!
//! Program [`PROGRAM`] (in the user-defined range 0x20000000-0x3fffffff),
//! version [`VERSION`]:
//!
//! | proc | name  | arguments                 | results                              |
//! |------|-------|---------------------------|--------------------------------------|
//! | 0    | NULL  | void                      | void                                 |
//! | 1    | ECHO  | `opaque<1024>` (inline)   | the same bytes                       |
//! | 2    | READ  | seed, count               | status; crc32c and `opaque<>` **(DDP)** |
//! | 3    | WRITE | `opaque<>` **(DDP)**      | count and crc32c                     |
//! | 4    | CALLBACKS | client id, count, size | status; how many reverse calls succeeded |
//!
//! READ returns `count` bytes of a pattern derived from `seed`
//! ([`pattern`]), so the client can check every byte. The full XDR and the
//! Upper Layer Binding (DDP-eligible items, maximum reply sizes) are in
//! `docs/demo-program.md`; the binding as code is [`ulb`].
//!
//! CALLBACKS is the demo's `CREATE_SESSION`: with it the client says it
//! takes reverse-direction calls (RFC 8167 §6) on the connection the call
//! arrives on, names itself with a client id, and asks the server to call
//! it back `count` times while the CALLBACKS call is outstanding. The
//! reverse calls go to the callback program [`CB_PROGRAM`] (NULL and
//! CB_ECHO), which the client serves ([`serve_callbacks`]); it has no
//! DDP-eligible items, but a large CB_ECHO travels as Long messages both
//! ways (RFC 8167 §5.3).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use rpcrdma_demoprog::{DemoClient, serve_demo};
//! use rpcrdma_oncrpc::{mem, Client, ClientConfig, Server, ServerConfig, Services};
//!
//! let mut services = Services::new();
//! serve_demo(&mut services);
//! let server = Server::new(services, ServerConfig::default());
//! let (connector, mut listener) = mem::listener(mem::MemConfig::default());
//! let s = server.clone();
//! tokio::spawn(async move { while let Some(t) = listener.accept().await { s.serve(t); } });
//!
//! let demo = DemoClient::new(Client::new(connector, ClientConfig::default()));
//! let data = demo.read_verified(7, 100_000).await?;   // Write chunk over "RDMA"
//! demo.write_verified(data).await?;                    // Read chunk
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use rpcrdma_oncrpc::{
    CallHints, CallInfo, Client, ClientConfig, Marshal, ProcError, RpcError, Services, Unmarshal,
};
use rpcrdma_xdr::{Decoder, Encoder, XdrError};

/// The program number (user-defined range; "RDM" in ASCII after 0x20).
pub const PROGRAM: u32 = 0x2052_444D;
/// The only version.
pub const VERSION: u32 = 1;

/// Procedure numbers.
pub mod procs {
    /// NULL: no arguments, no results.
    pub const NULL: u32 = 0;
    /// ECHO: returns its small inline argument.
    pub const ECHO: u32 = 1;
    /// READ: returns patterned data (DDP-eligible).
    pub const READ: u32 = 2;
    /// WRITE: takes data (DDP-eligible), returns its checksum.
    pub const WRITE: u32 = 3;
    /// CALLBACKS: the client declares itself ready for reverse-direction
    /// calls and asks for some.
    pub const CALLBACKS: u32 = 4;
}

/// The callback program the demo *client* serves (reverse direction):
/// "RDC" after 0x20.
pub const CB_PROGRAM: u32 = 0x2052_4443;
/// Its only version.
pub const CB_VERSION: u32 = 1;

/// Callback procedure numbers.
pub mod cb_procs {
    /// CB_NULL: no arguments, no results.
    pub const NULL: u32 = 0;
    /// CB_ECHO: returns its argument.
    pub const ECHO: u32 = 1;
}

/// Largest CB_ECHO argument (`DEMO_CB_MAX_ECHO`, 64 KiB).
pub const CB_MAX_ECHO: u32 = 65536;
/// Most reverse-direction calls one CALLBACKS may ask for
/// (`DEMO_MAX_CALLBACKS`).
pub const MAX_CALLBACKS: u32 = 256;

/// Largest ECHO argument (`DEMO_MAX_ECHO`).
pub const MAX_ECHO: u32 = 1024;
/// Largest READ or WRITE data (`DEMO_MAX_DATA`, 16 MiB).
pub const MAX_DATA: u32 = 16 * 1024 * 1024;

/// `demo_stat`: READ's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DemoStat(pub u32);

impl DemoStat {
    /// Success.
    pub const OK: DemoStat = DemoStat(0);
    /// The requested count exceeds [`MAX_DATA`].
    pub const TOOBIG: DemoStat = DemoStat(1);
    /// CALLBACKS: the server cannot make reverse-direction calls on this
    /// connection (its transport has no reverse-direction credits).
    pub const NOCALLBACK: DemoStat = DemoStat(2);
}

/// ECHO's argument and result: at most [`MAX_ECHO`] bytes, always inline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EchoData(pub Bytes);

impl Marshal for EchoData {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        enc.put_opaque(&self.0);
    }
}

impl Unmarshal for EchoData {
    fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        dec.get_opaque_bytes(MAX_ECHO).map(EchoData)
    }
}

/// READ's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadArgs {
    /// Pattern seed.
    pub seed: u64,
    /// Bytes wanted.
    pub count: u32,
}

impl Marshal for ReadArgs {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        enc.put_u64(self.seed);
        enc.put_u32(self.count);
    }
}

impl Unmarshal for ReadArgs {
    fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        Ok(Self {
            seed: dec.get_u64()?,
            count: dec.get_u32()?,
        })
    }
}

/// READ's results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadRes {
    /// `DEMO_OK`: the data and its crc32c.
    Ok {
        /// crc32c of `data`.
        crc32c: u32,
        /// The data (DDP-eligible).
        data: Bytes,
    },
    /// Any other status (no data).
    Err(DemoStat),
}

impl Marshal for ReadRes {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        match self {
            ReadRes::Ok { crc32c, data } => {
                enc.put_u32(DemoStat::OK.0);
                enc.put_u32(*crc32c);
                enc.put_opaque_ddp(data.clone());
            }
            ReadRes::Err(s) => enc.put_u32(s.0),
        }
    }
}

impl Unmarshal for ReadRes {
    fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        match DemoStat(dec.get_u32()?) {
            DemoStat::OK => Ok(ReadRes::Ok {
                crc32c: dec.get_u32()?,
                data: dec.get_opaque_ddp(MAX_DATA)?,
            }),
            other => Ok(ReadRes::Err(other)),
        }
    }
}

/// WRITE's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteArgs {
    /// The data (DDP-eligible).
    pub data: Bytes,
}

impl Marshal for WriteArgs {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        enc.put_opaque_ddp(self.data.clone());
    }
}

impl Unmarshal for WriteArgs {
    fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        Ok(Self {
            data: dec.get_opaque_ddp(MAX_DATA)?,
        })
    }
}

/// WRITE's results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteRes {
    /// Bytes received.
    pub count: u32,
    /// Their crc32c.
    pub crc32c: u32,
}

impl Marshal for WriteRes {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        enc.put_u32(self.count);
        enc.put_u32(self.crc32c);
    }
}

impl Unmarshal for WriteRes {
    fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        Ok(Self {
            count: dec.get_u32()?,
            crc32c: dec.get_u32()?,
        })
    }
}

/// CALLBACKS' arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallbackArgs {
    /// The client's name for the server's Upper Layer (its key in
    /// [`rpcrdma_oncrpc::Backchannels`]).
    pub client_id: u64,
    /// Reverse-direction calls wanted (at most [`MAX_CALLBACKS`]; 0 only
    /// declares readiness).
    pub count: u32,
    /// Bytes per CB_ECHO (at most [`CB_MAX_ECHO`]); 0 makes CB_NULL calls.
    pub size: u32,
}

impl Marshal for CallbackArgs {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        enc.put_u64(self.client_id);
        enc.put_u32(self.count);
        enc.put_u32(self.size);
    }
}

impl Unmarshal for CallbackArgs {
    fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        let client_id = dec.get_u64()?;
        let limited = |dec: &mut Decoder<'_>, max: u32| {
            let offset = dec.position();
            let v = dec.get_u32()?;
            if v > max {
                return Err(XdrError::TooLong {
                    offset,
                    len: v,
                    max,
                });
            }
            Ok(v)
        };
        let count = limited(dec, MAX_CALLBACKS)?;
        let size = limited(dec, CB_MAX_ECHO)?;
        Ok(Self {
            client_id,
            count,
            size,
        })
    }
}

/// CALLBACKS' results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallbackRes {
    /// `DEMO_OK`: how many reverse-direction calls were answered correctly.
    Ok {
        /// Calls answered with the right results.
        succeeded: u32,
    },
    /// Any other status (no results).
    Err(DemoStat),
}

impl Marshal for CallbackRes {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        match self {
            CallbackRes::Ok { succeeded } => {
                enc.put_u32(DemoStat::OK.0);
                enc.put_u32(*succeeded);
            }
            CallbackRes::Err(s) => enc.put_u32(s.0),
        }
    }
}

impl Unmarshal for CallbackRes {
    fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        match DemoStat(dec.get_u32()?) {
            DemoStat::OK => Ok(CallbackRes::Ok {
                succeeded: dec.get_u32()?,
            }),
            other => Ok(CallbackRes::Err(other)),
        }
    }
}

/// CB_ECHO's argument and result: at most [`CB_MAX_ECHO`] bytes, never
/// DDP-eligible (a program used only in the reverse direction has no
/// DDP-eligible items: §7.4 of the RFC 8166 draft in `shared/specs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CbEchoData(pub Bytes);

impl Marshal for CbEchoData {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        enc.put_opaque(&self.0);
    }
}

impl Unmarshal for CbEchoData {
    fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        dec.get_opaque_bytes(CB_MAX_ECHO).map(CbEchoData)
    }
}

/// The Upper Layer Binding as code (RFC 8166 §6): per procedure, the
/// DDP-eligible result items with their maximum sizes and the maximum size
/// of the results. DDP-eligible *arguments* (WRITE's data) are marked by
/// [`WriteArgs`]'s encoding itself.
pub mod ulb {
    use super::*;

    /// NULL: no results.
    pub fn null() -> CallHints {
        CallHints::new().max_results(0)
    }

    /// ECHO: at most 4 + 1024 bytes of results, all inline.
    pub fn echo() -> CallHints {
        CallHints::new().max_results(4 + MAX_ECHO)
    }

    /// Maximum size of READ's results for `count` bytes.
    pub fn read_max_results(count: u32) -> u32 {
        let count = count.min(MAX_DATA);
        4 + 4 + 4 + count.div_ceil(4) * 4
    }

    /// READ of `count` bytes: the data is one DDP-eligible result of at
    /// most `count` bytes (a Write chunk over RDMA).
    pub fn read(count: u32) -> CallHints {
        CallHints::new()
            .ddp_result(count.min(MAX_DATA))
            .max_results(read_max_results(count))
    }

    /// WRITE: 8 bytes of results.
    pub fn write() -> CallHints {
        CallHints::new().max_results(8)
    }

    /// CALLBACKS: status and count, 8 bytes of results.
    pub fn callbacks() -> CallHints {
        CallHints::new().max_results(8)
    }

    /// Callback program, CB_NULL: no results.
    pub fn cb_null() -> CallHints {
        CallHints::new().max_results(0)
    }

    /// Callback program, CB_ECHO of `len` bytes: the results are the same
    /// `opaque<>`, 4 + roundup4(`len`) bytes, all inline in the XDR (a
    /// Long reply through the Reply chunk when that exceeds the inline
    /// threshold).
    pub fn cb_echo(len: u32) -> CallHints {
        let len = len.min(CB_MAX_ECHO);
        CallHints::new().max_results(4 + len.div_ceil(4) * 4)
    }
}

/// The deterministic data READ returns for `seed`: byte `i` is byte
/// `i % 8` (big-endian) of `splitmix64(seed + i / 8)`.
///
/// ```
/// let a = rpcrdma_demoprog::pattern(1, 20);
/// assert_eq!(a.len(), 20);
/// assert_eq!(&a[..12], &rpcrdma_demoprog::pattern(1, 12)[..]);
/// assert_ne!(a, rpcrdma_demoprog::pattern(2, 20));
/// ```
pub fn pattern(seed: u64, len: usize) -> Bytes {
    let mut b = BytesMut::with_capacity(len + 8);
    let mut i = 0u64;
    while b.len() < len {
        b.extend_from_slice(&splitmix64(seed.wrapping_add(i)).to_be_bytes());
        i += 1;
    }
    b.truncate(len);
    b.freeze()
}

/// The offset of the first byte of `data` that differs from
/// [`pattern`]`(seed, data.len())`, if any.
pub fn pattern_mismatch(seed: u64, data: &[u8]) -> Option<usize> {
    data.chunks(8).enumerate().find_map(|(i, chunk)| {
        let want = splitmix64(seed.wrapping_add(i as u64)).to_be_bytes();
        chunk
            .iter()
            .zip(want.iter())
            .position(|(a, b)| a != b)
            .map(|p| i * 8 + p)
    })
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// crc32c, the demo program's checksum.
pub fn checksum(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// Registers the demo program's server side in `services`.
///
/// READ keeps the last pattern it generated, so repeated READs of the
/// same seed and size (benchmarks) do not regenerate it.
pub fn serve_demo(services: &mut Services) {
    type Cached = Option<(u64, u32, Bytes, u32)>;
    let cache: Arc<Mutex<Cached>> = Arc::new(Mutex::new(None));
    services
        .program(PROGRAM, VERSION)
        .null()
        .proc(procs::ECHO, |_, a: EchoData| async move {
            Ok::<_, ProcError>(a)
        })
        .proc(procs::READ, move |_, a: ReadArgs| {
            let cache = cache.clone();
            async move {
                if a.count > MAX_DATA {
                    return Ok::<_, ProcError>(ReadRes::Err(DemoStat::TOOBIG));
                }
                let hit = {
                    let c = cache.lock().unwrap_or_else(|e| e.into_inner());
                    match &*c {
                        Some((s, n, d, crc)) if *s == a.seed && *n == a.count => {
                            Some((d.clone(), *crc))
                        }
                        _ => None,
                    }
                };
                let (data, crc) = match hit {
                    Some(h) => h,
                    None => {
                        let d = pattern(a.seed, a.count as usize);
                        let crc = checksum(&d);
                        *cache.lock().unwrap_or_else(|e| e.into_inner()) =
                            Some((a.seed, a.count, d.clone(), crc));
                        (d, crc)
                    }
                };
                Ok(ReadRes::Ok { crc32c: crc, data })
            }
        })
        .proc(procs::WRITE, |_, a: WriteArgs| async move {
            Ok::<_, ProcError>(WriteRes {
                count: a.data.len() as u32,
                crc32c: checksum(&a.data),
            })
        })
        .proc(procs::CALLBACKS, callbacks);
}

/// Counts the reverse-direction calls a client's callback program served
/// (cheap to clone; clones share).
#[derive(Debug, Clone, Default)]
pub struct CallbackCount(Arc<std::sync::atomic::AtomicU64>);

impl CallbackCount {
    /// Calls served so far.
    pub fn get(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn bump(&self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Registers the callback program ([`CB_PROGRAM`]: CB_NULL and CB_ECHO)
/// in `services`, for a demo *client* to serve in the reverse direction
/// (`ClientConfig::services`). Returns a counter of the calls served.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use rpcrdma_demoprog::{serve_callbacks, serve_demo, DemoClient};
/// use rpcrdma_oncrpc::{mem, Client, ClientConfig, Server, ServerConfig, Services};
///
/// let mut services = Services::new();
/// serve_demo(&mut services);
/// let server = Server::new(services, ServerConfig::default());
/// let (connector, mut listener) = mem::listener(mem::MemConfig::default());
/// let s = server.clone();
/// tokio::spawn(async move { while let Some(t) = listener.accept().await { s.serve(t); } });
///
/// let mut callbacks = Services::new();
/// let served = serve_callbacks(&mut callbacks);
/// let mut config = ClientConfig::default();
/// config.services = Arc::new(callbacks);     // takes reverse calls on every connection
/// let demo = DemoClient::new(Client::new(connector, config));
/// assert_eq!(demo.callbacks(7, 4, 3000).await?, 4); // four 3000-byte CB_ECHOs, Long messages
/// assert_eq!(served.get(), 4);
/// # Ok(()) }
/// ```
pub fn serve_callbacks(services: &mut Services) -> CallbackCount {
    let count = CallbackCount::default();
    let (c0, c1) = (count.clone(), count.clone());
    services
        .program(CB_PROGRAM, CB_VERSION)
        .proc(cb_procs::NULL, move |_, ()| {
            c0.bump();
            async { Ok::<_, ProcError>(()) }
        })
        .proc(cb_procs::ECHO, move |_, a: CbEchoData| {
            c1.bump();
            async move { Ok::<_, ProcError>(a) }
        });
    count
}

/// One reverse-direction call of CALLBACKS: CB_NULL for `size` 0, else a
/// CB_ECHO of [`pattern`]`(seed, size)` whose answer must be identical.
async fn one_callback(back: Client, seed: u64, size: u32) -> bool {
    if size == 0 {
        return back
            .call::<_, ()>(CB_PROGRAM, CB_VERSION, cb_procs::NULL, &(), &ulb::cb_null())
            .await
            .map_err(|e| tracing::debug!(error = %e, "CB_NULL failed"))
            .is_ok();
    }
    let data = pattern(seed, size as usize);
    match back
        .call::<_, CbEchoData>(
            CB_PROGRAM,
            CB_VERSION,
            cb_procs::ECHO,
            &CbEchoData(data.clone()),
            &ulb::cb_echo(size),
        )
        .await
    {
        Ok(r) => r.0 == data,
        Err(e) => {
            tracing::debug!(error = %e, "CB_ECHO failed");
            false
        }
    }
}

/// CALLBACKS: declares the client ready on this connection under its id,
/// then makes the reverse-direction calls concurrently on it.
async fn callbacks(info: CallInfo, a: CallbackArgs) -> Result<CallbackRes, ProcError> {
    if let Err(e) = info.connection.peer_ready_for_callbacks(a.client_id) {
        tracing::debug!(error = %e, "cannot make reverse-direction calls");
        return Ok(CallbackRes::Err(DemoStat::NOCALLBACK));
    }
    let back = info.connection.client(ClientConfig::default());
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..a.count {
        let seed = a.client_id.wrapping_add(u64::from(i));
        calls.spawn(one_callback(back.clone(), seed, a.size));
    }
    let mut succeeded = 0u32;
    while let Some(r) = calls.join_next().await {
        if matches!(r, Ok(true)) {
            succeeded += 1;
        }
    }
    Ok(CallbackRes::Ok { succeeded })
}

/// Why a demo call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DemoError {
    /// The RPC failed.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// READ or CALLBACKS answered with a status other than OK.
    #[error("the server answered demo_stat {} (1 = READ count above the 16 MiB limit, 2 = the server cannot make reverse-direction calls on this connection)", .0 .0)]
    Status(DemoStat),
    /// An argument is too large to send.
    #[error("{what} of {len} bytes exceeds the demo program's limit of {max} bytes")]
    TooLarge {
        /// Which argument.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The limit.
        max: u32,
    },
    /// The data that came back is wrong.
    #[error("{what}: data differs at byte {offset} (transport corrupted or misplaced data)")]
    Corrupt {
        /// Which check failed.
        what: &'static str,
        /// First differing byte (or the length, for a length mismatch).
        offset: usize,
    },
}

/// Client stubs for the demo program.
#[derive(Debug, Clone)]
pub struct DemoClient {
    client: Client,
}

impl DemoClient {
    /// Wraps an RPC client.
    pub fn new(client: Client) -> Self {
        Self { client }
    }

    /// The RPC client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// NULL.
    pub async fn null(&self) -> Result<(), DemoError> {
        Ok(self
            .client
            .call(PROGRAM, VERSION, procs::NULL, &(), &ulb::null())
            .await?)
    }

    /// ECHO: returns what the server sent back.
    pub async fn echo(&self, data: Bytes) -> Result<Bytes, DemoError> {
        if data.len() > MAX_ECHO as usize {
            return Err(DemoError::TooLarge {
                what: "ECHO data",
                len: data.len(),
                max: MAX_ECHO,
            });
        }
        let r: EchoData = self
            .client
            .call(PROGRAM, VERSION, procs::ECHO, &EchoData(data), &ulb::echo())
            .await?;
        Ok(r.0)
    }

    /// READ: the raw results.
    pub async fn read(&self, seed: u64, count: u32) -> Result<ReadRes, DemoError> {
        let hints = ulb::read(count);
        Ok(self
            .client
            .call(
                PROGRAM,
                VERSION,
                procs::READ,
                &ReadArgs { seed, count },
                &hints,
            )
            .await?)
    }

    /// READ, checking length, checksum and every byte against the pattern.
    pub async fn read_verified(&self, seed: u64, count: u32) -> Result<Bytes, DemoError> {
        match self.read(seed, count).await? {
            ReadRes::Err(s) => Err(DemoError::Status(s)),
            ReadRes::Ok { crc32c, data } => {
                if data.len() != count as usize {
                    return Err(DemoError::Corrupt {
                        what: "READ length",
                        offset: data.len(),
                    });
                }
                if let Some(offset) = pattern_mismatch(seed, &data) {
                    return Err(DemoError::Corrupt {
                        what: "READ pattern",
                        offset,
                    });
                }
                if checksum(&data) != crc32c {
                    return Err(DemoError::Corrupt {
                        what: "READ crc32c",
                        offset: 0,
                    });
                }
                Ok(data)
            }
        }
    }

    /// WRITE: the server's count and checksum.
    pub async fn write(&self, data: Bytes) -> Result<WriteRes, DemoError> {
        if data.len() > MAX_DATA as usize {
            return Err(DemoError::TooLarge {
                what: "WRITE data",
                len: data.len(),
                max: MAX_DATA,
            });
        }
        Ok(self
            .client
            .call(
                PROGRAM,
                VERSION,
                procs::WRITE,
                &WriteArgs { data },
                &ulb::write(),
            )
            .await?)
    }

    /// CALLBACKS: declares this client (named `client_id`) ready for
    /// reverse-direction calls on its current connection and asks the
    /// server for `count` of them (CB_ECHO of `size` bytes, CB_NULL if
    /// `size` is 0); returns how many were answered correctly. The client
    /// must serve the callback program ([`serve_callbacks`] in its
    /// `ClientConfig::services`), or none succeeds.
    pub async fn callbacks(&self, client_id: u64, count: u32, size: u32) -> Result<u32, DemoError> {
        if count > MAX_CALLBACKS {
            return Err(DemoError::TooLarge {
                what: "CALLBACKS count",
                len: count as usize,
                max: MAX_CALLBACKS,
            });
        }
        if size > CB_MAX_ECHO {
            return Err(DemoError::TooLarge {
                what: "CALLBACKS size",
                len: size as usize,
                max: CB_MAX_ECHO,
            });
        }
        let args = CallbackArgs {
            client_id,
            count,
            size,
        };
        let r: CallbackRes = self
            .client
            .call(PROGRAM, VERSION, procs::CALLBACKS, &args, &ulb::callbacks())
            .await?;
        match r {
            CallbackRes::Ok { succeeded } => Ok(succeeded),
            CallbackRes::Err(s) => Err(DemoError::Status(s)),
        }
    }

    /// WRITE, checking that the server saw exactly our bytes.
    pub async fn write_verified(&self, data: Bytes) -> Result<(), DemoError> {
        let want = checksum(&data);
        let len = data.len();
        let r = self.write(data).await?;
        if r.count as usize != len {
            return Err(DemoError::Corrupt {
                what: "WRITE length",
                offset: r.count as usize,
            });
        }
        if r.crc32c != want {
            return Err(DemoError::Corrupt {
                what: "WRITE crc32c",
                offset: 0,
            });
        }
        Ok(())
    }
}
