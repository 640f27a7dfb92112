//! wkssvc (MS-WKST): NetrWkstaGetInfo, which Windows and `rpcclient` ask for the computer and
//! workgroup names.

use crate::ndr::{NdrReader, NdrWriter};
use crate::service::{CallContext, CallFault, werror};

/// MS-WKST 3.2.4.1.
const NETR_WKSTA_GET_INFO: u16 = 0;

/// Runs one wkssvc call.
pub fn call(
    cx: &CallContext<'_>,
    opnum: u16,
    stub: &[u8],
    out: &mut NdrWriter<'_>,
) -> Result<(), CallFault> {
    match opnum {
        NETR_WKSTA_GET_INFO => wksta_get_info(cx, stub, out),
        _ => Err(CallFault::OpRange),
    }
}

/// Arms of the WKSTA_INFO union (MS-WKST 2.2.4.1) that are pointers; other levels take the
/// empty default arm.
const fn wksta_info_has_arm(level: u32) -> bool {
    matches!(level, 100 | 101 | 102 | 502 | 1013 | 1018 | 1046)
}

/// MS-WKST 3.2.4.1 NetrWkstaGetInfo: levels 100 and 101. Levels 102 and 502 are for
/// administrators, which no smb3d caller is, so they are denied as Windows denies them to
/// everyone else; level 100 is open to anonymous callers, 101 is not.
fn wksta_get_info(
    cx: &CallContext<'_>,
    stub: &[u8],
    out: &mut NdrWriter<'_>,
) -> Result<(), CallFault> {
    let mut r = NdrReader::new(stub);
    // [in, string, unique] WKSSVC_IDENTIFY_HANDLE ServerName, ignored.
    if r.pointer("ServerName")? {
        r.string("ServerName")?;
    }
    let level = r.u32("Level")?;

    out.u32(level);
    let status = match level {
        100 => werror::SUCCESS,
        101 if !cx.caller.is_anonymous() => werror::SUCCESS,
        101 | 102 | 502 => werror::ACCESS_DENIED,
        _ => werror::INVALID_LEVEL,
    };
    if status != werror::SUCCESS {
        if wksta_info_has_arm(level) {
            out.pointer(false);
        }
        out.u32(status);
        return Ok(());
    }
    let info = cx.directory.server_info();
    // WKSTA_INFO_100 (2.2.5.1); 101 (2.2.5.2) adds the LAN root, empty as Samba sends it.
    out.pointer(true)
        .u32(info.platform_id)
        .pointer(true)
        .pointer(true)
        .u32(info.version.0)
        .u32(info.version.1);
    if level == 101 {
        out.pointer(true);
    }
    out.string(&info.netbios_name).string(&info.domain);
    if level == 101 {
        out.string("");
    }
    out.u32(werror::SUCCESS);
    Ok(())
}
