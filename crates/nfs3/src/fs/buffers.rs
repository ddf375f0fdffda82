//! READ's buffers: reused, never zeroed.
//!
//! A READ of 1 MiB used to take a fresh zeroed buffer: the zeroing and
//! the page faults of a new allocation cost the server a sixth of its time
//! on a sequential read, on top of the one copy it cannot avoid (from the
//! page cache into the buffer the transport sends from). A [`ReadBuffers`]
//! keeps the buffers of finished READs: a READ's data is a [`Bytes`] that
//! owns its buffer, and when the transport drops it (the reply sent) the
//! buffer goes back to the pool, its pages still mapped and likely still
//! in the cache. A kept buffer keeps its length (its octets are
//! initialized, by an earlier READ or by the one zeroing of its first
//! use), so the next READ's `pread` writes into it directly and nothing is
//! written twice.
//!
//! Bounds: at most [`KEEP`] buffers are kept, each of at most
//! [`super::MAX_IO`] octets; more READs at once allocate, and their
//! buffers are freed when more than [`KEEP`] are back.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rpcrdma_sync::lock;

/// Buffers kept for reuse (a 1 MiB READ window of a few clients).
pub(crate) const KEEP: usize = 16;

/// The pool of READ buffers of one export.
#[derive(Debug, Default)]
pub(crate) struct ReadBuffers {
    free: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl ReadBuffers {
    /// A buffer of at least `want` octets (their values are whatever an
    /// earlier READ left): a kept one if one is large enough, else a new
    /// one, zeroed once.
    pub(crate) fn take(&self, want: usize) -> Vec<u8> {
        let mut free = lock(&self.free);
        let mut buf = match free.iter().rposition(|b| b.len() >= want) {
            Some(i) => free.swap_remove(i),
            None => {
                drop(free);
                Vec::new()
            }
        };
        if buf.len() < want {
            buf.resize(want, 0);
        }
        buf
    }

    /// The first `len` octets of `buf` as [`Bytes`] that give the buffer
    /// back when the last clone is dropped.
    pub(crate) fn share(&self, buf: Vec<u8>, len: usize) -> Bytes {
        if len == 0 {
            // Nothing to send: keep the buffer now.
            self.give_back(buf);
            return Bytes::new();
        }
        Bytes::from_owner(Lent {
            buf,
            home: Arc::downgrade(&self.free),
        })
        .slice(..len)
    }

    fn give_back(&self, buf: Vec<u8>) {
        put(&self.free, buf);
    }

    /// Buffers kept now.
    #[cfg(test)]
    fn kept(&self) -> usize {
        lock(&self.free).len()
    }
}

fn put(free: &Mutex<Vec<Vec<u8>>>, buf: Vec<u8>) {
    if buf.is_empty() || buf.len() > super::MAX_IO as usize {
        return;
    }
    let mut free = lock(free);
    if free.len() < KEEP {
        free.push(buf);
    }
}

/// A buffer lent to a READ's reply.
struct Lent {
    buf: Vec<u8>,
    home: std::sync::Weak<Mutex<Vec<Vec<u8>>>>,
}

impl AsRef<[u8]> for Lent {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        if let Some(home) = self.home.upgrade() {
            put(&home, std::mem::take(&mut self.buf));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_reply_gives_its_buffer_back() {
        let pool = ReadBuffers::default();
        let mut b = pool.take(4096);
        assert_eq!(b.len(), 4096);
        b[..3].copy_from_slice(b"abc");
        let at = b.as_ptr();
        let data = pool.share(b, 3);
        let clone = data.slice(1..);
        assert_eq!(&data[..], b"abc");
        drop(data);
        assert_eq!(pool.kept(), 0, "a clone still holds it");
        assert_eq!(&clone[..], b"bc");
        drop(clone);
        assert_eq!(pool.kept(), 1);
        // The same buffer again, its earlier octets still there (a READ
        // overwrites what it sends).
        let again = pool.take(100);
        assert_eq!(again.as_ptr(), at, "the same buffer, reused");
        assert_eq!(again.len(), 4096);
        assert_eq!(&again[..3], b"abc");
    }

    #[test]
    fn too_small_or_too_many_are_not_kept() {
        let pool = ReadBuffers::default();
        pool.give_back(pool.take(10));
        // A kept buffer too small for the next READ is left where it is.
        let big = pool.take(11);
        assert_eq!(big.len(), 11);
        assert_eq!(pool.kept(), 1);
        let many: Vec<_> = (0..KEEP + 5).map(|_| pool.take(64)).collect();
        assert_eq!(pool.kept(), 1, "the 10-octet one is too small");
        for b in many {
            drop(pool.share(b, 1));
        }
        assert_eq!(pool.kept(), KEEP);
        // An empty read keeps its buffer at once and sends nothing.
        let e = pool.take(8);
        assert_eq!(pool.kept(), KEEP - 1);
        assert!(pool.share(e, 0).is_empty());
        assert_eq!(pool.kept(), KEEP);
        // Oversized buffers are never kept.
        let pool = ReadBuffers::default();
        pool.give_back(vec![0; super::super::MAX_IO as usize + 1]);
        assert_eq!(pool.kept(), 0);
    }

    #[test]
    fn buffers_outliving_the_pool_are_freed() {
        let pool = ReadBuffers::default();
        let b = pool.take(16);
        let data = pool.share(b, 16);
        drop(pool);
        assert_eq!(&data[..], &[0; 16]);
        drop(data);
    }
}
