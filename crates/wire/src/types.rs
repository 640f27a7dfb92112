use core::fmt;

/// A GUID in its wire byte order (MS-DTYP 2.3.4.2).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Guid(pub [u8; 16]);

impl Guid {
    pub const ZERO: Guid = Guid([0; 16]);

    pub fn is_zero(&self) -> bool {
        self.0 == [0; 16]
    }
}

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.0;
        write!(
            f,
            "{:08x}-{:04x}-{:04x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
            u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            u16::from_le_bytes([b[4], b[5]]),
            u16::from_le_bytes([b[6], b[7]]),
            b[8],
            b[9],
            b[10],
            b[11],
            b[12],
            b[13],
            b[14],
            b[15]
        )
    }
}

impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// 100-nanosecond intervals since 1601-01-01 UTC (MS-DTYP 2.3.3).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord, Debug)]
pub struct FileTime(pub u64);

/// The four times of a file, which MS-FSCC and MS-SMB2 structures always carry together and
/// in this order (FILE_BASIC_INFORMATION, directory entries, CREATE and CLOSE responses).
/// The names are those of the wire fields without `Time`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
pub struct FileTimes {
    pub creation: FileTime,
    pub last_access: FileTime,
    pub last_write: FileTime,
    pub change: FileTime,
}

/// Seconds between 1601-01-01 and 1970-01-01.
const UNIX_EPOCH_AS_FILETIME_SECS: i64 = 11_644_473_600;
const TICKS_PER_SEC: i64 = 10_000_000;

impl FileTime {
    /// SET_INFO: "do not change this time".
    pub const UNCHANGED: FileTime = FileTime(0);
    /// SET_INFO: "stop updating this time for the rest of the handle's life".
    pub const SUSPEND_UPDATES: FileTime = FileTime(u64::MAX);
    /// SET_INFO: "resume updating this time".
    pub const RESUME_UPDATES: FileTime = FileTime(u64::MAX - 1);

    /// Converts a Unix time; times before 1601 become 0.
    pub fn from_unix(secs: i64, nanos: u32) -> Self {
        let ticks = secs
            .saturating_add(UNIX_EPOCH_AS_FILETIME_SECS)
            .saturating_mul(TICKS_PER_SEC)
            .saturating_add(i64::from(nanos / 100));
        FileTime(u64::try_from(ticks).unwrap_or(0))
    }

    /// Converts to Unix seconds and nanoseconds (saturating beyond year 292277026596).
    pub fn to_unix(self) -> (i64, u32) {
        let ticks = i64::try_from(self.0).unwrap_or(i64::MAX);
        let secs = ticks.div_euclid(TICKS_PER_SEC) - UNIX_EPOCH_AS_FILETIME_SECS;
        let nanos = u32::try_from(ticks.rem_euclid(TICKS_PER_SEC) * 100).unwrap_or(0);
        (secs, nanos)
    }

    pub fn now() -> Self {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Self::from_unix(
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            d.subsec_nanos(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filetime_unix_round_trip() {
        // 2009-02-13 23:31:30 UTC
        let ft = FileTime::from_unix(1_234_567_890, 123_456_700);
        assert_eq!(ft.0, 128_790_414_901_234_567);
        assert_eq!(ft.to_unix(), (1_234_567_890, 123_456_700));
        assert_eq!(
            FileTime::from_unix(-UNIX_EPOCH_AS_FILETIME_SECS - 1, 0).0,
            0
        );
    }

    #[test]
    fn guid_display_is_mixed_endian() {
        let g = Guid([
            0x33, 0x22, 0x11, 0x00, 0x55, 0x44, 0x77, 0x66, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd,
            0xee, 0xff,
        ]);
        assert_eq!(g.to_string(), "00112233-4455-6677-8899-aabbccddeeff");
    }
}
