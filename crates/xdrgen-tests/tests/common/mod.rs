//! What the golden-vector tests share: reading the vector files rpcgen's C
//! side wrote, and checking one value against its vector.

use std::collections::BTreeMap;

/// The vectors (`NAME HEX` lines) of the file named by the environment
/// variable `env` (a fresh run of the C side), else of `builtin` (the
/// checked-in file).
pub(crate) fn golden(env: &str, builtin: &str) -> BTreeMap<String, Vec<u8>> {
    let text = match std::env::var(env) {
        Ok(path) => std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")),
        Err(_) => builtin.to_string(),
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (name, hex) = l.split_once(' ').expect("NAME HEX");
            (name.to_string(), hex::decode(hex.trim()).expect("hex"))
        })
        .collect()
}

/// Checks one value: encodes to the golden bytes, decodes back to itself,
/// passes its bounds check; records its name in `$seen`.
macro_rules! vector {
    ($seen:ident, $g:ident, $name:literal, $ty:ty, $value:expr) => {{
        let value: $ty = $value;
        let want = $g
            .get($name)
            .unwrap_or_else(|| panic!("no golden vector {}", $name));
        assert_eq!(
            hex::encode(value.to_xdr()),
            hex::encode(want),
            "{} encodes as rpcgen's C does",
            $name
        );
        let back = <$ty>::from_xdr(&bytes::Bytes::from(want.clone()))
            .unwrap_or_else(|e| panic!("{}: {e}", $name));
        assert_eq!(back, value, "{} decodes from rpcgen's bytes", $name);
        assert_eq!(value.xdr_check(), Ok(()));
        $seen.push($name);
    }};
}
pub(crate) use vector;
