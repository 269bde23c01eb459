//! What is where in a workspace, at a cost per command that does not grow with the workspace:
//! every `.git` and `.pablo`, for the shield of each `workspace-write` command
//! ([`super::shield`]), and every entry with a credential name, for the mask of each masked read
//! ([`super::mask`]).
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
//! The credential names are the workspace's rule ([`CredentialRule`]), given with the handle: an
//! entry (file, directory or link) that is made, moved in, moved out or removed is matched by its
//! name as it is reported, so the set is current without a read. The mask's walk also bounds the
//! entries it looks at, so the number of entries of each directory is kept too: a directory
//! whose entries changed is counted again (one read of that directory alone) when a mask next
//! asks. What the watches do not see is left to the mask: the inside of each `.pablo` (the mask
//! hides credential files there too) is walked when it asks, which costs little (they hold a few
//! config files), rather than watched, so that the shield's `.pablo` stays a name to look at
//! again. A mask asked under another rule than the one tracked (two callers with different
//! `refused_names` in one process) walks, as without a session.
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
//! limit is never answered partly: the shield's answer says it is incomplete, and the shield
//! refuses; the mask walks (up to its own bound), and does not try the watches again until the
//! shield finds the workspace back under the limit.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::io::Errno;

/// The most workspaces one process keeps watches for (an editor over ACP may open several);
/// beyond, each further workspace is walked per command.
const MAX_TRACKED: usize = 8;

/// Which entries of a workspace hold secrets by their name: the workspace's credential rule
/// (`CredentialNames`, which this layer cannot name; the tool host lends it).
pub trait CredentialRule: Send + Sync {
    /// Whether `rel`, a workspace-relative path with `/` between names, has a credential name.
    fn names(&self, rel: &str) -> bool;
    /// What the rule is made of (its globs, in order): two rules with the same identity name
    /// the same paths, so the entries tracked under one are the answer for the other.
    fn identity(&self) -> &[String];
}

/// What was found in a workspace.
#[derive(Debug, Default)]
pub struct Found {
    /// Every `.git` and `.pablo` (not a link), at any depth, not inside another.
    pub paths: Vec<PathBuf>,
    /// False when the workspace has more directories than the limit: `paths` may miss some.
    pub complete: bool,
    /// How many directories were read to answer (0: the watches knew), for the trace.
    pub read: usize,
    /// Whether the answer came from a tracked workspace's watches (built now or before).
    pub watched: bool,
}

/// The credential-named entries of a tracked workspace that the mask's walk would find outside
/// the `.pablo` directories, and what that walk would have looked at there.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct TrackedCredentials {
    /// Entries with a credential name (files, directories, links), sorted, none inside another
    /// (a directory with a credential name is hidden whole, so nothing in it is looked at).
    pub paths: Vec<PathBuf>,
    /// The `.pablo` directories the walk would enter (not watched): the caller walks them.
    pub pablo: Vec<PathBuf>,
    /// How many entries the walk would look at outside those `.pablo` directories.
    pub entries: usize,
}

/// The process's tracked workspaces: how many handles want each, the credential rule they were
/// tracked under, and the watches once built.
struct Entry {
    holders: usize,
    rule: Arc<dyn CredentialRule>,
    state: State,
}

enum State {
    /// Not built yet (or thrown away: an overflowed queue).
    Unbuilt,
    Built(Box<Tracker>),
    /// More directories than the limit at the last build: the shield builds again (the
    /// workspace may have shrunk), the mask walks.
    Over,
    /// Watches cannot be had here: every command walks.
    Unwatchable,
}

static TRACKED: Mutex<BTreeMap<PathBuf, Entry>> = Mutex::new(BTreeMap::new());

/// While it lives, the `.git`, `.pablo` and credential-named entries of its workspace are kept
/// current between commands (see the module docs); dropping the last handle of a workspace drops
/// its watches.
#[derive(Debug)]
pub struct Tracking {
    workspace: Option<PathBuf>,
}

/// Keeps the `.git`, `.pablo` and the entries named by `rule` of `workspace` current for as long
/// as the handle lives. Nothing is walked until a command asks. A workspace already tracked keeps
/// the rule it was first tracked under.
pub fn track(workspace: &Path, rule: Arc<dyn CredentialRule>) -> Tracking {
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
            rule,
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
pub fn find(workspace: &Path, limit: usize) -> Found {
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
            State::Unbuilt | State::Over => {
                entry.state = match Tracker::build(workspace, limit, entry.rule.clone()) {
                    Ok(t) if t.over => {
                        // Over the limit: nothing is kept; the next command looks again (the
                        // workspace may have shrunk), at the cost of a walk up to the limit.
                        entry.state = State::Over;
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

/// The credential-named entries of `workspace` (canonical) under `rule`, from its watches, built
/// for at most `limit` directories if they are not yet. `None` when the mask must walk: the
/// workspace is not tracked, or under another rule, or has no watches (unwatchable, over the
/// limit).
pub fn credentials(
    workspace: &Path,
    rule: &dyn CredentialRule,
    limit: usize,
) -> Option<TrackedCredentials> {
    let mut tracked = TRACKED.lock().ok()?;
    let entry = tracked.get_mut(workspace)?;
    if entry.rule.identity() != rule.identity() {
        return None;
    }
    loop {
        match &mut entry.state {
            State::Unwatchable | State::Over => return None,
            State::Unbuilt => {
                entry.state = match Tracker::build(workspace, limit, entry.rule.clone()) {
                    Ok(t) if t.over => State::Over,
                    Ok(t) => State::Built(Box::new(t)),
                    Err(()) => State::Unwatchable,
                };
            }
            State::Built(t) => {
                if !t.catch_up() {
                    entry.state = if t.over { State::Over } else { State::Unbuilt };
                    continue;
                }
                return Some(t.credentials());
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
pub fn walk(workspace: &Path, limit: usize) -> Found {
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

/// One watched directory.
#[derive(Debug, Clone, Copy)]
struct Watched {
    wd: i32,
    /// How many entries it held when last read (what the mask's walk would look at there).
    entries: usize,
}

/// The watches of one workspace and what they have found.
struct Tracker {
    root: PathBuf,
    fd: OwnedFd,
    /// Watch descriptor → the directory it watches.
    dirs: HashMap<i32, PathBuf>,
    /// The same, by path (a directory's descendants sort right after it).
    by_path: BTreeMap<PathBuf, Watched>,
    found: BTreeSet<PathBuf>,
    /// The credential rule, and every entry of a watched directory that it names (at any depth:
    /// the watches go into a directory with a credential name, the mask does not).
    rule: Arc<dyn CredentialRule>,
    credentials: BTreeSet<PathBuf>,
    /// The sum of `by_path`'s entries.
    entries: usize,
    /// Directories whose entries changed since they were counted: counted when a mask asks.
    recount: BTreeSet<PathBuf>,
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
    fn build(root: &Path, limit: usize, rule: Arc<dyn CredentialRule>) -> Result<Self, ()> {
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).map_err(|_| ())?;
        let mut t = Self {
            root: root.to_path_buf(),
            fd,
            dirs: HashMap::new(),
            by_path: BTreeMap::new(),
            found: BTreeSet::new(),
            rule,
            credentials: BTreeSet::new(),
            entries: 0,
            recount: BTreeSet::new(),
            limit,
            over: false,
            reads: 0,
            buf: vec![MaybeUninit::uninit(); 64 * 1024],
        };
        t.walk_from(root).map_err(|_| ())?;
        Ok(t)
    }

    /// Watches `dir` and every directory below it, and finds the protected and credential names
    /// there. The watch of a directory is added before it is read, so what is made in it after
    /// the read is reported.
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
            let mut count = 0;
            for e in entries.flatten() {
                count += 1;
                let name = e.file_name();
                let path = e.path();
                self.note_made(&path);
                let Ok(kind) = e.file_type() else { continue };
                if protected_name(&name) {
                    if !kind.is_symlink() {
                        self.found.insert(path);
                    }
                    continue;
                }
                if kind.is_dir() {
                    stack.push(path);
                }
            }
            self.set_entries(&d, count);
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
                    self.unwatched(&old);
                }
                let entries = self.by_path.get(dir).map_or(0, |w| w.entries);
                self.by_path
                    .insert(dir.to_path_buf(), Watched { wd, entries });
                Ok(())
            }
            Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => Err(WatchFailure::Gone),
            Err(_) => Err(WatchFailure::Unwatchable),
        }
    }

    /// Drops `dir` (one directory, not what is below) from `by_path`, with its entries.
    fn unwatched(&mut self, dir: &Path) {
        if let Some(w) = self.by_path.remove(dir) {
            self.entries = self.entries.saturating_sub(w.entries);
        }
    }

    /// Records that a watched `dir` now holds `count` entries.
    fn set_entries(&mut self, dir: &Path, count: usize) {
        if let Some(w) = self.by_path.get_mut(dir) {
            self.entries = self.entries.saturating_sub(w.entries) + count;
            w.entries = count;
        }
    }

    /// An entry at `path` exists (read, made or moved in): kept when its name is a credential's.
    fn note_made(&mut self, path: &Path) {
        let rel = path.strip_prefix(&self.root).unwrap_or(path);
        if self.rule.names(&rel.to_string_lossy()) {
            self.credentials.insert(path.to_path_buf());
        }
    }

    /// Forgets `dir` and everything below it: its watches and what was found there.
    fn forget(&mut self, dir: &Path) {
        let below: Vec<(PathBuf, i32)> = self
            .by_path
            .range(dir.to_path_buf()..)
            .take_while(|(p, _)| p.starts_with(dir))
            .map(|(p, w)| (p.clone(), w.wd))
            .collect();
        for (p, wd) in below {
            self.unwatched(&p);
            self.dirs.remove(&wd);
            // A removed directory's watch is already gone; a moved one's must go, or its events
            // would be taken for the old name's.
            let _ = inotify::remove_watch(&self.fd, wd);
        }
        for set in [&mut self.found, &mut self.credentials, &mut self.recount] {
            let below: Vec<PathBuf> = set
                .range(dir.to_path_buf()..)
                .take_while(|p| p.starts_with(dir))
                .cloned()
                .collect();
            for p in below {
                set.remove(&p);
            }
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
            if self.by_path.get(&dir).map(|w| w.wd) == Some(wd) {
                self.unwatched(&dir);
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
        let made = flags.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO);
        let gone = flags.intersects(ReadFlags::DELETE | ReadFlags::MOVED_FROM);
        if made || gone {
            // A file as much as a directory: the count of `dir`'s entries, and whether a
            // credential-named entry is there.
            self.recount.insert(dir.clone());
            if made {
                self.note_made(&path);
            } else {
                self.credentials.remove(&path);
            }
        }
        if protected_name(&name) {
            self.recheck(path);
            return true;
        }
        if !flags.contains(ReadFlags::ISDIR) {
            return true;
        }
        if gone {
            self.forget(&path);
        } else if made || (flags.contains(ReadFlags::ATTRIB) && !self.by_path.contains_key(&path)) {
            // Made, moved in, or (a directory that could not be read) its permissions changed.
            if let Err(WatchFailure::Unwatchable) = self.walk_from(&path) {
                return false;
            }
        }
        !self.over
    }

    /// What the mask's walk would find outside `.pablo`, after counting the directories whose
    /// entries changed.
    fn credentials(&mut self) -> TrackedCredentials {
        for dir in std::mem::take(&mut self.recount) {
            if self.by_path.contains_key(&dir) {
                let count = std::fs::read_dir(&dir).map_or(0, |r| r.flatten().count());
                self.set_entries(&dir, count);
            }
        }
        // Sorted, a directory's descendants right after it: each entry inside the last one
        // kept is inside a directory with a credential name, which the walk does not enter.
        let mut paths: Vec<PathBuf> = Vec::new();
        for p in &self.credentials {
            if paths.last().is_none_or(|last| !p.starts_with(last)) {
                paths.push(p.clone());
            }
        }
        let mut entries = self.entries;
        for p in &paths {
            for (_, w) in self
                .by_path
                .range(p.clone()..)
                .take_while(|(d, _)| d.starts_with(p))
            {
                entries = entries.saturating_sub(w.entries);
            }
        }
        let inside_credential = |p: &Path| {
            let at = paths.partition_point(|c| c.as_path() <= p);
            at > 0 && p.starts_with(&paths[at - 1])
        };
        let pablo = self
            .found
            .iter()
            .filter(|p| p.file_name().is_some_and(|n| n == ".pablo"))
            .filter(|p| !inside_credential(p))
            .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
            .cloned()
            .collect();
        TrackedCredentials {
            paths,
            pablo,
            entries,
        }
    }
}

/// One workspace's watches outside the process's registry, which tracks at most [`MAX_TRACKED`]
/// workspaces for every test of the process at once: a test of the watches' answer gets them for
/// sure.
#[cfg(test)]
pub struct Watches {
    tracker: Tracker,
    /// How many times the watches were built anew (an overflowed queue).
    pub rebuilt: usize,
}

#[cfg(test)]
impl Watches {
    pub fn new(workspace: &Path, rule: Arc<dyn CredentialRule>) -> Self {
        let tracker = Tracker::build(workspace, 100_000, rule).expect("inotify watches");
        Self {
            tracker,
            rebuilt: 0,
        }
    }

    /// What [`credentials`] answers from these watches (built anew when they cannot be trusted,
    /// as the registry does).
    pub fn credentials(&mut self) -> TrackedCredentials {
        if !self.tracker.catch_up() {
            let t = &self.tracker;
            let again = Tracker::build(&t.root, t.limit, t.rule.clone()).expect("inotify watches");
            self.tracker = again;
            self.rebuilt += 1;
        }
        self.tracker.credentials()
    }
}

/// A rule for tests: a name without `/` matches an entry's name, one with `/` the end of its
/// workspace-relative path.
#[cfg(test)]
pub struct NameRule(Vec<String>);

#[cfg(test)]
impl NameRule {
    pub fn of(names: &[&str]) -> Self {
        Self(names.iter().map(|n| n.to_string()).collect())
    }
}

#[cfg(test)]
impl CredentialRule for NameRule {
    fn names(&self, rel: &str) -> bool {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        self.0.iter().any(|n| {
            if n.contains('/') {
                rel == n || rel.ends_with(&format!("/{n}"))
            } else {
                n == name
            }
        })
    }

    fn identity(&self) -> &[String] {
        &self.0
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
        let _t = track(&ws, Arc::new(NameRule::of(&[".env"])));
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
        let _t = track(&ws, Arc::new(NameRule::of(&[".env"])));
        assert!(find(&ws, 11).complete);
        std::fs::create_dir(ws.join("one-more")).unwrap();
        assert!(!find(&ws, 11).complete);
        std::fs::remove_dir(ws.join("one-more")).unwrap();
        assert!(find(&ws, 11).complete);
    }
}
