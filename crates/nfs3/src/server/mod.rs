//! The NFSv3 and MOUNT v3 services: the generated server traits
//! implemented on an [`Export`], and their registration.
//!
//! Each procedure decodes (generated code), resolves its handles and runs
//! its file-system work on tokio's blocking pool, as the caller
//! ([`Export::caller_with`] from the AUTH_SYS credential and the client's
//! options in the exports), and answers with the
//! NFS status and the attributes RFC 1813 asks for on success and on
//! failure.
//!
//! `nfs.rs` is the NFSv3 service, `mount.rs` the MOUNT v3 service; this
//! file registers both.

mod mount;
mod nfs;
mod nfs_procs;

use std::sync::Arc;

use rpcrdma_oncrpc::{ReplyCache, ReplyCacheConfig, Services};

pub use mount::MountService;
pub use nfs::{ChangeGuard, NfsService};

use crate::exports::Exports;
use crate::fs::Export;
use crate::proto::mount3 as m;
use crate::proto::nfs3 as p;

/// NFS procedures whose replies the duplicate request cache keeps (a
/// retransmission must not run them again): SETATTR, WRITE, CREATE, MKDIR,
/// SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK.
pub const NON_IDEMPOTENT: [u32; 10] = [
    p::nfs_v3::NFSPROC3_SETATTR,
    p::nfs_v3::NFSPROC3_WRITE,
    p::nfs_v3::NFSPROC3_CREATE,
    p::nfs_v3::NFSPROC3_MKDIR,
    p::nfs_v3::NFSPROC3_SYMLINK,
    p::nfs_v3::NFSPROC3_MKNOD,
    p::nfs_v3::NFSPROC3_REMOVE,
    p::nfs_v3::NFSPROC3_RMDIR,
    p::nfs_v3::NFSPROC3_RENAME,
    p::nfs_v3::NFSPROC3_LINK,
];

/// Most octets of an NFSv3 reply besides its data or entries (status,
/// attributes, counts, verifiers).
const REPLY_FIXED: u64 = 512;

/// The largest results of an NFSv3 procedure, from its arguments
/// ([`rpcrdma_oncrpc::Version::reply_bound`]): READ its count (at most
/// [`crate::fs::MAX_IO`]), READDIR and READDIRPLUS their count (at most
/// the 1 MiB the server builds), READLINK the longest target; the rest fit
/// the default reservation. Malformed arguments: `None` (they are answered
/// with `GARBAGE_ARGS`).
pub fn reply_bound(proc_: u32, args: &[u8]) -> Option<u64> {
    use p::nfs_v3 as v;
    let word = |at: usize| -> Option<u64> {
        let b = args.get(at..at.checked_add(4)?)?;
        Some(u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])))
    };
    // Every one of these starts with the file handle: length, bytes
    // padded to 4.
    let fh_end = |()| -> Option<usize> {
        let len = usize::try_from(word(0)?).ok()?;
        (len <= crate::fs::NFS3_FHSIZE).then(|| 4 + len.div_ceil(4) * 4)
    };
    let io = u64::from(crate::fs::MAX_IO);
    let dir = nfs::MAX_READDIR_REPLY as u64;
    match proc_ {
        // fh, offset (8), count.
        v::NFSPROC3_READ => Some(REPLY_FIXED + word(fh_end(())? + 8)?.min(io)),
        // fh, cookie (8), verifier (8), count.
        v::NFSPROC3_READDIR => Some(REPLY_FIXED + word(fh_end(())? + 16)?.min(dir)),
        // fh, cookie, verifier, dircount, maxcount.
        v::NFSPROC3_READDIRPLUS => Some(REPLY_FIXED + word(fh_end(())? + 20)?.min(dir)),
        v::NFSPROC3_READLINK => Some(REPLY_FIXED + crate::fs::MAX_LINK_TARGET as u64 + 4),
        _ => None,
    }
}

/// Registers NFSv3 and MOUNT v3 for `export` in `services`, with a
/// duplicate request cache for the non-idempotent NFS procedures.
///
/// ```no_run
/// use std::sync::Arc;
/// use rpcrdma_nfs3::fs::{Export, ExportConfig};
/// use rpcrdma_oncrpc::{Server, ServerConfig, Services};
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// let export = Arc::new(Export::open(ExportConfig::new("/srv/data", "/var/lib/rpcrdma-nfs"))?);
/// let mut services = Services::new();
/// rpcrdma_nfs3::server::register(&mut services, export);
/// let server = Server::new(services, ServerConfig::default());
/// server.serve_tcp("0.0.0.0:2049").await?;
/// # Ok(()) }
/// ```
pub fn register(services: &mut Services, export: Arc<Export>) {
    register_with(services, export, ReplyCacheConfig::default());
}

/// [`register`] with the cache's limits.
pub fn register_with(services: &mut Services, export: Arc<Export>, cache: ReplyCacheConfig) {
    register_guarded(services, export, cache, None);
}

/// [`register_with`], asking `guard` before each change (NFSv4
/// delegations: [`ChangeGuard`]).
pub fn register_guarded(
    services: &mut Services,
    export: Arc<Export>,
    cache: ReplyCacheConfig,
    guard: Option<Arc<ChangeGuard>>,
) {
    register_exports(services, Arc::new(Exports::single(export)), cache, guard);
}

/// Registers NFSv3 and MOUNT v3 for the exports in force in `exports`
/// (which clients may use which directory: `crate::exports`; replace the
/// table to reload them), with a duplicate request cache, asking `guard`
/// (if any) before each change.
pub fn register_exports(
    services: &mut Services,
    exports: Arc<Exports>,
    cache: ReplyCacheConfig,
    guard: Option<Arc<ChangeGuard>>,
) {
    services.set_reply_cache(Arc::new(ReplyCache::new(cache)));
    let nfs = Arc::new(NfsService::on(exports.clone(), guard));
    p::nfs_v3::register(services, nfs);
    services
        .program(p::nfs_v3::PROGRAM, p::nfs_v3::VERSION)
        .non_idempotent(NON_IDEMPOTENT)
        .reply_bound(reply_bound);
    m::mount_v3::register(services, Arc::new(MountService::on(exports)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use rpcrdma_oncrpc::Marshal;
    use rpcrdma_xdr::PayloadEncoder;

    fn enc(v: &impl Marshal) -> Vec<u8> {
        let mut pe = PayloadEncoder::new();
        v.marshal(&mut pe.encoder());
        pe.finish().flatten().to_vec()
    }

    #[test]
    fn reply_bounds_follow_the_counts_asked_within_the_servers_limits() {
        use p::nfs_v3 as v;
        let fh = p::NfsFh3 {
            data: Bytes::from(vec![1u8; 37]),
        };
        let read = |count| {
            enc(&p::Read3args {
                file: fh.clone(),
                offset: 9,
                count,
            })
        };
        assert_eq!(reply_bound(v::NFSPROC3_READ, &read(4096)), Some(512 + 4096));
        assert_eq!(
            reply_bound(v::NFSPROC3_READ, &read(u32::MAX)),
            Some(512 + u64::from(crate::fs::MAX_IO))
        );
        let rd = enc(&p::Readdir3args {
            dir: fh.clone(),
            cookie: 0,
            cookieverf: [0; 8],
            count: 8192,
        });
        assert_eq!(reply_bound(v::NFSPROC3_READDIR, &rd), Some(512 + 8192));
        let rdp = enc(&p::Readdirplus3args {
            dir: fh.clone(),
            cookie: 0,
            cookieverf: [0; 8],
            dircount: 100,
            maxcount: u32::MAX,
        });
        assert_eq!(
            reply_bound(v::NFSPROC3_READDIRPLUS, &rdp),
            Some(512 + (1 << 20))
        );
        // Cut short, or a handle longer than NFSv3 allows: no bound (the
        // call gets GARBAGE_ARGS).
        let r = read(10);
        for cut in 0..r.len() {
            assert_eq!(reply_bound(v::NFSPROC3_READ, &r[..cut]), None, "cut {cut}");
        }
        let mut long = r.clone();
        long[..4].copy_from_slice(&65u32.to_be_bytes());
        assert_eq!(reply_bound(v::NFSPROC3_READ, &long), None);
        assert_eq!(reply_bound(v::NFSPROC3_GETATTR, &r), None);
        assert!(reply_bound(v::NFSPROC3_READLINK, &[]).unwrap() > 4096);
    }
}
