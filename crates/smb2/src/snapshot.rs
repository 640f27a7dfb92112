//! Previous versions: the @GMT token that names a snapshot (MS-SMB2 2.2.32.2, the form
//! `@GMT-YYYY.MM.DD-HH.MM.SS` in UTC) and SRV_SNAPSHOT_ARRAY, the FSCTL_SRV_ENUMERATE_SNAPSHOTS
//! answer (MS-SMB2 2.2.32.2, 3.3.5.15.1).

use std::fmt;

use smb3d_wire::{DecodeError, DecodeErrorKind, FileTime, Reader, Result, Writer};

/// The moment a snapshot was taken, to the second, as its @GMT token names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GmtToken {
    /// Seconds since 1970-01-01 UTC.
    unix_secs: i64,
}

/// Seconds in a day.
const DAY: i64 = 86_400;
/// The years a token may name: FILETIME starts in 1601, and the format has four digits.
const YEARS: std::ops::RangeInclusive<i64> = 1601..=9999;

impl GmtToken {
    /// Length of a token in characters (and bytes: it is ASCII).
    pub const LEN: usize = 24;
    /// Its length in a SRV_SNAPSHOT_ARRAY: UTF-16 with a terminating null.
    pub const WIRE_LEN: usize = (Self::LEN + 1) * 2;

    /// Parses a token; anything but exactly `@GMT-YYYY.MM.DD-HH.MM.SS` naming a real moment
    /// (month 1-12, a day the month has, hours below 24, minutes and seconds below 60, years
    /// 1601-9999) is `None`.
    pub fn parse(text: &str) -> Option<Self> {
        let b = text.as_bytes();
        if b.len() != Self::LEN || !text.starts_with("@GMT-") {
            return None;
        }
        let separators = [(9, b'.'), (12, b'.'), (15, b'-'), (18, b'.'), (21, b'.')];
        if separators.iter().any(|&(at, c)| b.get(at) != Some(&c)) {
            return None;
        }
        let number = |from: usize, len: usize| -> Option<i64> {
            let digits = b.get(from..from + len)?;
            digits.iter().try_fold(0i64, |n, &d| {
                d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0'))
            })
        };
        let year = number(5, 4)?;
        let month = number(10, 2)?;
        let day = number(13, 2)?;
        let (hour, minute, second) = (number(16, 2)?, number(19, 2)?, number(22, 2)?);
        let valid = YEARS.contains(&year)
            && (1..=12).contains(&month)
            && (1..=days_in_month(year, month)).contains(&day)
            && hour < 24
            && minute < 60
            && second < 60;
        valid.then(|| Self {
            unix_secs: days_from_civil(year, month, day) * DAY + hour * 3600 + minute * 60 + second,
        })
    }

    /// The snapshot a TWrp timestamp names (MS-SMB2 2.2.13.2.7): its second; `None` outside
    /// the years a token can write.
    pub fn from_filetime(time: FileTime) -> Option<Self> {
        let (secs, _) = time.to_unix();
        let token = Self { unix_secs: secs };
        YEARS.contains(&token.civil().0).then_some(token)
    }

    /// The token's moment as a FILETIME.
    pub fn filetime(self) -> FileTime {
        FileTime::from_unix(self.unix_secs, 0)
    }

    /// Seconds since 1970-01-01 UTC.
    pub fn unix_secs(self) -> i64 {
        self.unix_secs
    }

    /// (year, month, day, hour, minute, second).
    fn civil(self) -> (i64, i64, i64, i64, i64, i64) {
        let days = self.unix_secs.div_euclid(DAY);
        let rest = self.unix_secs.rem_euclid(DAY);
        let (year, month, day) = civil_from_days(days);
        (year, month, day, rest / 3600, rest % 3600 / 60, rest % 60)
    }
}

impl fmt::Display for GmtToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (year, month, day, hour, minute, second) = self.civil();
        write!(
            f,
            "@GMT-{year:04}.{month:02}.{day:02}-{hour:02}.{minute:02}.{second:02}"
        )
    }
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (eras of 400 years, March-based years
/// so that the leap day ends a year).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let march_month = (month + 9) % 12;
    let day_of_year = (153 * march_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The inverse of [`days_from_civil`].
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let march_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * march_month + 2) / 5 + 1;
    let month = if march_month < 10 {
        march_month + 3
    } else {
        march_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// SRV_SNAPSHOT_ARRAY (MS-SMB2 2.2.32.2): how many snapshots there are and, when the client's
/// buffer holds them all, their tokens (newest first, as the server lists them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotArray {
    pub number_of_snapshots: u32,
    /// The tokens returned; empty when they did not fit.
    pub tokens: Vec<GmtToken>,
    /// SnapShotArraySize: the bytes the whole array takes (or would take).
    pub array_size: u32,
}

impl SnapshotArray {
    /// The fixed fields.
    pub const HEADER_LEN: usize = 12;
    /// The smallest MaxOutputResponse a server answers (MS-SMB2 3.3.5.15.1), and the size of
    /// an answer that carries only the counts.
    pub const MIN_OUTPUT: usize = 16;

    /// Writes the answer for `tokens` (every snapshot the share has) into at most
    /// `max_output` bytes (MS-SMB2 3.3.5.15.1): all of them when they fit, else only the
    /// counts and the size they need. `max_output` below [`Self::MIN_OUTPUT`] is the caller's
    /// STATUS_INVALID_PARAMETER.
    pub fn encode_for(tokens: &[GmtToken], max_output: usize, w: &mut Writer<'_>) {
        let needed = Self::array_size(tokens.len());
        let count = u32::try_from(tokens.len()).unwrap_or(u32::MAX);
        let size = u32::try_from(needed).unwrap_or(u32::MAX);
        let fits = Self::HEADER_LEN.saturating_add(needed) <= max_output;
        w.u32(count).u32(if fits { count } else { 0 }).u32(size);
        if !fits {
            // What the fixed part leaves of the 16 bytes, as Windows and Samba fill it.
            w.u32(0);
            return;
        }
        let mut text = [0u8; GmtToken::LEN];
        for token in tokens {
            let mut cursor = std::io::Cursor::new(&mut text[..]);
            let _ = std::io::Write::write_fmt(&mut cursor, format_args!("{token}"));
            for &c in &text {
                w.u16(u16::from(c));
            }
            w.u16(0);
        }
        w.u16(0);
    }

    /// The SnapShotArraySize of `count` tokens: each null-terminated, then one more null.
    pub fn array_size(count: usize) -> usize {
        count.saturating_mul(GmtToken::WIRE_LEN).saturating_add(2)
    }

    /// Parses an answer (as a client reads it); the tokens must be well-formed and as many as
    /// NumberOfSnapShotsReturned says, and the array as long as SnapShotArraySize.
    pub fn decode(buf: &[u8]) -> Result<Self> {
        let mut r = Reader::new(buf);
        let number_of_snapshots = r.u32("NumberOfSnapShots")?;
        let returned = r.u32("NumberOfSnapShotsReturned")?;
        let array_size = r.u32("SnapShotArraySize")?;
        let bad = |field| DecodeError::new(field, DecodeErrorKind::InvalidValue);
        if returned == 0 {
            return Ok(Self {
                number_of_snapshots,
                tokens: Vec::new(),
                array_size,
            });
        }
        if returned > number_of_snapshots
            || usize::try_from(array_size).ok() != Some(Self::array_size(returned as usize))
        {
            return Err(bad("SnapShotArraySize"));
        }
        let array = r.bytes(array_size as usize, "SnapShots")?;
        let mut tokens = Vec::new();
        for entry in array.chunks(GmtToken::WIRE_LEN).take(returned as usize) {
            let units: Vec<u16> = entry
                .chunks_exact(2)
                .map(|c| match c {
                    &[lo, hi] => u16::from_le_bytes([lo, hi]),
                    _ => 0,
                })
                .collect();
            let Some((&0, text)) = units.split_last() else {
                return Err(bad("SnapShots"));
            };
            let text = String::from_utf16(text).map_err(|_| bad("SnapShots"))?;
            tokens.push(GmtToken::parse(&text).ok_or_else(|| bad("SnapShots"))?);
        }
        if !array.ends_with(&[0, 0]) {
            return Err(bad("SnapShots"));
        }
        Ok(Self {
            number_of_snapshots,
            tokens,
            array_size,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::hex;

    fn encoded(tokens: &[GmtToken], max: usize) -> Vec<u8> {
        let mut out = Vec::new();
        SnapshotArray::encode_for(tokens, max, &mut Writer::new(&mut out));
        out
    }

    fn token(text: &str) -> GmtToken {
        GmtToken::parse(text).unwrap()
    }

    // FSCTL_SRV_ENUMERATE_SNAPSHOTS answers of Samba 4.17 (vfs_shadow_copy2) for a share with
    // snapshots @GMT-2016.01.02-03.04.05 and @GMT-2015.10.31-19.40.30: MaxOutputResponse
    // 65536, then 16 (only the counts); and for a share with none (65536).
    const SAMBA_TWO: &str = "
        020000000200000066000000400047004d0054002d0032003000310036002e00300031002e00300032002d0030
        0033002e00300034002e00300035000000400047004d0054002d0032003000310035002e00310030002e003300
        31002d00310039002e00340030002e003300300000000000";
    const SAMBA_COUNTS: &str = "02000000000000006600000000000000";
    const SAMBA_NONE: &str = "0000000000000000020000000000";

    #[test]
    fn samba_answers() {
        let two = [
            token("@GMT-2016.01.02-03.04.05"),
            token("@GMT-2015.10.31-19.40.30"),
        ];
        assert_eq!(encoded(&two, 65536), hex(SAMBA_TWO));
        assert_eq!(encoded(&two, 114), hex(SAMBA_TWO));
        assert_eq!(encoded(&two, 16), hex(SAMBA_COUNTS));
        // Between 16 and what the array needs, the spec's counts (Samba: BUFFER_TOO_SMALL).
        assert_eq!(encoded(&two, 113), hex(SAMBA_COUNTS));
        assert_eq!(encoded(&[], 65536), hex(SAMBA_NONE));
        let decoded = SnapshotArray::decode(&hex(SAMBA_TWO)).unwrap();
        assert_eq!(decoded.tokens, two);
        assert_eq!(decoded.array_size, 0x66);
        let counts = SnapshotArray::decode(&hex(SAMBA_COUNTS)).unwrap();
        assert_eq!((counts.number_of_snapshots, counts.tokens.len()), (2, 0));
        assert!(SnapshotArray::decode(&hex(SAMBA_TWO)[..100]).is_err());
    }

    #[test]
    fn tokens_round_trip_with_their_times() {
        let t = token("@GMT-2015.10.31-19.40.30");
        assert_eq!(t.unix_secs(), 1_446_320_430);
        assert_eq!(t.to_string(), "@GMT-2015.10.31-19.40.30");
        assert_eq!(GmtToken::from_filetime(t.filetime()), Some(t));
        // A TWrp time inside the second names that second's snapshot.
        let later = FileTime(t.filetime().0 + 9_999_999);
        assert_eq!(GmtToken::from_filetime(later), Some(t));
        for text in [
            "@GMT-1601.01.01-00.00.00",
            "@GMT-1970.01.01-00.00.00",
            "@GMT-2000.02.29-23.59.59",
            "@GMT-9999.12.31-23.59.59",
        ] {
            assert_eq!(token(text).to_string(), text);
        }
        assert_eq!(token("@GMT-1601.01.01-00.00.00").filetime(), FileTime(0));
        assert_eq!(GmtToken::from_filetime(FileTime(u64::MAX)), None);
    }

    #[test]
    fn bad_tokens_are_refused() {
        for text in [
            "",
            "@GMT-2015.10.31-19.40.3",
            "@GMT-2015.10.31-19.40.300",
            "@gmt-2015.10.31-19.40.30",
            "@GMT-2015-10.31-19.40.30",
            "@GMT-2015.13.31-19.40.30",
            "@GMT-2015.00.10-19.40.30",
            "@GMT-2015.02.29-19.40.30",
            "@GMT-1900.02.29-00.00.00",
            "@GMT-2015.04.31-19.40.30",
            "@GMT-2015.10.31-24.00.00",
            "@GMT-2015.10.31-19.60.00",
            "@GMT-2015.10.31-19.40.60",
            "@GMT-1600.12.31-23.59.59",
            "@GMT-+015.10.31-19.40.30",
            "@GMT-2015.1 .31-19.40.30",
            "@GMT-２015.10.31-19.40.30",
        ] {
            assert_eq!(GmtToken::parse(text), None, "{text}");
        }
        assert!(GmtToken::parse(&"@GMT-".repeat(1000)).is_none());
    }

    #[test]
    fn every_day_of_four_centuries_round_trips() {
        let start = token("@GMT-1999.12.31-12.00.00").unix_secs();
        for day in 0..146_097 {
            let t = GmtToken {
                unix_secs: start + day * DAY,
            };
            assert_eq!(GmtToken::parse(&t.to_string()), Some(t));
        }
    }
}
