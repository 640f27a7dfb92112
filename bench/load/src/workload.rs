//! The workloads: the data each needs on the share (made once, untimed), what each connection
//! opens before the clock starts, and one operation of each.

use std::sync::Arc;

use smb3d_client::{Connection, Error, OpenSpec, Result, Tree};
use smb3d_smb2::FileId;
use smb3d_smb2::query_directory::QueryDirectoryFlags;
use smb3d_smb2::query_info::InfoType;
use tokio::task::JoinSet;

use crate::nbench;

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;
/// FileIdBothDirectoryInformation (MS-FSCC 2.4.17), what Windows lists directories with.
const ID_BOTH_DIRECTORY_INFORMATION: u8 = 37;
/// FileNetworkOpenInformation (MS-FSCC 2.4.29): a "stat" in one request.
const NETWORK_OPEN_INFORMATION: u8 = 34;
/// Writes in flight while the setup fills a file.
const SETUP_DEPTH: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// ECHO.
    #[value(name = "echo")]
    Echo,
    /// CREATE + CLOSE of one path shared by every connection.
    #[value(name = "open-close")]
    OpenClose,
    /// 4 KiB READs at random aligned offsets of one file.
    #[value(name = "read-4k")]
    Read4k,
    /// 4 KiB WRITEs at random aligned offsets of a file per connection.
    #[value(name = "write-4k")]
    Write4k,
    /// 1 MiB READs at random aligned offsets of one file.
    #[value(name = "read-1m")]
    Read1m,
    /// 1 MiB WRITEs at random aligned offsets of a file per connection.
    #[value(name = "write-1m")]
    Write1m,
    /// A whole listing of a directory of --entries files (CREATE, QUERY_DIRECTORY until
    /// STATUS_NO_MORE_FILES, CLOSE).
    #[value(name = "querydir")]
    Querydir,
    /// CREATE, QUERY_INFO (FileNetworkOpenInformation), READ 4 KiB, CLOSE of one of
    /// --mix-files small files.
    #[value(name = "mix")]
    Mix,
    /// dbench's NBENCH load file, one client per connection.
    #[value(name = "nbench")]
    Nbench,
}

/// What the workload needs, made once before any connection is measured.
pub struct Prepared {
    pub kind: Kind,
    pub dir: String,
    pub file_size: u64,
    pub entries: usize,
    pub mix_files: usize,
    /// Incompressible bytes to write from (1 MiB).
    pub data: Arc<[u8]>,
    pub lines: Arc<Vec<nbench::Line>>,
}

/// The settings a workload takes from the command line.
pub struct Params {
    pub dir: String,
    pub file_size: u64,
    pub entries: usize,
    pub mix_files: usize,
    pub loadfile: std::path::PathBuf,
}

impl Kind {
    /// The name the command line takes.
    pub fn name(self) -> String {
        clap::ValueEnum::to_possible_value(&self)
            .map(|v| v.get_name().to_owned())
            .unwrap_or_default()
    }

    /// The bytes one operation moves, for the workloads measured in GiB/s.
    fn io_size(self) -> usize {
        match self {
            Self::Read4k | Self::Write4k => 4 * KIB,
            Self::Read1m | Self::Write1m => MIB,
            _ => 0,
        }
    }

    fn data_file(self, dir: &str) -> String {
        format!("{dir}\\data.bin")
    }
}

/// A small fast generator (xorshift64*) for offsets and file choices, seeded per worker.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}

fn random_bytes(len: usize) -> Arc<[u8]> {
    let mut rng = Rng::new(0x5eed);
    (0..len).map(|_| rng.below(256) as u8).collect()
}

async fn ensure_dir(tree: &Tree, path: &str) -> Result<()> {
    let open = tree.create(path, &OpenSpec::directory()).await?;
    tree.close(open.file_id).await
}

/// Makes `name` exactly `size` bytes of `data` repeated, unless it already is that long.
async fn ensure_file(tree: &Tree, name: &str, size: u64, data: &Arc<[u8]>) -> Result<()> {
    let open = tree.create(name, &OpenSpec::open_or_create()).await?;
    if open.end_of_file != size {
        let chunk = data.len().min(MIB) as u64;
        let mut writes = JoinSet::new();
        let mut offset = 0;
        while offset < size {
            if writes.len() >= SETUP_DEPTH
                && let Some(done) = writes.join_next().await
            {
                done.map_err(|e| Error::Unsupported(e.to_string()))??;
            }
            let (tree, data) = (tree.clone(), data.clone());
            let len = chunk.min(size - offset) as usize;
            writes.spawn(async move {
                tree.write(open.file_id, offset, data.get(..len).unwrap_or_default())
                    .await
                    .map(drop)
            });
            offset += chunk;
        }
        while let Some(done) = writes.join_next().await {
            done.map_err(|e| Error::Unsupported(e.to_string()))??;
        }
    }
    tree.close(open.file_id).await
}

/// Creates the files `dir\f00000`.. that are missing, 64 CREATE+CLOSE compounds in flight.
async fn ensure_entries(tree: &Tree, dir: &str, entries: usize) -> Result<()> {
    ensure_dir(tree, dir).await?;
    let open = tree.create(dir, &OpenSpec::read()).await?;
    let present = tree.list(open.file_id, "*", 65536).await?.len();
    tree.close(open.file_id).await?;
    if present >= entries + 2 {
        return Ok(());
    }
    let mut tasks = JoinSet::new();
    for lane in 0..64 {
        let (tree, dir) = (tree.clone(), dir.to_owned());
        tasks.spawn(async move {
            for i in (lane..entries).step_by(64) {
                let mut c = tree.compound();
                c.create(&format!("{dir}\\f{i:05}"), &OpenSpec::open_or_create())
                    .related()
                    .close(FileId::ANY);
                for response in c.send().await? {
                    response.ok()?;
                }
            }
            Ok::<(), Error>(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.map_err(|e| Error::Unsupported(e.to_string()))??;
    }
    Ok(())
}

/// Makes the data `kind` works on, under `params.dir`.
pub async fn prepare(
    kind: Kind,
    tree: &Tree,
    params: &Params,
) -> std::result::Result<Prepared, String> {
    let dir = params.dir.clone();
    let data = random_bytes(MIB);
    let lines = if kind == Kind::Nbench {
        let text = std::fs::read_to_string(&params.loadfile)
            .map_err(|e| format!("{}: {e}", params.loadfile.display()))?;
        nbench::parse(&text)?
    } else {
        Vec::new()
    };
    let setup = async {
        if kind != Kind::Nbench && kind != Kind::Echo {
            ensure_dir(tree, &dir).await?;
        }
        match kind {
            Kind::OpenClose => ensure_file(tree, &format!("{dir}\\shared.dat"), 0, &data).await?,
            Kind::Read4k | Kind::Read1m => {
                ensure_file(tree, &kind.data_file(&dir), params.file_size, &data).await?;
            }
            Kind::Querydir => {
                ensure_entries(
                    tree,
                    &format!("{dir}\\dir{}", params.entries),
                    params.entries,
                )
                .await?;
            }
            Kind::Mix => {
                ensure_dir(tree, &format!("{dir}\\mix")).await?;
                for i in 0..params.mix_files {
                    ensure_file(tree, &format!("{dir}\\mix\\f{i}"), 4096, &data).await?;
                }
            }
            _ => {}
        }
        Ok::<(), Error>(())
    };
    setup.await.map_err(|e| format!("setup: {e}"))?;
    Ok(Prepared {
        kind,
        dir,
        file_size: params.file_size,
        entries: params.entries,
        mix_files: params.mix_files.max(1),
        data,
        lines: Arc::new(lines),
    })
}

/// What a connection opens before the clock starts, shared by its workers.
#[derive(Clone, Copy)]
pub struct ConnectionState {
    file: Option<FileId>,
}

/// Opens what connection `index` works on.
pub async fn open_for(prepared: &Prepared, tree: &Tree, index: usize) -> Result<ConnectionState> {
    let file = match prepared.kind {
        Kind::Read4k | Kind::Read1m => Some(
            tree.create(&prepared.kind.data_file(&prepared.dir), &OpenSpec::read())
                .await?
                .file_id,
        ),
        Kind::Write4k | Kind::Write1m => Some(
            tree.create(
                &format!("{}\\w{index}.bin", prepared.dir),
                &OpenSpec::open_or_create(),
            )
            .await?
            .file_id,
        ),
        _ => None,
    };
    Ok(ConnectionState { file })
}

/// What one operation did.
#[derive(Debug, Default, Clone)]
pub struct Done {
    pub requests: u32,
    pub bytes: u64,
    /// Directory entries listed.
    pub entries: u64,
    /// An NBENCH step whose status differs from the trace's.
    pub mismatch: Option<String>,
}

/// One worker: a connection's tree and what it cycles through.
pub struct Worker {
    prepared: Arc<Prepared>,
    tree: Tree,
    state: ConnectionState,
    rng: Rng,
    nbench: Option<(nbench::Client, usize)>,
}

impl Worker {
    pub fn new(
        prepared: Arc<Prepared>,
        tree: Tree,
        state: ConnectionState,
        connection: usize,
        seed: u64,
    ) -> Self {
        let nbench = (prepared.kind == Kind::Nbench).then(|| {
            (
                nbench::Client::new(connection + 1, tree.clone(), prepared.data.clone()),
                0,
            )
        });
        Self {
            prepared,
            tree,
            state,
            rng: Rng::new(seed),
            nbench,
        }
    }

    fn connection(&self) -> &Connection {
        self.tree.session().connection()
    }

    /// Whether the connection has ended (no further operation can succeed).
    pub fn broken(&self) -> bool {
        self.connection().failure().is_some()
    }

    fn file(&self) -> Result<FileId> {
        self.state
            .file
            .ok_or_else(|| Error::Unsupported("no file open".into()))
    }

    fn offset(&mut self, size: usize) -> u64 {
        let slots = (self.prepared.file_size / size as u64).max(1);
        self.rng.below(slots) * size as u64
    }

    /// Runs one operation.
    pub async fn op(&mut self) -> Result<Done> {
        let p = self.prepared.clone();
        match p.kind {
            Kind::Echo => {
                self.connection().echo().await?;
                Ok(Done {
                    requests: 1,
                    ..Done::default()
                })
            }
            Kind::OpenClose => {
                let open = self
                    .tree
                    .create(&format!("{}\\shared.dat", p.dir), &OpenSpec::read())
                    .await?;
                self.tree.close(open.file_id).await?;
                Ok(Done {
                    requests: 2,
                    ..Done::default()
                })
            }
            Kind::Read4k | Kind::Read1m => {
                let size = p.kind.io_size();
                let offset = self.offset(size);
                let read = self.tree.read(self.file()?, offset, size as u32).await?;
                if read.data().len() != size {
                    return Err(Error::Protocol(format!(
                        "read {} bytes of {size} at {offset}",
                        read.data().len()
                    )));
                }
                Ok(Done {
                    requests: 1,
                    bytes: size as u64,
                    ..Done::default()
                })
            }
            Kind::Write4k | Kind::Write1m => {
                let size = p.kind.io_size();
                let offset = self.offset(size);
                let data = p.data.get(..size).unwrap_or_default();
                let written = self.tree.write(self.file()?, offset, data).await?;
                if written as usize != size {
                    return Err(Error::Protocol(format!("wrote {written} bytes of {size}")));
                }
                Ok(Done {
                    requests: 1,
                    bytes: size as u64,
                    ..Done::default()
                })
            }
            Kind::Querydir => self.list_directory(&p).await,
            Kind::Mix => {
                let name = format!("{}\\mix\\f{}", p.dir, self.rng.below(p.mix_files as u64));
                let open = self.tree.create(&name, &OpenSpec::read()).await?;
                self.tree
                    .query_info(open.file_id, InfoType::FILE, NETWORK_OPEN_INFORMATION, 256)
                    .await?;
                let read = self.tree.read(open.file_id, 0, 4096).await?;
                self.tree.close(open.file_id).await?;
                Ok(Done {
                    requests: 4,
                    bytes: read.data().len() as u64,
                    ..Done::default()
                })
            }
            Kind::Nbench => self.nbench_step(&p).await,
        }
    }

    async fn list_directory(&mut self, p: &Prepared) -> Result<Done> {
        let dir = format!("{}\\dir{}", p.dir, p.entries);
        let open = self.tree.create(&dir, &OpenSpec::read()).await?;
        let mut entries = 0u64;
        let mut requests = 2;
        let mut flags = QueryDirectoryFlags::RESTART_SCANS;
        while let Some(buffer) = self
            .tree
            .query_directory(
                open.file_id,
                ID_BOTH_DIRECTORY_INFORMATION,
                flags,
                "*",
                65536,
            )
            .await?
        {
            entries += count_entries(&buffer)?;
            requests += 1;
            flags = QueryDirectoryFlags::empty();
        }
        requests += 1;
        self.tree.close(open.file_id).await?;
        if entries != p.entries as u64 + 2 {
            return Err(Error::Protocol(format!(
                "listed {entries} entries, expected {} and . and ..",
                p.entries
            )));
        }
        Ok(Done {
            requests,
            entries,
            ..Done::default()
        })
    }

    async fn nbench_step(&mut self, p: &Prepared) -> Result<Done> {
        let Some((client, next)) = self.nbench.as_mut() else {
            return Err(Error::Unsupported("not an NBENCH worker".into()));
        };
        let Some(line) = p.lines.get(*next) else {
            return Err(Error::Unsupported("an empty load file".into()));
        };
        *next = (*next + 1) % p.lines.len();
        let outcome = client.run(&line.step).await?;
        let mismatch = line
            .expect
            .filter(|e| *e != outcome.status)
            .map(|e| format!("{:?}: expected {e}, got {}", line.step, outcome.status));
        Ok(Done {
            requests: outcome.requests,
            bytes: outcome.bytes,
            entries: 0,
            mismatch,
        })
    }
}

/// The entries of a directory information buffer, by their NextEntryOffset chain.
fn count_entries(buffer: &[u8]) -> Result<u64> {
    let mut count = 0;
    let mut at = 0usize;
    loop {
        let next = buffer
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
            .ok_or_else(|| Error::Protocol("a directory entry past the buffer".into()))?;
        count += 1;
        if next == 0 {
            return Ok(count);
        }
        at += next as usize;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_entries_are_counted_by_their_chain() {
        let mut buffer = vec![0u8; 200];
        buffer[0..4].copy_from_slice(&104u32.to_le_bytes());
        buffer[104..108].copy_from_slice(&80u32.to_le_bytes());
        assert_eq!(count_entries(&buffer).unwrap(), 3);
        buffer[184..188].copy_from_slice(&80u32.to_le_bytes());
        assert!(count_entries(&buffer).is_err());
        assert!(count_entries(&[]).is_err());
    }

    #[test]
    fn offsets_stay_inside_the_file_and_aligned() {
        let mut rng = Rng::new(3);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let slot = rng.below(16);
            assert!(slot < 16);
            seen.insert(slot);
        }
        assert_eq!(seen.len(), 16);
    }
}
