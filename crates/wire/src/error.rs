use core::fmt;

/// Why a decoder rejected its input, and which field it was reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {kind}")]
pub struct DecodeError {
    pub field: &'static str,
    pub kind: DecodeErrorKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// The input ended before the field.
    Truncated,
    /// An (offset, length) pair points outside the message or into the header.
    OutOfBounds,
    /// Offset plus length overflows.
    Overflow,
    /// A StructureSize (or other fixed size) field has the wrong value.
    BadSize { expected: u32, got: u32 },
    /// A structure does not start on the alignment the format requires.
    Misaligned,
    /// A value outside the range the format allows.
    InvalidValue,
    /// A UTF-16 string with an odd byte count or an unpaired surrogate.
    InvalidUtf16,
    /// A count or length beyond what the decoder accepts.
    TooLong,
}

impl fmt::Display for DecodeErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated => f.write_str("truncated"),
            Self::OutOfBounds => f.write_str("offset/length outside the message"),
            Self::Overflow => f.write_str("offset + length overflows"),
            Self::BadSize { expected, got } => write!(f, "size {got}, expected {expected}"),
            Self::Misaligned => f.write_str("misaligned"),
            Self::InvalidValue => f.write_str("invalid value"),
            Self::InvalidUtf16 => f.write_str("invalid UTF-16"),
            Self::TooLong => f.write_str("too long"),
        }
    }
}

impl DecodeError {
    pub const fn new(field: &'static str, kind: DecodeErrorKind) -> Self {
        Self { field, kind }
    }
    pub const fn truncated(field: &'static str) -> Self {
        Self::new(field, DecodeErrorKind::Truncated)
    }
    pub const fn invalid(field: &'static str) -> Self {
        Self::new(field, DecodeErrorKind::InvalidValue)
    }
}

pub type Result<T> = core::result::Result<T, DecodeError>;
