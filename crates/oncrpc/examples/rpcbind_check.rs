//! Checks our rpcbind client against a real rpcbind server.
//!
//! ```text
//! cargo run -p rpcrdma-oncrpc --example rpcbind_check -- \
//!     [--addr 127.0.0.1:111] [--expect PROG:VERS:NETID]... [--roundtrip]
//! ```
//!
//! * Reads the server's table with RPCBIND v4 and v3 `DUMP` and PMAP v2
//!   `DUMP`, prints it, and requires rpcbind's own entries (100000).
//! * For each `--expect`, requires the entry in every table and that v3/v4
//!   `GETADDR` and v2 `GETPORT` agree on its address.
//! * With `--roundtrip`, registers and removes a scratch program with PMAP
//!   v2 `SET`/`UNSET` and RPCBIND v3 and v4 `SET`/`UNSET`, checking each step.
//!
//! Exits 0 if every check passed, 1 otherwise. Used by
//! `scripts/rpcbind-interop.sh`.

use std::net::SocketAddr;
use std::process::ExitCode;

use rpcrdma_oncrpc::rpcbind::{
    parse_uaddr, Mapping, Rpcb, RpcbVersion, Rpcbind, IPPROTO_TCP, PROGRAM,
};

struct Checks {
    failed: usize,
}

impl Checks {
    fn check(&mut self, ok: bool, what: &str) {
        if ok {
            println!("ok   {what}");
        } else {
            println!("FAIL {what}");
            self.failed += 1;
        }
    }
}

const SCRATCH: u32 = 0x2052_4451;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut addr: SocketAddr = ([127, 0, 0, 1], 111).into();
    let mut expect: Vec<(u32, u32, String)> = Vec::new();
    let mut roundtrip = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--addr" => match args.next().and_then(|s| s.parse().ok()) {
                Some(a) => addr = a,
                None => return usage("--addr needs HOST:PORT"),
            },
            "--expect" => {
                let spec = args.next().unwrap_or_default();
                let parts: Vec<&str> = spec.split(':').collect();
                let parsed = match parts.as_slice() {
                    [p, v, n] => parse_num(p)
                        .zip(parse_num(v))
                        .map(|(p, v)| (p, v, n.to_string())),
                    _ => None,
                };
                match parsed {
                    Some(e) => expect.push(e),
                    None => return usage("--expect needs PROG:VERS:NETID"),
                }
            }
            "--roundtrip" => roundtrip = true,
            other => return usage(&format!("unknown argument {other}")),
        }
    }
    let rpcbind = match Rpcbind::connect(addr).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("rpcbind_check: {e}");
            return ExitCode::from(2);
        }
    };
    let mut c = Checks { failed: 0 };
    match run(&rpcbind, &expect, roundtrip, &mut c).await {
        Ok(()) => {}
        Err(e) => {
            println!("FAIL rpcbind call: {e}");
            c.failed += 1;
        }
    }
    if c.failed == 0 {
        println!("rpcbind_check: all checks passed");
        ExitCode::SUCCESS
    } else {
        println!("rpcbind_check: {} check(s) failed", c.failed);
        ExitCode::from(1)
    }
}

async fn run(
    rpcbind: &Rpcbind,
    expect: &[(u32, u32, String)],
    roundtrip: bool,
    c: &mut Checks,
) -> Result<(), rpcrdma_oncrpc::RpcError> {
    let v4 = rpcbind.dump(RpcbVersion::V4).await?;
    let v3 = rpcbind.dump(RpcbVersion::V3).await?;
    let v2 = rpcbind.pmap_dump().await?;
    println!("RPCBIND v4 DUMP: {} entries", v4.len());
    for e in &v4 {
        println!(
            "    {:>10} {:>2} {:<6} {:<24} {}",
            e.prog, e.vers, e.netid, e.addr, e.owner
        );
    }
    println!("PMAP v2 DUMP: {} entries", v2.len());
    for m in &v2 {
        println!(
            "    {:>10} {:>2} {:>3} {:>5}",
            m.prog, m.vers, m.prot, m.port
        );
    }
    for vers in [2, 3, 4] {
        c.check(
            v4.iter()
                .any(|e| e.prog == PROGRAM && e.vers == vers && e.netid == "tcp"),
            &format!("v4 DUMP lists rpcbind {vers} on tcp"),
        );
        c.check(
            v3.iter()
                .any(|e| e.prog == PROGRAM && e.vers == vers && e.netid == "tcp"),
            &format!("v3 DUMP lists rpcbind {vers} on tcp"),
        );
        c.check(
            v2.iter().any(|m| {
                m.prog == PROGRAM && m.vers == vers && m.prot == IPPROTO_TCP && m.port == 111
            }),
            &format!("v2 DUMP lists rpcbind {vers} on tcp port 111"),
        );
    }
    for (prog, vers, netid) in expect {
        let what = format!("{prog:#x} v{vers} {netid}");
        let entry = v4
            .iter()
            .find(|e| e.prog == *prog && e.vers == *vers && e.netid == *netid);
        c.check(entry.is_some(), &format!("v4 DUMP lists {what}"));
        c.check(
            v3.iter()
                .any(|e| e.prog == *prog && e.vers == *vers && e.netid == *netid),
            &format!("v3 DUMP lists {what}"),
        );
        let a4 = rpcbind
            .getaddr(RpcbVersion::V4, *prog, *vers, netid)
            .await?;
        let a3 = rpcbind
            .getaddr(RpcbVersion::V3, *prog, *vers, netid)
            .await?;
        let sa = a4.as_deref().and_then(parse_uaddr);
        c.check(sa.is_some(), &format!("v4 GETADDR {what} = {a4:?}"));
        c.check(a3 == a4, &format!("v3 GETADDR agrees ({a3:?})"));
        if netid == "tcp" {
            let port = rpcbind.pmap_getport(*prog, *vers, IPPROTO_TCP).await?;
            c.check(
                sa.map(|s| u32::from(s.port())) == Some(port),
                &format!("v2 GETPORT {what} = {port}"),
            );
            c.check(
                v2.iter()
                    .any(|m| m.prog == *prog && m.vers == *vers && m.port == port),
                &format!("v2 DUMP lists {what}"),
            );
        }
    }
    if roundtrip {
        let m = Mapping {
            prog: SCRATCH,
            vers: 1,
            prot: IPPROTO_TCP,
            port: 40_000,
        };
        rpcbind.pmap_unset(&m).await?;
        c.check(rpcbind.pmap_set(&m).await?, "v2 SET scratch program");
        c.check(
            rpcbind.pmap_getport(SCRATCH, 1, IPPROTO_TCP).await? == 40_000,
            "v2 GETPORT finds it",
        );
        c.check(rpcbind.pmap_dump().await?.contains(&m), "v2 DUMP lists it");
        c.check(rpcbind.pmap_unset(&m).await?, "v2 UNSET removes it");
        c.check(
            rpcbind.pmap_getport(SCRATCH, 1, IPPROTO_TCP).await? == 0,
            "v2 GETPORT no longer finds it",
        );
        for version in [RpcbVersion::V3, RpcbVersion::V4] {
            let e = Rpcb {
                prog: SCRATCH,
                vers: 2,
                netid: "tcp".into(),
                addr: "127.0.0.1.156.65".into(),
                owner: String::new(),
            };
            let v = version as u32;
            c.check(
                rpcbind.set(version, &e).await?,
                &format!("v{v} SET scratch program"),
            );
            c.check(
                rpcbind
                    .getaddr(version, SCRATCH, 2, "tcp")
                    .await?
                    .as_deref()
                    == Some("127.0.0.1.156.65"),
                &format!("v{v} GETADDR finds it"),
            );
            let other = Rpcb {
                addr: "127.0.0.1.156.66".into(),
                ..e.clone()
            };
            c.check(
                !rpcbind.set(version, &other).await?,
                &format!("v{v} SET of another address is refused"),
            );
            c.check(
                rpcbind.unset(version, &e).await?,
                &format!("v{v} UNSET removes it"),
            );
            c.check(
                rpcbind.getaddr(version, SCRATCH, 2, "tcp").await?.is_none(),
                &format!("v{v} GETADDR no longer finds it"),
            );
        }
    }
    Ok(())
}

fn parse_num(s: &str) -> Option<u32> {
    match s.strip_prefix("0x") {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn usage(msg: &str) -> ExitCode {
    eprintln!(
        "rpcbind_check: {msg}\nusage: rpcbind_check [--addr HOST:PORT] [--expect PROG:VERS:NETID]... [--roundtrip]"
    );
    ExitCode::from(2)
}
