//! `testing_fault_injection`: a share whose file-system calls fail or wait on purpose, for
//! tests of what the server does when storage misbehaves (see smb3d-vfs's `faults` module).
//! It is a testing option: it is inert unless set, and serve and `config check` warn of every
//! share that sets it.

use serde::Deserialize;

/// The longest delay a rule may add to a call: a stall of minutes is enough to test with, and
/// a mistyped value must not hang a share for days.
pub const MAX_FAULT_DELAY_MS: u64 = 600_000;

/// Which calls a rule matches, as smb3d-vfs's `FaultOp` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultOpName {
    Open,
    Stat,
    Unlink,
    Rename,
    Link,
    SyncDir,
    ReadDir,
    Read,
    Write,
    Allocate,
    Sync,
    SetAttributes,
    GetXattr,
    SetXattr,
}

impl FaultOpName {
    /// Every name.
    pub const ALL: [FaultOpName; 14] = [
        Self::Open,
        Self::Stat,
        Self::Unlink,
        Self::Rename,
        Self::Link,
        Self::SyncDir,
        Self::ReadDir,
        Self::Read,
        Self::Write,
        Self::Allocate,
        Self::Sync,
        Self::SetAttributes,
        Self::GetXattr,
        Self::SetXattr,
    ];

    /// The configuration name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Stat => "stat",
            Self::Unlink => "unlink",
            Self::Rename => "rename",
            Self::Link => "link",
            Self::SyncDir => "sync_dir",
            Self::ReadDir => "read_dir",
            Self::Read => "read",
            Self::Write => "write",
            Self::Allocate => "allocate",
            Self::Sync => "sync",
            Self::SetAttributes => "set_attributes",
            Self::GetXattr => "get_xattr",
            Self::SetXattr => "set_xattr",
        }
    }
}

/// The error a matching call fails with, by its errno name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum FaultErrno {
    /// An I/O error (a failing device).
    EIO,
    /// No space left (a full file system).
    ENOSPC,
    /// A read-only file system (one remounted read-only after an error).
    EROFS,
}

impl FaultErrno {
    /// The configuration name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::EIO => "EIO",
            Self::ENOSPC => "ENOSPC",
            Self::EROFS => "EROFS",
        }
    }
}

/// One rule of `testing_fault_injection`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultRuleConfig {
    /// The calls it matches; empty (the default) matches every call.
    #[serde(default)]
    pub ops: Vec<FaultOpName>,
    /// A share-relative path pattern (`*`, `?`), e.g. `"bad/*"`; every path when absent.
    #[serde(default)]
    pub path: Option<String>,
    /// For xattr calls, an attribute name pattern, e.g. `"security.NTACL"`.
    #[serde(default)]
    pub xattr: Option<String>,
    /// Milliseconds a matching call waits before it runs or fails.
    #[serde(default)]
    pub delay_ms: u64,
    /// The error a matching call fails with; none only delays it.
    #[serde(default)]
    pub error: Option<FaultErrno>,
    /// Matching calls that pass before the rule takes effect.
    #[serde(default)]
    pub skip: u64,
    /// Matching calls the rule affects after those; every one when absent.
    #[serde(default)]
    pub times: Option<u64>,
}

impl FaultRuleConfig {
    /// What is wrong with the rule, if anything.
    pub fn problem(&self) -> Option<String> {
        if self.delay_ms > MAX_FAULT_DELAY_MS {
            return Some(format!(
                "delay_ms {} is above {MAX_FAULT_DELAY_MS}",
                self.delay_ms
            ));
        }
        if self.delay_ms == 0 && self.error.is_none() {
            return Some("a rule needs an error, a delay_ms, or both".to_owned());
        }
        for pattern in [&self.path, &self.xattr].into_iter().flatten() {
            if pattern.is_empty() || pattern.contains('\0') {
                return Some(format!("pattern {pattern:?} must be non-empty text"));
            }
        }
        None
    }
}
