//! The mounts a command's init makes in its own mount namespace, prepared by the parent: what
//! each step is, and the flags a read-only bind remount must carry over. Kept apart from the
//! child's start-up code, which may not allocate; these are plain data and arithmetic.

/// One mount step init performs, paths prepared as C strings.
#[derive(Debug)]
pub enum MountStep {
    /// Bind the path onto itself (so it becomes a mount point that cannot be renamed away).
    Pin(std::ffi::CString),
    /// Bind the path onto itself, then remount it read-only.
    ReadOnly(std::ffi::CString),
    /// Bind the first file over the second, read-only.
    Cover(std::ffi::CString, std::ffi::CString),
    /// Hide a directory: an empty read-only tmpfs over it.
    HideDir(std::ffi::CString),
    /// Hide a file: `/dev/null` bound over it (it reads as empty).
    HideFile(std::ffi::CString),
}

/// Statfs flags (`ST_*`) to the mount flags a bind remount must repeat: the kernel refuses to
/// drop a flag the outer namespace locked (nosuid, nodev, noexec, the atime mode).
pub(super) fn locked_mount_flags(st: u64) -> libc::c_ulong {
    let mut f: libc::c_ulong = 0;
    for (st_flag, ms_flag) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if st & st_flag != 0 {
            f |= ms_flag;
        }
    }
    if st & (libc::ST_NOATIME | libc::ST_RELATIME) == 0 {
        f |= libc::MS_STRICTATIME;
    }
    f
}
