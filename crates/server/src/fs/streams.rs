//! Named data streams (MS-FSCC 2.1.5.3, MS-FSA 2.1.1.4), stored as Samba's streams_xattr
//! stores them: stream `name` of a file is the xattr `user.DosStream.name:$DATA`, holding the
//! stream's bytes followed by one NUL byte. Names are matched ignoring case; the spelling of the
//! stream's creator is kept. A stream is read and written whole, so its size is bounded by what
//! the file system allows in one xattr (64 KiB on most, less on ext4 without `ea_inode`).

use std::sync::Arc;

use parking_lot::RwLock;

use crate::fs::apple;
use crate::fs::resource_fork::ResourceFork;
use smb3d_vfs::backend::copy_by_reading;
use smb3d_vfs::casefold::{FoldedName, eq_ignore_case};
use smb3d_vfs::{DirEntry, FileStat, FileType, Timespec, VfsError, VfsFile, VfsResult};

/// A named stream is the xattr `user.DosStream.<name>:$DATA`, as Samba's streams_xattr keeps it.
pub(crate) const STREAM_XATTR_PREFIX: &str = "user.DosStream.";
const SUFFIX: &str = ":$DATA";
/// Allocation reported for streams: their bytes live in the inode's xattr blocks.
const ALLOCATION_UNIT: u64 = 4096;
/// Largest stream: Linux's limit on one xattr value (XATTR_SIZE_MAX), less the stored NUL.
/// Checked before any buffer is sized, so a write far beyond it allocates nothing.
pub(crate) const MAX_STREAM_SIZE: usize = 64 * 1024 - 1;

/// The xattr holding stream `name`.
pub(crate) fn xattr_name(name: &str) -> String {
    format!("{STREAM_XATTR_PREFIX}{name}{SUFFIX}")
}

/// The stream an xattr holds, if it holds one.
fn stream_of(xattr: &str) -> Option<&str> {
    xattr
        .strip_prefix(STREAM_XATTR_PREFIX)?
        .strip_suffix(SUFFIX)
}

/// The key under which opens of stream `name` meet in the open-file table: equal for every
/// spelling that designates the stream.
pub(crate) fn key(name: &str) -> Arc<str> {
    Arc::from(FoldedName::new(name).as_str())
}

/// The stream of `file` that `name` designates, as stored.
pub(crate) fn find(file: &dyn VfsFile, name: &str) -> VfsResult<Option<String>> {
    Ok(file
        .list_xattr()?
        .iter()
        .filter_map(|x| stream_of(x))
        .find(|s| eq_ignore_case(s, name))
        .map(str::to_owned))
}

/// The file's named streams with their sizes, in xattr order.
pub(crate) fn list(file: &dyn VfsFile) -> VfsResult<Vec<(String, u64)>> {
    let mut streams = Vec::new();
    for xattr in file.list_xattr()? {
        if let Some(name) = stream_of(&xattr)
            && let Some(value) = file.get_xattr(&xattr)?
        {
            streams.push((name.to_owned(), data_len(&value)));
        }
    }
    Ok(streams)
}

/// Removes every named stream (an overwrite of the file replaces them all, MS-FSA 2.1.5.1.2.1).
pub(crate) fn remove_all(file: &dyn VfsFile) -> VfsResult<()> {
    for xattr in file.list_xattr()? {
        if stream_of(&xattr).is_some() {
            match file.remove_xattr(&xattr) {
                Ok(()) | Err(VfsError::NotFound) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// Copies every named stream of `from` to `to`, and its Finder info, replacing those of the
/// same names (a Mac's server-side copy of a whole file takes its streams along).
pub(crate) fn copy_all(from: &dyn VfsFile, to: &dyn VfsFile) -> VfsResult<()> {
    for xattr in from.list_xattr()? {
        if (stream_of(&xattr).is_some() || xattr == apple::METADATA_XATTR)
            && let Some(value) = from.get_xattr(&xattr)?
        {
            to.set_xattr(&xattr, &value)?;
        }
    }
    Ok(())
}

/// Creates stream `name` empty, or empties it.
pub(crate) fn truncate(file: &dyn VfsFile, name: &str) -> VfsResult<()> {
    file.set_xattr(&xattr_name(name), &[0])
}

/// Rounded up to whole allocation units.
pub(crate) fn allocation(size: u64) -> u64 {
    size.div_ceil(ALLOCATION_UNIT) * ALLOCATION_UNIT
}

pub(crate) fn data_len(value: &[u8]) -> u64 {
    value.len().saturating_sub(1) as u64
}

/// An open named stream: its file (opened for metadata only) and its current name.
pub(crate) struct Stream {
    base: Box<dyn VfsFile>,
    name: RwLock<String>,
    backing: Backing,
    /// The resource fork's `._` file, for [`Backing::ResourceFork`].
    fork: Option<ResourceFork>,
}

/// What keeps a stream's bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Backing {
    /// An xattr of its own, as streams_xattr keeps it.
    Xattr,
    /// The AFP_AfpInfo stream of an `apple` share, made from the file's Finder info
    /// (fs::apple).
    AfpInfo,
    /// The resource fork of a file on an `apple` share: in its `._` file (fs::resource_fork);
    /// delete-on-close leaves it in place, as on a Mac (emptying it removes it).
    ResourceFork,
}

impl Stream {
    pub(crate) fn new(base: Box<dyn VfsFile>, name: String) -> Arc<Self> {
        Arc::new(Self {
            base,
            name: RwLock::new(name),
            backing: Backing::Xattr,
            fork: None,
        })
    }

    /// The resource fork `name` of `base` on an `apple` share, kept in `fork`.
    pub(crate) fn resource_fork(
        base: Box<dyn VfsFile>,
        name: String,
        fork: ResourceFork,
    ) -> Arc<Self> {
        Arc::new(Self {
            base,
            name: RwLock::new(name),
            backing: Backing::ResourceFork,
            fork: Some(fork),
        })
    }

    /// The AFP_AfpInfo stream of `base` on an `apple` share.
    pub(crate) fn afp_info(base: Box<dyn VfsFile>) -> Arc<Self> {
        Arc::new(Self {
            base,
            name: RwLock::new(apple::AFPINFO_STREAM.to_owned()),
            backing: Backing::AfpInfo,
            fork: None,
        })
    }

    pub(crate) fn name(&self) -> String {
        self.name.read().clone()
    }

    fn is_afp_info(&self) -> bool {
        self.backing == Backing::AfpInfo
    }

    /// The file the stream belongs to.
    pub(crate) fn base(&self) -> &dyn VfsFile {
        self.base.as_ref()
    }

    fn xattr(&self) -> String {
        xattr_name(&self.name.read())
    }

    /// The stream's bytes, without the stored NUL. A resource fork has no size limit and is
    /// never read whole.
    fn data(&self) -> VfsResult<Vec<u8>> {
        if self.fork.is_some() {
            return Err(VfsError::Unsupported);
        }
        if self.is_afp_info() {
            // Until Finder info is written, the open reads an AfpInfo showing none, as on a Mac.
            let finder = apple::finder_info(self.base.as_ref())?.unwrap_or_default();
            return Ok(apple::afp_info(&finder).to_vec());
        }
        let mut value = self
            .base
            .get_xattr(&self.xattr())?
            .ok_or(VfsError::NotFound)?;
        value.pop();
        Ok(value)
    }

    fn store(&self, mut data: Vec<u8>) -> VfsResult<()> {
        data.push(0);
        self.base.set_xattr(&self.xattr(), &data)
    }

    /// The last close of a delete-pending stream: deletes it, but for a Mac's resource fork,
    /// which stays as on a Mac (emptying it removes it).
    pub(crate) fn delete_on_close(&self) -> VfsResult<()> {
        match self.backing {
            Backing::ResourceFork => Ok(()),
            Backing::Xattr | Backing::AfpInfo => self.remove(),
        }
    }

    /// Deletes the stream.
    pub(crate) fn remove(&self) -> VfsResult<()> {
        if let Some(fork) = &self.fork {
            return fork.set_len(0);
        }
        if self.is_afp_info() {
            return apple::store_finder_info(self.base.as_ref(), &Default::default());
        }
        self.base.remove_xattr(&self.xattr())
    }

    /// Renames the stream to `to`, which may differ only in case; another stream of that name
    /// is replaced.
    pub(crate) fn rename(&self, to: &str) -> VfsResult<()> {
        let mut name = self.name.write();
        if *name == to {
            return Ok(());
        }
        if self.backing != Backing::Xattr {
            return Err(VfsError::Unsupported);
        }
        let from = xattr_name(&name);
        let value = self.base.get_xattr(&from)?.ok_or(VfsError::NotFound)?;
        if !eq_ignore_case(&name, to)
            && let Some(existing) = find(self.base.as_ref(), to)?
        {
            self.base.remove_xattr(&xattr_name(&existing))?;
        }
        self.base.set_xattr(&xattr_name(to), &value)?;
        self.base.remove_xattr(&from)?;
        *name = to.to_owned();
        Ok(())
    }

    /// Moves the stream's bytes into the file's default stream (`data`, the file opened for
    /// writing) and deletes the stream.
    pub(crate) fn rename_to_default(&self, data: &dyn VfsFile) -> VfsResult<()> {
        let bytes = self.data()?;
        data.set_len(0)?;
        data.write_at(&bytes, 0)?;
        self.remove()
    }
}

/// An open stream as a [`VfsFile`]: data calls work on the stream, metadata calls (times,
/// attributes, EAs, the security descriptor) on the file it belongs to, as on NTFS.
pub(crate) struct StreamFile(pub(crate) Arc<Stream>);

impl VfsFile for StreamFile {
    fn stat(&self) -> VfsResult<FileStat> {
        let mut stat = self.0.base.stat()?;
        let size = if let Some(fork) = &self.0.fork {
            fork.len()?
        } else if self.0.is_afp_info() {
            apple::AFPINFO_LEN as u64
        } else {
            data_len(
                &self
                    .0
                    .base
                    .get_xattr(&self.0.xattr())?
                    .ok_or(VfsError::NotFound)?,
            )
        };
        stat.file_type = FileType::File;
        stat.size = size;
        stat.allocated = allocation(size);
        Ok(stat)
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> VfsResult<usize> {
        if let Some(fork) = &self.0.fork {
            return fork.read_at(buf, offset);
        }
        // A Mac reads an AfpInfo from its start at any offset up to one past its end (Samba
        // found the same), and nothing beyond.
        let offset = match self.0.is_afp_info() {
            true if offset > apple::AFPINFO_LEN as u64 => return Ok(0),
            true => 0,
            false => offset,
        };
        let data = self.0.data()?;
        let Ok(start) = usize::try_from(offset) else {
            return Ok(0);
        };
        let Some(available) = data.get(start..) else {
            return Ok(0);
        };
        let n = available.len().min(buf.len());
        if let (Some(to), Some(from)) = (buf.get_mut(..n), available.get(..n)) {
            to.copy_from_slice(from);
        }
        Ok(n)
    }

    fn write_at(&self, bytes: &[u8], offset: u64) -> VfsResult<usize> {
        if let Some(fork) = &self.0.fork {
            return fork.write_at(bytes, offset);
        }
        if self.0.is_afp_info() {
            if let Some(finder) = apple::afpinfo_written(offset, bytes)? {
                apple::store_finder_info(self.0.base(), &finder)?;
            }
            return Ok(bytes.len());
        }
        let end = offset
            .checked_add(bytes.len() as u64)
            .and_then(|end| usize::try_from(end).ok())
            .filter(|&end| end <= MAX_STREAM_SIZE)
            .ok_or(VfsError::NoSpace)?;
        let start = end - bytes.len();
        let mut data = self.0.data()?;
        if data.len() < end {
            data.resize(end, 0);
        }
        data.get_mut(start..end)
            .ok_or(VfsError::NoSpace)?
            .copy_from_slice(bytes);
        self.0.store(data)?;
        Ok(bytes.len())
    }

    fn set_len(&self, len: u64) -> VfsResult<()> {
        if let Some(fork) = &self.0.fork {
            return fork.set_len(len);
        }
        if self.0.is_afp_info() {
            // A Mac refuses to grow an AfpInfo and ignores truncating it.
            return match len > apple::AFPINFO_LEN as u64 {
                true => Err(VfsError::FixedSize),
                false => Ok(()),
            };
        }
        let len = usize::try_from(len)
            .ok()
            .filter(|&len| len <= MAX_STREAM_SIZE)
            .ok_or(VfsError::NoSpace)?;
        let mut data = self.0.data()?;
        data.resize(len, 0);
        self.0.store(data)
    }

    fn allocate(&self, _offset: u64, _len: u64) -> VfsResult<()> {
        // The xattr's storage is the file system's to manage; nothing to reserve.
        Ok(())
    }

    fn preallocate(&self, _offset: u64, _len: u64) -> VfsResult<()> {
        Ok(())
    }

    fn sync(&self) -> VfsResult<()> {
        // xattr writes complete synchronously in the file system's journal.
        Ok(())
    }

    fn set_times(&self, atime: Option<Timespec>, mtime: Option<Timespec>) -> VfsResult<()> {
        self.0.base.set_times(atime, mtime)
    }

    // Ownership and permissions are the file's, which its streams share.
    fn set_owner(&self, uid: Option<u32>, gid: Option<u32>) -> VfsResult<()> {
        self.0.base.set_owner(uid, gid)
    }

    fn set_mode(&self, mode: u32) -> VfsResult<()> {
        self.0.base.set_mode(mode)
    }

    fn read_dir(&self) -> VfsResult<Vec<DirEntry>> {
        Err(VfsError::NotADirectory)
    }

    fn stat_child(&self, _name: &str) -> VfsResult<FileStat> {
        Err(VfsError::NotADirectory)
    }

    fn lookup_child(&self, _name: &str) -> VfsResult<Option<(String, FileStat)>> {
        Err(VfsError::NotADirectory)
    }

    fn get_xattr(&self, name: &str) -> VfsResult<Option<Vec<u8>>> {
        self.0.base.get_xattr(name)
    }

    fn get_child_xattr(&self, _name: &str, _xattr: &str) -> VfsResult<Option<Vec<u8>>> {
        Err(VfsError::NotADirectory)
    }

    fn list_child_xattr(&self, _name: &str) -> VfsResult<Vec<String>> {
        Err(VfsError::NotADirectory)
    }

    fn set_xattr(&self, name: &str, value: &[u8]) -> VfsResult<()> {
        self.0.base.set_xattr(name, value)
    }

    fn remove_xattr(&self, name: &str) -> VfsResult<()> {
        self.0.base.remove_xattr(name)
    }

    fn list_xattr(&self) -> VfsResult<Vec<String>> {
        self.0.base.list_xattr()
    }

    fn copy_range(
        &self,
        src: &dyn VfsFile,
        src_offset: u64,
        offset: u64,
        len: u64,
    ) -> VfsResult<u64> {
        copy_by_reading(self, src, src_offset, offset, len)
    }

    /// A stream's bytes live in an xattr, which shares no extents.
    fn clone_range(
        &self,
        _src: &dyn VfsFile,
        _src_offset: u64,
        _offset: u64,
        _len: u64,
    ) -> VfsResult<()> {
        Err(VfsError::Unsupported)
    }

    /// An xattr has no holes: the range reads as zeros afterwards, as a punched one would.
    fn punch_hole(&self, offset: u64, len: u64) -> VfsResult<()> {
        if self.0.backing != Backing::Xattr {
            return Err(VfsError::Unsupported);
        }
        let mut data = self.0.data()?;
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(data.len());
        let end = usize::try_from(offset.saturating_add(len))
            .unwrap_or(usize::MAX)
            .min(data.len());
        if let Some(range) = data.get_mut(start..end)
            && !range.is_empty()
        {
            range.fill(0);
            self.0.store(data)?;
        }
        Ok(())
    }

    fn allocated_ranges(&self, offset: u64, len: u64, limit: usize) -> VfsResult<Vec<(u64, u64)>> {
        let end = offset.saturating_add(len).min(self.stat()?.size);
        Ok(if offset < end && limit > 0 {
            vec![(offset, end - offset)]
        } else {
            Vec::new()
        })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smb3d_vfs::{Access, Disposition, Kind, MemoryVfs, OpenRequest, Vfs, VfsPath};

    fn file() -> Box<dyn VfsFile> {
        let vfs = MemoryVfs::new();
        let request = OpenRequest {
            access: Access::MetadataOnly,
            disposition: Disposition::Create,
            kind: Kind::File,
            create_mode: 0o644,
        };
        vfs.open(&VfsPath::parse("f").unwrap(), &request)
            .unwrap()
            .file
    }

    #[test]
    fn stored_as_samba_with_a_trailing_nul() {
        let base = file();
        truncate(base.as_ref(), "Stream One").unwrap();
        assert_eq!(
            base.get_xattr("user.DosStream.Stream One:$DATA").unwrap(),
            Some(vec![0])
        );
        let stream = StreamFile(Stream::new(base, "Stream One".into()));
        stream.write_at(b"test data", 0).unwrap();
        stream.write_at(b"MORE", 5).unwrap();
        assert_eq!(
            stream.get_xattr("user.DosStream.Stream One:$DATA").unwrap(),
            Some(b"test MORE\0".to_vec())
        );
        assert_eq!(stream.stat().unwrap().size, 9);
        let mut buf = [0u8; 16];
        assert_eq!(stream.read_at(&mut buf, 5).unwrap(), 4);
        assert_eq!(&buf[..4], b"MORE");
        assert_eq!(stream.read_at(&mut buf, 100).unwrap(), 0);
        stream.set_len(2).unwrap();
        assert_eq!(stream.stat().unwrap().size, 2);
    }

    #[test]
    fn names_match_ignoring_case_and_are_listed_with_sizes() {
        let base = file();
        truncate(base.as_ref(), "Second Stream").unwrap();
        base.set_xattr("user.other", b"x").unwrap();
        assert_eq!(
            find(base.as_ref(), "SECOND stream").unwrap().as_deref(),
            Some("Second Stream")
        );
        assert_eq!(find(base.as_ref(), "other").unwrap(), None);
        assert_eq!(list(base.as_ref()).unwrap(), [("Second Stream".into(), 0)]);
        assert_eq!(key("Second Stream"), key("SECOND STREAM"));
        remove_all(base.as_ref()).unwrap();
        assert!(list(base.as_ref()).unwrap().is_empty());
        assert_eq!(base.get_xattr("user.other").unwrap(), Some(b"x".to_vec()));
    }

    #[test]
    fn renames_replace_and_keep_data() {
        let base = file();
        truncate(base.as_ref(), "a").unwrap();
        truncate(base.as_ref(), "b").unwrap();
        let stream = Stream::new(base, "a".into());
        StreamFile(stream.clone()).write_at(b"data", 0).unwrap();
        stream.rename("a").unwrap();
        stream.rename("A").unwrap();
        stream.rename("B").unwrap();
        assert_eq!(stream.name(), "B");
        assert_eq!(list(stream.base()).unwrap(), [("B".into(), 4)]);
    }

    #[test]
    fn writes_beyond_the_xattr_limit_allocate_nothing() {
        let stream = StreamFile(Stream::new(file(), "s".into()));
        truncate(stream.0.base(), "s").unwrap();
        assert_eq!(
            stream.write_at(b"x", u64::MAX - 1).err(),
            Some(VfsError::NoSpace)
        );
        assert_eq!(
            stream.write_at(b"x", MAX_STREAM_SIZE as u64).err(),
            Some(VfsError::NoSpace)
        );
        assert_eq!(stream.set_len(1 << 40).err(), Some(VfsError::NoSpace));
    }
}
