#!/usr/bin/env bash
# Differential test of rpcrdma-xdrgen against rpcgen (docs/xdrgen.md,
# "Matching rpcgen byte for byte"). Two parts:
#
# The generic differential, for any .x file, also one it has never seen:
#   scripts/xdrgen-rpcgen-diff.sh FILE.x [...]
#   1. rpcgen -N writes the C of each file; xdrgen-difftool (the xdrgen
#      crate's `difftest` feature) writes a C driver over its xdr_<type>
#      functions (type names, a table of xdr_ functions and sizeof of each
#      type), compiled against rpcgen's C and libtirpc;
#   2. a temporary crate (target/xdrgen-diff/crate, built into the
#      worktree's target/) generates the same files with xdrgen's Builder in
#      its build.rs; its binary dispatches by type name;
#   3. xdrgen-difftool writes random valid values of every top-level type
#      (XDRGEN_DIFF_VALUES per type, default 200, seed XDRGEN_DIFF_SEED,
#      default 1), straight from the checked definitions, and invalid
#      mutations of them (lengths over their bound, union discriminants no
#      case lists, undeclared enum values, bools of 2);
#   4. both drivers decode each value and encode it again; both must take
#      every valid value and give back exactly its bytes, and both must
#      refuse the over-bound lengths and unlisted discriminants (we also
#      refuse the enum values and bools libtirpc takes: spec-notes G1, G2).
#      Any disagreement is printed with the type and the hex.
#
# Without FILE arguments (CI), first the fixed vectors:
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
# then the generic differential on every .x file in the tree (but those
# rpcgen cannot take, listed below with the reason).
# Installs rpcsvc-proto, libtirpc-dev and gcc with apt-get when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
update=0
[ "${1:-}" = "--update" ] && { update=1; shift; }
files=("$@")
seed=${XDRGEN_DIFF_SEED:-1}
values=${XDRGEN_DIFF_VALUES:-200}

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

# xdrgen-difftool: `cargo build -p rpcrdma-xdrgen --features difftest`.
tool=$PWD/target/debug/xdrgen-difftool

# rpcgen's C of a file into directory $2 as $3.{h,_xdr.c}: the file
# itself, or, when it has nested definitions (RFC 4506 §6.3 allows them,
# rpcgen refuses them), xdrgen-difftool's copy with them made top-level
# (same encodings).
rpcgen_c() {
    local x=$1 d=$2 base=$3
    mkdir -p "$d"
    if [ -n "$("$tool" nested "$x")" ]; then
        echo "($x has nested definitions: rpcgen reads xdrgen-difftool's flattened copy)"
        "$tool" flatten "$x" >"$d/$base.x"
    else
        cp "$x" "$d/$base.x"
    fi
    (cd "$d" && rpcgen -N -h "$base.x" -o "$base.h" && rpcgen -N -c "$base.x" -o "${base}_xdr.c")
}

# The C driver of file $1 in directory $2 (rpcgen's C there, as $3).
c_driver() {
    "$tool" c-driver "$1" "$3.h" >"$2/driver.c" \
        && gcc -Wall -Wno-unused-variable -Dbool=bool_t -I/usr/include/tirpc -I"$2" \
            -o "$2/cdrv" "$2/driver.c" "$2/${3}_xdr.c" -ltirpc
}

# The generic differential of the files given (see the top).
generic() {
    echo "generic differential: building xdrgen-difftool and the Rust driver"
    cargo build -q -p rpcrdma-xdrgen --features difftest --bin xdrgen-difftool
    "$tool" rust-crate target/xdrgen-diff/crate "$@"
    CARGO_TARGET_DIR=$PWD/target cargo build -q --manifest-path target/xdrgen-diff/crate/Cargo.toml
    local rdrv=$PWD/target/debug/xdrgen-diff-rust
    local fail=0 i=0 x d base
    for x in "$@"; do
        d=$work/generic/$i
        # A C-safe name: rpcgen makes its header guard of it.
        base=$(basename "$x" .x | tr -c 'A-Za-z0-9_\n' '_')
        if ! rpcgen_c "$x" "$d" "$base"; then
            echo "FAIL: rpcgen refuses $x" >&2
            fail=1
        elif ! c_driver "$x" "$d" "$base"; then
            echo "FAIL: the C driver of $x does not build" >&2
            fail=1
        else
            "$tool" cases "$x" --seed "$seed" --values "$values" >"$d/cases.txt"
            "$d/cdrv" <"$d/cases.txt" >"$d/c.out"
            "$rdrv" "$i" <"$d/cases.txt" >"$d/rust.out"
            echo "== $x: $("$tool" types "$x" | wc -l) types, $(wc -l <"$d/cases.txt") cases (seed $seed)"
            if ! "$tool" judge "$d/cases.txt" "$d/rust.out" "$d/c.out"; then
                echo "FAIL: rpcgen's C and the generated Rust disagree on $x (above)" >&2
                fail=1
            fi
        fi
        i=$((i + 1))
    done
    return $fail
}

if [ ${#files[@]} -gt 0 ]; then
    generic "${files[@]}"
    echo "xdrgen-rpcgen-diff: rpcgen's C and the generated Rust agree on every case of ${files[*]}"
    exit 0
fi
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

# every-construct.x: three random values of every type, as rpcgen's C
# decodes and encodes them, checked in for `cargo test`
# (tests/golden_every.rs decodes and re-encodes them).
cargo build -q -p rpcrdma-xdrgen --features difftest --bin xdrgen-difftool
every=crates/xdrgen-tests/xdr/every-construct.x
rpcgen_c "$every" "$work/every" every_construct
c_driver "$every" "$work/every" every_construct
"$tool" cases "$every" --seed 7 --values 3 --mutations 0 >"$work/every/cases.txt"
"$work/every/cdrv" <"$work/every/cases.txt" >"$work/every/c.out"
paste -d' ' <(cut -d' ' -f2 "$work/every/cases.txt") "$work/every/c.out" \
    | awk '$2 == "ok" { print $1, $3; next } { print "rpcgen refused: " $0 > "/dev/stderr"; bad = 1 } END { exit bad }' \
    >"$work/every.txt"
golden=crates/xdrgen-tests/tests/golden/every.txt
if [ $update -eq 1 ]; then
    cp "$work/every.txt" "$golden"
    echo "golden vectors updated: $golden"
elif ! diff -u "$golden" "$work/every.txt"; then
    echo "FAIL: rpcgen's bytes differ from the checked-in golden vectors ($golden); rerun with --update if every-construct.x changed" >&2
    exit 1
fi
count=$((count + $(wc -l <"$work/every.txt")))

XDRGEN_C_VECTORS="$work/all.txt" XDRGEN_C_NFS_VECTORS="$work/nfs.txt" \
    XDRGEN_C_ZOO_VECTORS="$work/zoo.txt" XDRGEN_C_ODD_VECTORS="$work/odd.txt" \
    XDRGEN_C_CHAIN_VECTORS="$work/chain.txt" \
    cargo test -q -p rpcrdma-xdrgen-tests --test golden --test nfs_golden \
    --test golden_zoo --test golden_odd --test golden_chain --test golden_every

echo "xdrgen-rpcgen-diff: all $count fixed values identical to rpcgen's, both ways"

# Every .x file in the tree but these, which rpcgen's C cannot take:
#   names.x    a union that recurses through a typedef declared after it
#              (rpcgen's C needs the typedef first);
#   prelude.x  a struct named `send`, which libc's send() takes in C.
# (fuzz/seeds/ holds copies and broken files for the fuzzer.)
mapfile -t all < <(git ls-files '*.x' | grep -v '^fuzz/' \
    | grep -v -e '/names\.x$' -e '/prelude\.x$')
generic "${all[@]}"
echo "xdrgen-rpcgen-diff: rpcgen's C and the generated Rust agree on every case of the ${#all[@]} files"
