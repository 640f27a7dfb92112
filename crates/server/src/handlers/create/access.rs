//! Access to the file a CREATE opens (MS-FSA 2.1.5.1.1 for a new file, 2.1.5.1.2 for an
//! existing one), and the security descriptor a request gives for a new file.

use smb3d_dtyp::{AccessMask, NtStatus, SecurityDescriptor, SecurityInformation, Sid};
use smb3d_fscc::FileAttributes;
use smb3d_smb2::create::{CreateContext, CreateRequest};
use smb3d_vfs::{Vfs, VfsFile, VfsPath};

use crate::fs::fileinfo::Meta;
use crate::identity::{IdMap, Identity};
use crate::security;
use crate::state::share::{InheritOwner, Share};
use crate::status_map::VfsResultExt;

use super::request::Intent;

/// The descriptor of the SD_BUFFER create context (MS-SMB2 2.2.13.2.3), checked before
/// anything is created.
pub(super) fn security_context(
    req: &CreateRequest<'_>,
) -> Result<Option<SecurityDescriptor>, NtStatus> {
    let Some(data) = req.contexts.iter().flatten().find_map(|c| match c {
        CreateContext::SecurityDescriptor(data) => Some(data),
        _ => None,
    }) else {
        return Ok(None);
    };
    if data.len() > security::MAX_DESCRIPTOR_LEN {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    let sd = SecurityDescriptor::decode(data).map_err(|_| NtStatus::INVALID_SECURITY_DESCR)?;
    if security::parts_of(&sd).contains(SecurityInformation::SACL) {
        return Err(NtStatus::PRIVILEGE_NOT_HELD);
    }
    Ok(Some(sd))
}

/// What the access checks of an open look at: the file's path, who opens it, and its parent.
pub(super) struct AccessCheck<'a> {
    pub vfs: &'a dyn Vfs,
    pub path: &'a VfsPath,
    pub who: &'a Identity,
    pub ids: &'a IdMap,
    pub parent: security::Parent<'a>,
    pub share: &'a Share,
}

impl AccessCheck<'_> {
    /// A file or directory this open just created: the parent must allow adding it (else it
    /// is removed again and the open refused, MS-FSA 2.1.5.1.1); it takes the descriptor of
    /// the create context over what it inherits from the parent (MS-DTYP 2.5.3.4.1), and
    /// either reaches its POSIX permissions. The creator gets what it asked for. Returns the
    /// granted access and the new descriptor.
    pub fn admit_new(
        &self,
        file: &dyn VfsFile,
        meta: &Meta,
        intent: &Intent,
        sd_buffer: Option<&SecurityDescriptor>,
    ) -> Result<(AccessMask, SecurityDescriptor), NtStatus> {
        let (vfs, who, ids) = (self.vfs, self.who, self.ids);
        let add = if meta.is_directory() {
            AccessMask::FILE_ADD_SUBDIRECTORY
        } else {
            AccessMask::FILE_ADD_FILE
        };
        let parent_sd = self.parent.descriptor();
        if parent_sd.is_some_and(|sd| !security::allows(sd, who, add)) {
            let _ = vfs.unlink(self.path);
            return Err(NtStatus::ACCESS_DENIED);
        }
        let owner = match self.take_parent_owner(file) {
            Ok(owner) => owner,
            Err(status) => {
                let _ = vfs.unlink(self.path);
                return Err(status);
            }
        };
        let inherited = self.inherited(meta.is_directory(), owner);
        let stat = file.stat().status()?;
        let initial = || security::initial_descriptor(vfs, file, &stat, ids, who);
        let applied = match (sd_buffer, &inherited) {
            (Some(update), _) => {
                let current = inherited.clone().unwrap_or_else(initial);
                let info = security::parts_of(update);
                security::change(vfs, file, who, ids, info, update, &current)
            }
            (None, Some(sd)) if self.share.inherit_owner == InheritOwner::No => {
                security::own_inherited(vfs, file, who, ids, sd)
                    .and_then(|()| security::apply(vfs, file, ids, sd))
            }
            (None, Some(sd)) => security::apply(vfs, file, ids, sd),
            // Where the file system cannot make the creator the owner, the descriptor does.
            (None, None) if !vfs.runs_as_users() => security::store(vfs, file, &initial()),
            (None, None) => Ok(()),
        };
        match applied {
            // A file system without security xattrs keeps no ACL; the POSIX mode governs.
            Ok(()) | Err(NtStatus::NOT_SUPPORTED) => {}
            Err(status) => {
                let _ = vfs.unlink(self.path);
                return Err(status);
            }
        }
        let requested = intent.desired.without(AccessMask::MAXIMUM_ALLOWED);
        let granted = if intent.desired.contains(AccessMask::MAXIMUM_ALLOWED) {
            requested | AccessMask::FILE_ALL_ACCESS
        } else {
            requested
        };
        let stat = file.stat().status()?;
        Ok((granted, security::descriptor(vfs, file, &stat, ids)))
    }

    /// What a new file inherits (MS-DTYP 2.5.3.4.1): from its parent's descriptor, or, with
    /// `inherit_acls`, from the one synthesized for a parent whose descriptor is derived from
    /// its mode, as Samba's acl_xattr does.
    /// `owner`, when set, stands for the creator (`inherit_owner`).
    fn inherited(&self, is_directory: bool, owner: Option<Sid>) -> Option<SecurityDescriptor> {
        let parent = self.parent.descriptor()?;
        match self.parent.derived_from() {
            Some(stat) if self.share.inherit_acls => {
                let modes = self.share.new_modes(stat.mode);
                let synthesized = security::with_inheritable_entries(parent, modes);
                security::inherited(&synthesized, is_directory, self.who, owner)
            }
            _ => security::inherited(parent, is_directory, self.who, owner),
        }
    }

    /// With `inherit_owner` (Samba's `inherit owner`), gives a new file its parent directory's
    /// owner on disk; returns the owner its descriptor then inherits with "windows and unix":
    /// the parent descriptor's. The administrator chose this for the share (drop boxes), so
    /// the service makes the change, whoever creates.
    fn take_parent_owner(&self, file: &dyn VfsFile) -> Result<Option<Sid>, NtStatus> {
        let mode = self.share.inherit_owner;
        if mode == InheritOwner::No || !self.vfs.runs_as_users() {
            return Ok(None);
        }
        let Some(parent) = self.parent.stat() else {
            return Ok(None);
        };
        security::give_to(self.vfs, file, parent.uid)?;
        Ok(match mode {
            InheritOwner::WindowsAndUnix => self.parent.descriptor().and_then(|sd| sd.owner),
            InheritOwner::No | InheritOwner::UnixOnly => None,
        })
    }

    /// An existing file: its descriptor grants what the open asks for (MS-FSA 2.1.5.1.2), and
    /// overwriting needs the right to write whatever the open asks for. Returns the granted
    /// access and the descriptor.
    pub fn admit_existing(
        &self,
        file: &dyn VfsFile,
        meta: &Meta,
        intent: &Intent,
    ) -> Result<(AccessMask, SecurityDescriptor), NtStatus> {
        let sd = security::descriptor(self.vfs, file, &meta.stat, self.ids);
        let required = if intent.truncates {
            AccessMask::FILE_WRITE_DATA
        } else {
            AccessMask::empty()
        };
        let granted = security::grant(&sd, self.who, intent.desired, required, &self.parent)?;
        Ok((granted, sd))
    }
}

/// MS-FSA 2.1.5.1.2.1 against an existing file: a read-only file is not written or deleted
/// (nor are its streams), and an overwrite of the file must keep the HIDDEN and SYSTEM
/// attributes it has.
pub(super) fn check_existing(
    meta: &Meta,
    intent: &Intent,
    requested: u32,
    named_stream: bool,
) -> Result<(), NtStatus> {
    if meta.readonly() && !meta.is_directory() {
        if intent.delete_on_close {
            return Err(NtStatus::CANNOT_DELETE);
        }
        if intent.writes_data || intent.truncates {
            return Err(NtStatus::ACCESS_DENIED);
        }
    }
    if intent.truncates && !named_stream {
        let requested = FileAttributes(requested);
        for kept in [FileAttributes::HIDDEN, FileAttributes::SYSTEM] {
            if meta.stored.contains(kept) && !requested.contains(kept) {
                return Err(NtStatus::ACCESS_DENIED);
            }
        }
    }
    Ok(())
}
