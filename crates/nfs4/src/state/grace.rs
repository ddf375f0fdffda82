//! The grace period after a restart (RFC 8881 §8.4.2) and the client
//! records kept on stable storage so that it can be offered.
//!
//! The server keeps the owners of its confirmed clients in
//! `STATE_DIR/nfs4-clients` (one hex-encoded `co_ownerid` per line under a
//! header line, rewritten whole with a rename whenever the set changes).
//! At start the file names the clients of the previous instance: during
//! the grace period (one lease by default) those may reclaim their opens
//! and locks (OPEN with `CLAIM_PREVIOUS`, LOCK with `reclaim`), and every
//! other OPEN and LOCK gets `NFS4ERR_GRACE`; a client ends its reclaim with
//! RECLAIM_COMPLETE (a second one is `NFS4ERR_COMPLETE_ALREADY`), and once
//! every previous client has, the grace period ends early. A client that
//! was not recorded, or has completed, gets `NFS4ERR_NO_GRACE` for a
//! reclaim.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use super::ids::ClientId;
use super::{CachedReply, State, StateError, StateResult};

/// The first line of the records file.
const HEADER: &str = "rpcrdma-nfs4-clients 1";

/// The most records read back (a larger file is cut there).
const MAX_RECORDS: usize = 65_536;

impl<R: CachedReply> State<R> {
    /// Whether the grace period is on.
    pub fn in_grace(&self, now: Instant) -> bool {
        self.grace.active(now)
    }

    /// Whether `client` may reclaim now: the grace period is on, it was a
    /// client of the previous instance, and it has not completed.
    pub(crate) fn may_reclaim(&self, client: ClientId, now: Instant) -> StateResult<()> {
        let c = self.client(client)?;
        if !self.grace.active(now)
            || !self.grace.may(&c.owner)
            || self.grace.completed.contains(&client)
        {
            return Err(StateError::NoGrace);
        }
        Ok(())
    }

    /// A non-reclaim OPEN or LOCK: refused during the grace period.
    pub(crate) fn not_in_grace(&self, now: Instant) -> StateResult<()> {
        if self.grace.active(now) {
            Err(StateError::Grace)
        } else {
            Ok(())
        }
    }

    /// Once, when a grace period has ended: how many of the previous
    /// instance's clients came back and completed, of how many, and the
    /// opens and locks they reclaimed.
    pub fn grace_ended(&mut self) -> Option<(usize, usize, u64)> {
        if !self.grace.over || self.grace.reported {
            return None;
        }
        self.grace.reported = true;
        let back = self.grace.previous - self.grace.pending.len();
        Some((back, self.grace.previous, self.grace.reclaims))
    }

    /// RECLAIM_COMPLETE (RFC 8881 §18.51) for the whole server
    /// (`rca_one_fs` false).
    pub fn reclaim_complete(&mut self, client: ClientId) -> StateResult<()> {
        let owner = self.client(client)?.owner.clone();
        if !self.grace.completed.insert(client) {
            return Err(StateError::CompleteAlready);
        }
        if self.grace.pending.remove(&owner) {
            self.clients.dirty = true;
        }
        if self.grace.pending.is_empty() {
            self.grace.over = true;
        }
        Ok(())
    }
}

/// Reads the records file: the owners of the previous instance's
/// clients. A missing file is none; a damaged one is read up to the first
/// bad line (logged).
pub fn load_records(path: &Path) -> std::io::Result<Vec<Vec<u8>>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut lines = text.lines();
    if lines.next() != Some(HEADER) {
        tracing::warn!(path = %path.display(), "not an NFSv4 client records file; no client may reclaim");
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for l in lines.take(MAX_RECORDS) {
        match decode_hex(l.trim()) {
            Some(owner) if !owner.is_empty() => out.push(owner),
            _ => {
                tracing::warn!(path = %path.display(), "a damaged NFSv4 client record; the rest is ignored");
                break;
            }
        }
    }
    Ok(out)
}

/// Writes the records file whole (a temporary file, synced, renamed over
/// the old one, the directory synced).
pub fn save_records(path: &Path, owners: &[Vec<u8>]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp)?;
        let mut text = String::with_capacity(32 + owners.len() * 64);
        text.push_str(HEADER);
        text.push('\n');
        for o in owners {
            for b in o {
                text.push_str(&format!("{b:02x}"));
            }
            text.push('\n');
        }
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 || s.len() > 2048 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_damage_stops_the_read() {
        let dir = std::env::temp_dir().join(format!("rpcrdma-nfs4-grace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("nfs4-clients");
        assert!(load_records(&path).unwrap().is_empty());
        let owners = vec![b"Linux NFSv4.1 guest".to_vec(), vec![0, 255, 7]];
        save_records(&path, &owners).unwrap();
        assert_eq!(load_records(&path).unwrap(), owners);
        std::fs::write(&path, format!("{HEADER}\n0a0b\nzz\n0c\n")).unwrap();
        assert_eq!(load_records(&path).unwrap(), vec![vec![10, 11]]);
        std::fs::write(&path, "something else\n0a\n").unwrap();
        assert!(load_records(&path).unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
