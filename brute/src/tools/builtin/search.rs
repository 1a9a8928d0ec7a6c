//! `fs_search`: regex search over the project with the ripgrep crates. Files are
//! opened beneath the root's directory handle (see [`Sandbox`]).

use std::path::PathBuf;
use std::time::SystemTime;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::tools::error::quoted;
use crate::tools::truncate::{MAX_LINE_LENGTH, Truncation};
use crate::tools::{Sandbox, Tool, ToolContext, ToolError, ToolOutput};

/// Matching lines shown at most.
const MAX_MATCHES: usize = 100;

/// Arguments of `fs_search`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FsSearchArgs {
    /// The regular expression to search for (Rust regex syntax).
    pub pattern: String,
    /// The file or directory to search, relative to the project root (default: the root).
    #[serde(default)]
    pub path: Option<String>,
    /// Only search files matching this glob, such as `*.rs` or `src/**/*.ts`.
    #[serde(default)]
    pub glob: Option<String>,
    /// Match without regard to case (default false).
    #[serde(default)]
    pub ignore_case: bool,
}

/// `fs_search`: lines matching a regex, as `path:line:text`, most recently modified
/// files first, honouring `.gitignore` and skipping hidden and binary files. At most
/// 100 matches are shown.
#[derive(Clone, Copy, Debug, Default)]
pub struct FsSearch;

impl Tool for FsSearch {
    type Args = FsSearchArgs;

    fn name(&self) -> &str {
        "fs_search"
    }

    fn description(&self) -> &str {
        "Search file contents with a regular expression (like ripgrep). Returns path:line:text lines."
    }

    fn truncation(&self) -> Truncation {
        Truncation::None
    }

    async fn call(&self, args: FsSearchArgs, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let dir = cx.resolve(args.path.as_deref().unwrap_or("."))?;
        let sandbox = cx.sandbox().clone();
        if sandbox.is_dir(&dir).ok().flatten().is_none() {
            return Err(ToolError::failed(format!(
                "Path not found: {}",
                quoted(args.path.as_deref().unwrap_or("."))
            )));
        }
        tokio::task::spawn_blocking(move || search(&args, &dir, &sandbox))
            .await
            .map_err(|e| ToolError::failed(format!("the search task failed: {e}")))?
    }
}

fn search(
    args: &FsSearchArgs,
    dir: &std::path::Path,
    sandbox: &Sandbox,
) -> Result<ToolOutput, ToolError> {
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(args.ignore_case)
        .build(&args.pattern)
        .map_err(|e| ToolError::InvalidArguments {
            field: "pattern".into(),
            problem: format!(
                "argument `pattern` is not a valid regular expression: {}",
                quoted(&e.to_string())
            ),
        })?;
    let mut walk = WalkBuilder::new(dir);
    if let Some(glob) = &args.glob {
        let mut overrides = OverrideBuilder::new(dir);
        overrides
            .add(glob)
            .map_err(|e| ToolError::InvalidArguments {
                field: "glob".into(),
                problem: format!(
                    "argument `glob` is not a valid glob: {}",
                    quoted(&e.to_string())
                ),
            })?;
        let overrides = overrides.build().map_err(|e| ToolError::InvalidArguments {
            field: "glob".into(),
            problem: format!(
                "argument `glob` is not a valid glob: {}",
                quoted(&e.to_string())
            ),
        })?;
        walk.overrides(overrides);
    }
    let mut files: Vec<(SystemTime, PathBuf)> = walk
        .build()
        .flatten()
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
        .filter(|entry| {
            // Symbolic links leading outside the root are not followed.
            entry
                .path()
                .canonicalize()
                .is_ok_and(|p| p.starts_with(sandbox.root()))
        })
        .map(|entry| {
            let modified = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            (modified, entry.into_path())
        })
        .collect();
    files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));

    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    let mut lines = Vec::new();
    let mut total = 0usize;
    for (_, file) in &files {
        let shown = sandbox.display(file);
        // Opened beneath the root's handle: a file swapped for a link to outside the
        // root since the walk listed it is not read.
        let Ok(handle) = sandbox.open(file) else {
            continue;
        };
        let _ = searcher.search_file(
            &matcher,
            &handle,
            Lossy(|number, line| {
                total += 1;
                if lines.len() < MAX_MATCHES {
                    let line = line.trim_end_matches(['\n', '\r']);
                    let line = if line.chars().count() > MAX_LINE_LENGTH {
                        let cut: String = line.chars().take(MAX_LINE_LENGTH).collect();
                        format!("{cut} [... omitted end of long line]")
                    } else {
                        line.to_string()
                    };
                    lines.push(format!("{shown}:{number}:{line}"));
                }
                Ok(true)
            }),
        );
    }
    if lines.is_empty() {
        return Ok("No matches found.".into());
    }
    let mut out = lines.join("\n");
    if total > MAX_MATCHES {
        out.push_str(&format!(
            "\n\n(Results truncated: showing {MAX_MATCHES} of {total} matches. Consider a more specific path or pattern.)"
        ));
    }
    Ok(out.into())
}
