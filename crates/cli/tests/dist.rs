//! The files of `dist/` hold what they say: the systemd unit's command
//! line starts the server (its options all accepted: exports, listeners,
//! state directory, metrics), it reloads on the signal of `ExecReload`
//! and stops cleanly on the unit's `KillSignal`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

mod common;
use common::BIN;

/// A unit file's `KEY=` value, continuation lines joined.
fn value(unit: &str, key: &str) -> String {
    let joined = unit.replace("\\\n", " ");
    let line = joined
        .lines()
        .find(|l| l.starts_with(&format!("{key}=")))
        .unwrap_or_else(|| panic!("{key}= in the unit"));
    line[key.len() + 1..]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_systemd_unit_starts_reloads_and_stops_the_server() {
    let unit = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../dist/rpcrdma-nfs.service"
    ))
    .unwrap();
    assert_eq!(value(&unit, "ExecReload"), "/bin/kill -HUP $MAINPID");
    assert_eq!(value(&unit, "KillSignal"), "SIGTERM");
    assert_eq!(value(&unit, "StateDirectory"), "rpcrdma-nfs");
    let start = value(&unit, "ExecStart");
    let dir = std::env::temp_dir().join(format!("rpcrdma-dist-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("export")).unwrap();
    let exports = dir.join("exports");
    std::fs::write(
        &exports,
        format!("{} 127.0.0.1(rw)\n", dir.join("export").display()),
    )
    .unwrap();
    // The unit's command line, on this machine's free ports and paths.
    let args: Vec<String> = start
        .split(' ')
        .map(|w| match w {
            "/etc/rpcrdma/exports" => exports.display().to_string(),
            "/var/lib/rpcrdma-nfs" => dir.join("state").display().to_string(),
            "0.0.0.0:20049" | "0.0.0.0:2049" | "127.0.0.1:9469" => "127.0.0.1:0".into(),
            "20048" => "0".into(),
            w => w.to_owned(),
        })
        .collect();
    assert_eq!(args[0], "/usr/local/bin/rpcrdma");
    for flag in ["--exports", "--listen", "--tcp", "--state-dir", "--metrics"] {
        assert!(args.iter().any(|a| a == flag), "{flag} in {start}");
    }
    let mut child = Command::new(BIN)
        .args(&args[1..])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.join("log")).unwrap())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut seen = Vec::new();
    loop {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            panic!(
                "the server ended: {seen:?}\n{}",
                std::fs::read_to_string(dir.join("log")).unwrap_or_default()
            );
        }
        if line.starts_with("metrics on http://") {
            break;
        }
        seen.push(line);
    }
    assert!(seen[0].starts_with("serving 1 export(s) of "), "{seen:?}");
    let pid = child.id().to_string();
    let signal = |sig: &str| {
        assert!(Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success());
    };
    signal("-HUP");
    let log = dir.join("log");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("exports read again")
    {
        assert!(std::time::Instant::now() < until, "no reload logged");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    signal("-TERM");
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
