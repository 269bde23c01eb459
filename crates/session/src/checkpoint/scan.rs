//! Which workspace files a shell command changed, and their bytes from before it ran.
//!
//! A command can change any file, so the bytes of every followed file (see [`super::ignore`])
//! must already be in the content store when it starts. The first scan of a session walks the
//! workspace once, hashes every file and stores what is not stored yet (a second session of the
//! same workspace finds its objects there). After that the scanner keeps an index (path → size,
//! times, inode, hash) and learns what changed from the kernel: an inotify watch on every followed
//! directory reports each created, written, moved or deleted name, so bringing the index up to
//! date costs a read of the event queue and a hash of the files named in it, not a walk of the
//! workspace. Events are queued by the system call that makes the change, so once a command's
//! processes have exited its changes are all in the queue.
//!
//! When inotify is not available (no watches left, an overflowed queue, a `.gitignore` that
//! changed), the scanner walks the whole workspace again, comparing each file's stat data with the
//! index and hashing only those whose stat changed (or that changed too recently for the
//! timestamps to tell, git's "racily clean" case).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use sha2::{Digest, Sha256};

use super::ignore::{IgnoreRules, always_skipped, parent_of};
use super::objects::{Budget, ObjectStore};
use pablo_protocol::{FileChange, FileState};
use pablo_workspace::{RelPath, Workspace};

/// Files changed within this long before a scan are hashed again at the next one: file times
/// have a coarse granularity, so a second write in the same tick would not change them.
const RACY: Duration = Duration::from_secs(2);

/// Size caps for what the scanner stores.
#[derive(Debug, Clone, Copy)]
pub struct ScanOptions {
    /// Larger files are hashed but not stored.
    pub max_file_bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StatKey {
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    ino: u64,
    mode: u32,
}

impl StatKey {
    fn of(st: &rustix::fs::Stat) -> Self {
        Self {
            size: st.st_size as u64,
            mtime: (st.st_mtime, st.st_mtime_nsec as i64),
            ctime: (st.st_ctime, st.st_ctime_nsec as i64),
            ino: st.st_ino,
            mode: st.st_mode,
        }
    }

    fn changed_recently(&self, since: (i64, i64)) -> bool {
        self.mtime >= since || self.ctime >= since
    }
}

#[derive(Debug, Clone)]
struct Entry {
    state: FileState,
    key: StatKey,
    /// Hash again at the next scan even if the stat data is the same.
    racy: bool,
}

/// The inotify side: the queue and which directory each watch is on.
struct Watch {
    fd: OwnedFd,
    dirs: HashMap<i32, String>,
    buf: Vec<MaybeUninit<u8>>,
}

/// What the event queue said since the last look.
#[derive(Default)]
struct Dirty {
    paths: BTreeSet<String>,
    /// Directories to walk again (created, moved in, or whose watch went away).
    trees: BTreeSet<String>,
    full: bool,
}

/// The index of the workspace's followed files, kept up to date from inotify or a walk.
pub struct Scanner {
    ws: Arc<Workspace>,
    objects: ObjectStore,
    options: ScanOptions,
    rules: IgnoreRules,
    files: BTreeMap<String, Entry>,
    dirs: BTreeSet<String>,
    watch: Option<Watch>,
    ready: bool,
    /// Why scans fell back to walking the workspace (said once).
    pub(crate) notes: Vec<String>,
}

fn now_pair() -> (i64, i64) {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .saturating_sub(RACY);
    (d.as_secs() as i64, d.subsec_nanos() as i64)
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

fn under(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path == dir
        || (path.len() > dir.len() && path.starts_with(dir) && path.as_bytes()[dir.len()] == b'/')
}

impl Scanner {
    /// A scanner of `ws` storing file content in `objects`; its first refresh builds the index.
    pub fn new(ws: Arc<Workspace>, objects: ObjectStore, options: ScanOptions) -> Self {
        let rules = IgnoreRules::new(&ws);
        Self {
            ws,
            objects,
            options,
            rules,
            files: BTreeMap::new(),
            dirs: BTreeSet::new(),
            watch: None,
            ready: false,
            notes: Vec::new(),
        }
    }

    /// Whether the first walk has been made.
    pub(crate) fn is_ready(&self) -> bool {
        self.ready
    }

    /// Whether the kernel reports changes (false: every refresh walks the workspace).
    pub fn is_watching(&self) -> bool {
        self.watch.is_some()
    }

    /// Stops listening to the kernel: every refresh walks the workspace, as when inotify is not
    /// available (the benchmark measures both ways).
    pub fn stop_watching(&mut self) {
        self.watch = None;
    }

    /// The followed files the index holds.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    #[cfg(test)]
    /// What the index says `path` is (`Absent` when it does not follow it).
    pub(crate) fn state_of(&self, path: &str) -> FileState {
        self.files
            .get(path)
            .map(|e| e.state.clone())
            .unwrap_or(FileState::Absent)
    }

    /// Brings the index up to date and returns what changed since the last refresh. The first
    /// refresh only builds the index (its "changes" would be every file) and returns nothing.
    pub fn refresh(&mut self, budget: &Budget) -> Vec<FileChange> {
        let mut changes = Vec::new();
        if !self.ready {
            self.start_watching();
            self.walk("", budget, &mut changes);
            self.ready = true;
            return Vec::new();
        }
        let dirty = match self.watch.as_mut() {
            Some(w) => drain(w),
            None => Dirty {
                full: true,
                ..Dirty::default()
            },
        };
        if dirty.full {
            if self.watch.is_some() && !self.notes.iter().any(|n| n.contains("queue")) {
                self.notes.push(
                    "the change queue overflowed or a .gitignore changed; the workspace was \
                     walked again"
                        .into(),
                );
            }
            self.walk("", budget, &mut changes);
            changes.sort_by(|a, b| a.path.cmp(&b.path));
            return changes;
        }
        for tree in &dirty.trees {
            if self.followed_dir(tree) {
                self.walk(tree, budget, &mut changes);
            } else {
                self.forget_tree(tree, &mut changes);
            }
        }
        for path in &dirty.paths {
            if dirty.trees.iter().any(|t| under(path, t)) {
                continue;
            }
            self.check_path(path, budget, &mut changes);
        }
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        changes
    }

    fn start_watching(&mut self) {
        match inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK) {
            Ok(fd) => {
                self.watch = Some(Watch {
                    fd,
                    dirs: HashMap::new(),
                    buf: vec![MaybeUninit::uninit(); 64 * 1024],
                })
            }
            Err(e) => self.notes.push(format!(
                "inotify is not available ({e}); every shell command walks the workspace"
            )),
        }
    }

    fn add_watch(&mut self, rel: &str, dir: &OwnedFd) {
        let Some(w) = self.watch.as_mut() else {
            return;
        };
        let mask = WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MODIFY
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::ATTRIB
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::ONLYDIR
            | WatchFlags::EXCL_UNLINK;
        // The opened directory itself, not a name that could be swapped for a link meanwhile.
        let path = format!("/proc/self/fd/{}", dir.as_raw_fd());
        match inotify::add_watch(&w.fd, path.as_str(), mask) {
            Ok(wd) => {
                w.dirs.insert(wd, rel.to_string());
            }
            Err(e) => {
                let why = if e == Errno::NOSPC {
                    "the inotify watch limit (fs.inotify.max_user_watches) was reached".to_string()
                } else {
                    format!("a directory could not be watched ({e})")
                };
                self.notes.push(format!(
                    "{why}; every shell command walks the workspace instead"
                ));
                self.watch = None;
            }
        }
    }

    fn followed_dir(&self, rel: &str) -> bool {
        if rel.is_empty() {
            return true;
        }
        // Every ancestor must be followed too (an ignored directory hides what is inside).
        let mut cur = rel;
        loop {
            if self.rules.is_ignored(&self.ws, cur, true) {
                return false;
            }
            let parent = parent_of(cur);
            if parent.is_empty() {
                return true;
            }
            cur = parent;
        }
    }

    /// Walks the directory `start` (`""`: the workspace) and everything followed below it,
    /// recording what differs from the index, and what the index has below `start` that is gone.
    fn walk(&mut self, start: &str, budget: &Budget, changes: &mut Vec<FileChange>) {
        let since = now_pair();
        let Ok(start_rel) = RelPath::parse(start) else {
            return;
        };
        let Ok(root) = self.ws.open_beneath(
            &start_rel,
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        ) else {
            self.forget_tree(start, changes);
            return;
        };
        let mut seen_files = BTreeSet::new();
        let mut seen_dirs = BTreeSet::new();
        let mut stack = vec![(start.to_string(), root)];
        // Whether a `.gitignore` read so far in this walk differs from its last reading. Until
        // one does, a file the index holds with the same stat data is followed as before and
        // unchanged, so it costs a stat and a lookup, as in git's index (each directory is read
        // before the files in it, so its rules and its parents' are already read).
        let mut rules_changed = false;
        while let Some((dir, fd)) = stack.pop() {
            if !dir.is_empty() {
                seen_dirs.insert(dir.clone());
            }
            self.add_watch(&dir, &fd);
            rules_changed |= self.rules.visit_dir(&self.ws, &dir);
            let Ok(reader) = rustix::fs::Dir::read_from(&fd) else {
                continue;
            };
            let mut names = Vec::new();
            for entry in reader.flatten() {
                let bytes = entry.file_name().to_bytes();
                if bytes == b"." || bytes == b".." {
                    continue;
                }
                // Names that are not UTF-8 cannot be named by a workspace path.
                if let Ok(name) = std::str::from_utf8(bytes) {
                    names.push(name.to_string());
                }
            }
            for name in names {
                if always_skipped(&name) {
                    continue;
                }
                let rel = join(&dir, &name);
                let Ok(st) = rustix::fs::statat(&fd, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
                else {
                    continue;
                };
                match FileType::from_raw_mode(st.st_mode) {
                    FileType::Directory => {
                        if self.rules.is_ignored(&self.ws, &rel, true) {
                            continue;
                        }
                        if let Ok(sub) = rustix::fs::openat(
                            &fd,
                            name.as_str(),
                            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                            Mode::empty(),
                        ) {
                            stack.push((rel, sub));
                        }
                    }
                    FileType::RegularFile | FileType::Symlink => {
                        if !rules_changed && self.unchanged(&rel, &st) {
                            seen_files.insert(rel);
                            continue;
                        }
                        if self.rules.is_ignored(&self.ws, &rel, false) {
                            continue;
                        }
                        seen_files.insert(rel.clone());
                        self.update_file(&fd, &name, rel, &st, since, budget, changes);
                    }
                    _ => {}
                }
            }
        }
        let gone: Vec<String> = self
            .files
            .keys()
            .filter(|p| under(p, start) && !seen_files.contains(*p))
            .cloned()
            .collect();
        for path in gone {
            if let Some(old) = self.files.remove(&path) {
                changes.push(FileChange {
                    path,
                    before: old.state,
                    after: FileState::Absent,
                });
            }
        }
        let gone_dirs: Vec<String> = self
            .dirs
            .iter()
            .filter(|d| under(d, start) && !seen_dirs.contains(*d))
            .cloned()
            .collect();
        for d in gone_dirs {
            self.dirs.remove(&d);
            changes.push(FileChange {
                path: d,
                before: FileState::Directory,
                after: FileState::Absent,
            });
        }
        for d in seen_dirs {
            if self.dirs.insert(d.clone()) && self.ready {
                changes.push(FileChange {
                    path: d,
                    before: FileState::Absent,
                    after: FileState::Directory,
                });
            }
        }
    }

    /// Whether the index holds `rel` with this stat data and no reason to hash it again.
    fn unchanged(&self, rel: &str, st: &rustix::fs::Stat) -> bool {
        self.files
            .get(rel)
            .is_some_and(|e| e.key == StatKey::of(st) && !e.racy)
    }

    /// Brings one file's entry up to date from its stat data (hashing when that changed).
    #[allow(clippy::too_many_arguments)]
    fn update_file(
        &mut self,
        dir: &OwnedFd,
        name: &str,
        rel: String,
        st: &rustix::fs::Stat,
        since: (i64, i64),
        budget: &Budget,
        changes: &mut Vec<FileChange>,
    ) {
        let key = StatKey::of(st);
        if self.unchanged(&rel, st) {
            return;
        }
        let Some(state) = self.read_state(dir, name, st, budget) else {
            return;
        };
        let racy = key.changed_recently(since);
        let before = self.files.get(&rel).map(|e| e.state.clone());
        self.files.insert(
            rel.clone(),
            Entry {
                state: state.clone(),
                key,
                racy,
            },
        );
        match before {
            Some(b) if b.same(&state) => {}
            before => {
                if self.ready {
                    changes.push(FileChange {
                        path: rel,
                        before: before.unwrap_or(FileState::Absent),
                        after: state,
                    });
                }
            }
        }
    }

    /// What a file or link is now; its bytes go to the store when they fit the caps.
    fn read_state(
        &self,
        dir: &OwnedFd,
        name: &str,
        st: &rustix::fs::Stat,
        budget: &Budget,
    ) -> Option<FileState> {
        if FileType::from_raw_mode(st.st_mode) == FileType::Symlink {
            let target = rustix::fs::readlinkat(dir, name, Vec::new()).ok()?;
            return Some(FileState::Symlink {
                target: target.to_string_lossy().into_owned(),
            });
        }
        let fd = rustix::fs::openat(
            dir,
            name,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        let opened = rustix::fs::fstat(&fd).ok()?;
        if FileType::from_raw_mode(opened.st_mode) != FileType::RegularFile {
            return None;
        }
        let mode = opened.st_mode & 0o7777;
        let mut file = std::fs::File::from(fd);
        if opened.st_size as u64 > self.options.max_file_bytes {
            let (hash, size) = pablo_workspace::node::hash_reader(&mut file).ok()?;
            return Some(FileState::File {
                hash,
                size,
                mode,
                stored: false,
            });
        }
        let mut bytes = Vec::with_capacity(opened.st_size as usize);
        file.read_to_end(&mut bytes).ok()?;
        let hash = hex::encode(Sha256::digest(&bytes));
        let stored = bytes.len() as u64 <= self.options.max_file_bytes
            && self.objects.keep(&hash, &bytes, budget, false);
        Some(FileState::File {
            hash,
            size: bytes.len() as u64,
            mode,
            stored,
        })
    }

    /// One name the event queue mentioned: a file, a directory, or nothing any more.
    fn check_path(&mut self, path: &str, budget: &Budget, changes: &mut Vec<FileChange>) {
        let parent = parent_of(path);
        let name = path.rsplit('/').next().unwrap_or(path);
        if always_skipped(name) || !self.followed_dir(parent) {
            return;
        }
        let Ok(parent_rel) = RelPath::parse(parent) else {
            return;
        };
        let dir = match self.ws.open_beneath(
            &parent_rel,
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        ) {
            Ok(d) => d,
            Err(_) => {
                self.forget_tree(parent, changes);
                return;
            }
        };
        match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Err(_) => self.forget_tree(path, changes),
            Ok(st) => match FileType::from_raw_mode(st.st_mode) {
                FileType::Directory => {
                    if let Some(old) = self.files.remove(path) {
                        changes.push(FileChange {
                            path: path.to_string(),
                            before: old.state,
                            after: FileState::Absent,
                        });
                    }
                    if !self.rules.is_ignored(&self.ws, path, true) {
                        self.walk(path, budget, changes);
                    }
                }
                FileType::RegularFile | FileType::Symlink => {
                    if self.dirs.contains(path) {
                        self.forget_tree(path, changes);
                    }
                    if self.rules.is_ignored(&self.ws, path, false) {
                        return;
                    }
                    // The queue named it: hash it whatever its stat says.
                    if let Some(e) = self.files.get_mut(path) {
                        e.racy = true;
                    }
                    self.update_file(
                        &dir,
                        name,
                        path.to_string(),
                        &st,
                        now_pair(),
                        budget,
                        changes,
                    );
                }
                _ => self.forget_tree(path, changes),
            },
        }
    }

    /// `path` (a file, or a directory and everything below it) is gone.
    fn forget_tree(&mut self, path: &str, changes: &mut Vec<FileChange>) {
        let files: Vec<String> = self
            .files
            .keys()
            .filter(|p| under(p, path))
            .cloned()
            .collect();
        for p in files {
            if let Some(old) = self.files.remove(&p) {
                changes.push(FileChange {
                    path: p,
                    before: old.state,
                    after: FileState::Absent,
                });
            }
        }
        let dirs: Vec<String> = self
            .dirs
            .iter()
            .filter(|d| under(d, path))
            .cloned()
            .collect();
        for d in dirs {
            self.dirs.remove(&d);
            changes.push(FileChange {
                path: d,
                before: FileState::Directory,
                after: FileState::Absent,
            });
        }
        if let Some(w) = self.watch.as_mut() {
            w.dirs.retain(|_, d| !under(d, path));
        }
    }
}

/// Reads every queued event; names become dirty paths, directories dirty trees.
fn drain(w: &mut Watch) -> Dirty {
    let mut dirty = Dirty::default();
    let mut reader = inotify::Reader::new(w.fd.as_fd(), &mut w.buf);
    loop {
        let event = match reader.next() {
            Ok(e) => e,
            Err(Errno::AGAIN) => break,
            Err(Errno::INTR) => continue,
            Err(_) => {
                dirty.full = true;
                break;
            }
        };
        let flags = event.events();
        if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
            dirty.full = true;
            continue;
        }
        let Some(dir) = w.dirs.get(&event.wd()).cloned() else {
            continue;
        };
        if flags.intersects(ReadFlags::IGNORED | ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF) {
            // The directory itself went away (or moved): its parent's event says where to.
            if flags.contains(ReadFlags::IGNORED) {
                w.dirs.remove(&event.wd());
            }
            if !dir.is_empty() {
                dirty.trees.insert(dir);
            } else {
                dirty.full = true;
            }
            continue;
        }
        let Some(name) = event.file_name().and_then(|n| n.to_str().ok()) else {
            continue;
        };
        if name == ".gitignore" {
            dirty.full = true;
        }
        let path = join(&dir, name);
        if flags.contains(ReadFlags::ISDIR) {
            dirty.trees.insert(path);
        } else {
            dirty.paths.insert(path);
        }
    }
    dirty
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scanner(dir: &std::path::Path, store: &std::path::Path) -> Scanner {
        let ws = Arc::new(Workspace::open(dir).unwrap());
        Scanner::new(
            ws,
            ObjectStore::at(store),
            ScanOptions {
                max_file_bytes: 1 << 20,
            },
        )
    }

    fn paths(changes: &[FileChange]) -> Vec<(&str, &'static str)> {
        changes
            .iter()
            .map(|c| {
                let what = match (&c.before, &c.after) {
                    (FileState::Absent, FileState::Directory) => "dir created",
                    (FileState::Directory, FileState::Absent) => "dir removed",
                    (FileState::Absent, _) => "created",
                    (_, FileState::Absent) => "deleted",
                    _ => "modified",
                };
                (c.path.as_str(), what)
            })
            .collect()
    }

    #[test]
    fn a_refresh_reports_exactly_what_changed_since_the_last_one() {
        let ws = tempfile::tempdir().unwrap();
        let store = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("a.txt"), "one\n").unwrap();
        std::fs::write(ws.path().join("b.txt"), "two\n").unwrap();
        std::fs::write(ws.path().join(".gitignore"), "out/\n").unwrap();
        let mut s = scanner(ws.path(), store.path());
        let budget = Budget::new(u64::MAX);
        assert!(s.refresh(&budget).is_empty());
        assert!(s.is_watching());
        assert!(s.refresh(&budget).is_empty());

        std::fs::write(ws.path().join("a.txt"), "ONE\n").unwrap();
        std::fs::remove_file(ws.path().join("b.txt")).unwrap();
        std::fs::create_dir_all(ws.path().join("new/deep")).unwrap();
        std::fs::write(ws.path().join("new/deep/c.txt"), "three\n").unwrap();
        std::fs::create_dir_all(ws.path().join("out")).unwrap();
        std::fs::write(ws.path().join("out/ignored.o"), "x").unwrap();
        let changes = s.refresh(&budget);
        assert_eq!(
            paths(&changes),
            vec![
                ("a.txt", "modified"),
                ("b.txt", "deleted"),
                ("new", "dir created"),
                ("new/deep", "dir created"),
                ("new/deep/c.txt", "created"),
            ]
        );
        // The bytes from before the change are in the store.
        let FileState::File { hash, stored, .. } = &changes[1].before else {
            panic!("{changes:?}")
        };
        assert!(stored);
        assert_eq!(ObjectStore::at(store.path()).get(hash).unwrap(), b"two\n");
        assert!(s.refresh(&budget).is_empty());
    }

    #[test]
    fn without_inotify_a_walk_finds_the_same_changes() {
        let ws = tempfile::tempdir().unwrap();
        let store = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("a.txt"), "one\n").unwrap();
        let mut s = scanner(ws.path(), store.path());
        let budget = Budget::new(u64::MAX);
        s.refresh(&budget);
        s.watch = None;
        std::fs::write(ws.path().join("a.txt"), "uno\n").unwrap();
        std::fs::rename(ws.path().join("a.txt"), ws.path().join("b.txt")).unwrap();
        let changes = s.refresh(&budget);
        assert_eq!(
            paths(&changes),
            vec![("a.txt", "deleted"), ("b.txt", "created")]
        );
    }

    #[test]
    fn without_inotify_a_changed_gitignore_applies_to_files_the_index_already_holds() {
        let ws = tempfile::tempdir().unwrap();
        let store = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join("sub")).unwrap();
        std::fs::write(ws.path().join("a.log"), "one\n").unwrap();
        std::fs::write(ws.path().join("sub/b.log"), "two\n").unwrap();
        std::fs::write(ws.path().join("sub/c.txt"), "three\n").unwrap();
        let mut s = scanner(ws.path(), store.path());
        let budget = Budget::new(u64::MAX);
        s.refresh(&budget);
        s.watch = None;
        assert!(s.refresh(&budget).is_empty());
        assert_eq!(s.file_count(), 3);

        // The stat data of the three files is unchanged; the rules are not.
        std::fs::write(ws.path().join("sub/.gitignore"), "*.log\n").unwrap();
        let changes = s.refresh(&budget);
        assert_eq!(
            paths(&changes),
            vec![("sub/.gitignore", "created"), ("sub/b.log", "deleted")]
        );
        assert!(s.refresh(&budget).is_empty());

        std::fs::remove_file(ws.path().join("sub/.gitignore")).unwrap();
        let changes = s.refresh(&budget);
        assert_eq!(
            paths(&changes),
            vec![("sub/.gitignore", "deleted"), ("sub/b.log", "created")]
        );
        assert_eq!(s.file_count(), 3);
    }

    #[test]
    fn files_over_the_caps_are_hashed_but_not_stored() {
        let ws = tempfile::tempdir().unwrap();
        let store = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("small.txt"), "s\n").unwrap();
        std::fs::write(ws.path().join("big.bin"), vec![7u8; 2 << 20]).unwrap();
        let mut s = scanner(ws.path(), store.path());
        let budget = Budget::new(u64::MAX);
        s.refresh(&budget);
        match s.state_of("big.bin") {
            FileState::File { stored, size, .. } => {
                assert!(!stored);
                assert_eq!(size, 2 << 20);
            }
            other => panic!("{other:?}"),
        }
        let tight = Budget::new(0);
        std::fs::write(ws.path().join("small.txt"), "changed\n").unwrap();
        let changes = s.refresh(&tight);
        assert!(matches!(
            changes[0].after,
            FileState::File { stored: false, .. }
        ));
    }
}
