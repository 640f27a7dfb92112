//! Golden vectors captured from a reference Samba: every structure decodes to the values the
//! server reported and re-encodes to the same bytes.

#[path = "samba/captures.rs"]
mod captures;

use captures::*;
use smb3d_dtyp::AccessMask;
use smb3d_fscc::*;
use smb3d_wire::{FileTime, Writer};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn encoded(f: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
    let mut buf = Vec::new();
    f(&mut Writer::new(&mut buf));
    buf
}

macro_rules! round_trip {
    ($t:ty, $hex:expr) => {{
        let bytes = hex($hex);
        let v = <$t>::decode(&bytes).unwrap();
        assert_eq!(encoded(|w| v.encode(w)), bytes, stringify!($t));
        v
    }};
}

#[test]
fn file_basic_standard_and_friends() {
    let basic = round_trip!(FileBasicInformation, QUERY_FILE_BASIC);
    assert_eq!(basic.file_attributes, FileAttributes::ARCHIVE);
    assert_eq!(basic.times.creation, basic.times.change);
    assert!(basic.times.creation.to_unix().0 > 1_600_000_000);

    let standard = round_trip!(FileStandardInformation, QUERY_FILE_STANDARD);
    assert_eq!(
        standard,
        FileStandardInformation {
            allocation_size: 8192,
            end_of_file: 11,
            number_of_links: 1,
            delete_pending: false,
            directory: false,
        }
    );
    let dir = round_trip!(FileStandardInformation, QUERY_DIR_STANDARD);
    assert!(dir.directory);

    assert_eq!(
        round_trip!(FileInternalInformation, QUERY_FILE_INTERNAL).index_number,
        0x98_e081
    );
    assert_eq!(round_trip!(FileEaInformation, QUERY_FILE_EA).ea_size, 42);
    assert_eq!(
        round_trip!(FileAccessInformation, QUERY_FILE_ACCESS).access_flags,
        AccessMask::FILE_ALL_ACCESS
    );
    assert_eq!(
        round_trip!(FilePositionInformation, QUERY_FILE_POSITION).current_byte_offset,
        0
    );
    assert_eq!(
        round_trip!(FileModeInformation, QUERY_FILE_MODE).mode,
        FileMode::SYNCHRONOUS_IO_NONALERT
    );
    assert_eq!(
        round_trip!(FileAlignmentInformation, QUERY_FILE_ALIGNMENT).alignment_requirement,
        0
    );
    let compression = round_trip!(FileCompressionInformation, QUERY_FILE_COMPRESSION);
    assert_eq!(compression.compressed_file_size, 11);
    assert_eq!(compression.compression_format, CompressionFormat::NONE);

    let open = round_trip!(FileNetworkOpenInformation, QUERY_FILE_NETWORK_OPEN);
    assert_eq!((open.allocation_size, open.end_of_file), (8192, 11));
    assert_eq!(open.file_attributes, FileAttributes::ARCHIVE);
    assert_eq!(open.times.last_write, basic.times.last_write);

    let tag = round_trip!(FileAttributeTagInformation, QUERY_FILE_ATTRIBUTE_TAG);
    assert_eq!(
        (tag.file_attributes, tag.reparse_tag),
        (FileAttributes::ARCHIVE, 0)
    );
}

#[test]
fn file_names() {
    let name = round_trip!(FileNameInformation, QUERY_FILE_NAME);
    assert_eq!(name.file_name, "\\dir\\file.txt");
    let alt = round_trip!(FileNameInformation, QUERY_FILE_ALTERNATE_NAME);
    assert_eq!(alt.file_name, "file.txt");
    let normalized = round_trip!(FileNameInformation, QUERY_FILE_NORMALIZED_NAME);
    assert_eq!(normalized.file_name, "dir\\file.txt");
}

#[test]
fn file_all_information_is_the_parts_back_to_back() {
    let all = round_trip!(FileAllInformation, QUERY_FILE_ALL);
    assert_eq!(
        all.basic,
        FileBasicInformation::decode(&hex(QUERY_FILE_BASIC)).unwrap()
    );
    assert_eq!(all.standard.end_of_file, 11);
    assert_eq!(all.internal.index_number, 0x98_e081);
    assert_eq!(all.ea.ea_size, 42);
    assert_eq!(all.access.access_flags, AccessMask::FILE_ALL_ACCESS);
    assert_eq!(all.mode.mode, FileMode::SYNCHRONOUS_IO_NONALERT);
    assert_eq!(all.name.file_name, "\\dir\\file.txt");
    assert_eq!(
        hex(QUERY_FILE_ALL).len(),
        FileAllInformation::FIXED_SIZE + 26
    );

    let dir = round_trip!(FileAllInformation, QUERY_DIR_ALL);
    assert!(dir.standard.directory);
    assert_eq!(dir.basic.file_attributes, FileAttributes::DIRECTORY);
    assert_eq!(dir.name.file_name, "\\dir");
}

#[test]
fn stream_lists_decode_and_re_encode() {
    for capture in [QUERY_FILE_STREAM, QUERY_STREAM_UNNAMED_ONLY] {
        let bytes = hex(capture);
        let entries: Vec<_> = file_stream_list(&bytes).map(|e| e.unwrap()).collect();
        let again = encoded(|w| {
            let mut list = StreamListEncoder::new(w, bytes.len());
            for e in &entries {
                assert!(list.push(w, &e.stream_name, e.stream_size, e.stream_allocation_size));
            }
        });
        assert_eq!(again, bytes);
    }
    let bytes = hex(QUERY_FILE_STREAM);
    let names: Vec<_> = file_stream_list(&bytes)
        .map(|e| e.unwrap())
        .map(|e| (e.stream_name, e.stream_size))
        .collect();
    assert_eq!(
        names,
        [
            (":stream1:$DATA".to_string(), 11),
            ("::$DATA".to_string(), 11)
        ]
    );
}

#[test]
fn full_ea_lists_decode_and_re_encode() {
    for capture in [QUERY_FILE_FULL_EA, SET_FULL_EA] {
        let bytes = hex(capture);
        let eas: Vec<_> = full_ea_list(&bytes).map(|e| e.unwrap()).collect();
        assert_eq!(eas.len(), 2);
        assert_eq!((eas[0].name, eas[0].value), (&b"EA1"[..], &b"value1"[..]));
        assert_eq!(
            (eas[1].name, eas[1].value),
            (&b"LongerEaName"[..], &b"x"[..])
        );
        assert!(eas.iter().all(|e| e.flags.is_empty()));
        let again = encoded(|w| {
            let mut list = FullEaListEncoder::new(w, usize::MAX);
            for e in &eas {
                assert!(list.push(w, e));
            }
        });
        assert_eq!(again, bytes);
    }
}

#[test]
fn get_ea_query_input_and_its_answer() {
    let input = hex(QUERY_GET_EA_INPUT);
    let names: Vec<_> = get_ea_list(&input).map(|e| e.unwrap().name).collect();
    assert_eq!(names, [&b"EA1"[..]]);
    assert_eq!(
        encoded(|w| assert!(encode_get_ea_list(w, names.iter().copied()))),
        input
    );
    // Samba answers with every EA even when one is named.
    let out = hex(QUERY_GET_EA_OUTPUT);
    assert_eq!(full_ea_list(&out).count(), 2);
}

#[test]
fn file_system_classes() {
    let volume = round_trip!(FileFsVolumeInformation, QUERY_FS_VOLUME);
    assert_eq!(volume.volume_serial_number, 0xead6_3c3d);
    assert_eq!(volume.volume_label, "share");
    assert!(!volume.supports_objects);

    let size = round_trip!(FileFsSizeInformation, QUERY_FS_SIZE);
    assert_eq!(
        (size.sectors_per_allocation_unit, size.bytes_per_sector),
        (2, 512)
    );
    assert!(size.available_allocation_units <= size.total_allocation_units);

    let full = round_trip!(FileFsFullSizeInformation, QUERY_FS_FULL_SIZE);
    assert_eq!(full.total_allocation_units, size.total_allocation_units);

    let device = round_trip!(FileFsDeviceInformation, QUERY_FS_DEVICE);
    assert_eq!(device.device_type, DeviceType::DISK);
    assert_eq!(
        device.characteristics,
        DeviceCharacteristics::DEVICE_IS_MOUNTED
    );

    let attr = round_trip!(FileFsAttributeInformation, QUERY_FS_ATTRIBUTE);
    assert_eq!(attr.file_system_name, "NTFS");
    assert_eq!(attr.maximum_component_name_length, 255);
    assert!(attr.file_system_attributes.contains(
        FsAttributes::CASE_SENSITIVE_SEARCH
            | FsAttributes::CASE_PRESERVED_NAMES
            | FsAttributes::UNICODE_ON_DISK
            | FsAttributes::PERSISTENT_ACLS
            | FsAttributes::NAMED_STREAMS
    ));

    round_trip!(FileFsObjectIdInformation, QUERY_FS_OBJECT_ID);

    let sector = round_trip!(FileFsSectorSizeInformation, QUERY_FS_SECTOR_SIZE);
    assert_eq!(sector.logical_bytes_per_sector, 512);
    assert_eq!(
        sector.flags,
        SectorSizeFlags::ALIGNED_DEVICE | SectorSizeFlags::PARTITION_ALIGNED_ON_DEVICE
    );
}

#[test]
fn set_info_requests() {
    let setmode = round_trip!(FileBasicInformation, SET_BASIC_SETMODE);
    assert_eq!(setmode.times.creation, FileTime::SUSPEND_UPDATES);
    assert_eq!(setmode.times.last_write, FileTime::UNCHANGED);
    assert_eq!(
        setmode.file_attributes,
        FileAttributes::READONLY | FileAttributes::HIDDEN | FileAttributes::ARCHIVE
    );
    let basic = round_trip!(FileBasicInformation, SET_BASIC);
    assert_eq!(basic.times.last_write, FileTime(132_000_000_000_000_000));

    assert_eq!(
        round_trip!(FilePositionInformation, SET_POSITION).current_byte_offset,
        5
    );
    assert_eq!(
        round_trip!(FileModeInformation, SET_MODE).mode,
        FileMode::empty()
    );
    assert_eq!(
        round_trip!(FileEndOfFileInformation, SET_END_OF_FILE).end_of_file,
        20
    );
    assert_eq!(
        round_trip!(FileAllocationInformation, SET_ALLOCATION).allocation_size,
        4096
    );
    assert!(round_trip!(FileDispositionInformation, SET_DISPOSITION).delete_pending);

    let rename = round_trip!(FileRenameInformation, SET_RENAME);
    assert_eq!(
        rename,
        FileRenameInformation {
            replace_if_exists: false,
            root_directory: 0,
            file_name: "renamed3.txt".into(),
        }
    );
    let link = round_trip!(FileLinkInformation, SET_LINK);
    assert_eq!(link.file_name, "\\dir\\link2.txt");
}

fn listing(class: u8, capture: &str) -> (Vec<u8>, Vec<DirEntryBuf>) {
    let bytes = hex(capture);
    let entries = dir_list(FileInformationClass(class), &bytes)
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    (bytes, entries)
}

fn re_encode(class: u8, entries: &[DirEntryBuf], limit: usize) -> Vec<u8> {
    encoded(|w| {
        let mut list = DirListEncoder::new(FileInformationClass(class), w, limit).unwrap();
        for e in entries {
            if !list.push(w, &e.as_entry()) {
                break;
            }
        }
    })
}

#[test]
fn directory_listings_decode_and_re_encode() {
    for (class, capture) in [
        (1, DIR_CLASS_1),
        (2, DIR_CLASS_2),
        (3, DIR_CLASS_3),
        (12, DIR_CLASS_12),
        (37, DIR_CLASS_37),
        (38, DIR_CLASS_38),
    ] {
        let (bytes, entries) = listing(class, capture);
        let mut names: Vec<_> = entries.iter().map(|e| e.name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                ".",
                "..",
                "LongFileName With Spaces.txt",
                "file.txt",
                "subdir",
                "\u{fc}n\u{ef}c\u{f6}d\u{e9}.txt"
            ],
            "class {class}"
        );
        assert_eq!(re_encode(class, &entries, 65536), bytes, "class {class}");
        if class == 12 {
            continue;
        }
        let file = entries.iter().find(|e| e.name == "file.txt").unwrap();
        assert_eq!(file.end_of_file, 11);
        assert_eq!(file.file_attributes, FileAttributes::ARCHIVE);
        let subdir = entries.iter().find(|e| e.name == "subdir").unwrap();
        assert!(subdir.file_attributes.contains(FileAttributes::DIRECTORY));
        if class != 1 {
            assert_eq!(file.ea_size, 42, "class {class}");
        }
        if class == 37 || class == 38 {
            assert_eq!(file.file_id, 0x98_e081);
        }
        // Samba mangles only names that are illegal in 8.3 form ("mangled names = illegal").
        assert!(entries.iter().all(|e| e.short_name.is_empty()));
    }
}

#[test]
fn directory_listing_stops_where_samba_does() {
    let (_, entries) = listing(37, DIR_CLASS_37);
    let limited = hex(DIR_CLASS_37_LIMIT_200);
    assert_eq!(re_encode(37, &entries, 200), limited);
    assert_eq!(
        dir_list(FileInformationClass(37), &limited)
            .unwrap()
            .count(),
        1
    );
}

#[test]
fn dos_star_pattern_selects_what_samba_selected() {
    let (_, all) = listing(37, DIR_CLASS_37);
    let (_, selected) = listing(37, DIR_CLASS_37_DOS_STAR);
    let expr = Expression::new("<.TXT", true);
    let ours: Vec<_> = all.iter().filter(|e| expr.matches(&e.name)).collect();
    let mut ours: Vec<_> = ours.iter().map(|e| e.name.as_str()).collect();
    let mut theirs: Vec<_> = selected.iter().map(|e| e.name.as_str()).collect();
    ours.sort_unstable();
    theirs.sort_unstable();
    assert_eq!(ours, theirs);
}
