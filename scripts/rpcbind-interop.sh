#!/usr/bin/env bash
# rpcbind / rpcinfo interoperability check for the ONC RPC layer (issue 4,
# items 5 and 7), against the system's rpcbind and rpcinfo (Debian package
# `rpcbind`). Needs root to install the package and to start rpcbind.
#
#   1. installs rpcbind (which ships rpcinfo) if missing;
#   2. starts rpcbind unless one already answers on 127.0.0.1:111;
#   3. starts our demo server (crates/demoprog/examples/demo_server.rs),
#      which registers program 542262349 (0x2052444D) version 1 on netid tcp;
#   4. checks that `rpcinfo -p` lists it, that `rpcinfo -t` / `-T tcp` get
#      our NULL reply, that a wrong version gets our PROG_MISMATCH, that our
#      rpcbind client reads rpcbind's own table (PMAP v2, RPCBIND v3/v4 DUMP,
#      GETADDR, GETPORT) and can SET/UNSET through every version;
#   5. stops the server (SIGTERM) and checks that it unregistered;
#   6. the same for `rpcrdma serve --rpcbind` (netid rdma) and `rpcrdma nfs
#      serve --rpcbind` (NFS v3 under rdma and tcp, MOUNT v3 under tcp).
#
# Exits non-zero if any check fails. Stops only the processes it started.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
PROG=542262349
PASS=0
FAIL=0
SERVER_PID=
RPCBIND_PID=
WORK=$(mktemp -d)

cleanup() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    if [ -n "$RPCBIND_PID" ] && kill -0 "$RPCBIND_PID" 2>/dev/null; then
        kill -TERM "$RPCBIND_PID" 2>/dev/null || true
        wait "$RPCBIND_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

check() {
    local what=$1
    shift
    if "$@" >"$WORK/out" 2>&1; then
        echo "ok   $what"
        PASS=$((PASS + 1))
    else
        echo "FAIL $what"
        sed 's/^/     | /' "$WORK/out"
        FAIL=$((FAIL + 1))
    fi
}

if ! command -v rpcbind >/dev/null || ! command -v rpcinfo >/dev/null; then
    echo "installing rpcbind (provides rpcinfo)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq rpcbind >/dev/null
fi
RPCBIND=$(command -v rpcbind)

if rpcinfo -p 127.0.0.1 >/dev/null 2>&1; then
    echo "using the rpcbind already running"
else
    mkdir -p /run/rpcbind
    # -f: stay in the foreground so this script owns the process; -w: warm start off is harmless.
    "$RPCBIND" -f -w &
    RPCBIND_PID=$!
    for _ in $(seq 100); do
        rpcinfo -p 127.0.0.1 >/dev/null 2>&1 && break
        sleep 0.1
    done
    rpcinfo -p 127.0.0.1 >/dev/null 2>&1 || { echo "rpcbind did not start"; exit 1; }
    echo "started rpcbind (pid $RPCBIND_PID)"
fi

cargo build -q -p rpcrdma-oncrpc -p rpcrdma-demoprog --examples
"$TARGET/debug/examples/demo_server" --rpcbind >"$WORK/server.out" 2>"$WORK/server.err" &
SERVER_PID=$!
for _ in $(seq 300); do
    grep -q '^listening on ' "$WORK/server.out" 2>/dev/null && break
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
done
if ! grep -q '^listening on ' "$WORK/server.out"; then
    echo "demo server did not start:"
    cat "$WORK/server.err"
    exit 1
fi
ADDR=$(sed -n 's/^listening on //p' "$WORK/server.out")
PORT=${ADDR##*:}
echo "demo server listening on $ADDR"

check "rpcinfo -p lists program $PROG version 1 tcp port $PORT" \
    bash -c "rpcinfo -p 127.0.0.1 | grep -Eq '^ +$PROG +1 +tcp +$PORT( |\$)'"
check "rpcinfo -s lists program $PROG on tcp" \
    bash -c "rpcinfo -s 127.0.0.1 | grep -Eq '^ +$PROG +1 +tcp '"
check "rpcinfo -t 127.0.0.1 $PROG 1 gets our NULL reply" \
    bash -c "rpcinfo -t 127.0.0.1 $PROG 1 | grep -q 'ready and waiting'"
check "rpcinfo -T tcp 127.0.0.1 $PROG 1 gets our NULL reply" \
    bash -c "rpcinfo -T tcp 127.0.0.1 $PROG 1 | grep -q 'ready and waiting'"
check "rpcinfo -n $PORT -t (no rpcbind lookup) gets our NULL reply" \
    bash -c "rpcinfo -n $PORT -t 127.0.0.1 $PROG 1 | grep -q 'ready and waiting'"
check "rpcinfo -t 127.0.0.1 $PROG (all versions) finds version 1" \
    bash -c "rpcinfo -t 127.0.0.1 $PROG | grep -q 'version 1 ready and waiting'"
check "rpcinfo for version 2 sees our PROG_MISMATCH (versions 1..1)" \
    bash -c "! rpcinfo -n $PORT -t 127.0.0.1 $PROG 2 >$WORK/mm 2>&1; grep -qi 'low version = 1, high version = 1' $WORK/mm"
check "our client reads rpcbind's table and SET/UNSETs through v2, v3, v4" \
    "$TARGET/debug/examples/rpcbind_check" --expect "$PROG:1:tcp" --roundtrip

kill -TERM "$SERVER_PID"
wait "$SERVER_PID" || true
SERVER_PID=
check "the server unregistered on SIGTERM" \
    bash -c "! rpcinfo -p 127.0.0.1 | grep -Eq '^ +$PROG '"

# RPC-over-RDMA registration (RFC 8166 §11: netid "rdma"): `rpcrdma serve
# --rpcbind` registers the demo program for its RDMA listener. (rpcbind's
# GETADDR answers for the netid of the transport a query arrives on, so
# the rdma entry is checked in the full table, as rpcinfo shows it.)
cargo build -q -p rpcrdma-cli
RDMA_PORT=20071
"$TARGET/debug/rpcrdma" serve --listen 127.0.0.1:$RDMA_PORT --rpcbind --duration 30 \
    >"$WORK/rdma.out" 2>"$WORK/rdma.err" &
SERVER_PID=$!
for _ in $(seq 300); do
    grep -q '^registered with rpcbind' "$WORK/rdma.out" 2>/dev/null && break
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
done
UADDR="127.0.0.1.$((RDMA_PORT / 256)).$((RDMA_PORT % 256))"
check "rpcrdma serve --rpcbind registers netid rdma at $UADDR" \
    bash -c "rpcinfo 127.0.0.1 | grep -Eq '^ +$PROG +1 +rdma +$UADDR '"
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" || true
SERVER_PID=
check "rpcrdma serve unregistered netid rdma on SIGTERM" \
    bash -c "! rpcinfo 127.0.0.1 | grep -Eq '^ +$PROG +1 +rdma '"

# `rpcrdma nfs serve --rpcbind` (issue 12 item 3): NFS version 3 under
# netid rdma at its RPC-over-RDMA port and under tcp at its --tcp port,
# MOUNT version 3 under tcp at --mount-port; all of them gone on SIGTERM.
NFS_RDMA=20072
NFS_MOUNT=20073
NFS_TCP=20074
mkdir -p "$WORK/export"
"$TARGET/debug/rpcrdma" nfs serve "$WORK/export" --listen 127.0.0.1:$NFS_RDMA \
    --mount-port $NFS_MOUNT --tcp 127.0.0.1:$NFS_TCP --state-dir "$WORK/nfs-state" \
    --rpcbind --duration 60 >"$WORK/nfs.out" 2>"$WORK/nfs.err" &
SERVER_PID=$!
for _ in $(seq 300); do
    grep -q '^registered with rpcbind' "$WORK/nfs.out" 2>/dev/null && break
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
done
uaddr() { echo "127.0.0.1.$(($1 / 256)).$(($1 % 256))"; }
check "rpcrdma nfs serve --rpcbind registers NFS v3 netid rdma at $(uaddr $NFS_RDMA)" \
    bash -c "rpcinfo 127.0.0.1 | grep -Eq '^ +100003 +3 +rdma +$(uaddr $NFS_RDMA) '"
check "rpcrdma nfs serve --rpcbind registers NFS v3 netid tcp at $(uaddr $NFS_TCP)" \
    bash -c "rpcinfo 127.0.0.1 | grep -Eq '^ +100003 +3 +tcp +$(uaddr $NFS_TCP) '"
check "rpcrdma nfs serve --rpcbind registers MOUNT v3 netid tcp at $(uaddr $NFS_MOUNT)" \
    bash -c "rpcinfo 127.0.0.1 | grep -Eq '^ +100005 +3 +tcp +$(uaddr $NFS_MOUNT) '"
check "rpcinfo -t reaches NFS v3 over TCP through the registration" \
    bash -c "rpcinfo -t 127.0.0.1 100003 3 | grep -q 'ready and waiting'"
check "rpcinfo -t reaches MOUNT v3 through the registration" \
    bash -c "rpcinfo -t 127.0.0.1 100005 3 | grep -q 'ready and waiting'"
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" || true
SERVER_PID=
check "rpcrdma nfs serve unregistered NFS and MOUNT on SIGTERM" \
    bash -c "! rpcinfo 127.0.0.1 | grep -Eq '^ +10000[35] '"

echo
echo "rpcbind interop: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
