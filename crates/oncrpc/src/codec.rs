//! How procedure arguments and results are encoded: [`Marshal`] and
//! [`Unmarshal`].
//!
//! They differ from [`rpcrdma_xdr::Encode`]/[`rpcrdma_xdr::Decode`] in one
//! way that matters here: arguments and results are written into a
//! [`rpcrdma_xdr::PayloadEncoder`] and read from a decoder built with
//! [`rpcrdma_xdr::Decoder::with_ddp`], so an implementation marks its
//! DDP-eligible items with [`Encoder::put_opaque_ddp`] and reads them back
//! with [`Decoder::get_opaque_ddp`]. Decoded values own their data (`Bytes`
//! share the receive buffer instead of copying).

use rpcrdma_xdr::{Decoder, Encoder, XdrError};

/// A value that can be written as procedure arguments or results.
///
/// ```
/// use bytes::Bytes;
/// use rpcrdma_oncrpc::Marshal;
/// use rpcrdma_xdr::Encoder;
///
/// struct WriteArgs { data: Bytes }
/// impl Marshal for WriteArgs {
///     fn marshal(&self, enc: &mut Encoder<'_>) {
///         enc.put_opaque_ddp(self.data.clone()); // DDP-eligible
///     }
/// }
/// ```
pub trait Marshal {
    /// Appends the XDR encoding.
    fn marshal(&self, enc: &mut Encoder<'_>);
}

/// A value that can be read from procedure arguments or results.
pub trait Unmarshal: Sized {
    /// Decodes one value. Every length is checked against a limit.
    fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError>;
}

impl<T: Marshal + ?Sized> Marshal for &T {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        (**self).marshal(enc);
    }
}

impl Marshal for () {
    fn marshal(&self, _enc: &mut Encoder<'_>) {}
}

impl Unmarshal for () {
    fn unmarshal(_dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        Ok(())
    }
}

macro_rules! prim {
    ($t:ty, $put:ident, $get:ident) => {
        impl Marshal for $t {
            fn marshal(&self, enc: &mut Encoder<'_>) {
                enc.$put(*self);
            }
        }
        impl Unmarshal for $t {
            fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
                dec.$get()
            }
        }
    };
}

prim!(u32, put_u32, get_u32);
prim!(i32, put_i32, get_i32);
prim!(u64, put_u64, get_u64);
prim!(i64, put_i64, get_i64);
prim!(bool, put_bool, get_bool);
