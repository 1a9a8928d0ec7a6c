//! `CallLimit`: at most so many model calls and tool calls (of all tools or of one by
//! name) in one turn and in one session.

use crate::env::Env;
use crate::error::Error;
use crate::handler::Handler;
use crate::message::{Message, Role, ToolCall};
use crate::stop::{ExitReason, PassLimit};
use crate::trace::{in_span, traced};

/// What [`CallLimit`] does when a limit is reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallLimitMode {
    /// End the turn with the partial result and `should_exit` set to
    /// [`ExitReason::Limit`].
    #[default]
    End,
    /// End the turn with [`Error::Stopped`].
    Error,
    /// Answer each tool call over a tool limit with an error result saying the limit
    /// was reached, without running it, and let the model go on so that it can finish.
    /// A model that asks for such calls again after a pass whose calls were refused
    /// ends the turn as [`End`](CallLimitMode::End) does. The model call limits end
    /// the turn as `End` does. The refusal is made by
    /// [`DefaultToolPipeline`](crate::tools::DefaultToolPipeline); a tool pipeline of
    /// your own runs the calls.
    Continue,
}

/// Limits of single tools, by tool name, for [`CallLimit`]: `[("shell", 3)]`.
///
/// ```
/// use brute::middleware::ToolLimits;
///
/// let limits = ToolLimits::from([("shell", 3), ("fetch", 10)]);
/// assert_eq!(limits.get("shell"), Some(3));
/// assert_eq!(limits.get("read"), None);
/// ```
#[derive(Clone, Debug, Default)]
pub struct ToolLimits(Vec<(String, u32)>);

impl ToolLimits {
    /// The limit of the tool `name`, if it has one.
    pub fn get(&self, name: &str) -> Option<u32> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, l)| *l)
    }
}

impl<const N: usize> From<[(&str, u32); N]> for ToolLimits {
    fn from(pairs: [(&str, u32); N]) -> Self {
        ToolLimits(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }
}

impl From<Vec<(String, u32)>> for ToolLimits {
    fn from(pairs: Vec<(String, u32)>) -> Self {
        ToolLimits(pairs)
    }
}

/// Calls counted in one scope (the turn, or the session).
#[derive(Clone, Debug, Default)]
struct Tally {
    model: u32,
    tool: u32,
    /// Calls of the limited tools, in the order of their limits.
    named: Vec<u32>,
}

impl Tally {
    /// A tally with a count for each of `limits`.
    fn for_limits(limits: &ToolLimits) -> Self {
        Tally {
            named: vec![0; limits.0.len()],
            ..Tally::default()
        }
    }

    /// Counts `call` as made.
    fn add_call(&mut self, call: &ToolCall, limits: &ToolLimits) {
        self.tool = self.tool.saturating_add(1);
        for (count, (name, _)) in self.named.iter_mut().zip(&limits.0) {
            if *name == call.name {
                *count = count.saturating_add(1);
            }
        }
    }

    /// Counts the model replies of `messages` and the calls they made.
    fn add_messages(&mut self, messages: &[Message], limits: &ToolLimits) {
        for message in messages.iter().filter(|m| m.role == Role::Assistant) {
            self.model = self.model.saturating_add(1);
            for call in &message.tool_calls {
                self.add_call(call, limits);
            }
        }
    }
}

/// The calls of the turn and of the session so far, kept in the env between passes.
#[derive(Clone, Debug, Default)]
struct Counts {
    turn: Tally,
    session: Tally,
    /// Whether a pass of this turn had calls refused ([`CallLimitMode::Continue`]).
    refused: bool,
}

/// One limit on tool calls, as the tool pipeline applies it to a reply's calls.
#[derive(Clone, Debug)]
struct Rule {
    /// The tool it limits; `None` for all.
    name: Option<String>,
    /// Calls still allowed.
    left: u32,
    /// The limit.
    limit: u32,
    /// `"turn"` or `"session"`.
    #[cfg_attr(not(feature = "tools"), allow(dead_code))]
    per: &'static str,
    /// The option, as [`ExitReason::Limit`] names it.
    by: &'static str,
}

/// The tool calls [`CallLimit`] in [`CallLimitMode::Continue`] still allows in this
/// pass: left in the env for the tool pipeline, which answers calls over it with an
/// error result instead of running them.
#[derive(Clone, Debug, Default)]
pub(crate) struct CallQuota {
    rules: Vec<Rule>,
}

impl CallQuota {
    /// For each of `calls`, in order, `None` when it may run, or the index of the rule
    /// that refuses it: the calls before it that may run use the quota up.
    fn verdicts(&self, calls: &[ToolCall]) -> Vec<Option<usize>> {
        let mut left: Vec<u32> = self.rules.iter().map(|r| r.left).collect();
        calls
            .iter()
            .map(|call| {
                let applies = |rule: &Rule| rule.name.as_ref().is_none_or(|n| *n == call.name);
                let refused = self
                    .rules
                    .iter()
                    .zip(&left)
                    .position(|(rule, left)| applies(rule) && *left == 0);
                if refused.is_none() {
                    for (rule, left) in self.rules.iter().zip(left.iter_mut()) {
                        if applies(rule) {
                            *left -= 1;
                        }
                    }
                }
                refused
            })
            .collect()
    }

    /// For each of `calls`, in order, `None` when it may run, or why it may not (the
    /// text of its error result).
    #[cfg(feature = "tools")]
    pub(crate) fn refusals(&self, calls: &[ToolCall]) -> Vec<Option<String>> {
        self.verdicts(calls)
            .into_iter()
            .map(|refused| {
                let rule = self.rules.get(refused?)?;
                Some(match &rule.name {
                    None => format!(
                        "the limit of {} tool calls per {} is reached; answer without calling tools",
                        rule.limit, rule.per
                    ),
                    Some(name) => format!(
                        "the limit of {} calls of `{name}` per {} is reached; answer without it",
                        rule.limit, rule.per
                    ),
                })
            })
            .collect()
    }
}

/// Limits the model calls and the tool calls (of all tools, or of one by name) of one
/// turn and of one session.
///
/// Sits inside a loop layer (checked at compile time) and counts each pass below it
/// as one model call, and the tool calls of the assistant messages the pass appended.
/// Once a count reaches its limit, it tells the loop, through [`Env::pass_limit`], that
/// no further pass may start: the pass that reached it finishes (its tool calls all
/// run and are answered, so no call dangles) and the turn ends there, as
/// [`ExitReason::Limit`] with `by` naming the limit (`"CallLimit.model_calls"`,
/// `"CallLimit.tool_calls"`, `"CallLimit.per_tool"` and their `session_` forms), or as
/// [`Error::Stopped`] with [`CallLimitMode::Error`]. A model that asks for several
/// tools in one reply may pass `tool_calls` in that pass: the limit stops the turn, it
/// does not refuse calls, except with [`CallLimitMode::Continue`], which answers each
/// call over a tool limit with an error result saying so and lets the model finish.
///
/// Turn counts are kept in the env, as `env.iteration` is: a turn on a fresh env
/// ([`Agent::start`](crate::Agent::start), a session's turn) starts from zero, and
/// they start again whenever the loop's first pass does. Session counts are read from
/// the conversation the turn starts with, which a session's turn loads from its store
/// ([`SessionLog`](super::SessionLog)): its assistant messages are the model calls
/// made before, and their tool calls the tool calls. So a session limit holds across
/// processes with no count stored beside the messages. A compaction layer that
/// replaces old messages by a summary drops their calls from the count, and a call
/// refused by [`CallLimitMode::Continue`] in an earlier turn counts as made.
///
/// # Options
///
/// | option | type | default | what it is |
/// |---|---|---|---|
/// | `model_calls` | `u32` | `u32::MAX` (none) | the most model calls (passes) a turn may make |
/// | `tool_calls` | `u32` | `u32::MAX` (none) | the tool calls of a turn after which no further model call is made |
/// | `per_tool` | `impl Into<`[`ToolLimits`]`>` | none | the same, per tool name: `[("shell", 3)]` |
/// | `session_model_calls` | `u32` | `u32::MAX` (none) | the most model calls of a session, this turn's included |
/// | `session_tool_calls` | `u32` | `u32::MAX` (none) | the tool calls of a session after which no further model call is made |
/// | `session_per_tool` | `impl Into<`[`ToolLimits`]`>` | none | the same, per tool name |
/// | `mode` | [`CallLimitMode`] | [`CallLimitMode::End`] | end the turn, fail it, or answer calls over a tool limit and go on |
///
/// Placement: inside a loop (`Loop::ToolResult`, `Loop::While`), once per stack;
/// checked at compile time.
///
/// ```
/// use brute::{Error, ExitReason, Message, brute_agent};
/// use brute::middleware::{CallLimit, CallLimitMode, Loop};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let agent = brute_agent! {
///     use Loop::While { condition: |_env| true };
///     use CallLimit { model_calls: 3, tool_calls: 20, mode: CallLimitMode::Error };
///     run |_env| async { Ok(Message::assistant("again")) };
/// };
/// let error = agent.start("go").await.unwrap_err();
/// assert!(matches!(
///     error,
///     Error::Stopped(ExitReason::Limit { by: "CallLimit.model_calls", limit: 3 })
/// ));
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
///
/// With [`CallLimitMode::Continue`], a call over a tool's limit is answered, not run:
///
/// ```
/// use brute::{Message, StopReason, ToolCall, brute_agent, providers::ScriptedModel};
/// use brute::middleware::{CallLimit, CallLimitMode, Loop};
/// use brute::tools::{DefaultToolPipeline, Tools};
/// # let dir = tempfile::tempdir().unwrap();
/// # std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
/// # let root = dir.path().to_path_buf();
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let read = |id: &str| ToolCall::new(id, "read", serde_json::json!({"file_path": "notes.txt"}));
/// let model = ScriptedModel::per_turn([
///     Message::tool_calls("", vec![read("c1"), read("c2")]),
///     Message::assistant("It says hello."),
/// ]);
/// let agent = brute_agent! {
///     use Loop::ToolResult;
///     use CallLimit { per_tool: [("read", 1)], mode: CallLimitMode::Continue };
///     use DefaultToolPipeline { tools: Tools::ALL, root: root.clone() };
///     run model;
/// };
/// let outcome = agent.start("What is in notes.txt?").await?;
/// assert_eq!(outcome.env.messages[2].content, "1\thello");
/// assert!(outcome.env.messages[3].content.contains("the limit of 1 calls of `read` per turn is reached"));
/// assert_eq!(outcome.stop, StopReason::Completed);
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
#[derive(crate::Middleware, Debug, Clone)]
#[middleware(crate = crate, inside = crate::kind::Loops, unique)]
pub struct CallLimit<A> {
    app: A,
    /// The most model calls a turn may make.
    #[middleware(default = u32::MAX)]
    model_calls: u32,
    /// The tool calls of a turn after which no further model call is made.
    #[middleware(default = u32::MAX)]
    tool_calls: u32,
    /// Limits of single tools per turn, by name: `[("shell", 3)]`.
    #[middleware(into)]
    per_tool: ToolLimits,
    /// The most model calls of a session, this turn's included.
    #[middleware(default = u32::MAX)]
    session_model_calls: u32,
    /// The tool calls of a session after which no further model call is made.
    #[middleware(default = u32::MAX)]
    session_tool_calls: u32,
    /// Limits of single tools per session, by name.
    #[middleware(into)]
    session_per_tool: ToolLimits,
    /// What happens at a limit.
    mode: CallLimitMode,
}

impl<A> CallLimit<A> {
    /// Whether a session count is needed: only then is the history counted.
    fn counts_session(&self) -> bool {
        self.session_model_calls != u32::MAX
            || self.session_tool_calls != u32::MAX
            || !self.session_per_tool.0.is_empty()
    }

    /// The counts at the start of a turn: the session's from `history`.
    fn start(&self, history: &[Message]) -> Counts {
        let mut session = Tally::for_limits(&self.session_per_tool);
        if self.counts_session() {
            session.add_messages(history, &self.session_per_tool);
        }
        Counts {
            turn: Tally::for_limits(&self.per_tool),
            session,
            refused: false,
        }
    }

    /// The model call limit the counts reached, if any.
    fn model_reached(&self, counts: &Counts) -> Option<(&'static str, u32)> {
        if counts.turn.model >= self.model_calls {
            Some(("CallLimit.model_calls", self.model_calls))
        } else if counts.session.model >= self.session_model_calls {
            Some(("CallLimit.session_model_calls", self.session_model_calls))
        } else {
            None
        }
    }

    /// The tool call limit the counts reached, if any.
    fn tool_reached(&self, counts: &Counts) -> Option<(&'static str, u32)> {
        let named = |tally: &Tally, limits: &ToolLimits| {
            tally
                .named
                .iter()
                .zip(&limits.0)
                .find(|(count, (_, limit))| **count >= *limit)
                .map(|(_, (_, limit))| *limit)
        };
        if counts.turn.tool >= self.tool_calls {
            Some(("CallLimit.tool_calls", self.tool_calls))
        } else if let Some(limit) = named(&counts.turn, &self.per_tool) {
            Some(("CallLimit.per_tool", limit))
        } else if counts.session.tool >= self.session_tool_calls {
            Some(("CallLimit.session_tool_calls", self.session_tool_calls))
        } else {
            named(&counts.session, &self.session_per_tool)
                .map(|limit| ("CallLimit.session_per_tool", limit))
        }
    }

    /// The limit the counts reached that ends the turn, if any.
    fn reached(&self, counts: &Counts) -> Option<PassLimit> {
        let (by, limit) = match self.mode {
            CallLimitMode::Continue => self.model_reached(counts)?,
            _ => self
                .model_reached(counts)
                .or_else(|| self.tool_reached(counts))?,
        };
        Some(self.pass_limit(by, limit))
    }

    fn pass_limit(&self, by: &'static str, limit: u32) -> PassLimit {
        PassLimit {
            by,
            limit,
            as_error: self.mode == CallLimitMode::Error,
        }
    }

    /// The tool calls the counts still allow, for [`CallLimitMode::Continue`].
    fn quota(&self, counts: &Counts) -> CallQuota {
        let mut rules = Vec::new();
        let mut total = |limit: u32, count: u32, per, by| {
            if limit != u32::MAX {
                rules.push(Rule {
                    name: None,
                    left: limit.saturating_sub(count),
                    limit,
                    per,
                    by,
                });
            }
        };
        total(
            self.tool_calls,
            counts.turn.tool,
            "turn",
            "CallLimit.tool_calls",
        );
        total(
            self.session_tool_calls,
            counts.session.tool,
            "session",
            "CallLimit.session_tool_calls",
        );
        let scopes = [
            (&self.per_tool, &counts.turn, "turn", "CallLimit.per_tool"),
            (
                &self.session_per_tool,
                &counts.session,
                "session",
                "CallLimit.session_per_tool",
            ),
        ];
        for (limits, tally, per, by) in scopes {
            for ((name, limit), count) in limits.0.iter().zip(&tally.named) {
                rules.push(Rule {
                    name: Some(name.clone()),
                    left: limit.saturating_sub(*count),
                    limit: *limit,
                    per,
                    by,
                });
            }
        }
        CallQuota { rules }
    }
}

impl<A: Handler<Env>> Handler<Env> for CallLimit<A> {
    const WATCHED: bool = false;

    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        let span = tracing::info_span!(
            "brute.call_limit",
            brute.layer = "CallLimit",
            brute.iteration = env.iteration,
            brute.call_limit.model_calls = tracing::field::Empty,
            brute.call_limit.tool_calls = tracing::field::Empty,
        );
        // A new turn starts its loop at pass 1.
        let mut counts = match env.extensions.remove::<Counts>() {
            Some(counts) if env.iteration > 1 => counts,
            _ => self.start(&env.messages),
        };
        if let Some(limit) = self.reached(&counts) {
            // Under a loop that does not honour `Env::pass_limit`: refuse the pass.
            let reason: ExitReason = limit.reason();
            env.extensions.insert(counts);
            return in_span(&span, || {
                if limit.as_error {
                    return Err(Error::Stopped(reason));
                }
                env.exit(reason);
                Ok(())
            });
        }
        // Overwritten on every pass, so the tool pipeline never reads an earlier one.
        let quota = (self.mode == CallLimitMode::Continue).then(|| {
            let quota = self.quota(&counts);
            env.extensions.insert(quota.clone());
            quota
        });
        let before = env.messages.len();
        let result = traced!(self.app.call(env), ref span);
        counts.turn.model = counts.turn.model.saturating_add(1);
        counts.session.model = counts.session.model.saturating_add(1);
        let mut refused_by = None;
        for message in env.messages.get(before..).unwrap_or_default() {
            if message.role != Role::Assistant {
                continue;
            }
            let verdicts = quota.as_ref().map(|q| q.verdicts(&message.tool_calls));
            for (index, call) in message.tool_calls.iter().enumerate() {
                // A refused call did not run: it uses up no limit.
                let refused = verdicts
                    .as_ref()
                    .and_then(|v| v.get(index).copied().flatten());
                if let Some(rule) = refused.and_then(|r| quota.as_ref()?.rules.get(r)) {
                    refused_by.get_or_insert((rule.by, rule.limit));
                    continue;
                }
                counts.turn.add_call(call, &self.per_tool);
                counts.session.add_call(call, &self.session_per_tool);
            }
        }
        if !span.is_disabled() {
            span.record("brute.call_limit.model_calls", counts.turn.model);
            span.record("brute.call_limit.tool_calls", counts.turn.tool);
        }
        let mut limit = self.reached(&counts);
        if let Some((by, at)) = refused_by {
            // The model was told once; asking again ends the turn.
            if counts.refused && limit.is_none() {
                limit = Some(self.pass_limit(by, at));
            }
            counts.refused = true;
        }
        env.extensions.insert(counts);
        result?;
        if let Some(limit) = limit {
            env.set_pass_limit(limit);
        }
        Ok(())
    }
}
