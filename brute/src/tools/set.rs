//! Tool sets: static (a tool, tuples, `tools![..]`) and dynamic ([`Registry`]), and
//! the prepared calls they dispatch to in one lookup.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::context::ToolContext;
use super::error::{ToolError, quoted};
use super::tool::{Tool, ToolOutput};
use super::truncate::Truncation;
use crate::message::ToolCall;
use crate::tool::ToolSpec;

/// A tool call whose arguments were checked, bound to the tool that runs it: what
/// [`ToolSet::prepare`] returns. Running it needs no second lookup by name.
pub trait PreparedCall: Send {
    /// The file (relative to the root, as the model wrote it) that this call changes.
    fn mutates(&self) -> Option<&str>;

    /// Whether that file's prior state is recorded for `undo`.
    fn snapshots(&self) -> bool;

    /// Which end of a long output is kept.
    fn truncation(&self) -> Truncation;

    /// Runs the call.
    fn run(self, cx: &ToolContext) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send;
}

/// A call of the tool `T` with its typed arguments.
pub struct Bound<'s, T: Tool> {
    tool: &'s T,
    args: T::Args,
}

impl<T: Tool> fmt::Debug for Bound<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bound")
            .field("tool", &self.tool.name())
            .finish_non_exhaustive()
    }
}

impl<T: Tool> PreparedCall for Bound<'_, T> {
    fn mutates(&self) -> Option<&str> {
        self.tool.mutates(&self.args)
    }

    fn snapshots(&self) -> bool {
        self.tool.snapshots()
    }

    fn truncation(&self) -> Truncation {
        self.tool.truncation()
    }

    fn run(self, cx: &ToolContext) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send {
        self.tool.call(self.args, cx)
    }
}

/// Checks `arguments` against `tool`'s argument type and binds them to it: the JSON
/// string form is parsed first, `null` counts as `{}`, and a mismatch names the field
/// and what was expected.
fn prepare<'s, T: Tool>(tool: &'s T, arguments: &Value) -> Result<Bound<'s, T>, ToolError> {
    Ok(Bound {
        tool,
        args: parse_args(arguments)?,
    })
}

/// The typed arguments in `arguments` (see [`prepare`]).
pub(crate) fn parse_args<A: DeserializeOwned>(arguments: &Value) -> Result<A, ToolError> {
    let parsed;
    let value = match arguments {
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text)
                .map_err(|e| ToolError::InvalidJson(e.to_string()))?;
            &parsed
        }
        Value::Null => {
            parsed = Value::Object(Default::default());
            &parsed
        }
        other => other,
    };
    // Arguments that fit (the usual case) are read directly; tracking the path costs
    // a little on every field, so only arguments that do not fit are read again with
    // it, to name the field. The same input gives the same error both times.
    if let Ok(args) = A::deserialize(value) {
        return Ok(args);
    }
    serde_path_to_error::deserialize(value).map_err(|err| {
        let field = quoted(&err.path().to_string());
        // serde quotes the values it refuses ("invalid type: string \"..\""): bounded.
        let inner = quoted(&err.into_inner().to_string());
        let problem = if field == "." {
            inner
        } else {
            format!("argument `{field}`: {inner}")
        };
        ToolError::InvalidArguments { field, problem }
    })
}

/// A static collection of tools, dispatched by name without `dyn`.
///
/// Implemented by every [`Tool`], by `()`, by tuples of up to 12 sets, and so by
/// [`tools!`](crate::tools!) lists of any length; [`Registry`] implements it for tools
/// known at run time.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool set",
    label = "not a `ToolSet`",
    note = "a tool set is a `#[tool]`, a tuple of tool sets, `Tools::ALL`, a `tools![..]` list or a `Registry`",
    note = "`MissingOption` means a required option was left out of the `use` line: `use DefaultToolPipeline {{ tools: Tools::ALL }}`"
)]
pub trait ToolSet: Send + Sync {
    /// A checked call of one of the set's tools, holding a reference to the tool.
    type Call<'s>: PreparedCall
    where
        Self: 's;

    /// Appends the specs of the set's tools to `out` (computes their schemas).
    fn specs(&self, out: &mut Vec<ToolSpec>);

    /// Whether the set has a tool named `name`.
    fn contains(&self, name: &str) -> bool;

    /// Appends the names of the set's tools to `out`.
    fn names<'a>(&'a self, out: &mut Vec<&'a str>);

    /// Finds the call's tool and checks its arguments, or `None` when the set has no
    /// such tool. This is the only lookup by name: the result runs the call.
    fn prepare<'s>(&'s self, call: &ToolCall) -> Option<Result<Self::Call<'s>, ToolError>>;

    /// A number that changes whenever the set's tools change, for sets whose tools can
    /// change while an agent runs (an MCP server's, `brute_mcp::McpTools`): the
    /// pipeline advertises the set's specs anew when it differs from the one it saw
    /// first. Static sets never change and keep the default, 0.
    fn revision(&self) -> u64 {
        0
    }
}

#[diagnostic::do_not_recommend]
impl<T: Tool> ToolSet for T {
    type Call<'s> = Bound<'s, T>;

    fn specs(&self, out: &mut Vec<ToolSpec>) {
        out.push(ToolSpec::new(
            self.name(),
            self.description(),
            self.parameters(),
        ));
    }

    fn contains(&self, name: &str) -> bool {
        self.name() == name
    }

    fn names<'a>(&'a self, out: &mut Vec<&'a str>) {
        out.push(self.name());
    }

    fn prepare<'s>(&'s self, call: &ToolCall) -> Option<Result<Bound<'s, T>, ToolError>> {
        (call.name == self.name()).then(|| prepare(self, &call.arguments))
    }
}

/// The call of an empty set: there is none.
#[derive(Debug)]
pub enum NoCall {}

impl PreparedCall for NoCall {
    fn mutates(&self) -> Option<&str> {
        match *self {}
    }

    fn snapshots(&self) -> bool {
        match *self {}
    }

    fn truncation(&self) -> Truncation {
        match *self {}
    }

    async fn run(self, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        match self {}
    }
}

impl ToolSet for () {
    type Call<'s> = NoCall;

    fn specs(&self, _out: &mut Vec<ToolSpec>) {}

    fn contains(&self, _name: &str) -> bool {
        false
    }

    fn names<'a>(&'a self, _out: &mut Vec<&'a str>) {}

    fn prepare(&self, _call: &ToolCall) -> Option<Result<NoCall, ToolError>> {
        None
    }
}

/// The calls of tuple sets: one variant per member. Named only through
/// `<(A, B) as ToolSet>::Call<'s>`: nothing needs to spell them.
mod calls {
    use super::*;

    macro_rules! tuple_set {
        ($call:ident; $($name:ident . $idx:tt),+) => {
            /// A checked call of one member of a tuple set.
            #[derive(Debug)]
            pub enum $call<$($name),+> {
                $(
                    #[allow(missing_docs)]
                    $name($name),
                )+
            }

            impl<$($name: PreparedCall),+> PreparedCall for $call<$($name),+> {
                fn mutates(&self) -> Option<&str> {
                    match self { $($call::$name(c) => c.mutates(),)+ }
                }

                fn snapshots(&self) -> bool {
                    match self { $($call::$name(c) => c.snapshots(),)+ }
                }

                fn truncation(&self) -> Truncation {
                    match self { $($call::$name(c) => c.truncation(),)+ }
                }

                async fn run(self, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
                    match self { $($call::$name(c) => c.run(cx).await,)+ }
                }
            }

            impl<$($name: ToolSet),+> ToolSet for ($($name,)+) {
                type Call<'s> = $call<$($name::Call<'s>),+> where Self: 's;

                fn specs(&self, out: &mut Vec<ToolSpec>) {
                    $(self.$idx.specs(out);)+
                }

                fn contains(&self, name: &str) -> bool {
                    $(self.$idx.contains(name))||+
                }

                fn names<'a>(&'a self, out: &mut Vec<&'a str>) {
                    $(self.$idx.names(out);)+
                }

                fn prepare<'s>(&'s self, call: &ToolCall) -> Option<Result<Self::Call<'s>, ToolError>> {
                    $(if let Some(prepared) = self.$idx.prepare(call) {
                        return Some(prepared.map($call::$name));
                    })+
                    None
                }

                fn revision(&self) -> u64 {
                    // Revisions only grow, so the sum changes when any member's does.
                    0u64 $(.wrapping_add(self.$idx.revision()))+
                }
            }
        };
    }

    tuple_set!(Call1; A.0);
    tuple_set!(Call2; A.0, B.1);
    tuple_set!(Call3; A.0, B.1, C.2);
    tuple_set!(Call4; A.0, B.1, C.2, D.3);
    tuple_set!(Call5; A.0, B.1, C.2, D.3, E.4);
    tuple_set!(Call6; A.0, B.1, C.2, D.3, E.4, F.5);
    tuple_set!(Call7; A.0, B.1, C.2, D.3, E.4, F.5, G.6);
    tuple_set!(Call8; A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7);
    tuple_set!(Call9; A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8);
    tuple_set!(Call10; A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9);
    tuple_set!(Call11; A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10);
    tuple_set!(Call12; A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10, L.11);
}

/// A boxed future, as a [`DynPrepared`] call returns.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The object-safe face of a [`Tool`], for [`Registry`]. Every tool implements it.
pub trait DynTool: Send + Sync {
    /// The tool's name.
    fn dyn_name(&self) -> &str;
    /// The tool's spec (computes its schema).
    fn dyn_spec(&self) -> ToolSpec;
    /// Checks arguments and binds them to the tool.
    fn dyn_prepare<'s>(&'s self, arguments: &Value) -> Result<DynCall<'s>, ToolError>;
}

/// The object-safe face of a [`Bound`] call.
trait DynPrepared: Send {
    fn dyn_mutates(&self) -> Option<&str>;
    fn dyn_snapshots(&self) -> bool;
    fn dyn_truncation(&self) -> Truncation;
    fn dyn_run<'a>(
        self: Box<Self>,
        cx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>
    where
        Self: 'a;
}

impl<T: Tool> DynPrepared for Bound<'_, T> {
    fn dyn_mutates(&self) -> Option<&str> {
        self.mutates()
    }

    fn dyn_snapshots(&self) -> bool {
        self.snapshots()
    }

    fn dyn_truncation(&self) -> Truncation {
        self.truncation()
    }

    fn dyn_run<'a>(
        self: Box<Self>,
        cx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>
    where
        Self: 'a,
    {
        Box::pin(self.tool.call(self.args, cx))
    }
}

/// A checked call of a [`Registry`] tool, boxed.
pub struct DynCall<'s>(Box<dyn DynPrepared + 's>);

impl fmt::Debug for DynCall<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DynCall")
    }
}

impl PreparedCall for DynCall<'_> {
    fn mutates(&self) -> Option<&str> {
        self.0.dyn_mutates()
    }

    fn snapshots(&self) -> bool {
        self.0.dyn_snapshots()
    }

    fn truncation(&self) -> Truncation {
        self.0.dyn_truncation()
    }

    async fn run(self, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.0.dyn_run(cx).await
    }
}

impl<T: Tool> DynTool for T {
    fn dyn_name(&self) -> &str {
        self.name()
    }

    fn dyn_spec(&self) -> ToolSpec {
        ToolSpec::new(self.name(), self.description(), self.parameters())
    }

    fn dyn_prepare<'s>(&'s self, arguments: &Value) -> Result<DynCall<'s>, ToolError> {
        Ok(DynCall(Box::new(prepare(self, arguments)?)))
    }
}

/// Tools known only at run time (plugins, MCP servers, configuration), boxed.
///
/// ```
/// use brute::tools::{Registry, ToolSet, Tools};
///
/// let mut registry = Registry::new();
/// registry.register(brute::tools::Read);
/// assert!(registry.contains("read"));
/// assert!(!registry.contains("shell"));
/// ```
#[derive(Default)]
pub struct Registry {
    tools: Vec<Box<dyn DynTool>>,
    index: HashMap<String, usize>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `tool`, replacing a tool of the same name.
    pub fn register(&mut self, tool: impl DynTool + 'static) -> &mut Self {
        self.register_boxed(Box::new(tool))
    }

    /// Adds a boxed tool, replacing a tool of the same name.
    pub fn register_boxed(&mut self, tool: Box<dyn DynTool>) -> &mut Self {
        let name = tool.dyn_name().to_string();
        match self.index.get(&name) {
            Some(&i) => self.tools[i] = tool,
            None => {
                self.index.insert(name, self.tools.len());
                self.tools.push(tool);
            }
        }
        self
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    fn get(&self, name: &str) -> Option<&dyn DynTool> {
        self.index.get(name).map(|&i| &*self.tools[i])
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|t| t.dyn_name()))
            .finish()
    }
}

impl ToolSet for Registry {
    type Call<'s> = DynCall<'s>;

    fn specs(&self, out: &mut Vec<ToolSpec>) {
        out.extend(self.tools.iter().map(|t| t.dyn_spec()));
    }

    fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    fn names<'a>(&'a self, out: &mut Vec<&'a str>) {
        out.extend(self.tools.iter().map(|t| t.dyn_name()));
    }

    fn prepare<'s>(&'s self, call: &ToolCall) -> Option<Result<DynCall<'s>, ToolError>> {
        self.get(&call.name).map(|t| t.dyn_prepare(&call.arguments))
    }
}

/// A static tool set of any length: `tools![Read, Shell, MyTool]`.
///
/// It expands to nested pairs `(Read, (Shell, (MyTool, ())))`, a [`ToolSet`] dispatched
/// by name without `dyn`.
///
/// ```
/// use brute::tools::{Read, Shell, ToolSet};
///
/// let set = brute::tools![Read, Shell];
/// assert!(set.contains("shell"));
/// assert!(!set.contains("fetch"));
/// ```
#[macro_export]
macro_rules! tools {
    () => { () };
    ($first:expr $(, $rest:expr)* $(,)?) => { ($first, $crate::tools![$($rest),*]) };
}
