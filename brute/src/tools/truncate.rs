//! Output truncation: long tool outputs are cut to what a model can use, and the full
//! text is saved to a file the result names.

use std::path::{Path, PathBuf};

/// Lines kept at most.
pub(crate) const MAX_LINES: usize = 2000;
/// Bytes kept at most (50 KiB).
pub(crate) const MAX_BYTES: usize = 50 * 1024;
/// Characters kept of one line.
pub(crate) const MAX_LINE_LENGTH: usize = 2000;

/// The marker that starts the note appended to a truncated output.
pub(crate) const MARKER: &str = "[Output truncated:";

/// Which end of a long output is kept. The tool pipeline cuts every result to 2,000
/// lines and 50 KiB (a longer line to its first 2,000 characters), appends a note
/// saying how many lines and bytes were dropped, and saves the full text to the
/// pipeline's [`OutputDir`], if it has one.
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
/// anything was cut, a note saying how many lines and bytes were dropped is appended,
/// and the full text is written to a new file in `dir`, if any, which the note names.
/// Returns the text unchanged when it fits.
fn cut(text: &str, direction: Truncation, dir: Option<&Path>) -> String {
    if direction == Truncation::None || fits(text) {
        return text.to_string();
    }
    // Each line with its line end, so that the bytes shown are counted exactly.
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let total = lines.len();
    // A line as shown (without its line end), and how many bytes of `text` that shows.
    let cut_line = |piece: &str| -> (String, usize) {
        let line = piece
            .strip_suffix('\n')
            .map_or(piece, |line| line.strip_suffix('\r').unwrap_or(line));
        if line.len() <= MAX_LINE_LENGTH {
            return (line.to_string(), piece.len());
        }
        let end = line
            .char_indices()
            .nth(MAX_LINE_LENGTH)
            .map_or(line.len(), |(i, _)| i);
        let shown = format!(
            "{}... (line truncated to {MAX_LINE_LENGTH} chars)",
            &line[..end]
        );
        (shown, end)
    };
    let mut kept: Vec<String> = Vec::new();
    let mut bytes = 0;
    // Bytes of `text` the kept lines show (with their newlines).
    let mut shown_bytes = 0usize;
    let ordered: Box<dyn Iterator<Item = &&str>> = match direction {
        Truncation::Head | Truncation::None => Box::new(lines.iter()),
        Truncation::Tail => Box::new(lines.iter().rev()),
    };
    for line in ordered.take(MAX_LINES) {
        let (line, own) = cut_line(line);
        if bytes + line.len() + 1 > MAX_BYTES {
            break;
        }
        bytes += line.len() + 1;
        shown_bytes += own;
        kept.push(line);
    }
    if direction == Truncation::Tail {
        kept.reverse();
    }
    let shown = kept.len();
    let mut out = kept.join("\n");
    out.push_str(&format!(
        "\n{MARKER} showing {shown} of {total} lines, {shown_bytes} of {} bytes; {} bytes not shown]\n",
        text.len(),
        text.len() - shown_bytes,
    ));
    match dir.map(|dir| save_full(text, dir)) {
        Some(Ok(path)) => out.push_str(&format!(
            "Full output saved to: {}. Use read with start_line/end_line to view specific sections.",
            path.display()
        )),
        Some(Err(err)) => out.push_str(&format!("The full output could not be saved: {err}.")),
        None => out.push_str(
            "The full output was not saved (the tool pipeline has no `output_dir`).",
        ),
    }
    out
}

/// Where truncated tool outputs are saved in full. By default nowhere: a cut output
/// says what was dropped and nothing is written. Saving is opt-in: a folder of your
/// choice (`output_dir: "/var/lib/app/tool-output"`, any path converts), or
/// [`OutputDir::user_data`] for `$XDG_DATA_HOME/brute/tool-output`.
///
/// ```
/// use brute::tools::OutputDir;
/// assert_eq!(OutputDir::default(), OutputDir::none());
/// assert_ne!(OutputDir::from("/tmp/tool-output"), OutputDir::none());
/// # let _ = OutputDir::user_data();
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutputDir(Place);

#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum Place {
    #[default]
    Nowhere,
    Path(PathBuf),
    UserData,
}

impl OutputDir {
    /// Cut outputs are not saved (the default).
    pub fn none() -> Self {
        OutputDir(Place::Nowhere)
    }

    /// The user's data folder: `$XDG_DATA_HOME/brute/tool-output`, or
    /// `$HOME/.local/share/brute/tool-output`; those variables are read when a pipeline
    /// first runs, and with neither set nothing is saved. Saved outputs there older than
    /// the pipeline's `output_retention` (a week) are deleted.
    pub fn user_data() -> Self {
        OutputDir(Place::UserData)
    }

    /// The folder, if outputs are saved.
    pub(crate) fn resolve(&self) -> Option<PathBuf> {
        match &self.0 {
            Place::Nowhere => None,
            Place::Path(path) => Some(path.clone()),
            Place::UserData => std::env::var_os("XDG_DATA_HOME")
                .filter(|dir| !dir.is_empty())
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME")
                        .filter(|dir| !dir.is_empty())
                        .map(|h| PathBuf::from(h).join(".local/share"))
                })
                .map(|dir| dir.join("brute/tool-output")),
        }
    }
}

impl From<&str> for OutputDir {
    fn from(path: &str) -> Self {
        OutputDir(Place::Path(path.into()))
    }
}

impl From<PathBuf> for OutputDir {
    fn from(path: PathBuf) -> Self {
        OutputDir(Place::Path(path))
    }
}

impl From<&Path> for OutputDir {
    fn from(path: &Path) -> Self {
        OutputDir(Place::Path(path.into()))
    }
}

impl From<Option<PathBuf>> for OutputDir {
    /// `None`: not saved.
    fn from(path: Option<PathBuf>) -> Self {
        path.map_or_else(OutputDir::none, OutputDir::from)
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

/// [`cut`] without a copy when `text` fits. Error results are always cut (from
/// the head), even for tools that limit their own output: a tool limits what it
/// reads, not what its arguments make an error quote. Inlined: a short result costs a
/// comparison.
#[inline]
pub(crate) fn truncate_owned(
    text: String,
    direction: Truncation,
    is_error: bool,
    dir: Option<&Path>,
) -> String {
    let direction = match direction {
        Truncation::None if is_error => Truncation::Head,
        other => other,
    };
    if direction == Truncation::None || fits(&text) {
        text
    } else {
        cut(&text, direction, dir)
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

    /// The pipeline's cut of `text`, saving the full text in `dir`.
    fn truncate(text: &str, direction: Truncation, dir: &Path) -> String {
        cut(text, direction, Some(dir))
    }

    #[test]
    fn keeps_short_text_and_cuts_long_text() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(truncate("a\nb", Truncation::Head, dir.path()), "a\nb");
        let long: String = (0..3000).map(|i| format!("{i}\n")).collect();
        let head = truncate(&long, Truncation::Head, dir.path());
        assert!(head.starts_with("0\n1\n"));
        assert!(head.contains(
            "[Output truncated: showing 2000 of 3000 lines, 8890 of 13890 bytes; 5000 bytes not shown]"
        ));
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

    #[test]
    fn without_a_folder_nothing_is_saved_and_the_note_says_so() {
        let long: String = (0..3000).map(|i| format!("{i}\n")).collect();
        let cut = truncate_owned(long, Truncation::Head, false, None);
        assert!(cut.contains("5000 bytes not shown]"), "{cut}");
        assert!(
            cut.contains("was not saved") && !cut.contains("saved to:"),
            "{cut}"
        );
        assert_eq!(OutputDir::default().resolve(), None);
        assert_eq!(OutputDir::from("/x").resolve(), Some(PathBuf::from("/x")));
    }

    #[test]
    fn a_cut_wide_line_counts_only_the_bytes_it_shows() {
        let wide = "x".repeat(100_000);
        let cut = truncate_owned(wide, Truncation::Head, false, None);
        assert!(
            cut.contains("2000 of 100000 bytes; 98000 bytes not shown]"),
            "{cut}"
        );
    }
}
