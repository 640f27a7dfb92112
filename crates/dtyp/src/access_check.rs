//! Access checks against a security descriptor (MS-DTYP 2.5.3.2), reduced to what a file
//! server needs: basic allow and deny ACEs, the owner's implicit rights, the file generic
//! mapping and the two privileges that bypass the DACL.

use core::fmt;

use crate::acl::AceType;
use crate::{AccessMask, AceFlags, SecurityDescriptor, Sid};

smb3d_wire::open_flags! {
    /// Privileges of a token that the access check honours.
    pub struct Privileges(u32) {
        /// SeSecurityPrivilege: ACCESS_SYSTEM_SECURITY (reading and writing the SACL).
        SECURITY = 0x1,
        /// SeTakeOwnershipPrivilege: WRITE_OWNER whatever the DACL says.
        TAKE_OWNERSHIP = 0x2,
    }
}

/// Who is asking: the user's SID, the SIDs of every group it belongs to (including Everyone,
/// Authenticated Users and the like, which the caller adds), and its privileges.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Token {
    /// The user's SID.
    pub user: Sid,
    /// Every group SID the user counts as.
    pub groups: Vec<Sid>,
    /// The privileges the access check honours.
    pub privileges: Privileges,
}

impl Token {
    /// Whether `sid` is the user or one of its groups.
    pub fn has_sid(&self, sid: &Sid) -> bool {
        self.user == *sid || self.groups.contains(sid)
    }
}

/// The access check refused: `missing` holds the requested rights that were not granted.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct AccessDenied {
    /// The requested rights that were not granted.
    pub missing: AccessMask,
}

impl fmt::Display for AccessDenied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "access denied (missing {:?})", self.missing)
    }
}

impl std::error::Error for AccessDenied {}

/// What the owner gets whatever the DACL says, unless it holds an OWNER RIGHTS ACE.
const OWNER_IMPLICIT: AccessMask = AccessMask(AccessMask::READ_CONTROL.0 | AccessMask::WRITE_DAC.0);

/// Everything a file can grant, plus ACCESS_SYSTEM_SECURITY when privileged.
fn all_rights(token: &Token) -> AccessMask {
    let mut all = AccessMask::FILE_ALL_ACCESS;
    if token.privileges.contains(Privileges::SECURITY) {
        all.insert(AccessMask::ACCESS_SYSTEM_SECURITY);
    }
    all
}

/// The rights granted before the DACL is looked at: the owner's implicit rights and those the
/// privileges give.
fn granted_up_front(sd: &SecurityDescriptor, token: &Token) -> AccessMask {
    let mut granted = AccessMask::empty();
    if token.privileges.contains(Privileges::SECURITY) {
        granted.insert(AccessMask::ACCESS_SYSTEM_SECURITY);
    }
    if token.privileges.contains(Privileges::TAKE_OWNERSHIP) {
        granted.insert(AccessMask::WRITE_OWNER);
    }
    let owner_rights_ace = sd.effective_dacl().is_some_and(|dacl| {
        dacl.aces.iter().any(|a| {
            a.mask_and_sid()
                .is_some_and(|(_, sid)| *sid == Sid::OWNER_RIGHTS)
        })
    });
    if sd.owner.as_ref().is_some_and(|o| token.has_sid(o)) && !owner_rights_ace {
        granted.insert(OWNER_IMPLICIT);
    }
    granted
}

/// The ACEs that apply to `token`, in order: basic allow or deny ACEs whose SID the token
/// holds (OWNER RIGHTS standing for the owner, MS-DTYP 2.5.3.2), not INHERIT_ONLY, with
/// generic rights mapped and without ACCESS_SYSTEM_SECURITY and MAXIMUM_ALLOWED, which no ACE
/// grants. Other ACE types are ignored, as in Samba.
fn applicable<'a>(
    sd: &'a SecurityDescriptor,
    token: &'a Token,
) -> impl Iterator<Item = (bool, AccessMask)> + 'a {
    let is_owner = sd.owner.as_ref().is_some_and(|o| token.has_sid(o));
    sd.effective_dacl()
        .into_iter()
        .flat_map(|dacl| dacl.aces.iter())
        .filter(|ace| !ace.flags.contains(AceFlags::INHERIT_ONLY))
        .filter_map(move |ace| {
            let (mask, sid) = ace.mask_and_sid()?;
            let allow = match ace.ace_type {
                AceType::ACCESS_ALLOWED => true,
                AceType::ACCESS_DENIED => false,
                _ => return None,
            };
            let mask = mask
                .map_generic()
                .without(AccessMask::ACCESS_SYSTEM_SECURITY | AccessMask::MAXIMUM_ALLOWED);
            let applies = token.has_sid(sid) || (*sid == Sid::OWNER_RIGHTS && is_owner);
            applies.then_some((allow, mask))
        })
}

/// The rights `token` has on an object protected by `sd` (the MAXIMUM_ALLOWED computation of
/// MS-DTYP 2.5.3.2): no DACL grants everything, an empty one nothing beyond the owner's
/// implicit READ_CONTROL and WRITE_DAC; a right denied before it is allowed stays denied.
pub fn maximum_allowed(sd: &SecurityDescriptor, token: &Token) -> AccessMask {
    if sd.effective_dacl().is_none() {
        return all_rights(token);
    }
    let mut granted = granted_up_front(sd, token);
    let mut denied = AccessMask::empty();
    for (allow, mask) in applicable(sd, token) {
        if allow {
            granted.insert(mask.without(denied));
        } else {
            denied.insert(mask.without(granted));
        }
    }
    granted.without(AccessMask::MAXIMUM_ALLOWED)
}

/// Checks `desired` (generic rights allowed; MAXIMUM_ALLOWED asks for everything available)
/// against `sd` for `token` (MS-DTYP 2.5.3.2). Returns the granted rights: the mapped request,
/// or with MAXIMUM_ALLOWED every right the token has. ACEs are evaluated in order; a deny ACE
/// refuses when it names a right not yet granted.
pub fn access_check(
    sd: &SecurityDescriptor,
    token: &Token,
    desired: AccessMask,
) -> Result<AccessMask, AccessDenied> {
    let desired = desired.map_generic();
    if desired.contains(AccessMask::ACCESS_SYSTEM_SECURITY)
        && !token.privileges.contains(Privileges::SECURITY)
    {
        return Err(AccessDenied {
            missing: AccessMask::ACCESS_SYSTEM_SECURITY,
        });
    }
    if desired.contains(AccessMask::MAXIMUM_ALLOWED) {
        let max = maximum_allowed(sd, token);
        let rest = desired.without(AccessMask::MAXIMUM_ALLOWED);
        let missing = rest.without(max);
        return if missing.is_empty() {
            Ok(max | rest)
        } else {
            Err(AccessDenied { missing })
        };
    }
    if sd.effective_dacl().is_none() {
        return Ok(desired);
    }
    let mut remaining = desired.without(granted_up_front(sd, token));
    for (allow, mask) in applicable(sd, token) {
        if remaining.is_empty() {
            break;
        }
        if allow {
            remaining.remove(mask);
        } else if mask.intersects(remaining) {
            return Err(AccessDenied {
                missing: mask.intersection(remaining),
            });
        }
    }
    if remaining.is_empty() {
        Ok(desired)
    } else {
        Err(AccessDenied { missing: remaining })
    }
}
