//! The space Time Machine backups take on a share with a maximum size, counted as Samba's
//! vfs_fruit counts it, so that a share moved from Samba reports what it did: a backup is a
//! `NAME.sparsebundle` directory at the share's root whose `bands/` directory holds one file
//! per band, each as large as the `band-size` its `Info.plist` names. Everything read here was
//! written by clients, so it is read bounded and parsed as hostile.

use smb3d_vfs::{Access, Disposition, FsStat, Kind, OpenRequest, Vfs, VfsPath, VfsResult};

/// Larger `Info.plist` files are not read (a real one is under 1 KiB).
const MAX_PLIST: usize = 64 * 1024;
/// The unit sizes are reported in: two 512-byte sectors, as Samba reports them.
const UNIT: u64 = 1024;

const LISTING: OpenRequest = OpenRequest {
    access: Access::Read,
    disposition: Disposition::Open,
    kind: Kind::Directory,
    create_mode: 0,
};

const READING: OpenRequest = OpenRequest {
    access: Access::Read,
    disposition: Disposition::Open,
    kind: Kind::File,
    create_mode: 0,
};

/// The volume as a client of a share limited to `max_size` bytes sees it: that size, less
/// what the backups at its root take (never below zero), in 1 KiB units.
pub(crate) fn limited(vfs: &dyn Vfs, max_size: u64) -> VfsResult<FsStat> {
    let used = used(vfs)?;
    let mut stat = vfs.fs_stat()?;
    stat.fragment_size = UNIT;
    stat.total_blocks = max_size / UNIT;
    stat.avail_blocks = max_size.saturating_sub(used) / UNIT;
    stat.free_blocks = stat.avail_blocks;
    Ok(stat)
}

/// The bytes the sparse bundles at the share's root take; one that cannot be read (a backup
/// being set up, without its `Info.plist` or `bands/` yet) counts nothing.
fn used(vfs: &dyn Vfs) -> VfsResult<u64> {
    let root = vfs.open(&VfsPath::root(), &LISTING)?.file;
    let mut total: u64 = 0;
    for entry in root.read_dir()? {
        if !entry.name.ends_with(".sparsebundle") {
            continue;
        }
        let Ok(bundle) = VfsPath::root().join(&entry.name) else {
            continue;
        };
        let (Some(band_size), Some(bands)) = (band_size(vfs, &bundle), band_count(vfs, &bundle))
        else {
            continue;
        };
        total = total.saturating_add(band_size.saturating_mul(bands));
    }
    Ok(total)
}

fn band_size(vfs: &dyn Vfs, bundle: &VfsPath) -> Option<u64> {
    let file = vfs
        .open(&bundle.join("Info.plist").ok()?, &READING)
        .ok()?
        .file;
    let mut plist = Vec::new();
    file.read_append(&mut plist, MAX_PLIST, 0).ok()?;
    band_size_in(std::str::from_utf8(&plist).ok()?)
}

fn band_count(vfs: &dyn Vfs, bundle: &VfsPath) -> Option<u64> {
    let bands = vfs.open(&bundle.join("bands").ok()?, &LISTING).ok()?.file;
    u64::try_from(bands.read_dir().ok()?.len()).ok()
}

/// The value of the `band-size` key of a property list: the `<integer>` element that follows
/// `<key>band-size</key>` with nothing but white space between.
pub(crate) fn band_size_in(plist: &str) -> Option<u64> {
    const KEY: &str = "<key>band-size</key>";
    let (_, after) = plist.split_once(KEY)?;
    let value = after.trim_start().strip_prefix("<integer>")?;
    let (digits, _) = value.split_once("</integer>")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn band_size_is_read_from_the_plist_time_machine_writes() {
        let plist = "<?xml version=\"1.0\"?>\n<plist version=\"1.0\">\n<dict>\n\t<key>CFBundleInfoDictionaryVersion</key>\n\t<string>6.0</string>\n\t<key>band-size</key>\n\t<integer>8388608</integer>\n</dict>\n</plist>\n";
        assert_eq!(band_size_in(plist), Some(8_388_608));
        assert_eq!(
            band_size_in("<key>band-size</key>\n        <integer>8192</integer>\n"),
            Some(8192)
        );
    }

    #[test]
    fn hostile_plists_give_no_band_size() {
        for plist in [
            "",
            "<key>band-size</key>",
            "<key>band-size</key><integer></integer>",
            "<key>band-size</key><integer>-1</integer>",
            "<key>band-size</key><integer>+8</integer>",
            "<key>band-size</key><integer>99999999999999999999999</integer>",
            "<key>band-size</key><string>8192</string><integer>1</integer>",
            "<key>band-size</key><integer>12",
            "<integer>8192</integer><key>band-size</key>",
        ] {
            assert_eq!(band_size_in(plist), None, "{plist:?}");
        }
    }
}
