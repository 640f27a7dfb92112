//! AppleDouble version 2 (Apple's "AppleSingle/AppleDouble Formats for Foreign Files", A/UX
//! Toolbox appendix B): a big-endian header - magic, version, 16 filler bytes, an entry count -
//! then entries of (id, offset, length) pointing into the same buffer. Netatalk and Samba's
//! vfs_fruit keep a file's Finder info in one (the `org.netatalk.Metadata` xattr), and macOS
//! writes `._NAME` files in it. Both are on the share, so a decoded header is hostile input:
//! every entry must lie inside the buffer, after the entry table, apart from the others.

use smb3d_wire::{DecodeError, DecodeErrorKind, Reader};

const MAGIC: u32 = 0x0005_1607;
const VERSION: u32 = 0x0002_0000;
const HEADER_LEN: usize = 26;
const ENTRY_LEN: usize = 12;
/// Entry ids of the format (and Netatalk's private ones, which carry their high bit).
pub(crate) const RESOURCE_FORK: u32 = 2;
const COMMENT: u32 = 4;
const FILE_DATES: u32 = 8;
pub(crate) const FINDER_INFO: u32 = 9;
const AFP_FILE_INFO: u32 = 14;
const NETATALK_DEV: u32 = 0x8044_4556;
const NETATALK_INO: u32 = 0x8049_4E4F;
const NETATALK_SYN: u32 = 0x8053_594E;
const NETATALK_SV: u32 = 0x8053_567E;
pub(crate) const FINDER_INFO_LEN: usize = 32;

/// The layout Netatalk (and Samba's `fruit:metadata = netatalk`) gives a new metadata xattr:
/// (id, offset, length), 402 bytes in all. Samba reads only a header with exactly these eight
/// entries, so a header this server creates has them too.
const NETATALK_LAYOUT: [(u32, u32, u32); 8] = [
    (COMMENT, 0x9A, 0),
    (FILE_DATES, 0x162, 16),
    (FINDER_INFO, 0x7A, 32),
    (AFP_FILE_INFO, 0x172, 4),
    (NETATALK_DEV, 0x176, 8),
    (NETATALK_INO, 0x17E, 8),
    (NETATALK_SYN, 0x186, 8),
    (NETATALK_SV, 0x18E, 4),
];
const NETATALK_LEN: usize = 0x192;

/// The header of a `._` file as Samba's vfs_fruit writes a new one: a filler naming Netatalk,
/// the resource fork (empty, growing at the end) and the Finder info, 0x52 bytes in all.
const SIDECAR_FILLER: &[u8; 16] = b"Netatalk        ";
const SIDECAR_FINDER_AT: u32 = 0x32;
pub(crate) const SIDECAR_FORK_AT: u32 = 0x52;

/// A new `._` file's bytes: its header, an empty resource fork and zero Finder info (the
/// Finder info an `apple` share shows is the metadata xattr's, as Samba's).
pub(crate) fn new_sidecar() -> Vec<u8> {
    let mut out = Vec::with_capacity(SIDECAR_FORK_AT as usize);
    out.extend_from_slice(&MAGIC.to_be_bytes());
    out.extend_from_slice(&VERSION.to_be_bytes());
    out.extend_from_slice(SIDECAR_FILLER);
    out.extend_from_slice(&2u16.to_be_bytes());
    for (id, offset, len) in [
        (RESOURCE_FORK, SIDECAR_FORK_AT, 0),
        (FINDER_INFO, SIDECAR_FINDER_AT, FINDER_INFO_LEN as u32),
    ] {
        for field in [id, offset, len] {
            out.extend_from_slice(&field.to_be_bytes());
        }
    }
    out.resize(SIDECAR_FORK_AT as usize, 0);
    out
}

/// Where the resource fork lies in a `._` file: its entry's offset and length, and where the
/// length field is in the header. `None` when the header (`head`, the file's first bytes, of
/// `total`) is malformed, has no fork, or has an entry after the fork, which could then not
/// grow without overwriting it.
pub(crate) fn fork_placement(head: &[u8], total: usize) -> Option<(u64, u64, u64)> {
    let ad = AppleDouble::decode_in(head, total).ok()?;
    let (index, fork) = ad
        .entries()
        .iter()
        .enumerate()
        .find(|(_, e)| e.id == RESOURCE_FORK)?;
    let last = ad
        .entries()
        .iter()
        .all(|e| e.id == RESOURCE_FORK || e.offset + e.len <= fork.offset);
    let len_field = HEADER_LEN + index * ENTRY_LEN + 8;
    last.then_some((fork.offset as u64, fork.len as u64, len_field as u64))
}

/// The filler macOS writes in its `._` files (others write Netatalk's or zeros).
const MAC_FILLER: &[u8; 16] = b"Mac OS X        ";
/// macOS keeps a file's extended attributes in its `._` file as an `ATTR` block after the 32
/// bytes of Finder info and 2 of padding, inside the Finder info entry: a 36-byte header
/// (magic, debug tag, total size, data start, data length, 12 reserved bytes, flags, count),
/// then entries (value offset into the file, value length, flags, name length, NUL-terminated
/// UTF-8 name), each starting at a multiple of 4 bytes of the file.
const ATTR_MAGIC: u32 = 0x4154_5452;
const ATTR_AT: usize = FINDER_INFO_LEN + 2;
const ATTR_ENTRY_FIXED: usize = 11;
/// The most of a `._` file read before its resource fork for a conversion (Samba reads as
/// much); a header reaching further is not converted.
pub(crate) const MAC_HEADER_MAX: usize = 64 * 1024;
/// The longest attribute name converted: a stream's xattr (`user.DosStream.NAME:$DATA`) must
/// keep to Linux's 255 bytes.
const MAX_ATTR_NAME: usize = 255 - 21;

/// What a `._` file holds for a conversion to the streams an `apple` share keeps.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct MacSidecar<'a> {
    /// The Finder info (kept in the rewritten header).
    pub(crate) finder_info: [u8; FINDER_INFO_LEN],
    /// Whether macOS wrote the file (its filler), so that its Finder info is the file's.
    pub(crate) from_mac: bool,
    /// The extended attributes embedded after the Finder info: (name, value).
    pub(crate) xattrs: Vec<(&'a str, &'a [u8])>,
    /// Where the resource fork lies, and its length.
    pub(crate) fork_offset: u64,
    pub(crate) fork_len: u64,
    /// Whether the Finder info entry holds more than the Finder info (macOS's `ATTR` block).
    pub(crate) embedded: bool,
}

/// Whether the `._` file whose first bytes are `head` (of `total`) has something for
/// [`mac_sidecar`] to convert: macOS wrote it, or its Finder info entry holds more than the
/// Finder info. `None` for a malformed one or one without a resource fork.
pub(crate) fn from_mac_or_embedded(head: &[u8], total: usize) -> Option<bool> {
    let ad = AppleDouble::decode_in(head, total).ok()?;
    fork_placement(head, total)?;
    let embedded = ad
        .entries()
        .iter()
        .any(|e| e.id == FINDER_INFO && e.len > FINDER_INFO_LEN);
    Some(embedded || head.get(8..24) == Some(MAC_FILLER.as_slice()))
}

/// Decodes `head`, the first bytes of a `._` file of `total` bytes, up to at least its
/// resource fork, for a conversion. Refused: a malformed header, no Finder info or resource
/// fork, an entry after the fork, and an `ATTR` block whose header, entries or values leave
/// the Finder info entry or whose names are not UTF-8 of at most [`MAX_ATTR_NAME`] bytes.
/// Allocates at most one pair per 12 bytes of input.
pub(crate) fn mac_sidecar(head: &[u8], total: usize) -> Result<MacSidecar<'_>, DecodeError> {
    let out_of_bounds = |field| DecodeError::new(field, DecodeErrorKind::OutOfBounds);
    let ad = AppleDouble::decode_in(head, total)?;
    let (fork_offset, fork_len, _) = fork_placement(head, total).ok_or(out_of_bounds("fork"))?;
    let finder_entry = ad
        .entries()
        .iter()
        .find(|e| e.id == FINDER_INFO)
        .copied()
        .ok_or(out_of_bounds("finder info"))?;
    let finder_bytes = ad.entry(FINDER_INFO).ok_or(out_of_bounds("finder info"))?;
    let finder_info: [u8; FINDER_INFO_LEN] = finder_bytes
        .get(..FINDER_INFO_LEN)
        .and_then(|b| b.try_into().ok())
        .ok_or(DecodeError::truncated("finder info"))?;
    let xattrs = if finder_bytes.len() > FINDER_INFO_LEN {
        embedded_xattrs(finder_bytes, finder_entry.offset)?
    } else {
        Vec::new()
    };
    Ok(MacSidecar {
        finder_info,
        from_mac: head.get(8..24) == Some(MAC_FILLER.as_slice()),
        xattrs,
        fork_offset,
        fork_len,
        embedded: finder_bytes.len() > FINDER_INFO_LEN,
    })
}

/// The attributes of the `ATTR` block in `entry`, the Finder info entry found at file offset
/// `at`; every offset in the block is one into the file, checked to fall inside the entry.
fn embedded_xattrs(entry: &[u8], at: usize) -> Result<Vec<(&str, &[u8])>, DecodeError> {
    let bad = |field| DecodeError::new(field, DecodeErrorKind::InvalidValue);
    let mut r = Reader::new(entry);
    r.seek(ATTR_AT, "attr header")?;
    if r.u32_be("attr magic")? != ATTR_MAGIC {
        return Err(bad("attr magic"));
    }
    r.skip(4 + 4 + 4 + 4 + 12 + 2, "attr header")?;
    let count = usize::from(r.u16_be("attr count")?);
    let mut out = Vec::with_capacity(count.min(entry.len() / (ATTR_ENTRY_FIXED + 1)));
    for _ in 0..count {
        // Entries start at multiples of 4 of the file, not of the entry.
        let file_pos = at
            .checked_add(r.pos())
            .and_then(|p| p.checked_next_multiple_of(4))
            .ok_or(DecodeError::new("attr entry", DecodeErrorKind::Overflow))?;
        r.seek(file_pos - at, "attr entry")?;
        let offset = r.u32_be("attr offset")? as usize;
        let len = r.u32_be("attr length")? as usize;
        r.skip(2, "attr flags")?;
        let name_len = usize::from(r.u8("attr name length")?);
        let name = r.bytes(name_len, "attr name")?;
        let name = name.split(|&b| b == 0).next().unwrap_or_default();
        let name = std::str::from_utf8(name).map_err(|_| bad("attr name"))?;
        if name.is_empty() || name.len() > MAX_ATTR_NAME {
            return Err(bad("attr name"));
        }
        let value = offset
            .checked_sub(at)
            .ok_or(DecodeError::new("attr value", DecodeErrorKind::OutOfBounds))
            .and_then(|start| Reader::new(entry).buffer_at(start, len, "attr value"))?;
        out.push((name, value));
    }
    Ok(out)
}

/// The header of a `._` file in Samba's layout ([`new_sidecar`]) holding `finder` and naming
/// a resource fork of `fork_len` bytes at [`SIDECAR_FORK_AT`].
pub(crate) fn sidecar_header(finder: &[u8; FINDER_INFO_LEN], fork_len: u32) -> Vec<u8> {
    let mut out = new_sidecar();
    let fork_len_at = HEADER_LEN + 8;
    let finder_at = SIDECAR_FINDER_AT as usize;
    if let Some(slot) = out.get_mut(fork_len_at..fork_len_at + 4) {
        slot.copy_from_slice(&fork_len.to_be_bytes());
    }
    if let Some(slot) = out.get_mut(finder_at..finder_at + FINDER_INFO_LEN) {
        slot.copy_from_slice(finder);
    }
    out
}

/// The resource fork macOS writes for a file that has none, "intentionally left blank": a
/// resource header (data and map at 256, no data, a 30-byte map), the sentence, and an empty
/// map repeating the header (type list at 28, name list at 30, no types).
pub(crate) fn blank_resource_fork() -> [u8; 286] {
    let mut fork = [0u8; 286];
    let header: [u8; 16] = [0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0x1E];
    let map_rest: [u8; 14] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0x1C, 0, 0x1E, 0xFF, 0xFF];
    let text = b"This resource fork intentionally left blank   ";
    for (at, bytes) in [
        (0, header.as_slice()),
        (16, text.as_slice()),
        (256, header.as_slice()),
        (272, map_rest.as_slice()),
    ] {
        if let Some(slot) = fork.get_mut(at..at + bytes.len()) {
            slot.copy_from_slice(bytes);
        }
    }
    fork
}

/// One entry of a decoded header: where its bytes lie in the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) id: u32,
    pub(crate) offset: usize,
    pub(crate) len: usize,
}

/// A checked AppleDouble header over its buffer.
#[derive(Debug)]
pub(crate) struct AppleDouble<'a> {
    bytes: &'a [u8],
    entries: Vec<Entry>,
}

impl<'a> AppleDouble<'a> {
    /// Decodes the header of `bytes`, refusing a wrong magic or version, an entry table longer
    /// than the buffer, an entry past the end or inside the header, overlapping entries and
    /// repeated ids. Allocates at most one [`Entry`] per 12 bytes of input.
    pub(crate) fn decode(bytes: &'a [u8]) -> Result<Self, DecodeError> {
        Self::decode_in(bytes, bytes.len())
    }

    /// Decodes the header at the start of a file of `total` bytes of which `bytes` were read
    /// (a `._` file whose entries lie beyond the header read): checked as [`decode`](Self::decode)
    /// against `total`; only entries inside `bytes` can be read through [`entry`](Self::entry).
    pub(crate) fn decode_in(bytes: &'a [u8], total: usize) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        if r.u32_be("magic")? != MAGIC || r.u32_be("version")? != VERSION {
            return Err(DecodeError::new("magic", DecodeErrorKind::InvalidValue));
        }
        r.skip(16, "filler")?;
        let count = usize::from(r.u16_be("entry count")?);
        let table_end = count
            .checked_mul(ENTRY_LEN)
            .and_then(|n| n.checked_add(HEADER_LEN))
            .filter(|&end| end <= bytes.len() && end <= total)
            .ok_or(DecodeError::truncated("entries"))?;
        let mut entries: Vec<Entry> = Vec::with_capacity(count);
        for _ in 0..count {
            let id = r.u32_be("entry id")?;
            let offset = r.u32_be("entry offset")? as usize;
            let len = r.u32_be("entry length")? as usize;
            let end = offset
                .checked_add(len)
                .ok_or(DecodeError::new("entry", DecodeErrorKind::Overflow))?;
            let outside = end > total || (len > 0 && offset < table_end);
            let overlaps = entries.iter().any(|e| {
                e.id == id || (len > 0 && e.len > 0 && offset < e.offset + e.len && e.offset < end)
            });
            if outside || overlaps {
                return Err(DecodeError::new("entry", DecodeErrorKind::OutOfBounds));
            }
            entries.push(Entry { id, offset, len });
        }
        Ok(Self { bytes, entries })
    }

    pub(crate) fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The bytes of entry `id`.
    pub(crate) fn entry(&self, id: u32) -> Option<&'a [u8]> {
        let e = self.entries.iter().find(|e| e.id == id)?;
        self.bytes.get(e.offset..e.offset + e.len)
    }

    /// The 32 bytes of Finder info, if the header has them.
    pub(crate) fn finder_info(&self) -> Option<[u8; FINDER_INFO_LEN]> {
        self.entry(FINDER_INFO)?
            .get(..FINDER_INFO_LEN)?
            .try_into()
            .ok()
    }
}

/// The Finder info a metadata xattr holds; `None` when it is missing or malformed, which
/// Mac clients then see as no metadata at all.
pub(crate) fn finder_info_of(xattr: &[u8]) -> Option<[u8; FINDER_INFO_LEN]> {
    AppleDouble::decode(xattr).ok()?.finder_info()
}

/// `existing` (a metadata xattr, if any) with its Finder info replaced by `finder`; the other
/// entries are kept. A missing or malformed one is replaced by Netatalk's layout.
pub(crate) fn with_finder_info(existing: Option<&[u8]>, finder: &[u8; FINDER_INFO_LEN]) -> Vec<u8> {
    if let Some(bytes) = existing
        && let Ok(ad) = AppleDouble::decode(bytes)
        && let Some(e) = ad.entries().iter().find(|e| e.id == FINDER_INFO)
        && e.len >= FINDER_INFO_LEN
    {
        let mut out = bytes.to_vec();
        if let Some(slot) = out.get_mut(e.offset..e.offset + FINDER_INFO_LEN) {
            slot.copy_from_slice(finder);
            return out;
        }
    }
    netatalk_metadata(finder)
}

/// A new metadata xattr in Netatalk's layout holding `finder`.
fn netatalk_metadata(finder: &[u8; FINDER_INFO_LEN]) -> Vec<u8> {
    let mut out = Vec::with_capacity(NETATALK_LEN);
    out.extend_from_slice(&MAGIC.to_be_bytes());
    out.extend_from_slice(&VERSION.to_be_bytes());
    out.extend_from_slice(&[0; 16]);
    out.extend_from_slice(&(NETATALK_LAYOUT.len() as u16).to_be_bytes());
    for (id, offset, len) in NETATALK_LAYOUT {
        for field in [id, offset, len] {
            out.extend_from_slice(&field.to_be_bytes());
        }
    }
    out.resize(NETATALK_LEN, 0);
    let finder_at = 0x7A;
    if let Some(slot) = out.get_mut(finder_at..finder_at + FINDER_INFO_LEN) {
        slot.copy_from_slice(finder);
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The metadata xattr of a file Netatalk gave the type/creator "BARRFOOO" and the Finder
    /// flags 0x40 (as smbtorture's vfs.fruit_netatalk sets it locally).
    fn netatalk_golden() -> Vec<u8> {
        let mut v = vec![
            0x00, 0x05, 0x16, 0x07, 0x00, 0x02, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0x00, 0x08, //
            0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x9a, 0x00, 0x00, 0x00, 0x00, //
            0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x01, 0x62, 0x00, 0x00, 0x00, 0x10, //
            0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, 0x7a, 0x00, 0x00, 0x00, 0x20, //
            0x00, 0x00, 0x00, 0x0e, 0x00, 0x00, 0x01, 0x72, 0x00, 0x00, 0x00, 0x04, //
            0x80, 0x44, 0x45, 0x56, 0x00, 0x00, 0x01, 0x76, 0x00, 0x00, 0x00, 0x08, //
            0x80, 0x49, 0x4e, 0x4f, 0x00, 0x00, 0x01, 0x7e, 0x00, 0x00, 0x00, 0x08, //
            0x80, 0x53, 0x59, 0x4e, 0x00, 0x00, 0x01, 0x86, 0x00, 0x00, 0x00, 0x08, //
            0x80, 0x53, 0x56, 0x7e, 0x00, 0x00, 0x01, 0x8e, 0x00, 0x00, 0x00, 0x04,
        ];
        v.resize(0x7a, 0);
        v.extend_from_slice(b"BARRFOOO\x40");
        v.resize(0x192, 0);
        v
    }

    #[test]
    fn reads_netatalks_finder_info() {
        let mut expected = [0u8; 32];
        expected[..9].copy_from_slice(b"BARRFOOO\x40");
        assert_eq!(finder_info_of(&netatalk_golden()), Some(expected));
    }

    #[test]
    fn a_new_header_is_netatalks_layout() {
        let mut finder = [0u8; 32];
        finder[..9].copy_from_slice(b"BARRFOOO\x40");
        assert_eq!(with_finder_info(None, &finder), netatalk_golden());
        let garbage = b"not an AppleDouble header".as_slice();
        assert_eq!(with_finder_info(Some(garbage), &finder), netatalk_golden());
    }

    #[test]
    fn replacing_the_finder_info_keeps_the_rest() {
        let mut existing = netatalk_golden();
        existing[0x162] = 0xAA; // a file date
        let finder = [7u8; 32];
        let out = with_finder_info(Some(&existing), &finder);
        assert_eq!(out.len(), existing.len());
        assert_eq!(out[0x162], 0xAA);
        assert_eq!(finder_info_of(&out), Some(finder));
    }

    #[test]
    fn hostile_headers_are_refused() {
        let good = netatalk_golden();
        let mut bad_magic = good.clone();
        bad_magic[0] = 1;
        // Entry count 0xFFFF: a table far longer than the buffer.
        let mut many = good.clone();
        many[24..26].copy_from_slice(&[0xFF, 0xFF]);
        // Finder info entry (the third) at an offset past the end.
        let mut past_end = good.clone();
        past_end[26 + 24 + 4..26 + 24 + 8].copy_from_slice(&0x1000u32.to_be_bytes());
        // Offset + length overflowing.
        let mut wraps = good.clone();
        wraps[26 + 24 + 4..26 + 24 + 12].copy_from_slice(&[0xFF; 8]);
        // Finder info overlapping the file dates (0x162..0x172).
        let mut overlap = good.clone();
        overlap[26 + 24 + 4..26 + 24 + 8].copy_from_slice(&0x160u32.to_be_bytes());
        // Finder info inside the entry table.
        let mut in_header = good.clone();
        in_header[26 + 24 + 4..26 + 24 + 8].copy_from_slice(&0x20u32.to_be_bytes());
        // The same id twice.
        let mut repeated = good.clone();
        repeated[26..30].copy_from_slice(&FINDER_INFO.to_be_bytes());
        for (what, bytes) in [
            ("magic", bad_magic),
            ("count", many),
            ("past end", past_end),
            ("wraps", wraps),
            ("overlap", overlap),
            ("in header", in_header),
            ("repeated", repeated),
            ("truncated", good[..20].to_vec()),
        ] {
            assert!(AppleDouble::decode(&bytes).is_err(), "{what}");
            assert_eq!(finder_info_of(&bytes), None, "{what}");
        }
    }

    #[test]
    fn the_sidecar_layout_is_sambas() {
        let mut samba = b"\x00\x05\x16\x07\x00\x02\x00\x00Netatalk        \x00\x02".to_vec();
        samba.extend_from_slice(b"\x00\x00\x00\x02\x00\x00\x00\x52\x00\x00\x00\x00");
        samba.extend_from_slice(b"\x00\x00\x00\x09\x00\x00\x00\x32\x00\x00\x00\x20");
        samba.resize(0x52, 0);
        assert_eq!(new_sidecar(), samba);
        assert_eq!(fork_placement(&samba, 0x52), Some((0x52, 0, 34)));
        // A Mac's: Finder info with its extended attributes up to 0xF00, then the fork.
        let mut mac = samba.clone();
        mac[8..24].copy_from_slice(b"Mac OS X        ");
        mac[30..38].copy_from_slice(&[0, 0, 0x0F, 0, 0, 0, 0, 3]);
        mac[46..50].copy_from_slice(&0xECEu32.to_be_bytes());
        assert_eq!(fork_placement(&mac[..0x52], 0xF03), Some((0xF00, 3, 34)));
        assert_eq!(fork_placement(&mac[..0x52], 0xF02), None);
    }

    /// A `._` file as macOS writes it (filler "Mac OS X", the Finder info entry running up to
    /// the fork with an `ATTR` block after the Finder info): type/creator "TYPECRTR", one
    /// extended attribute "a:b" = "xy", the resource fork "RF".
    pub(crate) fn mac_golden() -> Vec<u8> {
        let mut v = b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        \x00\x02".to_vec();
        v.extend_from_slice(&[0, 0, 0, 9, 0, 0, 0, 0x32, 0, 0, 0, 0x5A]);
        v.extend_from_slice(&[0, 0, 0, 2, 0, 0, 0, 0x8C, 0, 0, 0, 2]);
        v.extend_from_slice(b"TYPECRTR");
        v.resize(0x54, 0);
        v.extend_from_slice(b"ATTR\x00\x00\x00\x00");
        v.extend_from_slice(&[0, 0, 0, 0x8C, 0, 0, 0, 0x88, 0, 0, 0, 2]);
        v.extend_from_slice(&[0; 12]);
        v.extend_from_slice(&[0, 0, 0, 1]);
        v.extend_from_slice(&[0, 0, 0, 0x88, 0, 0, 0, 2, 0, 0, 4]);
        v.extend_from_slice(b"a:b\x00\x00xy\x00\x00RF");
        assert_eq!(v.len(), 0x8E);
        v
    }

    #[test]
    fn reads_a_macs_sidecar() {
        let golden = mac_golden();
        let mac = mac_sidecar(&golden, golden.len()).unwrap();
        let mut finder = [0u8; 32];
        finder[..8].copy_from_slice(b"TYPECRTR");
        assert_eq!(
            mac,
            MacSidecar {
                finder_info: finder,
                from_mac: true,
                xattrs: vec![("a:b", b"xy".as_slice())],
                fork_offset: 0x8C,
                fork_len: 2,
                embedded: true,
            }
        );
        assert_eq!(from_mac_or_embedded(&golden, golden.len()), Some(true));
        // Samba's layout has nothing to convert.
        let samba = new_sidecar();
        assert_eq!(from_mac_or_embedded(&samba, samba.len()), Some(false));
        let plain = mac_sidecar(&samba, samba.len()).unwrap();
        assert!(!plain.from_mac && !plain.embedded && plain.xattrs.is_empty());
        // The rewritten header is Samba's, with the Finder info and the fork's length.
        let mut expected = samba.clone();
        expected[34..38].copy_from_slice(&2u32.to_be_bytes());
        expected[0x32..0x52].copy_from_slice(&finder);
        assert_eq!(sidecar_header(&finder, 2), expected);
    }

    #[test]
    fn hostile_attr_blocks_are_refused() {
        let golden = mac_golden();
        let set = |at: usize, bytes: &[u8]| {
            let mut v = golden.clone();
            v[at..at + bytes.len()].copy_from_slice(bytes);
            v
        };
        let cases = [
            ("magic", set(0x54, b"ATTX")),
            // 0xFFFF entries: the table runs out of the entry long before.
            ("count", set(0x76, &[0xFF, 0xFF])),
            // The value before the Finder info entry, or past its end.
            ("value before", set(0x78, &[0, 0, 0, 0x10])),
            ("value past", set(0x7C, &[0, 0, 0, 0x10])),
            ("value wraps", set(0x78, &[0xFF, 0xFF, 0xFF, 0xFF])),
            // A name running past the entry, an empty one, one not UTF-8.
            ("name past", set(0x82, &[0xFF])),
            ("name empty", set(0x83, &[0])),
            ("name not utf-8", set(0x83, &[0xFF])),
            // The Finder info entry past the end of the file.
            ("finder info past", set(0x22, &[0, 0, 0, 0x8E])),
        ];
        for (what, bytes) in cases {
            assert!(mac_sidecar(&bytes, bytes.len()).is_err(), "{what}");
        }
        // Read short of the fork: refused, never a panic.
        for n in 0..0x8C {
            assert!(mac_sidecar(&golden[..n], golden.len()).is_err(), "{n}");
        }
    }

    #[test]
    fn the_blank_fork_is_macs() {
        let fork = blank_resource_fork();
        assert_eq!(
            &fork[16..59],
            b"This resource fork intentionally left blank"
        );
        assert_eq!(fork[..16], fork[256..272]);
        assert_eq!(&fork[282..], &[0, 0x1E, 0xFF, 0xFF]);
    }

    #[test]
    fn a_short_finder_info_entry_is_none() {
        let mut short = netatalk_golden();
        short[26 + 24 + 8..26 + 24 + 12].copy_from_slice(&16u32.to_be_bytes());
        assert_eq!(finder_info_of(&short), None);
        let finder = [1u8; 32];
        assert_eq!(
            finder_info_of(&with_finder_info(Some(&short), &finder)),
            Some(finder)
        );
    }
}
