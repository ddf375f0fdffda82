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
        1 => roundtrip::<p::Getattr3args>(&b),
        2 => roundtrip::<p::Setattr3args>(&b),
        3 => roundtrip::<p::Lookup3args>(&b),
        4 => roundtrip::<p::Access3args>(&b),
        5 => roundtrip::<p::Readlink3args>(&b),
        6 => roundtrip::<p::Read3args>(&b),
        7 => roundtrip::<p::Write3args>(&b),
        8 => roundtrip::<p::Create3args>(&b),
        9 => roundtrip::<p::Mkdir3args>(&b),
        10 => roundtrip::<p::Symlink3args>(&b),
        11 => roundtrip::<p::Mknod3args>(&b),
        12 => roundtrip::<p::Remove3args>(&b),
        13 => roundtrip::<p::Rmdir3args>(&b),
        14 => roundtrip::<p::Rename3args>(&b),
        15 => roundtrip::<p::Link3args>(&b),
        16 => roundtrip::<p::Readdir3args>(&b),
        17 => roundtrip::<p::Readdirplus3args>(&b),
        18 => roundtrip::<p::Fsstat3args>(&b),
        19 => roundtrip::<p::Fsinfo3args>(&b),
        20 => roundtrip::<p::Pathconf3args>(&b),
        21 => roundtrip::<p::Commit3args>(&b),
        22 => roundtrip::<m::Mountres3>(&b),
        23 => roundtrip::<p::Readdirplus3res>(&b),
        _ => roundtrip::<p::Read3res>(&b),
    }
}
