//! The one error type of XDR decoding.

/// Why an XDR item could not be decoded.
///
/// Every variant is caused by the input bytes, never by API misuse, so a
/// caller can map any of them to its protocol's answer (RDMA_ERROR
/// ERR_BADHEADER, GARBAGE_ARGS, ...).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum XdrError {
    /// The input ended inside an item.
    #[error("XDR input ends early: {needed} bytes needed at offset {offset}, {remaining} left")]
    UnexpectedEnd {
        /// Offset of the item in the input.
        offset: usize,
        /// Bytes the item needs.
        needed: usize,
        /// Bytes that were left.
        remaining: usize,
    },
    /// A length or count read from the input exceeds the limit the caller set.
    #[error("XDR length {len} at offset {offset} exceeds the limit of {max}")]
    TooLong {
        /// Offset of the length word.
        offset: usize,
        /// The length or count that was read.
        len: u32,
        /// The limit.
        max: u32,
    },
    /// An XDR `bool` (or optional-data discriminator) other than 0 or 1.
    #[error("XDR boolean at offset {offset} is {value}, not 0 or 1")]
    BadBool {
        /// Offset of the word.
        offset: usize,
        /// The value that was read.
        value: u32,
    },
    /// A discriminant or enum value this decoder does not know.
    #[error("unknown {what} {value} at offset {offset}")]
    BadDiscriminant {
        /// What was being decoded.
        what: &'static str,
        /// Offset of the word.
        offset: usize,
        /// The value that was read.
        value: u32,
    },
    /// Bytes were left over after the last item of a message.
    #[error("{count} unexpected trailing bytes at offset {offset}")]
    TrailingBytes {
        /// Offset of the first unconsumed byte.
        offset: usize,
        /// Number of unconsumed bytes.
        count: usize,
    },
    /// An XDR string was not valid UTF-8.
    #[error("XDR string at offset {offset} is not valid UTF-8")]
    BadUtf8 {
        /// Offset of the string's length word.
        offset: usize,
    },
    /// A plain (inline) read would cross the place where a directly placed
    /// data item belongs: the peer put a chunk where the Upper Layer does not
    /// allow one (RFC 8166 §4.4.2), or at a wrong position.
    #[error("a directly placed data item sits at stream offset {position}, where the Upper Layer expects inline data")]
    DdpMisplaced {
        /// Payload-stream position of the item.
        position: usize,
    },
    /// The length word of a DDP-eligible item disagrees with the bytes
    /// that arrived in its chunk (RFC 8166 §4.4.4.1).
    #[error("chunk carries {chunk} bytes but the XDR length word at offset {offset} says {xdr}")]
    DdpLengthMismatch {
        /// Offset of the length word.
        offset: usize,
        /// Length from the XDR stream.
        xdr: u32,
        /// Bytes in the chunk.
        chunk: usize,
    },
    /// Recursive data nested deeper than the decoder allows (generated
    /// decoders of recursive types, `rpcrdma-xdrgen`).
    #[error("{what} at offset {offset} nests more than {max} levels deep")]
    TooDeep {
        /// The type being decoded.
        what: &'static str,
        /// Offset where the limit was hit.
        offset: usize,
        /// The nesting limit.
        max: u32,
    },
    /// Directly placed data items were left over after decoding finished.
    #[error("{count} directly placed data items were never consumed by the Upper Layer")]
    DdpUnconsumed {
        /// Number of items left.
        count: usize,
    },
}

/// Why a value cannot be encoded as its XDR declaration says: the checks
/// generated code runs before encoding (`xdr_check`), since encoding
/// itself cannot fail.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// A variable-length item is longer than its declared maximum.
    #[error("{item} has {len} elements (or bytes), more than its XDR maximum of {max}")]
    TooLong {
        /// The declaration (`type.member`).
        item: &'static str,
        /// Its length.
        len: usize,
        /// The declared maximum.
        max: u32,
    },
    /// A union value uses its default arm with a discriminant that has a
    /// case of its own (it would not decode back to the same value).
    #[error("{item}: the default arm cannot carry discriminant {value}, which has its own case")]
    DefaultArmTaken {
        /// The union.
        item: &'static str,
        /// The discriminant.
        value: i64,
    },
}
