//! Compounded messages (MS-SMB2 3.2.4.1.4, 3.3.5.2.7): several PDUs in one transport
//! message, each header's NextCommand giving the offset of the next.

use smb3d_wire::{DecodeError, DecodeErrorKind};

use crate::header::{Header, NEXT_COMMAND_OFFSET, SMB2_HEADER_LEN};

/// Splits a message into its PDUs, each from its header to the next header (padding included;
/// the last runs to the end of the message). Stops after the first error.
pub fn split(msg: &[u8]) -> Split<'_> {
    Split { rest: Some(msg) }
}

/// The iterator returned by [`split`].
#[derive(Debug, Clone)]
pub struct Split<'a> {
    rest: Option<&'a [u8]>,
}

impl<'a> Iterator for Split<'a> {
    type Item = Result<(Header, &'a [u8]), DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.rest.take()?;
        let item = next_pdu(rest).map(|(header, pdu, tail)| {
            self.rest = tail;
            (header, pdu)
        });
        Some(item)
    }
}

impl core::iter::FusedIterator for Split<'_> {}

/// The first PDU of `msg` and what follows it, if anything.
#[allow(clippy::type_complexity)]
fn next_pdu(msg: &[u8]) -> Result<(Header, &[u8], Option<&[u8]>), DecodeError> {
    let header = Header::decode(msg)?;
    if header.next_command == 0 {
        return Ok((header, msg, None));
    }
    let next = usize::try_from(header.next_command)
        .map_err(|_| DecodeError::new("NextCommand", DecodeErrorKind::Overflow))?;
    if next < SMB2_HEADER_LEN {
        return Err(DecodeError::invalid("NextCommand"));
    }
    if !next.is_multiple_of(8) {
        return Err(DecodeError::new("NextCommand", DecodeErrorKind::Misaligned));
    }
    // NextCommand is relative and at least a header long, so positions strictly increase and
    // a chain cannot loop; it must leave room for the next header.
    let room = next
        .checked_add(SMB2_HEADER_LEN)
        .ok_or(DecodeError::new("NextCommand", DecodeErrorKind::Overflow))?;
    if room > msg.len() {
        return Err(DecodeError::new(
            "NextCommand",
            DecodeErrorKind::OutOfBounds,
        ));
    }
    let (pdu, tail) = msg.split_at(next);
    Ok((header, pdu, Some(tail)))
}

/// Pads the PDU that starts at `element_start` in `buf` to a multiple of 8 bytes and sets its
/// NextCommand to point just past the padding, ready for the next PDU to be appended (sign it
/// after this call). Returns the NextCommand written, or `None` if no header starts there.
pub fn pad_and_link(buf: &mut Vec<u8>, element_start: usize) -> Option<u32> {
    let len = buf.len().checked_sub(element_start)?;
    if len < SMB2_HEADER_LEN {
        return None;
    }
    let padded = len.checked_next_multiple_of(8)?;
    let next = u32::try_from(padded).ok()?;
    buf.resize(element_start + padded, 0);
    let field = buf
        .get_mut(element_start + NEXT_COMMAND_OFFSET..)?
        .get_mut(..4)?;
    field.copy_from_slice(&next.to_le_bytes());
    Some(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::Command;
    use crate::testutil::hex;
    use proptest::prelude::*;

    // smbtorture smb2.compound.related1 against Samba 4.17: a CREATE + related CLOSE request
    // compound (NextCommand 168; the CLOSE uses FileId::ANY and all-ones session/tree ids).
    const REQUEST: &str = "
        fe534d4240000100000000000500000010000000a8000000050000000000000000000000af4cc130deebbdac00000000
        00000000000000000000000000000000390000000200000000000000000000000000000000000000ff011f0080000000
        07000000030000006400200078002a00000000000000000063006f006d0070006f0075006e0064005f00720065006c00
        610074006500640031002e00640061007400000000000000fe534d424000010000000000060000001400000000000000
        060000000000000000000000ffffffffffffffffffffffff000000000000000000000000000000001800000000000000
        ffffffffffffffffffffffffffffffff";

    #[test]
    fn related_create_close() {
        let msg = hex(REQUEST);
        let pdus: Vec<_> = split(&msg).collect::<Result<_, _>>().unwrap();
        assert_eq!(pdus.len(), 2);
        let (h0, p0) = &pdus[0];
        let (h1, p1) = &pdus[1];
        assert_eq!(
            (h0.command, h0.next_command, p0.len()),
            (Command::CREATE, 168, 168)
        );
        assert!(!h0.is_related());
        assert_eq!(
            (h1.command, h1.next_command, p1.len()),
            (Command::CLOSE, 0, 88)
        );
        assert!(h1.is_related());
        assert_eq!((h1.session_id, h1.tree_id), (u64::MAX, u32::MAX));
    }

    // Samba's answer to REQUEST: CREATE response (NextCommand 152) + CLOSE response, the last
    // padded to 8 bytes.
    const RESPONSE: &str = "
        fe534d424000010000000000050000001100000098000000050000000000000000000000af4cc130deebbdac00000000
        000000000000000000000000000000005900000002000000715dd5c0217add01715dd5c0217add01715dd5c0217add01
        715dd5c0217add010010000000000000000000000000000020000000000000001a652b9c00000000bc9a62ef00000000
        0000000000000000fe534d424000010000000000060002001500000000000000060000000000000000000000ffffffff
        ffffffffffffffff000000000000000000000000000000003c0000000000000000000000000000000000000000000000
        00000000000000000000000000000000000000000000000000000000000000000000000000000000";

    #[test]
    fn response_compound_and_relinking() {
        let msg = hex(RESPONSE);
        let pdus: Vec<_> = split(&msg).collect::<Result<_, _>>().unwrap();
        assert_eq!(pdus.len(), 2);
        assert_eq!(pdus[0].1.len(), 152);
        assert_eq!(pdus[1].0.command, Command::CLOSE);
        assert!(pdus[1].0.is_related() && pdus[1].0.is_response());

        let mut rebuilt = pdus[0].1.to_vec();
        rebuilt[NEXT_COMMAND_OFFSET..NEXT_COMMAND_OFFSET + 4].fill(0);
        assert_eq!(pad_and_link(&mut rebuilt, 0), Some(152));
        rebuilt.extend_from_slice(pdus[1].1);
        assert_eq!(rebuilt, msg);
    }

    fn header_with_next(next: u32) -> Vec<u8> {
        let h = Header {
            next_command: next,
            ..Header::default()
        };
        let mut v = Vec::new();
        h.encode(&mut smb3d_wire::Writer::new(&mut v));
        v
    }

    #[test]
    fn single_pdu_runs_to_end() {
        let mut msg = header_with_next(0);
        msg.extend_from_slice(&[1, 2, 3]);
        let pdus: Vec<_> = split(&msg).collect();
        assert_eq!(pdus.len(), 1);
        assert_eq!(pdus[0].as_ref().unwrap().1.len(), 67);
    }

    #[test]
    fn rejects_bad_next_command() {
        for (next, kind) in [
            (8, DecodeErrorKind::InvalidValue),
            (60, DecodeErrorKind::InvalidValue),
            (68, DecodeErrorKind::Misaligned),
            (72, DecodeErrorKind::OutOfBounds),
            (0xFFFF_FFF8, DecodeErrorKind::OutOfBounds),
        ] {
            let mut msg = header_with_next(next);
            msg.resize(128, 0);
            let items: Vec<_> = split(&msg).collect();
            assert_eq!(items.len(), 1, "stops after the error");
            let err = items[0].as_ref().unwrap_err();
            assert_eq!((err.field, err.kind), ("NextCommand", kind), "next {next}");
        }
    }

    #[test]
    fn second_pdu_errors_surface_and_stop() {
        let mut msg = header_with_next(64);
        msg.extend_from_slice(&header_with_next(0));
        msg[64] = 0xFD;
        let items: Vec<_> = split(&msg).collect();
        assert_eq!(items.len(), 2);
        assert!(items[0].is_ok());
        assert_eq!(items[1].as_ref().unwrap_err().field, "ProtocolId");
    }

    #[test]
    fn last_element_shorter_than_header() {
        let mut msg = header_with_next(64);
        msg.extend_from_slice(&[0xFE, b'S', b'M', b'B']);
        let err = split(&msg).next().unwrap().unwrap_err();
        assert_eq!(err.kind, DecodeErrorKind::OutOfBounds);
    }

    #[test]
    fn pad_and_link_builds_what_split_reads() {
        let mut buf = header_with_next(0);
        buf.extend_from_slice(&[9; 9]);
        assert_eq!(pad_and_link(&mut buf, 0), Some(80));
        assert_eq!(buf.len(), 80);
        let second = buf.len();
        buf.extend_from_slice(&header_with_next(0));
        buf.extend_from_slice(&[7; 4]);
        let pdus: Vec<_> = split(&buf).collect::<Result<_, _>>().unwrap();
        assert_eq!(pdus.len(), 2);
        assert_eq!(pdus[0].1.len(), 80);
        assert_eq!(pdus[1].1.len(), buf.len() - second);
        let near_end = buf.len() - 10;
        assert_eq!(pad_and_link(&mut buf, near_end), None);
        assert_eq!(pad_and_link(&mut buf, usize::MAX), None);
    }

    proptest! {
        #[test]
        fn split_never_panics_and_stays_inside(msg in proptest::collection::vec(any::<u8>(), 0..400)) {
            let mut total = 0;
            for item in split(&msg) {
                match item {
                    Ok((_, pdu)) => {
                        prop_assert!(pdu.len() >= SMB2_HEADER_LEN);
                        total += pdu.len();
                    }
                    Err(_) => break,
                }
            }
            prop_assert!(total <= msg.len());
        }
    }
}
