//! Opening an export: the root directory, the handle key kept in the
//! state directory (made on first use, mode 0600, never inside the
//! export) and a fresh write verifier.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rustix::fs::{Mode, OFlags};

use super::handle::{HandleKey, NodeId};
use super::nodes::{generation, statx_fd, Nodes};
use super::{BadId, Export, ExportConfig, ExportError, IdMaps, IdentityMode, INVALID_ID};

impl Export {
    /// Opens the export: the root directory, the handle key (made on
    /// first use), a fresh write verifier.
    pub fn open(cfg: ExportConfig) -> Result<Self, ExportError> {
        let root_err = |source| ExportError::Root {
            path: cfg.root.clone(),
            source,
        };
        let canon = std::fs::canonicalize(&cfg.root).map_err(root_err)?;
        let root_fd = rustix::fs::open(
            &canon,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| root_err(e.into()))?;
        let st = statx_fd(&root_fd).map_err(|e| root_err(e.into()))?;
        if let Ok(state) = std::fs::canonicalize(&cfg.state_dir) {
            if state.starts_with(&canon) {
                return Err(ExportError::StateInsideExport { state, root: canon });
            }
        } else if cfg.state_dir.starts_with(&canon) || cfg.state_dir.starts_with(&cfg.root) {
            return Err(ExportError::StateInsideExport {
                state: cfg.state_dir.clone(),
                root: canon,
            });
        }
        let ids = match cfg.identity {
            IdentityMode::Switch => IdMaps::current(),
            IdentityMode::ServerUser => IdMaps::all(),
        };
        for (what, id, ok) in [
            ("uid", cfg.anon.0, ids.uids.contains(cfg.anon.0)),
            ("gid", cfg.anon.1, ids.gids.contains(cfg.anon.1)),
        ] {
            if !ok {
                return Err(ExportError::BadAnon {
                    what,
                    id,
                    why: if id == INVALID_ID {
                        BadId::NoChange
                    } else {
                        BadId::Unmapped
                    },
                });
            }
        }
        if !Path::new("/proc/self/fd").is_dir() {
            return Err(ExportError::NoProc);
        }
        let key = read_or_make_key(&cfg.state_dir)?;
        let export_id = {
            let k = HandleKey::new(key, 0);
            k.tag64(canon.as_os_str().as_encoded_bytes()) as u32
        };
        let dev = (st.stx_dev_major, st.stx_dev_minor);
        let nodes = Nodes::new(cfg.max_nodes, cfg.max_dir_fds);
        // TMPFS_MAGIC, RAMFS_MAGIC (linux/magic.h).
        let memory_backed = rustix::fs::fstatfs(&root_fd)
            .is_ok_and(|s| matches!(s.f_type, 0x0102_1994 | 0x8584_58f6));
        Ok(Self {
            root_id: NodeId {
                ino: st.stx_ino,
                gen: generation(&st),
            },
            dev,
            fsid: (u64::from(dev.0) << 32) | u64::from(dev.1),
            keys: HandleKey::new(key, export_id),
            ids,
            write_verf: rand::random(),
            nodes: Mutex::new(nodes),
            searching: Mutex::new(()),
            read_buffers: Default::default(),
            memory_backed,
            root_fd: Arc::new(root_fd),
            canon,
            cfg,
        })
    }
}

fn read_or_make_key(state_dir: &Path) -> Result<[u8; 16], ExportError> {
    use std::io::{Read, Write};
    let state_err = |source| ExportError::State {
        path: state_dir.to_owned(),
        source,
    };
    std::fs::create_dir_all(state_dir).map_err(state_err)?;
    let path = state_dir.join("handle.key");
    match std::fs::File::open(&path) {
        Ok(mut f) => {
            let len = f.metadata().map_err(state_err)?.len();
            let mut key = [0u8; 16];
            if len != 16 {
                return Err(ExportError::BadKey { path, len });
            }
            f.read_exact(&mut key).map_err(state_err)?;
            Ok(key)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key: [u8; 16] = rand::random();
            let tmp = state_dir.join(format!("handle.key.{}", std::process::id()));
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode_0600()
                .open(&tmp)
                .map_err(state_err)?;
            f.write_all(&key).map_err(state_err)?;
            f.sync_all().map_err(state_err)?;
            // Another server starting at the same moment may have won:
            // keep whichever key landed first.
            match std::fs::hard_link(&tmp, &path) {
                Ok(()) => {
                    let _ = std::fs::remove_file(&tmp);
                    Ok(key)
                }
                Err(_) => {
                    let _ = std::fs::remove_file(&tmp);
                    read_or_make_key(state_dir)
                }
            }
        }
        Err(e) => Err(state_err(e)),
    }
}

trait Mode0600 {
    fn mode_0600(&mut self) -> &mut Self;
}
impl Mode0600 for std::fs::OpenOptions {
    fn mode_0600(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.mode(0o600)
    }
}
