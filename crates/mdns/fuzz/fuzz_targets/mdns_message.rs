//! Any datagram: decoding never panics, a decoded message re-encodes to one that decodes to the
//! same message, and a running responder survives it.
#![no_main]

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use smb3d_mdns::dns::Message;
use smb3d_mdns::{Responder, ServiceInfo};

fuzz_target!(|data: &[u8]| {
    if let Ok(message) = Message::decode(data) {
        let again = Message::decode(&message.encode()).expect("re-encoded message decodes");
        assert_eq!(again.encode(), message.encode());
    }
    let start = Instant::now();
    let info = ServiceInfo {
        instance: "FUZZ".into(),
        host: "fuzz".into(),
        port: 445,
        model: Some("Xserve".into()),
        addresses: vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
        time_machine: vec!["Backups".into()],
    };
    let mut responder = Responder::new(info, start, 1);
    let from = SocketAddr::from((Ipv4Addr::LOCALHOST, 5353));
    let mut now = start;
    for _ in 0..8 {
        responder.handle(data, from, now);
        while responder.poll_transmit(now).is_some() {}
        now += Duration::from_millis(300);
    }
});
