//! Opening the provider where there may be no device (the build host):
//! the errors must name the problem and the fix.

#[cfg(feature = "rdma-core")]
#[test]
fn a_missing_device_is_a_clear_error() {
    use rpcrdma_rdmacore::{DeviceConfig, OpenError, RdmaCore};
    let cfg = DeviceConfig {
        name: Some("no-such-device0".into()),
        polling: false,
    };
    match RdmaCore::open(&cfg) {
        Err(e @ OpenError::NoDevice { .. }) => {
            assert!(e.to_string().contains("rdma link add"), "{e}")
        }
        Err(e @ OpenError::NotFound { .. }) => {
            assert!(e.to_string().contains("no-such-device0"), "{e}")
        }
        Err(e) => panic!("unexpected error: {e}"),
        Ok(d) => panic!("opened {d:?}"),
    }
}

#[cfg(not(feature = "rdma-core"))]
#[test]
fn without_the_feature_the_error_says_how_to_build() {
    const { assert!(!rpcrdma_rdmacore::BUILT) };
    let e = rpcrdma_rdmacore::OpenError::NotBuilt.to_string();
    assert!(e.contains("--features rdma-core"), "{e}");
}
