//! Every SMB2 command's rules, declared once (as Samba's `smbd_smb2_table[]` does): what
//! admission checks before its handler runs, when its frame runs and in what order, whether
//! CANCEL must find it, whether it changes an open, and which handler serves it on a disk
//! share and on a named pipe. The pipeline (admission, ordering, scheduling, dispatch) and
//! `handlers::lookup_open` read it; adding a command or changing a rule is one row here.

use smb3d_smb2::Command;

use Handler as H;
use Order::{AfterAll, AfterWatches, BehindItsOpen};
use Runs::{ByReadLength, Inline, OwnTask};
use Session::{IfNamed, Never, Own, Required};
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::header::Header;

/// The session a request acts in (MS-SMB2 3.3.5.2.9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Session {
    /// One of the connection's sessions, established (or, for the commands that may be
    /// unsigned, in any state).
    Required,
    /// SessionId 0 names none, and the request is answered without one (ECHO).
    IfNamed,
    /// The handler finds or makes its session itself (SESSION_SETUP, 3.3.5.5).
    Own,
    /// None: the command runs before any session exists (NEGOTIATE, answered as the frame
    /// arrives).
    Never,
}

/// Which frames a request waits for before it runs, so that it sees what they did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    /// Every earlier frame of the connection has settled: what it ends (an open, a tree
    /// connect, a session) or watches must not be overtaken by what came before.
    AfterAll,
    /// Every earlier frame that may act on the request's open has settled (any frame naming
    /// no single open may): ending the open must not overtake a request on it, while other
    /// files' requests, stalled on the disk perhaps, do not hold it.
    BehindItsOpen,
    /// Every earlier frame holding a CHANGE_NOTIFY has registered its watch, so that a change
    /// this request makes reaches it.
    AfterWatches,
}

/// Whether a request may wait (a lock, a notification, an oplock break, data on a pipe), so
/// that it is registered for CANCEL before its handler runs (MS-SMB2 3.3.5.16), and where in
/// a compound it may.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Waits {
    Never,
    /// As the last request of its compound; before that it fails with STATUS_INTERNAL_ERROR,
    /// as Windows answers (MS-SMB2 3.3.5.2.7).
    Last,
    /// Anywhere in its compound: the requests after it are answered once it completes
    /// (CREATE waiting for oplock and lease breaks, MS-SMB2 <206>).
    Anywhere,
    /// On a named pipe only, where it may wait for the other end's write; as `Last`.
    OnPipe,
}

/// Where a frame holding the request runs (`pipeline::scheduling`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Runs {
    /// On the reader's task, when the frame is short: the request is brief.
    Inline,
    /// Inline only when the length it reads is brief (READ).
    ByReadLength,
    /// On a task of its own: it flushes, lists or copies.
    OwnTask,
}

/// The handler a request goes to (`pipeline::dispatch` makes the call).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Handler {
    SessionSetup,
    Logoff,
    TreeConnect,
    TreeDisconnect,
    Create,
    Close,
    Flush,
    Read,
    Write,
    Lock,
    Ioctl,
    Echo,
    QueryDirectory,
    ChangeNotify,
    QueryInfo,
    SetInfo,
    OplockBreak,
    PipeCreate,
    PipeClose,
    PipeFlush,
    PipeRead,
    PipeWrite,
    PipeQueryInfo,
    /// STATUS_NOT_SUPPORTED: pipes have no settable information (as on Samba).
    NotSupported,
    /// STATUS_INVALID_PARAMETER: the command is handled before dispatch (NEGOTIATE, CANCEL).
    None,
}

/// The rules of one command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CommandSpec {
    pub session: Session,
    /// Acts within a tree connect (MS-SMB2 3.3.5.2.11).
    pub needs_tree: bool,
    /// Goes on, unsigned, in a session that is not established (or no longer is): ending
    /// what the client holds must stay possible.
    pub may_be_unsigned: bool,
    pub waits: Waits,
    pub order: Order,
    /// Later frames wait until it has registered its watch (`Order::AfterWatches`).
    pub watches: bool,
    /// Changes its open, so a stale ChannelSequence refuses it (MS-SMB2 3.3.5.2.10).
    pub modifies: bool,
    pub runs: Runs,
    /// Opens something: refused on a tree connect whose share no longer admits the session
    /// since a re-authentication (MS-SMB2 3.3.5.5.2).
    pub opens: bool,
    /// The handler on a disk share (and for requests outside a tree connect).
    pub disk: Handler,
    /// The handler on a named pipe (`IPC$`).
    pub pipe: Handler,
}

/// The rules of `command`; an unknown command (refused as it arrives, 3.3.5.2.6) gets none of
/// the exemptions.
pub(crate) fn spec(command: Command) -> &'static CommandSpec {
    TABLE.get(usize::from(command.0)).unwrap_or(&UNKNOWN)
}

/// Whether `command` is an SMB2 command (MS-SMB2 2.2.1.2).
pub(crate) fn is_known(command: Command) -> bool {
    usize::from(command.0) < TABLE.len()
}

/// Where the FileId of a `command` request is, from the start of its header: the commands
/// that act on one open name it at a fixed place (MS-SMB2 2.2.14 to 2.2.39). OPLOCK_BREAK is
/// left out: a lease break acknowledgment has a LeaseKey there.
const fn file_id_at(command: Command) -> Option<usize> {
    let body = match command {
        Command::CLOSE
        | Command::FLUSH
        | Command::LOCK
        | Command::IOCTL
        | Command::QUERY_DIRECTORY
        | Command::CHANGE_NOTIFY => 8,
        Command::READ | Command::WRITE | Command::SET_INFO => 16,
        Command::QUERY_INFO => 24,
        _ => return None,
    };
    Some(smb3d_smb2::header::SMB2_HEADER_LEN + body)
}

/// The one open `pdu` acts on, when it names it itself: `None` for a command without a FileId,
/// a related request (whose FileId is its predecessor's), FileId::ANY, or a request too short.
pub(crate) fn file_id_of(hdr: &Header, pdu: &[u8]) -> Option<FileId> {
    let at = file_id_at(hdr.command)?;
    if hdr.is_related() {
        return None;
    }
    let mut r = smb3d_wire::Reader::new(pdu.get(at..)?);
    FileId::read(&mut r).ok().filter(|id| !id.is_any())
}

#[allow(clippy::too_many_arguments)]
const fn row(
    session: Session,
    needs_tree: bool,
    may_be_unsigned: bool,
    waits: Waits,
    order: Order,
    watches: bool,
    modifies: bool,
    runs: Runs,
    opens: bool,
    disk: Handler,
    pipe: Handler,
) -> CommandSpec {
    CommandSpec {
        session,
        needs_tree,
        may_be_unsigned,
        waits,
        order,
        watches,
        modifies,
        runs,
        opens,
        disk,
        pipe,
    }
}

/// Indexed by command code.
#[rustfmt::skip]
const TABLE: [CommandSpec; 19] = [
    //  session   tree   unsigned  waits            order         watches  modifies  runs          opens  disk               pipe
    row(Never,    false, false,    Waits::Never,    AfterWatches, false,   false,    Inline,       false, H::None,           H::None),           // NEGOTIATE
    row(Own,      false, false,    Waits::Never,    AfterWatches, false,   false,    Inline,       false, H::SessionSetup,   H::SessionSetup),   // SESSION_SETUP
    row(Required, false, true,     Waits::Never,    AfterAll,     false,   false,    Inline,       false, H::Logoff,         H::Logoff),         // LOGOFF
    row(Required, false, false,    Waits::Never,    AfterWatches, false,   false,    Inline,       false, H::TreeConnect,    H::TreeConnect),    // TREE_CONNECT
    row(Required, true,  false,    Waits::Never,    AfterAll,     false,   false,    Inline,       false, H::TreeDisconnect, H::TreeDisconnect), // TREE_DISCONNECT
    row(Required, true,  false,    Waits::Anywhere, AfterWatches, false,   false,    Inline,       true,  H::Create,         H::PipeCreate),     // CREATE
    row(Required, true,  true,     Waits::Never,    BehindItsOpen,false,   false,    Inline,       false, H::Close,          H::PipeClose),      // CLOSE
    row(Required, true,  false,    Waits::Never,    AfterWatches, false,   false,    OwnTask,      false, H::Flush,          H::PipeFlush),      // FLUSH
    row(Required, true,  false,    Waits::OnPipe,   AfterWatches, false,   false,    ByReadLength, false, H::Read,           H::PipeRead),       // READ
    row(Required, true,  false,    Waits::Never,    AfterWatches, false,   true,     Inline,       false, H::Write,          H::PipeWrite),      // WRITE
    row(Required, true,  true,     Waits::Last,     AfterWatches, false,   false,    Inline,       false, H::Lock,           H::Lock),           // LOCK
    row(Required, true,  false,    Waits::OnPipe,   AfterWatches, false,   true,     OwnTask,      false, H::Ioctl,          H::Ioctl),          // IOCTL
    row(Required, false, false,    Waits::Never,    AfterWatches, false,   false,    Inline,       false, H::None,           H::None),           // CANCEL
    row(IfNamed,  false, false,    Waits::Never,    AfterWatches, false,   false,    Inline,       false, H::Echo,           H::Echo),           // ECHO
    row(Required, true,  false,    Waits::Never,    AfterWatches, false,   false,    OwnTask,      false, H::QueryDirectory, H::QueryDirectory), // QUERY_DIRECTORY
    row(Required, true,  false,    Waits::Last,     AfterAll,     true,    false,    Inline,       false, H::ChangeNotify,   H::ChangeNotify),   // CHANGE_NOTIFY
    row(Required, true,  false,    Waits::Never,    AfterWatches, false,   false,    Inline,       false, H::QueryInfo,      H::PipeQueryInfo),  // QUERY_INFO
    row(Required, true,  false,    Waits::Last,     AfterWatches, false,   true,     Inline,       false, H::SetInfo,        H::NotSupported),   // SET_INFO
    row(Required, true,  false,    Waits::Never,    AfterWatches, false,   false,    Inline,       false, H::OplockBreak,    H::OplockBreak),    // OPLOCK_BREAK
];

#[rustfmt::skip]
const UNKNOWN: CommandSpec =
    row(Required, true,  false,    Waits::Never,    AfterWatches, false,   false,    Inline,       false, H::None,           H::None);

#[cfg(test)]
mod tests {
    use super::*;

    /// The commands whose rules satisfy `rule`.
    fn commands(rule: impl Fn(&CommandSpec) -> bool) -> Vec<Command> {
        (0..TABLE.len())
            .map(|code| Command(code as u16))
            .filter(|&command| rule(spec(command)))
            .collect()
    }

    #[test]
    fn rows_are_in_command_order() {
        assert_eq!(TABLE.len(), usize::from(Command::OPLOCK_BREAK.0) + 1);
        assert!(is_known(Command::OPLOCK_BREAK));
        assert!(!is_known(Command(0x13)));
        assert_eq!(spec(Command(0x13)), &UNKNOWN);
        // Each row names its command's handler, which pins the row to its place.
        assert_eq!(spec(Command::ECHO).disk, Handler::Echo);
        assert_eq!(spec(Command::OPLOCK_BREAK).disk, Handler::OplockBreak);
    }

    #[test]
    fn sessions() {
        assert_eq!(commands(|s| s.session == Never), [Command::NEGOTIATE]);
        assert_eq!(commands(|s| s.session == Own), [Command::SESSION_SETUP]);
        assert_eq!(commands(|s| s.session == IfNamed), [Command::ECHO]);
    }

    #[test]
    fn commands_outside_a_tree_connect() {
        assert_eq!(
            commands(|s| !s.needs_tree),
            [
                Command::NEGOTIATE,
                Command::SESSION_SETUP,
                Command::LOGOFF,
                Command::TREE_CONNECT,
                Command::CANCEL,
                Command::ECHO,
            ]
        );
    }

    #[test]
    fn what_goes_on_unsigned_in_a_session_not_established() {
        assert_eq!(
            commands(|s| s.may_be_unsigned),
            [Command::LOGOFF, Command::CLOSE, Command::LOCK]
        );
    }

    #[test]
    fn the_commands_cancel_can_reach_are_registered() {
        assert_eq!(
            commands(|s| s.waits == Waits::Last),
            [Command::LOCK, Command::CHANGE_NOTIFY, Command::SET_INFO]
        );
        assert_eq!(commands(|s| s.waits == Waits::Anywhere), [Command::CREATE]);
        assert_eq!(
            commands(|s| s.waits == Waits::OnPipe),
            [Command::READ, Command::IOCTL]
        );
    }

    #[test]
    fn what_waits_for_every_earlier_frame() {
        assert_eq!(
            commands(|s| s.order == AfterAll),
            [
                Command::LOGOFF,
                Command::TREE_DISCONNECT,
                Command::CHANGE_NOTIFY,
            ]
        );
        assert_eq!(commands(|s| s.order == BehindItsOpen), [Command::CLOSE]);
        assert_eq!(commands(|s| s.watches), [Command::CHANGE_NOTIFY]);
    }

    #[test]
    fn the_open_a_request_names() {
        let id = FileId {
            persistent: 7,
            volatile: 9,
        };
        let mut read = vec![0u8; 64 + 49];
        read[64 + 16..64 + 24].copy_from_slice(&7u64.to_le_bytes());
        read[64 + 24..64 + 32].copy_from_slice(&9u64.to_le_bytes());
        let mut hdr = Header {
            command: Command::READ,
            ..Header::default()
        };
        assert_eq!(file_id_of(&hdr, &read), Some(id));
        assert_eq!(file_id_of(&hdr, &read[..64 + 31]), None, "too short");
        hdr.command = Command::ECHO;
        assert_eq!(file_id_of(&hdr, &read), None, "no FileId");
        hdr.command = Command::READ;
        hdr.flags |= smb3d_smb2::header::HeaderFlags::RELATED_OPERATIONS;
        assert_eq!(file_id_of(&hdr, &read), None, "its predecessor's");
        let mut close = vec![0u8; 64 + 24];
        close[64 + 8..].fill(0xFF);
        let close_hdr = Header {
            command: Command::CLOSE,
            ..Header::default()
        };
        assert_eq!(file_id_of(&close_hdr, &close), None, "FileId::ANY");
    }

    #[test]
    fn what_a_stale_channel_sequence_refuses() {
        assert_eq!(
            commands(|s| s.modifies),
            [Command::WRITE, Command::IOCTL, Command::SET_INFO]
        );
    }

    #[test]
    fn what_runs_on_a_task_of_its_own() {
        assert_eq!(
            commands(|s| s.runs == OwnTask),
            [Command::FLUSH, Command::IOCTL, Command::QUERY_DIRECTORY]
        );
        assert_eq!(commands(|s| s.runs == ByReadLength), [Command::READ]);
    }

    #[test]
    fn what_a_tree_no_longer_admitted_refuses() {
        assert_eq!(commands(|s| s.opens), [Command::CREATE]);
    }

    #[test]
    fn handlers_on_disk_shares() {
        let handlers: Vec<Handler> = TABLE.iter().map(|s| s.disk).collect();
        assert_eq!(
            handlers,
            [
                H::None,
                H::SessionSetup,
                H::Logoff,
                H::TreeConnect,
                H::TreeDisconnect,
                H::Create,
                H::Close,
                H::Flush,
                H::Read,
                H::Write,
                H::Lock,
                H::Ioctl,
                H::None,
                H::Echo,
                H::QueryDirectory,
                H::ChangeNotify,
                H::QueryInfo,
                H::SetInfo,
                H::OplockBreak,
            ]
        );
    }

    #[test]
    fn what_named_pipes_handle_their_own_way() {
        assert_eq!(
            commands(|s| s.pipe != s.disk)
                .into_iter()
                .map(|command| (command, spec(command).pipe))
                .collect::<Vec<_>>(),
            [
                (Command::CREATE, H::PipeCreate),
                (Command::CLOSE, H::PipeClose),
                (Command::FLUSH, H::PipeFlush),
                (Command::READ, H::PipeRead),
                (Command::WRITE, H::PipeWrite),
                (Command::QUERY_INFO, H::PipeQueryInfo),
                (Command::SET_INFO, H::NotSupported),
            ]
        );
    }
}
