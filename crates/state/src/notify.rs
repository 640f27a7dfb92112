//! Directory changes across cluster nodes (docs/cluster.md "Change notify and directory leases
//! across nodes"): a change made through one node's client that another node's CHANGE_NOTIFY
//! watch (MS-SMB2 3.3.5.19, MS-FSA 2.1.5.11) or directory lease (MS-SMB2 3.3.4.7) must hear of.
//! Each node publishes the directories it is interested in; a change to one of them is sent
//! only to the nodes interested in it, as a [`DirEvent`] in the binary form below, which the
//! receiver decodes through the checked reader before it believes anything of it.
//!
//! Encoding (little-endian), version 1:
//! `version u8 = 1 | kind u8 | kind's fields | share_len u16 | share | path_len u16 | path`,
//! kind 1 (notify): `action u32 | filter u32`; kind 2 (listing): `spared u8 (0 or 1) | key
//! [16] when 1`; kind 3 (lost): no fields. `share` is the share's path on the host, `path` the
//! changed entry's path in the share (`/`-separated, UTF-8, not empty; empty for kind 3); each
//! at most [`MAX_EVENT_TEXT`] bytes. Bytes after the path are ignored, so that a later version
//! may append fields.

use std::fmt;
use std::sync::Arc;

use smb3d_wire::{DecodeError, Reader, Result};

/// The longest share path or entry path an event carries, in bytes: longer changes are not
/// sent (bounds an event, and the receiver's work, whatever a client named).
pub const MAX_EVENT_TEXT: usize = 4096;

const VERSION: u8 = 1;
const KIND_NOTIFY: u8 = 1;
const KIND_LISTING: u8 = 2;
const KIND_LOST: u8 = 3;

/// What changed, as the receiving node's watches and leases need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirChange {
    /// A change CHANGE_NOTIFY reports: the FILE_NOTIFY_INFORMATION Action (MS-FSCC 2.7.1)
    /// and the CompletionFilter bits (MS-SMB2 2.2.35) it matches.
    Notify { action: u32, filter: u32 },
    /// A child changed as a listing shows it: the directory's leases break (MS-SMB2 3.3.4.7),
    /// except the one whose key the changing open named as its parent (`spared`).
    Listing { spared: Option<[u8; 16]> },
    /// Changes in the share were not sent (the sender's outbox was full, or etcd refused
    /// them): the receiver's watches of the share complete with STATUS_NOTIFY_ENUM_DIR
    /// (MS-SMB2 3.3.4.4, MS-FSA 2.1.5.11) and its directory leases there break. Its `path` is
    /// empty.
    Lost,
}

/// A change of the entry `path` of the share whose path is `share`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEvent {
    pub share: String,
    pub path: String,
    pub change: DirChange,
}

impl DirEvent {
    /// Changes in the share at `share` were lost.
    pub fn lost(share: &str) -> Self {
        Self {
            share: share.to_owned(),
            path: String::new(),
            change: DirChange::Lost,
        }
    }

    /// The event's bytes; `None` when a path is longer than [`MAX_EVENT_TEXT`], or empty but
    /// for [`DirChange::Lost`] (whose path is always empty).
    pub fn encode(&self) -> Option<Vec<u8>> {
        let (share, path) = (self.share.as_bytes(), self.path.as_bytes());
        let lost = self.change == DirChange::Lost;
        if share.len() > MAX_EVENT_TEXT || path.is_empty() != lost || path.len() > MAX_EVENT_TEXT {
            return None;
        }
        let mut out = Vec::with_capacity(32 + share.len() + path.len());
        out.push(VERSION);
        match self.change {
            DirChange::Notify { action, filter } => {
                out.push(KIND_NOTIFY);
                out.extend_from_slice(&action.to_le_bytes());
                out.extend_from_slice(&filter.to_le_bytes());
            }
            DirChange::Listing { spared } => {
                out.push(KIND_LISTING);
                match spared {
                    Some(key) => {
                        out.push(1);
                        out.extend_from_slice(&key);
                    }
                    None => out.push(0),
                }
            }
            DirChange::Lost => out.push(KIND_LOST),
        }
        for text in [share, path] {
            out.extend_from_slice(&u16::try_from(text.len()).ok()?.to_le_bytes());
            out.extend_from_slice(text);
        }
        Some(out)
    }

    /// Reads an event; anything malformed (another version, an unknown kind, a length beyond
    /// the bytes or the bound, text that is not UTF-8, an empty path but for a lost event's, a
    /// lost event's path not empty) is refused.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        if r.u8("DirEvent.Version")? != VERSION {
            return Err(DecodeError::invalid("DirEvent.Version"));
        }
        let change = match r.u8("DirEvent.Kind")? {
            KIND_NOTIFY => DirChange::Notify {
                action: r.u32("DirEvent.Action")?,
                filter: r.u32("DirEvent.Filter")?,
            },
            KIND_LISTING => DirChange::Listing {
                spared: match r.u8("DirEvent.Spared")? {
                    0 => None,
                    1 => Some(r.array("DirEvent.SparedKey")?),
                    _ => return Err(DecodeError::invalid("DirEvent.Spared")),
                },
            },
            KIND_LOST => DirChange::Lost,
            _ => return Err(DecodeError::invalid("DirEvent.Kind")),
        };
        let share = text(&mut r, "DirEvent.Share")?;
        let path = text(&mut r, "DirEvent.Path")?;
        if path.is_empty() != (change == DirChange::Lost) {
            return Err(DecodeError::invalid("DirEvent.Path"));
        }
        Ok(Self {
            share,
            path,
            change,
        })
    }

    /// The directory holding the changed entry (`""` for the share's root).
    pub fn dir(&self) -> &str {
        self.path.rsplit_once('/').map_or("", |(dir, _)| dir)
    }
}

fn text(r: &mut Reader<'_>, field: &'static str) -> Result<String> {
    let len = usize::from(r.u16(field)?);
    if len > MAX_EVENT_TEXT {
        return Err(DecodeError::invalid(field));
    }
    let bytes = r.bytes(len, field)?;
    std::str::from_utf8(bytes)
        .map(str::to_owned)
        .map_err(|_| DecodeError::invalid(field))
}

/// Whether a node interested in the directory `watched` (and, with `tree`, in everything
/// below it) hears of a change in the directory `changed` (paths in one share, `""` the root).
pub fn concerns(watched: &str, tree: bool, changed: &str) -> bool {
    if watched == changed {
        return true;
    }
    if !tree {
        return false;
    }
    watched.is_empty()
        || changed
            .strip_prefix(watched)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Where the events other nodes send this node go.
pub type DirEventSink = Arc<dyn Fn(DirEvent) + Send + Sync>;

/// The cluster's side of change notify and directory leases. No call waits on the network.
pub trait ClusterNotify: Send + Sync + fmt::Debug {
    /// This node is interested in the directory `dir` of the share at `share` (and, with
    /// `tree`, in everything below it): a CHANGE_NOTIFY watch or a directory lease there.
    /// Calls nest; each is ended by one [`ClusterNotify::uninterested`] with the same arguments.
    fn interested(&self, share: &str, dir: &str, tree: bool);

    /// Ends one [`ClusterNotify::interested`].
    fn uninterested(&self, share: &str, dir: &str, tree: bool);

    /// Whether another node is interested in any directory at all (one atomic load): while
    /// none is, changes need not even be described.
    fn anyone_else(&self) -> bool;

    /// Sends `event` to the other nodes interested in its directory; nothing, and no round
    /// trip, when none is.
    fn changed(&self, event: DirEvent);

    /// Where the events other nodes send this node go from now on.
    fn on_event(&self, sink: DirEventSink);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notify() -> DirEvent {
        DirEvent {
            share: "/srv/a".into(),
            path: "d/x.txt".into(),
            change: DirChange::Notify {
                action: 1,
                filter: 0x3,
            },
        }
    }

    #[test]
    fn golden_vectors() {
        let bytes = notify().encode().unwrap();
        assert_eq!(
            bytes,
            b"\x01\x01\x01\x00\x00\x00\x03\x00\x00\x00\x06\x00/srv/a\x07\x00d/x.txt"
        );
        assert_eq!(DirEvent::decode(&bytes).unwrap(), notify());
        let listing = DirEvent {
            share: "/s".into(),
            path: "f".into(),
            change: DirChange::Listing {
                spared: Some([0xab; 16]),
            },
        };
        let bytes = listing.encode().unwrap();
        let mut expected = b"\x01\x02\x01".to_vec();
        expected.extend_from_slice(&[0xab; 16]);
        expected.extend_from_slice(b"\x02\x00/s\x01\x00f");
        assert_eq!(bytes, expected);
        assert_eq!(DirEvent::decode(&bytes).unwrap(), listing);
        let none = b"\x01\x02\x00\x02\x00/s\x03\x00a/b";
        let event = DirEvent::decode(none).unwrap();
        assert_eq!(event.change, DirChange::Listing { spared: None });
        assert_eq!(event.dir(), "a");
        // A later version's fields after the path are ignored.
        let mut longer = none.to_vec();
        longer.extend_from_slice(b"more");
        assert_eq!(DirEvent::decode(&longer).unwrap(), event);
        let lost = DirEvent::lost("/srv/a");
        let bytes = lost.encode().unwrap();
        assert_eq!(bytes, b"\x01\x03\x06\x00/srv/a\x00\x00");
        assert_eq!(DirEvent::decode(&bytes).unwrap(), lost);
        assert_eq!(lost.dir(), "");
    }

    #[test]
    fn a_lost_event_has_an_empty_path_and_only_it() {
        assert!(
            DirEvent::decode(b"\x01\x03\x02\x00/s\x01\x00f").is_err(),
            "a lost event naming a path"
        );
        let named = DirEvent {
            path: "f".into(),
            ..DirEvent::lost("/s")
        };
        assert_eq!(named.encode(), None);
        let empty = DirEvent {
            path: String::new(),
            ..notify()
        };
        assert_eq!(empty.encode(), None);
        for cut in 0..6 {
            assert!(DirEvent::decode(&b"\x01\x03\x02\x00/s\x00\x00"[..cut]).is_err());
        }
    }

    #[test]
    fn malformed_events_are_refused() {
        let good = notify().encode().unwrap();
        for cut in 0..good.len() {
            assert!(DirEvent::decode(&good[..cut]).is_err(), "cut at {cut}");
        }
        let bent = |at: usize, byte: u8| {
            let mut b = good.clone();
            b[at] = byte;
            DirEvent::decode(&b)
        };
        assert!(bent(0, 2).is_err(), "another version");
        assert!(bent(1, 9).is_err(), "an unknown kind");
        assert!(bent(12, 0xff).is_err(), "text that is not UTF-8");
        assert!(bent(11, 0xff).is_err(), "a length beyond the bound");
        assert!(DirEvent::decode(b"\x01\x02\x02\x00\x00\x00\x00").is_err());
        assert!(
            DirEvent::decode(b"\x01\x02\x00\x00\x00\x00\x00").is_err(),
            "an empty path"
        );
        let long = DirEvent {
            path: "x".repeat(MAX_EVENT_TEXT + 1),
            ..notify()
        };
        assert_eq!(long.encode(), None);
    }

    #[test]
    fn interest_in_a_directory_and_in_its_tree() {
        assert!(concerns("d", false, "d"));
        assert!(!concerns("d", false, "d/e"));
        assert!(concerns("d", true, "d/e/f"));
        assert!(!concerns("d", true, "dd"));
        assert!(!concerns("d", true, ""));
        assert!(concerns("", false, ""));
        assert!(!concerns("", false, "d"));
        assert!(concerns("", true, "d/e"));
    }
}
