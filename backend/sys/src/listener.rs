//! Handing the listening socket from `mobius launch` to the server it starts, so the address
//! stays bound (connections wait in the backlog) while one server version replaces another.

use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};

/// Lets `listener` survive `exec` (clears `FD_CLOEXEC`), so a child started afterwards
/// inherits it under the same descriptor number, which is returned.
pub fn share_with_children(listener: &TcpListener) -> std::io::Result<RawFd> {
    let fd = listener.as_raw_fd();
    set_cloexec(fd, false)?;
    Ok(fd)
}

/// Takes the listening TCP socket a parent passed as descriptor `fd`: checks that it is an
/// open TCP socket that listens, marks it close-on-exec again (nothing the server starts
/// inherits it) and owns it from now on. Call once per descriptor.
pub fn inherited_listener(fd: RawFd) -> std::io::Result<TcpListener> {
    let invalid = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("descriptor {fd} {what}"));
    if fd < 3 {
        return Err(invalid("is a standard stream"));
    }
    let mut accepting: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `accepting`, a live c_int we own, and
    // updates `len`; an invalid or non-socket descriptor only makes it return -1.
    let rc = unsafe {
        libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_ACCEPTCONN, (&raw mut accepting).cast(), &raw mut len)
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if accepting == 0 {
        return Err(invalid("is a socket that does not listen"));
    }
    set_cloexec(fd, true)?;
    // SAFETY: the descriptor is open and a listening socket (checked above); the parent
    // handed it over for this process to own, and the caller takes it only once.
    Ok(unsafe { TcpListener::from_raw_fd(fd) })
}

fn set_cloexec(fd: RawFd, on: bool) -> std::io::Result<()> {
    // SAFETY: fcntl on an integer descriptor with F_GETFD/F_SETFD reads and writes only the
    // descriptor's flags; a closed descriptor makes it fail with EBADF.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    if flags < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let next = if on { flags | libc::FD_CLOEXEC } else { flags & !libc::FD_CLOEXEC };
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, next) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_listening_socket_is_taken() {
        assert!(inherited_listener(1).is_err(), "stdout");
        let file = tempfile::tempfile().expect("file");
        assert!(inherited_listener(file.as_raw_fd()).is_err(), "a file");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let fd = share_with_children(&listener).expect("share");
        std::mem::forget(listener);
        let taken = inherited_listener(fd).expect("take");
        assert_eq!(taken.local_addr().expect("addr"), addr);
    }
}
