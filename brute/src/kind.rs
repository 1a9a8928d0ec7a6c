//! Placement kinds: the roles layers provide, and the rules that come with them.
//!
//! A middleware says what it is with `#[middleware(provides = Kind)]`, and where it
//! must sit with `inside`, `outside`, `requires_inner` and `forbids_inner`. The built-in kinds carry
//! the ordering rules of the Rack model, so that any layer providing them (built-in or
//! yours) is held to the same policy:
//!
//! | kind | rules for every layer that provides it |
//! |---|---|
//! | [`Loops`] | no loop further out: loops do not nest (`Loop::ToolResult`'s own rule: a [`ToolPipeline`] inside it) |
//! | [`SessionLog`] | outside every `Loops`; outside every `Compaction`; at most one |
//! | [`Compaction`] | inside a `Loops` layer, so it runs before every model call |
//! | [`ToolPipeline`] | inside a `Loops` layer, so the model sees and answers every tool result |
//!
//! Declare kinds of your own with [`kind!`](crate::kind!).

use crate::stack::Sealed;
pub use crate::stack::placement::Kind;
use crate::stack::placement::{Check, KindInfo, Rule};
use crate::stack::{KindId, KindOf, Said, kind_hash};

/// Declares placement kinds for your own middleware.
///
/// A kind is named in a derive's `#[middleware(provides = K, inside = K, ..)]` or in a
/// hand-written [`Placement`](crate::stack::Placement) (`.provides::<K>()`,
/// `.inside::<K>()`, ..).
///
/// ```
/// brute::kind! {
///     /// Layers that authenticate the user.
///     pub Auth;
/// }
///
/// /// Checks the user's permissions.
/// #[derive(brute::Middleware)]
/// #[middleware(provides = Auth)]
/// pub struct CheckToken<A> {
///     app: A,
/// }
/// ```
#[macro_export]
macro_rules! kind {
    ($($(#[$meta:meta])* $vis:vis $name:ident;)+) => {$(
        $(#[$meta])*
        #[derive(Clone, Copy, Debug)]
        $vis struct $name;
        impl $crate::__private::v1::Sealed for $name {}
        impl $crate::__private::v1::Kind for $name {
            const INFO: $crate::__private::v1::KindInfo = $crate::__private::v1::KindInfo {
                id: ::core::concat!(::core::module_path!(), "::", ::core::stringify!($name)),
                name: ::core::stringify!($name),
                rules: &[],
            };
        }
        impl $crate::__private::v1::KindOf<$name>
            for $crate::__private::v1::KindId<
                {
                    $crate::__private::v1::kind_hash(::core::concat!(
                        ::core::module_path!(),
                        "::",
                        ::core::stringify!($name)
                    ))
                },
            >
        {
        }
    )+};
}

macro_rules! builtin_kind {
    ($(#[$meta:meta])* $name:ident, [$($rule:expr),* $(,)?]) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug)]
        pub struct $name;
        impl Sealed for $name {}
        impl Kind for $name {
            const INFO: KindInfo = KindInfo {
                id: concat!("brute::kind::", stringify!($name)),
                name: stringify!($name),
                rules: &[$($rule),*],
            };
        }
        impl KindOf<$name> for KindId<{ kind_hash(concat!("brute::kind::", stringify!($name))) }> {}
    };
}

builtin_kind!(
    /// Loop layers: re-run the stack below them (`Loop::ToolResult`, `Loop::While`).
    ///
    /// Named apart from the loop middleware [`Loop`](crate::middleware::Loop), so that
    /// a file can import both plainly.
    Loops,
    [Rule::unique_kind(Said::LoopsDoNotNest, "loop layers do not nest, and a `use` above this one already provides `Loops` (rule of kind `Loops`): each loop counts its own passes, so a guard such as `MaxIterations` would count only the inner loop's, and the outer loop would start the inner one again. Keep one loop: `Loop::ToolResult` for the agentic loop, or `Loop::While { condition }` for another condition.")]
);

builtin_kind!(
    /// The session log: loads history on the way in, persists it on the way out.
    SessionLog,
    [
        Rule::of_kind::<Loops>(Check::Outside, Said::SessionLogOutsideLoops, "a session log must sit outside every loop layer, so it loads history once and persists the whole turn, but a `use` above it provides `Loops` (rule of kind `SessionLog`). Move the session log above the loop."),
        Rule::of_kind::<Compaction>(Check::Outside, Said::SessionLogOutsideCompaction, "a session log must sit outside compaction, so compaction works on the loaded history and the log persists what survives, but a `use` above it provides `Compaction` (rule of kind `SessionLog`). Move the session log above it."),
        Rule::unique_kind(Said::OneSessionLog, "a stack may have only one session log, and a `use` above this one already provides `SessionLog` (rule of kind `SessionLog`). Remove one of them."),
    ]
);

builtin_kind!(
    /// Context compaction: shrinks the history before a model call.
    Compaction,
    [Rule::of_kind::<Loops>(Check::Inside, Said::CompactionInsideLoop, "compaction must sit inside a loop layer, so it runs before every model call, but no `use` above it provides `Loops` (rule of kind `Compaction`). Move it below `use Loop::ToolResult;`.")]
);

builtin_kind!(
    /// Tool execution: advertises tools and runs the model's tool calls.
    ToolPipeline,
    [Rule::of_kind::<Loops>(Check::Inside, Said::ToolPipelineInsideLoop, "a tool pipeline must sit inside a loop layer, so that the model is called again with the tool results, but no `use` above it provides `Loops` (rule of kind `ToolPipeline`). Move it below `use Loop::ToolResult;`, adding that loop if the stack has none.")]
);
