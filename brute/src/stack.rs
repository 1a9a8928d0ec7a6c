//! How stacks are put together and checked: the traits `#[derive(Middleware)]`
//! implements, the placement metadata, and the rules `brute_agent!` evaluates at
//! compile time.
//!
//! Each `use` line of a stack is checked against the lines above it (further out) and
//! below it (further in). A broken rule is a compile error at that line, with a message
//! naming the layer, the rule and the fix. Rules come from two places:
//!
//! - the middleware itself: `#[middleware(inside = K, outside = K, requires_inner = K,
//!   forbids_inner = K, unique)]`;
//! - the [kinds](mod@crate::kind) it provides (`#[middleware(provides = K)]`): a kind can
//!   carry rules for every layer that provides it, so a compactor of your own obeys
//!   the same placement as the built-in one.

/// Implemented by `#[derive(Middleware)]` on the middleware with its app slot empty
/// (`Name<NoApp, ..>`), which is how `brute_agent!` finds a middleware's options from
/// its bare path. You do not implement it by hand.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a middleware",
    note = "derive it: `#[derive(brute::Middleware)]` on a struct with an `app: A` field"
)]
pub trait Middleware {
    /// The options type, as it is before any option is set.
    type Options: MiddlewareOptions;
    /// The default options. `brute_agent!` calls this for `use Name { .. }` and then one
    /// setter per option given.
    #[doc(hidden)]
    fn __brute_options() -> Self::Options;
}

/// Options of a middleware, with its placement metadata.
pub trait MiddlewareOptions {
    /// Where the middleware may sit in a stack.
    const PLACEMENT: Placement;
}

/// Options that can wrap an inner app into a middleware (tower's `Layer`).
pub trait Layer<A> {
    /// The middleware built around `A`.
    type Output;
    /// Wraps `app`.
    fn layer(self, app: A) -> Self::Output;
}

/// The app slot of a middleware type that names no stack yet (see [`Middleware`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoApp;

/// The value of a generic option that was not set. A stack that needs it fails to
/// compile with an error naming `MissingOption`.
#[derive(Clone, Copy, Debug, Default)]
pub struct MissingOption;

/// A placement kind: a role a layer can provide (`Loop`, `SessionLog`, ..), with rules
/// that bind every layer providing it. Declare your own with [`kind!`](crate::kind!).
pub trait Kind {
    /// The kind and its rules.
    const INFO: KindInfo;
}

/// Metadata of a [`Kind`].
#[derive(Clone, Copy, Debug)]
pub struct KindInfo {
    /// A unique id: the module path and name.
    pub id: &'static str,
    /// The name shown in messages.
    pub name: &'static str,
    /// Rules for every layer that provides this kind.
    pub rules: &'static [Rule],
}

/// Where one middleware may sit, as the derive records it.
#[derive(Clone, Copy, Debug)]
pub struct Placement {
    /// The middleware's name, for messages.
    pub name: &'static str,
    /// A unique id: the module path and name.
    pub id: &'static str,
    /// Kinds this middleware provides.
    pub provides: &'static [KindInfo],
    /// Rules of this middleware.
    pub rules: &'static [Rule],
}

/// One placement rule and the message shown when it is broken.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    /// What is checked.
    pub check: Check,
    /// The compile error, naming the layer, the rule and the fix.
    pub message: &'static str,
}

/// A placement check, evaluated for one `use` line against the lines around it.
#[derive(Clone, Copy, Debug)]
pub enum Check {
    /// A layer further out provides this kind.
    Inside(&'static str),
    /// No layer further out provides this kind.
    Outside(&'static str),
    /// A layer further in provides this kind.
    RequiresInner(&'static str),
    /// No layer further in provides this kind.
    ForbidsInner(&'static str),
    /// No layer further out is the same middleware (own rule) or provides the same
    /// kind (kind rule).
    Unique,
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn provides(p: &Placement, kind: &str) -> bool {
    let mut i = 0;
    while i < p.provides.len() {
        if str_eq(p.provides[i].id, kind) {
            return true;
        }
        i += 1;
    }
    false
}

/// Whether a layer in `stack[from..to]` provides `kind`.
const fn any_provides(stack: &[Placement], from: usize, to: usize, kind: &str) -> bool {
    let mut j = from;
    while j < to {
        if provides(&stack[j], kind) {
            return true;
        }
        j += 1;
    }
    false
}

/// `unique_of`: the kind id for a kind rule, or `None` for the layer's own rule.
const fn broken(stack: &[Placement], index: usize, check: Check, unique_of: Option<&str>) -> bool {
    match check {
        Check::Inside(kind) => !any_provides(stack, 0, index, kind),
        Check::Outside(kind) => any_provides(stack, 0, index, kind),
        Check::RequiresInner(kind) => !any_provides(stack, index + 1, stack.len(), kind),
        Check::ForbidsInner(kind) => any_provides(stack, index + 1, stack.len(), kind),
        Check::Unique => match unique_of {
            Some(kind) => any_provides(stack, 0, index, kind),
            None => {
                let mut j = 0;
                while j < index {
                    if str_eq(stack[j].id, stack[index].id) {
                        return true;
                    }
                    j += 1;
                }
                false
            }
        },
    }
}

/// The message of the `nth` rule (from 0) that line `index` of `stack` (outermost
/// first) breaks, if there is one. `brute_agent!` evaluates it in `const` items, one
/// per line and `nth`, and panics with the message, which rustc reports as a compile
/// error at that line.
pub const fn placement_error(
    stack: &[Placement],
    index: usize,
    nth: usize,
) -> Option<&'static str> {
    let me = &stack[index];
    let mut seen = 0;
    let mut r = 0;
    while r < me.rules.len() {
        if broken(stack, index, me.rules[r].check, None) {
            if seen == nth {
                return Some(me.rules[r].message);
            }
            seen += 1;
        }
        r += 1;
    }
    let mut k = 0;
    while k < me.provides.len() {
        let kind = &me.provides[k];
        let mut r = 0;
        while r < kind.rules.len() {
            if broken(stack, index, kind.rules[r].check, Some(kind.id)) {
                if seen == nth {
                    return Some(kind.rules[r].message);
                }
                seen += 1;
            }
            r += 1;
        }
        k += 1;
    }
    None
}

/// The placement of the middleware whose options constructor is `_options`
/// (`Name::__brute_options`, not called).
pub const fn placement_of<F, O>(_options: &F) -> Placement
where
    F: FnOnce() -> O,
    O: MiddlewareOptions,
{
    O::PLACEMENT
}
