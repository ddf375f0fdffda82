//! MPA connection set-up (RFC 5044 §7, RFC 6581) in both directions: the
//! initiator's Request and the responder's Reply or Reject, the enhanced
//! IRD/ORD negotiation, and the peer-to-peer ready-to-receive message
//! that opens FPDU mode.

use std::time::Instant;

use bytes::{Bytes, BytesMut};
use rpcrdma_verbs::QpCaps;

use super::tx::push_message;
use super::{
    ApiError, Config, ConfigError, ConnError, Connection, Event, Negotiated, P2pMode, Phase,
    ProtocolError, Role, Rtr, MAX_IRD,
};
use crate::ddp::{DdpHeader, TAGGED_HEADER_LEN};
use crate::mpa::{FrameKind, IrdOrd, MpaFlags, MpaFrame, IRD_ORD_LEN};
use crate::rdmap::{Opcode, ReadRequest, Terminate};

impl Connection {
    /// An initiator: queues the MPA Request carrying `private_data` (the
    /// Upper Layer's part; the IRD/ORD word is added for revision 2).
    pub fn initiator(cfg: Config, private_data: Bytes, now: Instant) -> Result<Self, ApiError> {
        cfg.validate()?;
        let rev2 = cfg.revision == 2;
        let pd_len = private_data.len() + if rev2 { IRD_ORD_LEN } else { 0 };
        if pd_len > cfg.max_private_data {
            return Err(ApiError::PrivateDataTooLong {
                len: pd_len,
                max: cfg.max_private_data,
            });
        }
        let mut flags = MpaFlags::default().with(MpaFlags::CRC, cfg.crc);
        let ird_ord = rev2.then(|| {
            flags = flags.with(MpaFlags::ENHANCED, true);
            let (write_rtr, read_rtr) = match cfg.p2p {
                P2pMode::Off => (false, false),
                P2pMode::Write => (true, false),
                P2pMode::Read => (false, true),
                P2pMode::Any => (true, true),
            };
            IrdOrd {
                ird: cfg.caps.ird,
                ord: cfg.caps.ord,
                peer_to_peer: cfg.p2p != P2pMode::Off,
                send_rtr: false,
                write_rtr,
                read_rtr,
            }
        });
        let req = MpaFrame {
            kind: FrameKind::Request,
            flags,
            revision: cfg.revision,
            ird_ord,
            private_data,
        };
        let mut c = Connection::new(cfg, Role::Initiator, Phase::AwaitReply, now);
        c.queue_mpa(&req);
        c.request = Some(req);
        Ok(c)
    }

    /// A responder waiting for the MPA Request.
    pub fn responder(cfg: Config, now: Instant) -> Result<Self, ApiError> {
        cfg.validate()?;
        Ok(Connection::new(
            cfg,
            Role::Responder,
            Phase::AwaitRequest,
            now,
        ))
    }

    pub(super) fn queue_mpa(&mut self, f: &MpaFrame) {
        let mut b = BytesMut::with_capacity(f.buffer_len());
        // Lengths were checked by the caller; a failure here is a bug in
        // this module, and the frame is then simply not sent.
        if f.emit(&mut b).is_ok() {
            self.tx.push_copy(&b);
        }
    }

    /// Sets queue depths and IRD/ORD before the connection is up (a
    /// responder learns them only when the application accepts).
    pub fn set_caps(&mut self, caps: QpCaps) -> Result<(), ApiError> {
        if !matches!(self.phase, Phase::AwaitRequest | Phase::AwaitAccept) {
            return Err(ApiError::WrongState {
                command: "set_caps",
                state: self.phase.name(),
            });
        }
        ConfigError::check_caps(&caps)?;
        self.cfg.caps = caps;
        self.ird = caps.ird;
        self.ord = caps.ord;
        Ok(())
    }

    /// Responder: accepts the Request, answering with `private_data`.
    pub fn accept(&mut self, private_data: Bytes) -> Result<(), ApiError> {
        if self.phase != Phase::AwaitAccept {
            return Err(ApiError::WrongState {
                command: "accept",
                state: self.phase.name(),
            });
        }
        let Some(req) = self.request.clone() else {
            return Err(ApiError::WrongState {
                command: "accept",
                state: "without a request",
            });
        };
        let enhanced = req.ird_ord.is_some();
        let pd_len = private_data.len() + if enhanced { IRD_ORD_LEN } else { 0 };
        if pd_len > self.cfg.max_private_data {
            return Err(ApiError::PrivateDataTooLong {
                len: pd_len,
                max: self.cfg.max_private_data,
            });
        }
        self.crc = req.flags.has(MpaFlags::CRC) || self.cfg.crc;
        let mut rtr = None;
        let reply_word = req.ird_ord.map(|w| {
            // Linux siw as initiator refuses a Reply whose ORD exceeds its
            // IRD; mirror the initiator: our ORD at most its IRD, our IRD at
            // least its ORD (up to MAX_IRD).
            self.ord = self.cfg.caps.ord.min(w.ird);
            self.ird = self.cfg.caps.ird.max(w.ord).min(MAX_IRD);
            let (mut write_rtr, mut read_rtr) = (false, false);
            if w.peer_to_peer {
                if w.write_rtr || !w.read_rtr {
                    write_rtr = true;
                    rtr = Some(Rtr::Write);
                } else {
                    read_rtr = true;
                    rtr = Some(Rtr::Read);
                }
            }
            IrdOrd {
                ird: self.ird,
                ord: self.ord,
                peer_to_peer: w.peer_to_peer,
                send_rtr: false,
                write_rtr,
                read_rtr,
            }
        });
        let reply = MpaFrame {
            kind: FrameKind::Reply,
            flags: MpaFlags::default()
                .with(MpaFlags::CRC, self.crc)
                .with(MpaFlags::ENHANCED, enhanced),
            revision: req.revision,
            ird_ord: reply_word,
            private_data,
        };
        self.queue_mpa(&reply);
        // RFC 5044 §7.1.3 (and Linux siw as initiator, which drops the
        // connection if anything follows the Reply before its first FPDU):
        // the responder sends no FPDU before it has received one.
        self.tx.close_gate();
        self.connected(req.revision, rtr, req.private_data.clone(), req.ird_ord);
        Ok(())
    }

    /// Responder: rejects the Request, answering with `private_data`; the
    /// connection then closes ([`ConnError::RejectedLocally`]).
    pub fn reject(&mut self, private_data: Bytes) -> Result<(), ApiError> {
        if self.phase != Phase::AwaitAccept {
            return Err(ApiError::WrongState {
                command: "reject",
                state: self.phase.name(),
            });
        }
        self.send_reject(private_data)?;
        self.fail(ConnError::RejectedLocally { markers: false }, None);
        Ok(())
    }

    pub(super) fn send_reject(&mut self, private_data: Bytes) -> Result<(), ApiError> {
        let (revision, enhanced) = match &self.request {
            Some(r) if (1..=2).contains(&r.revision) => (r.revision, r.ird_ord.is_some()),
            _ => (2, false),
        };
        let pd_len = private_data.len() + if enhanced { IRD_ORD_LEN } else { 0 };
        if pd_len > self.cfg.max_private_data {
            return Err(ApiError::PrivateDataTooLong {
                len: pd_len,
                max: self.cfg.max_private_data,
            });
        }
        let reply = MpaFrame {
            kind: FrameKind::Reply,
            flags: MpaFlags(MpaFlags::REJECT).with(MpaFlags::ENHANCED, enhanced),
            revision,
            ird_ord: enhanced.then(IrdOrd::default),
            private_data,
        };
        self.queue_mpa(&reply);
        Ok(())
    }

    pub(super) fn connected(
        &mut self,
        revision: u8,
        rtr: Option<Rtr>,
        peer_pd: Bytes,
        peer_word: Option<IrdOrd>,
    ) {
        self.phase = Phase::Connected;
        self.deadline = None;
        let n = Negotiated {
            revision,
            crc: self.crc,
            ird: self.ird,
            ord: self.ord,
            rtr,
            peer_private_data: peer_pd,
            peer_ird_ord: peer_word,
        };
        self.negotiated = Some(n.clone());
        self.events.push_back(Event::Established(n));
    }

    pub(super) fn process_mpa(&mut self) -> bool {
        let staged = &self.rx.buf[self.rx.start..self.rx.end];
        match MpaFrame::parse(staged) {
            Ok(None) => false,
            Err(e) => {
                // A responder can still answer a frame it could read the
                // header of with a Reject; a garbled key gets no answer.
                if self.role == Role::Responder && !matches!(e, crate::mpa::MpaError::BadKey) {
                    let _ = self.send_reject(Bytes::new());
                }
                self.fail(ConnError::Protocol(e.into()), None);
                true
            }
            Ok(Some((frame, used))) => {
                self.rx.start += used;
                match self.role {
                    Role::Responder => self.on_request(frame),
                    Role::Initiator => self.on_reply(frame),
                }
                true
            }
        }
    }

    pub(super) fn on_request(&mut self, req: MpaFrame) {
        if req.kind != FrameKind::Request {
            self.fail(
                ProtocolError::MpaUnexpectedKey {
                    got: "Reply",
                    expected: "Request",
                }
                .into(),
                None,
            );
            return;
        }
        let early = self.rx.end - self.rx.start;
        let markers = req.flags.has(MpaFlags::MARKERS);
        let pd_len = req.pd_length();
        let revision = req.revision;
        self.request = Some(req);
        if early > 0 {
            self.fail(ProtocolError::MpaEarlyData(early).into(), None);
            return;
        }
        let refusal = if !(1..=2).contains(&revision) {
            Some(ConnError::Protocol(ProtocolError::MpaRevision(revision)))
        } else if markers {
            Some(ConnError::RejectedLocally { markers: true })
        } else if pd_len > self.cfg.max_private_data {
            Some(ConnError::Protocol(ProtocolError::MpaPrivateDataTooLong {
                len: pd_len,
                max: self.cfg.max_private_data,
            }))
        } else {
            None
        };
        if let Some(err) = refusal {
            let _ = self.send_reject(Bytes::new());
            self.fail(err, None);
            return;
        }
        let Some(req) = self.request.as_ref() else {
            return;
        };
        let info = super::PeerRequest {
            revision: req.revision,
            crc: req.flags.has(MpaFlags::CRC),
            ird_ord: req.ird_ord,
            private_data: req.private_data.clone(),
        };
        self.phase = Phase::AwaitAccept;
        self.deadline = None;
        self.events.push_back(Event::ConnectRequest(info));
    }

    pub(super) fn on_reply(&mut self, rep: MpaFrame) {
        if rep.kind != FrameKind::Reply {
            self.fail(
                ProtocolError::MpaUnexpectedKey {
                    got: "Request",
                    expected: "Reply",
                }
                .into(),
                None,
            );
            return;
        }
        if rep.is_reject() {
            self.fail(
                ConnError::Rejected {
                    private_data: rep.private_data,
                },
                None,
            );
            return;
        }
        let Some(req) = self.request.clone() else {
            return;
        };
        self.crc = req.flags.has(MpaFlags::CRC) || rep.flags.has(MpaFlags::CRC);
        let mut rtr = None;
        let err = if rep.revision == 0 || rep.revision > req.revision {
            Some(ProtocolError::MpaReplyRevision {
                sent: req.revision,
                got: rep.revision,
            })
        } else if rep.flags.has(MpaFlags::MARKERS) {
            Some(ProtocolError::MpaMarkers)
        } else if rep.pd_length() > self.cfg.max_private_data {
            Some(ProtocolError::MpaPrivateDataTooLong {
                len: rep.pd_length(),
                max: self.cfg.max_private_data,
            })
        } else {
            match (req.ird_ord, rep.ird_ord) {
                (Some(ours), Some(w)) if ours.peer_to_peer && w.peer_to_peer => {
                    if w.write_rtr && ours.write_rtr {
                        rtr = Some(Rtr::Write);
                        None
                    } else if w.read_rtr && ours.read_rtr {
                        rtr = Some(Rtr::Read);
                        None
                    } else {
                        Some(ProtocolError::MpaNoMatchingRtr)
                    }
                }
                _ => None,
            }
        };
        if let Some(w) = rep.ird_ord {
            self.ord = self.cfg.caps.ord.min(w.ird);
            self.ird = self.cfg.caps.ird.max(w.ord).min(MAX_IRD);
        }
        if let Some(e) = err {
            // The Reply was well formed, so the peer is in FPDU mode: tell it
            // why with a Terminate (as Linux siw does).
            self.phase = Phase::Connected;
            let t = e.term_error().map(Terminate::bare);
            self.fail(e.into(), t);
            return;
        }
        self.connected(rep.revision, rtr, rep.private_data.clone(), rep.ird_ord);
        // Peer-to-peer mode: the RTR is our first FPDU.
        match rtr {
            Some(Rtr::Write) => {
                let (crc, max) = (self.crc, self.cfg.max_ulpdu);
                push_message(&mut self.tx, crc, max, TAGGED_HEADER_LEN, &[], 0, |_, _| {
                    DdpHeader::tagged(true, Opcode::WRITE, 0, 0)
                });
            }
            Some(Rtr::Read) => self.queue_read_request(None, ReadRequest::default()),
            None => {}
        }
    }
}
