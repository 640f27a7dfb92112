//! Create context responses (MS-SMB2 3.3.5.9.5 maximal access, 3.3.5.9.9 on-disk id).

use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_smb2::create::{
    CreateContext, CreateRequest, MaximalAccessResponse, QueryOnDiskIdResponse, ResponseContext,
};

use crate::fs::fileinfo::Meta;

/// The response contexts the request's contexts call for; `maximal_access` is the file's,
/// computed when the request asked for it; with `zero_ids` the on-disk id is 0 (a Mac client
/// on an `apple` share, fruit:zero_file_id).
pub(super) fn responses<'a>(
    req: &CreateRequest<'_>,
    maximal_access: Option<AccessMask>,
    meta: &Meta,
    zero_ids: bool,
) -> Vec<ResponseContext<'a>> {
    let mut contexts = Vec::new();
    for context in req.contexts.iter().flatten() {
        match context {
            CreateContext::MaximalAccessRequest { .. } => {
                contexts.push(ResponseContext::MaximalAccess(MaximalAccessResponse {
                    query_status: NtStatus::SUCCESS,
                    maximal_access: maximal_access.unwrap_or(AccessMask::empty()),
                }));
            }
            CreateContext::QueryOnDiskId => {
                contexts.push(ResponseContext::QueryOnDiskId(QueryOnDiskIdResponse {
                    file_id: if zero_ids { 0 } else { meta.stat.ino },
                    volume_id: meta.stat.dev,
                }));
            }
            _ => {}
        }
    }
    contexts
}
