//! MS-SMB2 3.3.5.9.13: SMB2_CREATE_APP_INSTANCE_ID and SMB2_CREATE_APP_INSTANCE_VERSION.
//! The rules are in [`crate::state::app_instance`]; here is what the request asks.

use smb3d_smb2::create::{CreateContext, CreateRequest};

use crate::request::ctx::Ctx;
use crate::state::app_instance::{AppInstance, account};
use crate::state::session::Session;

/// SMB 3.0, the first dialect of the 3.x family the section applies to.
const SMB_30: u16 = 0x0300;
/// SMB 3.1.1, the one dialect SMB2_CREATE_APP_INSTANCE_VERSION is valid on (MS-SMB2
/// 2.2.13.2.15).
const SMB_311: u16 = 0x0311;

/// The application instance a CREATE names, on an SMB 3.x connection; its version only on
/// SMB 3.1.1. A reconnect (DH2C) never gets here: MS-SMB2 3.3.5.9.13 skips the section for it.
pub(super) fn ask(cx: &Ctx<'_>, req: &CreateRequest<'_>, session: &Session) -> Option<AppInstance> {
    if cx.negotiated.dialect < SMB_30 {
        return None;
    }
    let (mut id, mut version) = (None, None);
    for context in req.contexts.iter().flatten() {
        match context {
            CreateContext::AppInstanceId(guid) => id = Some(guid),
            CreateContext::AppInstanceVersion(v) if cx.negotiated.dialect == SMB_311 => {
                version = Some(v)
            }
            _ => {}
        }
    }
    Some(AppInstance {
        id: id?,
        version,
        client: cx.negotiated.client_guid,
        user: session.user().as_ref().and_then(account),
    })
}

/// How many of the request's contexts name an application instance: a durable reconnect
/// carries them too and is not refused for them (MS-SMB2 3.3.5.9.13 defers to 3.3.5.9.12).
pub(super) fn contexts(req: &CreateRequest<'_>) -> usize {
    req.contexts
        .iter()
        .flatten()
        .filter(|c| {
            matches!(
                c,
                CreateContext::AppInstanceId(_) | CreateContext::AppInstanceVersion(_)
            )
        })
        .count()
}
