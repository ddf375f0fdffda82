/*
 * shim.c - the C side of rpcrdma-rdmacore's FFI edge (built only with the
 * `rdma-core` feature).
 *
 * libibverbs keeps its fast-path calls (ibv_post_send, ibv_post_recv,
 * ibv_poll_cq, ibv_req_notify_cq) and ibv_reg_mr / ibv_query_port as static
 * inline functions or macros in <infiniband/verbs.h>: they have no symbol
 * Rust could link to. This file gives each a real symbol, and converts
 * between the headers' structures and small flat structures of our own
 * (rs_*), so the Rust side never depends on the layout of an rdma-core
 * structure: the compiler checks these against the installed headers.
 *
 * Every function returns 0 or a positive count on success and a negative
 * errno value on failure, unless it says otherwise.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* The Rust side maps these numbers (ABI-stable enums) itself. */
_Static_assert(IBV_WC_SUCCESS == 0, "ibv_wc_status");
_Static_assert(IBV_WC_LOC_LEN_ERR == 1, "ibv_wc_status");
_Static_assert(IBV_WC_LOC_PROT_ERR == 4, "ibv_wc_status");
_Static_assert(IBV_WC_WR_FLUSH_ERR == 5, "ibv_wc_status");
_Static_assert(IBV_WC_REM_INV_REQ_ERR == 9, "ibv_wc_status");
_Static_assert(IBV_WC_REM_ACCESS_ERR == 10, "ibv_wc_status");
_Static_assert(IBV_WC_RETRY_EXC_ERR == 12, "ibv_wc_status");
_Static_assert(IBV_WC_RNR_RETRY_EXC_ERR == 13, "ibv_wc_status");
_Static_assert(IBV_WC_GENERAL_ERR == 21, "ibv_wc_status");
_Static_assert(RDMA_CM_EVENT_ADDR_RESOLVED == 0, "rdma_cm_event_type");
_Static_assert(RDMA_CM_EVENT_CONNECT_REQUEST == 4, "rdma_cm_event_type");
_Static_assert(RDMA_CM_EVENT_REJECTED == 8, "rdma_cm_event_type");
_Static_assert(RDMA_CM_EVENT_ESTABLISHED == 9, "rdma_cm_event_type");
_Static_assert(RDMA_CM_EVENT_DISCONNECTED == 10, "rdma_cm_event_type");
_Static_assert(RDMA_CM_EVENT_DEVICE_REMOVAL == 11, "rdma_cm_event_type");
_Static_assert(RDMA_CM_EVENT_TIMEWAIT_EXIT == 15, "rdma_cm_event_type");
_Static_assert(IBV_TRANSPORT_IB == 0 && IBV_TRANSPORT_IWARP == 1, "ibv_transport_type");
_Static_assert(IBV_LINK_LAYER_INFINIBAND == 1 && IBV_LINK_LAYER_ETHERNET == 2, "link layer");

/* ---------------------------------------------------------------- device */

struct rs_dev_attr {
    uint64_t max_mr_size;
    uint64_t device_cap_flags;
    uint32_t max_qp_wr;
    uint32_t max_sge;
    uint32_t max_cqe;
    uint32_t max_mr;
    uint32_t max_qp_rd_atom;
    uint32_t max_qp_init_rd_atom;
    uint32_t max_mw;
    uint32_t transport;      /* IBV_TRANSPORT_* */
    uint32_t phys_port_cnt;
    uint32_t vendor_id;
    uint32_t vendor_part_id;
    uint32_t mw_type_2;      /* IBV_DEVICE_MEM_WINDOW_TYPE_2A or _2B */
    char fw_ver[64];
};

int rs_query_device(struct ibv_context *ctx, struct rs_dev_attr *out)
{
    struct ibv_device_attr a;
    int rc;

    memset(out, 0, sizeof(*out));
    rc = ibv_query_device(ctx, &a);
    if (rc)
        return rc > 0 ? -rc : rc;
    out->max_mr_size = a.max_mr_size;
    out->device_cap_flags = a.device_cap_flags;
    out->max_qp_wr = a.max_qp_wr > 0 ? (uint32_t)a.max_qp_wr : 0;
    out->max_sge = a.max_sge > 0 ? (uint32_t)a.max_sge : 0;
    out->max_cqe = a.max_cqe > 0 ? (uint32_t)a.max_cqe : 0;
    out->max_mr = a.max_mr > 0 ? (uint32_t)a.max_mr : 0;
    out->max_qp_rd_atom = a.max_qp_rd_atom > 0 ? (uint32_t)a.max_qp_rd_atom : 0;
    out->max_qp_init_rd_atom = a.max_qp_init_rd_atom > 0 ? (uint32_t)a.max_qp_init_rd_atom : 0;
    out->max_mw = a.max_mw > 0 ? (uint32_t)a.max_mw : 0;
    out->transport = (uint32_t)ctx->device->transport_type;
    out->phys_port_cnt = a.phys_port_cnt;
    out->vendor_id = a.vendor_id;
    out->vendor_part_id = a.vendor_part_id;
    out->mw_type_2 = (a.device_cap_flags &
                      (IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B)) != 0;
    memcpy(out->fw_ver, a.fw_ver, sizeof(out->fw_ver) < sizeof(a.fw_ver) ? sizeof(out->fw_ver) : sizeof(a.fw_ver));
    out->fw_ver[sizeof(out->fw_ver) - 1] = 0;
    return 0;
}

const char *rs_device_name(struct ibv_context *ctx)
{
    return ibv_get_device_name(ctx->device);
}

struct rs_port_attr {
    uint32_t state;          /* IBV_PORT_* (4 = active) */
    uint32_t active_mtu;     /* IBV_MTU_* (1 = 256 ... 5 = 4096) */
    uint32_t link_layer;     /* IBV_LINK_LAYER_* */
    uint32_t gid_tbl_len;
};

int rs_query_port(struct ibv_context *ctx, uint8_t port, struct rs_port_attr *out)
{
    struct ibv_port_attr a;
    int rc;

    memset(out, 0, sizeof(*out));
    memset(&a, 0, sizeof(a));
    rc = ibv_query_port(ctx, port, &a);
    if (rc)
        return rc > 0 ? -rc : rc;
    out->state = a.state;
    out->active_mtu = a.active_mtu;
    out->link_layer = a.link_layer;
    out->gid_tbl_len = a.gid_tbl_len > 0 ? (uint32_t)a.gid_tbl_len : 0;
    return 0;
}

/* ---------------------------------------------------------------- memory */

/* Our access bits (rpcrdma_verbs::Access): 1 local write, 2 remote write,
 * 4 remote read. */
static int rs_access(uint32_t bits)
{
    int a = 0;
    if (bits & 1)
        a |= IBV_ACCESS_LOCAL_WRITE;
    if (bits & 2)
        a |= IBV_ACCESS_REMOTE_WRITE;
    if (bits & 4)
        a |= IBV_ACCESS_REMOTE_READ;
    return a;
}

/* Returns the region, or NULL with errno set. */
struct ibv_mr *rs_reg_mr(struct ibv_pd *pd, void *addr, size_t len, uint32_t access,
                         uint32_t *lkey, uint32_t *rkey)
{
    struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, rs_access(access));
    if (mr) {
        *lkey = mr->lkey;
        *rkey = mr->rkey;
    }
    return mr;
}

/* ------------------------------------------------------------ completions */

int rs_comp_channel_fd(struct ibv_comp_channel *ch)
{
    return ch->fd;
}

int rs_req_notify_cq(struct ibv_cq *cq)
{
    int rc = ibv_req_notify_cq(cq, 0);
    return rc > 0 ? -rc : rc;
}

struct rs_wc {
    uint64_t wr_id;
    uint32_t status;         /* enum ibv_wc_status */
    uint32_t opcode;         /* enum ibv_wc_opcode */
    uint32_t vendor_err;
    uint32_t byte_len;
    uint32_t qp_num;
    uint32_t with_inv;       /* IBV_WC_WITH_INV */
    uint32_t invalidated_rkey;
    uint32_t pad;
};

/* Polls up to n (at most 32) completions. */
int rs_poll_cq(struct ibv_cq *cq, int n, struct rs_wc *out)
{
    struct ibv_wc wc[32];
    int got, i;

    if (n > 32)
        n = 32;
    got = ibv_poll_cq(cq, n, wc);
    if (got < 0)
        return got;
    for (i = 0; i < got; i++) {
        out[i].wr_id = wc[i].wr_id;
        out[i].status = wc[i].status;
        out[i].opcode = wc[i].opcode;
        out[i].vendor_err = wc[i].vendor_err;
        out[i].byte_len = wc[i].byte_len;
        out[i].qp_num = wc[i].qp_num;
        out[i].with_inv = (wc[i].wc_flags & IBV_WC_WITH_INV) != 0;
        out[i].invalidated_rkey = out[i].with_inv ? wc[i].invalidated_rkey : 0;
        out[i].pad = 0;
    }
    return got;
}

/* ------------------------------------------------------------ work requests */

struct rs_sge {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
};

/* Operations. */
#define RS_SEND 0
#define RS_SEND_INV 1
#define RS_WRITE 2
#define RS_READ 3
/* Flags. */
#define RS_SIGNALED 1
#define RS_SOLICITED 2
#define RS_INLINE 4

struct rs_send {
    uint64_t wr_id;
    uint64_t remote_addr;
    uint32_t op;
    uint32_t flags;
    uint32_t num_sge;
    uint32_t rkey;           /* Write/Read: the remote key */
    uint32_t invalidate;     /* Send with Invalidate: the key */
    uint32_t pad;
};

/* Fills `wr` from `s` with its gather list at `sg` (the caller's copy of
 * `sges`). Returns 0, or -EINVAL for an unknown operation. */
static int rs_fill_send(struct ibv_send_wr *wr, struct ibv_sge *sg, const struct rs_send *s,
                        const struct rs_sge *sges)
{
    uint32_t i;

    for (i = 0; i < s->num_sge; i++) {
        sg[i].addr = sges[i].addr;
        sg[i].length = sges[i].length;
        sg[i].lkey = sges[i].lkey;
    }
    memset(wr, 0, sizeof(*wr));
    wr->wr_id = s->wr_id;
    wr->sg_list = s->num_sge ? sg : NULL;
    wr->num_sge = (int)s->num_sge;
    switch (s->op) {
    case RS_SEND:
        wr->opcode = IBV_WR_SEND;
        break;
    case RS_SEND_INV:
        wr->opcode = IBV_WR_SEND_WITH_INV;
        wr->invalidate_rkey = s->invalidate;
        break;
    case RS_WRITE:
        wr->opcode = IBV_WR_RDMA_WRITE;
        wr->wr.rdma.remote_addr = s->remote_addr;
        wr->wr.rdma.rkey = s->rkey;
        break;
    case RS_READ:
        wr->opcode = IBV_WR_RDMA_READ;
        wr->wr.rdma.remote_addr = s->remote_addr;
        wr->wr.rdma.rkey = s->rkey;
        break;
    default:
        return -EINVAL;
    }
    if (s->flags & RS_SIGNALED)
        wr->send_flags |= IBV_SEND_SIGNALED;
    if (s->flags & RS_SOLICITED)
        wr->send_flags |= IBV_SEND_SOLICITED;
    if (s->flags & RS_INLINE)
        wr->send_flags |= IBV_SEND_INLINE;
    return 0;
}

int rs_post_send(struct ibv_qp *qp, const struct rs_send *s, const struct rs_sge *sges)
{
    struct ibv_sge sg[32];
    struct ibv_send_wr wr, *bad = NULL;
    int rc;

    if (s->num_sge > 32)
        return -EINVAL;
    rc = rs_fill_send(&wr, sg, s, sges);
    if (rc)
        return rc;
    rc = ibv_post_send(qp, &wr, &bad);
    return rc > 0 ? -rc : rc;
}

/* At most this many requests, and this many gather elements in all, per
 * rs_post_send_list (the caller splits longer chains). */
#define RS_LIST_MAX 16
#define RS_LIST_SGES 64

/* Posts `n` requests as one linked list (one ibv_post_send: one doorbell).
 * Their gather lists follow each other in `sges`. `*posted` is set to how
 * many the device took: all of them when 0 is returned; otherwise those
 * before the one it refused (ibv_post_send's bad_wr), whose error is
 * returned (negative errno). */
int rs_post_send_list(struct ibv_qp *qp, const struct rs_send *s, uint32_t n,
                      const struct rs_sge *sges, uint32_t *posted)
{
    struct ibv_sge sg[RS_LIST_SGES];
    struct ibv_send_wr wr[RS_LIST_MAX], *bad = NULL;
    uint32_t i, at = 0;
    int rc;

    *posted = 0;
    if (n == 0)
        return 0;
    if (n > RS_LIST_MAX)
        return -EINVAL;
    for (i = 0; i < n; i++) {
        if (s[i].num_sge > RS_LIST_SGES - at)
            return -EINVAL;
        rc = rs_fill_send(&wr[i], &sg[at], &s[i], &sges[at]);
        if (rc)
            return rc;
        wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
        at += s[i].num_sge;
    }
    rc = ibv_post_send(qp, wr, &bad);
    if (rc == 0) {
        *posted = n;
        return 0;
    }
    /* The requests before bad_wr were posted (ibv_post_send(3)). */
    for (i = 0; i < n && bad != &wr[i]; i++)
        ;
    *posted = i < n ? i : 0;
    return rc > 0 ? -rc : rc;
}

int rs_post_recv(struct ibv_qp *qp, uint64_t wr_id, const struct rs_sge *sge)
{
    struct ibv_sge sg;
    struct ibv_recv_wr wr, *bad = NULL;
    int rc;

    sg.addr = sge->addr;
    sg.length = sge->length;
    sg.lkey = sge->lkey;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = wr_id;
    wr.sg_list = &sg;
    wr.num_sge = 1;
    rc = ibv_post_recv(qp, &wr, &bad);
    return rc > 0 ? -rc : rc;
}

/* ------------------------------------------------------- connection manager */

int rs_cm_channel_fd(struct rdma_event_channel *ch)
{
    return ch->fd;
}

struct ibv_context *rs_id_verbs(struct rdma_cm_id *id)
{
    return id->verbs;
}

struct ibv_qp *rs_id_qp(struct rdma_cm_id *id)
{
    return id->qp;
}

/* Copies the local and peer addresses of an id (zeroed if unknown). */
void rs_id_addrs(struct rdma_cm_id *id, struct sockaddr_storage *local,
                 struct sockaddr_storage *peer)
{
    struct sockaddr *l = rdma_get_local_addr(id);
    struct sockaddr *p = rdma_get_peer_addr(id);
    size_t n;

    memset(local, 0, sizeof(*local));
    memset(peer, 0, sizeof(*peer));
    if (l) {
        n = l->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
        memcpy(local, l, n);
    }
    if (p) {
        n = p->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
        memcpy(peer, p, n);
    }
}

/* The port the id is bound to (1-based; 0 if not bound). */
uint32_t rs_id_port(struct rdma_cm_id *id)
{
    return id->port_num;
}

struct rs_qp_caps {
    uint32_t max_send_wr;
    uint32_t max_recv_wr;
    uint32_t max_send_sge;
    uint32_t max_recv_sge;
    uint32_t max_inline_data;
    uint32_t qp_num;         /* out */
};

/* Creates the RC queue pair of an id; caps are updated to what the device
 * granted. */
int rs_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_cq *send_cq,
                 struct ibv_cq *recv_cq, struct rs_qp_caps *caps)
{
    struct ibv_qp_init_attr a;
    int rc;

    memset(&a, 0, sizeof(a));
    a.send_cq = send_cq;
    a.recv_cq = recv_cq;
    a.qp_type = IBV_QPT_RC;
    a.sq_sig_all = 0;
    a.cap.max_send_wr = caps->max_send_wr;
    a.cap.max_recv_wr = caps->max_recv_wr;
    a.cap.max_send_sge = caps->max_send_sge;
    a.cap.max_recv_sge = caps->max_recv_sge;
    a.cap.max_inline_data = caps->max_inline_data;
    rc = rdma_create_qp(id, pd, &a);
    if (rc)
        return errno ? -errno : -EIO;
    caps->max_send_wr = a.cap.max_send_wr;
    caps->max_recv_wr = a.cap.max_recv_wr;
    caps->max_send_sge = a.cap.max_send_sge;
    caps->max_recv_sge = a.cap.max_recv_sge;
    caps->max_inline_data = a.cap.max_inline_data;
    caps->qp_num = id->qp->qp_num;
    return 0;
}

struct rs_conn {
    const void *private_data;
    uint32_t private_data_len;
    uint32_t responder_resources;
    uint32_t initiator_depth;
    uint32_t retry_count;
    uint32_t rnr_retry_count;
};

static void rs_conn_param(const struct rs_conn *c, struct rdma_conn_param *p)
{
    memset(p, 0, sizeof(*p));
    p->private_data = c->private_data_len ? c->private_data : NULL;
    p->private_data_len = (uint8_t)c->private_data_len;
    p->responder_resources = (uint8_t)c->responder_resources;
    p->initiator_depth = (uint8_t)c->initiator_depth;
    p->flow_control = 1;
    p->retry_count = (uint8_t)c->retry_count;
    p->rnr_retry_count = (uint8_t)c->rnr_retry_count;
}

int rs_connect(struct rdma_cm_id *id, const struct rs_conn *c)
{
    struct rdma_conn_param p;

    if (c->private_data_len > 255)
        return -EINVAL;
    rs_conn_param(c, &p);
    return rdma_connect(id, &p) ? (errno ? -errno : -EIO) : 0;
}

int rs_accept(struct rdma_cm_id *id, const struct rs_conn *c)
{
    struct rdma_conn_param p;

    if (c->private_data_len > 255)
        return -EINVAL;
    rs_conn_param(c, &p);
    return rdma_accept(id, &p) ? (errno ? -errno : -EIO) : 0;
}

struct rs_event {
    struct rdma_cm_event *ev;    /* to ack */
    struct rdma_cm_id *id;
    struct rdma_cm_id *listen_id;
    const void *private_data;    /* valid until the ack */
    uint32_t event;
    int32_t status;
    uint32_t private_data_len;
    uint32_t responder_resources;
    uint32_t initiator_depth;
    uint32_t pad;
};

/* Takes the next event of a (non-blocking) channel: 0, or -EAGAIN if there
 * is none, or another negative errno. */
int rs_get_event(struct rdma_event_channel *ch, struct rs_event *out)
{
    struct rdma_cm_event *ev = NULL;

    memset(out, 0, sizeof(*out));
    if (rdma_get_cm_event(ch, &ev))
        return errno ? -errno : -EIO;
    out->ev = ev;
    out->id = ev->id;
    out->listen_id = ev->listen_id;
    out->event = ev->event;
    out->status = ev->status;
    if (ev->event != RDMA_CM_EVENT_MULTICAST_JOIN && ev->event != RDMA_CM_EVENT_MULTICAST_ERROR) {
        out->private_data = ev->param.conn.private_data;
        out->private_data_len = ev->param.conn.private_data ? ev->param.conn.private_data_len : 0;
        out->responder_resources = ev->param.conn.responder_resources;
        out->initiator_depth = ev->param.conn.initiator_depth;
    }
    return 0;
}
