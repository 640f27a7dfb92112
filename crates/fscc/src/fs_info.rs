//! File-system information classes for QUERY_INFO and SET_INFO with SMB2_0_INFO_FILESYSTEM
//! (MS-FSCC 2.5).

use smb3d_wire::{FileTime, Guid, Reader, Result, Writer};

use crate::attributes::{
    DeviceCharacteristics, DeviceType, FsAttributes, FsControlFlags, SectorSizeFlags,
};
use crate::name::{read_utf16, utf16_len_u32};

/// FILE_FS_VOLUME_INFORMATION (MS-FSCC 2.5, FileFsVolumeInformation).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileFsVolumeInformation {
    pub volume_creation_time: FileTime,
    pub volume_serial_number: u32,
    pub supports_objects: bool,
    pub volume_label: String,
}

impl FileFsVolumeInformation {
    /// Size of everything before the label's characters.
    pub const FIXED_SIZE: usize = 18;

    fn write(&self, w: &mut Writer<'_>) {
        w.filetime(self.volume_creation_time)
            .u32(self.volume_serial_number)
            .u32(utf16_len_u32(&self.volume_label))
            .u8(self.supports_objects.into())
            .u8(0);
        w.utf16(&self.volume_label);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let volume_creation_time = r.filetime("VolumeCreationTime")?;
        let volume_serial_number = r.u32("VolumeSerialNumber")?;
        let label_len = r.u32("VolumeLabelLength")?;
        let supports_objects = r.u8("SupportsObjects")? != 0;
        r.skip(1, "Reserved")?;
        Ok(Self {
            volume_creation_time,
            volume_serial_number,
            supports_objects,
            volume_label: read_utf16(r, label_len, "VolumeLabel")?,
        })
    }
}
whole_struct_codec!(FileFsVolumeInformation);

/// FILE_FS_LABEL_INFORMATION (MS-FSCC 2.5, FileFsLabelInformation), sent by SET_INFO.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileFsLabelInformation {
    pub volume_label: String,
}

impl FileFsLabelInformation {
    fn write(&self, w: &mut Writer<'_>) {
        w.u32(utf16_len_u32(&self.volume_label));
        w.utf16(&self.volume_label);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let len = r.u32("VolumeLabelLength")?;
        Ok(Self {
            volume_label: read_utf16(r, len, "VolumeLabel")?,
        })
    }
}
whole_struct_codec!(FileFsLabelInformation);

/// FILE_FS_SIZE_INFORMATION (MS-FSCC 2.5, FileFsSizeInformation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileFsSizeInformation {
    pub total_allocation_units: u64,
    pub available_allocation_units: u64,
    pub sectors_per_allocation_unit: u32,
    pub bytes_per_sector: u32,
}

impl FileFsSizeInformation {
    /// Wire size.
    pub const SIZE: usize = 24;

    fn write(&self, w: &mut Writer<'_>) {
        w.u64(self.total_allocation_units)
            .u64(self.available_allocation_units)
            .u32(self.sectors_per_allocation_unit)
            .u32(self.bytes_per_sector);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            total_allocation_units: r.u64("TotalAllocationUnits")?,
            available_allocation_units: r.u64("AvailableAllocationUnits")?,
            sectors_per_allocation_unit: r.u32("SectorsPerAllocationUnit")?,
            bytes_per_sector: r.u32("BytesPerSector")?,
        })
    }
}
whole_struct_codec!(FileFsSizeInformation);

/// FILE_FS_FULL_SIZE_INFORMATION (MS-FSCC 2.5, FileFsFullSizeInformation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileFsFullSizeInformation {
    pub total_allocation_units: u64,
    pub caller_available_allocation_units: u64,
    pub actual_available_allocation_units: u64,
    pub sectors_per_allocation_unit: u32,
    pub bytes_per_sector: u32,
}

impl FileFsFullSizeInformation {
    /// Wire size.
    pub const SIZE: usize = 32;

    fn write(&self, w: &mut Writer<'_>) {
        w.u64(self.total_allocation_units)
            .u64(self.caller_available_allocation_units)
            .u64(self.actual_available_allocation_units)
            .u32(self.sectors_per_allocation_unit)
            .u32(self.bytes_per_sector);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            total_allocation_units: r.u64("TotalAllocationUnits")?,
            caller_available_allocation_units: r.u64("CallerAvailableAllocationUnits")?,
            actual_available_allocation_units: r.u64("ActualAvailableAllocationUnits")?,
            sectors_per_allocation_unit: r.u32("SectorsPerAllocationUnit")?,
            bytes_per_sector: r.u32("BytesPerSector")?,
        })
    }
}
whole_struct_codec!(FileFsFullSizeInformation);

/// FILE_FS_DEVICE_INFORMATION (MS-FSCC 2.5, FileFsDeviceInformation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileFsDeviceInformation {
    pub device_type: DeviceType,
    pub characteristics: DeviceCharacteristics,
}

impl FileFsDeviceInformation {
    /// Wire size.
    pub const SIZE: usize = 8;

    fn write(&self, w: &mut Writer<'_>) {
        w.u32(self.device_type.0).u32(self.characteristics.0);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            device_type: DeviceType(r.u32("DeviceType")?),
            characteristics: DeviceCharacteristics(r.u32("Characteristics")?),
        })
    }
}
whole_struct_codec!(FileFsDeviceInformation);

/// FILE_FS_ATTRIBUTE_INFORMATION (MS-FSCC 2.5, FileFsAttributeInformation).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileFsAttributeInformation {
    pub file_system_attributes: FsAttributes,
    pub maximum_component_name_length: u32,
    pub file_system_name: String,
}

impl FileFsAttributeInformation {
    /// Size of everything before the name's characters.
    pub const FIXED_SIZE: usize = 12;

    fn write(&self, w: &mut Writer<'_>) {
        w.u32(self.file_system_attributes.0)
            .u32(self.maximum_component_name_length)
            .u32(utf16_len_u32(&self.file_system_name));
        w.utf16(&self.file_system_name);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let file_system_attributes = FsAttributes(r.u32("FileSystemAttributes")?);
        let maximum_component_name_length = r.u32("MaximumComponentNameLength")?;
        let len = r.u32("FileSystemNameLength")?;
        Ok(Self {
            file_system_attributes,
            maximum_component_name_length,
            file_system_name: read_utf16(r, len, "FileSystemName")?,
        })
    }
}
whole_struct_codec!(FileFsAttributeInformation);

/// FILE_FS_SECTOR_SIZE_INFORMATION (MS-FSCC 2.5, FileFsSectorSizeInformation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileFsSectorSizeInformation {
    pub logical_bytes_per_sector: u32,
    pub physical_bytes_per_sector_for_atomicity: u32,
    pub physical_bytes_per_sector_for_performance: u32,
    pub file_system_effective_physical_bytes_per_sector_for_atomicity: u32,
    pub flags: SectorSizeFlags,
    pub byte_offset_for_sector_alignment: u32,
    pub byte_offset_for_partition_alignment: u32,
}

impl FileFsSectorSizeInformation {
    /// Wire size.
    pub const SIZE: usize = 28;

    fn write(&self, w: &mut Writer<'_>) {
        w.u32(self.logical_bytes_per_sector)
            .u32(self.physical_bytes_per_sector_for_atomicity)
            .u32(self.physical_bytes_per_sector_for_performance)
            .u32(self.file_system_effective_physical_bytes_per_sector_for_atomicity)
            .u32(self.flags.0)
            .u32(self.byte_offset_for_sector_alignment)
            .u32(self.byte_offset_for_partition_alignment);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            logical_bytes_per_sector: r.u32("LogicalBytesPerSector")?,
            physical_bytes_per_sector_for_atomicity: r.u32("PhysicalBytesPerSectorForAtomicity")?,
            physical_bytes_per_sector_for_performance: r
                .u32("PhysicalBytesPerSectorForPerformance")?,
            file_system_effective_physical_bytes_per_sector_for_atomicity: r
                .u32("FileSystemEffectivePhysicalBytesPerSectorForAtomicity")?,
            flags: SectorSizeFlags(r.u32("Flags")?),
            byte_offset_for_sector_alignment: r.u32("ByteOffsetForSectorAlignment")?,
            byte_offset_for_partition_alignment: r.u32("ByteOffsetForPartitionAlignment")?,
        })
    }
}
whole_struct_codec!(FileFsSectorSizeInformation);

/// FILE_FS_OBJECTID_INFORMATION (MS-FSCC 2.5, FileFsObjectIdInformation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileFsObjectIdInformation {
    pub object_id: Guid,
    pub extended_info: [u8; 48],
}

impl Default for FileFsObjectIdInformation {
    fn default() -> Self {
        Self {
            object_id: Guid::ZERO,
            extended_info: [0; 48],
        }
    }
}

impl FileFsObjectIdInformation {
    /// Wire size.
    pub const SIZE: usize = 64;

    fn write(&self, w: &mut Writer<'_>) {
        w.guid(&self.object_id).bytes(&self.extended_info);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            object_id: r.guid("ObjectId")?,
            extended_info: r.array("ExtendedInfo")?,
        })
    }
}
whole_struct_codec!(FileFsObjectIdInformation);

/// FILE_FS_CONTROL_INFORMATION (MS-FSCC 2.5, FileFsControlInformation), queried and set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileFsControlInformation {
    pub free_space_start_filtering: i64,
    pub free_space_threshold: i64,
    pub free_space_stop_filtering: i64,
    pub default_quota_threshold: u64,
    pub default_quota_limit: u64,
    pub file_system_control_flags: FsControlFlags,
}

impl FileFsControlInformation {
    /// Wire size.
    pub const SIZE: usize = 48;

    fn write(&self, w: &mut Writer<'_>) {
        w.i64(self.free_space_start_filtering)
            .i64(self.free_space_threshold)
            .i64(self.free_space_stop_filtering)
            .u64(self.default_quota_threshold)
            .u64(self.default_quota_limit)
            .u32(self.file_system_control_flags.0)
            .u32(0);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let v = Self {
            free_space_start_filtering: r.i64("FreeSpaceStartFiltering")?,
            free_space_threshold: r.i64("FreeSpaceThreshold")?,
            free_space_stop_filtering: r.i64("FreeSpaceStopFiltering")?,
            default_quota_threshold: r.u64("DefaultQuotaThreshold")?,
            default_quota_limit: r.u64("DefaultQuotaLimit")?,
            file_system_control_flags: FsControlFlags(r.u32("FileSystemControlFlags")?),
        };
        r.skip(4, "Padding")?;
        Ok(v)
    }
}
whole_struct_codec!(FileFsControlInformation);

#[cfg(test)]
mod tests {
    use super::*;
    use smb3d_wire::DecodeErrorKind;

    #[test]
    fn control_information_round_trips_with_zero_padding() {
        let v = FileFsControlInformation {
            free_space_start_filtering: 1,
            free_space_threshold: 2,
            free_space_stop_filtering: 3,
            default_quota_threshold: u64::MAX,
            default_quota_limit: u64::MAX,
            file_system_control_flags: FsControlFlags::QUOTA_TRACK | FsControlFlags::QUOTA_ENFORCE,
        };
        let mut buf = Vec::new();
        v.encode(&mut Writer::new(&mut buf));
        assert_eq!(buf.len(), FileFsControlInformation::SIZE);
        assert_eq!(&buf[40..], &[3, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(FileFsControlInformation::decode(&buf).unwrap(), v);
        assert!(FileFsControlInformation::decode(&buf[..44]).is_err());
    }

    #[test]
    fn label_information_layout() {
        let bytes = [4, 0, 0, 0, b'o', 0, b'k', 0];
        let v = FileFsLabelInformation::decode(&bytes).unwrap();
        assert_eq!(v.volume_label, "ok");
        let mut buf = Vec::new();
        v.encode(&mut Writer::new(&mut buf));
        assert_eq!(buf, bytes);
        let e = FileFsLabelInformation::decode(&[6, 0, 0, 0, b'o', 0]).unwrap_err();
        assert_eq!(e.kind, DecodeErrorKind::Truncated);
    }

    #[test]
    fn volume_label_length_is_bounded_by_the_buffer() {
        let mut bytes = vec![0u8; 18];
        bytes[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = FileFsVolumeInformation::decode(&bytes).unwrap_err();
        assert_eq!(e.kind, DecodeErrorKind::Truncated);
        bytes[12..16].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(
            FileFsVolumeInformation::decode(&bytes)
                .unwrap()
                .volume_label,
            ""
        );
    }
}
