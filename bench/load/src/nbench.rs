//! The NBENCH load: dbench's load file (`client.txt`, from the Debian package `dbench`), a trace
//! of the SMB1 calls a NetBench client made, replayed over SMB2. The mapping is this module's:
//! dbench's own SMB backend replays a different load format through libsmbclient, and
//! smbtorture's NBENCH speaks SMB1. A path call (QUERY_PATH_INFORMATION, Unlink, Rename,
//! FIND_FIRST, Mkdir) becomes a related CREATE + request + CLOSE compound; a handle call (ReadX,
//! WriteX, QUERY_FILE_INFORMATION, SET_FILE_INFORMATION, Flush, LockX) the SMB2 request on the
//! open its NTCreateX made; SMB1 information levels become the MS-FSCC classes they pass
//! through to. Each client works in `clients\clientN` (the file names `client1`), as dbench's
//! clients do.

use std::collections::HashMap;

use smb3d_client::{OpenSpec, Response, Tree};
use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_fscc::FileRenameInformation;
use smb3d_smb2::FileId;
use smb3d_smb2::create::{CreateDisposition, CreateOptions};
use smb3d_smb2::lock::LockFlags;
use smb3d_smb2::query_directory::QueryDirectoryFlags;
use smb3d_smb2::query_info::InfoType;

/// One line of the load file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Create {
        path: String,
        options: u32,
        disposition: u32,
        fnum: u32,
    },
    Close {
        fnum: u32,
    },
    Read {
        fnum: u32,
        offset: u64,
        size: u32,
    },
    Write {
        fnum: u32,
        offset: u64,
        size: u32,
    },
    QueryPath {
        path: String,
        level: u32,
    },
    QueryFile {
        fnum: u32,
        level: u32,
    },
    QueryFs {
        level: u32,
    },
    SetFile {
        fnum: u32,
        level: u32,
    },
    Rename {
        from: String,
        to: String,
    },
    Unlink {
        path: String,
    },
    Deltree {
        path: String,
    },
    Mkdir {
        path: String,
    },
    Rmdir {
        path: String,
    },
    FindFirst {
        pattern: String,
        level: u32,
    },
    Flush {
        fnum: u32,
    },
    Lock {
        fnum: u32,
        offset: u64,
        length: u64,
    },
    Unlock {
        fnum: u32,
        offset: u64,
        length: u64,
    },
}

/// A line: its step and the status the trace recorded (None for a status this parser does
/// not know, which is then not checked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub step: Step,
    pub expect: Option<NtStatus>,
}

/// The statuses load files record.
fn status(name: &str) -> Option<NtStatus> {
    Some(match name.strip_prefix("NT_STATUS_")? {
        "OK" => NtStatus::SUCCESS,
        "NO_SUCH_FILE" => NtStatus::NO_SUCH_FILE,
        "OBJECT_NAME_NOT_FOUND" => NtStatus::OBJECT_NAME_NOT_FOUND,
        "OBJECT_PATH_NOT_FOUND" => NtStatus::OBJECT_PATH_NOT_FOUND,
        "OBJECT_NAME_COLLISION" => NtStatus::OBJECT_NAME_COLLISION,
        "FILE_IS_A_DIRECTORY" => NtStatus::FILE_IS_A_DIRECTORY,
        "NOT_A_DIRECTORY" => NtStatus::NOT_A_DIRECTORY,
        "ACCESS_DENIED" => NtStatus::ACCESS_DENIED,
        "SHARING_VIOLATION" => NtStatus::SHARING_VIOLATION,
        "DIRECTORY_NOT_EMPTY" => NtStatus::DIRECTORY_NOT_EMPTY,
        "END_OF_FILE" => NtStatus::END_OF_FILE,
        "LOCK_NOT_GRANTED" => NtStatus::LOCK_NOT_GRANTED,
        "FILE_LOCK_CONFLICT" => NtStatus::FILE_LOCK_CONFLICT,
        "RANGE_NOT_LOCKED" => NtStatus::RANGE_NOT_LOCKED,
        _ => return None,
    })
}

/// Splits a line into words; a double-quoted word may hold spaces.
fn words(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line.trim();
    while !rest.is_empty() {
        if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted.find('"').unwrap_or(quoted.len());
            out.push(quoted.get(..end).unwrap_or_default());
            rest = quoted.get(end + 1..).unwrap_or_default().trim_start();
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            out.push(rest.get(..end).unwrap_or_default());
            rest = rest.get(end..).unwrap_or_default().trim_start();
        }
    }
    out
}

fn number<T: TryFrom<u64>>(word: Option<&&str>) -> Result<T, String> {
    let word = word.ok_or("a missing number")?;
    let value = match word.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => word.parse(),
    }
    .map_err(|_| format!("not a number: {word}"))?;
    T::try_from(value).map_err(|_| format!("out of range: {word}"))
}

fn path(word: Option<&&str>) -> Result<String, String> {
    word.map(|w| (*w).to_owned())
        .ok_or_else(|| "a missing path".into())
}

/// Parses a load file; blank lines, comments (`#`) and Sleep lines are skipped.
pub fn parse(text: &str) -> Result<Vec<Line>, String> {
    let mut lines = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let w = words(raw);
        let Some(op) = w.first() else { continue };
        if op.starts_with('#') || *op == "Sleep" {
            continue;
        }
        let at = |e: String| format!("line {}: {e}: {raw}", n + 1);
        let arg = |i: usize| w.get(i);
        let step = match *op {
            "NTCreateX" => Step::Create {
                path: path(arg(1)).map_err(at)?,
                options: number(arg(2)).map_err(at)?,
                disposition: number(arg(3)).map_err(at)?,
                fnum: number(arg(4)).map_err(at)?,
            },
            "Close" => Step::Close {
                fnum: number(arg(1)).map_err(at)?,
            },
            "ReadX" => Step::Read {
                fnum: number(arg(1)).map_err(at)?,
                offset: number(arg(2)).map_err(at)?,
                size: number(arg(3)).map_err(at)?,
            },
            "WriteX" => Step::Write {
                fnum: number(arg(1)).map_err(at)?,
                offset: number(arg(2)).map_err(at)?,
                size: number(arg(3)).map_err(at)?,
            },
            "QUERY_PATH_INFORMATION" => Step::QueryPath {
                path: path(arg(1)).map_err(at)?,
                level: number(arg(2)).map_err(at)?,
            },
            "QUERY_FILE_INFORMATION" => Step::QueryFile {
                fnum: number(arg(1)).map_err(at)?,
                level: number(arg(2)).map_err(at)?,
            },
            "QUERY_FS_INFORMATION" => Step::QueryFs {
                level: number(arg(1)).map_err(at)?,
            },
            "SET_FILE_INFORMATION" => Step::SetFile {
                fnum: number(arg(1)).map_err(at)?,
                level: number(arg(2)).map_err(at)?,
            },
            "Rename" => Step::Rename {
                from: path(arg(1)).map_err(at)?,
                to: path(arg(2)).map_err(at)?,
            },
            "Unlink" => Step::Unlink {
                path: path(arg(1)).map_err(at)?,
            },
            "Deltree" => Step::Deltree {
                path: path(arg(1)).map_err(at)?,
            },
            "Mkdir" => Step::Mkdir {
                path: path(arg(1)).map_err(at)?,
            },
            "Rmdir" => Step::Rmdir {
                path: path(arg(1)).map_err(at)?,
            },
            "FIND_FIRST" => Step::FindFirst {
                pattern: path(arg(1)).map_err(at)?,
                level: number(arg(2)).map_err(at)?,
            },
            "Flush" => Step::Flush {
                fnum: number(arg(1)).map_err(at)?,
            },
            "LockX" | "UnlockX" => {
                let fnum = number(arg(1)).map_err(at)?;
                let offset = number(arg(2)).map_err(at)?;
                let length = number(arg(3)).map_err(at)?;
                if *op == "LockX" {
                    Step::Lock {
                        fnum,
                        offset,
                        length,
                    }
                } else {
                    Step::Unlock {
                        fnum,
                        offset,
                        length,
                    }
                }
            }
            other => return Err(at(format!("unknown operation {other}"))),
        };
        let expect = w.last().and_then(|s| status(s));
        lines.push(Line { step, expect });
    }
    Ok(lines)
}

/// The MS-FSCC file information class an SMB1 query level stands for: levels from 1000 pass
/// the class through (MS-CIFS 2.2.2.3.5); the older ones map to their counterparts.
pub fn file_class(level: u32) -> u8 {
    match level {
        1000.. => u8::try_from(level - 1000).unwrap_or(0),
        0x101 | 1 => 4,
        0x102 => 5,
        0x103 => 7,
        0x104 => 9,
        0x107 => 18,
        0x108 => 21,
        0x109 => 22,
        0x10B => 28,
        _ => 4,
    }
}

/// The MS-FSCC file system information class of an SMB1 QUERY_FS_INFORMATION level.
pub fn fs_class(level: u32) -> u8 {
    match level {
        1000.. => u8::try_from(level - 1000).unwrap_or(0),
        1 | 0x103 => 3,
        2 | 0x102 => 1,
        0x104 => 4,
        0x105 => 5,
        _ => 3,
    }
}

/// The directory information class of a FIND_FIRST level (MS-CIFS 2.2.2.1.1).
fn find_class(level: u32) -> u8 {
    match level {
        0x101 => 1,
        0x102 => 2,
        0x103 => 12,
        0x105 => 38,
        0x106 => 37,
        _ => 3,
    }
}

/// What one step did: the status it ended with and its cost in requests and bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    pub status: NtStatus,
    pub requests: u32,
    pub bytes: u64,
}

const FILE_ALL_ACCESS: u32 = 0x001F_01FF;
/// DELETE | FILE_READ_ATTRIBUTES | SYNCHRONIZE.
const DELETE_ACCESS: u32 = 0x0011_0080;
const INFO_BUFFER: u32 = 4096;
const DIR_BUFFER: u32 = 65536;
/// FILE_BASIC_INFORMATION with every field zero: change nothing (MS-FSCC 2.4.7).
const BASIC_NO_CHANGE: [u8; 40] = [0; 40];

/// The directory of the client that recorded the trace, which each client replaces by its own.
const OWN_DIRECTORY: &str = "clients\\client1";

/// Whether a trace path is in the recording client's own directory (or is that directory).
fn is_own(trace: &str) -> bool {
    trace
        .trim_start_matches('\\')
        .strip_prefix(OWN_DIRECTORY)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('\\'))
}

/// One NBENCH client: its number, tree, the opens its NTCreateX lines made (by the trace's
/// file numbers) and an open of the share root for file system queries.
pub struct Client {
    number: usize,
    tree: Tree,
    files: HashMap<u32, FileId>,
    root: Option<FileId>,
    data: std::sync::Arc<[u8]>,
}

/// The first status that is not STATUS_SUCCESS among a compound's responses.
fn first_failure(responses: &[Response]) -> NtStatus {
    responses
        .iter()
        .map(Response::status)
        .find(|s| *s != NtStatus::SUCCESS)
        .unwrap_or(NtStatus::SUCCESS)
}

fn spec(access: u32, disposition: u32, options: u32) -> OpenSpec {
    OpenSpec {
        access: AccessMask(access),
        disposition: CreateDisposition(disposition),
        options: CreateOptions(options),
        attributes: 0,
        share: OpenSpec::read().share,
    }
}

impl Client {
    /// Client `number` (from 1) on `tree`, writing from `data` (at least 64 KiB).
    pub fn new(number: usize, tree: Tree, data: std::sync::Arc<[u8]>) -> Self {
        Self {
            number,
            tree,
            files: HashMap::new(),
            root: None,
            data,
        }
    }

    /// A trace path made this client's and relative to the share: `\clients\client1\x`
    /// becomes `clients\clientN\x`.
    fn path(&self, trace: &str) -> String {
        let trimmed = trace.trim_start_matches('\\');
        match trimmed.strip_prefix(OWN_DIRECTORY) {
            Some(rest) if is_own(trace) => format!("clients\\client{}{rest}", self.number),
            _ => trimmed.to_owned(),
        }
    }

    fn open(&self, fnum: u32) -> Option<FileId> {
        self.files.get(&fnum).copied()
    }

    /// Runs one step.
    pub async fn run(&mut self, step: &Step) -> smb3d_client::Result<Outcome> {
        let done = |status, requests, bytes| {
            Ok(Outcome {
                status,
                requests,
                bytes,
            })
        };
        let any = FileId::ANY;
        match step {
            Step::Create {
                path,
                options,
                disposition,
                fnum,
            } => {
                let name = self.path(path);
                match self
                    .tree
                    .create(&name, &spec(FILE_ALL_ACCESS, *disposition, *options))
                    .await
                {
                    Ok(open) => {
                        self.files.insert(*fnum, open.file_id);
                        done(NtStatus::SUCCESS, 1, 0)
                    }
                    Err(e) => done(e.status().ok_or(e)?, 1, 0),
                }
            }
            Step::Close { fnum } => {
                let Some(id) = self.files.remove(fnum) else {
                    return done(NtStatus::INVALID_HANDLE, 0, 0);
                };
                self.status_of(self.tree.close(id).await, 1, 0)
            }
            Step::Read { fnum, offset, size } => {
                let Some(id) = self.open(*fnum) else {
                    return done(NtStatus::INVALID_HANDLE, 0, 0);
                };
                match self.tree.read(id, *offset, *size).await {
                    Ok(data) => done(NtStatus::SUCCESS, 1, data.data().len() as u64),
                    Err(e) => done(e.status().ok_or(e)?, 1, 0),
                }
            }
            Step::Write { fnum, offset, size } => {
                let Some(id) = self.open(*fnum) else {
                    return done(NtStatus::INVALID_HANDLE, 0, 0);
                };
                let len = (*size as usize).min(self.data.len());
                let data = self.data.get(..len).unwrap_or_default();
                let result = self.tree.write(id, *offset, data).await.map(drop);
                self.status_of(result, 1, len as u64)
            }
            Step::QueryPath { path, level } => {
                let name = self.path(path);
                let mut c = self.tree.compound();
                c.create(&name, &spec(0x0012_0089, 1, 0))
                    .related()
                    .query_info(any, InfoType::FILE, file_class(*level), INFO_BUFFER)
                    .close(any);
                done(first_failure(&c.send().await?), 3, 0)
            }
            Step::QueryFile { fnum, level } => {
                let Some(id) = self.open(*fnum) else {
                    return done(NtStatus::INVALID_HANDLE, 0, 0);
                };
                let result = self
                    .tree
                    .query_info(id, InfoType::FILE, file_class(*level), INFO_BUFFER)
                    .await
                    .map(drop);
                self.status_of(result, 1, 0)
            }
            Step::QueryFs { level } => {
                let root = match self.root {
                    Some(root) => root,
                    None => {
                        let root = self.tree.create("", &OpenSpec::read()).await?.file_id;
                        self.root = Some(root);
                        root
                    }
                };
                let result = self
                    .tree
                    .query_info(root, InfoType::FILESYSTEM, fs_class(*level), INFO_BUFFER)
                    .await
                    .map(drop);
                self.status_of(result, 1, 0)
            }
            Step::SetFile { fnum, level } => {
                let Some(id) = self.open(*fnum) else {
                    return done(NtStatus::INVALID_HANDLE, 0, 0);
                };
                let result = self
                    .tree
                    .set_info(id, InfoType::FILE, file_class(*level), &BASIC_NO_CHANGE)
                    .await;
                self.status_of(result, 1, 0)
            }
            Step::Rename { from, to } => {
                let mut buffer = Vec::new();
                FileRenameInformation {
                    replace_if_exists: false,
                    root_directory: 0,
                    file_name: self.path(to),
                }
                .encode(&mut smb3d_wire::Writer::new(&mut buffer));
                let name = self.path(from);
                let mut c = self.tree.compound();
                c.create(&name, &spec(DELETE_ACCESS, 1, 0))
                    .related()
                    .set_info(any, InfoType::FILE, 10, &buffer)
                    .close(any);
                done(first_failure(&c.send().await?), 3, 0)
            }
            Step::Unlink { path } => {
                let name = self.path(path);
                let status = self.delete(&name, false).await?;
                done(status, 2, 0)
            }
            Step::Rmdir { path } => {
                let name = self.path(path);
                let status = self.delete(&name, true).await?;
                done(status, 2, 0)
            }
            Step::Mkdir { path } => {
                let name = self.path(path);
                let mut c = self.tree.compound();
                c.create(
                    &name,
                    &spec(0x0012_0089, 2, CreateOptions::DIRECTORY_FILE.0),
                )
                .related()
                .close(any);
                let mut status = first_failure(&c.send().await?);
                // A directory all clients share (`\clients`) is made by whichever comes first;
                // the trace, taken with one client, saw it made.
                if status == NtStatus::OBJECT_NAME_COLLISION && !is_own(path) {
                    status = NtStatus::SUCCESS;
                }
                done(status, 2, 0)
            }
            Step::Deltree { path } => {
                let name = self.path(path);
                let requests = self.deltree(&name).await?;
                done(NtStatus::SUCCESS, requests, 0)
            }
            Step::FindFirst { pattern, level } => {
                let full = self.path(pattern);
                let (dir, mask) = full.rsplit_once('\\').unwrap_or(("", full.as_str()));
                let mut c = self.tree.compound();
                c.create(dir, &spec(0x0012_0089, 1, CreateOptions::DIRECTORY_FILE.0))
                    .related()
                    .query_directory(
                        any,
                        find_class(*level),
                        QueryDirectoryFlags::RESTART_SCANS,
                        mask,
                        DIR_BUFFER,
                    )
                    .close(any);
                done(first_failure(&c.send().await?), 3, 0)
            }
            Step::Flush { fnum } => {
                let Some(id) = self.open(*fnum) else {
                    return done(NtStatus::INVALID_HANDLE, 0, 0);
                };
                self.status_of(self.tree.flush(id).await, 1, 0)
            }
            Step::Lock {
                fnum,
                offset,
                length,
            }
            | Step::Unlock {
                fnum,
                offset,
                length,
            } => {
                let Some(id) = self.open(*fnum) else {
                    return done(NtStatus::INVALID_HANDLE, 0, 0);
                };
                let flags = if matches!(step, Step::Lock { .. }) {
                    LockFlags::EXCLUSIVE_LOCK | LockFlags::FAIL_IMMEDIATELY
                } else {
                    LockFlags::UNLOCK
                };
                let result = self.tree.lock(id, *offset, *length, flags).await;
                self.status_of(result, 1, 0)
            }
        }
    }

    /// The status of a result whose error is a status; other errors stay errors.
    fn status_of(
        &self,
        result: smb3d_client::Result<()>,
        requests: u32,
        bytes: u64,
    ) -> smb3d_client::Result<Outcome> {
        let status = match result {
            Ok(()) => NtStatus::SUCCESS,
            Err(e) => e.status().ok_or(e)?,
        };
        Ok(Outcome {
            status,
            requests,
            bytes,
        })
    }

    /// Deletes a file or directory with a delete-on-close open and its CLOSE.
    async fn delete(&self, name: &str, directory: bool) -> smb3d_client::Result<NtStatus> {
        let kind = if directory {
            CreateOptions::DIRECTORY_FILE
        } else {
            CreateOptions::NON_DIRECTORY_FILE
        };
        let mut c = self.tree.compound();
        c.create(
            name,
            &spec(DELETE_ACCESS, 1, (kind | CreateOptions::DELETE_ON_CLOSE).0),
        )
        .related()
        .close(FileId::ANY);
        Ok(first_failure(&c.send().await?))
    }

    /// Deletes `root` and everything under it, if it exists; returns the requests it took.
    async fn deltree(&self, root: &str) -> smb3d_client::Result<u32> {
        let mut requests = 0;
        let mut pending = vec![root.to_owned()];
        let mut directories = Vec::new();
        while let Some(dir) = pending.pop() {
            requests += 1;
            let open = match self
                .tree
                .create(&dir, &spec(0x0012_0089, 1, CreateOptions::DIRECTORY_FILE.0))
                .await
            {
                Ok(open) => open,
                Err(e) if e.status().is_some() => continue,
                Err(e) => return Err(e),
            };
            let names = self.tree.list(open.file_id, "*", DIR_BUFFER).await;
            requests += 2;
            self.tree.close(open.file_id).await?;
            for name in names? {
                if name == "." || name == ".." {
                    continue;
                }
                let full = format!("{dir}\\{name}");
                requests += 2;
                if self.delete(&full, false).await? == NtStatus::FILE_IS_A_DIRECTORY {
                    pending.push(full);
                }
            }
            directories.push(dir);
        }
        for dir in directories.iter().rev() {
            requests += 2;
            self.delete(dir, true).await?;
        }
        Ok(requests)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_into_steps_with_their_expected_status() {
        let text = r#"
Deltree "\clients\client1" NT_STATUS_OK
NTCreateX "\clients\client1\~dmtmp\a b.doc" 0x40 0x2 9938 NT_STATUS_OK
WriteX 9938 65534 1 1 NT_STATUS_OK
FIND_FIRST "\clients\client1\FILLER.*" 260 1366 0 NT_STATUS_NO_SUCH_FILE
LockX 10430 2147483538 1 NT_STATUS_OK
Sleep 1000
QUERY_FS_INFORMATION 259 NT_STATUS_WEIRD
"#;
        let lines = parse(text).unwrap();
        assert_eq!(lines.len(), 6);
        assert_eq!(
            lines[1].step,
            Step::Create {
                path: r"\clients\client1\~dmtmp\a b.doc".into(),
                options: 0x40,
                disposition: 2,
                fnum: 9938
            }
        );
        assert_eq!(
            lines[2].step,
            Step::Write {
                fnum: 9938,
                offset: 65534,
                size: 1
            }
        );
        assert_eq!(lines[3].expect, Some(NtStatus::NO_SUCH_FILE));
        assert_eq!(
            lines[4].step,
            Step::Lock {
                fnum: 10430,
                offset: 2_147_483_538,
                length: 1
            }
        );
        assert_eq!(lines[5].expect, None);
        assert!(
            parse("Teleport 1 NT_STATUS_OK")
                .unwrap_err()
                .contains("line 1")
        );
        assert!(
            parse("ReadX 1 x 3 NT_STATUS_OK")
                .unwrap_err()
                .contains("not a number")
        );
        assert!(parse("Close").unwrap_err().contains("missing"));
    }

    #[test]
    fn only_the_recording_clients_directory_is_renamed() {
        assert!(is_own(r"\clients\client1"));
        assert!(is_own(r"\clients\client1\~dmtmp\WORD"));
        assert!(!is_own(r"\clients"));
        assert!(!is_own(r"\clients\client10\x"));
    }

    #[test]
    fn smb1_levels_map_to_fscc_classes() {
        assert_eq!(file_class(1004), 4);
        assert_eq!(file_class(1035), 35);
        assert_eq!(file_class(258), 5);
        assert_eq!(fs_class(259), 3);
        assert_eq!(fs_class(1), 3);
        assert_eq!(find_class(260), 3);
    }

    /// Every kind of step, with the statuses a trace would record, against the in-memory
    /// server: the client's replay gets the same ones, twice over (the second pass starts
    /// by deleting what the first left).
    const SCRIPT: &str = r#"
Deltree "\clients\client1" NT_STATUS_OK
Mkdir "\clients" NT_STATUS_OK
NTCreateX "\clients\client1" 0x1 0x2 16385 NT_STATUS_OK
Close 16385 NT_STATUS_OK
NTCreateX "\clients\client1\missing" 0x40 0x1 9935 NT_STATUS_OBJECT_NAME_NOT_FOUND
FIND_FIRST "\clients\client1\FILLER.*" 260 1366 0 NT_STATUS_NO_SUCH_FILE
Mkdir "\clients\client1\sub" NT_STATUS_OK
Mkdir "\clients\client1\empty" NT_STATUS_OK
Rmdir "\clients\client1\empty" NT_STATUS_OK
NTCreateX "\clients\client1\sub\a.doc" 0x40 0x2 9938 NT_STATUS_OK
QUERY_FS_INFORMATION 259 NT_STATUS_OK
WriteX 9938 0 65536 65536 NT_STATUS_OK
QUERY_FILE_INFORMATION 9938 258 NT_STATUS_OK
SET_FILE_INFORMATION 9938 1004 NT_STATUS_OK
ReadX 9938 4096 4096 4096 NT_STATUS_OK
LockX 9938 100 1 NT_STATUS_OK
UnlockX 9938 100 1 NT_STATUS_OK
Flush 9938 NT_STATUS_OK
Close 9938 NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\sub\a.doc" 1035 NT_STATUS_OK
FIND_FIRST "\clients\client1\sub\*" 260 1366 3 NT_STATUS_OK
Rename "\clients\client1\sub\a.doc" "\clients\client1\sub\b.doc" NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\sub\a.doc" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND
Unlink "\clients\client1\sub\b.doc" 0x6 NT_STATUS_OK
NTCreateX "\clients\client1\sub\c.doc" 0x40 0x2 9939 NT_STATUS_OK
Close 9939 NT_STATUS_OK
Deltree "\clients\client1" NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\sub" 1004 NT_STATUS_OBJECT_PATH_NOT_FOUND
"#;

    #[test]
    fn every_step_gets_the_status_the_trace_recorded_from_the_in_memory_server() {
        use smb3d_client::ntlm::Logon;
        use smb3d_client::{ClientConfig, Connection};
        use smb3d_testkit::harness::{self, PASSWORD, SHARE_UNC, TestServer, USER};

        let lines = parse(SCRIPT).unwrap();
        let server =
            TestServer::new(harness::settings(), smb3d_crypto::default_provider()).unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let listeners = smb3d_transport::bind(&["127.0.0.1:0".parse().unwrap()])
                .await
                .unwrap();
            let addr = listeners[0].local_addr().unwrap();
            tokio::spawn(smb3d_transport::serve(
                listeners,
                server.server.clone(),
                smb3d_transport::TransportConfig::default(),
                std::future::pending(),
            ));
            let config = ClientConfig::default();
            let logon = Logon {
                user: USER,
                password: PASSWORD,
                domain: "WORKGROUP",
                anonymous: false,
                mic: true,
                spnego: true,
            };
            let conn = Connection::connect(addr, &config).await.unwrap();
            let session = conn.logon(&logon, &config).await.unwrap();
            let tree = session.tree_connect(SHARE_UNC).await.unwrap();
            let data: std::sync::Arc<[u8]> = vec![7u8; 65536].into();
            let mut client = Client::new(2, tree, data);
            for pass in 0..2 {
                for line in &lines {
                    let outcome = client.run(&line.step).await.unwrap();
                    assert_eq!(
                        Some(outcome.status),
                        line.expect,
                        "pass {pass}: {:?}",
                        line.step
                    );
                }
            }
        });
        drop(runtime);
    }
}
