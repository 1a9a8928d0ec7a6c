//! Where a layer may sit: [`Placement`], built with `const fn`s from the kinds a
//! layer provides and the rules it declares, and the `const fn`s that check one `use`
//! line of a stack against the lines around it and write the message of a broken rule.
//!
//! A hand-written middleware and `#[derive(Middleware)]` build the same value, so the
//! same misplacement gives the same message whichever way the layer was written.

/// The supertrait that seals [`Kind`]: only `kind!` implements it.
#[doc(hidden)]
pub trait Sealed {}

/// A placement kind: a role a layer can provide (`Loop`, `SessionLog`, ..), with rules
/// that bind every layer providing it. Declare your own with [`kind!`](crate::kind!);
/// it is sealed, so `kind!` is the only way.
pub trait Kind: Sealed {
    /// The kind and its rules.
    #[doc(hidden)]
    const INFO: KindInfo;
}

/// The id of the "kind" of a layer's own `unique` rule (see `report::SameLayer`).
pub(crate) const SAME_LAYER: &str = "brute::stack::SameLayer";

/// Which message reports a broken rule: the five standard ones, named after the
/// check, and the built-in kinds' own.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Said {
    /// `inside = K`.
    Inside,
    /// `outside = K`.
    Outside,
    /// `requires_inner = K`.
    RequiresInner,
    /// `forbids_inner = K`.
    ForbidsInner,
    /// `unique`.
    Unique,
    /// A session log outside every loop.
    SessionLogOutsideLoops,
    /// A session log outside compaction.
    SessionLogOutsideCompaction,
    /// One session log per stack.
    OneSessionLog,
    /// Compaction inside a loop.
    CompactionInsideLoop,
    /// A tool pipeline inside a loop.
    ToolPipelineInsideLoop,
    /// No loop inside another.
    LoopsDoNotNest,
    /// A model given as a layer.
    AModel,
}

/// The most kinds one layer can provide.
const MAX_PROVIDES: usize = 4;
/// The most rules one layer can declare.
const MAX_RULES: usize = 8;
/// The longest message a broken rule produces; longer ones are cut.
const MESSAGE_CAPACITY: usize = 640;

/// Metadata of a [`Kind`], written by [`kind!`](crate::kind!).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct KindInfo {
    /// A unique id: the module path and name.
    pub id: &'static str,
    /// The name shown in messages.
    pub name: &'static str,
    /// Rules for every layer that provides this kind.
    pub rules: &'static [Rule],
}

/// Where one layer may sit in a stack: its name (for messages), the kinds it provides
/// and its placement rules.
///
/// Build it in a `const` with [`Placement::new`] and the rule methods; a rule names a
/// [kind](mod@crate::kind), built in or declared with [`kind!`](crate::kind!):
///
/// ```
/// use brute::kind::{Loops, ToolPipeline};
/// use brute::stack::Placement;
///
/// const BUDGET: Placement = Placement::new("ToolBudget", module_path!())
///     .inside::<Loops>()
///     .requires_inner::<ToolPipeline>()
///     .unique();
/// # let _ = BUDGET;
/// ```
///
/// `brute_agent!` checks every `use` line against the lines above it (further out)
/// and below it (further in); a broken rule is a compile error at that line, naming
/// the layer, the rule and the fix.
#[derive(Clone, Copy, Debug)]
pub struct Placement {
    name: &'static str,
    module: &'static str,
    provides: [Option<KindInfo>; MAX_PROVIDES],
    rules: [Option<Rule>; MAX_RULES],
}

/// One placement rule: what is checked, about which kind, and the message shown when
/// it is broken (`None`: the standard message naming the layer, the rule and the fix).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    /// What is checked.
    pub check: Check,
    /// The kind the check is about (`None` for [`Check::Unique`] of a layer's own rule).
    pub kind: Option<(&'static str, &'static str)>,
    /// A message of its own (the built-in kinds' rules have one).
    pub message: Option<&'static str>,
    /// Which message `brute_agent!` reports it with.
    pub said: Said,
}

/// A placement check, evaluated for one `use` line against the lines around it.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// A layer further out provides the kind.
    Inside,
    /// No layer further out provides the kind.
    Outside,
    /// A layer further in provides the kind. Not reported while a layer further out
    /// provides it and is itself misplaced: that layer is the one to move, and its own
    /// error says so.
    RequiresInner,
    /// No layer further in provides the kind.
    ForbidsInner,
    /// No layer further out is the same middleware (own rule) or provides the same
    /// kind (kind rule).
    Unique,
    /// Never holds: the "layer" is a model, which ends a stack and wraps nothing.
    NotALayer,
}

impl Rule {
    /// A kind's rule that at most one layer provides it, with its own message.
    #[doc(hidden)]
    pub const fn unique_kind(said: Said, message: &'static str) -> Rule {
        Rule {
            check: Check::Unique,
            kind: None,
            message: Some(message),
            said,
        }
    }

    /// A rule of a kind, with its own message (what the built-in kinds use).
    #[doc(hidden)]
    pub const fn of_kind<K: Kind>(check: Check, said: Said, message: &'static str) -> Rule {
        Rule {
            check,
            kind: Some((K::INFO.id, K::INFO.name)),
            message: Some(message),
            said,
        }
    }
}

impl Placement {
    /// A layer named `name` in messages (`"Loop::While"`, `"Audit"`), defined in
    /// `module` (pass `module_path!()`), that provides no kind and may sit anywhere.
    /// The name and the module together tell two layers apart for [`unique`](Self::unique).
    pub const fn new(name: &'static str, module: &'static str) -> Self {
        Placement {
            name,
            module,
            provides: [None; MAX_PROVIDES],
            rules: [None; MAX_RULES],
        }
    }

    /// The layer provides the kind `K`: rules about `K` (its own, and other layers')
    /// see it, and `K`'s own rules bind it.
    pub const fn provides<K: Kind>(mut self) -> Self {
        let mut i = 0;
        while i < MAX_PROVIDES {
            if self.provides[i].is_none() {
                self.provides[i] = Some(K::INFO);
                return self;
            }
            i += 1;
        }
        panic!("a layer can provide at most 4 kinds")
    }

    /// The layer must sit inside (below) a layer that provides `K`.
    pub const fn inside<K: Kind>(self) -> Self {
        self.rule::<K>(Check::Inside)
    }

    /// The layer must sit outside (above) every layer that provides `K`: none further
    /// out may provide it.
    pub const fn outside<K: Kind>(self) -> Self {
        self.rule::<K>(Check::Outside)
    }

    /// A layer further in (below, before `run`) must provide `K`.
    pub const fn requires_inner<K: Kind>(self) -> Self {
        self.rule::<K>(Check::RequiresInner)
    }

    /// No layer further in may provide `K`.
    pub const fn forbids_inner<K: Kind>(self) -> Self {
        self.rule::<K>(Check::ForbidsInner)
    }

    /// The layer may appear only once in a stack.
    pub const fn unique(self) -> Self {
        self.push(Rule {
            check: Check::Unique,
            kind: None,
            message: None,
            said: Said::Unique,
        })
    }

    /// The placement of a model named in a `use` line: every stack it is in is
    /// reported, saying that a model goes after `run`.
    pub(crate) const fn model(name: &'static str) -> Self {
        Placement::new(name, "").push(Rule {
            check: Check::NotALayer,
            kind: None,
            message: Some(MODEL_AS_LAYER),
            said: Said::AModel,
        })
    }

    /// The name shown in messages.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    const fn rule<K: Kind>(self, check: Check) -> Self {
        let said = match check {
            Check::Inside => Said::Inside,
            Check::Outside => Said::Outside,
            Check::RequiresInner => Said::RequiresInner,
            Check::ForbidsInner => Said::ForbidsInner,
            Check::Unique => Said::Unique,
            Check::NotALayer => Said::AModel,
        };
        self.push(Rule {
            check,
            kind: Some((K::INFO.id, K::INFO.name)),
            message: None,
            said,
        })
    }

    const fn push(mut self, rule: Rule) -> Self {
        let mut i = 0;
        while i < MAX_RULES {
            if self.rules[i].is_none() {
                self.rules[i] = Some(rule);
                return self;
            }
            i += 1;
        }
        panic!("a layer can declare at most 8 placement rules")
    }
}

/// What [`Stack`](super::Stack) says of a model given as a layer.
const MODEL_AS_LAYER: &str = "a model is not a middleware: it ends the stack, after `run` (`run model;`), and `use` takes a layer that wraps the stack below it. Give the model to `run`, and keep `use` for layers such as `Loop::ToolResult`.";

/// The message of a broken rule, written at compile time into a fixed buffer.
#[derive(Clone, Copy)]
pub(crate) struct Message {
    buf: [u8; MESSAGE_CAPACITY],
    len: usize,
}

impl Message {
    const fn new() -> Self {
        Message {
            buf: [0; MESSAGE_CAPACITY],
            len: 0,
        }
    }

    const fn push(mut self, s: &str) -> Self {
        let bytes = s.as_bytes();
        let mut i = 0;
        while i < bytes.len() && self.len < MESSAGE_CAPACITY {
            self.buf[self.len] = bytes[i];
            self.len += 1;
            i += 1;
        }
        self
    }

    /// The text (cut at a character boundary if it was too long).
    pub(crate) const fn as_str(&self) -> &str {
        let mut len = self.len;
        loop {
            let (head, _) = self.buf.split_at(len);
            match core::str::from_utf8(head) {
                Ok(text) => return text,
                Err(_) => len -= 1,
            }
        }
    }
}

impl core::fmt::Debug for Message {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
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

const fn same_layer(a: &Placement, b: &Placement) -> bool {
    str_eq(a.name, b.name) && str_eq(a.module, b.module)
}

const fn provides(p: &Placement, kind: &str) -> bool {
    let mut i = 0;
    while i < MAX_PROVIDES {
        if let Some(info) = &p.provides[i]
            && str_eq(info.id, kind)
        {
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
const fn broken(stack: &[Placement], index: usize, rule: &Rule, unique_of: Option<&str>) -> bool {
    let kind = match rule.kind {
        Some((id, _)) => id,
        None => "",
    };
    match rule.check {
        Check::Inside => !any_provides(stack, 0, index, kind),
        Check::Outside => any_provides(stack, 0, index, kind),
        Check::RequiresInner => {
            !any_provides(stack, index + 1, stack.len(), kind)
                && !misplaced_provider(stack, index, kind)
        }
        Check::ForbidsInner => any_provides(stack, index + 1, stack.len(), kind),
        Check::NotALayer => true,
        Check::Unique => match unique_of {
            Some(kind) => any_provides(stack, 0, index, kind),
            None => {
                let mut j = 0;
                while j < index {
                    if same_layer(&stack[j], &stack[index]) {
                        return true;
                    }
                    j += 1;
                }
                false
            }
        },
    }
}

/// The standard message of a layer's own rule: the layer, the rule, the fix.
const fn standard_message(name: &str, rule: &Rule) -> Message {
    let k = match rule.kind {
        Some((_, k)) => k,
        None => "",
    };
    let m = Message::new();
    match rule.check {
        Check::NotALayer => m.push(MODEL_AS_LAYER),
        Check::Unique => m
            .push("`")
            .push(name)
            .push("` may appear only once in a stack, and this is a second `use ")
            .push(name)
            .push("` (rule `unique`, declared on `")
            .push(name)
            .push("`). Remove one of them."),
        Check::Inside => m
            .push("`")
            .push(name)
            .push("` must sit inside a layer that provides `")
            .push(k)
            .push("`, but no `use` above it provides `")
            .push(k)
            .push("` (rule `inside = ")
            .push(k)
            .push("`, declared on `")
            .push(name)
            .push("`). Move `use ")
            .push(name)
            .push("` below such a layer."),
        Check::Outside => m
            .push("`")
            .push(name)
            .push("` must sit outside every layer that provides `")
            .push(k)
            .push("`, but a `use` above it provides `")
            .push(k)
            .push("` (rule `outside = ")
            .push(k)
            .push("`, declared on `")
            .push(name)
            .push("`). Move `use ")
            .push(name)
            .push("` above that layer."),
        Check::RequiresInner => m
            .push("`")
            .push(name)
            .push("` needs a layer that provides `")
            .push(k)
            .push("` further in, but no `use` below it provides `")
            .push(k)
            .push("` (rule `requires_inner = ")
            .push(k)
            .push("`, declared on `")
            .push(name)
            .push("`). Add one between `use ")
            .push(name)
            .push("` and `run`."),
        Check::ForbidsInner => m
            .push("`")
            .push(name)
            .push("` must not have a layer that provides `")
            .push(k)
            .push("` further in, but a `use` below it provides `")
            .push(k)
            .push("` (rule `forbids_inner = ")
            .push(k)
            .push("`, declared on `")
            .push(name)
            .push("`). Move `use ")
            .push(name)
            .push("` below that layer."),
    }
}

const fn message_of(name: &str, rule: &Rule) -> Message {
    match rule.message {
        Some(text) => Message::new().push(text),
        None => standard_message(name, rule),
    }
}

/// The `nth` rule (from 0) that line `index` of `stack` (outermost first) breaks, if
/// there is one, with the name of the layer whose rule it is (the layer's own rules
/// first, then those of the kinds it provides) and the kind it is about: the kind
/// id of a kind's rule, or the layer's own `unique` rule's [`SAME_LAYER`].
const fn nth_broken(
    stack: &[Placement],
    index: usize,
    nth: usize,
) -> Option<(&Rule, &'static str)> {
    let me = &stack[index];
    let mut seen = 0;
    let mut r = 0;
    while r < MAX_RULES {
        if let Some(rule) = &me.rules[r]
            && broken(stack, index, rule, None)
        {
            if seen == nth {
                let kind = match rule.kind {
                    Some((id, _)) => id,
                    None => SAME_LAYER,
                };
                return Some((rule, kind));
            }
            seen += 1;
        }
        r += 1;
    }
    let mut k = 0;
    while k < MAX_PROVIDES {
        if let Some(kind) = &me.provides[k] {
            let mut r = 0;
            while r < kind.rules.len() {
                let rule = &kind.rules[r];
                if broken(stack, index, rule, Some(kind.id)) {
                    if seen == nth {
                        let about = match rule.kind {
                            Some((id, _)) => id,
                            None => kind.id,
                        };
                        return Some((rule, about));
                    }
                    seen += 1;
                }
                r += 1;
            }
        }
        k += 1;
    }
    None
}

/// The `nth` rule (from 0) that line `index` of `stack` breaks: the message that
/// reports it and the id of the kind it is about (see [`placement_report`]).
///
/// [`placement_report`]: super::report::placement_report
pub(crate) const fn broken_rule(
    stack: &[Placement],
    index: usize,
    nth: usize,
) -> Option<(Said, &'static str)> {
    match nth_broken(stack, index, nth) {
        Some((rule, kind)) => Some((rule.said, kind)),
        None => None,
    }
}

/// The message of the `nth` rule (from 0) that line `index` of `stack` (outermost
/// first) breaks, if there is one: what [`Stack`](super::Stack) shows. `brute_agent!`
/// reports the same rule through a trait bound instead (see [`report`](super::report)).
pub(crate) const fn placement_error(
    stack: &[Placement],
    index: usize,
    nth: usize,
) -> Option<Message> {
    match nth_broken(stack, index, nth) {
        Some((rule, _)) => Some(message_of(stack[index].name, rule)),
        None => None,
    }
}

/// The first broken rule of any line of `stack`, for [`Stack`](super::Stack), which
/// checks a whole stack at once.
pub(crate) const fn first_error(stack: &[Placement]) -> Option<Message> {
    let mut i = 0;
    while i < stack.len() {
        if let Some(message) = placement_error(stack, i, 0) {
            return Some(message);
        }
        i += 1;
    }
    None
}

#[cfg(test)]
#[path = "placement_tests.rs"]
mod tests;
