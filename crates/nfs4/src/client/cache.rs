//! The state of an open file that outlives its handles ([`FileShared`]:
//! the open's id, its lock owner, its attributes and its write-behind
//! cache), held by the driver so that the callback task can flush the
//! cache before a delegation goes back; and the WRITEs and COMMITs that
//! flush it.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

use bytes::Bytes;
use rpcrdma_sync::lock;

use super::attrs::Attrs;
use super::driver::{Inner, NORMAL};
use super::error::{Lost, Nfs4Error, Result, Violation};
use super::ops::{missing, putfh};
use crate::proto::nfs4 as p;
use p::NfsArgop4 as A;
use p::NfsResop4 as R;

/// What a file's write-behind cache holds: extents not yet written.
#[derive(Debug, Default)]
pub(crate) struct WriteCache {
    pub(super) extents: BTreeMap<u64, Bytes>,
    pub(super) bytes: usize,
}

/// The state of an open file shared by its [`File`] handles and the
/// callback task (which flushes it before returning a delegation).
#[derive(Debug)]
pub(crate) struct FileShared {
    pub(super) id: u64,
    pub(crate) fh: Bytes,
    pub(super) lock_owner: Bytes,
    pub(super) attrs: Mutex<Attrs>,
    pub(super) cache: tokio::sync::Mutex<WriteCache>,
    pub(super) closed: AtomicBool,
}

impl FileShared {
    pub(super) fn stateid(&self, inner: &Inner) -> Result<p::Stateid4> {
        lock(&inner.state)
            .open_stateid(self.id)
            .ok_or_else(|| Nfs4Error::StateLost(Lost::NotOpen))
    }

    /// Writes what the cache holds (UNSTABLE), then COMMITs; the whole
    /// cache again if the verifier changed (the server restarted).
    pub(crate) async fn flush(&self, inner: &Inner) -> Result<()> {
        let mut cache = self.cache.lock().await;
        if cache.extents.is_empty() {
            return Ok(());
        }
        for _ in 0..3 {
            let mut verfs = HashSet::new();
            for (off, data) in &cache.extents {
                verfs.extend(write_range(inner, self, *off, data.clone()).await?);
            }
            verfs.insert(commit(inner, self).await?);
            if verfs.len() == 1 {
                cache.extents.clear();
                cache.bytes = 0;
                return Ok(());
            }
            tracing::warn!("the write verifier changed while flushing: writing again");
        }
        Err(Nfs4Error::VerifierChanged)
    }
}

pub(super) async fn write_once(
    inner: &Inner,
    f: &FileShared,
    offset: u64,
    data: Bytes,
    stable: p::StableHow4,
) -> Result<p::Write4resok> {
    let len = data.len();
    let res = inner
        .run("WRITE", NORMAL, || {
            Ok(vec![
                putfh(&f.fh),
                A::OpWrite(p::Write4args {
                    stateid: f.stateid(inner)?,
                    offset,
                    stable,
                    data: data.clone(),
                }),
            ])
        })
        .await?;
    match res.get(1) {
        Some(R::OpWrite(p::Write4res::Nfs4Ok(w))) => {
            if w.count as usize > len {
                return Err(Nfs4Error::Protocol(Violation::WriteCount {
                    count: w.count,
                    sent: len,
                }));
            }
            Ok(*w)
        }
        _ => Err(missing("WRITE")),
    }
}

pub(super) async fn commit(inner: &Inner, f: &FileShared) -> Result<[u8; 8]> {
    let res = inner
        .run("COMMIT", NORMAL, || {
            Ok(vec![
                putfh(&f.fh),
                A::OpCommit(p::Commit4args {
                    offset: 0,
                    count: 0,
                }),
            ])
        })
        .await?;
    match res.get(1) {
        Some(R::OpCommit(p::Commit4res::Nfs4Ok(c))) => Ok(c.writeverf),
        _ => Err(missing("COMMIT")),
    }
}

/// UNSTABLE WRITEs of `data` at `offset`, one wsize each, written in
/// order with the rest of a short WRITE sent again; the verifiers seen.
pub(super) async fn write_range(
    inner: &Inner,
    f: &FileShared,
    offset: u64,
    data: Bytes,
) -> Result<HashSet<[u8; 8]>> {
    let step = lock(&inner.sess).wsize as usize;
    let mut verfs = HashSet::new();
    let mut at = 0;
    while at < data.len() {
        let end = (at + step).min(data.len());
        let w = write_once(
            inner,
            f,
            offset + at as u64,
            data.slice(at..end),
            p::StableHow4::Unstable4,
        )
        .await?;
        if w.count == 0 {
            return Err(Nfs4Error::Protocol(Violation::WroteNothing));
        }
        verfs.insert(w.writeverf);
        at += w.count as usize;
    }
    Ok(verfs)
}
