#![no_main]
//! The NextEntryOffset lists of MS-FSCC: directory listings of every QUERY_DIRECTORY class
//! (the first byte is the class), FILE_FULL_EA_INFORMATION (15), FILE_STREAM_INFORMATION (22)
//! and the FILE_GET_EA_INFORMATION input (0). Walks never escape the buffer, never loop, and
//! the entries accepted rebuild into a list that decodes to the same entries.

use libfuzzer_sys::fuzz_target;
use smb3d_fscc::{
    DirListEncoder, FileInformationClass, FullEaListEncoder, StreamListEncoder, dir_list,
    encode_get_ea_list, file_stream_list, full_ea_list, get_ea_list,
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
    match selector {
        0 => {
            let names: Vec<&[u8]> = accepted(buf, get_ea_list(buf))
                .iter()
                .map(|e| e.name)
                .collect();
            let mut again = Vec::new();
            assert!(encode_get_ea_list(
                &mut Writer::new(&mut again),
                names.iter().copied()
            ));
            let back: Vec<&[u8]> = accepted(&again, get_ea_list(&again))
                .iter()
                .map(|e| e.name)
                .collect();
            assert_eq!(back, names);
        }
        15 => {
            let eas = accepted(buf, full_ea_list(buf));
            let mut again = Vec::new();
            let mut w = Writer::new(&mut again);
            let mut enc = FullEaListEncoder::new(&w, usize::MAX);
            for ea in &eas {
                assert!(enc.push(&mut w, ea), "a decoded EA is encodable");
            }
            assert_eq!(accepted(&again, full_ea_list(&again)), eas);
        }
        22 => {
            let streams = accepted(buf, file_stream_list(buf));
            let mut again = Vec::new();
            let mut w = Writer::new(&mut again);
            let mut enc = StreamListEncoder::new(&w, usize::MAX);
            for s in &streams {
                assert!(enc.push(
                    &mut w,
                    &s.stream_name,
                    s.stream_size,
                    s.stream_allocation_size
                ));
            }
            assert_eq!(accepted(&again, file_stream_list(&again)), streams);
        }
        class => {
            let class = FileInformationClass(class);
            let Ok(walk) = dir_list(class, buf) else {
                return;
            };
            let entries = accepted(buf, walk);
            let mut again = Vec::new();
            let mut w = Writer::new(&mut again);
            let Ok(mut enc) = DirListEncoder::new(class, &w, usize::MAX) else {
                panic!("a class that decodes also encodes");
            };
            for e in &entries {
                assert!(enc.push(&mut w, &e.as_entry()));
            }
            let once = accepted(&again, dir_list(class, &again).expect("class decodes"));
            assert_eq!(once.len(), entries.len());
            let mut twice_buf = Vec::new();
            let mut w = Writer::new(&mut twice_buf);
            let mut enc = DirListEncoder::new(class, &w, usize::MAX).expect("class encodes");
            for e in &once {
                assert!(enc.push(&mut w, &e.as_entry()));
            }
            assert_eq!(again, twice_buf, "directory entries re-encode stably");
        }
    }
});
