//! `ScriptedModel`: a model that replays assistant messages, for tests, documentation
//! and the offline quickstart.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::env::Env;
use crate::error::{Error, ModelError};
use crate::message::{Message, Role};
use crate::model::{Completion, Model};

/// A model that answers from a script instead of a network.
///
/// - [`ScriptedModel::new`] replays its replies in order across all calls, and fails
///   with [`ModelError::Rejected`] once they run out;
/// - [`ScriptedModel::per_turn`] picks the reply by how many times the model was called
///   since the last user message, so every turn (and every concurrent turn) replays
///   the script from the start;
/// - [`ScriptedModel::from_fn`] chooses each reply with a closure over the env.
///
/// ```
/// use brute::{Message, brute_agent, providers::ScriptedModel};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model = ScriptedModel::new([Message::assistant("one"), Message::assistant("two")]);
/// let agent = brute_agent! { run model; };
/// assert_eq!(agent.start("a").await?.text(), Some("one"));
/// assert_eq!(agent.start("b").await?.text(), Some("two"));
/// assert!(agent.start("c").await.is_err());
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
#[derive(Clone)]
pub struct ScriptedModel {
    script: Script,
    name: Arc<str>,
}

#[derive(Clone)]
enum Script {
    Sequence {
        replies: Arc<[Message]>,
        next: Arc<AtomicUsize>,
    },
    PerTurn(Arc<[Message]>),
    Function(Arc<dyn Fn(&Env) -> Message + Send + Sync>),
}

impl ScriptedModel {
    /// Replays `replies` in order, one per call, across all turns.
    pub fn new(replies: impl IntoIterator<Item = Message>) -> Self {
        Self::with(Script::Sequence {
            replies: replies.into_iter().collect(),
            next: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// Replays `replies` from the start in every turn: call `n` after the last user
    /// message gets reply `n`.
    pub fn per_turn(replies: impl IntoIterator<Item = Message>) -> Self {
        Self::with(Script::PerTurn(replies.into_iter().collect()))
    }

    /// Answers each call with `f(env)`.
    ///
    /// ```
    /// use brute::{Message, providers::ScriptedModel};
    /// let echo = ScriptedModel::from_fn(|env| {
    ///     Message::assistant(env.messages.last().map(|m| m.content.clone()).unwrap_or_default())
    /// });
    /// # let _ = echo;
    /// ```
    pub fn from_fn(f: impl Fn(&Env) -> Message + Send + Sync + 'static) -> Self {
        Self::with(Script::Function(Arc::new(f)))
    }

    fn with(script: Script) -> Self {
        ScriptedModel {
            script,
            name: Arc::from("scripted"),
        }
    }

    /// Sets the name reported in events and traces.
    pub fn named(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = name.into();
        self
    }

    fn reply(&self, env: &Env) -> Result<Message, ModelError> {
        match &self.script {
            Script::Sequence { replies, next } => {
                let index = next.fetch_add(1, Ordering::Relaxed);
                replies
                    .get(index)
                    .cloned()
                    .ok_or_else(|| exhausted(replies.len()))
            }
            Script::PerTurn(replies) => {
                let index = env
                    .messages
                    .iter()
                    .rev()
                    .take_while(|m| m.role != Role::User)
                    .filter(|m| m.role == Role::Assistant)
                    .count();
                replies
                    .get(index)
                    .cloned()
                    .ok_or_else(|| exhausted(replies.len()))
            }
            Script::Function(f) => Ok(f(env)),
        }
    }
}

fn exhausted(len: usize) -> ModelError {
    ModelError::Rejected(format!(
        "the scripted model has no reply left: its script has {len} replies"
    ))
}

#[diagnostic::do_not_recommend]
impl Model for ScriptedModel {
    async fn complete(&self, env: &Env) -> Result<Completion, Error> {
        Ok(self.reply(env)?.into())
    }

    fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.script {
            Script::Sequence { replies, .. } => format!("sequence of {}", replies.len()),
            Script::PerTurn(replies) => format!("per turn, {}", replies.len()),
            Script::Function(_) => "function".to_string(),
        };
        f.debug_struct("ScriptedModel")
            .field("name", &self.name)
            .field("script", &kind)
            .finish()
    }
}
