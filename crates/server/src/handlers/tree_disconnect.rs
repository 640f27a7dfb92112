//! TREE_DISCONNECT: MS-SMB2 3.3.5.8.

use smb3d_dtyp::NtStatus;
use smb3d_smb2::tree_disconnect::{TreeDisconnectRequest, TreeDisconnectResponse};
use smb3d_wire::Writer;

use crate::request::ctx::Ctx;
use crate::request::malformed;
use crate::state::open::close_open;

pub(crate) async fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    TreeDisconnectRequest::decode(pdu).map_err(malformed)?;
    let session = cx.session.clone().ok_or(NtStatus::USER_SESSION_DELETED)?;
    let tree = cx.tree.take().ok_or(NtStatus::NETWORK_NAME_DELETED)?;
    let opens = {
        let mut st = session.state.lock();
        st.trees.remove(&tree.id);
        st.take_opens(Some(tree.id))
    };
    tree.pipes.close_all();
    for open in opens {
        close_open(&cx.conn.server, &open);
    }
    TreeDisconnectResponse.encode(w);
    Ok(NtStatus::SUCCESS)
}
