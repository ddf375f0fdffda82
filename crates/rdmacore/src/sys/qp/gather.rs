//! Gather lists to device elements, carrying out `crate::gather`'s plan:
//! inline, registered, copied into a bounce buffer or registered for the
//! one request; and the pool of bounce buffers by size class.

use rpcrdma_verbs::{Access, PostError, ProtectionFault, Sge};

use super::{Hold, QpShared, QpState};
use crate::gather::{plan, GatherPlan, Piece, COPY_MAX};
use crate::sys::device::{OwnBuf, TempReg};
use crate::sys::ffi;

/// Bounce buffer size classes: 512 octets to [`COPY_MAX`].
pub(super) const CLASSES: usize = 8;
/// Most free bounce buffers kept per class.
pub(super) const POOL_KEEP: usize = 64;

pub(super) fn class_of(len: usize) -> usize {
    let mut c = 0;
    while c + 1 < CLASSES && (512usize << c) < len {
        c += 1;
    }
    c
}

impl QpShared {
    fn bounce(&self, st: &mut QpState, len: usize) -> Result<OwnBuf, PostError> {
        let c = class_of(len);
        if len <= COPY_MAX {
            if let Some(b) = st.pool[c].pop() {
                return Ok(b);
            }
        }
        let size = if len <= COPY_MAX { 512usize << c } else { len };
        OwnBuf::new(&self.pd, size, Access::LOCAL_READ).map_err(|e| PostError::LocalProtection {
            key: 0,
            reason: ProtectionFault::SendBuffer(e),
        })
    }

    /// Turns a gather list into device elements; what must live until the
    /// completion goes into `holds`.
    pub(super) fn gather(
        &self,
        st: &mut QpState,
        sges: &[Sge],
        out: &mut Vec<ffi::rs_sge>,
        holds: &mut Vec<Hold>,
    ) -> Result<bool, PostError> {
        match plan(sges, self.max_sge, self.max_inline) {
            GatherPlan::Inline => {
                for s in sges {
                    if let Sge::Bytes(b) = s {
                        if !b.is_empty() {
                            out.push(ffi::rs_sge {
                                addr: b.as_ptr() as u64,
                                length: b.len() as u32,
                                lkey: 0,
                            });
                            holds.push(Hold::Bytes(b.clone()));
                        }
                    }
                }
                Ok(true)
            }
            GatherPlan::Pieces(pieces) => {
                for (s, p) in sges.iter().zip(pieces) {
                    match (p, s) {
                        (Piece::Skip, _) => {}
                        (Piece::Region, Sge::Region(r)) => out.push(ffi::rs_sge {
                            addr: r.addr,
                            length: r.len,
                            lkey: r.lkey,
                        }),
                        (Piece::Copy, Sge::Bytes(b)) => {
                            let mut bb = self.bounce(st, b.len())?;
                            bb.buf[..b.len()].copy_from_slice(b);
                            out.push(ffi::rs_sge {
                                addr: bb.addr(),
                                length: b.len() as u32,
                                lkey: bb.lkey,
                            });
                            holds.push(Hold::Bounce(bb));
                        }
                        (Piece::Register, Sge::Bytes(b)) => {
                            let (t, lkey) = TempReg::new(&self.pd, b.clone()).map_err(|e| {
                                PostError::LocalProtection {
                                    key: 0,
                                    reason: ProtectionFault::SendBuffer(e),
                                }
                            })?;
                            out.push(ffi::rs_sge {
                                addr: b.as_ptr() as u64,
                                length: b.len() as u32,
                                lkey,
                            });
                            holds.push(Hold::Temp(t));
                        }
                        _ => unreachable!("plan pieces follow the elements"),
                    }
                }
                Ok(false)
            }
            GatherPlan::Coalesce { total } => {
                let mut bb = self.bounce(st, total)?;
                let mut at = 0;
                for s in sges {
                    match s {
                        Sge::Bytes(b) => bb.buf[at..at + b.len()].copy_from_slice(b),
                        Sge::Region(r) => {
                            if r.len > 0 && !self.pd.check(r.lkey, r.addr, r.len) {
                                return Err(PostError::LocalProtection {
                                    key: r.lkey,
                                    reason: ProtectionFault::NotInDomain,
                                });
                            }
                            if r.len > 0 {
                                // SAFETY: the range was just checked to lie
                                // in a live registered region (owned by its
                                // Mr, which stays registered while it is in
                                // the table); it is only read.
                                let src = unsafe {
                                    std::slice::from_raw_parts(r.addr as *const u8, r.len as usize)
                                };
                                bb.buf[at..at + src.len()].copy_from_slice(src);
                            }
                        }
                    }
                    at += s.len();
                }
                out.push(ffi::rs_sge {
                    addr: bb.addr(),
                    length: total as u32,
                    lkey: bb.lkey,
                });
                holds.push(Hold::Bounce(bb));
                Ok(false)
            }
        }
    }
}
