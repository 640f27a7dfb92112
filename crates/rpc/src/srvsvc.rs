//! srvsvc (MS-SRVS): NetrShareEnum, NetrShareEnumSticky, NetrShareGetInfo and
//! NetrServerGetInfo, the calls `smbclient -L`, `net view`, Explorer and `rpcclient` use to
//! browse a server.

use crate::ndr::{NdrReader, NdrWriter};
use crate::service::{CallContext, CallFault, werror};
use crate::{ShareEntry, ShareKind};

/// MS-SRVS 3.1.4.8.
const NETR_SHARE_ENUM: u16 = 15;
/// MS-SRVS 3.1.4.10.
const NETR_SHARE_GET_INFO: u16 = 16;
/// MS-SRVS 3.1.4.9.
const NETR_SHARE_ENUM_STICKY: u16 = 36;
/// MS-SRVS 3.1.4.17.
const NETR_SERVER_GET_INFO: u16 = 21;

/// STYPE_DISKTREE (MS-SRVS 2.2.2.4).
const STYPE_DISKTREE: u32 = 0;
/// STYPE_CLUSTER_FS: a cluster share (MS-SRVS 2.2.2.4).
const STYPE_CLUSTER_FS: u32 = 0x0200_0000;
/// STYPE_CLUSTER_SOFS: a scale-out cluster share (MS-SRVS 2.2.2.4).
const STYPE_CLUSTER_SOFS: u32 = 0x0400_0000;
/// STYPE_IPC | STYPE_SPECIAL, the type Windows reports for `IPC$`.
const STYPE_IPC_SPECIAL: u32 = 0x8000_0003;
/// SHI_USES_UNLIMITED (MS-SRVS 2.2.4.24).
const SHI_USES_UNLIMITED: u32 = 0xffff_ffff;
/// PreferedMaximumLength meaning "everything" (MS-SRVS 2.2.2.2).
const MAX_PREFERRED_LENGTH: u32 = 0xffff_ffff;

/// SERVER_INFO_102 fields smb3d has no setting for, with the values Samba reports: unlimited
/// users, a 15-minute auto-disconnect, visible, announced every 240 s with 3,000 ms jitter.
const SV_USERS: u32 = 0xffff_ffff;
const SV_DISC_MINUTES: u32 = 15;
const SV_VISIBLE: u32 = 0;
const SV_ANNOUNCE_SECONDS: u32 = 240;
const SV_ANNDELTA_MS: u32 = 3000;
const SV_LICENSES: u32 = 100_000;
const SV_USERPATH: &str = "C:\\";

/// Runs one srvsvc call.
pub fn call(
    cx: &CallContext<'_>,
    opnum: u16,
    stub: &[u8],
    out: &mut NdrWriter<'_>,
) -> Result<(), CallFault> {
    match opnum {
        NETR_SHARE_ENUM => share_enum(cx, stub, out, false),
        NETR_SHARE_ENUM_STICKY => share_enum(cx, stub, out, true),
        NETR_SHARE_GET_INFO => share_get_info(cx, stub, out),
        NETR_SERVER_GET_INFO => server_get_info(cx, stub, out),
        _ => Err(CallFault::OpRange),
    }
}

/// Skips `[in, string, unique] SRVSVC_HANDLE ServerName`, which the server ignores
/// (MS-SRVS 2.2.1.1).
fn skip_server_name(r: &mut NdrReader<'_>) -> Result<(), CallFault> {
    if r.pointer("ServerName")? {
        r.string("ServerName")?;
    }
    Ok(())
}

/// A share info level and what it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShareLevel {
    L0,
    L1,
    L2,
    L501,
    L502,
    L1005,
}

impl ShareLevel {
    fn from_u32(level: u32) -> Option<Self> {
        Some(match level {
            0 => Self::L0,
            1 => Self::L1,
            2 => Self::L2,
            501 => Self::L501,
            502 => Self::L502,
            1005 => Self::L1005,
            _ => return None,
        })
    }

    /// Levels that disclose the local path: not for anonymous callers (Windows reserves them
    /// for administrators; Samba, and smb3d, give them to every authenticated user).
    const fn shows_path(self) -> bool {
        matches!(self, Self::L2 | Self::L502)
    }

    /// The size the entry takes in the caller's buffer, which PreferedMaximumLength limits:
    /// the 32-bit structure plus each string with its terminator (MS-SRVS 3.1.4.8).
    fn entry_size(self, share: &ShareEntry) -> usize {
        let s = |t: &str| (t.encode_utf16().count() + 1) * 2;
        match self {
            Self::L0 => 4 + s(&share.name),
            Self::L1 => 12 + s(&share.name) + s(&share.comment),
            Self::L2 => 32 + s(&share.name) + s(&share.comment) + s(&share.path),
            Self::L501 => 16 + s(&share.name) + s(&share.comment),
            Self::L502 => 40 + s(&share.name) + s(&share.comment) + s(&share.path),
            Self::L1005 => 4,
        }
    }

    /// Writes the fixed part of one SHARE_INFO_n (MS-SRVS 2.2.4.22 to 2.2.4.29); the strings
    /// follow in [`Self::write_strings`].
    fn write_fixed(self, share: &ShareEntry, out: &mut NdrWriter<'_>) {
        match self {
            Self::L0 => {
                out.pointer(true);
            }
            Self::L1 => {
                out.pointer(true).u32(share_type(share)).pointer(true);
            }
            Self::L501 => {
                out.pointer(true)
                    .u32(share_type(share))
                    .pointer(true)
                    .u32(0);
            }
            Self::L2 | Self::L502 => {
                // permissions (share-level security is gone), max uses, current uses (not
                // tracked), path, and a NULL password as Windows sends.
                out.pointer(true)
                    .u32(share_type(share))
                    .pointer(true)
                    .u32(0)
                    .u32(SHI_USES_UNLIMITED)
                    .u32(0)
                    .pointer(true)
                    .pointer(false);
                if self == Self::L502 {
                    // shi502_reserved (the descriptor's length) and a NULL descriptor.
                    out.u32(0).pointer(false);
                }
            }
            Self::L1005 => {
                // shi1005_flags: no DFS, manual caching, no other option.
                out.u32(0);
            }
        }
    }

    /// Writes the deferred strings of one SHARE_INFO_n.
    fn write_strings(self, share: &ShareEntry, out: &mut NdrWriter<'_>) {
        match self {
            Self::L0 => {
                out.string(&share.name);
            }
            Self::L1 | Self::L501 => {
                out.string(&share.name).string(&share.comment);
            }
            Self::L2 | Self::L502 => {
                out.string(&share.name)
                    .string(&share.comment)
                    .string(&share.path);
            }
            Self::L1005 => {}
        }
    }
}

/// shi*_type for a share (MS-SRVS 2.2.2.4).
const fn share_type(share: &ShareEntry) -> u32 {
    match share.kind {
        ShareKind::Disk => STYPE_DISKTREE,
        ShareKind::ClusterDisk => STYPE_DISKTREE | STYPE_CLUSTER_FS,
        ShareKind::ScaleOutDisk => STYPE_DISKTREE | STYPE_CLUSTER_SOFS,
        ShareKind::Ipc => STYPE_IPC_SPECIAL,
    }
}

/// MS-SRVS 3.1.4.8 NetrShareEnum: the browseable shares from the resume point on, as many
/// whole entries as fit PreferedMaximumLength (at least one, so that every call progresses).
/// With `sticky`, 3.1.4.9 NetrShareEnumSticky: the same call over the persistent shares, which
/// are the configured ones (`IPC$` is the server's own), and without level 501.
fn share_enum(
    cx: &CallContext<'_>,
    stub: &[u8],
    out: &mut NdrWriter<'_>,
    sticky: bool,
) -> Result<(), CallFault> {
    let mut r = NdrReader::new(stub);
    skip_server_name(&mut r)?;
    let level = r.u32("InfoStruct.Level")?;
    let switch = r.u32("InfoStruct.ShareInfo")?;
    if switch != level {
        return Err(CallFault::BadStub);
    }
    // SHARE_ENUM_UNION (MS-SRVS 2.2.3.5) has no default arm: another level cannot be
    // unmarshalled at all.
    if !matches!(level, 0 | 1 | 2 | 501 | 502 | 503) {
        return Err(CallFault::InvalidTag);
    }
    if r.pointer("InfoStruct.ShareInfo")? {
        r.u32("EntriesRead")?;
        // Clients send an empty container; an input array would only be discarded.
        if r.pointer("Buffer")? {
            return Err(CallFault::BadStub);
        }
    }
    let preferred_max = r.u32("PreferedMaximumLength")?;
    let resume = if r.pointer("ResumeHandle")? {
        Some(r.u32("ResumeHandle")?)
    } else {
        None
    };

    out.u32(level).u32(level).pointer(true);
    let status = match ShareLevel::from_u32(level) {
        None | Some(ShareLevel::L501) if sticky => werror::INVALID_LEVEL,
        None => werror::INVALID_LEVEL,
        Some(l) if l.shows_path() && cx.caller.is_anonymous() => werror::ACCESS_DENIED,
        Some(l) => {
            write_enum(cx, l, preferred_max, resume, sticky, out);
            return Ok(());
        }
    };
    out.u32(0).pointer(false).u32(0);
    write_resume(resume, out);
    out.u32(status);
    Ok(())
}

/// Writes a successful NetrShareEnum answer after the union's discriminant and container
/// pointer.
fn write_enum(
    cx: &CallContext<'_>,
    level: ShareLevel,
    preferred_max: u32,
    resume: Option<u32>,
    sticky: bool,
    out: &mut NdrWriter<'_>,
) {
    let shares = cx.directory.shares();
    let listed: Vec<&ShareEntry> = shares
        .iter()
        .filter(|s| s.browseable && !(sticky && s.kind == ShareKind::Ipc))
        .collect();
    let start = resume.map_or(0, |h| usize::try_from(h).unwrap_or(usize::MAX));
    let remaining = listed.get(start..).unwrap_or_default();

    let mut count = 0;
    if preferred_max == MAX_PREFERRED_LENGTH {
        count = remaining.len();
    } else {
        let budget = usize::try_from(preferred_max).unwrap_or(usize::MAX);
        let mut used = 0usize;
        for share in remaining {
            used = used.saturating_add(level.entry_size(share));
            if used > budget && count > 0 {
                break;
            }
            count += 1;
        }
    }
    let returned = remaining.get(..count).unwrap_or_default();

    out.u32(u32::try_from(count).unwrap_or(u32::MAX))
        .pointer(count > 0);
    if count > 0 {
        out.u32(u32::try_from(count).unwrap_or(u32::MAX));
        for share in returned {
            level.write_fixed(share, out);
        }
        for share in returned {
            level.write_strings(share, out);
        }
    }
    out.u32(u32::try_from(remaining.len()).unwrap_or(u32::MAX));
    let complete = count == remaining.len();
    // The handle is the index of the next entry; 0 once everything was returned. A handle
    // past the end is given back unchanged, as Samba does.
    let next = match resume {
        Some(h) if remaining.is_empty() => Some(h),
        Some(_) if complete => Some(0),
        Some(_) => Some(u32::try_from(start + count).unwrap_or(u32::MAX)),
        None => None,
    };
    write_resume(next, out);
    out.u32(if complete {
        werror::SUCCESS
    } else {
        werror::MORE_DATA
    });
}

fn write_resume(resume: Option<u32>, out: &mut NdrWriter<'_>) {
    out.pointer(resume.is_some());
    if let Some(h) = resume {
        out.u32(h);
    }
}

/// Whether two share names are the same, ignoring case as share names do.
fn same_name(a: &str, b: &str) -> bool {
    a.chars()
        .flat_map(char::to_lowercase)
        .eq(b.chars().flat_map(char::to_lowercase))
}

/// Arms of the SHARE_INFO union (MS-SRVS 2.2.3.6) that are pointers; any other level takes the
/// empty default arm.
const fn share_info_has_arm(level: u32) -> bool {
    matches!(
        level,
        0 | 1 | 2 | 501 | 502 | 503 | 1004 | 1005 | 1006 | 1501
    )
}

/// MS-SRVS 3.1.4.10 NetrShareGetInfo: any share by name, listed or not.
fn share_get_info(
    cx: &CallContext<'_>,
    stub: &[u8],
    out: &mut NdrWriter<'_>,
) -> Result<(), CallFault> {
    let mut r = NdrReader::new(stub);
    skip_server_name(&mut r)?;
    let net_name = r.string("NetName")?;
    let level = r.u32("Level")?;

    out.u32(level);
    let status = match ShareLevel::from_u32(level) {
        None => werror::INVALID_LEVEL,
        Some(l) if l.shows_path() && cx.caller.is_anonymous() => werror::ACCESS_DENIED,
        Some(l) => {
            let shares = cx.directory.shares();
            match shares.iter().find(|s| same_name(&s.name, &net_name)) {
                None => werror::NERR_NET_NAME_NOT_FOUND,
                Some(share) => {
                    out.pointer(true);
                    l.write_fixed(share, out);
                    l.write_strings(share, out);
                    out.u32(werror::SUCCESS);
                    return Ok(());
                }
            }
        }
    };
    if share_info_has_arm(level) {
        out.pointer(false);
    }
    out.u32(status);
    Ok(())
}

/// Arms of the SERVER_INFO union (MS-SRVS 2.2.3.7) up to level 1516 that are pointers; the
/// served levels are among them. Levels above are answered with the empty default arm, as
/// Samba does for every level it does not serve.
const fn server_info_has_arm(level: u32) -> bool {
    matches!(
        level,
        100 | 101
            | 102
            | 103
            | 502
            | 503
            | 599
            | 1005
            | 1010
            | 1016
            | 1017
            | 1018
            | 1107
            | 1501
            | 1502
            | 1503
            | 1506
            | 1510..=1516
    )
}

/// MS-SRVS 3.1.4.17 NetrServerGetInfo: levels 100, 101 and 102.
fn server_get_info(
    cx: &CallContext<'_>,
    stub: &[u8],
    out: &mut NdrWriter<'_>,
) -> Result<(), CallFault> {
    let mut r = NdrReader::new(stub);
    skip_server_name(&mut r)?;
    let level = r.u32("Level")?;

    out.u32(level);
    if level == 102 && cx.caller.is_anonymous() {
        out.pointer(false).u32(werror::ACCESS_DENIED);
        return Ok(());
    }
    if !matches!(level, 100..=102) {
        if server_info_has_arm(level) {
            out.pointer(false);
        }
        out.u32(werror::INVALID_LEVEL);
        return Ok(());
    }
    let info = cx.directory.server_info();
    // SERVER_INFO_100 (2.2.4.40), 101 (2.2.4.41) and 102 (2.2.4.42) share their start.
    out.pointer(true).u32(info.platform_id).pointer(true);
    if level >= 101 {
        out.u32(info.version.0)
            .u32(info.version.1)
            .u32(info.server_type)
            .pointer(true);
    }
    if level == 102 {
        out.u32(SV_USERS)
            .u32(SV_DISC_MINUTES)
            .u32(SV_VISIBLE)
            .u32(SV_ANNOUNCE_SECONDS)
            .u32(SV_ANNDELTA_MS)
            .u32(SV_LICENSES)
            .pointer(true);
    }
    out.string(&info.netbios_name);
    if level >= 101 {
        out.string(&info.comment);
    }
    if level == 102 {
        out.string(SV_USERPATH);
    }
    out.u32(werror::SUCCESS);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: ShareKind) -> ShareEntry {
        ShareEntry {
            name: "s".into(),
            comment: String::new(),
            kind,
            path: String::new(),
            browseable: true,
        }
    }

    #[test]
    fn cluster_shares_carry_the_cluster_types_and_others_do_not() {
        assert_eq!(share_type(&entry(ShareKind::Disk)), 0);
        assert_eq!(share_type(&entry(ShareKind::ClusterDisk)), 0x0200_0000);
        assert_eq!(share_type(&entry(ShareKind::ScaleOutDisk)), 0x0400_0000);
        assert_eq!(share_type(&entry(ShareKind::Ipc)), 0x8000_0003);
    }
}
