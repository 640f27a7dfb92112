//! NTLM messages (MS-NLMP 2.2.1) and their AV_PAIR lists (MS-NLMP 2.2.2.1).

use smb3d_wire::{DecodeError, FileTime, Reader, Result, Writer};

/// "NTLMSSP\0", the signature every NTLM message starts with (MS-NLMP 2.2.1).
pub const SIGNATURE: &[u8; 8] = b"NTLMSSP\0";

/// Length of the fixed part of a CHALLENGE_MESSAGE, where its payload starts.
const CHALLENGE_HEADER_LEN: usize = 56;
/// Offset of the MIC field in an AUTHENTICATE_MESSAGE (MS-NLMP 2.2.1.3).
pub const AUTHENTICATE_MIC_OFFSET: usize = 72;
/// Length of the fixed part of an AUTHENTICATE_MESSAGE that carries a MIC.
const AUTHENTICATE_HEADER_LEN: usize = AUTHENTICATE_MIC_OFFSET + 16;

smb3d_wire::open_flags! {
    /// NegotiateFlags (MS-NLMP 2.2.2.5).
    pub struct NegotiateFlags(u32) {
        UNICODE = 0x0000_0001,
        OEM = 0x0000_0002,
        REQUEST_TARGET = 0x0000_0004,
        SIGN = 0x0000_0010,
        SEAL = 0x0000_0020,
        DATAGRAM = 0x0000_0040,
        LM_KEY = 0x0000_0080,
        NTLM = 0x0000_0200,
        ANONYMOUS = 0x0000_0800,
        OEM_DOMAIN_SUPPLIED = 0x0000_1000,
        OEM_WORKSTATION_SUPPLIED = 0x0000_2000,
        ALWAYS_SIGN = 0x0000_8000,
        TARGET_TYPE_DOMAIN = 0x0001_0000,
        TARGET_TYPE_SERVER = 0x0002_0000,
        EXTENDED_SESSIONSECURITY = 0x0008_0000,
        IDENTIFY = 0x0010_0000,
        REQUEST_NON_NT_SESSION_KEY = 0x0040_0000,
        TARGET_INFO = 0x0080_0000,
        VERSION = 0x0200_0000,
        NEGOTIATE_128 = 0x2000_0000,
        KEY_EXCH = 0x4000_0000,
        NEGOTIATE_56 = 0x8000_0000,
    }
}

smb3d_wire::open_enum! {
    /// AvId of an AV_PAIR (MS-NLMP 2.2.2.1).
    pub struct AvId(u16) {
        EOL = 0,
        NB_COMPUTER_NAME = 1,
        NB_DOMAIN_NAME = 2,
        DNS_COMPUTER_NAME = 3,
        DNS_DOMAIN_NAME = 4,
        DNS_TREE_NAME = 5,
        FLAGS = 6,
        TIMESTAMP = 7,
        SINGLE_HOST = 8,
        TARGET_NAME = 9,
        CHANNEL_BINDINGS = 10,
    }
}

smb3d_wire::open_flags! {
    /// The value of an MsvAvFlags AV_PAIR (MS-NLMP 2.2.2.1).
    pub struct AvFlags(u32) {
        ACCOUNT_AUTHENTICATION_CONSTRAINED = 0x0000_0001,
        MIC_PRESENT = 0x0000_0002,
        UNTRUSTED_SPN_SOURCE = 0x0000_0004,
    }
}

/// MessageType of an NTLM message (MS-NLMP 2.2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MessageType {
    Negotiate = 1,
    Challenge = 2,
    Authenticate = 3,
}

/// The VERSION structure (MS-NLMP 2.2.2.10).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Version {
    pub major: u8,
    pub minor: u8,
    pub build: u16,
    pub ntlm_revision: u8,
}

impl Version {
    /// NTLMSSP_REVISION_W2K3, the only revision in use (MS-NLMP 2.2.2.10).
    pub const NTLM_REVISION_W2K3: u8 = 0x0f;

    /// What the server reports: 6.1 build 0, as Samba does; the value is informational.
    pub const SERVER: Version = Version {
        major: 6,
        minor: 1,
        build: 0,
        ntlm_revision: Self::NTLM_REVISION_W2K3,
    };

    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        let major = r.u8("Version")?;
        let minor = r.u8("Version")?;
        let build = r.u16("Version")?;
        r.skip(3, "Version")?;
        let ntlm_revision = r.u8("Version")?;
        Ok(Self {
            major,
            minor,
            build,
            ntlm_revision,
        })
    }

    fn encode(&self, w: &mut Writer<'_>) {
        w.u8(self.major)
            .u8(self.minor)
            .u16(self.build)
            .zeros(3)
            .u8(self.ntlm_revision);
    }
}

/// Reads the signature and message type.
fn decode_header(r: &mut Reader<'_>, expected: MessageType) -> Result<()> {
    if r.bytes(8, "Signature")? != SIGNATURE {
        return Err(DecodeError::invalid("Signature"));
    }
    if r.u32("MessageType")? != expected as u32 {
        return Err(DecodeError::invalid("MessageType"));
    }
    Ok(())
}

/// Reads a (Len, MaxLen, BufferOffset) field triple and resolves it within the message.
fn decode_payload<'a>(r: &mut Reader<'a>, field: &'static str) -> Result<&'a [u8]> {
    let len = r.u16(field)?;
    let _max_len = r.u16(field)?;
    let offset = r.u32(field)?;
    r.buffer_at(offset as usize, usize::from(len), field)
}

/// The length of a payload field as the 16-bit Len field, or an error for one too long to send.
fn payload_len(bytes: &[u8], field: &'static str) -> Result<u16> {
    u16::try_from(bytes.len())
        .map_err(|_| DecodeError::new(field, smb3d_wire::DecodeErrorKind::TooLong))
}

/// NEGOTIATE_MESSAGE (MS-NLMP 2.2.1.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NegotiateMessage<'a> {
    pub flags: NegotiateFlags,
    /// OEM domain name, meaningful only with OEM_DOMAIN_SUPPLIED.
    pub domain: &'a [u8],
    /// OEM workstation name, meaningful only with OEM_WORKSTATION_SUPPLIED.
    pub workstation: &'a [u8],
    pub version: Option<Version>,
}

impl<'a> NegotiateMessage<'a> {
    /// Decodes a NEGOTIATE_MESSAGE; every buffer is checked against the message.
    pub fn decode(msg: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(msg);
        decode_header(&mut r, MessageType::Negotiate)?;
        let flags = NegotiateFlags(r.u32("NegotiateFlags")?);
        // Old clients end the message after the flags (MS-NLMP 2.2.1.1 allows no payload).
        if r.is_empty() {
            return Ok(Self {
                flags,
                domain: &[],
                workstation: &[],
                version: None,
            });
        }
        let domain = decode_payload(&mut r, "DomainNameFields")?;
        let workstation = decode_payload(&mut r, "WorkstationFields")?;
        let version = if flags.contains(NegotiateFlags::VERSION) {
            Some(Version::decode(&mut r)?)
        } else {
            None
        };
        Ok(Self {
            flags,
            domain,
            workstation,
            version,
        })
    }

    /// Encodes, with the payload after the fixed fields. Fails when a buffer exceeds the
    /// 16-bit length fields.
    pub fn encode(&self) -> Result<Vec<u8>> {
        const FIXED_LEN: u32 = 40;
        let domain_len = payload_len(self.domain, "DomainName")?;
        let workstation_len = payload_len(self.workstation, "Workstation")?;
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        w.bytes(SIGNATURE)
            .u32(MessageType::Negotiate as u32)
            .u32(self.flags.bits());
        w.u16(domain_len).u16(domain_len).u32(FIXED_LEN);
        w.u16(workstation_len)
            .u16(workstation_len)
            .u32(FIXED_LEN + u32::from(domain_len));
        match self.version {
            Some(v) => v.encode(&mut w),
            None => {
                w.zeros(8);
            }
        }
        w.bytes(self.domain).bytes(self.workstation);
        Ok(out)
    }
}

/// CHALLENGE_MESSAGE (MS-NLMP 2.2.1.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChallengeMessage<'a> {
    /// The target name, in the encoding the flags select (UTF-16LE with UNICODE).
    pub target_name: &'a [u8],
    pub flags: NegotiateFlags,
    pub server_challenge: [u8; 8],
    /// An encoded AV_PAIR list.
    pub target_info: &'a [u8],
    pub version: Option<Version>,
}

impl<'a> ChallengeMessage<'a> {
    /// Decodes a CHALLENGE_MESSAGE.
    pub fn decode(msg: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(msg);
        decode_header(&mut r, MessageType::Challenge)?;
        let target_name = decode_payload(&mut r, "TargetNameFields")?;
        let flags = NegotiateFlags(r.u32("NegotiateFlags")?);
        let server_challenge = r.array("ServerChallenge")?;
        r.skip(8, "Reserved")?;
        let target_info = decode_payload(&mut r, "TargetInfoFields")?;
        let version = if flags.contains(NegotiateFlags::VERSION) {
            Some(Version::decode(&mut r)?)
        } else {
            None
        };
        Ok(Self {
            target_name,
            flags,
            server_challenge,
            target_info,
            version,
        })
    }

    /// Encodes with the fixed 56-byte header, then TargetName, then TargetInfo, as Windows and
    /// Samba lay it out. Fails when a buffer exceeds the 16-bit length fields.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let name_len = payload_len(self.target_name, "TargetName")?;
        let info_len = payload_len(self.target_info, "TargetInfo")?;
        let name_offset = CHALLENGE_HEADER_LEN as u32;
        let info_offset = name_offset + u32::from(name_len);
        let mut out = Vec::with_capacity(
            CHALLENGE_HEADER_LEN + self.target_name.len() + self.target_info.len(),
        );
        let mut w = Writer::new(&mut out);
        w.bytes(SIGNATURE).u32(MessageType::Challenge as u32);
        w.u16(name_len).u16(name_len).u32(name_offset);
        w.u32(self.flags.bits())
            .bytes(&self.server_challenge)
            .zeros(8);
        w.u16(info_len).u16(info_len).u32(info_offset);
        match self.version {
            Some(v) => v.encode(&mut w),
            None => {
                w.zeros(8);
            }
        }
        w.bytes(self.target_name).bytes(self.target_info);
        Ok(out)
    }
}

/// AUTHENTICATE_MESSAGE (MS-NLMP 2.2.1.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthenticateMessage<'a> {
    pub lm_challenge_response: &'a [u8],
    pub nt_challenge_response: &'a [u8],
    /// The user's domain, UTF-16LE with UNICODE.
    pub domain: &'a [u8],
    /// The user name, UTF-16LE with UNICODE.
    pub user: &'a [u8],
    pub workstation: &'a [u8],
    pub encrypted_random_session_key: &'a [u8],
    pub flags: NegotiateFlags,
    pub version: Option<Version>,
    /// The 16 bytes where the MIC sits when the NTLMv2 response says one is present (None when
    /// the payload starts before them, as in messages from clients that send no MIC).
    pub mic: Option<[u8; 16]>,
}

impl<'a> AuthenticateMessage<'a> {
    /// Decodes an AUTHENTICATE_MESSAGE; every buffer is checked against the message.
    pub fn decode(msg: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(msg);
        decode_header(&mut r, MessageType::Authenticate)?;
        let mut payload_start = usize::MAX;
        let mut field = |r: &mut Reader<'a>, name: &'static str| -> Result<&'a [u8]> {
            let mut peek = r.clone();
            peek.skip(4, name)?;
            let offset = peek.u32(name)? as usize;
            let bytes = decode_payload(r, name)?;
            if !bytes.is_empty() {
                payload_start = payload_start.min(offset);
            }
            Ok(bytes)
        };
        let lm_challenge_response = field(&mut r, "LmChallengeResponseFields")?;
        let nt_challenge_response = field(&mut r, "NtChallengeResponseFields")?;
        let domain = field(&mut r, "DomainNameFields")?;
        let user = field(&mut r, "UserNameFields")?;
        let workstation = field(&mut r, "WorkstationFields")?;
        let encrypted_random_session_key = field(&mut r, "EncryptedRandomSessionKeyFields")?;
        let flags = NegotiateFlags(r.u32("NegotiateFlags")?);
        let version = if flags.contains(NegotiateFlags::VERSION) && payload_start >= 72 {
            Some(Version::decode(&mut r)?)
        } else {
            None
        };
        let mic = if payload_start >= AUTHENTICATE_HEADER_LEN {
            Reader::new(msg)
                .buffer_at(AUTHENTICATE_MIC_OFFSET, 16, "MIC")
                .ok()
                .and_then(|b| b.try_into().ok())
        } else {
            None
        };
        Ok(Self {
            lm_challenge_response,
            nt_challenge_response,
            domain,
            user,
            workstation,
            encrypted_random_session_key,
            flags,
            version,
            mic,
        })
    }

    /// Encodes with a MIC field (zero when `mic` is None) and the payload in field order.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let parts: [(&[u8], &'static str); 6] = [
            (self.lm_challenge_response, "LmChallengeResponse"),
            (self.nt_challenge_response, "NtChallengeResponse"),
            (self.domain, "DomainName"),
            (self.user, "UserName"),
            (self.workstation, "Workstation"),
            (
                self.encrypted_random_session_key,
                "EncryptedRandomSessionKey",
            ),
        ];
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        w.bytes(SIGNATURE).u32(MessageType::Authenticate as u32);
        let mut offset = AUTHENTICATE_HEADER_LEN as u32;
        for (bytes, name) in parts {
            let len = payload_len(bytes, name)?;
            w.u16(len).u16(len).u32(offset);
            offset += u32::from(len);
        }
        w.u32(self.flags.bits());
        match self.version {
            Some(v) => v.encode(&mut w),
            None => {
                w.zeros(8);
            }
        }
        w.bytes(&self.mic.unwrap_or_default());
        for (bytes, _) in parts {
            w.bytes(bytes);
        }
        Ok(out)
    }
}

/// Iterates over an AV_PAIR list (MS-NLMP 2.2.2.1) up to MsvAvEOL. Each item is the AvId and
/// its value; a pair running past the list, or a list without MsvAvEOL, yields an error.
#[derive(Clone, Debug)]
pub struct AvPairs<'a> {
    r: Reader<'a>,
    done: bool,
}

impl<'a> AvPairs<'a> {
    /// Iterates over `list`.
    pub const fn new(list: &'a [u8]) -> Self {
        Self {
            r: Reader::new(list),
            done: false,
        }
    }

    /// The value of the first pair with `id`.
    pub fn find(list: &'a [u8], id: AvId) -> Result<Option<&'a [u8]>> {
        for pair in Self::new(list) {
            let (pair_id, value) = pair?;
            if pair_id == id {
                return Ok(Some(value));
            }
        }
        Ok(None)
    }
}

impl<'a> Iterator for AvPairs<'a> {
    type Item = Result<(AvId, &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut item = || -> Result<Option<(AvId, &'a [u8])>> {
            let id = AvId(self.r.u16("AvId")?);
            let len = self.r.u16("AvLen")?;
            let value = self.r.bytes(usize::from(len), "AV_PAIR Value")?;
            Ok((id != AvId::EOL).then_some((id, value)))
        };
        match item() {
            Ok(Some(pair)) => Some(Ok(pair)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Builds an AV_PAIR list; [`AvPairWriter::finish`] appends MsvAvEOL.
#[derive(Debug, Default)]
pub struct AvPairWriter {
    out: Vec<u8>,
}

impl AvPairWriter {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a pair; fails when the value exceeds the 16-bit AvLen.
    pub fn pair(&mut self, id: AvId, value: &[u8]) -> Result<&mut Self> {
        let len = payload_len(value, "AvLen")?;
        Writer::new(&mut self.out).u16(id.0).u16(len).bytes(value);
        Ok(self)
    }

    /// Appends a pair whose value is `s` in UTF-16LE.
    pub fn utf16(&mut self, id: AvId, s: &str) -> Result<&mut Self> {
        let mut value = Vec::with_capacity(smb3d_wire::utf16le_len(s));
        smb3d_wire::encode_utf16le(s, &mut value);
        self.pair(id, &value)
    }

    /// Appends an MsvAvTimestamp pair.
    pub fn timestamp(&mut self, time: FileTime) -> Result<&mut Self> {
        self.pair(AvId::TIMESTAMP, &time.0.to_le_bytes())
    }

    /// Appends MsvAvEOL and returns the list.
    pub fn finish(mut self) -> Vec<u8> {
        Writer::new(&mut self.out).u32(0);
        self.out
    }
}
