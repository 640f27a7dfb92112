//! CREATE of a named data stream (MS-FSA 2.1.5.1.2 with the stream steps of 2.1.5.1): the
//! file it belongs to is opened (or created) for metadata only, access is checked against the
//! file, and the stream itself is found, created or truncated as the disposition says.

use smb3d_dtyp::NtStatus;
use smb3d_smb2::create::CreateDisposition;
use smb3d_vfs::casefold::eq_ignore_case;
use smb3d_vfs::{Access, Disposition, Kind, OpenRequest, VfsFile};

use crate::fs::names::SmbPath;
use crate::fs::resource_fork::ResourceFork;
use crate::fs::{apple, streams};
use crate::status_map::VfsResultExt;

use super::request::Intent;

/// Adapts the open of `path` when it names a stream: a stream is never a directory, and the
/// explicit default stream (`file::$DATA`) must be a file. For a named stream, `request`
/// becomes the open of the file it belongs to. A share without named streams
/// (`streams_xattr` off) answers a stream name as an invalid name, as Samba without a streams
/// module does.
pub(super) fn adapt(
    path: &SmbPath,
    intent: &mut Intent,
    request: &mut OpenRequest,
    streams: bool,
) -> Result<(), NtStatus> {
    if path.stream.is_none() && !path.default_stream {
        return Ok(());
    }
    if path.stream.is_some() && !streams {
        return Err(NtStatus::OBJECT_NAME_INVALID);
    }
    if intent.kind == Kind::Directory {
        return Err(NtStatus::NOT_A_DIRECTORY);
    }
    if path.default_stream {
        intent.kind = Kind::File;
        request.kind = Kind::File;
        return Ok(());
    }
    request.access = Access::MetadataOnly;
    request.disposition = match intent.disposition {
        CreateDisposition::OPEN | CreateDisposition::OVERWRITE => Disposition::Open,
        _ => Disposition::OpenOrCreate,
    };
    // With `Kind::Any` a missing file is created as a plain file and a directory still opens:
    // directories have named streams too.
    Ok(())
}

/// Finds, creates or truncates stream `name` of `base` as `disposition` says; returns the
/// stream's stored name and whether it was created. `fork` is the file's resource fork when
/// `name` is an `apple` share's AFP_Resource.
pub(super) fn resolve(
    base: &dyn VfsFile,
    name: &str,
    disposition: CreateDisposition,
    apple: bool,
    mac_client: bool,
    fork: Option<&ResourceFork>,
) -> Result<(String, bool), NtStatus> {
    if apple && eq_ignore_case(name, apple::AFPINFO_STREAM) {
        return resolve_afp_info(base, disposition);
    }
    if let Some(fork) = fork {
        return resolve_resource_fork(fork, disposition);
    }
    let native;
    let name = if apple {
        native = apple::stream_name_to_native(name);
        native.as_str()
    } else {
        name
    };
    // On `apple` shares an empty resource fork is none; creating it reuses its spelling.
    let (existing, name) = match streams::find(base, name).status()? {
        Some(stored) if apple && apple::is_empty_resource_fork(base, &stored).status()? => {
            (None, stored)
        }
        other => (other, name.to_owned()),
    };
    // To a Mac client on an `apple` share an empty named stream is not there to open (as
    // vfs_fruit answers once AAPL is negotiated); it may still be created over or overwritten.
    let existing = match existing {
        Some(stored)
            if apple
                && mac_client
                && disposition == CreateDisposition::OPEN
                && base
                    .get_xattr(&streams::xattr_name(&stored))
                    .status()?
                    .is_none_or(|v| streams::data_len(&v) == 0) =>
        {
            return Err(NtStatus::OBJECT_NAME_NOT_FOUND);
        }
        other => other,
    };
    match (existing, disposition) {
        (Some(_), CreateDisposition::CREATE) => Err(NtStatus::OBJECT_NAME_COLLISION),
        (None, CreateDisposition::OPEN | CreateDisposition::OVERWRITE) => {
            Err(NtStatus::OBJECT_NAME_NOT_FOUND)
        }
        (Some(stored), CreateDisposition::OPEN | CreateDisposition::OPEN_IF) => Ok((stored, false)),
        (Some(stored), _) => {
            streams::truncate(base, &stored).status()?;
            Ok((stored, false))
        }
        (None, _) => {
            streams::truncate(base, &name).status()?;
            Ok((name, true))
        }
    }
}

/// The resource fork of a file on an `apple` share exists while it is not empty (an empty one
/// is none to a Mac); overwriting it empties it.
fn resolve_resource_fork(
    fork: &ResourceFork,
    disposition: CreateDisposition,
) -> Result<(String, bool), NtStatus> {
    let exists = fork.len().status()? > 0;
    match (exists, disposition) {
        (true, CreateDisposition::CREATE) => return Err(NtStatus::OBJECT_NAME_COLLISION),
        (false, CreateDisposition::OPEN | CreateDisposition::OVERWRITE) => {
            return Err(NtStatus::OBJECT_NAME_NOT_FOUND);
        }
        (true, CreateDisposition::OPEN | CreateDisposition::OPEN_IF) | (false, _) => {}
        (true, _) => fork.set_len(0).status()?,
    }
    Ok((apple::RESOURCE_STREAM.to_owned(), !exists))
}

/// The AFP_AfpInfo stream of an `apple` share exists while the file has Finder info
/// (fs::apple); creating or overwriting it stores nothing until an AfpInfo is written.
fn resolve_afp_info(
    base: &dyn VfsFile,
    disposition: CreateDisposition,
) -> Result<(String, bool), NtStatus> {
    let exists = apple::finder_info(base).status()?.is_some();
    match (exists, disposition) {
        (true, CreateDisposition::CREATE) => Err(NtStatus::OBJECT_NAME_COLLISION),
        (false, CreateDisposition::OPEN | CreateDisposition::OVERWRITE) => {
            Err(NtStatus::OBJECT_NAME_NOT_FOUND)
        }
        _ => Ok((apple::AFPINFO_STREAM.to_owned(), !exists)),
    }
}
