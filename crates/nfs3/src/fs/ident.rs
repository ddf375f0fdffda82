//! Who a call acts as: AUTH_SYS identities, their validation, squashing,
//! and running file operations under them.
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
//!
//! # The rules (`docs/nfs.md`, "Identities")
//!
//! 1. **Validation.** An id the server cannot act as becomes the anonymous
//!    id, whatever the squashing: `0xFFFFFFFF` (`(uid_t)-1`, which
//!    `setresuid`/`setresgid` read as "leave unchanged", so switching to
//!    it would leave the thread root), and any id outside the server's
//!    user namespace (`/proc/self/uid_map`, `gid_map`: the kernel refuses
//!    to switch to those). An invalid primary id becomes the anonymous
//!    uid or gid (as Linux nfsd maps `INVALID_UID`); an invalid
//!    supplementary gid is dropped (it could grant nothing).
//! 2. **Squashing** ([`Squash`]): root squashing maps uid 0 to the
//!    anonymous uid and gid 0, primary or supplementary, to the anonymous
//!    gid, as nfsd's `root_squash`; `all_squash` maps every caller.
//! 3. **Checked switch.** After switching, the thread's effective uid, gid
//!    and groups are read back from the kernel; any difference (a switch
//!    that failed or did nothing) refuses the call (`NFS3ERR_SERVERFAULT`,
//!    logged) before any file is touched. Switching back failing aborts
//!    the process.

use rustix::fs::{Gid, Uid};

/// The id `setresuid`/`setresgid`/`chown` read as "no change": never an
/// identity anyone acts as.
pub const INVALID_ID: u32 = u32::MAX;

/// A set of ids, as ranges: the ids of a user namespace
/// (`/proc/self/uid_map`, `gid_map`), never [`INVALID_ID`].
///
/// ```
/// use rpcrdma_nfs3::fs::IdRanges;
/// let init = IdRanges::parse("         0          0 4294967295\n");
/// assert!(init.contains(0) && init.contains(4_294_967_294));
/// assert!(!init.contains(u32::MAX));
/// let container = IdRanges::parse("0 100000 65536\n");
/// assert!(container.contains(65535) && !container.contains(65536));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdRanges {
    /// `(first, count)` pairs.
    ranges: Vec<(u32, u64)>,
}

impl IdRanges {
    /// Every id but [`INVALID_ID`] (the initial user namespace).
    pub fn all() -> Self {
        Self {
            ranges: vec![(0, u64::from(u32::MAX))],
        }
    }

    /// Parses a `uid_map`/`gid_map` (lines of `inside outside count`; only
    /// the ids inside matter here). Lines that do not parse are ignored; a
    /// map without a valid line allows no id.
    pub fn parse(map: &str) -> Self {
        let ranges = map
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace().map(str::parse::<u64>);
                let first = u32::try_from(f.next()?.ok()?).ok()?;
                let _outside = f.next()?.ok()?;
                let count = f.next()?.ok()?;
                Some((first, count))
            })
            .collect();
        Self { ranges }
    }

    /// The ids of this process's user namespace, from `path`
    /// (`/proc/self/uid_map` or `gid_map`); every id but [`INVALID_ID`] if
    /// the file cannot be read (no user namespaces in the kernel).
    pub fn of_namespace(path: &str) -> Self {
        match std::fs::read_to_string(path) {
            Ok(map) => Self::parse(&map),
            Err(_) => Self::all(),
        }
    }

    /// Whether `id` is one a thread can switch to.
    pub fn contains(&self, id: u32) -> bool {
        id != INVALID_ID
            && self
                .ranges
                .iter()
                .any(|&(first, count)| id >= first && u64::from(id - first) < count)
    }
}

/// The uids and gids a server can act as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdMaps {
    /// User ids.
    pub uids: IdRanges,
    /// Group ids.
    pub gids: IdRanges,
}

impl IdMaps {
    /// Every id but [`INVALID_ID`].
    pub fn all() -> Self {
        Self {
            uids: IdRanges::all(),
            gids: IdRanges::all(),
        }
    }

    /// This process's user namespace (`/proc/self/uid_map`, `gid_map`).
    pub fn current() -> Self {
        Self {
            uids: IdRanges::of_namespace("/proc/self/uid_map"),
            gids: IdRanges::of_namespace("/proc/self/gid_map"),
        }
    }
}

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

/// What one client may do with an export: the options of its line in
/// the exports file (`rw`/`ro`, the squashing, `anonuid`/`anongid`), or
/// the command line's for a single directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAccess {
    /// Every change refused (`ro`).
    pub read_only: bool,
    /// The identity mapping.
    pub squash: Squash,
    /// The anonymous user and group.
    pub anon: (u32, u32),
}

impl Default for ClientAccess {
    /// `ro`, `root_squash`, anonymous 65534/65534: the defaults of an
    /// exports file line, as Linux's.
    fn default() -> Self {
        Self {
            read_only: true,
            squash: Squash::Root,
            anon: (65534, 65534),
        }
    }
}

/// The identity an operation runs as, after squashing, with what its
/// client may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// User.
    pub uid: u32,
    /// Primary group.
    pub gid: u32,
    /// Supplementary groups (AUTH_SYS allows 16).
    pub groups: Vec<u32>,
    /// The client may change nothing (its export is `ro` for it):
    /// every change is `NFS3ERR_ROFS`.
    pub read_only: bool,
    /// The caller acts as the anonymous user because of squashing or
    /// AUTH_NONE: the set-user-ID and set-group-ID bits it sets are
    /// dropped (`docs/nfs.md`, "What a client's numbers may do").
    pub anonymous: bool,
}

impl Caller {
    /// A caller acting as exactly these ids, allowed to change files, not
    /// anonymous (tests, and servers that map identities themselves).
    pub fn new(uid: u32, gid: u32, groups: Vec<u32>) -> Self {
        Self {
            uid,
            gid,
            groups,
            read_only: false,
            anonymous: false,
        }
    }

    /// Whether this is the superuser.
    pub fn is_root(&self) -> bool {
        self.uid == 0
    }

    /// Whether the caller is in group `gid`.
    pub fn in_group(&self, gid: u32) -> bool {
        self.gid == gid || self.groups.contains(&gid)
    }
}

/// Maps a call's credential to the identity it acts as, with every id but
/// [`INVALID_ID`] valid ([`squash_in`] with [`IdMaps::all`]).
///
/// ```
/// use rpcrdma_nfs3::fs::{squash, Squash};
/// let c = squash(Squash::Root, (65534, 65534), Some((0, 0, &[0, 10])));
/// assert_eq!((c.uid, c.gid, c.groups), (65534, 65534, vec![65534, 10]));
/// let anon = squash(Squash::Root, (65534, 65534), None); // AUTH_NONE
/// assert_eq!(anon.uid, 65534);
/// // (uid_t)-1 is nobody, whatever the squashing.
/// let c = squash(Squash::None, (65534, 65534), Some((u32::MAX, u32::MAX, &[u32::MAX, 7])));
/// assert_eq!((c.uid, c.gid, c.groups), (65534, 65534, vec![7]));
/// ```
pub fn squash(how: Squash, anon: (u32, u32), cred: Option<(u32, u32, &[u32])>) -> Caller {
    squash_in(&IdMaps::all(), how, anon, cred)
}

/// Maps a call's credential to the identity it acts as: ids outside `maps`
/// (and [`INVALID_ID`]) are invalid and become the anonymous id (a
/// supplementary gid is dropped), then `how` squashes (the rules:
/// `docs/nfs.md`, "Identities: the rules"). `None` (AUTH_NONE, or any other flavor) is the
/// anonymous user. The caller is marked [`Caller::anonymous`] when it
/// acts as the anonymous uid and squashing is on (or AUTH_NONE, or
/// `all_squash`).
pub fn squash_in(
    maps: &IdMaps,
    how: Squash,
    anon: (u32, u32),
    cred: Option<(u32, u32, &[u32])>,
) -> Caller {
    let anon_caller = Caller {
        uid: anon.0,
        gid: anon.1,
        groups: Vec::new(),
        read_only: false,
        anonymous: true,
    };
    let Some((uid, gid, groups)) = cred else {
        return anon_caller;
    };
    if how == Squash::All {
        return anon_caller;
    }
    let squash_root = how == Squash::Root;
    let uid = if !maps.uids.contains(uid) || (squash_root && uid == 0) {
        anon.0
    } else {
        uid
    };
    let map_gid = |g: u32| {
        if squash_root && g == 0 {
            anon.1
        } else {
            g
        }
    };
    let gid = if maps.gids.contains(gid) {
        map_gid(gid)
    } else {
        anon.1
    };
    let mut out: Vec<u32> = Vec::with_capacity(groups.len());
    for &g in groups {
        if !maps.gids.contains(g) {
            continue;
        }
        let g = map_gid(g);
        if !out.contains(&g) {
            out.push(g);
        }
    }
    Caller {
        uid,
        gid,
        groups: out,
        read_only: false,
        anonymous: how != Squash::None && uid == anon.0,
    }
}

/// Why the thread could not act as a caller.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SwitchError {
    /// A credential system call failed.
    #[error(transparent)]
    Sys(#[from] rustix::io::Errno),
    /// The calls returned but the thread is not who it should be (a
    /// switch the kernel did not make).
    #[error("after the switch the thread is uid {euid} gid {egid} groups {groups:?}")]
    Mismatch {
        /// Effective uid read back.
        euid: u32,
        /// Effective gid read back.
        egid: u32,
        /// Supplementary groups read back.
        groups: Vec<u32>,
    },
}

/// While alive, the current thread acts as a caller; dropping it switches
/// back to root.
pub(crate) struct Acting {
    switched: bool,
    uid: u32,
}

impl Acting {
    /// Switches the current thread to `caller` (in `Switch` mode), then
    /// reads its credentials back: a switch that failed or did nothing is
    /// an error (and the thread is root again), never a call run as root.
    pub(crate) fn start(mode: IdentityMode, caller: &Caller) -> Result<Self, SwitchError> {
        if mode == IdentityMode::ServerUser {
            return Ok(Self {
                switched: false,
                uid: caller.uid,
            });
        }
        if caller.uid == INVALID_ID
            || caller.gid == INVALID_ID
            || caller.groups.contains(&INVALID_ID)
        {
            // squash_in never makes one; a caller built by hand might.
            return Err(rustix::io::Errno::INVAL.into());
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
        // The kernel's word, per thread (raw system calls).
        let euid = rustix::process::geteuid().as_raw();
        let egid = rustix::process::getegid().as_raw();
        let mut now: Vec<u32> = rustix::process::getgroups()?
            .into_iter()
            .map(Gid::as_raw)
            .collect();
        now.sort_unstable();
        now.dedup();
        let mut want = caller.groups.clone();
        want.sort_unstable();
        want.dedup();
        if euid != caller.uid || egid != caller.gid || now != want {
            return Err(SwitchError::Mismatch {
                euid,
                egid,
                groups: now,
            });
        }
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
