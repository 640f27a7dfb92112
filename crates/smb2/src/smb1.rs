//! The one SMB1 message an SMB2 server accepts: a multi-protocol SMB_COM_NEGOTIATE (MS-CIFS
//! 2.2.4.52.1) whose dialect list may offer SMB2 (MS-SMB2 3.3.5.3.1).

use smb3d_wire::{DecodeError, Reader};

use crate::header::SMB1_PROTOCOL_ID;

/// SMB_COM_NEGOTIATE.
const SMB_COM_NEGOTIATE: u8 = 0x72;
/// Length of the SMB1 header (MS-CIFS 2.2.3.1).
const SMB1_HEADER_LEN: usize = 32;
/// BufferFormat byte that precedes each dialect string.
const DIALECT_BUFFER_FORMAT: u8 = 0x02;

/// What an SMB1 NEGOTIATE offers of SMB2 (MS-SMB2 3.3.5.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Smb1Negotiate {
    /// The dialect list contains "SMB 2.002".
    pub smb2_002: bool,
    /// The dialect list contains "SMB 2.???" (any SMB2 dialect; answered with 0x02FF).
    pub smb2_wildcard: bool,
    /// How many dialect strings the request lists.
    pub dialect_count: usize,
}

impl Smb1Negotiate {
    /// Decodes an SMB1 message, which must be a NEGOTIATE with a well-formed dialect list.
    pub fn decode(msg: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(msg);
        if r.array::<4>("Protocol")? != SMB1_PROTOCOL_ID {
            return Err(DecodeError::invalid("Protocol"));
        }
        if r.u8("Command")? != SMB_COM_NEGOTIATE {
            return Err(DecodeError::invalid("Command"));
        }
        r.seek(SMB1_HEADER_LEN, "SMB1 header")?;
        if r.u8("WordCount")? != 0 {
            return Err(DecodeError::invalid("WordCount"));
        }
        let byte_count = usize::from(r.u16("ByteCount")?);
        let mut dialects = r.bytes(byte_count, "Dialects")?;
        let mut out = Self {
            smb2_002: false,
            smb2_wildcard: false,
            dialect_count: 0,
        };
        while let Some((&format, rest)) = dialects.split_first() {
            if format != DIALECT_BUFFER_FORMAT {
                return Err(DecodeError::invalid("BufferFormat"));
            }
            let nul = rest
                .iter()
                .position(|&b| b == 0)
                .ok_or(DecodeError::truncated("DialectString"))?;
            let (name, after) = rest.split_at(nul);
            match name {
                b"SMB 2.002" => out.smb2_002 = true,
                b"SMB 2.???" => out.smb2_wildcard = true,
                _ => {}
            }
            out.dialect_count += 1;
            dialects = after.get(1..).unwrap_or_default();
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::hex;
    use smb3d_wire::DecodeErrorKind;

    // smbclient --option='client min protocol=NT1' against Samba 4.17: the first packet offers
    // "NT LANMAN 1.0", "NT LM 0.12", "SMB 2.002" and "SMB 2.???".
    const MULTI_PROTOCOL: &str = "
        ff534d4272000000001843c80000000000000000000000000000feff00000000003100024e54204c414e4d414e2031
        2e3000024e54204c4d20302e31320002534d4220322e3030320002534d4220322e3f3f3f00";

    #[test]
    fn smbclient_multi_protocol_negotiate() {
        let n = Smb1Negotiate::decode(&hex(MULTI_PROTOCOL)).unwrap();
        assert_eq!(
            n,
            Smb1Negotiate {
                smb2_002: true,
                smb2_wildcard: true,
                dialect_count: 4
            }
        );
    }

    fn negotiate_with(dialects: &[u8]) -> Vec<u8> {
        let mut m = hex(MULTI_PROTOCOL)[..SMB1_HEADER_LEN + 1].to_vec();
        m.extend_from_slice(&(dialects.len() as u16).to_le_bytes());
        m.extend_from_slice(dialects);
        m
    }

    #[test]
    fn smb1_only_dialects() {
        let n = Smb1Negotiate::decode(&negotiate_with(b"\x02NT LM 0.12\0")).unwrap();
        assert!(!n.smb2_002 && !n.smb2_wildcard);
        assert_eq!(n.dialect_count, 1);
        let n = Smb1Negotiate::decode(&negotiate_with(b"")).unwrap();
        assert_eq!(n.dialect_count, 0);
    }

    #[test]
    fn rejections() {
        let good = hex(MULTI_PROTOCOL);
        let mut m = good.clone();
        m[4] = 0x73;
        assert_eq!(Smb1Negotiate::decode(&m).unwrap_err().field, "Command");
        let mut m = good.clone();
        m[0] = 0xFE;
        assert_eq!(Smb1Negotiate::decode(&m).unwrap_err().field, "Protocol");
        let mut m = good.clone();
        m[32] = 1;
        assert_eq!(Smb1Negotiate::decode(&m).unwrap_err().field, "WordCount");
        assert_eq!(
            Smb1Negotiate::decode(&good[..good.len() - 1])
                .unwrap_err()
                .kind,
            DecodeErrorKind::Truncated
        );
        let e = Smb1Negotiate::decode(&negotiate_with(b"\x02SMB 2.002")).unwrap_err();
        assert_eq!(e.field, "DialectString");
        let e = Smb1Negotiate::decode(&negotiate_with(b"\x01SMB 2.002\0")).unwrap_err();
        assert_eq!(e.field, "BufferFormat");
        assert!(Smb1Negotiate::decode(&good[..20]).is_err());
    }
}
