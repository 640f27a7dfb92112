//! Quotas as SMB clients see them (MS-SMB2 3.3.5.20.4 and 3.3.5.21.4, MS-FSCC 2.4.40): the
//! file system's Linux user and group quota records ([`Vfs::quota`]) under the SIDs that
//! [`IdMap`] gives their uids and gids, in bytes.
//!
//! Who may do what (docs/security-model.md, "Quotas"):
//! - an administrator of the share (a session whose file work runs as root: root itself or an
//!   `admin_users` member) reads every record and sets limits;
//! - any other named user reads the records of its own uid and its groups, and sets nothing;
//! - a guest or anonymous session reads nothing.
//!
//! An enumeration lists users by uid, then groups by gid; where it stopped is kept in the open
//! ([`QuotaScan`]), so that a query without RestartScan continues it.

use std::sync::atomic::{AtomicU64, Ordering};

use smb3d_dtyp::{NtStatus, Sid};
use smb3d_fscc::{
    QueryQuotaInfo, QuotaEntry, QuotaListEncoder, QuotaSelection, get_quota_list, quota_list,
};
use smb3d_vfs::{Quota, QuotaKind, Vfs, VfsError};
use smb3d_wire::{FileTime, Writer};

use crate::identity::{IdMap, Identity, UnixId};
use crate::status_map::VfsResultExt;

/// A threshold or limit of "none" on the wire (MS-FSCC 2.4.40).
const NO_LIMIT: u64 = u64::MAX;
/// A SET's "remove this entry": Linux has no entry to remove, so its limits are cleared.
const REMOVE_ENTRY: u64 = u64::MAX - 1;
/// The most entries one SET may carry: more than any volume's principals a client would
/// list at once, and a bound on the work (and the undo list) of one request.
const MAX_SET_ENTRIES: usize = 1024;

/// Where an open's quota enumeration stands: the next (kind, id) to look at, packed as
/// `kind << 32 | id` (users 0, groups 1, 2 past the end).
#[derive(Debug, Default)]
pub(crate) struct QuotaScan(AtomicU64);

const PAST_END: u64 = 2 << 32;

fn pack(kind: QuotaKind, id: u32) -> u64 {
    let kind = match kind {
        QuotaKind::User => 0,
        QuotaKind::Group => 1,
    };
    (kind << 32) | u64::from(id)
}

/// The position after `(kind, id)`.
fn after(kind: QuotaKind, id: u32) -> u64 {
    pack(kind, id) + 1
}

fn unpack(at: u64) -> Option<(QuotaKind, u32)> {
    let id = (at & u64::from(u32::MAX)) as u32;
    match at >> 32 {
        0 => Some((QuotaKind::User, id)),
        1 => Some((QuotaKind::Group, id)),
        _ => None,
    }
}

/// Who asks.
#[derive(Debug, Clone, Copy)]
enum Reader<'a> {
    Admin,
    Owner(&'a Identity),
}

fn reader(identity: &Identity) -> Result<Reader<'_>, NtStatus> {
    if identity.token.user == Sid::ANONYMOUS {
        return Err(NtStatus::ACCESS_DENIED);
    }
    if identity.unix.uid == 0 {
        return Ok(Reader::Admin);
    }
    Ok(Reader::Owner(identity))
}

impl Reader<'_> {
    fn may_read(self, kind: QuotaKind, id: u32) -> bool {
        match self {
            Reader::Admin => true,
            Reader::Owner(who) => match kind {
                QuotaKind::User => who.unix.uid == id,
                QuotaKind::Group => who.unix.gid == id || who.unix.groups.contains(&id),
            },
        }
    }

    /// The next record at or after `at` this reader may see. An administrator walks the file
    /// system's records; anyone else looks at its own ids only, so a scan costs at most one
    /// call per group it is in, however many records the volume holds.
    fn next(self, vfs: &dyn Vfs, at: u64) -> Result<Option<(QuotaKind, u32, Quota)>, VfsError> {
        let mut at = at;
        while let Some((kind, from)) = unpack(at) {
            let found = match self {
                Reader::Admin => vfs.next_quota(kind, from)?,
                Reader::Owner(who) => own_ids(who, kind)
                    .filter(|&id| id >= from)
                    .min()
                    .map(|id| vfs.quota(kind, id).map(|q| (id, q)))
                    .transpose()?,
            };
            match found {
                Some((id, quota)) => return Ok(Some((kind, id, quota))),
                None => at = pack(kind, 0) + (1 << 32),
            }
        }
        Ok(None)
    }
}

fn own_ids(who: &Identity, kind: QuotaKind) -> impl Iterator<Item = u32> + '_ {
    let (first, rest): (u32, &[u32]) = match kind {
        QuotaKind::User => (who.unix.uid, &[]),
        QuotaKind::Group => (who.unix.gid, &who.unix.groups),
    };
    std::iter::once(first).chain(rest.iter().copied())
}

fn sid_of(ids: &IdMap, kind: QuotaKind, id: u32) -> Sid {
    match kind {
        QuotaKind::User => ids.user_sid(id),
        QuotaKind::Group => ids.group_sid(id),
    }
}

fn kind_of(ids: &IdMap, sid: &Sid) -> Option<(QuotaKind, u32)> {
    match ids.unix_id(sid)? {
        // A domain account's quota is its uid's: quotas are set for users.
        UnixId::User(uid) | UnixId::Account(uid) => Some((QuotaKind::User, uid)),
        UnixId::Group(gid) => Some((QuotaKind::Group, gid)),
    }
}

fn wire_limit(bytes: u64) -> u64 {
    if bytes == 0 { NO_LIMIT } else { bytes }
}

fn entry(sid: Sid, quota: Quota) -> QuotaEntry {
    QuotaEntry {
        sid,
        // Linux keeps no time of the last change of a record.
        change_time: FileTime(0),
        quota_used: quota.used,
        quota_threshold: wire_limit(quota.soft_limit),
        quota_limit: wire_limit(quota.hard_limit),
    }
}

/// MS-SMB2 3.3.5.20.4: the entries an SMB2_QUERY_QUOTA_INFO `input` selects, as many as fit in `limit` bytes (one
/// with ReturnSingle). STATUS_NO_MORE_ENTRIES when none is left, STATUS_BUFFER_TOO_SMALL when
/// not even one fits.
pub(crate) fn query(
    vfs: &dyn Vfs,
    ids: &IdMap,
    identity: &Identity,
    scan: &QuotaScan,
    input: &[u8],
    limit: u32,
    w: &mut Writer<'_>,
) -> Result<(), NtStatus> {
    let who = reader(identity)?;
    // The file system must keep quotas at all before the input matters.
    vfs.quota(QuotaKind::User, identity.unix.uid).status()?;
    let query = QueryQuotaInfo::decode(input).map_err(|_| NtStatus::INVALID_PARAMETER)?;
    let max = if query.return_single { 1 } else { usize::MAX };
    let mut list = QuotaListEncoder::new(w, limit as usize);
    let full = match &query.selection {
        QuotaSelection::Sids(sids) => listed(vfs, ids, who, sids, max, &mut list, w)?,
        QuotaSelection::StartAt(sid) => {
            let (kind, id) = kind_of(ids, sid).ok_or(NtStatus::NO_MORE_ENTRIES)?;
            scan.0.store(pack(kind, id), Ordering::Relaxed);
            scanned(vfs, ids, who, scan, max, &mut list, w)?
        }
        QuotaSelection::All => {
            if query.restart_scan {
                scan.0.store(0, Ordering::Relaxed);
            }
            scanned(vfs, ids, who, scan, max, &mut list, w)?
        }
    };
    match list.count() {
        0 if full => Err(NtStatus::BUFFER_TOO_SMALL),
        0 => Err(NtStatus::NO_MORE_ENTRIES),
        _ => Ok(()),
    }
}

/// The entries of a SidList, in its order; whether an entry did not fit. A SID that stands for
/// no Unix account has no record and is left out; asking for another user's record without
/// being an administrator is refused.
fn listed(
    vfs: &dyn Vfs,
    ids: &IdMap,
    who: Reader<'_>,
    sids: &[u8],
    max: usize,
    list: &mut QuotaListEncoder,
    w: &mut Writer<'_>,
) -> Result<bool, NtStatus> {
    for sid in get_quota_list(sids) {
        let sid = sid.map_err(|_| NtStatus::INVALID_PARAMETER)?;
        let Some((kind, id)) = kind_of(ids, &sid) else {
            continue;
        };
        if !who.may_read(kind, id) {
            return Err(NtStatus::ACCESS_DENIED);
        }
        if list.count() == max {
            break;
        }
        let quota = vfs.quota(kind, id).status()?;
        if !list.push(w, &entry(sid, quota)) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The volume's entries from where `scan` stands; whether an entry did not fit (it is then
/// the first of the next query).
fn scanned(
    vfs: &dyn Vfs,
    ids: &IdMap,
    who: Reader<'_>,
    scan: &QuotaScan,
    max: usize,
    list: &mut QuotaListEncoder,
    w: &mut Writer<'_>,
) -> Result<bool, NtStatus> {
    let mut at = scan.0.load(Ordering::Relaxed);
    let mut full = false;
    while list.count() < max {
        let Some((kind, id, quota)) = who.next(vfs, at).status()? else {
            at = PAST_END;
            break;
        };
        if !list.push(w, &entry(sid_of(ids, kind, id), quota)) {
            at = pack(kind, id);
            full = true;
            break;
        }
        at = after(kind, id);
    }
    scan.0.store(at, Ordering::Relaxed);
    Ok(full)
}

/// MS-SMB2 3.3.5.21.4: sets the threshold (soft limit) and limit (hard limit) of each entry of
/// a FILE_QUOTA_INFORMATION list; only an administrator may. The whole list is checked (every
/// entry well formed and naming a Unix account) before anything changes, and the limits set
/// before a failure are put back.
pub(crate) fn set(
    vfs: &dyn Vfs,
    ids: &IdMap,
    identity: &Identity,
    buffer: &[u8],
) -> Result<(), NtStatus> {
    if !matches!(reader(identity)?, Reader::Admin) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    vfs.quota(QuotaKind::User, identity.unix.uid).status()?;
    let mut changes = Vec::new();
    for entry in quota_list(buffer) {
        let entry = entry.map_err(|_| NtStatus::INVALID_PARAMETER)?;
        if changes.len() == MAX_SET_ENTRIES {
            return Err(NtStatus::INVALID_PARAMETER);
        }
        let (kind, id) = kind_of(ids, &entry.sid).ok_or(NtStatus::INVALID_SID)?;
        let (soft, hard) = if entry.quota_limit == REMOVE_ENTRY {
            (0, 0)
        } else {
            (
                from_wire(entry.quota_threshold),
                from_wire(entry.quota_limit),
            )
        };
        changes.push((kind, id, soft, hard));
    }
    if changes.is_empty() {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    let mut undo = Vec::with_capacity(changes.len());
    for &(kind, id, soft, hard) in &changes {
        let applied = vfs
            .quota(kind, id)
            .and_then(|before| vfs.set_quota_limits(kind, id, soft, hard).map(|()| before));
        match applied {
            Ok(before) => undo.push((kind, id, before)),
            Err(error) => {
                for (kind, id, before) in undo.iter().rev() {
                    // Best effort: the record was set a moment ago with the same rights.
                    let _ = vfs.set_quota_limits(*kind, *id, before.soft_limit, before.hard_limit);
                }
                return Err(crate::status_map::vfs_status(&error));
            }
        }
    }
    Ok(())
}

fn from_wire(bytes: u64) -> u64 {
    if bytes >= REMOVE_ENTRY { 0 } else { bytes }
}

/// The name clients open to query and set quotas (NTFS's quota index, which `smbcquotas` and
/// Windows open first), with or without the leading backslash, in any case.
pub(crate) fn is_quota_file(name: &str) -> bool {
    name.trim_start_matches('\\')
        .eq_ignore_ascii_case("$Extend\\$Quota:$Q:$INDEX_ALLOCATION")
}

/// Whether the file system keeps user quotas: FileFsAttributeInformation
/// (FILE_VOLUME_QUOTAS, which clients check before asking) and FileFsControlInformation say
/// so.
pub(crate) fn enabled(vfs: &dyn Vfs) -> bool {
    vfs.quota(QuotaKind::User, 0).is_ok()
}

/// The space a user's quotas leave, as Samba's `dfree` answers with quotas: `(total,
/// available)` in bytes, the smaller of the user's and its primary group's hard limits and
/// what they leave; `None` without a limit (or without quotas).
pub(crate) fn space_left(vfs: &dyn Vfs, identity: &Identity) -> Option<(u64, u64)> {
    let records = [
        vfs.quota(QuotaKind::User, identity.unix.uid),
        vfs.quota(QuotaKind::Group, identity.unix.gid),
    ];
    records
        .into_iter()
        .filter_map(Result::ok)
        .filter(|quota| quota.hard_limit != 0)
        .map(|quota| {
            (
                quota.hard_limit,
                quota.hard_limit.saturating_sub(quota.used),
            )
        })
        .min_by_key(|&(_, available)| available)
}

#[cfg(test)]
mod tests {
    use smb3d_fscc::encode_get_quota_list;
    use smb3d_vfs::MemoryVfs;

    use super::*;

    const ALICE: u32 = 1000;
    const BOB: u32 = 1001;

    fn volume() -> MemoryVfs {
        let vfs = MemoryVfs::new().with_quotas();
        vfs.set_quota_limits(QuotaKind::User, ALICE, 1 << 20, 2 << 20)
            .unwrap();
        vfs.set_quota_usage(QuotaKind::User, ALICE, 4096);
        vfs.set_quota_limits(QuotaKind::User, BOB, 0, 1 << 30)
            .unwrap();
        vfs.set_quota_limits(QuotaKind::Group, 50, 0, 5 << 20)
            .unwrap();
        vfs
    }

    fn user(uid: u32, gid: u32) -> Identity {
        let mut who = IdMap::new("srv").anonymous();
        who.token.user = IdMap::new("srv").user_sid(uid);
        who.unix.uid = uid;
        who.unix.gid = gid;
        who.unix.groups = Vec::new();
        who
    }

    fn input(query: &QueryQuotaInfo<'_>) -> Vec<u8> {
        let mut buf = Vec::new();
        query.encode(&mut Writer::new(&mut buf));
        buf
    }

    fn all(restart: bool, single: bool) -> Vec<u8> {
        input(&QueryQuotaInfo {
            return_single: single,
            restart_scan: restart,
            selection: QuotaSelection::All,
        })
    }

    fn ask(
        vfs: &MemoryVfs,
        who: &Identity,
        scan: &QuotaScan,
        input: &[u8],
        limit: u32,
    ) -> Result<Vec<QuotaEntry>, NtStatus> {
        let mut out = Vec::new();
        query(
            vfs,
            &IdMap::new("srv"),
            who,
            scan,
            input,
            limit,
            &mut Writer::new(&mut out),
        )?;
        Ok(quota_list(&out).map(Result::unwrap).collect())
    }

    fn sids(entries: &[QuotaEntry]) -> Vec<Sid> {
        entries.iter().map(|e| e.sid).collect()
    }

    #[test]
    fn an_administrator_enumerates_users_then_groups_and_continues_the_scan() {
        let vfs = volume();
        let ids = IdMap::new("srv");
        let root = user(0, 0);
        let scan = QuotaScan::default();
        let first = ask(&vfs, &root, &scan, &all(true, true), 4096).unwrap();
        assert_eq!(sids(&first), [ids.user_sid(ALICE)]);
        assert_eq!(
            (
                first[0].quota_used,
                first[0].quota_threshold,
                first[0].quota_limit
            ),
            (4096, 1 << 20, 2 << 20)
        );
        let rest = ask(&vfs, &root, &scan, &all(false, false), 4096).unwrap();
        assert_eq!(sids(&rest), [ids.user_sid(BOB), ids.group_sid(50)]);
        assert_eq!(rest[0].quota_threshold, NO_LIMIT);
        assert_eq!(
            ask(&vfs, &root, &scan, &all(false, false), 4096),
            Err(NtStatus::NO_MORE_ENTRIES)
        );
        assert_eq!(
            ask(&vfs, &root, &scan, &all(true, false), 4096)
                .unwrap()
                .len(),
            3
        );
    }

    #[test]
    fn an_entry_that_does_not_fit_comes_first_next_time() {
        let vfs = volume();
        let root = user(0, 0);
        let scan = QuotaScan::default();
        // One entry with a 28-byte domain SID is 68 bytes; the second would need 72 + 68.
        let one = ask(&vfs, &root, &scan, &all(true, false), 100).unwrap();
        assert_eq!(one.len(), 1);
        let next = ask(&vfs, &root, &scan, &all(false, false), 100).unwrap();
        assert_eq!(sids(&next), [IdMap::new("srv").user_sid(BOB)]);
        assert_eq!(
            ask(&vfs, &root, &scan, &all(true, false), 20),
            Err(NtStatus::BUFFER_TOO_SMALL)
        );
    }

    #[test]
    fn a_plain_user_sees_only_its_own_records() {
        let vfs = volume();
        let ids = IdMap::new("srv");
        let alice = user(ALICE, 50);
        let scan = QuotaScan::default();
        let seen = ask(&vfs, &alice, &scan, &all(true, false), 4096).unwrap();
        assert_eq!(sids(&seen), [ids.user_sid(ALICE), ids.group_sid(50)]);
        let mut list = Vec::new();
        encode_get_quota_list(&mut Writer::new(&mut list), &[ids.user_sid(BOB)]);
        let for_bob = input(&QueryQuotaInfo {
            return_single: false,
            restart_scan: true,
            selection: QuotaSelection::Sids(&list),
        });
        assert_eq!(
            ask(&vfs, &alice, &scan, &for_bob, 4096),
            Err(NtStatus::ACCESS_DENIED)
        );
        let root = user(0, 0);
        assert_eq!(
            sids(&ask(&vfs, &root, &scan, &for_bob, 4096).unwrap()),
            [ids.user_sid(BOB)]
        );
        let guest = IdMap::new("srv").anonymous();
        assert_eq!(
            ask(&vfs, &guest, &scan, &all(true, false), 4096),
            Err(NtStatus::ACCESS_DENIED)
        );
    }

    #[test]
    fn a_start_sid_starts_there() {
        let vfs = volume();
        let ids = IdMap::new("srv");
        let start = input(&QueryQuotaInfo {
            return_single: false,
            restart_scan: false,
            selection: QuotaSelection::StartAt(ids.user_sid(BOB)),
        });
        let seen = ask(&vfs, &user(0, 0), &QuotaScan::default(), &start, 4096).unwrap();
        assert_eq!(sids(&seen), [ids.user_sid(BOB), ids.group_sid(50)]);
    }

    #[test]
    fn hostile_inputs_are_invalid_parameters() {
        let vfs = volume();
        let root = user(0, 0);
        let scan = QuotaScan::default();
        // SidListLength past the input.
        let mut past = all(true, false);
        past[4..8].copy_from_slice(&64u32.to_le_bytes());
        assert_eq!(
            ask(&vfs, &root, &scan, &past, 4096),
            Err(NtStatus::INVALID_PARAMETER)
        );
        // A SID list whose first entry points at itself.
        let ids = IdMap::new("srv");
        let mut list = Vec::new();
        encode_get_quota_list(
            &mut Writer::new(&mut list),
            &[ids.user_sid(ALICE), ids.user_sid(BOB)],
        );
        list[0..4].copy_from_slice(&0u32.to_le_bytes());
        list[0] = 4;
        let looping = input(&QueryQuotaInfo {
            return_single: false,
            restart_scan: true,
            selection: QuotaSelection::Sids(&list),
        });
        assert_eq!(
            ask(&vfs, &root, &scan, &looping, 4096),
            Err(NtStatus::INVALID_PARAMETER)
        );
        assert_eq!(
            ask(&vfs, &root, &scan, &[0; 3], 4096),
            Err(NtStatus::INVALID_PARAMETER)
        );
    }

    #[test]
    fn no_quotas_is_not_supported() {
        let vfs = MemoryVfs::new();
        assert_eq!(
            ask(
                &vfs,
                &user(0, 0),
                &QuotaScan::default(),
                &all(true, false),
                4096
            ),
            Err(NtStatus::NOT_SUPPORTED)
        );
    }

    fn set_list(entries: &[QuotaEntry]) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf);
        let mut list = QuotaListEncoder::new(&w, usize::MAX);
        for e in entries {
            assert!(list.push(&mut w, e));
        }
        buf
    }

    fn limits(sid: Sid, threshold: u64, limit: u64) -> QuotaEntry {
        QuotaEntry {
            sid,
            change_time: FileTime(0),
            quota_used: 0,
            quota_threshold: threshold,
            quota_limit: limit,
        }
    }

    #[test]
    fn only_an_administrator_sets_limits_and_a_bad_list_changes_nothing() {
        let vfs = volume();
        let ids = IdMap::new("srv");
        let change = set_list(&[limits(ids.user_sid(BOB), 3 << 20, 4 << 20)]);
        assert_eq!(
            set(&vfs, &ids, &user(ALICE, 50), &change),
            Err(NtStatus::ACCESS_DENIED)
        );
        assert_eq!(
            set(&vfs, &ids, &IdMap::new("srv").anonymous(), &change),
            Err(NtStatus::ACCESS_DENIED)
        );
        assert_eq!(vfs.quota(QuotaKind::User, BOB).unwrap().hard_limit, 1 << 30);
        set(&vfs, &ids, &user(0, 0), &change).unwrap();
        let bob = vfs.quota(QuotaKind::User, BOB).unwrap();
        assert_eq!((bob.soft_limit, bob.hard_limit), (3 << 20, 4 << 20));

        // The second entry names no account: nothing changes, the first included.
        let unknown = Sid::new(5, &[21, 9, 9, 9, 500]).unwrap();
        let mixed = set_list(&[limits(ids.user_sid(ALICE), 0, 0), limits(unknown, 0, 0)]);
        assert_eq!(
            set(&vfs, &ids, &user(0, 0), &mixed),
            Err(NtStatus::INVALID_SID)
        );
        assert_eq!(
            vfs.quota(QuotaKind::User, ALICE).unwrap().hard_limit,
            2 << 20
        );
        let mut truncated = change.clone();
        truncated.truncate(change.len() - 1);
        assert_eq!(
            set(&vfs, &ids, &user(0, 0), &truncated),
            Err(NtStatus::INVALID_PARAMETER)
        );

        // No limit and "remove" both clear the Linux limits.
        let clear = set_list(&[limits(ids.user_sid(BOB), NO_LIMIT, REMOVE_ENTRY)]);
        set(&vfs, &ids, &user(0, 0), &clear).unwrap();
        assert_eq!(vfs.quota(QuotaKind::User, BOB).unwrap().hard_limit, 0);
    }

    #[test]
    fn free_space_is_what_the_smallest_limit_leaves() {
        let vfs = volume();
        assert_eq!(
            space_left(&vfs, &user(ALICE, 7)),
            Some((2 << 20, (2 << 20) - 4096))
        );
        // The group's 5 MiB leaves more than the user's 2 MiB.
        assert_eq!(
            space_left(&vfs, &user(ALICE, 50)),
            Some((2 << 20, (2 << 20) - 4096))
        );
        vfs.set_quota_usage(QuotaKind::Group, 50, 5 << 20);
        assert_eq!(space_left(&vfs, &user(ALICE, 50)), Some((5 << 20, 0)));
        assert_eq!(space_left(&vfs, &user(4242, 4242)), None);
        assert_eq!(space_left(&MemoryVfs::new(), &user(ALICE, 50)), None);
    }
}
