//! Confinement: filesystem tools cannot leave a root directory.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};

use super::error::{PathError, quoted};

/// Paths longer than this are refused before any file system call (Linux's
/// `PATH_MAX`).
const MAX_PATH: usize = 4096;

/// A root directory that filesystem tools cannot leave.
///
/// [`Sandbox::resolve`] accepts a path relative to the root, or an absolute path inside
/// it, and refuses paths that leave it lexically (`..`, absolute paths elsewhere) or
/// through a symbolic link that points outside. File operations go through a handle
/// of the root and resolve beneath it.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use brute::tools::Sandbox;
///
/// let sandbox = Sandbox::new(dir.path())?;
/// assert!(sandbox.resolve("src/main.rs").is_ok());
/// assert!(sandbox.resolve("../etc/passwd").is_err());
/// assert!(sandbox.resolve("/etc/passwd").is_err());
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// Two layers keep a path inside the root:
///
/// 1. [`Sandbox::resolve`] checks the path the model wrote: lexically (`..`, absolute
///    paths elsewhere) and through the symbolic links that exist when it is called. It
///    gives the error messages the model sees and the absolute path shown in results.
/// 2. Every file operation then goes through a directory handle of the root opened
///    once ([`cap_std::fs::Dir`]), and resolves the path *beneath* that handle in the
///    kernel: `openat2` with `RESOLVE_BENEATH` on Linux 5.6 and later, otherwise a
///    component-by-component walk with `O_NOFOLLOW`. So a directory or file that is
///    swapped for a symbolic link to outside the root between the check and the
///    operation makes the operation fail; it never reaches outside.
///
/// What confinement cannot see:
///
/// - **Hard links that already exist.** A hard link inside the root to a file outside
///   is the same file; reading or writing it changes the outside file. (New hard links
///   cannot be made by these tools.)
/// - **The `shell` tool.** Its working directory is opened beneath the root, but the
///   command itself runs with the process's rights and can reach anything they allow.
///   Confine it with the operating system (a container, a user without rights, a
///   seccomp or Landlock policy) if the model is not trusted.
/// - **File names in `fs_search`'s walk.** The walk lists directories by path, so a
///   swap during the walk can make it list names from outside; their contents are
///   opened beneath the root and so are never read.
#[derive(Clone, Debug)]
pub struct Sandbox {
    root: PathBuf,
    dir: Arc<Dir>,
}

impl Sandbox {
    /// A sandbox rooted at `root`, which must exist (it is canonicalised and opened).
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = std::fs::canonicalize(root)?;
        let dir = Dir::open_ambient_dir(&root, ambient_authority())?;
        Ok(Sandbox {
            root,
            dir: Arc::new(dir),
        })
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The absolute path of `raw` inside the root, with symbolic links of its existing
    /// part resolved; an error if it leaves the root.
    pub fn resolve(&self, raw: &str) -> Result<PathBuf, PathError> {
        if raw.trim().is_empty() {
            return Err(PathError::Empty);
        }
        if raw.len() > MAX_PATH {
            return Err(PathError::Unresolvable {
                path: quoted(raw),
                source: io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("the path is longer than {MAX_PATH} bytes"),
                ),
            });
        }
        if raw.contains('\0') {
            return Err(PathError::Unresolvable {
                path: quoted(raw),
                source: io::Error::new(io::ErrorKind::InvalidInput, "the path contains NUL"),
            });
        }
        let given = Path::new(raw);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.root.join(given)
        };
        let mut normal = PathBuf::new();
        for component in joined.components() {
            match component {
                Component::Prefix(_) | Component::RootDir | Component::Normal(_) => {
                    normal.push(component)
                }
                Component::CurDir => {}
                Component::ParentDir => {
                    if !normal.pop() {
                        return Err(self.escapes(raw));
                    }
                }
            }
        }
        if !normal.starts_with(&self.root) {
            return Err(self.escapes(raw));
        }
        // Resolve symbolic links in the part of the path that exists.
        let mut existing = normal.as_path();
        let mut missing = Vec::new();
        while std::fs::symlink_metadata(existing).is_err() {
            match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) => {
                    missing.push(name.to_os_string());
                    existing = parent;
                }
                _ => break,
            }
        }
        let canonical = match std::fs::canonicalize(existing) {
            Ok(path) => path,
            Err(source) => {
                // A dangling symbolic link: say where it points.
                if let Ok(target) = std::fs::read_link(existing) {
                    let target = existing
                        .parent()
                        .map_or(target.clone(), |p| p.join(&target));
                    if !target.starts_with(&self.root) {
                        return Err(PathError::SymlinkEscape {
                            path: quoted(raw),
                            target,
                            root: self.root.clone(),
                        });
                    }
                }
                return Err(PathError::Unresolvable {
                    path: quoted(raw),
                    source,
                });
            }
        };
        if !canonical.starts_with(&self.root) {
            return Err(PathError::SymlinkEscape {
                path: quoted(raw),
                target: canonical,
                root: self.root.clone(),
            });
        }
        let mut resolved = canonical;
        for name in missing.iter().rev() {
            resolved.push(name);
        }
        Ok(resolved)
    }

    /// `path` relative to the root, for messages (the path itself if it is outside).
    pub fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }

    /// `path` (absolute inside the root, or relative to it) as a path relative to the
    /// root handle; `.` for the root itself. An absolute path outside the root is an
    /// error (it cannot come from [`Sandbox::resolve`]).
    fn relative<'p>(&self, path: &'p Path) -> io::Result<&'p Path> {
        let rel = if path.is_absolute() {
            path.strip_prefix(&self.root).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    "the path is outside the root directory",
                )
            })?
        } else {
            path
        };
        Ok(if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        })
    }

    /// Opens a file for reading, beneath the root.
    pub(crate) fn open(&self, path: &Path) -> io::Result<std::fs::File> {
        Ok(self.dir.open(self.relative(path)?)?.into_std())
    }

    /// Reads a whole file, beneath the root.
    pub(crate) fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.dir.read(self.relative(path)?)
    }

    /// Writes a whole file (creating it and its parent directories), beneath the root.
    pub(crate) fn write(&self, path: &Path, contents: &[u8]) -> io::Result<()> {
        let rel = self.relative(path)?;
        if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
            self.dir.create_dir_all(parent)?;
        }
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(true);
        let mut file = self.dir.open_with(rel, &options)?;
        io::Write::write_all(&mut file, contents)
    }

    /// Whether `path` is a directory (following links beneath the root); `None` when it
    /// does not exist.
    pub(crate) fn is_dir(&self, path: &Path) -> io::Result<Option<bool>> {
        match self.dir.metadata(self.relative(path)?) {
            Ok(meta) => Ok(Some(meta.is_dir())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether `path` itself (not following a final link) is a directory, a file (or
    /// link), or missing (`None`).
    pub(crate) fn kind_of(&self, path: &Path) -> io::Result<Option<bool>> {
        match self.dir.symlink_metadata(self.relative(path)?) {
            Ok(meta) => Ok(Some(meta.is_dir())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Removes a file (or link), beneath the root.
    pub(crate) fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.dir.remove_file(self.relative(path)?)
    }

    /// Removes an empty directory, beneath the root.
    pub(crate) fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.dir.remove_dir(self.relative(path)?)
    }

    /// The entries of a directory: name and whether it is a directory.
    pub(crate) fn list(&self, path: &Path) -> io::Result<Vec<(String, bool)>> {
        let mut out = Vec::new();
        for entry in self.dir.read_dir(self.relative(path)?)? {
            let entry = entry?;
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            out.push((entry.file_name().to_string_lossy().into_owned(), is_dir));
        }
        Ok(out)
    }

    /// Opens a directory beneath the root, as a handle (for a working directory).
    pub(crate) fn open_dir(&self, path: &Path) -> io::Result<Dir> {
        self.dir.open_dir(self.relative(path)?)
    }

    fn escapes(&self, raw: &str) -> PathError {
        PathError::Escapes {
            path: quoted(raw),
            root: self.root.clone(),
        }
    }
}

/// The root directory of filesystem tools: a path, or (the default) the process's
/// working directory, read when a pipeline first runs.
#[derive(Clone, Debug, Default)]
pub enum RootDir {
    /// The process's working directory (`std::env::current_dir()`) when the pipeline
    /// first runs.
    #[default]
    WorkingDir,
    /// This directory.
    Path(PathBuf),
}

impl RootDir {
    pub(crate) fn resolve(&self) -> io::Result<PathBuf> {
        match self {
            RootDir::Path(path) => Ok(path.clone()),
            RootDir::WorkingDir => std::env::current_dir(),
        }
    }
}

impl From<&str> for RootDir {
    fn from(path: &str) -> Self {
        RootDir::Path(path.into())
    }
}

impl From<PathBuf> for RootDir {
    fn from(path: PathBuf) -> Self {
        RootDir::Path(path)
    }
}

impl From<&Path> for RootDir {
    fn from(path: &Path) -> Self {
        RootDir::Path(path.into())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn confines_paths() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        let sandbox = Sandbox::new(&root).unwrap();
        let root = sandbox.root().to_path_buf();
        assert_eq!(sandbox.resolve("sub/../a.txt").unwrap(), root.join("a.txt"));
        assert_eq!(
            sandbox.resolve("./new/deep.txt").unwrap(),
            root.join("new/deep.txt")
        );
        assert!(matches!(
            sandbox.resolve("../secret"),
            Err(PathError::Escapes { .. })
        ));
        assert!(matches!(
            sandbox.resolve("sub/../../secret"),
            Err(PathError::Escapes { .. })
        ));
        let abs = root.join("sub/x").display().to_string();
        assert!(sandbox.resolve(&abs).is_ok());
        assert!(matches!(
            sandbox.resolve("/etc/passwd"),
            Err(PathError::Escapes { .. })
        ));
        assert!(matches!(sandbox.resolve(""), Err(PathError::Empty)));
        assert!(matches!(
            sandbox.resolve("a\0b"),
            Err(PathError::Unresolvable { .. })
        ));
        let long = "a/".repeat(5_000);
        let err = sandbox.resolve(&long).unwrap_err().to_string();
        assert!(
            err.len() < 400 && err.contains("longer than 4096 bytes"),
            "{err}"
        );
        std::os::unix::fs::symlink(dir.path(), root.join("out")).unwrap();
        let err = sandbox.resolve("out/secret").unwrap_err();
        assert!(matches!(err, PathError::SymlinkEscape { .. }), "{err}");
        assert!(matches!(
            sandbox.resolve("out/new.txt"),
            Err(PathError::SymlinkEscape { .. })
        ));
        std::os::unix::fs::symlink("/nonexistent/zzz", root.join("dangling")).unwrap();
        assert!(matches!(
            sandbox.resolve("dangling"),
            Err(PathError::SymlinkEscape { .. })
        ));
        std::os::unix::fs::symlink(root.join("sub"), root.join("inside")).unwrap();
        assert_eq!(sandbox.resolve("inside/f").unwrap(), root.join("sub/f"));
    }

    #[test]
    fn operations_refuse_links_out_of_the_root_that_the_check_did_not_see() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        let sandbox = Sandbox::new(&root).unwrap();
        // As if swapped in after `resolve`: the operations go beneath the handle.
        std::os::unix::fs::symlink(dir.path(), root.join("out")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("s")).unwrap();
        let out = Path::new("out/secret");
        assert!(sandbox.read(out).is_err());
        assert!(sandbox.read(Path::new("s")).is_err());
        assert!(sandbox.write(Path::new("out/new"), b"x").is_err());
        assert!(sandbox.write(Path::new("s"), b"x").is_err());
        assert!(sandbox.remove_file(out).is_err());
        assert!(sandbox.open_dir(Path::new("out")).is_err());
        assert!(sandbox.read(&dir.path().join("secret")).is_err());
        assert!(!dir.path().join("new").exists());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("secret")).unwrap(),
            "s"
        );
        // Inside the root everything works, through the absolute path too.
        sandbox.write(&root.join("d/f.txt"), b"hi").unwrap();
        assert_eq!(sandbox.read(Path::new("d/f.txt")).unwrap(), b"hi");
        assert_eq!(sandbox.is_dir(Path::new("d")).unwrap(), Some(true));
        assert_eq!(
            sandbox.list(&root.join("d")).unwrap(),
            [("f.txt".to_string(), false)]
        );
    }

    // The tests below pin what each operation returns, so that a changed comparison or
    // result in one of them fails here (the mutation check, tests/mutants/).

    #[test]
    fn a_path_of_exactly_the_limit_is_resolved_and_one_byte_more_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::new(dir.path()).unwrap();
        let at_limit = "a/".repeat(MAX_PATH / 2 - 1) + "bb";
        assert_eq!(at_limit.len(), MAX_PATH);
        let resolved = sandbox.resolve(&at_limit).unwrap();
        assert_eq!(resolved, sandbox.root().join(&at_limit));
        let over = at_limit + "c";
        let err = sandbox.resolve(&over).unwrap_err().to_string();
        assert!(err.contains("longer than 4096 bytes"), "{err}");
    }

    #[test]
    fn a_dangling_link_inside_the_root_is_unresolvable_not_an_escape() {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::new(dir.path()).unwrap();
        let root = sandbox.root().to_path_buf();
        std::os::unix::fs::symlink(root.join("nothing"), root.join("dangling")).unwrap();
        let err = sandbox.resolve("dangling").unwrap_err();
        assert!(matches!(err, PathError::Unresolvable { .. }), "{err}");
    }

    #[test]
    fn display_shows_paths_relative_to_the_root_and_the_root_as_a_dot() {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::new(dir.path()).unwrap();
        let root = sandbox.root().to_path_buf();
        assert_eq!(sandbox.display(&root), ".");
        assert_eq!(sandbox.display(&root.join("d/f.txt")), "d/f.txt");
        assert_eq!(sandbox.display(Path::new("/elsewhere/x")), "/elsewhere/x");
    }

    #[test]
    fn is_dir_and_kind_of_tell_directories_files_missing_paths_and_errors_apart() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("d")).unwrap();
        std::fs::write(root.join("f"), "x").unwrap();
        let sandbox = Sandbox::new(&root).unwrap();
        // A (relative) link to a directory inside the root: `is_dir` follows it,
        // `kind_of` does not.
        std::os::unix::fs::symlink("d", root.join("link")).unwrap();
        // A link out of the root: resolving it beneath the handle is an error, not
        // "missing".
        std::os::unix::fs::symlink(dir.path(), root.join("out")).unwrap();
        let at = Path::new;
        assert_eq!(sandbox.is_dir(at("d")).unwrap(), Some(true));
        assert_eq!(sandbox.is_dir(at("f")).unwrap(), Some(false));
        assert_eq!(sandbox.is_dir(at("missing")).unwrap(), None);
        assert_eq!(sandbox.is_dir(at("link")).unwrap(), Some(true));
        assert!(sandbox.is_dir(at("out/root")).is_err());
        assert_eq!(sandbox.kind_of(at("d")).unwrap(), Some(true));
        assert_eq!(sandbox.kind_of(at("f")).unwrap(), Some(false));
        assert_eq!(sandbox.kind_of(at("missing")).unwrap(), None);
        assert_eq!(sandbox.kind_of(at("link")).unwrap(), Some(false));
        assert!(sandbox.kind_of(at("out/root")).is_err());
    }

    #[test]
    fn remove_file_and_remove_dir_remove_what_they_are_given() {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::new(dir.path()).unwrap();
        sandbox.write(Path::new("d/f"), b"x").unwrap();
        assert!(sandbox.remove_dir(Path::new("d")).is_err(), "not empty");
        sandbox.remove_file(Path::new("d/f")).unwrap();
        assert!(!dir.path().join("d/f").exists());
        sandbox.remove_dir(Path::new("d")).unwrap();
        assert!(!dir.path().join("d").exists());
    }

    #[test]
    fn a_root_dir_made_from_a_path_is_that_path() {
        let path = |root: RootDir| root.resolve().unwrap();
        assert_eq!(path(RootDir::from("/a/b")), PathBuf::from("/a/b"));
        assert_eq!(
            path(RootDir::from(PathBuf::from("/a/c"))),
            PathBuf::from("/a/c")
        );
        assert_eq!(
            path(RootDir::from(Path::new("/a/d"))),
            PathBuf::from("/a/d")
        );
        assert_eq!(path(RootDir::default()), std::env::current_dir().unwrap());
    }
}
