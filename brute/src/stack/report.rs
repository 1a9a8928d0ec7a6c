//! How `brute_agent!` reports a broken placement rule: as a trait bound that fails at
//! the offending `use` line, with `#[diagnostic::on_unimplemented]` text naming the
//! layer as written there and the kind the rule is about. Hidden: the macros name
//! these through `brute::__private`.
//!
//! Whether a rule holds is decided by the `const fn`s of [`placement`](super::placement)
//! (they see every line and every kind, which no trait bound can without negative
//! reasoning); only the *reporting* is a trait bound, so rustc shows the message
//! itself and no const-evaluation frame. For each `use` line the macro writes:
//!
//! ```text
//! const _: () = {
//!     fn line<MaxIterations>() {                   // the layer's name, as written
//!         const R: [u64; SLOTS] = placement_report(STACK, 3);
//!         const K0: u64 = R[0];
//!         <MaxIterations as SitsInside<_>>::check(kind::<K0, _>());
//!         // .. one check per slot
//!     }
//! };
//! ```
//!
//! Each slot of the report is one message, i.e. one trait below. A slot whose rule
//! holds names the kind [`Holds`], which every type is `SitsInside<Holds>` of; a
//! broken one names the hash of the kind the rule is about, which [`kind`] turns back
//! into that kind's type (every kind has one [`KindOf`] impl, written by `kind!`).
//! `MaxIterations: SitsInside<Loops>` has no impl, and its `on_unimplemented` is the
//! error. The layer is a type parameter named as the `use` line writes it, so the
//! message names it in the user's words; the kind is a type, so it is shown by name.

use super::placement::{Placement, SAME_LAYER};
use super::probe::TypeProbe;

/// The id of a kind as a number: the FNV-1a hash of its id string. `0` is [`Holds`].
pub const fn kind_hash(id: &str) -> u64 {
    let bytes = id.as_bytes();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash
}

/// A kind, named by the hash of its id (see [`kind_hash`]).
pub struct KindId<const HASH: u64>;

/// `KindId<{kind_hash(id of K)}>: KindOf<K>`: the kind whose id hashes to `HASH`.
/// `kind!` writes one impl per kind.
pub trait KindOf<K> {}

/// The kind `HASH` names, as a type (`kind::<HASH, _>()`).
pub fn kind<const HASH: u64, K>() -> TypeProbe<K>
where
    KindId<HASH>: KindOf<K>,
{
    TypeProbe::new()
}

/// The "kind" of a slot whose rule holds.
pub struct Holds;

impl KindOf<Holds> for KindId<0> {}

/// Never named by a report: its impls only keep rustc from choosing [`Holds`] before
/// it has seen which kind a slot names.
pub struct AlsoHolds;

/// The "kind" of a layer's own `unique` rule: the same layer, further out.
pub struct SameLayer;

impl KindOf<SameLayer> for KindId<{ kind_hash(SAME_LAYER) }> {}

/// How many messages a report has: one per [`Said`](super::Said).
pub const SLOTS: usize = 12;

/// For each message (a [`Said`](super::Said), as index), the hash of the kind of the first rule of
/// line `index` that it reports and that is broken, or `0` when none is.
pub const fn placement_report(stack: &[Placement], index: usize) -> [u64; SLOTS] {
    let mut report = [0u64; SLOTS];
    let mut nth = 0;
    while let Some((said, kind)) = super::placement::broken_rule(stack, index, nth) {
        let slot = said as usize;
        if report[slot] == 0 {
            report[slot] = kind_hash(kind);
        }
        nth += 1;
    }
    report
}

/// What a `use` line of `brute_agent!` names: a middleware. Asked once per line, at
/// the line, so that a type that is not one is reported there and once.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a middleware: `use` takes a middleware, a layer that wraps the stack below it",
    label = "not a middleware",
    note = "a middleware is a struct holding its inner app, with `#[derive(brute::Middleware)]` or an impl of `brute::Middleware`; a model or a handler goes after `run` (`run model;`)"
)]
pub trait UseTarget {
    /// Asks the question for the type `probe` stands for.
    fn check(_probe: &TypeProbe<Self>) {}
}

#[diagnostic::do_not_recommend]
impl<M: super::Middleware + ?Sized> UseTarget for M {}

/// Asks [`UseTarget`] of the type `probe` stands for, in a `const`: `question` is
/// `<_ as UseTarget>::check`, not called, whose `Self` this ties to the probe's type.
pub const fn ask<M: ?Sized>(_probe: &TypeProbe<M>, _question: fn(&TypeProbe<M>)) {}

/// The placement of the middleware `probe` stands for (as [`UseTarget`] asks, at the
/// same span, so a type that is not a middleware is reported once).
pub const fn placement_of<M: super::Middleware + ?Sized>(_probe: &TypeProbe<M>) -> Placement {
    M::PLACEMENT
}

/// The type a probe function (`Name::__brute_probe`, not called) stands for.
pub const fn probe<F, M: ?Sized>(_probe: &F) -> TypeProbe<M>
where
    F: FnOnce() -> TypeProbe<M>,
{
    TypeProbe::new()
}

/// The options the middleware `probe` stands for requires (see
/// [`Middleware::REQUIRED_OPTIONS`](super::Middleware::REQUIRED_OPTIONS)).
pub const fn required_of<M: super::Middleware + ?Sized>(
    _probe: &TypeProbe<M>,
) -> &'static [&'static str] {
    M::REQUIRED_OPTIONS
}

/// The hash of the first of `required` (each `module::Name::option`) whose option
/// is not among `written` (the options a `use` line sets), or `0` when none is
/// missing: the kind [`SetsOption`] is asked of.
pub const fn missing_option(required: &[&str], written: &[&str]) -> u64 {
    let mut i = 0;
    while i < required.len() {
        let id = required[i].as_bytes();
        let mut start = id.len();
        while start > 0 && id[start - 1] != b':' {
            start -= 1;
        }
        let mut set = false;
        let mut j = 0;
        while j < written.len() && !set {
            let name = written[j].as_bytes();
            if name.len() == id.len() - start {
                let mut k = 0;
                while k < name.len() && name[k] == id[start + k] {
                    k += 1;
                }
                set = k == name.len();
            }
            j += 1;
        }
        if !set {
            return kind_hash(required[i]);
        }
        i += 1;
    }
    0
}

/// The options of a `use` line that leaves out a required option, when `UNSET`:
/// `OptionsUnset::<UNSET, _>(options).checked()` is the options when every required
/// option is set, and otherwise options that leave the inner app as it is, so that the
/// layer (whose `Handler` impl needs the option) is not reported again.
pub struct OptionsUnset<const UNSET: bool, O>(pub O);

impl<O> OptionsUnset<false, O> {
    /// The options, unchanged.
    pub fn checked(self) -> O {
        self.0
    }
}

impl<O> OptionsUnset<true, O> {
    /// Options that build nothing (the line is already an error).
    pub fn checked(self) -> super::NotAMiddleware {
        super::NotAMiddleware
    }
}

macro_rules! rule_trait {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        pub trait $name<K> {
            /// Asks whether the rule holds: it does when `K` is [`Holds`].
            fn check(_kind: TypeProbe<K>) {}
        }

        #[diagnostic::do_not_recommend]
        impl<L: ?Sized> $name<Holds> for L {}

        #[diagnostic::do_not_recommend]
        impl<L: ?Sized> $name<AlsoHolds> for L {}
    };
}

rule_trait!(
    /// `inside = K` is broken.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` must sit inside a layer that provides `{K}`, but no `use` above it provides `{K}` (rule `inside = {K}`, declared on `{Self}`). Move `use {Self}` below such a layer.",
        label = "no `use` above this one provides `{K}`"
    )]
    SitsInside
);

rule_trait!(
    /// `outside = K` is broken.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` must sit outside every layer that provides `{K}`, but a `use` above it provides `{K}` (rule `outside = {K}`, declared on `{Self}`). Move `use {Self}` above that layer.",
        label = "a `use` above this one provides `{K}`"
    )]
    SitsOutside
);

rule_trait!(
    /// `requires_inner = K` is broken.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` needs a layer that provides `{K}` further in, but no `use` below it provides `{K}` (rule `requires_inner = {K}`, declared on `{Self}`). Add one between `use {Self}` and `run`.",
        label = "no `use` below this one provides `{K}`"
    )]
    NeedsInner
);

rule_trait!(
    /// `forbids_inner = K` is broken.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` must not have a layer that provides `{K}` further in, but a `use` below it provides `{K}` (rule `forbids_inner = {K}`, declared on `{Self}`). Move `use {Self}` below that layer.",
        label = "a `use` below this one provides `{K}`"
    )]
    ForbidsInner
);

rule_trait!(
    /// `unique` is broken.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` may appear only once in a stack, and this is a second `use {Self}` (rule `unique`, declared on `{Self}`). Remove one of them.",
        label = "a second `use {Self}`"
    )]
    AppearsOnce
);

rule_trait!(
    /// A session log sits inside a loop.
    #[diagnostic::on_unimplemented(
        message = "a session log must sit outside every loop layer, so it loads history once and persists the whole turn, but a `use` above it provides `Loops` (rule of kind `SessionLog`). Move the session log above the loop.",
        label = "`{Self}` is inside a loop"
    )]
    SessionLogOutsideLoops
);

rule_trait!(
    /// A session log sits inside compaction.
    #[diagnostic::on_unimplemented(
        message = "a session log must sit outside compaction, so compaction works on the loaded history and the log persists what survives, but a `use` above it provides `Compaction` (rule of kind `SessionLog`). Move the session log above it.",
        label = "`{Self}` is inside compaction"
    )]
    SessionLogOutsideCompaction
);

rule_trait!(
    /// A second session log.
    #[diagnostic::on_unimplemented(
        message = "a stack may have only one session log, and a `use` above this one already provides `SessionLog` (rule of kind `SessionLog`). Remove one of them.",
        label = "a second session log"
    )]
    OneSessionLog
);

rule_trait!(
    /// Compaction outside every loop.
    #[diagnostic::on_unimplemented(
        message = "compaction must sit inside a loop layer, so it runs before every model call, but no `use` above it provides `Loops` (rule of kind `Compaction`). Move it below `use Loop::ToolResult;`.",
        label = "`{Self}` is outside every loop"
    )]
    CompactionInsideLoop
);

rule_trait!(
    /// A tool pipeline outside every loop.
    #[diagnostic::on_unimplemented(
        message = "a tool pipeline must sit inside a loop layer, so that the model is called again with the tool results, but no `use` above it provides `Loops` (rule of kind `ToolPipeline`). Move it below `use Loop::ToolResult;`, adding that loop if the stack has none.",
        label = "`{Self}` is outside every loop"
    )]
    ToolPipelineInsideLoop
);

rule_trait!(
    /// A loop inside another.
    #[diagnostic::on_unimplemented(
        message = "loop layers do not nest, and a `use` above this one already provides `Loops` (rule of kind `Loops`): each loop counts its own passes, so a guard such as `MaxIterations` would count only the inner loop's, and the outer loop would start the inner one again. Keep one loop: `Loop::ToolResult` for the agentic loop, or `Loop::While {{ condition }}` for another condition.",
        label = "a loop inside a loop"
    )]
    LoopsDoNotNest
);

rule_trait!(
    /// A model given as a layer.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is a model, not a middleware: a model ends the stack, after `run` (`run model;`), and `use` takes a layer that wraps the stack below it",
        label = "a model, given as a layer",
        note = "give the model to `run`, and keep `use` for layers such as `Loop::ToolResult`"
    )]
    AModel
);

rule_trait!(
    /// A required option is not set.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` needs `{K}`: that option has no default, so the `use {Self}` line must set it (`use {Self} {{ option: value }}`)",
        label = "`{K}` is not set here"
    )]
    SetsOption
);
