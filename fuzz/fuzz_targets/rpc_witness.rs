#![no_main]
//! The witness request decoders (MS-SWN 3.1.4) and the registration table behind them: the
//! first byte picks the opnum, the rest is the stub; a decoded registration is checked and
//! entered, then told of a node stopping and its address moving, without panicking.

use std::net::{IpAddr, Ipv4Addr};

use libfuzzer_sys::fuzz_target;
use smb3d_rpc::witness::{Call, Cluster, Event, Registrations, decode_call};

const ADDRESS: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 21));

struct OneNode;

impl Cluster for OneNode {
    fn is_server_name(&self, name: &str) -> bool {
        name.eq_ignore_ascii_case("fs")
    }
    fn node_of(&self, address: IpAddr) -> Option<String> {
        (address == ADDRESS).then(|| "n1".to_owned())
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&opnum, stub)) = data.split_first() else {
        return;
    };
    let Some(Ok(call)) = decode_call(u16::from(opnum), stub) else {
        return;
    };
    let mut table = Registrations::new(2, 3, 4);
    match call {
        Call::Register(args) => {
            if table.register("fuzzer", &args, &OneNode, [1; 16]).is_ok() {
                table.publish(&Event::NodeDown("n1".into()));
                table.publish(&Event::AddressMoved { address: ADDRESS, to: Some("n2".into()) });
                let _ = table.take(&[1; 16]);
            }
        }
        Call::UnRegister(handle) | Call::AsyncNotify(handle) => {
            let key: [u8; 16] = handle[4..].try_into().unwrap_or_default();
            let _ = table.take(&key);
            let _ = table.unregister(&key);
        }
        Call::GetInterfaceList => {}
    }
});
