//! The errors a person sees, as the binary prints them for the common
//! failures: nobody listening, no such export, a bad address, a device
//! that is not there. Each cause reads once (a library error that prints
//! its source and also returns it would otherwise show it twice), and the
//! message names what to do.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

/// The `rpcrdma` binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_rpcrdma");

/// Runs `rpcrdma ARGS` and returns its output.
fn rpcrdma(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

/// Standard output and standard error, together.
fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `cause` appears exactly once in `text`, and so does `fix`.
fn once(text: &str, cause: &str, fix: &str) {
    assert_eq!(text.matches(cause).count(), 1, "{cause:?} once in:\n{text}");
    assert_eq!(text.matches(fix).count(), 1, "{fix:?} once in:\n{text}");
}

/// A port nobody listens on (bound, then released).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn connection_refused_reads_once_and_asks_for_a_server() {
    let at = format!("127.0.0.1:{}", closed_port());
    // RPC-over-RDMA: `call` reports a failed call on standard output.
    let out = rpcrdma(&["call", &at, "demo", "null"]);
    assert!(!out.status.success());
    let t = text(&out);
    once(
        &t,
        "Connection refused",
        "is an RPC-over-RDMA server listening there?",
    );
    assert!(t.contains(&at), "{t}");
    // ONC RPC over TCP.
    let out = rpcrdma(&["call", "--transport", "tcp", &at, "demo", "null"]);
    assert!(!out.status.success());
    once(
        &text(&out),
        "Connection refused",
        "is an ONC RPC server listening there?",
    );
    // probe
    let out = rpcrdma(&["probe", &at]);
    assert!(!out.status.success());
    once(
        &text(&out),
        "Connection refused",
        "is an RPC-over-RDMA server listening there?",
    );
    // The fix comes last, after the cause.
    let t = text(&out);
    assert!(
        t.find("Connection refused") < t.find("is an RPC-over-RDMA server"),
        "{t}"
    );
}

#[test]
fn a_bad_address_reads_once_and_shows_the_form() {
    for (addr, cause) in [
        ("127.0.0.1", "invalid socket address"),
        ("no-such-host.invalid:20049", "no-such-host.invalid"),
    ] {
        let out = rpcrdma(&["call", addr, "demo", "null"]);
        assert!(!out.status.success());
        let t = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(t.starts_with("rpcrdma: error: cannot resolve"), "{t}");
        once(&t, cause, "give HOST:PORT, e.g. 127.0.0.1:20049");
    }
    let out = rpcrdma(&["nfs", "ls", "no-colon-path"]);
    assert!(!out.status.success());
    once(&text(&out), "no-colon-path", "HOST:/PATH");
}

#[test]
fn a_missing_device_names_the_fix() {
    let out = rpcrdma(&[
        "demo",
        "--provider",
        "rdma-core",
        "--device",
        "no-such-device0",
    ]);
    assert!(!out.status.success());
    let t = text(&out);
    assert_eq!(t.lines().count(), 1, "{t}");
    if t.contains("built without the rdma-core provider") {
        // A build without the feature says how to build one with it.
        once(&t, "built without", "--features rdma-core");
        once(&t, "--features rdma-core", "libibverbs-dev");
    } else if t.contains("no RDMA device named") {
        once(&t, "\"no-such-device0\"", "available:");
    } else {
        // No RDMA device at all: how to see and make one.
        once(&t, "no RDMA device found", "check `ibv_devices`");
        once(&t, "rdma link add rxe0", "rdma link add siw0");
    }
    // A device without its provider.
    let out = rpcrdma(&["demo", "--device", "rxe0"]);
    assert!(!out.status.success());
    once(&text(&out), "--device rxe0", "needs --provider rdma-core");
}

/// `rpcrdma nfs serve --exports FILE` exporting one directory,
/// `DIR/export`, to 127.0.0.1, on free ports; killed and its directory
/// removed when dropped.
struct Exports {
    child: Child,
    dir: PathBuf,
    /// Its RPC-over-RDMA (software iWARP) and MOUNT ports.
    rdma: String,
    mount: String,
}

impl Exports {
    fn start() -> Exports {
        let dir = std::env::temp_dir().join(format!("rpcrdma-error-output-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("export")).unwrap();
        let file = dir.join("exports");
        std::fs::write(
            &file,
            format!("{} 127.0.0.1(rw)\n", dir.join("export").display()),
        )
        .unwrap();
        let mut child = Command::new(BIN)
            .args(["nfs", "serve", "--exports"])
            .arg(&file)
            .args([
                "--listen",
                "127.0.0.1:0",
                "--mount-port",
                "0",
                "--state-dir",
            ])
            .arg(dir.join("state"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = |after: &str| -> String {
            let i = line
                .find(after)
                .unwrap_or_else(|| panic!("{after:?} in {line:?}"))
                + after.len();
            line[i..].chars().take_while(char::is_ascii_digit).collect()
        };
        let (rdma, mount) = (
            port("(software iWARP) on 127.0.0.1:"),
            port("MOUNT v3 on tcp 127.0.0.1:"),
        );
        Exports {
            child,
            dir,
            rdma,
            mount,
        }
    }
}

impl Drop for Exports {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn no_such_export_reads_once_and_names_the_fix() {
    let s = Exports::start();
    let (port, mount) = (s.rdma.as_str(), s.mount.as_str());
    // Beside the export, in the server's NFSv4 namespace.
    let missing = format!(
        "127.0.0.1:{}/no-such-export/file",
        std::env::temp_dir().display()
    );
    // NFSv3: MOUNT refuses the path.
    let out = rpcrdma(&[
        "nfs",
        "ls",
        "127.0.0.1:/no-such-export",
        "--vers",
        "3",
        "--port",
        port,
        "--mount-port",
        mount,
    ]);
    assert!(!out.status.success(), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("cannot mount from 127.0.0.1"), "{t}");
    once(&t, "/no-such-export", "is the path exported?");
    once(&t, "Mnt3errAcces", "`showmount -e` lists exports");
    // NFSv4.1: the path is not in the server's namespace.
    for cmd in ["get", "stat", "ls"] {
        let mut args = vec!["nfs", cmd, &missing];
        if cmd == "get" {
            args.push("-");
        }
        args.extend(["--port", port]);
        let out = rpcrdma(&args);
        assert!(!out.status.success(), "{}", text(&out));
        let t = text(&out);
        once(
            &t,
            "NFS4ERR_NOENT",
            "`rpcrdma nfs ls HOST:/` lists what it exports",
        );
        once(&t, &missing, "lists what it exports");
    }
}
