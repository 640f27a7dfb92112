//! The Witness service's wire formats (MS-SWN): the request stubs of its five calls, the
//! response stubs, the notification messages of 2.2.2.1-2.2.2.3, and the registration table of
//! 3.1.1 bounded per client and in all. Sans-IO like the rest of the crate: the server's
//! ncacn_ip_tcp listener owns the sockets and the waiting of WitnessrAsyncNotify.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

use smb3d_wire::DecodeError;

use crate::ndr::{CONTEXT_HANDLE_LEN, NdrReader, NdrWriter};
use crate::pdu::{SyntaxId, guid};

/// The witness interface, ccd8c074-d0e5-4a40-92b4-d074faa6ba28 v1.1 (MS-SWN 1.9).
pub const WITNESS: SyntaxId = SyntaxId {
    uuid: guid(
        0xccd8_c074,
        0xd0e5,
        0x4a40,
        [0x92, 0xb4, 0xd0, 0x74, 0xfa, 0xa6, 0xba, 0x28],
    ),
    major: 1,
    minor: 1,
};

/// MS-SWN 3.1.4.1.
pub const OP_GET_INTERFACE_LIST: u16 = 0;
/// MS-SWN 3.1.4.2.
pub const OP_REGISTER: u16 = 1;
/// MS-SWN 3.1.4.3.
pub const OP_UNREGISTER: u16 = 2;
/// MS-SWN 3.1.4.4.
pub const OP_ASYNC_NOTIFY: u16 = 3;
/// MS-SWN 3.1.4.5.
pub const OP_REGISTER_EX: u16 = 4;

/// The protocol version WitnessrRegister takes (3.1.4.2).
pub const VERSION_1: u32 = 0x0001_0001;
/// The protocol version WitnessrRegisterEx takes (3.1.4.5) and the service reports.
pub const VERSION_2: u32 = 0x0002_0000;

/// The return codes the calls use (MS-ERREF 2.2).
pub mod error {
    pub const SUCCESS: u32 = 0;
    pub const ACCESS_DENIED: u32 = 0x05;
    pub const INVALID_PARAMETER: u32 = 0x57;
    pub const NO_MORE_ITEMS: u32 = 0x103;
    pub const NOT_FOUND: u32 = 0x490;
    pub const REVISION_MISMATCH: u32 = 0x51A;
    pub const NO_SYSTEM_RESOURCES: u32 = 0x5AA;
    pub const TIMEOUT: u32 = 0x5B4;
    pub const INVALID_STATE: u32 = 0x139F;
}

/// WITNESS_INTERFACE_INFO.State (2.2.2.5).
pub const STATE_AVAILABLE: u16 = 0x0001;
/// WITNESS_INTERFACE_INFO.State (2.2.2.5).
pub const STATE_UNAVAILABLE: u16 = 0x00FF;
/// WITNESS_INTERFACE_INFO.Flags: IPV4 holds an address.
pub const IF_IPV4: u32 = 0x1;
/// WITNESS_INTERFACE_INFO.Flags: IPV6 holds an address.
pub const IF_IPV6: u32 = 0x2;
/// WITNESS_INTERFACE_INFO.Flags: the interface takes witness registrations.
pub const IF_INTERFACE_WITNESS: u32 = 0x4;

/// RESP_ASYNC_NOTIFY.MessageType (2.2.2.4).
pub const RESOURCE_CHANGE_NOTIFICATION: u32 = 1;
/// RESP_ASYNC_NOTIFY.MessageType (2.2.2.4).
pub const CLIENT_MOVE_NOTIFICATION: u32 = 2;
/// RESOURCE_CHANGE.ChangeType (2.2.2.1).
pub const RESOURCE_STATE_AVAILABLE: u32 = 0x01;
/// RESOURCE_CHANGE.ChangeType (2.2.2.1).
pub const RESOURCE_STATE_UNAVAILABLE: u32 = 0xFF;
/// IPADDR_INFO.Flags (2.2.2.2).
pub const IPADDR_V4: u32 = 0x01;
/// IPADDR_INFO.Flags (2.2.2.2).
pub const IPADDR_V6: u32 = 0x02;
/// IPADDR_INFO.Flags (2.2.2.2), version 2 only.
pub const IPADDR_ONLINE: u32 = 0x08;
/// RegisterEx Flags: notifications of any of the server's addresses (3.1.4.5).
pub const REGISTER_IP_NOTIFICATION: u32 = 0x1;

/// WCHAR InterfaceGroupName[260] (2.2.2.5).
const GROUP_NAME_UNITS: usize = 260;
/// The longest string a request may name: a DNS name is at most 255 characters, an address
/// far less; what is longer is no name of this server.
const MAX_NAME_UNITS: usize = 512;

/// A decoded witness request stub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// WitnessrGetInterfaceList: no `[in]` parameters beyond the binding.
    GetInterfaceList,
    /// WitnessrRegister or WitnessrRegisterEx.
    Register(RegisterArgs),
    /// WitnessrUnRegister.
    UnRegister([u8; CONTEXT_HANDLE_LEN]),
    /// WitnessrAsyncNotify.
    AsyncNotify([u8; CONTEXT_HANDLE_LEN]),
}

/// The parameters of WitnessrRegister (3.1.4.2) and WitnessrRegisterEx (3.1.4.5); the
/// strings are `[unique]` and so may be NULL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterArgs {
    /// Whether the call was RegisterEx.
    pub ex: bool,
    pub version: u32,
    pub net_name: Option<String>,
    /// RegisterEx only.
    pub share_name: Option<String>,
    pub ip_address: Option<String>,
    pub client_computer_name: Option<String>,
    /// RegisterEx only; 0 for Register.
    pub flags: u32,
    /// RegisterEx only, in seconds; 0 for Register (no timeout).
    pub keep_alive_timeout: u32,
}

/// Decodes the request stub of `opnum`; `None` for an opnum the interface lacks.
pub fn decode_call(opnum: u16, stub: &[u8]) -> Option<Result<Call, DecodeError>> {
    let mut r = NdrReader::new(stub);
    Some(match opnum {
        OP_GET_INTERFACE_LIST => Ok(Call::GetInterfaceList),
        OP_REGISTER => register_args(&mut r, false).map(Call::Register),
        OP_REGISTER_EX => register_args(&mut r, true).map(Call::Register),
        OP_UNREGISTER => r.context_handle("pContext").map(Call::UnRegister),
        OP_ASYNC_NOTIFY => r.context_handle("pContext").map(Call::AsyncNotify),
        _ => return None,
    })
}

fn register_args(r: &mut NdrReader<'_>, ex: bool) -> Result<RegisterArgs, DecodeError> {
    let version = r.u32("Version")?;
    let net_name = unique_string(r, "NetName")?;
    let share_name = if ex {
        unique_string(r, "ShareName")?
    } else {
        None
    };
    let ip_address = unique_string(r, "IpAddress")?;
    let client_computer_name = unique_string(r, "ClientComputerName")?;
    let (flags, keep_alive_timeout) = if ex {
        (r.u32("Flags")?, r.u32("KeepAliveTimeout")?)
    } else {
        (0, 0)
    };
    Ok(RegisterArgs {
        ex,
        version,
        net_name,
        share_name,
        ip_address,
        client_computer_name,
        flags,
        keep_alive_timeout,
    })
}

/// A top-level `[in, string, unique] LPWSTR`: the referent, then at once its pointee.
fn unique_string(
    r: &mut NdrReader<'_>,
    field: &'static str,
) -> Result<Option<String>, DecodeError> {
    if !r.pointer(field)? {
        return Ok(None);
    }
    let s = r.string(field)?;
    if s.encode_utf16().count() > MAX_NAME_UNITS {
        return Err(DecodeError::invalid(field));
    }
    Ok(Some(s))
}

/// One entry of WitnessrGetInterfaceList's answer (2.2.2.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceInfo {
    /// The interface group: the node serving the address.
    pub group_name: String,
    pub address: IpAddr,
    pub available: bool,
}

/// The IPV4 and IPV6 fields of witness structures: each address in network byte order, the
/// other zero (how Samba's rpcclient 4.17 reads them: 127.0.0.21 sent as the number 0x7f000015
/// little-endian showed as 21.0.0.127).
fn address_fields(address: IpAddr) -> ([u8; 4], [u8; 16]) {
    match address {
        IpAddr::V4(v4) => (v4.octets(), [0; 16]),
        IpAddr::V6(v6) => ([0; 4], v6.octets()),
    }
}

/// WitnessrGetInterfaceList's response stub: the list (3.1.4.1) and the return code;
/// ERROR_NO_MORE_ITEMS with a NULL list when there is nothing to report.
pub fn encode_interface_list(out: &mut NdrWriter<'_>, interfaces: &[InterfaceInfo]) {
    if interfaces.is_empty() {
        out.pointer(false).u32(error::NO_MORE_ITEMS);
        return;
    }
    let count = u32::try_from(interfaces.len()).unwrap_or(u32::MAX);
    out.pointer(true).u32(count).pointer(true).u32(count);
    for interface in interfaces {
        let mut name: Vec<u16> = interface
            .group_name
            .encode_utf16()
            .take(GROUP_NAME_UNITS - 1)
            .collect();
        name.resize(GROUP_NAME_UNITS, 0);
        out.align(4);
        for unit in name {
            out.u16(unit);
        }
        let family = if interface.address.is_ipv4() {
            IF_IPV4
        } else {
            IF_IPV6
        };
        let state = if interface.available {
            STATE_AVAILABLE
        } else {
            STATE_UNAVAILABLE
        };
        let (ipv4, ipv6) = address_fields(interface.address);
        out.u32(VERSION_2)
            .u16(state)
            .align(4)
            .bytes(&ipv4)
            .bytes(&ipv6);
        out.u32(family | IF_INTERFACE_WITNESS);
    }
    out.u32(error::SUCCESS);
}

/// WitnessrRegister(Ex)'s response stub: the context handle (all zero on failure) and the
/// return code.
pub fn encode_register(out: &mut NdrWriter<'_>, handle: Option<&[u8; 16]>, status: u32) {
    out.u32(0).bytes(handle.map_or(&[0; 16], |h| h)).u32(status);
}

/// WitnessrUnRegister's response stub.
pub fn encode_status(out: &mut NdrWriter<'_>, status: u32) {
    out.u32(status);
}

/// A batch of notifications of one type, as RESP_ASYNC_NOTIFY carries them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub message_type: u32,
    pub count: u32,
    pub buffer: Vec<u8>,
}

/// WitnessrAsyncNotify's response stub: the RESP_ASYNC_NOTIFY (NULL on failure) and the
/// return code.
pub fn encode_async_notify(out: &mut NdrWriter<'_>, answer: Result<&Notification, u32>) {
    match answer {
        Ok(n) => {
            let len = u32::try_from(n.buffer.len()).unwrap_or(u32::MAX);
            out.pointer(true)
                .u32(n.message_type)
                .u32(len)
                .u32(n.count)
                .pointer(true)
                .u32(len)
                .bytes(&n.buffer)
                .align(4)
                .u32(error::SUCCESS);
        }
        Err(status) => {
            out.pointer(false).u32(status);
        }
    }
}

/// RESOURCE_CHANGE messages (2.2.2.1): each its length, the change type and the resource's
/// name with a terminator, little-endian.
pub fn resource_change(changes: &[(&str, bool)]) -> Notification {
    let mut buffer = Vec::new();
    for (name, available) in changes {
        let units: Vec<u16> = name.encode_utf16().chain([0]).collect();
        let len = 8 + units.len() * 2;
        buffer.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_le_bytes());
        let change = if *available {
            RESOURCE_STATE_AVAILABLE
        } else {
            RESOURCE_STATE_UNAVAILABLE
        };
        buffer.extend_from_slice(&change.to_le_bytes());
        for unit in units {
            buffer.extend_from_slice(&unit.to_le_bytes());
        }
    }
    Notification {
        message_type: RESOURCE_CHANGE_NOTIFICATION,
        count: u32::try_from(changes.len()).unwrap_or(u32::MAX),
        buffer,
    }
}

/// A CLIENT_MOVE message (2.2.2.3): one IPADDR_INFO_LIST naming the addresses the client is
/// to move to, each an IPADDR_INFO (2.2.2.2) marked online.
pub fn client_move(addresses: &[IpAddr]) -> Notification {
    const INFO_LEN: usize = 24;
    let len = 12 + addresses.len() * INFO_LEN;
    let mut buffer = Vec::with_capacity(len);
    buffer.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_le_bytes());
    buffer.extend_from_slice(&0u32.to_le_bytes());
    let count = u32::try_from(addresses.len()).unwrap_or(u32::MAX);
    buffer.extend_from_slice(&count.to_le_bytes());
    for &address in addresses {
        let family = if address.is_ipv4() {
            IPADDR_V4
        } else {
            IPADDR_V6
        };
        buffer.extend_from_slice(&(family | IPADDR_ONLINE).to_le_bytes());
        let (ipv4, ipv6) = address_fields(address);
        buffer.extend_from_slice(&ipv4);
        buffer.extend_from_slice(&ipv6);
    }
    Notification {
        message_type: CLIENT_MOVE_NOTIFICATION,
        count: 1,
        buffer,
    }
}

/// What happened in the cluster, as the registrations hear of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A node stopped (its lease in etcd ended).
    NodeDown(String),
    /// A public address is now served by `to` (None: by no node).
    AddressMoved { address: IpAddr, to: Option<String> },
}

/// One WitnessRegistration (3.1.1.2).
#[derive(Debug)]
struct Registration {
    /// The account that registered (as the association authenticated it).
    user: String,
    client: String,
    net_name: String,
    ip_address: IpAddr,
    /// The node serving `ip_address` as last told, None once told it went.
    node: Option<String>,
    ip_notification: bool,
    keep_alive_secs: u32,
    pending: VecDeque<Notification>,
}

/// Why a registration was refused, as the call's return code says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused(pub u32);

/// What the registration checks need from the cluster: the names it answers to and the
/// addresses it serves, with their nodes.
pub trait Cluster {
    /// Whether `name` (a NetBIOS or DNS name, any case) is a name of this server.
    fn is_server_name(&self, name: &str) -> bool;
    /// The node serving `address` now, when it is a public address of the cluster.
    fn node_of(&self, address: IpAddr) -> Option<String>;
}

/// The WitnessRegistrationList (3.1.1.2), bounded: a client (by ClientComputerName) holds at
/// most `per_client` registrations, an account at most `per_user` whatever client names it
/// gives, and the table `total`; each keeps at most [`MAX_PENDING`]
/// undelivered notifications, the oldest dropped first.
#[derive(Debug)]
pub struct Registrations {
    by_key: HashMap<[u8; 16], Registration>,
    per_client: usize,
    per_user: usize,
    total: usize,
}

/// Undelivered notifications one registration keeps.
pub const MAX_PENDING: usize = 16;

impl Registrations {
    pub fn new(per_client: usize, per_user: usize, total: usize) -> Self {
        Self {
            by_key: HashMap::new(),
            per_client,
            per_user,
            total,
        }
    }

    /// How many registrations there are.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// WitnessrRegister / WitnessrRegisterEx's checks (3.1.4.2, 3.1.4.5), then a new entry of
    /// the account `user` under `key` (a fresh random context handle GUID from the caller).
    /// A bound reached is ERROR_NO_SYSTEM_RESOURCES: MS-SWN names no status for it, and this
    /// MS-ERREF one says the server, not the request, is short.
    pub fn register(
        &mut self,
        user: &str,
        args: &RegisterArgs,
        cluster: &dyn Cluster,
        key: [u8; 16],
    ) -> Result<(), Refused> {
        let wanted = if args.ex { VERSION_2 } else { VERSION_1 };
        if args.version != wanted {
            return Err(Refused(error::REVISION_MISMATCH));
        }
        let (Some(net_name), Some(ip), Some(client)) =
            (&args.net_name, &args.ip_address, &args.client_computer_name)
        else {
            return Err(Refused(error::INVALID_PARAMETER));
        };
        if !cluster.is_server_name(net_name) || args.flags & !REGISTER_IP_NOTIFICATION != 0 {
            return Err(Refused(error::INVALID_PARAMETER));
        }
        let ip_address: IpAddr = ip.parse().map_err(|_| Refused(error::INVALID_PARAMETER))?;
        let node = cluster
            .node_of(ip_address)
            .ok_or(Refused(error::INVALID_STATE))?;
        let (by_client, by_user) = self.by_key.values().fold((0, 0), |(c, u), r| {
            (
                c + usize::from(r.client.eq_ignore_ascii_case(client)),
                u + usize::from(r.user.eq_ignore_ascii_case(user)),
            )
        });
        if by_client >= self.per_client
            || by_user >= self.per_user
            || self.by_key.len() >= self.total
            || self.by_key.contains_key(&key)
        {
            return Err(Refused(error::NO_SYSTEM_RESOURCES));
        }
        self.by_key.insert(
            key,
            Registration {
                user: user.to_owned(),
                client: client.clone(),
                net_name: net_name.clone(),
                ip_address,
                node: Some(node),
                ip_notification: args.flags & REGISTER_IP_NOTIFICATION != 0,
                keep_alive_secs: args.keep_alive_timeout,
                pending: VecDeque::new(),
            },
        );
        Ok(())
    }

    /// WitnessrUnRegister (3.1.4.3): ERROR_NOT_FOUND for a handle not registered.
    pub fn unregister(&mut self, key: &[u8; 16]) -> Result<(), Refused> {
        self.by_key
            .remove(key)
            .map(|_| ())
            .ok_or(Refused(error::NOT_FOUND))
    }

    /// For WitnessrAsyncNotify (3.1.4.4): the oldest undelivered notification (None: the
    /// caller waits) and the registration's KeepAliveTimeout in seconds (0: no limit);
    /// ERROR_NOT_FOUND for an unknown handle.
    pub fn take(&mut self, key: &[u8; 16]) -> Result<(Option<Notification>, u32), Refused> {
        let reg = self.by_key.get_mut(key).ok_or(Refused(error::NOT_FOUND))?;
        Ok((reg.pending.pop_front(), reg.keep_alive_secs))
    }

    /// Queues what `event` means to each registration it concerns (3.1.6.1, 3.1.6.2) and
    /// returns their keys, for the caller to wake their waiting AsyncNotify calls.
    pub fn publish(&mut self, event: &Event) -> Vec<[u8; 16]> {
        let mut woken = Vec::new();
        for (key, reg) in &mut self.by_key {
            let Some(message) = message_for(reg, event) else {
                continue;
            };
            if reg.pending.len() == MAX_PENDING {
                reg.pending.pop_front();
            }
            reg.pending.push_back(message);
            woken.push(*key);
        }
        woken
    }
}

/// What a registration is told of `event`, updating what it was last told: the node serving
/// its address stopping is RESOURCE_CHANGE UNAVAILABLE for its NetName; its address then
/// served by another node is RESOURCE_CHANGE AVAILABLE, or for a version 2 registration that
/// asked for IP notifications a CLIENT_MOVE to the address; an address moving away from a node
/// still up (an operator's move) is UNAVAILABLE first.
fn message_for(reg: &mut Registration, event: &Event) -> Option<Notification> {
    match event {
        Event::NodeDown(node) if reg.node.as_ref() == Some(node) => {
            reg.node = None;
            Some(resource_change(&[(&reg.net_name, false)]))
        }
        Event::AddressMoved { address, to } if *address == reg.ip_address => {
            if *to == reg.node {
                return None;
            }
            let was_told_down = reg.node.is_none();
            reg.node.clone_from(to);
            match (to, was_told_down, reg.ip_notification) {
                (None, ..) | (Some(_), false, false) => {
                    Some(resource_change(&[(&reg.net_name, false)]))
                }
                (Some(_), _, true) => Some(client_move(&[*address])),
                (Some(_), true, false) => Some(resource_change(&[(&reg.net_name, true)])),
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
