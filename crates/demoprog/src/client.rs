//! Client calls of the demo program that verify every byte, over the
//! generated `demo_v1::Client` stubs.

use bytes::Bytes;
use rpcrdma_oncrpc::{Client, RpcError};

use crate::pattern::{checksum, pattern_mismatch};
use crate::xdr::{
    demo_v1, CallbackArgs, CallbackRes, DemoStat, ReadArgs, ReadRes, ReadResok, WriteArgs, WriteRes,
};
use crate::{CB_MAX_ECHO, MAX_CALLBACKS, MAX_DATA, MAX_ECHO};

/// Why a demo call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DemoError {
    /// The RPC failed.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// READ or CALLBACKS answered with a status other than OK.
    #[error("the server answered demo_stat {} (1 = READ count above the 16 MiB limit, 2 = the server cannot make reverse-direction calls on this connection)", .0.value())]
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
    stubs: demo_v1::Client,
}

impl DemoClient {
    /// Wraps an RPC client.
    pub fn new(client: Client) -> Self {
        Self {
            stubs: demo_v1::Client::new(client),
        }
    }

    /// The RPC client.
    pub fn client(&self) -> &Client {
        self.stubs.rpc()
    }

    /// The generated stubs (one `async fn` per procedure, no checks).
    pub fn stubs(&self) -> &demo_v1::Client {
        &self.stubs
    }

    /// NULL.
    pub async fn null(&self) -> Result<(), DemoError> {
        Ok(self.stubs.null().await?)
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
        Ok(self.stubs.echo(data).await?)
    }

    /// READ: the raw results.
    pub async fn read(&self, seed: u64, count: u32) -> Result<ReadRes, DemoError> {
        Ok(self.stubs.read(ReadArgs { seed, count }).await?)
    }

    /// READ, checking length, checksum and every byte against the pattern.
    pub async fn read_verified(&self, seed: u64, count: u32) -> Result<Bytes, DemoError> {
        match self.read(seed, count).await? {
            ReadRes::Default(s) => Err(DemoError::Status(s)),
            ReadRes::DemoOk(ReadResok { crc32c, data }) => {
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
        Ok(self.stubs.write(WriteArgs { data }).await?)
    }

    /// CALLBACKS: declares this client (named `client_id`) ready for
    /// reverse-direction calls on its current connection and asks the
    /// server for `count` of them (CB_ECHO of `size` bytes, CB_NULL if
    /// `size` is 0); returns how many were answered correctly. The client
    /// must serve the callback program ([`serve_callbacks`](crate::serve_callbacks)
    /// in its `ClientConfig::services`), or none succeeds.
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
        match self.stubs.callbacks(args).await? {
            CallbackRes::DemoOk(succeeded) => Ok(succeeded),
            CallbackRes::Default(s) => Err(DemoError::Status(s)),
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
