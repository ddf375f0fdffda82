//! Sans-IO iWARP: MPA (RFC 5044 with RFC 6581), DDP (RFC 5041) and RDMAP
//! (RFC 5040).
//!
//! This crate is the protocol core of the software iWARP provider
//! (`rpcrdma-softiwarp`). It has two layers:
//!
//! * **Wire codecs**, usable on their own (by captures, decoders, tests):
//!   [`mpa`] (connection set-up Request/Reply/Reject frames and the RFC 6581
//!   IRD/ORD word), [`fpdu`] (MPA framing, padding, CRC32c), [`ddp`] (tagged
//!   and untagged DDP headers with the RDMAP control octet) and [`rdmap`]
//!   (opcodes, RDMA Read Request header, Terminate message and the table of
//!   Terminate error codes). Parsers keep every field, including unknown
//!   values, so decoded frames re-encode to the same bytes; they check every
//!   length against what is left and never panic on hostile input.
//! * **The connection state machine**, [`conn::Connection`]: MPA set-up in
//!   both directions, then the verbs semantics over DDP/RDMAP (send and
//!   receive queues, RDMA Write and Read, invalidation, completions), with
//!   placement straight into the memory regions of [`mr`] and the Terminate
//!   each protocol violation earns. The driver (`rpcrdma-softiwarp`) only
//!   moves bytes between it and a socket.
//!
//! # Determinism contract
//!
//! No sockets, no clocks, no threads, no async runtime, no global state:
//! bytes and events go in, bytes and events come out. Time, when needed,
//! is an argument.
//!
//! The `fuzzing` feature adds the module `fuzzing`: the entry points of the
//! cargo-afl harness (`fuzz/fuzz_targets/fpdu.rs`) and of
//! `tests/fuzz_bounded.rs`. It is test support; the provider never needs it.
#![forbid(unsafe_code)]

pub mod conn;
pub mod ddp;
pub mod fpdu;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod mpa;
pub mod mr;
pub mod rdmap;
