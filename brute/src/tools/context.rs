//! What tools share while they run: the root, undo history, file locks, the todo list,
//! and the application's hooks (questions, approval, the sub-agent model).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;

use super::builtin::{Questions, TodoItem};
use super::error::PathError;
use super::sandbox::Sandbox;
use super::set::BoxFuture;
use crate::env::Env;
use crate::error::Error;
use crate::message::ToolCall;
use crate::model::{Completion, Model};

/// What tools see while they run. [`DefaultToolPipeline`](super::DefaultToolPipeline)
/// builds one from its options on its first call and shares it between calls and turns.
pub struct ToolContext {
    sandbox: Sandbox,
    snapshots: SnapshotStore,
    locks: PathLocks,
    todos: Mutex<Vec<TodoItem>>,
    questions: QuestionHandler,
    asking: tokio::sync::Mutex<()>,
    delegate: DelegateModel,
    network: NetworkPolicy,
    output_dir: PathBuf,
    secrets: Vec<(String, String)>,
}

impl ToolContext {
    /// A context confining filesystem tools to `root`, with no question handler, no
    /// sub-agent model and the default network policy.
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
            todos: Mutex::new(Vec::new()),
            questions: QuestionHandler::default(),
            asking: tokio::sync::Mutex::new(()),
            delegate: DelegateModel::default(),
            network: NetworkPolicy::default(),
            output_dir: OutputDir::default().resolve(),
            secrets: secrets_from_env(),
        })
    }

    /// Adds values to hide from tool outputs, beside the secrets found in the
    /// environment (see [`ToolContext::redact`]).
    pub fn with_redactions(mut self, redactions: Redactions) -> Self {
        self.secrets.extend(
            redactions
                .0
                .into_iter()
                .map(|value| ("[redacted]".to_string(), value)),
        );
        self
    }

    /// `text` with every secret replaced by a placeholder naming it: the values of
    /// environment variables whose names say they hold a secret (`*KEY*`, `*TOKEN*`,
    /// `*SECRET*`, `*PASSWORD*`, `*CREDENTIAL*`, 8 characters or more) and the values
    /// given to [`ToolContext::with_redactions`]. Tool results pass through it, so a
    /// command that prints `$OPENAI_API_KEY` does not put the key into the
    /// conversation or the session log.
    pub fn redact(&self, text: &str) -> String {
        self.redact_owned(text.to_string())
    }

    /// [`ToolContext::redact`] without a copy when there is nothing to hide.
    pub(crate) fn redact_owned(&self, mut text: String) -> String {
        for (label, value) in &self.secrets {
            if text.contains(value.as_str()) {
                text = text.replace(value.as_str(), label);
            }
        }
        text
    }

    /// Sets the handler that answers `question`.
    pub fn with_questions(mut self, questions: QuestionHandler) -> Self {
        self.questions = questions;
        self
    }

    /// Sets the model `delegate` runs its sub-agent on.
    pub fn with_delegate(mut self, delegate: DelegateModel) -> Self {
        self.delegate = delegate;
        self
    }

    /// Sets what `fetch` may reach.
    pub fn with_network(mut self, network: NetworkPolicy) -> Self {
        self.network = network;
        self
    }

    /// Sets where truncated outputs are saved in full.
    pub fn with_output_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.output_dir = dir.into();
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

    /// The todo list of `todo_read` / `todo_write`.
    pub fn todos(&self) -> Vec<TodoItem> {
        self.todos
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn set_todos(&self, todos: Vec<TodoItem>) {
        *self.todos.lock().unwrap_or_else(PoisonError::into_inner) = todos;
    }

    /// The question handler.
    pub fn questions(&self) -> &QuestionHandler {
        &self.questions
    }

    /// Held while the user is asked, so that questions of concurrent calls are asked
    /// one after the other.
    pub(crate) async fn asking(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.asking.lock().await
    }

    /// The sub-agent model of `delegate`.
    pub fn delegate(&self) -> &DelegateModel {
        &self.delegate
    }

    /// What `fetch` may reach.
    pub fn network(&self) -> &NetworkPolicy {
        &self.network
    }

    /// Where truncated outputs are saved in full.
    pub fn output_dir(&self) -> &Path {
        &self.output_dir
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("root", &self.sandbox.root())
            .field("network", &self.network)
            .field("output_dir", &self.output_dir)
            .finish_non_exhaustive()
    }
}

/// Whether an environment variable named `name` holds a secret.
fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"]
        .iter()
        .any(|word| upper.contains(word))
}

fn secrets_from_env() -> Vec<(String, String)> {
    let mut secrets: Vec<(String, String)> = std::env::vars()
        .filter(|(name, value)| is_secret_name(name) && value.len() >= 8)
        .map(|(name, value)| (format!("[redacted ${name}]"), value))
        .collect();
    // Longer values first, so that a secret containing another is hidden whole.
    secrets.sort_by_key(|(_, value)| std::cmp::Reverse(value.len()));
    secrets
}

/// Extra values to hide from tool outputs (see [`ToolContext::redact`]).
///
/// ```
/// let redactions = brute::tools::Redactions::from(["db-password-123"]);
/// # let _ = redactions;
/// ```
#[derive(Clone, Debug, Default)]
pub struct Redactions(Vec<String>);

impl<const N: usize> From<[&str; N]> for Redactions {
    fn from(values: [&str; N]) -> Self {
        Redactions(
            values
                .iter()
                .filter(|v| !v.is_empty())
                .map(|v| v.to_string())
                .collect(),
        )
    }
}

impl From<Vec<String>> for Redactions {
    fn from(values: Vec<String>) -> Self {
        Redactions(values.into_iter().filter(|v| !v.is_empty()).collect())
    }
}

/// Snapshots kept per file; older ones are dropped.
const MAX_SNAPSHOTS: usize = 50;

/// The prior states of changed files, newest last per file, for `undo` (the last 50
/// per file).
#[derive(Default, Debug)]
pub struct SnapshotStore {
    stacks: Mutex<HashMap<PathBuf, Vec<Option<Vec<u8>>>>>,
}

impl SnapshotStore {
    /// Records the current state of the file at `path` (`None` if it does not exist).
    /// Directories are not recorded; returns whether a snapshot was taken.
    pub fn save(&self, path: &Path) -> bool {
        let state = match std::fs::metadata(path) {
            Ok(meta) if meta.is_file() => match std::fs::read(path) {
                Ok(bytes) => Some(bytes),
                Err(_) => return false,
            },
            Ok(_) => return false,
            Err(_) => None,
        };
        let mut stacks = self.lock();
        let stack = stacks.entry(path.to_path_buf()).or_default();
        if stack.len() == MAX_SNAPSHOTS {
            stack.remove(0);
        }
        stack.push(state);
        true
    }

    /// Takes the newest snapshot of `path`: `Some(None)` if the file did not exist.
    pub fn pop(&self, path: &Path) -> Option<Option<Vec<u8>>> {
        let mut stacks = self.lock();
        let stack = stacks.get_mut(path)?;
        let state = stack.pop();
        if stack.is_empty() {
            stacks.remove(path);
        }
        state
    }

    /// How many snapshots of `path` there are.
    pub fn depth(&self, path: &Path) -> usize {
        self.lock().get(path).map_or(0, Vec::len)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Vec<Option<Vec<u8>>>>> {
        self.stacks.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One async mutex per file path, removed when nobody holds or waits for it.
#[derive(Default, Debug)]
pub(crate) struct PathLocks {
    map: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
}

/// Holds the lock of one path.
pub(crate) struct PathGuard<'a> {
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
    locks: &'a PathLocks,
    path: PathBuf,
}

impl PathLocks {
    /// Waits for the lock of `path` (first come, first served).
    pub(crate) async fn lock(&self, path: &Path) -> PathGuard<'_> {
        let mutex = self
            .map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(path.to_path_buf())
            .or_default()
            .clone();
        PathGuard {
            guard: Some(mutex.lock_owned().await),
            locks: self,
            path: path.to_path_buf(),
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl Drop for PathGuard<'_> {
    fn drop(&mut self) {
        drop(self.guard.take());
        let mut map = self
            .locks
            .map
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if map
            .get(&self.path)
            .is_some_and(|m| Arc::strong_count(m) == 1)
        {
            map.remove(&self.path);
        }
    }
}

/// The root directory of filesystem tools: a path, or (the default) the working
/// directory when the pipeline first runs.
#[derive(Clone, Debug, Default)]
pub struct RootDir(pub Option<PathBuf>);

impl RootDir {
    pub(crate) fn resolve(&self) -> std::io::Result<PathBuf> {
        match &self.0 {
            Some(path) => Ok(path.clone()),
            None => std::env::current_dir(),
        }
    }
}

impl From<&str> for RootDir {
    fn from(path: &str) -> Self {
        RootDir(Some(path.into()))
    }
}

impl From<PathBuf> for RootDir {
    fn from(path: PathBuf) -> Self {
        RootDir(Some(path))
    }
}

impl From<&Path> for RootDir {
    fn from(path: &Path) -> Self {
        RootDir(Some(path.into()))
    }
}

/// Where truncated tool outputs are saved in full: a path, or (the default)
/// `$XDG_DATA_HOME/brute/tool-output` (`~/.local/share/brute/tool-output`), falling
/// back to the system's temporary directory.
#[derive(Clone, Debug, Default)]
pub struct OutputDir(pub Option<PathBuf>);

impl OutputDir {
    pub(crate) fn resolve(&self) -> PathBuf {
        if let Some(path) = &self.0 {
            return path.clone();
        }
        let data = std::env::var_os("XDG_DATA_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")));
        match data {
            Some(dir) => dir.join("brute/tool-output"),
            None => std::env::temp_dir().join("brute-tool-output"),
        }
    }
}

impl From<&str> for OutputDir {
    fn from(path: &str) -> Self {
        OutputDir(Some(path.into()))
    }
}

impl From<PathBuf> for OutputDir {
    fn from(path: PathBuf) -> Self {
        OutputDir(Some(path))
    }
}

impl From<&Path> for OutputDir {
    fn from(path: &Path) -> Self {
        OutputDir(Some(path.into()))
    }
}

/// Timeouts of single tools, overriding the pipeline's `timeout`.
///
/// ```
/// use std::time::Duration;
/// let timeouts = brute::tools::Timeouts::from([("shell", Duration::from_secs(600))]);
/// assert_eq!(timeouts.get("shell"), Some(Duration::from_secs(600)));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Timeouts(HashMap<String, Duration>);

impl Timeouts {
    /// The timeout of the tool `name`, if one is set.
    pub fn get(&self, name: &str) -> Option<Duration> {
        self.0.get(name).copied()
    }
}

impl<const N: usize> From<[(&str, Duration); N]> for Timeouts {
    fn from(pairs: [(&str, Duration); N]) -> Self {
        Timeouts(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }
}

impl From<HashMap<String, Duration>> for Timeouts {
    fn from(map: HashMap<String, Duration>) -> Self {
        Timeouts(map)
    }
}

/// What the approval policy decides about one call.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Run it as it is.
    Allow,
    /// Do not run it; the model gets an error result with this reason.
    Deny(String),
    /// Run it with these arguments instead.
    Rewrite(Value),
}

/// The approval policy: decides, before each call runs, to allow it, deny it with a
/// reason, or rewrite its arguments. The default allows everything.
///
/// ```
/// use brute::tools::{Approval, Decision};
///
/// let policy = Approval::new(|call| match call.name.as_str() {
///     "shell" => Decision::Deny("shell is disabled here".into()),
///     _ => Decision::Allow,
/// });
/// # let _ = policy;
/// ```
#[derive(Clone, Default)]
pub struct Approval(Option<Arc<PolicyFn>>);

type PolicyFn = dyn Fn(&ToolCall) -> Decision + Send + Sync;

impl Approval {
    /// A policy deciding with `f`.
    pub fn new(f: impl Fn(&ToolCall) -> Decision + Send + Sync + 'static) -> Self {
        Approval(Some(Arc::new(f)))
    }

    /// A policy denying the named tools and allowing the others.
    pub fn deny(tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let denied: Vec<String> = tools.into_iter().map(Into::into).collect();
        Approval::new(move |call| {
            if denied.contains(&call.name) {
                Decision::Deny(format!(
                    "the tool `{}` is not allowed by the approval policy",
                    call.name
                ))
            } else {
                Decision::Allow
            }
        })
    }

    /// The decision for `call`.
    pub fn decide(&self, call: &ToolCall) -> Decision {
        match &self.0 {
            Some(f) => f(call),
            None => Decision::Allow,
        }
    }
}

impl fmt::Debug for Approval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Approval(policy)"
        } else {
            "Approval(allow all)"
        })
    }
}

/// Answers to one `question` call: for each question, the labels the user chose.
pub type Answers = Vec<Vec<String>>;

/// The application's handler for the `question` tool: shows the questions to the user
/// and returns the chosen labels, or an error message. Without one, `question` returns
/// an error result saying that no one can be asked.
///
/// ```
/// use brute::tools::QuestionHandler;
///
/// let handler = QuestionHandler::new(|questions| async move {
///     Ok(questions.questions.iter().map(|q| vec![q.options[0].label.clone()]).collect())
/// });
/// # let _ = handler;
/// ```
#[derive(Clone, Default)]
pub struct QuestionHandler(Option<Arc<AskFn>>);

type AskFn = dyn Fn(Questions) -> BoxFuture<'static, Result<Answers, String>> + Send + Sync;

impl QuestionHandler {
    /// A handler answering with `f`.
    pub fn new<F, Fut>(f: F) -> Self
    where
        F: Fn(Questions) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Answers, String>> + Send + 'static,
    {
        QuestionHandler(Some(Arc::new(move |q| Box::pin(f(q)))))
    }

    /// Asks; `None` when there is no handler.
    pub(crate) fn ask(
        &self,
        questions: Questions,
    ) -> Option<BoxFuture<'static, Result<Answers, String>>> {
        self.0.as_ref().map(|f| f(questions))
    }
}

impl fmt::Debug for QuestionHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "QuestionHandler(set)"
        } else {
            "QuestionHandler(none)"
        })
    }
}

/// What `fetch` may reach and how much it reads.
#[derive(Clone, Debug)]
pub struct NetworkPolicy {
    /// Whether private, loopback, link-local and other non-public addresses may be
    /// fetched. Off by default.
    pub allow_private: bool,
    /// Response bodies are cut at this many bytes (default 1 MiB).
    pub max_bytes: usize,
    /// Redirects followed at most (default 5).
    pub max_redirects: usize,
    /// Timeout of the whole request (default 30 s).
    pub timeout: Duration,
    /// Timeout of connecting (default 10 s).
    pub connect_timeout: Duration,
}

impl Default for NetworkPolicy {
    fn default() -> Self {
        NetworkPolicy {
            allow_private: false,
            max_bytes: 1024 * 1024,
            max_redirects: 5,
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

impl NetworkPolicy {
    /// The default policy, allowing private and loopback addresses (for tests and
    /// local services).
    pub fn allow_private() -> Self {
        NetworkPolicy {
            allow_private: true,
            ..Self::default()
        }
    }

    /// Sets the body size cap.
    pub fn max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }
}

/// A model behind a pointer, for the sub-agents of `delegate`.
trait DynModel: Send + Sync {
    fn complete_boxed<'a>(&'a self, env: &'a Env) -> BoxFuture<'a, Result<Completion, Error>>;
    fn model_name(&self) -> &str;
}

impl<M: Model + 'static> DynModel for M {
    fn complete_boxed<'a>(&'a self, env: &'a Env) -> BoxFuture<'a, Result<Completion, Error>> {
        Box::pin(self.complete(env))
    }

    fn model_name(&self) -> &str {
        self.name()
    }
}

/// A shared, type-erased model: what `delegate` runs its sub-agent on.
#[derive(Clone)]
pub struct SharedModel(Arc<dyn DynModel>);

#[diagnostic::do_not_recommend]
impl Model for SharedModel {
    async fn complete(&self, env: &Env) -> Result<Completion, Error> {
        self.0.complete_boxed(env).await
    }

    fn name(&self) -> &str {
        self.0.model_name()
    }
}

impl fmt::Debug for SharedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SharedModel")
            .field(&self.0.model_name())
            .finish()
    }
}

/// The model and iteration limit of `delegate`'s sub-agents. The default has no
/// model, and `delegate` then returns an error result saying so.
///
/// ```
/// use brute::{Message, ScriptedModel};
/// use brute::tools::DelegateModel;
///
/// let sub = DelegateModel::new(ScriptedModel::new([Message::assistant("found it")]))
///     .max_iterations(5);
/// # let _ = sub;
/// ```
#[derive(Clone, Debug)]
pub struct DelegateModel {
    pub(crate) model: Option<SharedModel>,
    pub(crate) max_iterations: u32,
}

impl Default for DelegateModel {
    fn default() -> Self {
        DelegateModel {
            model: None,
            max_iterations: 10,
        }
    }
}

impl DelegateModel {
    /// Sub-agents run on `model` (at most 10 passes unless changed).
    pub fn new(model: impl Model + 'static) -> Self {
        DelegateModel {
            model: Some(SharedModel(Arc::new(model))),
            max_iterations: 10,
        }
    }

    /// Sets the sub-agent's limit of passes.
    pub fn max_iterations(mut self, max: u32) -> Self {
        self.max_iterations = max;
        self
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn secret_names_and_redaction() {
        assert!(is_secret_name("OPENAI_API_KEY") && is_secret_name("github_token"));
        assert!(
            is_secret_name("DB_PASSWORD") && !is_secret_name("HOME") && !is_secret_name("PATH")
        );
        let dir = tempfile::tempdir().unwrap();
        let cx = ToolContext::new(dir.path())
            .unwrap()
            .with_redactions(Redactions::from(["s3cr3t-value"]));
        assert_eq!(cx.redact("key=s3cr3t-value;"), "key=[redacted];");
        assert_eq!(cx.redact("nothing here"), "nothing here");
    }

    #[tokio::test]
    async fn locks_serialise_and_clean_up() {
        let locks = PathLocks::default();
        let a = Path::new("/x/a");
        {
            let _g = locks.lock(a).await;
            assert_eq!(locks.len(), 1);
            let _b = locks.lock(Path::new("/x/b")).await;
            assert_eq!(locks.len(), 2);
        }
        assert_eq!(locks.len(), 0);
    }

    #[test]
    fn snapshots_stack_per_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.txt");
        let store = SnapshotStore::default();
        assert!(store.save(&file));
        std::fs::write(&file, "one").unwrap();
        assert!(store.save(&file));
        assert!(!store.save(dir.path()));
        assert_eq!(store.depth(&file), 2);
        assert_eq!(store.pop(&file), Some(Some(b"one".to_vec())));
        assert_eq!(store.pop(&file), Some(None));
        assert_eq!(store.pop(&file), None);
        for _ in 0..MAX_SNAPSHOTS + 5 {
            store.save(&file);
        }
        assert_eq!(store.depth(&file), MAX_SNAPSHOTS);
    }
}
