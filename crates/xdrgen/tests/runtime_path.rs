//! `Options::runtime`: the generated code names one crate that re-exports
//! `oncrpc`, `xdr` and `bytes` (the `rpcrdma` facade) instead of the three
//! crates, so a crate that depends on the facade alone compiles it (the
//! workspace's `examples/bulk` does, through `rpcrdma::codegen`).

use rpcrdma_xdrgen::{generate, Options};

const NFS3: &str = include_str!("../xdr/nfs3.x");

fn with_runtime(path: Option<&str>) -> String {
    let options = Options {
        strings_as_bytes: true,
        runtime: path.map(str::to_string),
        ..Options::default()
    };
    generate(NFS3, "nfs3.x", &options).unwrap()
}

#[test]
fn every_runtime_path_goes_through_the_facade() {
    let plain = with_runtime(None);
    let facade = with_runtime(Some("::rpcrdma"));
    for (krate, count) in [
        (
            "::rpcrdma_oncrpc::",
            plain.matches("::rpcrdma_oncrpc::").count(),
        ),
        ("::rpcrdma_xdr::", plain.matches("::rpcrdma_xdr::").count()),
    ] {
        assert!(count > 10, "{krate} is used by the plain code");
        assert!(!facade.contains(krate), "{krate} left in the facade's code");
    }
    assert!(plain.contains("::bytes::Bytes"));
    // Every `::bytes::` is the facade's re-export now.
    assert_eq!(
        facade.matches("::bytes::").count(),
        facade.matches("::rpcrdma::bytes::").count()
    );
    assert_eq!(
        facade.matches("::rpcrdma::oncrpc::").count(),
        plain.matches("::rpcrdma_oncrpc::").count()
    );
    assert_eq!(
        facade.matches("::rpcrdma::xdr::").count(),
        plain.matches("::rpcrdma_xdr::").count()
    );
    // Nothing else changed: mapping the paths back gives the plain code
    // (but for the header line that names what the code needs).
    let back = facade
        .replace("::rpcrdma::oncrpc::", "::rpcrdma_oncrpc::")
        .replace("::rpcrdma::xdr::", "::rpcrdma_xdr::")
        .replace("::rpcrdma::bytes::", "::bytes::");
    let body = |s: &str| s.lines().skip(3).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&back), body(&plain));
    assert!(facade.lines().nth(2).unwrap().contains("::rpcrdma"));
}

#[test]
fn a_trailing_separator_in_the_path_is_ignored() {
    assert_eq!(
        with_runtime(Some("::rpcrdma::")),
        with_runtime(Some("::rpcrdma"))
    );
}
