//! The security descriptor of a new file or directory, inherited from its parent directory
//! (MS-DTYP 2.5.3.4, reduced to files and directories the way Windows and Samba do it).

use crate::{Ace, AceFlags, Acl, SdControl, SecurityDescriptor, Sid};

/// Whether `ace` passes to a child that is a directory (`container`) or a file.
fn is_inheritable(ace: &Ace, container: bool) -> bool {
    if container {
        ace.flags.contains(AceFlags::CONTAINER_INHERIT)
            || (ace.flags.contains(AceFlags::OBJECT_INHERIT)
                && !ace.flags.contains(AceFlags::NO_PROPAGATE_INHERIT))
    } else {
        ace.flags.contains(AceFlags::OBJECT_INHERIT)
    }
}

/// The ACEs a child inherits from `parent`, `None` when none applies.
///
/// Files get the inheritable ACEs with no inheritance flags. Directories keep them
/// inheritable: an ACE that only object-inherits becomes INHERIT_ONLY (it is for the files
/// further down), NO_PROPAGATE_INHERIT ends inheritance here. CREATOR OWNER and CREATOR GROUP
/// become `owner` and `group` in the ACE that takes effect; a directory also keeps the CREATOR
/// ACE as INHERIT_ONLY for its own children. INHERITED is set when the parent's ACL is
/// auto-inherited (SE_*_AUTO_INHERITED), which is when Windows sets it. Exact duplicates are
/// dropped. Generic rights become file rights in the ACEs that take effect (MS-DTYP 2.5.3.4.7
/// PostProcessACL); INHERIT_ONLY ACEs keep them for the objects further down.
fn inherit_acl(parent: &Acl, container: bool, owner: &Sid, group: &Sid, auto: bool) -> Option<Acl> {
    let inherited = if auto {
        AceFlags::INHERITED
    } else {
        AceFlags::empty()
    };
    let mut aces: Vec<Ace> = Vec::new();
    let mut push = |mut ace: Ace| {
        if !ace.flags.contains(AceFlags::INHERIT_ONLY)
            && let Some((mask, sid)) = ace.mask_and_sid()
        {
            ace = Ace::new(ace.ace_type, ace.flags, mask.map_generic(), *sid);
        }
        if !aces.contains(&ace) {
            aces.push(ace);
        }
    };
    let audit_flags = AceFlags::SUCCESSFUL_ACCESS | AceFlags::FAILED_ACCESS;
    for ace in parent.aces.iter().filter(|a| is_inheritable(a, container)) {
        // Audit ACEs keep what they audit; only the inheritance flags change.
        let inherited = inherited | ace.flags.intersection(audit_flags);
        let flags = if !container || ace.flags.contains(AceFlags::NO_PROPAGATE_INHERIT) {
            AceFlags::empty()
        } else if ace.flags.contains(AceFlags::CONTAINER_INHERIT) {
            ace.flags
                .without(AceFlags::INHERIT_ONLY | AceFlags::INHERITED | audit_flags)
        } else {
            ace.flags.without(AceFlags::INHERITED | audit_flags) | AceFlags::INHERIT_ONLY
        };
        let Some((mask, sid)) = ace.mask_and_sid() else {
            // Object and callback ACEs pass on unchanged apart from their flags.
            push(Ace {
                flags: flags | inherited,
                ..ace.clone()
            });
            continue;
        };
        let creator_substitute = if *sid == Sid::CREATOR_OWNER {
            Some(owner)
        } else if *sid == Sid::CREATOR_GROUP {
            Some(group)
        } else {
            None
        };
        match creator_substitute {
            Some(who) if container && flags.contains(AceFlags::CONTAINER_INHERIT) => {
                push(Ace::new(ace.ace_type, inherited, mask, *who));
                push(Ace::new(
                    ace.ace_type,
                    flags | AceFlags::INHERIT_ONLY | inherited,
                    mask,
                    *sid,
                ));
            }
            Some(who) if !flags.contains(AceFlags::INHERIT_ONLY) => {
                push(Ace::new(ace.ace_type, flags | inherited, mask, *who));
            }
            _ => push(Ace::new(ace.ace_type, flags | inherited, mask, *sid)),
        }
    }
    (!aces.is_empty()).then(|| Acl::new(aces))
}

/// The security descriptor of a new file (`is_directory` false) or directory created in a
/// directory protected by `parent`, owned by `owner` and `group`. Returns `None` when the
/// parent's DACL has nothing the child inherits; the caller then applies its default
/// (Windows: the creator's default DACL; Samba: the POSIX permissions).
///
/// The SACL is inherited by the same rules. The result has revision-2 ACLs and the control
/// bits SELF_RELATIVE, DACL_PRESENT and, when the parent DACL is auto-inherited,
/// DACL_AUTO_INHERITED.
pub fn inherit(
    parent: &SecurityDescriptor,
    is_directory: bool,
    owner: &Sid,
    group: &Sid,
) -> Option<SecurityDescriptor> {
    let dacl_auto = parent.control.contains(SdControl::DACL_AUTO_INHERITED);
    let dacl = inherit_acl(
        parent.effective_dacl()?,
        is_directory,
        owner,
        group,
        dacl_auto,
    )?;
    let mut control = SdControl::SELF_RELATIVE | SdControl::DACL_PRESENT;
    if dacl_auto {
        control.insert(SdControl::DACL_AUTO_INHERITED);
    }
    let sacl_auto = parent.control.contains(SdControl::SACL_AUTO_INHERITED);
    let sacl = parent
        .sacl
        .as_ref()
        .filter(|_| parent.control.contains(SdControl::SACL_PRESENT))
        .and_then(|sacl| inherit_acl(sacl, is_directory, owner, group, sacl_auto));
    if sacl.is_some() {
        control.insert(SdControl::SACL_PRESENT);
        if sacl_auto {
            control.insert(SdControl::SACL_AUTO_INHERITED);
        }
    }
    Some(SecurityDescriptor {
        control,
        owner: Some(*owner),
        group: Some(*group),
        sacl,
        dacl: Some(dacl),
    })
}
