#!/usr/bin/env bash
# Differential test of rpcrdma-xdrgen against rpcgen (docs/xdrgen.md):
#   1. rpcgen (Debian's rpcsvc-proto) generates C from
#      crates/xdrgen-tests/xdr/{all,zoo,odd,chain}.x and
#      crates/xdrgen/xdr/{nfs3,mount3}.x; scripts/xdrgen-diff/vectors_*.c
#      encode fixed values with it and libtirpc and print their bytes;
#   2. the Rust generated from the same files encodes the same values and
#      must produce the same bytes, and decode rpcgen's bytes back to the
#      same values (crates/xdrgen-tests/tests/golden*.rs, nfs_golden.rs,
#      run against the fresh C output);
#   3. the fresh C output must equal the golden vectors checked in for
#      `cargo test` (crates/xdrgen-tests/tests/golden/*.txt);
#      `--update` rewrites them instead;
#   4. rpcgen accepts demo.x and xdr/stress.x and their C compiles.
# Installs rpcsvc-proto, libtirpc-dev and gcc with apt-get when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
update=0
[ "${1:-}" = "--update" ] && update=1

need=()
command -v rpcgen >/dev/null || need+=(rpcsvc-proto)
[ -f /usr/include/tirpc/rpc/rpc.h ] || need+=(libtirpc-dev)
command -v gcc >/dev/null || need+=(gcc)
command -v cpp >/dev/null || need+=(cpp)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp crates/xdrgen-tests/xdr/all.x crates/xdrgen/xdr/nfs3.x crates/xdrgen/xdr/mount3.x \
    crates/xdrgen-tests/xdr/zoo.x crates/xdrgen-tests/xdr/odd.x crates/xdrgen-tests/xdr/chain.x \
    scripts/xdrgen-diff/*.c scripts/xdrgen-diff/emit.h "$work/"
(
    cd "$work"
    # -Dbool=bool_t: rpcgen's C for a fixed array of bool (odd.x) declares
    # a `bool *` where it means `bool_t *`.
    for x in all zoo odd chain; do
        rpcgen -N -h $x.x -o $x.h
        rpcgen -N -c $x.x -o ${x}_xdr.c
        gcc -Wall -Wno-unused-variable -Dbool=bool_t -I/usr/include/tirpc -I. \
            -o vectors_$x vectors_$x.c ${x}_xdr.c -ltirpc
        ./vectors_$x > $x.txt
    done
    for x in nfs3 mount3; do
        rpcgen -h $x.x -o $x.h
        rpcgen -c $x.x -o ${x}_xdr.c
    done
    gcc -Wall -Wno-unused-variable -I/usr/include/tirpc -o vectors_nfs vectors_nfs.c nfs3_xdr.c mount3_xdr.c -ltirpc
    ./vectors_nfs > nfs.txt
)
sets="all zoo odd chain nfs"
count=$(for set in $sets; do cat "$work/$set.txt"; done | wc -l)
echo "rpcgen + libtirpc encoded $count values (all.x, zoo.x, odd.x, chain.x, nfs3.x, mount3.x)"

for set in $sets; do
    golden=crates/xdrgen-tests/tests/golden/$set.txt
    if [ $update -eq 1 ]; then
        cp "$work/$set.txt" "$golden"
        echo "golden vectors updated: $golden"
    elif ! diff -u "$golden" "$work/$set.txt"; then
        echo "FAIL: rpcgen's bytes differ from the checked-in golden vectors ($golden); rerun with --update if the .x files or vectors_$set.c changed" >&2
        exit 1
    fi
done

XDRGEN_C_VECTORS="$work/all.txt" XDRGEN_C_NFS_VECTORS="$work/nfs.txt" \
    XDRGEN_C_ZOO_VECTORS="$work/zoo.txt" XDRGEN_C_ODD_VECTORS="$work/odd.txt" \
    XDRGEN_C_CHAIN_VECTORS="$work/chain.txt" \
    cargo test -q -p rpcrdma-xdrgen-tests --test golden --test nfs_golden \
    --test golden_zoo --test golden_odd --test golden_chain

for x in crates/demoprog/demo.x crates/xdrgen-tests/xdr/stress.x; do
    base=$(basename "$x" .x)
    cp "$x" "$work/$base.x"
    (cd "$work" && rpcgen -N -h "$base.x" -o "$base.h" && rpcgen -N -c "$base.x" -o "${base}_xdr.c" \
        && gcc -c -Wall -Wno-unused-variable -I/usr/include/tirpc "${base}_xdr.c" -o "${base}_xdr.o")
    echo "rpcgen accepts $x and its C compiles"
done
echo "xdrgen-rpcgen-diff: all $count values identical to rpcgen's, both ways"
