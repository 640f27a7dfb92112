#![no_main]
//! compound::split: every PDU is a header or more, lies inside the message, and they tile it.

use libfuzzer_sys::fuzz_target;
use smb3d_smb2::compound::split;
use smb3d_smb2::header::SMB2_HEADER_LEN;

fuzz_target!(|data: &[u8]| {
    let mut covered = 0;
    for item in split(data) {
        let Ok((header, pdu)) = item else { break };
        assert!(pdu.len() >= SMB2_HEADER_LEN);
        assert_eq!(pdu.as_ptr(), data[covered..].as_ptr());
        if header.next_command != 0 {
            assert_eq!(pdu.len(), header.next_command as usize);
        }
        covered += pdu.len();
    }
    assert!(covered <= data.len());
});
