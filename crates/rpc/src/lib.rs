//! DCE/RPC over SMB named pipes for smb3d: the connection-oriented protocol of MS-RPCE (bind,
//! alter context, fragmentation, faults), NDR, and the services clients need to browse a
//! server and show owner names: `srvsvc` (MS-SRVS), `wkssvc` (MS-WKST) and a minimal `lsarpc`
//! (MS-LSAT, MS-LSAD), and the `samr` password change users make from Windows (MS-SAMR).
//!
//! The crate is sans-IO. The server opens a [`PipeEndpoint`] for each SMB2 CREATE of a pipe on
//! `IPC$`, feeds it what the client writes (SMB2 WRITE, or the input of
//! FSCTL_PIPE_TRANSCEIVE) and returns what [`PipeEndpoint::read`] gives to SMB2 READ or as the
//! transceive output. Share lists, server names and account names come from the server through
//! the [`Directory`] trait, asked again on every call.
#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

mod endpoint;
pub mod epmapper;
mod lsarpc;
pub mod ndr;
pub mod pdu;
mod presentation;
pub mod samr;
mod service;
mod srvsvc;
pub mod tcp;
pub mod witness;
mod wkssvc;

pub use endpoint::{MAX_FRAGMENT_LEN, MAX_REQUEST_LEN, PipeEndpoint, PipeError};
pub use smb3d_dtyp::Sid;

/// What the server reports about itself (MS-SRVS SERVER_INFO_10x, MS-WKST WKSTA_INFO_10x,
/// MS-LSAD domain information).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// The NetBIOS computer name, also the name of the account domain (e.g. `FILESRV`).
    pub netbios_name: String,
    /// The workgroup (primary domain) name.
    pub domain: String,
    /// The server comment shown by `net view` and `srvinfo`.
    pub comment: String,
    /// Major and minor operating system version (Windows reports 10.0; Samba 6.1).
    pub version: (u32, u32),
    /// PLATFORM_ID_NT is 500 (MS-SRVS 2.2.4.40).
    pub platform_id: u32,
    /// SV_TYPE_* bits (MS-SRVS 2.2.2.7), e.g. 0x0000_9003 for a workstation and server.
    pub server_type: u32,
}

/// What kind of resource a share is (MS-SRVS 2.2.2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareKind {
    /// A disk share: STYPE_DISKTREE.
    Disk,
    /// A cluster node's general cluster share (`scale_out = false`): STYPE_DISKTREE |
    /// STYPE_CLUSTER_FS, announced to SMB 3 as SMB2_SHARE_CAP_CLUSTER (MS-SMB2 3.3.5.7).
    ClusterDisk,
    /// A cluster node's scale-out share: STYPE_DISKTREE | STYPE_CLUSTER_SOFS, announced as
    /// SMB2_SHARE_CAP_CLUSTER and SMB2_SHARE_CAP_SCALEOUT.
    ScaleOutDisk,
    /// `IPC$`: STYPE_IPC | STYPE_SPECIAL.
    Ipc,
}

/// One share as the services report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareEntry {
    /// The share name as configured (matched case-insensitively).
    pub name: String,
    /// The remark shown next to the name.
    pub comment: String,
    /// Disk share or `IPC$`.
    pub kind: ShareKind,
    /// The local path in Windows form (`C:\srv\x`), or empty.
    pub path: String,
    /// Listed by NetrShareEnum; unlisted shares are still found by NetrShareGetInfo.
    pub browseable: bool,
}

/// SID_NAME_USE (MS-LSAT 2.2.13): what a name or SID stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum SidType {
    User = 1,
    Group = 2,
    Domain = 3,
    Alias = 4,
    WellKnownGroup = 5,
    DeletedAccount = 6,
    Invalid = 7,
    Unknown = 8,
    Computer = 9,
    Label = 10,
}

/// The user on whose behalf the pipe was opened (the SMB2 session's identity).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerInfo {
    /// The account name.
    pub user: String,
    /// The account's domain.
    pub domain: String,
    /// S-1-5-7 for anonymous sessions, which get less (see `docs/rpc.md`).
    pub sid: Sid,
}

impl CallerInfo {
    /// Whether the session is anonymous (S-1-5-7).
    pub fn is_anonymous(&self) -> bool {
        self.sid == Sid::ANONYMOUS
    }
}

/// The server's live data, asked again on every call so that configuration changes show at
/// once.
pub trait Directory: Send + Sync {
    /// The server's names and version.
    fn server_info(&self) -> ServerInfo;
    /// Every share, including `IPC$` and unlisted ones, in the order they are listed.
    fn shares(&self) -> Vec<ShareEntry>;
    /// Resolves an account, group or domain name given without a domain prefix (matched
    /// case-insensitively): its SID, its type and the name of the domain it belongs to.
    /// Looking up the NetBIOS name must give the account domain SID with [`SidType::Domain`].
    fn lookup_name(&self, name: &str) -> Option<(Sid, SidType, String)>;
    /// Resolves a SID: its name, type and domain name.
    fn lookup_sid(&self, sid: &Sid) -> Option<(String, SidType, String)>;
    /// Called before a lookup translates `sids` one by one, so that a directory that asks
    /// elsewhere (a member's DC) asks once for all of them.
    fn prepare_sids(&self, _sids: &[Sid]) {}
    /// As [`Directory::prepare_sids`], for the names of a lookup.
    fn prepare_names(&self, _names: &[String]) {}

    /// Changes a user's password if the request proves the old one (samr's
    /// SamrUnicodeChangePasswordUser2), and answers with the call's status: STATUS_SUCCESS
    /// once the change is stored, STATUS_WRONG_PASSWORD for a wrong old password and equally
    /// for an unknown or disabled account. A directory without a user database refuses.
    fn change_password(&self, _request: &PasswordChangeRequest) -> smb3d_dtyp::NtStatus {
        smb3d_dtyp::NtStatus::ACCESS_DENIED
    }
}

/// A password change as SamrUnicodeChangePasswordUser2 carries it (MS-SAMR 3.1.5.10.3).
#[derive(Clone, PartialEq, Eq)]
pub struct PasswordChangeRequest {
    /// The account name as the client sent it.
    pub user: String,
    /// NewPasswordEncryptedWithOldNt (SAMPR_ENCRYPTED_USER_PASSWORD, MS-SAMR 2.2.6.21).
    pub new_password_encrypted: [u8; 516],
    /// OldNtOwfPasswordEncryptedWithNewNt (ENCRYPTED_NT_OWF_PASSWORD, MS-SAMR 2.2.7.3).
    pub old_nt_hash_encrypted: [u8; 16],
}

impl core::fmt::Debug for PasswordChangeRequest {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PasswordChangeRequest")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// The pipes this crate serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PipeKind {
    Srvsvc,
    Wkssvc,
    Lsarpc,
    Samr,
}

/// Maps a pipe name as a client opens it (`srvsvc`, `\PIPE\srvsvc`, any case) to the service.
/// `lsass` is the same endpoint as `lsarpc`, as on Windows.
pub(crate) fn pipe_kind(name: &str) -> Option<PipeKind> {
    let name = name.strip_prefix('\\').unwrap_or(name);
    let name = match name.get(..5) {
        Some(prefix) if prefix.eq_ignore_ascii_case("pipe\\") => name.get(5..).unwrap_or(""),
        _ => name,
    };
    [
        ("srvsvc", PipeKind::Srvsvc),
        ("wkssvc", PipeKind::Wkssvc),
        ("lsarpc", PipeKind::Lsarpc),
        ("lsass", PipeKind::Lsarpc),
        ("samr", PipeKind::Samr),
    ]
    .into_iter()
    .find(|(n, _)| n.eq_ignore_ascii_case(name))
    .map(|(_, kind)| kind)
}

/// Whether a named pipe of this name exists on `IPC$` (case-insensitive, with or without a
/// leading `\PIPE\`): `srvsvc`, `wkssvc`, `lsarpc` and its alias `lsass`, and `samr`.
pub fn pipe_exists(name: &str) -> bool {
    pipe_kind(name).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_names() {
        for name in [
            "srvsvc",
            "SRVSVC",
            "\\PIPE\\srvsvc",
            "\\pipe\\SrvSvc",
            "pipe\\wkssvc",
            "lsarpc",
            "LSASS",
            "\\wkssvc",
            "samr",
            "\\PIPE\\SAMR",
        ] {
            assert!(pipe_exists(name), "{name}");
        }
        for name in [
            "",
            "samr2",
            "srvsvc\\",
            "\\PIPE\\",
            "PIPE",
            "netlogon",
            "srvsvc2",
            "\\\\srvsvc",
        ] {
            assert!(!pipe_exists(name), "{name}");
        }
        assert_eq!(pipe_kind("lsass"), Some(PipeKind::Lsarpc));
    }
}
