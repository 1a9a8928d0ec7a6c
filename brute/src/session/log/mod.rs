//! `SessionLog`: the middleware that loads a session on the way in and makes every
//! message of the turn durable, through a [`Store`].

pub(in crate::session) mod keyed;
pub(in crate::session) mod pending;
pub(in crate::session) mod turn_lease;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use crate::cost::{SessionSpend, Spend};
use crate::env::Env;
use crate::error::Error;
use crate::event::Event;
use crate::handler::Handler;
use crate::message::{Message, Role};
use crate::session::boxed::{DynLease, Leased, Store};
use crate::session::error::SessionError;
use crate::session::jsonl::JsonlStore;
use crate::session::validate::{self, Validation};
#[cfg(feature = "tools")]
use crate::tools::resume::{Settled, settle as settle_approvals};
use crate::trace::traced;
use pending::Unanswered;
use turn_lease::TurnLease;

/// Keeps the conversation in a session: loads it on the way in, and makes every
/// message of the turn durable as the turn runs.
///
/// Where the session lives is the `store` option: by default a JSONL file at `path`
/// (one message per line, [`Message`]'s serde form); any [`SessionStore`](crate::session::SessionStore) otherwise (`JsonlStore` for a
/// directory of files, `SqliteStore`, `PostgresStore`). Which session a turn uses:
/// a [`SessionPath`] in the env's extensions (a JSONL file), else a [`SessionId`] (a
/// session of the store; with the default file store, `<id>.jsonl` beside `path`),
/// else the `path` option (default store) or the `session` option.
///
/// What the middleware guarantees:
///
/// - **One turn at a time**: the session's lease is taken for the whole turn (an OS
///   lock for files, a lease row in the databases); a second turn of the session gets
///   [`SessionError::Locked`] or [`SessionError::Leased`].
/// - **Way in**: the stored messages are put before the turn's (after any leading
///   system message the caller prepared), so the turn continues the conversation.
/// - **Valid histories only**: a history that breaks the tool-call rules (a result
///   without its call, a call id used twice, two results for one call, a call without a
///   result) is repaired with a warning naming each repair, and the repair is written
///   back; with `validation: Validation::Refuse` it is refused instead with
///   [`SessionError::Invalid`] naming the session and the message (a call left
///   without its result by a crash is always repaired).
/// - **Durable as the turn runs, whatever the layers**: `SessionLog` installs the
///   store as the env's persistence (no layer can remove it), and the framework takes the
///   durability step ([`Env::persist`]) itself: the terminal of every `run` line before
///   and after the model call, every loop layer before its first pass and after each
///   pass, and this layer on the way in and out. So every message is stored before the
///   next model call, and a middleware, tool layer or terminal of your own never has
///   to call anything (ARCHITECTURE.md draws the route). New
///   messages are appended; a rewrite (an edit of a stored message, compaction)
///   rewrites the history from the first position that changed, atomically: an edit
///   of the last message on the way up costs one message, not the session.
/// - **A failed turn** (the turn returned an error): if nothing answered its prompt yet
///   (no reply of the model, no tool result), the messages it added are removed from
///   the session again, so the next turn never starts with two user messages in a row;
///   the caller still has the prompt and may send it again. A turn that got further
///   keeps what it stored (the replies and the tool results, whose effects happened),
///   which never ends in a user message. Whenever some of a failed turn stays stored,
///   its error is [`Error::Stored`](crate::Error::Stored) around the failure: how many
///   of its messages are stored, the last one's role, and whether the prompt may be
///   sent again. When the store failed, the removal of an unanswered prompt may not be
///   written: the error says so (a resend is safe), and the next turn of the session
///   through this layer (or a clone) takes the prompt back first, under the lease,
///   if the session still ends with it. [`Event::TurnEnd`](crate::Event::TurnEnd)
///   fires with the error either way. A turn whose lease was lost mid-way
///   ([`SessionError::LeaseLost`]) cannot take anything back: the error says how many
///   of its messages are stored, and what a client should do.
/// - **Idempotency keys** ([`Message::idempotency_keys`]): a turn whose new message
///   carries a key a stored message carries is refused with
///   [`SessionError::KeyStored`] before anything runs (a retry never stores its
///   prompt twice); a [`ResumeKeyed`](crate::session::ResumeKeyed) turn runs only while the
///   key's turn is unfinished ([`SessionError::NotResumable`]); a
///   [`DecisionKey`](crate::session::DecisionKey) is stored on the decided reply first.
/// - **What was stored**: a turn that succeeded leaves a [`TurnSaved`] in the env's
///   extensions. A lease that could not be given back at the end (the database went
///   away after the last write) does not fail the turn: everything is stored, the
///   lease expires, and the failure is an [`Event::Error`](crate::Event::Error).
/// - **A dropped turn** (its future dropped half-way: a streamed turn whose stream was
///   dropped, a cancelled task): the session is left whole and free at once. The calls
///   it left without a result get [`CANCELLED_TOOL_CALL`](crate::session::CANCELLED_TOOL_CALL),
///   a prompt nothing answered is removed, and the lease is given back
///   ([`SessionStore::abandon`](crate::session::SessionStore::abandon): JSONL writes before the
///   drop returns, SQLite queues it ahead of any later request, PostgreSQL spawns it on
///   the runtime). A reply being streamed is not stored: only complete messages are.
/// - **Calls paused for approval** (see [`brute::stream`](crate::stream)) are stored
///   as results marked `awaiting_approval`, so the session is a valid history at every
///   moment. What a loaded history means for them is the tool pipeline's to say
///   (a turn that decides on one of them, [`Agent::decide`](crate::Agent::decide),
///   finds them pending; any other turn answers them with
///   [`ABANDONED_APPROVAL`](crate::session::ABANDONED_APPROVAL), the conversation having gone
///   on without a decision); this layer writes back what that changed.
/// - **Off the runtime**: no store blocks a runtime thread (files are written on
///   writer threads that share fsyncs between concurrent turns). The default file
///   store is built once, by the first turn, and shared by every later turn and every
///   clone of the layer: one writer pool, whatever the number of turns or sessions.
/// - **Bad input**: a corrupt or non-UTF-8 line is a [`SessionError`] naming the file
///   and the line, a path that is not a regular file (a FIFO) is refused; the session
///   is left untouched.
///
/// `system` messages are never stored: `SystemPrompt` adds them each turn. Sits
/// outside every loop and every compaction layer, at most once per stack (checked at
/// compile time: it provides [`kind::SessionLog`](crate::kind::SessionLog)).
///
/// ```
/// use brute::{Message, brute_agent, middleware::{SessionLog, SystemPrompt}, providers::ScriptedModel};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let dir = tempfile_dir();
/// let path = dir.join("chats/nathan.jsonl");
/// let model = ScriptedModel::from_fn(|env| {
///     let named = env.messages.iter().any(|m| m.content == "My name is Nathan.");
///     Message::assistant(if named { "Nathan." } else { "I don't know." })
/// });
/// let agent = brute_agent! {
///     use SessionLog { path: path.clone() };
///     use SystemPrompt { prompt: "You are terse." };
///     run model;
/// };
/// agent.start("My name is Nathan.").await?;
/// let outcome = agent.start("What's my name?").await?;
/// assert_eq!(outcome.text(), Some("Nathan."));
/// // Four lines: two turns of user + assistant; the system message is not saved.
/// assert_eq!(std::fs::read_to_string(&path)?.lines().count(), 4);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
/// # fn tempfile_dir() -> std::path::PathBuf {
/// #     let d = std::env::temp_dir().join(format!("brute-doc-sl-{}", std::process::id()));
/// #     std::fs::remove_dir_all(&d).ok();
/// #     d
/// # }
/// ```
///
/// # Options
///
/// Set in `brute_agent!` as `use SessionLog { path: "chat.jsonl", sync: false };`;
/// omitted options keep their defaults.
///
/// | option | type | default | what it is |
/// |---|---|---|---|
/// | `path` | `impl Into<PathBuf>` | `"session.jsonl"` | the session file of the default JSONL store |
/// | `sync` | `bool` | `true` | fsync at each durability step (default store) |
/// | `store` | `impl Into<`[`Store`]`>` | the JSONL file at `path` | where sessions live: `JsonlStore`, `SqliteStore`, `PostgresStore`, your own |
/// | `session` | `impl Into<String>` | `"default"` | the session of `store` when the env names none ([`SessionId`]) |
/// | `validation` | [`Validation`] | [`Validation::Repair`] | what loading does with a history that breaks the tool-call rules |
///
/// Placement: at most one, outside the loop (checked at compile time).
#[derive(crate::Middleware, Debug, Clone)]
#[middleware(crate = crate, provides = crate::kind::SessionLog)]
pub struct SessionLog<A> {
    app: A,
    /// The session file of the default store. Missing parent directories are created.
    /// A [`SessionPath`] in the env's extensions overrides it for one turn.
    #[middleware(into, default = "session.jsonl")]
    path: PathBuf,
    /// fsync the file at each durability step (the default), for the default store.
    /// `false` only writes to the OS: the session then survives a crash of the process
    /// but not of the machine.
    #[middleware(default = true)]
    sync: bool,
    /// Where sessions live; by default the JSONL file at `path`.
    #[middleware(into)]
    store: Store,
    /// The session of `store` when the env names none with a [`SessionId`].
    #[middleware(into, default = "default")]
    session: String,
    /// What loading does with a history that breaks the tool-call rules.
    validation: Validation,
    /// The default store, built by the first turn that uses a session file and shared
    /// by every later turn and every clone of the layer: one writer pool (whose fsyncs
    /// concurrent turns share), not one per turn.
    #[middleware(state)]
    files: Arc<OnceLock<Arc<JsonlStore>>>,
    /// The prompts of failed turns whose removal could not be written, taken back by
    /// the next turn of their session; shared by the layer's clones.
    #[middleware(state)]
    unanswered: Arc<Unanswered>,
}

/// The session file of one turn, overriding `SessionLog`'s `path` option (and its
/// store): put it in the env's extensions, so that one shared agent serves many
/// sessions at once.
///
/// ```
/// use brute::{Message, brute_agent, middleware::SessionLog, session::SessionPath};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// # let dir = std::env::temp_dir().join(format!("brute-doc-sp-{}", std::process::id()));
/// let agent = brute_agent! {
///     use SessionLog;
///     run |_env| async { Ok(Message::assistant("hi")) };
/// };
/// let mut env = agent.env();
/// env.extensions.insert(SessionPath(dir.join("alice.jsonl")));
/// env.messages.push(Message::user("hello"));
/// agent.turn(env).await?;
/// assert!(dir.join("alice.jsonl").exists());
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionPath(pub PathBuf);

/// The session of one turn in `SessionLog`'s store: put it in the env's extensions,
/// so that one shared agent serves many sessions at once. With the default file store
/// it names the file `<id>.jsonl` beside `SessionLog`'s `path`.
///
/// ```
/// use brute::session::{JsonlStore, SessionId};
/// use brute::{Message, brute_agent, middleware::SessionLog};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// # let dir = std::env::temp_dir().join(format!("brute-doc-sid-{}", std::process::id()));
/// let agent = brute_agent! {
///     use SessionLog { store: JsonlStore::new(&dir) };
///     run |_env| async { Ok(Message::assistant("hi")) };
/// };
/// let mut env = agent.env();
/// env.extensions.insert(SessionId::from("alice"));
/// env.messages.push(Message::user("hello"));
/// agent.turn(env).await?;
/// assert!(dir.join("alice.jsonl").exists());
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SessionId(pub String);

impl From<&str> for SessionId {
    fn from(id: &str) -> Self {
        SessionId(id.to_string())
    }
}

impl From<String> for SessionId {
    fn from(id: String) -> Self {
        SessionId(id)
    }
}

/// What `SessionLog` stored of a turn that succeeded: in the outcome's env
/// extensions (`outcome.env.extensions.get::<TurnSaved>()`).
///
/// ```
/// use brute::session::TurnSaved;
/// use brute::{Message, brute_agent, middleware::SessionLog};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// # let dir = std::env::temp_dir().join(format!("brute-doc-saved-{}", std::process::id()));
/// let agent = brute_agent! {
///     use SessionLog { path: dir.join("s.jsonl") };
///     run |_env| async { Ok(Message::assistant("hi")) };
/// };
/// let outcome = agent.start("hello").await?;
/// let saved = outcome.env.extensions.get::<TurnSaved>().unwrap();
/// assert_eq!((saved.messages, saved.released), (2, true));
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TurnSaved {
    /// The session (its file for the JSONL store, its id otherwise).
    pub session: String,
    /// How many of the turn's messages are stored, from its prompt on (all of them:
    /// a turn that could not store one fails).
    pub messages: usize,
    /// Whether the session's lease was given back. When it was not (the release
    /// failed, reported as an [`Event::Error`](crate::Event::Error) of `SessionLog`
    /// and a warning), the turn still succeeded and everything is stored: the lease
    /// frees itself when it expires (database stores) or with the file handle (JSONL).
    pub released: bool,
    /// The session's running total of tokens and money after the turn, as its store
    /// keeps it ([`SessionStore::spend`](crate::session::SessionStore::spend)).
    pub spend: Spend,
}

/// Which session a turn uses.
enum Target {
    /// A JSONL file.
    Path(PathBuf),
    /// A session of a store.
    Id(Store, String),
}

impl Target {
    fn name(&self) -> String {
        match self {
            Target::Path(path) => path.display().to_string(),
            Target::Id(_, id) => id.clone(),
        }
    }
}

impl<A: Handler<Env>> Handler<Env> for SessionLog<A> {
    const WATCHED: bool = false;

    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        let target = self.target(env);
        let name = target.name();
        let span = tracing::info_span!(
            "brute.session_log",
            brute.layer = "SessionLog",
            brute.session.path = %name,
            brute.session.loaded = tracing::field::Empty,
        );
        let record = span.clone();
        traced!(self.logged(env, &record, target, name), span)
    }
}

impl<A: Handler<Env>> SessionLog<A> {
    fn target(&self, env: &Env) -> Target {
        if let Some(path) = env.extensions.get::<SessionPath>() {
            return Target::Path(path.0.clone());
        }
        let id = env.extensions.get::<SessionId>().map(|id| id.0.clone());
        match (&self.store.0, id) {
            (Some(_), id) => Target::Id(
                self.store.clone(),
                id.unwrap_or_else(|| self.session.clone()),
            ),
            (None, Some(id)) => Target::Path(self.path.with_file_name(format!("{id}.jsonl"))),
            (None, None) => Target::Path(self.path.clone()),
        }
    }

    async fn open(
        &self,
        target: Target,
    ) -> Result<(Box<dyn DynLease>, Vec<Message>), SessionError> {
        match target {
            Target::Path(path) => {
                let store = self.files().clone();
                let (lease, messages) = store.open_path(path).await?;
                Ok((Box::new(Leased { store, lease }), messages))
            }
            Target::Id(Store(Some(store)), id) => store.open_dyn(&id).await,
            Target::Id(Store(None), id) => {
                let path = self.path.with_file_name(format!("{id}.jsonl"));
                Box::pin(self.open(Target::Path(path))).await
            }
        }
    }

    /// The store of session files, built on its first use.
    fn files(&self) -> &Arc<JsonlStore> {
        self.files
            .get_or_init(|| Arc::new(JsonlStore::paths(self.sync)))
    }

    /// The turn with the session loaded and saved, inside the layer's span (`record`).
    async fn logged(
        &self,
        env: &mut Env,
        record: &tracing::Span,
        target: Target,
        name: String,
    ) -> Result<(), Error> {
        let (mut lease, mut loaded) = self.open(target).await?;
        match validate::repair(&mut loaded, self.validation) {
            Ok(report) => {
                if !report.problems.is_empty() {
                    validate::warn_repaired(&name, &report);
                }
                // The prompt of a failed turn of this layer whose removal could not
                // be written then is taken back now (before the keys are checked: a
                // retry of it is a new turn).
                let taken_back = self.unanswered.stored_in(&name, &loaded);
                if let Some((_, n)) = taken_back {
                    loaded.truncate(loaded.len() - n);
                }
                // What the turn's idempotency keys require of the history (a retry
                // never stores its prompt twice), before settling abandons anything.
                let keyed = match keyed::check(&mut loaded, env, &name) {
                    Ok(keyed) => keyed,
                    Err(refused) => {
                        let _ = lease.release().await;
                        return Err(refused.into());
                    }
                };
                // What the history means for calls paused for approval is the approval
                // room's to say (`tools::pipeline::resume`); this layer writes it back.
                let settled = settle(&mut loaded, env, &name);
                let written = if report.rewritten || settled.changed || keyed {
                    lease.replace(&loaded).await
                } else if report.appended > 0 {
                    lease
                        .append(&loaded[loaded.len() - report.appended..])
                        .await
                } else if let Some((from, _)) = taken_back {
                    lease.rewrite(from, &[]).await
                } else {
                    Ok(())
                };
                if let Err(e) = written {
                    let _ = lease.release().await;
                    return Err(e.into());
                }
                if taken_back.is_some() {
                    self.unanswered.forget(&name);
                    tracing::info!(
                        session = %name,
                        "SessionLog: took back the unanswered prompt of a failed turn (its removal could not be written then)"
                    );
                }
                // A decision on a call that does not wait is refused before the stack
                // runs (nothing is called, nothing changes).
                if let Some(refused) = settled.refused {
                    let _ = lease.release().await;
                    return Err(Error::from_layer("SessionLog", refused));
                }
            }
            Err(problem) => {
                let _ = lease.release().await;
                return Err(SessionError::Invalid {
                    session: name,
                    message: problem.message(),
                    problem: problem.to_string(),
                }
                .into());
            }
        }
        record.record("brute.session.loaded", loaded.len());
        let count = loaded.len();
        // What the store holds of the record (system lines of old files are not part
        // of it).
        let recorded = loaded.iter().filter(|m| m.role != Role::System).count();
        // The history goes after any leading system message the caller prepared, and
        // before the prompt.
        let lead = env
            .messages
            .iter()
            .take_while(|m| m.role == Role::System)
            .count();
        if count > 0 {
            env.messages.edit(|messages| {
                messages.splice(lead..lead, loaded);
            });
            // The index of its tool-call ids, built once with the load: every model
            // call of the turn then checks its reply's ids in constant time.
            env.messages.call_ids();
        }
        let shared = TurnLease::new(lease, recorded);
        let spent_before = shared.spent_before();
        env.extensions.insert(SessionSpend(spent_before));
        // A turn dropped from here on gives its lease back (with results for the calls
        // it left without one); one that ends releases it below, and this does nothing.
        let _abandon = shared.abandon_on_drop();
        // The store holds the loaded history; everything after it is this turn's.
        let previous = env.set_persist(shared.writer(), recorded);
        // What the store held before this turn: the loaded history, without the prompt.
        let start = env.messages.mark_at(recorded);
        // The prompt (and anything the caller prepared) is durable before the turn runs.
        let result = match env.persist().await {
            Ok(()) => self.app.call(env).await,
            Err(e) => Err(e),
        };
        let removed = match result {
            Err(_) => pending::roll_back_unanswered(env, start, shared.answered()),
            Ok(()) => Vec::new(),
        };
        let saved = env.persist().await;
        drop(env.take_persist());
        if let Some(previous) = previous {
            env.set_persist(previous, 0);
        }
        let durable = shared.durable();
        let released = match shared.take() {
            Some(lease) => lease.release().await,
            None => Ok(()),
        };
        // Everything the turn stored stays stored whether or not the lease could be
        // given back (a database lease expires, a file lock ends with its handle):
        // a failed release is reported, and never fails the turn.
        if let Err(error) = released.as_ref() {
            tracing::warn!(
                session = %name,
                stored = durable,
                "SessionLog: the turn's {durable} message(s) are stored, but its lease could not be given back (it frees itself when it expires): {error}"
            );
        }
        // A failure that leaves some of the turn stored says what, and whether the
        // prompt may be sent again (a lost lease says it itself); a prompt nothing
        // answered is taken back by the next turn.
        let left = shared.left();
        let outcome = result.and(saved);
        if outcome.is_err()
            && let Some((n, _, true)) = left
        {
            let prompt = if removed.is_empty() {
                pending::appended(env, start)
            } else {
                removed
            };
            self.unanswered
                .remember(&name, recorded, prompt.into_iter().take(n).collect());
        }
        let outcome = outcome.map_err(|error| pending::reported(error, left));
        let released_ok = released.is_ok();
        if let Err(error) = released {
            env.emit(Event::Error {
                layer: "SessionLog",
                error: &Error::from(error),
            });
        }
        if outcome.is_ok() {
            env.extensions.insert(TurnSaved {
                session: name,
                messages: durable,
                released: released_ok,
                spend: spent_before + env.spend(),
            });
        }
        outcome
    }
}

/// The calls of the loaded `history` paused for approval, settled by the approval room
/// for the turn in `env` (which may carry a decision).
#[cfg(feature = "tools")]
fn settle(history: &mut [Message], env: &Env, session: &str) -> Settled {
    let decision = env.extensions.get::<crate::stop::ApprovalDecision>();
    settle_approvals(history, decision, session)
}

/// Without the tool pipeline nothing pauses or resumes: the history stays as loaded.
#[cfg(not(feature = "tools"))]
fn settle(_history: &mut [Message], _env: &Env, _session: &str) -> Settled {
    Settled {
        changed: false,
        refused: None,
    }
}

/// What settling changed (see `tools::pipeline::resume`).
#[cfg(not(feature = "tools"))]
struct Settled {
    changed: bool,
    refused: Option<crate::stop::ApprovalError>,
}

#[cfg(test)]
#[path = "log_tests.rs"]
mod tests;
