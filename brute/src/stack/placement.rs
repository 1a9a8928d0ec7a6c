//! The placement machinery behind `brute_agent!`'s compile-time checks: the metadata
//! `#[derive(Middleware)]` records for each middleware, and the `const fn`s the
//! generated code evaluates per `use` line.
//!
//! Nothing here is public API. The macros reach it through `brute::__private::v1`,
//! and it may change in any release that bumps that version.

/// The supertrait that seals [`Middleware`](super::Middleware) and
/// [`Kind`](super::Kind): only `#[derive(Middleware)]` and `kind!` implement them.
pub trait Sealed {}

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

/// The app slot of a middleware type that names no stack yet: the derive gives
/// `Name<NoApp, ..>` the hidden constructors `brute_agent!` calls through the bare
/// path `Name`.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoApp;

/// The value of a required generic option that was not set. Nothing is implemented
/// for it, so a stack that needs the option fails to compile naming `MissingOption`.
/// Optional generic options name their default type instead
/// (`#[middleware(default_type = T)]`).
#[derive(Clone, Copy, Debug, Default)]
pub struct MissingOption;

/// What `Name::__brute_options()` finds when `Name` is not a middleware: the blanket
/// [`NotMiddleware`] impl returns it. Its placement is [`NOT_A_MIDDLEWARE`], which the
/// line's check reports as "`Name` is not a middleware"; everything else accepts it, so
/// the mistake gives one error.
pub struct NotAMiddleware<T: ?Sized>(core::marker::PhantomData<T>);

/// Implemented for every type, so that `Name::__brute_options()` resolves whatever
/// `Name` is. A middleware's own inherent `__brute_options` takes precedence.
pub trait NotMiddleware {
    /// See [`NotAMiddleware`].
    fn __brute_options() -> NotAMiddleware<Self> {
        NotAMiddleware(core::marker::PhantomData)
    }

    /// Resolves `use Name { option: .. }` on a type that is not a middleware; the
    /// option is then reported as a field `NotAMiddleware` does not have.
    fn __brute_option_names() -> NotAMiddleware<Self> {
        NotAMiddleware(core::marker::PhantomData)
    }
}

impl<T: ?Sized> NotMiddleware for T {}

/// The placement of a type that is not a middleware: no rules, and an id that
/// [`is_middleware`] recognises.
pub const NOT_A_MIDDLEWARE: Placement = Placement {
    name: "",
    id: "brute::__private::not_a_middleware",
    provides: &[],
    rules: &[],
};

impl<T: ?Sized> MiddlewareOptions for NotAMiddleware<T> {
    const PLACEMENT: Placement = NOT_A_MIDDLEWARE;
}

/// Accepts the inner app unchanged, so a non-middleware is reported once (by
/// [`placement_of`]), not again where the stack is built.
impl<T: ?Sized, A> Layer<A> for NotAMiddleware<T> {
    type Output = A;
    fn layer(self, app: A) -> A {
        app
    }
}

/// Metadata of a [`Kind`](super::Kind).
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
    /// A layer further in provides this kind. Not reported while a layer further out
    /// provides it and is itself misplaced: that layer is the one to move, and its own
    /// error says so.
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

/// Whether a layer in `stack[..to]` provides `kind` and breaks a rule of its own:
/// it is misplaced, and it is what a missing `kind` further in is blamed on.
const fn misplaced_provider(stack: &[Placement], to: usize, kind: &str) -> bool {
    let mut j = 0;
    while j < to {
        if provides(&stack[j], kind) && placement_error(stack, j, 0).is_some() {
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
        Check::RequiresInner(kind) => {
            !any_provides(stack, index + 1, stack.len(), kind)
                && !misplaced_provider(stack, index, kind)
        }
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

/// Whether line `index` of `stack` is a middleware (see [`NotAMiddleware`]).
pub const fn is_middleware(stack: &[Placement], index: usize) -> bool {
    !str_eq(stack[index].id, NOT_A_MIDDLEWARE.id)
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
