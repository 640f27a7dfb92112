#![no_main]
//! The server's client-path parser (`smb3d_server::names::parse_path`), input as UTF-16LE as
//! it arrives in CREATE. An accepted path never leaves the share: no component is empty, `.`,
//! `..`, or holds a separator or a character MS-FSCC 2.1.5.2 forbids.

use libfuzzer_sys::fuzz_target;
use smb3d_server::names::{check_component, parse_path};

fuzz_target!(|data: &[u8]| {
    let units: Vec<u16> = data
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let Ok(name) = String::from_utf16(&units) else {
        return;
    };
    if let Ok(path) = parse_path(&name) {
        for component in &path.components {
            assert!(!component.is_empty());
            assert!(component != "." && component != "..", "{name:?}");
            assert!(!component.contains(['\\', '/', '\0', ':']), "{name:?}");
            assert_eq!(check_component(component), Ok(()));
        }
        assert_eq!(parse_path(&path.to_windows()), Ok(path.clone()));
    }
});
