//! Functions the fuzz harnesses (`fuzz/fuzz_targets/nfs3_args.rs`) and the
//! bounded runs in `cargo test` call: they panic only when an invariant
//! breaks.

use bytes::Bytes;
use rpcrdma_oncrpc::{Marshal, Unmarshal};
use rpcrdma_xdr::{Decoder, PayloadEncoder};

use crate::proto::{mount3 as m, nfs3 as p};

fn roundtrip<T: Unmarshal + Marshal + PartialEq + std::fmt::Debug>(data: &Bytes) {
    let mut dec = Decoder::from_bytes(data);
    let Ok(v) = T::unmarshal(&mut dec) else {
        return;
    };
    if dec.expect_end().is_err() {
        return;
    }
    let mut pe = PayloadEncoder::new();
    v.marshal(&mut pe.encoder());
    let enc = pe.finish().flatten();
    let mut dec = Decoder::from_bytes(&enc);
    let back = T::unmarshal(&mut dec).expect("a re-encoded value decodes");
    assert_eq!(back, v, "decode(encode(decode(x))) == decode(x)");
    assert_eq!(enc.len(), data.len(), "the encoding has the length decoded");
}

/// `data[0]` picks the procedure (NFSv3 0..=21, then MOUNT's MNT path);
/// the rest is decoded as its arguments, the server's way. Whatever
/// decodes must encode back to the same value and the same length.
pub fn args_roundtrip(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let b = Bytes::copy_from_slice(rest);
    match sel % 24 {
        1 => roundtrip::<p::GETATTR3args>(&b),
        2 => roundtrip::<p::SETATTR3args>(&b),
        3 => roundtrip::<p::LOOKUP3args>(&b),
        4 => roundtrip::<p::ACCESS3args>(&b),
        5 => roundtrip::<p::READLINK3args>(&b),
        6 => roundtrip::<p::READ3args>(&b),
        7 => roundtrip::<p::WRITE3args>(&b),
        8 => roundtrip::<p::CREATE3args>(&b),
        9 => roundtrip::<p::MKDIR3args>(&b),
        10 => roundtrip::<p::SYMLINK3args>(&b),
        11 => roundtrip::<p::MKNOD3args>(&b),
        12 => roundtrip::<p::REMOVE3args>(&b),
        13 => roundtrip::<p::RMDIR3args>(&b),
        14 => roundtrip::<p::RENAME3args>(&b),
        15 => roundtrip::<p::LINK3args>(&b),
        16 => roundtrip::<p::READDIR3args>(&b),
        17 => roundtrip::<p::READDIRPLUS3args>(&b),
        18 => roundtrip::<p::FSSTAT3args>(&b),
        19 => roundtrip::<p::FSINFO3args>(&b),
        20 => roundtrip::<p::PATHCONF3args>(&b),
        21 => roundtrip::<p::COMMIT3args>(&b),
        22 => roundtrip::<m::Mountres3>(&b),
        23 => roundtrip::<p::READDIRPLUS3res>(&b),
        _ => roundtrip::<p::READ3res>(&b),
    }
}
