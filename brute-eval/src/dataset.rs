//! [`Dataset`]: the cases of an eval, read from JSONL.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One case: a prompt, and what a good run of it looks like.
///
/// In JSONL, one object per line:
///
/// ```json
/// {"id": "capital", "prompt": "The capital of France?", "expected": "Paris"}
/// {"id": "weather", "prompt": "Weather in Oslo?", "tool_calls": [{"name": "weather", "arguments": {"city": "Oslo"}}]}
/// ```
///
/// `id` and `prompt` are required; `expected` (the answer, for [`Exact`](crate::Exact),
/// [`Contains`](crate::Contains) and the [`Judge`](crate::Judge)) and `tool_calls` (for
/// [`ToolCalled`](crate::ToolCalled)) are optional. Any other field is an error, so a
/// misspelt `expectd` is not silently a case without an expected answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Names the case in the table, the report and comparisons: unique in its dataset.
    pub id: String,
    /// The user message the agent gets.
    pub prompt: String,
    /// The expected answer, if the case has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// Tool calls the agent is expected to make, in any order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ExpectedCall>,
}

impl Case {
    /// A case with only an id and a prompt.
    pub fn new(id: impl Into<String>, prompt: impl Into<String>) -> Self {
        Case {
            id: id.into(),
            prompt: prompt.into(),
            expected: None,
            tool_calls: Vec::new(),
        }
    }

    /// Sets the expected answer.
    pub fn expect(mut self, answer: impl Into<String>) -> Self {
        self.expected = Some(answer.into());
        self
    }

    /// Adds an expected tool call.
    pub fn expect_call(mut self, call: ExpectedCall) -> Self {
        self.tool_calls.push(call);
        self
    }
}

/// A tool call a case expects: the tool's name and, optionally, arguments.
///
/// The expected arguments match a call whose arguments hold every expected key with an
/// equal value (a subset: the call may pass more). Without `arguments`, any call of the
/// tool matches.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedCall {
    /// The tool's name.
    pub name: String,
    /// The arguments the call must include, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
}

impl ExpectedCall {
    /// A call of `name` with any arguments.
    pub fn new(name: impl Into<String>) -> Self {
        ExpectedCall {
            name: name.into(),
            arguments: None,
        }
    }

    /// A call of `name` whose arguments include those of `arguments` (a JSON object;
    /// anything else is taken as no argument constraint).
    pub fn with_arguments(name: impl Into<String>, arguments: Value) -> Self {
        ExpectedCall {
            name: name.into(),
            arguments: match arguments {
                Value::Object(map) => Some(map),
                _ => None,
            },
        }
    }
}

/// Why a dataset could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DatasetError {
    /// The file could not be read.
    #[error("cannot read the dataset {path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        message: String,
    },
    /// A line is not a case.
    #[error("{source_name}:{line}: {}{message}", field.as_deref().map(|f| format!("field `{f}`: ")).unwrap_or_default())]
    Line {
        /// The file (or the name given to [`Dataset::from_jsonl`]).
        source_name: String,
        /// The line, from 1.
        line: usize,
        /// The field at fault, when one is.
        field: Option<String>,
        /// What is wrong.
        message: String,
    },
    /// The dataset holds no case.
    #[error("{source_name}: the dataset has no case (one JSON object per line)")]
    Empty {
        /// The file (or the name given to [`Dataset::from_jsonl`]).
        source_name: String,
    },
}

/// The cases of an eval, in file order, and where they came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    name: String,
    cases: Vec<Case>,
}

impl Dataset {
    /// The cases `cases`, named `name` in reports. Unlike [`Dataset::from_jsonl`], it
    /// does not check that ids are unique.
    pub fn new(name: impl Into<String>, cases: impl IntoIterator<Item = Case>) -> Self {
        Dataset {
            name: name.into(),
            cases: cases.into_iter().collect(),
        }
    }

    /// Loads the JSONL file at `path`.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, DatasetError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| DatasetError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::from_jsonl(&path.display().to_string(), &text)
    }

    /// Loads cases from JSONL text; `source` names it in errors and reports. Blank
    /// lines are skipped; ids must be unique.
    pub fn from_jsonl(source: &str, text: &str) -> Result<Self, DatasetError> {
        let mut cases = Vec::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let line_no = index + 1;
            let error = |field: Option<&str>, message: String| DatasetError::Line {
                source_name: source.to_owned(),
                line: line_no,
                field: field.map(str::to_owned),
                message,
            };
            let value: Value =
                serde_json::from_str(line).map_err(|e| error(None, format!("not JSON: {e}")))?;
            let case = parse_case(value).map_err(|(field, message)| error(field, message))?;
            if let Some(first) = seen.insert(case.id.clone(), line_no) {
                return Err(error(
                    Some("id"),
                    format!("`{}` is also the id of line {first}", case.id),
                ));
            }
            cases.push(case);
        }
        if cases.is_empty() {
            return Err(DatasetError::Empty {
                source_name: source.to_owned(),
            });
        }
        Ok(Dataset {
            name: source.to_owned(),
            cases,
        })
    }

    /// The name reports give the dataset (its path, when loaded from a file).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The cases, in order.
    pub fn cases(&self) -> &[Case] {
        &self.cases
    }

    /// How many cases there are.
    pub fn len(&self) -> usize {
        self.cases.len()
    }

    /// Whether there is no case.
    pub fn is_empty(&self) -> bool {
        self.cases.is_empty()
    }
}

/// A field at fault (if one is) and what is wrong.
type FieldError = (Option<&'static str>, String);

fn parse_case(value: Value) -> Result<Case, FieldError> {
    let Value::Object(mut object) = value else {
        return Err((
            None,
            format!("a case is a JSON object, not {}", kind(&value)),
        ));
    };
    let id = required_string(&mut object, "id")?;
    if id.trim().is_empty() {
        return Err((Some("id"), "is empty".into()));
    }
    let prompt = required_string(&mut object, "prompt")?;
    let expected = match object.remove("expected") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            return Err((
                Some("expected"),
                format!("should be a string, not {}", kind(&other)),
            ));
        }
    };
    let tool_calls = match object.remove("tool_calls") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(calls)) => calls
            .into_iter()
            .enumerate()
            .map(|(i, call)| parse_call(i, call))
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err((
                Some("tool_calls"),
                format!("should be an array, not {}", kind(&other)),
            ));
        }
    };
    if let Some(unknown) = object.keys().next() {
        return Err((
            None,
            format!(
                "unknown field `{unknown}` (a case has `id`, `prompt`, `expected` and `tool_calls`)"
            ),
        ));
    }
    Ok(Case {
        id,
        prompt,
        expected,
        tool_calls,
    })
}

fn parse_call(index: usize, call: Value) -> Result<ExpectedCall, FieldError> {
    let at = |message: String| (Some("tool_calls"), format!("call {index}: {message}"));
    let Value::Object(mut call) = call else {
        return Err(at(format!(
            "should be an object with `name` and `arguments`, not {}",
            kind(&call)
        )));
    };
    let name = match call.remove("name") {
        Some(Value::String(name)) if !name.is_empty() => name,
        Some(Value::String(_)) => return Err(at("`name` is empty".into())),
        Some(other) => {
            return Err(at(format!(
                "`name` should be a string, not {}",
                kind(&other)
            )));
        }
        None => return Err(at("`name` is missing".into())),
    };
    let arguments = match call.remove("arguments") {
        None | Some(Value::Null) => None,
        Some(Value::Object(arguments)) => Some(arguments),
        Some(other) => {
            return Err(at(format!(
                "`arguments` should be an object, not {}",
                kind(&other)
            )));
        }
    };
    if let Some(unknown) = call.keys().next() {
        return Err(at(format!(
            "unknown field `{unknown}` (a call has `name` and `arguments`)"
        )));
    }
    Ok(ExpectedCall { name, arguments })
}

fn required_string(
    object: &mut Map<String, Value>,
    field: &'static str,
) -> Result<String, FieldError> {
    match object.remove(field) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err((
            Some(field),
            format!("should be a string, not {}", kind(&other)),
        )),
        None => Err((Some(field), "is missing".into())),
    }
}

/// What a JSON value is, for an error.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
