//! The audit trail: opens, renames and deletes on audited shares, one event each at the
//! `audit` tracing target with the user (the account proven at logon), the domain the client
//! claimed, the client address, share and path, each escaped (`escape`). Nothing is built or
//! logged for shares that are not audited.

use std::sync::Arc;

use smb3d_auth::Claim;
use smb3d_dtyp::AccessMask;
use smb3d_smb2::create::CreateAction;
use smb3d_vfs::VfsPath;

use crate::escape::escape;
use crate::state::connection::Connection;
use crate::state::session::SessionUser;
use crate::state::share::Share;

/// The tracing target of audit events, so that they can be filtered or routed on their own.
pub const TARGET: &str = "audit";

/// Rights that make an open worth auditing: reading, changing or deleting data, or changing
/// who may. Opens for attributes or the security descriptor alone (every listing and stat
/// makes some) are not logged.
const AUDITED_RIGHTS: AccessMask = AccessMask(
    AccessMask::FILE_READ_DATA.0
        | AccessMask::FILE_WRITE_DATA.0
        | AccessMask::FILE_APPEND_DATA.0
        | AccessMask::FILE_EXECUTE.0
        | AccessMask::DELETE.0
        | AccessMask::WRITE_DAC.0
        | AccessMask::WRITE_OWNER.0,
);

/// A path within the share as logged: the share's root is ".".
fn shown(path: &VfsPath) -> &str {
    if path.is_root() { "." } else { path.as_str() }
}

/// The tracing target of logon and tree connect decisions (Samba's `auth_audit`).
pub const AUTH_TARGET: &str = "auth_audit";

/// The user and claimed domain of a session as logged, escaped.
fn logged_user(user: &SessionUser) -> (String, String) {
    match user {
        SessionUser::User {
            name,
            claimed_domain,
        } => (
            escape(name).into_owned(),
            escape(claimed_domain).into_owned(),
        ),
        SessionUser::Anonymous => ("(anonymous)".into(), String::new()),
    }
}

fn client_of(conn: &Connection) -> String {
    conn.peer
        .map_or_else(|| "(unknown)".into(), |a| a.ip().to_string())
}

/// How a logon ended, as the logon audit says it.
pub(crate) enum LogonResult<'a> {
    /// Logged on as this user.
    Success(SessionUser),
    /// A user name the database does not know, logged on as a guest (`map_to_guest`).
    Guest,
    /// Refused, for this reason (never a secret: no password, hash or key).
    Failure(&'a str),
}

/// Logs a logon at info, at [`AUTH_TARGET`], as Samba's `auth_audit` does: the user and domain
/// the client claimed (or the account, on success), its workstation and address, the method
/// and the result with its reason. `claim` is None when no AUTHENTICATE could be read.
pub(crate) fn logon(conn: &Connection, claim: Option<&Claim>, result: &LogonResult<'_>) {
    let (claimed_user, domain, workstation) = claim.map_or_else(
        || (String::new(), String::new(), String::new()),
        |c| {
            (
                escape(&c.user).into_owned(),
                escape(&c.domain).into_owned(),
                escape(&c.workstation).into_owned(),
            )
        },
    );
    let (user, outcome, reason, message) = match result {
        LogonResult::Success(user) => (logged_user(user).0, "success", None, "logon"),
        LogonResult::Guest => (
            claimed_user,
            "guest",
            Some("unknown user mapped to guest"),
            "logon",
        ),
        LogonResult::Failure(reason) if claimed_user.is_empty() => (
            "(anonymous)".to_owned(),
            "failure",
            Some(*reason),
            "logon failed",
        ),
        LogonResult::Failure(reason) => (claimed_user, "failure", Some(*reason), "logon failed"),
    };
    // A field that is None is left out of the line, as a success has no reason.
    tracing::info!(
        target: AUTH_TARGET,
        user = user.as_str(),
        domain = domain.as_str(),
        workstation = workstation.as_str(),
        client = %client_of(conn),
        auth_method = claim.map_or("NTLMSSP", |c| c.method),
        result = outcome,
        reason,
        "{message}"
    );
}

/// Logs a refused tree connect at info, at [`AUTH_TARGET`]: the share (as the client named
/// it), who and from where, and why.
pub(crate) fn tree_refused(share: &str, user: &SessionUser, conn: &Connection, reason: &str) {
    let (user, domain) = logged_user(user);
    tracing::info!(
        target: AUTH_TARGET,
        share = &*escape(share),
        user = user.as_str(),
        domain = domain.as_str(),
        client = %client_of(conn),
        reason,
        "tree connect refused"
    );
}

/// Logs a password change over samr at info, at [`AUTH_TARGET`]: the account it was for (as
/// the client named it), the session that asked (often anonymous: the old password is the
/// proof), the client address, and the result with the reason of a refusal. No password,
/// hash or encrypted blob is logged.
pub(crate) fn password_change(
    account: &str,
    caller: Option<&SessionUser>,
    client: Option<std::net::SocketAddr>,
    refused: Option<&smb3d_auth::samr::PasswordChangeError>,
) {
    let caller = caller.map_or_else(|| "(anonymous)".to_owned(), |u| logged_user(u).0);
    let client = client.map_or_else(|| "(unknown)".into(), |a| a.ip().to_string());
    let (result, message) = match refused {
        None => ("success", "password changed"),
        Some(_) => ("failure", "password change refused"),
    };
    let reason = refused.map(ToString::to_string);
    tracing::info!(
        target: AUTH_TARGET,
        user = &*escape(account),
        caller = caller.as_str(),
        client = %client,
        method = "samr",
        result,
        reason = reason.as_deref(),
        "{message}"
    );
}

/// Who acts where, fixed for a tree connect, escaped.
pub(crate) struct Subject {
    /// The account's name as the user database spells it, or `(anonymous)`.
    user: String,
    /// The domain the client sent at logon; nothing checked it.
    claimed_domain: String,
    client: String,
    share: String,
}

/// The audit subject of a new tree connect, when `share` is audited.
pub(crate) fn subject(
    share: &Share,
    user: &SessionUser,
    conn: &Connection,
) -> Option<Arc<Subject>> {
    if !share.audit {
        return None;
    }
    let (user, claimed_domain) = logged_user(user);
    Some(Arc::new(Subject {
        user,
        claimed_domain,
        client: client_of(conn),
        share: escape(&share.name).into_owned(),
    }))
}

fn action_name(action: CreateAction) -> &'static str {
    match action {
        CreateAction::CREATED => "created",
        CreateAction::OVERWRITTEN => "overwritten",
        CreateAction::SUPERSEDED => "superseded",
        _ => "opened",
    }
}

/// A CREATE succeeded: logged when it created or replaced the file, or when the open may
/// read, change or delete data.
pub(crate) fn opened(
    who: &Subject,
    path: &VfsPath,
    action: CreateAction,
    access: AccessMask,
    directory: bool,
) {
    if action == CreateAction::OPENED && !access.intersects(AUDITED_RIGHTS) {
        return;
    }
    tracing::info!(
        target: TARGET,
        user = who.user.as_str(),
        claimed_domain = who.claimed_domain.as_str(),
        client = %who.client,
        share = who.share.as_str(),
        path = &*escape(shown(path)),
        action = action_name(action),
        access = %format_args!("{:#010x}", access.0),
        directory,
        "open"
    );
}

/// A file or directory was renamed.
pub(crate) fn renamed(who: &Subject, from: &VfsPath, to: &VfsPath) {
    tracing::info!(
        target: TARGET,
        user = who.user.as_str(),
        claimed_domain = who.claimed_domain.as_str(),
        client = %who.client,
        share = who.share.as_str(),
        path = &*escape(shown(from)),
        to = &*escape(shown(to)),
        "rename"
    );
}

/// A file, directory or named stream was deleted (its last open closed with delete pending).
pub(crate) fn deleted(who: &Subject, path: &VfsPath, stream: Option<&str>, directory: bool) {
    let path = match stream {
        Some(stream) => format!("{}:{stream}", shown(path)),
        None => shown(path).to_owned(),
    };
    tracing::info!(
        target: TARGET,
        user = who.user.as_str(),
        claimed_domain = who.claimed_domain.as_str(),
        client = %who.client,
        share = who.share.as_str(),
        path = &*escape(&path),
        directory,
        "delete"
    );
}
