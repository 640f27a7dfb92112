//! smbfloor: the machine's floor under smbload's 1 MiB rows. For one row it does only the work
//! no server can avoid for it, 1 MiB at a time over one loopback TCP connection, and reports
//! the CPU seconds per GiB its own process spent (from CLOCK_PROCESS_CPUTIME_ID, the clock
//! /proc's utime+stime are cut from). A second process, the peer, plays smbload's part and keeps
//! `--depth` requests in flight (16, as smbload's 2 connections x 8): a read row's requests are
//! bare SMB2 headers each answered with 1 MiB, a write row's are 1 MiB messages each answered
//! with a bare header. The peer's CPU is reported, not counted. On loopback a segment's receive
//! runs in the kernel in the sending process's system call, or in the receiver's when it holds
//! the socket, so how the TCP work splits between the two ends moves with timing, for the
//! server and smbload as for these two.
//!
//! Rows (docs/benchmarks.md, "Machine floors"):
//! - `read-plain`: `sendfile` from a page-cached file into the socket.
//! - `write-plain`: `splice` from the socket into a pipe and from the pipe into the file.
//! - `write-plain-copy`: `read` from the socket into memory, `pwrite` into the file.
//! - `read-sign`, `read-encrypt`: `pread` into a buffer behind an SMB2 header, AES-GMAC signing
//!   (MS-SMB2 3.1.4.1) or AES-128-GCM encryption behind a TRANSFORM_HEADER (3.1.4.3) with the
//!   provider the server uses (`smb3d_crypto::default_provider`), `write` to the socket.
//! - `write-sign`, `write-encrypt`: `read` of a signed or encrypted message from the socket,
//!   verification or decryption, `pwrite` of its data into the file.
//!
//! The file's offsets go round it 1 MiB at a time; it is written full and read once before the
//! clock starts, so reads come from the page cache and writes overwrite cached pages, as in
//! smbload's rows once warm.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::json;
use smb3d_crypto::{Cipher, MessageCipher, MessageSigner, SigningAlgorithm, default_provider};
use smb3d_smb2::header::{Command, Header, HeaderFlags, MESSAGE_ID_OFFSET, SMB2_HEADER_LEN};
use smb3d_smb2::transform::{AAD_RANGE, TRANSFORM_HEADER_LEN, TransformFlags, TransformHeader};

const MIB: usize = 1 << 20;
const GIB: f64 = (1u64 << 30) as f64;
/// Where a TRANSFORM_HEADER holds the AEAD tag and the nonce (MS-SMB2 2.2.41).
const TAG: std::ops::Range<usize> = 4..20;
const NONCE: std::ops::Range<usize> = 20..32;
/// A GCM nonce's length; the rest of the header's 16-byte Nonce field is zero.
const GCM_NONCE_LEN: usize = 12;
/// The fixed keys of the floor: what is measured is the cipher's work, not the key's secrecy.
const SIGNING_KEY: [u8; 16] = [0x5a; 16];
const ENCRYPTION_KEY: [u8; 16] = [0xa5; 16];

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Row {
    ReadPlain,
    WritePlain,
    WritePlainCopy,
    ReadSign,
    WriteSign,
    ReadEncrypt,
    WriteEncrypt,
}

impl Row {
    fn is_read(self) -> bool {
        matches!(self, Self::ReadPlain | Self::ReadSign | Self::ReadEncrypt)
    }

    /// Bytes of one message on the wire: the data, behind the headers its protection needs.
    fn message_len(self) -> usize {
        match self {
            Self::ReadPlain | Self::WritePlain | Self::WritePlainCopy => MIB,
            Self::ReadSign | Self::WriteSign => SMB2_HEADER_LEN + MIB,
            Self::ReadEncrypt | Self::WriteEncrypt => TRANSFORM_HEADER_LEN + SMB2_HEADER_LEN + MIB,
        }
    }
}

#[derive(Debug, Parser)]
#[command(
    about = "The CPU per GiB the work of smbload's 1 MiB rows costs on this machine (bench/load)"
)]
struct Args {
    #[arg(long, value_enum)]
    row: Row,
    /// The file read or written; made (or remade) at --file-size when it is not that long.
    #[arg(long, required_unless_present = "peer")]
    file: Option<PathBuf>,
    #[arg(long, default_value_t = 64 << 20)]
    file_size: u64,
    /// Seconds measured.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Seconds run before the measurement starts.
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// Requests in flight, as smbload's 1 MiB rows keep (2 connections x 8).
    #[arg(long, default_value_t = 16)]
    depth: usize,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Run as the peer connecting to this address (started by smbfloor itself).
    #[arg(long, hide = true)]
    peer: Option<String>,
}

type Result<T> = std::result::Result<T, String>;

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let result = match &args.peer {
        Some(addr) => peer(args.row, addr, args.depth),
        None => measure(&args).map(|report| {
            if args.json {
                println!("{report}");
            }
        }),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("smbfloor: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// utime + stime of another process, from /proc (USER_HZ ticks, 100 per second).
fn process_cpu_seconds(pid: u32) -> Result<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| e.to_string())?;
    // Fields 14 and 15; the command name (field 2) ends at the last ')'.
    let rest = text
        .get(text.rfind(')').map_or(0, |i| i + 2)..)
        .unwrap_or_default();
    let ticks: u64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|v| v.parse::<u64>().ok())
        .sum();
    Ok(ticks as f64 / 100.0)
}

fn cpu_seconds() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// The peer, smbload's part: keeps `depth` requests in flight - a read row's requests, each
/// answered with one message it reads whole, or a write row's messages, each answered with a
/// response - until the measuring process closes the connection.
fn peer(row: Row, addr: &str, depth: usize) -> Result<()> {
    let mut sock = TcpStream::connect(addr).map_err(|e| format!("peer: connect {addr}: {e}"))?;
    let (send, mut answer) = if row.is_read() {
        (
            request(Command::READ).to_vec(),
            vec![0u8; row.message_len()],
        )
    } else {
        (write_message(row)?, vec![0u8; SMB2_HEADER_LEN])
    };
    let ended = |e: std::io::Error| match e.kind() {
        // The measuring process closed the connection: done.
        std::io::ErrorKind::UnexpectedEof
        | std::io::ErrorKind::BrokenPipe
        | std::io::ErrorKind::ConnectionReset => Ok(()),
        _ => Err(format!("peer: {e}")),
    };
    for _ in 0..depth {
        if let Err(e) = sock.write_all(&send) {
            return ended(e);
        }
    }
    loop {
        if let Err(e) = sock
            .read_exact(&mut answer)
            .and_then(|()| sock.write_all(&send))
        {
            return ended(e);
        }
    }
}

/// A request (a read row's) or a response (a write row's): a bare SMB2 header, the least
/// either can be.
fn request(command: Command) -> [u8; SMB2_HEADER_LEN] {
    Header {
        command,
        credits: 1,
        ..Header::default()
    }
    .to_bytes()
}

/// What a write row receives: 1 MiB of data, alone, signed behind an SMB2 WRITE header, or
/// encrypted with that header behind a TRANSFORM_HEADER.
fn write_message(row: Row) -> Result<Vec<u8>> {
    let data: Vec<u8> = (0..MIB).map(|i| (i * 7 + i / 4096) as u8).collect();
    let header = Header {
        command: Command::WRITE,
        flags: HeaderFlags::SIGNED,
        message_id: 1,
        ..Header::default()
    };
    match row {
        Row::WritePlain | Row::WritePlainCopy => Ok(data),
        Row::WriteSign => {
            let mut msg = header.to_bytes().to_vec();
            msg.extend_from_slice(&data);
            signer().sign(&mut msg);
            Ok(msg)
        }
        Row::WriteEncrypt => {
            let mut msg = transform_header(SMB2_HEADER_LEN + MIB)?;
            msg.extend_from_slice(&header.to_bytes());
            msg.extend_from_slice(&data);
            encrypt(&*cipher()?, &mut msg, 1)?;
            Ok(msg)
        }
        _ => Err(format!("{row:?} receives nothing")),
    }
}

fn signer() -> Box<dyn MessageSigner> {
    default_provider().signer(SigningAlgorithm::AesGmac, &SIGNING_KEY)
}

fn cipher() -> Result<Box<dyn MessageCipher>> {
    default_provider()
        .cipher(Cipher::Aes128Gcm, &ENCRYPTION_KEY)
        .map_err(|e| e.to_string())
}

fn transform_header(plaintext: usize) -> Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(TRANSFORM_HEADER_LEN + plaintext);
    TransformHeader {
        signature: [0; 16],
        nonce: [0; 16],
        original_message_size: u32::try_from(plaintext).map_err(|e| e.to_string())?,
        flags: TransformFlags::ENCRYPTED,
        session_id: 1,
    }
    .encode(&mut smb3d_wire::Writer::new(&mut buf));
    Ok(buf)
}

/// Encrypts a TRANSFORM_HEADER's message in place under nonce `n` and stores nonce and tag
/// in the header (MS-SMB2 3.1.4.3).
fn encrypt(cipher: &dyn MessageCipher, msg: &mut [u8], n: u64) -> Result<()> {
    let (head, body) = msg.split_at_mut(TRANSFORM_HEADER_LEN);
    let mut nonce = [0u8; GCM_NONCE_LEN];
    nonce[..8].copy_from_slice(&n.to_le_bytes());
    head[NONCE][..GCM_NONCE_LEN].copy_from_slice(&nonce);
    let tag = cipher
        .encrypt(&nonce, &head[AAD_RANGE], body)
        .map_err(|e| e.to_string())?;
    head[TAG].copy_from_slice(&tag);
    Ok(())
}

/// Checks the tag of a TRANSFORM_HEADER's message and decrypts it in place.
fn decrypt(cipher: &dyn MessageCipher, msg: &mut [u8]) -> Result<()> {
    let (head, body) = msg.split_at_mut(TRANSFORM_HEADER_LEN);
    let mut tag = [0u8; 16];
    tag.copy_from_slice(&head[TAG]);
    cipher
        .decrypt(&head[NONCE][..GCM_NONCE_LEN], &head[AAD_RANGE], body, &tag)
        .map_err(|e| format!("decrypt: {e}"))
}

/// Makes the file `size` bytes long unless it is, and reads it once into the page cache.
fn prepare_file(path: &std::path::Path, size: u64) -> Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let mut buf = vec![0u8; MIB];
    if len != size {
        file.set_len(0).map_err(|e| e.to_string())?;
        let mut off = 0;
        while off < size {
            for (i, b) in buf.iter_mut().enumerate() {
                *b = (off as usize + i).wrapping_mul(2_654_435_761) as u8;
            }
            file.write_all_at(&buf, off).map_err(|e| e.to_string())?;
            off += MIB as u64;
        }
        file.sync_all().map_err(|e| e.to_string())?;
    }
    let mut off = 0;
    while off < size {
        file.read_exact_at(&mut buf, off)
            .map_err(|e| e.to_string())?;
        off += MIB as u64;
    }
    Ok(file)
}

/// The peer process and its connection, the process killed and reaped when dropped.
struct Peer {
    child: std::process::Child,
}

impl Drop for Peer {
    fn drop(&mut self) {
        // It exits by itself once the connection is closed; this bounds a stuck one.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_peer(row: Row, depth: usize) -> Result<(Peer, TcpStream)> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let child = std::process::Command::new(exe)
        .args(["--row", &row_name(row), "--depth", &depth.to_string()])
        .args(["--peer", &addr.to_string()])
        .spawn()
        .map_err(|e| format!("starting the peer: {e}"))?;
    let peer = Peer { child };
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match listener.accept() {
            Ok((sock, _)) => {
                sock.set_nonblocking(false).map_err(|e| e.to_string())?;
                return Ok((peer, sock));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(format!("the peer did not connect: {e}")),
        }
    }
}

/// The measuring process's side of one row: one message of it per call.
struct Work {
    row: Row,
    file: File,
    sock: TcpStream,
    buf: Vec<u8>,
    pipe: Option<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)>,
    signer: Box<dyn MessageSigner>,
    cipher: Box<dyn MessageCipher>,
    messages: u64,
    /// Requests received and not yet answered, in bytes (a read row's).
    requested: usize,
    requests: Vec<u8>,
    response: [u8; SMB2_HEADER_LEN],
}

impl Work {
    fn new(row: Row, file: File, sock: TcpStream) -> Result<Self> {
        let mut buf = match row {
            Row::ReadEncrypt => transform_header(SMB2_HEADER_LEN + MIB)?,
            _ => Vec::new(),
        };
        if matches!(row, Row::ReadSign | Row::ReadEncrypt) {
            let header = Header {
                command: Command::READ,
                flags: HeaderFlags::SERVER_TO_REDIR | HeaderFlags::SIGNED,
                ..Header::default()
            };
            buf.extend_from_slice(&header.to_bytes());
        }
        buf.resize(row.message_len(), 0);
        let pipe = if row == Row::WritePlain {
            let (r, w) = rustix::pipe::pipe().map_err(|e| e.to_string())?;
            // One pipe holds the whole MiB, as the server's pipes hold as much as they may.
            rustix::pipe::fcntl_setpipe_size(&w, MIB).map_err(|e| e.to_string())?;
            Some((r, w))
        } else {
            None
        };
        Ok(Self {
            row,
            file,
            sock,
            buf,
            pipe,
            signer: signer(),
            cipher: cipher()?,
            messages: 0,
            requested: 0,
            requests: vec![0u8; 64 * SMB2_HEADER_LEN],
            response: request(Command::WRITE),
        })
    }

    /// Waits for a read row's next request; requests that arrived together are taken in one
    /// `read`, as a server takes them.
    fn take_request(&mut self) -> Result<()> {
        while self.requested < SMB2_HEADER_LEN {
            let n = self
                .sock
                .read(&mut self.requests)
                .map_err(|e| format!("reading requests: {e}"))?;
            if n == 0 {
                return Err("the peer closed the connection".into());
            }
            self.requested += n;
        }
        self.requested -= SMB2_HEADER_LEN;
        Ok(())
    }

    /// Answers one request: moves one MiB of data between the file at `off` and the socket.
    fn one(&mut self, off: u64) -> Result<()> {
        self.messages += 1;
        if self.row.is_read() {
            self.take_request()?;
        }
        self.transfer(off)?;
        if !self.row.is_read() {
            self.sock
                .write_all(&self.response)
                .map_err(|e| format!("responding: {e}"))?;
        }
        Ok(())
    }

    fn transfer(&mut self, off: u64) -> Result<()> {
        let io = |e: std::io::Error| e.to_string();
        match self.row {
            Row::ReadPlain => {
                let (mut at, end) = (off, off + MIB as u64);
                while at < end {
                    let left = (end - at) as usize;
                    let n = rustix::fs::sendfile(&self.sock, &self.file, Some(&mut at), left)
                        .map_err(|e| format!("sendfile: {e}"))?;
                    if n == 0 {
                        return Err("sendfile: end of file".into());
                    }
                }
            }
            Row::ReadSign => {
                // A response's signature covers its own MessageId (MS-SMB2 3.1.4.1).
                self.buf[MESSAGE_ID_OFFSET..MESSAGE_ID_OFFSET + 8]
                    .copy_from_slice(&self.messages.to_le_bytes());
                self.file
                    .read_exact_at(&mut self.buf[SMB2_HEADER_LEN..], off)
                    .map_err(io)?;
                self.signer.sign(&mut self.buf);
                self.sock.write_all(&self.buf).map_err(io)?;
            }
            Row::ReadEncrypt => {
                let data = TRANSFORM_HEADER_LEN + SMB2_HEADER_LEN;
                self.file
                    .read_exact_at(&mut self.buf[data..], off)
                    .map_err(io)?;
                encrypt(&*self.cipher, &mut self.buf, self.messages)?;
                self.sock.write_all(&self.buf).map_err(io)?;
            }
            Row::WritePlain => {
                let (r, w) = self.pipe.as_ref().ok_or("no pipe")?;
                let mut held = 0;
                while held < MIB {
                    let n = rustix::pipe::splice(
                        &self.sock,
                        None,
                        w,
                        None,
                        MIB - held,
                        rustix::pipe::SpliceFlags::MOVE,
                    )
                    .map_err(|e| format!("splice from the socket: {e}"))?;
                    if n == 0 {
                        return Err("the peer closed the connection".into());
                    }
                    held += n;
                }
                let mut at = off;
                while held > 0 {
                    let n = rustix::pipe::splice(
                        r,
                        None,
                        &self.file,
                        Some(&mut at),
                        held,
                        rustix::pipe::SpliceFlags::MOVE,
                    )
                    .map_err(|e| format!("splice into the file: {e}"))?;
                    held -= n;
                }
            }
            Row::WritePlainCopy => {
                self.sock.read_exact(&mut self.buf).map_err(io)?;
                self.file.write_all_at(&self.buf, off).map_err(io)?;
            }
            Row::WriteSign => {
                self.sock.read_exact(&mut self.buf).map_err(io)?;
                if !self.signer.verify(&mut self.buf) {
                    return Err("a signature did not verify".into());
                }
                self.file
                    .write_all_at(&self.buf[SMB2_HEADER_LEN..], off)
                    .map_err(io)?;
            }
            Row::WriteEncrypt => {
                self.sock.read_exact(&mut self.buf).map_err(io)?;
                decrypt(&*self.cipher, &mut self.buf)?;
                let data = TRANSFORM_HEADER_LEN + SMB2_HEADER_LEN;
                self.file.write_all_at(&self.buf[data..], off).map_err(io)?;
            }
        }
        Ok(())
    }
}

fn measure(args: &Args) -> Result<serde_json::Value> {
    if args.file_size < MIB as u64 || !args.file_size.is_multiple_of(MIB as u64) {
        return Err("--file-size must be a positive multiple of 1 MiB".into());
    }
    let path = args.file.as_ref().ok_or("--file is needed")?;
    let file = prepare_file(path, args.file_size)?;
    if args.depth == 0 {
        return Err("--depth must be at least 1".into());
    }
    let (peer, sock) = start_peer(args.row, args.depth)?;
    let mut work = Work::new(args.row, file, sock)?;
    let slots = args.file_size / MIB as u64;
    let mut slot = 0;
    let start = Instant::now();
    let measure_from = start + Duration::from_secs_f64(args.warmup);
    let until = measure_from + Duration::from_secs_f64(args.seconds);
    while Instant::now() < measure_from {
        work.one(slot * MIB as u64)?;
        slot = (slot + 1) % slots;
    }
    let peer_pid = peer.child.id();
    let (t0, cpu0, peer0) = (
        Instant::now(),
        cpu_seconds(),
        process_cpu_seconds(peer_pid)?,
    );
    let mut messages = 0u64;
    while Instant::now() < until {
        work.one(slot * MIB as u64)?;
        slot = (slot + 1) % slots;
        messages += 1;
    }
    let (cpu, seconds) = (cpu_seconds() - cpu0, t0.elapsed().as_secs_f64());
    let peer_cpu = process_cpu_seconds(peer_pid)? - peer0;
    drop(work);
    drop(peer);
    let bytes = messages * MIB as u64;
    let gib = bytes as f64 / GIB;
    let (mib_per_s, cpu_per_gib) = (bytes as f64 / MIB as f64 / seconds, cpu / gib);
    eprintln!(
        "smbfloor {:?}: {messages} MiB in {seconds:.2} s, {mib_per_s:.0} MiB/s, {cpu:.2} s of CPU, \
         {cpu_per_gib:.3} s/GiB (the peer {:.3} s/GiB)",
        args.row,
        peer_cpu / gib
    );
    Ok(json!({
        "row": row_name(args.row),
        "bytes": bytes,
        "seconds": seconds,
        "mib_per_s": mib_per_s,
        "cpu_s": cpu,
        "cpu_s_per_gib": cpu_per_gib,
        "cpu_cores": cpu / seconds,
        "peer_cpu_s_per_gib": peer_cpu / gib,
    }))
}

fn row_name(row: Row) -> String {
    clap::ValueEnum::to_possible_value(&row)
        .map(|v| v.get_name().to_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_write_messages_verify_and_tampered_ones_do_not() {
        let msg = write_message(Row::WriteSign).unwrap();
        assert_eq!(msg.len(), Row::WriteSign.message_len());
        assert!(signer().verify(&mut msg.clone()));
        let mut tampered = msg;
        tampered[SMB2_HEADER_LEN + 4096] ^= 1;
        assert!(!signer().verify(&mut tampered));
    }

    #[test]
    fn encrypted_write_messages_decrypt_to_their_data_and_tampered_ones_fail() {
        let msg = write_message(Row::WriteEncrypt).unwrap();
        assert_eq!(msg.len(), Row::WriteEncrypt.message_len());
        let mut clear = msg.clone();
        decrypt(&*cipher().unwrap(), &mut clear).unwrap();
        let data = TRANSFORM_HEADER_LEN + SMB2_HEADER_LEN;
        assert_eq!(clear[data..], write_message(Row::WritePlain).unwrap()[..]);
        let mut tampered = msg;
        tampered[data + 1] ^= 1;
        assert!(decrypt(&*cipher().unwrap(), &mut tampered).is_err());
    }

    #[test]
    fn encryption_takes_a_fresh_nonce_per_message() {
        let cipher = cipher().unwrap();
        let mut a = transform_header(SMB2_HEADER_LEN + 16).unwrap();
        a.resize(TRANSFORM_HEADER_LEN + SMB2_HEADER_LEN + 16, 7);
        let mut b = a.clone();
        encrypt(&*cipher, &mut a, 1).unwrap();
        encrypt(&*cipher, &mut b, 2).unwrap();
        assert_ne!(a[NONCE], b[NONCE]);
        assert_ne!(a[TRANSFORM_HEADER_LEN..], b[TRANSFORM_HEADER_LEN..]);
        decrypt(&*cipher, &mut b).unwrap();
        assert!(b[TRANSFORM_HEADER_LEN..].iter().all(|&x| x == 7));
    }
}
