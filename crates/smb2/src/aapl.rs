//! Apple's `AAPL` create context, with which macOS clients ask a server what it offers them.
//! Microsoft's specifications do not describe it; the layout is the one Apple's clients send
//! and Samba's vfs_fruit answers, as smbtorture's vfs.fruit tests check it:
//!
//! * request: CommandCode (u32, 1 = server query), Reserved (u32), RequestBitmap (u64: what
//!   to report), ClientCaps (u64);
//! * response: CommandCode, Reserved, ReplyBitmap (the request's), then for each bit asked
//!   for, in this order: ServerCaps (u64), VolumeCaps (u64), and Pad (u32), ModelStringLength
//!   (u32, bytes) and the model string in UTF-16LE without terminator.

use smb3d_wire::{DecodeError, DecodeErrorKind, Reader, Writer};

use crate::util::len32;

/// The context's name.
pub const NAME: &[u8; 4] = b"AAPL";

/// CommandCode of a server query, the one command a server answers.
pub const SERVER_QUERY: u32 = 1;

/// RequestBitmap and ReplyBitmap bits.
pub mod bitmap {
    pub const SERVER_CAPS: u64 = 1;
    pub const VOLUME_CAPS: u64 = 2;
    pub const MODEL_INFO: u64 = 4;
}

/// ServerCaps (and ClientCaps) bits.
pub mod server_caps {
    /// Directory listings carry the Mac extras (ReadDirAttr).
    pub const READ_DIR_ATTR: u64 = 1;
    /// Server-side copies carry streams and metadata (copyfile).
    pub const OSX_COPYFILE: u64 = 2;
    pub const UNIX_BASED: u64 = 4;
    /// Unix modes travel as NFS ACEs in security descriptors.
    pub const NFS_ACE: u64 = 8;
}

/// VolumeCaps bits.
pub mod volume_caps {
    pub const SUPPORT_RESOLVE_ID: u64 = 1;
    pub const CASE_SENSITIVE: u64 = 2;
    /// F_FULLFSYNC is honoured (what Time Machine requires of a destination).
    pub const FULL_SYNC: u64 = 4;
}

/// A client's server query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerQuery {
    pub request_bitmap: u64,
    pub client_caps: u64,
}

/// What an AAPL request body may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AaplRequest {
    ServerQuery(ServerQuery),
    /// Another command (resolve id and unknown ones), which a server refuses.
    Other(u32),
}

impl AaplRequest {
    /// Decodes a request body: a server query is exactly 24 bytes.
    pub fn decode(data: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(data);
        let command = r.u32("AAPL.CommandCode")?;
        if command != SERVER_QUERY {
            return Ok(Self::Other(command));
        }
        if data.len() != 24 {
            return Err(DecodeError::new(
                "AAPL",
                DecodeErrorKind::BadSize {
                    expected: 24,
                    got: len32(data.len()),
                },
            ));
        }
        r.u32("AAPL.Reserved")?;
        Ok(Self::ServerQuery(ServerQuery {
            request_bitmap: r.u64("AAPL.RequestBitmap")?,
            client_caps: r.u64("AAPL.ClientCaps")?,
        }))
    }

    /// Writes a server query's body (for test clients and fuzz seeds).
    pub fn encode(query: &ServerQuery, w: &mut Writer<'_>) {
        w.u32(SERVER_QUERY)
            .u32(0)
            .u64(query.request_bitmap)
            .u64(query.client_caps);
    }
}

/// A server's answer to a server query; only the parts `reply_bitmap` names are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerQueryResponse {
    pub reply_bitmap: u64,
    pub server_caps: u64,
    pub volume_caps: u64,
    pub model: String,
}

impl ServerQueryResponse {
    /// Writes the body.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u32(SERVER_QUERY).u32(0).u64(self.reply_bitmap);
        if self.reply_bitmap & bitmap::SERVER_CAPS != 0 {
            w.u64(self.server_caps);
        }
        if self.reply_bitmap & bitmap::VOLUME_CAPS != 0 {
            w.u64(self.volume_caps);
        }
        if self.reply_bitmap & bitmap::MODEL_INFO != 0 {
            w.u32(0);
            let length = w.reserve_u32();
            let n = w.utf16(&self.model);
            w.patch_u32(length, len32(n));
        }
    }

    /// Decodes a body (for test clients): the parts its ReplyBitmap names, nothing more.
    pub fn decode(data: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(data);
        let command = r.u32("AAPL.CommandCode")?;
        if command != SERVER_QUERY {
            return Err(DecodeError::new(
                "AAPL.CommandCode",
                DecodeErrorKind::InvalidValue,
            ));
        }
        r.u32("AAPL.Reserved")?;
        let reply_bitmap = r.u64("AAPL.ReplyBitmap")?;
        let mut out = Self {
            reply_bitmap,
            server_caps: 0,
            volume_caps: 0,
            model: String::new(),
        };
        if reply_bitmap & bitmap::SERVER_CAPS != 0 {
            out.server_caps = r.u64("AAPL.ServerCaps")?;
        }
        if reply_bitmap & bitmap::VOLUME_CAPS != 0 {
            out.volume_caps = r.u64("AAPL.VolumeCaps")?;
        }
        if reply_bitmap & bitmap::MODEL_INFO != 0 {
            r.u32("AAPL.Pad")?;
            let n = r.u32("AAPL.ModelStringLength")?;
            let bytes = r.bytes(crate::util::to_usize(n), "AAPL.ModelString")?;
            out.model = smb3d_wire::decode_utf16le(bytes, "AAPL.ModelString")?;
        }
        if !r.rest().is_empty() {
            return Err(DecodeError::new(
                "AAPL",
                DecodeErrorKind::BadSize {
                    expected: len32(data.len() - r.rest().len()),
                    got: len32(data.len()),
                },
            ));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The query smbtorture's vfs.fruit test_aapl sends: caps, volume caps and model asked
    /// for; ReadDirAttr, Unix-based and NFS ACEs offered.
    const TORTURE_QUERY: [u8; 24] = [
        1, 0, 0, 0, 0, 0, 0, 0, //
        7, 0, 0, 0, 0, 0, 0, 0, //
        13, 0, 0, 0, 0, 0, 0, 0,
    ];

    #[test]
    fn decodes_the_query_smbtorture_sends() {
        assert_eq!(
            AaplRequest::decode(&TORTURE_QUERY).unwrap(),
            AaplRequest::ServerQuery(ServerQuery {
                request_bitmap: 7,
                client_caps: 13,
            })
        );
        let mut buf = Vec::new();
        AaplRequest::encode(
            &ServerQuery {
                request_bitmap: 7,
                client_caps: 13,
            },
            &mut Writer::new(&mut buf),
        );
        assert_eq!(buf, TORTURE_QUERY);
    }

    #[test]
    fn a_query_of_another_size_is_an_error_and_another_command_is_kept() {
        assert!(AaplRequest::decode(&TORTURE_QUERY[..23]).is_err());
        assert!(AaplRequest::decode(&[TORTURE_QUERY.as_slice(), &[0]].concat()).is_err());
        assert!(AaplRequest::decode(&[1, 0]).is_err());
        assert!(AaplRequest::decode(&[]).is_err());
        assert_eq!(
            AaplRequest::decode(&[2, 0, 0, 0]).unwrap(),
            AaplRequest::Other(2)
        );
    }

    /// Golden: the answer of a share with every server cap, no volume caps and Samba's default
    /// model, byte for byte as Samba 4.17 sends it (56 bytes, what test_aapl expects).
    #[test]
    fn encodes_the_full_answer() {
        let response = ServerQueryResponse {
            reply_bitmap: 7,
            server_caps: 15,
            volume_caps: 0,
            model: "MacSamba".into(),
        };
        let mut buf = Vec::new();
        response.encode(&mut Writer::new(&mut buf));
        let mut expected = vec![1, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0];
        expected.extend_from_slice(&[15, 0, 0, 0, 0, 0, 0, 0]);
        expected.extend_from_slice(&[0; 8]);
        expected.extend_from_slice(&[0, 0, 0, 0, 16, 0, 0, 0]);
        for c in "MacSamba".bytes() {
            expected.extend_from_slice(&[c, 0]);
        }
        assert_eq!(buf, expected);
        assert_eq!(buf.len(), 56);
        assert_eq!(ServerQueryResponse::decode(&buf).unwrap(), response);
    }

    #[test]
    fn only_the_parts_asked_for_are_written() {
        let response = ServerQueryResponse {
            reply_bitmap: bitmap::VOLUME_CAPS,
            server_caps: 15,
            volume_caps: volume_caps::FULL_SYNC,
            model: "x".into(),
        };
        let mut buf = Vec::new();
        response.encode(&mut Writer::new(&mut buf));
        assert_eq!(buf.len(), 24);
        assert_eq!(buf[16..], [4, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn a_model_length_beyond_the_body_is_an_error() {
        let mut buf = vec![1, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0];
        buf.extend_from_slice(&[0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, b'a', 0]);
        assert!(ServerQueryResponse::decode(&buf).is_err());
    }
}
