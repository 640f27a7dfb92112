//! Quota lists: FILE_QUOTA_INFORMATION (MS-FSCC 2.4.40, what QUERY_INFO answers and SET_INFO
//! carries) and FILE_GET_QUOTA_INFORMATION (2.4.40.1, the SIDs a query names), and the
//! SMB2_QUERY_QUOTA_INFO input of a QUERY_INFO (MS-SMB2 2.2.37.1), which holds either.

use smb3d_dtyp::Sid;
use smb3d_wire::{DecodeError, DecodeErrorKind, FileTime, Reader, Result, Writer};

use crate::list::{ChainWriter, EntryIter};

/// FILE_QUOTA_INFORMATION entries are 8-byte aligned.
const QUOTA_ALIGN: usize = 8;
/// FILE_GET_QUOTA_INFORMATION entries are 4-byte aligned.
const GET_QUOTA_ALIGN: usize = 4;
/// NextEntryOffset, SidLength, ChangeTime, QuotaUsed, QuotaThreshold, QuotaLimit.
const QUOTA_FIXED: usize = 40;
/// NextEntryOffset and SidLength.
const GET_QUOTA_FIXED: usize = 8;
/// The smallest SID: revision, count and authority, no sub-authority.
const MIN_SID: usize = 8;
/// ReturnSingle, RestartScan, Reserved, SidListLength, StartSidLength, StartSidOffset.
const QUERY_QUOTA_FIXED: usize = 16;

/// One FILE_QUOTA_INFORMATION entry: a principal's usage and limits in bytes. A threshold
/// or limit of `u64::MAX` means none; `u64::MAX - 1` in a SET removes the entry (MS-FSCC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaEntry {
    pub sid: Sid,
    pub change_time: FileTime,
    pub quota_used: u64,
    pub quota_threshold: u64,
    pub quota_limit: u64,
}

impl QuotaEntry {
    /// Bytes of this entry on the wire, without alignment padding.
    pub const fn encoded_len(&self) -> usize {
        QUOTA_FIXED + self.sid.encoded_len()
    }

    fn parse(entry: &[u8]) -> Result<QuotaEntry> {
        let mut r = Reader::new(entry);
        r.skip(4, "NextEntryOffset")?;
        let sid_len = sid_length(r.u32("SidLength")?)?;
        let change_time = FileTime(r.u64("ChangeTime")?);
        let quota_used = r.u64("QuotaUsed")?;
        let quota_threshold = r.u64("QuotaThreshold")?;
        let quota_limit = r.u64("QuotaLimit")?;
        let sid = exact_sid(r.bytes(sid_len, "Sid")?)?;
        Ok(QuotaEntry {
            sid,
            change_time,
            quota_used,
            quota_threshold,
            quota_limit,
        })
    }
}

/// A SidLength that can hold a SID at all.
fn sid_length(len: u32) -> Result<usize> {
    let len = usize::try_from(len)
        .map_err(|_| DecodeError::new("SidLength", DecodeErrorKind::Overflow))?;
    if len < MIN_SID {
        return Err(DecodeError::new("SidLength", DecodeErrorKind::OutOfBounds));
    }
    Ok(len)
}

/// A SID that fills `bytes` exactly: a SidLength that disagrees with the SID's own count of
/// sub-authorities is refused rather than guessed at.
fn exact_sid(bytes: &[u8]) -> Result<Sid> {
    let mut r = Reader::new(bytes);
    let sid = Sid::decode(&mut r)?;
    if sid.encoded_len() != bytes.len() {
        return Err(DecodeError::new("SidLength", DecodeErrorKind::InvalidValue));
    }
    Ok(sid)
}

/// Walks a FILE_QUOTA_INFORMATION list (a SET_INFO's buffer), checking every offset and
/// length.
pub fn quota_list(buf: &[u8]) -> EntryIter<'_, QuotaEntry> {
    EntryIter::new(
        buf,
        QUOTA_ALIGN,
        QUOTA_FIXED + MIN_SID,
        "FILE_QUOTA_INFORMATION",
        QuotaEntry::parse,
    )
}

/// Builds a FILE_QUOTA_INFORMATION list in at most `limit` bytes.
#[derive(Debug)]
pub struct QuotaListEncoder {
    chain: ChainWriter,
}

impl QuotaListEncoder {
    /// Starts a list at the writer's current position.
    pub fn new(w: &Writer<'_>, limit: usize) -> Self {
        Self {
            chain: ChainWriter::new(w, limit, QUOTA_ALIGN),
        }
    }

    /// Appends `entry`; false, writing nothing, if it does not fit in the limit.
    pub fn push(&mut self, w: &mut Writer<'_>, entry: &QuotaEntry) -> bool {
        self.chain.push(w, entry.encoded_len(), |w| {
            // At most 68 bytes: 8 plus 4 for each of 15 sub-authorities.
            w.u32(entry.sid.encoded_len() as u32)
                .u64(entry.change_time.0)
                .u64(entry.quota_used)
                .u64(entry.quota_threshold)
                .u64(entry.quota_limit);
            entry.sid.encode(w);
        })
    }

    /// Entries written.
    pub fn count(&self) -> usize {
        self.chain.count()
    }
}

fn parse_get_quota(entry: &[u8]) -> Result<Sid> {
    let mut r = Reader::new(entry);
    r.skip(4, "NextEntryOffset")?;
    let sid_len = sid_length(r.u32("SidLength")?)?;
    exact_sid(r.bytes(sid_len, "Sid")?)
}

/// Walks a FILE_GET_QUOTA_INFORMATION list: the SIDs a query asks for, each offset and length
/// checked.
pub fn get_quota_list(buf: &[u8]) -> EntryIter<'_, Sid> {
    EntryIter::new(
        buf,
        GET_QUOTA_ALIGN,
        GET_QUOTA_FIXED + MIN_SID,
        "FILE_GET_QUOTA_INFORMATION",
        parse_get_quota,
    )
}

/// Appends a FILE_GET_QUOTA_INFORMATION list naming `sids`.
pub fn encode_get_quota_list<'s>(w: &mut Writer<'_>, sids: impl IntoIterator<Item = &'s Sid>) {
    let mut chain = ChainWriter::new(w, usize::MAX, GET_QUOTA_ALIGN);
    for sid in sids {
        chain.push(w, GET_QUOTA_FIXED + sid.encoded_len(), |w| {
            w.u32(sid.encoded_len() as u32);
            sid.encode(w);
        });
    }
}

/// Which quota entries a query asks for (MS-SMB2 3.3.5.20.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuotaSelection<'a> {
    /// The entries of these SIDs, in this order (a FILE_GET_QUOTA_INFORMATION list, walked
    /// with [`get_quota_list`]).
    Sids(&'a [u8]),
    /// The volume's entries from this SID on.
    StartAt(Sid),
    /// The volume's entries, from the start or where the open's last scan stopped.
    All,
}

/// SMB2_QUERY_QUOTA_INFO (MS-SMB2 2.2.37.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryQuotaInfo<'a> {
    pub return_single: bool,
    pub restart_scan: bool,
    pub selection: QuotaSelection<'a>,
}

impl<'a> QueryQuotaInfo<'a> {
    /// Parses a QUERY_INFO's input buffer. A SidList takes precedence over a StartSid, whose
    /// fields are then ignored (MS-SMB2 3.3.5.20.4); StartSidOffset counts from the start of
    /// SidBuffer. Lengths that leave the buffer are refused.
    pub fn decode(buf: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(buf);
        let return_single = r.u8("ReturnSingle")? != 0;
        let restart_scan = r.u8("RestartScan")? != 0;
        r.skip(2, "Reserved")?;
        let sid_list_len = to_usize(r.u32("SidListLength")?, "SidListLength")?;
        let start_sid_len = to_usize(r.u32("StartSidLength")?, "StartSidLength")?;
        let start_sid_offset = to_usize(r.u32("StartSidOffset")?, "StartSidOffset")?;
        let sid_buffer = buf.get(QUERY_QUOTA_FIXED..).unwrap_or_default();
        let selection = if sid_list_len != 0 {
            let list = sid_buffer.get(..sid_list_len).ok_or(DecodeError::new(
                "SidListLength",
                DecodeErrorKind::OutOfBounds,
            ))?;
            QuotaSelection::Sids(list)
        } else if start_sid_len != 0 {
            let sid = start_sid_offset
                .checked_add(start_sid_len)
                .and_then(|end| sid_buffer.get(start_sid_offset..end))
                .ok_or(DecodeError::new(
                    "StartSidLength",
                    DecodeErrorKind::OutOfBounds,
                ))?;
            QuotaSelection::StartAt(exact_sid(sid)?)
        } else {
            QuotaSelection::All
        };
        Ok(Self {
            return_single,
            restart_scan,
            selection,
        })
    }

    /// Appends the wire form (a StartSid right at SidBuffer).
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u8(u8::from(self.return_single))
            .u8(u8::from(self.restart_scan))
            .u16(0);
        match &self.selection {
            QuotaSelection::Sids(list) => {
                w.u32(list.len() as u32).u32(0).u32(0).bytes(list);
            }
            QuotaSelection::StartAt(sid) => {
                w.u32(0).u32(sid.encoded_len() as u32).u32(0);
                sid.encode(w);
            }
            QuotaSelection::All => {
                w.u32(0).u32(0).u32(0);
            }
        }
    }
}

fn to_usize(value: u32, field: &'static str) -> Result<usize> {
    usize::try_from(value).map_err(|_| DecodeError::new(field, DecodeErrorKind::Overflow))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn encoded(f: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf);
        f(&mut w);
        buf
    }

    /// S-1-5-21-1-2-3-1000 in MS-DTYP 2.4.2.2 form: 28 bytes.
    const SID_1000: &str = "01 05 000000000005 15000000 01000000 02000000 03000000 e8030000";
    /// S-1-5-32-544 (BUILTIN\Administrators): 16 bytes.
    const SID_ADMINS: &str = "01 02 000000000005 20000000 20020000";

    fn sid_1000() -> Sid {
        Sid::new(5, &[21, 1, 2, 3, 1000]).unwrap()
    }

    fn admins() -> Sid {
        Sid::new(5, &[32, 544]).unwrap()
    }

    /// Two FILE_QUOTA_INFORMATION entries laid out by hand from MS-FSCC 2.4.40: the first is
    /// 40 + 28 = 68 bytes, padded to 72; the second has no padding after it.
    fn golden_quota_list() -> Vec<u8> {
        hex(&format!(
            "48000000 1c000000 0000000000000000 0010000000000000 \
             0000100000000000 0000200000000000 {SID_1000} 00000000 \
             00000000 10000000 0000000000000000 0000000000000000 \
             ffffffffffffffff ffffffffffffffff {SID_ADMINS}"
        ))
    }

    #[test]
    fn quota_list_golden_vector() {
        let entries = [
            QuotaEntry {
                sid: sid_1000(),
                change_time: FileTime(0),
                quota_used: 0x1000,
                quota_threshold: 0x10_0000,
                quota_limit: 0x20_0000,
            },
            QuotaEntry {
                sid: admins(),
                change_time: FileTime(0),
                quota_used: 0,
                quota_threshold: u64::MAX,
                quota_limit: u64::MAX,
            },
        ];
        let bytes = encoded(|w| {
            let mut list = QuotaListEncoder::new(w, usize::MAX);
            for entry in &entries {
                assert!(list.push(w, entry));
            }
        });
        assert_eq!(bytes, golden_quota_list());
        let decoded: Vec<_> = quota_list(&bytes).map(Result::unwrap).collect();
        assert_eq!(decoded, entries);
    }

    #[test]
    fn quota_list_stops_at_the_limit() {
        let entry = QuotaEntry {
            sid: sid_1000(),
            change_time: FileTime(0),
            quota_used: 0,
            quota_threshold: 0,
            quota_limit: 0,
        };
        let bytes = encoded(|w| {
            let mut list = QuotaListEncoder::new(w, 68 + 4 + 67);
            assert!(list.push(w, &entry));
            assert!(!list.push(w, &entry));
            assert_eq!(list.count(), 1);
        });
        assert_eq!(bytes.len(), 68);
    }

    /// Two FILE_GET_QUOTA_INFORMATION entries (MS-FSCC 2.4.40.1), 4-byte aligned: 8 + 28 =
    /// 36, then 8 + 16.
    fn golden_sid_list() -> Vec<u8> {
        hex(&format!(
            "24000000 1c000000 {SID_1000} 00000000 10000000 {SID_ADMINS}"
        ))
    }

    #[test]
    fn get_quota_list_golden_vector() {
        let bytes = encoded(|w| encode_get_quota_list(w, &[sid_1000(), admins()]));
        assert_eq!(bytes, golden_sid_list());
        let sids: Vec<_> = get_quota_list(&bytes).map(Result::unwrap).collect();
        assert_eq!(sids, [sid_1000(), admins()]);
    }

    #[test]
    fn hostile_sid_lists_are_refused() {
        let good = golden_sid_list();
        // SidLength past the entry.
        let mut long = good.clone();
        long[4] = 0xff;
        assert!(get_quota_list(&long).any(|e| e.is_err()));
        // SidLength shorter than the SID's own sub-authority count says.
        let mut short = good.clone();
        short[4] = 0x18;
        assert!(get_quota_list(&short).any(|e| e.is_err()));
        // NextEntryOffset pointing at the entry itself (a loop) or back.
        let mut looping = good.clone();
        looping[0] = 0;
        looping[0..4].copy_from_slice(&4u32.to_le_bytes());
        assert!(get_quota_list(&looping).any(|e| e.is_err()));
        // NextEntryOffset past the buffer.
        let mut past = good.clone();
        past[0..4].copy_from_slice(&0x1000u32.to_le_bytes());
        assert!(get_quota_list(&past).any(|e| e.is_err()));
        // A SidLength of 4 GiB.
        let mut huge = good;
        huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(get_quota_list(&huge).any(|e| e.is_err()));
    }

    #[test]
    fn query_quota_info_golden_vectors() {
        let list = golden_sid_list();
        let with_list = hex(&format!(
            "00 01 0000 3c000000 00000000 00000000 {}",
            list.iter().map(|b| format!("{b:02x}")).collect::<String>()
        ));
        let query = QueryQuotaInfo::decode(&with_list).unwrap();
        assert_eq!(
            query,
            QueryQuotaInfo {
                return_single: false,
                restart_scan: true,
                selection: QuotaSelection::Sids(&list),
            }
        );
        assert_eq!(encoded(|w| query.encode(w)), with_list);

        let start = hex(&format!(
            "01 00 0000 00000000 10000000 00000000 {SID_ADMINS}"
        ));
        let query = QueryQuotaInfo::decode(&start).unwrap();
        assert_eq!(query.selection, QuotaSelection::StartAt(admins()));
        assert!(query.return_single);
        assert_eq!(encoded(|w| query.encode(w)), start);

        let all = hex("00 01 0000 00000000 00000000 00000000");
        assert_eq!(
            QueryQuotaInfo::decode(&all).unwrap().selection,
            QuotaSelection::All
        );
    }

    #[test]
    fn query_quota_info_lengths_stay_in_the_buffer() {
        // SidListLength past the buffer.
        let past = hex("00 01 0000 00100000 00000000 00000000 00000000");
        assert!(QueryQuotaInfo::decode(&past).is_err());
        // StartSidOffset + StartSidLength overflowing.
        let wrap = hex("00 01 0000 00000000 10000000 f8ffffff");
        assert!(QueryQuotaInfo::decode(&wrap).is_err());
        // Shorter than the fixed part.
        assert!(QueryQuotaInfo::decode(&[0; 15]).is_err());
    }
}
