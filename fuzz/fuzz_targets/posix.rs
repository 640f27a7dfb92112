#![no_main]
//! The SMB3 POSIX extensions' decoders: byte 0 picks the POSIX create context request (0), the
//! create context response block (1), FILE_POSIX_INFORMATION (2) or a POSIX directory listing
//! (3); whatever decodes must re-encode to bytes that decode the same.

use libfuzzer_sys::fuzz_target;
use smb3d_fscc::posix::{FilePosixInformation, PosixCcInfo, PosixDirListEncoder, posix_dir_list};
use smb3d_smb2::posix::PosixCreateRequest;
use smb3d_wire::Writer;

fuzz_target!(|data: &[u8]| {
    let Some((&which, body)) = data.split_first() else {
        return;
    };
    let mut again = Vec::new();
    match which % 4 {
        0 => {
            if let Ok(request) = PosixCreateRequest::decode(body) {
                request.encode(&mut Writer::new(&mut again));
                assert_eq!(again, body);
            }
        }
        1 => {
            if let Ok(info) = PosixCcInfo::decode(body) {
                info.encode(&mut Writer::new(&mut again));
                assert_eq!(again.len(), info.encoded_len());
                assert_eq!(again, body[..again.len()]);
                assert_eq!(PosixCcInfo::decode(&again).unwrap(), info);
            }
        }
        2 => {
            if let Ok(info) = FilePosixInformation::decode(body) {
                info.encode(&mut Writer::new(&mut again));
                assert_eq!(again.len(), info.encoded_len());
                assert_eq!(FilePosixInformation::decode(&again).unwrap(), info);
            }
        }
        _ => {
            let entries: Vec<_> = posix_dir_list(body).map_while(Result::ok).collect();
            let mut w = Writer::new(&mut again);
            let mut list = PosixDirListEncoder::new(&w, usize::MAX);
            for (info, name) in &entries {
                assert!(list.push(&mut w, info, name));
            }
            let back: Vec<_> = posix_dir_list(&again).map(Result::unwrap).collect();
            assert_eq!(back, entries);
        }
    }
});
