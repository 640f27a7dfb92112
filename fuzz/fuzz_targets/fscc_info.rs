#![no_main]
//! Every MS-FSCC structure a QUERY_INFO or SET_INFO buffer carries. The first byte is the
//! SMB2 InfoType (1 file, 2 file system), the second the information class, the rest the
//! buffer; what decodes must re-encode stably.

use libfuzzer_sys::fuzz_target;
use smb3d_fscc::*;
use smb3d_fuzz::fscc_stable;

fuzz_target!(|data: &[u8]| {
    let [info_type, class, buf @ ..] = data else {
        return;
    };
    match (*info_type, FileInformationClass(*class)) {
        (1, FileInformationClass::FILE_BASIC_INFORMATION) => {
            fscc_stable!(FileBasicInformation, buf)
        }
        (1, FileInformationClass::FILE_STANDARD_INFORMATION) => {
            fscc_stable!(FileStandardInformation, buf)
        }
        (1, FileInformationClass::FILE_INTERNAL_INFORMATION) => {
            fscc_stable!(FileInternalInformation, buf)
        }
        (1, FileInformationClass::FILE_EA_INFORMATION) => fscc_stable!(FileEaInformation, buf),
        (1, FileInformationClass::FILE_ACCESS_INFORMATION) => {
            fscc_stable!(FileAccessInformation, buf)
        }
        (
            1,
            FileInformationClass::FILE_NAME_INFORMATION
            | FileInformationClass::FILE_ALTERNATE_NAME_INFORMATION
            | FileInformationClass::FILE_NORMALIZED_NAME_INFORMATION,
        ) => fscc_stable!(FileNameInformation, buf),
        (
            1,
            FileInformationClass::FILE_RENAME_INFORMATION
            | FileInformationClass::FILE_LINK_INFORMATION,
        ) => fscc_stable!(FileRenameInformation, buf),
        (1, FileInformationClass::FILE_DISPOSITION_INFORMATION) => {
            fscc_stable!(FileDispositionInformation, buf)
        }
        (1, FileInformationClass::FILE_POSITION_INFORMATION) => {
            fscc_stable!(FilePositionInformation, buf)
        }
        (1, FileInformationClass::FILE_MODE_INFORMATION) => fscc_stable!(FileModeInformation, buf),
        (1, FileInformationClass::FILE_ALIGNMENT_INFORMATION) => {
            fscc_stable!(FileAlignmentInformation, buf)
        }
        (1, FileInformationClass::FILE_ALL_INFORMATION) => fscc_stable!(FileAllInformation, buf),
        (1, FileInformationClass::FILE_ALLOCATION_INFORMATION) => {
            fscc_stable!(FileAllocationInformation, buf)
        }
        (1, FileInformationClass::FILE_END_OF_FILE_INFORMATION) => {
            fscc_stable!(FileEndOfFileInformation, buf)
        }
        (1, FileInformationClass::FILE_PIPE_INFORMATION) => fscc_stable!(FilePipeInformation, buf),
        (1, FileInformationClass::FILE_PIPE_LOCAL_INFORMATION) => {
            fscc_stable!(FilePipeLocalInformation, buf)
        }
        (1, FileInformationClass::FILE_COMPRESSION_INFORMATION) => {
            fscc_stable!(FileCompressionInformation, buf)
        }
        (1, FileInformationClass::FILE_NETWORK_OPEN_INFORMATION) => {
            fscc_stable!(FileNetworkOpenInformation, buf)
        }
        (1, FileInformationClass::FILE_ATTRIBUTE_TAG_INFORMATION) => {
            fscc_stable!(FileAttributeTagInformation, buf)
        }
        (1, FileInformationClass::FILE_VALID_DATA_LENGTH_INFORMATION) => {
            fscc_stable!(FileValidDataLengthInformation, buf)
        }
        (1, FileInformationClass::FILE_ID_INFORMATION) => fscc_stable!(FileIdInformation, buf),
        (1, FileInformationClass::FILE_DISPOSITION_INFORMATION_EX) => {
            fscc_stable!(FileDispositionInformationEx, buf)
        }
        (1, FileInformationClass::FILE_RENAME_INFORMATION_EX) => {
            fscc_stable!(FileRenameInformationEx, buf)
        }
        (1, FileInformationClass::FILE_LINK_INFORMATION_EX) => {
            fscc_stable!(FileLinkInformationEx, buf)
        }
        (2, _) => match FsInformationClass(*class) {
            FsInformationClass::FILE_FS_VOLUME_INFORMATION => {
                fscc_stable!(FileFsVolumeInformation, buf)
            }
            FsInformationClass::FILE_FS_LABEL_INFORMATION => {
                fscc_stable!(FileFsLabelInformation, buf)
            }
            FsInformationClass::FILE_FS_SIZE_INFORMATION => {
                fscc_stable!(FileFsSizeInformation, buf)
            }
            FsInformationClass::FILE_FS_DEVICE_INFORMATION => {
                fscc_stable!(FileFsDeviceInformation, buf)
            }
            FsInformationClass::FILE_FS_ATTRIBUTE_INFORMATION => {
                fscc_stable!(FileFsAttributeInformation, buf)
            }
            FsInformationClass::FILE_FS_CONTROL_INFORMATION => {
                fscc_stable!(FileFsControlInformation, buf)
            }
            FsInformationClass::FILE_FS_FULL_SIZE_INFORMATION => {
                fscc_stable!(FileFsFullSizeInformation, buf)
            }
            FsInformationClass::FILE_FS_OBJECT_ID_INFORMATION => {
                fscc_stable!(FileFsObjectIdInformation, buf)
            }
            FsInformationClass::FILE_FS_SECTOR_SIZE_INFORMATION => {
                fscc_stable!(FileFsSectorSizeInformation, buf)
            }
            _ => {}
        },
        _ => {}
    }
});
