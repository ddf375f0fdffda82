#!/usr/bin/env bash
# Our NFS server beside NFS-Ganesha (VFS FSAL), the user-space NFS server
# most people know, with the same client in the same run (issue 36).
#
# Installs NFS-Ganesha if missing, exports a tmpfs directory with it
# (NFSv3 over TCP on 127.0.0.1, its own ports so no system NFS server is
# disturbed), starts `rpcrdma nfs serve` on another tmpfs directory, and
# runs `rpcrdma nfs bench --workloads --compare`: sequential 1 MiB READ
# and WRITE, 4 KiB random READ and WRITE at depth 16, CREATE+SETATTR+
# REMOVE of small files, READDIRPLUS of a 10 000-entry directory,
# LOOKUP+GETATTR, on ours over RPC-over-RDMA, ours over TCP and Ganesha
# over TCP, in paired rounds whose order turns, as medians and ratios
# (docs/performance.md, "NFS against NFS-Ganesha").
#
# Everything it started is stopped on exit: Ganesha, our server, the
# registrations Ganesha made with rpcbind, and rpcbind itself if this
# script started it (a system's rpcbind is left as found).
#
# Usage: scripts/bench-vs-ganesha.sh [rpcrdma nfs bench options...]
#   e.g. scripts/bench-vs-ganesha.sh --rounds 5 --json
# Environment:
#   PIN=1       run the servers and the client on one CPU (taskset -c 0)
#   RPCRDMA     the binary (default target/release/rpcrdma, built first
#               with `cargo build --release -p rpcrdma-cli` unless
#               NO_BUILD=1)
#   WORK        scratch directory on tmpfs (default /dev/shm/rpcrdma-vs-ganesha)
#   GANESHA_PORT, GANESHA_MOUNT_PORT  (default 12049, 12048)
#   OUR_PORT, OUR_TCP_PORT, OUR_MOUNT_PORT  (default 22049, 22050, 22048)
# Needs root (Ganesha's VFS FSAL acts as each caller) and rpcbind, which
# Ganesha registers with.
set -euo pipefail

cd "$(dirname "$0")/.."
RPCRDMA=${RPCRDMA:-target/release/rpcrdma}
WORK=${WORK:-/dev/shm/rpcrdma-vs-ganesha}
GANESHA_PORT=${GANESHA_PORT:-12049}
GANESHA_MOUNT_PORT=${GANESHA_MOUNT_PORT:-12048}
OUR_PORT=${OUR_PORT:-22049}
OUR_TCP_PORT=${OUR_TCP_PORT:-22050}
OUR_MOUNT_PORT=${OUR_MOUNT_PORT:-22048}

fail() { echo "bench-vs-ganesha: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "run as root (NFS-Ganesha's VFS FSAL and the installation need it)"

need=()
command -v ganesha.nfsd >/dev/null || need+=(nfs-ganesha nfs-ganesha-vfs)
[ -e /usr/lib/x86_64-linux-gnu/ganesha/libfsalvfs.so ] || ls /usr/lib/*/ganesha/libfsalvfs.so >/dev/null 2>&1 ||
    need+=(nfs-ganesha-vfs)
command -v rpcbind >/dev/null || need+=(rpcbind)
command -v rpcinfo >/dev/null || need+=(rpcbind)
if [ ${#need[@]} -gt 0 ]; then
    echo "bench-vs-ganesha: installing ${need[*]}" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >&2
fi

if [ "${NO_BUILD:-0}" != 1 ]; then
    cargo build --release -q -p rpcrdma-cli >&2
fi
[ -x "$RPCRDMA" ] || fail "no binary at $RPCRDMA"

pin=()
[ "${PIN:-0}" = 1 ] && pin=(taskset -c 0)

rm -rf "$WORK"
mkdir -p "$WORK/ours" "$WORK/ganesha" "$WORK/run"
started_rpcbind=0
ganesha_pid=
ours_pid=
cleanup() {
    set +e
    [ -n "$ours_pid" ] && kill "$ours_pid" 2>/dev/null && wait "$ours_pid" 2>/dev/null
    if [ -n "$ganesha_pid" ]; then
        kill "$ganesha_pid" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$ganesha_pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$ganesha_pid" 2>/dev/null
    fi
    # Ganesha's registrations (NFS 3/4, MOUNT 1/3, NLM, RQUOTA): a later
    # rpcbind user must not find them.
    for pv in "100003 3" "100003 4" "100005 1" "100005 3" "100021 4" "100011 1" "100011 2"; do
        # shellcheck disable=SC2086
        rpcinfo -d $pv 2>/dev/null
    done
    [ "$started_rpcbind" = 1 ] && pkill -x rpcbind
    rm -rf "$WORK"
}
trap cleanup EXIT

if ! rpcinfo -p 127.0.0.1 >/dev/null 2>&1; then
    echo "bench-vs-ganesha: starting rpcbind (stopped again at the end)" >&2
    rpcbind -w 2>/dev/null || rpcbind
    started_rpcbind=1
    for _ in $(seq 50); do rpcinfo -p 127.0.0.1 >/dev/null 2>&1 && break; sleep 0.1; done
fi

cat >"$WORK/run/ganesha.conf" <<EOF
NFS_CORE_PARAM {
    NFS_Port = $GANESHA_PORT;
    MNT_Port = $GANESHA_MOUNT_PORT;
    NLM_Port = $((GANESHA_PORT - 2));
    Rquota_Port = $((GANESHA_PORT - 3));
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Enable_UDP = false;
    Bind_addr = 127.0.0.1;
    Protocols = 3, 4;
}
NFSV4 {
    Grace_Period = 5;
    Lease_Lifetime = 10;
    RecoveryBackend = fs;
    RecoveryRoot = "$WORK/run/recovery";
}
EXPORT {
    Export_Id = 77;
    Path = "$WORK/ganesha";
    Pseudo = "/ganesha";
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = sys;
    Protocols = 3, 4;
    Transports = TCP;
    FSAL { Name = VFS; }
}
LOG { Default_Log_Level = WARN; }
EOF
mkdir -p "$WORK/run/recovery"
"${pin[@]}" ganesha.nfsd -f "$WORK/run/ganesha.conf" -L "$WORK/run/ganesha.log" \
    -p "$WORK/run/ganesha.pid" -N NIV_WARN
for _ in $(seq 100); do
    [ -s "$WORK/run/ganesha.pid" ] && break
    sleep 0.1
done
ganesha_pid=$(cat "$WORK/run/ganesha.pid" 2>/dev/null) || fail "NFS-Ganesha did not start: $(tail -5 "$WORK/run/ganesha.log")"

"${pin[@]}" "$RPCRDMA" nfs serve "$WORK/ours" --listen "127.0.0.1:$OUR_PORT" \
    --tcp "127.0.0.1:$OUR_TCP_PORT" --mount-port "$OUR_MOUNT_PORT" --no-root-squash \
    --state-dir "$WORK/run/state" >"$WORK/run/ours.log" 2>&1 &
ours_pid=$!

# Both answer MOUNT before the bench starts (Ganesha takes a few seconds).
ready=0
for _ in $(seq 300); do
    if rpcinfo -n "$GANESHA_MOUNT_PORT" -t 127.0.0.1 100005 3 >/dev/null 2>&1 &&
        rpcinfo -n "$OUR_MOUNT_PORT" -t 127.0.0.1 100005 3 >/dev/null 2>&1; then
        ready=1
        break
    fi
    sleep 0.1
done
[ "$ready" = 1 ] || fail "a server does not answer MOUNT: $(tail -3 "$WORK/run/ganesha.log") $(tail -3 "$WORK/run/ours.log")"
echo "bench-vs-ganesha: NFS-Ganesha $(dpkg-query -W -f='${Version}' nfs-ganesha 2>/dev/null) on tcp $GANESHA_PORT, ours on rdma $OUR_PORT and tcp $OUR_TCP_PORT${PIN:+ (PIN=$PIN)}" >&2

"${pin[@]}" "$RPCRDMA" nfs bench "127.0.0.1:$WORK/ours" --workloads --vers 3 \
    --port "$OUR_PORT" --tcp-port "$OUR_TCP_PORT" --mount-port "$OUR_MOUNT_PORT" \
    --compare "127.0.0.1:$WORK/ganesha" --compare-port "$GANESHA_PORT" \
    --compare-mount-port "$GANESHA_MOUNT_PORT" --compare-name ganesha "$@"
