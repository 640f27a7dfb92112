//! The conversion of a `._` AppleDouble file that macOS wrote (through a share without streams,
//! or copied onto the server) to what an `apple` share keeps, as Samba's vfs_fruit converts it
//! when a Mac client opens AFP_AfpInfo or AFP_Resource or lists the directory: the extended
//! attributes embedded after the Finder info become named streams, the Finder info becomes
//! AFP_AfpInfo (the metadata xattr), and the `._` file is rewritten in Samba's layout holding
//! only the resource fork, so it is converted once. Options as vfs_fruit's:
//! `wipe_intentionally_left_blank_rfork` empties the fork macOS writes for a file without one,
//! `delete_empty_adfiles` deletes a `._` file whose fork is empty.
//!
//! Anyone who may write the directory (through another share, or on the host) may write a `._`
//! file, so it is decoded by fs::apple_double's checked reader, a malformed one is left as it
//! is, and the conversion runs as the client whose open triggered it, only when that client may
//! write the file's data and extended attributes anyway.

use smb3d_vfs::casefold::eq_ignore_case;
use smb3d_vfs::{
    Access, Disposition, Kind, OpenRequest, Vfs, VfsError, VfsFile, VfsPath, VfsResult,
};

use crate::fs::apple::{self, AFPINFO_STREAM, RESOURCE_STREAM};
use crate::fs::apple_double::{self, MAC_HEADER_MAX, SIDECAR_FORK_AT};
use crate::fs::resource_fork::sidecar_path;
use crate::fs::streams;

/// vfs_fruit's conversion options of a share (re-exported as `smb3d_server::AppleConversion`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Conversion {
    /// `fruit:wipe_intentionally_left_blank_rfork`: macOS's blank resource fork becomes none.
    pub wipe_blank_fork: bool,
    /// `fruit:delete_empty_adfiles`: a `._` file without a resource fork is deleted.
    pub delete_empty: bool,
}

/// The bytes moved at a time when the fork moves to its place in Samba's layout.
const MOVE_CHUNK: usize = 64 * 1024;
/// The most of a `._` file's header read to decide whether it needs converting.
const PROBE: usize = 26 + 16 * 12;

/// Converts the `._` file of the file at `base` (`base_file` when the caller has it open, else
/// opened here for its metadata) if it needs it; `may_write` says whether the client may write
/// the file's data and extended attributes, asked only when there is something to convert.
/// Returns whether it changed anything. A missing, unreadable or malformed `._` file is no
/// error: nothing to convert.
pub(crate) fn convert(
    vfs: &dyn Vfs,
    base: &VfsPath,
    base_file: Option<&dyn VfsFile>,
    how: Conversion,
    may_write: impl FnOnce() -> bool,
) -> VfsResult<bool> {
    let Some(path) = sidecar_path(base) else {
        return Ok(false);
    };
    let sidecar = match vfs.open(&path, &request(Access::Read)) {
        Ok(opened) => opened.file,
        Err(VfsError::NotFound | VfsError::PermissionDenied) => return Ok(false),
        Err(e) => return Err(e),
    };
    // Most `._` files are Samba's or already converted: a look at the header tells.
    let mut probe = [0u8; PROBE];
    let total = usize::try_from(sidecar.stat()?.size).unwrap_or(usize::MAX);
    let n = read_full(sidecar.as_ref(), &mut probe, 0)?;
    let probe = probe.get(..n).unwrap_or_default();
    let (Some(mac_work), Some((fork_offset, fork_len, _))) = (
        apple_double::from_mac_or_embedded(probe, total),
        apple_double::fork_placement(probe, total),
    ) else {
        return Ok(false);
    };
    let blank_candidate = how.wipe_blank_fork && fork_len == BLANK_LEN;
    let empty_candidate = how.delete_empty && fork_len == 0;
    if !mac_work && !blank_candidate && !empty_candidate {
        return Ok(false);
    }
    let head_len = usize::try_from(fork_offset).unwrap_or(usize::MAX);
    if head_len > MAC_HEADER_MAX || !may_write() {
        return Ok(false);
    }
    drop(sidecar);
    let sidecar = match vfs.open(&path, &request(Access::ReadWrite)) {
        Ok(opened) => opened.file,
        Err(VfsError::NotFound | VfsError::PermissionDenied) => return Ok(false),
        Err(e) => return Err(e),
    };
    // Read again through the handle that writes: the file may have changed meanwhile.
    let total = usize::try_from(sidecar.stat()?.size).unwrap_or(usize::MAX);
    let mut head = vec![0u8; head_len.min(total)];
    let n = read_full(sidecar.as_ref(), &mut head, 0)?;
    let Ok(mac) = apple_double::mac_sidecar(head.get(..n).unwrap_or_default(), total) else {
        return Ok(false);
    };
    let opened;
    let base_file = match base_file {
        Some(file) => file,
        None => {
            opened = vfs.open(base, &request(Access::MetadataOnly))?.file;
            opened.as_ref()
        }
    };
    for (name, value) in &mac.xattrs {
        // AFP_AfpInfo and AFP_Resource are the Finder info and the fork, never xattr streams.
        if eq_ignore_case(name, AFPINFO_STREAM) || eq_ignore_case(name, RESOURCE_STREAM) {
            continue;
        }
        let mut stored = Vec::with_capacity(value.len() + 1);
        stored.extend_from_slice(value);
        stored.push(0);
        base_file.set_xattr(&streams::xattr_name(name), &stored)?;
    }
    if mac.from_mac && mac.finder_info.iter().any(|&b| b != 0) {
        apple::store_finder_info(base_file, &mac.finder_info)?;
    }
    let fork_len = if how.wipe_blank_fork && is_blank(sidecar.as_ref(), &mac)? {
        0
    } else {
        mac.fork_len
    };
    let changed = mac.embedded || mac.from_mac || fork_len != mac.fork_len;
    if changed {
        rewrite(sidecar.as_ref(), &mac, fork_len)?;
    }
    if how.delete_empty && fork_len == 0 {
        drop(sidecar);
        match vfs.unlink(&path) {
            Ok(()) | Err(VfsError::NotFound) => return Ok(true),
            Err(e) => return Err(e),
        }
    }
    Ok(changed)
}

/// The length of macOS's blank resource fork.
const BLANK_LEN: u64 = 286;

/// Whether the fork is the one macOS writes for a file without one.
fn is_blank(sidecar: &dyn VfsFile, mac: &apple_double::MacSidecar<'_>) -> VfsResult<bool> {
    if mac.fork_len != BLANK_LEN {
        return Ok(false);
    }
    let mut fork = [0u8; BLANK_LEN as usize];
    let n = read_full(sidecar, &mut fork, mac.fork_offset)?;
    Ok(n == fork.len() && fork == apple_double::blank_resource_fork())
}

/// Rewrites the `._` file in Samba's layout: the fork (its first `fork_len` bytes) moved down
/// to its place after the header, then the header, then the file cut after the fork. The fork
/// only moves towards the start, so a chunk read is never one already overwritten.
fn rewrite(
    sidecar: &dyn VfsFile,
    mac: &apple_double::MacSidecar<'_>,
    fork_len: u64,
) -> VfsResult<()> {
    let to = u64::from(SIDECAR_FORK_AT);
    if fork_len > 0 && mac.fork_offset != to {
        let mut chunk =
            vec![0u8; usize::try_from(fork_len).map_or(MOVE_CHUNK, |l| l.min(MOVE_CHUNK))];
        let mut done = 0u64;
        while done < fork_len {
            let want = usize::try_from(fork_len - done).map_or(chunk.len(), |l| l.min(chunk.len()));
            let buf = chunk.get_mut(..want).unwrap_or_default();
            let n = read_full(sidecar, buf, mac.fork_offset + done)?;
            if n == 0 {
                return Err(VfsError::InvalidArgument);
            }
            if sidecar.write_at(buf.get(..n).unwrap_or_default(), to + done)? != n {
                return Err(VfsError::NoSpace);
            }
            done += n as u64;
        }
    }
    let len = u32::try_from(fork_len).map_err(|_| VfsError::InvalidArgument)?;
    sidecar.write_at(&apple_double::sidecar_header(&mac.finder_info, len), 0)?;
    sidecar.set_len(to + fork_len)
}

/// Reads into `buf` from `offset` until it is full or the file ends; the bytes read.
fn read_full(file: &dyn VfsFile, buf: &mut [u8], offset: u64) -> VfsResult<usize> {
    let mut read = 0;
    while let Some(rest) = buf.get_mut(read..).filter(|r| !r.is_empty()) {
        let n = file.read_at(rest, offset + read as u64)?;
        if n == 0 {
            break;
        }
        read += n;
    }
    Ok(read)
}

fn request(access: Access) -> OpenRequest {
    OpenRequest {
        access,
        disposition: Disposition::Open,
        kind: Kind::File,
        create_mode: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::apple_double::tests::mac_golden;
    use smb3d_vfs::MemoryVfs;

    fn path(p: &str) -> VfsPath {
        VfsPath::parse(p).unwrap()
    }

    fn write(vfs: &MemoryVfs, name: &str, bytes: &[u8]) {
        let req = OpenRequest {
            access: Access::ReadWrite,
            disposition: Disposition::OverwriteOrCreate,
            kind: Kind::File,
            create_mode: 0o644,
        };
        let file = vfs.open(&path(name), &req).unwrap().file;
        file.write_at(bytes, 0).unwrap();
    }

    fn contents(vfs: &MemoryVfs, name: &str) -> Option<Vec<u8>> {
        let file = vfs.open(&path(name), &request(Access::Read)).ok()?.file;
        let mut buf = vec![0u8; file.stat().unwrap().size as usize];
        assert_eq!(read_full(file.as_ref(), &mut buf, 0).unwrap(), buf.len());
        Some(buf)
    }

    fn base(vfs: &MemoryVfs) -> Box<dyn VfsFile> {
        vfs.open(&path("f"), &request(Access::MetadataOnly))
            .unwrap()
            .file
    }

    /// A Mac's `._` file without extended attributes: Finder info "WAVEPTul", `fork`.
    fn mac_plain(fork: &[u8]) -> Vec<u8> {
        let mut v = b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        \x00\x02".to_vec();
        v.extend_from_slice(&[0, 0, 0, 2, 0, 0, 0, 0x52]);
        v.extend_from_slice(&(fork.len() as u32).to_be_bytes());
        v.extend_from_slice(&[0, 0, 0, 9, 0, 0, 0, 0x32, 0, 0, 0, 0x20]);
        v.extend_from_slice(b"WAVEPTul");
        v.resize(0x52, 0);
        v.extend_from_slice(fork);
        v
    }

    fn finder(type_creator: &[u8; 8]) -> [u8; 32] {
        let mut f = [0u8; 32];
        f[..8].copy_from_slice(type_creator);
        f
    }

    #[test]
    fn a_macs_sidecar_becomes_streams_finder_info_and_sambas_layout() {
        let vfs = MemoryVfs::new();
        write(&vfs, "f", b"data");
        write(&vfs, "._f", &mac_golden());
        let file = base(&vfs);
        let how = Conversion::default();
        assert!(convert(&vfs, &path("f"), Some(file.as_ref()), how, || true).unwrap());
        assert_eq!(
            file.get_xattr(&streams::xattr_name("a:b")).unwrap(),
            Some(b"xy\0".to_vec())
        );
        assert_eq!(
            apple::finder_info(file.as_ref()).unwrap(),
            Some(finder(b"TYPECRTR"))
        );
        let mut expected = apple_double::sidecar_header(&finder(b"TYPECRTR"), 2);
        expected.extend_from_slice(b"RF");
        assert_eq!(contents(&vfs, "._f").unwrap(), expected);
        // Converted once: a later Finder info of the client's own is not overwritten.
        apple::store_finder_info(file.as_ref(), &finder(b"OWNOWNOW")).unwrap();
        assert!(!convert(&vfs, &path("f"), None, how, || true).unwrap());
        assert_eq!(
            apple::finder_info(file.as_ref()).unwrap(),
            Some(finder(b"OWNOWNOW"))
        );
    }

    #[test]
    fn only_a_client_who_may_write_converts() {
        let vfs = MemoryVfs::new();
        write(&vfs, "f", b"data");
        write(&vfs, "._f", &mac_golden());
        let mut asked = false;
        let converted = convert(&vfs, &path("f"), None, Conversion::default(), || {
            asked = true;
            false
        });
        assert!(!converted.unwrap() && asked);
        assert_eq!(contents(&vfs, "._f").unwrap(), mac_golden());
        assert_eq!(apple::finder_info(base(&vfs).as_ref()).unwrap(), None);
        // Nothing to convert: not even asked.
        write(&vfs, "._f", &apple_double::new_sidecar());
        let converted = convert(
            &vfs,
            &path("f"),
            None,
            Conversion::default(),
            || unreachable!(),
        );
        assert!(!converted.unwrap());
    }

    #[test]
    fn the_blank_fork_is_wiped_and_the_empty_sidecar_deleted_as_configured() {
        let vfs = MemoryVfs::new();
        write(&vfs, "f", b"data");
        let blank = apple_double::blank_resource_fork();
        // Without the option the fork stays; the Finder info moves all the same.
        write(&vfs, "._f", &mac_plain(&blank));
        assert!(convert(&vfs, &path("f"), None, Conversion::default(), || true).unwrap());
        assert_eq!(contents(&vfs, "._f").unwrap().len(), 0x52 + blank.len());
        assert_eq!(
            apple::finder_info(base(&vfs).as_ref()).unwrap(),
            Some(finder(b"WAVEPTul"))
        );
        let wipe = Conversion {
            wipe_blank_fork: true,
            delete_empty: false,
        };
        assert!(convert(&vfs, &path("f"), None, wipe, || true).unwrap());
        assert_eq!(
            contents(&vfs, "._f").unwrap(),
            apple_double::sidecar_header(&finder(b"WAVEPTul"), 0)
        );
        // A fork that only looks blank by its length stays.
        let mut other = blank;
        other[100] = 1;
        write(&vfs, "._f", &mac_plain(&other));
        convert(&vfs, &path("f"), None, wipe, || true).unwrap();
        assert_eq!(contents(&vfs, "._f").unwrap().len(), 0x52 + other.len());
        let delete = Conversion {
            wipe_blank_fork: true,
            delete_empty: true,
        };
        write(&vfs, "._f", &mac_plain(&blank));
        assert!(convert(&vfs, &path("f"), None, delete, || true).unwrap());
        assert_eq!(contents(&vfs, "._f"), None);
    }

    #[test]
    fn a_malformed_sidecar_is_left_alone() {
        let vfs = MemoryVfs::new();
        write(&vfs, "f", b"data");
        let mut bad = mac_golden();
        bad[0x54] = b'X';
        write(&vfs, "._f", &bad);
        assert!(!convert(&vfs, &path("f"), None, Conversion::default(), || true).unwrap());
        assert_eq!(contents(&vfs, "._f").unwrap(), bad);
        // No `._` file, or none for the root: nothing to do.
        assert!(!convert(&vfs, &path("g"), None, Conversion::default(), || true).unwrap());
        assert!(!convert(&vfs, &VfsPath::root(), None, Conversion::default(), || true).unwrap());
    }

    #[test]
    fn a_large_fork_moves_whole() {
        let vfs = MemoryVfs::new();
        write(&vfs, "f", b"data");
        let fork: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut sidecar = mac_golden();
        sidecar.truncate(0x8C);
        sidecar[0x2E..0x32].copy_from_slice(&(fork.len() as u32).to_be_bytes());
        sidecar.extend_from_slice(&fork);
        write(&vfs, "._f", &sidecar);
        assert!(convert(&vfs, &path("f"), None, Conversion::default(), || true).unwrap());
        let out = contents(&vfs, "._f").unwrap();
        assert_eq!(out.len(), 0x52 + fork.len());
        assert_eq!(&out[0x52..], &fork[..]);
    }
}
