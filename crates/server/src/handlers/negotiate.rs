//! NEGOTIATE: MS-SMB2 3.3.5.3.1 (the SMB1 multi-protocol upgrade) and 3.3.5.4.

use std::sync::Arc;

use smb3d_crypto::{PreauthHash, SigningAlgorithm};
use smb3d_dtyp::NtStatus;
use smb3d_smb2::Command;
use smb3d_smb2::header::{Header, HeaderFlags};
use smb3d_smb2::negotiate::{
    Capabilities, Cipher, Dialect, HashAlgorithm, NegotiateContext, NegotiateContextType,
    NegotiateRequest, NegotiateResponse, SecurityMode, SigningAlgorithm as WireSigning,
};
use smb3d_smb2::smb1::Smb1Negotiate;
use smb3d_wire::{FileTime, Guid};

use crate::request::malformed;
use crate::state::connection::response::ResponseFrame;
use crate::state::connection::{Connection, Disconnect, Negotiated};
use crate::state::server::{EncryptionPolicy, Settings};

/// Salt length in the server's preauth integrity context.
const SALT_LEN: usize = 32;
/// The SMB2 0x02FF and 2.0.2 limits on a single read, write or transact without LARGE_MTU.
const SMALL_MTU: u32 = 65536;

/// MS-SMB2 3.3.5.3.1. Returns whether the client must now send an SMB2 NEGOTIATE (the wildcard
/// answer); a 2.0.2-only client is negotiated by this exchange.
pub(crate) fn smb1_upgrade(
    conn: &Arc<Connection>,
    offer: &Smb1Negotiate,
    out: &mut ResponseFrame,
) -> Result<bool, Disconnect> {
    let settings = &conn.server.settings;
    let (dialect, upgraded) = if offer.smb2_wildcard && settings.max_dialect >= Dialect::SMB2_1.0 {
        (Dialect::SMB2_WILDCARD, true)
    } else if offer.smb2_002 && settings.min_dialect <= Dialect::SMB2_0_2.0 {
        (Dialect::SMB2_0_2, false)
    } else {
        return Err(Disconnect("SMB1 negotiate without a usable SMB2 dialect"));
    };
    let request = Header {
        command: Command::NEGOTIATE,
        credits: 1,
        ..Header::default()
    };
    let start = out.begin();
    let init_token = smb3d_auth::server_initial_token_for(conn.server.settings.kerberos.is_some());
    let capabilities = server_capabilities(dialect, false, Capabilities::empty());
    response(conn, dialect, capabilities, &init_token, Vec::new())
        .encode(&mut out.body_writer(start));
    let credits = conn.grant_credits(1);
    out.end(start, &request, NtStatus::SUCCESS, credits, 0, 0, 0, None);
    if !upgraded {
        conn.set_negotiated(Negotiated {
            dialect: dialect.0,
            client_guid: Guid::ZERO,
            client_capabilities: 0,
            client_security_mode: 0,
            client_dialects: vec![dialect.0],
            server_capabilities: capabilities.0,
            server_security_mode: security_mode(conn).0,
            signing_algorithm: SigningAlgorithm::HmacSha256,
            cipher: None,
            preauth: None,
            posix: false,
        });
    }
    Ok(upgraded)
}

/// MS-SMB2 3.3.5.4.
pub(crate) fn handle(
    conn: &Arc<Connection>,
    hdr: &Header,
    pdu: &[u8],
    out: &mut ResponseFrame,
) -> Result<(), Disconnect> {
    let start = out.begin();
    let (status, negotiated) = match negotiate(conn, hdr, pdu, out, start) {
        Ok(negotiated) => (NtStatus::SUCCESS, Some(negotiated)),
        Err(status) => {
            out.error_body(start, 0, &[]);
            (status, None)
        }
    };
    let credits = conn.grant_credits(hdr.credits);
    out.end(start, hdr, status, credits, 0, 0, 0, None);
    if let Some(mut negotiated) = negotiated {
        // Connection.PreauthIntegrityHashValue covers the request and this response.
        if let Some(preauth) = negotiated.preauth.as_mut() {
            preauth.update(out.message(start));
        }
        conn.set_negotiated(negotiated);
    }
    Ok(())
}

fn negotiate(
    conn: &Arc<Connection>,
    hdr: &Header,
    pdu: &[u8],
    out: &mut ResponseFrame,
    start: usize,
) -> Result<Negotiated, NtStatus> {
    // 3.3.5.2.4: a signed NEGOTIATE is invalid.
    if hdr.flags.contains(HeaderFlags::SIGNED) {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    let req = NegotiateRequest::decode(pdu).map_err(malformed)?;
    if req.dialects.is_empty() {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    let settings = &conn.server.settings;
    let dialect = select_dialect(settings, &req.dialects)?;
    let offers_encryption = settings.encryption != EncryptionPolicy::Off;
    let mut salt = [0u8; SALT_LEN];
    let smb311 = if dialect == Dialect::SMB3_1_1 {
        Some(negotiate_311(conn, &req, pdu, &mut salt)?)
    } else {
        None
    };
    let posix = smb311.as_ref().is_some_and(|agreed| agreed.posix);
    let (cipher, signing, preauth, response_contexts) = match smb311 {
        Some(agreed) => (
            agreed.cipher,
            agreed.signing,
            Some(agreed.preauth),
            agreed.contexts,
        ),
        // 3.0 and 3.0.2 have one cipher, AES-128-CCM, used when the client says it can encrypt.
        None => (
            (offers_encryption
                && matches!(dialect, Dialect::SMB3_0 | Dialect::SMB3_0_2)
                && req.capabilities.contains(Capabilities::ENCRYPTION))
            .then_some(smb3d_crypto::Cipher::Aes128Ccm),
            default_signing(dialect),
            None,
            Vec::new(),
        ),
    };
    let smb3 = smb3_capabilities(conn, req.capabilities);
    let capabilities = server_capabilities(dialect, cipher.is_some(), smb3);
    let init_token = smb3d_auth::server_initial_token_for(conn.server.settings.kerberos.is_some());
    response(conn, dialect, capabilities, &init_token, response_contexts)
        .encode(&mut out.body_writer(start));
    Ok(Negotiated {
        dialect: dialect.0,
        client_guid: if dialect == Dialect::SMB2_0_2 {
            Guid::ZERO
        } else {
            req.client_guid
        },
        client_capabilities: req.capabilities.0,
        client_security_mode: req.security_mode.0,
        client_dialects: req.dialects.iter().map(|d| d.0).collect(),
        server_capabilities: capabilities.0,
        server_security_mode: security_mode(conn).0,
        signing_algorithm: signing,
        cipher,
        preauth,
        posix,
    })
}

/// The highest dialect both the client and the server's configured range have.
fn select_dialect(settings: &Settings, offered: &[Dialect]) -> Result<Dialect, NtStatus> {
    offered
        .iter()
        .copied()
        .filter(|d| {
            *d != Dialect::SMB2_WILDCARD
                && (settings.min_dialect..=settings.max_dialect).contains(&d.0)
        })
        .filter(|d| {
            [
                Dialect::SMB2_0_2,
                Dialect::SMB2_1,
                Dialect::SMB3_0,
                Dialect::SMB3_0_2,
                Dialect::SMB3_1_1,
            ]
            .contains(d)
        })
        .max()
        .ok_or(NtStatus::NOT_SUPPORTED)
}

/// The signing algorithm of a dialect without a signing context.
fn default_signing(dialect: Dialect) -> SigningAlgorithm {
    if dialect.is_smb3() {
        SigningAlgorithm::AesCmac
    } else {
        SigningAlgorithm::HmacSha256
    }
}

/// What a 3.1.1 NEGOTIATE settles through its contexts.
struct Agreed311<'s> {
    /// The response's contexts: preauth integrity, and encryption and signing when asked.
    contexts: Vec<NegotiateContext<'s>>,
    cipher: Option<smb3d_crypto::Cipher>,
    signing: SigningAlgorithm,
    /// Connection.PreauthIntegrityHashValue, with the request.
    preauth: PreauthHash,
    /// The SMB3 POSIX extensions were offered and are answered.
    posix: bool,
}

/// The 3.1.1 contexts (MS-SMB2 3.3.5.4): a new salt, the cipher and the signing algorithm.
fn negotiate_311<'s>(
    conn: &Connection,
    req: &NegotiateRequest<'_>,
    pdu: &[u8],
    salt: &'s mut [u8; SALT_LEN],
) -> Result<Agreed311<'s>, NtStatus> {
    let settings = &conn.server.settings;
    let choice = negotiate_contexts(&req.contexts)?;
    conn.server.crypto.fill_random(salt);
    let mut contexts = vec![NegotiateContext::PreauthIntegrity {
        hash_algorithms: vec![HashAlgorithm::SHA512],
        salt: &*salt,
    }];
    let mut cipher = None;
    if let Some(offered) = &choice.client_ciphers {
        // The server's preference decides among the ciphers both sides have; none in
        // common (or encryption off) is answered with cipher 0 (MS-SMB2 3.3.5.4).
        let offers_encryption = settings.encryption != EncryptionPolicy::Off;
        cipher = settings
            .ciphers
            .iter()
            .copied()
            .filter(|_| offers_encryption)
            .find(|c| offered.contains(&Cipher(c.id())));
        contexts.push(NegotiateContext::Encryption {
            ciphers: vec![Cipher(cipher.map_or(0, |c| c.id()))],
        });
    }
    let mut signing = default_signing(Dialect::SMB3_1_1);
    if let Some(algorithm) = choice.signing {
        contexts.push(NegotiateContext::Signing {
            algorithms: vec![algorithm.0],
        });
        signing = algorithm.1;
    }
    let posix = choice.posix && conn.server.shares().iter().any(|share| share.posix);
    if posix {
        contexts.push(NegotiateContext::Unknown {
            context_type: smb3d_smb2::posix::NEGOTIATE_CONTEXT_TYPE,
            data: &smb3d_smb2::posix::TAG,
        });
    }
    let mut preauth = PreauthHash::new();
    preauth.update(pdu);
    Ok(Agreed311 {
        contexts,
        cipher,
        signing,
        preauth,
        posix,
    })
}

/// MS-SMB2 3.3.5.4: multichannel, directory leasing and persistent handles go to a 3.x client
/// whose Capabilities ask for them, when the server offers them (persistent handles when it
/// keeps them and serves a continuous-availability share). Clients that do not ask may not
/// expect them: impacket fails every CREATE in a share root when offered directory leasing.
fn smb3_capabilities(conn: &Connection, asked: Capabilities) -> Capabilities {
    let mut smb3 = Capabilities::empty();
    if conn.server.settings.multichannel {
        smb3 |= Capabilities::MULTI_CHANNEL;
    }
    if conn.server.settings.directory_leases {
        smb3 |= Capabilities::DIRECTORY_LEASING;
    }
    if asked.contains(Capabilities::PERSISTENT_HANDLES) && conn.server.offers_persistent_handles() {
        smb3 |= Capabilities::PERSISTENT_HANDLES;
    }
    smb3 & asked
}

struct ContextChoice {
    /// The ciphers of the client's encryption context, if it sent one.
    client_ciphers: Option<Vec<Cipher>>,
    signing: Option<(WireSigning, SigningAlgorithm)>,
    /// SMB3_POSIX_EXTENSIONS_AVAILABLE with the version this server knows.
    posix: bool,
}

/// The 3.1.1 negotiate-context rules of MS-SMB2 3.3.5.4.
fn negotiate_contexts(contexts: &[NegotiateContext<'_>]) -> Result<ContextChoice, NtStatus> {
    let count = |t: NegotiateContextType| contexts.iter().filter(|c| c.context_type() == t).count();
    for unique in [
        NegotiateContextType::PREAUTH_INTEGRITY_CAPABILITIES,
        NegotiateContextType::ENCRYPTION_CAPABILITIES,
        NegotiateContextType::COMPRESSION_CAPABILITIES,
        NegotiateContextType::RDMA_TRANSFORM_CAPABILITIES,
        NegotiateContextType::SIGNING_CAPABILITIES,
        NegotiateContextType::TRANSPORT_CAPABILITIES,
    ] {
        if count(unique) > 1 {
            return Err(NtStatus::INVALID_PARAMETER);
        }
    }
    let mut choice = ContextChoice {
        client_ciphers: None,
        signing: None,
        posix: false,
    };
    let mut preauth_seen = false;
    for context in contexts {
        match context {
            NegotiateContext::PreauthIntegrity {
                hash_algorithms, ..
            } => {
                if hash_algorithms.is_empty() {
                    return Err(NtStatus::INVALID_PARAMETER);
                }
                if !hash_algorithms.contains(&HashAlgorithm::SHA512) {
                    return Err(NtStatus::SMB_NO_PREAUTH_INTEGRITY_HASH_OVERLAP);
                }
                preauth_seen = true;
            }
            NegotiateContext::Encryption { ciphers } => {
                if ciphers.is_empty() {
                    return Err(NtStatus::INVALID_PARAMETER);
                }
                choice.client_ciphers = Some(ciphers.clone());
            }
            NegotiateContext::Compression { algorithms, .. } => {
                if algorithms.is_empty() {
                    return Err(NtStatus::INVALID_PARAMETER);
                }
            }
            NegotiateContext::RdmaTransform { transform_ids } => {
                if transform_ids.is_empty() {
                    return Err(NtStatus::INVALID_PARAMETER);
                }
            }
            NegotiateContext::Signing { algorithms } => {
                if algorithms.is_empty() {
                    return Err(NtStatus::INVALID_PARAMETER);
                }
                // Server preference: AES-GMAC, then AES-CMAC, then HMAC-SHA256.
                choice.signing = [
                    (WireSigning::AES_GMAC, SigningAlgorithm::AesGmac),
                    (WireSigning::AES_CMAC, SigningAlgorithm::AesCmac),
                    (WireSigning::HMAC_SHA256, SigningAlgorithm::HmacSha256),
                ]
                .into_iter()
                .find(|(wire, _)| algorithms.contains(wire));
            }
            NegotiateContext::Unknown { context_type, data }
                if *context_type == smb3d_smb2::posix::NEGOTIATE_CONTEXT_TYPE =>
            {
                choice.posix |= *data == smb3d_smb2::posix::TAG;
            }
            NegotiateContext::NetName(_)
            | NegotiateContext::TransportCapabilities { .. }
            | NegotiateContext::Unknown { .. } => {}
        }
    }
    if !preauth_seen {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    Ok(choice)
}

/// The server's capabilities for a dialect. 3.1.1 announces encryption through its negotiate
/// context, never through SMB2_GLOBAL_CAP_ENCRYPTION (MS-SMB2 3.3.5.4); `smb3` are the
/// capabilities offered to a 3.x dialect only.
fn server_capabilities(dialect: Dialect, encrypts: bool, smb3: Capabilities) -> Capabilities {
    let mut caps = Capabilities::empty();
    if dialect.0 >= Dialect::SMB2_1.0 {
        caps |= Capabilities::LARGE_MTU | Capabilities::LEASING;
    }
    if dialect.0 >= Dialect::SMB3_0.0 {
        caps |= smb3;
    }
    if encrypts && dialect != Dialect::SMB3_1_1 {
        caps |= Capabilities::ENCRYPTION;
    }
    caps
}

fn security_mode(conn: &Connection) -> SecurityMode {
    let mut mode = SecurityMode::SIGNING_ENABLED;
    if conn.server.settings.require_signing {
        mode |= SecurityMode::SIGNING_REQUIRED;
    }
    mode
}

fn response<'a>(
    conn: &Connection,
    dialect: Dialect,
    capabilities: Capabilities,
    security_buffer: &'a [u8],
    contexts: Vec<NegotiateContext<'a>>,
) -> NegotiateResponse<'a> {
    let server = &conn.server;
    let max_io = if dialect == Dialect::SMB2_0_2 {
        SMALL_MTU
    } else {
        server.settings.max_io_size
    };
    NegotiateResponse {
        security_mode: security_mode(conn),
        dialect_revision: dialect,
        server_guid: server.guid,
        capabilities,
        max_transact_size: max_io,
        max_read_size: max_io,
        max_write_size: max_io,
        system_time: server.settings.clock.filetime(),
        server_start_time: FileTime::UNCHANGED,
        security_buffer,
        contexts,
    }
}
