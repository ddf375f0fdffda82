//! Helpers shared by the CLI's integration tests: big-endian XDR words,
//! and `rpcrdma nfs serve` started on free ports in a directory of its own.
#![allow(dead_code)] // each test file uses the part it needs

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The `rpcrdma` binary under test.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_rpcrdma");

/// XDR words, big-endian, as bytes.
pub(crate) fn words(ws: &[u32]) -> Vec<u8> {
    ws.iter().flat_map(|w| w.to_be_bytes()).collect()
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
        let dir = std::env::temp_dir().join(format!("rpcrdma-cli-{tag}-{}", std::process::id()));
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
