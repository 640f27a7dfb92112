//! MS-FSCC information classes for SMB2 QUERY_INFO, SET_INFO and QUERY_DIRECTORY: file and
//! file-system structures, directory listings, stream and EA lists, FSCTL bodies, and the
//! MS-FSA wildcard matcher.
//!
//! Decoders take peer bytes and never panic; lists are walked through a checked
//! NextEntryOffset iterator. Encoders append to a [`smb3d_wire::Writer`].
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

/// Gives a structure with private `write` and `read` the public `encode` and `decode`, and
/// so [`smb3d_wire::Codec`].
macro_rules! whole_struct_codec {
    ($t:ty) => {
        impl $t {
            /// Appends the wire form.
            pub fn encode(&self, w: &mut smb3d_wire::Writer<'_>) {
                self.write(w);
            }

            /// Parses the wire form; bytes after it are ignored.
            pub fn decode(buf: &[u8]) -> smb3d_wire::Result<Self> {
                Self::read(&mut smb3d_wire::Reader::new(buf))
            }
        }
        smb3d_wire::impl_codec!($t);
    };
}

mod attributes;
mod class;
mod dir;
mod ea;
mod file_info;
mod fs_info;
mod fsctl;
mod list;
mod name;
mod notify;
pub mod posix;
mod quota;
mod stream;
mod wildcard;

pub use attributes::{
    CompressionFormat, DeviceCharacteristics, DeviceType, DispositionFlags, EaFlags,
    FileAttributes, FileMode, FsAttributes, FsControlFlags, LinkFlags, RenameFlags,
    SectorSizeFlags,
};
pub use class::{
    FileInformationClass, FsInformationClass, OutputFit, OutputSize, UnsupportedClass,
};
pub use dir::{DirEntry, DirEntryBuf, DirListEncoder, MacDirAttr, dir_entry_fixed_size, dir_list};
pub use ea::{FullEa, FullEaListEncoder, GetEa, encode_get_ea_list, full_ea_list, get_ea_list};
pub use file_info::*;
pub use fs_info::*;
pub use fsctl::*;
pub use list::EntryIter;
pub use notify::{NotifyAction, NotifyEntry, NotifyListEncoder, notify_entry_len, notify_list};
pub use quota::{
    QueryQuotaInfo, QuotaEntry, QuotaListEncoder, QuotaSelection, encode_get_quota_list,
    get_quota_list, quota_list,
};
pub use stream::{FileStreamEntry, StreamListEncoder, file_stream_list};
pub use wildcard::{Expression, has_wildcards, is_name_in_expression};
