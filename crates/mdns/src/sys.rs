//! What the safe socket APIs lack: asking the kernel for each datagram's TTL or hop limit and
//! arrival interface (IP_RECVTTL, IP_PKTINFO, IPV6_RECVPKTINFO), and receiving them with it
//! (`recvmsg` through socket2, the control messages read here). `link` decides with them.
#![allow(unsafe_code)]

use std::io;
use std::mem::MaybeUninit;
use std::net::{Ipv6Addr, SocketAddr};
use std::os::fd::AsFd;

use socket2::{MaybeUninitSlice, MsgHdrMut, SockAddr, SockRef, Socket};

use crate::link::Arrival;

/// Room for the control messages asked for: two of at most 32 bytes each, with headers.
const CONTROL_LEN: usize = 128;

/// Has the kernel give each IPv4 datagram's TTL and arrival interface.
pub fn want_arrival_v4(socket: &Socket) -> io::Result<()> {
    set_int(socket, libc::IPPROTO_IP, libc::IP_RECVTTL)?;
    set_int(socket, libc::IPPROTO_IP, libc::IP_PKTINFO)
}

/// Has the kernel give each IPv6 datagram's hop limit and arrival interface.
pub fn want_arrival_v6(socket: &Socket) -> io::Result<()> {
    socket.set_recv_hoplimit_v6(true)?;
    set_int(socket, libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO)
}

fn set_int(socket: &Socket, level: libc::c_int, name: libc::c_int) -> io::Result<()> {
    let one: libc::c_int = 1;
    let len = libc::socklen_t::try_from(size_of::<libc::c_int>()).unwrap_or(4);
    // SAFETY: the option value is a c_int that outlives the call, and `len` is its size.
    let done = unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(socket),
            level,
            name,
            std::ptr::from_ref(&one).cast(),
            len,
        )
    };
    if done == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Receives one datagram into `buf`: its length, its source and how it arrived. Would-block
/// when none waits.
pub fn recv_with_arrival(
    socket: &impl AsFd,
    buf: &mut [u8],
) -> io::Result<(usize, SocketAddr, Arrival)> {
    let mut from = SockAddr::from(SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0)));
    let mut control = [MaybeUninit::new(0u8); CONTROL_LEN];
    // SAFETY: MaybeUninit<u8> has u8's layout, and recvmsg writes only initialized bytes into
    // the buffer, so it stays a valid [u8] afterwards.
    let data = unsafe { &mut *(std::ptr::from_mut::<[u8]>(buf) as *mut [MaybeUninit<u8>]) };
    let mut bufs = [MaybeUninitSlice::new(data)];
    let mut msg = MsgHdrMut::new()
        .with_addr(&mut from)
        .with_buffers(&mut bufs)
        .with_control(&mut control);
    let received = SockRef::from(socket).recvmsg(&mut msg, 0)?;
    let control_len = msg.control_len().min(CONTROL_LEN);
    // SAFETY: every byte was initialized to 0 above, then possibly written by the kernel.
    let control = control.map(|byte| unsafe { byte.assume_init() });
    let from = from
        .as_socket()
        .ok_or_else(|| io::Error::other("a datagram from a non-IP address"))?;
    let arrival = parse_control(control.get(..control_len).unwrap_or_default());
    Ok((received, from, arrival))
}

/// Reads the TTL or hop limit and the arrival interface out of control messages as Linux
/// lays them out (`struct cmsghdr`: a length of the size of a pointer, a level and a type,
/// then the data, each message aligned to the size of a pointer).
pub fn parse_control(mut control: &[u8]) -> Arrival {
    const WORD: usize = size_of::<usize>();
    let header = WORD + 8;
    let mut arrival = Arrival::default();
    while let Some(head) = control.get(..header) {
        let int_at = |at: usize| {
            head.get(at..at + 4)
                .and_then(|b| b.try_into().ok())
                .map(i32::from_ne_bytes)
        };
        let len = head
            .get(..WORD)
            .and_then(|b| b.try_into().ok())
            .map_or(0, usize::from_ne_bytes);
        let (Some(level), Some(kind)) = (int_at(WORD), int_at(WORD + 4)) else {
            break;
        };
        // Shorter than its header, or cut off (MSG_CTRUNC): nothing more to read.
        let Some(data) = control.get(header..len) else {
            break;
        };
        let int = data
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .map(i32::from_ne_bytes);
        match (level, kind) {
            (libc::IPPROTO_IP, libc::IP_TTL) | (libc::IPPROTO_IPV6, libc::IPV6_HOPLIMIT) => {
                arrival.hop_limit = int.and_then(|v| u8::try_from(v).ok());
            }
            // struct in_pktinfo: the interface index first.
            (libc::IPPROTO_IP, libc::IP_PKTINFO) => {
                arrival.interface = int.and_then(|v| u32::try_from(v).ok());
            }
            // struct in6_pktinfo: the 16-byte address, then the interface index.
            (libc::IPPROTO_IPV6, libc::IPV6_PKTINFO) => {
                arrival.interface = data
                    .get(16..20)
                    .and_then(|b| b.try_into().ok())
                    .map(u32::from_ne_bytes);
            }
            _ => {}
        }
        let next = len.div_ceil(WORD).saturating_mul(WORD);
        control = control.get(next..).unwrap_or_default();
    }
    arrival
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One control message as the kernel lays it out.
    fn message(level: i32, kind: i32, data: &[u8]) -> Vec<u8> {
        let word = size_of::<usize>();
        let len = word + 8 + data.len();
        let mut out = len.to_ne_bytes().to_vec();
        out.extend_from_slice(&level.to_ne_bytes());
        out.extend_from_slice(&kind.to_ne_bytes());
        out.extend_from_slice(data);
        out.resize(len.div_ceil(word) * word, 0);
        out
    }

    #[test]
    fn ttl_and_interface_of_ipv4() {
        let mut control = message(libc::IPPROTO_IP, libc::IP_TTL, &64i32.to_ne_bytes());
        let mut pktinfo = 7i32.to_ne_bytes().to_vec();
        pktinfo.extend_from_slice(&[10, 0, 0, 1, 224, 0, 0, 251]);
        control.extend(message(libc::IPPROTO_IP, libc::IP_PKTINFO, &pktinfo));
        assert_eq!(
            parse_control(&control),
            Arrival {
                hop_limit: Some(64),
                interface: Some(7),
            }
        );
    }

    #[test]
    fn hop_limit_and_interface_of_ipv6() {
        let mut pktinfo = vec![0xff, 2];
        pktinfo.resize(16, 0);
        pktinfo.extend_from_slice(&3u32.to_ne_bytes());
        let mut control = message(libc::IPPROTO_IPV6, libc::IPV6_PKTINFO, &pktinfo);
        control.extend(message(
            libc::IPPROTO_IPV6,
            libc::IPV6_HOPLIMIT,
            &255i32.to_ne_bytes(),
        ));
        assert_eq!(
            parse_control(&control),
            Arrival {
                hop_limit: Some(255),
                interface: Some(3),
            }
        );
    }

    #[test]
    fn cut_or_bent_control_data_yields_what_is_whole() {
        let ttl = message(libc::IPPROTO_IP, libc::IP_TTL, &255i32.to_ne_bytes());
        for cut in 0..ttl.len() {
            let arrival = parse_control(&ttl[..cut]);
            assert_eq!(arrival.interface, None);
        }
        // A length shorter than a header, or beyond the buffer, ends the walk.
        let mut bent = ttl.clone();
        bent[0] = 3;
        assert_eq!(parse_control(&bent), Arrival::default());
        let mut long = ttl.clone();
        long[..size_of::<usize>()].copy_from_slice(&usize::MAX.to_ne_bytes());
        assert_eq!(parse_control(&long).interface, None);
        // A TTL beyond a byte is no TTL; an unknown message is skipped.
        let mut control = message(libc::IPPROTO_IP, 99, &[1, 2, 3, 4]);
        control.extend(message(
            libc::IPPROTO_IP,
            libc::IP_TTL,
            &300i32.to_ne_bytes(),
        ));
        assert_eq!(parse_control(&control), Arrival::default());
    }
}
