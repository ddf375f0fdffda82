# shellcheck shell=bash
# common.sh - helpers shared by the interop scripts in this directory
# (sourced, not run). They drive the QEMU guest of ../shared/interop (Linux
# kernel siw, rping, nfsd) against our `rpcrdma` binary on 127.0.0.1.
#
# Environment:
#   RPCRDMA_SHARED   the shared directory (default: ../shared beside the repo)
#   RPCRDMA_BIN      use this rpcrdma binary instead of building one
#   INTEROP_CACHE    guest cache (default ~/.cache/rpcrdma-interop)
#   IOP_WORK         where logs and captures go (default: a new mktemp dir,
#                    removed at exit when every check passed: a run's
#                    captures take up to a GB; a failed run keeps them)
#   IOP_KEEP=1       keep that directory even when everything passed
#
# Everything started here is stopped by its pid on exit; nothing else is
# touched.

IOP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
IOP_SHARED=${RPCRDMA_SHARED:-$(cd "$IOP_ROOT/.." && pwd)/shared}
IOP_GUEST_DIR=$IOP_SHARED/interop
IOP_WIRE_CHECK=$IOP_SHARED/oracle/wire-check.sh
export INTEROP_CACHE=${INTEROP_CACHE:-$HOME/.cache/rpcrdma-interop}
IOP_NAME=${IOP_NAME:-interop}
IOP_PASS=0
IOP_FAIL=0
IOP_FAILED=()
IOP_PIDS=()
IOP_QEMU_PIDFILES=()
IOP_T0=$SECONDS
IOP_WORK_MADE=0

iop_log() { printf '[%s %3ds] %s\n' "$IOP_NAME" "$((SECONDS - IOP_T0))" "$*" >&2; }

# iop_result NAME STATUS [DETAIL]: records and prints one check.
iop_result() {
    local name=$1 status=$2 detail=${3:-}
    if [ "$status" = 0 ]; then
        IOP_PASS=$((IOP_PASS + 1))
        printf 'PASS  %s%s\n' "$name" "${detail:+  ($detail)}"
    else
        IOP_FAIL=$((IOP_FAIL + 1))
        IOP_FAILED+=("$name")
        printf 'FAIL  %s%s\n' "$name" "${detail:+  ($detail)}"
    fi
}

# iop_summary: prints the summary; returns 0 only if every check passed
# (and there was at least one).
iop_summary() {
    echo
    local where="logs and captures in $IOP_WORK"
    if iop_work_removable; then
        where="$where (removed at exit: every check passed; IOP_KEEP=1 keeps it)"
    fi
    echo "== $IOP_NAME: $IOP_PASS passed, $IOP_FAIL failed in $((SECONDS - IOP_T0)) s; $where"
    if [ "$IOP_FAIL" -gt 0 ] || [ "$IOP_PASS" = 0 ]; then
        for f in "${IOP_FAILED[@]}"; do echo "   failed: $f"; done
        echo "== $IOP_NAME: FAIL"
        return 1
    fi
    echo "== $IOP_NAME: PASS"
    return 0
}

# iop_work_removable: true if IOP_WORK is a directory this script made
# itself, every check passed and IOP_KEEP is not 1.
iop_work_removable() {
    [ "${IOP_WORK_MADE:-0}" = 1 ] && [ "${IOP_KEEP:-0}" != 1 ] &&
        [ "$IOP_FAIL" = 0 ] && [ "$IOP_PASS" -gt 0 ]
}

iop_setup_work() {
    if [ -z "${IOP_WORK:-}" ]; then
        IOP_WORK=$(mktemp -d "/tmp/rpcrdma-$IOP_NAME.XXXXXX") || exit 2
        IOP_WORK_MADE=1
    fi
    mkdir -p "$IOP_WORK"
    trap iop_cleanup EXIT
    trap 'exit 130' INT TERM
}

# Stops every guest and background process this script started.
iop_cleanup() {
    local f p running
    for f in "${IOP_QEMU_PIDFILES[@]}"; do
        iop_stop_qemu "$f"
    done
    # Only background jobs of this shell that are still running.
    running=" $(jobs -pr | tr '\n' ' ') "
    for p in "${IOP_PIDS[@]}"; do
        case "$running" in *" $p "*) kill "$p" 2>/dev/null ;; esac
    done
    for p in "${IOP_PIDS[@]}"; do
        case "$running" in *" $p "*) iop_wait_pid "$p" 10 >/dev/null 2>&1 || kill -9 "$p" 2>/dev/null ;; esac
    done
    if iop_work_removable; then
        rm -rf "$IOP_WORK"
    fi
    return 0
}

# iop_stop_qemu PIDFILE: stops the QEMU that wrote PIDFILE, if it still runs
# (checked by its command line, so a reused pid is never hit).
iop_stop_qemu() {
    local f=$1 pid
    [ -s "$f" ] || return 0
    pid=$(cat "$f")
    if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep "qemu-system.*-pidfile $f" >/dev/null; then
        kill "$pid" 2>/dev/null
    fi
    return 0
}

# iop_wait_pid PID SECONDS: waits for a child to exit; returns its status,
# or 124 if it is still running after SECONDS.
iop_wait_pid() {
    local pid=$1 limit=$2 i=0
    while kill -0 "$pid" 2>/dev/null; do
        if [ "$i" -ge $((limit * 5)) ]; then
            return 124
        fi
        sleep 0.2
        i=$((i + 1))
    done
    wait "$pid"
}

# iop_need COMMAND PACKAGE: installs PACKAGE with apt-get if COMMAND is
# missing (root, or sudo).
iop_need() {
    command -v "$1" >/dev/null 2>&1 && return 0
    local sudo=
    [ "$(id -u)" = 0 ] || sudo=sudo
    iop_log "installing $2 (for $1) with apt-get"
    $sudo apt-get update -qq >&2 &&
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >&2
}

# iop_build: sets BIN to an rpcrdma binary (built unless RPCRDMA_BIN is set).
iop_build() {
    if [ -n "${RPCRDMA_BIN:-}" ]; then
        BIN=$RPCRDMA_BIN
    else
        iop_log "building rpcrdma (cargo build -p rpcrdma-cli)"
        (cd "$IOP_ROOT" && cargo build -q -p rpcrdma-cli --bin rpcrdma) || return 1
        local target=${CARGO_TARGET_DIR:-$IOP_ROOT/target}
        case "$target" in /*) ;; *) target=$IOP_ROOT/$target ;; esac
        BIN=$target/debug/rpcrdma
    fi
    [ -x "$BIN" ] || { iop_log "no rpcrdma binary at $BIN"; return 1; }
}

# iop_seed_kbuild: build-guest.sh builds siw.ko against the Debian kernel
# it boots, fetching linux-kbuild-<major> at exactly the kernel image's
# package version. The archive can move kbuild on without the image: in
# November 2026 bookworm-security had the image and headers of 6.1.0-56 at
# 6.1.192-2 and kbuild only at 6.1.192-3, and every guest build failed
# with "Version '6.1.192-2' for 'linux-kbuild-6.1' was not found". When
# that version is missing, this puts the archive's kbuild of the same
# upstream version (the build tools of the same kernel) into the harness's
# cache, where build-guest.sh takes any linux-kbuild-<major>_*.deb it
# finds. It does nothing when the version exists, the deb is cached, or
# siw.ko is built already; it fails only when no kbuild of that kernel
# can be had.
iop_seed_kbuild() {
    local cache=$INTEROP_CACHE kver=${INTEROP_KERNEL_ABI:-} kmaj img img_ver want have v
    if [ -z "$kver" ] && [ -f "$cache/guest/KERNEL_ABI" ]; then
        kver=$(cat "$cache/guest/KERNEL_ABI")
    fi
    if [ -z "$(apt-cache madison linux-image-amd64 2>/dev/null)" ]; then
        apt-get update -q >/dev/null 2>&1 || true
    fi
    if [ -z "$kver" ]; then
        kver=$(apt-cache depends linux-image-amd64 2>/dev/null |
            sed -n 's/.*Depends: linux-image-\(.*\)$/\1/p' | head -1)
    fi
    [ -n "$kver" ] || return 0 # build-guest.sh will say what is wrong
    kmaj=$(echo "$kver" | cut -d. -f1-2)
    [ -f "$cache/siw-$kver/siw.ko" ] && return 0
    ls "$cache"/debs/linux-kbuild-"$kmaj"_*.deb >/dev/null 2>&1 && return 0
    img=$(ls "$cache"/debs/linux-image-"$kver"_*.deb 2>/dev/null | head -1)
    if [ -n "$img" ]; then
        img_ver=$(dpkg-deb -f "$img" Version)
    else
        img_ver=$(apt-cache policy "linux-image-$kver" 2>/dev/null | sed -n 's/^ *Candidate: //p')
    fi
    [ -n "$img_ver" ] && [ "$img_ver" != "(none)" ] || return 0
    have=$(apt-cache madison "linux-kbuild-$kmaj" 2>/dev/null | awk -F'|' '{ gsub(/ /, "", $2); print $2 }')
    printf '%s\n' "$have" | grep -qxF -- "$img_ver" && return 0
    want=
    for v in $have; do
        if [ "${v%-*}" = "${img_ver%-*}" ]; then
            want=$v
            break # madison lists the newest first
        fi
    done
    if [ -z "$want" ]; then
        iop_log "no linux-kbuild-$kmaj of kernel ${img_ver%-*} in the archive (have: $(echo $have)); build-guest.sh cannot build siw.ko"
        return 1
    fi
    iop_log "linux-kbuild-$kmaj $img_ver is not in the archive: seeding the guest cache with $want (same kernel)"
    mkdir -p "$cache/debs"
    (cd "$cache/debs" && apt-get download -q "linux-kbuild-$kmaj=$want") >"$IOP_WORK/kbuild-seed.log" 2>&1 || {
        iop_log "apt-get download linux-kbuild-$kmaj=$want failed; see $IOP_WORK/kbuild-seed.log"
        return 1
    }
}

# iop_prepare_guest: builds the guest (installs host packages with apt on
# the first run) and sets GUEST_CACHE, the INTEROP_CACHE to boot from.
#
# The guest image of ../shared/interop lacks libgcc_s.so.1, which glibc
# loads when a thread calls pthread_exit: rping's completion thread does so
# at disconnect, so every rping in that guest aborts (exit 134) after its
# last ping. Until build-guest.sh copies the library, this builds an overlay
# cache beside INTEROP_CACHE whose initramfs is the shared one with a second
# cpio archive holding the library appended (the kernel unpacks
# concatenated archives in order); everything else is a symlink into the
# shared cache.
iop_prepare_guest() {
    iop_seed_kbuild || return 1
    iop_log "preparing the guest (build-guest.sh; cached after the first run)"
    "$IOP_GUEST_DIR/build-guest.sh" >"$IOP_WORK/build-guest.log" 2>&1 || {
        iop_log "build-guest.sh failed; see $IOP_WORK/build-guest.log"
        return 1
    }
    local real=$INTEROP_CACHE img=$INTEROP_CACHE/guest/initramfs.cpio.gz
    if zcat "$img" | cpio -t --quiet 2>/dev/null | grep 'libgcc_s\.so\.1$' >/dev/null; then
        GUEST_CACHE=$real
        return 0
    fi
    local ov=${real%/}-libgcc lib
    lib=$(ldconfig -p | awk '/libgcc_s\.so\.1 .*x86-64/ && !found { print $NF; found = 1 }')
    if [ -z "$lib" ] || [ ! -e "$lib" ]; then
        iop_log "libgcc_s.so.1 not found on the host"
        return 1
    fi
    if [ ! -s "$ov/guest/initramfs.cpio.gz" ] || [ "$img" -nt "$ov/guest/initramfs.cpio.gz" ]; then
        iop_log "guest lacks libgcc_s.so.1 (rping aborts at exit): overlay cache $ov"
        mkdir -p "$ov/guest"
        local e n
        for e in "$real"/*; do
            n=$(basename "$e")
            case "$n" in guest | logs | initramfs-root | selftest-*) ;; *) ln -sfn "$e" "$ov/$n" ;; esac
        done
        ln -sfn "$real/guest/vmlinuz" "$ov/guest/vmlinuz"
        cp "$real/guest/KERNEL_ABI" "$ov/guest/KERNEL_ABI"
        local t
        t=$(mktemp -d)
        mkdir -p "$t$(dirname "$lib")"
        cp -L "$lib" "$t$lib"
        (cd "$t" && printf '%s\0' "${lib#/}" | cpio --null -o -H newc --quiet | gzip -1) >"$t/extra.cpio.gz"
        cat "$img" "$t/extra.cpio.gz" >"$ov/guest/initramfs.cpio.gz.tmp"
        mv "$ov/guest/initramfs.cpio.gz.tmp" "$ov/guest/initramfs.cpio.gz"
        rm -rf "$t"
    fi
    GUEST_CACHE=$ov
}

# iop_socat_shim: $IOP_WORK/socat-shim/socat, which run-guest.sh's guestfwd
# finds first on PATH. QEMU runs `socat - TCP:127.0.0.1:N` for each guest
# connection with the connection as its stdin, stdout *and stderr*, so
# socat's own messages would reach the guest as bytes of the stream: "E
# connect(...): Connection refused" while our server is down, "Broken pipe"
# when it goes. The guest's siw takes the first for an MPA Reply, and the
# 6.1 kernel's siw then oopses (siw_cm_upcall hands iw_cm the private data
# of a Reply header it rejected, pd_len over 512, from a NULL buffer) and
# the guest's RDMA stack is gone. The shim runs the real socat with its
# messages in $IOP_WORK/socat.log instead: a refused connection then reaches
# the guest as a plain close.
iop_socat_shim() {
    local dir=$IOP_WORK/socat-shim real
    [ -x "$dir/socat" ] && return 0
    real=$(command -v socat) || { iop_log "socat not installed (build-guest.sh installs it)"; return 1; }
    mkdir -p "$dir"
    printf '#!/bin/sh\nexec "%s" -lf "%s" "$@"\n' "$real" "$IOP_WORK/socat.log" >"$dir/socat"
    chmod +x "$dir/socat"
}

# iop_guest_start NAME MODE [run-guest.sh options]: boots the guest in the
# background; console log $IOP_WORK/NAME.log, capture $IOP_WORK/NAME.pcap.
# Sets GUEST_PID (the run-guest.sh wrapper).
iop_guest_start() {
    local name=$1 mode=$2
    shift 2
    rm -f "$IOP_WORK/$name.log" "$IOP_WORK/$name.qemu.pid"
    iop_socat_shim
    PATH=$IOP_WORK/socat-shim:$PATH INTEROP_CACHE=$GUEST_CACHE "$IOP_GUEST_DIR/run-guest.sh" "$mode" \
        --log "$IOP_WORK/$name.log" --pcap "$IOP_WORK/$name.pcap" \
        --pidfile "$IOP_WORK/$name.qemu.pid" "$@" >"$IOP_WORK/$name.run-guest.out" 2>&1 &
    GUEST_PID=$!
    IOP_PIDS+=("$GUEST_PID")
    IOP_QEMU_PIDFILES+=("$IOP_WORK/$name.qemu.pid")
}

# iop_guest_wait_line NAME REGEX SECONDS: waits for a console line; fails if
# the guest ends first or the time runs out.
iop_guest_wait_line() {
    local name=$1 re=$2 limit=$3 i=0
    while [ "$i" -lt $((limit * 5)) ]; do
        grep -qE "$re" "$IOP_WORK/$name.log" 2>/dev/null && return 0
        kill -0 "$GUEST_PID" 2>/dev/null || {
            grep -qE "$re" "$IOP_WORK/$name.log" 2>/dev/null
            return
        }
        sleep 0.2
        i=$((i + 1))
    done
    return 1
}

# iop_guest_finish NAME SECONDS: lets the guest power off by itself within
# SECONDS, else stops QEMU; returns run-guest.sh's status.
iop_guest_finish() {
    local name=$1 limit=$2 rc
    iop_wait_pid "$GUEST_PID" "$limit"
    rc=$?
    if [ "$rc" = 124 ]; then
        iop_log "$name: guest still running after ${limit}s; stopping it"
        iop_stop_qemu "$IOP_WORK/$name.qemu.pid"
        iop_wait_pid "$GUEST_PID" 15
        rc=124
    fi
    return "$rc"
}

# iop_wire_check NAME PCAP [wire-check options]: tshark on a capture
# (bounded by IOP_WIRE_TIMEOUT seconds, default 120).
# iop_wire_check_aligned NAME PCAP PORT from|to: the same after
# fpdu-align.py put every FPDU our side sent (from or to PORT) in a segment
# of its own (tshark's MPA dissector assumes that; QEMU's user networking
# re-segments what the host sends). fpdu-align.py fails on a malformed FPDU
# stream itself.
iop_wire_check_aligned() {
    local name=$1 pcap=$2 port=$3 dir=$4 out
    out=${pcap%.pcap}.aligned.pcap
    if ! python3 "$(dirname "${BASH_SOURCE[0]}")/fpdu-align.py" "$pcap" "$out" "$port" "$dir" >"${out%.pcap}.txt" 2>&1; then
        iop_result "$name" 1 "fpdu-align: $(tail -1 "${out%.pcap}.txt")"
        return
    fi
    sed 's/^/    | /' "${out%.pcap}.txt"
    iop_wire_check "$name" "$out" --port "$port"
}
iop_wire_check() {
    local name=$1 pcap=$2
    shift 2
    if [ ! -s "$pcap" ]; then
        iop_result "$name" 1 "no capture at $pcap"
        return
    fi
    local out=${pcap%.pcap}.wire-check.txt rc
    timeout "${IOP_WIRE_TIMEOUT:-120}" "$IOP_WIRE_CHECK" "$pcap" "$@" >"$out" 2>&1
    rc=$?
    iop_result "$name" "$rc" "$(iop_wire_verdict "$out" "$rc")"
}

# iop_wire_verdict OUT RC: the last line wire-check.sh wrote to OUT, or,
# when it wrote nothing, its exit status and the free space where it and
# tshark write (a full disk silences both: tshark's decode of an NFS
# capture takes a few GB in TMPDIR).
iop_wire_verdict() {
    local out=$1 rc=$2 line
    line=$(tail -1 "$out" 2>/dev/null)
    if [ -n "$line" ]; then
        printf '%s' "$line"
    else
        printf 'wire-check printed nothing (exit %s); free: %s in %s, %s in %s' "$rc" \
            "$(iop_free_gb "$(dirname "$out")")" "$(dirname "$out")" \
            "$(iop_free_gb "${TMPDIR:-/tmp}")" "${TMPDIR:-/tmp}"
    fi
}

# iop_free_kb DIR: the KiB free in DIR's file system (nothing if df fails).
iop_free_kb() {
    df -Pk "$1" 2>/dev/null | awk 'NR == 2 { print $4 }'
}

# iop_free_gb DIR: the same, e.g. "12.3 GB".
iop_free_gb() {
    iop_free_kb "$1" | awk '{ printf "%.1f GB", $1 / 1048576 }'
}

# iop_target_dir: cargo's target directory.
iop_target_dir() {
    local target=${CARGO_TARGET_DIR:-$IOP_ROOT/target}
    case "$target" in /*) ;; *) target=$IOP_ROOT/$target ;; esac
    echo "$target"
}

# iop_build_rdmacore: sets RC_BIN to a stripped rpcrdma built with the
# rdma-core feature (installs libibverbs-dev and librdmacm-dev with apt if
# missing), or to a copy of RPCRDMA_RDMACORE_BIN.
iop_build_rdmacore() {
    local bin=${RPCRDMA_RDMACORE_BIN:-}
    if [ -z "$bin" ]; then
        if [ ! -e /usr/include/infiniband/verbs.h ] || [ ! -e /usr/include/rdma/rdma_cma.h ]; then
            iop_need ibv_devices ibverbs-utils >/dev/null 2>&1 || true
            local sudo=
            [ "$(id -u)" = 0 ] || sudo=sudo
            iop_log "installing libibverbs-dev librdmacm-dev with apt-get"
            $sudo apt-get update -qq >&2 &&
                $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libibverbs-dev librdmacm-dev >&2 ||
                return 1
        fi
        iop_log "building rpcrdma with the rdma-core feature"
        (cd "$IOP_ROOT" && cargo build -q -p rpcrdma-cli --bin rpcrdma --features rdma-core) || return 1
        bin=$(iop_target_dir)/debug/rpcrdma
    fi
    [ -x "$bin" ] || { iop_log "no rpcrdma binary at $bin"; return 1; }
    # Not `grep -q`: it exits at the first match, ldd's loader then dies of
    # SIGPIPE on its next line, and under `set -o pipefail` the pipeline
    # fails although the library is there (seen in CI on a loaded machine;
    # 34 of 300 tries with both cores busy). The same holds for every
    # pipe in these scripts: the reader must read to the end.
    ldd "$bin" | grep libibverbs >/dev/null || { iop_log "$bin was built without the rdma-core feature"; return 1; }
    RC_BIN=$IOP_WORK/bin/rpcrdma
    mkdir -p "$IOP_WORK/bin"
    strip -o "$RC_BIN" "$bin" 2>/dev/null || cp "$bin" "$RC_BIN"
}
