//! One module per SMB2 command (MS-SMB2 3.3.5.x; the commands on named pipes together in
//! `pipe`), and what several of them use: finding the open a request names and checking a
//! request's credit charge. Handlers work on `request` and `state`; only the pipeline's
//! dispatcher (`crate::pipeline::dispatch`) calls them.

pub(crate) mod change_notify;
pub(crate) mod close;
pub(crate) mod create;
pub(crate) mod echo;
pub(crate) mod flush;
pub(crate) mod ioctl;
pub(crate) mod lock;
pub(crate) mod logoff;
pub(crate) mod negotiate;
pub(crate) mod oplock_break;
pub(crate) mod pipe;
pub(crate) mod query_directory;
pub(crate) mod query_info;
pub(crate) mod read;
pub(crate) mod session_setup;
pub(crate) mod set_info;
pub(crate) mod tree_connect;
pub(crate) mod tree_disconnect;
pub(crate) mod write;

use std::sync::Arc;

use smb3d_dtyp::NtStatus;
use smb3d_smb2::file_id::FileId;

use crate::request::commands;
use crate::request::ctx::Ctx;
use crate::state::open::Open;

/// File offsets are signed 64-bit values on the file system side (MS-FSA 2.1.5.2, 2.1.5.3).
pub(crate) const MAX_OFFSET: u64 = i64::MAX as u64;

/// Finds the open a request names (MS-SMB2 3.3.5.x "lookup in Session.OpenTable"): the
/// FileId 0xFFFF.. of a related compound stands for the one the previous request used
/// (3.3.5.2.7.2), which this one becomes; an open of another tree connect does not count.
pub(crate) fn lookup_open(cx: &mut Ctx<'_>, file_id: FileId) -> Result<Arc<Open>, NtStatus> {
    let file_id = if file_id.is_any() && cx.hdr.is_related() {
        cx.chain.file_id.ok_or(NtStatus::FILE_CLOSED)?
    } else {
        file_id
    };
    let session = cx.session.as_ref().ok_or(NtStatus::USER_SESSION_DELETED)?;
    let open = session
        .state
        .lock()
        .opens
        .get(&file_id.volatile)
        .cloned()
        .ok_or(NtStatus::FILE_CLOSED)?;
    let same_tree = cx.tree.as_ref().is_some_and(|t| t.id == open.tree_id());
    if open.file_id.persistent != file_id.persistent || !same_tree {
        return Err(NtStatus::FILE_CLOSED);
    }
    // MS-SMB2 3.3.5.2.10 (SMB 3.x): every request on an open moves its ChannelSequence
    // forward; one that changes the open with an older sequence is refused.
    if cx.negotiated.is_smb3() {
        let sequence = u16::try_from(cx.hdr.status.0 & 0xFFFF).unwrap_or_default();
        let current = open.replay.check_channel_sequence(sequence);
        if commands::spec(cx.hdr.command).modifies {
            current?;
        }
    }
    if open.replay.used() {
        cx.conn.server.durable.forget_create_guid(open.file_id);
    }
    cx.chain.file_id = Some(open.file_id);
    Ok(open)
}

/// MS-SMB2 3.3.5.2.5: a multi-credit request's CreditCharge must cover its payload, 64 KiB per
/// credit; without multi-credit support the payload is at most 64 KiB.
pub(crate) fn check_credit_charge(cx: &Ctx<'_>, payload: u32) -> Result<(), NtStatus> {
    const UNIT: u32 = 65536;
    let needed = payload.saturating_sub(1) / UNIT + 1;
    let charge = if cx.negotiated.multi_credit() {
        u32::from(cx.hdr.credit_charge.max(1))
    } else {
        1
    };
    if needed > charge {
        Err(NtStatus::INVALID_PARAMETER)
    } else {
        Ok(())
    }
}

/// The AAPL ServerCaps the connection negotiated, in force on `apple` shares only (none
/// elsewhere, and none before a Mac client's first server query).
/// Whether file ids are 0 for this request: an `apple` share with `apple_zero_file_id` (Samba's
/// `fruit:zero_file_id`) to a connection that negotiated AAPL. A Mac takes a file id for an
/// HFS+ catalog node id, which is never reused; an inode number is, so the Mac is told none.
pub(crate) fn zero_file_ids(cx: &Ctx<'_>) -> bool {
    cx.tree
        .as_ref()
        .and_then(|t| t.share.apple.as_ref())
        .is_some_and(|apple| apple.zero_file_id)
        && cx.conn.apple.get().is_some()
}

pub(crate) fn mac_caps(cx: &Ctx<'_>) -> u64 {
    let apple_share = cx.tree.as_ref().is_some_and(|t| t.share.apple.is_some());
    match cx.conn.apple.get() {
        Some(caps) if apple_share => *caps,
        _ => 0,
    }
}
