//! Reparse points (MS-FSCC 2.1.2, MS-FSA 2.1.5.10.20 GET, 2.1.5.10.37 SET, 2.1.5.10.7
//! DELETE). A symlink reparse point is a POSIX symlink, and only one whose target stays inside
//! the share is made; the VFS confines every symlink it follows anyway. Other tags are kept
//! whole in the `user.SmbReparse` xattr, where Samba keeps them, with the REPARSE_POINT
//! attribute.

use std::sync::Arc;

use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_fscc::{FileAttributes, ReparseBuffer, ReparseTag, SymlinkReparse};
use smb3d_smb2::ioctl::IoctlRequest;
use smb3d_vfs::{Access, Disposition, Kind, OpenRequest, VfsError};
use smb3d_wire::Writer;

use super::respond;
use crate::fs::fileinfo::{self, REPARSE_XATTR};
use crate::state::open::Open;
use crate::status_map::VfsResultExt;

/// The reparse point of the object `open` was opened by: its path's symlink, or the xattr.
fn current(open: &Open) -> Result<Option<Vec<u8>>, NtStatus> {
    let path = open.path();
    if open.stream.is_none()
        && let Some(target) = open.vfs.read_link(&path).status()?
    {
        let name = target.replace('/', "\\");
        let link = SymlinkReparse {
            substitute_name: name.clone(),
            print_name: name,
            relative: !target.starts_with('/'),
        };
        let mut data = Vec::with_capacity(link.encoded_len());
        link.encode(&mut Writer::new(&mut data));
        let mut out = Vec::with_capacity(ReparseBuffer::HEADER_LEN + data.len());
        ReparseBuffer {
            tag: ReparseTag::SYMLINK,
            guid: None,
            data: &data,
        }
        .encode(&mut Writer::new(&mut out));
        return Ok(Some(out));
    }
    open.file.get_xattr(REPARSE_XATTR).status()
}

/// FSCTL_GET_REPARSE_POINT: the whole buffer, or STATUS_BUFFER_TOO_SMALL.
pub(super) fn get(
    open: &Arc<Open>,
    req: &IoctlRequest<'_>,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let buffer = open
        .io(|| current(open))?
        .ok_or(NtStatus::NOT_A_REPARSE_POINT)?;
    if buffer.len() > req.max_output_response as usize {
        return Err(NtStatus::BUFFER_TOO_SMALL);
    }
    respond(w, req, open.file_id, |w| {
        w.bytes(&buffer);
    });
    Ok(NtStatus::SUCCESS)
}

/// Rights that may change a reparse point.
const WRITE_RIGHTS: AccessMask =
    AccessMask(AccessMask::FILE_WRITE_DATA.0 | AccessMask::FILE_WRITE_ATTRIBUTES.0);

/// FSCTL_SET_REPARSE_POINT.
pub(super) fn set(
    open: &Arc<Open>,
    req: &IoctlRequest<'_>,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    if !open.may(WRITE_RIGHTS) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    let buffer = ReparseBuffer::decode(req.input).map_err(|_| NtStatus::IO_REPARSE_DATA_INVALID)?;
    if buffer.encoded_len() != req.input.len() || buffer.data.len() > ReparseBuffer::MAX_DATA_LEN {
        return Err(NtStatus::IO_REPARSE_DATA_INVALID);
    }
    // Tag 0 and 1 are reserved (MS-FSCC 2.1.2.1).
    if buffer.tag.0 <= 1 {
        return Err(NtStatus::IO_REPARSE_TAG_INVALID);
    }
    open.io(|| {
        if let Some(existing) = current(open)?
            && ReparseBuffer::decode(&existing).map(|b| b.tag) != Ok(buffer.tag)
        {
            return Err(NtStatus::IO_REPARSE_TAG_MISMATCH);
        }
        if buffer.tag == ReparseTag::SYMLINK {
            make_symlink(open, &buffer)
        } else {
            open.file.set_xattr(REPARSE_XATTR, req.input).status()?;
            set_attribute(open, true)
        }
    })?;
    respond(w, req, open.file_id, |_| {});
    Ok(NtStatus::SUCCESS)
}

/// Replaces the empty file or directory the client made for the link by a symlink to a
/// relative target that leads inside the share, resolved through what is on disk now (a
/// lexical check would take `link-to-root/..` for the root). Refused targets are
/// STATUS_ACCESS_DENIED.
fn make_symlink(open: &Open, buffer: &ReparseBuffer<'_>) -> Result<(), NtStatus> {
    let link =
        SymlinkReparse::decode(buffer.data).map_err(|_| NtStatus::IO_REPARSE_DATA_INVALID)?;
    let path = open.path();
    if open.stream.is_some() || path.is_root() {
        return Err(NtStatus::ACCESS_DENIED);
    }
    let target = relative_target(&link).ok_or(NtStatus::ACCESS_DENIED)?;
    match open.vfs.check_symlink_target(&path, &target) {
        Ok(()) => {}
        Err(VfsError::OutsideShare | VfsError::InvalidName) => {
            return Err(NtStatus::ACCESS_DENIED);
        }
        Err(e) => return Err(crate::status_map::vfs_status(&e)),
    }
    let stat = open.file.stat().status()?;
    let empty = if open.is_directory {
        open.file.read_dir().status()?.is_empty()
    } else {
        stat.size == 0
    };
    if !empty {
        return Err(NtStatus::ACCESS_DENIED);
    }
    open.vfs.unlink(&path).status()?;
    open.vfs.symlink(&target, &path).status()
}

/// The POSIX target of a symlink reparse point if it is relative: absolute Windows targets
/// (`\??\C:\...`) name nothing here.
fn relative_target(reparse: &SymlinkReparse) -> Option<String> {
    if !reparse.relative || reparse.substitute_name.is_empty() {
        return None;
    }
    let target = reparse.substitute_name.replace('\\', "/");
    if target.starts_with('/') || target.contains('\0') {
        return None;
    }
    Some(target)
}

/// FSCTL_DELETE_REPARSE_POINT: the buffer names the tag and carries no data. A symlink
/// becomes an empty file again, as the object the client first made.
pub(super) fn delete(
    open: &Arc<Open>,
    req: &IoctlRequest<'_>,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    if !open.may(WRITE_RIGHTS) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    let buffer = ReparseBuffer::decode(req.input).map_err(|_| NtStatus::IO_REPARSE_DATA_INVALID)?;
    if !buffer.data.is_empty() {
        return Err(NtStatus::IO_REPARSE_DATA_INVALID);
    }
    open.io(|| {
        let existing = current(open)?.ok_or(NtStatus::NOT_A_REPARSE_POINT)?;
        if ReparseBuffer::decode(&existing).map(|b| b.tag) != Ok(buffer.tag) {
            return Err(NtStatus::IO_REPARSE_TAG_MISMATCH);
        }
        if buffer.tag == ReparseTag::SYMLINK {
            let path = open.path();
            open.vfs.unlink(&path).status()?;
            let request = OpenRequest {
                access: Access::MetadataOnly,
                disposition: Disposition::Create,
                kind: Kind::File,
                create_mode: 0o644,
            };
            open.vfs.open(&path, &request).status().map(drop)
        } else {
            match open.file.remove_xattr(REPARSE_XATTR) {
                Ok(()) | Err(VfsError::NotFound) => {}
                Err(e) => return Err(crate::status_map::vfs_status(&e)),
            }
            set_attribute(open, false)
        }
    })?;
    respond(w, req, open.file_id, |_| {});
    Ok(NtStatus::SUCCESS)
}

/// Sets or clears FILE_ATTRIBUTE_REPARSE_POINT in the stored DOS attributes.
fn set_attribute(open: &Open, on: bool) -> Result<(), NtStatus> {
    let mut meta = open.stored_meta()?;
    meta.stored = if on {
        meta.stored | FileAttributes::REPARSE_POINT
    } else {
        FileAttributes(meta.stored.0 & !FileAttributes::REPARSE_POINT.0)
    };
    fileinfo::store(open.vfs.as_ref(), open.file.as_ref(), &meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(target: &str, relative: bool) -> SymlinkReparse {
        SymlinkReparse {
            substitute_name: target.into(),
            print_name: target.into(),
            relative,
        }
    }

    #[test]
    fn targets_must_be_relative() {
        let check = |target: &str, relative: bool| relative_target(&link(target, relative));
        assert_eq!(check("target", true).as_deref(), Some("target"));
        assert_eq!(check("..\\..\\x", true).as_deref(), Some("../../x"));
        assert_eq!(check("\\etc\\passwd", true), None);
        assert_eq!(check("", true), None);
        assert_eq!(
            check("\\??\\C:\\x", false),
            None,
            "absolute Windows targets name nothing here"
        );
    }
}
