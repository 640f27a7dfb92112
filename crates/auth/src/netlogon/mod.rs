//! NTLM logons of domain users passed through to the domain controller (MS-NRPC): a DCE/RPC
//! client over ncacn_ip_tcp (the endpoint mapper on port 135 names Netlogon's port), the
//! Netlogon secure channel keyed by the machine account's password (NetrServerReqChallenge,
//! NetrServerAuthenticate3 with AES, MS-NRPC 3.1.4), a schannel-sealed binding (3.3), and
//! NetrLogonSamLogonEx (3.5.4.5.1) on it.
//!
//! ncacn_ip_tcp rather than ncacn_np: a named pipe would need an SMB session to the DC, which
//! a member has only with Kerberos or NTLM credentials of its own; the secure channel's bind
//! authenticates by itself over plain TCP, and the PDU and NDR code of `smb3d-rpc` serve both.
//!
//! The client is blocking with a timeout on every connect, read and write, so a DC that does
//! not answer costs a bounded time; the server runs it off its async workers. One channel is
//! kept and reused; an error drops it and the next logon (or one retry) builds a new one.

mod calls;
mod lsa;
mod seal;

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::Mutex;
use std::time::Duration;

use smb3d_dtyp::Sid;
use smb3d_rpc::epmapper;
use smb3d_rpc::pdu::{
    self, AUTH_TRAILER_LEN, Bind, BindAck, ContextElement, Fault, HEADER_LEN, Header, PacketType,
    PfcFlags, REQUEST_HEADER_LEN, Response, SyntaxId,
};
use zeroize::Zeroizing;

pub use calls::{AnswerError, LogonAnswer, NetworkLogon, ept_map_port, sam_logon_ex_answer};
pub use lsa::{LookupError, MAX_LOOKUP, Translated, lookup_names4_answer, lookup_sids3_answer};
use seal::SIGNATURE_LEN;
pub use seal::{MessageAltered, Sealer};

/// The endpoint mapper's well-known port (MS-RPCE 2.1.1.1).
const EPMAPPER_PORT: u16 = 135;
/// RPC_C_AUTHN_NETLOGON (MS-RPCE 2.2.1.1.7).
const AUTHN_NETLOGON: u8 = 0x44;
/// RPC_C_AUTHN_LEVEL_PKT_PRIVACY: every PDU sealed.
const AUTHN_LEVEL_PRIVACY: u8 = 6;
/// The auth_context_id of the binding.
const AUTH_CONTEXT_ID: u32 = 1;
/// The fragment size proposed, Windows' and Samba's default.
const MAX_FRAG: u16 = 4280;
/// The most bytes taken for one answer's stub, fragments together.
const MAX_ANSWER: usize = 256 * 1024;
/// NegotiateFlags asked of the DC (MS-NRPC 3.1.4.2), AES (0x0100_0000) and Secure RPC
/// (0x4000_0000) among them; a channel whose answer lacks AES is refused here.
const NEGOTIATE_FLAGS: u32 = 0x612F_FFFF;
/// NETLOGON_NEG_SUPPORTS_AES.
const NEG_SUPPORTS_AES: u32 = 0x0100_0000;

/// Where the DC is and who this member is.
#[derive(Clone)]
pub struct DcConfig {
    /// The DC's address.
    pub address: IpAddr,
    /// The NetBIOS name of the domain (e.g. `SMB3DAD`).
    pub domain: String,
    /// This member's NetBIOS name, its machine account without the `$` (e.g. `FILESRV`).
    pub computer: String,
    /// The NT hash of the machine account's password.
    pub machine_nt_hash: Zeroizing<[u8; 16]>,
    /// The bound on each connect, read and write.
    pub timeout: Duration,
}

/// Why a logon could not be asked of the DC (not a refusal of the user: that is an answer).
#[derive(Debug, thiserror::Error)]
pub enum NetlogonError {
    #[error("cannot reach the DC: {0}")]
    Io(#[from] std::io::Error),
    #[error("the DC's answer is malformed: {0}")]
    Protocol(&'static str),
    #[error("the DC faulted the call: 0x{0:08x}")]
    Fault(u32),
    #[error("the DC refused the secure channel: NTSTATUS 0x{0:08x}")]
    ChannelRefused(u32),
    #[error("the DC's credential is wrong: the machine password differs")]
    BadServerCredential,
    #[error("the DC did not negotiate AES")]
    NoAes,
    #[error(transparent)]
    Altered(#[from] MessageAltered),
    #[error(transparent)]
    Answer(#[from] AnswerError),
    #[error(transparent)]
    Lookup(#[from] LookupError),
}

impl From<smb3d_wire::DecodeError> for NetlogonError {
    fn from(e: smb3d_wire::DecodeError) -> Self {
        NetlogonError::Protocol(e.field)
    }
}

/// The member's client of the DC: one secure channel session (MS-NRPC 3.1.4) and one binding
/// per interface on it (Netlogon for logons, lsarpc for name lookups), each made on first
/// use and again after an error.
pub struct NetlogonClient {
    config: DcConfig,
    channel: Mutex<Option<Channel>>,
    lsa: Mutex<Option<Channel>>,
    session: Mutex<SessionKey>,
}

/// The secure channel's session key, shared by the bindings: the DC keeps one per machine
/// account, the last NetrServerAuthenticate3's, and seals its answers (and a logon's
/// UserSessionKey) with it, so a binding made with an older key is stale.
#[derive(Default)]
struct SessionKey {
    key: Option<Zeroizing<[u8; 16]>>,
    /// Counts authentications; a binding remembers the one it was made with.
    generation: u64,
}

impl std::fmt::Debug for NetlogonClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetlogonClient")
            .field("dc", &self.config.address)
            .field("domain", &self.config.domain)
            .field("computer", &self.config.computer)
            .finish_non_exhaustive()
    }
}

impl NetlogonClient {
    /// A client for `config`; nothing is connected yet.
    pub fn new(config: DcConfig) -> Self {
        Self {
            config,
            channel: Mutex::new(None),
            lsa: Mutex::new(None),
            session: Mutex::new(SessionKey::default()),
        }
    }

    /// The NetBIOS name of the DC's domain.
    pub fn domain(&self) -> &str {
        &self.config.domain
    }

    /// Asks the DC to check a network logon. A failure on a reused channel is retried once on
    /// a new one (the DC may have restarted or dropped the idle connection).
    pub fn logon(&self, logon: &NetworkLogon<'_>) -> Result<LogonAnswer, NetlogonError> {
        let mut slot = self
            .channel
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let reused = slot.is_some() || self.has_session();
        let first = self.logon_on(&mut slot, logon);
        match first {
            Err(_) if reused => self.logon_on(&mut slot, logon),
            other => other,
        }
    }

    fn has_session(&self) -> bool {
        self.session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .key
            .is_some()
    }

    /// The binding of `interface` in `slot`, made anew when missing or made with an older
    /// session key; the session is authenticated first when there is none.
    fn bound<'s>(
        &self,
        slot: &'s mut Option<Channel>,
        interface: &SyntaxId,
    ) -> Result<&'s mut Channel, NetlogonError> {
        let mut session = self
            .session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if slot
            .as_ref()
            .is_some_and(|c| c.generation != session.generation)
        {
            *slot = None;
        }
        if let Some(channel) = slot {
            return Ok(channel);
        }
        let key = match &session.key {
            Some(key) => key.clone(),
            None => {
                let key = authenticate(&self.config)?;
                session.generation += 1;
                session.key = Some(key.clone());
                key
            }
        };
        let generation = session.generation;
        match Channel::bind(&self.config, interface, key, generation) {
            Ok(channel) => Ok(slot.insert(channel)),
            Err(e) => {
                session.key = None;
                Err(e)
            }
        }
    }

    /// After an error on a binding made with `generation`: the session is authenticated again
    /// at the next use (the DC may have restarted and forgotten it).
    fn forget(&self, generation: u64) {
        let mut session = self
            .session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if session.generation == generation {
            session.key = None;
        }
    }

    /// Asks the DC for the SIDs of `names` (`DOMAIN\\account` or a bare account, at most
    /// [`MAX_LOOKUP`]) with LsarLookupNames4: for each, in order, what it names or None.
    pub fn lookup_names(&self, names: &[String]) -> Result<Vec<Option<Translated>>, NetlogonError> {
        let names = names.get(..MAX_LOOKUP).unwrap_or(names);
        self.on_lsa(
            lsa::OP_LOOKUP_NAMES4,
            &lsa::lookup_names4_request(names),
            |a| lsa::lookup_names4_answer(a, names),
        )
    }

    /// Asks the DC for the names of `sids` (at most [`MAX_LOOKUP`]) with LsarLookupSids3: for
    /// each, in order, what it names or None.
    pub fn lookup_sids(&self, sids: &[Sid]) -> Result<Vec<Option<Translated>>, NetlogonError> {
        let sids = sids.get(..MAX_LOOKUP).unwrap_or(sids);
        self.on_lsa(
            lsa::OP_LOOKUP_SIDS3,
            &lsa::lookup_sids3_request(sids),
            |a| lsa::lookup_sids3_answer(a, sids),
        )
    }

    /// One call on the lsarpc channel, retried once on a new channel when a reused one fails;
    /// a failed channel is dropped.
    fn on_lsa<T>(
        &self,
        opnum: u16,
        stub: &[u8],
        decode: impl Fn(&[u8]) -> Result<T, LookupError>,
    ) -> Result<T, NetlogonError> {
        let mut slot = self
            .lsa
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let call = |slot: &mut Option<Channel>| -> Result<T, NetlogonError> {
            let channel = self.bound(slot, &lsa::LSARPC)?;
            let answer = channel.call(opnum, stub).and_then(|a| Ok(decode(&a)?));
            if answer.is_err() {
                self.forget(channel.generation);
                *slot = None;
            }
            answer
        };
        let reused = slot.is_some() || self.has_session();
        match call(&mut slot) {
            Err(_) if reused => call(&mut slot),
            other => other,
        }
    }

    fn logon_on(
        &self,
        slot: &mut Option<Channel>,
        logon: &NetworkLogon<'_>,
    ) -> Result<LogonAnswer, NetlogonError> {
        let channel = self.bound(slot, &calls::NETLOGON)?;
        let stub = calls::sam_logon_ex_request(&channel.server, &self.config.computer, logon);
        let answer = channel
            .call(calls::OP_SAM_LOGON_EX, &stub)
            .and_then(|a| Ok(calls::sam_logon_ex_answer(&a)?))
            .map(|answer| channel.decrypt_session_key(answer));
        if answer.is_err() {
            self.forget(channel.generation);
            *slot = None;
        }
        answer
    }
}

/// A sealed binding of one interface.
struct Channel {
    conn: Connection,
    sealer: Sealer,
    session_key: Zeroizing<[u8; 16]>,
    server: String,
    /// The session key's generation it was made with.
    generation: u64,
}

impl Channel {
    /// Binds `interface` (on the port ept_map names) with schannel keyed by the session key.
    fn bind(
        config: &DcConfig,
        interface: &SyntaxId,
        session_key: Zeroizing<[u8; 16]>,
        generation: u64,
    ) -> Result<Self, NetlogonError> {
        let server = dc_name(config);
        let port = endpoint_port(config, interface)?;
        let mut conn = Connection::open(config, port)?;
        let message = nl_auth_message(&config.domain, &config.computer);
        let answer = conn.bind(interface, Some(&message))?;
        // NL_AUTH_MESSAGE of MessageType 1 (MS-NRPC 3.3.4.1.4).
        if answer.get(..4) != Some(&[1, 0, 0, 0][..]) || answer.len() < 12 {
            return Err(NetlogonError::Protocol("NL_AUTH_MESSAGE"));
        }
        Ok(Self {
            conn,
            sealer: Sealer::client(session_key.clone()),
            session_key,
            server,
            generation,
        })
    }

    /// The validation's UserSessionKey comes encrypted with the channel's session key
    /// (AES-128-CFB8, zero IV: MS-NRPC 3.2.4.1 with AES negotiated).
    fn decrypt_session_key(&self, answer: LogonAnswer) -> LogonAnswer {
        decrypt_user_session_key(&self.session_key, answer)
    }

    fn call(&mut self, opnum: u16, stub: &[u8]) -> Result<Vec<u8>, NetlogonError> {
        self.conn.sealed_call(&mut self.sealer, opnum, stub)
    }
}

fn decrypt_user_session_key(channel_key: &[u8; 16], answer: LogonAnswer) -> LogonAnswer {
    match answer {
        LogonAnswer::Valid(pac, mut key) => {
            smb3d_crypto::netlogon::Cfb8::new(channel_key, &[0; 16]).decrypt(&mut key);
            LogonAnswer::Valid(pac, key)
        }
        refused => refused,
    }
}

/// ept_map on the DC's endpoint mapper: the TCP port `interface` listens on.
fn endpoint_port(config: &DcConfig, interface: &SyntaxId) -> Result<u16, NetlogonError> {
    let mut conn = Connection::open(config, EPMAPPER_PORT)?;
    conn.bind(&epmapper::EPMAPPER, None)?;
    let answer = conn.call(epmapper::OP_EPT_MAP, &calls::ept_map_request(interface))?;
    calls::ept_map_port(&answer)?.ok_or(NetlogonError::Protocol("no endpoint"))
}

/// The DC's name as Netlogon's calls give it.
fn dc_name(config: &DcConfig) -> String {
    format!("\\\\{}", config.address)
}

/// NetrServerReqChallenge and NetrServerAuthenticate3 (MS-NRPC 3.1.4.1) on Netlogon's port:
/// the session key, once the DC has proved it knows the machine password too.
fn authenticate(config: &DcConfig) -> Result<Zeroizing<[u8; 16]>, NetlogonError> {
    use smb3d_crypto::netlogon::{netlogon_credential, netlogon_session_key};
    let port = endpoint_port(config, &calls::NETLOGON)?;
    let server = &dc_name(config);
    let mut conn = Connection::open(config, port)?;
    conn.bind(&calls::NETLOGON, None)?;
    let mut client_challenge = [0u8; 8];
    getrandom::fill(&mut client_challenge).map_err(|_| NetlogonError::Protocol("no random"))?;
    let stub = calls::req_challenge_request(server, &config.computer, &client_challenge);
    let (server_challenge, status) =
        calls::req_challenge_answer(&conn.call(calls::OP_REQ_CHALLENGE, &stub)?)?;
    if status != 0 {
        return Err(NetlogonError::ChannelRefused(status));
    }
    let key = netlogon_session_key(
        &config.machine_nt_hash,
        &client_challenge,
        &server_challenge,
    );
    let credential = netlogon_credential(&client_challenge, &key);
    let account = format!("{}$", config.computer);
    let stub = calls::authenticate3_request(
        server,
        &account,
        &config.computer,
        &credential,
        NEGOTIATE_FLAGS,
    );
    let (server_credential, flags, status) =
        calls::authenticate3_answer(&conn.call(calls::OP_AUTHENTICATE3, &stub)?)?;
    if status != 0 {
        return Err(NetlogonError::ChannelRefused(status));
    }
    let expected = netlogon_credential(&server_challenge, &key);
    if !bool::from(subtle::ConstantTimeEq::ct_eq(
        &server_credential[..],
        &expected[..],
    )) {
        return Err(NetlogonError::BadServerCredential);
    }
    if flags & NEG_SUPPORTS_AES == 0 {
        return Err(NetlogonError::NoAes);
    }
    Ok(key)
}

/// NL_AUTH_MESSAGE (MS-NRPC 2.2.1.3.1) of a negotiate request naming the NetBIOS domain and
/// computer as OEM strings.
fn nl_auth_message(domain: &str, computer: &str) -> Vec<u8> {
    let mut m = Vec::with_capacity(8 + domain.len() + computer.len() + 2);
    m.extend_from_slice(&0u32.to_le_bytes());
    m.extend_from_slice(&3u32.to_le_bytes());
    for name in [domain, computer] {
        m.extend(
            name.bytes()
                .filter(u8::is_ascii)
                .map(|b| b.to_ascii_uppercase()),
        );
        m.push(0);
    }
    m
}

/// One TCP connection carrying connection-oriented DCE/RPC.
struct Connection {
    stream: TcpStream,
    call_id: u32,
}

impl Connection {
    fn open(config: &DcConfig, port: u16) -> Result<Self, NetlogonError> {
        let stream =
            TcpStream::connect_timeout(&SocketAddr::new(config.address, port), config.timeout)?;
        stream.set_read_timeout(Some(config.timeout))?;
        stream.set_write_timeout(Some(config.timeout))?;
        stream.set_nodelay(true)?;
        Ok(Self { stream, call_id: 0 })
    }

    fn next_call_id(&mut self) -> u32 {
        self.call_id = self.call_id.wrapping_add(1);
        self.call_id
    }

    /// Binds `interface` over NDR 2.0, with the schannel `auth_value` when given; returns the
    /// bind_ack's auth_value.
    fn bind(
        &mut self,
        interface: &SyntaxId,
        auth_value: Option<&[u8]>,
    ) -> Result<Vec<u8>, NetlogonError> {
        let call_id = self.next_call_id();
        let bind = Bind {
            max_xmit_frag: MAX_FRAG,
            max_recv_frag: MAX_FRAG,
            assoc_group_id: 0,
            contexts: vec![ContextElement {
                context_id: 0,
                abstract_syntax: *interface,
                transfer_syntaxes: vec![SyntaxId::NDR],
            }],
            auth_verifier: &[],
        };
        let mut pdu = bind.to_pdu(PacketType::BIND, PfcFlags::SINGLE, call_id);
        if let Some(value) = auth_value {
            append_verifier(&mut pdu, 0, value);
        }
        self.stream.write_all(&pdu)?;
        let answer = self.receive()?;
        let header = Header::decode(&answer)?;
        if header.packet_type != PacketType::BIND_ACK || header.call_id != call_id {
            return Err(NetlogonError::Protocol("bind refused"));
        }
        let ack = BindAck::decode(&header, &answer)?;
        if ack.results.first().map(|r| r.result) != Some(pdu::result::ACCEPTANCE) {
            return Err(NetlogonError::Protocol("context refused"));
        }
        let (_, verifier) = pdu::split_auth(&header, &answer)?;
        Ok(verifier
            .get(AUTH_TRAILER_LEN..)
            .unwrap_or_default()
            .to_vec())
    }

    /// An unauthenticated call: its answer's stub.
    fn call(&mut self, opnum: u16, stub: &[u8]) -> Result<Vec<u8>, NetlogonError> {
        let call_id = self.next_call_id();
        let request = pdu::Request {
            alloc_hint: u32::try_from(stub.len()).unwrap_or(u32::MAX),
            context_id: 0,
            opnum,
            object: None,
            stub,
            auth_verifier: &[],
        };
        self.stream
            .write_all(&request.to_pdu(PfcFlags::SINGLE, call_id))?;
        self.answer(call_id, |_, body, _| Ok(body.to_vec()))
    }

    /// A call sealed with `sealer` (MS-RPCE 2.2.2.11: the stub padded to 16 bytes, then the
    /// sec_trailer and the NL_AUTH_SHA2_SIGNATURE).
    fn sealed_call(
        &mut self,
        sealer: &mut Sealer,
        opnum: u16,
        stub: &[u8],
    ) -> Result<Vec<u8>, NetlogonError> {
        let call_id = self.next_call_id();
        let pad = stub.len().wrapping_neg() & 15;
        let mut pdu = Vec::with_capacity(REQUEST_HEADER_LEN + stub.len() + 15 + 64);
        pdu.extend_from_slice(&[0; HEADER_LEN]);
        pdu.extend_from_slice(&u32::try_from(stub.len()).unwrap_or(0).to_le_bytes());
        pdu.extend_from_slice(&0u16.to_le_bytes());
        pdu.extend_from_slice(&opnum.to_le_bytes());
        pdu.extend_from_slice(stub);
        pdu.resize(pdu.len() + pad, 0);
        let mut confounder = [0u8; 8];
        getrandom::fill(&mut confounder).map_err(|_| NetlogonError::Protocol("no random"))?;
        let signature = match pdu.get_mut(REQUEST_HEADER_LEN..) {
            Some(payload) => sealer.seal(payload, confounder),
            None => return Err(NetlogonError::Protocol("request")),
        };
        if pdu.len() + AUTH_TRAILER_LEN + SIGNATURE_LEN > usize::from(MAX_FRAG) {
            return Err(NetlogonError::Protocol("request larger than a fragment"));
        }
        write_header(&mut pdu, PacketType::REQUEST, call_id);
        append_verifier(&mut pdu, u8::try_from(pad).unwrap_or(0), &signature);
        self.stream.write_all(&pdu)?;
        self.answer(call_id, |header, body, verifier| {
            let pad = usize::from(*verifier.get(2).unwrap_or(&0));
            let token = verifier.get(AUTH_TRAILER_LEN..).unwrap_or_default();
            if header.auth_length == 0 || verifier.first() != Some(&AUTHN_NETLOGON) {
                return Err(NetlogonError::Protocol("unsealed answer"));
            }
            let mut payload = body.to_vec();
            sealer.unseal(&mut payload, token)?;
            let len = payload
                .len()
                .checked_sub(pad)
                .ok_or(NetlogonError::Protocol("auth_pad_length"))?;
            payload.truncate(len);
            Ok(payload)
        })
    }

    /// Reads the answer to `call_id`, fragment by fragment, each fragment's stub (and its
    /// auth_verifier) given to `open`; a fault ends the call.
    fn answer(
        &mut self,
        call_id: u32,
        mut open: impl FnMut(&Header, &[u8], &[u8]) -> Result<Vec<u8>, NetlogonError>,
    ) -> Result<Vec<u8>, NetlogonError> {
        let mut stub = Vec::new();
        loop {
            let pdu = self.receive()?;
            let header = Header::decode(&pdu)?;
            if header.call_id != call_id {
                return Err(NetlogonError::Protocol("call_id"));
            }
            if header.packet_type == PacketType::FAULT {
                return Err(NetlogonError::Fault(Fault::decode(&header, &pdu)?.status));
            }
            if header.packet_type != PacketType::RESPONSE {
                return Err(NetlogonError::Protocol("PTYPE"));
            }
            let response = Response::decode(&header, &pdu)?;
            let (_, verifier) = pdu::split_auth(&header, &pdu)?;
            let part = open(&header, response.stub, verifier)?;
            if stub.len() + part.len() > MAX_ANSWER {
                return Err(NetlogonError::Protocol("answer too long"));
            }
            stub.extend_from_slice(&part);
            if header.flags.contains(PfcFlags::LAST_FRAG) {
                return Ok(stub);
            }
        }
    }

    /// One PDU: the common header, then the rest its frag_length gives.
    fn receive(&mut self) -> Result<Vec<u8>, NetlogonError> {
        let mut pdu = vec![0u8; HEADER_LEN];
        self.stream.read_exact(&mut pdu)?;
        let header = Header::decode(&pdu)?;
        if !header.is_little_endian() || usize::from(header.frag_length) < HEADER_LEN {
            return Err(NetlogonError::Protocol("header"));
        }
        pdu.resize(usize::from(header.frag_length), 0);
        self.stream
            .read_exact(pdu.get_mut(HEADER_LEN..).unwrap_or_default())?;
        Ok(pdu)
    }
}

/// Writes the common header over the first 16 bytes of a single-fragment PDU.
fn write_header(pdu: &mut [u8], packet_type: PacketType, call_id: u32) {
    let len = u16::try_from(pdu.len()).unwrap_or(u16::MAX);
    let header = Header::new(packet_type, PfcFlags::SINGLE, call_id, len).to_bytes();
    if let Some(dst) = pdu.get_mut(..HEADER_LEN) {
        dst.copy_from_slice(&header);
    }
}

/// Appends the sec_trailer (schannel, privacy, `pad` bytes of padding before it) and
/// `auth_value`, and sets frag_length and auth_length.
fn append_verifier(pdu: &mut Vec<u8>, pad: u8, auth_value: &[u8]) {
    pdu.extend_from_slice(&[AUTHN_NETLOGON, AUTHN_LEVEL_PRIVACY, pad, 0]);
    pdu.extend_from_slice(&AUTH_CONTEXT_ID.to_le_bytes());
    pdu.extend_from_slice(auth_value);
    let frag = u16::try_from(pdu.len()).unwrap_or(u16::MAX);
    let auth = u16::try_from(auth_value.len()).unwrap_or(u16::MAX);
    if let Some(dst) = pdu.get_mut(8..12) {
        let (frag_length, auth_length) = dst.split_at_mut(2);
        frag_length.copy_from_slice(&frag.to_le_bytes());
        auth_length.copy_from_slice(&auth.to_le_bytes());
    }
}

#[cfg(test)]
mod tests;
