//! Who a call acts as: AUTH_SYS identities, squashing, and running file
//! operations under them.
//!
//! A server running as root acts **as the caller**: for the duration of
//! one operation the calling thread's effective uid, gid and supplementary
//! groups are switched (per thread: Linux credentials are per task, and
//! the raw system calls do not broadcast to other threads as the C
//! library's do), so the kernel itself checks permissions, applies the
//! sticky bit and ACLs, and new files belong to the caller. They are
//! switched back before the thread does anything else, also on panic.
//!
//! A server running as another user cannot switch; every caller then acts
//! as that user ([`IdentityMode::ServerUser`]).

use rustix::fs::{Gid, Uid};

/// What identities the export maps callers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Squash {
    /// uid 0 becomes the anonymous uid and gid 0 the anonymous gid (also
    /// among the supplementary groups). The default, as for the Linux NFS
    /// server.
    #[default]
    Root,
    /// Callers keep their identity, root included.
    None,
    /// Every caller is the anonymous user.
    All,
}

/// How operations run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdentityMode {
    /// Switch the thread to the caller's identity (needs root).
    Switch,
    /// Run as the server's own user, whoever calls.
    ServerUser,
}

impl IdentityMode {
    /// `Switch` when running as root, else `ServerUser`.
    pub fn detect() -> Self {
        if rustix::process::geteuid().is_root() {
            Self::Switch
        } else {
            Self::ServerUser
        }
    }
}

/// The identity an operation runs as, after squashing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// User.
    pub uid: u32,
    /// Primary group.
    pub gid: u32,
    /// Supplementary groups (AUTH_SYS allows 16).
    pub groups: Vec<u32>,
}

impl Caller {
    /// Whether this is the superuser.
    pub fn is_root(&self) -> bool {
        self.uid == 0
    }

    /// Whether the caller is in group `gid`.
    pub fn in_group(&self, gid: u32) -> bool {
        self.gid == gid || self.groups.contains(&gid)
    }
}

/// Maps a call's credential to the identity it acts as.
///
/// ```
/// use rpcrdma_nfs3::fs::{squash, Squash};
/// let c = squash(Squash::Root, (65534, 65534), Some((0, 0, &[0, 10])));
/// assert_eq!((c.uid, c.gid, c.groups), (65534, 65534, vec![65534, 10]));
/// let anon = squash(Squash::Root, (65534, 65534), None); // AUTH_NONE
/// assert_eq!(anon.uid, 65534);
/// ```
pub fn squash(how: Squash, anon: (u32, u32), cred: Option<(u32, u32, &[u32])>) -> Caller {
    let anon_caller = Caller {
        uid: anon.0,
        gid: anon.1,
        groups: Vec::new(),
    };
    let Some((uid, gid, groups)) = cred else {
        return anon_caller;
    };
    match how {
        Squash::All => anon_caller,
        Squash::None => Caller {
            uid,
            gid,
            groups: groups.to_vec(),
        },
        Squash::Root => Caller {
            uid: if uid == 0 { anon.0 } else { uid },
            gid: if gid == 0 { anon.1 } else { gid },
            groups: groups
                .iter()
                .map(|&g| if g == 0 { anon.1 } else { g })
                .collect(),
        },
    }
}

/// While alive, the current thread acts as a caller; dropping it switches
/// back to root.
pub(crate) struct Acting {
    switched: bool,
    uid: u32,
}

impl Acting {
    /// Switches the current thread to `caller` (in `Switch` mode).
    pub(crate) fn start(mode: IdentityMode, caller: &Caller) -> rustix::io::Result<Self> {
        if mode == IdentityMode::ServerUser {
            return Ok(Self {
                switched: false,
                uid: caller.uid,
            });
        }
        let groups: Vec<Gid> = caller.groups.iter().map(|&g| Gid::from_raw(g)).collect();
        // From here on, dropping `me` switches back whatever succeeded.
        let me = Self {
            switched: true,
            uid: caller.uid,
        };
        // Groups and gid first, while we are still root; uid last.
        rustix::thread::set_thread_groups(&groups)?;
        rustix::thread::set_thread_res_gid(None, Gid::from_raw(caller.gid), None)?;
        rustix::thread::set_thread_res_uid(None, Uid::from_raw(caller.uid), None)?;
        Ok(me)
    }

    /// Runs `f` as root again (the owner-override cases of the NFS
    /// server: the owner of a file may write it whatever its mode), then
    /// acts as the caller again.
    pub(crate) fn as_root<T>(&self, f: impl FnOnce() -> T) -> T {
        if !self.switched {
            return f();
        }
        if rustix::thread::set_thread_res_uid(None, Uid::ROOT, None).is_err() {
            return f();
        }
        let out = f();
        if rustix::thread::set_thread_res_uid(None, Uid::from_raw(self.uid), None).is_err() {
            tracing::error!("cannot switch a thread back to the caller; aborting");
            std::process::abort();
        }
        out
    }

    /// Whether the thread really switched (the server runs as root).
    pub(crate) fn switched(&self) -> bool {
        self.switched
    }
}

impl Drop for Acting {
    fn drop(&mut self) {
        if !self.switched {
            return;
        }
        // Root first (restores the capabilities), then gid and groups.
        // Failure here would leave a thread with a foreign identity:
        // abort rather than serve anything under it.
        let ok = rustix::thread::set_thread_res_uid(None, Uid::ROOT, None).is_ok()
            && rustix::thread::set_thread_res_gid(None, Gid::ROOT, None).is_ok()
            && rustix::thread::set_thread_groups(&[]).is_ok();
        if !ok {
            tracing::error!("cannot switch a thread back to root; aborting");
            std::process::abort();
        }
    }
}
