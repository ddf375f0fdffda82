//! The transport's error type, carried inside `TransportError::Backend`.
//!
//! An [`RdmaError`] is usually read on its own: `TransportError::Backend`
//! shows its message and returns no source, and the listener logs it as
//! one line. So each variant tells its cause in its own message (the
//! wrapped error's message and those of the wrapped error's causes, each
//! once) and `source()` returns `None`: the cause is read once wherever the
//! error is printed, alone or as a chain. A caller that wants the cause
//! matches on the variant, which keeps it typed.

use std::error::Error;
use std::fmt;
use std::net::SocketAddr;

use rpcrdma_engine::{ApiError, CallError, ConfigError, EngineError};
use rpcrdma_verbs::{ConnectError, ResourceError};

/// Why an RPC-over-RDMA operation failed.
///
/// Its message names the cause (and the cause's own causes, each once);
/// [`Error::source`] is `None`.
#[derive(Debug)]
#[non_exhaustive]
pub enum RdmaError {
    /// One call failed without an RPC reply (e.g. `RDMA_ERROR`).
    Call(CallError),
    /// The connection failed.
    Connection(EngineError),
    /// The engine refused a request.
    Api(ApiError),
    /// Connection set-up failed.
    Connect {
        /// Where: the peer we connected to, or whose request we accepted.
        addr: SocketAddr,
        /// Why.
        source: ConnectError,
    },
    /// The device could not create a protection domain or completion queue.
    Resource(ResourceError),
    /// The engine configuration is invalid.
    Config(ConfigError),
    /// Binding or accepting on the listening socket failed.
    Listen {
        /// Where.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

impl fmt::Display for RdmaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Call(e) => write!(f, "RPC-over-RDMA: {}", Chain(e)),
            Self::Connection(e) => write!(f, "RPC-over-RDMA connection failed: {}", Chain(e)),
            Self::Api(e) => write!(f, "RPC-over-RDMA: {}", Chain(e)),
            Self::Connect { addr, source } => {
                write!(
                    f,
                    "RDMA connection set-up to {addr} failed: {}",
                    Chain(source)
                )
            }
            Self::Resource(e) => write!(f, "RDMA device: {}", Chain(e)),
            Self::Config(e) => write!(f, "invalid RPC-over-RDMA configuration: {}", Chain(e)),
            Self::Listen { addr, source } => {
                write!(f, "cannot listen on {addr}: {}", Chain(source))
            }
        }
    }
}

/// Its message tells the cause, so no source is returned (see the
/// module's documentation).
impl Error for RdmaError {}

impl From<CallError> for RdmaError {
    fn from(e: CallError) -> Self {
        Self::Call(e)
    }
}

impl From<EngineError> for RdmaError {
    fn from(e: EngineError) -> Self {
        Self::Connection(e)
    }
}

impl From<ApiError> for RdmaError {
    fn from(e: ApiError) -> Self {
        Self::Api(e)
    }
}

impl From<ResourceError> for RdmaError {
    fn from(e: ResourceError) -> Self {
        Self::Resource(e)
    }
}

impl From<ConfigError> for RdmaError {
    fn from(e: ConfigError) -> Self {
        Self::Config(e)
    }
}

/// An error and its causes as one line: the messages joined by ": ",
/// a cause whose message the line already holds (an error that prints
/// its source and also returns it) left out, so each reads once. Also
/// for the crate's logs.
pub(crate) struct Chain<'a>(pub(crate) &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut line = self.0.to_string();
        let mut cause = self.0.source();
        while let Some(e) = cause {
            let m = e.to_string();
            if !m.is_empty() && !line.contains(&m) {
                line.push_str(": ");
                line.push_str(&m);
            }
            cause = e.source();
        }
        f.write_str(&line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcrdma_verbs::{Errno, PostError, RegisterError};
    use std::io;

    /// The messages of `e` and its causes, outermost first.
    fn chain(e: &(dyn Error + 'static)) -> Vec<String> {
        let mut out = vec![e.to_string()];
        let mut cause = e.source();
        while let Some(c) = cause {
            out.push(c.to_string());
            cause = c.source();
        }
        out
    }

    /// The rendered chain (as `anyhow`'s `{:#}` prints it).
    fn rendered(e: &(dyn Error + 'static)) -> String {
        chain(e).join(": ")
    }

    fn addr() -> SocketAddr {
        "192.0.2.1:20049".parse().unwrap()
    }

    fn refused() -> io::Error {
        io::Error::new(io::ErrorKind::ConnectionRefused, "Connection refused")
    }

    /// Each error with a cause whose text must read exactly once.
    fn cases() -> Vec<(RdmaError, &'static str)> {
        let register = RegisterError::Device {
            len: 4096,
            call: "ibv_reg_mr",
            errno: Errno(12),
        };
        let post = PostError::QueueFull {
            queue: "send",
            depth: 128,
        };
        vec![
            (
                RdmaError::Connect {
                    addr: addr(),
                    source: ConnectError::Io(refused()),
                },
                "Connection refused",
            ),
            (
                RdmaError::Connect {
                    addr: addr(),
                    source: ConnectError::Timeout,
                },
                "connection set-up timed out",
            ),
            (
                RdmaError::Listen {
                    addr: addr(),
                    source: io::Error::new(io::ErrorKind::AddrInUse, "Address in use"),
                },
                "Address in use",
            ),
            (
                RdmaError::Call(CallError::Register(register)),
                "ibv_reg_mr: Cannot allocate memory",
            ),
            (
                RdmaError::Call(CallError::ConnectionLost),
                "connection lost before the reply arrived",
            ),
            (
                RdmaError::Connection(EngineError::Post(post)),
                "send queue is full (128 work requests outstanding)",
            ),
            (
                RdmaError::Resource(ResourceError::Device {
                    what: "a completion queue",
                    errno: Errno(19),
                }),
                "No such device",
            ),
            (
                RdmaError::Config(ConfigError::ZeroGrant),
                "credits_grant must be at least 1",
            ),
            (RdmaError::Api(ApiError::BackchannelNotReady), ""),
        ]
    }

    #[test]
    fn each_cause_reads_once_in_the_rendered_chain() {
        for (e, cause) in cases() {
            let msgs = chain(&e);
            // No message repeats a later one: a variant does not both
            // print its source and return it.
            for (i, outer) in msgs.iter().enumerate() {
                for inner in &msgs[i + 1..] {
                    assert!(!outer.contains(inner.as_str()), "{msgs:?}");
                }
            }
            let line = rendered(&e);
            if !cause.is_empty() {
                assert_eq!(line.matches(cause).count(), 1, "{cause:?} once in {line:?}");
            }
            // Alone, the message still names the cause.
            assert!(e.to_string().contains(cause), "{e}");
        }
    }

    #[test]
    fn the_message_says_where() {
        let e = RdmaError::Connect {
            addr: addr(),
            source: ConnectError::Io(refused()),
        };
        assert_eq!(
            e.to_string(),
            "RDMA connection set-up to 192.0.2.1:20049 failed: \
             transport error during connection set-up: Connection refused"
        );
        assert!(e.source().is_none());
        // Inside the ONC RPC layer's transport error (message only).
        let t = rpcrdma_oncrpc::TransportError::Backend(Box::new(e));
        assert_eq!(rendered(&t).matches("Connection refused").count(), 1);
    }

    #[test]
    fn a_chain_leaves_out_a_cause_the_line_holds() {
        #[derive(Debug)]
        struct Both(io::Error);
        impl fmt::Display for Both {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "set-up failed: {}", self.0)
            }
        }
        impl Error for Both {
            fn source(&self) -> Option<&(dyn Error + 'static)> {
                Some(&self.0)
            }
        }
        #[derive(Debug)]
        struct Apart(io::Error);
        impl fmt::Display for Apart {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("set-up failed")
            }
        }
        impl Error for Apart {
            fn source(&self) -> Option<&(dyn Error + 'static)> {
                Some(&self.0)
            }
        }
        let want = "set-up failed: Connection refused";
        assert_eq!(Chain(&Both(refused())).to_string(), want);
        assert_eq!(Chain(&Apart(refused())).to_string(), want);
    }
}
