//! Confining filesystem tools to a root directory.

use std::io;
use std::path::{Component, Path, PathBuf};

use super::error::PathError;

/// A root directory that filesystem tools cannot leave.
///
/// [`Sandbox::resolve`] accepts a path relative to the root, or an absolute path inside
/// it, and refuses paths that leave it lexically (`..`, absolute paths elsewhere) or
/// through a symbolic link that points outside.
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
#[derive(Clone, Debug)]
pub struct Sandbox {
    root: PathBuf,
}

impl Sandbox {
    /// A sandbox rooted at `root`, which must exist (it is canonicalised).
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        Ok(Sandbox {
            root: std::fs::canonicalize(root)?,
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
                            path: raw.to_string(),
                            target,
                            root: self.root.clone(),
                        });
                    }
                }
                return Err(PathError::Unresolvable {
                    path: raw.to_string(),
                    source,
                });
            }
        };
        if !canonical.starts_with(&self.root) {
            return Err(PathError::SymlinkEscape {
                path: raw.to_string(),
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

    fn escapes(&self, raw: &str) -> PathError {
        PathError::Escapes {
            path: raw.to_string(),
            root: self.root.clone(),
        }
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
}
