//! Helpers shared by the CLI's integration tests: big-endian XDR words,
//! XDR arguments by hand ([`X`], [`Raw`]) and the status of a reply
//! ([`Status`]), and `rpcrdma nfs serve` started on free ports in a directory of its own.
#![allow(dead_code)] // each test file uses the part it needs

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use rpcrdma_oncrpc::{Marshal, Unmarshal};
use rpcrdma_xdr::{Decoder, Encoder, XdrError};

/// The `rpcrdma` binary under test.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_rpcrdma");

/// XDR words, big-endian, as bytes.
pub(crate) fn words(ws: &[u32]) -> Vec<u8> {
    ws.iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// Arguments as raw XDR (the client pads them to a multiple of 4).
pub(crate) struct Raw(pub(crate) Vec<u8>);
impl Marshal for Raw {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        enc.put_fixed_opaque(&self.0);
    }
}

/// The `nfsstat3` that starts every NFSv3 result; the rest is skipped.
#[derive(Debug, PartialEq)]
pub(crate) struct Status(pub(crate) u32);
impl Unmarshal for Status {
    fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        let s = dec.get_u32()?;
        let _ = dec.take_rest_bytes();
        Ok(Status(s))
    }
}

/// XDR by hand.
#[derive(Default, Clone)]
pub(crate) struct X(pub(crate) Vec<u8>);
impl X {
    pub(crate) fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub(crate) fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub(crate) fn fixed(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
    /// Variable-length opaque or string: length, bytes, padding.
    pub(crate) fn opaque(self, b: &[u8]) -> Self {
        let pad = (4 - b.len() % 4) % 4;
        self.u32(b.len() as u32).fixed(b).fixed(&[0; 3][..pad])
    }
    /// `sattr3` that sets nothing.
    pub(crate) fn no_sattr(self) -> Self {
        self.u32(0).u32(0).u32(0).u32(0).u32(0).u32(0)
    }
    pub(crate) fn dirop(self, fh: &[u8], name: &[u8]) -> Self {
        self.opaque(fh).opaque(name)
    }
}

/// `127.0.0.1:port`.
pub(crate) fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// A running `rpcrdma nfs serve` exporting `dir/export` (mode 0777), with
/// its state in `dir/state` and its standard error in `dir/server.log`;
/// killed and its directory removed when dropped.
pub(crate) struct NfsServed {
    pub(crate) child: Child,
    pub(crate) dir: PathBuf,
    /// Its RPC-over-RDMA (software iWARP), MOUNT and NFS-over-TCP ports
    /// (`tcp` 0 without `--tcp`).
    pub(crate) rdma: u16,
    pub(crate) mount: u16,
    pub(crate) tcp: u16,
    /// Its standard error.
    pub(crate) log: PathBuf,
}

impl NfsServed {
    /// Starts the server on free ports (`tag` names its directory; with
    /// `tcp`, NFS over TCP too), `extra` options appended.
    pub(crate) fn start(tag: &str, tcp: bool, extra: &[&str]) -> Self {
        Self::start_in(&std::env::temp_dir(), tag, tcp, extra)
    }

    /// [`NfsServed::start`] with the export's directory under `base`
    /// (`/dev/shm`: a memory-backed export).
    #[allow(dead_code)]
    pub(crate) fn start_in(base: &std::path::Path, tag: &str, tcp: bool, extra: &[&str]) -> Self {
        let dir = base.join(format!("rpcrdma-cli-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("export")).unwrap();
        std::fs::set_permissions(
            dir.join("export"),
            std::os::unix::fs::PermissionsExt::from_mode(0o777),
        )
        .unwrap();
        let log = dir.join("server.log");
        let mut cmd = Command::new(BIN);
        cmd.args(["nfs", "serve"]).arg(dir.join("export")).args([
            "--listen",
            "127.0.0.1:0",
            "--mount-port",
            "0",
        ]);
        if tcp {
            cmd.args(["--tcp", "127.0.0.1:0"]);
        }
        let mut child = cmd
            .arg("--state-dir")
            .arg(dir.join("state"))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("serving "), "{line}");
        Self {
            rdma: port_after(&line, "(software iWARP) on "),
            mount: port_after(&line, "MOUNT v3 on tcp "),
            tcp: if tcp {
                port_after(&line, "NFS over TCP on ")
            } else {
                0
            },
            child,
            dir,
            log,
        }
    }

    /// The exported directory.
    pub(crate) fn export(&self) -> PathBuf {
        self.dir.join("export")
    }

    /// The server's peak virtual and resident memory (`/proc/PID/status`).
    pub(crate) fn memory(&self) -> (u64, u64) {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kib = |key: &str| -> u64 {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{key} in /proc/PID/status"))
        };
        (kib("VmPeak:") << 10, kib("VmHWM:") << 10)
    }
}

impl Drop for NfsServed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The port of the address written after `after` in `line`.
fn port_after(line: &str, after: &str) -> u16 {
    let i = line
        .find(after)
        .unwrap_or_else(|| panic!("{after:?} in {line:?}"))
        + after.len();
    let addr: String = line[i..]
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != ',')
        .collect();
    addr.rsplit(':').next().unwrap().parse().unwrap()
}

/// The next ULPDU of an MPA stream without markers or CRC (what the test
/// peers negotiate): its payload after the 2-octet length, the padding and
/// the 4-octet CRC field read and dropped; `None` once the stream ends.
pub(crate) async fn read_ulpdu(rx: &mut (impl tokio::io::AsyncRead + Unpin)) -> Option<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let mut len = [0u8; 2];
    rx.read_exact(&mut len).await.ok()?;
    let n = usize::from(u16::from_be_bytes(len));
    let mut rest = vec![0u8; (2 + n).div_ceil(4) * 4 - 2 + 4];
    rx.read_exact(&mut rest).await.ok()?;
    rest.truncate(n);
    Some(rest)
}
