//! Linux disk quotas of the file system holding the share, through `quotactl_fd(2)` on the
//! share's root (Linux 5.14; no block device path needed, so it works on any mount the share
//! is on). The generic commands serve every file system with quotas: ext4 (quota feature or
//! quota files), XFS (`uquota`/`gquota`), tmpfs (`usrquota`). The calls run with the service's
//! credentials: the server decides who may read or change which record (reading another
//! user's record and any change need `CAP_SYS_ADMIN`).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use smb3d_credentials::ServiceCreds;
use smb3d_vfs::{Quota, QuotaKind, VfsError, VfsResult};

use crate::errno::map_errno;

// <linux/quota.h>.
const Q_GETQUOTA: u32 = 0x80_0007;
const Q_SETQUOTA: u32 = 0x80_0008;
const Q_GETNEXTQUOTA: u32 = 0x80_0009;
const USRQUOTA: u32 = 0;
const GRPQUOTA: u32 = 1;
/// `dqb_valid` bit: the block limits are set.
const QIF_BLIMITS: u32 = 1;
/// Block limits are counted in 1 KiB units (`QIF_DQBLKSIZE`); usage is in bytes.
const QUOTA_BLOCK: u64 = 1024;

/// `struct if_nextdqblk`: `struct if_dqblk` and the id found, which Q_GETQUOTA and
/// Q_SETQUOTA read as the shorter `if_dqblk` prefix.
#[repr(C)]
#[derive(Default)]
struct NextDqblk {
    bhardlimit: u64,
    bsoftlimit: u64,
    curspace: u64,
    ihardlimit: u64,
    isoftlimit: u64,
    curinodes: u64,
    btime: u64,
    itime: u64,
    valid: u32,
    id: u32,
}

impl NextDqblk {
    fn quota(&self) -> Quota {
        Quota {
            used: self.curspace,
            soft_limit: self.bsoftlimit.saturating_mul(QUOTA_BLOCK),
            hard_limit: self.bhardlimit.saturating_mul(QUOTA_BLOCK),
        }
    }
}

fn qcmd(cmd: u32, kind: QuotaKind) -> u32 {
    let kind = match kind {
        QuotaKind::User => USRQUOTA,
        QuotaKind::Group => GRPQUOTA,
    };
    (cmd << 8) | kind
}

/// Errors of a file system without quotas of that kind (`ESRCH`: not on; `ENOSYS`,
/// `EOPNOTSUPP`, `ENOTTY`: not supported) are `Unsupported`; `ENOENT` from Q_GETNEXTQUOTA is
/// the end of the records.
fn quota_error(error: io::Error) -> VfsError {
    match error.raw_os_error() {
        Some(libc::ESRCH | libc::ENOSYS | libc::EOPNOTSUPP | libc::ENOTTY | libc::EINVAL) => {
            VfsError::Unsupported
        }
        Some(code) => map_errno(rustix::io::Errno::from_raw_os_error(code)),
        None => VfsError::Io(0),
    }
}

#[allow(unsafe_code)]
fn quotactl_fd(
    _: ServiceCreds<'_>,
    root: BorrowedFd<'_>,
    cmd: u32,
    id: u32,
    record: &mut NextDqblk,
) -> io::Result<()> {
    // SAFETY: `root` is open for the call, and `record` is a live `if_nextdqblk`, the largest
    // structure these commands read or write, borrowed exclusively for the call.
    let result = unsafe {
        libc::syscall(
            libc::SYS_quotactl_fd,
            root.as_raw_fd(),
            cmd,
            id,
            std::ptr::from_mut(record),
        )
    };
    if result < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub(crate) fn get(root: BorrowedFd<'_>, kind: QuotaKind, id: u32) -> VfsResult<Quota> {
    let mut record = NextDqblk::default();
    match smb3d_credentials::privileged(|service| {
        quotactl_fd(service, root, qcmd(Q_GETQUOTA, kind), id, &mut record)
    }) {
        Ok(()) => Ok(record.quota()),
        // XFS has no record for an id that never owned anything nor had limits.
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(Quota::default()),
        Err(e) => Err(quota_error(e)),
    }
}

pub(crate) fn set_limits(
    root: BorrowedFd<'_>,
    kind: QuotaKind,
    id: u32,
    soft: u64,
    hard: u64,
) -> VfsResult<()> {
    // Rounded up, so that a limit never allows less than asked for.
    let mut record = NextDqblk {
        bsoftlimit: soft.div_ceil(QUOTA_BLOCK),
        bhardlimit: hard.div_ceil(QUOTA_BLOCK),
        valid: QIF_BLIMITS,
        ..NextDqblk::default()
    };
    smb3d_credentials::privileged(|service| {
        quotactl_fd(service, root, qcmd(Q_SETQUOTA, kind), id, &mut record)
    })
    .map_err(quota_error)
}

pub(crate) fn next(
    root: BorrowedFd<'_>,
    kind: QuotaKind,
    from: u32,
) -> VfsResult<Option<(u32, Quota)>> {
    let mut record = NextDqblk::default();
    match smb3d_credentials::privileged(|service| {
        quotactl_fd(service, root, qcmd(Q_GETNEXTQUOTA, kind), from, &mut record)
    }) {
        Ok(()) => Ok(Some((record.id, record.quota()))),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
        Err(e) => Err(quota_error(e)),
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use super::*;

    #[test]
    fn commands_and_units_follow_linux_quota_h() {
        assert_eq!(qcmd(Q_GETQUOTA, QuotaKind::User), 0x8000_0700);
        assert_eq!(qcmd(Q_SETQUOTA, QuotaKind::Group), 0x8000_0801);
        assert_eq!(size_of::<NextDqblk>(), 72);
        let record = NextDqblk {
            bhardlimit: 2048,
            bsoftlimit: 1024,
            curspace: 5000,
            ..NextDqblk::default()
        };
        assert_eq!(
            record.quota(),
            Quota {
                used: 5000,
                soft_limit: 1 << 20,
                hard_limit: 2 << 20
            }
        );
    }

    /// On a file system without quotas (the test's temporary directory, as on most machines
    /// here: this kernel has neither XFS quota nor a quota format for ext4), every call is
    /// `Unsupported`, which the server answers STATUS_NOT_SUPPORTED.
    #[test]
    fn a_file_system_without_quotas_is_unsupported() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::File::open(dir.path()).unwrap();
        let quotas_on = get(root.as_fd(), QuotaKind::User, 0);
        if quotas_on.is_ok() {
            eprintln!("skipped: the temporary directory's file system keeps quotas");
            return;
        }
        assert_eq!(quotas_on, Err(VfsError::Unsupported));
        assert_eq!(
            next(root.as_fd(), QuotaKind::Group, 0),
            Err(VfsError::Unsupported)
        );
    }
}
