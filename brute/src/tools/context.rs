//! What every tool shares while it runs: confinement, undo history, file locks, the
//! network policy, secrets and where long outputs are saved. Each concern lives in
//! its own module; a tool's own configuration (the question handler, the sub-agent
//! model, the todo list) lives on the tool.

use std::fmt;
use std::path::{Path, PathBuf};

use super::error::PathError;
use super::locks::PathLocks;
use super::network::NetworkPolicy;
use super::sandbox::Sandbox;
use super::secrets::Secrets;
use super::undo::SnapshotStore;

/// What tools see while they run. [`DefaultToolPipeline`](super::DefaultToolPipeline)
/// builds one from its options on its first call and shares it between calls and turns.
///
/// Nothing here reads the process environment or writes outside its folders: secrets
/// are the ones given with [`ToolContext::with_secrets`] (none by default), and
/// truncated outputs are saved only in the folder given with
/// [`ToolContext::with_output_dir`] (none by default).
pub struct ToolContext {
    sandbox: Sandbox,
    snapshots: SnapshotStore,
    locks: PathLocks,
    network: NetworkPolicy,
    secrets: Secrets,
    output_dir: Option<PathBuf>,
}

impl ToolContext {
    /// A context confining filesystem tools to `root`, with the default network policy,
    /// no secrets, and truncated outputs not saved.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let cx = brute::tools::ToolContext::new(dir.path())?;
    /// assert!(cx.resolve("a.txt").is_ok());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new(root: impl AsRef<Path>) -> std::io::Result<Self> {
        Ok(ToolContext {
            sandbox: Sandbox::new(root)?,
            snapshots: SnapshotStore::default(),
            locks: PathLocks::default(),
            network: NetworkPolicy::default(),
            secrets: Secrets::default(),
            output_dir: None,
        })
    }

    /// Sets the values hidden from tool results (see [`Secrets`]).
    pub fn with_secrets(mut self, secrets: Secrets) -> Self {
        self.secrets = secrets;
        self
    }

    /// Sets what `fetch` may reach.
    pub fn with_network(mut self, network: NetworkPolicy) -> Self {
        self.network = network;
        self
    }

    /// Sets where truncated outputs are saved in full.
    pub fn with_output_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.output_dir = Some(dir.into());
        self
    }

    /// The root filesystem tools are confined to.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// Resolves a path argument inside the root (see [`Sandbox::resolve`]).
    pub fn resolve(&self, path: &str) -> Result<PathBuf, PathError> {
        self.sandbox.resolve(path)
    }

    /// The undo history.
    pub fn snapshots(&self) -> &SnapshotStore {
        &self.snapshots
    }

    /// Per-file locks serialising calls that change the same file.
    pub(crate) fn locks(&self) -> &PathLocks {
        &self.locks
    }

    /// What `fetch` may reach.
    pub fn network(&self) -> &NetworkPolicy {
        &self.network
    }

    /// The values hidden from tool results.
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// `text` with every secret replaced by a placeholder (see [`Secrets::redact`]).
    pub fn redact(&self, text: &str) -> String {
        self.secrets.redact(text)
    }

    /// Where truncated outputs are saved in full; `None`: they are not saved.
    pub fn output_dir(&self) -> Option<&Path> {
        self.output_dir.as_deref()
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("root", &self.sandbox.root())
            .field("network", &self.network)
            .field("secrets", &self.secrets)
            .field("output_dir", &self.output_dir)
            .finish_non_exhaustive()
    }
}
