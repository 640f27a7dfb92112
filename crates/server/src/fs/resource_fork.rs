//! A file's resource fork on an `apple` share, kept where Samba's vfs_fruit keeps it by default
//! (`fruit:resource = file`) and where macOS writes it on shares without streams: in the
//! AppleDouble file `._NAME` beside the file, the fork its last entry. Samba, a Mac and smb3d
//! thus share forks of any size (an xattr holds at most 4 KiB on ext4). A `._` file can be
//! written by anyone through another share or on the host, so its header is checked
//! (fs::apple_double) on every use: a malformed one is no fork, and is never written over.

use parking_lot::Mutex;
use smb3d_vfs::{
    Access, Disposition, Kind, OpenRequest, Vfs, VfsError, VfsFile, VfsPath, VfsResult,
};

use crate::fs::apple_double;

/// What names a `._` AppleDouble file: the prefix to the name of the file it belongs to.
pub const SIDECAR_PREFIX: &str = "._";
/// The most of a `._` file's header read: room for 16 entries (Samba and macOS write 2).
const HEADER_READ: usize = 26 + 16 * 12;

/// The `._` file of the file at `base`; `None` for the share's root.
pub(crate) fn sidecar_path(base: &VfsPath) -> Option<VfsPath> {
    let (parent, name) = base.parent_and_name()?;
    parent.join(&format!("{SIDECAR_PREFIX}{name}")).ok()
}

/// The resource fork of one file, through its `._` file (opened when it exists, created when
/// an open that may write the fork needs it).
pub(crate) struct ResourceFork {
    sidecar: Mutex<Option<Box<dyn VfsFile>>>,
}

/// Where the fork lies in a `._` file (fs::apple_double::fork_placement).
struct Placement {
    offset: u64,
    len: u64,
    len_field: u64,
}

fn placement(file: &dyn VfsFile) -> VfsResult<Option<Placement>> {
    let total = usize::try_from(file.stat()?.size).unwrap_or(usize::MAX);
    let mut head = [0u8; HEADER_READ];
    let mut read = 0;
    while read < head.len() {
        let n = file.read_at(head.get_mut(read..).unwrap_or_default(), read as u64)?;
        if n == 0 {
            break;
        }
        read += n;
    }
    let head = head.get(..read).unwrap_or_default();
    Ok(
        apple_double::fork_placement(head, total).map(|(offset, len, len_field)| Placement {
            offset,
            len,
            len_field,
        }),
    )
}

impl ResourceFork {
    /// The fork of the file at `base`, its `._` file opened if there is one: for reading and
    /// writing when `writable`, else for reading.
    pub(crate) fn open(vfs: &dyn Vfs, base: &VfsPath, writable: bool) -> VfsResult<Self> {
        let path = sidecar_path(base).ok_or(VfsError::InvalidArgument)?;
        let access = if writable {
            Access::ReadWrite
        } else {
            Access::Read
        };
        let sidecar = match vfs.open(&path, &request(access, Disposition::Open, 0)) {
            Ok(opened) => Some(opened.file),
            Err(VfsError::NotFound) => None,
            Err(e) => return Err(e),
        };
        Ok(Self {
            sidecar: Mutex::new(sidecar),
        })
    }

    /// Creates the `._` file of `base` (with `mode`) unless it is open already; for an open
    /// that may write the fork, made while the request runs as its user so that the user owns
    /// it, as the file.
    pub(crate) fn ensure_sidecar(&self, vfs: &dyn Vfs, base: &VfsPath, mode: u32) -> VfsResult<()> {
        let mut sidecar = self.sidecar.lock();
        if sidecar.is_some() {
            return Ok(());
        }
        let path = sidecar_path(base).ok_or(VfsError::InvalidArgument)?;
        let opened = vfs.open(
            &path,
            &request(Access::ReadWrite, Disposition::OpenOrCreate, mode),
        )?;
        if opened.file.stat()?.size == 0 {
            opened.file.write_at(&apple_double::new_sidecar(), 0)?;
        }
        *sidecar = Some(opened.file);
        Ok(())
    }

    /// The fork's length; 0 without a `._` file or with a malformed one.
    pub(crate) fn len(&self) -> VfsResult<u64> {
        match self.sidecar.lock().as_deref() {
            Some(file) => Ok(placement(file)?.map_or(0, |p| p.len)),
            None => Ok(0),
        }
    }

    pub(crate) fn read_at(&self, buf: &mut [u8], offset: u64) -> VfsResult<usize> {
        let sidecar = self.sidecar.lock();
        let Some(file) = sidecar.as_deref() else {
            return Ok(0);
        };
        let Some(p) = placement(file)? else {
            return Ok(0);
        };
        let left = p.len.saturating_sub(offset);
        let n = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        match buf.get_mut(..n) {
            Some(to) if n > 0 => file.read_at(to, p.offset + offset),
            _ => Ok(0),
        }
    }

    pub(crate) fn write_at(&self, data: &[u8], offset: u64) -> VfsResult<usize> {
        let sidecar = self.sidecar.lock();
        let (file, p) = writable(sidecar.as_deref())?;
        offset
            .checked_add(data.len() as u64)
            .filter(|&end| fits(&p, end))
            .ok_or(VfsError::NoSpace)?;
        let n = file.write_at(data, p.offset + offset)?;
        let written_end = offset + n as u64;
        if written_end > p.len {
            store_len(file, &p, written_end)?;
        }
        Ok(n)
    }

    /// Sets the fork's length; emptying a fork that has no `._` file does nothing.
    pub(crate) fn set_len(&self, len: u64) -> VfsResult<()> {
        let sidecar = self.sidecar.lock();
        if len == 0 && sidecar.is_none() {
            return Ok(());
        }
        let (file, p) = writable(sidecar.as_deref())?;
        if !fits(&p, len) {
            return Err(VfsError::NoSpace);
        }
        file.set_len(p.offset + len)?;
        store_len(file, &p, len)
    }
}

/// The `._` file and its fork's placement, for a change: no `._` file (the open could not
/// write) is a denied write, a malformed one is kept as it is.
fn writable(sidecar: Option<&dyn VfsFile>) -> VfsResult<(&dyn VfsFile, Placement)> {
    let file = sidecar.ok_or(VfsError::PermissionDenied)?;
    let p = placement(file)?.ok_or(VfsError::InvalidArgument)?;
    Ok((file, p))
}

/// Whether a fork of `len` bytes fits the header's 32-bit length.
fn fits(p: &Placement, len: u64) -> bool {
    len <= u64::from(u32::MAX) && p.offset + len <= u64::from(u32::MAX)
}

fn store_len(file: &dyn VfsFile, p: &Placement, len: u64) -> VfsResult<()> {
    let len = u32::try_from(len).map_err(|_| VfsError::NoSpace)?;
    file.write_at(&len.to_be_bytes(), p.len_field)?;
    Ok(())
}

fn request(access: Access, disposition: Disposition, create_mode: u32) -> OpenRequest {
    OpenRequest {
        access,
        disposition,
        kind: Kind::File,
        create_mode,
    }
}

/// Moves the `._` file of the file renamed from `from` along with it to `to`; without one, a
/// `._` file left at `to` by a file the rename replaced goes, as that file's fork.
pub(crate) fn follow_rename(vfs: &dyn Vfs, from: &VfsPath, to: &VfsPath) -> VfsResult<()> {
    let (Some(from), Some(to)) = (sidecar_path(from), sidecar_path(to)) else {
        return Ok(());
    };
    match vfs.rename(&from, &to, true) {
        Err(VfsError::NotFound) => match vfs.unlink(&to) {
            Err(VfsError::NotFound) => Ok(()),
            other => other,
        },
        other => other,
    }
}

/// Copies the `._` file of `from` (on `from_vfs`) to be that of `to` (on `to_vfs`), for a
/// Mac's copyfile; a source without one has no fork to copy.
pub(crate) fn copy(
    from_vfs: &dyn Vfs,
    from: &VfsPath,
    to_vfs: &dyn Vfs,
    to: &VfsPath,
) -> VfsResult<()> {
    let (Some(from), Some(to)) = (sidecar_path(from), sidecar_path(to)) else {
        return Ok(());
    };
    let source = match from_vfs.open(&from, &request(Access::Read, Disposition::Open, 0)) {
        Ok(opened) => opened.file,
        Err(VfsError::NotFound) => return Ok(()),
        Err(e) => return Err(e),
    };
    let create = request(Access::ReadWrite, Disposition::OverwriteOrCreate, 0o644);
    let target = to_vfs.open(&to, &create)?.file;
    let len = source.stat()?.size;
    let mut done = 0;
    while done < len {
        let n = target.copy_range(source.as_ref(), done, done, len - done)?;
        if n == 0 {
            return Err(VfsError::NoSpace);
        }
        done += n;
    }
    Ok(())
}

/// Deletes the `._` file of the deleted file `base`, if any.
pub(crate) fn follow_delete(vfs: &dyn Vfs, base: &VfsPath) -> VfsResult<()> {
    let Some(path) = sidecar_path(base) else {
        return Ok(());
    };
    match vfs.unlink(&path) {
        Err(VfsError::NotFound) => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smb3d_vfs::MemoryVfs;

    fn path(p: &str) -> VfsPath {
        VfsPath::parse(p).unwrap()
    }

    fn vfs_with(name: &str, bytes: &[u8]) -> MemoryVfs {
        let vfs = MemoryVfs::new();
        let req = request(Access::ReadWrite, Disposition::Create, 0o644);
        vfs.open(&path(name), &req)
            .unwrap()
            .file
            .write_at(bytes, 0)
            .unwrap();
        vfs
    }

    fn contents(vfs: &MemoryVfs, name: &str) -> Vec<u8> {
        let file = vfs
            .open(&path(name), &request(Access::Read, Disposition::Open, 0))
            .unwrap()
            .file;
        let mut buf = vec![0u8; file.stat().unwrap().size as usize];
        assert_eq!(file.read_at(&mut buf, 0).unwrap(), buf.len());
        buf
    }

    /// The `._` file Samba 4.17 (`vfs objects = catia fruit streams_xattr`, its defaults) wrote
    /// for a 4,352-byte resource fork: the header and Finder info, then the fork at 0x52.
    fn samba_sidecar(fork: &[u8]) -> Vec<u8> {
        let mut v = b"\x00\x05\x16\x07\x00\x02\x00\x00Netatalk        \x00\x02".to_vec();
        v.extend_from_slice(b"\x00\x00\x00\x02\x00\x00\x00\x52");
        v.extend_from_slice(&(fork.len() as u32).to_be_bytes());
        v.extend_from_slice(b"\x00\x00\x00\x09\x00\x00\x00\x32\x00\x00\x00\x20");
        v.resize(0x52, 0);
        v.extend_from_slice(fork);
        v
    }

    fn fork_bytes() -> Vec<u8> {
        (0..4352u32).map(|i| (i * 7) as u8).collect()
    }

    #[test]
    fn reads_the_fork_samba_wrote() {
        let vfs = vfs_with("._f", &samba_sidecar(&fork_bytes()));
        let fork = ResourceFork::open(&vfs, &path("f"), false).unwrap();
        assert_eq!(fork.len().unwrap(), 4352);
        let mut buf = vec![0u8; 5000];
        assert_eq!(fork.read_at(&mut buf, 0).unwrap(), 4352);
        assert_eq!(&buf[..4352], fork_bytes());
        assert_eq!(fork.read_at(&mut buf, 4350).unwrap(), 2);
        assert_eq!(fork.read_at(&mut buf, u64::MAX).unwrap(), 0);
    }

    #[test]
    fn a_new_sidecar_is_sambas_and_grows_as_written() {
        let vfs = MemoryVfs::new();
        let fork = ResourceFork::open(&vfs, &path("f"), true).unwrap();
        assert_eq!(fork.len().unwrap(), 0);
        fork.ensure_sidecar(&vfs, &path("f"), 0o644).unwrap();
        assert_eq!(contents(&vfs, "._f"), samba_sidecar(b""));
        let data = fork_bytes();
        fork.write_at(&data[..100], 0).unwrap();
        fork.write_at(&data[100..], 100).unwrap();
        assert_eq!(contents(&vfs, "._f"), samba_sidecar(&data));
        fork.set_len(10).unwrap();
        assert_eq!(contents(&vfs, "._f"), samba_sidecar(&data[..10]));
        fork.set_len(0).unwrap();
        assert_eq!(fork.len().unwrap(), 0);
    }

    #[test]
    fn without_a_sidecar_there_is_no_fork_and_nothing_to_write() {
        let vfs = MemoryVfs::new();
        let fork = ResourceFork::open(&vfs, &path("f"), true).unwrap();
        assert_eq!(fork.len().unwrap(), 0);
        assert_eq!(fork.read_at(&mut [0u8; 4], 0).unwrap(), 0);
        fork.set_len(0).unwrap();
        assert_eq!(fork.write_at(b"x", 0), Err(VfsError::PermissionDenied));
    }

    #[test]
    fn hostile_sidecars_are_no_fork_and_stay_as_they_are() {
        let good = samba_sidecar(b"abcd");
        let mut huge_count = good.clone();
        huge_count[24..26].copy_from_slice(&[0xFF, 0xFF]);
        let mut past_end = good.clone();
        past_end[34..38].copy_from_slice(&0x1000u32.to_be_bytes());
        let mut wraps = good.clone();
        wraps[30..38].copy_from_slice(&[0xFF; 8]);
        // The Finder info moved after the fork: the fork could not grow without overwriting it.
        let mut not_last = good.clone();
        not_last[26 + 12 + 4..26 + 12 + 8].copy_from_slice(&0x56u32.to_be_bytes());
        not_last[34..38].copy_from_slice(&0u32.to_be_bytes());
        not_last.resize(0x52 + 0x24, 0);
        let mut overlapping = good.clone();
        overlapping[26 + 12 + 4..26 + 12 + 8].copy_from_slice(&0x50u32.to_be_bytes());
        for (what, bytes) in [
            ("count", huge_count),
            ("past end", past_end),
            ("wraps", wraps),
            ("not last", not_last),
            ("overlapping", overlapping),
            ("truncated", good[..40].to_vec()),
            ("empty", Vec::new()),
        ] {
            let vfs = vfs_with("._f", &bytes);
            let fork = ResourceFork::open(&vfs, &path("f"), true).unwrap();
            assert_eq!(fork.len().unwrap(), 0, "{what}");
            assert_eq!(fork.read_at(&mut [0u8; 8], 0).unwrap(), 0, "{what}");
            assert!(fork.write_at(b"xyz", 0).is_err(), "{what}");
            assert!(fork.set_len(2).is_err(), "{what}");
            assert_eq!(contents(&vfs, "._f"), bytes, "{what}");
        }
    }

    #[test]
    fn a_fork_past_four_gib_is_refused() {
        let vfs = vfs_with("._f", &samba_sidecar(b""));
        let fork = ResourceFork::open(&vfs, &path("f"), true).unwrap();
        assert_eq!(
            fork.write_at(b"x", u64::from(u32::MAX)),
            Err(VfsError::NoSpace)
        );
        assert_eq!(fork.write_at(b"x", u64::MAX), Err(VfsError::NoSpace));
        assert_eq!(fork.set_len(1 << 40), Err(VfsError::NoSpace));
        assert_eq!(contents(&vfs, "._f"), samba_sidecar(b""));
    }

    #[test]
    fn the_sidecar_follows_renames_copies_and_deletes() {
        let vfs = vfs_with("._a", &samba_sidecar(b"fork of a"));
        let req = request(Access::ReadWrite, Disposition::Create, 0o644);
        vfs.open(&path("._b"), &req).unwrap();
        follow_rename(&vfs, &path("a"), &path("b")).unwrap();
        assert_eq!(contents(&vfs, "._b"), samba_sidecar(b"fork of a"));
        assert_eq!(vfs.stat(&path("._a")).err(), Some(VfsError::NotFound));
        // A file without a fork replacing one with a fork: that fork goes.
        follow_rename(&vfs, &path("c"), &path("b")).unwrap();
        assert_eq!(vfs.stat(&path("._b")).err(), Some(VfsError::NotFound));
        copy(&vfs, &path("b"), &vfs, &path("d")).unwrap();
        assert_eq!(vfs.stat(&path("._d")).err(), Some(VfsError::NotFound));
        let vfs = vfs_with("._a", &samba_sidecar(b"fork of a"));
        copy(&vfs, &path("a"), &vfs, &path("e")).unwrap();
        assert_eq!(contents(&vfs, "._e"), samba_sidecar(b"fork of a"));
        follow_delete(&vfs, &path("a")).unwrap();
        follow_delete(&vfs, &path("a")).unwrap();
        assert_eq!(vfs.stat(&path("._a")).err(), Some(VfsError::NotFound));
    }
}
