#![no_main]
//! Previous versions (MS-SMB2 2.2.32.2): @GMT tokens from path components and TWrp times,
//! and SRV_SNAPSHOT_ARRAY. A token that parses prints back as it was written and names the
//! same second as its FILETIME; an array that decodes re-encodes to the same bytes.

use libfuzzer_sys::fuzz_target;
use smb3d_smb2::snapshot::{GmtToken, SnapshotArray};
use smb3d_wire::{FileTime, Writer};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    match selector % 3 {
        0 => {
            if let Some(token) = std::str::from_utf8(rest).ok().and_then(GmtToken::parse) {
                assert_eq!(token.to_string().as_bytes(), rest);
                assert_eq!(GmtToken::from_filetime(token.filetime()), Some(token));
            }
        }
        1 => {
            let Some(time) = rest.get(..8).map(|b| u64::from_le_bytes(b.try_into().unwrap()))
            else {
                return;
            };
            if let Some(token) = GmtToken::from_filetime(FileTime(time)) {
                assert_eq!(GmtToken::parse(&token.to_string()), Some(token));
                assert!(token.filetime().0 <= time && time - token.filetime().0 < 10_000_000);
            }
        }
        _ => {
            if let Ok(array) = SnapshotArray::decode(rest) {
                if !array.tokens.is_empty() && array.tokens.len() as u32 == array.number_of_snapshots
                {
                    let mut out = Vec::new();
                    SnapshotArray::encode_for(&array.tokens, usize::MAX, &mut Writer::new(&mut out));
                    assert_eq!(SnapshotArray::decode(&out).expect("re-encoding decodes"), array);
                }
            }
        }
    }
});
