//! The NDR stubs of the calls a member server makes: the endpoint mapper's ept_map (C706
//! appendix O, towers of appendix L) and Netlogon's NetrServerReqChallenge,
//! NetrServerAuthenticate3 and NetrLogonSamLogonEx (MS-NRPC 3.5.4.4.1, 3.5.4.4.2, 3.5.4.5.1).
//! Every answer is decoded through checked readers: the DC is trusted, the network is not.

use smb3d_rpc::epmapper::{FLOOR_IP, FLOOR_NCACN, FLOOR_TCP, FLOOR_UUID};
use smb3d_rpc::ndr::{NdrReader, NdrWriter};
use smb3d_rpc::pdu::SyntaxId;
use smb3d_wire::{DecodeError, Guid};

use crate::krb5::pac::{Ndr, Pac, PacError, validation_info};

/// Netlogon, 12345678-1234-abcd-ef00-01234567cffb v1.0 (MS-NRPC 2.1).
pub const NETLOGON: SyntaxId = SyntaxId {
    uuid: Guid([
        0x78, 0x56, 0x34, 0x12, 0x34, 0x12, 0xcd, 0xab, 0xef, 0x00, 0x01, 0x23, 0x45, 0x67, 0xcf,
        0xfb,
    ]),
    major: 1,
    minor: 0,
};

/// NetrServerReqChallenge.
pub const OP_REQ_CHALLENGE: u16 = 4;
/// NetrServerAuthenticate3.
pub const OP_AUTHENTICATE3: u16 = 26;
/// NetrLogonSamLogonEx.
pub const OP_SAM_LOGON_EX: u16 = 39;

/// WorkstationSecureChannel (MS-NRPC 2.2.1.3.13): a member's machine account.
const WORKSTATION_SECURE_CHANNEL: u16 = 2;
/// NetlogonNetworkTransitiveInformation (MS-NRPC 2.2.1.4.16): a challenge-response logon the
/// DC may pass on to a trusted domain.
const NETWORK_TRANSITIVE_INFORMATION: u16 = 6;
/// NetlogonValidationSamInfo2 (MS-NRPC 2.2.1.4.17): NETLOGON_VALIDATION_SAM_INFO2, which is
/// KERB_VALIDATION_INFO without the resource groups.
const VALIDATION_SAM_INFO2: u16 = 3;
/// MSV1_0_ALLOW_SERVER_TRUST_ACCOUNT | MSV1_0_ALLOW_WORKSTATION_TRUST_ACCOUNT (MS-APDS 3.1.5.2.1).
const PARAMETER_CONTROL: u32 = 0x0000_0820;

/// The most towers asked of the endpoint mapper.
const MAX_TOWERS: u32 = 4;

/// The ept_map request for `interface` over ncacn_ip_tcp (C706 appendix O: a NULL object, the
/// tower to map, a zero lookup handle, at most [`MAX_TOWERS`] answers).
pub fn ept_map_request(interface: &SyntaxId) -> Vec<u8> {
    let tower = tower(interface);
    let len = u32::try_from(tower.len()).unwrap_or(u32::MAX);
    let mut stub = Vec::new();
    let mut w = NdrWriter::with_base(&mut stub, 0);
    w.pointer(true).bytes(&[0; 16]);
    w.pointer(true).u32(len).u32(len).bytes(&tower);
    w.align(4).bytes(&[0; 20]).u32(MAX_TOWERS);
    stub
}

/// The five-floor tower of `interface`, NDR 2.0, ncacn_ip_tcp, any port, any address.
fn tower(interface: &SyntaxId) -> Vec<u8> {
    let mut t = Vec::new();
    t.extend_from_slice(&5u16.to_le_bytes());
    for syntax in [interface, &SyntaxId::NDR] {
        t.extend_from_slice(&19u16.to_le_bytes());
        t.push(FLOOR_UUID);
        t.extend_from_slice(&syntax.uuid.0);
        t.extend_from_slice(&syntax.major.to_le_bytes());
        t.extend_from_slice(&2u16.to_le_bytes());
        t.extend_from_slice(&syntax.minor.to_le_bytes());
    }
    for (id, rhs) in [
        (FLOOR_NCACN, &[0u8, 0][..]),
        (FLOOR_TCP, &[0, 0]),
        (FLOOR_IP, &[0, 0, 0, 0]),
    ] {
        t.extend_from_slice(&1u16.to_le_bytes());
        t.push(id);
        t.extend_from_slice(&u16::try_from(rhs.len()).unwrap_or(0).to_le_bytes());
        t.extend_from_slice(rhs);
    }
    t
}

/// The TCP port of the first tower in an ept_map answer, None when the mapper has none or says
/// the status is not 0.
pub fn ept_map_port(stub: &[u8]) -> Result<Option<u16>, DecodeError> {
    let mut r = NdrReader::new(stub);
    r.bytes(20, "entry_handle")?;
    let num_towers = r.u32("num_towers")?;
    let max = r.u32("towers.max_count")?;
    let offset = r.u32("towers.offset")?;
    let actual = r.array_count(4, "towers.actual_count")?;
    if offset != 0 || actual as u64 != u64::from(num_towers) || num_towers > max {
        return Err(DecodeError::invalid("towers"));
    }
    let mut present = 0usize;
    for _ in 0..actual {
        if r.pointer("tower")? {
            present += 1;
        }
    }
    let mut port = None;
    for _ in 0..present {
        let max = r.u32("tower.max_count")?;
        let len = r.u32("tower_length")?;
        if max != len {
            return Err(DecodeError::invalid("tower_length"));
        }
        let len = usize::try_from(len).map_err(|_| DecodeError::invalid("tower_length"))?;
        let octets = r.bytes(len, "tower_octet_string")?;
        if port.is_none() {
            port = tcp_port(octets)?;
        }
    }
    let status = r.u32("status")?;
    Ok(if status == 0 { port } else { None })
}

/// The TCP floor's port (big-endian, C706 appendix I) of a tower.
fn tcp_port(tower: &[u8]) -> Result<Option<u16>, DecodeError> {
    let mut r = smb3d_wire::Reader::new(tower);
    let floors = r.u16("floor_count")?;
    for _ in 0..floors {
        let lhs_len = usize::from(r.u16("lhs_length")?);
        let lhs = r.bytes(lhs_len, "lhs")?;
        let rhs_len = usize::from(r.u16("rhs_length")?);
        let rhs = r.bytes(rhs_len, "rhs")?;
        if lhs == [FLOOR_TCP] {
            let port: [u8; 2] = rhs.try_into().map_err(|_| DecodeError::invalid("port"))?;
            return Ok(Some(u16::from_be_bytes(port)));
        }
    }
    Ok(None)
}

/// NetrServerReqChallenge: the DC's name (unique), this computer's name, the client challenge.
pub fn req_challenge_request(server: &str, computer: &str, challenge: &[u8; 8]) -> Vec<u8> {
    let mut stub = Vec::new();
    let mut w = NdrWriter::with_base(&mut stub, 0);
    w.pointer(true)
        .string(server)
        .string(computer)
        .bytes(challenge);
    stub
}

/// The server challenge and the status of NetrServerReqChallenge's answer.
pub fn req_challenge_answer(stub: &[u8]) -> Result<([u8; 8], u32), DecodeError> {
    let mut r = NdrReader::new(stub);
    let challenge = r.array::<8>("ServerChallenge")?;
    Ok((challenge, r.u32("status")?))
}

/// NetrServerAuthenticate3 for the machine account `account` (`NAME$`).
pub fn authenticate3_request(
    server: &str,
    account: &str,
    computer: &str,
    credential: &[u8; 8],
    flags: u32,
) -> Vec<u8> {
    let mut stub = Vec::new();
    let mut w = NdrWriter::with_base(&mut stub, 0);
    w.pointer(true).string(server).string(account);
    w.u16(WORKSTATION_SECURE_CHANNEL).string(computer);
    w.bytes(credential).u32(flags);
    stub
}

/// NetrServerAuthenticate3's answer: the server credential, the negotiated flags, the status.
pub fn authenticate3_answer(stub: &[u8]) -> Result<([u8; 8], u32, u32), DecodeError> {
    let mut r = NdrReader::new(stub);
    let credential = r.array::<8>("ServerCredential")?;
    let flags = r.u32("NegotiateFlags")?;
    let _rid = r.u32("AccountRid")?;
    Ok((credential, flags, r.u32("status")?))
}

/// What a network logon passes to the DC: the names from the AUTHENTICATE message, the
/// challenge the server sent and the client's responses.
pub struct NetworkLogon<'a> {
    /// The user's domain as the client wrote it.
    pub domain: &'a str,
    /// The user's name.
    pub user: &'a str,
    /// The client's workstation name.
    pub workstation: &'a str,
    /// The server challenge of the CHALLENGE message.
    pub challenge: [u8; 8],
    /// NtChallengeResponse (NTLMv2: NTProofStr and the client's blob).
    pub nt_response: &'a [u8],
    /// LmChallengeResponse.
    pub lm_response: &'a [u8],
}

/// NetrLogonSamLogonEx with NETLOGON_NETWORK_INFO (MS-NRPC 2.2.1.4.6) asking for
/// NETLOGON_VALIDATION_SAM_INFO2.
pub fn sam_logon_ex_request(server: &str, computer: &str, logon: &NetworkLogon<'_>) -> Vec<u8> {
    let mut stub = Vec::new();
    let mut w = NdrWriter::with_base(&mut stub, 0);
    w.pointer(true)
        .string(server)
        .pointer(true)
        .string(computer);
    w.u16(NETWORK_TRANSITIVE_INFORMATION)
        .u16(NETWORK_TRANSITIVE_INFORMATION)
        .pointer(true);
    // NETLOGON_LOGON_IDENTITY_INFO, then the challenge and the two STRINGs.
    w.counted_string_header(Some(logon.domain), false)
        .u32(PARAMETER_CONTROL)
        .u32(0)
        .u32(0)
        .counted_string_header(Some(logon.user), false)
        .counted_string_header(Some(logon.workstation), false)
        .bytes(&logon.challenge);
    for response in [logon.nt_response, logon.lm_response] {
        let len = u16::try_from(response.len()).unwrap_or(0);
        w.u16(len).u16(len).pointer(len > 0);
    }
    w.counted_string_body(Some(logon.domain), false)
        .counted_string_body(Some(logon.user), false)
        .counted_string_body(Some(logon.workstation), false);
    for response in [logon.nt_response, logon.lm_response] {
        if let Ok(len) = u32::try_from(response.len())
            && len > 0
            && len <= u32::from(u16::MAX)
        {
            w.u32(len).u32(0).u32(len).bytes(response);
        }
    }
    w.u16(VALIDATION_SAM_INFO2).u32(0);
    stub
}

/// What the DC answered a logon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogonAnswer {
    /// The user's identity and the NTLM session key.
    Valid(Box<Pac>, [u8; 16]),
    /// The DC refused with this NTSTATUS.
    Refused(u32),
}

/// Why a DC's answer is not understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    #[error("malformed answer: {0}")]
    Malformed(&'static str),
    #[error(transparent)]
    Pac(#[from] PacError),
}

impl From<DecodeError> for AnswerError {
    fn from(e: DecodeError) -> Self {
        AnswerError::Malformed(e.field)
    }
}

/// NetrLogonSamLogonEx's answer: the validation union, Authoritative, ExtraFlags, the status.
pub fn sam_logon_ex_answer(stub: &[u8]) -> Result<LogonAnswer, AnswerError> {
    // The status is the last four bytes; a refusal carries a NULL validation.
    let status_at = stub
        .len()
        .checked_sub(4)
        .ok_or(AnswerError::Malformed("status"))?;
    let status_bytes: [u8; 4] = stub
        .get(status_at..)
        .and_then(|s| s.try_into().ok())
        .ok_or(AnswerError::Malformed("status"))?;
    let status = u32::from_le_bytes(status_bytes);
    if status != 0 {
        return Ok(LogonAnswer::Refused(status));
    }
    let mut n = Ndr::new(stub);
    let level = n.u16()?;
    if level != VALIDATION_SAM_INFO2 {
        return Err(AnswerError::Malformed("ValidationLevel"));
    }
    if n.u32()? == 0 {
        return Err(AnswerError::Malformed("ValidationInformation"));
    }
    let (pac, key) = validation_info(&mut n, false)?;
    // Exactly Authoritative (a byte), ExtraFlags (aligned to 4) and the status follow.
    let extra_flags_at = (n.pos() + 1 + 3) & !3;
    if extra_flags_at + 4 != status_at {
        return Err(AnswerError::Malformed("Authoritative"));
    }
    Ok(LogonAnswer::Valid(Box::new(pac), key))
}

#[cfg(test)]
mod tests;
