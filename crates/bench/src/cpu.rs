//! CPU cost per MiB of a throughput measure: the CPU time every thread of
//! the process spent (client and server ends, their helpers and the
//! kernel's work on their behalf) divided by the data moved, what netperf
//! calls service demand.
//!
//! On a machine whose CPUs are the limit, throughput is the CPUs kept busy
//! divided by the CPU cost per MiB, so a path's ratio to the raw TCP
//! stream splits into two factors the bench reports beside it: how much
//! more CPU it costs per MiB, and how many CPUs it keeps busy. A path that
//! costs 1.25 times the raw stream's CPU per MiB reaches at most 0.8 of
//! its throughput unless it keeps more CPUs busy than the raw stream does.
//!
//! The clock is `CLOCK_PROCESS_CPUTIME_ID`: every thread of the process,
//! nanosecond resolution. The bench runs both ends in one process, and on
//! loopback the kernel's receive path mostly runs in the sender's system
//! call, so it is counted too; what runs in other contexts (`ksoftirqd`,
//! under heavy load) is not.
//!
//! That other context is measured beside it: [`softirq_threads_cpu`] reads
//! the run time of the kernel's softirq threads (`ksoftirqd/N`) of the CPUs
//! the process may use. On loopback they take over the network's softirq
//! work when it piles up, above all TCP's paced transmissions (`bbr` paces
//! with a timer on `lo`), which then run on behalf of the bench but outside
//! its clock, and show as CPUs *not* busy. On one CPU here a 1 MiB
//! measure's figure falls in one of two groups, a few thousandths of a
//! millisecond per MiB or a few hundredths: the second is the paced, slow
//! mode (docs/performance.md, "One CPU: the paced mode, measured").

use std::time::{Duration, Instant};

const MIB: f64 = (1u64 << 20) as f64;

/// CPU time used so far by every thread of this process (user and
/// system); zero if the clock cannot be read.
///
/// Through the C library, not rustix: rustix finds `clock_gettime` in the
/// vDSO by reading its ELF image, which faults under valgrind
/// (`scripts/callgrind-null.sh` runs `bench loop` under it), while the C
/// library's call works there.
#[allow(unsafe_code)]
pub fn process_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec that outlives the call,
    // which writes only into it; CLOCK_PROCESS_CPUTIME_ID exists on every
    // Linux this runs on, and a failure (-1) leaves `t` alone.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// [`process_cpu`] in seconds (`--clients` reports the CPUs busy of each
/// measure with it).
pub fn cpu_seconds() -> f64 {
    process_cpu().as_secs_f64()
}

/// The CPU of a softirq thread: `N` of the command name `ksoftirqd/N`.
fn softirq_thread_cpu(comm: &str) -> Option<usize> {
    comm.trim_end().strip_prefix("ksoftirqd/")?.parse().ok()
}

/// The time a task has run, from its `/proc/PID/schedstat` (the first of
/// its three figures, in nanoseconds).
fn schedstat_run_time(text: &str) -> Option<Duration> {
    let ns = text.split_ascii_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// The softirq threads this kernel shows: (PID, CPU), found once.
fn softirq_threads() -> &'static [(u32, usize)] {
    static FOUND: std::sync::OnceLock<Vec<(u32, usize)>> = std::sync::OnceLock::new();
    FOUND.get_or_init(|| {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let mut found: Vec<(u32, usize)> = dir
            .filter_map(|e| {
                let e = e.ok()?;
                let pid: u32 = e.file_name().to_str()?.parse().ok()?;
                let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
                Some((pid, softirq_thread_cpu(&comm)?))
            })
            .collect();
        found.sort_unstable_by_key(|&(_, cpu)| cpu);
        found
    })
}

/// Run time so far of the kernel's softirq threads (`ksoftirqd/N`) of the
/// CPUs this process may run on (its affinity now), from their
/// `/proc/PID/schedstat`; `None` when none can be read (no such threads
/// visible, as in a container's own PID namespace, or a kernel without
/// schedstat). Their work is not only this process's: on a busy machine
/// it includes other programs' network and timer work.
pub fn softirq_threads_cpu() -> Option<Duration> {
    let allowed = rustix::thread::sched_getaffinity(None).ok();
    let mut total = None;
    for &(pid, cpu) in softirq_threads() {
        if allowed.as_ref().is_some_and(|set| !set.is_set(cpu)) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/schedstat")) else {
            continue;
        };
        if let Some(t) = schedstat_run_time(&text) {
            total = Some(total.unwrap_or(Duration::ZERO) + t);
        }
    }
    total
}

/// Wall-clock and CPU time from the start of a measure.
#[derive(Debug, Clone, Copy)]
pub struct Stopwatch {
    wall: Instant,
    cpu: Duration,
    softirqd: Option<Duration>,
}

impl Stopwatch {
    /// Starts the clocks: wall-clock, this process's CPU time and the
    /// softirq threads' run time.
    pub fn start() -> Self {
        Self {
            softirqd: softirq_threads_cpu(),
            wall: Instant::now(),
            cpu: process_cpu(),
        }
    }

    /// Wall-clock and CPU time since [`Stopwatch::start`].
    pub fn elapsed(&self) -> Elapsed {
        let wall = self.wall.elapsed();
        let cpu = process_cpu().saturating_sub(self.cpu);
        let softirqd = match (self.softirqd, softirq_threads_cpu()) {
            (Some(start), Some(now)) => Some(now.saturating_sub(start)),
            _ => None,
        };
        Elapsed {
            wall,
            cpu,
            softirqd,
        }
    }

    /// The measure's figures, `bytes` having been moved since
    /// [`Stopwatch::start`].
    pub fn stop(self, bytes: usize) -> Moved {
        Moved::new(bytes, self.elapsed())
    }
}

/// Wall-clock and CPU time (all threads) of a measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed {
    /// Wall-clock time.
    pub wall: Duration,
    /// CPU time of every thread of the process (user and system).
    pub cpu: Duration,
    /// Run time of the softirq threads of this process's CPUs meanwhile
    /// ([`softirq_threads_cpu`]; `None`: not readable).
    pub softirqd: Option<Duration>,
}

impl Elapsed {
    /// Wall-clock seconds, floored at a nanosecond: a measure shorter
    /// than the clocks' resolution cannot happen for a MiB or a round
    /// trip, and the floor keeps the figures finite regardless.
    fn wall_secs(&self) -> f64 {
        self.wall.as_secs_f64().max(1e-9)
    }

    /// CPUs kept busy on average: CPU time over wall-clock time.
    pub fn cpus_busy(&self) -> f64 {
        self.cpu.as_secs_f64() / self.wall_secs()
    }
}

/// What one throughput measure moved, in how long, at what CPU cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Moved {
    /// Octets per second of wall-clock time.
    pub bytes_per_s: f64,
    /// Milliseconds of CPU time (all threads) per MiB moved.
    pub cpu_ms_per_mib: f64,
    /// CPUs kept busy on average: CPU time over wall-clock time.
    pub cpus_busy: f64,
    /// Milliseconds the softirq threads of this process's CPUs ran per
    /// MiB moved (not in `cpu_ms_per_mib`; `None`: not readable).
    pub softirqd_ms_per_mib: Option<f64>,
}

impl Moved {
    /// The figures of `bytes` moved in `elapsed`.
    pub fn new(bytes: usize, elapsed: Elapsed) -> Self {
        let mib = (bytes as f64 / MIB).max(1e-9);
        Self {
            bytes_per_s: bytes as f64 / elapsed.wall_secs(),
            cpu_ms_per_mib: elapsed.cpu.as_secs_f64() * 1e3 / mib,
            cpus_busy: elapsed.cpus_busy(),
            softirqd_ms_per_mib: elapsed.softirqd.map(|t| t.as_secs_f64() * 1e3 / mib),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_follow_from_bytes_wall_and_cpu() {
        let m = Moved::new(
            96 << 20,
            Elapsed {
                wall: Duration::from_millis(30),
                cpu: Duration::from_millis(48),
                softirqd: Some(Duration::from_millis(3)),
            },
        );
        assert_eq!(m.softirqd_ms_per_mib, Some(3.0 / 96.0));
        assert!((m.bytes_per_s / MIB - 3200.0).abs() < 1e-6);
        assert!((m.cpu_ms_per_mib - 0.5).abs() < 1e-9);
        assert!((m.cpus_busy - 1.6).abs() < 1e-9);
        // Throughput is CPUs busy over CPU cost, whatever the units.
        let derived = m.cpus_busy / (m.cpu_ms_per_mib / 1e3);
        assert!((derived - m.bytes_per_s / MIB).abs() < 1e-6);
    }

    #[test]
    fn the_process_clock_counts_work_done() {
        let start = process_cpu();
        // Work until the clock moves; a clock that never does (a broken
        // clock id) fails here after ten seconds of wall-clock time.
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut x = 0u64;
        while process_cpu() == start && Instant::now() < deadline {
            for i in 0..10_000u64 {
                x = x.wrapping_mul(31).wrapping_add(std::hint::black_box(i));
            }
        }
        std::hint::black_box(x);
        assert!(
            process_cpu() > start,
            "CLOCK_PROCESS_CPUTIME_ID did not advance"
        );
    }

    #[test]
    fn a_stopwatch_reports_the_cpu_of_other_threads_too() {
        let w = Stopwatch::start();
        let spun = std::thread::spawn(|| {
            let s = process_cpu();
            let deadline = Instant::now() + Duration::from_secs(10);
            while process_cpu() < s + Duration::from_millis(5) && Instant::now() < deadline {}
        });
        spun.join().unwrap();
        let m = w.stop(1 << 20);
        // At least the 5 ms the other thread spun, per the one MiB.
        assert!(m.cpu_ms_per_mib >= 5.0, "{m:?}");
    }

    #[test]
    fn softirq_threads_are_told_by_name_and_their_run_time_read() {
        assert_eq!(softirq_thread_cpu("ksoftirqd/0\n"), Some(0));
        assert_eq!(softirq_thread_cpu("ksoftirqd/17"), Some(17));
        assert_eq!(softirq_thread_cpu("ksoftirqd/"), None);
        assert_eq!(softirq_thread_cpu("ksoftirqd/x"), None);
        assert_eq!(softirq_thread_cpu("kworker/0:1"), None);
        assert_eq!(softirq_thread_cpu("rpcrdma"), None);
        assert_eq!(
            schedstat_run_time("56620474336 54693941629 792050\n"),
            Some(Duration::from_nanos(56_620_474_336))
        );
        assert_eq!(schedstat_run_time(""), None);
        assert_eq!(schedstat_run_time("-1 2 3"), None);
    }

    #[test]
    fn softirq_thread_time_never_runs_backwards() {
        // Where the threads are visible (not in every container), their
        // total only grows; a measure without them reports none.
        let a = softirq_threads_cpu();
        let w = Stopwatch::start();
        let b = softirq_threads_cpu();
        if let (Some(a), Some(b)) = (a, b) {
            assert!(b >= a, "{a:?} then {b:?}");
        }
        let e = w.elapsed();
        assert_eq!(
            e.softirqd.is_some(),
            a.is_some() && softirq_threads_cpu().is_some()
        );
    }
}
