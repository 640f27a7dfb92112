//! Entry points for the cargo-fuzz targets (`fuzz/`) to decoders kept inside the crate; built
//! only with the `fuzzing` feature.

use crate::state::persistent::Record;

/// Decodes `body` as a persistent-handle record whose checksum holds (a random input would
/// almost never pass the checksum, and the fields behind it would go untested); a record it
/// accepts encodes to bytes that decode to the same record.
pub fn persistent_record(body: &[u8]) {
    if let Ok(record) = Record::decode_body(body) {
        let again = Record::decode(&record.encode());
        assert_eq!(
            again.ok().as_ref(),
            Some(&record),
            "a record re-encodes stably"
        );
    }
}

/// The band size a Time Machine `Info.plist` names, as a share's free space counts it.
pub fn time_machine_band_size(plist: &str) -> Option<u64> {
    crate::fs::time_machine::band_size_in(plist)
}

/// Decodes `bytes` as an AppleDouble header (a Netatalk metadata xattr or a `._` file on a
/// share): an accepted header's entries lie inside the buffer, replacing its Finder info
/// yields a header that reads back the new Finder info, a resource fork found in a `._`
/// file lies inside it, and so do the extended attributes a Mac's `._` file embeds.
pub fn apple_double(bytes: &[u8]) {
    use crate::fs::apple_double::{AppleDouble, finder_info_of, with_finder_info};
    if let Ok(ad) = AppleDouble::decode(bytes) {
        for e in ad.entries() {
            assert_eq!(ad.entry(e.id).map(<[u8]>::len), Some(e.len));
        }
    }
    let finder = [0x5A; 32];
    assert_eq!(
        finder_info_of(&with_finder_info(Some(bytes), &finder)),
        Some(finder)
    );
    // As a `._` file whose first bytes were read: a fork found lies inside the file, after
    // the header whose length field it names.
    let head = bytes.get(..bytes.len().min(218)).unwrap_or_default();
    if let Some((offset, len, len_field)) =
        crate::fs::apple_double::fork_placement(head, bytes.len())
    {
        assert!(offset + len <= bytes.len() as u64);
        assert!(len_field + 4 <= head.len() as u64);
        assert!(len == 0 || len_field + 4 <= offset);
    }
    // As a Mac's `._` file read up to its fork, for a conversion: the fork and every embedded
    // attribute lie inside the file, the names are short enough for a stream's xattr.
    if let Ok(mac) = crate::fs::apple_double::mac_sidecar(bytes, bytes.len()) {
        assert!(mac.fork_offset + mac.fork_len <= bytes.len() as u64);
        for (name, value) in &mac.xattrs {
            assert!(!name.is_empty() && name.len() <= 234);
            assert!(value.len() <= bytes.len());
        }
        assert!(crate::fs::apple_double::from_mac_or_embedded(bytes, bytes.len()).is_some());
    }
}
