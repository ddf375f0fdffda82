#!/usr/bin/env bash
# nfs4-kernel-client.sh - NFSv4.1 and NFSv4.2 served by `rpcrdma nfs serve`
# to the Linux kernel client in the QEMU guest (issue 34 item 6), through
# nfs-kernel-client.sh with IOP_NFS_VERS set: the data-integrity workload
# (big file with SHA-256 on both sides, small files, a large directory,
# links, symlinks, truncate, append, concurrent writers, random I/O, and
# fcntl and flock locks between two processes: nfs-locktest), nfs-fsx with
# the server restarted in the middle (the client reclaims its opens and
# locks in the grace period; the export must hold what the model says),
# and tshark on a capture of the short RDMA run.
#
# By default (CI) the short runs: NFSv4.1 over RDMA (root squashed, its
# capture checked by tshark) and over TCP, nfs-fsx over RDMA with the
# restart, then NFSv4.2's short run over RDMA. IOP_NFS4_FULL=1 runs the
# full ones: NFSv4.1 rdma, tcp, rdma-short, fsx-rdma, fsx-tcp, then NFSv4.2
# rdma-short and fsx-rdma. Each run's environment is nfs-kernel-client.sh's.
#
# Usage: scripts/interop/nfs4-kernel-client.sh   (root; Debian 12 x86_64)
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ "${IOP_NFS4_FULL:-0}" = 1 ]; then
    RUNS41=${IOP_NFS4_RUNS41:-rdma tcp rdma-short fsx-rdma fsx-tcp}
    RUNS42=${IOP_NFS4_RUNS42:-rdma-short fsx-rdma}
else
    RUNS41=${IOP_NFS4_RUNS41:-rdma-short tcp-short fsx-rdma}
    RUNS42=${IOP_NFS4_RUNS42:-rdma-short}
fi
WORK=${IOP_WORK:-}
rc=0
for vers in 4.1 4.2; do
    if [ "$vers" = 4.1 ]; then runs=$RUNS41; else runs=$RUNS42; fi
    [ -n "$runs" ] || continue
    IOP_WORK=${WORK:+$WORK/nfs$vers} IOP_NFS_VERS=$vers IOP_NFS_PROTOS=$runs \
        "$HERE/nfs-kernel-client.sh" || rc=1
    echo
done
exit $rc
