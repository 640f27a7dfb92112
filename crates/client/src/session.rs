//! Connecting, NEGOTIATE (MS-SMB2 3.2.4.2.2, 3.2.5.2), NTLM logon with the 3.1.1
//! preauthentication hash and the session's keys (3.2.4.2.3, 3.2.5.3), and TREE_CONNECT.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use smb3d_crypto::{Cipher, CryptoProvider, PreauthHash, SessionKeys, SigningAlgorithm};
use smb3d_dtyp::NtStatus;
use smb3d_smb2::negotiate::{
    self, Capabilities, Dialect, HashAlgorithm, NegotiateContext, NegotiateRequest,
    NegotiateResponse, SecurityMode,
};
use smb3d_smb2::session_setup::{
    SessionFlags, SessionSetupFlags, SessionSetupRequest, SessionSetupResponse,
};
use smb3d_smb2::tree_connect::{
    ShareFlags, TreeConnectFlags, TreeConnectRequest, TreeConnectResponse,
};
use smb3d_smb2::{Command, DecodeError, Header};
use smb3d_wire::Guid;
use tokio::net::TcpStream;

use crate::conn::{Connection, Message, Negotiated, Response, SessionCrypto};
use crate::error::{Error, Result};
use crate::ntlm::{Logon, NtlmClient};
use crate::tree::Tree;

/// How a session protects its requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    /// Neither signed nor encrypted (unless the server requires it).
    Plain,
    /// Every request signed.
    Sign,
    /// Every request encrypted.
    Encrypt,
}

/// What a client offers and how it behaves.
#[derive(Clone)]
pub struct ClientConfig {
    /// The dialects offered, in order of preference (the server picks).
    pub dialects: Vec<Dialect>,
    pub protection: Protection,
    /// Signing algorithms offered in 3.1.1, preferred first.
    pub signing: Vec<SigningAlgorithm>,
    /// Ciphers offered in 3.1.1, preferred first.
    pub ciphers: Vec<Cipher>,
    /// Credits the client asks the server to let it hold.
    pub target_credits: u16,
    /// How long a request may wait for its response before the client gives up on it.
    pub request_timeout: Duration,
    /// Wrap NTLM in SPNEGO, as Windows and smbclient do.
    pub spnego: bool,
    pub crypto: Arc<dyn CryptoProvider>,
    /// Offer the SMB3 POSIX extensions (SMB3_POSIX_EXTENSIONS_AVAILABLE) in a 3.1.1
    /// NEGOTIATE, as Linux's cifs.ko does when mounted with `posix`.
    pub posix: bool,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            dialects: vec![
                Dialect::SMB3_1_1,
                Dialect::SMB3_0_2,
                Dialect::SMB3_0,
                Dialect::SMB2_1,
                Dialect::SMB2_0_2,
            ],
            protection: Protection::Plain,
            signing: vec![SigningAlgorithm::AesGmac, SigningAlgorithm::AesCmac],
            ciphers: vec![
                Cipher::Aes128Gcm,
                Cipher::Aes256Gcm,
                Cipher::Aes128Ccm,
                Cipher::Aes256Ccm,
            ],
            target_credits: 512,
            request_timeout: Duration::from_secs(60),
            spnego: true,
            crypto: smb3d_crypto::default_provider(),
            posix: false,
        }
    }
}

impl Connection {
    /// Connects over TCP and negotiates.
    pub async fn connect(addr: SocketAddr, config: &ClientConfig) -> Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (reader, writer) = stream.into_split();
        let conn = Self::from_parts(
            reader,
            writer,
            config.target_credits,
            config.request_timeout,
        );
        conn.negotiate(config).await?;
        Ok(conn)
    }

    /// NEGOTIATE offering `config`'s dialects (with the 3.1.1 contexts: SHA-512 preauth,
    /// ciphers, signing algorithms); checks the server's choice against the offer.
    pub async fn negotiate(&self, config: &ClientConfig) -> Result<Negotiated> {
        let mut salt = [0u8; 32];
        let mut guid = [0u8; 16];
        getrandom::fill(&mut salt)
            .and_then(|()| getrandom::fill(&mut guid))
            .map_err(|e| Error::Unsupported(format!("no randomness: {e}")))?;
        let offers_311 = config.dialects.contains(&Dialect::SMB3_1_1);
        let mut contexts = if offers_311 {
            vec![
                NegotiateContext::PreauthIntegrity {
                    hash_algorithms: vec![HashAlgorithm::SHA512],
                    salt: &salt,
                },
                NegotiateContext::Encryption {
                    ciphers: config
                        .ciphers
                        .iter()
                        .map(|c| negotiate::Cipher(c.id()))
                        .collect(),
                },
                NegotiateContext::Signing {
                    algorithms: config
                        .signing
                        .iter()
                        .map(|a| negotiate::SigningAlgorithm(a.id()))
                        .collect(),
                },
            ]
        } else {
            Vec::new()
        };
        if offers_311 && config.posix {
            contexts.push(NegotiateContext::Unknown {
                context_type: smb3d_smb2::posix::NEGOTIATE_CONTEXT_TYPE,
                data: &smb3d_smb2::posix::TAG,
            });
        }
        let mut capabilities = Capabilities::LARGE_MTU;
        if !config.ciphers.is_empty() {
            capabilities.insert(Capabilities::ENCRYPTION);
        }
        let request = NegotiateRequest {
            security_mode: SecurityMode::SIGNING_ENABLED,
            capabilities,
            client_guid: Guid(guid),
            dialects: config.dialects.clone(),
            contexts,
        };
        let mut message = self.message(None, false, false);
        message.keep_request = true;
        message.push(header(Command::NEGOTIATE, 0), 1, |w| request.encode(w));
        let (sent, mut responses) = self.send_keeping(message).await?;
        let response = responses
            .pop()
            .ok_or_else(|| Error::protocol("no NEGOTIATE response"))?
            .ok()?;
        let body =
            NegotiateResponse::decode(response.pdu()).map_err(malformed(Command::NEGOTIATE))?;
        let negotiated = settle(&body, config)?;
        let mut hash = PreauthHash::new();
        if negotiated.dialect == Dialect::SMB3_1_1 {
            hash.update(sent.as_deref().unwrap_or_default());
            hash.update(response.pdu());
        }
        self.set_negotiated(negotiated.clone(), hash);
        Ok(negotiated)
    }

    /// Logs on with NTLMv2 (MS-NLMP) as `logon`; the session signs or encrypts as `config`
    /// asks, or as the server requires.
    pub async fn logon(&self, logon: &Logon<'_>, config: &ClientConfig) -> Result<Session> {
        let negotiated = self
            .negotiated()
            .ok_or_else(|| Error::Unsupported("logon before NEGOTIATE".into()))?;
        let is_311 = negotiated.dialect == Dialect::SMB3_1_1;
        let mut preauth = self.preauth();
        let (ntlm, mut token) = NtlmClient::start_random(config.spnego)
            .map_err(|e| Error::Unsupported(format!("no randomness: {e}")))?;
        let mut session_id = 0;
        let mut session_key = None;
        let last = loop {
            let request = SessionSetupRequest {
                flags: SessionSetupFlags::empty(),
                security_mode: SecurityMode::SIGNING_ENABLED,
                capabilities: Capabilities::empty(),
                channel: 0,
                previous_session_id: 0,
                security_buffer: &token,
            };
            let mut message = self.message(None, false, false);
            message.keep_request = true;
            message.push(
                header(Command::SESSION_SETUP, 0).with_session(session_id),
                1,
                |w| request.encode(w),
            );
            let (sent, mut responses) = self.send_keeping(message).await?;
            let response = responses
                .pop()
                .ok_or_else(|| Error::protocol("no SESSION_SETUP response"))?;
            if is_311 {
                preauth.update(sent.as_deref().unwrap_or_default());
            }
            match response.status() {
                NtStatus::MORE_PROCESSING_REQUIRED if session_key.is_none() => {
                    if is_311 {
                        preauth.update(response.pdu());
                    }
                    session_id = response.header.session_id;
                    let body = SessionSetupResponse::decode(response.pdu())
                        .map_err(malformed(Command::SESSION_SETUP))?;
                    let finished = ntlm
                        .authenticate(body.security_buffer, logon)
                        .map_err(|_| Error::Logon("the server's CHALLENGE is unusable".into()))?;
                    token = finished.token;
                    session_key = Some(finished.session_key);
                }
                NtStatus::SUCCESS if session_key.is_some() => break response,
                status => {
                    return Err(Error::Logon(format!("SESSION_SETUP answered {status}")));
                }
            }
        };
        let session_key = session_key.unwrap_or_default();
        let body =
            SessionSetupResponse::decode(last.pdu()).map_err(malformed(Command::SESSION_SETUP))?;
        let flags = body.session_flags;
        let keys = SessionKeys::derive(
            negotiated.dialect.0,
            &session_key,
            is_311.then_some(&preauth),
            negotiated.cipher,
        );
        let crypto = &config.crypto;
        let open = |key: &[u8]| {
            negotiated
                .cipher
                .map(|c| crypto.cipher(c, key))
                .transpose()
                .map_err(|e| Error::Unsupported(format!("cipher key: {e}")))
        };
        let session = Arc::new(SessionCrypto {
            id: session_id,
            signer: crypto.signer(negotiated.signing, &keys.signing),
            encryptor: open(&keys.decryption)?,
            decryptor: open(&keys.encryption)?,
            cipher: negotiated.cipher,
        });
        let unsigned_logon = flags.intersects(SessionFlags::IS_GUEST | SessionFlags::IS_NULL);
        verify_final(&last, &session, is_311 && !unsigned_logon)?;
        let encrypt =
            config.protection == Protection::Encrypt || flags.contains(SessionFlags::ENCRYPT_DATA);
        if encrypt && negotiated.cipher.is_none() {
            return Err(Error::Unsupported(format!(
                "encryption: dialect {:?} with no cipher",
                negotiated.dialect
            )));
        }
        let sign = !encrypt
            && !unsigned_logon
            && (config.protection == Protection::Sign || negotiated.signing_required);
        self.add_session(session.clone());
        Ok(Session {
            conn: self.clone(),
            crypto: session,
            sign,
            encrypt,
            signs_tree_connect: is_311 && !unsigned_logon,
        })
    }
}

/// The final SESSION_SETUP response, signed with the new session's key (MS-SMB2 3.2.5.3.1):
/// it must verify when signed, and in 3.1.1 it must be signed.
fn verify_final(last: &Response, session: &SessionCrypto, must_be_signed: bool) -> Result<()> {
    if last.header.is_signed() {
        let mut pdu = last.pdu().to_vec();
        if !session.signer.verify(&mut pdu) {
            return Err(Error::BadSignature(Command::SESSION_SETUP));
        }
    } else if must_be_signed {
        return Err(Error::protocol(
            "the final SESSION_SETUP response is not signed",
        ));
    }
    Ok(())
}

/// The server's choices, checked against what `config` offered.
fn settle(body: &NegotiateResponse<'_>, config: &ClientConfig) -> Result<Negotiated> {
    let dialect = body.dialect_revision;
    if !config.dialects.contains(&dialect) {
        return Err(Error::protocol(format!(
            "the server chose dialect {dialect:?}, which was not offered"
        )));
    }
    let mut posix = false;
    let (signing, cipher) = if dialect == Dialect::SMB3_1_1 {
        let mut preauth_ok = false;
        let mut signing = SigningAlgorithm::AesCmac;
        let mut cipher = None;
        for context in &body.contexts {
            match context {
                NegotiateContext::PreauthIntegrity {
                    hash_algorithms, ..
                } => preauth_ok = hash_algorithms.as_slice() == [HashAlgorithm::SHA512],
                NegotiateContext::Encryption { ciphers } => {
                    cipher = match ciphers.as_slice() {
                        [c] if c.0 == 0 => None,
                        [c] => Some(
                            Cipher::from_id(c.0)
                                .filter(|c| config.ciphers.contains(c))
                                .ok_or_else(|| {
                                    Error::protocol(format!("cipher {c:?} not offered"))
                                })?,
                        ),
                        _ => return Err(Error::protocol("not one cipher in the answer")),
                    }
                }
                NegotiateContext::Signing { algorithms } => {
                    signing = match algorithms.as_slice() {
                        [a] => SigningAlgorithm::from_id(a.0)
                            .filter(|a| config.signing.contains(a))
                            .ok_or_else(|| {
                                Error::protocol(format!("signing algorithm {a:?} not offered"))
                            })?,
                        _ => {
                            return Err(Error::protocol("not one signing algorithm in the answer"));
                        }
                    }
                }
                NegotiateContext::Unknown { context_type, data }
                    if *context_type == smb3d_smb2::posix::NEGOTIATE_CONTEXT_TYPE =>
                {
                    if !config.posix || *data != smb3d_smb2::posix::TAG {
                        return Err(Error::protocol("POSIX extensions answered, not offered"));
                    }
                    posix = true;
                }
                _ => {}
            }
        }
        if !preauth_ok {
            return Err(Error::protocol(
                "3.1.1 without SHA-512 preauthentication integrity",
            ));
        }
        (signing, cipher)
    } else if dialect.is_smb3() {
        let ccm = body.capabilities.contains(Capabilities::ENCRYPTION)
            && config.ciphers.contains(&Cipher::Aes128Ccm);
        (SigningAlgorithm::AesCmac, ccm.then_some(Cipher::Aes128Ccm))
    } else {
        (SigningAlgorithm::HmacSha256, None)
    };
    Ok(Negotiated {
        dialect,
        server_guid: body.server_guid,
        max_transact: body.max_transact_size,
        max_read: body.max_read_size,
        max_write: body.max_write_size,
        large_mtu: dialect != Dialect::SMB2_0_2
            && body.capabilities.contains(Capabilities::LARGE_MTU),
        signing_required: body.security_mode.contains(SecurityMode::SIGNING_REQUIRED),
        signing,
        cipher,
        posix,
    })
}

pub(crate) fn malformed(command: Command) -> impl Fn(DecodeError) -> Error {
    move |error| Error::Malformed { command, error }
}

/// A request header for `command` on `tree_id`; the rest is filled in when sent.
pub(crate) fn header(command: Command, tree_id: u32) -> Header {
    Header {
        command,
        tree_id,
        ..Header::default()
    }
}

trait WithSession {
    fn with_session(self, id: u64) -> Self;
}

impl WithSession for Header {
    fn with_session(mut self, id: u64) -> Self {
        self.session_id = id;
        self
    }
}

/// A logged-on session. Cloning shares it.
#[derive(Clone)]
pub struct Session {
    conn: Connection,
    crypto: Arc<SessionCrypto>,
    sign: bool,
    encrypt: bool,
    signs_tree_connect: bool,
}

impl Session {
    /// The SessionId.
    pub fn id(&self) -> u64 {
        self.crypto.id
    }

    /// The connection the session is on.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Whether its requests are signed.
    pub fn signs(&self) -> bool {
        self.sign
    }

    /// Whether its requests are encrypted.
    pub fn encrypts(&self) -> bool {
        self.encrypt
    }

    /// An empty message of this session; `encrypt` for a tree that requires encryption.
    pub(crate) fn message(&self, encrypt: bool) -> Message {
        self.conn.message(
            Some(self.crypto.clone()),
            self.sign,
            self.encrypt || encrypt,
        )
    }

    /// TREE_CONNECT to `path` (`\\server\share`); in 3.1.1 signed even on a plain session
    /// (MS-SMB2 3.2.4.1.1).
    pub async fn tree_connect(&self, path: &str) -> Result<Tree> {
        let request = TreeConnectRequest {
            flags: TreeConnectFlags::empty(),
            path: path.into(),
            contexts: None,
        };
        let sign = self.sign || self.signs_tree_connect;
        let mut message = self
            .conn
            .message(Some(self.crypto.clone()), sign, self.encrypt);
        message.push(header(Command::TREE_CONNECT, 0), 1, |w| request.encode(w));
        let response = self.conn.send_one(message).await?.ok()?;
        let body = TreeConnectResponse::decode(response.pdu())
            .map_err(malformed(Command::TREE_CONNECT))?;
        let encrypt = body.share_flags.contains(ShareFlags::ENCRYPT_DATA);
        if encrypt && self.crypto.cipher.is_none() {
            return Err(Error::Unsupported(
                "the share requires encryption, which the connection did not negotiate".into(),
            ));
        }
        Ok(Tree::new(
            self.clone(),
            response.header.tree_id,
            encrypt,
            body,
        ))
    }

    /// LOGOFF; the session's keys are forgotten.
    pub async fn logoff(&self) -> Result<()> {
        let mut message = self.message(false);
        message.push(header(Command::LOGOFF, 0), 1, |w| {
            w.u16(4).u16(0);
        });
        let result = self.conn.send_one(message).await.and_then(Response::ok);
        self.conn.remove_session(self.id());
        result.map(drop)
    }
}
