//! The proxy's port inside a command's network namespace ([`super::netproxy`]): the command's
//! init opens a TCP listener on 127.0.0.1 there and passes the socket to pablo over a Unix
//! socket pair (`SCM_RIGHTS`), so that pablo accepts in the namespace while it connects out from
//! its own. No bridge process and no path on the file system: a socket stays in the namespace it
//! was made in, whoever holds it.
//!
//! The child's half runs in a forked copy of pablo before anything is executed, under the rules
//! of [`super::child`]: system calls on stack memory only.
#![allow(unsafe_code)]

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixDatagram;

use super::netproxy::PROXY_PORT;

/// A socket pair for one start: pablo's end, and the child's (both close-on-exec).
pub fn pair() -> std::io::Result<(UnixDatagram, UnixDatagram)> {
    UnixDatagram::pair()
}

/// In the child: listens on 127.0.0.1:[`PROXY_PORT`] and sends the socket on `to`, then closes
/// both. Returns -1 with errno set when a step fails.
///
/// # Safety
/// Only in the child (init, in its new network namespace, the loopback up).
pub unsafe fn listen_and_hand_over(to: RawFd) -> libc::c_int {
    // SAFETY: system calls on stack memory.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return -1;
        }
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: PROXY_PORT.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be(),
            },
            sin_zero: [0; 8],
        };
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        if libc::bind(s, (&addr as *const libc::sockaddr_in).cast(), len) < 0
            || libc::listen(s, 128) < 0
        {
            return -1;
        }
        // Room for one descriptor's control message, aligned for `cmsghdr`.
        let mut control = [0u64; 4];
        let mut byte = [b'p'];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() {
            *libc::__errno_location() = libc::EINVAL;
            return -1;
        }
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), s);
        if libc::sendmsg(to, &msg, 0) < 0 {
            return -1;
        }
        libc::close(s);
        libc::close(to);
        0
    }
}

/// In pablo, once the child has started: the listener the child sent on `ours`. The child sends
/// before it starts the command, so the message is waiting; nothing blocks here.
pub fn receive(ours: &UnixDatagram) -> std::io::Result<OwnedFd> {
    let mut control = [0u64; 4];
    let mut byte = [0u8; 1];
    // SAFETY: recvmsg into stack buffers sized above; the descriptor read from the control
    // message is a new one the kernel installed for this process, owned from here on.
    unsafe {
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        let n = libc::recvmsg(
            ours.as_raw_fd(),
            &mut msg,
            libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
        );
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null()
            || (*cmsg).cmsg_level != libc::SOL_SOCKET
            || (*cmsg).cmsg_type != libc::SCM_RIGHTS
        {
            return Err(std::io::Error::other(
                "the command's init sent no listening socket",
            ));
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
        Ok(OwnedFd::from_raw_fd(fd))
    }
}
