//! How the NFS client commands show what they found: `ls -l`'s mode
//! letters, and the NFSv4.1 session's report.

use rpcrdma_nfs3::fs::{Attr, FileType};
use rpcrdma_nfs4::client::{self as v4, FileKind, Nfs4Client};

/// One line on how the NFSv4.1 session and its backchannel went: the
/// back channel negotiated, the callbacks answered, and the SEQUENCE
/// status flags the server set after its CB_NULL probe was answered (or,
/// when no probe came, as Linux nfsd sends none to NFSv4.1 clients, every
/// flag it set).
pub(crate) fn v4_report(c: &Nfs4Client) -> String {
    let r = c.report();
    let after = v4::session::flag_names(r.flags_after_probe);
    let seen = v4::session::flag_names(r.flags_seen);
    if r.callbacks.nulls == 0 {
        return format!(
            "NFSv4.1 session: {} slots, I/O {} KiB; back channel {} slot(s), calls up to {} bytes, {} ops ({}); \
             backchannel: no CB_NULL probe came, {} CB_COMPOUND ({} CB_RECALL) answered; SEQUENCE status flags set: {}",
            r.fore.ca_maxrequests,
            r.io.0 / 1024,
            r.back.ca_maxrequests,
            r.back.ca_maxrequestsize,
            r.back.ca_maxoperations,
            if r.back_on_connection { "on this connection" } else { "bound later" },
            r.callbacks.compounds,
            r.callbacks.recalls,
            if seen.is_empty() { "none, no SEQ4_STATUS_CB_PATH_DOWN".to_owned() } else { seen.join("|") },
        );
    }
    format!(
        "NFSv4.1 session: {} slots, I/O {} KiB; back channel {} slot(s), calls up to {} bytes, {} ops ({}); \
         backchannel: {} CB_NULL, {} CB_COMPOUND ({} CB_RECALL) answered; SEQUENCE status flags after the probe: {} ({} SEQUENCEs){}",
        r.fore.ca_maxrequests,
        r.io.0 / 1024,
        r.back.ca_maxrequests,
        r.back.ca_maxrequestsize,
        r.back.ca_maxoperations,
        if r.back_on_connection { "on this connection" } else { "bound later" },
        r.callbacks.nulls,
        r.callbacks.compounds,
        r.callbacks.recalls,
        if after.is_empty() { "none, no SEQ4_STATUS_CB_PATH_DOWN".to_owned() } else { after.join("|") },
        r.sequences_after_probe,
        if seen.is_empty() { String::new() } else { format!("; before it: {}", seen.join("|")) },
    )
}

/// `ls -l`'s type and permission letters of an NFSv4 file.
pub(crate) fn mode_string4(kind: FileKind, mode: u32) -> String {
    let mut s = String::new();
    s.push(kind.type_char());
    for shift in [6, 3, 0] {
        let b = (mode >> shift) & 7;
        s.push(if b & 4 != 0 { 'r' } else { '-' });
        s.push(if b & 2 != 0 { 'w' } else { '-' });
        s.push(if b & 1 != 0 { 'x' } else { '-' });
    }
    s
}

/// `ls -l`'s type letter of an NFSv3 file type.
fn type_char(t: FileType) -> char {
    match t {
        FileType::Regular => '-',
        FileType::Directory => 'd',
        FileType::BlockDevice => 'b',
        FileType::CharDevice => 'c',
        FileType::Symlink => 'l',
        FileType::Socket => 's',
        FileType::Fifo => 'p',
    }
}

/// `ls -l`'s type and permission letters of an NFSv3 file.
pub(crate) fn mode_string(a: &Attr) -> String {
    let mut s = String::new();
    s.push(type_char(a.ftype));
    for shift in [6, 3, 0] {
        let b = (a.mode >> shift) & 7;
        s.push(if b & 4 != 0 { 'r' } else { '-' });
        s.push(if b & 2 != 0 { 'w' } else { '-' });
        s.push(if b & 1 != 0 { 'x' } else { '-' });
    }
    s
}
