//! `Fallback`: a list of models tried in order when a call fails in a way the user named.

use std::future::Future;
use std::ops::BitOr;
use std::time::Duration;

use super::{Answerer, Completion, Model};
use crate::env::Env;
use crate::error::{Error, ModelError};
use crate::event::Event;
use crate::trace::{record_error, traced};

/// The failures on which a [`Fallback`] tries its next model: a set of
/// [`ModelError`] kinds, combined with `|`.
///
/// The default is [`FallbackOn::TRANSIENT`] (rate limits, server errors, timeouts,
/// dropped connections) `|` [`FallbackOn::CONTEXT_TOO_LONG`] (a model with a larger
/// window may take the conversation). Failures outside the set (a refused key, a
/// malformed answer, a rejected request) are returned at once: another model would
/// likely fail the same way, or the fault is the caller's.
///
/// ```
/// use brute::{ModelError, model::FallbackOn};
///
/// let on = FallbackOn::RATE_LIMITED | FallbackOn::SERVER;
/// assert!(on.covers(&ModelError::RateLimited { retry_after: None }));
/// assert!(!on.covers(&ModelError::ContextTooLong("200k".into())));
/// assert!(FallbackOn::default().covers(&ModelError::ContextTooLong("200k".into())));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FallbackOn(u16);

impl FallbackOn {
    /// No failure: only the first model is ever called.
    pub const NONE: FallbackOn = FallbackOn(0);
    /// [`ModelError::RateLimited`] (HTTP 429).
    pub const RATE_LIMITED: FallbackOn = FallbackOn(1);
    /// [`ModelError::Server`] and [`ModelError::Unavailable`] (HTTP 5xx).
    pub const SERVER: FallbackOn = FallbackOn(1 << 1);
    /// [`ModelError::Timeout`].
    pub const TIMEOUT: FallbackOn = FallbackOn(1 << 2);
    /// [`ModelError::Connection`].
    pub const CONNECTION: FallbackOn = FallbackOn(1 << 3);
    /// [`ModelError::ContextTooLong`].
    pub const CONTEXT_TOO_LONG: FallbackOn = FallbackOn(1 << 4);
    /// [`ModelError::Malformed`] and [`ModelError::TooLarge`]: the answer could not be
    /// used.
    pub const MALFORMED: FallbackOn = FallbackOn(1 << 5);
    /// [`ModelError::Rejected`]: the provider refused the request (a content filter,
    /// a parameter the model does not take).
    pub const REJECTED: FallbackOn = FallbackOn(1 << 6);
    /// [`ModelError::Authentication`]: the provider refused the key.
    pub const AUTHENTICATION: FallbackOn = FallbackOn(1 << 7);
    /// The transient failures, those [`ModelError::is_transient`] names: rate limits,
    /// server errors, timeouts and dropped connections.
    pub const TRANSIENT: FallbackOn =
        FallbackOn(Self::RATE_LIMITED.0 | Self::SERVER.0 | Self::TIMEOUT.0 | Self::CONNECTION.0);
    /// Every model failure.
    pub const ANY: FallbackOn = FallbackOn(u16::MAX);

    /// Whether `error` is in the set.
    pub fn covers(self, error: &ModelError) -> bool {
        let bit = match error {
            ModelError::RateLimited { .. } => Self::RATE_LIMITED,
            ModelError::Server { .. } | ModelError::Unavailable { .. } => Self::SERVER,
            ModelError::Timeout(_) => Self::TIMEOUT,
            ModelError::Connection(_) => Self::CONNECTION,
            ModelError::ContextTooLong(_) => Self::CONTEXT_TOO_LONG,
            ModelError::Malformed(_) | ModelError::TooLarge { .. } => Self::MALFORMED,
            ModelError::Rejected(_) => Self::REJECTED,
            ModelError::Authentication(_) => Self::AUTHENTICATION,
        };
        self.0 & bit.0 != 0
    }
}

impl Default for FallbackOn {
    fn default() -> Self {
        FallbackOn::TRANSIENT | FallbackOn::CONTEXT_TOO_LONG
    }
}

impl BitOr for FallbackOn {
    type Output = FallbackOn;
    fn bitor(self, other: FallbackOn) -> FallbackOn {
        FallbackOn(self.0 | other.0)
    }
}

/// A model that tries several models in order: the first, then on a failure in its
/// [`FallbackOn`] set the next, and so on; the first answer wins, and the last
/// model's failure is the call's.
///
/// Built with [`Fallback::new`] and [`Fallback::or`]; the models are held by value in
/// a chain of types, so a call is static dispatch all the way, and `run
/// Fallback::new(a).or(b);` is a `run` line like any model's.
///
/// - **Events**: each failure that moves on to the next model emits
///   [`Event::Retry`] (`attempt` counts the models tried, 1 for the first; `delay` is
///   zero, the next model is called at once), so a stream's consumer drops the
///   deltas of the failed attempt as it does on a retry.
/// - **Trace**: each attempt runs in a `brute.fallback` span naming its model
///   (`gen_ai.request.model`) and its number (`brute.fallback.attempt`), marked as
///   failed when it failed; the model call's `chat` span gets
///   `gen_ai.response.model`, the model that answered.
/// - **Who answered**: the agent's terminal stores it in the env as [`AnsweredBy`]
///   (`env.extensions.get::<AnsweredBy>()`), and prices the call by that model's
///   name, not the first one's.
/// - **Secrets**: [`Model::secrets`] gives every model's keys, so tool results hide
///   them all.
///
/// [`Model::name`] is the first model's name. Put a [`Retry`](crate::middleware::Retry)
/// above `run` to retry the whole list; a `Fallback` itself never waits.
///
/// ```
/// use brute::{Error, Message, ModelError, brute_agent};
/// use brute::model::{AnsweredBy, Fallback, FallbackOn};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let primary = |_env: &brute::Env| async {
///     Err::<Message, _>(Error::Model(ModelError::RateLimited { retry_after: None }))
/// };
/// let secondary = |_env: &brute::Env| async { Ok(Message::assistant("from the secondary")) };
/// let agent = brute_agent! {
///     run Fallback::new(primary).or(secondary).on(FallbackOn::TRANSIENT);
/// };
/// let outcome = agent.start("hi").await?;
/// assert_eq!(outcome.text(), Some("from the secondary"));
/// // A closure's name is "model"; a provider's is its model id.
/// let answered = outcome.env.extensions.get::<AnsweredBy>().unwrap();
/// assert_eq!((answered.model.as_str(), answered.attempt), ("model", 2));
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct Fallback<C> {
    chain: C,
    on: FallbackOn,
}

impl<M: Model> Fallback<First<M>> {
    /// A list of one model, `primary`, falling back on the default [`FallbackOn`].
    pub fn new(primary: M) -> Self {
        Fallback {
            chain: First(primary),
            on: FallbackOn::default(),
        }
    }
}

impl<C: FallbackChain> Fallback<C> {
    /// The same list with `next` tried after the others.
    pub fn or<M: Model>(self, next: M) -> Fallback<Or<C, M>> {
        Fallback {
            chain: Or(self.chain, next),
            on: self.on,
        }
    }

    /// The same list, falling back on the failures in `on` only.
    pub fn on(self, on: FallbackOn) -> Self {
        Fallback { on, ..self }
    }

    /// The failures it falls back on.
    pub fn fallback_on(&self) -> FallbackOn {
        self.on
    }

    /// How many models it holds.
    pub fn len(&self) -> usize {
        C::LEN
    }

    /// Always `false`: a list has at least its primary model.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// Which model of a [`Fallback`] answered the last model call of the turn: left in
/// [`Env::extensions`] by the agent's terminal. A model that is not a `Fallback` leaves
/// none.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AnsweredBy {
    /// The model's name ([`Model::name`]).
    pub model: String,
    /// Its place in the list, 1 for the first: the models tried on that call.
    pub attempt: u32,
}

impl AnsweredBy {
    /// A record of `model`, tried `attempt`-th.
    pub fn new(model: impl Into<String>, attempt: u32) -> Self {
        AnsweredBy {
            model: model.into(),
            attempt,
        }
    }
}

/// The first model of a [`Fallback`].
#[derive(Clone, Debug)]
pub struct First<M>(M);

/// The models of a [`Fallback`] before `M`, then `M`.
#[derive(Clone, Debug)]
pub struct Or<C, M>(C, M);

mod sealed {
    pub trait Sealed {}
    impl<M> Sealed for super::First<M> {}
    impl<C, M> Sealed for super::Or<C, M> {}
}

/// The models of a [`Fallback`], in order: [`First`], then one [`Or`] per
/// [`Fallback::or`]. Implemented only by those two.
pub trait FallbackChain: sealed::Sealed + Send + Sync {
    /// How many models.
    const LEN: usize;

    /// Tries the models in order from the first; answers with the completion, the
    /// answering model's name and its place (1 for the first), or the last failure.
    #[doc(hidden)]
    fn attempt<'m>(
        &'m self,
        env: &Env,
        on: FallbackOn,
    ) -> impl Future<Output = Result<(Completion, &'m str, u32), Error>> + Send;

    /// The first model's name.
    #[doc(hidden)]
    fn first_name(&self) -> &str;

    /// Every model's secrets, in order.
    #[doc(hidden)]
    fn collect_secrets<'m>(&'m self, into: &mut Vec<&'m str>);
}

/// One attempt of a [`Fallback`]: `model`, the `attempt`-th, in its span.
async fn try_one<'m, M: Model>(
    model: &'m M,
    attempt: u32,
    env: &Env,
) -> Result<(Completion, &'m str, u32), Error> {
    let name = model.name();
    let span = tracing::info_span!(
        "brute.fallback",
        brute.layer = "Fallback",
        gen_ai.request.model = name,
        brute.fallback.attempt = attempt,
        error.type = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
    );
    match traced!(model.complete(env), ref span) {
        Ok(completion) => Ok((completion, name, attempt)),
        Err(error) => {
            record_error(&span, &error);
            Err(error)
        }
    }
}

impl<M: Model> FallbackChain for First<M> {
    const LEN: usize = 1;

    async fn attempt<'m>(
        &'m self,
        env: &Env,
        _on: FallbackOn,
    ) -> Result<(Completion, &'m str, u32), Error> {
        try_one(&self.0, 1, env).await
    }

    fn first_name(&self) -> &str {
        self.0.name()
    }

    fn collect_secrets<'m>(&'m self, into: &mut Vec<&'m str>) {
        into.extend(self.0.secrets());
    }
}

impl<C: FallbackChain, M: Model> FallbackChain for Or<C, M> {
    const LEN: usize = C::LEN + 1;

    async fn attempt<'m>(
        &'m self,
        env: &Env,
        on: FallbackOn,
    ) -> Result<(Completion, &'m str, u32), Error> {
        match self.0.attempt(env, on).await {
            Err(Error::Model(error)) if on.covers(&error) => {
                let failed = C::LEN as u32;
                tracing::warn!(
                    brute.fallback.attempt = failed,
                    gen_ai.request.model = self.1.name(),
                    error.message = %error,
                    "model call failed, falling back to the next model"
                );
                env.emit(Event::Retry {
                    attempt: failed,
                    delay: Duration::ZERO,
                    error: &error,
                });
                try_one(&self.1, failed + 1, env).await
            }
            other => other,
        }
    }

    fn first_name(&self) -> &str {
        self.0.first_name()
    }

    fn collect_secrets<'m>(&'m self, into: &mut Vec<&'m str>) {
        self.0.collect_secrets(into);
        into.extend(self.1.secrets());
    }
}

// Not offered as a fix when a `run` line is given something else.
#[diagnostic::do_not_recommend]
impl<C: FallbackChain> Model for Fallback<C> {
    async fn complete(&self, env: &Env) -> Result<Completion, Error> {
        Ok(self.chain.attempt(env, self.on).await?.0)
    }

    async fn complete_noting<'m>(
        &'m self,
        env: &Env,
        answered: &Answerer<'m>,
    ) -> Result<Completion, Error> {
        let (completion, name, attempt) = self.chain.attempt(env, self.on).await?;
        answered.note(name, attempt);
        Ok(completion)
    }

    fn name(&self) -> &str {
        self.chain.first_name()
    }

    fn secrets(&self) -> Vec<&str> {
        let mut secrets = Vec::new();
        self.chain.collect_secrets(&mut secrets);
        secrets
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One error of each kind, with the set that names it.
    fn every_kind() -> Vec<(ModelError, FallbackOn)> {
        let text = || String::from("text");
        vec![
            (
                ModelError::RateLimited { retry_after: None },
                FallbackOn::RATE_LIMITED,
            ),
            (
                ModelError::Server {
                    status: 500,
                    message: text(),
                },
                FallbackOn::SERVER,
            ),
            (
                ModelError::Unavailable {
                    status: 503,
                    retry_after: Duration::ZERO,
                    message: text(),
                },
                FallbackOn::SERVER,
            ),
            (ModelError::Timeout(Duration::ZERO), FallbackOn::TIMEOUT),
            (ModelError::Connection(text()), FallbackOn::CONNECTION),
            (
                ModelError::ContextTooLong(text()),
                FallbackOn::CONTEXT_TOO_LONG,
            ),
            (ModelError::Malformed(text()), FallbackOn::MALFORMED),
            (
                ModelError::TooLarge {
                    limit: 1,
                    message: text(),
                },
                FallbackOn::MALFORMED,
            ),
            (ModelError::Rejected(text()), FallbackOn::REJECTED),
            (
                ModelError::Authentication(text()),
                FallbackOn::AUTHENTICATION,
            ),
        ]
    }

    /// Each set covers its own errors and no other kind's, however sets are joined.
    #[test]
    fn each_set_covers_its_errors_only() {
        let kinds = every_kind();
        for (error, set) in &kinds {
            for (other, other_set) in &kinds {
                assert_eq!(set.covers(other), set == other_set, "{set:?} and {other:?}");
                let joined = *set | *other_set;
                assert!(joined.covers(error) && joined.covers(other), "{joined:?}");
            }
            assert!(FallbackOn::ANY.covers(error), "{error:?}");
            assert!(!FallbackOn::NONE.covers(error), "{error:?}");
        }
    }

    /// A list's set is the default until `on` changes it, and `or` keeps it.
    #[test]
    fn a_list_keeps_its_set_and_counts_its_models() {
        let answer = |_: &Env| async { Ok(crate::Message::assistant("hi")) };
        let list = Fallback::new(answer);
        assert_eq!(list.fallback_on(), FallbackOn::default());
        assert_eq!((list.len(), list.is_empty()), (1, false));
        let list = list.on(FallbackOn::REJECTED).or(answer).or(answer);
        assert_eq!(list.fallback_on(), FallbackOn::REJECTED);
        assert_eq!((list.len(), list.is_empty()), (3, false));
    }

    /// The transient set is [`ModelError::is_transient`]'s, and the default adds a
    /// context too long (a larger model may take it).
    #[test]
    fn the_transient_set_and_the_default() {
        for (error, set) in every_kind() {
            assert_eq!(
                FallbackOn::TRANSIENT.covers(&error),
                error.is_transient(),
                "{error:?}"
            );
            assert_eq!(
                FallbackOn::default().covers(&error),
                error.is_transient() || set == FallbackOn::CONTEXT_TOO_LONG,
                "{error:?}"
            );
        }
    }
}
