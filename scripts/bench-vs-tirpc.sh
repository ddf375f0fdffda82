#!/usr/bin/env bash
# Our ONC RPC stack beside a widely used C implementation, libtirpc, in the
# same run.
#
# Builds a tiny rpcgen/libtirpc program (NULL and a WRITE-like procedure
# taking opaque data and answering its length) with its own server and
# client, and measures, in alternating rounds on loopback:
#
#   * libtirpc over TCP: NULL round trip, 1 MiB WRITE throughput (its
#     client is synchronous: one call outstanding);
#   * `rpcrdma bench --only null,write --outstanding 1 --rounds 1`: our
#     RPC-over-RDMA and our ONC RPC/TCP (NULL round trip, 1 MiB WRITE with
#     one call outstanding too) and raw TCP.
#
# It prints the medians over the rounds and the ratios ours / libtirpc's
# (round trip: lower is better; throughput: higher is better), and a JSON
# line with every figure. Both WRITEs do the same work on the data: the
# demo program's WRITE computes a CRC32c over it, and so does the libtirpc
# server (SSE4.2 crc32 instructions, as the crc32c crate uses on x86-64;
# without SSE4.2 a plain byte sum).
#
# Usage: scripts/bench-vs-tirpc.sh
# Environment:
#   PORT        TCP port of the libtirpc server on 127.0.0.1 (default 27411)
#   ROUNDS      alternating rounds (default 5)
#   ROUND_TRIPS NULL round trips per side and round (default 3000)
#   MIB         1 MiB WRITEs per side and round (default 96)
#   PIN=1       run everything on one CPU (taskset -c 0; `--pin` for ours)
#   RPCRDMA     the binary (default target/release/rpcrdma, built first with
#               `cargo build --release -p rpcrdma-cli` unless NO_BUILD=1)
# Needs libtirpc-dev and rpcsvc-proto (rpcgen); installed with apt-get if
# missing and running as root.
set -euo pipefail

cd "$(dirname "$0")/.."
PORT=${PORT:-27411}
ROUNDS=${ROUNDS:-5}
ROUND_TRIPS=${ROUND_TRIPS:-3000}
MIB=${MIB:-96}
RPCRDMA=${RPCRDMA:-target/release/rpcrdma}

need=()
[ -f /usr/include/tirpc/rpc/rpc.h ] || need+=(libtirpc-dev)
command -v rpcgen >/dev/null || need+=(rpcsvc-proto)
command -v cc >/dev/null || need+=(gcc)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "bench-vs-tirpc: missing ${need[*]}; install them (apt-get install ${need[*]}) or run as root" >&2
        exit 2
    fi
    echo "bench-vs-tirpc: installing ${need[*]}" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >&2
fi

if [ "${NO_BUILD:-0}" != 1 ]; then
    cargo build --release -q -p rpcrdma-cli >&2
fi
[ -x "$RPCRDMA" ] || { echo "bench-vs-tirpc: no binary at $RPCRDMA" >&2; exit 2; }

work=$(mktemp -d)
server_pid=
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/tb.x" <<'EOF'
typedef opaque tb_data<>;
program TIRPCBENCH {
    version TIRPCBENCH_V1 {
        void TB_NULL(void) = 0;
        unsigned int TB_WRITE(tb_data) = 1;
    } = 1;
} = 0x20000099;
EOF

cat >"$work/server.c" <<'EOF'
/* The libtirpc side: a TCP server on 127.0.0.1:PORT, not registered with
 * rpcbind (the client connects to the port directly). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <rpc/rpc.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#ifdef __SSE4_2__
#include <nmmintrin.h>
#endif
#include "tb.h"

/* The work the demo program's WRITE does: a CRC32c of the data. */
static uint32_t checksum(const unsigned char *p, size_t n)
{
#ifdef __SSE4_2__
    uint64_t c = 0xffffffff;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        c = _mm_crc32_u64(c, w);
    }
    uint32_t c32 = (uint32_t)c;
    for (; i < n; i++)
        c32 = _mm_crc32_u8(c32, p[i]);
    return ~c32;
#else
    uint32_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += p[i];
    return s;
#endif
}
volatile uint32_t last_checksum;

void tirpcbench_1(struct svc_req *, SVCXPRT *);

void *tb_null_1_svc(void *argp, struct svc_req *rq)
{
    static char nothing;
    (void)argp; (void)rq;
    return &nothing;
}

u_int *tb_write_1_svc(tb_data *argp, struct svc_req *rq)
{
    static u_int len;
    (void)rq;
    len = argp->tb_data_len;
    last_checksum = checksum((const unsigned char *)argp->tb_data_val, len);
    return &len;
}

int main(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "usage: server PORT\n"); return 2; }
    int s = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[1])) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 16) != 0) {
        perror("server: bind/listen");
        return 1;
    }
    SVCXPRT *x = svctcp_create(s, 0, 0);
    if (!x) { fprintf(stderr, "server: svctcp_create failed\n"); return 1; }
    /* protocol 0: do not register with rpcbind */
    if (!svc_register(x, TIRPCBENCH, TIRPCBENCH_V1, tirpcbench_1, 0)) {
        fprintf(stderr, "server: svc_register failed\n");
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    svc_run();
    return 1;
}
EOF

cat >"$work/client.c" <<'EOF'
/* The libtirpc side's client: NULL round trips and 1 MiB WRITEs, one call
 * at a time (clnt_call is synchronous). Prints one JSON object. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <rpc/rpc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tb.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc != 4) { fprintf(stderr, "usage: client PORT ROUND_TRIPS MIB\n"); return 2; }
    int n = atoi(argv[2]), mib = atoi(argv[3]);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[1])) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int sock = RPC_ANYSOCK;
    CLIENT *c = clnttcp_create(&a, TIRPCBENCH, TIRPCBENCH_V1, &sock, 0, 0);
    if (!c) { clnt_pcreateerror("client"); return 1; }
    int one = 1;
    setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    for (int i = 0; i < 100; i++)
        if (!tb_null_1(NULL, c)) { clnt_perror(c, "NULL"); return 1; }
    double t = now();
    for (int i = 0; i < n; i++)
        if (!tb_null_1(NULL, c)) { clnt_perror(c, "NULL"); return 1; }
    double rtt = (now() - t) / n;
    tb_data d;
    d.tb_data_len = 1 << 20;
    d.tb_data_val = malloc(d.tb_data_len);
    memset(d.tb_data_val, 0x5a, d.tb_data_len);
    u_int *r = tb_write_1(&d, c);
    if (!r || *r != d.tb_data_len) { fprintf(stderr, "client: WRITE warm-up failed\n"); return 1; }
    t = now();
    for (int i = 0; i < mib; i++) {
        r = tb_write_1(&d, c);
        if (!r || *r != d.tb_data_len) { clnt_perror(c, "WRITE"); return 1; }
    }
    double bw = mib / (now() - t);
    printf("{\"null_rtt_us\": %.3f, \"write_1mib_mib_per_s\": %.3f}\n", rtt * 1e6, bw);
    clnt_destroy(c);
    return 0;
}
EOF

(
    cd "$work"
    rpcgen -h -o tb.h tb.x
    rpcgen -c -o tb_xdr.c tb.x
    rpcgen -l -o tb_clnt.c tb.x
    rpcgen -m -o tb_svc.c tb.x
    flags="-O2 -I/usr/include/tirpc -Wno-unused-variable -Wno-unused-parameter"
    if grep -qw sse4_2 /proc/cpuinfo; then flags="$flags -msse4.2"; fi
    # shellcheck disable=SC2086
    cc $flags -o server server.c tb_svc.c tb_xdr.c -ltirpc
    # shellcheck disable=SC2086
    cc $flags -o client client.c tb_clnt.c tb_xdr.c -ltirpc
) >&2

pin=()
ours_pin=()
if [ "${PIN:-0}" = 1 ]; then
    pin=(taskset -c 0)
    ours_pin=(--pin)
fi

"${pin[@]}" "$work/server" "$PORT" >"$work/server.out" &
server_pid=$!
for _ in $(seq 100); do
    grep -q ready "$work/server.out" 2>/dev/null && break
    kill -0 "$server_pid" 2>/dev/null || { echo "bench-vs-tirpc: the libtirpc server did not start (port $PORT in use? set PORT)" >&2; exit 1; }
    sleep 0.1
done

: >"$work/tirpc.jsonl"
: >"$work/ours.jsonl"
for r in $(seq "$ROUNDS"); do
    echo "bench-vs-tirpc: round $r/$ROUNDS" >&2
    tirpc() { "${pin[@]}" "$work/client" "$PORT" "$ROUND_TRIPS" "$MIB" >>"$work/tirpc.jsonl"; }
    ours() {
        "$RPCRDMA" bench "${ours_pin[@]}" --json --rounds 1 --only null,write \
            --outstanding 1 --round-trips "$ROUND_TRIPS" --mib "$MIB" \
            2>/dev/null >>"$work/ours.jsonl"
    }
    if [ $((r % 2)) = 1 ]; then tirpc; ours; else ours; tirpc; fi
done

python3 - "$work/tirpc.jsonl" "$work/ours.jsonl" "${PIN:-0}" <<'EOF'
import json, statistics, sys
tirpc = [json.loads(l) for l in open(sys.argv[1])]
ours = [json.loads(l) for l in open(sys.argv[2])]
med = lambda v: statistics.median([x for x in v if x is not None])
t_rtt = med([x["null_rtt_us"] for x in tirpc])
t_bw = med([x["write_1mib_mib_per_s"] for x in tirpc])
fig = {
    "libtirpc_tcp_null_rtt_us": t_rtt,
    "libtirpc_tcp_write_1mib_mib_per_s": t_bw,
    "rpcrdma_null_rtt_us": med([x["rpcrdma_null_rtt_us"] for x in ours]),
    "rpcrdma_write_1mib_mib_per_s": med([x["rpcrdma_write_1mib_mib_per_s"] for x in ours]),
    "oncrpc_tcp_null_rtt_us": med([x["oncrpc_tcp_null_rtt_us"] for x in ours]),
    "oncrpc_tcp_write_1mib_mib_per_s": med([x["oncrpc_tcp_write_1mib_mib_per_s"] for x in ours]),
    "raw_tcp_pingpong_rtt_us": med([x["raw_tcp_pingpong_rtt_us"] for x in ours]),
}
states = sorted({(x.get("wake_state") or {}).get("state") or "unknown" for x in ours})
ratios = {
    "rpcrdma_null_rtt_vs_libtirpc": fig["rpcrdma_null_rtt_us"] / t_rtt,
    "oncrpc_tcp_null_rtt_vs_libtirpc": fig["oncrpc_tcp_null_rtt_us"] / t_rtt,
    "rpcrdma_write_1mib_vs_libtirpc": fig["rpcrdma_write_1mib_mib_per_s"] / t_bw,
    "oncrpc_tcp_write_1mib_vs_libtirpc": fig["oncrpc_tcp_write_1mib_mib_per_s"] / t_bw,
}
pinned = sys.argv[3] == "1"
print(f"ours vs libtirpc over TCP, loopback, one call outstanding, medians of {len(ours)} alternating rounds"
      f"{' (pinned to CPU 0)' if pinned else ''}; wake-up state(s) seen: {', '.join(states)}")
rows = [
    ("NULL round trip (us)", "libtirpc_tcp_null_rtt_us", "rpcrdma_null_rtt_us", "oncrpc_tcp_null_rtt_us"),
    ("WRITE 1 MiB (MiB/s)", "libtirpc_tcp_write_1mib_mib_per_s", "rpcrdma_write_1mib_mib_per_s", "oncrpc_tcp_write_1mib_mib_per_s"),
]
print(f"{'measure':<22} {'libtirpc/TCP':>13} {'RPC-over-RDMA':>14} {'ONC RPC/TCP':>12}")
for name, t, r, o in rows:
    print(f"{name:<22} {fig[t]:>13.1f} {fig[r]:>14.1f} {fig[o]:>12.1f}")
print(f"raw TCP 64 B ping-pong: {fig['raw_tcp_pingpong_rtt_us']:.1f} us")
print("ratios (ours / libtirpc; round trip lower is better, throughput higher):")
for k, v in ratios.items():
    print(f"  {k:<36} {v:.3f}")
print(json.dumps({"bench": "vs-libtirpc", "pinned": pinned, "rounds": len(ours),
                  "wake_states": states, "figures": fig, "ratios": ratios}))
EOF
