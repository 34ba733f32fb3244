//! Landlock (Linux ≥ 5.13): a process restricts the filesystem it and its descendants may
//! touch, unprivileged and for good, and from ABI 6 (Linux 6.12) also which processes it may
//! signal and which abstract Unix sockets it may reach: only those of its own domain (the
//! processes confined by the same ruleset, and what they start). The agent CLIs are confined
//! this way: the server builds a [`Ruleset`] before spawning, and the child applies it between
//! `fork` and `exec`.

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;

/// Execute a file.
pub const ACCESS_EXECUTE: u64 = 1 << 0;
/// Open a file for writing.
pub const ACCESS_WRITE_FILE: u64 = 1 << 1;
/// Open a file for reading.
pub const ACCESS_READ_FILE: u64 = 1 << 2;
/// List a directory.
pub const ACCESS_READ_DIR: u64 = 1 << 3;
/// The rights of ABI 1: execute, write, read, list, remove and make every kind of entry.
const ACCESS_ABI1: u64 = (1 << 13) - 1;
/// ABI 2: link or rename a file into another directory.
const ACCESS_REFER: u64 = 1 << 13;
/// ABI 3: truncate a file.
const ACCESS_TRUNCATE: u64 = 1 << 14;
/// ABI 5: ioctl on character and block devices.
const ACCESS_IOCTL_DEV: u64 = 1 << 15;
/// ABI 6: connecting to an abstract Unix socket made outside the domain is refused.
pub const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
/// ABI 6: signalling a process outside the domain (or a domain nested in it) is refused.
pub const SCOPE_SIGNAL: u64 = 1 << 1;
/// The rights that apply to a file (not a directory): a rule on a file may hold only these.
const ACCESS_FILE: u64 = ACCESS_EXECUTE | ACCESS_WRITE_FILE | ACCESS_READ_FILE | ACCESS_TRUNCATE | ACCESS_IOCTL_DEV;

/// `landlock_create_ruleset` flag: return the ABI version instead of a ruleset.
const CREATE_RULESET_VERSION: libc::c_uint = 1;
/// prctl's arguments are `unsigned long`s (passed as such through its variadic signature).
const PRCTL_ON: libc::c_ulong = 1;
const PRCTL_UNUSED: libc::c_ulong = 0;
/// The flags argument when there are none.
const NO_FLAGS: libc::c_uint = 0;
/// `landlock_add_rule` type: a rule for a file hierarchy.
const RULE_PATH_BENEATH: libc::c_int = 1;

/// `struct landlock_ruleset_attr` as of ABI 6. Older kernels take the larger struct as long as
/// the fields they do not know are zero.
#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// The Landlock ABI version this kernel offers, or why there is none (`ENOSYS`: not built in;
/// `EOPNOTSUPP`: built in but off at boot).
pub fn abi_version() -> io::Result<u32> {
    // SAFETY: with a null attribute, size 0 and the VERSION flag the kernel reads no memory
    // and returns the ABI version (or -1 with errno).
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    if version < 0 {
        return Err(io::Error::last_os_error());
    }
    u32::try_from(version).map_err(|_| io::Error::other("unexpected Landlock version"))
}

/// Every filesystem right a ruleset of `abi` handles.
pub fn all_access(abi: u32) -> u64 {
    let mut access = ACCESS_ABI1;
    if abi >= 2 {
        access |= ACCESS_REFER;
    }
    if abi >= 3 {
        access |= ACCESS_TRUNCATE;
    }
    if abi >= 5 {
        access |= ACCESS_IOCTL_DEV;
    }
    access
}

/// What a ruleset of `abi` scopes to its own domain: signals and abstract Unix sockets from
/// ABI 6, nothing before.
pub fn all_scopes(abi: u32) -> u64 {
    if abi >= 6 { SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET } else { 0 }
}

/// A ruleset being built: everything it handles is denied except what its rules allow.
#[derive(Debug)]
pub struct Ruleset {
    fd: OwnedFd,
    handled: u64,
}

impl Ruleset {
    /// A ruleset that handles every filesystem right of `abi` and, from ABI 6, keeps signals
    /// and abstract Unix sockets within its domain.
    pub fn new(abi: u32) -> io::Result<Self> {
        let handled = all_access(abi);
        let attr = RulesetAttr { handled_access_fs: handled, handled_access_net: 0, scoped: all_scopes(abi) };
        // SAFETY: `attr` is a live, initialised struct of the size passed; the kernel copies it
        // and returns a new file descriptor that nothing else owns.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                &raw const attr,
                std::mem::size_of::<RulesetAttr>(),
                NO_FLAGS,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = i32::try_from(fd).map_err(|_| io::Error::other("unexpected Landlock descriptor"))?;
        // SAFETY: the kernel just returned this descriptor to us and nothing else holds it.
        Ok(Self { fd: unsafe { OwnedFd::from_raw_fd(fd) }, handled })
    }

    /// Allows `access` (masked to what the ruleset handles, and to file rights for a file)
    /// on `path` and everything beneath it. A path that does not exist is an `ErrorKind::NotFound`.
    pub fn allow(&mut self, path: &Path, access: u64) -> io::Result<()> {
        let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_PATH | libc::O_CLOEXEC).open(path)?;
        self.allow_fd(file.as_fd(), access)
    }

    /// Like [`allow`](Self::allow), for a file or folder already open (one reached without
    /// following links, say).
    pub fn allow_fd(&mut self, file: std::os::fd::BorrowedFd<'_>, access: u64) -> io::Result<()> {
        let file = file.try_clone_to_owned().map(std::fs::File::from)?;
        let is_dir = file.metadata()?.is_dir();
        let mut allowed = access & self.handled;
        if !is_dir {
            allowed &= ACCESS_FILE;
        }
        if allowed == 0 {
            return Ok(());
        }
        let rule = PathBeneathAttr { allowed_access: allowed, parent_fd: file.as_raw_fd() };
        // SAFETY: both descriptors are open for the duration of the call and `rule` is a live,
        // initialised struct of the layout the kernel expects for RULE_PATH_BENEATH.
        let result = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                self.fd.as_raw_fd(),
                RULE_PATH_BENEATH,
                &raw const rule,
                NO_FLAGS,
            )
        };
        if result < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Makes `command`'s child apply this ruleset (after `no_new_privs`) just before it
    /// executes the program; a child that cannot apply it fails to start.
    pub fn restrict_on_exec(self, command: &mut std::process::Command) {
        let fd = self.fd;
        // SAFETY: the closure runs in the forked child before exec and only makes two raw
        // system calls on a descriptor it owns (inherited across fork); it allocates nothing,
        // takes no lock and touches no memory shared with other threads.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, PRCTL_ON, PRCTL_UNUSED, PRCTL_UNUSED, PRCTL_UNUSED) != 0 {
                    return Err(io::Error::last_os_error());
                }
                if libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), NO_FLAGS) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
}

/// Makes `command`'s child set `no_new_privs` before it executes the program: neither it nor
/// anything it starts can gain privileges (setuid binaries run without them). The agent's
/// processes carry this mark even without Landlock, which is how the server tells them apart
/// from its other children.
pub fn no_new_privs_on_exec(command: &mut std::process::Command) {
    // SAFETY: the closure runs in the forked child before exec and makes one raw system call;
    // it allocates nothing and takes no lock.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, PRCTL_ON, PRCTL_UNUSED, PRCTL_UNUSED, PRCTL_UNUSED) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a child confined by a ruleset of `abi` reaches: its parent (this process), and a
    /// process it started itself.
    fn signals_under(abi: u32) -> String {
        let mut rules = Ruleset::new(abi).expect("ruleset");
        for system in ["/usr", "/bin", "/lib", "/lib64", "/etc"] {
            match rules.allow(Path::new(system), ACCESS_EXECUTE | ACCESS_READ_FILE | ACCESS_READ_DIR) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => panic!("{system}: {e}"),
            }
        }
        // `kill -0` asks whether a signal would be allowed without sending one.
        let mut command = std::process::Command::new("/bin/sh");
        command.arg("-c").arg(format!(
            "kill -0 {} && echo PARENT-REACHED || echo PARENT-REFUSED; \
             sleep 30 & kill $! && echo OWN-REACHED",
            std::process::id()
        ));
        rules.restrict_on_exec(&mut command);
        let out = command.output().expect("run");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    #[test]
    fn a_scoped_child_cannot_signal_its_parent_but_signals_its_own_processes() {
        let Ok(abi) = abi_version() else {
            eprintln!("this kernel has no Landlock; nothing to check");
            return;
        };
        let scoped = signals_under(abi);
        assert!(scoped.contains("OWN-REACHED"), "{scoped}");
        if abi < 6 {
            eprintln!("Landlock ABI {abi} has no signal scoping; only the fallback is checked");
        } else {
            assert!(scoped.contains("PARENT-REFUSED"), "ABI {abi} scopes signals: {scoped}");
        }
        // The fallback: a ruleset of ABI 5 scopes nothing, so the parent is reachable (what
        // Settings then says).
        let open = signals_under(abi.min(5));
        assert!(open.contains("PARENT-REACHED") && open.contains("OWN-REACHED"), "{open}");
        assert_eq!(all_scopes(5), 0);
        assert_eq!(all_scopes(6), SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET);
    }

    #[test]
    fn a_confined_child_reads_only_what_its_rules_allow() {
        let Ok(abi) = abi_version() else {
            eprintln!("this kernel has no Landlock; nothing to check");
            return;
        };
        let dir = tempfile::tempdir().expect("tmp");
        let open = dir.path().join("open");
        let closed = dir.path().join("closed");
        std::fs::create_dir_all(&open).expect("open dir");
        std::fs::create_dir_all(&closed).expect("closed dir");
        std::fs::write(open.join("a"), b"readable").expect("a");
        std::fs::write(closed.join("b"), b"secret").expect("b");
        let mut rules = Ruleset::new(abi).expect("ruleset");
        for system in ["/usr", "/bin", "/lib", "/lib64", "/etc"] {
            match rules.allow(Path::new(system), ACCESS_EXECUTE | ACCESS_READ_FILE | ACCESS_READ_DIR) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => panic!("{system}: {e}"),
            }
        }
        rules.allow(&open, ACCESS_READ_FILE | ACCESS_READ_DIR).expect("allow");
        let mut command = std::process::Command::new("/bin/sh");
        command.arg("-c").arg(format!("cat {}/a; cat {}/b && echo LEAKED", open.display(), closed.display()));
        rules.restrict_on_exec(&mut command);
        let out = command.output().expect("run");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("readable"), "{stdout}");
        assert!(!stdout.contains("LEAKED") && !stdout.contains("secret"), "{stdout}");
    }
}
