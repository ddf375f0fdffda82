//! The FFI edge: declarations of the C shim (`csrc/shim.c`) and of the
//! rdma-core functions called directly. Every structure crossing the edge
//! is one of the shim's own (`rs_*`), mirrored here `#[repr(C)]`; rdma-core
//! objects stay opaque pointers.
#![allow(unsafe_code)]
#![allow(non_camel_case_types, missing_docs, unreachable_pub)]

use std::ffi::{c_char, c_int, c_void};

/// Opaque rdma-core objects.
#[repr(C)]
pub struct ibv_context {
    _p: [u8; 0],
}
#[repr(C)]
pub struct ibv_pd {
    _p: [u8; 0],
}
#[repr(C)]
pub struct ibv_mr {
    _p: [u8; 0],
}
#[repr(C)]
pub struct ibv_cq {
    _p: [u8; 0],
}
#[repr(C)]
pub struct ibv_comp_channel {
    _p: [u8; 0],
}
#[repr(C)]
pub struct ibv_qp {
    _p: [u8; 0],
}
#[repr(C)]
pub struct rdma_cm_id {
    _p: [u8; 0],
}
#[repr(C)]
pub struct rdma_event_channel {
    _p: [u8; 0],
}
#[repr(C)]
pub struct rdma_cm_event {
    _p: [u8; 0],
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct rs_dev_attr {
    pub max_mr_size: u64,
    pub device_cap_flags: u64,
    pub max_qp_wr: u32,
    pub max_sge: u32,
    pub max_cqe: u32,
    pub max_mr: u32,
    pub max_qp_rd_atom: u32,
    pub max_qp_init_rd_atom: u32,
    pub max_mw: u32,
    pub transport: u32,
    pub phys_port_cnt: u32,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
    pub mw_type_2: u32,
    pub fw_ver: [c_char; 64],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct rs_port_attr {
    pub state: u32,
    pub active_mtu: u32,
    pub link_layer: u32,
    pub gid_tbl_len: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct rs_wc {
    pub wr_id: u64,
    pub status: u32,
    pub opcode: u32,
    pub vendor_err: u32,
    pub byte_len: u32,
    pub qp_num: u32,
    pub with_inv: u32,
    pub invalidated_rkey: u32,
    pub pad: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct rs_sge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

pub const RS_SEND: u32 = 0;
pub const RS_SEND_INV: u32 = 1;
pub const RS_WRITE: u32 = 2;
pub const RS_READ: u32 = 3;
pub const RS_SIGNALED: u32 = 1;
pub const RS_SOLICITED: u32 = 2;
pub const RS_INLINE: u32 = 4;
/// At most this many requests per `rs_post_send_list` (shim.c's
/// `RS_LIST_MAX`).
pub const RS_LIST_MAX: usize = 16;
/// At most this many gather elements in all per `rs_post_send_list`
/// (shim.c's `RS_LIST_SGES`).
pub const RS_LIST_SGES: usize = 64;

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct rs_send {
    pub wr_id: u64,
    pub remote_addr: u64,
    pub op: u32,
    pub flags: u32,
    pub num_sge: u32,
    pub rkey: u32,
    pub invalidate: u32,
    pub pad: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct rs_qp_caps {
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
    pub qp_num: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct rs_conn {
    pub private_data: *const c_void,
    pub private_data_len: u32,
    pub responder_resources: u32,
    pub initiator_depth: u32,
    pub retry_count: u32,
    pub rnr_retry_count: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct rs_event {
    pub ev: *mut rdma_cm_event,
    pub id: *mut rdma_cm_id,
    pub listen_id: *mut rdma_cm_id,
    pub private_data: *const c_void,
    pub event: u32,
    pub status: i32,
    pub private_data_len: u32,
    pub responder_resources: u32,
    pub initiator_depth: u32,
    pub pad: u32,
}

/// `RDMA_PS_TCP`.
pub const RDMA_PS_TCP: c_int = 0x0106;

extern "C" {
    // The shim.
    pub fn rs_query_device(ctx: *mut ibv_context, out: *mut rs_dev_attr) -> c_int;
    pub fn rs_device_name(ctx: *mut ibv_context) -> *const c_char;
    pub fn rs_query_port(ctx: *mut ibv_context, port: u8, out: *mut rs_port_attr) -> c_int;
    pub fn rs_reg_mr(
        pd: *mut ibv_pd,
        addr: *mut c_void,
        len: usize,
        access: u32,
        lkey: *mut u32,
        rkey: *mut u32,
    ) -> *mut ibv_mr;
    pub fn rs_comp_channel_fd(ch: *mut ibv_comp_channel) -> c_int;
    pub fn rs_req_notify_cq(cq: *mut ibv_cq) -> c_int;
    pub fn rs_poll_cq(cq: *mut ibv_cq, n: c_int, out: *mut rs_wc) -> c_int;
    pub fn rs_post_send(qp: *mut ibv_qp, s: *const rs_send, sges: *const rs_sge) -> c_int;
    pub fn rs_post_send_list(
        qp: *mut ibv_qp,
        s: *const rs_send,
        n: u32,
        sges: *const rs_sge,
        posted: *mut u32,
    ) -> c_int;
    pub fn rs_post_recv(qp: *mut ibv_qp, wr_id: u64, sge: *const rs_sge) -> c_int;
    pub fn rs_cm_channel_fd(ch: *mut rdma_event_channel) -> c_int;
    pub fn rs_id_verbs(id: *mut rdma_cm_id) -> *mut ibv_context;
    pub fn rs_id_qp(id: *mut rdma_cm_id) -> *mut ibv_qp;
    pub fn rs_id_addrs(
        id: *mut rdma_cm_id,
        local: *mut libc::sockaddr_storage,
        peer: *mut libc::sockaddr_storage,
    );
    pub fn rs_id_port(id: *mut rdma_cm_id) -> u32;
    pub fn rs_create_qp(
        id: *mut rdma_cm_id,
        pd: *mut ibv_pd,
        send_cq: *mut ibv_cq,
        recv_cq: *mut ibv_cq,
        caps: *mut rs_qp_caps,
    ) -> c_int;
    pub fn rs_connect(id: *mut rdma_cm_id, c: *const rs_conn) -> c_int;
    pub fn rs_accept(id: *mut rdma_cm_id, c: *const rs_conn) -> c_int;
    pub fn rs_get_event(ch: *mut rdma_event_channel, out: *mut rs_event) -> c_int;

    // libibverbs.
    pub fn ibv_alloc_pd(ctx: *mut ibv_context) -> *mut ibv_pd;
    pub fn ibv_dealloc_pd(pd: *mut ibv_pd) -> c_int;
    pub fn ibv_dereg_mr(mr: *mut ibv_mr) -> c_int;
    pub fn ibv_create_comp_channel(ctx: *mut ibv_context) -> *mut ibv_comp_channel;
    pub fn ibv_destroy_comp_channel(ch: *mut ibv_comp_channel) -> c_int;
    pub fn ibv_create_cq(
        ctx: *mut ibv_context,
        cqe: c_int,
        cq_context: *mut c_void,
        channel: *mut ibv_comp_channel,
        comp_vector: c_int,
    ) -> *mut ibv_cq;
    pub fn ibv_destroy_cq(cq: *mut ibv_cq) -> c_int;
    pub fn ibv_get_cq_event(
        ch: *mut ibv_comp_channel,
        cq: *mut *mut ibv_cq,
        cq_context: *mut *mut c_void,
    ) -> c_int;
    pub fn ibv_ack_cq_events(cq: *mut ibv_cq, nevents: u32);

    // librdmacm.
    pub fn rdma_get_devices(num: *mut c_int) -> *mut *mut ibv_context;
    pub fn rdma_free_devices(list: *mut *mut ibv_context);
    pub fn rdma_create_event_channel() -> *mut rdma_event_channel;
    pub fn rdma_destroy_event_channel(ch: *mut rdma_event_channel);
    pub fn rdma_create_id(
        ch: *mut rdma_event_channel,
        id: *mut *mut rdma_cm_id,
        context: *mut c_void,
        ps: c_int,
    ) -> c_int;
    pub fn rdma_destroy_id(id: *mut rdma_cm_id) -> c_int;
    pub fn rdma_migrate_id(id: *mut rdma_cm_id, ch: *mut rdma_event_channel) -> c_int;
    pub fn rdma_bind_addr(id: *mut rdma_cm_id, addr: *const libc::sockaddr) -> c_int;
    pub fn rdma_listen(id: *mut rdma_cm_id, backlog: c_int) -> c_int;
    pub fn rdma_resolve_addr(
        id: *mut rdma_cm_id,
        src: *const libc::sockaddr,
        dst: *const libc::sockaddr,
        timeout_ms: c_int,
    ) -> c_int;
    pub fn rdma_resolve_route(id: *mut rdma_cm_id, timeout_ms: c_int) -> c_int;
    pub fn rdma_reject(id: *mut rdma_cm_id, private_data: *const c_void, len: u8) -> c_int;
    pub fn rdma_disconnect(id: *mut rdma_cm_id) -> c_int;
    pub fn rdma_destroy_qp(id: *mut rdma_cm_id);
    pub fn rdma_ack_cm_event(ev: *mut rdma_cm_event) -> c_int;
}

/// The calling thread's `errno`.
pub fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// A negative errno return as text.
pub fn err_text(rc: i32) -> String {
    let e = if rc < 0 { -rc } else { rc };
    format!("{} (errno {e})", std::io::Error::from_raw_os_error(e))
}
