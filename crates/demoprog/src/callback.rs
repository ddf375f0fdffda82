//! The reverse direction (RFC 8167): the callback program a demo client
//! serves, and the server's CALLBACKS procedure that calls it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rpcrdma_oncrpc::{CallInfo, ClientConfig, ProcError, Services};

use crate::pattern::pattern;
use crate::xdr::{demo_cb_v1, CallbackArgs, CallbackRes, CbEchoData, DemoStat};

/// Counts the reverse-direction calls a client's callback program served
/// (cheap to clone; clones share).
#[derive(Debug, Clone, Default)]
pub struct CallbackCount(Arc<AtomicU64>);

impl CallbackCount {
    /// Calls served so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    fn bump(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// The callback program's procedures, counting the calls.
#[derive(Debug)]
struct CallbackServer {
    count: CallbackCount,
}

impl demo_cb_v1::Server for CallbackServer {
    async fn null(&self, _info: CallInfo) -> Result<(), ProcError> {
        self.count.bump();
        Ok(())
    }

    async fn echo(&self, _info: CallInfo, args: CbEchoData) -> Result<CbEchoData, ProcError> {
        self.count.bump();
        Ok(args)
    }
}

/// Registers the callback program ([`CB_PROGRAM`](crate::CB_PROGRAM):
/// CB_NULL and CB_ECHO) in `services`, for a demo *client* to serve in the
/// reverse direction (`ClientConfig::services`). Returns a counter of the
/// calls served.
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
    demo_cb_v1::register(
        services,
        Arc::new(CallbackServer {
            count: count.clone(),
        }),
    );
    count
}

/// One reverse-direction call of CALLBACKS: CB_NULL for `size` 0, else a
/// CB_ECHO of [`pattern`]`(seed, size)` whose answer must be identical.
async fn one_callback(back: demo_cb_v1::Client, seed: u64, size: u32) -> bool {
    if size == 0 {
        return back
            .null()
            .await
            .map_err(|e| tracing::debug!(error = %e, "CB_NULL failed"))
            .is_ok();
    }
    let data = pattern(seed, size as usize);
    match back.echo(data.clone()).await {
        Ok(r) => r == data,
        Err(e) => {
            tracing::debug!(error = %e, "CB_ECHO failed");
            false
        }
    }
}

/// CALLBACKS: declares the client ready on this connection under its id,
/// then makes the reverse-direction calls concurrently on it.
pub(crate) async fn callbacks(info: CallInfo, a: CallbackArgs) -> Result<CallbackRes, ProcError> {
    if let Err(e) = info.connection.peer_ready_for_callbacks(a.client_id) {
        tracing::debug!(error = %e, "cannot make reverse-direction calls");
        return Ok(CallbackRes::Default(DemoStat::DemoNocallback));
    }
    let back = demo_cb_v1::Client::new(info.connection.client(ClientConfig::default()));
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
    Ok(CallbackRes::DemoOk(succeeded))
}
