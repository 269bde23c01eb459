//! The low level of starting a command: the one thread every command is forked from, the C
//! strings the child needs, one start with prepared descriptors, and the probe that tells
//! whether commands can get namespaces here.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::OnceLock;

use super::ProcessError;
use super::child::{self, ChildPlan, Namespaces, Prepared};
use super::group::{self, ExitInfo};
use pablo_config::CLEAN_PATH;

type SpawnJob = Box<dyn FnOnce() + Send>;

/// The thread every command is forked from; `None` when it could not be started.
///
/// The kernel sends the parent-death signal when the *thread* that forked the child ends, not
/// when the process does. Callers run on tokio threads, and blocking-pool threads retire after a
/// few idle seconds: forking there would kill a background job at a random later moment. This
/// thread lives as long as pablo (its sender is never dropped), so the signal means "pablo died".
fn spawner() -> Option<&'static parking_lot::Mutex<std::sync::mpsc::Sender<SpawnJob>>> {
    static SPAWNER: OnceLock<Option<parking_lot::Mutex<std::sync::mpsc::Sender<SpawnJob>>>> =
        OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::channel::<SpawnJob>();
            std::thread::Builder::new()
                .name("pablo-spawner".into())
                .spawn(move || {
                    while let Ok(job) = rx.recv() {
                        job();
                    }
                })
                .ok()
                .map(|_| parking_lot::Mutex::new(tx))
        })
        .as_ref()
}

/// Runs `f` on the spawner thread and returns its answer; runs it here when that thread is not
/// available (the command then still starts, tied to this thread).
pub fn on_spawner<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (done_tx, done_rx) = std::sync::mpsc::sync_channel(1);
    let job: SpawnJob = Box::new(move || {
        let _ = done_tx.send(f());
    });
    let sent = spawner().map(|s| s.lock().send(job));
    match sent {
        Some(Ok(())) => done_rx.recv().ok(),
        Some(Err(std::sync::mpsc::SendError(job))) => {
            job();
            done_rx.recv().ok()
        }
        None => None,
    }
}

fn cstr(s: &str, what: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("the {what} contains a NUL byte"))
}

/// The program `execve` gets: the word itself when it has a slash, else the first match on the
/// command's own `PATH` (as the shell would find it).
fn resolve_program(word: &str, env: &[(String, String)]) -> String {
    if word.contains('/') {
        return word.to_string();
    }
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str())
        .unwrap_or(CLEAN_PATH);
    for dir in path.split(':').filter(|d| d.starts_with('/')) {
        let candidate = Path::new(dir).join(word);
        if rustix::fs::access(&candidate, rustix::fs::Access::EXEC_OK).is_ok()
            && candidate.is_file()
        {
            return candidate.to_string_lossy().into_owned();
        }
    }
    word.to_string()
}

/// C strings for the child, and the pointer arrays into them (kept together so they live as
/// long as the start).
pub struct Exec {
    exe: CString,
    argv: Vec<CString>,
    envp: Vec<CString>,
    cwd: CString,
}

impl Exec {
    pub fn new(argv: &[String], env: &[(String, String)], cwd: &Path) -> Result<Self, String> {
        let program = argv.first().ok_or("there is no program to run")?;
        let exe = cstr(&resolve_program(program, env), "program")?;
        let argv: Vec<CString> = argv
            .iter()
            .map(|a| cstr(a, "command"))
            .collect::<Result<_, _>>()?;
        let envp: Vec<CString> = env
            .iter()
            .map(|(k, v)| cstr(&format!("{k}={v}"), "environment"))
            .collect::<Result<_, _>>()?;
        let cwd = CString::new(cwd.as_os_str().as_bytes())
            .map_err(|_| "the working directory contains a NUL byte".to_string())?;
        Ok(Self {
            exe,
            argv,
            envp,
            cwd,
        })
    }
}

/// Starts one child with the given descriptors; the sandbox's pieces come from `prepared`.
pub fn start(
    exec: &Exec,
    cwd_fd: Option<RawFd>,
    stdio: [Option<RawFd>; 3],
    terminal: Option<RawFd>,
    prepared: &Prepared,
) -> Result<child::Spawned, child::StartFailure> {
    let nul_terminated = |v: &[CString]| {
        let mut p: Vec<*const std::ffi::c_char> = v.iter().map(|c| c.as_ptr()).collect();
        p.push(std::ptr::null());
        p
    };
    let argv = nul_terminated(&exec.argv);
    let envp = nul_terminated(&exec.envp);
    let prog = prepared.seccomp.as_ref().map(|f| child::fprog(f));
    let proxy = match prepared.proxy && prepared.namespaces.net {
        true => Some(super::proxyport::pair().map_err(|e| child::StartFailure {
            stage: None,
            errno: e.raw_os_error().unwrap_or(libc::EIO),
            detail: "creating the proxy's socket pair".into(),
        })?),
        false => None,
    };
    let plan = ChildPlan {
        exe: &exec.exe,
        argv: &argv,
        envp: &envp,
        cwd_fd,
        cwd_path: &exec.cwd,
        stdio,
        terminal,
        namespaces: prepared.namespaces,
        mounts: &prepared.mounts,
        landlock: prepared.landlock.as_ref().map(|f| f.as_raw_fd()),
        seccomp: prog.as_ref(),
        id_maps: prepared.id_maps.as_ref(),
        // Without a PID namespace the command still gets an init of pablo's, so that what it
        // starts dies with pablo.
        supervise: !prepared.namespaces.pid,
        proxy_to: proxy.as_ref().map(|(_, theirs)| theirs.as_raw_fd()),
    };
    let mut spawned = child::spawn(&plan)?;
    if let Some((ours, _)) = &proxy {
        // The child sent the listener before it started the command (or failed the start).
        match super::proxyport::receive(ours) {
            Ok(l) => spawned.proxy_listener = Some(l),
            Err(e) => tracing::warn!("the network proxy's port did not arrive: {e}"),
        }
    }
    Ok(spawned)
}

/// [`run_inherited`] with the sandbox already prepared (benches compare preparations).
pub fn run_prepared(
    argv: &[String],
    cwd: &Path,
    env: &[(String, String)],
    prepared: Prepared,
) -> Result<ExitInfo, ProcessError> {
    run_prepared_in(argv, cwd, env, prepared, &[]).map(|(info, _)| info)
}

/// [`run_prepared`] with the network proxy for `allow` served while the command runs (when the
/// sandbox has one): how the command ended, and the hosts the proxy refused.
pub fn run_prepared_in(
    argv: &[String],
    cwd: &Path,
    env: &[(String, String)],
    prepared: Prepared,
    allow: &[pablo_config::NetAllowEntry],
) -> Result<(ExitInfo, Vec<String>), ProcessError> {
    let name = argv.first().cloned().unwrap_or_default();
    let failed = |m: String| ProcessError::Spawn {
        launcher: name.clone(),
        message: m,
    };
    let mut env = env.to_vec();
    if prepared.proxy {
        super::netproxy::set_proxy_env(&mut env);
    }
    let exec = Exec::new(argv, &env, cwd).map_err(&failed)?;
    let mut started = on_spawner(move || {
        start(&exec, None, [None, None, None], None, &prepared).map_err(|e| e.to_string())
    })
    .unwrap_or_else(|| Err("the spawner thread stopped".into()))
    .map_err(&failed)?;
    let proxy = super::netproxy::serve_sent(started.proxy_listener.take(), allow);
    let info = group::wait_exit_no_reap(started.pid, started.status.as_ref());
    reap(started.pid);
    let refused = proxy.map(|p| p.refused_hosts()).unwrap_or_default();
    Ok((info, refused))
}

/// Whether commands can get their own namespaces here: a short-lived child tries every step
/// (user, PID, mount and network namespaces, the id maps, a private mount tree, the loopback)
/// and exits. `Err` says which step the kernel refused.
pub fn probe_namespaces() -> Result<(), String> {
    let program = ["/bin/true", "/usr/bin/true", "/bin/sh"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .ok_or("no /bin/true to probe with")?;
    let argv = [program.to_string(), "-c".into(), ":".into()];
    let exec = Exec::new(&argv, &[], Path::new("/"))?;
    let prepared = Prepared {
        namespaces: Namespaces {
            pid: true,
            mount: true,
            net: true,
        },
        id_maps: Some(child::IdMaps::identity()),
        ..Prepared::default()
    };
    let null = std::fs::File::open("/dev/null").map_err(|e| e.to_string())?;
    let null = child::above_stdio(OwnedFd::from(null)).map_err(|e| e.to_string())?;
    let started = on_spawner(move || {
        let n = Some(null.as_raw_fd());
        start(&exec, None, [n, n, n], None, &prepared).map_err(|e| e.to_string())
    })
    .unwrap_or_else(|| Err("the spawner thread stopped".into()))?;
    let info = group::wait_exit_no_reap(started.pid, started.status.as_ref());
    reap(started.pid);
    if info.code == Some(0) {
        Ok(())
    } else {
        Err(format!("the probe ended with {info:?}"))
    }
}

fn reap(pid: i32) {
    if let Some(p) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::waitpid(Some(p), rustix::process::WaitOptions::NOHANG);
    }
}
