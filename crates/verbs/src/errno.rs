//! [`Errno`]: an operating-system error number a device call returned.

use std::fmt;

/// The error number (`errno`) a device call (`ibv_reg_mr`,
/// `ibv_alloc_pd`, ...) failed with, kept as a number so a caller can
/// match it; [`Errno::io_error`] turns it into a [`std::io::Error`].
///
/// ```
/// use rpcrdma_verbs::Errno;
/// let e = Errno(12);
/// assert_eq!(e.io_error().raw_os_error(), Some(12));
/// assert!(e.to_string().ends_with(" (errno 12)"), "{e}");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

impl Errno {
    /// The operating-system error.
    pub fn io_error(self) -> std::io::Error {
        std::io::Error::from_raw_os_error(self.0)
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (errno {})", self.io_error(), self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_as_the_device_errors_always_did() {
        // The text rdma-core's providers wrote by hand before the number
        // was kept: the OS's words, then the number.
        let io = std::io::Error::from_raw_os_error(12);
        assert_eq!(Errno(12).to_string(), format!("{io} (errno 12)"));
        let e = crate::RegisterError::Device {
            len: 4096,
            call: "ibv_reg_mr",
            errno: Errno(12),
        };
        assert_eq!(
            e.to_string(),
            format!("the RDMA device refused to register 4096 octets: ibv_reg_mr: {io} (errno 12)")
        );
    }
}
