//! The witness service (MS-SWN) of a cluster node with public addresses, over ncacn_ip_tcp
//! (MS-SWN 2.1): the endpoint mapper on port 135 and the witness interface on
//! `[cluster] witness_port`, on the node's own addresses and on each public address it holds.
//! Registrations live on the node that took them; the cluster's view (live nodes, address
//! holders), read at every change of `nodes/` and `addresses/`, feeds them.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use smb3d_rpc::epmapper::{self, EPMAPPER, OP_EPT_MAP};
use smb3d_rpc::ndr::NdrWriter;
use smb3d_rpc::tcp::{AUTH_LEVEL_PRIVACY, Association, Call, Outcome, pdu_length};
use smb3d_rpc::witness::{self, Event, InterfaceInfo, Notification, Registrations, WITNESS, error};
use smb3d_server::address_slots::{AddressSlot, AddressSlots};
use smb3d_server::{ClientKey, Server};
use smb3d_wire::FileTime;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore};

/// The endpoint mapper's port (MS-RPCE 2.1.1.1).
pub const EPMAPPER_PORT: u16 = 135;
/// Connections served at once, both ports together; more wait in the listen queue.
const MAX_CONNECTIONS: usize = 256;
/// A connection silent this long (no PDU, no call held) is closed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// The same for a connection no user has authenticated on (the endpoint mapper's, or a
/// witness bind not yet through its auth3): clients send their next PDU at once.
const UNPROVEN_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// A PDU must arrive whole within this time once its header has.
const PDU_TIMEOUT: Duration = Duration::from_secs(10);
/// How long WitnessrAsyncNotify of a registration without a KeepAliveTimeout (WitnessrRegister,
/// or RegisterEx with 0) is held before it ends with ERROR_TIMEOUT and the client asks again.
const DEFAULT_NOTIFY_WAIT: Duration = Duration::from_secs(600);
/// Registrations one client computer may hold, one account whatever client names it gives
/// (a service account on many machines), and all clients together.
const PER_CLIENT: usize = 64;
const PER_USER: usize = 1_024;
const TOTAL: usize = 16_384;
/// nca_s_op_rng_error and RPC_X_BAD_STUB_DATA (MS-RPCE 2.3.1).
const FAULT_OP_RANGE: u32 = 0x1c01_0002;
const FAULT_BAD_STUB: u32 = 0x0000_06f7;
/// ERROR_ACCESS_DENIED as a fault: a witness call without packet privacy.
const FAULT_ACCESS_DENIED: u32 = 0x0000_0005;

/// What the node last read of the cluster.
#[derive(Default)]
struct View {
    live: Vec<String>,
    holders: BTreeMap<IpAddr, String>,
    read: bool,
}

/// The node's witness service: the registration table and the cluster view.
pub struct WitnessService {
    server: Arc<Server>,
    public_addresses: Vec<IpAddr>,
    port: u16,
    registrations: Mutex<Registrations>,
    view: Mutex<View>,
    /// Woken when a notification is queued.
    queued: Notify,
    connections: Arc<Semaphore>,
    /// Connections no user has authenticated on, per client address (the SMB server's
    /// `max_connections_per_address`): one address cannot hold every connection slot.
    unproven: Arc<AddressSlots>,
}

/// The registration checks' view of the cluster (MS-SWN 3.1.4.2).
struct Names<'a> {
    server: &'a Server,
    holders: &'a BTreeMap<IpAddr, String>,
}

impl witness::Cluster for Names<'_> {
    fn is_server_name(&self, name: &str) -> bool {
        let id = self.server.server_identity();
        let name = name.trim_end_matches('.');
        name.eq_ignore_ascii_case(&id.netbios_name)
            || name.eq_ignore_ascii_case(&id.dns_name)
            || name
                .parse::<IpAddr>()
                .is_ok_and(|ip| self.holders.contains_key(&ip))
    }

    fn node_of(&self, address: IpAddr) -> Option<String> {
        self.holders.get(&address).cloned()
    }
}

impl WitnessService {
    pub fn new(server: Arc<Server>, public_addresses: Vec<IpAddr>, port: u16) -> Arc<Self> {
        let per_address = server.limits().max_connections_per_address;
        Arc::new(Self {
            server,
            public_addresses,
            port,
            registrations: Mutex::new(Registrations::new(PER_CLIENT, PER_USER, TOTAL)),
            view: Mutex::new(View::default()),
            queued: Notify::new(),
            connections: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
            unproven: AddressSlots::new(per_address),
        })
    }

    /// The cluster as read at a change of `nodes/` or `addresses/`: nodes gone and addresses
    /// moved since the last read become notifications (MS-SWN 3.1.6.1, 3.1.6.2).
    pub fn cluster_changed(&self, live: &[String], holders: &BTreeMap<IpAddr, String>) {
        let mut events = Vec::new();
        {
            let mut view = self.view.lock();
            if view.read {
                for gone in view.live.iter().filter(|n| !live.contains(n)) {
                    events.push(Event::NodeDown(gone.clone()));
                }
                for ip in &self.public_addresses {
                    let (before, now) = (view.holders.get(ip), holders.get(ip));
                    if before != now {
                        events.push(Event::AddressMoved {
                            address: *ip,
                            to: now.cloned(),
                        });
                    }
                }
            }
            *view = View {
                live: live.to_vec(),
                holders: holders.clone(),
                read: true,
            };
        }
        if events.is_empty() {
            return;
        }
        let mut woken = 0;
        {
            let mut table = self.registrations.lock();
            for event in &events {
                woken += table.publish(event).len();
            }
        }
        if woken > 0 {
            tracing::info!("witness: {woken} notification(s) queued for {events:?}");
            self.queued.notify_waiters();
        }
    }

    /// Listens on `ip`: port 135 and the witness port. A port that cannot be bound (135
    /// needs root or CAP_NET_BIND_SERVICE) is logged and left out.
    pub fn listeners(&self, ip: IpAddr) -> Vec<std::net::TcpListener> {
        [EPMAPPER_PORT, self.port]
            .into_iter()
            .filter_map(|port| {
                let bound = std::net::TcpListener::bind(SocketAddr::new(ip, port))
                    .and_then(|l| l.set_nonblocking(true).map(|()| l));
                bound
                    .map_err(|e| tracing::warn!("witness: not listening on {ip}:{port}: {e}"))
                    .ok()
            })
            .collect()
    }

    /// Serves `listeners` until `stop` resolves; then their connections end.
    pub async fn serve(
        self: Arc<Self>,
        listeners: Vec<std::net::TcpListener>,
        stop: impl std::future::Future<Output = ()>,
    ) {
        let mut tasks = tokio::task::JoinSet::new();
        for listener in listeners {
            let Ok(listener) = TcpListener::from_std(listener) else {
                continue;
            };
            tasks.spawn(self.clone().accept(listener));
        }
        stop.await;
        tasks.shutdown().await;
    }

    async fn accept(self: Arc<Self>, listener: TcpListener) {
        let Ok(local) = listener.local_addr() else {
            return;
        };
        let mut connections = tokio::task::JoinSet::new();
        loop {
            let Ok(permit) = self.connections.clone().acquire_owned().await else {
                return;
            };
            let Ok((stream, peer)) = listener.accept().await else {
                continue;
            };
            // Over its address's limit, a connection is closed at once and frees its slot.
            let Ok(slot) = self.unproven.take(ClientKey::of(peer.ip())) else {
                tracing::debug!("witness: {peer} holds too many connections; closing one");
                continue;
            };
            let service = self.clone();
            connections.spawn(async move {
                service.connection(stream, local, slot).await;
                drop(permit);
            });
            while connections.try_join_next().is_some() {}
        }
    }

    /// One association: PDUs read one at a time, each bounded by the negotiated fragment
    /// size, answered in order. It counts against its client's address (`slot`) until a user
    /// authenticates on it.
    async fn connection(&self, mut stream: TcpStream, local: SocketAddr, slot: AddressSlot) {
        let mut slot = Some(slot);
        let served = if local.port() == EPMAPPER_PORT {
            vec![EPMAPPER]
        } else {
            vec![WITNESS]
        };
        let server = self.server.clone();
        let mut seed = [0u8; 4];
        let _ = getrandom::fill(&mut seed);
        let mut association = Association::new(
            served,
            local.port(),
            u32::from_le_bytes(seed) & 0x00ff_ffff,
            smb3d_auth::ntlm::rpc::authenticators(
                Arc::new(move || server.logon_acceptor()),
                FileTime::now,
            ),
        );
        let mut pdu = Vec::new();
        loop {
            let mut header = [0u8; smb3d_rpc::pdu::HEADER_LEN];
            let idle = if slot.is_some() {
                UNPROVEN_IDLE_TIMEOUT
            } else {
                IDLE_TIMEOUT
            };
            match tokio::time::timeout(idle, stream.read_exact(&mut header)).await {
                Ok(Ok(_)) => {}
                _ => return,
            }
            let Some(len) =
                pdu_length(&header).filter(|len| *len <= usize::from(association.max_fragment()))
            else {
                return;
            };
            pdu.clear();
            pdu.extend_from_slice(&header);
            pdu.resize(len, 0);
            let rest = pdu.get_mut(header.len()..).unwrap_or_default();
            match tokio::time::timeout(PDU_TIMEOUT, stream.read_exact(rest)).await {
                Ok(Ok(_)) => {}
                _ => return,
            }
            // The auth3 leg may ask the domain's DC, which blocks.
            let outcome = tokio::task::block_in_place(|| association.handle(&pdu));
            if association.authenticated() {
                slot = None;
            }
            let (bytes, close) = match outcome {
                Outcome::Nothing => continue,
                Outcome::Send(bytes) => (bytes, false),
                Outcome::Close(bytes) => (bytes, true),
                Outcome::Call(call) => (self.answer(&mut association, &call, local).await, false),
            };
            if stream.write_all(&bytes).await.is_err() || close {
                return;
            }
        }
    }

    /// The answer to a complete call: the endpoint mapper's ept_map, or a witness call,
    /// which needs packet privacy (MS-SWN 2.1: the client binds at
    /// RPC_C_AUTHN_LEVEL_PKT_PRIVACY).
    async fn answer(
        &self,
        association: &mut Association,
        call: &Call,
        local: SocketAddr,
    ) -> Vec<u8> {
        let mut stub = Vec::new();
        if call.interface == EPMAPPER {
            if call.opnum != OP_EPT_MAP {
                return association.fault(call, FAULT_OP_RANGE);
            }
            let Ok(request) = epmapper::decode_map_request(&call.stub) else {
                return association.fault(call, FAULT_BAD_STUB);
            };
            let address = match local.ip() {
                IpAddr::V4(v4) => v4,
                IpAddr::V6(_) => Ipv4Addr::UNSPECIFIED,
            };
            epmapper::encode_map_answer(
                &mut NdrWriter::with_base(&mut stub, 0),
                &request,
                &[(WITNESS, self.port)],
                address,
            );
            return association.response(call, &stub);
        }
        if call.auth_level != AUTH_LEVEL_PRIVACY {
            return association.fault(call, FAULT_ACCESS_DENIED);
        }
        let Some(decoded) = witness::decode_call(call.opnum, &call.stub) else {
            return association.fault(call, FAULT_OP_RANGE);
        };
        let Ok(decoded) = decoded else {
            return association.fault(call, FAULT_BAD_STUB);
        };
        let mut out = NdrWriter::with_base(&mut stub, 0);
        match decoded {
            witness::Call::GetInterfaceList => {
                witness::encode_interface_list(&mut out, &self.interfaces());
            }
            witness::Call::Register(args) => {
                let mut key = [0u8; 16];
                let registered = getrandom::fill(&mut key)
                    .map_err(|_| witness::Refused(error::NO_SYSTEM_RESOURCES))
                    .and_then(|()| {
                        let view = self.view.lock();
                        let names = Names {
                            server: &self.server,
                            holders: &view.holders,
                        };
                        // Witness calls come at privacy only, so an account is known.
                        let user = call.user.as_deref().unwrap_or_default();
                        self.registrations.lock().register(user, &args, &names, key)
                    });
                match registered {
                    Ok(()) => {
                        tracing::info!(
                            "witness: {} registered {:?} at {:?} for {:?}",
                            call.user.as_deref().unwrap_or("?"),
                            args.net_name,
                            args.ip_address,
                            args.client_computer_name
                        );
                        witness::encode_register(&mut out, Some(&key), error::SUCCESS);
                    }
                    Err(witness::Refused(status)) => {
                        witness::encode_register(&mut out, None, status);
                    }
                }
            }
            witness::Call::UnRegister(handle) => {
                let status = match self.registrations.lock().unregister(&handle_key(&handle)) {
                    Ok(()) => {
                        // An AsyncNotify held for it ends with ERROR_NOT_FOUND.
                        self.queued.notify_waiters();
                        error::SUCCESS
                    }
                    Err(witness::Refused(status)) => status,
                };
                witness::encode_status(&mut out, status);
            }
            witness::Call::AsyncNotify(handle) => {
                let answer = self.notification(&handle_key(&handle)).await;
                witness::encode_async_notify(&mut out, answer.as_ref().map_err(|e| *e));
            }
        }
        association.response(call, &stub)
    }

    /// WitnessrAsyncNotify (MS-SWN 3.1.4.4): the registration's next notification, waiting
    /// for one up to its KeepAliveTimeout (ERROR_TIMEOUT then).
    async fn notification(&self, key: &[u8; 16]) -> Result<Notification, u32> {
        let mut deadline = None;
        loop {
            // Registered before the table is read, so that a message queued in between
            // still wakes this call.
            let queued = self.queued.notified();
            tokio::pin!(queued);
            queued.as_mut().enable();
            let (message, keep_alive) = self
                .registrations
                .lock()
                .take(key)
                .map_err(|witness::Refused(status)| status)?;
            if let Some(message) = message {
                return Ok(message);
            }
            let wait = match keep_alive {
                0 => DEFAULT_NOTIFY_WAIT,
                secs => Duration::from_secs(u64::from(secs)),
            };
            let deadline = *deadline.get_or_insert_with(|| tokio::time::Instant::now() + wait);
            if tokio::time::timeout_at(deadline, queued).await.is_err() {
                return Err(error::TIMEOUT);
            }
        }
    }

    /// WITNESS_INTERFACE_LIST (MS-SWN 3.1.4.1): each public address with the node holding it
    /// as its group; an address no node holds is UNAVAILABLE.
    fn interfaces(&self) -> Vec<InterfaceInfo> {
        let view = self.view.lock();
        self.public_addresses
            .iter()
            .map(|ip| InterfaceInfo {
                group_name: view.holders.get(ip).cloned().unwrap_or_default(),
                address: *ip,
                available: view.holders.contains_key(ip),
            })
            .collect()
    }
}

/// The registration key of a context handle: its GUID (the attributes are 0).
fn handle_key(handle: &[u8; smb3d_rpc::ndr::CONTEXT_HANDLE_LEN]) -> [u8; 16] {
    let mut key = [0u8; 16];
    if let Some(guid) = handle.get(4..) {
        key.copy_from_slice(guid);
    }
    key
}
