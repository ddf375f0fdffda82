#!/usr/bin/env bash
# nfs-kernel-client.sh - the Linux kernel NFS client (xprtrdma over siw, in
# the QEMU guest of ../shared/interop) mounts `rpcrdma nfs serve` on the
# host and runs the data-integrity workload of nfs-workload.sh (issue 12
# item 4):
#
#   1. over RPC-over-RDMA: vers=3,proto=rdma,port=$RDMA_PORT,nolock,noacl,
#      mountport=$MOUNT_PORT,mountproto=tcp (siw <-> our software iWARP);
#      every workload check passes; the big file's SHA-256 is the same on
#      the host; the capture holds Read chunks, Write lists and Reply
#      chunks;
#   2. the same workload over proto=tcp to the same server;
#   3. a short run of the same workload over proto=rdma (4 MiB file, 50
#      small files, 600 directory entries: every message form again),
#      served with root squashed (the server's default; the guest root's
#      files must belong to uid 65534 on the host), whose
#      capture tshark (wire-check.sh) checks frame by frame: the full run's
#      200 MB capture takes tshark longer than the rest of the check. QEMU's
#      user networking re-segments what our server sends (socat reads 8 KiB
#      at a time, slirp cuts 1460-byte segments) and tshark's MPA dissector
#      assumes one FPDU per segment, so fpdu-align.py first puts each FPDU
#      in a segment of its own (the byte stream is unchanged; a malformed
#      FPDU fails the check there); on that capture, the kernel's calls
#      carry Read chunks and our server's replies use Write lists and
#      Reply chunks;
#   4. nfs-fsx (crates/nfs-fsx/) in the guest over
#      proto=rdma and proto=tcp: seeded random writes, reads, truncates,
#      appends, mmap and O_DIRECT I/O, copy_file_range, fsync, renames,
#      links, mkdir/rmdir, symlinks, chmod and utimes from several
#      processes, each checked against a model, the whole tree compared byte
#      for byte after dropping the guest's page cache; halfway, with every
#      worker's files open, the server is stopped and started again (same
#      state directory: the handles the client holds must still work); at
#      the end the export on the host must hold exactly what the model says
#      (nfs-fsx manifest);
#   5. the server shuts down cleanly on SIGTERM and logged no panic.
#
# Environment (ports on 127.0.0.1; the guest reaches them as 10.0.2.100):
#   IOP_NFS_RDMA_PORT   RPC-over-RDMA port (default 20049)
#   IOP_NFS_MOUNT_PORT  MOUNT v3 port, TCP (default 20048)
#   IOP_NFS_TCP_PORT    NFS over TCP port (default 2049)
#   IOP_NFS_BIG_MIB     size of the big file (default 64)
#   IOP_NFS_PROTOS      which runs (default "rdma tcp rdma-short fsx-rdma
#                       fsx-tcp"; also tcp-short: the short workload over TCP)
#   IOP_NFS_FSX_BIN     a built nfs-fsx (default: cargo build -p
#                       rpcrdma-nfs-fsx)
#   IOP_NFS_FSX_SEED    the exerciser's seed (default 1; each run prints it)
#   IOP_NFS_FSX_OPS     operations per process (default 300)
#   IOP_NFS_FSX_PROCS   processes, each in its own directory (default 2)
#   IOP_NFS_FSX_MOUNT_OPTS  more mount options for the fsx runs (default none)
#   IOP_NFS_FSX_RESTART_AT  restart the server after this many operations
#                       of each fsx worker, its files open (default 150;
#                       empty: no restart)
#   IOP_NFS_RESTART_GAP  seconds the server stays down at that restart
#                       (default 3): the kernel client's reconnects in
#                       between are refused
#   IOP_NFS_ROOT_SQUASH=1  serve every run with root squashed (the default of
#                       rpcrdma nfs serve) instead of --no-root-squash; the
#                       fsx runs then keep the owner's rw bits (--owner-rw)
#   IOP_NFS_SHORT_SQUASH=0  serve the rdma-short run with --no-root-squash
#                       too (by default it runs with root squashed, the
#                       server restarted for it, and checks that the guest
#                       root's files belong to uid 65534 on the host)
#   IOP_NFS_FSX_WIRE_CHECK=1  tshark (wire-check.sh) on fsx-rdma's capture
#                       too (about 3 minutes for the default run's 40 MB),
#                       every connection of it: before the restart, the
#                       refused ones, after it
#   IOP_NFS_SERVE_ARGS  more options for rpcrdma nfs serve (default --mulpdu 1448)
#   IOP_NFS_VERS        the NFS version the guest mounts: 3 (default), 4.1 or
#                       4.2 (every run, the workload then adds fcntl and flock
#                       locks between two processes: nfs-locktest)
#   IOP_NFS_LEASE       the server's NFSv4 lease and grace period in seconds
#                       (default 15: the restart of the fsx runs is followed
#                       by a grace period in which the client reclaims)
#   plus those of common.sh (RPCRDMA_BIN, IOP_WORK, INTEROP_CACHE ...)
#
# Usage: scripts/interop/nfs-kernel-client.sh   (root; Debian 12 x86_64)
# Exit status 0 only if every check passed. Bounded by timeouts; the guest
# and the server are stopped on exit.
set -uo pipefail
VERS=${IOP_NFS_VERS:-3}
IOP_NAME=nfs-kernel-client
[ "$VERS" = 3 ] || IOP_NAME=nfs${VERS}-kernel-client
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
RP=${IOP_NFS_RDMA_PORT:-20049}
MP=${IOP_NFS_MOUNT_PORT:-20048}
TP=${IOP_NFS_TCP_PORT:-2049}
BIG=${IOP_NFS_BIG_MIB:-64}
GAP=${IOP_NFS_RESTART_GAP:-3}
PROTOS=${IOP_NFS_PROTOS:-rdma tcp rdma-short fsx-rdma fsx-tcp}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

iop_setup_work
echo "== $IOP_NAME: the kernel NFS client mounts rpcrdma nfs serve (logs: $IOP_WORK)"
iop_need tshark tshark || { iop_result "install tshark" 1; iop_summary; exit 1; }
iop_build || { iop_result "build rpcrdma" 1; iop_summary; exit 1; }
case " $PROTOS " in
*" fsx-"*)
    FSX_BIN=${IOP_NFS_FSX_BIN:-}
    if [ -z "$FSX_BIN" ]; then
        iop_log "building nfs-fsx (cargo build -p rpcrdma-nfs-fsx)"
        (cd "$IOP_ROOT" && cargo build -q -p rpcrdma-nfs-fsx) ||
            { iop_result "build nfs-fsx" 1; iop_summary; exit 1; }
        FSX_BIN=$(iop_target_dir)/debug/nfs-fsx
    fi
    # Stripped: the guest's initramfs carries it.
    mkdir -p "$IOP_WORK/bin"
    strip -o "$IOP_WORK/bin/nfs-fsx" "$FSX_BIN" 2>/dev/null || cp "$FSX_BIN" "$IOP_WORK/bin/nfs-fsx"
    FSX_BIN=$IOP_WORK/bin/nfs-fsx
    ;;
esac
LOCKTEST=
if [ "$VERS" != 3 ]; then
    iop_log "building nfs-locktest (cargo build -p rpcrdma-nfs-locktest)"
    (cd "$IOP_ROOT" && cargo build -q -p rpcrdma-nfs-locktest) ||
        { iop_result "build nfs-locktest" 1; iop_summary; exit 1; }
    mkdir -p "$IOP_WORK/bin"
    strip -o "$IOP_WORK/bin/nfs-locktest" "$(iop_target_dir)/debug/nfs-locktest" 2>/dev/null ||
        cp "$(iop_target_dir)/debug/nfs-locktest" "$IOP_WORK/bin/nfs-locktest"
    LOCKTEST=$IOP_WORK/bin/nfs-locktest
fi
iop_prepare_guest || { iop_result "prepare the guest" 1; iop_summary; exit 1; }

EXPORT=$IOP_WORK/export
STATE=$IOP_WORK/state
mkdir -p "$EXPORT" "$STATE"
chmod 0777 "$EXPORT"

SQUASH=--no-root-squash
[ "${IOP_NFS_ROOT_SQUASH:-0}" = 1 ] && SQUASH=
# start_server: starts rpcrdma nfs serve (its log appended to server.log)
# and waits for its "serving" line; sets SERVER_PID.
start_server() {
    local before
    touch "$IOP_WORK/server.log"
    before=$(grep -c '^serving' "$IOP_WORK/server.log")
    "$BIN" nfs serve "$EXPORT" --listen "127.0.0.1:$RP" --mount-port "$MP" \
        --tcp "127.0.0.1:$TP" --state-dir "$STATE" --lease "${IOP_NFS_LEASE:-15}" \
        --log "warn,rpcrdma_nfs4=info" $SQUASH ${IOP_NFS_SERVE_ARGS---mulpdu 1448} \
        >>"$IOP_WORK/server.log" 2>&1 &
    SERVER_PID=$!
    IOP_PIDS+=("$SERVER_PID")
    for _ in $(seq 1 100); do
        [ "$(grep -c '^serving' "$IOP_WORK/server.log")" -gt "$before" ] && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || return 1
        sleep 0.2
    done
    return 1
}

iop_log "starting rpcrdma nfs serve $EXPORT (rdma $RP, mount $MP, tcp $TP)"
if ! start_server; then
    iop_result "server started" 1 "$(tail -3 "$IOP_WORK/server.log")"
    iop_summary
    exit 1
fi
iop_result "server started" 0 "$(grep -m1 '^serving' "$IOP_WORK/server.log")"

# wire_check_nfs NAME PCAP: wire-check.sh on the capture after fpdu-align.py
# (one FPDU per segment, see above). One kind of failure is tshark's, not
# ours, and is checked to be exactly that: tshark 4.0 re-inserts a Write
# chunk's data into the NFS READ reply without XDR round-up unless the data
# fills the chunk the call offered, so a short READ (at the end of a file)
# whose count is not a multiple of 4 ends 1-3 octets short for its NFS
# dissector ("Malformed Packet: NFS"), while RFC 8166 §4.4.6.1 says a
# responder MUST NOT write XDR pad bytes for a Write chunk (docs/spec-notes.md
# N11). Every other failure fails the check.
wire_check_nfs() {
    local name=$1 pcap=$2 aligned out rc bad known ok
    aligned=${pcap%.pcap}.aligned.pcap
    out=${aligned%.pcap}.wire-check.txt
    if ! python3 "$HERE/fpdu-align.py" "$pcap" "$aligned" "$RP" from >"${aligned%.pcap}.txt" 2>&1; then
        iop_result "$name" 1 "fpdu-align: $(tail -1 "${aligned%.pcap}.txt")"
        return
    fi
    timeout 900 "$IOP_WIRE_CHECK" "$aligned" --port "$RP" >"$out" 2>&1
    rc=$?
    grep ' FAIL ' "$out" | awk '{ print $2 }' >"$out.frames"
    known=0
    bad=$(grep ' FAIL ' "$out" | grep -cv 'rpc=reply prog=100003.*Malformed Packet: NFS')
    if [ -s "$out.frames" ]; then
        # The NFS-malformed ones must be READ replies with a Write chunk, a
        # count that is not a multiple of 4, and less data than the Write
        # chunk the call offered: tshark adds the round-up only when the
        # data fills the chunk the call offered (packet-rpcrdma.c,
        # add_iwarp_padding), so a short READ at the end of a file shows
        # 1-3 octets short, whoever the server.
        # NFSv3: procedure 6 and count3; NFSv4: a COMPOUND whose main
        # operation is READ (25) and its data length.
        tshark -r "$aligned" -Y "frame.number in {$(paste -sd, "$out.frames")}" -T fields \
            -e rpcordma.xid -e nfs.procedure_v3 -e rpcordma.writes_count -e nfs.count3 \
            -e nfs.main_opcode -e nfs.read.data_length \
            >"$out.replies" 2>/dev/null
        tshark -r "$aligned" -T fields -e rpcordma.xid -e rpcordma.rdma_length \
            -Y "tcp.dstport == $RP && rpcordma.xid in {$(cut -f1 "$out.replies" | cut -d, -f1 | sort -u | paste -sd,)}" \
            >"$out.calls" 2>/dev/null
        known=$(awk -F'\t' 'NR == FNR { if (!($1 in offered)) { m = split($2, l, ","); t = 0
                    for (i = 1; i <= m; i++) t += l[i]; offered[$1] = t }; next }
                { split($1, x, ","); split($2, p, ","); split($4, c, ",")
                  if ($5 == 25) { p[1] = 6; split($6, c, ",") } }
                p[1] == 6 && $3 == 1 && c[1] % 4 != 0 && (x[1] in offered) && c[1] < offered[x[1]] { k++ }
                END { print k + 0 }' "$out.calls" "$out.replies")
        [ "$((known + bad))" = "$(wc -l <"$out.frames")" ] || bad=$((bad + 1))
    fi
    [ "$rc" -le 1 ] && [ "$bad" = 0 ] && grep -q '^wire-check: [1-9]' "$out"
    ok=$?
    iop_result "$name" "$ok" "$(iop_wire_verdict "$out" "$rc"); $known of them tshark's missing round-up of odd-length READ data (N11), $bad other"
}

# restart_when_paused DIR PROCS: once every nfs-fsx worker has paused
# (DIR/pause-pN for each), restarts the server (SIGTERM, then the same
# command line and state directory) and lets the workers go on (DIR/resume).
# Waits as long as the guest runs.
restart_when_paused() {
    local dir=$1 procs=$2 n=0 rc
    while kill -0 "$GUEST_PID" 2>/dev/null; do
        if [ -e "$dir/resume" ]; then
            # A worker failed before pausing and released the others.
            break
        fi
        n=$(find "$dir" -maxdepth 1 -name 'pause-p*' 2>/dev/null | wc -l)
        if [ "$n" -ge "$procs" ]; then
            iop_log "every nfs-fsx worker paused: restarting the server under the mount (down for ${GAP} s)"
            kill -TERM "$SERVER_PID" 2>/dev/null
            iop_wait_pid "$SERVER_PID" 30
            rc=$?
            [ "$rc" = 0 ]
            iop_result "server stopped with the mount in use (SIGTERM)" $? "exit $rc"
            # The server stays down a while: the client's reconnects are
            # refused meanwhile, as when a real server reboots.
            sleep "$GAP"
            start_server
            iop_result "server restarted (same state directory)" $? "pid $SERVER_PID"
            touch "$dir/resume"
            return
        fi
        sleep 1
    done
    iop_result "the nfs-fsx workers paused for the server restart" 1 "$n of $procs paused"
}

# fsx_run RUN PROTO PORT: nfs-fsx in the guest on a mount over PROTO, then
# the export's copy against the model's manifest. With
# IOP_NFS_FSX_RESTART_AT=N the server restarts after operation N.
fsx_run() {
    local run=$1 proto=$2 port=$3 script log rc secs t fails oks
    local seed=${IOP_NFS_FSX_SEED:-1} ops=${IOP_NFS_FSX_OPS:-300} procs=${IOP_NFS_FSX_PROCS:-2}
    local restart=${IOP_NFS_FSX_RESTART_AT-150}
    script=$IOP_WORK/$run.sh
    {
        echo "SERVER=10.0.2.100 NFS_PORT=$port MNT_PORT=$MP PROTO=$proto RUN=$run VERS=$VERS"
        echo "SEED=$seed OPS=$ops PROCS=$procs PAUSE_AT=$restart MOUNT_OPTS=${IOP_NFS_FSX_MOUNT_OPTS:-}"
        [ -z "$SQUASH" ] && echo "FSX_ARGS=--owner-rw"
        echo "export SERVER NFS_PORT MNT_PORT PROTO RUN VERS SEED OPS PROCS PAUSE_AT MOUNT_OPTS FSX_ARGS"
        cat "$HERE/nfs-fsx-guest.sh"
    } >"$script"
    iop_log "guest: nfs-fsx over proto=$proto (port $port; seed $seed, $procs x $ops operations${restart:+, the server restarted after $restart})"
    t=$SECONDS
    iop_guest_start "client-$run" exec --port "$port" --fwd "$MP" --add "$FSX_BIN" \
        --script "$script" --out "$IOP_WORK/out-$run" --timeout 1500
    [ -n "$restart" ] && restart_when_paused "$EXPORT/$run" "$procs"
    iop_guest_finish "client-$run" 1700
    rc=$?
    secs=$((SECONDS - t))
    log=$IOP_WORK/client-$run.log
    grep -E '^FSX-(OK|FAIL|DONE|MOUNT|UMOUNT|INFO nfs-fsx)' "$log" | tr -d '\r' | cut -c1-300 | sed 's/^/    | /'
    fails=$(grep -c '^FSX-FAIL' "$log")
    oks=$(grep -c '^FSX-OK' "$log")
    [ "$rc" = 0 ] && [ "$fails" = 0 ] && [ "$oks" = "$procs" ] && grep -q '^FSX-DONE .*all passed' "$log" &&
        grep -q '^FSX-UMOUNT ok' "$log"
    iop_result "$run: nfs-fsx over proto=$proto (seed $seed, $procs processes x $ops operations)" $? \
        "$oks processes passed, $fails failures, guest exit $rc, ${secs} s"
    if [ "$fails" != 0 ]; then
        # The failing operation and the ones before it.
        grep -A45 '^FSX-FAIL p[0-9]* seed' "$log" | tr -d '\r' | head -60 | sed 's/^/    | /'
    fi
    if [ "$VERS" != 3 ] && [ -n "$restart" ]; then
        # After the restart the kernel client came back in the grace
        # period and ended its reclaim (RECLAIM_COMPLETE). (nfs-fsx's
        # workers close between operations: what they hold across the
        # restart is file handles, not opens; nfs4-recall.sh checks the
        # reclaim of a held open and lock.)
        for _ in $(seq 1 60); do
            grep -q 'NFSv4 grace period over' "$IOP_WORK/server.log" && break
            sleep 1
        done
        g=$(sed 's/\x1b\[[0-9;]*m//g' "$IOP_WORK/server.log" | grep -o 'NFSv4 grace period over: [^=]*locks' | tail -1)
        n=$(echo "$g" | sed -n 's/.*reclaimed \([0-9]*\) opens.*/\1/p')
        echo "$g" | grep -q ': 1 of 1 previous clients'
        iop_result "$run: after the restart the client came back in the grace period" $? "${g:-no grace period logged}; ${n:-0} reclaimed"
    fi
    if [ "$proto" = rdma ] && [ "${IOP_NFS_FSX_WIRE_CHECK:-0}" = 1 ]; then
        wire_check_nfs "$run: tshark finds every frame of the capture well-formed" \
            "$IOP_WORK/client-$run.pcap"
    fi
    "$FSX_BIN" manifest "$EXPORT/$run" >"$IOP_WORK/$run.host-manifest" 2>&1
    if [ -s "$IOP_WORK/out-$run/manifest.txt" ] &&
        diff "$IOP_WORK/out-$run/manifest.txt" "$IOP_WORK/$run.host-manifest" >"$IOP_WORK/$run.diff"; then
        iop_result "$run: the export on the host holds what the model says" 0 \
            "$(wc -l <"$IOP_WORK/$run.host-manifest") names compared (type, mode, links, size, contents)"
    else
        iop_result "$run: the export on the host holds what the model says" 1 \
            "$(head -c 600 "$IOP_WORK/$run.diff" 2>/dev/null | tr '\n' ' ')"
    fi
}

for run in $PROTOS; do
    case "$run" in
    fsx-rdma) fsx_run "$run" rdma "$RP"; continue ;;
    fsx-tcp) fsx_run "$run" tcp "$TP"; continue ;;
    esac
    sizes="BIG_MIB=$BIG"
    case "$run" in
    rdma) proto=rdma port=$RP mib=$BIG ;;
    tcp) proto=tcp port=$TP mib=$BIG ;;
    rdma-short | tcp-short)
        proto=${run%-short} mib=4
        if [ "$proto" = rdma ]; then port=$RP; else port=$TP; fi
        sizes="BIG_MIB=4 NSMALL=50 NDIR=600 NRANDOM=50"
        ;;
    *) iop_result "unknown run $run (rdma, tcp, rdma-short, tcp-short, fsx-rdma, fsx-tcp)" 1; continue ;;
    esac
    # The short RDMA run is served as rpcrdma nfs serve serves by default,
    # with root squashed (IOP_NFS_SHORT_SQUASH=0: as the other runs): the
    # guest's root works as the anonymous user, and the files it makes
    # belong to uid 65534 on the host.
    squashed=0
    [ -z "$SQUASH" ] && squashed=1
    if [ "$run" = rdma-short ] && [ "${IOP_NFS_SHORT_SQUASH:-1}" = 1 ] && [ "$squashed" = 0 ]; then
        iop_log "restarting the server with root squashed (its default) for $run"
        kill -TERM "$SERVER_PID" 2>/dev/null
        iop_wait_pid "$SERVER_PID" 30
        saved_squash=$SQUASH
        SQUASH=
        start_server
        iop_result "$run: server restarted with root squashed" $? "pid $SERVER_PID"
        SQUASH=$saved_squash
        squashed=1
    fi
    script=$IOP_WORK/workload-$run.sh
    {
        echo "SERVER=10.0.2.100 NFS_PORT=$port MNT_PORT=$MP PROTO=$proto RUN=$run VERS=$VERS $sizes"
        echo "export SERVER NFS_PORT MNT_PORT PROTO RUN VERS BIG_MIB NSMALL NDIR NRANDOM"
        cat "$HERE/nfs-workload.sh"
    } >"$script"
    iop_log "guest: workload over proto=$proto (port $port; $sizes)"
    t=$SECONDS
    iop_guest_start "client-$run" exec --port "$port" --fwd "$MP" \
        ${LOCKTEST:+--add "$LOCKTEST"} \
        --script "$script" --out "$IOP_WORK/out-$run" --timeout 1500
    iop_guest_finish "client-$run" 1700
    rc=$?
    secs=$((SECONDS - t))
    log=$IOP_WORK/client-$run.log
    grep -E '^WL-' "$log" | tr -d '\r' | sed 's/^/    | /'
    fails=$(grep -c '^WL-FAIL' "$log")
    passes=$(grep -c '^WL-PASS' "$log")
    [ "$rc" = 0 ] && [ "$fails" = 0 ] && [ "$passes" -ge 20 ] && grep -q '^WL-DONE 0 failed' "$log"
    iop_result "$run: kernel client workload over proto=$proto" $? "$passes checks passed, $fails failed, guest exit $rc, ${secs} s"
    guest_sum=$(grep -m1 '^WL-BIG-SHA256' "$log" | tr -d '\r' | cut -d' ' -f2)
    host_sum=$(sha256sum "$EXPORT/wl-$run/big" 2>/dev/null | cut -d' ' -f1)
    [ -n "$guest_sum" ] && [ "$guest_sum" = "$host_sum" ]
    iop_result "$run: $mib MiB file identical on the host (SHA-256)" $? "${host_sum:-missing}"
    grep -m1 'WL-INFO big file' "$log" | tr -d '\r' | sed 's/^WL-INFO /    | /'
    owner=$(stat -c %u "$EXPORT/wl-$run/big" 2>/dev/null)
    if [ "$squashed" = 1 ]; then want=65534; else want=0; fi
    [ "$owner" = "$want" ]
    iop_result "$run: files the guest's root made belong to uid $want on the host ($([ "$squashed" = 1 ] && echo root squashed || echo --no-root-squash))" $? "owner ${owner:-missing}"
    if [ "$squashed" = 1 ] && [ -n "$SQUASH" ]; then
        iop_log "restarting the server as before ($SQUASH)"
        kill -TERM "$SERVER_PID" 2>/dev/null
        iop_wait_pid "$SERVER_PID" 30
        start_server
        iop_result "$run: server restarted with $SQUASH" $? "pid $SERVER_PID"
    fi
    if [ "$run" = rdma ]; then
        # The full run's capture as QEMU re-segmented it: tshark decodes the
        # guest's calls reliably, our replies only where an FPDU happens to
        # start a segment, so this counts both directions (the short run
        # below checks our replies on the aligned capture).
        tshark -r "$IOP_WORK/client-$run.pcap" -Y "tcp.port == $RP && rpcordma" -T fields \
            -e rpcordma.reads_count -e rpcordma.writes_count -e rpcordma.reply_count \
            2>/dev/null >"$IOP_WORK/chunks-$run.txt"
        read -r reads writes replies < <(awk -F'\t' '$1 > 0 { r++ } $2 > 0 { w++ } $3 > 0 { c++ }
            END { print r + 0, w + 0, c + 0 }' "$IOP_WORK/chunks-$run.txt")
        [ "$reads" -gt 0 ] && [ "$writes" -gt 0 ] && [ "$replies" -gt 0 ]
        iop_result "$run: capture holds Read chunks, Write lists and Reply chunks" $? \
            "messages with a Read list $reads, Write list $writes, Reply chunk $replies"
    fi
    if [ "$run" = rdma-short ]; then
        pcap=$IOP_WORK/client-$run.pcap
        wire_check_nfs "$run: tshark finds every frame of the capture well-formed" "$pcap"
        # By direction, on the capture with one FPDU per segment: the
        # kernel's calls carry Read chunks (WRITE data, SYMLINK paths); our
        # server's replies use the Write lists (READ data) and Reply chunks
        # (large READDIRPLUS) the calls offered.
        aligned=${pcap%.pcap}.aligned.pcap
        reads=$(tshark -r "$aligned" -Y "tcp.dstport == $RP && rpcordma" -T fields \
            -e rpcordma.reads_count 2>/dev/null | awk -F'\t' '$1 > 0 { r++ } END { print r + 0 }')
        read -r writes replies < <(tshark -r "$aligned" -Y "tcp.srcport == $RP && rpcordma" \
            -T fields -e rpcordma.writes_count -e rpcordma.reply_count 2>/dev/null |
            awk -F'\t' '$1 > 0 { w++ } $2 > 0 { c++ } END { print w + 0, c + 0 }')
        [ "$reads" -gt 0 ] && [ "$writes" -gt 0 ] && [ "$replies" -gt 0 ]
        iop_result "$run: the kernel's calls carry Read chunks, our replies use Write lists and Reply chunks" $? \
            "calls with a Read list $reads; our replies with a Write list $writes, with a Reply chunk $replies"
    fi
done

iop_log "stopping the server (SIGTERM)"
kill -TERM "$SERVER_PID" 2>/dev/null
iop_wait_pid "$SERVER_PID" 30
rc=$?
! grep -qiE 'panicked|RUST_BACKTRACE' "$IOP_WORK/server.log"
nopanic=$?
[ "$rc" = 0 ] && [ "$nopanic" = 0 ]
iop_result "server: clean shutdown, no panic" $? "exit $rc"

iop_summary
