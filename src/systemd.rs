//! systemd's readiness protocol (sd_notify(3)): one datagram to the unix socket named by
//! `$NOTIFY_SOCKET`, so that a `Type=notify` unit is "active" only once the server listens and
//! shows "reloading" while it rereads its configuration. Without `$NOTIFY_SOCKET` (not under
//! systemd) every call does nothing.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixDatagram;

/// The variable systemd sets for `Type=notify` services.
const NOTIFY_SOCKET: &str = "NOTIFY_SOCKET";

/// Tells systemd the server is listening and serving; `status` is shown by `systemctl status`.
pub fn notify_ready(status: &str) {
    notify(&format!("READY=1\nSTATUS={status}"));
}

/// Tells systemd the configuration is being reread; call [`notify_ready`] when done.
pub fn notify_reloading() {
    notify("RELOADING=1\nSTATUS=reloading the configuration");
}

/// Tells systemd the server is shutting down.
pub fn notify_stopping() {
    notify("STOPPING=1\nSTATUS=stopping");
}

fn notify(state: &str) {
    let Some(socket) = std::env::var_os(NOTIFY_SOCKET).filter(|s| !s.is_empty()) else {
        return;
    };
    if let Err(e) = send(&socket, state) {
        tracing::warn!("sd_notify to {}: {e}", socket.to_string_lossy());
    }
}

/// Sends `state` to the socket at `socket`: a path, or an abstract name written with a
/// leading '@'.
fn send(socket: &OsStr, state: &str) -> io::Result<()> {
    let sender = UnixDatagram::unbound()?;
    let bytes = socket.as_bytes();
    let sent = match bytes.strip_prefix(b"@") {
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
            sender.send_to_addr(state.as_bytes(), &addr)?
        }
        None => sender.send_to(state.as_bytes(), socket)?,
    };
    if sent != state.len() {
        return Err(io::Error::other("short datagram"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receive(socket: &UnixDatagram) -> String {
        let mut buf = [0u8; 256];
        let n = socket.recv(&mut buf).unwrap();
        String::from_utf8(buf[..n].to_vec()).unwrap()
    }

    #[test]
    fn sends_to_a_socket_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let listener = UnixDatagram::bind(&path).unwrap();
        send(path.as_os_str(), "READY=1\nSTATUS=listening").unwrap();
        assert_eq!(receive(&listener), "READY=1\nSTATUS=listening");
    }

    #[test]
    fn sends_to_an_abstract_socket() {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("smb3d-test-notify-{}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let listener = UnixDatagram::bind_addr(&addr).unwrap();
        send(OsStr::new(&format!("@{name}")), "RELOADING=1").unwrap();
        assert_eq!(receive(&listener), "RELOADING=1");
    }

    #[test]
    fn a_missing_socket_is_an_error_not_a_panic() {
        assert!(send(OsStr::new("/nonexistent/notify"), "READY=1").is_err());
    }
}
