#!/bin/sh
# rdmacore-guest.sh - runs INSIDE the QEMU guest (busybox sh) under
# `run-guest.sh exec`, for scripts/interop/rdmacore.sh: our rpcrdma binary
# (built with the rdma-core feature) over the guest's kernel RDMA device.
#
# Environment (from run-guest.sh): RDMA (rxe or siw), SERVER (the host,
# 10.0.2.100), PORT (the base port; PORT+1 .. PORT+4 are used too).
#
# Every check prints "INTEROP-CHECK <rc> <name>" (rc 0: passed); the host
# turns those lines into PASS/FAIL. Results and outputs go to out/.
#
# both: verbs tour              every verbs operation over the device's loopback
#                             (crates/rdmacore/examples/verbs_tour.rs)
# rxe (RoCE v2, all inside the guest):
#   demo                      rpcrdma demo over rxe0, every operation verified
#   serve/call                rpcrdma serve and rpcrdma call as two processes
#   nfsd                      the kernel nfsd in this guest: NULL v3/v4 with our
#                             Version Two probe and the Version One fallback
#   bench                     perftest (ib_write_bw, ib_read_bw, ib_send_lat)
#                             and rpcrdma bench verbs on rxe0, same boot
# siw (iWARP; the host runs our software iWARP provider):
#   guest -> host             rdma-core client calls the host's softiwarp serve
#   host -> guest             the host's softiwarp client calls our serve here
#   rping                     rdma-core rping <-> softiwarp rping, both ways
#   nfsd                      as for rxe, over siw0
DEV=rxe0
[ "$RDMA" = siw ] && DEV=siw0
ME=10.0.2.15
P1=$((PORT + 1))
P3=$((PORT + 3))
P4=$((PORT + 4))
R=./rpcrdma
PROV="--provider rdma-core --device $DEV"
mkdir -p out

# check NAME REGEX COMMAND...: runs COMMAND (120 s at most); passes if it
# exits 0 and its output matches REGEX. LAST is its output file.
check() {
    name=$1 re=$2
    shift 2
    f=out/$(echo "$RDMA-$name" | tr -c 'a-zA-Z0-9\n' '-' | cut -c1-60).txt
    LAST=$f
    timeout 120 "$@" >"$f" 2>&1
    rc=$?
    sed 's/^/    | /' "$f" | head -40
    if [ "$rc" = 0 ] && grep -qE "$re" "$f"; then
        echo "INTEROP-CHECK 0 $RDMA: $name"
    else
        echo "INTEROP-CHECK 1 $RDMA: $name (exit $rc)"
    fi
}

# wait_for FILE REGEX SECONDS
wait_for() {
    i=0
    while [ "$i" -lt "$(($3 * 5))" ]; do
        grep -qE "$2" "$1" 2>/dev/null && return 0
        sleep 0.2
        i=$((i + 1))
    done
    return 1
}

# Nanoseconds of wall clock. The guest's busybox date has no %N: then
# /proc/uptime (10 ms steps; %.0f, as %d would overflow in busybox awk).
now_ns() {
    t=$(date +%s%N 2>/dev/null)
    case "$t" in
    *[!0-9]* | '') t=$(awk '{ printf "%.0f", $1 * 1000000000 }' /proc/uptime) ;;
    esac
    echo "$t"
}

echo "== rpcrdma over $DEV"
ibv_devices
ulimit -l

start_nfsd() {
    mount -t tmpfs -o size=64m tmpfs /export 2>/dev/null || { mkdir -p /export && mount -t tmpfs -o size=64m tmpfs /export; }
    echo "hello from the kernel nfsd" >/export/hello.txt
    mount -t nfsd nfsd /proc/fs/nfsd
    mkdir -p /var/lib/nfs/rpc_pipefs
    mount -t rpc_pipefs rpc_pipefs /var/lib/nfs/rpc_pipefs 2>/dev/null
    echo "/export *(rw,insecure,no_root_squash,no_subtree_check,fsid=0)" >/etc/exports
    rpcbind -w
    exportfs -ra
    rpc.mountd --port 20048
    echo 10 >/proc/fs/nfsd/nfsv4leasetime 2>/dev/null
    echo 10 >/proc/fs/nfsd/nfsv4gracetime 2>/dev/null
    rpc.nfsd --port 2049 8
    echo "rdma 20049" >/proc/fs/nfsd/portlist
    echo "nfsd portlist: $(tr '\n' ' ' </proc/fs/nfsd/portlist)"
}

nfsd_checks() {
    start_nfsd
    N=$ME:20049
    check "nfsd: NFSv3 NULL, Version One" 'RPC-over-RDMA v1, .*MSG_ACCEPTED SUCCESS' \
        $R call $N 100003 3 0 --rdma-version 1 $PROV
    check "nfsd: NFSv3 NULL, Version Two probe draws ERR_VERS, v1 fallback" \
        'RPC-over-RDMA v1, fell back from v2, .*MSG_ACCEPTED SUCCESS' $R call $N 100003 3 0 $PROV
    check "nfsd: NFSv4 NULL, Version Two probe draws ERR_VERS, v1 fallback" \
        'RPC-over-RDMA v1, fell back from v2, .*MSG_ACCEPTED SUCCESS' $R call $N 100003 4 0 $PROV
    check "nfsd: probe (kernel private data, version 1 after fallback)" \
        'RPC-over-RDMA version: 1 \(our Version Two probe drew ERR_VERS; fell back\)' $R probe $N $PROV
    timeout 60 $R probe $N --json $PROV >out/$RDMA-nfsd-probe.json 2>out/$RDMA-nfsd-probe.err
    rc=$?
    cat out/$RDMA-nfsd-probe.json
    if [ "$rc" = 0 ] && grep -q '"fell_back":true' out/$RDMA-nfsd-probe.json &&
        grep -q '"peer_private_data_hex":"f6ab0e1801' out/$RDMA-nfsd-probe.json; then
        echo "INTEROP-CHECK 0 $RDMA: nfsd: probe --json (RFC 8797 private data f6ab0e18 01 .., fell back)"
    else
        echo "INTEROP-CHECK 1 $RDMA: nfsd: probe --json (exit $rc)"
    fi
}

check "verbs tour: Send, RDMA Write (4 gather paths), RDMA Read, Send with Invalidate" \
    'verbs tour: PASS' ./verbs_tour $DEV $ME

if [ "$RDMA" = rxe ]; then
    check "demo: every operation verified byte for byte" 'all 8 operations verified byte for byte' \
        $R demo $PROV --listen $ME:0

    $R serve $PROV --listen $ME:$P1 --duration 600 >out/rxe-serve.txt 2>&1 &
    SP=$!
    if wait_for out/rxe-serve.txt 'serving the demo program' 30; then
        A=$ME:$P1
        check "serve/call: NULL" 'NULL ok' $R call $A demo null $PROV
        check "serve/call: ECHO 1 KiB" 'ECHO of 1024 bytes verified' $R call $A demo echo $PROV
        check "serve/call: READ 1 MiB (Write chunk)" 'READ of 1048576 bytes verified' \
            $R call $A demo read --size 1048576 $PROV
        check "serve/call: WRITE 1 MiB (Read chunk)" 'WRITE of 1048576 bytes verified' \
            $R call $A demo write --size 1048576 $PROV
        check "serve/call: 20 READs of 64 KiB" '20 call\(s\)' \
            $R call $A demo read --size 65536 --repeat 20 $PROV
        check "serve/call: probe (R = 0, Version Two)" 'remote invalidation no' $R probe $A --prog 0x2052444d --vers 1 $PROV
    else
        echo "INTEROP-CHECK 1 rxe: serve/call: the server did not start"
    fi
    kill $SP 2>/dev/null
    wait $SP
    cat out/rxe-serve.txt

    nfsd_checks

    echo "== bench: perftest and rpcrdma bench verbs on $DEV, in paired rounds"
    PT="-d $DEV -R -p $P3"
    # perftest NAME TEST ARGS...: server in the background, client timed
    # (ns); its output in out/NAME.txt. Both ends are bounded: under TCG an
    # rxe perftest pair now and then stalls for good (a lost packet it
    # never retransmits); then both are stopped and the pair is tried
    # once more, and the second failure fails the check.
    perftest() {
        n=$1 t=$2
        shift 2
        for attempt in 1 2; do
            timeout 150 $t $PT "$@" >"out/$n-server.txt" 2>&1 &
            spid=$!
            sleep 2
            t0=$(now_ns)
            timeout 120 $t $PT "$@" $ME >"out/$n.txt" 2>&1
            prc=$?
            t1=$(now_ns)
            kill $spid 2>/dev/null
            wait $spid 2>/dev/null
            echo "$t $* attempt $attempt rc=$prc elapsed_ns=$((t1 - t0))"
            [ $prc -eq 0 ] && break
        done
        grep -A1 '#bytes' "out/$n.txt"
        return $prc
    }
    # ours NAME ARGS...: one bench verbs measure; its JSON in out/NAME.json.
    ours() {
        n=$1
        shift
        timeout 300 $R bench verbs $PROV --listen-ip $ME --rounds 1 --json "$@" >"out/$n.out" 2>&1
        orc=$?
        grep '^{"bench"' "out/$n.out" >"out/$n.json"
        echo "bench verbs $* rc=$orc: $(cat "out/$n.json")"
        return $orc
    }
    # Each round measures perftest and ours back to back, so a ratio
    # compares figures taken under the same load; the host reports the
    # median of the per-round ratios. ib_send_lat times with the CPU clock,
    # which it cannot always calibrate under TCG (then it prints inf): its
    # round trip is taken from the wall clock instead, as the difference of
    # a 200 and a 3000 iteration run (connection set-up cancels out).
    bench_ok=0
    for round in 1 2 3; do
        w200=0 w3000=0
        perftest pt-write-$round ib_write_bw -s 1048576 -n 32 || bench_ok=1
        ours ours-write-$round --only write --mib 32 || bench_ok=1
        perftest pt-read-$round ib_read_bw -s 1048576 -n 32 || bench_ok=1
        ours ours-read-$round --only read --mib 32 || bench_ok=1
        perftest pt-lat200-$round ib_send_lat -s 64 -n 200 && w200=$((t1 - t0)) || bench_ok=1
        perftest pt-lat3000-$round ib_send_lat -s 64 -n 3000 && w3000=$((t1 - t0)) || bench_ok=1
        echo "$round $w200 $w3000" >>out/pt-lat-wall.txt
        ours ours-ping-$round --only pingpong --round-trips 300 || bench_ok=1
        ours ours-pingpoll-$round --only pingpong --round-trips 300 --poll-cq || bench_ok=1
    done
    echo "INTEROP-CHECK $bench_ok rxe: perftest and bench verbs --provider rdma-core ran, 3 paired rounds"
else
    # guest -> host: our rdma-core client, the host's software iWARP server.
    H=$SERVER:$PORT
    check "guest -> host: NULL" 'NULL ok' $R call $H demo null $PROV
    check "guest -> host: ECHO 1 KiB" 'ECHO of 1024 bytes verified' $R call $H demo echo $PROV
    check "guest -> host: READ 1 MiB (Write chunk)" 'READ of 1048576 bytes verified' \
        $R call $H demo read --size 1048576 $PROV
    check "guest -> host: WRITE 1 MiB (Read chunk)" 'WRITE of 1048576 bytes verified' \
        $R call $H demo write --size 1048576 $PROV
    check "guest -> host: probe" 'RPC-over-RDMA version: 2' $R probe $H --prog 0x2052444d --vers 1 $PROV
    check "guest -> host: rping -c (rdma-core) vs rping -s (software iWARP)" 'rping client: PASS' \
        $R rping -c -a $SERVER -p $P3 -C 3 -S 64 -v --connect-wait 30 $PROV

    # host -> guest: the host's software iWARP client, our rdma-core server;
    # the host then pings our rdma-core rping server, which ends this part.
    $R serve $PROV --listen 0.0.0.0:$P1 --duration 600 >out/siw-serve.txt 2>&1 &
    SP=$!
    if wait_for out/siw-serve.txt 'serving the demo program' 30; then
        echo "INTEROP-GUEST-SERVE-READY"
        check "host -> guest: rping -s (rdma-core) vs rping -c (software iWARP)" 'rping server: PASS' \
            $R rping -s -p $P4 -C 3 -S 64 -v --accept-timeout 100 $PROV
    else
        echo "INTEROP-CHECK 1 siw: host -> guest: the server did not start"
    fi
    kill $SP 2>/dev/null
    wait $SP
    cat out/siw-serve.txt

    nfsd_checks
fi
echo "== done"
exit 0
