#!/bin/sh
# nfs-fsx-guest.sh - runs INSIDE the QEMU guest (busybox sh, run-guest.sh's
# exec mode): mounts the NFSv3 server on the host with the kernel client and
# runs nfs-fsx (crates/nfs-fsx/, --add'ed to /opt/add) on the
# mount: seeded random operations checked against a model, the page cache
# dropped before each full check. nfs-kernel-client.sh on the host sets the
# variables below in front of a copy of this file.
#
#   SERVER, NFS_PORT, MNT_PORT, PROTO   as for nfs-workload.sh
#   RUN        name of this run: its directory on the server (fsx-rdma, fsx-tcp)
#   SEED OPS PROCS MAX_SIZE VERIFY_EVERY   nfs-fsx run options
#   PAUSE_AT   nfs-fsx --pause-at (the host restarts the server there)
#   FSX_ARGS   more nfs-fsx options (e.g. --owner-rw when root is squashed)
#   MOUNT_OPTS more mount options (default none)
#   VERS       NFS version: 3 (default), 4.1 or 4.2
#
# Prints the exerciser's FSX-* lines, "FSX-MOUNT ok|fail" and
# "FSX-UMOUNT ok|fail"; leaves the model's manifest in
# /opt/add/out/manifest.txt for the host to compare with the export.
# Exit status 0 only if the mount, every worker's checks and the unmount
# passed.
M=/mnt/nfs
mkdir -p /opt/add/out "$M"
if [ "${VERS:-3}" = 3 ]; then
    OPTS="vers=3,proto=$PROTO,port=$NFS_PORT,nolock,noacl,mountport=$MNT_PORT,mountproto=tcp${MOUNT_OPTS:+,$MOUNT_OPTS}"
else
    OPTS="vers=$VERS,proto=$PROTO,port=$NFS_PORT${MOUNT_OPTS:+,$MOUNT_OPTS}"
fi
echo "FSX-INFO mount -t nfs -o $OPTS $SERVER:/ $M"
if ! mount -t nfs -o "$OPTS" "$SERVER:/" "$M"; then
    echo "FSX-MOUNT fail"
    exit 1
fi
echo "FSX-MOUNT ok"
grep " $M " /proc/mounts | sed 's/^/FSX-INFO /'
T0=$(date +%s)
/opt/add/nfs-fsx run "$M/$RUN" --seed "${SEED:-1}" --ops "${OPS:-300}" --procs "${PROCS:-2}" \
    --max-size "${MAX_SIZE:-2560K}" --verify-every "${VERIFY_EVERY:-100}" --drop-caches yes \
    --manifest /opt/add/out/manifest.txt ${PAUSE_AT:+--pause-at "$PAUSE_AT"} ${FSX_ARGS:-}
rc=$?
echo "FSX-INFO nfs-fsx exit $rc in $(($(date +%s) - T0)) s"
cd /
if umount "$M"; then echo "FSX-UMOUNT ok"; else echo "FSX-UMOUNT fail"; rc=1; fi
exit $rc
