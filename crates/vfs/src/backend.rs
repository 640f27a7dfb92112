//! Rules every back end applies the same way, so that they agree on edge cases.

use crate::{
    CaseSensitivity, Disposition, MAX_PATH_LEN, VfsError, VfsFile, VfsPath, VfsResult, errno,
};

/// The longest extended-attribute name, namespace prefix included (Linux `XATTR_NAME_MAX`).
pub const MAX_XATTR_NAME_LEN: usize = 255;
/// The largest extended-attribute value (Linux `XATTR_SIZE_MAX`).
pub const MAX_XATTR_VALUE_LEN: usize = 65_536;
/// Namespaces a back end stores; others (`system.`, which has kernel-defined formats) are
/// `Unsupported`.
pub const XATTR_NAMESPACES: [&str; 3] = ["user.", "trusted.", "security."];
/// The `system.` xattrs holding POSIX ACLs (in the kernel's format), which a back end with
/// POSIX ACLs accepts besides [`XATTR_NAMESPACES`]; others answer `Unsupported` for them.
pub const POSIX_ACL_XATTRS: [&str; 2] = ["system.posix_acl_access", "system.posix_acl_default"];

/// The largest file size and offset: beyond `i64::MAX`, Linux reports `EFBIG`.
pub const MAX_FILE_SIZE: u64 = i64::MAX as u64;

/// How often an open-or-create retries when the object appears or disappears between its two
/// steps. Beyond this the name keeps existing without being openable: a dangling symlink.
const OPEN_OR_CREATE_ATTEMPTS: usize = 4;

/// Checks an extended-attribute name: a known namespace prefix followed by at least one byte,
/// no NUL, at most [`MAX_XATTR_NAME_LEN`] bytes.
pub fn validate_xattr_name(name: &str) -> VfsResult<()> {
    if name.contains('\0') {
        return Err(VfsError::InvalidName);
    }
    if name.len() > MAX_XATTR_NAME_LEN {
        return Err(VfsError::NameTooLong);
    }
    match XATTR_NAMESPACES
        .iter()
        .find_map(|namespace| name.strip_prefix(namespace))
    {
        Some("") => Err(VfsError::InvalidName),
        Some(_) => Ok(()),
        None => Err(VfsError::Unsupported),
    }
}

/// Checks an extended-attribute value's size.
pub fn validate_xattr_value(value: &[u8]) -> VfsResult<()> {
    if value.len() > MAX_XATTR_VALUE_LEN {
        return Err(VfsError::NoSpace);
    }
    Ok(())
}

/// The end of `offset..offset + len`, or `NoSpace` (Linux `EFBIG`) past [`MAX_FILE_SIZE`].
pub fn checked_range_end(offset: u64, len: u64) -> VfsResult<u64> {
    offset
        .checked_add(len)
        .filter(|&end| end <= MAX_FILE_SIZE)
        .ok_or(VfsError::NoSpace)
}

/// The most one step of [`copy_by_reading`] holds in memory.
const COPY_STEP: u64 = 1 << 20;

/// [`VfsFile::copy_range`] through reads and writes, for back ends without a copy primitive
/// and handles the file system cannot copy between. Only what `src` holds is copied. When
/// the two handles are one file and the target range starts inside the source range, the
/// steps go back to front, so the result is as if the source had been read whole first.
pub fn copy_by_reading(
    dst: &dyn VfsFile,
    src: &dyn VfsFile,
    src_offset: u64,
    offset: u64,
    len: u64,
) -> VfsResult<u64> {
    let source = src.stat()?;
    let target = dst.stat()?;
    if source.file_type != crate::FileType::File || target.file_type != crate::FileType::File {
        return Err(VfsError::IsADirectory);
    }
    let len = len.min(source.size.saturating_sub(src_offset));
    if len == 0 {
        return Ok(0);
    }
    checked_range_end(offset, len)?;
    let same_file = (source.dev, source.ino) == (target.dev, target.ino);
    let backwards = same_file && offset > src_offset && offset < src_offset + len;
    let mut buf = vec![0u8; usize::try_from(len.min(COPY_STEP)).unwrap_or(0)];
    let mut done = 0u64;
    while done < len {
        let step = (len - done).min(COPY_STEP);
        let at = if backwards { len - done - step } else { done };
        let chunk = buf
            .get_mut(..usize::try_from(step).unwrap_or(0))
            .ok_or(VfsError::Io(errno::EIO))?;
        let read = src.read_at(chunk, src_offset + at)?;
        let data = chunk.get(..read).unwrap_or_default();
        dst.write_at(data, offset + at)?;
        if (read as u64) < step {
            // The source shrank since it was measured.
            return Ok(if backwards { len } else { done + read as u64 });
        }
        done += step;
    }
    Ok(len)
}

/// Checks a symlink target as Linux accepts it: not empty, no NUL, at most [`MAX_PATH_LEN`]
/// bytes. Where it points is checked only when it is followed.
pub fn validate_symlink_target(target: &str) -> VfsResult<()> {
    if target.is_empty() || target.contains('\0') {
        return Err(VfsError::InvalidName);
    }
    if target.len() > MAX_PATH_LEN {
        return Err(VfsError::NameTooLong);
    }
    Ok(())
}

/// [`Vfs::check_symlink_target`](crate::Vfs::check_symlink_target) given `resolve`, which
/// resolves a path relative to the link's directory as the share resolves paths (following
/// every symlink, the last component's too): `Ok` if it exists inside the share, `NotFound` or
/// `NotADirectory` if some component is missing, `OutsideShare` if it leaves the share or
/// loops. A target that is missing in part is accepted only if nothing but names follows what
/// is missing: a `..` after it would climb out of a directory that does not exist yet, which a
/// symlink made there later could put anywhere.
pub fn check_symlink_target(
    target: &str,
    mut resolve: impl FnMut(&str) -> VfsResult<()>,
) -> VfsResult<()> {
    validate_symlink_target(target)?;
    if target.starts_with('/') {
        return Err(VfsError::OutsideShare);
    }
    match resolve(target) {
        Err(VfsError::NotFound | VfsError::NotADirectory) => {}
        resolved => return resolved,
    }
    let Some(climbs_to) = end_of_last_climb(target) else {
        return Ok(());
    };
    match resolve(target.get(..climbs_to).unwrap_or(target)) {
        Err(VfsError::NotFound | VfsError::NotADirectory) => Err(VfsError::OutsideShare),
        resolved => resolved,
    }
}

/// The end of the last `..` component of a `/`-separated path, if it has one.
fn end_of_last_climb(path: &str) -> Option<usize> {
    let mut end = None;
    let mut offset = 0;
    for component in path.split('/') {
        offset += component.len();
        if component == ".." {
            end = Some(offset);
        }
        offset += 1;
    }
    end
}

/// Carries out a disposition with two primitives: `open_existing(truncate)`, which fails with
/// `NotFound` when the name does not exist, and `create_new()`, which fails with
/// `AlreadyExists` when it does. Returns the handle and whether it was created.
///
/// Creation never follows a symlink, so a dangling symlink makes the open-or-create
/// dispositions fail with `NotFound` rather than create the link's target.
pub fn open_by_disposition<H>(
    disposition: Disposition,
    mut open_existing: impl FnMut(bool) -> VfsResult<H>,
    mut create_new: impl FnMut() -> VfsResult<H>,
) -> VfsResult<(H, bool)> {
    let truncate = disposition.truncates();
    match disposition {
        Disposition::Open | Disposition::Overwrite => Ok((open_existing(truncate)?, false)),
        Disposition::Create => Ok((create_new()?, true)),
        Disposition::OpenOrCreate | Disposition::OverwriteOrCreate => {
            for _ in 0..OPEN_OR_CREATE_ATTEMPTS {
                match open_existing(truncate) {
                    Err(VfsError::NotFound) => {}
                    opened => return Ok((opened?, false)),
                }
                match create_new() {
                    Err(VfsError::AlreadyExists) => {}
                    created => return Ok((created?, true)),
                }
            }
            Err(VfsError::NotFound)
        }
    }
}

/// Whether a failure means that the path does not exist as spelled, so that a case-insensitive
/// lookup may find it under another spelling.
fn missing(error: VfsError) -> bool {
    matches!(error, VfsError::NotFound | VfsError::ParentNotFound)
}

/// Runs a path operation under the case rules: on `path` as spelled and, when case is ignored
/// and `path` does not exist as spelled, once more on the real spelling `resolve` finds (see
/// [`casefold::resolve_path`](crate::casefold::resolve_path)). An existing exact spelling
/// costs nothing extra. `state` is what both need, lent to each in turn.
pub fn retry_caseless<S: ?Sized, T>(
    case: CaseSensitivity,
    path: &VfsPath,
    state: &mut S,
    mut op: impl FnMut(&mut S, &VfsPath) -> VfsResult<T>,
    resolve: impl FnOnce(&mut S, &VfsPath) -> Option<VfsPath>,
) -> VfsResult<T> {
    match op(state, path) {
        Err(error) if case == CaseSensitivity::Insensitive && missing(error) => {
            match resolve(state, path) {
                Some(real) => op(state, &real),
                None => Err(error),
            }
        }
        result => result,
    }
}

/// Carries out an open ([`open_by_disposition`]) under the case rules. An object that exists
/// as spelled costs one open; otherwise the disposition is carried out on the real spelling
/// `resolve` finds, so that creating a name an existing entry matches opens that entry
/// (`OpenOrCreate`, `OverwriteOrCreate`) or collides with it (`Create`, `AlreadyExists`).
pub fn open_caseless<H>(
    case: CaseSensitivity,
    path: &VfsPath,
    disposition: Disposition,
    mut open_existing: impl FnMut(&VfsPath, bool) -> VfsResult<H>,
    mut create_new: impl FnMut(&VfsPath) -> VfsResult<H>,
    resolve: impl FnOnce(&VfsPath) -> Option<VfsPath>,
) -> VfsResult<(H, bool)> {
    let mut open_at = |target: &VfsPath, open_existing: &mut dyn FnMut(&VfsPath, bool) -> _| {
        open_by_disposition(
            disposition,
            |truncate| open_existing(target, truncate),
            || create_new(target),
        )
    };
    if case == CaseSensitivity::Sensitive {
        return open_at(path, &mut open_existing);
    }
    // A creation looks for other spellings first: an entry one matches is what it opens.
    if disposition != Disposition::Create {
        match open_existing(path, disposition.truncates()) {
            Err(error) if missing(error) => {
                let creates = !matches!(disposition, Disposition::Open | Disposition::Overwrite);
                return match resolve(path) {
                    Some(real) => open_at(&real, &mut open_existing),
                    None if creates => open_at(path, &mut open_existing),
                    None => Err(error),
                };
            }
            opened => return opened.map(|handle| (handle, false)),
        }
    }
    let real = resolve(path);
    open_at(real.as_ref().unwrap_or(path), &mut open_existing)
}

/// Where a rename of `from` (already at its real spelling) to `to` goes when case is ignored,
/// given `to_real`, the real spelling of `to` (`None` when it is `to` itself). A last
/// component that only a differently-spelled entry matches names that entry, so the rename
/// collides with it or replaces it (keeping the entry's spelling, as Samba does), unless that
/// entry is `from` itself: then the rename is a change of case and keeps the new spelling.
/// `same_directory(a, b)` tells whether two directory paths resolve to one directory.
pub fn caseless_rename_target(
    from: &VfsPath,
    to: &VfsPath,
    to_real: Option<VfsPath>,
    same_directory: impl FnOnce(&VfsPath, &VfsPath) -> bool,
) -> VfsResult<VfsPath> {
    let Some(real) = to_real else {
        return Ok(to.clone());
    };
    let (Some((real_parent, real_name)), Some((from_parent, from_name)), Some(wanted)) =
        (real.parent_and_name(), from.parent_and_name(), to.name())
    else {
        return Ok(real);
    };
    if real_name != wanted && real_name == from_name && same_directory(&from_parent, &real_parent) {
        return real_parent.join(wanted);
    }
    Ok(real)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[test]
    fn xattr_names() {
        assert!(validate_xattr_name("user.DOSATTRIB").is_ok());
        assert!(validate_xattr_name("security.NTACL").is_ok());
        assert_eq!(validate_xattr_name("user."), Err(VfsError::InvalidName));
        assert_eq!(validate_xattr_name("user.a\0b"), Err(VfsError::InvalidName));
        assert_eq!(validate_xattr_name("DOSATTRIB"), Err(VfsError::Unsupported));
        assert_eq!(
            validate_xattr_name("system.posix_acl_access"),
            Err(VfsError::Unsupported)
        );
        let longest = format!("user.{}", "x".repeat(MAX_XATTR_NAME_LEN - 5));
        assert!(validate_xattr_name(&longest).is_ok());
        assert_eq!(
            validate_xattr_name(&format!("{longest}x")),
            Err(VfsError::NameTooLong)
        );
        assert!(validate_xattr_value(&[0; MAX_XATTR_VALUE_LEN]).is_ok());
        assert_eq!(
            validate_xattr_value(&[0; MAX_XATTR_VALUE_LEN + 1]),
            Err(VfsError::NoSpace)
        );
    }

    /// Where something is missing, only names may follow it; an absolute target is outside
    /// without looking. (The conformance suite checks the resolutions themselves.)
    #[test]
    fn symlink_targets_missing_in_part() {
        let nothing_exists = |_: &str| Err(VfsError::NotFound);
        assert_eq!(check_symlink_target("a/b/", nothing_exists), Ok(()));
        for climbs in ["a/../b", "../..", "a/b/.."] {
            assert_eq!(
                check_symlink_target(climbs, nothing_exists),
                Err(VfsError::OutsideShare),
                "{climbs}"
            );
        }
        let unreachable = |_: &str| -> VfsResult<()> { panic!("resolved") };
        assert_eq!(
            check_symlink_target("/etc", unreachable),
            Err(VfsError::OutsideShare)
        );
        assert_eq!(end_of_last_climb("a/../b/../c"), Some(9));
        assert_eq!(end_of_last_climb("../x"), Some(2));
        assert_eq!(end_of_last_climb("a/..b/c.."), None);
    }

    #[test]
    fn ranges_and_symlink_targets() {
        assert_eq!(checked_range_end(10, 5), Ok(15));
        assert_eq!(checked_range_end(MAX_FILE_SIZE, 0), Ok(MAX_FILE_SIZE));
        assert_eq!(checked_range_end(MAX_FILE_SIZE, 1), Err(VfsError::NoSpace));
        assert_eq!(checked_range_end(u64::MAX, 1), Err(VfsError::NoSpace));
        assert!(validate_symlink_target("../a/b").is_ok());
        assert!(validate_symlink_target("/abs").is_ok());
        assert_eq!(validate_symlink_target(""), Err(VfsError::InvalidName));
        assert_eq!(validate_symlink_target("a\0"), Err(VfsError::InvalidName));
        assert_eq!(
            validate_symlink_target(&"a".repeat(MAX_PATH_LEN + 1)),
            Err(VfsError::NameTooLong)
        );
    }

    #[test]
    fn dispositions_pick_primitives() {
        let calls = Cell::new(0);
        let exists = |truncate: bool| -> VfsResult<&str> {
            calls.set(calls.get() + 1);
            Ok(if truncate { "truncated" } else { "opened" })
        };
        let missing = |_: bool| -> VfsResult<&str> { Err(VfsError::NotFound) };
        let create = || -> VfsResult<&str> { Ok("created") };
        let taken = || -> VfsResult<&str> { Err(VfsError::AlreadyExists) };

        assert_eq!(
            open_by_disposition(Disposition::Open, exists, taken),
            Ok(("opened", false))
        );
        assert_eq!(
            open_by_disposition(Disposition::Overwrite, exists, taken),
            Ok(("truncated", false))
        );
        assert_eq!(
            open_by_disposition(Disposition::Open, missing, create),
            Err(VfsError::NotFound)
        );
        assert_eq!(
            open_by_disposition(Disposition::Create, exists, taken),
            Err(VfsError::AlreadyExists)
        );
        assert_eq!(
            open_by_disposition(Disposition::Create, missing, create),
            Ok(("created", true))
        );
        assert_eq!(
            open_by_disposition(Disposition::OpenOrCreate, missing, create),
            Ok(("created", true))
        );
        assert_eq!(
            open_by_disposition(Disposition::OverwriteOrCreate, exists, create),
            Ok(("truncated", false))
        );
        // A name that exists but cannot be opened: a dangling symlink.
        assert_eq!(
            open_by_disposition(Disposition::OpenOrCreate, missing, taken),
            Err(VfsError::NotFound)
        );
        assert_eq!(calls.get(), 3);
    }

    #[test]
    fn open_or_create_survives_a_lost_race() {
        let appeared = Cell::new(false);
        let open = |_: bool| -> VfsResult<&str> {
            if appeared.get() {
                Ok("opened")
            } else {
                Err(VfsError::NotFound)
            }
        };
        let create = || -> VfsResult<&str> {
            appeared.set(true);
            Err(VfsError::AlreadyExists)
        };
        assert_eq!(
            open_by_disposition(Disposition::OpenOrCreate, open, create),
            Ok(("opened", false))
        );
    }
}
