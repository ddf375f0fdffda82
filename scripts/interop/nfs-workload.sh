#!/bin/sh
# nfs-workload.sh - the data-integrity workload the Linux kernel NFS client
# runs against an NFSv3 server. Runs INSIDE the QEMU guest (busybox sh), in
# run-guest.sh's exec mode; nfs-kernel-client.sh on the host sets the
# variables below in front of a copy of this file.
#
#   SERVER     the server's address (10.0.2.100 = the host)
#   VERS       NFS version: 3 (default), 4.1 or 4.2 (NFSv4 needs no MOUNT
#              port and no nolock; it adds byte-range lock checks)
#   NFS_PORT   NFS port (RPC-over-RDMA or TCP)
#   MNT_PORT   MOUNT v3 port (TCP)
#   PROTO      rdma | tcp
#   RUN        name of this run: its directory on the server is wl-RUN (default: PROTO)
#   EXPORT     the path to mount (default /)
#   BIG_MIB    size of the big file (default 64)
#   NSMALL     small files created, listed, stat'ed, renamed, removed (1000)
#   NDIR       entries of the large directory (5000)
#   NRANDOM    random read/write/truncate operations checked (300)
#
# Prints one line per check, "WL-PASS name" or "WL-FAIL name (detail)",
# and keeps them (with the big file's SHA-256, for the host to compare) in
# /opt/add/out/results.txt. Exit status 0 only if every check passed.
EXPORT=${EXPORT:-/}
BIG_MIB=${BIG_MIB:-64}
NSMALL=${NSMALL:-1000}
NDIR=${NDIR:-5000}
NRANDOM=${NRANDOM:-300}
M=/mnt/nfs
OUT=/opt/add/out/results.txt
mkdir -p /opt/add/out "$M"
: >"$OUT"
FAILS=0
T0=$(date +%s)

note() { echo "$*" | tee -a "$OUT"; }
pass() { note "WL-PASS $1 ($(($(date +%s) - T0)) s)"; }
fail() { note "WL-FAIL $1${2:+ ($2)}"; FAILS=$((FAILS + 1)); }
# check NAME COMMAND...: passes if the command succeeds.
check() { n=$1; shift; if "$@"; then pass "$n"; else fail "$n"; fi; }
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

VERS=${VERS:-3}
if [ "$VERS" = 3 ]; then
    OPTS="vers=3,proto=$PROTO,port=$NFS_PORT,nolock,noacl,mountport=$MNT_PORT,mountproto=tcp"
else
    OPTS="vers=$VERS,proto=$PROTO,port=$NFS_PORT"
fi
note "WL-INFO mount -t nfs -o $OPTS $SERVER:$EXPORT $M"
if ! mount -t nfs -o "$OPTS" "$SERVER:$EXPORT" "$M"; then
    fail "mount $PROTO"
    exit 1
fi
pass "mount $PROTO"
grep " $M " /proc/mounts | sed 's/^/WL-INFO /' | tee -a "$OUT"

D=$M/wl-${RUN:-$PROTO}
rm -rf "$D"
check "mkdir the work directory" mkdir "$D"

# 1. A big file from /dev/urandom: hashed on the way out, read back after
#    dropping the guest's caches, hashed again; the host hashes its copy.
t=$(date +%s)
src=$(dd if=/dev/urandom bs=1M count="$BIG_MIB" 2>/dev/null | tee "$D/big" | sha256sum | cut -d' ' -f1)
sync
w=$(($(date +%s) - t))
drop_caches
t=$(date +%s)
back=$(sha256sum "$D/big" | cut -d' ' -f1)
r=$(($(date +%s) - t))
size=$(stat -c %s "$D/big")
note "WL-BIG-SHA256 $src"
note "WL-INFO big file: ${BIG_MIB} MiB written in ${w} s, read back in ${r} s"
if [ "$src" = "$back" ] && [ "$size" = $((BIG_MIB * 1048576)) ]; then
    pass "big file: ${BIG_MIB} MiB written, read back identical after drop_caches"
else
    fail "big file" "size $size, wrote $src, read $back"
fi

# 2. Small files: create, list, stat, rename, remove.
S=$D/small
mkdir "$S"
i=0
while [ $i -lt "$NSMALL" ]; do
    echo "small file $i" >"$S/f$i"
    i=$((i + 1))
done
n=$(ls "$S" | wc -l)
[ "$n" = "$NSMALL" ] && pass "small files: $NSMALL created and listed" || fail "small files listed" "$n of $NSMALL"
bad=0
i=0
while [ $i -lt "$NSMALL" ]; do
    s=$(stat -c %s "$S/f$i") || bad=$((bad + 1))
    [ "$s" = "$(printf 'small file %d\n' $i | wc -c)" ] || bad=$((bad + 1))
    mv "$S/f$i" "$S/g$i" || bad=$((bad + 1))
    i=$((i + 1))
done
[ $bad = 0 ] && pass "small files: stat'ed and renamed" || fail "small files stat/rename" "$bad errors"
drop_caches
bad=0
i=0
while [ $i -lt "$NSMALL" ]; do
    [ "$(cat "$S/g$i")" = "small file $i" ] || bad=$((bad + 1))
    [ -e "$S/f$i" ] && bad=$((bad + 1))
    rm "$S/g$i" || bad=$((bad + 1))
    i=$((i + 1))
done
n=$(ls -A "$S" | wc -l)
[ $bad = 0 ] && [ "$n" = 0 ] && pass "small files: contents after rename, all removed" || fail "small files remove" "$bad errors, $n left"
check "rmdir of the emptied directory" rmdir "$S"

# 3. A large directory, listed completely from the server.
L=$D/large
mkdir "$L"
seq 1 "$NDIR" | sed 's/^/entry-with-a-name-of-some-length-/' | (cd "$L" && xargs touch)
drop_caches
n=$(ls -a "$L" | wc -l)
drop_caches
nl=$(ls -l "$L" | grep -c '^-')
if [ "$n" = $((NDIR + 2)) ] && [ "$nl" = "$NDIR" ]; then
    pass "large directory: $NDIR entries listed (ls -a and ls -l)"
else
    fail "large directory" "ls -a $n (want $((NDIR + 2))), ls -l $nl"
fi
missing=$(seq 1 "$NDIR" | sed 's/^/entry-with-a-name-of-some-length-/' | while read -r x; do [ -e "$L/$x" ] || echo "$x"; done | wc -l)
[ "$missing" = 0 ] && pass "large directory: every name found" || fail "large directory names" "$missing missing"
# (The directory stays: removing 5000 entries one REMOVE at a time takes
# minutes in the emulated guest and tests nothing the small files do not.)

# 4. mkdir/rmdir.
check "mkdir -p a/b/c" mkdir -p "$D/a/b/c"
check "rmdir of a non-empty directory fails" sh -c "! rmdir '$D/a' 2>/dev/null"
check "rmdir c b a" sh -c "rmdir '$D/a/b/c' && rmdir '$D/a/b' && rmdir '$D/a' && [ ! -e '$D/a' ]"

# 5. symlink/readlink.
echo target-data >"$D/target"
ln -s target "$D/rel-link"
ln -s /etc/passwd "$D/abs-link"
check "readlink of a relative link" [ "$(readlink "$D/rel-link")" = target ]
check "readlink of an absolute link" [ "$(readlink "$D/abs-link")" = /etc/passwd ]
check "read through a link" [ "$(cat "$D/rel-link")" = target-data ]
check "a link is a link (stat)" [ "$(stat -c %F "$D/rel-link")" = "symbolic link" ]
long=$(printf 'x%.0s' $(seq 1 900))
ln -s "$long" "$D/long-link"
check "readlink of a 900-byte target" [ "$(readlink "$D/long-link")" = "$long" ]

# 6. Hard links.
echo linked >"$D/h1"
ln "$D/h1" "$D/h2"
check "hard link count 2" [ "$(stat -c %h "$D/h1")" = 2 ]
rm "$D/h1"
check "data kept through the second name" sh -c "[ \"\$(cat '$D/h2')\" = linked ] && [ \"\$(stat -c %h '$D/h2')\" = 1 ]"

# 7. truncate and append.
dd if=/dev/urandom of="$D/t" bs=1k count=100 2>/dev/null
truncate -s 1000 "$D/t"
check "truncate down" [ "$(stat -c %s "$D/t")" = 1000 ]
truncate -s 5000 "$D/t"
drop_caches
z=$(dd if="$D/t" bs=1 skip=1000 count=4000 2>/dev/null | tr -d '\000' | wc -c)
check "truncate up reads zeros" [ "$(stat -c %s "$D/t")" = 5000 ] && [ "$z" = 0 ]
: >"$D/app"
for k in 1 2 3 4 5; do echo "line $k" >>"$D/app"; done
drop_caches
check "append" [ "$(cat "$D/app" | tr '\n' ' ')" = "line 1 line 2 line 3 line 4 line 5 " ]

# 8. Concurrent writers to different files.
for k in 1 2 3 4; do
    (dd if=/dev/urandom bs=64k count=64 2>/dev/null | tee "$D/c$k" | sha256sum | cut -d' ' -f1 >"/tmp/c$k.sum") &
done
wait
drop_caches
bad=0
for k in 1 2 3 4; do
    [ "$(sha256sum "$D/c$k" | cut -d' ' -f1)" = "$(cat /tmp/c$k.sum)" ] || bad=$((bad + 1))
done
[ $bad = 0 ] && pass "4 concurrent writers, 4 MiB each, identical after drop_caches" || fail "concurrent writers" "$bad differ"

# 9. Random writes, reads and truncates at odd offsets against a local copy
#    (fsx style).
R=$D/random
: >"$R"
: >/tmp/ref
i=0
bad=0
while [ $i -lt "$NRANDOM" ]; do
    op=$((RANDOM % 10))
    off=$((RANDOM * 7 % 300000))
    len=$((RANDOM % 9000 + 1))
    if [ $op -lt 6 ]; then
        dd if=/dev/urandom of=/tmp/chunk bs="$len" count=1 2>/dev/null
        dd if=/tmp/chunk of="$R" bs=1 seek="$off" conv=notrunc 2>/dev/null || bad=$((bad + 1))
        dd if=/tmp/chunk of=/tmp/ref bs=1 seek="$off" conv=notrunc 2>/dev/null
    elif [ $op -lt 8 ]; then
        a=$(dd if="$R" bs=1 skip="$off" count="$len" 2>/dev/null | sha256sum)
        b=$(dd if=/tmp/ref bs=1 skip="$off" count="$len" 2>/dev/null | sha256sum)
        [ "$a" = "$b" ] || bad=$((bad + 1))
    else
        truncate -s "$off" "$R" || bad=$((bad + 1))
        truncate -s "$off" /tmp/ref
    fi
    [ $((i % 50)) = 49 ] && drop_caches
    i=$((i + 1))
done
drop_caches
[ $bad = 0 ] && cmp -s "$R" /tmp/ref && pass "$NRANDOM random writes/reads/truncates match a local copy" ||
    fail "random operations" "$bad mismatches; final compare $(cmp "$R" /tmp/ref 2>&1 | head -1)"

# 10. Attributes and renames over existing names.
echo one >"$D/r1"
echo two >"$D/r2"
chmod 640 "$D/r1"
check "chmod" [ "$(stat -c %a "$D/r1")" = 640 ]
touch -d '2001-02-03 04:05:06' "$D/r1"
check "set mtime" [ "$(stat -c %Y "$D/r1")" = "$(date -d '2001-02-03 04:05:06' +%s)" ]
mv "$D/r1" "$D/r2"
drop_caches
check "rename over an existing file" sh -c "[ \"\$(cat '$D/r2')\" = one ] && [ ! -e '$D/r1' ]"
check "exclusive create refuses an existing name" sh -c "! (set -C; echo x >'$D/r2') 2>/dev/null"

# 11. NFSv4: fcntl byte-range and flock whole-file locks between two
#     processes (nfs-locktest; the kernel client sends LOCK, LOCKT, LOCKU).
if [ "$VERS" != 3 ]; then
    echo lock >"$D/lockf"
    if command -v nfs-locktest >/dev/null 2>&1; then
        nfs-locktest "$D/lockf" >/tmp/locktest.txt 2>&1
        rc=$?
        sed 's/^/WL-INFO /' /tmp/locktest.txt | grep -v 'LOCK-OK' | tee -a "$OUT"
        n=$(grep -c '^LOCK-OK' /tmp/locktest.txt)
        [ $rc = 0 ] && pass "fcntl and flock locks between two processes ($n checks)" || fail "locks between two processes" "exit $rc"
    else
        fail "locks between two processes" "nfs-locktest is not in the guest"
    fi
    rm -f "$D/lockf"
fi

# 12. Clean up (except the big file, which the host compares) and unmount.
rm -rf "$D/c1" "$D/c2" "$D/c3" "$D/c4" "$D/random" "$D/t" "$D/app" "$D/h2" "$D/r2" \
    "$D/target" "$D/rel-link" "$D/abs-link" "$D/long-link"
left=$(ls -A "$D" | tr '\n' ' ')
[ "$left" = "big large " ] && pass "clean-up leaves only the big file and the large directory" || fail "clean-up" "left: $left"
cd /
if umount "$M"; then pass "unmount"; else fail "unmount"; fi
note "WL-DONE $FAILS failed in $(($(date +%s) - T0)) s"
[ $FAILS = 0 ]
