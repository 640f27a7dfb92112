//! Cluster Client Failover's application instances (MS-SMB2 3.3.5.9.13): an open made with
//! SMB2_CREATE_APP_INSTANCE_ID ends the opens of the same application instance that another
//! client holds on the same file of the same share, so that an application restarted on
//! another client node gets its files back at once instead of waiting for the old handles'
//! durable timeout. With SMB2_CREATE_APP_INSTANCE_VERSION an older instance is refused instead.

use std::sync::Arc;

use smb3d_dtyp::NtStatus;
use smb3d_smb2::create::AppInstanceVersion;
use smb3d_state::AppInstanceRecord;
use smb3d_wire::Guid;

use crate::escape::escape;
use crate::state::files::{OpenEntry, SharedFile};
use crate::state::open::close_open;
use crate::state::server::Server;
use crate::state::session::SessionUser;

/// Open.AppInstanceId and Open.ApplicationInstanceVersionHigh/Low (MS-SMB2 3.3.1.10), with
/// the ClientGuid of the connection that made the open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AppInstance {
    pub id: Guid,
    /// Only on SMB 3.1.1 connections, the one dialect the version context is valid on.
    pub version: Option<AppInstanceVersion>,
    pub client: Guid,
    /// The account that made the open (`None`: an anonymous logon), which on a cluster
    /// other nodes compare with a new open's ([`AppInstanceRecord::taken_over_by`]).
    pub user: Option<Arc<str>>,
}

impl AppInstance {
    /// As the cluster records it.
    pub fn record(&self) -> AppInstanceRecord {
        AppInstanceRecord {
            id: self.id.0,
            client: self.client.0,
            version: self.version.map(|v| (v.high, v.low)),
            user: self.user.as_deref().map(str::to_owned),
        }
    }
}

/// The session user an application instance's account stands for.
pub(crate) fn user_of(account: &str) -> SessionUser {
    SessionUser::User {
        name: account.to_owned(),
        claimed_domain: String::new(),
    }
}

/// The account of `user` as an application instance names it.
pub(crate) fn account(user: &SessionUser) -> Option<Arc<str>> {
    match user {
        SessionUser::User { name, .. } => Some(Arc::from(name.as_str())),
        SessionUser::Anonymous => None,
    }
}

/// An open of the same application instance by another client, as the file's table knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Earlier {
    pub id: u64,
    pub session_id: u64,
    pub disconnected: bool,
    pub version: Option<AppInstanceVersion>,
}

/// The opens of `state` on `stream` that belong to `asking`'s application instance and were
/// made by another client (MS-SMB2 3.3.5.9.13: same AppInstanceId, same path, a different
/// ClientGuid). A client's own opens are its business: it closes them itself.
pub(crate) fn earlier_opens(
    opens: &[OpenEntry],
    asking: &AppInstance,
    stream: Option<&Arc<str>>,
) -> Vec<Earlier> {
    opens
        .iter()
        .filter_map(|entry| {
            let theirs = entry.app_instance.as_ref()?;
            (theirs.id == asking.id
                && theirs.client != asking.client
                && entry.stream.as_ref() == stream)
                .then_some(Earlier {
                    id: entry.id,
                    session_id: entry.route.session_id,
                    disconnected: entry.disconnected,
                    version: theirs.version,
                })
        })
        .collect()
}

/// MS-SMB2 3.3.5.9.13: an open whose version is newer than or equal to the one asked refuses
/// the CREATE with STATUS_FILE_FORCED_CLOSED; only when both sides carry a version.
pub(crate) fn refuses(earlier: &[Earlier], asked: Option<AppInstanceVersion>) -> bool {
    let Some(asked) = asked else {
        return false;
    };
    earlier
        .iter()
        .any(|e| e.version.is_some_and(|theirs| theirs >= asked))
}

/// One earlier open, found and checked, to close.
enum Found {
    Connected(Arc<crate::state::session::Session>),
    Disconnected,
}

/// Closes, as CLOSE would (locks, leases, durable state, delete-on-close), the opens of
/// `file` that `asking`'s CREATE on `share` by `user` takes over; STATUS_FILE_FORCED_CLOSED
/// without closing anything when one of them is of a newer or equal version. `share` is
/// `None` for another node's CREATE, whose file key named the share already.
///
/// Who may do this: MS-SMB2 names no user check, but an AppInstanceId is only a GUID a client
/// sends, so the server takes over only opens of the same account (an anonymous logon proves
/// no one and takes over nothing), and only on the same share. Another user's open is left
/// alone: the CREATE then meets it as any other open (share access, oplock breaks).
pub(crate) fn take_over(
    server: &Server,
    share: Option<&str>,
    user: &SessionUser,
    file: &SharedFile,
    asking: &AppInstance,
    stream: Option<&Arc<str>>,
) -> Result<(), NtStatus> {
    let candidates = earlier_opens(&file.state.lock().opens, asking, stream);
    if candidates.is_empty() {
        return Ok(());
    }
    let mut found = Vec::with_capacity(candidates.len());
    for earlier in candidates {
        let who = if earlier.disconnected {
            server
                .durable
                .durability(earlier.id)
                .filter(|d| share.is_none_or(|s| d.share == s) && d.opener.same_account(user))
                .map(|_| Found::Disconnected)
        } else {
            let session = server.sessions.lock().get(&earlier.session_id).cloned();
            session
                .filter(|s| s.user().is_some_and(|owner| owner.same_account(user)))
                .filter(|s| {
                    s.state
                        .lock()
                        .opens
                        .get(&earlier.id)
                        .is_some_and(|open| share.is_none_or(|s| open.share.name == s))
                })
                .map(Found::Connected)
        };
        if let Some(who) = who {
            found.push((earlier, who));
        }
    }
    let versions: Vec<Earlier> = found.iter().map(|(e, _)| *e).collect();
    if refuses(&versions, asking.version) {
        return Err(NtStatus::FILE_FORCED_CLOSED);
    }
    for (earlier, who) in found {
        let closed = match who {
            Found::Connected(session) => {
                let open = session.state.lock().opens.remove(&earlier.id);
                open.inspect(|open| close_open(server, open))
            }
            // The durable table holds a disconnected open; it closes it and forgets it.
            Found::Disconnected => server
                .durable
                .disconnected_open(earlier.id)
                .filter(|_| server.durable.expire(server, earlier.id, None)),
        };
        if let Some(open) = closed {
            tracing::debug!(
                file_id = earlier.id,
                path = &*escape(open.path().as_str()),
                "open closed for a new open of its application instance"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::caching::{Caching, Route};
    use smb3d_dtyp::AccessMask;
    use smb3d_smb2::create::ShareAccess;

    const APP: Guid = Guid([1; 16]);
    const NODE1: Guid = Guid([0x11; 16]);
    const NODE2: Guid = Guid([0x22; 16]);

    fn v(high: u64, low: u64) -> Option<AppInstanceVersion> {
        Some(AppInstanceVersion { high, low })
    }

    fn entry(id: u64, app_instance: Option<AppInstance>) -> OpenEntry {
        OpenEntry {
            id,
            access: AccessMask::FILE_READ_DATA,
            share: ShareAccess::empty(),
            stream: None,
            persistent_id: id,
            caching: Caching::None,
            route: Route {
                conn: std::sync::Weak::new(),
                session_id: 100 + id,
                encrypt: false,
            },
            disconnected: false,
            persistent: false,
            app_instance: app_instance.map(Box::new),
        }
    }

    fn instance(id: Guid, client: Guid, version: Option<AppInstanceVersion>) -> AppInstance {
        AppInstance {
            id,
            version,
            client,
            user: None,
        }
    }

    #[test]
    fn only_the_same_instance_of_another_client_on_the_same_stream() {
        let stream: Arc<str> = Arc::from("s:$data");
        let mut on_stream = entry(5, Some(instance(APP, NODE1, None)));
        on_stream.stream = Some(stream.clone());
        let opens = [
            entry(1, Some(instance(APP, NODE1, None))),
            // The asking client's own open of the instance: its own to close.
            entry(2, Some(instance(APP, NODE2, None))),
            entry(3, Some(instance(Guid([2; 16]), NODE1, None))),
            entry(4, None),
            on_stream,
        ];
        let asking = instance(APP, NODE2, None);
        let found = earlier_opens(&opens, &asking, None);
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0],
            Earlier {
                id: 1,
                session_id: 101,
                disconnected: false,
                version: None
            }
        );
        let found = earlier_opens(&opens, &asking, Some(&stream));
        assert_eq!(found.iter().map(|e| e.id).collect::<Vec<_>>(), [5]);
    }

    #[test]
    fn a_newer_or_equal_version_refuses() {
        let asking = instance(APP, NODE2, v(2, 5));
        let earlier = |version| {
            earlier_opens(
                &[entry(1, Some(instance(APP, NODE1, version)))],
                &asking,
                None,
            )
        };
        assert!(refuses(&earlier(v(2, 5)), asking.version));
        assert!(refuses(&earlier(v(2, 6)), asking.version));
        assert!(refuses(&earlier(v(3, 0)), asking.version));
        assert!(!refuses(&earlier(v(2, 4)), asking.version));
        assert!(!refuses(&earlier(v(1, u64::MAX)), asking.version));
        // Without a version on either side the earlier open is closed, not refused.
        assert!(!refuses(&earlier(None), asking.version));
        assert!(!refuses(&earlier(v(9, 9)), None));
    }
}
