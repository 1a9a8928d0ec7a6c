//! `Budget`: the guard that stops a turn before a model call would spend too much.

use crate::cost::{Cost, SessionSpend, Spend};
use crate::env::Env;
use crate::error::Error;
use crate::handler::Handler;
use crate::message::Message;
use crate::stop::ExitReason;
use crate::trace::traced;

/// What a [`Budget`] counts against: the turn's model calls, or the session's (every
/// turn's, as the session store keeps them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum BudgetScope {
    /// The model calls of this turn.
    #[default]
    Turn,
    /// The model calls of every turn of the session, this one included: the running
    /// total `SessionLog` loads with the session (it must be a layer further out).
    Session,
}

/// What a [`Budget`] found when it ended a turn, left in the env's extensions (the
/// exact figures; [`ExitReason::Limit`] has room for one number only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BudgetExceeded {
    /// What the budget counted.
    pub scope: BudgetScope,
    /// What the scope had spent before the call that was not made.
    pub spent: Spend,
    /// The tokens the next call was estimated to use.
    pub next_tokens: u64,
    /// What the next call was estimated to cost.
    pub next_cost: Cost,
}

/// Why a [`Budget`] could not keep its limit.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetError {
    /// `scope: BudgetScope::Session` without a session: no `SessionLog` further out.
    #[error(
        "`use Budget {{ scope: BudgetScope::Session, .. }}` needs the session's running total, but no `use SessionLog` above it loaded a session; add one, or count the turn with `scope: BudgetScope::Turn`"
    )]
    NoSession,
    /// A money limit, and a model call whose cost is unknown (its model has no price).
    #[error(
        "`use Budget {{ cost: .. }}` cannot keep a money limit: {calls} model call(s) counted had no price; give the model a price with `agent.prices(Prices::published().with(\"<model>\", price))`, or limit `tokens` instead"
    )]
    Unpriced {
        /// How many calls had no price.
        calls: u64,
    },
}

/// Ends the turn when the next model call would take the tokens or the money spent
/// past a limit, per turn or per session.
///
/// Sits inside a loop (checked at compile time), like [`MaxIterations`](super::MaxIterations):
/// before each pass it adds what the next call is estimated to use to what the scope
/// has spent, and when that exceeds a limit the pass does not start: the turn ends
/// with [`ExitReason::Limit`] `{ by: "Budget", limit }` (`limit` is the token limit,
/// or the money limit in micro-dollars, each saturating at `u32::MAX`), and a
/// [`BudgetExceeded`] with the exact figures is left in the env's extensions. Every
/// tool call of the pass before was answered, so no call dangles.
///
/// **The estimate of the next call** is made from what is known, without a
/// tokenizer: its prompt is the last call's prompt plus its reply (the provider's
/// counts, `input_tokens + output_tokens`) plus what was added since (tool results,
/// messages), at four characters a token; before any call of the turn, the whole
/// conversation at four characters a token, or the scope's average call so far
/// (tokens spent over calls made) when that is more. Its output is the last call's
/// output (none before the first). Its cost is those tokens at the average cost per token
/// the scope has spent so far (nothing before the first priced call). So a limit is
/// kept to within the error of that estimate: a call that answers far longer than
/// the last one can end a little past it.
///
/// # Options
///
/// | option | type | default | what it is |
/// |---|---|---|---|
/// | `tokens` | `u64` | none | the most tokens (input plus output, as the providers count them) the scope may use |
/// | `cost` | [`Cost`] | none | the most money the scope may spend; every call counted must have a price ([`BudgetError::Unpriced`] otherwise) |
/// | `scope` | [`BudgetScope`] | [`BudgetScope::Turn`] | this turn's calls, or the session's (needs `SessionLog` further out) |
///
/// Both limits may be set; each is kept.
///
/// Placement: inside a loop (`Loop::ToolResult`, `Loop::While`), at most one per
/// stack, checked at compile time.
///
/// ```
/// use brute::{Completion, Env, Error, ExitReason, Message, Model, StopReason, Usage, brute_agent};
/// use brute::middleware::{Budget, Loop};
///
/// /// Always wants another pass, and reports 600 tokens a call.
/// struct Chatty;
///
/// impl Model for Chatty {
///     async fn complete(&self, _env: &Env) -> Result<Completion, Error> {
///         Ok(Completion { message: Message::assistant("more"), usage: Some(Usage::new(500, 100)) })
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let agent = brute_agent! {
///     use Loop::While { condition: |_env| true };
///     use Budget { tokens: 2_000 };
///     run Chatty;
/// };
/// let outcome = agent.start("go").await?;
/// assert_eq!(outcome.stop, StopReason::Exited(ExitReason::Limit { by: "Budget", limit: 2_000 }));
/// // Three calls (1800 tokens); a fourth was estimated to take it past 2000.
/// assert_eq!(outcome.env.usage().total(), 1_800);
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
#[derive(crate::Middleware, Debug, Clone)]
#[middleware(crate = crate, inside = crate::kind::Loops, unique)]
pub struct Budget<A> {
    app: A,
    /// The most tokens the scope may use.
    #[middleware(into)]
    tokens: Option<u64>,
    /// The most money the scope may spend.
    #[middleware(into)]
    cost: Option<Cost>,
    /// The turn's calls or the session's.
    scope: BudgetScope,
}

impl<A: Handler<Env>> Handler<Env> for Budget<A> {
    const WATCHED: bool = false;

    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        let span = tracing::info_span!(
            "brute.budget",
            brute.layer = "Budget",
            brute.iteration = env.iteration,
        );
        if let Some(exceeded) = self.check(env)? {
            env.exit(self.reason());
            env.extensions.insert(exceeded);
            return Ok(());
        }
        traced!(self.app.call(env), span)
    }
}

impl<A> Budget<A> {
    /// The reason a turn ends with: the token limit, else the money limit in
    /// micro-dollars.
    fn reason(&self) -> ExitReason {
        let limit = match (self.tokens, self.cost) {
            (Some(tokens), _) => tokens,
            (None, Some(cost)) => cost.micros(),
            (None, None) => u64::MAX,
        };
        ExitReason::Limit {
            by: "Budget",
            limit: u32::try_from(limit).unwrap_or(u32::MAX),
        }
    }

    /// What the scope has spent, and whether the next call would exceed a limit.
    fn check(&self, env: &Env) -> Result<Option<BudgetExceeded>, Error> {
        if self.tokens.is_none() && self.cost.is_none() {
            return Ok(None);
        }
        let spent = match self.scope {
            BudgetScope::Turn => env.spend(),
            BudgetScope::Session => match env.extensions.get::<SessionSpend>() {
                Some(before) => before.0 + env.spend(),
                None => return Err(Error::from_layer("Budget", BudgetError::NoSession)),
            },
        };
        let next_tokens = next_call_tokens(env, &spent);
        let next_cost = at_average(&spent, next_tokens);
        let over_tokens = self
            .tokens
            .is_some_and(|limit| spent.usage.total().saturating_add(next_tokens) > limit);
        let over_cost = match self.cost {
            None => false,
            Some(limit) => match spent.cost() {
                Some(cost) => cost + next_cost > limit,
                None => {
                    let calls = spent.unpriced_calls;
                    return Err(Error::from_layer("Budget", BudgetError::Unpriced { calls }));
                }
            },
        };
        Ok((over_tokens || over_cost).then_some(BudgetExceeded {
            scope: self.scope,
            spent,
            next_tokens,
            next_cost,
        }))
    }
}

/// The tokens the next model call is estimated to use, given what the scope has
/// `spent` (see [`Budget`]).
fn next_call_tokens(env: &Env, spent: &Spend) -> u64 {
    match env.last_call() {
        Some(last) => {
            let since = env.messages.iter().skip(last.prompt_messages + 1);
            last.usage.total() + since.map(text_tokens).sum::<u64>() + last.usage.output_tokens
        }
        None => {
            let text: u64 = env.messages.iter().map(text_tokens).sum();
            let average = spent.usage.total().checked_div(spent.calls).unwrap_or(0);
            text.max(average)
        }
    }
}

/// A message's tokens at four characters a token (rounded up).
fn text_tokens(message: &Message) -> u64 {
    let chars = message.content.len()
        + message
            .tool_calls
            .iter()
            .map(|c| c.name.len() + c.arguments.to_string().len())
            .sum::<usize>();
    (chars as u64).div_ceil(4)
}

/// `tokens` at the average cost per token of `spent` (nothing when nothing was spent).
fn at_average(spent: &Spend, tokens: u64) -> Cost {
    let total = spent.usage.total();
    if total == 0 {
        return Cost::ZERO;
    }
    let picos = u128::from(spent.priced.picos()) * u128::from(tokens) / u128::from(total);
    Cost::from_picos(u64::try_from(picos).unwrap_or(u64::MAX))
}
