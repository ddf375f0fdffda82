//! BULK, a store of named blobs (`bulk.x`): the code `build.rs` generates
//! from it, and a server that keeps the blobs in memory.
//!
//! `src/main.rs` serves it over RPC-over-RDMA and TCP, calls it with the
//! generated client and shows, from the connections' counters, that the
//! bulk data went by RDMA Read and RDMA Write.

use std::collections::HashMap;
use std::sync::Mutex;

use rpcrdma::bytes::Bytes;
use rpcrdma::{CallInfo, ProcError};

/// The code generated from `bulk.x`: the types (`PutArgs`, `GetRes`,
/// ...), the constants (`BULK_PROG`, `BULK_V1`, `BULK_MAX_DATA`), and per
/// version a module (`bulk_v1`) with the client (`bulk_v1::Client`), the
/// server trait (`bulk_v1::Server`), `bulk_v1::register` and the call
/// hints of the Upper-Layer Binding.
#[allow(missing_docs, clippy::all)]
pub mod bulk {
    include!(concat!(env!("OUT_DIR"), "/bulk.rs"));
}

use bulk::{bulk_v1, BulkStat, GetArgs, GetRes, GetResok, PutArgs, PutRes};

/// FNV-1a, 64 bits: the checksum PUT and GET report.
pub fn checksum(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The BULK server: blobs in memory, by name.
#[derive(Debug, Default)]
pub struct Store {
    blobs: Mutex<HashMap<String, Bytes>>,
}

impl bulk_v1::Server for Store {
    async fn put(&self, _info: CallInfo, args: PutArgs) -> Result<PutRes, ProcError> {
        // Over RDMA, `args.data` is the memory the server's RDMA Reads
        // filled: no copy on the way here.
        let res = PutRes {
            size: args.data.len() as u32,
            checksum: checksum(&args.data),
        };
        self.blobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(args.name, args.data);
        Ok(res)
    }

    async fn get(&self, _info: CallInfo, args: GetArgs) -> Result<GetRes, ProcError> {
        if args.count > bulk::BULK_MAX_DATA {
            return Ok(GetRes::Default(BulkStat::BulkToobig));
        }
        let blobs = self.blobs.lock().unwrap_or_else(|p| p.into_inner());
        let Some(blob) = blobs.get(&args.name) else {
            return Ok(GetRes::Default(BulkStat::BulkNoent));
        };
        let data = blob.slice(..blob.len().min(args.count as usize));
        Ok(GetRes::BulkOk(GetResok {
            checksum: checksum(&data),
            data,
        }))
    }
}
