//! `--read-window auto|SIZE`: how far a server's connection reads ahead.
//!
//! The engine pulls the Read chunks of the calls it admits through RDMA
//! Reads, and keeps at most its read window of such data ahead of the
//! calls it has handed up (`EngineConfig::read_window`, docs/engine.md).
//! One call's worth (1 MiB) makes every 1 MiB WRITE wait for its own Read
//! Request to reach the client and be answered; two calls' worth lets the
//! next call's data follow without that wait.
//!
//! The second Read in flight pays only where the two ends can work at
//! once. `auto`, the default, therefore gives 2 MiB to a process that may
//! run on several CPUs and 1 MiB to one confined to a single CPU (`taskset
//! -c 0`, a one-CPU cgroup quota): there the server pulling the next
//! call's data and the client answering cannot overlap, and a flow that
//! never pauses is one TCP's `bbr` paces from a softirq on that same CPU
//! (docs/performance.md, "Congestion control on loopback" and "The read
//! window, chosen by CPUs").

use std::fmt;

use crate::cmd::serve::{parse_size, show_size};

/// The window `auto` gives a process that may run on several CPUs.
pub(crate) const AUTO_SEVERAL_CPUS: u64 = 2 << 20;
/// The window `auto` gives a process confined to one CPU (the engine's own
/// default, `rpcrdma_engine::DEFAULT_READ_WINDOW`).
pub(crate) const AUTO_ONE_CPU: u64 = rpcrdma_engine::DEFAULT_READ_WINDOW;

/// `--read-window`: `auto` or a size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadWindow {
    /// By the CPUs this process may use ([`ReadWindow::for_cpus`]).
    Auto,
    /// A size given on the command line (more than zero).
    Size(u64),
}

impl ReadWindow {
    /// Parses `auto` (any case) or a size as `--max-memory` takes it.
    pub(crate) fn parse(s: &str) -> Result<Self, String> {
        if s.trim().eq_ignore_ascii_case("auto") {
            return Ok(Self::Auto);
        }
        parse_size(s)
            .map(Self::Size)
            .map_err(|e| format!("{e}, or auto"))
    }

    /// The window in octets for a process that may use `cpus` CPUs.
    pub(crate) fn for_cpus(self, cpus: usize) -> u64 {
        match self {
            Self::Size(v) => v,
            Self::Auto if cpus > 1 => AUTO_SEVERAL_CPUS,
            Self::Auto => AUTO_ONE_CPU,
        }
    }

    /// The window in octets for this process, as it may run now (its CPU
    /// affinity and cgroup quota; 1 if they cannot be read).
    pub(crate) fn resolve(self) -> u64 {
        self.for_cpus(usable_cpus())
    }
}

impl fmt::Display for ReadWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Auto => f.write_str("auto"),
            Self::Size(v) => f.write_str(&show_size(*v)),
        }
    }
}

/// CPUs this process may run on now (`sched_getaffinity` and the cgroup
/// quota, as the standard library reads them); 1 when unknown.
pub(crate) fn usable_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// How a report names the window: `2 MiB (auto, 2 CPUs)` or `1 MiB`.
pub(crate) fn describe(setting: ReadWindow) -> String {
    match setting {
        ReadWindow::Auto => {
            let cpus = usable_cpus();
            let plural = if cpus == 1 { "" } else { "s" };
            format!(
                "{} (auto, {cpus} CPU{plural})",
                show_size(setting.for_cpus(cpus))
            )
        }
        ReadWindow::Size(v) => show_size(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_and_sizes_parse() {
        assert_eq!(ReadWindow::parse("auto"), Ok(ReadWindow::Auto));
        assert_eq!(ReadWindow::parse(" AUTO "), Ok(ReadWindow::Auto));
        assert_eq!(ReadWindow::parse("2M"), Ok(ReadWindow::Size(2 << 20)));
        assert_eq!(ReadWindow::parse("4096"), Ok(ReadWindow::Size(4096)));
        for bad in ["", "0", "automatic", "1.5M"] {
            let e = ReadWindow::parse(bad).unwrap_err();
            assert!(e.ends_with("or auto"), "{bad}: {e}");
        }
    }

    #[test]
    fn auto_gives_two_calls_on_several_cpus_and_one_on_one() {
        assert_eq!(ReadWindow::Auto.for_cpus(1), 1 << 20);
        assert_eq!(ReadWindow::Auto.for_cpus(2), 2 << 20);
        assert_eq!(ReadWindow::Auto.for_cpus(64), 2 << 20);
        // A size given is taken as given, whatever the CPUs.
        assert_eq!(ReadWindow::Size(3 << 20).for_cpus(1), 3 << 20);
        assert_eq!(ReadWindow::Size(512 << 10).for_cpus(8), 512 << 10);
    }

    #[test]
    fn auto_follows_this_process_cpus() {
        let cpus = usable_cpus();
        assert!(cpus >= 1);
        assert_eq!(
            ReadWindow::Auto.resolve(),
            if cpus > 1 { 2 << 20 } else { 1 << 20 }
        );
        let d = describe(ReadWindow::Auto);
        assert!(d.contains(&format!("auto, {cpus} CPU")), "{d}");
        assert_eq!(describe(ReadWindow::Size(2 << 20)), "2 MiB");
        assert_eq!(ReadWindow::Auto.to_string(), "auto");
        assert_eq!(ReadWindow::Size(1 << 20).to_string(), "1 MiB");
    }
}
