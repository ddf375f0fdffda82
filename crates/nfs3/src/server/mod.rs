//! The NFSv3 and MOUNT v3 services: the generated server traits
//! implemented on an [`Export`], and their registration.
//!
//! Each procedure decodes (generated code), resolves its handles and runs
//! its file-system work on tokio's blocking pool, as the caller
//! ([`Export::caller`] from the AUTH_SYS credential), and answers with the
//! NFS status and the attributes RFC 1813 asks for on success and on
//! failure.
//!
//! `nfs.rs` is the NFSv3 service, `mount.rs` the MOUNT v3 service; this
//! file registers both.

mod mount;
mod nfs;

use std::sync::Arc;

use rpcrdma_oncrpc::{ReplyCache, ReplyCacheConfig, Services};

pub use mount::MountService;
pub use nfs::NfsService;

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
    services.set_reply_cache(Arc::new(ReplyCache::new(cache)));
    let nfs = Arc::new(NfsService::new(export.clone()));
    p::nfs_v3::register(services, nfs);
    services
        .program(p::nfs_v3::PROGRAM, p::nfs_v3::VERSION)
        .non_idempotent(NON_IDEMPOTENT);
    m::mount_v3::register(services, Arc::new(MountService::new(export)));
}
