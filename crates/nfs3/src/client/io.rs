//! The data of files (an `impl` of [`NfsClient`]): READ, and whole files
//! read with several requests in flight; WRITE and COMMIT, and whole
//! files or streams written the same way, written again when the server's
//! write verifier changes.

use std::collections::VecDeque;

use bytes::Bytes;

use super::error::{nfs, patiently, rpc, NfsClientError, ProtocolViolation};
use super::NfsClient;
use crate::convert as c;
use crate::fs::{FileHandle, StableHow};
use crate::proto::nfs3 as p;

impl NfsClient {
    /// One READ.
    pub async fn read(
        &self,
        fh: &FileHandle,
        offset: u64,
        count: u32,
    ) -> Result<(Bytes, bool), NfsClientError> {
        let r = self
            .nfs
            .read(p::Read3args {
                file: c::fh(fh),
                offset,
                count,
            })
            .await
            .map_err(rpc("READ"))?;
        match r {
            p::Read3res::Nfs3Ok(ok) => {
                if ok.data.len() > count as usize || ok.count as usize != ok.data.len() {
                    return Err(ProtocolViolation::ReadCount {
                        asked: count,
                        count: ok.count,
                        data: ok.data.len(),
                    }
                    .into());
                }
                Ok((ok.data, ok.eof))
            }
            p::Read3res::Default(s, _) => Err(nfs("READ", b"", s)),
        }
    }

    /// Reads `size` bytes of a file from offset 0, [`NfsClient::in_flight`]
    /// READs of up to `rtmax` at a time, handing each chunk to `sink` in order.
    /// Stops early at the end of the file.
    pub async fn read_file(
        &self,
        fh: &FileHandle,
        size: u64,
        mut sink: impl FnMut(&[u8]) -> Result<(), NfsClientError>,
    ) -> Result<u64, NfsClientError> {
        type Read = tokio::task::JoinHandle<Result<(Bytes, bool), NfsClientError>>;
        let step = u64::from(self.rtmax);
        let mut next = 0u64;
        let mut done = 0u64;
        let mut queue: VecDeque<(u64, u32, Read)> = VecDeque::new();
        let result = loop {
            while queue.len() < self.in_flight && next < size {
                let n = step.min(size - next) as u32;
                let (me, fh) = (self.clone(), fh.clone());
                let off = next;
                queue.push_back((
                    next,
                    n,
                    tokio::spawn(async move { me.read(&fh, off, n).await }),
                ));
                next += u64::from(n);
            }
            let Some((off, n, task)) = queue.pop_front() else {
                break Ok(done);
            };
            let (data, eof) = match task.await {
                Ok(Ok(r)) => r,
                Ok(Err(e)) => break Err(e),
                Err(source) => break Err(NfsClientError::Task { op: "READ", source }),
            };
            debug_assert_eq!(off, done);
            if let Err(e) = sink(&data) {
                break Err(e);
            }
            done += data.len() as u64;
            if (data.len() as u32) < n {
                if eof {
                    break Ok(done);
                }
                if data.is_empty() {
                    break Err(ProtocolViolation::ReadNoProgress { offset: off }.into());
                }
                // A short read before the end: read the rest again.
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

    /// One WRITE (retried while the server answers `NFS3ERR_JUKEBOX`);
    /// returns the count, how it was committed and the verifier.
    pub async fn write(
        &self,
        fh: &FileHandle,
        offset: u64,
        data: Bytes,
        stable: StableHow,
    ) -> Result<(u32, StableHow, [u8; 8]), NfsClientError> {
        patiently(|| self.write_once(fh, offset, data.clone(), stable)).await
    }

    async fn write_once(
        &self,
        fh: &FileHandle,
        offset: u64,
        data: Bytes,
        stable: StableHow,
    ) -> Result<(u32, StableHow, [u8; 8]), NfsClientError> {
        let len = data.len();
        let r = self
            .nfs
            .write(p::Write3args {
                file: c::fh(fh),
                offset,
                count: len as u32,
                stable: c::stable(stable),
                data,
            })
            .await
            .map_err(rpc("WRITE"))?;
        match r {
            p::Write3res::Nfs3Ok(ok) => {
                if ok.count as usize > len {
                    return Err(ProtocolViolation::WriteCount {
                        count: ok.count,
                        sent: len,
                    }
                    .into());
                }
                let how = match ok.committed {
                    p::StableHow::Unstable => StableHow::Unstable,
                    p::StableHow::DataSync => StableHow::DataSync,
                    p::StableHow::FileSync => StableHow::FileSync,
                };
                Ok((ok.count, how, ok.verf))
            }
            p::Write3res::Default(s, _) => Err(nfs("WRITE", b"", s)),
        }
    }

    /// COMMIT of the whole file (retried while the server answers
    /// `NFS3ERR_JUKEBOX`); returns the verifier.
    pub async fn commit(&self, fh: &FileHandle) -> Result<[u8; 8], NfsClientError> {
        patiently(|| self.commit_once(fh)).await
    }

    async fn commit_once(&self, fh: &FileHandle) -> Result<[u8; 8], NfsClientError> {
        match self
            .nfs
            .commit(p::Commit3args {
                file: c::fh(fh),
                offset: 0,
                count: 0,
            })
            .await
            .map_err(rpc("COMMIT"))?
        {
            p::Commit3res::Nfs3Ok(ok) => Ok(ok.verf),
            p::Commit3res::Default(s, _) => Err(nfs("COMMIT", b"", s)),
        }
    }

    /// Writes `data` at `offset` with UNSTABLE WRITEs of up to `wtmax`,
    /// [`NfsClient::in_flight`] at a time (no COMMIT); returns the write
    /// verifiers seen (more than one: the server restarted meanwhile).
    pub async fn write_range(
        &self,
        fh: &FileHandle,
        offset: u64,
        data: Bytes,
    ) -> Result<std::collections::HashSet<[u8; 8]>, NfsClientError> {
        let mut at = 0usize;
        let (_, verfs) = self
            .write_stream(fh, offset, |max| {
                let end = (at + max).min(data.len());
                let chunk = (end > at).then(|| data.slice(at..end));
                at = end;
                Ok(chunk)
            })
            .await?;
        Ok(verfs)
    }

    /// Writes what `next` hands out, in order from `offset`, with UNSTABLE
    /// WRITEs kept [`NfsClient::in_flight`] at a time (no COMMIT). `next`
    /// is called with the largest WRITE (`wtmax`) whenever the window has
    /// room, and returns the next chunk of at most that many octets
    /// (`None` at the end); it runs while earlier WRITEs are on the wire,
    /// so a caller reading a local file overlaps its reads with the
    /// transfer. Returns the octets written and the write verifiers seen.
    pub async fn write_stream(
        &self,
        fh: &FileHandle,
        offset: u64,
        mut next: impl FnMut(usize) -> std::io::Result<Option<Bytes>>,
    ) -> Result<(u64, std::collections::HashSet<[u8; 8]>), NfsClientError> {
        type Write = tokio::task::JoinHandle<Result<(u32, [u8; 8]), NfsClientError>>;
        let step = self.wtmax as usize;
        let mut verfs = std::collections::HashSet::new();
        let mut queue: VecDeque<(usize, Write)> = VecDeque::new();
        let mut at = 0u64;
        let mut more = true;
        let result = loop {
            while more && queue.len() < self.in_flight {
                let chunk = match next(step) {
                    Ok(Some(c)) if !c.is_empty() => c,
                    Ok(_) => {
                        more = false;
                        break;
                    }
                    Err(e) => {
                        for (_, t) in queue.drain(..) {
                            t.abort();
                        }
                        return Err(NfsClientError::Local(e));
                    }
                };
                if chunk.len() > step {
                    for (_, t) in queue.drain(..) {
                        t.abort();
                    }
                    return Err(NfsClientError::Local(std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        format!(
                            "a chunk of {} octets is larger than the WRITE size {step}",
                            chunk.len()
                        ),
                    )));
                }
                let (me, fh) = (self.clone(), fh.clone());
                let off = offset + at;
                let len = chunk.len();
                queue.push_back((
                    len,
                    tokio::spawn(async move {
                        let (n, _, v) = me.write(&fh, off, chunk, StableHow::Unstable).await?;
                        Ok((n, v))
                    }),
                ));
                at += len as u64;
            }
            let Some((want, task)) = queue.pop_front() else {
                break Ok((at, verfs));
            };
            match task.await {
                Ok(Ok((n, v))) if n as usize == want => {
                    verfs.insert(v);
                }
                Ok(Ok((n, _))) => {
                    break Err(ProtocolViolation::ShortWrite {
                        written: n,
                        sent: want,
                    }
                    .into())
                }
                Ok(Err(e)) => break Err(e),
                Err(source) => {
                    break Err(NfsClientError::Task {
                        op: "WRITE",
                        source,
                    })
                }
            }
        };
        for (_, t) in queue {
            t.abort();
        }
        result
    }

    /// Writes `data` from offset 0 ([`NfsClient::write_range`]), then
    /// COMMITs. If the write verifier changed (the server restarted and
    /// may have lost unstable data), the whole file is written again, up
    /// to 3 times.
    pub async fn write_file(&self, fh: &FileHandle, data: &Bytes) -> Result<(), NfsClientError> {
        for _ in 0..3 {
            let mut verfs = self.write_range(fh, 0, data.clone()).await?;
            verfs.insert(self.commit(fh).await?);
            if verfs.len() <= 1 {
                return Ok(());
            }
            tracing::warn!(
                "the server's write verifier changed during the transfer: writing again"
            );
        }
        Err(NfsClientError::VerifierChanged)
    }
}
