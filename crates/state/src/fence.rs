//! The cluster dialect fence (MS-SMB2 3.3.5.7, docs/cluster.md): a cluster node refuses a
//! TREE_CONNECT to a cluster share over a connection whose dialect is above the cluster's
//! MaxClusterDialect, the lowest `max_dialect` of the live nodes, unless the client says it
//! was connected to the share at that dialect before (SMB2_TREE_CONNECT_FLAG_CLUSTER_RECONNECT).
//! The back end keeps the value current from its view of the membership; a TREE_CONNECT reads
//! one atomic.

use std::sync::atomic::{AtomicU16, Ordering};

/// MaxClusterDialect (MS-SMB2 3.3.1.5), as a dialect revision (0x0302 for 3.0.2).
#[derive(Debug)]
pub struct ClusterDialect {
    max: AtomicU16,
}

impl ClusterDialect {
    /// A fence at `max` until the membership says otherwise.
    pub fn new(max: u16) -> Self {
        Self {
            max: AtomicU16::new(max),
        }
    }

    /// The cluster's max dialect now.
    pub fn max(&self) -> u16 {
        self.max.load(Ordering::Relaxed)
    }

    /// Moves the fence to the lowest of `own` (this node's) and the `members`' max dialects,
    /// so that it rises by itself once the last node of a lower dialect has left or been
    /// upgraded. Returns the new value.
    pub fn follow(&self, own: u16, members: impl IntoIterator<Item = u16>) -> u16 {
        let max = members.into_iter().fold(own, u16::min);
        self.max.store(max, Ordering::Relaxed);
        max
    }

    /// Whether a TREE_CONNECT to a cluster share over a connection of `dialect` proceeds
    /// (MS-SMB2 3.3.5.7): at or below the fence, or with CLUSTER_RECONNECT set. A refusal
    /// carries the fence, the dialect the client may connect at (3.2.5.5).
    pub fn admit(&self, dialect: u16, reconnect: bool) -> Result<(), u16> {
        let max = self.max();
        if reconnect || dialect <= max {
            Ok(())
        } else {
            Err(max)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ClusterDialect;

    #[test]
    fn a_dialect_above_the_fence_needs_the_reconnect_flag() {
        let fence = ClusterDialect::new(0x0302);
        assert_eq!(fence.admit(0x0302, false), Ok(()));
        assert_eq!(fence.admit(0x0300, false), Ok(()));
        assert_eq!(fence.admit(0x0210, false), Ok(()));
        assert_eq!(fence.admit(0x0311, false), Err(0x0302));
        assert_eq!(fence.admit(0x0311, true), Ok(()));
    }

    #[test]
    fn the_fence_is_the_lowest_member_and_rises_when_it_leaves() {
        let fence = ClusterDialect::new(0x0311);
        assert_eq!(fence.follow(0x0311, [0x0311, 0x0302]), 0x0302);
        assert_eq!(fence.admit(0x0311, false), Err(0x0302));
        // The 3.0.2 node left (or was upgraded): the fence rises by itself.
        assert_eq!(fence.follow(0x0311, [0x0311]), 0x0311);
        assert_eq!(fence.admit(0x0311, false), Ok(()));
        // This node's own cap holds whatever the others say (before its key is seen, too).
        assert_eq!(fence.follow(0x0300, [0x0311]), 0x0300);
        assert_eq!(fence.follow(0x0311, []), 0x0311);
    }
}
