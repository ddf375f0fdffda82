//! Authentication flavors: `AUTH_NONE` and `AUTH_SYS` (RFC 5531 §14,
//! Appendix A); every other flavor is carried through as an opaque body.

use bytes::{Bytes, BytesMut};
use rpcrdma_xdr::{Decoder, Encoder, XdrError};

use crate::error::AuthSysError;
use crate::msg::{AuthFlavor, OpaqueAuth, MAX_AUTH_BYTES};

/// Longest `machinename` in an `AUTH_SYS` credential (`string machinename<255>`).
pub const MAX_MACHINE_NAME: usize = 255;

/// Most supplementary groups in an `AUTH_SYS` credential (`unsigned int gids<16>`).
pub const MAX_GIDS: usize = 16;

/// The body of an `AUTH_SYS` credential (`authsys_parms`).
///
/// ```
/// use rpcrdma_oncrpc::auth::AuthSysParams;
///
/// let p = AuthSysParams::new(7, "host", 1000, 1000, vec![4, 24])?;
/// let cred = p.to_opaque_auth();
/// assert_eq!(AuthSysParams::from_opaque_auth(&cred)?, p);
/// # Ok::<(), rpcrdma_oncrpc::AuthSysError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthSysParams {
    stamp: u32,
    machine_name: String,
    uid: u32,
    gid: u32,
    gids: Vec<u32>,
}

impl AuthSysParams {
    /// Builds a credential, checking the RFC 5531 limits: a machine name of
    /// at most [`MAX_MACHINE_NAME`] bytes and at most [`MAX_GIDS`] groups.
    /// (With those limits the body always fits the 400-byte `opaque_auth`.)
    pub fn new(
        stamp: u32,
        machine_name: impl Into<String>,
        uid: u32,
        gid: u32,
        gids: Vec<u32>,
    ) -> Result<Self, AuthSysError> {
        let machine_name = machine_name.into();
        if machine_name.len() > MAX_MACHINE_NAME {
            return Err(AuthSysError::MachineNameTooLong {
                len: machine_name.len(),
            });
        }
        if gids.len() > MAX_GIDS {
            return Err(AuthSysError::TooManyGids { count: gids.len() });
        }
        Ok(Self {
            stamp,
            machine_name,
            uid,
            gid,
            gids,
        })
    }

    /// Arbitrary id chosen by the caller's machine.
    pub fn stamp(&self) -> u32 {
        self.stamp
    }
    /// The caller's machine name.
    pub fn machine_name(&self) -> &str {
        &self.machine_name
    }
    /// Effective user id.
    pub fn uid(&self) -> u32 {
        self.uid
    }
    /// Effective group id.
    pub fn gid(&self) -> u32 {
        self.gid
    }
    /// Supplementary group ids.
    pub fn gids(&self) -> &[u32] {
        &self.gids
    }

    fn encoded_len(&self) -> usize {
        4 + 4 + rpcrdma_xdr::round_up(self.machine_name.len()) + 8 + 4 + 4 * self.gids.len()
    }

    /// The credential as an `opaque_auth` of flavor `AUTH_SYS`.
    pub fn to_opaque_auth(&self) -> OpaqueAuth {
        let mut buf = BytesMut::with_capacity(self.encoded_len());
        let mut enc = Encoder::new(&mut buf);
        enc.put_u32(self.stamp);
        enc.put_string(&self.machine_name);
        enc.put_u32(self.uid);
        enc.put_u32(self.gid);
        enc.put_array(&self.gids);
        debug_assert!(buf.len() <= MAX_AUTH_BYTES);
        OpaqueAuth {
            flavor: AuthFlavor::AUTH_SYS,
            body: buf.freeze(),
        }
    }

    /// Decodes the body of an `AUTH_SYS` credential, enforcing every limit
    /// and rejecting trailing bytes.
    pub fn from_opaque_auth(auth: &OpaqueAuth) -> Result<Self, AuthSysError> {
        if auth.flavor != AuthFlavor::AUTH_SYS {
            return Err(AuthSysError::WrongFlavor {
                flavor: auth.flavor,
            });
        }
        Self::decode_body(&auth.body).map_err(AuthSysError::Malformed)
    }

    fn decode_body(body: &Bytes) -> Result<Self, XdrError> {
        let mut dec = Decoder::from_bytes(body);
        let stamp = dec.get_u32()?;
        let machine_name = dec.get_string(MAX_MACHINE_NAME as u32)?.to_owned();
        let uid = dec.get_u32()?;
        let gid = dec.get_u32()?;
        let gids = dec.get_array::<u32>(MAX_GIDS as u32)?;
        dec.expect_end()?;
        Ok(Self {
            stamp,
            machine_name,
            uid,
            gid,
            gids,
        })
    }
}

/// A call's credential, interpreted where this crate knows the flavor.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Credential {
    /// `AUTH_NONE`.
    None,
    /// `AUTH_SYS` with its parameters.
    Sys(AuthSysParams),
    /// Any other flavor (RPCSEC_GSS, ...), passed through untouched.
    Other(OpaqueAuth),
}

impl Credential {
    /// Interprets a received credential. `AUTH_NONE` must have an empty
    /// body and `AUTH_SYS` must decode within its limits; otherwise the
    /// server answers `AUTH_ERROR`/`AUTH_BADCRED`.
    pub fn from_opaque_auth(auth: &OpaqueAuth) -> Result<Self, AuthSysError> {
        match auth.flavor {
            AuthFlavor::AUTH_NONE if auth.body.is_empty() => Ok(Self::None),
            AuthFlavor::AUTH_NONE => Err(AuthSysError::NoneWithBody {
                len: auth.body.len(),
            }),
            AuthFlavor::AUTH_SYS => AuthSysParams::from_opaque_auth(auth).map(Self::Sys),
            _ => Ok(Self::Other(auth.clone())),
        }
    }

    /// The credential as sent on the wire.
    pub fn to_opaque_auth(&self) -> OpaqueAuth {
        match self {
            Self::None => OpaqueAuth::none(),
            Self::Sys(p) => p.to_opaque_auth(),
            Self::Other(a) => a.clone(),
        }
    }

    /// The flavor.
    pub fn flavor(&self) -> AuthFlavor {
        match self {
            Self::None => AuthFlavor::AUTH_NONE,
            Self::Sys(_) => AuthFlavor::AUTH_SYS,
            Self::Other(a) => a.flavor,
        }
    }
}
