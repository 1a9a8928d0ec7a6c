//! Loop layers: the agentic loop is a layer, not the framework.

/// Loop layers. `Loop::ToolResult` is the agentic loop; `Loop::While` takes any
/// condition. Both are do-while: the inner stack runs once, then again while the
/// condition holds, until a layer sets `should_exit` or a guard inside set
/// [`Env::pass_limit`](crate::Env::pass_limit) (then no further pass starts). Each pass
/// increments `env.iteration` and emits [`Event::Iteration`](crate::Event::Iteration).
///
/// A stack has at most one loop, checked at compile time: nested, each loop would count
/// its own passes, so a guard such as `MaxIterations` would see only the inner one's.
///
/// ```
/// use brute::{Message, brute_agent, middleware::Loop};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// // Ask the model three times, whatever it says.
/// let agent = brute_agent! {
///     use Loop::While { condition: |env| env.iteration < 3 };
///     run |env| {
///         let n = env.iteration;
///         async move { Ok(Message::assistant(format!("pass {n}"))) }
///     };
/// };
/// let outcome = agent.start("go").await?;
/// assert_eq!(outcome.text(), Some("pass 3"));
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
#[allow(non_snake_case)]
pub mod Loop {
    use crate::env::Env;
    use crate::error::Error;
    use crate::event::{Event, EventKind};
    use crate::handler::Handler;
    use crate::message::Role;
    use crate::trace::traced;

    /// Re-runs the inner stack while the last message is a tool result: the model
    /// called tools, they ran, and the model must see their results.
    ///
    /// Needs a tool pipeline inside it (a layer that provides
    /// [`kind::ToolPipeline`](crate::kind::ToolPipeline)), checked at compile time.
    ///
    /// # Options
    ///
    /// None: `use Loop::ToolResult;`. For another condition, use [`While`].
    #[derive(crate::Middleware, Debug, Clone)]
    #[middleware(
        crate = crate,
        name = "Loop::ToolResult",
        provides = crate::kind::Loops,
        requires_inner = crate::kind::ToolPipeline
    )]
    pub struct ToolResult<A> {
        app: A,
    }

    /// Re-runs the inner stack while `condition` holds.
    ///
    /// # Options
    ///
    /// | option | type | default |
    /// |---|---|---|
    /// | `condition` | any `Fn(&Env) -> bool + Send + Sync`: a fn, or a closure that may capture | [`last_is_tool_result`] |
    ///
    /// The condition is checked after each pass; the loop goes on while it returns
    /// `true`. A closure may capture what it needs (moved in, or borrowed for as long as
    /// the agent lives):
    ///
    /// ```
    /// use brute::{Message, brute_agent, middleware::Loop};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let passes = 4;
    /// let agent = brute_agent! {
    ///     use Loop::While { condition: move |env| env.iteration < passes };
    ///     run async |env| Ok(Message::assistant(format!("pass {}", env.iteration)));
    /// };
    /// assert_eq!(agent.start("go").await?.text(), Some("pass 4"));
    /// # Ok::<(), brute::Error>(()) }).unwrap();
    /// ```
    #[derive(crate::Middleware, Debug, Clone)]
    #[middleware(crate = crate, name = "Loop::While", provides = crate::kind::Loops)]
    pub struct WhileLoop<A, C> {
        app: A,
        /// Checked after each pass; the loop goes on while it returns `true`.
        /// The default loops while the last message is a tool result.
        #[middleware(
            default = last_is_tool_result,
            default_type = fn(&Env) -> bool,
            bound = Fn(&Env) -> bool + Send + Sync
        )]
        condition: C,
    }

    /// `Loop::While`, the name to write: [`WhileLoop`] with the condition's type
    /// defaulting to a plain `fn`, so that a named agent type can say `use Loop::While;`
    /// (`use Loop::While<MyCondition>;` for a closure's type).
    pub type While<A, C = fn(&Env) -> bool> = WhileLoop<A, C>;

    /// The condition of `Loop::ToolResult`: the last message is a tool result.
    pub fn last_is_tool_result(env: &Env) -> bool {
        env.messages.last().is_some_and(|m| m.role == Role::Tool)
    }

    /// The do-while both loops share.
    async fn run_loop<A: Handler<Env>>(
        app: &A,
        env: &mut Env,
        condition: impl Fn(&Env) -> bool,
        kind: &'static str,
    ) -> Result<(), Error> {
        let span = tracing::info_span!(
            "brute.loop",
            brute.layer = kind,
            brute.iterations = tracing::field::Empty
        );
        // Durability no layer inside can skip: what the layers above did is stored
        // before the first pass, and what a pass did when it returns (env/persist.rs).
        if env.persists() {
            env.persist().await?;
        }
        loop {
            env.iteration += 1;
            // Built only when someone listens: `emit` is not inlined into the
            // stack's code, `listens` is (a branch with no listener).
            if env.listens(EventKind::Iteration) {
                env.emit(Event::Iteration { n: env.iteration });
            }
            // One span per pass, a child of the loop's span and the parent of every
            // inner layer's span. Only the passes are instrumented: the loop's span
            // is their parent, so no wrapper is needed around the loop itself.
            let pass = tracing::info_span!(
                parent: &span,
                "brute.iteration",
                brute.iteration = env.iteration
            );
            let mut result = traced!(app.call(env), pass);
            if result.is_ok() && env.persists() {
                result = env.persist().await;
            }
            let done = result.is_err() || env.should_exit.is_some() || !condition(env);
            // A guard inside may have said that was the last pass: it matters only
            // when another one is wanted.
            let limit = env.take_pass_limit();
            if let Some(limit) = limit.filter(|_| !done) {
                if limit.as_error {
                    result = Err(Error::Stopped(limit.reason()));
                } else {
                    env.exit(limit.reason());
                }
            }
            if done || env.should_exit.is_some() || result.is_err() {
                if !span.is_disabled() {
                    span.record("brute.iterations", env.iteration);
                }
                return result;
            }
        }
    }

    impl<A: Handler<Env>> Handler<Env> for ToolResult<A> {
        const WATCHED: bool = false;

        fn call(&self, env: &mut Env) -> impl Future<Output = Result<(), Error>> + Send {
            run_loop(&self.app, env, last_is_tool_result, "Loop::ToolResult")
        }
    }

    impl<A: Handler<Env>, C: Fn(&Env) -> bool + Send + Sync> Handler<Env> for WhileLoop<A, C> {
        const WATCHED: bool = false;

        fn call(&self, env: &mut Env) -> impl Future<Output = Result<(), Error>> + Send {
            run_loop(&self.app, env, &self.condition, "Loop::While")
        }
    }
}
