//! Which clients may use which export, and how: the exports table.
//!
//! [`ExportsFile`] reads the administrator's file (the syntax of Linux's
//! `/etc/exports`, `file.rs`); [`ExportTable::open`] opens each directory
//! it names as an [`Export`] (all under one state directory, so one
//! handle key: a handle names its export by the export id in it) and
//! resolves host names; [`Exports`] holds the table in force, which a
//! reload replaces while calls go on ([`Exports::replace`]: an export
//! that stays keeps its open [`Export`], so its handles, caches and write
//! verifier live on).
//!
//! Every NFS call is admitted before any file-system work
//! ([`Exports::admit`]): the handle's MAC is checked (`BADHANDLE`), its
//! export looked up (`STALE` if it is no longer exported), then the
//! client's address (the connection's peer: the TCP peer, or the
//! RPC-over-RDMA connection's) matched against the export's clients, the
//! most specific pattern first (an address or host name, then networks by
//! prefix length, then `*`). A client no pattern matches is refused
//! (`NFS3ERR_ACCES`, `MNT3ERR_ACCES`, `NFS4ERR_ACCESS`) and a warning is
//! logged (once a minute per client and export); it gets no data, handle
//! or attribute. An admitted call acts as its client's options say:
//! `ro`/`rw`, squashing and anonymous ids ([`Export::caller_with`]).

pub mod file;

use std::collections::HashMap;
use std::net::{IpAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use rpcrdma_sync::lock;

pub use file::{ClientSpec, ExportLine, ExportsError, ExportsFile, Rule, Warning};

use crate::fs::{ClientAccess, Export, ExportConfig, FileHandle, NfsError, NfsResult};

/// One client pattern with the addresses its host name resolved to.
#[derive(Debug, Clone)]
struct Resolved {
    client: ClientSpec,
    addrs: Vec<IpAddr>,
    access: ClientAccess,
}

impl Resolved {
    fn matches(&self, ip: Option<IpAddr>) -> bool {
        match (&self.client, ip) {
            (ClientSpec::Any, _) => true,
            (_, None) => false,
            (ClientSpec::Addr(a), Some(ip)) => *a == ip,
            (ClientSpec::Net(n, p), Some(ip)) => file::in_network(ip, *n, *p),
            (ClientSpec::Host(_), Some(ip)) => self.addrs.contains(&ip),
        }
    }
}

/// One exported directory: the export, the paths MOUNT knows it by and
/// its clients.
#[derive(Debug)]
pub struct Entry {
    export: Arc<Export>,
    /// Paths a client mounts it by (the first is the one listed).
    names: Vec<Vec<u8>>,
    /// Most specific first.
    rules: Vec<Resolved>,
}

impl Entry {
    /// The export.
    pub fn export(&self) -> &Arc<Export> {
        &self.export
    }

    /// The path clients mount (as the exports file gives it; `/` for a
    /// single directory served from the command line).
    pub fn path(&self) -> &[u8] {
        &self.names[0]
    }

    /// The path, for messages.
    pub fn path_display(&self) -> String {
        String::from_utf8_lossy(self.path()).into_owned()
    }

    /// The client patterns, most specific first.
    pub fn clients(&self) -> impl Iterator<Item = &ClientSpec> {
        self.rules.iter().map(|r| &r.client)
    }

    /// What a client at `ip` may do here (`None`: it is not listed; an
    /// unknown address matches only `*`).
    pub fn access(&self, ip: Option<IpAddr>) -> Option<ClientAccess> {
        let ip = ip.map(|a| a.to_canonical());
        self.rules.iter().find(|r| r.matches(ip)).map(|r| r.access)
    }
}

/// What MOUNT of a path comes to.
#[derive(Debug)]
pub enum MountTarget<'a> {
    /// The client may mount it: the export and the path inside it.
    Allowed {
        /// The export.
        entry: &'a Entry,
        /// The path below the export's root (`/`-separated, possibly
        /// empty).
        inside: Vec<u8>,
    },
    /// The path is exported, but not to this client.
    Refused(&'a Entry),
    /// No export holds the path.
    NotExported,
}

/// The exports in force: every exported directory with its clients.
#[derive(Debug)]
pub struct ExportTable {
    entries: Vec<Entry>,
    single: bool,
}

/// Normalizes a path a client sent: `None` if it is not absolute or has a
/// `..` component; `.` and empty components dropped.
fn client_path(path: &[u8]) -> Option<Vec<u8>> {
    if !path.starts_with(b"/") {
        return None;
    }
    let mut out = Vec::with_capacity(path.len());
    for comp in path
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty() && *c != b".")
    {
        if comp == b".." {
            return None;
        }
        out.push(b'/');
        out.extend_from_slice(comp);
    }
    if out.is_empty() {
        out.push(b'/');
    }
    Some(out)
}

fn path_bytes(p: &Path) -> Vec<u8> {
    p.as_os_str().as_encoded_bytes().to_vec()
}

impl ExportTable {
    /// One directory served to every client as its configuration says
    /// (the command line's form): MOUNT knows it as `/` and by its own
    /// path, and NFSv4's root is its root.
    pub fn single(export: Arc<Export>) -> Self {
        let access = export.default_access();
        let names = vec![b"/".to_vec(), path_bytes(export.root_path())];
        Self {
            entries: vec![Entry {
                export,
                names,
                rules: vec![Resolved {
                    client: ClientSpec::Any,
                    addrs: Vec::new(),
                    access,
                }],
            }],
            single: true,
        }
    }

    /// Opens the exports of `file`, each with the settings of `base`
    /// (its state directory, identity mode and bounds; its root is
    /// ignored, its `read_only`, `squash` and `anon` give way to each
    /// client's options). An export that `previous` holds (the same
    /// canonical directory) is kept as it is, so a reload leaves its
    /// clients' handles, caches and write verifier alone. Host names are
    /// resolved now; one that does not resolve is a warning and matches
    /// no client. Errors name the line.
    pub fn open(
        file: &ExportsFile,
        base: &ExportConfig,
        previous: Option<&ExportTable>,
    ) -> Result<(Self, Vec<Warning>), ExportsError> {
        let mut warnings = file.warnings.clone();
        let mut entries: Vec<Entry> = Vec::new();
        for line in &file.exports {
            let fail = |message: String| ExportsError {
                line: line.line,
                message,
            };
            let canon = std::fs::canonicalize(&line.path).map_err(|e| {
                fail(format!(
                    "cannot export {}: {e} (it must be an existing directory)",
                    line.path.display()
                ))
            })?;
            let kept = previous.and_then(|t| {
                t.entries
                    .iter()
                    .find(|e| e.export.root_path() == canon)
                    .map(|e| e.export.clone())
            });
            let export =
                match kept {
                    Some(e) => e,
                    None => {
                        let mut cfg = base.clone();
                        cfg.root = canon.clone();
                        cfg.read_only = false;
                        Arc::new(Export::open(cfg).map_err(|e| {
                            fail(format!("cannot export {}: {e}", line.path.display()))
                        })?)
                    }
                };
            if let Some(other) = entries
                .iter()
                .find(|e| e.export.root_path() == export.root_path())
            {
                return Err(fail(format!(
                    "{} is the directory {} exported as {} already: export it once",
                    line.path.display(),
                    canon.display(),
                    other.path_display()
                )));
            }
            if let Some(other) = entries
                .iter()
                .find(|e| e.export.export_id() == export.export_id())
            {
                return Err(fail(format!(
                    "{} and {} have the same export id (a keyed hash of the path, {:#010x}); rename one of the directories",
                    line.path.display(),
                    other.path_display(),
                    export.export_id()
                )));
            }
            let mut rules = Vec::with_capacity(line.rules.len());
            for r in &line.rules {
                export.valid_anon(r.access.anon).map_err(|e| ExportsError {
                    line: r.line,
                    message: format!("client {} of {}: {e}", r.client, line.path.display()),
                })?;
                let addrs = match &r.client {
                    ClientSpec::Host(h) => {
                        let addrs: Vec<IpAddr> = match (h.as_str(), 0).to_socket_addrs() {
                            Ok(a) => a.map(|a| a.ip().to_canonical()).collect(),
                            Err(_) => Vec::new(),
                        };
                        if addrs.is_empty() {
                            warnings.push(Warning {
                                line: r.line,
                                message: format!(
                                    "host `{h}` does not resolve: it matches no client until the exports are read again (SIGHUP)"
                                ),
                            });
                        } else {
                            tracing::debug!(host = %h, ?addrs, "exports: host name resolved");
                        }
                        addrs
                    }
                    _ => Vec::new(),
                };
                rules.push(Resolved {
                    client: r.client.clone(),
                    addrs,
                    access: r.access,
                });
            }
            // Most specific first; the order written among equals.
            rules.sort_by_key(|r| std::cmp::Reverse(r.client.rank()));
            let mut names = vec![path_bytes(&line.path)];
            if canon != line.path {
                names.push(path_bytes(&canon));
            }
            entries.push(Entry {
                export,
                names,
                rules,
            });
        }
        if entries.is_empty() {
            return Err(ExportsError {
                line: 0,
                message: "the exports file lists no export: add a line such as `/srv/data 192.0.2.0/24(rw)`".into(),
            });
        }
        Ok((
            Self {
                entries,
                single: false,
            },
            warnings,
        ))
    }

    /// The exports.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Whether this is one directory from the command line (NFSv4's root
    /// is then its root) rather than an exports file.
    pub fn is_single(&self) -> bool {
        self.single
    }

    /// The export whose handles carry `id`.
    pub fn by_id(&self, id: u32) -> Option<&Entry> {
        self.entries.iter().find(|e| e.export.export_id() == id)
    }

    /// The export a handle of ours names (`BADHANDLE` if it is not one of
    /// ours, `STALE` if its export is not served any more).
    pub fn by_handle(&self, fh: &FileHandle) -> NfsResult<&Entry> {
        let first = self.entries.first().ok_or(NfsError::Stale)?;
        let id = first.export.export_of(fh)?;
        self.by_id(id).ok_or(NfsError::Stale)
    }

    /// What MOUNT of `path` comes to for a client at `ip`: the deepest
    /// export holding the path that admits the client.
    pub fn mount(&self, path: &[u8], ip: Option<IpAddr>) -> MountTarget<'_> {
        let Some(path) = client_path(path) else {
            return MountTarget::NotExported;
        };
        let mut found: Vec<(usize, &Entry, Vec<u8>)> = Vec::new();
        for e in &self.entries {
            for name in &e.names {
                let inside = if name == b"/" {
                    Some(path.clone())
                } else if path == *name {
                    Some(Vec::new())
                } else if path.starts_with(name) && path[name.len()] == b'/' {
                    Some(path[name.len()..].to_vec())
                } else {
                    None
                };
                if let Some(inside) = inside {
                    found.push((name.len(), e, inside));
                }
            }
        }
        found.sort_by_key(|f| std::cmp::Reverse(f.0));
        let Some(first) = found.first().map(|f| f.1) else {
            return MountTarget::NotExported;
        };
        for (_, entry, inside) in found {
            if entry.access(ip).is_some() {
                return MountTarget::Allowed { entry, inside };
            }
        }
        MountTarget::Refused(first)
    }
}

/// What an admitted call works on.
#[derive(Debug, Clone)]
pub struct Admitted {
    /// The export the handle names.
    pub export: Arc<Export>,
    /// What the client may do there.
    pub access: ClientAccess,
}

/// How often a refusal of one client for one export is logged as a
/// warning (the rest go to the debug log).
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(60);
/// Most (client, export) pairs remembered for that.
const REFUSAL_LOG_KEYS: usize = 4096;

/// When a refusal of a client (by address) for an export (by path) was
/// last logged as a warning.
type RefusalLog = HashMap<(Option<IpAddr>, Vec<u8>), Instant>;

/// The exports in force, replaceable while the server runs.
#[derive(Debug)]
pub struct Exports {
    table: RwLock<Arc<ExportTable>>,
    logged: Mutex<RefusalLog>,
    refusals: AtomicU64,
}

impl Exports {
    /// Serves `table`.
    pub fn new(table: ExportTable) -> Self {
        Self {
            table: RwLock::new(Arc::new(table)),
            logged: Mutex::new(HashMap::new()),
            refusals: AtomicU64::new(0),
        }
    }

    /// One directory for every client, as its configuration says.
    pub fn single(export: Arc<Export>) -> Self {
        Self::new(ExportTable::single(export))
    }

    /// The table in force.
    pub fn table(&self) -> Arc<ExportTable> {
        self.table
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Puts `table` in force (calls already admitted finish under the
    /// old one); returns the old one.
    pub fn replace(&self, table: ExportTable) -> Arc<ExportTable> {
        let mut t = self
            .table
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        std::mem::replace(&mut *t, Arc::new(table))
    }

    /// Admits a call on `fh` from a client at `ip` (`what` names the
    /// operation for the log): the export and what the client may do
    /// there, or the status to answer (`BADHANDLE`, `STALE`, `ACCES`),
    /// before anything touches a file.
    pub fn admit(&self, fh: &FileHandle, ip: Option<IpAddr>, what: &str) -> NfsResult<Admitted> {
        let table = self.table();
        let entry = table.by_handle(fh)?;
        match entry.access(ip) {
            Some(access) => Ok(Admitted {
                export: entry.export.clone(),
                access,
            }),
            None => {
                self.refused(ip, entry, what);
                Err(NfsError::Acces)
            }
        }
    }

    /// How many calls were refused since the start ([`Self::refused`]).
    pub fn refusals(&self) -> u64 {
        self.refusals.load(Ordering::Relaxed)
    }

    /// Counts and logs a refusal: a warning the first time in a minute for
    /// this client and export, else at debug level.
    pub fn refused(&self, ip: Option<IpAddr>, entry: &Entry, what: &str) {
        self.refusals.fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        let key = (ip, entry.path().to_vec());
        let warn = {
            let mut logged = lock(&self.logged);
            if logged.len() >= REFUSAL_LOG_KEYS {
                logged.retain(|_, t| now.duration_since(*t) < REFUSAL_LOG_EVERY);
                if logged.len() >= REFUSAL_LOG_KEYS {
                    logged.clear();
                }
            }
            match logged.get(&key) {
                Some(t) if now.duration_since(*t) < REFUSAL_LOG_EVERY => false,
                _ => {
                    logged.insert(key, now);
                    true
                }
            }
        };
        let client = ip.map_or_else(|| "(unknown address)".to_owned(), |a| a.to_string());
        let export = entry.path_display();
        if warn {
            tracing::warn!(%client, %export, what, "access refused: the exports do not list this client for this export");
        } else {
            tracing::debug!(%client, %export, what, "access refused");
        }
    }
}
