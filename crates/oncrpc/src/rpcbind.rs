//! rpcbind / portmapper: PMAP version 2 (RFC 1833 §3) and RPCBIND
//! versions 3 and 4 (RFC 1833 §2), client side, plus a helper that
//! registers a server's programs.
//!
//! The helper takes the network id and universal address as parameters so
//! the same code registers TCP listeners (`tcp`/`tcp6`) and, later,
//! RPC-over-RDMA listeners (`rdma`/`rdma6`, RFC 8166 §11).

use std::net::{IpAddr, SocketAddr};

use rpcrdma_xdr::{Decoder, Encoder, XdrError};

use crate::client::Client;
use crate::codec::{Marshal, Unmarshal};
use crate::error::RpcError;
use crate::transport::CallHints;

/// The portmapper / rpcbind program number.
pub const PROGRAM: u32 = 100_000;
/// Its well-known port.
pub const PORT: u16 = 111;

/// Portmapper protocol version 2.
pub const PMAP_VERSION: u32 = 2;
/// `IPPROTO_TCP` in a [`Mapping`].
pub const IPPROTO_TCP: u32 = 6;
/// `IPPROTO_UDP` in a [`Mapping`].
pub const IPPROTO_UDP: u32 = 17;

/// Procedure numbers shared by PMAP v2 and RPCBIND v3/v4.
pub mod procs {
    /// `SET`.
    pub const SET: u32 = 1;
    /// `UNSET`.
    pub const UNSET: u32 = 2;
    /// `GETPORT` (v2) / `GETADDR` (v3, v4).
    pub const GETADDR: u32 = 3;
    /// `DUMP`.
    pub const DUMP: u32 = 4;
}

/// Longest network id accepted from rpcbind.
pub const MAX_NETID: u32 = 128;
/// Longest universal address or owner string accepted from rpcbind.
pub const MAX_ADDR: u32 = 256;
/// Most entries accepted in a DUMP reply.
pub const MAX_DUMP_ENTRIES: usize = 16 * 1024;

/// A PMAP v2 `mapping`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// Program.
    pub prog: u32,
    /// Version.
    pub vers: u32,
    /// [`IPPROTO_TCP`] or [`IPPROTO_UDP`].
    pub prot: u32,
    /// Port (a `u32` on the wire).
    pub port: u32,
}

impl Marshal for Mapping {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        enc.put_u32(self.prog);
        enc.put_u32(self.vers);
        enc.put_u32(self.prot);
        enc.put_u32(self.port);
    }
}

impl Unmarshal for Mapping {
    fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        Ok(Self {
            prog: dec.get_u32()?,
            vers: dec.get_u32()?,
            prot: dec.get_u32()?,
            port: dec.get_u32()?,
        })
    }
}

/// An RPCBIND v3/v4 `rpcb` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rpcb {
    /// Program.
    pub prog: u32,
    /// Version.
    pub vers: u32,
    /// Network id (`tcp`, `tcp6`, `udp`, `rdma`, `rdma6`, ...).
    pub netid: String,
    /// Universal address ([`uaddr`]).
    pub addr: String,
    /// Owner (rpcbind fills it in itself).
    pub owner: String,
}

impl Marshal for Rpcb {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        enc.put_u32(self.prog);
        enc.put_u32(self.vers);
        enc.put_string(&self.netid);
        enc.put_string(&self.addr);
        enc.put_string(&self.owner);
    }
}

impl Unmarshal for Rpcb {
    fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        Ok(Self {
            prog: dec.get_u32()?,
            vers: dec.get_u32()?,
            netid: dec.get_string(MAX_NETID)?.to_owned(),
            addr: dec.get_string(MAX_ADDR)?.to_owned(),
            owner: dec.get_string(MAX_ADDR)?.to_owned(),
        })
    }
}

/// An XDR optional-data linked list (`*list`), bounded.
struct List<T>(Vec<T>);

impl<T: Unmarshal> Unmarshal for List<T> {
    fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        let mut v = Vec::new();
        while dec.get_bool()? {
            if v.len() == MAX_DUMP_ENTRIES {
                return Err(XdrError::TooLong {
                    offset: dec.position(),
                    len: u32::MAX,
                    max: MAX_DUMP_ENTRIES as u32,
                });
            }
            v.push(T::unmarshal(dec)?);
        }
        Ok(Self(v))
    }
}

struct Str(String);

impl Unmarshal for Str {
    fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        Ok(Self(dec.get_string(MAX_ADDR)?.to_owned()))
    }
}

/// The universal address of a socket address (RFC 5665 §5.2.3.3):
/// `h1.h2.h3.h4.p1.p2` for IPv4, `x:x::x.p1.p2` for IPv6.
///
/// ```
/// use rpcrdma_oncrpc::rpcbind::{uaddr, parse_uaddr};
/// let a = "127.0.0.1:2049".parse().unwrap();
/// assert_eq!(uaddr(&a), "127.0.0.1.8.1");
/// assert_eq!(parse_uaddr("127.0.0.1.8.1"), Some(a));
/// assert_eq!(uaddr(&"[::1]:20049".parse().unwrap()), "::1.78.81");
/// ```
pub fn uaddr(addr: &SocketAddr) -> String {
    let p = addr.port();
    format!("{}.{}.{}", addr.ip(), p >> 8, p & 0xff)
}

/// Parses a universal address; `None` if it is malformed.
pub fn parse_uaddr(s: &str) -> Option<SocketAddr> {
    let (rest, lo) = s.rsplit_once('.')?;
    let (host, hi) = rest.rsplit_once('.')?;
    let hi: u8 = hi.parse().ok()?;
    let lo: u8 = lo.parse().ok()?;
    let ip: IpAddr = host.parse().ok()?;
    Some(SocketAddr::new(ip, u16::from(hi) << 8 | u16::from(lo)))
}

/// The network id for a transport kind (`"tcp"` or `"rdma"`) at `addr`:
/// `tcp`/`tcp6`, `rdma`/`rdma6`.
pub fn netid(kind: &str, addr: &SocketAddr) -> String {
    if addr.is_ipv6() {
        format!("{kind}6")
    } else {
        kind.to_owned()
    }
}

/// RPCBIND protocol versions 3 and 4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RpcbVersion {
    /// Version 3.
    V3 = 3,
    /// Version 4.
    V4 = 4,
}

/// A client of an rpcbind server.
///
/// ```no_run
/// # async fn f() -> Result<(), rpcrdma_oncrpc::RpcError> {
/// use rpcrdma_oncrpc::rpcbind::{Rpcbind, RpcbVersion};
/// let rpcbind = Rpcbind::connect_local().await?;
/// for entry in rpcbind.dump(RpcbVersion::V4).await? {
///     println!("{} {} {} {}", entry.prog, entry.vers, entry.netid, entry.addr);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Rpcbind {
    client: Client,
}

impl Rpcbind {
    /// Uses an existing client (connected to an rpcbind server).
    pub fn new(client: Client) -> Self {
        Self { client }
    }

    /// Connects over TCP to rpcbind at `addr`.
    pub async fn connect(addr: SocketAddr) -> Result<Self, RpcError> {
        Ok(Self::new(
            crate::tcp::connect(addr, Default::default()).await?,
        ))
    }

    /// Connects over TCP to the local rpcbind (127.0.0.1:111).
    pub async fn connect_local() -> Result<Self, RpcError> {
        Self::connect(SocketAddr::from(([127, 0, 0, 1], PORT))).await
    }

    /// The underlying RPC client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    async fn call<A: Marshal, R: Unmarshal + 'static>(
        &self,
        vers: u32,
        proc_: u32,
        args: &A,
    ) -> Result<R, RpcError> {
        self.client
            .call(PROGRAM, vers, proc_, args, &CallHints::new())
            .await
    }

    /// PMAP v2 `GETPORT`: the port of (prog, vers, prot), 0 if unregistered.
    pub async fn pmap_getport(&self, prog: u32, vers: u32, prot: u32) -> Result<u32, RpcError> {
        let m = Mapping {
            prog,
            vers,
            prot,
            port: 0,
        };
        self.call(PMAP_VERSION, procs::GETADDR, &m).await
    }

    /// PMAP v2 `SET`: whether the mapping was registered.
    pub async fn pmap_set(&self, m: &Mapping) -> Result<bool, RpcError> {
        self.call(PMAP_VERSION, procs::SET, m).await
    }

    /// PMAP v2 `UNSET` (the port is ignored): whether anything was removed.
    pub async fn pmap_unset(&self, m: &Mapping) -> Result<bool, RpcError> {
        self.call(PMAP_VERSION, procs::UNSET, m).await
    }

    /// PMAP v2 `DUMP`: every mapping.
    pub async fn pmap_dump(&self) -> Result<Vec<Mapping>, RpcError> {
        let l: List<Mapping> = self.call(PMAP_VERSION, procs::DUMP, &()).await?;
        Ok(l.0)
    }

    /// RPCBIND `GETADDR`: the universal address of (prog, vers, netid), or
    /// `None` if it is not registered.
    pub async fn getaddr(
        &self,
        version: RpcbVersion,
        prog: u32,
        vers: u32,
        netid: &str,
    ) -> Result<Option<String>, RpcError> {
        let q = Rpcb {
            prog,
            vers,
            netid: netid.to_owned(),
            addr: String::new(),
            owner: String::new(),
        };
        let s: Str = self.call(version as u32, procs::GETADDR, &q).await?;
        Ok(Some(s.0).filter(|a| !a.is_empty()))
    }

    /// RPCBIND `SET`: whether the entry was registered (false if an entry
    /// for the same program, version and netid exists).
    pub async fn set(&self, version: RpcbVersion, entry: &Rpcb) -> Result<bool, RpcError> {
        self.call(version as u32, procs::SET, entry).await
    }

    /// RPCBIND `UNSET` (an empty netid removes every netid): whether
    /// anything was removed.
    pub async fn unset(&self, version: RpcbVersion, entry: &Rpcb) -> Result<bool, RpcError> {
        self.call(version as u32, procs::UNSET, entry).await
    }

    /// RPCBIND `DUMP`: every entry.
    pub async fn dump(&self, version: RpcbVersion) -> Result<Vec<Rpcb>, RpcError> {
        let l: List<Rpcb> = self.call(version as u32, procs::DUMP, &()).await?;
        Ok(l.0)
    }

    /// Registers (prog, vers) at universal address `addr` for `netid`,
    /// replacing any earlier registration for that netid. Uses RPCBIND v4
    /// and falls back to v3 if the server has no v4.
    pub async fn register(
        &self,
        prog: u32,
        vers: u32,
        netid: &str,
        addr: &str,
    ) -> Result<(), RegisterError> {
        let entry = Rpcb {
            prog,
            vers,
            netid: netid.to_owned(),
            addr: addr.to_owned(),
            owner: String::new(),
        };
        let mut version = RpcbVersion::V4;
        let unset = match self.unset(version, &entry).await {
            Err(RpcError::ProgMismatch { .. }) => {
                version = RpcbVersion::V3;
                self.unset(version, &entry).await
            }
            other => other,
        };
        unset.map_err(RegisterError::Rpc)?;
        if self
            .set(version, &entry)
            .await
            .map_err(RegisterError::Rpc)?
        {
            Ok(())
        } else {
            Err(RegisterError::Refused {
                prog,
                vers,
                netid: netid.to_owned(),
            })
        }
    }

    /// Removes the registration of (prog, vers) for `netid`.
    pub async fn unregister(&self, prog: u32, vers: u32, netid: &str) -> Result<bool, RpcError> {
        let entry = Rpcb {
            prog,
            vers,
            netid: netid.to_owned(),
            addr: String::new(),
            owner: String::new(),
        };
        match self.unset(RpcbVersion::V4, &entry).await {
            Err(RpcError::ProgMismatch { .. }) => self.unset(RpcbVersion::V3, &entry).await,
            other => other,
        }
    }

    /// Registers every (program, version) in `programs` for a listener of
    /// kind `kind` (`"tcp"` or `"rdma"`) bound at `listen`; the netid is
    /// derived with [`netid`] and the address with [`uaddr`]. Returns the
    /// netid used.
    pub async fn register_all(
        &self,
        programs: &[(u32, u32)],
        kind: &str,
        listen: &SocketAddr,
    ) -> Result<String, RegisterError> {
        let id = netid(kind, listen);
        let addr = uaddr(listen);
        for &(p, v) in programs {
            self.register(p, v, &id, &addr).await?;
            tracing::info!(prog = p, vers = v, netid = %id, addr = %addr, "registered with rpcbind");
        }
        Ok(id)
    }

    /// Removes what [`Rpcbind::register_all`] registered.
    pub async fn unregister_all(
        &self,
        programs: &[(u32, u32)],
        netid: &str,
    ) -> Result<(), RpcError> {
        for &(p, v) in programs {
            self.unregister(p, v, netid).await?;
        }
        Ok(())
    }
}

/// Why a registration failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// The call to rpcbind failed.
    #[error("rpcbind call failed (is rpcbind running and reachable on port 111?)")]
    Rpc(#[source] RpcError),
    /// rpcbind answered FALSE.
    #[error("rpcbind refused to register program {prog} version {vers} for {netid} (another owner holds it, or registration is only allowed from the local host)")]
    Refused {
        /// Program.
        prog: u32,
        /// Version.
        vers: u32,
        /// Network id.
        netid: String,
    },
}
