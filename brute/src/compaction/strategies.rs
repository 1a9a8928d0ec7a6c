//! The compaction strategies: `ToolResults`, `SlidingWindow`, `Summarize`.

use std::future::Future;
use std::ops::Range;

use crate::compaction::CompactionEnv;
use crate::env::Env;
use crate::error::Error;
use crate::handler::Handler;
use crate::message::{Message, Role};
use crate::model::Model;

/// One way of making a conversation smaller. Strategies run in a ladder (a tuple of
/// strategies, or a `pipeline!` of their middleware forms): each runs only while the
/// conversation is still over target.
pub trait Strategy: Send + Sync {
    /// The name reported in the `compacted` event.
    fn name(&self) -> &'static str;
    /// Shrinks `env.messages` towards `env.target`.
    fn compact(&self, env: &mut CompactionEnv) -> impl Future<Output = Result<(), Error>> + Send;
}

/// The blocks of a conversation: ranges that a cut must keep whole. A block is one
/// message, plus the tool results that follow it (an assistant message and the
/// results of its tool calls stay together).
pub fn blocks(messages: &[Message]) -> Vec<Range<usize>> {
    let mut blocks: Vec<Range<usize>> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        match blocks.last_mut() {
            Some(last) if message.role == Role::Tool => last.end = i + 1,
            _ => blocks.push(i..i + 1),
        }
    }
    blocks
}

/// Checks that every tool call is followed by its result and every result follows its
/// call: the invariant every compaction keeps. Returns what is wrong, if anything.
pub fn is_well_paired(messages: &[Message]) -> Result<(), String> {
    let mut i = 0;
    while i < messages.len() {
        let message = &messages[i];
        if message.role == Role::Tool {
            return Err(format!(
                "message {i} is a tool result without a call before it"
            ));
        }
        i += 1;
        if message.has_tool_calls() {
            let mut answered = Vec::new();
            while i < messages.len() && messages[i].role == Role::Tool {
                let id = messages[i].tool_call_id.as_deref().unwrap_or_default();
                if !message.tool_calls.iter().any(|c| c.id == id) {
                    return Err(format!(
                        "tool result {i} answers `{id}`, which the call before it did not make"
                    ));
                }
                answered.push(id);
                i += 1;
            }
            let end_of_history = i == messages.len() && answered.is_empty();
            for call in &message.tool_calls {
                if !answered.contains(&call.id.as_str()) && !end_of_history {
                    return Err(format!(
                        "tool call `{}` ({}) has no result",
                        call.id, call.name
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Index of the block holding the first user message (the task), if any.
fn task_block(messages: &[Message], blocks: &[Range<usize>]) -> Option<usize> {
    blocks
        .iter()
        .position(|b| messages[b.start].role == Role::User)
}

/// Index of the block holding the latest user message, if any.
fn latest_user_block(messages: &[Message], blocks: &[Range<usize>]) -> Option<usize> {
    blocks
        .iter()
        .rposition(|b| messages[b.start].role == Role::User)
}

/// The blocks a lossy strategy may remove, as up to two ranges of block indices,
/// oldest first: everything after the system messages and the task, before the last
/// `keep_recent` blocks, except the block of the latest user message.
fn removable(
    messages: &[Message],
    blocks: &[Range<usize>],
    keep_recent: usize,
) -> Vec<Range<usize>> {
    let first = task_block(messages, blocks).map_or_else(
        || {
            blocks
                .iter()
                .take_while(|b| messages[b.start].role == Role::System)
                .count()
        },
        |task| task + 1,
    );
    let last = blocks.len().saturating_sub(keep_recent).max(first);
    match latest_user_block(messages, blocks) {
        Some(latest) if (first..last).contains(&latest) => [first..latest, latest + 1..last]
            .into_iter()
            .filter(|r| !r.is_empty())
            .collect(),
        _ if first < last => std::iter::once(first..last).collect(),
        _ => Vec::new(),
    }
}

/// Rewrites older tool outputs (all but the most recent `keep_recent`) to a short
/// placeholder naming the tool and the original size, oldest first, until the
/// conversation is under target. Free: no model call.
///
/// # Options
///
/// | option | type | default | what it is |
/// |---|---|---|---|
/// | `keep_recent` | `usize` | `3` | how many of the most recent tool results stay as they are |
#[derive(crate::Middleware, Debug, Clone)]
#[middleware(crate = crate)]
pub struct ToolResults<A> {
    app: A,
    /// How many of the most recent tool results stay as they are.
    #[middleware(default = 3)]
    keep_recent: usize,
}

impl Default for ToolResults<()> {
    fn default() -> Self {
        use crate::stack::{Layer, Middleware};
        ToolResults::options().layer(())
    }
}

impl<A: Send + Sync> Strategy for ToolResults<A> {
    fn name(&self) -> &'static str {
        "ToolResults"
    }

    async fn compact(&self, env: &mut CompactionEnv) -> Result<(), Error> {
        let results: Vec<usize> = (0..env.messages.len())
            .filter(|&i| env.messages[i].role == Role::Tool)
            .collect();
        let older = results.len().saturating_sub(self.keep_recent);
        for &i in &results[..older] {
            if !env.over_target() {
                break;
            }
            let message = &env.messages[i];
            if message.content.starts_with(PLACEHOLDER_PREFIX) {
                continue;
            }
            let id = message.tool_call_id.clone().unwrap_or_default();
            let tool = env.messages[..i]
                .iter()
                .rev()
                .flat_map(|m| &m.tool_calls)
                .find(|c| c.id == id)
                .map_or("unknown", |c| c.name.as_str());
            let placeholder = format!(
                "{PLACEHOLDER_PREFIX} output of `{tool}` ({} bytes) was removed to fit the context window]",
                message.content.len()
            );
            if placeholder.len() >= message.content.len() {
                continue;
            }
            let mut rewritten = message.clone();
            rewritten.content = placeholder;
            env.rewrite(i, rewritten);
            env.applied(self.name());
        }
        Ok(())
    }
}

const PLACEHOLDER_PREFIX: &str = "[compacted:";

/// Drops the oldest turns, whole blocks at a time, until the conversation is under
/// target. Keeps the system messages, the first user message (the task), the latest
/// user message and the last `keep_recent` blocks. Free: no model call.
///
/// # Options
///
/// | option | type | default | what it is |
/// |---|---|---|---|
/// | `keep_recent` | `usize` | `4` | how many of the most recent blocks always stay |
#[derive(crate::Middleware, Debug, Clone)]
#[middleware(crate = crate)]
pub struct SlidingWindow<A> {
    app: A,
    /// How many of the most recent blocks always stay.
    #[middleware(default = 4)]
    keep_recent: usize,
}

impl Default for SlidingWindow<()> {
    fn default() -> Self {
        use crate::stack::{Layer, Middleware};
        SlidingWindow::options().layer(())
    }
}

impl<A: Send + Sync> Strategy for SlidingWindow<A> {
    fn name(&self) -> &'static str {
        "SlidingWindow"
    }

    async fn compact(&self, env: &mut CompactionEnv) -> Result<(), Error> {
        let blocks = blocks(&env.messages);
        let mut excess = env.tokens().saturating_sub(env.target);
        // Message ranges to drop, oldest first; each is whole blocks.
        let mut drop: Vec<Range<usize>> = Vec::new();
        for candidates in removable(&env.messages, &blocks, self.keep_recent) {
            let mut end = candidates.start;
            while excess > 0 && end < candidates.end {
                let size: usize = env.estimates[blocks[end].clone()].iter().sum();
                excess = excess.saturating_sub(size);
                end += 1;
            }
            if end > candidates.start {
                drop.push(blocks[candidates.start].start..blocks[end - 1].end);
            }
        }
        // Splice from the back so earlier ranges keep their indices.
        for range in drop.iter().rev() {
            env.splice(range.clone(), None);
        }
        if !drop.is_empty() {
            env.applied(self.name());
        }
        Ok(())
    }
}

/// The instructions `Summarize` gives the model.
pub const SUMMARY_PROMPT: &str = "You compact the history of an agent's conversation. \
Summarise the transcript you are given so the agent can continue without it. Use exactly \
these headings: Goal, Progress, Current state, Next steps. Keep file paths, names, \
numbers, decisions and open problems; drop chatter. Be brief.";

/// Replaces the older part of the conversation with a structured summary (goal,
/// progress, current state, next steps) written by a model, placed where the
/// summarised messages were. Never summarises the task, the latest user message or
/// the last `keep_recent` blocks. Costs one model call.
///
/// It is the terminal of a compaction `pipeline!`, or the last step of a ladder.
#[derive(Clone, Debug)]
pub struct Summarize<M> {
    model: M,
    keep_recent: usize,
}

impl<M> Summarize<M> {
    /// Summarises with `model`, keeping the last 2 blocks as they are.
    pub fn new(model: M) -> Self {
        Summarize {
            model,
            keep_recent: 2,
        }
    }

    /// Keeps the last `blocks` blocks out of the summary.
    pub fn keep_recent(mut self, blocks: usize) -> Self {
        self.keep_recent = blocks;
        self
    }
}

/// At most this many bytes of one message go into the transcript to summarise.
const TRANSCRIPT_MESSAGE_LIMIT: usize = 4_000;

fn transcript(messages: &[Message]) -> String {
    let mut out = String::new();
    for message in messages {
        let content = truncate(&message.content, TRANSCRIPT_MESSAGE_LIMIT);
        out.push_str(&format!("[{}] {content}\n", message.role));
        for call in &message.tool_calls {
            let arguments = call.arguments.to_string();
            out.push_str(&format!(
                "  -> calls {}({})\n",
                call.name,
                truncate(&arguments, TRANSCRIPT_MESSAGE_LIMIT)
            ));
        }
    }
    out
}

fn truncate(text: &str, limit: usize) -> &str {
    if text.len() <= limit {
        return text;
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

impl<M: Model> Strategy for Summarize<M> {
    fn name(&self) -> &'static str {
        "Summarize"
    }

    async fn compact(&self, env: &mut CompactionEnv) -> Result<(), Error> {
        let blocks = blocks(&env.messages);
        let ranges: Vec<Range<usize>> = removable(&env.messages, &blocks, self.keep_recent)
            .into_iter()
            .map(|c| blocks[c.start].start..blocks[c.end - 1].end)
            .collect();
        // From the back, so earlier ranges keep their indices; at most two calls (the
        // latest user message may split the candidates).
        for range in ranges.into_iter().rev() {
            let mut request = Env::new();
            request.messages.push(Message::system(SUMMARY_PROMPT));
            request
                .messages
                .push(Message::user(transcript(&env.messages[range.clone()])));
            let completion = self.model.complete(&request).await?;
            env.record_model_call(&request, &completion);
            let count = range.len();
            let summary = Message::user(format!(
                "[Summary of {count} earlier messages]\n{}",
                completion.message.content
            ));
            // A summary no smaller than what it replaces is no compaction: keep the
            // messages, and say why nothing was cut.
            let replaced: usize = env.estimates()[range.clone()].iter().sum();
            let size = env.estimator().estimate(&summary);
            if size >= replaced {
                let reason = format!(
                    "the summary ({size} tokens) is not smaller than the {count} messages it would replace ({replaced} tokens); kept them"
                );
                tracing::warn!(
                    brute.compaction.replaced_tokens = replaced,
                    brute.compaction.summary_tokens = size,
                    "Summarize: {reason}"
                );
                env.discard(self.name(), reason);
                continue;
            }
            env.splice(range, Some(summary));
            env.applied(self.name());
        }
        Ok(())
    }
}

impl<M: Model> Handler<CompactionEnv> for Summarize<M> {
    async fn call(&self, env: &mut CompactionEnv) -> Result<(), Error> {
        if env.over_target() {
            self.compact(env).await?;
        }
        Ok(())
    }
}

/// Runs `strategy`, then `next` only if the conversation is still over target.
async fn step<S: Strategy, A: Handler<CompactionEnv>>(
    strategy: &S,
    next: &A,
    env: &mut CompactionEnv,
) -> Result<(), Error> {
    if !env.over_target() {
        return Ok(());
    }
    strategy.compact(env).await?;
    if env.over_target() {
        next.call(env).await?;
    }
    Ok(())
}

impl<A: Handler<CompactionEnv>> Handler<CompactionEnv> for ToolResults<A> {
    fn call(&self, env: &mut CompactionEnv) -> impl Future<Output = Result<(), Error>> + Send {
        step(self, &self.app, env)
    }
}

impl<A: Handler<CompactionEnv>> Handler<CompactionEnv> for SlidingWindow<A> {
    fn call(&self, env: &mut CompactionEnv) -> impl Future<Output = Result<(), Error>> + Send {
        step(self, &self.app, env)
    }
}

/// A ladder of strategies, cheapest first: each runs only while the conversation is
/// still over target. This is the "list of compactors" form.
macro_rules! ladder {
    ($($s:ident),+) => {
        impl<$($s: Strategy),+> Handler<CompactionEnv> for ($($s,)+) {
            #[allow(non_snake_case)]
            async fn call(&self, env: &mut CompactionEnv) -> Result<(), Error> {
                let ($($s,)+) = self;
                $(
                    if !env.over_target() {
                        return Ok(());
                    }
                    $s.compact(env).await?;
                )+
                Ok(())
            }
        }
    };
}

ladder!(S1);
ladder!(S1, S2);
ladder!(S1, S2, S3);
ladder!(S1, S2, S3, S4);
ladder!(S1, S2, S3, S4, S5);
