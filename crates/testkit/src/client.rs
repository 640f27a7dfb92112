//! A client for scenario tests over one in-memory connection: it numbers requests, keeps the
//! session and tree ids the server gave, logs on with [`NtlmClient`], and returns each
//! request's responses. Unlike the fuzz interpreter ([`crate::script`]) it lets a test look at
//! every answer, and send the next request depending on it.

use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_smb2::Command;
use smb3d_smb2::create::{CreateDisposition, CreateOptions, CreateResponse};
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::header::HeaderFlags;
use smb3d_smb2::negotiate::Dialect;
use smb3d_smb2::negotiate::{Capabilities, SecurityMode};
use smb3d_smb2::session_setup::{SessionSetupFlags, SessionSetupRequest, SessionSetupResponse};

use crate::harness::{Exchange, PASSWORD, SHARE_UNC, TestConnection, USER};
use crate::ntlm::{Logon, NtlmClient};
use crate::packet::{self, Response};
use crate::seeds;

/// What the server did with one request.
#[derive(Debug, Default)]
pub struct Reply {
    /// Every response in the frames it sent, in order.
    pub responses: Vec<Response>,
    /// Whether it ended the connection.
    pub disconnected: bool,
}

impl Reply {
    /// The status of the last response, if there was one.
    pub fn status(&self) -> Option<NtStatus> {
        self.responses.last().map(Response::status)
    }

    fn from(exchange: Exchange) -> Self {
        let responses = exchange
            .frames
            .iter()
            .filter_map(|f| packet::responses(f).ok())
            .flatten()
            .collect();
        Self {
            responses,
            disconnected: exchange.disconnected,
        }
    }
}

/// The test user's logon, bare NTLMSSP with a MIC.
pub const TEST_USER: Logon<'static> = Logon {
    user: USER,
    password: PASSWORD,
    domain: "WORKGROUP",
    anonymous: false,
    mic: true,
    spnego: false,
};

/// One client connection with its ids.
pub struct Client<'s> {
    /// The connection.
    pub conn: TestConnection<'s>,
    /// The MessageId of the next request.
    pub next_message_id: u64,
    /// The SessionId requests carry.
    pub session_id: u64,
    /// The TreeId requests carry.
    pub tree_id: u32,
    /// The PreviousSessionId SESSION_SETUP requests carry: the session a logon replaces.
    pub previous_session_id: u64,
}

impl<'s> Client<'s> {
    /// A client on `conn`, before NEGOTIATE.
    pub fn new(conn: TestConnection<'s>) -> Self {
        Self {
            conn,
            next_message_id: 0,
            session_id: 0,
            tree_id: 0,
            previous_session_id: 0,
        }
    }

    /// Sends `frame` as it is.
    pub fn send(&mut self, frame: Vec<u8>) -> Reply {
        Reply::from(self.conn.send(frame))
    }

    /// Sends `frames` as they are, as if they arrived in one read.
    pub fn send_together(&mut self, frames: Vec<Vec<u8>>) -> Reply {
        Reply::from(self.conn.send_together(frames))
    }

    /// What the server sent unasked within `time` (breaks, late answers).
    pub fn wait(&mut self, time: std::time::Duration) -> Reply {
        Reply::from(self.conn.wait(time))
    }

    /// The PDU of a request with the next MessageId and the current ids.
    pub fn pdu(&mut self, command: Command, body: &[u8], flags: HeaderFlags) -> Vec<u8> {
        let mut header =
            packet::request_header(command, self.next_message_id, self.session_id, self.tree_id);
        header.flags = flags;
        if command == Command::NEGOTIATE {
            header.credit_charge = 0;
        }
        self.next_message_id += 1;
        packet::pdu(&header, body)
    }

    /// Sends one request; `file_id`, if given, is patched into its body.
    pub fn call(&mut self, command: Command, body: &[u8], file_id: Option<FileId>) -> Reply {
        let mut body = body.to_vec();
        if let Some(file_id) = file_id {
            packet::patch_file_id(command, &mut body, file_id);
        }
        let pdu = self.pdu(command, &body, HeaderFlags::empty());
        self.send(pdu)
    }

    /// NEGOTIATE offering `dialect`.
    pub fn negotiate(&mut self, dialect: Dialect) -> Option<NtStatus> {
        let body = seeds::negotiate_body(&[dialect]);
        self.call(Command::NEGOTIATE, &body, None).status()
    }

    /// A SESSION_SETUP leg for `session_id` with `token`.
    pub fn session_setup(&mut self, session_id: u64, token: &[u8]) -> Reply {
        self.setup_leg(
            session_id,
            token,
            SessionSetupFlags::empty(),
            HeaderFlags::empty(),
        )
    }

    /// Binds this connection to the session `session_id` of another connection (both legs,
    /// signed, with SMB2_SESSION_FLAG_BINDING); the session becomes current on success.
    /// Returns the status of the last leg.
    pub fn bind(&mut self, session_id: u64, logon: &Logon<'_>) -> Option<NtStatus> {
        let status = self.both_legs(
            session_id,
            logon,
            SessionSetupFlags::BINDING,
            HeaderFlags::SIGNED,
        );
        if status == Some(NtStatus::SUCCESS) {
            self.session_id = session_id;
        }
        status
    }

    /// Re-authenticates the current session as `logon` (MS-SMB2 3.3.5.5.2), both legs with
    /// `header_flags` (SIGNED for a session that signs). Returns the status of the last leg.
    pub fn reauthenticate(
        &mut self,
        logon: &Logon<'_>,
        header_flags: HeaderFlags,
    ) -> Option<NtStatus> {
        self.both_legs(
            self.session_id,
            logon,
            SessionSetupFlags::empty(),
            header_flags,
        )
    }

    /// Both legs of an authentication of the existing session `session_id` as `logon`.
    fn both_legs(
        &mut self,
        session_id: u64,
        logon: &Logon<'_>,
        flags: SessionSetupFlags,
        header_flags: HeaderFlags,
    ) -> Option<NtStatus> {
        let (ntlm, token) = NtlmClient::start(false);
        let first = self.setup_leg(session_id, &token, flags, header_flags);
        let challenge = first.responses.last()?;
        if challenge.status() != NtStatus::MORE_PROCESSING_REQUIRED {
            return Some(challenge.status());
        }
        let response = SessionSetupResponse::decode(&challenge.pdu).ok()?;
        let finished = ntlm.authenticate(response.security_buffer, logon).ok()?;
        self.setup_leg(session_id, &finished.token, flags, header_flags)
            .status()
    }

    /// A SESSION_SETUP leg for `session_id` with `token`, the request's `flags` and the
    /// header's `header_flags`.
    pub fn setup_leg(
        &mut self,
        session_id: u64,
        token: &[u8],
        flags: SessionSetupFlags,
        header_flags: HeaderFlags,
    ) -> Reply {
        let body = packet::body(|w| {
            SessionSetupRequest {
                flags,
                security_mode: SecurityMode::SIGNING_ENABLED,
                capabilities: Capabilities::empty(),
                channel: 0,
                previous_session_id: self.previous_session_id,
                security_buffer: token,
            }
            .encode(w);
        });
        let saved = self.session_id;
        self.session_id = session_id;
        let pdu = self.pdu(Command::SESSION_SETUP, &body, header_flags);
        let reply = self.send(pdu);
        self.session_id = saved;
        reply
    }

    /// Starts a logon: the first leg, which leaves a session in progress. Returns the
    /// CHALLENGE response.
    pub fn start_logon(&mut self) -> (NtlmClient, Reply) {
        let (ntlm, token) = NtlmClient::start(false);
        let reply = self.session_setup(0, &token);
        (ntlm, reply)
    }

    /// Both legs of a logon as `logon`; the new session becomes current on success. The reply
    /// is the second leg's (without a response when the server delays it).
    pub fn login_as(&mut self, logon: &Logon<'_>) -> Reply {
        let (ntlm, first) = self.start_logon();
        self.finish_logon(&ntlm, first, logon)
    }

    /// The second leg of a logon [`Client::start_logon`] began, answering the CHALLENGE in
    /// `first`; without one, `first` is returned.
    pub fn finish_logon(&mut self, ntlm: &NtlmClient, first: Reply, logon: &Logon<'_>) -> Reply {
        let Some(challenge) = first
            .responses
            .iter()
            .find(|r| r.status() == NtStatus::MORE_PROCESSING_REQUIRED)
        else {
            return first;
        };
        let session_id = challenge.header.session_id;
        let Ok(response) = SessionSetupResponse::decode(&challenge.pdu) else {
            return first;
        };
        let Ok(finished) = ntlm.authenticate(response.security_buffer, logon) else {
            return first;
        };
        let reply = self.session_setup(session_id, &finished.token);
        if reply.status() == Some(NtStatus::SUCCESS) {
            self.session_id = session_id;
        }
        reply
    }

    /// NEGOTIATE 3.1.1, log on as the test user and connect to the share.
    pub fn connect(&mut self) -> Option<NtStatus> {
        self.negotiate(Dialect::SMB3_1_1);
        self.login_as(&TEST_USER);
        self.tree_connect(SHARE_UNC)
    }

    /// TREE_CONNECT to `path`, signed (the no-security provider takes any signature); the new
    /// tree becomes current on success.
    pub fn tree_connect(&mut self, path: &str) -> Option<NtStatus> {
        let body = seeds::tree_connect_body(path);
        let pdu = self.pdu(Command::TREE_CONNECT, &body, HeaderFlags::SIGNED);
        let reply = self.send(pdu);
        let last = reply.responses.last()?;
        if last.status() == NtStatus::SUCCESS {
            self.tree_id = last.header.tree_id;
        }
        Some(last.status())
    }

    /// Opens (or creates) `name` for every access, sharing everything.
    pub fn create(
        &mut self,
        name: &str,
        disposition: CreateDisposition,
    ) -> Result<FileId, NtStatus> {
        let body = seeds::create_body(
            name,
            AccessMask(0x001F_01FF),
            disposition,
            CreateOptions::empty(),
        );
        let reply = self.call(Command::CREATE, &body, None);
        let response = reply.responses.last().ok_or(NtStatus::UNSUCCESSFUL)?;
        if response.status() != NtStatus::SUCCESS {
            return Err(response.status());
        }
        CreateResponse::decode(&response.pdu)
            .map(|c| c.file_id)
            .map_err(|_| NtStatus::UNSUCCESSFUL)
    }
}
