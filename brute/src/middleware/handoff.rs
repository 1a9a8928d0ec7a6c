//! `Handoffs`: an agent hands the conversation to another agent through a tool the
//! model calls (`transfer_to_<name>`), with the history the user chooses.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::future::Future;

use serde_json::json;

use crate::env::{Env, Transcript};
use crate::error::Error;
use crate::handler::Handler;
use crate::message::{Message, Role};
use crate::tool::ToolSpec;
use crate::trace::traced;

/// The prefix of every transfer tool's name: the model hands the conversation to
/// `billing` by calling `transfer_to_billing`.
const TRANSFER_PREFIX: &str = "transfer_to_";

/// Hands the conversation to another agent when the model calls one of the transfer
/// tools it advertises, one per target (`transfer_to_<name>`, no arguments): the
/// target, any agent built with [`brute_agent!`](crate::brute_agent!) (its own system
/// prompt, tools and model), answers the rest of the turn.
///
/// - **Control**: the target owns the rest of the turn, as in the OpenAI Agents SDK;
///   control does not come back to the first agent after the target answers. A
///   handoff says the first agent is the wrong one to answer, so its model has nothing
///   to add, and returning would cost one more model call per turn and put a second
///   answer after the target's. Its answer is the turn's answer; its
///   [`ExitReason`](crate::ExitReason) (a limit of its own stack) ends the turn.
/// - **History**: the target sees the conversation so far through the [`History`]
///   filter of its [`Handoff`] (all of it, the default; only the last user message;
///   without tool calls; or a function of the user's), never the first agent's system
///   prompt.
/// - **Who answered**: the messages the target adds are appended to this
///   conversation, each assistant message carrying the target's name
///   ([`Message::agent`]), so the session (the served agent's `SessionLog`) records
///   who answered; messages without a name are the served agent's. The turn's env
///   carries a [`HandedOff`] naming the last target.
/// - **Several handoffs**: a target may hand off again (its own `Handoffs` line).
///   The handoffs of a turn are counted in its env, and the one that would pass `max`
///   fails the turn with [`HandoffError::TooMany`] (after answering the transfer call,
///   so the stored history stays whole): agents handing a conversation back and forth
///   stop there.
/// - **Other calls in the same reply**: only the first transfer call is followed; the
///   reply's other calls are answered as not run, because the target answers from
///   there.
///
/// The target's layers run on this turn's env (its events reach this agent's
/// handlers and its stream, its usage and cost add to the turn's) with its own
/// transcript and tools; the conversation is stored once the target returns. Give a
/// target no `SessionLog` of its own: the served agent's session records its
/// messages. A target's tool that asks for approval cannot be decided later, since
/// the served agent's pipeline does not hold the tool.
///
/// # Options
///
/// | option | type | default | what it is |
/// |---|---|---|---|
/// | `to` | a [`Handoff`] or a tuple of them | required | the agents it may hand to |
/// | `max` | `u32` | `5` | the most handoffs a turn may make, counting those of the targets |
///
/// Placement: below the tool pipeline (`forbids_inner = ToolPipeline`), so that it
/// sees the model's reply before the pipeline would answer a transfer call as an
/// unknown tool; at most one per stack. Checked at compile time.
///
/// ```
/// use brute::{Message, Role, ToolCall, brute_agent};
/// use brute::middleware::{HandedOff, Handoff, Handoffs, History, SystemPrompt};
/// use brute::providers::ScriptedModel;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// // The target: its own prompt and model (here a closure that says what it was given).
/// let billing = brute_agent! {
///     use SystemPrompt { prompt: "You answer questions about invoices." };
///     run |env: &brute::Env| {
///         let given = env.messages.iter().filter(|m| m.role != Role::System).count();
///         async move { Ok(Message::assistant(format!("billing here, given {given} message(s)"))) }
///     };
/// };
/// // The agent that is served: its model hands the conversation over at once.
/// let transfer = ToolCall::new("t1", "transfer_to_billing", serde_json::json!({}));
/// let triage = brute_agent! {
///     use Handoffs {
///         to: Handoff::new("billing", billing)
///             .describe("Invoices and refunds.")
///             .history(History::LastUserMessage),
///     };
///     run ScriptedModel::new([Message::tool_calls("", vec![transfer])]);
/// };
/// let outcome = triage.start("Why was I charged twice?").await?;
/// assert_eq!(outcome.text(), Some("billing here, given 1 message(s)"));
/// assert_eq!(outcome.message().and_then(|m| m.agent()), Some("billing"));
/// let handed = outcome.env.extensions.get::<HandedOff>().unwrap();
/// assert_eq!((handed.to.as_str(), handed.count), ("billing", 1));
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
#[derive(crate::Middleware, Debug, Clone)]
#[middleware(crate = crate, forbids_inner = crate::kind::ToolPipeline, unique)]
pub struct Handoffs<A, T> {
    app: A,
    /// The agents it may hand to: a [`Handoff`] or a tuple of them.
    to: T,
    /// The most handoffs a turn may make.
    #[middleware(default = 5)]
    max: u32,
}

/// Left in [`Env::extensions`] by [`Handoffs`]: the agent the turn was last handed
/// to, and how many handoffs the turn made (the count `max` is checked against).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandedOff {
    /// The target's name ([`Handoff::new`]).
    pub to: String,
    /// The handoffs of the turn so far, 1 for the first.
    pub count: u32,
}

/// Why a [`Handoffs`] layer failed a turn (inside [`Error::Layer`], reached with
/// [`Error::downcast_ref`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandoffError {
    /// The model asked for one handoff more than the turn's limit allows.
    #[error(
        "handing the conversation to `{to}` would be handoff {} of this turn, over the limit of {limit} (`max` of `use Handoffs`): the agents keep handing the conversation on",
        limit + 1
    )]
    TooMany {
        /// The target the refused handoff named.
        to: String,
        /// The limit (`max`).
        limit: u32,
    },
}

/// What a target of a handoff is given of the conversation so far (its `system`
/// messages left out): a [`History`] or a function `Fn(&[Message]) -> Vec<Message>`.
pub trait HistoryFilter: Send + Sync {
    /// The messages the target starts from.
    fn filter(&self, history: &[Message]) -> Vec<Message>;
}

/// The built-in history filters of a [`Handoff`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum History {
    /// The whole conversation, the transfer call and its result included.
    #[default]
    All,
    /// Only the last user message: the target starts afresh from the request.
    LastUserMessage,
    /// The conversation without tool calls and tool results (an assistant message
    /// left with no text is dropped): the target sees what was said, not the first
    /// agent's tools, which it does not have.
    WithoutTools,
}

impl HistoryFilter for History {
    fn filter(&self, history: &[Message]) -> Vec<Message> {
        match self {
            History::All => history.to_vec(),
            History::LastUserMessage => history
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
                .cloned()
                .into_iter()
                .collect(),
            History::WithoutTools => history
                .iter()
                .filter(|m| m.role != Role::Tool)
                .filter(|m| !(m.has_tool_calls() && m.content.is_empty()))
                .map(|m| {
                    let mut m = m.clone();
                    m.tool_calls.clear();
                    m
                })
                .collect(),
        }
    }
}

impl<F: Fn(&[Message]) -> Vec<Message> + Send + Sync> HistoryFilter for F {
    fn filter(&self, history: &[Message]) -> Vec<Message> {
        self(history)
    }
}

/// One agent a [`Handoffs`] layer may hand the conversation to: its name, what it is
/// for (told to the model in the transfer tool's description), the agent, and the
/// [`History`] it is given.
#[derive(Clone)]
pub struct Handoff<T, F = History> {
    name: String,
    spec: ToolSpec,
    target: T,
    history: F,
}

impl<T: Handler<Env>> Handoff<T> {
    /// A handoff to `target` (an [`Agent`](crate::Agent), a [`BoxAgent`](crate::BoxAgent)
    /// or any stack) named `name`, advertised as the tool `transfer_to_<name>` (with
    /// every character but ASCII letters, digits, `_` and `-` written `_`), given the
    /// whole conversation.
    pub fn new(name: impl Into<String>, target: T) -> Self {
        let name = name.into();
        let tool: String = name
            .chars()
            .map(|c| match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => c,
                _ => '_',
            })
            .collect();
        let spec = ToolSpec::new(
            format!("{TRANSFER_PREFIX}{tool}"),
            format!("Hand the conversation to the agent `{name}`, which answers from here."),
            json!({ "type": "object", "properties": {}, "additionalProperties": false }),
        );
        Handoff {
            name,
            spec,
            target,
            history: History::All,
        }
    }
}

impl<T, F> Handoff<T, F> {
    /// The same handoff, telling the model what the target is for (appended to the
    /// transfer tool's description).
    pub fn describe(mut self, what: impl AsRef<str>) -> Self {
        self.spec.description = format!(
            "Hand the conversation to the agent `{}`, which answers from here: {}",
            self.name,
            what.as_ref()
        );
        self
    }

    /// The same handoff, giving the target the history `filter` keeps.
    pub fn history<G: HistoryFilter>(self, filter: G) -> Handoff<T, G> {
        Handoff {
            name: self.name,
            spec: self.spec,
            target: self.target,
            history: filter,
        }
    }

    /// The target's name, as its messages carry it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The transfer tool the model is offered.
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }
}

impl<T, F> fmt::Debug for Handoff<T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handoff")
            .field("name", &self.name)
            .field("tool", &self.spec.name)
            .finish_non_exhaustive()
    }
}

/// The targets of a [`Handoffs`] layer: one [`Handoff`] or a tuple of up to eight,
/// each target's turn a static call.
pub trait Targets: Send + Sync {
    /// How many targets.
    fn len(&self) -> usize;

    /// Whether there are none (never: a `Handoffs` line names at least one).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The target at `index` (below [`len`](Self::len)).
    fn target(&self, index: usize) -> Option<&dyn Target>;

    /// Runs the stack of the target at `index` over `env`.
    fn run(&self, index: usize, env: &mut Env) -> impl Future<Output = Result<(), Error>> + Send;
}

/// What a [`Handoffs`] layer reads of one target besides its stack.
pub trait Target: Send + Sync {
    /// The target's name.
    fn name(&self) -> &str;
    /// Its transfer tool.
    fn spec(&self) -> &ToolSpec;
    /// The messages it starts from, of the conversation `history`.
    fn history(&self, history: &[Message]) -> Vec<Message>;
}

impl<T: Handler<Env>, F: HistoryFilter> Target for Handoff<T, F> {
    fn name(&self) -> &str {
        &self.name
    }
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn history(&self, history: &[Message]) -> Vec<Message> {
        self.history.filter(history)
    }
}

impl<T: Handler<Env>, F: HistoryFilter> Targets for Handoff<T, F> {
    fn len(&self) -> usize {
        1
    }
    fn target(&self, index: usize) -> Option<&dyn Target> {
        (index == 0).then_some(self as &dyn Target)
    }
    async fn run(&self, _index: usize, env: &mut Env) -> Result<(), Error> {
        self.target.call(env).await
    }
}

macro_rules! tuple_targets {
    ($len:literal; $($n:tt $T:ident $F:ident),+) => {
        impl<$($T: Handler<Env>, $F: HistoryFilter),+> Targets for ($(Handoff<$T, $F>,)+) {
            fn len(&self) -> usize {
                $len
            }
            fn target(&self, index: usize) -> Option<&dyn Target> {
                match index {
                    $($n => Some(&self.$n as &dyn Target),)+
                    _ => None,
                }
            }
            async fn run(&self, index: usize, env: &mut Env) -> Result<(), Error> {
                match index {
                    $($n => self.$n.target.call(env).await,)+
                    _ => Ok(()),
                }
            }
        }
    };
}

tuple_targets!(1; 0 T0 F0);
tuple_targets!(2; 0 T0 F0, 1 T1 F1);
tuple_targets!(3; 0 T0 F0, 1 T1 F1, 2 T2 F2);
tuple_targets!(4; 0 T0 F0, 1 T1 F1, 2 T2 F2, 3 T3 F3);
tuple_targets!(5; 0 T0 F0, 1 T1 F1, 2 T2 F2, 3 T3 F3, 4 T4 F4);
tuple_targets!(6; 0 T0 F0, 1 T1 F1, 2 T2 F2, 3 T3 F3, 4 T4 F4, 5 T5 F5);
tuple_targets!(7; 0 T0 F0, 1 T1 F1, 2 T2 F2, 3 T3 F3, 4 T4 F4, 5 T5 F5, 6 T6 F6);
tuple_targets!(8; 0 T0 F0, 1 T1 F1, 2 T2 F2, 3 T3 F3, 4 T4 F4, 5 T5 F5, 6 T6 F6, 7 T7 F7);

impl<A: Handler<Env>, T: Targets> Handler<Env> for Handoffs<A, T> {
    const WATCHED: bool = false;

    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        for index in 0..self.to.len() {
            if let Some(target) = self.to.target(index)
                && !env.tools.iter().any(|t| t.name == target.spec().name)
            {
                env.tools.push(target.spec().clone());
            }
        }
        self.app.call(env).await?;
        let Some(index) = self.transfer_asked(env) else {
            return Ok(());
        };
        self.hand_off(index, env).await
    }
}

impl<A, T: Targets> Handoffs<A, T> {
    /// The target the last message asks for, when it is a reply whose calls include
    /// a transfer: the first such call's.
    fn transfer_asked(&self, env: &Env) -> Option<usize> {
        let reply = env.messages.last().filter(|m| m.has_tool_calls())?;
        reply.tool_calls.iter().find_map(|call| {
            (0..self.to.len()).find(|&i| {
                self.to
                    .target(i)
                    .is_some_and(|target| target.spec().name == call.name)
            })
        })
    }

    /// Answers the reply's calls, runs the target at `index` on its history, and
    /// appends what it said.
    async fn hand_off(&self, index: usize, env: &mut Env) -> Result<(), Error> {
        let Some(target) = self.to.target(index) else {
            return Ok(());
        };
        let name = target.name().to_string();
        let count = env.extensions.get::<HandedOff>().map_or(0, |h| h.count);
        let refused = count >= self.max;
        answer_calls(env, target.spec(), &name, refused.then_some(self.max));
        env.persist().await?;
        if refused {
            return Err(Error::from_layer(
                "Handoffs",
                HandoffError::TooMany {
                    to: name,
                    limit: self.max,
                },
            ));
        }
        let span = tracing::info_span!(
            "brute.handoff",
            brute.layer = "Handoffs",
            brute.handoff.to = name.as_str(),
            brute.handoff.count = count + 1,
        );
        env.extensions.insert(HandedOff {
            to: name.clone(),
            count: count + 1,
        });
        let given: Vec<Message> = {
            let history: Vec<Message> = env
                .messages
                .iter()
                .filter(|m| m.role != Role::System)
                .cloned()
                .collect();
            target.history(&history)
        };
        let given_len = given.iter().filter(|m| m.role != Role::System).count();
        let parent = Parked::park(env, given);
        let result = traced!(self.to.run(index, env), ref span);
        let said = parent.restore(env);
        let added = said
            .into_vec()
            .into_iter()
            .filter(|m| m.role != Role::System)
            .skip(given_len);
        append_said(env, added, &name);
        env.persist().await?;
        result
    }
}

/// Answers every call of the reply that asked for the handoff to `spec`'s target:
/// the transfer call says it was handed over (or, with `refused_at`, that the limit
/// stopped it), the others that they were not run.
fn answer_calls(env: &mut Env, spec: &ToolSpec, name: &str, refused_at: Option<u32>) {
    let Some(reply) = env.messages.last() else {
        return;
    };
    let mut followed = false;
    let answers: Vec<Message> = reply
        .tool_calls
        .iter()
        .map(|call| {
            let text = if call.name == spec.name && !followed {
                followed = true;
                match refused_at {
                    None => format!("Handed the conversation to `{name}`."),
                    Some(limit) => format!(
                        "Not handed to `{name}`: this turn reached its limit of {limit} handoffs."
                    ),
                }
            } else if refused_at.is_some() {
                "Not run: the turn ended at its handoff limit.".to_string()
            } else {
                format!(
                    "Not run: the conversation was handed to `{name}`, which answers from here."
                )
            };
            Message::tool_result(call.id.clone(), text)
        })
        .collect();
    env.messages.extend(answers);
}

/// Appends the messages the target added, each assistant message not already
/// carrying an agent's name (a deeper handoff's) named `name`, and its tool-call ids
/// made unique against the conversation's.
fn append_said(env: &mut Env, added: impl Iterator<Item = Message>, name: &str) {
    let mut taken: Option<HashSet<String>> = None;
    let mut renamed: HashMap<String, String> = HashMap::new();
    for mut message in added {
        if message.role == Role::Assistant && message.agent().is_none() {
            message.set_agent(Some(name.to_string()));
        }
        if !message.tool_calls.is_empty() {
            let taken = taken.get_or_insert_with(|| {
                env.messages
                    .iter()
                    .flat_map(|m| m.tool_calls.iter().map(|c| c.id.clone()))
                    .collect()
            });
            for call in &mut message.tool_calls {
                let original = call.id.clone();
                while taken.contains(&call.id) {
                    call.id = format!("{}_h", call.id);
                }
                if call.id != original {
                    renamed.insert(original, call.id.clone());
                }
                taken.insert(call.id.clone());
            }
        }
        if let Some(id) = message.tool_call_id.as_mut()
            && let Some(new) = renamed.get(id.as_str())
        {
            *id = new.clone();
        }
        env.messages.push(message);
    }
}

/// What the served agent's turn had in the env while a target runs on it.
struct Parked {
    messages: Transcript,
    tools: Vec<ToolSpec>,
    iteration: u32,
    pass_limit: Option<crate::env::PassLimit>,
    persist: Option<(Box<dyn crate::env::Persist>, usize)>,
}

impl Parked {
    /// Takes the served agent's conversation, tools, pass and persistence out of
    /// `env` and gives it the target's history.
    fn park(env: &mut Env, given: Vec<Message>) -> Parked {
        // Everything is stored (the caller persisted), so the sink holds the record.
        let recorded = env.messages.mark().recorded();
        let persist = env.take_persist().map(|sink| (sink, recorded));
        let parked = Parked {
            messages: std::mem::replace(&mut env.messages, Transcript::from(given)),
            tools: std::mem::take(&mut env.tools),
            iteration: std::mem::replace(&mut env.iteration, 0),
            pass_limit: env.take_pass_limit(),
            persist,
        };
        env.forget_last_call();
        parked
    }

    /// Puts the served agent's turn back; the target's transcript.
    fn restore(self, env: &mut Env) -> Transcript {
        let said = std::mem::replace(&mut env.messages, self.messages);
        env.tools = self.tools;
        env.iteration = self.iteration;
        if let Some(limit) = self.pass_limit {
            env.set_pass_limit(limit);
        } else {
            env.take_pass_limit();
        }
        env.forget_last_call();
        if let Some((sink, recorded)) = self.persist {
            env.set_persist(sink, recorded);
        }
        said
    }
}
