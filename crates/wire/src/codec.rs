use crate::error::Result;
use crate::writer::Writer;

/// A wire structure with a decoder and an encoder of the usual shape, as rustls's `Codec`, so
/// that round-trip tests and fuzz targets can take any of them as a type parameter.
///
/// `decode` reads the structure from the start of `buf` (bytes after it are ignored) and may
/// borrow from it; `encode` appends it at the writer's position. SMB2 PDUs differ in one way:
/// their `decode` takes the whole message from the SMB2 header on, since offsets in the body
/// count from the header, and their `encode` writes the body after a header already written.
///
/// A value that borrows lives no longer than its buffer, so generic code that decodes what it
/// encoded takes the buffer from its caller:
///
/// ```
/// use smb3d_wire::{Codec, Writer};
///
/// fn round_trip<'a, T: Codec<'a>>(value: &T, buf: &'a mut Vec<u8>) -> T {
///     value.encode(&mut Writer::new(buf));
///     T::decode(buf).expect("what was encoded decodes")
/// }
/// ```
pub trait Codec<'a>: Sized {
    fn decode(buf: &'a [u8]) -> Result<Self>;
    fn encode(&self, w: &mut Writer<'_>);
}

/// Implements [`Codec`] for types whose inherent `decode(&'a [u8])` and `encode(&self, &mut
/// Writer)` already have its shape, by calling them; the inherent methods stay, so callers do
/// not need the trait in scope. A type with a lifetime is named with `'a`.
///
/// ```
/// use smb3d_wire::{Codec, Reader, Result, Writer};
///
/// struct Word(u16);
/// impl Word {
///     fn decode(buf: &[u8]) -> Result<Self> {
///         Ok(Self(Reader::new(buf).u16("Word")?))
///     }
///     fn encode(&self, w: &mut Writer<'_>) {
///         w.u16(self.0);
///     }
/// }
/// struct Bytes<'a>(&'a [u8]);
/// impl<'a> Bytes<'a> {
///     fn decode(buf: &'a [u8]) -> Result<Self> {
///         Ok(Self(buf))
///     }
///     fn encode(&self, w: &mut Writer<'_>) {
///         w.bytes(self.0);
///     }
/// }
/// smb3d_wire::impl_codec!(Word, Bytes<'a>);
///
/// fn encoded<'a>(value: &impl Codec<'a>) -> Vec<u8> {
///     let mut buf = Vec::new();
///     value.encode(&mut Writer::new(&mut buf));
///     buf
/// }
/// assert_eq!(encoded(&Word(7)), [7, 0]);
/// assert_eq!(encoded(&<Bytes as Codec>::decode(b"ab").unwrap()), b"ab");
/// ```
#[macro_export]
macro_rules! impl_codec {
    ($($t:ty),* $(,)?) => {
        $(
            impl<'a> $crate::Codec<'a> for $t {
                fn decode(buf: &'a [u8]) -> $crate::Result<Self> {
                    <$t>::decode(buf)
                }

                fn encode(&self, w: &mut $crate::Writer<'_>) {
                    <$t>::encode(self, w)
                }
            }
        )*
    };
}
