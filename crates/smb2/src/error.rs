//! The error response (MS-SMB2 2.2.2) and the 3.1.1 error contexts (2.2.2.1).

use smb3d_wire::{DecodeError, DecodeErrorKind, Reader, Writer};

use crate::util::{body, len32, to_usize};

smb3d_wire::open_enum! {
    /// ErrorId of an error context (MS-SMB2 2.2.2.1).
    pub struct ErrorId(u32) {
        DEFAULT = 0x0000_0000,
        SHARE_REDIRECT = 0x7264_5253,
    }
}

/// SMB2 ERROR Response (MS-SMB2 2.2.2).
///
/// ErrorData is raw: empty for most errors, the required size (4 bytes) for
/// STATUS_BUFFER_TOO_SMALL, a symbolic link error response for STATUS_STOPPED_ON_SYMLINK, or,
/// in 3.1.1 with a nonzero `error_context_count`, a list of error contexts (see
/// [`ErrorResponse::contexts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorResponse<'a> {
    pub error_context_count: u8,
    pub error_data: &'a [u8],
}

impl ErrorResponse<'static> {
    /// The usual error body: no error data.
    pub const fn empty() -> Self {
        Self {
            error_context_count: 0,
            error_data: &[],
        }
    }
}

impl<'a> ErrorResponse<'a> {
    /// MS-SMB2 2.2.2. A missing pad byte after an empty ErrorData is tolerated.
    pub fn decode(pdu: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 9)?;
        let error_context_count = r.u8("ErrorContextCount")?;
        r.skip(1, "Reserved")?;
        let byte_count = to_usize(r.u32("ByteCount")?);
        Ok(Self {
            error_context_count,
            error_data: r.bytes(byte_count, "ErrorData")?,
        })
    }

    /// Writes the body after the header. An empty ErrorData is still one (zero) byte on the
    /// wire, as StructureSize 9 requires.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u16(9)
            .u8(self.error_context_count)
            .u8(0)
            .u32(len32(self.error_data.len()));
        if self.error_data.is_empty() {
            w.u8(0);
        } else {
            w.bytes(self.error_data);
        }
    }

    /// The required buffer size carried by a STATUS_BUFFER_TOO_SMALL response.
    pub fn required_size(&self) -> Option<u32> {
        let bytes: [u8; 4] = self.error_data.try_into().ok()?;
        Some(u32::from_le_bytes(bytes))
    }

    /// The error contexts of a 3.1.1 response (none if `error_context_count` is 0).
    pub fn contexts(&self) -> ErrorContexts<'a> {
        ErrorContexts {
            data: self.error_data,
            pos: 0,
            left: self.error_context_count,
        }
    }

    /// Writes an error body whose ErrorData is a list of error contexts, each 8-byte
    /// aligned.
    pub fn encode_contexts(w: &mut Writer<'_>, contexts: &[ErrorContext<'_>]) {
        let count = u8::try_from(contexts.len()).unwrap_or(u8::MAX);
        w.u16(9).u8(count).u8(0);
        let byte_count = w.reserve_u32();
        let start = w.offset();
        for (i, c) in contexts.iter().take(usize::from(count)).enumerate() {
            if i > 0 {
                w.align(8);
            }
            c.encode(w);
        }
        if w.offset() == start {
            w.u8(0);
        }
        let written = len32(w.offset() - start);
        w.patch_u32(byte_count, written);
    }
}

/// An SMB2 ERROR Context (MS-SMB2 2.2.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorContext<'a> {
    pub error_id: ErrorId,
    pub data: &'a [u8],
}

impl ErrorContext<'_> {
    /// Writes the context: ErrorDataLength, ErrorId, ErrorContextData.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u32(len32(self.data.len()))
            .u32(self.error_id.0)
            .bytes(self.data);
    }
}

/// Iterator over the error contexts, see [`ErrorResponse::contexts`]; stops after an error.
#[derive(Debug, Clone)]
pub struct ErrorContexts<'a> {
    data: &'a [u8],
    pos: usize,
    left: u8,
}

impl<'a> Iterator for ErrorContexts<'a> {
    type Item = Result<ErrorContext<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.left = self.left.checked_sub(1)?;
        let mut r = Reader::new(self.data);
        let item = (|| {
            // Every context but the first starts 8-byte aligned; ErrorData itself is.
            let start = self
                .pos
                .checked_next_multiple_of(8)
                .ok_or(DecodeError::new("ErrorContext", DecodeErrorKind::Overflow))?;
            r.seek(start, "ErrorContext")?;
            let len = to_usize(r.u32("ErrorDataLength")?);
            let error_id = ErrorId(r.u32("ErrorId")?);
            let data = r.bytes(len, "ErrorContextData")?;
            Ok(ErrorContext { error_id, data })
        })();
        match item {
            Ok(_) => self.pos = r.pos(),
            Err(_) => self.left = 0,
        }
        Some(item)
    }
}

smb3d_wire::impl_codec!(ErrorResponse<'a>);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::Header;
    use crate::testutil::{golden, hex, pdu_with_body, with_header};
    use proptest::prelude::*;
    use smb3d_dtyp::NtStatus;

    // smbtorture smb2.compound.related1 against Samba 4.17: STATUS_OBJECT_NAME_NOT_FOUND with
    // empty ErrorData (one zero byte).
    const NOT_FOUND: &str = "
        fe534d4240000100340000c0050001001100000000000000040000000000000000000000af4cc130deebbdac00000000
        00000000000000000000000000000000090000000000000000";
    // smbtorture smb2.getinfo.qsec_buffercheck: STATUS_BUFFER_TOO_SMALL, required size 20.
    const BUFFER_TOO_SMALL: &str = "
        fe534d4240000100230000c0100001001100000000000000050000000000000000000000d1959d17fc7d4d9000000000
        00000000000000000000000000000000090000000400000014000000";
    // smbclient -m SMB3_11: the interim STATUS_PENDING response to a WRITE; Samba's pad byte
    // is 0x21 where we write 0.
    const PENDING: &str = "
        fe534d42400000000301000009000100130000000000000008000000000000000800000000000000b523934800000000
        00000000000000000000000000000000090000000000000021";

    #[test]
    fn captured() {
        let pdu = hex(NOT_FOUND);
        assert_eq!(
            Header::decode(&pdu).unwrap().status,
            NtStatus::OBJECT_NAME_NOT_FOUND
        );
        let e = golden::<ErrorResponse>(&pdu);
        assert_eq!(e, ErrorResponse::empty());

        let pdu = hex(BUFFER_TOO_SMALL);
        let e = golden::<ErrorResponse>(&pdu);
        assert_eq!(e.required_size(), Some(20));
        assert_eq!(e.contexts().count(), 0);

        let pdu = hex(PENDING);
        let e = ErrorResponse::decode(&pdu).unwrap();
        assert_eq!(e, ErrorResponse::empty());
        let mut expected = pdu.clone();
        *expected.last_mut().unwrap() = 0;
        assert_eq!(with_header(&pdu, |w| e.encode(w)), expected);
    }

    #[test]
    fn contexts_layout() {
        // Built from MS-SMB2 2.2.2.1: two contexts, the second 8-byte aligned after the first's
        // 3 data bytes.
        let contexts = [
            ErrorContext {
                error_id: ErrorId::DEFAULT,
                data: &[1, 2, 3],
            },
            ErrorContext {
                error_id: ErrorId::SHARE_REDIRECT,
                data: &[9; 4],
            },
        ];
        let mut buf = vec![0u8; 64];
        ErrorResponse::encode_contexts(&mut Writer::with_base(&mut buf, 0), &contexts);
        assert_eq!(
            &buf[64..],
            &hex("0900 02 00 1c000000
                  03000000 00000000 010203 00000000 00
                  04000000 53526472 09090909")[..]
        );
        let e = ErrorResponse::decode(&buf).unwrap();
        assert_eq!(e.error_context_count, 2);
        let decoded: Vec<_> = e.contexts().collect::<Result<_, _>>().unwrap();
        assert_eq!(decoded, contexts);

        let mut buf = vec![0u8; 64];
        ErrorResponse::encode_contexts(&mut Writer::with_base(&mut buf, 0), &[]);
        assert_eq!(ErrorResponse::decode(&buf).unwrap().error_data, &[0]);
    }

    #[test]
    fn rejections() {
        assert!(ErrorResponse::decode(&pdu_with_body(&[9, 0, 0, 0, 5, 0, 0, 0, 1, 2])).is_err());
        assert!(
            ErrorResponse::decode(&pdu_with_body(&[9, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF])).is_err()
        );
        assert!(ErrorResponse::decode(&pdu_with_body(&[8, 0, 0, 0, 0, 0, 0, 0])).is_err());
        // A missing pad byte is tolerated.
        assert!(ErrorResponse::decode(&pdu_with_body(&[9, 0, 0, 0, 0, 0, 0, 0])).is_ok());
        // More contexts claimed than present, and a context longer than the data.
        let e = ErrorResponse {
            error_context_count: 2,
            error_data: &[0, 0, 0, 0, 0, 0, 0, 0],
        };
        let items: Vec<_> = e.contexts().collect();
        assert_eq!(items.len(), 2);
        assert!(items[0].is_ok() && items[1].is_err());
        let e = ErrorResponse {
            error_context_count: 200,
            error_data: &[9, 0, 0, 0, 0, 0, 0, 0, 1],
        };
        assert_eq!(e.contexts().count(), 1);
        assert!(e.contexts().next().unwrap().is_err());
    }

    proptest! {
        #[test]
        fn round_trips(data in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..20), 0..5), ids in any::<[u32; 5]>()) {
            let contexts: Vec<_> = data.iter().zip(ids).map(|(d, id)| ErrorContext { error_id: ErrorId(id), data: d }).collect();
            let mut buf = vec![0u8; 64];
            ErrorResponse::encode_contexts(&mut Writer::with_base(&mut buf, 0), &contexts);
            let e = ErrorResponse::decode(&buf).unwrap();
            let decoded: Vec<_> = e.contexts().collect::<Result<_, _>>().unwrap();
            prop_assert_eq!(decoded, contexts);
        }

        #[test]
        fn iterating_never_panics(count in any::<u8>(), data in proptest::collection::vec(any::<u8>(), 0..100)) {
            let e = ErrorResponse { error_context_count: count, error_data: &data };
            prop_assert!(e.contexts().count() <= usize::from(count));
        }
    }
}
