#![no_main]
//! The decoders of what Mac clients and their files hand the server: the AAPL create context
//! (byte 0 = 0: a request; 1: a response; either must re-encode to what decodes the same) and a Time
//! Machine `Info.plist` (2: the band size must be all digits in the file) and an AppleDouble
//! header (3: a Netatalk metadata xattr or `._` file on the share, also as a Mac's `._` file
//! with its embedded extended attributes).

use libfuzzer_sys::fuzz_target;
use smb3d_smb2::aapl::{AaplRequest, ServerQueryResponse};
use smb3d_wire::Writer;

fuzz_target!(|data: &[u8]| {
    let Some((&which, body)) = data.split_first() else {
        return;
    };
    match which % 4 {
        0 => {
            if let Ok(AaplRequest::ServerQuery(query)) = AaplRequest::decode(body) {
                let mut again = Vec::new();
                AaplRequest::encode(&query, &mut Writer::new(&mut again));
                assert_eq!(
                    AaplRequest::decode(&again).unwrap(),
                    AaplRequest::ServerQuery(query)
                );
            }
        }
        1 => {
            if let Ok(response) = ServerQueryResponse::decode(body) {
                let mut again = Vec::new();
                response.encode(&mut Writer::new(&mut again));
                assert_eq!(ServerQueryResponse::decode(&again).unwrap(), response);
            }
        }
        3 => smb3d_server::fuzzing::apple_double(body),
        _ => {
            if let Ok(text) = std::str::from_utf8(body) {
                if let Some(size) = smb3d_server::fuzzing::time_machine_band_size(text) {
                    assert!(text.contains(&size.to_string()));
                }
            }
        }
    }
});
