//! Starting a process by hand: `clone` with namespace flags, the sandbox applied in the child,
//! then `execve`. The one module of pablo that forks.
//!
//! `std::process::Command` cannot create the child in new namespaces (it offers no clone flags),
//! and a PID namespace only works when its first process is created inside it. So the child is
//! created with a raw `clone(2)` and everything it does before `execve` is written here, under the
//! rules of a forked copy of a multi-threaded process: no allocation, no lock, no panic, only
//! system calls on memory the parent prepared ([`ChildPlan`]). Everything is built by the parent
//! before the fork (paths as C strings, the Landlock ruleset as a descriptor, the seccomp filter as
//! a BPF program); the child only applies it.
//!
//! With namespaces the shape is `pablo → init → command`:
//! - *init* is the first process of a new user, PID (and mount and network) namespace. It gets the
//!   parent-death signal, sets up the mounts and the loopback, forks the command, closes every
//!   descriptor but one, reaps, and when the command ends writes its wait status to a pipe and
//!   exits. When init dies, for any reason, the kernel kills every process left in the namespace:
//!   that is what makes "nothing outlives pablo" hold for grandchildren too.
//! - init is not the command itself because a namespace's first process ignores every signal it
//!   has no handler for: a `sleep` there would ignore Ctrl-C and pablo's TERM.
//!
//! Without namespaces (the kernel or a security module refuses them) there is still an init, but
//! no namespace to end: it is a *subreaper* (`PR_SET_CHILD_SUBREAPER`: whatever the command
//! starts and orphans becomes its child), pablo's death reaches it as a signal it waits for
//! rather than one that kills it, and when pablo dies or the command ends it kills every process
//! that descends from it, a `setsid` daemon included ([`supervise`]). That holds as long as init
//! itself lives: a KILL sent to the command's group (pablo's last resort when a command ignores
//! TERM) ends init as well, and what escaped the group then outlives the call.
#![allow(unsafe_code)]

use std::ffi::{CStr, c_char, c_int};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

pub use super::mounts::MountStep;
use super::mounts::locked_mount_flags;
pub use super::stage::Stage;

/// A failure in the child, or in the parent's part of the start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartFailure {
    pub stage: Option<Stage>,
    pub errno: i32,
    pub detail: String,
}

impl std::fmt::Display for StartFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let os = std::io::Error::from_raw_os_error(self.errno);
        match self.stage {
            Some(s) => write!(f, "{}: {os}", s.describe()),
            None => write!(f, "{}: {os}", self.detail),
        }
    }
}

impl StartFailure {
    fn parent(detail: &str, e: std::io::Error) -> Self {
        Self {
            stage: None,
            errno: e.raw_os_error().unwrap_or(libc::EIO),
            detail: detail.to_string(),
        }
    }
}

/// Everything a command's sandbox needs, prepared before the fork.
#[derive(Debug, Default)]
pub struct Prepared {
    pub namespaces: Namespaces,
    pub mounts: Vec<MountStep>,
    pub landlock: Option<std::os::fd::OwnedFd>,
    pub seccomp: Option<seccompiler::BpfProgram>,
    pub id_maps: Option<IdMaps>,
    /// Open the network proxy's port in the new network namespace ([`super::proxyport`]).
    pub proxy: bool,
}

/// Namespaces to create for the command.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Namespaces {
    /// User + PID namespaces (init then command). Required for the others.
    pub pid: bool,
    pub mount: bool,
    pub net: bool,
}

impl Namespaces {
    fn clone_flags(self) -> u64 {
        let mut f = 0u64;
        if self.pid {
            f |= (libc::CLONE_NEWUSER | libc::CLONE_NEWPID) as u64;
            if self.mount {
                f |= libc::CLONE_NEWNS as u64;
            }
            if self.net {
                f |= libc::CLONE_NEWNET as u64;
            }
        }
        f
    }
}

/// Everything the child needs, prepared by the parent. Borrowed pointers stay valid because the
/// child is a copy of the parent's memory at the moment of the clone.
pub struct ChildPlan<'a> {
    pub exe: &'a CStr,
    /// NUL-terminated pointer arrays into C strings the caller keeps alive.
    pub argv: &'a [*const c_char],
    pub envp: &'a [*const c_char],
    /// Descriptor to `fchdir` into, or a path to `chdir` to.
    pub cwd_fd: Option<RawFd>,
    pub cwd_path: &'a CStr,
    /// The descriptor to install as 0, 1 and 2; `None` keeps pablo's own (the `pablo sandbox`
    /// command). Each is at least 3 (the caller makes sure), so installing one cannot clobber
    /// another.
    pub stdio: [Option<RawFd>; 3],
    /// A PTY slave: the command gets a new session with this terminal as its controlling one.
    pub terminal: Option<RawFd>,
    pub namespaces: Namespaces,
    pub mounts: &'a [MountStep],
    pub landlock: Option<RawFd>,
    pub seccomp: Option<&'a libc::sock_fprog>,
    /// With a user namespace: the lines for `/proc/PID/{uid_map,setgroups,gid_map}`.
    pub id_maps: Option<&'a IdMaps>,
    /// Without a PID namespace: start the command under a supervising init ([`supervise`]).
    pub supervise: bool,
    /// With a network namespace: where init sends the proxy's listening socket.
    pub proxy_to: Option<RawFd>,
}

impl ChildPlan<'_> {
    /// Whether the command runs under an init of pablo's (with or without a namespace).
    fn has_init(&self) -> bool {
        self.namespaces.pid || self.supervise
    }
}

/// The contents written to the new user namespace's id maps, by the parent.
#[derive(Debug, Clone)]
pub struct IdMaps {
    pub uid_map: String,
    pub gid_map: String,
    /// `deny` must be written to `setgroups` before `gid_map` when the parent is not privileged.
    pub deny_setgroups: bool,
}

impl IdMaps {
    /// The caller's own ids mapped to themselves: one id when unprivileged, every id when root
    /// (so files of other owners keep their owners inside, and root keeps its access to them).
    pub fn identity() -> Self {
        let uid = rustix::process::geteuid().as_raw();
        let gid = rustix::process::getegid().as_raw();
        if uid == 0 {
            Self {
                uid_map: "0 0 4294967295\n".into(),
                gid_map: "0 0 4294967295\n".into(),
                deny_setgroups: false,
            }
        } else {
            Self {
                uid_map: format!("{uid} {uid} 1\n"),
                gid_map: format!("{gid} {gid} 1\n"),
                deny_setgroups: true,
            }
        }
    }
}

/// A started child: its pid (the group leader) and, with namespaces, the pipe init reports the
/// command's wait status on.
pub struct Spawned {
    pub pid: i32,
    pub status: Option<OwnedFd>,
    /// The network proxy's listening socket in the command's namespace (filled by the caller).
    pub proxy_listener: Option<OwnedFd>,
}

fn pipe_cloexec() -> Result<(OwnedFd, OwnedFd), StartFailure> {
    // std's pipes are close-on-exec.
    std::io::pipe()
        .map(|(r, w)| (OwnedFd::from(r), OwnedFd::from(w)))
        .map_err(|e| StartFailure::parent("creating a pipe", e))
}

/// Starts the child described by `plan`. Blocks until it has executed the launcher (or failed).
///
/// Must be called from the thread whose end means "pablo ended" (the parent-death signal is tied
/// to the forking thread).
pub fn spawn(plan: &ChildPlan<'_>) -> Result<Spawned, StartFailure> {
    let (err_r, err_w) = pipe_cloexec()?;
    let (go_r, go_w) = pipe_cloexec()?;
    let maps = plan.id_maps.filter(|_| plan.namespaces.pid);
    // The child says when its id maps may be written (see `tie_to_parent`).
    let ready = match maps {
        Some(_) => Some(pipe_cloexec()?),
        None => None,
    };
    let status = if plan.has_init() {
        Some(pipe_cloexec()?)
    } else {
        None
    };
    let flags = plan.namespaces.clone_flags() | libc::SIGCHLD as u64;
    let raw = ChildFds {
        err_w: err_w.as_raw_fd(),
        go_r: go_r.as_raw_fd(),
        go_w: go_w.as_raw_fd(),
        status_w: status.as_ref().map(|(_, w)| w.as_raw_fd()),
        ready: ready.as_ref().map(|(r, w)| (r.as_raw_fd(), w.as_raw_fd())),
    };
    // SAFETY: a raw clone without CLONE_VM is a fork: the child runs on a copy of this thread's
    // stack and memory. `child_main` never returns; it makes only async-signal-safe system calls
    // on memory prepared before this point (see the module documentation).
    let pid = unsafe { libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize) };
    if pid == 0 {
        // SAFETY: we are the child; see above.
        unsafe { child_main(plan, &raw) }
    }
    if pid < 0 {
        return Err(StartFailure::parent(
            "clone",
            std::io::Error::last_os_error(),
        ));
    }
    let pid = pid as i32;
    drop(err_w);
    drop(go_r);
    let status_r = status.map(|(r, w)| {
        drop(w);
        r
    });
    let fail = |f: StartFailure| {
        kill_and_reap(pid);
        Err(f)
    };
    // A child that ended before it was ready has written its report: skip to reading it.
    let child_ready = match ready {
        Some((ready_r, ready_w)) => {
            drop(ready_w);
            let mut b = [0u8; 1];
            loop {
                match rustix::io::read(&ready_r, &mut b) {
                    Err(rustix::io::Errno::INTR) => continue,
                    r => break matches!(r, Ok(1)),
                }
            }
        }
        None => true,
    };
    if child_ready {
        if let Some(maps) = maps
            && let Err(e) = write_id_maps(pid, maps)
        {
            return fail(StartFailure::parent(
                "writing the user namespace's id maps",
                e,
            ));
        }
        if let Err(e) = rustix::io::write(&go_w, b"g") {
            return fail(StartFailure::parent("starting the child", e.into()));
        }
    }
    // End of file: the launcher was executed (the descriptor is close-on-exec) or the child is
    // gone; five bytes: a stage and an errno.
    let mut report = [0u8; 5];
    let mut got = 0;
    while got < report.len() {
        match rustix::io::read(&err_r, &mut report[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return fail(StartFailure::parent("reading the child's report", e.into())),
        }
    }
    drop(go_w);
    if got == 0 {
        return Ok(Spawned {
            pid,
            status: status_r,
            proxy_listener: None,
        });
    }
    let errno = i32::from_ne_bytes([report[1], report[2], report[3], report[4]]);
    fail(StartFailure {
        stage: Stage::from_repr(report[0]),
        errno,
        detail: "starting the command".into(),
    })
}

fn kill_and_reap(pid: i32) {
    if let Some(p) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
        let _ = rustix::process::waitpid(Some(p), rustix::process::WaitOptions::empty());
    }
}

fn write_id_maps(pid: i32, maps: &IdMaps) -> std::io::Result<()> {
    let dir = format!("/proc/{pid}");
    std::fs::write(format!("{dir}/uid_map"), &maps.uid_map)?;
    if maps.deny_setgroups {
        std::fs::write(format!("{dir}/setgroups"), "deny")?;
    }
    std::fs::write(format!("{dir}/gid_map"), &maps.gid_map)
}

struct ChildFds {
    err_w: RawFd,
    go_r: RawFd,
    go_w: RawFd,
    status_w: Option<RawFd>,
    /// With a user namespace: the pipe on which the child says its id maps may be written.
    ready: Option<(RawFd, RawFd)>,
}

/// Reports `stage` and the current errno to the parent and exits.
///
/// # Safety
/// Only in the child.
unsafe fn die(fds: &ChildFds, stage: Stage) -> ! {
    // SAFETY: errno location and write/_exit are async-signal-safe.
    unsafe {
        let errno = *libc::__errno_location();
        let e = errno.to_ne_bytes();
        let msg = [stage as u8, e[0], e[1], e[2], e[3]];
        libc::write(fds.err_w, msg.as_ptr().cast(), msg.len());
        libc::_exit(127)
    }
}

/// # Safety
/// Only in the child.
unsafe fn check(fds: &ChildFds, r: c_int, stage: Stage) {
    if r < 0 {
        // SAFETY: in the child.
        unsafe { die(fds, stage) }
    }
}

/// Every catchable signal back to its default action, nothing blocked: a forked copy of pablo
/// inherits pablo's handlers (the runtime's), which must never run here, and `exec` keeps ignored
/// signals ignored (Rust ignores SIGPIPE).
///
/// # Safety
/// Only in the child.
unsafe fn reset_signals(fds: &ChildFds) {
    // SAFETY: plain system calls on stack memory.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = libc::SIG_DFL;
        for sig in 1..libc::SIGRTMAX() {
            if sig == libc::SIGKILL || sig == libc::SIGSTOP {
                continue;
            }
            // Some numbers are reserved by the C library; refusing them is fine.
            libc::sigaction(sig, &act, std::ptr::null_mut());
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        check(
            fds,
            libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()),
            Stage::Signals,
        );
    }
}

/// Ties the child to pablo: the parent-death signal, then a check that pablo did not end before
/// it was set (the parent holds the write end of `go` until the launcher runs; our copy is closed
/// first, so end of file or a hang-up means pablo is gone).
///
/// With a user namespace, pablo writes the child's id maps in between. pablo is not dumpable
/// (`protect`), and neither is this copy of it, so its `/proc/PID` files belong to root, and an
/// unprivileged pablo could not open `uid_map`: the child turns dumpable until the maps are
/// written, says so on `ready`, and turns back after `go` (it still holds pablo's memory).
///
/// # Safety
/// Only in the child.
unsafe fn tie_to_parent(fds: &ChildFds) {
    // SAFETY: plain system calls on stack memory.
    unsafe {
        libc::close(fds.go_w);
        check(
            fds,
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ),
            Stage::ParentGone,
        );
        if let Some((ready_r, ready_w)) = fds.ready {
            libc::close(ready_r);
            check(
                fds,
                libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0),
                Stage::Dumpable,
            );
            let b = b'r';
            libc::write(ready_w, (&b as *const u8).cast(), 1);
            libc::close(ready_w);
        }
        let mut b = 0u8;
        loop {
            let n = libc::read(fds.go_r, (&mut b as *mut u8).cast(), 1);
            if n == 1 {
                break;
            }
            if n < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            *libc::__errno_location() = libc::ESRCH;
            die(fds, Stage::ParentGone);
        }
        let mut p = libc::pollfd {
            fd: fds.go_r,
            events: 0,
            revents: 0,
        };
        if libc::poll(&mut p, 1, 0) > 0 && p.revents & libc::POLLHUP != 0 {
            *libc::__errno_location() = libc::ESRCH;
            die(fds, Stage::ParentGone);
        }
        libc::close(fds.go_r);
        if fds.ready.is_some() {
            check(
                fds,
                libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0),
                Stage::Dumpable,
            );
        }
    }
}

/// # Safety
/// Only in the child.
unsafe fn child_main(plan: &ChildPlan<'_>, fds: &ChildFds) -> ! {
    // SAFETY: every call below is a system call (or an async-signal-safe libc wrapper) on memory
    // prepared by the parent; nothing allocates.
    unsafe {
        close_unneeded(plan, fds);
        reset_signals(fds);
        let pablo = libc::getppid();
        tie_to_parent(fds);
        lead(plan, fds);
        if !plan.has_init() {
            exec_command(plan, fds);
        }
        if !plan.namespaces.pid {
            supervise(plan, fds, pablo);
        }
        if plan.namespaces.mount {
            setup_mounts(plan, fds);
        }
        if plan.namespaces.net {
            loopback_up(fds);
            if let Some(to) = plan.proxy_to {
                check(
                    fds,
                    super::proxyport::listen_and_hand_over(to),
                    Stage::ProxyPort,
                );
            }
        }
        let pid = libc::syscall(libc::SYS_clone, libc::SIGCHLD as u64, 0usize, 0usize, 0, 0);
        if pid == 0 {
            exec_command(plan, fds);
        }
        if pid < 0 {
            die(fds, Stage::Fork);
        }
        init_loop(pid as libc::pid_t, fds)
    }
}

/// A new session with the terminal, or a new process group.
///
/// # Safety
/// Only in the child.
unsafe fn lead(plan: &ChildPlan<'_>, fds: &ChildFds) {
    // SAFETY: plain system calls.
    unsafe {
        match plan.terminal {
            Some(tty) => {
                check(fds, libc::setsid(), Stage::Session);
                check(
                    fds,
                    libc::ioctl(tty, libc::TIOCSCTTY as _, 0),
                    Stage::Terminal,
                );
            }
            None => check(fds, libc::setpgid(0, 0), Stage::ProcessGroup),
        }
    }
}

/// # Safety
/// Only in the child (init, in its new mount namespace).
unsafe fn setup_mounts(plan: &ChildPlan<'_>, fds: &ChildFds) {
    // SAFETY: system calls on C strings prepared by the parent.
    unsafe {
        let root = c"/";
        check(
            fds,
            libc::mount(
                std::ptr::null(),
                root.as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_SLAVE,
                std::ptr::null(),
            ),
            Stage::MountPrivate,
        );
        let dev_null = c"/dev/null";
        for step in plan.mounts {
            let (source, path, read_only) = match step {
                MountStep::Pin(p) => (p.as_c_str(), p, false),
                MountStep::ReadOnly(p) => (p.as_c_str(), p, true),
                MountStep::Cover(src, target) => (src.as_c_str(), target, true),
                MountStep::HideFile(target) => (dev_null, target, true),
                MountStep::HideDir(target) => {
                    check(
                        fds,
                        libc::mount(
                            c"tmpfs".as_ptr(),
                            target.as_ptr(),
                            c"tmpfs".as_ptr(),
                            libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                            c"size=4k,mode=0555".as_ptr().cast(),
                        ),
                        Stage::MountMask,
                    );
                    continue;
                }
            };
            check(
                fds,
                libc::mount(
                    source.as_ptr(),
                    path.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                ),
                Stage::MountBind,
            );
            if !read_only {
                continue;
            }
            // rustix makes the statfs system call itself (no C library, no allocation for a
            // C string argument).
            let st = match rustix::fs::statvfs(path.as_c_str()) {
                Ok(st) => st.f_flag.bits(),
                Err(e) => {
                    *libc::__errno_location() = e.raw_os_error();
                    die(fds, Stage::MountReadOnly)
                }
            };
            let flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | locked_mount_flags(st);
            check(
                fds,
                libc::mount(
                    std::ptr::null(),
                    path.as_ptr(),
                    std::ptr::null(),
                    flags,
                    std::ptr::null(),
                ),
                Stage::MountReadOnly,
            );
        }
    }
}

/// A new network namespace has only a loopback interface, and it is down: bring it up, so a
/// command can still talk to itself on 127.0.0.1 (test servers) while nothing outside is reachable.
///
/// # Safety
/// Only in the child (init, in its new network namespace).
unsafe fn loopback_up(fds: &ChildFds) {
    // SAFETY: a socket and an ioctl on a stack struct.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        check(fds, s, Stage::Loopback);
        let mut req: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo\0".iter().enumerate() {
            req.ifr_name[i] = *b as c_char;
        }
        req.ifr_ifru.ifru_flags = (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        check(
            fds,
            libc::ioctl(s, libc::SIOCSIFFLAGS as _, &req),
            Stage::Loopback,
        );
        libc::close(s);
    }
}

/// The command itself: its descriptors, its directory, the sandbox, then the launcher.
///
/// # Safety
/// Only in the child.
unsafe fn exec_command(plan: &ChildPlan<'_>, fds: &ChildFds) -> ! {
    // SAFETY: system calls on memory prepared by the parent.
    unsafe {
        if let Some(w) = fds.status_w {
            libc::close(w);
        }
        // A supervising init blocks the signals it waits for; the command starts with none.
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        check(
            fds,
            libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()),
            Stage::Signals,
        );
        for (target, src) in plan.stdio.iter().enumerate() {
            if let Some(src) = *src {
                check(fds, libc::dup2(src, target as c_int), Stage::Stdio);
            }
        }
        match plan.cwd_fd {
            // A descriptor opened by pablo belongs to pablo's mount namespace: a lookup from it
            // would not see this namespace's read-only mounts. So the directory is entered by
            // its path, and must be the very directory the descriptor holds (a name swapped for
            // a link in the meantime leads elsewhere and is refused).
            Some(fd) if plan.namespaces.pid && plan.namespaces.mount => {
                let mut held: libc::stat = std::mem::zeroed();
                let mut here: libc::stat = std::mem::zeroed();
                check(fds, libc::fstat(fd, &mut held), Stage::Chdir);
                check(fds, libc::chdir(plan.cwd_path.as_ptr()), Stage::Chdir);
                check(fds, libc::stat(c".".as_ptr(), &mut here), Stage::Chdir);
                if held.st_dev != here.st_dev || held.st_ino != here.st_ino {
                    *libc::__errno_location() = libc::ESTALE;
                    die(fds, Stage::Chdir);
                }
            }
            Some(fd) => check(fds, libc::fchdir(fd), Stage::Chdir),
            None => check(fds, libc::chdir(plan.cwd_path.as_ptr()), Stage::Chdir),
        }
        if plan.landlock.is_some() || plan.seccomp.is_some() {
            check(
                fds,
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0),
                Stage::NoNewPrivs,
            );
        }
        if let Some(rs) = plan.landlock {
            let r = libc::syscall(libc::SYS_landlock_restrict_self, rs, 0u32);
            check(fds, r as c_int, Stage::Landlock);
            libc::close(rs);
        }
        if let Some(prog) = plan.seccomp {
            let r = libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0u32,
                prog as *const libc::sock_fprog,
            );
            check(fds, r as c_int, Stage::Seccomp);
        }
        libc::execve(plan.exe.as_ptr(), plan.argv.as_ptr(), plan.envp.as_ptr());
        die(fds, Stage::Exec)
    }
}

/// Closes, first thing in the child, every descriptor of pablo's that neither the child nor the
/// command needs. The child is a copy of pablo until it executes, and an init never executes:
/// without this it would share pablo's open files until the command starts (or, as init, until
/// it forks the command), and with them the session journal's `flock`, which is held by an open
/// file, not by a process. A pablo killed in that window left the journal locked for as long as
/// its dying children lived, and an immediate resume was refused with `session_busy`.
///
/// # Safety
/// Only in the child; no allocation (the list lives on the stack).
unsafe fn close_unneeded(plan: &ChildPlan<'_>, fds: &ChildFds) {
    let (ready_r, ready_w) = fds.ready.unwrap_or((-1, -1));
    let mut keep: [RawFd; 13] = [
        fds.err_w,
        fds.go_r,
        fds.go_w,
        fds.status_w.unwrap_or(-1),
        ready_r,
        ready_w,
        plan.cwd_fd.unwrap_or(-1),
        plan.stdio[0].unwrap_or(-1),
        plan.stdio[1].unwrap_or(-1),
        plan.stdio[2].unwrap_or(-1),
        plan.terminal.unwrap_or(-1),
        plan.landlock.unwrap_or(-1),
        plan.proxy_to.unwrap_or(-1),
    ];
    // Insertion sort: no allocation in a forked child.
    for i in 1..keep.len() {
        let mut j = i;
        while j > 0 && keep[j - 1] > keep[j] {
            keep.swap(j - 1, j);
            j -= 1;
        }
    }
    // 0, 1 and 2 stay: a command with `stdio: None` keeps pablo's own.
    let mut next: RawFd = 3;
    for fd in keep {
        if fd < next {
            continue;
        }
        if fd > next {
            // SAFETY: close_range on descriptor numbers.
            unsafe { libc::syscall(libc::SYS_close_range, next as u32, (fd - 1) as u32, 0u32) };
        }
        next = fd + 1;
    }
    // SAFETY: as above.
    unsafe { libc::syscall(libc::SYS_close_range, next as u32, u32::MAX, 0u32) };
}

/// Every descriptor of pablo's but the status pipe goes: the output pipe must end with the
/// command, and the report pipe must show end of file when the command executes.
///
/// # Safety
/// Only in the child (init).
unsafe fn keep_only_status(fds: &ChildFds) -> c_int {
    // SAFETY: close_range on descriptor numbers.
    unsafe {
        let keep = fds.status_w.unwrap_or(-1);
        if keep > 0 {
            libc::syscall(libc::SYS_close_range, 0u32, (keep - 1) as u32, 0u32);
        }
        libc::syscall(libc::SYS_close_range, (keep + 1) as u32, u32::MAX, 0u32);
        keep
    }
}

/// Init: keeps only the status pipe, reaps whatever ends up as its child, and when the command
/// ends reports its wait status and exits (which ends the namespace).
///
/// # Safety
/// Only in the child (init).
unsafe fn init_loop(command: libc::pid_t, fds: &ChildFds) -> ! {
    // SAFETY: system calls on stack memory.
    unsafe {
        let keep = keep_only_status(fds);
        loop {
            let mut status: c_int = 0;
            let r = libc::waitpid(-1, &mut status, 0);
            if r == command {
                let bytes = status.to_ne_bytes();
                if keep >= 0 {
                    libc::write(keep, bytes.as_ptr().cast(), bytes.len());
                }
                libc::_exit(0);
            }
            if r < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(0);
            }
        }
    }
}

/// Init without a PID namespace: a subreaper that outlives pablo just long enough to kill what
/// the command started (see the module docs).
///
/// pablo's death must not kill init outright (the parent-death signal was KILL until now), so it
/// becomes USR1, blocked and waited for together with CHLD; a check of the parent afterwards
/// covers a pablo that died in between. The command is forked only then, so there is no moment
/// at which pablo's death would leave it behind.
///
/// # Safety
/// Only in the child (init).
unsafe fn supervise(plan: &ChildPlan<'_>, fds: &ChildFds, pablo: libc::pid_t) -> ! {
    // SAFETY: system calls on stack memory.
    unsafe {
        check(
            fds,
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0),
            Stage::Supervise,
        );
        let mut waited: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut waited);
        libc::sigaddset(&mut waited, libc::SIGUSR1);
        libc::sigaddset(&mut waited, libc::SIGCHLD);
        check(
            fds,
            libc::sigprocmask(libc::SIG_BLOCK, &waited, std::ptr::null_mut()),
            Stage::Supervise,
        );
        check(
            fds,
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGUSR1 as libc::c_ulong,
                0,
                0,
                0,
            ),
            Stage::Supervise,
        );
        if libc::getppid() != pablo {
            *libc::__errno_location() = libc::ESRCH;
            die(fds, Stage::ParentGone);
        }
        let pid = libc::syscall(libc::SYS_clone, libc::SIGCHLD as u64, 0usize, 0usize, 0, 0);
        if pid == 0 {
            exec_command(plan, fds);
        }
        if pid < 0 {
            die(fds, Stage::Fork);
        }
        supervise_loop(pid as libc::pid_t, fds, pablo, &waited)
    }
}

/// Signals a supervising init ignores: they reach it because it leads the command's group (a
/// terminal's Ctrl-C, pablo's TERM to the group), and they are meant for the command. Init stays
/// to clean up after it.
const IGNORED_BY_INIT: [c_int; 13] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGPIPE,
    libc::SIGALRM,
    libc::SIGUSR2,
    libc::SIGTSTP,
    libc::SIGTTIN,
    libc::SIGTTOU,
    libc::SIGXCPU,
    libc::SIGXFSZ,
    libc::SIGVTALRM,
];

/// # Safety
/// Only in the child (a supervising init).
unsafe fn supervise_loop(
    command: libc::pid_t,
    fds: &ChildFds,
    pablo: libc::pid_t,
    waited: &libc::sigset_t,
) -> ! {
    // SAFETY: system calls on stack memory.
    unsafe {
        let keep = keep_only_status(fds);
        let mut ignore: libc::sigaction = std::mem::zeroed();
        ignore.sa_sigaction = libc::SIG_IGN;
        for sig in IGNORED_BY_INIT {
            libc::sigaction(sig, &ignore, std::ptr::null_mut());
        }
        loop {
            let sig = libc::sigwaitinfo(waited, std::ptr::null_mut());
            // USR1 from pablo's death, or sent by someone else while pablo lives (ignored then).
            if sig == libc::SIGUSR1 && libc::getppid() != pablo {
                kill_descendants();
                libc::_exit(0);
            }
            loop {
                let mut status: c_int = 0;
                let r = libc::waitpid(-1, &mut status, libc::WNOHANG);
                if r == command {
                    kill_descendants();
                    let bytes = status.to_ne_bytes();
                    if keep >= 0 {
                        libc::write(keep, bytes.as_ptr().cast(), bytes.len());
                    }
                    libc::_exit(0);
                }
                if r <= 0 {
                    break;
                }
            }
        }
    }
}

/// KILLs every child of this process, reaps it, and repeats: the children of a killed child are
/// orphaned to this subreaper, so each round reaches one level further down, until there are no
/// children left (or a bounded number of rounds has passed, for a process the kernel cannot end
/// at once). The children are listed by `/proc/thread-self/children` (init has one thread).
///
/// # Safety
/// Only in a supervising init.
unsafe fn kill_descendants() {
    // SAFETY: open/read/kill/waitpid/nanosleep on stack memory.
    unsafe {
        for _ in 0..2000 {
            let fd = libc::open(
                c"/proc/thread-self/children".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            );
            if fd >= 0 {
                let mut buf = [0u8; 4096];
                let mut pid: libc::pid_t = 0;
                loop {
                    let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
                    if n <= 0 {
                        break;
                    }
                    for &b in &buf[..n as usize] {
                        if b.is_ascii_digit() {
                            pid = pid
                                .saturating_mul(10)
                                .saturating_add((b - b'0') as libc::pid_t);
                        } else {
                            if pid > 0 {
                                libc::kill(pid, libc::SIGKILL);
                            }
                            pid = 0;
                        }
                    }
                }
                if pid > 0 {
                    libc::kill(pid, libc::SIGKILL);
                }
                libc::close(fd);
            }
            loop {
                let r = libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG);
                if r < 0 {
                    // ECHILD: no child is left.
                    return;
                }
                if r == 0 {
                    break;
                }
            }
            if fd < 0 {
                // Without the list only the wait is left: the children end or not on their own.
                return;
            }
            let pause = libc::timespec {
                tv_sec: 0,
                tv_nsec: 1_000_000,
            };
            libc::nanosleep(&pause, std::ptr::null_mut());
        }
    }
}

/// The exit of a command started with namespaces: init's report on `status`, read once init is
/// known to have exited. `None` when init ended without reporting (it was killed).
pub fn read_reported_status(status: &OwnedFd) -> Option<i32> {
    let mut b = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match rustix::io::read(status, &mut b[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => break,
        }
    }
    (got == 4).then(|| i32::from_ne_bytes(b))
}

/// Raises a descriptor to at least 3 (a duplicate, close-on-exec), so that installing it as 0, 1
/// or 2 in the child cannot overwrite another one that is still needed.
pub fn above_stdio(fd: OwnedFd) -> Result<OwnedFd, StartFailure> {
    if fd.as_raw_fd() >= 3 {
        return Ok(fd);
    }
    rustix::io::fcntl_dupfd_cloexec(&fd, 3)
        .map_err(|e| StartFailure::parent("duplicating a descriptor", e.into()))
}

/// The Landlock ABI version the kernel offers; `None` without Landlock.
pub fn landlock_abi() -> Option<i32> {
    const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
    // SAFETY: the version query takes no pointer (NULL, size 0) and returns a number.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (v > 0).then_some(v as i32)
}

/// Builds a `sock_fprog` over a BPF program the caller keeps alive.
pub fn fprog(filter: &[seccompiler::sock_filter]) -> libc::sock_fprog {
    libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statfs_flags_become_the_mount_flags_a_remount_must_keep() {
        let f = locked_mount_flags(libc::ST_NOSUID | libc::ST_NODEV | libc::ST_RELATIME);
        assert_eq!(f, libc::MS_NOSUID | libc::MS_NODEV | libc::MS_RELATIME);
        assert_eq!(locked_mount_flags(0), libc::MS_STRICTATIME);
    }
}
