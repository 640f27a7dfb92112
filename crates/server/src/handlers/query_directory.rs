//! QUERY_DIRECTORY: MS-SMB2 3.3.5.18 with MS-FSA 2.1.5.6.3. The directory is read once per
//! enumeration (one getdents pass), names are matched before anything is stat'ed, and only
//! matching entries cost a statx.

use smb3d_dtyp::samba::XATTR_DOSATTRIB_NAME;
use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_fscc::posix::{self, POSIX_INFORMATION_CLASS, PosixDirListEncoder};
use smb3d_fscc::{
    DirEntry, DirListEncoder, Expression, FileAttributes, FileInformationClass, MacDirAttr,
    dir_entry_fixed_size, has_wildcards,
};
use smb3d_smb2::aapl::server_caps;
use smb3d_smb2::query_directory::{
    QueryDirectoryFlags, QueryDirectoryRequest, QueryDirectoryResponse,
};
use smb3d_vfs::{self as vfs, FileType, VfsError};
use smb3d_wire::Writer;

use crate::fs::apple;
use crate::fs::apple_convert;
use crate::fs::eas;
use crate::fs::fileinfo::{self, Meta};
use crate::fs::posix_info;
use crate::fs::shortname;
use crate::handlers::{check_credit_charge, lookup_open, mac_caps};
use crate::identity::IdMap;
use crate::request::ctx::Ctx;
use crate::request::malformed;
use crate::security;
use crate::state::cluster_opens;
use crate::state::files::FileKey;
use crate::state::open::{DirCursor, Open};
use crate::state::server::Server;
use crate::status_map::VfsResultExt;

/// A search pattern names (at most) one name component.
const MAX_PATTERN_UNITS: usize = 255;

pub(crate) async fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = QueryDirectoryRequest::decode(pdu).map_err(malformed)?;
    let open = lookup_open(cx, req.file_id)?;
    if !open.is_directory {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    if !open.may(AccessMask::FILE_LIST_DIRECTORY) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    let class = FileInformationClass(req.file_information_class);
    // SMB2_FIND_POSIX_INFORMATION, to a client that negotiated the SMB3 POSIX extensions on a
    // `posix` share; to others class 100 stays unknown.
    let posix = req.file_information_class == POSIX_INFORMATION_CLASS
        && open.share.posix
        && cx.conn.negotiated.get().is_some_and(|n| n.posix);
    let fixed = if posix {
        posix::DIR_ENTRY_MIN
    } else {
        dir_entry_fixed_size(class).map_err(|e| e.status())?
    };
    if req.output_buffer_length > cx.conn.server.settings.max_io_size {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    check_credit_charge(cx, req.output_buffer_length)?;
    if (req.output_buffer_length as usize) < fixed {
        return Err(NtStatus::INFO_LENGTH_MISMATCH);
    }
    let pattern = smb3d_wire::decode_utf16le(req.file_name, "FileName")
        .map_err(|_| NtStatus::OBJECT_NAME_INVALID)?;
    let pattern = if pattern.is_empty() {
        "*".to_owned()
    } else {
        pattern
    };
    if pattern.encode_utf16().count() > MAX_PATTERN_UNITS {
        return Err(NtStatus::OBJECT_NAME_INVALID);
    }

    let max_buffer = cx.conn.server.limits().max_directory_buffer;
    let pending = QueryDirectoryResponse::begin(w);
    let server = &cx.conn.server;
    let ids = &cx.conn.server.ids;
    let share = cx.tree.as_ref().map(|t| &t.share);
    let hide_unreadable = share.is_some_and(|s| s.hide_unreadable);
    let veto = share.map(|s| &s.presentation).filter(|p| p.vetoes_any());
    let readable = |entry: &vfs::DirEntry, meta: &Meta| {
        security::readable(
            &security::child_descriptor(
                open.vfs.as_ref(),
                open.file.as_ref(),
                &entry.name,
                &meta.stat,
                ids,
            ),
            &open.identity,
        )
    };
    // Vetoed names are left out; with access-based enumeration, entries the opener could not
    // read too.
    let visible = |entry: &vfs::DirEntry, meta: &Meta| {
        let vetoed = veto.is_some_and(|v| v.vetoes(&entry.name));
        entry.name == "."
            || entry.name == ".."
            || (!vetoed && (!hide_unreadable || readable(entry, meta)))
    };
    // Queries on one handle take turns over its cursor; one that waits holds no worker.
    let mac = mac_listing(cx, class);
    let mut cursor = open.dir.lock().await;
    let status = open.io_long(|| {
        let restart = req
            .flags
            .intersects(QueryDirectoryFlags::RESTART_SCANS | QueryDirectoryFlags::REOPEN);
        if restart || cursor.pattern.is_none() {
            start_enumeration(&open, &mut cursor, pattern).status()?;
        }
        let single = req.flags.contains(QueryDirectoryFlags::RETURN_SINGLE_ENTRY);
        fill(
            server,
            &open,
            &mut cursor,
            class,
            // Fewer entries than fit are allowed; the client asks again (MS-SMB2 3.3.5.18).
            (req.output_buffer_length as usize).min(max_buffer),
            single,
            (hide_unreadable || veto.is_some()).then_some(&visible as &Visible<'_>),
            posix.then_some(ids),
            mac,
            w,
        )
    })?;
    QueryDirectoryResponse::finish(w, pending);
    Ok(status)
}

/// Reads the directory afresh for a new enumeration with `pattern` (which stays fixed until
/// the next restart, as on Windows). A pattern without wildcards names one entry: only that
/// name is looked up.
fn start_enumeration(open: &Open, cursor: &mut DirCursor, pattern: String) -> Result<(), VfsError> {
    let entries = if has_wildcards(&pattern) {
        let mut entries = vec![dot_entry("."), dot_entry("..")];
        entries.extend(open.file.read_dir()?);
        entries
    } else if pattern == "." || pattern == ".." {
        vec![dot_entry(&pattern)]
    } else {
        // One name: found case-insensitively and listed with its real spelling, or by the
        // short name of an entry (MS-FSA 2.1.5.6.3).
        let found = match open.file.lookup_child(&pattern) {
            Ok(Some((name, stat))) => Ok(Some(vfs::DirEntry {
                name,
                ino: stat.ino,
                file_type: stat.file_type,
            })),
            Ok(None) if open.share.short_names => {
                shortname::find_child(open.file.as_ref(), &pattern)
            }
            other => other.map(|_| None),
        };
        match found {
            Ok(Some(entry)) => vec![entry],
            Ok(None) | Err(VfsError::NotFound | VfsError::InvalidName | VfsError::NameTooLong) => {
                Vec::new()
            }
            Err(e) => return Err(e),
        }
    };
    *cursor = DirCursor {
        entries,
        next: 0,
        pattern: Some(pattern),
        returned_any: false,
    };
    Ok(())
}

fn dot_entry(name: &str) -> vfs::DirEntry {
    vfs::DirEntry {
        name: name.to_owned(),
        ino: 0,
        file_type: FileType::Directory,
    }
}

/// What Mac clients' listings carry: set when the connection negotiated ReadDirAttr in the
/// AAPL create context on an `apple` share, for FileIdBothDirectoryInformation (where Apple's
/// client reads the extras).
#[derive(Clone, Copy)]
struct MacListing<'a> {
    ids: &'a IdMap,
    /// The UNIX mode goes in too when the connection also negotiated NFS ACEs.
    with_mode: bool,
}

fn mac_listing<'a>(cx: &Ctx<'a>, class: FileInformationClass) -> Option<MacListing<'a>> {
    let caps = mac_caps(cx);
    (class == FileInformationClass::FILE_ID_BOTH_DIRECTORY_INFORMATION
        && caps & server_caps::READ_DIR_ATTR != 0)
        .then_some(MacListing {
            ids: &cx.conn.server.ids,
            with_mode: caps & server_caps::NFS_ACE != 0,
        })
}

/// The ReadDirAttr extras of an entry: the opener's maximal access, the resource fork's
/// length, the Finder info and the mode.
fn mac_extras(open: &Open, name: &str, meta: &Meta, mac: MacListing<'_>) -> MacDirAttr {
    let max_access = match open.path().join(name) {
        Ok(path) if name != "." && name != ".." => {
            let sd = security::child_descriptor(
                open.vfs.as_ref(),
                open.file.as_ref(),
                name,
                &meta.stat,
                mac.ids,
            );
            let parent = security::Parent::of(open.vfs.as_ref(), &path, mac.ids);
            security::maximal(&sd, &open.identity, &parent).bits()
        }
        _ => 0,
    };
    // A Mac's `._` file of the entry is converted first, as vfs_fruit converts it when it
    // lists the directory for a Mac, by a client who may write the file anyway.
    if let (Some(apple), Ok(path)) = (&open.share.apple, open.path().join(name))
        && meta.stat.file_type == FileType::File
    {
        let may_write = || {
            AccessMask(max_access).contains(AccessMask::FILE_WRITE_DATA | AccessMask::FILE_WRITE_EA)
        };
        let converted =
            apple_convert::convert(open.vfs.as_ref(), &path, None, apple.conversion, may_write);
        if let Err(e) = converted {
            tracing::debug!(%path, error = %e, "._ file not converted");
        }
    }
    let (resource_fork_len, finder_info) = apple::listed_extras(
        open.vfs.as_ref(),
        &open.path(),
        open.file.as_ref(),
        name,
        &meta.stat,
    );
    MacDirAttr {
        max_access,
        resource_fork_len,
        finder_info,
        // The mode's type and permission bits fit the 16-bit field.
        unix_mode: if mac.with_mode {
            meta.stat.mode as u16
        } else {
            0
        },
    }
}

/// Decides whether a listing shows an entry.
type Visible<'a> = dyn Fn(&vfs::DirEntry, &Meta) -> bool + 'a;

/// Encodes matching entries from the cursor while they fit; entries `visible` refuses (when
/// given) are skipped.
#[allow(clippy::too_many_arguments)]
fn fill(
    server: &Server,
    open: &Open,
    cursor: &mut DirCursor,
    class: FileInformationClass,
    limit: usize,
    single: bool,
    visible: Option<&Visible<'_>>,
    posix: Option<&IdMap>,
    mac: Option<MacListing<'_>>,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let mut encoder = match posix {
        Some(_) => Encoder::Posix(PosixDirListEncoder::new(w, limit)),
        None => Encoder::Classic(DirListEncoder::new(class, w, limit).map_err(|e| e.status())?),
    };
    let expression = Expression::new(cursor.pattern.as_deref().unwrap_or("*"), true);
    let short_names = open.share.short_names;
    let needs_stat = posix.is_some() || class != FileInformationClass::FILE_NAMES_INFORMATION;
    // A Mac listing's EaSize field carries the maximal access instead (ReadDirAttr).
    let with_ea_size = posix.is_none()
        && mac.is_none()
        && needs_stat
        && class != FileInformationClass::FILE_DIRECTORY_INFORMATION;
    let mut posix_info = None;
    while let Some(entry) = cursor.entries.get(cursor.next) {
        let short = if short_names {
            shortname::short_name(&entry.name)
        } else {
            None
        };
        // A pattern matches the long name or the short one (MS-FSA 2.1.5.6.3).
        if !expression.matches(&entry.name)
            && !short.is_some_and(|s| expression.matches(s.as_str()))
        {
            cursor.next += 1;
            continue;
        }
        let listed = if needs_stat {
            match entry_meta(open, entry, with_ea_size) {
                // Files with delete pending, here or on another node of a cluster (as its
                // watch knows), are gone as far as listings go.
                Some((meta, _))
                    if server.files.is_delete_pending(FileKey {
                        dev: meta.stat.dev,
                        ino: meta.stat.ino,
                        snapshot: open.shared.key.snapshot,
                    }) || (open.shared.key.snapshot.is_none()
                        && cluster_opens::marked_elsewhere(server, &open.share, meta.stat.ino))
                        || visible.is_some_and(|v| !v(entry, &meta)) =>
                {
                    cursor.next += 1;
                    continue;
                }
                Some((meta, ea_size)) => {
                    if let Some(ids) = posix {
                        posix_info = Some(posix_info::file_info(&meta, ids));
                    }
                    let mut listed = listing(&meta, &entry.name);
                    listed.ea_size = ea_size;
                    listed.short_name = short.as_ref().map_or("", |s| s.as_str());
                    if listed
                        .file_attributes
                        .contains(FileAttributes::REPARSE_POINT)
                    {
                        listed.reparse_tag =
                            fileinfo::stored_child_tag(open.file.as_ref(), &entry.name);
                    }
                    listed.mac = mac.map(|mac| mac_extras(open, &entry.name, &meta, mac));
                    listed
                }
                // Gone since the directory was read, or a symlink leading out of the share:
                // not listed.
                None => {
                    cursor.next += 1;
                    continue;
                }
            }
        } else {
            if let Some(visible) = visible
                && !entry_meta(open, entry, false).is_some_and(|(meta, _)| visible(entry, &meta))
            {
                cursor.next += 1;
                continue;
            }
            DirEntry {
                name: &entry.name,
                ..DirEntry::default()
            }
        };
        let pushed = match (&mut encoder, &posix_info) {
            (Encoder::Posix(list), Some(info)) => list.push(w, info, &entry.name),
            (Encoder::Classic(list), _) => list.push(w, &listed),
            (Encoder::Posix(..), None) => false,
        };
        if !pushed {
            break;
        }
        cursor.next += 1;
        cursor.returned_any = true;
        if single {
            break;
        }
    }
    if !encoder.is_empty() {
        return Ok(NtStatus::SUCCESS);
    }
    if cursor.next < cursor.entries.len() {
        // The next entry alone does not fit in the client's buffer.
        return Err(NtStatus::INFO_LENGTH_MISMATCH);
    }
    Err(if cursor.returned_any {
        NtStatus::NO_MORE_FILES
    } else {
        NtStatus::NO_SUCH_FILE
    })
}

/// The listing being written: one of the MS-FSCC classes, or the POSIX extensions' entries.
enum Encoder {
    Classic(DirListEncoder),
    Posix(PosixDirListEncoder),
}

impl Encoder {
    fn is_empty(&self) -> bool {
        match self {
            Self::Classic(list) => list.is_empty(),
            Self::Posix(list) => list.is_empty(),
        }
    }
}

/// What a listing shows of an entry.
fn listing<'a>(meta: &Meta, name: &'a str) -> DirEntry<'a> {
    DirEntry {
        file_index: 0,
        times: meta.times(),
        end_of_file: meta.end_of_file(),
        allocation_size: meta.allocation_size(),
        file_attributes: meta.attributes(),
        ea_size: 0,
        reparse_tag: 0,
        file_id: meta.stat.ino,
        file_id_128: file_id_128(meta.stat.ino),
        short_name: "",
        name,
        mac: None,
    }
}

/// A listed entry as clients see it: "." is the directory itself, ".." its parent (the share
/// root is its own parent), symlinks are followed within the share. A regular entry costs a
/// statx and a getxattr, never an open. With `with_ea_size` it comes with the entry's EaSize
/// (MS-FSCC 2.4.12, as FileEaInformation reports it; 0 for a symlink's target and for ".."):
/// its xattrs are listed instead of the DOS attributes being asked for, which that list says
/// whether to read, so a file without EAs still costs a statx and two xattr calls at most. A
/// share without EAs lists none, and one without DOSATTRIB reads none: a statx alone.
fn entry_meta(open: &Open, entry: &vfs::DirEntry, with_ea_size: bool) -> Option<(Meta, u32)> {
    let shown = &open.share.presentation;
    let with_ea_size = with_ea_size && shown.xattrs.eas;
    let dir = open.file.as_ref();
    match entry.name.as_str() {
        "." => {
            let meta = fileinfo::load(dir, ".", shown).ok()?;
            let ea_size = if with_ea_size {
                eas::read(dir).map_or(0, |eas| eas::size(&eas))
            } else {
                0
            };
            Some((meta, ea_size))
        }
        ".." => {
            let path = open.path();
            let parent = path.parent_and_name().map(|(p, _)| p).unwrap_or(path);
            Some((
                Meta::new(open.vfs.stat(&parent).ok()?, None, "..", shown),
                0,
            ))
        }
        name => {
            let stat = open.file.stat_child(name).ok()?;
            if stat.file_type == FileType::Symlink {
                let target = open.vfs.stat(&open.path().join(name).ok()?).ok()?;
                return Some((Meta::new(target, None, name, shown), 0));
            }
            let xattrs = with_ea_size
                .then(|| dir.list_child_xattr(name).ok())
                .flatten();
            let (dos, ea_size) = match xattrs {
                Some(xattrs) => (
                    xattrs
                        .iter()
                        .any(|xattr| xattr == XATTR_DOSATTRIB_NAME)
                        .then(|| fileinfo::load_child_dos(dir, name, shown))
                        .flatten(),
                    eas::child_size(dir, name, &xattrs),
                ),
                None => (fileinfo::load_child_dos(dir, name, shown), 0),
            };
            Some((Meta::new(stat, dos, name, shown), ea_size))
        }
    }
}

/// The 128-bit file id (FileIdExtd classes): the inode number, zero-extended.
fn file_id_128(ino: u64) -> [u8; 16] {
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&ino.to_le_bytes());
    id
}
