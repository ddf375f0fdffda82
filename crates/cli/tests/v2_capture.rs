//! A Version Two capture, decoded by `rpcrdma decode` (issue 6, item 4:
//! tshark does not know Version Two).
//!
//! A real Version Two exchange runs over software iWARP on loopback: the
//! demo program served by `serve_rdma`, called through an `RdmaConnector`
//! that speaks only Version Two, with every message form (short, Write
//! chunk, Read chunk, Long call, Long reply) and an `RDMA2_ERROR` round
//! trip. An in-process TCP relay between them records both byte streams
//! (no tcpdump, no root); the test writes them to a pcap file, reads that
//! file back like any capture (pcap -> TCP reassembly -> MPA -> FPDU ->
//! DDP/RDMAP Send payload) and runs the built `rpcrdma decode --json` on
//! every RPC-over-RDMA message it finds. Each decode must equal, field for
//! field, what an independent reading of the draft-cel-01 §4.2 XDR in this
//! file finds; and one message is checked by hand, word by word.
//!
//! The capture is kept at `target/tmp/v2-capture.pcap` (see
//! `docs/testing-campaign.md` for how to look at it).

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use rpcrdma_demoprog::{
    checksum, pattern, procs, serve_demo, ulb, DemoClient, ReadArgs, ReadRes, ReadResok, WriteArgs,
    WriteRes, PROGRAM, VERSION,
};
use rpcrdma_engine::{CallError, EngineConfig, VersionPolicy};
use rpcrdma_oncrpc::{Client, ClientConfig, Server, ServerConfig, Services};
use rpcrdma_softiwarp::SoftIwarp;
use rpcrdma_testkit::relay::{Recorded, Relay};
use rpcrdma_testkit::{mpa, pcap, tcp};
use rpcrdma_transport::{serve_rdma, ListenConfig, RdmaConnector};
use rpcrdma_wire::VersionRange;
use serde_json::{json, Value};

const CALL: u32 = 0;
const REPLY: u32 = 1;
/// Bytes moved by READ and WRITE: several FPDUs, a modest capture.
const DATA: u32 = 64 * 1024;
/// Size of the Long call and Long reply (above every inline threshold).
const LONG: u32 = 8192;

/// Runs the exchange through a relay; returns what the relay recorded.
fn record_exchange() -> Recorded {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let dev = SoftIwarp::new();
        let mut services = Services::new();
        serve_demo(&mut services);
        let server = Server::new(services, ServerConfig::default());
        let svc = serve_rdma(
            &server,
            dev.clone(),
            "127.0.0.1:0".parse().unwrap(),
            ListenConfig::default(),
        )
        .await
        .expect("listen");
        let relay = Relay::start(svc.local_addr()).expect("relay");

        let mut cfg = EngineConfig::client();
        cfg.client_version = VersionPolicy::V2;
        cfg.versions = VersionRange::V2_ONLY;
        let connector = RdmaConnector::new(dev, relay.local_addr(), cfg);
        let handle = connector.handle();
        let client = Client::connect(connector, ClientConfig::default())
            .await
            .expect("connect");
        let demo = DemoClient::new(client.clone());
        let t = handle.transport().expect("transport");

        demo.null().await.expect("NULL");
        assert_eq!(t.negotiated(), Some((2, false)), "Version Two settled");
        let echo = pattern(1, 200);
        assert_eq!(demo.echo(echo.clone()).await.expect("ECHO"), echo);
        demo.read_verified(2, DATA)
            .await
            .expect("READ (Write chunk)");
        demo.write_verified(pattern(3, DATA as usize))
            .await
            .expect("WRITE (Read chunk)");
        let data = pattern(4, LONG as usize);
        let want = checksum(&data);
        let r: WriteRes = client
            .call(
                PROGRAM,
                VERSION,
                procs::WRITE,
                &WriteArgs { data },
                &ulb::write().no_reduce(),
            )
            .await
            .expect("Long call");
        assert_eq!((r.count, r.crc32c), (LONG, want));
        let r: ReadRes = client
            .call(
                PROGRAM,
                VERSION,
                procs::READ,
                &ReadArgs {
                    seed: 5,
                    count: LONG,
                },
                &ulb::read(LONG).no_reduce(),
            )
            .await
            .expect("Long reply");
        assert!(
            matches!(r, ReadRes::DemoOk(ReadResok { ref data, .. }) if data.len() == LONG as usize)
        );
        let err = t.error_round_trip().await.expect("RDMA2_ERROR round trip");
        assert!(matches!(err, CallError::RdmaError { .. }), "{err:?}");

        drop(demo);
        drop(client);
        drop(t);
        server.shutdown().await;
        svc.stop().await;
        // Both ends close; the relay then has the whole connection.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while !relay.connections().first().is_some_and(|c| c.finished) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the connection did not close within 30 s"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let mut conns = relay.connections();
        assert_eq!(conns.len(), 1, "one connection");
        conns.remove(0)
    })
}

/// `rpcrdma decode --json [extra]` on raw message bytes (standard input).
fn decode_json(msg: &[u8], extra: &[String]) -> (i32, Value) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rpcrdma"))
        .args(["decode", "--json"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run rpcrdma");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(msg)
        .expect("write stdin");
    let out = child.wait_with_output().expect("wait");
    let text = String::from_utf8_lossy(&out.stdout);
    let v = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "rpcrdma decode printed no JSON ({e}): {text} {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

/// Reads big-endian XDR words, independently of the crates under test.
struct Xdr<'a> {
    b: &'a [u8],
    at: usize,
}

impl Xdr<'_> {
    fn u32(&mut self) -> u32 {
        let w = self
            .b
            .get(self.at..self.at + 4)
            .unwrap_or_else(|| panic!("message ends at byte {}", self.at));
        self.at += 4;
        u32::from_be_bytes([w[0], w[1], w[2], w[3]])
    }

    fn u64(&mut self) -> u64 {
        (u64::from(self.u32()) << 32) | u64::from(self.u32())
    }

    /// `struct rpcrdma2_segment { uint32 rdma_handle; uint32 rdma_length;
    /// uint64 rdma_offset; }`
    fn segment(&mut self) -> Value {
        let (handle, length, offset) = (self.u32(), self.u32(), self.u64());
        json!({"handle": handle, "length": length, "offset": offset})
    }

    /// `struct rpcrdma2_write_chunk { struct rpcrdma2_segment rdma_target<>; }`
    fn write_chunk(&mut self) -> Value {
        let n = self.u32();
        assert!(n < 1000, "implausible segment count {n}");
        Value::Array((0..n).map(|_| self.segment()).collect())
    }

    /// XDR optional-data: a boolean discriminator.
    fn more(&mut self) -> bool {
        match self.u32() {
            0 => false,
            1 => true,
            d => panic!("optional-data discriminator {d} at byte {}", self.at - 4),
        }
    }
}

fn direction_name(d: u32) -> &'static str {
    match d {
        CALL => "CALL",
        REPLY => "REPLY",
        _ => panic!("msg_type {d} is neither CALL nor REPLY"),
    }
}

/// The JSON `rpcrdma decode --json` must print for a valid Version Two
/// message, read from the draft-cel-01 §4.2 XDR:
///
/// ```text
/// struct rpcrdma2_xprt_hdr { uint32 rdma_xid; uint32 rdma_vers;
///     uint32 rdma_credit; rpcrdma2_body rdma_body; };
/// union rpcrdma2_body switch (rpcrdma2_proc rdma_proc) {
///     case RDMA2_MSG: case RDMA2_NOMSG: rpcrdma2_chunk_lists rdma_chunks;
///     case RDMA2_ERROR: rpcrdma2_error rdma_error;
///     case RDMA2_OPTIONAL: rpcrdma2_optional rdma_optional; };
/// ```
fn expected(msg: &[u8]) -> Value {
    let mut x = Xdr { b: msg, at: 0 };
    let (xid, vers, credits, proc_) = (x.u32(), x.u32(), x.u32(), x.u32());
    assert_eq!(vers, 2, "a Version One message in a Version Two exchange");
    let mut v = json!({
        "valid": true, "xid": xid, "vers": vers, "credits": credits,
        "reads": [], "writes": [], "reply": null,
    });
    match proc_ {
        0 | 1 => {
            v["proc"] = json!(if proc_ == 0 {
                "RDMA2_MSG"
            } else {
                "RDMA2_NOMSG"
            });
            // struct rpcrdma2_chunk_lists { enum msg_type rdma_direction;
            //   rpcrdma2_read_list *rdma_reads; rpcrdma2_write_list
            //   *rdma_writes; rpcrdma2_write_chunk *rdma_reply; };
            v["direction"] = json!(direction_name(x.u32()));
            let mut reads = Vec::new();
            while x.more() {
                // struct rpcrdma2_read_segment { uint32 rdma_position;
                //   struct rpcrdma2_segment rdma_target; };
                let position = x.u32();
                let mut s = x.segment();
                s["position"] = json!(position);
                reads.push(s);
            }
            let mut writes = Vec::new();
            while x.more() {
                writes.push(x.write_chunk());
            }
            v["reads"] = Value::Array(reads);
            v["writes"] = Value::Array(writes);
            if x.more() {
                v["reply"] = x.write_chunk();
            }
        }
        4 => {
            v["proc"] = json!("RDMA2_ERROR");
            // §4.2.2: an RDMA2_ERROR always goes Responder to Requester.
            v["direction"] = json!("REPLY");
            // union rpcrdma2_error switch (rpcrdma2_errcode rdma_err)
            match x.u32() {
                // "err" in Version One terms, "err_name" as §4.2 names it.
                1 => {
                    v["err"] = json!("ERR_VERS");
                    v["err_name"] = json!("RDMA2_ERR_VERS");
                    v["vers_low"] = json!(x.u32());
                    v["vers_high"] = json!(x.u32());
                }
                2 => {
                    v["err"] = json!("ERR_BADHEADER");
                    v["err_name"] = json!("RDMA2_ERR_BAD_HEADER");
                }
                3 => {
                    v["err"] = json!("ERR_INVAL_OPTION");
                    v["err_name"] = json!("RDMA2_ERR_INVAL_OPTION");
                }
                e => panic!("rdma_err {e}"),
            }
        }
        5 => {
            v["proc"] = json!("RDMA2_OPTIONAL");
            // struct rpcrdma2_optional { enum msg_type rdma_optdir;
            //   uint32 rdma_opttype; opaque rdma_optinfo<>; };
            v["direction"] = json!(direction_name(x.u32()));
            v["opttype"] = json!(x.u32());
            let n = x.u32() as usize;
            let info = msg.get(x.at..x.at + n).expect("rdma_optinfo");
            v["optinfo"] = json!(info.iter().map(|b| format!("{b:02x}")).collect::<String>());
            x.at += n.div_ceil(4) * 4;
        }
        p => panic!("rdma_proc {p} in our own traffic"),
    }
    v["header_len"] = json!(x.at);
    v["payload_len"] = json!(msg.len() - x.at);
    v
}

/// Word `i` of a message.
fn word(msg: &[u8], i: usize) -> u32 {
    let b = &msg[i * 4..i * 4 + 4];
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

#[test]
fn v2_capture_decoded_by_rpcrdma_decode() {
    let rec = record_exchange();

    // The capture, kept for people to look at.
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("v2-capture.pcap");
    std::fs::write(&path, rec.to_pcap(1460)).expect("write the pcap");
    eprintln!("Version Two capture: {}", path.display());

    // Read it back like any capture.
    let file = std::fs::read(&path).expect("read the pcap");
    let frames = pcap::read(&file).expect("a pcap file");
    let streams = tcp::reassemble(&frames);
    assert_eq!(streams.len(), 2, "one TCP connection, two directions");
    let (req, rep, (calls, replies)) =
        mpa::read_connection(&streams[0].data, &streams[1].data).expect("MPA");
    assert!(req.request && !rep.request);

    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    let mut checked_by_hand = 0;
    for (from_client, msg) in calls
        .iter()
        .map(|m| (true, m))
        .chain(replies.iter().map(|m| (false, m)))
    {
        assert!(msg.len() >= 16, "short message {msg:02x?}");
        let proc_ = word(msg, 3);
        if from_client && proc_ == 9 {
            // The deliberate bad header of the RDMA2_ERROR round trip: the
            // decoder, told the credits our server grants, must predict the
            // server's answer byte for byte.
            let grant = EngineConfig::server().credits_grant.to_string();
            let (code, v) = decode_json(msg, &["--credits".into(), grant]);
            assert_eq!(code, 1, "{v}");
            assert_eq!(v["err"], "ERR_BADHEADER", "{v}");
            let answer = replies
                .iter()
                .find(|r| word(r, 0) == word(msg, 0))
                .expect("the server answered the bad header");
            let hex: String = answer.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(v["reply_hex"], json!(hex), "decoder and server disagree");
            *seen.entry("bad header".into()).or_default() += 1;
            continue;
        }
        let want = expected(msg);
        let extra: Vec<String> = match want.get("opttype") {
            Some(t) => vec!["--accept-option".into(), t.to_string()],
            None => Vec::new(),
        };
        let (code, got) = decode_json(msg, &extra);
        assert_eq!(code, 0, "{got}");
        assert_eq!(got, want, "rpcrdma decode differs from the XDR");

        // Direction (§4.2.2): our client sends only calls, our server only
        // replies and errors.
        let dir = if from_client { "CALL" } else { "REPLY" };
        assert_eq!(got["direction"], dir, "{got}");
        assert_eq!(got["vers"], 2);
        let header_len = got["header_len"].as_u64().unwrap() as usize;
        if got["proc"] == "RDMA2_MSG" {
            // The RPC message follows, with the same XID and msg_type.
            assert_eq!(word(msg, header_len / 4), word(msg, 0), "RPC XID");
            let mtype = word(msg, header_len / 4 + 1);
            assert_eq!(direction_name(mtype), dir, "RPC msg_type");
        }
        if got["proc"] == "RDMA2_NOMSG" {
            // §4.2.1: RDMA2_NOMSG carries no payload; the message is in the
            // Position-Zero Read chunk (call) or the Reply chunk (reply).
            assert_eq!(got["payload_len"], 0, "{got}");
        }
        let kind = format!(
            "{} {} reads={} writes={} reply={}",
            got["proc"].as_str().unwrap_or("?"),
            dir,
            got["reads"].as_array().map_or(0, Vec::len),
            got["writes"].as_array().map_or(0, Vec::len),
            !got["reply"].is_null()
        );
        *seen.entry(kind).or_default() += 1;

        // One message by hand: the READ call, which carries a Write chunk
        // and no Reply chunk: the binding states the reduced results
        // (12 bytes), which fit inline (spec note N13).
        if from_client
            && proc_ == 0
            && msg.len() == 27 * 4
            && word(msg, 6) == 1
            && word(msg, 19) == procs::READ
            && word(msg, 26) == DATA
        {
            checked_by_hand += 1;
            let xid = word(msg, 0);
            // struct rpcrdma2_xprt_hdr
            assert_eq!(word(msg, 1), 2, "rdma_vers: Version Two");
            assert_eq!(word(msg, 2), 128, "rdma_credit: the credits we ask for");
            assert_eq!(word(msg, 3), 0, "rdma_proc: RDMA2_MSG = 0");
            // rpcrdma2_body, case RDMA2_MSG: struct rpcrdma2_chunk_lists
            assert_eq!(word(msg, 4), CALL, "rdma_direction: CALL = 0");
            assert_eq!(word(msg, 5), 0, "rdma_reads: *rpcrdma2_read_list, absent");
            assert_eq!(
                word(msg, 6),
                1,
                "rdma_writes: *rpcrdma2_write_list, present"
            );
            // struct rpcrdma2_write_list { rpcrdma2_write_chunk rdma_entry;
            //   rpcrdma2_write_list *rdma_next; }
            assert_eq!(word(msg, 7), 1, "rdma_entry.rdma_target<>: one segment");
            // struct rpcrdma2_segment: handle, length, offset (uint64)
            assert_ne!(word(msg, 8), 0, "rdma_handle: the registration's STag");
            assert_eq!(word(msg, 9), DATA, "rdma_length: room for the READ's data");
            let offset = (u64::from(word(msg, 10)) << 32) | u64::from(word(msg, 11));
            assert_eq!(word(msg, 12), 0, "rdma_next: no second Write chunk");
            assert_eq!(
                word(msg, 13),
                0,
                "rdma_reply: *rpcrdma2_write_chunk, absent (the reduced reply fits inline)"
            );
            // RFC 5531 call header follows (header is 14 words = 56 bytes).
            assert_eq!(word(msg, 14), xid, "RPC xid = rdma_xid");
            assert_eq!(word(msg, 15), CALL, "RPC msg_type CALL");
            assert_eq!(word(msg, 16), 2, "rpcvers 2");
            assert_eq!(word(msg, 17), PROGRAM, "prog");
            assert_eq!(word(msg, 18), VERSION, "vers");
            assert_eq!(word(msg, 19), procs::READ, "proc READ");
            assert_eq!(&[word(msg, 20), word(msg, 21)], &[0, 0], "cred AUTH_NONE");
            assert_eq!(&[word(msg, 22), word(msg, 23)], &[0, 0], "verf AUTH_NONE");
            assert_eq!(&[word(msg, 24), word(msg, 25)], &[0, 2], "seed 2 (uint64)");
            assert_eq!(word(msg, 26), DATA, "count");
            assert_eq!(msg.len(), 27 * 4, "nothing else");
            // The decoder says the same.
            let (_, got) = decode_json(msg, &[]);
            assert_eq!(got["header_len"], 56);
            assert_eq!(got["payload_len"], 13 * 4);
            assert_eq!(
                got["writes"],
                json!([[{"handle": word(msg, 8), "length": DATA, "offset": offset}]])
            );
            assert!(got["reply"].is_null(), "{got}");
        }
    }
    assert_eq!(checked_by_hand, 1, "the READ call was found once");
    // Every form went by, in the right direction.
    for kind in [
        "RDMA2_MSG CALL reads=0 writes=0 reply=false",
        "RDMA2_MSG CALL reads=0 writes=0 reply=true",
        "RDMA2_MSG CALL reads=0 writes=1 reply=false",
        "RDMA2_MSG CALL reads=1 writes=0 reply=false",
        "RDMA2_NOMSG CALL reads=1 writes=0 reply=false",
        "RDMA2_MSG REPLY reads=0 writes=0 reply=false",
        "RDMA2_MSG REPLY reads=0 writes=1 reply=false",
        "RDMA2_NOMSG REPLY reads=0 writes=0 reply=true",
        "RDMA2_ERROR REPLY reads=0 writes=0 reply=false",
        "bad header",
    ] {
        assert!(seen.contains_key(kind), "no {kind} in {seen:#?}");
    }
}
