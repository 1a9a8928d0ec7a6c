//! Tool sets: static (a tool, tuples, `tools![..]`) and dynamic ([`Registry`]).

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use super::context::ToolContext;
use super::error::ToolError;
use super::truncate::Truncation;
use super::{Tool, ToolOutput};
use crate::message::ToolCall;
use crate::tool::ToolSpec;

/// A call whose arguments were checked and deserialised, ready to run.
pub struct Prepared {
    args: Box<dyn Any + Send>,
    /// The file the call changes, as the model wrote it.
    pub mutates: Option<String>,
    /// Whether that file's prior state is recorded for `undo`.
    pub snapshots: bool,
    /// Which end of a long output is kept.
    pub truncation: Truncation,
}

impl fmt::Debug for Prepared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prepared")
            .field("mutates", &self.mutates)
            .field("snapshots", &self.snapshots)
            .field("truncation", &self.truncation)
            .finish_non_exhaustive()
    }
}

/// Checks `arguments` against `T`'s argument type: the JSON string form is parsed
/// first, `null` counts as `{}`, and a mismatch names the field and what was expected.
pub fn prepare<T: Tool>(tool: &T, arguments: &Value) -> Result<Prepared, ToolError> {
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
    let args: T::Args = serde_path_to_error::deserialize(value).map_err(|err| {
        let field = err.path().to_string();
        let inner = err.into_inner().to_string();
        let problem = if field == "." {
            inner
        } else {
            format!("argument `{field}`: {inner}")
        };
        ToolError::InvalidArguments { field, problem }
    })?;
    Ok(Prepared {
        mutates: tool.mutates(&args).map(str::to_string),
        snapshots: tool.snapshots(),
        truncation: tool.truncation(),
        args: Box::new(args),
    })
}

/// Runs a prepared call of `tool`.
pub(crate) async fn run<T: Tool>(
    tool: &T,
    prepared: Prepared,
    cx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    match prepared.args.downcast::<T::Args>() {
        Ok(args) => tool.call(*args, cx).await,
        Err(_) => Err(ToolError::failed(format!(
            "internal error: the prepared arguments are not those of `{}`",
            tool.name()
        ))),
    }
}

/// A static collection of tools, dispatched by name without `dyn`.
///
/// Implemented by every [`Tool`], by `()`, by tuples of up to 12 sets, and so by
/// [`tools!`](crate::tools!) lists of any length; [`Registry`] implements it for tools
/// known at run time.
pub trait ToolSet: Send + Sync {
    /// Appends the specs of the set's tools to `out` (computes their schemas).
    fn specs(&self, out: &mut Vec<ToolSpec>);

    /// Whether the set has a tool named `name`.
    fn contains(&self, name: &str) -> bool;

    /// Appends the names of the set's tools to `out`.
    fn names<'a>(&'a self, out: &mut Vec<&'a str>);

    /// Checks the call's arguments, or `None` when the set has no such tool.
    fn prepare(&self, call: &ToolCall) -> Option<Result<Prepared, ToolError>>;

    /// Runs a prepared call of the tool `name`, or `None` when the set has no such tool.
    fn run(
        &self,
        name: &str,
        prepared: Prepared,
        cx: &ToolContext,
    ) -> impl Future<Output = Option<Result<ToolOutput, ToolError>>> + Send;
}

impl<T: Tool> ToolSet for T {
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

    fn prepare(&self, call: &ToolCall) -> Option<Result<Prepared, ToolError>> {
        (call.name == self.name()).then(|| prepare(self, &call.arguments))
    }

    async fn run(
        &self,
        name: &str,
        prepared: Prepared,
        cx: &ToolContext,
    ) -> Option<Result<ToolOutput, ToolError>> {
        if name != self.name() {
            return None;
        }
        Some(run(self, prepared, cx).await)
    }
}

impl ToolSet for () {
    fn specs(&self, _out: &mut Vec<ToolSpec>) {}

    fn contains(&self, _name: &str) -> bool {
        false
    }

    fn names<'a>(&'a self, _out: &mut Vec<&'a str>) {}

    fn prepare(&self, _call: &ToolCall) -> Option<Result<Prepared, ToolError>> {
        None
    }

    async fn run(
        &self,
        _name: &str,
        _prepared: Prepared,
        _cx: &ToolContext,
    ) -> Option<Result<ToolOutput, ToolError>> {
        None
    }
}

macro_rules! tuple_set {
    ($($name:ident . $idx:tt),+) => {
        impl<$($name: ToolSet),+> ToolSet for ($($name,)+) {
            fn specs(&self, out: &mut Vec<ToolSpec>) {
                $(self.$idx.specs(out);)+
            }

            fn contains(&self, name: &str) -> bool {
                $(self.$idx.contains(name))||+
            }

            fn names<'a>(&'a self, out: &mut Vec<&'a str>) {
                $(self.$idx.names(out);)+
            }

            fn prepare(&self, call: &ToolCall) -> Option<Result<Prepared, ToolError>> {
                $(if let Some(prepared) = self.$idx.prepare(call) {
                    return Some(prepared);
                })+
                None
            }

            async fn run(
                &self,
                name: &str,
                prepared: Prepared,
                cx: &ToolContext,
            ) -> Option<Result<ToolOutput, ToolError>> {
                $(if self.$idx.contains(name) {
                    return self.$idx.run(name, prepared, cx).await;
                })+
                None
            }
        }
    };
}

tuple_set!(A.0);
tuple_set!(A.0, B.1);
tuple_set!(A.0, B.1, C.2);
tuple_set!(A.0, B.1, C.2, D.3);
tuple_set!(A.0, B.1, C.2, D.3, E.4);
tuple_set!(A.0, B.1, C.2, D.3, E.4, F.5);
tuple_set!(A.0, B.1, C.2, D.3, E.4, F.5, G.6);
tuple_set!(A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7);
tuple_set!(A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8);
tuple_set!(A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9);
tuple_set!(A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10);
tuple_set!(A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10, L.11);

/// A boxed future, as [`DynTool`] returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The object-safe face of a [`Tool`], for [`Registry`]. Every tool implements it.
pub trait DynTool: Send + Sync {
    /// The tool's name.
    fn dyn_name(&self) -> &str;
    /// The tool's spec (computes its schema).
    fn dyn_spec(&self) -> ToolSpec;
    /// Checks arguments.
    fn dyn_prepare(&self, arguments: &Value) -> Result<Prepared, ToolError>;
    /// Runs a prepared call.
    fn dyn_run<'a>(
        &'a self,
        prepared: Prepared,
        cx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

impl<T: Tool> DynTool for T {
    fn dyn_name(&self) -> &str {
        self.name()
    }

    fn dyn_spec(&self) -> ToolSpec {
        ToolSpec::new(self.name(), self.description(), self.parameters())
    }

    fn dyn_prepare(&self, arguments: &Value) -> Result<Prepared, ToolError> {
        prepare(self, arguments)
    }

    fn dyn_run<'a>(
        &'a self,
        prepared: Prepared,
        cx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(run(self, prepared, cx))
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
    fn specs(&self, out: &mut Vec<ToolSpec>) {
        out.extend(self.tools.iter().map(|t| t.dyn_spec()));
    }

    fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    fn names<'a>(&'a self, out: &mut Vec<&'a str>) {
        out.extend(self.tools.iter().map(|t| t.dyn_name()));
    }

    fn prepare(&self, call: &ToolCall) -> Option<Result<Prepared, ToolError>> {
        self.get(&call.name).map(|t| t.dyn_prepare(&call.arguments))
    }

    async fn run(
        &self,
        name: &str,
        prepared: Prepared,
        cx: &ToolContext,
    ) -> Option<Result<ToolOutput, ToolError>> {
        match self.get(name) {
            Some(tool) => Some(tool.dyn_run(prepared, cx).await),
            None => None,
        }
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
