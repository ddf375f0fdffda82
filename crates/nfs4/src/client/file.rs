//! An open file ([`File`]): READ, WRITE, COMMIT, LOCK, LOCKU and CLOSE on
//! its open state, each a COMPOUND on the session (`driver.rs` runs
//! them), several READs or WRITEs in flight for whole files, and a
//! write-behind cache that is flushed before the file's delegation goes
//! back (`FileShared`, which the callback task holds too). `files.rs`
//! opens it.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use rpcrdma_sync::lock;

use super::attrs::Attrs;
use super::cache::{commit, write_once, write_range, FileShared, WriteCache};
use super::driver::NORMAL;
use super::error::{Lost, Nfs4Error, Result, Violation};
use super::ops::{missing, putfh};
use super::state::Range;
use super::Nfs4Client;
use crate::proto::nfs4 as p;
use p::NfsArgop4 as A;
use p::NfsResop4 as R;

/// Bytes a file's write-behind cache holds before it writes them.
pub const WRITE_BEHIND: usize = 8 << 20;

/// An open file.
#[derive(Debug, Clone)]
pub struct File {
    client: Nfs4Client,
    shared: Arc<FileShared>,
}

impl File {
    /// The handle of a file just opened (open `id`, its handle and
    /// attributes), known to the callback task from now on.
    pub(super) fn opened(client: &Nfs4Client, id: u64, fh: Bytes, attrs: Attrs) -> Self {
        let shared = Arc::new(FileShared {
            id,
            fh,
            lock_owner: Bytes::from(format!("lock-{id}")),
            attrs: Mutex::new(attrs),
            cache: tokio::sync::Mutex::new(WriteCache::default()),
            closed: AtomicBool::new(false),
        });
        lock(&client.inner.files).push(Arc::downgrade(&shared));
        File {
            client: client.clone(),
            shared,
        }
    }

    /// Its file handle.
    pub fn fh(&self) -> &Bytes {
        &self.shared.fh
    }

    /// Its attributes when it was opened.
    pub fn attrs(&self) -> Attrs {
        lock(&self.shared.attrs).clone()
    }

    /// Whether the client holds a delegation of the file (and whether it
    /// is a write delegation).
    pub fn delegation(&self) -> Option<bool> {
        lock(&self.client.inner.state)
            .delegation_of(&self.shared.fh)
            .map(|d| d.write)
    }

    /// The client.
    pub fn client(&self) -> &Nfs4Client {
        &self.client
    }

    /// One READ: the data and whether it reached the end of the file.
    pub async fn read(&self, offset: u64, count: u32) -> Result<(Bytes, bool)> {
        let inner = &self.client.inner;
        let f = &self.shared;
        let res = inner
            .run("READ", NORMAL, || {
                Ok(vec![
                    putfh(&f.fh),
                    A::OpRead(p::Read4args {
                        stateid: f.stateid(inner)?,
                        offset,
                        count,
                    }),
                ])
            })
            .await?;
        match res.get(1) {
            Some(R::OpRead(p::Read4res::Nfs4Ok(r))) => {
                if r.data.len() > count as usize {
                    return Err(Nfs4Error::Protocol(Violation::ReadCount {
                        asked: count,
                        data: r.data.len(),
                    }));
                }
                Ok((r.data.clone(), r.eof))
            }
            _ => Err(missing("READ")),
        }
    }

    /// Reads `size` bytes from offset 0, several READs of up to rsize in
    /// flight, handing each chunk to `sink` in order; stops early at the
    /// end of the file. Returns the bytes read.
    pub async fn read_to(
        &self,
        size: u64,
        mut sink: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<u64> {
        type Read = tokio::task::JoinHandle<Result<(Bytes, bool)>>;
        let step = u64::from(self.client.io_sizes().0);
        let depth = self.client.inner.cfg.in_flight.max(1);
        let mut next = 0u64;
        let mut done = 0u64;
        let mut queue: VecDeque<(u64, u32, Read)> = VecDeque::new();
        let result = loop {
            while queue.len() < depth && next < size {
                let n = step.min(size - next) as u32;
                let me = self.clone();
                let off = next;
                queue.push_back((next, n, tokio::spawn(async move { me.read(off, n).await })));
                next += u64::from(n);
            }
            let Some((off, n, task)) = queue.pop_front() else {
                break Ok(done);
            };
            let (data, eof) = match task.await {
                Ok(Ok(r)) => r,
                Ok(Err(e)) => break Err(e),
                Err(source) => break Err(Nfs4Error::Task { op: "READ", source }),
            };
            if let Err(e) = sink(&data) {
                break Err(e);
            }
            done += data.len() as u64;
            if (data.len() as u32) < n {
                if eof {
                    break Ok(done);
                }
                if data.is_empty() {
                    break Err(Nfs4Error::Protocol(Violation::ReadNoProgress {
                        offset: off,
                    }));
                }
                for (_, _, t) in queue.drain(..) {
                    t.abort();
                }
                next = done;
            }
        };
        for (_, _, t) in queue {
            t.abort();
        }
        result
    }

    /// One WRITE; returns the count, how it was committed and the verifier.
    pub async fn write(
        &self,
        offset: u64,
        data: Bytes,
        stable: p::StableHow4,
    ) -> Result<(u32, p::StableHow4, [u8; 8])> {
        let w = write_once(&self.client.inner, &self.shared, offset, data, stable).await?;
        Ok((w.count, w.committed, w.writeverf))
    }

    /// UNSTABLE WRITEs of `data` at `offset`, several of up to wsize in
    /// flight (no COMMIT); the write verifiers seen (more than one: the
    /// server restarted meanwhile).
    pub async fn write_all(&self, offset: u64, data: Bytes) -> Result<HashSet<[u8; 8]>> {
        type Write = tokio::task::JoinHandle<Result<HashSet<[u8; 8]>>>;
        let step = self.client.io_sizes().1 as usize;
        let depth = self.client.inner.cfg.in_flight.max(1);
        let mut verfs = HashSet::new();
        let mut queue: VecDeque<Write> = VecDeque::new();
        let mut at = 0usize;
        let result = loop {
            while queue.len() < depth && at < data.len() {
                let end = (at + step).min(data.len());
                let chunk = data.slice(at..end);
                let me = self.clone();
                let off = offset + at as u64;
                queue.push_back(tokio::spawn(async move {
                    write_range(&me.client.inner, &me.shared, off, chunk).await
                }));
                at = end;
            }
            let Some(task) = queue.pop_front() else {
                break Ok(verfs);
            };
            match task.await {
                Ok(Ok(v)) => verfs.extend(v),
                Ok(Err(e)) => break Err(e),
                Err(source) => {
                    break Err(Nfs4Error::Task {
                        op: "WRITE",
                        source,
                    })
                }
            }
        };
        for t in queue {
            t.abort();
        }
        result
    }

    /// COMMIT of the whole file; the verifier.
    pub async fn commit(&self) -> Result<[u8; 8]> {
        commit(&self.client.inner, &self.shared).await
    }

    /// Writes `data` from offset 0 ([`File::write_all`]) and COMMITs; the
    /// whole file again, up to 3 times, if the verifier changed (the
    /// server restarted and may have dropped unstable data).
    pub async fn write_file(&self, data: &Bytes) -> Result<()> {
        for _ in 0..3 {
            let mut verfs = self.write_all(0, data.clone()).await?;
            verfs.insert(self.commit().await?);
            if verfs.len() <= 1 {
                return Ok(());
            }
            tracing::warn!(
                "the server's write verifier changed during the transfer: writing again"
            );
        }
        Err(Nfs4Error::VerifierChanged)
    }

    /// Caches a write (write-behind): the data goes to the server when
    /// the cache passes [`WRITE_BEHIND`] bytes, at [`File::flush`] or
    /// [`File::close`], or before the file's delegation is returned.
    pub async fn write_cached(&self, offset: u64, data: &[u8]) -> Result<()> {
        let full = {
            let mut c = self.shared.cache.lock().await;
            // Append to an extent that ends where this starts, else start
            // one (overlapping writes are flushed first).
            let end = offset + data.len() as u64;
            let overlaps = c
                .extents
                .range(..end)
                .next_back()
                .is_some_and(|(o, d)| *o + d.len() as u64 > offset);
            if overlaps {
                drop(c);
                self.flush().await?;
                c = self.shared.cache.lock().await;
            }
            let joined = c
                .extents
                .range(..=offset)
                .next_back()
                .filter(|(o, d)| **o + d.len() as u64 == offset)
                .map(|(o, _)| *o);
            match joined {
                Some(o) => {
                    let old = c.extents.remove(&o).unwrap_or_default();
                    let mut b = BytesMut::with_capacity(old.len() + data.len());
                    b.extend_from_slice(&old);
                    b.extend_from_slice(data);
                    c.extents.insert(o, b.freeze());
                }
                None => {
                    c.extents.insert(offset, Bytes::copy_from_slice(data));
                }
            }
            c.bytes += data.len();
            c.bytes >= WRITE_BEHIND
        };
        if full {
            self.flush().await?;
        }
        Ok(())
    }

    /// Bytes in the write-behind cache.
    pub async fn cached_bytes(&self) -> usize {
        self.shared.cache.lock().await.bytes
    }

    /// Writes the cached writes and COMMITs them.
    pub async fn flush(&self) -> Result<()> {
        self.shared.flush(&self.client.inner).await
    }

    /// LOCK of `[offset, offset + length)` (`length` `u64::MAX`: to the
    /// end of the file), a write lock if `write`; a conflict is
    /// [`Nfs4Error::Denied`] at once.
    pub async fn lock(&self, write: bool, offset: u64, length: u64) -> Result<()> {
        self.lock_as(write, false, offset, length).await
    }

    /// LOCK that waits for a conflicting lock to go, up to `patience`:
    /// a blocking lock type, tried again when the server says the lock
    /// may be free (CB_NOTIFY_LOCK) or every second.
    pub async fn lock_wait(
        &self,
        write: bool,
        offset: u64,
        length: u64,
        patience: Duration,
    ) -> Result<()> {
        let until = Instant::now() + patience;
        loop {
            let woken = self.client.inner.lock_wake.notified();
            match self.lock_as(write, true, offset, length).await {
                Err(Nfs4Error::Denied { .. }) if Instant::now() < until => {
                    let wait = until
                        .saturating_duration_since(Instant::now())
                        .min(Duration::from_secs(1));
                    let _ = tokio::time::timeout(wait, woken).await;
                }
                other => return other,
            }
        }
    }

    async fn lock_as(&self, write: bool, blocking: bool, offset: u64, length: u64) -> Result<()> {
        let inner = &self.client.inner;
        let f = &self.shared;
        let locktype = match (write, blocking) {
            (false, false) => p::NfsLockType4::ReadLt,
            (true, false) => p::NfsLockType4::WriteLt,
            (false, true) => p::NfsLockType4::ReadwLt,
            (true, true) => p::NfsLockType4::WritewLt,
        };
        let res = inner
            .run("LOCK", NORMAL, || {
                let st = lock(&inner.state);
                let locker = match st.lock_stateid(f.id, &f.lock_owner) {
                    Some(ls) => p::Locker4::False(p::ExistLockOwner4 {
                        lock_stateid: ls,
                        lock_seqid: 0,
                    }),
                    None => p::Locker4::True(p::OpenToLockOwner4 {
                        open_seqid: 0,
                        open_stateid: st
                            .open_stateid(f.id)
                            .ok_or_else(|| Nfs4Error::StateLost(Lost::NotOpen))?,
                        lock_seqid: 0,
                        lock_owner: p::StateOwner4 {
                            clientid: inner.clientid(),
                            owner: f.lock_owner.clone(),
                        },
                    }),
                };
                Ok(vec![
                    putfh(&f.fh),
                    A::OpLock(p::Lock4args {
                        locktype,
                        reclaim: false,
                        offset,
                        length,
                        locker,
                    }),
                ])
            })
            .await?;
        match res.get(1) {
            Some(R::OpLock(p::Lock4res::Nfs4Ok(ok))) => {
                lock(&inner.state).locked(
                    f.id,
                    &f.lock_owner,
                    ok.lock_stateid,
                    Range::of(offset, length, write),
                );
                Ok(())
            }
            _ => Err(missing("LOCK")),
        }
    }

    /// LOCKU of `[offset, offset + length)`.
    pub async fn unlock(&self, offset: u64, length: u64) -> Result<()> {
        let inner = &self.client.inner;
        let f = &self.shared;
        let res = inner
            .run("LOCKU", NORMAL, || {
                let ls = lock(&inner.state)
                    .lock_stateid(f.id, &f.lock_owner)
                    .ok_or_else(|| Nfs4Error::StateLost(Lost::NoLock))?;
                Ok(vec![
                    putfh(&f.fh),
                    A::OpLocku(p::Locku4args {
                        locktype: p::NfsLockType4::WriteLt,
                        seqid: 0,
                        lock_stateid: ls,
                        offset,
                        length,
                    }),
                ])
            })
            .await?;
        match res.get(1) {
            Some(R::OpLocku(p::Locku4res::Nfs4Ok(s))) => {
                let r = Range::of(offset, length, false);
                lock(&inner.state).unlocked(f.id, &f.lock_owner, *s, r.start, r.end);
                Ok(())
            }
            _ => Err(missing("LOCKU")),
        }
    }

    /// Flushes the cache, releases the locks and CLOSEs.
    pub async fn close(self) -> Result<()> {
        if self.shared.closed.swap(true, Ordering::Relaxed) {
            return Ok(());
        }
        self.flush().await?;
        let inner = &self.client.inner;
        if lock(&inner.state).holds_locks(self.shared.id) {
            self.unlock(0, u64::MAX).await?;
        }
        let f = &self.shared;
        let r = inner
            .run("CLOSE", NORMAL, || {
                Ok(vec![
                    putfh(&f.fh),
                    A::OpClose(p::Close4args {
                        seqid: 0,
                        open_stateid: f.stateid(inner)?,
                    }),
                ])
            })
            .await;
        lock(&inner.state).closed(f.id);
        r.map(drop)
    }
}
