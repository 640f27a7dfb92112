//! Every command's rules (`commands`), what a handler sees of the request it serves (`ctx`)
//! and how its response goes out, at once or, for a request that waits, after an interim
//! response (`reply`). Between the state and the handlers: the pipeline builds these and
//! reads the rules, the handlers use them.

pub(crate) mod commands;
pub(crate) mod ctx;
pub(crate) mod reply;

use smb3d_dtyp::NtStatus;
use smb3d_wire::DecodeError;

/// The status of a request its decoder refused, STATUS_INVALID_PARAMETER, with the field the
/// decoder stopped at and why logged at debug level: the status alone does not say which.
pub(crate) fn malformed(error: DecodeError) -> NtStatus {
    tracing::debug!(field = error.field, reason = %error.kind, "malformed request");
    NtStatus::INVALID_PARAMETER
}
