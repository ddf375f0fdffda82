//! The verbs interface's own logic: access rights, work-request helpers,
//! region address arithmetic, buffer conversions.

use bytes::{Bytes, BytesMut};
use rpcrdma_verbs::{
    Access, DeregisterError, LocalSge, MemoryRegion, MrBuffer, RemoteAddr, SendOp, SendWr, Sge,
    WcOpcode, WcStatus,
};

struct FakeMr {
    key: u32,
    addr: u64,
    len: usize,
}

impl MemoryRegion for FakeMr {
    fn lkey(&self) -> u32 {
        self.key
    }
    fn rkey(&self) -> u32 {
        self.key
    }
    fn addr(&self) -> u64 {
        self.addr
    }
    fn len(&self) -> usize {
        self.len
    }
    fn access(&self) -> Access {
        Access::REMOTE_READ
    }
    fn deregister(self) -> Result<MrBuffer, DeregisterError> {
        Err(DeregisterError::NotRegistered { key: self.key })
    }
}

#[test]
fn access_rights() {
    let a = Access::LOCAL_WRITE | Access::REMOTE_READ;
    assert!(a.contains(Access::LOCAL_WRITE) && a.contains(Access::REMOTE_READ));
    assert!(!a.contains(Access::REMOTE_WRITE));
    assert!(
        a.contains(Access::LOCAL_READ),
        "local read is always granted"
    );
    assert!(a.is_writable() && !Access::REMOTE_READ.is_writable());
    let mut b = Access::default();
    b |= Access::REMOTE_WRITE;
    assert_eq!(b.bits(), 2);
    assert_eq!(format!("{b:?}"), "Access(LOCAL_READ | REMOTE_WRITE)");
}

#[test]
fn region_addresses() {
    let mr = FakeMr {
        key: 7,
        addr: 0x1000,
        len: 100,
    };
    assert_eq!(
        mr.sge(10, 20),
        LocalSge {
            lkey: 7,
            addr: 0x100a,
            len: 20
        }
    );
    assert_eq!(
        mr.remote(99),
        RemoteAddr {
            rkey: 7,
            addr: 0x1063
        }
    );
    assert!(!mr.is_empty());
    assert_eq!(
        mr.deregister(),
        Err(DeregisterError::NotRegistered { key: 7 })
    );
}

#[test]
#[should_panic(expected = "outside a region")]
fn sge_outside_the_region_is_api_misuse() {
    let mr = FakeMr {
        key: 7,
        addr: 0,
        len: 10,
    };
    let _ = mr.sge(5, 6);
}

#[test]
fn work_requests() {
    let s = SendWr::send(
        1,
        vec![
            Sge::Bytes(Bytes::from_static(b"ab")),
            Sge::from(LocalSge {
                lkey: 1,
                addr: 0,
                len: 3,
            }),
        ],
    );
    match &s.op {
        SendOp::Send {
            sges,
            solicited,
            invalidate,
        } => {
            assert_eq!(sges.iter().map(Sge::len).sum::<usize>(), 5);
            assert!(!solicited && invalidate.is_none());
        }
        other => panic!("{other:?}"),
    }
    assert!(s.signaled);
    assert_eq!(s.wc_opcode(), WcOpcode::Send);
    let r = RemoteAddr { rkey: 1, addr: 2 };
    assert_eq!(SendWr::write(2, vec![], r).wc_opcode(), WcOpcode::RdmaWrite);
    assert_eq!(
        SendWr::read(
            3,
            LocalSge {
                lkey: 1,
                addr: 0,
                len: 1
            },
            r
        )
        .wc_opcode(),
        WcOpcode::RdmaRead
    );
    assert_eq!(
        SendWr::local_invalidate(4, 9).wc_opcode(),
        WcOpcode::LocalInvalidate
    );
    assert!(Sge::from(Bytes::new()).is_empty());
    assert!(WcStatus::Success.is_ok() && !WcStatus::WrFlush.is_ok());
}

#[test]
fn buffers_come_back() {
    let owned = MrBuffer::Owned(BytesMut::from(&b"xyz"[..]));
    assert_eq!(owned.len(), 3);
    assert_eq!(
        owned.clone().into_owned().unwrap(),
        BytesMut::from(&b"xyz"[..])
    );
    assert_eq!(owned.freeze(), Bytes::from_static(b"xyz"));
    let shared = MrBuffer::Shared(Bytes::new());
    assert!(shared.is_empty() && shared.clone().into_owned().is_none());
}
