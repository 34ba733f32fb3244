//! Descriptors a child gets at fixed numbers: Chromium's `--remote-debugging-pipe` reads its
//! commands from descriptor 3 and writes its answers to descriptor 4.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;

/// Sources are first moved to descriptors at least this high, above any fixed target, so no
/// `dup2` in the child overwrites a source a later one still needs.
const ABOVE_TARGETS: RawFd = 64;

/// Makes `command`'s child find each `(fd, target)`'s `fd` as descriptor `target` (not closed
/// on exec) when its program starts. The descriptors are held by `command` until it is dropped.
pub fn hand_on_exec(command: &mut std::process::Command, fds: Vec<(OwnedFd, RawFd)>) -> io::Result<()> {
    let mut moved = Vec::with_capacity(fds.len());
    for (fd, target) in fds {
        // SAFETY: `fcntl(F_DUPFD_CLOEXEC)` reads no memory; on success it returns a new
        // descriptor this function alone owns, which `OwnedFd` then closes exactly once.
        let high = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, ABOVE_TARGETS) };
        if high < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `high` is a fresh, open descriptor owned by nothing else (see above).
        moved.push((unsafe { OwnedFd::from_raw_fd(high) }, target));
    }
    // SAFETY: the closure runs in the forked child before exec and makes raw `dup2` calls on
    // descriptors the closure owns (inherited across fork); it allocates nothing and takes no
    // lock. `dup2`'s copy does not carry close-on-exec, so the program keeps it.
    unsafe {
        command.pre_exec(move || {
            for (fd, target) in &moved {
                if libc::dup2(fd.as_raw_fd(), *target) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn the_child_finds_the_pipe_at_its_number() {
        let (mut reader, writer) = std::io::pipe().expect("pipe");
        let mut command = std::process::Command::new("sh");
        command.args(["-c", "echo through-four >&4"]);
        hand_on_exec(&mut command, vec![(OwnedFd::from(writer), 4)]).expect("hand");
        let status = command.status().expect("run");
        drop(command);
        assert!(status.success());
        let mut out = String::new();
        reader.read_to_string(&mut out).expect("read");
        assert_eq!(out, "through-four\n");
    }
}
