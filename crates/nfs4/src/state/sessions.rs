//! Sessions (RFC 8881 §2.10): CREATE_SESSION, SEQUENCE with its slot table
//! and reply cache (exactly-once semantics), BIND_CONN_TO_SESSION,
//! DESTROY_SESSION, and the state of each session's backchannel.
//!
//! A slot remembers the sequence id of its last request and, when the
//! client asked (`sa_cachethis`), that request's whole reply: a
//! retransmission (same slot, same sequence id) gets the cached reply and
//! is not executed again; one whose reply was not cached gets
//! `NFS4ERR_RETRY_UNCACHED_REP`; one that arrives while the first is still
//! running gets `NFS4ERR_DELAY`. Slots start at sequence id 0, so a
//! client's first request on a slot carries 1.

use std::time::Instant;

use super::client_table::Client;
use super::ids::{ClientId, SessionId};
use super::session_table::{Back, ChannelAttrs, ConnId, Session, SessionGrant, Slot};
use super::{CachedReply, State, StateError, StateResult};

/// `SEQ4_STATUS_CB_PATH_DOWN`: the server cannot reach the client's
/// backchannel on any session.
pub const SEQ4_STATUS_CB_PATH_DOWN: u32 = 0x0000_0001;
/// `SEQ4_STATUS_RECALLABLE_STATE_REVOKED`: a delegation was revoked.
pub const SEQ4_STATUS_RECALLABLE_STATE_REVOKED: u32 = 0x0000_0040;
/// `SEQ4_STATUS_CB_PATH_DOWN_SESSION`: this session's backchannel is down.
pub const SEQ4_STATUS_CB_PATH_DOWN_SESSION: u32 = 0x0000_0200;

/// CREATE_SESSION's arguments.
#[derive(Debug, Clone, Copy)]
pub struct CreateSession {
    /// `csa_clientid`.
    pub client: ClientId,
    /// `csa_sequence`.
    pub sequence: u32,
    /// `CREATE_SESSION4_FLAG_CONN_BACK_CHAN` asked.
    pub back_channel: bool,
    /// The fore channel asked for.
    pub fore: ChannelAttrs,
    /// The back channel asked for.
    pub back: ChannelAttrs,
    /// `csa_cb_program`.
    pub cb_program: u32,
}

/// SEQUENCE's outcome.
#[derive(Debug, Clone)]
pub struct Sequenced<R> {
    /// A retransmission's cached reply: send it, execute nothing.
    pub replay: Option<R>,
    /// The session's client.
    pub client: ClientId,
    /// `sr_highest_slotid` and `sr_target_highest_slotid`.
    pub highest_slot: u32,
    /// `sr_status_flags`.
    pub status_flags: u32,
    /// The fore channel's limits (operations, reply sizes).
    pub fore: ChannelAttrs,
}

/// A backchannel to send callbacks on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backchannel {
    /// The session.
    pub session: SessionId,
    /// Its connection.
    pub conn: ConnId,
    /// `csa_cb_program`.
    pub cb_program: u32,
    /// The back channel's limits.
    pub attrs: ChannelAttrs,
}

fn clamp(asked: ChannelAttrs, ours: ChannelAttrs) -> ChannelAttrs {
    ChannelAttrs {
        header_pad: 0,
        max_request: asked.max_request.min(ours.max_request),
        max_response: asked.max_response.min(ours.max_response),
        max_response_cached: asked.max_response_cached.min(ours.max_response_cached),
        max_ops: asked.max_ops.min(ours.max_ops).max(1),
        max_requests: asked.max_requests.min(ours.max_requests).max(1),
    }
}

impl<R: CachedReply> State<R> {
    /// The fore channel this server offers at most.
    fn our_fore(&self) -> ChannelAttrs {
        ChannelAttrs {
            header_pad: 0,
            max_request: self.cfg.max_request,
            max_response: self.cfg.max_response,
            max_response_cached: self.cfg.max_response_cached,
            max_ops: self.cfg.max_ops,
            max_requests: self.cfg.max_slots,
        }
    }

    /// CREATE_SESSION (RFC 8881 §18.36), received on `conn`.
    pub fn create_session(
        &mut self,
        a: CreateSession,
        conn: ConnId,
        now: Instant,
    ) -> StateResult<SessionGrant> {
        let c: &Client = self.client(a.client)?;
        if a.sequence == c.cs_seqid {
            // A retransmission: the cached reply, or misordered if none.
            return c.cs_reply.ok_or(StateError::SeqMisordered);
        }
        if a.sequence != c.cs_seqid.wrapping_add(1) {
            return Err(StateError::SeqMisordered);
        }
        let sessions = self
            .sessions
            .values()
            .filter(|s| s.client == a.client)
            .count();
        if sessions >= self.cfg.max_sessions {
            return Err(StateError::TooMuchState);
        }
        let fore = clamp(a.fore, self.our_fore());
        let back = clamp(
            a.back,
            ChannelAttrs {
                header_pad: 0,
                max_request: u32::MAX,
                max_response: u32::MAX,
                max_response_cached: 0,
                max_ops: self.cfg.max_ops,
                max_requests: self.cfg.max_back_slots,
            },
        );
        let n = self.next();
        let salt: [u8; 4] = rand::random();
        let id = SessionId::new(a.client, n, salt);
        let grant = SessionGrant {
            session: id,
            sequence: a.sequence,
            back_channel: a.back_channel,
            fore,
            back,
        };
        self.confirm(a.client);
        self.renew(a.client, now);
        let c = self.clients.get_mut(a.client).expect("found above");
        c.cs_seqid = a.sequence;
        c.cs_reply = Some(grant);
        self.sessions.insert(
            id,
            Session {
                client: a.client,
                fore,
                back_attrs: back,
                cb_program: a.cb_program,
                slots: vec![
                    Slot {
                        seqid: 0,
                        busy: false,
                        reply: None,
                        cached: 0,
                    };
                    fore.max_requests as usize
                ],
                conns: vec![conn],
                back: if a.back_channel {
                    Back::Probing(conn)
                } else {
                    Back::None
                },
                cb_seqid: 0,
            },
        );
        Ok(grant)
    }

    fn session_mut(&mut self, id: &SessionId) -> StateResult<&mut Session<R>> {
        if id.client().boot() != self.boot {
            return Err(StateError::BadSession);
        }
        self.sessions.get_mut(id).ok_or(StateError::BadSession)
    }

    /// SEQUENCE (RFC 8881 §18.46), received on `conn`.
    pub fn sequence(
        &mut self,
        id: &SessionId,
        seqid: u32,
        slot: u32,
        highest_slot: u32,
        conn: ConnId,
        now: Instant,
    ) -> StateResult<Sequenced<R>> {
        let s = self.session_mut(id)?;
        let nslots = s.slots.len() as u32;
        if slot >= nslots {
            return Err(StateError::BadSlot);
        }
        if highest_slot >= nslots {
            return Err(StateError::BadHighSlot);
        }
        let sl = &mut s.slots[slot as usize];
        let replay = if seqid == sl.seqid && (sl.busy || sl.reply.is_some()) {
            if sl.busy {
                return Err(StateError::Delay);
            }
            match &sl.reply {
                Some(Some(r)) => Some(r.clone()),
                _ => return Err(StateError::RetryUncachedRep),
            }
        } else if seqid == sl.seqid.wrapping_add(1) {
            sl.seqid = seqid;
            sl.busy = true;
            None
        } else {
            return Err(StateError::SeqMisordered);
        };
        // A client without state protection may use any connection: it is
        // bound to the fore channel by using it (RFC 8881 §2.10.5.1).
        if !s.conns.contains(&conn) {
            s.conns.push(conn);
        }
        let client = s.client;
        let fore = s.fore;
        let session_down = matches!(s.back, Back::None | Back::Down(_));
        let any_up = self
            .sessions
            .values()
            .any(|x| x.client == client && !matches!(x.back, Back::None | Back::Down(_)));
        self.renew(client, now);
        let mut flags = 0;
        if session_down {
            flags |= SEQ4_STATUS_CB_PATH_DOWN_SESSION;
        }
        if !any_up {
            flags |= SEQ4_STATUS_CB_PATH_DOWN;
        }
        if self.clients.get(client).is_some_and(|c| c.revoked > 0) {
            flags |= SEQ4_STATUS_RECALLABLE_STATE_REVOKED;
        }
        Ok(Sequenced {
            replay,
            client,
            highest_slot: nslots - 1,
            status_flags: flags,
            fore,
        })
    }

    /// The request on `slot` of session `id` is done: keep its reply if
    /// the client asked for it to be cached (`reply` is `Some`).
    /// A reply beyond [`super::Config::max_cached_total`] (with the
    /// other slots') is not kept.
    pub fn finish(&mut self, id: &SessionId, slot: u32, reply: Option<R>) {
        let max = self.cfg.max_cached_total;
        let mut total = self.cached_total;
        if let Some(sl) = self
            .sessions
            .get_mut(id)
            .and_then(|s| s.slots.get_mut(slot as usize))
        {
            sl.busy = false;
            total -= sl.cached;
            let len = reply.as_ref().map_or(0, CachedReply::cached_len);
            if reply.is_some() && total + len > max {
                tracing::warn!(max, "the NFSv4 reply cache is full: a reply is not kept");
                sl.reply = Some(None);
                sl.cached = 0;
            } else {
                sl.reply = Some(reply);
                sl.cached = len;
                total += len;
            }
        }
        self.cached_total = total;
    }

    /// Removes a session, giving back what its slots cached.
    pub(crate) fn forget_session(&mut self, id: &SessionId) {
        if let Some(s) = self.sessions.remove(id) {
            let held: usize = s.slots.iter().map(|sl| sl.cached).sum();
            self.cached_total -= held;
        }
    }

    /// DESTROY_SESSION (RFC 8881 §18.37).
    pub fn destroy_session(&mut self, id: &SessionId) -> StateResult<()> {
        self.session_mut(id)?;
        self.forget_session(id);
        Ok(())
    }

    /// BIND_CONN_TO_SESSION (RFC 8881 §18.34): binds `conn` to the fore
    /// channel, the back channel or both; returns whether the back
    /// channel was bound (it is then probed).
    pub fn bind_conn(
        &mut self,
        id: &SessionId,
        fore: bool,
        back: bool,
        conn: ConnId,
        now: Instant,
    ) -> StateResult<()> {
        let s = self.session_mut(id)?;
        if fore && !s.conns.contains(&conn) {
            s.conns.push(conn);
        }
        if back {
            s.back = Back::Probing(conn);
        }
        let client = s.client;
        self.renew(client, now);
        Ok(())
    }

    /// The client of a session, if it exists.
    pub fn session_client(&self, id: &SessionId) -> Option<ClientId> {
        self.sessions.get(id).map(|s| s.client)
    }

    /// A connection closed: it leaves every session; a backchannel on it
    /// is down.
    pub fn conn_lost(&mut self, conn: ConnId) {
        for s in self.sessions.values_mut() {
            s.conns.retain(|c| *c != conn);
            if matches!(s.back, Back::Probing(c) | Back::Up(c) | Back::Down(c) if c == conn) {
                s.back = Back::None;
            }
        }
    }

    /// The outcome of probing a session's backchannel on `conn` (CB_NULL).
    pub fn probed(&mut self, id: &SessionId, conn: ConnId, up: bool) {
        if let Some(s) = self.sessions.get_mut(id) {
            if matches!(s.back, Back::Probing(c) | Back::Up(c) | Back::Down(c) if c == conn) {
                s.back = if up { Back::Up(conn) } else { Back::Down(conn) };
            }
        }
    }

    /// A backchannel of `client` that is up (or being probed), to send a
    /// callback on.
    pub fn backchannel(&self, client: ClientId) -> Option<Backchannel> {
        let (id, s) = self
            .sessions
            .iter()
            .filter(|(_, s)| s.client == client)
            .find(|(_, s)| matches!(s.back, Back::Up(_) | Back::Probing(_)))?;
        let (Back::Up(conn) | Back::Probing(conn)) = s.back else {
            return None;
        };
        Some(Backchannel {
            session: *id,
            conn,
            cb_program: s.cb_program,
            attrs: s.back_attrs,
        })
    }

    /// The next CB_SEQUENCE sequence id of session `id`'s back channel
    /// slot 0 (callbacks on a session go one at a time).
    pub fn cb_sequence(&mut self, id: &SessionId) -> Option<u32> {
        let s = self.sessions.get_mut(id)?;
        s.cb_seqid = s.cb_seqid.wrapping_add(1);
        Some(s.cb_seqid)
    }

    /// The fore channel of session `id`.
    pub fn session_fore(&self, id: &SessionId) -> Option<ChannelAttrs> {
        self.sessions.get(id).map(|s| s.fore)
    }

    /// Whether some session of `client` has a backchannel that answered
    /// its probe.
    pub(crate) fn backchannel_up(&self, client: ClientId) -> bool {
        self.sessions
            .values()
            .any(|s| s.client == client && matches!(s.back, Back::Up(_)))
    }

    /// Sessions whose backchannel is bound to `conn` and waits for its
    /// probe.
    pub fn to_probe(&self, conn: ConnId) -> Vec<(SessionId, u32)> {
        self.sessions
            .iter()
            .filter(|(_, s)| s.back == Back::Probing(conn))
            .map(|(id, s)| (*id, s.cb_program))
            .collect()
    }
}
