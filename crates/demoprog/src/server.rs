//! The demo program's server side: the generated `demo_v1::Server` trait,
//! implemented.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rpcrdma_oncrpc::{CallInfo, ProcError, Services};
use rpcrdma_sync::lock;

use crate::callback::callbacks;
use crate::pattern::{checksum, pattern};
use crate::xdr::{
    demo_v1, CallbackArgs, CallbackRes, DemoStat, EchoData, ReadArgs, ReadRes, ReadResok,
    WriteArgs, WriteRes,
};
use crate::{CB_MAX_ECHO, MAX_CALLBACKS, MAX_DATA, MAX_ECHO};

/// WRITE data at least this long is checksummed on a blocking thread when
/// the process may use more than one CPU.
const OFFLOAD_CHECKSUM: usize = 256 * 1024;

/// Whether a large checksum goes to a blocking thread: only when another
/// CPU can run it meanwhile. On one CPU (`taskset -c 0`, a one-CPU
/// container) the hand-off would only add two thread switches and the
/// same work, so the checksum runs in place.
fn offload_checksums() -> bool {
    static MANY: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *MANY.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() > 1))
}

/// The last pattern READ generated: (seed, count, data, crc32c).
type Cached = Option<(u64, u32, Bytes, u32)>;

/// The demo program's procedures.
#[derive(Debug, Default)]
struct DemoServer {
    /// READ keeps the last pattern it generated, so repeated READs of the
    /// same seed and size (benchmarks) do not regenerate it.
    cache: Mutex<Cached>,
}

impl DemoServer {
    fn cached(&self, seed: u64, count: u32) -> Option<(Bytes, u32)> {
        let c = lock(&self.cache);
        match &*c {
            Some((s, n, d, crc)) if *s == seed && *n == count => Some((d.clone(), *crc)),
            _ => None,
        }
    }
}

impl demo_v1::Server for DemoServer {
    async fn echo(&self, _info: CallInfo, args: EchoData) -> Result<EchoData, ProcError> {
        Ok(args)
    }

    async fn read(&self, _info: CallInfo, a: ReadArgs) -> Result<ReadRes, ProcError> {
        if a.count > MAX_DATA {
            return Ok(ReadRes::Default(DemoStat::DemoToobig));
        }
        let (data, crc32c) = match self.cached(a.seed, a.count) {
            Some(hit) => hit,
            None => {
                let d = pattern(a.seed, a.count as usize);
                let crc = checksum(&d);
                *lock(&self.cache) = Some((a.seed, a.count, d.clone(), crc));
                (d, crc)
            }
        };
        Ok(ReadRes::DemoOk(ReadResok { crc32c, data }))
    }

    async fn write(&self, _info: CallInfo, a: WriteArgs) -> Result<WriteRes, ProcError> {
        let count = a.data.len() as u32;
        // A large checksum runs on a blocking thread, off the connection's
        // reader (which meanwhile takes in the next calls' data), when
        // another CPU can take it.
        let crc32c = if a.data.len() >= OFFLOAD_CHECKSUM && offload_checksums() {
            let data = a.data;
            tokio::task::spawn_blocking(move || checksum(&data))
                .await
                .map_err(|_| ProcError::SystemErr)?
        } else {
            checksum(&a.data)
        };
        Ok(WriteRes { count, crc32c })
    }

    async fn callbacks(&self, info: CallInfo, a: CallbackArgs) -> Result<CallbackRes, ProcError> {
        // The limits of docs/demo-program.md: arguments beyond them are
        // unusable, as if they had not decoded.
        if a.count > MAX_CALLBACKS || a.size > CB_MAX_ECHO {
            return Err(ProcError::GarbageArgs);
        }
        callbacks(info, a).await
    }
}

/// Registers the demo program's server side in `services`.
///
/// READ keeps the last pattern it generated, so repeated READs of the
/// same seed and size (benchmarks) do not regenerate it.
///
/// Its replies' bounds are declared ([`rpcrdma_oncrpc::Version::reply_bound`]):
/// READ's is its count (at most `DEMO_MAX_DATA`) and 12 octets, ECHO's
/// `DEMO_MAX_ECHO` and 4, so a TCP connection reserves what a READ reply
/// takes before the READ runs.
pub fn serve_demo(services: &mut Services) {
    demo_v1::register(services, Arc::new(DemoServer::default()));
    services
        .program(demo_v1::PROGRAM, demo_v1::VERSION)
        .reply_bound(reply_bound);
}

/// The largest results of a demo procedure, from its arguments.
fn reply_bound(proc_: u32, args: &[u8]) -> Option<u64> {
    let word = |at: usize| -> Option<u64> {
        let b = args.get(at..at + 4)?;
        Some(u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])))
    };
    match proc_ {
        demo_v1::DEMO_ECHO => Some(4 + u64::from(MAX_ECHO)),
        // status, crc32c, length, data (seed: 8 octets, then count).
        demo_v1::DEMO_READ => Some(12 + word(8)?.min(u64::from(MAX_DATA))),
        _ => None,
    }
}
