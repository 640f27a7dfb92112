//! ECHO: MS-SMB2 3.3.5.17.

use smb3d_dtyp::NtStatus;
use smb3d_smb2::echo::{EchoRequest, EchoResponse};
use smb3d_wire::Writer;

use crate::request::ctx::Ctx;
use crate::request::malformed;

pub(crate) async fn handle(
    _cx: &mut Ctx<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    EchoRequest::decode(pdu).map_err(malformed)?;
    EchoResponse.encode(w);
    Ok(NtStatus::SUCCESS)
}
