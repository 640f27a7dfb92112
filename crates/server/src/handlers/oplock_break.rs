//! OPLOCK_BREAK acknowledgments: MS-SMB2 3.3.5.22 (oplocks 3.3.5.22.1, leases 3.3.5.22.2).

use std::sync::Arc;

use smb3d_dtyp::NtStatus;
use smb3d_smb2::oplock_break::{LeaseBreakAck, OplockBreak, OplockBreakMessage};
use smb3d_wire::Writer;

use crate::escape::escape;
use crate::handlers::lookup_open;
use crate::request::ctx::Ctx;
use crate::request::malformed;
use crate::state::caching::{self, LeaseId};
use crate::state::open::Open;
use crate::state::persistent;

pub(crate) fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let message = OplockBreakMessage::decode(pdu).map_err(malformed)?;
    match message {
        OplockBreakMessage::Oplock(ack) => {
            let open = lookup_open(cx, ack.file_id)?;
            let (level, breaks) = open.shared.with_caching(|state, _| {
                caching::acknowledge_oplock(state, open.file_id.volatile, ack.oplock_level)
            });
            caching::deliver(&cx.conn.server, &open.shared, breaks);
            let level = level?;
            record_caching(cx, std::iter::once(open.clone()));
            OplockBreak {
                oplock_level: level,
                file_id: open.file_id,
            }
            .encode(w);
        }
        OplockBreakMessage::LeaseAck(ack) => {
            // The lease of this client with that key, wherever it is (3.3.5.22.2).
            let id = LeaseId {
                client: cx.negotiated.client_guid,
                key: ack.lease_key,
            };
            let file = cx
                .conn
                .server
                .files
                .leases
                .file(id)
                .ok_or(NtStatus::OBJECT_NAME_NOT_FOUND)?;
            let (result, breaks) = file.with_caching(|state, breaks| {
                caching::acknowledge_lease(state, id, ack.lease_state.0, breaks)
            });
            caching::deliver(&cx.conn.server, &file, breaks);
            result?;
            // The session's opens that hold the lease.
            let holders: Vec<Arc<Open>> = cx.session.as_ref().map_or_else(Vec::new, |session| {
                session
                    .state
                    .lock()
                    .opens
                    .values()
                    .filter(|o| Arc::ptr_eq(&o.shared, &file))
                    .cloned()
                    .collect()
            });
            record_caching(cx, holders.into_iter());
            LeaseBreakAck {
                flags: 0,
                lease_key: ack.lease_key,
                lease_state: ack.lease_state,
                lease_duration: 0,
            }
            .encode(w);
        }
        // Only the server sends notifications.
        OplockBreakMessage::LeaseNotification(_) => return Err(NtStatus::INVALID_PARAMETER),
    }
    Ok(NtStatus::SUCCESS)
}

/// A persistent open's record (or a cluster node's durable open's) follows the caching its
/// client acknowledged, so that a restarted server (or the node taking over) gives back what
/// the client holds.
fn record_caching(cx: &Ctx<'_>, opens: impl Iterator<Item = Arc<Open>>) {
    for open in opens {
        if let Err(e) = persistent::save(&cx.conn.server, &open) {
            tracing::error!(
                path = &*escape(open.path().as_str()),
                "the caching of a persistent open could not be recorded: {e}"
            );
        }
    }
}
