//! Output truncation: long tool outputs are cut to what a model can use, and the full
//! text is saved to a file the result names.

use std::path::{Path, PathBuf};

/// Lines kept at most.
pub const MAX_LINES: usize = 2000;
/// Bytes kept at most (50 KiB).
pub const MAX_BYTES: usize = 50 * 1024;
/// Characters kept of one line.
pub const MAX_LINE_LENGTH: usize = 2000;

/// The marker that starts the note appended to a truncated output.
pub(crate) const MARKER: &str = "[Output truncated:";

/// Which end of a long output is kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Truncation {
    /// The first lines (file contents, search results).
    #[default]
    Head,
    /// The last lines (command output, where errors are at the end).
    Tail,
    /// Nothing: the tool limits its own output (`read`, `fs_search`).
    None,
}

/// Cuts `text` to [`MAX_LINES`] lines and [`MAX_BYTES`] bytes (lines longer than
/// [`MAX_LINE_LENGTH`] characters are cut first), keeping the head or the tail. When
/// anything was cut, the full text is written to a new file in `dir` and a note naming
/// it is appended. Returns the text unchanged when it fits.
///
/// ```
/// use brute::tools::{truncate, Truncation};
/// # let dir = tempfile::tempdir().unwrap();
/// let long: String = (0..5000).map(|i| format!("line {i}\n")).collect();
/// let cut = truncate(&long, Truncation::Tail, dir.path());
/// assert!(cut.contains("line 4999"));
/// assert!(!cut.contains("line 0\n"));
/// assert!(cut.contains("Full output saved to:"));
/// ```
pub fn truncate(text: &str, direction: Truncation, dir: &Path) -> String {
    if direction == Truncation::None || fits(text) {
        return text.to_string();
    }
    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len();
    let cut_line = |line: &str| -> String {
        if line.len() <= MAX_LINE_LENGTH {
            return line.to_string();
        }
        let end = line
            .char_indices()
            .nth(MAX_LINE_LENGTH)
            .map_or(line.len(), |(i, _)| i);
        format!(
            "{}... (line truncated to {MAX_LINE_LENGTH} chars)",
            &line[..end]
        )
    };
    let mut kept: Vec<String> = Vec::new();
    let mut bytes = 0;
    let ordered: Box<dyn Iterator<Item = &&str>> = match direction {
        Truncation::Head | Truncation::None => Box::new(lines.iter()),
        Truncation::Tail => Box::new(lines.iter().rev()),
    };
    for line in ordered.take(MAX_LINES) {
        let line = cut_line(line);
        if bytes + line.len() + 1 > MAX_BYTES {
            break;
        }
        bytes += line.len() + 1;
        kept.push(line);
    }
    if direction == Truncation::Tail {
        kept.reverse();
    }
    let shown = kept.len();
    let mut out = kept.join("\n");
    let saved = save_full(text, dir);
    out.push_str(&format!("\n{MARKER} showing {shown} of {total} lines]\n"));
    match saved {
        Ok(path) => out.push_str(&format!(
            "Full output saved to: {}. Use read with start_line/end_line to view specific sections.",
            path.display()
        )),
        Err(err) => out.push_str(&format!("The full output could not be saved: {err}.")),
    }
    out
}

/// Where truncated tool outputs are saved in full: a path, or (the default)
/// `$XDG_DATA_HOME/brute/tool-output` (`$HOME/.local/share/brute/tool-output`), falling
/// back to the system's temporary directory. The default reads those two environment
/// variables when a pipeline first runs.
#[derive(Clone, Debug, Default)]
pub struct OutputDir(pub Option<PathBuf>);

impl OutputDir {
    pub(crate) fn resolve(&self) -> PathBuf {
        if let Some(path) = &self.0 {
            return path.clone();
        }
        let data = std::env::var_os("XDG_DATA_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")));
        match data {
            Some(dir) => dir.join("brute/tool-output"),
            None => std::env::temp_dir().join("brute-tool-output"),
        }
    }
}

impl From<&str> for OutputDir {
    fn from(path: &str) -> Self {
        OutputDir(Some(path.into()))
    }
}

impl From<PathBuf> for OutputDir {
    fn from(path: PathBuf) -> Self {
        OutputDir(Some(path))
    }
}

impl From<&Path> for OutputDir {
    fn from(path: &Path) -> Self {
        OutputDir(Some(path.into()))
    }
}

/// How long saved outputs are kept by default (a week): `DefaultToolPipeline`'s
/// `output_retention` option.
pub(crate) const RETENTION: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// Deletes the saved outputs (`tool_*.txt`) in `dir` older than `retention`; returns
/// how many were deleted. Best effort: files that cannot be read or deleted are skipped.
pub(crate) fn cleanup(dir: &Path, retention: std::time::Duration) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let now = std::time::SystemTime::now();
    entries
        .flatten()
        .filter(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            name.starts_with("tool_") && name.ends_with(".txt")
        })
        .filter(|entry| {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|modified| now.duration_since(modified).ok())
                .is_some_and(|age| age > retention)
        })
        .filter(|entry| std::fs::remove_file(entry.path()).is_ok())
        .count()
}

/// Whether `text` is within every limit (one pass, no allocation).
#[inline]
pub(crate) fn fits(text: &str) -> bool {
    // A text this short has no more lines, nor longer ones, than it has bytes.
    text.len() <= MAX_LINES.min(MAX_LINE_LENGTH) || fits_long(text)
}

fn fits_long(text: &str) -> bool {
    text.len() <= MAX_BYTES
        && text
            .lines()
            .enumerate()
            .all(|(i, line)| i < MAX_LINES && line.len() <= MAX_LINE_LENGTH)
}

/// [`truncate`] without a copy when `text` fits. Error results are always cut (from
/// the head), even for tools that limit their own output: a tool limits what it
/// reads, not what its arguments make an error quote. Inlined: a short result costs a
/// comparison.
#[inline]
pub(crate) fn truncate_owned(
    text: String,
    direction: Truncation,
    is_error: bool,
    dir: &Path,
) -> String {
    let direction = match direction {
        Truncation::None if is_error => Truncation::Head,
        other => other,
    };
    if direction == Truncation::None || fits(&text) {
        text
    } else {
        truncate(&text, direction, dir)
    }
}

fn save_full(text: &str, dir: &Path) -> std::io::Result<std::path::PathBuf> {
    std::fs::create_dir_all(dir)?;
    let file = tempfile_in(dir)?;
    std::fs::write(&file, text)?;
    Ok(file)
}

/// A fresh file name `tool_<16 hex>.txt` in `dir`.
fn tempfile_in(dir: &Path) -> std::io::Result<std::path::PathBuf> {
    use std::hash::{BuildHasher, Hasher};
    for _ in 0..16 {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        let path = dir.join(format!("tool_{:016x}.txt", hasher.finish()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(_) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free file name"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn cleanup_deletes_old_saved_outputs_only() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("tool_0000000000000001.txt");
        let new = dir.path().join("tool_0000000000000002.txt");
        let other = dir.path().join("notes.txt");
        for path in [&old, &new, &other] {
            std::fs::write(path, "x").unwrap();
        }
        let long_ago = std::time::SystemTime::now() - RETENTION * 2;
        for path in [&old, &other] {
            std::fs::File::options()
                .write(true)
                .open(path)
                .unwrap()
                .set_modified(long_ago)
                .unwrap();
        }
        assert_eq!(cleanup(dir.path(), RETENTION), 1);
        assert!(!old.exists() && new.exists() && other.exists());
        assert_eq!(cleanup(&dir.path().join("missing"), RETENTION), 0);
    }

    #[test]
    fn keeps_short_text_and_cuts_long_text() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(truncate("a\nb", Truncation::Head, dir.path()), "a\nb");
        let long: String = (0..3000).map(|i| format!("{i}\n")).collect();
        let head = truncate(&long, Truncation::Head, dir.path());
        assert!(head.starts_with("0\n1\n"));
        assert!(head.contains("[Output truncated: showing 2000 of 3000 lines]"));
        let saved = head.split("Full output saved to: ").nth(1).unwrap();
        let saved = saved.split(". Use").next().unwrap();
        assert_eq!(std::fs::read_to_string(saved).unwrap(), long);
        let wide = "x".repeat(100_000);
        let cut = truncate(&wide, Truncation::Head, dir.path());
        assert!(cut.contains("(line truncated to 2000 chars)"));
        assert!(cut.len() < MAX_BYTES + 500);
        let big: String = (0..1500).map(|i| format!("{i:0>99}\n")).collect();
        let tail = truncate(&big, Truncation::Tail, dir.path());
        assert!(tail.len() < MAX_BYTES + 500);
        assert!(tail.contains(&format!("{:0>99}", 1499)));
    }
}
