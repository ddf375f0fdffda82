//! The Upper Layer Binding as code (RFC 8166 §6): per procedure, the
//! DDP-eligible result items with their maximum sizes and the maximum size
//! of the results. All of it is derived from `demo.x`'s pragmas by
//! `rpcrdma-xdrgen` (`xdr::demo_v1::hints_*`, `xdr::demo_cb_v1::hints_*`);
//! these functions only spell the arguments the hints depend on.
//! DDP-eligible *arguments* (WRITE's data) are marked by the generated
//! encoding of [`WriteArgs`](crate::WriteArgs) itself.

use bytes::Bytes;
use rpcrdma_oncrpc::CallHints;

use crate::xdr::{demo_cb_v1, demo_v1, ReadArgs};

/// NULL: no results.
pub fn null() -> CallHints {
    demo_v1::hints_null()
}

/// ECHO: at most 4 + 1024 bytes of results, all inline.
pub fn echo() -> CallHints {
    demo_v1::hints_echo(&Bytes::new())
}

/// Maximum size of READ's results for `count` bytes.
pub fn read_max_results(count: u32) -> u32 {
    read(count).results_limit().unwrap_or(u32::MAX)
}

/// READ of `count` bytes: the data is one DDP-eligible result of at
/// most `count` bytes (a Write chunk over RDMA).
pub fn read(count: u32) -> CallHints {
    demo_v1::hints_read(&ReadArgs { seed: 0, count })
}

/// WRITE: 8 bytes of results.
pub fn write() -> CallHints {
    demo_v1::hints_write(&crate::WriteArgs { data: Bytes::new() })
}

/// CALLBACKS: status and count, 8 bytes of results.
pub fn callbacks() -> CallHints {
    demo_v1::hints_callbacks(&crate::CallbackArgs {
        client_id: 0,
        count: 0,
        size: 0,
    })
}

/// Callback program, CB_NULL: no results.
pub fn cb_null() -> CallHints {
    demo_cb_v1::hints_null()
}

/// Callback program, CB_ECHO of `len` bytes: the results are the same
/// `opaque<>`, 4 + roundup4(`len`) bytes, all inline in the XDR (a
/// Long reply through the Reply chunk when that exceeds the inline
/// threshold).
pub fn cb_echo(len: u32) -> CallHints {
    // The hints depend on the argument's length only: borrow zeroes.
    static ZEROES: [u8; crate::CB_MAX_ECHO as usize] = [0; crate::CB_MAX_ECHO as usize];
    let len = len.min(crate::CB_MAX_ECHO) as usize;
    demo_cb_v1::hints_echo(&Bytes::from_static(&ZEROES[..len]))
}
