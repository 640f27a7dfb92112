//! Direct TCP transport framing (MS-SMB2 2.1): each message is preceded by a zero byte and a
//! 24-bit big-endian length.

/// The largest length the 24-bit field can carry.
pub const MAX_FRAME_LEN: usize = 0x00FF_FFFF;

/// Why a 4-byte transport prefix was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The first byte was not zero. Direct TCP only carries session messages; a NetBIOS
    /// session-service type (e.g. 0x85 keep-alive) here means a different transport.
    #[error("transport prefix type {0:#04x} is not a session message")]
    NotSessionMessage(u8),
    /// The length exceeds what the receiver accepts (or what 24 bits can express).
    #[error("message length {len} exceeds the limit {max}")]
    TooLong { len: usize, max: usize },
}

/// The length of the message that follows `prefix`, refused if it exceeds `max` so that no
/// buffer is sized from an unchecked peer value.
pub fn frame_len(prefix: [u8; 4], max: usize) -> Result<usize, FrameError> {
    let [kind, hi, mid, lo] = prefix;
    if kind != 0 {
        return Err(FrameError::NotSessionMessage(kind));
    }
    let len = usize::from(hi) << 16 | usize::from(mid) << 8 | usize::from(lo);
    if len > max {
        return Err(FrameError::TooLong { len, max });
    }
    Ok(len)
}

/// The prefix for a message of `len` bytes.
pub fn encode_frame_prefix(len: usize) -> Result<[u8; 4], FrameError> {
    let len24 = u32::try_from(len)
        .ok()
        .filter(|&l| l <= 0x00FF_FFFF)
        .ok_or(FrameError::TooLong {
            len,
            max: MAX_FRAME_LEN,
        })?;
    let [_, hi, mid, lo] = len24.to_be_bytes();
    Ok([0, hi, mid, lo])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn captured_prefixes() {
        // The first 4 bytes of smbclient's NEGOTIATE (226 bytes) and Samba's 65648-byte WRITE
        // request from the smbtorture smb2.read.eof capture.
        assert_eq!(frame_len([0, 0, 0, 0xE2], 1 << 20), Ok(226));
        assert_eq!(frame_len([0, 1, 0, 0x70], 1 << 20), Ok(65648));
        assert_eq!(encode_frame_prefix(65648), Ok([0, 1, 0, 0x70]));
    }

    #[test]
    fn rejections() {
        assert_eq!(
            frame_len([0x85, 0, 0, 0], 100),
            Err(FrameError::NotSessionMessage(0x85))
        );
        assert_eq!(
            frame_len([0, 0, 0, 101], 100),
            Err(FrameError::TooLong { len: 101, max: 100 })
        );
        assert_eq!(
            frame_len([0, 0xFF, 0xFF, 0xFF], MAX_FRAME_LEN),
            Ok(MAX_FRAME_LEN)
        );
        assert!(encode_frame_prefix(MAX_FRAME_LEN + 1).is_err());
        assert!(encode_frame_prefix(usize::MAX).is_err());
    }

    proptest! {
        #[test]
        fn round_trip(len in 0usize..=MAX_FRAME_LEN) {
            let prefix = encode_frame_prefix(len).unwrap();
            prop_assert_eq!(frame_len(prefix, MAX_FRAME_LEN), Ok(len));
        }
    }
}
