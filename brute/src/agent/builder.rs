//! [`Stack`]: the stack `brute_agent!` builds, built without the macro (tower's
//! `ServiceBuilder`), for code that composes stacks generically.

use std::marker::PhantomData;

use crate::agent::Agent;
use crate::env::Env;
use crate::handler::Handler;
use crate::model::{Model, Terminal};
use crate::stack::placement::{Placement, first_error};
use crate::stack::{Layer, Middleware};

/// The most layers a [`Stack`] checks.
const MAX_LAYERS: usize = 32;

/// A stack under construction: layers added outermost first, then a terminal.
///
/// ```
/// use brute::stack::Stack;
/// use brute::middleware::{Loop, MaxIterations, SystemPrompt};
/// use brute::Middleware;
/// use brute::{Message, providers::ScriptedModel};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let agent = Stack::new()
///     .layer(SystemPrompt::options().prompt("You are terse."))
///     .layer(Loop::While::options().condition(|env| env.iteration < 2))
///     .layer(MaxIterations::options().max(5))
///     .run(ScriptedModel::new([Message::assistant("one"), Message::assistant("two")]));
/// assert_eq!(agent.start("go").await?.text(), Some("two"));
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
///
/// The placement rules are checked at compile time, as in `brute_agent!`, but when
/// [`run`](Stack::run) or [`handler`](Stack::handler) is instantiated (a
/// post-monomorphisation error): the message is the same, but rustc shows it at the
/// check inside brute, with a note naming your call, and `cargo check` does not run
/// it (only `cargo build` does). At most 32 layers are checked, and unlike
/// `brute_agent!` the builder does not box the futures of deep stacks: past about 24
/// layers, rustc needs a higher `recursion_limit`.
#[derive(Clone, Debug)]
pub struct Stack<L = ()> {
    layers: L,
}

impl Stack {
    /// An empty stack.
    pub fn new() -> Self {
        Stack { layers: () }
    }
}

impl Default for Stack {
    fn default() -> Self {
        Stack::new()
    }
}

impl<L> Stack<L> {
    /// Adds `options` (a middleware's options, [`Middleware::options`] and its setters)
    /// inside the layers added so far.
    pub fn layer<O: Middleware>(self, options: O) -> Stack<(L, O)> {
        Stack {
            layers: (self.layers, options),
        }
    }

    /// Ends the stack in `model` and returns the agent.
    pub fn run<M>(self, model: M) -> Agent<L::Output>
    where
        M: Model,
        L: Build<Terminal<M>>,
        L::Output: Handler<Env>,
    {
        let () = Checked::<L, Terminal<M>>::OK;
        Agent::named(
            self.layers.build(Terminal::new(model)),
            &<L as Build<Terminal<M>>>::NAMES.0[..<L as Build<Terminal<M>>>::NAMES.1],
        )
    }

    /// Ends the stack in `handler` and returns the bare stack, a handler over any env
    /// type (what `pipeline!` builds).
    pub fn handler<H>(self, handler: H) -> L::Output
    where
        L: Build<H>,
    {
        let () = Checked::<L, H>::OK;
        self.layers.build(handler)
    }
}

/// The placement table of a list of layers, outermost first.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Table {
    items: [Placement; MAX_LAYERS],
    len: usize,
}

impl Table {
    const EMPTY: Table = Table {
        items: [Placement::new("", ""); MAX_LAYERS],
        len: 0,
    };

    const fn with(mut self, placement: Placement) -> Table {
        if self.len == MAX_LAYERS {
            panic!("a `Stack` checks at most 32 layers: use `brute_agent!` for deeper stacks");
        }
        self.items[self.len] = placement;
        self.len += 1;
        self
    }

    const fn names(&self) -> ([&'static str; MAX_LAYERS], usize) {
        let mut names = [""; MAX_LAYERS];
        let mut i = 0;
        while i < self.len {
            names[i] = self.items[i].name();
            i += 1;
        }
        (names, self.len)
    }
}

/// A list of layers that can wrap an inner app `H`: `()`, or `(outer layers, layer)`.
pub trait Build<H> {
    /// The stack built around `H`.
    type Output;
    /// The layers' placements, outermost first.
    #[doc(hidden)]
    const TABLE: Table;
    /// The layers' names, outermost first, and how many there are.
    #[doc(hidden)]
    const NAMES: &'static ([&'static str; MAX_LAYERS], usize) = &Self::TABLE.names();
    /// Wraps `inner` in every layer.
    fn build(self, inner: H) -> Self::Output;
}

impl<H> Build<H> for () {
    type Output = H;
    const TABLE: Table = Table::EMPTY;
    fn build(self, inner: H) -> H {
        inner
    }
}

impl<H, Outer, O> Build<H> for (Outer, O)
where
    O: Middleware + Layer<H>,
    Outer: Build<O::Output>,
{
    type Output = Outer::Output;
    const TABLE: Table = Outer::TABLE.with(O::PLACEMENT);
    fn build(self, inner: H) -> Self::Output {
        let (outer, layer) = self;
        outer.build(layer.layer(inner))
    }
}

/// The compile-time placement check of a built stack.
struct Checked<L, H = ()>(PhantomData<(L, H)>);

impl<L: Build<H>, H> Checked<L, H> {
    const OK: () = {
        let table = L::TABLE;
        let (stack, _) = table.items.split_at(table.len);
        if let Some(message) = first_error(stack) {
            panic!("{}", message.as_str());
        }
    };
}
