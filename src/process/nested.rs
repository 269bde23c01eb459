//! Where every `.git` and `.pablo` of a workspace is, for the shield of each `workspace-write`
//! command ([`super::shield`]), at a cost per command that does not grow with the workspace.
//!
//! A one-shot walk reads every directory of the workspace: in a monorepo of 40,000 directories
//! that is most of a command's start, paid again by every command. A session instead keeps the
//! answer current: while a [`Tracking`] handle for the workspace lives (a session's tool host
//! holds one), the first command walks once and puts an inotify watch on every directory it
//! reads (outside `.git` and `.pablo`, which are never entered); after that, a command's question
//! costs a read of the event queue. A directory that appears (made, or moved in) is walked and
//! watched as it is reported; a `.git` or `.pablo` that appears or goes is looked at again by name;
//! a directory that goes (removed, or moved out) is forgotten with what was found below it.
//! Events are queued by the system call that makes the change, so once a command has exited,
//! everything it made is in the queue when the next command asks.
//!
//! Why not the checkpoint scanner's watch, which also sees the workspace change: it watches only
//! the directories git follows (an ignored `node_modules/x/.git` is exactly what must be found),
//! and it lives in the session layer, above this one.
//!
//! When the watch cannot keep up, the walk comes back: an overflowed queue (more changes between
//! two commands than the kernel queues, `fs.inotify.max_queued_events`) throws the watches away
//! and the next command walks again, once, building them anew; when no watch can be added (the
//! `fs.inotify.max_user_watches` limit, no inotify) every command walks, as without a session.
//! Either way the answer is the same, only slower. A workspace with more directories than the
//! limit is never answered partly: the answer says it is incomplete, and the shield refuses.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::io::Errno;

/// The most workspaces one process keeps watches for (an editor over ACP may open several);
/// beyond, each further workspace is walked per command.
const MAX_TRACKED: usize = 8;

/// What was found in a workspace.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// Every `.git` and `.pablo` (not a link), at any depth, not inside another.
    pub(crate) paths: Vec<PathBuf>,
    /// False when the workspace has more directories than the limit: `paths` may miss some.
    pub(crate) complete: bool,
    /// How many directories were read to answer (0: the watches knew), for the trace.
    pub(crate) read: usize,
    /// Whether the answer came from a tracked workspace's watches (built now or before).
    pub(crate) watched: bool,
}

/// The process's tracked workspaces: how many handles want each, and its watches once built.
struct Entry {
    holders: usize,
    state: State,
}

enum State {
    /// Not built yet (or thrown away: an overflowed queue, a workspace over the limit).
    Unbuilt,
    Built(Box<Tracker>),
    /// Watches cannot be had here: every command walks.
    Unwatchable,
}

static TRACKED: Mutex<BTreeMap<PathBuf, Entry>> = Mutex::new(BTreeMap::new());

/// While it lives, the `.git` and `.pablo` of its workspace are kept current between commands
/// (see the module docs); dropping the last handle of a workspace drops its watches.
#[derive(Debug)]
pub(crate) struct Tracking {
    workspace: Option<PathBuf>,
}

/// Keeps the `.git` and `.pablo` of `workspace` current for as long as the handle lives. Nothing
/// is walked until a command asks.
pub(crate) fn track(workspace: &Path) -> Tracking {
    let Ok(ws) = std::fs::canonicalize(workspace) else {
        return Tracking { workspace: None };
    };
    let Ok(mut tracked) = TRACKED.lock() else {
        return Tracking { workspace: None };
    };
    if !tracked.contains_key(&ws) && tracked.len() >= MAX_TRACKED {
        return Tracking { workspace: None };
    }
    tracked
        .entry(ws.clone())
        .or_insert(Entry {
            holders: 0,
            state: State::Unbuilt,
        })
        .holders += 1;
    Tracking {
        workspace: Some(ws),
    }
}

impl Drop for Tracking {
    fn drop(&mut self) {
        let Some(ws) = self.workspace.take() else {
            return;
        };
        if let Ok(mut tracked) = TRACKED.lock()
            && let Some(e) = tracked.get_mut(&ws)
        {
            e.holders = e.holders.saturating_sub(1);
            if e.holders == 0 {
                tracked.remove(&ws);
            }
        }
    }
}

/// Every `.git` and `.pablo` below `workspace` (canonical), looking at no more than `limit`
/// directories: from its watches when the workspace is tracked, else by a walk.
pub(crate) fn find(workspace: &Path, limit: usize) -> Found {
    let Ok(mut tracked) = TRACKED.lock() else {
        return walk(workspace, limit);
    };
    let Some(entry) = tracked.get_mut(workspace) else {
        drop(tracked);
        return walk(workspace, limit);
    };
    loop {
        match &mut entry.state {
            State::Unwatchable => return walk(workspace, limit),
            State::Unbuilt => {
                entry.state = match Tracker::build(workspace, limit) {
                    Ok(t) if t.over => {
                        // Over the limit: nothing is kept; the next command looks again (the
                        // workspace may have shrunk), at the cost of a walk up to the limit.
                        return Found {
                            paths: Vec::new(),
                            complete: false,
                            read: t.reads,
                            watched: true,
                        };
                    }
                    Ok(t) => State::Built(Box::new(t)),
                    Err(()) => State::Unwatchable,
                };
            }
            State::Built(t) => {
                if t.limit < limit {
                    // A session that allows more directories than the watches were built for.
                    entry.state = State::Unbuilt;
                    continue;
                }
                if !t.catch_up() {
                    entry.state = State::Unbuilt;
                    continue;
                }
                return Found {
                    paths: t.found.iter().cloned().collect(),
                    complete: t.by_path.len() <= limit,
                    read: std::mem::take(&mut t.reads),
                    watched: true,
                };
            }
        }
    }
}

/// Whether a name is one the shield protects.
fn protected_name(name: &std::ffi::OsStr) -> bool {
    name == ".git" || name == ".pablo"
}

/// The one-shot walk: every directory read once, `.git` and `.pablo` not entered, links not
/// followed.
pub(crate) fn walk(workspace: &Path, limit: usize) -> Found {
    let mut found = Found {
        paths: Vec::new(),
        complete: true,
        read: 0,
        watched: false,
    };
    let mut stack = vec![workspace.to_path_buf()];
    let mut visited = 0usize;
    while let Some(d) = stack.pop() {
        visited += 1;
        if visited > limit {
            found.complete = false;
            break;
        }
        found.read += 1;
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let Ok(kind) = e.file_type() else { continue };
            if protected_name(&name) {
                if !kind.is_symlink() {
                    found.paths.push(e.path());
                }
                continue;
            }
            if kind.is_dir() {
                stack.push(e.path());
            }
        }
    }
    found
}

/// The watches of one workspace and what they have found.
struct Tracker {
    root: PathBuf,
    fd: OwnedFd,
    /// Watch descriptor → the directory it watches.
    dirs: HashMap<i32, PathBuf>,
    /// The same, by path (a directory's descendants sort right after it).
    by_path: BTreeMap<PathBuf, i32>,
    found: BTreeSet<PathBuf>,
    /// The most directories watched; `over` when the workspace has more.
    limit: usize,
    over: bool,
    /// Directories read since the last answer (the build's walk, walks of new directories).
    reads: usize,
    buf: Vec<MaybeUninit<u8>>,
}

/// Why a directory could not be watched.
enum WatchFailure {
    /// It is gone, or is no longer a directory (its parent's events say what became of it).
    Gone,
    /// No watch can be had (the limit of watches, or anything else): every command walks.
    Unwatchable,
}

impl Tracker {
    /// Watches and walks the whole workspace. `Err` when watches cannot be had.
    fn build(root: &Path, limit: usize) -> Result<Self, ()> {
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).map_err(|_| ())?;
        let mut t = Self {
            root: root.to_path_buf(),
            fd,
            dirs: HashMap::new(),
            by_path: BTreeMap::new(),
            found: BTreeSet::new(),
            limit,
            over: false,
            reads: 0,
            buf: vec![MaybeUninit::uninit(); 64 * 1024],
        };
        t.walk_from(root).map_err(|_| ())?;
        Ok(t)
    }

    /// Watches `dir` and every directory below it, and finds the protected names there. The
    /// watch of a directory is added before it is read, so what is made in it after the read is
    /// reported.
    fn walk_from(&mut self, dir: &Path) -> Result<(), WatchFailure> {
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            if self.over {
                return Ok(());
            }
            match self.watch(&d) {
                Ok(()) => {}
                Err(WatchFailure::Gone) => continue,
                Err(e) => return Err(e),
            }
            self.reads += 1;
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                let name = e.file_name();
                let Ok(kind) = e.file_type() else { continue };
                if protected_name(&name) {
                    if !kind.is_symlink() {
                        self.found.insert(e.path());
                    }
                    continue;
                }
                if kind.is_dir() {
                    stack.push(e.path());
                }
            }
        }
        Ok(())
    }

    fn watch(&mut self, dir: &Path) -> Result<(), WatchFailure> {
        if !self.by_path.contains_key(dir) && self.by_path.len() >= self.limit {
            self.over = true;
            return Ok(());
        }
        let mask = WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::ATTRIB
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::ONLYDIR
            | WatchFlags::DONT_FOLLOW
            | WatchFlags::EXCL_UNLINK;
        match inotify::add_watch(&self.fd, dir, mask) {
            Ok(wd) => {
                // The same directory watched under another name (moved, not yet forgotten):
                // the new name is the one that counts.
                if let Some(old) = self.dirs.insert(wd, dir.to_path_buf())
                    && old != dir
                {
                    self.by_path.remove(&old);
                }
                self.by_path.insert(dir.to_path_buf(), wd);
                Ok(())
            }
            Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => Err(WatchFailure::Gone),
            Err(_) => Err(WatchFailure::Unwatchable),
        }
    }

    /// Forgets `dir` and everything below it: its watches and what was found there.
    fn forget(&mut self, dir: &Path) {
        let below: Vec<(PathBuf, i32)> = self
            .by_path
            .range(dir.to_path_buf()..)
            .take_while(|(p, _)| p.starts_with(dir))
            .map(|(p, wd)| (p.clone(), *wd))
            .collect();
        for (p, wd) in below {
            self.by_path.remove(&p);
            self.dirs.remove(&wd);
            // A removed directory's watch is already gone; a moved one's must go, or its events
            // would be taken for the old name's.
            let _ = inotify::remove_watch(&self.fd, wd);
        }
        let found: Vec<PathBuf> = self
            .found
            .range(dir.to_path_buf()..)
            .take_while(|p| p.starts_with(dir))
            .cloned()
            .collect();
        for p in found {
            self.found.remove(&p);
        }
    }

    /// Looks again at a protected name that an event mentioned.
    fn recheck(&mut self, path: PathBuf) {
        match std::fs::symlink_metadata(&path) {
            Ok(m) if !m.file_type().is_symlink() => {
                self.found.insert(path);
            }
            _ => {
                self.found.remove(&path);
            }
        }
    }

    /// Applies every queued event. False when the watches can no longer be trusted (the queue
    /// overflowed, the workspace itself moved, a directory could not be watched): the caller
    /// builds them again.
    fn catch_up(&mut self) -> bool {
        use std::os::unix::ffi::OsStrExt;
        loop {
            let mut events = Vec::new();
            let mut reader = inotify::Reader::new(self.fd.as_fd(), &mut self.buf);
            loop {
                match reader.next() {
                    Ok(e) => events.push((
                        e.wd(),
                        e.events(),
                        e.file_name()
                            .map(|n| std::ffi::OsStr::from_bytes(n.to_bytes()).to_os_string()),
                    )),
                    Err(Errno::AGAIN) => break,
                    Err(Errno::INTR) => continue,
                    Err(_) => return false,
                }
            }
            if events.is_empty() {
                return !self.over;
            }
            for (wd, flags, name) in events {
                if !self.apply(wd, flags, name) {
                    return false;
                }
            }
        }
    }

    fn apply(&mut self, wd: i32, flags: ReadFlags, name: Option<std::ffi::OsString>) -> bool {
        if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
            return false;
        }
        let Some(dir) = self.dirs.get(&wd).cloned() else {
            return true;
        };
        if flags.contains(ReadFlags::IGNORED) {
            self.dirs.remove(&wd);
            if self.by_path.get(&dir) == Some(&wd) {
                self.by_path.remove(&dir);
            }
            return dir != self.root;
        }
        if flags.intersects(ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF) {
            // The parent's event says what became of a directory; the workspace has no parent
            // watched.
            return dir != self.root;
        }
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return true;
        };
        let path = dir.join(&name);
        if protected_name(&name) {
            self.recheck(path);
            return true;
        }
        if !flags.contains(ReadFlags::ISDIR) {
            return true;
        }
        if flags.intersects(ReadFlags::DELETE | ReadFlags::MOVED_FROM) {
            self.forget(&path);
        } else if flags.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO)
            || (flags.contains(ReadFlags::ATTRIB) && !self.by_path.contains_key(&path))
        {
            // Made, moved in, or (a directory that could not be read) its permissions changed.
            if let Err(WatchFailure::Unwatchable) = self.walk_from(&path) {
                return false;
            }
        }
        !self.over
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(mut v: Vec<PathBuf>) -> Vec<PathBuf> {
        v.sort();
        v
    }

    #[test]
    fn a_tracked_workspace_learns_of_every_protected_name_as_it_comes_and_goes() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join("a/b/.git")).unwrap();
        let _t = track(&ws);
        let f = find(&ws, 1000);
        assert!(f.complete);
        assert_eq!(f.paths, vec![ws.join("a/b/.git")]);

        std::fs::create_dir_all(ws.join("x/y/z")).unwrap();
        std::fs::create_dir(ws.join("x/y/z/.git")).unwrap();
        std::fs::create_dir_all(ws.join("n/.pablo")).unwrap();
        std::fs::write(ws.join("a/.git"), "gitdir: b/.git\n").unwrap();
        std::os::unix::fs::symlink("/", ws.join("x/.git")).unwrap();
        let f = find(&ws, 1000);
        assert_eq!(
            sorted(f.paths),
            vec![
                ws.join("a/.git"),
                ws.join("a/b/.git"),
                ws.join("n/.pablo"),
                ws.join("x/y/z/.git")
            ]
        );

        std::fs::rename(ws.join("x"), ws.join("moved")).unwrap();
        std::fs::remove_dir_all(ws.join("n")).unwrap();
        std::fs::create_dir(ws.join("moved/y/.git")).unwrap();
        let f = find(&ws, 1000);
        assert_eq!(
            sorted(f.paths),
            vec![
                ws.join("a/.git"),
                ws.join("a/b/.git"),
                ws.join("moved/y/.git"),
                ws.join("moved/y/z/.git")
            ]
        );
        // Whatever happened, the watches agree with a walk.
        assert_eq!(sorted(walk(&ws, 1000).paths), sorted(find(&ws, 1000).paths));
    }

    #[test]
    fn more_directories_than_the_limit_is_an_incomplete_answer_tracked_or_not() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        for i in 0..10 {
            std::fs::create_dir_all(ws.join(format!("d{i}"))).unwrap();
        }
        assert!(walk(&ws, 11).complete);
        assert!(!walk(&ws, 10).complete);
        let _t = track(&ws);
        assert!(find(&ws, 11).complete);
        std::fs::create_dir(ws.join("one-more")).unwrap();
        assert!(!find(&ws, 11).complete);
        std::fs::remove_dir(ws.join("one-more")).unwrap();
        assert!(find(&ws, 11).complete);
    }
}
