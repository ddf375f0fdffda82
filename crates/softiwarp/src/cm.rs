//! The connection manager: listen, accept/reject, connect. MPA set-up runs
//! here (one task per incoming connection, so a slow peer delays no one);
//! once connected, the queue pair's I/O task takes over.

use std::io::{self, IoSlice, IoSliceMut};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rpcrdma_iwarp::conn::{
    ApiError, Config, ConnError, Connection, Event, P2pMode, PeerRequest, ProtocolError,
    TransportError, DEFAULT_MAX_ULPDU,
};
use rpcrdma_iwarp::mpa::{MpaError, MPA_MAX_PRIVATE_DATA};
use rpcrdma_iwarp::mr::MrTable;
use rpcrdma_verbs::{
    ConnectError, ConnectRequest, InvalidConnect, Listener, PeerClosed, QpCaps, QpParams,
    SetupFault, SetupMessage, SetupViolation,
};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinHandle;

use crate::mem::PdInner;
use crate::qp::Qp;
use crate::SoftIwarp;

/// Default [`Options::first_fpdu_delay`].
pub const DEFAULT_FIRST_FPDU_DELAY: Duration = Duration::from_millis(50);

/// Connection options of the software iWARP provider.
///
/// The defaults suit Linux siw: MPA revision 2 with the RFC 6581 IRD/ORD
/// word, peer-to-peer mode with a zero-length RDMA Write as RTR, no CRC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// MPA revision to request (1 or 2).
    pub revision: u8,
    /// Ask for CRC32c on every FPDU.
    pub crc: bool,
    /// Peer-to-peer RTR offer when initiating (revision 2).
    pub p2p: P2pMode,
    /// Largest ULPDU per FPDU we send (MULPDU), up to 65535.
    pub max_ulpdu: usize,
    /// Largest MPA private data (IRD/ORD word included) sent or accepted;
    /// 512 by RFC 5044, 256 for Linux siw.
    pub max_private_data: usize,
    /// Time allowed for MPA set-up.
    pub mpa_timeout: Duration,
    /// Listener: connection requests waiting for `accept` (further ones
    /// wait in the TCP backlog).
    pub backlog: usize,
    /// Initiator: after the MPA Reply, `connect` waits this long before it
    /// sends the first FPDU (the peer-to-peer RTR, or the application's
    /// first message) and returns, so that the first FPDU does not reach
    /// the responder before it is ready for it. Linux siw as responder
    /// sends its MPA Reply before it installs its receive handler, and data
    /// arriving in between stays unread until more data comes; a lost RTR
    /// leaves siw's connection half set up (docs/iwarp.md, "Linux siw
    /// interop"). Zero disables.
    pub first_fpdu_delay: Duration,
    /// Initiator: the local address to connect from (the address the
    /// responder sees as its peer, as a source address given to
    /// `rdma_resolve_addr`); `None` (the default): the one the system
    /// chooses.
    pub local_addr: Option<std::net::IpAddr>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            revision: 2,
            crc: false,
            p2p: P2pMode::Write,
            max_ulpdu: DEFAULT_MAX_ULPDU,
            max_private_data: MPA_MAX_PRIVATE_DATA,
            mpa_timeout: Duration::from_secs(10),
            backlog: 64,
            first_fpdu_delay: DEFAULT_FIRST_FPDU_DELAY,
            local_addr: None,
        }
    }
}

impl Options {
    /// The core configuration for these options and `caps`.
    pub fn config(&self, caps: QpCaps) -> Config {
        Config {
            revision: self.revision,
            crc: self.crc,
            p2p: self.p2p,
            caps,
            max_ulpdu: self.max_ulpdu,
            max_private_data: self.max_private_data,
            mpa_timeout: self.mpa_timeout,
        }
    }
}

/// Writes everything the connection may send now.
async fn flush(stream: &TcpStream, conn: &mut Connection) -> io::Result<()> {
    while conn.wants_write() {
        let res = {
            let mut iov = [IoSlice::new(&[]); 16];
            let n = conn.transmit_iovecs(&mut iov);
            stream.try_write_vectored(&iov[..n])
        };
        match res {
            Ok(n) => conn.handle_written(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => stream.writable().await?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Drives MPA set-up until the connection produces an event.
async fn drive_setup(
    stream: &TcpStream,
    conn: &mut Connection,
    pd: Option<&PdInner>,
) -> io::Result<Event> {
    let mut scratch = MrTable::new(0);
    loop {
        if let Some(ev) = conn.poll_event() {
            // Established: what follows the Reply (an RTR) waits for the
            // caller (see Options::first_fpdu_delay); anything else (a
            // Terminate, a Reject) goes out now.
            if !matches!(ev, Event::Established(_)) {
                flush(stream, conn).await?;
            }
            return Ok(ev);
        }
        flush(stream, conn).await?;
        let readable = stream.readable();
        match conn.poll_timeout() {
            Some(d) => match tokio::time::timeout_at(d.into(), readable).await {
                Ok(r) => r?,
                Err(_) => {
                    conn.handle_timeout(Instant::now());
                    continue;
                }
            },
            None => readable.await?,
        }
        let mut guard = pd.map(PdInner::table);
        let table = guard.as_deref_mut().unwrap_or(&mut scratch);
        let bufs = conn.recv_buffers(table);
        let res = match bufs.direct {
            Some(d) => {
                stream.try_read_vectored(&mut [IoSliceMut::new(d), IoSliceMut::new(bufs.staging)])
            }
            None => stream.try_read(bufs.staging),
        };
        match res {
            Ok(0) => conn.handle_eof(),
            Ok(n) => conn.handle_read(n, table),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

fn setup_error(e: ConnError) -> ConnectError {
    match e {
        ConnError::Rejected { private_data } => ConnectError::Rejected { private_data },
        ConnError::MpaTimeout => ConnectError::Timeout,
        ConnError::PeerClosed => ConnectError::PeerClosed(PeerClosed::Closed),
        ConnError::Transport(t) => {
            let kind = match &t {
                TransportError::Io { kind, .. } => *kind,
                TransportError::AcceptedNothing => io::ErrorKind::WriteZero,
                _ => io::ErrorKind::Other,
            };
            ConnectError::PeerClosed(PeerClosed::Transport(io::Error::new(kind, t.to_string())))
        }
        other => ConnectError::Protocol(SetupViolation::new(fault(&other), other.to_string())),
    }
}

/// A `message` the connection refused as invalid, by cause.
fn invalid_request(message: SetupMessage) -> impl Fn(ApiError) -> ConnectError {
    move |e| ConnectError::Invalid(invalid_cause(message, e))
}

fn invalid_cause(message: SetupMessage, e: ApiError) -> InvalidConnect {
    match e {
        ApiError::WrongState { command, state } => InvalidConnect::WrongState { command, state },
        ApiError::PrivateDataTooLong { len, max } => InvalidConnect::PrivateDataTooLong {
            message,
            len,
            max,
            transport: "iWARP (siw)",
        },
        ApiError::Config(c) => InvalidConnect::Options {
            detail: c.to_string(),
        },
        other => InvalidConnect::Options {
            detail: other.to_string(),
        },
    }
}

/// The kind of set-up breach a connection error is.
fn fault(e: &ConnError) -> SetupFault {
    let ConnError::Protocol(p) = e else {
        return SetupFault::Other;
    };
    match p {
        ProtocolError::MpaFrame(MpaError::PrivateDataTooLong { .. })
        | ProtocolError::MpaPrivateDataTooLong { .. } => SetupFault::TooLarge,
        ProtocolError::MpaFrame(_) => SetupFault::Malformed,
        ProtocolError::MpaUnexpectedKey { .. } => SetupFault::Unexpected,
        ProtocolError::MpaRevision(_)
        | ProtocolError::MpaReplyRevision { .. }
        | ProtocolError::MpaMarkers
        | ProtocolError::MpaNoMatchingRtr => SetupFault::Unsupported,
        ProtocolError::MpaEarlyData(_) => SetupFault::EarlyData,
        ProtocolError::BadCrc { .. } => SetupFault::BadChecksum,
        _ => SetupFault::Other,
    }
}

pub(crate) async fn connect(
    addr: SocketAddr,
    params: QpParams<'_, SoftIwarp>,
    private_data: Bytes,
) -> Result<(Qp, Bytes), ConnectError> {
    let cfg = params.options.config(params.caps);
    let mut conn = Connection::initiator(cfg, private_data, Instant::now())
        .map_err(invalid_request(SetupMessage::Connect))?;
    let stream = match params.options.local_addr {
        None => TcpStream::connect(addr).await?,
        Some(local) => {
            let socket = if local.is_ipv4() {
                tokio::net::TcpSocket::new_v4()?
            } else {
                tokio::net::TcpSocket::new_v6()?
            };
            socket.bind(SocketAddr::new(local, 0))?;
            socket.connect(addr).await?
        }
    };
    stream.set_nodelay(true)?;
    let pd = params.pd.inner.clone();
    match drive_setup(&stream, &mut conn, Some(&pd)).await? {
        Event::Established(n) => {
            // Give the responder time to get ready for FPDUs before the
            // first one (RTR included) leaves: Qp::start flushes it.
            if !params.options.first_fpdu_delay.is_zero() {
                tokio::time::sleep(params.options.first_fpdu_delay).await;
            }
            let qp = Qp::start(
                conn,
                stream,
                pd,
                params.send_cq.clone(),
                params.recv_cq.clone(),
            );
            Ok((qp, n.peer_private_data))
        }
        Event::Closed(e) => Err(setup_error(e)),
        Event::ConnectRequest(_) => Err(setup_error(ConnError::Protocol(
            ProtocolError::MpaUnexpectedKey {
                got: "Request",
                expected: "Reply",
            },
        ))),
    }
}

/// A listening endpoint.
#[derive(Debug)]
pub struct SoftListener {
    rx: tokio::sync::Mutex<mpsc::Receiver<Request>>,
    local: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for SoftListener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub(crate) async fn listen(addr: SocketAddr, options: Options) -> io::Result<SoftListener> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let (tx, rx) = mpsc::channel(options.backlog.max(1));
    let task = tokio::spawn(accept_loop(listener, options, tx));
    Ok(SoftListener {
        rx: tokio::sync::Mutex::new(rx),
        local,
        task,
    })
}

async fn accept_loop(listener: TcpListener, options: Options, tx: mpsc::Sender<Request>) {
    // At most this many MPA handshakes in progress at once.
    let handshakes = Arc::new(Semaphore::new(256));
    loop {
        let Ok(permit) = handshakes.clone().acquire_owned().await else {
            return;
        };
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let tx = tx.clone();
        let cfg = options.config(QpCaps::default());
        tokio::spawn(async move {
            let _permit = permit;
            if let Err(e) = stream.set_nodelay(true) {
                tracing::debug!(error = %e, "TCP_NODELAY");
            }
            let Ok(mut conn) = Connection::responder(cfg, Instant::now()) else {
                return;
            };
            match drive_setup(&stream, &mut conn, None).await {
                Ok(Event::ConnectRequest(info)) => {
                    let req = Request {
                        stream,
                        conn,
                        peer,
                        info,
                    };
                    if tx.send(req).await.is_err() {
                        tracing::debug!(%peer, "listener gone; dropping connection request");
                    }
                }
                Ok(Event::Closed(e)) => {
                    // Refused during set-up (markers, revision, private data):
                    // the Reject, if any, is queued; send it and close.
                    tracing::info!(%peer, error = %e, "connection request refused");
                    let _ = flush(&stream, &mut conn).await;
                }
                Ok(Event::Established(_)) => {}
                Err(e) => tracing::debug!(%peer, error = %e, "MPA set-up failed"),
            }
        });
    }
}

impl Listener for SoftListener {
    type Device = SoftIwarp;

    async fn accept(&self) -> Result<Request, ConnectError> {
        let mut rx = self.rx.lock().await;
        rx.recv().await.ok_or_else(|| {
            ConnectError::Io(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "listener task ended",
            ))
        })
    }

    fn local_addr(&self) -> SocketAddr {
        self.local
    }
}

/// An incoming connection request (MPA Request received).
#[derive(Debug)]
pub struct Request {
    stream: TcpStream,
    conn: Connection,
    peer: SocketAddr,
    info: PeerRequest,
}

impl Request {
    /// The full Request: revision, CRC, IRD/ORD word, private data.
    pub fn info(&self) -> &PeerRequest {
        &self.info
    }
}

impl ConnectRequest for Request {
    type Device = SoftIwarp;

    fn private_data(&self) -> &Bytes {
        &self.info.private_data
    }

    fn ird_ord(&self) -> Option<(u16, u16)> {
        self.info.ird_ord.map(|w| (w.ird, w.ord))
    }

    fn peer_addr(&self) -> SocketAddr {
        self.peer
    }

    /// Accepts; queue sizes and IRD/ORD come from `params.caps`, the MPA
    /// options from the listener (`params.options` is not used here).
    async fn accept(
        mut self,
        params: QpParams<'_, SoftIwarp>,
        private_data: Bytes,
    ) -> Result<Qp, ConnectError> {
        self.conn
            .set_caps(params.caps)
            .map_err(invalid_request(SetupMessage::Accept))?;
        self.conn
            .accept(private_data)
            .map_err(invalid_request(SetupMessage::Accept))?;
        // The Reply goes out now; the connection's FPDUs wait for the
        // initiator's first one.
        flush(&self.stream, &mut self.conn).await?;
        Ok(Qp::start(
            self.conn,
            self.stream,
            params.pd.inner.clone(),
            params.send_cq.clone(),
            params.recv_cq.clone(),
        ))
    }

    async fn reject(mut self, private_data: Bytes) -> Result<(), ConnectError> {
        self.conn
            .reject(private_data)
            .map_err(invalid_request(SetupMessage::Reject))?;
        flush(&self.stream, &mut self.conn).await?;
        Ok(())
    }
}
