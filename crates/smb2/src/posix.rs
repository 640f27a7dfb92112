//! The SMB3 POSIX extensions' parts of NEGOTIATE and CREATE (the published "SMB3 POSIX
//! Extensions", extending MS-SMB2 2.2.3.1 and 2.2.13.2):
//!
//! * SMB3_POSIX_EXTENSIONS_AVAILABLE (negotiate context type 0x0100): the client offers, and
//!   the server answers, a 16-byte blob naming the version, [`TAG`];
//! * SMB2_CREATE_POSIX (the create context named by the same 16 bytes): the request holds the
//!   POSIX mode (u32) for a new file; the response holds what `smb3d_fscc::posix::PosixCcInfo`
//!   lays out.

use smb3d_wire::{DecodeError, DecodeErrorKind, Reader, Writer};

use crate::negotiate::NegotiateContextType;
use crate::util::len32;

/// The negotiate context type of SMB3_POSIX_EXTENSIONS_AVAILABLE (MS-SMB2 reserves 0x0100 for
/// it).
pub const NEGOTIATE_CONTEXT_TYPE: NegotiateContextType = NegotiateContextType::CONTEXTTYPE_RESERVED;

/// 93AD2550-9CB4-11E7-B423-83DE968BCD7C, as its bytes go on the wire: the negotiate context's
/// data and the create context's name.
pub const TAG: [u8; 16] = [
    0x93, 0xAD, 0x25, 0x50, 0x9C, 0xB4, 0x11, 0xE7, 0xB4, 0x23, 0x83, 0xDE, 0x96, 0x8B, 0xCD, 0x7C,
];

/// The data of a POSIX create context request: the mode a created file gets (permission bits;
/// a file type there is ignored, the disposition and options say what is made).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PosixCreateRequest {
    pub mode: u32,
}

impl PosixCreateRequest {
    /// Decodes the data, which is exactly the 4-byte mode.
    pub fn decode(data: &[u8]) -> Result<Self, DecodeError> {
        if data.len() != 4 {
            return Err(DecodeError::new(
                "SMB2_CREATE_POSIX",
                DecodeErrorKind::BadSize {
                    expected: 4,
                    got: len32(data.len()),
                },
            ));
        }
        Ok(Self {
            mode: Reader::new(data).u32("SMB2_CREATE_POSIX.Mode")?,
        })
    }

    /// Writes the data.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u32(self.mode);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::negotiate::{NegotiateContext, decode_contexts};

    #[test]
    fn the_tag_is_the_guid_in_wire_order() {
        let text = "93AD25509CB411E7B42383DE968BCD7C";
        let from_text: Vec<u8> = (0..16)
            .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        assert_eq!(from_text, TAG);
    }

    /// A NEGOTIATE body whose only context is SMB3_POSIX_EXTENSIONS_AVAILABLE: ContextType
    /// 0x0100, DataLength 16, Reserved, the tag.
    #[test]
    fn the_negotiate_context_decodes_as_its_type_with_the_tag() {
        // A header and 8 bytes of body before the context.
        let mut pdu = vec![0u8; 64 + 8];
        pdu.extend_from_slice(&[0x00, 0x01, 16, 0, 0, 0, 0, 0]);
        pdu.extend_from_slice(&TAG);
        let contexts = decode_contexts(&pdu, 72, 1).unwrap();
        assert_eq!(
            contexts,
            [NegotiateContext::Unknown {
                context_type: NEGOTIATE_CONTEXT_TYPE,
                data: &TAG,
            }]
        );
        let mut again = Vec::new();
        contexts[0].encode(&mut Writer::new(&mut again));
        assert_eq!(again, pdu[72..]);
    }

    #[test]
    fn the_create_request_is_exactly_a_mode() {
        assert_eq!(
            PosixCreateRequest::decode(&[0xA0, 0x01, 0, 0]).unwrap(),
            PosixCreateRequest { mode: 0o640 }
        );
        let mut buf = Vec::new();
        PosixCreateRequest { mode: 0o640 }.encode(&mut Writer::new(&mut buf));
        assert_eq!(buf, [0xA0, 0x01, 0, 0]);
        for bad in [&[][..], &[0xA0, 0x01, 0], &[0xA0, 0x01, 0, 0, 0]] {
            assert!(PosixCreateRequest::decode(bad).is_err());
        }
    }
}
