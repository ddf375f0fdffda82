//! The Wireshark oracle: our encoded Version One messages, framed as RDMAP
//! Sends in MPA FPDUs behind a real MPA Request/Reply (revision 1 and 2, CRC
//! on and off), written to a pcap and checked by
//! `shared/oracle/wire-check.sh`, so an independent decoder (tshark) agrees
//! with every byte.
//!
//! Needs `tshark`. When it is missing the test prints a SKIP line and
//! passes, unless `RPCRDMA_REQUIRE_ORACLE=1`, in which case it fails. It never
//! installs anything itself. `RPCRDMA_SHARED_DIR` overrides where `shared/`
//! is found.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::Command;

use bytes::{BufMut, Bytes, BytesMut};
use rpcrdma_testkit::mpa::{self, StartFrame};
use rpcrdma_testkit::tcp::{Conversation, Side};
use rpcrdma_wire::{
    decode, ChunkLists, DecodeConfig, ErrorBody, ErrorReply, PrivateData, ReadSegment, Segment,
    V1Body, V1Header, WriteChunk,
};
use rpcrdma_xdr::Encode;

const PORT: u16 = 20049;
const NFS: u32 = 100_003;

fn rpc_call(xid: u32, prog: u32, vers: u32, proc_: u32, args: &[u8]) -> Vec<u8> {
    let mut b = BytesMut::new();
    for v in [xid, 0, 2, prog, vers, proc_, 0, 0, 0, 0] {
        b.put_u32(v);
    }
    b.put_slice(args);
    b.to_vec()
}

fn rpc_reply_success(xid: u32, results: &[u8]) -> Vec<u8> {
    let mut b = BytesMut::new();
    for v in [xid, 1, 0, 0, 0, 0] {
        b.put_u32(v);
    }
    b.put_slice(results);
    b.to_vec()
}

fn seg(handle: u32, length: u32, offset: u64) -> Segment {
    Segment {
        handle,
        length,
        offset,
    }
}

fn message(hdr: &V1Header, payload: &[u8]) -> Vec<u8> {
    let mut b = BytesMut::new();
    hdr.encode_into(&mut b);
    b.put_slice(payload);
    let m = b.freeze();
    // Everything we hand the oracle must be valid for our own decoder too.
    decode(&Bytes::clone(&m), &DecodeConfig::default())
        .unwrap_or_else(|e| panic!("test message is invalid: {e}"));
    m.to_vec()
}

/// What one side puts on the wire: an RDMAP Send of an RPC-over-RDMA
/// message, or another RDMAP message (Read Request / Response, Write) as a
/// ready-made ULPDU.
enum Op {
    Send(Vec<u8>),
    ReadRequest {
        sink_stag: u32,
        sink_to: u64,
        size: u32,
        src_stag: u32,
        src_to: u64,
    },
    Tagged {
        opcode: u8,
        stag: u32,
        to: u64,
        data: Vec<u8>,
    },
}

fn nfs_fh() -> Vec<u8> {
    let mut b = BytesMut::new();
    b.put_u32(32);
    b.put_slice(&[0xab; 32]);
    b.to_vec()
}

/// The traffic of one connection: every Version One message form, with the
/// RDMA Reads and Writes that move their chunks so that tshark reassembles
/// the RPC messages inside the chunks too.
fn conversation() -> Vec<(Side, Op)> {
    use Side::{Client, Server};
    let mut out = Vec::new();
    let none = ChunkLists::default();
    let msg = |xid, body| V1Header {
        xid,
        credits: 32,
        body,
    };

    // 1. Short call and reply: RDMA_MSG without chunks, NFSv3 NULL.
    let x = 0x1000_0001;
    out.push((
        Client,
        Op::Send(message(
            &msg(x, V1Body::Msg(none.clone())),
            &rpc_call(x, NFS, 3, 0, &[]),
        )),
    ));
    out.push((
        Server,
        Op::Send(message(
            &msg(x, V1Body::Msg(none.clone())),
            &rpc_reply_success(x, &[]),
        )),
    ));

    // 2. RDMA_MSG with a Write list and a Reply chunk: NFSv3 READ; the
    //    reply's data goes by RDMA Write into the Write chunk.
    let x = 0x1000_0002;
    let mut args = BytesMut::new();
    args.put_slice(&nfs_fh());
    args.put_u64(0);
    args.put_u32(8192);
    let offered = WriteChunk::new(vec![
        seg(0x100, 4096, 0x7f00_0000_1000),
        seg(0x101, 4096, 0x7f00_0000_2000),
    ]);
    let chunks = ChunkLists {
        reads: vec![],
        writes: vec![offered],
        reply: Some(WriteChunk::new(vec![seg(0x102, 1024, 0x7f00_0000_3000)])),
    };
    out.push((
        Client,
        Op::Send(message(
            &msg(x, V1Body::Msg(chunks)),
            &rpc_call(x, NFS, 3, 6, &args),
        )),
    ));
    let data = vec![0x5a; 100];
    out.push((
        Server,
        Op::Tagged {
            opcode: mpa::OP_WRITE,
            stag: 0x100,
            to: 0x7f00_0000_1000,
            data: data.clone(),
        },
    ));
    let mut res = BytesMut::new();
    res.put_u32(0); // NFS3_OK
    res.put_u32(0); // no post-op attributes
    res.put_u32(100); // count
    res.put_u32(1); // eof
    res.put_u32(100); // data<>: length inline, bytes in the Write chunk
    let used = WriteChunk::new(vec![
        seg(0x100, 100, 0x7f00_0000_1000),
        seg(0x101, 0, 0x7f00_0000_2000),
    ]);
    let chunks = ChunkLists {
        writes: vec![used],
        ..ChunkLists::default()
    };
    out.push((
        Server,
        Op::Send(message(
            &msg(x, V1Body::Msg(chunks)),
            &rpc_reply_success(x, &res),
        )),
    ));

    // 3. RDMA_MSG with a Read chunk at a non-zero position: NFSv3 WRITE
    //    whose data the server pulls with an RDMA Read.
    let x = 0x1000_0003;
    let mut args = BytesMut::new();
    args.put_slice(&nfs_fh());
    args.put_u64(0);
    args.put_u32(4096); // count
    args.put_u32(0); // UNSTABLE
    args.put_u32(4096); // data<> length; the bytes are in the Read chunk
    let call = rpc_call(x, NFS, 3, 7, &args);
    let position = u32::try_from(call.len()).unwrap();
    let chunks = ChunkLists {
        reads: vec![ReadSegment {
            position,
            target: seg(0x200, 4096, 0x7f00_0001_0000),
        }],
        ..ChunkLists::default()
    };
    out.push((
        Client,
        Op::Send(message(&msg(x, V1Body::Msg(chunks)), &call)),
    ));
    out.push((
        Server,
        Op::ReadRequest {
            sink_stag: 0x9000,
            sink_to: 0,
            size: 4096,
            src_stag: 0x200,
            src_to: 0x7f00_0001_0000,
        },
    ));
    out.push((
        Client,
        Op::Tagged {
            opcode: mpa::OP_READ_RESPONSE,
            stag: 0x9000,
            to: 0,
            data: vec![0xc3; 4096],
        },
    ));

    // 4. Long call: RDMA_NOMSG with a Position-Zero Read chunk of two
    //    segments (NFSv3 GETATTR), pulled by two RDMA Reads ...
    let x = 0x1000_0004;
    let call = rpc_call(x, NFS, 3, 1, &nfs_fh());
    let (first, second) = call.split_at(40);
    let chunks = ChunkLists {
        reads: vec![
            ReadSegment {
                position: 0,
                target: seg(0x300, 40, 0x7f00_0002_0000),
            },
            ReadSegment {
                position: 0,
                target: seg(
                    0x301,
                    u32::try_from(second.len()).unwrap(),
                    0x7f00_0002_0400,
                ),
            },
        ],
        writes: vec![],
        reply: Some(WriteChunk::new(vec![seg(0x302, 4096, 0x7f00_0003_0000)])),
    };
    out.push((
        Client,
        Op::Send(message(&msg(x, V1Body::NoMsg(chunks)), &[])),
    ));
    out.push((
        Server,
        Op::ReadRequest {
            sink_stag: 0x9001,
            sink_to: 0,
            size: 40,
            src_stag: 0x300,
            src_to: 0x7f00_0002_0000,
        },
    ));
    out.push((
        Server,
        Op::ReadRequest {
            sink_stag: 0x9002,
            sink_to: 0,
            size: u32::try_from(second.len()).unwrap(),
            src_stag: 0x301,
            src_to: 0x7f00_0002_0400,
        },
    ));
    out.push((
        Client,
        Op::Tagged {
            opcode: mpa::OP_READ_RESPONSE,
            stag: 0x9001,
            to: 0,
            data: first.to_vec(),
        },
    ));
    out.push((
        Client,
        Op::Tagged {
            opcode: mpa::OP_READ_RESPONSE,
            stag: 0x9002,
            to: 0,
            data: second.to_vec(),
        },
    ));

    // 5. ... and a Long reply: RDMA Write into the Reply chunk, then
    //    RDMA_NOMSG returning the Reply chunk with the length written.
    let mut attrs = BytesMut::new();
    attrs.put_u32(0); // NFS3_OK
    for v in [1u32, 0o644, 1, 0, 0] {
        attrs.put_u32(v); // type, mode, nlink, uid, gid
    }
    for v in [4096u64, 4096, 0, 1, 2, 0, 0, 0] {
        attrs.put_u64(v); // size, used, rdev, fsid, fileid, atime, mtime, ctime
    }
    let reply = rpc_reply_success(x, &attrs);
    let len = u32::try_from(reply.len()).unwrap();
    out.push((
        Server,
        Op::Tagged {
            opcode: mpa::OP_WRITE,
            stag: 0x302,
            to: 0x7f00_0003_0000,
            data: reply,
        },
    ));
    let chunks = ChunkLists {
        reply: Some(WriteChunk::new(vec![seg(0x302, len, 0x7f00_0003_0000)])),
        ..ChunkLists::default()
    };
    out.push((
        Server,
        Op::Send(message(&msg(x, V1Body::NoMsg(chunks)), &[])),
    ));

    // 6. RDMA_ERROR, both kinds.
    for (x, body) in [
        (0x1000_0005u32, ErrorBody::Vers { low: 1, high: 1 }),
        (0x1000_0006, ErrorBody::BadHeader),
    ] {
        out.push((
            Server,
            Op::Send(
                ErrorReply {
                    xid: x,
                    vers: 1,
                    credits: 32,
                    body,
                }
                .to_bytes()
                .to_vec(),
            ),
        ));
    }
    out
}

/// Writes one MPA connection carrying [`conversation`].
fn write_capture(dir: &Path, rev: u8, crc: bool, client_port: u16) -> PathBuf {
    let client = SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 1), client_port);
    let server = SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 1), PORT);
    let mut conv = Conversation::new(client, server);
    conv.handshake();
    let pd = PrivateData::new(4096, 4096, true).to_bytes();
    let ird_ord = (rev == 2).then_some((16u16, 16u16));
    conv.send(
        Side::Client,
        &StartFrame::new(true, rev, crc, ird_ord, &pd).to_bytes(),
    );
    conv.send(
        Side::Server,
        &StartFrame::new(false, rev, crc, ird_ord, &pd).to_bytes(),
    );
    // MSNs count from 1 per queue and direction: QN 0 Sends, QN 1 Read Requests.
    let mut send_msn = [1u32, 1u32];
    let mut read_msn = [1u32, 1u32];
    for (side, op) in conversation() {
        let i = usize::from(side == Side::Server);
        let ulpdu = match op {
            Op::Send(m) => {
                send_msn[i] += 1;
                mpa::send_ulpdu(send_msn[i] - 1, &m)
            }
            Op::ReadRequest {
                sink_stag,
                sink_to,
                size,
                src_stag,
                src_to,
            } => {
                read_msn[i] += 1;
                mpa::read_request_ulpdu(read_msn[i] - 1, sink_stag, sink_to, size, src_stag, src_to)
            }
            Op::Tagged {
                opcode,
                stag,
                to,
                data,
            } => mpa::tagged_ulpdu(opcode, stag, to, &data),
        };
        conv.send(side, &mpa::fpdu(&ulpdu, crc));
    }
    let path = dir.join(format!("wire-v1-rev{rev}-crc{}.pcap", u8::from(crc)));
    std::fs::write(&path, conv.finish()).unwrap();
    path
}

fn have_tshark() -> bool {
    Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn tshark_agrees_on_our_version_one_messages() {
    let require = std::env::var("RPCRDMA_REQUIRE_ORACLE").is_ok_and(|v| v == "1");
    let shared = rpcrdma_testkit::shared_dir(env!("CARGO_MANIFEST_DIR"));
    let script = shared.join("oracle/wire-check.sh");
    if !have_tshark() || !script.exists() {
        let why = if script.exists() {
            "tshark is not installed".to_owned()
        } else {
            format!("{} is missing", script.display())
        };
        assert!(
            !require,
            "RPCRDMA_REQUIRE_ORACLE=1 but {why} (apt-get install -y tshark)"
        );
        eprintln!("\n*** SKIP tshark oracle test: {why}. Install tshark (apt-get install -y tshark) and set RPCRDMA_REQUIRE_ORACLE=1 to make this mandatory. ***\n");
        return;
    }
    let dir = std::env::temp_dir().join(format!("rpcrdma-wire-tshark-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let n_msgs = conversation()
        .iter()
        .filter(|(_, op)| matches!(op, Op::Send(_)))
        .count();
    for (i, (rev, crc)) in [(1u8, true), (1, false), (2, true), (2, false)]
        .into_iter()
        .enumerate()
    {
        let pcap = write_capture(&dir, rev, crc, 40000 + u16::try_from(i).unwrap());
        // Our own test kit reads back what it wrote: the same messages.
        let frames = rpcrdma_testkit::pcap::read(&std::fs::read(&pcap).unwrap()).unwrap();
        let streams = rpcrdma_testkit::tcp::reassemble(&frames);
        let (_, _, (a, b)) = mpa::read_connection(&streams[0].data, &streams[1].data).unwrap();
        assert_eq!(a.len() + b.len(), n_msgs);

        let out = Command::new("bash")
            .arg(&script)
            .arg(&pcap)
            .args(["--port", &PORT.to_string()])
            .output()
            .expect("run wire-check.sh");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        println!("--- rev {rev} crc {crc}: {}\n{stdout}", pcap.display());
        let last = stdout.lines().last().unwrap_or_default();
        assert!(
            out.status.success(),
            "wire-check failed for rev {rev} crc {crc}:\n{stdout}\n{stderr}"
        );
        assert!(
            last.starts_with("wire-check: ") && last.ends_with(" 0 failed"),
            "{last}"
        );
        // Every Send was decoded as RPC-over-RDMA by tshark.
        let decoded = stdout.matches("rpcordma").count();
        assert!(
            decoded >= n_msgs,
            "tshark decoded only {decoded} of {n_msgs} messages:\n{stdout}"
        );
        assert!(
            stdout.contains("RDMA_NOMSG")
                && stdout.contains("RDMA_ERROR")
                && stdout.contains("rpc=call"),
            "{stdout}"
        );
        // The RPC messages moved in chunks were reassembled and decoded:
        // the WRITE call (Read chunk), the GETATTR call (Position-Zero Read
        // chunk) and its reply (Reply chunk).
        let rpc_frames = stdout.lines().filter(|l| l.contains(">rpc>nfs")).count();
        assert!(
            rpc_frames >= 7,
            "only {rpc_frames} frames decoded down to NFS:\n{stdout}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
