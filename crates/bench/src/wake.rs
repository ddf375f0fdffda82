//! The machine state a bench ran in, and the single-CPU variant.
//!
//! Thread wake-up time on small virtual machines is bimodal (see
//! `docs/performance.md`): when both threads share a CPU, or the other CPU
//! is busy, a 64-octet raw TCP round trip between two threads takes a few
//! microseconds; when the other CPU went idle, tens (the hypervisor wakes
//! an idle virtual CPU). Round-trip ratios differ a lot between the two
//! states, so every bench reports which one the raw TCP round trips of
//! each round saw.
//!
//! It also reports the system's TCP congestion control, which every socket
//! of a bench uses (raw TCP, ONC RPC/TCP and software iWARP alike): with
//! `bbr`, TCP paces bursts on loopback too, and on one CPU the paced
//! transmissions run in `ksoftirqd` (`docs/performance.md`, "Congestion
//! control on loopback").

use std::fmt;
use std::sync::OnceLock;

use serde::ser::{Serialize, SerializeStruct, Serializer};

/// The CPU `--pin` pinned this process to, once pinned.
static PINNED: OnceLock<usize> = OnceLock::new();

/// The CPU `--pin` pinned the process to (None: not pinned by us).
pub fn pinned_cpu() -> Option<usize> {
    PINNED.get().copied()
}

/// What a bench reports about the machine state it ran in, from the raw TCP
/// round trips (in microseconds) of its rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    /// The state, or None when no raw TCP round trip was measured.
    pub state: Option<WakeState>,
    /// The median raw TCP round trip, microseconds (NaN if none).
    pub raw_tcp_rtt_us: f64,
    /// `--pin`'s CPU.
    pub pinned_cpu: Option<usize>,
    /// The system's TCP congestion control (None: not known).
    pub tcp_congestion_control: Option<String>,
}

/// Where Linux says which congestion control new TCP sockets get.
const CONGESTION_CONTROL: &str = "/proc/sys/net/ipv4/tcp_congestion_control";

/// The congestion control named in [`CONGESTION_CONTROL`]'s `text`.
fn congestion_control_in(text: &str) -> Option<String> {
    let name = text.trim();
    (!name.is_empty() && !name.contains(char::is_whitespace)).then(|| name.to_string())
}

/// The system's TCP congestion control, if it can be read.
pub fn tcp_congestion_control() -> Option<String> {
    congestion_control_in(&std::fs::read_to_string(CONGESTION_CONTROL).ok()?)
}

/// The `wake_state` object of a bench's JSON report: `state`
/// (`"fast"`, `"slow"`, `"mixed"` or null), `raw_tcp_rtt_us`, the two
/// thresholds (`fast_below_us`, `slow_above_us`), `pinned_cpu` and
/// `tcp_congestion_control`.
impl Serialize for Seen {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_struct("Seen", 6)?;
        m.serialize_field("state", &self.state.map(WakeState::name))?;
        m.serialize_field("raw_tcp_rtt_us", &self.raw_tcp_rtt_us)?;
        m.serialize_field("fast_below_us", &FAST_BELOW_US)?;
        m.serialize_field("slow_above_us", &SLOW_ABOVE_US)?;
        m.serialize_field("pinned_cpu", &self.pinned_cpu)?;
        m.serialize_field("tcp_congestion_control", &self.tcp_congestion_control)?;
        m.end()
    }
}

impl Seen {
    /// The state the raw TCP round trips `rtts_us` (one per round) say.
    pub fn from_rtts(rtts_us: &[f64]) -> Self {
        Seen {
            state: WakeState::overall(rtts_us.iter().copied()),
            raw_tcp_rtt_us: crate::stats::median(rtts_us.to_vec()),
            pinned_cpu: pinned_cpu(),
            tcp_congestion_control: tcp_congestion_control(),
        }
    }

    /// The line a bench's text output ends with.
    pub fn line(&self) -> String {
        let state = match self.state {
            Some(s) => s.to_string(),
            None => "unknown (no raw TCP round trip measured; run the NULL measure)".into(),
        };
        let pin = match self.pinned_cpu {
            Some(c) => format!("pinned to CPU {c} (--pin)"),
            None => "not pinned".into(),
        };
        let cc = match &self.tcp_congestion_control {
            Some(cc) => format!("TCP congestion control {cc} (the system's, on every TCP socket)"),
            None => "TCP congestion control unknown".into(),
        };
        format!("wake-up state: {state}; {pin}; {cc}")
    }
}

/// Raw TCP round trips below this are the fast state.
pub const FAST_BELOW_US: f64 = 15.0;
/// Raw TCP round trips above this are the slow state.
pub const SLOW_ABOVE_US: f64 = 40.0;

/// The wake-up state a raw TCP round trip says the machine was in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeState {
    /// Threads wake fast (shared CPU or busy machine): CPU cost dominates.
    Fast,
    /// Threads wake slowly (an idle CPU is woken per round trip).
    Slow,
    /// In between: the state changed during the measure.
    Mixed,
}

impl WakeState {
    /// The state of a median raw TCP round trip of `rtt_us` microseconds.
    pub fn of(rtt_us: f64) -> Self {
        if rtt_us < FAST_BELOW_US {
            WakeState::Fast
        } else if rtt_us > SLOW_ABOVE_US {
            WakeState::Slow
        } else {
            WakeState::Mixed
        }
    }

    /// The state over several rounds: theirs if all agree, else mixed.
    pub fn overall(rtts_us: impl IntoIterator<Item = f64>) -> Option<Self> {
        let mut all = rtts_us.into_iter().filter(|x| x.is_finite()).map(Self::of);
        let first = all.next()?;
        Some(if all.all(|s| s == first) {
            first
        } else {
            WakeState::Mixed
        })
    }

    /// The state's name in the JSON reports: `fast`, `slow` or `mixed`.
    pub fn name(self) -> &'static str {
        match self {
            WakeState::Fast => "fast",
            WakeState::Slow => "slow",
            WakeState::Mixed => "mixed",
        }
    }
}

impl fmt::Display for WakeState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WakeState::Fast => "fast wake-ups (raw TCP round trip < 15 us: threads share a CPU or the machine is busy; CPU cost dominates)",
            WakeState::Slow => "slow wake-ups (raw TCP round trip > 40 us: an idle CPU is woken per round trip, which hides CPU cost)",
            WakeState::Mixed => "mixed wake-up states (raw TCP round trips between 15 and 40 us, or rounds in different states)",
        })
    }
}

/// `--pin`: the process (and every thread it starts) runs on one CPU, the
/// first it may use: both sides of every measure share it, as with
/// `taskset -c 0`. Returns the CPU.
pub fn pin_to_one_cpu() -> anyhow::Result<usize> {
    // Called before the bench starts any thread, so every thread inherits
    // the mask.
    let set = rustix::thread::sched_getaffinity(None)
        .map_err(|e| anyhow::anyhow!("--pin: cannot read the CPU affinity: {e}"))?;
    let Some(cpu) = (0..rustix::thread::CpuSet::MAX_CPU).find(|&c| set.is_set(c)) else {
        anyhow::bail!("--pin: this process may run on no CPU");
    };
    let mut one = rustix::thread::CpuSet::new();
    one.set(cpu);
    rustix::thread::sched_setaffinity(None, &one)
        .map_err(|e| anyhow::anyhow!("--pin: cannot pin to CPU {cpu}: {e}"))?;
    let _ = PINNED.set(cpu);
    Ok(cpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(s: &Seen) -> serde_json::Value {
        serde_json::to_value(s).unwrap()
    }

    #[test]
    fn states_by_raw_tcp_round_trip() {
        assert_eq!(WakeState::of(6.0), WakeState::Fast);
        assert_eq!(WakeState::of(90.0), WakeState::Slow);
        assert_eq!(WakeState::of(25.0), WakeState::Mixed);
        assert_eq!(WakeState::overall([5.0, 7.0]), Some(WakeState::Fast));
        assert_eq!(WakeState::overall([5.0, 70.0]), Some(WakeState::Mixed));
        assert_eq!(WakeState::overall([f64::NAN]), None);
        assert_eq!(WakeState::overall([90.0, 120.0]), Some(WakeState::Slow));
        // The thresholds themselves are in between.
        assert_eq!(WakeState::of(FAST_BELOW_US), WakeState::Mixed);
        assert_eq!(WakeState::of(SLOW_ABOVE_US), WakeState::Mixed);
    }

    #[test]
    fn seen_reports_state_median_and_pin() {
        let s = Seen::from_rtts(&[6.0, 5.0, 7.0]);
        assert_eq!(s.state, Some(WakeState::Fast));
        assert_eq!(s.raw_tcp_rtt_us, 6.0);
        let j = json(&s);
        assert_eq!(j["state"], "fast");
        assert_eq!(j["raw_tcp_rtt_us"], 6.0);
        assert!(s.line().starts_with("wake-up state: fast wake-ups"));
        let none = Seen::from_rtts(&[]);
        assert_eq!(none.state, None);
        assert!(json(&none)["state"].is_null());
        assert!(json(&none)["raw_tcp_rtt_us"].is_null());
        assert!(none.line().contains("unknown"));
    }

    #[test]
    fn congestion_control_is_reported() {
        assert_eq!(congestion_control_in("bbr\n").as_deref(), Some("bbr"));
        assert_eq!(congestion_control_in(" cubic "), Some("cubic".into()));
        assert_eq!(congestion_control_in("\n"), None);
        assert_eq!(congestion_control_in("reno cubic"), None);
        let mut s = Seen::from_rtts(&[6.0]);
        s.tcp_congestion_control = Some("bbr".into());
        assert_eq!(json(&s)["tcp_congestion_control"], "bbr");
        assert!(s
            .line()
            .ends_with("; TCP congestion control bbr (the system's, on every TCP socket)"));
        s.tcp_congestion_control = None;
        assert!(json(&s)["tcp_congestion_control"].is_null());
        assert!(s.line().ends_with("; TCP congestion control unknown"));
        // On Linux the system's own is read.
        if std::path::Path::new(CONGESTION_CONTROL).exists() {
            assert!(tcp_congestion_control().is_some());
        }
    }
}
