//! FSCTL_QUERY_NETWORK_INTERFACE_INFO (MS-SMB2 3.3.5.15.11): the machine's interfaces and
//! addresses as they are, with the link speed and receive-side scaling the kernel reports.

use std::net::IpAddr;

use if_addrs::IfOperStatus;
use smb3d_dtyp::NtStatus;
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::fsctl::{InterfaceCapability, NetworkInterface};
use smb3d_smb2::ioctl::IoctlRequest;
use smb3d_wire::Writer;

use super::respond;
use crate::blocking::blocking;
use crate::request::ctx::Ctx;

/// What a link whose speed the kernel does not know (loopback, virtual devices) reports, as
/// Samba reports it.
const DEFAULT_LINK_SPEED: u64 = 1_000_000_000;

pub(super) fn query(
    cx: &mut Ctx<'_>,
    req: &IoctlRequest<'_>,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    // The list is for multichannel, which is SMB 3 (Windows answers 2.x this way).
    if !cx.negotiated.is_smb3() {
        return Err(NtStatus::NOT_SUPPORTED);
    }
    let interfaces = blocking(local_interfaces);
    if interfaces.len() * NetworkInterface::LEN > req.max_output_response as usize {
        return Err(NtStatus::BUFFER_TOO_SMALL);
    }
    respond(w, req, FileId::ANY, |w| {
        NetworkInterface::encode_list(&interfaces, w);
    });
    Ok(NtStatus::SUCCESS)
}

/// Every address of every interface that is up (or whose state is unknown, as loopback's is),
/// except IPv6 link-local ones, which need a scope the list cannot carry to clients elsewhere.
fn local_interfaces() -> Vec<NetworkInterface> {
    let Ok(addresses) = if_addrs::get_if_addrs() else {
        return Vec::new();
    };
    addresses
        .into_iter()
        .filter(|a| a.oper_status != IfOperStatus::Down)
        .filter(|a| !matches!(a.ip(), IpAddr::V6(v6) if v6.is_unicast_link_local()))
        .filter_map(|a| {
            let if_index = a.index.filter(|&i| i != 0)?;
            Some(NetworkInterface {
                if_index,
                capability: capability(&a.name),
                link_speed: link_speed(&a.name),
                address: a.ip(),
            })
        })
        .collect()
}

/// The speed in `/sys/class/net/NAME/speed` (Mbit/s), when the driver knows it.
fn link_speed(name: &str) -> u64 {
    std::fs::read_to_string(format!("/sys/class/net/{name}/speed"))
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .filter(|&mbits| mbits > 0)
        .map_or(DEFAULT_LINK_SPEED, |mbits| mbits * 1_000_000)
}

/// RSS where the device has more than one receive queue.
fn capability(name: &str) -> InterfaceCapability {
    let queues = std::fs::read_dir(format!("/sys/class/net/{name}/queues"))
        .map(|dir| {
            dir.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
                .count()
        })
        .unwrap_or(0);
    if queues > 1 {
        InterfaceCapability::RSS
    } else {
        InterfaceCapability::empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_listed() {
        let list = local_interfaces();
        assert!(
            list.iter()
                .any(|i| i.address.is_loopback() && i.if_index != 0),
            "{list:?}"
        );
        assert!(list.iter().all(|i| i.link_speed > 0));
    }

    #[test]
    fn unknown_devices_get_the_default_speed() {
        assert_eq!(link_speed("no-such-device"), DEFAULT_LINK_SPEED);
        assert_eq!(capability("no-such-device"), InterfaceCapability::empty());
    }
}
