/*
 * The C half of the NFSv3/MOUNT v3 rpcgen differential test
 * (scripts/xdrgen-rpcgen-diff.sh): fixed values of the types in
 * crates/xdrgen/xdr/nfs3.x and mount3.x, encoded by rpcgen's routines;
 * prints "NAME HEX". The Rust half is crates/xdrgen-tests/tests/nfs_golden.rs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nfs3.h"
#include "mount3.h"

static void emit(const char *name, xdrproc_t proc, void *obj)
{
    static char buf[1 << 16];
    XDR x;
    xdrmem_create(&x, buf, sizeof buf, XDR_ENCODE);
    if (!proc(&x, obj, 0)) {
        fprintf(stderr, "rpcgen's xdr routine failed to encode %s\n", name);
        exit(1);
    }
    unsigned n = xdr_getpos(&x);
    printf("%s ", name);
    for (unsigned i = 0; i < n; i++)
        printf("%02x", (unsigned char)buf[i]);
    printf("\n");
    xdr_destroy(&x);
}

#define EMIT(name, type, obj) emit(name, (xdrproc_t)xdr_##type, (void *)(obj))

static char fh_bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};

static nfs_fh3 fh(void)
{
    nfs_fh3 f;
    f.data.data_len = 8;
    f.data.data_val = fh_bytes;
    return f;
}

static fattr3 attrs(void)
{
    fattr3 a;
    a.type = NF3DIR;
    a.mode = 0755;
    a.nlink = 2;
    a.uid = 1000;
    a.gid = 100;
    a.size = 4096;
    a.used = 8192;
    a.rdev.specdata1 = 0;
    a.rdev.specdata2 = 0;
    a.fsid = 0x1122334455667788ull;
    a.fileid = 42;
    a.atime.seconds = 1;
    a.atime.nseconds = 2;
    a.mtime.seconds = 3;
    a.mtime.nseconds = 4;
    a.ctime.seconds = 5;
    a.ctime.nseconds = 6;
    return a;
}

int main(void)
{
    READ3args ra = {fh(), 4096, 65536};
    EMIT("read3args", READ3args, &ra);

    READ3res rr;
    rr.status = NFS3_OK;
    rr.READ3res_u.resok.file_attributes.attributes_follow = TRUE;
    rr.READ3res_u.resok.file_attributes.post_op_attr_u.attributes = attrs();
    rr.READ3res_u.resok.count = 5;
    rr.READ3res_u.resok.eof = TRUE;
    rr.READ3res_u.resok.data.data_len = 5;
    rr.READ3res_u.resok.data.data_val = "hello";
    EMIT("read3res_ok", READ3res, &rr);
    rr.status = NFS3ERR_STALE;
    rr.READ3res_u.resfail.file_attributes.attributes_follow = FALSE;
    EMIT("read3res_stale", READ3res, &rr);

    WRITE3args wa = {fh(), 0, 3, FILE_SYNC, {3, "abc"}};
    EMIT("write3args", WRITE3args, &wa);

    SETATTR3args sa;
    sa.object = fh();
    sa.new_attributes.mode.set_it = TRUE;
    sa.new_attributes.mode.set_mode3_u.mode = 0644;
    sa.new_attributes.uid.set_it = FALSE;
    sa.new_attributes.gid.set_it = TRUE;
    sa.new_attributes.gid.set_gid3_u.gid = 7;
    sa.new_attributes.size.set_it = FALSE;
    sa.new_attributes.atime.set_it = SET_TO_SERVER_TIME;
    sa.new_attributes.mtime.set_it = SET_TO_CLIENT_TIME;
    sa.new_attributes.mtime.set_mtime_u.mtime.seconds = 99;
    sa.new_attributes.mtime.set_mtime_u.mtime.nseconds = 1;
    sa.guard.check = TRUE;
    sa.guard.sattrguard3_u.obj_ctime.seconds = 5;
    sa.guard.sattrguard3_u.obj_ctime.nseconds = 6;
    EMIT("setattr3args", SETATTR3args, &sa);

    CREATE3args ca;
    ca.where.dir = fh();
    ca.where.name = "file.txt";
    ca.how.mode = EXCLUSIVE;
    memcpy(ca.how.createhow3_u.verf, "verifier", 8);
    EMIT("create3args_exclusive", CREATE3args, &ca);
    ca.how.mode = GUARDED;
    memset(&ca.how.createhow3_u.obj_attributes, 0, sizeof ca.how.createhow3_u.obj_attributes);
    EMIT("create3args_guarded", CREATE3args, &ca);

    MKNOD3args mk;
    mk.where.dir = fh();
    mk.where.name = "dev";
    mk.what.type = NF3CHR;
    memset(&mk.what.mknoddata3_u.device, 0, sizeof mk.what.mknoddata3_u.device);
    mk.what.mknoddata3_u.device.spec.specdata1 = 4;
    mk.what.mknoddata3_u.device.spec.specdata2 = 64;
    EMIT("mknod3args_chr", MKNOD3args, &mk);
    mk.what.type = NF3REG;
    EMIT("mknod3args_reg", MKNOD3args, &mk);

    entry3 e2 = {43, "b", 2, NULL}, e1 = {42, "a", 1, &e2};
    READDIR3res rd;
    rd.status = NFS3_OK;
    rd.READDIR3res_u.resok.dir_attributes.attributes_follow = FALSE;
    memcpy(rd.READDIR3res_u.resok.cookieverf, "cookieve", 8);
    rd.READDIR3res_u.resok.reply.entries = &e1;
    rd.READDIR3res_u.resok.reply.eof = TRUE;
    EMIT("readdir3res_ok", READDIR3res, &rd);

    FSINFO3res fi;
    fi.status = NFS3_OK;
    fi.FSINFO3res_u.resok.obj_attributes.attributes_follow = TRUE;
    fi.FSINFO3res_u.resok.obj_attributes.post_op_attr_u.attributes = attrs();
    fi.FSINFO3res_u.resok.rtmax = 1048576;
    fi.FSINFO3res_u.resok.rtpref = 1048576;
    fi.FSINFO3res_u.resok.rtmult = 4096;
    fi.FSINFO3res_u.resok.wtmax = 1048576;
    fi.FSINFO3res_u.resok.wtpref = 1048576;
    fi.FSINFO3res_u.resok.wtmult = 4096;
    fi.FSINFO3res_u.resok.dtpref = 4096;
    fi.FSINFO3res_u.resok.maxfilesize = 0x7fffffffffffffffull;
    fi.FSINFO3res_u.resok.time_delta.seconds = 0;
    fi.FSINFO3res_u.resok.time_delta.nseconds = 1;
    fi.FSINFO3res_u.resok.properties = FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME;
    EMIT("fsinfo3res_ok", FSINFO3res, &fi);

    mountres3 mr;
    mr.fhs_status = MNT3_OK;
    mr.mountres3_u.mountinfo.fhandle.fhandle3_len = 8;
    mr.mountres3_u.mountinfo.fhandle.fhandle3_val = fh_bytes;
    int flavors[2] = {1, 390003};
    mr.mountres3_u.mountinfo.auth_flavors.auth_flavors_len = 2;
    mr.mountres3_u.mountinfo.auth_flavors.auth_flavors_val = flavors;
    EMIT("mountres3_ok", mountres3, &mr);

    groupnode g2 = {"b.example", NULL}, g1 = {"a.example", &g2};
    exportnode x2 = {"/srv", NULL, NULL}, x1 = {"/export", &g1, &x2};
    exports ex = &x1;
    EMIT("exports", exports, &ex);
    return 0;
}
