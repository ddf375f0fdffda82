//! [`ClientKey`]: the Upper Layer's name for one client, shared by the
//! backchannel registry, the connection handle and the errors.

use std::fmt;

use bytes::Bytes;

/// The Upper Layer's name for one client, stable across its connections
/// (for NFSv4.1, its client ID or session ID). Opaque bytes; the Upper
/// Layer bounds their size when it decodes them.
///
/// ```
/// use rpcrdma_oncrpc::ClientKey;
/// let k = ClientKey::from(0x1234u64);
/// assert_eq!(k.as_bytes(), &[0, 0, 0, 0, 0, 0, 0x12, 0x34]);
/// assert_eq!(k.to_string(), "0000000000001234");
/// assert_eq!(ClientKey::new(&b"session-1"[..]), ClientKey::from(&b"session-1"[..]));
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientKey(Bytes);

impl ClientKey {
    /// A key from any bytes.
    pub fn new(bytes: impl Into<Bytes>) -> Self {
        Self(bytes.into())
    }

    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl From<u64> for ClientKey {
    /// The eight big-endian bytes of `id`.
    fn from(id: u64) -> Self {
        Self(Bytes::copy_from_slice(&id.to_be_bytes()))
    }
}

impl From<&[u8]> for ClientKey {
    fn from(b: &[u8]) -> Self {
        Self(Bytes::copy_from_slice(b))
    }
}

impl From<Vec<u8>> for ClientKey {
    fn from(b: Vec<u8>) -> Self {
        Self(Bytes::from(b))
    }
}

impl From<Bytes> for ClientKey {
    fn from(b: Bytes) -> Self {
        Self(b)
    }
}

impl fmt::Display for ClientKey {
    /// Lowercase hex.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0.iter() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for ClientKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ClientKey({self})")
    }
}
