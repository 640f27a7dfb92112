#![no_main]
//! The MS-FSCC 2.3 FSCTL bodies an IOCTL carries: the first byte picks the structure, the rest
//! is the input buffer. What decodes must re-encode stably; reparse buffers and symlink data
//! must also report their encoded length exactly, and a trim list its range count.

use libfuzzer_sys::fuzz_target;
use smb3d_fscc::{
    DuplicateExtents, FileAllocatedRange, FileLevelTrim, FileObjectIdBuffer, FilePipePeekReply,
    FilePipeWaitRequest, FileZeroDataInformation, IntegrityInformation, ReparseBuffer, ReparseTag,
    SymlinkReparse, decode_compression_state, decode_set_integrity, decode_set_sparse,
};
use smb3d_fuzz::stable;
use smb3d_wire::Writer;

fn encoded(f: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
    let mut out = Vec::new();
    f(&mut Writer::new(&mut out));
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, buf)) = data.split_first() else {
        return;
    };
    let scratch = &mut Vec::new();
    match selector % 12 {
        0 => stable::<FilePipePeekReply>(buf, scratch),
        1 => stable::<FilePipeWaitRequest>(buf, scratch),
        2 => stable::<DuplicateExtents>(buf, scratch),
        3 => {
            if let Ok(v) = DuplicateExtents::decode_ex(buf) {
                let once = encoded(|w| v.encode_ex(w));
                assert_eq!(
                    DuplicateExtents::decode_ex(&once).expect("re-encoding decodes"),
                    v
                );
            }
        }
        4 => {
            let _ = decode_set_sparse(buf);
        }
        5 => stable::<FileZeroDataInformation>(buf, scratch),
        6 => stable::<FileAllocatedRange>(buf, scratch),
        7 => {
            if let Ok(v) = ReparseBuffer::decode(buf) {
                let once = encoded(|w| v.encode(w));
                assert_eq!(once.len(), v.encoded_len());
                assert_eq!(
                    ReparseBuffer::decode(&once).expect("re-encoding decodes"),
                    v
                );
                if v.tag == ReparseTag::SYMLINK {
                    if let Ok(link) = SymlinkReparse::decode(v.data) {
                        let again = encoded(|w| link.encode(w));
                        assert_eq!(again.len(), link.encoded_len());
                        assert_eq!(
                            SymlinkReparse::decode(&again).expect("symlink decodes"),
                            link
                        );
                    }
                }
            }
        }
        8 => stable::<FileObjectIdBuffer>(buf, scratch),
        9 => {
            stable::<IntegrityInformation>(buf, scratch);
            let _ = decode_set_integrity(buf);
        }
        10 => {
            if let Ok(trim) = FileLevelTrim::decode(buf) {
                let ranges: Vec<(u64, u64)> = trim.ranges().collect();
                assert_eq!(ranges.len(), trim.len());
                let once = encoded(|w| FileLevelTrim::encode(trim.key, &ranges, w));
                assert_eq!(
                    FileLevelTrim::decode(&once).expect("re-encoding decodes"),
                    trim
                );
            }
        }
        _ => {
            let _ = decode_compression_state(buf);
        }
    }
});
