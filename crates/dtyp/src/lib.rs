//! MS-DTYP data types shared by the protocol crates: NTSTATUS, access masks, SIDs, ACLs and
//! security descriptors with access checks and inheritance, and Samba's xattr formats for
//! DOS attributes and NT ACLs.
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

mod access;
mod access_check;
mod acl;
pub mod idmap;
mod inherit;
pub mod samba;
mod security_descriptor;
mod sid;
mod status;

pub use access::AccessMask;
pub use access_check::{AccessDenied, Privileges, Token, access_check, maximum_allowed};
pub use acl::{Ace, AceBody, AceFlags, AceType, Acl, AclRevision};
pub use inherit::inherit;
pub use security_descriptor::{SD_HEADER_LEN, SdControl, SecurityDescriptor, SecurityInformation};
pub use sid::{MAX_SUB_AUTHORITIES, ParseSidError, Sid};
pub use status::NtStatus;
