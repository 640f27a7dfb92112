//! FSCTL_LMR_REQUEST_RESILIENCY (MS-SMB2 3.3.5.15.9): the client asks that an open outlive a
//! lost connection for a while, as a durable open does, whatever caching it holds.

use std::sync::Arc;
use std::time::Duration;

use smb3d_dtyp::NtStatus;
use smb3d_smb2::create::CreateAction;
use smb3d_smb2::ioctl::{IoctlRequest, NetworkResiliencyRequest};
use smb3d_wire::Writer;

use super::respond;
use crate::request::ctx::Ctx;
use crate::request::malformed;
use crate::state::caching::Caching;
use crate::state::durable::{DEFAULT_RESILIENCY_TIMEOUT, Durability, MAX_RESILIENCY_TIMEOUT};
use crate::state::open::Open;

/// Makes `open` resilient: Open.IsResilient, Open.ResiliencyTimeout, Open.DurableOwner.
pub(super) fn request(
    cx: &mut Ctx<'_>,
    open: &Arc<Open>,
    req: &IoctlRequest<'_>,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    if cx.negotiated.dialect == 0x0202 {
        return Err(NtStatus::INVALID_DEVICE_REQUEST);
    }
    let asked = NetworkResiliencyRequest::decode(req.input).map_err(malformed)?;
    let timeout = match Duration::from_millis(asked.timeout_ms.into()) {
        Duration::ZERO => DEFAULT_RESILIENCY_TIMEOUT,
        longer if longer > MAX_RESILIENCY_TIMEOUT => return Err(NtStatus::INVALID_PARAMETER),
        timeout => timeout,
    };
    // The owner is the session's own user, not a user the share forces on everyone.
    let session = cx.session.as_ref().ok_or(NtStatus::USER_SESSION_DELETED)?;
    let opener = session.user().ok_or(NtStatus::USER_SESSION_DELETED)?;
    let identity = session.identity().ok_or(NtStatus::USER_SESSION_DELETED)?;
    let tree = cx.tree.as_ref().ok_or(NtStatus::NETWORK_NAME_DELETED)?;
    // A reconnect names the lease the open holds, as for a durable open.
    let lease = {
        let state = open.shared.state.lock();
        state
            .opens
            .iter()
            .find(|e| e.id == open.file_id.volatile)
            .and_then(|e| match e.caching {
                Caching::Lease(id) => Some(id.key),
                _ => None,
            })
    };
    let recorded = cx.conn.server.durable.make_resilient(
        open,
        Durability {
            durable: true,
            create_guid: None,
            timeout,
            client_guid: cx.negotiated.client_guid,
            owner: identity.token.user,
            share: tree.share.name.clone(),
            lease,
            create_action: CreateAction::OPENED,
            connection: cx.conn.id,
            persistent: false,
            opener,
        },
    );
    if !recorded {
        return Err(NtStatus::INSUFFICIENT_RESOURCES);
    }
    respond(w, req, open.file_id, |_| {});
    Ok(NtStatus::SUCCESS)
}
