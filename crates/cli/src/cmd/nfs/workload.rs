//! The workloads of `rpcrdma nfs bench --workloads`, run with one NFSv3
//! client against any NFSv3 server (ours over RPC-over-RDMA or TCP, or
//! another server over TCP, such as NFS-Ganesha), in a scratch directory
//! the bench makes and removes:
//!
//! | measure | what is timed |
//! |---|---|
//! | sequential WRITE | a file of `--size` MiB in 1 MiB UNSTABLE WRITEs, the client's window outstanding, then COMMIT |
//! | sequential READ | the same file read back in 1 MiB READs (and checked) |
//! | random READ 4 KiB | `--ops` READs of 4 KiB at random 4 KiB-aligned offsets of that file, `--depth` outstanding |
//! | random WRITE 4 KiB | `--ops` UNSTABLE WRITEs the same way, then COMMIT |
//! | CREATE+SETATTR+REMOVE | `--files` small files, each created, its mode set and removed, `--depth` at a time; ops/s counts the three calls |
//! | READDIRPLUS | a directory of `--entries` files listed whole (READDIRPLUS until eof), entries per second |
//! | LOOKUP+GETATTR | `--ops` pairs on random names of that directory, `--depth` at a time; ops/s counts both calls |
//!
//! The directory of `--entries` files is made once per server (not
//! timed) and removed at the end. Random offsets and names come from a
//! fixed-seed generator, so every server sees the same calls.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use bytes::Bytes;
use rpcrdma_nfs3::client::NfsClient;
use rpcrdma_nfs3::fs::{FileHandle, SetAttr, StableHow};

/// Sizes of the workloads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sizes {
    /// Octets of the sequential file (also the random I/O's file).
    pub(crate) file: usize,
    /// Random READs, random WRITEs and LOOKUP+GETATTR pairs per measure.
    pub(crate) ops: usize,
    /// Calls outstanding for the random and metadata measures.
    pub(crate) depth: usize,
    /// Files created, changed and removed.
    pub(crate) files: usize,
    /// Entries of the listed directory.
    pub(crate) entries: usize,
}

/// One round's figures for one server and transport.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Figures {
    pub(crate) seq_write_mib_s: f64,
    pub(crate) seq_read_mib_s: f64,
    pub(crate) rand_read_ops_s: f64,
    pub(crate) rand_write_ops_s: f64,
    pub(crate) create_setattr_remove_ops_s: f64,
    pub(crate) readdirplus_entries_s: f64,
    pub(crate) lookup_getattr_ops_s: f64,
}

/// A measure: JSON key, label, unit, and its figure in [`Figures`].
pub(crate) type Measure = (
    &'static str,
    &'static str,
    &'static str,
    fn(&Figures) -> f64,
);

/// The measures, in report order.
pub(crate) const MEASURES: [Measure; 7] = [
    ("seq_write_mib_s", "sequential WRITE 1 MiB", "MiB/s", |f| {
        f.seq_write_mib_s
    }),
    ("seq_read_mib_s", "sequential READ 1 MiB", "MiB/s", |f| {
        f.seq_read_mib_s
    }),
    ("rand_read_4k_ops_s", "random READ 4 KiB", "ops/s", |f| {
        f.rand_read_ops_s
    }),
    ("rand_write_4k_ops_s", "random WRITE 4 KiB", "ops/s", |f| {
        f.rand_write_ops_s
    }),
    (
        "create_setattr_remove_ops_s",
        "CREATE+SETATTR+REMOVE",
        "ops/s",
        |f| f.create_setattr_remove_ops_s,
    ),
    ("readdirplus_entries_s", "READDIRPLUS", "entries/s", |f| {
        f.readdirplus_entries_s
    }),
    ("lookup_getattr_ops_s", "LOOKUP+GETATTR", "ops/s", |f| {
        f.lookup_getattr_ops_s
    }),
];

/// The scratch directory of one server: made by [`Scratch::make`], removed
/// by [`Scratch::remove`].
pub(crate) struct Scratch {
    parent: FileHandle,
    name: String,
    dir: FileHandle,
    listed: FileHandle,
    entries: usize,
}

/// The sequential file's contents (the random WRITEs write its first
/// 4 KiB elsewhere in it).
fn pattern(size: usize) -> Bytes {
    Bytes::from(
        (0..size)
            .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0])
            .collect::<Vec<u8>>(),
    )
}

fn entry_name(i: usize) -> String {
    format!("entry-{i:06}")
}

/// A fixed-seed generator (splitmix64): the same sequence for every server.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Runs `f(i)` for every `i` in `0..n`, `depth` at a time (one task per
/// slot, not per call).
pub(crate) async fn concurrently<F, Fut>(n: usize, depth: usize, f: F) -> anyhow::Result<()>
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let f = Arc::new(f);
    let mut slots = Vec::new();
    for _ in 0..depth.clamp(1, n.max(1)) {
        let (next, f) = (next.clone(), f.clone());
        slots.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return Ok::<_, anyhow::Error>(());
                }
                f(i).await?;
            }
        }));
    }
    for s in slots {
        s.await.context("a workload task failed")??;
    }
    Ok(())
}

impl Scratch {
    /// Makes `.rpcrdma-nfs-bench-PID-TAG` in `parent` and, in it, a
    /// directory of `entries` empty files (`depth` CREATEs at a time).
    pub(crate) async fn make(
        c: &NfsClient,
        tag: &str,
        parent: &FileHandle,
        entries: usize,
        depth: usize,
    ) -> anyhow::Result<Self> {
        let name = format!(".rpcrdma-nfs-bench-{}-{tag}", std::process::id());
        let dir = c
            .mkdir(parent, name.as_bytes(), 0o700)
            .await
            .with_context(|| format!("cannot make the scratch directory {name}"))?;
        let listed = c.mkdir(&dir, b"listed", 0o700).await?;
        let (c2, l2) = (c.clone(), listed.clone());
        concurrently(entries, depth, move |i| {
            let (c, l) = (c2.clone(), l2.clone());
            async move {
                c.create(&l, entry_name(i).as_bytes(), 0o600).await?;
                Ok(())
            }
        })
        .await
        .context("cannot fill the directory to list")?;
        Ok(Self {
            parent: parent.clone(),
            name,
            dir,
            listed,
            entries,
        })
    }

    /// Removes everything [`Scratch::make`] and the measures made.
    pub(crate) async fn remove(self, c: &NfsClient, depth: usize) -> anyhow::Result<()> {
        let (c2, l2) = (c.clone(), self.listed.clone());
        concurrently(self.entries, depth, move |i| {
            let (c, l) = (c2.clone(), l2.clone());
            async move {
                c.remove(&l, entry_name(i).as_bytes()).await?;
                Ok(())
            }
        })
        .await?;
        c.rmdir(&self.dir, b"listed").await?;
        for leftover in c.list(&self.dir, false).await? {
            if &leftover.name[..] != b"." && &leftover.name[..] != b".." {
                c.remove(&self.dir, &leftover.name).await?;
            }
        }
        c.rmdir(&self.parent, self.name.as_bytes()).await?;
        Ok(())
    }

    /// One round of every measure.
    pub(crate) async fn measure(&self, c: &NfsClient, s: &Sizes) -> anyhow::Result<Figures> {
        let mut f = Figures::default();
        let mib = s.file as f64 / 1048576.0;
        let data = pattern(s.file);
        let fh = c.create(&self.dir, b"data", 0o600).await?;

        let t = Instant::now();
        c.write_file(&fh, &data).await.context("sequential WRITE")?;
        f.seq_write_mib_s = mib / t.elapsed().as_secs_f64().max(1e-9);

        let t = Instant::now();
        let (mut same, mut at) = (true, 0usize);
        let n = c
            .read_file(&fh, s.file as u64, |chunk| {
                same &= data.get(at..at + chunk.len()) == Some(chunk);
                at += chunk.len();
                Ok(())
            })
            .await
            .context("sequential READ")?;
        f.seq_read_mib_s = mib / t.elapsed().as_secs_f64().max(1e-9);
        anyhow::ensure!(
            same && n as usize == s.file,
            "the data read back differs from what was written"
        );

        // Random 4 KiB READs and WRITEs of that file.
        let blocks = (s.file / 4096).max(1);
        let mut rng = Random(0x5eed);
        let offsets: Arc<Vec<u64>> = Arc::new(
            (0..s.ops)
                .map(|_| (rng.below(blocks) * 4096) as u64)
                .collect(),
        );
        let (c2, fh2, o2) = (c.clone(), fh.clone(), offsets.clone());
        let t = Instant::now();
        concurrently(s.ops, s.depth, move |i| {
            let (c, fh, off) = (c2.clone(), fh2.clone(), o2[i]);
            async move {
                let (d, _) = c.read(&fh, off, 4096).await.context("random READ")?;
                anyhow::ensure!(d.len() == 4096, "random READ: short read");
                Ok(())
            }
        })
        .await?;
        f.rand_read_ops_s = s.ops as f64 / t.elapsed().as_secs_f64().max(1e-9);

        let block = data.slice(..4096.min(data.len()));
        let (c2, fh2, o2) = (c.clone(), fh.clone(), offsets.clone());
        let t = Instant::now();
        concurrently(s.ops, s.depth, move |i| {
            let (c, fh, off, block) = (c2.clone(), fh2.clone(), o2[i], block.clone());
            async move {
                let (n, _, _) = c
                    .write(&fh, off, block.clone(), StableHow::Unstable)
                    .await
                    .context("random WRITE")?;
                anyhow::ensure!(n as usize == block.len(), "random WRITE: short write");
                Ok(())
            }
        })
        .await?;
        c.commit(&fh).await?;
        f.rand_write_ops_s = s.ops as f64 / t.elapsed().as_secs_f64().max(1e-9);
        c.remove(&self.dir, b"data").await?;

        // Small files: CREATE, SETATTR, REMOVE.
        let (c2, d2) = (c.clone(), self.dir.clone());
        let t = Instant::now();
        concurrently(s.files, s.depth, move |i| {
            let (c, d) = (c2.clone(), d2.clone());
            async move {
                let name = format!("small-{i:06}");
                let fh = c.create(&d, name.as_bytes(), 0o600).await?;
                let mode = SetAttr {
                    mode: Some(0o640),
                    ..SetAttr::default()
                };
                c.setattr(&fh, &mode).await?;
                c.remove(&d, name.as_bytes()).await?;
                Ok(())
            }
        })
        .await
        .context("CREATE+SETATTR+REMOVE")?;
        f.create_setattr_remove_ops_s = (3 * s.files) as f64 / t.elapsed().as_secs_f64().max(1e-9);

        // The big directory, listed whole.
        let t = Instant::now();
        let listed = c.list(&self.listed, true).await.context("READDIRPLUS")?;
        f.readdirplus_entries_s = listed.len() as f64 / t.elapsed().as_secs_f64().max(1e-9);
        anyhow::ensure!(
            listed.len() >= self.entries,
            "READDIRPLUS listed {} entries of {}",
            listed.len(),
            self.entries
        );

        // LOOKUP and GETATTR of random names in it.
        let mut rng = Random(0x100c);
        let names: Arc<Vec<usize>> =
            Arc::new((0..s.ops).map(|_| rng.below(self.entries.max(1))).collect());
        let (c2, l2) = (c.clone(), self.listed.clone());
        let t = Instant::now();
        concurrently(s.ops, s.depth, move |i| {
            let (c, l, k) = (c2.clone(), l2.clone(), names[i]);
            async move {
                let (fh, _) = c.lookup(&l, entry_name(k).as_bytes()).await?;
                c.getattr(&fh).await?;
                Ok(())
            }
        })
        .await
        .context("LOOKUP+GETATTR")?;
        f.lookup_getattr_ops_s = (2 * s.ops) as f64 / t.elapsed().as_secs_f64().max(1e-9);
        Ok(f)
    }
}

/// The options of `rpcrdma nfs bench --workloads`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct WorkloadArgs {
    /// Run the workloads (NFSv3; see `docs/performance.md`, "NFS against
    /// NFS-Ganesha") instead of the READ/WRITE/GETATTR comparison.
    #[arg(long)]
    pub(crate) workloads: bool,
    /// Another NFSv3 server's HOST:/DIR, measured over TCP with the same
    /// client in the same run (e.g. NFS-Ganesha; `--workloads`).
    #[arg(long, value_name = "HOST:/DIR", requires = "workloads")]
    pub(crate) compare: Option<String>,
    /// That server's NFS port (TCP).
    #[arg(long, default_value_t = 2049, requires = "compare")]
    pub(crate) compare_port: u16,
    /// That server's MOUNT v3 port (TCP).
    #[arg(long, default_value_t = 20048, requires = "compare")]
    pub(crate) compare_mount_port: u16,
    /// That server's name in the report.
    #[arg(long, default_value = "other", requires = "compare")]
    pub(crate) compare_name: String,
    /// Random READs, random WRITEs and LOOKUP+GETATTR pairs per measure.
    #[arg(long, default_value_t = 4000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub(crate) ops: u64,
    /// Calls outstanding in the random and metadata measures.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=128))]
    pub(crate) depth: u64,
    /// Small files created, changed and removed per round.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub(crate) files: u64,
    /// Entries of the directory READDIRPLUS lists.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub(crate) entries: u64,
}

/// One server and transport the workloads run on.
struct Subject {
    label: String,
    client: NfsClient,
    scratch: Scratch,
}

/// Opens an NFSv3 client on `host:path` and makes its scratch directory.
async fn subject(
    label: String,
    tag: &str,
    opened: (NfsClient, Vec<u8>),
    sizes: &Sizes,
) -> anyhow::Result<Subject> {
    let (client, rest) = opened;
    let (dir, _) = client
        .lookup_path(&rest)
        .await
        .with_context(|| format!("{label}: cannot look up the directory"))?;
    eprintln!(
        "{label}: making a directory of {} entries (not timed)",
        sizes.entries
    );
    let scratch = Scratch::make(&client, tag, &dir, sizes.entries, sizes.depth)
        .await
        .with_context(|| format!("{label}: cannot make the scratch directory"))?;
    Ok(Subject {
        label,
        client,
        scratch,
    })
}

/// `rpcrdma nfs bench --workloads`: every measure of [`MEASURES`] on our
/// server over RPC-over-RDMA and TCP and, with `--compare`, another
/// server over TCP, in paired rounds (the order turns every round); the
/// medians and the medians of the per-round ratios.
pub(crate) async fn run(
    w: &WorkloadArgs,
    remote: &super::client::Remote,
    target: &str,
    tcp_port: u16,
    size_mib: u64,
    rounds: u32,
    json: bool,
) -> anyhow::Result<()> {
    use super::client::{open, parse_target};
    use crate::cmd::bench::{median, num};
    use crate::cmd::connect::TransportKind;

    let sizes = Sizes {
        file: (size_mib as usize) << 20,
        ops: w.ops as usize,
        depth: w.depth as usize,
        files: w.files as usize,
        entries: w.entries as usize,
    };
    let (host, path) = parse_target(target)?;
    let mut subjects = Vec::new();
    let rdma = open(remote, TransportKind::Rdma, remote.port, &host, &path).await?;
    subjects.push(subject("ours over RPC-over-RDMA".into(), "rdma", rdma, &sizes).await?);
    let tcp = open(remote, TransportKind::Tcp, Some(tcp_port), &host, &path).await?;
    subjects.push(subject("ours over TCP".into(), "tcp", tcp, &sizes).await?);
    if let Some(other) = &w.compare {
        let (ohost, opath) = parse_target(other)?;
        let mut r = remote.clone();
        r.mount_port = w.compare_mount_port;
        let o = open(&r, TransportKind::Tcp, Some(w.compare_port), &ohost, &opath)
            .await
            .with_context(|| format!("cannot mount {other} ({})", w.compare_name))?;
        subjects.push(subject(format!("{} over TCP", w.compare_name), "other", o, &sizes).await?);
    }
    let n = subjects.len();
    let mut figures: Vec<Vec<Figures>> = vec![Vec::new(); n];
    for round in 0..rounds as usize {
        for k in 0..n {
            let i = (k + round) % n;
            let s = &subjects[i];
            let f = s
                .scratch
                .measure(&s.client, &sizes)
                .await
                .with_context(|| format!("{}, round {}", s.label, round + 1))?;
            if !json {
                let line: Vec<String> = MEASURES
                    .iter()
                    .map(|(_, label, unit, get)| format!("{label} {:.0} {unit}", get(&f)))
                    .collect();
                eprintln!("round {} {}: {}", round + 1, s.label, line.join(", "));
            }
            figures[i].push(f);
        }
    }
    for s in subjects {
        let label = s.label.clone();
        s.scratch
            .remove(&s.client, sizes.depth)
            .await
            .with_context(|| format!("{label}: cannot remove the scratch directory"))?;
    }
    // Per-round ratios: (numerator subject, denominator subject).
    let mut pairs = vec![("rdma_over_tcp", 0usize, 1usize)];
    if n == 3 {
        pairs.push(("tcp_over_other", 1, 2));
        pairs.push(("rdma_over_other", 0, 2));
    }
    let ratio = |m: fn(&Figures) -> f64, a: usize, b: usize| {
        median(
            figures[a]
                .iter()
                .zip(&figures[b])
                .map(|(x, y)| m(x) / m(y))
                .collect(),
        )
    };
    let med = |m: fn(&Figures) -> f64, i: usize| median(figures[i].iter().map(m).collect());
    let keys = ["rdma", "tcp", "other"];
    if json {
        let mut servers = serde_json::Map::new();
        for (i, key) in keys.iter().enumerate().take(n) {
            let mut o = serde_json::Map::new();
            for (k, _, _, m) in MEASURES {
                o.insert(k.into(), num(med(m, i)));
            }
            servers.insert((*key).into(), o.into());
        }
        let mut ratios = serde_json::Map::new();
        for (name, a, b) in &pairs {
            let mut o = serde_json::Map::new();
            for (k, _, _, m) in MEASURES {
                o.insert(k.into(), num(ratio(m, *a, *b)));
            }
            ratios.insert((*name).into(), o.into());
        }
        let v = serde_json::json!({
            "target": target,
            "compare": w.compare,
            "compare_name": w.compare.as_ref().map(|_| &w.compare_name),
            "version": "NFSv3",
            "size_mib": size_mib,
            "rounds": rounds,
            "ops": w.ops,
            "depth": w.depth,
            "files": w.files,
            "entries": w.entries,
            "median": servers,
            "ratios": ratios,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "NFSv3 workloads ({size_mib} MiB file, {} ops at depth {}, {} files, {} entries; {rounds} rounds, median):",
            w.ops, w.depth, w.files, w.entries
        );
        let mut head = format!("  {:<24}{:>18}{:>18}", "measure", "RDMA", "TCP");
        if n == 3 {
            head += &format!("{:>18}", w.compare_name);
        }
        head += "  RDMA/TCP";
        if n == 3 {
            head += &format!("  TCP/{}", w.compare_name);
        }
        println!("{head}");
        for (_, label, unit, m) in MEASURES {
            let mut line = format!("  {label:<24}");
            for i in 0..n {
                line += &format!("{:>18}", format!("{:.0} {unit}", med(m, i)));
            }
            for (_, a, b) in pairs.iter().take(2) {
                line += &format!("  {:>8.2}", ratio(m, *a, *b));
            }
            println!("{line}");
        }
    }
    Ok(())
}
