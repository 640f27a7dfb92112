#![no_main]
//! The quota inputs of QUERY_INFO and SET_INFO (MS-FSCC 2.4.40): byte 0 picks the
//! SMB2_QUERY_QUOTA_INFO input (0) with its FILE_GET_QUOTA_INFORMATION SID list, or a
//! FILE_QUOTA_INFORMATION list (1). Walks never escape the buffer, never loop, and the entries
//! accepted rebuild into a list that decodes to the same entries.

use libfuzzer_sys::fuzz_target;
use smb3d_fscc::{
    QueryQuotaInfo, QuotaListEncoder, QuotaSelection, encode_get_quota_list, get_quota_list,
    quota_list,
};
use smb3d_wire::Writer;

/// Entries taken from one list; a walk must end within the buffer's length in entries.
fn accepted<T, E>(buf: &[u8], walk: impl Iterator<Item = Result<T, E>>) -> Vec<T> {
    let mut out = Vec::new();
    for (n, item) in walk.enumerate() {
        assert!(n <= buf.len(), "the walk moves forward");
        match item {
            Ok(v) => out.push(v),
            Err(_) => break,
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, buf)) = data.split_first() else {
        return;
    };
    if selector % 2 == 0 {
        let Ok(query) = QueryQuotaInfo::decode(buf) else {
            return;
        };
        let mut again = Vec::new();
        query.encode(&mut Writer::new(&mut again));
        let back = QueryQuotaInfo::decode(&again).expect("an encoded query decodes");
        assert_eq!(back.return_single, query.return_single);
        assert_eq!(back.restart_scan, query.restart_scan);
        if let QuotaSelection::Sids(list) = query.selection {
            let sids = accepted(list, get_quota_list(list));
            let mut rebuilt = Vec::new();
            encode_get_quota_list(&mut Writer::new(&mut rebuilt), &sids);
            assert_eq!(accepted(&rebuilt, get_quota_list(&rebuilt)), sids);
        }
    } else {
        let entries = accepted(buf, quota_list(buf));
        let mut again = Vec::new();
        let mut w = Writer::new(&mut again);
        let mut enc = QuotaListEncoder::new(&w, usize::MAX);
        for entry in &entries {
            assert!(enc.push(&mut w, entry));
        }
        assert_eq!(accepted(&again, quota_list(&again)), entries);
    }
});
