#![no_main]
//! Every MS-FSCC structure a QUERY_INFO or SET_INFO buffer carries. The first byte is the
//! SMB2 InfoType (1 file, 2 file system), the second the information class, the rest the
//! buffer; what decodes must re-encode stably.

use libfuzzer_sys::fuzz_target;
use smb3d_fscc::*;
use smb3d_fuzz::stable;

fuzz_target!(|data: &[u8]| {
    let [info_type, class, buf @ ..] = data else {
        return;
    };
    let scratch = &mut Vec::new();
    match (*info_type, FileInformationClass(*class)) {
        (1, FileInformationClass::FILE_BASIC_INFORMATION) => {
            stable::<FileBasicInformation>(buf, scratch)
        }
        (1, FileInformationClass::FILE_STANDARD_INFORMATION) => {
            stable::<FileStandardInformation>(buf, scratch)
        }
        (1, FileInformationClass::FILE_INTERNAL_INFORMATION) => {
            stable::<FileInternalInformation>(buf, scratch)
        }
        (1, FileInformationClass::FILE_EA_INFORMATION) => stable::<FileEaInformation>(buf, scratch),
        (1, FileInformationClass::FILE_ACCESS_INFORMATION) => {
            stable::<FileAccessInformation>(buf, scratch)
        }
        (
            1,
            FileInformationClass::FILE_NAME_INFORMATION
            | FileInformationClass::FILE_ALTERNATE_NAME_INFORMATION
            | FileInformationClass::FILE_NORMALIZED_NAME_INFORMATION,
        ) => stable::<FileNameInformation>(buf, scratch),
        (
            1,
            FileInformationClass::FILE_RENAME_INFORMATION
            | FileInformationClass::FILE_LINK_INFORMATION,
        ) => stable::<FileRenameInformation>(buf, scratch),
        (1, FileInformationClass::FILE_DISPOSITION_INFORMATION) => {
            stable::<FileDispositionInformation>(buf, scratch)
        }
        (1, FileInformationClass::FILE_POSITION_INFORMATION) => {
            stable::<FilePositionInformation>(buf, scratch)
        }
        (1, FileInformationClass::FILE_MODE_INFORMATION) => {
            stable::<FileModeInformation>(buf, scratch)
        }
        (1, FileInformationClass::FILE_ALIGNMENT_INFORMATION) => {
            stable::<FileAlignmentInformation>(buf, scratch)
        }
        (1, FileInformationClass::FILE_ALL_INFORMATION) => {
            stable::<FileAllInformation>(buf, scratch)
        }
        (1, FileInformationClass::FILE_ALLOCATION_INFORMATION) => {
            stable::<FileAllocationInformation>(buf, scratch)
        }
        (1, FileInformationClass::FILE_END_OF_FILE_INFORMATION) => {
            stable::<FileEndOfFileInformation>(buf, scratch)
        }
        (1, FileInformationClass::FILE_PIPE_INFORMATION) => {
            stable::<FilePipeInformation>(buf, scratch)
        }
        (1, FileInformationClass::FILE_PIPE_LOCAL_INFORMATION) => {
            stable::<FilePipeLocalInformation>(buf, scratch)
        }
        (1, FileInformationClass::FILE_COMPRESSION_INFORMATION) => {
            stable::<FileCompressionInformation>(buf, scratch)
        }
        (1, FileInformationClass::FILE_NETWORK_OPEN_INFORMATION) => {
            stable::<FileNetworkOpenInformation>(buf, scratch)
        }
        (1, FileInformationClass::FILE_ATTRIBUTE_TAG_INFORMATION) => {
            stable::<FileAttributeTagInformation>(buf, scratch)
        }
        (1, FileInformationClass::FILE_VALID_DATA_LENGTH_INFORMATION) => {
            stable::<FileValidDataLengthInformation>(buf, scratch)
        }
        (1, FileInformationClass::FILE_ID_INFORMATION) => stable::<FileIdInformation>(buf, scratch),
        (1, FileInformationClass::FILE_DISPOSITION_INFORMATION_EX) => {
            stable::<FileDispositionInformationEx>(buf, scratch)
        }
        (1, FileInformationClass::FILE_RENAME_INFORMATION_EX) => {
            stable::<FileRenameInformationEx>(buf, scratch)
        }
        (1, FileInformationClass::FILE_LINK_INFORMATION_EX) => {
            stable::<FileLinkInformationEx>(buf, scratch)
        }
        (2, _) => match FsInformationClass(*class) {
            FsInformationClass::FILE_FS_VOLUME_INFORMATION => {
                stable::<FileFsVolumeInformation>(buf, scratch)
            }
            FsInformationClass::FILE_FS_LABEL_INFORMATION => {
                stable::<FileFsLabelInformation>(buf, scratch)
            }
            FsInformationClass::FILE_FS_SIZE_INFORMATION => {
                stable::<FileFsSizeInformation>(buf, scratch)
            }
            FsInformationClass::FILE_FS_DEVICE_INFORMATION => {
                stable::<FileFsDeviceInformation>(buf, scratch)
            }
            FsInformationClass::FILE_FS_ATTRIBUTE_INFORMATION => {
                stable::<FileFsAttributeInformation>(buf, scratch)
            }
            FsInformationClass::FILE_FS_CONTROL_INFORMATION => {
                stable::<FileFsControlInformation>(buf, scratch)
            }
            FsInformationClass::FILE_FS_FULL_SIZE_INFORMATION => {
                stable::<FileFsFullSizeInformation>(buf, scratch)
            }
            FsInformationClass::FILE_FS_OBJECT_ID_INFORMATION => {
                stable::<FileFsObjectIdInformation>(buf, scratch)
            }
            FsInformationClass::FILE_FS_SECTOR_SIZE_INFORMATION => {
                stable::<FileFsSectorSizeInformation>(buf, scratch)
            }
            _ => {}
        },
        _ => {}
    }
});
