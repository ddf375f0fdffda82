//! What an RPC-level bench is asked to do: the measures, their sizes and
//! counts, and the RPC-over-RDMA settings of both ends.

use std::net::IpAddr;

use rpcrdma_engine::EngineConfig;
use rpcrdma_verbs::QpCaps;

/// The RPC-over-RDMA settings of the bench's connections.
#[derive(Debug, Clone)]
pub struct RdmaSettings {
    /// The clients' engine configuration.
    pub client: EngineConfig,
    /// The bench server's engine configuration (its read window
    /// included).
    pub server: EngineConfig,
    /// Queue pair sizes of both ends.
    pub caps: QpCaps,
}

/// One group of measures of the RPC-level bench.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// NULL round trip (raw TCP ping-pong, RPC-over-RDMA, ONC RPC/TCP).
    Null,
    /// RPC-over-RDMA NULL rate with many calls outstanding.
    Rate,
    /// 1 MiB READ (raw TCP stream, RPC-over-RDMA, ONC RPC/TCP).
    Read,
    /// 1 MiB WRITE (raw TCP stream, RPC-over-RDMA, ONC RPC/TCP), each
    /// RPC path also without the demo procedure's checksum.
    Write,
}

/// Settings of the RPC-level bench (and of the bench server the other
/// RPC benches share).
#[derive(Debug, Clone)]
pub struct RpcSettings {
    /// Rounds; each measures every path back to back.
    pub rounds: usize,
    /// Round trips per side and round (in interleaved batches of 100).
    pub round_trips: usize,
    /// MiB moved per throughput measure.
    pub mib: usize,
    /// Calls kept outstanding for the throughput and rate measures.
    pub outstanding: usize,
    /// Run only these measures (empty: all).
    pub only: Vec<Measure>,
    /// Address the RPC-over-RDMA server binds (port chosen by the system).
    pub listen_ip: IpAddr,
    /// The RPC-over-RDMA settings of both ends.
    pub rdma: RdmaSettings,
}

impl RpcSettings {
    /// Whether measure `m` is to run.
    pub fn wants(&self, m: Measure) -> bool {
        self.only.is_empty() || self.only.contains(&m)
    }

    /// Measures per round (for a progress bar).
    pub fn measures_per_round(&self) -> u64 {
        [
            (Measure::Null, 1),
            (Measure::Rate, 1),
            (Measure::Read, 4),
            (Measure::Write, 5),
        ]
        .iter()
        .filter(|(m, _)| self.wants(*m))
        .map(|(_, n)| n)
        .sum()
    }
}
