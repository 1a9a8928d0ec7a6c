//! Filesystem tools: `read`, `write`, `patch`, `remove`, `undo`. All paths are checked
//! against the context's root and opened beneath its directory handle (see
//! [`Sandbox`]).

use std::io::ErrorKind;
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::tools::error::quoted;
use crate::tools::truncate::{MAX_BYTES, MAX_LINE_LENGTH, MAX_LINES, Truncation};
use crate::tools::{Sandbox, Tool, ToolContext, ToolError, ToolOutput};

/// Runs blocking file work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolError::failed(format!("the file task failed: {e}")))?
}

/// Extensions of files `read` refuses as binary.
const BINARY_EXTENSIONS: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "bmp", "ico", "webp", "tiff", "psd", "pdf", "zip", "tar", "gz",
    "tgz", "bz2", "xz", "7z", "rar", "jar", "war", "class", "exe", "dll", "so", "dylib", "o", "a",
    "lib", "bin", "dat", "db", "sqlite", "wasm", "pyc", "mp3", "mp4", "avi", "mov", "mkv", "wav",
    "flac", "ttf", "otf", "woff", "woff2",
];

fn is_binary(path: &Path, head: &[u8]) -> bool {
    let by_extension = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| BINARY_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()));
    by_extension || head[..head.len().min(4096)].contains(&0)
}

/// Levenshtein distance, for "did you mean".
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(cur).min(row[j])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

fn not_found(sandbox: &Sandbox, path: &Path, raw: &str) -> ToolError {
    let mut close: Vec<(usize, String)> = Vec::new();
    if let (Some(parent), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str()))
        && name.len() <= 255
        && let Ok(entries) = sandbox.list(parent)
    {
        for (other, _) in entries {
            let d = distance(name, &other);
            if d <= 3 {
                close.push((d, sandbox.display(&parent.join(&other))));
            }
        }
    }
    close.sort();
    let mut message = format!("File not found: {}", quoted(raw));
    if !close.is_empty() {
        let names: Vec<String> = close.into_iter().take(3).map(|(_, n)| n).collect();
        message.push_str(&format!(". Did you mean: {}?", names.join(", ")));
    }
    ToolError::failed(message)
}

/// Arguments of `read`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadArgs {
    /// The file or directory to read, relative to the project root.
    pub file_path: String,
    /// The first line to show, counting from 1 (default 1).
    #[serde(default)]
    pub start_line: Option<usize>,
    /// The last line to show (default: as many as fit, up to 2000 lines).
    #[serde(default)]
    pub end_line: Option<usize>,
}

/// `read`: a file's lines, numbered (`N<tab>line`), or a directory's listing.
///
/// At most 2,000 lines and 50 KiB are shown, long lines are cut at 2,000 characters,
/// and a note says how to continue. An image file (PNG, JPEG, GIF or WebP, known by
/// its first bytes) comes back as an image part the model sees, up to
/// [`Read::MAX_IMAGE_BYTES`]; other binary files are refused. A missing file gets
/// suggestions of similar names.
#[derive(Clone, Copy, Debug, Default)]
pub struct Read;

impl Read {
    /// The largest image file `read` returns as an image part, in bytes: 3,932,160
    /// (3.75 MiB), whose base64 text is 5 MiB, Anthropic's limit for one image and the
    /// smallest of the providers brute speaks. A larger image is an error naming its
    /// size and this limit.
    pub const MAX_IMAGE_BYTES: u64 = super::image::MAX_IMAGE_BYTES;
}

impl Tool for Read {
    type Args = ReadArgs;

    fn name(&self) -> &str {
        "read"
    }

    fn description(&self) -> &str {
        "Read a file with numbered lines (or list a directory, or see a PNG, JPEG, GIF or WebP image). Use start_line/end_line for long files."
    }

    fn truncation(&self) -> Truncation {
        Truncation::None
    }

    async fn call(&self, args: ReadArgs, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let path = cx.resolve(&args.file_path)?;
        let sandbox = cx.sandbox().clone();
        let start = args.start_line.unwrap_or(1).max(1);
        let end_line = args.end_line;
        let raw = args.file_path;
        blocking(move || match sandbox.is_dir(&path) {
            Ok(None) => Err(not_found(&sandbox, &path, &raw)),
            Err(e) => Err(ToolError::io("cannot read", &raw, e)),
            Ok(Some(true)) => list_dir(&sandbox, &path, &raw),
            Ok(Some(false)) => read_numbered(&sandbox, &path, &raw, start, end_line),
        })
        .await
    }
}

/// A line longer than this is split (its display is cut to [`MAX_LINE_LENGTH`] anyway),
/// so that a file without newlines cannot make `read` hold it whole.
const MAX_LINE_BYTES: u64 = 1024 * 1024;

/// The numbered lines `start..=end_line` of a text file, within the output limits,
/// streaming the file so that memory stays bounded whatever its size.
fn read_numbered(
    sandbox: &Sandbox,
    path: &Path,
    raw: &str,
    start: usize,
    end_line: Option<usize>,
) -> Result<ToolOutput, ToolError> {
    use std::io::{BufRead, BufReader, Read as _};

    let io = |e| ToolError::io("cannot read", raw, e);
    let mut file = sandbox.open(path).map_err(io)?;
    let mut head = Vec::with_capacity(4096);
    (&mut file).take(4096).read_to_end(&mut head).map_err(io)?;
    if let Some(media_type) = super::image::media_type(&head) {
        return super::image::read_image(media_type, head, file, raw);
    }
    if is_binary(path, &head) {
        return Err(ToolError::failed(format!(
            "Cannot read binary file: {}",
            quoted(raw)
        )));
    }
    let mut reader = BufReader::new(std::io::Cursor::new(head).chain(file));
    let mut out = String::new();
    let mut total = 0usize;
    let mut last = start - 1;
    let mut full = false;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = (&mut reader)
            .take(MAX_LINE_BYTES)
            .read_until(b'\n', &mut buf)
            .map_err(io)?;
        if n == 0 {
            break;
        }
        total += 1;
        let number = total;
        if full || number < start || end_line.is_some_and(|e| number > e) {
            continue;
        }
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        let line = String::from_utf8_lossy(&buf);
        let shown = if line.chars().count() > MAX_LINE_LENGTH {
            let cut: String = line.chars().take(MAX_LINE_LENGTH).collect();
            format!("{cut}... (line truncated to {MAX_LINE_LENGTH} chars)")
        } else {
            line.into_owned()
        };
        let entry = format!("{number}\t{shown}\n");
        if number - start >= MAX_LINES || out.len() + entry.len() > MAX_BYTES {
            full = true;
            continue;
        }
        out.push_str(&entry);
        last = number;
    }
    if total == 0 {
        return Ok("(empty file)".into());
    }
    if start > total {
        return Err(ToolError::failed(format!(
            "start_line {start} is past the end of {}, which has {total} lines",
            quoted(raw)
        )));
    }
    let end = end_line.unwrap_or(total).clamp(start, total);
    if out.ends_with('\n') {
        out.pop();
    }
    if last < end && end_line.is_none() {
        out.push_str(&format!(
            "\n\n(Showing lines {start}-{last} of {total}. Use start_line={} to continue.)",
            last + 1
        ));
    } else if last < end {
        out.push_str(&format!(
            "\n\n(Showing lines {start}-{last} of the {start}-{end} asked for: the output limit was reached.)"
        ));
    }
    Ok(out.into())
}

fn list_dir(sandbox: &Sandbox, path: &Path, raw: &str) -> Result<ToolOutput, ToolError> {
    let entries = sandbox
        .list(path)
        .map_err(|e| ToolError::io("cannot list", raw, e))?;
    let mut names: Vec<String> = entries
        .into_iter()
        .filter(|(name, _)| !name.starts_with('.'))
        .map(|(name, is_dir)| format!("{name} ({})", if is_dir { "dir" } else { "file" }))
        .collect();
    names.sort();
    let total = names.len();
    if total == 0 {
        return Ok("(empty directory)".into());
    }
    let mut out = names
        .into_iter()
        .take(MAX_LINES)
        .collect::<Vec<_>>()
        .join("\n");
    if total > MAX_LINES {
        out.push_str(&format!("\n(Showing {MAX_LINES} of {total} entries)"));
    }
    Ok(out.into())
}

/// A unified diff of `old` → `new` with 3 lines of context, headed by the path.
fn unified_diff(old: &str, new: &str, path: &str) -> String {
    let diff = similar::TextDiff::from_lines(old, new);
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    if text.is_empty() {
        "(no changes)".to_string()
    } else {
        text
    }
}

/// Arguments of `write`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteArgs {
    /// The file to write, relative to the project root; parent directories are created.
    pub file_path: String,
    /// The whole new content of the file.
    pub content: String,
}

/// `write`: replaces (or creates) a file and returns a unified diff. Undoable.
#[derive(Clone, Copy, Debug, Default)]
pub struct Write;

impl Tool for Write {
    type Args = WriteArgs;

    fn name(&self) -> &str {
        "write"
    }

    fn description(&self) -> &str {
        "Write a whole file (created with its directories if missing). Returns a unified diff."
    }

    fn mutates<'a>(&self, args: &'a WriteArgs) -> Option<&'a str> {
        Some(&args.file_path)
    }

    async fn call(&self, args: WriteArgs, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let path = cx.resolve(&args.file_path)?;
        let sandbox = cx.sandbox().clone();
        blocking(move || {
            let raw = args.file_path.as_str();
            if sandbox.is_dir(&path).ok().flatten() == Some(true) {
                return Err(ToolError::failed(format!("{} is a directory", quoted(raw))));
            }
            let old = match sandbox.read(&path) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(e) if e.kind() == ErrorKind::NotFound => String::new(),
                Err(e) => return Err(ToolError::io("cannot read", raw, e)),
            };
            sandbox
                .write(&path, args.content.as_bytes())
                .map_err(|e| ToolError::io("cannot write", raw, e))?;
            let rel = sandbox.display(&path);
            Ok(format!(
                "Wrote {} bytes to {rel}.\n{}",
                args.content.len(),
                unified_diff(&old, &args.content, &rel)
            )
            .into())
        })
        .await
    }
}

/// Arguments of `patch`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PatchArgs {
    /// The file to change, relative to the project root.
    pub file_path: String,
    /// The exact text to replace (taken literally, not as a pattern).
    pub old_string: String,
    /// The replacement (taken literally).
    pub new_string: String,
    /// Replace every occurrence instead of the first (default false).
    #[serde(default)]
    pub replace_all: bool,
}

/// `patch`: replaces exact text in a file (literally: no patterns, no escapes) and
/// returns a unified diff. Undoable.
#[derive(Clone, Copy, Debug, Default)]
pub struct Patch;

impl Tool for Patch {
    type Args = PatchArgs;

    fn name(&self) -> &str {
        "patch"
    }

    fn description(&self) -> &str {
        "Replace exact text in a file (the first occurrence, or all with replace_all). Returns a unified diff."
    }

    fn mutates<'a>(&self, args: &'a PatchArgs) -> Option<&'a str> {
        Some(&args.file_path)
    }

    async fn call(&self, args: PatchArgs, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let path = cx.resolve(&args.file_path)?;
        let sandbox = cx.sandbox().clone();
        blocking(move || patch(&sandbox, &path, &args)).await
    }
}

fn patch(sandbox: &Sandbox, path: &Path, args: &PatchArgs) -> Result<ToolOutput, ToolError> {
    let raw = args.file_path.as_str();
    let bytes = match sandbox.read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(ToolError::failed(format!(
                "File not found: {}",
                quoted(raw)
            )));
        }
        Err(e) => return Err(ToolError::io("cannot read", raw, e)),
    };
    if is_binary(path, &bytes) {
        return Err(ToolError::failed(format!(
            "Cannot patch binary file: {}",
            quoted(raw)
        )));
    }
    let old = String::from_utf8(bytes).map_err(|_| {
        ToolError::failed(format!(
            "Cannot patch {}: it is not valid UTF-8",
            quoted(raw)
        ))
    })?;
    if args.old_string.is_empty() {
        return Err(ToolError::InvalidArguments {
            field: "old_string".into(),
            problem: "argument `old_string` is empty; give the exact text to replace".into(),
        });
    }
    let count = old.matches(&args.old_string).count();
    if count == 0 {
        return Err(ToolError::failed(format!(
            "old_string not found in {}",
            quoted(raw)
        )));
    }
    let (new, replaced) = if args.replace_all {
        (old.replace(&args.old_string, &args.new_string), count)
    } else {
        (old.replacen(&args.old_string, &args.new_string, 1), 1)
    };
    sandbox
        .write(path, new.as_bytes())
        .map_err(|e| ToolError::io("cannot write", raw, e))?;
    let rel = sandbox.display(path);
    let mut out = format!("Replaced {replaced} occurrence(s) in {rel}.");
    if !args.replace_all && count > 1 {
        out.push_str(&format!(
            " The text occurs {count} times; only the first was replaced (use replace_all for all)."
        ));
    }
    out.push('\n');
    out.push_str(&unified_diff(&old, &new, &rel));
    Ok(out.into())
}

/// Arguments of `remove`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RemoveArgs {
    /// The file or empty directory to remove, relative to the project root.
    pub path: String,
}

/// `remove`: deletes a file (undoable) or an empty directory.
#[derive(Clone, Copy, Debug, Default)]
pub struct Remove;

impl Tool for Remove {
    type Args = RemoveArgs;

    fn name(&self) -> &str {
        "remove"
    }

    fn description(&self) -> &str {
        "Remove a file or an empty directory."
    }

    fn mutates<'a>(&self, args: &'a RemoveArgs) -> Option<&'a str> {
        Some(&args.path)
    }

    async fn call(&self, args: RemoveArgs, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let path = cx.resolve(&args.path)?;
        let sandbox = cx.sandbox().clone();
        blocking(move || {
            let raw = args.path.as_str();
            if path == sandbox.root() {
                return Err(ToolError::failed("refusing to remove the root directory"));
            }
            match sandbox.kind_of(&path) {
                Ok(None) => Err(ToolError::failed(format!("Path not found: {}", quoted(raw)))),
                Err(e) => Err(ToolError::io("cannot inspect", raw, e)),
                Ok(Some(true)) => sandbox.remove_dir(&path).map_err(|e| {
                    if e.kind() == ErrorKind::DirectoryNotEmpty {
                        ToolError::failed(format!(
                            "{} is a directory that is not empty; only empty directories are removed",
                            quoted(raw)
                        ))
                    } else {
                        ToolError::io("cannot remove", raw, e)
                    }
                }),
                Ok(Some(false)) => sandbox
                    .remove_file(&path)
                    .map_err(|e| ToolError::io("cannot remove", raw, e)),
            }?;
            Ok(format!("Removed {}", sandbox.display(&path)).into())
        })
        .await
    }
}

/// Arguments of `undo`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct UndoArgs {
    /// The file whose last change (by write, patch or remove) to undo.
    pub path: String,
}

/// `undo`: restores a file to its state before the last `write`, `patch` or `remove`
/// (deleting it if it did not exist then).
#[derive(Clone, Copy, Debug, Default)]
pub struct Undo;

impl Tool for Undo {
    type Args = UndoArgs;

    fn name(&self) -> &str {
        "undo"
    }

    fn description(&self) -> &str {
        "Undo the last write, patch or remove of a file."
    }

    fn mutates<'a>(&self, args: &'a UndoArgs) -> Option<&'a str> {
        Some(&args.path)
    }

    fn snapshots(&self) -> bool {
        false
    }

    async fn call(&self, args: UndoArgs, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let path = cx.resolve(&args.path)?;
        let Some(state) = cx.snapshots().pop(&path) else {
            return Err(ToolError::failed(format!(
                "No undo history available for: {}",
                quoted(&args.path)
            )));
        };
        let sandbox = cx.sandbox().clone();
        blocking(move || {
            let raw = args.path.as_str();
            let rel = sandbox.display(&path);
            match state {
                None => {
                    match sandbox.remove_file(&path) {
                        Ok(()) => {}
                        Err(e) if e.kind() == ErrorKind::NotFound => {}
                        Err(e) => return Err(ToolError::io("cannot remove", raw, e)),
                    }
                    Ok(format!("Deleted {rel} (it did not exist before)").into())
                }
                Some(bytes) => {
                    sandbox
                        .write(&path, &bytes)
                        .map_err(|e| ToolError::io("cannot write", raw, e))?;
                    Ok(format!("Restored {rel} ({} bytes)", bytes.len()).into())
                }
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::distance;

    #[test]
    fn levenshtein() {
        assert_eq!(distance("main.rs", "main.rs"), 0);
        assert_eq!(distance("mian.rs", "main.rs"), 2);
        assert_eq!(distance("", "abc"), 3);
    }
}
