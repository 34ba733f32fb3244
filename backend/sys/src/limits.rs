//! Memory ceilings an agent's child takes on before it executes its program: an `RLIMIT_DATA`
//! (each process, and everything it starts, may map at most so much writable memory), or a
//! move into a cgroup v2 whose `memory.max` bounds the whole process tree; and the label that
//! tells which tree a process belongs to (an `RLIMIT_LOCKS` no kernel enforces any more).

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;

/// Makes `command`'s child limit its data segment and private writable mappings (malloc,
/// `mmap`) to `bytes`, soft and hard: an allocation past it fails in that process. Inherited
/// by everything the child starts, each process with its own allowance.
pub fn limit_data_on_exec(command: &mut std::process::Command, bytes: u64) {
    let limit = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
    // SAFETY: the closure runs in the forked child before exec and makes one raw system call
    // with a value it owns (copied into the closure); it allocates nothing and takes no lock.
    unsafe {
        command.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_DATA, &limit) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Makes `command`'s child carry `label` as its hard and soft `RLIMIT_LOCKS` before it
/// executes its program. Linux has not enforced this limit since 2.4, so it changes nothing the
/// process may do; the kernel keeps it across `fork`, `exec`, `setsid` and reparenting, clears
/// it with no environment, and an unprivileged process can only lower it: everything the
/// program starts carries the label (or, if it lowered it, a value that is no live label).
pub fn label_on_exec(command: &mut std::process::Command, label: u64) {
    let limit = libc::rlimit { rlim_cur: label, rlim_max: label };
    // SAFETY: the closure runs in the forked child before exec and makes one raw system call
    // with a value it owns (copied into the closure); it allocates nothing and takes no lock.
    unsafe {
        command.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_LOCKS, &limit) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Makes `command`'s child move itself into the cgroup whose `cgroup.procs` is open as
/// `procs` (writing "0" moves the writer) before it executes its program, so the program and
/// everything it starts are charged to that cgroup from their first allocation.
pub fn join_cgroup_on_exec(command: &mut std::process::Command, procs: std::fs::File) {
    // SAFETY: the closure runs in the forked child before exec and makes one raw `write` of a
    // static byte to a descriptor the closure owns (inherited across fork); it allocates
    // nothing and takes no lock.
    unsafe {
        command.pre_exec(move || {
            let written = libc::write(procs.as_raw_fd(), b"0".as_ptr().cast(), 1);
            if written != 1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_reaches_what_the_child_starts() {
        let label = 0x6d62_0000_0000_0042_u64;
        let mut command = std::process::Command::new("/bin/bash");
        // `ulimit -x` is the file-lock limit; a grandchild that left the session still has it.
        command.arg("-c").arg("setsid bash -c 'ulimit -Hx; ulimit -Sx'");
        label_on_exec(&mut command, label);
        let out = command.output().expect("run");
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{label}\n{label}\n"));
    }

    #[test]
    fn a_child_past_its_data_limit_fails_its_allocation_and_the_parent_is_untouched() {
        let mut command = std::process::Command::new("/bin/sh");
        // `ulimit -d` shows the soft data limit in KiB.
        command.arg("-c").arg("ulimit -d");
        limit_data_on_exec(&mut command, 64 << 20);
        let out = command.output().expect("run");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "65536");
        let mut own = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit writes into the struct we own.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_DATA, &mut own) }, 0);
        assert_ne!(own.rlim_cur, 64 << 20, "only the child took the limit");
    }
}
