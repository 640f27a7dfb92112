//! The state store of the server: the trait, the in-memory back end and the conformance suite
//! are `smb3d-state`'s (below the server, so that the etcd back end of `smb3d-cluster` needs
//! no protocol core); [`DiskStore`], which keeps each record in a file of its own (today's
//! format and speed), is here, where the service's credentials are.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub use smb3d_state::{
    MAX_RECORD, MemoryStore, RecordGuard, RecordLocks, StateStore, Table, check_size,
};

/// The name endings of persistent-open records and of records being written.
const RECORD_SUFFIX: &str = ".open";
const TEMP_SUFFIX: &str = ".tmp";

/// Records in files of a directory (the server's `state_dir`), one file per record named by
/// its id in 16 hex digits: `0000000000001234.open` for persistent open 0x1234. A record is
/// written to a temporary name, synced, renamed over the old one, and the directory synced.
/// The directory is the service's: the store works as the service, whatever user's work the
/// thread did last.
#[derive(Debug)]
pub struct DiskStore {
    dir: PathBuf,
    locks: RecordLocks,
}

impl DiskStore {
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            locks: RecordLocks::default(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn record_path(&self, held: &RecordGuard<'_>, suffix: &str) -> PathBuf {
        match held.table() {
            Table::PersistentOpens => self.dir.join(format!("{:016x}{suffix}", held.id())),
        }
    }

    fn write(&self, held: &RecordGuard<'_>, bytes: &[u8]) -> io::Result<()> {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        let temp = self.record_path(held, TEMP_SUFFIX);
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temp)?;
        let written = file
            .write_all(bytes)
            .and_then(|()| file.sync_all())
            .and_then(|()| fs::rename(&temp, self.record_path(held, RECORD_SUFFIX)));
        if let Err(e) = written {
            // A full disk must not keep half a record until the next start cleans it up.
            let _ = fs::remove_file(&temp);
            return Err(e);
        }
        self.sync_dir()
    }

    fn unlink(&self, held: &RecordGuard<'_>) -> io::Result<()> {
        match fs::remove_file(self.record_path(held, RECORD_SUFFIX)) {
            Ok(()) => self.sync_dir(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn sync_dir(&self) -> io::Result<()> {
        File::open(&self.dir)?.sync_all()
    }

    /// Files that are not records are left alone; a write the server did not finish (its
    /// temporary file) is removed, the record it was replacing still stands; a record too
    /// large or unreadable is logged and removed.
    fn read_all(&self) -> io::Result<Vec<(u64, Vec<u8>)>> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut records = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.ends_with(TEMP_SUFFIX) {
                let _ = fs::remove_file(&path);
                continue;
            }
            let Some(id) = name
                .strip_suffix(RECORD_SUFFIX)
                .filter(|hex| hex.len() == 16)
                .and_then(|hex| u64::from_str_radix(hex, 16).ok())
            else {
                continue;
            };
            match read_record(&path) {
                Ok(bytes) => records.push((id, bytes)),
                Err(why) => {
                    tracing::warn!(record = %path.display(), "state record dropped: {why}");
                    let _ = fs::remove_file(&path);
                }
            }
        }
        records.sort_by_key(|(id, _)| *id);
        Ok(records)
    }
}

fn read_record(path: &Path) -> io::Result<Vec<u8>> {
    let file = File::open(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_RECORD as u64 + 1).read_to_end(&mut bytes)?;
    check_size(&bytes)?;
    Ok(bytes)
}

impl StateStore for DiskStore {
    fn lock(&self, table: Table, id: u64) -> RecordGuard<'_> {
        self.locks.lock(table, id)
    }

    fn put(&self, held: &RecordGuard<'_>, bytes: &[u8]) -> io::Result<()> {
        held.check(&self.locks)?;
        check_size(bytes)?;
        smb3d_credentials::as_service(|| self.write(held, bytes))
    }

    fn remove(&self, held: &RecordGuard<'_>) -> io::Result<()> {
        held.check(&self.locks)?;
        smb3d_credentials::as_service(|| self.unlink(held))
    }

    fn load(&self, table: Table) -> io::Result<Vec<(u64, Vec<u8>)>> {
        match table {
            Table::PersistentOpens => smb3d_credentials::as_service(|| self.read_all()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    mod disk {
        use super::*;

        /// A fresh directory for each case; the store creates it at its first write.
        fn store() -> Arc<dyn StateStore> {
            use std::sync::atomic::{AtomicU32, Ordering};
            static NEXT: AtomicU32 = AtomicU32::new(0);
            let dir = std::env::temp_dir().join(format!(
                "smb3d-store-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = fs::remove_dir_all(&dir);
            Arc::new(DiskStore::new(dir.join("state")))
        }

        smb3d_state::store_conformance_tests!(store);
    }

    /// Records written by earlier versions (the same names and bytes) still load; unfinished
    /// writes and damaged files go, other files stay.
    #[test]
    fn the_disk_store_reads_the_files_of_earlier_versions_and_drops_the_rest() {
        let dir = std::env::temp_dir().join(format!("smb3d-store-files-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let store = DiskStore::new(dir.clone());
        store
            .put(&store.lock(Table::PersistentOpens, 0x1234), b"record")
            .unwrap();
        assert_eq!(
            fs::read(dir.join("0000000000001234.open")).unwrap(),
            b"record"
        );
        fs::write(dir.join("00000000000000aa.open"), b"older").unwrap();
        fs::write(dir.join("00000000000000bb.tmp"), b"half").unwrap();
        fs::write(dir.join("README"), b"not a record").unwrap();
        fs::write(dir.join("cc.open"), b"not a record's name").unwrap();
        let huge = File::create(dir.join("00000000000000dd.open")).unwrap();
        huge.set_len(MAX_RECORD as u64 + 1).unwrap();
        assert_eq!(
            store.load(Table::PersistentOpens).unwrap(),
            vec![(0xaa, b"older".to_vec()), (0x1234, b"record".to_vec())]
        );
        let mut names: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "00000000000000aa.open",
                "0000000000001234.open",
                "README",
                "cc.open"
            ]
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
